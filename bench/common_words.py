"""Regenerate pipeline/assign/common_words.txt: words too common in ML abstracts to be expertise.

A reviewer keyword of one word counts only when it is not in this list (pipeline/assign/
affinity.py): the list holds every word found in more than 2% of the SciTLDR train + dev
abstracts (2,609 ML papers), i.e. IDF below ln(50).

    python bench/common_words.py [../shared/data/scitldr]
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "pipeline" / "assign" / "common_words.txt"
MAX_SHARE = 0.02
_WORD = re.compile(r"[^\W_]+")


def main() -> None:
    """Count document frequencies and write the list."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/shared/data/scitldr")
    df: Counter[str] = Counter()
    n = 0
    for split in ("train", "dev"):
        for line in (root / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            text = " ".join(json.loads(line)["source"]).lower()
            df.update({w for w in _WORD.findall(text) if not w.isdigit()})
            n += 1
    words = sorted(w for w, c in df.items() if c > MAX_SHARE * n)
    header = (
        f"# Words in more than {MAX_SHARE:.0%} of {n} SciTLDR train+dev abstracts "
        "(bench/common_words.py).\n# A one-word reviewer keyword in this list does not "
        "count as expertise.\n"
    )
    OUT.write_text(header + "\n".join(words) + "\n", encoding="utf-8")
    print(f"{len(words)} words -> {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
