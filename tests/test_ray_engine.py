"""`digest run --engine ray`: the stages on a local Ray instance (2 CPUs) against the local
test server on 127.0.0.1, compared with the local engine on the same input and faults.

The Ray tests need the extra (`pip install -e '.[ray]'`) and are skipped without it; the
refusals at the end run either way.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostile import check_run, hostile_answer_fn
from runs import manifest_dict, run_paths
from synthetic import write_abstracts
from timing import HANG_S, preflight_hang_guard, wait_until

from pipeline.cli import main
from pipeline.config import load_settings
from pipeline.engine.ray_engine import BATCH_SIZE, WORKER_NICENESS
from pipeline.errors import FatalBackendError
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

HAVE_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(
    not HAVE_RAY, reason="Ray is not installed (the optional extra: pip install -e '.[ray]')"
)
N_ABSTRACTS = 24
SEED = 5
FAKE_KEY = "sk-test-ray-engine-00000000000000000000"


@functools.cache
def answer(stage: str, abstract: str) -> dict:
    """The offline extractor's answer, memoized (it is deterministic)."""
    return offline_answer_fn()(stage, abstract)


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance with 2 CPUs for the module; the engine uses it as it is."""
    if not HAVE_RAY:
        yield None
        return
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only
    import ray

    ray.init(
        address="local",  # never a cluster some `ray start` left behind
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        log_to_driver=False,
        _system_config={"worker_niceness": WORKER_NICENESS},  # as the engine's own start
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ray") / "abstracts.txt"
    write_abstracts(path, N_ABSTRACTS, seed=SEED)
    return path


def settings(tmp_path: Path, server: OpenAIServer, name: str, **overrides):
    values = {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "bench-model",
        "cache_dir": tmp_path / f"cache-{name}",
        "out_dir": tmp_path / f"run-{name}",
        "progress": False,
        "max_concurrency": 32,
        "timeout_s": 60.0,  # a hang guard: no test here waits for it
        "max_retries": 1,
        **overrides,
    }
    return load_settings(None, env={"OPENAI_API_KEY": FAKE_KEY}, overrides=values)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def untimed(run_dir: Path) -> list[dict]:
    """summaries.jsonl without its one timing field (latency_ms)."""
    records = read_jsonl(run_dir / "summaries.jsonl")
    for record in records:
        for stage in record["stages"].values():
            stage["provenance"].pop("latency_ms")
    return records


def both_engines(tmp_path, corpus, config: ServerConfig, **overrides):
    """The local engine, then the Ray engine, each on a fresh cache and a fresh server on the
    same port (the endpoint is in every cache key): (result, server requests)."""
    out = {}
    for engine in ("local", "ray"):
        with OpenAIServer(config, answer_fn=answer) as server:
            s = settings(tmp_path, server, engine, engine=engine, **overrides)
            result = run_paths(s, [corpus])
            out[engine] = result, server.stats()["requests"]
            config = dataclasses.replace(config, port=int(server.base_url.split(":")[2][:-3]))
    return out


@needs_ray
def test_ray_engine_writes_the_local_engines_summaries_and_a_warm_rerun_sends_nothing(
    tmp_path, corpus, local_ray, monkeypatch
):
    runs = both_engines(tmp_path, corpus, ServerConfig(seed=SEED))
    (local, local_requests), (ray_, ray_requests) = runs["local"], runs["ray"]
    assert ray_requests == local_requests == 3 * N_ABSTRACTS
    assert untimed(ray_.run_dir) == untimed(local.run_dir)
    assert len(untimed(ray_.run_dir)) == N_ABSTRACTS
    assert (ray_.run_dir / "summaries.csv").read_bytes() == (
        local.run_dir / "summaries.csv"
    ).read_bytes()
    ray_manifest, local_manifest = manifest_dict(ray_), manifest_dict(local)
    assert ray_manifest["counts"] == local_manifest["counts"]
    assert ray_manifest["requests_sent"] == ray_requests
    assert ray_manifest["config"]["engine"] == "ray"
    # The Ray engine's answers were cached by the driver: a rerun serves them all and
    # never starts Ray.
    import pipeline.engine.ray_engine as ray_engine

    def no_ray(*args, **kwargs):
        raise AssertionError("a warm run started Ray")

    monkeypatch.setattr(ray_engine, "RayStart", no_ray)
    monkeypatch.setattr(ray_engine, "dispatch", no_ray)
    port = int(ray_.manifest.config["base_url"].split(":")[2][:-3])
    with OpenAIServer(ServerConfig(seed=SEED, port=port), answer_fn=answer) as server:
        s = settings(tmp_path, server, "ray", engine="ray", out_dir=tmp_path / "warm")
        warm = run_paths(s, [corpus])
        assert server.stats()["requests"] == 0
    counts = manifest_dict(warm)["counts"]["stages"]
    assert all(c["cache_hits"] == c["ok"] == N_ABSTRACTS for c in counts.values())


@needs_ray
def test_transport_faults_give_the_local_engines_error_records(tmp_path, corpus, local_ray):
    # A fault is a pure function of (seed, request, attempt): both engines meet the same ones.
    # With one retry, a request faulted twice fails as rate_limit; none is asked again.
    config = ServerConfig(faults={"429": 0.4, "500": 0.2}, seed=SEED, retry_after_s=0.01)
    runs = both_engines(tmp_path, corpus, config, stages="tldr,tags")
    (local, local_requests), (ray_, ray_requests) = runs["local"], runs["ray"]
    local_errors = read_jsonl(local.run_dir / "errors.jsonl")
    ray_errors = read_jsonl(ray_.run_dir / "errors.jsonl")
    assert local_errors, "the fault schedule should make some stages fail"
    assert {e["kind"] for e in local_errors} <= {"rate_limit", "server_error"}
    # The local engine writes errors as they happen, the Ray engine's pass in input order.
    assert sorted(ray_errors, key=_where) == sorted(local_errors, key=_where)
    assert untimed(ray_.run_dir) == untimed(local.run_dir)
    assert ray_requests == local_requests
    ray_manifest, local_manifest = manifest_dict(ray_), manifest_dict(local)
    assert ray_manifest["counts"] == local_manifest["counts"]
    assert ray_manifest["status"] == local_manifest["status"] == "failed"
    assert ray_manifest["transport_retries"] == local_manifest["transport_retries"] > 0


def _where(error: dict) -> tuple:
    return error["sources"][0]["position"], error["stage"], error["item"] or -1


@needs_ray
def test_a_key_revoked_mid_run_stops_the_ray_run_as_fatal(tmp_path, corpus, local_ray):
    config = ServerConfig(seed=SEED, script=("ok",) + ("401",) * 500)
    with OpenAIServer(config, answer_fn=answer) as server:
        s = settings(tmp_path, server, "ray", engine="ray", stages="tldr")
        with pytest.raises(FatalBackendError, match="rejected the API key"):
            run_paths(s, [corpus])
    manifest = json.loads((tmp_path / "run-ray" / "manifest.json").read_text())
    assert manifest["status"] == "fatal" and "401" in manifest["fatal_error"]


@needs_ray
def test_a_refused_key_exits_3_without_a_stage_request(tmp_path, corpus, local_ray, digest_at):
    config = ServerConfig(api_key="sk-the-right-key-1234567890", seed=SEED)
    with OpenAIServer(config, answer_fn=answer) as server:
        result = digest_at(server.base_url, corpus, "--engine", "ray", key=FAKE_KEY)
        assert server.stats()["requests"] == 0
    assert result.exit_code == 3
    assert result.stderr.count("error:") == 1
    assert "rejected the API key (401" in result.stderr


def _cli(tmp_path: Path, corpus: Path, *args: str):
    argv = ["run", str(corpus), "--model", "bench-model", "--no-progress"]
    argv += ["--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"), *args]
    return CliRunner(env={"OPENAI_API_KEY": FAKE_KEY}).invoke(main, argv)


def test_engine_ray_without_the_extra_exits_2_naming_it(tmp_path, corpus, monkeypatch, digest_at):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    result = digest_at("http://127.0.0.1:9/v1", corpus, "--engine", "ray", key=FAKE_KEY)
    assert result.exit_code == 2
    assert "pip install -e '.[ray]'" in result.stderr
    assert not (tmp_path / "run").exists()


def test_engine_ray_with_the_offline_backend_is_refused(tmp_path, corpus):
    result = _cli(tmp_path, corpus, "--provider", "offline", "--engine", "ray")
    assert result.exit_code == 2
    assert "offline" in result.stderr and "--engine local" in result.stderr


class _Runner:
    """What `_take` uses of a StageRunner: its stages, provenance and the cache writer."""

    def __init__(self) -> None:
        self.stages = {"claims": object()}
        self.stored: dict[str, dict] = {}
        self.answered: dict = {}

    def provenance_of(self, stage, key, answer, latency_ms):
        return {"latency_ms": latency_ms}

    def store(self, stage, key, answer, provenance) -> None:
        self.stored[key] = {"output": answer.output, "dropped": answer.dropped}


def test_the_driver_keeps_counts_not_outputs_of_the_ok_answers_it_cached():
    """An ok answer is cached whole when it arrives and only its counts wait for the pass
    (which reads the output back); a failed answer is kept whole (its error and raw text)."""
    from pipeline.engine.progress import NoProgress
    from pipeline.engine.ray_engine import Pending, RayBackend, _take
    from pipeline.ingest import Abstract

    ok = {"claims": [{"statement": "x"}]}
    dropped = [{"index": 1, "kind": "ungrounded", "message": "m", "item": {"a": 1}}]
    answers = [
        {"output": ok, "error": None, "raw": '{"claims": [...]}', "dropped": dropped},
        {
            "output": None,
            "raw": "not json",
            "dropped": [],
            "error": {"backend": False, "message": "bad", "kind": "json", "raw": "not json"},
        },
    ]
    counts = {"attempts": 2, "tokens_in": 10, "tokens_out": 5, "tokens_cached": 0, "requests": 2}
    payload = {
        "actor": "a1",
        "counts": {"n": 1, "sent": {}, "retries": {}, "pauses": 0},
        "pairs": [
            {"i": i, "stage": "claims", "answer": {**a, **counts}, "ms": 12.5}
            for i, a in enumerate(answers)
        ],
    }
    pending = Pending(
        abstracts=[Abstract("h0", "text 0"), Abstract("h1", "text 1")],
        keys=[{"claims": "k-ok"}, {"claims": "k-failed"}],
    )
    runner, answered = _Runner(), {}
    backend = RayBackend.__new__(RayBackend)
    backend.actors, backend.nodes = {}, Counter()
    _take(payload, pending, runner, backend, NoProgress(), answered)

    assert runner.stored["k-ok"]["output"] == ok and len(runner.stored["k-ok"]["dropped"]) == 1
    held = answered["k-ok"]
    assert held.in_cache and held.latency_ms == 12.5
    assert held.answer.output is None and held.answer.raw is None and held.answer.dropped == []
    assert (held.answer.tokens_in, held.answer.requests) == (10, 2)  # the counts stay
    failed = answered["k-failed"]
    assert not failed.in_cache and "k-failed" not in runner.stored
    assert failed.answer.error is not None and failed.answer.raw == "not json"


def _feed_payload(i: int, *, fatal: bool = False) -> dict:
    """One Ray row: a batch of one claims answer for dataset row `i` (or a fatal one)."""
    pair = {"i": i, "stage": "claims"}
    if fatal:
        pair["fatal"] = "the endpoint rejected the API key (401)"
    else:
        answer = {"output": {"claims": []}, "error": None, "raw": "{}", "dropped": []}
        pair |= {"answer": {**answer, "attempts": 1, "tokens_in": 1, "tokens_out": 1,
                            "tokens_cached": 0, "requests": 1}, "ms": 5.0}  # fmt: skip
    payload = {"actor": "a", "counts": {"n": i, "sent": {}, "retries": {}, "pauses": 0}}
    return {**payload, "pairs": [pair]}


def _feed(rows):
    from pipeline.engine.progress import NoProgress
    from pipeline.engine.ray_engine import Pending, RayBackend, RayFeed
    from pipeline.ingest import Abstract

    pending = Pending(
        abstracts=[Abstract(f"h{i}", f"text {i}") for i in range(3)],
        keys=[{"claims": f"k{i}"} for i in range(3)],
    )
    backend = RayBackend.__new__(RayBackend)
    backend.actors, backend.nodes = {}, Counter()
    runner = _Runner()
    return RayFeed(rows, pending, runner, backend, NoProgress(), 0.0), runner


def test_the_pass_takes_ray_answers_as_they_arrive_and_asks_what_never_came():
    """A stage waits for its own answer only; a key Ray ended without is released to the
    pass (which then asks it itself), and nothing waits forever."""
    import asyncio
    import threading

    gate = threading.Event()

    def rows():
        yield _feed_payload(1)
        gate.wait(HANG_S)  # row 0 comes later; row 2 never
        yield _feed_payload(0)

    async def scenario():
        feed, runner = _feed(rows())
        feed.start()
        await asyncio.wait_for(feed.wait("k1"), HANG_S)  # answered first, before k0
        assert "k1" in runner.answered and "k0" not in runner.answered and "k0" in feed
        gate.set()
        await asyncio.wait_for(feed.wait("k0"), HANG_S)
        await asyncio.wait_for(feed.wait("k2"), HANG_S)  # released at the end, unanswered
        assert "k2" not in runner.answered and "k2" not in feed
        await feed.close()
        return runner

    runner = asyncio.run(scenario())
    assert sorted(runner.stored) == ["k0", "k1"]


def test_a_fatal_ray_answer_fails_every_stage_still_waiting():
    import asyncio

    async def scenario():
        feed, _runner = _feed(iter([_feed_payload(0, fatal=True)]))
        feed.start()
        with pytest.raises(FatalBackendError, match="401"):
            await asyncio.wait_for(feed.wait("k2"), HANG_S)
        with pytest.raises(FatalBackendError):  # and any stage that comes to wait later
            await feed.wait("k1")
        await feed.close()

    asyncio.run(scenario())


def test_stop_ends_a_reader_still_waiting_for_a_row_and_closes_the_rows_in_its_thread():
    """Ray ends the process (exit 1) when a thread touches it after shutdown, and its row
    iterator does until the iteration is closed: stop() must get the reading thread out of
    a wait for a row (Ray polls for the next block in Python) and close the rows there."""
    import asyncio
    import threading
    import time

    closed_in: list[str] = []
    waiting = threading.Event()

    def rows():  # like Ray's iterator: the next row never comes, the wait polls
        try:
            yield _feed_payload(0)
            while True:
                waiting.set()
                time.sleep(0.01)
        finally:
            closed_in.append(threading.current_thread().name)

    async def scenario():
        feed, _runner = _feed(rows())
        feed.start()
        await asyncio.wait_for(feed.wait("k0"), HANG_S)
        assert await asyncio.to_thread(waiting.wait, HANG_S)
        return feed

    feed = asyncio.run(scenario())
    feed.stop(timeout_s=HANG_S)
    assert feed._reader is not None and not feed._reader.is_alive()
    assert closed_in == ["ray-rows"]  # closed once, by the reading thread itself


@needs_ray
def test_ctrl_c_during_the_ray_phase_exits_130_and_the_same_command_resumes(tmp_path, digest_at):
    """`digest run --engine ray` (its own process and Ray instance) stopped by SIGINT while
    its workers' requests are held: exit 130, an interrupted manifest, what arrived cached
    and the records already written kept; the rerun asks only the rest and finishes every
    abstract."""
    import signal
    import subprocess
    import threading

    path = tmp_path / "abstracts.txt"
    texts = write_abstracts(path, 120, seed=SEED)
    cache = tmp_path / "cache"

    # The server answers the abstracts of the first batch an actor asks (BATCH_SIZE of them,
    # in input order: its answers come back, and are cached, together) and holds every
    # other request at a gate until the child has exited: the stop comes mid-run however
    # busy the machine is, while the workers' requests are held (it must not wait for them).
    def opening(text: str) -> str:
        return " ".join(text.split())[:80]

    first_batch = {opening(t) for t in texts[:BATCH_SIZE]}
    gate, lock, seen = threading.Event(), threading.Lock(), [0]

    def hold(stage: str, abstract: str) -> threading.Event | None:
        if opening(abstract) in first_batch:
            return None
        with lock:
            seen[0] += 1
        return gate

    with OpenAIServer(ServerConfig(seed=SEED), answer_fn=answer, hold=hold) as server:
        preflight_hang_guard(tmp_path)  # the child's ./config.yaml
        argv = digest_at.child(server.base_url, path, "--engine", "ray", "--concurrency", "4")
        env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY}
        env.pop("RAY_ADDRESS", None)
        proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        answers = [cache / f"{stage}.jsonl" for stage in ("tldr", "tags", "claims")]
        try:
            wait_until(
                lambda: (
                    (seen[0] > 0 and any(p.exists() and p.stat().st_size for p in answers))
                    or proc.poll() is not None
                ),
                "the first answer cached, and a request held",
            )
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=HANG_S)
        finally:
            gate.set()
        asked_first = server.stats()["requests"]
        settings_ = settings(tmp_path, server, "rerun", cache_dir=cache, max_concurrency=64)
        rerun = run_paths(settings_, [path])
        asked_again = server.stats()["requests"] - asked_first
    assert proc.returncode == 130, stderr[-2000:]
    assert "stopped by SIGINT" in stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert manifest["counts"]["records_written"] < 120
    assert 0 < asked_first < 3 * 120 and 0 < asked_again < 3 * 120
    assert rerun.manifest.status == "ok" and rerun.manifest.counts.records_written == 120
    cached = sum(s.cache_hits for s in rerun.stats.stages.values())
    assert cached > 0  # what arrived before the stop was not asked again


@needs_ray
def test_hostile_answers_fail_their_own_pair_on_ray_as_locally(tmp_path, local_ray):
    """Issue 20.5 on the Ray engine: a lone surrogate, deep nesting and a 3 MB string end
    their own (abstract, stage) only, and the records equal the local engine's."""
    corpus = tmp_path / "hostile.txt"
    write_abstracts(corpus, 6, seed=3)
    runs = {}
    port = None
    for engine in ("local", "ray"):
        config = ServerConfig(port=port) if port else ServerConfig()
        with OpenAIServer(config, answer_fn=hostile_answer_fn(corpus)) as server:
            port = int(server.base_url.split(":")[2][:-3])
            runs[engine] = run_paths(settings(tmp_path, server, engine, engine=engine), [corpus])
    for result in runs.values():
        check_run(
            read_jsonl(result.run_dir / "summaries.jsonl"),
            read_jsonl(result.run_dir / "errors.jsonl"),
            corpus,
        )
    assert untimed(runs["ray"].run_dir) == untimed(runs["local"].run_dir)


@needs_ray
def test_ray_starts_while_the_inputs_and_the_cache_are_read(
    tmp_path, corpus, local_ray, digest_at, monkeypatch
):
    """`ray.init` and the actor pool start in the background when the engine is chosen:
    the start is under way while the inputs are read and while the cache pass runs, each of
    which waits here (bounded) for it to begin."""
    import threading

    import pipeline.cli.run as cli_run
    import pipeline.engine.ray_engine as ray_engine

    connecting = threading.Event()
    seen: dict[str, bool] = {}
    real_connect = getattr(ray_engine, "connect", None)
    real_read, real_pending = cli_run.read_inputs, ray_engine.pending_pairs

    def connect(settings):
        connecting.set()
        return real_connect(settings) if real_connect else None

    def read_inputs(*args, **kwargs):
        seen["while reading inputs"] = connecting.wait(30)
        return real_read(*args, **kwargs)

    def pending_pairs(*args, **kwargs):
        seen["during the cache pass"] = connecting.wait(30)
        return real_pending(*args, **kwargs)

    monkeypatch.setattr(ray_engine, "connect", connect, raising=False)
    monkeypatch.setattr(cli_run, "read_inputs", read_inputs)
    monkeypatch.setattr(ray_engine, "pending_pairs", pending_pairs)
    with OpenAIServer(ServerConfig(seed=SEED), answer_fn=answer) as server:
        result = digest_at(server.base_url, corpus, "--engine", "ray", "--stages", "tldr")
        assert server.stats()["requests"] == N_ABSTRACTS
    assert result.exit_code == 0, result.stderr
    assert seen == {"while reading inputs": True, "during the cache pass": True}


class _FakeRay:
    """What `dispatch` uses of ray: refs that are ready in the order they were made."""

    def __init__(self) -> None:
        self.cancelled: list[int] = []

    def wait(self, refs, num_returns, timeout):
        return [min(refs)], []

    def get(self, ref):
        return ref

    def cancel(self, ref):
        self.cancelled.append(ref)


class _FakeActor:
    def __init__(self, name: str, made: list) -> None:
        self.name, self.made = name, made
        self.answer = self

    def remote(self, batch):  # `actor.answer.remote(batch)`: a ref, here a sequence number
        self.made.append((self.name, batch))
        return len(self.made)


def test_dispatch_keeps_each_actor_busy_and_cancels_what_runs_when_closed():
    from pipeline.engine.ray_engine import dispatch

    made: list = []
    ray = _FakeRay()
    actors = [_FakeActor("a", made), _FakeActor("b", made)]
    answers = dispatch(ray, actors, iter(range(10)), per_actor=2)
    assert [next(answers), next(answers)] == [1, 2]
    # Two batches each at first, then one more to the actor that returned one.
    assert [name for name, _ in made[:4]] == ["a", "b", "a", "b"]
    assert made[4:] == [("a", 4), ("b", 5)]
    answers.close()
    assert sorted(ray.cancelled) == [3, 4, 5, 6]  # running when closed: cancelled


def test_actors_reading_other_prompts_stop_the_run_before_any_answer_is_cached():
    from types import SimpleNamespace

    from pipeline.engine.ray_engine import check_prompts
    from pipeline.errors import ConfigError

    stages = {"tldr": SimpleNamespace(prompt_hash="h1"), "tags": SimpleNamespace(prompt_hash="h2")}
    same = {"pid": 1, "prompts": {"tldr": "h1", "tags": "h2"}}
    check_prompts([same], stages)  # type: ignore[arg-type]
    other = {"pid": 7, "prompts": {"tldr": "h1", "tags": "edited"}}
    with pytest.raises(ConfigError, match="process 7 reads other prompts for tags"):
        check_prompts([same, other], stages)  # type: ignore[arg-type]


@needs_ray
def test_a_local_instance_runs_its_workers_at_normal_priority(monkeypatch):
    """Ray starts workers at nice 15 unless told otherwise: beside any CPU-bound work the
    actors starved (4 minutes to import the SDK beside 8 busy processes)."""
    import ray

    import pipeline.engine.ray_engine as ray_engine

    calls: list[dict] = []
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    assert ray_engine.connect(load_settings(None, env={}, overrides={"provider": "offline"})) is ray
    assert calls[0]["address"] == "local"
    assert calls[0]["_system_config"] == {"worker_niceness": 0} and WORKER_NICENESS == 0
