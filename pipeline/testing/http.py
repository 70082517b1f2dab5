"""HTTP/1.1 plumbing of the fake OpenAI server: requests read from a stream, responses.

Keep-alive and Content-Length (or chunked) bodies only: what the OpenAI SDK and the pipeline
send. ``MAX_BODY`` caps a body unless the caller gives a per-path limit.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_BODY = 8 * 1024 * 1024
REASONS = {
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


@dataclass
class Request:
    """One HTTP/1.1 request as the servers read it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool
    query: str = ""  # the raw query string (after '?'), for list endpoints


@dataclass
class Response:
    """One HTTP/1.1 response; ``encode`` gives its bytes."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    trickle_s: float | None = None  # send the body one byte per this many seconds
    body_path: Path | None = None  # the body is this file's bytes, sent in chunks (big files)
    held: Callable[[], None] | None = None  # called once a trickle's first body bytes are out

    @property
    def length(self) -> int:
        """The body's length in bytes."""
        return self.body_path.stat().st_size if self.body_path is not None else len(self.body)

    def head(self, keep_alive: bool) -> bytes:
        """The status line and headers, with the blank line that ends them."""
        lines = [
            f"HTTP/1.1 {self.status} {REASONS.get(self.status, 'Unknown')}",
            f"content-type: {self.content_type}",
            f"content-length: {self.length}",
            f"connection: {'keep-alive' if keep_alive else 'close'}",
            *(f"{k}: {v}" for k, v in self.headers.items()),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def encode(self, keep_alive: bool) -> bytes:
        """Head and body."""
        return self.head(keep_alive) + self.body


class Drop(Exception):
    """Close the connection without sending a response."""


class BadRequest(Exception):
    """A request the server cannot read; answered with ``status`` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    """A JSON response (compact separators)."""
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    return Response(status, body, headers or {})


def error_response(
    status: int, message: str, type_: str, code: str | None, headers: dict[str, str] | None = None
) -> Response:
    """An OpenAI-style error body: ``{"error": {message, type, param, code}}``."""
    payload = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return json_response(status, payload, headers)


def retry_headers(wait_s: float) -> dict[str, str]:
    """Retry-After (integer seconds, rounded up so waiting it is always enough) and -ms."""
    return {
        "retry-after": str(max(1, math.ceil(wait_s))),
        "retry-after-ms": str(max(1, math.ceil(wait_s * 1000))),
    }


async def read_request(
    reader: asyncio.StreamReader, body_limit: Callable[[str], int] | None = None
) -> Request | None:
    """One HTTP/1.1 request from the stream, or None when the peer closed between requests.

    ``body_limit(path)`` is the largest body accepted for that path (default ``MAX_BODY``).
    """
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise BadRequest(400, "incomplete request head") from exc
        return None
    except asyncio.LimitOverrunError as exc:
        raise BadRequest(431, "request head too large") from exc
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, version = lines[0].split(" ", 2)
    except ValueError as exc:
        raise BadRequest(400, "malformed request line") from exc
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    path, _, query = target.partition("?")
    limit = body_limit(path) if body_limit is not None else MAX_BODY
    body = await _read_body(reader, headers, limit)
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return Request(method, path, headers, body, keep_alive, query)


async def _read_body(
    reader: asyncio.StreamReader, headers: dict[str, str], limit: int = MAX_BODY
) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader, limit)
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError as exc:
        raise BadRequest(400, "bad content-length") from exc
    if length > limit or length < 0:
        raise BadRequest(413, f"body larger than {limit} bytes")
    return await reader.readexactly(length) if length else b""


async def _read_chunked(reader: asyncio.StreamReader, limit: int = MAX_BODY) -> bytes:
    parts: list[bytes] = []
    size_total = 0
    while True:  # bounded by limit: every chunk adds its size or ends the loop
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # trailer section (assumed empty) ends the body
            return b"".join(parts)
        size_total += size
        if size_total > limit:
            raise BadRequest(413, f"body larger than {limit} bytes")
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
