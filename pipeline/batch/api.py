"""The Files and Batches API calls of `digest batch`, through the SDK's blocking client.

The SDK retries 408/409/429/5xx and dropped connections itself (`MAX_RETRIES`, with its
back-off); whatever still fails stops the command with one message that names the
endpoint and the cause, never a secret. A download is written to a temporary file, synced
and renamed, so a results file on disk is always whole.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import openai
from openai.types import Batch

from pipeline.backends.openai_backend import connection_cause, error_detail, sync_client
from pipeline.batch import COMPLETION_WINDOW, ENDPOINT
from pipeline.config import DEFAULT_BASE_URL, Settings, public_url
from pipeline.errors import FatalBackendError, StorageError
from pipeline.redact import Redactor, secrets_of

MAX_RETRIES = 4
TIMEOUT_S = 600.0  # a 200 MB upload takes a while; per read, not for the whole request
FIND_PAGES = 10  # batches listed (100 a page, newest first) to find one a crash left unrecorded
T = TypeVar("T")


class BatchAPI:
    """Upload, create, find, retrieve and download, with errors as FatalBackendError."""

    def __init__(self, settings: Settings) -> None:
        self.where = settings.endpoint or public_url(DEFAULT_BASE_URL)
        self.redact = Redactor(secrets_of(settings))
        self.client = sync_client(settings, max_retries=MAX_RETRIES, timeout_s=TIMEOUT_S)

    def close(self) -> None:
        """Release the HTTP connections."""
        self.client.close()

    def upload(self, path: Path) -> str:
        """Upload one request file (purpose `batch`); its file id."""
        with path.open("rb") as fh:
            file = self._call(
                f"uploading {path.name}",
                lambda: self.client.files.create(
                    file=(path.name, fh, "application/jsonl"), purpose="batch"
                ),
            )
        return file.id

    def create(self, file_id: str, metadata: dict[str, str]) -> Batch:
        """Create the batch of an uploaded file (chat completions, 24h window)."""
        return self._call(
            f"creating the batch of {file_id}",
            lambda: self.client.batches.create(
                input_file_id=file_id,
                endpoint=ENDPOINT,  # type: ignore[arg-type]  # Literal in the SDK
                completion_window=COMPLETION_WINDOW,  # type: ignore[arg-type]
                metadata=metadata,
            ),
        )

    def find(self, file_id: str) -> Batch | None:
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

    def _list(self, kwargs: dict[str, Any]) -> Any:
        return self._call("listing batches", lambda: self.client.batches.list(**kwargs))

    def retrieve(self, batch_id: str) -> Batch:
        """The batch as it stands now."""
        return self._call(f"retrieving {batch_id}", lambda: self.client.batches.retrieve(batch_id))

    def download(self, file_id: str, dest: Path) -> None:
        """Save the content of a file to `dest`, whole or not at all."""
        response = self._call(f"downloading {file_id}", lambda: self.client.files.content(file_id))
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as fh:
                fh.write(response.content)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(dest)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StorageError.from_os_error(dest, exc) from exc

    def _call(self, what: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except openai.APIStatusError as exc:
            message = f"{self.where} refused {what} ({exc.status_code}: {error_detail(exc)})"
            if exc.status_code == 401:
                message += "; set OPENAI_API_KEY to a valid key"
            elif exc.status_code == 404 and what.startswith(("uploading", "listing")):
                message += "; the endpoint may have no Files/Batches API (a local server?)"
            raise FatalBackendError(self.redact(message)) from None
        except openai.APIConnectionError as exc:
            cause = connection_cause(exc) or str(exc)
            raise FatalBackendError(
                self.redact(f"cannot reach {self.where} while {what}: {cause}")
            ) from None
