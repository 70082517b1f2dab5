"""Word lists of the offline claims extractor, read from prompts/offline/claim_words.yaml (what
each list is for is written there); the extractor's patterns stay in its code."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from pipeline.datafiles import DataFile, WordSet, load_data

FILE = "offline/claim_words.yaml"


class ClaimWords(DataFile):
    """The format of prompts/offline/claim_words.yaml."""

    verbish: WordSet
    bad_phrase_start: WordSet
    metric_stop: WordSet
    negation: WordSet
    quantity_of: WordSet
    model_nouns: WordSet
    change_qualifiers: WordSet
    articles: WordSet
    plurals: dict[str, str]
    theory: tuple[Annotated[str, Field(min_length=1)], ...]
    adjective_metrics: dict[str, str]


WORDS = load_data(FILE, ClaimWords)
