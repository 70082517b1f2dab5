"""The SciTLDR gold sets (claims and tags, dev and train), tag scoring and metric acceptability."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from samples import TAXONOMY_PATH

from pipeline.errors import InputError
from pipeline.evaluation.claims_eval import (
    gold_problems,
    load_gold,
    load_gold_abstracts,
    metric_acceptable,
    read_gold,
    score_claims,
)
from pipeline.evaluation.tags_eval import load_tags_gold, score_tags, tags_gold_problems
from pipeline.taxonomy import load_taxonomy
from pipeline.text import text_hash

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SIZES = {"dev": 65, "train": 40}  # promised in tests/data/GOLD.md
SPLITS = tuple(SIZES)
CLAIM_KEYS = {
    "kind",
    "metric",
    "metric_ok",
    "value",
    "unit",
    "dataset",
    "comparison",
    "evidence",
    "statement",
}
SCITLDR_CANDIDATES = [
    ROOT.parent / "shared" / "data" / "scitldr",
    ROOT.parents[1] / "shared" / "data" / "scitldr",
]


def claims_path(split: str) -> Path:
    return DATA / f"claims_gold_{split}.jsonl"


def tags_path(split: str) -> Path:
    return DATA / f"tags_gold_{split}.jsonl"


@pytest.fixture(scope="module")
def tax():
    return load_taxonomy(TAXONOMY_PATH)


# --- the gold files ---------------------------------------------------------------------


@pytest.mark.parametrize("split", SPLITS)
def test_claims_gold_is_valid_and_complete(split):
    records = read_gold(claims_path(split))
    assert gold_problems(records) == []
    assert len(records) == SIZES[split]
    for record in records:
        assert set(record) == {"id", "source", "abstract", "claims"}
        assert record["source"].startswith(f"scitldr-{split}#")
        assert record["id"] == text_hash(record["abstract"])
        for claim in record["claims"]:
            assert set(claim) == CLAIM_KEYS, record["source"]
            assert claim["evidence"] in record["abstract"], "evidence is an exact substring"
            assert claim["metric"] is None or claim["metric"].strip()
            assert isinstance(claim["metric_ok"], list)
            assert all(isinstance(m, str) and m.strip() for m in claim["metric_ok"])
            assert claim["metric"] not in claim["metric_ok"]
            assert claim["statement"].strip()
            if claim["kind"] == "qualitative":
                assert claim["unit"] is None


@pytest.mark.parametrize("split", SPLITS)
def test_claims_gold_covers_both_kinds_and_empty_abstracts(split):
    records = read_gold(claims_path(split))
    claims = [c for r in records for c in r["claims"]]
    assert sum(not r["claims"] for r in records) >= 3  # abstracts without results stay in
    assert sum(c["kind"] == "quantitative" for c in claims) >= 10
    assert sum(c["kind"] == "qualitative" for c in claims) >= 30


@pytest.mark.parametrize("split", SPLITS)
def test_tags_gold_is_valid_and_complete(split, tax):
    records = load_tags_gold(tags_path(split))
    assert tags_gold_problems(records, tax) == []
    assert len(records) == SIZES[split]
    assert all(r["source"].startswith(f"scitldr-{split}#") for r in records.values())
    assert all(1 <= len(r["tags"]) <= 4 for r in records.values())


@pytest.mark.parametrize("split", SPLITS)
def test_claims_and_tags_gold_label_the_same_abstracts(split):
    claims = {r["id"]: r for r in read_gold(claims_path(split))}
    tags = load_tags_gold(tags_path(split))
    assert list(claims) == list(tags)
    for key, record in tags.items():
        assert (record["source"], record["abstract"]) == (
            claims[key]["source"],
            claims[key]["abstract"],
        )


def test_dev_and_train_gold_do_not_share_abstracts():
    dev = set(load_tags_gold(tags_path("dev")))
    train = set(load_tags_gold(tags_path("train")))
    assert not dev & train


def _scitldr_dir() -> Path | None:
    return next((p for p in SCITLDR_CANDIDATES if (p / "dev.jsonl").is_file()), None)


def _draw(split: str) -> list[tuple[str, str]]:
    """(source, abstract) of every row of a split in GOLD.md's order: sorted by
    sha256(paper_id), repeated abstracts skipped. Skips the test without the SciTLDR files."""
    folder = _scitldr_dir()
    if folder is None:
        pytest.skip("SciTLDR split files not found beside the repository")
    rows = [json.loads(line) for line in (folder / f"{split}.jsonl").read_text().splitlines()]
    rows.sort(key=lambda r: hashlib.sha256(r["paper_id"].encode("utf-8")).hexdigest())
    drawn, seen = [], set()
    for row in rows:
        abstract = " ".join(row["source"])
        key = text_hash(abstract)
        if key not in seen:
            seen.add(key)
            drawn.append((f"scitldr-{split}#{row['paper_id']}", abstract))
    return drawn


def _digit_bearing_after_base(split: str) -> list[tuple[str, str]]:
    """The numbers supplements' draw: past the first N, every digit-bearing abstract in no
    base gold file."""
    other_gold = {r["id"] for name in BASE_GOLD_FILES for r in read_gold(DATA / name)}
    return [
        (source, abstract)
        for source, abstract in _draw(split)[SIZES[split] :]
        if text_hash(abstract) not in other_gold and re.search(r"[0-9]", abstract)
    ]


@pytest.mark.parametrize("split", SPLITS)
def test_gold_sample_is_the_documented_deterministic_draw(split):
    """GOLD.md: rows sorted by sha256(paper_id), first N, skipping repeated abstracts."""
    got = [(r["source"], r["abstract"]) for r in read_gold(claims_path(split))]
    assert got == _draw(split)[: SIZES[split]]


# Promised in tests/data/GOLD.md: required and acceptable tags over each file's 60 abstracts.
TAGS_SUPPLEMENTS = [
    # tags_gold_train_more.jsonl: train positions 41-100 of the same draw (tuning data)
    pytest.param("train_more", "train", (40, 100), (133, 197), id="train_more"),
    # tags_gold_train_val.jsonl: positions 101-160 (validation, then tuning data)
    pytest.param("train_val", "train", (100, 160), (112, 236), id="train_val"),
    # tags_gold_train_val2.jsonl: positions 161-220 (held out, then tuning data)
    pytest.param("train_val2", "train", (160, 220), (109, 236), id="train_val2"),
    # tags_gold_train_val3.jsonl: positions 221-280 (held out, then tuning data)
    pytest.param("train_val3", "train", (220, 280), (130, 240), id="train_val3"),
    # tags_gold_train_val4.jsonl: positions 281-340 (held out for the fourth tagger pass)
    pytest.param("train_val4", "train", (280, 340), (128, 182), id="train_val4"),
    # tags_gold_dev2.jsonl: dev positions 176-235 (report data, like tags_gold_dev.jsonl)
    pytest.param("dev2", "dev", (175, 235), (137, 216), id="dev2"),
]


@pytest.mark.parametrize(("name", "split", "positions", "documented"), TAGS_SUPPLEMENTS)
def test_a_tags_supplement_continues_the_draw_and_is_valid(tax, name, split, positions, documented):
    """The tags supplements: 60 abstracts each, later positions of the same draw, sharing no
    abstract with any other tags gold file, scoring perfectly against themselves."""
    batch = load_tags_gold(tags_path(name))
    assert tags_gold_problems(batch, tax) == [] and len(batch) == 60
    assert all(1 <= len(r["tags"]) <= 4 for r in batch.values())
    required = sum(len(r["tags"]) for r in batch.values())
    assert (required, sum(len(r["acceptable"]) for r in batch.values())) == documented
    for other in DATA.glob("tags_gold_*.jsonl"):
        if other != tags_path(name):
            assert not set(batch) & set(load_tags_gold(other)), other.name
    drawn = [source for source, _ in _draw(split)]
    first, last = positions
    assert [r["source"] for r in batch.values()] == drawn[first:last]
    result = score_tags({k: r["tags"] for k, r in batch.items()}, batch)
    assert (result["precision"], result["recall"], result["primary_exact"]) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize("split", SPLITS)
def test_claims_gold_scores_perfectly_against_itself(split):
    gold = load_gold(claims_path(split))
    result = score_claims(gold, gold, abstracts=load_gold_abstracts(claims_path(split)))
    assert (result["fp"], result["fn"]) == (0, 0)
    quantitative = sum(c["kind"] == "quantitative" for v in gold.values() for c in v)
    assert result["metric_acceptable"] == {"count": quantitative, "of": quantitative, "share": 1.0}


@pytest.mark.parametrize("split", SPLITS)
def test_tags_gold_scores_perfectly_against_itself(split):
    gold = load_tags_gold(tags_path(split))
    result = score_tags({k: r["tags"] for k, r in gold.items()}, gold)
    assert (result["precision"], result["recall"], result["f1"]) == (1.0, 1.0, 1.0)
    assert result["primary_exact"] == 1.0


# --- the quantitative supplements (digit-bearing abstracts) -----------------------------

# Promised in tests/data/GOLD.md: abstracts, quantitative, qualitative, abstracts without claims.
NUMBERS = {"dev": (54, 46, 69, 4), "train": (82, 50, 113, 8)}
QUANTITATIVE_TARGET = 60  # per split, the base gold set and its supplement together
BASE_GOLD_FILES = ("claims_gold.jsonl", "claims_gold_dev.jsonl", "claims_gold_train.jsonl")


def numbers_path(split: str) -> Path:
    return DATA / f"claims_gold_{split}_numbers.jsonl"


def _quantitative(records: list[dict]) -> int:
    return sum(c["kind"] == "quantitative" for r in records for c in r["claims"])


def _supplement_counts(records: list[dict], split: str) -> tuple[int, int, int, int]:
    """Checks every numbers supplement shares; (abstracts, quantitative, qualitative, empty)."""
    assert gold_problems(records) == []
    for record in records:
        assert set(record) == {"id", "source", "abstract", "claims"}
        assert record["source"].startswith(f"scitldr-{split}#")
        assert re.search(r"[0-9]", record["abstract"]), "only digit-bearing abstracts are drawn"
        for claim in record["claims"]:
            assert set(claim) == CLAIM_KEYS, record["source"]
            assert claim["evidence"] in record["abstract"], "evidence is an exact substring"
            assert all(isinstance(m, str) and m.strip() for m in claim["metric_ok"])
            assert claim["metric"] not in claim["metric_ok"]
            assert claim["statement"].strip()
            if claim["kind"] == "qualitative":
                assert claim["unit"] is None
    claims = [c for r in records for c in r["claims"]]
    return (
        len(records),
        sum(c["kind"] == "quantitative" for c in claims),
        sum(c["kind"] == "qualitative" for c in claims),
        sum(not r["claims"] for r in records),
    )


@pytest.mark.parametrize("split", SPLITS)
def test_numbers_supplement_is_valid_and_has_the_documented_counts(split):
    records = read_gold(numbers_path(split))
    for record in records:
        assert record["id"] == text_hash(record["abstract"])
        for claim in record["claims"]:
            assert claim["metric"] is None or claim["metric"].strip()
            assert isinstance(claim["metric_ok"], list)
    assert _supplement_counts(records, split) == NUMBERS[split]


@pytest.mark.parametrize("split", SPLITS)
def test_numbers_supplement_brings_the_split_to_the_quantitative_target(split):
    base = _quantitative(read_gold(claims_path(split)))
    supplement = read_gold(numbers_path(split))
    per_record = [_quantitative([r]) for r in supplement]
    # the draw stops at the first abstract that reaches the target, not later
    assert base + sum(per_record) >= QUANTITATIVE_TARGET
    assert base + sum(per_record[:-1]) < QUANTITATIVE_TARGET
    assert per_record[-1] > 0


def test_numbers_supplements_share_no_abstract_with_any_gold_file():
    ids = {split: [r["id"] for r in read_gold(numbers_path(split))] for split in SPLITS}
    base = {r["id"] for name in BASE_GOLD_FILES for r in read_gold(DATA / name)}
    for split in SPLITS:
        assert len(set(ids[split])) == len(ids[split])
        assert not set(ids[split]) & base
    assert not set(ids["dev"]) & set(ids["train"])


@pytest.mark.parametrize("split", SPLITS)
def test_numbers_supplement_is_the_documented_deterministic_draw(split):
    """GOLD.md: past the first N in sha256(paper_id) order, every digit-bearing abstract."""
    candidates = _digit_bearing_after_base(split)
    got = [(r["source"], r["abstract"]) for r in read_gold(numbers_path(split))]
    assert got == candidates[: len(got)]  # a prefix; where it stops is the target test above


@pytest.mark.parametrize("split", SPLITS)
def test_numbers_supplement_scores_perfectly_against_itself(split):
    gold = load_gold(numbers_path(split))
    result = score_claims(gold, gold, abstracts=load_gold_abstracts(numbers_path(split)))
    assert (result["fp"], result["fn"]) == (0, 0)
    quantitative = NUMBERS[split][1]
    assert result["metric_acceptable"] == {"count": quantitative, "of": quantitative, "share": 1.0}


# --- the later numbers supplements (a held-out estimate each; the train ones then tuning data) ---

# Promised in tests/data/GOLD.md: abstracts, quantitative, qualitative, abstracts without claims.
NUMBERS2 = (109, 60, 146, 9)
NUMBERS2_PATH = DATA / "claims_gold_train_numbers2.jsonl"
NUMBERS3 = (53, 51, 85, 7)
NUMBERS3_PATH = DATA / "claims_gold_train_numbers3.jsonl"
NUMBERS4 = (110, 61, 145, 14)
NUMBERS4_PATH = DATA / "claims_gold_train_numbers4.jsonl"
NUMBERS_DEV2 = (132, 60, 182, 19)
NUMBERS_DEV2_PATH = DATA / "claims_gold_dev2_numbers.jsonl"
# (file, split, documented counts, the quantitative claims it stops at, the supplements before it)
LATER_SUPPLEMENTS = [
    pytest.param(
        NUMBERS2_PATH,
        "train",
        NUMBERS2,
        QUANTITATIVE_TARGET,
        [numbers_path("train")],
        id="numbers2",
    ),
    pytest.param(
        NUMBERS3_PATH, "train", NUMBERS3, 50, [numbers_path("train"), NUMBERS2_PATH], id="numbers3"
    ),
    pytest.param(
        NUMBERS_DEV2_PATH,
        "dev",
        NUMBERS_DEV2,
        QUANTITATIVE_TARGET,
        [numbers_path("dev")],
        id="dev2",
    ),
    pytest.param(
        NUMBERS4_PATH,
        "train",
        NUMBERS4,
        QUANTITATIVE_TARGET,
        [numbers_path("train"), NUMBERS2_PATH, NUMBERS3_PATH],
        id="numbers4",
    ),
]
LATER_ARGS = ("path", "split", "documented", "target", "before")


@pytest.mark.parametrize(LATER_ARGS, LATER_SUPPLEMENTS)
def test_later_numbers_supplement_is_valid_and_has_the_documented_counts(
    path, split, documented, target, before
):
    records = read_gold(path)
    assert _supplement_counts(records, split) == documented
    # it stops at the first abstract with which it holds `target` quantitative claims
    per_record = [_quantitative([r]) for r in records]
    assert sum(per_record) >= target > sum(per_record[:-1])
    gold = load_gold(path)
    result = score_claims(gold, gold, abstracts=load_gold_abstracts(path))
    assert (result["fp"], result["fn"]) == (0, 0)
    quantitative = documented[1]
    assert result["metric_acceptable"] == {"count": quantitative, "of": quantitative, "share": 1.0}


@pytest.mark.parametrize(LATER_ARGS, LATER_SUPPLEMENTS)
def test_later_numbers_supplement_continues_the_draw_and_shares_no_abstract(
    path, split, documented, target, before
):
    ids = [r["id"] for r in read_gold(path)]
    others = {
        r["id"]
        for other in DATA.glob("claims_gold*.jsonl")
        if other != path
        for r in read_gold(other)
    }
    assert len(set(ids)) == len(ids) and not set(ids) & others
    candidates = _digit_bearing_after_base(split)
    first = sum(len(read_gold(earlier)) for earlier in before)
    got = [(r["source"], r["abstract"]) for r in read_gold(path)]
    assert got == candidates[first : first + len(got)]


# --- load_tags_gold and tags_gold_problems ----------------------------------------------


def tag_record(abstract="An abstract about GANs.", tags=("generative-adversarial-networks",), **kw):
    record = {
        "id": text_hash(abstract),
        "source": "test#1",
        "abstract": abstract,
        "tags": list(tags),
        "acceptable": [],
    }
    return {**record, **kw}


def write_lines(tmp_path, *lines: str) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "invalid line"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"id": "x", "source": "s", "abstract": "a", "tags": []}), "missing key"),
        (json.dumps({**tag_record("Other."), "tags": "gan"}), "'tags' must be a list"),
        (json.dumps(tag_record("Other.", acceptable=[1])), "'acceptable' must be a list"),
        (json.dumps(tag_record(abstract="")), "'abstract' must be a non-empty string"),
    ],
)
def test_load_tags_gold_names_file_and_line_of_a_bad_row(tmp_path, bad_line, message):
    path = write_lines(tmp_path, json.dumps(tag_record()), "", bad_line)
    with pytest.raises(InputError, match=message) as info:
        load_tags_gold(path)
    assert f"{path}:3:" in str(info.value)


def test_load_tags_gold_rejects_duplicates_and_missing_files(tmp_path):
    path = write_lines(tmp_path, json.dumps(tag_record()), json.dumps(tag_record()))
    with pytest.raises(InputError, match=r":2: duplicate id"):
        load_tags_gold(path)
    with pytest.raises(InputError, match="cannot read"):
        load_tags_gold(tmp_path / "absent.jsonl")


def test_tags_gold_problems_catches_bad_records(tax):
    good = tag_record()
    assert tags_gold_problems([good], tax) == []
    cases = {
        "id does not match": {**good, "id": "0" * 16},
        "unknown tags id(s) no-such-tag": {**good, "tags": ["no-such-tag"]},
        "unknown acceptable id(s) nope": {**good, "acceptable": ["nope"]},
        "in both tags and acceptable": {**good, "acceptable": list(good["tags"])},
        "no required tag": {**good, "tags": []},
        "is a contribution type": {**good, "tags": ["new-method", "pruning"]},
        "repeated id in tags": {**good, "tags": ["pruning", "pruning"]},
    }
    for message, record in cases.items():
        assert any(message in p for p in tags_gold_problems([record], tax)), message
    assert any("duplicate id" in p for p in tags_gold_problems([good, good], tax))
    assert tags_gold_problems({good["id"]: good}, tax) == []  # a loaded mapping works too


# --- score_tags on hand-made cases ------------------------------------------------------


def gold_of(**records: tuple[list[str], list[str]]) -> dict:
    return {key: {"tags": tags, "acceptable": acc} for key, (tags, acc) in records.items()}


GOLD = gold_of(a=(["pruning", "efficiency"], ["model-compression"]), b=(["fairness"], []))


def test_perfect_prediction():
    result = score_tags({"a": ["pruning", "efficiency"], "b": ["fairness"]}, GOLD)
    assert (result["precision"], result["recall"], result["f1"]) == (1.0, 1.0, 1.0)
    assert result["primary_accuracy"] == result["primary_exact"] == 1.0
    assert result["abstracts"]["a"]["wrong"] == result["abstracts"]["a"]["missed"] == []


def test_acceptable_tags_help_precision_but_not_recall():
    # a: pruning (required), model-compression (acceptable), games (wrong); b: nothing.
    result = score_tags({"a": ["model-compression", "pruning", "games"]}, GOLD)
    assert (result["predicted"], result["correct"], result["wrong"]) == (3, 2, 1)
    assert (result["required"], result["found"], result["missed"]) == (3, 1, 2)
    assert result["precision"] == 2 / 3
    assert result["recall"] == 1 / 3
    assert result["f1"] == pytest.approx(2 * (2 / 3) * (1 / 3) / (2 / 3 + 1 / 3))
    detail = result["abstracts"]["a"]
    assert detail["correct"] == ["model-compression", "pruning"]
    assert detail["wrong"] == ["games"]
    assert detail["missed"] == ["efficiency"]
    # primary: acceptable counts for primary_accuracy, not for the stricter shares; b is a miss
    assert result["primary_accuracy"] == 0.5
    assert result["primary_required"] == 0.0
    assert result["primary_exact"] == 0.0
    assert result["abstracts"]["b"]["missed"] == ["fairness"]


def test_primary_required_versus_exact():
    result = score_tags({"a": ["efficiency", "pruning"], "b": ["games", "fairness"]}, GOLD)
    assert result["primary_accuracy"] == 0.5  # b's first tag is wrong
    assert result["primary_required"] == 0.5
    assert result["primary_exact"] == 0.0  # a's first tag is required but not the primary
    assert result["recall"] == 1.0
    assert result["precision"] == 3 / 4


def test_duplicates_are_dropped_and_unknown_ids_ignored():
    result = score_tags({"a": ["pruning", "pruning", "games"], "zzz": ["fairness"]}, GOLD)
    assert result["abstracts"]["a"]["predicted"] == ["pruning", "games"]
    assert (result["predicted"], result["correct"]) == (2, 1)
    assert result["ignored_ids"] == ["zzz"]
    assert result["abstracts_scored"] == 2


def test_empty_denominators_give_none():
    nothing = score_tags({}, GOLD)
    assert nothing["precision"] is None and nothing["f1"] is None
    assert nothing["recall"] == 0.0
    assert nothing["primary_accuracy"] == 0.0
    empty_gold = score_tags({"a": ["pruning"]}, {})
    assert empty_gold["precision"] is None and empty_gold["recall"] is None
    assert empty_gold["primary_accuracy"] is None
    assert empty_gold["ignored_ids"] == ["a"]


def test_all_wrong_gives_zero_f1_not_none():
    result = score_tags({"a": ["games"], "b": ["games"]}, GOLD)
    assert (result["precision"], result["recall"], result["f1"]) == (0.0, 0.0, 0.0)


# --- metric acceptability ---------------------------------------------------------------


def gold_claim(metric, ok=(), evidence="Foo reaches 91.2% top-1 accuracy on ImageNet"):
    return {"kind": "quantitative", "metric": metric, "metric_ok": list(ok), "evidence": evidence}


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ("top-1 accuracy", gold_claim("top-1 accuracy"), True),
        ("  Top-1   Accuracy ", gold_claim("top-1 accuracy"), True),  # case and spaces
        ("accuracy", gold_claim("top-1 accuracy", ["accuracy", "top-1"]), True),
        ("accuracy", gold_claim("top-1 accuracy"), False),
        (None, gold_claim("top-1 accuracy"), False),
        ("", gold_claim("top-1 accuracy"), False),
        (None, gold_claim(None), True),  # the abstract names no metric, nor does the prediction
        ("   ", gold_claim(None), True),
        ("Top-1 Accuracy", gold_claim(None), True),  # words of the evidence
        ("speedup", gold_claim(None, evidence="3.1x speedup over X"), True),
        ("up", gold_claim(None, evidence="3.1x speedup over X"), False),  # a fragment, not words
        ("latency", gold_claim(None, ["latency"], evidence="3.1x faster"), True),
        ("BLEU", gold_claim(None, evidence="3.1x faster"), False),
    ],
)
def test_metric_acceptable_rule(predicted, gold, expected):
    assert metric_acceptable(predicted, gold) is expected


def test_score_claims_reports_metric_acceptability_over_matched_quantitative_pairs():
    abstract = "Foo reaches 91.2% top-1 accuracy on ImageNet. It also outperforms Bar on COCO."
    acc = "Foo reaches 91.2% top-1 accuracy on ImageNet"
    gold = {
        "a": [
            {**gold_claim("top-1 accuracy", ["accuracy"]), "value": "91.2"},
            {"kind": "qualitative", "metric": None, "value": None, "evidence": "outperforms Bar"},
        ],
        "b": [{**gold_claim("top-1 accuracy"), "value": "91.2"}],
    }
    predicted = {
        "a": [
            {"kind": "quantitative", "value": "91.2", "metric": "Accuracy", "evidence": acc},
            {"kind": "qualitative", "value": None, "metric": "nonsense", "evidence": "outperforms"},
        ],
        "b": [{"kind": "quantitative", "value": "91.2", "metric": "error", "evidence": acc}],
    }
    result = score_claims(predicted, gold, abstracts={"a": abstract, "b": abstract})
    assert result["tp"] == 3
    # the qualitative pair is not checked; a is acceptable, b is not
    assert result["metric_acceptable"] == {"count": 1, "of": 2, "share": 0.5}
    assert result["abstracts"]["b"]["metric_unacceptable"] == [[0, 0]]
    assert result["abstracts"]["a"]["metric_unacceptable"] == []
    unmatched = score_claims({}, gold, abstracts={"a": abstract, "b": abstract})
    assert unmatched["metric_acceptable"] == {"count": 0, "of": 0, "share": None}


GOLDEN_TRAIN = DATA / "golden" / "scitldr_train_200.jsonl"


def _golden_rows() -> list[dict]:
    return [json.loads(line) for line in GOLDEN_TRAIN.read_text(encoding="utf-8").splitlines()]


def test_golden_snapshot_inputs_share_no_abstract_with_any_gold_file():
    """tests/golden.py: a snapshot diff must never show outputs on a gold (or dev) abstract."""
    golden = {text_hash(r["abstract"]) for r in _golden_rows()}
    assert len(golden) == 200
    for path in sorted(DATA.glob("*gold*.jsonl")):
        assert not golden & {json.loads(line)["id"] for line in path.read_text().splitlines()}


def test_golden_snapshot_inputs_are_the_last_200_of_the_train_draw():
    """The last 200 rows of the train draw (sha256(paper_id) order), far from the gold draws."""
    got = [(f"scitldr-train#{r['id']}", r["abstract"]) for r in _golden_rows()]
    assert got == _draw("train")[-200:]
    dev_abstracts = {abstract for _, abstract in _draw("dev")}
    assert not dev_abstracts & {abstract for _, abstract in got}
