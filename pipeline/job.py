"""One `digest run`: settings + input paths -> run folder (summaries, errors, CSV, manifest)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline import __version__
from pipeline.backends import make_backend
from pipeline.cache import Cache
from pipeline.config import Settings
from pipeline.errors import FatalBackendError, InputError, RunInterrupted
from pipeline.ingest import IngestResult, read_inputs
from pipeline.limits import Limiter
from pipeline.outputs import RunWriter
from pipeline.prompts import content_hash
from pipeline.runner import Runner, RunStats
from pipeline.schemas import SCHEMA_VERSION
from pipeline.stages import build_stages
from pipeline.taxonomy import Taxonomy, load_taxonomy

log = logging.getLogger(__name__)


@dataclass
class JobResult:
    """Where a run wrote its files and what happened."""

    run_dir: Path
    manifest: dict[str, Any]
    stats: RunStats


def new_run_dir(settings: Settings) -> Path:
    """`--out` if given, else a fresh timestamped folder under outputs/."""
    if settings.out_dir is not None:
        return settings.out_dir
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate = settings.outputs_root / f"run-{stamp}"
    n = 1
    while candidate.exists():
        n += 1
        candidate = settings.outputs_root / f"run-{stamp}-{n}"
    return candidate


def load_project_taxonomy(settings: Settings) -> Taxonomy:
    """The taxonomy file next to the prompt templates."""
    return load_taxonomy(settings.prompts_dir / "taxonomy.yaml")


def run_job(settings: Settings, paths: list[Path], *, run_dir: Path | None = None) -> JobResult:
    """Ingest, run every stage through the backend, and write the run folder."""
    started = time.time()
    ingest = read_inputs(paths, stream=True)
    taxonomy = load_project_taxonomy(settings)
    stages = build_stages(settings.stages, settings.prompts_dir, taxonomy)
    run_dir = run_dir or new_run_dir(settings)
    writer = RunWriter(run_dir)
    cache = Cache(settings.cache_dir, settings.stages)
    runner: Runner | None = None
    status = "ok"
    try:
        runner = asyncio.run(_run(settings, taxonomy, stages, cache, writer, ingest))
        status = "ok" if runner.stats.failed_stages == 0 else "failed"
    except _Stopped as stopped:
        runner = stopped.runner
        status = "interrupted" if isinstance(stopped.cause, RunInterrupted) else "fatal"
        raise stopped.cause from None
    finally:
        if runner is not None:
            manifest = _manifest(
                settings, paths, ingest, taxonomy, stages, runner, status, started, cache
            )
            writer.write_manifest(manifest)
        writer.close()
        cache.close()
    _write_report(run_dir, taxonomy)
    return JobResult(run_dir, manifest, runner.stats)


class _Stopped(Exception):
    def __init__(self, runner: Runner, cause: Exception) -> None:
        self.runner = runner
        self.cause = cause


async def _run(settings, taxonomy, stages, cache, writer, ingest: IngestResult) -> Runner:
    limiter = Limiter(
        max_concurrency=settings.max_concurrency,
        requests_per_minute=settings.requests_per_minute,
        tokens_per_minute=settings.tokens_per_minute,
    )
    backend = make_backend(settings, limiter, taxonomy)
    runner = Runner(settings=settings, stages=stages, backend=backend, cache=cache, writer=writer)
    try:
        await runner.run(ingest.abstracts, total=len(ingest.abstracts))
    except (FatalBackendError, RunInterrupted) as exc:
        raise _Stopped(runner, exc) from exc
    except InputError as exc:  # an input file changed while its texts were being streamed
        runner.stats.fatal = str(exc)
        raise _Stopped(runner, exc) from exc
    finally:
        await backend.aclose()
    return runner


def _write_report(run_dir: Path, taxonomy: Taxonomy) -> None:
    from pipeline.report import write_html_report  # imported late: only the run's end needs it

    write_html_report(run_dir, taxonomy)


def _manifest(
    settings, paths, ingest, taxonomy, stages, runner: Runner, status, started, cache
) -> dict[str, Any]:
    stats = runner.stats
    per_stage = {
        name: {
            "ok": s.ok,
            "failed": s.failed,
            "cache_hits": s.cache_hits,
            "backend_calls": s.calls,
            "tokens_in": s.tokens_in,
            "tokens_out": s.tokens_out,
            "failure_kinds": dict(s.failure_kinds),
        }
        for name, s in stats.stages.items()
    }
    return {
        "tool": "abstract-digest",
        "version": __version__,
        "status": status,
        "fatal_error": stats.fatal,
        "started_at": datetime.fromtimestamp(started, UTC).isoformat(),
        "elapsed_s": round(time.time() - started, 3),
        "inputs": [str(p) for p in paths],
        "config": settings.public_dict(),
        "backend": runner.backend.name,
        "model": runner.backend.model,
        "counts": {
            "inputs": ingest.n_inputs,
            "unique": len(ingest.abstracts),
            "duplicates": ingest.n_inputs - len(ingest.abstracts),
            "skipped_inputs": len(ingest.skipped),
            "records_written": stats.records,
            "records_with_failures": stats.records_failed,
            "stages": per_stage,
        },
        "tokens": {
            "in": sum(s.tokens_in for s in stats.stages.values()),
            "out": sum(s.tokens_out for s in stats.stages.values()),
        },
        "skipped_inputs": ingest.skipped[:100],
        "schema_version": SCHEMA_VERSION,
        "prompts": {name: stage.prompt_hash for name, stage in stages.items()},
        "taxonomy": {"version": taxonomy.version, "hash": content_hash(taxonomy.model_dump())},
        "cache_dir": str(cache.dir),
    }
