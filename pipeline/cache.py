"""Append-only JSONL cache of validated stage outputs, shared by all runs, indexed by key.

One file per stage (`<cache_dir>/<stage>.jsonl`). Each line starts with `{"key":"<64 hex>"`
so the index is built without parsing JSON; only offsets are kept in memory, so a cache of
millions of records costs a few dozen MB. Each record is written whole (os.write repeated
until every byte is out) on an O_APPEND descriptor under an exclusive lock, so concurrent
runs cannot interleave lines and a SIGKILL loses at most the line being written (skipped
with a warning on the next load); a write that fails (disk full) is cut off again and stops
the run with a StorageError. A cache file is never opened through a symlink: a link planted
under its name is a StorageError, not a write to wherever it points.

A line is trusted for nothing it cannot show. Only validated records are put, and each line
ends with a seal, `"seal":"<32 hex>"`: sha256 of the validating code's digest
(`pipeline.stages.validator_id`) and the line's bytes before the seal. A line whose seal
holds was written, byte for byte, by this very validation code for this very key (the key
covers the abstract), so validating it again would give the same verdict; the runner then
only parses it. Every other line (edited by hand, written by another version or tool, or
with no seal) is re-validated in full before it is served (pipeline/engine/stage_runner.py).
The seal guards against accidents and stale code, not against someone forging seals in the
cache folder: whoever can write there can also edit the code.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import IO, Any

from pipeline.errors import StorageError
from pipeline.jsonl import compact_json
from pipeline.repair import replace_surrogates

log = logging.getLogger(__name__)

_PREFIX = b'{"key":"'
_KEY_LEN = 64
_SLOT_LEN = 16  # hex digits of a key the index keeps (64 bits)
_SEAL_START = b',"seal":"'
_SEAL_LEN = 32
_SEAL_SUFFIX_LEN = len(_SEAL_START) + _SEAL_LEN + len(b'"}\n')
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# Never through a link planted under a cache file's name: it is refused (StorageError), so a
# record is never appended to, nor read from, a file elsewhere.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | _NOFOLLOW
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW


def cache_key(*, abstract_text: str, **settings: Any) -> str:
    """sha256 of canonical JSON of everything that determines a stage's output (`settings`:
    the keyword arguments of `key_prefix`).

    The canonical JSON is `{"backend":..,"model":..,"params":..,"prompt":..,"schema":..,
    "stage":..,"text":"<sha256 of the text>"}` (sorted keys, compact). Every stage of an
    abstract hashes the same text and shares everything but `stage`, so the text digest and
    the part before `"text"` are memoized; the key is the same as hashing the whole payload.
    """
    return key_from_prefix(key_prefix(**settings), abstract_text)


def key_prefix(
    *,
    stage: str,
    prompt_hash: str,
    schema_version: int,
    backend: str,
    model: str,
    params: dict[str, Any],
) -> str:
    """The part of `cache_key`'s canonical JSON before the text digest (the same for every
    abstract of a stage under one set of settings)."""
    if all(type(v) in _SCALARS for v in params.values()):
        # Types are part of the memo key: 0 == 0.0 == False, but their JSON differs.
        frozen = tuple((k, type(v), v) for k, v in params.items())
        return _key_prefix(stage, prompt_hash, schema_version, backend, model, frozen)
    return _payload_prefix(stage, prompt_hash, schema_version, backend, model, params)


def key_from_prefix(prefix: str, abstract_text: str) -> str:
    """`cache_key` of one abstract from its stage's `key_prefix`."""
    blob = f'{prefix}{_text_digest(abstract_text)}"}}'
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _payload_prefix(
    stage: str, prompt_hash: str, schema_version: int, backend: str, model: str, params: dict
) -> str:
    # "text" sorts after every other key, so the canonical JSON ends with the text digest.
    payload = {
        "stage": stage,
        "prompt": prompt_hash,
        "schema": schema_version,
        "backend": backend,
        "model": model,
        "params": params,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return blob[:-1] + ',"text":"'


_SCALARS = frozenset({str, int, float, bool, type(None)})


@functools.lru_cache(maxsize=256, typed=True)
def _key_prefix(
    stage: str, prompt_hash: str, schema_version: int, backend: str, model: str, params: tuple
) -> str:
    plain = {k: v for k, _type, v in params}
    return _payload_prefix(stage, prompt_hash, schema_version, backend, model, plain)


@functools.lru_cache(maxsize=1024)
def _text_digest(text: str) -> str:
    # The stages of one abstract are keyed back to back: the text is hashed once, not per stage.
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _slot(key: str) -> int:
    return int(key[:_SLOT_LEN], 16)


class StageCache:
    """The cache file of one stage: offset index in memory, records read on demand."""

    def __init__(self, path: Path, seal_id: str | None = None, *, read_only: bool = False) -> None:
        self.path = path
        self._seal_id = seal_id.encode("ascii") if seal_id else None
        # Read-only (a dry run, a batch submit): a missing file is an empty cache, not created.
        self.read_only = read_only
        self._fd: int | None = None
        self._reader: IO[bytes] | None = None
        try:
            if not read_only:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(path, _APPEND_FLAGS, 0o644)
            if not read_only or path.exists():
                # Lives as long as the cache.
                self._reader = os.fdopen(os.open(path, _READ_FLAGS), "rb")
        except OSError as exc:
            if self._fd is not None:
                os.close(self._fd)
            raise StorageError.from_os_error(f"the cache {path}", exc) from exc
        # The first 64 bits of each key -> the offset of its line: an int costs a quarter of
        # the 64-character key. A lookup reads the line and checks its whole key, so two keys
        # sharing their first 64 bits (expected pairs n^2 / 2^65: 3e-8 at a million records)
        # cost one recomputation, never a wrong answer.
        self.index: dict[int, int] = {}
        self.torn_lines = 0
        self._load()

    def _load(self) -> None:
        offset = 0
        last_line_complete = True
        for line in self._reader or ():
            complete = line.endswith(b"\n")
            # A record ends with "}\n"; a line torn by a kill (then newline-terminated) does not.
            if (
                line.startswith(_PREFIX)
                and line.endswith(b"}\n")
                and len(line) > len(_PREFIX) + _KEY_LEN
            ):
                try:
                    slot = int(line[len(_PREFIX) : len(_PREFIX) + _SLOT_LEN], 16)
                except ValueError:
                    slot = None
            else:
                slot = None
            if slot is not None:
                self.index[slot] = offset
            elif line.strip():
                self.torn_lines += 1
                log.warning("%s: skipped a torn or foreign line at byte %d", self.path, offset)
            offset += len(line)
            last_line_complete = complete
        if not last_line_complete and self._fd is not None:
            # Terminate the torn tail so the next append starts on a fresh line.
            with _locked(self._fd):
                self._append(b"\n")

    def __contains__(self, key: str) -> bool:
        return _slot(key) in self.index

    def __len__(self) -> int:
        return len(self.index)

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached record for `key`, or None (a record that fails to parse counts as absent)."""
        return self.lookup(key)[0]

    def lookup(self, key: str) -> tuple[dict[str, Any] | None, bool]:
        """The cached record for `key` (or None) and whether its seal holds (module docstring)."""
        line, sealed = self.lookup_line(key)
        if line is None:
            return None, False
        record = self.parse(key, line)
        return record, sealed and record is not None

    def lookup_line(self, key: str) -> tuple[bytes | None, bool]:
        """The cached line for `key` as written (or None) and whether its seal holds."""
        offset = self.index.get(_slot(key))
        if offset is None or self._reader is None:
            return None, False
        self._reader.seek(offset)
        line = self._reader.readline()
        if line[len(_PREFIX) : len(_PREFIX) + _KEY_LEN] != key.encode("ascii"):
            return None, False  # another key with the same first 64 bits (see __init__)
        return line, self._sealed(line, key)

    def parse(self, key: str, line: bytes) -> dict[str, Any] | None:
        """The record of a line of `key`, without its seal; None (and `key` forgotten) when
        it is no JSON object."""
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # bad JSON or UTF-8, a 5000-digit number, ...
            record = None
        if _SURROGATE_ESCAPE.search(line) and replace_surrogates(record)[1]:
            record = None  # a lone surrogate (no writer of this cache puts one) crashes writers
        if not isinstance(record, dict):
            log.warning("%s: unreadable record for key %s; recomputing", self.path, key[:16])
            self.discard(key)
            return None
        record.pop("seal", None)
        return record

    def _sealed(self, line: bytes, key: str) -> bool:
        if self._seal_id is None or len(line) < _SEAL_SUFFIX_LEN:
            return False
        tail = line[-_SEAL_SUFFIX_LEN:]
        if not tail.startswith(_SEAL_START):
            return False
        body = line[:-_SEAL_SUFFIX_LEN] + b"}"
        seal = tail[len(_SEAL_START) : len(_SEAL_START) + _SEAL_LEN]
        return seal == self._seal(body)

    def _seal(self, body: bytes) -> bytes:
        assert self._seal_id is not None
        return hashlib.sha256(self._seal_id + b"\n" + body).hexdigest()[:_SEAL_LEN].encode()

    def discard(self, key: str) -> None:
        """Forget a bad record: later lookups of `key` miss until a new record is put."""
        self.index.pop(_slot(key), None)

    def put(self, key: str, record: dict[str, Any], *, index: bool = True) -> None:
        """Append one validated record (flushed to the OS immediately) and index it (unless
        `index` is False: a record this process will not look up); sealed when the cache has
        a seal id (see the module docstring).

        A failed write (disk full, ...) is cut off the file again, so no torn line is left
        behind, and raised as a StorageError naming the cache file.
        """
        if self._fd is None:
            raise StorageError(f"the cache {self.path} is open read-only")
        line = _PREFIX + key.encode("ascii") + b'",' + compact_json(record)[1:]
        if self._seal_id is not None:
            line = line[:-1] + _SEAL_START + self._seal(line) + b'"}'
        line += b"\n"
        with _locked(self._fd):
            offset = os.lseek(self._fd, 0, os.SEEK_END)
            self._append(line, offset)
        if index:
            self.index[_slot(key)] = offset

    def _append(self, data: bytes, offset: int | None = None) -> None:
        """os.write until every byte is written (a write may be short); under the lock."""
        assert self._fd is not None
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[written:]
        except OSError as exc:
            if offset is not None:
                try:  # drop any partial line; the lock keeps other writers out meanwhile
                    os.ftruncate(self._fd, offset)
                except OSError:
                    log.warning("%s: a torn line is left at byte %d", self.path, offset)
            raise StorageError.from_os_error(f"the cache {self.path}", exc) from exc

    def close(self) -> None:
        """Release the file handles and the index."""
        self.index = {}  # its memory serves what the run does after the cache (the report)
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _locked:
    """Exclusive advisory lock around one append, so concurrent runs never interleave lines."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)


class Cache:
    """All stage caches under one directory."""

    def __init__(
        self,
        cache_dir: Path,
        stages: tuple[str, ...],
        seal_id: str | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        self.dir = cache_dir
        self.stages = {
            name: StageCache(cache_dir / f"{name}.jsonl", seal_id, read_only=read_only)
            for name in stages
        }

    def close(self) -> None:
        """Close every stage file."""
        for stage_cache in self.stages.values():
            stage_cache.close()
