"""Grounding figures for a run folder's summaries.jsonl records: claims, TL;DR numbers, tags.

Only stages with status "ok" and an output are counted; ``stages`` counts each status per stage.

- claims: how many were written; how many have evidence verbatim in the abstract
  (``find_span``, whitespace-insensitive); of the claims with a numeric value, how many have
  that number (``canonical_number``) among the numbers of their evidence.
- tldr: how many numbers the TL;DRs contain (every occurrence counts) and how many of them
  also occur in the abstract (``numbers_in``).
- tags: how many tags were written and how many are outside the taxonomy (neither a tag id
  nor resolvable by ``taxonomy.resolve``).

Every figure comes as a count and, where it is a share, as ``*_share``: None when the
denominator is 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pipeline.rundir import SummaryRecord
from pipeline.stages import stage_names
from pipeline.taxonomy import Taxonomy
from pipeline.text import canonical_number, find_span, numbers_in


def share(part: int, whole: int) -> float | None:
    """part / whole, or None when whole is 0."""
    return part / whole if whole else None


def stage_status(record: SummaryRecord, stage: str) -> str:
    """A stage's status ("ok", "failed") or "missing" when the record lacks the stage."""
    result = record.stages.get(stage)
    return result.status if result is not None else "missing"


def _claim_counts(abstract: str, claims: Iterable[Mapping]) -> dict[str, int]:
    counts = {"claims": 0, "evidence_grounded": 0, "with_value": 0, "value_in_evidence": 0}
    for claim in claims:
        evidence = claim.get("evidence") or ""
        counts["claims"] += 1
        counts["evidence_grounded"] += find_span(abstract, evidence) is not None
        value = canonical_number(str(claim.get("value") or ""))
        if value is not None:
            counts["with_value"] += 1
            counts["value_in_evidence"] += value in numbers_in(evidence)
    return counts


def _tldr_counts(abstract: str, tldr: str) -> dict[str, int]:
    known = set(numbers_in(abstract))
    numbers = numbers_in(tldr)
    return {"numbers": len(numbers), "numbers_in_abstract": sum(n in known for n in numbers)}


def _tag_counts(tags: Iterable[str], taxonomy: Taxonomy) -> tuple[int, list[str]]:
    tags = list(tags)
    unknown = [t for t in tags if t not in taxonomy.tags and taxonomy.resolve(t) is None]
    return len(tags), unknown


def _add(total: dict[str, int], part: Mapping[str, int]) -> None:
    for key, value in part.items():
        total[key] = total.get(key, 0) + int(value)


def grounding_report(summaries: Iterable[SummaryRecord], taxonomy: Taxonomy) -> dict:
    """Counts and shares of grounded claims, TL;DR numbers and taxonomy tags over a run."""
    claims = {"claims": 0, "evidence_grounded": 0, "with_value": 0, "value_in_evidence": 0}
    tldr = {"tldrs": 0, "numbers": 0, "numbers_in_abstract": 0}
    tags = {"tags": 0, "outside_taxonomy": 0}
    unknown: set[str] = set()
    names = stage_names()
    stages: dict[str, dict[str, int]] = {s: {"ok": 0, "failed": 0} for s in names}
    records = 0
    for record in summaries:
        records += 1
        abstract = record.abstract
        for stage in names:
            status = stage_status(record, stage)
            stages[stage][status] = stages[stage].get(status, 0) + 1
        if out := record.output("claims"):
            _add(claims, _claim_counts(abstract, out.get("claims") or []))
        if (out := record.output("tldr")) and out.get("tldr"):
            _add(tldr, {"tldrs": 1, **_tldr_counts(abstract, out["tldr"])})
        if out := record.output("tags"):
            n_tags, outside = _tag_counts(out.get("tags") or [], taxonomy)
            _add(tags, {"tags": n_tags, "outside_taxonomy": len(outside)})
            unknown.update(outside)
    return {
        "records": records,
        "stages": stages,
        "claims": {
            **claims,
            "evidence_grounded_share": share(claims["evidence_grounded"], claims["claims"]),
            "value_in_evidence_share": share(claims["value_in_evidence"], claims["with_value"]),
        },
        "tldr": {
            **tldr,
            "numbers_in_abstract_share": share(tldr["numbers_in_abstract"], tldr["numbers"]),
        },
        "tags": {
            **tags,
            "outside_taxonomy_share": share(tags["outside_taxonomy"], tags["tags"]),
            "outside_taxonomy_names": sorted(unknown),
        },
    }
