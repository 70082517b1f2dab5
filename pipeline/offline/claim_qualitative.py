"""Qualitative claims: evaluative results without a number ("outperforms prior methods on five
benchmarks", "demonstrates the effectiveness of X"), one per clause with its own predicate.

A trigger is a comparison ('outperforms', 'comparable to', 'lower than typical ensembles',
'improves X over Y'), an asserted effect ('shows the effectiveness of', C14) or a change or
comparative ('improves accuracy', 'better generations'); the last kind is a result only in a
sentence that reports evidence ('experiments show', 'we find that'). Purpose clauses ('to
improve'), negations, hypotheticals, background (others' work) and parenthetical definitions
are not results; neither is a clause that already holds a number (the quantitative claim).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from pipeline.offline.claim_fields import (
    CHAINED_VERB,
    PERFORMANCE_OF,
    comparison_in,
    dataset_near,
    noun_phrase,
    sentence_comparison,
    statement_of,
)
from pipeline.offline.claim_numbers import Hit
from pipeline.offline.claim_text import (
    LEADING_JUNK,
    MAX_EVIDENCE_WORDS,
    Caseless,
    after_lead_in,
    background_before,
    cap_span,
    clause_spans,
    contains_any,
    extend_short,
    segment_at,
    strip_span,
)
from pipeline.offline.claim_words import WORDS

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _trie(words: Iterable[str]) -> str:
    """A regex for exactly `words`, branching letter by letter: the regex engine tries every
    word of a flat alternation at each position, a trie fails at the first letter."""
    words = set(words)
    heads = sorted({w[0] for w in words if w})
    alts = [re.escape(h) + _trie(w[1:] for w in words if w[:1] == h) for h in heads]
    if "" in words:
        return f"(?:{'|'.join(alts)})?" if alts else ""
    return alts[0] if len(alts) == 1 else f"(?:{'|'.join(alts)})"


# Evidence cues that are plain substrings, tested first; the phrases need a regex.
_EVIDENCE_WORDS = (
    "experiment", "empiric", "evaluat", "benchmark", "outperform", "surpass", "ablation",
    "achiev", "in practice",
)  # fmt: skip
_REPORTING_VERBS = _words(
    """show shows showed shown demonstrate demonstrates demonstrated find finds found observe
    observed confirm confirms indicate indicates reveal reveals verify verifies"""
)
_EVIDENCE_PHRASES = (
    r"results?\b|we\s+(?:\w+ly\s+)?(?:show|find|demonstrate|observe)"
    rf"|{_trie(_REPORTING_VERBS)}\s+that|in\s+practice|on\s+\w+\s+(?:benchmarks?|datasets?|tasks)"
)
_EVIDENCE_CUE = re.compile(
    rf"\b(?:experiment|empiric|evaluat|benchmark|outperform|surpass|ablation|achiev"
    rf"|{_EVIDENCE_PHRASES})",
    _I,
)
# The phrases alone: for an ASCII sentence without any of the _EVIDENCE_WORDS, the same test.
_EVIDENCE_PHRASE = Caseless(rf"\b(?:{_EVIDENCE_PHRASES})")

# Theorems and rates are not claims under the annotation guideline.
_THEORY = WORDS.theory

_ADJ_METRIC = WORDS.adjective_metrics

_SOTA = r"(?:state[- ]of[- ]the[- ]art|sota)"  # lowercase: see _QUAL_TRIGGER

_EFFECT_NOUNS = (
    r"effectiveness|efficacy|superiority|advantages?|benefits?|utility|usefulness|merits?|value"
    r"|potential|importance|promise|feasibility|power|strength|robustness|efficiency"
    r"|applicability|viability|competitiveness|competency|competence"
)

_COMPARATIVES = (
    r"better|worse|higher|lower|faster|slower|smaller|larger|stronger|weaker|greater|fewer"
    r"|cheaper|simpler|easier|harder|tighter|more\s+[a-z]+"
)

# Caseless: on an ASCII sentence its `lower` regex matches the lowercased text in half the time.
_QUAL_TRIGGER = Caseless(
    r"\b(?P<trigger>outperform(?:s|ed|ing)?|underperform(?:s|ed|ing)?|surpass(?:es|ed|ing)?"
    r"|beats?|exceed(?:s|ed|ing)?"
    rf"|(?:achiev|set|establish|attain|reach|obtain|deliver|yield|demonstrat|report|show)\w*"
    rf"\s+(?:a\s+|the\s+)?(?:new\s+)?(?:near(?:ly)?\s+|close\s+to\s+)?{_SOTA}|new\s+{_SOTA}"
    rf"|advances?\s+(?:in|over|on)\s+the\s+{_SOTA}|{_SOTA}\s+(?:[\w-]+\s+)?(?:performance|results"
    r"|accuracy)"
    r"|(?:(?:significantly|substantially|consistently|greatly|markedly|considerably|dramatically"
    r"|notably|further|largely|marginally|slightly)\s+)?(?:improv(?:es|ed|e)|enhanc(?:es|ed|e)"
    r"|boost(?:s|ed)?|reduc(?:es|ed|e)|increas(?:es|ed|e)|speeds?\s+up|accelerat(?:es|ed|e))"
    r"|(?:achiev|deliver|obtain|attain|show|yield|produc|giv|lead|reach|demonstrat|report"
    r"|exhibit|validat|confirm|result)\w*\s+(?:in\s+|to\s+)?(?:its\s+|their\s+|the\s+|an?\s+)?"
    r"(?:\w+ly\s+)?(?:strong|competitive|excellent|remarkable|impressive|promising|good|superior"
    r"|favorable|comparable|significant|considerable|substantial|improved|high|consistent"
    rf"|{_COMPARATIVES}|highest|best|lowest)\s+(?:[\w-]+\s+){{0,2}}?[\w-]+"
    r"|(?:achiev|obtain|yield|reach|attain|giv)\w*\s+(?:the\s+)?(?:highest|best|lowest|top)"
    r"|(?:show|shows|showed|shown|showing|demonstrat\w*|validat\w*|confirm\w*|verif\w*"
    r"|illustrat\w*|highlight\w*|indicat\w*|prov(?:e|es|ed|ing)|report\w*|observ\w*|bring\w*"
    r"|provid\w*)\s+(?:the\s+|its\s+|their\s+|our\s+)?(?:\w+\s+){0,2}?(?:improvements?|gains?"
    rf"|speed-?ups?|{_EFFECT_NOUNS})\b"
    r"|perform(?:s|ed)?\s+(?:\w+ly\s+|very\s+|quite\s+|surprisingly\s+)?(?:well|better|worse"
    r"|favorably|competitively|comparably|comparable|on\s+par)"
    r"|compar(?:es|ed|ing)?\s+favou?rably|approach(?:es|ing)?\s+the\s+performance"
    r"|generaliz(?:es|ed|e)\s+(?:well\s+)?to\s+(?:unseen|new|novel|other|different|larger)"
    r"|(?:is|are|remains?|turns\s+out\s+to\s+be)\s+(?:\w+ly\s+|very\s+|highly\s+)?(?:robust|effective"
    r"|vulnerable)\s+(?:to|in|at|for)"
    r"|superior|(?:substantial|consistent|significant|large|considerable|notable|dramatic|major)"
    r"\s+(?:improvements?|speed-?ups?|gains?|reductions?|boosts?)|improvements?\s+over"
    r"|gains?\s+over|advantage\s+over|match(?:es|ed)?|compete\s+with"
    r"|competitive\s+(?:with|to|against)|comparable\s+to|on\s+par\s+with"
    r"|similar\s+(?:performance|results|accuracy|capabilities)\s+(?:to|as)"
    r"|correlat(?:es|ed|e)\s+(?:\w+ly\s+)?with|(?:positively|negatively|strongly)\s+correlat(?:es|ed|e)"
    r"|more\s+(?:efficiently|accurately|quickly|robustly|effectively|reliably|stably)"
    rf"|(?:{_COMPARATIVES})(?=[^.;]{{0,100}}(?<!rather )\bthan\b))\b"
)


class _Trigger(NamedTuple):
    """A match of _QUAL_TRIGGER: its span and its text as written."""

    start: int
    end: int
    text: str


# Triggers that are results on their own: a comparison with something, or an asserted effect.
_STRONG_TRIGGER = re.compile(
    rf"(?:outperform|underperform|surpass|beat|exceed|{_SOTA}|new\s|advance|superior|improvements?"
    r"\s+over|gains?\s+over|advantage|competitive\s+(?:with|to|against)|comparable\s+to|on\s+par"
    r"|similar|compar\w*\s+favou?rably|approach|generaliz|(?:achiev|obtain|yield|reach|attain|giv)"
    r"\w*\s+(?:the\s+)?(?:highest|best|lowest|top)"
    r"|(?:show|demonstrat|validat|confirm|verif|illustrat|highlight|indicat|prov)\w*\s+(?:the\s+"
    rf"|its\s+|their\s+|our\s+)?(?:\w+\s+){{0,2}}?(?:{_EFFECT_NOUNS}))",
    _I,
)

# A baseline named after a change or comparative makes it a comparison ("improves X over Y").
_BASELINE_AFTER = re.compile(
    r"\b(?:than\s+(?:the|a|an|existing|prior|previous|baselines?|standard|conventional|state"
    r"|other|competing|current|all|both|typical|vanilla|its|their|[A-Z])"
    r"|over(?!\s+(?:time|the\s+course|training|iterations?|epochs?|steps))|upon"
    r"|compared\s+(?:to|with)|relative\s+to|versus|vs\.?)\b",
)

# First words of the triggers (every alternative of _QUAL_TRIGGER starts with one): a word of
# a sentence can start a trigger only if it starts with one of them (or is one of 2 letters).
_TRIGGER_STARTS = _words(
    """outperform underperform surpass beat exceed achiev set establish attain reach obtain
    deliver yield demonstrat report show new advance state sota significantly substantially
    consistently greatly markedly considerably dramatically notably further largely marginally
    slightly improv enhanc boost reduc increas speed accelerat produc giv lead exhibit validat
    confirm result verif illustrat highlight indicat prov observ bring perform compar approach
    generaliz turns superior substantial consistent significant large considerable notable
    dramatic major gain advantage match compet comparable on similar correlat positively
    negatively strongly more is are remain better worse higher lower faster slower smaller
    larger stronger weaker greater fewer cheaper simpler easier harder tighter"""
)


# The words of an ASCII-lowercased sentence that can start a trigger: not after a letter or
# digit, starting with a start word (or, for 'is' and 'on', being it).
_TRIGGER_WORD = re.compile(
    r"(?<![^\W_])(?:"
    + _trie(w for w in _TRIGGER_STARTS if len(w) > 2)
    + "|(?:"
    + "|".join(sorted(w for w in _TRIGGER_STARTS if len(w) <= 2))
    + ")(?![a-z]))"
)
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}

# Common first words of rare triggers, tried only when the rest of the trigger can be there.
_ROBUST = ("robust", "effective", "vulnerable")
_RARE_STARTS = {
    "is": _ROBUST,
    "are": _ROBUST,
    "rem": _ROBUST,
    "tur": _ROBUST,
    "on": ("on par",),
    "new": ("state", "sota"),
    "set": ("state", "sota"),
    "mor": ("than", "ly"),
    "lar": ("improve", "gain", "speed", "reduc", "boost", "than"),
}
# Cheap substring tests before the regexes. A sentence with a strong trigger stem can hold a
# result on its own; one with only weak stems ("improves", "better than") needs an evidence cue,
# and every evidence cue contains one of _EVIDENCE_WORDS or _EVIDENCE_STEMS.
_STRONG_STEMS = _words(
    """outperform underperform surpass beat exceed state-of-the-art sota superior advantage
    competitive comparable compete match effective efficacy benefit utility useful merit
    potential importance feasib promis vulnerable than favorabl favourabl highest lowest
    competen upon"""
) | {
    "state of the art",
    "on par",
    " over ",
    "compared",
    "approaching the",
    "approaches the",
    "generalizes ",
    "generalize ",
    "generalized ",
    "the best",
}

# Every evidence cue that is not one of the _EVIDENCE_WORDS contains one of these.
_EVIDENCE_STEMS = (
    "show", "task", "result", "demonstrat", "dataset", "find", "observ", "found", "verif",
    "reveal", "indicat", "practice", "confirm",
)  # fmt: skip

# What before a trigger makes it no result: a word and what follows it up to the trigger.
_PURPOSE_BEFORE = (
    # purpose ("to improve", "for improving"), but not "able to" / "lead to" / "compared to"
    r"(?<!able )(?<!lead )(?<!leads )(?<!led )(?<!leading )(?<!compared )(?<!similar )"
    r"(?:to|for|towards)\s+(?:\w+ly\s+)?$"
)
_OTHER_BLOCKS_BEFORE = (
    r"(?:not(?!\s+only)|no|never|cannot|can't|fails?\s+to|failed\s+to|without|neither|nor|aim"
    r"|aims|seek|seeks|hope)\s+(?:\w+\s+){0,2}$",
    r"(?:as|when|if|whether|once|although|though)\s+(?:[\w'-]+\s+){0,10}$",
    r"(?:they|which\s+best|best)\s+(?:\w+ly\s+)?$",
    r"(?:may|might|could|would|should|will)\s+(?:\w+ly\s+)?$",
    r"(?:with|the|an?|of|by|its|their)\s+$",
)
# One search for all of them, the word boundary first: it fails fast at most positions.
_BLOCK_BEFORE = Caseless(rf"\b(?:{'|'.join((_PURPOSE_BEFORE, *_OTHER_BLOCKS_BEFORE))})")
_BLOCK_BEFORE_EFFECT = Caseless(rf"\b(?:{'|'.join(_OTHER_BLOCKS_BEFORE)})")

_CHANGE_VERB = re.compile(
    r"(?:(?:significantly|substantially|consistently|greatly|markedly|considerably|dramatically"
    r"|notably|further|largely)\s+)?(?:improv|enhanc|boost|reduc|increas|accelerat)\w*",
    _I,
)

_PERF_OBJECT = re.compile(
    r"(?:es|ed)?\s+(?:or\s+(?:even\s+)?(?:exceeds?|outperforms?|surpass\w*)|(?:the\s+)?(?:performance"
    r"|accuracy|results|state)|(?:that|those)\s+of)",
    _I,
)

_EFFECT_TRIGGER = re.compile(
    r"(?:show|demonstrat|validat|confirm|verif|illustrat|highlight|indicat|prov)\w*\s", _I
)

_NOUN_END = re.compile(r"(?:ment|ments|tion|tions)$", _I)

_VERB_TRIGGER = re.compile(
    r"(?:outperform|surpass|beat|exceed|achiev|set|establish|attain|reach|obtain|deliver|yield"
    r"|demonstrat|report|show|improv|enhanc|boost|reduc|increas|speed|accelerat|match|compete"
    r"|correlat|perform|produc|giv|lead|validat|confirm|exhibit|significantly|substantially"
    r"|consistently|greatly|markedly|considerably|dramatically|notably|further|largely)",
    _I,
)

COORDINATOR = re.compile(r",?\s+(?:and|but)\s+(?:also\s+|even\s+|still\s+)?|;\s*|,\s+while\s+", _I)

_AS_WELL_AS = re.compile(r",\s+as\s+well\s+as\s+", _I)

# "Besides outperforming X, our model matches Y using 25% of ...": the opening phrase is a result
# of its own, cut from the numbers' one at its comma.
_BESIDES = re.compile(
    r"(?:besides|in\s+addition\s+to|apart\s+from|aside\s+from)\s+\w+ing\b[^,;:()]*,", _I
)

_INTRANSITIVE = re.compile(r"\s*(?:[,.;:)]|$|(?:to|with|as|when|from)\b)", _I)

_OBJECT_TRIGGER = re.compile(r"improv|enhanc|boost|reduc|increas|superior|accelerat")

_IN_TERMS_OF = re.compile(r"\s*(?:in|of)\s+(?:terms\s+of\s+)?", _I)

_COMPARE_TRIGGER = re.compile(
    r"outperform|surpass|beat|exceed|match|compete|competitive|comparable|on par"
)


def qualitative_claims(sentence: str, taken: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Evaluative results of a sentence, one per clause with its own predicate ('X outperforms
    A, and achieves state of the art on B' is two); clauses already carrying a number
    (`taken`: their evidence spans) are left to the quantitative claims."""
    low = sentence.lower()
    if contains_any(low, _THEORY):
        return []
    evidence_cue = _has_evidence_cue(sentence, low)
    if not evidence_cue and not contains_any(low, _STRONG_STEMS):
        return []  # weak triggers need evidence; a proposal sentence keeps only comparisons (C13)
    triggers = [
        trig
        for trig in _triggers(sentence, low)
        if not _blocked(sentence, trig, evidence_cue)
        and not any(a <= trig.start < b for a, b in taken)
    ]
    out: list[dict[str, Any]] = []
    for clause, trig in _clauses(sentence, triggers):
        free = _beside(sentence, clause, trig.start, taken)
        if free is not None:
            out.append(_qualitative_claim(sentence, trig, free))
    return out


def _has_evidence_cue(sentence: str, low: str) -> bool:
    """Whether the sentence reports evidence ('experiments show', 'we find that')."""
    if contains_any(low, _EVIDENCE_WORDS):
        return True
    if not contains_any(low, _EVIDENCE_STEMS):
        return False
    if sentence.isascii():
        return bool(_EVIDENCE_PHRASE.lower.search(low))
    return bool(_EVIDENCE_CUE.search(sentence))


def _beside(
    s: str, clause: tuple[int, int], pos: int, taken: list[tuple[int, int]]
) -> tuple[int, int] | None:
    """The part of `clause` around `pos` clear of the numbers' evidence (`taken`), cut at the
    coordinators that separate them; None when no coordinator does (the trigger is the lead of
    the numbers' result, C9/C12) or nothing is left."""
    a, b = clause
    for ta, tb in taken:
        if ta <= pos < tb:
            return None
        if tb <= pos and tb > a:
            cut = None
            for c in COORDINATOR.finditer(s, tb, pos):
                cut = c
            if cut is None:
                return None  # "X, achieving 5%": the qualitative part is the number's lead
            a = cut.end()
        if pos < ta < b:
            cut = COORDINATOR.search(s, pos, ta)
            lead = LEADING_JUNK.match(s, a)
            opener = _BESIDES.match(s, lead.end() if lead else a) if cut is None else None
            if opener is not None and pos < opener.end() <= ta:
                b = opener.end() - 1
                continue
            if cut is None:
                return None  # "X significantly improves Y, achieving 5%": the numbers are it (C12)
            b = cut.start()
    return (a, b) if b > a else None


def _triggers(s: str, low: str) -> list[_Trigger]:
    """The matches of `_QUAL_TRIGGER.pattern.finditer(s)` (`low` is `s.lower()`), tried only
    where a word starts as a trigger can (the regex has many alternatives; trying them at every
    character is the extractor's hot spot)."""
    out: list[_Trigger] = []
    pos = 0
    # Same offsets as `s` (str.lower may lengthen non-ASCII text).
    ascii_text = s.isascii()
    words = low if ascii_text else s.translate(_ASCII_LOWER)
    possible: dict[str, bool] = {}  # rare first words: can the rest of their trigger occur?
    for w in _TRIGGER_WORD.finditer(words):
        a = w.start()
        if a < pos:
            continue
        prefix = w.group(0)[:3]
        rare = _RARE_STARTS.get(prefix)
        if rare is not None:
            ok = possible.get(prefix)
            if ok is None:
                ok = possible[prefix] = contains_any(low, rare)
            if not ok:
                continue
        m = _QUAL_TRIGGER.lower.match(low, a) if ascii_text else _QUAL_TRIGGER.pattern.match(s, a)
        if m is not None:
            pos = m.end()
            out.append(_Trigger(a, pos, s[a:pos]))
    return out


def _clauses(s: str, triggers: list[_Trigger]) -> list[tuple[tuple[int, int], _Trigger]]:
    """(clause span, its trigger) for each predicate: a new clause starts at a coordinator
    ('and', ', as well as', ';', ', while') before a verb trigger of its own."""
    out: list[tuple[tuple[int, int], _Trigger]] = []
    start = 0
    for trig in triggers:
        cut = None
        if out and _VERB_TRIGGER.match(trig.text):
            for c in COORDINATOR.finditer(s, out[-1][1].end, trig.start):
                cut = c
            if cut is not None and len(s[out[-1][1].end : cut.start()].split()) < 2:
                cut = None  # "speed up and improve learning": one predicate (C4)
        if not out:
            out.append(((start, len(s)), trig))
        elif cut is not None:
            prev_span, prev = out[-1]
            out[-1] = ((prev_span[0], cut.start()), prev)
            out.append(((cut.end(), len(s)), trig))
    if out and len(out) == 1:
        also = _AS_WELL_AS.search(s, out[0][1].end)
        if also and _COMPARE_TRIGGER.match(out[0][1].text.lower()):
            # "outperform A on X, as well as B on Y": a second comparison
            span, trig = out[0]
            out = [((span[0], also.start()), trig), ((also.end(), span[1]), trig)]
    return out


def _is_strong(s: str, trig: _Trigger) -> bool:
    """A trigger that reports a result without further evidence: a comparison ('outperforms',
    'lower than typical ensembles', 'improves X over Y') or an asserted effect."""
    if _STRONG_TRIGGER.match(trig.text):
        return True
    end = s.find(";", trig.end)
    return bool(
        _BASELINE_AFTER.search(s, trig.end, min(end if end >= 0 else len(s), trig.end + 100))
    )


def _blocked(s: str, trig: _Trigger, evidence_cue: bool = True) -> bool:
    pos = trig.start
    trigger = trig.text
    if pos > 1 and s[pos - 1] in "-‑" and s[pos - 2].isalnum():
        return True  # "perplexity-matched"
    last = trigger.split()[-1]
    if (
        _CHANGE_VERB.fullmatch(last)
        and not _NOUN_END.search(last)
        and _INTRANSITIVE.match(s, trig.end)
    ):
        return True  # "as context length increases", "which reduce to dendrograms"
    prefix = s[max(0, pos - 60) : pos]
    effect = _EFFECT_TRIGGER.match(trigger)  # "experiments ... to prove the efficacy of X" (C14)
    if (_BLOCK_BEFORE_EFFECT if effect else _BLOCK_BEFORE).found(prefix):
        return True
    if not evidence_cue and (
        not _is_strong(s, trig) or s.rfind("(", 0, pos) > s.rfind(")", 0, pos)
    ):
        return True  # "a module that enhances X", "more important than avoiding errors", or a
        # parenthetical definition: "the Condorcet winner (which beats all other options)"
    if trigger.lower().startswith("match") and not (
        evidence_cue or _PERF_OBJECT.match(s, trig.end)
    ):
        return True  # "a policy whose distribution matches the target": a design
    return background_before(s, trig.end)


def _qualitative_claim(s: str, trig: _Trigger, clause: tuple[int, int]) -> dict[str, Any]:
    span = _qualitative_span(s, trig.start, clause)
    evidence = s[span[0] : span[1]]
    return {
        "statement": statement_of(evidence, None),
        "kind": "qualitative",
        "metric": _qualitative_metric(s, trig),
        "value": None,
        "unit": None,
        "dataset": dataset_near(s, trig.end, span),
        "comparison": _qualitative_comparison(s, trig),
        "evidence": evidence,
        "_span": span,
    }


def _qualitative_span(s: str, pos: int, clause: tuple[int, int]) -> tuple[int, int]:
    a, b = strip_span(s, *clause)
    if len(s[a:b].split()) > MAX_EVIDENCE_WORDS:
        segments = clause_spans(s)
        a, b = extend_short(s, segment_at(segments, pos), segments)
    a = after_lead_in(s, a, pos)
    lead = LEADING_JUNK.match(s, a)
    if lead and lead.end() < pos:
        a = lead.end()
    hit = Hit(pos, pos, pos, "", None)
    return cap_span(s, strip_span(s, a, b), hit)


def _qualitative_metric(s: str, trig: _Trigger) -> str | None:
    trigger = trig.text.lower()
    if _OBJECT_TRIGGER.match(trigger.split()[-1]):
        inner = _IN_TERMS_OF.match(s, trig.end)
        phrase = noun_phrase(s, inner.end() if inner else trig.end)
        if phrase and not phrase.lower().startswith(("by ", "over ", "on ", "and ")):
            return phrase
    for word, name in _ADJ_METRIC.items():
        if trigger.endswith(word):
            return name
    if "performance" in s[max(0, trig.start - 30) : trig.end + 30].lower():
        return "performance"
    return None


def _qualitative_comparison(s: str, trig: _Trigger) -> str | None:
    trigger = trig.text.lower()
    pos = trig.end
    if _COMPARE_TRIGGER.match(trigger):
        chained = CHAINED_VERB.match(s, pos)
        pos = chained.end() if chained else pos
        perf = PERFORMANCE_OF.match(s, pos)
        phrase = noun_phrase(s, perf.end() if perf else pos)
        if phrase:
            return phrase
    return comparison_in(s[trig.end :]) or sentence_comparison(s)
