"""The metric a result number measures, named as the abstract writes it (offline claims).

Tried in order, on the sentence around the number:

1. a unit that is itself the metric: "1.169 bpc", "32.1 BLEU", "3.83 MOS"; for an item of a
   list, the metric of the list's last item ("14.4%, 18.2% and 16.4% mAP");
2. the noun phrase right after the number: "9% relative improvement", "~39% FLOPS reduction",
   "16.4% mAP", "65.5% top-1 accuracy", "3x less memory"; a change noun with an object names
   the object ("a 9.7% increase in IoU" -> "IoU"); "N x faster" is a speedup;
3. before a "from A to B" change, the object of its verb ("reduce monitor recall from ...");
4. the phrase before "of"/"="/"is" and the number: "a classification accuracy of 96.32%",
   "an F1 score of 0.87", "an accuracy improvement of 5%";
5. the object of a change verb before "by" (or a bare "up to"): "improves average return by
   19%", "reduces the computation by up to 50%", "trim down the energy cost up to 40%"; or
   its subject: "the error drops by 9.3%";
6. "N% of X": "retaining 96% of reasoning performance" -> "reasoning performance";
7. a known metric name earlier in the clause ("mean AUROC +5.14%");
8. the metric of the result before it in the sentence ("by 19% over A and by 9% over B"),
   also when the phrase found is a bare change noun ("a METEOR score of 0.31, which is an
   improvement of 0.6" -> "METEOR").

Names are whole words of the sentence: never a fragment of a hyphenated word ("precision" in
"full-precision"), never a negated one ("no accuracy loss"), never a preposition ("up").
"""

from __future__ import annotations

import re

from pipeline.offline.claim_numbers import METRIC_CONTEXT, Hit
from pipeline.offline.claim_words import WORDS

_I = re.IGNORECASE
_MAX_WORDS = 4


# A whole word that can be part of a metric name: "top-1", "F1", "pass@1", "FLOPS", "speed-up".
_WORD = re.compile(r"[A-Za-z](?:[\w@/]|-(?!-))*\w|[A-Za-z]|\d(?:[\w@.]|-(?!-))*[A-Za-z]\w*")
_TOKEN = re.compile(r"\S+")
_NEGATION = WORDS.negation
_QUANTITY_OF = WORDS.quantity_of
_STOP = WORDS.metric_stop  # function words, verbs, comparison and degree words
_CHANGE_NOUN = re.compile(
    r"(?:improvements?|gains?|increases?|reductions?|decreases?|drops?|boosts?|degradations?"
    r"|loss|losses|declines?|rises?)",
    _I,
)
_PLURALS = WORDS.plurals
# "6x to 20x increases in throughput": a change noun (a stop word elsewhere) and its object
_CHANGE_IN = re.compile(
    r"\s+(?:improvements?|gains?|increases?|reductions?|decreases?|drops?|boosts?|rises?)"
    r"\s+(?:in|of)\s+(?:terms\s+of\s+)?(?:the\s+)?",
    _I,
)
# "by 16% (relative measure on success rate)", "120% (goal progress)": the quantity in words
_PAREN_NAME = re.compile(r"\s*\((?P<name>[A-Za-z][A-Za-z' -]{2,60})\)")
# "is 100 times easier than": the subject before "is" is what is compared, not a metric
_COMPARED_AFTER = re.compile(
    r"\s*(?:easier|harder|simpler|quicker|sparser|denser|bigger|greater|larger|smaller"
    r"|better|worse|shorter|longer)\b",
    _I,
)
_FASTER = re.compile(r"\)?\s*(?:\([^()]{1,20}\)\s*)?(?:faster|quicker)\b", _I)
_COMPARATIVE = re.compile(
    r"\s*(?:less|fewer|lower|smaller|cheaper|higher|more|larger|reduced|increased|improved)\s+", _I
)
_FOR_BOTH = re.compile(
    r"\s+for\s+both\s+(?:the\s+)?", _I
)  # "a drop of 1 point for both UAS and LAS"
_IN_TERMS_AFTER = re.compile(r"[^,;:()]{0,60}?\bin\s+terms\s+of\s+(?:the\s+|its\s+)?", _I)
_OBJECT = re.compile(r"\s+(?:in|of)\s+(?:terms\s+of\s+)?(?:the\s+)?", _I)
_OF_BEFORE = re.compile(
    r"\s+(?:of|=|:|is|was|reaches|reached|at|of\s+at\s+least|of\s+up\s+to|of\s+over)\s*"
    r"(?:about\s+|around\s+|approximately\s+"
    r"|only\s+|over\s+|up\s+to\s+|more\s+than\s+|nearly\s+|[~∼≈>]\s?)?$",
    _I,
)
_BY_BEFORE = re.compile(
    r"\s+by\s+(?:about\s+|around\s+|over\s+|more\s+than\s+|up\s+to\s+|as\s+much\s+as\s+"
    r"|nearly\s+|almost\s+"
    r"|roughly\s+|an?\s+(?:average\s+|overall\s+)?(?:factor\s+)?of\s+|[~∼≈]\s?)*$",
    _I,
)
_UP_TO_BEFORE = re.compile(r"\s+up\s+to\s*[~∼≈]?\s?$", _I)
# What follows a verb whose subject is the number ("61% found that", "72.5% preferred our").
_VERB_OF_SUBJECT = re.compile(r"\s+(?:that|our|the|their|its|it|them|us|this|these)\b", _I)
_CHANGE_VERB = re.compile(
    r"\b(?:improv(?:es|ed|e|ing)|enhanc(?:es|ed|e|ing)|boost(?:s|ed|ing)?|reduc(?:es|ed|e|ing)"
    r"|increas(?:es|ed|e|ing)|lower(?:s|ed|ing)?|cut(?:s|ting)?|decreas(?:es|ed|e|ing)"
    r"|rais(?:es|ed|e|ing)|shrink(?:s|ing)?|accelerat(?:es|ed|e|ing)|speed(?:s|ing)?\s+up"
    r"|trim(?:s|med|ming)?)(?:\s+down)?\s+",
    _I,
)
_PASSIVE_CHANGE = re.compile(
    r"\s+(?:is|are|was|were|can\s+be|gets?)?\s*(?:improved|reduced|increased|decreased|boosted"
    r"|lowered|cut|raised|drops?|dropped|falls?|fell|rises?|rose|goes\s+(?:up|down)"
    r"|improves|decreases|increases|shrinks)\s*$",
    _I,
)
# "accuracies above 75%": after these the phrase must end in a known metric name.
_BOUND_BEFORE = re.compile(
    r"\s+(?:above|below|over|under|beyond|exceeding|at\s+least|up\s+to|to)\s*[~∼≈]?\s?$", _I
)
_PAREN_BEFORE = re.compile(
    r"\s*\(\s*(?:less\s+than|more\s+than|up\s+to|over|about|only|nearly|[~∼≈<>]\s?)?\s*$", _I
)
_AT_TIME = re.compile(r"\s+at\s+(?:test|inference|training|run)(?:\s+time)?\s*$", _I)
_ACRONYM_TAIL = re.compile(r"\s*\([A-Z][\w-]{0,8}\)\s*$")  # "Inception Score (IS) of 148"
_OF_AFTER = re.compile(r"\)?\s+of\s+(?:the\s+|its\s+|their\s+)?(?:original\s+)?", _I)
_SPEED = re.compile(r"\b(?:faster|speed|speeds|accelerat\w*)\b", _I)
_BEAT_BY = re.compile(r"\b(?:outperform\w*|surpass\w*|beat\w*|exceed\w*)\b[^;]*\bby\s+\S*$", _I)
_AND_BY = re.compile(r"\b(?:and|or)\s+(?:by\s+|to\s+|of\s+)?(?:about\s+|up\s+to\s+|[~∼≈]\s?)?$", _I)
_ADVERB_BEFORE = re.compile(r"\baccurate(?:ly)?\s*\(?\s*[~∼≈]?\s*$", _I)
_THAN_AFTER = re.compile(
    r"\s*(?:higher|lower|better|worse|greater|smaller|larger|more|less|fewer)\s+than\b", _I
)
_DEGREE_TAIL = re.compile(
    r"\s*(?:nearly|about|around|roughly|approximately|almost|over|only|just|[~∼≈])\s*$", _I
)
_MODEL_NOUNS = WORDS.model_nouns
_CHANGE_QUALIFIERS = WORDS.change_qualifiers
_ARTICLES = WORDS.articles
_CLAUSE_BREAK = re.compile(r";|\b(?:while|whereas|but|which)\b", _I)
_DETERMINER = re.compile(r"(?:the|a|an|its|their|our|this|these|both)\s+", _I)


def quantitative_metric(
    s: str,
    hit: Hit,
    clause_start: int,
    previous: str | None,
    tail: Hit | None = None,
    item: bool = False,
    list_previous: str | None = None,
) -> str | None:
    """The metric name of result `hit` in sentence `s`, or None (see the module docstring).

    `clause_start` bounds the look-back; `previous` is the metric of the result before it in
    the sentence; `tail` the last item of the list `hit` belongs to (its metric is the list's);
    `item`: `hit` is one item of a list, whose metric may be named anywhere before it;
    `list_previous`: the metric of the item before it in the same list, named when nothing
    closer names one ("reduces the number of multiplications by 10.4x, 6.8x and 10.8x").
    """
    if hit.metric:
        return _name(hit.metric.split()) if hit.metric[-1] == "s" else hit.metric
    if tail is not None and tail is not hit:
        named = tail.metric or _after_number(s, tail)
        if named:
            return named
    named = _after_number(s, hit) or _paren_name(s, hit)
    if named and previous and tail is None and _bare_change(named):
        return previous  # "an accuracy of 83.7%, a 2.1% absolute improvement over X"
    if named:
        return named
    if hit.unit == "x" and _COMPARED_AFTER.match(s, hit.end):
        return list_previous  # "the pendulum problem is 100 times easier than ..."
    before = s[max(0, clause_start, hit.start - 100) : hit.start]
    if s.startswith("from", hit.start):
        passive = _PASSIVE_CHANGE.search(before)
        named = _verb_object(before) or _name(
            _phrase_back(before[: passive.start()] if passive else before)
        )
    else:
        named = (
            _before_of(before, s, hit)
            or _by_change(before)
            or _by_change_across(s, hit)
            or _subject_of_comparative(s, hit, before)
        )
        if named is None and _ADVERB_BEFORE.search(before):
            named = "accuracy"  # "probes can accurately (~90%) distinguish"
    named = named or _of_phrase(s, hit) or _known_metric(before)
    if named is None and hit.unit == "x" and _SPEED.search(before):
        named = "speedup"  # "enables faster inference (up to 4x)"
    if named is None and (item or _BEAT_BY.search(before)):
        named = _known_metric(s[: hit.start])  # "73% Top-5 accuracy, outperforming A by 28%"
    if named is None and _AND_BY.search(before):
        named = previous  # "by 19% over A and by 9% over B"
    if named and previous and tail is None and _bare_change(named):
        # "a METEOR score of 0.31, which is an improvement of 0.6", "an accuracy of 83.7%, a
        # 2.1% absolute improvement": the change is in the metric of the result before it
        return previous
    return named or list_previous


def _after_number(s: str, hit: Hit) -> str | None:
    """The phrase right after the number and its unit ('9% relative improvement')."""
    faster = _FASTER.match(s, hit.end)
    if faster:
        words, _end = _phrase_words(s, faster.end())  # "36% faster inference speed"
        return _name(words) if words and hit.unit != "x" else "speedup"
    change = _CHANGE_IN.match(s, hit.end)
    if change:
        inner, _end = _phrase_words(s, change.end())
        if inner and _metric_like(inner):
            return _name(inner)
    comp = _COMPARATIVE.match(s, hit.end)
    if comp:
        obj = _OBJECT.match(s, comp.end() - 1)  # "11% higher in accuracy than ..."
        inner = _phrase_words(s, obj.end())[0] if obj else []
        if inner and _metric_like(inner):
            return _name(inner)
    words, stop = _phrase_words(s, comp.end() if comp else hit.end)
    if not words:
        return None
    if comp and len(words) == 1 and not _named_quantity(words[0]):
        terms = _IN_TERMS_AFTER.match(s, stop)  # "88.6% less complex than X in terms of FLOPS"
        named = _phrase_words(s, terms.end())[0] if terms else []
        if named:
            return _name(named)
    if len(words) == 1 and _VERB_OF_SUBJECT.match(s, stop) and not _named_quantity(words[0]):
        return None  # "61% found that ...", "72.5% preferred our model": the number is a subject
    if _CHANGE_NOUN.fullmatch(words[-1]):
        obj = _OBJECT.match(s, stop)
        if obj:
            inner, _end = _phrase_words(s, obj.end())
            if inner and _metric_like(inner):
                return _name(inner)
    return _name(words)


def _bare_change(name: str) -> bool:
    """A change noun with at most a degree qualifier ('improvement', 'absolute improvement')."""
    *mods, last = name.split()
    return bool(_CHANGE_NOUN.fullmatch(last)) and all(w.lower() in _CHANGE_QUALIFIERS for w in mods)


def _named_quantity(word: str) -> bool:
    return bool(METRIC_CONTEXT.fullmatch(word) or _CHANGE_NOUN.fullmatch(word))


def _paren_name(s: str, hit: Hit) -> str | None:
    """A parenthesis right after the number that names the quantity in two to six words
    ('16% (relative measure on success rate)', '120% (goal progress)'); not an aside that
    opens with a function word ('(on average)', '(e.g. ...)') or a single word ('(absolute)')."""
    m = _PAREN_NAME.match(s, hit.end)
    if m is None:
        return None
    words = m.group("name").split()
    if not 2 <= len(words) <= 6 or words[0].lower() in _STOP or words[-1].lower() in _STOP:
        return None
    if not all(_WORD.fullmatch(w) for w in words):
        return None
    return _name(words)


def _metric_like(words: list[str]) -> bool:
    """An object that names a quantity ('accuracy', 'IoU'), not a model or a setting
    ('ResNet18', 'average')."""
    if words[0].lower() in {"average", "total", "general", "part", "some", "all"}:
        return False
    return bool(
        METRIC_CONTEXT.fullmatch(" ".join(words[-2:])) or METRIC_CONTEXT.fullmatch(words[-1])
    ) or all(w.islower() for w in words)


def _phrase_words(s: str, pos: int) -> tuple[list[str], int]:
    """Up to _MAX_WORDS whole words from `pos`, stopping at punctuation or a stop word; and
    where the last one ends."""
    words: list[str] = []
    end = pos
    for m in _TOKEN.finditer(s, pos, min(len(s), pos + 120)):
        token = m.group(0)
        core = token.rstrip(",.;:)]\"'")
        if core.lower() == "of" and words and words[-1].lower() in _QUANTITY_OF:
            words.append(core)  # "the number of test errors"
            continue
        if len(words) == _MAX_WORDS or not _WORD.fullmatch(core) or core.lower() in _STOP:
            break
        if words and len(core) > 4 and core.lower().endswith("ly"):
            break  # "5% test accuracy improvement universally": an adverb ends the name
        words.append(core)
        end = m.start() + len(core)
        if core != token:
            break
    return words, end


def _phrase_back(text: str) -> list[str]:
    """Up to _MAX_WORDS whole words ending `text`, stopping at punctuation or a stop word;
    nothing when the phrase is negated ('no accuracy'); 'Top-1 and Top-5 error' gives the
    shared head 'error'; 'the speedup at test time' stays whole."""
    at = _AT_TIME.search(text)
    if at:
        head = _phrase_back(text[: at.start()])
        return [*head, *at.group(0).split()] if head else []
    tokens = text[-120:].split()
    words: list[str] = []
    while tokens and len(words) < _MAX_WORDS:
        token = tokens.pop()
        core = token.lstrip("(\"'")
        if core.lower() == "of" and words and tokens and tokens[-1].lower() in _QUANTITY_OF:
            words.insert(0, core)  # "the number of parameters is reduced"
            continue
        if not _WORD.fullmatch(core) or core.lower() in _STOP or core.lower().endswith("ly"):
            if core.lower() in _NEGATION and words:
                return []
            if core.lower() == "and" and len(words) >= 2 and tokens and _modifier(tokens[-1]):
                return words[-1:]  # "Top-1 and Top-5 error": coordinated modifiers, one head
            break
        words.insert(0, core)
        if core != token:
            break
    return words


def _modifier(token: str) -> bool:
    """A word that can modify a metric head ('Top-1' in 'Top-1 and Top-5 error'), not a number
    or a function word ('166.3' in 'an IS of 166.3 and Frechet Inception Distance')."""
    core = token.strip("(),\"'")
    return bool(_WORD.fullmatch(core)) and core.lower() not in _STOP and core[:1].isalpha()


def _before_of(before: str, s: str = "", hit: Hit | None = None) -> str | None:
    """'a classification accuracy of 96.32%': the phrase before 'of' (or '=', ':', 'is', or a
    parenthesis: 'performance degradation (less than 2%)'). For 'an increase of 0.4 in
    F-measure' the object of the change names the metric."""
    m = _OF_BEFORE.search(before)
    if m is None:
        # "accuracies above 75%", "performance degradation (less than 2%)": only a metric name
        bound = _BOUND_BEFORE.search(before) or _PAREN_BEFORE.search(before)
        words = _phrase_back(before[: bound.start()]) if bound else []
        if words and (METRIC_CONTEXT.fullmatch(words[-1]) or _CHANGE_NOUN.fullmatch(words[-1])):
            return _name(words)
        return None
    words = _phrase_back(_ACRONYM_TAIL.sub("", before[: m.start()]))
    if (
        words
        and words[-1].lower() in _MODEL_NOUNS
        and not m.group(0).strip().startswith(("of", "="))
    ):
        return None  # "our model reaches 75.1%": the subject is the model, not a metric
    if words and hit is not None and _CHANGE_NOUN.fullmatch(words[-1]):
        obj = _OBJECT.match(s, hit.end) or _FOR_BOTH.match(s, hit.end)
        if obj:
            inner = _phrase_words(s, obj.end())[0]
            if inner:
                return _name(inner)
    return _name(words)


def _by_change(before: str) -> str | None:
    """'improves average return by 19%' -> 'average return'; 'the error drops by 9.3%'."""
    by = _BY_BEFORE.search(before)
    up_to = by is None
    m = by or _UP_TO_BEFORE.search(before)  # "trim down the energy cost up to 40%"
    if m is None:
        return None
    head = before[: m.start()]
    verb = None
    for v in _CHANGE_VERB.finditer(head):
        verb = v
    if verb is not None:
        det = _DETERMINER.match(head, verb.end())
        words, _end = _phrase_words(head, det.end() if det else verb.end())
        if words:
            return _name(words)
    if up_to:
        return None  # without "by", only a change verb's object names the metric
    passive = _PASSIVE_CHANGE.search(head)
    return _name(_phrase_back(head[: passive.start()])) if passive else None


def _by_change_across(s: str, hit: Hit) -> str | None:
    """'accelerates the inference speed of A (1.0), B and C by 1.87x': the change verb before a
    list of names whose commas cut the clause (not across ';' or a 'while'/'but' clause)."""
    start = max(0, hit.start - 150)
    if not _BY_BEFORE.search(s, start, hit.start):
        return None
    for m in _CLAUSE_BREAK.finditer(s, start, hit.start):
        start = m.end()
    return _by_change(s[start : hit.start])


def _subject_of_comparative(s: str, hit: Hit, before: str) -> str | None:
    """'achieves a signal-to-distortion ratio (SDR) nearly 2.2 points higher than X': the noun
    phrase the number makes higher or lower, after its determiner."""
    if not _THAN_AFTER.match(s, hit.end):
        return None
    head = _ACRONYM_TAIL.sub("", _DEGREE_TAIL.sub("", before))
    words = _phrase_back(head)
    rest = head[: len(head.rstrip())].split()
    if not words or len(rest) <= len(words) or rest[-len(words) - 1].lower() not in _ARTICLES:
        return None
    return _name(words)


def _verb_object(before: str) -> str | None:
    """'reduce monitor recall' (right before 'from A to B') -> 'monitor recall'."""
    verb = None
    for v in _CHANGE_VERB.finditer(before):
        verb = v
    if verb is None:
        return None
    det = _DETERMINER.match(before, verb.end())
    words, end = _phrase_words(before, det.end() if det else verb.end())
    return _name(words) if words and not before[end:].strip() else None


def _of_phrase(s: str, hit: Hit) -> str | None:
    """'retaining > 96% of reasoning performance' -> 'reasoning performance'."""
    m = _OF_AFTER.match(s, hit.end)
    return _name(_phrase_words(s, m.end())[0]) if m else None


def _known_metric(before: str) -> str | None:
    """The last known metric name in the clause before the number, with up to two modifiers
    ('mean AUROC +5.14%', 'in accuracy by 5%'); never 'performance', which names none."""
    found = None
    for m in METRIC_CONTEXT.finditer(before):
        found = m
    if found is None or (found.start() and before[found.start() - 1] in "-‑"):
        return None
    head = found.group("head")
    if head.lower().startswith("accurate"):
        return "accuracy"
    if head.lower() == "performance":
        return None
    if before[found.end() :].strip(" +−~∼≈:"):
        return _name(
            [head]
        )  # named further back ("mean AUROC ... (Facebook +12.59%"): the bare name
    mods = [w for w in _phrase_back(before[: found.start()])[-2:] if not _CHANGE_NOUN.fullmatch(w)]
    return _name([*mods, head])


def _name(words: list[str]) -> str | None:
    """Words joined as a metric name, plural metric heads folded ('accuracies' -> 'accuracy')."""
    # "5% relative to X", "96% of the samples generated by": not part of the name
    while words and (
        words[-1].lower() in {"relative", "per", "of"}
        or (words[-1].endswith("ed") and not words[-1].endswith("eed"))  # not "speed"
    ):
        words = words[:-1]
    name = " ".join(words).strip(" -/")
    if not any(c.isalpha() for c in name):
        return None
    low = name.lower()
    for plural, single in _PLURALS.items() if " of " not in low else ():
        if low.endswith(plural) and (len(low) == len(plural) or low[-len(plural) - 1] == " "):
            return name[: len(name) - len(plural)] + single
    return name
