"""Backend for any OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp, LM Studio).

Transport failures (429, 5xx, timeouts, dropped connections, and 200s whose body is not a
chat completion) are retried here with tenacity, exponential back-off with jitter, honouring
Retry-After; the SDK's own retries are off so the layers do not multiply. Client errors
(400/401/403/404) and 501 are never retried: they stop the run with one message, except a
context-length 400, which fails only that record.

Each attempt is bounded as a whole by `timeout_s`, from connect to the last byte of the body
(the transports' own timeouts act per read, so a server that trickles bytes would never end).
The body is parsed here rather than by the SDK, which hands back a `str`, a `list` or an
object with `None`/string fields for bodies it cannot read. Every string that came from the
endpoint (answers, error bodies) is redacted before it is returned or raised.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import socket
import ssl
from collections import Counter
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from pipeline.backends import Completion
from pipeline.config import DEFAULT_BASE_URL, Settings, public_url
from pipeline.errors import BackendError, FailureKind, FatalBackendError
from pipeline.limits import Limiter
from pipeline.redact import Redactor, basic_token, secrets_of, url_credentials
from pipeline.repair import without_surrogates
from pipeline.stages import Stage

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 120.0
_NO_KEY = "no-key-configured"
_SNIPPET = 120


class MalformedResponse(Exception):
    """A 200 whose body is not what the request asks for (a chat completion, a model list),
    or (`http_200` false) an answer the HTTP client could not read at all."""

    def __init__(self, message: str, *, http_200: bool = True) -> None:
        super().__init__(message)
        self.http_200 = http_200


class AttemptTimedOut(Exception):
    """One attempt did not finish, connect to last byte, within its time limit."""


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, MalformedResponse | AttemptTimedOut | openai.APIConnectionError):
        return True  # APIConnectionError includes APITimeoutError
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return status in (408, 409, 429) or (status >= 500 and status not in (501, 505))
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


def _causes(exc: BaseException):
    seen: BaseException | None = exc
    depth = 0
    while seen is not None and depth < 20:
        yield seen
        os_error = getattr(seen, "os_error", None)  # aiohttp.ClientConnectorError
        if isinstance(os_error, BaseException):
            yield os_error
        seen = seen.__cause__ or seen.__context__
        depth += 1


def _dropped_connection(exc: BaseException) -> bool:
    """aiohttp reports a closed connection as a connect timeout; find the real cause."""
    try:
        import aiohttp
    except ImportError:
        return False
    return any(
        isinstance(seen, aiohttp.ClientConnectionError)
        and not isinstance(seen, aiohttp.ServerTimeoutError)
        for seen in _causes(exc)
    )


def connection_cause(exc: BaseException) -> str | None:
    """What really failed under a connection error: refused, DNS, TLS (None if unknown)."""
    for seen in _causes(exc):
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "the host name does not resolve"
        if isinstance(seen, ssl.SSLError):
            return f"TLS failed ({seen.reason or seen})"
        text = str(seen)
        if "Connection refused" in text or "Errno 111" in text:
            return "connection refused"
        if "Name or service not known" in text or "name resolution" in text:
            return "the host name does not resolve"
    return None


_STATUS_KINDS: dict[int, FailureKind] = {408: "http_408", 409: "http_409", 429: "rate_limit"}


def _failure_kind(exc: BaseException) -> FailureKind:
    if isinstance(exc, MalformedResponse):
        return "malformed_response"
    if isinstance(exc, AttemptTimedOut):
        return "timeout"
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


def error_detail(exc: openai.APIStatusError) -> str:
    """The server's own message of an error response (at most 300 characters)."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        message = body.get("message") or (
            error.get("message") if isinstance(error, dict) else error
        )
        if message:
            return str(message)[:300]
    return str(exc.message)[:300]


def _attempt_detail(exc: BaseException) -> str:
    """One line on what went wrong in an attempt (endpoint text not yet redacted)."""
    if isinstance(exc, openai.APIStatusError):
        return f"{exc.status_code} {error_detail(exc)}"
    if isinstance(exc, openai.APIConnectionError):
        cause = connection_cause(exc)
        if cause is not None:
            return cause
        if _dropped_connection(exc):
            return "the server closed the connection without an answer"
        root = list(_causes(exc))[-1]
        if root is not exc:
            return f"{exc} ({type(root).__name__}: {_one_line(root)})"
        return str(exc)
    return str(exc)


def _is_context_length(exc: openai.APIStatusError) -> bool:
    text = f"{exc.body} {exc.message}".lower()
    return exc.status_code == 400 and ("context_length" in text or "maximum context" in text)


# --- reading bodies ---------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def _snippet(body: bytes) -> str:
    text = body[:_SNIPPET].decode("utf-8", "replace")
    return json.dumps(text + ("..." if len(body) > _SNIPPET else ""), ensure_ascii=False)


def read_json(body: bytes, content_type: str, what: str) -> Any:
    """The JSON of a 200 body, or MalformedResponse saying what it is instead of `what`."""
    kind = content_type.split(";")[0].strip() or "no content-type"
    try:
        return json.loads(body)
    except RecursionError:
        raise MalformedResponse(
            f"a JSON body nested too deeply to read ({len(body)} bytes), not {what}"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        if "html" in kind or body.lstrip()[:1] == b"<":
            raise MalformedResponse(f"an HTML page ({kind}), not {what}") from None
        reason = f"{exc.msg}: byte {exc.pos}" if isinstance(exc, json.JSONDecodeError) else exc
        raise MalformedResponse(
            f"a body that is not JSON ({reason} of {len(body)}, {kind}: {_snippet(body)}), "
            f"not {what}"
        ) from None


def _token_count(usage: dict, field: str) -> int:
    value = usage.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedResponse(
            f"a chat completion whose usage.{field} is {json.dumps(value)[:40]}, not a number"
        )
    if isinstance(value, float) and not value.is_integer() or value < 0:
        raise MalformedResponse(
            f"a chat completion whose usage.{field} is {value}, not a count of tokens"
        )
    return int(value)


def parse_completion(body: bytes, content_type: str) -> Completion:
    """A chat-completion body as a Completion; MalformedResponse when it is not one."""
    return completion_of(read_json(body, content_type, "a chat completion"))


def completion_of(data: Any) -> Completion:
    """A chat completion already read from JSON as a Completion; MalformedResponse when it
    is not one (a Batch API output line's body)."""
    if not isinstance(data, dict):
        raise MalformedResponse(f"a JSON {_json_type(data)}, not a chat completion object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            raise MalformedResponse(f"an error with status 200: {str(message)[:300]}")
        if choices == []:
            raise MalformedResponse("a chat completion with no choices")
        raise MalformedResponse(
            f"a JSON object whose choices is {_json_type(choices)}, not an array"
        )
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        where = "choices[0].message" if isinstance(choice, dict) else "choices[0]"
        found = message if isinstance(choice, dict) else choice
        raise MalformedResponse(
            f"a chat completion whose {where} is {_json_type(found)}, not an object"
        )
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise MalformedResponse(
            f"a chat completion whose choices[0].message.content is {_json_type(content)}"
        )
    refusal = message.get("refusal")
    finish_reason = choice.get("finish_reason")
    usage = data.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise MalformedResponse(f"a chat completion whose usage is {_json_type(usage)}")
    usage = usage or {}
    return Completion(
        # A lone surrogate escape ("\\ud83d") decodes to a str that cannot be written as UTF-8.
        content=without_surrogates(content) if content is not None else None,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        refusal=without_surrogates(refusal) if isinstance(refusal, str) and refusal else None,
        tokens_in=_token_count(usage, "prompt_tokens"),
        tokens_out=_token_count(usage, "completion_tokens"),
        tokens_cached=_cached_tokens(usage),
    )


def _cached_tokens(usage: dict[str, Any]) -> int:
    """Prompt tokens served from the provider's prompt cache, when the usage reports them."""
    details = usage.get("prompt_tokens_details")
    return _token_count(details, "cached_tokens") if isinstance(details, dict) else 0


def parse_model_list(body: bytes, content_type: str) -> list[str]:
    """The model ids of a `GET /models` body; MalformedResponse when it is not a model list."""
    data = read_json(body, content_type, "a model list")
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        shape = f"a JSON {_json_type(data)}"
        if isinstance(data, dict):
            shape += f" with keys {sorted(data)[:6]}"
        raise MalformedResponse(f"{shape}, not a model list ({{'data': [...]}})")
    return [str(m["id"]) for m in models if isinstance(m, dict) and "id" in m]


# --- the client -------------------------------------------------------------------------


async def _bounded(request: Awaitable[Any], timeout_s: float) -> tuple[bytes, str]:
    """(body, content type) of one SDK raw-response request, bounded as a whole."""
    try:
        async with asyncio.timeout(timeout_s):
            raw = await request
            return raw.content, raw.headers.get("content-type", "")
    except TimeoutError:
        raise AttemptTimedOut(f"no complete answer within timeout_s={timeout_s:g}s") from None
    except openai.OpenAIError:
        raise
    except Exception as exc:  # e.g. aiohttp's "Bad status line", which the SDK lets through
        raise MalformedResponse(
            f"something that is not HTTP ({type(exc).__name__}: {_one_line(exc)[:200]})",
            http_200=False,
        ) from exc


def _http_client(settings: Settings):
    """aiohttp transport by default: measured 1.8x the SDK's default (httpx2) requests/s at
    high concurrency on 2 cores (bench/throughput.py); `http_transport: httpx` opts out."""
    if settings.http_transport == "aiohttp":
        return openai.DefaultAioHttpClient(timeout=settings.timeout_s)
    return None


def _auth(settings: Settings) -> dict[str, Any]:
    """The SDK client's key, URL without credentials, and headers (a URL's user:password
    becomes HTTP Basic)."""
    url = settings.base_url or DEFAULT_BASE_URL
    headers: dict[str, str] = {}
    credentials = url_credentials(url)
    if credentials is not None:
        # Config refuses a key together with URL credentials: one Authorization header.
        headers["Authorization"] = "Basic " + basic_token(*credentials)
    key = settings.api_key.get_secret_value() if settings.api_key else _NO_KEY
    return {"api_key": key, "base_url": public_url(url), "default_headers": headers or None}


def _client(settings: Settings) -> AsyncOpenAI:
    """The SDK client of the chat requests (no SDK retries: `complete` retries)."""
    return AsyncOpenAI(
        **_auth(settings),
        max_retries=0,
        timeout=settings.timeout_s,
        http_client=_http_client(settings),
    )


def sync_client(settings: Settings, *, max_retries: int, timeout_s: float) -> openai.OpenAI:
    """A blocking SDK client with the same endpoint and credentials (Files and Batches API
    calls of `digest batch`, retried by the SDK itself)."""
    return openai.OpenAI(**_auth(settings), max_retries=max_retries, timeout=timeout_s)


def request_body(settings: Settings, stage: Stage, messages: list[dict]) -> dict:
    """The chat-completions body of one request (also each line's `body` in a Batch API file)."""
    params: dict = {
        "model": settings.model,
        "messages": messages,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    }
    if settings.response_format == "json_schema":
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": stage.name, "schema": stage.json_schema, "strict": True},
        }
    else:
        params["response_format"] = {"type": "json_object"}
    return params


class OpenAIBackend:
    """AsyncOpenAI behind the run's limiter, with transport retries and fail-fast client errors."""

    name = "openai"
    can_reask = True
    reads_messages = True
    # Transport back-off when the server gives no Retry-After: base * 2**(retry-1) + U(0, jitter).
    backoff_base_s = 0.5
    backoff_jitter_s = 1.0
    backoff_max_s = 30.0

    def __init__(self, settings: Settings, limiter: Limiter) -> None:
        self.settings = settings
        self.model = settings.model
        self.limiter = limiter
        self.where = settings.endpoint or public_url(DEFAULT_BASE_URL)
        self.redact = Redactor(secrets_of(settings))
        self.client = _client(settings)
        # Requests actually sent, per stage, transport retries included (not queued calls).
        self.requests_sent: Counter[str] = Counter()
        self.retries_by_stage: Counter[str] = Counter()
        self._fatal: str | None = None  # once set, no further request is sent

    @property
    def transport_retries(self) -> int:
        """Transport retries over the run (each one is also in `requests_sent`)."""
        return sum(self.retries_by_stage.values())

    def _request(self, stage: Stage, messages: list[dict]) -> dict:
        return request_body(self.settings, stage, messages)

    def _wait(self, retry_state) -> float:
        exc = retry_state.outcome.exception()
        asked = retry_after_s(exc)
        fallback = wait_exponential_jitter(
            multiplier=self.backoff_base_s, jitter=self.backoff_jitter_s, max=self.backoff_max_s
        )(retry_state)
        # A little jitter on Retry-After too, so paused tasks do not all resume at one instant.
        return asked * random.uniform(1.0, 1.1) if asked is not None else fallback

    def _before_retry(self, stage: Stage):
        # tenacity computes the wait before it checks the stop condition, so counting (and
        # pausing the run) here, where a retry is certain, keeps the figures exact.
        def before_sleep(retry_state) -> None:
            exc = retry_state.outcome.exception()
            delay = retry_state.upcoming_sleep
            if isinstance(exc, openai.RateLimitError):
                self.limiter.backoff(delay)
            self.retries_by_stage[stage.name] += 1
            log.info("transient %s; retrying in %.2fs", _failure_kind(exc), delay)

        return before_sleep

    async def _send(self, params: dict, timeout_s: float) -> tuple[bytes, str]:
        """One POST /chat/completions, bounded as a whole by `timeout_s`: (body, content type).

        The SDK's generic `post` sends the body as it is. `chat.completions.create` would
        first walk every value of it against the parameter types (the JSON schema of
        `response_format` included), which for a body that is plain JSON already changes
        nothing and cost 1.4 ms of CPU per request, half of the SDK's share
        (bench/sdk_request.py). Errors, auth, headers and the transport are the same.
        """
        return await _bounded(
            self.client.post("/chat/completions", cast_to=httpx2.Response, body=params),
            timeout_s,
        )

    async def complete(self, stage: Stage, abstract: str, messages: list[dict]) -> Completion:
        """One chat completion, retried on transient transport failures."""
        params = self._request(stage, messages)
        est = math.ceil(sum(len(m["content"]) for m in messages) / 4) + self.settings.max_tokens
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_transient),
            before_sleep=self._before_retry(stage),
            reraise=True,
        )
        sent = 0
        try:
            async for attempt in retrying:
                with attempt:
                    async with self.limiter.slot(est) as usage:
                        if self._fatal is not None:
                            raise FatalBackendError(self._fatal, attempts=sent)
                        sent += 1
                        self.requests_sent[stage.name] += 1
                        body, content_type = await self._send(params, self.settings.timeout_s)
                        completion = parse_completion(body, content_type)
                        usage.actual = completion.tokens_in + completion.tokens_out or None
        except openai.APIStatusError as exc:
            if _transient(exc):
                raise self._exhausted(exc, sent) from exc
            if _is_context_length(exc):
                raise BackendError(
                    self.redact(f"abstract too long for the model's context ({error_detail(exc)})"),
                    kind="context_length",
                    attempts=sent,
                ) from exc
            # Requests queued behind this one must not be sent: the run stops at once.
            self._fatal = self._fatal or self.redact(self._fatal_message(exc))
            raise FatalBackendError(self._fatal, attempts=sent) from exc
        except (openai.APIConnectionError, MalformedResponse, AttemptTimedOut) as exc:
            raise self._exhausted(exc, sent) from exc
        return replace(
            completion,
            content=self.redact.optional(completion.content),
            refusal=self.redact.optional(completion.refusal),
            requests=sent,
        )

    def _exhausted(self, exc: BaseException, sent: int) -> BackendError:
        kind = _failure_kind(exc)
        detail = _attempt_detail(exc)
        if isinstance(exc, MalformedResponse):
            detail = f"the endpoint answered {_answered(exc)}"
        tries = "attempt" if sent == 1 else "attempts"
        return BackendError(
            self.redact(f"{kind} after {sent} {tries}: {detail}"), kind=kind, attempts=sent
        )

    def _fatal_message(self, exc: openai.APIStatusError) -> str:
        where, settings = self.where, self.settings
        detail = error_detail(exc)
        if exc.status_code == 401 and url_credentials(settings.base_url) is not None:
            return (
                f"the endpoint ({where}) rejected the user:password of base_url (401: "
                f"{detail}); fix them, or drop them and set OPENAI_API_KEY"
            )
        if exc.status_code == 401:
            return (
                f"the endpoint ({where}) rejected the API key (401: {detail}); "
                "set OPENAI_API_KEY to a valid key, or use --provider offline"
            )
        if exc.status_code == 403:
            refused = f"the endpoint ({where}) refused access (403: {detail}); "
            model, choose = settings.model, "or choose a model it can use (--model)"
            if settings.api_key is not None:
                return refused + (
                    f"the API key is valid but has no access to model {model!r} or to this "
                    f"project: check the key's project and organization permissions, {choose}"
                )
            if url_credentials(settings.base_url) is not None:
                return refused + (
                    f"the user:password of base_url is valid but has no access to model "
                    f"{model!r} there: check that user's permissions at the server or proxy, "
                    f"{choose}"
                )
            return refused + (
                "no credentials were sent: set OPENAI_API_KEY (or a user:password in "
                "base_url), or choose a model it serves (--model)"
            )
        if exc.status_code == 404:
            return (
                f"not found at {where} (404: {detail}); check the model name "
                f"({settings.model!r}) and base_url"
            )
        hint = ""
        if settings.response_format == "json_schema" and (
            exc.status_code == 501
            or exc.status_code == 400
            and ("response_format" in detail or "json_schema" in detail)
        ):
            hint = "; if the server lacks structured outputs, use --response-format json_object"
        if exc.status_code == 501:
            return f"the endpoint ({where}) does not implement this request (501: {detail}){hint}"
        return f"the endpoint ({where}) rejected the request ({exc.status_code}: {detail}){hint}"

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.close()

    # --- preflight --------------------------------------------------------------------

    async def preflight(self) -> None:
        """One cheap request before any stage request, so a dead, wrong or unauthorized
        endpoint ends the run at once with one message naming the cause and the fix.

        `GET /models` first: no tokens, and every major server has it. A server without it
        (404/405/501), with an odd one, or that forbids listing models to this key (403: a
        restricted key) gets one tiny chat completion (max_tokens=1) instead.
        Both together get `preflight_timeout_s`, connect included: the probe gets what is
        left.
        """
        bound = self.settings.preflight_timeout_s
        deadline = asyncio.get_running_loop().time() + bound
        try:
            request = self.client.models.with_raw_response.list(timeout=bound)
            models = parse_model_list(*await _bounded(request, bound))
        except (openai.APIStatusError, MalformedResponse) as exc:
            status = getattr(exc, "status_code", 200)
            if status == 401 or (status < 500 and status not in (403, 404, 405, 501, 200)):
                raise self._preflight_error(exc, "GET /models") from exc
            # 403: a restricted key may chat without the right to list models, so the
            # chat probe decides (a key without access is refused there too).
            if status in (403, 404, 405, 501) or isinstance(exc, MalformedResponse):
                await self._probe_completion(first=exc, deadline=deadline)
                return
            log.warning("preflight: GET %s/models answered %s; going on", self.where, status)
            return
        except (AttemptTimedOut, openai.APIConnectionError) as exc:
            raise self._preflight_error(exc, "GET /models") from exc
        if models and self.settings.model not in models:
            shown = ", ".join(models[:8]) + (", ..." if len(models) > 8 else "")
            log.warning(
                "model %r is not in the models %s lists (%s); requests may get 404",
                self.settings.model,
                self.where,
                shown,
            )

    async def _probe_completion(self, first: BaseException, deadline: float) -> None:
        params = {
            "model": self.settings.model,
            "messages": [{"role": "user", "content": "Reply with OK."}],
            "max_tokens": 1,
            "temperature": 0,
        }
        left = max(deadline - asyncio.get_running_loop().time(), 0.001)
        try:
            body, content_type = await self._send(params, left)
            parse_completion(body, content_type)
        except AttemptTimedOut as exc:
            if isinstance(first, openai.APIStatusError):
                # GET /models got an HTTP error status: a live server without /models, whose
                # first completion may be slow (a cold model). Stage requests have timeout_s.
                log.warning(
                    "preflight: GET %s/models answered %s and a 1-token chat completion did "
                    "not answer within %gs; going on (each request may take timeout_s=%gs)",
                    self.where,
                    first.status_code,
                    self.settings.preflight_timeout_s,
                    self.settings.timeout_s,
                )
                return
            raise self._preflight_error(exc, "POST /chat/completions", first) from exc
        except (openai.APIStatusError, MalformedResponse) as exc:
            status = getattr(exc, "status_code", 200)
            # An OpenAI-style error about the probe itself (400, 422) or a busy server still
            # shows a live, compatible endpoint that took the key: the run may go on.
            if status in (400, 422, 429) or (status >= 500 and status != 501):
                log.info("preflight: POST /chat/completions answered %s; going on", status)
                return
            raise self._preflight_error(exc, "POST /chat/completions", first) from exc
        except openai.APIConnectionError as exc:
            raise self._preflight_error(exc, "POST /chat/completions", first) from exc
        log.info("preflight: %s has no usable GET /models; a chat completion works", self.where)

    def _preflight_error(
        self, exc: BaseException, request: str, first: BaseException | None = None
    ) -> FatalBackendError:
        return FatalBackendError(self.redact(self._preflight_message(exc, request, first)))

    def _preflight_message(
        self, exc: BaseException, request: str, first: BaseException | None
    ) -> str:
        where = self.where
        root = "base_url should be the server's OpenAI-compatible root, usually ending in /v1"
        if isinstance(exc, AttemptTimedOut | openai.APITimeoutError) and (
            not _dropped_connection(exc)
        ):
            return (
                f"no answer from {where} within {self.settings.preflight_timeout_s:g}s "
                f"({request}); check that the server is up and reachable from here, and "
                "base_url (a slow proxy: raise preflight_timeout_s in config.yaml)"
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = connection_cause(exc) or _attempt_detail(exc)
            host = public_url(where).split("/")[2]
            if cause == "connection refused":
                return (
                    f"cannot connect to {where}: connection refused (nothing listens at "
                    f"{host}); start the server, or fix base_url"
                )
            if cause == "the host name does not resolve":
                name = host.rsplit(":", 1)[0]
                return (
                    f"cannot connect to {where}: the host name {name} does not resolve; "
                    "check base_url"
                )
            return f"cannot connect to {where}: {cause}; check base_url and the server"
        if isinstance(exc, openai.APIStatusError) and exc.status_code in (401, 403, 404):
            if exc.status_code == 404 and first is not None:
                return (
                    f"not found at {where}: GET /models and POST /chat/completions both "
                    f"answered 404 ({error_detail(exc)}); {root}, and check the model name "
                    f"({self.settings.model!r})"
                )
            return self._fatal_message(exc)
        before = f"GET /models answered {_answered(first)}, then " if first is not None else ""
        return f"{where} is not an OpenAI-compatible API: {before}{request} answered {_answered(exc)}; {root}"


def _answered(exc: BaseException) -> str:
    """What a request got, as the preflight message says it."""
    if isinstance(exc, MalformedResponse):
        return f"200 with {exc}" if exc.http_200 else str(exc)
    if isinstance(exc, openai.APIStatusError):
        return f"{exc.status_code} ({error_detail(exc)})"
    return str(exc)
