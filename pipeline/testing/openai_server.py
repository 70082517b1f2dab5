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
- ``POST /v1/embeddings`` answers deterministic vectors (``pipeline/testing/embeddings.py``),
  counted under the stage ``embeddings``; no faults or limits apply to it.
- A chat request with no stage marker, no schema and no abstract (a client's connectivity
  probe) is answered ``PLAIN_ANSWER`` and counted under the stage ``chat``.

For tests that must not depend on how busy the machine is, three hooks replace the clock
(``OpenAIServer(..., hold=, held=, sleep=)``):

- ``hold(stage, abstract)`` may return a ``threading.Event``: the request waits for it inside
  its concurrency slot (counted in ``in_flight`` and ``active``) before it is answered. A
  gate that orders requests explicitly, where a latency would only make an order likely.
- ``held(key)`` is called (on the server's thread) once the server holds a request the
  client can only end with its own timeout: a stall as it starts, a trickle once its head
  and first body bytes are out. A test can end the client's bound on that event instead
  of waiting for the clock.
- ``sleep`` (default ``asyncio.sleep``) is what latencies and stalls wait with.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import functools
import hashlib
import json
import threading
import time
from array import array
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.testing.answers import AnswerFn, offline_answer_fn
from pipeline.testing.batch_api import BatchAPI, BatchConfig
from pipeline.testing.chat import (
    PLAIN_ANSWER,
    PLAIN_CHAT,
    ChatRequest,
    estimate_tokens,
    parse_chat,
    plain_chat,
    request_key,
)
from pipeline.testing.embeddings import embeddings_response
from pipeline.testing.faults import (
    ATTEMPT_FAULTS,
    CONTENT_FAULTS,
    FAULT_NAMES,
    HTML_PAGE,
    MALFORMED_FAULTS,
    PERMANENT_FAULTS,
    fault_message,
    malform,
    pick_fault,
    unit_draw,
)
from pipeline.testing.http import (
    BadRequest,
    Drop,
    Request,
    Response,
    error_response,
    json_response,
    read_request,
    retry_headers,
)
from pipeline.testing.ratelimit import RateLimiter

HOST = "127.0.0.1"
# A trickle counts as held (the `held` hook) once this many body bytes are out: the client
# is reading a body that keeps coming, so only a bound on the whole request can end it.
HELD_AFTER_BYTES = 2
MODELS_MODES = ("ok", "missing", "html", "wrong_shape", "forbidden", "no_model_scope")
_MAX_REQUESTS_PER_CONN = 1_000_000
_FILE_CHUNK = 1 << 20  # bytes per write of a body sent from a file
_MAX_MEMO = 50_000


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
    batch: BatchConfig | None = None  # Files + Batches API behaviour (batch_api.py)

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


# --- the server ---------------------------------------------------------------------------


class OpenAIServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        config: ServerConfig | None = None,
        answer_fn: AnswerFn | None = None,
        *,
        hold: Callable[[str, str], threading.Event | None] | None = None,
        held: Callable[[str], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.config = config or ServerConfig()
        self._answer_fn = answer_fn
        self._hold, self._held, self._sleep = hold, held, sleep
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
        self._batch_api = BatchAPI(self.answer_line, self.config.seed, self.config.batch)

    # lifecycle

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``; only valid after ``start()``."""
        if self._port is None:
            raise RuntimeError("server not started")
        return f"http://{HOST}:{self._port}/v1"

    def start(self, timeout_s: float = 120.0) -> str:
        """Bind a port, serve in a background thread, and return the base URL.

        `timeout_s` only guards against a hang: it returns as soon as the port is bound,
        which on a busy machine can take seconds."""
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

    def stop(self, timeout_s: float = 120.0) -> None:
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
        except (Drop, ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except asyncio.CancelledError:
            # Only stop() cancels these tasks. Swallow it: Python 3.11's stream callback calls
            # task.exception() on a cancelled task and logs a spurious traceback otherwise.
            pass
        finally:
            self._conns.discard(task)
            writer.close()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        for _ in range(_MAX_REQUESTS_PER_CONN):
            try:
                async with asyncio.timeout(self.config.idle_timeout_s):
                    request = await read_request(reader, self._batch_api.body_limit)
            except BadRequest as exc:
                writer.write(
                    error_response(exc.status, str(exc), "invalid_request_error", None).encode(
                        False
                    )
                )
                await writer.drain()
                return
            if request is None:
                return
            response = await self._dispatch(request)
            if response.trickle_s is not None:
                await self._trickle(reader, writer, response)
                return  # a trickled response always closes its connection
            elif response.body_path is not None:
                await self._send_file(writer, response, request.keep_alive)
            else:
                writer.write(response.encode(request.keep_alive))
                await writer.drain()
            if not request.keep_alive:
                return

    async def _send_file(
        self, writer: asyncio.StreamWriter, response: Response, keep_alive: bool
    ) -> None:
        """Headers, then the body file in chunks: a big file is never held in memory."""
        assert response.body_path is not None
        writer.write(response.head(keep_alive))
        with response.body_path.open("rb") as fh:
            while chunk := fh.read(_FILE_CHUNK):
                writer.write(chunk)
                await writer.drain()
        await writer.drain()

    async def _trickle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, response: Response
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
                if i + 1 == HELD_AFTER_BYTES and response.held is not None:
                    response.held()
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

    async def _dispatch(self, request: Request) -> Response:
        with self._stats.lock:
            self._stats.http_requests += 1
        path = request.path.rstrip("/")
        path = path[3:] if path.startswith("/v1/") else path
        if path == "/chat/completions":
            if request.method != "POST":
                return error_response(
                    405, "use POST", "invalid_request_error", "method_not_allowed"
                )
            return await self._chat(request)
        if path == "/models" or path.startswith("/models/"):
            if request.method != "GET":
                return error_response(405, "use GET", "invalid_request_error", "method_not_allowed")
            return self._models(request, path)
        if path == "/embeddings":  # embeddings.py: deterministic hashed bag-of-words vectors
            if request.method != "POST":
                return error_response(
                    405, "use POST", "invalid_request_error", "method_not_allowed"
                )
            with self._stats.lock:
                self._stats.by_stage["embeddings"] += 1
            return self._auth_error(request) or embeddings_response(request)
        if path.lstrip("/").split("/", 1)[0] in ("files", "batches"):  # batch_api.py
            return self._auth_error(request) or self._batch_api.handle(request, path)
        if path == "/_bench/stats":
            return json_response(200, self.stats())
        return error_response(
            404, f"Unknown request URL: {request.path}", "invalid_request_error", "unknown_url"
        )

    def _auth_error(self, request: Request) -> Response | None:
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
        return self._echo(
            request, error_response(401, message, "invalid_request_error", "invalid_api_key")
        )

    def _echo(self, request: Request, response: Response) -> Response:
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
        return json_response(response.status, payload, response.headers)

    def _models(self, request: Request, path: str) -> Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        mode = self.config.models
        if mode == "missing":
            return error_response(
                404, f"Unknown request URL: {request.path}", "invalid_request_error", None
            )
        if mode == "html":
            return Response(200, HTML_PAGE.encode(), content_type="text/html")
        if mode == "wrong_shape":
            return json_response(200, {"status": "ok", "version": "1.0"})
        if mode == "forbidden":
            return self._forbidden(request)
        if mode == "no_model_scope":  # a restricted key: chat allowed, listing models not
            return error_response(
                403,
                "You have insufficient permissions for this operation. Missing scopes: "
                "api.model.read.",
                "invalid_request_error",
                None,
            )
        model = {"id": self.config.model, "object": "model", "created": 0, "owned_by": "bench"}
        if path == "/models":
            return json_response(200, {"object": "list", "data": [model]})
        if path == "/models/" + self.config.model:
            return json_response(200, model)
        return error_response(
            404,
            f"The model '{path[8:]}' does not exist",
            "invalid_request_error",
            "model_not_found",
        )

    # chat completions

    async def _chat(self, request: Request) -> Response:
        now = time.monotonic()
        with self._stats.lock:
            s = self._stats
            s.requests += 1
            s.arrivals.append(now)
            s.in_flight += 1
            s.in_flight_max = max(s.in_flight_max, s.in_flight)
        response: Response | None = None
        try:
            response = await self._chat_response(request, now)  # Drop propagates: no status
            response = self._echo(request, response)
        finally:
            # One lock section: a reader who sees in_flight == 0 sees every status counted.
            with self._stats.lock:
                self._stats.in_flight -= 1
                if response is not None:
                    self._stats.by_status[response.status] += 1
        return response

    def _forbidden(self, request: Request) -> Response:
        return self._echo(
            request,
            error_response(403, "Project does not have access.", "invalid_request_error", None),
        )

    async def _chat_response(self, request: Request, now: float) -> Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        if self.config.models == "forbidden":  # the key's project has no access at all
            return self._forbidden(request)
        answer: dict[str, Any]
        try:
            body = json.loads(request.body)
            chat = plain_chat(body) or parse_chat(body)
            if chat.stage == PLAIN_CHAT:
                answer, content = {}, PLAIN_ANSWER
            else:
                answer, content = self._answer(chat.stage, chat.abstract)
        except ValueError as exc:  # includes JSONDecodeError and unknown stages
            return error_response(400, str(exc), "invalid_request_error", None)
        except Exception as exc:  # a broken answer_fn is the server's fault, not the client's
            return error_response(500, f"answer_fn failed: {exc!r}", "server_error", None)
        prompt_tokens = estimate_tokens(chat.prompt_chars)
        limited = self._limiter.admit(now, prompt_tokens + estimate_tokens(len(content)))
        if limited is not None:
            return self._rate_limited(chat, *limited)
        key = request_key(chat.stage, chat.abstract)
        attempt, fault = self._admit(key, chat)
        await self._delay(fault, chat, key, attempt)
        if fault in ("429", "500", "503", *PERMANENT_FAULTS):
            return self._fault_error(fault)
        if chat.stage == PLAIN_CHAT and fault in CONTENT_FAULTS:
            fault = None
        message = fault_message(fault, chat.stage, chat.abstract, answer, content)
        response = self._completion(chat, key, attempt, prompt_tokens, *message)
        if fault == "trickle":
            response.trickle_s = self.config.trickle_s
            if self._held is not None:
                response.held = functools.partial(self._held, key)
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

    def answer_line(self, body: dict[str, Any]) -> Response | None:
        """One Batch API line's answer: no latency or rate limits apply; None when it stalls."""
        try:
            chat = parse_chat(body)
            answer, content = self._answer(chat.stage, chat.abstract)
        except ValueError as exc:
            return error_response(400, str(exc), "invalid_request_error", None)
        except Exception as exc:  # a broken answer_fn is the server's fault
            return error_response(500, f"answer_fn failed: {exc!r}", "server_error", None)
        key = request_key(chat.stage, chat.abstract)
        attempt, fault = self._admit(key, chat)
        if fault in ("stall", "drop"):
            return None
        if fault in ("429", "500", "503"):
            return self._fault_error(fault)
        message = fault_message(fault, chat.stage, chat.abstract, answer, content)
        prompt_tokens = estimate_tokens(chat.prompt_chars)
        return self._completion(chat, key, attempt, prompt_tokens, *message)

    def _rate_limited(self, chat: ChatRequest, wait_s: float, kind: str) -> Response:
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
        return error_response(429, message, type_, "rate_limit_exceeded", retry_headers(wait_s))

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
        fault = pick_fault(
            unit_draw(cfg.seed, key, attempt, "transport"), cfg.faults, ATTEMPT_FAULTS
        )
        if fault is not None:
            return fault
        if cfg.self_correct:
            if is_reask:
                return None
            return pick_fault(
                unit_draw(cfg.seed, key, attempt, "content"), cfg.faults, CONTENT_FAULTS
            )
        # Not self-correcting: the draw is per key, so a faulted key stays faulted.
        return pick_fault(unit_draw(cfg.seed, key, "content"), cfg.faults, CONTENT_FAULTS)

    async def _delay(self, fault: str | None, chat: ChatRequest, key: str, attempt: int) -> None:
        cfg = self.config
        if fault == "stall":
            if self._held is not None:
                self._held(key)
            # Outside the concurrency slot: a stalled request must not block the others.
            await self._sleep(cfg.stall_s)
            raise Drop
        gate = self._hold(chat.stage, chat.abstract) if self._hold is not None else None
        jitter = cfg.latency_jitter * (2 * unit_draw(cfg.seed, key, attempt, "latency") - 1)
        delay = max(0.0, cfg.latency + jitter)
        async with self._slot():
            if gate is not None:
                await _opened(gate)
            if delay > 0:
                await self._sleep(delay)
        if fault == "drop":
            raise Drop

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

    def _fault_error(self, fault: str) -> Response:
        if fault == "429":
            headers = retry_headers(self.config.retry_after_s)
            return error_response(
                429, "Rate limit reached (injected).", "requests", "rate_limit_exceeded", headers
            )
        if fault == "503":
            return error_response(503, "The server is overloaded (injected).", "server_error", None)
        if fault == "401":
            return error_response(
                401,
                "The API key was revoked (injected).",
                "invalid_request_error",
                "invalid_api_key",
            )
        if fault == "501":
            return error_response(
                501, "response_format is not implemented (injected).", "server_error", None
            )
        return error_response(
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
    ) -> Response:
        completion_tokens = estimate_tokens(len(content or refusal or ""))
        with self._stats.lock:
            self._stats.prompt_tokens += prompt_tokens
            self._stats.completion_tokens += completion_tokens
        digest = hashlib.sha256(f"{self.config.seed}:{key}:{attempt}".encode()).hexdigest()
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "refusal": refusal,
            "annotations": [],
        }
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
        return json_response(200, payload, {"x-request-id": f"req_{digest[24:48]}"})


async def _opened(gate: threading.Event) -> None:
    """Wait for a gate another thread opens, without blocking the server's event loop."""
    while not gate.is_set():
        await asyncio.sleep(0.005)
