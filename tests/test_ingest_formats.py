"""New input formats and the user's identity of a paper, from ingest to the run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import InputError
from pipeline.ingest import SUPPORTED_SUFFIXES, expand_paths, read_inputs
from pipeline.ingest_formats import PaperRef, canonical_row, row_fields
from pipeline.rundir import RunReader
from pipeline.text import text_hash

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "openreview" / "submissions.json"
A1 = "We propose a sparse method that improves accuracy by 3 points on ImageNet."
A2 = "Graph networks with virtual nodes reduce over-squashing on long-range benchmarks."

V2_NOTE = {
    "id": "rJlnfaNYvB",
    "forum": "rJlnfaNYvB",
    "number": 12,
    "invitations": ["ICLR.cc/2026/Conference/-/Submission"],
    "content": {
        "title": {"value": "Sparse Things"},
        "abstract": {"value": A1},
        "authors": {"value": ["Ada Lovelace", "Alan Turing"]},
        "authorids": {"value": ["~Ada_Lovelace1", "alan@cs.example.edu"]},
        "keywords": {"value": ["sparsity", "pruning"]},
        "venue": {"value": "ICLR 2026 Conference Submission"},
    },
}
V1_NOTE = {
    "id": "H1eUz1rKPr",
    "number": 7,
    "content": {"title": "Virtual Nodes", "abstract": A2, "authors": ["Grace Hopper"]},
}


def _ref(path: Path, n: int = 0):
    abstract = read_inputs([path]).abstracts[n]
    return abstract, abstract.sources[0].ref


def test_openreview_v2_notes_in_a_json_array(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text(json.dumps([V2_NOTE, V1_NOTE]))
    (a, ref), (b, ref_b) = _ref(path, 0), _ref(path, 1)
    assert a.text == A1 and a.title == "Sparse Things" and a.id == text_hash(A1)
    assert ref == PaperRef(
        id="rJlnfaNYvB",
        number="12",
        forum="rJlnfaNYvB",
        authors=("Ada Lovelace", "Alan Turing"),
        authorids=("~Ada_Lovelace1", "alan@cs.example.edu"),
        keywords=("sparsity", "pruning"),
        venue="ICLR 2026 Conference Submission",
    )
    assert a.sources[0].paper_id == "rJlnfaNYvB"
    # the older flat v1 form: content.<field> without "value"
    assert (b.title, ref_b.id, ref_b.number, ref_b.authors) == (
        "Virtual Nodes",
        "H1eUz1rKPr",
        "7",
        ("Grace Hopper",),
    )


@pytest.mark.parametrize("wrapper", ["notes", "submissions"])
def test_json_object_wrapping_notes_and_jsonl_notes(tmp_path, wrapper):
    path = tmp_path / "export.json"
    path.write_text(json.dumps({wrapper: [V2_NOTE], "count": 1}))
    assert _ref(path)[1].id == "rJlnfaNYvB"
    lines = tmp_path / "export.jsonl"
    lines.write_text(json.dumps(V2_NOTE) + "\n" + json.dumps(V1_NOTE) + "\n")
    abstracts = read_inputs([lines]).abstracts
    assert [a.sources[0].ref.id for a in abstracts] == ["rJlnfaNYvB", "H1eUz1rKPr"]
    assert abstracts[0].title == "Sparse Things"


def test_json_errors_name_the_file_and_item(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"abstract": A1}, {"title": "no abstract"}]))
    with pytest.raises(
        InputError, match=r"bad\.json: item 2: expected an object with an 'abstract'"
    ):
        read_inputs([path])
    path.write_text(json.dumps([{"abstract": ["a", "list"]}]))
    with pytest.raises(InputError, match=r"item 1: 'abstract' is a list, not text"):
        read_inputs([path])
    path.write_text('[{"abstract": "x"},')
    with pytest.raises(InputError, match=r"bad\.json:1: invalid JSON"):
        read_inputs([path])


@pytest.mark.parametrize(
    ("header", "sep"),
    [
        ("Paper ID,Title,Abstract,Authors,Keywords", ","),
        ("Submission ID\tTitle\tAbstract\tAuthors\tKeywords", "\t"),
        ("id,TITLE,abstract,author names,Author Keywords", ","),
    ],
)
def test_csv_and_tsv_with_common_column_names(tmp_path, header, sep):
    suffix = ".tsv" if sep == "\t" else ".csv"
    path = tmp_path / f"papers{suffix}"
    row = sep.join(["P-17", "Sparse Things", A1, "Ada Lovelace; Alan Turing", "sparsity; pruning"])
    path.write_text(header + "\n" + row + "\n", encoding="utf-8")
    abstract, ref = _ref(path)
    assert abstract.title == "Sparse Things" and abstract.text == A1
    assert ref.id == "P-17" and ref.forum is None  # not an OpenReview id: no forum link
    assert ref.authors == ("Ada Lovelace", "Alan Turing")
    assert ref.keywords == ("sparsity", "pruning")


def test_number_column_and_openreview_like_ids_get_a_forum(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(f"Number,Paper ID,Abstract\n42,SkgQwpVYwH,{A1}\n")
    ref = _ref(path)[1]
    assert (ref.number, ref.id, ref.forum) == ("42", "SkgQwpVYwH", "SkgQwpVYwH")


def test_tsv_without_an_abstract_column_is_an_input_error(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("Title\tID\nx\t1\n")
    with pytest.raises(InputError, match="TSV needs an 'abstract' column"):
        read_inputs([path])


def test_new_formats_are_supported_inside_directories(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps([V2_NOTE]))
    (tmp_path / "b.tsv").write_text(f"Abstract\n{A2}\n")
    assert {".json", ".tsv"} <= set(SUPPORTED_SUFFIXES)
    assert [p.name for p in expand_paths([tmp_path]).files] == ["a.json", "b.tsv"]
    assert len(read_inputs([tmp_path]).abstracts) == 2


def test_canonical_row_keeps_unknown_columns_and_first_alias_wins():
    row = canonical_row({"Paper ID": "x", "id": "", "Abstract": A1, "Track": "Main", "Extra": 1})
    assert row["id"] == "x" and row["venue"] == "Main" and row["extra"] == 1
    assert row_fields({"abstract": A1})[2] is None  # no identity at all


def test_identity_travels_to_summaries_jsonl_and_papers(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(
        main,
        ["run", str(EXAMPLE), "--provider", "offline", "--out", str(out)]
        + ["--cache-dir", str(tmp_path / "cache"), "--no-progress"],
    )
    assert res.exit_code == 0, res.output
    notes = json.loads(EXAMPLE.read_text())
    first = json.loads((out / "summaries.jsonl").read_text().splitlines()[0])
    (source,) = first["sources"]
    assert source["paper_id"] == notes[0]["id"] and source["number"] == str(notes[0]["number"])
    assert source["authors"] == notes[0]["content"]["authors"]["value"]
    assert first["title"] == notes[0]["content"]["title"]["value"]
    papers = {p.paper_id: p for p in RunReader(out).papers()}
    assert set(papers) == {n["id"] for n in notes}
    p = papers[notes[3]["id"]]
    assert p.ref == notes[3]["id"] and p.forum == notes[3]["id"]
    assert p.authorids == tuple(notes[3]["content"]["authorids"]["value"])
    # summaries.csv leads with the user's id and title; the hash stays as `id`
    header = (out / "summaries.csv").read_text(encoding="utf-8-sig").splitlines()[0]
    assert header.startswith("paper_id,number,title,id,")


def test_plain_text_records_stay_small(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text(A1 + "\n")
    out = tmp_path / "run"
    res = CliRunner().invoke(
        main,
        ["run", str(path), "--provider", "offline", "--out", str(out)]
        + ["--cache-dir", str(tmp_path / "cache"), "--no-progress"],
    )
    assert res.exit_code == 0, res.output
    record = json.loads((out / "summaries.jsonl").read_text())
    assert record["sources"] == [{"file": str(path), "position": 1}]
