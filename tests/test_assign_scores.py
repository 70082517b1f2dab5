"""Outside scores, bids and weights: read, resolved by any paper id, mixed, never dropped."""

from __future__ import annotations

import pytest
from assign_helpers import pairs, papers, table

from pipeline.assign import Reviewer, assign
from pipeline.assign.scores import (
    Row,
    Scoring,
    load_bids,
    load_scores,
    parse_bid_scores,
    parse_weights,
)
from pipeline.errors import ConfigError, InputError
from pipeline.rundir import Paper

# p0-r0 + p1-r1 = 1.2 beats p0-r1 + p1-r0 = 0.9 (loads 1)
SCORES = {("p0", "r0"): 1.0, ("p0", "r1"): 0.0, ("p1", "r0"): 0.9, ("p1", "r1"): 0.2}


def test_a_score_file_decides_the_assignment_and_names_itself_in_the_reason(tmp_path):
    path = tmp_path / "tpms.csv"
    path.write_text(
        "paper_id,reviewer_id,score\n" + "".join(f"{p},{r},{s}\n" for (p, r), s in SCORES.items())
    )
    source = load_scores(path)
    assert source.name == "tpms" and len(source.rows) == 4
    scoring = Scoring(sources=(source,), weights={"builtin": 0})
    result = assign(
        papers("p0", "p1"),
        [Reviewer(id="r0"), Reviewer(id="r1")],
        per_paper=1,
        max_load=1,
        scoring=scoring,
    )
    assert pairs(result) == {("p0", "r0"), ("p1", "r1")}
    assert result.total_affinity == pytest.approx(1.2)
    reasons = {(p, r): m.reason() for p, r, m in result.pairs}
    assert reasons["p0", "r0"] == "tpms 1"
    assert result.scoring == "score = 1 x tpms"


def test_weights_mix_builtin_and_outside_scores():
    # built-in affinity (shared tags) prefers p0-r1 and p1-r0; the table prefers the other way
    ps = [
        Paper(id=p, title=None, abstract="", tags=("t",) if p == "p0" else ("u",))
        for p in ("p0", "p1")
    ]
    rs = [Reviewer(id="r0", tags=("u",)), Reviewer(id="r1", tags=("t",))]
    rows = table(SCORES).sources
    only_builtin = assign(
        ps, rs, per_paper=1, max_load=1, scoring=Scoring(sources=rows, weights={"table": 0})
    )
    assert pairs(only_builtin) == {("p0", "r1"), ("p1", "r0")}
    heavy = Scoring(sources=rows, weights={"table": 100})
    mixed = assign(ps, rs, per_paper=1, max_load=1, scoring=heavy)
    assert pairs(mixed) == {("p0", "r0"), ("p1", "r1")}
    m = next(m for p, r, m in mixed.pairs if (p, r) == ("p0", "r0"))
    assert m.affinity == pytest.approx(100.0)  # 1 x built-in 0 + 100 x 1
    assert m.reason() == "built-in 0: no matching expertise; table 1"


def test_papers_are_named_by_user_id_number_or_hash_in_any_case():
    ps = [
        Paper(id="aaaaaaaaaaaaaaaa", title=None, abstract="", paper_ids=("rJxY",), number="7"),
        Paper(id="bbbbbbbbbbbbbbbb", title=None, abstract="", number="8"),
        Paper(id="cccccccccccccccc", title=None, abstract="", number="9"),
    ]
    rows = (
        Row("RJXY", "R0", "5", "f:1"),
        Row("#8", "r0", "4", "f:2"),
        Row("CCCCCCCCCCCCCCCC", "r0 ", "3", "f:3"),
    )
    from pipeline.assign.scores import ScoreSource

    scoring = Scoring(sources=(ScoreSource("f", rows),), weights={"builtin": 0})
    result = assign(
        ps,
        [Reviewer(id="r0", max_load=3), Reviewer(id="r1")],
        per_paper=1,
        max_load=3,
        scoring=scoring,
    )
    got = {p: m.affinity for p, r, m in result.pairs if r == "r0"}
    assert got == {"aaaaaaaaaaaaaaaa": 5, "bbbbbbbbbbbbbbbb": 4, "cccccccccccccccc": 3}


def test_unknown_ids_are_an_error_listing_them_never_dropped():
    scores = dict(SCORES)
    scores.update({(f"ghost{n}", "r0"): 1.0 for n in range(12)})
    scores[("p0", "nobody")] = 1.0
    rows = table(scores).sources[0].rows
    from pipeline.assign.scores import ScoreSource

    scoring = Scoring(sources=(ScoreSource("table", rows),), weights={"builtin": 0})
    with pytest.raises(InputError) as exc:
        assign(
            papers("p0", "p1"),
            [Reviewer(id="r0"), Reviewer(id="r1")],
            per_paper=1,
            max_load=1,
            scoring=scoring,
        )
    text = str(exc.value)
    assert "12 unknown paper id(s): 'ghost0' (table:4)" in text and "... and 2 more" in text
    assert "1 unknown reviewer id(s): 'nobody'" in text


def test_bad_files_and_flags_are_clear_errors(tmp_path):
    bad = tmp_path / "s.csv"
    bad.write_text("p0,r0,high\n")
    with pytest.raises(InputError, match=r"s.csv:1: score 'high' is not a finite number"):
        load_scores(bad)
    bad.write_text("p0,r0,Maybe\n")
    with pytest.raises(InputError, match="unknown bid 'Maybe'"):
        load_bids(bad)
    with pytest.raises(ConfigError, match="expected NAME=WEIGHT"):
        parse_weights("builtin")
    with pytest.raises(ConfigError, match="--weights names no source: tmps"):
        assign(
            papers("p0"),
            [Reviewer(id="r0")],
            per_paper=1,
            max_load=1,
            scoring=table({("p0", "r0"): 1}, weights={"tmps": 2}),
        )
    with pytest.raises(ConfigError, match="LABEL=SCORE"):
        parse_bid_scores("Great=2")
    assert parse_bid_scores("very high=3")["Very High"] == 3 and parse_bid_scores("")["Low"] == -0.5


def _bids(rows: dict[tuple[str, str], str]) -> tuple[Row, ...]:
    return tuple(Row(p, r, v, f"bids:{n}") for n, ((p, r), v) in enumerate(rows.items()))


def test_bids_become_scores_by_the_label_map(tmp_path):
    path = tmp_path / "bids.csv"
    path.write_text("p0,r0,very high\np0,r1,Low\n")
    bids = load_bids(path)
    assert [b.value for b in bids] == ["Very High", "Low"]
    ps, rs = papers("p0"), [Reviewer(id="r0"), Reviewer(id="r1")]
    result = assign(
        ps, rs, per_paper=1, max_load=1, scoring=Scoring(bids=bids, weights={"builtin": 0})
    )
    assert pairs(result) == {("p0", "r0")} and result.pairs[0][2].affinity == 1.0
    flipped = Scoring(
        bids=bids, weights={"builtin": 0}, bid_scores=parse_bid_scores("Very High=-2,Low=1")
    )
    assert pairs(assign(ps, rs, per_paper=1, max_load=1, scoring=flipped)) == {("p0", "r1")}


def test_a_very_low_bid_is_never_assigned_while_anything_else_is_feasible():
    # r0 is by far the best for p0 on scores, but bid Very Low; r1 (score 0) is assigned.
    scores = {("p0", "r0"): 50.0, ("p0", "r1"): 0.0, ("p1", "r0"): 0.0, ("p1", "r1"): 0.0}
    scoring = table(scores, bids=_bids({("p0", "r0"): "Very Low"}))
    rs = [Reviewer(id="r0", max_load=2), Reviewer(id="r1", max_load=2)]
    result = assign(papers("p0", "p1"), rs, per_paper=1, max_load=2, scoring=scoring, top_k=1)
    assert ("p0", "r0") not in pairs(result) and not result.forced_very_low()
    assert result.pruning.rounds > 1  # top-1 held only the Very Low pair: widened


def test_a_very_low_pair_needed_for_feasibility_is_assigned_and_reported():
    scores = {("p0", "r0"): 1.0, ("p0", "r1"): 1.0}
    scoring = table(scores, bids=_bids({("p0", "r0"): "Very Low"}))
    result = assign(
        papers("p0"),
        [Reviewer(id="r0"), Reviewer(id="r1")],
        per_paper=2,
        max_load=1,
        scoring=scoring,
    )
    assert pairs(result) == {("p0", "r0"), ("p0", "r1")}
    assert result.forced_very_low() == [("p0", "r0")]
    reason = next(m.reason() for p, r, m in result.pairs if r == "r0")
    assert "bid: Very Low" in reason and "no feasible assignment avoids it" in reason
    from pipeline.assign.chair_outputs import chair_lines

    assert any("1 pair(s) with a Very Low bid assigned" in line for line in chair_lines(result))
