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
    help="Reviewers per paper (--demand sets other numbers for the papers it lists).",
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
# -- conflicts, weak pairs, outputs, affinity sources (co-author conflicts ... embeddings)
@click.option(
    "--coauthor-years",
    type=click.IntRange(min=0, max=100),
    default=None,
    help="Co-authors of a reviewer's past papers of the last N years conflict with their "
    "papers (0 = none) [default: conflict_policy.coauthor_years, else 3].",
)
@click.option(
    "--coauthor-reference-year",
    type=click.IntRange(min=1000, max=9999),
    default=None,
    help="The year --coauthor-years counts back from [default: the newest year among the "
    "past papers].",
)
@click.option(
    "--weak-below",
    type=click.FloatRange(min=0.0, max=1.0),
    default=0.1,  # outputs.DEFAULT_WEAK_BELOW (not imported: numpy)
    show_default=True,
    help="A pair with no shared tag, no matching keyword and text_similarity_blended below "
    "this is weak: counted in the summary, flagged, listed in weak_pairs.csv.",
)
@click.option(
    "--format",
    "formats",
    type=click.Choice(["csv", "openreview"]),
    multiple=True,
    help="Also write the assignment as OpenReview edges (openreview: "
    "assignments.openreview.jsonl, head = paper id, tail = reviewer profile id, weight, "
    "label). The CSV files are always written.",
)
@click.option(
    "--openreview-label",
    default="digest-assign",
    show_default=True,
    help="The label of every OpenReview edge (the matching configuration's title).",
)
@click.option(
    "--openreview-invitation",
    default=None,
    help="The edge invitation to put on every OpenReview edge, e.g. "
    "VENUE/Reviewers/-/Proposed_Assignment [default: none: add it when posting].",
)
@click.option(
    "--affinity",
    "affinity_sources",
    type=click.Choice(["builtin", "embeddings"]),
    multiple=True,
    help="Affinity sources beside the built-in one (tags, keywords, TF-IDF): embeddings = "
    "cosine of vectors from the configured endpoint's /v1/embeddings, added to the built-in "
    "affinity with weight 10 (--weights embeddings=W).",
)
@click.option(
    "--embedding-model",
    default="text-embedding-3-small",  # embeddings.DEFAULT_EMBEDDING_MODEL (not imported)
    show_default=True,
    help="The model --affinity embeddings asks for.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="Settings file for --affinity embeddings (base_url, cache_dir) [default: "
    "./config.yaml if present]; the key comes from OPENAI_API_KEY.",
)
@click.option(
    "--base-url", help="OpenAI-compatible endpoint of --affinity embeddings (as `digest run`)."
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    help="Where --affinity embeddings caches vectors [default: the settings' cache_dir].",
)
@FORUM_URL
@TAXONOMY
# ---- scores, objective and the chair's controls (pipeline/assign/scores.py, controls.py)
@click.option(
    "--scores",
    "scores_files",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="CSV paper_id,reviewer_id,score to mix in (repeatable; its stem names it in --weights).",
)
@click.option(
    "--bids",
    "bids_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="CSV paper_id,reviewer_id,label with OpenReview bid labels (Very High ... Very Low).",
)
@click.option(
    "--bid-scores",
    default="",
    metavar="LABEL=SCORE,...",
    help="Bid label scores [default: Very High=1,High=0.5,Neutral=0,Low=-0.5,Very Low=-1].",
)
@click.option(
    "--weights",
    default="",
    metavar="NAME=W,...",
    help="Weights of builtin, each --scores stem and bids (each 1 unless given; builtin=0 "
    "turns the built-in affinity off).",
)
@click.option(
    "--objective",
    type=click.Choice(["max-sum", "fair"]),
    default="max-sum",
    show_default=True,
    help="max-sum: largest total affinity; fair: raise the weakest paper first, then the total.",
)
@click.option(
    "--demand",
    "demand_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="CSV paper_id,demand: reviewers for the papers listed (the others get --per-paper).",
)
@click.option(
    "--min-load",
    type=click.IntRange(min=0, max=1_000_000),
    default=0,
    show_default=True,
    help="Papers per reviewer at least, when it can be met (never above their max).",
)
@click.option(
    "--lock",
    "lock_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="CSV paper_id,reviewer_id: pairs that must be assigned.",
)
@click.option(
    "--forbid",
    "forbid_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="CSV paper_id,reviewer_id: pairs that must never be assigned.",
)
@click.option(
    "--keep",
    "keep_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A previous assignments.csv: keep every pair still valid, fill in the rest.",
)
@click.option(
    "--alternates",
    type=click.IntRange(min=0, max=1000),
    default=0,
    show_default=True,
    help="Write each paper's next K eligible reviewers to alternates.csv.",
)
@click.option(
    "--require",
    multiple=True,
    metavar="KEY=VALUE[:N]",
    help="At least N (default 1) reviewers per paper with this attribute (repeatable).",
)
@click.option(
    "--at-most",
    multiple=True,
    metavar="KEY[=VALUE][:N]",
    help="At most N (default 1) reviewers per paper sharing a value of KEY, or with "
    "KEY=VALUE (repeatable).",
)
def assign_command(
    run_dir: Path,
    reviewers_file: Path,
    per_paper: int,
    max_load: int,
    top_k: int,
    out: Path | None,
    coauthor_years: int | None,
    coauthor_reference_year: int | None,
    weak_below: float,
    formats: tuple[str, ...],
    openreview_label: str,
    openreview_invitation: str | None,
    affinity_sources: tuple[str, ...],
    embedding_model: str,
    config_path: Path | None,
    base_url: str | None,
    cache_dir: Path | None,
    forum_url: str,
    taxonomy_path: Path | None,
    scores_files: tuple[Path, ...],
    bids_file: Path | None,
    bid_scores: str,
    weights: str,
    objective: str,
    demand_file: Path | None,
    min_load: int,
    lock_file: Path | None,
    forbid_file: Path | None,
    keep_file: Path | None,
    alternates: int,
    require: tuple[str, ...],
    at_most: tuple[str, ...],
) -> None:
    """Assign --per-paper reviewers (or a paper's --demand) to each paper, maximizing total
    affinity (or, with --objective fair, the weakest paper's first).

    RUN_DIR may be `latest`. Writes, in submission-number order, assignments.csv (one row per
    pair: the reason for its affinity, each score in a labelled column, a weak flag),
    conflicts.csv (every declared or derived conflict, with its reason), weak_pairs.csv
    (pairs with no shared tag or keyword and faint text), short.csv (papers left short, with
    why), reviewers.html (by paper and by reviewer, with search; papers left short first)
    and, with --alternates, alternates.csv. Exit 2 when a conflict in REVIEWERS_FILE names
    no paper of the run; exit 1 when some paper could not get its reviewers (everything else
    still written; short.csv lists them with why).
    """
    from pipeline import assign
    from pipeline.assign import chair_outputs, controls, outputs, scores
    from pipeline.assign.outputs import ASSIGNMENTS_FILE, CONFLICTS_FILE
    from pipeline.report.reviewers import REVIEWERS_FILE, write_reviewers_html
    from pipeline.triage import tag_label

    scoring = scores.Scoring(
        sources=tuple(scores.load_scores(f) for f in scores_files),
        bids=scores.load_bids(bids_file) if bids_file else (),
        bid_scores=scores.parse_bid_scores(bid_scores),
        weights=scores.parse_weights(weights),
        affinity_sources=tuple(a for a in affinity_sources if a != "builtin"),
    )
    chair = controls.Controls(
        demand=controls.read_demand(demand_file) if demand_file else (),
        min_load=min_load,
        locked=tuple(scores.read_pairs(lock_file, "locked pairs")) if lock_file else (),
        forbidden=tuple(scores.read_pairs(forbid_file, "forbidden pairs")) if forbid_file else (),
        keep=tuple(scores.read_pairs(keep_file, "kept assignment")) if keep_file else (),
        rules=tuple(controls.parse_rule("require", r) for r in require)
        + tuple(controls.parse_rule("at-most", r) for r in at_most),
        alternates=alternates,
    )
    reader = open_run(run_dir)
    taxonomy = run_taxonomy(taxonomy_path, reader)
    from pipeline.assign.conflicts import coauthor_notes

    pool = assign.load_pool(reviewers_file, taxonomy)
    for line in pool.warnings:
        say(f"warning: {line}", err=True)
    policy = pool.conflict_policy.model_copy(
        update={
            k: v
            for k, v in (
                ("coauthor_years", coauthor_years),
                ("reference_year", coauthor_reference_year),
            )
            if v is not None
        }
    )
    papers = list(reader.papers())
    for line in coauthor_notes(papers, pool.reviewers, policy):
        say(f"warning: {line}", err=True)
    sources = []
    if "embeddings" in affinity_sources:
        sources.append(
            _embeddings(papers, pool.reviewers, embedding_model, config_path, base_url, cache_dir)
        )
    result = assign.assign(
        papers,
        pool.reviewers,
        per_paper=per_paper,
        max_load=max_load,
        policy=policy,
        top_k=top_k or None,
        sources=sources,
        scoring=scoring,
        controls=chair,
        objective=objective,
    )
    path = out or reader.dir / ASSIGNMENTS_FILE
    outputs.write_assignments_csv(result, path, taxonomy, weak_below=weak_below)
    conflicts = assign.write_conflicts_csv(result, path.with_name(CONFLICTS_FILE))
    weak = outputs.write_weak_pairs_csv(
        result, path.with_name(outputs.WEAK_PAIRS_FILE), weak_below=weak_below
    )
    edges = None
    if "openreview" in formats:
        edges = outputs.write_openreview_edges(
            result,
            path.with_name(outputs.OPENREVIEW_FILE),
            label=openreview_label,
            invitation=openreview_invitation,
        )
    page = write_reviewers_html(
        result,
        path.with_name(REVIEWERS_FILE),
        taxonomy,
        forum=forum_url,
        weak_below=weak_below,
    )
    short = chair_outputs.write_short_csv(result, path.with_name(chair_outputs.SHORT_FILE))
    say(outputs.summary(result, weak_below=weak_below), lines=True)
    say("\n".join(chair_outputs.chair_lines(result)), lines=True)
    for keyword, why in sorted(result.ignored_keywords.items()):
        say(f"note: keyword {keyword!r} does not count as expertise ({why})", err=True)
    say(f"assignments: {path}")
    say(f"conflicts:   {conflicts}")
    say(f"weak pairs:  {weak}")
    if edges is not None:
        say(f"openreview:  {edges}")
    say(f"reviewers:   {page}")
    say(f"short:       {short}")
    if alternates:
        label = lambda t: tag_label(taxonomy, t)  # noqa: E731
        alt = chair_outputs.write_alternates_csv(
            result, path.with_name(chair_outputs.ALTERNATES_FILE), label
        )
        say(f"alternates:  {alt}")
    if result.uncovered:
        say(f"{len(result.uncovered)} paper(s) could not be covered:", err=True)
        for item in result.uncovered:
            paper = result.papers[item.paper_id]
            say(f"  {paper.ref}: {item.reason}", err=True)
        raise SystemExit(1)


def _embeddings(papers, reviewers, model, config_path, base_url, cache_dir):  # noqa: ANN001, ANN202
    """The weighted embeddings source, vectors from the configured endpoint (or the cache)."""
    from pipeline.assign import embeddings
    from pipeline.cli.options import settings_from_flags
    from pipeline.config import DEFAULT_BASE_URL, public_url
    from pipeline.errors import ConfigError

    settings = settings_from_flags(
        config_path, True, {"base_url": base_url, "cache_dir": cache_dir}
    )
    if settings.api_key is None and not settings.base_url:
        raise ConfigError(
            "--affinity embeddings needs an endpoint: set OPENAI_API_KEY, or base_url "
            "(--base-url, OPENAI_BASE_URL or config.yaml) for an OpenAI-compatible server"
        )
    endpoint = public_url(settings.base_url or DEFAULT_BASE_URL)
    embed, close = embeddings.openai_embedder(settings, model)
    stats = embeddings.EmbeddingStats()
    try:
        source = embeddings.embeddings_source(
            papers, reviewers, embed, settings.cache_dir, model=model, endpoint=endpoint,
            stats=stats,
        )  # fmt: skip
    finally:
        close()
    say(
        f"embeddings: {stats.texts} text(s) with {model} at {endpoint}: {stats.cached} cached, "
        f"{stats.fetched} fetched in {stats.requests} request(s)",
        err=True,
    )
    return source, embeddings.EMBEDDING_WEIGHT
