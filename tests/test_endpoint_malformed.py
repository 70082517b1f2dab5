"""A 200 that is not a chat completion never aborts a run, on either HTTP transport.

The SDK hands such bodies back as a `str` (an HTML page), a `list` (a JSON array), an object
whose `message` is None or whose `usage` holds strings, or raises JSONDecodeError (a body that
is not JSON, or is cut off). Each used to end the run with a traceback, no manifest and no
report. Now each is a `malformed_response` failure of that (abstract, stage) only, retried
like a transport failure, and the run writes everything.
"""

from __future__ import annotations

import json

import pytest
from endpoint import DigestAt
from synthetic import write_abstracts

from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.chat import request_key
from pipeline.testing.faults import MALFORMED_FAULTS, unit_draw
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

N = 8
RATE = 0.5
TRANSPORTS = ("aiohttp", "httpx")
# What the error message says for each shape.
SAYS = {
    "html": "an HTML page (text/html)",
    "not_json": "a body that is not JSON (Expecting value",
    "truncated_body": "a body that is not JSON (Unterminated string",
    "deep_body": "a JSON body nested too deeply to read",
    "json_array": "a JSON array, not a chat completion object",
    "null_message": "choices[0].message is null",
    "bad_usage": 'usage.prompt_tokens is "n/a", not a number',
    "no_choices": "a chat completion with no choices",
}
assert set(SAYS) == set(MALFORMED_FAULTS)


@pytest.fixture(scope="module")
def answer():
    return offline_answer_fn()


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(OpenAIBackend, "backoff_base_s", 0.01)
    monkeypatch.setattr(OpenAIBackend, "backoff_jitter_s", 0.01)


def digest(tmp_path, server, transport, *extra):
    config = tmp_path / "config.yaml"
    config.write_text(f"http_transport: {transport}\nmax_retries: 1\n", encoding="utf-8")
    return DigestAt(tmp_path)(
        server.base_url, tmp_path / "in.txt", "--config", config, *extra,
        key="sk-test-malformed-000000000000",
    )  # fmt: skip


def faulted_twice(texts: list[str], seed: int) -> set[str]:
    """Abstracts whose first two tldr attempts both get the fault (the server's own draw)."""
    draw = lambda text, attempt: unit_draw(seed, request_key("tldr", text), attempt, "transport")  # noqa: E731
    return {t for t in texts if draw(t, 1) < RATE and draw(t, 2) < RATE}


def a_seed_failing_some(texts: list[str]) -> tuple[int, set[str]]:
    """The first seed under which some abstracts, but not all, fail for good."""
    for seed in range(100):
        failing = faulted_twice(texts, seed)
        if 0 < len(failing) < len(texts) // 2:
            return seed, failing
    raise AssertionError("no usable seed")


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("fault", MALFORMED_FAULTS)
def test_a_malformed_200_fails_one_record_and_the_run_goes_on(tmp_path, answer, fault, transport):
    texts = write_abstracts(tmp_path / "in.txt", N, seed=5)
    # Half of the attempts get the shape: the abstracts that get it twice fail (max_retries
    # is 1), the others recover on their retry.
    seed, failing = a_seed_failing_some(texts)
    config = ServerConfig(faults={fault: RATE}, seed=seed)
    with OpenAIServer(config, answer_fn=answer) as server:
        result = digest(tmp_path, server, transport, "--stages", "tldr")
        stats = server.stats()
    assert result.exit_code == 1, result.output + result.stderr  # some records failed
    assert "Traceback" not in result.output + result.stderr
    run = tmp_path / "run"
    summaries, errors = read_jsonl(run / "summaries.jsonl"), read_jsonl(run / "errors.jsonl")
    assert len(summaries) == N and (run / "report.html").stat().st_size > 0
    text_of = {r["id"]: r["abstract"] for r in summaries}
    assert {text_of[e["id"]] for e in errors} == failing
    for error in errors:
        assert error["kind"] == "malformed_response" and error["attempts"] == 2
        assert error["message"].startswith("malformed_response after 2 attempts: ")
        assert SAYS[fault] in error["message"]
    ok = [r for r in summaries if r["stages"]["tldr"]["status"] == "ok"]
    assert len(ok) == N - len(failing)  # the other abstracts finished
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    kinds = manifest["counts"]["stages"]["tldr"]["failure_kinds"]
    assert kinds == {"malformed_response": len(failing)}
    faults = stats["faults"][fault]
    assert manifest["requests_sent"] == stats["requests"] == N + faults - len(failing)
    assert manifest["transport_retries"] == faults - len(failing)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_malformed_200_then_a_clean_one_is_ok(tmp_path, answer, transport):
    write_abstracts(tmp_path / "in.txt", 2, seed=6)
    config = ServerConfig(script=("truncated_body",))
    with OpenAIServer(config, answer_fn=answer) as server:
        result = digest(tmp_path, server, transport, "--stages", "claims", "--concurrency", "1")
        stats = server.stats()
    assert result.exit_code == 0, result.output + result.stderr
    records = read_jsonl(tmp_path / "run" / "summaries.jsonl")
    assert all(r["stages"]["claims"]["status"] == "ok" for r in records)
    # A retry, not a re-ask: the answer was never seen, so nothing is fed back to the model.
    assert stats["reasks"] == 0 and stats["requests"] == 3
    assert sorted(r["stages"]["claims"]["provenance"]["attempts"] for r in records) == [1, 1]


def test_parse_completion_reads_lenient_but_sane_bodies():
    from pipeline.backends.openai_backend import parse_completion

    minimal = json.dumps({"choices": [{"message": {"content": "{}"}}]}).encode()
    completion = parse_completion(minimal, "application/json; charset=utf-8")
    assert (completion.content, completion.finish_reason, completion.tokens_in) == ("{}", None, 0)
    float_usage = {
        "choices": [{"message": {"content": "x", "refusal": None}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12.0, "completion_tokens": None},
    }
    completion = parse_completion(json.dumps(float_usage).encode(), "")
    assert (completion.tokens_in, completion.tokens_out) == (12, 0)
    error_200 = json.dumps({"error": {"message": "model is loading"}}).encode()
    with pytest.raises(Exception, match="an error with status 200: model is loading"):
        parse_completion(error_200, "application/json")
