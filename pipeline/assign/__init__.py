"""Reviewer assignment: each paper's demand of reviewers, load limits, no conflicts, max affinity.

- reviewers.py: reviewers.yaml (expertise, past papers, identity, conflicts, loads);
- conflicts.py: declared conflicts (never silently ignored) and conflicts derived from data;
- affinity.py: the affinity formula (tags, keywords, TF-IDF over past papers) and reasons;
- embeddings.py: the optional `embeddings` affinity source (vectors from the endpoint);
- solver.py: OR-Tools min-cost flow over the candidate pairs;
- scores.py: outside scores and bids, mixed with the built-in affinity by weights;
- controls.py: demands, minimum loads, locked / forbidden / kept pairs, attribute rules;
- fairness.py: the LP/MIP model (HiGHS) for attribute rules and the fair objective;
- alternates.py: the next eligible reviewers of each paper;
- outputs.py: assignments.csv, conflicts.csv, weak_pairs.csv, OpenReview edges, the summary.

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

from pipeline.assign.affinity import AffinitySource, Match, Scorer, affinity, keyword_counts
from pipeline.assign.alternates import Alternate, alternates
from pipeline.assign.conflicts import Conflict, declared_conflicts, derived_conflicts
from pipeline.assign.controls import Controls, Rule, demands, parse_rule, plan_pairs
from pipeline.assign.fairness import ConstrainedModel, FairnessReport
from pipeline.assign.outputs import summary, write_assignments_csv, write_conflicts_csv
from pipeline.assign.reviewers import (
    ConflictPolicy,
    PastPaper,
    Reviewer,
    ReviewerPool,
    load_pool,
    load_reviewers,
)
from pipeline.assign.scores import (
    MixedScorer,
    PaperIndex,
    ReviewerIndex,
    Scoring,
)
from pipeline.assign.solver import Arcs, Solution, Uncovered, solve, solve_arcs
from pipeline.errors import InputError
from pipeline.rundir import Paper

log = logging.getLogger(__name__)

DEFAULT_TOP_K = 50
OBJECTIVES = ("max-sum", "fair")
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
    demand: dict[str, int] = field(default_factory=dict)  # paper id -> reviewers wanted
    objective: str = "max-sum"
    fairness: FairnessReport | None = None  # the LP bound and floors of --objective fair
    kept: int = 0  # pairs kept from --keep
    dropped: list[str] = field(default_factory=list)  # kept pairs no longer valid, with why
    min_loads: dict[str, int] = field(default_factory=dict)
    scoring: str | None = None  # the mixing formula when outside scores or bids are used
    alternates: list[Alternate] = field(default_factory=list)
    capacity_short: str | None = None  # the load limits fall short of the demands: what to raise

    @property
    def total_affinity(self) -> float:
        """Sum of the affinities of all chosen pairs."""
        return sum(m.affinity for _, _, m in self.pairs)

    def paper_totals(self) -> dict[str, float]:
        """Paper id -> the summed affinity of its reviewers (every paper wanting any, 0 included)."""
        out = {p: 0.0 for p in self.papers if self.demand.get(p, self.per_paper) > 0}
        for p, _, m in self.pairs:
            out[p] = out.get(p, 0.0) + m.affinity
        return out

    def fully_covered(self) -> int:
        """How many papers got every reviewer they wanted."""
        got: dict[str, int] = {}
        for p, _, _ in self.pairs:
            got[p] = got.get(p, 0) + 1
        return sum(
            1 for p in self.papers if got.get(p, 0) >= self.demand.get(p, self.per_paper) > 0
        )

    def forced_very_low(self) -> list[tuple[str, str]]:
        """(paper, reviewer) pairs assigned despite a Very Low bid."""
        return [(p, r) for p, r, m in self.pairs if getattr(m, "forced", False)]

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
    scorer: Scorer | MixedScorer, top_k: int | None, forbidden: list[np.ndarray], loads: np.ndarray
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
    sources: Sequence[tuple[AffinitySource, float]] = (),
    scoring: Scoring | None = None,
    controls: Controls | None = None,
    objective: str = "max-sum",
) -> AssignmentResult:
    """Give every paper its demand of reviewers (as many as can be found), maximizing affinity.

    `scoring` mixes outside scores and bids in (scores.py), `controls` adds the chair's
    demands, loads, pairs and attribute rules (controls.py), `objective` "fair" raises the
    weakest paper first (fairness.py). Conflicts in reviewers.yaml that name no paper are an
    InputError (listing them all).
    """
    if not papers:
        raise InputError("the run has no papers to assign")
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r} (one of {', '.join(OBJECTIVES)})")
    policy = policy or ConflictPolicy()
    controls = controls or Controls()
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
    p_index, r_index = PaperIndex(papers), ReviewerIndex(reviewers)
    demand = demands(controls.demand, p_index, len(papers), per_paper)
    min_loads = np.minimum(
        np.asarray(
            [r.min_load if r.min_load is not None else controls.min_load for r in reviewers],
            dtype=np.int64,
        ),
        loads,
    )
    forbidden = _forbidden(papers, reviewers, conflicts)
    plan = plan_pairs(controls, p_index, r_index, conflicts, forbidden, loads, reviewers)
    forbidden, fixed = plan.forbidden, plan.fixed
    fixed_per_paper, fixed_per_reviewer = plan.per_paper, plan.per_reviewer
    left_loads = loads - fixed_per_reviewer
    left_demand = np.maximum(demand - fixed_per_paper, 0)
    left_min = np.maximum(min_loads - fixed_per_reviewer, 0)
    available = loads > 0
    n_available = int(available.sum())
    can_take = left_loads > 0
    n_can_take = int(can_take.sum())
    eligible = np.asarray([n_can_take - int(can_take[f].sum()) for f in forbidden], dtype=np.int64)
    with _timed(timings, "affinity model"):
        scoring = scoring or Scoring()
        # More affinity sources (embeddings) join the built-in affinity, each with its
        # --weights entry when given, else its default weight.
        weighted = [(src, float(scoring.weights.get(src.name, w))) for src, w in sources]
        builtin = Scorer(papers, reviewers, weighted) if scoring.weight("builtin") else None
        scorer: Scorer | MixedScorer
        if builtin is not None and scoring == Scoring():
            scorer = builtin  # the default: no outside source, nothing to mix
        else:
            scorer = MixedScorer(papers, reviewers, scoring, builtin)
    for keyword, why in sorted(scorer.ignored_keywords.items()):
        log.info("keyword %r does not count as expertise: %s", keyword, why)

    pi_of = {p.id: i for i, p in enumerate(papers)}
    n_conflicts = np.bincount(
        np.asarray([pi_of[c.paper] for c in conflicts], np.int64), minlength=len(papers)
    )

    def few(i: int) -> str:
        n_fixed = int(fixed_per_paper[i])
        n_forbidden = len(forbidden[i]) - int(n_conflicts[i]) - n_fixed
        no_load = int((left_loads <= 0).sum()) - int((left_loads[forbidden[i]] <= 0).sum())
        why = [f"{n_conflicts[i]} of {len(reviewers)} reviewers have a conflict"]
        if n_forbidden:
            why.append(f"{n_forbidden} more are forbidden")
        if no_load:
            why.append(
                f"{no_load} more have max_load 0"
                if not fixed.pairs
                else f"{no_load} more have no load left (max_load 0 or full with fixed pairs)"
            )
        got = n_fixed + min(int(eligible[i]), int(left_demand[i]))
        return (
            f"only {eligible[i] + n_fixed} eligible reviewer(s), {demand[i]} needed: "
            f"{'; '.join(why)}; it got {got}"
        )

    fair = objective == "fair"
    k = None if top_k is None or top_k >= n_available else top_k
    rounds = 0
    while True:
        rounds += 1
        with _timed(timings, "candidates"):
            arcs = candidate_arcs(scorer, k, forbidden, left_loads)
        penalized = (
            scorer.very_low(arcs.paper, arcs.reviewer) if isinstance(scorer, MixedScorer) else None
        )
        with _timed(timings, "min-cost flow"):
            flow = solve_arcs(
                len(papers),
                left_loads,
                arcs,
                per_paper if not controls.demand and not fixed.pairs else left_demand,
                eligible,
                few,
                own_load,
                penalized=penalized,
                min_loads=left_min if left_min.any() else None,
            )
        forced_low = penalized is not None and bool(penalized[flow.chosen].any())
        if (not flow.short and not forced_low) or k is None or flow.capacity_short:
            break  # (short for want of capacity: more candidates cannot help)
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
    chosen_mask = flow.chosen
    fairness: FairnessReport | None = None
    required = [rule for rule in controls.rules if rule.kind == "require"]
    if required and k is not None:
        # each paper's top k among the reviewers a rule asks for, so pruning never hides them
        with _timed(timings, "candidates"):
            arcs, chosen_mask = _with_rule_candidates(
                scorer, k, forbidden, left_loads, required, reviewers, arcs, chosen_mask
            )
        penalized = (
            scorer.very_low(arcs.paper, arcs.reviewer) if isinstance(scorer, MixedScorer) else None
        )
    if fair or controls.needs_mip:
        with _timed(timings, "constrained solve" if not fair else "fair solve"):
            model = ConstrainedModel(
                arcs=arcs,
                demand=left_demand,
                loads=left_loads,
                min_loads=left_min,
                rules=controls.rules,
                reviewers=reviewers,
                fixed=fixed.pairs,
                fixed_scores=_fixed_scores(scorer, fixed.pairs, len(papers)),
                allowed_low=chosen_mask if penalized is not None else None,
                penalized=penalized,
                start=chosen_mask,
            )
            solved = model.solve(fair=fair)
        chosen_mask = solved.chosen
        fairness = solved.fairness
        rule_short = solved.rule_short
    else:
        rule_short = {}
    got = np.bincount(arcs.paper[chosen_mask], minlength=len(papers)) + fixed_per_paper
    uncovered = [Uncovered(papers[i].id, why) for i, why in flow.uncovered]
    listed = {i for i, _ in flow.uncovered}
    for short in np.flatnonzero((got < demand) & (left_demand > 0)).tolist():
        if short in listed:
            continue
        among = "" if k is None else f" among its top {k} candidates"
        why = (
            "the reviewers' load limits add up to less than the papers' demands (see the summary)"
            if flow.capacity_short
            else f"its {eligible[short]} eligible reviewers are needed at full load by other "
            f"papers{among}"
        )
        uncovered.append(
            Uncovered(papers[short].id, f"{why}; it got {got[short]} of {demand[short]}")
        )
    for i, why in sorted(rule_short.items()):
        uncovered.append(Uncovered(papers[i].id, why))
    chosen = np.flatnonzero(chosen_mask)
    pair_p = np.concatenate([np.asarray([i for i, _ in fixed.pairs], np.int64), arcs.paper[chosen]])
    pair_r = np.concatenate(
        [np.asarray([j for _, j in fixed.pairs], np.int64), arcs.reviewer[chosen]]
    )
    with _timed(timings, "reasons"):
        matches = scorer.explain_many(pair_p, pair_r)
    pairs = [
        (papers[int(i)].id, reviewers[int(j)].id, m)
        for i, j, m in zip(pair_p, pair_r, matches, strict=True)
    ]
    pairs.sort(key=lambda x: (x[0], -x[2].affinity, x[1]))
    result = AssignmentResult(
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
        demand={p.id: int(d) for p, d in zip(papers, demand, strict=True)},
        objective=objective,
        fairness=fairness,
        kept=len(fixed.pairs) - fixed.locked,
        dropped=fixed.dropped,
        min_loads={r.id: int(n) for r, n in zip(reviewers, min_loads, strict=True)},
        scoring=scorer.scoring.describe() if isinstance(scorer, MixedScorer) else None,
        capacity_short=flow.capacity_short,
    )
    if controls.alternates:
        with _timed(timings, "alternates"):
            result.alternates = alternates(
                scorer, controls.alternates, forbidden, papers, reviewers, result, left_loads
            )
    return result


def _with_rule_candidates(
    scorer: Scorer | MixedScorer,
    k: int,
    forbidden: list[np.ndarray],
    loads: np.ndarray,
    rules: list[Rule],
    reviewers: list[Reviewer],
    arcs: Arcs,
    chosen: np.ndarray,
) -> tuple[Arcs, np.ndarray]:
    """`arcs` plus each paper's top k among each rule's members (no pair twice); `chosen`
    extended to match."""
    parts = [arcs]
    for rule in rules:
        outside = np.flatnonzero(rule.members(reviewers) < 0)
        narrowed = [np.union1d(f, outside) for f in forbidden]
        parts.append(candidate_arcs(scorer, k, narrowed, loads))
    paper = np.concatenate([a.paper for a in parts])
    reviewer = np.concatenate([a.reviewer for a in parts])
    score = np.concatenate([a.score for a in parts])
    _, first = np.unique(paper * len(reviewers) + reviewer, return_index=True)
    first.sort()  # the original arcs keep their positions (they come first)
    merged = Arcs(paper[first], reviewer[first], score[first])
    mask = np.zeros(len(first), dtype=bool)
    mask[: len(arcs)] = chosen
    return merged, mask


def _fixed_scores(
    scorer: Scorer | MixedScorer, fixed: list[tuple[int, int]], n_papers: int
) -> np.ndarray:
    """Per paper: the summed score of its fixed pairs (what a fairness floor counts first)."""
    out = np.zeros(n_papers)
    if fixed:
        p = np.asarray([i for i, _ in fixed], np.int64)
        r = np.asarray([j for _, j in fixed], np.int64)
        for i, m in zip(p, scorer.explain_many(p, r), strict=True):
            out[i] += m.affinity
    return out


__all__ = [
    "DEFAULT_TOP_K",
    "AssignmentResult",
    "ConflictPolicy",
    "Conflict",
    "Controls",
    "Rule",
    "Scoring",
    "parse_rule",
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
