"""What in an abstract supports a name, a number or a tag that a model put in an answer.

Everything a reader sees is checked against the abstract (pipeline/stages/ calls these):

- `name_supported(name, abstract)`: a dataset, baseline, keyword or a name in a TL;DR
  occurs in the abstract, tolerant of presentation only:
  - case, typography (Unicode dashes, quotes, TeX), hyphens and spaces ("CIFAR-10" =
    "CIFAR10" = "CIFAR 10"), and a plural "s" ("GANs" = "GAN");
  - a list is checked item by item ("MNIST, CIFAR-10 and SVHN");
  - generic words may be added or left out ("the CIFAR-10 dataset", "strong baselines");
    every other word must occur in the abstract, and the parts of a hyphenated or glued
    compound ("BERT-large", "ResNet50") in order, at most `COMPOUND_GAP` words apart;
  - abbreviation forms: an acronym for a run of the abstract's words ("GAN" for "generative
    adversarial network"), a run of words for an acronym of the abstract, and the fixed
    forms of `ABBREVIATIONS` ("En-De" for "English-German");
  - every number must be a number of the abstract.
- `foreign_numbers(text, allowed)`: numbers of `text` missing from `allowed`, with digits
  folded first (superscripts, full-width digits) and digits glued to a word counted.
- `name_tokens(text)`: the acronyms and capitalized names of a sentence (what a TL;DR must
  not invent); `name_runs(text)`: runs of them written together, each one name
  ("Value Iteration Networks"); `unsupported_names(text, abstract)`: those the abstract
  does not write.
- `statement_problems(...)`: what a claim's statement shows that its evidence or abstract
  does not; `comparison_widened(abstract, span)`: evidence grown to the comparison of its
  sentence when a statement claims one the quote left out.
- `supported_tags(abstract, taxonomy)`: the taxonomy tags for which the abstract gives some
  support (see `pipeline.offline.tags.support`): a label, synonym or cue phrase of the tag,
  the words of its id, a contribution cue, or support for a narrower tag.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from pipeline.datafiles import DataFile, Words, WordSet, common_words, load_data
from pipeline.folding import GREEK as _GREEK
from pipeline.folding import SYMBOLS as _SYMBOLS
from pipeline.taxonomy import Taxonomy
from pipeline.text import NUMBER_RE, sentence_bounds

COMPOUND_GAP = 2  # words allowed between the parts of a compound ("English-to-German")
MAX_SUPPORT_CHARS = 20_000  # tags are checked against the start of a longer text
DATA_FILE = "grounding.yaml"


class GroundingWords(DataFile):
    """The format of prompts/grounding.yaml (what each list is for is written there)."""

    generic_words: WordSet
    small_words: WordSet
    abbreviations: dict[str, str]
    number_words: dict[str, int]
    function_words: WordSet
    antonyms: tuple[tuple[str, str], ...]
    superiority_words: Words
    comparison_words: Words
    parity_words: Words
    distinct_stems: dict[str, str]
    metric_names: WordSet
    support_phrases: dict[str, tuple[str, ...]]
    ambiguous_support_phrases: dict[str, tuple[str, ...]]
    vocabulary_stop: WordSet
    umbrellas: dict[str, tuple[str, ...]]


WORDS = load_data(DATA_FILE, GroundingWords)
# Words a name may add or leave out: what kind of thing it is, not which one.
GENERIC_WORDS = WORDS.generic_words
# Fixed abbreviation forms: each key stands for its value and the value for the key.
ABBREVIATIONS = WORDS.abbreviations

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
_LIST_SEPARATORS = re.compile(r"\s*(?:[,;/&]|\band\b|\bor\b|\bvs\.?|\bversus\b)\s*", re.I)
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉", "01234567890123456789")
# A raised dot between digits is a decimal point in print ("99·9%" is 99.9%).
_DECIMAL_DOT = re.compile(r"(?<=\d)[\u00b7\u2219\u22c5](?=\d)")
_GLUED_DIGITS = re.compile(r"(?<=[^\W\d_])\d+(?:[.,]\d+)*|\d+(?:[.,]\d+)*(?=[^\W\d_])")
_MARKUP = re.compile(r"[\\$*_{}^`]")  # TeX or Markdown that spans.fold reads through
_NAME_TOKEN = re.compile(r"[^\s,;:()\[\]{}\"“”‘’]+")


def _stem(token: str) -> str:
    """A plural folded onto its singular (consistently, not linguistically)."""
    if len(token) <= 3 or not token.endswith("s") or token.endswith(("ss", "us", "is")):
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("sses", "xes", "ches", "shes")):
        return token[:-2]
    return token[:-1]


_TEX = re.compile(r"\\([A-Za-z]+)(\{?)|\\(.)|[${}^_*`]")
# Unicode symbols and Greek letters as words, the way pipeline.spans.fold reads them.
_SYMBOL_TABLE = str.maketrans(
    {
        **{ch: f" {name} " for ch, name in _GREEK.items()},
        **{k: f" {v} " for k, v in _SYMBOLS.items() if len(k) == 1},
    }
)


def _tex_word(m: re.Match[str]) -> str:
    name, brace, char = m.group(1), m.group(2), m.group(3)
    if name is not None:
        if name in _SYMBOLS:
            return f" {_SYMBOLS[name]} "  # \times -> x, \sim -> ~
        return "" if brace else f" {name} "  # \textit{ -> nothing, \alpha -> alpha
    return char or ""  # \% -> %; $ { } ^ _ * ` dropped


def unmarked(text: str) -> str:
    """`text` without TeX and Markdown markup, symbols spelled as pipeline.spans.fold does
    (a cheap form of it for tokens: no offsets kept)."""
    if _MARKUP.search(text):
        text = _TEX.sub(_tex_word, text)
    return text if text.isascii() else text.translate(_SYMBOL_TABLE)


@lru_cache(maxsize=4096)
def tokens(text: str) -> list[str]:
    """Lowercase word and number tokens of `text` after folding typography; letters and
    digits split apart ("ResNet50" -> resnet, 50), plural "s" dropped (memoized: do not
    change the list)."""
    folded = unmarked(text).lower()
    if not folded.isascii():  # ligatures and full-width forms unfold, accents fold away
        folded = unicodedata.normalize("NFKC", folded.translate(_SUPERSCRIPTS))
        folded = "".join(
            ch for ch in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(ch)
        )
    stems = _STEMS
    out = []
    for t in _TOKEN.findall(folded):
        if t[0].isdigit():
            out.append(t.replace(",", ""))
            continue
        stem = stems.get(t)
        if stem is None:
            if len(stems) > 100_000:
                stems.clear()
            stem = stems[t] = _stem(t)
        out.append(stem)
    return out


_STEMS: dict[str, str] = {}


@dataclass(frozen=True)
class AbstractIndex:
    """An abstract's tokens, their positions, numbers and acronyms (built once per text)."""

    sequence: tuple[str, ...]
    positions: dict[str, list[int]]
    text: str  # the abstract (or the variant of it) the sequence was read from
    lemmas: bool = False  # the sequence holds lemmas (`lemma`), not tokens

    @cached_property
    def numbers(self) -> frozenset[str]:
        """Every number of the text: as written, and digit runs glued to words."""
        glued = frozenset(t for t in tokens(self.text) if t[0].isdigit())
        return glued | frozenset(m.group(0).replace(",", "") for m in NUMBER_RE.finditer(self.text))

    @cached_property
    def acronyms(self) -> frozenset[str]:
        """All-caps words of the text, lowercased, a plural "s" dropped."""
        found = re.finditer(r"\b[A-Z][A-Z0-9]*[A-Z]s?\b", self.text)
        return frozenset(m.group(0).lower().rstrip("s") for m in found)

    @cached_property
    def initials(self) -> frozenset[str]:
        """Initials of every run of 3-6 words ("gan", "ptb"), all words or content words
        only, and of every two content words in a row ("rl"); one-letter tokens ("i.e.")
        start no word (built when an acronym is first checked: a 1 MB abstract seldom needs
        it)."""
        words = [t for t in self.sequence if not t[0].isdigit() and len(t) > 1]
        content = [t for t in words if t not in _SMALL_WORDS]
        out: set[str] = set()
        for run, smallest in ((words, 3), (content, 2)):
            firsts = [w[0] for w in run]
            for size in range(smallest, 7):
                for i in range(len(firsts) - size + 1):
                    out.add("".join(firsts[i : i + size]))
        return frozenset(out)

    def has_run(self, parts: list[str], gap: int = 0) -> bool:
        """True when `parts` occur in this order, at most `gap` tokens apart."""
        if not parts:
            return True
        for start in self.positions.get(parts[0], ()):
            at = start
            for part in parts[1:]:
                nxt = [p for p in self.positions.get(part, ()) if at < p <= at + 1 + gap]
                if not nxt:
                    break
                at = nxt[0]
            else:
                return True
        return False


@lru_cache(maxsize=256)
def abstract_index(abstract: str) -> AbstractIndex:
    """The index of one abstract (memoized: every field of its answers asks)."""
    seq = tuple(tokens(abstract))
    positions: dict[str, list[int]] = {}
    for i, t in enumerate(seq):
        at = positions.get(t)
        if at is None:
            positions[t] = [i]
        else:
            at.append(i)
    return AbstractIndex(seq, positions, abstract)


_SMALL_WORDS = WORDS.small_words


def name_supported(name: str, abstract: str) -> bool:
    """True when `name` (a dataset, baseline, keyword, or a name in a sentence) occurs in the
    abstract up to presentation and abbreviation (see the module docstring)."""
    name = name.strip()
    if not name or _verbatim(name, abstract):
        return True
    parts = [p for p in _LIST_SEPARATORS.split(name) if p and p.strip()]
    for index in _name_indexes(abstract):
        if _supported_part(name, index):
            return True
        if len(parts) > 1 and all(_supported_part(p, index) for p in parts):
            return True
    return _unspaced(name, abstract)


def keyword_supported(keyword: str, abstract: str) -> bool:
    """True when a keyword occurs in the abstract as `name_supported` decides, and a keyword
    of several words has them in a row: keywords are copied from the abstract (the prompt
    asks so), while a dataset or baseline name may be assembled from its words."""
    if _verbatim(keyword, abstract):
        return True
    if not all(_written(a, abstract) for a in _LETTER_ACRONYM.findall(keyword)):
        return False  # "LC algorithm" for "Learning-Compression algorithm": the model's acronym
    if len(keyword.split()) < 2:
        return name_supported(keyword, abstract)
    plain = keyword == keyword.lower()
    return name_supported(keyword, abstract) and (
        _phrase_in_a_row(keyword, abstract, keep_generic=plain) or _unspaced(keyword, abstract)
    )


_ACRONYM = re.compile(r"[A-Z][A-Z0-9]*[A-Z]s?")
# An acronym of capital letters only, a word of its own (not a part of "ZO-SGD" or "A2C").
_LETTER_ACRONYM = re.compile(r"(?<![\w-])([A-Z]{2,})s?(?![\w-])")


def _written(acronym: str, abstract: str) -> bool:
    """The acronym, or its plural, is a word of the abstract, as written."""
    return re.search(rf"(?<![^\W\d_]){acronym}s?(?![^\W\d_])", abstract) is not None


def _phrase_in_a_row(name: str, abstract: str, *, keep_generic: bool = False) -> bool:
    """The phrase's words, lemmatized, in a row of the abstract (small and generic words
    aside, hyphens and PDF line breaks folded), an acronym standing for the words it
    abbreviates: "natural gradients" is in "the natural gradient", not in "natural or
    relative gradient descent"; "3D conditional GANs" is in "3D conditional Generative
    Adversarial networks (GANs)", "Deep CFR" is not in "neural CFR ... deep learning"."""
    index = _content_lemma_index(_line_joined(abstract))
    # A generic word the abstract uses elsewhere is kept when asked: "virtual adversarial
    # training" is not in "Virtual Adversarial Domain Adaptation ... adversarial training";
    # one it never uses is the model's addition ("gradient descent method").
    used = _word_set(abstract) if keep_generic else frozenset()
    kept = [
        t for t in tokens(name) if t not in _SMALL_WORDS and (t not in GENERIC_WORDS or t in used)
    ]
    words = [lemma(t) for t in kept]
    if index.has_run(words):
        return True
    acronyms = {m.group(0).lower().rstrip("s") for m in _ACRONYM.finditer(name)}
    if not acronyms & {t.rstrip("s") for t in kept}:
        return False
    pattern = [
        (w, t.rstrip("s") if t.rstrip("s") in acronyms else None)
        for w, t in zip(words, kept, strict=True)
    ]
    first, acronym = pattern[0]
    starts = range(len(index.sequence)) if acronym else index.positions.get(first, ())
    return any(_run_from(index.sequence, i, pattern) for i in starts)


def _run_from(seq: tuple[str, ...], i: int, pattern: list[tuple[str, str | None]]) -> bool:
    """`pattern` (lemma, acronym or None) matches `seq` from `i` on, word by word, an
    acronym also as the run of words it has the initials of."""
    if not pattern:
        return True
    word, acronym = pattern[0]
    if i < len(seq) and seq[i] == word and _run_from(seq, i + 1, pattern[1:]):
        return True
    if acronym is None or i + len(acronym) > len(seq):
        return False
    initials = "".join(w[0] for w in seq[i : i + len(acronym)])
    return initials == acronym and _run_from(seq, i + len(acronym), pattern[1:])


# "StarCraft II", "Atari 2600 III": a sequel's numeral is no acronym of the abstract's words
_ROMAN = frozenset(["ii", "iii", "iv", "vi", "vii", "viii", "ix", "xi", "xii"])
_SQUEEZE = re.compile(r"[\s\-\u2010-\u2015'\u2018\u2019`]+")
MIN_UNSPACED_CHARS = 12


def _unspaced(name: str, abstract: str) -> bool:
    """A name of several words found in the abstract once spaces, hyphens and apostrophes
    are ignored: a PDF lost a space ("publishedstate-of-the-art" for "published
    state-of-the-art", "OpenAI’sGymand Deep-Mind’sdm-control" for "OpenAI's Gym and
    DeepMind's dm-control")."""
    low = name.lower()
    squeezed = _SQUEEZE.sub("", low)
    return (
        len(squeezed) >= MIN_UNSPACED_CHARS
        and " " in low.strip()
        and any(squeezed in _SQUEEZE.sub("", text) for text in _lowered(abstract))
    )


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_LINE_HYPHEN = re.compile(r"(?<=[^\W\d_])-\s+(?=[^\W\d_])")


def _name_indexes(abstract: str) -> Iterator[AbstractIndex]:
    """The abstract as written, with words glued at a case change split ("photorealisticAI2THOR"
    -> "photorealistic AI2THOR") and with PDF line-break hyphens joined ("poli- cies"), and the
    lemmas of that last one ("hierarchically structured policies" has "hierarchical policy");
    each built only when the one before did not have the name."""
    yield abstract_index(abstract)
    yield abstract_index(_CAMEL.sub(" ", abstract))
    joined = _line_joined(abstract)
    yield abstract_index(joined)
    yield _lemma_index(joined)


@lru_cache(maxsize=64)
def _line_joined(abstract: str) -> str:
    """The abstract with PDF line-break hyphens joined ("poli- cies" -> "policies")."""
    return _LINE_HYPHEN.sub("", abstract)


@lru_cache(maxsize=64)
def _lowered(abstract: str) -> tuple[str, ...]:
    """The abstract in lowercase, as written and with markup folded away ("**C**onflict")."""
    low = abstract.lower()
    folded = " ".join(unmarked(abstract).lower().split()) if _MARKUP.search(abstract) else low
    return (low,) if folded == low else (low, folded)


def _verbatim(name: str, abstract: str) -> bool:
    """The name as written, any case, as whole words of the abstract (the common case)."""
    low = name.lower()
    return any(_whole_words(low, text) for text in _lowered(abstract))


def _whole_words(low: str, text: str) -> bool:
    at = text.find(low)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + len(low)] if at + len(low) < len(text) else " "
        if not (before.isalnum() and low[0].isalnum()) and not (
            after.isalnum() and low[-1].isalnum()
        ):
            return True
        at = text.find(low, at + 1)
    return False


def _supported_part(name: str, index: AbstractIndex) -> bool:
    norm = (lambda t: lemma(t)) if index.lemmas else (lambda t: t)
    whole = [norm(t) for t in tokens(name)]
    if not whole:
        return True
    if index.has_run(whole):
        return True
    for compound in name.split():
        parts = [norm(p) for p in tokens(compound) if p not in GENERIC_WORDS or p[0].isdigit()]
        if not parts:
            continue
        # "ZO-SGD", all of whose parts are acronyms, is one name: "ZO-signSGD" is not it
        pieces = [p for p in compound.split("-") if p]
        gap = 0 if len(pieces) > 1 and all(_ACRONYM.fullmatch(p) for p in pieces) else COMPOUND_GAP
        if not _compound_supported(parts, index, gap):
            return False
    return True


def _compound_supported(parts: list[str], index: AbstractIndex, gap: int = COMPOUND_GAP) -> bool:
    if index.has_run(parts, gap):
        return True
    joined = " ".join(parts)
    short = (
        joined if joined in ABBREVIATIONS else joined[:-1] if joined[:-1] in ABBREVIATIONS else ""
    )
    if short and index.has_run(_long_form(ABBREVIATIONS[short], index), COMPOUND_GAP):
        return True  # "CNNs" for "deep convolutional networks"
    long_forms = [k for k, v in ABBREVIATIONS.items() if v == joined]
    if any(index.has_run(k.split()) for k in long_forms):
        return True
    if len(parts) > 1:
        # A hyphenated pair of fixed forms ("En-De" for "English-German").
        expanded = [ABBREVIATIONS.get(p, p) for p in parts]
        if expanded != parts and index.has_run(" ".join(expanded).split(), COMPOUND_GAP):
            return True
    years = [("20" + p if len(p) == 2 and p.isdigit() else p) for p in parts]
    if years != parts and (
        index.has_run(years, COMPOUND_GAP)
        or index.has_run(
            [("19" + p if len(p) == 2 and p.isdigit() else p) for p in parts], COMPOUND_GAP
        )
    ):
        return True  # "WMT'14" for "WMT 2014"
    letters = "".join(parts)
    # an acronym of a run of the abstract's words ("GAN" for "generative adversarial nets")
    if (
        len(parts) == 1
        and letters.isalpha()
        and 2 <= len(letters) <= 6
        and letters not in _ROMAN
        and (letters in index.initials)
    ):
        return True
    # a run of words whose acronym the abstract uses
    return (
        len(parts) >= 2
        and all(p.isalpha() for p in parts)
        and "".join(p[0] for p in parts) in index.acronyms
    )


def _long_form(words: str, index: AbstractIndex) -> list[str]:
    """The words of an abbreviation's long form as `index` holds them (lemmas or words)."""
    return [lemma(w) for w in words.split()] if index.lemmas else words.split()


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


_DIGITS = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_DIGIT_WORD = re.compile(r"\S*\d\S*")  # a whitespace-separated word with a digit
_ANY_DIGIT = re.compile(r"\d")
# "2D", "3-D", "3D-CNN": a dimension is a name (see ABBREVIATIONS), not a quantity
_DIMENSION = re.compile(r"[1-4]-?[dD](?![^\W_])")
_LETTER = re.compile(r"[^\W\d_]")
# "r=+1", "k=5", "p<0.05": a number a variable is set to or compared with is a quantity
_ASSIGNED = re.compile(r"[=<>\u2264\u2265\u2248~][+\-\u2212]?$")


def numbers_and_names(text: str) -> tuple[list[str], list[str]]:
    """(quantities, named numbers) written in `text`: a number after a letter in the same
    word ("CIFAR-10", "ResNet50", "GPT-4", "x50") belongs to a name, and the word is
    returned whole, unless it is set or compared ("r=+1", "p<0.05"); every other number
    ("35.2%", "3.28x", "10k") is a quantity."""
    folded = (
        text
        if text.isascii()
        else _DECIMAL_DOT.sub(".", unicodedata.normalize("NFKC", text.translate(_SUPERSCRIPTS)))
    )
    quantities: list[str] = []
    names: list[str] = []
    for found in _DIGIT_WORD.finditer(folded):
        core = found.group(0).strip(".,;:!?()[]{}\"'")
        if _DIMENSION.match(core):
            if core not in names:
                names.append(core)
            continue
        for m in _DIGITS.finditer(core):
            before = core[: m.start()]
            if _LETTER.search(before) and not _ASSIGNED.search(before):
                if core not in names:
                    names.append(core)
            else:
                quantities.append(m.group(0).replace(",", ""))
    return quantities, names


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
    quantities, names = numbers_and_names(text)
    have_q, have_n = numbers_and_names(evidence)
    known = set(have_q) | {m.group(0).replace(",", "") for n in have_n for m in _DIGITS.finditer(n)}
    known |= spelled_numbers(evidence)
    out = [q for q in quantities if q not in known]
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


# Word pairs of opposite meaning: a statement that says one where its evidence says the
# other (and not the first) contradicts it. Compared as lemmas.
ANTONYMS = WORDS.antonyms


def _lemmas(text: str) -> set[str]:
    return {lemma(t) for t in tokens(text)}


# Words that claim a result beats something: a statement may say one only when its evidence
# states a comparison too (a superiority word, "than", "over", "compared", "vs") or a number.
SUPERIORITY_WORDS = WORDS.superiority_words
COMPARISON_WORDS = WORDS.comparison_words


@lru_cache(maxsize=1)
def _superiority() -> tuple[frozenset[str], frozenset[str]]:
    """(lemmas of SUPERIORITY_WORDS, lemmas of the superiority and comparison words)."""
    # "state-of-the-art" as `tokens` reads it without hyphens too ("stateoftheart")
    claims = frozenset(lemma(v) for w in SUPERIORITY_WORDS for v in (w, w.replace("-", "")))
    return claims, claims | frozenset(lemma(w) for w in COMPARISON_WORDS)


# A run of capitalized words ("Faster R-CNN", "Better Together Net"): a name, when the
# abstract writes it so, whose words claim nothing.
_CAPITALIZED_RUN = re.compile(r"\b[A-Z][\w'-]*(?:[ -][A-Z0-9][\w'-]*)+")


def unstated_superiority(statement: str, evidence: str, abstract: str = "") -> str | None:
    """The superiority word of a statement whose evidence states no comparison at all, or
    states it only after a parity word ("outperforms" for "matches the state of the art"),
    else None; the words of a name the abstract writes ("Faster R-CNN") are no claim."""
    claims, comparisons = _superiority()
    claimed = next((w for t in _unmatched(tokens(statement)) if (w := lemma(t)) in claims), None)
    if claimed is not None and abstract:  # names are looked up only for a claiming word
        unnamed = _CAPITALIZED_RUN.sub(
            lambda m: " " if _verbatim(m.group(0), abstract) else m.group(0), statement
        )
        claimed = next((w for t in _unmatched(tokens(unnamed)) if (w := lemma(t)) in claims), None)
    if claimed is None:
        return None
    words = [*tokens(evidence), *tokens(evidence.replace("-", ""))]
    shown = {lemma(t) for t in _unmatched(words)}
    if shown & comparisons:
        return None
    return None if any(t[0].isdigit() for t in shown) and _states_quantity(evidence) else claimed


def _states_quantity(text: str) -> bool:
    """A quantity is written in `text`: a result to compare. The number of a name
    ("CIFAR-10", "GPT-4") is none; one glued to a word by a PDF ("attains76.8%") is."""
    quantities, names = numbers_and_names(text)
    return bool(quantities) or any(
        not any(ch.isupper() for ch in name) or "%" in name or re.search(r"\d\.\d", name)
        for name in names
    )


def _unmatched(words: list[str]) -> list[str]:
    """`words` without those a parity word governs: "matches state-of-the-art approaches"
    states no superiority."""
    out = []
    for k, word in enumerate(words):
        before = words[max(0, k - PARITY_REACH) : k]
        at = max((i for i, w in enumerate(before) if w in PARITY_WORDS), default=-1)
        if at >= 0 and _DISJUNCTS.isdisjoint(before[at + 1 :]):
            continue  # but "matches or outperforms", "similar (sometimes better)": stated
        out.append(word)
    return out


_DISJUNCTS = frozenset(("or", "and", "sometimes", "even", "often"))


PARITY_REACH = 3  # words a parity word governs after it ("comparable to the state-of-the-art")


_WORD_AT = re.compile(r"[^\W\d_][\w'-]*")
_CLAUSE_END = re.compile(r"[,;:]\s")  # within the sentence `sentence_bounds` gives
PARITY_WORDS = frozenset(tokens(" ".join(WORDS.parity_words)))  # as `tokens` writes them


def comparison_widened(abstract: str, span: tuple[int, int]) -> tuple[int, int] | None:
    """`span` grown, within its sentence, to the nearest superiority or comparison word
    outside it ("particularly for tail queries" in "X improves recall, particularly for tail
    queries" grows to "improves recall, particularly for tail queries"; a word after the span
    takes the rest of its clause), or None: when the sentence has none, or when the grown
    span says "competitive", "comparable" or the like (parity is no superiority)."""
    _claims, comparisons = _superiority()
    start, end = sentence_bounds(abstract, span)
    best: tuple[int, int, int] | None = None
    for m in _WORD_AT.finditer(abstract, start, end):
        if span[0] <= m.start() < span[1]:
            continue
        word = m.group(0).lower()
        if lemma(word) in comparisons or lemma(word.replace("-", "")) in comparisons:
            gap = span[0] - m.end() if m.end() <= span[0] else m.start() - span[1]
            if best is None or gap < best[0]:
                best = (gap, m.start(), m.end())
    if best is None:
        return None
    if best[1] < span[0]:
        wider = best[1], span[1]
    else:
        clause = _CLAUSE_END.search(abstract, best[2], end)
        stop = clause.start() if clause else end
        wider = span[0], len(abstract[:stop].rstrip(" \n.!?;:,"))
    return None if PARITY_WORDS.intersection(tokens(abstract[wider[0] : wider[1]])) else wider


_NEGATORS = frozenset(("not", "never", "no", "without"))
_NEGATIVE_PREFIXES = frozenset(("un", "in", "im", "ir", "il", "non", "non-"))
# Any word that may stem like an antonym: statements without one need no stemming.
_ANTONYM_HINT = re.compile(
    "|".join(sorted({w[:4] for pair in ANTONYMS for w in pair}, key=len, reverse=True)), re.I
)


def contradictions(statement: str, evidence: str) -> list[str]:
    """Where a statement says the opposite of its evidence: an antonym of a word the evidence
    uses (and the statement does not), unless the statement's word is the evidence's with a
    negative prefix and the evidence negates it ("unseen" for "not seen"). A dropped
    negation is not caught: statements say "keeps accuracy" for "without decreasing
    accuracy" too often."""
    if not _ANTONYM_HINT.search(statement):
        return []
    prefixes = _antonym_prefixes()
    said_tokens = tokens(statement)
    said = {lemma(t) for t in said_tokens if t[:4] in prefixes}
    shown_tokens = tokens(evidence)
    shown = {lemma(t) for t in shown_tokens if t[:4] in prefixes}
    out = []
    for x, y, lx, ly in _antonym_lemmas():
        if lx in said and ly in shown and lx not in shown and ly not in said:
            if (
                x.endswith(y)
                and x[: -len(y)] in _NEGATIVE_PREFIXES
                and ly in _negated(shown_tokens)
            ) or (
                y.endswith(x) and y[: -len(x)] in _NEGATIVE_PREFIXES and lx in _negated(said_tokens)
            ):
                continue  # "unseen" for "not seen", "without supervision" for "unsupervised"
            out.append(f"{x!r} where its evidence says {y!r}")
    return out


def _negated(words: list[str]) -> set[str]:
    """Lemmas of the words right after a "not", "never", "no" or "without" (an article or
    "any" between: "without any supervision")."""
    out = set()
    for k, before in enumerate(words[:-1]):
        if before in _NEGATORS:
            after = k + 1
            while after < len(words) - 1 and words[after] in _NEGATION_FILLERS:
                after += 1
            out.add(lemma(words[after]))
    return out


_NEGATION_FILLERS = frozenset(("any", "a", "an", "the"))


@lru_cache(maxsize=1)
def _antonym_prefixes() -> frozenset[str]:
    """First four letters of every antonym: only such words need a lemma."""
    return frozenset(w[:4] for pair in ANTONYMS for w in pair)


@lru_cache(maxsize=1)
def _antonym_lemmas() -> tuple[tuple[str, str, str, str], ...]:
    """(word, opposite, their lemmas) both ways round, for every pair of ANTONYMS."""
    return tuple((x, y, lemma(x), lemma(y)) for a, b in ANTONYMS for x, y in ((a, b), (b, a)))


# Words of a statement that say nothing of its content.
_FUNCTION_WORDS = WORDS.function_words
MAX_NEW_WORDS = 2  # content words a statement may add to what the abstract says


@lru_cache(maxsize=64)
def _word_set(abstract: str) -> frozenset[str]:
    """The abstract's tokens as a set (`tokens`, without building its index)."""
    return frozenset(tokens(abstract))


def new_words(statement: str, abstract: str) -> list[str]:
    """Content words of a statement found nowhere in the abstract, as lemmas ("helpful" in
    "reviewers found it helpful" when the abstract never says so)."""
    same = _word_set(abstract)  # the word itself: no stemming needed
    out = []
    for t in tokens(statement):
        if t[0].isdigit() or len(t) <= 2 or t in same or t in _FUNCTION_WORDS:
            continue
        if (
            t not in GENERIC_WORDS
            and t not in out
            and lemma(t) not in _lemma_index(abstract).positions
        ):
            out.append(t)
    return out


def statement_problems(
    statement: str, evidence: str, abstract: str, context: str | None = None
) -> list[str]:
    """What a claim's statement shows that its evidence (numbers; `context`, the sentences
    the evidence lies in, when given) or the abstract (names) does not, or where it
    contradicts its evidence; [] when it is grounded."""
    problems = [f"{n!r}, which its evidence does not hold" for n in
                ungrounded_numbers(statement, context or evidence, abstract)]  # fmt: skip
    said = " ".join(statement.rstrip(". ").lower().split())
    if evidence.lower() in said and said in " ".join((context or abstract).lower().split()):
        # The statement is the evidence's own sentence (what the offline extractor writes):
        # its names and words are the abstract's, and it cannot contradict itself.
        return problems
    problems += [
        f"{n!r}, which the abstract does not name" for n in unsupported_names(statement, abstract)
    ]
    problems += contradictions(statement, evidence)
    if (claimed := unstated_superiority(statement, evidence, abstract)) is not None:
        problems.append(f"a claim of superiority ({claimed!r}) its evidence does not state")
    added = new_words(statement, abstract)
    if len(added) > MAX_NEW_WORDS:
        listed = ", ".join(repr(w) for w in added)
        problems.append(f"words the abstract never uses ({listed}): say what it says")
    return problems


def name_tokens(sentence: str) -> list[str]:
    """The acronyms and capitalized names of a sentence: words with a capital after their
    first character ("GLUE", "ResNet", "IC3Net"), with a digit and a letter ("x50", "GPT-4"),
    or capitalized in the middle of the sentence ("Adam", "Atari")."""
    out: list[str] = []
    previous = ""
    for m in _NAME_TOKEN.finditer(sentence):
        word = m.group(0).strip(".!?'\"’")
        if word.endswith(("'s", "’s")):
            word = word[:-2]
        starts_sentence = not previous or previous.endswith((".", ":", "!", "?"))
        previous = m.group(0)
        if not word or (word.islower() and not _ANY_DIGIT.search(word)):
            continue  # a lowercase word without digits is no name: the common case
        if not any(ch.isalpha() for ch in word):
            continue
        if word[0].isdigit() and not numbers_and_names(word)[1]:
            continue  # a quantity with its unit ("2x", "10k", "5-way"): checked as a number
        parts = word.split("-")
        if len(parts) > 1 and not any(p.isdigit() for p in parts):
            # "GAN-generated", "VINS-initialized": the name is the name-like part; "MI-FGSM",
            # all of whose parts are names, is one name ("MI" alone abbreviates too much)
            named = [p for p in parts if p and _name_like(p, starts_sentence and p == parts[0])]
            greek = [p for p in parts if p in _GREEK]
            whole = named and len(named) + len(greek) == len([p for p in parts if p])
            out += [word] if whole else named  # "β-VAE" is one name too
        elif _name_like(word, starts_sentence):
            out.append(word)
    return out


def name_runs(sentence: str) -> list[str]:
    """Runs of two or more names written one after the other, spaces only between ("Value
    Iteration Networks", "KITTI MOTS"): one name each, which the abstract must write as a
    whole, not word by word."""
    names = set(name_tokens(sentence))
    if len(names) < 2:
        return []
    out: list[str] = []
    run: list[str] = []
    end = 0
    for m in _NAME_TOKEN.finditer(sentence):
        raw = m.group(0)
        core = raw.strip(".!?'\"’")
        possessive = core.endswith(("'s", "’s"))
        if possessive:
            core = core[:-2]
        if run and sentence[end : m.start()].strip(" "):
            out += [" ".join(run)] if len(run) >= 2 else []
            run = []
        if core in names and core.lower() not in WORDS.metric_names:
            run.append(core)
        else:
            out += [" ".join(run)] if len(run) >= 2 else []
            run = []
        if possessive or raw != raw.rstrip(".!?"):  # "MobileBERT's F1" is no one name
            out += [" ".join(run)] if len(run) >= 2 else []
            run = []
        end = m.end()
    return out + ([" ".join(run)] if len(run) >= 2 else [])


def unsupported_names(text: str, abstract: str) -> list[str]:
    """The names of `text` (`name_tokens`, then `name_runs`) the abstract does not write,
    each once."""
    unknown = [n for n in name_tokens(text) if not name_supported(n, abstract)]
    if not unknown:
        unknown = [r for r in name_runs(text) if not _run_written(r, abstract)]
    return list(dict.fromkeys(unknown))


def _run_written(run: str, abstract: str) -> bool:
    """A run of names stands in the abstract: as written (any case, hyphens, plurals), or
    as an acronym of it ("KITTI MOT" for "KITTI Multi-Object Tracking")."""
    if _verbatim(run, abstract) or _unspaced(run, abstract):
        return True
    # "Nesterov Momentum" for "Nesterov's momentum", "YouTube Content ID" for "YouTube's ..."
    bare = _POSSESSIVE.sub("", abstract)
    return _phrase_in_a_row(run, bare, keep_generic=True)


_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")


def _name_like(word: str, starts_sentence: bool) -> bool:
    letters = [ch for ch in word if ch.isalpha()]
    if not letters:
        return False
    inner_capital = any(ch.isupper() for ch in letters[1:])
    digit_and_letter = any(ch.isdigit() for ch in word)
    capitalized = letters[0].isupper() and not starts_sentence and len(letters) > 1
    return inner_capital or digit_and_letter or capitalized


def unsupported_tags(tags: list[str], abstract: str, taxonomy: Taxonomy) -> list[str]:
    """The tags of `tags` the abstract gives no support for (as `supported_tags` decides;
    the offline matcher's phrases first, the lexical checks only when they fall short)."""
    from pipeline.offline.tags import support

    if all(t in support(abstract[:MAX_SUPPORT_CHARS], taxonomy) for t in tags):
        return []
    supported = supported_tags(abstract, taxonomy)
    return [t for t in tags if t not in supported]


def unsupported_topics(text: str, abstract: str, taxonomy: Taxonomy) -> list[str]:
    """The phrases of `text` (a TL;DR) that name a taxonomy topic the abstract neither
    supports nor writes ("named entity recognition" in a TL;DR of a paper that never
    mentions it), each once."""
    from pipeline.offline.tags import topic_phrases

    found = topic_phrases(text, taxonomy)
    if not found:
        return []
    supported = supported_tags(abstract, taxonomy)
    out: list[str] = []
    for tag_id, phrase in found:
        if tag_id not in supported and phrase not in out and not name_supported(phrase, abstract):
            out.append(phrase)
    return out


def unconfirmed_tags(tags: list[str], abstract: str, taxonomy: Taxonomy) -> list[str]:
    """The supported tags of `tags` whose only support is an ambiguous phrase of theirs (the
    offline tagger's `weak` phrases and grounding.yaml's `ambiguous_support_phrases`, e.g.
    "generalization" for generalization-ood, "bias" for fairness, without the cue that
    settles it), scattered words of their vocabulary, or negated mentions ("does not use
    attention"): shown marked, not as fact."""
    from pipeline.offline.tags import negated_only, support

    abstract = abstract[:MAX_SUPPORT_CHARS]
    asserted = support(abstract, taxonomy) - negated_only(abstract, taxonomy)
    if all(t in asserted for t in tags):
        return []  # the offline matcher asserts each (the common case, and every offline answer)
    weak = _weakly_supported(abstract, taxonomy)
    return [t for t in tags if t in weak]


def _lexical_support(abstract: str, taxonomy: Taxonomy) -> frozenset[str]:
    """Tags whose id, label or support phrase stands in the abstract (lemmas in a row, small
    words aside: "models to lossless compression" is no "model compression"), or two
    distinct words of whose vocabulary do."""
    return _lexical(abstract, taxonomy)[0]


def _lexical(abstract: str, taxonomy: Taxonomy) -> tuple[frozenset[str], frozenset[str]]:
    """(`_lexical_support`, the tags of it whose only support there is an ambiguous phrase
    or vocabulary words)."""
    key = (abstract, id(taxonomy))
    hit = _LEXICAL.get(key)
    if hit is not None and hit[0] is taxonomy:
        return hit[1]
    lemmas = _content_lemma_index(abstract)
    phrases, vocabulary = _indexes(taxonomy)
    ambiguous = _weak_phrases(taxonomy)
    found: set[str] = set()
    weak: set[str] = set()
    hits: dict[str, int] = {}
    for word in lemmas.positions:
        for tag_id, phrase in phrases.get(word, ()):
            if tag_id not in found and lemmas.has_run(list(phrase)):
                if phrase in ambiguous.get(tag_id, ()):
                    weak.add(tag_id)
                else:
                    found.add(tag_id)
        for tag_id in vocabulary.get(word, ()):
            hits[tag_id] = hits.get(tag_id, 0) + 1
    # Scattered vocabulary words support a tag, but like an ambiguous phrase do not confirm it.
    weak.update(tag_id for tag_id, n in hits.items() if n >= VOCABULARY_HITS)
    if len(_LEXICAL) >= 64:
        _LEXICAL.pop(next(iter(_LEXICAL)))
    result = (frozenset(found | weak), frozenset(weak - found))
    _LEXICAL[key] = (taxonomy, result)
    return result


_LEXICAL: dict[tuple[str, int], tuple[Taxonomy, tuple[frozenset[str], frozenset[str]]]] = {}


def supported_tags(abstract: str, taxonomy: Taxonomy) -> frozenset[str]:
    """The tags of `taxonomy` the abstract gives some support for (memoized per abstract)."""
    key = (abstract, id(taxonomy))
    found = _SUPPORTED.get(key)
    if found is None or found[0] is not taxonomy:
        if len(_SUPPORTED) >= 64:
            _SUPPORTED.pop(next(iter(_SUPPORTED)))
        found = _SUPPORTED[key] = (taxonomy, _supported_tags(abstract, taxonomy))
    return found[1]


# Keyed by the taxonomy's identity: hashing a pydantic model walks every tag.
_SUPPORTED: dict[tuple[str, int], tuple[Taxonomy, frozenset[str]]] = {}


def _per_taxonomy(build: Any) -> Any:
    """Memoize a function of the taxonomy by its identity (see _SUPPORTED)."""
    cache: dict[int, tuple[Taxonomy, Any]] = {}

    def get(taxonomy: Taxonomy) -> Any:
        hit = cache.get(id(taxonomy))
        if hit is None or hit[0] is not taxonomy:
            if len(cache) >= 8:
                cache.clear()
            hit = cache[id(taxonomy)] = (taxonomy, build(taxonomy))
        return hit[1]

    return get


def _supported_tags(abstract: str, taxonomy: Taxonomy) -> frozenset[str]:
    from pipeline.offline.tags import support  # the offline matcher's phrase index

    abstract = abstract[:MAX_SUPPORT_CHARS]
    return _with_umbrellas(
        set(support(abstract, taxonomy)) | _lexical_support(abstract, taxonomy), taxonomy
    )


def _with_umbrellas(found: set[str], taxonomy: Taxonomy) -> frozenset[str]:
    for umbrella, narrower in _narrower(taxonomy).items():
        if narrower & found:
            found.add(umbrella)
    return frozenset(found)


def _weakly_supported(abstract: str, taxonomy: Taxonomy) -> frozenset[str]:
    """Supported tags whose only support is an ambiguous phrase, vocabulary words or a
    negated mention: no asserted mention for the offline matcher (which reads an ambiguous
    phrase only with its cue), no other lexical phrase, no narrower tag."""
    from pipeline.offline.tags import negated_only, support

    strong, weak = _lexical(abstract, taxonomy)
    negated = negated_only(abstract, taxonomy)
    if not weak and not negated:
        return frozenset()
    asserted = set(support(abstract, taxonomy) - negated) | (strong - weak)
    confirmed = _with_umbrellas(asserted, taxonomy)
    # An umbrella whose only support is a weakly supported narrower tag is as weak.
    umbrellas = _with_umbrellas(set(weak | negated), taxonomy) - confirmed
    return (weak | negated | umbrellas) - confirmed


@_per_taxonomy
def _weak_phrases(taxonomy: Taxonomy) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Tag id -> the lemma sequences of its ambiguous phrases (offline/tag_rules.yaml `weak`
    and grounding.yaml `ambiguous_support_phrases`)."""
    from pipeline.offline.tag_rules import WEAK

    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    for source in (WEAK, WORDS.ambiguous_support_phrases):
        for tag_id, phrases in source.items():
            if tag_id in taxonomy.tags:
                seqs = [_lemma_seq(p) for p in phrases]
                out[tag_id] = (*out.get(tag_id, ()), *(q for q in seqs if q))
    return out


def _lemma_seq(phrase: str) -> tuple[str, ...]:
    return tuple(lemma(t) for t in tokens(re.sub(r"\(.*?\)", " ", phrase)) if t not in _SMALL_WORDS)


def lemma(word: str) -> str:
    """The Snowball (Porter2) stem of a lowercase word, memoized: "exploring" and
    "exploration" are "explor", "hierarchically" and "hierarchical" "hierarch"."""
    found = _LEMMAS.get(word)
    if found is None:
        if len(_LEMMAS) > 100_000:
            _LEMMAS.clear()
        found = _LEMMAS[word] = _DISTINCT_STEMS.get(word) or _stemmer().stemWord(word)
    return found


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    # snowballstemmer hands out PyStemmer's C stemmer (same Snowball algorithm, the same stem
    # for each of SciTLDR's 16,968 words) when it is installed, as the dependencies ask:
    # importing the pure-Python fallback loads every language, 60-100 ms.
    import snowballstemmer

    return snowballstemmer.stemmer("english")


_LEMMAS: dict[str, str] = {}
_DISTINCT_STEMS = WORDS.distinct_stems


@lru_cache(maxsize=256)
def _lemma_index(abstract: str) -> AbstractIndex:
    base = abstract_index(abstract)
    return _index_of(tuple(_lemmas_of(base.sequence)), base)


@lru_cache(maxsize=64)
def _content_lemma_index(abstract: str) -> AbstractIndex:
    """The abstract's lemmas without small words ("of", "the", ...)."""
    base = _lemma_index(abstract)
    return _index_of(tuple(t for t in base.sequence if t not in _SMALL_WORDS), base)


def _lemmas_of(words: tuple[str, ...]) -> list[str]:
    known = _LEMMAS.get
    return [known(t) or lemma(t) for t in words]


def _index_of(seq: tuple[str, ...], base: AbstractIndex) -> AbstractIndex:
    positions: dict[str, list[int]] = {}
    for i, t in enumerate(seq):
        at = positions.get(t)
        if at is None:
            positions[t] = [i]
        else:
            at.append(i)
    return AbstractIndex(seq, positions, base.text, lemmas=True)


@_per_taxonomy
def _indexes(
    taxonomy: Taxonomy,
) -> tuple[dict[str, list[tuple[str, tuple[str, ...]]]], dict[str, list[str]]]:
    """(first lemma -> (tag, phrase) of `_tag_phrases`, lemma -> tags of `_vocabulary`)."""
    phrases: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for tag_id, seqs in _tag_phrases(taxonomy).items():
        for seq in seqs:
            phrases.setdefault(seq[0], []).append((tag_id, seq))
    vocabulary: dict[str, list[str]] = {}
    for tag_id, words in _vocabulary(taxonomy).items():
        for word in words:
            vocabulary.setdefault(word, []).append(tag_id)
    return phrases, vocabulary


@_per_taxonomy
def _tag_phrases(taxonomy: Taxonomy) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Tag id -> the lemma sequences of its id, label (parentheses left out) and
    SUPPORT_PHRASES, small words left out; any of them in the abstract, in a row (small
    words aside), supports the tag."""
    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    for tag_id, tag in taxonomy.tags.items():
        phrases = [tag_id.replace("-", " "), tag.label, *SUPPORT_PHRASES.get(tag_id, ())]
        seqs = []
        for phrase in phrases:
            words = _lemma_seq(phrase)
            if words and words not in seqs:
                seqs.append(words)
        out[tag_id] = tuple(seqs)
    return out


# Phrasings that support a tag beyond the taxonomy's synonyms and the offline matcher's
# rules. Matched like labels (lemmas, in order).
SUPPORT_PHRASES = WORDS.support_phrases

# One vocabulary word of a tag is too little: "vulnerability" alone does not make a paper
# about adversarial robustness. Two distinct ones are support, for every facet.
VOCABULARY_HITS = 2


MAX_TAGS_PER_WORD = 6  # a vocabulary word shared by more tags says too little
_VOCABULARY_STOP = WORDS.vocabulary_stop


@_per_taxonomy
def _vocabulary(taxonomy: Taxonomy) -> dict[str, frozenset[str]]:
    """Tag id -> distinctive word lemmas of its synonyms and definition (the part before any
    ';', which sends the rest to neighbour tags): not the words of its own id or label, which
    support it only together, and not words common in ML abstracts."""
    raw: dict[str, set[str]] = {}
    for tag_id, tag in taxonomy.tags.items():
        definition = (tag.definition or "").split(";")[0]
        definition = re.split(r"\b(?:goes|go) to\b", definition)[0]
        text = " ".join([tag_id.replace("-", " "), tag.label, *tag.synonyms, definition])
        raw[tag_id] = {
            lemma(t)
            for t in tokens(text)
            if len(t) > 2
            and not t[0].isdigit()
            and t not in _VOCABULARY_STOP
            and t not in GENERIC_WORDS
        }
    counts: dict[str, int] = {}
    for words in raw.values():
        for w in words:
            counts[w] = counts.get(w, 0) + 1
    common = _common_lemmas()
    out = {}
    for tag_id, words in raw.items():
        # The tag's own name counts as the whole phrase only ("time series", not "series").
        name = {
            lemma(t) for t in tokens(f"{tag_id.replace('-', ' ')} {taxonomy.tags[tag_id].label}")
        }
        out[tag_id] = frozenset(
            w for w in words if counts[w] <= MAX_TAGS_PER_WORD and w not in common and w not in name
        )
    return out


@lru_cache(maxsize=1)
def _common_lemmas() -> frozenset[str]:
    """Lemmas of the words found in more than 2% of ML abstracts (pipeline/assign/
    common_words.txt): one of them alone says nothing about a paper's topic."""
    return frozenset(lemma(w) for w in common_words())


@_per_taxonomy
def _narrower(taxonomy: Taxonomy) -> dict[str, frozenset[str]]:
    """Umbrella tag -> tags whose definition sends part of it to them, or that extend its id
    ("offline-rl" under "reinforcement-learning", "vision-transformers" under "transformers")."""
    out: dict[str, set[str]] = {}
    ids = list(taxonomy.tags)
    for umbrella in ids:
        for other in ids:
            if (
                other != umbrella
                and other.endswith("-" + umbrella.split("-")[-1])
                and set(umbrella.split("-")) <= set(other.split("-"))
            ):
                out.setdefault(umbrella, set()).add(other)
    for umbrella, narrower in _UMBRELLAS.items():
        if umbrella in taxonomy.tags:
            out.setdefault(umbrella, set()).update(t for t in narrower if t in taxonomy.tags)
    return {k: frozenset(v) for k, v in out.items()}


_UMBRELLAS = WORDS.umbrellas
