"""Crash-resume and Ctrl-C: `digest run` as a subprocess against the local server.

A run SIGKILLed at three points (each resume killed again, then finished) ends with the same
summaries as an uninterrupted run, and the server never gets a second request for a stage
result that was already in the cache when the process died. SIGINT stops without waiting for
requests stalled on the server, keeps what finished and says how to resume.

The server holds requests at gates (tests/timing.py) so each kill finds the run at a known
point and a stall lasts until the test ends, whatever the load: no poll races the run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from runs import manifest_dict, run_paths
from synthetic import write_abstracts
from timing import HANG_S, Budget, Gate, preflight_hang_guard, wait_until

from pipeline.config import load_settings
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.chat import request_key
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

FAKE_KEY = "sk-test-resume-000000000000000000000"
STAGES = ("tldr", "tags", "claims")
N = 60
CONCURRENCY = 4
TIMING_FIELDS = ("latency_ms", "cached")


@functools.cache
def _offline():
    return offline_answer_fn()


def answer(stage: str, abstract: str) -> dict:
    return _offline()(stage, abstract)


@pytest.fixture
def start():
    """Start `digest` subprocesses; any still running when the test ends is killed."""
    procs: list[subprocess.Popen] = []

    def _start(args: list[str], cwd: Path) -> subprocess.Popen:
        env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        procs.append(proc)
        return proc

    yield _start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def cached_keys(cache_dir: Path) -> dict[str, set[str]]:
    """Complete records per stage file (a torn last line does not count)."""
    out: dict[str, set[str]] = {}
    for stage in STAGES:
        path = cache_dir / f"{stage}.jsonl"
        keys = set()
        if path.exists():
            for line in path.read_bytes().split(b"\n"):
                with contextlib.suppress(ValueError, KeyError):
                    keys.add(json.loads(line)["key"])
        out[stage] = keys
    return out


def cache_lines(cache_dir: Path) -> int:
    return sum(
        (cache_dir / f"{s}.jsonl").read_bytes().count(b"\n")
        for s in STAGES
        if (cache_dir / f"{s}.jsonl").exists()
    )


def wait_for_lines(proc: subprocess.Popen, cache_dir: Path, lines: int) -> None:
    def written() -> bool:
        assert proc.poll() is None, f"run ended before {lines} cache lines: {proc.communicate()}"
        return cache_lines(cache_dir) >= lines

    wait_until(written, f"{lines} cache lines")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def without_timing(records: list[dict]) -> list[dict]:
    out = []
    for record in records:
        record = json.loads(json.dumps(record))
        for stage in record["stages"].values():
            for name in TIMING_FIELDS:
                stage["provenance"].pop(name, None)
        out.append(record)
    return out


@pytest.fixture
def inputs(tmp_path) -> tuple[Path, list[str]]:
    path = tmp_path / "abstracts.txt"
    return path, write_abstracts(path, N, seed=21)


def test_sigkill_at_three_points_then_resume_equals_a_clean_run(tmp_path, inputs, start, digest_at):
    path, _ = inputs
    server_config = ServerConfig(latency=0.02, seed=3)
    cache_dir, run_dir = tmp_path / "cache", tmp_path / "run"
    total = N * len(STAGES)
    # Each killed run gets answers up to its kill point, then waits: the kill finds it there.
    budget = Budget()
    # One server for the clean run and the killed ones: the endpoint is in every cache key.
    with OpenAIServer(server_config, answer_fn=answer, hold=budget) as server:
        settings = load_settings(
            None,
            env={"OPENAI_API_KEY": FAKE_KEY},
            overrides={
                "provider": "openai", "base_url": server.base_url, "model": "bench-model",
                "cache_dir": tmp_path / "clean-cache", "out_dir": tmp_path / "clean",
                "progress": False, "max_concurrency": CONCURRENCY,
            },
        )  # fmt: skip
        clean = run_paths(settings, [path])
        assert manifest_dict(clean)["status"] == "ok"
        clean_requests = server.stats()["requests"]
        assert clean_requests == total
        clean_records = read_jsonl(tmp_path / "clean" / "summaries.jsonl")
        # Pipeline cache key -> the server's key of the same (stage, abstract).
        server_key = {
            stage["provenance"]["cache_key"]: request_key(name, record["abstract"])
            for record in clean_records
            for name, stage in record["stages"].items()
        }
        assert len(server_key) == total

        def assert_not_asked_again(cached: dict[str, set[str]], before: Counter) -> None:
            after = Counter(server.stats()["by_key"])
            again = [
                k
                for keys in cached.values()
                for k in keys
                if after[server_key[k]] > before[server_key[k]]
            ]
            assert again == [], f"{len(again)} results already in the cache were requested again"

        preflight_hang_guard(tmp_path)  # the children's ./config.yaml
        args = digest_at.child(server.base_url, path, "--concurrency", CONCURRENCY)
        previous = None
        left_tmp: list[bool] = []
        for kill_at in (total // 10, total // 2, total * 9 // 10):
            budget.reopen(kill_at - cache_lines(cache_dir))  # the dead run's requests end too
            proc = start(args, tmp_path)  # the first run, then each resume: the same command
            wait_for_lines(proc, cache_dir, kill_at)
            proc.send_signal(signal.SIGKILL)
            proc.wait(HANG_S)
            assert proc.returncode == -signal.SIGKILL
            # Killed while report.html was being written: its temporary file is left ...
            left_tmp.append(bool(list(run_dir.glob(".report.html.*.tmp"))))
            if previous is not None:
                assert_not_asked_again(*previous)
            previous = (cached_keys(cache_dir), Counter(server.stats()["by_key"]))
            assert sum(map(len, previous[0].values())) == kill_at
        budget.reopen(None)
        proc = start(args, tmp_path)
        out, err = proc.communicate(timeout=HANG_S)
        assert proc.returncode == 0, err
        assert_not_asked_again(*previous)
        requests = server.stats()["requests"] - clean_requests

    # ... and the resumed run that finished removed every one of them.
    assert any(left_tmp)
    assert sorted(p.name for p in run_dir.iterdir() if p.name.startswith(".")) == []
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "ok"
    hits = sum(s["cache_hits"] for s in manifest["counts"]["stages"].values())
    assert hits >= total * 9 // 10
    # Work lost to the kills is at most what was in flight (max_concurrency per kill).
    assert total <= requests <= total + 3 * CONCURRENCY
    assert without_timing(read_jsonl(run_dir / "summaries.jsonl")) == without_timing(clean_records)
    assert read_jsonl(run_dir / "errors.jsonl") == []


def test_sigint_stops_without_waiting_for_stalls_flushes_and_says_how_to_resume(
    tmp_path, inputs, start, digest_at
):
    path, _ = inputs
    # Some requests stall on the server until the test ends, and the client's timeout_s is
    # an hour: a stop that waited for them would never come. Ctrl-C must not wait.
    config = ServerConfig(faults={"stall": 0.2}, stall_s=30.0, seed=4)  # `sleep`: stalls only
    endless = tmp_path / "config.yaml"
    endless.write_text("timeout_s: 3600\n", encoding="utf-8")
    preflight_hang_guard(tmp_path)
    cache_dir, run_dir = tmp_path / "cache", tmp_path / "run"
    stalls = Gate()
    with OpenAIServer(config, answer_fn=answer, sleep=stalls) as server:
        args = digest_at.child(server.base_url, path, "--concurrency", 16, "--config", endless)
        proc = start(args, tmp_path)
        wait_for_lines(proc, cache_dir, 20)
        # at least two requests hanging
        wait_until(lambda: server.stats()["faults"].get("stall", 0) >= 2, "two stalls")
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {HANG_S:g}s after SIGINT: the stop waits for the stalls")
        cached_at_exit = cache_lines(cache_dir)
        stalls.open()

    assert proc.returncode == 130, err
    assert err.count("error:") == 1
    assert "stopped by SIGINT" in err and "rerun the same command to resume" in err
    assert str(cache_dir) in err
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    summaries = read_jsonl(run_dir / "summaries.jsonl")
    assert manifest["counts"]["records_written"] == len(summaries) < N
    # Everything that finished is in the cache, every line complete.
    for stage in STAGES:
        assert (cache_dir / f"{stage}.jsonl").read_bytes().endswith(b"\n")
    cached = set().union(*cached_keys(cache_dir).values())
    assert len(cached) == cached_at_exit >= 20
    for record in summaries:
        for stage in record["stages"].values():
            assert stage["status"] == "ok" and stage["provenance"]["cache_key"] in cached
