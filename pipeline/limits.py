"""Run-wide request limits: concurrency, requests/tokens per minute, and shared 429 back-off."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class TokenBucket:
    """Refills at `rate_per_min / 60` per second; holds at most `burst_s` seconds' worth.

    A small burst window means a fresh run cannot spend a whole minute's budget at once. A
    request larger than the bucket waits for a full bucket and leaves it in debt, so big
    requests neither block forever nor widen the burst, and the long-run rate still holds.
    """

    def __init__(self, rate_per_min: float, *, burst_s: float = 1.0):
        self.rate = rate_per_min / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    async def take(self, amount: float) -> None:
        """Wait until `amount` is available (a full bucket for bigger amounts), then spend it."""
        needed = min(amount, self.capacity)
        async with self._lock:
            while True:
                self._refill()
                if self.tokens >= needed:
                    self.tokens -= amount
                    return
                await asyncio.sleep((needed - self.tokens) / self.rate)

    def refund(self, amount: float) -> None:
        """Give back an over-estimate once the real usage is known."""
        self._refill()
        self.tokens = min(self.capacity, self.tokens + amount)


class Limiter:
    """Every backend request goes through `slot()`: one place enforces all limits."""

    def __init__(
        self,
        *,
        max_concurrency: int,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
    ) -> None:
        self._sem = asyncio.Semaphore(max_concurrency)
        self._rpm = TokenBucket(requests_per_minute) if requests_per_minute else None
        # A request above one second's worth of tokens borrows from the future (see take).
        self._tpm = TokenBucket(tokens_per_minute) if tokens_per_minute else None
        self._pause_until = 0.0
        self.backoffs = 0

    def backoff(self, seconds: float) -> None:
        """Pause every new request of the run (after a 429), not just the one that got it."""
        until = time.monotonic() + max(0.0, seconds)
        if until > self._pause_until:
            self._pause_until = until
            self.backoffs += 1

    async def _wait_pause(self) -> None:
        while (delay := self._pause_until - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    @asynccontextmanager
    async def slot(self, est_tokens: int) -> AsyncIterator[_Usage]:
        """Hold a concurrency slot and spend rate budget for one request."""
        async with self._sem:
            await self._wait_pause()
            if self._rpm:
                await self._rpm.take(1)
            if self._tpm:
                await self._tpm.take(est_tokens)
            # A 429 may have paused the run while this request waited for rate budget.
            await self._wait_pause()
            usage = _Usage(est_tokens)
            yield usage
            if self._tpm and usage.actual is not None and usage.actual < est_tokens:
                self._tpm.refund(est_tokens - usage.actual)


class _Usage:
    """Lets the caller report the real token count of the request it made."""

    __slots__ = ("estimate", "actual")

    def __init__(self, estimate: int) -> None:
        self.estimate = estimate
        self.actual: int | None = None
