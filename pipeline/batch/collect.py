"""`digest batch status` and `digest batch collect`.

Collect, in steps that each leave batch.json right, so a crash anywhere loses nothing:

1. retrieve every batch not yet ended; download the output and error files of each ended
   one into results/ (whole files, synced, then marked downloaded: never downloaded twice);
2. once every batch has ended, run the normal job over the submitted inputs with each
   answered line (200, a chat completion) as the first answer of its (abstract, stage):
   the same schema and grounding checks, the same re-asks when it is invalid, the same
   cache writes when it is valid; pairs with an error line, an expired or cancelled
   request, or in a failed batch are asked synchronously like any uncached pair. The run
   folder (summaries, errors, CSV, manifest, report) is written into the batch folder.
   While some batches still run, the answers of the ended ones that are valid as they
   are get cached already (no re-ask, nothing sent), and no run folder is written yet;
3. mark the folder collected: a later collect changes nothing and sends nothing.

A crash in step 2 (before or during cache writes) leaves the downloads on disk: the next
collect reads them again, skips the pairs already cached and goes on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pipeline.backends.openai_backend import MalformedResponse, parse_completion
from pipeline.batch.api import BatchAPI
from pipeline.batch.requests import submitted_keys
from pipeline.batch.state import (
    BatchPart,
    BatchState,
    BatchTokens,
    LineCounts,
    load_state,
    locked,
    now,
    save_state,
    update_part,
)
from pipeline.config import Settings
from pipeline.context import RunContext
from pipeline.engine.progress import Progress
from pipeline.engine.stage_runner import FirstAnswer, accepted_answer, check_completion
from pipeline.errors import InputError, OutputValidationError, StorageError
from pipeline.ingest import IngestResult, read_inputs
from pipeline.job import JobResult, RecordSink, run_job
from pipeline.redact import Redactor, secrets_of
from pipeline.rundir import Manifest
from pipeline.rundir.writer import MANIFEST

EXPIRED_CODES = ("batch_expired", "batch_cancelled")

log = logging.getLogger(__name__)


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
        for file_id, name in zip(
            (part.output_file_id, part.error_file_id), _names(part), strict=True
        ):
            if file_id is not None:
                api.download(file_id, folder / name)
                files += 1
        part.downloaded = True
        save_state(folder, state)
    return files


def _names(part: BatchPart) -> tuple[str, str]:
    out = err = ""
    for name in part.result_files():
        if name.endswith("-output.jsonl"):
            out = name
        else:
            err = name
    return out, err


def read_results(
    folder: Path, state: BatchState, redact: Redactor
) -> tuple[dict[str, FirstAnswer], LineCounts, BatchTokens]:
    """The answered lines of the downloaded files (cache key -> first answer), what the
    files held, and the tokens of the answers (billed at the Batch price)."""
    answers: dict[str, FirstAnswer] = {}
    counts = LineCounts()
    tokens = BatchTokens()
    for part in state.parts:
        if not part.downloaded:
            continue
        assert part.batch_id is not None
        seen = 0
        for name in part.result_files():
            for line in _lines(folder / name):
                seen += 1
                key = line.get("custom_id")
                completion = _completion(line)
                if not isinstance(key, str) or completion is None:
                    counts.errors += 1
                    error = line.get("error") or {}
                    if isinstance(error, dict) and error.get("code") in EXPIRED_CODES:
                        counts.expired += 1
                    continue
                counts.answered += 1
                tokens.batch_in += completion.tokens_in
                tokens.batch_out += completion.tokens_out
                tokens.batch_cached += completion.tokens_cached
                completion = replace(
                    completion,
                    content=redact.optional(completion.content),
                    refusal=redact.optional(completion.refusal),
                )
                answers.setdefault(key, FirstAnswer(completion, part.batch_id))
        counts.missing += max(part.requests - seen, 0)
    return answers, counts, tokens


def _lines(path: Path) -> list[dict]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StorageError.from_os_error(path, exc) from exc
    lines = []
    # Split on \n only: U+2028, U+2029 and U+0085 are legal raw characters inside JSON.
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            # An unreadable line answers nothing: its pair is asked synchronously.
            why = "nested too deeply" if isinstance(exc, RecursionError) else type(exc).__name__
            log.warning(
                "%s: line %d is not a readable result line (%s); skipped", path, number, why
            )
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def _completion(line: dict):
    """The chat completion of a 200 line, read as the backend reads one; else None."""
    response = line.get("response")
    if not isinstance(response, dict) or response.get("status_code") != 200:
        return None
    body = response.get("body")
    try:
        return parse_completion(json.dumps(body).encode(), "application/json")
    except (MalformedResponse, RecursionError, ValueError):
        return None


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


def collect(
    folder: Path,
    settings: Settings,
    *,
    wait: bool = False,
    poll_s: float = 60.0,
    progress: Progress | None = None,
    sinks: Callable[[RunContext], Sequence[RecordSink]] = lambda context: (),
    on_poll: Callable[[BatchState], None] | None = None,
) -> Collected:
    """Collect the batches of `folder` (see the module docstring)."""
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
        api = BatchAPI(settings)
        try:
            while True:
                refresh(api, state)
                save_state(folder, state)
                result.downloaded += download(api, folder, state)
                result.pending = [p for p in state.parts if not p.ended]
                if on_poll is not None:
                    on_poll(state)
                if not result.pending or not wait:
                    break
                time.sleep(poll_s)
        finally:
            api.close()
        if result.pending:
            if not settings.force:
                result.cached_early = _cache_valid(folder, state, settings)
            return result
        answers, state.lines, batch_tokens = read_results(
            folder, state, Redactor(secrets_of(settings))
        )
        ingest = read_inputs(
            state.input_paths(), stream=True, follow_symlinks=state.follow_symlinks, out_dir=folder
        )
        context = RunContext(settings)
        try:
            _check_same_pairs(folder, state, context, ingest)
        except BaseException:
            context.close()
            raise
        given = {key: a.completion for key, a in answers.items()}
        result.job = run_job(
            settings,
            ingest,
            folder,
            progress=progress,
            sinks=sinks(context),
            first_answers=answers,
            context=context,
        )
        used = [given[key] for key in given if key not in answers]
        manifest = result.job.manifest
        tokens = manifest.tokens
        batch_tokens.sync_in = tokens.input - sum(c.tokens_in for c in used)
        batch_tokens.sync_out = tokens.output - sum(c.tokens_out for c in used)
        batch_tokens.sync_cached = tokens.cached - sum(c.tokens_cached for c in used)
        batch_tokens.sync_requests = manifest.requests_sent
        state.tokens = batch_tokens
        state.collected_at = now()
        save_state(folder, state)
        result.synchronous_pairs = state.pairs - state.cached - state.lines.answered
        return result


def _cache_valid(folder: Path, state: BatchState, settings: Settings) -> int:
    """While some batches still run: cache the answers of the ended ones that are valid as
    they are (the rest, which need re-asks, wait for the final run); how many."""
    answers, _, _ = read_results(folder, state, Redactor(secrets_of(settings)))
    if not answers:
        return 0
    ingest = read_inputs(
        state.input_paths(), stream=True, follow_symlinks=state.follow_symlinks, out_dir=folder
    )
    with RunContext(settings) as context:
        _check_same_pairs(folder, state, context, ingest)
        stored = 0
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
    folder: Path, state: BatchState, context: RunContext, ingest: IngestResult
) -> None:
    """Refuse to collect when the inputs or prompts changed since submit: the answers
    would not be the ones asked for, and the new pairs would all be asked synchronously."""
    stages = context.stages.values()
    current = {context.key(stage, a) for a in ingest.abstracts for stage in stages}
    submitted = submitted_keys(folder)
    stale = len(submitted - current)
    if stale or len(current) != state.pairs:
        raise InputError(
            f"the inputs or prompts of {folder} changed since submit ({state.pairs} pairs then, "
            f"{len(current)} now; {stale} submitted requests match no pair now); restore them, "
            "or `digest run` the inputs (answers of the batches that still match are lost)"
        )
