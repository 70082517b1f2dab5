"""Peak RSS of `digest run` (offline backend) over 5k vs 50k abstracts: flat means streaming.

    python -m bench.memory                 # 5k and 50k (~3-4 min: the 50k run computes everything)
    python -m bench.memory --sizes 5000 20000

Each size runs in its own process with a fresh cache and run folder; the peak RSS is the
child's own `ru_maxrss` (wait4). The run is instrumented at phase boundaries (ingest scan,
run, report) to show where the peak is reached; the hooks only read clocks and RSS.
"""

from __future__ import annotations

import argparse
import json
import time

from bench.common import (
    bench_dir,
    machine_note,
    md_table,
    phase_rows,
    run_offline_fresh,
    write_jsonl,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--target-mb", type=float, default=300.0)
    args = parser.parse_args(argv)

    work = bench_dir("memory")
    print(machine_note())
    rows, phases = [], {}
    for n in args.sizes:
        inputs = write_jsonl(work / f"abstracts-{n}.jsonl", n)
        cache, out, phases_path = work / f"cache-{n}", work / f"run-{n}", work / f"phases-{n}.json"
        r = run_offline_fresh(inputs, cache, out, phases=phases_path)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            return 1
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        counts = manifest["counts"]
        input_mb = inputs.stat().st_size / 2**20
        rows.append(
            (
                n,
                f"{input_mb:.0f}",
                counts["records_written"],
                f"{r.maxrss_mb:.0f}",
                f"{r.wall:.1f}",
                f"{r.cpu:.1f}",
                f"{n / r.wall:.0f}",
                f"{n / r.cpu:.0f}",
            )
        )
        phases[n] = phase_rows(phases_path)
        print(f"  {n}: peak {r.maxrss_mb:.0f} MB, {r.wall:.1f}s", flush=True)

    print("\n### Peak RSS of `digest run --provider offline` (fresh cache)\n")
    print(
        md_table(
            [
                "abstracts",
                "input MB",
                "records",
                "peak RSS MB",
                "wall s",
                "CPU s",
                "abstracts/s (wall)",
                "abstracts/s (CPU)",
            ],
            rows,
        )
    )
    peaks = [float(r[3]) for r in rows]
    verdict = "met" if max(peaks) <= args.target_mb else "NOT met"
    print(
        f"\npeak RSS {peaks[0]:.0f} MB at {args.sizes[0]} -> {peaks[-1]:.0f} MB at {args.sizes[-1]} "
        f"({peaks[-1] / peaks[0]:.2f}x for {args.sizes[-1] / args.sizes[0]:.0f}x the input; "
        f"target <= {args.target_mb:.0f} MB: {verdict})"
    )
    for n, prow in phases.items():
        print(
            f"\n#### Phases at {n} abstracts (peak RSS MB = high-water mark at the end of the phase)\n"
        )
        print(md_table(["phase", "wall s", "CPU s", "peak RSS MB", "RSS MB"], prow))
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\n(benchmark took {time.perf_counter() - started:.0f}s)")
    raise SystemExit(code)
