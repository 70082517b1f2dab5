"""What the chair's features add to the outputs: short.csv, alternates.csv, summary lines.

- short.csv: every paper that got fewer reviewers than it wanted, or missed a `--require`
  rule, with its demand, what it got and why;
- alternates.csv (with `--alternates K`): each paper's next K eligible reviewers;
- the summary's lines on fairness (weakest paper, 1st and 10th percentile, total, and
  under `--objective fair` the LP bound), the score mix, Very Low bids assigned, kept and
  dropped pairs, and minimum loads not met.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.assign.outputs import paper_identity
from pipeline.atomicfile import atomic_open, make_parent
from pipeline.csvfile import SafeCsvWriter

if TYPE_CHECKING:
    from pipeline.assign import AssignmentResult

SHORT_FILE = "short.csv"
ALTERNATES_FILE = "alternates.csv"
SHORT_FIELDS = (
    "paper_id",
    "paper_number",
    "paper_title",
    "paper_hash",
    "demand",
    "assigned",
    "reason",
)
ALTERNATE_FIELDS = (
    "paper_id",
    "paper_number",
    "paper_title",
    "paper_hash",
    "rank",
    "reviewer_id",
    "reviewer_name",
    "affinity",
    "load_left",
    "reason",
)
LISTED = 20  # items of a list printed in the summary (all are in the files)


def write_short_csv(result: AssignmentResult, path: Path) -> Path:
    """One row per reason a paper is short (of reviewers or of a rule); returns the path."""
    got: dict[str, int] = {}
    for p, _, _ in result.pairs:
        got[p] = got.get(p, 0) + 1
    with atomic_open(make_parent(path)) as fh:
        writer = SafeCsvWriter(fh)
        writer.writerow(SHORT_FIELDS)
        for u in result.uncovered:
            writer.writerow(
                [
                    *paper_identity(result.papers[u.paper_id]),
                    result.demand.get(u.paper_id, result.per_paper),
                    got.get(u.paper_id, 0),
                    u.reason,
                ]
            )
    return path


def write_alternates_csv(
    result: AssignmentResult, path: Path, label: Callable[[str], str] = lambda t: t
) -> Path:
    """One row per (paper, alternate) with its rank, affinity, load left and reason."""
    with atomic_open(make_parent(path)) as fh:
        writer = SafeCsvWriter(fh)
        writer.writerow(ALTERNATE_FIELDS)
        for a in result.alternates:
            reviewer = result.reviewers[a.reviewer]
            writer.writerow(
                [
                    *paper_identity(result.papers[a.paper]),
                    a.rank,
                    a.reviewer,
                    reviewer.name or "",
                    f"{a.match.affinity:g}",
                    a.load_left,
                    a.match.reason(label),
                ]
            )
    return path


def fairness_line(result: AssignmentResult) -> str:
    """Weakest paper's total affinity, the 1st and 10th percentile over papers, the total."""
    totals = result.paper_totals()
    if not totals:
        return "fairness: no paper wants reviewers"
    weakest = min(totals, key=lambda p: (totals[p], p))
    values = np.asarray(list(totals.values()))
    return (
        f"{result.objective}: weakest paper {totals[weakest]:.4g} ({result.papers[weakest].ref}), "
        f"1st percentile {np.percentile(values, 1):.4g}, 10th percentile "
        f"{np.percentile(values, 10):.4g}, total {result.total_affinity:.6g}"
    )


def chair_lines(result: AssignmentResult) -> list[str]:
    """The summary lines of the chair's features (only those that were used or matter)."""
    lines = [fairness_line(result)]
    if result.capacity_short:
        lines.append(result.capacity_short)
    fair = result.fairness
    if fair is not None:
        got: dict[str, int] = {}
        for p, _, _ in result.pairs:
            got[p] = got.get(p, 0) + 1
        totals = result.paper_totals()
        full = [v for p, v in totals.items() if got.get(p, 0) >= result.demand.get(p, 0)]
        floor = min(full, default=0.0)
        share = floor / fair.lp_bound if fair.lp_bound > 0 else 1.0
        lines.append(
            f"fair: the weakest of the {len(full)} fully covered papers has {floor:.4g}; "
            f"LP max-min bound {fair.lp_bound:.4g} ({100 * share:.1f}% of it)"
        )
    if result.scoring:
        lines.append(result.scoring)
    forced = result.forced_very_low()
    if forced:
        lines.append(
            f"{len(forced)} pair(s) with a Very Low bid assigned: no feasible assignment avoids "
            "them (reason column of assignments.csv):"
        )
        lines += [f"  {result.papers[p].ref}: {r}" for p, r in forced[:LISTED]]
    if result.kept or result.dropped:
        lines.append(f"kept {result.kept} pair(s) of the previous assignment")
    if result.dropped:
        lines.append(f"dropped {len(result.dropped)} pair(s) no longer valid:")
        lines += [f"  {d}" for d in result.dropped[:LISTED]]
        if len(result.dropped) > LISTED:
            lines.append(f"  ... {len(result.dropped) - LISTED} more")
    if any(result.min_loads.values()):
        loads = result.loads()
        under = sorted(r for r, m in result.min_loads.items() if loads[r] < m)
        lines.append(
            f"minimum load: {len(under)} reviewer(s) below it"
            + (": " + ", ".join(under[:LISTED]) if under else "")
        )
    return lines
