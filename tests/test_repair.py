"""Repair before re-ask (issue 20.3): every format loss small models make is undone
deterministically, named in the answer's repairs, and never changes a word or a number."""

from __future__ import annotations

import json

import pytest

from pipeline.errors import OutputValidationError
from pipeline.repair import MAX_DEPTH, decode_answer

ABSTRACT = (
    "We study adversarial examples for reading comprehension with activation functions "
    "and propose Zip, a sparse attention layer. Zip cuts inference latency by 41% on "
    "LongBench and reaches 84.2% accuracy on SQuAD ($\\alpha \\rightarrow 0$)."
)
CLAIM = {
    "statement": "Zip cuts inference latency by 41%.",
    "kind": "quantitative",
    "metric": "inference latency",
    "value": "41",
    "unit": "%",
    "dataset": "LongBench",
    "comparison": None,
    "evidence": "Zip cuts inference latency by 41% on LongBench",
}


@pytest.mark.parametrize(
    ("raw", "repairs"),
    [
        ('```json\n{"a": "b"}\n```', ["code_fence"]),
        ('Here is the JSON object:\n{"a": "b"}\nNote: I kept it short.', ["prose_around"]),
        ('```json\n{"a": "b"}\n``` Hope this helps!', ["code_fence", "prose_around"]),
        ('{"a": "b",}', ["trailing_comma"]),
        ('{"a": ["b", "c",],}', ["trailing_comma"]),
        ("{'a': 'b'}", ["json_repair"]),
        ('{"a": "b"} {"a": "c"}', ["prose_around"]),
    ],
)
def test_json_level_repairs_are_named(raw, repairs):
    decoded = decode_answer(raw)
    assert decoded.data in ({"a": "b"}, {"a": ["b", "c"]})
    assert decoded.repairs == repairs


def test_latex_backslashes_stay_what_the_model_wrote():
    # \\alpha is an invalid escape; \\rightarrow and \\times are valid ones (\\r, \\t) that
    # would turn into a carriage return and a tab: both are LaTeX.
    raw = '{"t": "$\\alpha \\rightarrow 0$, 3\\times faster, 5\\% and a real\\nnewline"}'
    decoded = decode_answer(raw)
    assert (
        decoded.data["t"] == "$\\alpha \\rightarrow 0$, 3\\times faster, 5\\% and a real\nnewline"
    )
    assert decoded.repairs == ["latex_backslash"]


def test_sized_delimiters_and_text_commands_are_latex_too():
    # \\big( reads as a backspace + "ig(" and \\textit as a tab + "extit" in JSON.
    raw = '{"t": "$O\\big( 1/T \\big)$ for the \\textit{first} time, \\tanh"}'
    decoded = decode_answer(raw)
    assert decoded.data["t"] == "$O\\big( 1/T \\big)$ for the \\textit{first} time, \\tanh"
    assert decoded.repairs == ["latex_backslash"]


def test_a_comma_inside_a_string_is_content_not_a_trailing_comma():
    decoded = decode_answer('{"a": "x, }", "b": "y",}')
    assert decoded.data == {"a": "x, }", "b": "y"} and decoded.repairs == ["trailing_comma"]


def test_json_repair_is_kept_only_when_no_word_changes():
    # A missing comma between two members: the library adds one, no word changes.
    assert decode_answer('{"a": "b" "c": "d"}').data == {"a": "b", "c": "d"}
    # A cut-off answer is never completed: that would invent its end.
    with pytest.raises(OutputValidationError) as info:
        decode_answer('{"claims": [{"a": "b"}, {"a": "c"}')
    assert info.value.kind == "invalid_json"


def test_lone_surrogates_deep_nesting_and_runaway_answers_fail_or_are_replaced():
    decoded = decode_answer('{"tldr": "ok \\ud83d here"}')
    assert decoded.data == {"tldr": "ok \ufffd here"} and decoded.repairs == ["lone_surrogate"]
    decoded.data["tldr"].encode("utf-8")  # writable
    for raw in (
        '{"tldr": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}",
        '{"tldr": ' + "[" * 100_000,
        '{"tldr": "' + "x" * 200_000 + '"}',
    ):
        with pytest.raises(OutputValidationError) as info:
            decode_answer(raw)
        assert info.value.kind == "invalid_json" and len(info.value.raw or "") <= 2000


def test_claims_shape_repairs(stages):
    extra = {**CLAIM, "kind": "Quantitative", "confidence": "high", "explanation": "see text"}
    raw = "Here are the extracted claims:\n```json\n" + json.dumps([extra]) + "\n```"
    parsed = stages["claims"].accept(raw, ABSTRACT)
    (claim,) = parsed.output["claims"]
    assert claim["kind"] == "quantitative" and claim["value"] == "41"
    assert set(parsed.repairs) == {
        "prose_around",
        "code_fence",
        "bare_list",
        "extra_keys",
        "kind_case",
    }


def test_a_quantitative_claim_without_a_number_becomes_qualitative(stages):
    vague = {
        **CLAIM,
        "value": "twice",
        "statement": "Zip is fast.",
        "evidence": "Zip cuts inference latency",
    }
    parsed = stages["claims"].accept(json.dumps({"claims": [vague]}), ABSTRACT, keep_none=True)
    assert parsed.rejected and "does not occur in its evidence" in str(parsed.rejected[0].error)
    vague["value"] = None
    parsed = stages["claims"].accept(json.dumps({"claims": [vague]}), ABSTRACT)
    assert parsed.output["claims"][0]["kind"] == "qualitative"
    assert "kind_without_value" in parsed.repairs


def test_tags_keep_valid_ids_after_label_plural_and_case_resolution(stages):
    raw = json.dumps(
        {
            "tags": ["Adversarial Examples", "activation-functions", "Reading Comprehension",
                     "quantum-gravity", "TRANSFORMERS", "efficient_attention", "new-method"],
            "keywords": None,
        }
    )  # fmt: skip
    parsed = stages["tags"].accept(raw, ABSTRACT)
    tags = parsed.output["tags"]
    assert "quantum-gravity" not in tags and len(tags) <= 6
    assert {"question-answering", "efficient-attention"} <= set(
        tags
    ) or "adversarial-robustness" in tags
    assert parsed.output["keywords"] == []
    assert {"tag_resolved", "keywords_null"} <= set(parsed.repairs)
    (unknown,) = [d for d in parsed.dropped if d.item == "quantum-gravity"]
    assert unknown.field == "tags" and unknown.error.kind == "ungrounded"


def test_tags_answer_is_rejected_only_when_no_valid_id_is_left(stages):
    with pytest.raises(OutputValidationError, match="not in the taxonomy") as info:
        stages["tags"].accept('{"tags": ["quantum-gravity", "string-theory"]}', ABSTRACT)
    assert info.value.kind == "ungrounded"


def test_tags_and_keywords_beyond_the_limits_are_cut_with_a_note(stages):
    raw = json.dumps(
        {
            "tags": ["transformers", "efficient-attention", "question-answering",
                     "adversarial-robustness", "new-method", "empirical-study", "efficiency"],
            "keywords": ["Zip", "LongBench", "SQuAD", "sparse attention layer",
                         "inference latency", "accuracy"],
        }
    )  # fmt: skip
    parsed = stages["tags"].accept(raw, ABSTRACT)
    assert len(parsed.output["tags"]) <= 6 and len(parsed.output["keywords"]) == 5
    assert "keywords_cut" in parsed.repairs


@pytest.mark.parametrize(
    "raw",
    [
        '{"tldr": "TL;DR: Zip, a sparse attention layer, cuts inference latency by 41%."}',
        '{"TL;DR": "Zip, a sparse attention layer, cuts inference latency by 41%."}',
        "TL;DR: Zip, a sparse attention layer, cuts inference latency by 41%.",
        '```\n{"tldr": "**TL;DR:** Zip, a sparse attention layer, cuts inference latency by 41%."}\n```',
    ],
)
def test_a_tldr_prefix_key_or_plain_text_is_shape_not_content(stages, raw):
    parsed = stages["tldr"].accept(raw, ABSTRACT)
    assert parsed.output["tldr"] == "Zip, a sparse attention layer, cuts inference latency by 41%."
    assert parsed.repairs


def test_plain_text_that_does_not_say_it_is_a_tldr_is_not_one(stages):
    with pytest.raises(OutputValidationError) as info:
        stages["tldr"].accept("I cannot summarize this abstract.", ABSTRACT)
    assert info.value.kind == "invalid_json"


def test_plain_prose_in_the_abstracts_words_is_a_tldr_written_plainly(stages):
    parsed = stages["tldr"].accept(
        "Zip, a sparse attention layer, cuts inference latency on LongBench.", ABSTRACT
    )
    assert (
        parsed.output["tldr"]
        == "Zip, a sparse attention layer, cuts inference latency on LongBench."
    )
    assert "plain_text" in parsed.repairs


@pytest.mark.parametrize(
    "raw",
    [
        "Sorry, this abstract is too short for a summary.",
        "A new optimizer for vision transformers beats momentum baselines on ImageNet.",
        'Zip, a sparse attention layer {"tldr": cuts inference latency on LongBench.',
    ],
)
def test_plain_prose_that_is_a_refusal_foreign_or_broken_json_is_not_a_tldr(stages, raw):
    with pytest.raises(OutputValidationError) as info:
        stages["tldr"].accept(raw, ABSTRACT)
    assert info.value.kind == "invalid_json"
