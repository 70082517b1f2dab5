"""The 95% intervals that eval reports beside precision and recall, and pooled tags gold files."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.evaluation.claims_eval import score_claims
from pipeline.evaluation.intervals import bootstrap_rates, clopper_pearson, interval95
from pipeline.evaluation.tags_eval import score_tags
from pipeline.evaluation.tasks import markdown

DATA = Path(__file__).parent / "data"


def test_clopper_pearson_matches_closed_forms():
    lo, hi = clopper_pearson(60, 60)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 60), abs=1e-9)
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10), abs=1e-9)
    lo, hi = clopper_pearson(5, 10)
    assert lo == pytest.approx(1 - hi, abs=1e-9) and 0.18 < lo < 0.19


def test_intervals_contain_the_share_and_narrow_with_more_data():
    for total in (1, 3, 17, 60):
        for hits in range(total + 1):
            low, high = interval95(hits, total)
            assert 0.0 <= low <= hits / total <= high <= 1.0
    narrow, wide = interval95(270, 300), interval95(27, 30)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


def test_no_interval_without_data_and_impossible_counts_are_refused():
    assert interval95(0, 0) is None
    with pytest.raises(ValueError):
        clopper_pearson(4, 3)
    with pytest.raises(ValueError):
        clopper_pearson(-1, 3)


def _claim(evidence, value=None):
    kind = "qualitative" if value is None else "quantitative"
    return {"kind": kind, "evidence": evidence, "value": value}


def test_claim_scores_carry_intervals_of_their_own_counts():
    abstract = "We reach 91.2% accuracy. It is fast. Our method is simple."
    gold = {"a": [_claim("We reach 91.2% accuracy", "91.2"), _claim("It is fast")]}
    predicted = {"a": [_claim("We reach 91.2% accuracy", "91.2"), _claim("Our method is simple")]}
    s = score_claims(predicted, gold, abstracts={"a": abstract})
    assert (s["tp"], s["fp"], s["fn"]) == (1, 1, 1)
    assert s["precision_ci95"] == interval95(1, 2) and s["recall_ci95"] == interval95(1, 2)
    quant = s["by_kind"]["quantitative"]
    assert quant["precision_ci95"] == interval95(1, 1) and quant["recall_ci95"] == interval95(1, 1)
    qual = s["by_kind"]["qualitative"]
    assert qual["precision_ci95"] == interval95(0, 1) and qual["recall_ci95"] == interval95(0, 1)


def test_tag_scores_carry_intervals_and_markdown_prints_them():
    gold = {"a": {"abstract": "x", "tags": ["pruning", "efficiency"], "acceptable": []}}
    s = score_tags({"a": ["pruning", "fairness", "efficiency", "privacy"]}, gold)
    assert s["precision_ci95"] == interval95(2, 4) and s["recall_ci95"] == interval95(2, 2)
    result = {"task": "tags", "abstracts": 1, "system": "offline (x)", "scores": s}
    text = markdown(result)
    low, high = interval95(2, 4)
    assert f"50.0% [{100 * low:.1f}, {100 * high:.1f}]" in text and "Clopper-Pearson" in text


def _eval_tags(tmp_path, *paths):
    args = ["eval", "tags", *map(str, paths), "--out", str(tmp_path / "ev")]
    args += ["--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_eval_tags_pools_several_gold_files(tmp_path):
    one, two = DATA / "tags_gold_train.jsonl", DATA / "tags_gold_train_more.jsonl"
    result = _eval_tags(tmp_path, one, two)
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "ev" / "eval.json").read_text())
    sizes = [len(p.read_text().splitlines()) for p in (one, two)]
    assert data["abstracts"] == sum(sizes) and data["data"] == [str(one), str(two)]
    s = data["scores"]
    assert s["precision_ci95"][0] <= s["precision"] <= s["precision_ci95"][1]
    assert "[" in result.output and "| precision | recall |" in result.output


def test_eval_tags_refuses_an_abstract_in_two_gold_files(tmp_path):
    path = DATA / "tags_gold_train.jsonl"
    result = CliRunner().invoke(
        main, ["eval", "tags", str(path), str(path), "--out", str(tmp_path / "ev"), "--no-progress"]
    )
    assert result.exit_code == 2 and "already in an earlier gold file" in result.stderr


def test_bootstrap_over_abstracts_is_seeded_and_brackets_the_micro_rate():
    counts = {f"a{i}": {"hit": i % 3, "of": 2} for i in range(30)}
    rates = {"share": lambda c: (c["hit"], c["of"])}
    first = bootstrap_rates(counts, rates, 500, seed=7)
    assert first == bootstrap_rates(counts, rates, 500, seed=7)
    low, high = first["share"]
    point = sum(c["hit"] for c in counts.values()) / sum(c["of"] for c in counts.values())
    assert low < point < high
    # All hits: every resample is 100%, so the bootstrap collapses to a point.
    full = {k: {"hit": 2, "of": 2} for k in counts}
    assert bootstrap_rates(full, rates, 100, seed=1)["share"] == (1.0, 1.0)
    assert bootstrap_rates(counts, rates, 0, seed=1) == {}


def test_exact_interval_holds_for_gold_sets_of_thousands():
    # comb(n, i) as a float overflows past n ~ 1,000: a 2,000-tag gold set must still score.
    low, high = interval95(1900, 2000)
    half = 1.96 * (0.95 * 0.05 / 2000) ** 0.5  # the normal approximation is good at this size
    assert low == pytest.approx(0.95 - half, abs=0.003)
    assert high == pytest.approx(0.95 + half, abs=0.003)
    assert interval95(0, 5000)[0] == 0.0 and interval95(5000, 5000)[1] == 1.0


def test_binomial_cdf_equals_the_exact_sum_on_small_sets():
    import math

    from pipeline.evaluation.intervals import _binom_cdf

    for n in (1, 7, 60):
        for k in range(n + 1):
            for p in (0.02, 0.5, 0.9):
                exact = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))
                assert _binom_cdf(k, n, p) == pytest.approx(exact, abs=1e-12)
