"""Clause spans for the offline claims extractor: segments, tight evidence spans, lead-ins."""

from __future__ import annotations

import re

from pipeline.offline.claim_numbers import Hit

_MAX_EVIDENCE_CHARS = 300

MAX_EVIDENCE_WORDS = 40

_MIN_CLAUSE_WORDS = 4

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"\S+")

FIRST_PERSON = re.compile(r"\b(?:we|our|ours)\b", _I)

# Present perfect about others ("X have shown promise") marks background, not this paper.
_PRESENT_PERFECT = re.compile(
    r"\b(?:has|have)\s+(?:\w+ly\s+)?(?:been\s+)?(?:shown|demonstrated|emerged|achieved|become"
    r"|driven|proven|proved|gained|attracted|reported|made|seen|enabled|explored|studied"
    r"|obtained|yielded|delivered|produced|outperformed|improved|surpassed|matched|set"
    r"|established|reached)\b",
    _I,
)

_LEAD_IN = re.compile(
    r"\b(?:show|shows|showed|shown|demonstrate|demonstrates|demonstrated|find|finds|found"
    r"|reveal|reveals|revealed|indicate|indicates|confirm|confirms|validate|validates|observe"
    r"|observed|verify|verifies|verified|suggest|suggests|prove|proves|showing|demonstrating"
    r"|revealing|indicating|confirming|suggesting)\s+that\b[\s,]*",
    _I,
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
    if FIRST_PERSON.search(prefix):
        return False
    return bool(_PRESENT_PERFECT.search(prefix)) or "et al" in prefix


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
    words = [m.span() for m in _WORD.finditer(s, a, b)]
    if len(words) > MAX_EVIDENCE_WORDS:
        i = next((k for k, w in enumerate(words) if w[1] > hit.start), 0)
        lo = max(0, i - MAX_EVIDENCE_WORDS // 2)
        hi = min(len(words), lo + MAX_EVIDENCE_WORDS)
        a, b = words[lo][0], words[hi - 1][1]
    if b - a > _MAX_EVIDENCE_CHARS:
        a = max(a, min(hit.start, b) - _MAX_EVIDENCE_CHARS // 2)
        b = min(b, max(hit.end, a + _MAX_EVIDENCE_CHARS // 2) + _MAX_EVIDENCE_CHARS // 2)
        b = max(b, hit.end)
    return strip_span(s, a, b)
