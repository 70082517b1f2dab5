"""Evidence that quotes the detail of a comparison is stored with the comparison of its
sentence (issue 20.1, claims: the statement's superiority must be in the stored evidence),
and the near-verbatim tolerances added with it (issue 20.4)."""

from __future__ import annotations

import json

import pytest

from pipeline.alignment import align
from pipeline.support import comparison_widened

ABSTRACT = (
    "We propose a neural retrieval model for product search. Deployed online, the model "
    "improved retrieval performance and search quality considerably, particularly for tail "
    "queries. It is competitive with existing dense retrievers on head queries, particularly "
    "for long queries.\n Results demonstrate the robustness of the model over time."
)


def _item(statement: str, evidence: str, **fields: object) -> dict[str, object]:
    return {"statement": statement, "kind": "qualitative", "metric": None, "value": None,
            "unit": None, "dataset": None, "comparison": None, "evidence": evidence,
            **fields}  # fmt: skip


def _claim(statement: str, evidence: str, **fields: object) -> str:
    return json.dumps({"claims": [_item(statement, evidence, **fields)]})


def test_a_quoted_detail_is_stored_with_the_comparison_of_its_sentence(stages):
    raw = _claim(
        "The model improves retrieval, particularly for tail queries.",
        "particularly for tail queries",
    )
    parsed = stages["claims"].accept(raw, ABSTRACT)
    (claim,) = parsed.output["claims"]
    assert claim["evidence"] == (
        "improved retrieval performance and search quality considerably, particularly for tail queries"
    )
    assert ABSTRACT[claim["span"][0] : claim["span"][1]] == claim["evidence"]


def test_parity_is_never_grown_into_superiority(stages):
    # The sentence says "competitive with", and "particularly" is no comparison: no growth.
    raw = _claim(
        "The model outperforms dense retrievers for long queries.", "particularly for long queries"
    )
    parsed = stages["claims"].accept(raw, ABSTRACT, keep_none=True)
    assert parsed.output["claims"] == []
    assert "superiority" in str(parsed.rejected[0].error)
    start = ABSTRACT.index("particularly for long")
    assert (
        comparison_widened(ABSTRACT, (start, start + len("particularly for long queries"))) is None
    )


def test_the_comparison_must_be_in_the_same_sentence(stages):
    # "over time" is in the last sentence, the evidence in the one before: a line break ends it.
    start = ABSTRACT.index("It is competitive")
    assert comparison_widened(ABSTRACT, (start, start + 12)) is None
    raw = _claim(
        "The model beats the baselines on robustness.",
        "Results demonstrate the robustness of the model",
    )
    wider = stages["claims"].accept(raw, ABSTRACT).output["claims"][0]["evidence"]
    assert wider == "Results demonstrate the robustness of the model over time"


PLURAL = "Further ablation study confirms the effectiveness of each balancing component."
CORRELATIVE = (
    "The proposed method did not only outperform previous approaches at learning speed but "
    "exhibits more robust extrapolation and learns online in real-time. The method does not "
    "scale and is slow on large inputs."
)


def test_a_plural_in_y_and_its_verb_are_variants():
    span = align(
        PLURAL, "Further ablation studies confirm the effectiveness of each balancing component"
    )
    assert span is not None and PLURAL[span[0] : span[1]].startswith("Further ablation study")


def test_an_elision_may_skip_a_not_only_but_never_a_negation():
    span = align(CORRELATIVE, "The proposed method ... learns online in real-time")
    assert span is not None and CORRELATIVE[span[0] : span[1]].endswith("real-time")
    assert align(CORRELATIVE, "The method ... scale and is slow on large inputs") is None


NAS = (
    "We develop an exponentiated gradient method for NAS that matches state-of-the-art "
    "approaches on CIFAR-10. Our scheme matches or surpasses the accuracy of the full-precision "
    "network. Compared to prior approaches, experiments show a factor of 2 decrease in memory "
    "requirements with minor degradation in accuracy."
)


@pytest.mark.parametrize(
    ("statement", "evidence", "kept"),
    [
        # parity governs "state-of-the-art"; the digits of "CIFAR-10" are a name, no result
        ("The method outperforms state-of-the-art approaches on CIFAR-10.",
         "matches state-of-the-art approaches on CIFAR-10", False),
        ("The method matches state-of-the-art approaches on CIFAR-10.",
         "matches state-of-the-art approaches on CIFAR-10", True),
        # "or" after the parity word states the superiority too
        ("The scheme surpasses the accuracy of the full-precision network.",
         "matches or surpasses the accuracy of the full-precision network", True),
        # a decrease is a superiority word: the evidence grows to it
        ("The memory reduction comes with minor degradation in accuracy.",
         "with minor degradation in accuracy", True),
    ],
)  # fmt: skip
def test_parity_states_no_superiority(stages, statement, evidence, kept):
    parsed = stages["claims"].accept(_claim(statement, evidence), NAS, keep_none=True)
    assert bool(parsed.output["claims"]) is kept, parsed.rejected
    if kept and "degradation" in evidence:
        assert parsed.output["claims"][0]["evidence"].startswith("decrease in memory")


def test_a_factor_is_no_percentage():
    from pipeline.support import ungrounded_numbers

    context = (
        "Experiments on LeNet-5 (MNIST) show that our method outperforms (5% test accuracy "
        "improvement) low-rank techniques under the same compression rate."
    )
    assert ungrounded_numbers("It wins at a 5x compression rate.", context, context) == ["5x"]
    assert ungrounded_numbers("It improves accuracy by 5%.", context, context) == []
    assert ungrounded_numbers("It is 3 times faster.", "it runs 3x faster", "") == []


def test_a_number_joined_to_a_word_in_a_metric_is_named_whole(stages):
    abstract = (
        "The algorithm uses 32x less communication per iteration than full-precision SGD, and "
        "our model reaches 76.1% accuracy on ResNet-18 with +1/-1 weights."
    )
    claim = {"statement": "It uses 32x less communication than full-precision SGD.",
             "kind": "quantitative", "metric": "communication vs 32-bit SGD", "value": "32",
             "unit": "x", "dataset": None, "comparison": "full-precision SGD",
             "evidence": "uses 32x less communication per iteration than full-precision SGD"}  # fmt: skip
    parsed = stages["claims"].accept(json.dumps({"claims": [claim]}), abstract, keep_none=True)
    assert parsed.output["claims"] == [] and "'32-bit'" in str(parsed.rejected[0].error)
    claim["metric"] = "communication per iteration"
    assert stages["claims"].accept(json.dumps({"claims": [claim]}), abstract).output["claims"]
    top1 = {**claim, "statement": "The model reaches 76.1% accuracy.", "metric": "top-1 accuracy",
            "value": "76.1", "unit": "%", "comparison": None,
            "evidence": "our model reaches 76.1% accuracy on ResNet-18"}  # fmt: skip
    parsed = stages["claims"].accept(json.dumps({"claims": [top1]}), abstract, keep_none=True)
    assert parsed.output["claims"] == [] and "'top-1'" in str(parsed.rejected[0].error)
    pass1 = {**top1, "metric": "pass@1 accuracy"}  # "@" joins a number to its metric too
    parsed = stages["claims"].accept(json.dumps({"claims": [pass1]}), abstract, keep_none=True)
    assert parsed.output["claims"] == [] and "'pass@1'" in str(parsed.rejected[0].error)
    written = abstract.replace("76.1% accuracy", "76.1% pass@1 accuracy")
    pass1["evidence"] = "our model reaches 76.1% pass@1 accuracy on ResNet-18"
    assert stages["claims"].accept(json.dumps({"claims": [pass1]}), written).output["claims"]


def test_a_repeated_run_and_a_comparison_preposition_are_tolerated():
    typo = "We find that the weights should be initialised close to close to one for deep networks."
    span = align(typo, "the weights should be initialised close to one for deep networks")
    assert span is not None and typo[span[0] : span[1]].endswith("deep networks")
    par = "Our model achieves comparable performance as state-of-the-art specialized models."
    assert align(par, "achieves comparable performance to state-of-the-art specialized models")


def test_a_list_item_is_skipped_only_after_a_word_quoted_as_written():
    text = (
        "We illustrate this modeling tool on a real application and show that structural "
        "variational inference techniques can be used with DRGPs."
    )
    assert (
        align(text, "Models that structural variational inference techniques can be used") is None
    )
    assert align(text, "show that structural variational inference techniques can be used")


def test_a_statement_claiming_all_needs_its_evidence_to_say_so(stages):
    from pipeline.support import unstated_universals

    abstract = "The model is robust to several types of image corruptions on CIFAR-10-C."
    said = "The model is robust to all types of image corruptions."
    raw = _claim(said, "robust to several types of image corruptions")
    parsed = stages["claims"].accept(raw, abstract, keep_none=True)
    assert parsed.output["claims"] == [] and "'all'" in str(parsed.rejected[0].error)
    every = abstract.replace("several", "all")
    raw = _claim(said, "robust to all types of image corruptions")
    assert stages["claims"].accept(raw, every).output["claims"]
    assert unstated_universals("It wins on all three benchmarks.", "wins on both tasks") == []
    assert unstated_universals("Not all heads matter.", "some heads matter") == []
    assert unstated_universals("The all-attention model wins.", "the model wins") == []
    assert unstated_universals("It always converges.", "it converges") == ["always"]


def test_a_statement_judging_a_result_needs_its_evidence_to_judge_it(stages):
    from pipeline.support import unstated_judgements

    abstract = "We apply the attack on two black-box algorithms from Clarifai.com."
    raw = _claim(
        "The attack successfully fools two black-box models.",
        "We apply the attack on two black-box algorithms",
    )
    parsed = stages["claims"].accept(raw, abstract, keep_none=True)
    assert parsed.output["claims"] == [] and "'successfully'" in str(parsed.rejected[0].error)
    assert unstated_judgements("It predicts labels accurately.", "with high accuracy") == []
    assert unstated_judgements("It is robustly better.", "it is better") == ["robustly"]


MCBIF = (
    "We then demonstrate through experiments the use of MCbiF Hilbert functions as "
    "interpretable topological feature maps for downstream machine learning tasks, and show "
    "that MCbiF feature maps outperform both baseline features and representation learning "
    "methods on regression and classification tasks. Our approach has the most flexibility "
    "by learning both operators and responses, compared with existing approaches."
)


def test_a_grown_comparison_must_compare_the_statements_quality(stages):
    # "outperform" later in the sentence compares accuracy on tasks, not interpretability.
    raw = _claim(
        "MCbiF Hilbert functions are more interpretable than representation learning methods.",
        "the use of MCbiF Hilbert functions as interpretable topological feature maps",
    )
    parsed = stages["claims"].accept(raw, MCBIF, keep_none=True)
    assert parsed.output["claims"] == []
    assert "superiority" in str(parsed.rejected[0].error)


def test_a_superlative_of_the_quality_backs_its_comparative(stages):
    raw = _claim(
        "The approach is more flexible than existing approaches.",
        "Our approach has the most flexibility by learning both operators and responses",
    )
    (claim,) = stages["claims"].accept(raw, MCBIF).output["claims"]
    assert claim["evidence"].endswith("compared with existing approaches")


def test_a_baseline_acronym_must_be_written_in_the_abstract(stages):
    abstract = (
        "Value iteration networks make value iteration differentiable. SVIN produces more "
        "effective training gradients than the value iteration network, and than a CNN."
    )
    gradients = "SVIN produces more effective training gradients than"
    raw = json.dumps(
        {
            "claims": [
                _item(f"{gradients} VIN.", f"{gradients} the value iteration network",
                      comparison="standard VIN"),
                _item(f"{gradients} a CNN.",
                      f"{gradients} the value iteration network, and than a CNN",
                      comparison="CNN"),
            ]
        }
    )  # fmt: skip
    parsed = stages["claims"].accept(raw, abstract, keep_none=True)
    assert [c["comparison"] for c in parsed.output["claims"]] == ["CNN"]
    assert "baseline 'standard VIN': VIN is not written" in str(parsed.rejected[0].error)


def test_the_lower_of_a_lower_bound_is_no_superiority():
    from pipeline.support import unstated_superiority

    evidence = "develop OSSB, an algorithm whose regret matches this fundamental limit"
    assert unstated_superiority("OSSB's regret matches the regret lower bound.", evidence) is None
    assert unstated_superiority("OSSB has lower regret.", evidence) == "lower"


def test_a_statement_keeps_the_hedge_of_its_evidence():
    from pipeline.support import statement_problems

    abstract = "EB-1WL and EB-GNN require near-linear time and memory on sparse graphs."
    evidence = abstract[:-1]
    (problem,) = statement_problems("EB-GNN requires linear time and memory.", evidence, abstract)
    assert problem == "'linear' without its evidence's 'near'"
    # a hedge of the same line, or the hedge itself, keeps it
    for said in ("EB-GNN requires nearly linear time.", "EB-GNN runs in near-linear time."):
        assert statement_problems(said, evidence, abstract) == [], said
    # a word the evidence also says without a hedge may stand alone
    plain = "EB-GNN runs in near-linear time on graphs where linear time was out of reach"
    assert statement_problems("EB-GNN runs in linear time.", plain, plain + ".") == []


def test_an_acronym_written_in_another_case_is_written_and_a_3d_name_is_no_quantity():
    from pipeline.support import statement_problems, unwritten_acronyms

    assert unwritten_acronyms("MNIST, CelebA and Deap", "results on Mnist, CelebA and Deap") == []
    assert unwritten_acronyms("CAT", "a cat sat on the mat") == ["CAT"]  # a plain word is none
    abstract = (
        "Our method achieves 1.8 P-MPJPE error reduction on the multi-person 3DPW dataset. "
        "The SOTA rendering-based methods enlarge the error up to 5.6 on the same dataset."
    )
    evidence = "The SOTA rendering-based methods enlarge the error up to 5.6"
    said = "SOTA rendering-based methods enlarge the error by up to 5.6 on 3DPW."
    assert statement_problems(said, evidence, abstract) == []
    assert statement_problems(said.replace("3DPW", "3DHP"), evidence, abstract) != []


def test_what_the_abstract_asks_is_no_claim_and_a_version_is_no_quantity(stages):
    abstract = (
        "We evaluate ESM-2 on FLIP. We investigate whether recent advances in protein "
        "language models lead to significant improvements in such settings. We present "
        "wav2vec 2.0, which reaches 1.8 WER on the clean test set."
    )
    asked = "recent advances in protein language models lead to significant improvements"
    raw = json.dumps(
        {
            "claims": [
                _item("Protein language models improve FLIP results.", asked),
                _item("wav2vec 2.0 reaches 1.8 WER on clean.",
                      "wav2vec 2.0, which reaches 1.8 WER on the clean test set",
                      kind="quantitative", value="1.8"),
            ]
        }
    )  # fmt: skip
    parsed = stages["claims"].accept(raw, abstract, keep_none=True)
    assert [c["value"] for c in parsed.output["claims"]] == ["1.8"]
    assert "what the abstract asks" in str(parsed.rejected[0].error)


def _assert_judged(stages, abstract, statement, evidence, kept, message):
    """The claim is kept, or rejected with `message` in its record."""
    parsed = stages["claims"].accept(_claim(statement, evidence), abstract, keep_none=True)
    assert bool(parsed.output["claims"]) is kept
    if not kept:
        assert message in str(parsed.rejected[0].error)


@pytest.mark.parametrize(
    ("statement", "kept"),
    [
        ("The models are shown to leak private information to membership attacks.", False),
        ("The study reports whether the models leak private information.", True),
        ("The models leak private information, as they are tested.", False),
    ],
)
def test_a_statement_does_not_answer_what_its_evidence_asks(stages, statement, kept):
    abstract = (
        "We define the problem for sequence generation and report initial results on whether "
        "these models leak private information against several kinds of attacks. Results "
        "hold regardless of whether the models leak private information in training."
    )
    evidence = "report initial results on whether these models leak private information"
    _assert_judged(stages, abstract, statement, evidence, kept, "which its evidence only asks")
    # "regardless of whether" asks nothing
    said = "Results hold when the models leak private information in training."
    quoted = "Results hold regardless of whether the models leak private information in training"
    assert stages["claims"].accept(_claim(said, quoted), abstract).output["claims"]


@pytest.mark.parametrize(
    ("evidence", "kept"),
    [
        # what the evaluation does: no result
        ("we evaluate the approach on MuJoCo, comparing it with the state-of-the-art baseline",
         False),
        # what it reaches
        ("our approach outperforms the state-of-the-art baseline on MuJoCo", True),
        ("Comparing with existing approaches, our approach has the most flexibility", True),
    ],
)  # fmt: skip
def test_comparing_it_with_the_state_of_the_art_is_no_result(stages, evidence, kept):
    abstract = (
        "Finally, we evaluate the approach on MuJoCo, comparing it with the state-of-the-art "
        "baseline. In a second study, our approach outperforms the state-of-the-art baseline on "
        "MuJoCo. Comparing with existing approaches, our approach has the most flexibility."
    )
    said = "The approach outperforms the state-of-the-art baseline on MuJoCo."
    _assert_judged(stages, abstract, said, evidence, kept, "claim of superiority ('outperform')")


def test_half_is_no_value_of_50(stages):
    abstract = "TCS matches KD methods while only requiring roughly half of their training time."
    evidence = "only requiring roughly half of their training time"
    said = "TCS requires roughly half of the training time of KD methods."
    raw = _claim(said, evidence, kind="quantitative", value="50", unit="%")
    parsed = stages["claims"].accept(raw, abstract, keep_none=True)
    assert parsed.output["claims"] == []
    assert "value '50' does not occur in its evidence" in str(parsed.rejected[0].error)
    kept = stages["claims"].accept(_claim(said, evidence, value="half"), abstract)
    assert [c["value"] for c in kept.output["claims"]] == ["half"]


def test_a_list_items_marker_backs_no_number():
    from pipeline.support import statement_problems

    abstract = (
        "We find that ULS is significantly better in settings where either (1) strong privacy "
        "guarantees are required, or (2) the compute budget is large."
    )
    evidence = "ULS is significantly better in settings where either (1) strong privacy guarantees are required"
    said = "ULS is significantly better when strong privacy guarantees (ε = 1) are required."
    assert statement_problems(said, evidence, abstract) == ["'1', which its evidence does not hold"]
    marked = "ULS is significantly better when (1) strong privacy guarantees are required."
    assert statement_problems(marked, evidence, abstract) == []


def test_a_percentage_is_not_backed_by_a_count_next_to_the_quote():
    from pipeline.support import statement_problems

    abstract = (
        "Experiments on 3 synthetic benchmarks and 5 real-world datasets showed the strategy "
        "applies to most methods as well as enhance their performance."
    )
    evidence = "as well as enhance their performance"
    said = "The strategy enhances the performance of most methods by up to 5%."
    assert "'5%', which its evidence does not hold" in statement_problems(
        said, evidence, abstract, abstract
    )
    # the count itself, repeated from the evidence's sentence, is fine
    said = "The strategy enhances performance on 5 real-world datasets."
    assert statement_problems(said, evidence, abstract, abstract) == []


def test_a_baselines_version_word_must_be_the_abstracts(stages):
    # The abstract compares with no "standard" anything: "standard prompting" is the model's.
    abstract = (
        "Chain of thought prompting improves the ability of large language models to perform "
        "complex reasoning, surpassing even finetuned GPT-3 with a verifier."
    )
    evidence = "Chain of thought prompting improves the ability of large language models"
    raw = json.dumps(
        {
            "claims": [
                _item("Chain of thought prompting improves reasoning.", evidence,
                      comparison="standard prompting"),
                _item("Chain of thought prompting surpasses finetuned GPT-3.", abstract[:-1],
                      comparison="finetuned GPT-3 with a verifier"),
            ]
        }
    )  # fmt: skip
    parsed = stages["claims"].accept(raw, abstract, keep_none=True)
    assert [c["comparison"] for c in parsed.output["claims"]] == ["finetuned GPT-3 with a verifier"]
    assert "no standard version" in str(parsed.rejected[0].error)
    # where the abstract says "standard", the baseline may too
    said = abstract.replace("surpassing", "surpassing standard prompting and")
    assert stages["claims"].accept(raw, said, keep_none=True).rejected == []


def test_a_statement_may_add_at_most_two_words_the_abstract_never_uses(stages):
    from pipeline.support import new_words

    abstract = "We further analyse the effects of the proposed regularizations on the agents."
    evidence = "We further analyse the effects of the proposed regularizations on the agents"
    # British and American spellings are one word; "author" and "affect" are the model's.
    said = "The authors analyze how the regularizations affect the agents."
    assert new_words(said, abstract) == ["author", "affect"]
    assert new_words("It keeps accuracy on NLP tasks.", "natural language processing tasks") == [
        "keep",
        "accuracy",
    ]
    assert stages["claims"].accept(_claim(said, evidence), abstract).output["claims"]
    helpful = "Reviewers found the regularizations helpful for the agents' authors."
    parsed = stages["claims"].accept(_claim(helpful, evidence), abstract, keep_none=True)
    assert parsed.output["claims"] == [] and "never uses" in str(parsed.rejected[0].error)
