"""A run's context: everything a run derives from its Settings, built once.

`RunContext` owns the taxonomy, the stages bound to their prompts, the backend's identity,
the cache, and what is keyed by them: cache keys, lookups of cached answers (validated like
fresh ones unless sealed), stores, provenance. A run, a dry run, a batch submit and collect,
the Ray actors and the eval commands all take one instead of assembling these by hand.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.cache import Cache, key_from_prefix, key_prefix
from pipeline.config import Settings
from pipeline.errors import OutputValidationError
from pipeline.ingest import Abstract
from pipeline.rundir.models import Provenance, StageResult
from pipeline.schemas import SCHEMA_VERSION
from pipeline.stages import Stage, build_stages, validator_id
from pipeline.taxonomy import Taxonomy, load_taxonomy

log = logging.getLogger(__name__)

CacheMode = Literal["write", "read", "none"]


@dataclass(frozen=True)
class BackendIdentity:
    """What cache keys and provenance need of a backend: its name and model."""

    name: str
    model: str


def backend_identity(settings: Settings) -> BackendIdentity:
    """The identity of the backend the settings name, without building it (no network)."""
    if settings.resolved_provider == "offline":
        from pipeline.backends.offline import heuristics_version

        return BackendIdentity("offline", f"offline-heuristics-{heuristics_version()}")
    return BackendIdentity("openai", settings.model)


def load_project_taxonomy(settings: Settings) -> Taxonomy:
    """The taxonomy file next to the prompt templates."""
    return load_taxonomy(settings.prompts_dir / "taxonomy.yaml")


@dataclass
class Dropped:
    """An item left out of an ok output because it stayed invalid (cached with the output)."""

    index: int
    kind: str
    message: str
    item: Any
    field: str | None = None  # the list it was dropped from, when not the stage's items

    def as_json(self) -> dict[str, Any]:
        """The cache's form."""
        out = {"index": self.index, "kind": self.kind, "message": self.message, "item": self.item}
        if self.field is not None:
            out["field"] = self.field
        return out


class CachedLine(BaseModel):
    """The parts of a cache record (`RunContext.store` writes them) a sealed hit needs."""

    model_config = ConfigDict(extra="ignore")
    output: dict[str, Any]
    provenance: Provenance
    dropped: list[dict[str, Any]] = Field(default_factory=list)  # no deepcopy per line

    @classmethod
    def read(cls, line: bytes) -> CachedLine | None:
        """The parts of one cache line (pydantic's JSON reader: cheaper than json.loads and
        a model built from the dict), or None when the line lacks the record's shape."""
        try:
            return cls.model_validate_json(line)
        except ValidationError:
            return None

    def dropped_items(self) -> list[Dropped]:
        """The items the cached answer dropped."""
        return [Dropped(**d) for d in self.dropped]


class RunContext:
    """The taxonomy, stages, backend identity and cache of one run's settings (module doc).

    `cache`: "write" opens every stage cache for lookups and stores; "read" opens the
    existing ones for lookups only (a dry run, a batch submit: nothing is created); "none"
    opens nothing (keys only).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        identity: BackendIdentity | None = None,
        cache: CacheMode = "write",
    ) -> None:
        self.settings = settings
        self.taxonomy = load_project_taxonomy(settings)
        self.stages: dict[str, Stage] = build_stages(
            settings.stages, settings.prompts_dir, self.taxonomy
        )
        self.identity = identity or backend_identity(settings)
        self.params = settings.generation_params
        self.cache: Cache | None = (
            None
            if cache == "none"
            else Cache(
                settings.cache_dir, tuple(self.stages), validator_id(), read_only=cache == "read"
            )
        )
        self._key_prefixes: dict[tuple[str, str], str] = {}  # settings are fixed for a run

    def __enter__(self) -> RunContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the cache files (the context's keys still work)."""
        if self.cache is not None:
            self.cache.close()

    def key(self, stage: Stage, abstract: Abstract) -> str:
        """Cache key of one (stage, abstract) under these settings."""
        prefix = self._key_prefixes.get((stage.name, stage.prompt_hash))
        if prefix is None:
            prefix = self._key_prefixes[stage.name, stage.prompt_hash] = key_prefix(
                stage=stage.name,
                prompt_hash=stage.prompt_hash,
                schema_version=SCHEMA_VERSION,
                backend=self.identity.name,
                model=self.identity.model,
                params=self.params,
            )
        return key_from_prefix(prefix, abstract.text)

    def provenance(self, stage: Stage, key: str, **fields: Any) -> Provenance:
        """The provenance of a result of `stage` under this backend and these settings."""
        return Provenance(
            backend=self.identity.name,
            model=self.identity.model,
            endpoint=self.params.get("endpoint"),
            prompt_hash=stage.prompt_hash,
            schema_version=SCHEMA_VERSION,
            cache_key=key,
            **fields,
        )

    def cached(
        self, stage: Stage, abstract: Abstract, key: str
    ) -> tuple[StageResult, list[Dropped]] | None:
        """The cached result of one stage, validated like a fresh answer, and the items its
        answer dropped; None on a miss (always with `force`, or without a cache).

        A record that fails (wrong shape, ungrounded output) is warned about once and
        forgotten, so the fresh answer that replaces it is what later lookups and runs see.
        A record whose seal holds was validated by this same code and is only parsed
        (pipeline/cache.py says why that is enough).
        """
        if self.settings.force or self.cache is None:
            return None
        stage_cache = self.cache.stages[stage.name]
        line, sealed = stage_cache.lookup_line(key)
        if line is None:
            return None
        # A sealed line is only parsed; one without the record's shape takes the full path,
        # which says why.
        if sealed and (hit := CachedLine.read(line)) is not None:
            hit.provenance.cached = True
            result = StageResult(status="ok", output=hit.output, provenance=hit.provenance)
            return result, hit.dropped_items()
        record = stage_cache.parse(key, line)
        if record is None:
            return None
        try:
            output = stage.validate(record["output"], abstract.text)
            provenance = Provenance.model_validate({**record["provenance"], "cached": True})
            dropped = [Dropped(**d) for d in record.get("dropped", ())]
        except (OutputValidationError, ValueError, KeyError, TypeError) as exc:
            stage_cache.discard(key)
            log.warning(
                "%s: cached %s output for %s failed validation (%s); asking again",
                stage_cache.path,
                stage.name,
                abstract.id,
                str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__,
            )
            return None
        return StageResult(status="ok", output=output, provenance=provenance), dropped

    def has_record(self, stage: Stage, key: str) -> bool:
        """True when the cache holds a record of `key` (not validated: the pass does that)."""
        return self.cache is not None and key in self.cache.stages[stage.name]

    def cached_line(self, stage: Stage, key: str) -> CachedLine | None:
        """The record of `key` as stored (no validation: for a line this run wrote)."""
        if self.cache is None:
            return None
        line, _sealed = self.cache.stages[stage.name].lookup_line(key)
        return CachedLine.read(line) if line is not None else None

    def store(
        self,
        stage: Stage,
        key: str,
        output: dict[str, Any],
        provenance: Provenance,
        dropped: list[Dropped],
    ) -> None:
        """Cache a valid answer: the one record format of every path (local, batch, Ray)."""
        assert self.cache is not None, "a context opened without a cache stores nothing"
        entry: dict[str, Any] = {
            "stage": stage.name,
            "output": output,
            "provenance": provenance.model_dump(mode="json"),
        }
        if dropped:
            entry["dropped"] = [d.as_json() for d in dropped]
        self.cache.stages[stage.name].put(key, entry)
