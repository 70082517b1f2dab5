"""Prompt templates and data files: small YAML files in prompts/, validated, rendered and
hashed by content."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

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
        data = yamltext.safe_load(path.read_text(encoding="utf-8"))
        return PromptTemplate.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"cannot load prompt template {path}: {exc}") from exc


# Data files -------------------------------------------------------------------------------
# The word lists and rule tables of the heuristics (prompts/offline/) and of the grounding
# checks: package data read once per process, never a user's prompts_dir (the code that
# reads them ships with them, and the cache keys hash them with it).


class DataFile(BaseModel):
    """Base of the data files' models: an unknown key is an error, a loaded file read-only."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _split_words(value: Any) -> Any:
    """A whitespace-separated string as its words, none twice (anything else: as it is)."""
    if not isinstance(value, str):
        return value
    words = value.split()
    seen: set[str] = set()
    twice: set[str] = set()
    for word in words:
        (twice if word in seen else seen).add(word)
    if twice:
        raise ValueError(f"listed twice: {', '.join(sorted(twice))}")
    return words


# "a an the": a set of words, or a sequence where order matters ("instead of").
WordSet = Annotated[frozenset[str], BeforeValidator(_split_words)]
Words = Annotated[tuple[str, ...], BeforeValidator(_split_words)]

_Model = TypeVar("_Model", bound=BaseModel)


def load_data(name: str, model: type[_Model]) -> _Model:
    """prompts/<name> of the package, validated by `model` (read once per process)."""
    return cast(_Model, _load_data(name, model))


@functools.cache
def _load_data(name: str, model: type[BaseModel]) -> BaseModel:
    return read_data_file(PACKAGE_PROMPTS_DIR / name, model)


def read_data_file(path: Path, model: type[_Model]) -> _Model:
    """A YAML data file validated by `model`; a ConfigError names the file when it cannot be
    read, is no YAML, writes a key twice or does not validate."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # noqa: S506
        return model.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"cannot load data file {path}: {exc}") from exc


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's when built with it), a key written twice in one mapping an
    error: PyYAML would keep the last silently (a second `efficiency:` in a long table)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key, _value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key.value!r} written twice", key.start_mark
                    )
                seen.add(key.value)
        return cast(dict[Any, Any], super().construct_mapping(node, deep=deep))
