"""`digest run`: ingest, run the stages, write the report, summarize."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.backends import check_openai_settings
from pipeline.cli import main
from pipeline.cli.options import describe_backend, run_options, settings_from_flags
from pipeline.cli.progress import BarProgress
from pipeline.errors import RunInterrupted
from pipeline.ingest import read_inputs
from pipeline.job import load_project_taxonomy, new_run_dir, run_job
from pipeline.rundir import ERRORS, SUMMARIES


@main.command("run")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--stages", help="Comma-separated subset of the stages (default: all).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    help="Run folder [default: outputs/run-<timestamp>].",
)
@run_options
def run_command(
    paths: tuple[Path, ...], config_path: Path | None, no_progress: bool, **flags
) -> None:
    """Summarize the abstracts in PATHS (.txt, .jsonl, .csv files or directories).

    Writes summaries.jsonl, errors.jsonl, summaries.csv, manifest.json and report.html into
    the run folder. Exit code 0 when every stage of every abstract is ok, 1 when some
    failed (all files still written), 2 for bad input/config, 3 when the endpoint refuses
    the run, 130 when interrupted (rerun the same command to resume from the cache).
    """
    from pipeline.report import HtmlReportSink

    settings = settings_from_flags(config_path, no_progress, flags)
    click.echo(describe_backend(settings), err=True)
    if settings.resolved_provider == "openai":
        check_openai_settings(settings)  # e.g. no key for api.openai.com: before any input
    ingest = read_inputs(list(paths), stream=True)
    run_dir = new_run_dir(settings)
    report = HtmlReportSink(
        run_dir / "report.html",
        load_project_taxonomy(settings),
        title=f"Digest of {run_dir.resolve().name}",
    )
    try:
        result = run_job(
            settings,
            ingest,
            run_dir,
            progress=BarProgress() if settings.progress else None,
            sinks=[report],
        )
    except RunInterrupted as exc:
        raise RunInterrupted(
            f"{exc}; finished work is cached in {settings.cache_dir} — "
            "rerun the same command to resume"
        ) from None
    counts = result.manifest.counts
    click.echo(
        f"{counts.unique} abstracts ({counts.inputs} inputs, {counts.duplicates} duplicates) "
        f"in {result.manifest.elapsed_s:.1f}s"
    )
    for name, s in counts.stages.items():
        click.echo(f"  {name:<7} ok {s.ok:>6}  failed {s.failed:>5}  cached {s.cache_hits:>6}")
    click.echo(f"results: {result.run_dir / SUMMARIES}")
    click.echo(f"report:  {report.path}")
    failed = result.stats.failed_stages
    if failed:
        click.echo(
            f"{failed} stage result(s) failed in {result.stats.records_failed} abstract(s); "
            f"see {result.run_dir / ERRORS}",
            err=True,
        )
        raise SystemExit(1)
