"""Issue 9.4: every CSV writer (summaries.csv, triage csv, assignments.csv) quotes a CR or LF
inside a cell, so no row splits, and keeps the `'` guard on formula-like cells.

A bare CR is the dangerous one: with `\\n` row endings the csv module leaves a cell holding
only a CR unquoted, a spreadsheet splits the row there, and the text after the CR starts a
new cell (`=cmd|...`) without the guard.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from pipeline.cli import main

RUN = Path(__file__).parent / "data" / "run_small"
EVIL_TITLE = 'Innocent title\r=HYPERLINK("http://evil")\n@SUM(1+1)\r\n-2+3'
EVIL_DATASET = "ImageNet\r=cmd|' /C calc'!A0"
EVIL_METRIC = "\r+FID"


def poisoned_run(tmp_path: Path) -> Path:
    """run_small with CR/LF-laden, formula-like title, dataset and metric in its first record."""
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    lines = (run / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["title"] = EVIL_TITLE
    claims = first["stages"]["claims"]["output"]["claims"]
    claims[0]["dataset"] = EVIL_DATASET
    claims[0]["metric"] = EVIL_METRIC
    lines[0] = json.dumps(first, ensure_ascii=False)
    (run / "summaries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def records_outside_quotes(raw: str) -> list[str]:
    """The text between quoted cells: every CR or LF there must be part of a CRLF row end."""
    return re.sub(r'"(?:[^"]|"")*"', "", raw).split("\r\n")


def assert_safe_csv(raw: str, expect_rows: int) -> list[dict[str, str]]:
    for piece in records_outside_quotes(raw):
        assert "\r" not in piece and "\n" not in piece, repr(piece)
    # A spreadsheet's view: split rows on any line break outside quotes; none may start a
    # cell with a live formula character.
    rows = list(csv.reader(io.StringIO(raw, newline="")))
    assert len(rows) == expect_rows + 1
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "@", "\r", "\n")), repr(cell)
            if cell.startswith("-"):
                float(cell)  # a plain negative number is the only cell that may start so
    header = rows[0]
    return [dict(zip(header, row, strict=True)) for row in rows[1:]]


def test_triage_csv_quotes_cr_and_lf_and_guards_formulas(tmp_path):
    run = poisoned_run(tmp_path)
    result = CliRunner().invoke(main, ["triage", str(run), "--format", "csv", "--sort", "id"])
    assert result.exit_code == 0, result.output
    rows = assert_safe_csv(result.stdout_bytes.decode("utf-8"), expect_rows=6)  # bytes: no
    # newline translation (Result.stdout turns CRLF into LF)
    row = next(r for r in rows if r["title"].startswith("Innocent"))
    assert row["title"] == EVIL_TITLE  # the text survives, whole, in one cell
    assert row["datasets"].startswith("ImageNet\r=cmd")
    assert row["metrics"].startswith("'\r+FID")  # a cell starting with CR gets the guard


def test_summaries_csv_quotes_cr_and_lf_and_guards_formulas(tmp_path):
    from pipeline.rundir import RunReader, RunWriter

    run = poisoned_run(tmp_path)
    out = tmp_path / "rewritten"
    writer = RunWriter(out)
    for record in RunReader(run).records():
        writer.write_record(record)
    writer.close()
    raw = (out / "summaries.csv").read_bytes().decode("utf-8-sig")
    rows = assert_safe_csv(raw, expect_rows=6)
    row = next(r for r in rows if r["title"].startswith("Innocent"))
    assert row["title"] == EVIL_TITLE
    assert "ImageNet\r=cmd" in row["claims"]


def test_assignments_csv_quotes_cr_and_lf_and_guards_formulas(tmp_path):
    run = poisoned_run(tmp_path)
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text(
        "reviewers:\n"
        + "".join(
            f"  - {{id: '{rid}', name: \"{name}\", tags: [diffusion-models]}}\n"
            for rid, name in [
                ("r1", "=1+1\\rname"),
                ("r2", "Plain Name"),
                ("r3", "@evil"),
                ("r4", "Line\\nbreak"),
            ]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "assignments.csv"
    result = CliRunner().invoke(
        main,
        [
            "assign",
            str(run),
            str(reviewers),
            "--per-paper",
            "2",
            "--max-load",
            "4",
            "--out",
            str(out),
        ],  # fmt: skip
    )
    assert result.exit_code in (0, 1), result.output
    raw = out.read_bytes().decode("utf-8")
    rows = assert_safe_csv(raw, expect_rows=6 * 2)
    titles = {r["paper_title"] for r in rows}
    assert EVIL_TITLE in titles
    names = {r["reviewer_name"] for r in rows}
    assert "'=1+1\rname" in names and "'@evil" in names


def test_safe_csv_writer_writes_what_csv_writer_writes():
    """SafeCsvWriter joins rows itself (faster); the bytes must be csv.writer's, excel
    dialect with CRLF rows, for any cells: quotes, commas, CR/LF, formulas, lists, None."""
    import csv
    import io
    import random

    from pipeline.csvfile import SafeCsvWriter, csv_cell

    rng = random.Random(7)
    alphabet = list("a ,\"\r\n=-+@\t'é\u2028;1.\x00")

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))

    for _ in range(5000):
        row = [
            rng.choice([text(), text(), None, 3, -2.5, [text(), text()], (), ""])
            for _ in range(rng.randint(1, 5))
        ]
        ours, theirs = io.StringIO(), io.StringIO()
        SafeCsvWriter(ours).writerow(row)
        csv.writer(theirs, lineterminator="\r\n").writerow([csv_cell(v) for v in row])
        assert ours.getvalue() == theirs.getvalue(), row
    one_empty = io.StringIO()
    SafeCsvWriter(one_empty).writerow([""])
    assert one_empty.getvalue() == '""\r\n'
