"""Waiting in tests without betting on how busy the machine is.

What a test asserts is ordered by events (a gate the fake server holds requests at, a
condition polled until it holds), never by a deadline. `HANG_S` is the one deadline: a
safety net against a hang, so generous that no load reaches it, and never what is asserted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

# Long enough for anything on a 2-core machine with a load average of 15; a test that needs
# it has hung.
HANG_S = 600.0


def preflight_hang_guard(folder: Path) -> Path:
    """`folder/config.yaml` with the preflight's bound at `HANG_S` (added to what the file
    holds): a `digest` child started in `folder` (or given this file) does not take a busy
    machine for a dead server. The test process gets the same from tests/conftest.py."""
    config = folder / "config.yaml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    if "preflight_timeout_s:" not in text:
        config.write_text(f"{text}preflight_timeout_s: {HANG_S:g}\n", encoding="utf-8")
    return config


def wait_until(predicate: Callable[[], bool], what: str = "condition") -> None:
    """Poll `predicate` until it holds; fail only after `HANG_S` (a hang, not slowness)."""
    deadline = time.monotonic() + HANG_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not met after {HANG_S:g}s (hung)")
        time.sleep(0.01)


class Rounds:
    """The fake server's `hold` hook: requests are held in groups of `size` and each group is
    let through once its last request has arrived, so `size` requests are provably in
    flight together however slowly the client sends them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._gate = threading.Event()
        self._waiting = 0
        self.rounds = 0  # groups let through

    def __call__(self, stage: str, abstract: str) -> threading.Event:
        with self._lock:
            gate = self._gate
            self._waiting += 1
            if self._waiting == self.size:
                gate.set()
                self._gate, self._waiting = threading.Event(), 0
                self.rounds += 1
        return gate

    def release(self) -> None:
        """Let the current, incomplete group through (e.g. when a test ends early)."""
        with self._lock:
            self._gate.set()


class Gate:
    """A server `sleep` that returns when the test opens the gate, not when time has passed:
    a stall or latency that lasts exactly as long as the test needs it to."""

    def __init__(self, *, opened: bool = False) -> None:
        self.opened = threading.Event()
        if opened:  # only records the delays asked for
            self.opened.set()
        self.asked: list[float] = []  # the delays the server asked for, in order

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        while not self.opened.is_set():
            await asyncio.sleep(0.005)

    def open(self) -> None:
        """Let every waiting and future sleep return."""
        self.opened.set()


class Budget:
    """The fake server's `hold` hook: lets a set number of requests through and holds the
    rest at a gate, so a run stops at a known point instead of racing a test that polls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gate = threading.Event()
        self._limit: int | None = None  # None: no limit
        self.passed = 0

    def __call__(self, stage: str, abstract: str) -> threading.Event | None:
        with self._lock:
            if self._limit is None or self.passed < self._limit:
                self.passed += 1
                return None
            return self._gate

    def reopen(self, more: int | None) -> None:
        """Release the requests held so far (their client is gone) and let `more` new ones
        through (None: all)."""
        with self._lock:
            self._limit = None if more is None else self.passed + more
            self._gate.set()
            self._gate = threading.Event()
