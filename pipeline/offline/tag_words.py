"""Word lists of the offline tagger, read from prompts/offline/tag_words.yaml (what each list
is for is written there)."""

from __future__ import annotations

from pipeline.datafiles import DataFile, WordSet, load_data

FILE = "offline/tag_words.yaml"


class TagWords(DataFile):
    """The format of prompts/offline/tag_words.yaml."""

    negators: WordSet
    negation_fillers: WordSet
    generic_tail: WordSet
    not_sentence_end: WordSet
    stop_words: WordSet
    generic_acronyms: WordSet
    not_content: WordSet
    verbs: WordSet
    after_phrase: WordSet
    gerund_before: WordSet


WORDS = load_data(FILE, TagWords)
