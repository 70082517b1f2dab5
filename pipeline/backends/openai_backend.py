"""Backend for any OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp, LM Studio).

Transport failures (429, 5xx, timeouts, dropped connections) are retried here with tenacity,
exponential back-off with jitter, honouring Retry-After; the SDK's own retries are off so
the layers do not multiply. Client errors (400/401/403/404) are never retried: they stop
the run with one message, except a context-length 400, which fails only that record.
"""

from __future__ import annotations

import logging
import math
import random

import openai
from openai import AsyncOpenAI
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from pipeline.backends import Completion
from pipeline.config import Settings
from pipeline.errors import BackendError, FailureKind, FatalBackendError
from pipeline.limits import Limiter
from pipeline.stages import Stage

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 120.0
_NO_KEY = "no-key-configured"


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms` or `retry-after`), if it said."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    headers = response.headers
    try:
        if "retry-after-ms" in headers:
            return min(float(headers["retry-after-ms"]) / 1000.0, MAX_RETRY_AFTER_S)
        if "retry-after" in headers:
            return min(float(headers["retry-after"]), MAX_RETRY_AFTER_S)
    except ValueError:
        return None  # an HTTP-date Retry-After: fall back to exponential back-off
    return None


def _dropped_connection(exc: BaseException) -> bool:
    """aiohttp reports a closed connection as a connect timeout; find the real cause."""
    try:
        import aiohttp
    except ImportError:
        return False
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, aiohttp.ClientConnectionError) and not isinstance(
            seen, aiohttp.ServerTimeoutError
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


_STATUS_KINDS: dict[int, FailureKind] = {408: "http_408", 409: "http_409", 429: "rate_limit"}


def _failure_kind(exc: BaseException) -> FailureKind:
    if isinstance(exc, openai.APITimeoutError):
        return "connection" if _dropped_connection(exc) else "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, openai.RateLimitError):
        return "rate_limit"
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code >= 500:
            return "server_error"
        return _STATUS_KINDS.get(exc.status_code, "backend")
    return "backend"


def _fatal_message(exc: openai.APIStatusError, settings: Settings) -> str:
    where = settings.base_url or "api.openai.com"
    detail = _error_detail(exc)
    if exc.status_code == 401:
        return (
            f"the endpoint ({where}) rejected the API key (401: {detail}); "
            "set OPENAI_API_KEY to a valid key, or use --provider offline"
        )
    if exc.status_code == 403:
        return f"the endpoint ({where}) refused access (403: {detail})"
    if exc.status_code == 404:
        return (
            f"not found at {where} (404: {detail}); check the model name "
            f"({settings.model!r}) and base_url"
        )
    hint = ""
    if (
        exc.status_code == 400
        and settings.response_format == "json_schema"
        and ("response_format" in detail or "json_schema" in detail)
    ):
        hint = "; if the server lacks structured outputs, use --response-format json_object"
    return f"the endpoint ({where}) rejected the request ({exc.status_code}: {detail}){hint}"


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or (body.get("error") or {}).get("message")
        if message:
            return str(message)[:300]
    return str(exc.message)[:300]


def _is_context_length(exc: openai.APIStatusError) -> bool:
    text = f"{exc.body} {exc.message}".lower()
    return exc.status_code == 400 and ("context_length" in text or "maximum context" in text)


def _http_client(settings: Settings):
    """aiohttp transport by default: measured 1.8x the SDK's default (httpx2) requests/s at
    high concurrency on 2 cores (bench/throughput.py); `http_transport: httpx` opts out."""
    if settings.http_transport == "aiohttp":
        return openai.DefaultAioHttpClient(timeout=settings.timeout_s)
    return None


class OpenAIBackend:
    """AsyncOpenAI behind the run's limiter, with transport retries and fail-fast client errors."""

    name = "openai"
    can_reask = True
    # Transport back-off when the server gives no Retry-After: base * 2**(retry-1) + U(0, jitter).
    backoff_base_s = 0.5
    backoff_jitter_s = 1.0
    backoff_max_s = 30.0

    def __init__(self, settings: Settings, limiter: Limiter) -> None:
        self.settings = settings
        self.model = settings.model
        self.limiter = limiter
        key = settings.api_key.get_secret_value() if settings.api_key else _NO_KEY
        self.client = AsyncOpenAI(
            api_key=key,
            base_url=settings.base_url,
            max_retries=0,
            timeout=settings.timeout_s,
            http_client=_http_client(settings),
        )
        self.transport_retries = 0
        self._fatal: str | None = None  # once set, no further request is sent

    def _request(self, stage: Stage, messages: list[dict]) -> dict:
        params: dict = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
        }
        if self.settings.response_format == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": stage.name, "schema": stage.json_schema, "strict": True},
            }
        else:
            params["response_format"] = {"type": "json_object"}
        return params

    def _wait(self, retry_state) -> float:
        exc = retry_state.outcome.exception()
        asked = retry_after_s(exc)
        fallback = wait_exponential_jitter(
            multiplier=self.backoff_base_s, jitter=self.backoff_jitter_s, max=self.backoff_max_s
        )(retry_state)
        # A little jitter on Retry-After too, so paused tasks do not all resume at one instant.
        delay = asked * random.uniform(1.0, 1.1) if asked is not None else fallback
        if isinstance(exc, openai.RateLimitError):
            self.limiter.backoff(delay)
        self.transport_retries += 1
        log.info("transient %s; retrying in %.2fs", _failure_kind(exc), delay)
        return delay

    async def complete(self, stage: Stage, abstract: str, messages: list[dict]) -> Completion:
        """One chat completion, retried on transient transport failures."""
        params = self._request(stage, messages)
        est = math.ceil(sum(len(m["content"]) for m in messages) / 4) + self.settings.max_tokens
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_transient),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    async with self.limiter.slot(est) as usage:
                        if self._fatal is not None:
                            raise FatalBackendError(self._fatal)
                        response = await self.client.chat.completions.create(**params)
                        if response.usage is not None:
                            usage.actual = response.usage.total_tokens
        except openai.APIStatusError as exc:
            if _transient(exc):
                raise BackendError(
                    f"{_failure_kind(exc)} after {self.settings.max_retries + 1} attempts: "
                    f"{exc.status_code} {_error_detail(exc)}",
                    kind=_failure_kind(exc),
                ) from exc
            if _is_context_length(exc):
                raise BackendError(
                    f"abstract too long for the model's context ({_error_detail(exc)})",
                    kind="context_length",
                ) from exc
            # Requests queued behind this one must not be sent: the run stops at once.
            self._fatal = self._fatal or _fatal_message(exc, self.settings)
            raise FatalBackendError(self._fatal) from exc
        except openai.APIConnectionError as exc:
            raise BackendError(
                f"{_failure_kind(exc)} after {self.settings.max_retries + 1} attempts: {exc}",
                kind=_failure_kind(exc),
            ) from exc
        return _completion(response)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.close()


def _completion(response) -> Completion:
    if not response.choices:
        return Completion(content=None, finish_reason="empty")
    choice = response.choices[0]
    message = choice.message
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None)
    return Completion(
        content=message.content,
        finish_reason=choice.finish_reason,
        refusal=getattr(message, "refusal", None),
        tokens_in=usage.prompt_tokens if usage else 0,
        tokens_out=usage.completion_tokens if usage else 0,
        tokens_cached=(getattr(details, "cached_tokens", None) or 0) if details else 0,
    )
