"""Stage `claims`: claimed results, each tied to a verbatim evidence span of the abstract.

What counts as a claimed result is written once, in prompts/claimed_result.md; the prompt
quotes it, the offline extractor and the gold guideline follow it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from pipeline.errors import ConfigError, OutputValidationError
from pipeline.schemas import GroundingError, context_abstract
from pipeline.spans import locate
from pipeline.stages.base import Shaped, StageSpec
from pipeline.support.names import name_supported, unwritten_acronyms, unwritten_qualifiers
from pipeline.support.numbers import foreign_numbers, spelled_numbers
from pipeline.support.statements import (
    asked_only,
    comparison_widened,
    statement_problems,
    unstated_quality,
    unstated_superiority,
)
from pipeline.support.words import abstract_index
from pipeline.taxonomy import Taxonomy
from pipeline.text import canonical_number, normalize_ws, numbers_in

_DIGIT = re.compile(r"\d")
_NUMBER_AND_WORD = re.compile(
    r"[A-Za-z]+(?:-[A-Za-z]+)*[-@]\d+(?:\.\d+)?\b|\b\d+(?:\.\d+)?-[A-Za-z]+"
)
_JOINED_PAIR = re.compile(r"([A-Za-z]+)[-@](\d+(?:\.\d+)?)$|^(\d+(?:\.\d+)?)-([A-Za-z]+)")
MAX_CLAIMS = 12
DEFINITION_FILE = "claimed_result.md"
# Longer fields are not a claim but a runaway answer (and would cost alignment time).
MAX_CHARS = {"statement": 600, "evidence": 2000, "metric": 200, "unit": 50, "dataset": 300,
             "comparison": 300}  # fmt: skip
CLAIM_FIELDS = frozenset(
    {"statement", "kind", "metric", "value", "unit", "dataset", "comparison", "evidence"}
)


class Claim(BaseModel):
    """One claimed result, tied to a verbatim evidence span of the abstract.

    Shape is lenient (a number sent as a JSON number becomes a string, `kind` in any case,
    a missing nullable field is null); content is not (see `_grounded`): the evidence is
    located in the abstract (near-verbatim allowed, pipeline/alignment.py) and stored as the
    abstract's own text (grown to the comparison of its sentence when the statement claims
    one the quote left out: `support.comparison_widened`); the value and every quantity of the statement occur in the
    evidence; a named number of the statement ("CIFAR-10"), every number of the metric and
    unit, and the dataset and baseline names occur in the abstract.
    """

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)
    statement: str = Field(description="The claim in one short sentence.")
    kind: Literal["quantitative", "qualitative"]
    metric: str | None = Field(
        default=None, description="Metric name, e.g. 'AUROC', 'accuracy'; null if none."
    )
    value: str | None = Field(
        default=None,
        description="The number as written in the evidence, e.g. '5.14'; null for qualitative.",
    )
    unit: str | None = Field(
        default=None, description="Unit of the value, e.g. '%', 'x', 'pp'; null if none."
    )
    dataset: str | None = Field(
        default=None, description="Dataset or benchmark; null if not stated."
    )
    comparison: str | None = Field(
        default=None, description="Baseline compared against; null if none."
    )
    evidence: str = Field(description="A span copied verbatim from the abstract supporting it.")
    span: tuple[int, int] | None = Field(
        default=None, description="Character offsets of the evidence in the abstract (computed)."
    )

    @field_validator("kind", mode="before")
    @classmethod
    def _any_case(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _grounded(self, info: ValidationInfo) -> Claim:
        for name, limit in MAX_CHARS.items():
            text = getattr(self, name)
            if text is not None and len(text) > limit:
                raise ValueError(f"{name} has {len(text)} characters; at most {limit} allowed")
        self.evidence = normalize_ws(self.evidence)
        number = canonical_number(self.value) if self.value else None
        if self.kind == "quantitative" and number is None:
            raise ValueError("a quantitative claim needs a numeric value")
        # A short span is a fragment, unless it is the number itself ("18.2%" in a list).
        if len(self.evidence) < 8 and not (number and _has_number(self.evidence, number)):
            raise ValueError("evidence must be a span of the abstract, not a fragment")
        abstract = context_abstract(info)
        if abstract is not None:
            span = locate(abstract, self.evidence)
            if span is None:
                raise GroundingError(
                    f"evidence is not in the abstract: {self.evidence[:300]!r}; quote the "
                    "abstract exactly, or leave the claim out"
                )
            if asked_only(abstract, span):
                raise GroundingError(
                    'evidence is what the abstract asks ("whether ..."), not what it reports'
                )
            # What is stored is the abstract's own text, wherever the model's typography differed.
            self.evidence = normalize_ws(abstract[span[0] : span[1]])
            self.span = span
        if number is not None and not _has_number(self.evidence, number):
            raise GroundingError(f"value {self.value!r} does not occur in its evidence")
        if self.value and number is None and not _has_words(self.evidence, self.value):
            raise GroundingError(f"value {self.value!r} does not occur in its evidence")
        if abstract is not None:
            self._names_grounded(abstract)
        return self

    def _names_grounded(self, abstract: str) -> None:
        """The statement's numbers, the metric's and unit's numbers, and the dataset and
        baseline names are the abstract's (the statement's quantities: the evidence's)."""
        assert self.span is not None
        context = _sentences_around(abstract, self.span)
        problems = statement_problems(self.statement, self.evidence, abstract, context)
        if (
            problems
            and unstated_superiority(self.statement, self.evidence, abstract)
            and self._widened_to_comparison(abstract, context)
        ):
            problems = []
        if problems:
            raise GroundingError(f"statement has {'; '.join(problems)}")
        for name in ("metric", "unit"):
            value = getattr(self, name)
            if not value or not _DIGIT.search(value):
                continue
            if foreign_numbers(value, abstract_index(abstract).numbers):
                raise GroundingError(f"{name} {value!r} has numbers the abstract lacks")
            # "top-1", "32-bit", "BLEU-4", "pass@1": a number joined to a word is named as a whole
            for joined in _NUMBER_AND_WORD.findall(value):
                if not (name_supported(joined, abstract) and _pair_written(joined, abstract)):
                    raise GroundingError(f"{name} {value!r}: {joined!r} is not in the abstract")
        for name, what in (("dataset", "dataset"), ("comparison", "baseline")):
            value = getattr(self, name)
            if value and not name_supported(value, abstract):
                raise GroundingError(f"{what} {value!r} is not named in the abstract")
            if value and (unwritten := unwritten_acronyms(value, abstract)):
                raise GroundingError(
                    f"{what} {value!r}: {', '.join(unwritten)} is not written in the abstract"
                )
        if self.comparison and (unstated := unwritten_qualifiers(self.comparison, abstract)):
            raise GroundingError(
                f"baseline {self.comparison!r}: the abstract compares with no "
                f"{' or '.join(unstated)} version"
            )

    def _widened_to_comparison(self, abstract: str, context: str) -> bool:
        """Store the evidence grown to the comparison of its sentence (`comparison_widened`)
        when that settles every problem of the statement; False (nothing changed) if not."""
        assert self.span is not None
        wider = comparison_widened(abstract, self.span)
        if wider is None:
            return False
        evidence = normalize_ws(abstract[wider[0] : wider[1]])
        grown = abstract[wider[0] : self.span[0]] + " " + abstract[self.span[1] : wider[1]]
        if statement_problems(self.statement, evidence, abstract, context) or unstated_quality(
            self.statement, evidence, grown
        ):
            return False
        self.evidence, self.span = evidence, wider
        return True


def _sentences_around(abstract: str, span: tuple[int, int]) -> str:
    """The sentences of the abstract the span lies in (a statement may repeat a number of
    the evidence's sentence: "with 10 sources, ..." for "..., for 10 sources, ...")."""
    start = max(abstract.rfind(". ", 0, span[0]) + 1, 0)
    end = abstract.find(". ", span[1])
    return abstract[start : len(abstract) if end < 0 else end + 1]


def _pair_written(joined: str, abstract: str) -> bool:
    """The number of `joined` ("best-of-8", "32-bit") stands next to the same word in the
    abstract (hyphen, "@", a space or nothing between; a plural "s"): "best-of-N" and "by 8%"
    make no "best-of-8"."""
    m = _JOINED_PAIR.search(joined)
    if m is None:
        return True
    word, number = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    w, n = re.escape(word[:-1] if word.endswith("s") and len(word) > 3 else word), re.escape(number)
    glue = r"[-@\u2010\u2011\u2013 ]?"
    pattern = rf"\b{w}s?{glue}{n}(?![\d.]*\d)" if m.group(1) else rf"(?<![\d.]){n}{glue}{w}s?\b"
    return re.search(pattern, abstract, re.I) is not None


def _has_words(text: str, words: str) -> bool:
    """`words` (a value written in words: "twice") occur in `text`, any case."""
    return " ".join(words.lower().split()) in " ".join(text.lower().split())


def _has_number(text: str, number: str) -> bool:
    """`number` (canonical) is written in `text`, also glued to a word ("attains76.8%"), or
    in words ("two times" holds 2)."""
    if number in numbers_in(text):
        return True
    if number in spelled_numbers(text):
        return True
    digits = text.replace(",", "")
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d|\.\d)", digits) is not None


class ClaimsOutput(BaseModel):
    """Every claimed result; an empty list when the abstract reports none."""

    model_config = ConfigDict(extra="forbid")
    claims: list[Claim]


def repair(data: Any, taxonomy: Taxonomy) -> Shaped:
    """Shape repairs of a claims answer: a bare list, keys a claim does not have, `kind` in
    another case; never a change to what a claim says."""
    repairs: list[str] = []
    if isinstance(data, list):
        data, repairs = {"claims": data}, ["bare_list"]
    if not isinstance(data, dict):
        raise OutputValidationError("answer must be a JSON object", kind="schema", raw=None)
    if "claims" not in data and CLAIM_FIELDS & set(data):
        data, repairs = {"claims": [data]}, [*repairs, "single_claim"]
    if set(data) - {"claims"}:
        data, repairs = {"claims": data.get("claims")}, [*repairs, "extra_keys"]
    claims = data.get("claims")
    if not isinstance(claims, list):
        return Shaped(data, repairs)
    fixed: list[Any] = []
    for claim in claims:
        if isinstance(claim, dict):
            if set(claim) - CLAIM_FIELDS:
                claim = {k: v for k, v in claim.items() if k in CLAIM_FIELDS}
                repairs.append("extra_keys")
            kind = claim.get("kind")
            if isinstance(kind, str) and kind != kind.strip().lower():
                claim = {**claim, "kind": kind.strip().lower()}
                repairs.append("kind_case")
            value = claim.get("value")
            if claim.get("kind") == "quantitative" and (
                value is None or canonical_number(str(value)) is None
            ):
                # "twice as fast", "orders of magnitude": a result with no number to store
                claim = {**claim, "kind": "qualitative"}
                repairs.append("kind_without_value")
        fixed.append(claim)
    return Shaped({"claims": fixed}, list(dict.fromkeys(repairs)))


def screen(output: dict[str, Any], abstract: str, taxonomy: Taxonomy) -> Shaped:
    """At most MAX_CLAIMS claims, in answer order."""
    if len(output["claims"]) <= MAX_CLAIMS:
        return Shaped(output)
    return Shaped({**output, "claims": output["claims"][:MAX_CLAIMS]}, ["claims_cut"])


def prompt_fields(taxonomy: Taxonomy, prompts_dir: Path) -> dict[str, str]:
    """The written definition of a claimed result (prompts/claimed_result.md)."""
    path = prompts_dir / DEFINITION_FILE
    try:
        return {"definition": path.read_text(encoding="utf-8").strip()}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc


def offline(abstract: str, taxonomy: Taxonomy) -> dict[str, Any]:
    """The built-in extractor's claims."""
    from pipeline.offline.claims import extract_claims  # not imported by online runs

    return {"claims": extract_claims(abstract, MAX_CLAIMS)}


def claim_text(claim: Mapping[str, Any]) -> str:
    """One claim as a line: 'AUROC +5.14 % on X vs Y: "evidence"', or its statement if qualitative.

    The evidence goes next to the value, so the direction survives the flattening ("recall
    from 100% down to 0%" is not just "recall 0 %").
    """
    if claim.get("kind") == "quantitative":
        parts = [claim.get("metric") or "value", claim.get("value") or ""]
        if claim.get("unit"):
            parts.append(claim["unit"])
        text = " ".join(p for p in parts if p)
        if claim.get("dataset"):
            text += f" on {claim['dataset']}"
        if claim.get("comparison"):
            text += f" vs {claim['comparison']}"
        evidence = normalize_ws(str(claim.get("evidence") or ""))
        return f'{text}: "{evidence}"' if evidence else text
    return claim.get("statement") or claim.get("evidence", "")


def csv(output: Mapping[str, Any] | None) -> dict[str, Any]:
    """summaries.csv: the number of claims and each as a short line, joined with ' | '."""
    if output is None:
        return {"n_claims": "", "claims": ""}
    claims = output.get("claims", [])
    return {"n_claims": len(claims), "claims": " | ".join(claim_text(c) for c in claims)}


EXAMPLE = {
    "claims": [
        {
            "statement": "The method reaches 84.2% top-1 accuracy on ImageNet.",
            "kind": "quantitative",
            "metric": "top-1 accuracy",
            "value": "84.2",
            "unit": "%",
            "dataset": "ImageNet",
            "comparison": None,
            "evidence": "reaches 84.2% top-1 accuracy on ImageNet",
        },
        {
            "statement": "The method outperforms prior methods on five benchmarks.",
            "kind": "qualitative",
            "metric": None,
            "value": None,
            "unit": None,
            "dataset": None,
            "comparison": "prior methods",
            "evidence": "outperforms prior methods on five benchmarks",
        },
    ]
}


def schema_hook(schema: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    """The model-facing schema without field descriptions: the definition in the system
    prompt (prompts/claimed_result.md) describes every field already, and a server that
    ignores `response_format` never sees the schema at all."""
    for model in schema.get("$defs", {}).values():
        for prop in model.get("properties", {}).values():
            prop.pop("description", None)
    return schema


STAGE = StageSpec(
    name="claims",
    order=30,
    schema=ClaimsOutput,
    offline=offline,
    csv_columns=("n_claims", "claims"),
    csv=csv,
    prompt_fields=prompt_fields,
    items="claims",
    schema_hook=schema_hook,
    repair=repair,
    screen=screen,
    example=EXAMPLE,
    output_tokens=150,
)
