"""Stage `claims`: claimed results, each tied to a verbatim evidence span of the abstract.

What counts as a claimed result is written once, in prompts/claimed_result.md; the prompt
quotes it, the offline extractor and the gold guideline follow it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from pipeline.errors import ConfigError
from pipeline.schemas import GroundingError, context_abstract
from pipeline.spans import locate
from pipeline.stages.base import StageSpec
from pipeline.taxonomy import Taxonomy
from pipeline.text import canonical_number, normalize_ws, numbers_in

MAX_CLAIMS = 12
DEFINITION_FILE = "claimed_result.md"


class Claim(BaseModel):
    """One claimed result, tied to a verbatim evidence span of the abstract."""

    model_config = ConfigDict(extra="forbid")
    statement: str = Field(description="The claim in one short sentence.")
    kind: Literal["quantitative", "qualitative"]
    metric: str | None = Field(description="Metric name, e.g. 'AUROC', 'accuracy'; null if none.")
    value: str | None = Field(
        description="The number as written in the evidence, e.g. '5.14'; null for qualitative."
    )
    unit: str | None = Field(description="Unit of the value, e.g. '%', 'x', 'pp'; null if none.")
    dataset: str | None = Field(description="Dataset or benchmark; null if not stated.")
    comparison: str | None = Field(description="Baseline compared against; null if none.")
    evidence: str = Field(description="A span copied verbatim from the abstract supporting it.")
    span: tuple[int, int] | None = Field(
        default=None, description="Character offsets of the evidence in the abstract (computed)."
    )

    @model_validator(mode="after")
    def _grounded(self, info: ValidationInfo) -> Claim:
        self.evidence = normalize_ws(self.evidence)
        if len(self.evidence) < 8:
            raise ValueError("evidence must be a span of the abstract, not a fragment")
        if self.kind == "quantitative" and (not self.value or canonical_number(self.value) is None):
            raise ValueError("a quantitative claim needs a numeric value")
        abstract = context_abstract(info)
        if abstract is not None:
            span = locate(abstract, self.evidence)
            if span is None:
                raise GroundingError(
                    f"evidence is not verbatim in the abstract: {self.evidence[:80]!r}"
                )
            # What is stored is the abstract's own text, wherever the model's typography differed.
            self.evidence = normalize_ws(abstract[span[0] : span[1]])
            self.span = span
        if self.value:
            number = canonical_number(self.value)
            if number is not None and number not in numbers_in(self.evidence):
                raise GroundingError(f"value {self.value!r} does not occur in its evidence")
        return self


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
    from pipeline.offline.claims import extract_claims

    return {"claims": extract_claims(abstract)}


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


STAGE = StageSpec(
    name="claims",
    order=30,
    schema=ClaimsOutput,
    offline=offline,
    csv_columns=("n_claims", "claims"),
    csv=csv,
    prompt_fields=prompt_fields,
)
