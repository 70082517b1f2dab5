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

_WORD = re.compile(r"[a-z][a-z0-9]+")
_DIGIT = re.compile(r"\d")
_NUMBER_CHARS = frozenset("0123456789.,")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _wordset(
    """a an the of to in on for and or with by from as at is are was were be been being this that
    these those it its we our us their they which who whom whose what when where how than then
    such can could may might will would should must do does did has have had not no but also
    both each more most other some any all into over under between through via using use used
    based new novel approach method methods paper work propose proposed show shows present
    well while however further thus there here one two first"""
)


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
_MATH = re.compile(r"[$\\^_]")
_ACRONYM = re.compile(r"\b[A-Za-z]*[A-Z][A-Za-z0-9]*[A-Z][\w-]*")


# Feature patterns match the lowercased sentence (faster than IGNORECASE), except the cased
# ones (_DEFINITION, _ANAPHOR, _ACRONYM); see _cue_features, which also uses faster exact
# stand-ins for some searches (the features are unchanged):
# - a "hint" is a pattern without its leading \b, which re scans much faster (its literal
#   first characters are known); every match of the pattern is a match of the hint, so the
#   pattern only needs searching from the hint's first match, if there is one;
# - a whole-word alternation `\b(?:w1|w2|...)\b` of \w-only words matches exactly when one of
#   the sentence's \w+ tokens is one of the words;
# - a pattern is only searched when the sentence holds a substring that every match holds.
def _hint(pattern: re.Pattern[str]) -> re.Pattern[str]:
    assert pattern.pattern.startswith(r"\b") and not pattern.flags & re.IGNORECASE
    return re.compile(pattern.pattern[2:])


def _hinted(pattern: re.Pattern[str], low: str, hint: re.Pattern[str]) -> float:
    m = hint.search(low)
    return 1.0 if m and pattern.search(low, m.start()) else 0.0


_TOKEN = re.compile(r"\w+")
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
_ACRONYM_HINT = re.compile(r"[A-Z][A-Za-z0-9]*[A-Z]")  # in every _ACRONYM match


class _Vocabulary:
    """Word statistics of one abstract that centrality features compare a sentence against."""

    def __init__(self, stems: list[list[str]], counts: list[Counter[str]]) -> None:
        self.n = len(counts)
        # Counting iterables runs in C (Counter.update with a Counter is a Python loop).
        self.total = total = Counter(chain.from_iterable(stems))
        self.df = df = Counter(chain.from_iterable(counts))
        self.recurring = (len(df) - countOf(df.values(), 1)) or 1  # words in >= 2 sentences
        self.total_sq = sum(map(mul, total.values(), total.values()))


def sentence_features(sentences: list[str]) -> list[dict[str, float]]:
    """Per-sentence feature values: cues, penalties, position, length and centrality."""
    n = len(sentences)
    lows = [s.lower() for s in sentences]
    # A 6-letter prefix is a cheap stand-in for stemming ("propose", "proposed", "proposal").
    stems = [[w[:6] for w in _WORD.findall(low) if w not in _STOP] for low in lows]
    counts = [Counter(words) for words in stems]
    vocab = _Vocabulary(stems, counts)
    rows: list[dict[str, float]] = []
    seen_cue = seen_we = False
    for i, s in enumerate(sentences):
        low = lows[i]
        row = _cue_features(s, low)
        cue = bool(row["propose"] or row["in_this"] or row["here_we"])
        we = bool(row["we"])
        row["first_cue"] = float(cue and not seen_cue)
        row["first_we"] = float(we and not seen_we)
        row["before_cue"] = float(not seen_cue and not cue)
        row["before_we"] = float(not seen_we and not we)
        _shape_features(row, s, i, n)
        _centrality(row, counts[i], vocab)
        rows.append(row)
        seen_cue |= cue
        seen_we |= we
    return rows


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


def _cue_features(s: str, low: str) -> dict[str, float]:
    """Pattern features of the lowercased sentence, then the cased ones, and "we"."""
    words = set(_TOKEN.findall(low))
    propose = (
        not words.isdisjoint(_PROPOSE_VERBS) or "\u672c\u6587" in low or "\u63d0\u51fa" in low
    ) and _hinted(_PROPOSE, low, _PROPOSE_HINT)
    this_paper = ("this paper" in low or "this work" in low) and _THIS_PAPER.search(low)
    in_this = ("in this " in low or "with this " in low) and _IN_THIS.search(low)
    citation = ("et al" in low or "(" in low or "[" in low) and _hinted(
        _CITATION, low, _CITATION_HINT
    )
    results = not words.isdisjoint(_RESULTS_WORDS) or ("evaluat" in low and _RESULTS.search(low))
    background = not words.isdisjoint(_BACKGROUND_WORDS) or (
        ("has " in low or "have " in low or " still" in low or "state-of-the-art methods" in low)
        and _BACKGROUND.search(low)
    )
    naming = not words.isdisjoint(_NAMING_WORDS) or (
        ("we call" in low or "we refer to" in low) and _NAMING.search(low)
    )
    percent = ("%" in low or "x" in low or "\u00d7" in low) and _PERCENT.search(low)
    link = ("http" in low or "github" in low or "code " in low) and _LINK.search(low)
    math_ = ("$" in low or "\\" in low or "^" in low or "_" in low) and _MATH.search(low)
    return {
        "propose": 1.0 if propose else 0.0,
        "in_this": 1.0 if in_this else 0.0,
        "here_we": 1.0 if _HERE_WE.search(low) else 0.0,
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
        "definition": 1.0 if _DEFINITION.search(s) else 0.0,
        "anaphor": 1.0 if _ANAPHOR.search(s) else 0.0,
        # \b(?:we|our)\b or _THIS_PAPER
        "we": 1.0 if "we" in words or "our" in words or this_paper else 0.0,
    }


def _shape_features(row: dict[str, float], s: str, index: int, n: int) -> None:
    n_words = s.count(" ") + 1  # candidates are single-spaced and stripped
    row["acronyms"] = min(len(_ACRONYM.findall(s)), 3) / 3 if _ACRONYM_HINT.search(s) else 0.0
    row["question"] = float(tldr_rules.is_question(s))
    row["start_anaphor"] = float(tldr_rules.starts_with_anaphor(s))
    row["second"] = float(index == 1)
    row["third"] = float(index == 2)
    row["n_sentences"] = math.log(n)
    row["colon"] = float(":" in s)
    row["digit"] = float(_DIGIT.search(s) is not None)
    row["first"] = float(index == 0)
    row["last"] = float(n > 2 and index == n - 1)
    row["position"] = index / (n - 1) if n > 1 else 0.0
    row["log_words"] = math.log(n_words + 1)
    row["short"] = float(n_words < 6)
    row["length_gap"] = abs(n_words - 22) / 10


def _centrality(row: dict[str, float], own: Counter[str], vocab: _Vocabulary) -> None:
    """How much of a sentence's vocabulary recurs in the rest of the abstract (three views)."""
    row["content"] = len(own) / 20
    if vocab.n < 2 or not own:
        row["centrality"] = row["cosine"] = row["coverage"] = 0.0
        return
    total, df = vocab.total, vocab.df
    # All integer sums, so one loop gives exactly the values of separate sums.
    shared = dot = own_sq = removed = recurring = 0
    for w, v in own.items():
        k, t = df[w], total[w]
        shared += k - 1
        dot += v * (t - v)
        own_sq += v * v
        # |rest|^2 is |total|^2 minus what taking this sentence's counts away removes.
        removed += t * t - (t - v) * (t - v)
        recurring += k >= 2
    norm_rest = math.sqrt(vocab.total_sq - removed) or 1.0
    row["centrality"] = shared / ((vocab.n - 1) * (len(own) + 4))
    row["cosine"] = dot / (math.sqrt(own_sq) * norm_rest)
    row["coverage"] = recurring / vocab.recurring
