"""Reviewer triage over papers: the query language, filters, sort orders and row formats.

The report page runs the same queries in the browser: it gets each paper's `search_text`
(or its `search_parts`, where the script rebuilds the rest exactly) and the orders of
`sort_key` from here (pipeline/report/protocol.py), so the page and `digest triage` cannot
disagree about what matches or in which order.

Text search: the query is split into terms; a paper matches when every term occurs in its
search text (case-insensitive, whitespace-normalized). A "double-quoted phrase" is one term.

Every row and table leads with the user's identity of a paper (their id or submission
number, and the title); `id` stays the content hash, the stable key.
"""

from __future__ import annotations

import difflib
import io
import json
import re
import string
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pipeline.csvfile import SafeCsvWriter
from pipeline.errors import InputError
from pipeline.rundir import Paper
from pipeline.taxonomy import Taxonomy
from pipeline.text import normalize_ws, terminal_safe

SORT_KEYS = ("claims", "title", "id", "tag")
_TERM = re.compile(r'"([^"]*)"|(\S+)')
# Forum links: {id} is the paper's OpenReview forum id (only papers that have one get a link).
DEFAULT_FORUM_URL = "https://openreview.net/forum?id={id}"
_DIGITS = re.compile(r"(\d+)")


FORUM_FIELDS = ("id", "number")  # what a forum URL template may hold, as {id} and {number}


def check_forum_url(template: str) -> str:
    """The forum URL template when it is usable ('' turns links off); else an InputError.

    Only plain `{id}` and `{number}` are fields: an attribute, an index, a conversion or a
    format spec (`{id.__class__}`, `{id:>99999999}`) is refused here, once, so formatting a
    link can never fail or blow up later.
    """
    if template == "":
        return template
    usage = "e.g. " + DEFAULT_FORUM_URL + " (write {{ and }} for literal braces)"
    try:
        fields = [
            (name, spec, conversion)
            for _, name, spec, conversion in string.Formatter().parse(template)
            if name is not None
        ]
    except ValueError as exc:  # a lone { or }
        raise InputError(f"forum URL template {template!r}: {exc}; {usage}") from exc
    for name, spec, conversion in fields:
        if name not in FORUM_FIELDS or conversion or spec:
            field = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise InputError(
                f"forum URL template {template!r}: {{{field}}} is not allowed, only {{id}} "
                f"and {{number}} are; {usage}"
            )
    if not re.match(r"https?://", template) or "id" not in {name for name, _, _ in fields}:
        raise InputError(
            f"forum URL template {template!r} must start with http:// or https:// and "
            f"contain {{id}}, {usage}"
        )
    return template


def forum_url(paper: Paper, template: str = DEFAULT_FORUM_URL) -> str | None:
    """The paper's forum link from the template, or None (no forum id, or links turned off)."""
    if not template or not paper.forum:
        return None
    return template.format(
        id=quote(paper.forum, safe=""), number=quote(paper.number or "", safe="")
    )


def lead_text(paper: Paper) -> str:
    """What names a paper in a view: its title, else its TL;DR (never a background sentence)."""
    return paper.title or paper.tldr or f"Untitled paper {paper.ref}"


def paper_keys(paper: Paper) -> list[str]:
    """Every id a chair may name the paper by (lowercased): hash, their ids, number, #number."""
    keys = [paper.id, *paper.paper_ids]
    if paper.number:
        keys += [paper.number, f"#{paper.number}"]
    return list(dict.fromkeys(k.strip().lower() for k in keys if k.strip()))


def tag_label(taxonomy: Taxonomy | None, tag_id: str) -> str:
    """The taxonomy label of a tag id, or the id itself when the tag is unknown."""
    if taxonomy is not None and tag_id in taxonomy.tags:
        return taxonomy.tags[tag_id].label
    return tag_id


def resolve_tags(names: Iterable[str], taxonomy: Taxonomy | None) -> tuple[str, ...]:
    """Tag ids for user-given names (id, label or synonym); unknown names are an InputError."""
    out: list[str] = []
    for name in names:
        if taxonomy is None:
            tag_id: str | None = name.strip().lower()
        else:
            tag_id = taxonomy.resolve(name)
            if tag_id is None:
                close = difflib.get_close_matches(name.lower(), taxonomy.ids, n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise InputError(f"unknown tag {name!r}{hint}")
        if tag_id is not None and tag_id not in out:
            out.append(tag_id)
    return tuple(out)


def search_terms(text: str | None) -> tuple[str, ...]:
    """The terms of a text query: words, and "quoted phrases" as one term each (lowercased)."""
    terms = []
    for m in _TERM.finditer(text or ""):
        term = normalize_ws(m.group(1) if m.group(1) is not None else m.group(2)).lower()
        if term:
            terms.append(term)
    return tuple(terms)


@dataclass(frozen=True)
class Query:
    """What a chair asks for: tags (all or any), results, failures, metric, dataset, text."""

    tags: tuple[str, ...] = ()
    match_any: bool = False
    has_results: bool = False
    failed: bool = False
    metric: str | None = None
    dataset: str | None = None
    grep: str | None = None
    paper: str | None = None  # one paper by any of its ids (paper_keys), as a permalink does


def claim_values(paper: Paper, key: str) -> list[str]:
    """Each claim's `key` (metric, dataset), lowercased and whitespace-normalized."""
    return [normalize_ws(str(c.get(key) or "")).lower() for c in paper.claims]


def contains_any(values: Iterable[str], needle: str) -> bool:
    """True when some value contains the needle (normalized and lowercased like the values)."""
    needle = normalize_ws(needle).lower()
    return any(needle in v for v in values)


def _claims_field_contains(paper: Paper, key: str, needle: str) -> bool:
    return contains_any(claim_values(paper, key), needle)


def search_parts(paper: Paper) -> tuple[list[str], list[str]]:
    """The texts a free-text search looks at before the abstract and after it, in order."""
    head = [paper.id, *paper.paper_ids, paper.title or "", paper.tldr or ""]
    tail = [*paper.keywords, *paper.author_keywords, *paper.authors, *paper.tags]
    tail.extend(str(c.get("statement") or "") for c in paper.claims)
    return head, tail


def search_text(paper: Paper) -> str:
    """Everything a free-text search looks at, lowercased and whitespace-normalized."""
    head, tail = search_parts(paper)
    return normalize_ws(" ".join([*head, paper.abstract, *tail])).lower()


def matches(paper: Paper, query: Query) -> bool:
    """True when the paper satisfies every part of the query."""
    if query.paper is not None and query.paper.strip().lower() not in paper_keys(paper):
        return False
    if query.tags:
        have = set(paper.tags)
        hits = [t in have for t in query.tags]
        if not (any(hits) if query.match_any else all(hits)):
            return False
    if query.has_results and not paper.has_results:
        return False
    if query.failed and not paper.failed:
        return False
    if query.metric and not _claims_field_contains(paper, "metric", query.metric):
        return False
    if query.dataset and not _claims_field_contains(paper, "dataset", query.dataset):
        return False
    terms = search_terms(query.grep)
    if terms:
        text = search_text(paper)
        return all(term in text for term in terms)
    return True


def sort_key(key: str, taxonomy: Taxonomy | None = None) -> Callable[[Paper], tuple]:
    """The key function of one of the SORT_KEYS orders (ascending)."""
    if key == "id":
        return _id_key
    if key == "claims":
        return lambda p: (
            -p.n_claims,
            -p.n_quantitative,
            p.title is None,
            (p.title or "").lower(),
            p.id,
        )
    if key == "tag":
        return lambda p: (
            not p.tags,
            tag_label(taxonomy, p.tags[0]).lower() if p.tags else "",
            p.id,
        )
    if key == "title":
        return lambda p: (p.title is None, (p.title or "").lower(), p.id)
    raise InputError(f"unknown sort key {key!r}; choose from {', '.join(SORT_KEYS)}")


def natural_key(text: str) -> tuple:
    """A text's key in natural order: digit runs compare as numbers (P2 before P10)."""
    return tuple(int(x) if x.isdigit() else x.lower() for x in _DIGITS.split(text))


def _id_key(p: Paper) -> tuple:
    """By the user's id (naturally: P2 before P10), else number, else hash; then the hash."""
    if p.paper_id:
        return (0, natural_key(p.paper_id), p.id)
    if p.number:
        return (1, natural_key(p.number), p.id)
    return (2, (), p.id)


def sort_papers(
    papers: list[Paper], key: str, taxonomy: Taxonomy | None = None, *, reverse: bool = False
) -> list[Paper]:
    """Papers in one of the SORT_KEYS orders (claims: most first, then title); `reverse` flips it.

    Papers without a title (or tag) come last in the ascending order, first in the reversed.
    """
    ordered = sorted(papers, key=sort_key(key, taxonomy))
    return ordered[::-1] if reverse else ordered


def select(
    papers: Iterable[Paper],
    query: Query,
    *,
    sort: str = "claims",
    reverse: bool = False,
    taxonomy: Taxonomy | None = None,
    limit: int | None = None,
) -> list[Paper]:
    """The papers matching `query`, sorted, at most `limit` of them."""
    if sort not in SORT_KEYS:
        raise InputError(f"unknown sort key {sort!r}; choose from {', '.join(SORT_KEYS)}")
    chosen = sort_papers([p for p in papers if matches(p, query)], sort, taxonomy, reverse=reverse)
    return chosen if limit is None else chosen[:limit]


def _unique(values: Iterable[Any]) -> list[str]:
    out: list[str] = []
    for v in values:
        if v and str(v) not in out:
            out.append(str(v))
    return out


def claim_metrics(paper: Paper) -> list[str]:
    """The distinct metric names of a paper's claims, in order."""
    return _unique(c.get("metric") for c in paper.claims)


def claim_datasets(paper: Paper) -> list[str]:
    """The distinct datasets of a paper's claims, in order."""
    return _unique(c.get("dataset") for c in paper.claims)


def paper_row(
    paper: Paper, taxonomy: Taxonomy | None = None, forum: str = DEFAULT_FORUM_URL
) -> dict[str, Any]:
    """One flat result row (for jsonl/csv) describing a paper: the user's id and title first."""
    return {
        "paper_id": paper.paper_id,
        "number": paper.number,
        "title": paper.title,
        "id": paper.id,
        "url": forum_url(paper, forum),
        "tldr": paper.tldr,
        "tags": list(paper.tags),
        "tag_labels": [tag_label(taxonomy, t) for t in paper.tags],
        "keywords": list(paper.keywords),
        "n_claims": paper.n_claims,
        "n_quantitative": paper.n_quantitative,
        "metrics": claim_metrics(paper),
        "datasets": claim_datasets(paper),
        "failed_stages": sorted(paper.failed),
        "authors": list(paper.authors),
        "venue": paper.venue,
        "sources": [f"{f}:{p}" if p is not None else f for f, p in paper.sources],
    }


ROW_FIELDS = tuple(paper_row(Paper(id="", title=None, abstract="")))


def jsonl_line(row: dict[str, Any]) -> str:
    """One row as a compact JSON line (the format of `--format jsonl`)."""
    return json.dumps(row, ensure_ascii=False)


_LINE_BUF = io.StringIO()
_LINE_WRITER = SafeCsvWriter(_LINE_BUF)  # one writer for every line: a writer per line costs


def csv_line(values: Iterable[Any]) -> str:
    """One CSV row (CRLF-terminated, spreadsheet-safe cells), as `--format csv` writes it."""
    _LINE_BUF.seek(0)
    _LINE_BUF.truncate()
    _LINE_WRITER.writerow(values)
    return _LINE_BUF.getvalue()


CSV_HEADER = csv_line(ROW_FIELDS)


def row_csv(row: dict[str, Any]) -> str:
    """A paper_row as one CSV line in ROW_FIELDS order."""
    return csv_line(row[name] for name in ROW_FIELDS)


def format_jsonl(
    papers: Iterable[Paper], taxonomy: Taxonomy | None = None, forum: str = DEFAULT_FORUM_URL
) -> Iterator[str]:
    """One compact JSON line per paper."""
    for p in papers:
        yield jsonl_line(paper_row(p, taxonomy, forum))


def format_csv(
    papers: Iterable[Paper], taxonomy: Taxonomy | None = None, forum: str = DEFAULT_FORUM_URL
) -> Iterator[str]:
    """CSV text (header first, one row per paper), safe to open in a spreadsheet."""
    yield CSV_HEADER
    for p in papers:
        yield row_csv(paper_row(p, taxonomy, forum))


def terminal_text(text: str) -> str:
    """Text safe to print: escape sequences and control characters dropped, spaces collapsed."""
    return normalize_ws(terminal_safe(text))


def _clip(text: str, width: int) -> str:
    text = terminal_text(text)
    return text if len(text) <= width else text[: max(width - 1, 0)] + "\u2026"


def format_table(papers: list[Paper], taxonomy: Taxonomy | None = None, width: int = 120) -> str:
    """A plain-text table: the user's id, claims (quantitative), tags, title or TL;DR.

    The first column is the user's id (or #number), else the content hash.
    """
    tag_w = 34
    id_w = min(max([len(terminal_text(p.ref)) for p in papers] + [2]), 24)
    head = f"{'id':{id_w}}  {'claims':>6}  {'tags':{tag_w}}  title / TL;DR"
    lines = [head, "-" * min(width, max(len(head), 80))]
    rest = max(width - (id_w + 2 + 6 + 2 + tag_w + 2), 20)
    for p in papers:
        tags = ", ".join(tag_label(taxonomy, t) for t in p.tags) or "-"
        if "tags" in p.failed:
            tags = "(tags failed)"
        claims = f"{p.n_claims}({p.n_quantitative})"
        if "claims" not in p.status:
            claims = "-"
        elif "claims" in p.failed:
            claims = "failed"
        text = p.title or (f"TL;DR: {p.tldr}" if p.tldr else "(no title, no TL;DR)")
        if p.failed:
            text = f"[failed: {', '.join(sorted(p.failed))}] {text}"
        ref = _clip(p.ref, id_w)
        lines.append(
            f"{ref:{id_w}}  {claims:>6}  {_clip(tags, tag_w):{tag_w}}  {_clip(text, rest)}"
        )
    return "\n".join(lines)
