"""An exclusive lock on a folder, so two commands never write one folder at once.

The lock is `fcntl.flock` on a lock file in the folder: the kernel releases it when the
holding process ends, however it ends, so a killed command never leaves a stale lock. The
lock file is opened with `O_NOFOLLOW` (a link planted under its name is refused, not
followed and created elsewhere). Whoever releases the lock may remove the lock file; a
process that locked the removed file meanwhile sees it is no longer the file at that name
and takes the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from pipeline.errors import PipelineError, StorageError

_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)


class FolderLock:
    """A held lock on one lock file (`acquire`), until `release`."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, path: Path, busy: PipelineError) -> FolderLock:
        """Lock the file `path` (created when missing) without waiting; raise `busy` when
        another process, or another open of it in this one, holds it."""
        while True:
            try:
                fd = os.open(path, _FLAGS, 0o644)
            except OSError as exc:
                raise StorageError.from_os_error(path, exc) from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise busy from None
            except OSError as exc:
                os.close(fd)
                raise StorageError.from_os_error(path, exc) from exc
            try:
                current = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(os.fstat(fd), current):
                return cls(path, fd)
            os.close(fd)  # the holder removed that file as it let go: lock the new one

    @property
    def held(self) -> bool:
        """True until released."""
        return self._fd is not None

    def release(self, *, remove: bool = False) -> None:
        """Let go of the lock, removing the lock file first when `remove`."""
        if self._fd is None:
            return
        if remove:
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self._fd)
        self._fd = None


@contextlib.contextmanager
def locked(path: Path, busy: PipelineError) -> Iterator[FolderLock]:
    """Hold the lock on the file `path` for the block (`FolderLock.acquire`)."""
    lock = FolderLock.acquire(path, busy)
    try:
        yield lock
    finally:
        lock.release()
