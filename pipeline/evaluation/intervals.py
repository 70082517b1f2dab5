"""Confidence intervals for the rates an evaluation reports (gold sets are small)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping

# Per-abstract counts -> (numerator, denominator) of a micro rate.
Counts = Mapping[str, Mapping[str, int]]
Rate = Callable[[Mapping[str, int]], tuple[int, int]]


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), term by term in log space (comb(n, i) overflows a
    float past n ~ 1,000; each term is at most 1, so exp never overflows)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    log_term = n * math.log1p(-p)  # log P(X = 0)
    log_odds = math.log(p) - math.log1p(-p)
    total = 0.0
    for i in range(k + 1):
        total += math.exp(log_term)
        log_term += math.log((n - i) / (i + 1)) + log_odds if i < n else 0.0
    return min(total, 1.0)


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact two-sided binomial interval for k successes out of n (bisection on the CDF)."""
    if not 0 <= k <= n or n <= 0:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")

    def solve(f: Callable[[float], bool]) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) else (lo, mid)
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(lambda p: 1 - _binom_cdf(k - 1, n, p) < alpha / 2)
    upper = 1.0 if k == n else solve(lambda p: _binom_cdf(k, n, p) > alpha / 2)
    return lower, upper


def interval95(hits: int, total: int) -> tuple[float, float] | None:
    """The exact 95% interval of hits/total, or None when there is nothing to rate."""
    return clopper_pearson(hits, total) if total > 0 else None


def bootstrap_rates(counts: Counts, rates: Mapping[str, Rate], n: int, seed: int) -> dict:
    """95% percentile intervals of micro rates over abstracts resampled with replacement."""
    if n <= 0:
        return {}
    ids = sorted(counts)
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {name: [] for name in rates}
    for _ in range(n):
        draw = [counts[rng.choice(ids)] for _ in ids]
        for name, rate in rates.items():
            num = sum(rate(c)[0] for c in draw)
            den = sum(rate(c)[1] for c in draw)
            if den:
                samples[name].append(num / den)
    out = {}
    for name, values in samples.items():
        values.sort()
        if values:
            out[name] = (values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1])
    return out
