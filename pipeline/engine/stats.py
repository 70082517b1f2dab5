"""Counts of a run: per stage (ok, failed, cache hits, requests, tokens, failure kinds) and
per record; they become the manifest's `counts` and the CLI's closing lines."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pipeline.rundir.models import StageCounts


@dataclass
class StageStats:
    """Counts for one stage over a run."""

    ok: int = 0
    failed: int = 0
    cache_hits: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    failure_kinds: Counter[str] = field(default_factory=Counter)
    dropped_kinds: Counter[str] = field(default_factory=Counter)

    def counts(self) -> StageCounts:
        """The manifest's view of these counts."""
        return StageCounts(
            ok=self.ok,
            failed=self.failed,
            cache_hits=self.cache_hits,
            backend_calls=self.calls,
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            tokens_cached=self.tokens_cached,
            failure_kinds=dict(self.failure_kinds),
            dropped=sum(self.dropped_kinds.values()),
            dropped_kinds=dict(self.dropped_kinds),
        )


@dataclass
class RunStats:
    """What happened in a run, for the manifest and the closing summary."""

    stages: dict[str, StageStats]
    records: int = 0
    records_failed: int = 0
    fatal: str | None = None
    # Valid answers this run put in the cache (on Ray, some may reach no stage's counts
    # before a fatal error stops the run).
    answers_cached: int = 0

    @property
    def answered(self) -> bool:
        """True once the run has any answer: asked and cached, or served from the cache."""
        return self.answers_cached > 0 or any(s.ok or s.cache_hits for s in self.stages.values())

    @classmethod
    def for_stages(cls, names: list[str] | tuple[str, ...]) -> RunStats:
        """Empty counts for these stages."""
        return cls(stages={name: StageStats() for name in names})

    @property
    def failed_stages(self) -> int:
        """Number of (abstract, stage) pairs that failed."""
        return sum(s.failed for s in self.stages.values())

    @property
    def tokens_in(self) -> int:
        """Input tokens over every stage and attempt."""
        return sum(s.tokens_in for s in self.stages.values())

    @property
    def tokens_out(self) -> int:
        """Output tokens over every stage and attempt."""
        return sum(s.tokens_out for s in self.stages.values())

    @property
    def tokens_cached(self) -> int:
        """Input tokens the provider served from its prompt cache (when it reports them)."""
        return sum(s.tokens_cached for s in self.stages.values())
