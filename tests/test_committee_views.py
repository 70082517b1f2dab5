"""A chair's views of a run from an OpenReview export: their ids and titles first, forum
links, --out -, `latest`, the Markdown digest, claims with direction in summaries.csv."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.cli.views import point_latest
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.report.markdown import render_markdown, sections
from pipeline.rundir import Paper, RunReader
from pipeline.stages.claims import claim_text
from pipeline.taxonomy import load_taxonomy
from pipeline.triage import (
    check_forum_url,
    format_table,
    forum_url,
    lead_text,
    paper_keys,
    terminal_text,
)

REPO = Path(__file__).resolve().parents[1]
EXPORT = REPO / "examples" / "openreview" / "submissions.json"
NOTES = json.loads(EXPORT.read_text(encoding="utf-8"))
RUN_SMALL = Path(__file__).parent / "data" / "run_small"


def invoke(*args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("views")
    out = root / "runs" / "export"
    res = invoke(
        "run", EXPORT, "--provider", "offline", "--out", out, "--cache-dir", root / "cache",
        "--no-progress",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    return out


def test_triage_rows_lead_with_the_users_id_number_and_title(run):
    res = invoke("triage", run, "--format", "jsonl", "--sort", "id")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert list(rows[0])[:5] == ["paper_id", "number", "title", "id", "url"]
    by_id = {r["paper_id"]: r for r in rows}
    note = NOTES[0]
    row = by_id[note["id"]]
    assert (
        row["number"] == str(note["number"]) and row["title"] == note["content"]["title"]["value"]
    )
    assert row["url"] == f"https://openreview.net/forum?id={note['id']}"
    assert row["authors"] == note["content"]["authors"]["value"]
    # --sort id is the user's ids, naturally (case-insensitive)
    assert [r["paper_id"] for r in rows] == sorted(by_id, key=str.lower)
    res = invoke("triage", run, "--format", "csv", "--forum-url", "https://x.example/{id}")
    first = next(csv.DictReader(io.StringIO(res.stdout)))
    assert first["url"].startswith("https://x.example/") and first["paper_id"]


def test_triage_table_shows_the_users_id_and_title(run):
    res = invoke("triage", run, "--sort", "id", "--limit", "3")
    lines = res.stdout.splitlines()
    first = sorted(NOTES, key=lambda n: n["id"].lower())[0]
    assert lines[2].startswith(first["id"] + " ")
    assert first["content"]["title"]["value"][:30] in lines[2]


def test_paper_filter_takes_any_id_in_any_case(run):
    note = NOTES[7]
    for key in (note["id"], note["id"].upper(), str(note["number"]), f"#{note['number']}"):
        res = invoke("triage", run, "--paper", key, "--format", "jsonl")
        rows = [json.loads(line) for line in res.stdout.splitlines()]
        assert [r["paper_id"] for r in rows] == [note["id"]], key
    # an id that names no paper of the run is said, not an empty answer
    res = invoke("triage", run, "--paper", "nope", "--format", "jsonl")
    assert res.exit_code == 2 and res.stdout == ""
    assert "no paper of" in res.stderr and "'nope'" in res.stderr
    # a paper that exists but another filter leaves out: an empty answer, exit 0
    res = invoke("triage", run, "--paper", note["id"], "--failed", "--format", "jsonl")
    assert res.exit_code == 0 and res.stdout == ""


def test_untitled_papers_lead_with_the_tldr_never_the_abstract():
    papers = list(RunReader(RUN_SMALL).papers())
    untitled = [p for p in papers if not p.title]
    assert untitled
    p = untitled[0]
    assert lead_text(p) == p.tldr
    table = format_table([p], None, width=160)
    assert "TL;DR: " + p.tldr[:40] in table
    background = p.abstract.split(". ")[0]
    assert background not in table
    bare = Paper(id="abc", title=None, abstract="Background sentence. We do X.")
    assert lead_text(bare) == "Untitled paper abc"
    assert "Background sentence" not in format_table([bare], None)


def test_terminal_views_strip_escape_sequences():
    evil = Paper(id="e", title="Title\x1b[31mRED\x1b]0;pwned\x07 bell\x07 end\x9b", abstract="x")
    table = format_table([evil], None, width=200)
    assert "\x1b" not in table and "\x07" not in table and "\x9b" not in table
    assert "TitleRED" in terminal_text(evil.title).replace(" ", "")


def test_forum_links_only_for_openreview_ids_and_templates_are_checked():
    note = Paper(id="h", title=None, abstract="", paper_id="rJlnfaNYvB", forum="rJlnfaNYvB")
    plain = Paper(id="h2", title=None, abstract="", paper_id="P-17")
    assert forum_url(note) == "https://openreview.net/forum?id=rJlnfaNYvB"
    assert forum_url(plain) is None and forum_url(note, "") is None
    assert (
        forum_url(note, "https://or.example/{id}?n={number}") == "https://or.example/rJlnfaNYvB?n="
    )
    for bad in ("javascript:alert({id})", "https://no-placeholder", "https://x/{nope}"):
        with pytest.raises(Exception, match="forum URL template"):
            check_forum_url(bad)
    assert paper_keys(Paper(id="ABC", title=None, abstract="", paper_ids=("X1",), number="4")) == [
        "abc",
        "x1",
        "4",
        "#4",
    ]


def test_out_dash_writes_to_stdout(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = invoke("report", run, "--format", "md", "--out", "-")
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("# Digest of export\n") and not (tmp_path / "-").exists()
    res = invoke("report", run, "--out", "-")
    assert res.stdout.startswith("<!DOCTYPE html>") and res.stdout.rstrip().endswith("</html>")
    res = invoke("triage", run, "--format", "csv", "--out", "-")
    assert res.stdout.startswith("paper_id,number,title,id,url,") and not (tmp_path / "-").exists()
    res = invoke("triage", run, "--format", "jsonl", "--out", tmp_path / "t.jsonl")
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == len(NOTES)
    assert f"{len(NOTES)} paper(s): " in res.stderr


def test_latest_points_to_the_newest_run_and_every_command_takes_it(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = invoke("triage", "latest")
    assert res.exit_code == 2 and "no outputs/latest" in res.output
    out = tmp_path / "outputs" / "run-1"
    res = invoke(
        "run", RUN_SMALL / ".." / ".." / ".." / "examples" / "iclr2026", "--provider", "offline",
        "--out", out, "--cache-dir", tmp_path / "cache", "--no-progress",
    )  # fmt: skip
    assert res.exit_code in (0, 1), res.output
    latest = tmp_path / "outputs" / "latest"
    assert latest.is_symlink() and os.readlink(latest) == "run-1"
    res = invoke("triage", "latest", "--format", "jsonl")
    assert res.exit_code == 0 and len(res.stdout.splitlines()) == 57
    res = invoke("report", "latest", "--format", "md")
    assert res.exit_code == 0 and Path(res.stdout.strip()).resolve() == (out / "report.md")
    res = invoke("eval", "grounding", "latest")
    assert res.exit_code == 0, res.output
    reviewers = REPO / "examples" / "reviewers.yaml"
    res = invoke("assign", "latest", reviewers)
    assert res.exit_code == 0, res.output
    assert (out / "assignments.csv").is_file() and (out / "reviewers.html").is_file()
    # a newer run moves it
    newer = tmp_path / "outputs" / "run-2"
    newer.mkdir()
    assert point_latest(newer) == latest and os.readlink(latest) == "run-2"


def test_markdown_groups_small_tags_under_their_facet(run, tmp_path):
    samples = tmp_path / "samples"
    res = invoke(
        "run", REPO / "examples" / "iclr2026", "--provider", "offline", "--out", samples,
        "--cache-dir", tmp_path / "cache", "--no-progress",
    )  # fmt: skip
    assert res.exit_code in (0, 1), res.output
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    papers = list(RunReader(samples).papers())
    parts = sections(papers, taxonomy)
    assert sum(len(ps) for _, _, ps in parts) == len(papers) == 57
    # 57 papers with ~40 different primary tags: a handful of sections, not one per tag
    assert len({p.tags[0] for p in papers}) > 30 and len(parts) <= 10
    assert all(len(ps) >= 3 for _, tag, ps in parts if tag)
    assert any(h.startswith("Other: ") for h, _, _ in parts)
    md = render_markdown(papers, taxonomy, title="D")
    assert len(re.findall(r"^## ", md, re.M)) == len(parts)
    assert "\\(" not in md and "\\." not in md and "\\-" not in md
    exported = render_markdown(RunReader(run).papers(), taxonomy, title="E")
    note = NOTES[0]
    assert f"`{note['id']}` [forum](https://openreview.net/forum?id={note['id']})" in exported


def test_summaries_csv_claims_keep_their_direction():
    claim = {
        "kind": "quantitative",
        "metric": "recall",
        "value": "0",
        "unit": "%",
        "dataset": None,
        "comparison": None,
        "statement": "Monitor recall drops to 0%.",
        "evidence": "monitor recall from 100% down to 0%",
    }
    assert claim_text(claim) == 'recall 0 %: "monitor recall from 100% down to 0%"'


def test_summaries_csv_leads_with_identity(run):
    with (run / "summaries.csv").open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["paper_id"] for r in rows} == {n["id"] for n in NOTES}
    with_claims = [r for r in rows if r["claims"] and '"' in r["claims"]]
    assert with_claims and re.search(r': ".+"', with_claims[0]["claims"])
