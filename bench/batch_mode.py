"""Batch API mode end to end against the local server: what `digest batch` costs the client.

    python -m bench.batch_mode                 # 2,000 abstracts (6,000 pairs), 5% schema faults
    python -m bench.batch_mode -n 500 --max-requests 400 --fault schema=0.1 --expire-after 300

Each step runs as its own `digest` process (wall and CPU seconds, peak RSS via wait4):
`batch submit`, `batch collect` once the batches have ended (the benchmark retrieves them
until they end: a `collect --wait` would sleep between polls), a second `batch collect`
(must send nothing), and for comparison `digest run` of the same inputs from an empty
cache against the same server. The server's chat-completions count per step shows what went
synchronously (re-asks of invalid lines, expired requests). The summaries of the batch
folder and of the synchronous run are compared with provenance left out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from bench.common import (
    Server,
    bench_dir,
    digest_cmd,
    finish_batches,
    machine_note,
    md_table,
    run_child,
    write_jsonl,
)

KEY = "sk-bench-batch-mode"


def _summaries(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "summaries.jsonl").read_text().splitlines()]
    for row in rows:
        for stage in row["stages"].values():
            stage.pop("provenance", None)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.batch_mode")
    parser.add_argument("-n", "--abstracts", type=int, default=2000)
    parser.add_argument("--max-requests", type=int, default=50_000, help="requests per file")
    parser.add_argument("--fault", action="append", default=None, metavar="NAME=RATE")
    parser.add_argument("--expire-after", type=int, help="the server answers N lines a batch")
    args = parser.parse_args(argv)
    faults = args.fault if args.fault is not None else ["schema=0.05"]

    work = bench_dir("batch_mode")
    for name in ("batch", "cache", "sync", "sync-cache"):
        shutil.rmtree(work / name, ignore_errors=True)
    inputs = write_jsonl(work / f"abstracts-{args.abstracts}.jsonl", args.abstracts)
    os.environ["OPENAI_API_KEY"] = KEY
    server = Server()
    for fault in faults:
        server.args += ["--fault", fault]
    if args.expire_after is not None:
        server.args += ["--batch-expire-after", str(args.expire_after)]
    rows = []
    with server:
        common = ["--base-url", server.base_url, "--model", "bench-model", "--no-progress"]
        steps = [
            ("batch submit", ["batch", "submit", inputs, "--out", work / "batch",
                              "--cache-dir", work / "cache", "--max-requests",
                              args.max_requests, *common]),
            ("batch collect", ["batch", "collect", work / "batch", "--no-progress"]),
            ("batch collect (again)", ["batch", "collect", work / "batch", "--no-progress"]),
            ("run (synchronous)", ["run", inputs, "--out", work / "sync",
                                   "--cache-dir", work / "sync-cache", *common]),
        ]  # fmt: skip
        for name, step in steps:
            if name == "batch collect":
                finish_batches(server.base_url, work / "batch", KEY)
            before = server.stats()
            result = run_child(digest_cmd(*step))
            after = server.stats()
            if result.returncode not in (0, 1):
                print(result.stdout, result.stderr)
                raise SystemExit(f"{name} exited {result.returncode}")
            chats = after["requests"] - before["requests"]
            http = after["http_requests"] - before["http_requests"] - 1  # not GET _bench/stats
            rows.append(
                (name, f"{result.wall:.1f}", f"{result.cpu:.1f}", f"{result.maxrss_mb:.0f}",
                 chats, http)
            )  # fmt: skip
            last = [line for line in result.stdout.splitlines() if line.strip()]
            print(f"$ digest {' '.join(map(str, step[:2]))} ...\n  " + "\n  ".join(last[:3]))
        batch = server.stats()["batch"]
    state = json.loads((work / "batch" / "batch.json").read_text())
    same = _summaries(work / "batch") == _summaries(work / "sync")
    print()
    print(
        f"{args.abstracts} abstracts, {state['pairs']} pairs in {len(state['parts'])} file(s) "
        f"({sum(p['bytes'] for p in state['parts']) / 1e6:.1f} MB); server faults {faults}; "
        f"batch lines answered {batch['lines_answered']}, expired {batch['lines_expired']}"
    )
    print(
        md_table(["step", "wall s", "CPU s", "peak RSS MB", "chat requests", "HTTP requests"], rows)
    )
    print(f"summaries equal to the synchronous run's (provenance left out): {same}")
    print(machine_note())
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
