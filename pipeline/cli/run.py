"""`digest run`: the main job."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli import main
from pipeline.config import load_settings
from pipeline.errors import FatalBackendError, RunInterrupted
from pipeline.job import run_job
from pipeline.outputs import ERRORS, SUMMARIES


@main.command("run")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Settings file [default: ./config.yaml if present].")
@click.option("--provider", type=click.Choice(["auto", "openai", "offline"]), help="Backend; auto = openai when a key or base_url is set, else offline.")
@click.option("--model", help="Model name for the openai backend.")
@click.option("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (vLLM).")
@click.option("--stages", help="Comma-separated subset of tldr,tags,claims.")
@click.option("--concurrency", "max_concurrency", type=int, help="Max requests in flight.")
@click.option("--rpm", "requests_per_minute", type=int, help="Requests-per-minute limit.")
@click.option("--tpm", "tokens_per_minute", type=int, help="Tokens-per-minute limit.")
@click.option("--response-format", type=click.Choice(["json_schema", "json_object"]), help="json_object for servers without structured outputs.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), help="Run folder [default: outputs/run-<timestamp>].")
@click.option("--cache-dir", type=click.Path(path_type=Path), help="Shared cache folder [default: outputs/cache].")
@click.option("--force", is_flag=True, default=None, help="Ignore cached outputs (results are still written to the cache).")
@click.option("--no-progress", "no_progress", is_flag=True, help="No progress bar on stderr.")
def run_command(paths: tuple[Path, ...], config_path: Path | None, no_progress: bool, **flags) -> None:
    """Summarize the abstracts in PATHS (.txt, .jsonl, .csv files or directories).

    Writes summaries.jsonl, errors.jsonl, summaries.csv, manifest.json and report.html into
    the run folder. Exit code 0 when every stage of every abstract is ok, 1 when some
    failed (all files still written), 2 for bad input/config, 3 when the endpoint refuses
    the run, 130 when interrupted (rerun the same command to resume from the cache).
    """
    if no_progress:
        flags["progress"] = False
    settings = load_settings(config_path, overrides=flags)
    provider = settings.resolved_provider
    why = {
        "offline": "built-in offline extractor, no network",
        "openai": f"model {settings.model} at {settings.base_url or 'api.openai.com'}",
    }[provider]
    click.echo(f"backend: {provider} ({why})", err=True)
    try:
        result = run_job(settings, list(paths))
    except RunInterrupted as exc:
        raise RunInterrupted(
            f"{exc}; finished work is cached in {settings.cache_dir} — "
            "rerun the same command to resume"
        ) from None
    except FatalBackendError:
        raise
    counts = result.manifest["counts"]
    stage_counts = counts["stages"]
    click.echo(
        f"{counts['unique']} abstracts ({counts['inputs']} inputs, {counts['duplicates']} duplicates) "
        f"in {result.manifest['elapsed_s']:.1f}s"
    )
    for name, s in stage_counts.items():
        click.echo(f"  {name:<7} ok {s['ok']:>6}  failed {s['failed']:>5}  cached {s['cache_hits']:>6}")
    click.echo(f"results: {result.run_dir / SUMMARIES}")
    report = result.run_dir / "report.html"
    if report.exists():
        click.echo(f"report:  {report}")
    failed = result.stats.failed_stages
    if failed:
        click.echo(
            f"{failed} stage result(s) failed in {result.stats.records_failed} abstract(s); "
            f"see {result.run_dir / ERRORS}",
            err=True,
        )
        raise SystemExit(1)
