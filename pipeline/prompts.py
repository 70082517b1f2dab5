"""Prompt templates and data files: small YAML files in prompts/, validated, rendered and
hashed by content."""

from __future__ import annotations

import hashlib
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline import yamltext
from pipeline.errors import ConfigError

# prompts/ at the top of the repo is the user-editable source; the wheel ships it as the
# package `pipeline.prompt_files` (an editable install maps that name to prompts/ itself).
PACKAGE_PROMPTS_DIR = Path(str(files("pipeline.prompt_files")))


def content_hash(data: Any) -> str:
    """sha256 (16 hex) of canonical JSON: sorted keys, compact separators."""
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


# Any opening or closing abstract tag: any case, spacing, attributes or `/>`; an unclosed
# `</abstract` too. `<abstracts>` and `a < b > c` are other text and stay as written.
_DELIMITER = re.compile(r"<\s*/?\s*abstract\b[^<>]*>?", re.IGNORECASE)


def _escape_tag(match: re.Match[str]) -> str:
    return match.group(0).replace("<", "&lt;").replace(">", "&gt;")


class PromptTemplate(BaseModel):
    """A stage's system + user messages, and the re-ask messages sent after a rejected answer
    (`reask`) or after rejected items of a kept answer (`reask_items`, stages with items)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    system: str
    user: str
    reask: str
    reask_items: str | None = None

    def render(self, abstract: str, **fields: str) -> list[dict[str, str]]:
        """Chat messages for one abstract; the abstract is delimited as data."""
        system = self.system
        for key, value in fields.items():
            system = system.replace("{" + key + "}", value)
        if "\n\n\n" in system:  # a field left empty (no overlap lines for this abstract)
            system = re.sub(r"\n{3,}", "\n\n", system)
        # The abstract must not be able to close (or reopen) its own delimiter, in any case,
        # spacing or with attributes a model might still read as the tag.
        safe = _DELIMITER.sub(_escape_tag, abstract)
        return [
            {"role": "system", "content": system.strip()},
            {"role": "user", "content": self.user.replace("{abstract}", safe).strip()},
        ]

    def render_reask(self, error: str, *, items: bool = False) -> str:
        """The follow-up user message that feeds a validation error back to the model."""
        template = self.reask_items if items and self.reask_items else self.reask
        return template.replace("{error}", error).strip()


def load_template(prompts_dir: Path, name: str) -> PromptTemplate:
    """Load prompts/<name>.yaml."""
    path = prompts_dir / f"{name}.yaml"
    try:
        data = yamltext.load_file(path, what="prompt template")
        return PromptTemplate.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            f"cannot load prompt template {yamltext.invalid_value(path, exc)}"
        ) from exc
