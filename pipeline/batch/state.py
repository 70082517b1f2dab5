"""The batch folder's typed state file (`batch.json`): what was submitted, where each batch
stands, and what `collect` has done with its results. Written atomically after every step,
so a crash at any point leaves a state that the next command can go on from."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline import __version__
from pipeline.config import Settings, load_settings, public_url
from pipeline.errors import ConfigError, InputError, StorageError

STATE = "batch.json"
REQUESTS_DIR = "requests"
RESULTS_DIR = "results"
KEYS_FILE = "custom_ids.txt"  # under requests/: every request's custom_id, one a line
LOCK = ".batch.lock"
LATEST_BATCH = "latest-batch"  # beside the folder: `digest batch status` without a folder

# The API's statuses: validating, in_progress, finalizing, cancelling, and these terminal ones
# (kept as plain strings: a status added to the API must not make batch.json unreadable).
TERMINAL: frozenset[str] = frozenset({"failed", "completed", "expired", "cancelled"})
# Settings that do not travel from `submit` to `collect`: secrets, and what each command sets.
_NOT_STORED = {"api_key", "out_dir", "progress"}


class RequestCounts(BaseModel):
    """A batch's request counts as the API reports them."""

    model_config = ConfigDict(extra="forbid")
    total: int = 0
    completed: int = 0
    failed: int = 0


class BatchPart(BaseModel):
    """One request file and the batch made from it."""

    model_config = ConfigDict(extra="forbid")
    file: str  # relative to the folder: requests/part-0001.jsonl
    model: str
    requests: int
    bytes: int
    sha256: str
    file_id: str | None = None  # set once uploaded
    batch_id: str | None = None  # set once the batch is created
    status: str | None = None  # as last seen by submit, status or collect
    request_counts: RequestCounts = Field(default_factory=RequestCounts)
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list[str] = Field(default_factory=list)  # why the batch failed (validation)
    downloaded: bool = False  # its output and error files are saved under results/

    @property
    def ended(self) -> bool:
        """True once the batch reached a terminal status (or was never created)."""
        return self.batch_id is None or self.status in TERMINAL

    def result_files(self) -> list[str]:
        """The downloaded files of this batch, relative to the folder."""
        if self.batch_id is None:
            return []
        names = []
        if self.output_file_id:
            names.append(f"{RESULTS_DIR}/{self.batch_id}-output.jsonl")
        if self.error_file_id:
            names.append(f"{RESULTS_DIR}/{self.batch_id}-errors.jsonl")
        return names


class BatchTokens(BaseModel):
    """Tokens of the batch answers (billed at the Batch price) and of the requests `collect`
    sent synchronously: re-asks, and pairs without an answer (billed at the list price)."""

    model_config = ConfigDict(extra="forbid")
    batch_in: int = 0
    batch_out: int = 0
    batch_cached: int = 0
    sync_in: int = 0
    sync_out: int = 0
    sync_cached: int = 0
    sync_requests: int = 0


class LineCounts(BaseModel):
    """What the downloaded result files held, as `collect` read them."""

    model_config = ConfigDict(extra="forbid")
    answered: int = 0  # 200 lines with a chat completion (validated in the run)
    errors: int = 0  # error lines (any status but 200, an unreadable 200 body)
    expired: int = 0  # of the error lines, batch_expired / batch_cancelled
    missing: int = 0  # submitted requests in no result file (a failed or cancelled batch)


class BatchState(BaseModel):
    """batch.json: the settings and inputs of a `digest batch submit`, and every batch."""

    model_config = ConfigDict(extra="forbid")
    tool: str = "abstract-digest"
    version: str = __version__
    created_at: str
    cwd: str  # relative input paths are relative to this folder
    inputs: list[str]
    follow_symlinks: bool = False
    settings: dict[str, Any]  # no secrets; collect runs with these (API key from the env)
    endpoint: str
    model: str
    prompts: dict[str, str]  # stage -> prompt hash at submit (cache keys depend on it)
    abstracts: int
    pairs: int  # (abstract, stage) pairs of the inputs
    cached: int  # of them, already in the cache at submit (not in any batch)
    parts: list[BatchPart] = Field(default_factory=list)
    tokens: BatchTokens = Field(default_factory=BatchTokens)
    lines: LineCounts = Field(default_factory=LineCounts)
    collected_at: str | None = None  # when collect last wrote the run folder

    def input_paths(self) -> list[Path]:
        """The input paths, as given when run from the same folder as submit."""
        here = Path.cwd().resolve() == Path(self.cwd)
        return [
            Path(p) if here or Path(p).is_absolute() else Path(self.cwd) / p for p in self.inputs
        ]


def update_part(part: BatchPart, batch: Any) -> None:
    """Take a batch's status, counts, file ids and errors as the API returned them."""
    part.status = batch.status
    counts = batch.request_counts
    if counts is not None:
        part.request_counts = RequestCounts(
            total=counts.total, completed=counts.completed, failed=counts.failed
        )
    part.output_file_id = batch.output_file_id
    part.error_file_id = batch.error_file_id
    errors = getattr(batch.errors, "data", None) or []
    part.errors = [
        f"{e.code or 'error'}{f' (line {e.line})' if e.line else ''}: {e.message}" for e in errors
    ][:20]


def now() -> str:
    """The current time as the state file stores it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def stored_settings(settings: Settings) -> dict[str, Any]:
    """The settings a batch folder keeps: no secrets, no credentials, folders absolute."""
    data = settings.model_dump(mode="json", exclude=_NOT_STORED)
    data["provider"] = settings.resolved_provider
    if settings.base_url:
        data["base_url"] = public_url(settings.base_url)
    for name in ("cache_dir", "prompts_dir", "outputs_root"):
        data[name] = str(getattr(settings, name).resolve())
    return data


def settings_of(state: BatchState, overrides: dict[str, Any]) -> Settings:
    """The settings of a submitted batch, with the API key from the environment and
    `overrides` (flags that change no cache key, and `base_url` to add URL credentials)."""
    data = {**state.settings, **{k: v for k, v in overrides.items() if v is not None}}
    settings = load_settings(None, overrides=data)
    if settings.endpoint != state.endpoint:
        raise ConfigError(
            f"the batches were submitted to {state.endpoint}, not {settings.endpoint}; "
            "--base-url may only add credentials to the same URL"
        )
    return settings


def load_state(folder: Path) -> BatchState:
    """The state of a batch folder; InputError when it holds none or it is unreadable."""
    path = folder / STATE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            f"{folder} is not a batch folder (no {STATE}); `digest batch submit` makes one"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return BatchState.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "file"
        raise InputError(f"{path}: not a batch state file ({where}: {first['msg']})") from None


def save_state(folder: Path, state: BatchState) -> None:
    """Write batch.json atomically and durably (a crash leaves the old or the new one)."""
    path = folder / STATE
    tmp = path.with_name(f".{STATE}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(state.model_dump_json(indent=2) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StorageError.from_os_error(path, exc) from exc


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the folder's lock, so two commands never change one batch folder at once."""
    try:
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError.from_os_error(folder / LOCK, exc) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                f"another digest command is working on {folder}; wait for it to end"
            ) from None
        yield
    finally:
        os.close(fd)
