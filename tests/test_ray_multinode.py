"""`digest run --engine ray` on two Ray nodes (two raylets) in a loopback-only namespace.

`bench/ray_multinode.py` does the work inside `unshare -n -p -f -m --mount-proc` (its own
network, PID and mount namespaces: only 127.0.0.1 exists, and every process it started is
visible to it, and killed with it): `ray start --head --num-cpus 1` plus `ray start
--address ... --num-cpus 1`, the local test server, the local engine and the Ray engine on
200 abstracts. Without root it tries a user namespace too (`unshare -r`); skipped where
neither can be made, with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest
from samples import REPO

N_ABSTRACTS = 200
NAMESPACES = ["unshare", "-n", "-p", "-f", "-m", "--mount-proc"]  # as root
USER_NAMESPACES = ["unshare", "-r", *NAMESPACES[1:]]  # unprivileged, where user namespaces are


def _namespaces() -> tuple[list[str] | None, str]:
    """The unshare command that makes the namespaces here, or None and why not."""
    if importlib.util.find_spec("ray") is None:
        return None, "Ray is not installed (the optional extra: pip install -e '.[ray]')"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return None, "no unshare or ip command (util-linux, iproute2)"
    why = ""
    for command in (NAMESPACES, USER_NAMESPACES):
        probe = [*command, "sh", "-c", "ip link set lo up"]
        done = subprocess.run(probe, capture_output=True, text=True)
        if done.returncode == 0:
            return command, ""
        why = done.stderr.strip()
    return None, f"cannot make a loopback-only network namespace: {why}"


@pytest.mark.slow
def test_two_nodes_both_answer_and_the_summaries_are_the_local_engines(tmp_path):
    namespaces, why = _namespaces()
    if namespaces is None:
        pytest.skip(why)
    out = tmp_path / "result.json"
    script = f"ip link set lo up && exec {sys.executable} -m bench.ray_multinode"
    script += f" -n {N_ABSTRACTS} --json {out}"
    done = subprocess.run(
        [*namespaces, "sh", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert out.exists(), done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["ray"]["exit"] == 0, result.get("stderr_tail")
    assert result["local"]["exit"] == 0, result.get("stderr_tail")

    by_node = result["pairs_by_node"]
    assert len(by_node) == 2, by_node  # two Ray nodes answered ...
    assert all(n > 0 for n in by_node.values())
    assert sum(by_node.values()) == 3 * N_ABSTRACTS  # ... every pair, once
    assert result["local"]["requests"] == result["ray"]["requests"] == 3 * N_ABSTRACTS
    assert result["records"] == N_ABSTRACTS
    assert result["summaries_equal"] and result["csv_equal"]
    # A driver without the cluster's token: one message, exit 2, no request.
    assert result["no_token"]["exit"] == 2 and result["no_token"]["requests"] == 0
    assert "RAY_AUTH_TOKEN" in result["no_token"]["message"][0]
    # Both nodes stopped: nothing the script started is left in its PID namespace.
    assert result["left_after_stop"] == []
    assert done.returncode == 0
