"""The Files and Batches API calls of `digest batch`, through the SDK's blocking client.

Every answer is read from its raw JSON body and checked (`pipeline.batch.server`) before
anything of it is used: the SDK would hand back a number as a status or an id with a `/`
in it. Downloads are streamed to disk in chunks through a temporary file, synced and
renamed, so a results file on disk is always whole and never held in memory.

With `max_retries` the SDK retries 408/409/429/5xx and dropped connections itself (with
its back-off); what still fails stops the command with one message that names the
endpoint and the cause, never a secret: `EndpointUnavailable` for what may pass (a
connection error, 408/409/429/5xx: `collect --wait` rides those out itself), else
FatalBackendError.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import openai
from pydantic import BaseModel

from pipeline.atomicfile import atomic_open
from pipeline.backends import check_openai_settings
from pipeline.backends.openai_backend import connection_cause, error_detail, sync_client
from pipeline.batch import COMPLETION_WINDOW, ENDPOINT
from pipeline.batch.server import (
    BadServerObject,
    ServerBatch,
    ServerBatchPage,
    ServerFile,
    parse_object,
)
from pipeline.config import DEFAULT_BASE_URL, Settings, public_url
from pipeline.errors import FatalBackendError
from pipeline.redact import Redactor, secrets_of

MAX_RETRIES = 4
TIMEOUT_S = 600.0  # a 200 MB upload takes a while; per read, not for the whole request
FIND_PAGES = 10  # batches listed (100 a page, newest first) to find one a crash left unrecorded
CHUNK_BYTES = 1 << 20  # a download is written in pieces of this size
TRANSIENT_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class EndpointUnavailable(FatalBackendError):
    """A call failed for a reason that may pass: no connection, a timeout, 408/409/429/5xx."""


class BatchAPI:
    """Upload, create, find, retrieve and download, with errors as FatalBackendError."""

    def __init__(self, settings: Settings, *, max_retries: int = MAX_RETRIES) -> None:
        check_openai_settings(settings)  # no key for api.openai.com: refused before any call
        self.where = settings.endpoint or public_url(DEFAULT_BASE_URL)
        self.redact = Redactor(secrets_of(settings))
        self.client = sync_client(settings, max_retries=max_retries, timeout_s=TIMEOUT_S)

    def close(self) -> None:
        """Release the HTTP connections."""
        self.client.close()

    def upload(self, path: Path) -> str:
        """Upload one request file (purpose `batch`); its file id."""
        what = f"uploading {path.name}"
        with path.open("rb") as fh:
            raw = self._call(
                what,
                lambda: self.client.files.with_raw_response.create(
                    file=(path.name, fh, "application/jsonl"), purpose="batch"
                ),
            )
        return self._parse(what, raw, ServerFile, "file").id

    def create(self, file_id: str, metadata: dict[str, str]) -> ServerBatch:
        """Create the batch of an uploaded file (chat completions, 24h window)."""
        what = f"creating the batch of {file_id}"
        raw = self._call(
            what,
            lambda: self.client.batches.with_raw_response.create(
                input_file_id=file_id,
                endpoint=ENDPOINT,  # type: ignore[arg-type]  # Literal in the SDK
                completion_window=COMPLETION_WINDOW,  # type: ignore[arg-type]
                metadata=metadata,
            ),
        )
        return self._parse(what, raw, ServerBatch, "batch")

    def find(self, file_id: str) -> ServerBatch | None:
        """A batch already made from `file_id` (a create whose answer a crash lost), if any
        among the newest FIND_PAGES pages of batches."""
        after: str | None = None
        for _ in range(FIND_PAGES):
            kwargs: dict[str, Any] = {"limit": 100}
            if after is not None:
                kwargs["after"] = after
            page = self._list(kwargs)
            for batch in page.data:
                if batch.input_file_id == file_id:
                    return batch
            if not page.has_more or not page.data:
                return None
            after = page.data[-1].id
        return None

    def _list(self, kwargs: dict[str, Any]) -> ServerBatchPage:
        raw = self._call(
            "listing batches", lambda: self.client.batches.with_raw_response.list(**kwargs)
        )
        return self._parse("listing batches", raw, ServerBatchPage, "batch list")

    def retrieve(self, batch_id: str) -> ServerBatch:
        """The batch as it stands now."""
        what = f"retrieving {batch_id}"
        raw = self._call(what, lambda: self.client.batches.with_raw_response.retrieve(batch_id))
        return self._parse(what, raw, ServerBatch, "batch")

    def download(self, file_id: str, dest: Path) -> None:
        """Stream the content of a file to `dest`, whole or not at all."""
        what = f"downloading {file_id}"
        dest.parent.mkdir(parents=True, exist_ok=True)

        def save() -> None:
            with (
                self.client.files.with_streaming_response.content(file_id) as response,
                atomic_open(dest, binary=True, durable=True) as fh,
            ):
                for chunk in response.iter_bytes(CHUNK_BYTES):
                    fh.write(chunk)

        self._call(what, save)

    def _parse(self, what: str, raw: Any, model: type[M], kind: str) -> M:
        try:
            return parse_object(raw.http_response.content, model)
        except BadServerObject as exc:
            raise FatalBackendError(
                self.redact(
                    f"{self.where} answered {what} with a body that is not a valid {kind} "
                    f"object ({exc}); nothing of it was stored"
                )
            ) from None

    def _call(self, what: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except openai.APIStatusError as exc:
            message = f"{self.where} refused {what} ({exc.status_code}: {error_detail(exc)})"
            if exc.status_code == 401:
                message += "; set OPENAI_API_KEY to a valid key"
            elif exc.status_code == 404 and what.startswith(("uploading", "listing")):
                message += "; the endpoint may have no Files/Batches API (a local server?)"
            error = (
                EndpointUnavailable if exc.status_code in TRANSIENT_STATUS else FatalBackendError
            )
            raise error(self.redact(message)) from None
        except (openai.APIConnectionError, httpx2.TransportError) as exc:
            # httpx2's own errors: a connection dropped in the middle of a streamed download
            cause = connection_cause(exc) or str(exc) or type(exc).__name__
            raise EndpointUnavailable(
                self.redact(f"cannot reach {self.where} while {what}: {cause}")
            ) from None
