"""`digest batch submit | status | collect` against the local server's Files + Batches API
(bench/batch_api.py) through the real openai client, compared with `digest run` against a
server with the same configuration: the summaries must be the same, whatever the batches
did (out-of-order lines, error lines, expiry, invalid answers, a failed batch, a crash).

Batches advance one status per retrieve, so `collect --wait --poll-interval 0` ends after a
few polls and nothing here depends on timing.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from synthetic import write_abstracts

from bench.batch_api import BatchConfig
from bench.openai_server import OpenAIServer, ServerConfig, offline_answer_fn, request_key
from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.batch.state import load_state
from pipeline.cli import main
from pipeline.engine.stage_runner import StageRunner
from pipeline.errors import StorageError

pytestmark = pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])

FAKE_KEY = "sk-test-batch-000000000000000000000000"
N_ABSTRACTS = 8
STAGES = ("tldr", "tags", "claims")
PAIRS = N_ABSTRACTS * len(STAGES)


@functools.cache
def _offline():
    return offline_answer_fn()


def answer(stage: str, abstract: str) -> dict:
    """The offline extractor's answer (deterministic)."""
    return _offline()(stage, abstract)


@pytest.fixture(autouse=True)
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(OpenAIBackend, "backoff_base_s", 0.01)
    monkeypatch.setattr(OpenAIBackend, "backoff_jitter_s", 0.01)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("batch") / "abstracts.txt"
    write_abstracts(path, N_ABSTRACTS, seed=5)
    return path


@pytest.fixture
def servers():
    started: list[OpenAIServer] = []

    def make(batch: BatchConfig | None = None, **config) -> OpenAIServer:
        server = OpenAIServer(ServerConfig(batch=batch, **config), answer_fn=answer)
        server.start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def digest(*args: object, code: int | None = 0):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    if code is not None:
        assert result.exit_code == code, result.output
    return result


def common(server: OpenAIServer, cache: Path) -> list[object]:
    return ["--base-url", server.base_url, "--model", "bench-model", "--cache-dir", cache,
            "--no-progress"]  # fmt: skip


def submit(server, corpus, folder: Path, *extra, code: int | None = 0):
    return digest("batch", "submit", corpus, "--out", folder,
                  *common(server, folder.parent / "cache"), *extra, code=code)  # fmt: skip


def collect(folder: Path, *extra, code: int | None = 0):
    return digest("batch", "collect", folder, "--wait", "--poll-interval", 0, "--no-progress",
                  *extra, code=code)  # fmt: skip


def sync_run(servers, corpus, tmp_path: Path, **config) -> Path:
    """`digest run` of the corpus against a fresh server with the same configuration."""
    server = servers(**config)
    out = tmp_path / "sync"
    digest("run", corpus, "--out", out, *common(server, tmp_path / "sync-cache"), code=None)
    return out


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def summaries(run_dir: Path) -> list[dict]:
    """summaries.jsonl without provenance (timing, cache flags, batch ids)."""
    rows = read_jsonl(run_dir / "summaries.jsonl")
    for row in rows:
        for stage in row["stages"].values():
            stage.pop("provenance", None)
    return rows


def errors(run_dir: Path) -> list[dict]:
    return sorted(
        (read_jsonl(run_dir / "errors.jsonl")), key=lambda e: (e["id"], e["stage"], e["kind"])
    )


def batch_stats(server: OpenAIServer) -> dict:
    return server.stats()["batch"]


def outputs(folder: Path) -> dict[str, bytes]:
    """Every file of a batch folder (and its cache), by relative path."""
    files = {}
    for root in (folder, folder.parent / "cache"):
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                files[str(path.relative_to(folder.parent))] = path.read_bytes()
    return files


# --- the happy path ---------------------------------------------------------------------


def test_submit_collect_equals_a_synchronous_run(servers, corpus, tmp_path):
    server = servers(batch=BatchConfig(polls_per_status=2))
    folder = tmp_path / "b"
    out = submit(server, corpus, folder).output
    assert f"{N_ABSTRACTS} abstracts: {PAIRS} (abstract, stage) pairs, 0 cached, " in out
    assert f"{PAIRS} requests in 1 request file(s)" in out
    state = load_state(folder)
    (part,) = state.parts
    assert part.batch_id and part.file_id and part.status == "validating"
    assert json.loads(json.dumps(state.settings)) == state.settings
    assert FAKE_KEY not in (folder / "batch.json").read_text()
    lines = read_jsonl(folder / part.file)
    assert {line["url"] for line in lines} == {"/v1/chat/completions"}
    # custom_id is the StageRunner's cache key, and no chat request was sent synchronously
    assert len({line["custom_id"] for line in lines}) == PAIRS
    assert server.stats()["requests"] == 0

    collected = collect(folder).output
    assert f"batch results: {PAIRS} answered, 0 error line(s)" in collected
    assert "0 synchronous request(s)" in collected
    assert server.stats()["batch"]["lines_answered"] == PAIRS
    assert server.stats()["requests"] == 0  # the batch answered everything

    reference = sync_run(servers, corpus, tmp_path)
    assert len(summaries(folder)) == N_ABSTRACTS
    assert summaries(folder) == summaries(reference)
    assert errors(folder) == errors(reference)
    cache_keys = {
        json.loads(line)["key"]
        for name in STAGES
        for line in (tmp_path / "cache" / f"{name}.jsonl").read_text().splitlines()
    }
    assert cache_keys == {line["custom_id"] for line in lines}
    rows = read_jsonl(folder / "summaries.jsonl")
    assert {s["provenance"]["batch_id"] for r in rows for s in r["stages"].values()} == {
        part.batch_id
    }
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["requests_sent"] == 0
    assert (folder / "report.html").exists() and (folder / "summaries.csv").exists()
