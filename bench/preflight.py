"""How fast a run against a dead, wrong or unauthorized endpoint ends, and what it says.

    python -m bench.preflight          # ~30 s
    python -m bench.preflight -n 1000

Each case is the whole `digest run --provider openai` process over N synthetic abstracts
(wall clock, so interpreter start-up and imports are in it), against the bench server in a
mode that breaks it, or against a port where nothing listens. The table gives the exit
code, the stage requests the server saw (0: the preflight stopped the run before any), and
the one error line.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time

from bench.common import (
    PYTHON,
    REPO_ROOT,
    bench_dir,
    machine_note,
    md_table,
    run_child,
    write_jsonl,
)

KEY = "sk-bench-preflight-000000000000000"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server(*args: str):
    """The bench server in its own process, with these flags (the base URL, the process)."""
    import subprocess

    proc = subprocess.Popen(
        [PYTHON, "-m", "bench.openai_server", "--answer", "bench.common:bench_answer", *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc.stdout.readline().strip(), proc


def _stage_requests(base_url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(base_url + "/_bench/stats", timeout=10) as resp:
        by_stage = json.loads(resp.read())["by_stage"]
    return sum(n for stage, n in by_stage.items() if stage != "chat")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.preflight")
    parser.add_argument("-n", "--abstracts", type=int, default=20)
    args = parser.parse_args(argv)
    work = bench_dir("preflight")
    inputs = write_jsonl(work / f"abstracts-{args.abstracts}.jsonl", args.abstracts)
    print(machine_note())
    cases = [
        ("nothing listens", None, f"http://127.0.0.1:{_closed_port()}/v1", KEY),
        ("no key, api.openai.com", None, None, None),
        ("wrong key (401)", ["--api-key", "sk-the-right-one-0000"], "", KEY),
        ("wrong path (404)", [], "/api", KEY),
        ("a web page (HTML)", ["--models", "html", "--fault", "html=1"], "", KEY),
        ("501 on every request", ["--fault", "501=1"], "", KEY),
        ("healthy (for comparison)", [], "", KEY),
    ]
    rows = []
    for name, server_args, url, key in cases:
        proc = None
        if server_args is not None:
            base, proc = _server(*server_args)
            url = base.removesuffix("/v1") + url if url else base
        out = work / "run"
        cmd = [PYTHON, "-c", "from pipeline.cli import main; main()", "run", str(inputs),
               "--provider", "openai", "--model", "bench-model", "--out", str(out),
               "--cache-dir", str(work / f"cache-{time.time_ns()}"), "--no-progress"]  # fmt: skip
        if url:
            cmd += ["--base-url", url]
        env_key = {"OPENAI_API_KEY": key} if key else {}
        saved = {k: os.environ.pop(k, None) for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
        os.environ.update(env_key)
        try:
            result = run_child(cmd)
            sent = _stage_requests(base) if proc is not None else 0
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)
        error = next((x for x in result.stderr.splitlines() if x.startswith("error:")), "")
        rows.append((name, result.returncode, f"{result.wall:.2f}", sent, error[:110]))
    print(f"\n### Runs of {args.abstracts} abstracts against broken endpoints\n")
    print(md_table(["endpoint", "exit", "wall s", "stage requests", "message"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
