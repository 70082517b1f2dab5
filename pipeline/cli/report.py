"""`digest report`, `digest triage`, `digest assign`: views of a finished run folder for chairs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click

from pipeline.cli import main
from pipeline.config import PACKAGE_PROMPTS_DIR
from pipeline.errors import InputError
from pipeline.taxonomy import Taxonomy, load_taxonomy

RUN_DIR = click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
TAXONOMY = click.option(
    "--taxonomy",
    "taxonomy_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Taxonomy YAML for tag labels [default: the run's prompts_dir, else the package's].",
)


def _taxonomy(path: Path | None, run_dir: Path) -> Taxonomy | None:
    """The explicit taxonomy, else the one the run used (if still on disk), else the package's."""
    if path is not None:
        return load_taxonomy(path)
    candidates = []
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        prompts_dir = (manifest.get("config") or {}).get("prompts_dir")
        if prompts_dir:
            candidates.append(Path(prompts_dir) / "taxonomy.yaml")
    except (OSError, ValueError, AttributeError):
        pass
    candidates.append(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    for candidate in candidates:
        if candidate.is_file():
            return load_taxonomy(candidate)
    return None


def _check_run_dir(run_dir: Path) -> None:
    if not (run_dir / "summaries.jsonl").is_file():
        raise InputError(
            f"{run_dir} is not a run folder (no summaries.jsonl); run `digest run` first"
        )


@main.command("report")
@RUN_DIR
@click.option(
    "--format", "fmt", type=click.Choice(["html", "md"]), default="html", show_default=True
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output file [default: RUN_DIR/report.html or report.md].",
)
@TAXONOMY
def report_command(run_dir: Path, fmt: str, out: Path | None, taxonomy_path: Path | None) -> None:
    """Write a self-contained report.html (or a Markdown digest grouped by tag) for RUN_DIR."""
    from pipeline.report import write_html_report, write_markdown_report

    _check_run_dir(run_dir)
    taxonomy = _taxonomy(taxonomy_path, run_dir)
    writer = write_html_report if fmt == "html" else write_markdown_report
    click.echo(str(writer(run_dir, taxonomy, out)))


@main.command("triage")
@RUN_DIR
@click.option("--tag", "tags", multiple=True, help="Tag id, label or synonym; repeat for several.")
@click.option(
    "--any",
    "match_any",
    is_flag=True,
    help="With several --tag: any of them (OR) instead of all (AND).",
)
@click.option(
    "--has-results", is_flag=True, help="Only papers claiming at least one quantitative result."
)
@click.option(
    "--metric", help="A claim's metric contains this text (case-insensitive), e.g. AUROC."
)
@click.option(
    "--dataset", help="A claim's dataset contains this text (case-insensitive), e.g. ImageNet."
)
@click.option("--grep", help="Title, abstract, TL;DR, keywords or claims contain this text.")
@click.option(
    "--sort", type=click.Choice(["id", "claims", "tag", "title"]), default="id", show_default=True
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many papers.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl", "csv"]),
    default="table",
    show_default=True,
)
@TAXONOMY
def triage_command(
    run_dir: Path,
    tags: tuple[str, ...],
    match_any: bool,
    has_results: bool,
    metric: str | None,
    dataset: str | None,
    grep: str | None,
    sort: str,
    limit: int | None,
    fmt: str,
    taxonomy_path: Path | None,
) -> None:
    """List the papers of RUN_DIR that match every filter (a table, JSONL or CSV on stdout)."""
    from pipeline import triage

    _check_run_dir(run_dir)
    taxonomy = _taxonomy(taxonomy_path, run_dir)
    query = triage.Query(
        tags=triage.resolve_tags(tags, taxonomy),
        match_any=match_any,
        has_results=has_results,
        metric=metric,
        dataset=dataset,
        grep=grep,
    )
    papers = triage.select(
        triage.iter_papers(run_dir), query, sort=sort, taxonomy=taxonomy, limit=limit
    )
    if fmt == "jsonl":
        for line in triage.format_jsonl(papers, taxonomy):
            click.echo(line)
    elif fmt == "csv":
        for chunk in triage.format_csv(papers, taxonomy):
            click.echo(chunk, nl=False)
    else:
        width = shutil.get_terminal_size((120, 24)).columns
        click.echo(triage.format_table(papers, taxonomy, width=width))
        click.echo(f"{len(papers)} paper(s)", err=True)


@main.command("assign")
@RUN_DIR
@click.argument("reviewers_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--per-paper",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Reviewers per paper (exactly).",
)
@click.option(
    "--max-load",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Papers per reviewer at most (a reviewer's own max_load wins).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output CSV [default: RUN_DIR/assignments.csv].",
)
@TAXONOMY
def assign_command(
    run_dir: Path,
    reviewers_file: Path,
    per_paper: int,
    max_load: int,
    out: Path | None,
    taxonomy_path: Path | None,
) -> None:
    """Assign exactly --per-paper reviewers to each paper, maximizing total affinity (min-cost flow)."""
    from pipeline import assign
    from pipeline.triage import iter_papers

    _check_run_dir(run_dir)
    taxonomy = _taxonomy(taxonomy_path, run_dir)
    reviewers = assign.load_reviewers(reviewers_file, taxonomy)
    result = assign.assign(
        list(iter_papers(run_dir)), reviewers, per_paper=per_paper, max_load=max_load
    )
    path = assign.write_assignments_csv(result, out or run_dir / "assignments.csv", taxonomy)
    click.echo(assign.summary(result))
    click.echo(f"assignments: {path}")
    if result.uncovered:
        click.echo(f"{len(result.uncovered)} paper(s) could not be covered:", err=True)
        for item in result.uncovered:
            click.echo(f"  {item.paper_id}: {item.reason}", err=True)
        raise SystemExit(1)
