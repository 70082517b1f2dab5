"""An OpenAI-compatible chat-completions server on 127.0.0.1 that replays prepared answers.

Unlike openai_server.py (which serializes an answer *dict*), the answer here is the
raw text a model would send: fenced, wrapped in prose, with numbers as JSON numbers, or
anything else. `answer(call)` returns that text for a `Call` (stage, abstract, messages, how
many times this stage of this abstract was asked before); the stage comes from
`response_format.json_schema.name` or the `(name: <stage>)` marker of json_object mode.

    with ReplayServer(lambda call: table[call.stage, call.abstract]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")

Options: `latency` (seconds per answer), `hold(call)` (an Event the answer waits for, for
event-ordered tests), and `prompt_cache`: a system message seen before and estimated at
>= 1,024 tokens is reported as cached in `usage.prompt_tokens_details.cached_tokens`, in
128-token steps, as OpenAI's automatic prompt caching does. Token counts are chars / 4.
`GET /models` lists `model`: by default gpt-4o-mini, the model the replayed answers imitate,
the project's default and the one realistic.py asks for (a chat request for any other
name is answered all the same).
Every request body is kept (`requests`), so a test can assert what was (or was not) sent.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOST = "127.0.0.1"
_STAGE = re.compile(r"\(name: (\w+)\)")
_ABSTRACT = re.compile(r"<abstract>\s*(.*?)\s*</abstract>", re.DOTALL)
CACHE_MIN_TOKENS = 1024
CACHE_STEP = 128


@dataclass(frozen=True)
class Call:
    """One chat-completions request as the replay table sees it."""

    stage: str
    abstract: str
    messages: list[dict[str, Any]]
    attempt: int  # 1 for the first request of this (stage, abstract), 2 for the next, ...

    @property
    def is_reask(self) -> bool:
        """True when the conversation already holds an answer (a re-ask)."""
        return any(m.get("role") == "assistant" for m in self.messages)


def estimate_tokens(text: str) -> int:
    """chars / 4, rounded up."""
    return math.ceil(len(text) / 4)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _stage(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema" and (fmt.get("json_schema") or {}).get("name"):
        return str(fmt["json_schema"]["name"])
    for m in body.get("messages", []):
        if m.get("role") in ("system", "developer") and (found := _STAGE.search(_text(m))):
            return found.group(1)
    raise ValueError("cannot tell the stage: no json_schema name and no '(name: ...)' marker")


class ReplayServer:
    """The server; start/stop it with `with`, or `start()` and `stop()`."""

    def __init__(
        self,
        answer: Callable[[Call], str | None],
        *,
        latency: float = 0.0,
        hold: Callable[[Call], threading.Event | None] | None = None,
        prompt_cache: bool = False,
        model: str = "gpt-4o-mini",
    ) -> None:
        self.answer = answer
        self.latency = latency
        self.hold = hold
        self.prompt_cache = prompt_cache
        self.model = model
        self.requests: list[dict[str, Any]] = []  # every chat-completions body, in order
        self.http_requests = 0
        self._attempts: Counter[tuple[str, str]] = Counter()
        self._seen_prefixes: set[str] = set()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:<port>/v1 (after start)."""
        assert self._httpd is not None, "server not started"
        return f"http://{HOST}:{self._httpd.server_address[1]}/v1"

    def start(self) -> str:
        """Serve in a background thread; returns the base URL."""
        self._httpd = ThreadingHTTPServer((HOST, 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ReplayServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        user = next((m for m in messages if m.get("role") == "user"), {})
        found = _ABSTRACT.search(_text(user))
        try:
            stage = _stage(body)
        except ValueError as exc:
            return 400, {"error": {"message": str(exc), "type": "invalid_request_error"}}
        if found is None:
            return 400, {"error": {"message": "no <abstract>", "type": "invalid_request_error"}}
        with self._lock:
            self.requests.append(body)
            key = (stage, found.group(1))
            self._attempts[key] += 1
            call = Call(stage, found.group(1), messages, self._attempts[key])
            system = next((_text(m) for m in messages if m.get("role") == "system"), "")
            cached = 0
            if self.prompt_cache and estimate_tokens(system) >= CACHE_MIN_TOKENS:
                if system in self._seen_prefixes:
                    cached = estimate_tokens(system) // CACHE_STEP * CACHE_STEP
                self._seen_prefixes.add(system)
        event = self.hold(call) if self.hold else None
        if event is not None:
            event.wait(600)  # a safety net against a hang; the test opens it
        if self.latency:
            time.sleep(self.latency)
        try:
            content = self.answer(call)
        except Exception as exc:  # a broken table is the server's fault: say so, at once
            return 500, {"error": {"message": f"replay failed: {exc!r}"[:300], "type": "server"}}
        prompt = sum(estimate_tokens(_text(m)) for m in messages)
        completion = estimate_tokens(content or "")
        return 200, {
            "id": f"chatcmpl-replay-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: tests read the counters, not a log

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with server._lock:
                    server.http_requests += 1
                if self.path.rstrip("/").endswith("/models"):
                    model = {"id": server.model, "object": "model", "owned_by": "replay"}
                    self._send(200, {"object": "list", "data": [model]})
                else:
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})

            def do_POST(self) -> None:
                with server._lock:
                    server.http_requests += 1
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "bad JSON", "type": "invalid_request"}})
                    return
                self._send(*server._complete(body))

        return Handler
