"""Files of the source checkout that the test support reads: prompts/, tests/data/, examples/."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TAXONOMY = REPO_ROOT / "prompts" / "taxonomy.yaml"
TEST_DATA = REPO_ROOT / "tests" / "data"
