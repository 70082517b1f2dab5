"""Issue 9.5 (the cache trusts none of its lines), the TL;DR length limit, and 9.9's cache
writes on a full disk (short writes, ENOSPC).

A poisoned line is a miss with ONE warning (not one per lookup); the fresh answer replaces
it, so the run after that is all cache hits and warns about nothing.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from runs import run_paths

from pipeline.cache import StageCache
from pipeline.cli import main
from pipeline.config import load_settings
from pipeline.errors import OutputValidationError, StorageError
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.stages import build_stages
from pipeline.taxonomy import load_taxonomy

A1 = (
    "We propose SparseRoute, a router for mixture-of-experts transformers. SparseRoute "
    "improves accuracy by 2.5% on ImageNet. It also halves the training cost."
)
A2 = "We study graph transformers for molecules. They beat message passing on 3 benchmarks."
A3 = "We introduce a benchmark for code generation with 1200 tasks. Models fail on most of them."
ABSTRACTS = [A1, A2, A3]


def write_inputs(tmp_path: Path) -> Path:
    path = tmp_path / "abstracts.txt"
    path.write_text("\n\n".join(ABSTRACTS) + "\n", encoding="utf-8")
    return path


def offline_run(tmp_path: Path, inputs: Path, name: str):
    settings = load_settings(
        None,
        env={},
        overrides={
            "provider": "offline",
            "cache_dir": tmp_path / "cache",
            "out_dir": tmp_path / name,
            "progress": False,
        },
    )
    return run_paths(settings, [inputs])


def read_records(run_dir: Path) -> list[dict]:
    lines = (run_dir / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def cache_warnings(caplog, cache_file: Path) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and str(cache_file) in r.getMessage()
    ]


def poison(cache_file: Path, key: str, body: bytes) -> None:
    """Replace the line of `key` with `{"key":"<key>",<body>` (raw bytes, any shape)."""
    lines = cache_file.read_bytes().split(b"\n")
    prefix = b'{"key":"' + key.encode() + b'"'
    (i,) = [n for n, line in enumerate(lines) if line.startswith(prefix)]
    lines[i] = prefix + body
    cache_file.write_bytes(b"\n".join(lines))


def a1_key(records: list[dict], stage: str) -> str:
    return records[0]["stages"][stage]["provenance"]["cache_key"]


GOOD_PROVENANCE = (
    b'"provenance":{"backend":"offline","model":"m","prompt_hash":"p","schema_version":1,'
    b'"cache_key":"k"}'
)
POISONED_TLDR = {
    "no output": b',"stage":"tldr",' + GOOD_PROVENANCE + b"}",
    "output a string": b',"stage":"tldr","output":"A router.",' + GOOD_PROVENANCE + b"}",
    "output a list": b',"stage":"tldr","output":["A router."],' + GOOD_PROVENANCE + b"}",
    "provenance null": b',"stage":"tldr","output":{"tldr":"SparseRoute routes experts."},'
    b'"provenance":null}',
    "provenance a string": b',"stage":"tldr","output":{"tldr":"SparseRoute routes experts."},'
    b'"provenance":"x"}',
    "invented number": b',"stage":"tldr","output":{"tldr":"SparseRoute improves accuracy by '
    b'97.3% on ImageNet."},' + GOOD_PROVENANCE + b"}",
    "two sentences": b',"stage":"tldr","output":{"tldr":"SparseRoute routes experts. It '
    b'halves the training cost."},' + GOOD_PROVENANCE + b"}",
    "10 MB one-word tldr": b',"stage":"tldr","output":{"tldr":"'
    + b"x" * 10_000_000
    + b'."},'
    + GOOD_PROVENANCE
    + b"}",
    "5000-digit number": b',"stage":"tldr","output":{"tldr":"A router."},"n":'
    + b"9" * 5000
    + b","
    + GOOD_PROVENANCE
    + b"}",
    "deep nesting": b',"n":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "invalid UTF-8": b',"stage":"tldr","output":{"tldr":"A \xff router."},'
    + GOOD_PROVENANCE
    + b"}",
    "not JSON": b",garbage}",
}


@pytest.mark.parametrize("body", POISONED_TLDR.values(), ids=POISONED_TLDR)
def test_a_poisoned_tldr_line_is_one_warning_a_miss_and_replaced(tmp_path, caplog, body):
    inputs = write_inputs(tmp_path)
    clean = read_records(offline_run(tmp_path, inputs, "clean").run_dir)
    cache_file = tmp_path / "cache" / "tldr.jsonl"
    poison(cache_file, a1_key(clean, "tldr"), body)

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        second = offline_run(tmp_path, inputs, "second")
    warnings = cache_warnings(caplog, cache_file)
    assert len(warnings) == 1, warnings  # one per bad line, not one per lookup
    records = read_records(second.run_dir)
    assert [r["stages"]["tldr"]["output"] for r in records] == [
        r["stages"]["tldr"]["output"] for r in clean
    ]
    assert records[0]["stages"]["tldr"]["provenance"]["cached"] is False  # asked again
    tldr = second.manifest.counts.stages["tldr"]
    assert (tldr.ok, tldr.failed, tldr.cache_hits) == (3, 0, 2)

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        third = offline_run(tmp_path, inputs, "third")
    assert cache_warnings(caplog, cache_file) == []  # the fresh answer replaced the bad one
    assert third.manifest.counts.stages["tldr"].cache_hits == 3
    assert third.manifest.status == "ok"


POISONED_CLAIMS = {
    "evidence not in the abstract": {
        "claims": [
            {
                "statement": "SparseRoute improves accuracy by 2.5% on ImageNet.",
                "kind": "quantitative",
                "metric": "accuracy",
                "value": "2.5",
                "unit": "%",
                "dataset": "ImageNet",
                "comparison": None,
                "evidence": "improves accuracy by 2.5% on ImageNet and 9% on COCO",
            }
        ]
    },
    "invented value": {
        "claims": [
            {
                "statement": "SparseRoute improves accuracy by 7.5% on ImageNet.",
                "kind": "quantitative",
                "metric": "accuracy",
                "value": "7.5",
                "unit": "%",
                "dataset": "ImageNet",
                "comparison": None,
                "evidence": "improves accuracy by 2.5% on ImageNet",
            }
        ]
    },
}


@pytest.mark.parametrize("output", POISONED_CLAIMS.values(), ids=POISONED_CLAIMS)
def test_an_ungrounded_cached_claim_is_not_served(tmp_path, caplog, output):
    inputs = write_inputs(tmp_path)
    clean = read_records(offline_run(tmp_path, inputs, "clean").run_dir)
    cache_file = tmp_path / "cache" / "claims.jsonl"
    provenance = json.loads(b"{" + GOOD_PROVENANCE + b"}")["provenance"]
    body = json.dumps({"stage": "claims", "output": output, "provenance": provenance})[1:]
    poison(cache_file, a1_key(clean, "claims"), b"," + body.encode())
    with caplog.at_level(logging.WARNING):
        second = offline_run(tmp_path, inputs, "second")
    assert len(cache_warnings(caplog, cache_file)) == 1
    records = read_records(second.run_dir)
    assert records[0]["stages"]["claims"] == {
        **clean[0]["stages"]["claims"],
        "provenance": records[0]["stages"]["claims"]["provenance"],
    }


def test_tldr_has_a_character_limit():
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    stage = build_stages(("tldr",), PACKAGE_PROMPTS_DIR, taxonomy)["tldr"]
    abstract = "We present " + "x" * 500 + ". It works."
    with pytest.raises(OutputValidationError, match="at most 400 allowed"):
        stage.validate({"tldr": "We present " + "x" * 500 + "."}, abstract)
    with pytest.raises(OutputValidationError, match="characters"):
        stage.validate({"tldr": "x" * 10_000_000}, "x" * 10_000_000)
    ok = "We present " + "x" * 370 + "."
    assert stage.validate({"tldr": ok}, abstract) == {"tldr": ok}
    # A number copied from the abstract is bounded by it and does not count.
    number = "7" * 5000
    assert stage.validate({"tldr": number + "."}, number) == {"tldr": number + "."}
    with pytest.raises(OutputValidationError, match="characters"):
        stage.validate({"tldr": number + " " + "y" * 401 + "."}, number)
    # A number copied from the abstract is bounded by it and does not count.
    number = "7" * 5000
    assert stage.validate({"tldr": number + "."}, number) == {"tldr": number + "."}
    with pytest.raises(OutputValidationError, match="characters"):
        stage.validate({"tldr": number + " " + "y" * 401 + "."}, number)


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@pytest.fixture
def cache_writes(monkeypatch, tmp_path):
    """Replace os.write for the cache files under tmp_path/cache with `behaviour(fd, data)`."""
    real_write = os.write
    cache_dir = str((tmp_path / "cache").resolve())

    def install(behaviour):
        def fake(fd, data):
            if _fd_path(fd).startswith(cache_dir):
                return behaviour(real_write, fd, bytes(data))
            return real_write(fd, data)

        monkeypatch.setattr(os, "write", fake)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to tell the cache's writes apart")
    return install


def assert_whole_lines(cache_dir: Path) -> int:
    n = 0
    for path in cache_dir.glob("*.jsonl"):
        data = path.read_bytes()
        assert data == b"" or data.endswith(b"\n"), path
        for line in data.split(b"\n")[:-1]:
            record = json.loads(line)
            assert set(record) >= {"key", "output", "provenance"}
            n += 1
    return n


def test_short_writes_are_completed_not_torn(tmp_path, cache_writes, caplog):
    calls = []

    def at_most_7_bytes(real_write, fd, data):
        calls.append(len(data))
        return real_write(fd, data[:7])

    cache_writes(at_most_7_bytes)
    inputs = write_inputs(tmp_path)
    first = offline_run(tmp_path, inputs, "first")
    assert first.manifest.status == "ok"
    assert len(calls) > 9 * 10  # every record took many writes
    assert assert_whole_lines(tmp_path / "cache") == 9
    with caplog.at_level(logging.WARNING):
        again = offline_run(tmp_path, inputs, "again")
    assert "torn" not in caplog.text
    assert sum(s.cache_hits for s in again.manifest.counts.stages.values()) == 9


def digest(tmp_path: Path, inputs: Path, out: str):
    args = ["run", str(inputs), "--out", str(tmp_path / out),
            "--cache-dir", str(tmp_path / "cache"), "--no-progress"]  # fmt: skip
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_a_full_disk_stops_the_run_with_one_message_and_no_torn_line(tmp_path, cache_writes):
    budget = {"records": 4}

    def disk_fills_up(real_write, fd, data):
        if budget["records"] > 0:
            budget["records"] -= 1
            return real_write(fd, data)
        if len(data) > 20:  # the device takes a few bytes of the line, then is full
            return real_write(fd, data[:20])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    cache_writes(disk_fills_up)
    inputs = write_inputs(tmp_path)
    result = digest(tmp_path, inputs, "run")
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output
    assert "No space left on device" in errors[0] and str(tmp_path / "cache") in errors[0]
    assert assert_whole_lines(tmp_path / "cache") == 4  # the torn part was cut off again
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "fatal" and "No space left" in manifest["fatal_error"]

    budget["records"] = 10**9  # space freed: the same command finishes from the cache
    again = digest(tmp_path, inputs, "run")
    assert again.exit_code == 0, again.output
    assert "torn" not in again.stderr
    counts = json.loads((tmp_path / "run" / "manifest.json").read_text())["counts"]
    assert sum(s["cache_hits"] for s in counts["stages"].values()) == 4


def test_a_write_error_that_cannot_be_cut_off_is_warned_about_on_the_next_load(
    tmp_path, monkeypatch, caplog
):
    cache = StageCache(tmp_path / "tldr.jsonl")
    cache.put("a" * 64, {"output": {"tldr": "x"}, "provenance": {}})
    real_write = os.write

    def torn(fd, data):
        real_write(fd, bytes(data)[:10])
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "write", torn)
    monkeypatch.setattr(
        os, "ftruncate", lambda fd, n: (_ for _ in ()).throw(OSError(errno.EIO, "EIO"))
    )
    with pytest.raises(StorageError, match="Input/output error"), caplog.at_level(logging.WARNING):
        cache.put("b" * 64, {"output": {"tldr": "y"}, "provenance": {}})
    assert "torn line is left" in caplog.text
    monkeypatch.undo()
    cache.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = StageCache(tmp_path / "tldr.jsonl")
    assert "torn" in caplog.text and again.torn_lines == 1 and len(again) == 1
    again.close()


# The seal (pipeline/cache.py): a line written by this validation code is only parsed; any
# change to its bytes, or other validation code, brings back the full validation.


def _edit_sealed_line(cache_file: Path, key: str, old: bytes, new: bytes) -> None:
    """Change bytes inside the (sealed) line of `key`, keeping its seal as it was."""
    lines = cache_file.read_bytes().split(b"\n")
    prefix = b'{"key":"' + key.encode() + b'"'
    (i,) = [n for n, line in enumerate(lines) if line.startswith(prefix)]
    assert b',"seal":"' in lines[i] and old in lines[i]
    lines[i] = lines[i].replace(old, new)
    cache_file.write_bytes(b"\n".join(lines))


def _count_validations(monkeypatch) -> list[str]:
    from pipeline.stages.base import Stage

    seen: list[str] = []
    real = Stage.validate

    def counting(self, *args, **kwargs):
        seen.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Stage, "validate", counting)
    return seen


def test_sealed_lines_are_served_without_validating_again(tmp_path, monkeypatch):
    inputs = write_inputs(tmp_path)
    clean = read_records(offline_run(tmp_path, inputs, "clean").run_dir)
    validations = _count_validations(monkeypatch)
    again = offline_run(tmp_path, inputs, "again")
    assert validations == []  # every line's seal held
    assert again.manifest.counts.stages["claims"].cache_hits == 3
    outputs = [{n: s["output"] for n, s in r["stages"].items()} for r in clean]
    assert [
        {n: s["output"] for n, s in r["stages"].items()} for r in read_records(again.run_dir)
    ] == outputs


def test_an_edited_sealed_line_is_validated_and_refused(tmp_path, caplog, monkeypatch):
    inputs = write_inputs(tmp_path)
    clean = read_records(offline_run(tmp_path, inputs, "clean").run_dir)
    cache_file = tmp_path / "cache" / "claims.jsonl"
    assert b"2.5" in cache_file.read_bytes()
    _edit_sealed_line(cache_file, a1_key(clean, "claims"), b"2.5", b"7.5")  # an invented number
    validations = _count_validations(monkeypatch)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        second = offline_run(tmp_path, inputs, "second")
    assert validations.count("claims") >= 1  # the broken seal sent it to full validation
    assert len(cache_warnings(caplog, cache_file)) == 1
    records = read_records(second.run_dir)
    assert records[0]["stages"]["claims"]["provenance"]["cached"] is False
    assert records[0]["stages"]["claims"]["output"] == clean[0]["stages"]["claims"]["output"]


def test_other_validation_code_validates_every_line(tmp_path, monkeypatch):
    inputs = write_inputs(tmp_path)
    offline_run(tmp_path, inputs, "clean")
    import pipeline.context

    monkeypatch.setattr(pipeline.context, "validator_id", lambda: "other validation code")
    validations = _count_validations(monkeypatch)
    again = offline_run(tmp_path, inputs, "again")
    assert sorted(validations) == sorted(["tldr", "tags", "claims"] * 3)
    assert again.manifest.counts.stages["tldr"].cache_hits == 3


def test_the_seal_covers_the_key(tmp_path):
    cache = StageCache(tmp_path / "tldr.jsonl", seal_id="v1")
    k1, k2 = "a" * 64, "b" * 64
    cache.put(k1, {"stage": "tldr", "output": {"tldr": "x"}})
    assert cache.lookup(k1) == ({"key": k1, "stage": "tldr", "output": {"tldr": "x"}}, True)
    # The same bytes under another key (a line copied to another abstract) are not sealed.
    line = (tmp_path / "tldr.jsonl").read_bytes()
    (tmp_path / "tldr.jsonl").write_bytes(line + line.replace(k1.encode(), k2.encode()))
    reopened = StageCache(tmp_path / "tldr.jsonl", seal_id="v1")
    assert reopened.lookup(k1)[1] is True
    assert reopened.lookup(k2) == ({"key": k2, "stage": "tldr", "output": {"tldr": "x"}}, False)
    assert StageCache(tmp_path / "tldr.jsonl").lookup(k1)[1] is False  # no seal id: unsealed
    assert StageCache(tmp_path / "tldr.jsonl", seal_id="v2").lookup(k1)[1] is False
