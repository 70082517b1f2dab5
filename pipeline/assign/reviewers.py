"""reviewers.yaml: the reviewer pool, each reviewer's expertise, past papers and identity.

```yaml
conflict_policy:               # optional
  derive: true                 # derive conflicts from authors, e-mail domains, institutions
  ignore_domains: [gmail.com]  # replaces conflicts.DEFAULT_IGNORED_DOMAINS
papers_file: reviewer_papers.jsonl   # optional, beside this file: {"reviewer", "title", "abstract"}
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
    papers:
      - {title: ..., abstract: ...}
```

Reviewer ids are compared trimmed and case-insensitively: `a` and `"a "` are the same
person, so listing both is an error, never two people.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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


class PastPaper(BaseModel):
    """One of a reviewer's own papers: what their text expertise is computed from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    title: str | None = None
    abstract: str = ""

    @property
    def text(self) -> str:
        """Title and abstract, as the TF-IDF model reads them."""
        return f"{self.title or ''}\n{self.abstract}".strip()


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(normalize_ws(str(v)) for v in value if v is not None and str(v).strip())
    return value


class Reviewer(BaseModel):
    """One reviewer: expertise (tags, keywords, past papers), identity, conflicts, load."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    name: str | None = None
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    conflicts: frozenset[str] = frozenset()
    max_load: int | None = Field(default=None, ge=0, le=MAX_LOAD)
    openreview_id: str | None = None
    emails: tuple[str, ...] = ()
    institutions: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    papers: tuple[PastPaper, ...] = ()

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


class ReviewerPool(BaseModel):
    """The whole reviewers file: the reviewers and the conflict policy."""

    model_config = ConfigDict(extra="forbid")
    reviewers: list[Reviewer]
    papers_file: str | None = None
    conflict_policy: ConflictPolicy = ConflictPolicy()


class _PaperRow(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reviewer: str
    title: str | None = None
    abstract: str = ""


def _past_papers(path: Path) -> dict[str, list[PastPaper]]:
    out: dict[str, list[PastPaper]] = {}
    for _, row in iter_jsonl(path, loads=_PaperRow.model_validate_json):
        out.setdefault(reviewer_key(row.reviewer), []).append(
            PastPaper(title=row.title, abstract=row.abstract)
        )
    return out


def load_pool(path: Path, taxonomy: Taxonomy | None) -> ReviewerPool:
    """Read reviewers.yaml (and its papers_file); tags are resolved to taxonomy ids."""
    path = Path(path)
    data = yamltext.load_file(path, what="reviewers file")
    try:
        pool = ReviewerPool.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid reviewers file {yamltext.invalid_value(path, exc)}") from exc
    extra: dict[str, list[PastPaper]] = {}
    if pool.papers_file:
        papers_path = path.parent / pool.papers_file
        extra = _past_papers(papers_path)
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
    return pool.model_copy(update={"reviewers": out})


def load_reviewers(path: Path, taxonomy: Taxonomy | None) -> list[Reviewer]:
    """The reviewers of a reviewers.yaml (see load_pool)."""
    return load_pool(path, taxonomy).reviewers
