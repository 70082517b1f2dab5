"""Where in the abstract a model's evidence is: tolerant of typography, strict about content.

`locate(abstract, evidence)` tries, in order, and returns the first hit as a span of the
original abstract:

1. the evidence verbatim (`str.find`, C speed: the common case);
2. the evidence with any run of whitespace matching any other run;
3. both texts *folded* (`pipeline.folding`), the same way on both sides:
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
from array import array
from functools import lru_cache

from pipeline.alignment import align
from pipeline.folding import Folded, fold

_WRAPPERS = "\"'\u201c\u201d\u2018\u2019`"
_TRAILING = ".,;:"


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
