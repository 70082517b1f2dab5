"""ROUGE metrics for TL;DR evaluation (rouge-score with Porter stemming); pure functions, no I/O."""

from __future__ import annotations

from functools import cache
from statistics import fmean

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
PROTOCOLS = ("best", "mean")


@cache
def _scorer():
    """One scorer (and stemmer) for every call, built on first use: importing rouge-score
    (and nltk) costs start-up time every other command should not pay."""
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def pair_f1(prediction: str, reference: str) -> dict[str, float]:
    """ROUGE-1/2/L F1 (0-1) of one prediction against one reference."""
    scores = _scorer().score(reference, prediction)
    return {name: scores[name].fmeasure for name in ROUGE_TYPES}


def paper_scores(prediction: str, references: list[str]) -> dict[str, dict[str, float]]:
    """Per-paper F1 (0-1) for each protocol: max and mean over the references, per ROUGE type."""
    if not references:
        raise ValueError("every prediction needs at least one reference")
    pairs = [pair_f1(prediction, ref) for ref in references]
    return {
        "best": {name: max(p[name] for p in pairs) for name in ROUGE_TYPES},
        "mean": {name: fmean(p[name] for p in pairs) for name in ROUGE_TYPES},
    }


def score_rouge(predictions: list[str], references: list[list[str]]) -> dict:
    """Corpus ROUGE-1/2/L F1 x100 under the "best" and "mean" multi-reference protocols.

    Returns ``{"best": {"rouge1": .., "rouge2": .., "rougeL": ..}, "mean": {...}, "n": int}``.
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists")
    per_paper = [paper_scores(p, refs) for p, refs in zip(predictions, references, strict=True)]
    out: dict = {"n": len(per_paper)}
    for protocol in PROTOCOLS:
        out[protocol] = {
            name: 100.0 * fmean(s[protocol][name] for s in per_paper) if per_paper else 0.0
            for name in ROUGE_TYPES
        }
    return out


def lead1(sentences: list[str]) -> str:
    """The lead-1 baseline: the first non-empty source sentence (empty string if none)."""
    return next((s for s in sentences if s.strip()), "")


def oracle_sentence(sentences: list[str], references: list[str]) -> str:
    """The source sentence with the highest best-over-references ROUGE-1 F1.

    Ties go to the earliest sentence. This criterion reproduces the SciTLDR-A dev
    oracle figures (best-reference ROUGE-1/2/L ~ 47.8/25.3/38.7).
    """
    best, best_score = "", -1.0
    for sentence in sentences:
        score = max(pair_f1(sentence, ref)["rouge1"] for ref in references)
        if score > best_score:
            best, best_score = sentence, score
    return best
