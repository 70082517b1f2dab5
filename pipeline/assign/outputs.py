"""What an assignment writes: assignments.csv, conflicts.csv and the terminal summary.

Every row leads with the user's identity of the paper (their id, else the content hash;
number; title), then the hash, the stable key.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.atomicfile import atomic_open, make_parent
from pipeline.csvfile import SafeCsvWriter
from pipeline.rundir import Paper
from pipeline.taxonomy import Taxonomy
from pipeline.triage import lead_text, tag_label

if TYPE_CHECKING:
    from pipeline.assign import AssignmentResult

ASSIGNMENTS_FILE = "assignments.csv"
CONFLICTS_FILE = "conflicts.csv"
CSV_FIELDS = (
    "paper_id",
    "paper_number",
    "paper_title",
    "paper_hash",
    "reviewer_id",
    "reviewer_name",
    "affinity",
    "reason",
    "matching_tags",
    "similar_past_paper",
    "text_similarity",
    "matching_keywords",
)
CONFLICT_FIELDS = (
    "paper_id",
    "paper_number",
    "paper_title",
    "paper_hash",
    "reviewer_id",
    "reviewer_name",
    "kind",
    "reason",
)
ZERO_LISTED = 100  # zero-affinity papers printed in the summary (all are in assignments.csv)


def paper_identity(paper: Paper) -> list[str]:
    """paper_id (the user's id, else the hash), number, title (else the TL;DR), hash."""
    return [paper.paper_id or paper.id, paper.number or "", lead_text(paper), paper.id]


def write_assignments_csv(result: AssignmentResult, path: Path, taxonomy: Taxonomy | None) -> Path:
    """One row per (paper, reviewer) pair, with the affinity and its reason; returns the path."""
    label = lambda t: tag_label(taxonomy, t)  # noqa: E731
    with atomic_open(make_parent(path)) as fh:
        writer = SafeCsvWriter(fh)
        writer.writerow(CSV_FIELDS)
        for p, r, m in result.pairs:
            reviewer = result.reviewers[r]
            writer.writerow(
                [
                    *paper_identity(result.papers[p]),
                    r,
                    reviewer.name or "",
                    f"{m.affinity:g}",
                    m.reason(label),
                    [label(t) for t in m.tags],
                    m.similar or "",
                    f"{m.text:g}",
                    list(m.keywords),
                ]
            )
    return path


def write_conflicts_csv(result: AssignmentResult, path: Path) -> Path:
    """One row per conflict (declared or derived) with its reason; returns the path."""
    with atomic_open(make_parent(path)) as fh:
        writer = SafeCsvWriter(fh)
        writer.writerow(CONFLICT_FIELDS)
        for c in sorted(result.conflicts, key=lambda c: (c.paper, c.reviewer)):
            reviewer = result.reviewers[c.reviewer]
            writer.writerow(
                [
                    *paper_identity(result.papers[c.paper]),
                    c.reviewer,
                    reviewer.name or "",
                    c.kind,
                    c.reason,
                ]
            )
    return path


def summary(result: AssignmentResult) -> str:
    """Lines for the terminal: coverage, affinity, conflicts, zero-affinity papers, loads."""
    n_pairs = len(result.pairs)
    covered = len({p for p, _, _ in result.pairs})
    loads = result.loads()
    mean = result.total_affinity / n_pairs if n_pairs else 0.0
    zero = result.zero_affinity()
    kinds: dict[str, int] = {}
    for c in result.conflicts:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    lines = [
        f"covered {covered} of {len(result.papers)} papers with {result.per_paper} reviewers each "
        f"({n_pairs} pairs)",
        f"total affinity {result.total_affinity:.6g} (mean {mean:.2f} per pair); "
        f"{sum(len(v) for v in zero.values())} pair(s) with no matching expertise",
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
    if zero:
        lines.append(f"zero-affinity assignments on {len(zero)} paper(s):")
        for p in list(zero)[:ZERO_LISTED]:
            paper = result.papers[p]
            lines.append(f"  {paper.ref}  {lead_text(paper)[:70]}: {', '.join(zero[p])}")
        if len(zero) > ZERO_LISTED:
            lines.append(f"  ... {len(zero) - ZERO_LISTED} more (affinity 0 in assignments.csv)")
    return "\n".join(lines)
