"""`digest run`: ingest, run the stages, write the report, summarize."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.backends import check_openai_settings
from pipeline.cli import main, say
from pipeline.cli.options import (
    describe_backend,
    input_options,
    run_options,
    settings_from_flags,
)
from pipeline.cli.progress import BarProgress
from pipeline.cli.views import point_latest
from pipeline.config import Settings
from pipeline.context import RunContext
from pipeline.engine.select import engine_for
from pipeline.errors import RunInterrupted
from pipeline.ingest import read_inputs
from pipeline.job import JobResult, claimed_run_dir, run_job
from pipeline.pricing import cost_line
from pipeline.rundir import ERRORS, SUMMARIES, Manifest
from pipeline.rundir.writer import ensure_writable_dir


@main.command("run")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@input_options(
    out_help="Run folder [default: outputs/run-<timestamp>].",
    dry_run_help="Print the requests a run would send (cached results skipped), estimated "
    "tokens and cost; send nothing, write nothing.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    help="local: this process; ray: the stages on Ray Data (a local instance, or the "
    "cluster RAY_ADDRESS names; needs pip install -e '.[ray]').",
)
@run_options
def run_command(
    paths: tuple[Path, ...],
    config_path: Path | None,
    no_progress: bool,
    dry_run: bool,
    follow_symlinks: bool,
    **flags,
) -> None:
    """Summarize the abstracts in PATHS: files and directories of them (read recursively).

    PATHS may be .txt (abstracts separated by blank lines), .jsonl, .csv or .tsv (one paper
    per row with an abstract column), .json (an array of rows, or an object holding one), and
    OpenReview exports of notes in .json or .jsonl.

    Writes summaries.jsonl, errors.jsonl, summaries.csv, manifest.json and report.html into
    the run folder. Exit code 0 when every stage of every abstract is ok, 1 when some
    failed (all files still written), 2 for bad input/config or a folder that cannot be
    written, 3 when the endpoint refuses the run, 130 when interrupted (rerun the same
    command to resume from the cache).
    """
    settings = settings_from_flags(config_path, no_progress, flags)
    say(describe_backend(settings), err=True)
    if dry_run:
        from pipeline.plan import describe, plan_run

        ingest = read_inputs(list(paths), stream=True, follow_symlinks=follow_symlinks)
        for line in describe(plan_run(settings, ingest)):
            say(line)
        return
    if settings.resolved_provider == "openai":
        check_openai_settings(settings)  # e.g. no key for api.openai.com: before any input
    engine_for(settings).check()  # e.g. --engine ray without the Ray extra installed
    # Before any work: a folder that cannot be written is one message, not a traceback later.
    ensure_writable_dir(settings.cache_dir, "cache folder")
    if settings.out_dir is not None:
        ensure_writable_dir(settings.out_dir, "run folder")
    else:
        ensure_writable_dir(settings.outputs_root, "outputs folder")
    # A folder made here and left empty (the run wrote nothing) is removed again.
    with claimed_run_dir(settings) as run_dir:
        result = _run(settings, paths, follow_symlinks, run_dir)
    say_counts(result.manifest)
    tokens = result.manifest.tokens
    if settings.resolved_provider != "offline":
        price = settings.price
        say(cost_line(result.manifest.model, price, tokens.input, tokens.cached, tokens.output))
    say_outcome(result.run_dir, result.manifest)


def _run(
    settings: Settings, paths: tuple[Path, ...], follow_symlinks: bool, run_dir: Path
) -> JobResult:
    """Ingest and run into `run_dir`; `latest` beside it points at it once it has files."""
    from pipeline.report import HtmlReportSink
    from pipeline.report.html import HTML_FILE

    ingest = read_inputs(list(paths), stream=True, follow_symlinks=follow_symlinks, out_dir=run_dir)
    context = RunContext(settings)
    report = HtmlReportSink(
        run_dir / HTML_FILE,
        context.taxonomy,
        title=f"Digest of {run_dir.resolve().name}",
        cache_dir=settings.cache_dir,
    )
    # One price for the bar's cost so far and the closing cost line; none for offline.
    price = None if settings.resolved_provider == "offline" else settings.price
    try:
        return run_job(
            settings,
            ingest,
            run_dir,
            progress=BarProgress(price) if settings.progress else None,
            sinks=[report],
            context=context,
            # RUN_DIR/../latest, for `digest triage latest` and friends: not for a run that
            # wrote no folder (the endpoint refused it at the start).
            on_folder=point_latest,
        )
    except RunInterrupted as exc:
        raise RunInterrupted(
            f"{exc}; finished work is cached in {settings.cache_dir} — "
            "rerun the same command to resume"
        ) from None


def say_counts(manifest: Manifest) -> None:
    """The closing lines of a run: abstracts, and each stage's ok/failed/cached counts."""
    counts = manifest.counts
    say(
        f"{counts.unique} abstracts ({counts.inputs} inputs, {counts.duplicates} duplicates) "
        f"in {manifest.elapsed_s:.1f}s"
    )
    for name, s in counts.stages.items():
        dropped = f"  dropped claims {s.dropped}" if s.dropped else ""
        say(f"  {name:<7} ok {s.ok:>6}  failed {s.failed:>5}  cached {s.cache_hits:>6}{dropped}")


def say_outcome(run_dir: Path, manifest: Manifest) -> None:
    """Where the results are; exit 1 (after saying where they are) when some stage failed."""
    say(f"results: {run_dir / SUMMARIES}")
    say(f"report:  {run_dir / 'report.html'}")
    failed = sum(s.failed for s in manifest.counts.stages.values())
    if failed:
        say(
            f"{failed} stage result(s) failed in {manifest.counts.records_with_failures} "
            f"abstract(s); see {run_dir / ERRORS}",
            err=True,
        )
        raise SystemExit(1)
