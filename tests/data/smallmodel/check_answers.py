"""Structure check of a small-model answers file (no pipeline code: the labels stay blind).

python tests/data/smallmodel/check_answers.py tests/data/smallmodel/answers_llama.yaml
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).parent
CLAIM_CATEGORIES = {
    "dataset",
    "baseline",
    "statement_number",
    "value_number",
    "metric_number",
    "evidence_changed",
    "evidence_invented",
}
TLDR_CATEGORIES = {"tldr_name", "tldr_number"}


def fold(text: str) -> str:
    return " ".join(text.lower().split())


def check(path: Path) -> list[str]:
    abstracts = {
        r["paper_id"]: r
        for r in map(json.loads, (HERE / "abstracts.jsonl").read_text().splitlines())
    }
    taxonomy = yaml.safe_load((HERE.parents[2] / "prompts" / "taxonomy.yaml").read_text())
    ids = {t["id"] for f in taxonomy["facets"] for t in f["tags"]}
    problems: list[str] = []
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    seen = Counter(e["paper_id"] for e in entries)
    counts: Counter = Counter()
    for e in entries:
        pid = e["paper_id"]
        where = f"{path.name}:{pid}"
        if pid not in abstracts:
            problems.append(f"{where}: unknown paper_id")
            continue
        if seen[pid] > 1:
            problems.append(f"{where}: paper_id repeated")
        abstract = abstracts[pid]["abstract"]
        split = abstracts[pid]["split"]
        if set(e) != {"paper_id", "model", "tldr", "tags", "claims"}:
            problems.append(f"{where}: keys must be paper_id, model, tldr, tags, claims")
            continue
        for stage in ("tldr", "tags", "claims"):
            if not isinstance(e[stage].get("raw"), str) or not e[stage]["raw"].strip():
                problems.append(f"{where}: {stage}.raw must be the answer text")
        for f in e["tldr"].get("fabricated") or []:
            if f.get("category") not in TLDR_CATEGORIES:
                problems.append(f"{where}: tldr fabricated category {f.get('category')!r}")
            if fold(f["text"]) in fold(abstract) or f["text"] not in e["tldr"]["raw"]:
                problems.append(
                    f"{where}: tldr fabricated text {f['text']!r} must be in raw, not in the abstract"
                )
            counts[split, f.get("category")] += 1
        for t in e["tags"].get("labels") or []:
            if t.get("label") not in ("faithful", "fabricated"):
                problems.append(f"{where}: tag label {t}")
            if t.get("id") not in ids:
                problems.append(
                    f"{where}: tag {t.get('text')!r}: id {t.get('id')!r} is not a taxonomy id"
                )
            if t.get("text") not in e["tags"]["raw"]:
                problems.append(f"{where}: tag text {t.get('text')!r} not in tags.raw")
            if t.get("label") == "fabricated":
                counts[split, "unsupported_tag"] += 1
            else:
                counts[split, "faithful_tag"] += 1
        for k in e["tags"].get("keywords") or []:
            if (
                k.get("label") not in ("faithful", "fabricated")
                or k.get("text") not in e["tags"]["raw"]
            ):
                problems.append(f"{where}: keyword {k}")
            if k.get("label") == "fabricated":
                counts[split, "keyword"] += 1
                if fold(k["text"]) in fold(abstract):
                    problems.append(f"{where}: fabricated keyword {k['text']!r} is in the abstract")
        for i, c in enumerate(e["claims"].get("items") or []):
            if c.get("label") == "faithful":
                counts[split, "faithful_claim"] += 1
                if not c.get("span") or c["span"] not in abstract:
                    problems.append(
                        f"{where}: claim {i}: span must be an exact substring of the abstract"
                    )
                if c.get("value") is not None and str(c["value"]) not in c.get("span", ""):
                    problems.append(f"{where}: claim {i}: value {c['value']!r} not in its span")
            elif c.get("label") == "fabricated":
                if c.get("category") not in CLAIM_CATEGORIES:
                    problems.append(f"{where}: claim {i}: category {c.get('category')!r}")
                text = str(c.get("text") or "")
                if not text or fold(text) in fold(abstract) or text not in e["claims"]["raw"]:
                    problems.append(
                        f"{where}: claim {i}: fabricated text {text!r} must be in raw, not in the abstract"
                    )
                counts[split, c.get("category")] += 1
            else:
                problems.append(f"{where}: claim {i}: label {c.get('label')!r}")
    print(f"{path.name}: {len(entries)} entries")
    for key in sorted(counts):
        print(f"  {key[0]:<8} {key[1]:<18} {counts[key]}")
    return problems


if __name__ == "__main__":
    all_problems = [p for arg in sys.argv[1:] for p in check(Path(arg))]
    print("\n".join(all_problems) or "ok")
    sys.exit(1 if all_problems else 0)
