"""Speed checks that hold on a busy machine: a ratio against a reference timed in the same
run (CPU time, best of a few), never an absolute wall-clock bound."""

from __future__ import annotations

import time
from collections.abc import Callable


def cpu_seconds(fn: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU time of `repeat` calls of fn (other processes do not count against it)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return max(best, 1e-4)


def assert_scales_linearly(
    small: Callable[[], object], big: Callable[[], object], size_ratio: float
) -> None:
    """`big` (size_ratio times the input of `small`) costs at most 4x linear: a quadratic
    blow-up (size_ratio-fold worse) fails, machine load does not."""
    t_small, t_big = cpu_seconds(small), cpu_seconds(big, repeat=1)
    assert t_big <= 4 * size_ratio * t_small + 0.05, (t_small, t_big, size_ratio)
