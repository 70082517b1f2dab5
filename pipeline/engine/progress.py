"""Progress reporting as a callback: the CLI supplies one, the engine only calls it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Progress(Protocol):
    """What the engine tells a watcher while it runs."""

    def start(self, total: int, stages: Sequence[str]) -> None:
        """The run begins: `total` abstracts through `stages`."""

    def stage_done(
        self,
        stage: str,
        *,
        ok: bool,
        cached: bool,
        tokens_in: int,
        tokens_out: int,
        tokens_cached: int = 0,
        dropped: int = 0,
    ) -> None:
        """One (abstract, stage) finished: from the cache, or after its requests; `dropped`
        items (claims) were left out of an ok output."""

    def record_done(self) -> None:
        """One abstract's summary record was written."""

    def close(self) -> None:
        """The run ended (finished, interrupted or failed)."""


class NoProgress:
    """Reports nothing (library use, tests, --no-progress)."""

    def start(self, total: int, stages: Sequence[str]) -> None:
        """Nothing to show."""

    def stage_done(
        self,
        stage: str,
        *,
        ok: bool,
        cached: bool,
        tokens_in: int,
        tokens_out: int,
        tokens_cached: int = 0,
        dropped: int = 0,
    ) -> None:
        """Nothing to show."""

    def record_done(self) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to show."""
