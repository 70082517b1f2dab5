"""Sentence features for the offline TL;DR ranker (pure Python, stdlib only).

`sentence_features` gives, for every candidate sentence of one abstract, a dict of dense
features (contribution cues, background/result/citation penalties, position, length,
centrality: how much of its vocabulary recurs in the rest of the abstract) and
`lexical_features` a few sparse indicator names (the candidate's first one or two words).
`pipeline.offline.tldr` adds per-variant features (length after compression, kind of cut)
and scores them with the shipped linear model; `bench/train_tldr.py` computes the very same
features to fit it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import chain
from operator import countOf, mul

from pipeline.offline import tldr_rules
from pipeline.offline.tldr_words import WORDS

_WORD = re.compile(r"[a-z][a-z0-9]+")
_DIGIT = re.compile(r"\d")
_NUMBER_CHARS = frozenset("0123456789.,")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = WORDS.feature_stop


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_PROPOSE = re.compile(
    r"\b(?:we|this (?:paper|work|study|article|note)|the (?:present|current) (?:paper|work))"
    r" (?:\w+ly )?(?:propose|introduce|present|develop|design|devise|formulate|describe"
    r"|put forward|offer|contribute|construct|build|create|establish|define)s?\b"
    r"|\u672c\u6587|\u6211\u4eec\u63d0\u51fa|\u63d0\u51fa\u4e86?\u4e00\u79cd"  # 本文, 我们提出, 提出(了)一种
)
_IN_THIS = re.compile(r"\b(?:in|with) this (?:paper|work|study|article|note)\b")
_HERE_WE = re.compile(r"^(?:here|herein),? we\b")
_WE_SHOW = re.compile(
    r"\bwe (?:\w+ly )?(?:show|demonstrate|prove|find|study|investigate|explore|analy[sz]e"
    r"|derive|identify|examine|consider|address|tackle|provide|extend|generalize|learn"
    r"|train|argue|reveal|characterize|establish|leverage|use|apply|frame|cast|view)\b"
)
_THIS_PAPER = re.compile(r"\bthis (?:paper|work)\b")
_BACKGROUND = re.compile(
    r"\b(?:recent(?:ly)?|has been|have been|has shown|have shown|has become|have become"
    r"|remains?|is still|are still|widely|typically|traditionally|commonly|often"
    r"|existing|prior|previous|conventional|current|state-of-the-art methods)\b"
)
_FOLLOW_UP = re.compile(
    r"^(?:we also|also|moreover|furthermore|additionally|in addition|finally|lastly"
    r"|further|besides|specifically|in particular|for example|for instance|e\.g\.)\b"
)
_RESULTS = re.compile(
    r"\b(?:experiments?|experimental(?:ly)?|empirical(?:ly)?|results|outperforms?"
    r"|benchmarks?|datasets?|accuracy|baselines?|evaluat\w+)\b"
)
_PERCENT = re.compile(r"\d+(?:\.\d+)?\s*(?:%|\\%|x\b|\u00d7)")
_LINK = re.compile(r"https?://|\bgithub\b|\bcode (?:is|are|will be) (?:publicly )?available\b")
_DEFINITION = re.compile(r"^[A-Z][\w-]*(?: [\w-]+){0,4} (?:is|are) ")
_NAMING = re.compile(r"\b(?:we call|which we call|called|dubbed|named|termed|coined|we refer to)\b")
_NOVEL = re.compile(r"\b(?:a|an) (?:novel|new|simple|general|unified|principled|generic)\b")
_ANAPHOR = re.compile(r"^(?:This|These|It|Such|They|Its|Their|Both)\b")
_CITATION = re.compile(r"\bet al\b|\(\D{0,60}(?:19|20)\d\d[a-z]?\)|\[\d+(?:[,\u2013-]\s*\d+)*\]")
# A word with two capitals ("BERT", "ResNet", "GPT-4"): the matches of
# \b[A-Za-z]*[A-Z][A-Za-z0-9]*[A-Z][\w-]*, written so that re does not backtrack (the first
# two capitals of the word decide, and [\w-]* takes the rest of it either way).
_ACRONYM = re.compile(r"\b(?=[a-z]*[A-Z][a-z0-9]*[A-Z])[\w-]*")


# Feature patterns match the lowercased sentence (faster than IGNORECASE), except the cased
# ones (_DEFINITION, _ANAPHOR, _ACRONYM); see _cue_features, which also uses faster exact
# stand-ins for some searches (the features are unchanged):
# - a "hint" is a pattern without its leading \b, which re scans much faster (its literal
#   first characters are known); every match of the pattern is a match of the hint, so the
#   pattern only needs searching from the hint's first match, if there is one;
# - a whole-word alternation `\b(?:w1|w2|...)\b` of \w-only words matches exactly when one of
#   the sentence's \w+ tokens is one of the words (see _cue_words);
# - a pattern is only searched when the sentence holds a substring (or a digit) that every
#   match holds.
def _hint(pattern: re.Pattern[str]) -> re.Pattern[str]:
    assert pattern.pattern.startswith(r"\b") and not pattern.flags & re.IGNORECASE
    return re.compile(pattern.pattern[2:])


def _hinted(pattern: re.Pattern[str], low: str, hint: re.Pattern[str]) -> float:
    m = hint.search(low)
    return 1.0 if m and pattern.search(low, m.start()) else 0.0


_TOKEN = re.compile(r"\w+")
_DIGIT_LETTER = re.compile(r"[0-9][a-z]")
_PROPOSE_HINT = _hint(_PROPOSE)
_WE_SHOW_HINT = _hint(_WE_SHOW)
_NOVEL_HINT = _hint(_NOVEL)
_CITATION_HINT = _hint(_CITATION)
# In every _PROPOSE match outside CJK, the verb (+ "s") is a whole token ("put forward": forward).
_PROPOSE_VERBS = frozenset(
    verb + s
    for verb in _wordset(
        "propose introduce present develop design devise formulate describe forward offer"
        " contribute construct build create establish define"
    )
    for s in ("", "s")
)
# In every _NOVEL match the adjective is a whole token.
_NOVEL_WORDS = _wordset("novel new simple general unified principled generic")
# _ARTIFACT: \b(?:framework|method|...)\b
_ARTIFACT_WORDS = _wordset("framework method approach algorithm model architecture technique")
_RESULTS_WORDS = _wordset(
    "experiment experiments experimental experimentally empirical empirically results"
    " outperform outperforms benchmark benchmarks dataset datasets accuracy baseline baselines"
)  # and evaluat\w+, left to _RESULTS
_BACKGROUND_WORDS = _wordset(
    "recent recently remain remains widely typically traditionally commonly often existing prior"
    " previous conventional current"
)
_NAMING_WORDS = _wordset("called dubbed named termed coined")  # and "we call/refer to"
# A whole token of every other _BACKGROUND match ("has been", "is still", "... methods"), and
# of every _DEFINITION match (" is ", " are ").
_BACKGROUND_HINT_WORDS = _wordset("has have still methods")
_DEFINITION_WORDS = _wordset("is are")
# Every word _cue_features looks up among the sentence's tokens (all [a-z]{2,}).
_CUE_WORDS = frozenset().union(
    _PROPOSE_VERBS,
    _NOVEL_WORDS,
    _ARTIFACT_WORDS,
    _RESULTS_WORDS,
    _BACKGROUND_WORDS,
    _NAMING_WORDS,
    _BACKGROUND_HINT_WORDS,
    _DEFINITION_WORDS,
    ("we", "our", "this", "github", "code", "available"),
)
_ACRONYM_HINT = re.compile(r"[A-Z][a-z0-9]*[A-Z]")  # in every _ACRONYM match


def sentence_features(sentences: list[str]) -> list[dict[str, float]]:
    """Per-sentence feature values: cues, penalties, position, length and centrality."""
    n = len(sentences)
    lows = [s.lower() for s in sentences]
    runs = [_WORD.findall(low) for low in lows]
    digits = [has_digit(s) for s in sentences]  # (lowercasing neither adds nor removes digits)
    # One pass per group of features, in the rows' key order (score() sums a row in it).
    rows = [
        _cue_features(s, low, _cue_words(low, words, digit), digit)
        for s, low, words, digit in zip(sentences, lows, runs, digits, strict=True)
    ]
    _add_firsts(rows)
    for i, (row, s, digit) in enumerate(zip(rows, sentences, digits, strict=True)):
        _shape_features(row, s, i, n, digit)
    # A 6-letter prefix is a cheap stand-in for stemming ("propose", "proposed", "proposal").
    _add_centrality(rows, [[w[:6] for w in words if w not in _STOP] for words in runs])
    return rows


def _add_firsts(rows: list[dict[str, float]]) -> None:
    """The first sentence with a contribution cue, with "we", and the sentences before them."""
    seen_cue = seen_we = False
    for row in rows:
        cue = bool(row["propose"] or row["in_this"] or row["here_we"])
        we = bool(row["we"])
        row["first_cue"] = 1.0 if cue and not seen_cue else 0.0
        row["first_we"] = 1.0 if we and not seen_we else 0.0
        row["before_cue"] = 0.0 if seen_cue or cue else 1.0
        row["before_we"] = 0.0 if seen_we or we else 1.0
        seen_cue |= cue
        seen_we |= we


def has_digit(s: str) -> bool:
    """_DIGIT.search(s) is not None; in ASCII text (\\d is [0-9] there) ten single-character
    scans are several times faster than re's."""
    if not s.isascii():
        return _DIGIT.search(s) is not None
    return (
        "0" in s
        or "1" in s
        or "2" in s
        or "3" in s
        or "4" in s
        or "5" in s
        or "6" in s
        or "7" in s
        or "8" in s
        or "9" in s
    )


def lexical_features(text: str) -> list[str]:
    """Sparse indicator names of one (compressed) candidate: its first word and first two
    words ("w1:we", "w2:we propose")."""
    m = _FIRST_TWO.match(text)
    if m is None:
        return []
    first = m.group(1).lower()
    return (
        ["w1:" + first, "w2:" + first + " " + m.group(2).lower()] if m.group(2) else ["w1:" + first]
    )


_FIRST_TWO = re.compile(r"\W*([A-Za-z][A-Za-z0-9]+)(?:\W+([A-Za-z][A-Za-z0-9]+))?")


def _cue_words(low: str, runs: list[str], digit: bool) -> frozenset[str]:
    """The words of _CUE_WORDS that are \\w+ tokens of the lowercased sentence, found among its
    _WORD runs: every such token is a run. A run is a whole token too unless a \\w character
    other than [a-z0-9] or a digit touches it ("model_a", "modelé", "3model"), which needs a
    digit before a letter, "_" or a non-ASCII character (ASCII capitals are lowercased)."""
    hits = _CUE_WORDS.intersection(runs)
    if hits and (not low.isascii() or "_" in low or (digit and _DIGIT_LETTER.search(low))):
        hits = hits.intersection(_TOKEN.findall(low))
    return hits


def _cue_features(s: str, low: str, words: frozenset[str], digit: bool) -> dict[str, float]:
    """Pattern features of the lowercased sentence, then the cased ones, and "we". `words`:
    the sentence's tokens that are in _CUE_WORDS; `digit`: whether it holds a digit."""
    propose = (
        not words.isdisjoint(_PROPOSE_VERBS)
        or (not low.isascii() and ("\u672c\u6587" in low or "\u63d0\u51fa" in low))
    ) and _hinted(_PROPOSE, low, _PROPOSE_HINT)
    this = "this" in words  # a whole token of every _THIS_PAPER and _IN_THIS match
    this_paper = this and ("this paper" in low or "this work" in low) and _THIS_PAPER.search(low)
    in_this = this and ("in this " in low or "with this " in low) and _IN_THIS.search(low)
    citation = ("et al" in low or (digit and ("(" in low or "[" in low))) and _hinted(
        _CITATION, low, _CITATION_HINT
    )
    results = not words.isdisjoint(_RESULTS_WORDS) or ("evaluat" in low and _RESULTS.search(low))
    background = not words.isdisjoint(_BACKGROUND_WORDS) or (
        not words.isdisjoint(_BACKGROUND_HINT_WORDS) and _BACKGROUND.search(low)
    )
    naming = not words.isdisjoint(_NAMING_WORDS) or (
        "we" in words and ("we call" in low or "we refer to" in low) and _NAMING.search(low)
    )
    percent = digit and ("%" in low or "x" in low or "\u00d7" in low) and _PERCENT.search(low)
    link = (
        "http" in low or "github" in words or ("code" in words and "available" in words)
    ) and _LINK.search(low)
    definition = not words.isdisjoint(_DEFINITION_WORDS) and _DEFINITION.search(s)
    math_ = "$" in low or "\\" in low or "^" in low or "_" in low
    return {
        "propose": 1.0 if propose else 0.0,
        "in_this": 1.0 if in_this else 0.0,
        "here_we": 1.0 if low[:4] == "here" and _HERE_WE.search(low) else 0.0,
        "we_show": _hinted(_WE_SHOW, low, _WE_SHOW_HINT) if "we" in words else 0.0,
        "this_paper": 1.0 if this_paper else 0.0,
        "background": 1.0 if background else 0.0,
        "follow_up": 1.0 if _FOLLOW_UP.search(low) else 0.0,
        "results": 1.0 if results else 0.0,
        "percent": 1.0 if percent else 0.0,
        "link": 1.0 if link else 0.0,
        "artifact": 0.0 if words.isdisjoint(_ARTIFACT_WORDS) else 1.0,
        "naming": 1.0 if naming else 0.0,
        "novel": 0.0 if words.isdisjoint(_NOVEL_WORDS) else _hinted(_NOVEL, low, _NOVEL_HINT),
        "citation": 1.0 if citation else 0.0,
        "math": 1.0 if math_ else 0.0,
        "definition": 1.0 if definition else 0.0,
        "anaphor": 1.0 if _ANAPHOR.search(s) else 0.0,
        # \b(?:we|our)\b or _THIS_PAPER
        "we": 1.0 if "we" in words or "our" in words or this_paper else 0.0,
    }


def _shape_features(row: dict[str, float], s: str, index: int, n: int, digit: bool) -> None:
    n_words = s.count(" ") + 1  # candidates are single-spaced and stripped
    row["acronyms"] = _acronyms(s)
    row["question"] = 1.0 if tldr_rules.is_question(s) else 0.0
    row["start_anaphor"] = 1.0 if tldr_rules.starts_with_anaphor(s) else 0.0
    row["second"] = 1.0 if index == 1 else 0.0
    row["third"] = 1.0 if index == 2 else 0.0
    row["n_sentences"] = math.log(n)
    row["colon"] = 1.0 if ":" in s else 0.0
    row["digit"] = 1.0 if digit else 0.0
    row["first"] = 1.0 if index == 0 else 0.0
    row["last"] = 1.0 if n > 2 and index == n - 1 else 0.0
    row["position"] = index / (n - 1) if n > 1 else 0.0
    row["log_words"] = math.log(n_words + 1)
    row["short"] = 1.0 if n_words < 6 else 0.0
    row["length_gap"] = abs(n_words - 22) / 10


def _acronyms(s: str) -> float:
    """min(number of _ACRONYM matches, 3) / 3. No match starts before the word that holds the
    hint's first match, so findall starts at that word (after the space before it)."""
    m = _ACRONYM_HINT.search(s)
    if m is None:
        return 0.0
    return min(len(_ACRONYM.findall(s, s.rfind(" ", 0, m.start()) + 1)), 3) / 3


def _counts(words: list[str]) -> dict[str, int]:
    """Counter(words), without the cost of a Counter when no word repeats (most sentences)."""
    once = dict.fromkeys(words, 1)
    return once if len(once) == len(words) else Counter(words)


def _add_centrality(rows: list[dict[str, float]], stems: list[list[str]]) -> None:
    """How much of each sentence's vocabulary (its stems) recurs in the rest of the abstract
    (three views)."""
    counts = [_counts(words) for words in stems]
    # Counting iterables runs in C (Counter.update with a Counter is a Python loop).
    total = Counter(chain.from_iterable(stems))
    df = Counter(chain.from_iterable(counts))
    recurring_words = (len(df) - countOf(df.values(), 1)) or 1  # words in >= 2 sentences
    total_sq = sum(map(mul, total.values(), total.values()))
    others = len(rows) - 1
    for row, own, words in zip(rows, counts, stems, strict=True):
        row["content"] = len(own) / 20
        if not others or not own:
            row["centrality"] = row["cosine"] = row["coverage"] = 0.0
            continue
        # Integer sums (exact in any order), taken in C over the sentence's words w with
        # their count v, the abstract's count t and the number of sentences k that hold w
        # (k >= 1): shared = sum(k - 1), dot = sum(v * (t - v)) = sum(v * t) - own_sq, and what
        # taking the sentence's counts away removes from |total|^2: sum(t^2 - (t - v)^2) =
        # 2 sum(v * t) - own_sq.
        ks = list(map(df.__getitem__, own))
        if len(own) == len(words):  # every count is 1
            vt = sum(map(total.__getitem__, own))
            own_sq = len(own)
        else:
            v = own.values()
            vt = sum(map(mul, v, map(total.__getitem__, own)))
            own_sq = sum(map(mul, v, v))
        shared = sum(ks) - len(ks)
        dot = vt - own_sq
        recurring = len(ks) - countOf(ks, 1)
        norm_rest = math.sqrt(total_sq - (2 * vt - own_sq)) or 1.0
        row["centrality"] = shared / (others * (len(own) + 4))
        row["cosine"] = dot / (math.sqrt(own_sq) * norm_rest)
        row["coverage"] = recurring / recurring_words
