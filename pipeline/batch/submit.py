"""`digest batch submit`: write the request files of every uncached pair, upload them and
create one batch per file, recording each step in batch.json as soon as it is done.

A submit that stops half-way (crash, Ctrl-C, a refused upload) is resumed by running the
same command again: a recorded upload is not repeated (one whose answer a crash lost is,
leaving an unused file behind), and a batch whose create answer was lost is found by its
input file id before another is created, so no request is ever submitted twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.backends import check_openai_settings
from pipeline.batch import MAX_BYTES, MAX_REQUESTS
from pipeline.batch.api import BatchAPI
from pipeline.batch.requests import Pairs, PartWriter, request_lines
from pipeline.batch.state import (
    LATEST_BATCH,
    LOCK,
    REQUESTS_DIR,
    STATE,
    BatchPart,
    BatchState,
    load_state,
    locked,
    now,
    save_state,
    stored_settings,
    update_part,
)
from pipeline.config import Settings
from pipeline.context import RunContext
from pipeline.errors import ConfigError, InputError, StorageError
from pipeline.ingest import read_inputs
from pipeline.job import claimed_run_dir

# Stored settings that shape the requests: a submit with the same ones (and inputs) resumes.
_SHAPING = ("model", "temperature", "max_tokens", "response_format", "stages", "prompts_dir")


@dataclass
class Limits:
    """Where request files are split (the Batch API's limits by default)."""

    max_requests: int = MAX_REQUESTS
    max_bytes: int = MAX_BYTES


@dataclass
class SubmitResult:
    """What a submit did: its folder (None when nothing was written), the pairs and parts."""

    folder: Path | None
    pairs: Pairs
    parts: list[BatchPart]
    resumed: bool = False  # an earlier submit of the same inputs was carried on
    created: int = 0  # batches created by this command
    uploaded: int = 0  # files uploaded by this command
    found: int = 0  # batches created before an interruption lost their ids, found again
    dry_run: bool = False


def submit(
    settings: Settings,
    paths: list[Path],
    *,
    follow_symlinks: bool = False,
    limits: Limits | None = None,
    dry_run: bool = False,
    on_folder: Callable[[Path], object] | None = None,
) -> SubmitResult:
    """Submit the uncached pairs of `paths` (or resume the unfinished submit of the same);
    `on_folder` hears of the batch folder as soon as its batch.json exists."""
    if settings.resolved_provider != "openai":
        raise ConfigError(
            "batch mode needs the openai provider: set OPENAI_API_KEY (and --base-url for "
            "another endpoint), or --provider openai"
        )
    check_openai_settings(settings)  # no key for api.openai.com: before any folder or link
    limits = limits or Limits()
    previous = _resumable(settings, paths, follow_symlinks)
    if previous is not None:
        state = load_state(previous)
        pairs = Pairs(state.abstracts, state.pairs, state.cached)
        if dry_run:
            return SubmitResult(previous, pairs, state.parts, resumed=True, dry_run=True)
        if on_folder is not None:
            on_folder(previous)
        return _send(previous, settings, pairs, resumed=True)
    if dry_run:
        return _submit_new(None, settings, paths, follow_symlinks, limits, on_folder)
    with claimed_run_dir(settings, prefix="batch") as folder:  # removed again while empty
        return _submit_new(folder, settings, paths, follow_symlinks, limits, on_folder)


def _submit_new(
    folder: Path | None,
    settings: Settings,
    paths: list[Path],
    follow_symlinks: bool,
    limits: Limits,
    on_folder: Callable[[Path], object] | None,
) -> SubmitResult:
    """Write the request files of a new submit into `folder` (None: a dry run) and send them."""
    dry_run = folder is None
    if folder is not None:
        _check_empty(folder)
    ingest = read_inputs(paths, stream=True, follow_symlinks=follow_symlinks, out_dir=folder)
    pairs = Pairs()
    writer = PartWriter(folder, max_requests=limits.max_requests, max_bytes=limits.max_bytes)
    with RunContext(settings, cache="read") as context:
        for model, custom_id, data in request_lines(context, ingest.abstracts, pairs):
            writer.add(model, custom_id, data)
        prompts = {name: stage.prompt_hash for name, stage in context.stages.items()}
    parts = writer.close()
    if folder is None or not parts:
        return SubmitResult(None, pairs, parts, dry_run=dry_run)
    state = BatchState(
        created_at=now(),
        cwd=str(Path.cwd().resolve()),
        inputs=[str(p) for p in paths],
        follow_symlinks=follow_symlinks,
        settings=stored_settings(settings),
        endpoint=settings.endpoint or "",
        model=settings.model,
        prompts=prompts,
        abstracts=pairs.abstracts,
        pairs=pairs.pairs,
        cached=pairs.cached,
        parts=parts,
    )
    save_state(folder, state)
    if on_folder is not None:
        on_folder(folder)
    return _send(folder, settings, pairs, resumed=False)


def _resumable(settings: Settings, paths: list[Path], follow_symlinks: bool) -> Path | None:
    """The folder of an earlier, not yet collected submit of the same inputs and settings:
    `--out` if it holds one, else the newest such folder under the outputs folder."""
    if settings.out_dir is not None:
        folder = settings.out_dir
        if not (folder / STATE).exists():
            return None
        state = load_state(folder)
        same = _same(state, settings, paths, follow_symlinks)
        if same and state.collected_at is None:
            return folder
        what = "was collected already" if same else "holds a submit of other inputs or settings"
        raise InputError(f"{folder} {what}; choose another --out")
    try:
        found = sorted(settings.outputs_root.glob(f"*/{STATE}"), reverse=True)
    except OSError:
        return None
    for path in found:
        if path.parent.name == LATEST_BATCH:
            continue
        try:
            state = load_state(path.parent)
        except InputError:
            continue  # an unreadable folder is no submit of these inputs
        if state.collected_at is None and _same(state, settings, paths, follow_symlinks):
            return path.parent
    return None


def _same(state: BatchState, settings: Settings, paths: list[Path], follow: bool) -> bool:
    """True when `state` is a submit of these inputs with these request-shaping settings."""
    wanted = stored_settings(settings)
    return (
        state.inputs == [str(p) for p in paths]
        and state.cwd == str(Path.cwd().resolve())
        and state.follow_symlinks == follow
        and state.endpoint == settings.endpoint
        and all(state.settings.get(k) == wanted.get(k) for k in _SHAPING)
        and state.settings.get("cache_dir") == wanted.get("cache_dir")
    )


def _check_empty(folder: Path) -> None:
    """A new batch folder may only hold what an interrupted submit left (before batch.json)."""
    try:
        names = {p.name for p in folder.iterdir()} if folder.exists() else set()
    except OSError as exc:
        raise StorageError.from_os_error(folder, exc) from exc
    if names - {REQUESTS_DIR, LOCK}:
        raise InputError(f"{folder} is not empty and is not a batch folder; choose another --out")


def _send(folder: Path, settings: Settings, pairs: Pairs, *, resumed: bool) -> SubmitResult:
    """Upload every part not yet uploaded and create every batch not yet created."""
    result = SubmitResult(folder, pairs, [], resumed=resumed)
    with locked(folder):
        state = load_state(folder)  # again, under the lock
        result.parts = state.parts
        api = BatchAPI(settings)
        try:
            for part in state.parts:
                fresh = False
                if part.file_id is None:
                    _check_unchanged(folder, part)
                    part.file_id = api.upload(folder / part.file)
                    result.uploaded += 1
                    fresh = True
                    save_state(folder, state)
                if part.batch_id is None:
                    found = None if fresh else api.find(part.file_id)
                    batch = found or api.create(part.file_id, {"digest_part": part.file})
                    result.created += found is None
                    result.found += found is not None
                    part.batch_id = batch.id
                    update_part(part, batch)
                    save_state(folder, state)
        finally:
            api.close()
    return result


def _check_unchanged(folder: Path, part: BatchPart) -> None:
    """A request file is uploaded only as it was written (its sha256 in batch.json)."""
    path = folder / part.file
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise StorageError.from_os_error(path, exc) from exc
    if digest.hexdigest() != part.sha256:
        raise StorageError(
            f"{path} changed since it was written (sha256 differs from batch.json); "
            "start a new submit"
        )
