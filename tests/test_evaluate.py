"""`digest eval` end to end with the offline backend on small shipped data."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.evaluation.rouge import score_rouge

DATA = Path(__file__).parent / "data"


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)), catch_exceptions=False)


def test_eval_tldr_reports_three_systems_under_both_protocols(tmp_path):
    result = invoke(
        "eval",
        "tldr",
        DATA / "scitldr_dev_sample.jsonl",
        "--out",
        tmp_path / "ev",
        "--cache-dir",
        tmp_path / "cache",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert data["papers"] == 12 and data["failed"] == 0
    names = list(data["systems"])
    assert names[0] == "lead-1" and names[2].startswith("oracle")
    for scores in data["systems"].values():
        assert set(scores["best"]) == {"rouge1", "rouge2", "rougeL"}
        assert scores["best"]["rouge1"] >= scores["mean"]["rouge1"]
    # The oracle picks, per paper, the best sentence by ROUGE-1: no single-sentence system beats it.
    assert (
        data["systems"][names[2]]["best"]["rouge1"] >= data["systems"]["lead-1"]["best"]["rouge1"]
    )
    # The offline system's figure is recomputable from the run's own TL;DRs.
    papers = [
        json.loads(line) for line in (DATA / "scitldr_dev_sample.jsonl").read_text().splitlines()
    ]
    run = [
        json.loads(line)
        for line in (tmp_path / "ev" / "run" / "summaries.jsonl").read_text().splitlines()
    ]
    preds = [r["stages"]["tldr"]["output"]["tldr"] for r in run]
    expected = score_rouge(preds, [p["target"] for p in papers])
    assert abs(data["systems"][names[1]]["best"]["rouge1"] - expected["best"]["rouge1"]) < 1e-9
    assert "| lead-1 |" in result.output and (tmp_path / "ev" / "eval.md").exists()


def test_eval_claims_scores_against_the_gold_file(tmp_path):
    result = invoke(
        "eval",
        "claims",
        DATA / "claims_gold.jsonl",
        "--out",
        tmp_path / "ev",
        "--cache-dir",
        tmp_path / "cache",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "ev" / "eval.json").read_text())
    s = data["scores"]
    assert data["abstracts"] >= 25
    assert s["tp"] + s["fn"] == sum(
        len(json.loads(line)["claims"])
        for line in (DATA / "claims_gold.jsonl").read_text().splitlines()
    )
    assert s["precision"] == s["tp"] / (s["tp"] + s["fp"])
    assert data["grounding"]["claims"]["evidence_grounded_share"] == 1.0


def test_eval_grounding_of_a_run_folder(tmp_path, examples_dir):
    assert (
        invoke(
            "run",
            examples_dir,
            "--out",
            tmp_path / "run",
            "--cache-dir",
            tmp_path / "cache",
            "--no-progress",
        ).exit_code
        == 0
    )
    result = invoke("eval", "grounding", tmp_path / "run")
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert data["records"] == 57
    assert data["claims"]["evidence_grounded_share"] == 1.0
    assert data["tags"]["outside_taxonomy"] == 0
    assert data["tldr"]["numbers_in_abstract"] == data["tldr"]["numbers"]


def test_eval_grounding_rejects_a_folder_without_summaries(tmp_path):
    result = invoke("eval", "grounding", tmp_path)
    assert result.exit_code == 2 and "no summaries.jsonl" in result.stderr


@pytest.mark.parametrize(
    ("command", "content", "message"),
    [
        (
            "tldr",
            '{"source": ["a"], "target": ["b"]}\n{"source": "x", "target": []}\n',
            ":2: expected a SciTLDR row",
        ),
        (
            "tldr",
            '{"source": ["a"], "target": ["b"]}\n{oops\n{"source": ["a"], "target": ["b"]}\n',
            ":2: invalid",
        ),
        ("tldr", "[" * 100_000 + "\n", ":1: invalid JSON (nested too deeply)"),
        ("claims", '{"abstract": 5, "claims": []}\n', ":1: expected an object with an 'abstract'"),
        ("claims", '{"abstract": "x", "claims": "none"}\n', ":1: expected an object"),
        ("claims", "not json\n", ":1: invalid"),
    ],
)
def test_eval_bad_rows_exit_2_with_one_message(tmp_path, command, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    res = CliRunner().invoke(
        main, ["eval", command, str(path), "--out", str(tmp_path / "out"), "--no-progress"]
    )
    assert res.exit_code == 2, res.output
    assert message in res.stderr and "Traceback" not in res.output
    assert len(res.stderr.strip().splitlines()) <= 2  # the backend line and the error


def test_eval_tags_scores_against_the_gold_file(tmp_path):
    result = invoke(
        "eval",
        "tags",
        DATA / "tags_gold_train.jsonl",
        "--out",
        tmp_path / "ev",
        "--cache-dir",
        tmp_path / "cache",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert data["task"] == "tags" and data["abstracts"] == 40
    s = data["scores"]
    assert s["correct"] + s["wrong"] == s["predicted"] and s["found"] + s["missed"] == s["required"]
    assert 0 < s["precision"] <= 1 and 0 < s["recall"] <= 1
    assert "| precision | recall |" in result.output
