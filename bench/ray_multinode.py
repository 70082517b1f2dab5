"""`digest run --engine ray` on a two-node Ray cluster, against the local engine's summaries.

    unshare -n -p -f -m --mount-proc sh -c 'ip link set lo up && python -m bench.ray_multinode'
    python -m bench.ray_multinode -n 200 --json result.json     # (inside such a namespace)

Run it inside a loopback-only network namespace (the first line, as root; without root,
`unshare -r -n -p -f -m --mount-proc ...` where user namespaces are allowed): `ray start`
listens on every interface, and in the namespace there is only 127.0.0.1. It refuses to run
outside one (a network interface other than `lo` present) unless given `--anywhere`.

What it does: a fresh token; `ray start --head --num-cpus 1` and `ray start --address ...
--num-cpus 1` as two nodes (two raylets, each its own process group); the local
OpenAI-compatible test server on 127.0.0.1 (offline answers, in this process); then the real
`digest run` on N synthetic abstracts, once with the local engine and once with `--engine
ray` connected to the cluster (RAY_ADDRESS + the token). Printed (JSON): the pairs each Ray
node answered (from the run's `-v` log), whether summaries.jsonl (without `latency_ms`) and
summaries.csv equal the local engine's, the server's request counts, the time to the first
request, and the processes left once both nodes were stopped (they must be none).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from bench.common import PYTHON, REPO_ROOT, write_jsonl
from pipeline.engine.ray_engine import WORKER_NICENESS
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

MODEL = "bench-model"
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
NODE_LINE = re.compile(r"ray: node (\w+) answered (\d+) pairs")
CPU_LINE = re.compile(r"ray: driver CPU ([\d.]+)s while asking, ([\d.]+) ms per answer")


def loopback_only() -> bool:
    """Whether this process's network namespace has no interface but `lo`."""
    return {name for _, name in socket.if_nameindex()} <= {"lo"}


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Node:
    """`ray start --block` in its own process group; `stop` ends the group."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        cmd = [PYTHON, "-m", "ray.scripts.scripts", "start", "--block", *args]
        cmd += ["--num-cpus=1", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
        cmd += [f"--object-store-memory={150 * 1024 * 1024}"]
        self.log = log
        with log.open("w") as out:
            # workers at normal priority, as the engine's local instance (docs/scaling.md)
            self.proc = subprocess.Popen(
                cmd,
                env={**env, "RAY_worker_niceness": str(WORKER_NICENESS)},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_started(self, timeout_s: float = 120) -> None:
        """Until `ray start` says the node runs (raises with its log when it ended instead)."""
        deadline = time.monotonic() + timeout_s
        while "Ray runtime started" not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ray start failed:\n" + self.log.read_text()[-3000:])
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM to `ray start --block` (it stops its node), then SIGKILL to what is left of
        its process group."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


@contextlib.contextmanager
def two_nodes(work: Path, token: str) -> Iterator[str]:
    """A head node and a second node, one CPU each, on 127.0.0.1; their address."""
    port = free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    env.pop("RAY_ADDRESS", None)
    env.pop(LOOPBACK_ONLY, None)  # "0" (the tests' setting) refuses a second node
    nodes: list[Node] = []
    try:
        head = Node(
            ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={work}/ray"],
            env,
            work / "head.log",
        )
        nodes.append(head)
        head.wait_started()
        address = f"127.0.0.1:{port}"
        second = Node([f"--address={address}"], env, work / "node2.log")
        nodes.append(second)
        second.wait_started()
        yield address
    finally:
        for node in reversed(nodes):
            node.stop()


def others() -> list[psutil.Process]:
    """Live processes other than this one and its ancestors (in a PID namespace: all that
    this script started and did not stop)."""
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    left = []
    for proc in psutil.process_iter(["pid", "status"]):
        if proc.pid not in mine and proc.info["status"] != psutil.STATUS_ZOMBIE:
            left.append(proc)
    return left


def untimed(run_dir: Path) -> list[dict]:
    """summaries.jsonl without its one timing field (latency_ms)."""
    records = []
    for line in (run_dir / "summaries.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for stage in record["stages"].values():
            stage["provenance"].pop("latency_ms")
        records.append(record)
    return records


def digest_run(engine: str, server: OpenAIServer, inputs: Path, work: Path, env: dict) -> dict:
    """One `digest -v run` with a fresh cache: exit code, stderr, seconds to its first
    request at the server, its run folder."""
    out, cache = work / f"run-{engine}", work / f"cache-{engine}"
    shutil.rmtree(cache, ignore_errors=True)
    cmd = [PYTHON, "-m", "pipeline", "-v", "run", str(inputs), "--base-url", server.base_url]
    cmd += ["--model", MODEL, "--no-progress", "--engine", engine, "--concurrency", "64"]
    cmd += ["--out", str(out), "--cache-dir", str(cache)]
    # The endpoint check is not what this measures: its 3 s bound is a hang guard here (on a
    # busy machine the local run's check missed 3 s and the run exited before asking).
    config = work / f"config-{engine}.yaml"
    work.mkdir(parents=True, exist_ok=True)
    config.write_text("preflight_timeout_s: 600\n", encoding="utf-8")
    cmd += ["--config", str(config)]
    before = len(server.stats()["arrivals"])
    since = time.monotonic()
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    arrivals = server.stats()["arrivals"][before:]
    return {
        "exit": done.returncode,
        "stderr": done.stderr,
        "requests": len(arrivals),
        "to_first_request_s": round(min(arrivals) - since, 2) if arrivals else None,
        "wall_s": round(time.monotonic() - since, 2),
        "run_dir": out,
    }


def scenario(n: int, work: Path) -> dict:
    """The two runs on a two-node cluster; the figures and checks as a dict."""
    inputs = write_jsonl(work / "abstracts.jsonl", n)
    token = secrets.token_hex(32)
    answer = functools.cache(offline_answer_fn())
    base_env = {**os.environ, "OPENAI_API_KEY": "sk-multinode-test-000000000000000000"}
    base_env.pop("RAY_ADDRESS", None)
    base_env.pop(LOOPBACK_ONLY, None)
    result: dict = {"abstracts": n}
    with OpenAIServer(ServerConfig(seed=5, latency=0.05), answer_fn=answer) as server:
        local = digest_run("local", server, inputs, work, base_env)
        with two_nodes(work, token) as address:
            ray_env = {**base_env, "RAY_ADDRESS": address, "RAY_AUTH_MODE": "token"}
            ray_env["RAY_AUTH_TOKEN"] = token
            ray_ = digest_run("ray", server, inputs, work, ray_env)
            # A driver without the cluster's token is refused with one message.
            no_token = {k: v for k, v in ray_env.items() if k != "RAY_AUTH_TOKEN"}
            refused = digest_run("ray", server, inputs, work / "no-token", no_token)
        time.sleep(1)  # processes that got SIGKILL leave the table
        left = others()
        result["left_after_stop"] = [" ".join(p.cmdline()[:3]) for p in left]
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
    for name, run in (("local", local), ("ray", ray_), ("no_token", refused)):
        result[name] = {k: v for k, v in run.items() if k not in {"stderr", "run_dir"}}
    result["no_token"]["message"] = refused["stderr"].strip().splitlines()[-1:]
    if ray_["exit"] or local["exit"]:
        result["stderr_tail"] = (ray_["stderr"] if ray_["exit"] else local["stderr"])[-3000:]
        return result
    result["pairs_by_node"] = {m[1]: int(m[2]) for m in NODE_LINE.finditer(ray_["stderr"])}
    if cpu := CPU_LINE.search(ray_["stderr"]):
        result["driver_cpu_ms_per_answer"] = float(cpu[2])
    result["summaries_equal"] = untimed(ray_["run_dir"]) == untimed(local["run_dir"])
    result["csv_equal"] = (ray_["run_dir"] / "summaries.csv").read_bytes() == (
        local["run_dir"] / "summaries.csv"
    ).read_bytes()
    result["records"] = len(untimed(ray_["run_dir"]))
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ray_multinode", description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("-n", "--abstracts", type=int, default=200)
    p.add_argument("--json", type=Path, help="also write the result here")
    p.add_argument("--anywhere", action="store_true", help="run outside a loopback-only namespace (Ray then listens on every interface)")  # fmt: skip
    args = p.parse_args(argv)
    if not args.anywhere and not loopback_only():
        print("not in a loopback-only network namespace: see the module docstring", file=sys.stderr)  # fmt: skip
        return 2
    work = Path(tempfile.mkdtemp(prefix="rmn", dir="/tmp"))  # short: Ray's socket paths
    try:
        result = scenario(args.abstracts, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.json:
        args.json.write_text(text)
    ok = result.get("summaries_equal") and len(result.get("pairs_by_node", {})) == 2
    return 0 if ok and not result["left_after_stop"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
