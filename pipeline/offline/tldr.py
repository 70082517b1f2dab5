"""Offline TL;DR: pick the abstract sentence that states the contribution, then compress it.

Deterministic and stdlib-only. Selection scores every sentence with a linear model over
hand-written features: contribution cues ("we propose", "in this paper", the first such cue),
penalties for background, motivation, follow-up, citation and result-detail sentences,
position, length, and centrality (how much of its vocabulary recurs in the rest of the
abstract; no title needed). The weights were fitted once on the SciTLDR-A dev split
(ListNet towards the sentences with the best ROUGE-1 against the references, bagged, then
scaled and rounded); on that split the extractor scores best-reference ROUGE-1 ~42.0
(~41.8 in 5-fold cross-validation; lead-1 30.1, one-sentence oracle 47.8).

Compression drops parentheticals, example lists, boilerplate openers ("In this paper, we",
"However,") and leading background clauses ("To address this issue, we ..."), then cuts
trailing detail at clause boundaries until the sentence fits the word budget. Only markup
is normalized; every word is copied from the abstract, and a last check drops any token whose
number does not occur in it.

Measured on dev and rejected (each within noise or worse): further deletions (which/that/by-ing
tails, appositives, "novel", adverbs, "we <verb>"), shorter or longer word budgets, fusing a
second sentence, "This paper proposes"/"We propose" rewrites, extra selection features,
pairwise, boosted or directly-optimized rankers.
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter

from pipeline.text import display_text, normalize_ws, numbers_in, split_sentences

MAX_WORDS = 35
TARGET_WORDS = 30
# Abstracts are ~2 kB; anything far beyond that is not an abstract, so only its head is read.
_MAX_CHARS = 20_000
_MAX_SENTENCES = 60
_MAX_SENTENCE_WORDS = 120
_MAX_OUT_CHARS = 320
_MAX_CJK_CHARS = 100
_MIN_KEPT_WORDS = 5

# Inline markup vanishes ("<b>Foo</b>Net" is one word); block markup separates words.
_HTML_INLINE = re.compile(
    r"</?(?:a|b|i|u|em|strong|sub|sup|span|code|tt|small|big|font|abbr|cite|s|strike|del|ins"
    r"|mark|q)\b[^<>]{0,200}>",
    re.IGNORECASE,
)
_HTML_BLOCK = re.compile(
    r"</?(?:p|br|hr|div|img|li|ul|ol|h[1-6]|table|tr|td|th|blockquote|pre)\b[^<>]{0,200}>",
    re.IGNORECASE,
)
# Markdown emphasis: **bold** and _italic_ (not LaTeX subscripts like x_i or $a_b$).
_MARKDOWN = re.compile(r"\*\*([^*\n]+)\*\*|(?<![\w$\\])_([^_$\n]+)_(?![\w$])")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CJK_END = re.compile(r"(?<=[\u3002\uff01\uff1f\uff1b])")
_SEMICOLON = re.compile(r";\s+")
_WORD = re.compile(r"[a-z][a-z0-9]+")
_DIGIT = re.compile(r"\d")
_NUMBER_CHARS = frozenset("0123456789.,")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _wordset(
    """a an the of to in on for and or with by from as at is are was were be been being this that
    these those it its we our us their they which who whom whose what when where how than then
    such can could may might will would should must do does did has have had not no but also
    both each more most other some any all into over under between through via using use used
    based new novel approach method methods paper work propose proposed show shows present
    well while however further thus there here one two first"""
)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_PROPOSE = re.compile(
    r"\b(?:we|this (?:paper|work|study|article|note)|the (?:present|current) (?:paper|work))"
    r" (?:\w+ly )?(?:propose|introduce|present|develop|design|devise|formulate|describe"
    r"|put forward|offer|contribute|construct|build|create|establish|define)s?\b"
    r"|\u672c\u6587|\u6211\u4eec\u63d0\u51fa|\u63d0\u51fa\u4e86?\u4e00\u79cd"  # 本文, 我们提出, 提出(了)一种
)
_IN_THIS = re.compile(r"\b(?:in|with) this (?:paper|work|study|article|note)\b")
_HERE_WE = re.compile(r"^(?:here|herein),? we\b")
_WE_SHOW = re.compile(
    r"\bwe (?:\w+ly )?(?:show|demonstrate|prove|find|study|investigate|explore|analy[sz]e"
    r"|derive|identify|examine|consider|address|tackle|provide|extend|generalize|learn"
    r"|train|argue|reveal|characterize|establish|leverage|use|apply|frame|cast|view)\b"
)
_THIS_PAPER = re.compile(r"\bthis (?:paper|work)\b")
_WE = re.compile(r"\b(?:we|our)\b")
_BACKGROUND = re.compile(
    r"\b(?:recent(?:ly)?|has been|have been|has shown|have shown|has become|have become"
    r"|remains?|is still|are still|widely|typically|traditionally|commonly|often"
    r"|existing|prior|previous|conventional|current|state-of-the-art methods)\b"
)
_FOLLOW_UP = re.compile(
    r"^(?:we also|also|moreover|furthermore|additionally|in addition|finally|lastly"
    r"|further|besides|specifically|in particular|for example|for instance|e\.g\.)\b"
)
_RESULTS = re.compile(
    r"\b(?:experiments?|experimental(?:ly)?|empirical(?:ly)?|results|outperforms?"
    r"|benchmarks?|datasets?|accuracy|baselines?|evaluat\w+)\b"
)
_PERCENT = re.compile(r"\d+(?:\.\d+)?\s*(?:%|\\%|x\b|\u00d7)")
_LINK = re.compile(r"https?://|\bgithub\b|\bcode (?:is|are|will be) (?:publicly )?available\b")
_DEFINITION = re.compile(r"^[A-Z][\w-]*(?: [\w-]+){0,4} (?:is|are) ")
_NAMING = re.compile(r"\b(?:we call|which we call|called|dubbed|named|termed|coined|we refer to)\b")
_NOVEL = re.compile(r"\b(?:a|an) (?:novel|new|simple|general|unified|principled|generic)\b")
_ANAPHOR = re.compile(r"^(?:This|These|It|Such|They|Its|Their|Both)\b")
_CITATION = re.compile(r"\bet al\b|\(\D{0,60}(?:19|20)\d\d[a-z]?\)|\[\d+(?:[,\u2013-]\s*\d+)*\]")
_MATH = re.compile(r"[$\\^_]")
_ACRONYM = re.compile(r"\b[A-Za-z]*[A-Z][A-Za-z0-9]*[A-Z][\w-]*")
_ARTIFACT = re.compile(r"\b(?:framework|method|approach|algorithm|model|architecture|technique)\b")
# Feature patterns match the lowercased sentence (faster than IGNORECASE), except the cased ones.
_PATTERN_FEATURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("propose", _PROPOSE),
    ("in_this", _IN_THIS),
    ("here_we", _HERE_WE),
    ("we_show", _WE_SHOW),
    ("this_paper", _THIS_PAPER),
    ("background", _BACKGROUND),
    ("follow_up", _FOLLOW_UP),
    ("results", _RESULTS),
    ("percent", _PERCENT),
    ("link", _LINK),
    ("artifact", _ARTIFACT),
    ("naming", _NAMING),
    ("novel", _NOVEL),
    ("citation", _CITATION),
    ("math", _MATH),
)
_CASED_FEATURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("definition", _DEFINITION),
    ("anaphor", _ANAPHOR),
)

# Openers that carry no content: "In this paper, we ...", "To this end, ...", "However, ...".
_OPENERS = _rx(
    r"^(?:(?:in|with) (?:this|the present|the current) (?:paper|work|study|article|note)"
    r"|here(?:in)?|to this end|to that end|to do so|to do this|in particular|specifically"
    r"|however|moreover|furthermore|additionally|in addition|consequently|therefore|thus|hence"
    r"|finally|lastly|instead|in contrast|in response|as a result|accordingly|concretely"
    r"|more specifically|in short|in summary|overall|first(?:ly)?|second(?:ly)?|third(?:ly)?"
    r"|next|then|(?:somewhat |perhaps |more )?[a-z]{3,}ly"
    r"|to (?:address|tackle|overcome|solve|remedy|mitigate|alleviate|fill) (?:this|these|the above"
    r"|such)(?: [\w-]+){0,3}),\s*"
)
_OPENERS_NO_COMMA = _rx(
    r"^(?:(?:in|with) this (?:paper|work|study|article|note)|here(?:in)?)\s+(?=we\b)"
)
# A leading clause before ", we ..." / ", our ..." ("Motivated by X, we ...", "Using X, we ...").
_LEAD_CLAUSE = _rx(
    r"^(?:[a-z]+ing|while|whereas|although|though|since|because|as|when|if|despite|unlike"
    r"|motivated|inspired|based|given|in contrast to|compared (?:to|with)|instead of|beyond"
    r"|towards?|in order to|to|over|across|using|by|through|after|with|for|on|in)\b"
    r"[^;]{0,200}?,\s+(?=(?:we|our)\b)"
)
_PAREN = re.compile(r"\s*\([^()]*\)")
# Examples between paired dashes: "defenses---such as probes---are" (a dashed appositive stays).
_DASH_ASIDE = _rx(
    r"\s*(?:-{2,3}|[\u2013\u2014])\s*(?:e\.g\.|i\.e\.|such as|including|for example)"
    r"[^-\u2013\u2014]{1,150}?(?:-{2,3}|[\u2013\u2014])\s*"
)
_EXAMPLES = _rx(
    r",?\s*\b(?:e\.g\.|i\.e\.|such as|including)[^,;()\u2013\u2014]*?(?=[,;.](?:\s|$)|--|$)"
)
_DANGLING = _wordset(
    "a an the of to in on for and or with by from as at that which whose its their our this these"
    " is are be via than into over under between based using such like whether when where while"
    " both either not can we it also how what who without within across through upon among toward"
    " towards against along during about per thus then"
)
# Trailing detail that can go when the sentence is over budget.
_TAIL_CUTS = _rx(
    r"(?:,|;|:|\s[-\u2013\u2014]+)\s+(?=(?:which|where|whereby|while|whereas|thus|thereby|and thus"
    r"|leading|resulting|allowing|enabling|making|yielding|achieving|outperforming|including"
    r"|such as|as well as|and (?:we|our|it|show|demonstrate|achieve)|but)\b)|;\s+"
)

# (feature, weight): the linear sentence scorer, fitted on SciTLDR-A dev (see module docstring).
_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("propose", 1.80),
    ("in_this", -0.64),
    ("here_we", 0.67),
    ("we_show", 0.72),
    ("this_paper", 0.95),
    ("we", 0.39),
    ("first_cue", 0.84),
    ("first_we", 1.53),
    ("background", -0.25),
    ("follow_up", -0.25),
    ("results", -0.65),
    ("percent", -1.14),
    ("link", -1.26),
    ("definition", -0.39),
    ("artifact", 0.36),
    ("naming", 0.35),
    ("novel", -0.26),
    ("anaphor", 0.47),
    ("before_cue", -0.80),
    ("citation", -1.30),
    ("math", -0.77),
    ("acronyms", 0.58),
    ("kept_words", 0.83),
    ("question", -0.75),
    ("colon", -0.52),
    ("digit", -0.17),
    ("first", 0.51),
    ("last", -0.16),
    ("position", -0.24),
    ("log_words", 0.03),
    ("short", -2.09),
    ("length_gap", -0.67),
    ("centrality", 10.00),
    ("cosine", 3.74),
    ("coverage", 1.45),
    ("content", 1.26),
)


def extract_tldr(text: str) -> str:
    """One compressed sentence (<= 35 words) stating the abstract's contribution."""
    head = _head(text)
    sentences = _candidates(head)
    if not sentences:
        return _fallback(head)
    out = _finish(_compress(_select(sentences)))
    return _grounded(out, head) or _fallback(head)


def _head(text: str) -> str:
    """The first _MAX_CHARS characters, cut at whitespace so no token (or number) is split."""
    if len(text) <= _MAX_CHARS:
        return text
    cut = max(text.rfind(" ", 0, _MAX_CHARS), text.rfind("\n", 0, _MAX_CHARS))
    return text[: cut if cut > 0 else _MAX_CHARS]


def _clean(text: str) -> str:
    text = _HTML_BLOCK.sub(" ", _HTML_INLINE.sub("", text))
    if "&" in text:
        text = html.unescape(text)
    text = _MARKDOWN.sub(lambda m: m.group(1) or m.group(2), display_text(text))
    return normalize_ws(text)


def _candidates(text: str) -> list[str]:
    """Sentences, CJK sentences and semicolon-separated clauses, capped in number and length."""
    out: list[str] = []
    for sentence in split_sentences(_clean(text)):
        for piece in _CJK_END.split(sentence):
            clauses = [c for c in _SEMICOLON.split(piece) if len(c.split()) >= 6]
            for c in clauses if len(clauses) > 1 else [piece]:
                words = c.split()
                if words:
                    out.append(" ".join(words[:_MAX_SENTENCE_WORDS]))
        if len(out) >= _MAX_SENTENCES:
            break
    return out[:_MAX_SENTENCES]


def _select(sentences: list[str]) -> str:
    rows = _features(sentences)
    scores = [sum(w * row[name] for name, w in _WEIGHTS) for row in rows]
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    return sentences[best]


def _stems(sentence: str) -> list[str]:
    # A 6-letter prefix is a cheap stand-in for stemming ("propose", "proposed", "proposal").
    return [w[:6] for w in _WORD.findall(sentence.lower()) if w not in _STOP]


class _Vocabulary:
    """Word statistics of one abstract that centrality features compare a sentence against."""

    def __init__(self, counts: list[Counter[str]]) -> None:
        self.n = len(counts)
        self.total: Counter[str] = Counter()
        self.df: Counter[str] = Counter()
        for c in counts:
            self.total.update(c)
            self.df.update(c.keys())
        self.recurring = sum(1 for k in self.df.values() if k >= 2) or 1
        self.total_sq = sum(v * v for v in self.total.values())


def _features(sentences: list[str]) -> list[dict[str, float]]:
    """Per-sentence feature values: cues, penalties, position, length and centrality."""
    n = len(sentences)
    counts = [Counter(_stems(s)) for s in sentences]
    vocab = _Vocabulary(counts)
    rows: list[dict[str, float]] = []
    seen_cue = seen_we = False
    for i, (s, c) in enumerate(zip(sentences, counts, strict=True)):
        low = s.lower()
        cue = bool(_PROPOSE.search(low) or _IN_THIS.search(low) or _HERE_WE.search(low))
        we = bool(_WE.search(low) or _THIS_PAPER.search(low))
        rows.append(
            {
                **_cue_features(s, low),
                "first_cue": float(cue and not seen_cue),
                "first_we": float(we and not seen_we),
                "before_cue": float(not seen_cue and not cue),
                "we": float(we),
                **_shape_features(s, i, n),
                **_centrality(c, vocab),
            }
        )
        seen_cue |= cue
        seen_we |= we
    return rows


def _cue_features(s: str, low: str) -> dict[str, float]:
    out = {name: 1.0 if pattern.search(low) else 0.0 for name, pattern in _PATTERN_FEATURES}
    out.update((name, 1.0 if pattern.search(s) else 0.0) for name, pattern in _CASED_FEATURES)
    return out


def _shape_features(s: str, index: int, n: int) -> dict[str, float]:
    n_words = len(s.split())
    return {
        "acronyms": min(len(_ACRONYM.findall(s)), 3) / 3,
        "kept_words": len(_compress(s).split()) / 20,
        "question": float(s.endswith("?")),
        "colon": float(":" in s),
        "digit": float(_DIGIT.search(s) is not None),
        "first": float(index == 0),
        "last": float(n > 2 and index == n - 1),
        "position": index / (n - 1) if n > 1 else 0.0,
        "log_words": math.log(n_words + 1),
        "short": float(n_words < 6),
        "length_gap": abs(n_words - 22) / 10,
    }


def _centrality(own: Counter[str], vocab: _Vocabulary) -> dict[str, float]:
    """How much of a sentence's vocabulary recurs in the rest of the abstract (three views)."""
    if vocab.n < 2 or not own:
        return {"centrality": 0.0, "cosine": 0.0, "coverage": 0.0, "content": len(own) / 20}
    total, df = vocab.total, vocab.df
    shared = sum(df[w] - 1 for w in own)
    dot = sum(v * (total[w] - v) for w, v in own.items())
    norm_own = math.sqrt(sum(v * v for v in own.values()))
    # |rest|^2 is |total|^2 minus what taking this sentence's counts away removes from each word.
    rest_sq = vocab.total_sq - sum(total[w] ** 2 - (total[w] - v) ** 2 for w, v in own.items())
    norm_rest = math.sqrt(rest_sq) or 1.0
    return {
        "centrality": shared / ((vocab.n - 1) * (len(own) + 4)),
        "cosine": dot / (norm_own * norm_rest),
        "coverage": sum(1 for w in own if df[w] >= 2) / vocab.recurring,
        "content": len(own) / 20,
    }


def _compress(sentence: str) -> str:
    """Drop parentheticals, example lists, boilerplate openers and leading background clauses."""
    s = _EXAMPLES.sub("", _DASH_ASIDE.sub(" ", _PAREN.sub("", sentence)))
    for _ in range(3):
        before = s
        s = _OPENERS.sub("", s)
        s = _OPENERS_NO_COMMA.sub("", s)
        s = _LEAD_CLAUSE.sub("", s)
        if s == before:
            break
    if len(s.split()) < _MIN_KEPT_WORDS:
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
        words = words[:TARGET_WORDS]
        # A hard cut must not leave the sentence hanging on "of", "the", "and", ...
        while len(words) > _MIN_KEPT_WORDS and words[-1].lower().strip(",;:") in _DANGLING:
            words.pop()
        s = " ".join(words)
    return s


def _finish(sentence: str) -> str:
    """Trim, cap the length in characters, capitalize, end with a period, keep one sentence."""
    s = normalize_ws(sentence).rstrip(" ,;:-\u2013\u2014")
    limit = _MAX_CJK_CHARS if _CJK.search(s) and s.count(" ") < 5 else _MAX_OUT_CHARS
    s = _truncate_chars(s, limit).rstrip(" ,;:")
    if not s:
        return s
    first = s.split(" ", 1)[0]
    if first.isalpha() and first.islower():
        s = s[0].upper() + s[1:]
    if s[-1] not in ".!?\u3002\uff01\uff1f":
        s += "\u3002" if _CJK.search(s[-1]) else "."
    return _one_sentence(s)


def _truncate_chars(s: str, limit: int) -> str:
    """At most `limit` characters, cut at a space, else anywhere but inside a number."""
    if len(s) <= limit:
        return s
    cut = s.rfind(" ", 0, limit + 1)
    if cut > 0:
        return s[:cut]
    cut = limit
    while cut > 0 and s[cut - 1] in _NUMBER_CHARS and s[cut] in _NUMBER_CHARS:
        cut -= 1
    if cut == 0:  # the text opens with one huge number: keep it whole rather than invent one
        cut = next((i for i, ch in enumerate(s) if ch not in _NUMBER_CHARS), len(s))
    return s[:cut]


def _one_sentence(s: str) -> str:
    parts = split_sentences(s)
    if len(parts) <= 1:
        return s
    # A split we could not avoid (e.g. "U.S. Army"): keep the longest part.
    return max(parts, key=lambda p: len(p.split()))


def _grounded(out: str, text: str) -> str:
    """Drop any token whose number is not in the abstract (only unescaping could add one)."""
    found = numbers_in(out)
    if not found:
        return out
    known = set(numbers_in(text))
    if all(n in known for n in found):
        return out
    kept = [t for t in out.split() if all(n in known for n in numbers_in(t))]
    return _finish(" ".join(kept))


def _fallback(text: str) -> str:
    """The first words of the raw text, for inputs with no usable sentence ("" if blank)."""
    s = _truncate_chars(" ".join(normalize_ws(text).split()[:TARGET_WORDS]), _MAX_OUT_CHARS)
    return _grounded(_one_sentence(s), text) if s else ""
