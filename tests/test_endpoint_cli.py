"""`digest run ... | head -1`: a reader that stops early does not turn into a silent exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from timing import HANG_S

REPO = Path(__file__).resolve().parents[1]


def test_a_closed_stdout_exits_141_quietly_with_the_run_complete(tmp_path):
    args = [sys.executable, "-m", "pipeline", "run", str(REPO / "examples" / "iclr2026"),
            "--provider", "offline", "--out", str(tmp_path / "run"),
            "--cache-dir", str(tmp_path / "cache"), "--no-progress"]  # fmt: skip
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line (`| head -0`)
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=HANG_S) == 141  # pipeline.cli.EXIT_BROKEN_PIPE
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert "BrokenPipe" not in stderr
    assert stderr.startswith("backend: offline")  # stderr still works
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["counts"]["records_written"] == 57
