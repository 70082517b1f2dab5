"""Stage `tags`: controlled-taxonomy tags (the first is the primary topic) plus free keywords.

The taxonomy reaches the model once, as the id list in the system prompt (one line per
facet); the JSON schema asks for strings, not an enum of the same ids, which would send
the taxonomy twice. An id outside the taxonomy is caught by validation (and re-asked).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from pipeline.schemas import GroundingError, context_taxonomy
from pipeline.stages.base import StageSpec
from pipeline.taxonomy import Taxonomy
from pipeline.text import normalize_ws

MAX_TAGS = 6
MAX_KEYWORDS = 5


class TagsOutput(BaseModel):
    """Tag ids from the controlled taxonomy plus a few free keywords."""

    model_config = ConfigDict(extra="forbid")
    tags: list[str] = Field(description="Taxonomy ids; the first is the primary topic.")
    keywords: list[str] = Field(default_factory=list, description="Up to 5 short keywords.")

    @field_validator("tags")
    @classmethod
    def _known_tags(cls, value: list[str], info: ValidationInfo) -> list[str]:
        taxonomy = context_taxonomy(info)
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


def prompt_fields(taxonomy: Taxonomy, prompts_dir: Path) -> dict[str, str]:
    """The taxonomy's ids for the system prompt: one line per facet (ids are self-describing;
    where they overlap, prompts/tags.yaml says which takes what)."""
    lines = [f"{facet.id}: {', '.join(t.id for t in facet.tags)}" for facet in taxonomy.facets]
    return {"taxonomy": "\n".join(lines)}


def offline(abstract: str, taxonomy: Taxonomy) -> dict[str, Any]:
    """The built-in taxonomy matcher's tags and keywords."""
    from pipeline.offline.tags import match_tags

    tags, keywords = match_tags(abstract, taxonomy)
    return {"tags": tags, "keywords": keywords}


def csv(output: Mapping[str, Any] | None) -> dict[str, Any]:
    """summaries.csv: tag ids and keywords, each joined with '; '."""
    output = output or {}
    return {
        "tags": "; ".join(output.get("tags", [])),
        "keywords": "; ".join(output.get("keywords", [])),
    }


STAGE = StageSpec(
    name="tags",
    order=20,
    schema=TagsOutput,
    offline=offline,
    csv_columns=("tags", "keywords"),
    csv=csv,
    prompt_fields=prompt_fields,
    uses_taxonomy=True,
    example={"tags": ["graph-anomaly-detection", "graph-neural-networks"], "keywords": ["DR-GGAD"]},
    output_tokens=40,
)
