"""The run folder's records as pydantic models: one summary per abstract, one error per failed
stage, and the manifest. `RunWriter` writes them and `RunReader` reads them; nothing else
parses a run folder."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from pipeline.errors import FailureKind
from pipeline.repair import without_surrogates

MAX_RAW_CHARS = 100_000  # of a raw answer kept in errors.jsonl

RunStatus = Literal["running", "ok", "failed", "interrupted", "fatal"]
# A run folder whose manifest says one of these holds every abstract of its inputs.
COMPLETE_STATUSES = frozenset({"ok", "failed"})


class SourceRef(BaseModel):
    """Where an abstract appeared (file, 1-based position) and the user's identity of it there.

    `paper_id` ... `affiliations` come from the input (pipeline/ingest_formats.py): the id,
    submission number, OpenReview forum, authors, author ids, keywords, venue and author
    affiliations. Empty ones are left out of summaries.jsonl.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str
    position: int
    paper_id: str | None = None
    number: str | None = None
    forum: str | None = None
    authors: tuple[str, ...] = ()
    authorids: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    venue: str | None = None
    affiliations: tuple[str, ...] = ()

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if k in _SOURCE_KEPT or v not in (None, (), [])}


_SOURCE_KEPT = frozenset({"file", "position"})


class Provenance(BaseModel):
    """How a stage output was made: backend, model, prompt, attempts, tokens, latency."""

    model_config = ConfigDict(extra="forbid")
    backend: str
    model: str
    endpoint: str | None = None  # the server that answered (no credentials); None offline
    prompt_hash: str
    schema_version: int
    cache_key: str
    attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0  # of tokens_in, served from the provider's prompt cache (if reported)
    latency_ms: float = 0.0
    cached: bool = False
    dropped: int = 0  # items (claims) left out of the output as invalid; see errors.jsonl
    batch_id: str | None = None  # the Batch API batch that answered it (`digest batch`)
    # Deterministic repairs applied to the answer before validation (pipeline/repair.py and
    # the stage's own: code_fence, trailing_comma, tag_resolved, ...); empty when none.
    repairs: list[str] = Field(default_factory=list)


class StageError(BaseModel):
    """Why a stage failed, as in errors.jsonl."""

    model_config = ConfigDict(extra="forbid")
    kind: FailureKind
    message: str


class StageResult(BaseModel):
    """One stage of one abstract: ok with an output, or failed with an error."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["ok", "failed"]
    output: dict[str, Any] | None = None
    error: StageError | None = None
    provenance: Provenance


class SummaryRecord(BaseModel):
    """One line of summaries.jsonl: an abstract and the result of every stage the run ran."""

    model_config = ConfigDict(extra="forbid")
    id: str
    title: str | None = None
    sources: list[SourceRef] = Field(default_factory=list)
    abstract: str
    stages: dict[str, StageResult]

    def output(self, stage: str) -> dict[str, Any] | None:
        """The output of `stage` when it ended ok, else None (failed or not run)."""
        result = self.stages.get(stage)
        return result.output if result is not None and result.status == "ok" else None

    @property
    def failed(self) -> bool:
        """True when some stage of this abstract failed."""
        return any(r.status != "ok" for r in self.stages.values())


class ErrorRecord(BaseModel):
    """One line of errors.jsonl: a failed (abstract, stage) with the last raw answer, or
    (`item` set) one item dropped from an ok stage's output, with the item as raw JSON."""

    model_config = ConfigDict(extra="forbid")
    id: str
    sources: list[SourceRef] = Field(default_factory=list)
    stage: str
    kind: FailureKind
    message: str
    attempts: int
    raw: str | None = None
    item: int | None = None  # index of the dropped item in the answer; None: the stage failed
    field: str | None = None  # the list the item was dropped from, when not the stage's items

    @field_validator("raw", "message")
    @classmethod
    def _writable(cls, value: str | None) -> str | None:
        """Lone surrogates replaced (not writable as UTF-8); a runaway raw answer cut to
        MAX_RAW_CHARS with its length said."""
        if value is None:
            return None
        if len(value) > MAX_RAW_CHARS:
            value = f"{value[:MAX_RAW_CHARS]}... ({len(value):,} characters in all)"
        return without_surrogates(value)


class StageCounts(BaseModel):
    """What happened to one stage over a run."""

    model_config = ConfigDict(extra="forbid")
    ok: int = 0
    failed: int = 0
    cache_hits: int = 0
    backend_calls: int = 0  # requests sent, transport retries included (never queued calls)
    transport_retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    failure_kinds: dict[str, int] = Field(default_factory=dict)
    dropped: int = 0  # items dropped from ok outputs (one errors.jsonl record each)
    dropped_kinds: dict[str, int] = Field(default_factory=dict)


class Counts(BaseModel):
    """Input and record counts; they add up (records_written == unique on a complete run)."""

    model_config = ConfigDict(extra="forbid")
    inputs: int
    unique: int
    duplicates: int
    skipped_inputs: int
    records_written: int
    records_with_failures: int
    stages: dict[str, StageCounts]


class Tokens(BaseModel):
    """Tokens summed over every attempt of every stage."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)
    input: int = Field(0, alias="in")
    output: int = Field(0, alias="out")
    cached: int = 0  # of `in`, served from the provider's prompt cache (when it says so)


class TaxonomyRef(BaseModel):
    """Which taxonomy a run used."""

    model_config = ConfigDict(extra="forbid")
    version: int
    hash: str


class Manifest(BaseModel):
    """manifest.json: settings (no secrets), counts, tokens, versions and hashes of a run."""

    model_config = ConfigDict(extra="forbid")
    tool: str = "abstract-digest"
    version: str
    status: RunStatus
    fatal_error: str | None = None
    started_at: str
    elapsed_s: float
    inputs: list[str]
    config: dict[str, Any]
    backend: str
    model: str
    counts: Counts
    tokens: Tokens
    requests_sent: int = 0  # over every stage: the sum of their backend_calls
    transport_retries: int = 0
    rate_limit_pauses: int = 0
    skipped_inputs: list[str] = Field(default_factory=list)
    # Files under the input folders that were not read, each with why (unsupported type,
    # not a regular file, a symlink out of the folder); at most the first 100.
    ignored_files: list[str] = Field(default_factory=list)
    schema_version: int
    prompts: dict[str, str]
    taxonomy: TaxonomyRef
    cache_dir: str

    @property
    def complete(self) -> bool:
        """True when the run finished (every abstract has a record), failures or not."""
        return self.status in COMPLETE_STATUSES
