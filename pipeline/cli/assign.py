"""`digest assign`: reviewers to the papers of a run folder, maximizing total affinity."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli import main
from pipeline.cli.views import RUN_DIR, TAXONOMY, open_run, run_taxonomy


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

    reader = open_run(run_dir)
    taxonomy = run_taxonomy(taxonomy_path, reader)
    reviewers = assign.load_reviewers(reviewers_file, taxonomy)
    result = assign.assign(list(reader.papers()), reviewers, per_paper=per_paper, max_load=max_load)
    path = assign.write_assignments_csv(result, out or reader.dir / "assignments.csv", taxonomy)
    click.echo(assign.summary(result))
    click.echo(f"assignments: {path}")
    if result.uncovered:
        click.echo(f"{len(result.uncovered)} paper(s) could not be covered:", err=True)
        for item in result.uncovered:
            click.echo(f"  {item.paper_id}: {item.reason}", err=True)
        raise SystemExit(1)
