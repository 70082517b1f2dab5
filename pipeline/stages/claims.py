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

from pipeline.errors import ConfigError
from pipeline.schemas import GroundingError, context_abstract
from pipeline.spans import closest, locate
from pipeline.stages.base import StageSpec
from pipeline.taxonomy import Taxonomy
from pipeline.text import canonical_number, normalize_ws, numbers_in

MAX_CLAIMS = 12
DEFINITION_FILE = "claimed_result.md"


class Claim(BaseModel):
    """One claimed result, tied to a verbatim evidence span of the abstract.

    Shape is lenient (a number sent as a JSON number becomes a string, `kind` in any case,
    a missing nullable field is null); content is not (see `_grounded`).
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
                near = closest(abstract, self.evidence)
                hint = (
                    f"; the closest span of the abstract is {near!r}"
                    if near
                    else "; no span of the abstract is close to it"
                )
                raise GroundingError(
                    f"evidence is not verbatim in the abstract: {self.evidence[:300]!r}{hint}"
                )
            # What is stored is the abstract's own text, wherever the model's typography differed.
            self.evidence = normalize_ws(abstract[span[0] : span[1]])
            self.span = span
        if number is not None and not _has_number(self.evidence, number):
            raise GroundingError(f"value {self.value!r} does not occur in its evidence")
        return self


def _has_number(text: str, number: str) -> bool:
    """`number` (canonical) is written in `text`, also glued to a word ("attains76.8%")."""
    if number in numbers_in(text):
        return True
    digits = text.replace(",", "")
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d|\.\d)", digits) is not None


class ClaimsOutput(BaseModel):
    """Every claimed result; an empty list when the abstract reports none."""

    model_config = ConfigDict(extra="forbid")
    claims: list[Claim] = Field(max_length=MAX_CLAIMS)


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

STAGE = StageSpec(
    name="claims",
    order=30,
    schema=ClaimsOutput,
    offline=offline,
    csv_columns=("n_claims", "claims"),
    csv=csv,
    prompt_fields=prompt_fields,
    items="claims",
    example=EXAMPLE,
    output_tokens=150,
)
