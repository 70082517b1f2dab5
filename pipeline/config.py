"""Settings: config.yaml + environment + flags, merged once into one frozen object passed down."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from pipeline import yamltext
from pipeline.errors import ConfigError
from pipeline.pricing import Price, price_for
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.stages import stage_names

DEFAULT_CONFIG_FILE = Path("config.yaml")
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def public_url(url: str) -> str:
    """`url` without user:password (and with a trailing slash dropped): safe to print and store."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal keeps its brackets
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), parts.query, ""))


# Environment variables read (secrets only from here, never from files or flags).
ENV_API_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_MODEL = "DIGEST_MODEL"
ENV_PROVIDER = "DIGEST_PROVIDER"


class Settings(BaseModel):
    """Everything a run needs to know, immutable once built."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["auto", "openai", "offline"] = "auto"
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key: SecretStr | None = Field(default=None, repr=False, exclude=True)
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    http_transport: Literal["aiohttp", "httpx"] = "aiohttp"
    temperature: float = 0.0
    max_tokens: int = Field(default=1024, ge=16)
    timeout_s: float = Field(default=60.0, gt=0)
    # The endpoint check before the first request (GET /models and any probe together).
    preflight_timeout_s: float = Field(default=3.0, gt=0)
    max_concurrency: int = Field(default=16, ge=1, le=4096)
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)
    max_retries: int = Field(default=6, ge=0, description="transport retries per request")
    max_reasks: int = Field(default=2, ge=0, description="content re-asks per stage")
    stages: tuple[str, ...] = Field(default_factory=stage_names)
    prompts_dir: Path = PACKAGE_PROMPTS_DIR
    cache_dir: Path = Path("outputs/cache")
    out_dir: Path | None = None
    outputs_root: Path = Path("outputs")
    force: bool = False
    progress: bool = True
    engine: Literal["local", "ray"] = Field(
        default="local", description="local: one process; ray: the stages on Ray Data"
    )
    ray_actors: int | None = Field(
        default=None, ge=1, description="Ray engine actors (default: one per CPU Ray offers)"
    )
    prices: dict[str, Price] = Field(
        default_factory=dict, description="USD per 1M tokens by model, over the defaults"
    )

    @field_validator("stages", mode="before")
    @classmethod
    def _known_stages(cls, value: Any) -> tuple[str, ...]:
        known = stage_names()
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        if not isinstance(value, list | tuple) or not all(isinstance(s, str) for s in value):
            raise ValueError(f"a list of stage names (from {', '.join(known)})")
        unknown = [s for s in value if s not in known]
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; choose from {', '.join(known)}")
        if not value:
            raise ValueError("at least one stage is required")
        return tuple(s for s in known if s in value)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        # Messages never quote the URL: it may carry a password.
        try:
            parts = urlsplit(value.strip())
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError:
            raise ValueError("not a valid URL (check the port)") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "an http:// or https:// URL with a host, e.g. http://localhost:8000/v1"
            )
        return value.strip()

    @model_validator(mode="after")
    def _one_authorization(self) -> Settings:
        # A user:password in base_url is sent as HTTP Basic auth; the key as a Bearer token.
        # Both travel in the one Authorization header, so they cannot be combined.
        if self.api_key is not None and self.base_url and urlsplit(self.base_url).username:
            raise ValueError(
                "base_url carries a user:password and OPENAI_API_KEY is set too; an endpoint "
                "reads one Authorization header: use the key (Bearer) or the URL credentials "
                "(HTTP Basic, for a proxy), not both"
            )
        return self

    @property
    def resolved_provider(self) -> Literal["openai", "offline"]:
        """`auto` becomes `openai` when a key or base_url is configured, else `offline`."""
        if self.provider != "auto":
            return self.provider
        return "openai" if (self.api_key is not None or self.base_url) else "offline"

    @property
    def endpoint(self) -> str | None:
        """The endpoint answers come from, without any credentials (None for offline)."""
        if self.resolved_provider == "offline":
            return None
        return public_url(self.base_url or DEFAULT_BASE_URL)

    @property
    def price(self) -> Price | None:
        """The token price of the configured model (an estimate), or None when unknown."""
        if self.resolved_provider == "offline":
            return Price(input=0, output=0)
        return price_for(self.model, self.prices)

    @property
    def generation_params(self) -> dict[str, Any]:
        """Everything besides prompt, model and text that changes an answer: in every cache key.

        The endpoint is part of it, so answers of one server are never served as another's.
        """
        if self.resolved_provider == "offline":
            return {}
        return {
            "endpoint": self.endpoint,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": self.response_format,
        }

    def public_dict(self) -> dict[str, Any]:
        """Settings for the manifest: no secrets, paths as strings."""
        data = self.model_dump(mode="json", exclude={"api_key"})
        if self.base_url:
            data["base_url"] = public_url(self.base_url)  # never a user:password
        data["resolved_provider"] = self.resolved_provider
        data["api_key_set"] = self.api_key is not None
        return data


def load_settings(
    config_path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge config.yaml (if any), then environment, then explicit overrides (flags)."""
    env = os.environ if env is None else env
    data: dict[str, Any] = {}
    path = config_path or (DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None)
    if config_path is not None and not config_path.exists():
        raise ConfigError(f"config file not found: {config_path}")
    if path is not None:
        loaded = yamltext.load_file(path, what="config file") or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of settings")
        if "api_key" in loaded:
            raise ConfigError(f"{path}: api_key must come from ${ENV_API_KEY}, not a file")
        data.update(loaded)
    if env.get(ENV_API_KEY):
        data["api_key"] = env[ENV_API_KEY]
    if env.get(ENV_BASE_URL):
        data["base_url"] = env[ENV_BASE_URL]
    if env.get(ENV_MODEL):
        data["model"] = env[ENV_MODEL]
    if env.get(ENV_PROVIDER):
        data["provider"] = env[ENV_PROVIDER]
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid settings: {problems}") from exc
