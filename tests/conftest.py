"""Shared fixtures: the sample abstracts, no ambient endpoint, VCR config that keeps secrets out
of cassettes, `digest` against a fake server, and bench/'s scripts run as their users run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from endpoint import DigestAt
from samples import EXAMPLES, REPO

# A local Ray instance (tests/test_ray_engine.py) binds 127.0.0.1 only; Ray reads this when
# first imported, so it is set before any test module can import ray.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

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


@pytest.fixture
def digest_at(tmp_path) -> DigestAt:
    """`digest run` against a server URL, in this process or as a child's argument list."""
    return DigestAt(tmp_path)


@pytest.fixture(scope="session")
def run_bench():
    """`python -m bench.NAME ARGS` from the repo root, as bench/'s scripts are run by hand."""

    def run(name: str, *args: object) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", f"bench.{name}", *map(str, args)]
        return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)

    return run


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
