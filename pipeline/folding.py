"""Folding: a text with its presentation removed, and a map back to the original offsets.

Both sides of a comparison are folded the same way:

- Unicode NFKC, and invisible format characters (soft hyphen, zero-width space) dropped;
- every dash and hyphen variant (and runs of them, e.g. LaTeX ``---``) -> ``-``, with
  the spaces around it dropped (``a - b`` = ``a—b``);
- curly, straight and LaTeX quotes (````x''``) -> ``"`` or ``'``;
- TeX and Markdown markup dropped: ``$``, braces, ``^``, ``*``, ``_``, ``\\command{``,
  and the backslash of ``\\%``, ``\\&``; a space before ``%`` dropped;
- TeX symbols and their Unicode forms made one: ``\\sim`` = ``∼`` = ``~``, ``\\times`` =
  ``×`` = ``x``, ``\\leq`` = ``≤``, ``\\pm`` = ``±``, ``\\alpha`` = ``α`` = ``alpha``, ``\\varepsilon``
  = ``∊`` (a PDF's epsilon) = ``epsilon``, ...;
- whitespace runs -> one space.
"""

from __future__ import annotations

import re
import unicodedata
from array import array

_DASHES = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\uff0d")
_DOUBLE_QUOTES = frozenset('"\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033')
_SINGLE_QUOTES = frozenset("'\u2018\u2019\u201a\u201b\u2032`")
_DROPPED = frozenset("${}^*_")
_COMMAND = re.compile(r"\\([A-Za-z]+)(\{?)|\\(.)")
_LATEX_QUOTES = re.compile(r"``|''")
# TeX symbol commands and the Unicode characters models write for them, folded to one form.
SYMBOLS = {
    "sim": "~",
    "\u223c": "~",
    "textasciitilde": "~",
    "approx": "\u2248",
    "times": "x",
    "\u00d7": "x",
    "leq": "\u2264",
    "le": "\u2264",
    "geq": "\u2265",
    "ge": "\u2265",
    "neq": "\u2260",
    "pm": "\u00b1",
    "cdot": "\u00b7",
    "infty": "\u221e",
    "ell": "l",
    "to": "\u2192",
    "rightarrow": "\u2192",
    "ldots": "...",
    "dots": "...",
    # variant letters are the letter; PDFs write epsilon as U+220A "small element of"
    "varepsilon": "epsilon",
    "\u220a": "epsilon",
    "varphi": "phi",
    "vartheta": "theta",
    "varrho": "rho",
    "varpi": "pi",
    "varsigma": "sigma",
}
# Greek letters fold to their names, so `\alpha`, `α` and `alpha` are one text.
GREEK = {
    chr(cp): unicodedata.name(chr(cp)).rsplit(" ", 1)[-1].lower()
    for cp in (*range(0x3B1, 0x3CA), *range(0x391, 0x3AA))
    if cp != 0x3A2 and cp != 0x3C2
}
GREEK.update({ch.upper(): name.capitalize() for ch, name in GREEK.items() if ch.islower()})


class Folded:
    """A folded text and, for each folded character, the original span it came from."""

    __slots__ = ("text", "starts", "ends")

    def __init__(self, text: str, starts: array, ends: array) -> None:
        self.text = text
        self.starts = starts
        self.ends = ends


def fold(text: str) -> Folded:
    """The folded form of `text` (see the module docstring) with its offset map."""
    out: list[str] = []
    starts = array("i")
    ends = array("i")

    def pop() -> None:
        out.pop()
        starts.pop()
        ends.pop()

    def emit(chars: str, start: int, end: int) -> None:
        for ch in chars:
            if ch.isspace():
                if not out or out[-1] in " -":
                    continue
                ch = " "
            elif ch in _DASHES:
                ch = "-"
                if out and out[-1] == " ":
                    pop()
                if out and out[-1] == "-":
                    ends[-1] = end
                    continue
            elif ch in _DOUBLE_QUOTES:
                ch = '"'
            elif ch in _SINGLE_QUOTES:
                ch = "'"
            elif ch in _DROPPED:
                continue
            elif ch == "%" and out and out[-1] == " ":
                pop()
            elif ch in SYMBOLS or ch in GREEK:
                for sub in SYMBOLS.get(ch) or GREEK[ch]:
                    out.append(sub)
                    starts.append(start)
                    ends.append(end)
                continue
            out.append(ch)
            starts.append(start)
            ends.append(end)

    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            m = _COMMAND.match(text, i)
            if m is not None:
                name = m.group(1)
                if name is not None and name in SYMBOLS:
                    emit(SYMBOLS[name], i, m.end())  # \sim -> ~, \times -> x
                elif name is not None and not m.group(2):
                    emit(name, i, m.end())  # \alpha -> alpha
                elif m.group(3) is not None:
                    emit(m.group(3), i, m.end())  # \% -> %
                i = m.end()  # \textit{ -> (nothing); its closing brace is dropped too
                continue
        if ch in "`'" and _LATEX_QUOTES.match(text, i):
            emit('"', i, i + 2)
            i += 2
            continue
        if ch.isascii():
            emit(ch, i, i + 1)
        elif unicodedata.category(ch) != "Cf":  # soft hyphens, zero-width spaces: invisible
            emit(unicodedata.normalize("NFKC", ch), i, i + 1)
        i += 1
    while out and out[-1] == " ":
        pop()
    return Folded("".join(out), starts, ends)
