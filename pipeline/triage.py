"""Reviewer triage over a run folder: stream summaries.jsonl into papers, filter, sort, format.

A `Paper` is a flat, read-only view of one summaries.jsonl record. Stages that failed keep
their error (`Paper.failed`), stages the run skipped are simply absent from `Paper.status`.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.outputs import csv_safe
from pipeline.taxonomy import Taxonomy
from pipeline.text import normalize_ws

log = logging.getLogger(__name__)

STAGES = ("tldr", "tags", "claims")
SORT_KEYS = ("id", "claims", "tag", "title")
SUMMARIES_FILE = "summaries.jsonl"


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


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def paper_from_record(rec: dict[str, Any]) -> Paper:
    """Build a `Paper` from one summaries.jsonl record (lenient about missing stages)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
        raise InputError("summaries record without an 'id'")
    stages = rec.get("stages") or {}
    status: dict[str, str] = {}
    failed: dict[str, dict[str, str]] = {}
    outputs: dict[str, dict[str, Any]] = {}
    for name, stage in stages.items():
        if not isinstance(stage, dict):
            continue
        st = str(stage.get("status") or "failed")
        status[name] = st
        if st == "ok" and isinstance(stage.get("output"), dict):
            outputs[name] = stage["output"]
        elif st != "ok":
            err = stage.get("error") or {}
            failed[name] = {
                "kind": str(err.get("kind") or "error"),
                "message": str(err.get("message") or ""),
            }
    sources = tuple(
        (str(s.get("file", "")), s.get("position"))
        for s in rec.get("sources") or ()
        if isinstance(s, dict)
    )
    tags_out = outputs.get("tags", {})
    claims = tuple(c for c in outputs.get("claims", {}).get("claims") or () if isinstance(c, dict))
    return Paper(
        id=rec["id"],
        title=_str_or_none(rec.get("title")),
        abstract=str(rec.get("abstract") or ""),
        sources=sources,
        tldr=_str_or_none(outputs.get("tldr", {}).get("tldr")),
        tags=tuple(str(t) for t in tags_out.get("tags") or ()),
        keywords=tuple(str(k) for k in tags_out.get("keywords") or ()),
        claims=claims,
        status=status,
        failed=failed,
    )


def iter_records(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Stream the raw records of RUN_DIR/summaries.jsonl; a torn last line is skipped."""
    path = Path(run_dir) / SUMMARIES_FILE
    if not path.is_file():
        raise InputError(
            f"{run_dir} has no {SUMMARIES_FILE}; is it a folder written by `digest run`?"
        )
    with path.open(encoding="utf-8") as fh:
        pending: tuple[int, str] | None = None
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if pending is not None:
                raise InputError(f"{path}:{pending[0]}: not valid JSON: {pending[1]}")
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                pending = (lineno, str(exc))  # fatal unless it is the last line
        if pending is not None:
            log.warning("%s:%d: skipping a torn last line", path, pending[0])


def iter_papers(run_dir: Path) -> Iterator[Paper]:
    """Stream the papers of a run folder."""
    for rec in iter_records(run_dir):
        yield paper_from_record(rec)


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
            tag_id = name.strip().lower()
        else:
            tag_id = taxonomy.resolve(name)
            if tag_id is None:
                close = difflib.get_close_matches(name.lower(), taxonomy.ids, n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise InputError(f"unknown tag {name!r}{hint}")
        if tag_id not in out:
            out.append(tag_id)
    return tuple(out)


@dataclass(frozen=True)
class Query:
    """What a chair asks for: tags (all or any), quantitative results, metric, dataset, text."""

    tags: tuple[str, ...] = ()
    match_any: bool = False
    has_results: bool = False
    metric: str | None = None
    dataset: str | None = None
    grep: str | None = None


def _claims_field_contains(paper: Paper, key: str, needle: str) -> bool:
    needle = needle.lower()
    return any(needle in str(c.get(key) or "").lower() for c in paper.claims)


def search_text(paper: Paper) -> str:
    """Everything a free-text search looks at, lowercased."""
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
    if query.metric and not _claims_field_contains(paper, "metric", query.metric):
        return False
    if query.dataset and not _claims_field_contains(paper, "dataset", query.dataset):
        return False
    return not (query.grep and normalize_ws(query.grep).lower() not in search_text(paper))


def sort_papers(papers: list[Paper], key: str, taxonomy: Taxonomy | None = None) -> list[Paper]:
    """Papers sorted by id, claims (most first), tag (primary tag label) or title."""
    if key == "id":
        return sorted(papers, key=lambda p: p.id)
    if key == "claims":
        return sorted(papers, key=lambda p: (-p.n_claims, -p.n_quantitative, p.id))
    if key == "tag":
        return sorted(
            papers,
            key=lambda p: (
                not p.tags,
                tag_label(taxonomy, p.tags[0]).lower() if p.tags else "",
                p.id,
            ),
        )
    if key == "title":
        return sorted(papers, key=lambda p: (p.title is None, (p.title or "").lower(), p.id))
    raise InputError(f"unknown sort key {key!r}; choose from {', '.join(SORT_KEYS)}")


def select(
    papers: Iterable[Paper],
    query: Query,
    *,
    sort: str = "id",
    taxonomy: Taxonomy | None = None,
    limit: int | None = None,
) -> list[Paper]:
    """The papers matching `query`, sorted, at most `limit` of them."""
    if sort not in SORT_KEYS:
        raise InputError(f"unknown sort key {sort!r}; choose from {', '.join(SORT_KEYS)}")
    chosen = sort_papers([p for p in papers if matches(p, query)], sort, taxonomy)
    return chosen if limit is None else chosen[:limit]


def _unique(values: Iterable[Any]) -> list[str]:
    out: list[str] = []
    for v in values:
        if v and str(v) not in out:
            out.append(str(v))
    return out


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
        "metrics": _unique(c.get("metric") for c in paper.claims),
        "datasets": _unique(c.get("dataset") for c in paper.claims),
        "failed_stages": sorted(paper.failed),
        "sources": [f"{f}:{p}" if p is not None else f for f, p in paper.sources],
    }


def format_jsonl(papers: Iterable[Paper], taxonomy: Taxonomy | None = None) -> Iterator[str]:
    """One compact JSON line per paper."""
    for p in papers:
        yield json.dumps(paper_row(p, taxonomy), ensure_ascii=False)


def format_csv(papers: Iterable[Paper], taxonomy: Taxonomy | None = None) -> Iterator[str]:
    """CSV text (header first, one line per paper), safe to open in a spreadsheet."""
    buf = io.StringIO()
    writer: csv.DictWriter[str] | None = None
    for p in papers:
        row = paper_row(p, taxonomy)
        if writer is None:
            writer = csv.DictWriter(buf, fieldnames=list(row), lineterminator="\n")
            writer.writeheader()
        writer.writerow({k: csv_safe(v) for k, v in row.items()})
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    if writer is None:  # no rows: still a header
        yield ",".join(paper_row(Paper(id="", title=None, abstract=""))) + "\n"


def _clip(text: str, width: int) -> str:
    text = normalize_ws(text)
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
        lines.append(f"{p.id:16}  {claims:>6}  {_clip(tags, tag_w):{tag_w}}  {_clip(text, rest)}")
    return "\n".join(lines)
