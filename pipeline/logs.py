"""Logging setup for the CLI: one stderr handler at the level -v/-vv ask for, secrets redacted.

The secrets are those of the process (the key and base_url password from the environment at
start-up, then those of the settings a command loads: `add_secrets`); `redact` applies the
same masking to the CLI's own messages.

A library may call `logging.basicConfig()` while being imported (absl does, through
rouge-score), which turns a later `basicConfig(level=...)` into a no-op: -v/-vv would
silently do nothing and lines could print twice. So the handler is installed explicitly,
replacing such a default handler, and it writes to whatever `sys.stderr` is at the time.
"""

from __future__ import annotations

import logging
import sys

from pipeline.redact import REDACTED, Redactor
from pipeline.text import terminal_safe

__all__ = ["REDACTED", "RedactSecrets", "add_secrets", "redact", "setup_logging"]

FORMAT = "%(levelname)s %(name)s: %(message)s"
# The process's secrets: every log record and every CLI message goes through it.
_PROCESS_REDACTOR = Redactor()


def add_secrets(*secrets: str) -> None:
    """Mask these secrets too, in log records and in `redact`, from now on."""
    _PROCESS_REDACTOR.add(*secrets)


def redact(text: str) -> str:
    """`text` with the process's secrets (and anything key-shaped) masked."""
    return _PROCESS_REDACTOR(text)


class RedactSecrets(logging.Filter):
    """Masks API keys (the configured ones and anything shaped like one) in every record."""

    def __init__(self, secrets: tuple[str, ...] = (), redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor or Redactor()
        self.redactor.add(*secrets)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by a marker."""
        return self.redactor(text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


class _StderrHandler(logging.StreamHandler):
    """A StreamHandler bound to the current `sys.stderr`, not the one at creation time."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass

    def format(self, record: logging.LogRecord) -> str:
        # A message may quote a file name or a title: nothing in it may drive the terminal.
        return terminal_safe(super().format(record), keep_newlines=True)


def _is_default_handler(handler: logging.Handler) -> bool:
    """A handler left by a bare `logging.basicConfig()` (default format, plain StreamHandler)."""
    fmt = getattr(handler.formatter, "_fmt", None)
    return type(handler) is logging.StreamHandler and fmt == logging.BASIC_FORMAT


def setup_logging(level: int, secrets: tuple[str, ...] = ()) -> None:
    """Log records at `level` and above to stderr, with `secrets` (and key-shaped text) masked."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, _StderrHandler) or _is_default_handler(handler):
            root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    add_secrets(*secrets)
    handler.addFilter(RedactSecrets(redactor=_PROCESS_REDACTOR))
    root.addHandler(handler)
    root.setLevel(level)
