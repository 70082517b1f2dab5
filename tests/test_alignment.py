"""Near-verbatim evidence is located within a documented bound (issue 20.4): numbers match
exactly, the stored evidence is the abstract's own span, and fabricated quotes fail."""

from __future__ import annotations

import pytest

from pipeline.alignment import align, is_variant
from pipeline.spans import locate
from pipeline.testing import quote_mutations

ABSTRACT = (
    "We evaluate on three benchmarks. Our method improves accuracy by 2.1%, 3.4% and 4.0% on "
    "MNIST, CIFAR100 and SVHN respectively, and results were state-of-the art. The error "
    "drops from 1.2% to 0.6%1to in classifi- cation tasks. Our approach does not outperform "
    "the baselines on ImageNet. The proposed models were trained with a novel objective that "
    "is better than A but worse than B. ACE is even applicable to large-scale datasets "
    "(no labels and no tuning), which is cheaper than prior methods. Comparable metrics are "
    "not necessarily robust to these confounders. The learnt vectors improve over counts."
)

# (the quote as a model writes it, the abstract's span that is stored)
LOCATED = [
    ("results was state-of-the-art", "results were state-of-the art"),  # was/were, hyphens
    (
        "Our method improves accuracy by 3.4% on CIFAR-100",  # one item of a list sentence
        "Our method improves accuracy by 2.1%, 3.4% and 4.0% on MNIST, CIFAR100",
    ),
    (
        "The error drops from 1.2% to 0.6% to in classification tasks",  # PDF artifacts
        "The error drops from 1.2% to 0.6%1to in classifi- cation tasks",
    ),
    (
        "The proposed model was trained with a novel objective",
        "The proposed models were trained with a novel objective",
    ),
    (
        "The proposed models were trained ... that is better than A",  # an elision
        "The proposed models were trained with a novel objective that is better than A",
    ),
    ("ACE is applicable to large-scale datasets", "ACE is even applicable to large-scale datasets"),
    ("The learned vectors improve over counts", "The learnt vectors improve over counts"),  # en-GB
    (
        "ACE is even applicable ... which is cheaper than prior methods",  # elided aside
        "ACE is even applicable to large-scale datasets (no labels and no tuning), which is "
        "cheaper than prior methods",
    ),
]
REJECTED = [
    "Our approach does outperform the baselines on ImageNet",  # a negation dropped
    "Our approach does not underperform the baselines on ImageNet",  # an antonym
    "a novel objective that is better than B",  # a contrast skipped as if it were a list
    "Our method improves accuracy by 3.5% on CIFAR100",  # a number changed
    "Our method degrades accuracy by 3.4% on CIFAR100",  # a word changed
    "Our approach does ... outperform the baselines",  # a negation elided
    "The error drops from 1.2% to 0.6% in detection tasks",  # a word changed next to an artifact
    "ACE is applicable to small datasets",  # the quote's own words, changed
    "error drops",  # too short for any tolerance
    "Comparable metrics are not robust to these confounders",  # a hedge left out
]


@pytest.mark.parametrize(("quote", "stored"), LOCATED)
def test_near_verbatim_quotes_are_located_as_the_abstracts_own_span(quote, stored):
    span = locate(ABSTRACT, quote)
    assert span is not None, quote
    assert ABSTRACT[span[0] : span[1]] == stored


@pytest.mark.parametrize("quote", REJECTED)
def test_changed_quotes_are_not_located(quote):
    assert align(ABSTRACT, quote) is None


def test_word_variants_are_forms_of_one_word_never_opposites_or_numbers():
    for a, b in [("was", "were"), ("models", "model"), ("proposed", "propose"),
                 ("utilise", "utilize"), ("behaviour", "behavior"), ("improves", "improved")]:  # fmt: skip
        assert is_variant(a, b), (a, b)
    for a, b in [("while", "which"), ("better", "worse"), ("outperforms", "underperforms"),
                 ("higher", "lower"), ("12", "13"), ("accuracy", "precision"), ("can", "cannot")]:  # fmt: skip
        assert not is_variant(a, b), (a, b)


def test_no_changed_quote_of_the_shipped_claims_is_let_through():
    """pipeline.testing.quote_mutations on every 7th shipped evidence span (the bench runs them all): a digit,
    an antonym, a negation or a content word changed is never accepted by the bound."""
    tried = through = 0
    for k, (abstract, evidence) in enumerate(quote_mutations.evidence_spans()):
        if k % 7:
            continue
        for _operator, quote in quote_mutations.mutations(abstract, evidence):
            if quote != evidence:
                tried += 1
                through += quote_mutations.let_through(abstract, quote)
    assert tried > 1000 and through == 0


CORRELATIVE = (
    "Our framework can produce better accuracy using less inference time than not only a "
    "single large multi-task neural network but also many single-task networks. The results "
    "demonstrate the effectiveness of STL for realistic lifelong and few-shot learning "
    "settings. We apply the algorithms into training neural network with batch normalization."
)


@pytest.mark.parametrize(
    ("quote", "stored_start", "stored_end"),
    [
        # all of "not only X but also" left out, or only its "not only"
        ("can produce better accuracy using less inference time than many single-task networks",
         "can produce", "many single-task networks"),
        ("better accuracy using less inference time than a single large multi-task neural network",
         "better accuracy", "multi-task neural network"),
        # a list item whose polarity word is half of a hyphenated compound ("few-shot")
        ("demonstrate the effectiveness of STL for realistic lifelong learning settings",
         "demonstrate", "learning settings"),
        # a preposition of the same sense, and a plural
        ("We apply the algorithms to training neural networks with batch normalization",
         "We apply", "batch normalization"),
    ],
)  # fmt: skip
def test_correlatives_compounds_and_prepositions_are_tolerated(quote, stored_start, stored_end):
    _assert_stored(CORRELATIVE, quote, stored_start, stored_end)


def _assert_stored(text: str, quote: str, stored_start: str, stored_end: str) -> None:
    """`quote` is located in `text`, and the span stored runs from `stored_start` to
    `stored_end`."""
    span = align(text, quote)
    assert span is not None, quote
    stored = text[span[0] : span[1]]
    assert stored.startswith(stored_start) and stored.endswith(stored_end), stored


@pytest.mark.parametrize(
    "quote",
    [
        # "not" alone left out of the correlative: "only" would be a new claim
        "better accuracy using less inference time than only a single large multi-task network",
        # a list item holding a free-standing polarity word is never skipped
        "demonstrate the effectiveness of STL for lifelong learning with fewer settings",
        # "into" is no variant of "from"
        "We apply the algorithms from training neural network with batch normalization",
    ],
)
def test_the_new_tolerances_do_not_reach_further(quote):
    assert align(CORRELATIVE, quote) is None


TYPOS = (
    "We show that are able to match the performance of SAC on MINST. The applied rotations "
    "remain correlated in near-linear time as we analyze the geometrically properties of "
    "spheres. Our method outperforms baselines on both real-word and synthetic data, in "
    "situations were labels are scarce. MixUp asymptotically convergences to a subset of DAT. "
    "SpectralNet. "
    "State-of-the-art clustering results are reported for the Reuters datasets."
)


@pytest.mark.parametrize(
    ("quote", "stored_start", "stored_end"),
    [
        # a function word added to mend the grammar; two letters swapped back
        ("We show that we are able to match the performance of SAC on MNIST",
         "We show", "on MINST"),
        # another ending of one stem
        ("rotations remain correlated in near-linear time as we analyze the geometric "
         "properties of spheres",
         "rotations", "of spheres"),
        ("MixUp asymptotically converges to a subset of DAT", "MixUp", "of DAT"),
        # a letter missing inside a short word
        ("outperforms baselines on both real-world and synthetic data, in situations where "
         "labels are scarce", "outperforms", "are scarce"),
    ],
)  # fmt: skip
def test_typos_endings_and_a_mended_grammar_word_are_tolerated(quote, stored_start, stored_end):
    _assert_stored(TYPOS, quote, stored_start, stored_end)


@pytest.mark.parametrize(
    "quote",
    [
        # a name is no ending of a word: "Spectral" does not stand for "SpectralNet. State"
        "Spectral-of-the-art clustering results are reported for the Reuters datasets",
        # a polarity word is never added
        "We show that are not able to match the performance of SAC on MINST",
        # two added words are beyond the bound
        "We show that we are able to match to the performance of it SAC on MINST",
        # the first half of a hyphenated qualifier is never left out: "near-linear" is no
        # "linear"
        "rotations remain correlated in linear time as we analyze",
    ],
)
def test_typo_tolerance_does_not_reach_further(quote):
    assert align(TYPOS, quote) is None


GLUED = (
    "Prediction is key to traffic management and has high accuracy. Experimental results in "
    "real-world datasets demonstrate the robustness of A3T-GCN. The proposed LDGCNN achieves "
    "stateofart performance on two standard datasets and was found computationally lesser "
    "expensive, with estimates which are as good or better than Bayesian NNs."
)


@pytest.mark.parametrize(
    ("quote", "stored_start", "stored_end"),
    [
        # words a PDF glued into one, quoted apart
        ("LDGCNN achieves state-of-art performance on two standard datasets", "LDGCNN", "datasets"),
        # "less" for "lesser", "as good as or better" for "as good or better"
        ("was found computationally less expensive", "was found", "expensive"),
        ("estimates which are as good as or better than Bayesian NNs", "estimates", "NNs"),
    ],
)  # fmt: skip
def test_glued_words_lesser_and_a_mended_comparison_are_tolerated(quote, stored_start, stored_end):
    _assert_stored(GLUED, quote, stored_start, stored_end)


@pytest.mark.parametrize(
    "quote",
    [
        # a changed first word may not leave out the next: "Accurate results" is no
        # "accuracy. Experimental results"
        "Accurate results in real-world datasets demonstrate the robustness of A3T-GCN",
        # glued words are joined whole, never with an added one
        "LDGCNN achieves state-of-the-art performance on two standard datasets",
        # "more" is no form of "lesser"
        "was found computationally more expensive",
    ],
)
def test_glue_and_left_out_words_do_not_reach_further(quote):
    assert align(GLUED, quote) is None


def test_typos_and_endings_are_variants_only_inside_a_word():
    for a, b in [("mnist", "minst"), ("where", "were"), ("world", "word"),
                 ("geometric", "geometrically"), ("scalably", "scalability"),
                 ("biases", "bias"), ("on", "in"), ("whilst", "while")]:  # fmt: skip
        assert is_variant(a, b), (a, b)
    # a letter added at either end changes the word ("typical"/"atypical", "late"/"later");
    # an ending that is no suffix names something else ("generative"/"generator")
    for a, b in [("typical", "atypical"), ("late", "later"), ("generative", "generator"),
                 ("spectral", "spectralnet"), ("form", "from")]:  # fmt: skip
        assert not is_variant(a, b), (a, b)


def test_citation_markers_may_be_left_out_never_a_changed_number():
    abstract = (
        "Our architecture is trained and evaluated on UCF-101[1], HMDB-51[2] and Charades [3] "
        "dataset, where it is competitive with the state of the art."
    )
    quote = "trained and evaluated on UCF-101, HMDB-51 and Charades dataset"
    span = align(abstract, quote)
    assert span is not None
    assert abstract[span[0] : span[1]] == (
        "trained and evaluated on UCF-101[1], HMDB-51[2] and Charades [3] dataset"
    )
    assert align(abstract, quote.replace("UCF-101", "UCF-102")) is None
