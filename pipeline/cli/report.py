"""`digest report`: report.html (or a Markdown digest) of a run folder."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli import main
from pipeline.cli.views import RUN_DIR, TAXONOMY, open_run, run_taxonomy


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

    reader = open_run(run_dir)
    taxonomy = run_taxonomy(taxonomy_path, reader)
    writer = write_html_report if fmt == "html" else write_markdown_report
    click.echo(str(writer(reader.dir, taxonomy, out)))
