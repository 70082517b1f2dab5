"""Input formats beyond plain text, and the user's identity of each paper.

`pipeline/ingest.py` reads `.txt`, `.jsonl` and `.csv`; this module adds `.json` (an array
of rows or OpenReview notes, or an object holding one) and `.tsv`, and turns every row of
every format into (abstract, title, `PaperRef`) the same way:

- OpenReview API v2 notes (`{"id", "number", "forum", "content": {"title": {"value": ...}}}`)
  and the older flat v1 notes (`"content": {"title": ...}`) are flattened first;
- column names are matched case-insensitively, with the common spellings of exports:
  `Title`, `Abstract`, `Paper ID` / `Submission ID` / `paper_id` / `id`, `Number` /
  `Submission Number`, `Authors`, `Author IDs` / `authorids` / `Author Emails`, `Keywords`,
  `Venue`, `Affiliations` / `Institutions`, `Forum` (see `_ALIASES`);
- list fields (authors, keywords, ...) may be JSON lists or one cell separated by `;`
  (or `,` when there is no `;`).

`PaperRef` is what the run folder keeps of the user's identity (SourceRef in
summaries.jsonl): views lead with it, the content hash stays the stable key.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pipeline.errors import InputError
from pipeline.repair import replace_surrogates

# A note id as OpenReview makes them (e.g. "rJlnfaNYvB", "H1eUz1rKPr"): 8-14 URL-safe
# characters with upper and lower case letters. Only these get a forum link by default.
OPENREVIEW_ID = re.compile(r"(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{8,14}")

# canonical field -> accepted column names (lowercased, spaces/underscores/dashes removed)
_ALIASES: dict[str, tuple[str, ...]] = {
    "abstract": ("abstract", "paperabstract", "submissionabstract"),
    "title": ("title", "papertitle", "submissiontitle"),
    "id": (
        "id",
        "paperid",
        "submissionid",
        "openreviewid",
        "noteid",
        "paper",
        "submission",
    ),
    "number": ("number", "papernumber", "submissionnumber", "paperno", "no"),
    "forum": ("forum", "forumid"),
    "authors": ("authors", "authornames", "author"),
    "authorids": ("authorids", "authorid", "authoremails", "emails", "authoremail"),
    "keywords": ("keywords", "authorkeywords", "keyword"),
    "venue": ("venue", "track"),
    "affiliations": ("affiliations", "institutions", "authoraffiliations", "affiliation"),
}
_CANONICAL = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}
_KEY_NOISE = re.compile(r"[\s_\-.]+")
# A JSON escape of a UTF-16 surrogate (a pair is one character; a lone one is not writable).
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_WRAPPERS = ("notes", "submissions", "papers", "data", "items", "rows")


@dataclass(frozen=True, slots=True)
class PaperRef:
    """The user's identity of a paper as the input gives it: id, number, authors, venue."""

    id: str | None = None
    number: str | None = None
    forum: str | None = None  # OpenReview forum id (a note's `forum`, else its id)
    authors: tuple[str, ...] = ()
    authorids: tuple[str, ...] = ()  # OpenReview profile ids (~Name1) or emails
    keywords: tuple[str, ...] = ()
    venue: str | None = None
    affiliations: tuple[str, ...] = ()  # institutions or email domains of the authors

    def __bool__(self) -> bool:
        return any(
            (self.id, self.number, self.forum, self.authors, self.authorids, self.keywords)
        ) or bool(self.venue or self.affiliations)


Row = tuple[str, str | None, PaperRef | None]


def _key(name: object) -> str:
    return _KEY_NOISE.sub("", str(name or "").strip().lower())


def _unwrap(value: Any) -> Any:
    """An OpenReview v2 field `{"value": x}` is x; anything else is itself."""
    if isinstance(value, dict) and "value" in value:
        return value["value"]
    return value


def flatten_note(row: Any) -> Any:
    """An OpenReview note (v2 `content.<field>.value` or v1 `content.<field>`) as one flat row.

    Top-level fields (id, number, forum) are kept; content fields win over top-level ones
    with the same name. A row that is not a note (or not a dict) is returned unchanged.
    """
    if not isinstance(row, dict) or not isinstance(row.get("content"), dict):
        return row
    flat = {k: v for k, v in row.items() if k != "content"}
    for name, value in row["content"].items():
        flat[name] = _unwrap(value)
    flat.setdefault("forum", row.get("forum") or row.get("id"))
    return flat


def canonical_row(row: Any) -> Any:
    """A row with OpenReview notes flattened and known column names mapped to canonical ones.

    Unknown columns are kept under their lowercased name; for a canonical field the first
    non-empty alias wins. Non-dict rows are returned unchanged (the caller reports them).
    """
    row = flatten_note(row)
    if not isinstance(row, dict):
        return row
    names = _canonical_names(tuple(row))
    if names is None:  # every column already has its canonical name (the common case)
        return row
    out: dict[str, Any] = {}
    for canonical, value in zip(names, row.values(), strict=True):
        if canonical in out and out[canonical] not in (None, "", []):
            continue
        out[canonical] = value
    return out


@functools.lru_cache(maxsize=1024)
def _canonical_names(columns: tuple[Any, ...]) -> tuple[str, ...] | None:
    # The rows of one file share their columns: their mapping is worked out once.
    names = tuple(_CANONICAL.get(_key(n), str(n).strip().lower()) for n in columns)
    if names == columns and len(set(names)) == len(names):
        return None
    return names


def _text(value: Any) -> str | None:
    value = _unwrap(value)
    if value is None or isinstance(value, dict | list | tuple):
        return None
    text = " ".join(str(value).split())
    return text or None


def _items(value: Any) -> tuple[str, ...]:
    value = _unwrap(value)
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        parts = [_text(v) for v in value]
    else:
        text = str(value)
        sep = ";" if ";" in text else ("|" if "|" in text else ",")
        parts = [_text(p) for p in text.split(sep)]
    return tuple(p for p in parts if p)


def paper_ref(row: Mapping[str, Any]) -> PaperRef | None:
    """The identity fields of a canonical row, or None when it has none."""
    number = _text(row.get("number"))
    paper_id = _text(row.get("id"))
    forum = _text(row.get("forum"))
    if forum is None and paper_id is not None and OPENREVIEW_ID.fullmatch(paper_id):
        forum = paper_id
    ref = PaperRef(
        id=paper_id,
        number=number,
        forum=forum,
        authors=_items(row.get("authors")),
        authorids=_items(row.get("authorids")),
        keywords=_items(row.get("keywords")),
        venue=_text(row.get("venue")),
        affiliations=_items(row.get("affiliations")),
    )
    return ref if ref else None


def row_fields(row: dict) -> Row:
    """(abstract, title, identity) of one row of any format (see the module docstring)."""
    return canonical_fields(canonical_row(row))


def canonical_fields(row: dict) -> Row:
    """(abstract, title, identity) of a row `canonical_row` gave."""
    return (abstract_of(row), _text(row.get("title")), paper_ref(row))


def abstract_of(row: dict) -> str:
    """The abstract of a row `canonical_row` gave ('' when it has none)."""
    abstract = _unwrap(row.get("abstract"))
    return abstract if isinstance(abstract, str) else ""


def json_value(text: str, where: str) -> Any:
    """One JSON document of an input file, a lone UTF-16 surrogate escape (`"\\ud800"`) in
    a string read as U+FFFD (pipeline/ingest.py warns about them); invalid JSON, nesting too
    deep for Python or an integer past Python's digit limit is an InputError starting with
    `where` (file:line)."""
    try:
        value = json.loads(text)
        if SURROGATE_ESCAPE.search(text):
            value, _ = replace_surrogates(value)
        return value
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: invalid JSON ({exc.msg})") from exc
    except RecursionError as exc:
        raise InputError(f"{where}: invalid JSON (nested too deeply)") from exc
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InputError(f"{where}: invalid JSON ({str(exc).split(';')[0]})") from exc


def _json_rows(path: Path, f: TextIO) -> Iterator[Row]:
    """`.json`: an array of rows/notes, an object wrapping one (`notes`, ...), or one row."""
    text = f.read()
    try:
        data: Any = json_value(text, str(path))
    except InputError as exc:
        cause = exc.__cause__
        if not isinstance(cause, json.JSONDecodeError):
            raise
        if cause.msg != "Extra data":
            raise InputError(
                f"{path}:{cause.lineno}: invalid JSON ({cause.msg}, column {cause.colno})"
            ) from cause
        data = _json_lines(path, text)  # one JSON value per line, named .json
    if isinstance(data, dict):
        wrapped = next((data[k] for k in _WRAPPERS if isinstance(data.get(k), list)), None)
        data = wrapped if wrapped is not None else [data]
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array of papers (or an object with 'notes')")
    for n, item in enumerate(data, 1):
        row = canonical_row(item)
        if not isinstance(row, dict) or "abstract" not in row:
            raise InputError(f"{path}: item {n}: expected an object with an 'abstract' field")
        abstract = _unwrap(row["abstract"])
        if abstract is not None and not isinstance(abstract, str):
            raise InputError(
                f"{path}: item {n}: 'abstract' is a {type(abstract).__name__}, not text"
            )
        yield canonical_fields(row)


def _json_lines(path: Path, text: str) -> list[Any]:
    return [
        json_value(line, f"{path}:{lineno}")
        for lineno, line in enumerate(text.split("\n"), 1)
        if line.strip()
    ]


def _tsv_rows(path: Path, f: TextIO) -> Iterator[Row]:
    """`.tsv`: tab-separated, a header row naming an abstract column (any case).

    One line is one row: quotes are not CSV quoting (a stray `"` at the start of a title
    would otherwise swallow the rows up to the next one); a cell quoted as a whole has its
    quotes removed (and `""` inside it read as `"`).
    """
    reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
    try:
        names = [_tsv_cell(n) for n in next(reader, [])]
        if not names or "abstract" not in {_CANONICAL.get(_key(n)) for n in names}:
            raise InputError(f"{path}: TSV needs an 'abstract' column (found: {names or None})")
        for cells in reader:
            if cells:
                yield row_fields(dict(zip(names, map(_tsv_cell, cells), strict=False)))
    except csv.Error as exc:
        raise InputError(f"{path}:{reader.line_num}: malformed TSV ({exc})") from exc


def _tsv_cell(cell: str) -> str:
    if len(cell) >= 2 and cell[0] == cell[-1] == '"':
        return cell[1:-1].replace('""', '"')
    return cell


READERS = {".json": _json_rows, ".tsv": _tsv_rows}
SUFFIXES = tuple(READERS)
