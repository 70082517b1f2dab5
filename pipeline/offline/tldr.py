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
from itertools import chain
from operator import countOf, mul

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


# Feature patterns match the lowercased sentence (faster than IGNORECASE), except the cased
# ones (_DEFINITION, _ANAPHOR, _ACRONYM); see _cue_features, which also uses faster exact
# stand-ins for some searches (the features are unchanged):
# - a "hint" is a pattern without its leading \b, which re scans much faster (its literal
#   first characters are known); every match of the pattern is a match of the hint, so the
#   pattern only needs searching from the hint's first match, if there is one;
# - a whole-word alternation `\b(?:w1|w2|...)\b` of \w-only words matches exactly when one of
#   the sentence's \w+ tokens is one of the words;
# - a pattern is only searched when the sentence holds a substring that every match holds.
def _hint(pattern: re.Pattern[str]) -> re.Pattern[str]:
    assert pattern.pattern.startswith(r"\b") and not pattern.flags & re.IGNORECASE
    return re.compile(pattern.pattern[2:])


def _hinted(pattern: re.Pattern[str], low: str, hint: re.Pattern[str]) -> float:
    m = hint.search(low)
    return 1.0 if m and pattern.search(low, m.start()) else 0.0


_TOKEN = re.compile(r"\w+")
_PROPOSE_HINT = _hint(_PROPOSE)
_WE_SHOW_HINT = _hint(_WE_SHOW)
_NOVEL_HINT = _hint(_NOVEL)
_CITATION_HINT = _hint(_CITATION)
# In every _PROPOSE match outside CJK, the verb (+ "s") is a whole token ("put forward": forward).
_PROPOSE_VERBS = frozenset(
    verb + s
    for verb in _wordset(
        "propose introduce present develop design devise formulate describe forward offer"
        " contribute construct build create establish define"
    )
    for s in ("", "s")
)
# In every _NOVEL match the adjective is a whole token.
_NOVEL_WORDS = _wordset("novel new simple general unified principled generic")
# _ARTIFACT: \b(?:framework|method|...)\b
_ARTIFACT_WORDS = _wordset("framework method approach algorithm model architecture technique")
_RESULTS_WORDS = _wordset(
    "experiment experiments experimental experimentally empirical empirically results"
    " outperform outperforms benchmark benchmarks dataset datasets accuracy baseline baselines"
)  # and evaluat\w+, left to _RESULTS
_BACKGROUND_WORDS = _wordset(
    "recent recently remain remains widely typically traditionally commonly often existing prior"
    " previous conventional current"
)
_NAMING_WORDS = _wordset("called dubbed named termed coined")  # and "we call/refer to"
_ACRONYM_HINT = re.compile(r"[A-Z][A-Za-z0-9]*[A-Z]")  # in every _ACRONYM match


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
# Every _LEAD_CLAUSE match holds one of these, so the (slow, lazy) clause search needs one.
_LEAD_CLAUSE_HINT = _rx(r",\s+(?:we|our)\b")
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
    out = _finish(_select(sentences))
    return _grounded(out, head) or _fallback(head)


def _head(text: str) -> str:
    """The first _MAX_CHARS characters, cut at whitespace so no token (or number) is split."""
    if len(text) <= _MAX_CHARS:
        return text
    cut = max(text.rfind(" ", 0, _MAX_CHARS), text.rfind("\n", 0, _MAX_CHARS))
    return text[: cut if cut > 0 else _MAX_CHARS]


def _clean(text: str) -> str:
    if "<" in text:
        text = _HTML_BLOCK.sub(" ", _HTML_INLINE.sub("", text))
    if "&" in text:
        text = html.unescape(text)
    text = display_text(text)
    if "*" in text or "_" in text:
        text = _MARKDOWN.sub(lambda m: m.group(1) or m.group(2), text)
    return normalize_ws(text)


_CJK_ENDS = "\u3002\uff01\uff1f\uff1b"


def _candidates(text: str) -> list[str]:
    """Sentences, CJK sentences and semicolon-separated clauses, capped in number and length."""
    out: list[str] = []
    text = _clean(text)
    cjk = any(ch in text for ch in _CJK_ENDS)
    for sentence in split_sentences(text):
        if not cjk and ";" not in sentence and sentence.count(" ") < _MAX_SENTENCE_WORDS:
            # Already single-spaced and stripped, and short enough: the general case below
            # would give it back unchanged.
            out.append(sentence)
        else:
            for piece in _CJK_END.split(sentence) if cjk else [sentence]:
                clauses = [c for c in _SEMICOLON.split(piece) if len(c.split()) >= 6]
                for c in clauses if len(clauses) > 1 else [piece]:
                    words = c.split()
                    if words:
                        out.append(" ".join(words[:_MAX_SENTENCE_WORDS]))
        if len(out) >= _MAX_SENTENCES:
            break
    return out[:_MAX_SENTENCES]


_WEIGHT_NAMES = tuple(name for name, _ in _WEIGHTS)
_WEIGHT_VALUES = tuple(w for _, w in _WEIGHTS)


def _select(sentences: list[str]) -> str:
    """The best-scoring sentence, already compressed."""
    compressed = [_compress(s) for s in sentences]
    rows = _features(sentences, [n_words for _, n_words in compressed])
    # Same products, summed in the same order, as sum(w * row[name] for name, w in _WEIGHTS).
    scores = [sum(map(mul, _WEIGHT_VALUES, map(row.__getitem__, _WEIGHT_NAMES))) for row in rows]
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    return compressed[best][0]


class _Vocabulary:
    """Word statistics of one abstract that centrality features compare a sentence against."""

    def __init__(self, stems: list[list[str]], counts: list[Counter[str]]) -> None:
        self.n = len(counts)
        # Counting iterables runs in C (Counter.update with a Counter is a Python loop).
        self.total = total = Counter(chain.from_iterable(stems))
        self.df = df = Counter(chain.from_iterable(counts))
        self.recurring = (len(df) - countOf(df.values(), 1)) or 1  # words in >= 2 sentences
        self.total_sq = sum(map(mul, total.values(), total.values()))


def _features(sentences: list[str], kept_words: list[int]) -> list[dict[str, float]]:
    """Per-sentence feature values: cues, penalties, position, length and centrality."""
    n = len(sentences)
    lows = [s.lower() for s in sentences]
    # A 6-letter prefix is a cheap stand-in for stemming ("propose", "proposed", "proposal").
    stems = [[w[:6] for w in _WORD.findall(low) if w not in _STOP] for low in lows]
    counts = [Counter(words) for words in stems]
    vocab = _Vocabulary(stems, counts)
    rows: list[dict[str, float]] = []
    seen_cue = seen_we = False
    for i, s in enumerate(sentences):
        low = lows[i]
        row = _cue_features(s, low)
        cue = bool(row["propose"] or row["in_this"] or row["here_we"])
        we = bool(row["we"])
        row["first_cue"] = float(cue and not seen_cue)
        row["first_we"] = float(we and not seen_we)
        row["before_cue"] = float(not seen_cue and not cue)
        _shape_features(row, s, kept_words[i], i, n)
        _centrality(row, counts[i], vocab)
        rows.append(row)
        seen_cue |= cue
        seen_we |= we
    return rows


def _cue_features(s: str, low: str) -> dict[str, float]:
    """Pattern features of the lowercased sentence, then the cased ones, and "we"."""
    words = set(_TOKEN.findall(low))
    propose = (
        not words.isdisjoint(_PROPOSE_VERBS) or "\u672c\u6587" in low or "\u63d0\u51fa" in low
    ) and _hinted(_PROPOSE, low, _PROPOSE_HINT)
    this_paper = ("this paper" in low or "this work" in low) and _THIS_PAPER.search(low)
    in_this = ("in this " in low or "with this " in low) and _IN_THIS.search(low)
    citation = ("et al" in low or "(" in low or "[" in low) and _hinted(
        _CITATION, low, _CITATION_HINT
    )
    results = not words.isdisjoint(_RESULTS_WORDS) or ("evaluat" in low and _RESULTS.search(low))
    background = not words.isdisjoint(_BACKGROUND_WORDS) or (
        ("has " in low or "have " in low or " still" in low or "state-of-the-art methods" in low)
        and _BACKGROUND.search(low)
    )
    naming = not words.isdisjoint(_NAMING_WORDS) or (
        ("we call" in low or "we refer to" in low) and _NAMING.search(low)
    )
    percent = ("%" in low or "x" in low or "\u00d7" in low) and _PERCENT.search(low)
    link = ("http" in low or "github" in low or "code " in low) and _LINK.search(low)
    math_ = ("$" in low or "\\" in low or "^" in low or "_" in low) and _MATH.search(low)
    return {
        "propose": 1.0 if propose else 0.0,
        "in_this": 1.0 if in_this else 0.0,
        "here_we": 1.0 if _HERE_WE.search(low) else 0.0,
        "we_show": _hinted(_WE_SHOW, low, _WE_SHOW_HINT) if "we" in words else 0.0,
        "this_paper": 1.0 if this_paper else 0.0,
        "background": 1.0 if background else 0.0,
        "follow_up": 1.0 if _FOLLOW_UP.search(low) else 0.0,
        "results": 1.0 if results else 0.0,
        "percent": 1.0 if percent else 0.0,
        "link": 1.0 if link else 0.0,
        "artifact": 0.0 if words.isdisjoint(_ARTIFACT_WORDS) else 1.0,
        "naming": 1.0 if naming else 0.0,
        "novel": 0.0 if words.isdisjoint(_NOVEL_WORDS) else _hinted(_NOVEL, low, _NOVEL_HINT),
        "citation": 1.0 if citation else 0.0,
        "math": 1.0 if math_ else 0.0,
        "definition": 1.0 if _DEFINITION.search(s) else 0.0,
        "anaphor": 1.0 if _ANAPHOR.search(s) else 0.0,
        # \b(?:we|our)\b or _THIS_PAPER
        "we": 1.0 if "we" in words or "our" in words or this_paper else 0.0,
    }


def _shape_features(row: dict[str, float], s: str, kept_words: int, index: int, n: int) -> None:
    n_words = s.count(" ") + 1  # candidates are single-spaced and stripped
    row["acronyms"] = min(len(_ACRONYM.findall(s)), 3) / 3 if _ACRONYM_HINT.search(s) else 0.0
    row["kept_words"] = kept_words / 20  # words of the compressed sentence
    row["question"] = float(s.endswith("?"))
    row["colon"] = float(":" in s)
    row["digit"] = float(_DIGIT.search(s) is not None)
    row["first"] = float(index == 0)
    row["last"] = float(n > 2 and index == n - 1)
    row["position"] = index / (n - 1) if n > 1 else 0.0
    row["log_words"] = math.log(n_words + 1)
    row["short"] = float(n_words < 6)
    row["length_gap"] = abs(n_words - 22) / 10


def _centrality(row: dict[str, float], own: Counter[str], vocab: _Vocabulary) -> None:
    """How much of a sentence's vocabulary recurs in the rest of the abstract (three views)."""
    row["content"] = len(own) / 20
    if vocab.n < 2 or not own:
        row["centrality"] = row["cosine"] = row["coverage"] = 0.0
        return
    total, df = vocab.total, vocab.df
    # All integer sums, so one loop gives exactly the values of separate sums.
    shared = dot = own_sq = removed = recurring = 0
    for w, v in own.items():
        k, t = df[w], total[w]
        shared += k - 1
        dot += v * (t - v)
        own_sq += v * v
        # |rest|^2 is |total|^2 minus what taking this sentence's counts away removes.
        removed += t * t - (t - v) * (t - v)
        recurring += k >= 2
    norm_rest = math.sqrt(vocab.total_sq - removed) or 1.0
    row["centrality"] = shared / ((vocab.n - 1) * (len(own) + 4))
    row["cosine"] = dot / (math.sqrt(own_sq) * norm_rest)
    row["coverage"] = recurring / vocab.recurring


def _compress(sentence: str) -> tuple[str, int]:
    """Drop parentheticals, example lists, boilerplate openers and leading background clauses;
    (the result, its number of words)."""
    s = sentence
    # Each substitution runs only when the text has the characters a match needs.
    if "(" in s:
        s = _PAREN.sub("", s)
    if "--" in s or "\u2013" in s or "\u2014" in s:
        s = _DASH_ASIDE.sub(" ", s)
    low = s.lower()
    if "e.g." in low or "i.e." in low or "such as" in low or "including" in low or not s.isascii():
        # (In ASCII text, lowercasing has none of re's IGNORECASE case-folding quirks.)
        s = _EXAMPLES.sub("", s)
    for _ in range(3):
        before = s
        s = _OPENERS.sub("", s)
        s = _OPENERS_NO_COMMA.sub("", s)
        if _LEAD_CLAUSE_HINT.search(s):
            s = _LEAD_CLAUSE.sub("", s)
        if s == before:
            break
    if len(s.split()) < _MIN_KEPT_WORDS:
        s = sentence
    return _fit(s)


def _fit(sentence: str) -> tuple[str, int]:
    """Cut trailing detail at clause boundaries until the sentence fits the word budget;
    (the result, its number of words)."""
    s = sentence
    words = s.split()
    while len(words) > TARGET_WORDS:
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
    return s, len(words)


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
