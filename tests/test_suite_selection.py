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


def test_a_test_marked_slow_in_its_own_file_is_slow():
    from pathlib import Path

    from conftest import is_slow

    class Item:  # the parts of a pytest.Item that is_slow reads
        path = Path("test_not_in_the_table.py")
        name = originalname = "test_x"

        def __init__(self, markers: set[str]) -> None:
            self.markers = markers

        def get_closest_marker(self, name: str) -> object | None:
            return object() if name in self.markers else None

    assert is_slow(Item({"slow"})) and is_slow(Item({"browser"}))
    assert not is_slow(Item(set()))
