"""What a run would do, before it spends anything (`digest run --dry-run`): the requests to
be made per stage (results already in the cache are not asked again), estimated tokens and
estimated cost. Nothing is sent and nothing is written.

Input tokens are estimated as characters / 4 of the exact messages (plus the JSON schema in
json_schema mode); output tokens from each stage's typical answer (`StageSpec.output_tokens`,
measured on the realistic-answer corpus). Re-asks are not included: they add to both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pipeline.config import Settings
from pipeline.context import RunContext
from pipeline.ingest import IngestResult
from pipeline.pricing import Price, format_cost, format_tokens


@dataclass
class StagePlan:
    """One stage over the run's abstracts."""

    calls: int = 0
    cached: int = 0
    tokens_in: int = 0
    tokens_out: int = 0


@dataclass
class Plan:
    """Every stage of a run that has not started."""

    abstracts: int
    backend: str
    model: str
    price: Price | None
    stages: dict[str, StagePlan] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        """Requests the run would send (first attempts)."""
        return sum(s.calls for s in self.stages.values())

    @property
    def tokens_in(self) -> int:
        """Estimated input tokens of those requests."""
        return sum(s.tokens_in for s in self.stages.values())

    @property
    def tokens_out(self) -> int:
        """Estimated output tokens of their answers."""
        return sum(s.tokens_out for s in self.stages.values())

    @property
    def cost(self) -> float | None:
        """Estimated dollars (no prompt-cache discount assumed), None without a price."""
        if self.price is None:
            return None
        return self.price.cost(self.tokens_in, 0, self.tokens_out)


def plan_run(settings: Settings, ingest: IngestResult) -> Plan:
    """The plan of a run of `settings` over `ingest`: requests, tokens, cost."""
    json_object = settings.response_format == "json_object"
    with RunContext(settings, cache="read") as context:
        identity = context.identity
        plan = Plan(len(ingest.abstracts), identity.name, identity.model, settings.price)
        for name, stage in context.stages.items():
            schema = "" if json_object else stage.json_schema_text
            sp = plan.stages[name] = StagePlan()
            for abstract in ingest.abstracts:
                if context.cached(stage, abstract, context.key(stage, abstract)) is not None:
                    sp.cached += 1
                    continue
                messages = stage.messages(abstract.text, json_object_mode=json_object)
                chars = sum(len(m["content"]) for m in messages) + len(schema)
                sp.calls += 1
                sp.tokens_in += math.ceil(chars / 4)
                sp.tokens_out += stage.spec.output_tokens
    return plan


def describe(plan: Plan) -> list[str]:
    """The lines `digest run --dry-run` prints."""
    lines = [
        f"dry run: {plan.abstracts} abstracts, backend {plan.backend} (model {plan.model}); "
        "nothing is sent"
    ]
    for name, s in plan.stages.items():
        lines.append(
            f"  {name:<7} requests {s.calls:>7}  cached {s.cached:>7}  "
            f"~{format_tokens(s.tokens_in)} input, ~{format_tokens(s.tokens_out)} output tokens"
        )
    total = (
        f"total: {plan.calls} requests, ~{format_tokens(plan.tokens_in)} input and "
        f"~{format_tokens(plan.tokens_out)} output tokens (estimates; re-asks add more)"
    )
    lines.append(total)
    if plan.backend == "offline":
        lines.append("estimated cost: $0 (offline backend, no endpoint)")
    elif plan.cost is None:
        lines.append(f"estimated cost: no price for {plan.model!r} (set prices in config.yaml)")
    else:
        lines.append(
            f"estimated cost: {format_cost(plan.cost)} at {plan.model} list prices "
            "(an estimate, before any prompt-cache discount)"
        )
    return lines
