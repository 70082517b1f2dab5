"""What the fake OpenAI server reads from a chat-completions body: stage, abstract, re-ask, size.

The stage comes from ``response_format.json_schema.name`` or the ``(name: <stage>)`` marker
of a system message; the abstract from between ``<abstract>`` tags of the first user message.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The stage name of a plain chat request (no stage marker, no abstract) and its answer.
PLAIN_CHAT = "chat"
PLAIN_ANSWER = "OK"

_STAGE_RE = re.compile(r"\(name: (\w+)\)")
_ABSTRACT_RE = re.compile(r"<abstract>(.*?)</abstract>", re.DOTALL)


def request_key(stage: str, abstract: str) -> str:
    """The server's cache key of a request: sha256 hex of canonical JSON ``[stage, abstract]``."""
    blob = json.dumps([stage, abstract], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def body_key(body: Any) -> str:
    """The server's key (``request_key``) of a chat-completions body, as a client can compute
    it from what it sends; ValueError when the body is not one the server can answer."""
    chat = plain_chat(body) or parse_chat(body)
    return request_key(chat.stage, chat.abstract)


def estimate_tokens(chars: int) -> int:
    """Token estimate of a text length: ~4 characters per token."""
    return (chars + 3) // 4


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
