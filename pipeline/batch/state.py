"""The batch folder's typed state file (`batch.json`): what was submitted, where each batch
stands, and what `collect` has done with its results. Written atomically after every step,
so a crash at any point leaves a state that the next command can go on from.

A server's ids are stored only once checked (`pipeline.batch.server`) and never name a
file: a batch's results are saved under the name of its own request file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline import __version__, folderlock
from pipeline.atomicfile import write_text
from pipeline.batch.server import ServerBatch, ServerId, Status
from pipeline.config import ENV_API_KEY, Settings, public_url
from pipeline.errors import ConfigError, InputError

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
MAX_SKIPPED = 20  # skipped result lines kept in batch.json (all are counted)
# A request file's name, as submit makes them: it is used in paths, so nothing else is read.
PartFile = Annotated[str, Field(pattern=rf"^{REQUESTS_DIR}/part-[0-9]{{4,6}}\.jsonl$")]


class RequestCounts(BaseModel):
    """A batch's request counts as the API reports them."""

    model_config = ConfigDict(extra="forbid")
    total: int = 0
    completed: int = 0
    failed: int = 0


class BatchPart(BaseModel):
    """One request file and the batch made from it."""

    model_config = ConfigDict(extra="forbid")
    file: PartFile  # relative to the folder: requests/part-0001.jsonl
    model: str
    requests: int
    bytes: int
    sha256: str
    file_id: ServerId | None = None  # set once uploaded
    batch_id: ServerId | None = None  # set once the batch is created
    status: Status | None = None  # as last seen by submit, status or collect
    request_counts: RequestCounts = Field(default_factory=RequestCounts)
    output_file_id: ServerId | None = None
    error_file_id: ServerId | None = None
    errors: list[str] = Field(default_factory=list)  # why the batch failed (validation)
    downloaded: bool = False  # its output and error files are saved under results/

    @property
    def ended(self) -> bool:
        """True once the batch reached a terminal status (or was never created)."""
        return self.batch_id is None or self.status in TERMINAL

    def result_files(self) -> list[str]:
        """The downloaded files of this batch, relative to the folder: named after its request
        file (results/part-0001-output.jsonl), never after an id the server chose."""
        if self.batch_id is None:
            return []
        return [name for _, name in self.downloads()]

    def downloads(self) -> list[tuple[str, str]]:
        """(server file id, name under the folder) of each result file the batch has."""
        stem = f"{RESULTS_DIR}/{Path(self.file).stem}"
        pairs = [(self.output_file_id, f"{stem}-output.jsonl")]
        pairs.append((self.error_file_id, f"{stem}-errors.jsonl"))
        return [(file_id, name) for file_id, name in pairs if file_id]


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
    """What the downloaded result files held, as `collect` read them: per submitted pair
    (answered, errors, missing add up to the requests), then the lines that answer none."""

    model_config = ConfigDict(extra="forbid")
    answered: int = 0  # pairs with a 200 line holding a chat completion (validated in the run)
    errors: int = 0  # pairs with only error lines (any status but 200, an unreadable 200 body)
    expired: int = 0  # of those, batch_expired / batch_cancelled
    missing: int = 0  # pairs in no readable line (a failed or cancelled batch, a skipped line)
    unreadable: int = 0  # lines skipped: not UTF-8, not JSON, nested too deeply, too long
    unknown: int = 0  # lines whose custom_id was not submitted
    duplicates: int = 0  # lines of a pair that already had its line (not used, not billed)


class SkippedLine(BaseModel):
    """A result line collect could not read (the first MAX_SKIPPED are kept)."""

    model_config = ConfigDict(extra="forbid")
    file: str  # relative to the folder
    line: int
    why: str


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
    skipped: list[SkippedLine] = Field(default_factory=list)  # unreadable result lines
    collected_at: str | None = None  # when collect last wrote the run folder

    def input_paths(self) -> list[Path]:
        """The input paths as given at submit (relative ones: to `cwd`, see `in_submit_dir`)."""
        return [Path(p) for p in self.inputs]

    @contextlib.contextmanager
    def in_submit_dir(self) -> Iterator[None]:
        """Work from the folder submit ran in, so that the inputs are read, and recorded as
        sources, exactly as `digest run` from there records them (whatever the current
        directory); every other path collect uses is absolute."""
        here = Path.cwd()
        try:
            os.chdir(self.cwd)
        except OSError as exc:
            if any(not Path(p).is_absolute() for p in self.inputs):
                raise InputError(
                    f"the inputs were given relative to {self.cwd}, which cannot be entered "
                    f"({exc.strerror or exc}); restore it to collect"
                ) from None
            yield  # absolute inputs only: read from anywhere
            return
        try:
            yield
        finally:
            os.chdir(here)


def update_part(part: BatchPart, batch: ServerBatch) -> None:
    """Take a batch's status, counts, file ids and errors as the API returned them (checked)."""
    part.status = batch.status
    counts = batch.request_counts
    if counts is not None:
        part.request_counts = RequestCounts(
            total=counts.total, completed=counts.completed, failed=counts.failed
        )
    part.output_file_id = batch.output_file_id
    part.error_file_id = batch.error_file_id
    errors = batch.errors.data if batch.errors is not None else []
    part.errors = [e.describe() for e in errors][:20]


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


def settings_of(
    state: BatchState, overrides: dict[str, Any], env: dict[str, str] | None = None
) -> Settings:
    """The settings stored at submit, with the API key from the environment and `overrides`
    (flags that change no cache key, and `base_url` to add URL credentials). Nothing else:
    the current directory's config.yaml and the other environment variables play no part."""
    env = dict(os.environ) if env is None else env
    data = {**state.settings, **{k: v for k, v in overrides.items() if v is not None}}
    if env.get(ENV_API_KEY):
        data["api_key"] = env[ENV_API_KEY]
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "settings"
        raise ConfigError(f"the settings stored in {STATE}: {where}: {first['msg']}") from None
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
    write_text(folder / STATE, state.model_dump_json(indent=2) + "\n", durable=True)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the folder's lock, so two commands never change one batch folder at once."""
    busy = InputError(f"another digest command is working on {folder}; wait for it to end")
    with folderlock.locked(folder / LOCK, busy):
        yield
