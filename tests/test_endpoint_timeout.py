"""`timeout_s` bounds each attempt as a whole, connect to last byte, on both transports.

The server sends the headers at once and then the body one byte every `TRICKLE_S`, far
inside `timeout_s`: a per-read timeout (the transports' own) never fires, so before the
whole-request bound one trickling request held its abstract, and the run, for as long as the
body took (minutes). The outcome is checked, not the clock: kind, attempts, and the
server's count of trickles the client hung up on.
"""

from __future__ import annotations

import json
import time

import pytest
from runs import run_paths
from synthetic import write_abstracts

from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.config import load_settings
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

TIMEOUT_S = 0.5
TRICKLE_S = 0.1  # a byte every 0.1 s: a ~500-byte body would take ~50 s


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(OpenAIBackend, "backoff_base_s", 0.01)
    monkeypatch.setattr(OpenAIBackend, "backoff_jitter_s", 0.01)


def wait_until(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_trickling_body_ends_as_a_timeout_per_attempt(tmp_path, transport):
    texts = write_abstracts(tmp_path / "in.txt", 3, seed=9)
    # The first attempt of every abstract trickles; each retry is answered at once.
    config = ServerConfig(faults={"trickle": 1.0}, max_faults_per_key=1, trickle_s=TRICKLE_S)
    with OpenAIServer(config, answer_fn=offline_answer_fn()) as server:
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
        started = time.monotonic()
        result = run_paths(settings, [tmp_path / "in.txt"])
        elapsed = time.monotonic() - started
        wait_until(lambda: server.stats()["trickles_cut"] == len(texts))
        recovered = server.stats()

        # Now every attempt trickles: each abstract fails as a timeout after both attempts.
        config = ServerConfig(faults={"trickle": 1.0}, trickle_s=TRICKLE_S)
    with OpenAIServer(config, answer_fn=offline_answer_fn()) as server:
        failing = settings.model_copy(
            update={"base_url": server.base_url, "out_dir": tmp_path / "failed", "force": True}
        )
        failed = run_paths(failing, [tmp_path / "in.txt"])
        wait_until(lambda: server.stats()["trickles_cut"] == 2 * len(texts))
        stats = server.stats()

    assert result.manifest.status == "ok"
    assert result.manifest.transport_retries == len(texts)
    assert recovered["requests"] == 2 * len(texts)
    assert elapsed >= TIMEOUT_S  # a lower bound only: the first attempts waited out the limit

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
