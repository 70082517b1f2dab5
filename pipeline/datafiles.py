"""The data files of the heuristics and grounding checks: YAML tables validated by pydantic.

The word lists and rule tables of the offline extractors (prompts/offline/) and of the
grounding checks (prompts/grounding.yaml, prompts/alignment.yaml) are package data read once
per process, never from a user's prompts_dir: the code that reads them ships with them, and
the cache keys (heuristics_version, validator_id) hash them with it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from pipeline import yamltext
from pipeline.errors import ConfigError
from pipeline.prompts import PACKAGE_PROMPTS_DIR


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
    data = yamltext.load_file(path, what="data file")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"cannot load data file {yamltext.invalid_value(path, exc)}") from exc
