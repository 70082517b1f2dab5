"""The stage registry: every module in pipeline/stages/ that exports `STAGE` is a stage.

Adding a stage is one module here (schema, prompt fields, offline hook, CSV projection; see
`StageSpec`) plus one prompt file, prompts/<name>.yaml. Every stage list in the package
(settings, run folder, CSV columns, triage, evaluation) comes from `specs()`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import pkgutil
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from pipeline.errors import ConfigError
from pipeline.prompts import load_template
from pipeline.stages.base import Stage, StageSpec
from pipeline.taxonomy import Taxonomy

__all__ = [
    "Stage",
    "StageSpec",
    "build_stages",
    "get_spec",
    "register",
    "specs",
    "stage_names",
    "validator_id",
]

_REGISTRY: dict[str, StageSpec] = {}
_discovered = False


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        spec = getattr(module, "STAGE", None)
        if isinstance(spec, StageSpec):
            register(spec)


def register(spec: StageSpec) -> StageSpec:
    """Add a stage (the modules of this package register themselves; tests and plugins call it)."""
    known = _REGISTRY.get(spec.name)
    if known is not None and known is not spec:
        raise ValueError(f"a stage named {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a registered stage (tests)."""
    _REGISTRY.pop(name, None)


def specs() -> tuple[StageSpec, ...]:
    """Every registered stage, in pipeline order."""
    _discover()
    return tuple(sorted(_REGISTRY.values(), key=lambda s: (s.order, s.name)))


def stage_names() -> tuple[str, ...]:
    """Names of every registered stage, in pipeline order."""
    return tuple(s.name for s in specs())


def get_spec(name: str) -> StageSpec:
    """The registered stage called `name`; a ConfigError names the known ones otherwise."""
    _discover()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(
            f"unknown stage {name!r}; choose from {', '.join(stage_names())}"
        ) from None


def build_stages(names: tuple[str, ...], prompts_dir: Path, taxonomy: Taxonomy) -> dict[str, Stage]:
    """The named stages, in pipeline order, bound to prompts_dir/<name>.yaml and the taxonomy."""
    wanted = set(names)
    out: dict[str, Stage] = {}
    for spec in specs():
        if spec.name in wanted:
            out[spec.name] = Stage(
                spec=spec,
                template=load_template(prompts_dir, spec.name),
                taxonomy=taxonomy,
                fields=spec.prompt_fields(taxonomy, prompts_dir),
            )
    return out


# The modules whose code decides whether a stage output is valid (besides each stage's own).
_VALIDATION_MODULES = (
    "pipeline.stages.base",
    "pipeline.schemas",
    "pipeline.spans",
    "pipeline.folding",
    "pipeline.alignment",
    "pipeline.repair",
    "pipeline.support",  # the package: every module of it
    "pipeline.support.names",
    "pipeline.support.numbers",
    "pipeline.support.statements",
    "pipeline.support.tags",
    "pipeline.support.words",
    "pipeline.offline.tags",  # its phrase index decides which tags a text supports
    "pipeline.offline.tag_rules",
    "pipeline.offline.tag_words",
    "pipeline.offline.contribution_cues",
    "pipeline.datafiles",  # reads the data files below
    "pipeline.yamltext",  # parses them
    "pipeline.text",
    "pipeline.taxonomy",
    "pipeline.rundir.models",
)
# Data the validating code reads: (package, resource path).
_VALIDATION_DATA = (
    ("pipeline", "assign/common_words.txt"),  # words too common to support a tag
    ("pipeline.prompt_files", "grounding.yaml"),
    ("pipeline.prompt_files", "alignment.yaml"),
    ("pipeline.prompt_files", "offline/tag_rules.yaml"),
    ("pipeline.prompt_files", "offline/tag_words.yaml"),
    ("pipeline.prompt_files", "offline/contribution_cues.yaml"),
)


def validator_id() -> str | None:
    """A digest of the code that validates stage outputs (every registered stage's module and
    the modules they validate with) and of the data files it reads: the cache seals the lines
    it writes with it, so a line whose seal holds was validated by this very code and data.
    None when some source cannot be read."""
    names = sorted({*_VALIDATION_MODULES, *(s.schema.__module__ for s in specs())})
    data = tuple(
        (resource, files(package).joinpath(*resource.split("/")))
        for package, resource in _VALIDATION_DATA
    )
    return _validator_id(tuple(names), data)


@functools.lru_cache(maxsize=4)
def _validator_id(names: tuple[str, ...], data: tuple[tuple[str, Traversable], ...]) -> str | None:
    from pipeline import __version__

    digest = hashlib.sha256(__version__.encode())
    for name in names:
        module = sys.modules.get(name) or importlib.import_module(name)
        try:
            digest.update(name.encode() + b"\0" + Path(module.__file__ or "").read_bytes())
        except OSError:
            return None
    for resource, path in data:
        try:
            digest.update(resource.encode() + b"\0" + path.read_bytes())
        except OSError:
            return None
    return digest.hexdigest()
