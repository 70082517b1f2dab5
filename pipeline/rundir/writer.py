"""The one writer of a run folder: summaries.jsonl, errors.jsonl, summaries.csv (streamed, a
line per record, flushed) and manifest.json (atomic, at the start and at the end).

A run holds an exclusive lock on its folder while it writes it (`LOCK`, pipeline/folderlock.py),
so a second run with the same `--out` is refused instead of interleaving its lines. Every
file is made new (pipeline/atomicfile.py): a link planted under a file's name is replaced,
never written through. The files are made at the run's first record or failure record: a
run that ends before either (the endpoint refused it at the start) writes no run folder.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from pipeline.atomicfile import open_fresh, write_text
from pipeline.csvfile import SafeCsvWriter
from pipeline.errors import StorageError
from pipeline.folderlock import FolderLock
from pipeline.jsonl import JsonlWriter
from pipeline.rundir.models import COMPLETE_STATUSES, ErrorRecord, Manifest, SummaryRecord
from pipeline.stages import StageSpec, specs

SUMMARIES = "summaries.jsonl"
ERRORS = "errors.jsonl"
CSV = "summaries.csv"
MANIFEST = "manifest.json"
LOCK = ".digest-run.lock"  # exists while a run writes the folder
MAX_RAW_CHARS = 20_000
CSV_FLUSH_EVERY = 64  # summaries.jsonl is flushed per record; its CSV view may lag a little


def csv_columns(stage_specs: tuple[StageSpec, ...]) -> list[str]:
    """summaries.csv header: identity, each stage's own columns, then each stage's status.

    The user's id (`paper_id`, from the input) and title lead; `id` is the content hash.
    """
    columns = ["paper_id", "number", "title", "id", "sources"]
    for spec in stage_specs:
        columns.extend(spec.csv_columns)
    columns.extend(f"{spec.name}_status" for spec in stage_specs)
    return columns


def csv_row(record: SummaryRecord, stage_specs: tuple[StageSpec, ...]) -> list[Any]:
    """A flat, spreadsheet-friendly view of one summary record (cells in `csv_columns` order)."""
    ids = list(dict.fromkeys(s.paper_id for s in record.sources if s.paper_id))
    row: list[Any] = [
        ids,
        next((s.number for s in record.sources if s.number), ""),
        record.title or "",
        record.id,
        "; ".join(f"{s.file}#{s.position}" for s in record.sources),
    ]
    for spec in stage_specs:
        values = spec.csv(record.output(spec.name))
        row.extend(values.get(column, "") for column in spec.csv_columns)
    for spec in stage_specs:
        result = record.stages.get(spec.name)
        row.append(result.status if result is not None else "skipped")
    return row


def ensure_writable_dir(path: Path, what: str) -> None:
    """Raise StorageError (naming `path`) unless `path` is, or can be made, a writable folder.

    The test is a real write: a probe file is created and removed in the folder, or in its
    nearest existing parent when the folder is still to be made (permission bits do not
    tell for root, read-only mounts or ACLs). No folder is created, so a refused run leaves
    nothing half-made behind.
    """
    probe = path
    while not probe.exists() and probe != probe.parent:
        if probe.is_symlink():  # a dangling symlink: mkdir would fail on it
            raise StorageError(f"{what} {path}: {probe} is a broken symlink")
        probe = probe.parent
    if not probe.is_dir():
        where = "" if probe == path else f" ({probe} is not a folder)"
        raise StorageError(f"{what} {path} is not a folder{where}")
    try:
        fd, name = tempfile.mkstemp(prefix=".digest-write-test-", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        where = "" if probe == path else f" (cannot create it in {probe})"
        raise StorageError(f"{what} {path} is not writable{where}: {exc.strerror or exc}") from exc


def remove_stale_tmp(folder: Path, name: str) -> None:
    """Delete `.<name>.<pid>.tmp` files in `folder` left by processes that no longer run."""
    try:
        leftovers = list(folder.glob(f".{name}.*.tmp"))
    except OSError:
        return
    for tmp in leftovers:
        pid = tmp.name[len(name) + 2 : -len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


class RunWriter:
    """Streams records into the run folder as they finish; every line flushed.

    The folder (made when missing) is locked from here to `close`; another writer of it is
    refused with a StorageError naming it. The files are made at the first record or failure
    record, by the last manifest of a run that completed, or by `make_files` (`written`);
    `on_folder` is then called with the folder. A writer closed before that leaves the
    folder as it found it (removed again when it made it). A failed write (disk full,
    permissions) is a StorageError naming the file.
    """

    def __init__(self, run_dir: Path, *, on_folder: Callable[[Path], object] | None = None) -> None:
        self.dir = run_dir
        self.written = False
        self._specs = specs()
        self._files: list[tuple[str, IO[Any]]] = []  # (name, file)
        self._rows = 0
        self._on_folder = on_folder
        self._pending: Manifest | None = None  # the start's manifest, until the files are made
        try:
            run_dir.mkdir(parents=True)
            self._made = True
        except FileExistsError:
            self._made = False
        except OSError as exc:
            raise StorageError.from_os_error(run_dir, exc) from exc
        busy = StorageError(
            f"another digest run is writing {run_dir}; wait for it to end, or choose another --out"
        )
        try:
            self._lock = FolderLock.acquire(run_dir / LOCK, busy)
        except BaseException:
            self._remove_if_made()
            raise
        for name in (SUMMARIES, ERRORS, CSV, MANIFEST):  # what writers killed here left
            remove_stale_tmp(run_dir, name)

    def make_files(self) -> None:
        """Make the folder's files now (once): the streams, the CSV header, the start's
        manifest; from here the run has a folder (`written`)."""
        if self.written:
            return
        self.written = True
        try:
            summaries = self._open_fresh(SUMMARIES, binary=True)
            errors = self._open_fresh(ERRORS, binary=True)
            # utf-8-sig so spreadsheet programs detect the encoding of non-ASCII text.
            self._csv_file = self._open_fresh(CSV, encoding="utf-8-sig")
            self._summaries = JsonlWriter(summaries)
            self._errors = JsonlWriter(errors)
            self._csv = SafeCsvWriter(self._csv_file)
            self._csv.writerow(csv_columns(self._specs))
        except OSError as exc:
            self._close_quietly()
            raise StorageError.from_os_error(Path(exc.filename or self.dir), exc) from exc
        if self._pending is not None:
            self.write_manifest(self._pending)
        if self._on_folder is not None:
            self._on_folder(self.dir)

    def _open_fresh(self, name: str, *, binary: bool = False, encoding: str = "utf-8") -> IO:
        fh = open_fresh(self.dir / name, binary=binary, encoding=encoding)
        self._files.append((name, fh))
        return fh

    def write_record(self, record: SummaryRecord) -> bytes:
        """Append one summary record (and its CSV row); returns its summaries.jsonl line."""
        self.make_files()
        with self._failing(SUMMARIES):
            line = self._summaries.write(record)
        with self._failing(CSV):
            self._csv.writerow(csv_row(record, self._specs))
            self._rows += 1
            if self._rows % CSV_FLUSH_EVERY == 0:
                self._csv_file.flush()
        return line

    def write_error(self, error: ErrorRecord) -> None:
        """Append one failure record (its raw answer cut at MAX_RAW_CHARS)."""
        self.make_files()
        if error.raw is not None and len(error.raw) > MAX_RAW_CHARS:
            error = error.model_copy(update={"raw": error.raw[:MAX_RAW_CHARS] + "…[truncated]"})
        with self._failing(ERRORS):
            self._errors.write(error)

    def write_manifest(self, manifest: Manifest) -> Path | None:
        """Write manifest.json atomically (a reader never sees half of it); None while the
        folder has no files and the run is not complete (the manifest waits for them)."""
        if not self.written:
            if manifest.status not in COMPLETE_STATUSES:
                self._pending = manifest
                return None
            self.make_files()  # a complete run keeps its folder, records or not
        return write_text(self.dir / MANIFEST, manifest.model_dump_json(indent=2) + "\n")

    def close(self) -> None:
        """Close every file (all of them, even when one fails to flush) and release the folder
        (removed again when this writer made it and wrote nothing)."""
        try:
            for name, fh in self._files:
                with self._failing(name):
                    fh.close()
        finally:
            self._close_quietly()
            self._lock.release(remove=True)
            if not self.written:
                self._remove_if_made()

    def _remove_if_made(self) -> None:
        if self._made:
            with contextlib.suppress(OSError):
                self.dir.rmdir()  # only while empty: nothing of anyone else's goes

    def _close_quietly(self) -> None:
        for _, fh in self._files:
            with contextlib.suppress(OSError):
                fh.close()

    @contextlib.contextmanager
    def _failing(self, name: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise StorageError.from_os_error(self.dir / name, exc) from exc
