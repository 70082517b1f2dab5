"""Tolerant grounding, strict content (issue 10, point 1): every typographic case of the
issue is accepted with the abstract's own text stored, and changed words, numbers and
ellipses are still rejected; lenient answer shapes are coerced in the schemas / Stage.parse.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pipeline.errors import OutputValidationError
from pipeline.spans import closest, locate
from pipeline.stages.claims import ClaimsOutput

ABSTRACT = (
    "We study non\u2011linear probes---trained on frozen features---for "
    "$\\textit{in vivo}$ imaging. Our \u201cadaptive\u201d sparsity prior uses the $L_0$ norm "
    "and a *local* attention window over _x_ tokens, which we call ``sticky'' routing. "
    "It improves accuracy by 12.5\\% and reaches $\\sim$36\\% lower error, "
    "a $3\\times$ speedup and 12.59 MOS on the $\\alpha$-divergence benchmark. "
    "Results hold on ImageNet\u00a0and CIFAR-10."
)

# (evidence as a model writes it, the abstract's own text that must be stored)
ACCEPTED = [
    ("non-linear probes", "non\u2011linear probes"),  # U+2011 non-breaking hyphen
    ("probes—trained on frozen features—for", "probes---trained on frozen features---for"),
    ("probes - trained on frozen features - for", "probes---trained on frozen features---for"),
    ('Our "adaptive" sparsity prior', "Our \u201cadaptive\u201d sparsity prior"),
    ("for in vivo imaging", "for $\\textit{in vivo}$ imaging"),
    ("uses the L0 norm", "uses the $L_0$ norm"),
    ("uses the L_0 norm", "uses the $L_0$ norm"),
    ("a local attention window", "a *local* attention window"),
    ("over x tokens", "over _x_ tokens"),
    ('which we call "sticky" routing', "which we call ``sticky'' routing"),
    ("improves accuracy by 12.5%", "improves accuracy by 12.5\\%"),
    ("improves accuracy by 12.5 %", "improves accuracy by 12.5\\%"),
    ("reaches ~36% lower error", "reaches $\\sim$36\\% lower error"),
    ("reaches ∼36% lower error", "reaches $\\sim$36\\% lower error"),
    ("a 3x speedup", "a $3\\times$ speedup"),
    ("a 3× speedup", "a $3\\times$ speedup"),
    ("on the α-divergence benchmark", "on the $\\alpha$-divergence benchmark"),
    ("on the alpha-divergence benchmark", "on the $\\alpha$-divergence benchmark"),
    ("It improves accuracy", "It improves accuracy"),
    ("Improves accuracy by 12.5%", "improves accuracy by 12.5\\%"),  # capital mid-sentence
    ("results hold on ImageNet and CIFAR-10", "Results hold on ImageNet\u00a0and CIFAR-10"),
    ('"a 3x speedup."', "a $3\\times$ speedup"),  # quoted, with a trailing period
    ("a 3x speedup and 12.59 MOS,", "a $3\\times$ speedup and 12.59 MOS"),
    # an elision, matched piece by piece within one sentence (the abstract's span is stored)
    (
        "We study non-linear probes ... for in vivo imaging",
        "We study non\u2011linear probes---trained on frozen features---for $\\textit{in vivo}$ imaging",
    ),
    (
        "We study non-linear probes … for in vivo imaging",
        "We study non\u2011linear probes---trained on frozen features---for $\\textit{in vivo}$ imaging",
    ),
    # dashes around a parenthetical dropped: punctuation, not words
    ("probes trained on frozen features", "probes---trained on frozen features"),
]

REJECTED = [
    "improves accuracy by 12.6%",  # a changed number
    "improves accuracy by 125%",
    "improves precision by 12.5%",  # a changed word
    "reaches ~36% higher error",
    "a 4x speedup",
    "uses the L1 norm",
    "We study linear probes ... for in vivo imaging",  # an elision does not excuse a change
    "accuracy improves by 12.5%",  # words in another order
    "for in vitro imaging",
    "",
]


@pytest.mark.parametrize(("evidence", "stored"), ACCEPTED)
def test_typography_is_folded_and_the_abstracts_own_text_is_located(evidence, stored):
    span = locate(ABSTRACT, evidence)
    assert span is not None, evidence
    assert ABSTRACT[span[0] : span[1]] == stored


@pytest.mark.parametrize("evidence", REJECTED)
def test_changed_content_and_ellipses_are_rejected(evidence):
    assert locate(ABSTRACT, evidence) is None


def claim(evidence, **overrides):
    base = {
        "statement": "It improves accuracy.",
        "kind": "quantitative",
        "metric": "accuracy",
        "value": "12.5",
        "unit": "%",
        "dataset": None,
        "comparison": None,
        "evidence": evidence,
    }
    return {**base, **overrides}


def test_the_validator_stores_the_abstracts_substring_and_its_span():
    out = ClaimsOutput.model_validate(
        {"claims": [claim("Improves accuracy by 12.5 %")]}, context={"abstract": ABSTRACT}
    )
    (c,) = out.claims
    assert c.evidence == "improves accuracy by 12.5\\%"
    assert ABSTRACT[c.span[0] : c.span[1]] == c.evidence


def test_a_rejected_evidence_gets_no_hint_a_model_could_copy_into_place():
    """Issue 20.2: quoting the closest span let a re-asked model keep an invented number in
    the statement while copying the real one into value and evidence."""
    with pytest.raises(ValidationError) as info:
        ClaimsOutput.model_validate(
            {"claims": [claim("improves accuracy by 12.6%", value="12.6")]},
            context={"abstract": ABSTRACT},
        )
    message = info.value.errors()[0]["msg"]
    assert "evidence is not in the abstract: 'improves accuracy by 12.6%'" in message
    assert "12.5" not in message and "closest" not in message


def test_closest_finds_the_near_span_and_nothing_for_an_invented_sentence():
    assert closest(ABSTRACT, "a 4x speedup and 12.59 MOS") == "a $3\\times$ speedup and 12.59 MOS"
    assert closest(ABSTRACT, "We further solve protein folding in closed form.") is None


GOOD_CLAIM = claim("a 3x speedup and 12.59 MOS", value="12.59", unit="MOS", metric="MOS")


@pytest.mark.parametrize(
    "raw",
    [
        # 12.59 sent as a JSON number, not a string
        '{"claims": [' + json.dumps(GOOD_CLAIM).replace('"12.59"', "12.59") + "]}",
        # enum case
        json.dumps({"claims": [{**GOOD_CLAIM, "kind": "Quantitative"}]}),
        # missing nullable fields
        json.dumps(
            {
                "claims": [
                    {k: v for k, v in GOOD_CLAIM.items() if k not in ("dataset", "comparison")}
                ]
            }
        ),
        # a code fence
        "```json\n" + json.dumps({"claims": [GOOD_CLAIM]}, indent=2) + "\n```",
        # prose around the object
        "Here is the JSON you asked for:\n"
        + json.dumps({"claims": [GOOD_CLAIM]})
        + "\nLet me know if you need anything else.",
    ],
    ids=["number", "enum-case", "missing-nullable", "fence", "prose"],
)
def test_lenient_shapes_are_coerced(stages, raw):
    out = stages["claims"].parse(raw, ABSTRACT)
    (c,) = out["claims"]
    assert c["value"] == "12.59" and c["kind"] == "quantitative"
    assert c["evidence"] == "a $3\\times$ speedup and 12.59 MOS"
    assert c["dataset"] is None


def test_a_json_number_keeps_its_digits_as_written(stages):
    abstract = "Our model reaches 84.20 BLEU on WMT."
    raw = (
        '{"claims": [{"statement": "s", "kind": "quantitative", "metric": "BLEU", '
        '"value": 84.20, "unit": null, "dataset": "WMT", "comparison": null, '
        '"evidence": "reaches 84.20 BLEU on WMT"}]}'
    )
    assert stages["claims"].parse(raw, abstract)["claims"][0]["value"] == "84.20"


def test_tags_in_any_case_resolve_and_fenced_tldr_parses(stages):
    tags = stages["tags"].parse(
        '```\n{"tags": ["Probing", "INTERPRETABILITY"], "keywords": []}\n```', ABSTRACT
    )
    assert tags["tags"] == ["probing", "interpretability"]
    tldr = stages["tldr"].parse(
        'Sure! {"tldr": "Sparse probes speed up in vivo imaging 3x."} Hope this helps.', ABSTRACT
    )
    assert tldr["tldr"].startswith("Sparse probes")


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("I cannot answer that.", "invalid_json"),
        ("[1, 2]", "schema"),
        ('{"tldr": "Probes improve accuracy by 37%."}', "ungrounded"),
    ],
)
def test_content_checks_are_not_loosened(stages, raw, kind):
    with pytest.raises(OutputValidationError) as info:
        stages["tldr"].parse(raw, ABSTRACT)
    assert info.value.kind == kind


def test_json_object_mode_sends_an_example_and_rules_not_a_schema(stages):
    for name, stage in stages.items():
        system = stage.messages("text", json_object_mode=True)[0]["content"]
        assert f"(name: {name})" in system
        assert "$defs" not in system and "anyOf" not in system and '"properties"' not in system
        example = system.split("shaped like this example:\n", 1)[1].split("\nRules:", 1)[0]
        # The example is a valid answer of the stage's schema (shape; no abstract to ground).
        stage.spec.schema.model_validate(json.loads(example), context={"taxonomy": stage.taxonomy})


def test_lost_spaces_and_number_only_evidence_are_accepted_but_not_other_numbers():
    abstract = "In our small search space, PC-NAS-S attains76.8% top-1 accuracy, 2.1% higher."
    out = ClaimsOutput.model_validate(
        {
            "claims": [
                claim("PC-NAS-S attains 76.8% top-1 accuracy", value="76.8"),
                claim("2.1%", value="2.1"),  # a list item's number with its unit (GOLD C10)
            ]
        },
        context={"abstract": abstract},
    )
    assert [c.evidence for c in out.claims] == ["PC-NAS-S attains76.8% top-1 accuracy", "2.1%"]
    for bad in (
        claim("PC-NAS-S attains 78.6% top-1 accuracy", value="78.6"),
        claim("2.1%", value="2"),  # the value must be the number in the evidence
        claim("top-1", value=None, kind="qualitative"),  # a fragment
    ):
        with pytest.raises(ValidationError):
            ClaimsOutput.model_validate({"claims": [bad]}, context={"abstract": abstract})
