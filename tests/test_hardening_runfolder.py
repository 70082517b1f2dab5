"""Run folders and the state runs share (second red-team round, points 9-13).

- One run writes a folder at a time: a second run with the same `--out` is refused (exit 2,
  the folder named) and changes nothing; the lock goes with the process that held it.
- Two runs started in the same second get folders of their own.
- No file is written through a link planted under its name (or its temp file's name): run
  folder files, report.html, views, reviewers.html, `latest` and the cache files.
- A run that got no answer (refused at the start, or every request refused after the
  preflight) writes no run folder and leaves `latest` alone; a run with answers keeps it.
- A report card is never spliced into report.html raw, even one whose seal holds.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from endpoint import DigestAt
from samples import FAKE_KEY, SHORT_ABSTRACT, SHORT_ABSTRACT_2, TAXONOMY_PATH

from pipeline.atomicfile import temp_name
from pipeline.cache import StageCache
from pipeline.cli import main
from pipeline.cli.views import output_stream
from pipeline.config import Settings
from pipeline.errors import StorageError
from pipeline.job import claimed_run_dir, new_run_dir
from pipeline.report import reviewers
from pipeline.report.cards import CARDS_PREFIX, CardStore, card_code_id, card_of
from pipeline.report.html import HtmlPageWriter, render_html
from pipeline.rundir import Paper, RunReader, RunWriter
from pipeline.rundir.writer import LOCK
from pipeline.taxonomy import load_taxonomy
from pipeline.testing.answers import offline_answer_fn
from pipeline.testing.openai_server import OpenAIServer, ServerConfig
from pipeline.triage import DEFAULT_FORUM_URL

THIRD = "We train agents with reinforcement learning. They win 7 of 10 games."
PLANT = "</script><meta http-equiv=refresh content=0;url=https://evil.invalid/>"


def digest(*args: object):
    argv = ["run", *map(str, args), "--provider", "offline", "--no-progress"]
    return CliRunner().invoke(main, argv)


def one_error(result, code: int, *words: str) -> str:
    assert result.exit_code == code, result.output + result.stderr
    assert "Traceback" not in result.output + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


def contents(folder: Path) -> dict[str, bytes]:
    """Every file of a folder but the lock file a live run holds."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != LOCK}


@pytest.fixture
def inputs(tmp_path) -> Path:
    path = tmp_path / "abstracts.txt"
    path.write_text(f"{SHORT_ABSTRACT}\n\n{SHORT_ABSTRACT_2}\n", encoding="utf-8")
    return path


@pytest.fixture
def victim(tmp_path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("precious", encoding="utf-8")
    return path


# --- 9: one run per folder ----------------------------------------------------------------

HOLD = """
import sys
from pathlib import Path
from pipeline.rundir import RunWriter
writer = RunWriter(Path(sys.argv[1]))  # what a run does first
print("holding", flush=True)
sys.stdin.read()
"""


def test_a_second_run_into_a_folder_being_written_is_refused_and_changes_nothing(tmp_path, inputs):
    out, cache = tmp_path / "run", tmp_path / "cache"
    assert digest(inputs, "--out", out, "--cache-dir", cache).exit_code == 0
    before = contents(out)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == b"holding\n"
        line = one_error(digest(inputs, "--out", out, "--cache-dir", cache), 2, str(out))
        assert "another digest run is writing" in line
        assert contents(out) == before  # not a byte of the other run's files touched
        with pytest.raises(StorageError, match="another digest run"):  # in-process too
            RunWriter(out)
    finally:
        holder.send_signal(signal.SIGKILL)  # no cleanup of its own: the kernel drops the lock
        holder.wait()
    again = digest(inputs, "--out", out, "--cache-dir", cache)
    assert again.exit_code == 0, again.output
    assert len(list(RunReader(out).records())) == 2
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no lock file left


# --- 10: a folder per run -----------------------------------------------------------------


class _Frozen(datetime):
    @classmethod
    def now(cls, tz=None):  # every run starts in the same second
        return datetime(2026, 12, 2, 6, 14, 35)


def test_runs_started_in_the_same_second_get_folders_of_their_own(tmp_path, monkeypatch):
    import pipeline.job as job

    monkeypatch.setattr(job, "datetime", _Frozen)
    settings = Settings(outputs_root=tmp_path / "outputs")
    # Both names taken before either run writes a file: each is made as it is named.
    first, second = new_run_dir(settings), new_run_dir(settings)
    assert (first.name, second.name) == ("run-20261202-061435", "run-20261202-061435-2")
    assert first.is_dir() and second.is_dir()
    (tmp_path / "outputs" / "run-20261202-061435-3").write_text("someone else's file")
    assert new_run_dir(settings).name == "run-20261202-061435-4"
    # A folder made for a command that then stopped before writing anything is removed.
    with pytest.raises(RuntimeError), claimed_run_dir(settings) as unused:
        raise RuntimeError("stopped")
    assert unused.name == "run-20261202-061435-5" and not unused.exists()
    given = Settings(out_dir=tmp_path / "mine")
    with claimed_run_dir(given) as mine:
        assert mine == tmp_path / "mine" and not mine.exists()  # --out: the run makes it


def test_two_cli_runs_in_the_same_second_each_keep_their_output(tmp_path, inputs, monkeypatch):
    import pipeline.job as job

    monkeypatch.setattr(job, "datetime", _Frozen)
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "other.txt"
    other.write_text(THIRD + "\n", encoding="utf-8")
    assert digest(inputs).exit_code == 0
    assert digest(other).exit_code == 0
    runs = sorted(p.name for p in (tmp_path / "outputs").glob("run-*"))
    assert runs == ["run-20261202-061435", "run-20261202-061435-2"]
    first, second = (RunReader(tmp_path / "outputs" / name) for name in runs)
    assert len(list(first.records())) == 2 and len(list(second.records())) == 1
    assert os.readlink(tmp_path / "outputs" / "latest") == runs[1]


# --- 11: no write through a planted link --------------------------------------------------

RUN_FILES = ("summaries.jsonl", "errors.jsonl", "summaries.csv", "manifest.json", "report.html")


def test_links_planted_in_the_run_folder_are_replaced_not_written_through(tmp_path, inputs, victim):
    out = tmp_path / "run"
    out.mkdir()
    for name in RUN_FILES:
        (out / name).symlink_to(Path("..") / victim.name)
    # and under the temp names this process writes manifest.json and report.html through
    for name in ("manifest.json", "report.html"):
        temp_name(out / name).symlink_to(victim)
    result = digest(inputs, "--out", out, "--cache-dir", tmp_path / "cache")
    assert result.exit_code == 0, result.output
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not [p.name for p in out.iterdir() if p.is_symlink()]
    assert len(list(RunReader(out).records())) == 2
    assert json.loads((out / "manifest.json").read_text())["status"] == "ok"
    assert (out / "summaries.csv").read_text("utf-8-sig").startswith("paper_id,")


def test_a_link_planted_as_a_cache_file_is_refused_not_followed(tmp_path, inputs, victim):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "tldr.jsonl").symlink_to(victim)
    out = tmp_path / "run"
    line = one_error(digest(inputs, "--out", out, "--cache-dir", cache), 2, "tldr.jsonl")
    assert "symbolic link" in line
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not out.exists()
    with pytest.raises(StorageError, match="symbolic link"):
        StageCache(cache / "tldr.jsonl", read_only=True)  # not even read through one


def test_a_link_planted_as_the_report_cards_file_is_not_followed(tmp_path, inputs, victim):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"{CARDS_PREFIX}{card_code_id()[:16]}.jsonl").symlink_to(victim)
    result = digest(inputs, "--out", tmp_path / "run", "--cache-dir", cache)
    assert result.exit_code == 0, result.output
    assert "report cards are not kept" in result.stderr  # dropped with a warning, not the run
    assert victim.read_text(encoding="utf-8") == "precious"
    assert "We propose a method" in (tmp_path / "run" / "report.html").read_text("utf-8")


def test_view_and_reviewer_pages_are_not_written_through_a_planted_temp_link(
    tmp_path, victim, monkeypatch
):
    out = tmp_path / "report.md"
    temp_name(out).symlink_to(victim)
    with output_stream(out) as fh:
        fh.write("# report\n")
    assert out.read_text(encoding="utf-8") == "# report\n"
    page = tmp_path / "reviewers.html"
    temp_name(page).symlink_to(victim)
    monkeypatch.setattr(reviewers, "render_reviewers_html", lambda *a, **k: "<html></html>\n")
    assert reviewers.write_reviewers_html(None, page, None) == page  # type: ignore[arg-type]
    assert page.read_text(encoding="utf-8") == "<html></html>\n"
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_latest_is_replaced_never_followed(tmp_path, inputs, monkeypatch):
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep", encoding="utf-8")
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "latest").symlink_to(elsewhere)
    temp_name(tmp_path / "outputs" / "latest").symlink_to(elsewhere)
    assert digest(inputs).exit_code == 0
    (run,) = (tmp_path / "outputs").glob("run-*")
    assert os.readlink(tmp_path / "outputs" / "latest") == run.name
    assert [p.name for p in elsewhere.iterdir()] == ["keep.txt"]


# --- 12: no folder for a run that got no answer -------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_run_refused_by_the_preflight_writes_no_folder_and_leaves_latest(
    tmp_path, inputs, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert digest(inputs).exit_code == 0
    outputs = tmp_path / "outputs"
    before = sorted(p.name for p in outputs.iterdir())
    latest = os.readlink(outputs / "latest")
    run = DigestAt(tmp_path)
    refused = run(f"http://127.0.0.1:{closed_port()}/v1", inputs, out=None, cache=None)
    one_error(refused, 3, "connection refused")
    assert sorted(p.name for p in outputs.iterdir()) == before  # no new run-* folder
    assert os.readlink(outputs / "latest") == latest
    triage = CliRunner().invoke(main, ["triage", "latest", "--format", "jsonl"])
    assert len(triage.stdout.splitlines()) == 2  # still the run with its papers


def test_a_run_without_answers_writes_no_folder_and_one_with_answers_keeps_it(
    tmp_path, monkeypatch
):
    """Preflight passes; the endpoint answers two requests, then refuses every other (401)."""
    monkeypatch.chdir(tmp_path)
    two, three, new = (tmp_path / f"{n}.txt" for n in ("two", "three", "new"))
    two.write_text(f"{SHORT_ABSTRACT}\n\n{SHORT_ABSTRACT_2}\n", encoding="utf-8")
    three.write_text(f"{SHORT_ABSTRACT}\n\n{SHORT_ABSTRACT_2}\n\n{THIRD}\n", encoding="utf-8")
    new.write_text(f"{THIRD}\n", encoding="utf-8")
    outputs = tmp_path / "outputs"
    config = ServerConfig(script=("ok", "ok") + ("401",) * 20)
    with OpenAIServer(config, answer_fn=offline_answer_fn()) as server:

        def run(path: Path):
            argv = DigestAt(tmp_path).args(server.base_url, path, "--stages", "tldr", out=None)
            argv += ["--concurrency", "1"]
            return CliRunner(env={"OPENAI_API_KEY": FAKE_KEY}).invoke(main, argv)

        assert run(two).exit_code == 0
        # Two answers cached, the third refused: the run keeps its folder and `latest`.
        one_error(run(three), 3, "rejected the API key (401")
        kept = outputs / os.readlink(outputs / "latest")
        manifest = json.loads((kept / "manifest.json").read_text())
        assert manifest["status"] == "fatal" and manifest["counts"]["records_written"] == 2
        folders = sorted(p.name for p in outputs.glob("run-*"))
        assert len(folders) == 2
        # Preflight passes, the only request is refused: no answer, no folder.
        one_error(run(new), 3, "rejected the API key (401")
        assert sorted(p.name for p in outputs.glob("run-*")) == folders
        assert outputs / os.readlink(outputs / "latest") == kept
        assert server.stats()["by_status"][401] == 2


def test_a_run_with_an_answer_but_no_record_yet_keeps_its_folder(tmp_path):
    """One answer (tldr) is cached before a 401 on the same abstract's next stage: the run
    got an answer, so it keeps a folder that says how it ended."""
    path = tmp_path / "one.txt"
    path.write_text(f"{SHORT_ABSTRACT}\n", encoding="utf-8")
    config = ServerConfig(script=("ok",) + ("401",) * 20)
    with OpenAIServer(config, answer_fn=offline_answer_fn()) as server:
        argv = DigestAt(tmp_path).args(server.base_url, path, "--stages", "tldr,tags")
        argv += ["--concurrency", "1"]
        result = CliRunner(env={"OPENAI_API_KEY": FAKE_KEY}).invoke(main, argv)
    one_error(result, 3, "rejected the API key (401")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    counts = manifest["counts"]
    assert manifest["status"] == "fatal" and counts["records_written"] == 0
    assert sum(s["ok"] for s in counts["stages"].values()) == 1


# --- 13: a forged report card -------------------------------------------------------------


def test_a_forged_card_with_a_valid_seal_is_never_spliced_raw(tmp_path, inputs):
    cache = tmp_path / "cache"
    assert digest(inputs, "--out", tmp_path / "a", "--cache-dir", cache).exit_code == 0
    taxonomy = load_taxonomy(TAXONOMY_PATH)
    store = CardStore.open(cache, taxonomy, DEFAULT_FORUM_URL)
    assert store is not None
    lines = (tmp_path / "a" / "summaries.jsonl").read_bytes().splitlines()
    for line, record in zip(lines, RunReader(tmp_path / "a").records(), strict=True):
        card = card_of(Paper.from_record(record), taxonomy, DEFAULT_FORUM_URL)
        forged = card._replace(json=card.json[:-1] + f',"x":"{PLANT}"}}')
        store.put(store.key(line), forged, record.abstract)  # sealed like a real card
    store.close()
    assert PLANT in next(cache.glob(f"{CARDS_PREFIX}*.jsonl")).read_text("utf-8")
    assert digest(inputs, "--out", tmp_path / "b", "--cache-dir", cache).exit_code == 0
    page = (tmp_path / "b" / "report.html").read_text(encoding="utf-8")
    assert "evil.invalid" not in page  # the forged card was a miss, rebuilt from its record
    assert page.count("</script>") == 2  # the data and the page's script: no third


def test_a_card_is_escaped_where_it_is_spliced(tmp_path, inputs):
    assert digest(inputs, "--out", tmp_path / "a", "--cache-dir", tmp_path / "cache").exit_code == 0
    (paper, *_) = RunReader(tmp_path / "a").papers()
    genuine = card_of(paper, None, DEFAULT_FORUM_URL)
    forged = genuine._replace(json=genuine.json[:-1] + f',"x":"{PLANT}"}}')
    buf = io.StringIO()
    writer = HtmlPageWriter(buf, None, title="t")
    writer.add_card(forged)
    writer.finish()
    page = buf.getvalue()
    assert "<meta http-equiv=refresh" not in page
    assert page.count("</script>") == render_html([paper], None).count("</script>") == 2
    data = page.split('id="digest-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["papers"][0]["x"] == PLANT  # the same value, escaped as JSON
