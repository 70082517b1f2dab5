"""`digest triage`: the papers of a run folder that match filters, as a table, JSONL or CSV."""

from __future__ import annotations

import shutil
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
    write_chunks,
)
from pipeline.errors import InputError
from pipeline.triage import SORT_KEYS


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
@click.option("--failed", is_flag=True, help="Only papers with a failed stage.")
@click.option(
    "--metric", help="A claim's metric contains this text (case-insensitive), e.g. AUROC."
)
@click.option(
    "--dataset", help="A claim's dataset contains this text (case-insensitive), e.g. ImageNet."
)
@click.option(
    "--grep",
    help="Every word occurs in the title, abstract, TL;DR, tags, keywords or claims; "
    '"quoted words" must occur as a phrase.',
)
@click.option(
    "--paper",
    help="Only the paper with this id: yours (OpenReview id, number, #number) or the hash.",
)
@click.option(
    "--sort",
    type=click.Choice(SORT_KEYS),
    default="claims",
    show_default=True,
    help="claims: most first, then by title; title/id/tag: alphabetical.",
)
@click.option("--reverse", is_flag=True, help="Reverse the sort order.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many papers.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl", "csv"]),
    default="table",
    show_default=True,
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
    help="Write to this file instead of stdout ('-' = stdout).",
)
@FORUM_URL
@TAXONOMY
def triage_command(
    run_dir: Path,
    tags: tuple[str, ...],
    match_any: bool,
    has_results: bool,
    failed: bool,
    metric: str | None,
    dataset: str | None,
    grep: str | None,
    paper: str | None,
    sort: str,
    reverse: bool,
    limit: int | None,
    fmt: str,
    out: Path | None,
    forum_url: str,
    taxonomy_path: Path | None,
) -> None:
    """List the papers of RUN_DIR that match every filter (a table, JSONL or CSV on stdout).

    RUN_DIR may be `latest` (the newest run under outputs/). Rows lead with your own id
    (from the input) and title; `id` is the content hash.
    """
    from pipeline import triage

    reader = open_run(run_dir)
    taxonomy = run_taxonomy(taxonomy_path, reader)
    query = triage.Query(
        tags=triage.resolve_tags(tags, taxonomy),
        match_any=match_any,
        has_results=has_results,
        failed=failed,
        metric=metric,
        dataset=dataset,
        grep=grep,
        paper=paper,
    )
    papers = triage.select(
        reader.papers(), query, sort=sort, reverse=reverse, taxonomy=taxonomy, limit=limit
    )
    if paper is not None and not papers:
        wanted = paper.strip().lower()
        if not any(wanted in triage.paper_keys(p) for p in reader.papers()):
            raise InputError(
                f"no paper of {reader.dir} has the id {paper!r} "
                "(give your id, its number, #number or the 16-hex hash)"
            )
    with output_stream(out) as fh:
        if fmt == "jsonl":
            write_chunks(
                fh, (line + "\n" for line in triage.format_jsonl(papers, taxonomy, forum_url))
            )
        elif fmt == "csv":
            write_chunks(fh, triage.format_csv(papers, taxonomy, forum_url))
        else:
            width = shutil.get_terminal_size((120, 24)).columns
            fh.write(triage.format_table(papers, taxonomy, width=width) + "\n")
    if out is not None and not is_stdout(out):
        say(f"{len(papers)} paper(s): {out}", err=True)
    elif fmt == "table":
        say(f"{len(papers)} paper(s)", err=True)
