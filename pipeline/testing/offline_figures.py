"""The offline extractor's quality figures on the held-out SciTLDR dev gold sets, against targets.

`digest eval` runs in a child with the built-in offline backend (fresh cache, so the figures
are the current code's). Each figure comes with two 95% intervals: a percentile bootstrap
over abstracts (claims and tags of one abstract are not independent) and the exact
Clopper-Pearson one that treats them as if they were. "met" compares the point figure with
the target; "in interval" says the bootstrap interval still reaches the target, i.e. the set
cannot tell the figure from the target. `python -m bench.offline_quality` prints the table.

Sets (see tests/data/GOLD.md): claims quantitative figures on the first dev base file plus its
numbers supplement and on the second dev numbers supplement; qualitative recall on the dev base
file alone (the supplements over-represent abstracts with numbers); tags on the two dev tags
sets. No file here is ever tuned on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.evaluation.intervals import bootstrap_rates, interval95
from pipeline.evaluation.rouge import paper_scores
from pipeline.evaluation.tags_eval import load_tags_gold
from pipeline.evaluation.tasks import read_scitldr
from pipeline.jsonl import iter_jsonl
from pipeline.testing.agreement import (
    CLAIMS_GOLD,
    TAGS_GOLD,
    claims_agreement,
    load_claims_gold,
    tags_scores,
)
from pipeline.testing.children import digest_argv, run_child
from pipeline.testing.paths import REPO_ROOT, TEST_DATA
from pipeline.text import text_hash

SCITLDR_DEV = [
    REPO_ROOT.parent / "shared" / "data" / "scitldr" / "dev.jsonl",
    REPO_ROOT.parents[1] / "shared" / "data" / "scitldr" / "dev.jsonl",
]
CLAIMS_SETS = {"dev": CLAIMS_GOLD, "dev2": (TEST_DATA / "claims_gold_dev2_numbers.jsonl",)}
QUALITATIVE_SET = CLAIMS_GOLD[:1]  # the dev base file
TAGS_SETS = {"dev": (TAGS_GOLD,), "dev2": (TEST_DATA / "tags_gold_dev2.jsonl",)}
TARGETS = {
    "TL;DR ROUGE-1 best-ref": 0.445,
    "quantitative precision": 0.95,
    "quantitative recall": 0.90,
    "metric name acceptable": 0.85,
    "tags precision": 0.90,
    "tags recall": 0.80,
}


def _eval(task: str, files: Sequence[Path], work: Path) -> tuple[dict, dict[str, dict]]:
    """`digest eval TASK FILES` offline in a child; its eval.json and the run's records by id."""
    out = work / f"{task}-{len(list(work.iterdir()))}"
    child = run_child(
        digest_argv("eval", task, *files, "--provider", "offline", "--out", out,
                   "--cache-dir", work / "cache", "--no-progress")
    )  # fmt: skip
    if child.returncode != 0:
        raise SystemExit(f"digest eval {task} failed ({child.returncode}):\n{child.stderr}")
    result = json.loads((out / "eval.json").read_text(encoding="utf-8"))
    summaries = Path(result["run_dir"], "summaries.jsonl")
    return result, {r["id"]: r for _, r in iter_jsonl(summaries)}


def _stage(record: Mapping | None, stage: str) -> dict:
    """A record's output for one stage ({} when it failed or is missing)."""
    return ((record or {}).get("stages", {}).get(stage) or {}).get("output") or {}


def _claims_of(record: Mapping | None) -> list[dict]:
    return list(_stage(record, "claims").get("claims", []))


def _only(claims: Mapping[str, Sequence[Mapping]], kind: str) -> dict[str, list]:
    return {gid: [c for c in cs if c.get("kind") == kind] for gid, cs in claims.items()}


def _kind_figures(files: Sequence[Path], work: Path, boot: int, kind: str) -> dict:
    """score_claims on one kind of claim alone, with bootstrap intervals (gold_agreement's).

    A quantitative claim (it has a value) can only match a claim with the same number, so the
    matching splits by kind and scoring each kind on its own gives the same hits as scoring all.
    """
    gold, abstracts = load_claims_gold(files)
    _, records = _eval("claims", files, work)
    predicted = {gid: _claims_of(records.get(gid)) for gid in gold}
    return claims_agreement(_only(predicted, kind), _only(gold, kind), abstracts, boot)


def _fraction(k: int, n: int, interval: Sequence[float] | None) -> dict:
    return {"k": k, "n": n, "boot": interval}


def claims_rows(files: Sequence[Path], work: Path, boot: int) -> dict[str, dict]:
    """Quantitative precision, recall and metric acceptability."""
    row = _kind_figures(files, work, boot, "quantitative")
    s, ci, m = row["scores"], row["ci"], row["scores"]["metric_acceptable"]
    return {
        "quantitative precision": _fraction(s["tp"], s["tp"] + s["fp"], ci.get("precision")),
        "quantitative recall": _fraction(s["tp"], s["tp"] + s["fn"], ci.get("recall")),
        "metric name acceptable": _fraction(m["count"], m["of"], ci.get("metric")),
    }


def qualitative_row(files: Sequence[Path], work: Path, boot: int) -> dict[str, dict]:
    """Qualitative precision and recall (reported, no target) on the dev base file."""
    row = _kind_figures(files, work, boot, "qualitative")
    s, ci = row["scores"], row["ci"]
    return {
        "qualitative precision": _fraction(s["tp"], s["tp"] + s["fp"], ci.get("precision")),
        "qualitative recall": _fraction(s["tp"], s["tp"] + s["fn"], ci.get("recall")),
    }


def tags_rows(files: Sequence[Path], work: Path, boot: int) -> dict[str, dict]:
    """Tags micro precision and recall."""
    gold: dict[str, dict] = {}
    for path in files:
        gold.update(load_tags_gold(path))
    _, records = _eval("tags", files, work)
    predicted = {gid: _stage(records.get(gid), "tags").get("tags", []) for gid in gold}
    row = tags_scores(predicted, gold, boot)
    s, ci = row["scores"], row["ci"]
    return {
        "tags precision": _fraction(s["correct"], s["predicted"], ci.get("precision")),
        "tags recall": _fraction(s["found"], s["required"], ci.get("recall")),
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def _span(interval: Sequence[float] | None) -> str:
    return "n/a" if not interval else f"[{_pct(interval[0])}, {_pct(interval[1])}]"


def _verdict(name: str, share: float | None, interval: Sequence[float] | None) -> str:
    target = TARGETS.get(name)
    if target is None or share is None:
        return "reported"
    if share >= target:
        return "met"
    return "not met, in interval" if interval and interval[1] >= target else "not met"


def figure_rows(set_name: str, figures: Mapping[str, dict]) -> list[list[str]]:
    """Table rows: set, figure, value (k/n), bootstrap interval, exact interval, target, verdict."""
    rows = []
    for name, f in figures.items():
        share = f["k"] / f["n"] if f["n"] else None
        target = TARGETS.get(name)
        rows.append(
            [
                set_name,
                name,
                f"{_pct(share)} ({f['k']}/{f['n']})",
                _span(f["boot"]),
                _span(interval95(f["k"], f["n"])),
                "" if target is None else _pct(target),
                _verdict(name, share, f["boot"] or interval95(f["k"], f["n"])),
            ]
        )
    return rows


def tldr_row(work: Path, boot: int) -> list[str] | None:
    """ROUGE-1 best-ref of the offline system on all of SciTLDR dev (the issue's figure)."""
    path = next((p for p in SCITLDR_DEV if p.exists()), None)
    if path is None:
        return None
    result, records = _eval("tldr", [path], work)
    offline = next(s for name, s in result["systems"].items() if name.startswith("offline"))
    best, mean = offline["best"], offline["mean"]
    r1 = best["rouge1"] / 100  # eval.json keeps ROUGE in points
    papers = read_scitldr(path)
    per_paper: dict[str, dict[str, Any]] = {}
    for i, paper in enumerate(papers):
        output = _stage(records.get(text_hash(" ".join(paper["source"]))), "tldr")
        tldr = output.get("tldr", "")
        per_paper[str(i)] = {"r1": paper_scores(tldr, paper["target"])["best"]["rouge1"], "one": 1}
    ci = bootstrap_rates(per_paper, {"r1": lambda c: (c["r1"], c["one"])}, boot, seed=6)
    name = "TL;DR ROUGE-1 best-ref"
    return [
        f"SciTLDR dev ({result['papers']} papers)",
        name,
        f"{_pct(r1)} (R2 {best['rouge2']:.1f}, RL {best['rougeL']:.1f}; mean-ref R1 "
        f"{mean['rouge1']:.1f})",
        _span(ci.get("r1")),
        "",
        _pct(TARGETS[name]),
        _verdict(name, r1, ci.get("r1")),
    ]
