"""Stages: each pairs a prompt template with an output schema and its grounding validators."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pipeline.errors import OutputValidationError
from pipeline.prompts import PromptTemplate, content_hash, load_template
from pipeline.schemas import SCHEMA_VERSION, GroundingError, llm_json_schema
from pipeline.taxonomy import Taxonomy


@dataclass(frozen=True)
class Stage:
    """One LLM job over an abstract: template in, validated schema-shaped dict out."""

    name: str
    schema: type[BaseModel]
    template: PromptTemplate
    taxonomy: Taxonomy
    system_fields: dict[str, str] = field(default_factory=dict)

    @cached_property
    def json_schema(self) -> dict[str, Any]:
        """Strict JSON schema sent to models that support structured outputs."""
        tag_ids = self.taxonomy.ids if self.name == "tags" else None
        return llm_json_schema(self.schema, tag_ids=tag_ids)

    @cached_property
    def prompt_hash(self) -> str:
        """Hash of everything that shapes the request: template, system fields, schema."""
        return content_hash(
            {
                "template": self.template.model_dump(),
                "fields": self.system_fields,
                "schema": self.json_schema,
                "schema_version": SCHEMA_VERSION,
            }
        )

    def messages(self, abstract: str, *, json_object_mode: bool = False) -> list[dict[str, str]]:
        """Chat messages for one abstract; json_object mode spells the schema out in the prompt."""
        msgs = self.template.render(abstract, **self.system_fields)
        if json_object_mode:
            schema = json.dumps(self.json_schema, separators=(",", ":"))
            msgs[0]["content"] += (
                f"\n\nReturn only a JSON object matching this JSON schema (name: {self.name}):\n"
                f"{schema}"
            )
        return msgs

    def parse(self, raw: str | None, abstract: str) -> dict[str, Any]:
        """Validate a raw model answer against the schema and the abstract; raise on failure."""
        if raw is None or not raw.strip():
            raise OutputValidationError("empty answer", kind="empty", raw=raw)
        try:
            data = json.loads(_strip_fences(raw))
        except json.JSONDecodeError as exc:
            raise OutputValidationError(
                f"answer is not valid JSON ({exc.msg} at char {exc.pos})",
                kind="invalid_json",
                raw=raw,
            ) from exc
        if not isinstance(data, dict):
            raise OutputValidationError("answer must be a JSON object", kind="schema", raw=raw)
        try:
            model = self.schema.model_validate(
                data, context={"abstract": abstract, "taxonomy": self.taxonomy}
            )
        except ValidationError as exc:
            raise OutputValidationError(_describe(exc), kind=_kind(exc), raw=raw) from exc
        return model.model_dump(mode="json")


def _strip_fences(raw: str) -> str:
    text = raw.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text


def _kind(exc: ValidationError) -> str:
    for err in exc.errors():
        if isinstance((err.get("ctx") or {}).get("error"), GroundingError):
            return "ungrounded"
    return "schema"


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "answer"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def build_stages(names: tuple[str, ...], prompts_dir: Path, taxonomy: Taxonomy) -> dict[str, Stage]:
    """The configured stages, in pipeline order, with templates loaded from prompts_dir."""
    from pipeline.stages import claims, tags, tldr

    modules = {"tldr": tldr, "tags": tags, "claims": claims}
    out: dict[str, Stage] = {}
    for name in names:
        module = modules[name]
        out[name] = Stage(
            name=name,
            schema=module.SCHEMA,
            template=load_template(prompts_dir, name),
            taxonomy=taxonomy,
            system_fields=module.system_fields(taxonomy),
        )
    return out
