"""Time to the first request, and the driver's CPU per answer, of `digest run --engine ray`.

    python -m bench.ray_startup                     # 600 abstracts, 3 pairs
    python -m bench.ray_startup -n 3000 --pairs 2

Each pair runs the real `digest -v run` twice on the same input against the same
``bench.openai_server`` (its own process, 200 ms latency), once with the local engine and
once with ``--engine ray`` starting its own local Ray instance (no RAY_ADDRESS), each with a
fresh cache and ``--concurrency 256``; the order alternates pair by pair, and before each
run the script waits for the machine to be quiet. Reported per run: seconds from launching
the command to the first chat request at the server; for Ray, when its actors were up
(the run's own log line) and the driver's CPU per answer while Ray asked (its log line:
the `digest run` process, every thread, the cache writes and the local pass included); for
both, the command's whole-process CPU per answer (psutil, its own process only, sampled
every 0.1 s) and the wall. The machine is shared: figures are noisy, compare within a pair.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.common import PYTHON, REPO_ROOT, Server, machine_note, md_table, write_jsonl
from bench.ray_probe import machine_busy_cores, wait_quiet

MODEL = "bench-model"
LATENCY_S = 0.2
UP_LINE = re.compile(
    r"ray: (\d+) actors up ([\d.]+)s after the start \(Ray connected after ([\d.]+)s"
)
CPU_LINE = re.compile(r"ray: driver CPU ([\d.]+)s while asking, ([\d.]+) ms per answer")
ACTOR_LINE = re.compile(r"ray: actors CPU ([\d.]+)s, ([\d.]+) ms per request")


@dataclass
class Run:
    engine: str
    to_first_request_s: float
    actors_up_s: float | None
    connected_s: float | None  # ray.init done, after the start
    driver_ms_per_answer: float | None  # Ray phase, from the run's log
    actor_ms_per_request: float | None  # the actors' CPU, from the run's log
    phase_rate: float  # requests / (first to last arrival + latency)
    process_ms_per_answer: float  # the whole command's own CPU / requests
    wall_s: float
    requests: int
    busy_before: float
    exit_code: int


def run_once(engine: str, server: Server, inputs: Path, work: Path, in_flight: int) -> Run:
    """One `digest -v run` with a fresh cache, measured."""
    out, cache = work / f"run-{engine}", work / f"cache-{engine}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    cmd = [PYTHON, "-m", "pipeline", "-v", "run", str(inputs), "--base-url", server.base_url]
    cmd += ["--model", MODEL, "--concurrency", str(in_flight), "--no-progress"]
    cmd += ["--engine", engine, "--out", str(out), "--cache-dir", str(cache)]
    env = {**os.environ, "OPENAI_API_KEY": "bench-key"}
    env.pop("RAY_ADDRESS", None)
    busy = wait_quiet(0.5, 30)
    before = len(server.stats()["arrivals"])
    launched = time.monotonic()
    log_path = work / f"{engine}.log"  # a file: -v logs a line per request, a pipe would fill
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log, text=True
        )
    cpu = 0.0
    watched = psutil.Process(proc.pid)
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            t = watched.cpu_times()
            cpu = t.user + t.system
        time.sleep(0.1)
    wall = time.monotonic() - launched
    stderr = log_path.read_text(errors="replace")
    arrivals = server.stats()["arrivals"][before:]
    up, driver, actor = UP_LINE.search(stderr), CPU_LINE.search(stderr), ACTOR_LINE.search(stderr)
    phase = (max(arrivals) - min(arrivals) + LATENCY_S) if arrivals else float("nan")
    if proc.returncode:
        print(stderr[-2000:])
    return Run(
        engine=engine,
        to_first_request_s=min(arrivals) - launched if arrivals else float("nan"),
        actors_up_s=float(up[2]) if up else None,
        connected_s=float(up[3]) if up else None,
        driver_ms_per_answer=float(driver[2]) if driver else None,
        actor_ms_per_request=float(actor[2]) if actor else None,
        phase_rate=len(arrivals) / phase,
        process_ms_per_answer=1000 * cpu / max(1, len(arrivals)),
        wall_s=wall,
        requests=len(arrivals),
        busy_before=busy,
        exit_code=proc.returncode,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ray_startup", description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("-n", "--abstracts", type=int, default=600)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--in-flight", type=int, default=256)
    args = p.parse_args(argv)
    print(machine_note())
    print(f"machine busy before start: {machine_busy_cores():.2f} cores", flush=True)
    runs: list[tuple[Run, Run]] = []
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ray-startup-")))
        server = stack.enter_context(Server(latency=LATENCY_S))
        inputs = write_jsonl(work / "abstracts.jsonl", args.abstracts)
        # The server's answers computed and the imports warm, unmeasured.
        run_once("local", server, inputs, work, args.in_flight)
        for k in range(args.pairs):
            order = ["local", "ray"] if k % 2 == 0 else ["ray", "local"]
            got = {e: run_once(e, server, inputs, work, args.in_flight) for e in order}
            for r in got.values():
                print(
                    f"  {r.engine:5} first request {r.to_first_request_s:5.1f}s, Ray connected "
                    f"{r.connected_s}, actors up {r.actors_up_s}, driver {r.driver_ms_per_answer} ms/answer, actors "
                    f"{r.actor_ms_per_request} ms/request, {r.phase_rate:.0f} req/s asking, process "
                    f"{r.process_ms_per_answer:.2f} ms/answer, wall {r.wall_s:5.1f}s, "
                    f"{r.requests} requests, exit {r.exit_code}, machine at "
                    f"{r.busy_before:.2f} cores before",
                    flush=True,
                )
            runs.append((got["local"], got["ray"]))

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.2f}"

    rows = []
    for i, engine in enumerate(("local", "ray")):
        mine = [pair[i] for pair in runs]
        ray_only = [r for r in mine if r.driver_ms_per_answer is not None]
        rows.append(
            (
                engine,
                med([r.to_first_request_s for r in mine]),
                f"{min(r.to_first_request_s for r in mine):.2f}-"
                f"{max(r.to_first_request_s for r in mine):.2f}",
                med([r.actors_up_s for r in ray_only if r.actors_up_s is not None] or [0.0])
                if ray_only
                else "-",
                med([r.driver_ms_per_answer for r in ray_only if r.driver_ms_per_answer])  # type: ignore[misc]
                if ray_only
                else "-",
                med([r.actor_ms_per_request for r in ray_only if r.actor_ms_per_request])  # type: ignore[misc]
                if ray_only
                else "-",
                med([r.process_ms_per_answer for r in mine]),
                med([r.phase_rate for r in mine]),
                med([r.wall_s for r in mine]),
            )
        )
    print(
        f"\n### digest run, {args.abstracts} abstracts x 3 stages, 200 ms latency, "
        f"--concurrency {args.in_flight}, {len(runs)} pairs (medians)\n"
    )
    headers = ["engine", "first request s", "range", "actors up s", "driver ms/answer (Ray phase)", "actor ms/request", "process ms/answer", "req/s while asking", "wall s"]  # fmt: skip
    print(md_table(headers, rows))
    return 0 if all(r.exit_code == 0 for pair in runs for r in pair) else 1


if __name__ == "__main__":
    raise SystemExit(main())
