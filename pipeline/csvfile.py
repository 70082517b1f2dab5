"""The one way this package writes CSV: cells safe to open in a spreadsheet.

- Rows end with CRLF (RFC 4180), so the csv module quotes any cell holding CR or LF and a
  stray carriage return can never split a row.
- A cell that starts like a formula (=, +, -, @, tab, CR) and is not a plain number gets a
  leading apostrophe, so spreadsheets show it as text instead of evaluating it.
- Lists become one cell joined with '; '.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import IO, Any

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    """A CSV cell that spreadsheets show as text: lists joined, formula-like strings quoted."""
    if type(value) is str and not value.startswith(_FORMULA_START):
        return value  # the common case, without the checks below
    if isinstance(value, list | tuple):
        value = "; ".join(str(v) for v in value)
    text = "" if value is None else str(value)
    if text.startswith(_FORMULA_START):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


class SafeCsvWriter:
    """csv.writer with CRLF rows and every cell passed through `csv_cell`."""

    def __init__(self, fh: IO[str]) -> None:
        self._writer = csv.writer(fh, lineterminator="\r\n")

    def writerow(self, values: Iterable[Any]) -> None:
        """Write one row of cells."""
        self._writer.writerow([csv_cell(v) for v in values])
