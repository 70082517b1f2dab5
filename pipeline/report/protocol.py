"""The JSON protocol between the report's Python and its script (assets/report.js).

report.html embeds one JSON object, `ReportData`, in `<script type="application/json"
id="digest-data">`. The script only renders and filters what it is given: search texts,
sort orders, the ids a permalink may use, the metric/dataset facets (which papers each
facet value selects) and the values of the CSV/JSON export are computed here, by the same
functions `digest triage` uses, so the page and the CLI always agree. Every string is plain
text (the script sets `textContent` only); `url` is an http(s) link built from the
checked forum template (triage.check_forum_url).

The page sends nothing twice where the script can rebuild it exactly (tests/test_report.py
checks each rebuild against triage; tests/test_report_browser.py runs them in Chromium):
- `abstract` is the abstract itself when display_text leaves it alone and its offsets are
  UTF-16 units too (no astral characters); the claims then carry their valid `span` and
  the script cuts the abstract as highlight_segments does. Otherwise it is the segments.
- `search` is triage.search_text, or its parts in order: texts (normalized, lowercased)
  and the numbers of card fields (SEARCH_FIELDS) the script's norm() turns into exactly
  Python's normalize_ws(...).lower(): only fields of characters where the two languages'
  whitespace and case rules agree (_JS_UNSAFE) and, for fields the card shows through
  display_text, without markup.
- the export row: `x` holds the triage.paper_row values the card lacks (0 = "the card's
  own value"); export_row() is how the script rebuilds the row; `f` lists the cells that
  start like a formula yet csv_cell leaves bare (numbers: Python's float() decides).

URL state (the page's hash, so it works from file://): `tag` (repeatable), `mode=any`,
`q`, `quant=1`, `failed=1`, `metric`, `dataset`, `paper` (one paper by any of its `keys`:
the permalink), `sort` (a SORT_KEYS key), `dir=desc`, `page`. Each maps to a `digest
triage` flag: --tag, --any, --grep, --has-results, --failed, --metric, --dataset, --paper,
--sort, --reverse.

Export: the script writes the CSV header (`csv_header`) and a line per paper of the
current selection, in order, to a Blob (= `digest triage --format csv`): the export_row
values through csv_cell (lists joined with "; ", formula-like cells not in `f` get an
apostrophe) with the csv module's minimal quoting (a cell holding `"`, `,`, CR or LF is
quoted, `"` doubled), CRLF rows; or the rows as objects (`row_fields` keys) in a JSON array
(the objects of `digest triage --format jsonl`).
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from typing import Any, Required, TypedDict

from pipeline.csvfile import csv_cell
from pipeline.rundir import Paper
from pipeline.taxonomy import Taxonomy
from pipeline.text import display_text, has_display_markup, normalize_ws
from pipeline.triage import (
    CSV_HEADER,
    DEFAULT_FORUM_URL,
    ROW_FIELDS,
    SORT_KEYS,
    forum_url,
    natural_key,
    paper_keys,
    tag_label,
)

FACET_VALUES = 15  # metric/dataset values listed per facet (most papers first)


class ReportClaim(TypedDict, total=False):
    """One claimed result as shown under a paper (an empty optional field is left out)."""

    statement: Required[str]
    kind: Required[str]  # "quantitative" | "qualitative"
    metric: str
    value: str
    unit: str
    dataset: str
    comparison: str
    evidence: str  # only when its span could not be highlighted in the abstract
    span: tuple[int, int]  # its valid span, when `abstract` is the abstract as text


class ReportPaper(TypedDict, total=False):
    """One paper: what the card shows and what the filters look at."""

    id: Required[str]  # the content hash: the stable key (data-id of the card)
    ref: Required[str]  # the user's id, else "#number", else the hash (Paper.ref)
    number: Required[str | None]
    url: Required[str | None]  # forum link (OpenReview id + the forum URL template), else None
    title: Required[str | None]
    headline: Required[str | None]  # leads the card without a title: the TL;DR (else None)
    tldr: Required[str | None]
    authors: Required[list[str]]
    venue: Required[str | None]
    tags: Required[list[str]]  # tag ids, primary first
    keywords: Required[list[str]]
    claims: Required[list[ReportClaim]]
    n_quantitative: Required[int]
    # the abstract as text (claims carry spans), or [text, claim number, ...] pieces
    abstract: Required[str | list[list[str | int]]]
    status: Required[dict[str, str]]  # stage -> "ok" | "failed"; a stage not run is absent
    failed: Required[dict[str, dict[str, str]]]  # stage -> {"kind", "message"}
    sources: Required[list[str]]  # "file:position"
    # triage.search_text, or its parts: texts and SEARCH_FIELDS numbers (search_field)
    search: Required[str | list[str | int]]
    metrics: Required[list[str]]  # each claim's metric, lowercased and whitespace-normalized
    datasets: Required[list[str]]  # each claim's dataset, likewise
    keys: Required[list[str]]  # triage.paper_keys: the ids `#paper=` accepts (lowercased)
    # the paper_row values the card lacks: [paper_id, title, tldr, keywords, metrics,
    # datasets], title/tldr/keywords as written or 0 when the card shows them unchanged
    x: Required[list[Any]]
    f: list[int]  # ROW_FIELDS indexes of formula-like cells the CSV leaves bare


class ReportData(TypedDict):
    """The whole page: papers in run order, then everything the script needs besides."""

    papers: list[ReportPaper]
    title: str
    info: str  # backend, model and start time of the run
    generated: str
    incomplete: str | None  # why the run holds fewer papers than its inputs, if it does
    stages: list[str]
    tags: dict[str, list[str]]  # tag id -> [label (triage.tag_label), facet id]
    facets: list[list[str]]  # [facet id, facet label], in taxonomy order
    order: dict[str, list[int]]  # sort key (triage.SORT_KEYS) -> paper indexes, ascending
    # [value, label, [paper indexes]]: `--metric value` / `--dataset value` selects exactly
    # those papers (a claim's field contains the value); most papers first
    metric_facets: list[list[Any]]
    dataset_facets: list[list[Any]]
    csv_header: str  # triage.CSV_HEADER
    row_fields: list[str]  # triage.ROW_FIELDS: the export's columns and JSON keys


SORTS = SORT_KEYS
_SPACE_JOIN = " ".join
# What a derivable abstract may hold: printable ASCII and ASCII whitespace (where Python's
# str.split()/lower() and JavaScript's /\s/ and toLowerCase() agree; \x1c-\x1f are
# whitespace to Python only), and common punctuation and math symbols that are neither
# whitespace nor cased in either language (dashes, quotes, primes, x, arrows, operators).
_JS_UNSAFE = re.compile(
    r"[^\t\n\x0b\x0c\r\x20-\x7e\xb0\xb1\xb7\xd7\xf7"
    r"\u2010-\u2027\u2030-\u205e\u2190-\u21ff\u2200-\u22ff]"
)
_NON_BMP = re.compile("[\U00010000-\U0010ffff]")  # two UTF-16 units in JavaScript
_FORMULA_START = frozenset("=+-@\t\r")  # csvfile.csv_cell's formula starts


def _opt(value: object) -> str | None:
    if value is None or value == "":
        return None
    return display_text(_SPACE_JOIN((value if type(value) is str else str(value)).split()))


_SHORT_CACHE: dict[
    tuple[type, Any], str | None
] = {}  # metric, value, unit, ... repeat across papers


def _short_opt(value: Any) -> str | None:
    """_opt of a short claim field, memoized."""
    key = (type(value), value)  # 1, 1.0 and True are one dict key, not one text
    try:
        return _SHORT_CACHE[key]
    except KeyError:
        pass
    except TypeError:  # not hashable
        return _opt(value)
    if len(_SHORT_CACHE) >= 4096:  # the frequent values (metric names, units) stay
        _SHORT_CACHE.clear()
    out = _SHORT_CACHE[key] = _opt(value)
    return out


def _lower_ws(value: Any) -> str:
    """triage.claim_values' form of one value."""
    return _SPACE_JOIN(str(value or "").split()).lower()


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
    found = []
    for n, c in enumerate(claims, 1):
        s = valid_span(abstract, c.get("span"))
        if s is not None:
            found.append((s[0], s[1], n))
    # display_text changes nothing in a text without its markup: skip it piece by piece
    show = display_text if has_display_markup(abstract) else None
    if not found:
        whole = show(abstract) if show else abstract
        return [[whole]] if whole else []
    cuts = sorted({0, len(abstract), *(x for s, e, _ in found for x in (s, e))})
    out: list[list[str | int]] = []
    last: list[int] | None = None
    for a, b in zip(cuts, cuts[1:], strict=False):
        piece = show(abstract[a:b]) if show else abstract[a:b]
        if not piece:
            continue
        covering = [n for s, e, n in found if s <= a and b <= e]
        if out and last == covering:
            out[-1][0] = str(out[-1][0]) + piece
        else:
            out.append([piece, *covering])
            last = covering
    return out


def headline(paper: Paper) -> str | None:
    """What leads a card without a title: the TL;DR (never a sentence of the abstract)."""
    if paper.title or not paper.tldr:
        return None
    return display_text(paper.tldr)


# The card fields a search text's part may name (by index), as the script joins them.
SEARCH_FIELDS = ("id", "title", "tldr", "abstract", "keywords", "authors", "tags", "statements")


def _derivable(text: str, displayed: bool = False) -> bool:
    """True when the script's norm() of the card's text gives Python's normalized lowercase.

    `displayed`: the card shows display_text of it, which is the text only without markup.
    """
    if _JS_UNSAFE.search(text):
        return False
    return not (displayed and has_display_markup(text))


def search_field(paper: Paper, abstract_shown: bool) -> str | list[str | int]:
    """triage.search_text, or its parts in order: a text as it is, or the number of a card
    field (SEARCH_FIELDS) the script normalizes and lowercases itself, where that is exact."""
    statements = [str(c.get("statement") or "") for c in paper.claims]
    displayed = _SPACE_JOIN([paper.title or "", paper.tldr or "", *paper.keywords, *statements])
    if abstract_shown and not has_display_markup(displayed):
        everything = [paper.id, *paper.paper_ids, displayed, paper.abstract]
        if not _JS_UNSAFE.search(_SPACE_JOIN([*everything, *paper.authors, *paper.tags])):
            # the common case: every card field is derivable (the ids are no card field)
            fast: list[str | int] = [0]
            if paper.paper_ids:
                fast.append(_SPACE_JOIN(_SPACE_JOIN(paper.paper_ids).split()).lower())
            fast += [1, 2, 3, 4]
            if paper.author_keywords:
                fast.append(_SPACE_JOIN(_SPACE_JOIN(paper.author_keywords).split()).lower())
            fast += [5, 6, 7]
            return [x for x in fast if x != ""]
    pieces: list[str | int] = []

    def text(parts: list[str]) -> None:
        t = _SPACE_JOIN(_SPACE_JOIN(parts).split()).lower()
        if not t:
            return
        if pieces and isinstance(pieces[-1], str):
            pieces[-1] = pieces[-1] + " " + t
        else:
            pieces.append(t)

    def field(code: int, parts: list[str], displayed: bool = False) -> None:
        joined = _SPACE_JOIN(parts)
        if not joined:
            return
        if _derivable(joined, displayed):
            pieces.append(code)
        else:
            text([joined])

    field(0, [paper.id])
    text(list(paper.paper_ids))
    field(1, [paper.title or ""], True)
    field(2, [paper.tldr or ""], True)
    if abstract_shown:
        field(3, [paper.abstract])
    else:
        text([paper.abstract])
    field(4, list(paper.keywords), True)
    text(list(paper.author_keywords))
    field(5, list(paper.authors))
    field(6, list(paper.tags))
    field(7, statements, True)
    if all(isinstance(x, str) for x in pieces):
        return " ".join(pieces)  # type: ignore[arg-type]
    return pieces


def _float_cells(cells: tuple[tuple[int, Any], ...]) -> list[int]:
    """Export cells (ROW_FIELDS index, value) that start like a formula yet csv_cell leaves
    bare (they are numbers); the script quotes every other formula-like cell."""
    out = []
    for i, v in cells:
        if v is None:
            continue
        if type(v) is str:
            if v[:1] not in _FORMULA_START:
                continue
            text = v
        else:  # a list or tuple of texts
            if not v or str(v[0])[:1] not in _FORMULA_START:
                continue
            text = "; ".join([str(x) for x in v])
        if csv_cell(text) == text:
            out.append(i)
    return out


def report_paper(
    paper: Paper, taxonomy: Taxonomy | None = None, forum: str = DEFAULT_FORUM_URL
) -> ReportPaper:
    """The protocol object of one paper."""
    abstract = paper.abstract
    claims: list[dict[str, Any]] = []
    n_quantitative = 0
    # triage.claim_values (lowercased, per claim) and claim_metrics/claim_datasets (as
    # written, distinct) of metric and dataset, in the same pass (tests check them)
    metrics: list[str] = []
    datasets: list[str] = []
    metric_names: list[str] = []
    dataset_names: list[str] = []
    for c in paper.claims:
        get = c.get
        quantitative = get("kind") == "quantitative"
        n_quantitative += quantitative
        claim: dict[str, Any] = {
            "statement": _opt(get("statement")) or "",
            "kind": "quantitative" if quantitative else "qualitative",
        }
        for name in _CLAIM_FIELDS:
            raw = get(name)
            if raw is None or raw == "":
                continue
            value = _short_opt(raw)
            if value is not None:
                claim[name] = value
        metric, dataset = get("metric"), get("dataset")
        metrics.append(_lower_ws(metric))
        datasets.append(_lower_ws(dataset))
        if metric and str(metric) not in metric_names:
            metric_names.append(str(metric))
        if dataset and str(dataset) not in dataset_names:
            dataset_names.append(str(dataset))
        span = valid_span(abstract, get("span"))
        if span is None:
            evidence = _opt(get("evidence"))
            if evidence is not None:
                claim["evidence"] = evidence
        else:
            claim["span"] = span
        claims.append(claim)
    # An abstract display_text leaves alone (and whose offsets are UTF-16 units too) goes
    # as it is, with the claims' spans: the script cuts it the way highlight_segments does.
    as_text = not has_display_markup(abstract) and not _NON_BMP.search(abstract)
    if as_text:
        shown: str | list[list[str | int]] = abstract
    else:
        shown = highlight_segments(abstract, paper.claims)
        for claim in claims:
            claim.pop("span", None)
    url = forum_url(paper, forum)
    title = _opt(paper.title)
    tldr = _opt(paper.tldr)
    keywords = [display_text(k) for k in paper.keywords]
    raw_keywords = list(paper.keywords)
    export = [
        paper.paper_id,
        0 if paper.title == title else paper.title,
        0 if paper.tldr == tldr else paper.tldr,
        0 if raw_keywords == keywords else raw_keywords,
        metric_names,
        dataset_names,
    ]
    data: dict[str, Any] = {
        "id": paper.id,
        "ref": paper.ref,
        "number": paper.number,
        "url": url,
        "title": title,
        "headline": headline(paper),
        "tldr": tldr,
        "authors": paper.authors,  # tuples travel as JSON arrays
        "venue": paper.venue,
        "tags": paper.tags,
        "keywords": keywords,
        "claims": claims,
        "n_quantitative": n_quantitative,
        "abstract": shown,
        "status": paper.status,
        "failed": paper.failed,
        "sources": [f"{f}:{p}" if p is not None else f for f, p in paper.sources],
        "search": search_field(paper, as_text),
        "metrics": metrics,
        "datasets": datasets,
        "keys": paper_keys(paper),
        "x": export,
    }
    labels: tuple[str, ...] | list[str] = ()
    if paper.tags:  # the cell starts with the first label: the rest only matters then
        labels = (tag_label(taxonomy, paper.tags[0]),)
        if labels[0][:1] in _FORMULA_START:
            labels = [tag_label(taxonomy, t) for t in paper.tags]
    floats = _float_cells(
        (
            (0, paper.paper_id),
            (1, paper.number),
            (2, paper.title),
            (5, paper.tldr),
            (6, paper.tags),
            (7, labels),
            (8, paper.keywords),
            (11, export[4]),
            (12, export[5]),
            (14, paper.authors),
            (15, paper.venue),
            (16, data["sources"]),
        )
    )
    if floats:
        data["f"] = floats
    return data  # type: ignore[return-value]


_CLAIM_FIELDS = ("metric", "value", "unit", "dataset", "comparison")


def export_row(data: dict[str, Any], taxonomy: Taxonomy | None) -> list[Any]:
    """The values of triage.paper_row (ROW_FIELDS order) from a protocol object, as the
    script rebuilds them for the export (tests check it against paper_row)."""
    paper_id, title, tldr, keywords, metrics, datasets = data["x"]
    tags = data["tags"]
    return [
        paper_id,
        data["number"],
        data["title"] if title == 0 else title,
        data["id"],
        data["url"],
        data["tldr"] if tldr == 0 else tldr,
        tags,
        [tag_label(taxonomy, t) for t in tags],
        data["keywords"] if keywords == 0 else keywords,
        len(data["claims"]),
        data["n_quantitative"],
        metrics,
        datasets,
        sorted(data["failed"]),
        data["authors"],
        data["venue"],
        data["sources"],
    ]


def facet_labels(paper: Paper, key: str, values: list[str]) -> list[str]:
    """Each claim's `key` field as written (whitespace normalized) where its value is set."""
    return [
        normalize_ws(str(c.get(key))) if v else ""
        for c, v in zip(paper.claims, values, strict=True)
    ]


class FacetCounter:
    """Collects one claim field (metric or dataset) over the papers of a page, as they come."""

    def __init__(self) -> None:
        self.n = 0
        self.papers_of: dict[str, array[int]] = {}  # distinct value -> papers mentioning it
        self.labels: Counter[tuple[str, str]] = Counter()  # (value, as written) -> claims

    def add(self, values: list[str], labels: list[str]) -> None:
        """One paper's values per claim (claim_values) and their labels as written
        (facet_labels)."""
        i = self.n
        self.n += 1
        if not values:
            return
        for v, written in zip(values, labels, strict=True):
            if v:
                self.labels[v, written] += 1
        papers_of = self.papers_of
        for v in dict.fromkeys(values):
            if v:
                idx = papers_of.get(v)
                if idx is None:
                    papers_of[v] = idx = array("i")
                idx.append(i)

    def facets(self, limit: int = FACET_VALUES) -> list[list[Any]]:
        """[value, label, [paper indexes]] of the values most papers mention."""
        label: dict[str, str] = {}
        for (value, written), _ in self.labels.most_common():
            label.setdefault(value, written)
        papers_of = self.papers_of
        top = sorted(papers_of, key=lambda v: (-len(papers_of[v]), v))[:limit]
        out = []
        for value in top:
            # A facet selects the papers where some value contains it (`contains_any`):
            # the union over the distinct values that contain it, in paper order.
            hits = sorted({i for v, idx in papers_of.items() if value in v for i in idx})
            out.append([value, display_text(label[value]), hits])
        return out


class SortOrders:
    """The SORT_KEYS orders of a page's papers, from a few compact values kept per paper.

    The same orders as sorting by triage.sort_key (tests check it): `title` by
    (no title, lowercased title, id); `claims` by (-claims, -quantitative, rank in `title`),
    which is claims' sort key since `title`'s key is its tail; `tag` by (no tag, primary
    tag's lowercased label, id); `id` by triage.id_sort_key from the id or number kept.
    """

    def __init__(self, taxonomy: Taxonomy | None) -> None:
        self.taxonomy = taxonomy
        self.ids: list[str] = []
        self.titles: list[str | None] = []
        self.n_claims = array("i")
        self.n_quant = array("i")
        self.tag = array("i")  # index into self.labels, -1 without tags
        self.labels: dict[str, int] = {}  # lowercased tag label -> index
        self.user_ids: list[str | None] = []  # paper_id, else number, else None
        self.id_kind = array("b")  # 0 paper_id, 1 number, 2 neither

    def add(self, paper: Paper, n_quantitative: int) -> None:
        """One paper's values."""
        self.add_values(
            paper.id,
            paper.title,
            len(paper.claims),
            n_quantitative,
            paper.tags[0] if paper.tags else None,
            paper.paper_id,
            paper.number,
        )

    def add_values(
        self,
        paper_id: str,
        title: str | None,
        n_claims: int,
        n_quantitative: int,
        first_tag: str | None,
        user_id: str | None,
        number: str | None,
    ) -> None:
        """One paper's values: its id, title, claim counts, primary tag, paper_id and number."""
        self.ids.append(paper_id)
        self.titles.append(None if title is None else title.lower())
        self.n_claims.append(n_claims)
        self.n_quant.append(n_quantitative)
        if first_tag is not None:
            label = tag_label(self.taxonomy, first_tag).lower()
            self.tag.append(self.labels.setdefault(label, len(self.labels)))
        else:
            self.tag.append(-1)
        if user_id:
            self.user_ids.append(user_id)
            self.id_kind.append(0)
        elif number:
            self.user_ids.append(number)
            self.id_kind.append(1)
        else:
            self.user_ids.append(None)
            self.id_kind.append(2)

    def orders(self) -> dict[str, array[int]]:
        """Sort key -> paper indexes in ascending order (each held compactly as it is done)."""
        n = len(self.ids)
        ids, titles = self.ids, self.titles
        title = array(
            "i", sorted(range(n), key=lambda i: (titles[i] is None, titles[i] or "", ids[i]))
        )
        rank = array("i", bytes(4 * n))
        for pos, i in enumerate(title):
            rank[i] = pos
        nc, nq = self.n_claims, self.n_quant
        claims = array("i", sorted(range(n), key=lambda i: (-nc[i], -nq[i], rank[i])))
        names = sorted(self.labels, key=self.labels.__getitem__)
        tag = self.tag
        tags = array(
            "i",
            sorted(
                range(n),
                key=lambda i: (tag[i] < 0, names[tag[i]] if tag[i] >= 0 else "", ids[i]),
            ),
        )
        kind, users = self.id_kind, self.user_ids
        by_id = array(
            "i", sorted(range(n), key=lambda i: (kind[i], natural_key(users[i] or ""), ids[i]))
        )
        out = {"claims": claims, "title": title, "id": by_id, "tag": tags}
        return {key: out[key] for key in SORTS}


__all__ = [
    "CSV_HEADER",
    "ROW_FIELDS",
    "FacetCounter",
    "ReportData",
    "ReportPaper",
    "SortOrders",
    "facet_labels",
    "report_paper",
]
