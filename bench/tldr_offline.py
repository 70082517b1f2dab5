"""ROUGE and speed of the offline TL;DR extractor on SciTLDR-A, next to lead-1 and the oracle.

    python -m bench.tldr_offline                       # SciTLDR-A dev from ../shared/data
    python -m bench.tldr_offline --data PATH.jsonl     # any SciTLDR-format JSONL

Each abstract is the paper's `source` sentences joined with spaces, as `digest eval tldr`
does. Prints a Markdown table of ROUGE-1/2/L F1 (rouge-score, Porter stemming) under both
multi-reference protocols ("best": max over a paper's references; "mean": their mean), and
the extractor's throughput on one core (best of a few timed passes).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pipeline.evaluation.rouge import PROTOCOLS, ROUGE_TYPES, lead1, oracle_sentence, score_rouge
from pipeline.evaluation.tasks import read_scitldr
from pipeline.offline.tldr import extract_tldr

REPO_ROOT = Path(__file__).resolve().parents[1]
# shared/ beside the repo (a clone), or two levels up (a worktree under /work/wt/).
DEFAULT_DATA = next(
    (
        p
        for p in (
            REPO_ROOT.parent / "shared" / "data" / "scitldr" / "dev.jsonl",
            REPO_ROOT.parents[1] / "shared" / "data" / "scitldr" / "dev.jsonl",
        )
        if p.exists()
    ),
    REPO_ROOT.parent / "shared" / "data" / "scitldr" / "dev.jsonl",
)


def timed_predictions(abstracts: list[str], passes: int) -> tuple[list[str], float]:
    """The extractor's outputs and its best throughput (abstracts/s) over `passes` runs."""
    best = float("inf")
    predictions: list[str] = []
    for _ in range(passes):
        start = time.perf_counter()
        predictions = [extract_tldr(a) for a in abstracts]
        best = min(best, time.perf_counter() - start)
    return predictions, len(abstracts) / best


def markdown_table(systems: dict[str, dict]) -> str:
    """One row per system: ROUGE-1/2/L under each protocol."""
    cols = [f"{p} R-{r[5:].upper()}" for p in PROTOCOLS for r in ROUGE_TYPES]
    lines = ["| system | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, scores in systems.items():
        cells = [f"{scores[p][r]:.1f}" for p in PROTOCOLS for r in ROUGE_TYPES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SciTLDR-format JSONL")
    parser.add_argument("--limit", type=int, default=None, help="only the first N papers")
    parser.add_argument("--passes", type=int, default=3, help="timed passes of the extractor")
    args = parser.parse_args()

    papers = read_scitldr(args.data, args.limit)
    abstracts = [" ".join(p["source"]) for p in papers]
    references = [p["target"] for p in papers]
    predictions, per_second = timed_predictions(abstracts, args.passes)
    systems = {
        "lead-1": score_rouge([lead1(p["source"]) for p in papers], references),
        "offline extractor": score_rouge(predictions, references),
        "oracle (1 sentence)": score_rouge(
            [oracle_sentence(p["source"], p["target"]) for p in papers], references
        ),
    }
    words = sum(len(p.split()) for p in predictions) / len(predictions)
    print(
        f"SciTLDR ROUGE F1 x100, {len(papers)} papers ({args.data.name}), rouge-score + stemming\n"
    )
    print(markdown_table(systems))
    print(
        f"\noffline extractor: {per_second:,.0f} abstracts/s on one core, {words:.1f} words/TL;DR"
    )


if __name__ == "__main__":
    main()
