"""What a stage is (`StageSpec`, one per module in pipeline/stages/) and a stage bound to its
prompt template and taxonomy for one run (`Stage`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pipeline.errors import FailureKind, OutputValidationError
from pipeline.prompts import PromptTemplate, content_hash
from pipeline.schemas import SCHEMA_VERSION, GroundingError, llm_json_schema
from pipeline.taxonomy import Taxonomy

Output = dict[str, Any]


def no_prompt_fields(taxonomy: Taxonomy, prompts_dir: Path) -> dict[str, str]:
    """A stage whose template needs nothing but the abstract."""
    return {}


def no_schema_hook(schema: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    """A stage whose model-facing JSON schema is the plain strict schema."""
    return schema


@dataclass(frozen=True)
class StageSpec:
    """Everything that defines one stage; each module in pipeline/stages/ exports one as STAGE.

    - `order`: position in pipeline order (stage lists everywhere are sorted by it);
    - `schema`: the pydantic output model, validated with the abstract and taxonomy as context;
    - `prompt_fields`: values for `{placeholders}` of prompts/<name>.yaml besides {abstract};
    - `offline`: the built-in deterministic answer for an abstract (a schema-shaped dict);
    - `csv_columns` / `csv`: the stage's columns in summaries.csv and their values for an ok
      output (None when the stage failed or did not run);
    - `schema_hook`: adjusts the strict JSON schema sent to models (e.g. an enum of tag ids);
    - `uses_taxonomy`: the answer depends on the taxonomy, so its hash enters the cache key.
    """

    name: str
    order: int
    schema: type[BaseModel]
    offline: Callable[[str, Taxonomy], Output]
    csv_columns: tuple[str, ...]
    csv: Callable[[Mapping[str, Any] | None], dict[str, Any]]
    prompt_fields: Callable[[Taxonomy, Path], dict[str, str]] = no_prompt_fields
    schema_hook: Callable[[dict[str, Any], Taxonomy], dict[str, Any]] = no_schema_hook
    uses_taxonomy: bool = False


@dataclass(frozen=True)
class Stage:
    """A stage bound to its template, taxonomy and prompt fields for one run."""

    spec: StageSpec
    template: PromptTemplate
    taxonomy: Taxonomy
    fields: dict[str, str] = field(default_factory=dict)
    name: str = field(init=False)  # the spec's name (`tldr`, `tags`, ...), read on hot paths

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.spec.name)

    @cached_property
    def json_schema(self) -> dict[str, Any]:
        """Strict JSON schema sent to models that support structured outputs."""
        return self.spec.schema_hook(llm_json_schema(self.spec.schema), self.taxonomy)

    @cached_property
    def prompt_hash(self) -> str:
        """Hash of everything that shapes the answer: template, fields, schema, taxonomy."""
        parts: dict[str, Any] = {
            "template": self.template.model_dump(),
            "fields": self.fields,
            "schema": self.json_schema,
            "schema_version": SCHEMA_VERSION,
        }
        if self.spec.uses_taxonomy:
            parts["taxonomy"] = content_hash(self.taxonomy.model_dump(mode="json"))
        return content_hash(parts)

    def messages(self, abstract: str, *, json_object_mode: bool = False) -> list[dict[str, str]]:
        """Chat messages for one abstract; json_object mode spells the schema out in the prompt."""
        msgs = self.template.render(abstract, **self.fields)
        if json_object_mode:
            schema = json.dumps(self.json_schema, separators=(",", ":"))
            msgs[0]["content"] += (
                f"\n\nReturn only a JSON object matching this JSON schema (name: {self.name}):\n"
                f"{schema}"
            )
        return msgs

    def parse(self, raw: str | None, abstract: str) -> Output:
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
        return self.validate(data, abstract, raw=raw)

    def validate(self, data: Mapping[str, Any], abstract: str, *, raw: str | None = None) -> Output:
        """Validate an answer already decoded from JSON (fresh or cached); raise on failure."""
        try:
            model = self.spec.schema.model_validate(
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


def _kind(exc: ValidationError) -> FailureKind:
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
