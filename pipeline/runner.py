"""Async orchestration: abstracts x stages through a backend, validated, cached, written in order.

Every abstract ends as one summary record (each stage ok or failed) and every failed stage
as one errors.jsonl record. Content failures are re-asked with the validation error fed
back (at most `max_reasks`); transport failures are retried inside the backend and never
reach a re-ask prompt. A fatal backend error (bad key, unknown model) or a signal stops the
run: in-flight work is cancelled, finished work is already in the cache.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from pipeline.backends import Backend
from pipeline.cache import Cache, cache_key
from pipeline.config import Settings
from pipeline.errors import BackendError, FatalBackendError, OutputValidationError, RunInterrupted
from pipeline.ingest import Abstract
from pipeline.outputs import RunWriter
from pipeline.schemas import SCHEMA_VERSION
from pipeline.stages import Stage

log = logging.getLogger(__name__)


@dataclass
class StageStats:
    """Counts for one stage over a run."""

    ok: int = 0
    failed: int = 0
    cache_hits: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    failure_kinds: Counter = field(default_factory=Counter)


@dataclass
class RunStats:
    """What happened in a run, for the manifest and the closing summary."""

    stages: dict[str, StageStats]
    records: int = 0
    records_failed: int = 0
    interrupted: bool = False
    fatal: str | None = None

    @property
    def failed_stages(self) -> int:
        """Number of (abstract, stage) pairs that failed."""
        return sum(s.failed for s in self.stages.values())


class Runner:
    """Runs the configured stages over abstracts with one backend and one cache."""

    def __init__(
        self,
        *,
        settings: Settings,
        stages: dict[str, Stage],
        backend: Backend,
        cache: Cache,
        writer: RunWriter,
    ) -> None:
        self.settings = settings
        self.stages = stages
        self.backend = backend
        self.cache = cache
        self.writer = writer
        self.stats = RunStats(stages={name: StageStats() for name in stages})
        self._json_object = settings.response_format == "json_object"
        self._max_reasks = settings.max_reasks if backend.can_reask else 0

    def key(self, stage: Stage, abstract: Abstract) -> str:
        """Cache key of one (stage, abstract) under the current settings."""
        return cache_key(
            stage=stage.name,
            prompt_hash=stage.prompt_hash,
            schema_version=SCHEMA_VERSION,
            backend=self.backend.name,
            model=self.backend.model,
            params=self.settings.generation_params,
            abstract_text=abstract.text,
        )

    def _provenance(self, stage: Stage, key: str, **fields: Any) -> dict[str, Any]:
        return {
            "backend": self.backend.name,
            "model": self.backend.model,
            "prompt_hash": stage.prompt_hash,
            "schema_version": SCHEMA_VERSION,
            "cache_key": key,
            **fields,
        }

    @staticmethod
    def _from_cache(hit: dict[str, Any]) -> dict[str, Any]:
        return {
            "status": "ok",
            "output": hit["output"],
            "provenance": {**hit["provenance"], "cached": True},
        }

    def cached_record(self, abstract: Abstract) -> dict[str, Any] | None:
        """The summary record of an abstract whose every stage is cached, without a task; else None."""
        if self.settings.force:
            return None
        hits = {}
        for name, stage in self.stages.items():
            hit = self.cache.stages[name].get(self.key(stage, abstract))
            if hit is None:
                return None
            hits[name] = hit
        for name in hits:
            self.stats.stages[name].ok += 1
            self.stats.stages[name].cache_hits += 1
        return self._record(abstract, [self._from_cache(hit) for hit in hits.values()])

    async def run_stage(self, stage: Stage, abstract: Abstract) -> dict[str, Any]:
        """One stage of one abstract: from cache, or asked (and re-asked) until valid or given up."""
        stats = self.stats.stages[stage.name]
        key = self.key(stage, abstract)
        stage_cache = self.cache.stages[stage.name]
        if not self.settings.force and (hit := stage_cache.get(key)) is not None:
            stats.ok += 1
            stats.cache_hits += 1
            return self._from_cache(hit)

        messages = stage.messages(abstract.text, json_object_mode=self._json_object)
        started = time.perf_counter()
        attempts = tokens_in = tokens_out = 0
        error: OutputValidationError | BackendError | None = None
        raw: str | None = None
        output: dict[str, Any] | None = None
        for _ in range(self._max_reasks + 1):
            attempts += 1
            stats.calls += 1
            try:
                completion = await self.backend.complete(stage, abstract.text, messages)
            except FatalBackendError:
                raise
            except BackendError as exc:
                error = exc
                break
            tokens_in += completion.tokens_in
            tokens_out += completion.tokens_out
            raw = completion.content
            try:
                output = self._check(stage, abstract, completion)
                break
            except OutputValidationError as exc:
                error = exc
                messages = [
                    *messages,
                    {"role": "assistant", "content": raw or ""},
                    {"role": "user", "content": stage.template.render_reask(str(exc))},
                ]

        stats.tokens_in += tokens_in
        stats.tokens_out += tokens_out
        provenance = self._provenance(
            stage,
            key,
            attempts=attempts,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_ms=round((time.perf_counter() - started) * 1000, 1),
            cached=False,
        )
        if output is not None:
            stage_cache.put(key, {"stage": stage.name, "output": output, "provenance": provenance})
            stats.ok += 1
            return {"status": "ok", "output": output, "provenance": provenance}

        assert error is not None
        stats.failed += 1
        stats.failure_kinds[error.kind] += 1
        self.writer.write_error(
            {
                "id": abstract.id,
                "sources": [s.to_dict() for s in abstract.sources],
                "stage": stage.name,
                "kind": error.kind,
                "message": str(error),
                "attempts": attempts,
                "raw": raw if raw is not None else getattr(error, "raw", None),
            }
        )
        return {
            "status": "failed",
            "output": None,
            "error": {"kind": error.kind, "message": str(error)},
            "provenance": provenance,
        }

    def _check(self, stage: Stage, abstract: Abstract, completion) -> dict[str, Any]:
        if completion.refusal:
            raise OutputValidationError(
                f"the model refused: {completion.refusal[:200]}", kind="refusal", raw=None
            )
        if completion.finish_reason == "length":
            raise OutputValidationError(
                f"the answer was cut off at max_tokens={self.settings.max_tokens}; answer more briefly",
                kind="truncated",
                raw=completion.content,
            )
        return stage.parse(completion.content, abstract.text)

    async def run_abstract(self, abstract: Abstract) -> dict[str, Any]:
        """All stages of one abstract, concurrently, as one summary record."""
        results = await asyncio.gather(
            *(self.run_stage(stage, abstract) for stage in self.stages.values())
        )
        return self._record(abstract, results)

    def _record(self, abstract: Abstract, results: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": abstract.id,
            "title": abstract.title,
            "sources": [s.to_dict() for s in abstract.sources],
            "abstract": abstract.text,
            "stages": dict(zip(self.stages, results, strict=True)),
        }

    def _emit(self, record: dict[str, Any]) -> None:
        self.writer.write_record(record)
        self.stats.records += 1
        if any(s["status"] != "ok" for s in record["stages"].values()):
            self.stats.records_failed += 1

    async def run(self, abstracts: Iterable[Abstract], *, total: int | None = None) -> RunStats:
        """Process every abstract; records are written in input order as they complete."""
        loop = asyncio.get_running_loop()
        # Resolved by a signal or by a failed task: the loop wakes at once in either case.
        wake = loop.create_future()
        stop_reason: list[str] = []
        failures: list[BaseException] = []

        def request_stop(signum: int) -> None:
            stop_reason.append(signal.Signals(signum).name)
            if not wake.done():
                wake.set_result(None)

        def watch(task: asyncio.Task) -> None:
            if not task.cancelled() and task.exception() is not None:
                failures.append(task.exception())
                if not wake.done():
                    wake.set_result(None)

        handled = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, request_stop, sig)
                handled.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (tests): no signal handling needed

        # Records are written in input order; a wide window keeps one abstract stuck in
        # back-off from stalling the others (memory per pending abstract is small).
        window_size = max(256, 8 * self.settings.max_concurrency)
        window: deque[asyncio.Task] = deque()
        pending = iter(abstracts)
        progress = tqdm(
            total=total, unit="abstract", disable=not self.settings.progress, dynamic_ncols=True
        )
        direct = 0
        try:
            exhausted = False
            while not stop_reason:
                while not exhausted and len(window) < window_size:
                    nxt = next(pending, None)
                    if nxt is None:
                        exhausted = True
                        break
                    # Fast path (warm reruns): nothing ahead in the window, everything cached.
                    if not window and (record := self.cached_record(nxt)) is not None:
                        self._emit(record)
                        progress.update(1)
                        direct += 1
                        if direct % 256 == 0:
                            await asyncio.sleep(0)  # let signals through
                            if stop_reason:
                                break
                        continue
                    task = asyncio.ensure_future(self.run_abstract(nxt))
                    task.add_done_callback(watch)
                    window.append(task)
                if not window:
                    break
                head = window[0]
                if not head.done():
                    await asyncio.wait({head, wake}, return_when=asyncio.FIRST_COMPLETED)
                # A fatal error in any in-flight abstract stops the run now, not when it reaches the head.
                if failures:
                    raise failures[0]
                if not head.done():
                    break  # stopped by a signal
                window.popleft()
                self._emit(head.result())
                progress.update(1)
        except FatalBackendError as exc:
            self.stats.fatal = str(exc)
            raise
        finally:
            for task in window:
                task.cancel()
            await asyncio.gather(*window, return_exceptions=True)
            progress.close()
            for sig in handled:
                loop.remove_signal_handler(sig)
        if stop_reason:
            self.stats.interrupted = True
            raise RunInterrupted(f"stopped by {stop_reason[0]}")
        return self.stats
