"""A small OpenAI-compatible chat-completions server for tests and benchmarks.

It answers ``POST /v1/chat/completions`` the way the pipeline's requests expect (the stage
from ``response_format.json_schema.name`` or ``(name: <stage>)`` in the system message, the
abstract between ``<abstract>`` tags) with ``answer_fn(stage, abstract)`` serialized as JSON,
and can inject faults, latency, concurrency caps and rate limits, all deterministically.

It is a raw asyncio HTTP/1.1 server (keep-alive, Content-Length bodies) running its own
event loop in a background thread, so sync tests, async tests and benchmarks can share it:

    with OpenAIServer(ServerConfig(faults={"500": 0.2}), answer_fn=my_answer) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)

Semantics worth knowing (see ``bench/README.md`` for running it by hand):

- ``max_concurrent`` queues requests beyond the cap (like a model server with N slots);
  it never answers 429 for it. Stalled requests do not hold a slot.
- ``rpm`` / ``tpm`` are sliding 60 s windows over *admitted* requests; rejected requests
  (401, 429) do not consume budget. TPM charges the clean answer's prompt + completion
  token estimate (chars / 4). Limit 429s are immediate; everything else waits ``latency``.
- Fault decisions are a pure function of (seed, cache key, attempt number of that key):
  transport faults (429, 500, 503, stall, drop) are drawn per attempt; content faults
  (truncated, schema, ungrounded, length, refusal) are drawn per attempt and skipped for
  re-asks when ``self_correct`` is true, and drawn once per key (so every attempt of that key
  gets it) when ``self_correct`` is false. ``max_faults_per_key`` caps faults of any kind.
  A ``script`` overrides all of that for the first ``len(script)`` admitted requests.
- A stall holds the request ``stall_s`` seconds and then closes the connection without a
  response; a drop closes it right after ``latency``. Neither appears in ``by_status``.
- A trickle sends the status line and headers at once and then the (clean) body one byte
  every ``trickle_s`` seconds; ``trickles_cut`` counts trickles the client hung up on.
- Malformed 200s (``MALFORMED_FAULTS``) and a 501 are drawn per attempt like transport
  faults: an HTML page, a body that is not JSON, a truncated JSON body, a JSON array,
  ``message: null``, non-numeric ``usage``, ``choices: []``.
- ``echo_credentials`` makes every error body quote the credentials the request carried
  (the full Authorization header, and user:password decoded from a Basic one), as a
  careless proxy or debug server would; ``basic_auth`` ("user:password") requires HTTP
  Basic instead of a Bearer key; ``models`` makes ``GET /models`` misbehave (``missing``:
  404, ``html``: a 200 web page, ``wrong_shape``: 200 JSON that is not a model list,
  ``forbidden``: 403).
- A chat request with no stage marker, no schema and no abstract (a client's connectivity
  probe) is answered ``PLAIN_ANSWER`` and counted under the stage ``chat``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import contextlib
import hashlib
import importlib
import json
import math
import os
import re
import signal
import sys
import threading
import time
from array import array
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.text import numbers_in

if TYPE_CHECKING:
    from bench.batch_api import BatchConfig

AnswerFn = Callable[[str, str], dict[str, Any] | str]  # a str: the raw content itself

REPO_ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
TRANSPORT_FAULTS = ("429", "500", "503", "stall", "drop", "trickle")
# 200 responses no client can read as a chat completion.
DEEP_BODY = 100_000  # brackets of the deep_body fault
MALFORMED_FAULTS = (
    "html",
    "not_json",
    "truncated_body",
    "deep_body",
    "json_array",
    "null_message",
    "bad_usage",
    "no_choices",
)
# Statuses no retry helps: a key revoked mid-run, a request shape the server cannot do.
PERMANENT_FAULTS = ("401", "501")
# Drawn per attempt, from one partition (their rates add up to at most 1).
ATTEMPT_FAULTS = TRANSPORT_FAULTS + MALFORMED_FAULTS + PERMANENT_FAULTS
CONTENT_FAULTS = ("truncated", "schema", "ungrounded", "length", "refusal")
FAULT_NAMES = ATTEMPT_FAULTS + CONTENT_FAULTS
MODELS_MODES = ("ok", "missing", "html", "wrong_shape", "forbidden", "no_model_scope")
HTML_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>"
    "<body><h1>Welcome to nginx!</h1><p>It works.</p></body></html>\n"
)
REFUSAL_TEXT = "I can't help with that."
UNGROUNDED_TAG = "hallucinated-method"
WINDOW_S = 60.0
# The stage name of a plain chat request (no stage marker, no abstract) and its answer.
PLAIN_CHAT = "chat"
PLAIN_ANSWER = "OK"

_STAGE_RE = re.compile(r"\(name: (\w+)\)")
_ABSTRACT_RE = re.compile(r"<abstract>(.*?)</abstract>", re.DOTALL)
_MAX_BODY = 8 * 1024 * 1024
_MAX_REQUESTS_PER_CONN = 1_000_000
_MAX_MEMO = 50_000
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    403: "Forbidden",
    409: "Conflict",
    413: "Payload Too Large",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class ServerConfig:
    """Behaviour of one server instance; every random choice derives from ``seed``."""

    port: int = 0
    model: str = "bench-model"
    latency: float = 0.0
    latency_jitter: float = 0.0
    max_concurrent: int | None = None
    rpm: int | None = None
    tpm: int | None = None
    api_key: str | None = None
    faults: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    stall_s: float = 30.0
    retry_after_s: float = 1.0
    max_faults_per_key: int | None = None
    self_correct: bool = True
    script: tuple[str, ...] = ()
    idle_timeout_s: float = 75.0
    trickle_s: float = 1.0
    echo_credentials: bool = False
    basic_auth: str | None = None
    models: str = "ok"
    batch: BatchConfig | None = None  # Files + Batches API behaviour (bench/batch_api.py)

    def __post_init__(self) -> None:
        unknown = set(self.faults) - set(FAULT_NAMES)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {FAULT_NAMES}")
        if any(not 0.0 <= r <= 1.0 for r in self.faults.values()):
            raise ValueError("fault rates must be in [0, 1]")
        for group in (ATTEMPT_FAULTS, CONTENT_FAULTS):
            if sum(self.faults.get(n, 0.0) for n in group) > 1.0 + 1e-9:
                raise ValueError(f"rates of {group} add up to more than 1")
        bad = [s for s in self.script if s != "ok" and s not in FAULT_NAMES]
        if bad:
            raise ValueError(f"unknown script entries {bad}")
        for name in ("max_concurrent", "rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 or None")
        if self.latency < 0 or self.latency_jitter < 0 or self.stall_s < 0:
            raise ValueError("latency, latency_jitter and stall_s must be >= 0")
        if self.trickle_s <= 0:
            raise ValueError("trickle_s must be > 0")
        if self.models not in MODELS_MODES:
            raise ValueError(f"models must be one of {MODELS_MODES}")
        if self.basic_auth is not None and (":" not in self.basic_auth or self.api_key):
            raise ValueError("basic_auth is 'user:password', and excludes api_key")
        # Copy the mutable inputs so a caller's later edits cannot reach a running server.
        object.__setattr__(self, "faults", dict(self.faults))
        object.__setattr__(self, "script", tuple(self.script))


# --- pure helpers -------------------------------------------------------------------------


def request_key(stage: str, abstract: str) -> str:
    """The server's cache key of a request: sha256 hex of canonical JSON ``[stage, abstract]``."""
    blob = json.dumps([stage, abstract], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def unit_draw(seed: int, *parts: object) -> float:
    """A deterministic number in [0, 1) from the seed and any parts (stable across runs)."""
    text = ":".join(str(p) for p in (seed, *parts))
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def max_in_window(times: Iterable[float], window_s: float) -> int:
    """Most timestamps falling in any half-open window of ``window_s`` seconds."""
    ordered = sorted(times)
    best = start = 0
    for end, t in enumerate(ordered):
        while ordered[start] <= t - window_s:
            start += 1
        best = max(best, end - start + 1)
    return best


def estimate_tokens(chars: int) -> int:
    """Token estimate of a text length: ~4 characters per token."""
    return (chars + 3) // 4


def _pick(u: float, faults: Mapping[str, float], names: tuple[str, ...]) -> str | None:
    # The rates partition [0, 1): each fault gets exactly its share and at most one fires.
    acc = 0.0
    for name in names:
        acc += faults.get(name, 0.0)
        if u < acc:
            return name
    return None


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


@dataclass(frozen=True)
class ChatRequest:
    """What the server needs from a chat-completions body."""

    model: str
    stage: str
    abstract: str
    is_reask: bool
    prompt_chars: int


def parse_chat(body: Any) -> ChatRequest:
    """Extract stage, abstract and re-ask flag from a request body; ValueError when unusable."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise ValueError("'messages' must be a list")
    messages = [m for m in body["messages"] if isinstance(m, dict)]
    stage = _stage_of(body.get("response_format"), messages)
    user = next((m for m in messages if m.get("role") == "user"), None)
    found = _ABSTRACT_RE.search(_text_of(user)) if user else None
    if found is None:
        raise ValueError("no <abstract>...</abstract> in the first user message")
    return ChatRequest(
        model=str(body.get("model") or ""),
        stage=stage,
        abstract=found.group(1).strip(),
        is_reask=any(m.get("role") == "assistant" for m in messages),
        prompt_chars=sum(len(_text_of(m)) for m in messages),
    )


def plain_chat(body: Any) -> ChatRequest | None:
    """A chat request that is not a pipeline stage (no stage marker, no schema, no abstract),
    like a client's connectivity probe; it is answered with ``PLAIN_ANSWER``."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return None
    messages = [m for m in body["messages"] if isinstance(m, dict)]
    text = "".join(_text_of(m) for m in messages)
    response_format = body.get("response_format")
    schema = isinstance(response_format, dict) and response_format.get("type") == "json_schema"
    if not messages or schema or _STAGE_RE.search(text) or "<abstract>" in text:
        return None
    return ChatRequest(
        model=str(body.get("model") or ""),
        stage=PLAIN_CHAT,
        abstract=text,
        is_reask=False,
        prompt_chars=len(text),
    )


def _stage_of(response_format: Any, messages: list[dict[str, Any]]) -> str:
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        name = (response_format.get("json_schema") or {}).get("name")
        if name:
            return str(name)
    for m in messages:
        if m.get("role") in ("system", "developer"):
            found = _STAGE_RE.search(_text_of(m))
            if found:
                return found.group(1)
    raise ValueError("cannot tell the stage: no json_schema name and no '(name: ...)' marker")


# --- content faults -----------------------------------------------------------------------


def break_schema(answer: dict[str, Any]) -> dict[str, Any]:
    """Valid JSON that violates the stage schema: the first field gets the wrong type."""
    if not answer:
        return {"unexpected_field": True}
    broken = dict(answer)
    first = next(iter(broken))
    broken[first] = {"value": broken[first]}  # an object where a string / array is required
    return broken


def unground(stage: str, abstract: str, answer: dict[str, Any]) -> dict[str, Any]:
    """Schema-shaped JSON whose content is not grounded in the abstract (or the taxonomy)."""
    out = dict(answer)
    if stage == "tldr":
        words = str(out.get("tldr", "")).strip().rstrip(".").split()[:28] or ["The", "method"]
        out["tldr"] = f"{' '.join(words)}, improving accuracy by {_foreign_number(abstract)}%."
    elif stage == "tags":
        out["tags"] = [UNGROUNDED_TAG]  # no taxonomy id left: the answer is re-asked
    elif stage == "claims":
        fabricated = {
            "statement": "The method also solves protein folding.",
            "kind": "qualitative",
            "metric": None,
            "value": None,
            "unit": None,
            "dataset": None,
            "comparison": None,
            "evidence": "We further show that our method solves protein folding in closed form.",
        }
        out["claims"] = [fabricated, *list(out.get("claims", []))[:11]]
    else:
        return break_schema(answer)
    return out


def _foreign_number(abstract: str) -> str:
    known = set(numbers_in(abstract))
    # Bounded: among len(known) + 1 candidates at least one is not in the abstract.
    return next(str(n) for n in range(37, 38 + len(known)) if str(n) not in known)


def fault_message(
    fault: str | None, stage: str, abstract: str, answer: dict[str, Any], content: str
) -> tuple[str | None, str | None, str]:
    """(content, refusal, finish_reason) of the assistant message under a content fault."""
    if fault in ("truncated", "length"):
        cut = content[: max(1, len(content) // 2)]
        return cut, None, "length" if fault == "length" else "stop"
    if fault == "refusal":
        return None, REFUSAL_TEXT, "stop"
    if fault == "schema":
        return json.dumps(break_schema(answer)), None, "stop"
    if fault == "ungrounded":
        return json.dumps(unground(stage, abstract, answer)), None, "stop"
    return content, None, "stop"


def malform(fault: str, response: _Response) -> _Response:
    """A clean completion response turned into one of the ``MALFORMED_FAULTS`` shapes."""
    if fault == "html":
        return _Response(200, HTML_PAGE.encode(), content_type="text/html")
    if fault == "not_json":
        return _Response(200, b"upstream answered: OK (not JSON)", response.headers)
    if fault == "truncated_body":
        return _Response(200, response.body[: len(response.body) // 2], response.headers)
    if fault == "deep_body":  # valid JSON nested far past any parser's recursion limit
        deep = b'{"choices": ' + b"[" * DEEP_BODY + b"]" * DEEP_BODY + b"}"
        return _Response(200, deep, response.headers)
    payload = json.loads(response.body)
    if fault == "json_array":
        return _json(200, [payload], response.headers)
    if fault == "null_message":
        payload["choices"][0]["message"] = None
    elif fault == "bad_usage":
        payload["usage"] = {"prompt_tokens": "n/a", "completion_tokens": "many"}
    elif fault == "no_choices":
        payload["choices"] = []
    else:
        raise ValueError(f"not a malformed fault: {fault!r}")
    return _json(200, payload, response.headers)


# --- answers ------------------------------------------------------------------------------


def offline_answer_fn(taxonomy_path: Path | None = None) -> AnswerFn:
    """The pipeline's offline extractor as an answer function (taxonomy loaded once)."""
    from pipeline.stages import get_spec
    from pipeline.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(taxonomy_path or REPO_ROOT / "prompts" / "taxonomy.yaml")
    return lambda stage, abstract: get_spec(stage).offline(abstract, taxonomy)


def stub_answer(stage: str, abstract: str) -> dict[str, Any]:
    """A dependency-free, schema-shaped answer (for smoke runs and server-only benchmarks)."""
    first = abstract.split(". ")[0].strip().rstrip(".")
    if stage == "tldr":
        return {"tldr": " ".join(first.split()[:30]) + "."}
    if stage == "tags":
        return {"tags": ["stub"], "keywords": []}
    if stage == "claims":
        return {"claims": []}
    raise ValueError(f"unknown stage {stage!r}")


def load_answer_fn(spec: str, taxonomy_path: Path | None = None) -> AnswerFn:
    """``offline``, ``stub``, or ``package.module:function``."""
    if spec == "offline":
        return offline_answer_fn(taxonomy_path)
    if spec == "stub":
        return stub_answer
    module, _, name = spec.partition(":")
    if not name:
        raise ValueError(f"answer spec {spec!r}: expected offline, stub or module:function")
    return getattr(importlib.import_module(module), name)


# --- rate limits, fault schedule, counters ------------------------------------------------


class RateLimiter:
    """RPM / TPM over a sliding 60 s window of admitted requests (event-loop thread only)."""

    def __init__(self, rpm: int | None, tpm: int | None, window_s: float = WINDOW_S) -> None:
        self.rpm, self.tpm, self.window_s = rpm, tpm, window_s
        self._times: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._token_sum = 0

    def admit(self, now: float, tokens: int) -> tuple[float, str] | None:
        """Record the request and return None, or return (seconds to wait, limit kind)."""
        self._prune(now)
        if self.rpm is not None and len(self._times) >= self.rpm:
            return self._times[-self.rpm] + self.window_s - now, "requests"
        if self.tpm is not None:
            if tokens > self.tpm:
                return self.window_s, "request_too_large"
            wait = self._token_wait(now, tokens)
            if wait > 0:
                return wait, "tokens"
        self._times.append(now)
        self._tokens.append((now, tokens))
        self._token_sum += tokens
        return None

    def _prune(self, now: float) -> None:
        horizon = now - self.window_s
        while self._times and self._times[0] <= horizon:
            self._times.popleft()
        while self._tokens and self._tokens[0][0] <= horizon:
            self._token_sum -= self._tokens.popleft()[1]

    def _token_wait(self, now: float, tokens: int) -> float:
        excess = self._token_sum + tokens - (self.tpm or 0)
        if excess <= 0:
            return 0.0
        freed = 0
        for t, n in self._tokens:  # oldest first: wait until enough of them have expired
            freed += n
            if freed >= excess:
                return t + self.window_s - now
        return self.window_s  # unreachable while tokens <= tpm


class _Stats:
    """Counters mutated on the loop thread and snapshotted from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.http_requests = 0
        self.requests = 0
        self.reasks = 0
        self.connections = 0
        self.by_status: Counter[int] = Counter()
        self.faults: Counter[str] = Counter()
        self.rate_limited: Counter[str] = Counter()
        self.by_key: Counter[str] = Counter()
        self.by_stage: Counter[str] = Counter()
        self.faults_by_key: Counter[str] = Counter()
        self.in_flight = self.in_flight_max = 0
        self.active = self.active_max = 0
        # Compact float arrays: a long benchmark keeps one timestamp per request.
        self.arrivals = array("d")
        self.admitted = array("d")
        self.prompt_tokens = self.completion_tokens = 0
        self.trickles_cut = 0

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "http_requests": self.http_requests,
                "requests": self.requests,
                "reasks": self.reasks,
                "connections": self.connections,
                "by_status": dict(self.by_status),
                "faults": dict(self.faults),
                "rate_limited": dict(self.rate_limited),
                "by_key": dict(self.by_key),
                "by_stage": dict(self.by_stage),
                "in_flight": self.in_flight,
                "in_flight_max": self.in_flight_max,
                "active_max": self.active_max,
                "arrivals": list(self.arrivals),
                "admitted": list(self.admitted),
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "trickles_cut": self.trickles_cut,
            }


# --- HTTP plumbing ------------------------------------------------------------------------


@dataclass
class _Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool
    query: str = ""  # the raw query string (after '?'), for list endpoints


@dataclass
class _Response:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    trickle_s: float | None = None  # send the body one byte per this many seconds

    def head(self, keep_alive: bool) -> bytes:
        lines = [
            f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Unknown')}",
            f"content-type: {self.content_type}",
            f"content-length: {len(self.body)}",
            f"connection: {'keep-alive' if keep_alive else 'close'}",
            *(f"{k}: {v}" for k, v in self.headers.items()),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def encode(self, keep_alive: bool) -> bytes:
        return self.head(keep_alive) + self.body


class _Drop(Exception):
    """Close the connection without sending a response."""


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _json(status: int, payload: Any, headers: dict[str, str] | None = None) -> _Response:
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    return _Response(status, body, headers or {})


def _error(
    status: int, message: str, type_: str, code: str | None, headers: dict[str, str] | None = None
) -> _Response:
    payload = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return _json(status, payload, headers)


def _retry_headers(wait_s: float) -> dict[str, str]:
    # Retry-After is integer seconds (rounded up so waiting it is always enough).
    return {
        "retry-after": str(max(1, math.ceil(wait_s))),
        "retry-after-ms": str(max(1, math.ceil(wait_s * 1000))),
    }


async def _read_request(
    reader: asyncio.StreamReader, body_limit: Callable[[str], int] | None = None
) -> _Request | None:
    """One HTTP/1.1 request from the stream, or None when the peer closed between requests.

    ``body_limit(path)`` is the largest body accepted for that path (default ``_MAX_BODY``).
    """
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise _BadRequest(400, "incomplete request head") from exc
        return None
    except asyncio.LimitOverrunError as exc:
        raise _BadRequest(431, "request head too large") from exc
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, version = lines[0].split(" ", 2)
    except ValueError as exc:
        raise _BadRequest(400, "malformed request line") from exc
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    path, _, query = target.partition("?")
    limit = body_limit(path) if body_limit is not None else _MAX_BODY
    body = await _read_body(reader, headers, limit)
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return _Request(method, path, headers, body, keep_alive, query)


async def _read_body(
    reader: asyncio.StreamReader, headers: dict[str, str], limit: int = _MAX_BODY
) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader, limit)
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError as exc:
        raise _BadRequest(400, "bad content-length") from exc
    if length > limit or length < 0:
        raise _BadRequest(413, f"body larger than {limit} bytes")
    return await reader.readexactly(length) if length else b""


async def _read_chunked(reader: asyncio.StreamReader, limit: int = _MAX_BODY) -> bytes:
    parts: list[bytes] = []
    size_total = 0
    while True:  # bounded by limit: every chunk adds its size or ends the loop
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # trailer section (assumed empty) ends the body
            return b"".join(parts)
        size_total += size
        if size_total > limit:
            raise _BadRequest(413, f"body larger than {limit} bytes")
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


# --- the server ---------------------------------------------------------------------------


class OpenAIServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 in a background thread."""

    def __init__(self, config: ServerConfig | None = None, answer_fn: AnswerFn | None = None):
        self.config = config or ServerConfig()
        self._answer_fn = answer_fn
        self._stats = _Stats()
        self._limiter = RateLimiter(self.config.rpm, self.config.tpm)
        self._memo: dict[str, tuple[dict[str, Any], str]] = {}
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._conns: set[asyncio.Task[Any]] = set()
        self._slots: asyncio.Semaphore | None = None
        self._port: int | None = None
        from bench.batch_api import BatchAPI  # late: bench.batch_api imports this module

        self._batch_api = BatchAPI(self, self.config.batch)

    # lifecycle

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``; only valid after ``start()``."""
        if self._port is None:
            raise RuntimeError("server not started")
        return f"http://{HOST}:{self._port}/v1"

    def start(self, timeout_s: float = 10.0) -> str:
        """Bind a port, serve in a background thread, and return the base URL."""
        if self._thread is not None:
            raise RuntimeError("server already started")
        if self._answer_fn is None:
            self._answer_fn = offline_answer_fn()  # fail here, not on the first request
        self._thread = threading.Thread(target=self._run, name="openai-bench-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise RuntimeError("server did not start in time")
        if self._startup_error is not None:
            raise RuntimeError(f"server failed to start: {self._startup_error}")
        return self.base_url

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop serving; in-flight (even stalled) requests are cancelled; idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
            loop.call_soon_threadsafe(self._stop_event.set)  # type: ignore[union-attr]
        thread.join(timeout_s)

    def __enter__(self) -> OpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> dict[str, Any]:
        """A plain-dict snapshot of the counters (safe from any thread); Batch API ones under "batch"."""
        return {**self._stats.snapshot(), "batch": self._batch_api.stats()}

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # surfaced to start() if it happens while starting
            self._startup_error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        if self.config.max_concurrent:
            self._slots = asyncio.Semaphore(self.config.max_concurrent)
        server = await asyncio.start_server(
            self._handle_connection, HOST, self.config.port, backlog=2048
        )
        self._port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stop_event.wait()
        finally:
            server.close()
            await self._cancel_connections()

    async def _cancel_connections(self) -> None:
        tasks = list(self._conns)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)

    # connections

    async def _handle_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conns.add(task)
        with self._stats.lock:
            self._stats.connections += 1
        try:
            await self._serve_requests(reader, writer)
        except (_Drop, ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except asyncio.CancelledError:
            # Only stop() cancels these tasks. Swallow it: Python 3.11's stream callback calls
            # task.exception() on a cancelled task and logs a spurious traceback otherwise.
            pass
        finally:
            self._conns.discard(task)  # type: ignore[arg-type]
            writer.close()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        for _ in range(_MAX_REQUESTS_PER_CONN):
            try:
                async with asyncio.timeout(self.config.idle_timeout_s):
                    request = await _read_request(reader, self._batch_api.body_limit)
            except _BadRequest as exc:
                writer.write(
                    _error(exc.status, str(exc), "invalid_request_error", None).encode(False)
                )
                await writer.drain()
                return
            if request is None:
                return
            response = await self._dispatch(request)
            if response.trickle_s is not None:
                await self._trickle(reader, writer, response)
                return  # a trickled response always closes its connection
            else:
                writer.write(response.encode(request.keep_alive))
                await writer.drain()
            if not request.keep_alive:
                return

    async def _trickle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, response: _Response
    ) -> None:
        """Headers at once, then the body byte by byte, then close; counts client hang-ups."""
        assert response.trickle_s is not None
        # The client sends nothing while it waits for this response: any read result (EOF
        # included) means it gave up on it. (Closing afterwards means no byte of a next
        # request can be lost to this read.)
        hung_up = asyncio.ensure_future(reader.read(1))
        try:
            writer.write(response.head(keep_alive=False))
            await writer.drain()
            for i in range(len(response.body)):
                writer.write(response.body[i : i + 1])
                await writer.drain()
                if i + 1 < len(response.body):
                    done, _ = await asyncio.wait({hung_up}, timeout=response.trickle_s)
                    if done:
                        break
            else:
                return
        except ConnectionError:
            pass  # the client hung up before (or while) the bytes went out
        finally:
            hung_up.cancel()
        with self._stats.lock:
            self._stats.trickles_cut += 1

    async def _dispatch(self, request: _Request) -> _Response:
        with self._stats.lock:
            self._stats.http_requests += 1
        path = request.path.rstrip("/")
        path = path[3:] if path.startswith("/v1/") else path
        if path == "/chat/completions":
            if request.method != "POST":
                return _error(405, "use POST", "invalid_request_error", "method_not_allowed")
            return await self._chat(request)
        if path == "/models" or path.startswith("/models/"):
            if request.method != "GET":
                return _error(405, "use GET", "invalid_request_error", "method_not_allowed")
            return self._models(request, path)
        if path.lstrip("/").split("/", 1)[0] in ("files", "batches"):  # bench/batch_api.py
            return self._auth_error(request) or self._batch_api.handle(request, path)
        if path == "/_bench/stats":
            return _json(200, self.stats())
        return _error(
            404, f"Unknown request URL: {request.path}", "invalid_request_error", "unknown_url"
        )

    def _auth_error(self, request: _Request) -> _Response | None:
        cfg = self.config
        header = request.headers.get("authorization", "")
        if cfg.basic_auth is not None:
            if header == "Basic " + base64.b64encode(cfg.basic_auth.encode()).decode():
                return None
            message = "Incorrect user name or password."
        elif cfg.api_key is None or header == f"Bearer {cfg.api_key}":
            return None
        else:
            given = header.removeprefix("Bearer ")
            masked = f"{given[:3]}...{given[-4:]}" if len(given) > 8 else "***"
            message = f"Incorrect API key provided: {given if cfg.echo_credentials else masked}."
        return self._echo(request, _error(401, message, "invalid_request_error", "invalid_api_key"))

    def _echo(self, request: _Request, response: _Response) -> _Response:
        """With ``echo_credentials``, an error body that quotes the request's credentials."""
        if not self.config.echo_credentials or response.status < 400:
            return response
        header = request.headers.get("authorization", "")
        echoed = f" (request had Authorization: {header!r}"
        if header.startswith("Basic "):
            with contextlib.suppress(binascii.Error, UnicodeDecodeError):
                echoed += f", credentials {base64.b64decode(header[6:]).decode()!r}"
        payload = json.loads(response.body)
        payload["error"]["message"] += echoed + ")"
        return _json(response.status, payload, response.headers)

    def _models(self, request: _Request, path: str) -> _Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        mode = self.config.models
        if mode == "missing":
            return _error(
                404, f"Unknown request URL: {request.path}", "invalid_request_error", None
            )
        if mode == "html":
            return _Response(200, HTML_PAGE.encode(), content_type="text/html")
        if mode == "wrong_shape":
            return _json(200, {"status": "ok", "version": "1.0"})
        if mode == "forbidden":
            return self._forbidden(request)
        if mode == "no_model_scope":  # a restricted key: chat allowed, listing models not
            return _error(
                403,
                "You have insufficient permissions for this operation. Missing scopes: "
                "api.model.read.",
                "invalid_request_error",
                None,
            )
        model = {"id": self.config.model, "object": "model", "created": 0, "owned_by": "bench"}
        if path == "/models":
            return _json(200, {"object": "list", "data": [model]})
        if path == "/models/" + self.config.model:
            return _json(200, model)
        return _error(
            404,
            f"The model '{path[8:]}' does not exist",
            "invalid_request_error",
            "model_not_found",
        )

    # chat completions

    async def _chat(self, request: _Request) -> _Response:
        now = time.monotonic()
        with self._stats.lock:
            s = self._stats
            s.requests += 1
            s.arrivals.append(now)
            s.in_flight += 1
            s.in_flight_max = max(s.in_flight_max, s.in_flight)
        response: _Response | None = None
        try:
            response = await self._chat_response(request, now)  # _Drop propagates: no status
            response = self._echo(request, response)
        finally:
            # One lock section: a reader who sees in_flight == 0 sees every status counted.
            with self._stats.lock:
                self._stats.in_flight -= 1
                if response is not None:
                    self._stats.by_status[response.status] += 1
        return response

    def _forbidden(self, request: _Request) -> _Response:
        return self._echo(
            request, _error(403, "Project does not have access.", "invalid_request_error", None)
        )

    async def _chat_response(self, request: _Request, now: float) -> _Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        if self.config.models == "forbidden":  # the key's project has no access at all
            return self._forbidden(request)
        try:
            body = json.loads(request.body)
            chat = plain_chat(body) or parse_chat(body)
            if chat.stage == PLAIN_CHAT:
                answer, content = {}, PLAIN_ANSWER
            else:
                answer, content = self._answer(chat.stage, chat.abstract)
        except ValueError as exc:  # includes JSONDecodeError and unknown stages
            return _error(400, str(exc), "invalid_request_error", None)
        except Exception as exc:  # a broken answer_fn is the server's fault, not the client's
            return _error(500, f"answer_fn failed: {exc!r}", "server_error", None)
        prompt_tokens = estimate_tokens(chat.prompt_chars)
        limited = self._limiter.admit(now, prompt_tokens + estimate_tokens(len(content)))
        if limited is not None:
            return self._rate_limited(chat, *limited)
        key = request_key(chat.stage, chat.abstract)
        attempt, fault = self._admit(key, chat)
        await self._delay(fault, key, attempt)
        if fault in ("429", "500", "503", *PERMANENT_FAULTS):
            return self._fault_error(fault)
        if chat.stage == PLAIN_CHAT and fault in CONTENT_FAULTS:
            fault = None
        message = fault_message(fault, chat.stage, chat.abstract, answer, content)
        response = self._completion(chat, key, attempt, prompt_tokens, *message)
        if fault == "trickle":
            response.trickle_s = self.config.trickle_s
        elif fault in MALFORMED_FAULTS:
            return malform(fault, response)
        return response

    def _answer(self, stage: str, abstract: str) -> tuple[dict[str, Any], str]:
        # answer_fn is assumed deterministic, so retries and re-asks reuse the first answer.
        key = request_key(stage, abstract)
        hit = self._memo.get(key)
        if hit is None:
            answer = self._answer_fn(stage, abstract)  # type: ignore[misc]
            if len(self._memo) >= _MAX_MEMO:
                self._memo.clear()
            # A str is the raw content itself (a hostile answer no dict can express).
            text = answer if isinstance(answer, str) else json.dumps(answer)
            hit = self._memo[key] = ({} if isinstance(answer, str) else answer, text)
        return hit

    def _rate_limited(self, chat: ChatRequest, wait_s: float, kind: str) -> _Response:
        with self._stats.lock:
            self._stats.rate_limited[kind] += 1
        limit = self.config.rpm if kind == "requests" else self.config.tpm
        message = (
            f"Rate limit reached for {chat.model or self.config.model} on {kind} per min: "
            f"Limit {limit}. Please try again in {wait_s:.3f}s."
        )
        if kind == "request_too_large":
            message = f"Request too large: it needs more tokens than the TPM limit {limit}."
        type_ = "requests" if kind == "requests" else "tokens"
        return _error(429, message, type_, "rate_limit_exceeded", _retry_headers(wait_s))

    def _admit(self, key: str, chat: ChatRequest) -> tuple[int, str | None]:
        """Count an admitted request and decide its fault; returns (attempt number, fault)."""
        with self._stats.lock:
            s = self._stats
            s.admitted.append(time.monotonic())
            index = len(s.admitted) - 1
            s.by_key[key] += 1
            s.by_stage[chat.stage] += 1
            s.reasks += chat.is_reask
            attempt = s.by_key[key]
            fault = self._decide(key, attempt, index, chat.is_reask, s.faults_by_key[key])
            if fault is not None:
                s.faults[fault] += 1
                s.faults_by_key[key] += 1
        return attempt, fault

    def _decide(
        self, key: str, attempt: int, index: int, is_reask: bool, faulted: int
    ) -> str | None:
        cfg = self.config
        if index < len(cfg.script):
            return None if cfg.script[index] == "ok" else cfg.script[index]
        if cfg.max_faults_per_key is not None and faulted >= cfg.max_faults_per_key:
            return None
        fault = _pick(unit_draw(cfg.seed, key, attempt, "transport"), cfg.faults, ATTEMPT_FAULTS)
        if fault is not None:
            return fault
        if cfg.self_correct:
            if is_reask:
                return None
            return _pick(unit_draw(cfg.seed, key, attempt, "content"), cfg.faults, CONTENT_FAULTS)
        # Not self-correcting: the draw is per key, so a faulted key stays faulted.
        return _pick(unit_draw(cfg.seed, key, "content"), cfg.faults, CONTENT_FAULTS)

    async def _delay(self, fault: str | None, key: str, attempt: int) -> None:
        cfg = self.config
        if fault == "stall":
            # Outside the concurrency slot: a stalled request must not block the others.
            await asyncio.sleep(cfg.stall_s)
            raise _Drop
        jitter = cfg.latency_jitter * (2 * unit_draw(cfg.seed, key, attempt, "latency") - 1)
        delay = max(0.0, cfg.latency + jitter)
        async with self._slot():
            if delay > 0:
                await asyncio.sleep(delay)
        if fault == "drop":
            raise _Drop

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        if self._slots is not None:
            await self._slots.acquire()
        with self._stats.lock:
            s = self._stats
            s.active += 1
            s.active_max = max(s.active_max, s.active)
        try:
            yield
        finally:
            with self._stats.lock:
                self._stats.active -= 1
            if self._slots is not None:
                self._slots.release()

    def _fault_error(self, fault: str) -> _Response:
        if fault == "429":
            headers = _retry_headers(self.config.retry_after_s)
            return _error(
                429, "Rate limit reached (injected).", "requests", "rate_limit_exceeded", headers
            )
        if fault == "503":
            return _error(503, "The server is overloaded (injected).", "server_error", None)
        if fault == "401":
            return _error(
                401,
                "The API key was revoked (injected).",
                "invalid_request_error",
                "invalid_api_key",
            )
        if fault == "501":
            return _error(
                501, "response_format is not implemented (injected).", "server_error", None
            )
        return _error(
            500, "The server had an error processing your request (injected).", "server_error", None
        )

    def _completion(
        self,
        chat: ChatRequest,
        key: str,
        attempt: int,
        prompt_tokens: int,
        content: str | None,
        refusal: str | None,
        finish_reason: str,
    ) -> _Response:
        completion_tokens = estimate_tokens(len(content or refusal or ""))
        with self._stats.lock:
            self._stats.prompt_tokens += prompt_tokens
            self._stats.completion_tokens += completion_tokens
        digest = hashlib.sha256(f"{self.config.seed}:{key}:{attempt}".encode()).hexdigest()
        message = {"role": "assistant", "content": content, "refusal": refusal, "annotations": []}
        payload = {
            "id": f"chatcmpl-{digest[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": chat.model or self.config.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": "fp_bench",
        }
        return _json(200, payload, {"x-request-id": f"req_{digest[24:48]}"})


# --- command line -------------------------------------------------------------------------


def _fault_arg(text: str) -> tuple[str, float]:
    name, sep, rate = text.partition("=")
    if not sep or name not in FAULT_NAMES:
        raise argparse.ArgumentTypeError(f"expected NAME=RATE with NAME in {FAULT_NAMES}")
    return name, float(rate)


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface of ``python -m bench.openai_server``."""
    p = argparse.ArgumentParser(
        prog="python -m bench.openai_server",
        description="OpenAI-compatible chat-completions test server on 127.0.0.1.",
    )
    p.add_argument("--port", type=int, default=0, help="0 = any free port (default)")
    p.add_argument("--model", default="bench-model")
    p.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    p.add_argument("--latency-jitter", type=float, default=0.0, help="uniform +- seconds")
    p.add_argument("--max-concurrent", type=int, help="in-flight cap; extra requests queue")
    p.add_argument("--rpm", type=int, help="requests per minute (sliding 60 s window)")
    p.add_argument("--tpm", type=int, help="tokens per minute (sliding 60 s window)")
    p.add_argument("--api-key", help="require 'Authorization: Bearer KEY'")
    p.add_argument("--fault", type=_fault_arg, action="append", default=[], metavar="NAME=RATE")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stall-s", type=float, default=30.0)
    p.add_argument("--trickle-s", type=float, default=1.0, help="seconds per byte of a trickle")
    p.add_argument("--echo-credentials", action="store_true", help="quote them in error bodies")
    p.add_argument("--basic-auth", metavar="USER:PASSWORD", help="require HTTP Basic auth")
    p.add_argument("--models", choices=MODELS_MODES, default="ok", help="GET /models behaviour")
    p.add_argument("--retry-after-s", type=float, default=1.0, help="for injected 429s")
    p.add_argument("--max-faults-per-key", type=int)
    p.add_argument("--no-self-correct", action="store_true", help="fault re-asks too")
    p.add_argument("--script", default="", help="comma-separated, e.g. 429,ok,500")
    p.add_argument("--answer", default="offline", help="offline | stub | module:function")
    p.add_argument("--taxonomy", type=Path, help="taxonomy YAML for --answer offline")
    p.add_argument("--duration", type=float, help="exit after this many seconds")
    p.add_argument("--stats-file", type=Path, help="write stats() as JSON here on exit")
    p.add_argument("--exit-with-parent", action="store_true", help="stop when the process that started this one ends (a killed benchmark leaves no server behind)")  # fmt: skip
    from bench.batch_api import add_cli_arguments

    add_cli_arguments(p)  # --batch-*
    return p


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    """A ServerConfig from parsed command-line arguments."""
    from bench.batch_api import config_from_args as batch_config_from_args

    return ServerConfig(
        port=args.port,
        model=args.model,
        latency=args.latency,
        latency_jitter=args.latency_jitter,
        max_concurrent=args.max_concurrent,
        rpm=args.rpm,
        tpm=args.tpm,
        api_key=args.api_key,
        faults=dict(args.fault),
        seed=args.seed,
        stall_s=args.stall_s,
        trickle_s=args.trickle_s,
        echo_credentials=args.echo_credentials,
        basic_auth=args.basic_auth,
        models=args.models,
        retry_after_s=args.retry_after_s,
        max_faults_per_key=args.max_faults_per_key,
        self_correct=not args.no_self_correct,
        script=tuple(s.strip() for s in args.script.split(",") if s.strip()),
        batch=batch_config_from_args(args),
    )


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM / SIGINT (or --duration); the base URL is the first stdout line."""
    args = build_parser().parse_args(argv)
    server = OpenAIServer(config_from_args(args), load_answer_fn(args.answer, args.taxonomy))
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    print(server.start(), flush=True)
    deadline = time.monotonic() + args.duration if args.duration else math.inf
    parent = os.getppid()
    while not stopping.wait(0.2) and time.monotonic() < deadline:
        if args.exit_with_parent and os.getppid() != parent:  # re-parented: the parent died
            break
    server.stop()
    if args.stats_file:
        args.stats_file.write_text(json.dumps(server.stats()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
