"""The assignment as a min-cost flow, solved by OR-Tools (as OpenReview's matcher does).

Network: source -> paper (capacity k) -> reviewer (capacity 1, cost = scaled (top
affinity - affinity)) -> sink (capacity = the reviewer's load limit). OR-Tools'
`solve_max_flow_with_min_cost` finds the largest flow and, among the largest, the cheapest:
maximum total affinity, integral because every capacity is.

Only candidate arcs enter the network (see pipeline/assign/__init__.py for the top-k
pruning); a (paper, reviewer) pair without an arc is never assigned, so conflicts are
simply absent.

When not every paper can get k reviewers:
- a paper with fewer than k eligible reviewers (conflicts, load 0) is reported and left out
  before solving;
- if the remaining papers need more slots than all load limits together, nothing is
  assigned: an InputError says how much capacity is missing;
- if capacity suffices in total but some papers compete for the same few reviewers (Hall's
  condition fails), the max flow leaves as few slots empty as possible; the papers left
  short are reported and left out, and the rest re-solved for an exact-k assignment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from pipeline.errors import InputError

COST_SCALE = 1000  # affinities become integer costs with three decimals


@dataclass(frozen=True)
class Uncovered:
    """A paper left without reviewers, and why."""

    paper_id: str
    reason: str


@dataclass
class Arcs:
    """Candidate (paper, reviewer) pairs as parallel arrays of indexes and affinities."""

    paper: np.ndarray  # int64 paper index
    reviewer: np.ndarray  # int64 reviewer index
    score: np.ndarray  # float64 affinity

    def __len__(self) -> int:
        return len(self.paper)


def min_cost_flow(
    n_papers: int, loads: np.ndarray, arcs: Arcs, per_paper: int, papers: np.ndarray
) -> np.ndarray:
    """A boolean mask over `arcs`: the chosen pairs of a max flow of max affinity.

    Only papers in `papers` (indexes) take part; each gets at most `per_paper` reviewers.
    """
    from ortools.graph.python import min_cost_flow as ortools_flow

    chosen = np.zeros(len(arcs), dtype=bool)
    active = np.zeros(n_papers, dtype=bool)
    active[papers] = True
    use = active[arcs.paper] & (loads[arcs.reviewer] > 0)
    if not use.any():
        return chosen
    idx = np.flatnonzero(use)
    n_reviewers = len(loads)
    source, sink = 0, 1 + n_papers + n_reviewers
    top = float(arcs.score[idx].max())
    costs = np.rint((top - arcs.score[idx]) * COST_SCALE).astype(np.int64)
    flow = ortools_flow.SimpleMinCostFlow()
    rev = np.flatnonzero(loads > 0)
    tails = np.concatenate(
        [np.zeros(len(papers), np.int64), 1 + arcs.paper[idx], 1 + n_papers + rev]
    )
    heads = np.concatenate(
        [1 + papers.astype(np.int64), 1 + n_papers + arcs.reviewer[idx], np.full(len(rev), sink)]
    )
    caps = np.concatenate(
        [
            np.full(len(papers), per_paper, np.int64),
            np.ones(len(idx), np.int64),
            loads[rev].astype(np.int64),
        ]
    )
    unit = np.concatenate([np.zeros(len(papers), np.int64), costs, np.zeros(len(rev), np.int64)])
    flow.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, unit)
    supply = len(papers) * per_paper
    flow.set_node_supply(source, supply)
    flow.set_node_supply(sink, -supply)
    status = flow.solve_max_flow_with_min_cost()
    if status != flow.OPTIMAL:
        raise InputError(f"the assignment solver failed (OR-Tools status {status})")
    first = len(papers)
    arc_ids = np.arange(first, first + len(idx))
    chosen[idx] = flow.flows(arc_ids) > 0
    return chosen


@dataclass
class FlowResult:
    """Chosen arcs, papers left out and why."""

    chosen: np.ndarray  # mask over the arcs
    uncovered: list[tuple[int, str]] = field(default_factory=list)  # (paper index, reason)
    short: list[int] = field(default_factory=list)  # papers left short by competition


def solve_arcs(
    n_papers: int,
    loads: np.ndarray,
    arcs: Arcs,
    per_paper: int,
    eligible: np.ndarray,
    describe_few: Callable[[int], str],
    own_load: np.ndarray | None = None,
) -> FlowResult:
    """Exactly `per_paper` reviewers for every paper that can have them, max total affinity.

    `eligible[i]` is how many reviewers paper i may get at all (no conflict, load > 0);
    `describe_few(i)` says why a paper has fewer than `per_paper`; `own_load[j]` is True when
    reviewer j's load is their own max_load (reviewers.yaml), not --max-load (None: no one's).
    """
    if per_paper < 1:
        raise InputError("--per-paper must be at least 1")
    available = int((loads > 0).sum())
    if available < per_paper:
        raise InputError(
            f"{per_paper} reviewers per paper requested but only {available} reviewer(s) "
            "can take papers; lower --per-paper or add reviewers"
        )
    result = FlowResult(np.zeros(len(arcs), dtype=bool))
    coverable = []
    for i in range(n_papers):
        if eligible[i] < per_paper:
            result.uncovered.append((i, describe_few(i)))
        else:
            coverable.append(i)
    need = len(coverable) * per_paper
    capacity = int(loads.sum())
    if need > capacity:
        raise InputError(
            f"not enough reviewing capacity: {len(coverable)} papers x {per_paper} reviewers = "
            f"{need} assignments, but the {len(loads)} reviewers' load limits add up to "
            f"{capacity}; {capacity_advice(need, loads, own_load)}"
        )
    papers = np.asarray(coverable, dtype=np.int64)
    chosen = min_cost_flow(n_papers, loads, arcs, per_paper, papers)
    got = np.bincount(arcs.paper[chosen], minlength=n_papers)
    short = [int(i) for i in papers if got[i] < per_paper]
    if short:
        result.short = short
        keep = np.setdiff1d(papers, np.asarray(short, dtype=np.int64))
        chosen = min_cost_flow(n_papers, loads, arcs, per_paper, keep)
    result.chosen = chosen
    return result


def capacity_advice(need: int, loads: np.ndarray, own_load: np.ndarray | None) -> str:
    """What to raise when the load limits add up to less than `need`: --max-load (to what)
    when it applies to some reviewers, else the reviewers' own max_load in reviewers.yaml."""
    own = np.zeros(len(loads), dtype=bool) if own_load is None else np.asarray(own_load, bool)
    n_flag = int((~own).sum())
    own_total = int(loads[own].sum())
    if n_flag == 0:
        return (
            f"every reviewer has their own max_load in the reviewers file, so --max-load "
            f"does not apply: raise those by {need - own_total} in all, or add reviewers"
        )
    advice = f"raise --max-load to at least {math.ceil((need - own_total) / n_flag)}"
    if not own.any():
        return advice + " or add reviewers"
    return (
        f"{advice} (it sets the load of the {n_flag} reviewer(s) without a max_load of their "
        f"own), raise the max_load of the other {int(own.sum())} in the reviewers file (now "
        f"{own_total} in all), or add reviewers"
    )


@dataclass
class Solution:
    """Chosen pairs (paper id -> reviewer ids) and the papers that could not be covered."""

    pairs: dict[str, list[str]] = field(default_factory=dict)
    uncovered: list[Uncovered] = field(default_factory=list)


def solve(
    papers: Iterable[str],
    scores: Mapping[tuple[str, str], float],
    *,
    per_paper: int,
    loads: Mapping[str, int],
) -> Solution:
    """Optimal assignment for an affinity table; a pair missing from `scores` is forbidden."""
    paper_ids = list(dict.fromkeys(papers))
    reviewer_ids = list(loads)
    p_index = {p: i for i, p in enumerate(paper_ids)}
    r_index = {r: j for j, r in enumerate(reviewer_ids)}
    pairs = [
        (p_index[p], r_index[r], s) for (p, r), s in scores.items() if p in p_index and r in r_index
    ]
    arcs = Arcs(
        np.asarray([a for a, _, _ in pairs], dtype=np.int64),
        np.asarray([b for _, b, _ in pairs], dtype=np.int64),
        np.asarray([s for _, _, s in pairs], dtype=np.float64),
    )
    load_arr = np.asarray([max(int(loads[r]), 0) for r in reviewer_ids], dtype=np.int64)
    ok = load_arr[arcs.reviewer] > 0
    eligible = np.bincount(arcs.paper[ok], minlength=len(paper_ids))

    def few(i: int) -> str:
        p = paper_ids[i]
        conflicted = sum(1 for r in reviewer_ids if (p, r) not in scores)
        unavailable = sum(1 for r in reviewer_ids if (p, r) in scores and loads[r] <= 0)
        why = [f"{conflicted} of {len(reviewer_ids)} reviewers have a conflict"]
        if unavailable:
            why.append(f"{unavailable} more have max_load 0")
        return f"only {eligible[i]} eligible reviewer(s), {per_paper} needed: {'; '.join(why)}"

    flow = solve_arcs(len(paper_ids), load_arr, arcs, per_paper, eligible, few)
    sol = Solution(uncovered=[Uncovered(paper_ids[i], why) for i, why in flow.uncovered])
    for i in flow.short:
        names = [reviewer_ids[j] for j in arcs.reviewer[(arcs.paper == i) & ok]]
        listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        sol.uncovered.append(
            Uncovered(
                paper_ids[i],
                f"its {len(names)} eligible reviewers ({listed}) are needed at full load by "
                f"other papers; it could not get {per_paper}",
            )
        )
    chosen = np.flatnonzero(flow.chosen)
    out: dict[str, list[str]] = {}
    for a in chosen:
        out.setdefault(paper_ids[arcs.paper[a]], []).append(reviewer_ids[arcs.reviewer[a]])
    sol.pairs = {p: sorted(rs, key=lambda r: (-scores[p, r], r)) for p, rs in out.items()}
    return sol
