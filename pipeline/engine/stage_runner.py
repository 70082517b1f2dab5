"""One stage of one abstract: served from the cache (re-validated), or asked and re-asked
until the answer validates or `max_reasks` is spent.

Content failures are re-asked with the validation error fed back; transport failures are
retried inside the backend and never reach a re-ask prompt. A fatal backend error (bad key,
unknown model) propagates and stops the run.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from pipeline.backends import Backend, Completion
from pipeline.cache import Cache, cache_key
from pipeline.engine.progress import Progress
from pipeline.engine.stats import RunStats
from pipeline.errors import BackendError, FatalBackendError, OutputValidationError
from pipeline.ingest import Abstract
from pipeline.rundir.models import (
    ErrorRecord,
    Provenance,
    SourceRef,
    StageError,
    StageResult,
    SummaryRecord,
)
from pipeline.schemas import SCHEMA_VERSION
from pipeline.stages import Stage

log = logging.getLogger(__name__)


@dataclass
class Answer:
    """The outcome of asking one stage: a valid output or the last error, and what it cost
    (`attempts` asks, re-asks included; `requests` sent, transport retries included)."""

    output: dict[str, Any] | None
    error: OutputValidationError | BackendError | None
    raw: str | None
    attempts: int
    tokens_in: int
    tokens_out: int
    requests: int = 0

    def error_message(self) -> str:
        """The last error, saying how many requests the stage took when that is not in it."""
        assert self.error is not None
        message = str(self.error)
        if isinstance(self.error, BackendError) and self.error.attempts != self.requests:
            message += f" ({self.requests} requests in all, re-asks included)"
        return message


def check_completion(stage: Stage, abstract: str, completion: Completion, max_tokens: int) -> dict:
    """A completion's validated output; refusals, cut-off answers and invalid ones raise."""
    if completion.refusal:
        raise OutputValidationError(
            f"the model refused: {completion.refusal[:200]}", kind="refusal", raw=None
        )
    if completion.finish_reason == "length":
        raise OutputValidationError(
            f"the answer was cut off at max_tokens={max_tokens}; answer more briefly",
            kind="truncated",
            raw=completion.content,
        )
    return stage.parse(completion.content, abstract)


async def ask_until_valid(
    backend: Backend,
    stage: Stage,
    abstract: str,
    *,
    json_object: bool,
    max_reasks: int,
    max_tokens: int,
) -> Answer:
    """Ask, validate, and re-ask with the error fed back, at most `max_reasks` times."""
    messages = stage.messages(abstract, json_object_mode=json_object)
    answer = Answer(None, None, None, 0, 0, 0)
    for _ in range(max_reasks + 1):
        answer.attempts += 1
        try:
            completion = await backend.complete(stage, abstract, messages)
        except FatalBackendError:
            raise
        except BackendError as exc:
            answer.requests += exc.attempts
            answer.error = exc
            break
        answer.requests += completion.requests
        answer.tokens_in += completion.tokens_in
        answer.tokens_out += completion.tokens_out
        answer.raw = completion.content
        try:
            answer.output = check_completion(stage, abstract, completion, max_tokens)
            answer.error = None
            break
        except OutputValidationError as exc:
            answer.error = exc
            messages = [
                *messages,
                {"role": "assistant", "content": completion.content or ""},
                {"role": "user", "content": stage.template.render_reask(str(exc))},
            ]
    return answer


class StageRunner:
    """Runs stages of abstracts with one backend and one cache, keeping the run's counts."""

    def __init__(
        self,
        *,
        stages: dict[str, Stage],
        backend: Backend,
        cache: Cache,
        stats: RunStats,
        progress: Progress,
        on_error: Any,
        params: dict[str, Any],
        json_object: bool,
        max_reasks: int,
        max_tokens: int,
        force: bool,
    ) -> None:
        self.stages = stages
        self.backend = backend
        self.cache = cache
        self.stats = stats
        self.progress = progress
        self.on_error = on_error
        self.params = params
        self.json_object = json_object
        self.max_reasks = max_reasks if backend.can_reask else 0
        self.max_tokens = max_tokens
        self.force = force

    def key(self, stage: Stage, abstract: Abstract) -> str:
        """Cache key of one (stage, abstract) under the current settings."""
        return cache_key(
            stage=stage.name,
            prompt_hash=stage.prompt_hash,
            schema_version=SCHEMA_VERSION,
            backend=self.backend.name,
            model=self.backend.model,
            params=self.params,
            abstract_text=abstract.text,
        )

    def _provenance(self, stage: Stage, key: str, **fields: Any) -> Provenance:
        return Provenance(
            backend=self.backend.name,
            model=self.backend.model,
            endpoint=self.params.get("endpoint"),
            prompt_hash=stage.prompt_hash,
            schema_version=SCHEMA_VERSION,
            cache_key=key,
            **fields,
        )

    def cached(self, stage: Stage, abstract: Abstract, key: str) -> StageResult | None:
        """The cached result of one stage, validated like a fresh answer, or None (a miss)."""
        if self.force:
            return None
        hit = self.cache.stages[stage.name].get(key)
        if hit is None:
            return None
        try:
            output = stage.validate(hit["output"], abstract.text)
            provenance = Provenance.model_validate({**hit["provenance"], "cached": True})
        except (OutputValidationError, ValueError, KeyError, TypeError) as exc:
            log.warning(
                "%s: cached %s output for %s failed validation (%s); asking again",
                self.cache.stages[stage.name].path,
                stage.name,
                abstract.id,
                exc,
            )
            return None
        return StageResult(status="ok", output=output, provenance=provenance)

    def _count_cached(self, stage: Stage) -> None:
        stats = self.stats.stages[stage.name]
        stats.ok += 1
        stats.cache_hits += 1
        self.progress.stage_done(stage.name, ok=True, cached=True, tokens_in=0, tokens_out=0)

    def cached_record(self, abstract: Abstract) -> SummaryRecord | None:
        """The summary record of an abstract whose every stage is cached, else None."""
        results: dict[str, StageResult] = {}
        for name, stage in self.stages.items():
            result = self.cached(stage, abstract, self.key(stage, abstract))
            if result is None:
                return None
            results[name] = result
        for stage in self.stages.values():
            self._count_cached(stage)
        return self.record(abstract, results)

    async def run_stage(self, stage: Stage, abstract: Abstract) -> StageResult:
        """One stage of one abstract: from cache, or asked (and re-asked) until valid."""
        key = self.key(stage, abstract)
        if (hit := self.cached(stage, abstract, key)) is not None:
            self._count_cached(stage)
            return hit
        started = time.perf_counter()
        answer = await ask_until_valid(
            self.backend,
            stage,
            abstract.text,
            json_object=self.json_object,
            max_reasks=self.max_reasks,
            max_tokens=self.max_tokens,
        )
        provenance = self._provenance(
            stage,
            key,
            attempts=answer.attempts,
            tokens_in=answer.tokens_in,
            tokens_out=answer.tokens_out,
            latency_ms=round((time.perf_counter() - started) * 1000, 1),
            cached=False,
        )
        return self._settle(stage, abstract, key, answer, provenance)

    def _settle(
        self, stage: Stage, abstract: Abstract, key: str, answer: Answer, provenance: Provenance
    ) -> StageResult:
        stats = self.stats.stages[stage.name]
        stats.calls += answer.requests
        stats.tokens_in += answer.tokens_in
        stats.tokens_out += answer.tokens_out
        self.progress.stage_done(
            stage.name,
            ok=answer.output is not None,
            cached=False,
            tokens_in=answer.tokens_in,
            tokens_out=answer.tokens_out,
        )
        if answer.output is not None:
            self.cache.stages[stage.name].put(
                key,
                {
                    "stage": stage.name,
                    "output": answer.output,
                    "provenance": provenance.model_dump(mode="json"),
                },
            )
            stats.ok += 1
            return StageResult(status="ok", output=answer.output, provenance=provenance)
        error = answer.error
        assert error is not None
        stats.failed += 1
        stats.failure_kinds[error.kind] += 1
        message = answer.error_message()
        self.on_error(
            ErrorRecord(
                id=abstract.id,
                sources=sources_of(abstract),
                stage=stage.name,
                kind=error.kind,
                message=message,
                attempts=answer.requests,
                raw=answer.raw if answer.raw is not None else error.raw,
            )
        )
        return StageResult(
            status="failed",
            error=StageError(kind=error.kind, message=message),
            provenance=provenance,
        )

    def record(self, abstract: Abstract, results: dict[str, StageResult]) -> SummaryRecord:
        """The summary record of one abstract."""
        return SummaryRecord(
            id=abstract.id,
            title=abstract.title,
            sources=sources_of(abstract),
            abstract=abstract.text,
            stages=results,
        )


def sources_of(abstract: Abstract) -> list[SourceRef]:
    """The run folder's form of an abstract's sources."""
    return [
        SourceRef(file=s.file, position=s.position, paper_id=s.paper_id) for s in abstract.sources
    ]
