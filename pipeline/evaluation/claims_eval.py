"""Score extracted claims against a hand-labelled gold set (micro precision / recall / F1).

Gold file (``tests/data/claims_gold.jsonl``): one JSON object per line,
``{"id", "source", "abstract", "claims": [{"kind", "metric", "value", "unit", "dataset",
"evidence"}]}`` with ``id == text_hash(abstract)`` and ``source == "<file>#<position>"``.
The SciTLDR gold sets (``claims_gold_dev.jsonl``, ``claims_gold_train.jsonl``; see
``tests/data/GOLD.md``) have ``source == "scitldr-<split>#<paper_id>"`` and claims that also
carry ``comparison``, ``statement`` and ``metric_ok`` (other acceptable metric names).

What counts as a claim is the project's one written definition, ``prompts/claimed_result.md``
(the claims prompt quotes it); ``tests/data/GOLD.md`` adds the labelling rules for the cases
the definition leaves open and how each gold set was sampled.

Matching rule: a predicted claim matches a gold claim of the same abstract when

1. their evidence spans overlap by more than 0 characters of the abstract (spans located
   with ``find_span``, i.e. whitespace-insensitive, first occurrence; a prediction whose
   evidence is not in the abstract matches nothing), and
2. their values agree: both empty, or the same ``canonical_number`` (so ``"+5.14%"``
   equals ``"5.14"``, ``"1,024"`` equals ``"1024"``; signs are ignored). A value without
   any number counts as empty.

Kind, metric, unit and dataset are not part of the match. Matching is one-to-one and
optimal: a maximum-cardinality bipartite matching, ties broken by total overlap. Gold
abstracts without a prediction count as predicting ``[]``; predictions for ids not in the
gold set are ignored (listed under ``ignored_ids``).

Rates: precision = TP / predicted, recall = TP / gold, F1 = 2TP / (2TP + FP + FN); each is
None when its denominator is 0. ``precision_ci95`` and ``recall_ci95`` are their exact 95%
(Clopper-Pearson) intervals ([low, high], None with the rate): a gold set of 60 claims
cannot tell 90% from 95%. Per kind, precision counts the predictions of that kind that were
matched and recall the gold claims of that kind that were matched.

Metric acceptability (``metric_acceptable`` in the output: count, of, share): over the
matched pairs whose *gold* claim is quantitative, the share whose predicted ``metric`` is
acceptable. Names compare case-insensitively after collapsing whitespace; an empty or
whitespace-only name counts as null. When the gold ``metric`` is set, the prediction must
equal it or one of the gold claim's optional ``metric_ok`` names (a null prediction is not
acceptable). When the gold ``metric`` is null (the abstract names none), a null prediction
is acceptable, and so is a name in ``metric_ok`` or one that occurs in the gold evidence as
whole words (so "speedup" is accepted for the evidence "3.1x speedup", "up" is not for
"speedup"). ``share`` is None when no quantitative pair was matched. Per abstract,
``metric_unacceptable`` lists the matched [predicted, gold] index pairs that failed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import networkx as nx

from pipeline.errors import InputError
from pipeline.evaluation.intervals import interval95
from pipeline.jsonl import iter_jsonl
from pipeline.text import canonical_number, find_span, numbers_in, text_hash

KINDS = ("quantitative", "qualitative")
Span = tuple[int, int]


def read_gold(path: Path) -> list[dict]:
    """Raw gold records in file order; a row of the wrong shape is an InputError (file:line)."""
    records = []
    for lineno, row in iter_jsonl(Path(path)):
        claims = row.get("claims") if isinstance(row, dict) else None
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("abstract"), str)
            or not isinstance(claims, list)
            or not all(isinstance(c, dict) for c in claims)
        ):
            raise InputError(
                f"{path}:{lineno}: expected an object with an 'abstract' string and a "
                "'claims' list of objects"
            )
        records.append(row)
    return records


def _record_problems(record: dict) -> list[str]:
    where = record.get("source") or record.get("id") or "?"
    abstract = record.get("abstract") or ""
    problems = []
    if record.get("id") != text_hash(abstract):
        problems.append(f"{where}: id does not match text_hash(abstract)")
    for i, claim in enumerate(record.get("claims", [])):
        evidence = claim.get("evidence") or ""
        if claim.get("kind") not in KINDS:
            problems.append(f"{where} claim {i}: unknown kind {claim.get('kind')!r}")
        if find_span(abstract, evidence) is None:
            problems.append(f"{where} claim {i}: evidence not verbatim in the abstract")
        value = value_key(claim.get("value"))
        if claim.get("value") and value is None:
            problems.append(f"{where} claim {i}: value {claim['value']!r} has no number")
        if value is not None and value not in numbers_in(evidence):
            problems.append(f"{where} claim {i}: value {claim['value']!r} not in its evidence")
        if (claim.get("kind") == "quantitative") != (value is not None):
            problems.append(f"{where} claim {i}: a value is required iff the kind is quantitative")
    return problems


def gold_problems(records: list[dict]) -> list[str]:
    """Everything wrong with gold records: ids, duplicates, kinds, evidence spans, values."""
    problems: list[str] = []
    seen: set[str] = set()
    for record in records:
        if record.get("id") in seen:
            problems.append(f"{record.get('source')}: duplicate id {record.get('id')}")
        seen.add(str(record.get("id")))
        problems.extend(_record_problems(record))
    return problems


def load_gold(path: Path) -> dict[str, list[dict]]:
    """Validated gold claims by abstract id, each claim with its computed ``span``."""
    records = read_gold(path)
    problems = gold_problems(records)
    if problems:
        raise InputError(f"invalid gold file {path}: " + "; ".join(problems[:10]))
    return {
        r["id"]: [{**c, "span": find_span(r["abstract"], c["evidence"])} for c in r["claims"]]
        for r in records
    }


def load_gold_abstracts(path: Path) -> dict[str, str]:
    """Abstract text by id from a gold file."""
    return {r["id"]: r["abstract"] for r in read_gold(path)}


def value_key(value: object) -> str | None:
    """Canonical number of a claim value, or None for an empty or number-free value."""
    if value is None or value == "":
        return None
    return canonical_number(str(value))


def claim_span(claim: Mapping, abstract: str | None = None) -> Span | None:
    """Evidence span of a claim: located in `abstract` if given, else the claim's ``span``."""
    if abstract is not None:
        return find_span(abstract, claim.get("evidence") or "")
    span = claim.get("span")
    return (int(span[0]), int(span[1])) if span else None


def overlap(a: Span | None, b: Span | None) -> int:
    """Number of characters two half-open spans share (0 if either is missing)."""
    if a is None or b is None:
        return 0
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def match_claims(
    predicted: Sequence[Mapping], gold: Sequence[Mapping], abstract: str | None = None
) -> list[tuple[int, int]]:
    """Optimal one-to-one (predicted index, gold index) matches under the module's rule."""
    pred_spans = [claim_span(c, abstract) for c in predicted]
    gold_spans = [claim_span(c, abstract) for c in gold]
    graph: nx.Graph = nx.Graph()
    for i, p in enumerate(predicted):
        for j, g in enumerate(gold):
            shared = overlap(pred_spans[i], gold_spans[j])
            if shared > 0 and value_key(p.get("value")) == value_key(g.get("value")):
                graph.add_edge(("p", i), ("g", j), weight=shared)
    pairs = nx.max_weight_matching(graph, maxcardinality=True)
    matched = [(a[1], b[1]) if a[0] == "p" else (b[1], a[1]) for a, b in pairs]
    return sorted(matched)


def _metric_name(name: object) -> str | None:
    """A metric name folded for comparison (lowercase, single spaces), or None if empty."""
    if name is None:
        return None
    folded = " ".join(str(name).split()).lower()
    return folded or None


def metric_acceptable(predicted_metric: object, gold_claim: Mapping) -> bool:
    """True if `predicted_metric` is an acceptable metric name for `gold_claim` (module doc)."""
    pred = _metric_name(predicted_metric)
    gold = _metric_name(gold_claim.get("metric"))
    accepted = {_metric_name(m) for m in gold_claim.get("metric_ok") or []} - {None}
    if gold is not None:
        return pred is not None and (pred == gold or pred in accepted)
    if pred is None or pred in accepted:
        return True
    evidence = _metric_name(gold_claim.get("evidence")) or ""
    return re.search(rf"(?<!\w){re.escape(pred)}(?!\w)", evidence) is not None


def _metric_checks(
    predicted: Sequence[Mapping], gold: Sequence[Mapping], pairs: list[tuple[int, int]]
) -> list[tuple[int, int, bool]]:
    """(predicted index, gold index, acceptable) for matched pairs with a quantitative gold claim."""
    return [
        (i, j, metric_acceptable(predicted[i].get("metric"), gold[j]))
        for i, j in pairs
        if gold[j].get("kind") == "quantitative"
    ]


def _rates(tp: int, n_pred: int, n_gold: int) -> dict:
    fp, fn = n_pred - tp, n_gold - tp
    return {
        "precision": tp / n_pred if n_pred else None,
        "recall": tp / n_gold if n_gold else None,
        "f1": 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else None,
        "precision_ci95": interval95(tp, n_pred),
        "recall_ci95": interval95(tp, n_gold),
    }


def _abstract_detail(
    predicted: Sequence[Mapping], gold: Sequence[Mapping], abstract: str | None
) -> dict:
    pairs = match_claims(predicted, gold, abstract)
    matched_p = {i for i, _ in pairs}
    matched_g = {j for _, j in pairs}
    checks = _metric_checks(predicted, gold, pairs)
    return {
        "tp": len(pairs),
        "fp": len(predicted) - len(pairs),
        "fn": len(gold) - len(pairs),
        "matches": [list(p) for p in pairs],
        "unmatched_predicted": [i for i in range(len(predicted)) if i not in matched_p],
        "unmatched_gold": [j for j in range(len(gold)) if j not in matched_g],
        "metric_checked": len(checks),
        "metric_unacceptable": [[i, j] for i, j, ok in checks if not ok],
    }


def _kind_hits(
    predicted: Mapping[str, Sequence[Mapping]], gold: Mapping[str, Sequence[Mapping]], details: dict
) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """(kind, matched) for every predicted and every gold claim."""
    preds: list[tuple[str, bool]] = []
    golds: list[tuple[str, bool]] = []
    for abstract_id, detail in details.items():
        hit_p = {i for i, _ in detail["matches"]}
        hit_g = {j for _, j in detail["matches"]}
        preds += [
            (str(c.get("kind")), i in hit_p) for i, c in enumerate(predicted.get(abstract_id, []))
        ]
        golds += [(str(c.get("kind")), j in hit_g) for j, c in enumerate(gold[abstract_id])]
    return preds, golds


def _harmonic(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r else 0.0


def _kind_row(kind: str, preds: list[tuple[str, bool]], golds: list[tuple[str, bool]]) -> dict:
    n_pred = sum(1 for k, _ in preds if k == kind)
    n_gold = sum(1 for k, _ in golds if k == kind)
    hit_pred = sum(1 for k, hit in preds if k == kind and hit)
    hit_gold = sum(1 for k, hit in golds if k == kind and hit)
    p = hit_pred / n_pred if n_pred else None
    r = hit_gold / n_gold if n_gold else None
    return {
        "predicted": n_pred,
        "gold": n_gold,
        "matched_predicted": hit_pred,
        "matched_gold": hit_gold,
        "precision": p,
        "recall": r,
        "f1": _harmonic(p, r),
        "precision_ci95": interval95(hit_pred, n_pred),
        "recall_ci95": interval95(hit_gold, n_gold),
    }


def _by_kind(
    predicted: Mapping[str, Sequence[Mapping]], gold: Mapping[str, Sequence[Mapping]], details: dict
) -> dict:
    preds, golds = _kind_hits(predicted, gold, details)
    kinds = list(KINDS) + sorted({k for k, _ in preds + golds} - set(KINDS))
    return {kind: _kind_row(kind, preds, golds) for kind in kinds}


def score_claims(
    predicted: Mapping[str, Sequence[Mapping]],
    gold: Mapping[str, Sequence[Mapping]],
    *,
    abstracts: Mapping[str, str] | None = None,
) -> dict:
    """Micro P/R/F1 of predicted claims against gold, per kind and per abstract (see module doc)."""
    abstracts = abstracts or {}
    details = {
        abstract_id: _abstract_detail(
            list(predicted.get(abstract_id, [])), list(claims), abstracts.get(abstract_id)
        )
        for abstract_id, claims in gold.items()
    }
    tp = sum(d["tp"] for d in details.values())
    n_pred = sum(d["tp"] + d["fp"] for d in details.values())
    n_gold = sum(d["tp"] + d["fn"] for d in details.values())
    checked = sum(d["metric_checked"] for d in details.values())
    accepted = checked - sum(len(d["metric_unacceptable"]) for d in details.values())
    return {
        "tp": tp,
        "fp": n_pred - tp,
        "fn": n_gold - tp,
        **_rates(tp, n_pred, n_gold),
        "by_kind": _by_kind(predicted, gold, details),
        "metric_acceptable": {
            "count": accepted,
            "of": checked,
            "share": accepted / checked if checked else None,
        },
        "abstracts": details,
        "ignored_ids": sorted(set(predicted) - set(gold)),
    }
