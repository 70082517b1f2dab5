"""The fast default selection: every entry of the slow table names a test that exists, so a
renamed or moved test cannot leave the table quietly (and the test run by default)."""

from __future__ import annotations

import re

from conftest import ALL, SLOW
from samples import REPO


def test_every_slow_entry_names_an_existing_test():
    stale = []
    for file, names in SLOW.items():
        path = REPO / "tests" / file
        if not path.exists():
            stale.append(file)
            continue
        text = path.read_text(encoding="utf-8")
        for name in names - {ALL}:
            function = name.split("[", 1)[0]
            if not re.search(rf"^(async )?def {re.escape(function)}\(", text, re.M):
                stale.append(f"{file}::{name}")
    assert stale == []
