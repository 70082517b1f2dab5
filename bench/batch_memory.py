"""Peak RSS of `digest batch collect` over a ~1 GB result file: flat means streamed.

    python -m bench.batch_memory                       # 2,000 abstracts, output ~1 GB
    python -m bench.batch_memory -n 500 --output-mb 100

A real `digest batch submit` of N synthetic abstracts goes to the local test server (its
own process, `python -m bench.openai_server`, with output files spooled to disk and sent in
1 MiB chunks). Every 200 line it writes carries a `logprobs` field padded so that the output
file reaches --output-mb: bytes that collect must download and read past, as it does any
field it does not use. The benchmark drives the batch to its end, then `digest batch
collect` runs as a child process; its peak RSS is its own ru_maxrss (wait4). The same
collect over unpadded lines (a few MB) runs first, for scale: the difference is what the
file's size costs.

Linux keeps a process's RSS high-water mark across fork and exec, so a child's ru_maxrss is
at least its parent's RSS when it was forked: this script stays small (the server runs in
its own process, the batches are driven with plain HTTP) and prints its own peak, the floor
of every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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

KEY = "sk-bench-batch-memory"
LINE_BYTES = 1_500  # an unpadded output line, about


def _collect(work: Path, inputs: Path, pairs: int, output_mb: float) -> tuple[tuple, float]:
    """Submit, end the batch, collect; (a table row, the collect's peak RSS in MB)."""
    name = f"output-{output_mb:g}mb" if output_mb else "unpadded"
    folder, cache, spool = work / name, work / f"{name}-cache", work / f"{name}-spool"
    for path in (folder, cache, spool):
        shutil.rmtree(path, ignore_errors=True)
    spool.mkdir(parents=True)
    pad = max(0, int(output_mb * 2**20) // pairs - LINE_BYTES) if output_mb else 0
    server = Server()
    server.args += ["--batch-spool-dir", str(spool), "--batch-pad-output", str(pad)]
    with server:
        submit = run_child(
            digest_cmd("batch", "submit", inputs, "--out", folder, "--cache-dir", cache,
                       "--base-url", server.base_url, "--model", "bench-model", "--no-progress")
        )  # fmt: skip
        if submit.returncode != 0:
            raise SystemExit(f"submit exited {submit.returncode}:\n{submit.stderr}")
        finish_batches(server.base_url, folder, KEY)  # the server writes the output file
        result = run_child(digest_cmd("batch", "collect", folder, "--no-progress"))
        chats = server.stats()["requests"]
    if result.returncode not in (0, 1):
        raise SystemExit(f"collect exited {result.returncode}:\n{result.stdout}{result.stderr}")
    state = json.loads((folder / "batch.json").read_text(encoding="utf-8"))
    results = sum(p.stat().st_size for p in (folder / "results").iterdir())
    with (folder / "summaries.jsonl").open("rb") as fh:
        summaries = sum(1 for _ in fh)
    row = (
        name,
        f"{results / 2**20:,.0f}",
        state["lines"]["answered"],
        summaries,
        chats,
        f"{result.wall:.1f}",
        f"{result.cpu:.1f}",
        f"{result.maxrss_mb:.0f}",
    )
    for path in (spool, folder / "results"):  # up to a GB of disk each: not kept
        shutil.rmtree(path, ignore_errors=True)
    return row, result.maxrss_mb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.batch_memory")
    parser.add_argument("-n", "--abstracts", type=int, default=2000)
    parser.add_argument("--output-mb", type=float, default=1024.0, help="output file size")
    parser.add_argument("--target-mb", type=float, default=300.0, help="peak RSS to stay under")
    args = parser.parse_args(argv)

    work = bench_dir("batch_memory")
    inputs = write_jsonl(work / f"abstracts-{args.abstracts}.jsonl", args.abstracts)
    os.environ["OPENAI_API_KEY"] = KEY
    pairs = args.abstracts * 3
    rows, peaks = [], []
    for output_mb in (0.0, args.output_mb):
        row, peak = _collect(work, inputs, pairs, output_mb)
        rows.append(row)
        peaks.append(peak)
        print(f"  {row[0]}: {row[1]} MB of results, peak RSS {peak:.0f} MB", flush=True)
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print()
    print(
        f"{args.abstracts} abstracts, {pairs} pairs, one batch; `digest batch collect` as a child"
    )
    print(
        md_table(
            ["collect", "results MB", "lines answered", "summaries", "chat requests",
             "wall s", "CPU s", "peak RSS MB"],
            rows,
        )
    )  # fmt: skip
    met = peaks[-1] < args.target_mb
    print(
        f"peak RSS over the {args.output_mb:g} MB file: {peaks[-1]:.0f} MB "
        f"({'under' if met else 'NOT under'} the {args.target_mb:g} MB target; "
        f"{peaks[-1] - peaks[0]:+.0f} MB against the unpadded file); this script's own peak, "
        f"the floor of a child's figure: {floor:.0f} MB"
    )
    print(machine_note())
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
