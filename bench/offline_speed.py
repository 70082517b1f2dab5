"""Offline backend speed: abstracts/s on one core (target >= 500/s).

    python -m bench.offline_speed              # 2000 abstracts in process + 5000 end to end (~40 s)
    python -m bench.offline_speed -n 500 --e2e 1000

In process (this process pinned to one core): for every abstract and stage, the offline
extractor's answer (`pipeline.offline.answer`, what `OfflineBackend.complete` runs) and the
validation the runner applies to it (`Stage.parse`: pydantic schema + grounding), timed
per stage. End to end: `digest run --provider offline` as a child process pinned to one core,
fresh cache, which adds ingest, cache keys and writes, the run folder and report.html.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict

from bench.common import (
    bench_dir,
    first_core,
    machine_note,
    md_table,
    run_offline_fresh,
    synthetic_rows,
    write_jsonl,
)


def in_process(n: int) -> tuple[list[tuple], float, float]:
    """Per-stage answer/validate seconds over n abstracts; (rows, total s, abstracts/s)."""
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.stages import build_stages, get_spec, stage_names
    from pipeline.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    stages = build_stages(stage_names(), PACKAGE_PROMPTS_DIR, taxonomy)
    texts = [row["abstract"] for row in synthetic_rows(n)]
    for stage in stages.values():  # warm-up: lazy imports, regex compilation
        stage.parse(json.dumps(get_spec(stage.name).offline(texts[0], taxonomy)), texts[0])
    spent: dict[tuple[str, str], float] = defaultdict(float)
    clock = time.process_time
    for text in texts:
        for stage in stages.values():
            t0 = clock()
            raw = json.dumps(get_spec(stage.name).offline(text, taxonomy), ensure_ascii=False)
            t1 = clock()
            stage.parse(raw, text)
            t2 = clock()
            spent[stage.name, "answer"] += t1 - t0
            spent[stage.name, "validate"] += t2 - t1
    total = sum(spent.values())
    rows = []
    for name in stages:
        a, v = spent[name, "answer"], spent[name, "validate"]
        rows.append(
            (
                name,
                f"{1000 * a / n:.2f}",
                f"{1000 * v / n:.2f}",
                f"{1000 * (a + v) / n:.2f}",
                f"{100 * (a + v) / total:.0f}%",
            )
        )
    rows.append(
        (
            "all stages",
            f"{1000 * sum(v for (_, k), v in spent.items() if k == 'answer') / n:.2f}",
            f"{1000 * sum(v for (_, k), v in spent.items() if k == 'validate') / n:.2f}",
            f"{1000 * total / n:.2f}",
            "100%",
        )
    )
    return rows, total, n / total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.offline_speed")
    parser.add_argument("-n", "--abstracts", type=int, default=2000, help="in-process abstracts")
    parser.add_argument("--e2e", type=int, default=5000, help="abstracts for the end-to-end run")
    parser.add_argument("--target", type=float, default=500.0, help="abstracts/s")
    args = parser.parse_args(argv)

    core = first_core()
    os.sched_setaffinity(0, {core})
    print(machine_note())
    print(f"pinned to CPU {core}\n")

    rows, total, rate = in_process(args.abstracts)
    print(
        f"### Offline backend in process: {args.abstracts} abstracts x 3 stages, one core (CPU time)\n"
    )
    print(
        md_table(
            ["stage", "answer ms/abstract", "validate ms/abstract", "total ms/abstract", "share"],
            rows,
        )
    )
    print(f"\nbackend + validation: {rate:.0f} abstracts/s of CPU ({total:.1f}s)")

    work = bench_dir("offline_speed")
    inputs = write_jsonl(work / f"abstracts-{args.e2e}.jsonl", args.e2e)
    cache, out = work / "cache", work / "run"
    r = run_offline_fresh(inputs, cache, out, core=core)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        return 1
    e2e_wall, e2e_cpu = args.e2e / r.wall, args.e2e / r.cpu
    print(f"\n### `digest run --provider offline`, {args.e2e} abstracts, fresh cache, one core\n")
    print(
        md_table(
            ["abstracts", "wall s", "CPU s", "abstracts/s (wall)", "abstracts/s (CPU)", "target"],
            [
                (
                    args.e2e,
                    f"{r.wall:.1f}",
                    f"{r.cpu:.1f}",
                    f"{e2e_wall:.0f}",
                    f"{e2e_cpu:.0f}",
                    f"{args.target:.0f}",
                )
            ],
        )
    )
    verdict = "met" if e2e_wall >= args.target else "NOT met"
    print(
        f"\nend to end: {e2e_wall:.0f} abstracts/s wall, {e2e_cpu:.0f}/s of CPU (target {args.target:.0f}/s: {verdict})"
    )
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\n(benchmark took {time.perf_counter() - started:.0f}s)")
    raise SystemExit(code)
