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
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import InputError
from pipeline.ingest import CSV_FIELD_LIMIT, read_inputs
from pipeline.text import normalize_ws, text_hash

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
