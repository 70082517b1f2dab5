"""Claim fields besides the value and metric: comparison, dataset and a readable statement."""

from __future__ import annotations

import re

from pipeline.offline.claim_numbers import Hit
from pipeline.offline.claim_text import LEADING_JUNK, Caseless
from pipeline.offline.claim_words import WORDS
from pipeline.text import display_text

_MAX_PHRASE_WORDS = 7

_I = re.IGNORECASE


_OUTPERFORM = Caseless(r"\b(?:outperform\w*|surpass\w*)\s+", needs=("outperform", "surpass"))

CHAINED_VERB = re.compile(r"\s*(?:or|and)\s+(?:even\s+)?\w+(?:\s+with)?\s+", _I)

_COMPARISON_AFTER = Caseless(
    r"\b(?<![-‑])(?:than|over|compared\s+(?:to|with)|relative\s+to|versus|vs\.?|against"
    r"|competitive\s+(?:to|with)|outperform\w*|surpass\w*|beat(?:s|ing)?|exceed\w*"
    r"|match(?:es|ed|ing)?)\s+"
    r"(?!\d|time\b|the\s+course|a\s+wide|a\s+range)"
)

PERFORMANCE_OF = re.compile(r"(?:the\s+)?performance\s+of\s+", _I)

_COMPARISON_ANYWHERE = Caseless(
    r"\b(?:compared\s+(?:to|with)|relative\s+to)\s+", needs=("compared", "relative")
)

_PUNCT_END = re.compile(r"[,;:()\[\]\"“”—]|--|\.(?:\s|$)")

# Words that end a noun phrase: prepositions, conjunctions, participles opening a new clause.
_PHRASE_STOP = re.compile(
    r"on|in|across|at|while|with|by|when|for|especially|without|through|under|using|which|that"
    r"|showing|from|to|as|during|whereas|but|via|after|before|because|since|where|thereby"
    r"|leading|yielding|achieving|over|than|compared|against|versus|vs|making|demonstrating"
    r"|establishing|retaining|maintaining",
    _I,
)

_STATEMENT_JUNK = re.compile(
    rf"{LEADING_JUNK.pattern}|(?:achieving|yielding|obtaining|reaching|attaining)\s+", _I
)

_DETERMINER = re.compile(r"^(?:the|a|an|both|all|its|their|our|these|those)\s+", _I)

_VERBISH = WORDS.verbish

_NAME = r"[A-Z][\w'’.-]*[\w]"

_NAMES = rf"{_NAME}(?:\s+[A-Z0-9](?:[\w.-]*\w)?)?(?:(?:,\s*|\s+)(?:and\s+|or\s+)?{_NAME})*"

# "on" before its word boundary: a pattern that starts with a literal is searched much faster.
_ON_NAMES = re.compile(rf"on(?<=\bon)\s+(?:the\s+)?(?P<names>{_NAMES})")

_PAREN_NAMES = re.compile(
    rf"\b(?:datasets?|benchmarks?|tasks?|suites?|corpora)\s*\((?:e\.g\.,?\s*)?(?P<names>{_NAMES})\)"
)

_SUCH_AS_NAMES = re.compile(rf"\b(?:such\s+as|including)\s+(?P<names>{_NAMES})")

_ON_PHRASE = re.compile(r"\bon\s+(?P<phrase>[a-z][\w'-]*(?:\s+[\w'-]+){0,4})", _I)

_EXPERIMENTS_ON = re.compile(
    r"^(?:[\w-]+\s+){0,3}?(?:experiments|evaluations?|results|tests)\s+on\s+(?P<phrase>[^,]+?)"
    r"\s+(?:show|shows|demonstrate|demonstrates|reveal|reveals|confirm|confirms|indicate"
    r"|validate|verify)\b",
    _I,
)

_ON_LEAD = re.compile(r"On\s+([^,]{3,60}),")

_MODEL_NAME = re.compile(
    r"^(?:llama|gpt|qwen|gemma|medgemma|mistral|mixtral|claude|gemini|bert|roberta|t5|pythia|opt"
    r"|phi|deepseek|falcon|vicuna|olmo|vit|resnet|clip|mamba|palm|bloom|[ahv]100|tpu|gpu)"
    r"|\d+(?:\.\d+)?[BMK]\b",
    _I,
)

_BAD_PHRASE_START = WORDS.bad_phrase_start


def noun_phrase(s: str, pos: int) -> str | None:
    """The short noun phrase starting at `pos`, up to a clause boundary; None if too long."""
    rest = s[pos : pos + 160]
    end = _PUNCT_END.search(rest)
    head = rest[: end.start()] if end else rest
    # "prior, more complex methods": a lone adjective before a comma is not the whole phrase
    if end and end.group(0) == "," and head.strip().lower() in {"prior", "previous", "existing"}:
        more = _PUNCT_END.search(rest, end.end())
        head = rest[: more.start()] if more else rest
    words = _phrase_words(_DETERMINER.sub("", head.strip()))
    if not words or len(words) > _MAX_PHRASE_WORDS:
        return None
    return " ".join(words)


def _phrase_words(text: str) -> list[str]:
    """Words of `text` up to a stop word, or an 'and' that starts a new clause or result."""
    words = text.split()
    kept: list[str] = []
    for i, word in enumerate(words):
        nxt = words[i + 1].lower() if i + 1 < len(words) else ""
        if _PHRASE_STOP.fullmatch(word):
            break
        if word.lower() == "and" and (
            nxt in {"a", "an", "the", "up"}
            or nxt[:1].isdigit()
            or nxt in _VERBISH
            or nxt.endswith("ly")
        ):
            break
        kept.append(word)
    while kept and not kept[-1].strip(" .,;:*_"):
        kept.pop()
    if kept:
        kept[-1] = kept[-1].rstrip(" .,;:*_")
        kept[0] = kept[0].lstrip("*_")
    return [w for w in kept if w]


def comparison_in(text: str) -> str | None:
    m = _COMPARISON_AFTER.search(text)
    if m is None:
        return None
    perf = PERFORMANCE_OF.match(text, m.end())
    return noun_phrase(text, perf.end() if perf else m.end())


def sentence_comparison(s: str) -> str | None:
    m = _COMPARISON_ANYWHERE.search(s)
    if m is None:
        m = _OUTPERFORM.search(s)
    return noun_phrase(s, m.end()) if m else None


def dataset_near(s: str, pos: int, span: tuple[int, int]) -> str | None:
    """Benchmark named near the result: 'on X' after it, '(X and Y)' lists, 'Experiments on X'."""
    local = s[span[0] : span[1]]
    for pattern in (_PAREN_NAMES, _ON_NAMES) if "(" in s else (_ON_NAMES,):
        found = _names(pattern, local) or _names(pattern, s)
        if found:
            return found
    m = _ON_PHRASE.search(s, pos, span[1]) if pos <= span[1] else None
    if m:
        phrase = _dataset_phrase(m.group("phrase"))
        if phrase:
            return phrase
    m = _EXPERIMENTS_ON.search(s)
    if m:
        such = _SUCH_AS_NAMES.search(m.group("phrase"))
        return _good_names(such.group("names")) if such else _dataset_phrase(m.group("phrase"))
    m = _ON_LEAD.match(s)
    return _dataset_phrase(m.group(1)) if m else None


def item_dataset(s: str, hit: Hit, span: tuple[int, int]) -> str | None:
    """The name before a number in a list item: 'Facebook +12.59%' -> 'Facebook'."""
    name = s[span[0] : hit.start].strip(" :(")
    if name and name[0].isupper() and len(name.split()) <= 4 and not _MODEL_NAME.match(name):
        return name
    return None


def _names(pattern: re.Pattern[str], text: str) -> str | None:
    for m in pattern.finditer(text):
        names = _good_names(m.group("names"))
        if names:
            return names
    return None


def _good_names(names: str) -> str | None:
    names = names.strip(" .,")
    first = names.split()[0] if names.split() else ""
    if not first or _MODEL_NAME.match(first) or first.lower() in _BAD_PHRASE_START:
        return None
    return names


def _dataset_phrase(phrase: str) -> str | None:
    end = _PUNCT_END.search(phrase)
    words = _phrase_words(phrase[: end.start()] if end else phrase)
    if not words or len(words) > 5 or words[0].lower() in _BAD_PHRASE_START:
        return None
    if words[0][0].isdigit() or _MODEL_NAME.match(words[0]):
        return None
    return " ".join(words)


def statement_of(evidence: str, head: str | None) -> str:
    """A readable one-sentence statement: the evidence (with its list head) minus markup."""
    if head:
        head = head.strip(" (,:")
        joint = " " if head.rsplit(" ", 1)[-1].lower() in {"of", "by", "to", "in", "at"} else ": "
        text = head + joint + evidence
    else:
        text = evidence
    lead = _STATEMENT_JUNK.match(text)
    text = text[lead.end() :] if lead and lead.end() < len(text) else text
    text = display_text(text).replace("\\%", "%").replace("**", "")
    text = text.strip(" ,;:")
    if not text:
        return evidence
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
