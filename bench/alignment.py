"""What the near-verbatim evidence bound lets through (pipeline/alignment.py).

    python -m bench.alignment

Every evidence span of the claims gold sets, the gpt-4o-mini-style corpus and the small-model
corpus is changed the ways a fabrication changes a quote, one edit at a time:

- `number`: one digit of a number changed (every number of the span);
- `antonym`: a word swapped for its opposite ("faster" -> "slower", "outperforms" ->
  "underperforms"; pipeline.support.ANTONYMS and the prefix forms un-/in-/under-);
- `negation`: "not" added after an auxiliary, or a "not"/"no"/"without" dropped;
- `word`: a content word replaced by another content word of the same abstract;
- `elided-negation`: the span cut around its negation with "...".

Each changed quote is checked with `pipeline.spans.locate`. A quote that the exact and folded
levels reject but the alignment accepts was let through by the bound: the target is zero. A
changed quote found verbatim elsewhere in the abstract is a real span, not counted. Printed:
quotes tried per operator, let through, and the labelled near-verbatim faithful quotes of the
small-model corpus that the alignment locates.
"""

from __future__ import annotations

from collections import Counter

from pipeline import spans
from pipeline.testing.quote_mutations import (
    evidence_spans,
    let_through,
    mutations,
    small_model_items,
)


def measure() -> tuple[Counter, Counter, list[str]]:
    """(quotes tried per operator, let through per operator, examples let through)."""
    tried: Counter = Counter()
    through: Counter = Counter()
    examples: list[str] = []
    for abstract, evidence in evidence_spans():
        for operator, quote in mutations(abstract, evidence):
            if quote == evidence:
                continue
            tried[operator] += 1
            if let_through(abstract, quote):
                through[operator] += 1
                examples.append(f"{operator}: {quote[:120]!r}")
    return tried, through, examples


def near_verbatim_located() -> tuple[int, int]:
    """(located, total) of the small-model corpus's faithful quotes that are not exact."""
    total = located = 0
    for abstract, item in small_model_items():
        if item["label"] != "faithful":
            continue
        span = spans.locate(abstract, item["span"])
        assert span is not None, item["span"]
        total += 1
        located += 1  # the labelled span itself; the model's own quote is measured in the bench
    return located, total


def main() -> int:
    """Print the figures."""
    tried, through, examples = measure()
    print("changed quotes let through by the near-verbatim alignment (target 0):")
    for operator in sorted(tried):
        print(f"  {operator:<16} {through[operator]:>4} of {tried[operator]:>5}")
    print(f"  {'all':<16} {sum(through.values()):>4} of {sum(tried.values()):>5}")
    for example in examples[:20]:
        print(f"    {example}")
    return 0 if not through else 1


if __name__ == "__main__":
    raise SystemExit(main())
