"""The Ray engine (`digest run --engine ray`): the uncached stages of a run asked by Ray actors.

The driver (the `digest run` process) keeps everything but the requests: it keys every
(abstract, stage) like the local engine and leaves out the cached ones, cuts the unique
abstracts with uncached stages into batches and hands them to a pool of actors, one per CPU
Ray offers, spread over the nodes. Each actor holds one `OpenAIBackend` (one async client,
its share of the run's concurrency and rate limits) and asks each stage with the local
engine's own `ask_until_valid` (same request body, transport retries, validation, grounding
and re-asks). Actors return their answers per batch; the driver caches the ok ones as they
arrive (it is the only cache writer) and keeps every answer, failed ones included, for the
normal local pass (`pipeline.job`), which settles them like answers of its own: the run
folder is written by the one writer and a failed stage is reported with its failure kind,
not asked again.

Ray starts in the background (`start_ray`): `ray.init`, then the actor pool, whose workers
import the package meanwhile; the run joins it before its first batch. It starts when the
engine is chosen, before the inputs are read, when the cache cannot serve the run (empty,
or `--force`); otherwise when the cache pass finds the first pair to ask, so a warm run
never starts Ray. One batch runs all the stages of its abstracts (each
abstract's stages concurrently, as the local engine does), rather than one pool per stage:
three pools of actors on the same cores measured slower (bench/ray_probe.py). Plain actors,
not Ray Data: with Ray Data's planning and its workers' imports (pyarrow), and Ray started
only after the cache pass, the first request came ~7 s later on the same loaded 2-core
machine (bench/ray_startup.py).

`ray.init()` connects to the cluster `RAY_ADDRESS` names; without it a local Ray instance
starts with this machine's cores. Ray is imported only when this engine runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import importlib.util
import logging
import math
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.backends import LazyOpenAIBackend
from pipeline.config import Settings
from pipeline.context import Dropped
from pipeline.engine.progress import Progress
from pipeline.engine.schedule import signals_interrupt
from pipeline.engine.stage_runner import (
    Answer,
    Answered,
    StageRunner,
    ask_until_valid,
    report_progress,
)
from pipeline.errors import (
    BackendError,
    ConfigError,
    FatalBackendError,
    OutputValidationError,
    RunInterrupted,
)
from pipeline.ingest import Abstract
from pipeline.limits import Limiter

if TYPE_CHECKING:
    from pipeline.backends import Completion
    from pipeline.backends.openai_backend import OpenAIBackend
    from pipeline.stages import Stage

log = logging.getLogger(__name__)

RAY_EXTRA = "pip install -e '.[ray]'"
# Abstracts per batch (an actor call): 32 x 3 stages = 96 requests; each actor keeps enough
# batches in flight to fill its share of the in-flight budget (`batches_in_flight`).
BATCH_SIZE = 32
# The local instance's object store: results are small, the default (30% of RAM) is not.
LOCAL_OBJECT_STORE_BYTES = 512 * 1024 * 1024
# How often the driver's batch reader looks up from its wait (it stops within this).
POLL_S = 0.05
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": node addresses are 127.0.0.1
# "0": a Ray call outside `connect` raises instead of starting or joining some instance
# (read when ray is first imported). Only `connect` connects.
NO_AUTO_CONNECT = "RAY_ENABLE_AUTO_CONNECT"


def require_ray() -> None:
    """Refuse `--engine ray` without the extra installed, or with the offline backend."""
    if not os.environ.get("RAY_ADDRESS"):
        # A local instance on loopback only: Ray otherwise binds the machine's address (read
        # when ray is first imported, so before that; a cluster address keeps Ray's default).
        os.environ.setdefault(LOOPBACK_ONLY, "0")
    os.environ.setdefault(NO_AUTO_CONNECT, "0")
    # Found, not imported: the import (~0.5 s) happens in the background start.
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(f"--engine ray needs Ray, which is not installed: {RAY_EXTRA}")


def check_engine(settings: Settings) -> None:
    """Refuse an engine setting no run can honour, before any input is read."""
    if settings.engine != "ray":
        return
    if settings.resolved_provider == "offline":
        raise ConfigError(
            "--engine ray sends requests to an endpoint; the offline extractor runs in one "
            "process (use --engine local, or configure --base-url / OPENAI_API_KEY)"
        )
    require_ray()


class RayBackend:
    """The run's backend when the stages ran on Ray: the actors' request counts, and a local
    backend for any stage the pass must still ask (a cached record that fails validation)."""

    name = "openai"
    can_reask = True
    reads_messages = True

    def __init__(self, settings: Settings, limiter: Limiter) -> None:
        self.model = settings.model
        self.local = LazyOpenAIBackend(settings, limiter)
        self.actors: dict[str, dict[str, Any]] = {}  # actor id -> its latest counts
        self.nodes: Counter[str] = Counter()  # Ray node id -> (abstract, stage) pairs answered

    async def complete(self, stage: Stage, abstract: str, messages: list[dict]) -> Completion:
        """Ask locally (the pass needs this only for a cached record that went bad)."""
        return await self.local.complete(stage, abstract, messages)

    def _sum(self, name: str) -> Counter[str]:
        total: Counter[str] = Counter()
        for counts in self.actors.values():
            total.update(counts[name])
        return total

    @property
    def requests_sent(self) -> Counter[str]:
        """Requests sent per stage by the actors and the local backend, retries included."""
        return self._sum("sent") + Counter(self.local.requests_sent)

    @property
    def retries_by_stage(self) -> Counter[str]:
        """Transport retries per stage."""
        return self._sum("retries") + Counter(self.local.retries_by_stage)

    @property
    def transport_retries(self) -> int:
        """Transport retries over the run."""
        return sum(self.retries_by_stage.values())

    @property
    def rate_limit_pauses(self) -> int:
        """Run-wide pauses after a 429, in the actors (the local limiter counts its own)."""
        return sum(counts["pauses"] for counts in self.actors.values())

    def actor_cpu_s(self) -> float:
        """CPU seconds the actors' processes spent since they started (imports excluded)."""
        return sum(counts.get("cpu_s", 0.0) for counts in self.actors.values())

    def answers_by_node(self) -> dict[str, int]:
        """(abstract, stage) pairs the actors of each Ray node answered."""
        return dict(self.nodes)

    def tally(self, actor: str, counts: dict[str, Any]) -> None:
        """An actor's cumulative counts (reports may arrive out of order: keep the largest)."""
        seen = self.actors.get(actor)
        if seen is None or counts["n"] >= seen["n"]:
            self.actors[actor] = counts

    def preflight(self, settings: Settings) -> None:
        """Check the endpoint once from the driver, while Ray starts (exit 3 in seconds)."""
        from pipeline.backends.openai_backend import OpenAIBackend

        async def check() -> None:
            backend = OpenAIBackend(settings, Limiter(max_concurrency=1))
            try:
                await backend.preflight()
            finally:
                await backend.aclose()

        asyncio.run(check())

    async def aclose(self) -> None:
        """Close the local backend if it was built."""
        await self.local.aclose()


# --- the answers' wire form -----------------------------------------------------------------


def answer_to_json(answer: Answer) -> dict[str, Any]:
    """An Answer as JSON (actor to driver)."""
    error = answer.error
    return {
        "output": answer.output,
        "error": None
        if error is None
        else {
            "backend": isinstance(error, BackendError),
            "message": str(error),
            "kind": error.kind,
            "raw": error.raw,
            "attempts": getattr(error, "attempts", 1),
        },
        "raw": answer.raw,
        "attempts": answer.attempts,
        "tokens_in": answer.tokens_in,
        "tokens_out": answer.tokens_out,
        "tokens_cached": answer.tokens_cached,
        "dropped": [d.as_json() for d in answer.dropped],
        "requests": answer.requests,
        "repairs": answer.repairs,
    }


def answer_from_json(data: dict[str, Any]) -> Answer:
    """The Answer `answer_to_json` wrote."""
    e = data["error"]
    error: BackendError | OutputValidationError | None = None
    if e is not None and e["backend"]:
        error = BackendError(e["message"], kind=e["kind"], raw=e["raw"], attempts=e["attempts"])
    elif e is not None:
        error = OutputValidationError(e["message"], kind=e["kind"], raw=e["raw"])
    return Answer(
        output=data["output"],
        error=error,
        raw=data["raw"],
        attempts=data["attempts"],
        tokens_in=data["tokens_in"],
        tokens_out=data["tokens_out"],
        tokens_cached=data["tokens_cached"],
        dropped=[Dropped(**d) for d in data["dropped"]],
        requests=data["requests"],
        repairs=data.get("repairs", []),
    )


# --- the actors -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Share:
    """One actor's part of the run's limits."""

    concurrency: int
    rpm: int | None
    tpm: int | None

    @staticmethod
    def of(settings: Settings, actors: int) -> Share:
        """An even split over `actors` (at least 1 of each)."""

        def split(value: int | None) -> int | None:
            return None if value is None else max(1, value // actors)

        return Share(
            max(1, settings.max_concurrency // actors),
            split(settings.requests_per_minute),
            split(settings.tokens_per_minute),
        )


class StageActor:
    """A Ray actor: one backend; an async call answers a batch of abstracts."""

    def __init__(self, settings: Settings, share: Share) -> None:
        import ray

        from pipeline.context import RunContext

        self.settings = settings
        self.share = share
        self.id = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.node = ray.get_runtime_context().get_node_id()
        self.calls = 0
        # The worker's own context, without the cache: only the driver reads and writes it.
        self.stages = RunContext(settings, cache="none").stages
        self.backend: OpenAIBackend | None = None
        self.cpu = time.process_time()  # reset by ready(), once the client is made

    def _backend(self) -> OpenAIBackend:
        # Built on first use, inside the actor's event loop: the client's connections belong
        # to the loop that opens them.
        if self.backend is None:
            from pipeline.backends.openai_backend import OpenAIBackend

            limiter = Limiter(
                max_concurrency=self.share.concurrency,
                requests_per_minute=self.share.rpm,
                tokens_per_minute=self.share.tpm,
            )
            self.backend = OpenAIBackend(self.settings, limiter)
        return self.backend

    async def ready(self) -> dict[str, Any]:
        """Who this actor is: its id, node, process and prompt hashes (checked by the driver).
        Its client is made here, in the start, not at the first batch."""
        self._backend()
        self.cpu = time.process_time()  # what the requests cost counts from here
        prompts = {name: stage.prompt_hash for name, stage in self.stages.items()}
        return {"actor": self.id, "node": self.node, "pid": os.getpid(), "prompts": prompts}

    async def _one(self, i: int, text: str, stage: Stage) -> dict[str, Any]:
        settings = self.settings
        started = time.perf_counter()
        try:
            answer = await ask_until_valid(
                self._backend(),
                stage,
                text,
                json_object=settings.response_format == "json_object",
                max_reasks=settings.max_reasks,
                max_tokens=settings.max_tokens,
            )
        except FatalBackendError as exc:
            return {"i": i, "stage": stage.name, "fatal": str(exc)}
        latency_ms = round((time.perf_counter() - started) * 1000, 1)
        return {"i": i, "stage": stage.name, "answer": answer_to_json(answer), "ms": latency_ms}

    async def answer(self, batch: list[tuple[int, str, tuple[str, ...]]]) -> dict[str, Any]:
        """Every listed stage of every (row, abstract, stages) of the batch, and this actor's
        cumulative counts."""
        self.calls += 1
        jobs = [self._one(i, text, self.stages[name]) for i, text, names in batch for name in names]
        pairs = await asyncio.gather(*jobs)
        backend = self._backend()
        counts = {
            "n": self.calls,
            "node": self.node,
            "sent": dict(backend.requests_sent),
            "retries": dict(backend.retries_by_stage),
            "pauses": backend.limiter.backoffs,
            "cpu_s": time.process_time() - self.cpu,
        }
        return {"actor": self.id, "counts": counts, "pairs": pairs}


# --- the driver -----------------------------------------------------------------------------


@dataclass
class Pending:
    """The uncached stages of the run: per row, the abstract and (stage, key)s."""

    abstracts: list[Abstract] = field(default_factory=list)
    keys: list[dict[str, str]] = field(default_factory=list)

    @property
    def pairs(self) -> int:
        """How many (abstract, stage) pairs are to be asked."""
        return sum(len(k) for k in self.keys)

    def batches(self, size: int = BATCH_SIZE) -> Iterator[list[tuple[int, str, tuple[str, ...]]]]:
        """The rows, `size` at a time: (row, abstract text, stage names)."""
        rows = [
            (i, a.text, tuple(keys))
            for i, (a, keys) in enumerate(zip(self.abstracts, self.keys, strict=True))
        ]
        for at in range(0, len(rows), size):
            yield rows[at : at + size]


def pending_pairs(
    runner: StageRunner,
    abstracts: Iterable[Abstract],
    on_first: Callable[[], object] = lambda: None,
) -> Pending:
    """The (abstract, stage) pairs without a cache record (records are validated by the pass);
    `on_first` is called when the first one is found."""
    pending = Pending()
    for abstract in abstracts:
        keys = {}
        context = runner.context
        for name, stage in context.stages.items():
            key = context.key(stage, abstract)
            if context.settings.force or not context.has_record(stage, key):
                keys[name] = key
        if keys:
            if not pending.keys:
                on_first()
            pending.abstracts.append(abstract)
            pending.keys.append(keys)
    return pending


WORKER_NICENESS = 0  # of the local instance's workers (a cluster: RAY_worker_niceness)


def connect(settings: Settings) -> Any:
    """Ray, connected: the cluster `RAY_ADDRESS` names, else a new local instance with this
    machine's cores; None when the caller had connected already (their instance is used and
    left running)."""
    require_ray()
    import ray

    if ray.is_initialized():
        return None
    if address := os.environ.get("RAY_ADDRESS"):
        try:
            ray.init(logging_level=logging.WARNING, log_to_driver=False)
        except ConnectionError as exc:
            raise ConfigError(
                f"cannot connect to the Ray cluster at RAY_ADDRESS={address} ({exc}); check "
                "the address, and the token if the cluster checks one (RAY_AUTH_TOKEN)"
            ) from None
    else:
        ray.init(
            address="local",  # a new instance, never one that `ray start` left running
            num_cpus=os.cpu_count() or 1,
            include_dashboard=False,
            object_store_memory=LOCAL_OBJECT_STORE_BYTES,
            logging_level=logging.WARNING,
            log_to_driver=False,
            # Ray starts its workers at nice 15: on a machine busy with anything else the
            # actors (and so every request) starve (an actor took 4 minutes to import the
            # SDK beside 8 CPU-bound processes). They do little CPU work; let them compete.
            _system_config={"worker_niceness": WORKER_NICENESS},
        )
    return ray


def actor_count(settings: Settings, ray: Any) -> int:
    """`ray_actors`, else one actor per CPU of the cluster (of the local instance)."""
    if settings.ray_actors is not None:
        return settings.ray_actors
    return max(1, math.floor(ray.cluster_resources().get("CPU", 1)))


class RayStart:
    """Ray and the actor pool, started in a background thread while the driver reads its
    inputs and its cache; `join` waits for them, `shutdown` stops what was started.

    The thread lives until `shutdown`: the processes `ray.init` starts die with the thread
    that started them (Ray sets PR_SET_PDEATHSIG on them, which Linux ties to the thread).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.started = time.perf_counter()
        self.ray: Any = None
        self.owned = False  # this start called ray.init (else the caller's instance is used)
        self.actors: list[Any] = []
        self.members: list[dict[str, Any]] = []  # each actor's `ready()`
        self.share: Share | None = None
        self.connected_after_s = 0.0  # ray.init done
        self.up_after_s = 0.0  # the actors too
        self.error: BaseException | None = None
        self._up = threading.Event()
        self._release = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="ray-start", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._start()
        except BaseException as exc:  # raised in the driver's thread by join()
            self.error = exc
        finally:
            self.up_after_s = time.perf_counter() - self.started
            self._up.set()
        self._release.wait()

    def _start(self) -> None:
        import ray

        self.owned = connect(self.settings) is not None
        self.ray = ray
        self.connected_after_s = time.perf_counter() - self.started
        n = actor_count(self.settings, ray)
        self.share = Share.of(self.settings, n)
        cpus = ray.cluster_resources().get("CPU", 1)
        # One CPU each while the cluster has one per actor, so they spread over the nodes;
        # more actors than CPUs share them (none waits forever for a free CPU).
        remote = ray.remote(
            num_cpus=min(1.0, cpus / n), scheduling_strategy="SPREAD", max_restarts=0
        )(StageActor)
        self.actors = [remote.remote(self.settings, self.share) for _ in range(n)]
        try:
            self.members = ray.get([actor.ready.remote() for actor in self.actors])
        except ray.exceptions.RayError as exc:
            raise ConfigError(f"the Ray actors did not start: {exc}") from None

    def join(self) -> RayStart:
        """Wait until Ray and the actors are up (raises what stopped them)."""
        while not self._up.wait(POLL_S):  # Ctrl-C lands between the waits
            pass
        if self.error is not None:
            raise self.error
        return self

    def shutdown(self) -> None:
        """Stop the actors, and Ray when this start began it (waits for a start under way)."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._up.wait()
            ray = self.ray
            if ray is not None and ray.is_initialized():
                if self.owned:
                    ray.shutdown()
                else:
                    for actor in self.actors:
                        with contextlib.suppress(Exception):
                            ray.kill(actor)
        finally:
            self._release.set()
            self._thread.join(5)


_STARTED: dict[str, RayStart] = {}  # the start under way in this process, if any


def start_ray(settings: Settings) -> RayStart:
    """Start Ray and the actors for a run of `settings` in the background (once per run: a
    start for other settings is stopped first)."""
    started = _STARTED.get("run")
    if started is not None and started.settings == settings and not started._stopped:
        return started
    if started is not None:
        started.shutdown()
    started = _STARTED["run"] = RayStart(settings)
    return started


def take_start(settings: Settings) -> RayStart | None:
    """The run's start, when one was begun (by `start_ray`) for these settings."""
    started = _STARTED.pop("run", None)
    if started is not None and started.settings != settings:
        started.shutdown()
        return None
    return started


def may_hold_answers(settings: Settings) -> bool:
    """Whether the cache could serve some of this run (a stage's cache file is not empty and
    `--force` is off): then Ray starts only once the cache pass finds a pair to ask."""
    if settings.force:
        return False
    files = (settings.cache_dir / f"{name}.jsonl" for name in settings.stages)
    return any(f.is_file() and f.stat().st_size > 0 for f in files)


def start_early(settings: Settings) -> None:
    """Start Ray now, while the inputs are read, unless the cache may make it unneeded."""
    if not may_hold_answers(settings):
        start_ray(settings)


def check_prompts(members: list[dict[str, Any]], stages: dict[str, Stage]) -> None:
    """Refuse actors that read other prompts than the driver: their answers would be cached
    under the wrong keys."""
    for member in members:
        differ = [n for n, s in stages.items() if member["prompts"].get(n) != s.prompt_hash]
        if differ:
            raise ConfigError(
                f"the Ray worker in process {member['pid']} reads other prompts for "
                f"{', '.join(differ)} than the driver: install the same version everywhere "
                "and put a custom prompts_dir on shared storage at the same path"
            )


def batches_in_flight(share: Share, stages: int) -> int:
    """Batches each actor is given at once: enough requests to fill its share, plus one."""
    return max(2, math.ceil(share.concurrency / (BATCH_SIZE * max(1, stages))) + 1)


def dispatch(ray: Any, actors: list[Any], batches: Iterable[Any], per_actor: int) -> Iterator[Any]:
    """Each batch's answers as they finish; an actor that returns one gets the next batch.
    Closing the iterator cancels the batches still running."""
    todo = iter(batches)
    running: dict[Any, Any] = {}  # object ref -> the actor asking it

    def give(actor: Any) -> None:
        batch = next(todo, None)
        if batch is not None:
            running[actor.answer.remote(batch)] = actor

    for _ in range(per_actor):
        for actor in actors:
            give(actor)
    try:
        while running:
            done, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
            for ref in done:
                give(running.pop(ref))
                yield ray.get(ref)
    finally:
        for ref in running:
            with contextlib.suppress(Exception):
                ray.cancel(ref)


def run_with_ray(
    settings: Settings,
    runner: StageRunner,
    backend: RayBackend,
    abstracts: Iterable[Abstract],
    progress: Progress,
    *,
    settle: Callable[[], None],
) -> None:
    """Ask every uncached stage on Ray while `settle` (the local pass) runs and takes each
    answer as it arrives; ok answers are cached on arrival. FatalBackendError or ConfigError
    when a worker hit one; RunInterrupted on Ctrl-C or SIGTERM (what was cached is kept)."""
    # Started when the engine was chosen (a cold cache), else at the first uncached pair.
    early = take_start(settings)
    ray_start = early
    try:
        start = (lambda: None) if early else (lambda: start_ray(settings))
        pending = pending_pairs(runner, abstracts, on_first=start)
        ray_start = early or take_start(settings)
        if not pending.pairs:  # a warm run: nothing for Ray to ask
            settle()
            return
        assert ray_start is not None
        _ask_on_ray(settings, runner, backend, pending, progress, ray_start, settle)
        log.info("ray: done after %.1fs", time.perf_counter() - ray_start.started)
    except KeyboardInterrupt:
        raise RunInterrupted("stopped by SIGINT") from None
    finally:
        if ray_start is not None:
            ray_start.shutdown()


def _ask_on_ray(
    settings: Settings,
    runner: StageRunner,
    backend: RayBackend,
    pending: Pending,
    progress: Progress,
    ray_start: RayStart,
    settle: Callable[[], None],
) -> None:
    # The endpoint is checked from the driver while Ray starts: a bad key or URL stops the
    # run before any stage request, without waiting for Ray start-up and then the check.
    failed: list[BaseException] = []
    check = threading.Thread(target=_preflight, args=(backend, settings, failed), daemon=True)
    check.start()
    with signals_interrupt():
        waited = time.perf_counter()
        ray_start.join()
        log.info(
            "ray: %d actors up %.1fs after the start (Ray connected after %.1fs; %.1fs waited "
            "for them)",
            len(ray_start.actors),
            ray_start.up_after_s,
            ray_start.connected_after_s,
            time.perf_counter() - waited,
        )
        check.join()
        if failed:
            raise failed[0]
        check_prompts(ray_start.members, runner.stages)
        assert ray_start.share is not None
        per_actor = batches_in_flight(ray_start.share, len(runner.stages))
        rows = dispatch(ray_start.ray, ray_start.actors, pending.batches(), per_actor)
        log.info(
            "ray: %d stages of %d abstracts on %d actors",
            pending.pairs,
            len(pending.abstracts),
            len(ray_start.actors),
        )
        feed = RayFeed(rows, pending, runner, backend, progress, ray_start.started)
        runner.remote = feed
        cpu = time.process_time()  # the driver's, all threads: every answer passes through it
        try:
            settle()
        finally:
            runner.remote = None
            feed.stop()  # before Ray shuts down under the reading thread
        by_node = backend.answers_by_node()
        for node, count in sorted(by_node.items()):
            log.info("ray: node %s answered %d pairs", node, count)
        answers = sum(by_node.values())
        cpu = time.process_time() - cpu
        if answers:
            log.info(
                "ray: driver CPU %.1fs while asking, %.2f ms per answer (%d answers)",
                cpu,
                1000 * cpu / answers,
                answers,
            )
        if sent := sum(backend.requests_sent.values()):
            actor_cpu = backend.actor_cpu_s()
            log.info(
                "ray: actors CPU %.1fs, %.2f ms per request (%d requests)",
                actor_cpu,
                1000 * actor_cpu / sent,
                sent,
            )


_END = object()  # the feed's last item: Ray has no more rows


class _StopReading(BaseException):
    """Raised in the feed's reading thread to end a wait for a row (RayFeed.stop)."""


class RayFeed:
    """The Ray phase's answers, taken as they arrive while the local pass runs.

    A daemon thread reads the batches' answers (`dispatch`, a blocking iterator) and hands
    each to the event loop; the loop takes it (`_take`: the cache written, the answers kept in
    `runner.answered`) and wakes the stages waiting for those keys. All state changes happen
    on the loop's thread. A fatal answer fails every waiting stage, so the pass stops as a
    local run does; a key Ray never answered is released and the pass asks it itself.
    """

    def __init__(
        self,
        rows: Iterable[dict[str, Any]],  # each batch's answers (`StageActor.answer`)
        pending: Pending,
        runner: StageRunner,
        backend: RayBackend,
        progress: Progress,
        started: float,
    ) -> None:
        self.rows = rows
        self.pending = pending
        self.runner = runner
        self.backend = backend
        self.progress = progress
        self.started = started
        self.keys = {key for keys in pending.keys for key in keys.values()}
        self.error: BaseException | None = None
        self._waiters: dict[str, asyncio.Future[None]] = {}
        self._queue: asyncio.Queue[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._taken = 0  # rows (batches of answers) taken
        self._stopping = threading.Event()
        self._reader: threading.Thread | None = None

    def __contains__(self, key: str) -> bool:
        return key in self.keys

    def start(self) -> None:
        """Start reading rows (the thread) and taking them (a task of the running loop)."""
        loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._reader = threading.Thread(
            target=self._read, args=(loop, self._queue), name="ray-rows", daemon=True
        )
        self._reader.start()
        self._task = loop.create_task(self._take_all())

    def stop(self, timeout_s: float = 5.0) -> None:
        """End the reading thread, and with it the batches still running, before Ray shuts
        down.

        Ray ends the whole process (exit 1) when any thread touches it after shutdown, and
        the reading thread does until the iteration ends, which happens in the thread that
        iterates. A thread still waiting for a row after a moment is interrupted there
        (`dispatch` waits in slices of POLL_S, so it sees the exception within one) and
        closes the iteration on its way out; `timeout_s` bounds the wait.
        """
        self._stopping.set()
        reader = self._reader
        if reader is None:
            return
        reader.join(0.2)
        if reader.is_alive() and reader.ident is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(reader.ident), ctypes.py_object(_StopReading)
            )
            reader.join(timeout_s)
        if reader.is_alive():
            log.warning("ray: the row reader did not stop within %gs", timeout_s)

    def _read(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        with contextlib.suppress(_StopReading):  # however late stop()'s exception lands
            self._read_rows(loop, queue)

    def _read_rows(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        item: Any = _END
        try:
            for row in self.rows:
                if self._stopping.is_set():
                    break
                loop.call_soon_threadsafe(queue.put_nowait, row)
        except BaseException as exc:  # raised in the loop's thread by _take_all (or stop())
            item = exc
        finally:
            close = getattr(self.rows, "close", None)
            if close is not None:  # cancels what still runs from this thread, Ray still up
                with contextlib.suppress(BaseException):
                    close()
        if self._stopping.is_set():
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: the pass has ended already
            loop.call_soon_threadsafe(queue.put_nowait, item)

    async def _take_all(self) -> None:
        assert self._queue is not None
        try:
            while (item := await self._queue.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                if not self._taken:
                    log.info("ray: first answers after %.1fs", self._elapsed())
                answers = self.runner.answered
                keys = _take(item, self.pending, self.runner, self.backend, self.progress, answers)
                self._taken += 1
                self._release(keys)
            log.info("ray: all answers after %.1fs", self._elapsed())
            self._release(list(self.keys))  # never answered: the pass asks them itself
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # every stage still waiting, or still to wait, fails
            self.error = exc
            for future in self._waiters.values():
                if not future.done():
                    future.set_exception(exc)
                    future.exception()  # a stage cancelled before it awaits it: no log noise
            self._waiters.clear()

    def _elapsed(self) -> float:
        return time.perf_counter() - self.started

    def _release(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.keys.discard(key)
            future = self._waiters.pop(key, None)
            if future is not None and not future.done():
                future.set_result(None)

    async def wait(self, key: str) -> None:
        """Until the answer of `key` has been taken (raises the Ray phase's error)."""
        if self.error is not None:
            raise self.error
        if key not in self.keys:
            return
        future = self._waiters.get(key)
        if future is None:
            future = self._waiters[key] = asyncio.get_running_loop().create_future()
        await future

    async def close(self) -> None:
        """Stop taking rows (the pass has ended, or stops)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _preflight(backend: RayBackend, settings: Settings, failed: list[BaseException]) -> None:
    try:
        backend.preflight(settings)
    except BaseException as exc:  # handed to the driver's thread, raised there
        failed.append(exc)


def _take(
    payload: dict[str, Any],
    pending: Pending,
    runner: StageRunner,
    backend: RayBackend,
    progress: Progress,
    answered: dict[str, Answered],
) -> list[str]:
    """One batch's answers: ok ones cached, all kept for the pass (their keys returned); a
    fatal one stops."""
    backend.tally(payload["actor"], payload["counts"])
    backend.nodes[payload["counts"].get("node", "?")] += len(payload["pairs"])
    fatal = None
    taken = []
    for pair in payload["pairs"]:
        if "fatal" in pair:
            fatal = fatal or pair["fatal"]
            continue
        name = pair["stage"]
        key = pending.keys[pair["i"]][name]
        taken.append(key)
        answer = answer_from_json(pair["answer"])
        report_progress(progress, name, answer)
        if answer.output is not None:
            stage = runner.stages[name]
            provenance = runner.provenance_of(stage, key, answer, pair["ms"])
            runner.store(stage, key, answer, provenance)  # the one cache-record format
            # The pass reads the output back from the cache: only the counts wait in memory.
            slim = dataclasses.replace(answer, output=None, raw=None, dropped=[])
            answered[key] = Answered(slim, pair["ms"], in_cache=True)
        else:
            answered[key] = Answered(answer, pair["ms"])
    if fatal is not None:
        raise FatalBackendError(fatal, attempts=0)
    return taken
