"""Cross-validate a learned selection of the offline tagger's topical tags against its rules.

    python -m bench.train_tags                       # 5-fold CV by abstract, nested threshold
    python -m bench.train_tags --cv 5 --acceptable 0.3 --sweep
    python -m bench.train_tags --holdout tags_gold_train_val3.jsonl   # fit on the other files
    python -m bench.train_tags --coverage            # share of required tags found as candidates

Candidates are the topical tags the Matcher finds any mention of (`tags._Analysis`); each
gets a feature vector (its score and rank as `tags._topical` computes them, mentions by place:
lead, first, last and "we propose/study" sentences, enumerations and examples, phrase length,
broad/umbrella/narrow relations, facet, whether the rules select it). Labels come from the
train tags gold files only (never dev): a required tag is 1, an acceptable one `--acceptable`
(a soft label: never wrong for precision, not owed for recall), any other 0. A logistic
regression (L2, Newton's method on standardized features; deterministic) gives each candidate
a probability; the selection keeps those at or above a threshold (the best one always),
highest first, and appends the rules' contribution types as `tags._select` does. The threshold
is chosen per outer fold by an inner CV on that fold's training abstracts (best F1), so the
printed figures are out-of-sample; the rules are scored on the same folds (they were tuned on
all of these abstracts, so theirs are in-sample figures). `--sweep` adds the pooled figures of
every threshold on the outer folds (optimistic: the threshold is then chosen on test data).

The candidates, features, fit and selection are pipeline/testing/tag_selection.py.
Needs numpy (the `train` extra). Not used at run time: the selector did not beat the rules
(see docs/quality.md "Tags"), so nothing is written.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

from pipeline.evaluation.tags_eval import load_tags_gold, score_tags
from pipeline.offline import tags as T
from pipeline.taxonomy import Taxonomy, load_taxonomy
from pipeline.testing.tag_selection import FEATURES, candidates, coverage, fit, select

REPO_ROOT = Path(__file__).resolve().parents[1]
GOLD_FILES = [
    REPO_ROOT / "tests" / "data" / f"tags_gold_{name}.jsonl"
    for name in ("train", "train_more", "train_val", "train_val2", "train_val3")
]
SEED = 0
ACCEPTABLE = 0.5
L2 = 1.0
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def load(taxonomy: Taxonomy, paths: list[Path] = GOLD_FILES) -> list[dict]:
    """Per gold abstract of `paths`: candidates, rules' tags, rules' contribution types, gold."""
    matcher = T.matcher_for(taxonomy)
    rows = []
    for path in paths:
        for record in load_tags_gold(path).values():
            cands, rules = candidates(record["abstract"], matcher)
            kinds = [t for t in rules if taxonomy.facet_of[t] == T.CONTRIBUTION_FACET]
            row = {"gold": record, "cands": cands, "rules": rules, "kinds": kinds}
            rows.append({**row, "file": path.name})
    return rows


def design(rows: list[dict], acceptable: float) -> tuple[np.ndarray, np.ndarray]:
    """Feature matrix (FEATURES columns) and soft labels of every candidate of `rows`."""
    x, y = [], []
    for row in rows:
        gold = row["gold"]
        for tag, features in row["cands"]:
            x.append([features.get(name, 0.0) for name in FEATURES])
            required, ok = tag in gold["tags"], tag in gold["acceptable"]
            y.append(1.0 if required else acceptable if ok else 0.0)
    return np.array(x).reshape(-1, len(FEATURES)), np.array(y)


def probabilities(rows: list[dict], model: tuple[np.ndarray, float]) -> list[list[float]]:
    """Per row, the model's probability of each candidate."""
    weights, bias = model
    out = []
    for row in rows:
        x = np.array([[f.get(name, 0.0) for name in FEATURES] for _t, f in row["cands"]])
        out.append(list(1.0 / (1.0 + np.exp(-(x.reshape(-1, len(FEATURES)) @ weights + bias)))))
    return out


def folds(n: int, k: int) -> list[list[int]]:
    """k folds of range(n) by a fixed-seed shuffle."""
    order = list(range(n))
    random.Random(SEED).shuffle(order)
    return [sorted(order[j::k]) for j in range(k)]


def figures(rows: list[dict], predicted: list[list[str]]) -> tuple[float, float, float]:
    """Micro (precision, recall, F1) of predicted tag lists against the rows' gold."""
    gold = {row["gold"]["id"]: row["gold"] for row in rows}
    result = score_tags(
        {row["gold"]["id"]: p for row, p in zip(rows, predicted, strict=True)}, gold
    )
    return result["precision"], result["recall"], result["f1"]


def oof_probabilities(rows: list[dict], k: int, args) -> list[list[float]]:
    """Out-of-fold probabilities of every candidate of `rows` (k-fold by abstract)."""
    probs: list[list[float]] = [[] for _ in rows]
    for test in folds(len(rows), k):
        held = set(test)
        model = fit(
            *design([r for i, r in enumerate(rows) if i not in held], args.acceptable), args.l2
        )
        for i, p in zip(test, probabilities([rows[i] for i in test], model), strict=True):
            probs[i] = p
    return probs


def best_threshold(rows: list[dict], args) -> float:
    """The threshold of best inner-CV F1 on `rows` (ties: the higher threshold)."""
    probs = oof_probabilities(rows, args.cv, args)
    scored = [
        (figures(rows, [select(r, p, t) for r, p in zip(rows, probs, strict=True)])[2], t)
        for t in args.thresholds
    ]
    return max(scored)[1]


def cross_validate(rows: list[dict], args) -> None:
    """Print fold-level and pooled figures of the learned selection and of the rules."""
    predicted: list[list[str]] = [[] for _ in rows]
    for k, test in enumerate(folds(len(rows), args.cv)):
        held = set(test)
        train = [r for i, r in enumerate(rows) if i not in held]
        threshold = best_threshold(train, args)
        model = fit(*design(train, args.acceptable), args.l2)
        tested = [rows[i] for i in test]
        for i, row, p in zip(test, tested, probabilities(tested, model), strict=True):
            predicted[i] = select(row, p, threshold)
        m = figures(tested, [predicted[i] for i in test])
        r = figures(tested, [row["rules"] for row in tested])
        print(
            f"  fold {k + 1}/{args.cv} ({len(test)} abstracts, threshold {threshold}): "
            f"model P {m[0]:.3f} R {m[1]:.3f} F1 {m[2]:.3f} | rules P {r[0]:.3f} R {r[1]:.3f} F1 {r[2]:.3f}"
        )
    m = figures(rows, predicted)
    r = figures(rows, [row["rules"] for row in rows])
    print(f"{args.cv}-fold CV on {len(rows)} train gold abstracts (nested threshold):")
    print(f"  model P {m[0]:.3f} R {m[1]:.3f} F1 {m[2]:.3f}")
    print(f"  rules P {r[0]:.3f} R {r[1]:.3f} F1 {r[2]:.3f}")
    if args.sweep:
        probs = oof_probabilities(rows, args.cv, args)
        for t in args.thresholds:
            s = figures(rows, [select(r, p, t) for r, p in zip(rows, probs, strict=True)])
            print(f"  sweep threshold {t}: P {s[0]:.3f} R {s[1]:.3f} F1 {s[2]:.3f}")


def hold_out(train: list[dict], test: list[dict], args) -> None:
    """Print the figures on `test` of the selection fitted on `train`, and of the rules."""
    threshold = best_threshold(train, args)
    probs = probabilities(test, fit(*design(train, args.acceptable), args.l2))
    predicted = [select(r, p, threshold) for r, p in zip(test, probs, strict=True)]
    m = figures(test, predicted)
    r = figures(test, [row["rules"] for row in test])
    print(
        f"held out {args.holdout} ({len(test)} abstracts, trained on {len(train)}, threshold {threshold}):"
    )
    print(f"  model P {m[0]:.3f} R {m[1]:.3f} F1 {m[2]:.3f}")
    print(f"  rules P {r[0]:.3f} R {r[1]:.3f} F1 {r[2]:.3f}")


def print_coverage(rows: list[dict], taxonomy: Taxonomy) -> None:
    """Candidate coverage per gold file and pooled."""
    files = list(dict.fromkeys(r["file"] for r in rows))
    for name in [*files, "pooled"] if len(files) > 1 else files:
        found, total = coverage([r for r in rows if name in ("pooled", r["file"])], taxonomy)
        print(
            f"{name}: {found} of {total} required topical tags are candidates ({found / total:.1%})"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cv", type=int, default=5, help="folds (by abstract)")
    parser.add_argument(
        "--acceptable", type=float, default=ACCEPTABLE, help="label of an acceptable tag"
    )
    parser.add_argument("--l2", type=float, default=L2)
    parser.add_argument("--thresholds", type=float, nargs="+", default=THRESHOLDS)
    parser.add_argument("--sweep", action="store_true", help="also every threshold, pooled")
    parser.add_argument("--holdout", help="train on the other gold files, test on this one")
    parser.add_argument(
        "--coverage", nargs="*", type=Path, help="only the candidate coverage (of these files)"
    )
    args = parser.parse_args(argv)
    taxonomy = load_taxonomy(REPO_ROOT / "prompts" / "taxonomy.yaml")
    if args.coverage is not None:
        print_coverage(load(taxonomy, args.coverage or GOLD_FILES), taxonomy)
        return 0
    rows = load(taxonomy)
    if args.holdout:
        test = [r for r in rows if r["file"] == args.holdout]
        hold_out([r for r in rows if r["file"] != args.holdout], test, args)
    else:
        cross_validate(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
