"""Rate limits of the fake OpenAI server: sliding 60 s windows of requests and tokens."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

WINDOW_S = 60.0


def max_in_window(times: Iterable[float], window_s: float) -> int:
    """Most timestamps falling in any half-open window of ``window_s`` seconds."""
    ordered = sorted(times)
    best = start = 0
    for end, t in enumerate(ordered):
        while ordered[start] <= t - window_s:
            start += 1
        best = max(best, end - start + 1)
    return best


class RateLimiter:
    """RPM / TPM over a sliding 60 s window of admitted requests (event-loop thread only)."""

    def __init__(self, rpm: int | None, tpm: int | None, window_s: float = WINDOW_S) -> None:
        self.rpm, self.tpm, self.window_s = rpm, tpm, window_s
        self._times: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._token_sum = 0

    def admit(self, now: float, tokens: int) -> tuple[float, str] | None:
        """Record the request and return None, or return (seconds to wait, limit kind)."""
        self._prune(now)
        if self.rpm is not None and len(self._times) >= self.rpm:
            return self._times[-self.rpm] + self.window_s - now, "requests"
        if self.tpm is not None:
            if tokens > self.tpm:
                return self.window_s, "request_too_large"
            wait = self._token_wait(now, tokens)
            if wait > 0:
                return wait, "tokens"
        self._times.append(now)
        self._tokens.append((now, tokens))
        self._token_sum += tokens
        return None

    def _prune(self, now: float) -> None:
        horizon = now - self.window_s
        while self._times and self._times[0] <= horizon:
            self._times.popleft()
        while self._tokens and self._tokens[0][0] <= horizon:
            self._token_sum -= self._tokens.popleft()[1]

    def _token_wait(self, now: float, tokens: int) -> float:
        excess = self._token_sum + tokens - (self.tpm or 0)
        if excess <= 0:
            return 0.0
        freed = 0
        for t, n in self._tokens:  # oldest first: wait until enough of them have expired
            freed += n
            if freed >= excess:
                return t + self.window_s - now
        return self.window_s  # unreachable while tokens <= tpm
