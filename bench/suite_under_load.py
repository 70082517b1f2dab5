"""Run a pytest selection beside N CPU-bound burner processes and print how it went.

    python -m bench.suite_under_load [--burners 8] [--runs 1] [--settle 20] -- PYTEST ARGS...

Each burner is a child running `while True: pass`; with 8 of them on 2 cores the load
average settles near 10, the load at which timing-dependent tests used to fail. The burners
start `--settle` seconds before the first run (the load average is a one-minute mean; the
CPU contention itself is there at once), are stopped by their own process ids after the
last run, and each run's pass/fail counts, wall time and load averages are printed. The
exit code is 0 only when every run passed.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BURN = "while True: pass"
OUTCOMES = ("passed", "failed", "errors", "error", "skipped", "deselected", "xfailed", "xpassed")
_COUNT = re.compile(r"(\d+) (" + "|".join(OUTCOMES) + r")\b")


@dataclass
class RunResult:
    """One pytest run: its exit code, outcome counts, wall seconds and peak 1-min load."""

    returncode: int
    counts: dict[str, int]
    wall_s: float
    load_max: float
    summary: str


def start_burners(n: int) -> list[subprocess.Popen[bytes]]:
    """N children spinning on one core each (as the scheduler places them)."""
    return [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(n)]


def stop_burners(burners: Sequence[subprocess.Popen[bytes]]) -> None:
    """Stop exactly the burners started here, by their pids, and reap them."""
    for proc in burners:
        proc.terminate()
    for proc in burners:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def parse_counts(output: str) -> tuple[dict[str, int], str]:
    """Outcome counts from pytest's last summary line ("3 passed, 1 failed in 2.1s")."""
    lines = [line for line in output.splitlines() if _COUNT.search(line) and " in " in line]
    if not lines:
        return {}, ""
    summary = lines[-1].strip("= ")
    counts = {kind: int(n) for n, kind in _COUNT.findall(summary)}
    if "error" in counts:
        counts["errors"] = counts.get("errors", 0) + counts.pop("error")
    return counts, summary


class LoadSampler:
    """The highest one-minute load average seen while a run goes on (sampled every second)."""

    def __init__(self) -> None:
        self.peak = os.getloadavg()[0]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            self.peak = max(self.peak, os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_pytest(args: Sequence[str]) -> RunResult:
    """`python -m pytest -p no:cacheprovider ARGS` from the repo root, output passed through."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    started = time.monotonic()
    with LoadSampler() as load:
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    counts, summary = parse_counts(proc.stdout)
    return RunResult(proc.returncode, counts, wall, load.peak, summary)


def main(argv: Sequence[str] | None = None) -> int:
    """Start the burners, run the selection `--runs` times, stop the burners, report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burners", type=int, default=8, help="CPU-bound children (default 8)")
    parser.add_argument("--runs", type=int, default=1, help="times to run the selection")
    parser.add_argument(
        "--settle", type=float, default=20.0, help="seconds of burning before the first run"
    )
    parser.add_argument("pytest_args", nargs="*", help="the selection and options for pytest")
    opts = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    print(f"{opts.burners} burners on {cores} cores; load average before: {_loadavg()}")
    # SIGTERM (kill) ends the bench through its `finally`, as Ctrl-C does: the burners and
    # the pytest child go with it instead of spinning on as orphans.
    signal.signal(signal.SIGTERM, _interrupt)
    burners = start_burners(opts.burners)
    results: list[RunResult] = []
    try:
        time.sleep(opts.settle)
        for i in range(opts.runs):
            print(f"--- run {i + 1}/{opts.runs}: load average {_loadavg()}", flush=True)
            results.append(run_pytest(opts.pytest_args))
    except KeyboardInterrupt:
        print(f"\nstopped after {len(results)} finished run(s); stopping the burners")
        return 130
    finally:
        stop_burners(burners)
    print(f"\nburners stopped; load average now {_loadavg()}")
    for i, r in enumerate(results, 1):
        shown = ", ".join(f"{n} {kind}" for kind, n in r.counts.items()) or "no summary line"
        print(
            f"run {i}: {shown}; exit {r.returncode}; {r.wall_s:.0f}s wall; "
            f"peak 1-min load {r.load_max:.1f}"
        )
    return 0 if results and all(r.returncode == 0 for r in results) else 1


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
