"""Reviewer assignment: exactly k reviewers per paper, load limits, no conflicts, max affinity.

- reviewers.py: reviewers.yaml (expertise, past papers, identity, conflicts, loads);
- conflicts.py: declared conflicts (never silently ignored) and conflicts derived from data;
- affinity.py: the affinity formula (tags, keywords, TF-IDF over past papers) and reasons;
- solver.py: OR-Tools min-cost flow over the candidate pairs;
- outputs.py: assignments.csv, conflicts.csv and the terminal summary.

Candidate pruning (top-k): each paper keeps only its `top_k` (default 50) best eligible
reviewers as arcs of the flow network, ties broken by a fixed pseudo-random order so
zero-affinity candidates spread over the pool. 12,000 papers then make 600k arcs instead
of 96 million. If some paper is left short because all its candidates are needed
elsewhere, the candidates are rebuilt with 4x as many per paper, up to every eligible
reviewer (while the network stays under MAX_ARCS arcs), so pruning alone never leaves a
paper uncovered when the full problem could cover it. `top_k=None` solves unpruned;
bench/assign_scale.py measures what pruning costs in total affinity.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from pipeline.assign.affinity import Match, Scorer, affinity, keyword_counts
from pipeline.assign.conflicts import Conflict, declared_conflicts, derived_conflicts
from pipeline.assign.outputs import summary, write_assignments_csv, write_conflicts_csv
from pipeline.assign.reviewers import (
    ConflictPolicy,
    PastPaper,
    Reviewer,
    ReviewerPool,
    load_pool,
    load_reviewers,
)
from pipeline.assign.solver import Arcs, Solution, Uncovered, solve, solve_arcs
from pipeline.errors import InputError
from pipeline.rundir import Paper

log = logging.getLogger(__name__)

DEFAULT_TOP_K = 50
MAX_ARCS = 25_000_000
_JITTER = 1e-3  # tie-break among equal affinities when pruning (below the cost resolution)


@dataclass
class Pruning:
    """How the candidate pairs were chosen."""

    top_k: int | None  # candidates per paper in the final round; None = every eligible one
    arcs: int
    rounds: int


@dataclass
class AssignmentResult:
    """The assignment: pairs with their matches, uncovered papers, conflicts, reviewer loads."""

    per_paper: int
    papers: dict[str, Paper]
    reviewers: dict[str, Reviewer]
    pairs: list[tuple[str, str, Match]]
    uncovered: list[Uncovered]
    conflicts: list[Conflict] = field(default_factory=list)
    ignored_keywords: dict[str, str] = field(default_factory=dict)
    pruning: Pruning | None = None
    max_loads: dict[str, int] = field(default_factory=dict)
    timings: dict[str, tuple[float, float]] = field(default_factory=dict)  # phase: (wall, cpu)

    @property
    def total_affinity(self) -> float:
        """Sum of the affinities of all chosen pairs."""
        return sum(m.affinity for _, _, m in self.pairs)

    def loads(self) -> dict[str, int]:
        """Papers assigned to each reviewer (every reviewer listed, 0 included)."""
        out = dict.fromkeys(self.reviewers, 0)
        for _, r, _ in self.pairs:
            out[r] += 1
        return out

    def zero_affinity(self) -> dict[str, list[str]]:
        """Paper id -> the reviewers assigned to it with no matching expertise at all."""
        out: dict[str, list[str]] = {}
        for p, r, m in self.pairs:
            if m.affinity <= 0:
                out.setdefault(p, []).append(r)
        return out


def _forbidden(
    papers: Sequence[Paper], reviewers: Sequence[Reviewer], conflicts: list[Conflict]
) -> list[np.ndarray]:
    p_index = {p.id: i for i, p in enumerate(papers)}
    r_index = {r.id: j for j, r in enumerate(reviewers)}
    per: list[set[int]] = [set() for _ in papers]
    for c in conflicts:
        per[p_index[c.paper]].add(r_index[c.reviewer])
    return [np.fromiter(sorted(s), dtype=np.int64, count=len(s)) for s in per]


def candidate_arcs(
    scorer: Scorer, top_k: int | None, forbidden: list[np.ndarray], loads: np.ndarray
) -> Arcs:
    """Each paper's `top_k` best eligible reviewers (every eligible one for None) as arcs."""
    n_p, n_r = scorer.n_papers, scorer.n_reviewers
    unavailable = loads <= 0
    k = n_r if top_k is None else min(top_k, n_r)
    parts_p, parts_r, parts_s = [], [], []
    step = scorer.block_rows()
    for start in range(0, n_p, step):
        rows = np.arange(start, min(n_p, start + step))
        scores = scorer.block(rows)
        masked = np.zeros(scores.shape, dtype=bool)
        masked[:, unavailable] = True
        for n, i in enumerate(rows):
            if len(forbidden[i]):
                masked[n, forbidden[i]] = True
        if k >= n_r:
            r_idx = np.nonzero(~masked)
            parts_p.append(rows[r_idx[0]])
            parts_r.append(r_idx[1].astype(np.int64))
            parts_s.append(scores[r_idx].astype(np.float64))
            continue
        rng = np.random.default_rng(start)
        pick = scores + rng.random(scores.shape, dtype=np.float32) * _JITTER
        pick[masked] = -np.inf
        top = np.argpartition(-pick, k - 1, axis=1)[:, :k]
        ok = np.isfinite(np.take_along_axis(pick, top, axis=1))
        pr = np.broadcast_to(rows[:, None], top.shape)[ok]
        rr = top[ok].astype(np.int64)
        parts_p.append(pr.astype(np.int64))
        parts_r.append(rr)
        parts_s.append(scores[pr - start, rr].astype(np.float64))
    if not parts_p:
        empty = np.zeros(0, dtype=np.int64)
        return Arcs(empty, empty, np.zeros(0))
    return Arcs(np.concatenate(parts_p), np.concatenate(parts_r), np.concatenate(parts_s))


@contextmanager
def _timed(timings: dict[str, tuple[float, float]], phase: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        w0, c0 = timings.get(phase, (0.0, 0.0))
        timings[phase] = (
            w0 + time.perf_counter() - wall,
            c0 + time.process_time() - cpu,
        )


def assign(
    papers: list[Paper],
    reviewers: list[Reviewer],
    *,
    per_paper: int,
    max_load: int,
    policy: ConflictPolicy | None = None,
    top_k: int | None = DEFAULT_TOP_K,
) -> AssignmentResult:
    """Assign exactly `per_paper` reviewers to every coverable paper, maximizing affinity.

    Conflicts in reviewers.yaml that name no paper are an InputError (listing them all).
    """
    if not papers:
        raise InputError("the run has no papers to assign")
    policy = policy or ConflictPolicy()
    timings: dict[str, tuple[float, float]] = {}
    with _timed(timings, "conflicts"):
        conflicts = declared_conflicts(papers, reviewers)
        declared = {(c.paper, c.reviewer) for c in conflicts}
        conflicts += [
            c
            for c in derived_conflicts(papers, reviewers, policy)
            if (c.paper, c.reviewer) not in declared
        ]
    loads = np.asarray(
        [r.max_load if r.max_load is not None else max_load for r in reviewers], dtype=np.int64
    )
    own_load = np.asarray([r.max_load is not None for r in reviewers], dtype=bool)
    forbidden = _forbidden(papers, reviewers, conflicts)
    available = loads > 0
    n_available = int(available.sum())
    eligible = np.asarray(
        [n_available - int(available[f].sum()) for f in forbidden], dtype=np.int64
    )
    with _timed(timings, "affinity model"):
        scorer = Scorer(papers, reviewers)
    for keyword, why in sorted(scorer.ignored_keywords.items()):
        log.info("keyword %r does not count as expertise: %s", keyword, why)

    def few(i: int) -> str:
        n_conf = len(forbidden[i])
        unavailable = len(reviewers) - n_available - int((~available[forbidden[i]]).sum())
        why = [f"{n_conf} of {len(reviewers)} reviewers have a conflict"]
        if unavailable:
            why.append(f"{unavailable} more have max_load 0")
        return f"only {eligible[i]} eligible reviewer(s), {per_paper} needed: {'; '.join(why)}"

    k = None if top_k is None or top_k >= n_available else top_k
    rounds = 0
    while True:
        rounds += 1
        with _timed(timings, "candidates"):
            arcs = candidate_arcs(scorer, k, forbidden, loads)
        with _timed(timings, "min-cost flow"):
            flow = solve_arcs(len(papers), loads, arcs, per_paper, eligible, few, own_load)
        if not flow.short or k is None:
            break
        wider = k * 4
        if wider >= n_available:
            if len(papers) * n_available > MAX_ARCS:
                break
            wider_k: int | None = None
        else:
            wider_k = wider
        log.info(
            "%d paper(s) short with the top %d candidates each; retrying with %s",
            len(flow.short),
            k,
            "every eligible reviewer" if wider_k is None else f"the top {wider_k}",
        )
        k = wider_k
    uncovered = [Uncovered(papers[i].id, why) for i, why in flow.uncovered]
    for i in flow.short:
        among = "" if k is None else f" among its top {k} candidates"
        uncovered.append(
            Uncovered(
                papers[i].id,
                f"its {eligible[i]} eligible reviewers are needed at full load by other "
                f"papers{among}; it could not get {per_paper}",
            )
        )
    chosen = np.flatnonzero(flow.chosen)
    with _timed(timings, "reasons"):
        matches = scorer.explain_many(arcs.paper[chosen], arcs.reviewer[chosen])
    pairs = [
        (papers[int(i)].id, reviewers[int(j)].id, m)
        for i, j, m in zip(arcs.paper[chosen], arcs.reviewer[chosen], matches, strict=True)
    ]
    pairs.sort(key=lambda x: (x[0], -x[2].affinity, x[1]))
    return AssignmentResult(
        per_paper=per_paper,
        papers={p.id: p for p in papers},
        reviewers={r.id: r for r in reviewers},
        pairs=pairs,
        uncovered=uncovered,
        conflicts=conflicts,
        ignored_keywords=scorer.ignored_keywords,
        pruning=Pruning(k, len(arcs), rounds),
        max_loads={r.id: int(n) for r, n in zip(reviewers, loads, strict=True)},
        timings=timings,
    )


__all__ = [
    "DEFAULT_TOP_K",
    "AssignmentResult",
    "ConflictPolicy",
    "Conflict",
    "Match",
    "PastPaper",
    "Reviewer",
    "ReviewerPool",
    "Solution",
    "Uncovered",
    "affinity",
    "assign",
    "candidate_arcs",
    "keyword_counts",
    "load_pool",
    "load_reviewers",
    "solve",
    "summary",
    "write_assignments_csv",
    "write_conflicts_csv",
]
