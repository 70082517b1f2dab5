"""What a chair reads: weak pairs counted and listed, every score column labelled, rows in
paper order, the assignment as OpenReview edges."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.assign import PastPaper, Reviewer, assign
from pipeline.assign.conflicts import Conflict
from pipeline.assign.outputs import (
    CSV_FIELDS,
    is_weak,
    summary,
    weak_pairs,
    write_assignments_csv,
    write_conflicts_csv,
    write_openreview_edges,
    write_weak_pairs_csv,
)
from pipeline.cli import main
from pipeline.rundir import Paper

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "openreview"

GNN = "Message passing graph neural networks suffer from over-squashing on long range tasks."
FACE = "A part based morphable model of the human face fitted to scans with sparse landmarks."
CONTROL = "Explaining learned controllers: saliency for policies in continuous control tasks."


def paper(pid: str, abstract: str, tags=(), **kw) -> Paper:
    return Paper(id=pid, title=kw.pop("title", pid), abstract=abstract, tags=tuple(tags), **kw)


def faint_result():
    """One paper whose only reviewer shares a single common-ish word with it, one strong."""
    papers = [
        paper("ffff000000000001", FACE + " Control of the fit.", number="10", title="Faces"),
        paper("aaaa000000000002", GNN, tags=("gnn",), number="9", title="Graphs"),
    ]
    reviewers = [
        Reviewer(
            id="ctl",
            name="Cy",
            papers=(
                PastPaper(title="Challenges of Control", abstract=CONTROL),
                PastPaper(title="Birds", abstract="Migratory birds navigate by magnetic fields."),
            ),
        ),
        Reviewer(id="gnn", name="Gi", tags=("gnn",), openreview_id="~Gi_One1"),
    ]
    return assign(papers, reviewers, per_paper=1, max_load=1)


def test_a_faint_text_match_is_weak_and_the_summary_says_so():
    result = faint_result()
    (face,) = [m for p, _, m in result.pairs if p == "ffff000000000001"]
    assert 0 < face.text < 0.1 and not face.tags and not face.keywords
    assert face.affinity > 0  # not zero: the old summary counted 0 pairs without expertise
    assert is_weak(face) and not is_weak(face, weak_below=face.text)
    assert weak_pairs(result) == {"ffff000000000001": ["ctl"]}
    text = summary(result)
    assert "1 weak pair(s) on 1 paper(s) (no shared tag, no matching keyword, text " in text
    assert "no matching expertise" not in text
    assert "0 weak pair(s) on 0 paper(s)" in summary(result, weak_below=face.text)


def test_a_pair_with_real_text_similarity_is_not_weak():
    p = paper("p1", GNN)
    r = Reviewer(id="r", papers=(PastPaper(title="Over-squashing in GNNs", abstract=GNN),))
    (pair,) = assign([p], [r], per_paper=1, max_load=1).pairs
    assert pair[2].text > 0.5 and not is_weak(pair[2])


def test_every_score_column_is_labelled_and_weak_pairs_get_a_file(tmp_path):
    result = faint_result()
    write_assignments_csv(result, tmp_path / "a.csv", None)
    rows = list(csv.DictReader((tmp_path / "a.csv").open(encoding="utf-8")))
    assert tuple(rows[0]) == CSV_FIELDS
    face = rows[1]
    assert face["weak"] == "yes" and rows[0]["weak"] == "no"
    best, blended = (
        float(face["best_past_paper_similarity"]),
        float(face["text_similarity_blended"]),
    )
    assert f"({best:.2f})" in face["reason"]  # the reason quotes the best single past paper
    assert best > blended  # 0.5 x the best + 0.5 x the mean over both past papers
    assert float(face["affinity_total"]) == pytest.approx(10 * blended, abs=1e-3)
    assert face["embedding_similarity"] == ""
    write_weak_pairs_csv(result, tmp_path / "w.csv")
    weak = list(csv.DictReader((tmp_path / "w.csv").open(encoding="utf-8")))
    assert [(w["paper_number"], w["reviewer_id"]) for w in weak] == [("10", "ctl")]


def test_rows_are_in_submission_number_order_not_hash_order(tmp_path):
    result = faint_result()  # hashes sort ffff.. after aaaa..; numbers 10 after 9
    result.conflicts = [
        Conflict("ffff000000000001", "gnn", "declared", "x"),
        Conflict("aaaa000000000002", "ctl", "declared", "y"),
    ]
    write_assignments_csv(result, tmp_path / "a.csv", None)
    write_conflicts_csv(result, tmp_path / "c.csv")
    for name in ("a.csv", "c.csv"):
        rows = list(csv.DictReader((tmp_path / name).open(encoding="utf-8")))
        assert [r["paper_number"] for r in rows] == ["9", "10"], name
    papers = [paper(f"{h}000", "x", paper_id=pid) for h, pid in [("a", "zeta"), ("b", "Alpha")]]
    by_id = assign(papers, [Reviewer(id="r")], per_paper=1, max_load=2)
    write_assignments_csv(by_id, tmp_path / "b.csv", None)
    rows = list(csv.DictReader((tmp_path / "b.csv").open(encoding="utf-8")))
    assert [r["paper_id"] for r in rows] == ["Alpha", "zeta"]


def test_openreview_edges_head_paper_tail_reviewer(tmp_path):
    result = faint_result()
    result.papers["aaaa000000000002"] = paper(
        "aaaa000000000002", GNN, number="9", forum="H1eUz1rKPr", paper_id="H1eUz1rKPr"
    )
    path = write_openreview_edges(
        result, tmp_path / "e.jsonl", label="run 1", invitation="V/Reviewers/-/Proposed_Assignment"
    )
    edges = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert edges[0] == {
        "invitation": "V/Reviewers/-/Proposed_Assignment",
        "head": "H1eUz1rKPr",
        "tail": "~Gi_One1",
        "weight": 3.0,
        "label": "run 1",
    }
    assert edges[1]["head"] == "ffff000000000001" and edges[1]["tail"] == "ctl"


def test_cli_on_the_example_counts_weak_pairs_honestly(example_run, tmp_path):
    out = tmp_path / "assignments.csv"
    res = CliRunner().invoke(
        main,
        ["assign", str(example_run), str(EXAMPLE / "reviewers.yaml"), "--out", str(out)]
        + ["--weak-below", "1", "--format", "openreview"],
    )
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    nothing_shared = [r for r in rows if not r["matching_tags"] and not r["matching_keywords"]]
    assert nothing_shared  # the issue counted 9 of 144 on this example
    papers = {r["paper_hash"] for r in nothing_shared}
    assert f"{len(nothing_shared)} weak pair(s) on {len(papers)} paper(s)" in res.stdout
    weak = list(csv.DictReader((tmp_path / "weak_pairs.csv").open(encoding="utf-8")))
    assert len(weak) == len(nothing_shared)
    numbers = [int(r["paper_number"]) for r in rows]
    assert numbers == sorted(numbers) and numbers[0] == 1
    edges = (tmp_path / "assignments.openreview.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(edges[0])
    assert len(edges) == len(rows) and first["head"] == rows[0]["paper_id"]
    assert first["tail"].startswith("~") and first["label"] == "digest-assign"


@pytest.fixture(scope="module")
def example_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("assign-outputs")
    res = CliRunner().invoke(
        main,
        ["run", str(EXAMPLE / "submissions.json"), "--provider", "offline"]
        + ["--out", str(root / "run"), "--cache-dir", str(root / "cache"), "--no-progress"],
    )
    assert res.exit_code == 0, res.output
    return root / "run"
