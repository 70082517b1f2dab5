"""Contribution-type cues of the offline tagger, read from prompts/offline/contribution_cues.yaml
(what each kind of cue means is written there)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from pipeline.datafiles import DataFile, WordSet, load_data

FILE = "offline/contribution_cues.yaml"

_Slot = Annotated[str, Field(pattern=r"^[^|\s]+(?:\|[^|\s]+)*$")]  # "a|b": a or b


class SequenceCue(DataFile):
    """Consecutive tokens, each in its slot; `once`: counted once however often it fires."""

    tag: str
    words: tuple[_Slot, ...] = Field(min_length=1)
    weight: float
    once: bool = False


class WindowCue(DataFile):
    """One of `targets` within `window` tokens after one of `triggers`."""

    tag: str
    triggers: WordSet
    targets: WordSet
    window: int = Field(ge=1)
    weight: float


class CjkCue(DataFile):
    """Substrings of the raw text (Chinese abstracts)."""

    tag: str
    substrings: tuple[Annotated[str, Field(min_length=1)], ...]
    weight: float


class ContributionCues(DataFile):
    """The format of prompts/offline/contribution_cues.yaml."""

    sequence: tuple[SequenceCue, ...]
    window: tuple[WindowCue, ...]
    cjk: tuple[CjkCue, ...]


CUES = load_data(FILE, ContributionCues)
