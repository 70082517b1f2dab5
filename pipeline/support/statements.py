"""What a claim's statement shows that its evidence or abstract does not.

- `statement_problems(...)`: what a claim's statement shows that its evidence or abstract
  does not (numbers, names, contradictions, superiority, new words); `comparison_widened(
  abstract, span)`: evidence grown to the comparison of its sentence when a statement claims
  one the quote left out.
- `unstated_superiority`, the superiority and parity words; `unstated_quality`, the quality
  a grown comparison must compare ("more interpretable than"); `unstated_universals`
  ("all", "always") and `unstated_judgements` ("successfully", "accurately") the evidence's
  sentences do not back; `contradictions`, the antonyms; `answered`, a question of the
  evidence ("whether these models leak ...") stated as a result; `new_words`, content words
  the abstract never uses.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pipeline.alignment import is_variant
from pipeline.support.names import ABBREVIATIONS, unsupported_names
from pipeline.support.numbers import context_unit_mismatches, ungrounded_numbers
from pipeline.support.words import (
    _SMALL_WORDS,
    GENERIC_WORDS,
    WORDS,
    _lemma_index,
    _verbatim,
    _word_set,
    lemma,
    numbers_and_names,
    tokens,
)
from pipeline.text import sentence_bounds

# Word pairs of opposite meaning: a statement that says one where its evidence says the
# other (and not the first) contradicts it. Compared as lemmas.
ANTONYMS = WORDS.antonyms


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
    claimed = next(
        (w for t in _unmatched(_unbounded(statement)) if (w := lemma(t)) in claims), None
    )
    if claimed is not None and abstract:  # names are looked up only for a claiming word
        unnamed = _CAPITALIZED_RUN.sub(
            lambda m: " " if _verbatim(m.group(0), abstract) else m.group(0), statement
        )
        claimed = next(
            (w for t in _unmatched(_unbounded(unnamed)) if (w := lemma(t)) in claims), None
        )
    if claimed is None:
        return None
    # "comparing it with the state-of-the-art baseline": what an evaluation does, no result
    said = _PROCEDURE.sub(" ", evidence)
    words = [*tokens(said), *tokens(said.replace("-", ""))]
    shown = {lemma(t) for t in _unmatched(words)}
    if shown & comparisons:
        return None
    return None if any(t[0].isdigit() for t in shown) and _states_quantity(evidence) else claimed


# An evaluation's procedure, not its result: "comparing it with the state-of-the-art
# baseline" (the state of the art is what the method is compared with, not what it reaches).
_PROCEDURE = re.compile(
    r"\bcompar(?:e|es|ing)\s+(?:it|them)(?=\s+(?:with|to|against)\b)|\b(?:with|to|against)\s+"
    r"(?:the\s+)?(?:state[- ]of[- ]the[- ]art|sota)\s+(?:baselines?|methods?|approach(?:es)?|"
    r"models?|algorithms?|techniques?|systems?|competitors?|alternatives?)\b",
    re.I,
)


def _unbounded(text: str) -> list[str]:
    """The tokens of `text` without the "lower"/"upper" of a bound: "regret matches the
    lower bound" claims no superiority."""
    words = tokens(text)
    return [
        w
        for k, w in enumerate(words)
        if not (w in ("lower", "upper") and k + 1 < len(words) and words[k + 1] == "bound")
    ]


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


_COMPARATIVES = frozenset(("more", "less"))
_DEGREES = frozenset(("more", "most", "less", "least"))


def unstated_quality(statement: str, evidence: str, grown: str) -> str | None:
    """The quality of a statement's "more A than" or "less A than" that `evidence` does not
    compare, else None: evidence grown (`grown`: the words added) to "... outperform both
    baselines" states no "more interpretable than". A in the grown words, or "more A" or
    "the most A" in the evidence, backs it."""
    words = tokens(statement)
    said = tokens(evidence)
    added = {lemma(t) for t in tokens(grown)}
    for k, word in enumerate(words[:-2]):
        quality = words[k + 1]
        if word not in _COMPARATIVES or words[k + 2] != "than" or not quality.isalpha():
            continue
        wanted = lemma(quality)
        if wanted in added or any(
            said[i] in _DEGREES and lemma(said[i + 1]) == wanted for i in range(len(said) - 1)
        ):
            continue
        return f"{word} {quality} than"
    return None


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


def new_words(statement: str, abstract: str) -> list[str]:
    """Content words of a statement found nowhere in the abstract ("helpful" in "reviewers
    found it helpful" when the abstract never says so): not as a lemma, not as a spelling
    variant (`alignment.is_variant`: "analyze" for "analyse") and not as a fixed
    abbreviation of its words ("NLP" for "natural language processing")."""
    same = _word_set(abstract)  # the word itself: no stemming needed
    out = []
    for t in tokens(statement):
        if t[0].isdigit() or len(t) <= 2 or t in same or t in _FUNCTION_WORDS:
            continue
        if (
            t not in GENERIC_WORDS
            and t not in out
            and lemma(t) not in _lemma_index(abstract).positions
            and not any(w[:2] == t[:2] and is_variant(t, w) for w in same)
            and not _abbreviates(t, abstract)
        ):
            out.append(t)
    return out


def _abbreviates(word: str, abstract: str) -> bool:
    """`word` is a fixed abbreviation (grounding.yaml `abbreviations`) whose long form's
    words the abstract uses."""
    long_form = ABBREVIATIONS.get(word)
    if long_form is None:
        return False
    positions = _lemma_index(abstract).positions
    return all(lemma(w) in positions for w in long_form.split())


def statement_problems(
    statement: str, evidence: str, abstract: str, context: str | None = None
) -> list[str]:
    """What a claim's statement shows that its evidence (numbers; `context`, the sentences
    the evidence lies in, when given) or the abstract (names) does not, or where it
    contradicts its evidence; [] when it is grounded."""
    problems = [f"{n!r}, which its evidence does not hold" for n in
                (*ungrounded_numbers(statement, context or evidence, abstract),
                 *context_unit_mismatches(statement, evidence, context or evidence))]  # fmt: skip
    said = " ".join(statement.rstrip(". ").lower().split())
    if evidence.lower() in said and said in " ".join((context or abstract).lower().split()):
        # The statement is the evidence's own sentence (what the offline extractor writes):
        # its names and words are the abstract's, and it cannot contradict itself.
        return problems
    problems += [
        f"{n!r}, which the abstract does not name" for n in unsupported_names(statement, abstract)
    ]
    problems += contradictions(statement, evidence)
    problems += [
        f"{q!r} as a result, which its evidence only asks" for q in answered(statement, evidence)
    ]
    backing = context or evidence
    problems += [f"{w!r}, which its evidence does not say" for w in
                 (*unstated_universals(statement, backing),
                  *unstated_judgements(statement, backing))]  # fmt: skip
    problems += [
        f"{w!r} without its evidence's {h!r}" for h, w in dropped_hedges(statement, evidence)
    ]
    if (claimed := unstated_superiority(statement, evidence, abstract)) is not None:
        problems.append(f"a claim of superiority ({claimed!r}) its evidence does not state")
    added = new_words(statement, abstract)
    if len(added) > MAX_NEW_WORDS:
        listed = ", ".join(repr(w) for w in added)
        problems.append(f"words the abstract never uses ({listed}): say what it says")
    return problems


_WORD = re.compile(r"[^\W\d_]+")  # words as written (`tokens` drops a plural "s")
_UNIVERSAL = re.compile(
    r"(?<![\w-])(" + "|".join(sorted(WORDS.universal_words)) + r")(?![\w-])", re.I
)


def dropped_hedges(statement: str, evidence: str) -> list[tuple[str, str]]:
    """(hedge, word) of the evidence's hedged words ("near-linear") that the statement says
    without any hedge of the same line (grounding.yaml `hedges`): "linear time" claims more."""
    said = _WORD.findall(statement.lower())
    words = set(said) | {lemma(w) for w in said}
    found = []
    quoted = _WORD.findall(evidence.lower())
    bare = {w for k, w in enumerate(quoted) if k == 0 or not _hedge_line(quoted[k - 1])}
    for hedge, word in zip(quoted, quoted[1:], strict=False):
        line = _hedge_line(hedge)
        if line is None or word in WORDS.function_words or word in WORDS.small_words:
            continue  # "close to", "close the gap"
        if word in bare:
            continue  # "near-optimal here, optimal there": the evidence says it plainly too
        if (word in words or lemma(word) in words) and line.isdisjoint(said):
            found.append((hedge, word))
    return found


_ASKED = re.compile(r"\bwhether(?:\W+\w+){0,3}\W*$", re.I)


_WHETHER = re.compile(r"\bwhether\b([^,;.:()]*)", re.I)
_NO_QUESTION = re.compile(r"\b(?:regardless|irrespective)\s+of\s+$|\bno\s+matter\s+$", re.I)
ANSWERED_RUN = 3  # content words of the question, in a row, that make a statement its answer


def answered(statement: str, evidence: str) -> list[str]:
    """The questions of `evidence` ("report results on whether these models leak private
    information") that `statement` states as results ("the models are shown to leak private
    information"), without a "whether" or "if" of its own."""
    if not _WHETHER.search(evidence) or re.search(r"\b(?:whether|if)\b", statement, re.I):
        return []
    said = [lemma(t) for t in tokens(statement) if t not in _SMALL_WORDS]
    out = []
    for m in _WHETHER.finditer(evidence):
        if _NO_QUESTION.search(evidence[max(0, m.start() - 20) : m.start()]):
            continue  # "regardless of whether ...": no question
        asked = [lemma(t) for t in tokens(m.group(1)) if t not in _SMALL_WORDS]
        runs = (tuple(asked[k : k + ANSWERED_RUN]) for k in range(len(asked) - ANSWERED_RUN + 1))
        if any(_in_a_row(run, said) for run in runs):
            out.append(" ".join(m.group(0).split()))
    return out


def _in_a_row(run: tuple[str, ...], words: list[str]) -> bool:
    n = len(run)
    return any(tuple(words[k : k + n]) == run for k in range(len(words) - n + 1))


def asked_only(abstract: str, span: tuple[int, int]) -> bool:
    """The span follows a "whether" of its own sentence, at most 3 words before it: the
    abstract asks it ("we investigate whether recent advances lead to improvements"), it
    does not report it."""
    before = abstract[max(0, span[0] - 60) : span[0]]
    before = re.split(r"[.!?;]\s", before)[-1]
    return _ASKED.search(before) is not None


def _hedge_line(word: str) -> frozenset[str] | None:
    return next((line for line in WORDS.hedges if word in line), None)


def unstated_universals(statement: str, context: str) -> list[str]:
    """The words of `statement` claiming a result holds everywhere ("all", "always") that
    its evidence's sentences back with no such word ("all types" over "several types");
    not "not all" or a compound ("all-attention")."""
    found = [
        m.group(1).lower()
        for m in _UNIVERSAL.finditer(statement)
        if not statement[: m.start()].rstrip().lower().endswith(("not", "at"))
    ]
    if not found or not WORDS.universal_support.isdisjoint(_WORD.findall(context.lower())):
        return []
    return list(dict.fromkeys(found))


JUDGEMENT_STEM = 6  # letters a word of the evidence shares with a judgement ("accura"cy)


def unstated_judgements(statement: str, context: str) -> list[str]:
    """The words of `statement` judging how well a result came out ("successfully",
    "accurately") whose stem its evidence's sentences never use."""
    said = {w[:JUDGEMENT_STEM] for w in _WORD.findall(context.lower())}
    return list(
        dict.fromkeys(
            w
            for w in _WORD.findall(statement.lower())
            if w in WORDS.judgement_words and w[:JUDGEMENT_STEM] not in said
        )
    )
