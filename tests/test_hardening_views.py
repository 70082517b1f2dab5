"""Issue 9.11 and the view-side low items.

- Escape sequences (ESC, BEL, OSC, 8-bit CSI, bidi overrides) from titles, file names or
  paths never reach the terminal: triage table, CLI error messages, warnings, run summary,
  the Markdown report (on stdout and in report.md).
- A run folder whose records have the wrong shape (`stages` a list) is one message, exit 2,
  in triage, report, eval and assign.
- A crashed, interrupted or fatal run folder is reported as incomplete by triage, report,
  eval and assign; report.html carries the banner.
- A kill while report.html is written leaves a `.report.html.<pid>.tmp`: the next page
  written there removes it (only when that pid no longer runs).
- `stages: 5` / `stages: null` in config.yaml: one message, exit 2.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from samples import SHORT_ABSTRACT

from pipeline.cli import main
from pipeline.text import terminal_safe

RUN = Path(__file__).parent / "data" / "run_small"
EXAMPLE_REVIEWERS = Path(__file__).resolve().parents[1] / "examples" / "reviewers.yaml"


def reviewers_without_conflicts(folder: Path) -> Path:
    """The example reviewers, minus their conflicts (which name papers of another run)."""
    import yaml

    data = yaml.safe_load(EXAMPLE_REVIEWERS.read_text(encoding="utf-8"))
    for reviewer in data["reviewers"]:
        reviewer.pop("conflicts", None)
    path = folder / "reviewers.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mRED\x1b[0m\x9b31m\u202eevil\x08\x7f"
DANGEROUS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def copy_run(tmp_path: Path, name: str = "run") -> Path:
    run = tmp_path / name
    shutil.copytree(RUN, run)
    return run


def edit_first_record(run: Path, edit) -> None:
    path = run / "summaries.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    edit(record)
    lines[0] = json.dumps(record, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def set_status(run: Path, status: str | None, fatal: str | None = None) -> None:
    path = run / "manifest.json"
    if status is None:
        path.unlink()
        return
    manifest = json.loads(path.read_text())
    manifest["status"], manifest["fatal_error"] = status, fatal
    path.write_text(json.dumps(manifest))


# --- 9.11 ------------------------------------------------------------------------------


def test_terminal_safe_drops_controls_and_keeps_text():
    # Whole ESC sequences go (their parameters too); a lone 8-bit CSI only loses itself.
    assert terminal_safe(f"Title {ESCAPES} end") == "Title RED31mevil end"
    assert terminal_safe("a\tb\r\nc\u2028d") == "a b  c d"
    assert terminal_safe("a\r\nb", keep_newlines=True) == "a \nb"
    assert terminal_safe("Ünïcödé 中文 — “ok”") == "Ünïcödé 中文 — “ok”"


def test_triage_table_prints_no_escape_sequence(tmp_path):
    run = copy_run(tmp_path)
    edit_first_record(run, lambda r: r.update(title=f"Latent {ESCAPES} Flow"))
    result = invoke("triage", run, "--sort", "id")
    assert result.exit_code == 0, result.output
    assert not DANGEROUS.search(result.stdout.replace("\n", "")), repr(result.stdout)
    assert "Latent RED" in result.stdout and "owned" not in result.stdout  # sequences dropped
    # The data formats keep the title as it is (JSON escapes it; CSV quotes it).
    jsonl = invoke("triage", run, "--format", "jsonl")
    assert "\\u001b]0;owned\\u0007" in jsonl.stdout


def test_markdown_report_carries_no_escape_sequence(tmp_path):
    run = copy_run(tmp_path)

    def poison(record):
        record["title"] = f"Latent {ESCAPES} Flow"
        record["sources"][0]["paper_id"] = f"P{ESCAPES}1"  # printed as is, in backticks
        tldr = record["stages"]["tldr"]["output"]
        tldr["tldr"] = f"{ESCAPES} one step \x00\x1c\x85 generators"
        claim = record["stages"]["claims"]["output"]["claims"][0]
        claim["statement"], claim["metric"] = f"FID {ESCAPES} 2.31", f"F{ESCAPES}ID"

    edit_first_record(run, poison)
    stdout = invoke("report", run, "--format", "md", "--out", "-")
    assert stdout.exit_code == 0, stdout.output
    assert invoke("report", run, "--format", "md").exit_code == 0
    # Not on the terminal, and not in report.md either (a Markdown file is viewed with cat).
    for text in (stdout.stdout, (run / "report.md").read_text(encoding="utf-8")):
        assert not DANGEROUS.search(text), repr(text)
        assert "Latent RED31mevil Flow" in text and "owned" not in text
        assert "\n## " in text  # the document's own line breaks stay


def test_cli_error_messages_print_no_escape_sequence(tmp_path):
    bad = tmp_path / f"evil{ESCAPES}.txt"
    result = invoke("run", bad, "--out", tmp_path / "run", "--no-progress")
    assert result.exit_code == 2
    assert "error:" in result.stderr and "no such file" in result.stderr
    assert not DANGEROUS.search(result.stderr.replace("\n", "")), repr(result.stderr)


def test_warnings_and_the_run_summary_print_no_escape_sequence(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.txt").write_text(SHORT_ABSTRACT)
    (inputs / f"notes{ESCAPES}.pdf").write_bytes(b"%PDF")  # named in a warning
    out = tmp_path / f"run{ESCAPES}"
    result = invoke("run", inputs, "--out", out, "--cache-dir", tmp_path / "cache", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "ignored 1 file(s)" in result.stderr and "results:" in result.stdout
    for stream in (result.stdout, result.stderr):
        assert not DANGEROUS.search(stream.replace("\n", "")), repr(stream)


# --- a run folder of the wrong shape ---------------------------------------------------


def _stages_a_list(record: dict) -> None:
    record["stages"] = list(record["stages"].values())


@pytest.mark.parametrize(
    "command",
    [
        ["triage", "{run}"],
        ["triage", "{run}", "--format", "csv"],
        ["report", "{run}"],
        ["report", "{run}", "--format", "md"],
        ["eval", "grounding", "{run}"],
        ["assign", "{run}", "{reviewers}"],
    ],
    ids=["triage", "triage-csv", "report", "report-md", "eval", "assign"],
)
def test_records_with_stages_as_a_list_are_one_message(tmp_path, command):
    run = copy_run(tmp_path)
    edit_first_record(run, _stages_a_list)
    reviewers = reviewers_without_conflicts(tmp_path)
    result = invoke(*(part.format(run=run, reviewers=reviewers) for part in command))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert f"{run / 'summaries.jsonl'}:1" in errors[0] and "stages" in errors[0]


# --- incomplete runs -------------------------------------------------------------------

INCOMPLETE = {
    "crashed (still running)": ("running", None, "still says 'running'"),
    "interrupted": ("interrupted", None, "interrupted"),
    "fatal": ("fatal", "cannot write x: No space left on device", "No space left"),
    "no manifest": (None, None, "no manifest.json"),
}


@pytest.mark.parametrize("state", INCOMPLETE.values(), ids=INCOMPLETE)
@pytest.mark.parametrize("command", ["triage", "report", "eval", "assign"])
def test_incomplete_runs_are_reported_by_every_view(tmp_path, state, command):
    status, fatal, words = state
    run = copy_run(tmp_path)
    set_status(run, status, fatal)
    args = {
        "triage": ["triage", run],
        "report": ["report", run],
        "eval": ["eval", "grounding", run],
        "assign": ["assign", run, reviewers_without_conflicts(tmp_path), "--per-paper", "2"],
    }[command]
    result = invoke(*args)
    assert result.exit_code in (0, 1), result.output
    (warning,) = [line for line in result.stderr.splitlines() if "incomplete" in line]
    assert str(run) in warning and words in warning
    if command == "report":
        page = (run / "report.html").read_text(encoding="utf-8")
        data = re.search(r'<script type="application/json" id="digest-data">(.*?)</script>', page)
        assert data is not None
        banner = json.loads(data.group(1))["incomplete"]
        assert banner and ("incomplete" in banner or "no manifest" in banner)
    if command == "eval":
        assert json.loads((run / "eval.json").read_text())["incomplete"]


def test_a_complete_run_is_not_called_incomplete(tmp_path):
    run = copy_run(tmp_path)
    for args in (["triage", run], ["report", run], ["eval", "grounding", run]):
        result = invoke(*args)
        assert result.exit_code in (0, 1), result.output
        assert "incomplete" not in result.stderr


# --- report.html temporary files -------------------------------------------------------


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_stale_report_tmp_of_a_dead_process_is_removed(tmp_path):
    run = copy_run(tmp_path)
    stale = run / f".report.html.{dead_pid()}.tmp"
    stale.write_text("<html>half a page")
    stale_manifest = run / f".manifest.json.{dead_pid()}.tmp"
    stale_manifest.write_text("{")
    # Alive until the test kills it (it waits for input that never comes), however long
    # the report takes on a busy machine.
    live = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        busy = run / f".report.html.{live.pid}.tmp"  # a report being written right now
        busy.write_text("<html>in progress")
        other = run / ".report.html.notapid.tmp"
        other.write_text("not ours")
        result = invoke("report", run)
        assert result.exit_code == 0, result.output
        assert not stale.exists()
        assert busy.exists() and other.exists()  # never another live writer's file
        assert (run / "report.html").is_file()
    finally:
        live.kill()
        live.wait()
    # The run writer cleans its own manifest leftovers the same way.
    from pipeline.rundir import RunWriter

    (tmp_path / "rerun").mkdir()
    (tmp_path / "rerun" / stale_manifest.name).write_text("{")
    RunWriter(tmp_path / "rerun").close()
    assert not (tmp_path / "rerun" / stale_manifest.name).exists()


# --- config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "yaml_text",
    ["stages: 5\n", "stages: null\n", "stages: {tldr: 1}\n", "stages: [tldr, 5]\n", "stages: []\n"],
)
def test_bad_stages_in_config_are_one_message(tmp_path, yaml_text):
    config = tmp_path / "config.yaml"
    config.write_text(yaml_text)
    inputs = tmp_path / "a.txt"
    inputs.write_text(SHORT_ABSTRACT)
    result = invoke("run", inputs, "--config", config, "--out", tmp_path / "run", "--no-progress")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "stages" in error
    assert not (tmp_path / "run").exists()


def test_run_dir_env_is_untouched():
    # Guard: these tests never leave files in the shared fixture folder.
    assert sorted(os.listdir(RUN)) == ["errors.jsonl", "manifest.json", "summaries.jsonl"]
