"""Claim scoring against gold: matching rule, counts, P/R/F1, and the shipped gold file itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.evaluation.claims_eval import (
    gold_problems,
    load_gold,
    load_gold_abstracts,
    match_claims,
    read_gold,
    score_claims,
)
from pipeline.text import find_span, text_hash

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "tests" / "data" / "claims_gold.jsonl"
EXAMPLES = ROOT / "examples" / "iclr2026"

ABSTRACT = (
    "We propose Foo, a sparse probe. Foo reaches 91.2% accuracy on ImageNet. "
    "It also outperforms Bar on COCO."
)
ACC = "Foo reaches 91.2% accuracy on ImageNet"
OUT = "It also outperforms Bar on COCO"


def claim(evidence: str, value: str | None = None, kind: str | None = None) -> dict:
    kind = kind or ("quantitative" if value else "qualitative")
    return {"kind": kind, "value": value, "evidence": evidence}


def score(predicted: dict, gold: dict, abstracts: dict | None = None) -> dict:
    abstracts = abstracts or {key: ABSTRACT for key in gold}
    return score_claims(predicted, gold, abstracts=abstracts)


def test_perfect_match():
    gold = {"a": [claim(ACC, "91.2"), claim(OUT)]}
    result = score({"a": [claim(OUT), claim(ACC, "91.2")]}, gold)
    assert (result["tp"], result["fp"], result["fn"]) == (2, 0, 0)
    assert (result["precision"], result["recall"], result["f1"]) == (1.0, 1.0, 1.0)
    assert result["abstracts"]["a"]["matches"] == [[0, 1], [1, 0]]


def test_overlapping_evidence_with_wrong_value_does_not_match():
    gold = {"a": [claim(ACC, "91.2")]}
    result = score({"a": [claim("91.2% accuracy on ImageNet", "92.1")]}, gold)
    assert (result["tp"], result["fp"], result["fn"]) == (0, 1, 1)
    assert (result["precision"], result["recall"], result["f1"]) == (0.0, 0.0, 0.0)


def test_value_and_null_disagree():
    result = score({"a": [claim(ACC, None)]}, {"a": [claim(ACC, "91.2")]})
    assert result["tp"] == 0


def test_values_compare_as_canonical_numbers_ignoring_sign_and_format():
    text = "The gain is +5.14% on X and 1,024 tokens fit in context."
    gold = {"a": [claim("+5.14% on X", "5.14"), claim("1,024 tokens", "1024")]}
    predicted = {"a": [claim("gain is +5.14%", "-5.14%"), claim("1,024 tokens fit", "1,024")]}
    result = score(predicted, gold, {"a": text})
    assert (result["tp"], result["fp"], result["fn"]) == (2, 0, 0)


def test_two_predictions_for_one_gold_is_one_tp_one_fp():
    gold = {"a": [claim(ACC, "91.2")]}
    predicted = {"a": [claim(ACC, "91.2"), claim("reaches 91.2% accuracy", "91.2")]}
    result = score(predicted, gold)
    assert (result["tp"], result["fp"], result["fn"]) == (1, 1, 0)
    assert result["precision"] == 0.5
    assert result["recall"] == 1.0
    assert result["f1"] == 2 / 3


def test_empty_gold_abstract_with_a_prediction_is_a_false_positive():
    result = score({"a": [claim(OUT)]}, {"a": []})
    assert (result["tp"], result["fp"], result["fn"]) == (0, 1, 0)
    assert result["precision"] == 0.0
    assert result["recall"] is None
    assert result["f1"] == 0.0


def test_missing_prediction_counts_as_empty_and_unknown_ids_are_ignored():
    result = score({"zzz": [claim(OUT)]}, {"a": [claim(OUT)]})
    assert (result["tp"], result["fp"], result["fn"]) == (0, 0, 1)
    assert result["precision"] is None
    assert result["recall"] == 0.0
    assert result["ignored_ids"] == ["zzz"]


def test_touching_spans_do_not_overlap():
    text = "Alpha beats Beta. Gamma beats Delta."
    result = score(
        {"a": [claim("Alpha beats Beta.")]}, {"a": [claim("Gamma beats Delta.")]}, {"a": text}
    )
    assert result["tp"] == 0
    # one shared character is enough
    result = score({"a": [claim("Beta. Gamma")]}, {"a": [claim("Gamma beats Delta.")]}, {"a": text})
    assert result["tp"] == 1


def test_ungrounded_prediction_matches_nothing():
    result = score(
        {"a": [claim("Foo reaches 91.2% accuracy on CIFAR", "91.2")]}, {"a": [claim(ACC, "91.2")]}
    )
    assert result["tp"] == 0


def test_matching_is_optimal_not_greedy():
    text = "One two three four five six seven eight nine ten."
    gold = [claim("One two three four"), claim("seven eight")]
    # p0 overlaps g0 by more than p1 does, but p1 overlaps only g0: the best matching is
    # p0-g1, p1-g0 (2 matches); a greedy largest-overlap-first matching finds only 1.
    predicted = [claim("One two three four five six seven"), claim("three four")]
    assert match_claims(predicted, gold, text) == [(0, 1), (1, 0)]


def test_micro_average_over_abstracts_and_per_kind():
    gold = {
        "a": [claim(ACC, "91.2"), claim(OUT)],
        "b": [claim(ACC, "91.2"), claim(OUT)],
    }
    predicted = {
        "a": [claim(ACC, "91.2"), claim("We propose Foo", kind="qualitative")],
        "b": [claim(OUT, kind="quantitative")],  # a kind mistake still matches on span+value
    }
    result = score(predicted, gold)
    assert (result["tp"], result["fp"], result["fn"]) == (2, 1, 2)
    assert result["precision"] == 2 / 3
    assert result["recall"] == 2 / 4
    assert result["f1"] == 4 / 7
    quant, qual = result["by_kind"]["quantitative"], result["by_kind"]["qualitative"]
    assert (quant["predicted"], quant["gold"]) == (2, 2)
    assert (quant["matched_predicted"], quant["matched_gold"]) == (2, 1)
    assert (quant["precision"], quant["recall"]) == (1.0, 0.5)
    assert quant["f1"] == 2 * 1.0 * 0.5 / 1.5
    assert (qual["predicted"], qual["gold"]) == (1, 2)
    assert (qual["precision"], qual["recall"], qual["f1"]) == (0.0, 0.5, 0.0)
    assert result["abstracts"]["b"]["unmatched_gold"] == [0]


def test_spans_are_taken_from_claims_when_no_abstract_is_given():
    gold = {"a": [{**claim(ACC, "91.2"), "span": list(find_span(ABSTRACT, ACC))}]}
    inside = find_span(ABSTRACT, "91.2% accuracy")
    predicted = {"a": [{**claim("91.2% accuracy", "91.2"), "span": list(inside)}]}
    assert score_claims(predicted, gold)["tp"] == 1
    predicted = {"a": [{**claim("91.2% accuracy", "91.2"), "span": [0, 10]}]}
    assert score_claims(predicted, gold)["tp"] == 0


# --- the shipped gold file -------------------------------------------------------------


def example_abstracts() -> dict[str, str]:
    """'<file>#<position>' -> abstract, splitting the example files independently of ingest."""
    out = {}
    for path in sorted(EXAMPLES.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
        for position, paragraph in enumerate(paragraphs[1:], 1):  # first paragraph: header
            out[f"{path.name}#{position}"] = paragraph
    return out


def test_gold_file_is_valid():
    records = read_gold(GOLD)
    assert gold_problems(records) == []
    assert len(records) >= 30
    assert len({r["source"] for r in records}) == len(records)
    sources = example_abstracts()
    for record in records:
        assert set(record) == {"id", "source", "abstract", "claims"}
        assert record["abstract"] == sources[record["source"]], record["source"]
        assert record["id"] == text_hash(record["abstract"])
        for c in record["claims"]:
            assert set(c) == {"kind", "metric", "value", "unit", "dataset", "evidence"}


def test_gold_file_coverage():
    records = read_gold(GOLD)
    claims = [c for r in records for c in r["claims"]]
    assert sum(not r["claims"] for r in records) >= 5
    assert sum(c["kind"] == "quantitative" for c in claims) >= 10
    assert sum(c["kind"] == "qualitative" for c in claims) >= 10
    auroc = [c for c in claims if "mean AUROC +5.14%" in c["evidence"]]
    assert [c["value"] for c in auroc] == ["5.14"]


def test_gold_scores_perfectly_against_itself():
    gold = load_gold(GOLD)
    result = score_claims(gold, gold, abstracts=load_gold_abstracts(GOLD))
    n = sum(len(v) for v in gold.values())
    assert (result["tp"], result["fp"], result["fn"]) == (n, 0, 0)


def test_gold_problems_catches_bad_records(tmp_path):
    record = next(r for r in read_gold(GOLD) if r["claims"][:1] and r["claims"][0]["value"])
    broken = {**record, "claims": [claim("not in this abstract at all")]}
    wrong_value = {**record, "claims": [{**record["claims"][0], "value": "123456"}]}
    wrong_kind = {**record, "claims": [{**record["claims"][0], "kind": "qualitative"}]}
    wrong_id = {**record, "id": "0" * 16}
    assert gold_problems([record]) == []
    assert any("evidence not verbatim" in p for p in gold_problems([broken]))
    assert any("not in its evidence" in p for p in gold_problems([wrong_value]))
    assert any("iff the kind is quantitative" in p for p in gold_problems([wrong_kind]))
    assert any("id does not match" in p for p in gold_problems([wrong_id]))
    assert any("duplicate id" in p for p in gold_problems([record, record]))
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(broken) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="evidence not verbatim"):
        load_gold(path)
