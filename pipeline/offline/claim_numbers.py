"""Result numbers of one sentence, for the offline claims extractor.

Finds the numbers that measure an outcome and their units: percents (also LaTeX `$9.3\\%$`
and "percent"), percentage points, multipliers (`2.5x`, `3×`, "10 times", "5-fold", "by a
factor of 10"), metric units written after the number ("1.169 bpc", "3.83 MOS", "32.1
BLEU"), measures of cost ("45 ms", "3 GB") and bare numbers tied to a metric ("an F1 of
0.87"). Ranges ("4-13x", "4%-27%") and "from A to B" are one result whose value is the upper
end or B. Lists ("15.68, 15.13 and 1.75 BLEU", "1% and 10% of the labels") share the unit and
the verdict of their items. Not results: setup numbers (dataset sizes, counts, "at 50%
sparsity", "with 40% noisy labels", "using only 10% of the data") and a baseline's own
number ("the baseline's 3.46%", "while ReLU drops to below 1%").

The sentence is first seen through `math_view`, which blanks simple inline math markup
(`$`, `\\sim`, `\\times`) with characters of the same length, so offsets stay those of the
original text and evidence is still cut from it verbatim.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from pipeline.text import NUMBER_RE

_I = re.IGNORECASE
_MAX_NUMBERS = 100  # per sentence; real ones have a handful, number dumps are not abstracts


@dataclass(frozen=True)
class Hit:
    """A result number: its span (sign, range, "from A to B" included), value, unit; `metric`
    when the unit itself names one ("BLEU", "bpc"); `num_start` is where the value starts."""

    start: int
    end: int
    num_start: int
    value: str
    unit: str | None
    metric: str | None = None
    group: int = -1  # items of one list share a group number


# --- LaTeX view ------------------------------------------------------------------------------

_INLINE_MATH = re.compile(r"\$([^$]{1,60})\$")
_MATH_MACROS = {
    "\\sim": "   ~",
    "\\approx": "      ≈",
    "\\times": "     ×",
    "\\%": "\\%",
    "\\pm": "  ±",
    "\\!": "  ",
    "\\,": "  ",
    "\\textbf": "       ",
    "\\mathbf": "       ",
    "\\mathrm": "       ",
    "\\text": "     ",
}
_MACRO = re.compile(r"\\[A-Za-z]+|\\[%!,]")
_SIMPLE_MATH_REST = re.compile(r"[\d\s.,+\-−~∼≈±<>%{}x×]*")


def math_view(s: str) -> str:
    """`s` with simple inline math ('$9.3\\%$', '$\\sim$36\\%', '$2\\times$') blanked to plain
    characters of the same length; other math is left as it is (and its numbers are junk)."""
    if "$" not in s and "\\" not in s:
        return s
    out = _INLINE_MATH.sub(_blank_math, s) if "$" in s else s
    if "\\sim" in out or "\\times" in out or "\\approx" in out:
        out = _MACRO.sub(lambda m: _MATH_MACROS.get(m.group(0), m.group(0)), out)
    return out


def _blank_math(m: re.Match[str]) -> str:
    inner = m.group(1)
    plain = _MACRO.sub(lambda k: _MATH_MACROS.get(k.group(0), "\0"), inner)
    if "\0" in plain or not _SIMPLE_MATH_REST.fullmatch(plain.replace("\\%", "%")):
        return m.group(0)
    return " " + plain.replace("{", " ").replace("}", " ") + " "


# --- units -----------------------------------------------------------------------------------

_JUNK_TOKEN = ("://", "www.", "$", "=", "^", "_", "{", "}", "\\frac")
_PERCENT = re.compile(r"(?:\s|\\,|~)?\\?%|\s+per\s?cent\b(?![\s-]*(?:age\s+)?points?)", _I)
_POINTS = re.compile(
    r"\s?(?:pp\b|p\.p\.|percentage[\s-]points?\b|per\s?cent(?:age)?[\s-]points?\b)", _I
)
_TIMES = re.compile(r"\s?×|\s?[xX](?![\w])|\s+times\b|-?fold\b", _I)  # "4.45×speed up"
_RATIO_UNITS = {"%", "pp", "x", "points"}
_MEASURE = re.compile(
    r"\s(?P<unit>ms|s|sec|secs|seconds?|minutes?|min|hours?|h|days?|GB|MB|TB|GiB|MiB|GPU[- ]hours?)\b"
)
# Units that are themselves the metric: "1.169 bpc", "3.83 MOS", "2.9 bits/dim".
_METRIC_UNIT = re.compile(
    r"\s?(?P<unit>bpc|BPC|bpd|BPD|bits/dim(?:ension)?|bits/char(?:acter)?|bits\s+per\s+(?:dim(?:ension)?|character)"
    r"|nats|MOS|dB)(?![\w/])"
)
_MEASURE_CUE = re.compile(
    r"reduc|\bcut|lower|faster|speed|latency|\btimes?\b|memory|down\b|sav", _I
)
# "367 ms latency on a Pixel 3 phone": a measured cost named after its unit.
_COST_AFTER = re.compile(
    r"\s+(?:(?:inference|decoding|end-to-end|average|mean|per-\w+)\s+)?(?:latency|run-?time"
    r"|inference\s+time|overhead)\b(?!\s+(?:budgets?|constraints?|targets?|limits?|requirements?))",
    _I,
)
_PLAIN_POINTS = re.compile(r"\s+(?:points?|pts)\b", _I)
_COUNT_RESULT = re.compile(r"\s+(?P<unit>moves)\b", _I)  # "solves it in 30 moves"
_FACTOR_OF = re.compile(r"\bfactor\s+of\s+(?:about\s+|around\s+|over\s+|up\s+to\s+)?[~∼≈]?\s?$", _I)

# --- context -----------------------------------------------------------------------------

_CONDITION_BEFORE = re.compile(
    r"\b(?:using|we\s+(?:only\s+)?use|with\s+only|on|at|under|prun\w*|mask\w*|remov\w*"
    r"|dropp?\w*|keep\w*|sampl\w*|labell?ing|annotat\w*|freez\w*|retrain\w*)\s+(?:the\s+|a\s+)?"
    r"(?:first\s+|top\s+|last\s+|random\s+"
    r"|only\s+|just\s+)?[~∼≈]?$",
    _I,
)
# Design settings named before their value: "sparsity levels above 90%", "a noise rate of 40%".
_SETTING_BEFORE = re.compile(
    r"\b(?:(?:sparsity|pruning|compression|noise|corruption|masking|mask|dropout|missing"
    r"|occlusion|subsampling|sampling|learning|mixing|poisoning|perturbation|labell?ing)"
    r"(?:\s+(?:levels?|ratios?|rates?|budgets?|thresholds?|fractions?|probability))?"
    r"|budget|threshold)"
    r"\s+(?:of\s+|above\s+|below\s+|over\s+|under\s+|up\s+to\s+|at\s+|as\s+high\s+as\s+"
    r"|ranging\s+from\s+|from\s+|between\s+|=\s*|is\s+|was\s+)*(?:only\s+)?[~∼≈]?\s?$",
    _I,
)
_CONFIDENCE_AFTER = re.compile(r"\s+(?:confidence|credible|significance)\b|\s+CIs?\b", _I)
_INTERVAL_BEFORE = re.compile(
    r"\b(?:(?:confidence|credible)\s+intervals?|CI)\s*(?:of\s+|:\s*|=\s*|is\s+)?[\[(]?\s*$", _I
)
# A value the result depends on, not one it reaches: "over 98% is needed", "are required".
_NEEDED_AFTER = re.compile(
    r"\s+(?:is|are|was|were|would\s+be|will\s+be)\s+(?:needed|required|necessary)\b", _I
)
# A share of the training material after the number: "10% of the labels", "40% noisy labels".
_SETTING_AFTER = re.compile(
    r"\s+(?:of\s+(?:the\s+|its\s+|their\s+|all\s+)?(?:[\w’'-]+\s+){0,3}(?:labels?|labell?ed|data"
    r"|dataset|training(?:\s+(?:data|set|examples|samples))?|samples?|examples?|tokens?"
    r"|parameters|weights|images?|annotations?|queries|budget|supervision|pixels|neurons"
    r"|channels|filters|connections|features|demonstrations|trajectories|episodes|steps)\b"
    r"|(?:noisy|noise|label\s+noise|sparsity|sparse|corruption|corrupted|missing|masked"
    r"|masking|dropout|mislabell?ed|outliers?|occlusion|occluded|pruned|pruning|labell?ed"
    r"|unlabell?ed|of\s+noise|symmetric|asymmetric)\b)",
    _I,
)
# Words before a share of the data that make it a condition of the experiment.
_CONDITION_CLAUSE = re.compile(
    r"\b(?:using|use|uses|with|on|trained|training|train|given|only|from|at|for|keep\w*"
    r"|sampl\w*|freez\w*|prun\w*|remov\w*|mask\w*|drop\w*|label\w*|annotat\w*|corrupt\w*"
    r"|replac\w*|distill\w*|compress\w*|when|where|if|under|during|throughout)\b[^,;]{0,30}$",
    _I,
)
# "compressing to 80%", "pruned to 10%": the target of a compression is the setting.
_COMPRESS_TO = re.compile(
    r"\b(?:compress\w*|prun\w*|distill\w*|quantiz\w*|sparsif\w*|reduc\w*\s+(?:\w+\s+)?size)"
    r"\s+(?:\w+\s+){0,3}?(?:down\s+)?to\s+(?:only\s+|just\s+)?[~∼≈]?\s?$",
    _I,
)
_COMPARED_AFTER = re.compile(
    r"\s*(?:\w+\s+){0,2}?(?:compared\s+(?:to|with)|relative\s+to|than|of\s+the\s+baseline)", _I
)
# "a 5 times larger network", "a 10x bigger dataset": the size of what an experiment used.
_SIZE_AFTER = re.compile(
    r"\s*(?:larger|bigger|deeper|wider|longer)\s+(?:[\w-]+\s+)?(?:networks?|models?"
    r"|architectures?|datasets?|corpora|corpus|batch(?:es)?|budgets?|vocabular(?:y|ies))\b",
    _I,
)
# "performs at par with ResNet-18, using less than 25% of the parameters": a bounded share of
# the model's own cost after a match or comparison is an outcome, not the design.
_COST_SHARE_BEFORE = re.compile(
    r"\b(?:using|uses|use|requiring|requires|needing|needs|with)\s+(?:only\s+|just\s+|merely\s+"
    r"|less\s+than\s+|fewer\s+than\s+|under\s+|at\s+most\s+)+[~∼≈]?\s?$",
    _I,
)
_COST_SHARE_AFTER = re.compile(
    r"\s+of\s+(?:the\s+|its\s+|their\s+)?(?:[\w-]+\s+){0,2}?(?:parameters|weights|FLOPs"
    r"|computation|compute|memory)\b",
    _I,
)
_MATCH_BEFORE = re.compile(
    r"\b(?:at[- ]par|on[- ]par|match\w*|comparable|competitive|similar|same|equal\w*|rival\w*"
    r"|outperform\w*|surpass\w*|better|higher|beat\w*)\b",
    _I,
)
# "when the epoch budget is increased by a factor of 128": the value a condition sets.
_WHEN_CHANGED = re.compile(
    r"\b(?:when|if|once|as)\s+[^,;:()]{0,50}?\b(?:is|are|was|were|gets?)\s+(?:\w+ly\s+)?"
    r"(?:increased|decreased|reduced|raised|lowered|scaled|set|varied|changed|enlarged"
    r"|extended|doubled|halved)\s+(?:by|to)\s+(?:about\s+|around\s+|up\s+to\s+)?"
    r"(?:a\s+factor\s+of\s+)?[~∼≈]?\s?$",
    _I,
)
_CONDITION_WHEN = re.compile(r"\b(?:when|whenever|if|where|once)\b[^,;:()]*$", _I)
# "0.7% higher accuracy when saving up to 27% energy": what the model saves is an outcome
# even inside a "when" clause (unlike "when using 10% of the labels").
_SAVING_WHEN = re.compile(
    r"\b(?:when|while|whilst)\s+(?:also\s+|simultaneously\s+|still\s+)?(?:saving|reducing"
    r"|cutting|lowering|decreasing|trimming)\b[^,;:()]*$",
    _I,
)
_MULT_AFTER = re.compile(
    r"\)?\s*(?:\([^()]{1,20}\)\s*)?(?:(?:[a-z][\w-]*\s+)?(?:speed[\s-]?ups?|savings?)\b"
    r"|faster|speed-?ups?|accelerations?|fewer|less|smaller"
    r"|cheaper|lower|reductions?|compression|improvements?|higher|more|better|gains?|increases?"
    r"|throughput|larger|worse|slower|shorter|longer|easier|harder|simpler|quicker|sparser"
    r"|denser|bigger|greater)\b",
    _I,
)
_MULT_BEFORE = re.compile(
    r"(?:speed-?up|acceleration|up\s+to|by|achiev\w*|yield\w*|deliver\w*|reduc\w*|faster|compress\w*"
    r"|sav\w*"
    r"|cuts?|of|a|about|around|over|nearly|almost|roughly)\s*(?:more\s+than\s+|at\s+least\s+)?"
    r"[~∼≈]?$",
    _I,
)
# "with only ~2% drop in accuracy": a change after the number makes it a result.
_CHANGE_AFTER = re.compile(
    r"\s*(?:[\w-]+\s+)?(?:drops?|loss|losses|degradation|decreases?|increases?|improvements?"
    r"|gains?|reductions?|speed-?ups?|savings?|relative)\b",
    _I,
)
# "the speedup at test time is 3X", "memory reduction is 3X"
_MULT_SUBJECT = re.compile(
    r"\b(?:speed-?ups?|accelerations?|reductions?|compression|improvements?|gains?|savings?)"
    r"\b[^,;.]{0,30}?\b(?:is|was|are|of|=|reaches|reached)\s+(?:about\s+|around\s+|up\s+to\s+"
    r"|over\s+)?[~∼≈]?\s?$",
    _I,
)
_GAIN_BEFORE = re.compile(
    r"(?:\bby|\+|\bof|\bgain\w*|\bimprov\w*)\s*(?:about\s+|over\s+|more\s+than\s+|up\s+to\s+"
    r"|nearly\s+|almost\s+|roughly\s+|around\s+)?[~∼≈]?\s?$",
    _I,
)
_RANGE = re.compile(r"\s?(?:[-–−]|to)\s?\+?(?=\d)")  # "4-13x", "+1.8% to +4.4%"
_FROM = re.compile(r"\bfrom\s+(?:about\s+|around\s+)?[+~∼≈]?$", _I)
_ASIDE = re.compile(r"\s*\([^()]{1,30}\)")
_BETWEEN = re.compile(r"\bbetween\s+[+~∼≈]?$", _I)
_AND_SECOND = re.compile(r"\s+and\s+[+~∼≈]?(?P<n>\d+(?:,\d{3})*(?:\.\d+)?)")
_TO = re.compile(
    r"\s+(?:down\s+|up\s+)?to\s+(?:about\s+|around\s+|only\s+|just\s+|over\s+|more\s+than\s+"
    r"|nearly\s+|almost\s+|above\s+|below\s+|under\s+)?[+~∼≈]?",
    _I,
)
_CHANGE_OF = re.compile(
    r"\b(?:increase|improvement|gain|reduction|decrease|drop|boost)s?\s+of\s+(?:about\s+|over\s+"
    r"|up\s+to\s+|[~∼≈]\s?)?$",
    _I,
)
# "fails to outperform DQNs in 4 out of 5 games": a count of outcomes is a result.
_OUT_OF = re.compile(r"\s+(?:(?:out\s+of|of\s+the|of)\s+\d+\b|of\s+(?:them|these|those)\b)")
_COUNT_RESULT_BEFORE = re.compile(
    r"\b(?:outperform\w*|surpass\w*|beat\w*|exceed\w*|better|wins?|won|solv\w*|fails?|failed"
    r"|succeed\w*|best|match\w*|improv\w*)\b[^.;]*$",
    _I,
)
# "as few as 3 memory states (and 10 observations)": how small a result is (C12 counts).
_AS_FEW_BEFORE = re.compile(
    r"\bas\s+(?:few|little)\s+as\s+(?:\d[\d.,]*\s+[^,;:()\d]{1,40}?\s+and\s+)?$", _I
)
# "with as few as 10 labelled examples": the training material is the setting.
_DATA_AFTER = re.compile(
    r"\s+(?:[\w-]+\s+){0,2}?(?:labell?ed|labels?|examples?|samples?|shots?|images?"
    r"|demonstrations?|data|training|queries|annotations?)\b",
    _I,
)
# Between "68.3% accuracy" and "53.9% certified robustness": a metric phrase and "and".
_METRIC_AND = re.compile(r"(?:\s+[A-Za-z][\w-]*){1,3}\s*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or)\s+)")
_COORDINATED = re.compile(r"(?:\band|\bor|,)\s*[~∼≈]?\s?$", _I)
_BEAT = re.compile(r"\b(?:beat|beats|outperform\w*|surpass\w*|exceed\w*|lead\w*)\b", _I)
_RESPECTIVELY = re.compile(r"\s*,?\s*respectively\b", _I)
_IN_TERMS = re.compile(r"\s+in(?:\s+terms\s+of)?(?=\s)", _I)  # "up to 84 in F1-score"
_BY_BEFORE = re.compile(r"\bby\s+(?:about\s+|around\s+|over\s+|more\s+than\s+|up\s+to\s+)?$", _I)
_LIST_GAP = re.compile(
    r"\s*(?:(?:on|in|for)\s+(?:the\s+)?[A-Z][^,;:()]{0,45}?\s*)?(?:,\s*(?:and\s+|or\s+)?|(?:and|or)\s+"
    r"(?:by\s+|on\s+)?|/\s*)-?"  # "+1.0%, -0.27% and -0.08%": a hyphen as a sign
)
# A baseline's own number: "the baseline's 3.46%", "compared to 3.46%", "(vs. 3.46%)".
_BASELINE_BEFORE = re.compile(
    r"(?:\bbaselines?'?s?|\bbaselines'|\bcompared\s+(?:to|with)|\bversus|\bvs\.?|\bv/s|\bagainst"
    r"|\bin\s+contrast\s+to|\bas\s+opposed\s+to|\b(?:improvements?|gains?)\s+over\s+(?=only|just)"
    r"|\bprevious(?:ly)?|\bprior|\bexisting|\b(?:prior|previous|existing)\s+(?:work|works|methods?"
    r"|approaches|art|best|sota|state[- ]of[- ]the[- ]art)(?:'s)?)\s*\(?\s*(?:the\s+|a\s+|an\s+"
    r"|only\s+|just\s+|their\s+|of\s+)*[~∼≈]?\s?$",
    _I,
)
# "compared to the previous state-of-the-art accuracy of 61.52%", "improving over the previous
# best IS of 52.52": the value of a prior or best result named as the point of comparison.
_BASELINE_VALUE = re.compile(
    r"\b(?:over|compared\s+(?:to|with)|versus|vs\.?|against|than|in\s+contrast\s+to)\s+(?:the\s+)?"
    r"(?:[\w-]+\s+){0,2}?(?:previous|prior|existing|earlier|best|state[- ]of[- ]the[- ]art|sota)"
    r"\b[^,;:()]{0,40}?\b(?:of|at|is|was)\s+(?:only\s+|about\s+|around\s+|[~∼≈]\s?)?$",
    _I,
)
# "from an overall baseline mortality rate of 13.3%", "a full precision reference accuracy of
# 69.76%": the value of the reference a result is measured against.
_REFERENCE_VALUE = re.compile(
    r"\b(?:from\s+(?:the\s+|an?\s+)?(?:[\w-]+\s+)?baseline|reference|full[- ]precision"
    r"|uncompressed|unpruned|teacher(?:'s)?|baseline(?:'s)?)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:accuracy|error(?:\s+rate)?|rate|score|performance|perplexity|BLEU|F1)\s+(?:of|at|is|was)\s+"
    r"(?:only\s+|about\s+|around\s+|[~∼≈]\s?)?$",
    _I,
)
# "superior to StyleGAN without truncation (19.0%)": a bare number in parentheses right after
# the model a result is compared with is that model's own number.
_PAREN_BASELINE = re.compile(
    r"\b(?:than|superior\s+to|inferior\s+to|compared\s+(?:to|with)|relative\s+to|over|versus"
    r"|vs\.?|against|outperform\w*|surpass\w*|beat\w*|exceed\w*)\s+[^,;:()]{1,50}?\(\s*"
    r"(?:only\s+|just\s+|[~∼≈]\s?)?$",
    _I,
)
_PAREN_CLOSE = re.compile(r"\s*\)")
# "the baseline trained with 50% more data": how the point of comparison was trained.
_TRAINED_WITH = re.compile(
    r"\b(?:baselines?|teachers?)\s+(?:(?:pre-?|fine-?)?trained|learned)\s+(?:on|with|using)\s+"
    r"(?:only\s+|just\s+|[~∼≈]\s?)?$",
    _I,
)
_WHEN_WORDS = ("when", "if ", "once", "as ")  # cheap gates for the regexes they start
_REFERENCE_WORDS = ("baseline", "reference", "precision", "uncompressed", "unpruned", "teacher")
_CONTRAST_WORDS = ("unlike", "contrary", "contrast", "opposed")
_VERSUS_AFTER = re.compile(r"\s*(?:vs\.?|versus|v/s)\s", _I)
# "contrary to the compression without transfer learning which loses more than 5% accuracy":
# the number of what ours is contrasted with.
_CONTRASTED_WITH = re.compile(
    r"\b(?:contrary\s+to|unlike|in\s+contrast\s+to|as\s+opposed\s+to)\s+[^,;:()]*?"
    r"(?:,\s*)?\b(?:which|that|who|whose)\b[^,;:()]*$",
    _I,
)
_BASELINE_NEEDS = re.compile(r"previous|prior|existing|earlier|best|state|sota", _I)  # a cheap gate
# "the 2.65% achieved by standard NAS": a number credited to another method.
_BY_OTHERS_AFTER = re.compile(
    r"\s+(?:\w+\s+)?(?:achieved|obtained|reported|reached|attained)\s+by\s+(?!our\b|ours\b"
    r"|the\s+proposed|this\b|using\b)",
    _I,
)
_OTHERS_SUBJECT = re.compile(
    r"^(?:(?:the|a|an|all|most|these|both|standard|vanilla|conventional|strong|competing|other"
    r"|several|many|their|existing|dense|original)\s+)*(?:[A-Z][\w-]*\s+)?"
    r"(?:baselines?|competitors?|prior\s+(?:work|methods?)|previous\s+"
    r"(?:work|methods?)|existing\s+(?:work|methods?|approaches)|state-of-the-art\s+methods?"
    r"|humans?|random\s+(?:guessing|chance|baseline))\b",
    _I,
)
# The subject and verb of a contrast clause about other methods: "other pre-training tasks
# yield", "attacks that blindly target object detection only have" (a bare plural naming
# methods), "existing approaches achieve"; a verb that scores, not one that changes ("while
# the model size shrinks by 50%" stays our result).
_OTHERS_CONTRAST = re.compile(
    r"(?:(?:other|existing|previous|prior|competing|conventional|standard|traditional|current"
    r"|state-of-the-art|baseline)\s+[^,;:()]{0,60}?"
    r"|(?:[a-z][\w-]*\s+){0,2}(?:methods|approaches|attacks|models|baselines|algorithms|techniques"
    r"|systems|networks|tasks|competitors|teacher|oracle|humans?|annotators?)\b"
    r"(?:\s+(?:that|which)\s+[^,;:()]{0,60}?)?)"
    r"\s+(?:only\s+|just\s+|still\s+|typically\s+|usually\s+)?"
    r"(?:yield|have|has|achieve|reach|obtain|get|attain|score|give|produce|perform|suffer|remain"
    r"|lag|stay)(?:s|es)?\b",
    _I,
)
# A sentence that opens by turning to the point of comparison: its numbers are the others'.
_CONTRAST_OPENER = re.compile(
    r"\s*(?:in\s+comparison|by\s+comparison|in\s+contrast|by\s+contrast)\s*,", _I
)
_FIRST_PERSON = re.compile(r"\b(?:we|our|ours|proposed)\b", _I)
_CLAUSE_PUNCT = ",;:("
_CLAUSE_WORD = re.compile(r"\b(?:while|whereas|but|and)\b", _I)
_OTHER_CLAUSE = re.compile(r"\b(?:while|whereas)\s+(?P<next>[\w'-]+)", _I)

_METRIC_NAMES = (
    r"accuracy|AUROC|AUPRC|AUC|F1(?:[\s-]score)?|BLEU|ROUGE(?:-\w+)?|METEOR|CIDEr|perplexity|PPL"
    r"|FID|mAP|mIoU|IoU|exact match|EM|recall|precision|success rate|win rate|pass@\d+"
    r"|error rate|error|WER|CER|NDCG(?:@\d+)?|MRR|Hits@\d+|correlation|agreement|reward"
    r"|Spearman|Pearson|MSE|MAE|RMSE|Elo|score|PSNR|SSIM|LPIPS|Inception\s+Score"
    r"|Fr[ée]chet\s+Inception\s+Distance|(?-i:IS|AP|EM)"
    r"|top-\d\s+accuracy|return|returns|perplexities|accuracies|errors|scores"
)
METRIC_BEFORE = re.compile(
    rf"\b(?:{_METRIC_NAMES})\s*(?:\([A-Z][\w-]{{0,8}}\)\s*)?(?:score\s+)?"
    r"(?:of|=|:|at|to|reaches|reaching|is|was)?\s*"
    r"(?:about\s+|around\s+|approximately\s+|only\s+|[~∼≈]\s?)?$",
    _I,
)
_ACRONYM_AFTER = re.compile(r"\s+(?P<metric>[A-Z][A-Z0-9]{1,6}(?:-[A-Z0-9]+)?)(?![\w-])")
METRIC_AFTER = re.compile(
    r"\s+(?P<metric>BLEU|ROUGE(?:-\w+)?|METEOR|CIDEr|perplexity|PPL|FID|mAP|mIoU|IoU|(?-i:EM)|WER"
    r"|CER|F1|AUROC|AUPRC|AUC|MRR|NDCG(?:@\d+)?|Hits@\d+|PSNR|SSIM|(?-i:IS|AP)|Elo|accuracy|error"
    r"|exact\s+match|recall|precision|points?\s+of\s+\w+|speed-?ups?)\b",
    _I,
)
VERB_OBJECT = re.compile(
    r"\b(?:improv(?:es|ed|e|ing)|enhanc(?:es|ed|e|ing)|boost(?:s|ed|ing)?|reduc(?:es|ed|e|ing)"
    r"|increas(?:es|ed|e|ing)|lower(?:s|ed|ing)?|cut(?:s|ting)?|decreas(?:es|ed|e|ing))\s+",
    _I,
)


def scan_numbers(s: str) -> list[Hit]:
    """The result numbers of sentence `s` (as seen through `math_view`), in order."""
    items = _items(s)
    if not items:
        return []
    hits: list[Hit] = []
    rejected: list[_Item] | None = None  # the list before, when it gave no result
    others = False  # ... because it is a baseline's own numbers
    for group in _groups(s, items):
        if rejected is not None and _METRIC_AND.fullmatch(s, rejected[-1].end, group[0].start):
            others = others or _is_baseline(s, rejected[0], rejected[-1])
            if others:  # "the best results of 68.3% accuracy and 53.9% robustness"
                rejected = group
                continue
        found = _group_hits(s, group, len(hits))
        rejected, others = (None if found else group), False
        hits.extend(found)
    return hits


@dataclass(frozen=True)
class _Item:
    """One written number: match span, sign start, unit (and where it ends), unit metric."""

    start: int
    num_start: int
    num_end: int
    end: int
    value: str
    unit: str | None
    metric: str | None
    pair: bool  # a range or "from A to B": start/num_start already cover both numbers


def _items(s: str) -> list[_Item]:
    out: list[_Item] = []
    consumed = -1
    for m in itertools.islice(NUMBER_RE.finditer(s), _MAX_NUMBERS):
        if m.start() < consumed or junk_number(s, m.start(), m.end()):
            continue
        item = _pair_or_range(s, m) or _single(s, m)
        out.append(item)
        consumed = item.end
    return out


def _single(s: str, m: re.Match[str]) -> _Item:
    unit, end, metric = unit_at(s, m.end())
    if unit is None and _FACTOR_OF.search(s, max(0, m.start() - 30), m.start()):
        unit = "x"
    start = signed(s, m.start())
    return _Item(start, start, m.end(), end, s[start : m.end()], unit, metric, False)


def _groups(s: str, items: list[_Item]) -> list[list[_Item]]:
    """Consecutive items joined only by ', ', ' and ', ' or ' or '/' form one list."""
    groups: list[list[_Item]] = [[items[0]]]
    for prev, item in itertools.pairwise(items):
        gap = _LIST_GAP.fullmatch(s, prev.end, item.start)
        if gap is not None and not prev.pair and not item.pair:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _group_hits(s: str, group: list[_Item], first: int) -> list[Hit]:
    """Hits of one list: the last item's unit (or metric unit) fills items written without one;
    a setting or baseline context anywhere in the list makes the whole list no result."""
    tail = group[-1]
    fill_unit, fill_metric = tail.unit, tail.metric or _metric_after(s, tail)
    if len(group) > 1 and not (fill_unit or fill_metric):
        fill_metric = _respectively_metric(s, group)
    if len(group) > 1 and (fill_unit or fill_metric):
        group = [
            it if it.unit or it.metric else _Item(
                it.start, it.num_start, it.num_end, it.end, it.value, fill_unit, fill_metric,
                it.pair,
            )
            for it in group
        ]  # fmt: skip
    anchor = group[-1]
    head = group[0]
    if _is_setting(s, head, anchor) or _is_baseline(s, head, anchor):
        return []
    out: list[Hit] = []
    gid = first if len(group) > 1 else -1
    for item in group:
        hit = _accept(s, item, head, anchor)
        if hit is None and out and item.unit is None and out[0].unit is None:
            # "a perplexity of 52.8 on PTB and 52.0 on WikiText-2": the list's first verdict
            hit = Hit(item.start, item.num_end, item.num_start, item.value, None, out[0].metric)
        if hit is not None:
            out.append(Hit(hit.start, hit.end, hit.num_start, hit.value, hit.unit, hit.metric, gid))
    return out


def _respectively_metric(s: str, group: list[_Item]) -> str | None:
    """'The average accuracy of A, B and C are 78.86, 74.76 and 82.46 respectively': a list of
    bare scores closed by 'respectively', its metric named before it in the sentence."""
    if not _RESPECTIVELY.match(s, group[-1].end):
        return None
    for item in group:
        number = item.value.lstrip("+−").replace(",", "")
        if "." not in number and (len(number) > 3 or int(number) > 100):
            return None  # years, sizes, counts
    found = None
    for m in METRIC_CONTEXT.finditer(s, max(0, group[0].start - 150), group[0].start):
        found = m
    return found.group("head") if found else None


def _metric_after(s: str, item: _Item) -> str | None:
    m = METRIC_AFTER.match(s, item.end)
    if m is None and "." in item.value:
        m = _ACRONYM_AFTER.match(s, item.end)  # "5.4 SDR", "0.85 SSIM"
    return m.group("metric") if m and item.unit is None else None


def _accept(s: str, item: _Item, head: _Item, anchor: _Item) -> Hit | None:
    """The item as a result hit, if its unit and the words around it make it one."""
    if item.pair:
        return Hit(item.start, item.end, item.num_start, item.value, item.unit, item.metric)
    unit = item.unit
    before = s[max(0, head.start - 30) : head.start]
    if unit is None:
        return _bare_metric(s, item, before)
    if unit == "x":
        factor = _FACTOR_OF.search(s, max(0, item.start - 30), item.start)
        if not (
            factor
            or _MULT_AFTER.match(s, anchor.end)
            or _MULT_BEFORE.search(before)
            or _MULT_SUBJECT.search(s, max(0, item.start - 60), item.start)
        ):
            return None  # "16x the original data", "models 50x larger": a setting
    elif unit == "points":
        if not (_GAIN_BEFORE.search(before) or _MULT_AFTER.match(s, anchor.end)):
            return None
    elif unit == "moves":
        if not re.search(r"\b(?:in|within|only|just)\s+$", before, _I):
            return None
    elif (
        unit not in _RATIO_UNITS
        and item.metric is None
        and not _MEASURE_CUE.search(s, cue_start(s, head.start), head.start)
        and not _MULT_AFTER.match(s, anchor.end)
        and not _COST_AFTER.match(s, anchor.end)
    ):
        return None  # "80 GB GPUs", "trained for 3 hours": setup unless something got cheaper
    end = item.end
    if item.metric and unit is None:
        m = METRIC_AFTER.match(s, item.end)
        end = m.end() if m else end
    return Hit(item.start, end, item.num_start, item.value, unit, item.metric)


def cue_start(s: str, pos: int) -> int:
    """Where the words that make a number before `pos` a result are looked for: 60 characters
    back, or further to the start of its clause, up to 120 ('reduce the processing time for
    one of the largest competitions by 12 days')."""
    clause = max(s.rfind(c, 0, pos) for c in ",;:") + 1
    return max(0, min(pos - 60, max(clause, pos - 120)))


def _bare_metric(s: str, item: _Item, before: str) -> Hit | None:
    """A unitless number tied to a metric: 'BLEU of 32.1', '0.91 AUROC', 'by 2.1' (decimal)."""
    number = item.value.lstrip("+−")
    decimal = "." in number
    after = METRIC_AFTER.match(s, item.num_end)
    if after is None:
        in_terms = _IN_TERMS.match(s, item.num_end)
        after = METRIC_AFTER.match(s, in_terms.end()) if in_terms else None
    if item.metric:  # filled in from the list's tail ("15.68, 15.13 and 1.75 BLEU")
        return Hit(item.start, item.num_end, item.num_start, item.value, None, item.metric)
    out_of = _OUT_OF.match(s, item.num_end)
    if out_of and _COUNT_RESULT_BEFORE.search(s, max(0, item.start - 60), item.start):
        return Hit(item.start, out_of.end(), item.num_start, item.value, None, None)
    if _AS_FEW_BEFORE.search(s, max(0, item.start - 80), item.start) and not _DATA_AFTER.match(
        s, item.num_end
    ):
        # "using as few as 3 discrete memory states and 10 observations": a count reached
        return Hit(item.start, item.num_end, item.num_start, item.value, None, None)
    local = s[max(0, item.start - 40) : item.start]
    named_before = METRIC_BEFORE.search(local)
    if not decimal and not named_before and (len(number) > 3 or int(number.replace(",", "")) > 100):
        return None  # years, sizes and counts (unless a metric names it: "an IS of 148")
    if after is None and decimal:
        after = _ACRONYM_AFTER.match(s, item.num_end)
    ok = bool(named_before) or after is not None
    if not ok and local.rstrip().endswith(":"):
        # "perplexities on two data sets: 57.3 on Penn Treebank and 65.8 on WikiText-2"
        ok = bool(METRIC_CONTEXT.search(s, max(0, item.start - 80), item.start))
    if not ok and _COORDINATED.search(local) and _CHANGE_AFTER.match(s, item.num_end):
        ok = True  # "at most ~59 speedup and ~32 memory saving": a coordinated change
    if not ok and decimal and _CHANGE_OF.search(local):
        ok = True  # "an increase of 0.4 in F-measure"
    if not ok and decimal and _BY_BEFORE.search(local):
        wide = s[max(0, item.start - 80) : item.start]
        ok = bool(VERB_OBJECT.search(wide) or _BEAT.search(wide))
    if not ok:
        return None
    metric = after.group("metric") if after else None
    end = after.end() if after else item.num_end
    return Hit(item.start, end, item.num_start, item.value, None, metric)


def _is_setting(s: str, head: _Item, anchor: _Item) -> bool:
    """'using only 10% of the data', 'at 50% sparsity', 'with 40% noisy labels': the design."""
    before = s[max(0, head.start - 40) : head.start]
    if _SETTING_BEFORE.search(before) or _COMPRESS_TO.search(before):
        return True
    window = s[max(0, head.start - 100) : head.start]
    if _has_any(window.lower(), _WHEN_WORDS) and _WHEN_CHANGED.search(window):
        return True
    if _CONFIDENCE_AFTER.match(s, anchor.end) or _INTERVAL_BEFORE.search(before):
        return True  # "with 95% confidence", "(95% confidence interval 79-83%)": statistics
    if _NEEDED_AFTER.match(s, anchor.end):
        return True  # "a success rate of over 98% is needed for them to ...": a requirement
    if (
        _CONDITION_WHEN.search(before)
        and not (_MULT_AFTER.match(s, anchor.end) or _CHANGE_AFTER.match(s, anchor.end))
        and not _SAVING_WHEN.search(before)
    ):
        return True  # "when the error rates are 10% and 30%": a condition
    if anchor.unit not in {"%", "x", "pp"} or anchor.metric is not None:
        return False  # a measure or metric unit ("at 3.83 MOS") is not a share of the data
    if _cost_share(s, head, anchor, before):
        return False
    after_mult = _MULT_AFTER.match(s, anchor.end) or _CHANGE_AFTER.match(s, anchor.end)
    condition = _CONDITION_BEFORE.search(before)
    if condition and (not after_mult or _SIZE_AFTER.match(s, anchor.end)):
        # "using only 10% of the data", "using a 5 times larger network"; but what a model
        # keeps of a metric is an outcome ("keeps 55% accuracy")
        kept = condition.group(0).lower().startswith("keep") and METRIC_AFTER.match(s, anchor.end)
        return not kept
    setting = _SETTING_AFTER.match(s, anchor.end)
    if setting is None or after_mult or _COMPARED_AFTER.match(s, setting.end()):
        return False  # "uses only 18.2% of parameters compared to the LSTM": a result
    return bool(_CONDITION_CLAUSE.search(before))  # "using 10% of the labels", not "defend 96%"


def _has_any(text: str, words: tuple[str, ...]) -> bool:
    """claim_text.contains_any (which imports this module): a loop, faster than any()."""
    for word in words:  # noqa: SIM110
        if word in text:
            return True
    return False


def _cost_share(s: str, head: _Item, anchor: _Item, before: str) -> bool:
    """'matches ResNet-18 using less than 25% of the parameters': a bounded share of the
    model's cost, after a match or comparison earlier in the sentence."""
    if not (_COST_SHARE_BEFORE.search(before) and _COST_SHARE_AFTER.match(s, anchor.end)):
        return False
    return bool(_MATCH_BEFORE.search(s, 0, head.start))


def _is_baseline(s: str, head: _Item, anchor: _Item) -> bool:
    """A baseline's own number, not the paper's result."""
    before = s[max(0, head.start - 40) : head.start]
    if _BASELINE_BEFORE.search(before):
        # "better than the previous SOTA (29.7% improvement ...)": the gain, not its number;
        # "matches the baseline (76.1% vs 76.3%)": the first of a pair is ours
        gain = _CHANGE_AFTER.match(s, anchor.end) or _MULT_AFTER.match(s, anchor.end)
        ours = gain or _VERSUS_AFTER.match(s, anchor.end)
        return not (ours and before.rstrip().endswith("("))
    if _BY_OTHERS_AFTER.match(s, anchor.end):
        return True
    if (
        not head.pair
        and head.value[0] not in "+−-"
        and "(" in s[max(0, head.start - 10) : head.start]
        and _PAREN_CLOSE.match(s, anchor.end)
        and _PAREN_BASELINE.search(s, max(0, head.start - 70), head.start)
    ):
        return True  # "outperforms X (19.0%)"; a signed gain "(+3.2%)" stays ours
    low = s[max(0, head.start - 150) : head.start].lower()
    if _has_any(low[-90:], _REFERENCE_WORDS) and (
        _REFERENCE_VALUE.search(s, max(0, head.start - 90), head.start)
        or _TRAINED_WITH.search(s, max(0, head.start - 60), head.start)
    ):
        return True
    contrast = (
        _CONTRASTED_WITH.search(s, max(0, head.start - 150), head.start)
        if _has_any(low, _CONTRAST_WORDS)
        else None
    )
    if contrast and not _FIRST_PERSON.search(s, contrast.start(), head.start):
        return True
    window = s[max(0, head.start - 90) : head.start]
    if _BASELINE_NEEDS.search(window) and _BASELINE_VALUE.search(window):
        return True
    clause = s[_clause_start(s, head.start) : head.start].strip()
    if _OTHERS_SUBJECT.match(clause) and not _FIRST_PERSON.search(clause):
        return True  # "the baseline reaches only 3.46%"
    if _CONTRAST_OPENER.match(s) and not _FIRST_PERSON.search(s, 0, head.start):
        return True  # "In comparison, professional lipreaders achieve 86.4% WER"
    low = s.lower()
    if s.isascii() and "while" not in low and "whereas" not in low:
        return False  # no other clause (the loop below would find none, slowly)
    other = None
    for m in _OTHER_CLAUSE.finditer(s, 0, head.start):
        other = m
    if other is None or ";" in s[other.end() : head.start]:
        return False
    if _FIRST_PERSON.search(s, other.start(), head.start):
        return False
    # "while ReLU networks drop to below 1%": another named model is the subject. "while
    # using 50% less memory" or "while the model size shrinks by 50%" stay our results.
    subject = other.group("next")
    first = s.split(None, 1)[0] if s.strip() else ""
    if subject[:1].isupper() and subject not in {first, "It", "This", "These", "Its"}:
        return True
    # "while other pre-training tasks yield an accuracy below 78.7%", "while attacks that
    # blindly target object detection only have up to 25%": other methods are the subject
    # and score the number, in contrast with ours
    return bool(_OTHERS_CONTRAST.match(s, other.end("next") - len(subject), head.start))


def _clause_start(s: str, end: int) -> int:
    """Where the clause ending at `end` starts: after the last , ; : ( or while/whereas/but/and
    before it (the words are only looked for after the last punctuation)."""
    start = max(s.rfind(c, 0, end) for c in _CLAUSE_PUNCT) + 1
    for m in _CLAUSE_WORD.finditer(s, start, end):
        start = m.end()
    return start


def junk_number(s: str, a: int, b: int) -> bool:
    """Numbers that are names, math or addresses: GPT-4, 7B, 2D, 1+1, $p \\in (1, 2]$, URLs."""
    prev = s[a - 1] if a else " "
    before = s[a - 2] if a >= 2 else " "
    nxt = s[b] if b < len(s) else " "
    after = s[b + 1] if b + 1 < len(s) else " "
    if prev in "-+" and before.isalnum():
        return True
    if prev == "<" and not before.isalnum() and (nxt in "%×" or s.startswith(" %", b)):
        return False  # "<4% runtime overhead"
    if prev == "/" and before in "%x×":
        return False  # "2×/1.3× latency/energy saving", "5%/3%": a pair of results
    if prev in "@^_{/=*<\\'’":
        return True
    if nxt in "^_}/=*'’" or (nxt == "+" and after.isdigit()):
        return True
    if nxt.isalpha() and not (nxt in "xX×" and not after.isalnum()) and s[b : b + 2] != "pp":
        return True
    left = s.rfind(" ", 0, a) + 1
    right = s.find(" ", b)
    token = s[left : right if right >= 0 else len(s)]
    return any(mark in token for mark in _JUNK_TOKEN)


def _junk_tail(s: str, b: int) -> bool:
    """The second number of a range is junk only by what follows it ('4-13B', '3-5/8')."""
    nxt = s[b] if b < len(s) else " "
    after = s[b + 1] if b + 1 < len(s) else " "
    if nxt in "^_}/=*'’" or (nxt == "+" and after.isdigit()):
        return True
    return nxt.isalpha() and not (nxt in "xX×" and not after.isalnum()) and s[b : b + 2] != "pp"


def signed(s: str, a: int) -> int:
    """Start of the number including a written sign ("+5.14"), else `a`."""
    if a and s[a - 1] in "+−" and (a < 2 or not s[a - 2].isalnum()):
        return a - 1
    return a


def unit_at(s: str, b: int) -> tuple[str | None, int, str | None]:
    """The unit written right after a number ending at `b`, where it ends, and the metric it
    names when it is one ('bpc')."""
    for pattern, unit in ((_PERCENT, "%"), (_POINTS, "pp"), (_TIMES, "x")):
        m = pattern.match(s, b)
        if m:
            return unit, m.end(), None
    m = _METRIC_UNIT.match(s, b)
    if m:
        return m.group("unit"), m.end(), m.group("unit")
    m = _PLAIN_POINTS.match(s, b)
    if m:
        return "points", m.end(), None
    m = _MEASURE.match(s, b) or _COUNT_RESULT.match(s, b)
    if m:
        return m.group("unit"), m.end(), None
    return None, b, None


def _pair_or_range(s: str, m: re.Match[str]) -> _Item | None:
    """'from A (down) to B' (value B) or a range 'A-B%', '4-13x' (value: the upper end B)."""
    unit, end, metric = unit_at(s, m.end())
    dash = _RANGE.match(s, end)
    if dash and (unit is not None or s[end : dash.end()].strip() in {"-", "–", "−"}):
        second = NUMBER_RE.match(s, dash.end())
        if second and not _junk_tail(s, second.end()):
            unit2, end2, metric2 = unit_at(s, second.end())
            if unit2 in _RATIO_UNITS and unit in {None, unit2}:
                start = signed(s, m.start())
                return _Item(
                    start, second.start(), second.end(), end2, second.group(0), unit2, metric2,
                    True,
                )  # fmt: skip
    between = _BETWEEN.search(s, max(0, m.start() - 20), m.start())
    if between and unit in _RATIO_UNITS:
        second = _AND_SECOND.match(s, end)  # "between 2x and 5x faster": one range, value 5
        if second and not junk_number(s, second.start("n"), second.end("n")):
            unit2, end2, metric2 = unit_at(s, second.end("n"))
            if unit2 == unit:
                return _Item(
                    between.start(), second.start("n"), second.end("n"), end2, second.group("n"),
                    unit, metric2, True,
                )  # fmt: skip
    if not _FROM.search(s, max(0, m.start() - 20), m.start()):
        return None
    aside = _ASIDE.match(s, end)  # "from 76.2% (baseline) to 78.0%"
    to = _TO.match(s, aside.end() if aside else end)
    second = NUMBER_RE.match(s, to.end()) if to else None
    if second is None or junk_number(s, second.start(), second.end()):
        return None
    unit2, end2, metric2 = unit_at(s, second.end())
    unit = unit2 or unit
    if unit is None and metric2 is None and "." in second.group(0):
        acronym = _ACRONYM_AFTER.match(s, second.end())  # "from 3.2 to 5.4 SDR"
        if acronym:
            metric2, end2 = acronym.group("metric"), acronym.end()
    if (
        unit is None
        and metric2 is None
        and not METRIC_CONTEXT.search(s, max(0, m.start() - 80), m.start())
    ):
        return None
    start = s.rfind("from", 0, m.start())
    return _Item(start, second.start(), second.end(), end2, second.group(0), unit, metric2, True)


METRIC_CONTEXT = re.compile(
    r"(?P<head>\b(?:top-\d\s+accuracy|accuracy|accurate(?:ly)?"
    r"|AUROC|AUPRC|AUC|F1(?:[\s-]score)?|BLEU|ROUGE(?:-\w+)?|METEOR|CIDEr|perplexity|PPL|FID"
    r"|mAP|mIoU|IoU|exact match|recall|precision|success rate|win rate|pass@\d+|error rate"
    r"|error|WER|CER|NDCG(?:@\d+)?|MRR|correlation|agreement|reward|latency|throughput"
    r"|memory|speed-?ups?|performance|MSE|MAE|RMSE|score|PSNR|SSIM|return|perplexities"
    r"|Inception\s+Score|Fr[ée]chet\s+Inception\s+Distance"
    r"|accuracies)(?:\s+scores?)?\b)",
    _I,
)
