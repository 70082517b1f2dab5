"""The 95% intervals that eval reports beside precision and recall, and pooled tags gold files."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.evaluation.claims_eval import score_claims
from pipeline.evaluation.intervals import wilson
from pipeline.evaluation.tags_eval import score_tags
from pipeline.evaluation.tasks import markdown

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("hits", "total", "low", "high"),
    [
        (5, 10, 0.2366, 0.7634),  # the classic 5-of-10 example
        (51, 57, 0.7888, 0.9509),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 1, 0.2065, 1.0),
    ],
)
def test_wilson_matches_known_values(hits, total, low, high):
    got = wilson(hits, total)
    assert got is not None
    assert got[0] == pytest.approx(low, abs=1e-4) and got[1] == pytest.approx(high, abs=1e-4)


def test_wilson_contains_the_share_and_narrows_with_more_data():
    for total in (3, 17, 60, 400):
        for hits in range(total + 1):
            low, high = wilson(hits, total)
            assert 0.0 <= low <= hits / total <= high <= 1.0
    assert wilson(90, 100)[1] - wilson(90, 100)[0] > wilson(900, 1000)[1] - wilson(900, 1000)[0]


def test_wilson_has_no_interval_without_data_and_rejects_impossible_counts():
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(4, 3)
    with pytest.raises(ValueError):
        wilson(-1, 3)


def _claim(evidence, value=None):
    kind = "qualitative" if value is None else "quantitative"
    return {"kind": kind, "evidence": evidence, "value": value}


def test_claim_scores_carry_intervals_of_their_own_counts():
    abstract = "We reach 91.2% accuracy. It is fast. Our method is simple."
    gold = {"a": [_claim("We reach 91.2% accuracy", "91.2"), _claim("It is fast")]}
    predicted = {"a": [_claim("We reach 91.2% accuracy", "91.2"), _claim("Our method is simple")]}
    s = score_claims(predicted, gold, abstracts={"a": abstract})
    assert (s["tp"], s["fp"], s["fn"]) == (1, 1, 1)
    assert s["precision_ci95"] == wilson(1, 2) and s["recall_ci95"] == wilson(1, 2)
    quant = s["by_kind"]["quantitative"]
    assert quant["precision_ci95"] == wilson(1, 1) and quant["recall_ci95"] == wilson(1, 1)
    qual = s["by_kind"]["qualitative"]
    assert qual["precision_ci95"] == wilson(0, 1) and qual["recall_ci95"] == wilson(0, 1)


def test_tag_scores_carry_intervals_and_markdown_prints_them():
    gold = {"a": {"abstract": "x", "tags": ["pruning", "efficiency"], "acceptable": []}}
    s = score_tags({"a": ["pruning", "fairness", "efficiency", "privacy"]}, gold)
    assert s["precision_ci95"] == wilson(2, 4) and s["recall_ci95"] == wilson(2, 2)
    result = {"task": "tags", "abstracts": 1, "system": "offline (x)", "scores": s}
    text = markdown(result)
    low, high = wilson(2, 4)
    assert f"50.0% [{100 * low:.1f}, {100 * high:.1f}]" in text and "Wilson" in text


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
