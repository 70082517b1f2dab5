"""The JSON protocol between the report's Python and its script (assets/report.js).

report.html embeds one JSON object, `ReportData`, in `<script type="application/json"
id="digest-data">`. The script only renders and filters what it is given: search texts,
sort orders, the ids a permalink may use, the metric/dataset facets (which papers each
facet value selects) and the rows of the CSV/JSON export are computed here, by the same
functions `digest triage` uses, so the page and the CLI always agree. Every string is plain
text (the script sets `textContent` only); `url` is an http(s) link built from the
checked forum template (triage.check_forum_url).

URL state (the page's hash, so it works from file://): `tag` (repeatable), `mode=any`,
`q`, `quant=1`, `failed=1`, `metric`, `dataset`, `paper` (one paper by any of its `keys`:
the permalink), `sort` (a SORT_KEYS key), `dir=desc`, `page`. Each maps to a `digest
triage` flag: --tag, --any, --grep, --has-results, --failed, --metric, --dataset, --paper,
--sort, --reverse.

Export: the script writes the CSV header (`csv_header`) and the `csv` line of every paper
of the current selection, in order, to a Blob (= `digest triage --format csv`), or the
selection's `row` objects as a JSON array (the objects of `digest triage --format jsonl`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, TypedDict

from pipeline.rundir import Paper
from pipeline.taxonomy import Taxonomy
from pipeline.text import display_text, normalize_ws
from pipeline.triage import (
    CSV_HEADER,
    DEFAULT_FORUM_URL,
    SORT_KEYS,
    claim_values,
    forum_url,
    paper_keys,
    paper_row,
    row_csv,
    search_text,
)

FACET_VALUES = 15  # metric/dataset values listed per facet (most papers first)


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

    id: str  # the content hash: the stable key (data-id of the card)
    ref: str  # the user's id, else "#number", else the hash (Paper.ref)
    number: str | None
    url: str | None  # forum link (OpenReview id + the forum URL template), else None
    title: str | None
    headline: str | None  # leads the card when there is no title: the TL;DR (else None)
    tldr: str | None
    authors: list[str]
    venue: str | None
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
    keys: list[str]  # triage.paper_keys: the ids `#paper=` accepts (lowercased)
    row: dict[str, Any]  # triage.paper_row: one object of the JSON export
    csv: str  # triage.row_csv(row): one line of the CSV export (CRLF-terminated)


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
    # [value, label, [paper indexes]]: `--metric value` / `--dataset value` selects exactly
    # those papers (a claim's field contains the value); most papers first
    metric_facets: list[list[Any]]
    dataset_facets: list[list[Any]]
    csv_header: str  # triage.CSV_HEADER


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
    """What leads a card without a title: the TL;DR (never a sentence of the abstract)."""
    if paper.title or not paper.tldr:
        return None
    return display_text(paper.tldr)


def report_paper(
    paper: Paper, taxonomy: Taxonomy | None = None, forum: str = DEFAULT_FORUM_URL
) -> ReportPaper:
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
    row = paper_row(paper, taxonomy, forum)
    return ReportPaper(
        id=paper.id,
        ref=paper.ref,
        number=paper.number,
        url=forum_url(paper, forum),
        title=_opt(paper.title),
        headline=headline(paper),
        tldr=_opt(paper.tldr),
        authors=list(paper.authors),
        venue=paper.venue,
        tags=list(paper.tags),
        keywords=[display_text(k) for k in paper.keywords],
        claims=claims,
        n_quantitative=paper.n_quantitative,
        abstract=highlight_segments(paper.abstract, paper.claims),
        status=dict(paper.status),
        failed={k: dict(v) for k, v in paper.failed.items()},
        sources=[f"{f}:{p}" if p is not None else f for f, p in paper.sources],
        search=search_text(paper),
        metrics=claim_values(paper, "metric"),
        datasets=claim_values(paper, "dataset"),
        keys=paper_keys(paper),
        row=row,
        csv=row_csv(row),
    )


class FacetCounter:
    """Collects one claim field (metric or dataset) over the papers of a page, as they come."""

    def __init__(self) -> None:
        self.values: list[list[str]] = []  # per paper: lowercased values
        self.labels: Counter[tuple[str, str]] = Counter()  # (value, as written) -> claims

    def add(self, paper: Paper, key: str) -> None:
        """One paper's values."""
        values = claim_values(paper, key)
        self.values.append(values)
        for c, v in zip(paper.claims, values, strict=True):
            if v:
                self.labels[v, normalize_ws(str(c.get(key)))] += 1

    def facets(self, limit: int = FACET_VALUES) -> list[list[Any]]:
        """[value, label, [paper indexes]] of the values most papers mention."""
        label: dict[str, str] = {}
        for (value, written), _ in self.labels.most_common():
            label.setdefault(value, written)
        papers_of: dict[str, list[int]] = {}  # distinct value -> papers mentioning it
        for i, values in enumerate(self.values):
            for v in dict.fromkeys(values):
                if v:
                    papers_of.setdefault(v, []).append(i)
        top = sorted(papers_of, key=lambda v: (-len(papers_of[v]), v))[:limit]
        out = []
        for value in top:
            # A facet selects the papers where some value contains it (`contains_any`):
            # the union over the distinct values that contain it, in paper order.
            hits = sorted({i for v, idx in papers_of.items() if value in v for i in idx})
            out.append([value, display_text(label[value]), hits])
        return out


__all__ = ["CSV_HEADER", "FacetCounter", "ReportData", "ReportPaper", "report_paper"]
