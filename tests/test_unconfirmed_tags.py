"""A tag whose only support is an ambiguous phrase is shown marked, never as fact (issue
20.1, tags), and a keyword of plain words must stand in the abstract in a row (keywords)."""

from __future__ import annotations

import json

import pytest

from pipeline.errors import OutputValidationError
from pipeline.offline.tags import match_tags
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.report.markdown import _md_paper
from pipeline.rundir.paper import Paper
from pipeline.rundir.writer import csv_columns
from pipeline.stages import stage_names
from pipeline.support import (
    contradictions,
    keyword_supported,
    name_supported,
    name_tokens,
    unconfirmed_tags,
    unsupported_names,
    unsupported_tags,
    unwritten_acronyms,
)
from pipeline.taxonomy import load_taxonomy

# "generalization performance" is test accuracy here, not the topic generalization-ood.
MOMENTUM = (
    "Stochastic gradient descent with Nesterov's momentum is observed to have excellent "
    "generalization performance. We propose a momentum variant with faster convergence in "
    "the early stage, and provide optimal convergence rates in the convex case."
)
OOD = MOMENTUM + " The variant also generalizes to unseen domains under distribution shift."
LIE = (
    "We study natural or relative gradient descent on matrix Lie groups and derive "
    "preconditioners that converge fast on blind source separation."
)


@pytest.fixture(scope="module")
def taxonomy():
    return load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")


def test_a_tag_with_only_an_ambiguous_phrase_is_unconfirmed_until_its_cue_appears(taxonomy):
    tags = ["optimization-algorithms", "generalization-ood"]
    assert unconfirmed_tags(tags, MOMENTUM, taxonomy) == ["generalization-ood"]
    assert unconfirmed_tags(tags, OOD, taxonomy) == []


def test_the_stage_moves_unconfirmed_tags_out_of_tags_and_says_so(stages):
    raw = json.dumps(
        {"tags": ["generalization-ood", "optimization-algorithms"], "keywords": ["momentum"]}
    )
    parsed = stages["tags"].accept(raw, MOMENTUM)
    assert parsed.output["tags"] == ["optimization-algorithms"]
    assert parsed.output["unconfirmed"] == ["generalization-ood"]
    assert "tags_unconfirmed" in parsed.repairs
    assert parsed.dropped == []  # kept, marked: not a drop
    # The stored output passes the same checks when read back from the cache.
    assert stages["tags"].validate(parsed.output, MOMENTUM) == parsed.output
    confirmed = stages["tags"].accept(raw, OOD)
    assert confirmed.output["tags"] == ["generalization-ood", "optimization-algorithms"]
    assert "unconfirmed" not in confirmed.output and "tags_unconfirmed" not in confirmed.repairs


def test_an_answer_whose_tags_are_all_unconfirmed_is_kept_marked(stages):
    parsed = stages["tags"].accept('{"tags": ["generalization-ood"], "keywords": []}', MOMENTUM)
    assert parsed.output == {"tags": [], "keywords": [], "unconfirmed": ["generalization-ood"]}


def test_unconfirmed_is_never_asked_of_the_model(stages):
    schema = json.dumps(stages["tags"].json_schema)
    assert "unconfirmed" not in schema
    assert "unconfirmed" not in stages["tags"].json_object_rules


def test_lie_groups_alone_are_no_equivariant_network(taxonomy, stages):
    assert "equivariant-networks" not in match_tags(LIE, taxonomy)[0]
    parsed = stages["tags"].accept(
        '{"tags": ["optimization-algorithms", "equivariant-networks"], "keywords": []}', LIE
    )
    assert "equivariant-networks" not in parsed.output["tags"]
    assert "equivariant-networks" not in parsed.output.get("unconfirmed", [])
    equivariant = "We build Lie group equivariant convolutions that respect rotation symmetry."
    assert "equivariant-networks" in match_tags(equivariant, taxonomy)[0]


@pytest.mark.parametrize(
    ("keyword", "expected"),
    [
        ("natural gradient", False),  # its words are apart: "natural or relative gradient"
        ("relative gradient descent", True),
        ("matrix Lie groups", True),  # a name, not plain words: checked as names are
        ("gradient descent method", True),  # a generic word added
        ("blind source separation", True),
        ("source separation preconditioners", False),
    ],
)
def test_a_plain_keyword_needs_its_words_in_a_row(keyword, expected):
    assert keyword_supported(keyword, LIE) is expected


def test_names_keep_their_tolerance():
    # Datasets and baselines may be assembled from the abstract's words; keywords may not.
    assert name_supported("natural gradient", LIE)
    assert not keyword_supported("natural gradient", LIE)


def test_the_markdown_report_shows_unconfirmed_tags_marked(taxonomy):
    paper = Paper(
        id="p1",
        title="Amortized momentum",
        abstract=MOMENTUM,
        tags=("optimization-algorithms",),
        unconfirmed_tags=("generalization-ood",),
    )
    lines = _md_paper(paper, taxonomy, "optimization-algorithms", "")
    marked = [x for x in lines if "Unconfirmed tags" in x]
    assert marked and "Generalization and distribution shift" in marked[0]
    assert not any("Also:" in x for x in lines)  # the unconfirmed tag is not listed as a tag


def test_the_csv_has_a_column_for_unconfirmed_tags(stages):
    from pipeline.stages.tags import STAGE

    row = STAGE.csv(
        {"tags": ["optimization-algorithms"], "keywords": [], "unconfirmed": ["generalization-ood"]}
    )
    assert row == {
        "tags": "optimization-algorithms",
        "keywords": "",
        "unconfirmed_tags": "generalization-ood",
    }
    columns = csv_columns(tuple(stages[name].spec for name in stage_names()))
    assert columns.index("unconfirmed_tags") == columns.index("keywords") + 1


NPMT = (
    "We present Neural Phrase-based Machine Translation (NPMT). Different from existing "
    "neural machine translation approaches, NPMT does not use attention-based decoding "
    "mechanisms. NPMT achieves superior performance on IWSLT 2014 German-English."
)
BIASES = (
    "Natural language inference models rely on unwanted dataset biases. We train a bias-only "
    "model and down-weight the biased examples, which improves robustness out of domain."
)


def test_a_tag_only_negated_in_the_abstract_is_unconfirmed(taxonomy, stages):
    assert unconfirmed_tags(["transformers", "machine-translation"], NPMT, taxonomy) == [
        "transformers"
    ]
    raw = '{"tags": ["machine-translation", "transformers"], "keywords": ["NPMT"]}'
    parsed = stages["tags"].accept(raw, NPMT)
    assert parsed.output["tags"] == ["machine-translation"]
    assert parsed.output["unconfirmed"] == ["transformers"]
    asserted = NPMT.replace("does not use", "uses")
    assert unconfirmed_tags(["transformers"], asserted, taxonomy) == []


def test_bias_alone_is_no_fairness_but_social_bias_is(taxonomy):
    assert unconfirmed_tags(["fairness"], BIASES, taxonomy) == ["fairness"]
    social = BIASES.replace("dataset biases", "gender bias against demographic groups")
    assert unconfirmed_tags(["fairness"], social, taxonomy) == []


@pytest.mark.parametrize(
    ("tldr", "problem"),
    [
        ("NPMT beats attention on five benchmarks.", "five"),
        ("NPMT runs ten-fold faster.", "ten"),
        ("NPMT translates German-English with two decoders.", None),  # "2" stands for two
        ("NPMT is one model for translation.", None),  # "one" is left out
        ("NPMT translates zero-shot.", None),  # a kind of method, not a count
    ],
)
def test_a_tldr_count_spelled_out_must_be_in_the_abstract(stages, tldr, problem):
    abstract = NPMT + " We use 2 decoders."
    if problem is None:
        assert stages["tldr"].parse(json.dumps({"tldr": tldr}), abstract)["tldr"] == tldr
        return
    with pytest.raises(
        OutputValidationError, match=f"counts the abstract does not state: {problem}"
    ):
        stages["tldr"].parse(json.dumps({"tldr": tldr}), abstract)


GANS = (
    "Both models are 3D conditional Generative Adversarial networks (GANs). It is a successful "
    "application of neural CFR with deep learning in large games."
)


@pytest.mark.parametrize(
    ("keyword", "expected"),
    [
        ("3D conditional GANs", True),  # an acronym stands for the words it abbreviates
        ("conditional GAN", True),
        ("neural CFR", True),
        ("Deep CFR", False),  # "deep" and "CFR" are both there, apart
    ],
)
def test_a_keyword_with_an_acronym_needs_its_words_in_a_row_too(keyword, expected):
    assert keyword_supported(keyword, GANS) is expected


def test_scattered_vocabulary_words_or_theory_alone_do_not_confirm_a_tag(taxonomy):
    dialogue = (
        "We build a dialogue agent that reads a passage and answers questions about it with a "
        "recurrent encoder."
    )
    tags = ["information-retrieval"]
    assert unconfirmed_tags(tags, dialogue, taxonomy) == tags
    position = "We present a theory of how the neocortex learns sequences of sensory inputs."
    assert unconfirmed_tags(["deep-learning-theory"], position, taxonomy) == [
        "deep-learning-theory"
    ]
    landscape = position + " We characterize the loss landscape of deep networks."
    assert unconfirmed_tags(["deep-learning-theory"], landscape, taxonomy) == []


def test_a_negation_reaches_over_or_to_the_next_mention(taxonomy):
    plug = (
        "Large language models generate fluent text. Controlling attributes is difficult "
        "without modifying the model architecture or fine-tuning on attribute-specific data."
    )
    assert unconfirmed_tags(["llm-fine-tuning"], plug, taxonomy) == ["llm-fine-tuning"]
    # Across a comma the negation does not reach: "without X, or fine-tuning ..." asserts it.
    comma = plug.replace("architecture or", "architecture, or")
    assert unconfirmed_tags(["llm-fine-tuning"], comma, taxonomy) == []


def test_a_sequel_numeral_is_no_acronym_of_the_abstracts_words(stages):
    abstract = (
        "We highlight three key ingredients, i.e. independent reasoning, and apply them to "
        "challenging StarCraft micromanagement tasks with reinforcement learning."
    )
    with pytest.raises(OutputValidationError, match="'II'"):
        stages["tldr"].parse('{"tldr": "It wins StarCraft II micromanagement."}', abstract)
    assert name_supported("RL", abstract)  # two content words in a row still abbreviate


def test_a_compound_of_names_is_checked_whole(stages):
    abstract = (
        "We propose the Nesterov Iterative Fast Gradient Sign Method (NI-FGSM), whose models "
        "improve transferability, and integrate it with other attacks."
    )
    with pytest.raises(OutputValidationError, match="'MI-FGSM'"):
        stages["tldr"].parse('{"tldr": "NI-FGSM beats MI-FGSM."}', abstract)
    assert stages["tldr"].parse('{"tldr": "NI-FGSM transfers well."}', abstract)


def test_a_tldr_naming_a_topic_the_abstract_lacks_is_rejected(stages):
    abstract = (
        "Cross-View Training trains auxiliary modules on restricted views of unlabeled data "
        "and improves semi-supervised image classification on CIFAR-10 and SVHN."
    )
    invented = '{"tldr": "Cross-View Training improves CIFAR-10 and named entity recognition."}'
    with pytest.raises(OutputValidationError, match="topic the abstract does not: 'named entity"):
        stages["tldr"].parse(invented, abstract)
    said = '{"tldr": "Cross-View Training improves semi-supervised image classification."}'
    assert stages["tldr"].parse(said, abstract)


def test_without_the_word_is_its_un_form_and_glued_pdf_names_are_found():
    evidence = "our agent learns to write digits in an unsupervised manner"
    assert contradictions("The agent learns to write digits without supervision.", evidence) == []
    assert contradictions("The agent learns to write digits with supervision.", evidence)
    abstract = (
        "Lyceum is up to 10-20Xfaster than abstractions like OpenAI’sGymand Deep-Mind’sdm-control"
    )
    assert name_supported("OpenAI's Gym and DeepMind's dm-control", abstract)
    assert not name_supported("OpenAI's Gym and DeepMind's Control Suite", abstract)


@pytest.mark.parametrize(
    ("tag", "alone", "with_cue"),
    [
        # a sparse reward is a setting, exploration a topic
        ("exploration",
         "HTRPO optimizes policies in sparse reward environments within a trust region.",
         "HTRPO explores sparse reward environments with an intrinsic curiosity bonus."),
        # meshes are segmented too
        ("image-segmentation",
         "We refine a surface mapping by segmentation of the mesh and flattening of its parts.",
         "We refine pixel masks of an image by segmentation of the scene."),
    ],
)  # fmt: skip
def test_an_ambiguous_setting_needs_its_cue_to_confirm_a_topic(taxonomy, tag, alone, with_cue):
    assert not _shown_as_fact(tag, alone, taxonomy)
    assert _shown_as_fact(tag, with_cue, taxonomy)


def test_backpropagation_alone_is_no_optimizer_paper(taxonomy):
    boolean = (
        "Since backpropagation is not possible through discrete variables, we derive a gradient "
        "estimator for deep Boolean stochastic networks."
    )
    tag = "optimization-algorithms"
    assert unconfirmed_tags([tag], boolean, taxonomy) == [tag]
    assert _shown_as_fact(tag, boolean + " Its convergence rate beats SGD.", taxonomy)


def _shown_as_fact(tag: str, abstract: str, taxonomy) -> bool:
    return not unsupported_tags([tag], abstract, taxonomy) and not unconfirmed_tags(
        [tag], abstract, taxonomy
    )


def test_fixed_abbreviations_and_whole_names():
    abstract = (
        "We study deep convolutional networks trained on language and extensions to the "
        "variational autoencoder family, and ZO-signSGD, a zeroth-order (ZO) variant of signSGD "
        "and SGD-type methods."
    )
    assert name_supported("CNNs", abstract) and name_supported("VAE", abstract)
    # all of whose parts are acronyms: one name, not "ZO" near "SGD"
    assert not name_supported("ZO-SGD", abstract) and name_supported("ZO-signSGD", abstract)
    # a Greek letter makes a compound one name: "β-VAE" is no VAE
    assert name_tokens("A β-VAE trained with MI-FGSM.") == ["β-VAE", "MI-FGSM"]
    assert not name_supported("β-VAE", abstract)


def test_without_any_is_a_negation_too():
    evidence = "learn a generative model from natural images in a fully unsupervised way"
    assert contradictions("It learns the model without any supervision.", evidence) == []


def test_agents_alone_are_no_reinforcement_learning(taxonomy):
    plans = "We recognize the plans of agents from video with an approximate domain model."
    assert not _shown_as_fact("reinforcement-learning", plans, taxonomy)
    rl = "Agents learn policies from rewards with reinforcement learning."
    assert _shown_as_fact("reinforcement-learning", rl, taxonomy)


def test_a_run_of_names_is_one_name():
    abstract = (
        "A recursive network emulates the backup of a value  iteration algorithm, and beats "
        "Nesterov's momentum on the CoQA leaderboard's F1 score."
    )
    assert unsupported_names("It generalizes Value Iteration Networks.", abstract) == [
        "Value Iteration Networks"
    ]
    # a possessive, a metric after a dataset, and a run the abstract writes are fine
    for text in ("It beats Nesterov Momentum.", "It raises the CoQA F1 score.",
                 "MobileBERT's F1 is higher."):  # fmt: skip
        assert unsupported_names(text, abstract + " MobileBERT") == [], text


def test_a_capitalized_name_is_matched_as_a_word_not_a_stem():
    # "Informer" (a forecasting model) shares its stem with "information", not its name.
    abstract = (
        "Transformers lower their complexity at the cost of information utilization. "
        "Conformer outperforms Transformers."
    )
    assert unsupported_names("Conformer outperforms models such as Informer.", abstract) == [
        "Informer"
    ]
    assert unsupported_names("Conformer outperforms Transformer models.", abstract) == []


def test_an_acronym_is_no_initials_of_words_that_open_no_name():
    abstract = (
        "Pretraining a dense index is expensive. Despite the promising results, it needs a "
        "large batch. We train generative adversarial networks on images."
    )
    assert unsupported_names("It outperforms DPR.", abstract) == ["DPR"]
    assert unsupported_names("A GAN on images.", abstract) == []
    # initials never run across a sentence end ("expensive. Despite ..." is no "ED")
    assert unsupported_names("It beats IED.", abstract) == ["IED"]


def test_a_plain_keyword_keeps_its_generic_words():
    abstract = (
        "We propose Virtual Adversarial Domain Adaptation, which combines domain adversarial "
        "training with a penalty term."
    )
    assert not keyword_supported("virtual adversarial training", abstract)
    assert keyword_supported("domain adversarial training", abstract)
    assert keyword_supported("Virtual Adversarial Domain Adaptation", abstract)


def test_optimal_is_no_optimization(taxonomy):
    control = "We show that a Nash equilibrium can be found by solving an optimal control problem."
    assert unsupported_tags(["optimization-algorithms"], control, taxonomy) == [
        "optimization-algorithms"
    ]
    assert _shown_as_fact(
        "optimization-algorithms", control + " We study its optimization.", taxonomy
    )


def test_a_paper_evaluated_on_datasets_releases_none(taxonomy):
    study = (
        "We present a large-scale empirical study of catastrophic forgetting on the largest "
        "number of visual classification datasets so far."
    )
    assert not _shown_as_fact("benchmark-dataset", study, taxonomy)
    release = study + " We release a new benchmark of sequential learning tasks."
    assert _shown_as_fact("benchmark-dataset", release, taxonomy)


@pytest.mark.parametrize(
    ("tag", "text"),
    [
        ("transformers", "We align the target features with a transformed source space."),
        ("fairness", "The features keep their discriminative power on the target domain."),
        ("regularization-objectives", "We detect every object in the scene with one network."),
        ("deep-learning-theory", "We predict gene expression from the sequence of a cell."),
        ("generalization-ood", "The problem is hard in general; we study piecewise linear maps."),
    ],
)
def test_a_word_sharing_only_a_stem_with_a_tag_is_no_support(taxonomy, tag, text):
    assert unsupported_tags([tag], text, taxonomy) == [tag]


def test_a_tag_met_only_as_what_is_outperformed_is_unconfirmed(taxonomy):
    vi = (
        "We propose a method for training flexible variational distributions. It significantly "
        "outperforms standard VI and deep ensembles on residual networks."
    )
    assert unconfirmed_tags(["uncertainty-quantification"], vi, taxonomy) == [
        "uncertainty-quantification"
    ]
    own = vi + " We also build deep ensembles of the refined posteriors."
    assert unconfirmed_tags(["uncertainty-quantification"], own, taxonomy) == []
    # "more than" is a quantity, not a comparison.
    deeper = "Our convergence theory holds for networks with more than one hidden layer."
    assert "deep-learning-theory" not in unconfirmed_tags(
        ["deep-learning-theory"], deeper, taxonomy
    )


@pytest.mark.parametrize(
    ("tag", "text", "confirming"),
    [
        # met only as what a result matches
        ("generative-adversarial-networks",
         "We present image synthesis results using diffusion probabilistic models. On LSUN, "
         "we obtain sample quality similar to ProgressiveGAN.",
         " We also train a GAN on the denoised samples."),
        # an augmentation policy is a policy without reinforcement
        ("reinforcement-learning",
         "Determining an effective data augmentation policy requires expertise. We learn "
         "input-conditional augmentation policies with a neural network.",
         " The policy maximizes the expected reward of the classifier."),
        # what "instead of applying" sets aside is no topic
        ("recurrent-networks",
         "Instead of applying recurrent models to sequence learning, we build our model "
         "entirely on convolutional networks.",
         " A recurrent model then refines the forecast."),
    ],
)  # fmt: skip
def test_a_matched_tag_or_a_policy_alone_confirms_no_tag(taxonomy, tag, text, confirming):
    assert unconfirmed_tags([tag], text, taxonomy) == [tag]
    assert unconfirmed_tags([tag], text + confirming, taxonomy) == []


@pytest.mark.parametrize(
    ("text", "supported"),
    [
        # this abstract's BNN is no Bayesian neural network
        ("Binary Neural Networks (BNN) suit small devices. We train BNNs with a new sign.", False),
        ("Bayesian Neural Networks (BNNs) are calibrated. We train BNNs with a new prior.", True),
        # a typo in the long form is no other meaning
        ("Bayesian Nueral Networks (BNNs) are calibrated. We train BNNs with a new prior.", True),
    ],
)
def test_an_acronym_the_abstract_defines_otherwise_supports_no_tag(taxonomy, text, supported):
    assert (unsupported_tags(["bayesian-methods"], text, taxonomy) == []) is supported


def test_an_umbrella_whose_narrower_tag_is_unconfirmed_is_unconfirmed_too(taxonomy):
    robots = (
        "Prospection has not been explored in depth in robotics. We learn a model that "
        "predicts the outcomes of high level actions for task planning."
    )
    assert unconfirmed_tags(["exploration", "reinforcement-learning"], robots, taxonomy) == [
        "exploration",
        "reinforcement-learning",
    ]
    agent = robots + " The agent must explore a sparse-reward environment."
    assert _shown_as_fact("exploration", agent, taxonomy)


def test_a_keywords_acronym_is_written_in_the_abstract():
    lc = "We propose a framework based on the Learning-Compression algorithm to compress nets."
    assert keyword_supported("Learning-Compression algorithm", lc)
    assert not keyword_supported("LC algorithm", lc)
    assert keyword_supported("LC algorithm", lc.replace("algorithm", "(LC) algorithm"))
    assert keyword_supported("GANs", "We train a GAN with two discriminators.")
    assert name_supported("LC", lc)  # a TL;DR may still abbreviate the abstract's words
    assert unwritten_acronyms("LC baseline", lc) == ["LC"]  # a dataset or baseline may not
    assert unwritten_acronyms("CNN", "We train a convolutional network.") == []  # documented


def test_simulated_data_is_no_simulator(taxonomy):
    video = "We generate videos in experiments across simulated and real datasets."
    assert unconfirmed_tags(["robotics-control"], video, taxonomy) == ["robotics-control"]
    engine = "We train the policy in a physics simulator before deploying it."
    assert _shown_as_fact("robotics-control", engine, taxonomy)


def test_a_capital_s_is_a_letter_of_the_acronym_not_a_plural():
    kitti = "We advance the state of the art on the KITTI Multi-Object and Tracking Dataset."
    assert unsupported_names("It leads on KITTI MOTS.", kitti) == ["MOTS"]
    assert name_supported("MOTS", kitti.replace("Dataset.", "Dataset (MOTS)."))
    assert name_supported("MOS", "We report the mean opinion score of the samples.")
    assert name_supported("GANs", "We train generative adversarial networks.")


def test_a_capitalized_compound_keeps_its_generic_part():
    few_shot = "Few-shot learning has advanced with meta-learning. We learn disparate modulators."
    assert not name_supported("Meta-Dataset", few_shot)
    assert name_supported("Meta-Dataset", few_shot + " We evaluate on Meta-Dataset.")
    assert name_supported("the meta-learning baselines", few_shot)
