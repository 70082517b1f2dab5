"""A learned selection of the offline tagger's topical tags: candidates, features, fit, pick.

Candidates are the topical tags the Matcher finds any mention of (`tags._Analysis`); each
gets a feature vector (its score and rank as `tags._topical` computes them, mentions by place:
lead, first, last and "we propose/study" sentences, enumerations and examples, phrase length,
broad/umbrella/narrow relations, facet, whether the rules select it). `fit` is an L2 logistic
regression on soft labels; `select` keeps the candidates at or above a threshold and appends
the rules' contribution types as `tags._select` does. bench/train_tags.py cross-validates it
against the rules (it did not beat them, so nothing here is used at run time).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict

import numpy as np

from pipeline.offline import tag_rules
from pipeline.offline import tags as T
from pipeline.taxonomy import Taxonomy

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
