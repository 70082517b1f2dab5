"""Whether the abstract writes a name: datasets, baselines, keywords and the names of a TL;DR.

- `name_supported(name, abstract)`: a dataset, baseline, keyword or a name in a TL;DR
  occurs in the abstract, tolerant of presentation only:
  - case, typography (Unicode dashes, quotes, TeX), hyphens and spaces ("CIFAR-10" =
    "CIFAR10" = "CIFAR 10"), and a plural "s" ("GANs" = "GAN");
  - a list is checked item by item ("MNIST, CIFAR-10 and SVHN");
  - generic words may be added or left out ("the CIFAR-10 dataset", "strong baselines"),
    but not from a compound of capitalized words ("Meta-Dataset" is no "meta-learning");
    every other word must occur in the abstract, and the parts of a hyphenated or glued
    compound ("BERT-large", "ResNet50") in order, at most `COMPOUND_GAP` words apart;
  - abbreviation forms: an acronym for a run of the abstract's words ("GAN" for "generative
    adversarial network"), a run of words for an acronym of the abstract, and the fixed
    forms of `ABBREVIATIONS` ("En-De" for "English-German"); a keyword's, dataset's or
    baseline's capital acronym must be written in the abstract or be one of those fixed
    forms (`unwritten_acronyms`): "standard VIN" is the model's name for "value iteration
    network", a TL;DR may still abbreviate; a baseline's "standard", "vanilla" ... must be a
    word of the abstract (`unwritten_qualifiers`);
  - every number must be a number of the abstract.
- `name_tokens(text)`: the acronyms and capitalized names of a sentence (what a TL;DR must
  not invent); `name_runs(text)`: runs of them written together, each one name
  ("Value Iteration Networks"); `unsupported_names(text, abstract)`: those the abstract
  does not write.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from pipeline.folding import GREEK as _GREEK
from pipeline.support.words import (
    _SMALL_WORDS,
    GENERIC_WORDS,
    WORDS,
    AbstractIndex,
    _content_lemma_index,
    _lemma_index,
    _lowered,
    _verbatim,
    _word_set,
    abstract_index,
    lemma,
    numbers_and_names,
    tokens,
)

COMPOUND_GAP = 2  # words allowed between the parts of a compound ("English-to-German")
# Fixed abbreviation forms: each key stands for its value and the value for the key.
ABBREVIATIONS = WORDS.abbreviations
_LIST_SEPARATORS = re.compile(r"\s*(?:[,;/&]|\band\b|\bor\b|\bvs\.?|\bversus\b)\s*", re.I)
_NAME_TOKEN = re.compile(r"[^\s,;:()\[\]{}\"“”‘’]+")


def name_supported(name: str, abstract: str, *, stems: bool = True) -> bool:
    """True when `name` (a dataset, baseline, keyword, or a name in a sentence) occurs in the
    abstract up to presentation and abbreviation (see the module docstring); without `stems`,
    another word of the same stem is no support ("Informer" is not "information")."""
    name = name.strip()
    if name.endswith("+") and not _plus_written(name, abstract):
        return False  # "PixelCNN++" is not the abstract's "PixelCNN"
    if not name or _verbatim(name, abstract):
        return True
    parts = [p for p in _LIST_SEPARATORS.split(name) if p and p.strip()]
    for index in _name_indexes(abstract):
        if index.lemmas and not stems:
            break
        if _supported_part(name, index):
            return True
        if len(parts) > 1 and all(_supported_part(p, index) for p in parts):
            return True
    return _unspaced(name, abstract)


def _plus_written(name: str, abstract: str) -> bool:
    """A name ending in "+" or "++" (another version of a model) is written with them."""
    core = name.rstrip("+")
    plus = name[len(core) :]
    pattern = rf"(?<![\w+]){re.escape(core.strip())}\s?{re.escape(plus)}(?!\+)"
    return re.search(pattern, abstract, re.I) is not None


def keyword_supported(keyword: str, abstract: str) -> bool:
    """True when a keyword occurs in the abstract as `name_supported` decides, and a keyword
    of several words has them in a row: keywords are copied from the abstract (the prompt
    asks so), while a dataset or baseline name may be assembled from its words."""
    if _verbatim(keyword, abstract):
        return True
    if unwritten_acronyms(keyword, abstract):
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


def unwritten_acronyms(name: str, abstract: str) -> list[str]:
    """The capital-letter acronyms of a keyword, dataset or baseline that the abstract does
    not write and grounding.yaml's `abbreviations` does not list: "standard VIN" for "value
    iteration network" is the model's acronym, so its name, not the abstract's."""
    return [
        a
        for a in _LETTER_ACRONYM.findall(name)
        if a.lower() not in ABBREVIATIONS and not _written(a, abstract)
    ]


def unwritten_qualifiers(baseline: str, abstract: str) -> list[str]:
    """The words of a baseline that say which version it is ("standard", "vanilla": grounding.yaml
    `baseline_qualifiers`) and that the abstract never uses: "standard prompting" is the
    model's baseline when the abstract compares with no standard anything."""
    return [
        w
        for w in dict.fromkeys(tokens(baseline))
        if w in WORDS.baseline_qualifiers and w not in _word_set(abstract)
    ]


def _written(acronym: str, abstract: str) -> bool:
    """The acronym, or its plural, is a word of the abstract, as written or in another case
    with a capital ("Mnist"; never a plain word: "cat" is no CAT)."""
    found = re.finditer(rf"(?<![^\W\d_]){acronym}s?(?![^\W\d_])", abstract, re.I)
    return any(not m.group(0).islower() for m in found)


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


def _supported_part(name: str, index: AbstractIndex) -> bool:
    norm = (lambda t: lemma(t)) if index.lemmas else (lambda t: t)
    whole = [norm(t) for t in tokens(name)]
    if not whole:
        return True
    if index.has_run(whole):
        return True
    for compound in name.split():
        pieces = [p for p in compound.split("-") if p]
        # "Meta-Dataset": a generic word capitalized in a compound of capitalized words is a
        # part of the name, not a word of presentation ("meta-learning" is no Meta-Dataset)
        titled = len(pieces) > 1 and all(p[:1].isupper() for p in pieces)
        parts = [
            norm(p) for p in tokens(compound) if titled or p not in GENERIC_WORDS or p[0].isdigit()
        ]
        if not parts:
            continue
        # "ZO-SGD", all of whose parts are acronyms, is one name: "ZO-signSGD" is not it
        gap = 0 if len(pieces) > 1 and all(_ACRONYM.fullmatch(p) for p in pieces) else COMPOUND_GAP
        # a capital S is a letter of the acronym, not a plural ("MOTS" is no "MOT" + s)
        capital_s = _CAPITAL_S.fullmatch(compound.strip(".,;:()")) is not None
        if not _compound_supported(parts, index, gap, capital_s=capital_s):
            return False
    return True


_CAPITAL_S = re.compile(r"[A-Z][A-Z0-9]*S")


def _compound_supported(
    parts: list[str], index: AbstractIndex, gap: int = COMPOUND_GAP, *, capital_s: bool = False
) -> bool:
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
    if capital_s and not letters.endswith("s"):
        letters += "s"  # the S `tokens` read as a plural
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


_ANY_DIGIT = re.compile(r"\d")


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
    unknown = [
        n for n in name_tokens(text) if not name_supported(n, abstract, stems=not _titled(n))
    ]
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


def _titled(word: str) -> bool:
    """One capitalized word ("Informer", "Adam"): a proper name, matched as a word, not a stem."""
    return word[:1].isupper() and word[1:].isalpha() and word[1:].islower()


def _name_like(word: str, starts_sentence: bool) -> bool:
    letters = [ch for ch in word if ch.isalpha()]
    if not letters:
        return False
    inner_capital = any(ch.isupper() for ch in letters[1:])
    digit_and_letter = any(ch.isdigit() for ch in word)
    capitalized = letters[0].isupper() and not starts_sentence and len(letters) > 1
    return inner_capital or digit_and_letter or capitalized
