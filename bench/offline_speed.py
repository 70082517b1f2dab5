"""Offline backend speed: abstracts/s on one core (target >= 500/s).

    python -m bench.offline_speed              # 2000 abstracts in process + 5000 end to end (~40 s)
    python -m bench.offline_speed -n 500 --e2e 1000
    python -m bench.offline_speed --against 54534d7 --rounds 3   # before/after, same machine state

In process (this process pinned to one core): for every abstract and stage, the offline
extractor's answer (`pipeline.offline.answer`, what `OfflineBackend.complete` runs) and the
validation the runner applies to it (`Stage.parse`: pydantic schema + grounding), timed
per stage. End to end: `digest run --provider offline` as a child process pinned to one core,
fresh cache, which adds ingest, cache keys and writes, the run folder and report.html.

`--against REV` compares this tree with git revision REV (exported with `git archive`) on
the same machine state: each round runs both, alternating, in child processes pinned to the
same core, and the table keeps every round, so a busy machine shows as spread, not as a
difference. CPU time is the figure to compare when the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tarfile
import time
from collections import defaultdict
from pathlib import Path

from bench.common import (
    PYTHON,
    REPO_ROOT,
    ChildResult,
    bench_dir,
    first_core,
    machine_note,
    md_table,
    run_child,
    run_offline_fresh,
    synthetic_rows,
    write_jsonl,
)

# In-process timing run inside another tree (only APIs the older trees have too).
_IN_PROCESS_CHILD = """
import json, sys, time
from pathlib import Path
from bench.common import synthetic_rows
from pipeline.stages import build_stages, get_spec, stage_names
from pipeline.taxonomy import load_taxonomy
n = int(sys.argv[1])
# The tree's own prompts/ (cwd): its `pipeline.prompt_files` would resolve to the editable
# install's, i.e. this checkout's prompts.
PROMPTS = Path.cwd() / "prompts"
taxonomy = load_taxonomy(PROMPTS / "taxonomy.yaml")
stages = build_stages(stage_names(), PROMPTS, taxonomy)
texts = [row["abstract"] for row in synthetic_rows(n)]
for stage in stages.values():
    stage.parse(json.dumps(get_spec(stage.name).offline(texts[0], taxonomy)), texts[0])
spent = {name: 0.0 for name in stages}
for text in texts:
    for stage in stages.values():
        t0 = time.process_time()
        raw = json.dumps(get_spec(stage.name).offline(text, taxonomy), ensure_ascii=False)
        stage.parse(raw, text)
        spent[stage.name] += time.process_time() - t0
print(json.dumps({name: 1000 * s / n for name, s in spent.items()}))
"""


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


def export_revision(rev: str) -> Path:
    """A checkout of git revision `rev` in the bench folder (exported once, then reused)."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short=12", rev], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout.strip()
    if not sha:
        raise SystemExit(f"unknown git revision {rev!r}")
    tree = bench_dir("offline_speed") / f"rev-{sha}"
    if not (tree / "pipeline").is_dir():
        archive = tree.with_suffix(".tar")
        with archive.open("wb") as f:
            subprocess.run(["git", "archive", sha], cwd=REPO_ROOT, stdout=f, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
        archive.unlink()
    return tree


def compare(rev: str, rounds: int, n: int, e2e: int, core: int) -> None:
    """Rounds of (this tree, `rev`), alternating: in-process ms per stage and end to end."""
    trees = {"this tree": REPO_ROOT, rev: export_revision(rev)}
    work = bench_dir("offline_speed")
    inputs = write_jsonl(work / f"abstracts-{e2e}.jsonl", e2e)
    rows: list[tuple] = []
    cpu_rates: dict[str, list[float]] = defaultdict(list)
    for k in range(rounds):
        for label, tree in trees.items():
            child = run_child([PYTHON, "-c", _IN_PROCESS_CHILD, str(n)], core=core, cwd=tree)
            per_stage = json.loads(child.stdout) if child.returncode == 0 else {}
            cache, out = work / "cmp-cache", work / "cmp-run"
            r = _fresh_run_in(tree, inputs, cache, out, core)
            cpu_rates[label].append(e2e / r.cpu)
            rows.append(
                (
                    k + 1,
                    label,
                    *(f"{per_stage.get(s, float('nan')):.2f}" for s in ("tldr", "tags", "claims")),
                    f"{r.wall:.1f}",
                    f"{r.cpu:.1f}",
                    f"{e2e / r.wall:.0f}",
                    f"{e2e / r.cpu:.0f}",
                )
            )
    print(f"### This tree vs {rev}: {n} abstracts in process, {e2e} end to end, one core\n")
    print(
        md_table(
            [
                "round",
                "tree",
                "tldr ms",
                "tags ms",
                "claims ms",
                "e2e wall s",
                "e2e CPU s",
                "abstracts/s (wall)",
                "abstracts/s (CPU)",
            ],
            rows,
        )  # fmt: skip
    )
    for label, rates in cpu_rates.items():
        print(
            f"\n{label}: end to end {statistics.median(rates):.0f} abstracts/s of CPU (median), "
            f"{max(rates):.0f} best"
        )


def _fresh_run_in(tree: Path, inputs: Path, cache: Path, out: Path, core: int) -> ChildResult:
    """`digest run --provider offline` with the code of `tree`, fresh cache and run folder."""
    import shutil

    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    # The tree's own config.yaml, pointed at the tree's own prompts/ (see _IN_PROCESS_CHILD).
    config = out.with_name(f"{out.name}-config.yaml")
    own = (
        (tree / "config.yaml").read_text(encoding="utf-8")
        if (tree / "config.yaml").exists()
        else ""
    )
    config.write_text(f"{own}\nprompts_dir: {tree / 'prompts'}\n", encoding="utf-8")
    argv = [
        PYTHON, "-c", "from pipeline.cli import main; main()", "run", str(inputs),
        "--config", str(config), "--provider", "offline", "--cache-dir", str(cache),
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    r = run_child(argv, core=core, cwd=tree)
    if r.returncode != 0:
        raise SystemExit(f"digest run failed in {tree}: {r.stderr[-500:]}")
    return r


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.offline_speed")
    parser.add_argument("-n", "--abstracts", type=int, default=2000, help="in-process abstracts")
    parser.add_argument("--e2e", type=int, default=5000, help="abstracts for the end-to-end run")
    parser.add_argument("--target", type=float, default=500.0, help="abstracts/s")
    parser.add_argument("--against", metavar="REV", help="also time git revision REV, alternating")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the --against comparison")
    args = parser.parse_args(argv)

    core = first_core()
    os.sched_setaffinity(0, {core})
    print(machine_note())
    print(f"pinned to CPU {core}\n")
    if args.against:
        compare(args.against, args.rounds, args.abstracts, args.e2e, core)
        return 0

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
