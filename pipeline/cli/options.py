"""Click options shared by the commands that run stages (`run`, `batch submit`, `eval`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from pipeline.config import Settings, load_settings
from pipeline.logs import add_secrets
from pipeline.redact import secrets_of

_OPTIONS = [
    click.option(
        "--config",
        "config_path",
        type=click.Path(path_type=Path),
        help="Settings file [default: ./config.yaml if present].",
    ),
    click.option(
        "--provider",
        type=click.Choice(["auto", "openai", "offline"]),
        help="Backend; auto = openai when a key or base_url is set, else offline.",
    ),
    click.option("--model", help="Model name for the openai backend."),
    click.option(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (vLLM)."
    ),
    click.option("--concurrency", "max_concurrency", type=int, help="Max requests in flight."),
    click.option("--rpm", "requests_per_minute", type=int, help="Requests-per-minute limit."),
    click.option("--tpm", "tokens_per_minute", type=int, help="Tokens-per-minute limit."),
    click.option(
        "--response-format",
        type=click.Choice(["json_schema", "json_object"]),
        help="json_object for servers without structured outputs.",
    ),
    click.option(
        "--cache-dir",
        type=click.Path(path_type=Path),
        help="Shared cache folder [default: outputs/cache].",
    ),
    click.option(
        "--force",
        is_flag=True,
        default=None,
        help="Ignore cached outputs (new results are still cached).",
    ),
    click.option("--no-progress", "no_progress", is_flag=True, help="No progress bar on stderr."),
]


def run_options(func: Callable) -> Callable:
    """Decorate a command with the shared backend/limits/cache options."""
    for option in reversed(_OPTIONS):
        func = option(func)
    return func


def input_options(*, out_help: str, dry_run_help: str) -> Callable[[Callable], Callable]:
    """--stages, --out, --dry-run and --follow-symlinks: the options of a command that reads
    inputs and writes a folder (`run`, `batch submit`); the help of --out and --dry-run is
    the command's own."""
    options = [
        click.option("--stages", help="Comma-separated subset of the stages (default: all)."),
        click.option("--out", "out_dir", type=click.Path(path_type=Path), help=out_help),
        click.option("--dry-run", is_flag=True, help=dry_run_help),
        click.option(
            "--follow-symlinks",
            is_flag=True,
            help="Read symlinks under an input folder even when they lead out of it.",
        ),
    ]

    def decorate(func: Callable) -> Callable:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def settings_from_flags(config_path: Path | None, no_progress: bool, flags: dict) -> Settings:
    """One frozen Settings from config file + environment + these flags."""
    if no_progress:
        flags["progress"] = False
    settings = load_settings(config_path, overrides=flags)
    add_secrets(*secrets_of(settings))  # e.g. a password in --base-url: masked in every log line
    return settings


def describe_backend(settings: Settings) -> str:
    """The one stderr line that says which backend a run uses."""
    if settings.resolved_provider == "offline":
        return "backend: offline (built-in offline extractor, no network)"
    where = settings.endpoint if settings.base_url else "api.openai.com"
    return f"backend: openai (model {settings.model} at {where})"
