"""What an assignment writes: assignments.csv, conflicts.csv, weak_pairs.csv, the OpenReview
edges and the terminal summary.

Every row leads with the user's identity of the paper (their id, else the content hash;
number; title), then the hash, the stable key. Rows are in paper order (`paper_order`:
by submission number, else the user's id, else the hash), then by reviewer.

A pair is *weak* (`is_weak`) when nothing but faint text similarity puts the reviewer on
the paper: no shared taxonomy tag, no matching keyword, and a blended text similarity
(`text_similarity_blended`) below `weak_below` (default 0.1, i.e. less than 1.0 of
affinity from the text). The summary counts weak pairs and weak_pairs.csv lists them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.atomicfile import atomic_open, make_parent
from pipeline.csvfile import SafeCsvWriter
from pipeline.jsonl import JsonlWriter
from pipeline.rundir import Paper
from pipeline.taxonomy import Taxonomy
from pipeline.triage import lead_text, tag_label

if TYPE_CHECKING:
    from pipeline.assign import AssignmentResult
    from pipeline.assign.affinity import Match

ASSIGNMENTS_FILE = "assignments.csv"
CONFLICTS_FILE = "conflicts.csv"
WEAK_PAIRS_FILE = "weak_pairs.csv"
OPENREVIEW_FILE = "assignments.openreview.jsonl"
DEFAULT_WEAK_BELOW = 0.1  # blended text similarity under which a pair with nothing else is weak
DEFAULT_OPENREVIEW_LABEL = "digest-assign"
PAPER_FIELDS = ("paper_id", "paper_number", "paper_title", "paper_hash")
CSV_FIELDS = (
    *PAPER_FIELDS,
    "reviewer_id",
    "reviewer_name",
    "affinity_total",
    "reason",
    "matching_tags",
    "matching_keywords",
    "similar_past_paper",
    "best_past_paper_similarity",
    "text_similarity_blended",
    "embedding_similarity",
    "weak",
)
CONFLICT_FIELDS = (
    *PAPER_FIELDS,
    "reviewer_id",
    "reviewer_name",
    "kind",
    "reason",
    "shared_paper",
)
WEAK_FIELDS = (
    *PAPER_FIELDS,
    "reviewer_id",
    "reviewer_name",
    "affinity_total",
    "similar_past_paper",
    "best_past_paper_similarity",
    "text_similarity_blended",
)
WEAK_LISTED = 100  # papers with weak pairs printed in the summary (all are in weak_pairs.csv)
_DIGITS = re.compile(r"#?(\d+)")


def paper_identity(paper: Paper) -> list[str]:
    """paper_id (the user's id, else the hash), number, title (else the TL;DR), hash."""
    return [paper.paper_id or paper.id, paper.number or "", lead_text(paper), paper.id]


def paper_order(paper: Paper) -> tuple[int, int, str, str]:
    """Sort key: submission number (numerically), else the user's id, else the hash."""
    number = _DIGITS.fullmatch((paper.number or "").strip())
    if number:
        return (0, int(number.group(1)), "", paper.id)
    if paper.paper_id:
        return (1, 0, paper.paper_id.casefold(), paper.id)
    return (2, 0, "", paper.id)


def is_weak(match: Match, weak_below: float = DEFAULT_WEAK_BELOW) -> bool:
    """No shared tag, no matching keyword and blended text similarity below `weak_below`."""
    return not match.tags and not match.keywords and match.text < weak_below


def ordered_pairs(result: AssignmentResult) -> list[tuple[str, str, Match]]:
    """The assigned pairs by paper (paper_order), best affinity first, then reviewer id."""
    return sorted(
        result.pairs,
        key=lambda x: (paper_order(result.papers[x[0]]), -x[2].affinity, x[1]),
    )


def weak_pairs(
    result: AssignmentResult, weak_below: float = DEFAULT_WEAK_BELOW
) -> dict[str, list[str]]:
    """Paper id -> its weak reviewers (is_weak), papers in paper order."""
    out: dict[str, list[str]] = {}
    for p, r, m in ordered_pairs(result):
        if is_weak(m, weak_below):
            out.setdefault(p, []).append(r)
    return out


def _number(value: float) -> str:
    return f"{value:g}"


def write_assignments_csv(
    result: AssignmentResult,
    path: Path,
    taxonomy: Taxonomy | None,
    *,
    weak_below: float = DEFAULT_WEAK_BELOW,
) -> Path:
    """One row per (paper, reviewer) pair, each score in its own labelled column."""
    label = lambda t: tag_label(taxonomy, t)  # noqa: E731
    with atomic_open(make_parent(path)) as fh:
        writer = SafeCsvWriter(fh)
        writer.writerow(CSV_FIELDS)
        for p, r, m in ordered_pairs(result):
            reviewer = result.reviewers[r]
            writer.writerow(
                [
                    *paper_identity(result.papers[p]),
                    r,
                    reviewer.name or "",
                    _number(m.affinity),
                    m.reason(label),
                    [label(t) for t in m.tags],
                    list(m.keywords),
                    m.similar or "",
                    _number(m.similar_cosine),
                    _number(m.text),
                    "" if m.embedding is None else _number(m.embedding),
                    "yes" if is_weak(m, weak_below) else "no",
                ]
            )
    return path


def write_weak_pairs_csv(
    result: AssignmentResult, path: Path, *, weak_below: float = DEFAULT_WEAK_BELOW
) -> Path:
    """One row per weak pair (is_weak), by paper; returns the path."""
    with atomic_open(make_parent(path)) as fh:
        writer = SafeCsvWriter(fh)
        writer.writerow(WEAK_FIELDS)
        for p, r, m in ordered_pairs(result):
            if not is_weak(m, weak_below):
                continue
            writer.writerow(
                [
                    *paper_identity(result.papers[p]),
                    r,
                    result.reviewers[r].name or "",
                    _number(m.affinity),
                    m.similar or "",
                    _number(m.similar_cosine),
                    _number(m.text),
                ]
            )
    return path


def write_conflicts_csv(result: AssignmentResult, path: Path) -> Path:
    """One row per conflict (declared or derived) with its reason, by paper; returns the path."""
    with atomic_open(make_parent(path)) as fh:
        writer = SafeCsvWriter(fh)
        writer.writerow(CONFLICT_FIELDS)
        for c in sorted(
            result.conflicts, key=lambda c: (paper_order(result.papers[c.paper]), c.reviewer)
        ):
            reviewer = result.reviewers[c.reviewer]
            writer.writerow(
                [
                    *paper_identity(result.papers[c.paper]),
                    c.reviewer,
                    reviewer.name or "",
                    c.kind,
                    c.reason,
                    c.shared_paper,
                ]
            )
    return path


def openreview_edges(
    result: AssignmentResult,
    *,
    label: str = DEFAULT_OPENREVIEW_LABEL,
    invitation: str | None = None,
) -> Iterable[dict[str, object]]:
    """Each pair as an OpenReview edge: head = the paper's note id, tail = the reviewer's
    profile id (`openreview_id`, else their id), weight = affinity_total, label."""
    for p, r, m in ordered_pairs(result):
        paper, reviewer = result.papers[p], result.reviewers[r]
        edge: dict[str, object] = {} if invitation is None else {"invitation": invitation}
        edge |= {
            "head": paper.forum or paper.paper_id or paper.id,
            "tail": reviewer.openreview_id or reviewer.id,
            "weight": m.affinity,
            "label": label,
        }
        yield edge


def write_openreview_edges(
    result: AssignmentResult,
    path: Path,
    *,
    label: str = DEFAULT_OPENREVIEW_LABEL,
    invitation: str | None = None,
) -> Path:
    """The assignment as OpenReview edges, one JSON object a line; returns the path."""
    with atomic_open(make_parent(path), binary=True) as fh:
        writer = JsonlWriter(fh)
        for edge in openreview_edges(result, label=label, invitation=invitation):
            writer.write(edge)
    return path


def summary(result: AssignmentResult, *, weak_below: float = DEFAULT_WEAK_BELOW) -> str:
    """Lines for the terminal: coverage, affinity, weak pairs, conflicts, loads."""
    n_pairs = len(result.pairs)
    covered = result.fully_covered()
    loads = result.loads()
    mean = result.total_affinity / n_pairs if n_pairs else 0.0
    weak = weak_pairs(result, weak_below)
    kinds: dict[str, int] = {}
    for c in result.conflicts:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    lines = [
        f"covered {covered} of {len(result.papers)} papers with {result.per_paper} reviewers each "
        f"({n_pairs} pairs)",
        f"total affinity {result.total_affinity:.6g} (mean {mean:.2f} per pair); "
        f"{sum(len(v) for v in weak.values())} weak pair(s) on {len(weak)} paper(s) "
        f"(no shared tag, no matching keyword, text similarity below {weak_below:g})",
        f"conflicts: {len(result.conflicts)}"
        + (" (" + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + ")" if kinds else ""),
        f"reviewer load: min {min(loads.values())}, max {max(loads.values())}, "
        f"{sum(1 for v in loads.values() if v == 0)} reviewer(s) unused",
    ]
    if result.pruning is not None and result.pruning.top_k is not None:
        lines.append(
            f"candidates: top {result.pruning.top_k} reviewers per paper "
            f"({result.pruning.arcs} pairs considered)"
        )
    if weak:
        lines.append(f"weak pairs on {len(weak)} paper(s) (all in {WEAK_PAIRS_FILE}):")
        for p in list(weak)[:WEAK_LISTED]:
            paper = result.papers[p]
            lines.append(f"  {paper.ref}  {lead_text(paper)[:70]}: {', '.join(weak[p])}")
        if len(weak) > WEAK_LISTED:
            lines.append(f"  ... {len(weak) - WEAK_LISTED} more (in {WEAK_PAIRS_FILE})")
    return "\n".join(lines)
