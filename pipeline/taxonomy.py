"""The controlled tag taxonomy (prompts/taxonomy.yaml): facets of tags, each with a label and synonyms."""

from __future__ import annotations

import functools
import re
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline import yamltext
from pipeline.errors import ConfigError


class Tag(BaseModel):
    """One taxonomy entry: a stable id, a human label, and the phrasings that mean it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    label: str
    synonyms: tuple[str, ...] = ()
    definition: str | None = None


class Facet(BaseModel):
    """A group of tags: method family, task, contribution type, ..."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    label: str
    tags: tuple[Tag, ...]


def _key(name: str) -> str:
    return re.sub(r"[\s_\-/]+", " ", name.strip().lower())


class Taxonomy(BaseModel):
    """The whole taxonomy, with lookups from any id, label or synonym to a tag id."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int
    facets: tuple[Facet, ...]

    @cached_property
    def tags(self) -> dict[str, Tag]:
        """Tag id -> Tag, across facets."""
        return {t.id: t for f in self.facets for t in f.tags}

    @cached_property
    def facet_of(self) -> dict[str, str]:
        """Tag id -> facet id."""
        return {t.id: f.id for f in self.facets for t in f.tags}

    @cached_property
    def _lookup(self) -> dict[str, str]:
        # Ids first, so no label or synonym of another tag can shadow an exact id.
        table = {_key(tag.id): tag.id for tag in self.tags.values()}
        for tag in self.tags.values():
            for name in (tag.label, *tag.synonyms):
                table.setdefault(_key(name), tag.id)
        return table

    def ambiguous_names(self) -> list[str]:
        """Ids, labels or synonyms that denote two different tags (a taxonomy error)."""
        owner: dict[str, str] = {}
        clashes: list[str] = []
        for tag in self.tags.values():
            for name in {_key(n) for n in (tag.id, tag.label, *tag.synonyms)}:
                if owner.setdefault(name, tag.id) != tag.id:
                    clashes.append(f"{name!r} ({owner[name]} and {tag.id})")
        return clashes

    def resolve(self, name: str) -> str | None:
        """The tag id that `name` (an id, label or synonym, any case) denotes, or None."""
        if name in self.tags:  # the common case: already an id
            return name
        return self._lookup.get(_key(name))

    @property
    def ids(self) -> list[str]:
        """All tag ids in file order."""
        return list(self.tags)


def load_taxonomy(path: Path) -> Taxonomy:
    """Read and validate a taxonomy YAML file; duplicate ids are an error.

    A file read before (same path, size and modification time) is not parsed again.
    """
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise ConfigError(f"cannot load taxonomy {path}: {exc}") from exc
    return _load_taxonomy(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _load_taxonomy(path_name: str, size: int, mtime_ns: int) -> Taxonomy:
    path = Path(path_name)
    try:
        data = yamltext.load_file(path, what="taxonomy")
        tax = Taxonomy.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"cannot load taxonomy {yamltext.invalid_value(path, exc)}") from exc
    seen: set[str] = set()
    for facet in tax.facets:
        for tag in facet.tags:
            if tag.id in seen:
                raise ConfigError(f"taxonomy {path}: duplicate tag id {tag.id!r}")
            seen.add(tag.id)
    clashes = tax.ambiguous_names()
    if clashes:
        raise ConfigError(f"taxonomy {path}: names used by two tags: {', '.join(clashes[:5])}")
    return tax
