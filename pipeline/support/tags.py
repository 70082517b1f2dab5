"""Which taxonomy tags the abstract gives some support for.

`supported_tags(abstract, taxonomy)`: the taxonomy tags for which the abstract gives some
support (see `pipeline.offline.tags.support`): a label, synonym or cue phrase of the tag,
the words of its id, a contribution cue, or support for a narrower tag; `unsupported_tags`,
`unconfirmed_tags` (support that does not confirm the tag) and `unsupported_topics` (topic
phrases of a TL;DR) read it. The lexical index of tag phrases and vocabulary, and the
umbrellas, are here too.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pipeline.datafiles import common_words
from pipeline.support.names import name_supported
from pipeline.support.words import (
    _SMALL_WORDS,
    GENERIC_WORDS,
    WORDS,
    _content_lemma_index,
    lemma,
    tokens,
)
from pipeline.taxonomy import Taxonomy

MAX_SUPPORT_CHARS = 20_000  # tags are checked against the start of a longer text


def unsupported_tags(tags: list[str], abstract: str, taxonomy: Taxonomy) -> list[str]:
    """The tags of `tags` the abstract gives no support for (as `supported_tags` decides;
    the offline matcher's phrases first, the lexical checks only when they fall short)."""
    from pipeline.offline.tags import support

    if all(t in support(abstract[:MAX_SUPPORT_CHARS], taxonomy) for t in tags):
        return []
    supported = supported_tags(abstract, taxonomy)
    return [t for t in tags if t not in supported]


def unsupported_topics(text: str, abstract: str, taxonomy: Taxonomy) -> list[str]:
    """The phrases of `text` (a TL;DR) that name a taxonomy topic the abstract neither
    supports nor writes ("named entity recognition" in a TL;DR of a paper that never
    mentions it), each once."""
    from pipeline.offline.tags import topic_phrases

    found = topic_phrases(text, taxonomy)
    if not found:
        return []
    supported = supported_tags(abstract, taxonomy)
    out: list[str] = []
    for tag_id, phrase in found:
        if tag_id not in supported and phrase not in out and not name_supported(phrase, abstract):
            out.append(phrase)
    return out


def unconfirmed_tags(tags: list[str], abstract: str, taxonomy: Taxonomy) -> list[str]:
    """The supported tags of `tags` whose only support is an ambiguous phrase of theirs (the
    offline tagger's `weak` phrases and grounding.yaml's `ambiguous_support_phrases`, e.g.
    "generalization" for generalization-ood, "bias" for fairness, without the cue that
    settles it), scattered words of their vocabulary, or negated mentions ("does not use
    attention"): shown marked, not as fact."""
    from pipeline.offline.tags import negated_only, support

    abstract = abstract[:MAX_SUPPORT_CHARS]
    asserted = support(abstract, taxonomy) - negated_only(abstract, taxonomy)
    if all(t in asserted for t in tags):
        return []  # the offline matcher asserts each (the common case, and every offline answer)
    weak = _weakly_supported(abstract, taxonomy)
    return [t for t in tags if t in weak]


def _lexical_support(abstract: str, taxonomy: Taxonomy) -> frozenset[str]:
    """Tags whose id, label or support phrase stands in the abstract (lemmas in a row, small
    words aside: "models to lossless compression" is no "model compression"), or two
    distinct words of whose vocabulary do."""
    return _lexical(abstract, taxonomy)[0]


def _lexical(abstract: str, taxonomy: Taxonomy) -> tuple[frozenset[str], frozenset[str]]:
    """(`_lexical_support`, the tags of it whose only support there is an ambiguous phrase
    or vocabulary words)."""
    key = (abstract, id(taxonomy))
    hit = _LEXICAL.get(key)
    if hit is not None and hit[0] is taxonomy:
        return hit[1]
    lemmas = _content_lemma_index(abstract)
    phrases, vocabulary = _indexes(taxonomy)
    ambiguous = _weak_phrases(taxonomy)
    found: set[str] = set()
    weak: set[str] = set()
    hits: dict[str, int] = {}
    for word in lemmas.positions:
        for tag_id, phrase in phrases.get(word, ()):
            if tag_id not in found and lemmas.has_run(list(phrase)):
                if phrase in ambiguous.get(tag_id, ()):
                    weak.add(tag_id)
                else:
                    found.add(tag_id)
        for tag_id in vocabulary.get(word, ()):
            hits[tag_id] = hits.get(tag_id, 0) + 1
    # Scattered vocabulary words support a tag, but like an ambiguous phrase do not confirm it.
    weak.update(tag_id for tag_id, n in hits.items() if n >= VOCABULARY_HITS)
    if len(_LEXICAL) >= 64:
        _LEXICAL.pop(next(iter(_LEXICAL)))
    result = (frozenset(found | weak), frozenset(weak - found))
    _LEXICAL[key] = (taxonomy, result)
    return result


_LEXICAL: dict[tuple[str, int], tuple[Taxonomy, tuple[frozenset[str], frozenset[str]]]] = {}


def supported_tags(abstract: str, taxonomy: Taxonomy) -> frozenset[str]:
    """The tags of `taxonomy` the abstract gives some support for (memoized per abstract)."""
    key = (abstract, id(taxonomy))
    found = _SUPPORTED.get(key)
    if found is None or found[0] is not taxonomy:
        if len(_SUPPORTED) >= 64:
            _SUPPORTED.pop(next(iter(_SUPPORTED)))
        found = _SUPPORTED[key] = (taxonomy, _supported_tags(abstract, taxonomy))
    return found[1]


# Keyed by the taxonomy's identity: hashing a pydantic model walks every tag.
_SUPPORTED: dict[tuple[str, int], tuple[Taxonomy, frozenset[str]]] = {}


def _per_taxonomy(build: Any) -> Any:
    """Memoize a function of the taxonomy by its identity (see _SUPPORTED)."""
    cache: dict[int, tuple[Taxonomy, Any]] = {}

    def get(taxonomy: Taxonomy) -> Any:
        hit = cache.get(id(taxonomy))
        if hit is None or hit[0] is not taxonomy:
            if len(cache) >= 8:
                cache.clear()
            hit = cache[id(taxonomy)] = (taxonomy, build(taxonomy))
        return hit[1]

    return get


def _supported_tags(abstract: str, taxonomy: Taxonomy) -> frozenset[str]:
    from pipeline.offline.tags import support  # the offline matcher's phrase index

    abstract = abstract[:MAX_SUPPORT_CHARS]
    return _with_umbrellas(
        set(support(abstract, taxonomy)) | _lexical_support(abstract, taxonomy), taxonomy
    )


def _with_umbrellas(found: set[str], taxonomy: Taxonomy) -> frozenset[str]:
    for umbrella, narrower in _narrower(taxonomy).items():
        if narrower & found:
            found.add(umbrella)
    return frozenset(found)


def _weakly_supported(abstract: str, taxonomy: Taxonomy) -> frozenset[str]:
    """Supported tags whose only support is an ambiguous phrase, vocabulary words or a
    negated mention: no asserted mention for the offline matcher (which reads an ambiguous
    phrase only with its cue), no other lexical phrase, no narrower tag."""
    from pipeline.offline.tags import negated_only, support

    strong, weak = _lexical(abstract, taxonomy)
    negated = negated_only(abstract, taxonomy)
    if not weak and not negated:
        return frozenset()
    asserted = set(support(abstract, taxonomy) - negated) | (strong - weak)
    confirmed = _with_umbrellas(asserted, taxonomy)
    # An umbrella whose only support is a weakly supported narrower tag is as weak.
    umbrellas = _with_umbrellas(set(weak | negated), taxonomy) - confirmed
    return (weak | negated | umbrellas) - confirmed


@_per_taxonomy
def _weak_phrases(taxonomy: Taxonomy) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Tag id -> the lemma sequences of its ambiguous phrases (offline/tag_rules.yaml `weak`
    and grounding.yaml `ambiguous_support_phrases`)."""
    from pipeline.offline.tag_rules import WEAK

    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    for source in (WEAK, WORDS.ambiguous_support_phrases):
        for tag_id, phrases in source.items():
            if tag_id in taxonomy.tags:
                seqs = [_lemma_seq(p) for p in phrases]
                out[tag_id] = (*out.get(tag_id, ()), *(q for q in seqs if q))
    return out


def _lemma_seq(phrase: str) -> tuple[str, ...]:
    return tuple(lemma(t) for t in tokens(re.sub(r"\(.*?\)", " ", phrase)) if t not in _SMALL_WORDS)


@_per_taxonomy
def _indexes(
    taxonomy: Taxonomy,
) -> tuple[dict[str, list[tuple[str, tuple[str, ...]]]], dict[str, list[str]]]:
    """(first lemma -> (tag, phrase) of `_tag_phrases`, lemma -> tags of `_vocabulary`)."""
    phrases: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for tag_id, seqs in _tag_phrases(taxonomy).items():
        for seq in seqs:
            phrases.setdefault(seq[0], []).append((tag_id, seq))
    vocabulary: dict[str, list[str]] = {}
    for tag_id, words in _vocabulary(taxonomy).items():
        for word in words:
            vocabulary.setdefault(word, []).append(tag_id)
    return phrases, vocabulary


@_per_taxonomy
def _tag_phrases(taxonomy: Taxonomy) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Tag id -> the lemma sequences of its id, label (parentheses left out) and
    SUPPORT_PHRASES, small words left out; any of them in the abstract, in a row (small
    words aside), supports the tag."""
    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    for tag_id, tag in taxonomy.tags.items():
        phrases = [tag_id.replace("-", " "), tag.label, *SUPPORT_PHRASES.get(tag_id, ())]
        seqs = []
        for phrase in phrases:
            words = _lemma_seq(phrase)
            if words and words not in seqs:
                seqs.append(words)
        out[tag_id] = tuple(seqs)
    return out


# Phrasings that support a tag beyond the taxonomy's synonyms and the offline matcher's
# rules. Matched like labels (lemmas, in order).
SUPPORT_PHRASES = WORDS.support_phrases

# One vocabulary word of a tag is too little: "vulnerability" alone does not make a paper
# about adversarial robustness. Two distinct ones are support, for every facet.
VOCABULARY_HITS = 2


MAX_TAGS_PER_WORD = 6  # a vocabulary word shared by more tags says too little
_VOCABULARY_STOP = WORDS.vocabulary_stop


@_per_taxonomy
def _vocabulary(taxonomy: Taxonomy) -> dict[str, frozenset[str]]:
    """Tag id -> distinctive word lemmas of its synonyms and definition (the part before any
    ';', which sends the rest to neighbour tags): not the words of its own id or label, which
    support it only together, and not words common in ML abstracts."""
    raw: dict[str, set[str]] = {}
    for tag_id, tag in taxonomy.tags.items():
        definition = (tag.definition or "").split(";")[0]
        definition = re.split(r"\b(?:goes|go) to\b", definition)[0]
        text = " ".join([tag_id.replace("-", " "), tag.label, *tag.synonyms, definition])
        raw[tag_id] = {
            lemma(t)
            for t in tokens(text)
            if len(t) > 2
            and not t[0].isdigit()
            and t not in _VOCABULARY_STOP
            and t not in GENERIC_WORDS
        }
    counts: dict[str, int] = {}
    for words in raw.values():
        for w in words:
            counts[w] = counts.get(w, 0) + 1
    common = _common_lemmas()
    out = {}
    for tag_id, words in raw.items():
        # The tag's own name counts as the whole phrase only ("time series", not "series").
        name = {
            lemma(t) for t in tokens(f"{tag_id.replace('-', ' ')} {taxonomy.tags[tag_id].label}")
        }
        out[tag_id] = frozenset(
            w for w in words if counts[w] <= MAX_TAGS_PER_WORD and w not in common and w not in name
        )
    return out


@lru_cache(maxsize=1)
def _common_lemmas() -> frozenset[str]:
    """Lemmas of the words found in more than 2% of ML abstracts (pipeline/assign/
    common_words.txt): one of them alone says nothing about a paper's topic."""
    return frozenset(lemma(w) for w in common_words())


@_per_taxonomy
def _narrower(taxonomy: Taxonomy) -> dict[str, frozenset[str]]:
    """Umbrella tag -> tags whose definition sends part of it to them, or that extend its id
    ("offline-rl" under "reinforcement-learning", "vision-transformers" under "transformers")."""
    out: dict[str, set[str]] = {}
    ids = list(taxonomy.tags)
    for umbrella in ids:
        for other in ids:
            if (
                other != umbrella
                and other.endswith("-" + umbrella.split("-")[-1])
                and set(umbrella.split("-")) <= set(other.split("-"))
            ):
                out.setdefault(umbrella, set()).add(other)
    for umbrella, narrower in _UMBRELLAS.items():
        if umbrella in taxonomy.tags:
            out.setdefault(umbrella, set()).update(t for t in narrower if t in taxonomy.tags)
    return {k: frozenset(v) for k, v in out.items()}


_UMBRELLAS = WORDS.umbrellas
