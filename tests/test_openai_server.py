"""The fake OpenAI server through the real openai client: answers, faults, limits, counters,
lifecycle (pipeline/testing/openai_server.py)."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import pytest
from pydantic import ValidationError
from samples import SPARSEFORMER, stub_answer, validate
from timing import HANG_S, Gate, Rounds, wait_until

from pipeline.stages import get_spec
from pipeline.testing.chat import PLAIN_ANSWER, parse_chat, request_key
from pipeline.testing.faults import (
    DEEP_BODY,
    HTML_PAGE,
    MALFORMED_FAULTS,
    REFUSAL_TEXT,
    UNGROUNDED_TAG,
)
from pipeline.testing.openai_server import OpenAIServer, ServerConfig
from pipeline.testing.ratelimit import RateLimiter, max_in_window

# The servers here bind 127.0.0.1 only; everything else stays blocked.
pytestmark = pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])

REPO = Path(__file__).resolve().parents[1]
STAGES = ("tldr", "tags", "claims")


def messages_for(stage: str, abstract: str = SPARSEFORMER, *, reask: bool = False) -> list[dict]:
    messages = [
        {"role": "system", "content": f"Answer with JSON only. (name: {stage})"},
        {"role": "user", "content": f"Read this.\n<abstract>\n{abstract}\n</abstract>"},
    ]
    if reask:
        messages += [
            {"role": "assistant", "content": '{"oops": 1}'},
            {"role": "user", "content": "That failed validation: fix it."},
        ]
    return messages


def response_format(stage: str, mode: str) -> dict:
    if mode == "json_object":
        return {"type": "json_object"}
    schema = {"type": "object"}
    return {"type": "json_schema", "json_schema": {"name": stage, "schema": schema, "strict": True}}


def ask(client, stage="tldr", abstract=SPARSEFORMER, *, reask=False, mode="json_schema"):
    """One chat completion shaped like the pipeline's requests."""
    return client.chat.completions.create(
        model="test-model",
        messages=messages_for(stage, abstract, reask=reask),
        response_format=response_format(stage, mode),
        temperature=0,
        max_tokens=400,
    )


@pytest.fixture
def make_server():
    """Start servers with the stub answer; all are stopped at teardown."""
    servers: list[OpenAIServer] = []

    def make(answer_fn=stub_answer, *, hooks=None, **config) -> OpenAIServer:
        server = OpenAIServer(ServerConfig(**config), answer_fn=answer_fn, **(hooks or {}))
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def client_for(server: OpenAIServer, *, timeout: float = HANG_S, api_key: str = "test-key"):
    return openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0, timeout=timeout)


# --- clean answers ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["json_schema", "json_object"])
@pytest.mark.parametrize("stage", STAGES)
def test_clean_answer_parses_and_validates(make_server, stage, mode):
    server = make_server()
    with client_for(server) as client:
        completion = ask(client, stage, mode=mode)
    choice = completion.choices[0]
    assert completion.object == "chat.completion"
    assert completion.model == "test-model"
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.refusal is None
    assert json.loads(choice.message.content) == stub_answer(stage, SPARSEFORMER)
    validate(stage, choice.message.content)
    usage = completion.usage
    assert usage.completion_tokens == (len(choice.message.content) + 3) // 4
    assert usage.prompt_tokens > len(SPARSEFORMER) // 4
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    stats = server.stats()
    assert stats["by_status"] == {200: 1}
    assert stats["by_stage"] == {stage: 1}
    assert stats["by_key"] == {request_key(stage, SPARSEFORMER): 1}
    assert stats["total_tokens"] == usage.total_tokens


def test_parse_chat_reads_stage_abstract_and_reask():
    body = {"model": "m", "messages": messages_for("claims", reask=True)}
    chat = parse_chat({**body, "response_format": {"type": "json_object"}})
    assert (chat.stage, chat.abstract, chat.is_reask) == ("claims", SPARSEFORMER, True)
    schema_mode = {**body, "response_format": response_format("tags", "json_schema")}
    assert parse_chat(schema_mode).stage == "tags"  # the schema name wins over the marker
    assert parse_chat({"messages": messages_for("tldr")}).is_reask is False
    with pytest.raises(ValueError, match="abstract"):
        parse_chat({"messages": [{"role": "system", "content": "(name: tldr)"}]})
    with pytest.raises(ValueError, match="stage"):
        parse_chat({"messages": [{"role": "user", "content": "<abstract>x</abstract>"}]})


def test_bad_requests_get_openai_errors(make_server):
    server = make_server()
    with client_for(server) as client:
        with pytest.raises(openai.BadRequestError) as excinfo:
            client.chat.completions.create(
                model="m", messages=[*messages_for("tldr")[:1], {"role": "user", "content": "hi"}]
            )
        assert "abstract" in excinfo.value.body["message"]
        with pytest.raises(openai.BadRequestError):  # the stub rejects unknown stages
            ask(client, "summary")
        with pytest.raises(openai.NotFoundError):
            client.get("/nowhere", cast_to=object)
        assert [m.id for m in client.models.list().data] == ["bench-model"]
    assert server.stats()["by_status"] == {400: 2}


def test_keep_alive_reuses_one_connection(make_server):
    server = make_server()
    with client_for(server) as client:
        for stage in STAGES:
            ask(client, stage)
    stats = server.stats()
    assert stats["requests"] == 3
    assert stats["connections"] == 1


# --- faults -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "error", "status"),
    [
        ("429", openai.RateLimitError, 429),
        ("500", openai.InternalServerError, 500),
        ("503", openai.InternalServerError, 503),
    ],
)
def test_status_faults(make_server, fault, error, status):
    server = make_server(script=[fault, "ok"], retry_after_s=0.25)
    with client_for(server) as client:
        with pytest.raises(error) as excinfo:
            ask(client)
        assert excinfo.value.status_code == status
        assert set(excinfo.value.body) >= {"message", "type", "code"}
        if fault == "429":
            assert excinfo.value.response.headers["retry-after"] == "1"
            assert excinfo.value.response.headers["retry-after-ms"] == "250"
        assert ask(client).choices[0].finish_reason == "stop"  # the script's "ok"
    stats = server.stats()
    assert stats["faults"] == {fault: 1}
    assert stats["by_status"] == {status: 1, 200: 1}


def test_drop_is_a_connection_error(make_server):
    server = make_server(script=["drop"])
    with client_for(server) as client:
        with pytest.raises(openai.APIConnectionError) as excinfo:
            ask(client)
        assert not isinstance(excinfo.value, openai.APITimeoutError)
        assert ask(client).choices[0].finish_reason == "stop"
    stats = server.stats()
    assert stats["faults"] == {"drop": 1}
    assert stats["by_status"] == {200: 1}  # the dropped request got no status


def test_stall_times_out_without_blocking_others(make_server):
    stall = Gate()  # the stall lasts until the end of the test, however long it takes
    server = make_server(script=["stall"], stall_s=5.0, max_concurrent=1, hooks={"sleep": stall})
    results: list[object] = []

    def stalled() -> None:
        with client_for(server, timeout=1.0) as client:
            try:
                ask(client)
            except openai.APIError as exc:
                results.append(exc)

    thread = threading.Thread(target=stalled)
    thread.start()
    wait_until(lambda: server.stats()["faults"].get("stall") == 1, "the stall")
    with client_for(server) as client:  # served while the stall holds its request
        assert ask(client, "tags").choices[0].finish_reason == "stop"
    assert server.stats()["in_flight"] == 1  # the stalled request is still held
    thread.join(HANG_S)
    assert len(results) == 1 and isinstance(results[0], openai.APITimeoutError)
    assert stall.asked == [5.0]
    stall.open()


def test_stop_is_prompt_with_a_stalled_request(make_server):
    # A stall that never ends by itself: only stop() can end the request.
    server = make_server(script=["stall"], stall_s=30.0, hooks={"sleep": Gate()})
    errors: list[BaseException] = []

    def stalled() -> None:
        with client_for(server) as client:
            try:
                ask(client)
            except openai.APIError as exc:
                errors.append(exc)

    thread = threading.Thread(target=stalled)
    thread.start()
    wait_until(lambda: server.stats()["in_flight"] == 1, "the stalled request")
    server.stop()
    thread.join(HANG_S)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], openai.APIConnectionError)


@pytest.mark.parametrize("stage", STAGES)
def test_truncated_and_length_cut_the_json(make_server, stage):
    server = make_server(script=["truncated", "length"])
    with client_for(server) as client:
        truncated, length = ask(client, stage), ask(client, stage)
    full = json.dumps(stub_answer(stage, SPARSEFORMER))
    for completion, finish_reason in ((truncated, "stop"), (length, "length")):
        content = completion.choices[0].message.content
        assert completion.choices[0].finish_reason == finish_reason
        assert full.startswith(content) and len(content) < len(full)
        with pytest.raises(json.JSONDecodeError):
            json.loads(content)


def test_refusal(make_server):
    server = make_server(script=["refusal"])
    with client_for(server) as client:
        message = ask(client).choices[0].message
    assert message.content is None
    assert message.refusal == REFUSAL_TEXT


@pytest.mark.parametrize("stage", STAGES)
def test_schema_fault_is_valid_json_breaking_the_schema(make_server, stage):
    server = make_server(script=["schema"])
    with client_for(server) as client:
        content = ask(client, stage).choices[0].message.content
    data = json.loads(content)
    assert set(data) == set(stub_answer(stage, SPARSEFORMER))
    with pytest.raises(ValidationError):
        get_spec(stage).schema.model_validate(data)  # shape alone already fails


@pytest.mark.parametrize("stage", STAGES)
def test_ungrounded_fault_passes_shape_but_fails_grounding(make_server, stage):
    server = make_server(script=["ungrounded"])
    with client_for(server) as client:
        content = ask(client, stage).choices[0].message.content
    data = json.loads(content)
    schema = get_spec(stage).schema
    if stage != "tags":  # tags need the taxonomy to be checked at all
        schema.model_validate(data)  # the shape is fine without grounding context
    with pytest.raises(ValidationError) as excinfo:
        validate(stage, content)
    expected = {
        "tldr": "not in the abstract",
        "tags": UNGROUNDED_TAG,
        "claims": "not in the abstract",
    }
    assert expected[stage] in str(excinfo.value)


def test_fault_rates_are_deterministic_per_seed(make_server):
    abstracts = [f"<{i}> We study problem {i}." for i in range(200)]

    def outcomes(seed: int) -> list[int]:
        server = make_server(answer_fn=lambda s, a: {"tldr": "x"}, faults={"500": 0.3}, seed=seed)
        with client_for(server) as client:
            out = []
            for abstract in abstracts:
                try:
                    ask(client, abstract=abstract)
                    out.append(200)
                except openai.InternalServerError:
                    out.append(500)
        assert server.stats()["faults"].get("500", 0) == out.count(500)
        return out

    first, again, other = outcomes(7), outcomes(7), outcomes(8)
    assert first == again
    assert first != other
    assert 30 <= first.count(500) <= 90  # 60 expected; generous so the test is not flaky


def test_reask_self_corrects_content_faults(make_server):
    server = make_server(faults={"schema": 1.0})
    with client_for(server) as client:
        broken = ask(client, "claims").choices[0].message.content
        fixed = ask(client, "claims", reask=True).choices[0].message.content
    with pytest.raises(ValidationError):
        validate("claims", broken)
    validate("claims", fixed)
    stats = server.stats()
    assert stats["reasks"] == 1
    assert stats["by_key"] == {request_key("claims", SPARSEFORMER): 2}


def test_without_self_correct_every_attempt_is_faulted(make_server):
    server = make_server(faults={"ungrounded": 1.0}, self_correct=False, max_faults_per_key=3)
    with client_for(server) as client:
        contents = [ask(client, "tldr", reask=i > 0).choices[0].message.content for i in range(4)]
    for content in contents[:3]:
        with pytest.raises(ValidationError):
            validate("tldr", content)
    validate("tldr", contents[3])  # max_faults_per_key ends it
    assert server.stats()["faults"] == {"ungrounded": 3}


def test_max_faults_per_key_ends_transient_faults(make_server):
    server = make_server(faults={"500": 1.0}, max_faults_per_key=2)
    with client_for(server) as client:
        for _ in range(2):
            with pytest.raises(openai.InternalServerError):
                ask(client)
        assert ask(client).choices[0].finish_reason == "stop"
        with pytest.raises(openai.InternalServerError):  # another key has its own budget
            ask(client, "tags")


# --- limits -------------------------------------------------------------------------------


def test_rpm_limit_returns_429_with_retry_after(make_server):
    server = make_server(rpm=3)
    with client_for(server) as client:
        for stage in STAGES:
            ask(client, stage)
        with pytest.raises(openai.RateLimitError) as excinfo:
            ask(client)
    headers = excinfo.value.response.headers
    assert 1 <= int(headers["retry-after"]) <= 60
    assert 55_000 <= int(headers["retry-after-ms"]) <= 60_000
    assert excinfo.value.body["type"] == "requests"
    stats = server.stats()
    assert stats["rate_limited"] == {"requests": 1}
    assert stats["by_status"] == {200: 3, 429: 1}
    assert max_in_window(stats["arrivals"], 60) == 4
    assert max_in_window(stats["admitted"], 60) == 3
    assert stats["faults"] == {}  # limiter 429s are not injected faults


def test_tpm_limit(make_server):
    server = make_server(tpm=150)
    with client_for(server) as client:
        first = ask(client, "claims")
        assert first.usage.total_tokens <= 150 < 2 * first.usage.total_tokens
        with pytest.raises(openai.RateLimitError) as excinfo:
            ask(client, "claims")
    assert excinfo.value.body["type"] == "tokens"
    assert server.stats()["rate_limited"] == {"tokens": 1}


def test_rate_limiter_window_slides():
    limiter = RateLimiter(rpm=2, tpm=100)
    assert limiter.admit(0.0, 10) is None
    assert limiter.admit(10.0, 10) is None
    assert limiter.admit(20.0, 10) == (40.0, "requests")
    assert limiter.admit(60.5, 10) is None  # the t=0 request left the window
    assert limiter.admit(61.0, 10) == (9.0, "requests")
    wait, kind = RateLimiter(rpm=None, tpm=100).admit(0.0, 101)
    assert kind == "request_too_large"
    tokens = RateLimiter(rpm=None, tpm=100)
    assert tokens.admit(0.0, 60) is None
    assert tokens.admit(5.0, 30) is None
    assert tokens.admit(6.0, 30) == (54.0, "tokens")  # the first 60 must expire


def test_max_in_window():
    assert max_in_window([], 1.0) == 0
    assert max_in_window([0.0, 0.5, 0.99, 1.0, 1.5], 1.0) == 3
    assert max_in_window([3.0, 0.0, 1.0, 2.0], 60.0) == 4


def test_api_key(make_server):
    server = make_server(api_key="sk-right-key")
    with client_for(server, api_key="sk-wrong-key") as client:
        with pytest.raises(openai.AuthenticationError) as excinfo:
            ask(client)
        assert excinfo.value.code == "invalid_api_key"
        assert "sk-wrong-key" not in excinfo.value.message
        with pytest.raises(openai.AuthenticationError):
            client.models.list()
    with client_for(server, api_key="sk-right-key") as client:
        assert ask(client).choices[0].finish_reason == "stop"
    assert server.stats()["by_status"] == {401: 1, 200: 1}


async def test_concurrency_cap_queues_and_counts(make_server):
    # Nothing is answered before all six have arrived: two wait in the slots, four queue.
    everyone = Rounds(6)
    server = make_server(max_concurrent=2, hooks={"hold": everyone})
    client = openai.AsyncOpenAI(
        base_url=server.base_url, api_key="k", max_retries=0, timeout=HANG_S
    )
    async with client:
        results = await asyncio.gather(
            *(_ask_async(client, f"{SPARSEFORMER} Variant {i}.") for i in range(6))
        )
    assert all(r.choices[0].finish_reason == "stop" for r in results)
    stats = server.stats()
    assert everyone.rounds == 1
    assert stats["in_flight_max"] == 6
    assert stats["active_max"] == 2
    assert len(stats["by_key"]) == 6 and set(stats["by_key"].values()) == {1}


async def test_latency_jitter_is_bounded(make_server):
    waits = Gate(opened=True)  # records the latency of each answer instead of sleeping it
    server = make_server(latency=0.2, latency_jitter=0.1, seed=3, hooks={"sleep": waits})
    client = openai.AsyncOpenAI(
        base_url=server.base_url, api_key="k", max_retries=0, timeout=HANG_S
    )
    async with client:
        for i in range(6):
            await _ask_async(client, f"{SPARSEFORMER} Variant {i}.")
    assert len(waits.asked) == 6
    assert all(0.1 <= w <= 0.3 for w in waits.asked)  # latency 0.2 +- jitter 0.1
    assert len(set(waits.asked)) == 6  # jittered per request


async def _ask_async(client: openai.AsyncOpenAI, abstract: str):
    return await client.chat.completions.create(
        model="m", messages=messages_for("tldr", abstract), response_format={"type": "json_object"}
    )


def test_config_rejects_nonsense():
    with pytest.raises(ValueError, match="unknown faults"):
        ServerConfig(faults={"timeout": 0.1})
    with pytest.raises(ValueError, match="add up"):
        ServerConfig(faults={"500": 0.7, "503": 0.5})
    with pytest.raises(ValueError, match="script"):
        ServerConfig(script=["okay"])
    with pytest.raises(ValueError, match="rpm"):
        ServerConfig(rpm=0)
    with pytest.raises(ValueError, match="trickle_s"):
        ServerConfig(trickle_s=0)
    with pytest.raises(ValueError, match="models"):
        ServerConfig(models="broken")
    with pytest.raises(ValueError, match="basic_auth"):
        ServerConfig(basic_auth="alice:pw", api_key="sk-x")
    with pytest.raises(ValueError, match="add up"):
        ServerConfig(faults={"html": 0.6, "500": 0.5})  # malformed 200s share the transport draw


# --- malformed 200s, trickles, echoed credentials, /models ---------------------------------


def _port(server: OpenAIServer) -> int:
    return int(server.base_url.rsplit(":", 1)[1].split("/")[0])


def raw_request(
    server: OpenAIServer, method: str, path: str, body: dict | None = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """(status, lower-cased headers, body) of one request, without any client's parsing."""
    conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=HANG_S)
    try:
        payload = json.dumps(body) if body is not None else None
        conn.request(method, path, payload, {"content-type": "application/json", **headers})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def chat_body(stage: str = "tldr") -> dict:
    return {
        "model": "m",
        "messages": messages_for(stage),
        "response_format": {"type": "json_object"},
    }


@pytest.mark.parametrize("fault", MALFORMED_FAULTS)
def test_malformed_faults_are_200s_that_are_not_chat_completions(make_server, fault):
    server = make_server(script=[fault, "ok"])
    status, headers, body = raw_request(server, "POST", "/v1/chat/completions", chat_body())
    assert status == 200
    _, clean_headers, clean = raw_request(server, "POST", "/v1/chat/completions", chat_body())
    assert json.loads(clean)["choices"][0]["message"]["content"]  # the script's "ok"
    assert clean_headers["content-type"] == "application/json"
    if fault == "html":
        assert headers["content-type"] == "text/html" and body == HTML_PAGE.encode()
    elif fault in ("not_json", "truncated_body"):
        assert headers["content-type"] == "application/json"
        with pytest.raises(json.JSONDecodeError):
            json.loads(body)
        if fault == "truncated_body":  # a well-framed body that stops half-way
            assert body.startswith(b'{"id":"chatcmpl-') and len(body) < len(clean)
    elif fault == "deep_body":  # valid JSON no recursive parser reads
        assert body.startswith(b'{"choices": [[[') and body.count(b"[") == DEEP_BODY
        with pytest.raises(RecursionError):
            json.loads(body)
    else:
        data = json.loads(body)
        if fault == "json_array":
            assert isinstance(data, list) and data[0]["choices"]
        elif fault == "null_message":
            assert data["choices"][0]["message"] is None
        elif fault == "bad_usage":
            assert data["usage"]["prompt_tokens"] == "n/a"
            assert data["choices"][0]["message"]["content"]  # the answer itself is fine
        elif fault == "no_choices":
            assert data["choices"] == [] and data["usage"]["total_tokens"] > 0
    stats = server.stats()
    assert stats["faults"] == {fault: 1}
    assert stats["by_status"] == {200: 2}


def test_trickle_sends_headers_at_once_then_one_byte_per_interval(make_server):
    server = make_server(script=["trickle", "trickle"], trickle_s=0.05)
    with socket.create_connection(("127.0.0.1", _port(server)), timeout=HANG_S) as sock:
        payload = json.dumps(chat_body()).encode()
        # Timed from before the request: the server cannot send the fifth byte of the body
        # sooner than 4 gaps after it, however late this reader gets to its socket (timing
        # from the first byte read would shrink whenever a busy machine delays the reader).
        started = time.monotonic()
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1)
        assert head.startswith(b"HTTP/1.1 200") and b"content-length:" in head
        received = b"".join(sock.recv(1) for _ in range(5))
        assert time.monotonic() - started >= 4 * 0.05  # one byte per trickle_s: 4 gaps at least
        assert received == b'{"id"'
    # The client hung up half-way: the server noticed and stopped sending.
    wait_until(lambda: server.stats()["trickles_cut"] == 1, "the trickle cut")

    fast = make_server(script=["trickle"], trickle_s=0.001)
    with client_for(fast) as client:  # a client that waits gets a complete, clean answer
        assert json.loads(ask(client).choices[0].message.content) == stub_answer(
            "tldr", SPARSEFORMER
        )
    assert fast.stats()["trickles_cut"] == 0 and fast.stats()["faults"] == {"trickle": 1}


def test_echo_credentials_quotes_the_key_in_error_bodies(make_server):
    server = make_server(api_key="sk-right-key-123456", echo_credentials=True, script=["500"])
    wrong = "sk-wrong-key-abcdef-0123456789"
    with (
        client_for(server, api_key=wrong) as client,
        pytest.raises(openai.AuthenticationError) as denied,
    ):
        ask(client)
    assert wrong in denied.value.message  # the full key, not a masked one
    assert f"Authorization: 'Bearer {wrong}'" in denied.value.message
    with client_for(server, api_key="sk-right-key-123456") as client:
        with pytest.raises(openai.InternalServerError) as failed:
            ask(client)
        assert "Bearer sk-right-key-123456" in failed.value.message
        assert ask(client).choices[0].finish_reason == "stop"  # a 200 echoes nothing


def test_basic_auth_and_its_echo(make_server):
    server = make_server(basic_auth="alice:open-sesame", echo_credentials=True)
    good = "Basic " + base64.b64encode(b"alice:open-sesame").decode()
    bad = "Basic " + base64.b64encode(b"alice:guess-123").decode()
    assert raw_request(server, "GET", "/v1/models", authorization=good)[0] == 200
    status, _, body = raw_request(
        server, "POST", "/v1/chat/completions", chat_body(), authorization=good
    )
    assert status == 200 and json.loads(body)["choices"]
    status, _, body = raw_request(
        server, "POST", "/v1/chat/completions", chat_body(), authorization=bad
    )
    message = json.loads(body)["error"]["message"]
    assert status == 401 and "credentials 'alice:guess-123'" in message and bad in message
    # A Bearer key is not enough.
    with (
        client_for(server, api_key="sk-some-key") as client,
        pytest.raises(openai.AuthenticationError),
    ):
        client.models.list()


@pytest.mark.parametrize("mode", ["missing", "html", "wrong_shape", "forbidden", "no_model_scope"])
def test_models_modes(make_server, mode):
    server = make_server(models=mode)
    status, headers, body = raw_request(server, "GET", "/v1/models")
    if mode in ("missing", "forbidden", "no_model_scope"):
        assert status == {"missing": 404, "forbidden": 403, "no_model_scope": 403}[mode]
        assert json.loads(body)["error"]["message"]
    elif mode == "html":
        assert status == 200 and headers["content-type"] == "text/html"
    else:
        assert status == 200 and "data" not in json.loads(body)
    with client_for(server) as client:
        if mode == "forbidden":  # a project without access: chat is refused too
            with pytest.raises(openai.PermissionDeniedError):
                ask(client)
        else:  # chat completions are unaffected
            assert ask(client).choices[0].finish_reason == "stop"


@pytest.mark.parametrize(
    ("fault", "error"), [("401", openai.AuthenticationError), ("501", openai.APIStatusError)]
)
def test_permanent_faults(make_server, fault, error):
    server = make_server(script=[fault, "ok"])
    with client_for(server) as client:
        with pytest.raises(error) as excinfo:
            ask(client)
        assert excinfo.value.status_code == int(fault)
        assert ask(client).choices[0].finish_reason == "stop"
    assert server.stats()["by_status"] == {int(fault): 1, 200: 1}


def test_plain_chat_without_a_stage_is_answered_ok(make_server):
    server = make_server(faults={"html": 0.0})
    with client_for(server) as client:
        completion = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Reply with OK."}], max_tokens=1
        )
    assert completion.choices[0].message.content == PLAIN_ANSWER
    assert server.stats()["by_stage"] == {"chat": 1}
    assert server.stats()["by_status"] == {200: 1}


# --- command line -------------------------------------------------------------------------


def test_cli_serves_until_sigterm(tmp_path):
    stats_file = tmp_path / "stats.json"
    command = [sys.executable, "-m", "bench.openai_server", "--answer", "stub"]
    command += ["--script", "500,ok", "--duration", "600", "--stats-file", str(stats_file)]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=HANG_S) as client:
            with pytest.raises(openai.InternalServerError):
                ask(client)
            assert json.loads(ask(client).choices[0].message.content)["tldr"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=HANG_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=HANG_S)
    stats = json.loads(stats_file.read_text())
    assert stats["faults"] == {"500": 1}
    assert stats["by_status"] == {"500": 1, "200": 1}
