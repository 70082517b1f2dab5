"""Token counts of the requests the pipeline sends, for the docs and bench figures.

The real tokenizer of gpt-4o / gpt-4o-mini / gpt-4.1 / o4-mini is tiktoken's `o200k_base`.
tiktoken itself downloads its encoding files at first use (no network here), so the file is
taken from the `bpe-openai` package, which ships it, and loaded by tiktoken's own loader with
tiktoken's expected sha256 (a different file is refused). Without either package, counts fall
back to the pipeline's estimate, characters / 4.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import tempfile
from collections.abc import Callable
from functools import cache
from importlib import resources

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def chars4(text: str) -> int:
    """The pipeline's own estimate: one token per 4 characters."""
    return math.ceil(len(text) / 4)


@cache
def o200k() -> Callable[[str], int] | None:
    """Token counter with the real o200k_base encoding, or None when it cannot be loaded."""
    try:
        import tiktoken

        data = gzip.decompress(
            (resources.files("bpe_openai") / "data" / "o200k_base.tiktoken.gz").read_bytes()
        )
    except (ImportError, OSError):
        return None
    # tiktoken looks in TIKTOKEN_CACHE_DIR under sha1(url) before downloading; the hash of
    # the content is checked against tiktoken's own expected value on load.
    cache_dir = os.environ.setdefault(
        "TIKTOKEN_CACHE_DIR", os.path.join(tempfile.gettempdir(), "digest-tiktoken")
    )
    os.makedirs(cache_dir, exist_ok=True)
    target = os.path.join(cache_dir, hashlib.sha1(O200K_URL.encode()).hexdigest())
    if not os.path.exists(target):
        with open(target, "wb") as f:
            f.write(data)
    encoding = tiktoken.get_encoding("o200k_base")
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def counter() -> tuple[str, Callable[[str], int]]:
    """The best token counter available: (name, count function)."""
    real = o200k()
    return ("o200k_base (tiktoken)", real) if real else ("chars/4", chars4)
