"""The run folder: typed records (`models`), their one writer and their one reader."""

from pipeline.rundir.models import (
    ErrorRecord,
    Manifest,
    Provenance,
    SourceRef,
    StageError,
    StageResult,
    SummaryRecord,
)
from pipeline.rundir.paper import Paper
from pipeline.rundir.reader import RunReader
from pipeline.rundir.writer import CSV, ERRORS, MANIFEST, SUMMARIES, RunWriter

__all__ = [
    "CSV",
    "ERRORS",
    "MANIFEST",
    "SUMMARIES",
    "ErrorRecord",
    "Manifest",
    "Paper",
    "Provenance",
    "RunReader",
    "RunWriter",
    "SourceRef",
    "StageError",
    "StageResult",
    "SummaryRecord",
]
