"""Confidence intervals for the rates an evaluation reports (gold sets are small)."""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # the two-sided 95% quantile of the standard normal


def wilson(hits: int, total: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of hits/total (95% by default); None when total is 0."""
    if total <= 0:
        return None
    if not 0 <= hits <= total:
        raise ValueError(f"hits must lie in [0, {total}], got {hits}")
    share = hits / total
    z2 = z * z
    centre = (share + z2 / (2 * total)) / (1 + z2 / total)
    half = z * math.sqrt(share * (1 - share) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    # At 0 or total hits the exact bound is 0 or 1; clamp the float noise around it.
    return (
        0.0 if hits == 0 else max(0.0, centre - half),
        1.0 if hits == total else min(1.0, centre + half),
    )
