"""One run: ingested abstracts through every configured stage into a run folder.

The flow is one-way: the CLI ingests, `run_job` runs the stages and writes the run folder
(and feeds every record to the sinks the caller gives, e.g. the HTML report), the CLI
reports. The manifest is written with the folder's first files (status "running") and
again when the run ends, whatever the ending, so a folder always says whether it is
complete. A run that got no answer at all (refused at the start) writes no folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pipeline import __version__
from pipeline.backends import Backend
from pipeline.config import Settings
from pipeline.context import BackendIdentity, RunContext, load_project_taxonomy
from pipeline.engine.progress import NoProgress, Progress
from pipeline.engine.schedule import run_in_order
from pipeline.engine.select import Engine, engine_for
from pipeline.engine.stage_runner import FirstAnswer, StageRunner
from pipeline.engine.stats import RunStats
from pipeline.errors import FatalBackendError, InputError, RunInterrupted, StorageError
from pipeline.ingest import MAX_IGNORED_LISTED, Abstract, IngestResult
from pipeline.limits import Limiter
from pipeline.prompts import content_hash
from pipeline.rundir import Manifest, RunWriter, SummaryRecord
from pipeline.rundir.models import Counts, RunStatus, StageCounts, TaxonomyRef, Tokens
from pipeline.schemas import SCHEMA_VERSION

log = logging.getLogger(__name__)


class RecordSink(Protocol):
    """Something that consumes every summary record of a run as it is written."""

    def add(self, record: SummaryRecord, line: bytes | None = None) -> None:
        """One record, in input order (`line`: as summaries.jsonl holds it)."""

    def finish(self, manifest: Manifest) -> None:
        """The run ended; the manifest says how."""

    def abort(self) -> None:
        """The run ended without writing a run folder: drop whatever was begun."""


@dataclass
class JobResult:
    """Where a run wrote its files and what happened."""

    run_dir: Path
    manifest: Manifest
    stats: RunStats


def new_run_dir(settings: Settings, prefix: str = "run") -> Path:
    """`--out` if given, else a new folder under outputs/, `<prefix>-<stamp>` (`-2`, `-3`, ...
    when taken), made here: mkdir is atomic and exclusive, so two commands started in the
    same second never share one."""
    if settings.out_dir is not None:
        return settings.out_dir
    root = settings.outputs_root
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError.from_os_error(root, exc) from exc
    for n in itertools.count(1):
        candidate = root / (f"{prefix}-{stamp}" if n == 1 else f"{prefix}-{stamp}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise StorageError.from_os_error(candidate, exc) from exc
        return candidate
    raise AssertionError("unreachable")


@contextlib.contextmanager
def claimed_run_dir(settings: Settings, prefix: str = "run") -> Iterator[Path]:
    """`new_run_dir` for a block: a folder it made is removed again on the way out when the
    command left it empty (it stopped before writing a run folder)."""
    run_dir = new_run_dir(settings, prefix)
    try:
        yield run_dir
    finally:
        if settings.out_dir is None:
            with contextlib.suppress(OSError):
                run_dir.rmdir()  # only while empty


__all__ = [
    "JobResult",
    "RecordSink",
    "claimed_run_dir",
    "load_project_taxonomy",
    "new_run_dir",
    "run_job",
]


@dataclass
class _Run:
    """What one run holds while it goes: its parts and its counts."""

    context: RunContext
    engine: Engine
    ingest: IngestResult
    writer: RunWriter
    stats: RunStats
    sinks: Sequence[RecordSink]
    progress: Progress
    started: float
    backend: Backend | None = None
    limiter: Limiter | None = None
    first_answers: dict[str, FirstAnswer] | None = None

    @property
    def settings(self) -> Settings:
        """The run's settings."""
        return self.context.settings

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
            prompts={name: stage.prompt_hash for name, stage in self.context.stages.items()},
            taxonomy=TaxonomyRef(
                version=self.context.taxonomy.version,
                hash=content_hash(self.context.taxonomy.model_dump(mode="json")),
            ),
            cache_dir=str(self.settings.cache_dir),
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
    context: RunContext | None = None,
    on_folder: Callable[[Path], object] | None = None,
) -> JobResult:
    """Run every configured stage over the ingested abstracts and write the run folder.

    `backend` replaces the one the settings name (tests, embedding applications); the
    stages then run in this process whatever the engine. With `engine: ray` the uncached
    stages are asked on Ray (pipeline/engine/ray_engine.py) while this pass settles each
    answer as it arrives.
    `first_answers` (cache key -> answer, e.g. Batch API output lines) stand for the first
    request of their stage; each one taken is removed from the dict.
    `context`: the run context of `settings` when the caller built one (it is closed here).
    `on_folder` is called with `run_dir` when its files are made: at the first record or
    failure record, or at the end of a run that completed or got any answer. A run that
    stops with no answer (refused by the endpoint, nothing cached) writes no run folder and
    never calls it.
    """
    started = time.time()
    identity = BackendIdentity(backend.name, backend.model) if backend is not None else None
    # The cache before the run folder: a bad cache leaves no folder behind.
    context = context or RunContext(settings, identity=identity)
    try:
        engine = engine_for(settings, backend=backend)
        # Locks the folder (another run writing it is refused); makes no file yet.
        writer = RunWriter(run_dir, on_folder=on_folder)
    except BaseException:
        context.close()
        raise
    run = _Run(
        context=context,
        engine=engine,
        ingest=ingest,
        writer=writer,
        stats=RunStats.for_stages(tuple(context.stages)),
        sinks=sinks,
        progress=progress or NoProgress(),
        started=started,
        backend=backend,
        first_answers=first_answers,
    )
    writer.write_manifest(run.manifest("running"))  # with the files, when they are made
    status: RunStatus = "fatal"
    failing = True
    try:
        runner = _prepare(run)
        run.progress.start(len(run.ingest.abstracts), tuple(context.stages))
        run.engine.run(runner, run.ingest.abstracts, run.progress, lambda: _run(run, runner))
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
    """Write the last manifest, finish every sink (abort it when the run wrote no folder),
    close every file and release the folder, whatever fails.

    On a full disk each step may fail: all are tried, then the first StorageError is
    raised, unless the run already stops on an error of its own (`quiet`), which is then
    the one message the user gets. The folder stays locked until the sinks have finished.
    """
    steps: list[Callable[[], object]] = [
        functools.partial(_keep_answers, run),
        functools.partial(run.writer.write_manifest, manifest),
        run.context.close,
        *(functools.partial(_end_sink, sink, run.writer, manifest) for sink in run.sinks),
        run.writer.close,
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


def _keep_answers(run: _Run) -> None:
    """A run that got any answer (asked or cached) keeps its folder, even before its first
    record; one that got none (refused at the start) writes none."""
    if run.stats.answered:
        run.writer.make_files()


def _end_sink(sink: RecordSink, writer: RunWriter, manifest: Manifest) -> None:
    if writer.written:
        sink.finish(manifest)
    else:
        sink.abort()


def _prepare(run: _Run) -> StageRunner:
    """The run's limiter, backend and stage runner."""
    settings = run.settings
    run.limiter = Limiter(
        max_concurrency=settings.max_concurrency,
        requests_per_minute=settings.requests_per_minute,
        tokens_per_minute=settings.tokens_per_minute,
    )
    if run.backend is None:
        run.backend = run.engine.backend(run.limiter, run.context.taxonomy)
    return StageRunner(
        context=run.context,
        backend=run.backend,
        stats=run.stats,
        progress=run.progress,
        on_error=run.writer.write_error,
        first_answers=run.first_answers,
    )


async def _run(run: _Run, runner: StageRunner) -> None:
    settings = run.settings
    assert run.backend is not None

    async def work(abstract: Abstract) -> SummaryRecord:
        stages = run.context.stages
        results = await asyncio.gather(
            *(runner.run_stage(stage, abstract) for stage in stages.values())
        )
        return runner.record(abstract, dict(zip(stages, results, strict=True)))

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
