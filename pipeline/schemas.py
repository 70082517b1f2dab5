"""Pydantic v2 output schemas for each stage; validators check grounding against the abstract.

Validate with ``Model.model_validate(data, context={"abstract": text, "taxonomy": tax})``.
Without an abstract in the context, grounding checks are skipped (shape is still checked).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from pipeline.text import canonical_number, find_span, normalize_ws, numbers_in, split_sentences

SCHEMA_VERSION = 1
TLDR_MAX_WORDS = 35
MAX_TAGS = 6
MAX_KEYWORDS = 5
MAX_CLAIMS = 12


class GroundingError(ValueError):
    """The output states something the abstract (or taxonomy) does not support."""


def _abstract(info: ValidationInfo) -> str | None:
    ctx = info.context or {}
    return ctx.get("abstract")


class TldrOutput(BaseModel):
    """Stage `tldr`: one sentence stating the paper's contribution."""

    model_config = ConfigDict(extra="forbid")
    tldr: str = Field(description="One sentence (<= 35 words) stating the paper's contribution.")

    @field_validator("tldr")
    @classmethod
    def _one_grounded_sentence(cls, value: str, info: ValidationInfo) -> str:
        value = normalize_ws(value)
        if not value:
            raise ValueError("tldr is empty")
        words = value.split()
        if len(words) > TLDR_MAX_WORDS:
            raise ValueError(f"tldr has {len(words)} words; at most {TLDR_MAX_WORDS} allowed")
        if len(split_sentences(value)) != 1:
            raise ValueError("tldr must be exactly one sentence")
        abstract = _abstract(info)
        if abstract is not None:
            known = set(numbers_in(abstract))
            foreign = [n for n in numbers_in(value) if n not in known]
            if foreign:
                raise GroundingError(
                    f"tldr contains numbers not in the abstract: {', '.join(foreign)}"
                )
        return value


class TagsOutput(BaseModel):
    """Stage `tags`: tag ids from the controlled taxonomy plus a few free keywords."""

    model_config = ConfigDict(extra="forbid")
    tags: list[str] = Field(description="Tag ids from the taxonomy, most specific first.")
    keywords: list[str] = Field(
        default_factory=list, description="Up to 5 short free keywords not covered by tags."
    )

    @field_validator("tags")
    @classmethod
    def _known_tags(cls, value: list[str], info: ValidationInfo) -> list[str]:
        taxonomy = (info.context or {}).get("taxonomy")
        out: list[str] = []
        unknown: list[str] = []
        for name in value:
            tag_id = taxonomy.resolve(name) if taxonomy is not None else name
            if tag_id is None:
                unknown.append(name)
            elif tag_id not in out:
                out.append(tag_id)
        if unknown:
            raise GroundingError(f"tags not in the taxonomy: {', '.join(map(repr, unknown))}")
        if not out:
            raise ValueError("at least one taxonomy tag is required")
        if len(out) > MAX_TAGS:
            raise ValueError(f"{len(out)} tags; at most {MAX_TAGS} allowed")
        return out

    @field_validator("keywords")
    @classmethod
    def _few_short_keywords(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for kw in value:
            kw = normalize_ws(kw)
            if kw and kw.lower() not in {k.lower() for k in out}:
                out.append(kw)
        if len(out) > MAX_KEYWORDS:
            raise ValueError(f"{len(out)} keywords; at most {MAX_KEYWORDS} allowed")
        long = [k for k in out if len(k.split()) > 5]
        if long:
            raise ValueError(f"keywords must be short phrases (<= 5 words): {long[0]!r}")
        return out


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
        if self.value:
            number = canonical_number(self.value)
            if number is not None and number not in numbers_in(self.evidence):
                raise GroundingError(f"value {self.value!r} does not occur in its evidence")
        abstract = _abstract(info)
        if abstract is not None:
            span = find_span(abstract, self.evidence)
            if span is None:
                raise GroundingError(
                    f"evidence is not verbatim in the abstract: {self.evidence[:80]!r}"
                )
            self.span = span
        return self


class ClaimsOutput(BaseModel):
    """Stage `claims`: every claimed result; an empty list when the abstract reports none."""

    model_config = ConfigDict(extra="forbid")
    claims: list[Claim] = Field(max_length=MAX_CLAIMS)


STAGE_SCHEMAS: dict[str, type[BaseModel]] = {
    "tldr": TldrOutput,
    "tags": TagsOutput,
    "claims": ClaimsOutput,
}

# Fields computed by validators, never asked of a model.
_COMPUTED_FIELDS = {"span"}


def llm_json_schema(model: type[BaseModel], *, tag_ids: list[str] | None = None) -> dict[str, Any]:
    """JSON schema for structured outputs (strict): every field required, no extras, no defaults."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def strict(node: Any) -> Any:
        if isinstance(node, dict):
            node = {k: strict(v) for k, v in node.items() if k not in {"title", "default"}}
            if node.get("type") == "object" and "properties" in node:
                props = {k: v for k, v in node["properties"].items() if k not in _COMPUTED_FIELDS}
                node["properties"] = props
                node["required"] = list(props)
                node["additionalProperties"] = False
            if node.get("type") == "array":
                node.pop("maxItems", None)
                node.pop("minItems", None)
            return node
        if isinstance(node, list):
            return [strict(v) for v in node]
        return node

    out = strict(schema)
    if defs:
        out["$defs"] = {k: strict(v) for k, v in defs.items()}
    if tag_ids and "tags" in out.get("properties", {}):
        out["properties"]["tags"]["items"] = {"type": "string", "enum": tag_ids}
    return out
