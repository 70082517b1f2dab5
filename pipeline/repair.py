"""Deterministic repair of a raw model answer into JSON, before any validation.

Small models served without schema enforcement wrap their JSON in fences and prose, leave
trailing commas, copy LaTeX backslashes into JSON strings, and so on. `decode_answer` undoes
each of these, in a fixed order, and names every repair it made (the names go into the
answer's provenance). A repair only ever changes *presentation*: it never changes, adds or
removes a number or a word of content (`json_repair`'s fix is kept only when the words and
numbers of the repaired JSON are exactly those of the text, in the same order).

Repairs, in order (the note each one leaves):

- `code_fence`: the JSON inside a ```json fence;
- `prose_around`: text before or after the JSON value ("Here is the JSON object: ...");
- `latex_backslash`: a backslash of LaTeX inside a JSON string doubled, so `\\alpha`,
  `\\%` and `\\rightarrow` (which JSON would read as a carriage return + "ightarrow") stay
  what the model wrote;
- `trailing_comma`: a comma before `}` or `]` removed;
- `json_repair`: anything else the `json_repair` library fixes (single quotes, a missing
  comma or quote), kept only under the words-and-numbers check above; an answer cut off
  before its last bracket is never completed;
- `lone_surrogate`: a lone UTF-16 surrogate escape (`"\\ud83d"`) in a string replaced by
  U+FFFD (such a string cannot be written as UTF-8).

What cannot be decoded raises `OutputValidationError` (kind `invalid_json`); so does JSON
nested deeper than `MAX_DEPTH` or an answer longer than `MAX_ANSWER_CHARS`, which no stage
answer needs and which would otherwise cost recursion or quadratic time downstream.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import OutputValidationError

MAX_ANSWER_CHARS = 100_000  # a claims answer of 12 claims is ~5,000 characters
MAX_DEPTH = 16  # {"claims": [{...}]} is 3 deep

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[{}\[\]]")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_VALID_ESCAPE = frozenset('"\\/bfnrtu')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_WORD = re.compile(r"[^\W_]+")
# TeX commands that begin with a letter JSON reads as an escape (\b \f \n \r \t): written
# with one backslash by a model, they are LaTeX, not a control character plus letters.
_TEX_COMMANDS = frozenset(
    [
        "backslash",
        "bar",
        "beta",
        "bf",
        "big",
        "bigcap",
        "bigcup",
        "bigg",
        "biggl",
        "biggr",
        "bigl",
        "bigm",
        "bigoplus",
        "bigotimes",
        "bigr",
        "bigsqcup",
        "bigvee",
        "bigwedge",
        "binom",
        "bm",
        "bmod",
        "boldsymbol",
        "bot",
        "bowtie",
        "boxed",
        "breve",
        "bullet",
        "fbox",
        "flat",
        "footnote",
        "footnotesize",
        "forall",
        "frac",
        "frown",
        "nabla",
        "natural",
        "ne",
        "nearrow",
        "neg",
        "neq",
        "newline",
        "nexists",
        "ngeq",
        "ni",
        "nleftarrow",
        "nleq",
        "nmid",
        "noindent",
        "nolimits",
        "nonumber",
        "normalsize",
        "not",
        "notin",
        "nparallel",
        "nrightarrow",
        "nsim",
        "nsubseteq",
        "nu",
        "nwarrow",
        "Rightarrow",
        "rVert",
        "rangle",
        "rbrace",
        "rbrack",
        "rceil",
        "ref",
        "rfloor",
        "rho",
        "right",
        "rightarrow",
        "rightharpoonup",
        "rightleftharpoons",
        "rlap",
        "rm",
        "rvert",
        "tag",
        "tan",
        "tanh",
        "tau",
        "tbinom",
        "text",
        "textasciitilde",
        "textbf",
        "textcolor",
        "textit",
        "textmd",
        "textnormal",
        "textrm",
        "textsc",
        "textsf",
        "textsl",
        "textstyle",
        "textsubscript",
        "textsuperscript",
        "texttt",
        "textup",
        "tfrac",
        "therefore",
        "theta",
        "tilde",
        "times",
        "tiny",
        "to",
        "top",
        "triangle",
        "triangleq",
        "tt",
    ]
)


@dataclass
class Decoded:
    """A decoded answer and the repairs that made it decodable."""

    data: Any
    repairs: list[str] = field(default_factory=list)


def decode_answer(raw: str) -> Decoded:
    """The JSON value in a raw answer, repaired where presentation broke it (see module)."""
    if len(raw) > MAX_ANSWER_CHARS:
        raise OutputValidationError(
            f"the answer has {len(raw):,} characters; at most {MAX_ANSWER_CHARS:,} allowed",
            kind="invalid_json",
            raw=raw[:2000],
        )
    repairs: list[str] = []
    text = raw.strip().lstrip("\ufeff")
    fenced = None if text[:1] in ("{", "[") else _fenced(text)
    if fenced is not None:
        inner, outside = fenced
        repairs.append("code_fence")
        if outside:
            repairs.append("prose_around")
        text = inner
    start = _value_start(text)
    if start is None:
        raise OutputValidationError(
            "answer is not valid JSON (no JSON value)", kind="invalid_json", raw=raw
        )
    if start > 0 and "prose_around" not in repairs:
        repairs.append("prose_around")
    body = text[start:]
    _check_depth(body, raw)
    escaped = _latex_escapes(body)
    if escaped != body:
        repairs.append("latex_backslash")
        body = escaped
    data, end = _decode(body)
    if data is _FAILED:
        fixed = _without_trailing_commas(body)
        if fixed != body:
            data, end = _decode(fixed)
            if data is not _FAILED:
                repairs.append("trailing_comma")
                body = fixed
    if data is _FAILED:
        data = _library_repair(body)
        end = len(body)
        if data is _FAILED:
            error = _first_error(body)
            raise OutputValidationError(
                f"answer is not valid JSON ({error})", kind="invalid_json", raw=raw
            )
        repairs.append("json_repair")
    if body[end:].strip() and "prose_around" not in repairs:
        repairs.append("prose_around")
    data, replaced = replace_surrogates(data)
    if replaced:
        repairs.append("lone_surrogate")
    return Decoded(data, repairs)


class _Failed:
    pass


_FAILED: Any = _Failed()


def _fenced(text: str) -> tuple[str, bool] | None:
    """The first fenced block that holds a JSON value, and whether text surrounds the
    fence, when the text has fences."""
    if "```" not in text:
        return None
    for m in _FENCE.finditer(text):
        inner = m.group(1).strip()
        if inner[:1] in ("{", "["):
            return inner, bool(text[: m.start()].strip() or text[m.end() :].strip())
    # An opening fence never closed (a model that stopped after the JSON).
    opened = re.search(r"```[A-Za-z0-9_-]*[ \t]*\n", text)
    if opened is not None and text[opened.end() :].lstrip()[:1] in ("{", "["):
        return text[opened.end() :].strip(), bool(text[: opened.start()].strip())
    return None


def _value_start(text: str) -> int | None:
    """Where the answer's JSON value starts: the text itself when it starts with `{` or `[`,
    else the first `{` or `[` whose bracketed part holds a quoted string (prose may hold
    brackets: "[1]", "[see below]"); else the first opener at all."""
    if text[:1] in ("{", "["):
        return 0
    openers = [m.start() for m in re.finditer(r"[{\[]", text)]
    for at in openers[:_MAX_OPENERS]:
        end = _closing(text, at)
        if end is not None and '"' in text[at:end]:
            return at
    return openers[0] if openers else None


_MAX_OPENERS = 64


def _closing(text: str, start: int) -> int | None:
    """The end of the bracketed part opened at `start` (strings skipped), or None."""
    depth = 0
    i, n = start, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            m = _STRING.match(text, i)
            if m is None:
                return None
            i = m.end()
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _check_depth(text: str, raw: str) -> None:
    if text.count("{") + text.count("[") <= MAX_DEPTH:
        return  # fewer openers than the limit: no need to look closer
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub('""', text)):
        ch = m.group(0)
        if ch in "{[":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    raise OutputValidationError(
                        f"answer is JSON nested more than {MAX_DEPTH} levels deep",
                        kind="invalid_json",
                        raw=raw[:2000],
                    )
        elif ch in "}]":
            depth -= 1


def _latex_escapes(text: str) -> str:
    """Double the backslashes of LaTeX inside JSON strings (see the module docstring)."""
    if "\\" not in text:
        return text
    return _STRING.sub(lambda m: _fix_string(m.group(0)), text)


def _fix_string(literal: str) -> str:
    if "\\" not in literal:
        return literal
    out: list[str] = []
    i, n = 0, len(literal)
    while i < n:
        ch = literal[i]
        if ch != "\\" or i + 1 >= n - 1:
            out.append(ch)
            i += 1
            continue
        nxt = literal[i + 1]
        if nxt in "bfnrt":
            word = re.match(r"[A-Za-z]+", literal[i + 1 :])
            if word is not None and word.group(0) in _TEX_COMMANDS:
                out.append("\\\\")
                i += 1
                continue
        if nxt == "u" and not _HEX4.match(literal, i + 2):
            out.append("\\\\")
            i += 1
            continue
        if nxt not in _VALID_ESCAPE:
            out.append("\\\\")
            i += 1
            continue
        out.append(literal[i : i + 2])
        i += 2
    return "".join(out)


def _without_trailing_commas(text: str) -> str:
    """`text` without commas before `}` or `]`, outside strings only."""
    out: list[str] = []
    at = 0
    for m in _STRING.finditer(text):
        out.append(_TRAILING_COMMA.sub(r"\1", text[at : m.start()]))
        out.append(m.group(0))
        at = m.end()
    out.append(_TRAILING_COMMA.sub(r"\1", text[at:]))
    return "".join(out)


def _decode(text: str) -> tuple[Any, int]:
    decoder = json.JSONDecoder(parse_float=str, parse_int=str, strict=False)
    try:
        return decoder.raw_decode(text)
    except (json.JSONDecodeError, RecursionError):
        return _FAILED, 0


def _first_error(text: str) -> str:
    try:
        json.JSONDecoder(strict=False).raw_decode(text)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at char {exc.pos}"
    except RecursionError:
        return "nested too deeply"
    return "no JSON value"


def _library_repair(text: str) -> Any:
    """`json_repair`'s fix of `text`, or _FAILED when it would change content or complete a
    cut-off answer."""
    stripped = text.rstrip()
    bare = _STRING.sub('""', stripped)
    opened = bare.count("{") + bare.count("[")
    if not stripped.endswith(("}", "]")) or opened != bare.count("}") + bare.count("]"):
        return _FAILED  # cut off: completing it would invent its end
    try:
        import json_repair

        fixed = json_repair.repair_json(stripped, return_objects=False, skip_json_loads=True)
    except Exception:  # the library's own failures are a failed repair, never a crash
        return _FAILED
    if not isinstance(fixed, str) or fixed in ('""', ""):
        return _FAILED
    data, _end = _decode(fixed)
    if data is _FAILED or not isinstance(data, dict | list):
        return _FAILED
    if _words(_serialized(data)) != _words(_unescaped(stripped)):
        return _FAILED
    return data


def _serialized(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


def _unescaped(text: str) -> str:
    # The raw text's words as a reader sees them: JSON escapes (\n, \u00e9) decoded where
    # they are well-formed.
    return re.sub(
        r"\\u([0-9a-fA-F]{4})|\\([\"\\/bfnrt])",
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else " ",
        text,
    )


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def replace_surrogates(data: Any) -> tuple[Any, bool]:
    """`data` with lone surrogates in its strings (keys included) replaced by U+FFFD, and
    whether there was one."""
    replaced = False

    def clean(value: Any) -> Any:
        nonlocal replaced
        if isinstance(value, str):
            if _SURROGATE.search(value):
                replaced = True
                return _SURROGATE.sub("\ufffd", value)
            return value
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        return value

    return clean(data), replaced


def without_surrogates(text: str) -> str:
    """`text` with lone UTF-16 surrogates replaced by U+FFFD (writable as UTF-8)."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text
