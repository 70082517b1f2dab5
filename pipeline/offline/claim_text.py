"""Clause spans for the offline claims extractor: segments, tight evidence spans, lead-ins."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator

from pipeline.offline.claim_numbers import Hit

_MAX_EVIDENCE_CHARS = 300

MAX_EVIDENCE_WORDS = 40

_MIN_CLAUSE_WORDS = 4

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def contains_any(text: str, needles: Iterable[str]) -> bool:
    """Whether one of `needles` is a substring of `text` (a loop: faster than any() of a
    generator, which the extractor runs thousands of times per abstract)."""
    for needle in needles:  # noqa: SIM110 (see the docstring)
        if needle in text:
            return True
    return False


class Caseless:
    """A case-insensitive regex (with no uppercase letter in it) that, on an ASCII text, runs
    case-sensitively on the lowercased text: same matches, same offsets, about half the time.
    `needs`: lowercase words one of which every match holds, tested first on ASCII text.
    `pattern` is the case-insensitive regex, `lower` the one for lowercased ASCII text."""

    def __init__(self, pattern: str, needs: tuple[str, ...] = ()) -> None:
        if re.search(r"[A-Z]", re.sub(r"\\.|\(\?P[<=]", "", pattern)):
            raise ValueError(f"uppercase letter in a caseless pattern: {pattern!r}")
        self.pattern = re.compile(pattern, _I)
        self.lower = re.compile(pattern)
        self._needs = needs

    def found(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> bool:
        """Whether `self.pattern.search(text, pos, endpos)` matches."""
        return self.search(text, pos, endpos) is not None

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """`self.pattern.search(text, pos, endpos)`; for an ASCII text, the same match in the
        lowercased text (use its offsets, not its text)."""
        if text.isascii():
            low = text.lower()
            if self._needs and not contains_any(low, self._needs):
                return None
            return self.lower.search(low, pos, endpos)
        return self.pattern.search(text, pos, endpos)

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        """`self.pattern.finditer(text, pos, endpos)`, lowercased like `search`."""
        if text.isascii():
            return self.lower.finditer(text.lower(), pos, endpos)
        return self.pattern.finditer(text, pos, endpos)


_WORD = re.compile(r"\S+")

FIRST_PERSON = Caseless(r"\b(?:we|our|ours)\b", needs=("we", "our"))

# Present perfect about others ("X have shown promise") marks background, not this paper.
_PRESENT_PERFECT = Caseless(
    r"\b(?:has|have)\s+(?:\w+ly\s+)?(?:been\s+)?(?:shown|demonstrated|emerged|achieved|become"
    r"|driven|proven|proved|gained|attracted|reported|made|seen|enabled|explored|studied"
    r"|obtained|yielded|delivered|produced|outperformed|improved|surpassed|matched|set"
    r"|established|reached)\b",
    needs=("has", "have"),
)

_LEAD_IN = Caseless(
    r"\b(?:show|shows|showed|shown|demonstrate|demonstrates|demonstrated|find|finds|found"
    r"|reveal|reveals|revealed|indicate|indicates|confirm|confirms|validate|validates|observe"
    r"|observed|verify|verifies|verified|suggest|suggests|prove|proves|showing|demonstrating"
    r"|revealing|indicating|confirming|suggesting)\s+that\b[\s,]*"
)

_PREPOSITION_START = re.compile(r"(?:with|at|by|in|on|for|of|to)\s", _I)

_SEGMENT_SEP = re.compile(r"[()\[\]]|[;:,](?=\s)|\s(?:while|whereas)\s|\s?(?:—|--)\s?|\s–\s")

LEADING_JUNK = re.compile(
    r"(?:(?:and|or|but|while|whereas|with|by|thus|then|also|still|even|e\.g\.|i\.e\.|for example"
    r"|for instance|notably|furthermore|moreover|further|finally|first|second|third|specifically"
    r"|remarkably|importantly|additionally|in addition|in particular|that)\b[\s,]*)+",
    _I,
)


def background_before(sentence: str, pos: int) -> bool:
    """Whether the text before `pos` attributes what follows to others ("X have shown ...")."""
    prefix = sentence[:pos]
    if FIRST_PERSON.found(prefix):
        return False
    return _PRESENT_PERFECT.found(prefix) or ("et al" in prefix and _cites_outside_parens(prefix))


def _cites_outside_parens(prefix: str) -> bool:
    """Whether an 'et al' of `prefix` stands in the text itself ('Smith et al. report 90%'),
    not in a citation in parentheses ('On the Winograd Schema Challenge (Levesque et al.,
    2011), our models are 11% higher')."""
    at = prefix.find("et al")
    while at >= 0:
        if prefix.rfind("(", 0, at) <= prefix.rfind(")", 0, at):
            return True
        at = prefix.find("et al", at + 5)
    return False


def clause_spans(s: str) -> list[tuple[int, int]]:
    """Top-level clause spans of a sentence: split at , ; : dashes, while/whereas, not in ( )."""
    spans: list[tuple[int, int]] = []
    start = depth = 0
    for m in _SEGMENT_SEP.finditer(s):
        tok = m.group(0)
        if tok in "([":
            depth += 1
        elif tok in ")]":
            depth = max(0, depth - 1)
        elif not depth:
            spans.append((start, m.start()))
            start = m.end()
    spans.append((start, len(s)))
    return [strip_span(s, a, b) for a, b in spans if s[a:b].strip()]


def strip_span(s: str, a: int, b: int) -> tuple[int, int]:
    while a < b and s[a] in " .,;:":
        a += 1
    while b > a and s[b - 1] in " .,;:":
        b -= 1
    return a, b


def paren_group(s: str, pos: int) -> tuple[int, int] | None:
    left = s.rfind("(", 0, pos)
    if left < 0 or s.find(")", left, pos) >= 0:
        return None
    right = s.find(")", pos)
    return (left + 1, right) if right >= 0 else None


def segment_at(segments: list[tuple[int, int]], pos: int) -> tuple[int, int]:
    for seg in segments:
        if seg[0] <= pos < seg[1]:
            return seg
    return min(segments, key=lambda seg: abs(seg[0] - pos))


def item_span(s: str, group: tuple[int, int], hit: Hit) -> tuple[int, int]:
    start = s.rfind(",", group[0], hit.start)
    end = s.find(",", hit.end, group[1])
    return strip_span(s, start + 1 if start >= 0 else group[0], end if end >= 0 else group[1])


def narrow_between_hits(s: str, seg: tuple[int, int], hit: Hit, hits: list[Hit]) -> tuple[int, int]:
    """Cut a clause holding several results at the ' and ' between them."""
    a, b = seg
    inside = [h for h in hits if a <= h.num_start < b]
    i = inside.index(hit)
    if i > 0:
        cut = s.rfind(" and ", inside[i - 1].end, hit.start)
        if cut >= 0:
            a = cut + 5
    if i + 1 < len(inside):
        cut = s.rfind(" and ", hit.end, inside[i + 1].start)
        if cut >= 0:
            b = cut
    return strip_span(s, a, b)


def extend_short(s: str, span: tuple[int, int], segments: list[tuple[int, int]]) -> tuple[int, int]:
    """Grow a clause of a few words ('with up to 99% accuracy') by its neighbour on the left."""
    a, b = span
    if not too_short(s[a:b]):
        return a, b
    before = [seg for seg in segments if seg[1] <= a]
    if before:
        return before[-1][0], b
    after = [seg for seg in segments if seg[0] >= b]
    return (a, after[0][1]) if after else (a, b)


def too_short(clause: str) -> bool:
    """A clause too small to stand alone: under four words, or a bare 'with up to 99% accuracy'."""
    return len(clause.split()) < _MIN_CLAUSE_WORDS or bool(_PREPOSITION_START.match(clause))


def after_lead_in(s: str, a: int, limit: int) -> int:
    """Skip a reporting lead-in ('Experiments show that') that ends before position `limit`."""
    best = a
    if "that" not in s[a:limit]:
        return best
    for m in _LEAD_IN.finditer(s, a, limit):
        if len(s[m.end() : limit + 30].split()) >= 2:
            best = m.end()
    return best


def cap_span(s: str, span: tuple[int, int], hit: Hit) -> tuple[int, int]:
    """Keep evidence within a word and character budget, centred on the number."""
    a, b = span
    if len(s[a:b].split()) > MAX_EVIDENCE_WORDS:  # counted first: most spans are short
        words = [m.span() for m in _WORD.finditer(s, a, b)]
        i = next((k for k, w in enumerate(words) if w[1] > hit.start), 0)
        lo = max(0, i - MAX_EVIDENCE_WORDS // 2)
        hi = min(len(words), lo + MAX_EVIDENCE_WORDS)
        a, b = words[lo][0], words[hi - 1][1]
    if b - a > _MAX_EVIDENCE_CHARS:
        a = max(a, min(hit.start, b) - _MAX_EVIDENCE_CHARS // 2)
        b = min(b, max(hit.end, a + _MAX_EVIDENCE_CHARS // 2) + _MAX_EVIDENCE_CHARS // 2)
        b = max(b, hit.end)
    return strip_span(s, a, b)
