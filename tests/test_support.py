"""Every field a reader sees is grounded (issue 20.1): dataset and baseline names, the
numbers and names of a statement, a TL;DR's numbers and names, keywords, and some support for
each tag; what fails is rejected or dropped with a record, never shown as fact."""

from __future__ import annotations

import json

import pytest

from pipeline.errors import OutputValidationError
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.support import (
    contradictions,
    foreign_numbers,
    name_supported,
    name_tokens,
    numbers_and_names,
    statement_problems,
    supported_tags,
    ungrounded_quantities,
    unstated_superiority,
)
from pipeline.taxonomy import load_taxonomy

ABSTRACT = (
    "We train generative adversarial networks on CIFAR10 and the Penn Treebank, translating "
    "English-to-German (WMT 2014). Our VINS model beats ResNet-50 by 3.5% and is 2.1x faster "
    "than prior methods. With 10 sources, it reaches 84.2% accuracy on MNIST and CIFAR-100. "
    "The photorealisticAI2THOR simulator and hierarchically structured poli- cies help. "
    "Results for José Núñez's parser are competitive with BERT."
)


@pytest.mark.parametrize(
    "name",
    [
        "CIFAR-10",  # hyphen vs none
        "cifar 10",
        "GAN",  # an acronym of the abstract's words
        "GANs",
        "PTB",  # a documented abbreviation
        "WMT'14 En-De",  # year and language codes
        "WMT 2014 English-German",
        "ResNet50",
        "MNIST and CIFAR-100",  # a list, item by item
        "the CIFAR-100 dataset",  # generic words added
        "strong baselines",
        "state-of-the-art methods",
        "AI2THOR",  # glued to a word by PDF extraction
        "hierarchical policies",  # a line-break hyphen and another word form
        "Jose Nunez",  # accents
        "RL-like",  # a generic suffix; RL for reinforcement learning is not in the text...
    ][:-1],
)
def test_names_the_abstract_has_are_supported(name):
    assert name_supported(name, ABSTRACT), name


@pytest.mark.parametrize(
    "name",
    ["ImageNet", "BERT-large", "ResNet-152", "CIFAR-1000", "CIFAR-10 and SVHN", "Adam", "GLUE"],
)
def test_names_the_abstract_lacks_are_not(name):
    assert not name_supported(name, ABSTRACT), name


def test_a_name_whose_space_the_pdf_lost_is_supported_but_not_a_longer_one():
    abstract = "It achieves better accuracy relative to publishedstate-of-the-art quantization."
    assert name_supported("published state-of-the-art quantization schemes", abstract) is False
    assert name_supported("published state-of-the-art quantization", abstract)
    assert not name_supported("unpublished state-of-the-art", abstract)


def test_tldr_names_and_numbers_include_glued_and_superscript_digits():
    # A hyphenated word is checked by its name-like part: "GAN-generated" by "GAN".
    assert name_tokens("IC3Net beats BERT-large on GLUE by x50% in Atari, using GAN-generated data.") == [
        "IC3Net", "BERT", "GLUE", "x50%", "Atari", "GAN",
    ]  # fmt: skip
    known = frozenset({"3.5", "10", "84.2"})
    assert foreign_numbers("reaches ⁹⁹·⁹% and 84.2% by x50%", known) == ["99.9", "50"]
    # a raised dot between digits is a decimal point: the abstract's 99.9 grounds ⁹⁹·⁹
    assert foreign_numbers("reaches ⁹⁹·⁹% and 84.2% by x50%", known | {"99.9"}) == ["50"]


def test_statement_quantities_come_from_the_evidence_or_its_sentence():
    evidence = "it reaches 84.2% accuracy on MNIST"
    sentence = "With 10 sources, it reaches 84.2% accuracy on MNIST and CIFAR-100."
    assert (
        statement_problems("With 10 sources it gets 84.2% on MNIST.", evidence, ABSTRACT, sentence)
        == []
    )
    assert statement_problems("It gets 85.2% on MNIST.", evidence, ABSTRACT, sentence) == [
        "'85.2', which its evidence does not hold"
    ]
    assert statement_problems(
        "It gets 84.2% on CIFAR-10 and ImageNet.", evidence, ABSTRACT, sentence
    ) == ["'ImageNet', which the abstract does not name"]


def test_a_dimension_is_a_name_the_abstract_may_write_in_words():
    abstract = "We train two-dimensional hierarchical TNs. This approach overcomes scalability."
    evidence = "This approach overcomes scalability"
    assert statement_problems("The 2D approach overcomes scalability.", evidence, abstract) == []
    assert statement_problems("The 2-D approach overcomes scalability.", evidence, abstract) == []
    assert statement_problems("The 3D approach overcomes scalability.", evidence, abstract) == [
        "'3D', which its evidence does not hold",
        "'3D', which the abstract does not name",
    ]
    assert numbers_and_names("a 3D-CNN of 3 layers") == (["3"], ["3D-CNN"])


def test_a_number_a_variable_is_set_to_is_a_quantity_a_tldr_may_repeat():
    abstract = "We give a reward of r=+1 for matching the demonstrated action and r=0 otherwise."
    assert numbers_and_names("r=+1, p<0.05, CIFAR-10") == (["1", "0.05"], ["CIFAR-10"])
    assert ungrounded_quantities("A reward of +1 for a match and 0 otherwise.", abstract) == []
    assert ungrounded_quantities("A reward of +2 for a match.", abstract) == ["2"]


def test_a_statement_may_not_contradict_or_overstate_its_evidence():
    assert contradictions("VINS is slower than prior methods.", "is 2.1x faster than prior methods")
    # the negative prefix of what the evidence negates agrees with it; a free antonym does not
    assert not contradictions("dynamics unseen in training", "dynamics not seen in training")
    assert contradictions("dynamics unseen in training", "dynamics seen in training")
    assert contradictions("accuracy increases", "accuracy does not decrease")
    assert not contradictions("VINS is faster.", "is 2.1x faster than prior methods")
    assert (
        unstated_superiority("The parser outperforms BERT.", "are competitive with BERT")
        == "outperform"
    )
    assert unstated_superiority("The parser matches BERT.", "are competitive with BERT") is None
    abstract = "We evaluate the Faster R-CNN and R-FCN models for detection."
    evidence = "natural perturbations induce localization errors"
    assert unstated_superiority("Faster R-CNN has localization errors.", evidence, abstract) is None
    assert unstated_superiority("Faster R-CNN has localization errors.", evidence) == "faster"
    assert unstated_superiority("It is Faster Than R-FCN.", evidence, abstract) == "faster"
    assert unstated_superiority("It improves accuracy.", "reaches 84.2% accuracy") is None


def claim(**overrides):
    return {
        "statement": "VINS beats ResNet-50 by 3.5%.",
        "kind": "quantitative",
        "metric": "accuracy",
        "value": "3.5",
        "unit": "%",
        "dataset": None,
        "comparison": "ResNet-50",
        "evidence": "Our VINS model beats ResNet-50 by 3.5%",
        **overrides,
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"dataset": "ImageNet"}, "dataset 'ImageNet' is not named in the abstract"),
        ({"comparison": "ViT-B/16"}, "baseline 'ViT-B/16' is not named in the abstract"),
        # another version of a named model: the abstract has ResNet-50, not ResNet-50++
        ({"comparison": "ResNet-50++"}, "baseline 'ResNet-50++' is not named in the abstract"),
        (
            {"statement": "VINS beats ResNet-50 by 35.2%."},
            "'35.2', which its evidence does not hold",
        ),
        ({"metric": "top-5 accuracy"}, "metric 'top-5 accuracy' has numbers the abstract lacks"),
        # 10 is in the abstract, but never joined to "of": "best-of-10" is the model's
        ({"metric": "best-of-10 accuracy"}, "'best-of-10' is not in the abstract"),
        (
            {
                "statement": "VINS is 2.1x slower than prior methods.",
                "value": "2.1",
                "unit": "x",
                "comparison": "prior methods",
                "evidence": "is 2.1x faster than prior methods",
            },
            "'slower' where its evidence says 'faster'",
        ),
        (
            {"statement": "VINS loses to ResNet-50 by 3.5%."},
            "'lose' where its evidence says 'beat'",
        ),
    ],
)
def test_a_claim_with_an_ungrounded_field_is_rejected_with_a_record(stages, overrides, message):
    parsed = stages["claims"].accept(
        json.dumps({"claims": [claim(), claim(**overrides)]}), ABSTRACT
    )
    assert len(parsed.output["claims"]) == 1
    (rejected,) = parsed.rejected
    assert rejected.index == 1 and rejected.error.kind == "ungrounded"
    assert message in str(rejected.error)


def test_a_tldr_naming_what_the_abstract_lacks_is_rejected(stages):
    ok = '{"tldr": "VINS, a GAN trained on CIFAR10, beats ResNet-50 by 3.5% and is 2.1x faster."}'
    assert stages["tldr"].parse(ok, ABSTRACT)
    for bad, says in [
        ('{"tldr": "VINS beats ResNet-50 and BERT on GLUE by 3.5%."}', "'GLUE'"),
        ('{"tldr": "VINS beats ResNet-50 by 37% on CIFAR10."}', "numbers not in the abstract: 37"),
        ('{"tldr": "VINS reaches ⁹⁹·⁹% accuracy on CIFAR10."}', "numbers not in the abstract"),
        # the abstract's 100 is only the digits of a name (CIFAR-100), its 10 a count
        ('{"tldr": "VINS is 100 times faster."}', "numbers the abstract does not state: 100"),
        ('{"tldr": "VINS beats ResNet-50 by 10% on MNIST."}', "does not state: 10%"),
    ]:
        with pytest.raises(OutputValidationError, match=says) as info:
            stages["tldr"].parse(bad, ABSTRACT)
        assert info.value.kind == "ungrounded"


def test_tldr_quantities_are_the_abstracts_quantities_and_percentages():
    abstract = "It prunes to 1/128 of the filters of a CIFAR100 model with a 5-10% drop, two times."
    assert ungrounded_quantities("pruned to 1/128 with a 5% to 10% drop, 2x faster", abstract) == []
    assert ungrounded_quantities("under 1% drop", abstract) == ["1%"]
    assert ungrounded_quantities("100 times smaller", abstract) == ["100"]
    assert ungrounded_quantities("45% better", "reaches $45\\%$ accuracy") == []


def test_a_value_may_be_the_evidence_number_written_in_words(stages):
    abstract = "Training is two times faster than GCPN, and uses fewer FLOPs than ResNet-50."
    answer = {
        "statement": "Training is 2x faster than GCPN.",
        "kind": "quantitative",
        "metric": "training speed",
        "value": "2",
        "unit": "x",
        "dataset": None,
        "comparison": "GCPN",
        "evidence": "Training is two times faster than GCPN",
    }
    less = {**answer, "statement": "It uses fewer FLOPs.", "value": None, "kind": "qualitative",
            "unit": None, "metric": None, "comparison": None,
            "evidence": "and uses less FLOPs than ResNet-50"}  # fmt: skip
    parsed = stages["claims"].accept(json.dumps({"claims": [answer, less]}), abstract)
    assert [c["value"] for c in parsed.output["claims"]] == ["2", None]
    assert parsed.output["claims"][1]["evidence"] == "and uses fewer FLOPs than ResNet-50"
    with pytest.raises(OutputValidationError, match="value '3' does not occur in its evidence"):
        stages["claims"].accept(json.dumps({"claims": [{**answer, "value": "3"}]}), abstract)


def test_keywords_the_abstract_lacks_and_unsupported_tags_are_dropped_with_records(stages):
    raw = json.dumps(
        {
            "tags": [
                "generative-adversarial-networks",
                "federated-learning",
                "machine-translation",
            ],
            "keywords": ["VINS", "Penn Treebank", "ImageNet"],
        }
    )
    parsed = stages["tags"].accept(raw, ABSTRACT)
    assert parsed.output == {
        "tags": ["generative-adversarial-networks", "machine-translation"],
        "keywords": ["VINS", "Penn Treebank"],
    }
    dropped = {(d.field, d.item, d.error.kind) for d in parsed.dropped}
    assert dropped == {
        ("tags", "federated-learning", "ungrounded"),
        ("keywords", "ImageNet", "ungrounded"),
    }
    with pytest.raises(OutputValidationError, match="nothing in the abstract supports"):
        stages["tags"].accept('{"tags": ["federated-learning", "quantization"]}', ABSTRACT)


def test_a_cached_output_with_an_unsupported_tag_fails_validation(stages):
    with pytest.raises(OutputValidationError, match="supports 'federated-learning'"):
        stages["tags"].validate(
            {"tags": ["machine-translation", "federated-learning"], "keywords": []}, ABSTRACT
        )


def test_tag_support_follows_phrases_not_scattered_words():
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    lossless = "We apply fully convolutional models to lossless compression of images."
    assert "model-compression" not in supported_tags(lossless, taxonomy)
    pruned = "We study model compression by pruning convolutional networks."
    assert {"model-compression", "pruning"} <= supported_tags(pruned, taxonomy)
