"""Where in the abstract a model's evidence is: tolerant of typography, strict about content.

`locate(abstract, evidence)` tries, in order, and returns the first hit as a span of the
original abstract:

1. the evidence verbatim (`str.find`, C speed: the common case);
2. the evidence with any run of whitespace matching any other run;
3. both texts *folded*, the same way on both sides:
   - Unicode NFKC;
   - every dash and hyphen variant (and runs of them, e.g. LaTeX ``---``) -> ``-``;
   - curly, straight and LaTeX quotes (````x''``) -> ``"`` or ``'``;
   - TeX and Markdown markup dropped: ``$``, braces, ``^``, ``*``, ``_``, ``\\command{``,
     and the backslash of ``\\%``, ``\\&``, ``\\alpha``;
   - whitespace runs -> one space;
   and the first letter of the evidence matched in either case.

Folding only removes *presentation*; a changed word or number, an ellipsis or words in
another order still fail. Folded offsets map back to the original text, so the span (and
the evidence stored from it) is the abstract's own substring.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from functools import lru_cache

_DASHES = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\uff0d")
_DOUBLE_QUOTES = frozenset('"\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033')
_SINGLE_QUOTES = frozenset("'\u2018\u2019\u201a\u201b\u2032`")
_DROPPED = frozenset("${}^*_")
_COMMAND = re.compile(r"\\([A-Za-z]+)(\{?)|\\(.)")
_LATEX_QUOTES = re.compile(r"``|''")


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

    def emit(chars: str, start: int, end: int) -> None:
        for ch in chars:
            if ch.isspace():
                if not out or out[-1] == " ":
                    continue
                ch = " "
            elif ch in _DASHES:
                ch = "-"
                if out and out[-1] == "-":
                    ends[-1] = end
                    continue
            elif ch in _DOUBLE_QUOTES:
                ch = '"'
            elif ch in _SINGLE_QUOTES:
                ch = "'"
            elif ch in _DROPPED:
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
                if m.group(1) is not None and not m.group(2):
                    emit(m.group(1), i + 1, m.end())  # \alpha -> alpha
                elif m.group(3) is not None:
                    emit(m.group(3), i, m.end())  # \% -> %
                i = m.end()  # \textit{ -> (nothing); its closing brace is dropped too
                continue
        if ch in "`'" and _LATEX_QUOTES.match(text, i):
            emit('"', i, i + 2)
            i += 2
            continue
        emit(unicodedata.normalize("NFKC", ch) if not ch.isascii() else ch, i, i + 1)
        i += 1
    while out and out[-1] == " ":
        out.pop()
        starts.pop()
        ends.pop()
    return Folded("".join(out), starts, ends)


@lru_cache(maxsize=256)
def _folded_abstract(text: str) -> Folded:
    # The stages of one abstract are validated back to back: fold it once.
    return fold(text)


def _whitespace_span(haystack: str, needle: str) -> tuple[int, int] | None:
    words = needle.split()
    if not words:
        return None
    match = re.search(r"\s+".join(map(re.escape, words)), haystack)
    return (match.start(), match.end()) if match else None


def _folded_span(abstract: str, evidence: str) -> tuple[int, int] | None:
    needle = fold(evidence).text
    if not needle:
        return None
    folded = _folded_abstract(abstract)
    hits = [folded.text.find(needle)]
    first = needle[0]
    if first.lower() != first.upper():
        other = (first.lower() if first.isupper() else first.upper()) + needle[1:]
        hits.append(folded.text.find(other))
    found = [h for h in hits if h >= 0]
    if not found:
        return None
    start = min(found)
    last = start + len(needle) - 1
    return folded.starts[start], folded.ends[last]


def locate(abstract: str, evidence: str) -> tuple[int, int] | None:
    """The span of `evidence` in `abstract` (first occurrence), or None when it is not there."""
    evidence = evidence.strip()
    if not evidence:
        return None
    at = abstract.find(evidence)
    if at >= 0:
        return at, at + len(evidence)
    return _whitespace_span(abstract, evidence) or _folded_span(abstract, evidence)
