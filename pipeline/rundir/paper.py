"""`Paper`: the flat, read-only view of one summary record that triage, reports and reviewer
assignment work on. Stages that failed keep their error (`failed`); stages the run skipped
are absent from `status`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pipeline.rundir.models import SummaryRecord


@dataclass(frozen=True)
class Paper:
    """One summarized abstract, flattened for triage and rendering."""

    id: str  # the content hash: the stable key
    title: str | None
    abstract: str
    sources: tuple[tuple[str, int | None], ...] = ()
    # The user's identity (from the input; SourceRef): the first source's id and number,
    # every id the paper has (a duplicate abstract may come with several), authors and so on.
    paper_id: str | None = None
    paper_ids: tuple[str, ...] = ()
    number: str | None = None
    forum: str | None = None
    authors: tuple[str, ...] = ()
    authorids: tuple[str, ...] = ()
    author_keywords: tuple[str, ...] = ()
    venue: str | None = None
    affiliations: tuple[str, ...] = ()
    tldr: str | None = None
    tags: tuple[str, ...] = ()
    # The model's tags whose only support is an ambiguous phrase: shown marked, never used
    # as fact (grouping, assignment).
    unconfirmed_tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    claims: tuple[dict[str, Any], ...] = ()
    status: dict[str, str] = field(default_factory=dict)
    failed: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        """The id the user knows the paper by: their id, else '#number', else the hash."""
        if self.paper_id:
            return self.paper_id
        return f"#{self.number}" if self.number else self.id

    @property
    def n_claims(self) -> int:
        """Number of claimed results."""
        return len(self.claims)

    @property
    def n_quantitative(self) -> int:
        """Number of quantitative claimed results."""
        return sum(1 for c in self.claims if c.get("kind") == "quantitative")

    @property
    def has_results(self) -> bool:
        """True when the paper claims at least one quantitative result."""
        return self.n_quantitative > 0

    @classmethod
    def from_record(cls, record: SummaryRecord) -> Paper:
        """The view of one summary record."""
        tldr = record.output("tldr") or {}
        tags = record.output("tags") or {}
        claims = record.output("claims") or {}
        title = record.title if record.title and record.title.strip() else None
        text = tldr.get("tldr")
        srcs = record.sources
        ids = _unique(s.paper_id for s in srcs)
        return cls(
            id=record.id,
            title=title,
            abstract=record.abstract,
            sources=tuple((s.file, s.position) for s in srcs),
            paper_id=ids[0] if ids else None,
            paper_ids=ids,
            number=next((s.number for s in srcs if s.number), None),
            forum=next((s.forum for s in srcs if s.forum), None),
            authors=_unique(a for s in srcs for a in s.authors),
            authorids=_unique(a for s in srcs for a in s.authorids),
            author_keywords=next((s.keywords for s in srcs if s.keywords), ()),
            venue=next((s.venue for s in srcs if s.venue), None),
            affiliations=_unique(a for s in srcs for a in s.affiliations),
            tldr=text if isinstance(text, str) and text.strip() else None,
            tags=tuple(str(t) for t in tags.get("tags") or ()),
            unconfirmed_tags=tuple(str(t) for t in tags.get("unconfirmed") or ()),
            keywords=tuple(str(k) for k in tags.get("keywords") or ()),
            claims=tuple(c for c in claims.get("claims") or () if isinstance(c, dict)),
            status={name: r.status for name, r in record.stages.items()},
            failed={
                name: {"kind": r.error.kind, "message": r.error.message}
                if r.error is not None
                else {"kind": "backend", "message": ""}
                for name, r in record.stages.items()
                if r.status != "ok"
            },
        )


def _unique(values: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))
