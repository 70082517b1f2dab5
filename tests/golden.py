"""The golden snapshot of offline outputs: the shipped samples plus 200 SciTLDR train abstracts.

The 200 are the last rows of the train split in `sha256(paper_id)` order, in no gold file: a
snapshot diff then never shows the extractors' outputs on dev, the held-out report split (it
used to hold 200 dev abstracts, 40 of them in the dev gold sets).

`digest run` with the offline backend runs in a subprocess (its own PYTHONHASHSEED, a fresh
cache), and the snapshot keeps each record's id and stage outputs. tests/test_golden.py
compares a fresh run against tests/data/golden/offline_outputs.jsonl; after a deliberate
change to the extractors, regenerate it and review the diff:

    python tests/golden.py --update
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOLDEN_DIR = REPO / "tests" / "data" / "golden"
SNAPSHOT = GOLDEN_DIR / "offline_outputs.jsonl"
INPUTS = [REPO / "examples" / "iclr2026", GOLDEN_DIR / "scitldr_train_200.jsonl"]
UPDATE_HASHSEED = "1"


def offline_snapshot(hashseed: str) -> list[dict]:
    """Id and stage outputs of every record of a fresh offline run in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DIGEST_MODEL", "DIGEST_PROVIDER"):
            env.pop(var, None)
        cmd = [sys.executable, "-m", "pipeline", "run", *map(str, INPUTS), "--provider", "offline"]
        cmd += ["--out", f"{tmp}/run", "--cache-dir", f"{tmp}/cache", "--no-progress"]
        subprocess.run(cmd, cwd=tmp, env=env, check=True, capture_output=True, text=True)
        lines = Path(tmp, "run", "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        record = json.loads(line)
        out.append({"id": record["id"], **{n: s["output"] for n, s in record["stages"].items()}})
    return out


def read_snapshot() -> list[dict]:
    """The committed snapshot."""
    return [json.loads(line) for line in SNAPSHOT.read_text(encoding="utf-8").splitlines()]


def write_snapshot(rows: list[dict]) -> None:
    """Replace the committed snapshot."""
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    SNAPSHOT.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python tests/golden.py --update")
    rows = offline_snapshot(UPDATE_HASHSEED)
    write_snapshot(rows)
    print(f"wrote {len(rows)} records to {SNAPSHOT.relative_to(REPO)}")
