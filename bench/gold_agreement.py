"""Agreement of a second annotator with the dev gold sets, scored with the project's scorers.

    python -m bench.gold_agreement                   # both directions, 95% bootstrap intervals
    python -m bench.gold_agreement --boot 0          # point figures only
    python -m bench.gold_agreement --details         # also the per-abstract disagreements

Tags: `tests/data/agreement/tags_dev_annotator2.jsonl` against `tests/data/tags_gold_dev.jsonl`
with `score_tags` (micro precision/recall as `digest eval tags` reports them). One side's
labels are the "system" (its required tags, or its required + acceptable tags) and the
other side is the gold; then the roles swap.

Claims: `tests/data/agreement/claims_dev_numbers_annotator2.jsonl` (quantitative claims of
the digit-bearing abstracts of `claims_gold_dev.jsonl` + `claims_gold_dev_numbers.jsonl`)
against the quantitative claims of those two files on the same abstracts, with
`score_claims` (evidence spans overlap and values agree; metric acceptability against the
side playing gold, with its `metric_ok`). Both directions.

Intervals: percentile bootstrap over abstracts (micro rates recomputed on each resample),
and an exact Clopper-Pearson interval that treats items as independent (the bootstrap
collapses to a point at 0% or 100%; Clopper-Pearson then still gives the honest bound).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from pipeline.evaluation.claims_eval import load_gold
from pipeline.evaluation.intervals import clopper_pearson
from pipeline.evaluation.tags_eval import load_tags_gold
from pipeline.testing.agreement import (
    CLAIMS_A2,
    CLAIMS_GOLD,
    TAGS_A2,
    TAGS_GOLD,
    claims_agreement,
    load_claims_gold,
    quantitative,
    tags_agreement,
)


def _cp(k: int, n: int) -> str:
    if not n:
        return "n/a"
    lo, hi = clopper_pearson(k, n)
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def _fmt(value: float | None, interval: tuple[float, float] | None = None) -> str:
    if value is None:
        return "n/a"
    text = f"{100 * value:.1f}"
    if interval:
        text += f" [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"
    return text


# ---- tags -------------------------------------------------------------------------------


def print_tags(title: str, rows: dict, details: bool) -> None:
    print(f"\n### Tags: {title}\n")
    print(
        "| system tags | predicted | P [bootstrap] | P [Clopper-Pearson] | R [bootstrap] "
        "| R [Clopper-Pearson] | F1 | primary in gold | exact primary |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, row in rows.items():
        s, ci = row["scores"], row["ci"]
        print(
            f"| {name} | {s['predicted']} | {_fmt(s['precision'], ci.get('precision'))} "
            f"({s['correct']}/{s['predicted']}) | {_cp(s['correct'], s['predicted'])} | "
            f"{_fmt(s['recall'], ci.get('recall'))} ({s['found']}/{s['required']}) | "
            f"{_cp(s['found'], s['required'])} | {_fmt(s['f1'])} | "
            f"{_fmt(s['primary_accuracy'])} | {_fmt(s['primary_exact'])} |"
        )
    if details:
        s = rows["required"]["scores"]
        for gid, d in s["abstracts"].items():
            if d["wrong"] or d["missed"]:
                print(f"  {gid}: wrong={d['wrong']} missed={d['missed']}")


# ---- claims -----------------------------------------------------------------------------


def print_claims(title: str, row: dict, system: Mapping, gold: Mapping, details: bool) -> None:
    s, ci = row["scores"], row["ci"]
    q = s["by_kind"]["quantitative"]
    m = s["metric_acceptable"]
    print(f"\n### Quantitative claims: {title}\n")
    print(
        "| predicted | gold | matched | P [bootstrap] [Clopper-Pearson] "
        "| R [bootstrap] [Clopper-Pearson] | metric acceptable [bootstrap] [Clopper-Pearson] |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    print(
        f"| {q['predicted']} | {q['gold']} | {s['tp']} | {_fmt(q['precision'], ci.get('precision'))}"
        f" {_cp(q['matched_predicted'], q['predicted'])} | {_fmt(q['recall'], ci.get('recall'))}"
        f" {_cp(q['matched_gold'], q['gold'])} | {_fmt(m['share'], ci.get('metric'))}"
        f" {_cp(m['count'], m['of'])} ({m['count']}/{m['of']}) |"
    )
    if details:
        for gid, d in s["abstracts"].items():
            extra = [system[gid][i]["evidence"] for i in d["unmatched_predicted"]]
            missed = [gold[gid][j]["evidence"] for j in d["unmatched_gold"]]
            bad = [
                (system[gid][i].get("metric"), gold[gid][j].get("metric"))
                for i, j in d["metric_unacceptable"]
            ]
            if extra or missed or bad:
                print(f"  {gid}: extra={extra} missed={missed} metric={bad}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (0: none)")
    parser.add_argument("--details", action="store_true", help="per-abstract disagreements")
    args = parser.parse_args(argv)

    gold_tags = load_tags_gold(TAGS_GOLD)
    a2_tags = load_tags_gold(TAGS_A2)
    if set(gold_tags) != set(a2_tags):
        raise SystemExit("the annotator-2 tags file does not cover the gold ids")
    same_req = sum(set(gold_tags[g]["tags"]) == set(a2_tags[g]["tags"]) for g in gold_tags)
    same_all = sum(
        set(gold_tags[g]["tags"]) | set(gold_tags[g]["acceptable"])
        == set(a2_tags[g]["tags"]) | set(a2_tags[g]["acceptable"])
        for g in gold_tags
    )
    n_gold = sum(len(r["tags"]) for r in gold_tags.values())
    n_a2 = sum(len(r["tags"]) for r in a2_tags.values())
    print(
        f"Tags: {len(gold_tags)} dev abstracts; required tags gold {n_gold}, annotator 2 {n_a2}; "
        f"same required set on {same_req}, same required + acceptable set on {same_all}"
    )
    print_tags(
        "annotator 2 as system, gold as gold",
        tags_agreement(a2_tags, gold_tags, args.boot),
        args.details,
    )
    print_tags(
        "gold as system, annotator 2 as gold",
        tags_agreement(gold_tags, a2_tags, args.boot),
        args.details,
    )

    gold_claims, abstracts = load_claims_gold(CLAIMS_GOLD)
    a2_all = load_gold(CLAIMS_A2)
    ids = list(a2_all)
    if not set(ids) <= set(gold_claims):
        raise SystemExit("annotator-2 claims on abstracts outside the gold files")
    gold_q = quantitative(gold_claims, ids)
    a2_q = quantitative(a2_all, ids)
    print(
        f"\nClaims: {len(ids)} digit-bearing dev abstracts, quantitative claims only "
        f"(gold {sum(map(len, gold_q.values()))}, annotator 2 {sum(map(len, a2_q.values()))})"
    )
    print_claims(
        "annotator 2 as system, gold as gold",
        claims_agreement(a2_q, gold_q, abstracts, args.boot),
        a2_q,
        gold_q,
        args.details,
    )
    print_claims(
        "gold as system, annotator 2 as gold",
        claims_agreement(gold_q, a2_q, abstracts, args.boot),
        gold_q,
        a2_q,
        args.details,
    )


if __name__ == "__main__":
    main()
