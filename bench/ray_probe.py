"""Ray feasibility probe: requests/s of a Ray engine vs the single-process engine.

    python -m bench.ray_probe                                  # default matrix (~15 min)
    python -m bench.ray_probe --quick                          # 1 pair per config, 2 configs
    python -m bench.ray_probe --engines ray --ray actors=2,batch=32 --repeat 3
    python -m bench.ray_probe --engines mp --mp-procs 2 3 --validate

Not wired into pipeline/: a prototype to learn whether "the Ray engine on this machine's 2
cores reaches at least 1.6x the requests/s of the single-process engine at 200 ms latency
and 256 in flight" is reachable, and what it costs.

The work: N synthetic abstracts (``bench.common.synthetic_rows``: the 57 shipped samples
behind a numbered first sentence, so every request is distinct) x 3 stages, the exact
chat-completions parameters of the openai backend (``bench.throughput``), sent with
``AsyncOpenAI`` over the aiohttp transport (``openai.DefaultAioHttpClient``, as shipped).
Every engine runs the same ``Caller``: it renders the three stage prompts of an abstract,
sends them under a semaphore and (with ``--validate``) validates each answer like the
runner does (``Stage.parse``), so the per-request client CPU is the pipeline's order.

Engines (total in flight is always ``--in-flight``, split evenly):

- ``single``: one asyncio loop in this process (the single-process engine).
- ``mp``: P ``multiprocessing`` workers (spawned, ready before the clock starts), each its
  own loop + client over a contiguous share: the ceiling of a plain process split.
- ``ray``: ``ray.data.from_items(rows).map_batches(RayCaller, concurrency=A, batch_size=B)``
  with an async ``__call__``; each actor holds one ``AsyncOpenAI`` client (created lazily
  on Ray Data's actor event loop: it runs in its own thread, not the actor's main thread)
  and a per-actor semaphore of in_flight / A. ``ray.init(num_cpus=...)`` once per config.

The server (``bench.openai_server``, 200 ms latency, answers from the offline extractor
memoised per sample) runs in its own process by default: in a thread of this process it
would share the single engine's GIL and bias the comparison; in either case it competes
for the same 2 cores, so its CPU is measured and reported. ``--server-thread`` shows the
biased variant.

Reported per run: requests/s end to end (the engine's wall, Ray start-up excluded but
actor start-up included), requests/s of the request phase (first to last arrival at the
server + latency), CPU seconds by process group (this process, server, Ray system
processes, workers / actors as they report themselves) against the machine's busy CPU
(``/proc/stat``; the remainder is other load on this shared machine), peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import multiprocessing as mp
import os
import resource
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, machine_note, md_table, synthetic_rows

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # a local Ray on 127.0.0.1 only

MODEL = "bench-model"
API_KEY = "bench-key"
STAGE_NAMES = ("tldr", "tags", "claims")


# --- the per-request work, shared by every engine -------------------------------------------


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@functools.cache
def _settings_and_stages() -> tuple[float, int, list[Any]]:
    from bench.throughput import _stages
    from pipeline.config import Settings

    settings = Settings()
    stages = [_stages()[name] for name in STAGE_NAMES]
    for stage in stages:
        _ = stage.json_schema  # cached_property: computed once, not per request
    return settings.temperature, settings.max_tokens, stages


def warm_up(base_url: str, n: int = 6) -> None:
    """A few real requests in this process, so first-call costs are not in any timing."""
    caller = Caller(base_url, 16)

    async def go() -> None:
        await caller.run([r["text"] for r in rows_for(n)])
        await caller.close()

    asyncio.run(go())


class Caller:
    """One AsyncOpenAI client (aiohttp transport) + a semaphore; built on first use in a loop."""

    def __init__(self, base_url: str, in_flight: int, validate: bool = False) -> None:
        self.base_url, self.in_flight, self.validate = base_url, in_flight, validate
        self.temperature, self.max_tokens, self.stages = _settings_and_stages()
        self.client = None
        self.sem: asyncio.Semaphore | None = None
        self.requests = self.failed = 0

    def _ensure(self) -> None:
        # Created inside the running loop: aiohttp sessions (and semaphores waiting in
        # them) belong to the loop that first uses them.
        if self.client is None:
            import httpx2
            import openai

            limits = httpx2.Limits(
                max_connections=max(1000, self.in_flight),
                max_keepalive_connections=max(100, self.in_flight),
            )
            self.client = openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=API_KEY,
                max_retries=0,
                timeout=120,
                http_client=openai.DefaultAioHttpClient(limits=limits, timeout=120),
            )
            self.sem = asyncio.Semaphore(self.in_flight)

    def _params(self, stage, text: str) -> dict[str, Any]:
        return {
            "model": MODEL,
            "messages": stage.messages(text),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": stage.name, "schema": stage.json_schema, "strict": True},
            },
        }

    async def _one(self, stage, text: str) -> str:
        assert self.client is not None and self.sem is not None
        async with self.sem:
            reply = await self.client.chat.completions.create(**self._params(stage, text))
        content = reply.choices[0].message.content or ""
        self.requests += 1
        if self.validate:
            try:
                stage.parse(content, text)
            except Exception:
                self.failed += 1
        return content

    async def abstract(self, text: str) -> list[str]:
        """The three stage answers of one abstract (sent concurrently)."""
        self._ensure()
        return list(await asyncio.gather(*(self._one(s, text) for s in self.stages)))

    async def run(self, texts: list[str]) -> list[list[str]]:
        return list(await asyncio.gather(*(self.abstract(t) for t in texts)))

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


def rows_for(n: int) -> list[dict[str, str]]:
    return [{"id": r["id"], "text": r["abstract"]} for r in synthetic_rows(n)]


# --- the server -----------------------------------------------------------------------------


class ServerProc:
    """``python -m bench.openai_server`` in its own process (or a thread, when asked)."""

    def __init__(self, latency: float, *, thread: bool = False) -> None:
        self.latency, self.thread = latency, thread
        self.base_url = ""
        self.pid = os.getpid()
        self._proc = None
        self._server = None

    def __enter__(self) -> ServerProc:
        if self.thread:
            from bench.common import bench_answer
            from pipeline.testing.openai_server import OpenAIServer, ServerConfig

            self._server = OpenAIServer(ServerConfig(latency=self.latency), bench_answer)
            self.base_url = self._server.start()
            return self
        from bench.common import Server

        self._proc = Server(latency=self.latency).__enter__()
        self.base_url = self._proc.base_url
        self.pid = self._proc.proc.pid
        return self

    def stats(self) -> dict[str, Any]:
        return self._server.stats() if self._server else self._proc.stats()

    def __exit__(self, *exc: object) -> None:
        if self._server:
            self._server.stop()
        if self._proc:
            self._proc.__exit__()


def warm_server(base_url: str) -> None:
    """Every sample's 3 answers computed once, so no run pays the server's first answers."""
    warm_up(base_url, 57)


# --- CPU accounting -------------------------------------------------------------------------


def _machine_jiffies() -> tuple[int, int]:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


@dataclass
class CpuSnapshot:
    wall: float
    machine_busy: int
    machine_total: int
    procs: dict[int, tuple[str, float, float]]  # pid -> (group, CPU s, RSS MB), descendants

    @staticmethod
    def take(server_pid: int | None) -> CpuSnapshot:
        import psutil

        procs: dict[int, tuple[str, float, float]] = {}
        for p in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                rss = p.memory_info().rss / 2**20
                procs[p.pid] = (_group(p, server_pid), t.user + t.system, rss)
        busy, total = _machine_jiffies()
        return CpuSnapshot(time.perf_counter(), busy, total, procs)


def _group(p, server_pid: int | None) -> str:
    if p.pid == server_pid:
        return "server"
    with contextlib.suppress(Exception):
        cmd = " ".join(p.cmdline())
        if "ray::" in cmd or "default_worker.py" in cmd:
            return "ray workers (idle / other)"
        if "ray" in cmd:
            return "ray system"
    return "other children"


def cpu_delta(
    before: CpuSnapshot, after: CpuSnapshot, exclude: set[int] = frozenset()
) -> dict[str, float]:
    """CPU seconds by group of the descendants alive at the end (died ones are not seen).

    ``exclude``: pids that report their own CPU (workers, actors), so none is counted twice.
    """
    out: dict[str, float] = {}
    for pid, (group, cpu, _) in after.procs.items():
        if pid in exclude:
            continue
        start = before.procs.get(pid, (group, 0.0, 0.0))[1]
        out[group] = out.get(group, 0.0) + cpu - start
    hz = os.sysconf("SC_CLK_TCK")
    out["machine busy"] = (after.machine_busy - before.machine_busy) / hz
    out["machine capacity"] = (after.machine_total - before.machine_total) / hz
    return out


# --- results --------------------------------------------------------------------------------


@dataclass
class RunResult:
    engine: str
    config: str
    requests: int
    failed: int
    wall: float  # the engine's own wall clock (Ray: after ray.init; actor start-up included)
    phase_rate: float  # requests / (last - first server arrival + latency)
    startup_s: float = 0.0  # ray.init, or worker spawn + imports
    cpu: dict[str, float] = field(default_factory=dict)
    rss_mb: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.requests / self.wall


def phase_rate(stats: dict[str, Any], since: float, latency: float) -> tuple[float, dict[str, float]]:  # fmt: skip
    """Requests/s between the first and last arrival after ``since`` (monotonic), and timings.

    Timings: seconds from ``since`` to the first arrival, the phase length, and the steady
    rate (the middle 80% of arrivals over their span: no ramp-up, no tail).
    """
    arrivals = sorted(t for t in stats["arrivals"] if t >= since)
    if len(arrivals) < 10:
        return float("nan"), {}
    n = len(arrivals)
    lo, hi = arrivals[n // 10], arrivals[(9 * n) // 10]
    timings = {
        "to_first_request_s": arrivals[0] - since,
        "phase_s": arrivals[-1] - arrivals[0] + latency,
        "steady_rate": (0.8 * n) / (hi - lo) if hi > lo else float("nan"),
    }
    return n / timings["phase_s"], timings


# --- quiet machine ----------------------------------------------------------------------------


def machine_busy_cores(sample_s: float = 2.0) -> float:
    """Busy cores of the whole machine over ``sample_s`` (/proc/stat)."""
    b0, _ = _machine_jiffies()
    time.sleep(sample_s)
    b1, _ = _machine_jiffies()
    return (b1 - b0) / os.sysconf("SC_CLK_TCK") / sample_s


def wait_quiet(threshold: float, max_wait_s: float) -> float:
    """Wait until the machine is below ``threshold`` busy cores (or give up); the last sample."""
    deadline = time.monotonic() + max_wait_s
    busy = machine_busy_cores()
    while busy > threshold and time.monotonic() < deadline:
        busy = machine_busy_cores()
    return busy


def _spin(n: int) -> tuple[float, float]:
    """A CPU-bound loop shaped like response handling (JSON round trips); (CPU s, wall s)."""
    payload = {"choices": [{"message": {"content": "x" * 800}}], "ids": list(range(200))}
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n):
        json.loads(json.dumps(payload))
    return time.process_time() - cpu, time.perf_counter() - wall


def hw_scaling(n: int = 30_000) -> dict[str, float]:
    """Throughput of 2 busy processes vs 1 on this machine's cores, and CPU per iteration."""
    ctx = mp.get_context("spawn")
    out: dict[str, float] = {}
    with ctx.Pool(2) as pool:
        pool.map(_spin, [1000, 1000])  # workers up and warm
        for procs in (1, 2):
            res = pool.map(_spin, [n] * procs)
            out[f"us_per_iter_{procs}"] = 1e6 * sum(c for c, _ in res) / (procs * n)
            out[f"iters_per_s_{procs}"] = procs * n / max(w for _, w in res)
    out["scaling"] = out["iters_per_s_2"] / out["iters_per_s_1"]
    return out


# --- engines --------------------------------------------------------------------------------


@dataclass
class Job:
    """What every engine gets: the server, the abstracts, the in-flight budget."""

    server: ServerProc
    rows: list[dict[str, str]]
    in_flight: int
    validate: bool
    latency: float

    @property
    def texts(self) -> list[str]:
        return [r["text"] for r in self.rows]

    def shares(self, k: int) -> list[list[str]]:
        texts = self.texts
        return [texts[i * len(texts) // k : (i + 1) * len(texts) // k] for i in range(k)]


class Measure:
    """CPU snapshots and the server's arrivals around one run."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.before = CpuSnapshot.take(job.server.pid)
        self.cpu0, self.since = _cpu_s(), time.monotonic()

    def finish(
        self, engine: str, config: str, requests: int, failed: int, self_reported: dict[int, float]
    ) -> RunResult:
        after = CpuSnapshot.take(self.job.server.pid)
        cpu = cpu_delta(self.before, after, exclude=set(self_reported))
        cpu["engine process"] = _cpu_s() - self.cpu0
        if self_reported:
            cpu["workers / actors (self-reported)"] = sum(self_reported.values())
        rate, timings = phase_rate(self.job.server.stats(), self.since, self.job.latency)
        return RunResult(
            engine=engine,
            config=config,
            requests=requests,
            failed=failed,
            wall=after.wall - self.before.wall,
            phase_rate=rate,
            cpu=cpu,
            rss_mb=rss_by_group(after, exclude=set(self_reported)),
            extra=timings,
        )


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def rss_by_group(snapshot: CpuSnapshot, exclude: set[int]) -> dict[str, float]:
    """Current RSS (MB) of this process and of its live descendants by group, server aside."""
    out = {"engine process (now)": _current_rss_mb()}
    for pid, (group, _, rss) in snapshot.procs.items():
        if pid not in exclude and group != "server":
            out[group] = out.get(group, 0.0) + rss
    return out


class SingleEngine:
    name = "single"
    label = "1 process, 1 loop"

    def __init__(self, job: Job) -> None:
        self.job = job

    def __enter__(self) -> SingleEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def run(self) -> RunResult:
        job = self.job
        caller = Caller(job.server.base_url, job.in_flight, job.validate)
        m = Measure(job)

        async def go() -> None:
            await caller.run(job.texts)
            await caller.close()

        asyncio.run(go())
        return m.finish(self.name, self.label, caller.requests, caller.failed, {})


def _mp_worker(base_url, in_flight, validate, tasks, out) -> None:
    warm_up(base_url)  # imports, prompts, schemas and first-call costs before the clock
    out.put({"pid": os.getpid(), "ready": True, "cpu": _cpu_s(), "rss_mb": _rss_mb()})
    while (texts := tasks.get()) is not None:
        out.put(asyncio.run(_share((base_url, in_flight, validate), texts)))


def _shares_result(m: Measure, engine: Any, reports: list[dict], rss_label: str) -> RunResult:
    """The run's result from its workers' `_share` reports (requests, CPU, RSS summed)."""
    r = m.finish(
        engine.name,
        engine.label,
        sum(x["requests"] for x in reports),
        sum(x["failed"] for x in reports),
        {x["pid"]: x["cpu"] for x in reports},
    )
    r.startup_s = engine.startup_s
    r.rss_mb[rss_label] = sum(x["rss_mb"] for x in reports)
    return r


async def _share(args: tuple[str, int, bool], texts: list[str]) -> dict[str, Any]:
    """One worker's share of a run through its own Caller: its answers, requests, CPU, RSS."""
    caller = Caller(*args)
    cpu = _cpu_s()
    try:
        answers = await caller.run(texts)
    finally:
        await caller.close()
    return {
        "pid": os.getpid(),
        "requests": caller.requests,
        "failed": caller.failed,
        "cpu": _cpu_s() - cpu,
        "rss_mb": _rss_mb(),
        "answers": answers,
    }


class MpEngine:
    """P spawned worker processes, started once; each run sends every worker its share."""

    name = "mp"

    def __init__(self, job: Job, procs: int) -> None:
        self.job, self.procs = job, procs
        self.label = f"{procs} processes x {job.in_flight // procs} in flight"
        self.startup_s = 0.0

    def __enter__(self) -> MpEngine:
        ctx = mp.get_context("spawn")
        self.out = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(self.procs)]
        started = time.perf_counter()
        self.workers = [
            ctx.Process(
                target=_mp_worker,
                args=(
                    self.job.server.base_url,
                    self.job.in_flight // self.procs,
                    self.job.validate,
                    q,
                    self.out,
                ),
                daemon=True,
            )
            for q in self.tasks
        ]
        for w in self.workers:
            w.start()
        self.ready = [self.out.get(timeout=300) for _ in self.workers]
        self.startup_s = time.perf_counter() - started
        return self

    def __exit__(self, *exc: object) -> None:
        for q in self.tasks:
            q.put(None)
        for w in self.workers:
            w.join(30)

    def run(self) -> RunResult:
        m = Measure(self.job)
        for q, share in zip(self.tasks, self.job.shares(self.procs), strict=True):
            q.put(share)
        reports = [self.out.get(timeout=900) for _ in self.workers]
        r = _shares_result(m, self, reports, "workers (peak, self-reported)")
        r.extra["worker_start_cpu_s"] = statistics.mean(x["cpu"] for x in self.ready)
        return r


@dataclass(frozen=True)
class RayConfig:
    """One Ray configuration (``--ray key=value,...``)."""

    api: str = "data"  # data: Ray Data map_batches over an actor pool; core: plain async actors
    actors: int = 2
    batch: int = 32  # abstracts per map_batches batch (x3 requests)
    num_cpus: int = 2  # ray.init(num_cpus=...)
    actor_cpus: float = 1.0  # num_cpus per actor (a scheduling label, not a CPU limit)
    blocks: int = 0  # override_num_blocks of the dataset; 0 = one block per actor
    calls: int = 1  # max_concurrent_calls_per_actor (Ray Data tasks running at once per actor)
    batches: int = 4  # async batches at once per task (Ray Data's default is 4)

    @staticmethod
    def parse(text: str) -> RayConfig:
        kwargs: dict[str, Any] = {}
        for item in filter(None, text.split(",")):
            key, _, value = item.partition("=")
            if key not in RayConfig.__dataclass_fields__:
                raise SystemExit(f"--ray: unknown key {key!r}")
            kinds = {"api": str, "actor_cpus": float}
            kwargs[key] = kinds.get(key, int)(value)
        return RayConfig(**kwargs)

    def label(self) -> str:
        if self.api == "core":
            return f"core: actors={self.actors},num_cpus={self.num_cpus},actor_cpus={self.actor_cpus:g}"  # fmt: skip
        return (
            f"data: actors={self.actors},batch={self.batch},num_cpus={self.num_cpus},"
            f"actor_cpus={self.actor_cpus:g},blocks={self.blocks or self.actors},"
            f"calls={self.calls},batches={self.batches}"
        )


class RayCaller:
    """The Ray Data UDF: one Caller per actor; async ``__call__`` over a batch of abstracts."""

    def __init__(self, base_url: str, in_flight: int, validate: bool) -> None:
        self.caller = Caller(base_url, in_flight, validate)
        self.pid = os.getpid()
        self.cpu0 = _cpu_s()  # after imports: start-up CPU is not request CPU
        self.main_thread = threading.get_ident()

    async def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        texts = [str(t) for t in batch["text"]]
        answers = await self.caller.run(texts)
        n = len(texts)
        return {
            "id": batch["id"],
            "tldr": [a[0] for a in answers],
            "tags": [a[1] for a in answers],
            "claims": [a[2] for a in answers],
            "pid": [self.pid] * n,
            "cpu0": [self.cpu0] * n,
            "cpu": [_cpu_s()] * n,
            "rss_mb": [_rss_mb()] * n,
            "failed": [self.caller.failed] * n,
            "on_main_thread": [threading.get_ident() == self.main_thread] * n,
        }


class CoreCaller:
    """A plain Ray async actor around one Caller (the Ray Core variant)."""

    def __init__(self, base_url: str, in_flight: int, validate: bool) -> None:
        self.args = (base_url, in_flight, validate)

    async def ready(self) -> float:
        caller = Caller(self.args[0], 16)
        await caller.run([r["text"] for r in rows_for(6)])  # warm, like the mp workers
        await caller.close()
        return _cpu_s()

    async def run(self, texts: list[str]) -> dict[str, Any]:
        return await _share(self.args, texts)


class RayEngine:
    """One ``ray.init`` per config; Ray Data (actors per execution) or Ray Core actors."""

    name = "ray"

    def __init__(self, job: Job, config: RayConfig) -> None:
        self.job, self.config = job, config
        self.label = config.label()
        self.startup_s = 0.0
        self.runs = 0

    def __enter__(self) -> RayEngine:
        # Workers inherit the environment: the repo on their path without a runtime_env.
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])
        )
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        import ray

        started = time.perf_counter()
        ray.init(
            address="local",  # a new instance: never one a `ray start` left its address for
            num_cpus=self.config.num_cpus,
            include_dashboard=False,
            object_store_memory=512 * 1024 * 1024,
            log_to_driver=False,
            logging_level="warning",
        )
        self.init_s = time.perf_counter() - started
        if self.config.api == "core":
            remote = ray.remote(num_cpus=self.config.actor_cpus)(CoreCaller)
            per_actor = self.job.in_flight // self.config.actors
            args = (self.job.server.base_url, per_actor, self.job.validate)
            self.actors = [remote.remote(*args) for _ in range(self.config.actors)]
            self.actor_cpu0 = ray.get([a.ready.remote() for a in self.actors])
        else:
            import ray.data._internal.planner.plan_udf_map_op as plan

            plan.DEFAULT_ASYNC_BATCH_UDF_MAX_CONCURRENCY = self.config.batches
            ctx = ray.data.DataContext.get_current()
            ctx.enable_progress_bars = False
            ctx.print_on_execution_start = False
        self.startup_s = time.perf_counter() - started
        return self

    def __exit__(self, *exc: object) -> None:
        import ray

        ray.shutdown()

    def run(self) -> RunResult:
        self.runs += 1
        if self.config.api == "core":
            return self._run_core()
        return self._run_data()

    def _run_core(self) -> RunResult:
        import ray

        m = Measure(self.job)
        refs = [
            a.run.remote(share)
            for a, share in zip(self.actors, self.job.shares(len(self.actors)), strict=True)
        ]
        reports = ray.get(refs)
        r = _shares_result(m, self, reports, "actors (peak, self-reported)")
        r.extra.update(ray_init_s=self.init_s, actor_start_cpu_s=statistics.mean(self.actor_cpu0))
        return r

    def _run_data(self) -> RunResult:
        import ray

        c, job = self.config, self.job
        m = Measure(job)
        ds = ray.data.from_items(job.rows, override_num_blocks=c.blocks or c.actors)
        ds = ds.map_batches(
            RayCaller,
            fn_constructor_kwargs={
                "base_url": job.server.base_url,
                "in_flight": job.in_flight // c.actors,
                "validate": job.validate,
            },
            batch_size=c.batch,
            compute=ray.data.ActorPoolStrategy(
                size=c.actors, max_concurrent_calls_per_actor=c.calls
            ),
            num_cpus=c.actor_cpus,
        )
        out = ds.take_all()
        per_actor: dict[int, list[float]] = {}  # pid -> [cpu at init, max cpu, max rss, failed]
        for row in out:
            cur = per_actor.setdefault(row["pid"], [row["cpu0"], 0.0, 0.0, 0])
            cur[1], cur[2] = max(cur[1], row["cpu"]), max(cur[2], row["rss_mb"])
            cur[3] = max(cur[3], row["failed"])
        r = m.finish(
            self.name,
            self.label,
            3 * len(out),
            int(sum(v[3] for v in per_actor.values())),
            {pid: v[1] - v[0] for pid, v in per_actor.items()},
        )
        r.startup_s = self.startup_s
        r.rss_mb["actors (peak, self-reported)"] = sum(v[2] for v in per_actor.values())
        r.extra.update(
            ray_init_s=self.init_s,
            cold=self.runs == 1,  # the first execution also starts Ray Data's helper actors
            actors_seen=len(per_actor),
            actor_start_cpu_s=statistics.mean(v[0] for v in per_actor.values()),
            udf_on_actor_main_thread=any(row["on_main_thread"] for row in out),
        )
        return r


# --- main -----------------------------------------------------------------------------------


DEFAULT_RAY = (
    "actors=2,batch=32",
    "actors=2,batch=32,blocks=8,calls=2",
    "actors=3,batch=32,actor_cpus=0.66",
    "actors=4,batch=16,actor_cpus=0.5",
    "actors=2,batch=128,batches=2,num_cpus=4",
    "api=core,actors=2",
)


def _ours(r: RunResult) -> float:
    return sum(v for k, v in r.cpu.items() if not k.startswith("machine"))


def _fmt_cpu(r: RunResult) -> str:
    keep = {k: v for k, v in r.cpu.items() if not k.startswith("machine") and v >= 0.05}
    return ", ".join(f"{k} {v:.1f}" for k, v in sorted(keep.items(), key=lambda kv: -kv[1]))


def _foreign_cores(r: RunResult) -> float:
    return max(0.0, r.cpu.get("machine busy", 0.0) - _ours(r)) / r.wall


def _steady(r: RunResult) -> float:
    return r.extra.get("steady_rate", float("nan"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ray_probe", description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("-n", "--abstracts", type=int, default=1000, help="abstracts per run (x3 requests)")  # fmt: skip
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--in-flight", type=int, default=256)
    p.add_argument("--repeat", type=int, default=2, help="paired runs (single, then the engine) per config")  # fmt: skip
    p.add_argument("--engines", nargs="+", default=["mp", "ray"], choices=["mp", "ray"])
    p.add_argument("--mp-procs", type=int, nargs="+", default=[2])
    p.add_argument("--ray", action="append", default=[], metavar="KEY=VAL,...", help=f"a Ray config (repeatable); keys: {', '.join(RayConfig.__dataclass_fields__)}")  # fmt: skip
    p.add_argument("--validate", action="store_true", help="validate answers (Stage.parse)")
    p.add_argument("--server-thread", action="store_true", help="server in a thread of this process (biased)")  # fmt: skip
    p.add_argument("--quiet-below", type=float, default=0.5, help="before each run, wait until the machine is below this many busy cores")  # fmt: skip
    p.add_argument("--quiet-wait", type=float, default=60.0, help="give up waiting after this many seconds")  # fmt: skip
    p.add_argument("--max-foreign", type=float, default=0.15, help="measure a pair again when other load exceeded this many cores")  # fmt: skip
    p.add_argument("--retries", type=int, default=2, help="at most this many re-measurements per pair")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="1 pair per config, 2 Ray configs")
    p.add_argument("--json", type=Path, help="write every run's figures here")
    p.add_argument("--hw", action="store_true", help="first measure how 2 busy processes scale on this machine")  # fmt: skip
    p.add_argument("--report", type=Path, nargs="+", help="only print the report of saved --json files")  # fmt: skip
    args = p.parse_args(argv)
    if args.report:
        pairs, colds = _load(args.report)
        _report(pairs, colds, max_foreign=args.max_foreign, title=f"Saved runs: {', '.join(map(str, args.report))}")  # fmt: skip
        return 0
    ray_configs = [RayConfig.parse(t) for t in (args.ray or DEFAULT_RAY)]
    if args.quick:
        args.repeat = 1
        ray_configs = ray_configs if args.ray else ray_configs[:1] + ray_configs[-1:]

    print(machine_note())
    if args.hw:
        busy = wait_quiet(args.quiet_below, args.quiet_wait)
        hw = hw_scaling()
        print(
            f"hardware: 2 busy processes = {hw['scaling']:.2f}x the throughput of 1 on a CPU-bound "
            f"loop ({hw['us_per_iter_1']:.1f} -> {hw['us_per_iter_2']:.1f} us CPU per iteration; "
            f"machine at {busy:.2f} busy cores before)\n"
        )
    rows = rows_for(args.abstracts)
    print(
        f"work: {len(rows)} abstracts x 3 stages = {3 * len(rows)} requests per run; server "
        f"latency {args.latency * 1000:.0f} ms; {args.in_flight} in flight; validate="
        f"{args.validate}; server in "
        f"{'a thread of this process' if args.server_thread else 'its own process'}\n"
    )
    pairs: list[tuple[RunResult, RunResult]] = []
    colds: list[RunResult] = []

    def show(r: RunResult, note: str = "") -> None:
        print(
            f"  {r.engine:6} {r.config:70} {r.rate:6.1f} req/s e2e, {_steady(r):6.1f} steady, "
            f"first request {r.extra.get('to_first_request_s', float('nan')):4.1f}s, "
            f"wall {r.wall:5.1f}s, foreign load {_foreign_cores(r):.2f} cores{note}; "
            f"CPU s: {_fmt_cpu(r)}",
            flush=True,
        )

    def quiet() -> str:
        busy = wait_quiet(args.quiet_below, args.quiet_wait)
        return f" (started at {busy:.2f} busy cores)" if busy > args.quiet_below else ""

    with ServerProc(args.latency, thread=args.server_thread) as server:
        job = Job(server, rows, args.in_flight, args.validate, args.latency)
        warm_server(server.base_url)
        engines: list[Any] = []
        if "mp" in args.engines:
            engines += [lambda procs=procs: MpEngine(job, procs) for procs in args.mp_procs]
        if "ray" in args.engines:
            engines += [lambda c=c: RayEngine(job, c) for c in ray_configs]
        for make in engines:
            with make() as engine:
                print(f"{engine.label}: start-up {engine.startup_s:.1f}s", flush=True)
                if isinstance(engine, RayEngine) and engine.config.api == "data":
                    note = quiet()
                    cold = engine.run()  # cold: Ray Data's helper actors start here
                    colds.append(cold)
                    show(cold, note + " [cold: first execution]")
                for _ in range(args.repeat):
                    for attempt in range(1 + args.retries):
                        note = quiet()
                        single = SingleEngine(job).run()
                        show(single, note)
                        note = quiet()
                        other = engine.run()
                        show(other, note)
                        foreign = max(_foreign_cores(single), _foreign_cores(other))
                        if foreign <= args.max_foreign or attempt == args.retries:
                            break
                        print(f"    (foreign load {foreign:.2f} cores: pair measured again)")
                    pairs.append((single, other))

    if args.json:
        data = {
            "argv": sys.argv[1:],
            "machine": machine_note(),
            "pairs": [[asdict(r) for r in pair] for pair in pairs],
            "colds": [asdict(r) for r in colds],
        }
        args.json.write_text(json.dumps(data, indent=1))
    _report(pairs, colds, max_foreign=args.max_foreign, title=_title(args))
    return 0


def _title(args: argparse.Namespace) -> str:
    return (
        f"Requests/s at {args.latency * 1000:.0f} ms latency, {args.in_flight} in flight, "
        f"{3 * args.abstracts} requests per run" + (", answers validated" if args.validate else "")
    )


def _med(values) -> float:
    values = [v for v in values if v == v]  # drop NaN
    return statistics.median(values) if values else float("nan")


def _used(ps: list[tuple[RunResult, RunResult]], max_foreign: float) -> tuple[list, bool]:
    """The clean pairs (other load at most ``max_foreign`` cores in both runs), else all."""
    clean = [p for p in ps if max(_foreign_cores(p[0]), _foreign_cores(p[1])) <= max_foreign]
    return (clean, True) if clean else (ps, False)


def _client_ms(r: RunResult) -> float:
    return 1000 * (_ours(r) - r.cpu.get("server", 0.0)) / r.requests


def _server_ms(r: RunResult) -> float:
    return 1000 * r.cpu.get("server", 0.0) / r.requests


def _ceiling(single: RunResult, other: RunResult, cores: int = 2) -> float:
    """Best ratio the CPU costs allow: the single engine saturates one core with its client
    work (the server runs on the other); the other engine has ``cores`` for everything."""
    single_rate = 1000 / max(_client_ms(single), (_client_ms(single) + _server_ms(single)) / cores)  # fmt: skip
    return cores * 1000 / (_client_ms(other) + _server_ms(other)) / single_rate


def _report(
    pairs: list[tuple[RunResult, RunResult]],
    colds: list[RunResult],
    *,
    max_foreign: float,
    title: str,
) -> None:
    by_config: dict[str, list[tuple[RunResult, RunResult]]] = {}
    for single, other in pairs:
        by_config.setdefault(f"{other.engine} | {other.config}", []).append((single, other))
    all_clean = [p for ps in by_config.values() for p in _used(ps, max_foreign)[0] if _used(ps, max_foreign)[1]]  # fmt: skip
    base = all_clean or pairs
    singles = [s for s, _ in base]
    rows = [
        (
            "single | 1 process, 1 loop",
            f"{len(all_clean)}/{len(pairs)}",
            f"{_med(s.rate for s in singles):.1f}",
            "1.00x",
            f"{_med(_steady(s) for s in singles):.1f}",
            "1.00x",
            "1.00x",
            "0.0",
            f"{_med(s.extra.get('to_first_request_s', 0) for s in singles):.2f}",
            f"{_med(_client_ms(s) for s in singles):.2f}",
            f"{_med(_server_ms(s) for s in singles):.2f}",
            f"{_med(_foreign_cores(s) for s in singles):.2f}",
            f"{min(sum(s.rss_mb.values()) for s in singles):.0f}",
            sum(s.failed for s in singles),
        )
    ]
    for label, ps in by_config.items():
        used, clean = _used(ps, max_foreign)
        others = [o for _, o in used]
        mark = "" if clean else " *"
        rows.append(
            (
                label,
                f"{len(used) if clean else 0}/{len(ps)}",
                f"{_med(o.rate for o in others):.1f}{mark}",
                f"{_med(o.rate / s.rate for s, o in used):.2f}x{mark}",
                f"{_med(_steady(o) for o in others):.1f}{mark}",
                f"{_med(_steady(o) / _steady(s) for s, o in used):.2f}x{mark}",
                f"{_med(_ceiling(s, o) for s, o in ps):.2f}x",
                f"{_med(o.startup_s for o in others):.1f}",
                f"{_med(o.extra.get('to_first_request_s', 0) for o in others):.2f}",
                f"{_med(_client_ms(o) for _, o in ps):.2f}",
                f"{_med(_server_ms(o) for _, o in ps):.2f}",
                f"{_med(_foreign_cores(o) for o in others):.2f}",
                f"{max(sum(o.rss_mb.values()) for o in others):.0f}",
                sum(o.failed for o in others),
            )
        )
    print(f"\n### {title}\n")
    print(
        md_table(
            [
                "engine | config",
                "clean pairs",
                "req/s e2e",
                "vs single",
                "req/s steady",
                "vs single (steady)",
                "CPU ceiling vs single",
                "start-up s",
                "first request s",
                "client CPU ms/req",
                "server CPU ms/req",
                "other load cores",
                "RSS MB (ours, server aside)",
                "failed",
            ],
            rows,
        )
    )
    print(
        f"""
Ratios are medians over paired runs (the single engine, then the engine, back to back);
only clean pairs (other load <= {max_foreign} cores in both runs) count; * = no clean pair,
figures from contended runs (not comparable). e2e = requests / wall of one run with the
engine already up (mp: workers spawned; Ray: after ray.init; Ray Data starts its actors
inside every execution, see 'first request'). steady = the middle 80% of the server's
arrivals over their span (no ramp-up, no tail). CPU ceiling = the best ratio the measured
CPU costs allow (2 cores / (client + server CPU per request) vs 1 core / the single engine's
client CPU per request), over all pairs. client CPU = all our processes but the server
(engine, workers / actors, Ray system and helper actors). other load = machine busy
(/proc/stat) minus ours: other sessions on this shared machine. start-up = mp spawn +
imports, or ray.init (+ Ray Core actors)."""
    )
    if colds:
        single_rate = _med(s.rate for s in singles)
        print("\nRay Data cold runs (first execution after ray.init; helper actors start):\n")
        print(
            md_table(
                [
                    "config",
                    "req/s e2e",
                    "ray.init s",
                    "first request s",
                    "req/s incl. ray.init",
                    "vs single (incl. init)",
                    "other load cores",
                ],  # fmt: skip
                [
                    (
                        c.config,
                        f"{c.rate:.1f}",
                        f"{c.extra['ray_init_s']:.1f}",
                        f"{c.extra.get('to_first_request_s', 0):.1f}",
                        f"{c.requests / (c.wall + c.extra['ray_init_s']):.1f}",
                        f"{c.requests / (c.wall + c.extra['ray_init_s']) / single_rate:.2f}x",
                        f"{_foreign_cores(c):.2f}",
                    )
                    for c in colds
                ],
            )
        )


def _load(paths: list[Path]) -> tuple[list[tuple[RunResult, RunResult]], list[RunResult]]:
    pairs, colds = [], []
    names = {f.name for f in dataclasses.fields(RunResult)}
    for path in paths:
        data = json.loads(path.read_text())
        pairs += [
            tuple(RunResult(**{k: v for k, v in r.items() if k in names}) for r in pair)
            for pair in data["pairs"]
        ]
        colds += [RunResult(**{k: v for k, v in r.items() if k in names}) for r in data["colds"]]
    return pairs, colds


if __name__ == "__main__":
    # Run the imported module, not __main__: Ray pickles __main__'s classes by value and
    # their module-level helpers then do not exist in the workers.
    from bench.ray_probe import main as _main

    started = time.perf_counter()
    code = _main()
    print(f"\n(probe took {time.perf_counter() - started:.0f}s)", file=sys.stderr)
    raise SystemExit(code)
