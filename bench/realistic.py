"""The realistic-answer corpus through the real pipeline and a local replay server.

    python -m bench.realistic [--reasks N] [--json-object]
    python -m bench.realistic --corpus small-models [--split heldout|dev|all] [--verbose]
    python -m bench.realistic --corpus small-models --by-batch

The first form runs the gpt-4o-mini-style corpus in its four variants (natural, typography,
shapes, fabricated: pipeline/testing/realistic.py), each one `digest` run (openai backend, the
real `openai` client, re-asks off by default) against the replay server
(pipeline/testing/replay_server.py) on 127.0.0.1. Printed figures: the share of faithful
claims kept (target >= 99%) and the number of fabricated items that reached summaries.jsonl
(target 0), per variant, plus tokens per abstract per stage.

The second form runs the small-model corpus (bench/small_models.py): max_reasks 0, then
the default re-asks with a model that obeys each re-ask.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from pipeline.testing.realistic import VARIANTS, load_corpus, run_variant
from pipeline.testing.small_models import split_names


def main(argv: list[str] | None = None) -> int:
    """Run every variant and print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.realistic")
    parser.add_argument("--reasks", type=int, default=0, help="max_reasks (default 0: off)")
    parser.add_argument("--json-object", action="store_true", help="response_format json_object")
    parser.add_argument(
        "--corpus",
        choices=("gpt-4o-mini", "small-models"),
        default="gpt-4o-mini",
        help="which answer corpus (default: the gpt-4o-mini-style one)",
    )
    splits = split_names()
    parser.add_argument(
        "--split",
        choices=(*splits, "all"),
        default=splits[-1],
        help="a batch of the small-model corpus (default: the newest), or all",
    )
    parser.add_argument("--verbose", action="store_true", help="list what was lost")
    parser.add_argument(
        "--by-batch", action="store_true", help="small models: one table row per batch"
    )
    args = parser.parse_args(argv)
    if args.corpus == "small-models":
        from bench import small_models

        if args.by_batch:
            return small_models.by_batch()

        reasks = [args.reasks] if args.reasks else [0, 2]
        return small_models.main(args.split, reasks, compliant=True, verbose=args.verbose)
    corpus = load_corpus()
    print(
        f"realistic-answer corpus: {len(corpus)} abstracts, "
        f"{sum(len(p.claims) for p in corpus)} natural claims; max_reasks={args.reasks}, "
        f"response_format={'json_object' if args.json_object else 'json_schema'}"
    )
    total_faithful = total_kept = total_leaked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for variant in VARIANTS:
            s = run_variant(
                variant, corpus, Path(tmp), max_reasks=args.reasks, json_object=args.json_object
            )
            total_faithful += s.faithful
            total_kept += s.kept
            total_leaked += s.fabricated_in_output
            print(
                f"  {variant:<11} faithful claims kept {s.kept}/{s.faithful} "
                f"({100 * s.kept_share:.1f}%)  fabricated items {s.fabricated}, "
                f"in the output {s.fabricated_in_output}  requests {s.requests}"
            )
            if variant == "natural":
                natural = s
    print(
        f"faithful claims kept: {100 * total_kept / total_faithful:.1f}% "
        f"({total_kept}/{total_faithful}; target >= 99%)"
    )
    print(f"fabricated items in the output: {total_leaked} (target 0)")
    n = len(corpus)
    print("tokens per abstract (natural answers; server count, chars/4):")
    for stage, t in natural.tokens.items():
        print(
            f"  {stage:<7} input {t['in'] / n:>6.0f} (cached {t['cached'] / n:>5.0f})  "
            f"output {t['out'] / n:>5.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
