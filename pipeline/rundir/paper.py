"""`Paper`: the flat, read-only view of one summary record that triage, reports and reviewer
assignment work on. Stages that failed keep their error (`failed`); stages the run skipped
are absent from `status`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.rundir.models import SummaryRecord


@dataclass(frozen=True)
class Paper:
    """One summarized abstract, flattened for triage and rendering."""

    id: str
    title: str | None
    abstract: str
    sources: tuple[tuple[str, int | None], ...] = ()
    tldr: str | None = None
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    claims: tuple[dict[str, Any], ...] = ()
    status: dict[str, str] = field(default_factory=dict)
    failed: dict[str, dict[str, str]] = field(default_factory=dict)

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
        return cls(
            id=record.id,
            title=title,
            abstract=record.abstract,
            sources=tuple((s.file, s.position) for s in record.sources),
            tldr=text if isinstance(text, str) and text.strip() else None,
            tags=tuple(str(t) for t in tags.get("tags") or ()),
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
