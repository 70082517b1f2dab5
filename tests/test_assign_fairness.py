"""--objective fair: the weakest paper first (exact on small instances), then the total;
the LP max-min bound checked against an independent LP; both objectives print the figures."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from assign_helpers import papers, table
from scipy.optimize import linprog

from pipeline.assign import Reviewer, assign
from pipeline.assign.chair_outputs import chair_lines

P, R, K, LOAD = 4, 5, 2, 2


def _instance(seed: int) -> dict[tuple[str, str], float]:
    rng = random.Random(seed)
    return {
        (f"p{i}", f"r{j}"): rng.choice([0, 0.5, 1, 2, 4, 8]) for i in range(P) for j in range(R)
    }


def _brute(scores) -> tuple[float, float]:
    """(best floor over integral assignments, best total among those reaching it)."""
    per_paper = []
    for i in range(P):
        per_paper.append(
            [
                (c, sum(scores[f"p{i}", f"r{j}"] for j in c))
                for c in itertools.combinations(range(R), K)
            ]
        )
    best: tuple[float, float] | None = None
    for choice in itertools.product(*per_paper):
        used = np.bincount([j for c, _ in choice for j in c], minlength=R)
        if (used > LOAD).any():
            continue
        key = (min(v for _, v in choice), sum(v for _, v in choice))
        best = key if best is None or key > best else best
    assert best is not None
    return best


def _lp_bound(scores) -> float:
    """max T s.t. each paper's sum >= T, K per paper, loads, 0 <= x <= 1 (x then T)."""
    n = P * R
    c = np.zeros(n + 1)
    c[-1] = -1
    a_ub, b_ub, a_eq, b_eq = [], [], [], []
    for i in range(P):
        row = np.zeros(n + 1)
        row[i * R : (i + 1) * R] = [-scores[f"p{i}", f"r{j}"] for j in range(R)]
        row[-1] = 1
        a_ub.append(row)
        b_ub.append(0)
        eq = np.zeros(n + 1)
        eq[i * R : (i + 1) * R] = 1
        a_eq.append(eq)
        b_eq.append(K)
    for j in range(R):
        row = np.zeros(n + 1)
        row[j:n:R] = 1
        a_ub.append(row)
        b_ub.append(LOAD)
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=[(0, 1)] * n + [(0, None)])
    return -res.fun


def _run(scores, objective):
    rs = [Reviewer(id=f"r{j}") for j in range(R)]
    return assign(
        papers(*[f"p{i}" for i in range(P)]),
        rs,
        per_paper=K,
        max_load=LOAD,
        scoring=table(scores),
        objective=objective,
    )


@pytest.mark.parametrize("seed", range(8))
def test_fair_reaches_the_best_floor_then_the_best_total_with_it(seed):
    scores = _instance(seed)
    floor, total = _brute(scores)
    fair = _run(scores, "fair")
    totals = fair.paper_totals()
    assert min(totals.values()) == pytest.approx(floor)
    assert fair.total_affinity == pytest.approx(total)
    assert fair.fairness.floor == pytest.approx(floor, abs=1e-6)
    assert fair.fairness.lp_bound == pytest.approx(_lp_bound(scores), abs=1e-6)
    assert fair.fairness.lp_bound >= floor - 1e-9


def test_fair_lifts_the_weakest_paper_max_sum_neglects():
    lifted = 0
    for seed in range(8):
        scores = _instance(seed)
        plain, fair = _run(scores, "max-sum"), _run(scores, "fair")
        weakest = min(plain.paper_totals().values()), min(fair.paper_totals().values())
        assert weakest[1] >= weakest[0]
        assert fair.total_affinity <= plain.total_affinity + 1e-9
        lifted += weakest[1] > weakest[0]
    assert lifted >= 2  # the instances do show the difference


def test_both_objectives_print_the_weakest_paper_percentiles_and_total():
    scores = _instance(3)
    for objective in ("max-sum", "fair"):
        lines = chair_lines(_run(scores, objective))
        assert lines[0].startswith(f"{objective}: weakest paper ")
        assert (
            "1st percentile" in lines[0] and "10th percentile" in lines[0] and "total" in lines[0]
        )
    assert any("LP max-min bound" in line for line in chair_lines(_run(scores, "fair")))


def test_fair_keeps_minimum_loads_and_rules():
    from pipeline.assign import Controls, parse_rule

    scores = _instance(5)
    rs = [Reviewer(id=f"r{j}", attributes={"team": "a" if j < 2 else "b"}) for j in range(R)]
    ps = papers(*[f"p{i}" for i in range(P)])
    for controls in (Controls(min_load=1), Controls(rules=(parse_rule("at-most", "team:1"),))):
        result = assign(
            ps, rs, per_paper=K, max_load=LOAD, scoring=table(scores), objective="fair",
            controls=controls,
        )  # fmt: skip
        assert not result.uncovered and result.fairness is not None
        if controls.min_load:
            assert min(result.loads().values()) >= 1
        else:
            team = {r.id: r.attribute("team") for r in rs}
            for p in result.paper_totals():
                mine = [team[r] for q, r, _ in result.pairs if q == p]
                assert sorted(mine) == ["a", "b"]
