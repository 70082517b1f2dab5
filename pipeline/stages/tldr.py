"""Stage `tldr`: one grounded sentence with the paper's contribution."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from pipeline.errors import OutputValidationError
from pipeline.schemas import GroundingError, context_abstract, context_taxonomy
from pipeline.stages.base import Shaped, StageSpec
from pipeline.support.names import unsupported_names
from pipeline.support.numbers import foreign_number_words, foreign_numbers, ungrounded_quantities
from pipeline.support.tags import unsupported_topics
from pipeline.support.words import abstract_index
from pipeline.taxonomy import Taxonomy
from pipeline.text import (
    NUMBER_RE,
    abstract_numbers,
    normalize_ws,
    split_sentences,
)

TLDR_MAX_WORDS = 35
_DIGIT = re.compile(r"\d|[\u00b2\u00b3\u00b9\u2070-\u2079\u2080-\u2089\uff10-\uff19]")
# What models put before the sentence itself: "TL;DR:", "TLDR -", "Summary:".
_PREFIX = re.compile(r"^\s*\**\s*(?:tl\s*;?\s*dr|summary)\s*\**\s*[:\-\u2013\u2014]\s*\**\s*", re.I)
_KEY_ALIASES = frozenset({"tldr", "summary", "tl dr"})
# 35 words rarely pass 300 characters (the offline extractor caps itself at 320); the limit
# stops one giant "word" (a 10 MB token) that the word count cannot see.
TLDR_MAX_CHARS = 400


class TldrOutput(BaseModel):
    """One sentence stating the paper's contribution."""

    model_config = ConfigDict(extra="forbid")
    tldr: str = Field(description="One sentence (<= 35 words) stating the paper's contribution.")

    @field_validator("tldr")
    @classmethod
    def _one_grounded_sentence(cls, value: str, info: ValidationInfo) -> str:
        value = normalize_ws(value)
        if not value:
            raise ValueError("tldr is empty")
        if len(value) > TLDR_MAX_CHARS:
            # A number copied from the abstract is bounded by the abstract: it does not count
            # (an abstract that is one 5000-digit number still gets its TL;DR).
            known = abstract_numbers(context_abstract(info) or "")
            copied = sum(
                len(m.group(0))
                for m in NUMBER_RE.finditer(value)
                if m.group(0).replace(",", "") in known
            )
            if len(value) - copied > TLDR_MAX_CHARS:
                raise ValueError(
                    f"tldr has {len(value)} characters; at most {TLDR_MAX_CHARS} allowed"
                )
        words = value.split()
        if len(words) > TLDR_MAX_WORDS:
            raise ValueError(f"tldr has {len(words)} words; at most {TLDR_MAX_WORDS} allowed")
        abstract = context_abstract(info)
        if _sentence_count(value, abstract or "") != 1:
            raise ValueError("tldr must be exactly one sentence")
        if abstract is None:
            return value
        if _DIGIT.search(value) and foreign_numbers(value, abstract_numbers(abstract)):
            # the cheap set first; the tokenized one also has numbers glued to words
            foreign = foreign_numbers(value, abstract_index(abstract).numbers)
            if foreign:
                raise GroundingError(
                    f"tldr contains numbers not in the abstract: {', '.join(foreign)}"
                )
        if _DIGIT.search(value) and (foreign := ungrounded_quantities(value, abstract)):
            raise GroundingError(
                f"tldr contains numbers the abstract does not state: {', '.join(foreign)}"
            )
        if words := foreign_number_words(value, abstract):
            raise GroundingError(
                f"tldr contains counts the abstract does not state: {', '.join(words)}"
            )
        if unknown := unsupported_names(value, abstract):
            names = ", ".join(repr(n) for n in unknown)
            raise GroundingError(f"tldr names what the abstract does not: {names}")
        taxonomy = context_taxonomy(info)
        if taxonomy is not None and (topics := unsupported_topics(value, abstract, taxonomy)):
            names = ", ".join(repr(t) for t in topics)
            raise GroundingError(f"tldr names a topic the abstract does not: {names}")
        return value


def _sentence_count(value: str, abstract: str) -> int:
    """Sentences of `value`; the "!" of a name the abstract writes ends none ("on Yahoo! Front
    Page data" where the abstract has "Yahoo! Front Page")."""
    sentences = split_sentences(value)
    return 1 + sum(
        not (before.endswith("!") and f"{before.split()[-1]} {after.split()[0]}" in abstract)
        for before, after in zip(sentences, sentences[1:], strict=False)
    )


def repair(data: Any, taxonomy: Taxonomy) -> Shaped:
    """A bare string, a single key other than `tldr` ("TL;DR", "summary") and a leading
    "TL;DR:" are shape, not content."""
    repairs: list[str] = []
    if isinstance(data, str):
        data, repairs = {"tldr": data}, ["bare_string"]
    if not isinstance(data, dict):
        raise OutputValidationError("answer must be a JSON object", kind="schema", raw=None)
    if "tldr" not in data and len(data) == 1:
        (key,) = data
        if " ".join(re.findall(r"[a-z]+", str(key).lower())) in _KEY_ALIASES:
            data = {"tldr": data[key]}
            repairs.append("key_renamed")
    value = data.get("tldr")
    if isinstance(value, str) and _PREFIX.match(value):
        data = {**data, "tldr": _PREFIX.sub("", value, count=1)}
        repairs.append("tldr_prefix")
    return Shaped(data, repairs)


def offline(abstract: str, taxonomy: Taxonomy) -> dict[str, Any]:
    """The built-in extractor's TL;DR."""
    from pipeline.offline.tldr import extract_tldr

    return {"tldr": extract_tldr(abstract)}


def csv(output: Mapping[str, Any] | None) -> dict[str, Any]:
    """summaries.csv: the sentence."""
    return {"tldr": (output or {}).get("tldr", "")}


STAGE = StageSpec(
    name="tldr",
    order=10,
    schema=TldrOutput,
    offline=offline,
    csv_columns=("tldr",),
    csv=csv,
    repair=repair,
    plain_text="tldr",
    example={
        "tldr": "A sparse attention layer that halves inference cost of long-document transformers while matching their accuracy on three summarization benchmarks."
    },
    output_tokens=50,
)
