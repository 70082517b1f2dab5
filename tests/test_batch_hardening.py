"""`digest batch` against a server that misbehaves (pipeline/testing/batch_api.py's knobs):
odd ids and fields, unreadable, unknown and duplicate result lines, line separators inside
answers, stuck batches and outages, big result files; and a batch folder used from another
directory, interrupted by a signal, or submitted without a key.

Waiting goes through a fake clock (`pipeline.batch.waiting.CLOCK`): nothing here depends on
timing, and the asserted figures are counts and the fake clock's sleeps.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx2
import openai
import pytest
from batchkit import (
    FAKE_KEY,
    FakeClock,
    batch_stats,
    collect,
    custom_ids,
    digest,
    read_jsonl,
    set_batch,
    submit,
    summaries,
    sync_run,
)
from synthetic import synthetic_abstracts, write_abstracts
from timing import HANG_S

from pipeline.backends.openai_backend import OpenAIBackend
from pipeline.batch import api as batch_api_client
from pipeline.batch import results, waiting
from pipeline.batch.state import load_state
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.batch_api import BatchConfig
from pipeline.testing.children import digest_argv
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

pytestmark = pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])

N_ABSTRACTS = 4
PAIRS = N_ABSTRACTS * 3


@functools.cache
def _offline():
    return offline_answer_fn()


def answer(stage: str, abstract: str) -> str:
    """The offline extractor's answer, as JSON text with every character raw (U+2028 too)."""
    return json.dumps(_offline()(stage, abstract), ensure_ascii=False)


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(waiting, "CLOCK", fake)
    return fake


@pytest.fixture(autouse=True)
def env(monkeypatch, tmp_path, clock):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(OpenAIBackend, "backoff_base_s", 0.01)
    monkeypatch.setattr(OpenAIBackend, "backoff_jitter_s", 0.01)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hardening") / "abstracts.txt"
    write_abstracts(path, N_ABSTRACTS, seed=11)
    return path


@pytest.fixture
def servers():
    started: list[OpenAIServer] = []

    def make(batch: BatchConfig | None = None, answer_fn=answer, **config) -> OpenAIServer:
        server = OpenAIServer(ServerConfig(batch=batch, **config), answer_fn=answer_fn)
        server.start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def client_for(server: OpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=FAKE_KEY, max_retries=0)


def result_line(custom_id: str, content: str, *, tokens: int = 800_000) -> bytes:
    """A 200 output line as the API writes one, with the usage the test chooses."""
    body = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 0,
        "model": "bench-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": tokens, "completion_tokens": tokens, "total_tokens": 2 * tokens},
    }
    line = {
        "id": "batch_req_x",
        "custom_id": custom_id,
        "response": {"status_code": 200, "request_id": "req_x", "body": body},
        "error": None,
    }
    return json.dumps(line).encode()


def request_body(folder: Path, custom_id: str) -> dict:
    part = load_state(folder).parts[0]
    return next(x["body"] for x in read_jsonl(folder / part.file) if x["custom_id"] == custom_id)


# --- 1. server ids never become paths -------------------------------------------------------


def test_a_server_batch_id_never_becomes_a_path(servers, corpus, tmp_path):
    server = servers()
    evil = client_for(server).files.create(
        file=("evil.jsonl", b'{"planted": true}\n'), purpose="batch"
    )
    # The create answer claims a finished batch whose id walks out of the folder.
    odd = {"id": "../../x/TRAVERSED", "status": "completed", "output_file_id": evil.id}
    set_batch(server, batch_fields=odd)
    folder = tmp_path / "work" / "b"
    out = submit(server, corpus, folder, code=3).output
    assert "creating the batch" in out and "not a valid batch object (id:" in out
    assert load_state(folder).parts[0].batch_id is None  # nothing of it was stored
    assert collect(folder, code=2).exit_code == 2  # the submit did not finish
    assert not [p for p in tmp_path.rglob("*TRAVERSED*")]
    set_batch(server, batch_fields={})
    again = submit(server, corpus, folder).output
    assert "found 1 made before an interruption" in again  # the batch the server did make
    collect(folder)
    assert sorted(p.name for p in (folder / "results").iterdir()) == ["part-0001-output.jsonl"]
    assert not [p for p in tmp_path.rglob("*TRAVERSED*")]


@pytest.mark.parametrize(
    "field,value",
    [("batch_id", "../x"), ("output_file_id", "file-1/../../y"), ("file", "../requests.jsonl")],
)
def test_a_batch_state_file_with_a_path_in_an_id_is_refused(
    servers, corpus, tmp_path, field, value
):
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    data = json.loads((folder / "batch.json").read_text())
    data["parts"][0][field] = value
    (folder / "batch.json").write_text(json.dumps(data))
    for command in ("status", "collect"):
        out = digest("batch", command, folder, code=2).output
        assert f"not a batch state file (parts.0.{field}:" in out


# --- 2. an unreadable line is skipped, recorded, and its pair asked again ---------------------


def test_unreadable_result_lines_are_skipped_recorded_and_asked_again(
    servers, corpus, tmp_path, monkeypatch
):
    monkeypatch.setattr(results, "MAX_LINE_BYTES", 64 * 1024)
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    ids = custom_ids(folder)
    bad = {
        ids[0]: result_line(ids[0], "x").replace(b'"x"', b'"\xff\xfe"'),  # not UTF-8
        ids[1]: b'{"custom_id": "' + ids[1].encode() + b'", "response": '
        + b"[" * 20_000 + b"]" * 20_000 + b"}",  # nested too deeply
        ids[2]: b'{"custom_id": "' + ids[2].encode() + b'", "pad": "' + b"x" * 70_000 + b'"}',
        ids[3]: b'{"custom_id": "' + ids[3].encode() + b'", "response": {"status_',  # cut off
    }  # fmt: skip
    set_batch(server, output_lines=bad)
    out = collect(folder).output
    assert "4 unreadable result line(s) skipped" in out
    assert "not valid UTF-8" in out and "nested too deeply" in out
    assert "longer than 65,536 bytes" in out and "not JSON" in out
    assert "results/part-0001-output.jsonl:" in out  # which file, which line
    state = load_state(folder)
    assert state.lines.unreadable == 4 and state.lines.answered == PAIRS - 4
    assert sorted(s.why.split(" (")[0] for s in state.skipped) == sorted(
        ["longer than 65,536 bytes", "nested too deeply", "not JSON", "not valid UTF-8"]
    )
    assert server.stats()["requests"] == 4  # those four pairs, asked again; nothing else
    assert summaries(folder) == summaries(sync_run(servers, corpus, tmp_path))
    assert "already collected" in collect(folder).output


def test_result_lines_are_read_in_bounded_pieces():
    class Spy(io.BytesIO):
        asked: list[int] = []

        def readline(self, size: int | None = -1) -> bytes:
            self.asked.append(-1 if size is None else size)
            return super().readline(size)

        def read(self, size: int | None = -1) -> bytes:
            self.asked.append(-1 if size is None else size)
            return super().read(size)

    text = '{"a": "one\u2028two\u2029three\u0085four"}\n'.encode()
    data = b'{"n": 1}\n' + b'{"long": "' + b"x" * 5000 + b'"}\n' + text + b"\n" + b'{"n": 4}'
    got = list(results.read_lines(Spy(data), max_bytes=1024))
    assert got == [
        (1, b'{"n": 1}', None),
        (2, None, "longer than 1,024 bytes"),
        (3, text.rstrip(b"\n"), None),  # U+2028, U+2029, U+0085: one line, as written
        (5, b'{"n": 4}', None),
    ]
    assert Spy.asked and all(0 < n <= 1025 for n in Spy.asked)  # never "read it all"


# --- 3. server objects are checked before anything is stored ----------------------------------


@pytest.mark.parametrize(
    "fields,where",
    [
        ({"status": 7}, "status"),
        ({"request_counts": {"total": None, "completed": None, "failed": None}}, "request_counts"),
        ({"request_counts": {"total": 12, "completed": -1, "failed": 0}}, "request_counts"),
        ({"status": "completed", "output_file_id": "../../outside"}, "output_file_id"),
        ({"errors": {"object": "list", "data": [{"code": 5, "line": "x"}]}}, "errors"),
    ],
)
def test_a_bad_batch_object_is_refused_and_the_folder_stays_usable(
    servers, corpus, tmp_path, fields, where
):
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    before = (folder / "batch.json").read_bytes()
    set_batch(server, batch_fields=fields)
    for command in ("status", "collect"):
        out = digest("batch", command, folder, code=3).output
        assert f"not a valid batch object ({where}" in out and "nothing of it was stored" in out
        assert (folder / "batch.json").read_bytes() == before
    set_batch(server, batch_fields={})  # the server is sane again
    assert "requests done" in digest("batch", "status", folder).output
    assert f"batch results: {PAIRS} answered" in collect(folder).output


# --- 4. line separators are data ---------------------------------------------------------------


SEPARATORS = "\u2028\u2029\u0085"


def quoting_answer(stage: str, abstract: str) -> str:
    """The offline answer, with each claim's evidence quoted exactly as the abstract has it:
    line separators included, raw in the JSON."""
    plain = re.sub(f"[{SEPARATORS}]", " ", abstract)
    out = _offline()(stage, plain)
    for claim in out.get("claims", []) if stage == "claims" else []:
        words = map(re.escape, claim["evidence"].split())
        found = re.search(r"\s+".join(words), abstract)  # \s: U+2028, U+2029, U+0085 too
        claim["evidence"] = found.group() if found else claim["evidence"]
    return json.dumps(out, ensure_ascii=False)


def test_line_separators_inside_abstracts_and_answers_are_data(servers, tmp_path):
    corpus = tmp_path / "separators.jsonl"
    rows = []
    for i, text in enumerate(synthetic_abstracts(N_ABSTRACTS, seed=12)):
        sep = SEPARATORS[i % 3]
        text = re.sub(r" (faster|less) ", rf"{sep}\1{sep}", text)  # inside quoted results
        rows.append({"id": f"p{i}", "abstract": text})
    corpus.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    server = servers(answer_fn=quoting_answer)
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    out = collect(folder).output
    assert f"batch results: {PAIRS} answered, 0 error line(s)" in out
    output = (folder / load_state(folder).parts[0].result_files()[0]).read_bytes()
    assert all(sep.encode() in output for sep in "\u2028\u2029\u0085")  # raw in the lines
    assert server.stats()["requests"] == 0  # nothing bought again at the list price
    reference = sync_run(servers, corpus, tmp_path, answer_fn=quoting_answer)
    assert summaries(folder) == summaries(reference)


def test_the_testing_helpers_split_jsonl_on_newlines_only(tmp_path):
    from pipeline.testing import realistic, small_models

    record = {"id": "p1", "abstract": f"one{SEPARATORS[0]}two{SEPARATORS[1]}three{SEPARATORS[2]}"}
    (tmp_path / "summaries.jsonl").write_text(
        json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    for module in (realistic, small_models):
        assert list(module._records(tmp_path)) == [record]


# --- 5. unknown and duplicate custom_ids ---------------------------------------------------------


def test_unknown_and_duplicate_custom_ids_are_reported_and_never_billed(servers, corpus, tmp_path):
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    ids = custom_ids(folder)
    # ids[1] gets an error line, then (a duplicate) a valid answer: the valid one is used.
    body = request_body(folder, ids[1])
    valid = client_for(server).chat.completions.create(**body).choices[0].message.content
    assert valid is not None
    extra = (
        result_line("not-a-submitted-pair", "{}"),
        result_line("another-unknown-one", "{}"),
        result_line(ids[0], '{"tldr": "a duplicate that must not be used"}'),
        result_line(ids[1], valid, tokens=7),
    )
    set_batch(server, extra_output_lines=extra, line_errors={ids[1]: 500})
    out = collect(folder).output
    assert f"batch results: {PAIRS} answered, 0 error line(s)" in out
    assert "0 pair(s) without a batch answer asked synchronously" in out
    assert "2 line(s) with a custom_id that was not submitted" in out
    assert "2 duplicate line(s) (not used, not billed)" in out
    assert server.stats()["requests"] == 1  # only the chat request this test made itself
    state = load_state(folder)
    assert (state.lines.unknown, state.lines.duplicates) == (2, 2)
    billed = [
        line["response"]["body"]["usage"]
        for line in read_jsonl(folder / "results" / "part-0001-output.jsonl")
        if line["custom_id"] in ids[:1] + ids[2:]
    ][: PAIRS - 1]  # the first line of each other pair (the extra lines come last)
    assert state.tokens.batch_in == sum(u["prompt_tokens"] for u in billed) + 7
    assert state.tokens.batch_out == sum(u["completion_tokens"] for u in billed) + 7
    assert summaries(folder) == summaries(sync_run(servers, corpus, tmp_path))


# --- 6. waiting is bounded and rides out outages ------------------------------------------------


def test_collect_wait_gives_up_at_the_timeout_and_a_later_collect_resumes(
    servers, corpus, tmp_path, clock
):
    server = servers(batch=BatchConfig(polls_per_status=10**9))  # stuck in validating
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    out = collect(folder, "--timeout", 300, "--poll-interval", 60, code=75).output
    assert "gave up waiting after 5 min (--timeout)" in out
    assert f"digest batch collect {folder}" in out and "nothing is lost" in out
    assert clock.sleeps == [60.0] * 5 and batch_stats(server)["retrieves"] == 6
    assert not (folder / "summaries.jsonl").exists()
    set_batch(server, polls_per_status=1)
    assert f"batch results: {PAIRS} answered" in collect(folder).output


def test_collect_wait_rides_out_an_outage_with_backoff(servers, corpus, tmp_path, clock):
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    faults = ("503", "drop", "500", "429", "drop", "503", "500")
    set_batch(server, retrieve_faults=faults)
    out = collect(folder, "--poll-interval", 30).output
    assert out.count("retrying in") == len(faults)
    assert clock.sleeps[: len(faults)] == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    assert batch_stats(server)["retrieve_faults"] == len(faults)
    assert f"batch results: {PAIRS} answered" in out


def test_an_outage_longer_than_the_timeout_ends_like_a_timeout(servers, corpus, tmp_path, clock):
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    set_batch(server, retrieve_faults=("503",) * 1000)
    out = collect(folder, "--timeout", 100, code=75).output
    assert "gave up waiting after 1 min 40 s (--timeout)" in out and "503" in out
    assert sum(clock.sleeps) <= 100
    set_batch(server, retrieve_faults=())
    assert f"batch results: {PAIRS} answered" in collect(folder).output


def test_a_poll_interval_below_the_minimum_is_refused(servers, corpus, tmp_path):
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    out = digest("batch", "collect", folder, "--wait", "--poll-interval", 0, code=2).output
    assert "--poll-interval" in out and f"{waiting.MIN_POLL_S:g}" in out
    assert batch_stats(server)["retrieves"] == 0


# --- 7. big result files are streamed ---------------------------------------------------------


def test_downloads_are_streamed_to_disk_in_chunks(servers, corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(batch_api_client, "CHUNK_BYTES", 4096)
    read_whole: list[str] = []
    chunk_sizes: list[int | None] = []  # of the file downloads
    read, iter_bytes = httpx2.Response.read, httpx2.Response.iter_bytes

    def spy_read(self):
        read_whole.append(self.request.url.path)
        return read(self)

    def spy_iter_bytes(self, chunk_size=None):
        if self.request.url.path.endswith("/content"):
            chunk_sizes.append(chunk_size)
        return iter_bytes(self, chunk_size)

    monkeypatch.setattr(httpx2.Response, "read", spy_read)
    monkeypatch.setattr(httpx2.Response, "iter_bytes", spy_iter_bytes)
    server = servers(batch=BatchConfig(pad_output_bytes=20_000))
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    collect(folder)
    saved = folder / "results" / "part-0001-output.jsonl"
    assert saved.stat().st_size > PAIRS * 20_000 > 10 * 4096
    assert not [path for path in read_whole if path.endswith("/content")]
    assert chunk_sizes == [4096]  # one file, streamed in 4 KiB pieces
    assert len(summaries(folder)) == N_ABSTRACTS


# --- 8. the folder, not the current directory ---------------------------------------------------


def test_collect_from_another_directory_records_sources_as_run_does(servers, tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    write_abstracts(project / "abstracts.txt", N_ABSTRACTS, seed=13)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = servers()
    monkeypatch.chdir(project)
    submit(server, Path("abstracts.txt"), Path("b"))
    reference = sync_run(servers, Path("abstracts.txt"), project)
    monkeypatch.chdir(elsewhere)
    collect(project / "b")
    rows = read_jsonl(project / "b" / "summaries.jsonl")
    assert {s["file"] for r in rows for s in r["sources"]} == {"abstracts.txt"}
    assert [r["sources"] for r in rows] == [
        r["sources"] for r in read_jsonl(reference / "summaries.jsonl")
    ]
    manifest = json.loads((project / "b" / "manifest.json").read_text())
    assert manifest["inputs"] == ["abstracts.txt"]


def test_status_and_collect_use_the_folder_settings_not_the_current_config(
    servers, corpus, tmp_path, monkeypatch
):
    server = servers()
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    # The current directory's config.yaml and environment name other settings: not used.
    Path("config.yaml").write_text("requests_per_minute: [1, unclosed\n")  # not even YAML
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("DIGEST_MODEL", "another-model")
    assert "requests done" in digest("batch", "status", folder).output
    out = collect(folder).output
    assert f"batch results: {PAIRS} answered" in out and "at the Batch price" in out


def test_submit_without_a_key_creates_nothing(corpus, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    out = digest("batch", "submit", corpus, "--provider", "openai", code=3).output
    assert "no API key for https://api.openai.com/v1" in out
    assert not (tmp_path / "outputs").exists()


def test_a_submit_stopped_by_its_inputs_leaves_no_empty_batch_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    out = digest("batch", "submit", bad, "--base-url", "http://127.0.0.1:9/v1", code=2).output
    assert "bad.jsonl:1: invalid JSON" in out
    assert list((tmp_path / "outputs").iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_collect_with_130_and_the_folder_resumes(servers, corpus, tmp_path, signum):
    server = servers(batch=BatchConfig(polls_per_status=10**9))
    folder = tmp_path / "b"
    submit(server, corpus, folder)
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY}
    argv = digest_argv("batch", "collect", folder, "--wait", "--no-progress")
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stderr is not None
        seen = []
        while not any(line.startswith("waiting:") for line in seen):  # it polled once
            line = proc.stderr.readline()
            assert line, seen
            seen.append(line)
        proc.send_signal(signum)
        _, rest = proc.communicate(timeout=HANG_S)  # a safety net against a hang
        code = proc.returncode
    assert code == 130, rest
    name = signal.Signals(signum).name
    assert f"error: stopped by {name}; nothing is lost: run `digest batch collect {folder}`" in rest
    set_batch(server, polls_per_status=1)
    assert f"batch results: {PAIRS} answered" in collect(folder).output
