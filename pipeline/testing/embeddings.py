"""A deterministic `/v1/embeddings` for the local server: hashed bag-of-words vectors.

Each lowercase word of the input adds +1 or -1 (from sha256 of the word) to one of `DIMS`
dimensions; the vector is L2-normalized. Texts that share words get a positive cosine,
texts that share none about 0, so an assignment test can tell a topical reviewer from
another without a model. The body is what OpenAI returns: `float` lists or, with
`encoding_format: base64`, little-endian float32 bytes in base64.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import numpy as np

from pipeline.testing.http import Request, Response, error_response, json_response

DIMS = 256
_WORD = re.compile(r"[^\W_]{3,}")


def embedding_vector(text: str, dims: int = DIMS) -> np.ndarray:
    """The fake embedding of `text`: float32, unit length (zero for a text without words)."""
    out = np.zeros(dims, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        out[int.from_bytes(digest[:4], "little") % dims] += 1.0 if digest[4] & 1 else -1.0
    norm = float(np.linalg.norm(out))
    return out / norm if norm else out


def embeddings_response(request: Request) -> Response:
    """The answer to one POST /embeddings: a vector per input, in order, with usage."""
    try:
        body: Any = json.loads(request.body)
    except ValueError:
        return error_response(400, "body is not JSON", "invalid_request_error", None)
    inputs = body.get("input") if isinstance(body, dict) else None
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
        return error_response(
            400, "'input' must be a string or a list of strings", "invalid_request_error", None
        )
    if any(not t for t in inputs):
        return error_response(
            400, "'input' cannot contain empty strings", "invalid_request_error", None
        )
    b64 = body.get("encoding_format") == "base64"
    data = []
    for n, text in enumerate(inputs):
        vec = embedding_vector(text)
        value: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode() if b64 else vec.tolist()
        data.append({"object": "embedding", "index": n, "embedding": value})
    tokens = sum(max(1, len(t) // 4) for t in inputs)
    return json_response(
        200,
        {
            "object": "list",
            "data": data,
            "model": body.get("model", "fake-embedding"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        },
    )
