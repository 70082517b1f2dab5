"""The assignment as an integer program (HiGHS, through scipy), for what a flow cannot hold.

Used for attribute rules (`--require`, `--at-most`) and for `--objective fair`; the default
max-sum path stays the min-cost flow (solver.py). One binary variable per candidate arc.

Lexicographic, each stage fixing what the one before reached:
1. coverage: the most pairs, minus the unmet units of `--require` and `--min-load` (each
   has a slack variable, so an instance that cannot meet them is still solved, and the
   papers short of a rule are named);
2. (fair only) the floor: every fully covered paper's total affinity at least T. The LP
   relaxation gives the bound T* (no assignment, even fractional, beats it). Without
   rules, weighted max-sum flows first lift the weakest paper quickly (`_lift`: the papers
   below T* weigh more in each next flow), a higher start for the search. Stage 3 is
   solved with the floor T* first (at most ATTEMPT_S); when HiGHS finds no assignment by
   then, the floor is bisected between what max-sum reaches and T*, as FairFlow searches
   its target makespan, and the highest floor solved is kept. A MIP maximizing T directly
   found no solution in 300 s on 2,000 x 150 (bench/assign_fairness.py); a floor as a
   constraint of the max-total MIP took seconds, and found assignments where a
   feasibility MIP (zero objective) found none in 60 s (3,000 x 2,000, bench.assign_scale);
3. the largest total affinity subject to stages 1-2.

Very Low bid pairs enter only where the max-sum flow needed them (it used the fewest).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from pipeline.assign.controls import Rule
from pipeline.assign.reviewers import Reviewer
from pipeline.assign.solver import Arcs
from pipeline.errors import InputError

log = logging.getLogger(__name__)

TIME_LIMIT_S = 300.0  # per MIP stage; the best solution found by then is used
MIP_GAP = 1e-4
ATTEMPT_S = 60.0  # per floor tried by the fair objective (no assignment found by then: too high)
SEARCH_STEPS = 6  # bisections between the floor max-sum reaches and the LP bound
# Tries that time out without an answer say nothing; after this many the search stops and
# keeps the best floor it has (at 12,000 x 8,000 every try near the bound timed out).
MAX_TIMEOUTS = 2
LIFT_ROUNDS = 20  # weighted max-sum flows tried before the MIPs (a quick, higher start)
LIFT_STEP = 4.0  # weight added per round to a paper, times its shortfall / the target
FLOOR_TOL = 1e-6
MIN_GAIN = 1e-3  # a floor this close to what is reached already is not worth any total


@dataclass
class FairnessReport:
    """What --objective fair reached: the LP max-min bound and the floor of the assignment."""

    lp_bound: float
    floor: float
    papers_floored: int  # fully covered papers the floor applies to


@dataclass
class ModelResult:
    """The chosen arcs, the fairness figures, and papers short of an attribute rule."""

    chosen: np.ndarray
    fairness: FairnessReport | None = None
    rule_short: dict[int, str] = field(default_factory=dict)


def _incidence(
    rows: np.ndarray, n_rows: int, values: np.ndarray | None = None
) -> sparse.csr_matrix:
    n = len(rows)
    data = np.ones(n) if values is None else values
    return sparse.csr_matrix((data, (rows, np.arange(n))), shape=(n_rows, n))


@dataclass
class ConstrainedModel:
    """The candidate arcs with demands, loads, minimum loads, fixed pairs and attribute rules."""

    arcs: Arcs
    demand: np.ndarray  # what each paper still needs (fixed pairs deducted)
    loads: np.ndarray  # what each reviewer can still take
    min_loads: np.ndarray  # what each reviewer should still take
    rules: Sequence[Rule]
    reviewers: Sequence[Reviewer]
    fixed: list[tuple[int, int]]
    fixed_scores: np.ndarray  # per paper, the score its fixed pairs already give
    allowed_low: np.ndarray | None = None  # mask over arcs: Very Low arcs the flow needed
    penalized: np.ndarray | None = None  # mask over arcs: Very Low bids
    start: np.ndarray | None = None  # mask over arcs: the max-sum flow's assignment
    time_limit: float = TIME_LIMIT_S

    def solve(self, *, fair: bool) -> ModelResult:
        """Solve stage by stage (module docstring); a mask over `arcs` plus the figures."""
        from scipy.optimize import Bounds, LinearConstraint, milp

        arcs = self.arcs
        n_p, n_r = len(self.demand), len(self.loads)
        use = (self.demand[arcs.paper] > 0) & (self.loads[arcs.reviewer] > 0)
        if self.penalized is not None:
            allowed = self.allowed_low if self.allowed_low is not None else False
            use &= ~self.penalized | allowed
        idx = np.flatnonzero(use)
        chosen = np.zeros(len(arcs), dtype=bool)
        if not len(idx):
            return ModelResult(chosen)
        paper, reviewer, score = arcs.paper[idx], arcs.reviewer[idx], arcs.score[idx]
        n = len(idx)
        blocks: list[sparse.csr_matrix] = []
        lower: list[np.ndarray] = []
        upper: list[np.ndarray] = []
        slack_cols: list[sparse.csr_matrix] = []  # per slack-carrying row block: its slacks
        slack_of: list[tuple[str, Rule | None, np.ndarray]] = []  # (kind, rule, row ids)

        a_paper = _incidence(paper, n_p)
        a_rev = _incidence(reviewer, n_r)
        blocks += [a_paper, a_rev]
        lower += [np.full(n_p, -np.inf), np.full(n_r, -np.inf)]
        upper += [self.demand.astype(float), self.loads.astype(float)]
        slack_cols += [sparse.csr_matrix((n_p, 0)), sparse.csr_matrix((n_r, 0))]
        fixed_p = np.asarray([i for i, _ in self.fixed], np.int64)
        fixed_r = np.asarray([j for _, j in self.fixed], np.int64)
        want_min = np.flatnonzero(self.min_loads > 0)
        if len(want_min):
            blocks.append(a_rev[want_min])
            lower.append(self.min_loads[want_min].astype(float))
            upper.append(np.full(len(want_min), np.inf))
            slack_cols.append(sparse.identity(len(want_min), format="csr"))
            slack_of.append(("min-load", None, want_min))
        for rule in self.rules:
            member = rule.members(self.reviewers)
            group = member[reviewer]
            fixed_group = member[fixed_r] if len(fixed_r) else np.zeros(0, np.int64)
            if rule.kind == "at-most":
                sel = np.flatnonzero(group >= 0)
                n_groups = int(member.max(initial=-1)) + 1
                keys = paper[sel] * max(n_groups, 1) + group[sel]
                uniq, rows = np.unique(keys, return_inverse=True)
                blocks.append(
                    sparse.csr_matrix((np.ones(len(sel)), (rows, sel)), shape=(len(uniq), n))
                )
                taken = np.zeros(len(uniq))
                ok = fixed_group >= 0
                if ok.any():
                    fk = fixed_p[ok] * max(n_groups, 1) + fixed_group[ok]
                    pos = np.searchsorted(uniq, fk)
                    hit = (pos < len(uniq)) & (uniq[np.minimum(pos, len(uniq) - 1)] == fk)
                    np.add.at(taken, pos[hit], 1)
                lower.append(np.full(len(uniq), -np.inf))
                upper.append(np.maximum(rule.count - taken, 0))
                slack_cols.append(sparse.csr_matrix((len(uniq), 0)))
            else:
                total_demand = self.demand + np.bincount(fixed_p, minlength=n_p)
                have = np.bincount(fixed_p[fixed_group >= 0], minlength=n_p)
                need = np.minimum(rule.count, total_demand) - have
                rows = np.flatnonzero((need > 0) & (self.demand > 0))
                sel = np.flatnonzero(group >= 0)
                row_of = np.full(n_p, -1, np.int64)
                row_of[rows] = np.arange(len(rows))
                sel = sel[row_of[paper[sel]] >= 0]
                blocks.append(
                    sparse.csr_matrix(
                        (np.ones(len(sel)), (row_of[paper[sel]], sel)), shape=(len(rows), n)
                    )
                )
                lower.append(need[rows].astype(float))
                upper.append(np.full(len(rows), np.inf))
                slack_cols.append(sparse.identity(len(rows), format="csr"))
                slack_of.append(("require", rule, rows))
        n_slack = sum(m.shape[1] for m in slack_cols)
        slack_ub = np.concatenate(
            [lo for (lo, m) in zip(lower, slack_cols, strict=True) if m.shape[1]] or [np.zeros(0)]
        )
        # block-diagonal placement of the slack columns
        placed, at = [], 0
        for m in slack_cols:
            left = sparse.csr_matrix((m.shape[0], at))
            right = sparse.csr_matrix((m.shape[0], n_slack - at - m.shape[1]))
            placed.append(sparse.hstack([left, m, right], format="csr"))
            at += m.shape[1]
        a = sparse.hstack([sparse.vstack(blocks), sparse.vstack(placed)], format="csr")
        lo, up = np.concatenate(lower), np.concatenate(upper)
        n_var = n + n_slack
        integrality = np.concatenate([np.ones(n), np.zeros(n_slack)])
        bounds = Bounds(np.zeros(n_var), np.concatenate([np.ones(n), slack_ub]))
        base = [LinearConstraint(a, lo, up)]
        options = {"time_limit": self.time_limit, "mip_rel_gap": MIP_GAP, "disp": False}

        # 1. coverage minus unmet requirements
        c1 = np.concatenate([-np.ones(n), np.ones(n_slack)])
        if self.start is not None and not self.rules:
            # the max-sum flow already has the most pairs and, among those, the fewest
            # unmet minimum loads: no assignment does better on pairs minus unmet minimums
            on = self.start[idx].astype(float)
            unmet = np.maximum(self.min_loads[want_min] - a_rev[want_min] @ on, 0)
            x1 = np.concatenate([on, unmet])
        else:
            first = milp(
                c1, constraints=base, integrality=integrality, bounds=bounds, options=options
            )
            x1 = _solution(first, "coverage")
        cover = float(-c1 @ x1)
        keep = LinearConstraint(-c1[None, :], cover - 0.5, np.inf)
        constraints = [*base, keep]
        report = None
        c3 = np.concatenate([-score, np.zeros(n_slack)])  # 3. total affinity
        if fair:
            got = np.bincount(paper[x1[:n] > 0.5], minlength=n_p)
            full = np.flatnonzero((got >= self.demand) & (self.demand > 0))
            floor_rows = np.full(n_p, -1, np.int64)
            floor_rows[full] = np.arange(len(full))
            on = floor_rows[paper] >= 0
            a_floor = sparse.csr_matrix(
                (score[on], (floor_rows[paper[on]], np.flatnonzero(on))), shape=(len(full), n)
            )
            base_score = self.fixed_scores[full]
            # variables + T: paper total - T >= -fixed score
            a_t = sparse.hstack(
                [a_floor, sparse.csr_matrix((len(full), n_slack)), -np.ones((len(full), 1))],
                format="csr",
            )
            grow = [
                LinearConstraint(
                    sparse.hstack([c.A, sparse.csr_matrix((c.A.shape[0], 1))], format="csr"),
                    c.lb,
                    c.ub,
                )
                for c in constraints
            ]
            floor_c = LinearConstraint(a_t, -base_score, np.inf)
            c_t = np.zeros(n_var + 1)
            c_t[-1] = -1.0
            t_bounds = Bounds(np.zeros(n_var + 1), np.concatenate([bounds.ub, [np.inf]]))
            bound = _lp_bound(c_t, [*grow, floor_c], t_bounds, self.time_limit)
            a_paper_total = sparse.hstack([a_floor, sparse.csr_matrix((len(full), n_slack))])
            reached = float((a_paper_total @ x1 + base_score).min()) if len(full) else 0.0
            if self.start is not None and not self.rules and len(full):
                # the max-sum flow's assignment (it keeps every rule there is then)
                start = np.concatenate([self.start[idx].astype(float), np.zeros(n_slack)])
                reached = max(reached, float((a_paper_total @ start + base_score).min()))

            def with_floor(value: float) -> LinearConstraint:
                return LinearConstraint(a_paper_total, value - base_score - FLOOR_TOL, np.inf)

            def lowest(x: np.ndarray) -> float:
                return float((a_paper_total @ x + base_score).min()) if len(full) else 0.0

            def attempt(value: float, limit: float) -> np.ndarray | None:
                """The largest total with every paper >= value (best found within `limit`)."""
                res = milp(
                    c3,
                    constraints=[*constraints, with_floor(value)],
                    integrality=integrality,
                    bounds=bounds,
                    options={**options, "time_limit": min(self.time_limit, limit)},
                )
                log.info("fair: floor %.4f of bound %.4f: %s", value, bound, res.message)
                if res.x is None and res.status == 1:  # time out without an answer
                    timeouts.append(value)
                return None if res.x is None else np.asarray(res.x)

            timeouts: list[float] = []
            low, high, found = reached, bound, None
            lifted = None
            if not self.rules and self.start is not None and high - low >= MIN_GAIN:
                lifted = self._lift(paper, reviewer, score, idx, full, base_score, high)
                if lifted is not None:
                    on = lifted.astype(float)
                    unmet = np.maximum(self.min_loads[want_min] - a_rev[want_min] @ on, 0)
                    guess = np.concatenate([on, unmet])
                    if lowest(guess) > low and -c1 @ guess >= cover - 0.5:
                        low, lifted = lowest(guess), guess
                    else:
                        lifted = None
            if high - low >= MIN_GAIN:  # a floor no visible step higher is not worth any total
                found = attempt(high, ATTEMPT_S)
                for _ in range(SEARCH_STEPS if found is None else 0):
                    if high - low < MIN_GAIN or len(timeouts) >= MAX_TIMEOUTS:
                        break
                    mid = (low + high) / 2
                    tried = attempt(mid, ATTEMPT_S)
                    if tried is None:
                        high = mid
                    else:
                        found, low = tried, max(mid, lowest(tried))
            if found is None and (lifted is None or len(timeouts) < MAX_TIMEOUTS):
                found = attempt(low, self.time_limit if lifted is None else ATTEMPT_S)
            x = found
            if x is None:
                x = lifted if lifted is not None else x1
            floor = lowest(x)
            report = FairnessReport(bound, floor, len(full))
        else:
            last = milp(
                c3, constraints=constraints, integrality=integrality, bounds=bounds, options=options
            )
            x = _solution(last, "total affinity")
        chosen[idx] = x[:n] > 0.5
        out = ModelResult(chosen, report)
        slack = x[n:]
        at = 0
        for kind, maybe_rule, rows in slack_of:
            part = slack[at : at + len(rows)]
            at += len(rows)
            if kind != "require" or maybe_rule is None:
                continue
            for r_i, miss in zip(rows, part, strict=True):
                if miss > 0.5:
                    rule = maybe_rule
                    out.rule_short[int(r_i)] = (
                        f"{rule.text} not met: {round(miss)} reviewer(s) with {rule.key}="
                        f"{rule.value} missing (none eligible, or all needed by other papers)"
                    )
        return out

    def _lift(
        self,
        paper: np.ndarray,
        reviewer: np.ndarray,
        score: np.ndarray,
        idx: np.ndarray,
        full: np.ndarray,
        base_score: np.ndarray,
        target: float,
    ) -> np.ndarray | None:
        """A quick floor by flows (Lagrangian weights): papers below `target` weigh more in
        the next max-sum flow, until the weakest stops rising; the best assignment's mask
        over `idx` (None when none beats the start). It gives the bisection a higher start,
        which matters where the MIPs near the bound run out of time."""
        from pipeline.assign.solver import min_cost_flow

        n_p = len(self.demand)
        weight = np.zeros(n_p)
        papers = np.flatnonzero(self.demand > 0)
        sub = Arcs(paper, reviewer, score)
        in_full = np.zeros(n_p, dtype=bool)
        in_full[full] = True
        best, best_key = None, None
        penal = self.penalized[idx] if self.penalized is not None else None
        for _ in range(LIFT_ROUNDS):
            weighted = Arcs(paper, reviewer, score * (1.0 + weight[paper]))
            chosen = min_cost_flow(
                n_p, self.loads, weighted, self.demand, papers, penalized=penal,
                min_loads=self.min_loads if self.min_loads.any() else None,
            )  # fmt: skip
            totals = np.bincount(sub.paper[chosen], weights=sub.score[chosen], minlength=n_p)
            totals[full] += base_score
            weakest = float(totals[in_full].min()) if in_full.any() else 0.0
            key = (weakest, float(sub.score[chosen].sum()))
            if best_key is None or key > best_key:
                best, best_key = chosen, key
            short = np.clip((target - totals) / max(target, 1e-9), 0, None) * in_full
            if not short.any():
                break
            weight += LIFT_STEP * short
        log.info("fair: flows lift the weakest paper to %.4f", best_key[0] if best_key else 0)
        return best


def _lp_bound(c: np.ndarray, constraints: list, bounds: object, time_limit: float) -> float:
    """The LP relaxation's max T (the last variable), by HiGHS' interior point method: on the
    degenerate max-min LP it measured 10x faster than the dual simplex milp() would use."""
    from scipy.optimize import linprog

    rows, rhs = [], []
    for con in constraints:
        a = sparse.csr_matrix(con.A)
        lb, ub = np.broadcast_to(con.lb, a.shape[0]), np.broadcast_to(con.ub, a.shape[0])
        fin_u, fin_l = np.isfinite(ub), np.isfinite(lb)
        rows += [a[fin_u], -a[fin_l]]
        rhs += [ub[fin_u], -lb[fin_l]]
    res = linprog(
        c,
        A_ub=sparse.vstack(rows, format="csr"),
        b_ub=np.concatenate(rhs),
        bounds=np.column_stack([bounds.lb, bounds.ub]),  # type: ignore[attr-defined]
        method="highs-ipm",
        options={"time_limit": time_limit},
    )
    return float(_solution(res, "fairness bound")[-1])


def _solution(res: object, stage: str) -> np.ndarray:
    x = getattr(res, "x", None)
    if x is None:
        raise InputError(
            f"the assignment model found no solution at the {stage} stage "
            f"(HiGHS: {getattr(res, 'message', '')})"
        )
    return np.asarray(x)
