"""Context rules of the offline tagger, read from prompts/offline/tag_rules.yaml (what each
table means is written there): which taxonomy phrases need a second cue, which neighbouring
words cancel a mention, which tags are broad. Offline-only data; the LLM prompt never sees it.

- WEAK, CUES, FALLBACK: ambiguous phrases, the cues that make them mean their tag, and the
  tag a phrase means without them;
- FAMILY_SUFFIXES: a model-family abbreviation ending a name ("CycleGAN") -> tag id;
- PASSING_BEFORE, SUFFIX_BLOCKERS, EXAMPLE_BEFORE: contrasted ("unlike GANs"),
  hyphen-qualified ("DNA-like") and example ("such as X") mentions;
- UMBRELLA_OF, NARROWER: umbrella tags and their narrower tags;
- EXTRA_SYNONYMS: phrasings of a tag that taxonomy.yaml does not list;
- BROAD_TAGS: tags whose mentions count less.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from pipeline.datafiles import DataFile, Words, WordSet, load_data

FILE = "offline/tag_rules.yaml"

EXAMPLE_REACH = 6  # tokens between an example word and the mention, in one sentence

_Phrases = tuple[Annotated[str, Field(min_length=1)], ...]


class Fallback(DataFile):
    """A weak phrase of `tag` that means `means` when the tag's cues are absent."""

    tag: str
    phrase: str
    means: str


class TagRules(DataFile):
    """The format of prompts/offline/tag_rules.yaml."""

    broad_tags: dict[str, Annotated[float, Field(gt=0, le=1)]]
    weak: dict[str, _Phrases]
    cues: dict[str, _Phrases]
    fallback: tuple[Fallback, ...]
    family_suffixes: dict[str, str]
    passing_before: tuple[Words, ...]
    suffix_blockers: WordSet
    example_before: tuple[Words, ...]
    compared_before: tuple[Words, ...]
    quantity_before_than: WordSet
    umbrella_of: dict[str, frozenset[str]]
    narrower: dict[str, frozenset[str]]
    extra_synonyms: dict[str, _Phrases]

    @model_validator(mode="after")
    def _fallbacks_are_weak(self) -> TagRules:
        for rule in self.fallback:
            if rule.phrase not in self.weak.get(rule.tag, ()):
                raise ValueError(f"fallback {rule.phrase!r} is no weak phrase of {rule.tag!r}")
        return self


RULES = load_data(FILE, TagRules)

BROAD_TAGS = RULES.broad_tags
WEAK = RULES.weak
CUES = RULES.cues
FALLBACK: dict[tuple[str, str], str] = {(r.tag, r.phrase): r.means for r in RULES.fallback}
FAMILY_SUFFIXES = RULES.family_suffixes
PASSING_BEFORE = RULES.passing_before
SUFFIX_BLOCKERS = RULES.suffix_blockers
EXAMPLE_BEFORE = RULES.example_before
COMPARED_BEFORE = RULES.compared_before
QUANTITY_BEFORE_THAN = RULES.quantity_before_than
UMBRELLA_OF = RULES.umbrella_of
NARROWER = RULES.narrower
EXTRA_SYNONYMS = RULES.extra_synonyms
