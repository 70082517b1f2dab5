"""Issue 9.10 and the low-severity input items: every odd input has one clear outcome.

- One invalid UTF-8 byte no longer turns a whole file into cp1252 mojibake: only that byte
  becomes U+FFFD, with one warning naming the line; a file that is Latin-1 throughout (no
  valid UTF-8 multi-byte sequence at all) is still read as cp1252.
- A non-string abstract, a 5000-digit number, deep nesting, a CSV field over 64 MB: one
  message naming the file and line, exit 2.
- Raw U+2028 / U+0085 inside JSONL strings are data, not line breaks.
- NUL bytes anywhere (not only in the first 8 KB) make a file binary.
- Unreadable subdirectories are an error; symlinks out of an input folder are not followed
  (unless --follow-symlinks); unsupported files are listed in one warning and the manifest;
  a FIFO is "not a regular file".

The second red-team round (reviewer files and inputs), at the end: YAML alias bombs and
duplicate keys in every YAML the tool reads, invalid UTF-8 and absurd values in
reviewers.yaml, hostile .json files, forum URL templates, full or unmakeable output
folders, lone surrogate escapes (inputs, writers, cache), TSV quotes, Markdown code spans
and links, one warning for many empty rows, capacity advice, -v after the command, and the
input formats in `digest run --help`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.assign import Reviewer, assign, load_reviewers
from pipeline.cli import main
from pipeline.config import load_settings
from pipeline.errors import ConfigError, InputError
from pipeline.evaluation.tasks import markdown as eval_markdown
from pipeline.ingest import CSV_FIELD_LIMIT, SUPPORTED_SUFFIXES, read_inputs
from pipeline.jsonl import JsonlWriter, compact_json
from pipeline.prompts import load_template
from pipeline.report.markdown import render_markdown
from pipeline.rundir import Paper
from pipeline.rundir.models import SourceRef
from pipeline.taxonomy import load_taxonomy
from pipeline.text import normalize_ws, text_hash
from pipeline.triage import check_forum_url

A1 = "Résumé parsing with Café-Net works. It improves F1 by 3% on the Zürich corpus."
A2 = "We study naïve transformers in depth. They generalize well on 5 tasks."
A3 = "We propose a plain ASCII method. It improves accuracy by 2% on ImageNet."


def digest(tmp_path: Path, *args) -> object:
    argv = ["run", *map(str, args), "--out", str(tmp_path / "run"),
            "--cache-dir", str(tmp_path / "cache"), "--no-progress"]  # fmt: skip
    return CliRunner().invoke(main, argv)


def one_input_error(result, tmp_path: Path, *words: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word in errors[0], errors[0]
    assert not (tmp_path / "run").exists()
    return errors[0]


# --- 9.10: encodings -------------------------------------------------------------------


def test_one_invalid_byte_is_replaced_alone_and_warned_with_its_line(tmp_path, caplog):
    path = tmp_path / "mixed.txt"
    data = f"{A1}\n\n{A2}\n\n".encode() + b"A caf\xe9 abstract. It has 1 bad byte.\n\n"
    data += A3.encode() + b"\n"
    path.write_bytes(data)
    with caplog.at_level(logging.WARNING):
        result = read_inputs([path])
    texts = [a.text for a in result.abstracts]
    assert texts == [A1, A2, "A caf\ufffd abstract. It has 1 bad byte.", A3]  # no mojibake
    assert [a.id for a in result.abstracts][:2] == [text_hash(A1), text_hash(A2)]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert str(path) in warning and "invalid UTF-8 on 1 line(s) (5)" in warning


def test_many_bad_lines_are_counted_and_the_first_named(tmp_path, caplog):
    path = tmp_path / "rows.jsonl"
    lines = [json.dumps({"abstract": f"{A1} Row {i}."}, ensure_ascii=False) for i in range(30)]
    raw = [line.encode() for line in lines]
    for i in (3, 7, 8, 20, 21, 22, 23, 24, 25, 26, 27, 28):
        raw[i] = raw[i].replace(b"Row", b"R\xf0w")  # \xf0 alone: invalid
    path.write_bytes(b"\n".join(raw) + b"\n")
    with caplog.at_level(logging.WARNING):
        result = read_inputs([path])
    assert len(result.abstracts) == 30
    assert result.abstracts[0].text.startswith("Résumé")
    assert "R\ufffdw 3." in result.abstracts[3].text
    assert "invalid UTF-8 on 12 line(s) (4, 8, 9, 21, 22, 23, 24, 25, 26, ..., 29)" in caplog.text


def test_a_latin1_file_throughout_is_still_read_as_cp1252(tmp_path, caplog):
    path = tmp_path / "latin.txt"
    path.write_bytes(f"{A1}\n\n{A2}\n".encode("cp1252"))
    with caplog.at_level(logging.WARNING):
        result = read_inputs([path])
    assert [a.text for a in result.abstracts] == [A1, A2]
    assert "not valid UTF-8; read it as Latin-1/cp1252" in caplog.text


def test_an_invalid_byte_after_the_first_megabyte_does_not_flip_the_file(tmp_path, caplog):
    path = tmp_path / "big.txt"
    filler = "\n\n".join(f"{A1} Number {i}." for i in range(20_000))
    path.write_bytes(filler.encode() + b"\n\nTail caf\xe9 text here. It has 1 byte.\n")
    assert path.stat().st_size > 1 << 20
    with caplog.at_level(logging.WARNING):
        result = read_inputs([path], stream=True)
    texts = [a.text for a in result.abstracts]
    assert texts[0] == f"{A1} Number 0." and texts[-1] == "Tail caf\ufffd text here. It has 1 byte."
    assert "line(s) (40001)" in caplog.text


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64])
def test_multibyte_characters_cut_by_the_read_chunks_are_not_bad_bytes(
    tmp_path, caplog, monkeypatch, chunk
):
    import pipeline.ingest as ingest

    monkeypatch.setattr(ingest, "_CHUNK", chunk)
    path = tmp_path / "multi.txt"
    lines = [A1, "中文摘要。我们提出一种方法。", "Emoji 🧪 test, résumé.", A2]
    path.write_bytes(b"\xef\xbb\xbf" + "\n\n".join(lines).encode() + b"\n\nBad \xe9 end.\n")
    with caplog.at_level(logging.WARNING):
        result = read_inputs([path])
    assert [a.text for a in result.abstracts] == [*lines, "Bad \ufffd end."]
    assert "invalid UTF-8 on 1 line(s) (9)" in caplog.text


def test_a_bom_and_crlf_file_stays_utf8(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfid,abstract\r\n1," + A1.encode() + b"\r\n")
    assert [a.text for a in read_inputs([path]).abstracts] == [A1]


# --- malformed JSONL / CSV --------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind"),
    [("5", "a number"), ('["x"]', "a list"), ('{"text": "x"}', "an object"), ("true", "a boolean")],
)
def test_a_non_string_abstract_names_the_file_and_line(tmp_path, value, kind):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"abstract": A1}) + "\n" + '{"abstract": ' + value + "}\n")
    line = one_input_error(digest(tmp_path, path), tmp_path, f"{path}:2", "must be a string", kind)
    assert "empty" not in line


def test_a_null_abstract_is_an_empty_row_skipped(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"abstract": A1}) + "\n" + '{"abstract": null}\n')
    result = read_inputs([path])
    assert result.skipped == [f"{path}#2: empty abstract"]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"abstract": "x", "n": ' + "9" * 5000 + "}", "digits"),
        ('{"abstract": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"abstract": "x", "n": ' + '{"a": ' * 50_000 + "1" + "}" * 50_001, "nested too deeply"),
    ],
    ids=["5000-digit integer", "deep list", "deep object"],
)
def test_hostile_json_lines_are_one_message(tmp_path, line, words):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"abstract": A1}) + "\n" + line + "\n")
    one_input_error(digest(tmp_path, path), tmp_path, f"{path}:2", "invalid JSON", words)


def test_a_csv_field_over_64_mb_is_one_message(tmp_path):
    path = tmp_path / "huge.csv"
    with path.open("wb") as fh:
        fh.write(b'id,abstract\n1,"' + A1.encode() + b'"\n2,"')
        fh.write(b"a" * (CSV_FIELD_LIMIT + 1))
        fh.write(b'"\n')
    one_input_error(digest(tmp_path, path), tmp_path, f"{path}:", "field larger than", "64 MB")


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c"])
def test_raw_line_separators_inside_jsonl_strings_are_data(tmp_path, char):
    path = tmp_path / "rows.jsonl"
    text = f"We propose a method{char}that improves accuracy by 3% on ImageNet."
    row = json.dumps({"abstract": text, "title": f"T{char}x"}, ensure_ascii=False)
    path.write_text(row + "\r\n" + json.dumps({"abstract": A3}) + "\n", encoding="utf-8")
    result = read_inputs([path])
    assert [a.text for a in result.abstracts] == [text, A3]
    assert result.abstracts[0].title == normalize_ws(f"T{char}x")  # titles are display text
    streamed = read_inputs([path], stream=True)
    assert [a.text for a in streamed.abstracts] == [text, A3]


def test_the_tools_own_summaries_with_u2028_read_back(tmp_path):
    path = tmp_path / "rows.jsonl"
    text = "We propose a method\u2028that improves accuracy by 3% on ImageNet.\u0085 It works."
    path.write_text(json.dumps({"abstract": text}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert digest(tmp_path, path).exit_code == 0
    own = tmp_path / "run" / "summaries.jsonl"
    assert "\u2028" in own.read_text(encoding="utf-8")  # written raw
    again = CliRunner().invoke(
        main,
        [
            "run",
            str(own),
            "--out",
            str(tmp_path / "again"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-progress",
        ],  # fmt: skip
    )
    assert again.exit_code == 0, again.output
    triage = CliRunner().invoke(main, ["triage", str(tmp_path / "again"), "--format", "jsonl"])
    assert triage.exit_code == 0, triage.output
    assert len(triage.stdout.splitlines()) == 1


# --- binary, directories, symlinks, FIFOs ----------------------------------------------


def test_nul_bytes_after_the_first_8_kb_make_a_file_binary(tmp_path):
    path = tmp_path / "late.txt"
    path.write_bytes(("\n\n".join([A3] * 400)).encode() + b"\n\n\x00\x00\x00tail\n")
    assert path.stat().st_size > 3 * 8192
    one_input_error(digest(tmp_path, path), tmp_path, str(path), "not a text file")


def test_nul_bytes_after_the_first_megabyte_too(tmp_path):
    path = tmp_path / "late.jsonl"
    row = json.dumps({"abstract": A3}) + "\n"
    path.write_bytes((row * 20_000).encode() + b'{"abstract": "a\x00b"}\n')
    assert path.stat().st_size > 1 << 20
    one_input_error(digest(tmp_path, path), tmp_path, str(path), "binary")


def test_an_unreadable_subdirectory_is_an_error(tmp_path, monkeypatch):
    import pipeline.ingest as ingest

    root = tmp_path / "in"
    (root / "locked").mkdir(parents=True)
    (root / "a.txt").write_text(A1)
    (root / "locked" / "b.txt").write_text(A2)
    real_scandir = os.scandir

    def scandir(path):  # what the kernel says for a folder without r/x permission
        if Path(path) == root / "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(ingest.os, "scandir", scandir)
    with pytest.raises(InputError, match="cannot read directory .*locked: Permission denied"):
        read_inputs([root])


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads folders without permission bits")
def test_an_unreadable_subdirectory_is_an_error_for_real(tmp_path):
    root = tmp_path / "in"
    (root / "locked").mkdir(parents=True)
    (root / "a.txt").write_text(A1)
    (root / "locked" / "b.txt").write_text(A2)
    (root / "locked").chmod(0)
    try:
        one_input_error(digest(tmp_path, root), tmp_path, "locked", "Permission denied")
    finally:
        (root / "locked").chmod(0o755)


def test_symlinks_out_of_the_input_folder_are_not_followed(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0:root:/root:/bin/bash. It is a password file with 1 entry.")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "c.txt").write_text(A3)
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.txt").write_text(A1)
    (root / "x.txt").symlink_to(outside)
    (root / "inside.txt").symlink_to(root / "a.txt")  # stays in the folder: read
    (root / "dir").symlink_to(other, target_is_directory=True)
    result = digest(tmp_path, root)
    assert result.exit_code == 0, result.output
    records = [
        json.loads(x) for x in (tmp_path / "run" / "summaries.jsonl").read_text().splitlines()
    ]
    assert [r["abstract"] for r in records] == [A1]
    assert len(records[0]["sources"]) == 2  # a.txt and inside.txt
    assert "root:x" not in (tmp_path / "run" / "summaries.jsonl").read_text()
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1 and "x.txt: symlink to" in warnings[0]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert [entry.split(":")[0] for entry in manifest["ignored_files"]] == [
        str(root / "dir"),
        str(root / "x.txt"),
    ]
    # Asked for: followed.
    followed = CliRunner().invoke(
        main,
        [
            "run",
            str(root),
            "--follow-symlinks",
            "--out",
            str(tmp_path / "f"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-progress",
        ],  # fmt: skip
    )
    # A password file supports no tag: its tags stage fails (exit 1), the rest is read.
    assert followed.exit_code == 1, followed.output
    assert "1 stage result(s) failed in 1 abstract(s)" in followed.output
    texts = [
        json.loads(x)["abstract"]
        for x in (tmp_path / "f" / "summaries.jsonl").read_text().splitlines()
    ]
    assert sorted(texts) == sorted([A1, A3, outside.read_text()])


def test_a_symlink_loop_in_a_folder_is_ignored_with_the_rest(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.txt").write_text(A1)
    (root / "l1.txt").symlink_to(root / "l2.txt")
    (root / "l2.txt").symlink_to(root / "l1.txt")
    (root / "gone.txt").symlink_to(root / "missing.txt")
    result = read_inputs([root])
    assert [a.text for a in result.abstracts] == [A1]
    assert sorted(result.ignored) == [
        f"{root / 'gone.txt'}: broken symlink",
        f"{root / 'l1.txt'}: symlink loop",
        f"{root / 'l2.txt'}: symlink loop",
    ]


def test_unsupported_files_in_a_folder_are_listed_in_one_warning_and_the_manifest(tmp_path):
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text(A1)
    (root / "paper.pdf").write_bytes(b"%PDF-1.7")
    (root / "sub" / "notes.md").write_text("# notes")
    (root / "sub" / "b.jsonl").write_text(json.dumps({"abstract": A2}) + "\n")
    (root / ".hidden.pdf").write_bytes(b"x")  # hidden: silently skipped, as before
    result = digest(tmp_path, root)
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1
    assert "ignored 2 file(s)" in warnings[0] and "paper.pdf" in warnings[0]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["ignored_files"] == [
        f"{root / 'paper.pdf'}: unsupported file type",
        f"{root / 'sub' / 'notes.md'}: unsupported file type",
    ]
    assert manifest["counts"]["unique"] == 2


def test_a_fifo_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    line = one_input_error(digest(tmp_path, fifo), tmp_path, str(fifo), "not a regular file")
    assert "no such file" not in line
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.txt").write_text(A1)
    os.mkfifo(root / "p.txt")
    result = read_inputs([root])  # never opened (it would block)
    assert result.ignored == [f"{root / 'p.txt'}: not a regular file"]


def test_a_missing_path_is_still_no_such_file(tmp_path):
    one_input_error(digest(tmp_path, tmp_path / "nope.txt"), tmp_path, "no such file")
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "gone.txt")
    one_input_error(digest(tmp_path, tmp_path / "dangling.txt"), tmp_path, "broken symlink")


# --- second red-team round: reviewer files, YAML, hostile inputs, Markdown ----------------

RUN_SMALL = Path(__file__).parent / "data" / "run_small"
# Nested anchors in a reviewer's keywords: 9 levels of 9 aliases each, 9**9 (387 million)
# strings once expanded.
YAML_BOMB = "\n".join(
    [
        "reviewers:",
        "  - id: a",
        "    keywords:",
        '    - &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"    - &{b} [{','.join([f'*{a}'] * 9)}]"
            for a, b in zip("abcdefgh", "bcdefghi", strict=True)
        ),
        "  - {id: b}",
    ]
)


def run_copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN_SMALL, run)
    return run


def assign_cli(run: Path, reviewers: Path, *args: str):
    return CliRunner().invoke(main, ["assign", str(run), str(reviewers), *args])


def one_error_line(result) -> str:
    """Exit 2, no traceback, and exactly one line on stderr: the error."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_a_yaml_bomb_in_reviewers_is_refused_at_once_naming_the_file_and_line(tmp_path):
    assert len(YAML_BOMB.encode()) < 700
    path = tmp_path / "reviewers.yaml"
    path.write_text(YAML_BOMB, encoding="utf-8")
    line = one_error_line(assign_cli(run_copy(tmp_path), path, "--per-paper", "1"))
    assert f"{path}:" in line and "aliases repeat more than 100,000 values" in line
    assert not (tmp_path / "run" / "assignments.csv").exists()


@pytest.mark.parametrize("levels", [5, 6])
def test_aliases_are_bounded_by_what_they_repeat(tmp_path, levels):
    # 5 levels repeat 9**4 + 9**3 + ... = 7,380 lists of 9: allowed; 6 levels, 66,429 lists
    # of 9 values, 600k values in all: refused.
    text = "\n".join(YAML_BOMB.splitlines()[: 3 + levels]) + "\n"
    path = tmp_path / "reviewers.yaml"
    path.write_text(text, encoding="utf-8")
    if levels == 5:
        (reviewer,) = load_reviewers(path, None)
        assert len(reviewer.keywords) == 5  # each nested list is one keyword string
        return
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:\d+: .*alias bomb"):
        load_reviewers(path, None)


def test_plain_anchors_and_merge_keys_still_work_and_a_self_alias_is_refused(tmp_path):
    path = tmp_path / "reviewers.yaml"
    path.write_text(
        "reviewers:\n  - &a {id: a, max_load: 2, keywords: [graph]}\n"
        "  - {<<: *a, id: b, max_load: 3}\n",
        encoding="utf-8",
    )
    a, b = load_reviewers(path, None)
    assert (a.max_load, a.keywords, b.max_load, b.keywords) == (2, ("graph",), 3, ("graph",))
    path.write_text("reviewers:\n  - {id: a, keywords: &x [*x]}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{re.escape(str(path))}:2: .*refers to the value"):
        load_reviewers(path, None)


def test_a_duplicate_conflicts_key_is_an_error_not_a_dropped_conflict(tmp_path):
    path = tmp_path / "reviewers.yaml"
    path.write_text(
        "reviewers:\n"
        "  - id: a\n"
        "    conflicts: [39954d708d621dc0]\n"
        "    conflicts: []\n"
        "  - {id: b}\n",
        encoding="utf-8",
    )
    line = one_error_line(assign_cli(run_copy(tmp_path), path, "--per-paper", "1"))
    assert f"{path}:4:" in line and "duplicate key 'conflicts' (first on line 3)" in line
    assert not (tmp_path / "run" / "assignments.csv").exists()


def _load_config(path: Path) -> object:
    return load_settings(path, env={})


def _load_taxonomy(path: Path) -> object:
    return load_taxonomy(path)


def _load_prompt(path: Path) -> object:
    return load_template(path.parent, path.stem)


def _load_reviewers(path: Path) -> object:
    return load_reviewers(path, None)


@pytest.mark.parametrize(
    ("name", "load", "text"),
    [
        ("config.yaml", _load_config, "provider: offline\nmax_reasks: 1\nprovider: openai\n"),
        (
            "taxonomy.yaml",
            _load_taxonomy,
            "version: 1\nfacets:\n  - id: m\n    label: M\n    tags: []\n    label: N\n",
        ),
        ("tldr.yaml", _load_prompt, "name: tldr\nsystem: s\nuser: '{abstract}'\nsystem: t\n"),
        ("reviewers.yaml", _load_reviewers, "reviewers: [{id: a}]\nreviewers: []\n"),
    ],
    ids=["config", "taxonomy", "prompt", "reviewers"],
)
def test_duplicate_keys_are_refused_in_every_yaml_the_tool_reads(tmp_path, name, load, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:\d+: .*duplicate key"):
        load(path)


@pytest.mark.parametrize(
    ("name", "load"),
    [("config.yaml", _load_config), ("reviewers.yaml", _load_reviewers)],
    ids=["config", "reviewers"],
)
def test_invalid_utf8_in_a_yaml_file_is_one_message_with_its_line(tmp_path, name, load):
    path = tmp_path / name
    path.write_bytes(b"# settings\nreviewers: []\nname: caf\xe9\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:3: not valid UTF-8"):
        load(path)


def test_invalid_utf8_in_reviewers_is_exit_2_from_assign(tmp_path):
    path = tmp_path / "reviewers.yaml"
    path.write_bytes(b"reviewers:\n  - id: a\n    name: Ren\xe9\n  - {id: b}\n")
    line = one_error_line(assign_cli(run_copy(tmp_path), path, "--per-paper", "1"))
    assert f"{path}:3: not valid UTF-8" in line


@pytest.mark.parametrize("value", ["1e23", "1.0e+23", "100000000000000000000000", "-1"])
def test_an_absurd_max_load_is_one_line_naming_the_file_and_the_field(tmp_path, value):
    path = tmp_path / "reviewers.yaml"
    path.write_text(f"reviewers:\n  - {{id: a}}\n  - {{id: b, max_load: {value}}}\n")
    line = one_error_line(assign_cli(run_copy(tmp_path), path, "--per-paper", "1"))
    assert f"{path}:3: reviewers.1.max_load: " in line


def test_an_absurd_max_load_flag_is_a_usage_error(tmp_path):
    path = tmp_path / "reviewers.yaml"
    path.write_text("reviewers:\n  - {id: a}\n")
    res = assign_cli(run_copy(tmp_path), path, "--max-load", str(10**23))
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "--max-load" in res.stderr and not (tmp_path / "run" / "assignments.csv").exists()


DIGITS = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000
ARRAY = '[{{"abstract": "{}", "n": {}}}]'
LINES = '{{"abstract": "{}"}}\n{{"abstract": "x", "n": {}}}\n'
ROW = '{{"title": "{}", "abstract": "{}"}}\n'


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (ARRAY.format(A1, DIGITS), "digits"),
        (ARRAY.format(A1, DEEP), "nested too"),
        (LINES.format(A1, DIGITS), "digits"),
        (LINES.format(A1, DEEP), "nested too"),
    ],
    ids=["array 5000-digit", "array deep", "lines 5000-digit", "lines deep"],
)
def test_hostile_json_files_are_one_message(tmp_path, content, words):
    path = tmp_path / "papers.json"
    path.write_text(content, encoding="utf-8")
    one_input_error(digest(tmp_path, path), tmp_path, str(path), "invalid JSON", words)


@pytest.mark.parametrize(
    "template",
    [
        "https://x/{id}{id.foo}",
        "https://x/{id}{id.__class__.__name__}",
        "https://x/{id:>999999999}",
        "https://x/{id!r}",
        "https://x/{id[0]}",
        "https://x/{id}{0}",
        "https://x/{id}{}",
        "https://x/{id}{",
        "https://x/{{id}}",
    ],
)
@pytest.mark.parametrize("command", ["report", "triage", "assign"])
def test_a_forum_url_template_with_more_than_id_is_refused_at_option_parse(
    tmp_path, template, command
):
    run = run_copy(tmp_path)
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text("reviewers:\n  - {id: a}\n  - {id: b}\n")
    args = [command, str(run), *([str(reviewers)] if command == "assign" else [])]
    res = CliRunner().invoke(main, [*args, "--forum-url", template])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)
    assert "--forum-url" in res.stderr and "forum URL template" in res.stderr
    assert sorted(p.name for p in run.iterdir()) == sorted(p.name for p in RUN_SMALL.iterdir())


def test_the_forum_url_fields_that_are_allowed():
    template = check_forum_url("https://x/f?id={id}&n={number}#{{top}}")
    paper = Paper(id="0123456789abcdef", title="T", abstract="", number="7", forum="rJlnfaNYvB")
    md = render_markdown([paper], None, title="D", forum=template)
    assert "[forum](https://x/f?id=rJlnfaNYvB&n=7#%7Btop%7D)" in md


def _full_disk_run(tmp_path: Path, *args: str, room: int = 600) -> subprocess.CompletedProcess:
    """`digest ARGS` in a process that can write at most `room` bytes per file (what a full
    disk looks like to a writer: EFBIG instead of ENOSPC, same path through the code)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (room, resource.RLIM_INFINITY))

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=tmp_path,
        env=env,
        preexec_fn=limit,  # noqa: PLW1509 - only sets a limit and a signal disposition
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_assign_into_a_full_folder_leaves_no_partial_csv(tmp_path):
    run = run_copy(tmp_path)
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text("reviewers:\n  - {id: a}\n  - {id: b}\n")
    res = _full_disk_run(tmp_path, "assign", str(run), str(reviewers), "--per-paper", "2")
    assert res.returncode == 2, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in res.stderr
    assert f"cannot write {run / 'assignments.csv'}: File too large" in errors[0]
    assert sorted(p.name for p in run.iterdir()) == sorted(p.name for p in RUN_SMALL.iterdir())


def test_report_md_into_a_full_folder_leaves_no_temp_file(tmp_path):
    run = run_copy(tmp_path)
    res = _full_disk_run(tmp_path, "report", str(run), "--format", "md")
    assert res.returncode == 2, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in res.stderr
    assert f"cannot write {run / 'report.md'}" in errors[0]
    assert sorted(p.name for p in run.iterdir()) == sorted(p.name for p in RUN_SMALL.iterdir())


@pytest.mark.parametrize("command", ["report", "assign", "triage"])
def test_an_output_folder_that_cannot_be_made_is_one_message(tmp_path, command):
    run = run_copy(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder\n")
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text("reviewers:\n  - {id: a}\n  - {id: b}\n")
    out = blocker / "sub" / "out.txt"
    args = {
        "report": ["--format", "md"],
        "assign": [str(reviewers), "--per-paper", "1"],
        "triage": [],
    }[command]
    res = CliRunner().invoke(main, [command, str(run), *args, "--out", str(out)])
    line = one_error_line(res)
    assert f"cannot write {blocker / 'sub'}" in line


LONE = "\\ud800"  # a JSON escape of a lone high surrogate: not a character


def _rows_with_lone_surrogate(n: int, at: int) -> list[str]:
    rows = []
    for i in range(1, n + 1):
        title = f"Paper {i}" + (f" {LONE}x" if i == at else "")
        abstract = (
            f"We propose method {i}{LONE if i == at else ''}. It improves F1 by {i}% on SQuAD."
        )
        rows.append(ROW.format(title, abstract).strip())
    return rows


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_lone_surrogate_escape_in_row_41_is_replaced_and_warned_not_a_crash(
    tmp_path, suffix, caplog
):
    rows = _rows_with_lone_surrogate(45, 41)
    path = tmp_path / f"rows{suffix}"
    text = "\n".join(rows) + "\n" if suffix == ".jsonl" else "[\n" + ",\n".join(rows) + "\n]\n"
    path.write_text(text, encoding="utf-8")
    caplog.set_level(logging.WARNING)
    result = digest(tmp_path, path)
    assert result.exit_code == 0, result.output
    warned = [r.getMessage() for r in caplog.records if "surrogate" in r.getMessage()]
    line = 41 if suffix == ".jsonl" else 42
    assert warned == [
        f"{path}: a lone UTF-16 surrogate escape (\\ud800 ...) on 1 line(s) ({line}); "
        "each is read as U+FFFD"
    ]
    records = [json.loads(x) for x in (tmp_path / "run" / "summaries.jsonl").open(encoding="utf-8")]
    assert len(records) == 45
    assert records[40]["title"] == "Paper 41 \ufffdx"
    assert records[40]["abstract"].startswith("We propose method 41\ufffd.")
    for out in (tmp_path / "run").iterdir():
        out.read_bytes().decode("utf-8")  # every file the run wrote is valid UTF-8
        assert b"\\ud800" not in out.read_bytes(), out


def test_surrogate_pairs_and_escaped_backslashes_are_not_lone_surrogates(tmp_path, caplog):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        ROW.format("Smile \\ud83d\\ude00", A1) + ROW.format("A literal \\\\ud800 in text", A2),
        encoding="utf-8",
    )
    caplog.set_level(logging.WARNING)
    result = read_inputs([path])
    assert [a.title for a in result.abstracts] == ["Smile \U0001f600", "A literal \\ud800 in text"]
    assert not [r for r in caplog.records if "surrogate" in r.getMessage()]


def test_nothing_the_jsonl_writers_write_holds_a_lone_surrogate(tmp_path):
    path = tmp_path / "out.jsonl"
    with path.open("wb") as fh:
        writer = JsonlWriter(fh)
        writer.write({"title": "a\ud800b", "k\udc00": ["\udfff"]})
        writer.write(SourceRef(file="f\ud800.txt", position=1))
        writer.close()
    lines = [json.loads(x) for x in path.read_bytes().decode("utf-8").splitlines()]
    assert lines[0] == {"title": "a\ufffdb", "k\ufffd": ["\ufffd"]}
    assert lines[1]["file"] == "f\ufffd.txt"
    assert json.loads(compact_json({"x": "\ud800"})) == {"x": "\ufffd"}


def test_a_cache_line_with_a_lone_surrogate_is_a_miss_not_a_crash(tmp_path, caplog):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"abstract": A1}) + "\n", encoding="utf-8")
    assert digest(tmp_path, path).exit_code == 0
    cache_file = tmp_path / "cache" / "tldr.jsonl"
    (line,) = cache_file.read_bytes().splitlines()
    poisoned = line.replace(b'"backend":"offline"', b'"backend":"offline\\ud800"', 1)
    assert poisoned != line
    cache_file.write_bytes(poisoned + b"\n")
    caplog.set_level(logging.WARNING)
    for _ in range(2):  # the run that meets the line, and the run after it
        shutil.rmtree(tmp_path / "run")
        result = digest(tmp_path, path)
        assert result.exit_code == 0, result.output
        summaries = (tmp_path / "run" / "summaries.jsonl").read_bytes()
        assert b"\\ud800" not in summaries and b"\xef\xbf\xbd" not in summaries
    warned = [r.getMessage() for r in caplog.records if "unreadable record" in r.getMessage()]
    assert len(warned) == 1 and str(cache_file) in warned[0]


def test_a_stray_quote_in_a_tsv_title_swallows_no_rows(tmp_path):
    path = tmp_path / "papers.tsv"
    rows = ["id\ttitle\tabstract"]
    for i in range(1, 11):
        title = '"Quoted start of title 3' if i == 3 else f"Title {i}"
        rows.append(f"p{i}\t{title}\tWe propose method {i}. It improves F1 by {i}% on SQuAD.")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = read_inputs([path])
    assert result.n_inputs == 10
    titles = [a.title for a in result.abstracts]
    assert titles[2] == '"Quoted start of title 3' and len(titles) == 10


def test_a_tsv_cell_quoted_as_a_whole_loses_its_quotes(tmp_path):
    path = tmp_path / "papers.tsv"
    path.write_text(
        '"id"\t"title"\tabstract\n'
        f'p1\t"A title, with ""quotes"""\t"{A1}"\n'
        f'p2\t"half quoted\t{A2}\n',
        encoding="utf-8",
    )
    first, second = read_inputs([path]).abstracts
    assert (first.title, first.text) == ('A title, with "quotes"', A1)
    assert (second.title, second.text) == ('"half quoted', A2)
    assert first.sources[0].paper_id == "p1"


def _code_spans(line: str) -> tuple[list[str], str]:
    """CommonMark code spans of one line, and the line with them cut out."""
    spans, rest, i = [], [], 0
    while i < len(line):
        if line[i] != "`":
            rest.append(line[i])
            i += 1
            continue
        n = len(line[i:]) - len(line[i:].lstrip("`"))
        close = re.compile(rf"(?<!`)`{{{n}}}(?!`)").search(line, i + n)
        if close is None:
            rest.append(line[i : i + n])
            i += n
            continue
        body = line[i + n : close.start()]
        if len(body) > 2 and body[0] == body[-1] == " ":
            body = body[1:-1]
        spans.append(body)
        i = close.end()
    return spans, "".join(rest)


@pytest.mark.parametrize(
    "paper_id",
    [
        "x` <img src=x onerror=alert(1)> [click](javascript:alert(1)) `",
        "``double`` and `single`",
        "`",
        "ends with a tick`",
    ],
)
def test_a_paper_id_with_backticks_stays_inside_its_code_span(paper_id):
    paper = Paper(id="0123456789abcdef", title="T", abstract="", paper_id=paper_id)
    md = render_markdown([paper], None, title="D")
    (line,) = [x for x in md.splitlines() if x.startswith("- **T**")]
    spans, outside = _code_spans(line)
    assert spans == [paper_id]
    assert "<" not in outside and "](" not in outside


def test_the_forum_link_destination_ends_where_the_url_ends():
    paper = Paper(id="0123456789abcdef", title="T", abstract="", paper_id="p", forum="rJlnfaNYvB")
    template = "https://x/{id}) <img src=x onerror=alert(1)> [y](javascript:alert(1)"
    md = render_markdown([paper], None, title="D", forum=check_forum_url(template))
    (link,) = re.findall(r"\[forum\]\(([^)]*)\)", md)
    assert (
        link
        == "https://x/rJlnfaNYvB%29%20%3Cimg%20src=x%20onerror=alert%281%29%3E%20%5By%5D%28javascript:alert%281%29"
    )
    assert "<img" not in md


def test_eval_md_escapes_the_system_name():
    result = {
        "task": "tags",
        "abstracts": 1,
        "system": "openai (<img src=x onerror=alert(1)> *m*)",
        "scores": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "primary_accuracy": 1.0,
                   "primary_required": 1.0, "predicted": 1, "wrong": 0, "missed": 0},
    }  # fmt: skip
    md = eval_markdown(result)
    assert "<img" not in md and "&lt;img" in md and "\\*m\\*" in md


def test_many_empty_rows_make_one_warning_with_a_count(tmp_path, caplog):
    path = tmp_path / "rows.jsonl"
    empty = json.dumps({"abstract": ""}) + "\n"
    path.write_text(json.dumps({"abstract": A1}) + "\n" + empty * 20_000, encoding="utf-8")
    caplog.set_level(logging.WARNING)
    result = read_inputs([path])
    assert len(result.skipped) == 20_000
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        f"skipped 20000 row(s) with an empty abstract (counted in manifest.json): {path}#2; "
    )
    assert warnings[0].endswith(f"{path}#11; and 19990 more")


def test_capacity_advice_names_the_reviewers_own_max_load_when_it_binds(tmp_path):
    run = run_copy(tmp_path)
    path = tmp_path / "reviewers.yaml"
    path.write_text("reviewers:\n  - {id: a, max_load: 2}\n  - {id: b, max_load: 2}\n")
    result = assign_cli(run, path, "--per-paper", "1", "--max-load", "50")
    assert result.exit_code == 1 and "Traceback" not in result.output  # 4 assigned, some short
    (line,) = [x for x in result.stdout.splitlines() if "reviewing capacity" in x]
    assert "raise --max-load" not in line
    assert "every reviewer has their own max_load in the reviewers file" in line
    assert "raise those by 2 in all, or add reviewers" in line


def test_capacity_advice_with_some_own_max_loads_counts_only_the_others():
    papers = [Paper(id=f"p{i}", title=None, abstract="") for i in range(5)]
    reviewers = [Reviewer(id="a", max_load=1), Reviewer(id="b"), Reviewer(id="c")]
    # 10 slots needed; a gives 1, so b and c need 9 between them: --max-load 5.
    note = assign(papers, reviewers, per_paper=2, max_load=3).capacity_short or ""
    assert "raise --max-load to at least 5 (it sets the load of the 2 reviewer(s)" in note
    assert "raise the max_load of the other 1 in the reviewers file" in note


@pytest.mark.parametrize("flags", [["-v"], ["-vv"], ["--verbose", "--verbose"]])
def test_verbose_is_accepted_after_the_subcommand_too(tmp_path, flags):
    path = tmp_path / "a.txt"
    path.write_text(A1 + "\n")
    after = digest(tmp_path, path, *flags)
    assert after.exit_code == 0, after.output
    shutil.rmtree(tmp_path / "run")
    before = CliRunner().invoke(
        main,
        [*flags, "run", str(path), "--out", str(tmp_path / "run"),
         "--cache-dir", str(tmp_path / "cache"), "--no-progress"],
    )  # fmt: skip
    assert before.exit_code == 0, before.output
    debug = [x for x in after.stderr.splitlines() if x.startswith("DEBUG")]
    assert bool(debug) == (flags != ["-v"])
    assert logging.getLogger().level == (logging.INFO if flags == ["-v"] else logging.DEBUG)


def test_verbose_after_a_batch_subcommand_is_accepted():
    res = CliRunner().invoke(main, ["batch", "status", "-v", "--help"])
    assert res.exit_code == 0, res.output
    assert "--verbose" in res.stdout


def test_run_help_lists_every_input_format_the_reader_accepts():
    res = CliRunner().invoke(main, ["run", "--help"])
    text = " ".join(res.stdout.split())
    for suffix in SUPPORTED_SUFFIXES:
        assert suffix in text, suffix
    assert "OpenReview" in text and "director" in text
