"""Which engine runs a job: the one place that decides between local and Ray.

`engine_for(settings)` is what the CLI checks before any input is read and what `run_job`
builds its backend with and runs the stages through; an explicit backend (tests, embedding
applications) always runs locally.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Protocol

from pipeline.backends import Backend, make_backend
from pipeline.config import Settings
from pipeline.engine.progress import Progress
from pipeline.engine.stage_runner import StageRunner
from pipeline.ingest import Abstract
from pipeline.limits import Limiter
from pipeline.taxonomy import Taxonomy


class Engine(Protocol):
    """How a job's uncached stages are asked."""

    def check(self) -> None:
        """Refuse a setting this engine cannot honour, and start in the background what it
        needs (before any input is read)."""

    def backend(self, limiter: Limiter, taxonomy: Taxonomy) -> Backend:
        """The run's backend."""

    def run(
        self,
        runner: StageRunner,
        abstracts: Iterable[Abstract],
        progress: Progress,
        settle: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        """Ask the stages and let `settle` (the local pass over the abstracts) finish."""


class LocalEngine:
    """Every stage asked in this process, by the pass itself."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def check(self) -> None:
        """Nothing to refuse."""

    def backend(self, limiter: Limiter, taxonomy: Taxonomy) -> Backend:
        """The backend the settings name."""
        return make_backend(self.settings, limiter, taxonomy)

    def run(
        self,
        runner: StageRunner,
        abstracts: Iterable[Abstract],
        progress: Progress,
        settle: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        """The local pass asks as it goes."""
        asyncio.run(settle())


class RayEngine:
    """Uncached stages asked on Ray while the local pass settles each answer as it comes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def check(self) -> None:
        """No Ray extra, or the offline backend: refused; else, with a cold cache, Ray and its
        actors start in the background while the inputs and the cache are read."""
        from pipeline.engine.ray_engine import check_engine, start_early

        check_engine(self.settings)
        start_early(self.settings)

    def backend(self, limiter: Limiter, taxonomy: Taxonomy) -> Backend:
        """The actors' request counts, and a local backend for what the pass must ask."""
        from pipeline.engine.ray_engine import RayBackend

        self.check()
        return RayBackend(self.settings, limiter)

    def run(
        self,
        runner: StageRunner,
        abstracts: Iterable[Abstract],
        progress: Progress,
        settle: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        """Ray asks; the pass (`settle`) takes the answers as they arrive."""
        from pipeline.engine.ray_engine import RayBackend, run_with_ray

        assert isinstance(runner.backend, RayBackend)
        run_with_ray(
            self.settings,
            runner,
            runner.backend,
            abstracts,
            progress,
            settle=lambda: asyncio.run(settle()),
        )


def engine_for(settings: Settings, *, backend: Backend | None = None) -> Engine:
    """The engine of a job: Ray when the settings ask for it and no backend is given."""
    if settings.engine == "ray" and backend is None:
        return RayEngine(settings)
    return LocalEngine(settings)
