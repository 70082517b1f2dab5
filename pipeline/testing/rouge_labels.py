"""ROUGE F1 as rouge-score computes it (tokenize, Porter-stem words of > 3 letters), memoized.

The labels bench/train_tldr.py fits the offline TL;DR ranker to: fast enough to score every
candidate sentence of SciTLDR train. Needs nltk (which rouge-score brings).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache, lru_cache
from typing import Any

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import porter

    return porter.PorterStemmer()


@cache
def _stem(word: str) -> str:
    return _stemmer().stem(word) if len(word) > 3 else word


@cache
def tokens(text: str) -> tuple[str, ...]:
    """Lowercased alphanumeric words, Porter-stemmed when longer than 3 letters."""
    return tuple(_stem(w) for w in _NON_ALNUM.sub(" ", text.lower()).split())


def rouge_f1(prediction: str, reference: str, n: int = 1) -> float:
    """ROUGE-n F1 (n = 1 or 2) of a prediction against one reference."""
    a: tuple[object, ...] = tokens(prediction)
    b: tuple[object, ...] = tokens(reference)
    if n == 2:
        a, b = tuple(zip(a, a[1:], strict=False)), tuple(zip(b, b[1:], strict=False))
    if not a or not b:
        return 0.0
    overlap = sum((Counter(a) & Counter(b)).values())
    if not overlap:
        return 0.0
    p, r = overlap / len(a), overlap / len(b)
    return 2 * p * r / (p + r)


def best_rouge1(prediction: str, references: list[str]) -> float:
    """The best ROUGE-1 F1 over the references."""
    return max(rouge_f1(prediction, ref) for ref in references)
