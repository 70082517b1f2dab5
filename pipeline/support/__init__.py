"""What in an abstract supports a name, a number or a tag that a model put in an answer.

Everything a reader sees is checked against the abstract (pipeline/stages/ calls these). One
module per concern; this package re-exports the public names of each:

- names.py: `name_supported(name, abstract)`: a dataset, baseline, keyword or a name in a
  TL;DR occurs in the abstract, tolerant of presentation only (case, typography, hyphens
  and spaces, a plural "s", lists, generic words, abbreviation forms; every number must be
  a number of the abstract: the rules are in names.py's docstring); `keyword_supported`.
  `name_tokens(text)`: the acronyms and capitalized names of a sentence (what a TL;DR must
  not invent); `name_runs(text)`: runs of them written together, each one name
  ("Value Iteration Networks"); `unsupported_names(text, abstract)`: those the abstract
  does not write.
- numbers.py: `foreign_numbers(text, allowed)`: numbers of `text` missing from `allowed`,
  with digits folded first (superscripts, full-width digits) and digits glued to a word
  counted; the quantities, units and number words of a TL;DR or a statement
  (`ungrounded_quantities`, `foreign_number_words`, `ungrounded_numbers`).
- statements.py: `statement_problems(...)`: what a claim's statement shows that its
  evidence or abstract does not; `comparison_widened(abstract, span)`: evidence grown to
  the comparison of its sentence when a statement claims one the quote left out; the
  superiority, parity and antonym checks and `new_words` it reads.
- tags.py: `supported_tags(abstract, taxonomy)`: the taxonomy tags for which the abstract
  gives some support (see `pipeline.offline.tags.support`): a label, synonym or cue phrase
  of the tag, the words of its id, a contribution cue, or support for a narrower tag;
  `unsupported_tags`, `unconfirmed_tags`, `unsupported_topics`.
- words.py: what the others share: grounding.yaml's words (`WORDS`), `tokens`, `unmarked`,
  `lemma`, an abstract's index (`abstract_index`) and `numbers_and_names`.
"""

from __future__ import annotations

from pipeline.support.names import (
    ABBREVIATIONS,
    COMPOUND_GAP,
    MIN_UNSPACED_CHARS,
    keyword_supported,
    name_runs,
    name_supported,
    name_tokens,
    unsupported_names,
    unwritten_acronyms,
)
from pipeline.support.numbers import (
    NUMBER_WORDS,
    foreign_number_words,
    foreign_numbers,
    spelled_numbers,
    ungrounded_numbers,
    ungrounded_quantities,
)
from pipeline.support.statements import (
    ANTONYMS,
    COMPARISON_WORDS,
    MAX_NEW_WORDS,
    PARITY_REACH,
    PARITY_WORDS,
    SUPERIORITY_WORDS,
    comparison_widened,
    contradictions,
    new_words,
    statement_problems,
    unstated_judgements,
    unstated_quality,
    unstated_superiority,
    unstated_universals,
)
from pipeline.support.tags import (
    MAX_SUPPORT_CHARS,
    MAX_TAGS_PER_WORD,
    SUPPORT_PHRASES,
    VOCABULARY_HITS,
    supported_tags,
    unconfirmed_tags,
    unsupported_tags,
    unsupported_topics,
)
from pipeline.support.words import (
    DATA_FILE,
    GENERIC_WORDS,
    WORDS,
    AbstractIndex,
    GroundingWords,
    abstract_index,
    lemma,
    numbers_and_names,
    tokens,
    unmarked,
)

__all__ = [
    "ABBREVIATIONS",
    "ANTONYMS",
    "COMPARISON_WORDS",
    "COMPOUND_GAP",
    "DATA_FILE",
    "GENERIC_WORDS",
    "MAX_NEW_WORDS",
    "MAX_SUPPORT_CHARS",
    "MAX_TAGS_PER_WORD",
    "MIN_UNSPACED_CHARS",
    "NUMBER_WORDS",
    "PARITY_REACH",
    "PARITY_WORDS",
    "SUPERIORITY_WORDS",
    "SUPPORT_PHRASES",
    "VOCABULARY_HITS",
    "WORDS",
    "AbstractIndex",
    "GroundingWords",
    "abstract_index",
    "comparison_widened",
    "contradictions",
    "foreign_number_words",
    "foreign_numbers",
    "keyword_supported",
    "lemma",
    "name_runs",
    "name_supported",
    "name_tokens",
    "new_words",
    "numbers_and_names",
    "spelled_numbers",
    "statement_problems",
    "supported_tags",
    "tokens",
    "unconfirmed_tags",
    "ungrounded_numbers",
    "ungrounded_quantities",
    "unmarked",
    "unstated_judgements",
    "unstated_quality",
    "unstated_superiority",
    "unstated_universals",
    "unsupported_names",
    "unsupported_tags",
    "unsupported_topics",
    "unwritten_acronyms",
]
