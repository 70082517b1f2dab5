"""Where in the abstract a model's evidence is: tolerant of typography, strict about content.

`locate(abstract, evidence)` tries, in order, and returns the first hit as a span of the
original abstract:

1. the evidence verbatim (`str.find`, C speed: the common case);
2. the evidence with any run of whitespace matching any other run;
3. both texts *folded*, the same way on both sides:
   - Unicode NFKC, and invisible format characters (soft hyphen, zero-width space) dropped;
   - every dash and hyphen variant (and runs of them, e.g. LaTeX ``---``) -> ``-``, with
     the spaces around it dropped (``a - b`` = ``a—b``);
   - curly, straight and LaTeX quotes (````x''``) -> ``"`` or ``'``;
   - TeX and Markdown markup dropped: ``$``, braces, ``^``, ``*``, ``_``, ``\\command{``,
     and the backslash of ``\\%``, ``\\&``; a space before ``%`` dropped;
   - TeX symbols and their Unicode forms made one: ``\\sim`` = ``∼`` = ``~``, ``\\times`` =
     ``×`` = ``x``, ``\\leq`` = ``≤``, ``\\pm`` = ``±``, ``\\alpha`` = ``α`` = ``alpha``, ...;
   - whitespace runs -> one space;
   and the first letter of the evidence matched in either case;
   then, failing that, the folded texts with every space removed (PDF-extracted abstracts
   lose and gain spaces: ``attains76.8%`` is quoted as ``attains 76.8%``);
4. the same after dropping what models wrap a quotation in: outer quotes, and a trailing
   ``.``, ``,``, ``;`` or ``:``;
5. near-verbatim alignment (`pipeline.alignment.align`): a changed word form, an elision,
   a list item rebuilt from its sentence, a cleaned PDF artifact, within a documented bound.

Folding only removes *presentation*; a changed word or number, an ellipsis or words in
another order still fail. Folded offsets map back to the original text, so the span (and
the evidence stored from it) is the abstract's own substring.
"""

from __future__ import annotations

import difflib
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
# TeX symbol commands and the Unicode characters models write for them, folded to one form.
_SYMBOLS = {
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
}
# Greek letters fold to their names, so `\alpha`, `α` and `alpha` are one text.
_GREEK = {
    chr(cp): unicodedata.name(chr(cp)).rsplit(" ", 1)[-1].lower()
    for cp in (*range(0x3B1, 0x3CA), *range(0x391, 0x3AA))
    if cp != 0x3A2 and cp != 0x3C2
}
_GREEK.update({ch.upper(): name.capitalize() for ch, name in _GREEK.items() if ch.islower()})
_WRAPPERS = "\"'\u201c\u201d\u2018\u2019`"
_TRAILING = ".,;:"


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
            elif ch in _SYMBOLS or ch in _GREEK:
                for sub in _SYMBOLS.get(ch) or _GREEK[ch]:
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
                if name is not None and name in _SYMBOLS:
                    emit(_SYMBOLS[name], i, m.end())  # \sim -> ~, \times -> x
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


@lru_cache(maxsize=256)
def _spaceless_abstract(text: str) -> Folded:
    folded = _folded_abstract(text)
    keep = [i for i, ch in enumerate(folded.text) if ch != " "]
    return Folded(
        "".join(folded.text[i] for i in keep),
        array("i", (folded.starts[i] for i in keep)),
        array("i", (folded.ends[i] for i in keep)),
    )


def _folded_span(abstract: str, evidence: str) -> tuple[int, int] | None:
    needle = fold(evidence).text
    if not needle:
        return None
    found = _find(_folded_abstract(abstract), needle)
    if found is None:
        found = _find(_spaceless_abstract(abstract), needle.replace(" ", ""))
    return None if found is None else _balanced(abstract, *found)


def _find(folded: Folded, needle: str) -> tuple[int, int] | None:
    if not needle:
        return None
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


_OPENERS = re.compile(r"(?:\\[A-Za-z]+\{|[$*_{])$")


def _balanced(abstract: str, start: int, end: int) -> tuple[int, int]:
    """Widen a folded hit over markup cut in half at its ends (`L_0$ norm` -> `$L_0$ norm`)."""
    for mark in "$*":
        if abstract.count(mark, start, end) % 2:
            if start > 0 and (opener := _OPENERS.search(abstract, 0, start)) is not None:
                start = opener.start()
            elif abstract.startswith(mark, end):
                end += 1
    while abstract.count("{", start, end) > abstract.count("}", start, end) and abstract.startswith(
        "}", end
    ):
        end += 1
    return start, end


def unwrap(evidence: str) -> str:
    """Evidence without the outer quotes and trailing punctuation models add to a quotation."""
    text = evidence.strip()
    while len(text) > 2 and text[0] in _WRAPPERS and text[-1] in _WRAPPERS:
        text = text[1:-1].strip()
    return text.rstrip(_TRAILING).rstrip()


def locate(abstract: str, evidence: str) -> tuple[int, int] | None:
    """The span of `evidence` in `abstract` (first occurrence), or None when it is not there."""
    evidence = evidence.strip()
    if not evidence:
        return None
    at = abstract.find(evidence)
    if at >= 0:
        return at, at + len(evidence)
    found = _whitespace_span(abstract, evidence) or _folded_span(abstract, evidence)
    if found is None and (bare := unwrap(evidence)) and bare != evidence:
        found = _folded_span(abstract, bare)
    if found is None:
        from pipeline.alignment import align  # imports this module

        found = align(abstract, evidence)
    return found


def closest(abstract: str, evidence: str, *, min_share: float = 0.5) -> str | None:
    """The abstract's own text of the span most like `evidence` (for a re-ask), or None.

    Windows of the abstract's words about as long as the evidence are compared with it
    word by word (folded, any case, punctuation stripped); of the windows sharing the most
    words, the one most alike character by character wins. None when none shares
    `min_share` of the evidence's words.
    """
    words = list(re.finditer(r"\S+", abstract))
    target = _word_keys(evidence)
    if not words or not target:
        return None
    keys = [" ".join(_word_keys(m.group(0))) for m in words]
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    n = len(target)
    best = 0
    windows: list[tuple[int, int]] = []
    for size in sorted({max(1, n + d) for d in (-2, -1, 0, 1, 2)}):
        for i in range(max(1, len(words) - size + 1)):
            matcher.set_seq1(keys[i : i + size])
            shared = sum(block.size for block in matcher.get_matching_blocks())
            if shared > best:
                best, windows = shared, []
            if shared == best:
                windows.append((i, min(len(words), i + size)))
    if best < min_share * n:
        return None
    wanted = " ".join(target)
    chars = difflib.SequenceMatcher(autojunk=False)
    chars.set_seq2(wanted)

    def likeness(window: tuple[int, int]) -> float:
        chars.set_seq1(" ".join(keys[window[0] : window[1]]))
        return chars.ratio()

    i, j = max(windows, key=likeness)
    return abstract[words[i].start() : words[j - 1].end()]


def _word_keys(text: str) -> list[str]:
    return [w.strip(".,;:()[]\"'") for w in fold(text).text.lower().split()]
