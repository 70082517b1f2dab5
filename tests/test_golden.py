"""Offline outputs equal the golden snapshot, computed in a process with another hash seed."""

from __future__ import annotations

from golden import SNAPSHOT, UPDATE_HASHSEED, offline_snapshot, read_snapshot

TEST_HASHSEED = "2718"


def test_offline_outputs_match_the_golden_snapshot():
    assert TEST_HASHSEED != UPDATE_HASHSEED  # a different process layout than the snapshot's
    expected = read_snapshot()
    actual = offline_snapshot(TEST_HASHSEED)
    assert len(actual) == len(expected) == 257
    changed = [a["id"] for a, e in zip(actual, expected, strict=True) if a != e]
    assert not changed, (
        f"{len(changed)} of {len(expected)} records differ from {SNAPSHOT.name} "
        f"(first: {changed[:5]}); if the change is deliberate: python tests/golden.py --update"
    )
