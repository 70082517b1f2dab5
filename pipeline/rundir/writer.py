"""The one writer of a run folder: summaries.jsonl, errors.jsonl, summaries.csv (streamed, a
line per record, flushed) and manifest.json (atomic, at the start and at the end)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pipeline.csvfile import SafeCsvWriter
from pipeline.jsonl import JsonlWriter
from pipeline.rundir.models import ErrorRecord, Manifest, SummaryRecord
from pipeline.stages import StageSpec, specs

SUMMARIES = "summaries.jsonl"
ERRORS = "errors.jsonl"
CSV = "summaries.csv"
MANIFEST = "manifest.json"
MAX_RAW_CHARS = 20_000
CSV_FLUSH_EVERY = 64  # summaries.jsonl is flushed per record; its CSV view may lag a little


def csv_columns(stage_specs: tuple[StageSpec, ...]) -> list[str]:
    """summaries.csv header: identity, each stage's own columns, then each stage's status.

    The user's id (`paper_id`, from the input) and title lead; `id` is the content hash.
    """
    columns = ["paper_id", "number", "title", "id", "sources"]
    for spec in stage_specs:
        columns.extend(spec.csv_columns)
    columns.extend(f"{spec.name}_status" for spec in stage_specs)
    return columns


def csv_row(record: SummaryRecord, stage_specs: tuple[StageSpec, ...]) -> list[Any]:
    """A flat, spreadsheet-friendly view of one summary record (cells in `csv_columns` order)."""
    ids = list(dict.fromkeys(s.paper_id for s in record.sources if s.paper_id))
    row: list[Any] = [
        ids,
        next((s.number for s in record.sources if s.number), ""),
        record.title or "",
        record.id,
        "; ".join(f"{s.file}#{s.position}" for s in record.sources),
    ]
    for spec in stage_specs:
        values = spec.csv(record.output(spec.name))
        row.extend(values.get(column, "") for column in spec.csv_columns)
    for spec in stage_specs:
        result = record.stages.get(spec.name)
        row.append(result.status if result is not None else "skipped")
    return row


class RunWriter:
    """Streams records into the run folder as they finish; every line flushed."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self._specs = specs()
        self._summaries = JsonlWriter(open(run_dir / SUMMARIES, "w", encoding="utf-8"))  # noqa: SIM115
        self._errors = JsonlWriter(open(run_dir / ERRORS, "w", encoding="utf-8"))  # noqa: SIM115
        # utf-8-sig so spreadsheet programs detect the encoding of non-ASCII text.
        self._csv_file = open(run_dir / CSV, "w", encoding="utf-8-sig", newline="")  # noqa: SIM115
        self._csv = SafeCsvWriter(self._csv_file)
        self._csv.writerow(csv_columns(self._specs))
        self._rows = 0

    def write_record(self, record: SummaryRecord) -> None:
        """Append one summary record (and its CSV row)."""
        self._summaries.write(record)
        self._csv.writerow(csv_row(record, self._specs))
        self._rows += 1
        if self._rows % CSV_FLUSH_EVERY == 0:
            self._csv_file.flush()

    def write_error(self, error: ErrorRecord) -> None:
        """Append one failure record (its raw answer cut at MAX_RAW_CHARS)."""
        if error.raw is not None and len(error.raw) > MAX_RAW_CHARS:
            error = error.model_copy(update={"raw": error.raw[:MAX_RAW_CHARS] + "…[truncated]"})
        self._errors.write(error)

    def write_manifest(self, manifest: Manifest) -> Path:
        """Write manifest.json atomically (a reader never sees half of it)."""
        path = self.dir / MANIFEST
        tmp = path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
        tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    def close(self) -> None:
        """Close every file."""
        self._summaries.close()
        self._errors.close()
        self._csv_file.close()
