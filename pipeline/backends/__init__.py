"""Backends turn a stage's chat messages into a raw answer; the runner validates it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pipeline.errors import FatalBackendError

if TYPE_CHECKING:
    from pipeline.backends.openai_backend import OpenAIBackend
    from pipeline.config import Settings
    from pipeline.limits import Limiter
    from pipeline.stages import Stage
    from pipeline.taxonomy import Taxonomy

OPENAI_HOST = "api.openai.com"


@dataclass(frozen=True, slots=True)
class Completion:
    """One raw answer: its text (or refusal), why it stopped, the tokens it cost, and how
    many requests it took (transport retries included)."""

    content: str | None
    finish_reason: str | None = "stop"
    refusal: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0  # of tokens_in, served from the provider's prompt cache
    requests: int = 1


class Backend(Protocol):
    """What the runner needs from a backend."""

    name: str
    model: str
    can_reask: bool
    # False when `complete` ignores `messages` (the offline backend): they are not built.
    reads_messages: bool

    async def complete(self, stage: Stage, abstract: str, messages: list[dict]) -> Completion:
        """Answer one request (transport retries are the backend's business)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def check_openai_settings(settings: Settings) -> None:
    """Refuse at once what no request can fix: api.openai.com without a key."""
    endpoint = settings.endpoint or ""
    if settings.api_key is None and endpoint.split("/")[2:3] == [OPENAI_HOST]:
        raise FatalBackendError(
            f"no API key for {endpoint}: export OPENAI_API_KEY=sk-... (or point --base-url "
            "at a local server, or use --provider offline)"
        )


class LazyOpenAIBackend:
    """The openai backend, built (SDK imported, preflight run) on the first request only.

    A run whose every result is cached never imports the SDK or contacts the endpoint. The
    first request runs the preflight while the others wait; if it fails, every waiting
    request fails with the same fatal error and none is sent.
    """

    name = "openai"
    can_reask = True
    reads_messages = True

    def __init__(self, settings: Settings, limiter: Limiter) -> None:
        self.settings = settings
        self.model = settings.model
        self._limiter = limiter
        self._backend: OpenAIBackend | None = None
        self._failed: str | None = None
        self._lock: asyncio.Lock | None = None

    async def _get(self) -> OpenAIBackend:
        if self._backend is not None:
            return self._backend
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._failed is not None:
                raise FatalBackendError(self._failed, attempts=0)
            if self._backend is None:
                from pipeline.backends.openai_backend import OpenAIBackend

                backend = OpenAIBackend(self.settings, self._limiter)
                try:
                    await backend.preflight()
                except FatalBackendError as exc:
                    self._failed = str(exc)
                    await backend.aclose()
                    raise FatalBackendError(self._failed, attempts=0) from None
                self._backend = backend
        return self._backend

    async def complete(self, stage: Stage, abstract: str, messages: list[dict]) -> Completion:
        """Answer through the real backend (built on first use)."""
        return await (await self._get()).complete(stage, abstract, messages)

    @property
    def requests_sent(self) -> Mapping[str, int]:
        """Requests actually sent per stage, transport retries included."""
        return self._backend.requests_sent if self._backend is not None else {}

    @property
    def retries_by_stage(self) -> Mapping[str, int]:
        """Transport retries per stage."""
        return self._backend.retries_by_stage if self._backend is not None else {}

    @property
    def transport_retries(self) -> int:
        """Transport retries over the run."""
        return self._backend.transport_retries if self._backend is not None else 0

    async def aclose(self) -> None:
        """Close the real backend if it was built."""
        if self._backend is not None:
            await self._backend.aclose()


def make_backend(settings: Settings, limiter: Limiter, taxonomy: Taxonomy) -> Backend:
    """The backend the settings ask for (`auto` already resolved by Settings)."""
    if settings.resolved_provider == "offline":
        from pipeline.backends.offline import OfflineBackend

        return OfflineBackend(taxonomy)
    check_openai_settings(settings)
    return LazyOpenAIBackend(settings, limiter)
