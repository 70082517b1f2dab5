"""What every stage schema shares: the schema version, grounding errors, validation context,
and the strict JSON schema sent to models. Each stage's own output model lives in its module
in pipeline/stages/.

Validate with ``Model.model_validate(data, context={"abstract": text, "taxonomy": tax})``.
Without an abstract in the context, grounding checks are skipped (shape is still checked).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationInfo

SCHEMA_VERSION = 1


class GroundingError(ValueError):
    """The output states something the abstract (or taxonomy) does not support."""


def context_abstract(info: ValidationInfo) -> str | None:
    """The abstract a validator checks grounding against, if the caller gave one."""
    return (info.context or {}).get("abstract")


def context_taxonomy(info: ValidationInfo) -> Any:
    """The taxonomy a validator resolves tags with, if the caller gave one."""
    return (info.context or {}).get("taxonomy")


# Fields computed by validators, never asked of a model.
COMPUTED_FIELDS = frozenset({"span", "unconfirmed"})


def llm_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON schema for structured outputs (strict): every field required, no extras, no defaults."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def strict(node: Any) -> Any:
        if isinstance(node, dict):
            node = {k: strict(v) for k, v in node.items() if k not in {"title", "default"}}
            if node.get("type") == "object" and "properties" in node:
                props = {k: v for k, v in node["properties"].items() if k not in COMPUTED_FIELDS}
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
    out.pop("description", None)  # the model's docstring: for readers of the code, not models
    if defs:
        out["$defs"] = {k: strict(v) for k, v in defs.items()}
        for definition in out["$defs"].values():
            definition.pop("description", None)  # nested models' docstrings likewise
    return out
