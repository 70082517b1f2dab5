"""Child processes: `digest` as this interpreter runs it, and what a child cost to run."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path


@dataclasses.dataclass
class ChildResult:
    """What one child process cost: wall and CPU seconds, peak RSS, exit code, output."""

    wall: float
    cpu: float
    maxrss_mb: float
    returncode: int
    stdout: str
    stderr: str


def run_child(
    argv: Sequence[str], *, core: int | None = None, cwd: Path | None = None
) -> ChildResult:
    """Run a command to completion; its own rusage via wait4 (optionally pinned to one core)."""
    preexec = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8") as out,
        tempfile.TemporaryFile("w+", encoding="utf-8") as err,
    ):
        started = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, cwd=cwd, preexec_fn=preexec)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ChildResult(
            wall=wall,
            cpu=usage.ru_utime + usage.ru_stime,
            maxrss_mb=usage.ru_maxrss / 1024,
            returncode=proc.returncode,
            stdout=out.read(),
            stderr=err.read(),
        )


def digest_argv(*args: object) -> list[str]:
    """`digest ARGS...` as this interpreter runs it (no console script needed)."""
    return [sys.executable, "-c", "from pipeline.cli import main; main()", *map(str, args)]
