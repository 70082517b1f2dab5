"""The chair's controls: demands, minimum loads, locked / forbidden / kept pairs, alternates,
attribute rules, and short papers that keep what they could get."""

from __future__ import annotations

import csv

import pytest
from assign_helpers import pairs, papers, table
from click.testing import CliRunner

from pipeline.assign import Controls, Reviewer, assign, parse_rule
from pipeline.assign.controls import read_demand
from pipeline.assign.scores import Row
from pipeline.errors import ConfigError, InputError


def _pairs(rows: list[tuple[str, str]], where: str = "f") -> tuple[Row, ...]:
    return tuple(Row(p, r, "", f"{where}:{n}") for n, (p, r) in enumerate(rows, 1))


def _count(result) -> dict[str, int]:
    out: dict[str, int] = {}
    for p, _, _ in result.pairs:
        out[p] = out.get(p, 0) + 1
    return out


def test_a_paper_that_loses_the_competition_keeps_the_reviewers_it_could_get(tmp_path):
    # Loads 1: p1 may only have a and b, p0 only a and c; a is worth more on p1, so p1 gets
    # a and b and p0 gets c: 1 of its 2 reviewers, never 0.
    scores = {("p0", "a"): 1.0, ("p0", "c"): 1.0, ("p1", "a"): 5.0, ("p1", "b"): 1.0}
    no = {"a": (), "b": ("p0",), "c": ("p1",), "d": ("p0", "p1")}  # conflicts
    rs = [
        Reviewer(id=x, max_load=5 if x == "d" else 1, conflicts=frozenset(c)) for x, c in no.items()
    ]
    result = assign(papers("p0", "p1"), rs, per_paper=2, max_load=1, scoring=table(scores))
    assert pairs(result) == {("p1", "a"), ("p1", "b"), ("p0", "c")}
    (short,) = result.uncovered
    assert short.paper_id == "p0" and "it got 1 of 2" in short.reason
    assert result.fully_covered() == 1
    from pipeline.assign.chair_outputs import write_short_csv

    rows = list(csv.DictReader(write_short_csv(result, tmp_path / "short.csv").open()))
    assert [(r["paper_id"], r["demand"], r["assigned"]) for r in rows] == [("p0", "2", "1")]


def test_per_paper_demand_from_a_file(tmp_path):
    path = tmp_path / "demand.csv"
    path.write_text("paper_id,demand\n#1,3\np2,0\n")
    rows = read_demand(path)
    result = assign(
        papers("p0", "p1", "p2"),
        [Reviewer(id=f"r{j}") for j in range(4)],
        per_paper=1,
        max_load=3,
        controls=Controls(demand=rows),
    )
    assert _count(result) == {"p0": 3, "p1": 1}
    assert result.demand == {"p0": 3, "p1": 1, "p2": 0} and not result.uncovered
    path.write_text("nope,2\n")
    with pytest.raises(InputError, match=r"unknown paper id\(s\): 'nope' \(demand.csv:1\)"):
        assign(
            papers("p0"),
            [Reviewer(id="r")],
            per_paper=1,
            max_load=1,
            controls=Controls(demand=read_demand(path)),
        )
    path.write_text("p0,two\n")
    with pytest.raises(InputError, match="demand.csv:1: expected paper_id,demand"):
        read_demand(path)


def test_minimum_load_is_met_at_the_least_cost():
    # star is best everywhere; with --min-load 1, r1 takes the paper where star's lead is smallest.
    scores = {(p, "star"): s for p, s in [("p0", 5), ("p1", 4), ("p2", 3), ("p3", 2.5)]}
    scores.update({("p0", "r1"): 0, ("p1", "r1"): 0, ("p2", "r1"): 0, ("p3", "r1"): 2})
    rs = [Reviewer(id="star"), Reviewer(id="r1")]
    free = assign(
        papers("p0", "p1", "p2", "p3"), rs, per_paper=1, max_load=4, scoring=table(scores)
    )
    assert free.loads() == {"star": 4, "r1": 0}
    floor = assign(
        papers("p0", "p1", "p2", "p3"),
        rs,
        per_paper=1,
        max_load=4,
        scoring=table(scores),
        controls=Controls(min_load=1),
    )
    assert floor.loads() == {"star": 3, "r1": 1} and ("p3", "r1") in pairs(floor)
    # a reviewer's own min_load (reviewers.yaml) sets theirs, over --min-load
    own = [Reviewer(id="star"), Reviewer(id="r1", min_load=2)]
    mine = assign(
        papers("p0", "p1", "p2", "p3"), own, per_paper=1, max_load=4, scoring=table(scores)
    )
    assert mine.loads() == {"star": 2, "r1": 2} and {("p3", "r1"), ("p2", "r1")} <= pairs(mine)
    zero = [Reviewer(id="star"), Reviewer(id="r1", min_load=0)]
    kept_free = assign(
        papers("p0", "p1", "p2", "p3"),
        zero,
        per_paper=1,
        max_load=4,
        scoring=table(scores),
        controls=Controls(min_load=1),
    )
    assert kept_free.loads() == {"star": 4, "r1": 0}


def test_locked_pairs_are_assigned_forbidden_ones_never():
    scores = {("p0", "r0"): 5, ("p0", "r1"): 1, ("p1", "r0"): 5, ("p1", "r1"): 1}
    rs = [Reviewer(id="r0", max_load=2), Reviewer(id="r1", max_load=2)]
    controls = Controls(locked=_pairs([("p0", "r1")]), forbidden=_pairs([("p1", "r0")]))
    result = assign(
        papers("p0", "p1"), rs, per_paper=1, max_load=2, scoring=table(scores), controls=controls
    )
    assert pairs(result) == {("p0", "r1"), ("p1", "r1")}
    conflicted = [Reviewer(id="r0", conflicts=frozenset({"p0"})), Reviewer(id="r1")]
    with pytest.raises(
        InputError, match=r"1 locked pair\(s\) are not allowed: p0,r0 \(f:1: conflict"
    ):
        assign(
            papers("p0"),
            conflicted,
            per_paper=1,
            max_load=1,
            controls=Controls(locked=_pairs([("p0", "r0")])),
        )
    with pytest.raises(InputError, match=r"exceed the load limit of 1 reviewer\(s\): r1 \(2 > 1\)"):
        assign(
            papers("p0", "p1"),
            rs[:1] + [Reviewer(id="r1", max_load=1)],
            per_paper=1,
            max_load=1,
            controls=Controls(locked=_pairs([("p0", "r1"), ("p1", "r1")])),
        )


def test_keep_re_solves_after_a_reviewer_drops_out_keeping_every_other_pair():
    ids = [f"p{i}" for i in range(6)]
    rs = [Reviewer(id=f"r{j}", tags=(f"t{j % 3}",)) for j in range(6)]
    from pipeline.rundir import Paper

    ps = [Paper(id=p, title=None, abstract="", tags=(f"t{i % 3}",)) for i, p in enumerate(ids)]
    first = assign(ps, rs, per_paper=2, max_load=2)
    before = pairs(first)
    gone = "r0"
    keep = _pairs(sorted(before), "assignments.csv")
    again = assign(
        ps, [r for r in rs if r.id != gone], per_paper=2, max_load=3, controls=Controls(keep=keep)
    )
    after = pairs(again)
    assert {pr for pr in before if pr[1] != gone} <= after  # every other pair kept
    assert not again.uncovered and all(n == 2 for n in _count(again).values())
    assert again.kept == len(before) - sum(1 for _, r in before if r == gone)
    assert len(again.dropped) == 2 and all(
        "the reviewer is not in the pool" in d for d in again.dropped
    )


def test_alternates_are_the_next_eligible_reviewers_by_score():
    scores = {("p0", f"r{j}"): float(10 - j) for j in range(6)}
    rs = [
        Reviewer(id=f"r{j}", conflicts=frozenset({"p0"}) if j == 2 else frozenset())
        for j in range(6)
    ]
    result = assign(
        papers("p0"),
        rs,
        per_paper=1,
        max_load=1,
        scoring=table(scores),
        controls=Controls(alternates=3),
    )
    assert pairs(result) == {("p0", "r0")}
    assert [(a.rank, a.reviewer) for a in result.alternates] == [(1, "r1"), (2, "r3"), (3, "r4")]
    assert all(a.load_left == 1 for a in result.alternates)


def test_require_at_least_one_senior_per_paper():
    # juniors score higher everywhere; seniors s0, s1 (load 1 each) must go one per paper.
    rs = [Reviewer(id=f"j{k}", attributes={"seniority": "junior"}) for k in range(3)]
    rs += [Reviewer(id=f"s{k}", max_load=1, attributes={"Seniority": "Senior"}) for k in range(2)]
    scores = {(p, r.id): (5.0 if r.id.startswith("j") else 1.0) for p in ("p0", "p1") for r in rs}
    plain = assign(papers("p0", "p1"), rs, per_paper=2, max_load=2, scoring=table(scores))
    assert not {r for _, r in pairs(plain)} & {"s0", "s1"}
    rule = parse_rule("require", "seniority=senior:1")
    ruled = assign(
        papers("p0", "p1"),
        rs,
        per_paper=2,
        max_load=2,
        scoring=table(scores),
        controls=Controls(rules=(rule,)),
    )
    seniors = sorted(p for p, r in pairs(ruled) if r.startswith("s"))
    assert seniors == ["p0", "p1"] and all(n == 2 for n in _count(ruled).values())
    assert ruled.total_affinity == pytest.approx(2 * (5 + 1))


def test_a_requirement_that_cannot_be_met_is_listed_and_the_rest_assigned():
    rs = [
        Reviewer(id="j0"),
        Reviewer(id="j1"),
        Reviewer(id="s0", max_load=1, attributes={"seniority": "senior"}),
    ]
    rule = parse_rule("require", "seniority=senior")
    result = assign(
        papers("p0", "p1"), rs, per_paper=2, max_load=2, controls=Controls(rules=(rule,))
    )
    assert all(n == 2 for n in _count(result).values())
    (short,) = result.uncovered
    assert "--require seniority=senior:1 not met" in short.reason


def test_at_most_one_reviewer_per_institution_per_paper():
    rs = [Reviewer(id=f"m{k}", attributes={"institution": "MIT"}) for k in range(2)]
    rs += [Reviewer(id=f"o{k}", attributes={"institution": f"U{k}"}) for k in range(2)]
    scores = {(p, r.id): (5.0 if r.id.startswith("m") else 1.0) for p in ("p0", "p1") for r in rs}
    plain = assign(papers("p0", "p1"), rs, per_paper=2, max_load=2, scoring=table(scores))
    assert all({r for q, r in pairs(plain) if q == p} == {"m0", "m1"} for p in ("p0", "p1"))
    rule = parse_rule("at-most", "institution:1")
    ruled = assign(
        papers("p0", "p1"),
        rs,
        per_paper=2,
        max_load=2,
        scoring=table(scores),
        controls=Controls(rules=(rule,)),
    )
    for p in ("p0", "p1"):
        mine = {r for q, r in pairs(ruled) if q == p}
        assert len(mine) == 2 and len(mine & {"m0", "m1"}) == 1


def test_rule_syntax():
    assert parse_rule("require", "seniority=senior:2").count == 2
    assert parse_rule("at-most", "country=FR").value == "FR"
    assert parse_rule("at-most", "institution").value is None
    for kind, text in [
        ("require", "seniority"),
        ("require", "a=b:x"),
        ("at-most", "=x"),
        ("require", "a=b:0"),
    ]:
        with pytest.raises(ConfigError):
            parse_rule(kind, text)


def test_reviewer_attributes_are_single_strings():
    assert Reviewer(id="a", attributes={"year": 2020}).attribute("YEAR") == "2020"
    with pytest.raises(ValueError, match="a single value"):
        Reviewer(id="a", attributes={"x": [1, 2]})


def test_cli_writes_short_and_alternates_and_reads_the_chair_files(tmp_path):
    import shutil
    from pathlib import Path

    from pipeline.cli import main

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parent / "data" / "run_small", run)
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text(
        "reviewers:\n"
        + "".join(
            f"  - {{id: r{j}, attributes: {{seniority: {'senior' if j in (0, 5) else 'junior'}}}}}\n"
            for j in range(6)
        )
    )
    (tmp_path / "demand.csv").write_text("97240d0de36ffdb0,1\n")
    (tmp_path / "tpms.csv").write_text("97240d0de36ffdb0,r5,0.9\n")
    (tmp_path / "bids.csv").write_text("97240d0de36ffdb0,r4,High\n")
    args = ["assign", str(run), str(reviewers), "--per-paper", "2", "--max-load", "3"]
    args += ["--demand", str(tmp_path / "demand.csv"), "--alternates", "2", "--min-load", "1"]
    args += ["--scores", str(tmp_path / "tpms.csv"), "--bids", str(tmp_path / "bids.csv")]
    args += ["--weights", "tpms=10,bids=2", "--require", "seniority=senior:1"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "score = 1 x built-in affinity + 10 x tpms + 2 x bid" in res.stdout
    assert "max-sum: weakest paper" in res.stdout and "10th percentile" in res.stdout
    rows = list(csv.DictReader((run / "assignments.csv").open(encoding="utf-8")))
    mine = [r for r in rows if r["paper_id"] == "97240d0de36ffdb0"]
    assert [r["reviewer_id"] for r in mine] == ["r5"] and "tpms 0.9" in mine[0]["reason"]
    alt = list(csv.DictReader((run / "alternates.csv").open(encoding="utf-8")))
    assert len(alt) == 2 * 6 and {a["rank"] for a in alt} == {"1", "2"}
    assert list(csv.DictReader((run / "short.csv").open(encoding="utf-8"))) == []
    seniors = {}
    for r in rows:
        seniors.setdefault(r["paper_id"], 0)
        seniors[r["paper_id"]] += r["reviewer_id"] in {"r0", "r5"}
    assert len(seniors) == 6 and all(seniors.values())


def test_a_required_reviewer_outside_the_top_candidates_is_still_found():
    # with --top-k 1 every paper's only candidate is a junior; the seniors come in anyway
    rs = [Reviewer(id=f"j{k}", attributes={"seniority": "junior"}) for k in range(3)]
    rs += [Reviewer(id=f"s{k}", attributes={"seniority": "senior"}) for k in range(2)]
    scores = {(p, r.id): (5.0 if r.id.startswith("j") else 1.0) for p in ("p0", "p1") for r in rs}
    rule = parse_rule("require", "seniority=senior")
    result = assign(
        papers("p0", "p1"), rs, per_paper=1, max_load=2, scoring=table(scores), top_k=1,
        controls=Controls(rules=(rule,)),
    )  # fmt: skip
    assert result.pruning.top_k == 1 and not result.uncovered
    assert {r for _, r in pairs(result)} <= {"s0", "s1"} and len(pairs(result)) == 2
