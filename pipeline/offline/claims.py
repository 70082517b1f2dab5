"""Offline claims: the results an abstract reports, found with number and comparison heuristics.

Deterministic and stdlib-only. Quantitative claims are numbers that carry a result unit
(%, pp, x, times, fold), a metric ("BLEU of 32.1") or a "from A to B" change, in sentences
that are neither background nor method/setup description. Qualitative claims are evaluative
verbs (outperforms, improves, matches, state of the art, correlates with) in result sentences
that yield no number. Every evidence span is cut from the whitespace-normalized abstract, so
it is verbatim; the claim dicts have the fields of `pipeline.schemas.Claim` except `span`.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.offline.claim_metric import quantitative_metric
from pipeline.offline.claim_numbers import (
    Hit,
    math_view,
    scan_numbers,
)
from pipeline.stages.claims import MAX_CLAIMS
from pipeline.text import display_text, split_sentences

# Abstracts are ~2 kB; anything far beyond that is not an abstract, so only its head is read.
_MAX_CHARS = 20_000
_MAX_EVIDENCE_CHARS = 300
_MAX_EVIDENCE_WORDS = 40
_MIN_CLAUSE_WORDS = 4
_MIN_EVIDENCE_CHARS = 8  # what the Claim schema accepts as evidence
_MAX_PHRASE_WORDS = 7

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"\S+")
_DIGIT = re.compile(r"\d")
_NUMBERISH = re.compile(r"[+−~∼≈<>-]?\s?\d")
_CJK_END = re.compile(r"[。！？；]")
_CJK_SPLIT = re.compile(r"(?<=[。！？；])")

# --- sentence roles --------------------------------------------------------------------

_FIRST_PERSON = re.compile(r"\b(?:we|our|ours)\b", _I)
# Present perfect about others ("X have shown promise") marks background, not this paper.
_PRESENT_PERFECT = re.compile(
    r"\b(?:has|have)\s+(?:\w+ly\s+)?(?:been\s+)?(?:shown|demonstrated|emerged|achieved|become"
    r"|driven|proven|proved|gained|attracted|reported|made|seen|enabled|explored|studied"
    r"|obtained|yielded|delivered|produced|outperformed|improved|surpassed|matched|set"
    r"|established|reached)\b",
    _I,
)
_PRIOR_SUBJECT = re.compile(
    r"^(?:\w+,\s+)?(?:(?:while|although|whereas|though)\s+)?(?:the\s+)?(?:prior|previous|existing"
    r"|earlier|past|recent|traditional|conventional|current|standard)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:work|works|studies|study|research|methods|approaches|literature|techniques|models"
    r"|systems|benchmarks|defenses)\b",
    _I,
)
_OWN_WORK = re.compile(
    r"\b(?:we|our|ours|this\s+(?:paper|work|study|article)|in\s+this\s+(?:paper|work)|here,?\s+we)\b",
    _I,
)
_OTHERS_WORK = re.compile(
    r"\b(?:recent(?:ly)?\s+proposed|proposed\s+by|introduced\s+by|developed\s+by)\b", _I
)
_RELATIVE = re.compile(r"\s*(?:which|who|that|whose)\b", _I)
_PRIOR_MENTION = re.compile(r"\b(?:prior|previous|existing|earlier|et al)\b", _I)
_METHOD_SENTENCE = re.compile(
    r"\b(?:we|this (?:paper|work|study))\s+(?:\w+ly\s+|then\s+|also\s+|further\s+|first\s+)?"
    r"(?:propose|introduce|present|develop|design|describe|formalize|define|construct|build"
    r"|provide|offer|leverage|adapt|use|train|fine-tune|finetune|sample|collect|curate|release"
    r"|mask|set|select|apply|adopt|employ|create|generate|annotate|prune|freeze|consider|study"
    r"|investigate|benchmark|evaluate|test|analy[sz]e|scale|extend|derive|formulate|model)\b",
    _I,
)
_PASSIVE_METHOD = re.compile(
    r"\b(?:is|are|was|were)\s+(?:\w+ly\s+)?(?:trained|evaluated|tested)\s+on\b", _I
)
_SETUP_SENTENCE = re.compile(
    r"\b(?:contains?|consists?\s+of|comprises?|comprising|covering|covers|includes?|including"
    r"|spanning|spans|composed\s+of|collected|curated|annotated)\b",
    _I,
)
_RESULT_CUE = re.compile(
    r"\b(?:achiev|improv|outperform|surpass|exceed|gain|boost|increas|decreas|reduc|lower"
    r"|higher|faster|speed|accura|recall|precision|error|score|success|agreement|better|worse"
    r"|drop|recover|retain|match|reach|attain|yield|deliver|beat|up to|more than|less than"
    r"|relative|compared|versus|show|demonstrat|find|found|reveal|observ|cases)",
    _I,
)
_EVIDENCE_CUE = re.compile(
    r"\b(?:experiment|empiric|results?\b|evaluat|benchmark|outperform|surpass|ablation"
    r"|we\s+(?:\w+ly\s+)?(?:show|find|demonstrate|observe)|achiev|(?:show|shows|showed|shown"
    r"|demonstrate|demonstrates|demonstrated|find|finds|found|observe|observed|confirm|confirms"
    r"|indicate|indicates|reveal|reveals|verify|verifies)\s+that|in\s+practice|on\s+\w+\s+"
    r"(?:benchmarks?|datasets?|tasks))",
    _I,
)
_SUMMARY_OPENER = re.compile(
    r"^(?:overall|together|altogether|in summary|to summarize|taken together|in conclusion"
    r"|our (?:results|findings|work|study|paper|analysis)|these (?:results|findings))\b",
    _I,
)
# Theorems and rates are not claims under the annotation guideline.
_THEORY = ("lower bound", "upper bound", "convergence rate", "theorem", "$")
_LEAD_IN = re.compile(
    r"\b(?:show|shows|showed|shown|demonstrate|demonstrates|demonstrated|find|finds|found"
    r"|reveal|reveals|revealed|indicate|indicates|confirm|confirms|validate|validates|observe"
    r"|observed|verify|verifies|verified|suggest|suggests|prove|proves|showing|demonstrating"
    r"|revealing|indicating|confirming|suggesting)\s+that\b[\s,]*",
    _I,
)

# --- numbers ---------------------------------------------------------------------------

_MODIFIER = re.compile(r"\b([a-z][\w-]*)\s+$", _I)
_METRIC = re.compile(
    r"(?P<head>\b(?:top-\d\s+accuracy|accuracy|accurate(?:ly)?"
    r"|AUROC|AUPRC|AUC|F1(?:[\s-]score)?|BLEU|ROUGE(?:-\w+)?|METEOR|CIDEr|perplexity|PPL|FID"
    r"|mAP|mIoU|IoU|exact match|recall|precision|success rate|win rate|pass@\d+|error rate"
    r"|error|WER|CER|NDCG(?:@\d+)?|MRR|correlation|agreement|reward|latency|throughput"
    r"|memory|speed-?ups?|performance|MSE|MAE|RMSE|score)\b)",
    _I,
)
_GENERIC_HEADS = _words("precision recall performance accuracy error score") | {"success rate"}
_NOT_MODIFIERS = _words(
    """reduces reduce improves improve increases increase lowers boosts achieves achieve yields
    yield reaches reach obtains obtain attains has have gives cuts decreases the a an of and
    or in on to by with its their our mean average overall relative absolute higher lower
    better worse strong stronger same top up while still achieving retaining improving
    boosting reducing increasing yielding maintaining preserving reaching matching attaining
    obtaining recovering surpassing outperforming superior high low comparable best good
    competitive significant substantial improved enhanced consistent"""
)
_AFTER_WORD = re.compile(
    r"\s*(?P<cmp>(?:less|more|fewer|lower|higher|smaller|larger)\s+)?(?:\w+ly\s+)?(?P<word>\w+)",
    _I,
)
_PREPOSITION_START = re.compile(r"(?:with|at|by|in|on|for|of|to)\s", _I)
_CHANGE_OBJECT = re.compile(
    r"\b(?:improvements?|gains?|increases?|reductions?|decreases?|drops?)\s+(?:in|of)\s+(?!\d)",
    _I,
)
_ADJ_METRIC = {
    "faster": "speed",
    "robust": "robustness",
    "efficient": "efficiency",
    "effective": "effectiveness",
    "accurate": "accuracy",
    "interpretable": "interpretability",
    "faithful": "faithfulness",
    "reliable": "reliability",
    "stable": "stability",
    "scalable": "scalability",
    "expressive": "expressivity",
    "expensive": "cost",
    "cheaper": "cost",
}

# --- qualitative triggers ---------------------------------------------------------------

_SOTA = r"(?:state[- ]of[- ]the[- ]art|SOTA)"
_EFFECT_NOUNS = (
    r"effectiveness|efficacy|superiority|advantages?|benefits?|utility|usefulness|merits?|value"
    r"|potential|importance|promise|feasibility|power|strength|robustness|efficiency"
    r"|applicability|viability|competitiveness|competency|competence"
)
_COMPARATIVES = (
    r"better|worse|higher|lower|faster|slower|smaller|larger|stronger|weaker|greater|fewer"
    r"|cheaper|simpler|easier|harder|tighter|more\s+[a-z]+"
)
_QUAL_TRIGGER = re.compile(
    r"\b(?P<trigger>outperform(?:s|ed|ing)?|underperform(?:s|ed|ing)?|surpass(?:es|ed|ing)?"
    r"|beats?|exceed(?:s|ed|ing)?"
    rf"|(?:achiev|set|establish|attain|reach|obtain|deliver|yield|demonstrat|report|show)\w*"
    rf"\s+(?:a\s+|the\s+)?(?:new\s+)?(?:near(?:ly)?\s+|close\s+to\s+)?{_SOTA}|new\s+{_SOTA}"
    rf"|advances?\s+(?:in|over|on)\s+the\s+{_SOTA}|{_SOTA}\s+(?:[\w-]+\s+)?(?:performance|results"
    r"|accuracy)"
    r"|(?:(?:significantly|substantially|consistently|greatly|markedly|considerably|dramatically"
    r"|notably|further|largely|marginally|slightly)\s+)?(?:improv(?:es|ed|e)|enhanc(?:es|ed|e)"
    r"|boost(?:s|ed)?|reduc(?:es|ed|e)|increas(?:es|ed|e)|speeds?\s+up|accelerat(?:es|ed|e))"
    r"|(?:achiev|deliver|obtain|attain|show|yield|produc|giv|lead|reach|demonstrat|report"
    r"|exhibit|validat|confirm|result)\w*\s+(?:in\s+|to\s+)?(?:its\s+|their\s+|the\s+|an?\s+)?"
    r"(?:\w+ly\s+)?(?:strong|competitive|excellent|remarkable|impressive|promising|good|superior"
    r"|favorable|comparable|significant|considerable|substantial|improved|high|consistent"
    rf"|{_COMPARATIVES}|highest|best|lowest)\s+(?:[\w-]+\s+){{0,2}}?[\w-]+"
    r"|(?:achiev|obtain|yield|reach|attain|giv)\w*\s+(?:the\s+)?(?:highest|best|lowest|top)"
    r"|(?:show|shows|showed|shown|showing|demonstrat\w*|validat\w*|confirm\w*|verif\w*"
    r"|illustrat\w*|highlight\w*|indicat\w*|prov(?:e|es|ed|ing)|report\w*|observ\w*|bring\w*"
    r"|provid\w*)\s+(?:the\s+|its\s+|their\s+|our\s+)?(?:\w+\s+){0,2}?(?:improvements?|gains?"
    rf"|speed-?ups?|{_EFFECT_NOUNS})\b"
    r"|perform(?:s|ed)?\s+(?:\w+ly\s+|very\s+|quite\s+|surprisingly\s+)?(?:well|better|worse"
    r"|favorably|competitively|comparably|comparable|on\s+par)"
    r"|compar(?:es|ed|ing)?\s+favou?rably|approach(?:es|ing)?\s+the\s+performance"
    r"|generaliz(?:es|ed|e)\s+(?:well\s+)?to\s+(?:unseen|new|novel|other|different|larger)"
    r"|(?:is|are|remains?|turns\s+out\s+to\s+be)\s+(?:\w+ly\s+|very\s+|highly\s+)?(?:robust|effective"
    r"|vulnerable)\s+(?:to|in|at|for)"
    r"|superior|(?:substantial|consistent|significant|large|considerable|notable|dramatic|major)"
    r"\s+(?:improvements?|speed-?ups?|gains?|reductions?|boosts?)|improvements?\s+over"
    r"|gains?\s+over|advantage\s+over|match(?:es|ed)?|compete\s+with"
    r"|competitive\s+(?:with|to|against)|comparable\s+to|on\s+par\s+with"
    r"|similar\s+(?:performance|results|accuracy|capabilities)\s+(?:to|as)"
    r"|correlat(?:es|ed|e)\s+(?:\w+ly\s+)?with|(?:positively|negatively|strongly)\s+correlat(?:es|ed|e)"
    r"|more\s+(?:efficiently|accurately|quickly|robustly|effectively|reliably|stably)"
    rf"|(?:{_COMPARATIVES})(?=[^.;]{{0,100}}(?<!rather )\bthan\b))\b",
    _I,
)
# Triggers that are results on their own: a comparison with something, or an asserted effect.
_STRONG_TRIGGER = re.compile(
    rf"(?:outperform|underperform|surpass|beat|exceed|{_SOTA}|new\s|advance|superior|improvements?"
    r"\s+over|gains?\s+over|advantage|competitive\s+(?:with|to|against)|comparable\s+to|on\s+par"
    r"|similar|compar\w*\s+favou?rably|approach|generaliz|(?:achiev|obtain|yield|reach|attain|giv)"
    r"\w*\s+(?:the\s+)?(?:highest|best|lowest|top)"
    r"|(?:show|demonstrat|validat|confirm|verif|illustrat|highlight|indicat|prov)\w*\s+(?:the\s+"
    rf"|its\s+|their\s+|our\s+)?(?:\w+\s+){{0,2}}?(?:{_EFFECT_NOUNS}))",
    _I,
)
# A baseline named after a change or comparative makes it a comparison ("improves X over Y").
_BASELINE_AFTER = re.compile(
    r"\b(?:than\s+(?:the|a|an|existing|prior|previous|baselines?|standard|conventional|state"
    r"|other|competing|current|all|both|typical|vanilla|its|their|[A-Z])"
    r"|over(?!\s+(?:time|the\s+course|training|iterations?|epochs?|steps))|upon"
    r"|compared\s+(?:to|with)|relative\s+to|versus|vs\.?)\b",
)
_ALPHA_RUN = re.compile(r"[A-Za-z]+")
# First three letters of every word a trigger can start with (kept in step with _QUAL_TRIGGER).
_TRIGGER_PREFIXES = frozenset(
    w[:3]
    for w in _words(
        """outperform underperform surpass beat exceed achiev set establish attain reach obtain
        deliver yield demonstrat report show new advance state sota significantly substantially
        consistently greatly markedly considerably dramatically notably further largely
        marginally slightly improv enhanc boost reduc increas speed accelerat produc giv lead
        exhibit validat confirm result verif illustrat highlight indicat prov observ bring
        perform compar approach generaliz turns superior substantial consistent significant
        large considerable notable dramatic major gain advantage match compete competitive
        comparable on similar correlat positively negatively strongly more is are remain better
        worse higher lower faster slower smaller larger stronger weaker greater fewer cheaper
        simpler easier harder tighter shorter longer"""
    )
)
# Cheap substring tests before the regexes. A sentence with a strong trigger stem can hold a
# result on its own; one with only weak stems ("improves", "better than") needs an evidence cue,
# and every evidence cue contains one of _EVIDENCE_STEMS.
_STRONG_STEMS = _words(
    """outperform underperform surpass beat exceed state-of-the-art sota superior advantage
    competitive comparable compete match effective efficacy benefit utility useful merit
    potential importance feasib promis vulnerable than favorabl favourabl approach generaliz
    highest best lowest advance competen upon"""
) | {"state of the art", "on par", " over ", "compared"}
_EVIDENCE_STEMS = _words(
    """experiment empiric result evaluat benchmark outperform surpass ablation show find found
    demonstrat observ achiev confirm indicat reveal verif practice dataset task"""
)
_BLOCK_BEFORE = [
    # purpose ("to improve", "for improving"), but not "able to" / "lead to" / "compared to"
    re.compile(
        r"(?<!able )(?<!lead )(?<!leads )(?<!led )(?<!leading )(?<!compared )(?<!similar )"
        r"\b(?:to|for|towards)\s+(?:\w+ly\s+)?$",
        _I,
    ),
    re.compile(
        r"\b(?:not(?!\s+only)|no|never|cannot|can't|fails?\s+to|failed\s+to|without|neither|nor|aim|aims"
        r"|seek|seeks|hope)\s+(?:\w+\s+){0,2}$",
        _I,
    ),
    re.compile(r"\b(?:as|when|if|whether|once|although|though)\s+(?:[\w'-]+\s+){0,10}$", _I),
    re.compile(r"\b(?:they|which\s+best|best)\s+(?:\w+ly\s+)?$", _I),
    re.compile(r"\b(?:may|might|could|would|should|will)\s+(?:\w+ly\s+)?$", _I),
    re.compile(r"\b(?:with|the|an?|of|by|its|their)\s+$", _I),
]
_CHANGE_VERB = re.compile(
    r"(?:(?:significantly|substantially|consistently|greatly|markedly|considerably|dramatically"
    r"|notably|further|largely)\s+)?(?:improv|enhanc|boost|reduc|increas|accelerat)\w*",
    _I,
)
# Triggers that are a result only in a sentence that reports evidence: changes, comparatives.
_WEAK_TRIGGER = re.compile(
    r"(?:(?:significantly|substantially|consistently|greatly|markedly|considerably|dramatically"
    r"|notably|further|largely)\s+)?(?:improv|enhanc|boost|reduc|increas|speed|accelerat)"
    r"|more\s|better|stronger|greater|perform|similar|correlat|positively|negatively|strongly"
    r"|is\s|are\s|remain",
    _I,
)
_PERF_OBJECT = re.compile(
    r"(?:es|ed)?\s+(?:or\s+(?:even\s+)?(?:exceeds?|outperforms?|surpass\w*)|(?:the\s+)?(?:performance"
    r"|accuracy|results|state)|(?:that|those)\s+of)",
    _I,
)
_EFFECT_TRIGGER = re.compile(
    r"(?:show|demonstrat|validat|confirm|verif|illustrat|highlight|indicat|prov)\w*\s", _I
)
_ANNOUNCE = re.compile(r"(?:validat|verif|evaluat|assess|examin|investigat|test)\w*\s", _I)
_WE_BEFORE = re.compile(r"\bwe\s+(?:\w+ly\s+|also\s+|further\s+|then\s+)?$", _I)
_NOUN_END = re.compile(r"(?:ment|ments|tion|tions)$", _I)
_PURPOSE_BEFORE = re.compile(r"\b(?:that|which|we|and)\s+(?:\w+ly\s+|also\s+|further\s+)?$", _I)
_VERB_TRIGGER = re.compile(
    r"(?:outperform|surpass|beat|exceed|achiev|set|establish|attain|reach|obtain|deliver|yield"
    r"|demonstrat|report|show|improv|enhanc|boost|reduc|increas|speed|accelerat|match|compete"
    r"|correlat|perform|produc|giv|lead|validat|confirm|exhibit|significantly|substantially"
    r"|consistently|greatly|markedly|considerably|dramatically|notably|further|largely)",
    _I,
)
_COORDINATOR = re.compile(r",?\s+(?:and|but)\s+(?:also\s+|even\s+|still\s+)?|;\s*|,\s+while\s+", _I)
_AS_WELL_AS = re.compile(r",\s+as\s+well\s+as\s+", _I)
_INTRANSITIVE = re.compile(r"\s*(?:[,.;:)]|$|(?:to|with|as|when|over|from)\b)", _I)
_OBJECT_TRIGGER = re.compile(r"improv|enhanc|boost|reduc|increas|superior|accelerat")
_IN_TERMS_OF = re.compile(r"\s*(?:in|of)\s+(?:terms\s+of\s+)?", _I)
_COMPARE_TRIGGER = re.compile(
    r"outperform|surpass|beat|exceed|match|compete|competitive|comparable|on par"
)
_OUTPERFORM = re.compile(r"\b(?:outperform\w*|surpass\w*)\s+", _I)
_CHAINED_VERB = re.compile(r"\s*(?:or|and)\s+(?:even\s+)?\w+(?:\s+with)?\s+", _I)
_COMPARISON_AFTER = re.compile(
    r"(?<![-‑])\b(?:than|over|compared\s+(?:to|with)|relative\s+to|versus|vs\.?|against"
    r"|competitive\s+(?:to|with)|outperform\w*|surpass\w*|beat(?:s|ing)?|exceed\w*"
    r"|match(?:es|ed|ing)?)\s+"
    r"(?!\d|time\b|the\s+course|a\s+wide|a\s+range)",
    _I,
)
_PERFORMANCE_OF = re.compile(r"(?:the\s+)?performance\s+of\s+", _I)
_COMPARISON_ANYWHERE = re.compile(r"\b(?:compared\s+(?:to|with)|relative\s+to)\s+", _I)
_SEGMENT_SEP = re.compile(r"[()\[\]]|[;:,](?=\s)|\s(?:while|whereas)\s|\s?(?:—|--)\s?|\s–\s")
_PUNCT_END = re.compile(r"[,;:()\[\]\"“”—]|--|\.(?:\s|$)")
# Words that end a noun phrase: prepositions, conjunctions, participles opening a new clause.
_PHRASE_STOP = re.compile(
    r"on|in|across|at|while|with|by|when|for|especially|without|through|under|using|which|that"
    r"|showing|from|to|as|during|whereas|but|via|after|before|because|since|where|thereby"
    r"|leading|yielding|achieving|over|than|compared|against|versus|vs|making|demonstrating"
    r"|establishing|retaining|maintaining",
    _I,
)
_LEADING_JUNK = re.compile(
    r"(?:(?:and|or|but|while|whereas|with|by|thus|then|also|still|even|e\.g\.|i\.e\.|for example"
    r"|for instance|notably|furthermore|moreover|further|finally|first|second|third|specifically"
    r"|remarkably|importantly|additionally|in addition|in particular|that)\b[\s,]*)+",
    _I,
)
_STATEMENT_JUNK = re.compile(
    rf"{_LEADING_JUNK.pattern}|(?:achieving|yielding|obtaining|reaching|attaining)\s+", _I
)
_DETERMINER = re.compile(r"^(?:the|a|an|both|all|its|their|our|these|those)\s+", _I)
_VERBISH = _words(
    """better also even enables enable maintains maintain reduces reduce improves improve
    enhances enhance elicit elicits preserves preserve achieves achieve yields yield
    generalizes shows show is are remains provides offers reveals reveal demonstrates
    exhibits requires scales produces uncovers identifies captures outperforms matches"""
)

# --- datasets ------------------------------------------------------------------------------

_NAME = r"[A-Z][\w'’.-]*[\w]"
_NAMES = rf"{_NAME}(?:\s+[A-Z0-9](?:[\w.-]*\w)?)?(?:(?:,\s*|\s+)(?:and\s+|or\s+)?{_NAME})*"
_ON_NAMES = re.compile(rf"\bon\s+(?:the\s+)?(?P<names>{_NAMES})")
_PAREN_NAMES = re.compile(
    rf"\b(?:datasets?|benchmarks?|tasks?|suites?|corpora)\s*\((?:e\.g\.,?\s*)?(?P<names>{_NAMES})\)"
)
_SUCH_AS_NAMES = re.compile(rf"\b(?:such\s+as|including)\s+(?P<names>{_NAMES})")
_ON_PHRASE = re.compile(r"\bon\s+(?P<phrase>[a-z][\w'-]*(?:\s+[\w'-]+){0,4})", _I)
_EXPERIMENTS_ON = re.compile(
    r"^(?:[\w-]+\s+){0,3}?(?:experiments|evaluations?|results|tests)\s+on\s+(?P<phrase>[^,]+?)"
    r"\s+(?:show|shows|demonstrate|demonstrates|reveal|reveals|confirm|confirms|indicate"
    r"|validate|verify)\b",
    _I,
)
_ON_LEAD = re.compile(r"On\s+([^,]{3,60}),")
_MODEL_NAME = re.compile(
    r"^(?:llama|gpt|qwen|gemma|medgemma|mistral|mixtral|claude|gemini|bert|roberta|t5|pythia|opt"
    r"|phi|deepseek|falcon|vicuna|olmo|vit|resnet|clip|mamba|palm|bloom|[ahv]100|tpu|gpu)"
    r"|\d+(?:\.\d+)?[BMK]\b",
    _I,
)
_BAD_PHRASE_START = _words(
    """this these that those both all each average par top its their our the a an multiple
    several various diverse many different one two three four five six seven eight nine ten
    eleven twelve most some any which it"""
)


def extract_claims(text: str) -> list[dict[str, Any]]:
    """Claimed results of an abstract as Claim-shaped dicts (no `span`); [] when it reports none."""
    if not isinstance(text, str):
        return []
    sentences = _sentences(text[:_MAX_CHARS])
    found: list[tuple[int, int, dict[str, Any]]] = []
    first_own = next((i for i, s in enumerate(sentences) if _OWN_WORK.search(s)), 0)
    for idx, sentence in enumerate(sentences):
        if idx < first_own or _is_background_sentence(sentence, idx, len(sentences)):
            continue  # context comes before the paper first speaks of its own work
        view = math_view(sentence)  # same offsets; simple LaTeX numbers made plain
        quantitative = _quantitative(view)
        taken = [claim["_span"] for _pos, claim in quantitative]
        found.extend((idx, pos, _grounded(claim, sentence, view)) for pos, claim in quantitative)
        if _SUMMARY_OPENER.search(sentence) and found and not quantitative:
            continue  # a closing restatement of results already extracted
        for claim in _qualitative(view, taken):
            pos = claim["_span"][0]
            found.append((idx, pos, _grounded(claim, sentence, view)))
    return _select(found)


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


def _select(found: list[tuple[int, int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Drop duplicates; keep at most MAX_CLAIMS, numbers first, then restore text order."""
    unique: list[tuple[int, int, dict[str, Any]]] = []
    seen: set[tuple[str | None, str]] = set()
    for item in found:
        key = (item[2]["value"], item[2]["evidence"])
        if key not in seen:
            seen.add(key)
            unique.append(item)
    ranked = sorted(unique, key=lambda it: (it[2]["kind"] != "quantitative", it[0], it[1]))
    return [claim for _, _, claim in sorted(ranked[:MAX_CLAIMS], key=lambda it: (it[0], it[1]))]


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for sentence in split_sentences(text):
        if _CJK_END.search(sentence):  # split_sentences only knows Latin end punctuation
            out.extend(p.strip() for p in _CJK_SPLIT.split(sentence) if p.strip())
        else:
            out.append(sentence)
    return out


def _is_background_sentence(sentence: str, idx: int, total: int) -> bool:
    if sentence.endswith("?"):
        return True
    if idx == 0 and total >= 3 and not _FIRST_PERSON.search(sentence):
        return True  # an abstract opens with context, not results
    if _OTHERS_WORK.search(sentence) and not _FIRST_PERSON.search(sentence):
        return True  # "..., a recently proposed method, can compress ... (0.1% of ...)"
    return bool(_PRIOR_SUBJECT.search(sentence))


def _about_others(sentence: str, pos: int) -> bool:
    """Background before `pos`, or a number inside a clause about prior work ('..., which need 10x')."""
    if _background_before(sentence, pos):
        return True
    clause = sentence.rfind(",", 0, pos)
    return bool(
        clause > 0
        and _RELATIVE.match(sentence, clause + 1)
        and _PRIOR_MENTION.search(sentence, 0, clause)
        and not _FIRST_PERSON.search(sentence, 0, pos)
    )


def _background_before(sentence: str, pos: int) -> bool:
    """Whether the text before `pos` attributes what follows to others ("X have shown ...")."""
    prefix = sentence[:pos]
    if _FIRST_PERSON.search(prefix):
        return False
    return bool(_PRESENT_PERFECT.search(prefix)) or "et al" in prefix


# --- quantitative -----------------------------------------------------------------------


def _quantitative(sentence: str) -> list[tuple[int, dict[str, Any]]]:
    if not _DIGIT.search(sentence):
        return []
    hits = [h for h in scan_numbers(sentence) if not _about_others(sentence, h.start)]
    if not hits or _describes_method(sentence, hits[0]):
        return []
    segments = _segments(sentence)
    out: list[tuple[int, dict[str, Any]]] = []
    previous: dict[str, Any] | None = None
    for hit in hits:
        claim = _quantitative_claim(sentence, hit, hits, segments, previous)
        if claim is not None:
            out.append((hit.start, claim))
            previous = claim
    return out


def _describes_method(sentence: str, first: Hit) -> bool:
    """A method or setup sentence ('we mask 15% of tokens') with no result cue near its numbers."""
    if _METHOD_SENTENCE.search(sentence) or _PASSIVE_METHOD.search(sentence, 0, first.start):
        return not _RESULT_CUE.search(sentence, max(0, first.start - 60))
    return bool(_SETUP_SENTENCE.search(sentence)) and not _RESULT_CUE.search(sentence)


def _segments(s: str) -> list[tuple[int, int]]:
    """Top-level clause spans of a sentence: split at , ; : dashes, while/whereas, not in ( )."""
    spans: list[tuple[int, int]] = []
    start = depth = 0
    for m in _SEGMENT_SEP.finditer(s):
        tok = m.group(0)
        if tok in "([":
            depth += 1
        elif tok in ")]":
            depth = max(0, depth - 1)
        elif not depth:
            spans.append((start, m.start()))
            start = m.end()
    spans.append((start, len(s)))
    return [_strip_span(s, a, b) for a, b in spans if s[a:b].strip()]


def _strip_span(s: str, a: int, b: int) -> tuple[int, int]:
    while a < b and s[a] in " .,;:":
        a += 1
    while b > a and s[b - 1] in " .,;:":
        b -= 1
    return a, b


def _paren_group(s: str, pos: int) -> tuple[int, int] | None:
    left = s.rfind("(", 0, pos)
    if left < 0 or s.find(")", left, pos) >= 0:
        return None
    right = s.find(")", pos)
    return (left + 1, right) if right >= 0 else None


def _quantitative_claim(
    s: str,
    hit: Hit,
    hits: list[Hit],
    segments: list[tuple[int, int]],
    previous: dict[str, Any] | None,
) -> dict[str, Any] | None:
    span, head = _evidence_span(s, hit, hits, segments)
    if span[1] - span[0] < _MIN_EVIDENCE_CHARS:
        span = _widen_item(s, span, hit, hits)
    evidence = s[span[0] : span[1]]
    if len(evidence) < _MIN_EVIDENCE_CHARS:
        return None
    local = s[hit.end : span[1]]
    item = head is not None
    comparison = _comparison(local) or _comparison(s[span[0] : hit.start])
    if comparison is None and item and previous is not None:
        comparison = previous["comparison"]  # list items share the lead result's baseline
    if comparison is None:
        comparison = _sentence_comparison(s)
    return {
        "statement": _statement(evidence, head),
        "kind": "quantitative",
        "metric": quantitative_metric(
            s,
            hit,
            _containing(segments, hit.num_start)[0],
            previous["metric"] if previous else None,
            _list_tail(hit, hits),
            item or _after_colon(s, _containing(segments, hit.num_start)[0]),
        ),
        "value": hit.value,
        "unit": hit.unit,
        "dataset": (item and _item_dataset(s, hit, span)) or _dataset(s, hit.end, span),
        "comparison": comparison,
        "evidence": evidence,
        "_span": span,
    }


def _evidence_span(
    s: str, hit: Hit, hits: list[Hit], segments: list[tuple[int, int]]
) -> tuple[tuple[int, int], str | None]:
    """The tight clause carrying a number, and the list head when it is one item of a list."""
    group = _paren_group(s, hit.num_start)
    if group is not None and sum(group[0] <= h.num_start < group[1] for h in hits) >= 2:
        item = _item_span(s, group, hit)
        seg = _containing(segments, hit.num_start)
        head_start = max(seg[0], s.rfind(")", seg[0], group[0]) + 1)
        lead = _LEADING_JUNK.match(s, head_start)
        return item, s[lead.end() if lead else head_start : group[0] - 1]
    seg = _containing(segments, hit.num_start)
    raw, b = _narrow_between_hits(s, seg, hit, hits)
    lead = _LEADING_JUNK.match(s, raw)
    a = lead.end() if lead and lead.end() <= hit.start else raw
    if a == hit.start:
        head = _list_head(s, segments, segments.index(seg), hits)
        if head is not None:
            return _cap(s, (a, b), hit), head
    if _too_short(s[raw:b]) and len(hits) == 1:
        a, b = _strip_span(s, 0, len(s))  # "..., with up to 99% accuracy": the sentence says what
    else:
        a, b = _extend_short(s, (a, b), segments)
    a = _after_lead_in(s, a, hit.start)
    return _cap(s, (a, b), hit), None


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
    ('14.4%, 18.2%'), or its right one when it comes first."""
    i = hits.index(hit)
    if i > 0:
        return _strip_span(s, hits[i - 1].num_start, span[1])
    if i + 1 < len(hits):
        return _strip_span(s, span[0], hits[i + 1].end)
    return span


def _list_head(s: str, segments: list[tuple[int, int]], index: int, hits: list[Hit]) -> str | None:
    """For '19.9% on X, 4.5% on Y, and 2.1% on Z': the text before the first item's number."""
    for a, b in reversed(segments[:index]):
        inside = [h for h in hits if a <= h.num_start < b]
        if not inside:
            return None
        lead = _LEADING_JUNK.match(s, a)
        if (lead.end() if lead else a) != inside[0].start:
            return s[a : inside[0].start].strip()
    return None


def _containing(segments: list[tuple[int, int]], pos: int) -> tuple[int, int]:
    for seg in segments:
        if seg[0] <= pos < seg[1]:
            return seg
    return min(segments, key=lambda seg: abs(seg[0] - pos))


def _item_span(s: str, group: tuple[int, int], hit: Hit) -> tuple[int, int]:
    start = s.rfind(",", group[0], hit.start)
    end = s.find(",", hit.end, group[1])
    return _strip_span(s, start + 1 if start >= 0 else group[0], end if end >= 0 else group[1])


def _narrow_between_hits(
    s: str, seg: tuple[int, int], hit: Hit, hits: list[Hit]
) -> tuple[int, int]:
    """Cut a clause holding several results at the ' and ' between them."""
    a, b = seg
    inside = [h for h in hits if a <= h.num_start < b]
    i = inside.index(hit)
    if i > 0:
        cut = s.rfind(" and ", inside[i - 1].end, hit.start)
        if cut >= 0:
            a = cut + 5
    if i + 1 < len(inside):
        cut = s.rfind(" and ", hit.end, inside[i + 1].start)
        if cut >= 0:
            b = cut
    return _strip_span(s, a, b)


def _extend_short(
    s: str, span: tuple[int, int], segments: list[tuple[int, int]]
) -> tuple[int, int]:
    """Grow a clause of a few words ('with up to 99% accuracy') by its neighbour on the left."""
    a, b = span
    if not _too_short(s[a:b]):
        return a, b
    before = [seg for seg in segments if seg[1] <= a]
    if before:
        return before[-1][0], b
    after = [seg for seg in segments if seg[0] >= b]
    return (a, after[0][1]) if after else (a, b)


def _too_short(clause: str) -> bool:
    """A clause too small to stand alone: under four words, or a bare 'with up to 99% accuracy'."""
    return len(clause.split()) < _MIN_CLAUSE_WORDS or bool(_PREPOSITION_START.match(clause))


def _after_lead_in(s: str, a: int, limit: int) -> int:
    """Skip a reporting lead-in ('Experiments show that') that ends before position `limit`."""
    best = a
    if "that" not in s[a:limit]:
        return best
    for m in _LEAD_IN.finditer(s, a, limit):
        if len(s[m.end() : limit + 30].split()) >= 2:
            best = m.end()
    return best


def _cap(s: str, span: tuple[int, int], hit: Hit) -> tuple[int, int]:
    """Keep evidence within a word and character budget, centred on the number."""
    a, b = span
    words = [m.span() for m in _WORD.finditer(s, a, b)]
    if len(words) > _MAX_EVIDENCE_WORDS:
        i = next((k for k, w in enumerate(words) if w[1] > hit.start), 0)
        lo = max(0, i - _MAX_EVIDENCE_WORDS // 2)
        hi = min(len(words), lo + _MAX_EVIDENCE_WORDS)
        a, b = words[lo][0], words[hi - 1][1]
    if b - a > _MAX_EVIDENCE_CHARS:
        a = max(a, min(hit.start, b) - _MAX_EVIDENCE_CHARS // 2)
        b = min(b, max(hit.end, a + _MAX_EVIDENCE_CHARS // 2) + _MAX_EVIDENCE_CHARS // 2)
        b = max(b, hit.end)
    return _strip_span(s, a, b)


# --- qualitative ------------------------------------------------------------------------


def _qualitative(sentence: str, taken: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Evaluative results of a sentence, one per clause with its own predicate ('X outperforms
    A, and achieves state of the art on B' is two); clauses already carrying a number
    (`taken`: their evidence spans) are left to the quantitative claims."""
    low = sentence.lower()
    if any(t in low for t in _THEORY):
        return []
    strong = any(stem in low for stem in _STRONG_STEMS)
    evidence_cue = any(cue in low for cue in _EVIDENCE_STEMS) and bool(
        _EVIDENCE_CUE.search(sentence)
    )
    if not (strong or evidence_cue):
        return []  # weak triggers need evidence; a proposal sentence keeps only comparisons (C13)
    triggers = [
        m
        for m in _triggers(sentence)
        if not _blocked(sentence, m, evidence_cue) and not any(a <= m.start() < b for a, b in taken)
    ]
    out: list[dict[str, Any]] = []
    for clause, m in _clauses(sentence, triggers):
        if any(a < clause[1] and clause[0] < b for a, b in taken):
            continue
        out.append(_qualitative_claim(sentence, m, clause))
    return out


def _triggers(s: str) -> list[re.Match[str]]:
    """`_QUAL_TRIGGER.finditer(s)`, but tried only where a word starts as a trigger can (the
    regex has many alternatives; trying them at every character is the extractor's hot spot)."""
    out: list[re.Match[str]] = []
    pos = 0
    for w in _ALPHA_RUN.finditer(s):
        a = w.start()
        if a < pos or w.group(0)[:3].lower() not in _TRIGGER_PREFIXES or (a and s[a - 1].isalnum()):
            continue
        m = _QUAL_TRIGGER.match(s, a)
        if m is not None:
            out.append(m)
            pos = m.end()
    return out


def _clauses(s: str, triggers: list[re.Match[str]]) -> list[tuple[tuple[int, int], re.Match[str]]]:
    """(clause span, its trigger) for each predicate: a new clause starts at a coordinator
    ('and', ', as well as', ';', ', while') before a verb trigger of its own."""
    out: list[tuple[tuple[int, int], re.Match[str]]] = []
    start = 0
    for m in triggers:
        cut = None
        if out and _VERB_TRIGGER.match(m.group("trigger")):
            for c in _COORDINATOR.finditer(s, out[-1][1].end(), m.start()):
                cut = c
            if cut is not None and len(s[out[-1][1].end() : cut.start()].split()) < 2:
                cut = None  # "speed up and improve learning": one predicate (C4)
        if not out:
            out.append(((start, len(s)), m))
        elif cut is not None:
            prev_span, prev = out[-1]
            out[-1] = ((prev_span[0], cut.start()), prev)
            out.append(((cut.end(), len(s)), m))
    if out and len(out) == 1:
        also = _AS_WELL_AS.search(s, out[0][1].end())
        if also and _COMPARE_TRIGGER.match(out[0][1].group("trigger").lower()):
            # "outperform A on X, as well as B on Y": a second comparison
            span, m = out[0]
            out = [((span[0], also.start()), m), ((also.end(), span[1]), m)]
    return out


def _is_strong(s: str, m: re.Match[str]) -> bool:
    """A trigger that reports a result without further evidence: a comparison ('outperforms',
    'lower than typical ensembles', 'improves X over Y') or an asserted effect."""
    if _STRONG_TRIGGER.match(m.group("trigger")):
        return True
    end = s.find(";", m.end())
    return bool(_BASELINE_AFTER.search(s, m.end(), min(end if end >= 0 else len(s), m.end() + 100)))


def _blocked(s: str, m: re.Match[str], evidence_cue: bool = True) -> bool:
    pos = m.start()
    trigger = m.group("trigger")
    if pos > 1 and s[pos - 1] in "-‑" and s[pos - 2].isalnum():
        return True  # "perplexity-matched"
    last = trigger.split()[-1]
    if (
        _CHANGE_VERB.fullmatch(last)
        and not _NOUN_END.search(last)
        and _INTRANSITIVE.match(s, m.end())
    ):
        return True  # "as context length increases", "which reduce to dendrograms"
    prefix = s[max(0, pos - 60) : pos]
    effect = _EFFECT_TRIGGER.match(trigger)  # "experiments ... to prove the efficacy of X" (C14)
    if any(p.search(prefix) for p in (_BLOCK_BEFORE[1:] if effect else _BLOCK_BEFORE)):
        return True
    if not evidence_cue and (not _is_strong(s, m) or s.rfind("(", 0, pos) > s.rfind(")", 0, pos)):
        return True  # "a module that enhances X", "more important than avoiding errors", or a
        # parenthetical definition: "the Condorcet winner (which beats all other options)"
    if trigger.lower().startswith("match") and not (evidence_cue or _PERF_OBJECT.match(s, m.end())):
        return True  # "a policy whose distribution matches the target": a design
    return _background_before(s, m.end())


def _qualitative_claim(s: str, m: re.Match[str], clause: tuple[int, int]) -> dict[str, Any]:
    span = _qualitative_span(s, m.start(), clause)
    evidence = s[span[0] : span[1]]
    return {
        "statement": _statement(evidence, None),
        "kind": "qualitative",
        "metric": _qualitative_metric(s, m),
        "value": None,
        "unit": None,
        "dataset": _dataset(s, m.end(), span),
        "comparison": _qualitative_comparison(s, m),
        "evidence": evidence,
        "_span": span,
    }


def _qualitative_span(s: str, pos: int, clause: tuple[int, int]) -> tuple[int, int]:
    a, b = _strip_span(s, *clause)
    if len(s[a:b].split()) > _MAX_EVIDENCE_WORDS:
        segments = _segments(s)
        a, b = _extend_short(s, _containing(segments, pos), segments)
    a = _after_lead_in(s, a, pos)
    lead = _LEADING_JUNK.match(s, a)
    if lead and lead.end() < pos:
        a = lead.end()
    hit = Hit(pos, pos, pos, "", None)
    return _cap(s, _strip_span(s, a, b), hit)


def _qualitative_metric(s: str, m: re.Match[str]) -> str | None:
    trigger = m.group("trigger").lower()
    if _OBJECT_TRIGGER.match(trigger.split()[-1]):
        inner = _IN_TERMS_OF.match(s, m.end())
        phrase = _phrase(s, inner.end() if inner else m.end())
        if phrase and not phrase.lower().startswith(("by ", "over ", "on ", "and ")):
            return phrase
    for word, name in _ADJ_METRIC.items():
        if trigger.endswith(word):
            return name
    if "performance" in s[max(0, m.start() - 30) : m.end() + 30].lower():
        return "performance"
    return None


def _qualitative_comparison(s: str, m: re.Match[str]) -> str | None:
    trigger = m.group("trigger").lower()
    pos = m.end()
    if _COMPARE_TRIGGER.match(trigger):
        chained = _CHAINED_VERB.match(s, pos)
        pos = chained.end() if chained else pos
        perf = _PERFORMANCE_OF.match(s, pos)
        phrase = _phrase(s, perf.end() if perf else pos)
        if phrase:
            return phrase
    return _comparison(s[m.end() :]) or _sentence_comparison(s)


# --- shared field helpers ---------------------------------------------------------------


def _phrase(s: str, pos: int) -> str | None:
    """The short noun phrase starting at `pos`, up to a clause boundary; None if too long."""
    rest = s[pos : pos + 160]
    end = _PUNCT_END.search(rest)
    head = rest[: end.start()] if end else rest
    # "prior, more complex methods": a lone adjective before a comma is not the whole phrase
    if end and end.group(0) == "," and head.strip().lower() in {"prior", "previous", "existing"}:
        more = _PUNCT_END.search(rest, end.end())
        head = rest[: more.start()] if more else rest
    words = _phrase_words(_DETERMINER.sub("", head.strip()))
    if not words or len(words) > _MAX_PHRASE_WORDS:
        return None
    return " ".join(words)


def _phrase_words(text: str) -> list[str]:
    """Words of `text` up to a stop word, or an 'and' that starts a new clause or result."""
    words = text.split()
    kept: list[str] = []
    for i, word in enumerate(words):
        nxt = words[i + 1].lower() if i + 1 < len(words) else ""
        if _PHRASE_STOP.fullmatch(word):
            break
        if word.lower() == "and" and (
            nxt in {"a", "an", "the", "up"}
            or nxt[:1].isdigit()
            or nxt in _VERBISH
            or nxt.endswith("ly")
        ):
            break
        kept.append(word)
    while kept and not kept[-1].strip(" .,;:*_"):
        kept.pop()
    if kept:
        kept[-1] = kept[-1].rstrip(" .,;:*_")
        kept[0] = kept[0].lstrip("*_")
    return [w for w in kept if w]


def _comparison(text: str) -> str | None:
    m = _COMPARISON_AFTER.search(text)
    if m is None:
        return None
    perf = _PERFORMANCE_OF.match(text, m.end())
    return _phrase(text, perf.end() if perf else m.end())


def _sentence_comparison(s: str) -> str | None:
    m = _COMPARISON_ANYWHERE.search(s)
    if m is None:
        m = _OUTPERFORM.search(s)
    return _phrase(s, m.end()) if m else None


def _dataset(s: str, pos: int, span: tuple[int, int]) -> str | None:
    """Benchmark named near the result: 'on X' after it, '(X and Y)' lists, 'Experiments on X'."""
    local = s[span[0] : span[1]]
    for pattern in (_PAREN_NAMES, _ON_NAMES):
        found = _names(pattern, local) or _names(pattern, s)
        if found:
            return found
    m = _ON_PHRASE.search(s, pos, span[1]) if pos <= span[1] else None
    if m:
        phrase = _dataset_phrase(m.group("phrase"))
        if phrase:
            return phrase
    m = _EXPERIMENTS_ON.search(s)
    if m:
        such = _SUCH_AS_NAMES.search(m.group("phrase"))
        return _good_names(such.group("names")) if such else _dataset_phrase(m.group("phrase"))
    m = _ON_LEAD.match(s)
    return _dataset_phrase(m.group(1)) if m else None


def _item_dataset(s: str, hit: Hit, span: tuple[int, int]) -> str | None:
    """The name before a number in a list item: 'Facebook +12.59%' -> 'Facebook'."""
    name = s[span[0] : hit.start].strip(" :(")
    if name and name[0].isupper() and len(name.split()) <= 4 and not _MODEL_NAME.match(name):
        return name
    return None


def _names(pattern: re.Pattern[str], text: str) -> str | None:
    for m in pattern.finditer(text):
        names = _good_names(m.group("names"))
        if names:
            return names
    return None


def _good_names(names: str) -> str | None:
    names = names.strip(" .,")
    first = names.split()[0] if names.split() else ""
    if not first or _MODEL_NAME.match(first) or first.lower() in _BAD_PHRASE_START:
        return None
    return names


def _dataset_phrase(phrase: str) -> str | None:
    end = _PUNCT_END.search(phrase)
    words = _phrase_words(phrase[: end.start()] if end else phrase)
    if not words or len(words) > 5 or words[0].lower() in _BAD_PHRASE_START:
        return None
    if words[0][0].isdigit() or _MODEL_NAME.match(words[0]):
        return None
    return " ".join(words)


def _statement(evidence: str, head: str | None) -> str:
    """A readable one-sentence statement: the evidence (with its list head) minus markup."""
    if head:
        head = head.strip(" (,:")
        joint = " " if head.rsplit(" ", 1)[-1].lower() in {"of", "by", "to", "in", "at"} else ": "
        text = head + joint + evidence
    else:
        text = evidence
    lead = _STATEMENT_JUNK.match(text)
    text = text[lead.end() :] if lead and lead.end() < len(text) else text
    text = display_text(text).replace("\\%", "%").replace("**", "")
    text = text.strip(" ,;:")
    if not text:
        return evidence
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
