"""Warm rerun: `digest run` over 10k abstracts whose every stage is already cached.

    python -m bench.warm_rerun            # 10k abstracts: prime (~30 s) + 3 timed runs (~15 s)
    python -m bench.warm_rerun -n 2000    # smaller
    python -m bench.warm_rerun -n 1000 --provider openai   # the openai backend, fully cached

The cache is primed with the offline backend into a fresh folder under $TMPDIR. Then
the whole CLI process (`digest run --provider offline --no-progress`) is timed, wall clock,
and compared with a bare `json.loads` pass over the same cache files (as its own process,
and the loop alone). One more, instrumented run splits the time into phases.

With `--provider openai` the cache is primed through the local bench server, which is then
stopped: the timed runs point at a base_url where nothing listens, so they succeed only if
a fully cached run sends no request at all (no preflight either). The table then adds how
long `import openai` takes in a bare process, the cost a warm rerun no longer pays.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time

from bench.common import (
    PYTHON,
    Server,
    bench_dir,
    digest_cmd,
    machine_note,
    md_table,
    phase_rows,
    run_child,
    write_jsonl,
)

BARE_LOOP = """
import json, sys, time
t = time.perf_counter()
n = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        for line in f:
            json.loads(line)
            n += 1
print(n, time.perf_counter() - t)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.warm_rerun")
    parser.add_argument("-n", "--abstracts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="timed runs (the median is reported)")
    parser.add_argument("--target", type=float, default=3.0, help="seconds")
    parser.add_argument("--provider", choices=["offline", "openai"], default="offline")
    args = parser.parse_args(argv)
    n = args.abstracts

    work = bench_dir("warm_rerun")
    inputs = write_jsonl(work / f"abstracts-{n}.jsonl", n)
    cache = work / f"cache-{n}-{args.provider}"
    print(machine_note())
    common = ["--provider", args.provider, "--cache-dir", cache, "--no-progress"]

    started = time.perf_counter()
    shutil.rmtree(cache, ignore_errors=True)  # only this run's records, so both sides read the same
    shutil.rmtree(work / "prime", ignore_errors=True)
    if args.provider == "openai":
        with Server() as server:  # stopped before the timed runs: nothing listens there then
            common += ["--base-url", server.base_url, "--model", "bench-model"]
            prime = run_child(digest_cmd("run", inputs, *common, "--out", work / "prime"))
    else:
        prime = run_child(digest_cmd("run", inputs, *common, "--out", work / "prime"))
    if prime.returncode != 0:
        print(prime.stdout, prime.stderr)
        return 1
    print(f"primed the cache in {time.perf_counter() - started:.1f}s ({n} abstracts x 3 stages)")

    runs = []
    for i in range(args.runs):
        out = work / f"run-{i}"
        shutil.rmtree(out, ignore_errors=True)
        r = run_child(digest_cmd("run", inputs, *common, "--out", out))
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        hits = sum(s["cache_hits"] for s in manifest["counts"]["stages"].values())
        if r.returncode != 0 or hits != 3 * n:
            print(f"run {i}: exit {r.returncode}, {hits} cache hits of {3 * n}\n{r.stderr}")
            return 1
        runs.append(r)

    files = sorted(str(p) for p in cache.glob("*.jsonl"))
    bare = [run_child([PYTHON, "-c", BARE_LOOP, *files]) for _ in range(args.runs)]
    lines, loop_s = bare[0].stdout.split()
    loop = min(float(b.stdout.split()[1]) for b in bare)
    startup = min(run_child([PYTHON, "-c", "pass"]).wall for _ in range(3))
    import_openai = min(run_child([PYTHON, "-c", "import openai"]).wall for _ in range(3))

    phases_path = work / "phases.json"
    shutil.rmtree(work / "run-phases", ignore_errors=True)
    instrumented = run_child(
        digest_cmd("run", inputs, *common, "--out", work / "run-phases", phases=phases_path)
    )

    wall = statistics.median(r.wall for r in runs)
    cpu = statistics.median(r.cpu for r in runs)
    bare_wall = statistics.median(b.wall for b in bare)
    size_mb = sum((cache / f).stat().st_size for f in cache.iterdir()) / 2**20
    print(
        f"\n### Warm rerun ({args.provider}): {n} abstracts, all {3 * n} stage results cached "
        f"({size_mb:.0f} MB cache)\n"
    )
    rows = [
        (
            "`digest run` (whole process)",
            f"{wall:.2f}",
            f"{min(r.wall for r in runs):.2f}",
            f"{cpu:.2f}",
            f"{max(r.maxrss_mb for r in runs):.0f}",
            f"{wall / bare_wall:.1f}x",
        ),
        (
            f"bare `json.loads` of the {lines} cache lines (process)",
            f"{bare_wall:.2f}",
            f"{min(b.wall for b in bare):.2f}",
            f"{statistics.median(b.cpu for b in bare):.2f}",
            f"{max(b.maxrss_mb for b in bare):.0f}",
            "1.0x",
        ),
        (
            "bare `json.loads` loop alone (in process)",
            f"{loop:.2f}",
            "",
            "",
            "",
            f"{loop / bare_wall:.2f}x",
        ),
        ("`python -c pass` (interpreter startup)", f"{startup:.2f}", "", "", "", ""),
        ("`python -c 'import openai'`", f"{import_openai:.2f}", "", "", "", ""),
    ]
    print(
        md_table(
            ["what", "wall s (median)", "wall s (min)", "CPU s", "peak RSS MB", "vs bare pass"],
            rows,
        )
    )
    print(
        f"\ndigest run: {wall:.2f}s wall (target <= {args.target:.1f}s: "
        f"{'met' if wall <= args.target else 'NOT met'}); "
        f"{wall / bare_wall:.1f}x the bare json.loads process, {wall / loop:.0f}x its loop alone"
    )
    if instrumented.returncode == 0 and phases_path.exists():
        print(
            f"\n### Where the warm rerun's time goes (one instrumented run, {instrumented.wall:.2f}s wall)\n"
        )
        print(
            md_table(["phase", "wall s", "CPU s", "peak RSS MB", "RSS MB"], phase_rows(phases_path))
        )
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\n(benchmark took {time.perf_counter() - started:.0f}s)")
    raise SystemExit(code)
