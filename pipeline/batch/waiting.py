"""How `digest batch collect --wait` waits: a poll at most every MIN_POLL_S seconds, up to a
deadline (`--timeout`), riding out an endpoint that is unavailable for a while (no
connection, 408/409/429/5xx) with back-off: 2, 4, 8, ... seconds, at most BACKOFF_MAX_S.

Time is read and slept through `CLOCK`, which tests replace by a clock that only pretends.
"""

from __future__ import annotations

import time
from typing import Protocol

MIN_POLL_S = 5.0  # a batch takes minutes to hours: polling faster only loads the endpoint
DEFAULT_POLL_S = 60.0
DEFAULT_TIMEOUT_S = 25 * 3600.0  # the Batch API's 24 h window, and then some
BACKOFF_FIRST_S = 2.0
BACKOFF_MAX_S = 300.0


class Clock(Protocol):
    """Monotonic seconds, and a sleep."""

    def now(self) -> float:
        """Seconds since some fixed point."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait this long."""
        ...


class SystemClock:
    """time.monotonic and time.sleep."""

    def now(self) -> float:
        """time.monotonic()."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """time.sleep(seconds)."""
        time.sleep(seconds)


CLOCK: Clock = SystemClock()


def backoff_s(failures: int) -> float:
    """The wait after `failures` failed polls in a row: 2, 4, 8, ... s, at most BACKOFF_MAX_S."""
    return min(BACKOFF_FIRST_S * 2 ** min(failures - 1, 30), BACKOFF_MAX_S)


def describe_s(seconds: float) -> str:
    """A duration as people say it: `45 s`, `1 min 40 s`, `25 h`."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    parts.append(f"{secs} s" if secs or not (hours or minutes) else "")
    return " ".join(p for p in parts if p)
