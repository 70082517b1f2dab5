"""Triage: reading a run folder, filtering, sorting, formatting, and the `digest triage` command."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.csvfile import csv_cell as csv_safe
from pipeline.errors import InputError
from pipeline.rundir import RunReader
from pipeline.taxonomy import Taxonomy
from pipeline.triage import Query, format_csv, format_table, resolve_tags, select


def iter_papers(run_dir):
    return RunReader(run_dir).papers()


RUN = Path(__file__).parent / "data" / "run_small"
LFD, XSS, VNODE, LLM, BENCH, DALE = (
    "39954d708d621dc0",
    "506c1eae6e5ec217",
    "8784778aa46f08df",
    "97240d0de36ffdb0",
    "001b5cef982cc57a",
    "77b8763385a25f31",
)

TAXONOMY_YAML = """
version: 1
facets:
  - id: method
    label: Method family
    tags:
      - {id: diffusion-models, label: Diffusion models, synonyms: [denoising diffusion]}
      - {id: graph-neural-networks, label: Graph neural networks, synonyms: [GNN, message passing]}
      - {id: large-language-models, label: Large language models, synonyms: [LLM]}
      - {id: representation-learning, label: Representation learning}
  - id: task
    label: Task
    tags:
      - {id: image-generation, label: Image generation}
  - id: area
    label: Area
    tags:
      - {id: hallucination-factuality, label: Hallucination and factuality}
      - {id: uncertainty-quantification, label: Uncertainty quantification}
      - {id: neuroscience, label: Neuroscience}
  - id: contribution
    label: Contribution
    tags:
      - {id: theoretical-analysis, label: Theory}
"""


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    import yaml

    return Taxonomy.model_validate(yaml.safe_load(TAXONOMY_YAML))


@pytest.fixture(scope="module")
def papers():
    return list(iter_papers(RUN))


def ids(papers) -> list[str]:
    return [p.id for p in papers]


def test_reads_every_record_with_stage_status(papers):
    by_id = {p.id: p for p in papers}
    assert len(papers) == 6
    assert by_id[XSS].failed == {
        "claims": {
            "kind": "ungrounded",
            "message": "evidence is not verbatim in the abstract: '<script>alert(1)</script>'",
        }
    }
    assert by_id[BENCH].status == {"tldr": "ok", "tags": "failed"}  # claims not run
    assert by_id[BENCH].tags == ()
    assert by_id[LFD].n_claims == 3 and by_id[LFD].n_quantitative == 3
    assert by_id[VNODE].n_quantitative == 0 and not by_id[VNODE].has_results
    assert by_id[LFD].sources == (("batch_a.txt", 1),)


def test_torn_last_line_is_skipped_but_a_broken_middle_line_is_an_error(tmp_path):
    lines = (RUN / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "summaries.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:50])
    assert len(list(iter_papers(tmp_path))) == 2
    (tmp_path / "summaries.jsonl").write_text(lines[0] + "\n{oops\n" + lines[1] + "\n")
    with pytest.raises(InputError, match=r"summaries.jsonl:2"):
        list(iter_papers(tmp_path))


def test_missing_run_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no summaries.jsonl"):
        list(iter_papers(tmp_path))


def test_tags_and_versus_or(papers):
    both = ("graph-neural-networks", "theoretical-analysis")
    assert ids(select(papers, Query(tags=both), sort="id")) == [VNODE]
    assert ids(select(papers, Query(tags=both, match_any=True), sort="id")) == [XSS, VNODE]


def test_results_metric_dataset_and_grep(papers):
    assert ids(select(papers, Query(has_results=True), sort="id")) == [LFD, DALE, LLM]
    assert ids(select(papers, Query(metric="auroc"), sort="id")) == [LLM]
    assert ids(select(papers, Query(dataset="ImageNet"), sort="id")) == [LFD, DALE, LLM]
    assert ids(select(papers, Query(dataset="imagenet", metric="FID"), sort="id")) == [LFD]
    assert ids(select(papers, Query(grep="VIRTUAL   nodes"), sort="id")) == [VNODE]
    assert ids(select(papers, Query(grep="<script>"), sort="id")) == [XSS]
    assert select(papers, Query(grep="no such phrase anywhere"), sort="id") == []


def test_sorting(papers, taxonomy):
    # 3 claims; then 2 claims, more quantitative first; then 1; failed/not run count as 0
    assert ids(select(papers, Query(), sort="claims"))[:4] == [LFD, LLM, DALE, VNODE]
    by_tag = ids(select(papers, Query(), sort="tag", taxonomy=taxonomy))
    # Diffusion < Graph (2, by id) < Large < Neuroscience < untagged last
    assert by_tag == [LFD, XSS, VNODE, LLM, DALE, BENCH]
    with pytest.raises(InputError, match="unknown sort key"):
        select(papers, Query(), sort="votes")


def test_resolve_tags_accepts_labels_and_synonyms(taxonomy):
    assert resolve_tags(["GNN", "Diffusion models", "graph-neural-networks"], taxonomy) == (
        "graph-neural-networks",
        "diffusion-models",
    )
    with pytest.raises(InputError, match="did you mean diffusion-models"):
        resolve_tags(["diffuson-models"], taxonomy)
    assert resolve_tags(["Whatever-Tag"], None) == ("whatever-tag",)


def test_csv_cells_are_spreadsheet_safe():
    assert csv_safe('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert csv_safe("@SUM(A1)") == "'@SUM(A1)"
    assert csv_safe("-0.5") == "-0.5"
    assert csv_safe(["a", "b"]) == "a; b"
    assert csv_safe(None) == ""


def test_csv_and_table_formats(papers, taxonomy):
    chosen = select(papers, Query(tags=("graph-neural-networks",)), sort="id", taxonomy=taxonomy)
    rows = list(csv.DictReader(io.StringIO("".join(format_csv(chosen, taxonomy)))))
    assert [r["id"] for r in rows] == [XSS, VNODE]
    assert rows[1]["tag_labels"] == "Graph neural networks; Theory"
    assert rows[0]["failed_stages"] == "claims"
    table = format_table(papers, taxonomy, width=100).splitlines()
    assert len(table) == 2 + 6
    bench = next(line for line in table if line.startswith(BENCH))
    assert "(tags failed)" in bench and " -  " in bench  # claims not run
    assert "failed" in next(line for line in table if line.startswith(XSS))


def _cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture()
def tax_file(tmp_path) -> Path:
    path = tmp_path / "taxonomy.yaml"
    path.write_text(TAXONOMY_YAML, encoding="utf-8")
    return path


def test_cli_triage_jsonl_with_or_tags(tax_file):
    res = _cli(
        "triage", str(RUN), "--tag", "GNN", "--tag", "LLM", "--any", "--sort", "claims",
        "--format", "jsonl", "--taxonomy", str(tax_file),
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["id"] for r in rows] == [LLM, VNODE, XSS]
    assert rows[0]["metrics"] == ["AUROC"] and rows[0]["n_quantitative"] == 2


def test_cli_triage_table_and_errors(tax_file, tmp_path):
    res = _cli(
        "triage", str(RUN), "--has-results", "--dataset", "ImageNet", "--taxonomy", str(tax_file)
    )
    assert res.exit_code == 0
    # default order: most claims first (LFD 3, LLM 2 with 2 quantitative, DALE 2 with 1)
    assert [line.split()[0] for line in res.stdout.splitlines()[2:]] == [LFD, LLM, DALE]
    res = _cli("triage", str(RUN), "--has-results", "--sort", "id", "--reverse")
    assert [line.split()[0] for line in res.stdout.splitlines()[2:]] == [LLM, DALE, LFD]
    res = _cli("triage", str(RUN), "--tag", "quantum", "--taxonomy", str(tax_file))
    assert res.exit_code == 2 and "unknown tag 'quantum'" in res.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    res = _cli("triage", str(empty))
    assert res.exit_code == 2 and "not a run folder" in res.stderr


def test_cli_triage_csv_reads_back(tax_file, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    res = _cli(
        "triage", str(run), "--grep", "benchmark", "--format", "csv", "--taxonomy", str(tax_file)
    )
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [r["id"] for r in rows] == [BENCH]
    assert rows[0]["failed_stages"] == "tags"
