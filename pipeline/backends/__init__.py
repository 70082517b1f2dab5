"""Backends turn a stage's chat messages into a raw answer; the runner validates it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pipeline.config import Settings
    from pipeline.limits import Limiter
    from pipeline.stages import Stage
    from pipeline.taxonomy import Taxonomy


@dataclass(frozen=True, slots=True)
class Completion:
    """One raw answer: its text (or refusal), why it stopped, and the tokens it cost."""

    content: str | None
    finish_reason: str | None = "stop"
    refusal: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0  # of tokens_in, served from the provider's prompt cache


class Backend(Protocol):
    """What the runner needs from a backend."""

    name: str
    model: str
    can_reask: bool

    async def complete(self, stage: Stage, abstract: str, messages: list[dict]) -> Completion:
        """Answer one request (transport retries are the backend's business)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def make_backend(settings: Settings, limiter: Limiter, taxonomy: Taxonomy) -> Backend:
    """The backend the settings ask for (`auto` already resolved by Settings)."""
    if settings.resolved_provider == "offline":
        from pipeline.backends.offline import OfflineBackend

        return OfflineBackend(taxonomy)
    from pipeline.backends.openai_backend import OpenAIBackend

    return OpenAIBackend(settings, limiter)
