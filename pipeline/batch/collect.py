"""`digest batch status` and `digest batch collect`.

Collect, in steps that each leave batch.json right, so a crash anywhere loses nothing:

1. retrieve every batch not yet ended; download the output and error files of each ended
   one into results/ (streamed to disk, synced, then marked downloaded: never downloaded
   twice). With `wait`, poll every `poll_s` seconds until every batch has ended or
   `timeout_s` has passed, riding out an unavailable endpoint with back-off (`waiting`);
2. once every batch has ended, run the normal job over the submitted inputs with each
   answered line (200, a chat completion) as the first answer of its (abstract, stage):
   the same schema and grounding checks, the same re-asks when it is invalid, the same
   cache writes when it is valid; pairs with an error line, an unreadable line, an
   expired or cancelled request, or in a failed batch are asked synchronously like any
   uncached pair (`results` reads the files). The inputs are read from the folder submit
   ran in, so sources are recorded as there, whatever the current directory. The run
   folder (summaries, errors, CSV, manifest, report) is written into the batch folder.
   While some batches still run, the answers of the ended ones that are valid as they
   are get cached already (no re-ask, nothing sent), and no run folder is written yet;
3. mark the folder collected: a later collect changes nothing and sends nothing.

A crash in step 2 (before or during cache writes) leaves the downloads on disk: the next
collect reads them again, skips the pairs already cached and goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.batch import waiting
from pipeline.batch.api import MAX_RETRIES, BatchAPI, EndpointUnavailable
from pipeline.batch.requests import submitted_keys
from pipeline.batch.results import read_results
from pipeline.batch.state import (
    BatchPart,
    BatchState,
    load_state,
    locked,
    now,
    save_state,
    update_part,
)
from pipeline.config import Settings
from pipeline.context import RunContext
from pipeline.engine.progress import Progress
from pipeline.engine.stage_runner import accepted_answer, check_completion
from pipeline.errors import InputError, OutputValidationError
from pipeline.ingest import IngestResult, read_inputs
from pipeline.job import JobResult, RecordSink, run_job
from pipeline.redact import Redactor, secrets_of
from pipeline.rundir import Manifest
from pipeline.rundir.writer import MANIFEST


def refresh(api: BatchAPI, state: BatchState) -> None:
    """Retrieve every created batch that has not ended yet (one poll each)."""
    for part in state.parts:
        if part.batch_id is not None and not part.ended:
            update_part(part, api.retrieve(part.batch_id))


def download(api: BatchAPI, folder: Path, state: BatchState) -> int:
    """Save the result files of every ended batch not downloaded yet; how many files."""
    files = 0
    for part in state.parts:
        if part.batch_id is None or not part.ended or part.downloaded:
            continue
        for file_id, name in part.downloads():
            api.download(file_id, folder / name)
            files += 1
        part.downloaded = True
        save_state(folder, state)
    return files


def unfinished(state: BatchState) -> list[BatchPart]:
    """The batches not ended yet, or ended with their results not downloaded yet."""
    return [p for p in state.parts if not p.ended or (p.batch_id and not p.downloaded)]


@dataclass
class Collected:
    """What a collect did."""

    state: BatchState
    pending: list[BatchPart] = field(default_factory=list)  # batches not ended yet
    downloaded: int = 0  # files downloaded by this collect
    job: JobResult | None = None  # the run over the inputs, once every batch ended
    already: Manifest | None = None  # collected before: the manifest it wrote
    synchronous_pairs: int = 0  # pairs without an answered line, asked synchronously
    cached_early: int = 0  # valid answers of ended batches cached while others still run
    timed_out: bool = False  # --wait reached its timeout with batches pending
    outage: str | None = None  # why the endpoint was unavailable at the last poll, if it was


def collect(
    folder: Path,
    settings: Settings,
    *,
    wait: bool = False,
    poll_s: float = waiting.DEFAULT_POLL_S,
    timeout_s: float = waiting.DEFAULT_TIMEOUT_S,
    progress: Progress | None = None,
    sinks: Callable[[RunContext], Sequence[RecordSink]] = lambda context: (),
    on_poll: Callable[[BatchState], None] | None = None,
    on_retry: Callable[[str, float], None] | None = None,
) -> Collected:
    """Collect the batches of `folder` (see the module docstring); `on_retry` hears why a
    poll failed and how long the wait is before the next."""
    folder = folder.absolute()  # the job runs from the submit's folder (in_submit_dir)
    with locked(folder):
        state = load_state(folder)
        if state.collected_at is not None and (folder / MANIFEST).exists():
            path = folder / MANIFEST
            try:
                manifest = Manifest.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InputError(f"{path}: unreadable ({exc})") from None
            return Collected(state, already=manifest)
        unsent = [p.file for p in state.parts if p.batch_id is None]
        if unsent:
            raise InputError(
                f"the submit of {folder} did not finish ({len(unsent)} request file(s) without "
                "a batch); run the same `digest batch submit` again: it resumes"
            )
        result = Collected(state)
        _poll(folder, state, settings, result, wait, poll_s, timeout_s, on_poll, on_retry)
        submitted = submitted_keys(folder)
        redact = Redactor(secrets_of(settings))
        if result.pending:
            if not settings.force:
                result.cached_early = _cache_valid(folder, state, settings, submitted, redact)
            return result
        read = read_results(folder, state, submitted, redact)
        state.lines, state.skipped = read.counts, read.skipped
        answers = read.answers
        given = dict(answers)
        with state.in_submit_dir():
            ingest = read_inputs(
                state.input_paths(),
                stream=True,
                follow_symlinks=state.follow_symlinks,
                out_dir=folder,
            )
            context = RunContext(settings)
            try:
                _check_same_pairs(folder, state, context, ingest, submitted)
            except BaseException:
                context.close()
                raise
            result.job = run_job(
                settings,
                ingest,
                folder,
                progress=progress,
                sinks=sinks(context),
                first_answers=answers,
                context=context,
            )
        used = [given[key].completion for key in given if key not in answers]
        manifest = result.job.manifest
        tokens, batch_tokens = manifest.tokens, read.tokens
        batch_tokens.sync_in = tokens.input - sum(c.tokens_in for c in used)
        batch_tokens.sync_out = tokens.output - sum(c.tokens_out for c in used)
        batch_tokens.sync_cached = tokens.cached - sum(c.tokens_cached for c in used)
        batch_tokens.sync_requests = manifest.requests_sent
        state.tokens = batch_tokens
        state.collected_at = now()
        save_state(folder, state)
        result.synchronous_pairs = state.pairs - state.cached - state.lines.answered
        return result


def _poll(
    folder: Path,
    state: BatchState,
    settings: Settings,
    result: Collected,
    wait: bool,
    poll_s: float,
    timeout_s: float,
    on_poll: Callable[[BatchState], None] | None,
    on_retry: Callable[[str, float], None] | None,
) -> None:
    """Poll and download once, or with `wait` until nothing is pending or the deadline."""
    clock = waiting.CLOCK
    deadline = clock.now() + timeout_s
    failures = 0
    # Waiting, the back-off below retries (on the clock); the SDK's own would sleep for real.
    api = BatchAPI(settings, max_retries=0 if wait else MAX_RETRIES)
    try:
        while True:
            try:
                refresh(api, state)
                save_state(folder, state)
                result.downloaded += download(api, folder, state)
            except EndpointUnavailable as exc:
                if not wait:
                    raise
                save_state(folder, state)  # what the polls before the failure brought
                failures += 1
                result.outage = str(exc)
                remaining = deadline - clock.now()
                if remaining <= 0:
                    result.timed_out = True
                    break
                delay = min(waiting.backoff_s(failures), remaining)
                if on_retry is not None:
                    on_retry(str(exc), delay)
                clock.sleep(delay)
                continue
            failures, result.outage = 0, None
            result.pending = unfinished(state)
            if on_poll is not None:
                on_poll(state)
            if not result.pending or not wait:
                break
            remaining = deadline - clock.now()
            if remaining <= 0:
                result.timed_out = True
                break
            clock.sleep(min(poll_s, remaining))
    finally:
        api.close()
    result.pending = unfinished(state)


def _cache_valid(
    folder: Path, state: BatchState, settings: Settings, submitted: set[str], redact: Redactor
) -> int:
    """While some batches still run: cache the answers of the ended ones that are valid as
    they are (the rest, which need re-asks, wait for the final run); how many."""
    answers = read_results(folder, state, submitted, redact).answers
    if not answers:
        return 0
    stored = 0
    with state.in_submit_dir():
        ingest = read_inputs(
            state.input_paths(), stream=True, follow_symlinks=state.follow_symlinks, out_dir=folder
        )
        with RunContext(settings) as context:
            _check_same_pairs(folder, state, context, ingest, submitted)
            for abstract in ingest.abstracts:
                for stage in context.stages.values():
                    key = context.key(stage, abstract)
                    first = answers.get(key)
                    if first is None or context.cached(stage, abstract, key) is not None:
                        continue
                    try:
                        parsed = check_completion(
                            stage, abstract.text, first.completion, settings.max_tokens
                        )
                    except OutputValidationError:
                        continue
                    if parsed.rejected:
                        continue  # some claims need a re-ask: the final run does it
                    answer = accepted_answer(parsed, first.completion)
                    provenance = context.provenance(
                        stage, key, batch_id=first.batch_id, **answer.provenance_fields()
                    )
                    context.store(stage, key, parsed.output, provenance, answer.dropped)
                    stored += 1
    return stored


def _check_same_pairs(
    folder: Path,
    state: BatchState,
    context: RunContext,
    ingest: IngestResult,
    submitted: set[str],
) -> None:
    """Refuse to collect when the inputs or prompts changed since submit: the answers
    would not be the ones asked for, and the new pairs would all be asked synchronously."""
    stages = context.stages.values()
    current = {context.key(stage, a) for a in ingest.abstracts for stage in stages}
    stale = len(submitted - current)
    if stale or len(current) != state.pairs:
        raise InputError(
            f"the inputs or prompts of {folder} changed since submit ({state.pairs} pairs then, "
            f"{len(current)} now; {stale} submitted requests match no pair now); restore them, "
            "or `digest run` the inputs (answers of the batches that still match are lost)"
        )
