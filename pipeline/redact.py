"""Secret redaction for every string that is printed, logged or stored.

The secrets of a run are the API key and the user:password of a base_url, in every form they
travel in (plain, percent-encoded, inside a Basic header). Anything shaped like an OpenAI key
or a bearer / basic token is masked too, so a key the endpoint echoes in an error body is
caught even when it is not ours.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

if TYPE_CHECKING:
    from pipeline.config import Settings

REDACTED = "<redacted>"
# OpenAI-style keys (sk-..., sk-proj-...), wherever they appear.
_KEY_RE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
# Bearer tokens (with a digit, so "bearer instruments" in a model's prose survives) and the
# value of any Authorization header; the word before the token is kept.
_TOKEN_RE = re.compile(
    r"((?i:bearer)\s+)(?=\S*\d)[A-Za-z0-9_\-.=~+/]{8,}"
    r"""|((?i:authorization)['"]?\s*[:=]\s*['"]?(?i:basic|bearer)\s+)[^\s'",)}\]]+"""
)
# Shorter secrets are only masked as whole words, so a 4-letter password does not turn every
# word containing it into a marker.
_SUBSTRING_MIN = 8


def url_credentials(url: str | None) -> tuple[str, str] | None:
    """(user, password) percent-decoded from a URL's userinfo, or None when it has none."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.username is None and parts.password is None:
        return None
    return unquote(parts.username or ""), unquote(parts.password or "")


def basic_token(user: str, password: str) -> str:
    """The base64 token of an HTTP Basic Authorization header."""
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def secrets_of(settings: Settings) -> tuple[str, ...]:
    """Every secret a run's settings hold, in each form it may appear in."""
    found: list[str] = []
    if settings.api_key is not None:
        found.append(settings.api_key.get_secret_value())
    found += url_secrets(settings.base_url)
    return tuple(found)


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The password (and user:password, Basic token) of a URL, plain and percent-encoded."""
    credentials = url_credentials(url)
    if credentials is None:
        return ()
    user, password = credentials
    forms = [password, quote(password, safe=""), f"{user}:{password}", basic_token(user, password)]
    return tuple(f for f in forms if f)


class Redactor:
    """Replaces the given secrets and anything key-shaped with a marker."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._long: set[str] = set()
        self._short: set[str] = set()
        self._short_re: re.Pattern[str] | None = None
        self.add(*secrets)

    def add(self, *secrets: str) -> None:
        """Also mask these secrets from now on."""
        for secret in secrets:
            if not secret or not secret.strip():
                continue
            (self._long if len(secret) >= _SUBSTRING_MIN else self._short).add(secret)
        if self._short:
            words = "|".join(re.escape(s) for s in sorted(self._short, key=len, reverse=True))
            self._short_re = re.compile(rf"(?<![A-Za-z0-9])(?:{words})(?![A-Za-z0-9])")

    def __call__(self, text: str) -> str:
        """`text` with every secret replaced by a marker."""
        for secret in sorted(self._long, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        if self._short_re is not None:
            text = self._short_re.sub(REDACTED, text)
        text = _KEY_RE.sub(REDACTED, text)
        return _TOKEN_RE.sub(lambda m: (m.group(1) or m.group(2)) + REDACTED, text)

    def optional(self, text: str | None) -> str | None:
        """Like calling it, for a text that may be None."""
        return None if text is None else self(text)
