"""Changed quotes: every shipped evidence span, changed the ways a fabrication changes a quote.

Spans come from the claims gold sets, the gpt-4o-mini-style corpus and the small-model
corpus (tests/data/). `mutations` changes one span one edit at a time:

- `number`: one digit of a number changed (every number of the span);
- `antonym`: a word swapped for its opposite ("faster" -> "slower", "outperforms" ->
  "underperforms"; pipeline.support.ANTONYMS and the prefix forms un-/in-/under-);
- `negation`: "not" added after an auxiliary, or a "not"/"no"/"without" dropped;
- `word`: a content word replaced by another content word of the same abstract;
- `elided-negation`: the span cut around its negation with "...".

`let_through` says whether the near-verbatim alignment (pipeline/alignment.py) accepts a
changed quote that the exact and folded levels reject; `python -m bench.alignment` counts them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import yaml

from pipeline import spans
from pipeline.alignment import align
from pipeline.jsonl import iter_jsonl
from pipeline.support.statements import ANTONYMS
from pipeline.support.words import tokens
from pipeline.testing.paths import TEST_DATA

_WORD = re.compile(r"[A-Za-z][a-z]{3,}")
_AUX = re.compile(r"\b(is|are|was|were|does|do|can|could|will|has|have)\b")
_NEGATION = re.compile(r"\b(not|no|without)\s+")
_STOP = frozenset(
    [
        "this",
        "that",
        "with",
        "from",
        "their",
        "which",
        "these",
        "those",
        "than",
        "then",
        "also",
        "into",
        "over",
    ]
)


def evidence_spans() -> Iterator[tuple[str, str]]:
    """(abstract, evidence) of every labelled claim the project ships."""
    for path in sorted(TEST_DATA.glob("claims_gold*.jsonl")):
        for _, row in iter_jsonl(path):
            for claim in row.get("claims", []):
                if claim.get("evidence"):
                    yield row["abstract"], claim["evidence"]
    realistic = TEST_DATA / "realistic"
    abstracts = {r["paper_id"]: r["abstract"] for _, r in iter_jsonl(realistic / "abstracts.jsonl")}
    for entry in yaml.safe_load((realistic / "answers.yaml").read_text(encoding="utf-8")):
        for claim in entry["claims"]:
            yield abstracts[entry["paper_id"]], claim["evidence"]
    for abstract, item in small_model_items():
        if item["label"] == "faithful":
            yield abstract, item["span"]


def small_model_items() -> Iterator[tuple[str, dict]]:
    """(abstract, labelled claim item) of the small-model corpus."""
    folder = TEST_DATA / "smallmodel"
    abstracts = {r["paper_id"]: r["abstract"] for _, r in iter_jsonl(folder / "abstracts.jsonl")}
    for path in sorted(folder.glob("answers_*.yaml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")):
            for item in entry["claims"].get("items") or []:
                yield abstracts[entry["paper_id"]], item


def _opposites() -> dict[str, str]:
    out: dict[str, str] = {}
    for a, b in ANTONYMS:
        out.setdefault(a, b)
        out.setdefault(b, a)
    out.update({"outperforms": "underperforms", "improves": "degrades", "can": "cannot"})
    return out


OPPOSITES = _opposites()


def mutations(abstract: str, evidence: str) -> Iterator[tuple[str, str]]:
    """(operator, changed quote) for one evidence span."""
    for m in re.finditer(r"\d", evidence):
        digit = str((int(m.group(0)) + 3) % 10)
        yield "number", evidence[: m.start()] + digit + evidence[m.end() :]
    for m in re.finditer(r"[A-Za-z-]+", evidence):
        word = m.group(0)
        other = OPPOSITES.get(word.lower())
        if other is not None:
            yield "antonym", evidence[: m.start()] + other + evidence[m.end() :]
    aux = _AUX.search(evidence)
    if aux is not None and not evidence[aux.end() :].lstrip().startswith("not"):
        yield "negation", evidence[: aux.end()] + " not" + evidence[aux.end() :]
    neg = _NEGATION.search(evidence)
    if neg is not None:
        yield "negation", evidence[: neg.start()] + evidence[neg.end() :]
        words = evidence.split()
        at = next((i for i, w in enumerate(words) if w in ("not", "no", "without")), None)
        if at is not None and 0 < at < len(words) - 1:
            yield "elided-negation", " ".join([*words[:at], "...", *words[at + 1 :]])
    pool = [w for w in dict.fromkeys(_WORD.findall(abstract)) if w.lower() not in _STOP]
    for m in list(_WORD.finditer(evidence))[:4]:
        if m.group(0).lower() in _STOP:
            continue
        other = next((w for w in pool if w.lower()[:4] != m.group(0).lower()[:4]), None)
        if other is not None:
            yield "word", evidence[: m.start()] + other + evidence[m.end() :]


def let_through(abstract: str, quote: str) -> bool:
    """True when only the alignment (not the exact or folded levels) accepts `quote` and the
    span it stores lacks a word or number of the quote: a quote whose every token is in its
    span (one item of a list rebuilt: "5x savings" from "5x and 2x savings") is a real one."""
    if abstract.find(quote.strip()) >= 0:
        return False
    folded = spans._whitespace_span(abstract, quote) or spans._folded_span(abstract, quote)
    if folded is not None:
        return False
    span = align(abstract, quote)
    if span is None:
        return False
    return not set(tokens(quote)) <= set(tokens(abstract[span[0] : span[1]]))
