"""Offline claims: the results an abstract reports, found with number and comparison heuristics.

Deterministic and stdlib-only; the definition followed is prompts/claimed_result.md with the
decisions C1-C15 of tests/data/GOLD.md. Sentences before the paper first speaks of its own
work, background about others and questions hold no results. In the rest:

- quantitative claims (`claim_numbers`): every number that measures an outcome, with its unit
  (%, pp, x, bpc, MOS, ms, ...), one claim per number of a list, the upper end of a range, B
  of "from A to B"; setting values and a baseline's own numbers are left out. Its metric is
  named by `claim_metric`;
- qualitative claims (`claim_qualitative`): comparisons and evaluative outcomes without a
  number, one per clause with its own predicate.

Evidence is the tight clause (`claim_text`), cut from the sentence as written, so it is
verbatim; comparison, dataset and statement come from `claim_fields`. The claim dicts have
the fields of `pipeline.schemas.Claim` except `span`.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from pipeline.offline.claim_fields import (
    comparison_in,
    dataset_near,
    item_dataset,
    sentence_comparison,
    statement_of,
)
from pipeline.offline.claim_metric import quantitative_metric
from pipeline.offline.claim_numbers import Hit, cue_start, math_view, scan_numbers
from pipeline.offline.claim_qualitative import qualitative_claims
from pipeline.offline.claim_text import (
    FIRST_PERSON,
    LEADING_JUNK,
    Caseless,
    after_lead_in,
    background_before,
    cap_span,
    clause_spans,
    contains_any,
    extend_short,
    item_span,
    narrow_between_hits,
    paren_group,
    segment_at,
    strip_span,
    too_short,
)
from pipeline.text import split_sentences

# Abstracts are ~2 kB; anything far beyond that is not an abstract, so only its head is read.
_MAX_CHARS = 20_000

_MIN_EVIDENCE_CHARS = 8  # what the Claim schema accepts as evidence

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_DIGIT = re.compile(r"\d")

_CJK_END = re.compile(r"[。！？；]")

_CJK_SPLIT = re.compile(r"(?<=[。！？；])")

_PRIOR_SUBJECT = re.compile(
    r"^(?:\w+,\s+)?(?:(?:while|although|whereas|though)\s+)?(?:the\s+)?(?:prior|previous|existing"
    r"|earlier|past|recent|traditional|conventional|current|standard)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:work|works|studies|study|research|methods|approaches|literature|techniques|models"
    r"|systems|benchmarks|defenses)\b",
    _I,
)

_OTHERS_WORK_WORDS = ("proposed", "introduced by", "developed by")
_OWN_WORK = Caseless(
    r"\b(?:we|our|ours|this\s+(?:paper|work|study|article)|in\s+this\s+(?:paper|work)|here,?\s+we)\b",
    needs=("we", "our", "this"),
)

_OTHERS_WORK = Caseless(
    r"\b(?:recent(?:ly)?\s+proposed|proposed\s+by|introduced\s+by|developed\s+by)\b"
)

_RELATIVE = re.compile(r"\s*(?:which|who|that|whose)\b", _I)

_PRIOR_MENTION = re.compile(r"\b(?:prior|previous|existing|earlier|et al)\b", _I)

_METHOD_SENTENCE = Caseless(
    r"\b(?:we|this (?:paper|work|study))\s+(?:\w+ly\s+|then\s+|also\s+|further\s+|first\s+)?"
    r"(?:propose|introduce|present|develop|design|describe|formalize|define|construct|build"
    r"|provide|offer|leverage|adapt|use|train|fine-tune|finetune|sample|collect|curate|release"
    r"|mask|set|select|apply|adopt|employ|create|generate|annotate|prune|freeze|consider|study"
    r"|investigate|benchmark|evaluate|test|analy[sz]e|scale|extend|derive|formulate|model)\b",
    needs=("we", "this"),
)

_PASSIVE_METHOD = Caseless(
    r"\b(?:is|are|was|were)\s+(?:\w+ly\s+)?(?:trained|evaluated|tested)\s+on\b",
    needs=("trained", "evaluated", "tested"),
)

_SETUP_SENTENCE = Caseless(
    r"\b(?:contains?|consists?\s+of|comprises?|comprising|covering|covers|includes?|including"
    r"|spanning|spans|composed\s+of|collected|curated|annotated)\b"
)

_RESULT_CUE = Caseless(
    r"\b(?:achiev|improv|outperform|surpass|exceed|gain|boost|increas|decreas|reduc|lower"
    r"|higher|faster|speed|accura|recall|precision|error|score|success|agreement|better|worse"
    r"|drop|recover|retain|match|reach|attain|yield|deliver|beat|up to|more than|less than"
    r"|relative|compared|versus|show|demonstrat|find|found|reveal|observ|cases)"
)

_BEAT_BY = re.compile(
    r"\b(?:outperform\w*|surpass\w*|beat\w*|exceed\w*|improv\w*\s+(?:on|over))\b[^,;]*\bby\s+"
    r"(?:about\s+|around\s+|over\s+|more\s+than\s+|up\s+to\s+|nearly\s+|[~∼≈]\s?)?$",
    _I,
)
# from a margin to the next result: "6.12%, achieving a classification accuracy of"
_THEN_REACHING = re.compile(
    r"[^,;]*,\s*(?:thus\s+|and\s+)?(?:achiev|reach|attain|obtain|yield)\w*\s+(?:an?\s+|the\s+)?"
    r"[^,;]*$",
    _I,
)
_SUMMARY_OPENER = re.compile(
    r"^(?:overall|together|altogether|in summary|to summarize|taken together|in conclusion"
    r"|our (?:results|findings|work|study|paper|analysis)|these (?:results|findings))\b",
    _I,
)


def extract_claims(text: str, max_claims: int = 12) -> list[dict[str, Any]]:
    """Claimed results of an abstract as Claim-shaped dicts (no `span`), at most `max_claims`
    (the stage passes its schema's cap); [] when it reports none."""
    if not isinstance(text, str):
        return []
    # Cut at a space: a word cut in half ("on Ima") would be a name the abstract lacks.
    sentences = _sentences(text if len(text) <= _MAX_CHARS else text[:_MAX_CHARS].rsplit(" ", 1)[0])
    found: list[tuple[int, int, dict[str, Any]]] = []
    first_own = next((i for i, s in enumerate(sentences) if _OWN_WORK.found(s)), 0)
    for idx, sentence in enumerate(sentences):
        if idx < first_own or _is_background_sentence(sentence, idx, len(sentences)):
            continue  # context comes before the paper first speaks of its own work
        view = math_view(sentence)  # same offsets; simple LaTeX numbers made plain
        quantitative = _quantitative(view)
        taken = [claim["_span"] for _pos, claim in quantitative]
        found.extend((idx, pos, _grounded(claim, sentence, view)) for pos, claim in quantitative)
        if not quantitative and found and _SUMMARY_OPENER.search(sentence):
            continue  # a closing restatement of results already extracted
        for claim in qualitative_claims(view, taken):
            pos = claim["_span"][0]
            found.append((idx, pos, _grounded(claim, sentence, view)))
    return _select(found, max_claims)


def _grounded(claim: dict[str, Any], sentence: str, view: str) -> dict[str, Any]:
    """The claim with its evidence cut from the sentence as written (not its math view),
    widened to whole math spans ('$\\sim$36\\%', not 'm$36\\%')."""
    a, b = claim.pop("_span")
    if view is not sentence:
        while a > 0 and view[a - 1] != sentence[a - 1]:
            a -= 1
        if a > 0 and view[a] != sentence[a] and sentence[a - 1] == "$":
            a -= 1
        while b < len(sentence) and view[b] != sentence[b]:
            b += 1
    claim["evidence"] = sentence[a:b]
    return claim


def _select(found: list[tuple[int, int, dict[str, Any]]], limit: int) -> list[dict[str, Any]]:
    """Drop duplicates; keep at most `limit`, numbers first, then restore text order."""
    unique: list[tuple[int, int, dict[str, Any]]] = []
    seen: set[tuple[str | None, str]] = set()
    for item in found:
        key = (item[2]["value"], item[2]["evidence"])
        if key not in seen:
            seen.add(key)
            unique.append(item)
    ranked = sorted(unique, key=lambda it: (it[2]["kind"] != "quantitative", it[0], it[1]))
    return [claim for _, _, claim in sorted(ranked[:limit], key=lambda it: (it[0], it[1]))]


def _sentences(text: str) -> list[str]:
    if text.isascii() or not _CJK_END.search(text):
        return split_sentences(text)
    out: list[str] = []
    for sentence in split_sentences(text):
        if _CJK_END.search(sentence):  # split_sentences is Latin-only
            out.extend(p.strip() for p in _CJK_SPLIT.split(sentence) if p.strip())
        else:
            out.append(sentence)
    return out


def _is_background_sentence(sentence: str, idx: int, total: int) -> bool:
    if sentence.endswith("?"):
        return True
    if idx == 0 and total >= 3 and not FIRST_PERSON.found(sentence):
        return True  # an abstract opens with context, not results
    low = sentence.lower()
    others = contains_any(low, _OTHERS_WORK_WORDS)
    if others and _OTHERS_WORK.found(sentence) and not FIRST_PERSON.found(sentence):
        return True  # "..., a recently proposed method, can compress ... (0.1% of ...)"
    return bool(_PRIOR_SUBJECT.search(sentence))


def _about_others(sentence: str, pos: int) -> bool:
    """Background before `pos`, or a number inside a relative clause about the prior work named
    before it ('..., which need 10x')."""
    if background_before(sentence, pos):
        return True
    clause = sentence.rfind(",", 0, pos)
    if clause <= 0 or not _RELATIVE.match(sentence, clause + 1):
        return False
    prior = None
    for mention in _PRIOR_MENTION.finditer(sentence, 0, clause):
        prior = mention
    # "Our approach improves on previous approaches, including LipNet, which are only capable
    # of 89.8%": no first person between the prior work named and the number
    return prior is not None and not FIRST_PERSON.found(sentence, prior.end(), pos)


def _quantitative(sentence: str) -> list[tuple[int, dict[str, Any]]]:
    if not _has_digit(sentence):
        return []
    hits = [h for h in scan_numbers(sentence) if not _about_others(sentence, h.start)]
    if not hits or _describes_method(sentence, hits[0]):
        return []
    segments = clause_spans(sentence)
    out: list[tuple[int, dict[str, Any]]] = []
    previous: dict[str, Any] | None = None
    previous_hit: Hit | None = None
    for hit in hits:
        same_list = previous_hit is not None and previous_hit.group == hit.group >= 0
        claim = _quantitative_claim(sentence, hit, hits, segments, previous, same_list)
        if claim is not None:
            out.append((hit.start, claim))
            previous, previous_hit = claim, hit
    _borrow_next_metric(sentence, out)
    return out


def _borrow_next_metric(s: str, out: list[tuple[int, dict[str, Any]]]) -> None:
    """'beats the SVM by 6.12%, achieving a classification accuracy of 96.32%': a margin
    whose metric is unnamed is in the metric of the result that follows it."""
    for (pos, claim), (next_pos, following) in itertools.pairwise(out):
        same_scale = claim["unit"] == following["unit"] or claim["unit"] in {"points", "pp"}
        if (
            claim["metric"] is None
            and following["metric"]
            and same_scale
            and _BEAT_BY.search(s, max(0, pos - 80), pos)
            and _THEN_REACHING.match(s[:next_pos], pos)
        ):
            claim["metric"] = following["metric"]


def _has_digit(s: str) -> bool:
    if s.isascii():
        return contains_any(s, "0123456789")  # faster than the regex
    return _DIGIT.search(s) is not None


def _describes_method(sentence: str, first: Hit) -> bool:
    """A method or setup sentence ('we mask 15% of tokens') with no result cue near its numbers."""
    if _METHOD_SENTENCE.found(sentence) or _PASSIVE_METHOD.found(sentence, 0, first.start):
        return not _RESULT_CUE.found(sentence, cue_start(sentence, first.start))
    return _SETUP_SENTENCE.found(sentence) and not _RESULT_CUE.found(sentence)


def _quantitative_claim(
    s: str,
    hit: Hit,
    hits: list[Hit],
    segments: list[tuple[int, int]],
    previous: dict[str, Any] | None,
    same_list: bool = False,
) -> dict[str, Any] | None:
    span, head = _evidence_span(s, hit, hits, segments)
    if span[1] - span[0] < _MIN_EVIDENCE_CHARS:
        span = _widen_item(s, span, hit, hits)
    evidence = s[span[0] : span[1]]
    if len(evidence) < _MIN_EVIDENCE_CHARS:
        return None
    local = s[hit.end : span[1]]
    item = head is not None
    comparison = comparison_in(local) or comparison_in(s[span[0] : hit.start])
    if comparison is None and item and previous is not None:
        comparison = previous["comparison"]  # list items share the lead result's baseline
    if comparison is None:
        comparison = sentence_comparison(s)
    return {
        "statement": statement_of(evidence, head),
        "kind": "quantitative",
        "metric": quantitative_metric(
            s,
            hit,
            segment_at(segments, hit.num_start)[0],
            previous["metric"] if previous else None,
            _list_tail(hit, hits),
            item or _after_colon(s, segment_at(segments, hit.num_start)[0]),
            previous["metric"] if previous and same_list else None,
        ),
        "value": hit.value,
        "unit": hit.unit,
        "dataset": (item and item_dataset(s, hit, span)) or dataset_near(s, hit.end, span),
        "comparison": comparison,
        "evidence": evidence,
        "_span": span,
    }


def _evidence_span(
    s: str, hit: Hit, hits: list[Hit], segments: list[tuple[int, int]]
) -> tuple[tuple[int, int], str | None]:
    """The tight clause carrying a number, and the list head when it is one item of a list."""
    group = paren_group(s, hit.num_start)
    if group is not None and sum(group[0] <= h.num_start < group[1] for h in hits) >= 2:
        item = item_span(s, group, hit)
        seg = segment_at(segments, hit.num_start)
        head_start = max(seg[0], s.rfind(")", seg[0], group[0]) + 1)
        lead = LEADING_JUNK.match(s, head_start)
        return item, s[lead.end() if lead else head_start : group[0] - 1]
    seg = segment_at(segments, hit.num_start)
    raw, b = narrow_between_hits(s, seg, hit, hits)
    lead = LEADING_JUNK.match(s, raw)
    a = lead.end() if lead and lead.end() <= hit.start else raw
    if a == hit.start:
        head = _list_head(s, segments, segments.index(seg), hits)
        if head is not None:
            return cap_span(s, (a, b), hit), head
    if too_short(s[raw:b]) and len(hits) == 1:
        a, b = strip_span(s, 0, len(s))  # "..., with up to 99% accuracy": the sentence says what
    else:
        a, b = extend_short(s, (a, b), segments)
    a = after_lead_in(s, a, hit.start)
    return cap_span(s, (a, b), hit), None


def _after_colon(s: str, start: int) -> bool:
    """Whether the clause starting at `start` follows a colon ('perplexities: 57.3 on PTB')."""
    return s[:start].rstrip().endswith(":")


def _list_tail(hit: Hit, hits: list[Hit]) -> Hit | None:
    """The last item of the list `hit` is in (None when it is in none)."""
    if hit.group < 0:
        return None
    return [h for h in hits if h.group == hit.group][-1]


def _widen_item(s: str, span: tuple[int, int], hit: Hit, hits: list[Hit]) -> tuple[int, int]:
    """A list item too short to stand as evidence ('18.2%') with its left neighbour item
    ('14.4%, 18.2%'), or its right one when it comes first or that is still too short."""
    i = hits.index(hit)
    if i > 0:
        span = strip_span(s, hits[i - 1].num_start, span[1])
        if span[1] - span[0] >= _MIN_EVIDENCE_CHARS or i + 1 == len(hits):
            return span  # '8%, 15%, and 6%': '8%, 15%' is still too short, take '6%' too
    if i + 1 < len(hits):
        return strip_span(s, span[0], hits[i + 1].end)
    return span


def _list_head(s: str, segments: list[tuple[int, int]], index: int, hits: list[Hit]) -> str | None:
    """For '19.9% on X, 4.5% on Y, and 2.1% on Z': the text before the first item's number."""
    for a, b in reversed(segments[:index]):
        inside = [h for h in hits if a <= h.num_start < b]
        if not inside:
            return None
        lead = LEADING_JUNK.match(s, a)
        if (lead.end() if lead else a) != inside[0].start:
            return s[a : inside[0].start].strip()
    return None
