"""Text helpers shared by ingest, validators and the offline extractor: whitespace, sentences, numbers, spans."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

# A number as written: 5.14, 1,000, 0.5, 12; no sign (signs live in the surrounding text).
# Digits glued to an ASCII name (V1, ResNet50) are part of the name; after CJK text they count.
NUMBER_RE = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:,\d{3})*(?:\.\d+)?")

# Sentence boundary: end punctuation, optional closing quote/bracket, whitespace, then an
# opening capital/digit/quote/bracket/$ . Guards against "e.g. the", "et al. 2020", "Fig. 3", "vs. X".
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|Fig|Figs|Eq|Eqs|Sec|Tab|approx|resp|Dr|Prof|No|Nos|al)\."
    r"|\b[A-Z]\.[A-Z]\.)$",
    re.IGNORECASE,
)
_ABBREV_TAIL = 16
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[$]?[A-Z0-9\u4e00-\u9fff])")


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def text_hash(text: str) -> str:
    """Stable 16-hex id of a text after whitespace and Unicode (NFC) normalization."""
    norm = unicodedata.normalize("NFC", normalize_ws(text))
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; abbreviation- and decimal-aware, good enough for abstracts."""
    return list(_split_sentences(text))


@lru_cache(maxsize=256)
def _split_sentences(text: str) -> tuple[str, ...]:
    # Memoized: the extractors and validators of one abstract split the same text.
    text = normalize_ws(text)
    if not text:
        return ()
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        candidate = text[start : m.start()].rstrip()
        # An abbreviation ends the candidate: look only at its tail (the longest is 8
        # characters; the text before `pos` still counts for the word boundary).
        if _ABBREV.search(candidate, max(0, len(candidate) - _ABBREV_TAIL)):
            continue
        if candidate:
            out.append(candidate)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return tuple(out)


def sentence_bounds(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """Offsets of the sentence(s) of `text` that `span` lies in, by `split_sentences`'s rule
    (end punctuation, then a capital, digit or opening mark; not after an abbreviation): its
    start, and the end of its closing punctuation."""
    start, end = 0, len(text)
    for m in _BOUNDARY.finditer(text):
        if _ABBREV.search(text, max(0, m.start() - _ABBREV_TAIL), m.start()):
            continue  # "e.g. X": the match starts right after the full stop
        if m.start() <= span[0]:
            start = m.end()
        elif m.start() >= span[1]:
            end = m.start()
            break
    return start, end


def numbers_in(text: str) -> list[str]:
    """Numbers written in a text, canonicalized (thousands separators dropped), in order."""
    return [m.group(0).replace(",", "") for m in NUMBER_RE.finditer(text)]


@lru_cache(maxsize=256)
def abstract_numbers(text: str) -> frozenset[str]:
    """The set of numbers in a text, memoized: every stage of an abstract asks for it."""
    return frozenset(numbers_in(text))


def canonical_number(value: str) -> str | None:
    """The first number inside a value string like '+5.14%' or '1,024', or None."""
    found = numbers_in(value)
    return found[0] if found else None


def find_span(haystack: str, needle: str) -> tuple[int, int] | None:
    """Character span of `needle` in `haystack`, matching with whitespace normalized; None if absent."""
    words = needle.split()
    if not words:
        return None
    # Tokens joined by any whitespace run: a regex search runs at C speed even on 1 MB texts.
    pattern = r"\s+".join(map(re.escape, words))
    match = re.search(pattern, haystack)
    return (match.start(), match.end()) if match else None


_DISPLAY_SUBS = [
    (re.compile(r"\$\\text(?:it|bf|rm|tt)\{([^{}]*)\}\$"), r"\1"),
    (re.compile(r"\\text(?:it|bf|rm|tt)\{([^{}]*)\}"), r"\1"),
    (re.compile(r"``([^`']*)''"), "\u201c\\1\u201d"),
    (re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])"), r"\1"),
]


def has_display_markup(text: str) -> bool:
    """True when display_text may change the text (else it, and every part of it, stays)."""
    return "\\text" in text or "``" in text or "*" in text


def display_text(text: str) -> str:
    """LaTeX-ish markup normalized for display only; grounding always uses the original text."""
    if not has_display_markup(text):
        return text
    for pattern, repl in _DISPLAY_SUBS:
        text = pattern.sub(repl, text)
    return text


# C0 and C1 control characters and DEL (ESC starts terminal escape sequences, BEL ends OSC
# ones; U+009B is an 8-bit CSI) and the bidirectional overrides/isolates that reorder text.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069]")
# Whole ESC sequences (CSI, OSC), so no parameter text is left behind when ESC is dropped.
_ESCAPE_SEQUENCE_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_LINE_CONTROL_RE = re.compile(r"[\t\n\v\f\r\x85\u2028\u2029]")
_LINE_CONTROL_KEEP_NL_RE = re.compile(r"[\t\v\f\r\x85\u2028\u2029]")


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """`text` for a terminal: control characters dropped, other line breaks and tabs spaces."""
    spaces = _LINE_CONTROL_KEEP_NL_RE if keep_newlines else _LINE_CONTROL_RE
    if "\x1b" in text:
        text = _ESCAPE_SEQUENCE_RE.sub("", text)
    return _CONTROL_RE.sub("", spaces.sub(" ", text))
