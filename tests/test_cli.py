"""`digest run` end to end on the shipped samples with the offline backend; exit codes."""

import json

import pytest
from click.testing import CliRunner
from samples import SHORT_ABSTRACT, SHORT_ABSTRACT_2

from pipeline.cli import main
from pipeline.text import find_span, numbers_in


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)), catch_exceptions=False)


def read_jsonl(path):
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, examples_dir):
    tmp = tmp_path_factory.mktemp("cli")
    result = invoke(
        "run", examples_dir, "--out", tmp / "run1", "--cache-dir", tmp / "cache", "--no-progress"
    )
    return tmp, result


def test_offline_run_over_samples_is_complete_and_grounded(first_run):
    tmp, result = first_run
    assert result.exit_code == 0, result.output
    assert "backend: offline" in result.stderr
    assert "57 abstracts" in result.stdout
    run_dir = tmp / "run1"
    records = read_jsonl(run_dir / "summaries.jsonl")
    assert len(records) == 57
    assert read_jsonl(run_dir / "errors.jsonl") == []
    for record in records:
        stages = record["stages"]
        assert {s["status"] for s in stages.values()} == {"ok"}, record["id"]
        assert stages["tldr"]["output"]["tldr"].strip()
        assert len(stages["tags"]["output"]["tags"]) >= 1
        for name, stage in stages.items():
            prov = stage["provenance"]
            assert (
                prov["backend"] == "offline"
                and prov["attempts"] == 1
                and len(prov["prompt_hash"]) == 16
            ), name
        for claim in stages["claims"]["output"]["claims"]:
            start, end = claim["span"]
            assert find_span(record["abstract"], claim["evidence"]) == (start, end)
            if claim["value"]:
                assert numbers_in(claim["value"])[0].lstrip("+-") in numbers_in(claim["evidence"])
    auroc = [
        c
        for r in records
        for c in r["stages"]["claims"]["output"]["claims"]
        if "+5.14%" in c["evidence"]
    ]
    assert auroc and auroc[0]["value"].lstrip("+") == "5.14" and auroc[0]["metric"] == "mean AUROC"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["counts"]["inputs"] == 57 and manifest["counts"]["unique"] == 57
    assert manifest["counts"]["stages"]["claims"]["ok"] == 57
    assert manifest["status"] == "ok"
    assert set(manifest["prompts"]) == {"tldr", "tags", "claims"}
    header = (run_dir / "summaries.csv").read_text(encoding="utf-8-sig").splitlines()[0]
    assert header.startswith("paper_id,number,title,id,sources,tldr,tags")


def test_second_run_into_another_folder_is_all_cache_hits(first_run, examples_dir):
    tmp, _ = first_run
    result = invoke(
        "run", examples_dir, "--out", tmp / "run2", "--cache-dir", tmp / "cache", "--no-progress"
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp / "run2" / "manifest.json").read_text())
    for stage in manifest["counts"]["stages"].values():
        assert stage["backend_calls"] == 0 and stage["cache_hits"] == 57

    def outputs(path):
        return [
            (r["id"], {k: v["output"] for k, v in r["stages"].items()}) for r in read_jsonl(path)
        ]

    assert outputs(tmp / "run2" / "summaries.jsonl") == outputs(tmp / "run1" / "summaries.jsonl")


def test_duplicates_are_one_record_with_all_sources(tmp_path, examples_dir):
    src = examples_dir / "000_83025b0b2ab87d39.txt"
    (tmp_path / "a.txt").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "b.txt").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    result = invoke(
        "run",
        tmp_path / "a.txt",
        tmp_path / "b.txt",
        "--out",
        tmp_path / "run",
        "--cache-dir",
        tmp_path / "cache",
        "--no-progress",
        "--stages",
        "tldr",
    )
    assert result.exit_code == 0, result.output
    records = read_jsonl(tmp_path / "run" / "summaries.jsonl")
    assert len(records) == 19
    assert [s["file"][-5:] for s in records[0]["sources"]] == ["a.txt", "b.txt"]
    assert set(records[0]["stages"]) == {"tldr"}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.txt", None, "no such file"),
        ("empty.txt", "", "is empty"),
        ("notes.pdf", "%PDF", "unsupported"),
    ],
)
def test_bad_input_exits_2_with_one_message(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    result = invoke(
        "run", path, "--out", tmp_path / "run", "--cache-dir", tmp_path / "cache", "--no-progress"
    )
    assert result.exit_code == 2
    assert message in result.stderr and name in result.stderr
    assert "Traceback" not in result.output


def test_failed_records_exit_1_and_are_written(tmp_path, examples_dir, monkeypatch):
    import pipeline.offline.tldr as tldr

    real = tldr.extract_tldr

    def broken(abstract):
        if abstract.startswith("Signed connections"):
            return "This is one sentence. This is another."
        return real(abstract)

    monkeypatch.setattr(tldr, "extract_tldr", broken)
    result = invoke(
        "run",
        examples_dir,
        "--out",
        tmp_path / "run",
        "--cache-dir",
        tmp_path / "cache",
        "--no-progress",
    )
    assert result.exit_code == 1
    assert "1 stage result(s) failed" in result.stderr and "errors.jsonl" in result.stderr
    errors = read_jsonl(tmp_path / "run" / "errors.jsonl")
    assert [(e["stage"], e["kind"]) for e in errors] == [("tldr", "schema")]
    assert "exactly one sentence" in errors[0]["message"]
    assert len(read_jsonl(tmp_path / "run" / "summaries.jsonl")) == 57
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["counts"]["stages"]["tldr"]["failed"] == 1


def test_help_documents_every_flag():
    result = invoke("run", "--help")
    for flag in [
        "--provider",
        "--model",
        "--base-url",
        "--stages",
        "--concurrency",
        "--out",
        "--force",
        "--cache-dir",
    ]:
        assert flag in result.output


def test_input_edited_during_the_run_stops_it_before_any_record(tmp_path, monkeypatch):
    import pipeline.cli.run as job

    path = tmp_path / "rows.jsonl"
    rows = [SHORT_ABSTRACT, SHORT_ABSTRACT_2]
    path.write_text("".join(json.dumps({"abstract": r}) + "\n" for r in rows))
    real = job.read_inputs

    def scan_then_edit(paths, **kwargs):
        result = real(paths, **kwargs)
        edited = [rows[0], rows[1] + " Edited."]
        path.write_text("".join(json.dumps({"abstract": r}) + "\n" for r in edited))
        return result

    monkeypatch.setattr(job, "read_inputs", scan_then_edit)
    out, cache = tmp_path / "run", tmp_path / "cache"
    result = invoke("run", path, "--out", out, "--cache-dir", cache, "--no-progress")
    assert result.exit_code == 2
    assert "changed while the run was reading it" in result.stderr
    # Stopped before its first record: no run folder, nothing half-made left behind.
    assert not out.exists()


def test_every_command_is_registered_by_the_module_the_lazy_group_names():
    """pipeline.cli imports a command's module only when the command runs: each name must
    map to the module that registers it, and every registered command must be mapped."""
    import importlib
    import subprocess
    import sys

    from pipeline.cli import COMMAND_MODULES

    for name, module in COMMAND_MODULES.items():
        importlib.import_module(f"pipeline.cli.{module}")
        assert name in main.commands, (name, module)
    assert set(main.commands) == set(COMMAND_MODULES)
    # `digest triage` loads neither the run engine nor the job (a fresh interpreter).
    code = (
        "import sys; from pipeline.cli import main; main.get_command(None, 'triage'); "
        "print(sorted(m for m in sys.modules if m.startswith(('pipeline.job', 'pipeline.engine'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
