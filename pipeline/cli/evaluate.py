"""`digest eval`: quality as numbers (SciTLDR ROUGE, claims P/R/F1, run grounding).

The evaluation modules are imported inside the commands: rouge-score and nltk are slow to
import and every other command would pay for them at start-up.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from pipeline.cli import main, say
from pipeline.cli.options import describe_backend, run_options, settings_from_flags
from pipeline.cli.views import RUN_DIR
from pipeline.config import Settings
from pipeline.rundir.writer import ensure_writable_dir


def _eval_dir(out: Path | None, task: str, settings: Settings) -> Path:
    """The evaluation's folder; it and the cache folder are checked writable before any work."""
    folder = out or Path("outputs") / f"eval-{task}-{datetime.now():%Y%m%d-%H%M%S}"
    ensure_writable_dir(settings.cache_dir, "cache folder")
    ensure_writable_dir(folder, "evaluation folder")
    return folder


@main.group("eval")
def eval_group() -> None:
    """Measure quality: TL;DR ROUGE, claim extraction, tags, grounding."""


@eval_group.command("tldr")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Folder for eval.json / eval.md [default: outputs/eval-tldr-<timestamp>].",
)
@click.option("--limit", type=int, help="Only the first N papers.")
@run_options
def eval_tldr(
    path: Path, out: Path | None, limit: int | None, config_path, no_progress, **flags
) -> None:
    """ROUGE-1/2/L of the tldr stage on SciTLDR-format JSONL, with lead-1 and oracle."""
    settings = settings_from_flags(config_path, no_progress, flags)
    say(describe_backend(settings), err=True)
    from pipeline.evaluation.tasks import evaluate_tldr

    out = _eval_dir(out, "tldr", settings)
    result = evaluate_tldr(settings, path, out, limit=limit)
    _finish(result, out)


@eval_group.command("claims")
@click.argument(
    "gold", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, dir_okay=False)
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Folder for eval.json / eval.md [default: outputs/eval-claims-<timestamp>].",
)
@run_options
def eval_claims(
    gold: tuple[Path, ...], out: Path | None, config_path, no_progress, **flags
) -> None:
    """Precision/recall/F1 of the claims stage against GOLD files, scored together
    (see tests/data/claims_gold*.jsonl and tests/data/GOLD.md)."""
    settings = settings_from_flags(config_path, no_progress, flags)
    say(describe_backend(settings), err=True)
    from pipeline.evaluation.tasks import evaluate_claims

    out = _eval_dir(out, "claims", settings)
    _finish(evaluate_claims(settings, list(gold), out), out)


@eval_group.command("tags")
@click.argument(
    "gold", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, dir_okay=False)
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Folder for eval.json / eval.md [default: outputs/eval-tags-<timestamp>].",
)
@run_options
def eval_tags(gold: tuple[Path, ...], out: Path | None, config_path, no_progress, **flags) -> None:
    """Precision/recall/F1 and primary-tag accuracy of the tags stage against GOLD files,
    scored together (see tests/data/tags_gold*.jsonl and tests/data/GOLD.md)."""
    settings = settings_from_flags(config_path, no_progress, flags)
    say(describe_backend(settings), err=True)
    from pipeline.evaluation.tasks import evaluate_tags

    out = _eval_dir(out, "tags", settings)
    _finish(evaluate_tags(settings, list(gold), out), out)


@eval_group.command("grounding")
@RUN_DIR  # `latest` = outputs/latest
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="Settings file (for the taxonomy location).",
)
def eval_grounding(run_dir: Path, config_path: Path | None) -> None:
    """Grounding figures of a run folder: evidence verbatim, TL;DR numbers, tags in taxonomy."""
    from pipeline.evaluation.tasks import evaluate_grounding

    settings = settings_from_flags(config_path, True, {})
    _finish(evaluate_grounding(settings, run_dir), run_dir)


def _finish(result: dict, out: Path) -> None:
    from pipeline.evaluation.tasks import markdown, write_result

    json_path, _ = write_result(result, out)
    say(markdown(result), lines=True)
    say(f"written: {json_path} (and eval.md)")
