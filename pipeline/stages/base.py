"""What a stage is (`StageSpec`, one per module in pipeline/stages/) and a stage bound to its
prompt template and taxonomy for one run (`Stage`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from pipeline.errors import FailureKind, OutputValidationError
from pipeline.prompts import PromptTemplate, content_hash
from pipeline.repair import Decoded, decode_answer
from pipeline.schemas import SCHEMA_VERSION, GroundingError, llm_json_schema
from pipeline.support.statements import new_words
from pipeline.support.words import tokens
from pipeline.taxonomy import Taxonomy

Output = dict[str, Any]


def no_prompt_fields(taxonomy: Taxonomy, prompts_dir: Path) -> dict[str, str]:
    """A stage whose template needs nothing but the abstract."""
    return {}


def no_schema_hook(schema: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    """A stage whose model-facing JSON schema is the plain strict schema."""
    return schema


@dataclass
class Shaped:
    """A decoded answer after a stage's shape repairs: the data, what was repaired (notes for
    the provenance), and sub-items left out for good (never re-asked about)."""

    data: dict[str, Any]
    repairs: list[str] = field(default_factory=list)
    dropped: list[Rejected] = field(default_factory=list)


def no_shape_repair(data: Any, taxonomy: Taxonomy) -> Shaped:
    """A stage whose answer needs no shape repair (it must be a JSON object)."""
    if not isinstance(data, dict):
        raise OutputValidationError("answer must be a JSON object", kind="schema", raw=None)
    return Shaped(data)


def no_screen(output: Output, abstract: str, taxonomy: Taxonomy) -> Shaped:
    """A stage whose validated output needs no check beyond its schema."""
    return Shaped(output)


@dataclass(frozen=True)
class StageSpec:
    """Everything that defines one stage; each module in pipeline/stages/ exports one as STAGE.

    - `order`: position in pipeline order (stage lists everywhere are sorted by it);
    - `schema`: the pydantic output model, validated with the abstract and taxonomy as context;
    - `prompt_fields`: values for `{placeholders}` of prompts/<name>.yaml besides {abstract};
    - `offline`: the built-in deterministic answer for an abstract (a schema-shaped dict);
    - `csv_columns` / `csv`: the stage's columns in summaries.csv and their values for an ok
      output (None when the stage failed or did not run);
    - `schema_hook`: adjusts the strict JSON schema sent to models (e.g. an enum of tag ids);
    - `uses_taxonomy`: the answer depends on the taxonomy, so its hash enters the cache key;
    - `items`: a list field whose items are validated one by one: an invalid item is left
      out of the answer (and re-asked about on its own) instead of rejecting the answer;
    - `example`: a filled answer shown to models in json_object mode (valid for `schema`);
    - `output_tokens`: typical output tokens of one answer (for `digest run --dry-run`;
      measured on the realistic-answer corpus, `python -m bench.realistic`);
    - `repair`: deterministic shape repairs of a decoded answer before validation (a bare
      list where an object was asked, extra keys, labels for ids, ...; pipeline/repair.py
      has the JSON-level ones); never changes a number or a word of content;
    - `screen`: checks of a schema-valid output against the abstract that leave parts out
      for good instead of rejecting the answer (tags nothing supports, keywords the abstract
      lacks); a cached output must pass it unchanged;
    - `plain_text`: the field an answer with no JSON at all stands for (a TL;DR written as
      plain text; `_plain_answer` says when an answer is one);
    - `abstract_fields`: placeholder values that depend on the abstract (tags: only the ids
      the abstract gives support for); they override `prompt_fields` of the same name, and
      the code that computes them enters the prompt hash.
    """

    name: str
    order: int
    schema: type[BaseModel]
    offline: Callable[[str, Taxonomy], Output]
    csv_columns: tuple[str, ...]
    csv: Callable[[Mapping[str, Any] | None], dict[str, Any]]
    prompt_fields: Callable[[Taxonomy, Path], dict[str, str]] = no_prompt_fields
    schema_hook: Callable[[dict[str, Any], Taxonomy], dict[str, Any]] = no_schema_hook
    uses_taxonomy: bool = False
    items: str | None = None
    example: Mapping[str, Any] | None = None
    output_tokens: int = 100
    repair: Callable[[Any, Taxonomy], Shaped] = no_shape_repair
    screen: Callable[[Output, str, Taxonomy], Shaped] = no_screen
    plain_text: str | None = None
    abstract_fields: Callable[[str, Taxonomy, Mapping[str, str]], dict[str, str]] | None = None

    @cached_property
    def item_schema(self) -> type[BaseModel] | None:
        """The model of one item of the `items` field, if the stage has one."""
        if self.items is None:
            return None
        (item,) = get_args(self.schema.model_fields[self.items].annotation)
        return item


@dataclass(frozen=True)
class Rejected:
    """One item of an answer that failed validation and was left out of the output."""

    index: int  # position in the answer it came from
    item: Any  # the item as the model wrote it
    error: OutputValidationError
    field: str | None = None  # the list it came from when not the stage's `items` (tags, ...)


@dataclass
class Parsed:
    """The valid part of an answer, and the items left out of it (stages with `items`)."""

    output: Output
    rejected: list[Rejected] = field(default_factory=list)  # re-asked about (stage `items`)
    dropped: list[Rejected] = field(default_factory=list)  # left out for good, with a record
    repairs: list[str] = field(default_factory=list)  # names of the repairs applied


@dataclass(frozen=True)
class Stage:
    """A stage bound to its template, taxonomy and prompt fields for one run."""

    spec: StageSpec
    template: PromptTemplate
    taxonomy: Taxonomy
    fields: dict[str, str] = field(default_factory=dict)
    name: str = field(init=False)  # the spec's name (`tldr`, `tags`, ...), read on hot paths

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.spec.name)

    @cached_property
    def json_schema(self) -> dict[str, Any]:
        """Strict JSON schema sent to models that support structured outputs."""
        return self.spec.schema_hook(llm_json_schema(self.spec.schema), self.taxonomy)

    @cached_property
    def json_schema_text(self) -> str:
        """The JSON schema as sent (compact), e.g. to estimate its tokens."""
        return json.dumps(self.json_schema, separators=(",", ":"))

    @cached_property
    def prompt_hash(self) -> str:
        """Hash of everything that shapes the answer: template, fields, schema, taxonomy."""
        parts: dict[str, Any] = {
            "template": self.template.model_dump(),
            "fields": self.fields,
            "schema": self.json_schema,
            "schema_version": SCHEMA_VERSION,
        }
        if self.spec.uses_taxonomy:
            parts["taxonomy"] = content_hash(self.taxonomy.model_dump(mode="json"))
        if self.spec.abstract_fields is not None:
            from pipeline.stages import validator_id  # the registry imports this module

            parts["abstract_fields"] = validator_id()
        return content_hash(parts)

    @cached_property
    def json_object_rules(self) -> str:
        """What json_object mode appends to the system message: a filled example and short
        rules instead of a raw JSON schema (small models echo `$defs`/`anyOf` back)."""
        lines = [f"Return only a JSON object (name: {self.name}), shaped like this example:"]
        if self.spec.example is not None:
            lines.append(json.dumps(self.spec.example, ensure_ascii=False))
        lines.append("Rules:")
        lines.extend(field_rules(self.spec.schema))
        return "\n".join(lines)

    def messages(self, abstract: str, *, json_object_mode: bool = False) -> list[dict[str, str]]:
        """Chat messages for one abstract; json_object mode adds an example and short rules."""
        fields = self.fields
        if self.spec.abstract_fields is not None:
            fields = {**fields, **self.spec.abstract_fields(abstract, self.taxonomy, fields)}
        msgs = self.template.render(abstract, **fields)
        if json_object_mode:
            msgs[0]["content"] += "\n\n" + self.json_object_rules
        return msgs

    def reask_items(self, rejected: list[Rejected]) -> str:
        """The follow-up message about the rejected items only (the others are kept)."""
        error = "\n".join(f"- {r.error}" for r in rejected)
        return self.template.render_reask(error, items=True)

    def parse(self, raw: str | None, abstract: str) -> Output:
        """Validate a raw model answer against the schema and the abstract; raise on failure."""
        parsed = self.accept(raw, abstract)
        if parsed.rejected:
            error = parsed.rejected[0].error
            message = "; ".join(str(r.error) for r in parsed.rejected)
            raise OutputValidationError(message, kind=error.kind, raw=raw)
        return parsed.output

    def accept(self, raw: str | None, abstract: str, *, keep_none: bool = False) -> Parsed:
        """The valid part of a raw answer after deterministic repair: invalid `items` left
        out (to re-ask about), unsupported sub-items dropped with a record; raise when the
        answer as a whole is unusable (empty, not JSON, wrong shape, or every item invalid
        unless `keep_none`)."""
        if raw is None or not raw.strip():
            raise OutputValidationError("empty answer", kind="empty", raw=raw)
        try:
            decoded = decode_answer(raw)
        except OutputValidationError as exc:
            field_name = self.spec.plain_text
            if field_name is None or len(raw) > 2000 or not _plain_answer(raw, abstract):
                raise OutputValidationError(str(exc), kind=exc.kind, raw=raw) from None
            decoded = Decoded({field_name: raw.strip()}, ["plain_text"])
        try:
            shaped = self.spec.repair(decoded.data, self.taxonomy)
        except OutputValidationError as exc:
            raise OutputValidationError(str(exc), kind=exc.kind, raw=raw) from None
        repairs = _unique([*decoded.repairs, *shaped.repairs])
        data = shaped.data
        items = self.spec.items
        if items is None or not isinstance(data.get(items), list):
            output = self._validate(data, abstract, raw=raw)
            screened = self._screen(output, abstract, raw=raw)
            return Parsed(
                screened.data,
                dropped=[*shaped.dropped, *screened.dropped],
                repairs=_unique([*repairs, *screened.repairs]),
            )
        context = {"abstract": abstract, "taxonomy": self.taxonomy}
        kept: list[BaseModel] = []
        rejected: list[Rejected] = []
        item_schema = self.spec.item_schema
        assert item_schema is not None
        for index, item in enumerate(data[items]):
            try:
                kept.append(item_schema.model_validate(item, context=context))
            except ValidationError as exc:
                error = OutputValidationError(
                    f"{items}[{index}]: {_describe(exc)}", kind=_kind(exc), raw=None
                )
                rejected.append(Rejected(index, item, error))
            except RecursionError:
                error = OutputValidationError(
                    f"{items}[{index}]: nested too deeply", kind="schema", raw=None
                )
                rejected.append(Rejected(index, item, error))
        if rejected and not kept and not keep_none:
            error = rejected[0].error
            message = "; ".join(str(r.error) for r in rejected)
            raise OutputValidationError(message, kind=error.kind, raw=raw)
        output = self._validate({**data, items: kept}, abstract, raw=raw)
        screened = self._screen(output, abstract, raw=raw)
        return Parsed(
            screened.data,
            rejected,
            dropped=[*shaped.dropped, *screened.dropped],
            repairs=_unique([*repairs, *screened.repairs]),
        )

    def _validate(self, data: Mapping[str, Any], abstract: str, *, raw: str | None) -> Output:
        try:
            model = self.spec.schema.model_validate(
                data, context={"abstract": abstract, "taxonomy": self.taxonomy}
            )
        except ValidationError as exc:
            raise OutputValidationError(_describe(exc), kind=_kind(exc), raw=raw) from exc
        except RecursionError:
            raise OutputValidationError(
                "answer is nested too deeply", kind="schema", raw=raw
            ) from None
        return model.model_dump(mode="json")

    def _screen(self, output: Output, abstract: str, *, raw: str | None) -> Shaped:
        try:
            return self.spec.screen(output, abstract, self.taxonomy)
        except OutputValidationError as exc:
            raise OutputValidationError(str(exc), kind=exc.kind, raw=raw) from None

    def validate(self, data: Mapping[str, Any], abstract: str, *, raw: str | None = None) -> Output:
        """Validate an output already decoded from JSON (a cached one): the schema and every
        check against the abstract; raise when any part of it would be left out today."""
        output = self._validate(data, abstract, raw=raw)
        screened = self._screen(output, abstract, raw=raw)
        if screened.dropped:
            raise OutputValidationError(
                "; ".join(str(d.error) for d in screened.dropped), kind="ungrounded", raw=raw
            )
        return screened.data


# A plain-text answer that says what it is ("TL;DR: ..."); other plain text must pass
# `_plain_answer`'s checks ("I cannot answer that." is no TL;DR).
_PLAIN_ANSWER = re.compile(r"\s*(?:\*\*)?(?:tl\s*;?\s*dr|summary)\b", re.I)
_NOT_PLAIN = re.compile(r"[{}\[\]`]|\b(?:I|I'm|I am|me|my|sorry)\b", re.I)
MAX_PLAIN_NEW_SHARE = 1 / 3  # of a plain answer's content words, at most this many new


def _plain_answer(raw: str, abstract: str) -> bool:
    """Whether an answer with no JSON value is the field's text written plainly: it says it
    is a TL;DR ("TL;DR: ..."), or it is prose in the abstract's words (no bracket or
    backtick of a broken JSON attempt, no "I"/"sorry" of a refusal, and at most a third of
    its content words new to the abstract; the field's own checks still follow)."""
    if _PLAIN_ANSWER.match(raw):
        return True
    if _NOT_PLAIN.search(raw):
        return False
    content = [t for t in tokens(raw) if len(t) > 2 and not t[0].isdigit()]
    return len(content) >= 3 and len(new_words(raw, abstract)) <= MAX_PLAIN_NEW_SHARE * len(content)


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def field_rules(schema: type[BaseModel], indent: str = "") -> list[str]:
    """One short line per field a model fills: name, type and meaning (json_object mode)."""
    from pipeline.schemas import COMPUTED_FIELDS

    rules = []
    for name, info in schema.model_fields.items():
        if name in COMPUTED_FIELDS:
            continue
        annotation = info.annotation
        args = get_args(annotation)
        nested = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if nested:
            rules.append(f"{indent}- {name}: a list of objects, each with every field below")
            rules.extend(field_rules(nested[0], indent + "  "))
            continue
        literal = [a for a in _flatten(annotation) if isinstance(a, str)]
        if literal:
            kind = " or ".join(json.dumps(a) for a in literal)
        elif type(None) in args:
            kind = "a string, or null"
        elif args:
            kind = "a list of strings"
        else:
            kind = "a string"
        text = f"{indent}- {name}: {kind}"
        if info.description:
            text += f"; {info.description[0].lower()}{info.description[1:]}"
        rules.append(text)
    return rules


def _flatten(annotation: Any) -> list[Any]:
    args = get_args(annotation)
    if not args:
        return [annotation]
    return [leaf for arg in args for leaf in _flatten(arg)]


def _kind(exc: ValidationError) -> FailureKind:
    for err in exc.errors():
        if isinstance((err.get("ctx") or {}).get("error"), GroundingError):
            return "ungrounded"
    return "schema"


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "answer"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)
