"""Stand-alone rules for the offline TL;DR: markup, citations, anaphora, cuts, lists, questions.

A TL;DR is read without its abstract, so the sentence it copies must not lean on what the
abstract said before it ("This positions our finding as ...", "We study such activations"),
must not stop before an object ("... to compress.", "... and then map."), must not open a
list it does not finish ("the following properties: 1."), and must not carry raw LaTeX or
citations. The normalizers here rewrite what can be rewritten (LaTeX to text, citations and
"such" dropped); the checks flag what cannot, and `pipeline.offline.tldr` then prefers
another candidate. All pure functions over strings, stdlib only.
"""

from __future__ import annotations

import re

from pipeline.offline.tldr_words import WORDS

# --- LaTeX ------------------------------------------------------------------------------------

# Font and text commands keep their argument: \textit{x} -> x, $\mathcal{O}$ -> O.
_TEXT_CMD = re.compile(
    r"\\(?:text(?:it|bf|rm|tt|sc|sf|sl|up|normal)?|emph|math(?:rm|bf|it|cal|bb|sf|tt|frak|scr)"
    r"|boldsymbol|bm|operatorname|underline|overline|hat|tilde|bar|vec|widehat|widetilde)"
    r"\s*\{([^{}]{0,80})\}"
)
# \alpha -> α, \Alpha -> Α, \times -> ×
_SYMBOLS: dict[str, str] = {
    **WORDS.greek_letters,
    **{name.capitalize(): ch.upper() for name, ch in WORDS.greek_letters.items()},
    **WORDS.latex_symbols,
}
_ESCAPES = {"%": "%", "&": "&", "_": "_", "#": "#", "$": "$", ",": " ", ";": " ", " ": " "}
_COMMAND = re.compile(r"\\([A-Za-z]+|[%&_#$,; ])")
_INLINE_MATH = re.compile(r"\$\$?([^$\n]{1,120}?)\$\$?")
_CITE_CMD = re.compile(r"\s*\\(?:cite[tp]?|citep|citet|ref|eqref|label)\s*\{[^{}]*\}")
_SCRIPT = re.compile(r"([_^])\s*(?:\{([^{}]{0,12})\}|(\\?[A-Za-z0-9]))")
_BRACES = re.compile(r"[{}]")


def _command(m: re.Match[str]) -> str:
    name = m.group(1)
    if name in _ESCAPES:
        return _ESCAPES[name]
    return _SYMBOLS.get(name, name)


def _script(m: re.Match[str]) -> str:
    body = m.group(2) if m.group(2) is not None else m.group(3)
    if m.group(1) == "_":
        return body  # x_i -> xi, L_0 -> L0 (glued digits are part of a name, never a number)
    return "^" + body  # 10^{-3} -> 10^-3, n^2 -> n^2


def latex_to_text(text: str) -> str:
    """Inline LaTeX rendered as plain text: `$L_0$` -> `L0`, `\\textit{x}` -> `x`,
    `$\\alpha$-stable` -> `α-stable`, `\\cite{..}` dropped. Text without `$` or `\\` is
    returned unchanged."""
    if "\\" not in text and "$" not in text and "{" not in text:
        return text
    if "\\" in text:
        text = _CITE_CMD.sub("", text)
        for _ in range(2):  # nested \textbf{\emph{x}}
            text = _TEXT_CMD.sub(r"\1", text)
    if "$" in text:
        text = _INLINE_MATH.sub(lambda m: _math(m.group(1)), text)
    if "\\" in text:
        text = _COMMAND.sub(_command, text)
    if "{" in text:  # scripts written outside $...$: "O(ε^{-n})"
        text = _SCRIPT.sub(_script, text)
    return text


def _math(body: str) -> str:
    body = _TEXT_CMD.sub(r"\1", body)
    body = _COMMAND.sub(_command, body)
    body = _SCRIPT.sub(_script, body)
    return " ".join(_BRACES.sub("", body).split())


def has_raw_latex(text: str) -> bool:
    return "$" in text or "\\" in text or "{" in text or "}" in text


# --- citations --------------------------------------------------------------------------------

# "[12]", "[3, 7]", "[12-14]"; parentheticals that hold a year next to a name ("(Smith et al.,
# 2020)", "(Doe and Roe, 2019; Lee 2021)"). Narrative citations ("Smith et al. (2020) show")
# cannot be dropped without breaking the sentence: `has_citation` flags them.
_NUMERIC_CITE = re.compile(r"\s*\[\d{1,3}(?:\s*[,\u2013-]\s*\d{1,3})*\]")
_PAREN_CITE = re.compile(
    r"\s*[(\[](?=[^()\[\]]{0,200}?\b(?:19|20)\d\d[a-z]?\b)(?=[^()\[\]]*[A-Z])"
    r"[^()\[\]]{0,200}[)\]]"
)
_NARRATIVE_CITE = re.compile(r"\bet al\b|\b[A-Z][a-z]+ (?:and [A-Z][a-z]+ )?\((?:19|20)\d\d")


def strip_citations(text: str) -> str:
    if "[" in text:
        text = _NUMERIC_CITE.sub("", text)
    if ("(" in text or "[" in text) and ("19" in text or "20" in text):
        text = _PAREN_CITE.sub("", text)
    return text


def has_citation(text: str) -> bool:
    return ("et al" in text or "(" in text) and _NARRATIVE_CITE.search(text) is not None


# --- anaphora ---------------------------------------------------------------------------------

# A sentence that opens by pointing back at the abstract cannot stand alone.
_START_ANAPHOR = re.compile(
    r"^(?:(?:This|These|Those|That|Such|It|Its|They|Their|Them|Both|Each|Neither|Either)\b"
    r"|The (?:former|latter|above|aforementioned|same|resulting|obtained)\b"
    r"|(?:Hence|Thus|Therefore|Consequently|Accordingly|Then|Doing so|By doing so|In doing so"
    r"|In this way|As such|As a result|Building on (?:this|these|that))\b"
    r"|(?:Instead|Nevertheless|Nonetheless|Besides|Otherwise|Still|Again)\b)"
)
_NOT_ANAPHOR = re.compile(
    r"^(?:This|These|That) (?:(?:[\w-]+ ){0,2}(?:paper|work|study|article|note|thesis|report"
    r"|manuscript|submission|chapter|research|project|dissertation|abstract|contribution"
    r"|extended abstract)s?)\b"
    r"|^It is (?:well[- ]known|known|widely|often|commonly|generally|common|possible|shown"
    r"|hard|difficult|challenging|important|unclear|not|crucial|essential|natural)\b"
)
# "such <noun>" (not "such as", "such that") inside the sentence: drop the "such".
_SUCH = re.compile(r"\b[Ss]uch (?!as\b|that\b|a way\b|cases\b)(?=[a-z])")


def starts_with_anaphor(text: str) -> bool:
    return _START_ANAPHOR.match(text) is not None and _NOT_ANAPHOR.match(text) is None


# An item of a list that came before: "(3) Pooling layers are ...", "2) the model ...".
_ENUMERATOR_START = re.compile(r"\(?(?:\d{1,2}|[ivx]{1,4}|[a-h])\)\s", re.IGNORECASE)


def starts_with_enumerator(text: str) -> bool:
    return _ENUMERATOR_START.match(text) is not None


# A short aside that only points back: "we show that even for such activation, deep ...".
_SUCH_ASIDE = re.compile(
    r"\b(that|[Ww]e \w+)\s+(?:even |only |also )?(?:for|in|on|with|under) (?:such|these|this)"
    r" [\w-]+(?: [\w-]+)?,\s+"
)


def drop_such(text: str) -> str:
    """Drop the anaphoric "such": "We study such obfuscated activations" -> "We study
    obfuscated activations", and a short aside with it goes whole ("we show that even for such
    activation, deep networks ..." -> "we show that deep networks ...")."""
    if "uch " not in text:
        return text
    if "," in text:
        text = _SUCH_ASIDE.sub(r"\1 ", text)
    return _SUCH.sub("", text)


_INNER_NOUN = re.compile(
    r"\b(?:this|these|those|such|the above|the aforementioned)"
    r" (?!paper|work|study|article|note|thesis|manuscript|submission|chapter|research|as\b"
    r"|that\b|way\b|end\b|case\b|sense\b)([a-z][a-z-]*)"
    r"|\bboth (?!(?:[\w-]+ ){0,3}(?:and|&)\b)([a-z][a-z-]*)"
)


def _first_unresolved(low: str) -> int:
    """Where the first _INNER_NOUN match of a lowercased text whose noun was not named before
    starts (-1 if none). Every match holds one of the phrases tested first."""
    if not (
        "this " in low
        or "these " in low
        or "those " in low
        or "such " in low
        or "both " in low
        or "the above " in low
        or "the aforementioned " in low
    ):
        return -1
    for m in _INNER_NOUN.finditer(low):
        if (m.group(1) or m.group(2))[:5] not in low[: m.start()]:
            return m.start()
    return -1


def unresolved_anaphor(text: str) -> bool:
    """ "We reduce this cost by ...", "bypass these limitations": "this/these <noun>" whose
    noun the sentence has not named before."""
    if "th" not in text and "such" not in text:
        return False
    return _first_unresolved(text.lower()) >= 0


_URL = re.compile(r"https?://|\bwww\.|\bgithub\.com\b", re.IGNORECASE)


def has_url(text: str) -> bool:
    return ("http" in text or "www" in text or "github" in text) and _URL.search(text) is not None


# "We address these issues by proposing X" -> "We propose X"; "We therefore propose" -> "We
# propose".
_GERUNDS = WORDS.gerunds
_ADDRESS_BY = re.compile(
    r"^[Ww]e (?:\w+ly )?(?:address|tackle|overcome|solve|alleviate|mitigate|fix|remedy|handle|resolve"
    r"|circumvent|bypass|approach|attack|avoid|study|investigate|explore)"
    r" (?:this|these|that|those|such|the above|both)(?: [\w-]+){1,3}?"
    r"(?: in this (?:paper|work))?,? by (" + "|".join(_GERUNDS) + r")\b"
)
_WE_ADVERB = re.compile(
    r"^([Ww]e|[Oo]ur \w+) (?:therefore|thus|hence|then|also|further|additionally|finally|now|here"
    r"|first|next|instead|consequently|accordingly|subsequently|moreover|furthermore)\s+"
)


def resolve_opening(text: str) -> str:
    if text[:3] in ("We ", "we ") or text[:4] in ("Our ", "our "):
        text = _WE_ADVERB.sub(r"\1 ", text)
        m = _ADDRESS_BY.match(text)
        if m:
            text = text[:2] + " " + _GERUNDS[m.group(1)] + text[m.end() :]
    return text


# "In contrast to X, it preserves ...": a pronoun subject whose antecedent came before.
_PRONOUN_SUBJECT = re.compile(
    r"^(?:(?:in|on|for|to|by|with|unlike|compared|while|although|though|when|as|since|because"
    r"|if|after|before|despite|instead|rather|beyond|besides|apart|like|given|based|using)\b"
    r"[^,;:]{0,200},\s+)?(?:it|they|this|these|its|their)\s",
    re.I,
)


def pronoun_subject(text: str) -> bool:
    m = _PRONOUN_SUBJECT.match(text)
    return m is not None and _NOT_ANAPHOR.match(text) is None and not text.startswith("It is")


def anaphor_start(text: str) -> int:
    """Where the first unresolved "this/these <noun>" starts (-1 if none)."""
    return _first_unresolved(text.lower())


# "Our experimental results show that the proposed model improves ...": an unnamed method.
_VAGUE = re.compile(
    r"\b(?:the proposed|our proposed|our|the resulting|the new|the present) (?:[\w-]+ )?"
    r"(?:method|model|approach|framework|algorithm|technique|system|architecture|network"
    r"|scheme|strategy|procedure|formulation)s?\b",
    re.IGNORECASE,
)
_INTRODUCES = re.compile(
    r"\b(?:propose|introduce|present|develop|design|devise|describe|call|called|named|dubbed)",
    re.IGNORECASE,
)


# For lowercased ASCII text (where IGNORECASE adds nothing and lowercasing moves nothing):
# the same patterns, case-sensitive, and their "hints" (without the leading \b, which re
# scans much faster as their first characters are known; a pattern only needs searching from
# its hint's first match).
assert (
    _VAGUE.pattern == _VAGUE.pattern.lower() and _INTRODUCES.pattern == _INTRODUCES.pattern.lower()
)
_VAGUE_LOW = re.compile(_VAGUE.pattern)
_VAGUE_HINT = re.compile(_VAGUE.pattern.removeprefix(r"\b"))
_INTRODUCES_LOW = re.compile(_INTRODUCES.pattern)
_INTRODUCES_HINT = re.compile(_INTRODUCES.pattern.removeprefix(r"\b"))


def _hinted(pattern: re.Pattern[str], hint: re.Pattern[str], low: str) -> bool:
    m = hint.search(low)
    return m is not None and pattern.search(low, m.start()) is not None


def vague_reference(text: str) -> bool:
    low = text.lower()
    if "our " not in low and "the " not in low:  # every _VAGUE match holds one of them
        return False
    if text.isascii():
        return _hinted(_VAGUE_LOW, _VAGUE_HINT, low) and not _hinted(
            _INTRODUCES_LOW, _INTRODUCES_HINT, low
        )
    return _VAGUE.search(text) is not None and _INTRODUCES.search(text) is None


# --- cuts and lists ---------------------------------------------------------------------------

# A sentence may not end on a function word, or on a verb that is missing its object.
DANGLING = WORDS.dangling
# Verbs that take an object: after "to", "then", "and", "can" ... at the end they were cut.
_OBJECT_VERBS = WORDS.object_verbs
# "We show that it is possible." / "... is equivalent.": the complement was cut.
_NEEDS_COMPLEMENT = WORDS.needs_complement
_TOUGH = WORDS.tough  # "... fast to compute." is whole
_MODAL_BEFORE = WORDS.modal_before
_TRAILING_ABBREV = re.compile(r"(?:\b(?:etc|e\.g|i\.e|cf|vs|al)\.?|[,;:(\u2013\u2014-])$")


def ends_unfinished(text: str) -> bool:
    """The sentence stops before the object of a verb, on a function word, or on "etc."."""
    body = text.rstrip(" .!?")
    if _TRAILING_ABBREV.search(body[-8:]):  # (it matches at the end; the tail suffices)
        return True
    words = body.rsplit(None, 3)  # (only the last three words matter)
    if not words:
        return True
    last = words[-1].lower().strip("\"'")
    if last in DANGLING or last in _NEEDS_COMPLEMENT:
        return True
    if len(words) >= 2 and last in _OBJECT_VERBS:
        # "... fast to compute." is whole: the subject is the verb's object.
        if len(words) >= 3 and words[-3].lower() in _TOUGH:
            return False
        return words[-2].lower().strip(",") in _MODAL_BEFORE
    return False


# An enumeration opened but not carried on: "1." / "1)" / "(i)" / "(a)" without its second item.
_ENUM = re.compile(
    r"(?:^|[\s:(])(?:\(?(1|i|a)\)|(1)\.(?=\s|$)|\((1|i|a)\))",
    re.IGNORECASE,
)
_ENUM_NEXT = {"1": re.compile(r"(?:\(|\s)2[.)]"), "i": re.compile(r"(?:\(|\s)ii\)", re.I)}
_ENUM_NEXT["a"] = re.compile(r"(?:\(|\s)b\)", re.I)
_FOLLOWING = re.compile(r"\b(?:the following|as follows|following (?:[\w-]+ )?\w+)\s*[:.]?$", re.I)


# "two complementary components: X" with one item (the other went with a parenthetical).
_COUNTED_LIST = re.compile(
    r"\b(?:two|three|four|five|six|several|multiple|various|2|3|4|5)(?: [\w-]+){0,3}:\s+([^:]*)$",
    re.IGNORECASE,
)


def unfinished_list(text: str) -> bool:
    body = text.rstrip(" .")
    if body.endswith(":") or ("ollow" in body and _FOLLOWING.search(body)):
        return True
    if ":" in body:
        m = _COUNTED_LIST.search(body)
        if m and not re.search(r",| and | or ", m.group(1)):
            return True
    if "1" not in text and ")" not in text:
        return False
    for m in _ENUM.finditer(text):
        key = (m.group(1) or m.group(2) or m.group(3)).lower()
        if not _ENUM_NEXT[key].search(text, m.end()):
            return True
    return False


def cut_before_list(text: str) -> str | None:
    """The clause before a colon that opens an unfinished list, if it can stand alone."""
    colon = text.find(":")
    if colon < 0:
        return None
    head = text[:colon].rstrip()
    head = re.sub(r"\s*\b(?:the following|as follows)\s*$", "", head, flags=re.I)
    if len(head.split()) < 6 or ends_unfinished(head) or _FOLLOWING.search(head):
        return None
    return head


# --- questions --------------------------------------------------------------------------------

_QUESTION = re.compile(
    r"\?|\b[Ww]e ask\b|\b(?:ask|asks|asked) (?:whether|if|how|why|what|when)\b"
    r"|\b(?:answer|address|raise|raises|study|investigate|explore"
    r"|pose|consider) (?:the |a |this )?(?:(?:following|central|natural|fundamental|key|open)"
    r" )?question\b|^(?:How|What|Why|When|Which|Who|Can|Could|Does|Do|Is|Are|Should|Will|Would)\b"
)


def is_question(text: str) -> bool:
    # Every match holds "?", "question" or an "ask" after a non-word character (so not inside
    # one of the many "task"s: every "ask" after a "t" is in one, and no two of them overlap),
    # or opens with one of the capitals below.
    if (
        "?" in text
        or "question" in text
        or ("ask" in text and text.count("ask") > text.count("task"))
    ):
        return _QUESTION.search(text) is not None
    return _QUESTION_OPENING.match(text) is not None


_QUESTION_OPENING = re.compile(
    r"(?:How|What|Why|When|Which|Who|Can|Could|Does|Do|Is|Are|Should|Will|Would)\b"
)
