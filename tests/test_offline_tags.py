"""Offline tag matcher and the shipped taxonomy: fast, no network."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from samples import TAXONOMY_PATH

from pipeline.offline import tag_rules
from pipeline.offline.tags import BROAD_TAGS, match_tags, matcher_for
from pipeline.stages.tags import TagsOutput
from pipeline.taxonomy import Taxonomy, load_taxonomy

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "iclr2026"
CORE_FACETS = {"method", "task", "area"}

KAN_ABSTRACT = (
    "Permutation equivariant neural networks employing parameter-sharing schemes have emerged "
    "as powerful models for leveraging data symmetries. Recently, Kolmogorov-Arnold Networks "
    "(KANs) have demonstrated promise through their interpretability. This paper introduces "
    "Function Sharing KAN (FS-KAN), a principled approach to constructing equivariant and "
    "invariant KA layers for arbitrary permutation symmetry groups."
)


@pytest.fixture(scope="module")
def tax() -> Taxonomy:
    return load_taxonomy(TAXONOMY_PATH)


@pytest.fixture(scope="module")
def samples() -> list[str]:
    out: list[str] = []
    for path in sorted(EXAMPLES.glob("*.txt")):
        _header, _sep, body = path.read_text(encoding="utf-8").partition("\n")
        out += [block.strip() for block in body.split("\n\n") if block.strip()]
    return out


def _facets(tags: list[str], tax: Taxonomy) -> set[str]:
    return {tax.facet_of[t] for t in tags}


def _validate(tags: list[str], keywords: list[str], tax: Taxonomy) -> TagsOutput:
    return TagsOutput.model_validate(
        {"tags": tags, "keywords": keywords}, context={"taxonomy": tax}
    )


# Taxonomy -------------------------------------------------------------------------------------


def test_taxonomy_is_sizeable_with_required_facets(tax: Taxonomy) -> None:
    sizes = {f.id: len(f.tags) for f in tax.facets}
    assert set(sizes) >= CORE_FACETS | {"contribution"}
    assert 120 <= sum(sizes.values()) <= 220
    assert sizes["method"] >= 40 and sizes["task"] >= 30 and sizes["area"] >= 20
    assert sizes["contribution"] >= 5


def test_tag_ids_unique_and_every_tag_has_synonyms(tax: Taxonomy) -> None:
    ids = [t.id for f in tax.facets for t in f.tags]
    assert len(ids) == len(set(ids))
    thin = [t.id for t in tax.tags.values() if len(t.synonyms) < 3]
    assert not thin, f"tags with fewer than 3 synonyms: {thin}"


def test_every_label_and_synonym_resolves_to_its_tag(tax: Taxonomy) -> None:
    wrong = [
        (name, tag.id, tax.resolve(name))
        for tag in tax.tags.values()
        for name in (tag.id, tag.label, *tag.synonyms)
        if tax.resolve(name) != tag.id
    ]
    assert not wrong


def test_matcher_index_has_no_conflicting_phrases(tax: Taxonomy) -> None:
    # Plural/hyphen folding must not make two tags' synonyms collide.
    assert matcher_for(tax).conflicts == []


def test_contribution_cue_ids_exist_in_taxonomy(tax: Taxonomy) -> None:
    from pipeline.offline.tags import _CJK_CUES, _SEQ_CUES, _WINDOW_CUES

    cue_ids = {c[0] for c in _SEQ_CUES + _WINDOW_CUES + _CJK_CUES}
    assert cue_ids <= set(tax.ids)
    assert set(BROAD_TAGS) <= set(tax.ids)


# The 57 shipped samples ----------------------------------------------------------------------


def test_every_sample_gets_a_topical_tag_and_validates(samples: list[str], tax: Taxonomy) -> None:
    for text in samples:
        tags, keywords = match_tags(text, tax)
        out = _validate(tags, keywords, tax)
        assert out.tags == tags, "tags must already be canonical ids without duplicates"
        assert _facets(tags, tax) & CORE_FACETS, f"only a contribution tag for: {text[:80]}"
        assert tax.facet_of[tags[0]] != "contribution"
        facets = [tax.facet_of[t] == "contribution" for t in tags]
        assert facets == sorted(facets), "contribution types come after the topical tags"
        assert "new-method" not in tags, "the generic type only fills an otherwise empty list"


def test_samples_use_a_varied_set_of_tags(samples: list[str], tax: Taxonomy) -> None:
    counts = Counter(t for text in samples for t in match_tags(text, tax)[0])
    assert len(counts) >= 40
    # No single topical tag swamps the set (the fallback is not doing all the work either).
    topical = {t: n for t, n in counts.items() if tax.facet_of[t] != "contribution"}
    assert max(topical.values()) < len(samples) * 0.5


def test_keywords_are_short_and_not_taxonomy_phrases(samples: list[str], tax: Taxonomy) -> None:
    total = 0
    for text in samples:
        _tags, keywords = match_tags(text, tax)
        total += len(keywords)
        for kw in keywords:
            assert len(kw.split()) <= 5
            assert tax.resolve(kw) is None, kw
    assert total >= 20


# Targeted cases ------------------------------------------------------------------------------


def test_kan_with_permutation_equivariance(tax: Taxonomy) -> None:
    tags, keywords = match_tags(KAN_ABSTRACT, tax)
    assert {"kolmogorov-arnold-networks", "equivariant-networks"} <= set(tags)
    assert "Function Sharing KAN (FS-KAN)" in keywords


def test_kan_sample_from_examples(samples: list[str], tax: Taxonomy) -> None:
    text = next(s for s in samples if "Kolmogorov-Arnold" in s)
    tags, _keywords = match_tags(text, tax)
    assert tags[:2] == ["equivariant-networks", "kolmogorov-arnold-networks"]


@pytest.mark.parametrize("text", ["Organ donation outcomes.", "The ORGAN registry.", "an organ."])
def test_organ_does_not_trigger_gan(text: str, tax: Taxonomy) -> None:
    assert "generative-adversarial-networks" not in match_tags(text, tax)[0]


def test_abbreviations_match_case_sensitively_as_whole_tokens(tax: Taxonomy) -> None:
    assert "generative-adversarial-networks" in match_tags("We train a GAN on faces.", tax)[0]
    assert "generative-adversarial-networks" in match_tags("Two GANs are compared.", tax)[0]
    rlhf = match_tags("We align models with RLHF and compare RLHF variants.", tax)[0]
    assert "rlhf" in rlhf and "reinforcement-learning" not in rlhf
    assert (
        "reinforcement-learning" in match_tags("We train RL agents with RL-based rewards.", tax)[0]
    )
    assert "reinforcement-learning" not in match_tags("the url was rl-compatible", tax)[0]


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("Finetuning large language models is costly; we study finetuning.", "llm-fine-tuning"),
        ("Fine tuning large language models is costly; we study fine tuning.", "llm-fine-tuning"),
        ("We benchmark GNNs on molecules. GNNs are popular.", "graph-neural-networks"),
        ("Graph Neural Networks are popular message-passing models.", "graph-neural-networks"),
        ("Vision-language models (VLMs) caption images.", "vision-language-models"),
        (
            "Self-supervised learning of visual features via masked image modeling.",
            "self-supervised-learning",
        ),
    ],
)
def test_plural_case_and_hyphen_variants(text: str, tag: str, tax: Taxonomy) -> None:
    assert tag in match_tags(text, tax)[0]


def test_defined_acronym_counts_for_its_tag(tax: Taxonomy) -> None:
    text = (
        "Knowledge editing methods (KEs) update facts in models. Misinformation spreads on "
        "social media. We show KEs leave traces; detecting KEs is possible, and KEs can be "
        "reversed. Misinformation remains."
    )
    tags, keywords = match_tags(text, tax)
    assert tags[0] == "knowledge-editing"
    assert not any("KEs" in kw for kw in keywords)


def test_lead_mentions_rank_first(tax: Taxonomy) -> None:
    text = (
        "We study diffusion models for images. Sampling is slow. "
        "A graph neural network baseline is included for comparison."
    )
    tags, _ = match_tags(text, tax)
    # The longer phrase in the body would win on specificity alone; the lead position decides.
    assert tags[:2] == ["diffusion-models", "graph-neural-networks"]


def test_broad_tags_come_after_specific_ones(tax: Taxonomy) -> None:
    text = (
        "Large language models (LLMs) are everywhere. LLMs are trained at scale, and LLMs "
        "memorize. We train sparse autoencoders on LLMs and compare LLMs of several sizes."
    )
    tags, _ = match_tags(text, tax)
    assert tags.index("sparse-autoencoders") < tags.index("large-language-models")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("We introduce a new benchmark of 5,000 questions to evaluate LLMs.", "benchmark-dataset"),
        (
            "We prove a tight upper bound on the sample complexity of learning.",
            "theoretical-analysis",
        ),
        (
            "We study how transformers use positional encodings and find that heads specialize.",
            "empirical-study",
        ),
        (
            "This survey reviews work on diffusion models and offers an overview of open problems.",
            "survey",
        ),
    ],
)
def test_contribution_type_from_cues(text: str, kind: str, tax: Taxonomy) -> None:
    tags, _ = match_tags(text, tax)
    assert kind in tags
    assert [t for t in tags if tax.facet_of[t] == "contribution"][0] == kind


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n  ",
        "图神经网络在许多任务上表现良好。",
        "本文提出了一种新的图神经网络方法，并在多个数据集上验证了其有效性。",
        "x" * 30_000,
        "!!! ??? ...",
    ],
)
def test_text_without_matches_still_gets_one_tag(text: str, tax: Taxonomy) -> None:
    tags, keywords = match_tags(text, tax)
    assert len(tags) == 1 and tax.facet_of[tags[0]] == "contribution"
    _validate(tags, keywords, tax)


def test_never_more_than_six_tags_or_five_keywords(tax: Taxonomy) -> None:
    text = (
        " ".join(
            f"We propose {label} for {label}."
            for label in [t.label for t in tax.tags.values()][:80]
        )
        + " Alpha Beta (AB), Gamma Delta (GD), Eps Zeta (EZ), Eta Theta (ET), Iota Kappa (IK), Mu Nu (MN)."
    )
    tags, keywords = match_tags(text, tax)
    assert len(tags) == 6 and len(keywords) == 5
    _validate(tags, keywords, tax)


def test_matcher_is_built_once_per_taxonomy(tax: Taxonomy) -> None:
    assert matcher_for(tax) is matcher_for(tax)
    other = Taxonomy.model_validate(tax.model_dump())  # an equal taxonomy, another object
    assert matcher_for(other) is not matcher_for(tax)
    assert matcher_for(other).ci_index == matcher_for(tax).ci_index


def test_mentions_report_spans_and_lead_weight(tax: Taxonomy) -> None:
    found = matcher_for(tax).mentions("Neural ODEs are neat. They work. Neural ODEs again.")
    assert [(m.tag, m.start, m.end) for m in found] == [
        ("neural-odes", 0, 2),
        ("neural-odes", 6, 8),
    ]
    assert found[0].weight > found[1].weight


def test_keywords_fill_up_with_repeated_phrases(tax: Taxonomy) -> None:
    text = (
        "Feature visualization of sparse autoencoders reveals structure. We apply feature "
        "visualization to sparse autoencoders trained on images, and Dale's law holds."
    )
    _tags, keywords = match_tags(text, tax)
    assert "Feature visualization" in keywords
    assert not any("autoencoder" in kw.lower() for kw in keywords)


def test_acronym_long_form_stops_at_punctuation(tax: Taxonomy) -> None:
    assert "Foo Bar Baz (FBB)" in match_tags("We train Foo Bar Baz (FBB) models.", tax)[1]
    keywords = match_tags("Fast models, bar baz (FBB) help.", tax)[1]
    assert not any(kw.startswith("Fast") for kw in keywords)


def test_negated_mentions_are_not_topics():

    from pipeline.offline.tags import match_tags
    from pipeline.taxonomy import load_taxonomy

    tax = load_taxonomy(TAXONOMY_PATH)
    text = (
        "We detect anomalies in graphs with a graph neural network. With frozen parameters "
        "(no target fine-tuning), the detector transfers across domains without RLHF."
    )
    tags, _ = match_tags(text, tax)
    assert "llm-fine-tuning" not in tags and "rlhf" not in tags
    assert "graph-neural-networks" in tags
    # Without the negation the mentions count (fine-tuning is LLM fine-tuning only next to a
    # language model: a fine-tuned graph detector is transfer learning).
    positive, _ = match_tags(text.replace("without RLHF", "with RLHF"), tax)
    assert "rlhf" in positive
    lm = text.replace("graph neural network", "pretrained BERT language model")
    positive, _ = match_tags(lm.replace("no target fine-tuning", "after target fine-tuning"), tax)
    assert "llm-fine-tuning" in positive


# Context, not bare words (issue 12) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        (
            "We propose DNA-GAN, a supervised method for disentangling image attributes. "
            "DNA-GAN learns DNA-like latent representations of faces.",
            "genomics-biology",
        ),
        (
            "We train a generative adversarial network; adversarial training of the generator "
            "against the discriminator yields sharper image samples.",
            "adversarial-robustness",
        ),
        (
            "We discuss the potential misuse of face recognition systems deployed by cities.",
            "ai-safety",
        ),
        (
            "An autonomous agent controls a robot arm with reinforcement learning to grasp objects.",
            "llm-agents",
        ),
        (
            "Our convolutional model is invariant to translation, illumination and rotation of "
            "objects in natural images.",
            "machine-translation",
        ),
        (
            "We learn regression functions in function space with Gaussian process priors.",
            "pde-scientific-computing",
        ),
        (
            "We study Wasserstein neurons, units whose activations move mass, in language models.",
            "optimal-transport",
        ),
        (
            "We propose Attention Calibration, which re-weights transformer attention heads to "
            "improve text classification.",
            "uncertainty-quantification",
        ),
    ],
)
def test_a_bare_word_does_not_make_a_tag(text: str, wrong: str, tax: Taxonomy) -> None:
    tags, _ = match_tags(text, tax)
    assert wrong not in tags, tags


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        (
            "Adversarial training with PGD attacks improves robustness to adversarial "
            "perturbations of image classifiers.",
            "adversarial-robustness",
        ),
        (
            "We improve neural machine translation from English to German; translation quality "
            "rises by 2 BLEU on WMT14.",
            "machine-translation",
        ),
        (
            "We calibrate the confidence of deep classifiers: calibration error drops and "
            "overconfident predictions become rare.",
            "uncertainty-quantification",
        ),
        (
            "We measure the Wasserstein distance between distributions with optimal transport.",
            "optimal-transport",
        ),
    ],
)
def test_an_ambiguous_phrase_counts_with_a_second_cue(text: str, tag: str, tax: Taxonomy) -> None:
    assert tag in match_tags(text, tax)[0]


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        (
            "We propose DNA-GAN to disentangle attributes of face images.",
            GAN := "generative-adversarial-networks",
        ),
        ("We train a CycleGAN and an InfoGAN on unpaired face images.", GAN),
        ("A BiLSTM tagger with a ConvLSTM encoder reads the frames.", "recurrent-networks"),
        (
            "We fine-tune DistilBERT and SciBERT on scientific claims; pretrained BERT variants "
            "transfer well.",
            "large-language-models",
        ),
        ("We use GraphSAGE to learn node embeddings for link prediction.", "graph-neural-networks"),
    ],
)
def test_names_containing_a_family_count(text: str, tag: str, tax: Taxonomy) -> None:
    assert tag in match_tags(text, tax)[0]


def test_all_caps_word_ending_in_a_family_is_not_one(tax: Taxonomy) -> None:
    assert "generative-adversarial-networks" not in match_tags("The ORGAN registry grew.", tax)[0]


@pytest.mark.parametrize(
    "text",
    [
        "Unlike GANs, our diffusion model needs no discriminator; diffusion models are stable.",
        "Instead of GANs, we train diffusion models, and diffusion models sample well.",
        "Our diffusion model is GAN-free and trains a diffusion model with denoising.",
        "We train diffusion models without GANs; the diffusion model is simple.",
    ],
)
def test_passing_and_negated_mentions_are_ignored(text: str, tax: Taxonomy) -> None:
    tags, _ = match_tags(text, tax)
    assert "diffusion-models" in tags
    assert "generative-adversarial-networks" not in tags


def test_new_method_only_when_nothing_more_specific_applies(tax: Taxonomy) -> None:
    topical = match_tags("We propose a novel graph neural network for molecules.", tax)[0]
    assert "new-method" not in topical and "graph-neural-networks" in topical
    bare = match_tags("We propose a novel approach and show it works well.", tax)[0]
    assert bare == ["new-method"]
    theory = match_tags("We prove a tight lower bound for graph neural networks.", tax)[0]
    assert theory[-1] == "theoretical-analysis" and "new-method" not in theory


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            "Class incremental learning adds classes over time. Class incremental learning "
            "suffers when old data is gone, so class incremental learning needs replay.",
            "Class incremental",
        ),
        (
            "The basic operation units of the network are gated sums. Each basic operation "
            "unit is cheap, and basic operation units can be fused.",
            "basic operation",
        ),
        (
            "By generating synthetic images we help detectors; generating synthetic images "
            "is cheap and the selector learns to pick them, as the selector learns fast.",
            "selector learns",
        ),
    ],
)
def test_keywords_are_whole_noun_phrases(text: str, fragment: str, tax: Taxonomy) -> None:
    _tags, keywords = match_tags(text, tax)
    assert fragment.lower() not in [k.lower() for k in keywords]
    assert "generating synthetic" not in [k.lower() for k in keywords]


def test_context_rules_name_real_tags_and_synonyms(tax: Taxonomy) -> None:
    for tag_id, phrases in tag_rules.WEAK.items():
        names = {n.lower() for n in (tax.tags[tag_id].label, *tax.tags[tag_id].synonyms)}
        names |= {n.lower() for n in tag_rules.EXTRA_SYNONYMS.get(tag_id, ())}
        assert {p.lower() for p in phrases} <= names, tag_id
    assert set(tag_rules.EXTRA_SYNONYMS) <= set(tax.tags)
    assert set(tag_rules.CUES) <= set(tax.tags)
    assert set(tag_rules.FAMILY_SUFFIXES.values()) <= set(tax.tags)
    for (tag_id, phrase), other in tag_rules.FALLBACK.items():
        assert phrase in tag_rules.WEAK[tag_id] and other in tax.tags


def test_weak_language_model_falls_back_to_language_modelling(tax: Taxonomy) -> None:
    rnn = "We train an LSTM language model on Penn Treebank and lower its perplexity."
    assert "language-modeling" in match_tags(rnn, tax)[0]
    assert "large-language-models" not in match_tags(rnn, tax)[0]
    bert = "We probe a large pretrained language model (BERT) on syntax; the language model fails."
    assert "large-language-models" in match_tags(bert, tax)[0]


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        # British spellings fold onto the American ones the taxonomy lists
        (
            "We study over-parameterised networks and their optimisation landscape.",
            "deep-learning-theory",
        ),
        ("A novel regularisation technique for deep networks.", "regularization-objectives"),
        # a prefix written with a hyphen: overparameterized = over-parameterized
        (
            "We show that over-parameterized networks converge; over-parameterization helps.",
            "deep-learning-theory",
        ),
        (
            "Tuning hyper-parameter optimization for large models is costly.",
            "bayesian-optimization",
        ),
        # offline-only phrasings of a tag's concept (tag_rules.EXTRA_SYNONYMS)
        (
            "Neural networks are universal approximators; we prove depth helps them.",
            "deep-learning-theory",
        ),
        (
            "We propose a deep latent variable model of images and train it with a new prior.",
            "generative-modeling",
        ),
        (
            "We quantize gradients to 2 bits and show that quantizing them keeps accuracy.",
            "quantization",
        ),
        (
            "The agent learns a value function and a reward function from the action space.",
            "reinforcement-learning",
        ),
    ],
)
def test_spelling_variants_and_offline_synonyms(text: str, tag: str, tax: Taxonomy) -> None:
    assert tag in match_tags(text, tax)[0]


def test_offline_synonyms_are_not_taxonomy_phrases_of_another_tag(tax: Taxonomy) -> None:
    owner = {}
    for t in tax.tags.values():
        for phrase in (t.label, *t.synonyms):
            owner[phrase.lower()] = t.id
    for tag_id, phrases in tag_rules.EXTRA_SYNONYMS.items():
        for phrase in phrases:
            assert owner.get(phrase.lower(), tag_id) == tag_id, phrase


def test_neither_nor_mentions_are_negated(tax: Taxonomy) -> None:
    text = (
        "We study GAN training for word translation. Neither over-parameterization nor the batch "
        "size reduces instability of GAN-based alignment; GAN training stays unstable."
    )
    assert "deep-learning-theory" not in match_tags(text, tax)[0]


def test_a_bare_augmentation_needs_a_data_cue(tax: Taxonomy) -> None:
    graph = "We interleave grammar-driven expansion with graph augmentation and message passing."
    assert "data-augmentation" not in match_tags(graph, tax)[0]
    image = "A simple augmentation that adds noise to random patches improves invariance of classifiers."
    assert "data-augmentation" in match_tags(image, tax)[0]


def test_nets_is_short_for_networks(tax: Taxonomy) -> None:
    text = (
        "Generative adversarial nets are hard to train; we stabilise generative adversarial nets."
    )
    assert match_tags(text, tax)[0][0] == "generative-adversarial-networks"


def test_a_benchmark_or_backbone_named_once_is_context_not_topic(tax: Taxonomy) -> None:
    text = (
        "We propose a repulsive loss for MMD-GAN training and a bounded kernel for the "
        "discriminator. The GAN is trained on CIFAR-10 and CelebA and improves the FID of GANs."
    )
    assert "image-classification" not in match_tags(text, tax)[0]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (
            "We shed light on depth by proving that deep networks need fewer neurons.",
            "theoretical-analysis",
        ),
    ],
)
def test_proving_is_a_theory_cue(text: str, kind: str, tax: Taxonomy) -> None:
    assert kind in match_tags(text, tax)[0]


@pytest.mark.parametrize(
    "text",
    [
        "We derive a REINFORCE estimator with baseline and sample sequences without replacement.",
        "We focus on cases where linear maps provably exist and stabilise GAN-based alignment.",
    ],
)
def test_derive_or_provably_alone_is_not_a_theory_paper(text: str, tax: Taxonomy) -> None:
    assert "theoretical-analysis" not in match_tags(text, tax)[0]


def test_an_enumeration_of_many_tasks_is_not_the_topic(tax: Taxonomy) -> None:
    text = (
        "We propose NovoGrad, an adaptive stochastic gradient descent method with layer-wise "
        "normalization and decoupled weight decay. In experiments on image classification, speech "
        "recognition, machine translation and language modeling it matches SGD with momentum."
    )
    tags = match_tags(text, tax)[0]
    assert tags[0] == "optimization-algorithms"
    assert not {"speech-audio", "machine-translation", "image-classification"} & set(tags)


def test_fine_tuning_means_llm_fine_tuning_only_with_a_language_model_cue(tax: Taxonomy) -> None:
    cnn = "Network pruning is a three-stage pipeline: training, pruning and fine-tuning of the pruned CNN."
    assert "llm-fine-tuning" not in match_tags(cnn, tax)[0]
    bert = "We study fine-tuning of BERT; fine-tuning all layers of the language model is costly."
    assert "llm-fine-tuning" in match_tags(bert, tax)[0]


def test_sequential_tasks_and_polynomial_time_need_a_second_cue(tax: Taxonomy) -> None:
    rnn = "Unitary RNNs reach state-of-the-art results in a variety of sequential tasks."
    assert "continual-learning" not in match_tags(rnn, tax)[0]
    cl = (
        "We learn sequential tasks without catastrophic forgetting; sequential tasks share a model."
    )
    assert "continual-learning" in match_tags(cl, tax)[0]
    fast = "Our ranking of policies runs in polynomial time; polynomial time makes it scale."
    assert "complexity-theory" not in match_tags(fast, tax)[0]


def test_a_negator_reaches_over_filler_words(tax: Taxonomy) -> None:
    text = (
        "We navigate web pages with deep Q-learning and a graph neural network, matching prior "
        "work without the use of expert demonstrations."
    )
    assert "imitation-learning" not in match_tags(text, tax)[0]
    positive = text.replace("without the use of", "with the help of")
    assert "imitation-learning" in match_tags(positive + " Expert demonstrations help.", tax)[0]


@pytest.mark.parametrize(
    ("text", "tag", "not_tag"),
    [
        (
            "Variational auto-encoders (VAEs) learn latent variables; auto-encoders do not.",
            "variational-autoencoders",
            None,
        ),
        (
            "We fine-tune RoBERTa and ALBERT for reading comprehension; RoBERTa beats ALBERT.",
            "large-language-models",
            None,
        ),
        ("We train DQN and DDPG agents to maximise the reward.", "reinforcement-learning", None),
    ],
)
def test_hyphenated_and_named_model_families(
    text: str, tag: str, not_tag: str | None, tax: Taxonomy
) -> None:
    tags = match_tags(text, tax)[0]
    assert tag in tags and (not_tag is None or not_tag not in tags)


def test_every_offline_synonym_is_indexed_for_its_tag(tax: Taxonomy) -> None:
    from pipeline.offline.tags import _phrase_variants

    matcher = matcher_for(tax)
    for tag_id, phrases in tag_rules.EXTRA_SYNONYMS.items():
        for phrase in phrases:
            for sensitive, key in _phrase_variants(phrase):
                index = matcher.cs_index if sensitive else matcher.ci_index
                assert index.get(key) == tag_id, (phrase, key)


def test_no_empirical_study_beside_a_proposal_cue(tax: Taxonomy) -> None:
    study = (
        "We study the loss landscape of graph neural networks. We investigate how depth changes "
        "node classification accuracy on citation graphs."
    )
    assert "empirical-study" in match_tags(study, tax)[0]
    proposal = study + " We propose a new graph neural network that avoids the problem."
    assert "empirical-study" not in match_tags(proposal, tax)[0]


def test_a_tag_met_only_as_a_background_example_is_left_out(tax: Taxonomy) -> None:
    text = (
        "Deep networks excel at vision tasks such as object detection. We propose a pruning "
        "method for convolutional networks that removes redundant filters; pruning keeps accuracy."
    )
    tags = match_tags(text, tax)[0]
    assert "pruning" in tags and "object-detection" not in tags
    # the same mention is kept when it is not an example ...
    direct = text.replace("vision tasks such as object detection", "object detection")
    assert "object-detection" in match_tags(direct, tax)[0]
    # ... or when the abstract's own work mentions the tag again
    again = text + " On object detection the pruned networks stay accurate."
    assert "object-detection" in match_tags(again, tax)[0]


def test_an_example_word_in_the_previous_sentence_does_not_reach(tax: Taxonomy) -> None:
    text = (
        "Network pruning removes filters. Pruning is used in many vision models, such as this "
        "one. Object detection is hard. We propose a pruning method for convolutional networks."
    )
    tags = match_tags(text, tax)[0]
    assert tags[0] == "pruning" and "object-detection" in tags


def test_robustness_umbrella_is_left_out_beside_adversarial_robustness(tax: Taxonomy) -> None:
    text = (
        "Adversarial examples fool classifiers. We propose a certified defense against "
        "adversarial attacks with verifiable robustness guarantees; the robustness holds "
        "against PGD attacks."
    )
    tags = match_tags(text, tax)[0]
    assert "adversarial-robustness" in tags and "robustness" not in tags
    plain = "We measure the robustness of image classifiers to common corruptions and noise."
    assert "robustness" in match_tags(plain, tax)[0]


def test_contrastive_predictive_coding_is_contrastive_learning(tax: Taxonomy) -> None:
    text = "We revisit contrastive predictive coding for unsupervised image representations."
    tags = match_tags(text, tax)[0]
    assert "contrastive-learning" in tags and "neuroscience" not in tags


@pytest.mark.parametrize(
    "text",
    [
        "We train a deep latent model by maximising its variational lower bound on a speech corpus.",
        "Filters of a convolutional network are ranked with a game theoretical approach based on "
        "the Shapley value.",
    ],
)
def test_an_elbo_or_a_game_theoretical_method_is_not_a_theory_paper(
    text: str, tax: Taxonomy
) -> None:
    assert "theoretical-analysis" not in match_tags(text, tax)[0]
    assert "theoretical-analysis" in match_tags(text + " We prove a tight lower bound.", tax)[0]


@pytest.mark.parametrize(
    ("text", "tag", "backed"),
    [
        (
            "Q-learning converges in the tabular case; we extend it to deep Q-networks.",
            "tabular-data",
            "Gradient boosting still beats deep nets on tabular data.",
        ),
        (
            "Soft parameter sharing ties the layers of task-specific networks in multi-task models.",
            "equivariant-networks",
            "The layers respect the symmetry of the input.",
        ),
        (
            "We cluster documents with a topic model whose discrete latent variables are sampled.",
            "gradient-estimation",
            "A low-variance estimator of the gradient makes it trainable.",
        ),
        (
            "Our k-means variant is evaluated on synthetic datasets and on real customer records.",
            "synthetic-data",
            "A simulator produces the synthetic data.",
        ),
    ],
)
def test_ambiguous_phrases_need_a_cue(text: str, tag: str, backed: str, tax: Taxonomy) -> None:
    assert tag not in match_tags(text, tax)[0]
    assert tag in match_tags(f"{text} {backed}", tax)[0]


def test_depth_efficiency_is_theory_not_efficiency(tax: Taxonomy) -> None:
    text = (
        "Recurrent networks enjoy depth efficiency: a shallow network needs exponential width. "
        "We extend the depth efficiency result to rectified recurrent networks."
    )
    tags = match_tags(text, tax)[0]
    assert "deep-learning-theory" in tags and "efficiency" not in tags


def test_an_example_after_the_own_work_starts_is_not_a_topic(tax: Taxonomy) -> None:
    text = (
        "We propose a contrastive objective for video representations that helps downstream "
        "tasks such as action recognition and segmentation. The video encoder is pretrained "
        "on unlabelled clips."
    )
    assert "image-segmentation" not in match_tags(text, tax)[0]
    direct = text.replace("tasks such as action recognition and segmentation", "segmentation")
    assert "image-segmentation" in match_tags(direct, tax)[0]


def test_a_ranging_from_list_in_the_background_is_examples(tax: Taxonomy) -> None:
    text = (
        "Sensors serve applications from autonomous vehicles to smart homes. We propose a "
        "graph neural network that forecasts sensor time series; the graph neural network "
        "captures correlations between sensors."
    )
    assert "autonomous-driving" not in match_tags(text, tax)[0]


def test_offline_synonyms_for_cost_rank_and_search(tax: Taxonomy) -> None:
    cost = (
        "Training large networks needs substantial computational resources. Our checkpointing "
        "scheme cuts the memory usage of training by half at a small memory cost in recomputation."
    )
    assert "efficiency" in match_tags(cost, tax)[0]
    rank = "We recommend movies with trace norm regression that extracts low-rank user factors."
    assert "low-rank-methods" in match_tags(rank, tax)[0]
    mcts = "Our agent combines a learned value prior with Monte-Carlo Tree Search (MCTS) in Go."
    assert "planning-decision-making" in match_tags(mcts, tax)[0]


def test_a_compression_technique_beside_model_compression_needs_one_mention(
    tax: Taxonomy,
) -> None:
    text = (
        "Model compression makes networks fit on phones. We study model compression with "
        "provable error bounds and give a coreset algorithm that prunes neurons; model "
        "compression rates reach 90%. Its pruning keeps accuracy."
    )
    tags = match_tags(text, tax)[0]
    assert "model-compression" in tags and "pruning" in tags
    assert "quantization" not in tags


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        (
            "A fast weight memory lets the recurrent network store bindings.",
            "memory-augmented-networks",
        ),
        (
            "We meta-learn an update rule: learning to optimize with a learned optimizer.",
            "meta-learning",
        ),
        (
            "Noise contrastive estimation replaces the softmax of the video model.",
            "contrastive-learning",
        ),
        (
            "We propose a gated recurrent unit variant and stack recurrent layers.",
            "recurrent-networks",
        ),
        ("Spike sorting on multielectrode recordings assigns waveforms to cells.", "neuroscience"),
        ("We compare PDDL planners on automated planning benchmarks.", "planning-decision-making"),
        ("An EM algorithm fits the latent classes; the E-step is closed form.", "bayesian-methods"),
        ("Our graph generation model samples molecules atom by atom.", "graph-learning"),
        ("An attacker can steal a deployed classifier through model extraction.", "ai-safety"),
        ("Open-set recognition must reject inputs from unknown classes.", "anomaly-detection"),
        ("Reconstructing computed tomography scans from few projections.", "healthcare-medicine"),
        ("The generator improves the FID and the Inception Score on ImageNet.", "image-generation"),
        ("A high-level policy picks subgoals for a low-level policy.", "hierarchical-rl"),
        (
            "We propose a protocol for evaluating explanations of classifiers.",
            "evaluation-methodology",
        ),
        (
            "Value iteration solves the POMDP in the partially observable maze.",
            "reinforcement-learning",
        ),
        (
            "Mode collapse makes the samples of the generator identical.",
            "generative-adversarial-networks",
        ),
        (
            "Posterior collapse leaves the latent code unused by the decoder.",
            "variational-autoencoders",
        ),
        ("The acoustic front end reads a mel spectrogram and predicts phonemes.", "speech-audio"),
        ("Learning from mislabeled examples and corrupted labels.", "label-noise"),
        (
            "Unpaired image-to-image mapping keeps the content of each photo.",
            "style-transfer",
        ),
        (
            "An explainable model of the classifier's decisions for loan officers.",
            "interpretability",
        ),
        ("A transformer that generates music one note at a time.", "speech-audio"),
    ],
)
def test_offline_synonyms_of_missed_concepts(text: str, tag: str, tax: Taxonomy) -> None:
    assert tag in match_tags(text, tax)[0]


def test_a_mixture_model_is_bayesian_only_with_a_probabilistic_cue(tax: Taxonomy) -> None:
    text = "Sample weights come from a mixture model of the per-example losses of the classifier."
    assert "bayesian-methods" not in match_tags(text, tax)[0]
    backed = text + " We infer the posterior of each example's component."
    assert "bayesian-methods" in match_tags(backed, tax)[0]


def test_graph_cnns_and_neural_probes_are_not_their_homonyms(tax: Taxonomy) -> None:
    graph = (
        "A spectral graph CNN classifies nodes; the graph convolutional neural network is shallow."
    )
    tags = match_tags(graph, tax)[0]
    assert "graph-neural-networks" in tags and "convolutional-networks" not in tags
    probes = "Silicon probes and multielectrode probes record spikes from hundreds of neurons."
    assert "probing" not in match_tags(probes, tax)[0]


def test_compression_needs_a_model_size_cue_not_any_parameter(tax: Taxonomy) -> None:
    gradients = (
        "Gradient compression cuts the communication of distributed SGD; the step size "
        "parameter is tuned per worker and compression keeps convergence."
    )
    assert "model-compression" not in match_tags(gradients, tax)[0]
    model = "Compression of the network reduces its number of parameters tenfold."
    assert "model-compression" in match_tags(model, tax)[0]


def test_adversarial_imitation_is_imitation_learning_not_a_gan(tax: Taxonomy) -> None:
    text = "Generative adversarial imitation learning (GAIL) recovers the expert's policy."
    tags = match_tags(text, tax)[0]
    assert "imitation-learning" in tags and "generative-adversarial-networks" not in tags


def test_mobile_devices_mean_efficiency_only_with_a_compute_cue(tax: Taxonomy) -> None:
    touch = "Touch input on mobile devices is limited; we add buttons to a smartphone case."
    assert "efficiency" not in match_tags(touch, tax)[0]
    fast = "Our network runs on mobile devices: its inference latency drops by half."
    assert "efficiency" in match_tags(fast, tax)[0]
