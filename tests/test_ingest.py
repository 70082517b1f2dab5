import json

import pytest
from samples import SHORT_ABSTRACT, SHORT_ABSTRACT_2

from pipeline.errors import InputError
from pipeline.ingest import read_inputs
from pipeline.text import text_hash


def test_samples_give_57_unique_abstracts_without_headers(examples_dir):
    result = read_inputs([examples_dir])
    assert result.n_inputs == 57
    assert len(result.abstracts) == 57
    texts = [a.text for a in result.abstracts]
    assert not any(t.startswith("ICLR 2026") for t in texts)
    first = result.abstracts[0]
    assert first.sources[0].file.endswith("000_83025b0b2ab87d39.txt")
    assert first.sources[0].position == 1
    assert first.text.startswith("Signed connections are central")


def test_ids_are_stable_across_files_and_whitespace(tmp_path):
    (tmp_path / "a.txt").write_text(f"My Paper List\n\n{SHORT_ABSTRACT}\n\n{SHORT_ABSTRACT_2}\n")
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"abstract": SHORT_ABSTRACT.replace(" ", "  \n", 1), "id": "p7"}) + "\n"
    )
    result = read_inputs([tmp_path])
    assert result.n_inputs == 3
    assert len(result.abstracts) == 2
    dup = next(a for a in result.abstracts if a.id == text_hash(SHORT_ABSTRACT))
    assert [(s.file.rsplit("/", 1)[-1], s.position) for s in dup.sources] == [
        ("a.txt", 1),
        ("b.jsonl", 1),
    ]
    assert dup.sources[1].paper_id == "p7"
    assert read_inputs([tmp_path / "a.txt"]).abstracts[0].id == dup.id


def test_csv_with_title_and_id(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text(
        'id,title,abstract\n1,"Title, with comma","'
        + SHORT_ABSTRACT
        + '"\n2,,"'
        + SHORT_ABSTRACT_2
        + '"\n'
    )
    result = read_inputs([path])
    assert [a.title for a in result.abstracts] == ["Title, with comma", None]
    assert result.abstracts[0].text == SHORT_ABSTRACT


def test_header_detection_keeps_a_one_sentence_abstract(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text(f"{SHORT_ABSTRACT_2}\n\n{SHORT_ABSTRACT}\n")
    assert len(read_inputs([path]).abstracts) == 2


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.txt", b"", "is empty"),
        ("blank.txt", b"\n\n  \n", "is empty"),
        ("bin.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a text file"),
        ("rows.jsonl", b'{"title": "no abstract"}\n', "'abstract' field"),
        ("bad.jsonl", b"{not json\n", "invalid JSON"),
        ("cols.csv", b"id,text\n1,hello\n", "'abstract' column"),
        ("paper.pdf", b"%PDF-1.4", "unsupported file type"),
    ],
)
def test_bad_inputs_name_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as info:
        read_inputs([path])
    assert name in str(info.value)


def test_missing_path_and_empty_directory(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_inputs([tmp_path / "nope.txt"])
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="no .txt"):
        read_inputs([tmp_path / "d"])


def test_latin1_file_is_read_with_a_warning(tmp_path, caplog):
    path = tmp_path / "latin.txt"
    path.write_bytes(
        "Nous présentons une méthode qui améliore la précision de 3%.".encode("latin-1")
    )
    result = read_inputs([path])
    assert "présentons" in result.abstracts[0].text
    assert "not valid UTF-8" in caplog.text


def test_empty_rows_are_skipped_and_counted(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps({"abstract": ""}) + "\n" + json.dumps({"abstract": SHORT_ABSTRACT}) + "\n"
    )
    result = read_inputs([path])
    assert len(result.abstracts) == 1
    assert result.skipped == [f"{path}#1: empty abstract"]


def test_stream_reads_texts_again_in_first_seen_order(tmp_path, examples_dir):
    (tmp_path / "a.txt").write_text(
        f"My Paper List\n\n{SHORT_ABSTRACT}\n\n{SHORT_ABSTRACT_2}\n\n{SHORT_ABSTRACT}\n"
    )
    (tmp_path / "b.csv").write_text(f'id,title,abstract\n9,T2,"{SHORT_ABSTRACT_2}"\n')
    listed = read_inputs([tmp_path])
    streamed = read_inputs([tmp_path], stream=True)
    assert len(streamed.abstracts) == 2 and streamed.n_inputs == listed.n_inputs == 4
    for _ in range(2):  # repeatable
        assert list(streamed.abstracts) == listed.abstracts
    assert listed.abstracts[1].title == "T2" and len(listed.abstracts[1].sources) == 2
    samples = read_inputs([examples_dir], stream=True)
    expected = [a.text for a in read_inputs([examples_dir]).abstracts]
    assert [a.text for a in samples.abstracts] == expected


def test_stream_stops_when_a_file_changed_after_the_scan(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps({"abstract": SHORT_ABSTRACT})
        + "\n"
        + json.dumps({"abstract": SHORT_ABSTRACT_2})
        + "\n"
    )
    streamed = read_inputs([path], stream=True)
    edited = {"abstract": SHORT_ABSTRACT_2 + " Edited."}
    path.write_text(json.dumps({"abstract": SHORT_ABSTRACT}) + "\n" + json.dumps(edited) + "\n")
    abstracts = iter(streamed.abstracts)
    assert next(abstracts).text == SHORT_ABSTRACT
    with pytest.raises(InputError, match="changed while the run was reading it"):
        next(abstracts)
    path.write_text(json.dumps({"abstract": SHORT_ABSTRACT}) + "\n")  # truncated
    with pytest.raises(InputError, match="changed while the run was reading it"):
        list(streamed.abstracts)
