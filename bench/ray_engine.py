"""Requests/s of `digest run --engine ray` vs the local engine, as whole commands.

    python -m bench.ray_engine                      # 3000 abstracts x 3 stages, 3 pairs
    python -m bench.ray_engine -n 5000 --pairs 2

Each pair runs the real `digest run` twice on the same input against the same
``bench.openai_server`` (its own process, 200 ms latency by default), once with the local
engine and once with ``--engine ray``, each with a fresh cache and ``--concurrency 256``
(the order alternates pair by pair). Reported per engine: requests/s end to end (the
server's requests over the whole command's wall: start-up, ingest, Ray start-up, the
request phase and the run folder), requests/s of the request phase (first to last
arrival at the server + latency: no start-up, no writing), the pair's ratios, and whether
the two summaries.jsonl are byte-identical once the timing field (``latency_ms``) is
dropped. Before each run the script waits for the machine to be quiet; a pair during
which other sessions used more than ``--max-foreign`` cores is measured again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import PYTHON, REPO_ROOT, Server, machine_note, md_table, write_jsonl
from bench.ray_probe import _machine_jiffies, phase_rate, wait_quiet

MODEL = "bench-model"


@dataclass
class Run:
    engine: str
    requests: int
    wall: float
    phase_rate: float
    to_first_request_s: float
    foreign_cores: float
    exit_code: int

    @property
    def rate(self) -> float:
        return self.requests / self.wall


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _proc_cpu(pid: int) -> float:
    """CPU seconds of a live process and of its live descendants."""
    import psutil

    total = 0.0
    root = psutil.Process(pid)
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system
    return total


RAY_PIDS: list[int] = []  # the running instance's `ray start`, when there is one


def _ours_cpu(server: Server) -> float:
    """CPU of the runs (waited-for children), the server and the running Ray instance."""
    assert server.proc is not None
    return _children_cpu() + sum(_proc_cpu(pid) for pid in [server.proc.pid, *RAY_PIDS])


# The instance this script starts checks a token (Ray's default since 2.59): a fresh one,
# given to `ray start` and to the runs that connect, and stored nowhere.
RAY_AUTH = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
ENGINES = {  # label -> (--engine, connect to the running Ray instance)
    "local": ("local", False),
    "ray": ("ray", False),
    "ray-running": ("ray", True),
}


def run_once(
    engine: str,
    server: Server,
    inputs: Path,
    work: Path,
    args: argparse.Namespace,
    ray_address: str | None = None,
) -> tuple[Run, Path]:
    """One `digest run` with a fresh cache; its figures and its summaries file."""
    out, cache = work / f"run-{engine}", work / f"cache-{engine}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    flag, running = ENGINES[engine]
    cmd = [PYTHON, "-m", "pipeline", "run", str(inputs), "--base-url", server.base_url]
    cmd += ["--model", MODEL, "--concurrency", str(args.in_flight), "--no-progress"]
    cmd += ["--engine", flag, "--out", str(out), "--cache-dir", str(cache)]
    env = {**os.environ, "OPENAI_API_KEY": "bench-key"}
    env.pop("RAY_ADDRESS", None)
    if running:
        assert ray_address is not None
        env.update(RAY_ADDRESS=ray_address, **RAY_AUTH)
    assert server.proc is not None
    before = server.stats()["requests"]
    busy0, _ = _machine_jiffies()
    ours0 = _ours_cpu(server)
    since, started = time.monotonic(), time.perf_counter()
    done, tree_cpu = _run_watched(cmd, env)
    wall = time.perf_counter() - started
    busy1, _ = _machine_jiffies()
    # The run's Ray workers and daemons are its own load too, but they are not waited-for
    # children (rusage misses them): their CPU comes from watching the process tree.
    ours = _ours_cpu(server) - ours0 + tree_cpu
    stats = server.stats()
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    rate, timings = phase_rate(stats, since, args.latency)
    machine = (busy1 - busy0) / os.sysconf("SC_CLK_TCK")
    run = Run(
        engine=engine,
        requests=stats["requests"] - before,
        wall=wall,
        phase_rate=rate,
        to_first_request_s=timings.get("to_first_request_s", float("nan")),
        foreign_cores=max(0.0, machine - ours) / wall,
        exit_code=done.returncode,
    )
    return run, out / "summaries.jsonl"


def _run_watched(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    """Run `cmd` to the end; also the CPU seconds its descendants used (sampled every 0.2 s,
    each process's last reading), the command itself excluded (rusage counts it)."""
    import psutil

    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen: dict[tuple[int, float], float] = {}  # (pid, create time) -> CPU seconds
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.communicate()[1]), daemon=True)
    reader.start()
    root = psutil.Process(proc.pid)
    while reader.is_alive():
        with contextlib.suppress(psutil.Error):
            for child in root.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    t = child.cpu_times()
                    seen[child.pid, child.create_time()] = t.user + t.system
        reader.join(0.2)
    done = subprocess.CompletedProcess(cmd, proc.returncode, "", out[0] if out else "")
    return done, sum(seen.values())


def without_timing(path: Path) -> list[str]:
    """summaries.jsonl lines with every stage's `latency_ms` removed, as canonical text."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for stage in record["stages"].values():
            stage["provenance"].pop("latency_ms", None)
        lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ray_engine", description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("-n", "--abstracts", type=int, default=3000)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--in-flight", type=int, default=256)
    p.add_argument("--quiet-below", type=float, default=0.5, help="wait until the machine is below this many busy cores before a run")  # fmt: skip
    p.add_argument("--quiet-wait", type=float, default=90.0)
    p.add_argument("--max-foreign", type=float, default=0.15, help="measure a pair again when other load exceeded this many cores")  # fmt: skip
    p.add_argument("--retries", type=int, default=2)
    p.add_argument("--json", type=Path, help="write every run's figures here")
    p.add_argument("--engines", nargs="+", default=["local", "ray", "ray-running"], choices=list(ENGINES), help="ray-running: RAY_ADDRESS of a Ray instance this script starts once (`ray start --head`), so ray.init is not in the run")  # fmt: skip
    args = p.parse_args(argv)
    if args.engines[0] != "local":
        raise SystemExit("--engines: the first must be local (the ratios are against it)")

    print(machine_note())
    print(
        f"work: {args.abstracts} abstracts x 3 stages = {3 * args.abstracts} requests per run; "
        f"server latency {args.latency * 1000:.0f} ms in its own process; --concurrency "
        f"{args.in_flight}; fresh cache per run\n",
        flush=True,
    )
    pairs: list[tuple[dict[str, Run], bool]] = []
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ray-engine-")))
        server = stack.enter_context(Server(latency=args.latency))
        address = stack.enter_context(running_ray(work)) if "ray-running" in args.engines else None
        inputs = write_jsonl(work / "abstracts.jsonl", args.abstracts)
        # Every sample's answers computed once by the server, and the imports warm, unmeasured.
        run_once("local", server, write_jsonl(work / "warm.jsonl", 57), work, args)
        for k in range(args.pairs):
            order = args.engines if k % 2 == 0 else args.engines[::-1]
            for attempt in range(1 + args.retries):
                got: dict[str, Run] = {}
                files: dict[str, Path] = {}
                for engine in order:
                    busy = wait_quiet(args.quiet_below, args.quiet_wait)
                    got[engine], files[engine] = run_once(
                        engine, server, inputs, work, args, address
                    )
                    r = got[engine]
                    print(
                        f"  {engine:11} {r.rate:6.1f} req/s e2e, {r.phase_rate:6.1f} request "
                        f"phase, wall {r.wall:5.1f}s, first request {r.to_first_request_s:4.1f}s, "
                        f"{r.requests} requests, exit {r.exit_code}, other load "
                        f"{r.foreign_cores:.2f} cores (machine at {busy:.2f} before)",
                        flush=True,
                    )
                base = without_timing(files["local"])
                same = all(without_timing(f) == base for f in files.values())
                foreign = max(r.foreign_cores for r in got.values())
                if foreign <= args.max_foreign or attempt == args.retries:
                    break
                print(f"    (other load {foreign:.2f} cores: set measured again)", flush=True)
            local = got["local"]
            ratios = ", ".join(
                f"{e} {got[e].rate / local.rate:.2f}x e2e / "
                f"{got[e].phase_rate / local.phase_rate:.2f}x phase"
                for e in args.engines[1:]
            )
            print(f"set {k + 1}: {ratios}; summaries identical but timing: {same}", flush=True)
            pairs.append((got, same))

    if args.json:
        args.json.write_text(
            json.dumps([[{e: vars(r) for e, r in got.items()}, same] for got, same in pairs])
        )
    clean = [t for t in pairs if max(r.foreign_cores for r in t[0].values()) <= args.max_foreign]
    used = clean or pairs

    def med(values) -> float:
        return statistics.median(list(values))

    rows = [
        (
            engine,
            f"{len(clean)}/{len(pairs)}",
            f"{med(t[0][engine].rate for t in used):.1f}",
            f"{med(t[0][engine].rate / t[0]['local'].rate for t in used):.2f}x",
            f"{med(t[0][engine].phase_rate for t in used):.1f}",
            f"{med(t[0][engine].phase_rate / t[0]['local'].phase_rate for t in used):.2f}x",
            f"{med(t[0][engine].wall for t in used):.1f}",
            f"{med(t[0][engine].to_first_request_s for t in used):.1f}",
        )
        for engine in args.engines
    ]
    print(
        f"\n### digest run, {args.abstracts} abstracts x 3 stages, {args.latency * 1000:.0f} ms "
        f"latency, --concurrency {args.in_flight}\n"
    )
    print(
        md_table(
            [
                "engine",
                "clean sets",
                "req/s e2e",
                "vs local e2e",
                "req/s request phase",
                "vs local (phase)",
                "wall s",
                "first request s",
            ],
            rows,
        )
    )
    identical = all(t[1] for t in pairs)
    print(
        f"\nMedians over sets{'' if clean else ' (no clean set: contended figures)'}. e2e = "
        "requests / wall of the whole command; request phase = requests / (first to last "
        "arrival at the server + latency). ray = `--engine ray` starting its own local Ray "
        "instance; ray-running = connecting to one started before (RAY_ADDRESS). "
        "summaries.jsonl byte-identical to the local engine's once latency_ms is dropped, "
        f"in every set: {identical}"
    )
    return 0 if identical else 1


@contextlib.contextmanager
def running_ray(work: Path):
    """`ray start --head --block` with this machine's cores, stopped (by its pid) at the end."""
    with socket.socket() as probe:  # a free port on loopback, so the address is known
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cmd = [PYTHON, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--port={port}"]
    cmd += ["--node-ip-address=127.0.0.1"]  # loopback only
    cmd += [f"--num-cpus={os.cpu_count()}", "--include-dashboard=false", "--disable-usage-stats"]
    cmd += [f"--object-store-memory={512 * 1024 * 1024}"]
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        **RAY_AUTH,
    }
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None
    address, lines = None, []
    for line in proc.stdout:
        lines.append(line)
        if "Ray runtime started" in line:
            address = f"127.0.0.1:{port}"
        if "--block" in line and address:
            break
    if address is None:
        proc.terminate()
        raise RuntimeError("ray start did not say its address:\n" + "".join(lines[-20:]))
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep its pipe drained
    print(f"(a Ray instance runs at {address} for the ray-running engine)", flush=True)
    RAY_PIDS.append(proc.pid)
    try:
        yield address
    finally:
        RAY_PIDS.remove(proc.pid)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    raise SystemExit(main())
