"""`digest assign`: reviewers to the papers of a run folder, maximizing total affinity."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli import main, say
from pipeline.cli.views import FORUM_URL, RUN_DIR, TAXONOMY, open_run, run_taxonomy


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
    type=click.IntRange(min=1, max=1_000_000),  # reviewers.MAX_LOAD (not imported: numpy)
    default=8,
    show_default=True,
    help="Papers per reviewer at most (a reviewer's own max_load wins).",
)
@click.option(
    "--top-k",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    help="Candidate reviewers per paper given to the solver (0 = all; widened automatically "
    "when a paper would be left short).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output CSV [default: RUN_DIR/assignments.csv]; conflicts.csv and reviewers.html "
    "go beside it.",
)
@FORUM_URL
@TAXONOMY
def assign_command(
    run_dir: Path,
    reviewers_file: Path,
    per_paper: int,
    max_load: int,
    top_k: int,
    out: Path | None,
    forum_url: str,
    taxonomy_path: Path | None,
) -> None:
    """Assign exactly --per-paper reviewers to each paper, maximizing total affinity.

    RUN_DIR may be `latest`. Writes assignments.csv (one row per pair, with the reason for
    its affinity), conflicts.csv (every declared or derived conflict, with its reason) and
    reviewers.html (each reviewer's papers and load, papers left short). Exit 2 when a
    conflict in REVIEWERS_FILE names no paper of the run; exit 1 when some paper could not
    get its reviewers (everything else still written).
    """
    from pipeline import assign
    from pipeline.assign.outputs import ASSIGNMENTS_FILE, CONFLICTS_FILE
    from pipeline.report.reviewers import REVIEWERS_FILE, write_reviewers_html

    reader = open_run(run_dir)
    taxonomy = run_taxonomy(taxonomy_path, reader)
    pool = assign.load_pool(reviewers_file, taxonomy)
    result = assign.assign(
        list(reader.papers()),
        pool.reviewers,
        per_paper=per_paper,
        max_load=max_load,
        policy=pool.conflict_policy,
        top_k=top_k or None,
    )
    path = out or reader.dir / ASSIGNMENTS_FILE
    assign.write_assignments_csv(result, path, taxonomy)
    conflicts = assign.write_conflicts_csv(result, path.with_name(CONFLICTS_FILE))
    page = write_reviewers_html(result, path.with_name(REVIEWERS_FILE), taxonomy, forum=forum_url)
    say(assign.summary(result), lines=True)
    for keyword, why in sorted(result.ignored_keywords.items()):
        say(f"note: keyword {keyword!r} does not count as expertise ({why})", err=True)
    say(f"assignments: {path}")
    say(f"conflicts:   {conflicts}")
    say(f"reviewers:   {page}")
    if result.uncovered:
        say(f"{len(result.uncovered)} paper(s) could not be covered:", err=True)
        for item in result.uncovered:
            paper = result.papers[item.paper_id]
            say(f"  {paper.ref}: {item.reason}", err=True)
        raise SystemExit(1)
