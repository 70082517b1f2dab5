"""The assignment as a min-cost flow, solved by OR-Tools (as OpenReview's matcher does).

Network: source -> paper (capacity = its demand) -> reviewer (capacity 1, cost = scaled
(top affinity - affinity)) -> sink (capacity = the reviewer's load limit). OR-Tools'
`solve_max_flow_with_min_cost` finds the largest flow and, among the largest, the cheapest:
as many pairs as can be had, then maximum total affinity, integral because every capacity is.

Only candidate arcs enter the network (see pipeline/assign/__init__.py for the top-k
pruning); a (paper, reviewer) pair without an arc is never assigned, so conflicts are
simply absent.

Two priorities sit above affinity, as costs no affinity difference can outweigh
(`priority_cost`): a penalized arc (a Very Low bid) is used only when the largest flow
needs it, and a reviewer's minimum load is met before any affinity is gained (the first
`min_load` units of the reviewer -> sink capacity carry a bonus of the same size).

When not every paper can get its demand:
- if the papers need more slots than all load limits together, nothing is assigned: an
  InputError says how much capacity is missing;
- otherwise the largest flow gives every paper as many reviewers as can be found: a paper
  with fewer eligible reviewers than its demand, or one that loses the competition for the
  same few reviewers (Hall's condition fails), keeps the reviewers it could get and is
  reported with why.
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


def priority_cost(costs: np.ndarray, flow: int) -> int:
    """A cost larger than any difference in total affinity cost a flow of `flow` units can make."""
    spread = int(costs.max() - costs.min()) if len(costs) else 0
    return spread * max(flow, 1) + 1


def min_cost_flow(
    n_papers: int,
    loads: np.ndarray,
    arcs: Arcs,
    per_paper: int | np.ndarray,
    papers: np.ndarray,
    *,
    penalized: np.ndarray | None = None,
    min_loads: np.ndarray | None = None,
) -> np.ndarray:
    """A boolean mask over `arcs`: the chosen pairs of a max flow of max affinity.

    Only papers in `papers` (indexes) take part; paper i gets at most its demand
    (`per_paper`, one number or one per paper). `penalized` (mask over arcs) arcs are used
    only when the max flow needs them; `min_loads[j]` units of reviewer j are filled first.
    """
    from ortools.graph.python import min_cost_flow as ortools_flow

    chosen = np.zeros(len(arcs), dtype=bool)
    demand = np.broadcast_to(np.asarray(per_paper, dtype=np.int64), (n_papers,))
    active = np.zeros(n_papers, dtype=bool)
    active[papers] = True
    active &= demand > 0
    papers = np.flatnonzero(active)
    use = active[arcs.paper] & (loads[arcs.reviewer] > 0)
    if not use.any():
        return chosen
    idx = np.flatnonzero(use)
    n_reviewers = len(loads)
    source, sink = 0, 1 + n_papers + n_reviewers
    top = float(arcs.score[idx].max())
    costs = np.rint((top - arcs.score[idx]) * COST_SCALE).astype(np.int64)
    supply = int(demand[papers].sum())
    rev = np.flatnonzero(loads > 0)
    cap = loads[rev].astype(np.int64)
    floor = np.zeros(len(rev), np.int64)
    if min_loads is not None:
        floor = np.minimum(np.asarray(min_loads, np.int64)[rev], cap)
    big = priority_cost(costs, supply)
    if penalized is not None and penalized[idx].any():
        # above the min-load bonus too: a Very Low pair is never traded for a filled minimum
        costs = costs + penalized[idx].astype(np.int64) * big * (int(floor.sum()) + 1)
    with_floor = np.flatnonzero(floor > 0)
    flow = ortools_flow.SimpleMinCostFlow()
    tails = np.concatenate(
        [
            np.zeros(len(papers), np.int64),
            1 + arcs.paper[idx],
            1 + n_papers + rev,
            1 + n_papers + rev[with_floor],
        ]
    )
    heads = np.concatenate(
        [
            1 + papers.astype(np.int64),
            1 + n_papers + arcs.reviewer[idx],
            np.full(len(rev) + len(with_floor), sink),
        ]
    )
    caps = np.concatenate(
        [demand[papers], np.ones(len(idx), np.int64), cap - floor, floor[with_floor]]
    )
    unit = np.concatenate(
        [
            np.zeros(len(papers), np.int64),
            costs,
            np.zeros(len(rev), np.int64),
            np.full(len(with_floor), -big, np.int64),
        ]
    )
    flow.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, unit)
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
    capacity_short: str | None = None  # the load limits add up to less than the demands


def solve_arcs(
    n_papers: int,
    loads: np.ndarray,
    arcs: Arcs,
    per_paper: int | np.ndarray,
    eligible: np.ndarray,
    describe_few: Callable[[int], str],
    own_load: np.ndarray | None = None,
    *,
    penalized: np.ndarray | None = None,
    min_loads: np.ndarray | None = None,
) -> FlowResult:
    """As many reviewers as can be found for every paper, up to its demand; max total affinity.

    `per_paper` is one demand or one per paper; `eligible[i]` is how many reviewers paper i
    may get at all (no conflict, load > 0); `describe_few(i)` says why a paper has fewer
    than its demand; `own_load[j]` is True when reviewer j's load is their own max_load
    (reviewers.yaml), not --max-load (None: no one's). Papers with too few eligible
    reviewers are in `uncovered`, papers that lost the competition for them in `short`:
    both keep the reviewers they could get. When the loads add up to less than the demands,
    as many as they allow are assigned and `capacity_short` says what to raise.
    """
    demand = np.broadcast_to(np.asarray(per_paper, dtype=np.int64), (n_papers,))
    if isinstance(per_paper, int) and per_paper < 1:
        raise InputError("--per-paper must be at least 1")
    result = FlowResult(np.zeros(len(arcs), dtype=bool))
    few = eligible < demand
    result.uncovered = [(int(i), describe_few(int(i))) for i in np.flatnonzero(few)]
    coverable = np.flatnonzero(~few & (demand > 0))
    need = int(demand[coverable].sum())
    capacity = int(loads.sum())
    if need > capacity:
        asked = (
            f"{len(coverable)} papers x {per_paper} reviewers = {need} assignments"
            if isinstance(per_paper, int)
            else f"the demands of {len(coverable)} papers add up to {need} assignments"
        )
        # Assign as much as the loads allow; the papers left short say why.
        result.capacity_short = (
            f"not enough reviewing capacity: {asked}, but the {len(loads)} reviewers' load "
            f"limits add up to {capacity}; {capacity_advice(need, loads, own_load)}"
        )
    papers = np.flatnonzero(demand > 0)
    chosen = min_cost_flow(
        n_papers, loads, arcs, demand, papers, penalized=penalized, min_loads=min_loads
    )
    got = np.bincount(arcs.paper[chosen], minlength=n_papers)
    result.short = [int(i) for i in coverable if got[i] < demand[i]]
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
    chosen = np.flatnonzero(flow.chosen)
    got = np.bincount(arcs.paper[chosen], minlength=len(paper_ids))
    for i in flow.short:
        names = [reviewer_ids[j] for j in arcs.reviewer[(arcs.paper == i) & ok]]
        listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        sol.uncovered.append(
            Uncovered(
                paper_ids[i],
                f"its {len(names)} eligible reviewers ({listed}) are needed at full load by "
                f"other papers; it got {int(got[i])} of {per_paper}",
            )
        )
    out: dict[str, list[str]] = {}
    for a in chosen:
        out.setdefault(paper_ids[arcs.paper[a]], []).append(reviewer_ids[arcs.reviewer[a]])
    sol.pairs = {p: sorted(rs, key=lambda r: (-scores[p, r], r)) for p, rs in out.items()}
    return sol
