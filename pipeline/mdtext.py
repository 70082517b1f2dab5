"""Markdown-safe text: user strings that render literally in any Markdown the tool writes
(report.md, eval.md), as inline text, table cells, code spans and link destinations.

Escaping is minimal: only what would turn into markup inline (backslash before
punctuation, backticks, `*`, `_` at a word edge, brackets, `~~`, an HTML tag or entity, a
GitHub @mention, `|` in table cells); parentheses, dots, `#`, `+`, `!` stay as written.
No control character (ESC, BEL, an OSC or CSI sequence, C1, a bidi override) is kept.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from pipeline.text import normalize_ws, terminal_safe

_MD_INLINE = re.compile(
    r"\\(?=[!-/:-@\[-`{-~])"  # a backslash that would escape the next character
    r"|[`*\[\]]"  # code, emphasis, links
    r"|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"  # _emphasis_ (snake_case stays)
    r"|~(?=~)"  # ~~strikethrough~~
)
_MENTION = re.compile(r"(?<![\w.+-])@(?=\w)")  # @bob pings on GitHub; a@b.org, Recall@10 do not
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")
_ENTITY = re.compile(r"&(?=#?\w+;)")
_BACKTICKS = re.compile(r"`+")
# What a link destination may hold as it is: the URL characters Markdown gives no meaning
# there (no space, parenthesis, angle bracket, backtick, quote or backslash).
_URL_SAFE = ":/?#@!$&'*+,;=%~-._"


def md_escape(text: str, *, cell: bool = False) -> str:
    """Inline Markdown text that renders literally: no markup, no HTML, no @mentions."""
    text = _ENTITY.sub("&amp;", normalize_ws(terminal_safe(text)))
    text = _HTML_START.sub("&lt;", text)
    text = _MD_INLINE.sub(lambda m: "\\" + m.group(0), text)
    text = _MENTION.sub("&#64;", text)
    return text.replace("|", "\\|") if cell else text


def md_code(text: str) -> str:
    """A code span showing `text` as written: its fence is longer than any run of backticks
    in it, with a space inside when it starts or ends with one (CommonMark)."""
    text = normalize_ws(terminal_safe(text))
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_url(url: str) -> str:
    """A link destination that ends where the URL ends: characters Markdown reads there
    (spaces, parentheses, angle brackets, backticks, quotes, backslashes) percent-encoded."""
    return quote(terminal_safe(url), safe=_URL_SAFE)
