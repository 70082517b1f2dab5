"""The one writer of a run folder: summaries.jsonl, errors.jsonl, summaries.csv (streamed, a
line per record, flushed) and manifest.json (atomic, at the start and at the end)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from pipeline.csvfile import SafeCsvWriter
from pipeline.errors import StorageError
from pipeline.jsonl import JsonlWriter
from pipeline.rundir.models import ErrorRecord, Manifest, SummaryRecord
from pipeline.stages import StageSpec, specs

SUMMARIES = "summaries.jsonl"
ERRORS = "errors.jsonl"
CSV = "summaries.csv"
MANIFEST = "manifest.json"
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

    A failed write (disk full, permissions) is a StorageError naming the file.
    """

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self._specs = specs()
        self._files: list[IO[Any]] = []
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            remove_stale_tmp(run_dir, MANIFEST)
            summaries = self._open_binary(SUMMARIES)
            errors = self._open_binary(ERRORS)
            # utf-8-sig so spreadsheet programs detect the encoding of non-ASCII text.
            self._csv_file = self._open(CSV, "utf-8-sig", newline="")
            self._summaries = JsonlWriter(summaries)
            self._errors = JsonlWriter(errors)
            self._csv = SafeCsvWriter(self._csv_file)
            self._csv.writerow(csv_columns(self._specs))
        except OSError as exc:
            self._close_quietly()
            raise StorageError.from_os_error(Path(exc.filename or run_dir), exc) from exc
        self._rows = 0

    def _open(self, name: str, encoding: str, newline: str | None = None) -> IO[str]:
        fh = open(self.dir / name, "w", encoding=encoding, newline=newline)  # noqa: SIM115
        self._files.append(fh)
        return fh

    def _open_binary(self, name: str) -> IO[bytes]:
        fh = open(self.dir / name, "wb")  # noqa: SIM115
        self._files.append(fh)
        return fh

    def write_record(self, record: SummaryRecord) -> bytes:
        """Append one summary record (and its CSV row); returns its summaries.jsonl line."""
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
        if error.raw is not None and len(error.raw) > MAX_RAW_CHARS:
            error = error.model_copy(update={"raw": error.raw[:MAX_RAW_CHARS] + "…[truncated]"})
        with self._failing(ERRORS):
            self._errors.write(error)

    def write_manifest(self, manifest: Manifest) -> Path:
        """Write manifest.json atomically (a reader never sees half of it)."""
        path = self.dir / MANIFEST
        tmp = path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
        try:
            tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StorageError.from_os_error(path, exc) from exc
        return path

    def close(self) -> None:
        """Close every file (all of them, even when one fails to flush)."""
        try:
            for fh in self._files:
                with self._failing(Path(fh.name).name):
                    fh.close()
        finally:
            self._close_quietly()

    def _close_quietly(self) -> None:
        for fh in self._files:
            with contextlib.suppress(OSError):
                fh.close()

    @contextlib.contextmanager
    def _failing(self, name: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise StorageError.from_os_error(self.dir / name, exc) from exc
