"""Word lists of the offline TL;DR, read from prompts/offline/tldr_words.yaml (what each list
is for is written there); its patterns stay in its code."""

from __future__ import annotations

from pipeline.datafiles import DataFile, WordSet, load_data

FILE = "offline/tldr_words.yaml"


class TldrWords(DataFile):
    """The format of prompts/offline/tldr_words.yaml."""

    greek_letters: dict[str, str]
    latex_symbols: dict[str, str]
    gerunds: dict[str, str]
    dangling: WordSet
    object_verbs: WordSet
    modal_before: WordSet
    tough: WordSet
    needs_complement: WordSet
    break_before: WordSet
    safe_break: WordSet
    feature_stop: WordSet


WORDS = load_data(FILE, TldrWords)
