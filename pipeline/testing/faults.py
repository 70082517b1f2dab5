"""The fake OpenAI server's faults: their names, deterministic draws and faulty answers.

Transport faults (429, 500, 503, stall, drop, trickle), malformed 200s and permanent
statuses (401, 501) are drawn per attempt from one partition of [0, 1); content faults
(truncated, schema, ungrounded, length, refusal) change the answer itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pipeline.testing.http import Response, json_response
from pipeline.text import numbers_in

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
HTML_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>"
    "<body><h1>Welcome to nginx!</h1><p>It works.</p></body></html>\n"
)
REFUSAL_TEXT = "I can't help with that."
UNGROUNDED_TAG = "hallucinated-method"


def unit_draw(seed: int, *parts: object) -> float:
    """A deterministic number in [0, 1) from the seed and any parts (stable across runs)."""
    text = ":".join(str(p) for p in (seed, *parts))
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def pick_fault(u: float, faults: Mapping[str, float], names: tuple[str, ...]) -> str | None:
    """The fault ``u`` falls on (None: none); the rates partition [0, 1), so at most one fires."""
    acc = 0.0
    for name in names:
        acc += faults.get(name, 0.0)
        if u < acc:
            return name
    return None


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


def malform(fault: str, response: Response) -> Response:
    """A clean completion response turned into one of the ``MALFORMED_FAULTS`` shapes."""
    if fault == "html":
        return Response(200, HTML_PAGE.encode(), content_type="text/html")
    if fault == "not_json":
        return Response(200, b"upstream answered: OK (not JSON)", response.headers)
    if fault == "truncated_body":
        return Response(200, response.body[: len(response.body) // 2], response.headers)
    if fault == "deep_body":  # valid JSON nested far past any parser's recursion limit
        deep = b'{"choices": ' + b"[" * DEEP_BODY + b"]" * DEEP_BODY + b"}"
        return Response(200, deep, response.headers)
    payload = json.loads(response.body)
    if fault == "json_array":
        return json_response(200, [payload], response.headers)
    if fault == "null_message":
        payload["choices"][0]["message"] = None
    elif fault == "bad_usage":
        payload["usage"] = {"prompt_tokens": "n/a", "completion_tokens": "many"}
    elif fault == "no_choices":
        payload["choices"] = []
    else:
        raise ValueError(f"not a malformed fault: {fault!r}")
    return json_response(200, payload, response.headers)
