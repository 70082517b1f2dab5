"""Whole-file writes that never follow a planted symlink and never leave half a file.

A file is written to `.<name>.<pid>.tmp` beside its target, created exclusively with
`O_NOFOLLOW` (a link planted under the temp name is refused, not followed), then renamed
over the target: `rename` replaces a symlink at the target path instead of writing through
it, and a reader sees the old file or the new one, never a mix. On any failure (disk full,
read-only folder, an exception in the caller) the temp file is removed and the target is
untouched; the OSError becomes a StorageError naming the target.

A file written as a stream over a whole run goes through `open_temp` (the same temp file,
renamed by its writer when complete) or `open_fresh` (a new file renamed into place at once,
then written line by line): either way a link planted at the target is replaced, never
written through.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pipeline.errors import StorageError

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def temp_name(path: Path) -> Path:
    """The temp file a write of `path` goes through (one per process)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def open_temp(
    path: Path, *, binary: bool = False, encoding: str = "utf-8", newline: str | None = ""
) -> IO:
    """A new, empty `temp_name(path)` open for writing, never through a link; the caller
    renames it over `path` or removes it (StorageError naming `path` when it cannot be made)."""
    path = Path(path)
    tmp = temp_name(path)
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # a leftover of this pid, or a planted link: removed, never followed
        fd = os.open(tmp, _FLAGS, 0o644)
    except OSError as exc:
        raise StorageError.from_os_error(path, exc) from exc
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding=encoding, newline=newline)


def open_fresh(
    path: Path, *, binary: bool = False, encoding: str = "utf-8", newline: str | None = ""
) -> IO:
    """`path` replaced at once by a new, empty file open for writing (a file streamed line by
    line): whatever was at `path`, a planted link included, is replaced, never written to."""
    path = Path(path)
    fh = open_temp(path, binary=binary, encoding=encoding, newline=newline)
    try:
        os.replace(temp_name(path), path)
    except OSError as exc:
        fh.close()
        with contextlib.suppress(OSError):
            temp_name(path).unlink()
        raise StorageError.from_os_error(path, exc) from exc
    return fh


@contextlib.contextmanager
def atomic_open(path: Path, *, binary: bool = False, durable: bool = False) -> Iterator[IO]:
    """Open a temp file for writing; on a clean exit it replaces `path` (fsynced if durable)."""
    path = Path(path)
    tmp = temp_name(path)
    fh = open_temp(path, binary=binary)
    try:
        with fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise StorageError.from_os_error(path, exc) from exc
        raise


def write_text(path: Path, text: str, *, durable: bool = False) -> Path:
    """Write `text` (UTF-8) to `path` atomically; returns the path."""
    with atomic_open(path, durable=durable) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: Path, data: bytes, *, durable: bool = False) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    with atomic_open(path, binary=True, durable=durable) as fh:
        fh.write(data)
    return Path(path)


def make_parent(path: Path) -> Path:
    """Create the folder `path` is to be written in, if missing (StorageError naming it)."""
    parent = Path(path).parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError.from_os_error(parent, exc) from exc
    return Path(path)
