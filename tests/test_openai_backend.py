"""The openai backend through the real SDK and HTTP layer, replaying vcrpy cassettes.

Cassettes were recorded against pipeline/testing/openai_server.py on 127.0.0.1. To re-record:
    pytest tests/test_openai_backend.py --record-mode=rewrite
(the local server is started for each scenario). Replay (the default, record mode `none`)
never opens a socket: a request that is not in the cassette fails the test.
"""

from __future__ import annotations

import contextlib
import json
import re

import pytest
from endpoint import DigestAt
from samples import FAKE_KEY

from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.support import supported_tags
from pipeline.taxonomy import load_taxonomy

SAMPLE = "examples/iclr2026/000_83025b0b2ab87d39.txt"
REPLAY_URL = "http://127.0.0.1:9/v1"  # never contacted: ports are not matched on replay


@contextlib.contextmanager
def endpoint(record_mode: str, **config):
    """The local server when recording; a placeholder URL when replaying."""
    if record_mode == "none":
        yield REPLAY_URL
        return
    from pipeline.testing.answers import offline_answer_fn
    from pipeline.testing.openai_server import OpenAIServer, ServerConfig

    with OpenAIServer(ServerConfig(**config), answer_fn=offline_answer_fn()) as server:
        yield server.base_url


@pytest.fixture
def abstract_file(tmp_path, examples_dir):
    """One abstract (DR-GGAD, with the +5.14% AUROC result) in its own input file."""
    text = (examples_dir / SAMPLE.rsplit("/", 1)[1]).read_text(encoding="utf-8")
    paragraph = next(p for p in text.split("\n\n") if "+5.14%" in p)
    path = tmp_path / "one.txt"
    path.write_text(paragraph.strip() + "\n", encoding="utf-8")
    return path


def digest(tmp_path, path, url, *extra):
    return DigestAt(tmp_path)(url, path, *extra, model="test-model")


def summary(tmp_path):
    return [
        json.loads(line) for line in (tmp_path / "run" / "summaries.jsonl").read_text().splitlines()
    ]


def assert_all_played(cassette, record_mode):
    """On replay every recorded interaction must have been used (a stale cassette fails)."""
    if record_mode == "none":
        assert cassette.all_played, (
            f"{len(cassette.requests) - cassette.play_count} interactions not played"
        )


def requests_of(cassette):
    """The bodies of the stage requests (the preflight's GET /models has none)."""
    return [json.loads(r.body) for r in cassette.requests if r.method == "POST"]


def statuses(cassette):
    """(method, path tail, status) of every recorded interaction, in order."""
    return [
        (r.method, r.path.rsplit("/", 1)[-1], resp["status"]["code"])
        for r, resp in zip(cassette.requests, cassette.responses, strict=True)
    ]


@pytest.mark.vcr
def test_clean_answer_all_stages(vcr, record_mode, tmp_path, abstract_file, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with endpoint(record_mode) as url:
        result = digest(tmp_path, abstract_file, url)
    assert result.exit_code == 0, result.output
    (record,) = summary(tmp_path)
    for name, stage in record["stages"].items():
        assert stage["status"] == "ok", name
        assert (
            stage["provenance"]["backend"] == "openai"
            and stage["provenance"]["model"] == "test-model"
        )
        assert stage["provenance"]["attempts"] == 1 and stage["provenance"]["tokens_in"] > 0
    claims = record["stages"]["claims"]["output"]["claims"]
    assert any(c["value"] and c["value"].lstrip("+") == "5.14" for c in claims)
    bodies = requests_of(vcr)
    assert sorted(b["response_format"]["json_schema"]["name"] for b in bodies) == [
        "claims",
        "tags",
        "tldr",
    ]
    assert all(
        b["response_format"]["json_schema"]["strict"] is True and b["temperature"] == 0
        for b in bodies
    )
    assert_all_played(vcr, record_mode)


@pytest.mark.vcr
def test_invalid_answer_is_reasked_and_corrected(
    vcr, record_mode, tmp_path, abstract_file, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with endpoint(record_mode, script=("ungrounded", "ok")) as url:
        result = digest(tmp_path, abstract_file, url, "--stages", "claims")
    assert result.exit_code == 0, result.output
    (record,) = summary(tmp_path)
    assert record["stages"]["claims"]["status"] == "ok"
    assert record["stages"]["claims"]["provenance"]["attempts"] == 2
    first, second = requests_of(vcr)
    assert len(first["messages"]) == 2 and len(second["messages"]) == 4
    assert second["messages"][2]["role"] == "assistant"
    assert "rejected" in second["messages"][3]["content"]
    assert_all_played(vcr, record_mode)


@pytest.mark.vcr
def test_429_with_retry_after_then_success(vcr, record_mode, tmp_path, abstract_file, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with endpoint(record_mode, script=("429", "ok"), retry_after_s=0.05) as url:
        result = digest(tmp_path, abstract_file, url, "--stages", "tldr")
    assert result.exit_code == 0, result.output
    (record,) = summary(tmp_path)
    assert record["stages"]["tldr"]["status"] == "ok"
    assert (
        record["stages"]["tldr"]["provenance"]["attempts"] == 1
    )  # a transport retry is not a re-ask
    assert statuses(vcr) == [
        ("GET", "models", 200),  # the preflight
        ("POST", "completions", 429),
        ("POST", "completions", 200),
    ]
    assert vcr.responses[1]["headers"]["retry-after-ms"] == ["50"]
    assert_all_played(vcr, record_mode)


@pytest.mark.vcr
def test_401_stops_the_run_with_one_message(vcr, record_mode, tmp_path, abstract_file, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with endpoint(record_mode, api_key="the-right-key") as url:
        result = digest(tmp_path, abstract_file, url, "--stages", "tldr")
    assert result.exit_code == 3
    assert result.stderr.count("error:") == 1
    assert "rejected the API key (401" in result.stderr
    assert FAKE_KEY not in result.output
    assert statuses(vcr) == [("GET", "models", 401)]  # the preflight; no stage request sent
    assert_all_played(vcr, record_mode)


@pytest.mark.vcr
def test_malformed_200_is_retried_then_ok(vcr, record_mode, tmp_path, abstract_file, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setattr("pipeline.backends.openai_backend.OpenAIBackend.backoff_base_s", 0.01)
    with endpoint(record_mode, script=("html", "null_message", "ok")) as url:
        result = digest(tmp_path, abstract_file, url, "--stages", "tldr")
    assert result.exit_code == 0, result.output
    (record,) = summary(tmp_path)
    assert record["stages"]["tldr"]["status"] == "ok"
    assert record["stages"]["tldr"]["provenance"]["attempts"] == 1  # retried, not re-asked
    assert [s for s in statuses(vcr) if s[0] == "POST"] == [("POST", "completions", 200)] * 3
    headers = {k.lower(): v for k, v in vcr.responses[1]["headers"].items()}
    assert headers["content-type"] == ["text/html"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["requests_sent"] == 3 and manifest["transport_retries"] == 2
    assert_all_played(vcr, record_mode)


@pytest.mark.vcr
def test_json_object_mode_sends_an_example_and_rules_not_a_schema(
    vcr, record_mode, tmp_path, abstract_file, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with endpoint(record_mode) as url:
        result = digest(
            tmp_path, abstract_file, url, "--stages", "tags", "--response-format", "json_object"
        )
    assert result.exit_code == 0, result.output
    (record,) = summary(tmp_path)
    assert record["stages"]["tags"]["status"] == "ok" and record["stages"]["tags"]["output"]["tags"]
    (body,) = requests_of(vcr)
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]["content"]
    assert "(name: tags)" in system  # how pipeline/testing/chat.py tells the stage
    assert "shaped like this example:" in system and "Rules:" in system
    # No raw JSON schema for a small model to echo back; the ids are listed once.
    assert "$defs" not in system and "anyOf" not in system and '"enum"' not in system
    # Only the ids the abstract supports are offered (any other would be dropped), each once.
    listed = system.split("Taxonomy ids:", 1)[1].split("Return only a JSON object")[0]
    offered = re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*(?=,|\n|$)", listed)
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    assert sorted(offered) == sorted(supported_tags(record["abstract"], taxonomy))
    assert 0 < len(offered) < len(taxonomy.tags) // 4
    assert len(offered) == len(set(offered))
    assert_all_played(vcr, record_mode)
