"""`timeout_s` bounds each attempt as a whole, connect to last byte, on both transports.

The server sends the headers at once and then the body one byte every `TRICKLE_S`, far
inside `timeout_s`: a per-read timeout (the transports' own) never fires, so before the
whole-request bound one trickling request held its abstract, and the run, for as long as the
body took (minutes). The outcome is checked, not the clock: kind, attempts, and the
server's count of trickles the client hung up on. The bound itself is the backend's, ended
the moment the server reports it is trickling (tests/held.py), so `TIMEOUT_S` can be far
longer than a clean answer takes on a busy machine.
"""

from __future__ import annotations

import json

import pytest
from held import HeldBounds
from runs import run_paths
from synthetic import write_abstracts
from timing import wait_until

from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.config import load_settings
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

TIMEOUT_S = 60.0  # the safety net: a held trickle's bound is ended by the server's event
TRICKLE_S = 0.1  # a byte every 0.1 s: a ~500-byte body would take ~50 s


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(OpenAIBackend, "backoff_base_s", 0.01)
    monkeypatch.setattr(OpenAIBackend, "backoff_jitter_s", 0.01)


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_trickling_body_ends_as_a_timeout_per_attempt(tmp_path, transport, monkeypatch):
    texts = write_abstracts(tmp_path / "in.txt", 3, seed=9)
    bounds = HeldBounds().install(monkeypatch)
    # The first attempt of every abstract trickles; each retry is answered at once.
    config = ServerConfig(faults={"trickle": 1.0}, max_faults_per_key=1, trickle_s=TRICKLE_S)
    with OpenAIServer(config, answer_fn=offline_answer_fn(), held=bounds.held) as server:
        settings = load_settings(
            None,
            env={"OPENAI_API_KEY": "sk-test-trickle-0000000000000000"},
            overrides={
                "provider": "openai",
                "base_url": server.base_url,
                "model": "bench-model",
                "http_transport": transport,
                "timeout_s": TIMEOUT_S,
                "max_retries": 1,
                "stages": "tldr",
                "cache_dir": tmp_path / "cache",
                "out_dir": tmp_path / "ok",
                "progress": False,
            },
        )
        result = run_paths(settings, [tmp_path / "in.txt"])
        wait_until(lambda: server.stats()["trickles_cut"] == len(texts), "trickles cut")
        recovered = server.stats()
        ended_first = bounds.ended

        # Now every attempt trickles: each abstract fails as a timeout after both attempts.
        config = ServerConfig(faults={"trickle": 1.0}, trickle_s=TRICKLE_S)
    with OpenAIServer(config, answer_fn=offline_answer_fn(), held=bounds.held) as server:
        failing = settings.model_copy(
            update={"base_url": server.base_url, "out_dir": tmp_path / "failed", "force": True}
        )
        failed = run_paths(failing, [tmp_path / "in.txt"])
        wait_until(lambda: server.stats()["trickles_cut"] == 2 * len(texts), "trickles cut")
        stats = server.stats()

    assert result.manifest.status == "ok"
    assert result.manifest.transport_retries == len(texts)
    assert recovered["requests"] == 2 * len(texts)
    # Each trickle, and nothing else, was ended by the whole-attempt bound.
    assert ended_first == len(texts)

    assert failed.manifest.status == "failed"
    errors = [json.loads(line) for line in (tmp_path / "failed" / "errors.jsonl").open()]
    assert len(errors) == len(texts)
    for error in errors:
        assert error["kind"] == "timeout" and error["attempts"] == 2
        assert error["message"] == (
            f"timeout after 2 attempts: no complete answer within timeout_s={TIMEOUT_S:g}s"
        )
    assert stats["requests"] == 2 * len(texts) == failed.manifest.requests_sent
    assert stats["faults"] == {"trickle": 2 * len(texts)}
    assert bounds.ended == ended_first + 2 * len(texts)
