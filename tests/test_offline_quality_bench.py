"""bench.offline_quality and its figures (pipeline/testing/offline_figures.py): the per-kind
split scores what `digest eval claims` scores."""

from pathlib import Path

from pipeline.testing import offline_figures
from pipeline.testing.offline_figures import (
    _eval,
    claims_rows,
    figure_rows,
    qualitative_row,
    tags_rows,
)

DATA = Path(__file__).parent / "data"


def test_quantitative_figures_equal_the_eval_commands_per_kind_counts(tmp_path):
    files = [DATA / "claims_gold_train_numbers3.jsonl"]
    (tmp_path / "cache").mkdir()
    result, _ = _eval("claims", files, tmp_path)
    quant = result["scores"]["by_kind"]["quantitative"]
    qual = result["scores"]["by_kind"]["qualitative"]
    rows = claims_rows(files, tmp_path, boot=50)
    assert (rows["quantitative precision"]["k"], rows["quantitative precision"]["n"]) == (
        quant["matched_predicted"],
        quant["predicted"],
    )
    assert (rows["quantitative recall"]["k"], rows["quantitative recall"]["n"]) == (
        quant["matched_gold"],
        quant["gold"],
    )
    metric = result["scores"]["metric_acceptable"]
    assert (rows["metric name acceptable"]["k"], rows["metric name acceptable"]["n"]) == (
        metric["count"],
        metric["of"],
    )
    qrows = qualitative_row(files, tmp_path, boot=50)
    assert (qrows["qualitative recall"]["k"], qrows["qualitative recall"]["n"]) == (
        qual["matched_gold"],
        qual["gold"],
    )


def test_tags_figures_and_verdicts(tmp_path):
    files = [DATA / "tags_gold_train.jsonl"]
    (tmp_path / "cache").mkdir()
    result, _ = _eval("tags", files, tmp_path)
    rows = tags_rows(files, tmp_path, boot=50)
    s = result["scores"]
    assert (rows["tags precision"]["k"], rows["tags precision"]["n"]) == (
        s["correct"],
        s["predicted"],
    )
    assert (rows["tags recall"]["k"], rows["tags recall"]["n"]) == (s["found"], s["required"])
    table = figure_rows(
        "t",
        {
            "tags recall": {"k": 79, "n": 100, "boot": (0.70, 0.86)},
            "tags precision": {"k": 95, "n": 100, "boot": (0.9, 0.99)},
            "quantitative recall": {"k": 70, "n": 100, "boot": (0.6, 0.8)},
        },
    )
    assert [row[-1] for row in table] == ["not met, in interval", "met", "not met"]


def test_main_prints_one_table_with_every_present_set(run_bench):
    script = run_bench("offline_quality", "--skip-tldr", "--boot", "20")
    assert script.returncode == 0, script.stderr
    out = script.stdout
    assert "| claims dev | quantitative precision |" in out and "| tags dev | tags recall |" in out


def test_tldr_row_brackets_the_corpus_rouge_with_a_bootstrap_over_papers(tmp_path, monkeypatch):
    monkeypatch.setattr(offline_figures, "SCITLDR_DEV", [DATA / "scitldr_dev_sample.jsonl"])
    (tmp_path / "cache").mkdir()
    row = offline_figures.tldr_row(tmp_path, boot=200)
    assert row is not None and row[1] == "TL;DR ROUGE-1 best-ref" and row[0].endswith("(12 papers)")
    point = float(row[2].split()[0])
    low, high = (float(x) for x in row[3].strip("[]").split(", "))
    assert low <= point <= high and low < high
    assert row[-1] in {"met", "not met", "not met, in interval"}
