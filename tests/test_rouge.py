"""ROUGE metric code on tiny cases whose scores are worked out by hand."""

from __future__ import annotations

import pytest

from pipeline.evaluation.rouge import lead1, oracle_sentence, pair_f1, score_rouge

PRED = "the cat sat on the mat"
REF = "the cat is on the mat"


def test_pair_f1_matches_hand_count():
    # Unigrams: 5 of 6 shared (the x2, cat, on, mat) -> P = R = F = 5/6.
    # Bigrams: "the cat", "on the", "the mat" shared, 3 of 5 -> F = 0.6.
    # LCS: "the cat on the mat" = 5 tokens -> F = 5/6.
    scores = pair_f1(PRED, REF)
    assert scores["rouge1"] == pytest.approx(5 / 6)
    assert scores["rouge2"] == pytest.approx(0.6)
    assert scores["rougeL"] == pytest.approx(5 / 6)


def test_unequal_lengths_use_f1_not_recall():
    # 2 shared of 2 predicted and 4 referenced: P = 1, R = 0.5, F1 = 2/3.
    assert pair_f1("cat mat", "the cat the mat")["rouge1"] == pytest.approx(2 / 3)


def test_stemming_is_on():
    assert pair_f1("models running", "model runs")["rouge1"] == pytest.approx(1.0)


def test_best_and_mean_protocols_differ_with_an_unrelated_reference():
    result = score_rouge([PRED], [[REF, "dogs bark loudly"]])
    assert result["n"] == 1
    assert result["best"]["rouge1"] == pytest.approx(100 * 5 / 6)
    assert result["mean"]["rouge1"] == pytest.approx(100 * 5 / 12)
    assert result["best"]["rouge2"] == pytest.approx(60.0)
    assert result["mean"]["rouge2"] == pytest.approx(30.0)


def test_corpus_score_is_the_mean_over_papers():
    result = score_rouge([PRED, "nothing shared here"], [[REF], ["the cat is on the mat"]])
    assert result["best"]["rouge1"] == pytest.approx(100 * 5 / 6 / 2)


def test_empty_prediction_scores_zero():
    result = score_rouge([""], [[REF]])
    assert result["best"] == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}


def test_mismatched_inputs_are_rejected():
    with pytest.raises(ValueError):
        score_rouge([PRED], [])
    with pytest.raises(ValueError):
        score_rouge([PRED], [[]])


def test_lead1_skips_blank_sentences():
    assert lead1(["  ", "First real sentence.", "Second."]) == "First real sentence."
    assert lead1([]) == ""


def test_oracle_picks_the_sentence_closest_to_any_reference():
    sentences = [
        "Deep learning is popular.",
        "We propose a sparse attention method for long documents.",
        "Experiments use three datasets.",
    ]
    refs = ["A sparse attention method for long documents.", "Something about datasets only."]
    assert oracle_sentence(sentences, refs) == sentences[1]


def test_oracle_breaks_ties_towards_the_earlier_sentence():
    assert oracle_sentence(["alpha beta", "beta alpha"], ["alpha beta"]) == "alpha beta"
    assert oracle_sentence(["gamma", "delta"], ["zeta"]) == "gamma"
