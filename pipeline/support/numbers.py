"""Whether the abstract states a number: foreign numbers, quantities, units, number words.

- `foreign_numbers(text, allowed)`: numbers of `text` missing from `allowed`, with digits
  folded first (superscripts, full-width digits) and digits glued to a word counted.
- `ungrounded_quantities(text, abstract)`, `foreign_number_words(text, abstract)`: a TL;DR's
  quantities and counts in words the abstract does not state; `ungrounded_numbers(text,
  evidence, abstract)`: a statement's numbers its evidence (quantities, units) or abstract
  (named numbers, numbers in words) does not hold.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from pipeline.support.names import name_supported
from pipeline.support.words import (
    _DECIMAL_DOT,
    _DIGITS,
    _MARKUP,
    _SUPERSCRIPTS,
    WORDS,
    _verbatim,
    abstract_index,
    numbers_and_names,
    unmarked,
)
from pipeline.text import NUMBER_RE

_GLUED_DIGITS = re.compile(r"(?<=[^\W\d_])\d+(?:[.,]\d+)*|\d+(?:[.,]\d+)*(?=[^\W\d_])")


def foreign_numbers(text: str, allowed: frozenset[str] | set[str]) -> list[str]:
    """Numbers written in `text` (superscript and full-width digits folded, digits glued to a
    word included) that are not in `allowed`, in order, each once."""
    folded = _DECIMAL_DOT.sub(".", unicodedata.normalize("NFKC", text.translate(_SUPERSCRIPTS)))
    found = [m.group(0).replace(",", "") for m in NUMBER_RE.finditer(folded)]
    found += [m.group(0).replace(",", "") for m in _GLUED_DIGITS.finditer(folded)]
    out: list[str] = []
    for number in found:
        bare = number.rstrip(".")
        if bare not in allowed and bare not in out:
            out.append(bare)
    return out


def foreign_number_words(text: str, abstract: str) -> list[str]:
    """Counts spelled as words in `text` ("five benchmarks", "ten-fold") that the abstract
    states neither as the word nor in digits, in order, each once (grounding.yaml's
    `number_words`, where "one" is not, a pronoun as often as a count; nor "zero", which a
    TL;DR writes as a kind of method: "zero-shot", "zero-sum")."""
    out: list[str] = []
    for m in _NUMBER_WORD.finditer(text):
        word = m.group(0).lower()
        if word in out or word == "zero" or _verbatim(word, abstract):
            continue
        if NUMBER_WORDS[word] not in abstract_index(abstract).numbers:
            out.append(word)
    return out


_NUMBER = r"\d+(?:\.\d+)?"
_PERCENT_UNIT = r"\s*(?:%|percent\b|per\s*cent\b)"
_PERCENT = re.compile(rf"({_NUMBER}){_PERCENT_UNIT}", re.I)
# the abstract's percentages, both ends of a range included ("5-10%", "5 to 10 percent")
_PERCENT_RANGE = re.compile(
    rf"({_NUMBER})(?:\s*(?:-|\u2013|to)\s*({_NUMBER}))?{_PERCENT_UNIT}", re.I
)


def ungrounded_quantities(text: str, abstract: str) -> list[str]:
    """Quantities of `text` (a TL;DR) the abstract does not state as quantities: a number the
    abstract writes only inside a name ("100" of "CIFAR100") is none, and a percentage must
    be a percentage of the abstract ("1%" is not "1/128")."""
    quantities, _names = numbers_and_names(text)
    have_quantities, have_percents = _abstract_quantities(abstract)
    out = [q for q in quantities if q not in have_quantities]
    out += [f"{m.group(1)}%" for m in _PERCENT.finditer(text) if m.group(1) not in have_percents]
    return list(dict.fromkeys(out))


@lru_cache(maxsize=64)
def _abstract_quantities(abstract: str) -> tuple[frozenset[str], frozenset[str]]:
    plain = unmarked(abstract) if _MARKUP.search(abstract) else abstract
    quantities = set(numbers_and_names(plain)[0])
    quantities |= spelled_numbers(plain)
    percents = {n for m in _PERCENT_RANGE.finditer(plain) for n in m.groups() if n is not None}
    return frozenset(quantities), frozenset(percents)


# Numbers written as words: a statement's "three APIs" needs "three" or "3" in its evidence.
NUMBER_WORDS = {word: str(value) for word, value in WORDS.number_words.items()}
_NUMBER_WORD = re.compile(r"(?<![^\W_])(?:" + "|".join(NUMBER_WORDS) + r")(?![^\W_])", re.I)


def spelled_numbers(text: str) -> set[str]:
    """The numbers `text` writes in words, as digits ("two times" -> {"2"})."""
    return {NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in NUMBER_WORDS}


def ungrounded_numbers(text: str, evidence: str, abstract: str) -> list[str]:
    """What of the numbers in `text` (a claim's statement) is not grounded: each quantity
    in digits must be a number of `evidence` (in digits or words: "two times" holds 2), each
    named number ("CIFAR-10") a name of the abstract, each number in words ("three") a
    number of the abstract."""
    quantities, names = numbers_and_names(_ENUMERATOR.sub(" ", text))
    have_q, have_n = numbers_and_names(_ENUMERATOR.sub(" ", evidence))
    known = set(have_q) | {m.group(0).replace(",", "") for n in have_n for m in _DIGITS.finditer(n)}
    known |= spelled_numbers(evidence)
    out = [q for q in quantities if q not in known and not _versioned(q, text, abstract)]
    out += _unit_mismatches(text, evidence)
    out += [n for n in names if not name_supported(n, abstract)]
    # A number in words is often a reference ("none of the three claims"): it may stand
    # anywhere in the abstract, in words or digits.
    words = re.findall(r"[a-z]+", text.lower())
    if any(w in NUMBER_WORDS for w in words):
        said = set(re.findall(r"[a-z]+", abstract.lower()))
        digits = abstract_index(abstract).numbers
        for word in words:
            value = NUMBER_WORDS.get(word)
            if value is not None and word not in said and value not in digits:
                out.append(word)
    return list(dict.fromkeys(out))


# A list item's marker, "(1) strong privacy ..., or (2) ...": it counts items, it backs no
# quantity ("ε = 1" over "either (1) strong privacy guarantees").
_ENUMERATOR = re.compile(r"(?:^|(?<=[\s:;,]))\(\d{1,2}\)(?=\s)")


def _versioned(number: str, text: str, abstract: str) -> bool:
    """`number` is the version of a name (a word with a digit or an inner capital) that both
    texts write right before it ("wav2vec 2.0"): a name, not a quantity."""
    for m in re.finditer(rf"(\S+)\s+{re.escape(number)}(?![\d.]*\d)", text):
        name = m.group(1)
        named = any(ch.isupper() for ch in name[1:]) or (
            any(ch.isdigit() for ch in name) and any(ch.isalpha() for ch in name)
        )
        if named and re.search(rf"(?<!\S){re.escape(name)}\s+{re.escape(number)}\b", abstract):
            return True
    return False


_FACTOR_UNIT = r"\s*(?:[x\u00d7](?![a-z])|times\b|-?fold\b)"
# A number not inside a name ("LeNet-5"), then "%" or a factor unit if one follows.
_UNIT_KIND = re.compile(
    rf"(?<![\w.])(?<![^\W\d_]-)({_NUMBER})(?:({_PERCENT_UNIT})|({_FACTOR_UNIT}))?", re.I
)


def _unit_kinds(text: str) -> dict[str, set[str]]:
    """Number -> the kinds it is written with in `text`: "%" (a percentage), "x" (a factor:
    "5x", "5×", "5 times", "5-fold") or "" (bare)."""
    out: dict[str, set[str]] = {}
    for m in _UNIT_KIND.finditer(text):
        kind = "%" if m.group(2) else "x" if m.group(3) else ""
        out.setdefault(m.group(1), set()).add(kind)
    return out


def context_unit_mismatches(text: str, evidence: str, context: str) -> list[str]:
    """Percentages and factors of `text` that its evidence lacks and that the evidence's
    sentences write only as a bare count ("by up to 5%" backed by nothing but "5
    real-world datasets" next to the quote)."""
    said = _unit_kinds(text)
    quoted = _unit_kinds(evidence)
    around = _unit_kinds(context)
    return [
        f"{number}{kind}"
        for number, kinds in said.items()
        if number not in quoted and around.get(number) == {""}
        for kind in kinds
        if kind
    ]


def _unit_mismatches(text: str, evidence: str) -> list[str]:
    """Quantities of `text` written as a percentage or a factor that `evidence` writes only
    as the other ("5x compression" where the evidence has "5% accuracy")."""
    said = _unit_kinds(text)
    shown = _unit_kinds(evidence)
    out = []
    for number, kinds in said.items():
        have = shown.get(number)
        if have and "" not in have:
            out += [f"{number}{k}" for k in kinds if k and k not in have]
    return out
