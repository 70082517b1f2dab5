"""Reviewer triage over papers: the query language, filters, sort orders and row formats.

The report page runs the same queries in the browser: it gets each paper's `search_text`
and its rank under every sort order from here (pipeline/report/protocol.py), so the page and
`digest triage` cannot disagree about what matches or in which order.

Text search: the query is split into terms; a paper matches when every term occurs in its
search text (case-insensitive, whitespace-normalized). A "double-quoted phrase" is one term.
"""

from __future__ import annotations

import difflib
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pipeline.csvfile import SafeCsvWriter
from pipeline.errors import InputError
from pipeline.rundir import Paper
from pipeline.taxonomy import Taxonomy
from pipeline.text import normalize_ws, terminal_safe

SORT_KEYS = ("claims", "title", "id", "tag")
_TERM = re.compile(r'"([^"]*)"|(\S+)')


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


def _claims_field_contains(paper: Paper, key: str, needle: str) -> bool:
    needle = normalize_ws(needle).lower()
    return any(needle in normalize_ws(str(c.get(key) or "")).lower() for c in paper.claims)


def search_text(paper: Paper) -> str:
    """Everything a free-text search looks at, lowercased and whitespace-normalized."""
    parts = [paper.id, paper.title or "", paper.tldr or "", paper.abstract, *paper.keywords]
    parts.extend(paper.tags)
    parts.extend(str(c.get("statement") or "") for c in paper.claims)
    return normalize_ws(" ".join(parts)).lower()


def matches(paper: Paper, query: Query) -> bool:
    """True when the paper satisfies every part of the query."""
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
        return lambda p: (p.id,)
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


def paper_row(paper: Paper, taxonomy: Taxonomy | None = None) -> dict[str, Any]:
    """One flat result row (for jsonl/csv/table) describing a paper."""
    return {
        "id": paper.id,
        "title": paper.title,
        "tldr": paper.tldr,
        "tags": list(paper.tags),
        "tag_labels": [tag_label(taxonomy, t) for t in paper.tags],
        "keywords": list(paper.keywords),
        "n_claims": paper.n_claims,
        "n_quantitative": paper.n_quantitative,
        "metrics": claim_metrics(paper),
        "datasets": claim_datasets(paper),
        "failed_stages": sorted(paper.failed),
        "sources": [f"{f}:{p}" if p is not None else f for f, p in paper.sources],
    }


ROW_FIELDS = tuple(paper_row(Paper(id="", title=None, abstract="")))


def format_jsonl(papers: Iterable[Paper], taxonomy: Taxonomy | None = None) -> Iterator[str]:
    """One compact JSON line per paper."""
    for p in papers:
        yield json.dumps(paper_row(p, taxonomy), ensure_ascii=False)


def format_csv(papers: Iterable[Paper], taxonomy: Taxonomy | None = None) -> Iterator[str]:
    """CSV text (header first, one row per paper), safe to open in a spreadsheet."""
    buf = io.StringIO()
    writer = SafeCsvWriter(buf)
    writer.writerow(ROW_FIELDS)
    for p in papers:
        row = paper_row(p, taxonomy)
        writer.writerow(row[name] for name in ROW_FIELDS)
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    if buf.getvalue():  # no rows: still a header
        yield buf.getvalue()


def _clip(text: str, width: int) -> str:
    # A table cell goes to a terminal: no escape sequence from a title may reach it.
    text = normalize_ws(terminal_safe(text))
    return text if len(text) <= width else text[: max(width - 1, 0)] + "\u2026"


def format_table(papers: list[Paper], taxonomy: Taxonomy | None = None, width: int = 120) -> str:
    """A plain-text table: id, claims (quantitative), tags, failed stages, title or TL;DR."""
    tag_w = 34
    head = f"{'id':16}  {'claims':>6}  {'tags':{tag_w}}  title / TL;DR"
    lines = [head, "-" * min(width, max(len(head), 80))]
    rest = max(width - (16 + 2 + 6 + 2 + tag_w + 2), 20)
    for p in papers:
        tags = ", ".join(tag_label(taxonomy, t) for t in p.tags) or "-"
        if "tags" in p.failed:
            tags = "(tags failed)"
        claims = f"{p.n_claims}({p.n_quantitative})"
        if "claims" not in p.status:
            claims = "-"
        elif "claims" in p.failed:
            claims = "failed"
        text = p.title or p.tldr or p.abstract
        if p.failed:
            text = f"[failed: {', '.join(sorted(p.failed))}] {text}"
        row_id = _clip(p.id, max(16, len(p.id)))
        lines.append(f"{row_id:16}  {claims:>6}  {_clip(tags, tag_w):{tag_w}}  {_clip(text, rest)}")
    return "\n".join(lines)
