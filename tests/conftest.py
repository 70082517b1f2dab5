"""Shared fixtures: sample paths, offline settings, VCR config that keeps secrets out of cassettes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# A local Ray instance (tests/test_ray_engine.py) binds 127.0.0.1 only; Ray reads this when
# first imported, so it is set before any test module can import ray.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "iclr2026"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # so tests can import bench.openai_server

SECRET_HEADERS = [
    "authorization",
    "api-key",
    "x-api-key",
    "cookie",
    "openai-organization",
    "openai-project",
]


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The shipped ICLR 2026 sample abstracts."""
    return EXAMPLES


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    """Tests never pick up a developer's real key or endpoint from the environment."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DIGEST_MODEL", "DIGEST_PROVIDER"):
        monkeypatch.delenv(var, raising=False)


def _scrub_response(response):
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower() in {"set-cookie", "openai-organization", "openai-project"}:
            del headers[name]
    return response


@pytest.fixture(scope="module")
def vcr_config():
    """Cassettes: secrets filtered, requests matched on body so a changed prompt fails loudly."""
    return {
        "filter_headers": SECRET_HEADERS,
        "before_record_response": _scrub_response,
        # Port is not matched: cassettes are recorded against a local server on a free port.
        "match_on": ["method", "scheme", "host", "path", "query", "body"],
        "decode_compressed_response": True,
    }
