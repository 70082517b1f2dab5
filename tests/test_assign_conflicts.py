"""Co-author conflicts from past papers' authors and years, accent-folded names, and unknown
fields in the reviewer files warned about, never silently ignored."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.assign import ConflictPolicy, PastPaper, Reviewer, load_pool
from pipeline.assign.conflicts import coauthor_notes, derived_conflicts, reference_year
from pipeline.cli import main
from pipeline.errors import ConfigError
from pipeline.rundir import Paper

RUN = Path(__file__).parent / "data" / "run_small"


def paper(pid: str, authors=()) -> Paper:
    return Paper(id=pid, title=f"Paper {pid}", abstract="x", authors=tuple(authors))


def reviewer(*papers: PastPaper, name: str = "Rita Reviewer") -> Reviewer:
    return Reviewer(id="rita", name=name, papers=papers)


def test_names_match_with_accents_and_case_folded():
    r = Reviewer(id="jn", name="José Núñez")
    got = derived_conflicts([paper("p1", ["JOSE  NUNEZ"])], [r], ConflictPolicy())
    assert [(c.paper, c.reviewer, c.kind) for c in got] == [("p1", "jn", "author")]


def test_a_recent_coauthor_conflicts_with_the_shared_paper_named():
    shared = PastPaper(title="Sparse Things", authors=("Rita Reviewer", "Ana Gómez"), year=2024)
    old = PastPaper(title="Old Things", authors=("Rita Reviewer", "Bo Li"), year=2019)
    papers = [paper("p1", ["ana gomez"]), paper("p2", ["Bo Li"]), paper("p3", ["Rita Reviewer"])]
    got = {c.paper: c for c in derived_conflicts(papers, [reviewer(shared, old)], ConflictPolicy())}
    assert got["p1"].kind == "coauthor" and got["p1"].shared_paper == "Sparse Things"
    assert "ana gomez" in got["p1"].reason and "2024" in got["p1"].reason
    assert "p2" not in got  # 2019 is more than 3 years before the newest past paper (2024)
    assert got["p3"].kind == "author"  # the reviewer's own name is not a co-author
    wider = ConflictPolicy(coauthor_years=6)
    assert {c.paper for c in derived_conflicts(papers, [reviewer(shared, old)], wider)} == {
        "p1",
        "p2",
        "p3",
    }
    off = ConflictPolicy(coauthor_years=0)
    assert {c.kind for c in derived_conflicts(papers, [reviewer(shared, old)], off)} == {"author"}


def test_the_reference_year_is_the_newest_past_paper_unless_given():
    rs = [reviewer(PastPaper(year=2021), PastPaper(year=2023), PastPaper())]
    assert reference_year(rs, ConflictPolicy()) == 2023
    assert reference_year(rs, ConflictPolicy(reference_year=2026)) == 2026
    pp = PastPaper(title="T", authors=("Ana Gomez",), year=2023)
    late = ConflictPolicy(reference_year=2027)  # counts 2025-2027 only
    assert not derived_conflicts([paper("p", ["Ana Gomez"])], [reviewer(pp)], late)
    undated = PastPaper(title="T", authors=("Ana Gomez",))  # recency unknown: it counts
    assert derived_conflicts([paper("p", ["Ana Gomez"])], [reviewer(undated)], late)


def test_submissions_without_authors_get_one_warning():
    r = reviewer(PastPaper(title="T", authors=("A B",), year=2020))
    (note,) = coauthor_notes([paper("p1"), paper("p2")], [r], ConflictPolicy())
    assert "no submission of this run carries authors" in note
    assert not coauthor_notes([paper("p1", ["X Y"])], [r], ConflictPolicy())
    assert not coauthor_notes([paper("p1")], [Reviewer(id="a")], ConflictPolicy())


def test_unknown_fields_are_warned_about_once_per_field_with_count_and_place(tmp_path):
    (tmp_path / "p.jsonl").write_text(
        '{"reviewer": "a", "title": "T", "authors": ["A", "B"], "year": 2024, "url": "u"}\n'
        '{"reviewer": "b", "title": "U", "url": "v", "doi": "d"}\n'
    )
    (tmp_path / "r.yaml").write_text(
        "papers_file: p.jsonl\nvenue: X\nreviewers:\n"
        "  - {id: a, expertise: [x], papers: [{title: P, venue: V}]}\n"
        "  - {id: b, expertise: [y], attributes: {seniority: senior}}\n"
    )
    pool = load_pool(tmp_path / "r.yaml", None)
    a, b = pool.reviewers
    assert a.papers[1] == PastPaper(title="T", authors=("A", "B"), year=2024)
    text = "\n".join(pool.warnings)
    assert "unknown field 'expertise' in 2 reviewer entries (first: reviewer 'a'); left out" in text
    assert "unknown field 'venue' in the top level; left out" in text
    assert "unknown field 'venue' in reviewer 'a' papers[0]; left out" in text
    assert "unknown field 'url' in 2 lines of p.jsonl (first: p.jsonl line 1)" in text
    assert "unknown field 'doi' in p.jsonl line 2; left out" in text
    assert "attributes" not in text
    assert len(pool.warnings) == 5


@pytest.mark.parametrize("bad", ["conflict: [p1]", "max-load: 3", "email: [a@b.c]"])
def test_a_misspelt_known_field_is_an_error_not_a_warning(tmp_path, bad):
    (tmp_path / "r.yaml").write_text(f"reviewers:\n  - id: a\n    {bad}\n")
    with pytest.raises(ConfigError, match="did you mean"):
        load_pool(tmp_path / "r.yaml", None)


def test_cli_writes_coauthor_conflicts_with_the_shared_paper(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    lines = (RUN / "summaries.jsonl").read_text(encoding="utf-8").splitlines(True)
    assert '"position": 1}]' in lines[0]  # the first paper gets an author
    lines[0] = lines[0].replace('"position": 1}]', '"position": 1, "authors": ["Ana Gómez"]}]', 1)
    (run / "summaries.jsonl").write_text("".join(lines), encoding="utf-8")
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text(
        "reviewers:\n"
        "  - {id: a, name: Rita, papers: [{title: Shared, authors: [Rita, Ana Gomez], year: 2025}]}\n"
        "  - {id: b, hobby: chess}\n  - {id: c}\n"
    )
    res = CliRunner().invoke(
        main, ["assign", str(run), str(reviewers), "--per-paper", "2", "--max-load", "6"]
    )
    assert res.exit_code == 0, res.output
    assert "unknown field 'hobby' in reviewer 'b'; left out" in res.stderr
    rows = list(csv.DictReader((run / "conflicts.csv").open(encoding="utf-8")))
    assert [(r["reviewer_id"], r["kind"], r["shared_paper"]) for r in rows] == [
        ("a", "coauthor", "Shared")
    ]
    res = CliRunner().invoke(
        main,
        ["assign", str(run), str(reviewers), "--per-paper", "2", "--max-load", "6"]
        + ["--coauthor-reference-year", "2030"],
    )
    assert res.exit_code == 0, res.output
    assert list(csv.DictReader((run / "conflicts.csv").open(encoding="utf-8"))) == []
