"""Grounding figures on hand-made run records with known ungrounded parts."""

from __future__ import annotations

from pipeline.evaluation.grounding import grounding_report
from pipeline.rundir import SummaryRecord
from pipeline.taxonomy import Taxonomy

PROVENANCE = {
    "backend": "test",
    "model": "m",
    "prompt_hash": "p",
    "schema_version": 1,
    "cache_key": "k",
}

TAXONOMY = Taxonomy.model_validate(
    {
        "version": 1,
        "facets": [
            {
                "id": "method",
                "label": "Method",
                "tags": [
                    {
                        "id": "sparse-probing",
                        "label": "Sparse probing",
                        "synonyms": ["sparse probe"],
                    },
                    {"id": "linear-probing", "label": "Linear probing"},
                ],
            }
        ],
    }
)

ABSTRACT = (
    "We introduce Foo, a sparse probe.  Foo reaches 91.2% accuracy\non ImageNet, "
    "3 points above linear probes. It is faster than Bar."
)


def claim(evidence: str, value: str | None) -> dict:
    kind = "quantitative" if value else "qualitative"
    return {"statement": evidence, "kind": kind, "value": value, "evidence": evidence}


def ok(output: dict) -> dict:
    return {"status": "ok", "output": output, "provenance": PROVENANCE}


FAILED = {
    "status": "failed",
    "output": None,
    "error": {"kind": "schema", "message": "x"},
    "provenance": PROVENANCE,
}

RECORD_DATA = {
    "id": "r1",
    "title": None,
    "sources": [{"file": "a.txt", "position": 1}],
    "abstract": ABSTRACT,
    "stages": {
        # numbers 91.2 (in the abstract) and 12 (foreign)
        "tldr": ok({"tldr": "Foo, a sparse probe, reaches 91.2% accuracy on 12 benchmarks."}),
        # one id, one synonym (resolvable), one unknown tag
        "tags": ok({"tags": ["sparse-probing", "Linear probing", "made-up-tag"], "keywords": []}),
        "claims": ok(
            {
                "claims": [
                    # grounded (whitespace differs from the abstract), value in evidence
                    claim("Foo reaches 91.2% accuracy on ImageNet", "91.2"),
                    # grounded, qualitative: no value
                    claim("It is faster than Bar", None),
                    # grounded, but its value is not in its evidence
                    claim("Foo reaches 91.2% accuracy", "3"),
                    # not in the abstract; value in its evidence
                    claim("Foo reaches 95% accuracy on CIFAR", "95%"),
                ]
            }
        ),
    },
}

RECORD = SummaryRecord.model_validate(RECORD_DATA)
FAILED_RECORD = SummaryRecord.model_validate(
    {
        "id": "r2",
        "abstract": "Nothing 7 here.",
        "stages": {"tldr": FAILED, "tags": FAILED, "claims": FAILED},
    }
)


def test_hand_made_record_gives_exact_figures():
    report = grounding_report([RECORD, FAILED_RECORD], TAXONOMY)
    assert report["records"] == 2
    assert report["stages"]["claims"] == {"ok": 1, "failed": 1}
    assert report["claims"] == {
        "claims": 4,
        "evidence_grounded": 3,
        "with_value": 3,
        "value_in_evidence": 2,
        "evidence_grounded_share": 3 / 4,
        "value_in_evidence_share": 2 / 3,
    }
    assert report["tldr"] == {
        "tldrs": 1,
        "numbers": 2,
        "numbers_in_abstract": 1,
        "numbers_in_abstract_share": 0.5,
    }
    assert report["tags"] == {
        "tags": 3,
        "outside_taxonomy": 1,
        "outside_taxonomy_share": 1 / 3,
        "outside_taxonomy_names": ["made-up-tag"],
    }


def test_empty_run_has_zero_counts_and_no_shares():
    report = grounding_report([], TAXONOMY)
    assert report["records"] == 0
    assert report["claims"]["claims"] == 0
    assert report["claims"]["evidence_grounded_share"] is None
    assert report["claims"]["value_in_evidence_share"] is None
    assert report["tldr"]["numbers_in_abstract_share"] is None
    assert report["tags"]["outside_taxonomy_share"] is None


def test_only_failed_stages_count_nothing():
    report = grounding_report([FAILED_RECORD], TAXONOMY)
    assert (report["claims"]["claims"], report["tldr"]["tldrs"], report["tags"]["tags"]) == (
        0,
        0,
        0,
    )
    assert report["stages"]["tldr"] == {"ok": 0, "failed": 1}


def test_tldr_without_numbers_has_no_share():
    record = SummaryRecord.model_validate(
        {**RECORD_DATA, "stages": {"tldr": ok({"tldr": "Foo is a sparse probe."})}}
    )
    report = grounding_report([record], TAXONOMY)
    assert report["tldr"]["tldrs"] == 1
    assert report["tldr"]["numbers"] == 0
    assert report["tldr"]["numbers_in_abstract_share"] is None
    assert report["stages"]["claims"] == {"ok": 0, "failed": 0, "missing": 1}
