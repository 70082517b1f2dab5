"""The suite's own set-up: tests that interrupt a `digest` child work however pytest was
started, even as a background job that ignores SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# A grandchild that says whether Python installed its Ctrl-C handler (it does not when it
# starts with SIGINT ignored, and then a SIGINT does nothing).
PROBE = (
    "import signal, subprocess, sys\n"
    "if sys.argv[1] == 'configured':\n"
    "    import conftest\n"
    "    conftest.pytest_configure(None)\n"
    "probe = 'import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)'\n"
    "print(subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True).stdout)\n"
)


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(("setup", "interruptible"), [("configured", "True"), ("bare", "False")])
def test_children_of_a_suite_started_ignoring_sigint_can_be_interrupted(setup, interruptible):
    out = subprocess.run(
        [sys.executable, "-c", PROBE, setup],
        capture_output=True,
        text=True,
        preexec_fn=_ignoring_sigint,  # as a shell starts a background job
        env={**os.environ, "PYTHONPATH": str(TESTS)},  # conftest and its helpers
        check=True,
    ).stdout
    assert out.strip() == interruptible
