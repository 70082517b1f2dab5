"""Stage `tags`: controlled-taxonomy tags (the first is the primary topic) plus free keywords.

The taxonomy reaches the model once, as the id list in the system prompt (one line per
facet); the JSON schema asks for strings, not an enum of the same ids, which would send
the taxonomy twice.

A model's answer is repaired before validation: a label, synonym, plural or other case of an
id stands for that id; strings that name no tag are dropped (with a record), and the answer
is re-asked only when no tag is left. Then every tag needs some support in the abstract
(`pipeline.support.supported_tags`) and every keyword must occur in it, its words in a row:
what fails is dropped with an errors.jsonl record. A tag whose only support is ambiguous
(`pipeline.support.unconfirmed_tags`) is kept apart, under `unconfirmed`. Tags and keywords
beyond the limits are cut.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from pipeline.errors import ConfigError, OutputValidationError
from pipeline.schemas import GroundingError, context_taxonomy
from pipeline.stages.base import Output, Rejected, Shaped, StageSpec
from pipeline.support.names import keyword_supported
from pipeline.support.tags import supported_tags, unconfirmed_tags, unsupported_tags
from pipeline.taxonomy import Taxonomy
from pipeline.text import normalize_ws

MAX_TAGS = 6
MAX_KEYWORDS = 5
MAX_KEYWORD_WORDS = 5


class TagsOutput(BaseModel):
    """Tag ids from the controlled taxonomy plus a few free keywords."""

    model_config = ConfigDict(extra="forbid")
    tags: list[str] = Field(description="Taxonomy ids; the first is the primary topic.")
    keywords: list[str] = Field(default_factory=list, description="Up to 5 short keywords.")
    # Set by the check against the abstract, never asked of the model (COMPUTED_FIELDS):
    # the model's tags whose only support is an ambiguous phrase, scattered vocabulary words
    # or negated mentions (`support.unconfirmed_tags`), shown marked, not as fact.
    unconfirmed: list[str] = Field(default_factory=list)

    @field_validator("tags", "unconfirmed")
    @classmethod
    def _known_tags(cls, value: list[str], info: ValidationInfo) -> list[str]:
        taxonomy = context_taxonomy(info)
        out: list[str] = []
        unknown: list[str] = []
        for name in value:
            tag_id = taxonomy.resolve(name) if taxonomy is not None else name
            if tag_id is None:
                unknown.append(name)
            elif tag_id not in out:
                out.append(tag_id)
        if unknown:
            raise GroundingError(f"tags not in the taxonomy: {', '.join(map(repr, unknown))}")
        return out

    @model_validator(mode="after")
    def _some_tag(self) -> TagsOutput:
        if not self.tags and not self.unconfirmed:
            raise ValueError("at least one taxonomy tag is required")
        return self

    @field_validator("keywords")
    @classmethod
    def _few_short_keywords(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for kw in value:
            kw = normalize_ws(kw)
            if kw and kw.lower() not in {k.lower() for k in out}:
                out.append(kw)
        long = [k for k in out if len(k.split()) > MAX_KEYWORD_WORDS]
        if long:
            raise ValueError(f"keywords must be short phrases (<= 5 words): {long[0]!r}")
        return out


def resolve(name: str, taxonomy: Taxonomy) -> str | None:
    """The tag id a model's string stands for: an id, label or synonym in any case, a plural
    or singular of one, with spaces or underscores for hyphens, or "facet: id"; else None."""
    found = taxonomy.resolve(name)
    if found is not None:
        return found
    text = name.strip().strip("\"'`*").strip()
    if ":" in text:
        text = text.rsplit(":", 1)[1].strip()
    key = re.sub(r"[\s_]+", "-", text.lower().replace("&", "and"))
    for candidate in (text, key, *_number_variants(key)):
        found = taxonomy.resolve(candidate)
        if found is not None:
            return found
    return None


def _number_variants(key: str) -> list[str]:
    """The key with its last word in the other grammatical number."""
    head, _, last = key.rpartition("-")
    forms = []
    if last.endswith("ies"):
        forms.append(last[:-3] + "y")
    if last.endswith("es"):
        forms.append(last[:-2])
    if last.endswith("s"):
        forms.append(last[:-1])
    else:
        forms += [last + "s", last + "es", last[:-1] + "ies" if last.endswith("y") else last]
    return [f"{head}-{f}" if head else f for f in forms]


def repair(data: Any, taxonomy: Taxonomy) -> Shaped:
    """Shape repairs of a tags answer (see the module docstring); never re-words a tag."""
    repairs: list[str] = []
    dropped: list[Rejected] = []
    if isinstance(data, list):
        data, repairs = {"tags": data}, ["bare_list"]
    if not isinstance(data, dict):
        raise OutputValidationError("answer must be a JSON object", kind="schema", raw=None)
    extra = sorted(str(k) for k in data if k not in ("tags", "keywords"))
    if extra:
        repairs.append("extra_keys")
    tags, keywords = data.get("tags"), data.get("keywords", [])
    if isinstance(tags, str):
        tags, repairs = _split_list(tags), [*repairs, "string_list"]
    if keywords is None:
        keywords, repairs = [], [*repairs, "keywords_null"]
    elif isinstance(keywords, str):
        keywords, repairs = _split_list(keywords), [*repairs, "string_list"]
    if not isinstance(tags, list):
        return Shaped({"tags": tags, "keywords": keywords}, repairs)
    ids: list[str] = []
    for index, name in enumerate(tags):
        tag_id = resolve(name, taxonomy) if isinstance(name, str) else None
        if tag_id is None:
            error = OutputValidationError(
                f"tags[{index}]: not a taxonomy id: {str(name)[:100]!r}",
                kind="ungrounded",
                raw=None,
            )
            dropped.append(Rejected(index, name, error, field="tags"))
            continue
        if tag_id != name and "tag_resolved" not in repairs:
            repairs.append("tag_resolved")
        if tag_id not in ids:
            ids.append(tag_id)
    if not ids and dropped:
        names = ", ".join(repr(str(r.item)[:100]) for r in dropped)
        raise OutputValidationError(
            f"tags not in the taxonomy: {names}; use ids from the list", kind="ungrounded", raw=None
        )
    if isinstance(keywords, list):
        kept: list[Any] = []
        for index, kw in enumerate(keywords):
            if not isinstance(kw, str) or len(kw.split()) > MAX_KEYWORD_WORDS:
                error = OutputValidationError(
                    f"keywords[{index}]: not a short phrase: {str(kw)[:100]!r}",
                    kind="schema",
                    raw=None,
                )
                dropped.append(Rejected(index, kw, error, field="keywords"))
            else:
                kept.append(kw)
        keywords = kept
    return Shaped({"tags": ids, "keywords": keywords}, repairs, dropped)


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"[,;\n]", text) if part.strip()]


def screen(output: Output, abstract: str, taxonomy: Taxonomy) -> Shaped:
    """Tags the abstract gives no support for and keywords it lacks are dropped (a record
    each); tags the abstract supports without confirming them (`support.unconfirmed_tags`)
    move to `unconfirmed` (noted in the provenance's repairs); the rest is cut to the
    limits. No supported tag at all rejects the answer."""
    given = [
        *output["tags"],
        *(t for t in output.get("unconfirmed", ()) if t not in output["tags"]),
    ]
    unsupported = set(unsupported_tags(given, abstract, taxonomy))
    marked = set(unconfirmed_tags(given, abstract, taxonomy)) - unsupported
    dropped: list[Rejected] = []
    repairs: list[str] = ["tags_unconfirmed"] if marked else []
    tags: list[str] = []
    unconfirmed: list[str] = []
    for index, tag_id in enumerate(given):
        if tag_id in marked:
            unconfirmed.append(tag_id)
            continue
        if tag_id not in unsupported:
            tags.append(tag_id)
            continue
        error = OutputValidationError(
            f"tags[{index}]: nothing in the abstract supports {tag_id!r}",
            kind="ungrounded",
            raw=None,
        )
        dropped.append(Rejected(index, tag_id, error, field="tags"))
    if not tags and not unconfirmed:
        names = ", ".join(repr(t) for t in given)
        raise OutputValidationError(
            f"nothing in the abstract supports the tags {names}; choose tags for what the "
            "abstract says",
            kind="ungrounded",
            raw=None,
        )
    keywords: list[str] = []
    for index, kw in enumerate(output["keywords"]):
        if keyword_supported(kw, abstract):
            keywords.append(kw)
            continue
        error = OutputValidationError(
            f"keywords[{index}]: {kw!r} does not occur in the abstract", kind="ungrounded", raw=None
        )
        dropped.append(Rejected(index, kw, error, field="keywords"))
    if len(tags) + len(unconfirmed) > MAX_TAGS:
        tags = tags[:MAX_TAGS]
        unconfirmed = unconfirmed[: MAX_TAGS - len(tags)]
        repairs = [*repairs, "tags_cut"]
    if len(keywords) > MAX_KEYWORDS:
        keywords, repairs = keywords[:MAX_KEYWORDS], [*repairs, "keywords_cut"]
    data: dict[str, Any] = {"tags": tags, "keywords": keywords}
    if unconfirmed:
        data["unconfirmed"] = unconfirmed
    return Shaped(data, repairs, dropped)


OVERLAPS_FILE = "tag_overlaps.md"


def prompt_fields(taxonomy: Taxonomy, prompts_dir: Path) -> dict[str, str]:
    """The taxonomy's ids for the system prompt, one line per facet (ids are self-describing),
    and the lines of prompts/tag_overlaps.md that say which of two close ids takes what (all
    of them here; `abstract_fields` narrows both to one abstract)."""
    path = prompts_dir / OVERLAPS_FILE
    try:
        overlaps = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return {
        "taxonomy": _id_lines(taxonomy, taxonomy.tags),
        "overlaps": _overlap_lines(overlaps, frozenset(taxonomy.tags)),
        "overlap_lines": "\n".join(overlaps),
    }


def abstract_fields(abstract: str, taxonomy: Taxonomy, fields: Mapping[str, str]) -> dict[str, str]:
    """Only the ids the abstract gives support for (any other would be dropped from the
    answer; the whole list costs ~1,000 tokens per request, these ~80), and only the overlap
    lines that name two of them."""
    offered = supported_tags(abstract, taxonomy)
    lines = fields["overlap_lines"].splitlines()
    return {"taxonomy": _id_lines(taxonomy, offered), "overlaps": _overlap_lines(lines, offered)}


def _overlap_lines(lines: list[str], offered: frozenset[str] | Mapping[str, Any]) -> str:
    kept = [x for x in lines if sum(i in offered for i in re.findall(r"[a-z0-9-]+(?=:)", x)) >= 2]
    return "Where ids overlap:\n" + "\n".join(kept) if kept else ""


def _id_lines(taxonomy: Taxonomy, offered: Mapping[str, Any] | frozenset[str]) -> str:
    lines = [
        f"{facet.id}: {', '.join(t.id for t in facet.tags if t.id in offered)}"
        for facet in taxonomy.facets
        if any(t.id in offered for t in facet.tags)
    ]
    return "\n".join(lines)


def offline(abstract: str, taxonomy: Taxonomy) -> dict[str, Any]:
    """The built-in taxonomy matcher's tags and keywords."""
    from pipeline.offline.tags import match_tags

    tags, keywords = match_tags(abstract, taxonomy)
    return {"tags": tags, "keywords": keywords}


def csv(output: Mapping[str, Any] | None) -> dict[str, Any]:
    """summaries.csv: tag ids, keywords and unconfirmed tag ids, each joined with '; '."""
    output = output or {}
    return {
        "tags": "; ".join(output.get("tags", [])),
        "keywords": "; ".join(output.get("keywords", [])),
        "unconfirmed_tags": "; ".join(output.get("unconfirmed", [])),
    }


STAGE = StageSpec(
    name="tags",
    order=20,
    schema=TagsOutput,
    offline=offline,
    csv_columns=("tags", "keywords", "unconfirmed_tags"),
    csv=csv,
    prompt_fields=prompt_fields,
    uses_taxonomy=True,
    repair=repair,
    screen=screen,
    abstract_fields=abstract_fields,
    example={"tags": ["graph-anomaly-detection", "graph-neural-networks"], "keywords": ["DR-GGAD"]},
    output_tokens=40,
)
