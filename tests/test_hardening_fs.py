"""Issues 9.7 and 9.9: folders the run must write.

- An input file inside the run folder (a run's own summaries.jsonl read back into the same
  `--out`) is refused before anything is truncated.
- A cache or run folder that is a file, or cannot be written, is one message naming the
  path and exit 2, checked before any work, with no half-made run folder.
- A full disk while the run folder is written is one message and exit 2, not a traceback.
"""

from __future__ import annotations

import errno
import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from samples import SHORT_ABSTRACT

from pipeline.cli import main

A2 = "We study transformers in depth. They generalize well on 5 tasks."


def digest(*args) -> object:
    return CliRunner().invoke(main, ["run", *map(str, args), "--no-progress"])


def one_error(result, *words: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


@pytest.fixture
def inputs(tmp_path) -> Path:
    path = tmp_path / "abstracts.txt"
    path.write_text(f"{SHORT_ABSTRACT}\n\n{A2}\n", encoding="utf-8")
    return path


def test_reading_a_runs_own_summaries_into_the_same_out_is_refused(tmp_path, inputs):
    out, cache = tmp_path / "run", tmp_path / "cache"
    assert digest(inputs, "--out", out, "--cache-dir", cache).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    own = out / "summaries.jsonl"
    one_error(digest(own, "--out", out, "--cache-dir", cache), str(own), "inside the run folder")
    # the same folder named another way (a symlink), and a directory holding it
    (tmp_path / "link").symlink_to(out)
    one_error(digest(own, "--out", tmp_path / "link", "--cache-dir", cache), str(own))
    one_error(digest(tmp_path, "--out", out, "--cache-dir", cache), "inside the run folder")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing destroyed
    # Reading it into another folder is fine.
    again = digest(own, "--out", tmp_path / "other", "--cache-dir", cache)
    assert again.exit_code == 0, again.output


def test_cache_path_that_is_a_file(tmp_path, inputs):
    cache = tmp_path / "cache"
    cache.write_text("not a folder")
    one_error(digest(inputs, "--out", tmp_path / "run", "--cache-dir", cache), str(cache))
    one_error(
        digest(inputs, "--out", tmp_path / "run", "--cache-dir", cache / "sub"),
        str(cache / "sub"),
        "not a folder",
    )
    assert not (tmp_path / "run").exists()


def test_out_that_is_a_file(tmp_path, inputs):
    out = tmp_path / "run.txt"
    out.write_text("keep me")
    one_error(digest(inputs, "--out", out, "--cache-dir", tmp_path / "cache"), str(out), "folder")
    assert out.read_text() == "keep me"


@pytest.mark.skipif(
    not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs (refuses new files even to root)"
)
@pytest.mark.parametrize("which", ["cache", "out"])
def test_a_folder_the_kernel_refuses_is_one_message_before_any_work(tmp_path, inputs, which):
    refused = Path("/sys/digest-test-cannot-create-this")
    out = refused if which == "out" else tmp_path / "run"
    cache = refused if which == "cache" else tmp_path / "cache"
    line = one_error(digest(inputs, "--out", out, "--cache-dir", cache), str(refused))
    assert "not writable" in line
    assert not (tmp_path / "run").exists() and not (tmp_path / "cache").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_cache_dir(tmp_path, inputs):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o555)
    try:
        line = one_error(digest(inputs, "--out", tmp_path / "run", "--cache-dir", cache))
        assert str(cache) in line and "not writable" in line
        assert not (tmp_path / "run").exists()
    finally:
        cache.chmod(0o755)


class FillingFile(io.TextIOBase):
    """A text file on a device with `room` characters left: then every write is ENOSPC."""

    def __init__(self, real, room: dict[str, int]) -> None:
        self._real = real
        self._room = room
        self.name = real.name

    def write(self, text: str) -> int:
        if len(text) > self._room["chars"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.name)
        self._room["chars"] -= len(text)
        return self._real.write(text)

    def flush(self) -> None:
        self._real.flush()

    def close(self) -> None:
        self._real.close()


def test_a_full_disk_in_the_run_folder_is_one_message(tmp_path, inputs, monkeypatch):
    import pipeline.rundir.writer as writer_module

    room = {"chars": 1500}  # the header rows and about one record
    real_open = writer_module.open_fresh

    def filling_open(path, *args, **kwargs):
        return FillingFile(real_open(path, *args, **kwargs), room)

    monkeypatch.setattr(writer_module, "open_fresh", filling_open)
    out = tmp_path / "run"
    line = one_error(digest(inputs, "--out", out, "--cache-dir", tmp_path / "cache"))
    assert "No space left on device" in line and str(out) in line
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "fatal" and "No space left" in manifest["fatal_error"]
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []
    # The run says it is incomplete to every reader.
    triage = CliRunner().invoke(main, ["triage", str(out)])
    assert "incomplete" in triage.stderr
