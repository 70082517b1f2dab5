"""The second annotator's dev labels (tests/data/agreement/) cover the gold abstracts exactly,
parse and validate with the gold loaders, and the agreement script's interval is exact."""

from __future__ import annotations

import json
import re
from pathlib import Path

from samples import TAXONOMY_PATH

from pipeline.evaluation.claims_eval import load_gold
from pipeline.evaluation.tags_eval import load_tags_gold, tags_gold_problems
from pipeline.taxonomy import load_taxonomy

DATA = Path(__file__).parent / "data"
AGREEMENT = DATA / "agreement"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_tags_annotator2_covers_the_dev_gold_and_validates():
    gold = load_tags_gold(DATA / "tags_gold_dev.jsonl")
    second = load_tags_gold(AGREEMENT / "tags_dev_annotator2.jsonl")
    assert list(second) == list(gold)  # same ids, same order
    assert all(second[i]["abstract"] == gold[i]["abstract"] for i in gold)
    assert all(second[i]["source"] == gold[i]["source"] for i in gold)
    taxonomy = load_taxonomy(TAXONOMY_PATH)
    assert tags_gold_problems(second, taxonomy) == []


def test_claims_annotator2_covers_the_digit_bearing_dev_abstracts_and_validates():
    gold_rows = _rows(DATA / "claims_gold_dev.jsonl") + _rows(
        DATA / "claims_gold_dev_numbers.jsonl"
    )
    with_digit = [r for r in gold_rows if re.search(r"[0-9]", r["abstract"])]
    second_rows = _rows(AGREEMENT / "claims_dev_numbers_annotator2.jsonl")
    assert [r["id"] for r in second_rows] == [r["id"] for r in with_digit]
    assert len(second_rows) == 78
    assert [r["abstract"] for r in second_rows] == [r["abstract"] for r in with_digit]
    # The gold loader checks ids, verbatim evidence and that each value is in its evidence.
    second = load_gold(AGREEMENT / "claims_dev_numbers_annotator2.jsonl")
    claims = [c for cs in second.values() for c in cs]
    assert claims and all(c["kind"] == "quantitative" and c["value"] for c in claims)


def test_agreement_script_prints_both_directions(run_bench):
    script = run_bench("gold_agreement", "--boot", "0")
    assert script.returncode == 0, script.stderr
    out = script.stdout
    assert out.count("annotator 2 as system, gold as gold") == 2
    assert out.count("gold as system, annotator 2 as gold") == 2
    assert "Clopper-Pearson" in out
