"""Every offline-quality figure of issue 12 on the held-out SciTLDR dev gold sets, against its target.

    python -m bench.offline_quality                  # TL;DR, claims and tags, 2,000 resamples
    python -m bench.offline_quality --skip-tldr      # claims and tags only (a few seconds)
    python -m bench.offline_quality --boot 0         # point figures and exact intervals only

Runs `digest eval` with the built-in offline backend (fresh cache, so the figures are the
current code's) on each held-out set separately and on the sets pooled, and prints each
figure with two 95% intervals: a percentile bootstrap over abstracts (claims and tags of one
abstract are not independent) and the exact Clopper-Pearson one that treats them as if they
were. "met" compares the point figure with the target; "in interval" says the bootstrap
interval still reaches the target, i.e. the set cannot tell the figure from the target.

Sets (see tests/data/GOLD.md): claims quantitative figures on the first dev base file plus its
numbers supplement and on the second dev numbers supplement; qualitative recall on the dev base
file alone (the supplements over-represent abstracts with numbers); tags on the two dev tags
sets. No file here is ever tuned on.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.common import machine_note, md_table
from pipeline.testing.offline_figures import (
    CLAIMS_SETS,
    QUALITATIVE_SET,
    TAGS_SETS,
    claims_rows,
    figure_rows,
    qualitative_row,
    tags_rows,
    tldr_row,
)
from pipeline.testing.paths import REPO_ROOT


def _present(sets: Mapping[str, Sequence[Path]]) -> dict[str, Sequence[Path]]:
    return {name: files for name, files in sets.items() if all(p.exists() for p in files)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (0: none)")
    parser.add_argument("--skip-tldr", action="store_true", help="leave out the TL;DR figure")
    args = parser.parse_args(argv)
    print(machine_note())
    headers = ["set", "figure", "value", "95% bootstrap", "95% exact", "target", "verdict"]
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="offline-quality-") as tmp:
        work = Path(tmp)
        (work / "cache").mkdir()
        if not args.skip_tldr:
            row = tldr_row(work, args.boot)
            if row is None:
                print("SciTLDR dev.jsonl not found beside the checkout: TL;DR figure left out")
            else:
                rows.append(row)
        for label, sets, figures in (
            ("claims", CLAIMS_SETS, claims_rows),
            ("tags", TAGS_SETS, tags_rows),
        ):
            present = _present(sets)
            for name, files in present.items():
                rows += figure_rows(f"{label} {name}", figures(files, work, args.boot))
            if len(present) > 1:
                pooled = [p for files in present.values() for p in files]
                rows += figure_rows(f"{label} pooled", figures(pooled, work, args.boot))
            if label == "claims":
                qualitative = qualitative_row(QUALITATIVE_SET, work, args.boot)
                rows += figure_rows("claims dev base", qualitative)
    missing = sorted(
        str(p.relative_to(REPO_ROOT))
        for sets in (CLAIMS_SETS, TAGS_SETS)
        for files in sets.values()
        for p in files
        if not p.exists()
    )
    if missing:
        print("not present (left out): " + ", ".join(missing))
    print(md_table(headers, rows))


if __name__ == "__main__":
    main()
