"""`digest batch submit | status | collect` against the local server's Files + Batches API
(pipeline/testing/batch_api.py) through the real openai client, compared with `digest run`
against a server with the same configuration: the summaries must be the same, whatever the
batches did (out-of-order lines, error lines, expiry, invalid answers, a failed batch, a crash).

Batches advance one status per retrieve, and `collect --wait` sleeps on a fake clock, so it
ends after a few polls and nothing here depends on timing.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import pytest
from batchkit import (
    FAKE_KEY,
    FakeClock,
    batch_stats,
    collect,
    common,
    custom_ids,
    digest,
    errors,
    outputs,
    read_jsonl,
    set_batch,
    submit,
    summaries,
    sync_run,
)
from hostile import check_run, hostile_answer_fn
from synthetic import write_abstracts

from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.batch import waiting
from pipeline.batch.api import BatchAPI
from pipeline.batch.state import load_state
from pipeline.engine.stage_runner import StageRunner
from pipeline.errors import StorageError
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.batch_api import BatchConfig
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

pytestmark = pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])

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
    monkeypatch.setattr(waiting, "CLOCK", FakeClock())


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
    # the API answers out of order; the run folder keeps input order all the same
    (part,) = load_state(folder).parts
    assert part.status == "completed" and part.downloaded
    assert part.result_files() == ["results/part-0001-output.jsonl"]  # never a server id
    answered = [r["custom_id"] for r in read_jsonl(folder / part.result_files()[0])]
    assert sorted(answered) == sorted(line["custom_id"] for line in lines)
    assert answered != [line["custom_id"] for line in lines]
    tokens = load_state(folder).tokens
    assert tokens.batch_in > 0 and tokens.batch_out > 0 and tokens.sync_in == 0
    cost = (tokens.batch_in * 1.0 + tokens.batch_out * 4.0) / 1e6 * 0.5
    assert f"estimated cost ${cost:.4f} ($" in collected and "at the Batch price" in collected


# --- failures inside batches ------------------------------------------------------------


def test_an_error_line_is_asked_synchronously(servers, corpus, tmp_path):
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    failing = custom_ids(folder)[4]
    set_batch(server, line_errors={failing: 500})
    out = collect(folder).output
    assert f"batch results: {PAIRS - 1} answered, 1 error line(s) (0 expired" in out
    stats = server.stats()
    assert stats["requests"] == 1 and stats["batch"]["lines_by_status"] == {200: PAIRS - 1, 500: 1}
    assert summaries(folder) == summaries(sync_run(servers, corpus, tmp_path))
    rows = read_jsonl(folder / "summaries.jsonl")
    sync_only = [
        s for r in rows for s in r["stages"].values() if s["provenance"]["batch_id"] is None
    ]
    assert [s["provenance"]["cache_key"] for s in sync_only] == [failing]


def test_an_expired_batch_keeps_its_answers_and_the_rest_is_asked(servers, corpus, tmp_path):
    server = servers(batch=BatchConfig(expire_after_lines=10))
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    out = collect(folder).output
    assert f"batch results: 10 answered, {PAIRS - 10} error line(s) ({PAIRS - 10} expired" in out
    assert load_state(folder).parts[0].status == "expired"
    assert server.stats()["requests"] == PAIRS - 10  # only the expired ones, once each
    assert summaries(folder) == summaries(sync_run(servers, corpus, tmp_path))


def test_an_invalid_answer_in_the_output_is_reasked_like_a_synchronous_one(
    servers, corpus, tmp_path
):
    faults = {"schema": 0.3, "ungrounded": 0.2}
    server = servers(faults=faults, seed=3)
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    out = collect(folder).output
    assert f"batch results: {PAIRS} answered, 0 error line(s)" in out
    stats = server.stats()
    bad = sum(stats["faults"].values())
    assert bad > 0 and stats["requests"] == stats["reasks"] == bad  # one re-ask per bad line
    reference = sync_run(servers, corpus, tmp_path, faults=faults, seed=3)
    assert summaries(folder) == summaries(reference)
    assert errors(folder) == errors(reference)
    rows = read_jsonl(folder / "summaries.jsonl")
    attempts = [s["provenance"]["attempts"] for r in rows for s in r["stages"].values()]
    assert attempts.count(2) == bad and set(attempts) == {1, 2}


def test_a_batch_that_fails_validation_is_run_synchronously(servers, corpus, tmp_path):
    server = servers(batch=BatchConfig(max_requests=5))  # the file has more: it fails
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    status = digest("batch", "status", folder).output
    assert "failed" in status and "too_many_requests" in status
    out = collect(folder).output
    assert f"0 answered, 0 error line(s) (0 expired or cancelled), {PAIRS} without a line" in out
    assert server.stats()["requests"] == PAIRS
    assert summaries(folder) == summaries(sync_run(servers, corpus, tmp_path))


# --- idempotence and crashes -------------------------------------------------------------


def test_collecting_twice_changes_nothing_and_sends_nothing(servers, corpus, tmp_path):
    server = servers(faults={"schema": 0.3}, seed=1)
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    collect(folder)
    before, sent = outputs(folder), server.stats()["http_requests"]
    again = collect(folder).output
    assert "already collected" in again and "nothing sent" in again
    assert server.stats()["http_requests"] == sent
    assert outputs(folder) == before


def test_a_crash_between_download_and_cache_write_loses_nothing(
    servers, corpus, tmp_path, monkeypatch
):
    server = servers(faults={"schema": 0.3}, seed=2)
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    store = StageRunner.store
    calls = {"n": 0}

    def failing_store(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 5:  # some written, then the disk fills up
            raise StorageError("disk full (simulated)")
        return store(self, *args, **kwargs)

    monkeypatch.setattr(StageRunner, "store", failing_store)
    assert "disk full" in collect(folder, code=2).output
    state = load_state(folder)
    assert state.parts[0].downloaded and state.collected_at is None
    downloads = batch_stats(server)["content_downloads"]
    monkeypatch.setattr(StageRunner, "store", store)
    collect(folder)
    assert batch_stats(server)["content_downloads"] == downloads  # read from disk again
    assert summaries(folder) == summaries(
        sync_run(servers, corpus, tmp_path, faults={"schema": 0.3}, seed=2)
    )
    # every answered line was used: nothing but re-asks of bad lines went synchronously
    stats = server.stats()
    assert stats["reasks"] > 0 and stats["requests"] == stats["reasks"]
    assert "already collected" in collect(folder).output


# --- submit: splitting, resuming, status ---------------------------------------------------


def test_split_at_small_limits_one_batch_per_file(servers, corpus, tmp_path):
    server = servers()
    folder = tmp_path / "b"
    dry = submit(server, corpus, folder, "--max-requests", 10, "--dry-run").output
    assert f"{PAIRS} requests in 3 request file(s)" in dry and "nothing written" in dry
    assert not folder.exists() and batch_stats(server)["files_uploaded"] == 0
    out = submit(server, corpus, folder, "--max-requests", 10).output
    assert f"{PAIRS} requests in 3 request file(s)" in out
    state = load_state(folder)
    assert [p.requests for p in state.parts] == [10, 10, PAIRS - 20]
    assert len({p.batch_id for p in state.parts}) == 3
    for part in state.parts:
        data = (folder / part.file).read_bytes()
        assert hashlib.sha256(data).hexdigest() == part.sha256 and len(data) == part.bytes
    biggest = max(
        len(line)
        for p in state.parts
        for line in (folder / p.file).read_bytes().splitlines(keepends=True)
    )
    by_bytes = tmp_path / "by-bytes"
    submit(server, corpus, by_bytes, "--max-bytes", 2 * biggest, "--cache-dir", tmp_path / "c2")
    parts = load_state(by_bytes).parts
    assert len(parts) > 1 and all(p.bytes <= 2 * biggest for p in parts)
    for part, after in zip(parts, parts[1:], strict=False):  # each part holds what fits
        first = (by_bytes / after.file).read_bytes().splitlines(keepends=True)[0]
        assert part.bytes + len(first) > 2 * biggest
    assert sum(p.requests for p in parts) == PAIRS
    collect(folder)
    assert summaries(folder) == summaries(sync_run(servers, corpus, tmp_path))


def test_a_submit_cut_after_create_resumes_without_a_second_batch(
    servers, corpus, tmp_path, monkeypatch
):
    server = servers()
    folder = tmp_path / "b"
    create = BatchAPI.create

    def create_then_crash(self, *args, **kwargs):
        create(self, *args, **kwargs)
        raise KeyboardInterrupt  # the answer is lost before batch.json records it

    monkeypatch.setattr(BatchAPI, "create", create_then_crash)
    assert submit(server, corpus, folder, code=130).exit_code == 130
    assert (tmp_path / "latest-batch").readlink() == Path("b")  # pointed to before any upload
    state = load_state(folder)
    assert state.parts[0].file_id is not None and state.parts[0].batch_id is None
    assert "the submit did not finish" in digest("batch", "status", folder).output
    assert "did not finish" in collect(folder, code=2).output
    monkeypatch.setattr(BatchAPI, "create", create)
    out = submit(server, corpus, folder).output
    assert "uploaded 0 file(s), created 0 batch(es), found 1 made before an interruption" in out
    assert "resumed" in out
    assert batch_stats(server)["batches_created"] == 1
    assert batch_stats(server)["files_uploaded"] == 1
    again = submit(server, corpus, folder).output
    assert "already submitted: 1 batch(es)" in again and "nothing sent" in again
    assert batch_stats(server)["batches_created"] == 1


def test_status_of_the_latest_submit_and_cached_pairs_are_not_submitted(servers, corpus, tmp_path):
    server = servers(batch=BatchConfig(polls_per_status=3))
    digest("run", corpus, "--stages", "tldr", *common(server, tmp_path / "outputs" / "cache"))
    sent = server.stats()["requests"]
    out = digest("batch", "submit", corpus, *common(server, tmp_path / "outputs" / "cache")).output
    assert f"{PAIRS} (abstract, stage) pairs, {N_ABSTRACTS} cached" in out
    assert f"{PAIRS - N_ABSTRACTS} requests in 1 request file(s)" in out
    assert (tmp_path / "outputs" / "latest-batch").is_symlink()
    again = digest("batch", "submit", corpus, *common(server, tmp_path / "outputs" / "cache"))
    assert "already submitted: 1 batch(es)" in again.output
    assert len(list((tmp_path / "outputs").glob("batch-*"))) == 1
    status = digest("batch", "status").output
    assert "validating" in status and f"0/{PAIRS - N_ABSTRACTS} requests done" in status
    assert "not finished" in status
    for _ in range(8):
        status = digest("batch", "status").output
    assert (
        "completed" in status
        and f"{PAIRS - N_ABSTRACTS}/{PAIRS - N_ABSTRACTS} requests done" in status
    )
    assert "digest batch collect" in status
    pending = digest("batch", "collect", "--no-progress").output
    assert "already" not in pending and "answered" in pending
    assert server.stats()["requests"] == sent
    assert "collected" in digest("batch", "status").output
    assert (tmp_path / "outputs" / "latest" / "summaries.jsonl").exists()
    latest = (tmp_path / "outputs" / "latest").readlink()
    assert (
        latest.name.startswith("batch-")
        and latest == (tmp_path / "outputs" / "latest-batch").readlink()
    )


def test_collect_before_the_batches_end_downloads_nothing_and_writes_no_run(
    servers, corpus, tmp_path
):
    server = servers(batch=BatchConfig(polls_per_status=4))
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    out = digest("batch", "collect", folder, "--no-progress").output
    assert "1 of 1 batch(es) not ended" in out and not (folder / "summaries.jsonl").exists()
    assert server.stats()["requests"] == 0
    collect(folder)
    assert len(summaries(folder)) == N_ABSTRACTS


def test_offline_provider_is_refused(corpus, tmp_path):
    out = digest("batch", "submit", corpus, "--provider", "offline", code=2).output
    assert "batch mode needs the openai provider" in out


def test_url_credentials_are_never_stored_and_collect_takes_them_again(
    servers, corpus, tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY")  # a proxy's user:password instead (HTTP Basic)
    server = servers(basic_auth="alice:s3cret-pw")
    secret_url = server.base_url.replace("http://", "http://alice:s3cret-pw@")
    folder = tmp_path / "b"
    args = common(server, tmp_path / "cache", url=secret_url)
    digest("batch", "submit", corpus, "--out", folder, *args)
    without = collect(folder, code=3).output  # no credentials: the endpoint refuses
    assert "401" in without and "s3cret" not in without
    out = collect(folder, "--base-url", secret_url).output
    assert "s3cret" not in out and f"{PAIRS} answered" in out
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"s3cret" not in path.read_bytes(), path


def test_collect_while_a_batch_runs_caches_the_ended_ones_valid_answers(servers, corpus, tmp_path):
    import openai

    server = servers(faults={"schema": 0.3}, seed=4)
    folder = tmp_path / "b"
    submit(server, corpus, folder, "--max-requests", 12)
    first, second = load_state(folder).parts
    client = openai.OpenAI(base_url=server.base_url, api_key=FAKE_KEY, max_retries=0)
    while client.batches.retrieve(first.batch_id).status != "completed":
        pass  # only a retrieve moves a batch on: the first ends, the second stays behind
    out = digest("batch", "collect", folder, "--no-progress").output
    assert "1 of 2 batch(es) not ended" in out and not (folder / "summaries.jsonl").exists()
    invalid = sum(server.stats()["faults"].values())  # schema faults in the first batch
    assert f"cached {12 - invalid} valid answer(s)" in out and 0 < invalid < 12
    cached = {
        json.loads(line)["key"]
        for name in STAGES
        for line in (tmp_path / "cache" / f"{name}.jsonl").read_text().splitlines()
    }
    first_ids = [line["custom_id"] for line in read_jsonl(folder / first.file)]
    assert len(cached) == 12 - invalid and cached < set(first_ids)
    assert server.stats()["requests"] == 0  # nothing re-asked yet
    collect(folder)
    reference = sync_run(servers, corpus, tmp_path, faults={"schema": 0.3}, seed=4)
    assert summaries(folder) == summaries(reference)
    assert errors(folder) == errors(reference)


def test_a_cancelled_batch_keeps_its_answers_and_the_rest_is_asked(servers, corpus, tmp_path):
    import openai

    server = servers(batch=BatchConfig(polls_per_status=4))
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    (part,) = load_state(folder).parts
    client = openai.OpenAI(base_url=server.base_url, api_key=FAKE_KEY, max_retries=0)
    while client.batches.retrieve(part.batch_id).request_counts.completed == 0:
        pass  # in progress, some lines answered
    client.batches.cancel(part.batch_id)
    answered = batch_stats(server)["lines_answered"]
    assert 0 < answered < PAIRS
    out = collect(folder).output
    assert f"batch results: {answered} answered, 0 error line(s)" in out
    assert f"{PAIRS - answered} without a line" in out
    assert load_state(folder).parts[0].status == "cancelled"
    assert server.stats()["requests"] == PAIRS - answered
    assert summaries(folder) == summaries(sync_run(servers, corpus, tmp_path))


def test_lines_still_invalid_after_the_reasks_fail_as_in_a_synchronous_run(
    servers, corpus, tmp_path
):
    config = {"faults": {"refusal": 0.15, "ungrounded": 0.15}, "seed": 9, "self_correct": False}
    server = servers(**config)
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    out = collect(folder, code=1).output  # some stages failed: exit 1, all files written
    assert "failed in" in out and "errors.jsonl" in out
    reference = sync_run(servers, corpus, tmp_path, **config)
    assert errors(folder) == errors(reference) and len(errors(folder)) > 0
    assert summaries(folder) == summaries(reference)
    assert json.loads((folder / "manifest.json").read_text())["status"] == "failed"
    again = collect(folder, code=1)  # collected: the same outcome, nothing sent
    assert "already collected" in again.output


def test_hostile_answers_in_batch_results_fail_their_own_pair(tmp_path):
    """Issue 20.5 in batch collect: a lone surrogate, deep nesting and a 3 MB string in the
    downloaded answers end their own (abstract, stage) only; collect writes every record."""
    corpus = tmp_path / "hostile.txt"
    write_abstracts(corpus, 6, seed=3)
    server = OpenAIServer(ServerConfig(batch=BatchConfig()), answer_fn=hostile_answer_fn(corpus))
    with server:
        folder = tmp_path / "b"
        submit(server, corpus, folder)
        collect(folder, code=1)  # failed stages, not a crash
    check_run(read_jsonl(folder / "summaries.jsonl"), read_jsonl(folder / "errors.jsonl"), corpus)
