"""Offline TL;DR: pick the abstract sentence that states the contribution, then compress it.

Deterministic and stdlib-only. Selection scores each sentence by contribution cues, position,
centrality (word overlap with the rest of the abstract) and penalties for background,
motivation and result-detail sentences; compression removes boilerplate openers and
trailing detail until the sentence fits the word budget. Every kept word is copied from the
abstract, so numbers in the output always occur in it.
"""

from __future__ import annotations

import html
import re

from pipeline.text import display_text, normalize_ws, numbers_in, split_sentences

MAX_WORDS = 35
TARGET_WORDS = 30
# Abstracts are ~2 kB; anything far beyond that is not an abstract, so only its head is read.
_MAX_CHARS = 20_000
_MAX_SENTENCES = 60
_MAX_OUT_CHARS = 320

_HTML_TAG = re.compile(
    r"</?(?:a|b|i|u|p|br|hr|em|strong|sub|sup|span|div|code|tt|small|big|font|img|li|ul|ol"
    r"|h[1-6]|table|tr|td|th|blockquote|pre|abbr|cite|s|strike|del|ins|mark|q)\b[^<>]{0,200}>",
    re.IGNORECASE,
)
_CJK_END = re.compile(r"(?<=[。！？；])")
_WORD = re.compile(r"[a-z][a-z0-9]+")

_STOP = frozenset(
    """a an the of to in on for and or with by from as at is are was were be been being this that
    these those it its we our us their they which who whom whose what when where how than then
    such can could may might will would should must do does did has have had not no but also
    both each more most other some any all into over under between through via using use used
    based new novel approach method methods paper work propose proposed show shows present
    well while however further thus there here one two first can""".split()
)

# (pattern, weight): cues that a sentence states what the paper does.
_CUES: list[tuple[re.Pattern[str], float]] = [
    (
        re.compile(
            r"\b(?:we|this (?:paper|work|study|article|note)|the (?:present|current) (?:paper|work))"
            r" (?:\w+ly )?(?:propose|introduce|present|develop|design|devise|formulate|describe"
            r"|put forward|offer|contribute|construct|build|create|establish|define)s?\b",
            re.IGNORECASE,
        ),
        3.0,
    ),
    (re.compile(r"\b(?:in|with) this (?:paper|work|study|article|note)\b", re.IGNORECASE), 2.0),
    (re.compile(r"^(?:here|herein),? we\b", re.IGNORECASE), 2.0),
    (
        re.compile(
            r"\bwe (?:\w+ly )?(?:show|demonstrate|prove|find|study|investigate|explore|analy[sz]e"
            r"|derive|identify|examine|consider|address|tackle|provide|extend|generalize|learn"
            r"|train|argue|reveal|characterize|establish|leverage|use|apply|frame|cast|view)\b",
            re.IGNORECASE,
        ),
        1.0,
    ),
    (
        re.compile(
            r"\b(?:called|dubbed|named|termed|coined|which we call|we call|we refer to)\b",
            re.IGNORECASE,
        ),
        1.0,
    ),
    (
        re.compile(
            r"\b(?:a|an) (?:novel|new|simple|general|unified|principled|efficient|generic)\b",
            re.IGNORECASE,
        ),
        1.0,
    ),
    (re.compile(r"\bto (?:address|tackle|overcome|solve|remedy|mitigate|alleviate|fill)\b", re.I), 0.5),
    (re.compile(r"\bour (?:main |key )?(?:contribution|approach|method|model|framework)\b", re.I), 0.5),
]

# (pattern, weight): background, motivation, follow-up detail and housekeeping.
_PENALTIES: list[tuple[re.Pattern[str], float]] = [
    (
        re.compile(
            r"\b(?:recent(?:ly)?|has been|have been|has shown|have shown|has become|have become"
            r"|remains?|is still|are still|widely|typically|traditionally|commonly|often"
            r"|existing|prior|previous|conventional|current|state-of-the-art methods)\b",
            re.IGNORECASE,
        ),
        1.0,
    ),
    (
        re.compile(
            r"^(?:however|but|although|though|unfortunately|yet|despite|while|whereas)\b",
            re.IGNORECASE,
        ),
        1.0,
    ),
    (
        re.compile(
            r"^(?:we also|also|moreover|furthermore|additionally|in addition|finally|lastly"
            r"|further|besides|specifically|in particular|for example|for instance|e\.g\.)\b",
            re.IGNORECASE,
        ),
        1.5,
    ),
    (
        re.compile(
            r"\b(?:experiments?|experimental(?:ly)?|empirical(?:ly)?|results|outperforms?"
            r"|benchmarks?|datasets?|accuracy|baselines?|evaluat\w+)\b",
            re.IGNORECASE,
        ),
        0.7,
    ),
    (re.compile(r"https?://|\bgithub\b|\bcode (?:is|are|will be) (?:publicly )?available\b", re.I), 4.0),
    (re.compile(r"\d+(?:\.\d+)?\s*(?:%|\\%|x\b|×)"), 0.7),
]

# Openers that carry no content: "In this paper, we ...", "To this end, ...", "However, ...".
_OPENERS = re.compile(
    r"^(?:(?:in|with) (?:this|the present|the current) (?:paper|work|study|article|note)"
    r"|here(?:in)?|to this end|to that end|to do so|to do this|in particular|specifically"
    r"|however|moreover|furthermore|additionally|in addition|consequently|therefore|thus|hence"
    r"|finally|lastly|instead|in contrast|in response|as a result|accordingly|concretely"
    r"|more specifically|in short|in summary|overall|to address (?:this|these|the above)"
    r"(?: \w+){0,3}|to (?:tackle|overcome|solve|remedy|mitigate|alleviate) (?:this|these|the above)"
    r"(?: \w+){0,3}),\s*",
    re.IGNORECASE,
)
_OPENERS_NO_COMMA = re.compile(
    r"^(?:(?:in|with) this (?:paper|work|study|article|note)|here(?:in)?)\s+(?=we\b)",
    re.IGNORECASE,
)
# A leading subordinate clause ending in ", we ..." (e.g. "Motivated by X, we ...").
_LEAD_CLAUSE = re.compile(
    r"^(?:while|although|though|since|because|as|motivated|inspired|building|based|given"
    r"|leveraging|using|by|unlike|in contrast to|following|starting|drawing|observing"
    r"|towards?|in order to|to)\b[^;]{0,200}?,\s+(?=we\b)",
    re.IGNORECASE,
)
# Trailing detail that can go when the sentence is over budget.
_TAIL_CUTS = re.compile(
    r"(?:,|;|:|\s[-\u2013\u2014]+)\s+(?=(?:which|where|whereby|while|whereas|thus|thereby|and thus"
    r"|leading|resulting|allowing|enabling|making|yielding|achieving|outperforming|including"
    r"|such as|e\.g\.|i\.e\.|as well as|and (?:we|our|it|show|demonstrate|achieve)|but)\b)"
    r"|\s\((?=[^()]{12,}\))|;\s+",
    re.IGNORECASE,
)


def extract_tldr(text: str) -> str:
    """One compressed sentence (<= 35 words) stating the abstract's contribution."""
    head = text[:_MAX_CHARS]
    sentences = _candidates(head)
    if not sentences:
        return _fallback(head)
    best = _select(sentences)
    out = _finish(_compress(best))
    return _grounded(out, text) or _fallback(head)


def _clean(text: str) -> str:
    text = _HTML_TAG.sub(" ", text)
    if "&" in text:
        text = html.unescape(text)
    return normalize_ws(display_text(text))


def _candidates(text: str) -> list[str]:
    out: list[str] = []
    for sentence in split_sentences(_clean(text)):
        out.extend(p.strip() for p in _CJK_END.split(sentence) if p.strip())
        if len(out) >= _MAX_SENTENCES:
            break
    return out[:_MAX_SENTENCES]


def _content_words(sentence: str) -> set[str]:
    # A 6-letter prefix is a cheap stand-in for stemming ("propose", "proposed", "proposal").
    return {w[:6] for w in _WORD.findall(sentence.lower()) if w not in _STOP}


def _select(sentences: list[str]) -> str:
    words = [_content_words(s) for s in sentences]
    df: dict[str, int] = {}
    for bag in words:
        for w in bag:
            df[w] = df.get(w, 0) + 1
    n = len(sentences)
    scored = [
        (_score(s, i, n, bag, df), -i, s) for i, (s, bag) in enumerate(zip(sentences, words, strict=True))
    ]
    return max(scored)[2]


def _score(sentence: str, index: int, n: int, bag: set[str], df: dict[str, int]) -> float:
    score = sum(w for pat, w in _CUES if pat.search(sentence))
    score -= sum(w for pat, w in _PENALTIES if pat.search(sentence))
    if n > 1 and bag:
        score += 2.0 * sum(df[w] - 1 for w in bag) / ((n - 1) * (len(bag) + 4))
    score += _position_prior(index, n)
    n_words = len(sentence.split())
    if n_words < 6:
        score -= 2.0
    elif n_words > 50:
        score -= 1.0
    return score


def _position_prior(index: int, n: int) -> float:
    if index == 0:
        return 0.5
    if n > 2 and index == n - 1:
        return -0.5
    return 0.0


def _compress(sentence: str) -> str:
    s = sentence
    for _ in range(3):
        before = s
        s = _OPENERS.sub("", s)
        s = _OPENERS_NO_COMMA.sub("", s)
        s = _LEAD_CLAUSE.sub("", s)
        if s == before:
            break
    if len(s.split()) < 4:
        s = sentence
    return _fit(s)


def _fit(sentence: str) -> str:
    """Cut trailing detail at clause boundaries until the sentence fits the word budget."""
    s = sentence
    while len(s.split()) > TARGET_WORDS:
        cuts = [m.start() for m in _TAIL_CUTS.finditer(s) if len(s[: m.start()].split()) >= 8]
        if not cuts:
            break
        s = s[: cuts[-1]]
    words = s.split()
    if len(words) > MAX_WORDS:
        s = " ".join(words[:TARGET_WORDS])
    return s


def _finish(sentence: str) -> str:
    s = normalize_ws(sentence).rstrip(" ,;:-\u2013\u2014")
    if len(s) > _MAX_OUT_CHARS:
        cut = s.rfind(" ", 0, _MAX_OUT_CHARS)
        s = s[: cut if cut > 0 else _MAX_OUT_CHARS].rstrip(" ,;:")
    if not s:
        return s
    first = s.split(" ", 1)[0]
    if first.isalpha() and first.islower():
        s = s[0].upper() + s[1:]
    if s[-1] not in ".!?\u3002\uff01\uff1f":
        s += "."
    return _one_sentence(s)


def _one_sentence(s: str) -> str:
    parts = split_sentences(s)
    if len(parts) <= 1:
        return s
    # A split we could not avoid (e.g. "U.S. Army"): keep the longest part.
    return max(parts, key=lambda p: len(p.split()))


def _grounded(out: str, text: str) -> str:
    """Drop any token whose number is not in the abstract (can only come from unescaping)."""
    found = numbers_in(out)
    if not found:
        return out
    known = set(numbers_in(text))
    if all(n in known for n in found):
        return out
    kept = [t for t in out.split() if all(n in known for n in numbers_in(t))]
    return normalize_ws(" ".join(kept))


def _fallback(text: str) -> str:
    words = normalize_ws(text).split()[:TARGET_WORDS]
    s = " ".join(words)[:_MAX_OUT_CHARS]
    return _grounded(_one_sentence(s), text) if s else ""
