"""reviewers.yaml: the reviewer pool, each reviewer's expertise, past papers and identity.

```yaml
conflict_policy:               # optional
  derive: true                 # derive conflicts from authors, e-mail domains, institutions
  ignore_domains: [gmail.com]  # replaces conflicts.DEFAULT_IGNORED_DOMAINS
papers_file: reviewer_papers.jsonl   # optional, beside this file: one past paper a line,
                               # {"reviewer", "title", "abstract", "authors", "year"}
reviewers:
  - id: amara.okafor           # unique after trimming spaces and ignoring case
    name: Amara Okafor
    openreview_id: ~Amara_Okafor1
    emails: [amara@uni-lyon.example]
    institutions: [Université de Lyon]
    domains: [inria.example]   # more e-mail domains (past affiliations)
    tags: [sparse-autoencoders]
    keywords: [sparse autoencoder, superposition]
    conflicts: [rJlnfaNYvB, "12", 83025b0b2ab87d39]
    max_load: 6
    min_load: 2                # at least this many when it can be met (else --min-load)
    attributes: {seniority: senior, country: FR}   # any keys, for --require / --at-most
    papers:
      - {title: ..., abstract: ..., authors: [Amara Okafor, José Núñez], year: 2024}
```

A field none of these models knows (top level, reviewer entry, conflict_policy, past paper,
papers_file line) is left out with a warning (`ReviewerPool.warnings`: once per field name
and place, with a count), never silently; one that looks like a misspelt known field
(`conflict`, `max-load`) is a ConfigError, since ignoring it could leave a conflict out.

Reviewer ids are compared trimmed and case-insensitively: `a` and `"a "` are the same
person, so listing both is an error, never two people.
"""

from __future__ import annotations

import difflib
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from pipeline import yamltext
from pipeline.errors import ConfigError
from pipeline.jsonl import iter_jsonl
from pipeline.taxonomy import Taxonomy
from pipeline.text import normalize_ws

log = logging.getLogger(__name__)

MAX_LOAD = 1_000_000  # papers per reviewer at most, in reviewers.yaml and --max-load


def reviewer_key(reviewer_id: str) -> str:
    """The form reviewer ids are compared in: whitespace-trimmed, case-folded."""
    return normalize_ws(reviewer_id).casefold()


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(normalize_ws(str(v)) for v in value if v is not None and str(v).strip())
    return value


class PastPaper(BaseModel):
    """One of a reviewer's own papers: what their text expertise is computed from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    title: str | None = None
    abstract: str = ""
    authors: tuple[str, ...] = ()  # every author, the reviewer among them (co-author conflicts)
    year: int | None = Field(default=None, ge=1000, le=9999)

    @field_validator("authors", mode="before")
    @classmethod
    def _author_list(cls, value: Any) -> Any:
        return _strings(value)

    @property
    def text(self) -> str:
        """Title and abstract, as the TF-IDF model reads them."""
        return f"{self.title or ''}\n{self.abstract}".strip()


class Reviewer(BaseModel):
    """One reviewer: expertise (tags, keywords, past papers), identity, conflicts, load."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    name: str | None = None
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    conflicts: frozenset[str] = frozenset()
    max_load: int | None = Field(default=None, ge=0, le=MAX_LOAD)
    min_load: int | None = Field(default=None, ge=0, le=MAX_LOAD)  # else --min-load
    openreview_id: str | None = None
    emails: tuple[str, ...] = ()
    institutions: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    papers: tuple[PastPaper, ...] = ()
    attributes: tuple[tuple[str, str], ...] = ()  # a YAML mapping of strings, kept sorted

    @field_validator("attributes", mode="before")
    @classmethod
    def _attribute_map(cls, value: Any) -> Any:
        if isinstance(value, dict):
            out = []
            for key, item in value.items():
                if isinstance(item, dict | list | tuple | set) or item is None:
                    raise ValueError(f"attribute {key!r}: a single value is expected")
                out.append((normalize_ws(str(key)), normalize_ws(str(item))))
            return tuple(sorted(out))
        return value

    def attribute(self, key: str) -> str | None:
        """The value of one attribute (keys compared case-insensitively), None when absent."""
        want = key.casefold()
        return next((v for k, v in self.attributes if k.casefold() == want), None)

    @field_validator("id", mode="before")
    @classmethod
    def _trim_id(cls, value: Any) -> Any:
        return normalize_ws(str(value)) if isinstance(value, str | int) else value

    @field_validator("tags", "keywords", "emails", "institutions", "domains", mode="before")
    @classmethod
    def _string_list(cls, value: Any) -> Any:
        return _strings(value)

    @field_validator("conflicts", mode="before")
    @classmethod
    def _conflict_ids(cls, value: Any) -> Any:
        # A YAML number (a submission number) is an id like any other.
        if isinstance(value, list | tuple | set):
            return frozenset(normalize_ws(str(v)) for v in value if str(v).strip())
        return value

    @property
    def label(self) -> str:
        """Name and id for messages."""
        return f"{self.name} ({self.id})" if self.name else self.id


class ConflictPolicy(BaseModel):
    """How conflicts are derived from the data (see pipeline/assign/conflicts.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    derive: bool = True
    ignore_domains: tuple[str, ...] | None = None  # None: conflicts.DEFAULT_IGNORED_DOMAINS
    # co-authors of a past paper of the last `coauthor_years` years conflict (0: none)
    coauthor_years: int = Field(default=3, ge=0, le=100)
    # the year they count back from; None: the newest year among the past papers
    reference_year: int | None = Field(default=None, ge=1000, le=9999)


class ReviewerPool(BaseModel):
    """The whole reviewers file: the reviewers and the conflict policy."""

    model_config = ConfigDict(extra="forbid")
    reviewers: list[Reviewer]
    papers_file: str | None = None
    conflict_policy: ConflictPolicy = ConflictPolicy()
    _warnings: tuple[str, ...] = PrivateAttr(default=())

    @property
    def warnings(self) -> tuple[str, ...]:
        """What reading the files left out (unknown fields), one line each."""
        return self._warnings


class _PaperRow(PastPaper):
    model_config = ConfigDict(extra="allow", frozen=True)
    reviewer: str


# Fields another part of the program adds to these models; never warned about.
_ALSO_KNOWN = {"reviewer entries": frozenset({"attributes"})}


class _UnknownFields:
    """Unknown field names per place, counted, with the first spot each was seen."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.counts: Counter[tuple[str, str]] = Counter()
        self.first: dict[tuple[str, str], str] = {}

    def strip(self, value: Any, model: type[BaseModel], place: str, spot: str) -> Any:
        """`value` without the keys `model` does not know, counted by `place` (plural: what
        holds them) with the first `spot` (this one); misspellings raise."""
        if not isinstance(value, dict):
            return value
        known = set(model.model_fields)
        unknown = [k for k in value if isinstance(k, str) and k not in known]
        if not unknown:
            return value
        for key in unknown:
            close = difflib.get_close_matches(key.replace("-", "_").lower(), known, 1, 0.8)
            if close and close[0] != key:
                raise ConfigError(
                    f"{self.source}: {spot}: unknown field {key!r}; did you mean {close[0]!r}?"
                )
            if key in _ALSO_KNOWN.get(place, ()):
                continue
            self.counts[place, key] += 1
            self.first.setdefault((place, key), spot)
        return {k: v for k, v in value.items() if k not in unknown}

    def warnings(self) -> list[str]:
        """One line per (place, field): how often, where first, and that it was left out."""
        out = []
        for (place, key), n in sorted(self.counts.items()):
            first = self.first[place, key]
            where = first if n == 1 else f"{n} {place} (first: {first})"
            out.append(f"{self.source}: unknown field {key!r} in {where}; left out")
        return out


def _strip_unknown(data: Any, unknown: _UnknownFields) -> Any:
    data = unknown.strip(data, ReviewerPool, "the top level", "the top level")
    if not isinstance(data, dict):
        return data
    data = dict(data)
    data["conflict_policy"] = unknown.strip(
        data.get("conflict_policy"), ConflictPolicy, "conflict_policy", "conflict_policy"
    )
    if data["conflict_policy"] is None:
        del data["conflict_policy"]
    reviewers = data.get("reviewers")
    if isinstance(reviewers, list):
        out = []
        for n, entry in enumerate(reviewers):
            rid = entry.get("id") if isinstance(entry, dict) else None
            spot = f"reviewer {rid!r}" if rid is not None else f"reviewers[{n}]"
            entry = unknown.strip(entry, Reviewer, "reviewer entries", spot)
            if isinstance(entry, dict) and isinstance(entry.get("papers"), list):
                entry = dict(entry)
                entry["papers"] = [
                    unknown.strip(pp, PastPaper, "past papers", f"{spot} papers[{m}]")
                    for m, pp in enumerate(entry["papers"])
                ]
            out.append(entry)
        data["reviewers"] = out
    return data


def _past_papers(path: Path, unknown: _UnknownFields) -> dict[str, list[PastPaper]]:
    out: dict[str, list[PastPaper]] = {}
    for line, row in iter_jsonl(path, loads=_PaperRow.model_validate_json):
        extra = row.model_extra or {}
        if extra:
            unknown.strip(extra, _PaperRow, f"lines of {path.name}", f"{path.name} line {line}")
        out.setdefault(reviewer_key(row.reviewer), []).append(
            PastPaper(title=row.title, abstract=row.abstract, authors=row.authors, year=row.year)
        )
    return out


def load_pool(path: Path, taxonomy: Taxonomy | None) -> ReviewerPool:
    """Read reviewers.yaml (and its papers_file); tags are resolved to taxonomy ids."""
    path = Path(path)
    data = yamltext.load_file(path, what="reviewers file")
    unknown = _UnknownFields(path)
    data = _strip_unknown(data, unknown)
    try:
        pool = ReviewerPool.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid reviewers file {yamltext.invalid_value(path, exc)}") from exc
    extra: dict[str, list[PastPaper]] = {}
    if pool.papers_file:
        papers_path = path.parent / pool.papers_file
        extra = _past_papers(papers_path, unknown)
    seen: dict[str, str] = {}
    out: list[Reviewer] = []
    for r in pool.reviewers:
        key = reviewer_key(r.id)
        if key in seen:
            same = "" if seen[key] == r.id else f" (same as {seen[key]!r}: ids ignore case/spaces)"
            raise ConfigError(f"{path}: duplicate reviewer id {r.id!r}{same}")
        seen[key] = r.id
        tags: list[str] = []
        for name in r.tags:
            tag_id = taxonomy.resolve(name) if taxonomy is not None else name
            if tag_id is None:
                raise ConfigError(f"{path}: reviewer {r.id!r}: unknown tag {name!r}")
            if tag_id not in tags:
                tags.append(tag_id)
        papers = (*r.papers, *extra.pop(key, []))
        out.append(r.model_copy(update={"tags": tuple(tags), "papers": papers}))
    if extra:
        names = ", ".join(sorted(extra))
        raise ConfigError(f"{pool.papers_file}: papers of unknown reviewer(s): {names}")
    if not out:
        raise ConfigError(f"{path}: no reviewers listed")
    loaded = pool.model_copy(update={"reviewers": out})
    loaded._warnings = tuple(unknown.warnings())
    return loaded


def load_reviewers(path: Path, taxonomy: Taxonomy | None) -> list[Reviewer]:
    """The reviewers of a reviewers.yaml (see load_pool)."""
    return load_pool(path, taxonomy).reviewers
