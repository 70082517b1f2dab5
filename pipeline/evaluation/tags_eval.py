"""Score predicted taxonomy tags against a hand-labelled gold set (micro precision / recall / F1).

Gold file (``tests/data/tags_gold_dev.jsonl``, ``tags_gold_train.jsonl``; guideline in
``tests/data/GOLD.md``): one JSON object per line,
``{"id", "source", "abstract", "tags": [...], "acceptable": [...]}`` with
``id == text_hash(abstract)``. ``tags`` are the ids a careful reviewer-matcher must see,
primary topic first; ``acceptable`` are further ids that are also correct but optional
(broader parents, secondary aspects, the contribution type). Any other id is wrong.

Scoring, over the gold abstracts (a gold abstract without a prediction counts as predicting
``[]``; predictions for ids not in the gold set are ignored and listed under
``ignored_ids``; a predicted list is deduplicated keeping first occurrences):

- precision = sum |pred & (tags | acceptable)| / sum |pred|  (an acceptable tag is never wrong)
- recall    = sum |pred & tags| / sum |tags|                   (only required tags are owed)
- f1        = harmonic mean of the micro precision and recall
- primary_accuracy = share of gold abstracts whose first predicted tag is in
  ``tags | acceptable`` (an empty prediction is a miss). ``primary_required`` is the
  stricter share whose first predicted tag is in ``tags``, and ``primary_exact`` the share
  whose first predicted tag is the gold primary ``tags[0]``.

``precision_ci95`` and ``recall_ci95`` are the exact 95% (Clopper-Pearson) intervals of
precision and recall ([low, high]). Every rate is None when its denominator is 0 (``f1`` when precision or recall is None, 0.0
when both are 0). Per abstract, ``abstracts[id]`` lists the ``correct`` predicted tags (in
tags or acceptable), the ``wrong`` ones (in neither) and the ``missed`` required tags.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pipeline.errors import InputError
from pipeline.evaluation.intervals import interval95
from pipeline.jsonl import iter_jsonl
from pipeline.taxonomy import Taxonomy
from pipeline.text import text_hash

REQUIRED_KEYS = ("id", "source", "abstract", "tags", "acceptable")
CONTRIBUTION_FACET = "contribution"


def _id_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _check_record(record: object, where: str) -> dict:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise InputError(f"{where}: missing key(s) {', '.join(missing)}")
    for key in ("id", "source", "abstract"):
        if not isinstance(record[key], str) or not record[key]:
            raise InputError(f"{where}: {key!r} must be a non-empty string")
    for key in ("tags", "acceptable"):
        if not _id_list(record[key]):
            raise InputError(f"{where}: {key!r} must be a list of tag id strings")
    return record


def load_tags_gold(path: Path) -> dict[str, dict]:
    """Gold records by abstract id, in file order; InputError (with file:line) on a bad row."""
    path = Path(path)
    records: dict[str, dict] = {}
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        record = _check_record(row, where)
        if record["id"] in records:
            raise InputError(f"{where}: duplicate id {record['id']}")
        records[record["id"]] = record
    return records


def tags_gold_problems(
    records: Mapping[str, Mapping] | Iterable[Mapping], taxonomy: Taxonomy
) -> list[str]:
    """Everything wrong with gold records: id/hash mismatch, unknown or duplicate ids, overlap
    between tags and acceptable, no required tag, a contribution type as the primary tag."""
    rows = list(records.values()) if isinstance(records, Mapping) else list(records)
    problems: list[str] = []
    seen: set[str] = set()
    for record in rows:
        where = record.get("source") or record.get("id") or "?"
        if record.get("id") in seen:
            problems.append(f"{where}: duplicate id {record.get('id')}")
        seen.add(str(record.get("id")))
        if record.get("id") != text_hash(record.get("abstract") or ""):
            problems.append(f"{where}: id does not match text_hash(abstract)")
        tags = list(record.get("tags") or [])
        acceptable = list(record.get("acceptable") or [])
        if not tags:
            problems.append(f"{where}: no required tag")
        for key, ids in (("tags", tags), ("acceptable", acceptable)):
            unknown = [t for t in ids if t not in taxonomy.tags]
            if unknown:
                problems.append(f"{where}: unknown {key} id(s) {', '.join(unknown)}")
            if len(set(ids)) != len(ids):
                problems.append(f"{where}: repeated id in {key}")
        both = sorted(set(tags) & set(acceptable))
        if both:
            problems.append(f"{where}: in both tags and acceptable: {', '.join(both)}")
        if tags and taxonomy.facet_of.get(tags[0]) == CONTRIBUTION_FACET:
            problems.append(f"{where}: primary tag {tags[0]} is a contribution type, not a topic")
    return problems


def _dedup(tags: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(tags))


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _abstract_detail(predicted: list[str], gold: Mapping) -> dict:
    required = list(gold["tags"])
    allowed = set(required) | set(gold.get("acceptable") or [])
    first = predicted[0] if predicted else None
    return {
        "predicted": predicted,
        "correct": [t for t in predicted if t in allowed],
        "wrong": [t for t in predicted if t not in allowed],
        "missed": [t for t in required if t not in predicted],
        "found": [t for t in required if t in predicted],
        "primary_ok": first is not None and first in allowed,
        "primary_required": first is not None and first in required,
        "primary_exact": first is not None and bool(required) and first == required[0],
    }


def score_tags(predicted: Mapping[str, Sequence[str]], gold: Mapping[str, Mapping]) -> dict:
    """Micro P/R/F1 and primary-tag accuracy of predicted tag ids against gold (module doc)."""
    details = {
        abstract_id: _abstract_detail(_dedup(predicted.get(abstract_id) or []), record)
        for abstract_id, record in gold.items()
    }
    n_pred = sum(len(d["predicted"]) for d in details.values())
    n_correct = sum(len(d["correct"]) for d in details.values())
    n_required = sum(len(record["tags"]) for record in gold.values())
    n_found = sum(len(d["found"]) for d in details.values())
    precision = _share(n_correct, n_pred)
    recall = _share(n_found, n_required)
    if precision is None or recall is None:
        f1 = None
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    n = len(details)
    return {
        "abstracts_scored": n,
        "predicted": n_pred,
        "correct": n_correct,
        "wrong": n_pred - n_correct,
        "required": n_required,
        "found": n_found,
        "missed": n_required - n_found,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "precision_ci95": interval95(n_correct, n_pred),
        "recall_ci95": interval95(n_found, n_required),
        "primary_accuracy": _share(sum(d["primary_ok"] for d in details.values()), n),
        "primary_required": _share(sum(d["primary_required"] for d in details.values()), n),
        "primary_exact": _share(sum(d["primary_exact"] for d in details.values()), n),
        "abstracts": details,
        "ignored_ids": sorted(set(predicted) - set(gold)),
    }
