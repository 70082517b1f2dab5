"""The backend's whole-attempt bound ended by an event from the fake server, not by the clock.

A stall or a trickle is only ever ended by the client's bound on each attempt
(`asyncio.timeout(timeout_s)` in `pipeline.backends.openai_backend._bounded`). With a short
`timeout_s` a clean answer on a busy machine misses it too, and a test that counts one retry
per fault fails. `HeldBounds` keeps that very bound (`timeout_s`, generous, stays as the
safety net) and ends it the moment the server reports that it holds the request
(`OpenAIServer(held=bounds.held)`): exactly the faulted attempts time out, however loaded
the machine is. A bound whose request the server never holds (the preflight's, every clean
answer's) runs on the clock as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

import pytest

from pipeline.backends import openai_backend
from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.testing.chat import body_key

# The server's key of the request the current task is sending (set around `_send`).
_SENDING: ContextVar[str | None] = ContextVar("sending", default=None)


class _AsyncioWithBound:
    """`asyncio` as openai_backend sees it, with `timeout` replaced by an event-ended bound."""

    def __init__(self, timeout: Any) -> None:
        self.timeout = timeout

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)


class HeldBounds:
    """Ends the client's bound of each request the fake server holds, when it holds it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bounds: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Timeout]] = {}
        self.ended = 0  # bounds ended by a held event

    def held(self, key: str) -> None:
        """The server's `held` hook (its thread): end the bound of the request `key`."""
        with self._lock:
            entry = self._bounds.get(key)
        if entry is not None:
            loop, bound = entry
            loop.call_soon_threadsafe(self._end, bound)

    def _end(self, bound: asyncio.Timeout) -> None:
        if bound.expired():
            return
        with contextlib.suppress(RuntimeError):  # the attempt ended meanwhile
            bound.reschedule(asyncio.get_running_loop().time())
            self.ended += 1

    @contextlib.asynccontextmanager
    async def _bound(self, delay: float | None) -> AsyncIterator[asyncio.Timeout]:
        key = _SENDING.get()
        async with asyncio.timeout(delay) as bound:
            if key is not None:
                with self._lock:
                    self._bounds[key] = (asyncio.get_running_loop(), bound)
            try:
                yield bound
            finally:
                if key is not None:
                    with self._lock:
                        if self._bounds.get(key, (None, None))[1] is bound:
                            del self._bounds[key]

    def install(self, monkeypatch: pytest.MonkeyPatch) -> HeldBounds:
        """Route the backend's bounds through this object for the rest of the test."""
        real_send = OpenAIBackend._send

        async def send(backend: OpenAIBackend, params: dict, timeout_s: float):
            token = _SENDING.set(body_key(params))
            try:
                return await real_send(backend, params, timeout_s)
            finally:
                _SENDING.reset(token)

        monkeypatch.setattr(OpenAIBackend, "_send", send)
        monkeypatch.setattr(openai_backend, "asyncio", _AsyncioWithBound(self._bound))
        return self
