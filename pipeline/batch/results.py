"""The downloaded result files of `digest batch collect`, read line by line, never whole.

Lines are split on `\\n` only (U+2028, U+2029 and U+0085 are legal raw characters in JSON),
each read with a bound: a line longer than MAX_LINE_BYTES is passed over in pieces, never
held. A line that is too long, not UTF-8, not JSON or nested too deeply is skipped and
recorded (file, line, why); it answers nothing, so its pair is asked synchronously like any
pair without an answer.

Per submitted pair the first valid line is used: a 200 line holding a chat completion; its
tokens are the ones billed at the Batch price. A later line of a pair that already has one
is a duplicate, a line whose custom_id was not submitted is unknown: both are counted and
reported, and neither is used or billed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from pipeline.backends import Completion
from pipeline.backends.openai_backend import MalformedResponse, completion_of
from pipeline.batch.state import (
    MAX_SKIPPED,
    RESULTS_DIR,
    BatchPart,
    BatchState,
    BatchTokens,
    LineCounts,
    SkippedLine,
)
from pipeline.engine.stage_runner import FirstAnswer
from pipeline.errors import StorageError
from pipeline.redact import Redactor

# No answer of ours comes near this (an answer over 100,000 characters fails its pair anyway);
# the bound keeps one hostile line from costing more memory than it.
MAX_LINE_BYTES = 4 * 1024 * 1024
EXPIRED_CODES = ("batch_expired", "batch_cancelled")


@dataclass
class Results:
    """What the downloaded files held: each answered pair's first answer, the counts, the
    tokens of the answers used, and the first skipped lines."""

    answers: dict[str, FirstAnswer] = field(default_factory=dict)
    counts: LineCounts = field(default_factory=LineCounts)
    tokens: BatchTokens = field(default_factory=BatchTokens)
    skipped: list[SkippedLine] = field(default_factory=list)


def read_lines(
    fh: IO[bytes], max_bytes: int | None = None
) -> Iterator[tuple[int, bytes | None, str | None]]:
    """(line number, the line without its newline, None) for each non-blank line of `fh`, or
    (line number, None, why) for a line longer than `max_bytes`, which is never held whole."""
    limit = MAX_LINE_BYTES if max_bytes is None else max_bytes
    number = 0
    while raw := fh.readline(limit + 1):
        number += 1
        if raw.endswith(b"\n") or len(raw) <= limit:
            line = raw.removesuffix(b"\n")
            if line.strip():
                yield number, line, None
            continue
        while (rest := fh.readline(limit + 1)) and not rest.endswith(b"\n"):
            pass  # the rest of the long line, in bounded pieces
        yield number, None, f"longer than {limit:,} bytes"


def decode_line(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the line's JSON object, None), or (None, why it cannot be read)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start + 1})"
    try:
        value = json.loads(text)
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:
        return None, f"not JSON ({exc})"[:200]
    if not isinstance(value, dict):
        return None, f"not a JSON object (a {type(value).__name__})"
    return value, None


def read_results(folder: Path, state: BatchState, submitted: set[str], redact: Redactor) -> Results:
    """Read every downloaded result file of `state` (see the module docstring); `submitted`
    holds the custom_ids of every request written at submit."""
    out = Results()
    errored: dict[str, bool] = {}  # pair -> its error line said expired or cancelled
    requests = 0
    for part in state.parts:
        if not part.downloaded:
            continue
        assert part.batch_id is not None
        requests += part.requests
        for name in part.result_files():
            path = _saved(folder, part, name)
            for number, line, why in _file_lines(path):
                value, why = decode_line(line) if line is not None else (None, why)
                if value is None:
                    out.counts.unreadable += 1
                    if len(out.skipped) < MAX_SKIPPED:
                        out.skipped.append(SkippedLine(file=name, line=number, why=str(why)))
                    continue
                key = value.get("custom_id")
                if not isinstance(key, str) or key not in submitted:
                    out.counts.unknown += 1
                    continue
                if key in out.answers:
                    out.counts.duplicates += 1
                    continue
                completion = _completion(value)
                if completion is None:
                    if key in errored:
                        out.counts.duplicates += 1
                    else:
                        errored[key] = _expired(value)
                    continue
                out.tokens.batch_in += completion.tokens_in
                out.tokens.batch_out += completion.tokens_out
                out.tokens.batch_cached += completion.tokens_cached
                completion = replace(
                    completion,
                    content=redact.optional(completion.content),
                    refusal=redact.optional(completion.refusal),
                )
                out.answers[key] = FirstAnswer(completion, part.batch_id)
    answered_later = [key for key in errored if key in out.answers]
    out.counts.duplicates += len(answered_later)  # an error line, then the pair's answer
    for key in answered_later:
        del errored[key]
    out.counts.answered = len(out.answers)
    out.counts.errors = len(errored)
    out.counts.expired = sum(errored.values())
    out.counts.missing = max(requests - out.counts.answered - out.counts.errors, 0)
    return out


def _saved(folder: Path, part: BatchPart, name: str) -> Path:
    """Where a result file was saved (a folder downloaded by an earlier version named it
    after the batch id, checked when batch.json was read)."""
    path = folder / name
    if not path.exists():
        kind = "output" if name.endswith("-output.jsonl") else "errors"
        legacy = folder / RESULTS_DIR / f"{part.batch_id}-{kind}.jsonl"
        if legacy.exists():
            return legacy
    return path


def _file_lines(path: Path) -> Iterator[tuple[int, bytes | None, str | None]]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with fh:
        try:
            yield from read_lines(fh)
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _completion(line: dict[str, Any]) -> Completion | None:
    """The chat completion of a 200 line, read as the backend reads one; else None."""
    response = line.get("response")
    if not isinstance(response, dict) or response.get("status_code") != 200:
        return None
    try:
        return completion_of(response.get("body"))
    except (MalformedResponse, RecursionError, ValueError):
        return None


def _expired(line: dict[str, Any]) -> bool:
    error = line.get("error")
    return isinstance(error, dict) and error.get("code") in EXPIRED_CODES
