"""The one reader of a run folder: every command that reads one goes through `RunReader`.

Errors: a folder without summaries.jsonl, a record of the wrong shape or a manifest that is
not a manifest is an `InputError` naming the file (and line); a torn *last* line of a JSONL
file (a run killed mid-write) is skipped with a warning. A run that did not finish
(interrupted, fatal, or killed while still "running") is readable; `incomplete` says why it
holds fewer abstracts than its inputs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from pipeline.errors import InputError
from pipeline.jsonl import iter_jsonl
from pipeline.rundir.models import ErrorRecord, Manifest, SummaryRecord
from pipeline.rundir.paper import Paper
from pipeline.rundir.writer import ERRORS, MANIFEST, SUMMARIES

log = logging.getLogger(__name__)


class RunReader:
    """A run folder written by `digest run`, read back as typed records."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = Path(run_dir)
        if not (self.dir / SUMMARIES).is_file():
            raise InputError(
                f"{self.dir} is not a run folder (no {SUMMARIES}); run `digest run` first"
            )

    @cached_property
    def manifest(self) -> Manifest | None:
        """manifest.json, or None when the run wrote none (killed before its first flush)."""
        path = self.dir / MANIFEST
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
        try:
            return Manifest.model_validate_json(text)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "manifest"
            raise InputError(
                f"{path}: not a manifest of this tool ({where}: {err['msg']})"
            ) from exc

    @property
    def incomplete(self) -> str | None:
        """Why the run holds fewer abstracts than its inputs, or None when it finished."""
        manifest = self.manifest
        if manifest is None:
            return "it has no manifest.json (the run was killed before it finished)"
        if manifest.status == "running":
            return "its manifest still says 'running' (the run was killed or is still going)"
        if manifest.status == "interrupted":
            return "it was interrupted; rerun the same command to finish it"
        if manifest.status == "fatal":
            return f"it stopped on an error: {manifest.fatal_error}"
        return None

    def records(self) -> Iterator[SummaryRecord]:
        """Every summary record, in file order."""
        for _, record in iter_jsonl(
            self.dir / SUMMARIES, loads=SummaryRecord.model_validate_json, torn_tail_ok=True
        ):
            yield record

    def errors(self) -> Iterator[ErrorRecord]:
        """Every failure record, in file order."""
        path = self.dir / ERRORS
        if not path.is_file():
            return
        for _, error in iter_jsonl(path, loads=ErrorRecord.model_validate_json, torn_tail_ok=True):
            yield error

    def papers(self) -> Iterator[Paper]:
        """The flat view of every record."""
        for record in self.records():
            yield Paper.from_record(record)

    def warn_if_incomplete(self) -> None:
        """Log one warning when the run did not finish, so no view passes it off as complete."""
        reason = self.incomplete
        if reason:
            log.warning("%s is an incomplete run: %s", self.dir, reason)
