"""The learned tag selection (pipeline/testing/tag_selection.py, bench.train_tags): candidate
features, the logistic fit and the threshold selection."""

from __future__ import annotations

import pytest
from samples import TAXONOMY_PATH

from pipeline.offline.tags import matcher_for
from pipeline.taxonomy import load_taxonomy

np = pytest.importorskip("numpy")
tag_selection = pytest.importorskip("pipeline.testing.tag_selection")

ABSTRACT = (
    "Graph neural networks learn from molecules. Many tasks such as image classification "
    "need labels. We propose a graph neural network that needs few labels. Experiments on "
    "molecules show that the graph neural network is accurate."
)


@pytest.fixture(scope="module")
def matcher():
    return matcher_for(load_taxonomy(TAXONOMY_PATH))


def test_features_of_written_sentences(matcher):
    cands, rules = tag_selection.candidates(ABSTRACT, matcher)
    features = dict(cands)
    gnn, classification = features["graph-neural-networks"], features["image-classification"]
    assert [t for t, _f in cands][0] == "graph-neural-networks"  # best score first
    assert gnn["top"] == 1.0 and gnn["relative"] == 1.0 and gnn["rule_first"] == 1.0
    assert gnn["first_sent"] == gnn["own_work"] == gnn["last_sent"] == 1.0
    assert gnn["count"] == pytest.approx(np.log1p(3)) and gnn["long_phrase"] == 1.0
    assert classification["example_all"] == 1.0 and classification["own_work"] == 0.0
    assert classification["relative"] < 1.0 and classification["broad"] == pytest.approx(0.4)
    assert gnn["facet_method"] == 1.0 and "facet_method" not in classification
    assert set(rules) >= {"graph-neural-networks"}


def test_fit_is_deterministic_and_follows_the_labels():
    x = np.array([[0.0, 1.0], [1.0, 0.0], [0.2, 1.0], [0.9, 0.0], [0.5, 1.0], [0.4, 0.0]])
    y = np.array([0.0, 1.0, 0.0, 1.0, 0.5, 0.5])
    first, again = tag_selection.fit(x, y, 1.0), tag_selection.fit(x, y, 1.0)
    assert first[0].tolist() == again[0].tolist() and first[1] == again[1]
    assert first[0][0] > 0 > first[0][1]  # the first column goes with the labels


def test_selection_picks_and_omits_as_the_probabilities_say():
    row = {"cands": [("a", {}), ("b", {}), ("c", {})], "kinds": ["theoretical-analysis"]}
    assert tag_selection.select(row, [0.2, 0.9, 0.5], 0.4) == ["b", "c", "theoretical-analysis"]
    assert tag_selection.select(row, [0.2, 0.3, 0.1], 0.4) == ["b", "theoretical-analysis"]
    assert tag_selection.select(row, [0.9, 0.8, 0.7], 0.1)[:3] == ["a", "b", "c"]


def test_coverage_counts_required_topical_tags_found_as_candidates(matcher):
    cands, _rules = tag_selection.candidates(ABSTRACT, matcher)
    gold = {"tags": ["graph-neural-networks", "semi-supervised-learning", "empirical-study"]}
    found, total = tag_selection.coverage([{"gold": gold, "cands": cands}], matcher.taxonomy)
    assert (found, total) == (1, 2)  # the contribution type is not a candidate's to find
