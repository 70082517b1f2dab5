"""`digest eval` tasks: TL;DR quality on SciTLDR, claim extraction against a gold set, run
grounding.

Each evaluation runs the real stage through the configured backend (cache applies) by
writing its inputs as a JSONL file and running the same job as `digest run`, so what is
measured is what users get.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pipeline.atomicfile import make_parent, write_text
from pipeline.config import Settings
from pipeline.context import RunContext, load_project_taxonomy
from pipeline.errors import InputError
from pipeline.evaluation.claims_eval import load_gold, load_gold_abstracts, score_claims
from pipeline.evaluation.grounding import grounding_report
from pipeline.evaluation.rouge import PROTOCOLS, lead1, oracle_sentence, score_rouge
from pipeline.evaluation.tags_eval import load_tags_gold, score_tags, tags_gold_problems
from pipeline.ingest import read_inputs
from pipeline.job import JobResult, run_job
from pipeline.jsonl import iter_jsonl
from pipeline.mdtext import md_escape
from pipeline.rundir import RunReader, SummaryRecord
from pipeline.taxonomy import Taxonomy
from pipeline.text import text_hash

EVAL_JSON = "eval.json"
EVAL_MD = "eval.md"


def read_scitldr(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """SciTLDR papers: `source` sentences, `target` reference TL;DRs, `paper_id`."""
    papers = []
    for lineno, row in iter_jsonl(path):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("source"), list)
            or not all(isinstance(s, str) for s in row["source"])
            or not isinstance(row.get("target"), list)
            or not row["target"]
            or not all(isinstance(t, str) for t in row["target"])
        ):
            raise InputError(
                f"{path}:{lineno}: expected a SciTLDR row with 'source' and 'target' lists "
                "of strings"
            )
        papers.append(row)
        if limit and len(papers) >= limit:
            break
    if not papers:
        raise InputError(f"{path}: no papers")
    return papers


def _run_stage(
    settings: Settings, stage: str, rows: list[dict], out_dir: Path
) -> tuple[JobResult, dict[str, SummaryRecord], Taxonomy]:
    """Run one stage over rows ({id, abstract}) via the normal job: (job, records by id, the
    run's taxonomy)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    inputs = out_dir / "inputs.jsonl"
    with inputs.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    run_settings = settings.model_copy(update={"stages": (stage,)})
    context = RunContext(run_settings)
    job = run_job(
        run_settings, read_inputs([inputs], stream=True), out_dir / "run", context=context
    )
    records = {r.id: r for r in RunReader(job.run_dir).records()}
    return job, records, context.taxonomy


def _stage_output(record: SummaryRecord | None, stage: str) -> dict | None:
    return record.output(stage) if record is not None else None


def evaluate_tldr(
    settings: Settings, path: Path, out_dir: Path, *, limit: int | None = None
) -> dict:
    """ROUGE of the configured backend's TL;DRs vs lead-1 and the extractive oracle."""
    papers = read_scitldr(path, limit)
    rows: list[dict[str, str]] = [
        {"id": str(p.get("paper_id") or ""), "abstract": " ".join(p["source"])} for p in papers
    ]
    job, records, _taxonomy = _run_stage(settings, "tldr", rows, out_dir)
    references = [p["target"] for p in papers]
    predictions, failed = [], 0
    for row in rows:
        output = _stage_output(records.get(text_hash(row["abstract"])), "tldr")
        failed += output is None
        predictions.append(output["tldr"] if output else "")  # a failure scores 0, not skipped
    systems = {
        "lead-1": score_rouge([lead1(p["source"]) for p in papers], references),
        f"{job.manifest.backend} ({job.manifest.model})": score_rouge(predictions, references),
        "oracle (1 sentence)": score_rouge(
            [oracle_sentence(p["source"], p["target"]) for p in papers], references
        ),
    }
    return {
        "task": "tldr",
        "data": str(path),
        "papers": len(papers),
        "failed": failed,
        "systems": systems,
        "run_dir": str(job.run_dir),
        "elapsed_s": job.manifest.elapsed_s,
    }


def _merged_gold(paths: list[Path], load: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Several gold files' records by id, in file order; an abstract in two files is an error."""
    gold: dict[str, Any] = {}
    for path in paths:
        part = load(path)
        repeated = sorted(set(part) & set(gold))
        if repeated:
            raise InputError(f"{path}: abstracts already in an earlier gold file: {repeated[:3]}")
        gold.update(part)
    return gold


def evaluate_claims(settings: Settings, gold_paths: list[Path], out_dir: Path) -> dict:
    """Precision/recall/F1 of the claims stage against hand-labelled gold files, together."""
    gold: dict[str, list[dict]] = _merged_gold(gold_paths, load_gold)
    abstracts: dict[str, str] = _merged_gold(gold_paths, load_gold_abstracts)
    rows = [{"id": gid, "abstract": text} for gid, text in abstracts.items()]
    job, records, taxonomy = _run_stage(settings, "claims", rows, out_dir)
    predicted: dict[str, list[Mapping[str, Any]]] = {
        gid: (_stage_output(records.get(gid), "claims") or {}).get("claims", []) for gid in gold
    }
    scores = score_claims(predicted, gold, abstracts=abstracts)
    return {
        "task": "claims",
        "data": [str(p) for p in gold_paths],
        "system": f"{job.manifest.backend} ({job.manifest.model})",
        "abstracts": len(gold),
        "scores": {k: v for k, v in scores.items() if k != "abstracts"},
        "per_abstract": scores["abstracts"],
        "grounding": grounding_report(records.values(), taxonomy),
        "run_dir": str(job.run_dir),
    }


def evaluate_tags(settings: Settings, gold_paths: list[Path], out_dir: Path) -> dict:
    """Precision/recall/F1 and primary-tag accuracy of the tags stage against gold files, together."""
    gold = _merged_gold(gold_paths, load_tags_gold)
    taxonomy = load_project_taxonomy(settings)
    problems = tags_gold_problems(gold, taxonomy)
    if problems:
        names = ", ".join(str(p) for p in gold_paths)
        raise InputError(f"invalid tags gold file(s) {names}: " + "; ".join(problems[:10]))
    rows = [{"id": gid, "abstract": r["abstract"]} for gid, r in gold.items()]
    job, records, _taxonomy = _run_stage(settings, "tags", rows, out_dir)
    predicted = {
        gid: (_stage_output(records.get(gid), "tags") or {}).get("tags", []) for gid in gold
    }
    scores = score_tags(predicted, gold)
    return {
        "task": "tags",
        "data": [str(p) for p in gold_paths],
        "system": f"{job.manifest.backend} ({job.manifest.model})",
        "abstracts": len(gold),
        "scores": {k: v for k, v in scores.items() if k != "abstracts"},
        "per_abstract": scores["abstracts"],
        "run_dir": str(job.run_dir),
    }


def evaluate_grounding(settings: Settings, run_dir: Path) -> dict:
    """Grounding figures for any run folder."""
    reader = RunReader(run_dir)
    reader.warn_if_incomplete()
    report = grounding_report(reader.records(), load_project_taxonomy(settings))
    return {"task": "grounding", "run_dir": str(run_dir), "incomplete": reader.incomplete, **report}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


INTERVAL_NOTE = (
    "Brackets: exact 95% (Clopper-Pearson) interval, counting each claim or tag as independent (those of one "
    "abstract are not, so the true interval is somewhat wider)."
)


def _rate(scores: dict, name: str) -> str:
    """A rate with its 95% interval, e.g. `89.5% [78.9, 95.1]`."""
    ci = scores.get(f"{name}_ci95")
    text = _pct(scores.get(name))
    return text if ci is None else f"{text} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def markdown(result: dict) -> str:
    """A Markdown table of an evaluation result."""
    if result["task"] == "tldr":
        lines = [
            f"SciTLDR ROUGE F1 ({result['papers']} papers, rouge-score with stemming)",
            "",
            "| system | " + " | ".join(f"R1 {p} | R2 {p} | RL {p}" for p in PROTOCOLS) + " |",
            "|---|" + "---:|" * (3 * len(PROTOCOLS)),
        ]
        for name, s in result["systems"].items():
            cells = [f"{s[p][r]:.1f}" for p in PROTOCOLS for r in ("rouge1", "rouge2", "rougeL")]
            lines.append(f"| {md_escape(name, cell=True)} | " + " | ".join(cells) + " |")
        if result["failed"]:
            lines += ["", f"{result['failed']} TL;DR(s) failed and score 0."]
        return "\n".join(lines) + "\n"
    if result["task"] == "claims":
        s = result["scores"]
        lines = [
            f"Claims vs gold ({result['abstracts']} abstracts), system "
            + md_escape(result["system"]),
            "",
            "| scope | precision | recall | F1 | matched / predicted | matched / gold |",
            "|---|---:|---:|---:|---:|---:|",
            f"| all | {_rate(s, 'precision')} | {_rate(s, 'recall')} | {_pct(s['f1'])} "
            f"| {s['tp']} / {s['tp'] + s['fp']} | {s['tp']} / {s['tp'] + s['fn']} |",
        ]
        for kind, k in s["by_kind"].items():
            lines.append(
                f"| {kind} | {_rate(k, 'precision')} | {_rate(k, 'recall')} | {_pct(k.get('f1'))} "
                f"| {k['matched_predicted']} / {k['predicted']} | {k['matched_gold']} / {k['gold']} |"
            )
        g = result["grounding"]["claims"]
        m = s.get("metric_acceptable") or {}
        lines += [
            "",
            f"Evidence verbatim in abstract: {_pct(g['evidence_grounded_share'])} of {g['claims']} claims.",
        ]
        if m:
            lines.append(
                f"Metric name acceptable on {_pct(m.get('share'))} of matched quantitative "
                f"claims ({m.get('count')}/{m.get('of')})."
            )
        lines.append(INTERVAL_NOTE)
        return "\n".join(lines) + "\n"
    if result["task"] == "tags":
        s = result["scores"]
        return (
            "\n".join(
                [
                    f"Tags vs gold ({result['abstracts']} abstracts), system "
                    + md_escape(result["system"]),
                    "",
                    "| precision | recall | F1 | primary ok | primary required | predicted | wrong | missed |",
                    "|---:|---:|---:|---:|---:|---:|---:|---:|",
                    f"| {_rate(s, 'precision')} | {_rate(s, 'recall')} | {_pct(s['f1'])} "
                    f"| {_pct(s['primary_accuracy'])} | {_pct(s['primary_required'])} "
                    f"| {s['predicted']} | {s['wrong']} | {s['missed']} |",
                    "",
                    INTERVAL_NOTE,
                ]
            )
            + "\n"
        )
    c, t, g = result["claims"], result["tldr"], result["tags"]
    return (
        "\n".join(
            [
                f"Grounding of {md_escape(str(result['run_dir']))} ({result['records']} records)",
                "",
                "| check | figure |",
                "|---|---:|",
                f"| claims with evidence verbatim in the abstract | {_pct(c['evidence_grounded_share'])} ({c['evidence_grounded']}/{c['claims']}) |",
                f"| claim values found in their evidence | {_pct(c['value_in_evidence_share'])} ({c['value_in_evidence']}/{c['with_value']}) |",
                f"| TL;DR numbers found in the abstract | {_pct(t['numbers_in_abstract_share'])} ({t['numbers_in_abstract']}/{t['numbers']}) |",
                f"| tags outside the taxonomy | {g['outside_taxonomy']} of {g['tags']} |",
            ]
        )
        + "\n"
    )


def write_result(result: dict, out_dir: Path) -> tuple[Path, Path]:
    """Write eval.json and eval.md into out_dir."""
    json_path = make_parent(out_dir / EVAL_JSON)
    write_text(json_path, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return json_path, write_text(out_dir / EVAL_MD, markdown(result))
