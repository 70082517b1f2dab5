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

Needs numpy (the `train` extra). Not used at run time: the selector did not beat the rules
(see README.md "Tags"), so nothing is written.
"""

from __future__ import annotations

import argparse
import bisect
import math
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from pipeline.evaluation.tags_eval import load_tags_gold, score_tags
from pipeline.offline import tag_rules
from pipeline.offline import tags as T
from pipeline.taxonomy import Taxonomy, load_taxonomy

REPO_ROOT = Path(__file__).resolve().parents[1]
GOLD_FILES = [
    REPO_ROOT / "tests" / "data" / f"tags_gold_{name}.jsonl"
    for name in ("train", "train_more", "train_val", "train_val2", "train_val3")
]
SEED = 0
ACCEPTABLE = 0.5
L2 = 1.0
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
# Verbs of a sentence that states what the paper does ("we propose", "this paper studies").
_OWN_WORK = frozenset(
    str.split(
        """propose proposes introduce introduces present presents develop develops design designs
        devise devises study studies investigate investigates address addresses tackle tackles"""
    )
)
FEATURES = [
    "score",
    "log_score",
    "relative",
    "top",
    "second",
    "rank",
    "count",
    "single",
    "lead",
    "first_sent",
    "last_sent",
    "own_work",
    "listed_all",
    "listed_any",
    "example_all",
    "example_any",
    "long_phrase",
    "sentences",
    "first_pos",
    "broad",
    "umbrella_with_narrow",
    "narrow_with_umbrella",
    "facet_method",
    "facet_task",
    "facet_area",
    "n_cands",
    "rule",
    "rule_first",
]


def _sentence_starts(text: str, n_title: int) -> list[int]:
    """Token index at which each sentence starts (the title line is a sentence of its own)."""
    title_end = T._title_end(text)
    starts = [0, n_title] if n_title else [0]
    prev, count = title_end, n_title
    for m in T._SENT_END.finditer(text, title_end):
        count += T._count_tokens(text[prev : m.end()])
        prev = m.end()
        starts.append(count)
    return starts


def candidates(text: str, matcher: T.Matcher) -> tuple[list[tuple[str, dict[str, float]]], list]:
    """(topical candidates best first with their features, the rules' tag list) of a text."""
    a = T._Analysis(matcher, text[: T._MAX_CHARS])
    facet_of = matcher.taxonomy.facet_of
    n_title, n_lead = T._lead_bounds(a.text)
    starts = _sentence_starts(a.text, n_title)
    n_tokens = len(a.lower)
    bounds = [*starts, n_tokens]
    own = {
        k
        for k in range(len(starts))
        if not _OWN_WORK.isdisjoint(a.lower[bounds[k] : bounds[k + 1]])
    }
    first_sent = 1 if n_title else 0
    last_sent = bisect.bisect_right(starts, max(n_tokens - 1, 0)) - 1
    rules = T._select(a, matcher)
    relisted = T._listed(a.mentions, a.lower, a.gaps)  # halves the weights of listed ones again
    has_example = not T._EXAMPLE_LAST.isdisjoint(a.lower)
    scores: defaultdict[str, float] = defaultdict(float)
    first: dict[str, int] = {}
    stats: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))
    sentences: defaultdict[str, set[int]] = defaultdict(set)
    for m, again in zip(a.mentions, relisted, strict=True):
        if facet_of[m.tag] == T.CONTRIBUTION_FACET:
            continue
        s = stats[m.tag]
        scores[m.tag] += m.weight * T.REPEAT_DECAY ** s["n"]
        first.setdefault(m.tag, m.start)
        k = bisect.bisect_right(starts, m.start) - 1
        s["n"] += 1
        s["lead"] += n_title <= m.start < n_lead
        s["first_sent"] += k == first_sent
        s["last_sent"] += k == last_sent != first_sent
        s["own_work"] += k in own
        s["listed"] += again.weight < m.weight
        s["example"] += has_example and T._is_example(a.lower, a.gaps, m.start)
        s["len"] = max(s["len"], m.end - m.start)
        sentences[m.tag].add(k)
    ranked = T._rank(scores, first, matcher.order)
    present = set(ranked)
    out = []
    for r, t in enumerate(ranked):
        s = stats[t]
        features = {
            "score": scores[t],
            "log_score": math.log1p(scores[t]),
            "relative": scores[t] / scores[ranked[0]],
            "top": float(r == 0),
            "second": float(r == 1),
            "rank": min(r, 5) / 5,
            "count": math.log1p(s["n"]),
            "single": float(s["n"] == 1),
            "lead": float(s["lead"] > 0),
            "first_sent": float(s["first_sent"] > 0),
            "last_sent": float(s["last_sent"] > 0),
            "own_work": float(s["own_work"] > 0),
            "listed_all": float(s["listed"] == s["n"]),
            "listed_any": float(s["listed"] > 0),
            "example_all": float(s["example"] == s["n"]),
            "example_any": float(s["example"] > 0),
            "long_phrase": float(s["len"] >= 2),
            "sentences": math.log1p(len(sentences[t])),
            "first_pos": first[t] / max(n_tokens, 1),
            "broad": 1.0 - T.BROAD_TAGS.get(t, 1.0),
            "umbrella_with_narrow": float(bool(tag_rules.UMBRELLA_OF.get(t, T._NONE) & present)),
            "narrow_with_umbrella": float(
                any(t in tag_rules.NARROWER.get(u, T._NONE) for u in present)
            ),
            f"facet_{facet_of[t]}": 1.0,
            "n_cands": math.log1p(len(ranked)),
            "rule": float(t in rules),
            "rule_first": float(rules[0] == t),
        }
        out.append((t, features))
    return out, rules


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


def fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """L2 logistic regression (soft labels) by Newton's method; weights on the raw features."""
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std < 1e-9] = 1.0
    xs = np.hstack([(x - mean) / std, np.ones((len(x), 1))])
    penalty = np.append(np.full(x.shape[1], l2), 0.0)  # the intercept is not penalized
    w = np.zeros(xs.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(xs @ w)))
        grad = xs.T @ (p - y) + penalty * w
        hess = (xs * (p * (1 - p))[:, None]).T @ xs + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    weights = w[:-1] / std
    return weights, float(w[-1] - (w[:-1] * mean / std).sum())


def select(row: dict, probs: list[float], threshold: float) -> list[str]:
    """Topical candidates with probability >= threshold (at least the best one), best first,
    then the rules' contribution types (only the first when the list would be too long)."""
    order = sorted(range(len(probs)), key=lambda j: -probs[j])
    topical = [row["cands"][j][0] for j in order if probs[j] >= threshold][: T.MAX_TAGS]
    if not topical and order:
        topical = [row["cands"][order[0]][0]]
    kinds = row["kinds"] if len(topical) + len(row["kinds"]) <= T.MAX_TAGS else row["kinds"][:1]
    return topical + [k for k in kinds if k not in topical]


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


def coverage(rows: list[dict], taxonomy: Taxonomy) -> tuple[int, int]:
    """(required topical tags that are candidates, required topical tags) of `rows`."""
    found = total = 0
    for row in rows:
        names = {t for t, _f in row["cands"]}
        for tag in row["gold"]["tags"]:
            if taxonomy.facet_of[tag] != T.CONTRIBUTION_FACET:
                total += 1
                found += tag in names
    return found, total


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
