"""The OpenAI Files + Batches API, emulated inside ``pipeline.testing.openai_server`` for tests.

The server routes ``/v1/files...`` and ``/v1/batches...`` here (after its API-key check):

    POST   /v1/files                  multipart upload: ``purpose`` + ``file`` (+ ``expires_after``)
    GET    /v1/files                  list (``purpose``, ``limit``, ``after``, ``order``)
    GET    /v1/files/{id}             the file object
    GET    /v1/files/{id}/content     the bytes, identical on every download
    DELETE /v1/files/{id}
    POST   /v1/batches                ``input_file_id``, ``endpoint``, ``completion_window``
    GET    /v1/batches                list, newest first (``limit`` 1-100, default 20; ``after``)
    GET    /v1/batches/{id}           the batch object; each retrieve is one tick of its clock
    POST   /v1/batches/{id}/cancel

Driven by polls, not by time, so a test is deterministic however fast it polls. A status is
shown by ``polls_per_status`` responses in a row (the create response is the first
``validating`` one), then the next retrieve moves the batch on:

    validating -> in_progress -> finalizing -> completed        (the normal path)
    validating -> failed                                        (input file fails validation)
    validating -> in_progress -> expired                        (some requests never answered)
    validating | in_progress | finalizing -> cancelling -> cancelled   (POST .../cancel)

Only ``GET /v1/batches/{id}`` advances a batch (listing does not). Files appear on the
terminal status: ``output_file_id`` (one line per 200) and ``error_file_id`` (one line per
other outcome), each only when it would not be empty, with purpose ``batch_output``.

Semantics worth knowing:

- Upload checks what the Files API checks up front: ``purpose``, a ``file`` part, size
  (``max_file_bytes``), a ``.jsonl`` name and UTF-8 for ``purpose=batch``. The line checks run
  when a batch is created from the file and surface as status ``failed`` with
  ``errors.data = [{code, message, param, line}]`` (codes: ``empty_file``,
  ``invalid_json_line``, ``missing_required_parameter``, ``duplicate_custom_id``,
  ``invalid_method``, ``invalid_url``, ``mismatched_model``, ``too_many_requests``).
  With ``validate_on_upload`` the upload itself answers 400 with the first such error.
- Lines are answered in input order by the server's own machinery: ``answer_fn``, the
  fault schedule (``faults``, ``script``, ``seed``, ``max_faults_per_key``, ``self_correct``)
  and the same counters (``by_key``, ``by_stage``, ``faults``, tokens). Content faults
  (truncated, schema, ungrounded, length, refusal) appear inside 200 output lines; 429 / 500
  / 503 faults become error-file lines with that ``status_code`` and an OpenAI error body,
  as does a body the server cannot read (400) and every custom_id in ``line_errors``.
  A ``stall`` or ``drop`` fault leaves the request unanswered, so the batch expires.
  Latency, ``max_concurrent`` and rpm/tpm do not apply to batch lines.
- During ``in_progress`` the answered share grows with each poll (``request_counts``);
  ``expire_after_lines`` caps how many lines a batch answers: the rest are listed in the
  error file as ``{"response": null, "error": {"code": "batch_expired", ...}}`` and the
  batch ends ``expired`` with a partial output file, as the API documents.
- Cancel: ``cancelling`` for ``polls_per_status`` polls, then ``cancelled``; lines already
  answered are in the output / error files, the unanswered ones in no file unless
  ``list_cancelled`` (then as ``batch_cancelled`` errors). Cancelling a finished batch is a
  409; cancelling a cancelling one returns it unchanged.
- Output and error lines are in a deterministic shuffled order (``shuffle=False`` keeps the
  input order); ids (``file-...``, ``batch_...``, ``batch_req_...``) derive from the seed
  and counters, so two runs with the same config give the same ids, order and contents
  (only the ``created`` / ``*_at`` timestamps are wall-clock).
- ``request_counts.failed`` counts every error-file line (expired ones included), so
  ``completed + failed == total`` once the batch is terminal (cancelled: the unanswered
  requests are in neither).
- Input files are split into lines on ``\n`` only, as the API does: a raw U+2028 in a
  request is data.

Misbehaviour on demand, for the client's defences (all off by default): ``batch_fields``
and ``file_fields`` are set into every batch / file object the server sends (an odd id, a
non-string status, null counts); ``output_lines`` replaces a custom_id's output line with
raw bytes (invalid UTF-8, deep nesting) and ``extra_output_lines`` appends raw lines to
every output file (unknown or duplicate custom_ids); ``retrieve_faults`` makes the next
retrieves fail in turn (``"500"``, ``"503"``, ``"429"``: that status; ``"drop"``: the
connection closed without an answer); ``pad_output_bytes`` gives every 200 line a
``logprobs`` field of about that many bytes, and with ``spool_dir`` output files are
written there and sent from disk in chunks (a 1 GB file without 1 GB in memory). A stuck
batch is a large ``polls_per_status``. ``BatchAPI.configure`` changes the knobs of a
running server (custom_ids are known only after submit).

Knobs live in ``BatchConfig`` (``ServerConfig(batch=BatchConfig(...))``, or ``--batch-*`` on
the command line); counters under ``server.stats()["batch"]``.
"""

from __future__ import annotations

import dataclasses
import email.message
import hashlib
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from pipeline.testing.faults import unit_draw
from pipeline.testing.http import (
    MAX_BODY,
    Drop,
    Request,
    Response,
    error_response,
    json_response,
)

if TYPE_CHECKING:
    import argparse

# One line's body -> its response (None: the request stalled and is never answered).
AnswerLine = Callable[[dict[str, Any]], Response | None]

MAX_REQUESTS = 50_000
MAX_FILE_BYTES = 200 * 1024 * 1024
ENDPOINTS = ("/v1/chat/completions",)  # the only endpoint this server answers
COMPLETION_WINDOWS = ("24h",)
FILE_PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
DAY_S = 24 * 3600
FILE_TTL_S = 30 * DAY_S  # files with purpose=batch expire after 30 days by default
MAX_REPORTED_ERRORS = 100
_MULTIPART_SLACK = 64 * 1024  # form fields and part headers around the file itself
TERMINAL = ("failed", "completed", "expired", "cancelled")
COUNTERS = (
    "files_uploaded",
    "bytes_uploaded",
    "files_deleted",
    "content_downloads",
    "batches_created",
    "retrieves",
    "cancels",
    *(f"batches_{status}" for status in TERMINAL),
    "lines_answered",
    "lines_stalled",
    "lines_expired",
    "lines_cancelled",
    "retrieve_faults",
)
RETRIEVE_FAULTS = ("429", "500", "503", "drop")
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
CANCELLED_MESSAGE = "This request was not executed because the batch was cancelled."
# status -> (error type, code, message) of an injected per-line error
_LINE_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request (injected)."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided (injected)."),
    403: ("invalid_request_error", None, "You are not allowed to make this request (injected)."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist (injected)."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached (injected)."),
    500: ("server_error", None, "The server had an error processing your request (injected)."),
    503: ("server_error", None, "The server is overloaded (injected)."),
}


@dataclass(frozen=True)
class BatchConfig:
    """Behaviour of the Files + Batches endpoints; every choice is deterministic."""

    polls_per_status: int = 1
    max_requests: int = MAX_REQUESTS
    max_file_bytes: int = MAX_FILE_BYTES
    expire_after_lines: int | None = None
    line_errors: Mapping[str, int] = field(default_factory=dict)
    shuffle: bool = True
    list_cancelled: bool = False
    validate_on_upload: bool = False
    # misbehaviour on demand (see the module docstring)
    batch_fields: Mapping[str, Any] = field(default_factory=dict)
    file_fields: Mapping[str, Any] = field(default_factory=dict)
    output_lines: Mapping[str, bytes] = field(default_factory=dict)
    extra_output_lines: tuple[bytes, ...] = ()
    retrieve_faults: tuple[str, ...] = ()
    pad_output_bytes: int = 0
    spool_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.polls_per_status < 1:
            raise ValueError("polls_per_status must be >= 1")
        if self.max_requests < 1 or self.max_file_bytes < 1:
            raise ValueError("max_requests and max_file_bytes must be >= 1")
        if self.expire_after_lines is not None and self.expire_after_lines < 0:
            raise ValueError("expire_after_lines must be >= 0 or None")
        bad = {c: s for c, s in self.line_errors.items() if s not in _LINE_ERRORS}
        if bad:
            raise ValueError(f"line_errors statuses must be in {sorted(_LINE_ERRORS)}: {bad}")
        unknown = set(self.retrieve_faults) - set(RETRIEVE_FAULTS)
        if unknown:
            raise ValueError(f"retrieve_faults must be in {RETRIEVE_FAULTS}: {sorted(unknown)}")
        if self.pad_output_bytes < 0:
            raise ValueError("pad_output_bytes must be >= 0")
        object.__setattr__(self, "line_errors", dict(self.line_errors))


# --- pure helpers -------------------------------------------------------------------------


def parse_multipart(body: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """``{field name: (filename or None, bytes)}`` of a multipart/form-data body; ValueError."""
    header = email.message.Message()
    header["content-type"] = content_type
    boundary = header.get_param("boundary")
    if header.get_content_type() != "multipart/form-data" or not isinstance(boundary, str):
        raise ValueError("expected a multipart/form-data body with a boundary")
    delimiter = b"--" + boundary.encode("latin-1")
    chunks = body.split(b"\r\n" + delimiter)
    first = chunks[0]
    if not first.startswith(delimiter):
        raise ValueError("multipart body does not start with its boundary")
    chunks[0] = first[len(delimiter) :]
    fields: dict[str, tuple[str | None, bytes]] = {}
    for chunk in chunks:
        if chunk.startswith(b"--"):  # the closing delimiter
            return fields
        head, sep, content = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("multipart part without a header block")
        part = email.message.Message()
        for line in head.decode("utf-8", "replace").split("\r\n"):
            name, colon, value = line.partition(":")
            if colon:
                part[name.strip()] = value.strip()
        field_name = part.get_param("name", header="content-disposition")
        if not isinstance(field_name, str):
            raise ValueError("multipart part without a name")
        filename = part.get_filename()
        fields[field_name] = (filename, content)
    raise ValueError("multipart body without a closing boundary")


def validate_input(
    data: bytes, endpoint: str, max_requests: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(request lines, errors) of a batch input file: the Batch API's line checks."""
    errors: list[dict[str, Any]] = []

    def err(code: str, message: str, line: int | None = None, param: str | None = None) -> None:
        errors.append({"code": code, "message": message, "param": param, "line": line})

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        err("invalid_json_line", "The input file is not UTF-8 encoded.")
        return [], errors
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    first_model: str | None = None
    count = 0
    # \n only, as the API splits: U+2028, U+2029 and U+0085 are legal raw characters in JSON.
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        count += 1
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            err("invalid_json_line", f"Line {number} is not a JSON object.", number)
            continue
        ok = True
        for param in ("custom_id", "method", "url", "body"):
            if param not in obj:
                err(
                    "missing_required_parameter",
                    f"Missing '{param}' on line {number}.",
                    number,
                    param,
                )
                ok = False
        custom_id = obj.get("custom_id")
        if "custom_id" in obj and (not isinstance(custom_id, str) or not custom_id):
            err(
                "invalid_request",
                f"'custom_id' on line {number} must be a non-empty string.",
                number,
                "custom_id",
            )
            ok = False
        elif isinstance(custom_id, str) and custom_id in seen:
            err(
                "duplicate_custom_id",
                f"The custom_id '{custom_id}' on line {number} is a duplicate.",
                number,
                "custom_id",
            )
            ok = False
        if "method" in obj and obj["method"] != "POST":
            err("invalid_method", f"Line {number}: method must be POST.", number, "method")
            ok = False
        if "url" in obj and obj["url"] != endpoint:
            err(
                "invalid_url",
                f"Line {number}: url must be '{endpoint}', the batch's endpoint.",
                number,
                "url",
            )
            ok = False
        body = obj.get("body")
        if "body" in obj and not isinstance(body, dict):
            err("invalid_request", f"Line {number}: body must be a JSON object.", number, "body")
            ok = False
        elif isinstance(body, dict):
            model = str(body.get("model"))
            first_model = model if first_model is None else first_model
            if model != first_model:
                err(
                    "mismatched_model",
                    f"Line {number}: all requests of a batch must use the same model.",
                    number,
                    "body.model",
                )
                ok = False
        if isinstance(custom_id, str):
            seen.add(custom_id)
        if ok:
            lines.append(obj)
    if not lines and not errors:
        err("empty_file", "The input file has no requests.")
    if count > max_requests:
        err(
            "too_many_requests",
            f"The input file has {count} requests; the limit is {max_requests}.",
        )
    return lines, errors


def _short_hash(*parts: object, n: int = 24) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:n]


# --- records ------------------------------------------------------------------------------


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    data: bytes | Path  # a Path: an output file spooled to disk (``spool_dir``)
    created_at: int
    expires_at: int | None

    @property
    def size(self) -> int:
        return self.data.stat().st_size if isinstance(self.data, Path) else len(self.data)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.size,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "status_details": None,
        }


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    output_ttl_s: int | None
    created_at: int
    requests: list[dict[str, Any]]
    validation_errors: list[dict[str, Any]]
    model: str | None
    status: str = "validating"
    views: int = 1  # responses that showed the current status (the create response is one)
    answered: int = 0  # requests taken in input order (answered, errored or stalled)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # custom_id -> line
    stalled: list[str] = field(default_factory=list)
    times: dict[str, int] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def ok(self) -> int:
        return sum(1 for r in self.results.values() if _is_ok(r))

    def to_json(self) -> dict[str, Any]:
        total = len(self.requests) if self.status != "validating" else 0
        started = self.status not in ("validating", "failed")
        errors = None
        if self.status == "failed":
            errors = {"object": "list", "data": self.validation_errors[:MAX_REPORTED_ERRORS]}
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "model": self.model if started else None,
            "errors": errors,
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "in_progress_at": self.times.get("in_progress"),
            "expires_at": self.created_at + DAY_S,
            "finalizing_at": self.times.get("finalizing"),
            "completed_at": self.times.get("completed"),
            "failed_at": self.times.get("failed"),
            "expired_at": self.times.get("expired"),
            "cancelling_at": self.times.get("cancelling"),
            "cancelled_at": self.times.get("cancelled"),
            "request_counts": {
                "total": total,
                "completed": self.ok,
                "failed": len(self.results) - self.ok,
            },
            "usage": {
                "input_tokens": self.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": self.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": self.input_tokens + self.output_tokens,
            }
            if started
            else None,
            "metadata": self.metadata,
        }


def _is_ok(line: dict[str, Any]) -> bool:
    return line["error"] is None and line["response"]["status_code"] == 200


# --- the API ------------------------------------------------------------------------------


class BatchAPI:
    """Files + Batches state of one server, its lines answered by ``answer_line`` (the server's
    answers, faults and counters); ``handle`` runs on the server's loop thread."""

    def __init__(
        self, answer_line: AnswerLine, seed: int = 0, config: BatchConfig | None = None
    ) -> None:
        self._answer_line = answer_line
        self.config = config or BatchConfig()
        self._seed = seed
        self._lock = threading.Lock()  # handle() vs stats() from other threads
        self._files: dict[str, _File] = {}
        self._batches: dict[str, _Batch] = {}  # insertion order = creation order
        self._counters: Counter[str] = Counter(dict.fromkeys(COUNTERS, 0))
        self._file_seq = self._batch_seq = 0  # id counters (outputs included)
        self._lines_by_status: Counter[int] = Counter()
        self._retrieve_faults_used = 0

    def configure(self, **changes: Any) -> None:
        """Change the knobs of a running server (``BatchConfig`` fields); the retrieve-fault
        script starts again from its first item."""
        with self._lock:
            self.config = dataclasses.replace(self.config, **changes)
            self._retrieve_faults_used = 0

    # plumbing called by the server

    def body_limit(self, path: str) -> int:
        """Largest request body accepted for ``path`` (uploads may be up to max_file_bytes)."""
        if path.rstrip("/") in ("/v1/files", "/files"):
            return max(MAX_BODY, self.config.max_file_bytes + _MULTIPART_SLACK)
        return MAX_BODY

    def stats(self) -> dict[str, Any]:
        """Counters: uploads, downloads, batches by status, lines answered by status."""
        with self._lock:
            return {
                **dict(self._counters),
                "files": len(self._files),
                "batches_by_status": dict(Counter(b.status for b in self._batches.values())),
                "lines_by_status": dict(self._lines_by_status),
            }

    def handle(self, request: Request, path: str) -> Response:
        """Route one request (``path`` without the ``/v1`` prefix)."""
        parts = path.strip("/").split("/")
        query = {k: v[-1] for k, v in parse_qs(request.query).items()}
        method = request.method
        with self._lock:
            if parts[0] == "files":
                if len(parts) == 1:
                    if method == "POST":
                        return self._upload(request)
                    return self._list_files(query) if method == "GET" else _not_allowed()
                if len(parts) == 2:
                    if method == "GET":
                        return self._file_or_404(
                            parts[1], lambda f: json_response(200, self._file_json(f))
                        )
                    return self._delete_file(parts[1]) if method == "DELETE" else _not_allowed()
                if len(parts) == 3 and parts[2] == "content":
                    return self._content(parts[1]) if method == "GET" else _not_allowed()
            else:  # batches
                if len(parts) == 1:
                    if method == "POST":
                        return self._create_batch(request)
                    return self._list_batches(query) if method == "GET" else _not_allowed()
                if len(parts) == 2:
                    return self._retrieve(parts[1]) if method == "GET" else _not_allowed()
                if len(parts) == 3 and parts[2] == "cancel":
                    return self._cancel(parts[1]) if method == "POST" else _not_allowed()
        return error_response(
            404, f"Unknown request URL: {request.path}", "invalid_request_error", "unknown_url"
        )

    # files

    def _upload(self, request: Request) -> Response:
        try:
            form = parse_multipart(request.body, request.headers.get("content-type", ""))
        except ValueError as exc:
            return _invalid(str(exc))
        purpose = form.get("purpose", (None, b""))[1].decode("utf-8", "replace")
        if "file" not in form:
            return _invalid("Missing required parameter: 'file'.", "file")
        if purpose not in FILE_PURPOSES:
            return _invalid(
                f"Invalid purpose {purpose!r}; expected one of {FILE_PURPOSES}.", "purpose"
            )
        filename, data = form["file"]
        filename = filename or "upload"
        if purpose == "batch":
            if len(data) > self.config.max_file_bytes:
                limit = self.config.max_file_bytes
                return _invalid(
                    f"File is {len(data)} bytes; the limit for purpose=batch is {limit}.",
                    "file",
                    status=413,
                )
            if not filename.endswith(".jsonl"):
                return _invalid("Invalid file format for Batch API. Must be .jsonl", "file")
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                return _invalid("The file is not UTF-8 encoded JSONL.", "file")
            if self.config.validate_on_upload:
                _, errors = validate_input(data, ENDPOINTS[0], self.config.max_requests)
                if errors:
                    return _invalid(errors[0]["message"], "file", code=errors[0]["code"])
        now = int(time.time())
        ttl: int | None = FILE_TTL_S if purpose == "batch" else None
        seconds = form.get("expires_after[seconds]")
        if seconds is not None:
            try:
                ttl = int(seconds[1])
            except ValueError:
                return _invalid("expires_after[seconds] must be an integer.", "expires_after")
        file = self._new_file(filename, purpose, data, now, ttl)
        self._counters["files_uploaded"] += 1
        self._counters["bytes_uploaded"] += len(data)
        return json_response(200, self._file_json(file))

    def _file_json(self, file: _File) -> dict[str, Any]:
        return {**file.to_json(), **self.config.file_fields}

    def _batch_json(self, batch: _Batch) -> dict[str, Any]:
        return {**batch.to_json(), **self.config.batch_fields}

    def _new_file(
        self, filename: str, purpose: str, data: bytes | Path, now: int, ttl: int | None
    ) -> _File:
        self._file_seq += 1
        file_id = "file-" + _short_hash(self._seed, "file", self._file_seq)
        expires = now + ttl if ttl is not None else None
        file = self._files[file_id] = _File(file_id, filename, purpose, data, now, expires)
        return file

    def _file_or_404(self, file_id: str, then: Any) -> Response:
        file = self._files.get(file_id)
        if file is None:
            return error_response(
                404, f"No such File object: {file_id}", "invalid_request_error", None
            )
        return then(file)

    def _list_files(self, query: dict[str, str]) -> Response:
        files = list(self._files.values())
        if query.get("order", "desc") == "desc":
            files.reverse()
        if "purpose" in query:
            files = [f for f in files if f.purpose == query["purpose"]]
        return _page(files, query, self._file_json, default_limit=10_000, max_limit=10_000)

    def _delete_file(self, file_id: str) -> Response:
        if self._files.pop(file_id, None) is None:
            return error_response(
                404, f"No such File object: {file_id}", "invalid_request_error", None
            )
        self._counters["files_deleted"] += 1
        return json_response(200, {"id": file_id, "object": "file", "deleted": True})

    def _content(self, file_id: str) -> Response:
        file = self._files.get(file_id)
        if file is None:
            return error_response(
                404, f"No such File object: {file_id}", "invalid_request_error", None
            )
        self._counters["content_downloads"] += 1
        if isinstance(file.data, Path):
            return Response(200, b"", content_type="application/octet-stream", body_path=file.data)
        return Response(200, file.data, content_type="application/octet-stream")

    # batches

    def _create_batch(self, request: Request) -> Response:
        try:
            body = json.loads(request.body or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _invalid("The body must be a JSON object.")
        for name in ("input_file_id", "endpoint", "completion_window"):
            if not body.get(name):
                return _invalid(
                    f"Missing required parameter: '{name}'.",
                    name,
                    code="missing_required_parameter",
                )
        if body["endpoint"] not in ENDPOINTS:
            return _invalid(
                f"Unsupported endpoint {body['endpoint']!r}; this server answers {ENDPOINTS}.",
                "endpoint",
            )
        if body["completion_window"] not in COMPLETION_WINDOWS:
            return _invalid(
                f"Invalid completion_window {body['completion_window']!r}; only '24h' is supported.",
                "completion_window",
            )
        metadata = body.get("metadata")
        if metadata is not None and (not isinstance(metadata, dict) or len(metadata) > 16):
            return _invalid("metadata must be an object of at most 16 string pairs.", "metadata")
        file = self._files.get(str(body["input_file_id"]))
        if file is None:
            return error_response(
                404, f"No such File object: {body['input_file_id']}", "invalid_request_error", None
            )
        if file.purpose != "batch":
            return _invalid(
                f"File {file.id} has purpose {file.purpose!r}; a batch needs 'batch'.",
                "input_file_id",
            )
        ttl = (body.get("output_expires_after") or {}).get("seconds")
        data = file.data.read_bytes() if isinstance(file.data, Path) else file.data
        requests, errors = validate_input(data, body["endpoint"], self.config.max_requests)
        self._batch_seq += 1
        self._counters["batches_created"] += 1
        batch = _Batch(
            id="batch_" + _short_hash(self._seed, "batch", self._batch_seq, n=32),
            input_file_id=file.id,
            endpoint=body["endpoint"],
            completion_window=body["completion_window"],
            metadata=metadata,
            output_ttl_s=int(ttl) if ttl is not None else None,
            created_at=int(time.time()),
            requests=requests,
            validation_errors=errors,
            model=str(requests[0]["body"].get("model")) if requests else None,
        )
        self._batches[batch.id] = batch
        return json_response(200, self._batch_json(batch))

    def _list_batches(self, query: dict[str, str]) -> Response:
        batches = list(reversed(self._batches.values()))
        return _page(batches, query, self._batch_json, default_limit=20, max_limit=100)

    def _retrieve(self, batch_id: str) -> Response:
        batch = self._batches.get(batch_id)
        if batch is None:
            return error_response(
                404, f"No batch found with id '{batch_id}'.", "invalid_request_error", None
            )
        faults = self.config.retrieve_faults
        if self._retrieve_faults_used < len(faults):
            fault = faults[self._retrieve_faults_used]
            self._retrieve_faults_used += 1
            self._counters["retrieve_faults"] += 1
            if fault == "drop":
                raise Drop
            type_, code, message = _LINE_ERRORS[int(fault)]
            return error_response(int(fault), message, type_, code)
        self._counters["retrieves"] += 1
        self._tick(batch)
        return json_response(200, self._batch_json(batch))

    def _cancel(self, batch_id: str) -> Response:
        batch = self._batches.get(batch_id)
        if batch is None:
            return error_response(
                404, f"No batch found with id '{batch_id}'.", "invalid_request_error", None
            )
        if batch.status in TERMINAL:
            return error_response(
                409,
                f"Cannot cancel a batch with status '{batch.status}'.",
                "invalid_request_error",
                None,
            )
        if batch.status != "cancelling":
            self._counters["cancels"] += 1
            self._enter(batch, "cancelling")
        return json_response(200, self._batch_json(batch))

    # the clock: one retrieve = one tick

    def _tick(self, batch: _Batch) -> None:
        if batch.status in TERMINAL:
            return
        k = self.config.polls_per_status
        if batch.views < k:
            if batch.status == "in_progress":  # the answered share grows with every poll
                self._answer_until(batch, len(batch.requests) * batch.views // k)
            batch.views += 1
            return
        if batch.status == "validating":
            self._enter(batch, "failed" if batch.validation_errors else "in_progress")
        elif batch.status == "in_progress":
            self._answer_until(batch, len(batch.requests))
            if len(batch.results) < len(batch.requests):
                self._expire(batch)
            else:
                self._enter(batch, "finalizing")
        elif batch.status == "finalizing":
            self._write_files(batch)
            self._enter(batch, "completed")
        elif batch.status == "cancelling":
            if self.config.list_cancelled:
                for request in batch.requests[batch.answered :]:
                    cid = request["custom_id"]
                    batch.results[cid] = self._expired_line(batch, cid, "batch_cancelled")
                    self._counters["lines_cancelled"] += 1
            self._write_files(batch)
            self._enter(batch, "cancelled")

    def _enter(self, batch: _Batch, status: str) -> None:
        batch.status = status
        batch.views = 0 if status == "cancelling" else 1  # cancel's own response is not a view
        batch.times[status] = int(time.time())
        if status in TERMINAL:
            self._counters[f"batches_{status}"] += 1

    def _expire(self, batch: _Batch) -> None:
        for request in batch.requests:
            cid = request["custom_id"]
            if cid not in batch.results:
                batch.results[cid] = self._expired_line(batch, cid, "batch_expired")
                self._counters["lines_expired"] += 1
        self._write_files(batch)
        self._enter(batch, "expired")

    def _answer_until(self, batch: _Batch, target: int) -> None:
        cap = self.config.expire_after_lines
        if cap is not None:
            target = min(target, cap)
        while batch.answered < target:
            request = batch.requests[batch.answered]
            batch.answered += 1
            line = self._answer(batch, request)
            if line is None:
                batch.stalled.append(request["custom_id"])
            else:
                batch.results[request["custom_id"]] = line

    def _answer(self, batch: _Batch, request: dict[str, Any]) -> dict[str, Any] | None:
        """One output / error line through the server's answer and fault machinery."""
        cid = request["custom_id"]
        digest = _short_hash(self._seed, batch.id, cid, n=48)
        status = self.config.line_errors.get(cid)
        response: Response | None = None
        if status is None:
            response = self._answer_line(request["body"])
            if response is None:
                self._counters["lines_stalled"] += 1
                return None
            status = response.status
        if response is None or status != 200:
            type_, code, message = _LINE_ERRORS.get(status, _LINE_ERRORS[500])
            if response is not None:  # the server's own error body (400 or an injected fault)
                body = json.loads(response.body)
            else:
                body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
        else:
            body = json.loads(response.body)
            usage = body.get("usage") or {}
            batch.input_tokens += usage.get("prompt_tokens", 0)
            batch.output_tokens += usage.get("completion_tokens", 0)
            if self.config.pad_output_bytes:
                body["choices"][0]["logprobs"] = _padding(self.config.pad_output_bytes)
        self._counters["lines_answered"] += 1
        self._lines_by_status[status] += 1
        request_id = (
            response.headers.get("x-request-id") if response else None
        ) or f"req_{digest[24:]}"
        return {
            "id": f"batch_req_{digest[:24]}",
            "custom_id": cid,
            "response": {"status_code": status, "request_id": request_id, "body": body},
            "error": None,
        }

    def _expired_line(self, batch: _Batch, cid: str, code: str) -> dict[str, Any]:
        message = EXPIRED_MESSAGE if code == "batch_expired" else CANCELLED_MESSAGE
        return {
            "id": f"batch_req_{_short_hash(self._seed, batch.id, cid)}",
            "custom_id": cid,
            "response": None,
            "error": {"code": code, "message": message},
        }

    def _write_files(self, batch: _Batch) -> None:
        lines = list(batch.results.values())
        if self.config.shuffle:  # the API does not keep input order; neither do we
            lines.sort(key=lambda r: unit_draw(self._seed, batch.id, r["custom_id"]))
        now = int(time.time())
        ttl = batch.output_ttl_s if batch.output_ttl_s is not None else FILE_TTL_S
        split = {"output": [r for r in lines if _is_ok(r)], "error": []}
        split["error"] = [r for r in lines if not _is_ok(r)]
        extra = self.config.extra_output_lines
        for kind, chosen in split.items():
            if not chosen and not (kind == "output" and extra):
                continue
            more = extra if kind == "output" else ()
            lines_out = itertools.chain(
                map(self._raw_line, chosen), (line + b"\n" for line in more)
            )  # one line at a time: a spooled file is never held whole
            name = f"batch_{batch.id}_{kind}.jsonl"
            data: bytes | Path
            if self.config.spool_dir is not None:
                data = self.config.spool_dir / f"{batch.id}_{kind}.jsonl"
                with data.open("wb") as fh:
                    fh.writelines(lines_out)
            else:
                data = b"".join(lines_out)
            file = self._new_file(name, "batch_output", data, now, ttl)
            setattr(batch, f"{kind}_file_id", file.id)

    def _raw_line(self, line: dict[str, Any]) -> bytes:
        raw = self.config.output_lines.get(line["custom_id"])
        if raw is not None:
            return raw + b"\n"
        return json.dumps(line, ensure_ascii=False).encode() + b"\n"


_PADDING: dict[int, dict[str, Any]] = {}


def _padding(size: int) -> dict[str, Any]:
    """A ``logprobs`` object of about ``size`` bytes of JSON (one shared object per size)."""
    if size not in _PADDING:
        entry = {"token": "pad", "logprob": -0.25, "bytes": [112, 97, 100], "top_logprobs": []}
        per_entry = len(json.dumps(entry)) + 2
        _PADDING[size] = {"content": [entry] * max(1, size // per_entry), "refusal": None}
    return _PADDING[size]


def _page(
    items: list[Any],
    query: dict[str, str],
    to_json: Callable[[Any], dict[str, Any]],
    *,
    default_limit: int,
    max_limit: int,
) -> Response:
    """A cursor page (``after`` = the last id of the previous page) of file or batch records."""
    try:
        limit = int(query.get("limit", default_limit))
    except ValueError:
        return _invalid("limit must be an integer.", "limit")
    if not 1 <= limit <= max_limit:
        return _invalid(f"limit must be between 1 and {max_limit}.", "limit")
    after = query.get("after")
    if after is not None:
        ids = [item.id for item in items]
        if after not in ids:
            return _invalid(f"Unknown cursor 'after={after}'.", "after")
        items = items[ids.index(after) + 1 :]
    page = items[:limit]
    return json_response(
        200,
        {
            "object": "list",
            "data": [to_json(item) for item in page],
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
            "has_more": len(items) > limit,
        },
    )


def _invalid(
    message: str, param: str | None = None, *, code: str | None = None, status: int = 400
) -> Response:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return json_response(status, {"error": error})


def _not_allowed() -> Response:
    return error_response(
        405, "Method not allowed for this URL.", "invalid_request_error", "method_not_allowed"
    )


# --- command line -------------------------------------------------------------------------


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--batch-*`` flags of ``python -m bench.openai_server``."""
    g = parser.add_argument_group("Files + Batches API (pipeline/testing/batch_api.py)")
    g.add_argument("--batch-polls", type=int, default=1, help="retrieves per batch status")
    g.add_argument("--batch-max-requests", type=int, default=MAX_REQUESTS)
    g.add_argument("--batch-max-bytes", type=int, default=MAX_FILE_BYTES)
    g.add_argument("--batch-expire-after", type=int, help="answer at most N lines, then expire")
    g.add_argument("--batch-in-order", action="store_true", help="output lines in input order")
    g.add_argument("--batch-line-error", action="append", default=[], metavar="CUSTOM_ID=STATUS")
    g.add_argument(
        "--batch-pad-output", type=int, default=0, metavar="BYTES", help="logprobs per 200 line"
    )
    g.add_argument("--batch-spool-dir", type=Path, help="write output files here, send from disk")


def config_from_args(args: argparse.Namespace) -> BatchConfig:
    """A BatchConfig from the ``--batch-*`` flags."""
    line_errors = {}
    for item in args.batch_line_error:
        cid, _, status = item.rpartition("=")
        line_errors[cid] = int(status)
    return BatchConfig(
        polls_per_status=args.batch_polls,
        max_requests=args.batch_max_requests,
        max_file_bytes=args.batch_max_bytes,
        expire_after_lines=args.batch_expire_after,
        line_errors=line_errors,
        shuffle=not args.batch_in_order,
        pad_output_bytes=args.batch_pad_output,
        spool_dir=args.batch_spool_dir,
    )
