"""Agreement of two sets of labels, scored with the project's scorers, with intervals.

Tags: `score_tags` (micro precision/recall as `digest eval tags` reports them) with one side's
labels as the "system" (its required tags, or its required + acceptable tags). Claims:
`score_claims` (evidence spans overlap and values agree; metric acceptability against the side
playing gold). Intervals: percentile bootstrap over abstracts (micro rates recomputed on each
resample). Used by bench/gold_agreement.py (a second annotator against the dev gold sets) and
offline_figures.py (the offline extractor against the held-out gold sets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.evaluation.claims_eval import load_gold, load_gold_abstracts, score_claims
from pipeline.evaluation.intervals import bootstrap_rates
from pipeline.evaluation.tags_eval import score_tags
from pipeline.testing.paths import TEST_DATA

TAGS_GOLD = TEST_DATA / "tags_gold_dev.jsonl"
TAGS_A2 = TEST_DATA / "agreement" / "tags_dev_annotator2.jsonl"
CLAIMS_GOLD = (TEST_DATA / "claims_gold_dev.jsonl", TEST_DATA / "claims_gold_dev_numbers.jsonl")
CLAIMS_A2 = TEST_DATA / "agreement" / "claims_dev_numbers_annotator2.jsonl"


def tag_predictions(records: Mapping[str, Mapping], with_acceptable: bool) -> dict[str, list]:
    """One annotator's labels as a tagger's output: required tags, optionally + acceptable."""
    return {
        gid: list(r["tags"]) + (list(r["acceptable"]) if with_acceptable else [])
        for gid, r in records.items()
    }


def tags_scores(
    predicted: Mapping[str, Sequence[str]], gold: Mapping[str, Mapping], boot: int
) -> dict:
    """score_tags with bootstrap intervals of precision and recall over abstracts."""
    scores = score_tags(predicted, gold)
    counts = {
        gid: {
            "pred": len(d["predicted"]),
            "correct": len(d["correct"]),
            "found": len(d["found"]),
            "required": len(gold[gid]["tags"]),
        }
        for gid, d in scores["abstracts"].items()
    }
    ci = bootstrap_rates(
        counts,
        {
            "precision": lambda c: (c["correct"], c["pred"]),
            "recall": lambda c: (c["found"], c["required"]),
        },
        boot,
        seed=1,
    )
    return {"scores": scores, "ci": ci}


def tags_agreement(system: Mapping[str, Mapping], gold: Mapping[str, Mapping], boot: int) -> dict:
    """tags_scores of one side's required tags, and of its required + acceptable ones."""
    return {
        "required + acceptable" if with_acc else "required": tags_scores(
            tag_predictions(system, with_acc), gold, boot
        )
        for with_acc in (False, True)
    }


def load_claims_gold(paths: Sequence[Path]) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """(claims by id, abstracts by id) of claims gold files, pooled."""
    claims: dict[str, list[dict]] = {}
    abstracts: dict[str, str] = {}
    for path in paths:
        claims.update(load_gold(path))
        abstracts.update(load_gold_abstracts(path))
    return claims, abstracts


def quantitative(claims: Mapping[str, Sequence[dict]], ids: Sequence[str]) -> dict[str, list]:
    """The quantitative claims of each of `ids`."""
    return {gid: [c for c in claims.get(gid, []) if c.get("kind") == "quantitative"] for gid in ids}


def claims_agreement(
    system: Mapping[str, list], gold: Mapping[str, list], abstracts: Mapping[str, str], boot: int
) -> dict:
    """score_claims with bootstrap intervals of precision, recall and metric over abstracts."""
    scores = score_claims(system, gold, abstracts=abstracts)
    counts = {
        gid: {
            "tp": d["tp"],
            "pred": d["tp"] + d["fp"],
            "gold": d["tp"] + d["fn"],
            "metric_ok": d["metric_checked"] - len(d["metric_unacceptable"]),
            "metric_checked": d["metric_checked"],
        }
        for gid, d in scores["abstracts"].items()
    }
    ci = bootstrap_rates(
        counts,
        {
            "precision": lambda c: (c["tp"], c["pred"]),
            "recall": lambda c: (c["tp"], c["gold"]),
            "metric": lambda c: (c["metric_ok"], c["metric_checked"]),
        },
        boot,
        seed=2,
    )
    return {"scores": scores, "ci": ci}
