"""The manifest counts requests actually sent (transport retries included), and each error
record's `attempts` is the number of requests its stage took, the same number its message
states."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

KEY = "sk-test-count-00000000000000"
ABSTRACT = (
    "We introduce GraphMix, a regularizer for graph neural networks. GraphMix improves node "
    "classification accuracy by 2.4% on Cora over GCN. It adds no parameters."
)


def inputs(tmp_path: Path) -> tuple[object, ...]:
    """The abstracts and the settings file a test wrote, as `digest run` arguments."""
    return tmp_path / "in.txt", "--config", tmp_path / "config.yaml"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(OpenAIBackend, "backoff_base_s", 0.01)
    monkeypatch.setattr(OpenAIBackend, "backoff_jitter_s", 0.01)


def test_a_transport_failure_after_a_reask_counts_every_request(tmp_path, digest_at):
    (tmp_path / "in.txt").write_text(ABSTRACT + "\n", encoding="utf-8")
    (tmp_path / "config.yaml").write_text("max_retries: 2\n", encoding="utf-8")
    # The first answer breaks the schema as a whole (re-asked); the re-ask gets three 500s.
    script = ("schema", "500", "500", "500")
    with OpenAIServer(ServerConfig(script=script), answer_fn=offline_answer_fn()) as server:
        result = digest_at(server.base_url, *inputs(tmp_path), "--stages", "claims", key=KEY)
        stats = server.stats()
    assert result.exit_code == 1, result.output + result.stderr
    (error,) = [json.loads(line) for line in (tmp_path / "run" / "errors.jsonl").open()]
    assert error["kind"] == "server_error"
    assert error["attempts"] == 4 == stats["requests"]
    assert error["message"] == (
        "server_error after 3 attempts: 500 The server had an error processing your request "
        "(injected). (4 requests in all, re-asks included)"
    )
    (record,) = [json.loads(line) for line in (tmp_path / "run" / "summaries.jsonl").open()]
    assert record["stages"]["claims"]["provenance"]["attempts"] == 2  # asks: first + re-ask
    assert record["stages"]["claims"]["error"]["message"] == error["message"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    claims = manifest["counts"]["stages"]["claims"]
    assert claims["backend_calls"] == manifest["requests_sent"] == 4
    assert claims["transport_retries"] == manifest["transport_retries"] == 2


def test_a_transport_failure_of_a_partial_reask_is_in_the_dropped_claims_record(
    tmp_path, digest_at
):
    """An invented claim next to valid ones is re-asked about alone; when that re-ask fails in
    transport the valid claims stay, and the dropped claim's record says why and counts every
    request."""
    (tmp_path / "in.txt").write_text(ABSTRACT + "\n", encoding="utf-8")
    (tmp_path / "config.yaml").write_text("max_retries: 2\n", encoding="utf-8")
    script = ("ungrounded", "500", "500", "500")
    with OpenAIServer(ServerConfig(script=script), answer_fn=offline_answer_fn()) as server:
        result = digest_at(server.base_url, *inputs(tmp_path), "--stages", "claims", key=KEY)
        stats = server.stats()
    assert result.exit_code == 0, result.output + result.stderr
    (error,) = [json.loads(line) for line in (tmp_path / "run" / "errors.jsonl").open()]
    assert error["kind"] == "ungrounded" and error["attempts"] == 4 == stats["requests"]
    assert "the re-ask about it failed: server_error after 3 attempts" in error["message"]
    (record,) = [json.loads(line) for line in (tmp_path / "run" / "summaries.jsonl").open()]
    assert record["stages"]["claims"]["status"] == "ok"
    assert record["stages"]["claims"]["output"]["claims"]  # the valid claims are kept


def test_every_error_record_states_its_attempts(tmp_path, digest_at):
    """Over a mix of faults, `attempts` is always the number the message gives."""
    from synthetic import write_abstracts

    write_abstracts(tmp_path / "in.txt", 30, seed=41)
    (tmp_path / "config.yaml").write_text("max_retries: 1\nmax_reasks: 1\n", encoding="utf-8")
    faults = {"500": 0.3, "json_array": 0.2, "ungrounded": 0.3}
    config = ServerConfig(faults=faults, self_correct=False, seed=8)
    with OpenAIServer(config, answer_fn=offline_answer_fn()) as server:
        result = digest_at(server.base_url, *inputs(tmp_path), key=KEY)
        stats = server.stats()
    assert result.exit_code == 1, result.output + result.stderr
    errors = [json.loads(line) for line in (tmp_path / "run" / "errors.jsonl").open()]
    kinds = {e["kind"] for e in errors}
    assert {"server_error", "malformed_response", "ungrounded"} <= kinds
    for error in errors:
        if error["kind"] in ("server_error", "malformed_response"):
            stated = re.search(r"after (\d+) attempts?|\((\d+) requests in all", error["message"])
            assert stated is not None, error["message"]
            in_all = re.search(r"\((\d+) requests in all", error["message"])
            number = int(in_all.group(1)) if in_all else int(stated.group(1))
            assert number == error["attempts"], error
        else:  # a stubborn content fault: both asks (max_reasks=1), each maybe retried once
            assert 2 <= error["attempts"] <= 4, error
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["requests_sent"] == stats["requests"]
    assert manifest["transport_retries"] == sum(
        s["transport_retries"] for s in manifest["counts"]["stages"].values()
    )
    assert (
        sum(s["backend_calls"] for s in manifest["counts"]["stages"].values())
        == (stats["requests"])
    )
