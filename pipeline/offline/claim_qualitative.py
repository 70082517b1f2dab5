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
from typing import Any

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
    after_lead_in,
    background_before,
    cap_span,
    clause_spans,
    extend_short,
    segment_at,
    strip_span,
)

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_EVIDENCE_CUE = re.compile(
    r"\b(?:experiment|empiric|results?\b|evaluat|benchmark|outperform|surpass|ablation"
    r"|we\s+(?:\w+ly\s+)?(?:show|find|demonstrate|observe)|achiev|(?:show|shows|showed|shown"
    r"|demonstrate|demonstrates|demonstrated|find|finds|found|observe|observed|confirm|confirms"
    r"|indicate|indicates|reveal|reveals|verify|verifies)\s+that|in\s+practice|on\s+\w+\s+"
    r"(?:benchmarks?|datasets?|tasks))",
    _I,
)

# Theorems and rates are not claims under the annotation guideline.
_THEORY = ("lower bound", "upper bound", "convergence rate", "theorem", "$")

_ADJ_METRIC = {
    "faster": "speed",
    "robust": "robustness",
    "efficient": "efficiency",
    "effective": "effectiveness",
    "accurate": "accuracy",
    "interpretable": "interpretability",
    "faithful": "faithfulness",
    "reliable": "reliability",
    "stable": "stability",
    "scalable": "scalability",
    "expressive": "expressivity",
    "expensive": "cost",
    "cheaper": "cost",
}

_SOTA = r"(?:state[- ]of[- ]the[- ]art|SOTA)"

_EFFECT_NOUNS = (
    r"effectiveness|efficacy|superiority|advantages?|benefits?|utility|usefulness|merits?|value"
    r"|potential|importance|promise|feasibility|power|strength|robustness|efficiency"
    r"|applicability|viability|competitiveness|competency|competence"
)

_COMPARATIVES = (
    r"better|worse|higher|lower|faster|slower|smaller|larger|stronger|weaker|greater|fewer"
    r"|cheaper|simpler|easier|harder|tighter|more\s+[a-z]+"
)

_QUAL_TRIGGER = re.compile(
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
    rf"|(?:{_COMPARATIVES})(?=[^.;]{{0,100}}(?<!rather )\bthan\b))\b",
    _I,
)

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

_ALPHA_RUN = re.compile(r"[A-Za-z]+")

# First three letters of every word a trigger can start with (kept in step with _QUAL_TRIGGER).
# First words of the triggers (every alternative of _QUAL_TRIGGER starts with one), grouped
# by their first three letters for a cheap test of each word of a sentence.
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
_STARTS_BY_PREFIX: dict[str, tuple[str, ...]] = {}
for _start in sorted(_TRIGGER_STARTS):
    _STARTS_BY_PREFIX[_start[:3]] = (*_STARTS_BY_PREFIX.get(_start[:3], ()), _start)

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
# and every evidence cue contains one of _EVIDENCE_STEMS.
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

# Evidence cues that are plain substrings (the rest of _EVIDENCE_CUE needs the regex).
_EVIDENCE_WORDS = (
    "experiment", "empiric", "evaluat", "benchmark", "outperform", "surpass", "ablation",
    "achiev", "in practice",
)  # fmt: skip
_EVIDENCE_STEMS = _words(
    """experiment empiric result evaluat benchmark outperform surpass ablation show find found
    demonstrat observ achiev confirm indicat reveal verif practice dataset task"""
)

_BLOCK_BEFORE = [
    # purpose ("to improve", "for improving"), but not "able to" / "lead to" / "compared to"
    re.compile(
        r"(?<!able )(?<!lead )(?<!leads )(?<!led )(?<!leading )(?<!compared )(?<!similar )"
        r"\b(?:to|for|towards)\s+(?:\w+ly\s+)?$",
        _I,
    ),
    re.compile(
        r"\b(?:not(?!\s+only)|no|never|cannot|can't|fails?\s+to|failed\s+to|without|neither|nor|aim|aims"
        r"|seek|seeks|hope)\s+(?:\w+\s+){0,2}$",
        _I,
    ),
    re.compile(r"\b(?:as|when|if|whether|once|although|though)\s+(?:[\w'-]+\s+){0,10}$", _I),
    re.compile(r"\b(?:they|which\s+best|best)\s+(?:\w+ly\s+)?$", _I),
    re.compile(r"\b(?:may|might|could|would|should|will)\s+(?:\w+ly\s+)?$", _I),
    re.compile(r"\b(?:with|the|an?|of|by|its|their)\s+$", _I),
]

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
    if any(t in low for t in _THEORY):
        return []
    evidence_cue = any(cue in low for cue in _EVIDENCE_WORDS) or (
        any(cue in low for cue in _EVIDENCE_STEMS) and bool(_EVIDENCE_CUE.search(sentence))
    )
    if not evidence_cue and not any(stem in low for stem in _STRONG_STEMS):
        return []  # weak triggers need evidence; a proposal sentence keeps only comparisons (C13)
    triggers = [
        m
        for m in _triggers(sentence)
        if not _blocked(sentence, m, evidence_cue) and not any(a <= m.start() < b for a, b in taken)
    ]
    out: list[dict[str, Any]] = []
    for clause, m in _clauses(sentence, triggers):
        free = _beside(sentence, clause, m.start(), taken)
        if free is not None:
            out.append(_qualitative_claim(sentence, m, free))
    return out


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
            if cut is None:
                return None  # "X significantly improves Y, achieving 5%": the numbers are it (C12)
            b = cut.start()
    return (a, b) if b > a else None


def _triggers(s: str) -> list[re.Match[str]]:
    """`_QUAL_TRIGGER.finditer(s)`, but tried only where a word starts as a trigger can (the
    regex has many alternatives; trying them at every character is the extractor's hot spot)."""
    out: list[re.Match[str]] = []
    pos = 0
    low = s.lower()
    possible: dict[str, bool] = {}  # rare first words: can the rest of their trigger occur?
    for w in _ALPHA_RUN.finditer(s):
        a = w.start()
        word = w.group(0).lower()
        prefix = word[:3]
        starts = _STARTS_BY_PREFIX.get(prefix)
        if starts is None or not word.startswith(starts) or a < pos or (a and s[a - 1].isalnum()):
            continue
        if prefix in _RARE_STARTS:
            ok = possible.get(prefix)
            if ok is None:
                ok = possible[prefix] = any(n in low for n in _RARE_STARTS[prefix])
            if not ok:
                continue
        m = _QUAL_TRIGGER.match(s, a)
        if m is not None:
            out.append(m)
            pos = m.end()
    return out


def _clauses(s: str, triggers: list[re.Match[str]]) -> list[tuple[tuple[int, int], re.Match[str]]]:
    """(clause span, its trigger) for each predicate: a new clause starts at a coordinator
    ('and', ', as well as', ';', ', while') before a verb trigger of its own."""
    out: list[tuple[tuple[int, int], re.Match[str]]] = []
    start = 0
    for m in triggers:
        cut = None
        if out and _VERB_TRIGGER.match(m.group("trigger")):
            for c in COORDINATOR.finditer(s, out[-1][1].end(), m.start()):
                cut = c
            if cut is not None and len(s[out[-1][1].end() : cut.start()].split()) < 2:
                cut = None  # "speed up and improve learning": one predicate (C4)
        if not out:
            out.append(((start, len(s)), m))
        elif cut is not None:
            prev_span, prev = out[-1]
            out[-1] = ((prev_span[0], cut.start()), prev)
            out.append(((cut.end(), len(s)), m))
    if out and len(out) == 1:
        also = _AS_WELL_AS.search(s, out[0][1].end())
        if also and _COMPARE_TRIGGER.match(out[0][1].group("trigger").lower()):
            # "outperform A on X, as well as B on Y": a second comparison
            span, m = out[0]
            out = [((span[0], also.start()), m), ((also.end(), span[1]), m)]
    return out


def _is_strong(s: str, m: re.Match[str]) -> bool:
    """A trigger that reports a result without further evidence: a comparison ('outperforms',
    'lower than typical ensembles', 'improves X over Y') or an asserted effect."""
    if _STRONG_TRIGGER.match(m.group("trigger")):
        return True
    end = s.find(";", m.end())
    return bool(_BASELINE_AFTER.search(s, m.end(), min(end if end >= 0 else len(s), m.end() + 100)))


def _blocked(s: str, m: re.Match[str], evidence_cue: bool = True) -> bool:
    pos = m.start()
    trigger = m.group("trigger")
    if pos > 1 and s[pos - 1] in "-‑" and s[pos - 2].isalnum():
        return True  # "perplexity-matched"
    last = trigger.split()[-1]
    if (
        _CHANGE_VERB.fullmatch(last)
        and not _NOUN_END.search(last)
        and _INTRANSITIVE.match(s, m.end())
    ):
        return True  # "as context length increases", "which reduce to dendrograms"
    prefix = s[max(0, pos - 60) : pos]
    effect = _EFFECT_TRIGGER.match(trigger)  # "experiments ... to prove the efficacy of X" (C14)
    if any(p.search(prefix) for p in (_BLOCK_BEFORE[1:] if effect else _BLOCK_BEFORE)):
        return True
    if not evidence_cue and (not _is_strong(s, m) or s.rfind("(", 0, pos) > s.rfind(")", 0, pos)):
        return True  # "a module that enhances X", "more important than avoiding errors", or a
        # parenthetical definition: "the Condorcet winner (which beats all other options)"
    if trigger.lower().startswith("match") and not (evidence_cue or _PERF_OBJECT.match(s, m.end())):
        return True  # "a policy whose distribution matches the target": a design
    return background_before(s, m.end())


def _qualitative_claim(s: str, m: re.Match[str], clause: tuple[int, int]) -> dict[str, Any]:
    span = _qualitative_span(s, m.start(), clause)
    evidence = s[span[0] : span[1]]
    return {
        "statement": statement_of(evidence, None),
        "kind": "qualitative",
        "metric": _qualitative_metric(s, m),
        "value": None,
        "unit": None,
        "dataset": dataset_near(s, m.end(), span),
        "comparison": _qualitative_comparison(s, m),
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


def _qualitative_metric(s: str, m: re.Match[str]) -> str | None:
    trigger = m.group("trigger").lower()
    if _OBJECT_TRIGGER.match(trigger.split()[-1]):
        inner = _IN_TERMS_OF.match(s, m.end())
        phrase = noun_phrase(s, inner.end() if inner else m.end())
        if phrase and not phrase.lower().startswith(("by ", "over ", "on ", "and ")):
            return phrase
    for word, name in _ADJ_METRIC.items():
        if trigger.endswith(word):
            return name
    if "performance" in s[max(0, m.start() - 30) : m.end() + 30].lower():
        return "performance"
    return None


def _qualitative_comparison(s: str, m: re.Match[str]) -> str | None:
    trigger = m.group("trigger").lower()
    pos = m.end()
    if _COMPARE_TRIGGER.match(trigger):
        chained = CHAINED_VERB.match(s, pos)
        pos = chained.end() if chained else pos
        perf = PERFORMANCE_OF.match(s, pos)
        phrase = noun_phrase(s, perf.end() if perf else pos)
        if phrase:
            return phrase
    return comparison_in(s[m.end() :]) or sentence_comparison(s)
