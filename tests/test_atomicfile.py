"""Atomic whole-file writes: no symlink followed, no half file, no stray temp file."""

from __future__ import annotations

import os

import pytest

from pipeline.atomicfile import atomic_open, temp_name, write_bytes, write_text
from pipeline.errors import StorageError


def test_a_symlink_at_the_target_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    (run / "summaries.csv").symlink_to(victim)
    write_text(run / "summaries.csv", "id,tldr\n")
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not (run / "summaries.csv").is_symlink()
    assert (run / "summaries.csv").read_text(encoding="utf-8") == "id,tldr\n"


def test_a_link_planted_under_the_temp_name_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    target = tmp_path / "report.md"
    temp_name(target).symlink_to(victim)
    write_bytes(target, b"# report\n")
    assert victim.read_text(encoding="utf-8") == "precious"
    assert target.read_bytes() == b"# report\n"


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "assignments.csv"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write("half")
        raise RuntimeError("boom")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["assignments.csv"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_a_storage_error_naming_the_file(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(StorageError, match="assignments.csv"):
            write_text(folder / "assignments.csv", "x\n")
        assert os.listdir(folder) == []
    finally:
        folder.chmod(0o700)


def test_an_unwritable_place_is_a_storage_error_naming_the_file(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("", encoding="utf-8")
    with pytest.raises(StorageError, match=r"file/assignments\.csv"):
        write_text(not_a_folder / "assignments.csv", "x\n")
