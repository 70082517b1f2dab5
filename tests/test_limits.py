"""Run-wide limits, proven by the local server's own counters (real openai client over HTTP).

max_concurrency caps requests in flight; requests_per_minute and tokens_per_minute are a
token bucket with a one-second burst (never a whole minute at once) that holds the
configured rate over the run; a 429 pauses every task of the run, not just the one that got it.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from pathlib import Path

import pytest
from runs import run_paths
from synthetic import write_abstracts

from pipeline.config import load_settings
from pipeline.stages import build_stages
from pipeline.taxonomy import load_taxonomy
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.chat import estimate_tokens
from pipeline.testing.openai_server import OpenAIServer, ServerConfig
from pipeline.testing.ratelimit import max_in_window

FAKE_KEY = "sk-test-limits-000000000000000000000"
JITTER = 4  # requests of slack for windows measured at the server


@functools.cache
def _offline():
    return offline_answer_fn()


def answer(stage: str, abstract: str) -> dict:
    return _offline()(stage, abstract)


def run(tmp_path: Path, server: OpenAIServer, n: int, **overrides):
    path = tmp_path / "abstracts.txt"
    texts = write_abstracts(path, n, seed=5)
    values = {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "bench-model",
        "stages": "tldr",
        "cache_dir": tmp_path / "cache",
        "out_dir": tmp_path / "run",
        "progress": False,
        "max_concurrency": 16,
        "timeout_s": 10.0,
        "max_retries": 3,
        **overrides,
    }
    settings = load_settings(None, env={"OPENAI_API_KEY": FAKE_KEY}, overrides=values)
    started = time.monotonic()
    result = run_paths(settings, [path])
    elapsed = time.monotonic() - started
    summaries = [json.loads(line) for line in (result.run_dir / "summaries.jsonl").open()]
    assert len(summaries) == n and all(r["stages"]["tldr"]["status"] == "ok" for r in summaries)
    return settings, texts, elapsed


@pytest.mark.parametrize("limit", [1, 5])
def test_max_concurrency_caps_requests_in_flight(tmp_path, limit):
    with OpenAIServer(ServerConfig(latency=0.03), answer_fn=answer) as server:
        _, _, elapsed = run(tmp_path, server, 12 * limit, max_concurrency=limit)
        stats = server.stats()
    assert stats["requests"] == 12 * limit
    assert stats["in_flight_max"] == limit  # reached, never exceeded
    assert elapsed >= 12 * 0.03  # 12 rounds of `limit` requests, one after another


def test_requests_per_minute_is_a_token_bucket_not_a_minute_burst(tmp_path):
    rpm, n = 900, 45  # 15 requests/s, a one-second burst of 15; a minute's worth would be all 45
    rate = rpm / 60
    with OpenAIServer(ServerConfig(), answer_fn=answer) as server:
        started = time.monotonic()
        run(tmp_path, server, n, requests_per_minute=rpm, max_concurrency=32)
        arrivals = sorted(server.stats()["arrivals"])
    assert len(arrivals) == n
    # At most one second's worth at once, and in any second at most that burst plus a second
    # of refill. JITTER: the server sees sends a little late and bunched when the CPU is busy.
    assert max_in_window(arrivals, 0.25) <= 1.25 * rate + JITTER
    assert max_in_window(arrivals, 1.0) <= 2 * rate + JITTER
    # Over the run the configured rate holds: after the burst, the rest take (n - burst) / rate,
    # counted from when the run (and its bucket) started: load can only make that later.
    expected = (n - rate) / rate
    assert arrivals[-1] - started >= expected - 0.05, (arrivals[-1] - started, expected)
    assert arrivals[-1] - arrivals[0] <= 3 * expected + 2, "far slower than the configured rate"


def test_tokens_per_minute_is_a_token_bucket_counted_by_the_server(tmp_path):
    tpm, n = 240_000, 30  # 4000 tokens/s; a tldr request is ~400 tokens
    rate = tpm / 60
    seen: list[tuple[float, str]] = []
    lock = threading.Lock()

    def recording(stage: str, abstract: str) -> dict:
        # The server calls this once per new request key, on arrival (answers are memoized).
        with lock:
            seen.append((time.monotonic(), abstract))
        return answer(stage, abstract)

    with OpenAIServer(ServerConfig(), answer_fn=recording) as server:
        settings, texts, _ = run(
            tmp_path, server, n, tokens_per_minute=tpm, max_tokens=64, max_concurrency=32
        )
        stats = server.stats()

    # Tokens of each request exactly as the server counts them (prompt + answer, chars / 4).
    taxonomy = load_taxonomy(settings.prompts_dir / "taxonomy.yaml")
    (stage,) = build_stages(("tldr",), settings.prompts_dir, taxonomy).values()

    def tokens(text: str) -> int:
        prompt = sum(len(m["content"]) for m in stage.messages(text))
        return estimate_tokens(prompt) + estimate_tokens(len(json.dumps(answer("tldr", text))))

    timeline = sorted((t, tokens(text)) for t, text in seen)
    assert len(timeline) == n
    assert sum(k for _, k in timeline) == stats["total_tokens"]  # same counting as the server
    biggest = max(k for _, k in timeline)

    def most_in(window_s: float) -> int:
        best = 0
        for i, (start, _) in enumerate(timeline):
            best = max(best, sum(k for t, k in timeline[i:] if t < start + window_s))
        return best

    # At most one second's worth at once (plus the request that overdraws it), and in any
    # second at most that plus a second of refill; JITTER requests of slack as above.
    assert most_in(0.25) <= 1.25 * rate + JITTER * biggest
    assert most_in(1.0) <= 2 * rate + JITTER * biggest
    # Over the run tokens flow at most at the configured rate (a lower bound on the flow would
    # depend on how busy the machine is, so none is asserted).
    t0, t1 = timeline[0][0], timeline[-1][0]
    spent = sum(k for _, k in timeline[1:])
    assert spent <= rate * (t1 - t0) + rate + 2 * biggest


@pytest.mark.parametrize("client_rpm", [None, 1200], ids=["no-client-rpm", "client-rpm"])
def test_a_429_pauses_the_whole_run(tmp_path, client_rpm):
    pause, latency, n, before = 0.6, 0.02, 60, 24
    config = ServerConfig(latency=latency, retry_after_s=pause, script=("ok",) * before + ("429",))
    with OpenAIServer(config, answer_fn=answer) as server:
        run(tmp_path, server, n, max_concurrency=8, requests_per_minute=client_rpm)
        stats = server.stats()
    assert stats["by_status"] == {200: n, 429: 1}
    arrivals = stats["arrivals"]  # arrival order = admission order here (no limiter rejections)
    answered = arrivals[before] + latency  # when the client saw the 429
    during = [t for t in arrivals if answered + 0.05 < t < answered + pause - 0.05]
    # Every task waits out the Retry-After, not just the one that got the 429 ...
    assert during == [], f"{len(during)} requests sent while the run should have been paused"
    # ... and the run resumes afterwards.
    assert sum(1 for t in arrivals if t >= answered + pause - 0.05) >= n - before - 8
