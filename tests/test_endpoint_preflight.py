"""Fail fast, say why: one preflight request before any stage request.

A missing key, a refused connection, a name that does not resolve, 401/403/404, or a server
that is not OpenAI-compatible ends the run with exit 3 and ONE message naming the cause and
the fix, and the server's counters show that no stage request was sent. A server without
`GET /models` still works (one tiny chat completion stands in), a 501 is not retried, and
a run whose every result is cached contacts nobody and never imports the SDK.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from endpoint import DigestAt
from held import HeldBounds
from synthetic import write_abstracts
from timing import HANG_S

from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-test-preflight-00000000000000000"
N = 20
TRANSPORTS = ("aiohttp", "httpx")


@pytest.fixture(scope="module")
def answer():
    return offline_answer_fn()


@pytest.fixture
def inputs(tmp_path) -> Path:
    path = tmp_path / "in.txt"
    write_abstracts(path, N, seed=21)
    return path


def digest(tmp_path, inputs, base_url, *extra, key=KEY, transport="aiohttp", preflight_s=HANG_S):
    """`digest run` in this process. The preflight's bound is a hang guard unless a test of
    the bound passes its own: a busy machine must not turn a working server into a dead one."""
    config = tmp_path / "config.yaml"
    text = f"http_transport: {transport}\npreflight_timeout_s: {preflight_s:g}\n"
    config.write_text(text, encoding="utf-8")
    return DigestAt(tmp_path)(base_url, inputs, "--config", config, *extra, key=key)


def one_error(result) -> str:
    """The one `error:` line of a run that the endpoint refused (exit 3)."""
    assert result.exit_code == 3, result.output + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]


def no_run_folder(tmp_path) -> None:
    """A run the endpoint refused at the start wrote no run folder (nothing to show)."""
    assert not (tmp_path / "run").exists()


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_no_key_for_api_openai_com_refuses_at_once(tmp_path, inputs):
    result = digest(tmp_path, inputs, None, key=None)  # a connection would be blocked here
    assert one_error(result) == (
        "error: no API key for https://api.openai.com/v1: export OPENAI_API_KEY=sk-... "
        "(or point --base-url at a local server, or use --provider offline)"
    )
    assert not (tmp_path / "run").exists()  # refused before the inputs were even read


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_connection_refused_is_one_message(tmp_path, inputs, transport):
    port = closed_port()
    result = digest(tmp_path, inputs, f"http://127.0.0.1:{port}/v1", transport=transport)
    assert one_error(result) == (
        f"error: cannot connect to http://127.0.0.1:{port}/v1: connection refused (nothing "
        f"listens at 127.0.0.1:{port}); start the server, or fix base_url"
    )
    assert "timed out" not in result.stderr
    no_run_folder(tmp_path)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_name_that_does_not_resolve_is_one_message(tmp_path, inputs, monkeypatch, transport):
    looked_up = []
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):  # no DNS query leaves the machine
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.endswith(".invalid"):
            looked_up.append(name)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    result = digest(tmp_path, inputs, "http://llm.example.invalid:8000/v1", transport=transport)
    assert one_error(result) == (
        "error: cannot connect to http://llm.example.invalid:8000/v1: the host name "
        "llm.example.invalid does not resolve; check base_url"
    )
    assert looked_up and set(looked_up) == {"llm.example.invalid"}
    no_run_folder(tmp_path)


@pytest.mark.parametrize(
    ("config", "says"),
    [
        (
            {"api_key": "sk-the-right-key-000000000000"},
            "rejected the API key (401: Incorrect API key provided: sk-...0000.); "
            "set OPENAI_API_KEY to a valid key, or use --provider offline",
        ),
        (
            {"models": "forbidden"},
            "refused access (403: Project does not have access.); the API key is valid but "
            "has no access to model 'bench-model' or to this project: check the key's "
            "project and organization permissions, or choose a model it can use (--model)",
        ),
    ],
    ids=["401", "403"],
)
def test_401_and_403_stop_before_any_stage_request(tmp_path, inputs, answer, config, says):
    with OpenAIServer(ServerConfig(**config), answer_fn=answer) as server:
        result = digest(tmp_path, inputs, server.base_url)
        stats = server.stats()
    line = one_error(result)
    assert line == f"error: the endpoint ({server.base_url}) {says}"
    # 401: GET /models only. 403: the chat probe too (a restricted key may chat without
    # listing models), refused as well; no stage request either way.
    assert stats["http_requests"] == (2 if "403" in says else 1)
    assert set(stats["by_stage"]) <= {"chat"}  # the probe at most, no stage request
    no_run_folder(tmp_path)


def test_a_key_that_may_chat_but_not_list_models_is_not_refused(tmp_path, inputs, answer):
    """OpenAI's restricted keys can lack the models scope: GET /models is 403, chat works."""
    with OpenAIServer(ServerConfig(models="no_model_scope"), answer_fn=answer) as server:
        result = digest(tmp_path, inputs, server.base_url)
        stats = server.stats()
    assert result.exit_code == 0, result.stderr
    assert "error:" not in result.stderr
    assert stats["by_stage"] == {"chat": 1, "tldr": N, "tags": N, "claims": N}
    assert stats["http_requests"] == 1 + 1 + 3 * N  # GET /models (403), the probe, stages


def test_a_wrong_path_is_404_with_the_fix(tmp_path, inputs, answer):
    with OpenAIServer(ServerConfig(), answer_fn=answer) as server:
        wrong = server.base_url.removesuffix("/v1") + "/api"
        result = digest(tmp_path, inputs, wrong)
        stats = server.stats()
    assert one_error(result) == (
        f"error: not found at {wrong}: GET /models and POST /chat/completions both answered "
        "404 (Unknown request URL: /api/chat/completions); base_url should be the server's "
        "OpenAI-compatible root, usually ending in /v1, and check the model name ('bench-model')"
    )
    assert stats["http_requests"] == 2 and stats["requests"] == 0
    no_run_folder(tmp_path)


@pytest.mark.parametrize(
    ("config", "says"),
    [
        (
            {"models": "html", "faults": {"html": 1.0}},
            "GET /models answered 200 with an HTML page (text/html), not a model list, then "
            "POST /chat/completions answered 200 with an HTML page (text/html), not a chat "
            "completion",
        ),
        (
            {"models": "wrong_shape", "faults": {"json_array": 1.0}},
            "GET /models answered 200 with a JSON object with keys ['status', 'version'], not "
            "a model list ({'data': [...]}), then POST /chat/completions answered 200 with a "
            "JSON array, not a chat completion object",
        ),
    ],
    ids=["html", "wrong-shape"],
)
def test_a_server_that_is_not_openai_compatible(tmp_path, inputs, answer, config, says):
    with OpenAIServer(ServerConfig(**config), answer_fn=answer) as server:
        result = digest(tmp_path, inputs, server.base_url)
        stats = server.stats()
    assert one_error(result) == (
        f"error: {server.base_url} is not an OpenAI-compatible API: {says}; base_url should "
        "be the server's OpenAI-compatible root, usually ending in /v1"
    )
    assert stats["by_stage"] == {"chat": 1}  # the probe only: no stage request
    no_run_folder(tmp_path)


def test_a_server_without_models_works_through_the_probe(tmp_path, inputs, answer):
    with OpenAIServer(ServerConfig(models="missing"), answer_fn=answer) as server:
        result = digest(tmp_path, inputs, server.base_url, "--stages", "tldr")
        stats = server.stats()
    assert result.exit_code == 0, result.output + result.stderr
    assert stats["by_stage"] == {"chat": 1, "tldr": N}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["requests_sent"] == N  # stage requests; the preflight is not one


def test_a_501_is_not_retried(tmp_path, inputs, answer):
    with OpenAIServer(ServerConfig(faults={"501": 1.0}), answer_fn=answer) as server:
        result = digest(tmp_path, inputs, server.base_url, "--concurrency", "1")
        stats = server.stats()
    assert one_error(result) == (
        f"error: the endpoint ({server.base_url}) does not implement this request (501: "
        "response_format is not implemented (injected).); if the server lacks structured "
        "outputs, use --response-format json_object"
    )
    assert stats["by_status"] == {501: 1} and stats["requests"] == 1
    no_run_folder(tmp_path)  # the one request was refused: nothing to show


def test_a_fully_cached_run_contacts_nobody_and_never_imports_the_sdk(
    tmp_path, inputs, answer, digest_at
):
    with OpenAIServer(ServerConfig(), answer_fn=answer) as server:
        base_url = server.base_url
        assert digest(tmp_path, inputs, base_url).exit_code == 0
        assert server.stats()["requests"] == 3 * N
    # The server is gone: a preflight (or any request) would now fail the run.
    script = (
        "import sys\n"
        "from pipeline.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('openai imported:', 'openai' in sys.modules)\n"
    )
    args = digest_at.args(base_url, inputs, out="warm")
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "openai imported: False" in proc.stdout
    manifest = json.loads((tmp_path / "warm" / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["requests_sent"] == 0
    assert sum(s["cache_hits"] for s in manifest["counts"]["stages"].values()) == 3 * N


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_that_does_not_speak_http(tmp_path, inputs, transport):
    """aiohttp raises its own error for a bad status line (the SDK lets it through)."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        for _ in range(4):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        result = digest(tmp_path, inputs, f"http://127.0.0.1:{port}/v1", transport=transport)
    finally:
        listener.close()
    line = one_error(result)
    assert line.startswith(
        f"error: http://127.0.0.1:{port}/v1 is not an OpenAI-compatible API"
    ) or (line.startswith(f"error: cannot connect to http://127.0.0.1:{port}/v1: ")), line
    no_run_folder(tmp_path)


def test_a_403_names_the_fix_for_each_kind_of_credentials():
    """The key, a user:password in base_url, or nothing at all: the fix names what was sent."""
    import httpx2
    import openai

    from pipeline.backends.openai_backend import OpenAIBackend
    from pipeline.config import load_settings
    from pipeline.limits import Limiter

    url = "http://127.0.0.1:9/v1"
    request = httpx2.Request("GET", url + "/models")
    response = httpx2.Response(403, request=request)
    denied = openai.PermissionDeniedError(
        "Forbidden", response=response, body={"error": {"message": "Forbidden."}}
    )

    def message(base_url: str, env: dict[str, str]) -> str:
        settings = load_settings(
            None, env=env, overrides={"provider": "openai", "base_url": base_url, "model": "m"}
        )
        return OpenAIBackend(settings, Limiter(max_concurrency=1))._fatal_message(denied)

    assert message(url, {"OPENAI_API_KEY": KEY}) == (
        f"the endpoint ({url}) refused access (403: Forbidden.); the API key is valid but has "
        "no access to model 'm' or to this project: check the key's project and organization "
        "permissions, or choose a model it can use (--model)"
    )
    assert message(url.replace("//", "//bob:pw@"), {}) == (
        f"the endpoint ({url}) refused access (403: Forbidden.); the user:password of "
        "base_url is valid but has no access to model 'm' there: check that user's "
        "permissions at the server or proxy, or choose a model it can use (--model)"
    )
    assert message(url, {}) == (
        f"the endpoint ({url}) refused access (403: Forbidden.); no credentials were sent: "
        "set OPENAI_API_KEY (or a user:password in base_url), or choose a model it serves "
        "(--model)"
    )


# --- the preflight's time bound -----------------------------------------------------------


def silent_server():
    """A listener on 127.0.0.1 that accepts every connection, reads, and never answers."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)  # kept open, never written to

    threading.Thread(target=serve, daemon=True).start()
    return listener, held


def test_the_preflight_is_bounded_well_under_5s_connect_included():
    """Issue 10.5: a dead endpoint ends the run in under 5 s, SDK import and start-up
    included; the preflight (GET /models and any probe together) gets 3 s of it by default,
    and config.yaml can give a slow proxy more."""
    from pipeline.config import Settings, load_settings

    assert Settings().preflight_timeout_s == 3.0
    assert "preflight_timeout_s: 3 " in (REPO / "config.yaml").read_text(encoding="utf-8")
    config = REPO / "config.yaml"
    assert load_settings(config).preflight_timeout_s == 3.0


@pytest.mark.preflight_bound
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_that_accepts_and_never_answers_is_one_message(tmp_path, inputs, transport):
    listener, held = silent_server()
    port = listener.getsockname()[1]
    try:
        result = digest(
            tmp_path, inputs, f"http://127.0.0.1:{port}/v1", transport=transport, preflight_s=3
        )  # the bound is what ends it: the shipped default
    finally:
        listener.close()
        for conn in held:
            conn.close()
    assert held  # the connection was accepted: this is the timeout, not a refusal
    assert one_error(result) == (
        f"error: no answer from http://127.0.0.1:{port}/v1 within 3s (GET /models); check "
        "that the server is up and reachable from here, and base_url (a slow proxy: raise "
        "preflight_timeout_s in config.yaml)"
    )
    no_run_folder(tmp_path)


def test_the_probe_gets_only_what_is_left_of_the_bound(tmp_path, inputs, answer, monkeypatch):
    """GET /models and the chat probe share one bound: the probe is not given a fresh one."""
    from pipeline.backends import openai_backend

    given: list[float] = []
    real = openai_backend._bounded

    async def bounded(request, timeout_s):
        given.append(timeout_s)
        return await real(request, timeout_s)

    monkeypatch.setattr(openai_backend, "_bounded", bounded)
    with OpenAIServer(ServerConfig(models="missing"), answer_fn=answer) as server:
        result = digest(tmp_path, inputs, server.base_url, "--stages", "tldr")
        stats = server.stats()
    assert result.exit_code == 0, result.output + result.stderr
    assert stats["by_stage"] == {"chat": 1, "tldr": N}
    bound = HANG_S  # the test's preflight_timeout_s
    preflight, stage_requests = given[:2], given[2:]
    assert preflight[0] == bound and 0 < preflight[1] < bound  # the probe: what is left
    assert stage_requests == [60.0] * N  # stage requests keep timeout_s


def test_a_slow_but_working_server_without_models_is_not_refused(
    tmp_path, inputs, answer, monkeypatch
):
    """A server that answers GET /models with a 404 is alive; when its first chat completion
    (a cold model, say) takes longer than what is left of the bound, the run goes on and
    every stage request gets the full timeout_s."""
    # The first chat completion (the probe) stalls; the rest answer. The probe's bound ends
    # as the server reports the stall (HeldBounds), not when the clock runs out.
    bounds = HeldBounds().install(monkeypatch)
    config = ServerConfig(models="missing", script=("stall",), stall_s=30.0)
    with OpenAIServer(config, answer_fn=answer, held=bounds.held) as server:
        result = digest(tmp_path, inputs, server.base_url, "--stages", "tldr")
        stats = server.stats()
    assert bounds.ended == 1
    assert result.exit_code == 0, result.output + result.stderr
    assert "error:" not in result.stderr
    assert stats["by_stage"] == {"chat": 1, "tldr": N}
    assert (
        f"/models answered 404 and a 1-token chat completion did not answer within {HANG_S:g}s; "
        "going on (each request may take timeout_s=60s)"
    ) in result.stderr
