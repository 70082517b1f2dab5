"""`digest report`: report.html (or a Markdown digest) of a run folder."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli import main, say
from pipeline.cli.views import (
    FORUM_URL,
    RUN_DIR,
    TAXONOMY,
    is_stdout,
    open_run,
    output_stream,
    run_taxonomy,
)


@main.command("report")
@RUN_DIR
@click.option(
    "--format", "fmt", type=click.Choice(["html", "md"]), default="html", show_default=True
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
    help="Output file, '-' for stdout [default: RUN_DIR/report.html or report.md].",
)
@FORUM_URL
@TAXONOMY
def report_command(
    run_dir: Path, fmt: str, out: Path | None, forum_url: str, taxonomy_path: Path | None
) -> None:
    """Write a self-contained report.html (or a Markdown digest grouped by tag) for RUN_DIR.

    RUN_DIR may be `latest` (the newest run under outputs/).
    """
    from pipeline.report import (
        markdown_of,
        stream_html_report,
        write_html_report,
        write_markdown_report,
    )

    reader = open_run(run_dir)
    taxonomy = run_taxonomy(taxonomy_path, reader)
    if is_stdout(out):
        with output_stream(out) as fh:
            if fmt == "md":
                fh.write(markdown_of(reader.dir, taxonomy, forum=forum_url))
            else:
                stream_html_report(reader.dir, taxonomy, fh, forum=forum_url)
        return
    writer = write_html_report if fmt == "html" else write_markdown_report
    say(str(writer(reader.dir, taxonomy, out, forum=forum_url)))
