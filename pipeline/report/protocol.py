"""The JSON protocol between the report's Python and its script (assets/report.js).

report.html embeds one JSON object, `ReportData`, in `<script type="application/json"
id="digest-data">`. The script only renders and filters what it is given: search texts and
sort orders are computed here, by the same functions `digest triage` uses, so the page and
the CLI always agree. Every string is plain text (the script sets `textContent` only).
"""

from __future__ import annotations

from typing import TypedDict

from pipeline.rundir import Paper
from pipeline.text import display_text, normalize_ws, split_sentences
from pipeline.triage import SORT_KEYS, search_text


class ReportClaim(TypedDict):
    """One claimed result as shown under a paper."""

    statement: str
    kind: str  # "quantitative" | "qualitative"
    metric: str | None
    value: str | None
    unit: str | None
    dataset: str | None
    comparison: str | None
    evidence: str | None  # only when its span could not be highlighted in the abstract


class ReportPaper(TypedDict):
    """One paper: what the card shows and what the filters look at."""

    id: str
    title: str | None
    headline: str | None  # shown when there is no title: the TL;DR, else the first sentence
    tldr: str | None
    tags: list[str]  # tag ids, primary first
    keywords: list[str]
    claims: list[ReportClaim]
    n_quantitative: int
    abstract: list[list[str | int]]  # [text, claim number, ...] pieces, in order
    status: dict[str, str]  # stage -> "ok" | "failed"; a stage not run is absent
    failed: dict[str, dict[str, str]]  # stage -> {"kind", "message"}
    sources: list[str]  # "file:position"
    search: str  # triage.search_text: what a text query is matched against
    metrics: list[str]  # each claim's metric, lowercased and whitespace-normalized
    datasets: list[str]  # each claim's dataset, likewise


class ReportData(TypedDict):
    """The whole page: papers in run order, then everything the script needs besides."""

    papers: list[ReportPaper]
    title: str
    info: str  # backend, model and start time of the run
    generated: str
    incomplete: str | None  # why the run holds fewer papers than its inputs, if it does
    stages: list[str]
    tags: dict[str, list[str]]  # tag id -> [label, facet id]
    facets: list[list[str]]  # [facet id, facet label], in taxonomy order
    order: dict[str, list[int]]  # sort key (triage.SORT_KEYS) -> paper indexes, ascending


SORTS = SORT_KEYS


def _opt(value: object) -> str | None:
    return display_text(normalize_ws(str(value))) if value not in (None, "") else None


def valid_span(abstract: str, span: object) -> tuple[int, int] | None:
    """The (start, end) of a claim's span when it lies inside the abstract, else None."""
    if not isinstance(span, list | tuple) or len(span) != 2:
        return None
    start, end = span
    if not (isinstance(start, int) and isinstance(end, int)):
        return None
    return (start, end) if 0 <= start < end <= len(abstract) else None


def highlight_segments(
    abstract: str, claims: tuple[dict, ...] | list[dict]
) -> list[list[str | int]]:
    """The abstract cut at evidence-span boundaries: [text, claim_no, ...] pieces (1-based)."""
    spans = [(valid_span(abstract, c.get("span")), n) for n, c in enumerate(claims, 1)]
    found = [(s, n) for s, n in spans if s is not None]
    cuts = sorted({0, len(abstract), *(x for s, _ in found for x in s)})
    out: list[list[str | int]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        piece = display_text(abstract[a:b])
        if not piece:
            continue
        covering = [n for (s, e), n in found if s <= a and b <= e]
        if out and out[-1][1:] == covering:
            out[-1][0] = str(out[-1][0]) + piece
        else:
            out.append([piece, *covering])
    return out


def headline(paper: Paper) -> str | None:
    """What leads a card without a title: the TL;DR, else the abstract's first sentence."""
    if paper.title:
        return None
    if paper.tldr:
        return display_text(paper.tldr)
    sentences = split_sentences(display_text(paper.abstract))
    first = sentences[0] if sentences else ""
    return first if len(first) <= 160 else first[:159].rstrip() + "\u2026"


def _lower(value: object) -> str:
    return normalize_ws(str(value or "")).lower()


def report_paper(paper: Paper) -> ReportPaper:
    """The protocol object of one paper."""
    claims: list[ReportClaim] = []
    for c in paper.claims:
        claims.append(
            ReportClaim(
                statement=_opt(c.get("statement")) or "",
                kind="quantitative" if c.get("kind") == "quantitative" else "qualitative",
                metric=_opt(c.get("metric")),
                value=_opt(c.get("value")),
                unit=_opt(c.get("unit")),
                dataset=_opt(c.get("dataset")),
                comparison=_opt(c.get("comparison")),
                evidence=None
                if valid_span(paper.abstract, c.get("span")) is not None
                else _opt(c.get("evidence")),
            )
        )
    return ReportPaper(
        id=paper.id,
        title=_opt(paper.title),
        headline=headline(paper),
        tldr=_opt(paper.tldr),
        tags=list(paper.tags),
        keywords=[display_text(k) for k in paper.keywords],
        claims=claims,
        n_quantitative=paper.n_quantitative,
        abstract=highlight_segments(paper.abstract, paper.claims),
        status=dict(paper.status),
        failed={k: dict(v) for k, v in paper.failed.items()},
        sources=[f"{f}:{p}" if p is not None else f for f, p in paper.sources],
        search=search_text(paper),
        metrics=[_lower(c.get("metric")) for c in paper.claims],
        datasets=[_lower(c.get("dataset")) for c in paper.claims],
    )
