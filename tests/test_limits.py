"""Run-wide limits, proven by the local server's own counters (real openai client over HTTP).

max_concurrency caps requests in flight; requests_per_minute and tokens_per_minute are a
token bucket with a one-second burst (never a whole minute at once) that holds the
configured rate over the run; a 429 pauses every task of the run, not just the one that got it.

Nothing here depends on how busy the machine is: concurrency is shown by holding requests at
the server until a whole group is in flight (tests/timing.py `Rounds`), rates and the pause
by the times the client sent each request, on the clock its limiter reads (the server's
arrival times bunch up when the CPU is busy; the limiter's own decisions do not).
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import pytest
from runs import run_paths
from synthetic import write_abstracts
from timing import Rounds

from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.config import load_settings
from pipeline.limits import Limiter
from pipeline.stages import build_stages
from pipeline.taxonomy import load_taxonomy
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.chat import body_key, estimate_tokens, request_key
from pipeline.testing.openai_server import OpenAIServer, ServerConfig
from pipeline.testing.ratelimit import max_in_window

FAKE_KEY = "sk-test-limits-000000000000000000000"
# A send is stamped just after the limiter let it go, before the next one can be let go: a
# window of stamps holds at most one request more than the limiter granted in it.
STAMP_SLACK = 1


@functools.cache
def _offline():
    return offline_answer_fn()


def answer(stage: str, abstract: str) -> dict:
    return _offline()(stage, abstract)


class Sends:
    """(time, server key) of every request the backend sends, stamped as it starts sending."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stamps: list[tuple[float, str]] = []
        real_send = OpenAIBackend._send

        async def send(backend: OpenAIBackend, params: dict, timeout_s: float):
            # No await between the limiter's last check and this line: the stamp is on the
            # limiter's clock, in the order it let requests go.
            self.stamps.append((time.monotonic(), body_key(params)))
            return await real_send(backend, params, timeout_s)

        monkeypatch.setattr(OpenAIBackend, "_send", send)

    @property
    def times(self) -> list[float]:
        return [t for t, _ in self.stamps]


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
    result = run_paths(settings, [path])
    summaries = [json.loads(line) for line in (result.run_dir / "summaries.jsonl").open()]
    assert len(summaries) == n and all(r["stages"]["tldr"]["status"] == "ok" for r in summaries)
    return settings, texts


@pytest.mark.parametrize("limit", [1, 5])
def test_max_concurrency_caps_requests_in_flight(tmp_path, limit):
    # Each request is held until `limit` are in flight: the cap is reached in every round,
    # and a client above it would have more in flight while a round is held.
    rounds = Rounds(limit)
    with OpenAIServer(ServerConfig(), answer_fn=answer, hold=rounds) as server:
        run(tmp_path, server, 12 * limit, max_concurrency=limit)
        stats = server.stats()
    assert stats["requests"] == 12 * limit
    assert rounds.rounds == 12  # 12 rounds of `limit` requests, one after another
    assert stats["in_flight_max"] == limit  # reached, never exceeded


def test_requests_per_minute_is_a_token_bucket_not_a_minute_burst(tmp_path, monkeypatch):
    rpm, n = 900, 45  # 15 requests/s, a one-second burst of 15; a minute's worth would be all 45
    rate = rpm / 60
    sends = Sends(monkeypatch)
    with OpenAIServer(ServerConfig(), answer_fn=answer) as server:
        started = time.monotonic()
        run(tmp_path, server, n, requests_per_minute=rpm, max_concurrency=32)
    times = sorted(sends.times)
    assert len(times) == n
    # At most one second's worth at once, and in any second at most that burst plus a second
    # of refill.
    assert max_in_window(times, 0.25) <= 1.25 * rate + STAMP_SLACK
    assert max_in_window(times, 1.0) <= 2 * rate + STAMP_SLACK
    # Over the run the configured rate holds: after the burst, the rest take (n - burst) / rate,
    # counted from when the run (and its bucket) started.
    expected = (n - rate) / rate
    assert times[-1] - started >= expected, (times[-1] - started, expected)


def test_tokens_per_minute_is_a_token_bucket_counted_by_the_server(tmp_path, monkeypatch):
    tpm, n = 240_000, 30  # 4000 tokens/s; a tldr request is ~400 tokens
    rate = tpm / 60
    sends = Sends(monkeypatch)
    with OpenAIServer(ServerConfig(), answer_fn=answer) as server:
        settings, texts = run(
            tmp_path, server, n, tokens_per_minute=tpm, max_tokens=64, max_concurrency=32
        )
        stats = server.stats()
    abstract_of = {request_key("tldr", text): text for text in texts}
    seen = [(t, abstract_of[key]) for t, key in sends.stamps]

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
    # second at most that plus a second of refill (STAMP_SLACK requests as above).
    assert most_in(0.25) <= 1.25 * rate + (1 + STAMP_SLACK) * biggest
    assert most_in(1.0) <= 2 * rate + (1 + STAMP_SLACK) * biggest
    # Over the run tokens flow at most at the configured rate (a lower bound on the flow would
    # depend on how busy the machine is, so none is asserted).
    t0, t1 = timeline[0][0], timeline[-1][0]
    spent = sum(k for _, k in timeline[1:])
    assert spent <= rate * (t1 - t0) + rate + 2 * biggest


@pytest.mark.parametrize("client_rpm", [None, 1200], ids=["no-client-rpm", "client-rpm"])
def test_a_429_pauses_the_whole_run(tmp_path, client_rpm, monkeypatch):
    pause, n, before = 0.6, 60, 24
    config = ServerConfig(retry_after_s=pause, script=("ok",) * before + ("429",))
    sends = Sends(monkeypatch)
    backoffs: list[float] = []  # when the client took in a 429 (the limiter's clock)
    real_backoff = Limiter.backoff

    def backoff(limiter: Limiter, seconds: float) -> None:
        backoffs.append(time.monotonic())
        real_backoff(limiter, seconds)

    monkeypatch.setattr(Limiter, "backoff", backoff)
    with OpenAIServer(config, answer_fn=answer) as server:
        run(tmp_path, server, n, max_concurrency=8, requests_per_minute=client_rpm)
        stats = server.stats()
    assert stats["by_status"] == {200: n, 429: 1}
    (noticed,) = backoffs
    # Every task waits out the Retry-After, not just the one that got the 429 ...
    during = [t for t in sends.times if noticed <= t < noticed + pause]
    assert during == [], f"{len(during)} requests sent while the run should have been paused"
    # ... and the run resumes afterwards: what was not sent before the 429 is sent after it.
    sent_before = sum(1 for t in sends.times if t < noticed)
    assert before < sent_before <= before + 8  # the 429 and the requests in flight beside it
    assert sum(1 for t in sends.times if t >= noticed + pause) == n + 1 - sent_before
