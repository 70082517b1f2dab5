"""One run: ingested abstracts through every configured stage into a run folder.

The flow is one-way: the CLI ingests, `run_job` runs the stages and writes the run folder
(and feeds every record to the sinks the caller gives, e.g. the HTML report), the CLI
reports. The manifest is written when the run starts (status "running") and again when it
ends, whatever the ending, so a folder always says whether it is complete.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pipeline import __version__
from pipeline.backends import Backend, make_backend
from pipeline.cache import Cache
from pipeline.config import Settings
from pipeline.engine.progress import NoProgress, Progress
from pipeline.engine.schedule import run_in_order
from pipeline.engine.stage_runner import FirstAnswer, StageRunner
from pipeline.engine.stats import RunStats
from pipeline.errors import FatalBackendError, InputError, RunInterrupted, StorageError
from pipeline.ingest import MAX_IGNORED_LISTED, Abstract, IngestResult
from pipeline.limits import Limiter
from pipeline.prompts import content_hash
from pipeline.rundir import Manifest, RunWriter, SummaryRecord
from pipeline.rundir.models import Counts, RunStatus, StageCounts, TaxonomyRef, Tokens
from pipeline.schemas import SCHEMA_VERSION
from pipeline.stages import Stage, build_stages, validator_id
from pipeline.taxonomy import Taxonomy, load_taxonomy

log = logging.getLogger(__name__)


class RecordSink(Protocol):
    """Something that consumes every summary record of a run as it is written."""

    def add(self, record: SummaryRecord, line: bytes | None = None) -> None:
        """One record, in input order (`line`: as summaries.jsonl holds it)."""

    def finish(self, manifest: Manifest) -> None:
        """The run ended; the manifest says how."""


@dataclass
class JobResult:
    """Where a run wrote its files and what happened."""

    run_dir: Path
    manifest: Manifest
    stats: RunStats


def new_run_dir(settings: Settings, prefix: str = "run") -> Path:
    """`--out` if given, else a fresh timestamped folder under outputs/ (`<prefix>-<stamp>`)."""
    if settings.out_dir is not None:
        return settings.out_dir
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate = settings.outputs_root / f"{prefix}-{stamp}"
    n = 1
    while candidate.exists():
        n += 1
        candidate = settings.outputs_root / f"{prefix}-{stamp}-{n}"
    return candidate


def load_project_taxonomy(settings: Settings) -> Taxonomy:
    """The taxonomy file next to the prompt templates."""
    return load_taxonomy(settings.prompts_dir / "taxonomy.yaml")


@dataclass
class _Run:
    """What one run holds while it goes: its parts and its counts."""

    settings: Settings
    ingest: IngestResult
    taxonomy: Taxonomy
    stages: dict[str, Stage]
    writer: RunWriter
    cache: Cache
    stats: RunStats
    sinks: Sequence[RecordSink]
    progress: Progress
    started: float
    backend: Backend | None = None
    limiter: Limiter | None = None
    first_answers: dict[str, FirstAnswer] | None = None

    def emit(self, record: SummaryRecord) -> None:
        line = self.writer.write_record(record)
        self.stats.records += 1
        if record.failed:
            self.stats.records_failed += 1
        for sink in self.sinks:
            sink.add(record, line)
        self.progress.record_done()

    def stage_counts(self) -> dict[str, StageCounts]:
        """Per-stage counts; requests as the backend counted them when it does (exact even
        for requests a fatal error or an interrupt cut short)."""
        counts = {name: s.counts() for name, s in self.stats.stages.items()}
        sent = getattr(self.backend, "requests_sent", None)
        if sent is not None:
            retries = getattr(self.backend, "retries_by_stage", {})
            for name, c in counts.items():
                c.backend_calls = sent.get(name, 0)
                c.transport_retries = retries.get(name, 0)
        return counts

    def manifest(self, status: RunStatus) -> Manifest:
        stats = self.stats
        backend = self.backend
        stages = self.stage_counts()
        return Manifest(
            version=__version__,
            status=status,
            fatal_error=stats.fatal,
            started_at=datetime.fromtimestamp(self.started, UTC).isoformat(),
            elapsed_s=round(time.time() - self.started, 3),
            inputs=list(self.ingest.inputs),
            config=self.settings.public_dict(),
            backend=backend.name if backend else self.settings.resolved_provider,
            model=backend.model if backend else self.settings.model,
            counts=Counts(
                inputs=self.ingest.n_inputs,
                unique=len(self.ingest.abstracts),
                duplicates=self.ingest.n_inputs - len(self.ingest.abstracts),
                skipped_inputs=len(self.ingest.skipped),
                records_written=stats.records,
                records_with_failures=stats.records_failed,
                stages=stages,
            ),
            tokens=Tokens.model_validate(
                {"in": stats.tokens_in, "out": stats.tokens_out, "cached": stats.tokens_cached}
            ),
            requests_sent=sum(c.backend_calls for c in stages.values()),
            transport_retries=getattr(backend, "transport_retries", 0),
            rate_limit_pauses=(self.limiter.backoffs if self.limiter else 0)
            + getattr(backend, "rate_limit_pauses", 0),
            skipped_inputs=self.ingest.skipped[:100],
            ignored_files=self.ingest.ignored[:MAX_IGNORED_LISTED],
            schema_version=SCHEMA_VERSION,
            prompts={name: stage.prompt_hash for name, stage in self.stages.items()},
            taxonomy=TaxonomyRef(
                version=self.taxonomy.version,
                hash=content_hash(self.taxonomy.model_dump(mode="json")),
            ),
            cache_dir=str(self.cache.dir),
        )


def run_job(
    settings: Settings,
    ingest: IngestResult,
    run_dir: Path,
    *,
    progress: Progress | None = None,
    sinks: Sequence[RecordSink] = (),
    backend: Backend | None = None,
    first_answers: dict[str, FirstAnswer] | None = None,
) -> JobResult:
    """Run every configured stage over the ingested abstracts and write the run folder.

    `backend` replaces the one the settings name (tests, embedding applications); the
    stages then run in this process whatever the engine. With `engine: ray` the uncached
    stages are asked on Ray (pipeline/engine/ray_engine.py) while this pass settles each
    answer as it arrives.
    `first_answers` (cache key -> answer, e.g. Batch API output lines) stand for the first
    request of their stage; each one taken is removed from the dict.
    """
    started = time.time()
    taxonomy = load_project_taxonomy(settings)
    stages = build_stages(settings.stages, settings.prompts_dir, taxonomy)
    cache = Cache(
        settings.cache_dir, tuple(stages), validator_id()
    )  # before the run folder: a bad cache
    try:
        writer = RunWriter(run_dir)  # leaves no half-made folder behind
    except BaseException:
        cache.close()
        raise
    run = _Run(
        settings=settings,
        ingest=ingest,
        taxonomy=taxonomy,
        stages=stages,
        writer=writer,
        cache=cache,
        stats=RunStats.for_stages(tuple(stages)),
        sinks=sinks,
        progress=progress or NoProgress(),
        started=started,
        backend=backend,
        first_answers=first_answers,
    )
    writer.write_manifest(run.manifest("running"))
    status: RunStatus = "fatal"
    failing = True
    try:
        runner = _prepare(run)
        run.progress.start(len(run.ingest.abstracts), tuple(run.stages))
        if settings.engine == "ray" and backend is None:
            from pipeline.engine.ray_engine import RayBackend, run_with_ray

            assert isinstance(run.backend, RayBackend)
            run_with_ray(
                settings,
                runner,
                run.backend,
                run.ingest.abstracts,
                run.progress,
                settle=lambda: asyncio.run(_run(run, runner)),
            )
        else:
            asyncio.run(_run(run, runner))
        status = "ok" if run.stats.failed_stages == 0 else "failed"
        failing = False
    except RunInterrupted:
        status = "interrupted"
        raise
    except (FatalBackendError, InputError, StorageError) as exc:
        run.stats.fatal = str(exc)
        raise
    finally:
        run.progress.close()
        manifest = run.manifest(status)
        _close_run(run, manifest, quiet=failing)
    return JobResult(run_dir, manifest, run.stats)


def _close_run(run: _Run, manifest: Manifest, *, quiet: bool) -> None:
    """Write the last manifest, close every file and finish every sink, whatever fails.

    On a full disk each step may fail: all are tried, then the first StorageError is
    raised, unless the run already stops on an error of its own (`quiet`), which is then
    the one message the user gets.
    """
    steps: list[Callable[[], object]] = [
        functools.partial(run.writer.write_manifest, manifest),
        run.writer.close,
        run.cache.close,
        *(functools.partial(sink.finish, manifest) for sink in run.sinks),
    ]
    first: StorageError | None = None
    for step in steps:
        try:
            step()
        except StorageError as exc:
            log.debug("while closing the run: %s", exc)
            first = first or exc
    if first is not None and not quiet:
        raise first


def _prepare(run: _Run) -> StageRunner:
    """The run's limiter, backend and stage runner."""
    settings = run.settings
    run.limiter = Limiter(
        max_concurrency=settings.max_concurrency,
        requests_per_minute=settings.requests_per_minute,
        tokens_per_minute=settings.tokens_per_minute,
    )
    if run.backend is None and settings.engine == "ray":
        from pipeline.engine.ray_engine import RayBackend, check_engine

        check_engine(settings)
        run.backend = RayBackend(settings, run.limiter)
    elif run.backend is None:
        run.backend = make_backend(settings, run.limiter, run.taxonomy)
    return StageRunner(
        stages=run.stages,
        backend=run.backend,
        cache=run.cache,
        stats=run.stats,
        progress=run.progress,
        on_error=run.writer.write_error,
        params=settings.generation_params,
        json_object=settings.response_format == "json_object",
        max_reasks=settings.max_reasks,
        max_tokens=settings.max_tokens,
        force=settings.force,
        first_answers=run.first_answers,
    )


async def _run(run: _Run, runner: StageRunner) -> None:
    settings = run.settings
    assert run.backend is not None

    async def work(abstract: Abstract) -> SummaryRecord:
        results = await asyncio.gather(
            *(runner.run_stage(stage, abstract) for stage in run.stages.values())
        )
        return runner.record(abstract, dict(zip(run.stages, results, strict=True)))

    feed = runner.remote
    if feed is not None:
        feed.start()
    try:
        await run_in_order(
            run.ingest.abstracts,
            work=work,
            ready=runner.cached_record,
            emit=run.emit,
            window_size=max(256, 8 * settings.max_concurrency),
        )
    finally:
        if feed is not None:
            await feed.close()
        await run.backend.aclose()
