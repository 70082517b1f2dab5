"""Fault injection through the real openai client over HTTP (the fake server on 127.0.0.1).

For each fault class at a 30% rate over a few hundred synthetic abstracts: every abstract ends
ok or in errors.jsonl with a kind that names the fault, the manifest counts add up, and the
number of requests is exactly what one retry per transport fault (or one re-ask per content
fault) costs: no retry storms, no multiplied retry layers. The server's fault decisions are a
pure function of (seed, key, attempt), so the test predicts which keys are faulted.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from held import HeldBounds
from runs import manifest_dict, run_paths
from synthetic import write_abstracts
from timing import wait_until

from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.config import load_settings
from pipeline.errors import FatalBackendError
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.chat import request_key
from pipeline.testing.faults import (
    CONTENT_FAULTS,
    MALFORMED_FAULTS,
    TRANSPORT_FAULTS,
    pick_fault,
    unit_draw,
)
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

N_ABSTRACTS = 200
RATE = 0.3
SEED = 11
FAKE_KEY = "sk-test-faults-0000000000000000000000"
TRANSIENT_KIND = {
    "429": "rate_limit",
    "500": "server_error",
    "503": "server_error",
    "stall": "timeout",
    "drop": "connection",
    "trickle": "timeout",  # timeout_s bounds the whole request, not each read
    **dict.fromkeys(MALFORMED_FAULTS, "malformed_response"),
}
TRANSIENT_FAULTS = TRANSPORT_FAULTS + MALFORMED_FAULTS
# A trickle sends a byte every TRICKLE_S, well inside the timeout a per-read limit would use.
TRICKLE_S = 0.05
CONTENT_KIND = {
    "truncated": "invalid_json",  # JSON cut in the middle, finish_reason=stop
    "schema": "schema",
    "ungrounded": "ungrounded",
    "length": "truncated",  # finish_reason=length
    "refusal": "refusal",
}
MESSAGE = {"truncated": "not valid JSON", "length": "cut off at max_tokens", "refusal": "refused"}
# Grounding differs per stage, so `ungrounded` runs all three; the others run one stage each.
CONTENT_STAGES = {
    "truncated": ("claims",),
    "schema": ("tags",),
    "ungrounded": ("tldr", "tags", "claims"),
    "length": ("tldr",),
    "refusal": ("tldr",),
}
assert set(TRANSIENT_KIND) == set(TRANSIENT_FAULTS) and set(CONTENT_KIND) == set(CONTENT_FAULTS)


@functools.cache
def _offline():
    return offline_answer_fn()


@functools.cache
def answer(stage: str, abstract: str) -> dict:
    """The offline extractor's answer, memoized across servers (it is deterministic)."""
    return _offline()(stage, abstract)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[str]]:
    path = tmp_path_factory.mktemp("faults") / "abstracts.txt"
    return path, write_abstracts(path, N_ABSTRACTS, seed=SEED)


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    """Back-off without Retry-After in milliseconds, so a test waits for faults, not for sleep."""
    monkeypatch.setattr(OpenAIBackend, "backoff_base_s", 0.01)
    monkeypatch.setattr(OpenAIBackend, "backoff_jitter_s", 0.01)


def settings(tmp_path: Path, server: OpenAIServer, **overrides):
    values = {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "bench-model",
        "cache_dir": tmp_path / "cache",
        "out_dir": tmp_path / "run",
        "progress": False,
        "max_concurrency": 32,
        # A safety net: a stall or trickle is ended by the server's `held` event (HeldBounds),
        # so no clean answer, however busy the machine, comes near it.
        "timeout_s": 60.0,
        "max_retries": 3,
        "max_reasks": 2,
        **overrides,
    }
    return load_settings(None, env={"OPENAI_API_KEY": FAKE_KEY}, overrides=values)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run(tmp_path, server, **overrides):
    result = run_paths(settings(tmp_path, server, **overrides), [corpus_path(tmp_path)])
    run_dir = result.run_dir
    return (
        manifest_dict(result),
        read_jsonl(run_dir / "summaries.jsonl"),
        read_jsonl(run_dir / "errors.jsonl"),
    )


def corpus_path(tmp_path: Path) -> Path:
    return tmp_path / "abstracts.txt"


@pytest.fixture
def inputs(tmp_path, corpus) -> list[str]:
    """The shared corpus, linked into this test's folder."""
    path, texts = corpus
    corpus_path(tmp_path).symlink_to(path)
    return texts


def assert_counts_add_up(manifest: dict, summaries: list[dict], errors: list[dict], n: int) -> None:
    counts = manifest["counts"]
    # A claim dropped from an ok stage has its own record (`item` set); the rest are stages.
    dropped = [e for e in errors if e.get("item") is not None]
    errors = [e for e in errors if e.get("item") is None]
    ok_pairs = {
        (r["id"], name) for r in summaries for name, s in r["stages"].items() if s["status"] == "ok"
    }
    assert {(e["id"], e["stage"]) for e in dropped} <= ok_pairs
    assert sum(s["dropped"] for s in counts["stages"].values()) == len(dropped)
    assert counts["unique"] == counts["records_written"] == len(summaries) == n
    failed_pairs = {
        (r["id"], name) for r in summaries for name, s in r["stages"].items() if s["status"] != "ok"
    }
    assert failed_pairs == {(e["id"], e["stage"]) for e in errors}
    assert len(errors) == len(failed_pairs)  # one error record per failed stage, no duplicates
    for name, s in counts["stages"].items():
        assert s["ok"] + s["failed"] == n, name
        assert s["failed"] == sum(1 for e in errors if e["stage"] == name)
        assert sum(s["failure_kinds"].values()) == s["failed"]
    assert counts["records_with_failures"] == len({e["id"] for e in errors})
    assert manifest["status"] == ("ok" if not errors else "failed")


@pytest.mark.parametrize("fault", TRANSIENT_FAULTS)
def test_transient_faults_end_all_ok_with_one_retry_per_fault(tmp_path, inputs, fault, monkeypatch):
    config = ServerConfig(
        faults={fault: RATE},
        seed=SEED,
        max_faults_per_key=2,
        stall_s=60.0,
        retry_after_s=0.02,
        trickle_s=TRICKLE_S,
    )
    # A stall or trickle is ended by the client's bound on the whole attempt; here by that
    # bound as the server reports holding the request, not by the clock.
    bounds = HeldBounds().install(monkeypatch)
    with OpenAIServer(config, answer_fn=answer, held=bounds.held) as server:
        manifest, summaries, errors = run(tmp_path, server, stages="tldr")
        stats = server.stats()
        if fault == "trickle":  # the client hung up on every trickle (counted when it noticed)
            cut = stats["faults"]["trickle"]
            wait_until(lambda: server.stats()["trickles_cut"] == cut, "trickles cut")

    assert errors == []
    assert all(r["stages"]["tldr"]["status"] == "ok" for r in summaries)
    assert_counts_add_up(manifest, summaries, errors, N_ABSTRACTS)
    tldr = manifest["counts"]["stages"]["tldr"]
    # transport retries never become re-asks
    assert all(r["stages"]["tldr"]["provenance"]["attempts"] == 1 for r in summaries)
    # The fault really happened at about the configured rate ...
    faults = stats["faults"][fault]
    assert 0.2 < faults / stats["requests"] < 0.4, stats["faults"]
    # ... and each fault cost exactly one more request: no retry storm, no SDK retries on top.
    assert stats["requests"] == N_ABSTRACTS + faults
    assert stats["requests"] <= N_ABSTRACTS / (1 - RATE) * 1.15
    assert stats["reasks"] == 0
    # The manifest counts exactly the requests the server saw, retries included.
    assert tldr["backend_calls"] == manifest["requests_sent"] == stats["requests"]
    assert tldr["transport_retries"] == manifest["transport_retries"] == faults
    assert bounds.ended == (faults if fault in ("stall", "trickle") else 0)
    if fault == "429":
        assert 1 <= manifest["rate_limit_pauses"] <= faults
    else:
        assert manifest["rate_limit_pauses"] == 0


@pytest.mark.parametrize("fault", TRANSIENT_FAULTS)
def test_exhausted_transient_fault_is_an_error_record_naming_it(
    tmp_path, inputs, fault, monkeypatch
):
    config = ServerConfig(
        faults={fault: 1.0}, seed=SEED, stall_s=60.0, retry_after_s=0.02, trickle_s=TRICKLE_S
    )
    bounds = HeldBounds().install(monkeypatch)
    with OpenAIServer(config, answer_fn=answer, held=bounds.held) as server:
        settings_ = settings(tmp_path, server, stages="tldr", max_retries=2)
        (tmp_path / "few.txt").write_text("\n\n".join(inputs[:4]) + "\n", encoding="utf-8")
        result = run_paths(settings_, [tmp_path / "few.txt"])
        stats = server.stats()
    summaries = read_jsonl(result.run_dir / "summaries.jsonl")
    errors = read_jsonl(result.run_dir / "errors.jsonl")
    assert_counts_add_up(manifest_dict(result), summaries, errors, 4)
    assert [e["kind"] for e in errors] == [TRANSIENT_KIND[fault]] * 4
    # The record's attempts are the requests sent, and its message says the same number.
    assert all(e["attempts"] == 3 and "after 3 attempts" in e["message"] for e in errors)
    if fault in ("500", "503"):
        assert all(fault in e["message"] for e in errors)
    assert stats["requests"] == 4 * 3  # max_retries=2: three tries per call, never more
    manifest = manifest_dict(result)
    assert manifest["counts"]["stages"]["tldr"]["failure_kinds"] == {TRANSIENT_KIND[fault]: 4}
    assert manifest["requests_sent"] == manifest["counts"]["stages"]["tldr"]["backend_calls"] == 12
    assert manifest["transport_retries"] == 4 * 2  # the third failure is not retried
    assert manifest["rate_limit_pauses"] <= (8 if fault == "429" else 0)
    assert bounds.ended == (12 if fault in ("stall", "trickle") else 0)


def predicted_content_faults(
    texts: list[str], stages: tuple[str, ...], fault: str, self_correct: bool
):
    """(stage, text) pairs the server will fault, computed the way the server decides."""
    faults = {fault: RATE}
    out = set()
    for text in texts:
        for stage in stages:
            key = request_key(stage, text)
            u = (
                unit_draw(SEED, key, 1, "content")
                if self_correct
                else unit_draw(SEED, key, "content")
            )
            if pick_fault(u, faults, CONTENT_FAULTS) is not None:
                out.add((stage, text))
    return out


@pytest.mark.parametrize("self_correct", [True, False], ids=["self-correcting", "stubborn"])
@pytest.mark.parametrize("fault", CONTENT_FAULTS)
def test_content_faults_are_reasked(tmp_path, inputs, fault, self_correct):
    stages = CONTENT_STAGES[fault]
    config = ServerConfig(faults={fault: RATE}, seed=SEED, self_correct=self_correct)
    with OpenAIServer(config, answer_fn=answer) as server:
        manifest, summaries, errors = run(tmp_path, server, stages=",".join(stages))
        stats = server.stats()

    predicted = predicted_content_faults(inputs, stages, fault, self_correct)
    calls = N_ABSTRACTS * len(stages)
    assert 0.2 < len(predicted) / calls < 0.4
    assert_counts_add_up(manifest, summaries, errors, N_ABSTRACTS)
    attempts = {
        (stage, r["abstract"]): s["provenance"]["attempts"]
        for r in summaries
        for stage, s in r["stages"].items()
    }
    if self_correct:
        # One re-ask for exactly the faulted keys, then ok: nothing fails. An invented claim
        # the corrected answer leaves out is withdrawn, and says so (issue 20.2).
        by_text = {r["id"]: r["abstract"] for r in summaries}
        withdrawn = {(e["stage"], by_text[e["id"]]) for e in errors}
        assert all(e["item"] == 0 and "withdrawn" in e["message"] for e in errors)
        assert withdrawn == (
            {k for k in predicted if k[0] == "claims"} if fault == "ungrounded" else set()
        )
        assert {k for k, n in attempts.items() if n == 2} == predicted
        assert set(attempts.values()) == {1, 2}
        assert stats["reasks"] == stats["faults"][fault] == len(predicted)
        assert stats["requests"] == calls + len(predicted)
    else:
        # Every faulted key is asked 1 + max_reasks times and ends failed, named by its kind;
        # an invented claim next to valid ones is dropped instead (the stage stays ok).
        kind = CONTENT_KIND[fault]
        by_text = {r["id"]: r["abstract"] for r in summaries}
        assert {(e["stage"], by_text[e["id"]]) for e in errors} == predicted
        dropped = [e for e in errors if e.get("item") is not None]
        assert all(e["stage"] == "claims" and e["item"] == 0 for e in dropped)
        assert bool(dropped) == (fault == "ungrounded")
        assert {e["kind"] for e in errors} == {kind}
        assert all(e["attempts"] == 3 for e in errors)
        assert all(MESSAGE.get(fault, "") in e["message"] for e in errors)
        if fault != "refusal":
            assert all(e["raw"] for e in errors)  # the last raw answer, for debugging
        assert stats["requests"] == calls + 2 * len(predicted)
        assert stats["reasks"] == 2 * len(predicted)
        for s in manifest["counts"]["stages"].values():
            assert s["backend_calls"] == N_ABSTRACTS + 2 * (s["failed"] + s["dropped"])
            assert s["failure_kinds"] in ({kind: s["failed"]}, {})
        assert manifest["requests_sent"] == stats["requests"]


def test_401_stops_the_run_at_once_with_one_message(tmp_path, inputs, digest_at):
    config = ServerConfig(api_key="sk-the-right-key-1234567890", seed=SEED, latency=0.02)
    with OpenAIServer(config, answer_fn=answer) as server:
        result = digest_at(
            server.base_url, corpus_path(tmp_path), "--concurrency", "8", key=FAKE_KEY
        )
        stats = server.stats()
    assert result.exit_code == FatalBackendError.exit_code == 3
    assert result.stderr.count("error:") == 1
    assert "rejected the API key (401" in result.stderr and "OPENAI_API_KEY" in result.stderr
    assert FAKE_KEY not in result.output + result.stderr
    # At once: the preflight's GET /models got the 401, and no stage request was sent.
    assert stats["requests"] == 0 and stats["http_requests"] == 1
    assert not (tmp_path / "run").exists()  # no answer: no run folder


def test_401_after_the_preflight_stops_the_run_at_once(tmp_path, inputs):
    """A key revoked mid-run: only the requests already in flight are sent, none retried."""
    config = ServerConfig(seed=SEED, latency=0.02, script=("ok",) + ("401",) * 50)
    with OpenAIServer(config, answer_fn=answer) as server:
        settings_ = settings(tmp_path, server, max_concurrency=8, stages="tldr")
        with pytest.raises(FatalBackendError, match="rejected the API key"):
            run_paths(settings_, [corpus_path(tmp_path)])
        # Requests the client cut short are still being answered: wait for their statuses.
        wait_until(lambda: server.stats()["in_flight"] == 0, "in-flight requests answered")
        stats = server.stats()
    assert stats["by_status"][401] == stats["requests"] - 1
    assert stats["requests"] <= 1 + 8
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "fatal"
    assert manifest["requests_sent"] == manifest["counts"]["stages"]["tldr"]["backend_calls"]
    assert manifest["requests_sent"] == stats["requests"]  # in-flight ones cut short included
    assert manifest["transport_retries"] == 0
