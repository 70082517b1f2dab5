"""Offline tagging: match taxonomy labels/synonyms in an abstract, infer the contribution type.

Deterministic and stdlib-only. The abstract is tokenized once; taxonomy phrases are looked
up as token n-grams in dicts built once per taxonomy (`Matcher`), so the cost per abstract is
linear in its length, not in the size of the taxonomy.

Matching rules:
- lowercase synonyms match case-insensitively; a token with a capital after its first
  character ("GNN", "NeRF") is an abbreviation and matches case-sensitively as a whole token,
  so "GAN" never fires on "organ" and "RL" never inside "RLHF";
- plurals ("networks", "GNNs", "strategies") and separators ("fine-tuning", "fine tuning",
  "finetuning") fold together; overlapping phrases resolve to the longest match;
- an acronym the abstract defines for a taxonomy phrase ("knowledge editing methods (KEs)")
  counts as that tag wherever it is used afterwards; a name ending in a model family
  ("CycleGAN", "BiLSTM", "DistilBERT") counts as the family;
- a tag needs context, not a bare word (rules in prompts/offline/tag_rules.yaml):
  ambiguous phrases ("translation", "calibration", "adversarial training", "misuse") count
  only with a second cue in the abstract; negated ("without RLHF"), contrasted ("unlike
  GANs", "instead of fine-tuning") and hyphen-qualified ("DNA-like", "GAN-free") mentions
  are ignored.

Scoring: a mention weighs more in a title line or the first two sentences, and for longer
(more specific) phrases; broad tags weigh less. The strongest topical tags come first, then
a specific contribution type inferred from cues ("we prove", "a new benchmark", ...);
`new-method`, which almost every abstract would get, only when nothing else applies.
Keywords are what the taxonomy does not cover: acronym definitions ("Function Sharing KAN
(FS-KAN)"), model names ("Llama-3.2-1B") and, to fill up, whole noun phrases repeated in the
text (never a fragment cut before its head noun, a verb or an infinitive).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress
from operator import and_, or_
from typing import Generic, NamedTuple, TypeVar

from pipeline.alignment import is_variant
from pipeline.offline import tag_rules
from pipeline.offline.contribution_cues import CUES
from pipeline.offline.tag_words import WORDS
from pipeline.taxonomy import Taxonomy

MAX_TAGS = 6
MAX_KEYWORDS = 5
CONTRIBUTION_FACET = "contribution"
GENERIC_CONTRIBUTION = "new-method"
_MAX_CHARS = 20_000

# Tags that say little on their own: their mentions count less (ids not in a taxonomy are ignored).
BROAD_TAGS = tag_rules.BROAD_TAGS
TITLE_WEIGHT = 2.0  # mentions in a title line
LEAD_WEIGHT = 1.5  # mentions in the first two sentences
LIST_WEIGHT = 0.5  # mentions inside an enumeration of three or more tags
CONTRIBUTION_PHRASE_WEIGHT = 0.3  # a bare "benchmark" or "analysis" is weak evidence of the type
MIN_SCORE = 1.2  # a topical tag needs about one full mention ...
RELATIVE_SCORE = 0.2  # ... and this fraction of the best tag's score
NARROW_SCORE = 0.9  # a narrower tag of a selected umbrella needs only one plain mention
MIN_CONTRIBUTION_SCORE = 1.0  # cue weight a contribution type needs before phrases count
SECOND_CONTRIBUTION = 0.8  # a runner-up contribution type this close to the best is kept too
REPEAT_DECAY = 0.75  # the k-th mention of a tag counts REPEAT_DECAY**(k-1): repetition saturates
MAX_CUE_HITS = 3  # one cue repeated counts at most this often
MAX_PHRASE_KEYWORDS = 2  # repeated noun phrases fill at most this many keyword slots
PROPOSAL_SCORE = 1.0  # a new-method cue this strong ("we propose") rules out empirical-study

_TOKEN = re.compile(r"\w+")
_NEGATORS = WORDS.negators
_NEGATION_FILLERS = WORDS.negation_fillers  # "without the use of X"
_NEGATION_REACH = 5
_DISJUNCTIONS = frozenset({"or", "nor"})
_DISJUNCTION_REACH = 6  # tokens a negation reaches back over before "or" ("without X or Y")
_SPLIT = re.compile(r"(\w+)")
_SPLIT_ASCII = re.compile(r"([0-9A-Z_a-z]+)")  # `_SPLIT` on ASCII text, faster


def _is_word_char(char: str) -> bool:
    """What the regex class `\\w` matches (for one character, or False for none)."""
    return char.isalnum() or char == "_"


# A full stop before a capital or digit, or a CJK full stop; one leading character class lets
# the regex engine skip straight to candidates.
_SENT_END = re.compile(r"[.!?。！？](?:(?<=[.!?])(?=[\"')\]]?\s+[\"'(\[]?[A-Z0-9])|(?<=[。！？]))")
_GENERIC_TAIL = WORDS.generic_tail  # "GAN method" is "GAN"


def _is_abbrev(token: str) -> bool:
    """True for tokens with a capital after the first character: GNN, NeRF, LoRA, 3D."""
    return any(map(str.isupper, token[1:]))


def _stem(word: str) -> str:
    """Fold a lowercase word's plural onto its singular (consistently, not linguistically)."""
    if len(word) <= 3 or not word.endswith("s") or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1]


# British -ise/-isation spellings fold onto -ize/-ization ("regularisation", "parametrised");
# applied to synonyms and text alike, so only consistency matters, not linguistic accuracy.
_BRITISH: tuple[tuple[str, str], ...] = (
    ("isation", "ization"),
    ("isations", "izations"),
    ("ised", "ized"),
    ("ising", "izing"),
    ("iser", "izer"),
    ("isers", "izers"),
    ("ise", "ize"),
    ("ises", "izes"),
)
_BRITISH_ENDS = tuple(old for old, _new in _BRITISH)


def _american(word: str) -> str:
    """A lowercase word with a British -ise/-isation ending spelled -ize/-ization."""
    if len(word) > 6 and word.endswith(_BRITISH_ENDS):
        for old, new in _BRITISH:
            if word.endswith(old):
                return word[: -len(old)] + new
    return word


# "neural nets", "adversarial nets": the short form of "network" (inside a phrase only; no
# synonym is the word alone).
_NET = {"net": "network", "nets": "network"}


def _norm_abbrev(token: str) -> str:
    """Drop an acronym's plural 's' (GNNs -> GNN, NeRFs -> NeRF)."""
    if len(token) >= 3 and token.endswith("s") and (token[-2].isupper() or token[-2].isdigit()):
        return token[:-1]
    return token


def _token_forms(token: str) -> tuple[str, str, str, str]:
    """(abbreviation-aware form, case-insensitive form, lowercase, model family suffix or '')
    of one token."""
    token = token.strip("_")
    low = token.lower()
    ci = _NET.get(low) or _stem(_american(low))
    if _is_abbrev(token):
        return _norm_abbrev(token), ci, low, _suffix_of(_norm_abbrev(token))
    return ci, ci, low, ""


_V = TypeVar("_V")


class _Memo(dict[str, _V], Generic[_V]):
    """Word -> `function(word)`, filled on demand; a plain dict lookup on a hit."""

    def __init__(self, function: Callable[[str], _V], size: int = 1 << 14) -> None:
        super().__init__()
        self.function, self.size = function, size

    def __missing__(self, word: str) -> _V:
        if len(self) >= self.size:
            self.clear()
        value = self[word] = self.function(word)
        return value


_forms = _Memo(_token_forms).__getitem__


def _phrase_variants(phrase: str) -> list[tuple[bool, tuple[str, ...]]]:
    """(case-sensitive?, token key) variants of a synonym: split and hyphen-joined forms."""
    tokens = _TOKEN.findall(phrase)
    if not tokens:
        return []
    sensitive = any(_is_abbrev(t) for t in tokens)
    slot = 0 if sensitive else 1
    variants = [tuple(_forms(t)[slot] for t in tokens)]
    for chunk in phrase.split():
        if "-" in chunk:
            joined = phrase.replace(chunk, chunk.replace("-", ""))
            variants.append(tuple(_forms(t)[slot] for t in _TOKEN.findall(joined)))
    if not sensitive:  # "overparameterized" is also written "over-parameterized"
        for k, token in enumerate(tokens):
            head = _prefix_of(token.lower())
            if head:
                split = (*tokens[:k], head, token[len(head) :], *tokens[k + 1 :])
                variants.append(tuple(_forms(t)[1] for t in split))
    return [(sensitive, v) for v in dict.fromkeys(variants)]


# Prefixes that a word is also written with a hyphen after (over-parameterized, pre-trained).
_PREFIXES = ("over", "multi", "hyper", "semi", "non", "sub")


def _prefix_of(word: str) -> str:
    """The hyphenable prefix a lowercase word starts with ('' if none, or if too little
    follows it to be a word of its own)."""
    for head in _PREFIXES:
        if word.startswith(head) and len(word) - len(head) >= 5:
            return head
    return ""


# What the analysis needs of one token, computed once per distinct token: `_token_forms`
# (case-sensitive form, case-insensitive form, lowercase, family suffix), whether a matcher's
# phrase key is the token or starts with it, whether the token can be a phrase keyword's word
# on its own (`_in_phrase`) and whether a contribution cue starts with it.
_Row = tuple[str, str, str, str, int, bool, bool]
_NO_KEY, _KEY_START, _WHOLE_KEY = 0, 1, 2
_Strs = tuple[str, ...]
_Bools = tuple[bool, ...]
_Columns = tuple[_Strs, _Strs, _Strs, _Strs, tuple[int, ...], _Bools, _Bools]


def _columns(rows: list[_Row]) -> _Columns:
    """The rows of a token sequence as columns."""
    if not rows:
        return (), (), (), (), (), (), ()
    cs, ci, low, family, start, in_phrase, cue = zip(*rows, strict=True)
    return cs, ci, low, family, start, in_phrase, cue


class Mention(NamedTuple):
    """One matched phrase: tag id, token span [start, end) and the weight it contributes."""

    tag: str
    start: int
    end: int
    weight: float = 1.0


@dataclass
class Matcher:
    """Phrase index for one taxonomy; build once, then match many abstracts."""

    taxonomy: Taxonomy
    ci_index: dict[tuple[str, ...], str] = field(default_factory=dict)
    cs_index: dict[tuple[str, ...], str] = field(default_factory=dict)
    ci_starts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    cs_starts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)
    weak: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)
    cues: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    families: dict[str, str] = field(default_factory=dict)
    fallbacks: dict[tuple[str, tuple[str, ...]], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Index every label and synonym of every tag, and the context rules that apply."""
        for tag in self.taxonomy.tags.values():
            for phrase in (tag.label, *tag.synonyms):
                for sensitive, key in _phrase_variants(phrase):
                    self._add(sensitive, key, tag.id, phrase)
        tags = self.taxonomy.tags
        for tag_id, phrases in tag_rules.EXTRA_SYNONYMS.items():
            for phrase in phrases if tag_id in tags else ():
                for sensitive, key in _phrase_variants(phrase):
                    self._add(sensitive, key, tag_id, phrase)
        for tag_id, phrases in tag_rules.WEAK.items():
            for phrase in phrases if tag_id in tags else ():
                for _sensitive, key in _phrase_variants(phrase):
                    self.weak.add((tag_id, key))
        for tag_id, words in tag_rules.CUES.items():
            if tag_id in tags:
                self.cues[tag_id] = tuple(
                    tuple(_forms(t)[1] for t in _TOKEN.findall(w)) for w in words
                )
        self.families = {k: v for k, v in tag_rules.FAMILY_SUFFIXES.items() if v in tags}
        for (tag_id, phrase), other in tag_rules.FALLBACK.items():
            if tag_id in tags and other in tags:
                for _sensitive, key in _phrase_variants(phrase):
                    self.fallbacks[(tag_id, key)] = other

    def _add(self, sensitive: bool, key: tuple[str, ...], tag_id: str, phrase: str) -> None:
        """Index one phrase variant; a key already owned by another tag is a conflict."""
        index = self.cs_index if sensitive else self.ci_index
        starts = self.cs_starts if sensitive else self.ci_starts
        owner = index.setdefault(key, tag_id)
        if owner != tag_id:
            self.conflicts.append((phrase, owner, tag_id))
        lengths = {*starts.get(key[0], ()), len(key)}
        starts[key[0]] = tuple(sorted(lengths, reverse=True))

    @cached_property
    def expansions(self) -> dict[str, tuple[str, frozenset[tuple[str, ...]]]]:
        """Acronym synonym (case-sensitive form) -> (its tag, the tag's phrases whose initials
        spell it, as lowercase words without linking words): "BNN" -> bayesian-methods,
        ("bayesian", "neural", "network")."""
        out: dict[str, tuple[str, frozenset[tuple[str, ...]]]] = {}
        for tag in self.taxonomy.tags.values():
            phrases = [tuple(_TOKEN.findall(p)) for p in (tag.label, *tag.synonyms)]
            content = [tuple(t for t in p if t.lower() not in _LINKING_WORDS) for p in phrases]
            for words in phrases:
                if len(words) != 1 or not _is_abbrev(words[0]):
                    continue
                letters = words[0].rstrip("s").lower()
                longs = frozenset(
                    tuple(t.lower() for t in other)
                    for other in content
                    if len(other) == len(letters)
                    and "".join(t[0] for t in other).lower() == letters
                )
                if longs and self.cs_index.get((_forms(words[0])[0],)) == tag.id:
                    out[_forms(words[0])[0]] = (tag.id, longs)
        return out

    @cached_property
    def weak_tags(self) -> frozenset[str]:
        """Tags with a weak phrase."""
        return frozenset(tag_id for tag_id, _key in self.weak)

    @cached_property
    def cue_words(self) -> dict[str, frozenset[str]]:
        """Tag id -> its one-token cues."""
        return {t: frozenset(c[0] for c in cues if len(c) == 1) for t, cues in self.cues.items()}

    @cached_property
    def cue_phrases(self) -> dict[str, tuple[str, ...]]:
        """Tag id -> its other cues, as ' w1 w2 ' to find in the space-joined tokens."""
        phrases = {
            t: tuple(f" {' '.join(c)} " for c in cues if len(c) != 1)
            for t, cues in self.cues.items()
        }
        return {t: p for t, p in phrases.items() if p}

    @cached_property
    def order(self) -> dict[str, int]:
        """Tag id -> position in the taxonomy file (the last tie-breaker)."""
        return {tag_id: k for k, tag_id in enumerate(self.taxonomy.tags)}

    @cached_property
    def rows(self) -> _Memo[_Row]:
        """Token -> its `_Row`, memoized (a plain dict lookup for a token seen before)."""
        return _Memo(self._row)

    def _row(self, token: str) -> _Row:
        """The token's `_Row`."""
        cs, ci, low, family = _forms(token)
        if (cs,) in self.cs_index or (ci,) in self.ci_index:
            start = _WHOLE_KEY
        else:
            start = _KEY_START if cs in self.cs_starts or ci in self.ci_starts else _NO_KEY
        return cs, ci, low, family, start, _in_phrase(low), low in _CUES_BY_NEXT

    @cached_property
    def _two_heads(self) -> frozenset[tuple[str, ...]]:
        """The first two tokens of every key longer than one token (either index: a start
        test may pass more positions than needed, `_longest` decides)."""
        return frozenset(key[:2] for key in (*self.cs_index, *self.ci_index) if len(key) > 1)

    def scan(
        self,
        cs: tuple[str, ...],
        ci: tuple[str, ...],
        starts: tuple[int, ...],
        aliases: dict[str, str],
    ) -> list[Mention]:
        """Longest-match, left-to-right mentions over token forms (unweighted); `starts` is
        the `_Row` start column of the tokens."""
        out: list[Mention] = []
        candidates = map(or_, starts, map(aliases.__contains__, cs)) if aliases else starts
        two = self._two_heads
        size, covered = len(cs), 0
        for i in compress(range(size), candidates):
            if i < covered:
                continue
            hit = None
            j = i + 1  # most starts begin no phrase: check the first two tokens before searching
            if starts[i] == _WHOLE_KEY or (
                j < size and ((ci[i], ci[j]) in two or (cs[i], cs[j]) in two)
            ):
                hit = self._longest(cs, ci, i)
            if hit is None and cs[i] in aliases:
                hit = (aliases[cs[i]], 1)
            if hit is not None:
                out.append(Mention(hit[0], i, i + hit[1]))
                covered = i + hit[1]
        return out

    def _longest(self, cs: tuple[str, ...], ci: tuple[str, ...], i: int) -> tuple[str, int] | None:
        """The (tag, length) of the longest phrase starting at token i, if any (of two as long,
        the case-sensitive one)."""
        best: tuple[str, int] | None = None
        for n in self.cs_starts.get(cs[i], ()):  # lengths, longest first
            tag_id = self.cs_index.get(cs[i : i + n]) if i + n <= len(cs) else None
            if tag_id is not None:
                best = (tag_id, n)
                break
        for n in self.ci_starts.get(ci[i], ()):
            if best is not None and n <= best[1]:
                break
            tag_id = self.ci_index.get(ci[i : i + n]) if i + n <= len(ci) else None
            if tag_id is not None:
                return tag_id, n
        return best

    def tag_of_phrase(self, phrase: str) -> str | None:
        """The tag whose one phrase spans all of `phrase` (or all but a generic last word)."""
        tokens = _TOKEN.findall(phrase)
        if not tokens:
            return None
        cs, ci, _low, _family = zip(*map(_forms, tokens), strict=True)
        for size in (len(tokens), len(tokens) - 1):
            if size < 1 or (size < len(tokens) and ci[-1] not in _GENERIC_TAIL):
                continue
            # `scan` finds one mention spanning the tokens iff they are a key (the
            # case-sensitive index first, as in `_longest`)
            tag_id = self.cs_index.get(cs[:size]) or self.ci_index.get(ci[:size])
            if tag_id is not None:
                return tag_id
        return None

    def mentions(self, text: str) -> list[Mention]:
        """Position-weighted taxonomy mentions in `text` (see the module docstring)."""
        return _Analysis(self, text[:_MAX_CHARS]).mentions


class _Analysis:
    """One abstract, tokenized once: token forms, acronym definitions, weighted mentions."""

    def __init__(self, matcher: Matcher, text: str) -> None:
        """Tokenize, find definitions and aliases, and weigh the taxonomy mentions."""
        self.text = text
        parts = (_SPLIT_ASCII if text.isascii() else _SPLIT).split(text)
        self.tokens = parts[1::2]
        self.gaps = parts[2::2]  # gaps[i] follows token i
        cs, ci, self.lower, families, starts, self.in_phrase, self.cue_starts = _columns(
            list(map(matcher.rows.__getitem__, self.tokens))
        )
        self.definitions = _definitions(text)
        self.aliases = _aliases(matcher, self.definitions)
        found = matcher.scan(cs, ci, starts, self.aliases)
        if redefined := _redefined(matcher, self.definitions):
            # "Binary Neural Networks (BNN)": this abstract's BNN is no Bayesian one
            found = [
                m for m in found if m.end - m.start != 1 or redefined.get(cs[m.start]) != m.tag
            ]
        if matcher.families and any(families):
            found = _with_families(found, families, matcher.families)
        # What pipeline.support checks a tag against (negated mentions count there).
        self.supported = {m.tag for m in _in_context(found, matcher, cs, ci)}
        found = [m for m in found if not self._cancelled(m)]
        asserted = _in_context(found, matcher, cs, ci)
        # Tags whose every mention is negated, contrasted ("does not use attention") or what
        # a result is compared against ("outperforms deep ensembles").
        self.negated = self.supported - {m.tag for m in asserted if not self._compared(m)}
        weighed = _weigh(asserted, text)
        self.mentions = _listed(weighed, self.lower, self.gaps)

    def _negated_before(self, end: int) -> bool:
        """A negator among the few tokens before `end`, in the same clause (no comma,
        semicolon or full stop between): the first part of a negated disjunction."""
        for k in range(end - 1, max(-1, end - 1 - _DISJUNCTION_REACH), -1):
            if any(ch in self.gaps[k] for ch in ",;.:"):
                return False
            if self.lower[k] in _NEGATORS:
                return True
        return False

    def _compared(self, m: Mention) -> bool:
        """A mention a few tokens after a comparison word of its clause ("outperforming
        standard VI and deep ensembles"): the baseline, not the paper's topic."""
        lower = self.lower
        for k in range(m.start - 1, max(-1, m.start - 1 - _COMPARED_REACH), -1):
            if any(ch in self.gaps[k] for ch in ",;.:()"):
                return False
            for phrase in _COMPARED_BY_LAST.get(lower[k], ()):
                if lower[k + 1 - len(phrase) : k + 1] == phrase:
                    return not (phrase == ("than",) and k and lower[k - 1] in _QUANTITY_BEFORE_THAN)
        return False

    def _cancelled(self, m: Mention) -> bool:
        """A negated ('without RLHF'), contrasted ('unlike GANs') or hyphen-qualified
        ('DNA-like', 'attention-free') mention is not a topic of the abstract."""
        lower, start = self.lower, m.start
        before = lower[max(0, start - 2) : start]
        if not _NEGATORS.isdisjoint(before):
            return True
        k = start - 1  # "without the use of expert demonstrations", "no need for any labels"
        while k >= 0 and start - k <= _NEGATION_REACH and lower[k] in _NEGATION_FILLERS:
            k -= 1
        if k >= 0 and k < start - 2 and lower[k] in _NEGATORS:
            return True
        if start and lower[start - 1] in _DISJUNCTIONS and self._negated_before(start - 1):
            return True  # "without modifying the architecture or fine-tuning"
        if m.end < len(lower) and self.gaps[m.end - 1] == "-" and lower[m.end] in _SUFFIX_BLOCKERS:
            return True
        # a contrast right before, or before fillers: "instead of applying recurrent models"
        return any(
            lower[e] in _PASSING_LAST
            and any(lower[max(0, e + 1 - len(p)) : e + 1] == p for p in tag_rules.PASSING_BEFORE)
            for e in range(start - 1, max(k, 0) - 1, -1)
        )


_SUFFIX_BLOCKERS = tag_rules.SUFFIX_BLOCKERS
_COMPARED_REACH = 5  # tokens from a comparison word to the mention it governs
_QUANTITY_BEFORE_THAN = tag_rules.QUANTITY_BEFORE_THAN


def _by_last(phrases: tuple[tuple[str, ...], ...]) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Last word -> the phrases ending with it (a phrase is matched back from its last word)."""
    return {last: tuple(p for p in phrases if p[-1] == last) for last in {p[-1] for p in phrases}}


_COMPARED_BY_LAST = _by_last(tag_rules.COMPARED_BEFORE)
_PASSING_LAST = frozenset(p[-1] for p in tag_rules.PASSING_BEFORE)
_EXAMPLE_BY_LAST = _by_last(tag_rules.EXAMPLE_BEFORE)
_EXAMPLE_LAST = frozenset(_EXAMPLE_BY_LAST)
_NONE: frozenset[str] = frozenset()
_NOT_SENTENCE_END = WORDS.not_sentence_end


def _is_example(lower: tuple[str, ...], gaps: list[str], start: int) -> bool:
    """True when an example word ("such as", "e.g.", "including") opens a clause within
    EXAMPLE_REACH tokens before token `start`, in the same sentence."""
    for j in range(start - 1, max(-1, start - 1 - tag_rules.EXAMPLE_REACH), -1):
        gap = gaps[j]  # after token j: ". " ends a sentence, "e.g. " and "e." do not
        if "." in gap and not gap.endswith(".") and lower[j] not in _NOT_SENTENCE_END:
            return False
        for words in _EXAMPLE_BY_LAST.get(lower[j], ()):
            if lower[j - len(words) + 1 : j + 1] == words:
                return True
    return False


def _with_families(
    found: list[Mention], families: tuple[str, ...], tags: dict[str, str]
) -> list[Mention]:
    """Add names that end in a model family ('CycleGAN', 'DistilBERT') not matched otherwise;
    `families[i]` is the family suffix of token i ('' for none)."""
    covered = {i for m in found for i in range(m.start, m.end)}
    extra = [
        Mention(tags[f], i, i + 1)
        for i, f in enumerate(families)
        if f and f in tags and i not in covered
    ]
    return sorted(found + extra, key=lambda m: m.start) if extra else found


def _suffix_of(token: str) -> str:
    """The family an abbreviation-like name ends in: 'CycleGAN', 'BiLSTM', 'DistilBERT' (not
    'GAN' itself, and not an all-caps word such as 'ORGAN' that merely ends in the letters)."""
    for suffix in tag_rules.FAMILY_SUFFIXES:
        if len(token) > len(suffix) and token.endswith(suffix):
            return "" if token[: -len(suffix)].isupper() else suffix
    return ""


def _in_context(
    found: list[Mention], matcher: Matcher, cs: tuple[str, ...], ci: tuple[str, ...]
) -> list[Mention]:
    """Drop a tag's weak mentions unless a strong mention or one of its cue words backs them."""
    weak = matcher.weak
    if not weak:
        return found
    strong: set[str] = set()
    weak_tags: set[str] = set()
    for m in found:
        if m.tag in matcher.weak_tags and (
            (m.tag, ci[m.start : m.end]) in weak or (m.tag, cs[m.start : m.end]) in weak
        ):
            weak_tags.add(m.tag)
        else:
            strong.add(m.tag)
    unsupported = weak_tags - strong
    if not unsupported:
        return found
    cue_words, cue_phrases = matcher.cue_words, matcher.cue_phrases
    backed = {t for t in unsupported if not cue_words.get(t, frozenset()).isdisjoint(ci)}
    phrased = [t for t in unsupported - backed if t in cue_phrases]
    if phrased:
        joined = f" {' '.join(ci)} "
        backed.update(t for t in phrased if any(p in joined for p in cue_phrases[t]))
    dropped = unsupported - backed
    if not dropped:
        return found
    out = []
    for m in found:
        if m.tag not in dropped:
            out.append(m)
            continue
        fallback = matcher.fallbacks.get((m.tag, ci[m.start : m.end]))
        if fallback:  # "an LSTM language model": language modelling, not an LLM
            out.append(Mention(fallback, m.start, m.end, m.weight))
    return out


def _title_end(text: str) -> int:
    """End of a title line: short, no full stop, then a blank line or a capital (else 0)."""
    first, sep, rest = text.partition("\n")
    if not sep or not 0 < len(first.strip()) <= 200 or first.rstrip().endswith("."):
        return 0
    next_line = rest.lstrip(" \t")
    return len(first) if next_line[:1] == "\n" or next_line[:1].isupper() else 0


def _lead_bounds(text: str) -> tuple[int, int]:
    """Token counts of a title line (0 if none) and of the title plus first two sentences."""
    title_end = _title_end(text)
    lead_end = len(text)
    for k, m in enumerate(_SENT_END.finditer(text, title_end)):
        if k == 1:
            lead_end = m.end()
            break
    n_title = _count_tokens(text[:title_end]) if title_end else 0
    return n_title, n_title + _count_tokens(text[title_end:lead_end])


# Bytes of non-word characters -> space: the words of an ASCII text are then its `split()`.
_ASCII_SPACES = bytes(c if c < 128 and _is_word_char(chr(c)) else 32 for c in range(256))


def _count_tokens(text: str) -> int:
    """len(_TOKEN.findall(text)), without building a match per token on ASCII text."""
    if text.isascii():
        return len(text.encode("ascii").translate(_ASCII_SPACES).split())
    return len(_TOKEN.findall(text))


def _weigh(spans: list[Mention], text: str) -> list[Mention]:
    """Weight mentions by place and specificity; a phrase and its adjacent acronym count once."""
    n_title, n_lead = _lead_bounds(text)
    out: list[Mention] = []
    for tag, start, end, _w in spans:
        place = TITLE_WEIGHT if start < n_title else LEAD_WEIGHT if start < n_lead else 1.0
        weight = place * min(2.0, 1.0 + 0.3 * (end - start - 1)) * BROAD_TAGS.get(tag, 1.0)
        if out and out[-1].tag == tag and out[-1].end == start:
            out[-1] = Mention(tag, out[-1].start, end, max(out[-1].weight, weight))
        else:
            out.append(Mention(tag, start, end, weight))
    return out


def _listed(mentions: list[Mention], lower: tuple[str, ...], gaps: list[str]) -> list[Mention]:
    """Mentions of three or more tags in one enumeration ("image classification, speech
    recognition, machine translation and language modeling"; "regularization, Bayesian neural
    nets, exploration in RL and evolution strategies") weigh LIST_WEIGHT: a paper evaluated on
    or motivated by many things is about none of them in particular."""
    if len(mentions) < 3:
        return mentions
    # at most two tokens between neighbours; a run of three needs two such pairs in a row
    close = [b.start - a.end <= 2 for a, b in zip(mentions, mentions[1:], strict=False)]
    if not any(map(and_, close, close[1:])):
        return mentions
    out = mentions
    run = [0]
    for k in range(1, len(mentions) + 1):
        if k < len(mentions) and close[k - 1]:
            prev, cur = mentions[k - 1], mentions[k]
            if not _LINKS.isdisjoint(lower[prev.end : cur.start]) or any(
                "," in g for g in gaps[prev.end - 1 : cur.start]
            ):
                run.append(k)
                continue
        if len(run) >= 3 and len({mentions[j].tag for j in run}) >= 3:
            if out is mentions:
                out = list(mentions)
            for j in run:
                out[j] = out[j]._replace(weight=out[j].weight * LIST_WEIGHT)
        run = [k]
    return out


_LINKS = frozenset({"and", "or"})


# Acronym definitions ------------------------------------------------------------------------

_DEF = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9\-]{0,14})\s*\)")
_MARKUP = str.maketrans("", "", '*_`$\\{}"“”')  # deleted from a long form's words
_STOP = WORDS.stop_words


def _is_acronym(token: str) -> bool:
    """Two or more capitals: FS-KAN, MCbiF, AnD."""
    return not token.islower() and sum(map(str.isupper, token)) >= 2


def _initials(words: list[str]) -> str:
    """Letters a long form contributes to its acronym: initials, or whole all-caps words."""
    out = []
    for word in words:
        for part in word.split("-"):
            if part and part.lower() not in _STOP:
                out.append(part.lower() if _is_acronym(part) else part[0].lower())
    return "".join(out)


_word_initials = _Memo(lambda word: _initials([word]))


def _initials_score(initials: str, letters: str) -> int:
    """How well a candidate long form's `_initials` spell the acronym: matched minus unmatched."""
    score, pos = 0, 0
    for ch in initials:
        found = letters.find(ch, pos)
        if found < 0:
            score -= 1
        else:
            score, pos = score + 1, found + 1
    return score


def _long_form(before: str, acronym: str) -> str | None:
    """The 1-4 words before '(ACR)' that best spell the acronym, starting with its first letter."""
    raw = before.rsplit(maxsplit=4)[-4:]  # the last 4 words
    words = [w if w.isalnum() else w.translate(_MARKUP) for w in raw]
    letters = "".join(filter(str.isalnum, acronym.lower()))
    best: tuple[int, int] | None = None
    initials = ""  # of words[-k:]
    for k in range(1, len(words) + 1):
        head = words[-k]
        if not head or not head[0].isalnum() or (k > 1 and raw[-k][-1] in ",;:.!?)]"):
            break  # a long form does not cross punctuation
        initials = _word_initials[head] + initials
        if head[0].lower() != letters[0] or head.lower() in _STOP:
            continue
        score = _initials_score(initials, letters)
        if score > 0 and (best is None or score > best[0]):
            best = (score, k)
    return " ".join(words[-best[1] :]) if best else None


def _definitions(text: str) -> list[tuple[str, str, int]]:
    """(long form, acronym, offset) for each 'Long Form (ACR)' in the text."""
    out: list[tuple[str, str, int]] = []
    for m in _DEF.finditer(text):
        acronym = m.group(1).strip("-")
        if _is_acronym(acronym):
            long = _long_form(text[max(0, m.start() - 120) : m.start()], acronym)
            if long:
                out.append((long, acronym, m.start()))
    return out


def _aliases(matcher: Matcher, definitions: list[tuple[str, str, int]]) -> dict[str, str]:
    """Acronyms defined for a taxonomy phrase -> that tag ('knowledge editing methods (KEs)')."""
    out: dict[str, str] = {}
    for long, acronym, _pos in definitions:
        form = _forms(acronym)[0]
        if (form,) in matcher.cs_index:
            continue
        tag_id = matcher.tag_of_phrase(long)
        if tag_id:
            out[form] = tag_id
    return out


_LINKING_WORDS = frozenset({"and", "of", "the", "for", "a", "an", "in", "on", "with", "to", "by"})


def _redefined(matcher: Matcher, definitions: list[tuple[str, str, int]]) -> dict[str, str]:
    """Acronyms the abstract defines otherwise than the taxonomy expands them -> the tag
    whose acronym they are not here ("Binary Neural Networks (BNN)" against bayesian-methods'
    "bayesian neural network" and "BNN")."""
    out: dict[str, str] = {}
    for long, acronym, _pos in definitions:
        form = _forms(acronym)[0]
        known = matcher.expansions.get(form)
        if known is not None:
            tag_id, longs = known
            expanded = tuple(
                t.lower() for t in _TOKEN.findall(long) if t.lower() not in _LINKING_WORDS
            )
            if matcher.tag_of_phrase(long) != tag_id and not any(
                len(known_long) == len(expanded)
                and all(
                    a == b or is_variant(a, b) for a, b in zip(known_long, expanded, strict=True)
                )
                for known_long in longs
            ):  # a typo is no other meaning ("Markov descision process (MDP)")
                out[form] = tag_id
    return out


# Contribution type --------------------------------------------------------------------------


def _words(spec: str) -> frozenset[str]:
    """A word set from 'a|b|c'."""
    return frozenset(spec.split("|"))


# The cues of prompts/offline/contribution_cues.yaml as tuples: (tag id, slots, weight), each
# slot ('a|b' = a or b) one lowercase token of a run; (tag id, trigger words, target words,
# window, weight); (tag id, substrings of the raw text, weight) for Chinese abstracts.
_SEQ_CUES = [(c.tag, c.words, c.weight) for c in CUES.sequence]
_WINDOW_CUES = [(c.tag, c.triggers, c.targets, c.window, c.weight) for c in CUES.window]
_CJK_CUES = [(c.tag, c.substrings, c.weight) for c in CUES.cjk]


_Cue = tuple[int, tuple[frozenset[str], ...], int]  # (cue number, remaining slots, window)


def _cue_index() -> dict[str, list[_Cue]]:
    """First word -> [(cue number, remaining slots, window)] over _SEQ_CUES then _WINDOW_CUES."""
    index: dict[str, list[_Cue]] = {}
    for k, (_tag, slots, _w) in enumerate(_SEQ_CUES):
        for word in _words(slots[0]):
            index.setdefault(word, []).append((k, tuple(_words(s) for s in slots[1:]), 0))
    for j, (_tag, triggers, targets, window, _w) in enumerate(_WINDOW_CUES):
        for word in triggers:
            index.setdefault(word, []).append((len(_SEQ_CUES) + j, (targets,), window))
    return index


def _by_next_word(cues: list[_Cue]) -> dict[str | None, tuple[_Cue, ...]]:
    """Next word -> the cues that may fire before it, in cue order (None: any other word)."""

    def needs_next(cue: _Cue) -> bool:
        return not cue[2] and bool(cue[1])

    words = {word for cue in cues if needs_next(cue) for word in cue[1][0]}
    table: dict[str | None, tuple[_Cue, ...]] = {
        word: tuple(c for c in cues if not needs_next(c) or word in c[1][0]) for word in words
    }
    table[None] = tuple(c for c in cues if not needs_next(c))
    return table


_CUE_INDEX = _cue_index()
_CUES_BY_NEXT = {word: _by_next_word(cues) for word, cues in _CUE_INDEX.items()}
_CUE_TAGS = [(tag, w) for tag, _s, w in _SEQ_CUES] + [(c[0], c[4]) for c in _WINDOW_CUES]
_ONCE_CUES = {k: 1 for k, cue in enumerate(CUES.sequence) if cue.once}


def _cue_hits(lower: tuple[str, ...], cue_starts: tuple[bool, ...]) -> dict[int, int]:
    """Cue number -> times it fires in the lowercase tokens (in the order they first fire);
    `cue_starts[i]`: a cue starts with token i."""
    hits: dict[int, int] = {}
    n = len(lower)
    for i in compress(range(n), cue_starts):
        j = i + 1  # skip one adverb: "we also propose", "this paper systematically studies"
        if j < n and len(lower[j]) > 3 and lower[j].endswith("ly") and lower[j] not in _CUE_INDEX:
            j += 1
        by_next = _CUES_BY_NEXT[lower[i]]
        for k, rest, window in by_next.get(lower[j], by_next[None]) if j < n else by_next[None]:
            if window:
                if not rest[0].isdisjoint(lower[i + 1 : i + 1 + window]):
                    hits[k] = hits.get(k, 0) + 1
            elif not rest or (
                j + len(rest) <= n
                and lower[j] in rest[0]
                and all(lower[j + q] in s for q, s in enumerate(rest[1:], 1))
            ):
                hits[k] = hits.get(k, 0) + 1
    return hits


def _contribution_scores(analysis: _Analysis, tax: Taxonomy) -> dict[str, float]:
    """Contribution-type scores from cues plus weak phrase mentions ('benchmark', 'analysis')."""
    scores: defaultdict[str, float] = defaultdict(float)
    for k, count in _cue_hits(analysis.lower, analysis.cue_starts).items():
        tag_id, weight = _CUE_TAGS[k]
        scores[tag_id] += weight * min(count, _ONCE_CUES.get(k, MAX_CUE_HITS))
    if not analysis.text.isascii():
        for tag_id, needles, weight in _CJK_CUES:
            hits = sum(analysis.text.count(s) for s in needles)
            scores[tag_id] += weight * min(hits, MAX_CUE_HITS)
    # A type needs a cue; a bare phrase ("dataset", "analysis") only adds to one that fired.
    cued = {t for t, v in scores.items() if v >= MIN_CONTRIBUTION_SCORE}
    for m in analysis.mentions:
        if m.tag in cued:
            scores[m.tag] += CONTRIBUTION_PHRASE_WEIGHT * m.weight
    return {t: scores[t] for t in cued if t in tax.tags}


def _fallback_contribution(tax: Taxonomy) -> str:
    """The default contribution type (first tag of its facet), else the taxonomy's first tag."""
    for facet in tax.facets:
        if facet.id == CONTRIBUTION_FACET and facet.tags:
            return facet.tags[0].id
    return tax.ids[0]


# Selection ----------------------------------------------------------------------------------


def _rank(scores: dict[str, float], first: dict[str, int], order: dict[str, int]) -> list[str]:
    """Tag ids by score (desc), then first mention, then taxonomy order."""
    return sorted(scores, key=lambda t: (-scores[t], first.get(t, 0), order[t]))


def _topical(analysis: _Analysis, matcher: Matcher) -> list[str]:
    """The strongest non-contribution tags, best first (at least one if any was mentioned)."""
    facet_of = matcher.taxonomy.facet_of
    scores: defaultdict[str, float] = defaultdict(float)
    seen: dict[str, int] = {}
    first: dict[str, int] = {}
    for m in analysis.mentions:
        if facet_of[m.tag] != CONTRIBUTION_FACET:
            k = seen.get(m.tag, 0)
            scores[m.tag] += m.weight * REPEAT_DECAY**k
            seen[m.tag] = k + 1
            first.setdefault(m.tag, m.start)
    ranked = _rank(scores, first, matcher.order)
    if not ranked:
        return []
    floor = max(MIN_SCORE, RELATIVE_SCORE * scores[ranked[0]])
    kept = [t for t in ranked if scores[t] >= floor] or ranked[:1]
    narrow = {n for t in kept for n in tag_rules.NARROWER.get(t, ())}
    if narrow:  # "model compression ... a pruning algorithm": the technique is the topic
        kept += [t for t in ranked if t in narrow and t not in kept and scores[t] >= NARROW_SCORE]
    return sorted(kept, key=lambda t: t in BROAD_TAGS)  # stable: specific tags before broad ones


def _contributions(analysis: _Analysis, matcher: Matcher) -> list[str]:
    """The contribution type (and a close runner-up), or the fallback when no cue fires."""
    scores = _contribution_scores(analysis, matcher.taxonomy)
    if "empirical-study" in scores and scores.get(GENERIC_CONTRIBUTION, 0.0) >= PROPOSAL_SCORE:
        # "we propose ..." beside "we study ...": the study is of the paper's own method
        del scores["empirical-study"]
    kinds = _rank(scores, {}, matcher.order)
    if not kinds:
        return [_fallback_contribution(matcher.taxonomy)]
    if len(kinds) > 1 and scores[kinds[1]] >= SECOND_CONTRIBUTION * scores[kinds[0]]:
        return kinds[:2]
    return kinds[:1]


def _without_passing(analysis: _Analysis, tags: list[str]) -> list[str]:
    """`tags` without those met only as examples ("in tasks such as object detection", "on
    downstream tasks such as segmentation"): motivation or evaluation, not the paper's topic."""
    lower = analysis.lower
    if _EXAMPLE_LAST.isdisjoint(lower):
        return tags
    wanted = set(tags)
    passing = dict.fromkeys(tags, True)
    for m in analysis.mentions:
        if m.tag in wanted and passing[m.tag]:
            passing[m.tag] = _is_example(lower, analysis.gaps, m.start)
    return [t for t in tags if not passing[t]]


def _select(analysis: _Analysis, matcher: Matcher) -> list[str]:
    """1..MAX_TAGS ids: topical tags best first, then a specific contribution type (or two);
    `new-method` only when nothing else applies."""
    kinds = _contributions(analysis, matcher)
    topical = _topical(analysis, matcher)
    if len(topical) > 1:
        topical = topical[:1] + _without_passing(analysis, topical[1:])
        chosen = set(topical)
        topical = [t for t in topical if tag_rules.UMBRELLA_OF.get(t, _NONE).isdisjoint(chosen)]
    if topical or len(kinds) > 1:
        # Almost every paper proposes something: the generic type only fills an empty list.
        kinds = [k for k in kinds if k != GENERIC_CONTRIBUTION]
    if len(topical) + len(kinds) > MAX_TAGS:
        kinds = kinds[:1]
    return topical[: MAX_TAGS - len(kinds)] + [k for k in kinds if k not in topical]


# Keywords -----------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Z][A-Za-z]*[A-Z0-9][A-Za-z0-9]*(?:[\-.][A-Za-z0-9]+)*")
_NAME_SUFFIX = re.compile(
    r"-(?:based|like|style|level|free|only|aware|specific|wise|guided|driven|induced)$"
)
_GENERIC_ACRONYMS = WORDS.generic_acronyms


def _uses(text: str, word: str) -> int:
    """Occurrences of `word` in `text` as a whole token (not after a hyphen).

    Same count as `re.findall(rf"(?<![\\w\\-]){re.escape(word)}(?!\\w)", text)` without
    compiling a pattern per acronym.
    """
    count, size = 0, len(word)
    at = text.find(word)
    while at >= 0:
        before = text[at - 1] if at else ""
        if before == "-" or _is_word_char(before) or _is_word_char(text[at + size : at + size + 1]):
            at = text.find(word, at + 1)
        else:
            count += 1
            at = text.find(word, at + size)
    return count


def _definition_keywords(analysis: _Analysis, matcher: Matcher) -> dict[str, tuple[float, int]]:
    """'Long Form (ACR)' phrases the taxonomy does not cover, scored by how often ACR is used."""
    out: dict[str, tuple[float, int]] = {}
    for long, acronym, pos in analysis.definitions:
        if acronym in _GENERIC_ACRONYMS or _forms(acronym)[0] in analysis.aliases:
            continue
        if matcher.tag_of_phrase(long) or matcher.tag_of_phrase(acronym):
            continue
        out.setdefault(f"{long} ({acronym})", (3.0 + _uses(analysis.text, acronym), pos))
    return out


def _name_keywords(
    analysis: _Analysis, matcher: Matcher, seen: set[str]
) -> dict[str, tuple[float, int]]:
    """Model/dataset names (inner capitals or digits: Llama-3.2-1B, HSSBench), scored by count."""
    text = analysis.text
    names: dict[str, int] = {}
    for m in _NAME.finditer(text):
        start = m.start()
        if start and (text[start - 1].isalnum() or text[start - 1] in "-_"):
            continue
        name = m.group()
        if "-" in name:
            name = _NAME_SUFFIX.sub("", name)
        names[name] = names.get(name, 0) + 1
    out: dict[str, tuple[float, int]] = {}
    for name, count in names.items():
        if len(name) < 3 or name in _GENERIC_ACRONYMS or _norm_abbrev(name).lower() in seen:
            continue
        if (count >= 2 or any(map(str.isdigit, name))) and not matcher.tag_of_phrase(name):
            out[name] = (float(count), text.find(name))
    return out


_JOINERS = frozenset({"-", "'", "’"})  # separators inside a compound: pre-activations
# Words that do not start, end or sit inside a salient noun phrase, and words that may follow
# its last word (any other word right after it continues it: "few shot link [prediction]").
_NOT_CONTENT = _STOP | WORDS.not_content
_VERBS = WORDS.verbs
_AFTER_PHRASE = _STOP | _VERBS | WORDS.after_phrase
# A gerund after these is a verb ("by generating synthetic data"), not the start of a phrase.
_GERUND_BEFORE = WORDS.gerund_before


def _is_content(word: str) -> bool:
    """A word that can be part of a salient noun phrase."""
    return (
        len(word) >= 3
        and word[0].isalpha()
        and word not in _NOT_CONTENT
        and not word.endswith("ly")
    )


def _phrase(words_and_seps: tuple[str, ...]) -> str | None:
    """'w1 w2 [w3]' from (w1, sep, w2, ...): two or more content words, no punctuation between."""
    words = [words_and_seps[0]]
    for sep, token in zip(words_and_seps[1::2], words_and_seps[2::2], strict=True):
        if sep in _JOINERS:
            words[-1] += sep + token  # "task-level", "pre-activations": one word
        elif sep.strip():
            return None
        else:
            words.append(token)
    if len(words) < 2 or not all(map(_is_content, words)) or not _VERBS.isdisjoint(words):
        return None
    return " ".join(words)


def _repeated_phrases(analysis: _Analysis) -> list[str]:
    """Lowercase 2-3 word content phrases used at least twice, most salient first."""
    low, gaps = analysis.lower, analysis.gaps  # gaps[i] lies between tokens i and i+1
    glued = set(compress(range(len(gaps)), map(_JOINERS.__contains__, gaps)))
    repeated = _repeated_pairs(low, gaps, analysis.in_phrase, glued)
    if not repeated:
        return []
    grams = _free_ngrams(low, gaps, repeated, glued)
    cands: dict[str, int] = {}
    for key, count in grams.items():
        phrase = _phrase(key)
        if phrase:
            cands[phrase] = cands.get(phrase, 0) + count
    cands = {p: c for p, c in cands.items() if c > 1}
    # A phrase inside an equally frequent longer one is the same keyword.
    keep = [p for p in cands if not any(p != q and p in q and cands[q] >= cands[p] for q in cands)]
    lower = analysis.text.lower()
    return sorted(keep, key=lambda p: (-cands[p] * len(p.split()), lower.find(p)))


def _in_phrase(word: str) -> bool:
    """A lowercase token that can be a word of a phrase on its own (see `_phrase`)."""
    return _is_content(word) and word not in _VERBS


def _repeated_pairs(
    low: tuple[str, ...], gaps: list[str], in_phrase: tuple[bool, ...], glued: set[int]
) -> set[int]:
    """Positions i whose pair (token i, gap, token i+1) occurs at least twice (`glued`: the
    positions of gaps that join two tokens into one word).

    Only pairs of tokens that may be phrase words are counted: those that can stand alone
    (`in_phrase`) and those glued into a compound somewhere in the text ("pre-trained"). The
    test is on the words, not the position, so every occurrence of a pair counts alike; a pair
    that fails it is in no gram that yields a `_phrase`.
    """
    n = len(low)
    wordy: tuple[bool, ...] | list[bool] = in_phrase
    loose = {low[i + k] for i in glued if i < n - 1 for k in (0, 1) if not in_phrase[i + k]}
    if loose:
        wordy = list(in_phrase)
        for i in compress(range(n), map(loose.__contains__, low)):
            wordy[i] = True
    at: dict[tuple[str, str, str], list[int]] = {}
    for i in compress(range(n - 1), map(and_, wordy, wordy[1:])):
        at.setdefault((low[i], gaps[i], low[i + 1]), []).append(i)
    return {i for places in at.values() if len(places) > 1 for i in places}


def _free_ngrams(
    low: tuple[str, ...], gaps: list[str], repeated: set[int], glued: set[int]
) -> dict[tuple[str, ...], int]:
    """Counts of repeated pairs and triples (`repeated`: where a repeated pair starts),
    skipping those glued into a compound word."""
    # "negative pre" inside "negative pre-activations" is not a phrase of its own.
    out: dict[tuple[str, ...], int] = {}
    for i in sorted(repeated):
        if (i and i - 1 in glued) or not _starts_phrase(low, gaps, i):
            continue
        pair = (low[i], gaps[i], low[i + 1])
        if i + 1 not in glued and _ends_phrase(low, gaps, i + 1):
            out[pair] = out.get(pair, 0) + 1
        if i + 1 in repeated and i + 2 not in glued and _ends_phrase(low, gaps, i + 2):
            triple = (*pair, gaps[i + 1], low[i + 2])
            out[triple] = out.get(triple, 0) + 1
    return out


def _starts_phrase(low: tuple[str, ...], gaps: list[str], i: int) -> bool:
    """Token i can open a noun phrase: not an infinitive ('to solve ...') or a gerund verb."""
    if i == 0 or gaps[i - 1].strip():
        return True
    before = low[i - 1]
    return before != "to" and not (low[i].endswith("ing") and before in _GERUND_BEFORE)


def _ends_phrase(low: tuple[str, ...], gaps: list[str], j: int) -> bool:
    """Token j can close a noun phrase: punctuation, a function word or a verb comes next."""
    if j + 1 >= len(low) or gaps[j].strip():
        return True
    nxt = low[j + 1]
    return nxt in _AFTER_PHRASE or nxt.endswith(("ly", "ed")) or not nxt[:1].isalpha()


def _phrase_keywords(analysis: _Analysis, matcher: Matcher) -> Iterator[str]:
    """Repeated phrases as written, skipping taxonomy phrases (or parts) and acronym phrases."""
    surfaces = {" ".join(analysis.lower[m.start : m.end]) for m in analysis.mentions}
    for phrase in _repeated_phrases(analysis):
        if any(phrase in s for s in surfaces) or matcher.tag_of_phrase(phrase):
            continue
        written = _original_case(analysis.text, phrase)
        # "LLMs' internal knowledge", "SAE variants": the acronym leans on a tag or definition.
        if not any(_is_abbrev(w) for w in _TOKEN.findall(written)):
            yield written


def _original_case(text: str, phrase: str) -> str:
    """`phrase` as first written in `text` (its words were found in the lowercased text)."""
    if text.isascii():
        found = _find_words(text, phrase.split())
        return " ".join(found.split()) if found is not None else phrase
    pattern = r"\W+".join(re.escape(w) for w in phrase.split())
    match = re.search(pattern, text, re.IGNORECASE)
    return " ".join(match.group().split()) if match else phrase


_NON_WORD = re.compile(r"\W+")


def _find_words(text: str, words: list[str]) -> str | None:
    """First `w1<non-word chars>w2...` in ASCII `text`, case-insensitively (lowercase `words`).

    The match `re.search(r"\\W+".join(map(re.escape, words)), text, re.IGNORECASE)` finds,
    without compiling a pattern per phrase: every word starts with a letter, so each gap is
    the whole run of non-word characters before the next word.
    """
    lower = text.lower()  # ASCII: same length and offsets as `text`
    first, rest = words[0], words[1:]
    start = lower.find(first)
    while start >= 0:
        end = start + len(first)
        for word in rest:
            gap = _NON_WORD.match(lower, end)
            if gap is None or not lower.startswith(word, gap.end()):
                break
            end = gap.end() + len(word)
        else:
            return text[start:end]
        start = lower.find(first, start + 1)
    return None


def _keywords(analysis: _Analysis, matcher: Matcher) -> list[str]:
    """0..MAX_KEYWORDS salient phrases not covered by the taxonomy, strongest first."""
    scored = _definition_keywords(analysis, matcher)
    seen = {_norm_abbrev(acr).lower() for _long, acr, _pos in analysis.definitions}
    for name, score in _name_keywords(analysis, matcher, seen).items():
        scored.setdefault(name, score)
    out = sorted(scored, key=lambda k: (-scored[k][0], scored[k][1]))[:MAX_KEYWORDS]
    room = min(MAX_PHRASE_KEYWORDS, MAX_KEYWORDS - len(out))
    used = {w for k in out for w in _TOKEN.findall(k.lower())}
    for phrase in _phrase_keywords(analysis, matcher) if room > 0 else ():
        words = set(_TOKEN.findall(phrase.lower()))
        if not words & used:  # no two keywords about the same word
            out.append(phrase)
            used |= words
            room -= 1
            if room == 0:
                break
    return out


# Entry point --------------------------------------------------------------------------------

_MATCHERS: dict[int, Matcher] = {}
_MAX_CACHED = 8


def matcher_for(taxonomy: Taxonomy) -> Matcher:
    """The cached Matcher of a taxonomy object (built on first use)."""
    cached = _MATCHERS.get(id(taxonomy))
    if cached is not None and cached.taxonomy is taxonomy:
        return cached
    if len(_MATCHERS) >= _MAX_CACHED:
        _MATCHERS.clear()
    matcher = _MATCHERS[id(taxonomy)] = Matcher(taxonomy)
    return matcher


def match_tags(text: str, taxonomy: Taxonomy) -> tuple[list[str], list[str]]:
    """(tag ids, free keywords) for one abstract; always at least one tag."""
    matcher = matcher_for(taxonomy)
    analysis = _Analysis(matcher, text[:_MAX_CHARS])
    _remember(text[:_MAX_CHARS], taxonomy, analysis)
    return _select(analysis, matcher), _keywords(analysis, matcher)


def topic_phrases(text: str, taxonomy: Taxonomy) -> list[tuple[str, str]]:
    """(tag id, phrase as the text writes it) of every taxonomy mention a short text (a TL;DR)
    asserts: a negated or contrasted one is left out. The text's own form ("self-supervised",
    not the taxonomy's "self supervised") is what a re-ask can quote back to the model."""
    analysis = _Analysis(matcher_for(taxonomy), text[:_MAX_CHARS])
    tokens, gaps = analysis.tokens, analysis.gaps
    return [
        (
            m.tag,
            tokens[m.start] + "".join(gaps[k] + tokens[k + 1] for k in range(m.start, m.end - 1)),
        )
        for m in analysis.mentions
    ]


def support(text: str, taxonomy: Taxonomy) -> frozenset[str]:
    """Every tag the text gives some support for, as the matcher sees it: a phrase of the tag
    (an ambiguous one only with its context cue; negated or contrasted mentions count), a
    model-family name, or a contribution cue. `match_tags` selects from these; a model's tag
    is checked against them (pipeline/support/tags.py). Memoized for the last texts (`match_tags`
    leaves its own there: the offline backend's answer is checked without a second scan)."""
    return _supported(text[:_MAX_CHARS], taxonomy)[0]


def negated_only(text: str, taxonomy: Taxonomy) -> frozenset[str]:
    """The tags of `support` whose every phrase in the text is negated or contrasted ("NPMT
    does not use attention-based decoding"): support that asserts nothing (memoized with it)."""
    return _supported(text[:_MAX_CHARS], taxonomy)[1]


def _supported(text: str, taxonomy: Taxonomy) -> tuple[frozenset[str], frozenset[str]]:
    hit = _SUPPORT.get((text, id(taxonomy)))
    if hit is None or hit[0] is not taxonomy:
        return _remember(text, taxonomy, _Analysis(matcher_for(taxonomy), text))
    return hit[1]


_SUPPORT: dict[tuple[str, int], tuple[Taxonomy, tuple[frozenset[str], frozenset[str]]]] = {}


def _remember(
    text: str, taxonomy: Taxonomy, analysis: _Analysis
) -> tuple[frozenset[str], frozenset[str]]:
    found = _support_of(analysis, taxonomy)
    if len(_SUPPORT) >= 64:
        _SUPPORT.pop(next(iter(_SUPPORT)))
    result = (found, found & analysis.negated)
    _SUPPORT[(text, id(taxonomy))] = (taxonomy, result)
    return result


def _support_of(analysis: _Analysis, taxonomy: Taxonomy) -> frozenset[str]:
    tags = set(analysis.supported)
    for k in _cue_hits(analysis.lower, analysis.cue_starts):
        tag_id, weight = _CUE_TAGS[k]
        if weight > 0:
            tags.add(tag_id)
    if not analysis.text.isascii():
        text = analysis.text
        tags.update(tag_id for tag_id, needles, _w in _CJK_CUES if any(s in text for s in needles))
    return frozenset(t for t in tags if t in taxonomy.tags)
