"""`digest batch submit | status | collect`: the OpenAI Batch API mode."""

from __future__ import annotations

import os
from pathlib import Path

import click

from pipeline.batch import MAX_BYTES, MAX_REQUESTS
from pipeline.batch.state import LATEST_BATCH, BatchState, load_state, locked, settings_of
from pipeline.batch.waiting import DEFAULT_POLL_S, DEFAULT_TIMEOUT_S, MIN_POLL_S, describe_s
from pipeline.cli import main, say
from pipeline.cli.options import (
    describe_backend,
    input_options,
    run_options,
    settings_from_flags,
)
from pipeline.cli.progress import BarProgress
from pipeline.cli.run import say_counts, say_outcome
from pipeline.cli.views import point_latest, resolve_run_dir
from pipeline.config import Settings
from pipeline.engine.schedule import signals_interrupt
from pipeline.errors import InputError, RunInterrupted, WaitTimedOut
from pipeline.logs import add_secrets
from pipeline.pricing import BATCH_DISCOUNT, format_cost, format_tokens
from pipeline.redact import secrets_of


@main.group("batch")
def batch_group() -> None:
    """OpenAI Batch API mode: submit the requests, follow the batches, collect the results.

    `submit` writes and uploads the requests of every uncached (abstract, stage) pair and
    creates the batches; `status` shows how far they are; `collect` downloads the results,
    validates and caches them, asks the rest synchronously (with re-asks) and writes the
    run folder into the batch folder. Results equal a `digest run`'s, at about half the
    price for the batch answers; a batch may take up to 24 hours.
    """


def _folder(path: Path) -> Path:
    """The batch folder named (`latest-batch`: the newest), the link followed, so that
    messages and the `latest` link name the folder itself."""
    folder = resolve_run_dir(path, latest=LATEST_BATCH)
    if folder.is_symlink():
        target = Path(os.readlink(folder))
        folder = target if target.is_absolute() else folder.parent / target
    return folder.absolute()  # collect reads the inputs from the submit's folder


@batch_group.command("submit")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@input_options(
    out_help="Batch folder [default: outputs/batch-<timestamp>]; collect writes the run into it.",
    dry_run_help="Count the pairs, cached ones and request files; write nothing, send nothing.",
)
@click.option(
    "--max-requests",
    type=int,
    default=MAX_REQUESTS,
    show_default=True,
    help="Requests per file (the Batch API's limit).",
)
@click.option(
    "--max-bytes",
    type=int,
    default=MAX_BYTES,
    show_default=True,
    help="Bytes per file (the Batch API's limit).",
)
@run_options
def submit_command(
    paths: tuple[Path, ...],
    config_path: Path | None,
    no_progress: bool,
    dry_run: bool,
    follow_symlinks: bool,
    max_requests: int,
    max_bytes: int,
    **flags,
) -> None:
    """Submit the uncached requests of PATHS as Batch API batches.

    Running the same command again resumes a submit that stopped half-way (nothing is
    submitted twice) or says that everything is submitted.
    """
    from pipeline.batch.submit import Limits, submit

    settings = settings_from_flags(config_path, no_progress, flags)
    say(describe_backend(settings), err=True)
    try:
        with signals_interrupt():
            result = submit(
                settings,
                list(paths),
                follow_symlinks=follow_symlinks,
                limits=Limits(max_requests=max_requests, max_bytes=max_bytes),
                dry_run=dry_run,
                on_folder=lambda folder: point_latest(folder, LATEST_BATCH),  # before any upload
            )
    except RunInterrupted as exc:
        raise RunInterrupted(
            f"{exc}; nothing is lost: run the same `digest batch submit` again to resume "
            "(nothing is submitted twice)"
        ) from None
    pairs, parts = result.pairs, result.parts
    requests = sum(p.requests for p in parts)
    say(
        f"{pairs.abstracts} abstracts: {pairs.pairs} (abstract, stage) pairs, {pairs.cached} "
        f"cached, {requests} requests in {len(parts)} request file(s)"
        + (f" (model {settings.model})" if parts else "")
    )
    if not parts:
        say("nothing to submit: every pair is cached; `digest run` writes the run folder from it")
        return
    if dry_run:
        say("dry run: nothing written, nothing sent")
        return
    where = result.folder
    if result.resumed and not (result.uploaded or result.created or result.found):
        say(f"already submitted: {len(parts)} batch(es) in {where}; nothing sent")
    else:
        found = f", found {result.found} made before an interruption" if result.found else ""
        resumed = " (resumed an unfinished submit)" if result.resumed else ""
        say(
            f"uploaded {result.uploaded} file(s), created {result.created} batch(es){found} "
            f"in {where}{resumed}"
        )
    say(f"next: digest batch status {where}; then digest batch collect {where}")


@batch_group.command("status")
@click.argument("folder", default=LATEST_BATCH, type=click.Path(path_type=Path))
def status_command(folder: Path) -> None:
    """Show how far the batches of FOLDER are [default: the latest submit]."""
    from pipeline.batch.api import BatchAPI
    from pipeline.batch.collect import refresh
    from pipeline.batch.state import save_state

    folder = _folder(folder)
    state = load_state(folder)
    busy = False
    if state.collected_at is None and any(not p.ended for p in state.parts):
        settings = _settings(state, {})
        try:
            with signals_interrupt(), locked(folder):
                state = load_state(folder)
                api = BatchAPI(settings)
                try:
                    refresh(api, state)
                finally:
                    api.close()
                save_state(folder, state)
        except InputError as exc:
            if "another digest command" not in str(exc):
                raise
            busy = True
        except RunInterrupted as exc:
            raise RunInterrupted(f"{exc}; nothing changed in {folder}") from None
    for line in status_lines(folder, state):
        say(line)
    if busy:
        say("(a collect is working on this folder: figures as it last saved them)")


def status_lines(folder: Path, state: BatchState) -> list[str]:
    """Each batch's status and counts, the totals, and what to do next."""
    parts = state.parts
    lines = [
        f"{folder}: {len(parts)} batch(es), {sum(p.requests for p in parts)} requests "
        f"(model {state.model}), submitted {state.created_at}"
    ]
    statuses: dict[str, int] = {}
    done = failed = total = 0
    for part in parts:
        status = part.status or ("not created" if part.file_id else "not uploaded")
        statuses[status] = statuses.get(status, 0) + 1
        c = part.request_counts
        done += c.completed
        failed += c.failed
        total += part.requests
        lines.append(
            f"  {Path(part.file).name}  {part.batch_id or '-':<24} {status:<12} "
            f"{c.completed:>6}/{part.requests} done  {c.failed:>5} failed"
        )
        lines.extend(f"    {error}" for error in part.errors[:5])
    shown = ", ".join(f"{n} {s}" for s, n in statuses.items())
    lines.append(f"total: {done}/{total} requests done, {failed} failed; batches: {shown}")
    if state.collected_at is not None:
        lines.append(f"collected {state.collected_at}: {folder / 'summaries.jsonl'}")
        lines.extend(odd_lines(state))
        lines.append(_cost_line(state))
    elif any(p.batch_id is None for p in parts):
        lines.append("the submit did not finish: run the same `digest batch submit` again")
    elif all(p.ended for p in parts):
        lines.append(f"every batch has ended: digest batch collect {folder}")
    else:
        lines.append(f"not finished; `digest batch collect --wait {folder}` waits for them")
    return lines


def odd_lines(state: BatchState) -> list[str]:
    """What the result files held besides one line per submitted pair: skipped unreadable
    lines (the first few, by file and line), unknown and duplicate custom_ids."""
    counts, out = state.lines, []
    if counts.unreadable:
        shown = "; ".join(f"{s.file}:{s.line}: {s.why}" for s in state.skipped[:5])
        more = f"; and {counts.unreadable - 5} more" if counts.unreadable > 5 else ""
        out.append(
            f"{counts.unreadable} unreadable result line(s) skipped, their pairs asked "
            f"synchronously: {shown}{more}"
        )
    if counts.unknown or counts.duplicates:
        out.append(
            f"{counts.unknown} line(s) with a custom_id that was not submitted and "
            f"{counts.duplicates} duplicate line(s) (not used, not billed)"
        )
    return out


def _cost_line(state: BatchState) -> str:
    t = state.tokens
    batch = (
        f"batch answers {format_tokens(t.batch_in)} input, {format_tokens(t.batch_out)} output "
        f"tokens; {t.sync_requests} synchronous request(s) {format_tokens(t.sync_in)} input, "
        f"{format_tokens(t.sync_out)} output"
    )
    settings = _settings(state, {}, key=False)
    price = settings.price
    if price is None:
        return f"tokens: {batch}; cost: no price for {state.model!r} (set prices in config.yaml)"
    at_batch = price.cost(t.batch_in, t.batch_cached, t.batch_out) * BATCH_DISCOUNT
    at_list = price.cost(t.sync_in, t.sync_cached, t.sync_out)
    return (
        f"tokens: {batch}; estimated cost {format_cost(at_batch + at_list)} "
        f"({format_cost(at_batch)} at the Batch price, {1 - BATCH_DISCOUNT:.0%} off "
        f"{state.model} list prices, + {format_cost(at_list)} synchronous)"
    )


def _say_poll(state: BatchState) -> None:
    """One stderr line per poll of `collect --wait`."""
    running = [p for p in state.parts if not p.ended]
    if running:
        done = sum(p.request_counts.completed + p.request_counts.failed for p in state.parts)
        total = sum(p.requests for p in state.parts)
        say(
            f"waiting: {len(running)} of {len(state.parts)} batch(es) not ended, "
            f"{done}/{total} requests answered",
            err=True,
        )


def _settings(state: BatchState, overrides: dict, *, key: bool = True) -> Settings:
    settings = settings_of(state, overrides)
    if key:
        add_secrets(*secrets_of(settings))
    return settings


@batch_group.command("collect")
@click.argument("folder", default=LATEST_BATCH, type=click.Path(path_type=Path))
@click.option("--wait", is_flag=True, help="Poll until every batch has ended, then collect.")
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=MIN_POLL_S),
    default=DEFAULT_POLL_S,
    show_default=True,
    help=f"Seconds between polls with --wait (at least {MIN_POLL_S:g}).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_S,
    help=f"Seconds --wait waits at most [default: {DEFAULT_TIMEOUT_S:g}, "
    f"{describe_s(DEFAULT_TIMEOUT_S)}]; then exit 75, and a later collect goes on.",
)
@click.option("--base-url", help="The submit's endpoint again, e.g. to add user:password.")
@click.option("--concurrency", "max_concurrency", type=int, help="Max synchronous requests.")
@click.option("--rpm", "requests_per_minute", type=int, help="Requests-per-minute limit.")
@click.option("--tpm", "tokens_per_minute", type=int, help="Tokens-per-minute limit.")
@click.option("--no-progress", "no_progress", is_flag=True, help="No progress bar on stderr.")
def collect_command(
    folder: Path,
    wait: bool,
    poll_interval: float,
    timeout_s: float,
    no_progress: bool,
    **overrides,
) -> None:
    """Download the results of FOLDER's batches, validate and cache them, ask the rest
    synchronously and write the run folder [FOLDER default: the latest submit].

    Exit code 0 when every stage of every abstract is ok (or some batch has not ended:
    nothing is written then), 1 when some failed, 2 bad input/config, 3 endpoint refused,
    75 --wait reached --timeout, 130 interrupted. Collecting again changes nothing; after
    75 or 130 it goes on.
    """
    from pipeline.batch.collect import collect
    from pipeline.report import HtmlReportSink
    from pipeline.report.html import HTML_FILE

    folder = _folder(folder)
    state = load_state(folder)
    if no_progress:
        overrides["progress"] = False
    settings = _settings(state, overrides)
    say(describe_backend(settings), err=True)

    def sinks(context):
        title = f"Digest of {folder.resolve().name}"
        return [HtmlReportSink(folder / HTML_FILE, context.taxonomy, title=title)]

    def say_retry(cause: str, delay_s: float) -> None:
        say(f"{cause}; retrying in {describe_s(delay_s)}", err=True)

    try:
        with signals_interrupt():
            result = collect(
                folder,
                settings,
                wait=wait,
                poll_s=poll_interval,
                timeout_s=timeout_s,
                progress=BarProgress() if settings.progress else None,
                sinks=sinks,
                on_poll=_say_poll if wait else None,
                on_retry=say_retry,
            )
    except RunInterrupted as exc:
        raise RunInterrupted(
            f"{exc}; nothing is lost: run `digest batch collect {folder}` again to resume"
        ) from None
    finally:
        if (folder / "manifest.json").exists():
            point_latest(folder)
    if result.already is not None:
        say(f"already collected {result.state.collected_at}; nothing sent, nothing changed")
        say_counts(result.already)
        say_outcome(folder, result.already)
        return
    if result.pending:
        for line in status_lines(folder, result.state):
            say(line)
        if result.timed_out:
            outage = f"; the endpoint was unavailable: {result.outage}" if result.outage else ""
            raise WaitTimedOut(
                f"gave up waiting after {describe_s(timeout_s)} (--timeout): "
                f"{len(result.pending)} of {len(result.state.parts)} batch(es) not ended or "
                f"not downloaded{outage}; nothing is lost: run `digest batch collect {folder}` "
                "again later"
            )
        say(
            f"{len(result.pending)} of {len(result.state.parts)} batch(es) not ended; "
            f"downloaded {result.downloaded} result file(s) of the ended ones and cached "
            f"{result.cached_early} valid answer(s); no run folder yet: collect again "
            "later, or with --wait",
            err=True,
        )
        return
    assert result.job is not None
    lines = result.state.lines
    say(
        f"batch results: {lines.answered} answered, {lines.errors} error line(s) "
        f"({lines.expired} expired or cancelled), {lines.missing} without a line; "
        f"{result.synchronous_pairs} pair(s) without a batch answer asked synchronously, "
        f"{result.job.manifest.requests_sent} synchronous request(s) in all (re-asks included)"
    )
    for line in odd_lines(result.state):
        say(line, err=True)
    say_counts(result.job.manifest)
    say(_cost_line(result.state))
    say_outcome(folder, result.job.manifest)
