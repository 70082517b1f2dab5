"""The run folder: summaries.jsonl, errors.jsonl, summaries.csv (streamed) and manifest.json."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

SUMMARIES = "summaries.jsonl"
ERRORS = "errors.jsonl"
CSV = "summaries.csv"
MANIFEST = "manifest.json"
MAX_RAW_CHARS = 20_000

CSV_COLUMNS = [
    "id",
    "title",
    "sources",
    "tldr",
    "tags",
    "keywords",
    "n_claims",
    "claims",
    "tldr_status",
    "tags_status",
    "claims_status",
]


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> str:
    """A CSV cell that spreadsheets show as text: lists joined, formula-like strings quoted."""
    if isinstance(value, list | tuple):
        value = "; ".join(str(v) for v in value)
    text = "" if value is None else str(value)
    if text.startswith(_FORMULA_START):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def claim_text(claim: dict[str, Any]) -> str:
    """One claim as a short line: 'AUROC +5.14 % on X vs Y' or its statement if qualitative."""
    if claim.get("kind") == "quantitative":
        parts = [claim.get("metric") or "value", claim.get("value") or ""]
        if claim.get("unit"):
            parts.append(claim["unit"])
        text = " ".join(p for p in parts if p)
        if claim.get("dataset"):
            text += f" on {claim['dataset']}"
        if claim.get("comparison"):
            text += f" vs {claim['comparison']}"
        return text
    return claim.get("statement") or claim.get("evidence", "")


def csv_row(record: dict[str, Any]) -> dict[str, Any]:
    """A flat, spreadsheet-friendly view of one summary record."""
    stages = record["stages"]

    def output(name: str) -> dict[str, Any]:
        stage = stages.get(name) or {}
        return stage.get("output") or {}

    claims = output("claims").get("claims", [])
    return {
        "id": record["id"],
        "title": record.get("title") or "",
        "sources": "; ".join(f"{s['file']}#{s['position']}" for s in record["sources"]),
        "tldr": output("tldr").get("tldr", ""),
        "tags": "; ".join(output("tags").get("tags", [])),
        "keywords": "; ".join(output("tags").get("keywords", [])),
        "n_claims": len(claims) if "claims" in stages else "",
        "claims": " | ".join(claim_text(c) for c in claims),
        **{
            f"{name}_status": (stages[name]["status"] if name in stages else "skipped")
            for name in ("tldr", "tags", "claims")
        },
    }


# json.dumps(record, ensure_ascii=False) without building an encoder per record.
_encode_line = json.JSONEncoder(ensure_ascii=False).encode


class RunWriter:
    """Streams records into the run folder as they finish; every line flushed."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self._summaries = open(run_dir / SUMMARIES, "w", encoding="utf-8")  # noqa: SIM115
        self._errors = open(run_dir / ERRORS, "w", encoding="utf-8")  # noqa: SIM115
        # utf-8-sig so spreadsheet programs detect the encoding of non-ASCII text.
        self._csv_file = open(run_dir / CSV, "w", encoding="utf-8-sig", newline="")  # noqa: SIM115
        self._csv = csv.DictWriter(self._csv_file, fieldnames=CSV_COLUMNS)
        self._csv.writeheader()
        self.records = 0
        self.errors = 0

    def write_record(self, record: dict[str, Any]) -> None:
        """Append one summary record (and its CSV row)."""
        self._summaries.write(_encode_line(record) + "\n")
        self._summaries.flush()
        row = csv_row(record)
        # The DictWriter's own writer, fed in column order (skips its per-row key checks).
        self._csv.writer.writerow([csv_safe(row.get(name, "")) for name in CSV_COLUMNS])
        self._csv_file.flush()
        self.records += 1

    def write_error(self, error: dict[str, Any]) -> None:
        """Append one failure record."""
        raw = error.get("raw")
        if isinstance(raw, str) and len(raw) > MAX_RAW_CHARS:
            error = {**error, "raw": raw[:MAX_RAW_CHARS] + "…[truncated]"}
        self._errors.write(json.dumps(error, ensure_ascii=False) + "\n")
        self._errors.flush()
        self.errors += 1

    def write_manifest(self, manifest: dict[str, Any]) -> Path:
        """Write manifest.json atomically (a reader never sees half of it)."""
        path = self.dir / MANIFEST
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    def close(self) -> None:
        """Close every file."""
        for handle in (self._summaries, self._errors, self._csv_file):
            handle.close()
