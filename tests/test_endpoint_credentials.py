"""Credentials in base_url: supported as HTTP Basic auth, and never printed, stored or logged.

`OPENAI_BASE_URL=http://user:pass@host/v1` is how a server behind a basic-auth proxy is
reached. The user:password is taken out of the URL (the aiohttp transport refuses a URL with
credentials next to an Authorization header) and sent as `Authorization: Basic ...`; the
URL that is printed, stored in the manifest and the cache key is the one without them. The
test server requires that Basic header and echoes what it received in its error bodies.
"""

from __future__ import annotations

import base64
import json

import pytest
from synthetic import write_abstracts
from test_secrets import digest_vv, files_under, leaks

from pipeline.config import load_settings
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

USER, PASSWORD = "alice", "open-Sesame-8d2f4c9a"
TOKEN = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
REDACTED = "<redacted>"


def with_credentials(base_url: str, password: str = PASSWORD) -> str:
    return base_url.replace("http://", f"http://{USER}:{password}@")


def assert_no_secret(files, log_text: str) -> None:
    for secret in (PASSWORD, TOKEN):
        assert secret not in log_text
        assert leaks(files, secret) == []


@pytest.mark.parametrize("verbosity", ["-v", "-vv"])
@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_url_credentials_work_and_are_in_no_output(tmp_path, transport, verbosity):
    inputs = tmp_path / "abstracts.txt"
    write_abstracts(inputs, 6, seed=31)
    config = tmp_path / "config.yaml"
    config.write_text(f"http_transport: {transport}\nmax_retries: 0\n", encoding="utf-8")
    # Some 500s (each echoing the credentials) fail their records for good: error records,
    # failed stages in summaries.jsonl and report.html all hold endpoint text.
    server_config = ServerConfig(
        basic_auth=f"{USER}:{PASSWORD}", echo_credentials=True, faults={"500": 0.3}, seed=4
    )
    with OpenAIServer(server_config) as server:
        url = with_credentials(server.base_url)
        code, log = digest_vv(
            tmp_path, "run", None, inputs, "--config", str(config),
            verbosity=verbosity, env={"OPENAI_BASE_URL": url},
        )  # fmt: skip
        stats = server.stats()
    text = log.read_text(encoding="utf-8")
    assert code == 1, text  # the 500s failed some records; the rest was answered
    assert "Cannot combine AUTHORIZATION" not in text and "Traceback" not in text
    assert stats["by_status"][200] > 0 and 401 not in stats["by_status"]  # Basic auth worked
    assert f"backend: openai (model bench-model at {server.base_url})" in text
    run = tmp_path / "run-run"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["base_url"] == server.base_url
    assert all(
        s["provenance"]["endpoint"] == server.base_url
        for r in map(json.loads, (run / "summaries.jsonl").open())
        for s in r["stages"].values()
    )
    errors = (run / "errors.jsonl").read_text(encoding="utf-8")
    assert f"request had Authorization: 'Basic {REDACTED}', credentials '{REDACTED}'" in errors
    if verbosity == "-vv":
        assert "DEBUG" in text
    written = files_under(run, tmp_path / "cache-run")
    assert {"summaries.jsonl", "errors.jsonl", "report.html", "manifest.json"} <= {
        p.name for p in written
    }
    assert_no_secret(written, text)


def test_wrong_url_credentials_stop_the_run_with_one_message(tmp_path):
    inputs = tmp_path / "abstracts.txt"
    write_abstracts(inputs, 3, seed=32)
    server_config = ServerConfig(basic_auth=f"{USER}:the-right-one", echo_credentials=True)
    with OpenAIServer(server_config) as server:
        code, log = digest_vv(
            tmp_path, "denied", with_credentials(server.base_url), inputs, env={}
        )  # the password comes in the --base-url flag this time
        stats = server.stats()
    text = log.read_text(encoding="utf-8")
    assert code == 3, text
    (line,) = [x for x in text.splitlines() if x.startswith("error:")]
    assert line.startswith(
        f"error: the endpoint ({server.base_url}) rejected the user:password of base_url (401: "
        "Incorrect user name or password."
    )
    assert line.endswith("fix them, or drop them and set OPENAI_API_KEY")
    assert stats["requests"] == 0
    # Refused at the start: no run written beside the log (the message is the record).
    assert [p.name for p in (tmp_path / "run-denied").iterdir()] == ["digest.log"]
    assert_no_secret(files_under(tmp_path / "run-denied"), text)


def test_a_key_and_url_credentials_together_are_refused(tmp_path, digest_at):
    inputs = tmp_path / "abstracts.txt"
    write_abstracts(inputs, 1, seed=33)
    url = f"http://{USER}:{PASSWORD}@127.0.0.1:9/v1"
    result = digest_at(url, inputs, key="sk-test-both-000000000000000")
    assert result.exit_code == 2
    assert result.stderr.count("error:") == 1
    assert "use the key (Bearer) or the URL credentials (HTTP Basic" in result.stderr
    assert PASSWORD not in result.output + result.stderr
    assert not (tmp_path / "run").exists()


def test_secrets_of_settings_cover_every_form_of_the_password():
    from pipeline.redact import Redactor, basic_token, secrets_of

    settings = load_settings(
        None, env={"OPENAI_BASE_URL": f"http://{USER}:p%40ss%2Fw0rd-x@host:8000/v1"}
    )
    redact = Redactor(secrets_of(settings))
    for form in ("p@ss/w0rd-x", "p%40ss%2Fw0rd-x", basic_token(USER, "p@ss/w0rd-x")):
        assert redact(f"echo: {form}!") == f"echo: {REDACTED}!"
    assert settings.public_dict()["base_url"] == "http://host:8000/v1"
    assert settings.endpoint == "http://host:8000/v1"
    ipv6 = load_settings(None, env={"OPENAI_BASE_URL": "http://bob:pw-123456789@[::1]:8000/v1/"})
    assert ipv6.endpoint == "http://[::1]:8000/v1"
    # A short secret is masked as a word only, so prose around it survives.
    short = Redactor(["pw12"])
    assert short("pw12 and pw123 and xpw12") == f"{REDACTED} and pw123 and xpw12"
    # Key-shaped text and Authorization values are masked even when they are not ours.
    assert Redactor()("Authorization: Basic YWxpY2U6eHl6") == f"Authorization: Basic {REDACTED}"
    assert Redactor()("a basic model, bearer instruments") == "a basic model, bearer instruments"
