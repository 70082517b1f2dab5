"""Typed error tree and failure kinds; the CLI is the only place that turns errors into exits."""

from __future__ import annotations

import errno
from typing import Literal, get_args

# Why one (abstract, stage) failed: the `kind` of every errors.jsonl record and stage error.
FailureKind = Literal[
    "empty",
    "invalid_json",
    "schema",
    "ungrounded",
    "truncated",
    "refusal",
    "rate_limit",
    "server_error",
    "http_408",
    "http_409",
    "timeout",
    "connection",
    "context_length",
    "malformed_response",
    "backend",
]

# One line per kind: what happened and whether it was retried (the docs' table is tested
# against this, so the two cannot drift).
FAILURE_KINDS: dict[FailureKind, str] = {
    "empty": "the answer had no content (empty or null `content`, and no refusal); re-asked",
    "invalid_json": "the answer is not valid JSON; re-asked with the parse error",
    "schema": "the JSON does not fit the stage's schema; re-asked with the validation error",
    "ungrounded": "the answer states what the abstract does not (evidence not in the "
    "abstract, a number, name or dataset it lacks, a tag outside the taxonomy or that nothing "
    "in it supports); a claim is re-asked, a tag or keyword dropped, a TL;DR re-asked",
    "truncated": "the answer was cut off at max_tokens (finish_reason=length); re-asked",
    "refusal": "the model refused to answer; re-asked",
    "rate_limit": "429 after every transport retry",
    "server_error": "5xx after every transport retry",
    "http_408": "408 Request Timeout after every transport retry",
    "http_409": "409 Conflict after every transport retry",
    "timeout": "no complete answer within timeout_s (each attempt as a whole, connect to last "
    "byte) after every transport retry",
    "connection": "the connection failed or dropped after every transport retry",
    "context_length": "the endpoint said the abstract is too long for the model (400); not retried",
    "malformed_response": "a 200 whose body is not a chat completion (an HTML page, not JSON or "
    "cut off, a JSON array, `message: null`, non-numeric `usage`, no choices) after every "
    "transport retry",
    "backend": "any other backend failure for this request; not retried",
}
assert set(FAILURE_KINDS) == set(get_args(FailureKind))


def failure_kinds_table() -> str:
    """The Markdown table of failure kinds that docs/output-files.md carries (a test keeps them equal)."""
    rows = ["| kind | what happened |", "|---|---|"]
    rows += [f"| `{kind}` | {text} |" for kind, text in FAILURE_KINDS.items()]
    return "\n".join(rows)


class PipelineError(Exception):
    """Root of every error this package raises on purpose."""

    exit_code = 1


class ConfigError(PipelineError):
    """Bad config.yaml, environment or flags."""

    exit_code = 2


class InputError(PipelineError):
    """An input path or file that cannot be read as abstracts."""

    exit_code = 2


class StorageError(PipelineError):
    """A folder or file the run must write cannot be written (permissions, not a folder,
    disk full); the message names the path."""

    exit_code = 2

    @classmethod
    def from_os_error(cls, path: object, exc: OSError) -> StorageError:
        """The one message for a failed write: what, where and why (disk full: what to do)."""
        why = exc.strerror or str(exc)
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link where the file should be
            why = "it is a symbolic link, and digest never writes through one; remove it"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            why += "; free some space and rerun the same command (finished work is cached)"
        return cls(f"cannot write {path}: {why}")


class OutputValidationError(PipelineError):
    """A stage output that fails its schema or grounding checks; `kind` names the failure."""

    def __init__(
        self, message: str, *, kind: FailureKind = "schema", raw: str | None = None
    ) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.raw = raw


class BackendError(PipelineError):
    """A backend call that failed for a reason other than the content of its answer;
    `attempts` is how many requests it sent (transport retries included)."""

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind = "backend",
        raw: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.raw = raw
        self.attempts = attempts


class FatalBackendError(BackendError):
    """A failure no retry can fix (bad key, unknown model, rejected request): stops the run."""

    exit_code = 3


class RunInterrupted(PipelineError):
    """The run was stopped by a signal; finished work is flushed and can be resumed."""

    exit_code = 130
