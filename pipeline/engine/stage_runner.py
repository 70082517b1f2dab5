"""One stage of one abstract: served from the cache (re-validated), or asked and re-asked
until the answer validates or `max_reasks` is spent.

Content failures are re-asked with the validation error fed back; transport failures are
retried inside the backend and never reach a re-ask prompt. A fatal backend error (bad key,
unknown model) propagates and stops the run.

Every answer is repaired first (pipeline/repair.py and the stage's `repair`): fences, prose,
trailing commas, labels for ids, ...; the repairs applied are listed in the provenance.

Partial acceptance (stages with `items`, i.e. claims): the valid items of an answer are
kept and only the rejected ones are re-asked about, each with its error (never with a hint
of what to write instead: a re-asked item is judged exactly like a first one). A corrected
item joins the kept ones; an item still invalid after `max_reasks`, or one the model leaves
out of its answer to a re-ask (withdrawn), is dropped: the stage is ok with the valid
items, and each dropped item gets an errors.jsonl record (its own failure kind and index)
and is counted in the provenance and the manifest. Only when no item survives does the
stage fail. Sub-items a stage's screen leaves out for good (a tag nothing supports, a
keyword the abstract lacks) are dropped the same way, without a re-ask.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.backends import Backend, Completion
from pipeline.context import Dropped, RunContext
from pipeline.engine.progress import Progress
from pipeline.engine.stats import RunStats
from pipeline.errors import BackendError, FatalBackendError, OutputValidationError
from pipeline.ingest import Abstract, Source
from pipeline.rundir.models import (
    ErrorRecord,
    Provenance,
    SourceRef,
    StageError,
    StageResult,
    SummaryRecord,
)
from pipeline.stages import Stage
from pipeline.stages.base import Parsed, Rejected

log = logging.getLogger(__name__)


def dropped_of(rejected: list[Rejected], note: str = "") -> list[Dropped]:
    """Rejected items as dropped ones (`note` is added to each message)."""
    return [Dropped(r.index, r.error.kind, str(r.error) + note, r.item, r.field) for r in rejected]


@dataclass(frozen=True, slots=True)
class FirstAnswer:
    """An answer to the first request of a (stage, abstract) obtained elsewhere: a Batch API
    output line, validated and re-asked about like one the backend had just returned."""

    completion: Completion
    batch_id: str


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
    tokens_cached: int = 0
    dropped: list[Dropped] = field(default_factory=list)
    requests: int = 0
    repairs: list[str] = field(default_factory=list)  # repairs applied, over every attempt

    def provenance_fields(self) -> dict[str, Any]:
        """What the provenance of this answer records of it (attempts, tokens, drops,
        repairs)."""
        return {
            "attempts": self.attempts,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_cached": self.tokens_cached,
            "dropped": len(self.dropped),
            "repairs": self.repairs,
        }

    def error_message(self) -> str:
        """The last error, saying how many requests the stage took when that is not in it."""
        assert self.error is not None
        message = str(self.error)
        if isinstance(self.error, BackendError) and self.error.attempts != self.requests:
            message += f" ({self.requests} requests in all, re-asks included)"
        return message


def accepted_answer(parsed: Parsed, completion: Completion) -> Answer:
    """The Answer of a completion taken as it is: one attempt, no re-ask."""
    return Answer(
        parsed.output,
        None,
        completion.content,
        attempts=1,
        tokens_in=completion.tokens_in,
        tokens_out=completion.tokens_out,
        tokens_cached=completion.tokens_cached,
        dropped=dropped_of(parsed.dropped),
        requests=completion.requests,
        repairs=parsed.repairs,
    )


def check_completion(
    stage: Stage, abstract: str, completion: Completion, max_tokens: int, *, reask: bool = False
) -> Parsed:
    """A completion's valid part; refusals, cut-off answers and unusable ones raise (an
    answer to a re-ask about items may keep none: those items are then still pending)."""
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
    return stage.accept(completion.content, abstract, keep_none=reask)


class _Partial:
    """The items kept so far and the rejected ones still being re-asked about."""

    def __init__(self, field_name: str, parsed: Parsed) -> None:
        self.field = field_name
        self.base = parsed.output
        positions = _positions(field_name, parsed)
        self.kept: dict[int, Any] = dict(zip(positions, parsed.output[field_name], strict=True))
        self.pending: list[Rejected] = list(parsed.rejected)
        self.withdrawn: list[Rejected] = []  # pending items a re-ask answer left out
        self.next_index = len(positions) + len(parsed.rejected)

    def merge(self, parsed: Parsed) -> None:
        """Take a re-ask's answer: corrections join the kept items, the rest stay pending;
        a pending item that nothing in the answer stands for is withdrawn."""
        items = parsed.output[self.field]
        answered: list[tuple[int, Any, Rejected | None]] = [
            (i, item, None) for i, item in zip(_positions(self.field, parsed), items, strict=True)
        ]
        answered += [(r.index, r.item, r) for r in parsed.rejected]
        answered.sort(key=lambda t: t[0])
        # Asked for exactly the pending items in order: the same count keeps their indices.
        aligned = len(answered) == len(self.pending)
        pending: list[Rejected] = []
        repeated = {json.dumps(r.item, sort_keys=True): r.index for r in self.pending}
        open_items = {r.index: r for r in self.pending}
        for position, item, rejected in answered:
            if rejected is None and any(_same(item, kept) for kept in self.kept.values()):
                continue  # a kept item repeated (the whole answer again): it corrects nothing
            if aligned:
                index = self.pending[position].index
            elif rejected is not None and (
                (seen := repeated.get(json.dumps(rejected.item, sort_keys=True))) is not None
            ):
                index = seen  # the same rejected item again, e.g. the whole answer repeated
            else:
                found = _closest_open(item if rejected is None else rejected.item, open_items)
                if found is None:
                    found = self.next_index
                    self.next_index += 1
                index = found
            open_items.pop(index, None)
            if rejected is not None:
                pending.append(Rejected(index, rejected.item, rejected.error))
            else:
                self.kept[index] = item
        for r in open_items.values():
            self.withdrawn.append(r)
        self.pending = pending

    def output(self) -> dict[str, Any]:
        """The kept items in answer order."""
        return {**self.base, self.field: [self.kept[i] for i in sorted(self.kept)]}


def _positions(field_name: str, parsed: Parsed) -> list[int]:
    """Positions in the answer of the items that were kept."""
    total = len(parsed.output[field_name]) + len(parsed.rejected)
    rejected = {r.index for r in parsed.rejected}
    return [i for i in range(total) if i not in rejected]


def _closest_open(item: Any, open_items: dict[int, Rejected]) -> int | None:
    """The index of the pending item that `item` most likely corrects: the one sharing the
    most words of statement and evidence (None when none shares any)."""
    words = _claim_words(item)
    best, best_shared = None, 0
    for index, r in open_items.items():
        shared = len(words & _claim_words(r.item))
        if shared > best_shared:
            best, best_shared = index, shared
    return best


def _claim_words(item: Any) -> set[str]:
    if not isinstance(item, dict):
        return set()
    text = " ".join(str(item.get(k) or "") for k in ("statement", "evidence", "value"))
    return set(text.lower().split())


def _same(a: Any, b: Any) -> bool:
    # A model re-asked about one claim often repeats the kept ones: same span, same value.
    if isinstance(a, dict) and isinstance(b, dict) and "span" in a and "span" in b:
        return a["span"] == b["span"] and a.get("value") == b.get("value")
    return bool(a == b)


async def ask_until_valid(
    backend: Backend,
    stage: Stage,
    abstract: str,
    *,
    json_object: bool,
    max_reasks: int,
    max_tokens: int,
    first: Completion | None = None,
) -> Answer:
    """Ask, validate, and re-ask with the error fed back, at most `max_reasks` times; for a
    stage with items, re-ask about the rejected items only (see the module docstring).

    `first` is an answer to the first request obtained elsewhere (a Batch API output line):
    it is validated as if the backend had just returned it, and only re-asks are sent.
    """
    # The tags prompt lists the ids this abstract supports: not worth building for a
    # backend that never reads it.
    reads = getattr(backend, "reads_messages", True)
    messages = stage.messages(abstract, json_object_mode=json_object) if reads else []
    answer = Answer(None, None, None, 0, 0, 0)
    partial: _Partial | None = None
    final_dropped: list[Rejected] = []
    for _ in range(max_reasks + 1):
        answer.attempts += 1
        if first is not None:
            completion, first = first, None
        else:
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
        answer.tokens_cached += completion.tokens_cached
        answer.raw = completion.content
        try:
            parsed = check_completion(
                stage, abstract, completion, max_tokens, reask=partial is not None or max_reasks > 0
            )
        except OutputValidationError as exc:
            answer.error = exc
            if partial is not None:  # a re-ask about items failed as a whole: ask again
                followup = stage.reask_items(partial.pending)
                followup = f"{stage.template.render_reask(str(exc))}\n{followup}"
            else:
                followup = stage.template.render_reask(str(exc))
            messages = _followed(messages, completion.content, followup)
            continue
        answer.error = None
        answer.repairs = list(dict.fromkeys([*answer.repairs, *parsed.repairs]))
        final_dropped = parsed.dropped if partial is None else [*final_dropped, *parsed.dropped]
        if partial is None and not parsed.rejected:
            answer.output = parsed.output
            break
        if partial is None:
            assert stage.spec.items is not None
            partial = _Partial(stage.spec.items, parsed)
        else:
            partial.merge(parsed)
        if not partial.pending:
            break
        messages = _followed(messages, completion.content, stage.reask_items(partial.pending))
    if partial is not None:
        # A re-ask that failed in transport leaves its items dropped: say so in their records.
        failed = f"; the re-ask about it failed: {answer.error}" if answer.error else ""
        answer.output = partial.output()
        answer.error = None
        answer.dropped = dropped_of(partial.pending, failed) + dropped_of(
            partial.withdrawn, "; withdrawn: the answer to the re-ask about it left it out"
        )
        if not partial.kept and partial.pending:
            # No item survived and some are still invalid: the stage failed, and its one
            # record says why for each (an answer left with no items at all is an answer).
            first_kind = answer.dropped[0].kind
            message = "; ".join(d.message for d in answer.dropped)
            answer.output, answer.dropped = None, []
            answer.error = OutputValidationError(message, kind=first_kind, raw=answer.raw)  # type: ignore[arg-type]
    if answer.output is not None:
        answer.dropped = [*dropped_of(final_dropped), *answer.dropped]
    return answer


def _followed(messages: list[dict[str, str]], content: str | None, followup: str) -> list:
    return [
        *messages,
        {"role": "assistant", "content": content or ""},
        {"role": "user", "content": followup},
    ]


class RemoteAnswers(Protocol):
    """Answers being made elsewhere while the pass runs (the Ray engine's feed)."""

    def __contains__(self, key: str) -> bool:
        """True while the answer of `key` is still to come."""
        ...

    async def wait(self, key: str) -> None:
        """Until the answer of `key` is in `StageRunner.answered` (or will not come)."""
        ...

    def start(self) -> None:
        """Begin taking answers (in the running event loop)."""
        ...

    async def close(self) -> None:
        """Stop taking answers."""
        ...


@dataclass
class Answered:
    """An answer made outside this process (the Ray engine) and how long it took.

    `in_cache`: the answer was ok and is in the cache under its key; its output and dropped
    items were left out of `answer` (read back when it is settled), so a run of many
    thousand abstracts does not hold every output in memory until then.
    """

    answer: Answer
    latency_ms: float
    in_cache: bool = False


def report_progress(progress: Progress, stage: str, answer: Answer) -> None:
    """Tell the progress watcher that one asked stage finished."""
    progress.stage_done(
        stage,
        ok=answer.output is not None,
        cached=False,
        tokens_in=answer.tokens_in,
        tokens_out=answer.tokens_out,
        tokens_cached=answer.tokens_cached,
        dropped=len(answer.dropped),
    )


class StageRunner:
    """Runs stages of abstracts with one backend in one run context (its cache, keys and
    stages), keeping the run's counts."""

    def __init__(
        self,
        *,
        context: RunContext,
        backend: Backend,
        stats: RunStats,
        progress: Progress,
        on_error: Any,
        first_answers: dict[str, FirstAnswer] | None = None,
        answered: dict[str, Answered] | None = None,
    ) -> None:
        settings = context.settings
        self.context = context
        self.stages = context.stages
        self.backend = backend
        self.stats = stats
        self.progress = progress
        self.on_error = on_error
        self.json_object = settings.response_format == "json_object"
        self.max_reasks = settings.max_reasks if backend.can_reask else 0
        self.max_tokens = settings.max_tokens
        # cache key -> first answer; each is taken (removed) when its stage runs.
        self.first_answers = first_answers if first_answers is not None else {}
        # Answers made elsewhere (the Ray engine), by cache key: settled like fresh ones.
        self.answered = answered if answered is not None else {}
        # Answers still being made (Ray, while this pass runs): awaited by key.
        self.remote: RemoteAnswers | None = None

    def key(self, stage: Stage, abstract: Abstract) -> str:
        """Cache key of one (stage, abstract) under the run's settings."""
        return self.context.key(stage, abstract)

    def cached(
        self, stage: Stage, abstract: Abstract, key: str
    ) -> tuple[StageResult, list[Dropped]] | None:
        """The cached result of one stage, validated (see `RunContext.cached`)."""
        return self.context.cached(stage, abstract, key)

    def provenance_of(
        self,
        stage: Stage,
        key: str,
        answer: Answer,
        latency_ms: float,
        batch_id: str | None = None,
    ) -> Provenance:
        """The provenance of a fresh answer (`batch_id`: the Batch API batch that gave it)."""
        return self.context.provenance(
            stage,
            key,
            latency_ms=latency_ms,
            cached=False,
            batch_id=batch_id,
            **answer.provenance_fields(),
        )

    def _remote_answer(self, stage: Stage, key: str, remote: Answered) -> Answer | None:
        """The whole answer of `remote`, its output read back from the cache when it was left
        there (None when the line is gone: the stage is then served or asked as usual)."""
        if not remote.in_cache:
            return remote.answer
        cached = self.context.cached_line(stage, key)  # written this run
        if cached is None:
            return None
        return dataclasses.replace(
            remote.answer, output=cached.output, dropped=cached.dropped_items()
        )

    def _count_cached(
        self, stage: Stage, abstract: Abstract, result: StageResult, dropped: list[Dropped]
    ) -> None:
        stats = self.stats.stages[stage.name]
        stats.ok += 1
        stats.cache_hits += 1
        # The drops of a cached answer are reported again: every run folder tells all.
        self._report_dropped(stage, abstract, dropped, result.provenance.attempts)
        self.progress.stage_done(
            stage.name, ok=True, cached=True, tokens_in=0, tokens_out=0, dropped=len(dropped)
        )

    def cached_record(self, abstract: Abstract) -> SummaryRecord | None:
        """The summary record of an abstract whose every stage is cached, else None."""
        hits: dict[str, tuple[StageResult, list[Dropped]]] = {}
        for name, stage in self.stages.items():
            key = self.key(stage, abstract)
            if key in self.answered or (self.remote is not None and key in self.remote):
                return None
            hit = self.cached(stage, abstract, key)
            if hit is None:
                return None
            hits[name] = hit
        for name, stage in self.stages.items():
            self._count_cached(stage, abstract, *hits[name])
        return self.record(abstract, {name: hit[0] for name, hit in hits.items()})

    async def run_stage(self, stage: Stage, abstract: Abstract) -> StageResult:
        """One stage of one abstract: from cache, or asked (and re-asked) until valid; a
        first answer given for its key (`first_answers`) stands for the first request."""
        key = self.key(stage, abstract)
        if self.remote is not None and key in self.remote:
            await self.remote.wait(key)
        remote = self.answered.pop(key, None)
        answer = self._remote_answer(stage, key, remote) if remote is not None else None
        if remote is not None and answer is not None:
            # Asked on Ray: cached and shown in the progress when it arrived.
            provenance = self.provenance_of(stage, key, answer, remote.latency_ms)
            return self._settle(stage, abstract, key, answer, provenance, fresh=False)
        if (hit := self.cached(stage, abstract, key)) is not None:
            self._count_cached(stage, abstract, *hit)
            return hit[0]
        first = self.first_answers.pop(key, None)
        started = time.perf_counter()
        answer = await ask_until_valid(
            self.backend,
            stage,
            abstract.text,
            json_object=self.json_object,
            max_reasks=self.max_reasks,
            max_tokens=self.max_tokens,
            first=first.completion if first is not None else None,
        )
        # With a batch answer: the time of the re-asks only (a batch line has none).
        latency_ms = round((time.perf_counter() - started) * 1000, 1)
        provenance = self.provenance_of(
            stage, key, answer, latency_ms, batch_id=first.batch_id if first is not None else None
        )
        return self._settle(stage, abstract, key, answer, provenance)

    def _settle(
        self,
        stage: Stage,
        abstract: Abstract,
        key: str,
        answer: Answer,
        provenance: Provenance,
        *,
        fresh: bool = True,
    ) -> StageResult:
        stats = self.stats.stages[stage.name]
        stats.calls += answer.requests
        stats.tokens_in += answer.tokens_in
        stats.tokens_out += answer.tokens_out
        stats.tokens_cached += answer.tokens_cached
        if fresh:
            report_progress(self.progress, stage.name, answer)
        if answer.output is not None:
            if fresh:
                self.store(stage, key, answer, provenance)
            stats.ok += 1
            self._report_dropped(stage, abstract, answer.dropped, answer.requests)
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

    def store(self, stage: Stage, key: str, answer: Answer, provenance: Provenance) -> None:
        """Cache a valid answer (`RunContext.store`)."""
        assert answer.output is not None
        self.context.store(stage, key, answer.output, provenance, answer.dropped)
        self.stats.answers_cached += 1

    def _report_dropped(
        self, stage: Stage, abstract: Abstract, dropped: list[Dropped], attempts: int
    ) -> None:
        """One errors.jsonl record per item dropped from an ok output, and its count."""
        stats = self.stats.stages[stage.name]
        for d in dropped:
            stats.dropped_kinds[d.kind] += 1
            self.on_error(
                ErrorRecord(
                    id=abstract.id,
                    sources=sources_of(abstract),
                    stage=stage.name,
                    kind=d.kind,  # type: ignore[arg-type]
                    message=f"dropped from the output: {d.message}",
                    attempts=attempts,
                    raw=json.dumps(d.item, ensure_ascii=False),
                    item=d.index,
                    field=d.field,
                )
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
    return [_source_ref(s) for s in abstract.sources]


def _source_ref(s: Source) -> SourceRef:
    ref = s.ref
    if ref is None:
        return SourceRef(file=s.file, position=s.position, paper_id=s.paper_id)
    return SourceRef(  # the user's identity of the paper travels with its source
        file=s.file,
        position=s.position,
        paper_id=s.paper_id,
        number=ref.number,
        forum=ref.forum,
        authors=ref.authors,
        authorids=ref.authorids,
        keywords=ref.keywords,
        venue=ref.venue,
        affiliations=ref.affiliations,
    )
