"""What the grounding checks share: grounding.yaml's words, tokens, lemmas, an abstract's index.

The data file (`WORDS`, prompts/grounding.yaml), typography and markup folded away
(`unmarked`), word and number tokens (`tokens`), Snowball stems (`lemma`), the index of an
abstract's tokens or lemmas (`abstract_index`), whole-word lookup (`_verbatim`) and the
(quantities, named numbers) of a text (`numbers_and_names`): what names.py, numbers.py,
statements.py and tags.py read alike.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from pipeline.datafiles import DataFile, Words, WordSet, load_data
from pipeline.folding import GREEK as _GREEK
from pipeline.folding import SYMBOLS as _SYMBOLS
from pipeline.text import NUMBER_RE, split_sentences

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
    universal_words: WordSet
    universal_support: WordSet
    judgement_words: WordSet
    baseline_qualifiers: WordSet
    acronym_never_starts: WordSet
    hedges: tuple[WordSet, ...]
    distinct_stems: dict[str, str]
    metric_names: WordSet
    support_phrases: dict[str, tuple[str, ...]]
    ambiguous_support_phrases: dict[str, tuple[str, ...]]
    vocabulary_stop: WordSet
    umbrellas: dict[str, tuple[str, ...]]


WORDS = load_data(DATA_FILE, GroundingWords)
# Words a name may add or leave out: what kind of thing it is, not which one.
GENERIC_WORDS = WORDS.generic_words

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉", "01234567890123456789")
# A raised dot between digits is a decimal point in print ("99·9%" is 99.9%).
_DECIMAL_DOT = re.compile(r"(?<=\d)[\u00b7\u2219\u22c5](?=\d)")
_MARKUP = re.compile(r"[\\$*_{}^`]")  # TeX or Markdown that spans.fold reads through


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
        only, and of every two content words in a row ("rl"), within one sentence and never
        from a word that opens no name ("despite the promising results" is no "DPR":
        grounding.yaml `acronym_never_starts` and the function words); one-letter tokens
        ("i.e.") start no word (built when an acronym is first checked: a 1 MB abstract
        seldom needs it)."""
        out: set[str] = set()
        for sentence in split_sentences(self.text) if self.text else [" ".join(self.sequence)]:
            words = [t for t in tokens(sentence) if not t[0].isdigit() and len(t) > 1]
            content = [t for t in words if t not in _SMALL_WORDS]
            for run, smallest in ((words, 3), (content, 2)):
                firsts = [w[0] for w in run]
                for i, word in enumerate(run):
                    if word in _NO_NAME_START:
                        continue
                    for size in range(smallest, 7):
                        if i + size <= len(run):
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
    return AbstractIndex(seq, _positions(seq), abstract)


def _positions(seq: tuple[str, ...]) -> dict[str, list[int]]:
    """Word -> the positions it holds in `seq`."""
    positions: dict[str, list[int]] = {}
    for i, t in enumerate(seq):
        at = positions.get(t)
        if at is None:
            positions[t] = [i]
        else:
            at.append(i)
    return positions


_SMALL_WORDS = WORDS.small_words
_NO_NAME_START = WORDS.acronym_never_starts | WORDS.function_words


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


_DIGITS = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_DIGIT_WORD = re.compile(r"\S*\d\S*")  # a whitespace-separated word with a digit
# "2D", "3-D", "3D-CNN", and a name that starts with one ("3DPW", "3DMatch"): a name (see
# ABBREVIATIONS), not a quantity
_DIMENSION = re.compile(r"[1-4]-?(?:D[A-Z][^\W_]*|[dD])(?![^\W_])")
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


@lru_cache(maxsize=64)
def _word_set(abstract: str) -> frozenset[str]:
    """The abstract's tokens as a set (`tokens`, without building its index)."""
    return frozenset(tokens(abstract))


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
    return AbstractIndex(seq, _positions(seq), base.text, lemmas=True)
