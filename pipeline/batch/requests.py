"""The request files of `digest batch submit`: one Batch API line per uncached (abstract,
stage) pair, `custom_id` = the pair's cache key and `body` = exactly the body the synchronous
backend sends, split into parts of one model each, at most `max_requests` lines and
`max_bytes` bytes per file (the API's limits: 50,000 requests, 200 MB).

No stage's prompt reads another stage's output (a prompt is the stage's template, its
fields from the taxonomy and the abstract), so every pair is submitted in one round.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pipeline.backends.openai_backend import request_body
from pipeline.batch import ENDPOINT
from pipeline.batch.state import KEYS_FILE, REQUESTS_DIR, BatchPart
from pipeline.context import RunContext
from pipeline.errors import InputError, StorageError
from pipeline.ingest import Abstract


@dataclass
class Pairs:
    """The (abstract, stage) pairs of the inputs: how many, and how many were cached."""

    abstracts: int = 0
    pairs: int = 0
    cached: int = 0


def request_lines(
    context: RunContext, abstracts: Iterable[Abstract], pairs: Pairs
) -> Iterator[tuple[str, str, bytes]]:
    """(model, custom_id, JSONL line) of every uncached pair, abstract by abstract;
    counts the pairs (and the cached ones) into `pairs` as it goes."""
    settings = context.settings
    json_object = settings.response_format == "json_object"
    for abstract in abstracts:
        pairs.abstracts += 1
        for stage in context.stages.values():
            pairs.pairs += 1
            key = context.key(stage, abstract)
            if context.cached(stage, abstract, key) is not None:
                pairs.cached += 1
                continue
            messages = stage.messages(abstract.text, json_object_mode=json_object)
            body = request_body(settings, stage, messages)
            line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
            data = json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
            yield body["model"], key, data.encode("utf-8")


@dataclass
class _Open:
    part: BatchPart
    digest: Any = field(default_factory=hashlib.sha256)
    fh: IO[bytes] | None = None


class PartWriter:
    """Lines into request files (`requests/part-0001.jsonl`, ...): a new part when the model
    changes or a limit would be passed; with `folder=None` the parts are only counted."""

    def __init__(self, folder: Path | None, *, max_requests: int, max_bytes: int) -> None:
        if max_requests < 1 or max_bytes < 1:
            raise InputError("--max-requests and --max-bytes must be at least 1")
        self.folder = folder
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.parts: list[BatchPart] = []
        self._open: dict[str, _Open] = {}
        self._keys: IO[bytes] | None = None  # made with the first part: no request, no folder

    def add(self, model: str, custom_id: str, data: bytes) -> None:
        """One request line."""
        if len(data) > self.max_bytes:
            raise InputError(
                f"one request is {len(data):,} bytes, more than a request file may hold "
                f"({self.max_bytes:,} bytes); shorten the abstract or raise --max-bytes"
            )
        current = self._open.get(model)
        if current is not None and (
            current.part.requests + 1 > self.max_requests
            or current.part.bytes + len(data) > self.max_bytes
        ):
            self._finish(current)
            current = None
        if current is None:
            name = f"{REQUESTS_DIR}/part-{len(self.parts) + 1:04d}.jsonl"
            part = BatchPart(file=name, model=model, requests=0, bytes=0, sha256="")
            self.parts.append(part)
            current = self._open[model] = _Open(part)
            if self.folder is not None:
                if self._keys is None:
                    try:
                        (self.folder / REQUESTS_DIR).mkdir(parents=True, exist_ok=True)
                    except OSError as exc:
                        raise StorageError.from_os_error(self.folder, exc) from exc
                    self._keys = self._create(self.folder / REQUESTS_DIR / KEYS_FILE)
                current.fh = self._create(self.folder / name)
        current.part.requests += 1
        current.part.bytes += len(data)
        current.digest.update(data)
        self._write(current.fh, current.part.file, data)
        self._write(self._keys, KEYS_FILE, custom_id.encode() + b"\n")

    def close(self) -> list[BatchPart]:
        """Finish every file (flushed to disk); the parts in file order."""
        for current in list(self._open.values()):
            self._finish(current)
        if self._keys is not None:
            self._close(self._keys, KEYS_FILE)
        return self.parts

    def _finish(self, current: _Open) -> None:
        current.part.sha256 = current.digest.hexdigest()
        if current.fh is not None:
            self._close(current.fh, current.part.file)
        del self._open[current.part.model]

    def _create(self, path: Path) -> IO[bytes]:
        try:
            return path.open("wb")
        except OSError as exc:
            raise StorageError.from_os_error(path, exc) from exc

    def _write(self, fh: IO[bytes] | None, name: str, data: bytes) -> None:
        if fh is None:
            return
        try:
            fh.write(data)
        except OSError as exc:
            raise StorageError.from_os_error(name, exc) from exc

    def _close(self, fh: IO[bytes], name: str) -> None:
        try:
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
        except OSError as exc:
            raise StorageError.from_os_error(name, exc) from exc


def submitted_keys(folder: Path) -> set[str]:
    """The custom_ids (cache keys) of every request written at submit."""
    path = folder / REQUESTS_DIR / KEYS_FILE
    try:
        return set(path.read_text(encoding="utf-8").split())
    except OSError as exc:
        raise StorageError.from_os_error(path, exc) from exc
