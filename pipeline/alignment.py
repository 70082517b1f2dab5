"""Near-verbatim evidence: where a quote that is not character-exact stands in the abstract.

`pipeline.spans.locate` tries this last, after the exact and folded matches fail. Models
"correct" a word of what they quote, clean a PDF artifact, elide with "...", or rebuild one
item of a list sentence; such evidence is located here, and the evidence stored is always
the abstract's own text from the first aligned word to the last.

Both texts are folded (typography, TeX; see `pipeline.spans.fold`), then cut into word and
number tokens, lowercased, letters split from digits ("CIFAR100" = "CIFAR-100"). The evidence
must align with the words of the abstract, in order, within one sentence (two for a quote
that crosses a sentence end), and these edits are all that is allowed (the bound):

- a word split or joined ("classifi- cation" = "classification"), or up to `MAX_JOINED`
  words glued by a PDF ("stateofart" = "state-of-art");
- at most `MAX_CHANGED_WORDS` changed words, each a *variant* of the abstract's word (the
  same root: model/models, propose/proposed, study/studies; another form of be, have or do: was/were; a
  preposition or comparative of the same sense: to/into, less/fewer; a spelling variant:
  same first two letters, 5 letters or more, edit distance 1, or 2 from 8 letters on; a
  typo: two letters swapped from 5 letters on, "MNIST"/"MINST", or one letter added or
  left out inside a word of 4 letters or more, "where"/"were"; another ending of one stem:
  6 letters or more and three quarters of the shorter word shared, the rest suffixes such as
  "-ally", "-ility", "-nces": "geometric"/"geometrically"), or one word of the abstract left
  out ("applicable" for "even applicable"), or one function word added (`fillers`: "of",
  "to", "we" ...: "performance of models" for the abstract's "performance models");
  a number, or a polarity word ("not", "without", "better", "more", "outperforms", ...)
  other than by its own root, is never changed or left out;
- the "not only" of the abstract's "not only X but also Y" left out, or all of "not only X
  but also" ("than many single-task networks" for "than not only a single large model but
  also many single-task networks"): X and Y are both asserted, so each stands alone;
- at most `MAX_ARTICLES` articles ("a", "an", "the") added or left out;
- an elision ("...", "…", "[...]"): the text between two pieces of the quote is skipped,
  within one sentence, unless it holds a negation or a contrast ("not", "without", "but",
  "while", ...) outside parentheses (the "not only ... but" of a correlative is neither);
- a list item rebuilt from its sentence: at most `MAX_LIST_SKIPS` runs of the quote's own
  sentence skipped, each at most `MAX_LIST_RUN` words of list material (it starts with
  "and"/"or" or touches a comma or semicolon, or is "respectively") holding no polarity word
  (one hyphenated to its neighbour, as in "few-shot", is part of a compound, not polarity);
- a footnote marker: a 1-2 digit number glued to a word of the abstract ("0.6%1to") left out;
- a citation marker of the abstract left out ("UCF-101" for "UCF-101[1]", "[2, 3]");
- a run of 1-3 words the abstract repeats right after itself ("close to close to") quoted once.

Numbers must match exactly: every number of the quote aligns with the same number of the
abstract. At least `MIN_EXACT_SHARE` of the quote's tokens (and 3) must align unchanged.
`python -m bench.alignment` measures what this lets through on fabricated quotes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz.distance import OSA, Levenshtein

from pipeline.datafiles import DataFile, WordSet, load_data
from pipeline.folding import fold

MAX_CHANGED_WORDS = 2
MAX_ARTICLES = 2
MAX_LIST_SKIPS = 4
MAX_LIST_RUN = 5  # words of one skipped list item ("and", "or", "respectively" not counted)
MAX_FOOTNOTES = 2
MAX_LEFT_OUT = 1  # words of the abstract a quote may leave out (beyond articles and lists)
MAX_ADDED = 1  # function words a quote may add ("performance of models")
MIN_SHARED_STEM = 6  # letters two forms of one word share ("geometric"/"geometrically")
MIN_EXACT_SHARE = 0.6
MIN_TOKENS = 4  # a shorter quote gets no tolerance at all
MAX_JOINED = 4  # words a PDF glued into one ("stateoftheart"), or a quote did
MAX_CORRELATIVE = 12  # words between "not only" and "but also" that a quote may leave out

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
_ELLIPSIS = re.compile(r"\s*(?:[\[(]\s*(?:\.\.\.+|\u2026)\s*[\])]|\.\.\.+|\u2026)\s*")
DATA_FILE = "alignment.yaml"


class AlignmentWords(DataFile):
    """The format of prompts/alignment.yaml (what each list is for is written there)."""

    articles: WordSet
    forms: tuple[WordSet, ...]
    polarity: WordSet
    negations: WordSet
    fillers: WordSet
    endings: WordSet
    abbreviation_ends: WordSet


WORDS = load_data(DATA_FILE, AlignmentWords)
ARTICLES = WORDS.articles
_FORMS = WORDS.forms  # of be, have and do
POLARITY = WORDS.polarity
# What an elision may not skip (outside parentheses): it would reverse what is kept.
NEGATIONS = WORDS.negations
FILLERS = WORDS.fillers
_ENDINGS = WORDS.endings | {""}  # a name's "SpectralNet" is no form of "spectral"
_ABBREVIATION_ENDS = WORDS.abbreviation_ends
_SUFFIXES = ("ing", "ed", "es", "s", "ly", "e")
_HYPHENS = frozenset("-\u2010\u2011")
_SENTENCE_GAP = re.compile(r"[.!?][\"')\]]*\s")
_CITATION = re.compile(r"\[\s*\d{1,3}(?:\s*[,\u2013-]\s*\d{1,3})*\s*\]")


@dataclass(frozen=True)
class _Tokens:
    keys: tuple[str, ...]
    starts: tuple[int, ...]  # offsets into the original text
    ends: tuple[int, ...]
    comma_before: tuple[bool, ...]  # a comma or semicolon in the gap before the token
    glued_before: tuple[bool, ...]  # no gap at all before the token
    hyphen_before: tuple[bool, ...]  # the gap before the token is a hyphen ("few-shot")
    sentence: tuple[int, ...]  # sentence number of each token
    in_parens: tuple[bool, ...]  # inside ( ... )
    citation: tuple[bool, ...]  # a number of a citation marker ("UCF-101[1]", "[2, 3]")


def _tokenize(text: str) -> _Tokens:
    folded = fold(text)
    keys: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    comma: list[bool] = []
    glued: list[bool] = []
    hyphen: list[bool] = []
    sentence: list[int] = []
    parens: list[bool] = []
    cited: list[bool] = []
    markers = [c.span() for c in _CITATION.finditer(folded.text)]
    depth = 0
    number = 0
    last_end = 0
    for m in _TOKEN.finditer(folded.text):
        gap = folded.text[last_end : m.start()]
        word = m.group(0)
        if (
            keys
            and _SENTENCE_GAP.search(gap)
            and (word[0].isupper() or word[0].isdigit())
            and keys[-1] not in _ABBREVIATION_ENDS
        ):
            number += 1
        glued.append(bool(keys) and not gap)
        hyphen.append(bool(keys) and gap in _HYPHENS)
        keys.append(word.lower().replace(",", "") if word[0].isdigit() else word.lower())
        starts.append(folded.starts[m.start()])
        ends.append(folded.ends[m.end() - 1])
        comma.append("," in gap or ";" in gap or ":" in gap)
        sentence.append(number)
        depth = max(0, depth + gap.count("(") - gap.count(")"))
        parens.append(depth > 0)
        cited.append(any(lo <= m.start() < hi for lo, hi in markers))
        last_end = m.end()
    return _Tokens(
        tuple(keys),
        tuple(starts),
        tuple(ends),
        tuple(comma),
        tuple(glued),
        tuple(hyphen),
        tuple(sentence),
        tuple(parens),
        tuple(cited),
    )


@lru_cache(maxsize=256)
def _abstract_tokens(abstract: str) -> _Tokens:
    return _tokenize(abstract)


def _root(word: str) -> str:
    if word.endswith(("ies", "ied")) and len(word) >= 6:
        return word[:-3] + "y"  # "studies", "studied": "study"
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def is_variant(quoted: str, original: str) -> bool:
    """True when `quoted` may stand for `original` as a changed word (see the module)."""
    if quoted == original:
        return True
    if not quoted.isalpha() or not original.isalpha():
        return False  # numbers never change
    if _root(quoted) == _root(original) or original in (_root(quoted), quoted + "es"):
        return True  # "biases" for "bias": the plural's root is the word itself
    if any(quoted in forms and original in forms for forms in _FORMS):
        return True
    if quoted in POLARITY or original in POLARITY:
        return False
    shorter = min(len(quoted), len(original))
    allowed = 2 if shorter >= 8 else 1  # "behaviour"/"behavior"; never "while"/"which"
    if (
        shorter >= 5
        and quoted[:2] == original[:2]
        and Levenshtein.distance(quoted, original, score_cutoff=allowed) <= allowed
    ):
        return True
    return _typo(quoted, original) or _same_stem(quoted, original)


def _typo(a: str, b: str) -> bool:
    """Two letters swapped ("MINST"), or one letter inside a word ("were"/"where")."""
    if a[0] != b[0] or a[-1] != b[-1]:
        return False
    if len(a) == len(b):
        return len(a) >= 5 and sorted(a) == sorted(b) and OSA.distance(a, b) == 1
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and Levenshtein.distance(short, long, score_cutoff=1) == 1


def _same_stem(a: str, b: str) -> bool:
    """Another ending of one stem ("geometric"/"geometrically", "converges"/"convergences")."""
    shorter = min(len(a), len(b))
    if shorter < MIN_SHARED_STEM:
        return False
    shared = 0
    while shared < shorter and a[shared] == b[shared]:
        shared += 1
    return (
        shared >= MIN_SHARED_STEM
        and shared * 4 >= shorter * 3
        and a[shared:] in _ENDINGS
        and b[shared:] in _ENDINGS  # "generative" is no form of "generator"
    )


@dataclass(frozen=True, order=True)
class _Cost:
    edits: int = 0
    changed: int = 0
    articles: int = 0
    skips: int = 0
    footnotes: int = 0
    left_out: int = 0
    added: int = 0

    def add(self, **kw: int) -> _Cost | None:
        cost = _Cost(
            self.edits + sum(kw.values()),
            self.changed + kw.get("changed", 0),
            self.articles + kw.get("articles", 0),
            self.skips + kw.get("skips", 0),
            self.footnotes + kw.get("footnotes", 0),
            self.left_out + kw.get("left_out", 0),
            self.added + kw.get("added", 0),
        )
        if (
            cost.changed > MAX_CHANGED_WORDS
            or cost.articles > MAX_ARTICLES
            or cost.skips > MAX_LIST_SKIPS
            or cost.footnotes > MAX_FOOTNOTES
            or cost.left_out > MAX_LEFT_OUT
            or cost.added > MAX_ADDED
        ):
            return None
        return cost


def align(abstract: str, evidence: str) -> tuple[int, int] | None:
    """The span of the abstract that near-verbatim `evidence` stands for, or None."""
    pieces = [p for p in _ELLIPSIS.split(evidence) if _TOKEN.search(p)]
    if not pieces:
        return None
    quote: list[str] = []
    piece_starts: set[int] = set()
    for piece in pieces:
        piece_starts.add(len(quote))
        quote.extend(_tokenize(piece).keys)
    piece_starts.discard(0)
    if len(quote) < MIN_TOKENS:
        return None
    text = _abstract_tokens(abstract)
    needed = max(3, -(-len(quote) * int(MIN_EXACT_SHARE * 100) // 100))
    best: tuple[_Cost, int, int] | None = None
    for lo, hi in _candidate_windows(text, quote, needed):
        found = _align_window(text, lo, hi, quote, piece_starts, needed)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    if best is None:
        return None
    _cost, first, last = best
    return text.starts[first], text.ends[last]


def _candidate_windows(text: _Tokens, quote: list[str], needed: int) -> list[tuple[int, int]]:
    """Token ranges of one sentence, or two in a row, sharing at least `needed` quote tokens."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(text.keys) + 1):
        if i == len(text.keys) or text.sentence[i] != text.sentence[i - 1]:
            bounds.append((start, i))
            start = i
    wanted = set(quote)
    windows = []
    for k, (lo, hi) in enumerate(bounds):
        for lo2, hi2 in ((lo, hi), (lo, bounds[k + 1][1]) if k + 1 < len(bounds) else (lo, hi)):
            if (lo2, hi2) in windows:
                continue
            shared = len(wanted & set(text.keys[lo2:hi2]))
            if shared >= min(needed, len(wanted)):
                windows.append((lo2, hi2))
    return windows


_State = tuple["_Cost", int, int, int]  # (cost, exact tokens, first and last aligned token)


class _Table:
    """The cheapest state per (quote tokens consumed, next abstract token)."""

    def __init__(self) -> None:
        self.best: dict[tuple[int, int], _State] = {}

    def offer(self, i: int, j: int, state: _State) -> None:
        """Keep `state` at (i, j) when it beats what is there (cost, then more exact)."""
        old = self.best.get((i, j))
        if old is None or (state[0], -state[1]) < (old[0], -old[1]):
            self.best[(i, j)] = state


def _align_window(
    text: _Tokens, lo: int, hi: int, quote: list[str], piece_starts: set[int], needed: int
) -> tuple[_Cost, int, int] | None:
    """The cheapest alignment of the whole quote inside tokens [lo, hi): (cost, first, last)."""
    m = len(quote)
    table = _Table()
    for j in range(lo, hi):
        table.offer(0, j, (_Cost(), 0, -1, -1))
    finals: list[_State] = []
    for j in range(lo, hi + 1):
        for i in range(m + 1):
            state = table.best.get((i, j))
            if state is None:
                continue
            if i == m:
                if state[1] >= needed:
                    finals.append(state)
                continue
            _steps(table, text, hi, quote, piece_starts, i, j, state)
    if not finals:
        return None
    cost, _exact, first, last = min(finals, key=lambda s: (s[0], s[3] - s[2]))
    return cost, first, last


def _steps(
    table: _Table,
    text: _Tokens,
    hi: int,
    quote: list[str],
    piece_starts: set[int],
    i: int,
    j: int,
    state: _State,
) -> None:
    """Offer every state one edit away from `state` at (i, j) (the edits of the module)."""
    cost, exact, first, last = state
    keys, q, started = text.keys, quote[i], first >= 0

    def moved(di: int, dj: int, new_cost: _Cost | None, gain: int) -> None:
        if new_cost is not None:
            start = first if started else j
            table.offer(i + di, j + dj, (new_cost, exact + gain, start, j + dj - 1))

    def skipped(to: int, new_cost: _Cost | None) -> None:
        if new_cost is not None:
            table.offer(i, to, (new_cost, exact, first, last))

    if j < hi:
        a = keys[j]
        if q == a:
            moved(1, 1, cost, 1)
        elif is_variant(q, a):
            moved(1, 1, cost.add(changed=1), 0)
        # "classifi cation" for "classification", "state of art" for "stateofart"
        if not a.isdigit():
            for n in range(2, MAX_JOINED + 1):
                if i + n <= len(quote) and "".join(quote[i : i + n]) == a:
                    moved(n, 1, cost, n)
        if not q.isdigit():
            for n in range(2, MAX_JOINED + 1):
                if j + n <= hi and q == "".join(keys[j : j + n]):
                    moved(1, n, cost, 1)
        if started and (size := _repeated(keys, j)):
            skipped(j + size, cost)  # the abstract's "close to close to": one is quoted
        if started and a in ARTICLES:
            skipped(j + 1, cost.add(articles=1))
        elif started and exact and a.isalpha() and a not in POLARITY and a not in NEGATIONS:
            # "is even applicable"; only after a word quoted as written ("Accurate results"
            # is no "accuracy. Experimental results")
            skipped(j + 1, cost.add(changed=1, left_out=1))
        if started:
            for end in _correlative_ends(text, j, hi):
                skipped(end, cost.add(skips=1))
        if started and _is_footnote(text, j):
            skipped(j + 1, cost.add(footnotes=1))
        if started and text.citation[j]:
            skipped(j + 1, cost)  # "UCF-101, HMDB-51" for "UCF-101[1], HMDB-51[2]"
        if started and exact and text.sentence[j - 1] == text.sentence[j]:
            # list items of the sentence the quote is in, never across a sentence end, and
            # only after a word quoted as written ("Models that ..." is no item of
            # "modeling tool on a real application and show that ...")
            for k in range(j + 1, min(hi, j + MAX_LIST_RUN + 2) + 1):
                if text.sentence[k - 1] != text.sentence[j]:
                    break
                if _is_list_run(text, j, k) and (k == hi or text.sentence[k] == text.sentence[j]):
                    skipped(k, cost.add(skips=1))
        if started and i in piece_starts:  # an elision: skip freely within the sentence
            correlative = False  # "not only X but (also) Y" asserts X and Y: no negation
            for k in range(j + 1, hi + 1):
                skip = keys[k - 1]
                if text.sentence[k - 1] != text.sentence[j]:
                    break
                if skip == "not" and k < len(keys) and keys[k] == "only":
                    correlative = True
                elif (
                    skip in NEGATIONS
                    and not text.in_parens[k - 1]
                    and not (correlative and skip == "but")
                ):
                    break
                skipped(k, cost)
    if q in ARTICLES and (c := cost.add(articles=1)) is not None:
        table.offer(i + 1, j, (c, exact, first, last))
    elif started and q in FILLERS and (c := cost.add(changed=1, added=1)) is not None:
        table.offer(i + 1, j, (c, exact, first, last))  # "performance of models"


def _repeated(keys: tuple[str, ...], j: int) -> int:
    """Length of a run of 1-3 words starting at j that the abstract repeats right after
    itself (a typo: "the the", "close to close to"), or 0."""
    for size in (1, 2, 3):
        if j + 2 * size <= len(keys) and keys[j : j + size] == keys[j + size : j + 2 * size]:
            return size
    return 0


def _correlative_ends(text: _Tokens, j: int, hi: int) -> tuple[int, ...]:
    """Where a quote may go on after leaving out the "not only" (or "not only X but also")
    that starts at token j."""
    keys = text.keys
    if keys[j] != "not" or j + 1 >= hi or keys[j + 1] != "only":
        return ()
    for k in range(j + 2, min(hi - 1, j + 2 + MAX_CORRELATIVE + 1)):
        if text.sentence[k] != text.sentence[j] or keys[k] in NEGATIONS and keys[k] != "but":
            break
        if keys[k] == "but" and keys[k + 1] == "also":
            return (j + 2, k + 2)
    return (j + 2,)  # "not only X" asserts X


def _is_footnote(text: _Tokens, j: int) -> bool:
    key = text.keys[j]
    if not (key.isdigit() and len(key) <= 2):
        return False
    glued_after = j + 1 < len(text.keys) and text.glued_before[j + 1]
    return text.glued_before[j] or glued_after


def _is_list_run(text: _Tokens, j: int, k: int) -> bool:
    run = text.keys[j:k]
    if any(
        w in POLARITY
        and not (text.hyphen_before[p + 1] if p + 1 < k else False)
        and not text.hyphen_before[p]
        for p, w in enumerate(run, start=j)
    ):
        return False
    if run == ("respectively",):
        return True
    words = [w for w in run if w not in ("and", "or", "respectively")]
    if not words:
        return run in (("and",), ("or",))  # the connector before the item kept
    if len(words) > MAX_LIST_RUN:
        return False
    # An item of a list: the last one after "and"/"or", any other one before its comma
    # (semicolon, colon) or before the "and"/"or" of the next.
    after = k < len(text.keys) and (text.comma_before[k] or text.keys[k] in ("and", "or"))
    return run[0] in ("and", "or") or after
