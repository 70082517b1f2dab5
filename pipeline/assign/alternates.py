"""`--alternates K`: each paper's next K eligible reviewers, for when an assigned one drops out.

Alternates are ranked by the same score the assignment maximizes; they are not assigned to
the paper, have no conflict with it, are not forbidden and did not bid Very Low on it.
Each comes with the load it has left (0: taking the paper means lifting its limit).
Attribute rules are not checked here; chair_outputs.py writes alternates.csv.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pipeline.assign.affinity import Match
from pipeline.assign.reviewers import Reviewer
from pipeline.rundir import Paper

if TYPE_CHECKING:
    from pipeline.assign import AssignmentResult


@dataclass(frozen=True)
class Alternate:
    """One paper's alternate reviewer: rank (1 = the first to ask), match, load left."""

    paper: str
    rank: int
    reviewer: str
    match: Match
    load_left: int


def alternates(
    scorer: object,
    k: int,
    forbidden: list[np.ndarray],
    papers: Sequence[Paper],
    reviewers: Sequence[Reviewer],
    result: AssignmentResult,
    loads: np.ndarray,
) -> list[Alternate]:
    """The K best eligible reviewers of every paper that are not assigned to it."""
    r_index = {r.id: j for j, r in enumerate(reviewers)}
    assigned: list[list[int]] = [[] for _ in papers]
    p_index = {p.id: i for i, p in enumerate(papers)}
    for p, r, _ in result.pairs:
        assigned[p_index[p]].append(r_index[r])
    left = {r: result.max_loads[r] - n for r, n in result.loads().items()}
    can_take = np.asarray([result.max_loads[r.id] > 0 for r in reviewers], dtype=bool)
    n_r = len(reviewers)
    step = scorer.block_rows()  # type: ignore[attr-defined]
    pick_p: list[np.ndarray] = []
    pick_r: list[np.ndarray] = []
    for start in range(0, len(papers), step):
        rows = np.arange(start, min(len(papers), start + step))
        scores = scorer.block(rows).astype(np.float64)  # type: ignore[attr-defined]
        scores[:, ~can_take] = -np.inf
        for n, i in enumerate(rows):
            scores[n, forbidden[i]] = -np.inf
            scores[n, assigned[i]] = -np.inf
        low = getattr(scorer, "very_low_block", None)
        if low is not None:
            scores[low(rows)] = -np.inf
        kk = min(k, n_r)
        top = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        order = np.lexsort((top, -np.take_along_axis(scores, top, axis=1)), axis=1)
        top = np.take_along_axis(top, order, axis=1)
        for n, i in enumerate(rows):
            ok = np.isfinite(scores[n, top[n]])
            pick_p.append(np.full(int(ok.sum()), i, np.int64))
            pick_r.append(top[n][ok].astype(np.int64))
    if not pick_p:
        return []
    pp, rr = np.concatenate(pick_p), np.concatenate(pick_r)
    matches = scorer.explain_many(pp, rr)  # type: ignore[attr-defined]
    out: list[Alternate] = []
    rank = 0
    for n, (i, j, m) in enumerate(zip(pp.tolist(), rr.tolist(), matches, strict=True)):
        rank = 1 if n == 0 or pp[n - 1] != i else rank + 1
        rid = reviewers[j].id
        out.append(Alternate(papers[i].id, rank, rid, m, left[rid]))
    return out
