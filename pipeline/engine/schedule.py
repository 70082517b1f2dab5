"""The ordered window: abstracts run concurrently, their records are emitted in input order.

A wide window keeps one abstract stuck in back-off from stalling the others (memory per
pending abstract is small). An abstract whose every stage is cached is emitted without a
task when nothing is ahead of it (warm reruns). SIGINT/SIGTERM or a fatal error in any
in-flight abstract stops the loop at once; in-flight work is cancelled (finished work is
already in the cache).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

from pipeline.errors import RunInterrupted

T = TypeVar("T")
R = TypeVar("R")


class StopSignal:
    """Wakes the scheduler on SIGINT/SIGTERM or on a failed task; remembers why."""

    def __init__(self) -> None:
        self.wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.signal_name: str | None = None
        self.failure: BaseException | None = None

    def _set(self) -> None:
        if not self.wake.done():
            self.wake.set_result(None)

    def on_signal(self, signum: int) -> None:
        """A signal asked the run to stop."""
        self.signal_name = self.signal_name or signal.Signals(signum).name
        self._set()

    def watch(self, task: asyncio.Task) -> None:
        """Done-callback: a task that raised stops the run."""
        if not task.cancelled() and task.exception() is not None and self.failure is None:
            self.failure = task.exception()
            self._set()

    @property
    def stopped(self) -> bool:
        """True once a signal or a failure asked the run to stop."""
        return self.signal_name is not None or self.failure is not None


@contextlib.contextmanager
def handle_signals(stop: StopSignal) -> Iterator[None]:
    """SIGINT and SIGTERM stop the run (only in the main thread; elsewhere a no-op)."""
    loop = asyncio.get_running_loop()
    handled = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)
        try:
            loop.add_signal_handler(sig, stop.on_signal, sig)
            handled.append((sig, previous))
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread (tests): no signal handling needed
    try:
        yield
    finally:
        for sig, previous in handled:
            loop.remove_signal_handler(sig)
            if previous is not None:  # asyncio leaves the default: put back what was there
                signal.signal(sig, previous)


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Outside the event loop too, SIGTERM and Ctrl-C stop the command as RunInterrupted
    ("stopped by SIGTERM" / "stopped by SIGINT"), as both do while a run's loop turns:
    one exit code (130) and one message for both (SIGTERM only in the main thread)."""

    def stop(signum: int, frame: object) -> None:
        raise RunInterrupted("stopped by SIGTERM")

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread
        previous = None
    try:
        yield
    except KeyboardInterrupt:
        raise RunInterrupted("stopped by SIGINT") from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


async def run_in_order(
    items: Iterable[T],
    *,
    work: Callable[[T], Awaitable[R]],
    ready: Callable[[T], R | None],
    emit: Callable[[R], None],
    window_size: int,
) -> None:
    """Run `work` over items with at most `window_size` pending, `emit`ting results in order.

    `ready(item)` may return a finished result without a task (used only when nothing is
    pending ahead of the item, so order holds). Raises RunInterrupted on a signal and the
    task's own exception when one fails.
    """
    stop = StopSignal()
    window: deque[asyncio.Task[R]] = deque()
    pending = iter(items)
    exhausted = False
    direct = 0
    with handle_signals(stop):
        try:
            while not stop.stopped:
                while not exhausted and len(window) < window_size:
                    item = next(pending, None)
                    if item is None:
                        exhausted = True
                        break
                    if not window and (result := ready(item)) is not None:
                        emit(result)
                        direct += 1
                        if direct % 256 == 0:
                            await asyncio.sleep(0)  # let signals through
                            if stop.stopped:
                                break
                        continue
                    task = asyncio.ensure_future(work(item))
                    task.add_done_callback(stop.watch)
                    window.append(task)
                if not window or stop.stopped:
                    break
                head = window[0]
                if not head.done():
                    waiters: set[asyncio.Future[Any]] = {head, stop.wake}
                    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                if stop.stopped:
                    break
                window.popleft()
                emit(head.result())
        finally:
            for task in window:
                task.cancel()
            await asyncio.gather(*window, return_exceptions=True)
    if stop.failure is not None:
        raise stop.failure
    if stop.signal_name is not None:
        raise RunInterrupted(f"stopped by {stop.signal_name}")
