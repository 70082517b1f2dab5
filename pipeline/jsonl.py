"""JSON Lines in and out (the jsonlines package): one reader with one error behaviour.

Lines are split on ``\\n`` only (the file is read as bytes), so a raw U+2028, U+0085 or CR
inside a JSON string is data, not a line break. A bad line is an `InputError` naming the
file and line, never a traceback; with ``torn_tail_ok`` a bad *last* line (a writer killed
mid-line) is skipped with a warning instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import jsonlines
import orjson
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from pipeline.errors import InputError
from pipeline.repair import replace_surrogates

log = logging.getLogger(__name__)


def _json_value(line: str) -> Any:
    return json.loads(line)


def iter_jsonl(
    path: Path,
    *,
    loads: Callable[[str], Any] = _json_value,
    torn_tail_ok: bool = False,
) -> Iterator[tuple[int, Any]]:
    """(line number, decoded line) for each non-blank line of `path`.

    `loads` decodes one line and raises ValueError (pydantic's ValidationError is one) when
    the line is bad; the first line of that error's message goes into the InputError.
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below; bytes, so only \n splits lines
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    lineno = 0

    def numbered() -> Iterator[bytes]:
        nonlocal lineno
        for line in fh:
            lineno += 1
            yield line

    pending: InputError | None = None
    # jsonlines decodes each line to str before it calls `loads`.
    with (
        fh,
        jsonlines.Reader(numbered(), loads=cast(Callable[[str | bytes], Any], loads)) as reader,
    ):
        while True:
            try:
                value = reader.read(skip_empty=True, allow_none=True)
            except EOFError:
                break
            except OSError as exc:
                raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
            except (jsonlines.InvalidLineError, RecursionError) as exc:
                if pending is not None:
                    raise pending from None
                pending = InputError(f"{path}:{lineno}: {_describe(exc)}")
                if not torn_tail_ok:
                    raise pending from exc
                continue
            if pending is not None:
                raise pending
            yield lineno, value
    if pending is not None:
        log.warning("%s", f"{pending}; skipped it as a torn last line")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "invalid JSON (nested too deeply)"
    cause = exc.__cause__ or exc
    if isinstance(cause, UnicodeDecodeError):
        return "not valid UTF-8"
    if isinstance(cause, RecursionError):
        return "invalid JSON (nested too deeply)"
    if isinstance(cause, ValidationError):
        err = cause.errors()[0]
        if err["type"] == "json_invalid":
            return f"invalid JSON ({err['ctx'].get('error', err['msg'])})"[:300]
        where = ".".join(str(p) for p in err["loc"]) or "line"
        return f"unexpected record shape at {where}: {err['msg']}"[:300]
    first = str(cause).strip().splitlines()
    return "invalid line: " + (first[0] if first else type(cause).__name__)[:300]


class JsonlWriter:
    """Appends one JSON value (or a pydantic model) per line to a binary file, flushed after
    each line (UTF-8 bytes throughout: no str round trip per line)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._writer = jsonlines.Writer(fh, dumps=self._dumps, flush=True)
        self._line = b""

    def _dumps(self, value: Any) -> bytes:
        self._line = _dumps(value)
        return self._line

    def write(self, value: Any) -> bytes:
        """Write one line; returns it (without its newline)."""
        self._writer.write(value)
        return self._line

    def close(self) -> None:
        """Close the writer (and the file it owns)."""
        self._writer.close()


def _dumps(value: Any) -> bytes:
    try:
        if isinstance(value, BaseModel):
            # model_dump_json() is this .decode()d: the same bytes, without the str copy
            return type(value).__pydantic_serializer__.to_json(value)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (UnicodeEncodeError, PydanticSerializationError):
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        return _utf8_json(value)


def _utf8_json(value: Any) -> bytes:
    """Compact JSON of `value` with any lone UTF-16 surrogate in its strings replaced by
    U+FFFD: nothing the tool writes holds one (no UTF-8 reader could read it back)."""
    text = json.dumps(replace_surrogates(value)[0], ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8")


def compact_json(value: Any) -> bytes:
    """Compact UTF-8 JSON of `value` (the report page, cache lines): orjson, ~10x json.dumps,
    which writes the same values (a float may be spelled differently: 1e-7 for 1e-07);
    json.dumps for what orjson refuses (an int past 64 bits, a non-str key, a lone
    surrogate, written as U+FFFD)."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return _utf8_json(value)
