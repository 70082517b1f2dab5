"""Input files into `Abstract` records with stable content-hash ids; duplicates collapsed.

Two passes, so memory does not grow with the input: the scan reads every file once (all
input errors surface before a run starts) and keeps ids, titles, sources and a fingerprint
per unique abstract; the texts are then streamed from the files again, in first-seen order,
while the run consumes them (`read_inputs(..., stream=True)`).
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from pipeline import ingest_formats
from pipeline.errors import InputError
from pipeline.ingest_formats import PaperRef
from pipeline.text import text_hash

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".txt", ".jsonl", ".csv", *ingest_formats.SUFFIXES)
_BLANK_LINE = re.compile(r"[ \t]*")
csv.field_size_limit(64 * 1024 * 1024)


@dataclass(frozen=True, slots=True)
class Source:
    """Where an abstract appeared: file, 1-based position in it, and the file's own id if any."""

    file: str
    position: int
    paper_id: str | None = None
    ref: PaperRef | None = None  # the user's identity of the paper (ingest_formats)


@dataclass(slots=True)
class Abstract:
    """One unique abstract: original text (kept verbatim for grounding), id, title, sources."""

    id: str
    text: str
    title: str | None = None
    sources: list[Source] = field(default_factory=list)


class AbstractStream:
    """The unique abstracts of a scan, read again from the files on each iteration.

    Only ids, titles, sources and a fingerprint of each text stay in memory; the texts are
    streamed from the files in first-seen order, so memory does not grow with the input.
    A text that changed on disk since the scan stops the iteration with an InputError.
    """

    def __init__(self, files: list[_ScannedFile], count: int) -> None:
        self._files = files
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Abstract]:
        for scanned in self._files:
            if scanned.firsts:
                yield from _read_firsts(scanned)


def _read_firsts(scanned: _ScannedFile) -> Iterator[Abstract]:
    """The abstracts first seen in one file, texts read again and checked against the scan."""
    wanted = iter(scanned.firsts)
    position, entry = next(wanted)
    changed = InputError(
        f"{scanned.path}: the file changed while the run was reading it; "
        "rerun the same command (finished work is cached)"
    )
    try:
        with _open_text(scanned.path, scanned.encoding) as f:
            rows = _READERS[scanned.path.suffix.lower()](scanned.path, f)
            for pos, (text, _title, _paper_id) in enumerate(rows, 1):
                if pos != position:
                    continue
                if hash(text) != entry.fingerprint:
                    raise changed
                yield Abstract(entry.id, text, entry.title, entry.sources)
                nxt = next(wanted, None)
                if nxt is None:
                    return
                position, entry = nxt
    except (OSError, UnicodeDecodeError) as exc:
        raise changed from exc
    raise changed  # fewer rows than the scan saw


@dataclass(slots=True)
class IngestResult:
    """Unique abstracts in first-seen order, plus how many input rows were read or skipped.

    `abstracts` is a list, or with `read_inputs(..., stream=True)` an `AbstractStream`
    (len() and repeatable iteration, texts read from the files as it goes).
    """

    abstracts: list[Abstract] | AbstractStream
    n_inputs: int
    skipped: list[str]
    inputs: list[str] = field(default_factory=list)


class _Entry:
    """What the scan keeps of one unique abstract: everything but its text."""

    __slots__ = ("id", "title", "sources", "fingerprint")

    def __init__(self, id: str, title: str | None, source: Source, fingerprint: int) -> None:
        self.id = id
        self.title = title
        self.sources = [source]
        self.fingerprint = fingerprint


@dataclass(slots=True)
class _ScannedFile:
    path: Path
    encoding: str
    firsts: list[tuple[int, _Entry]] = field(default_factory=list)  # (position, entry)


def _looks_like_header(paragraph: str) -> bool:
    """A short single-line title such as 'ICLR 2026 Papers' is a list header, not an abstract."""
    line = paragraph.strip()
    return (
        "\n" not in line and len(line) <= 100 and len(line.split()) <= 12 and not line.endswith(".")
    )


_UTF8 = "utf-8-sig"
_FALLBACK = "cp1252"
_PROBE_CHARS = 8192


def _open_text(path: Path, encoding: str) -> TextIO:
    """The file as text: universal newlines (\\r\\n and \\r become \\n), BOM dropped for UTF-8."""
    errors = "strict" if encoding == _UTF8 else "replace"
    return open(path, encoding=encoding, errors=errors, newline=None)  # noqa: SIM115


def _check_text_file(path: Path, encoding: str) -> None:
    """Refuse binary files (NUL bytes, many control characters) and empty files."""
    try:
        with path.open("rb") as f:
            head = f.read(_PROBE_CHARS)
        if b"\x00" in head:
            raise InputError(f"{path} is not a text file (binary content)")
        errors = "strict" if encoding == _UTF8 else "replace"
        with open(path, encoding=encoding, errors=errors, newline="") as f:
            text = f.read(_PROBE_CHARS)
            controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\r\t\f")
            if controls > 0.05 * max(1, len(text)):
                raise InputError(f"{path} is not a text file (control characters)")
            while not text.strip():
                if not text:
                    raise InputError(f"{path} is empty")
                text = f.read(1 << 16)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _txt_rows(path: Path, f: TextIO) -> Iterator[tuple[str, str | None, PaperRef | None]]:
    # Paragraphs are separated by lines holding only spaces/tabs (r"\n[ \t]*\n").
    first = True
    for paragraph in _paragraphs(f):
        if first:
            first = False
            if _looks_like_header(paragraph):
                continue
        yield paragraph, None, None


def _paragraphs(f: TextIO) -> Iterator[str]:
    lines: list[str] = []
    for line in f:
        line = line[:-1] if line.endswith("\n") else line
        if _BLANK_LINE.fullmatch(line):
            if lines:
                if paragraph := "\n".join(lines).strip():
                    yield paragraph
                lines = []
        else:
            lines.append(line)
    if lines and (paragraph := "\n".join(lines).strip()):
        yield paragraph


def _jsonl_rows(path: Path, f: TextIO) -> Iterator[tuple[str, str | None, PaperRef | None]]:
    lineno = 0
    for chunk in f:
        # The same line boundaries as str.splitlines() on the whole file (VT, FF, U+2028, ...).
        for line in chunk.splitlines():
            lineno += 1
            if not line.strip():
                continue
            try:
                row = ingest_formats.canonical_row(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
            if not isinstance(row, dict) or "abstract" not in row:
                raise InputError(f"{path}:{lineno}: expected an object with an 'abstract' field")
            yield _row_fields(row)


def _csv_rows(path: Path, f: TextIO) -> Iterator[tuple[str, str | None, PaperRef | None]]:
    reader = csv.DictReader(f)
    if not reader.fieldnames or "abstract" not in [f.strip().lower() for f in reader.fieldnames]:
        raise InputError(f"{path}: CSV needs an 'abstract' column (found: {reader.fieldnames})")
    for row in reader:
        yield _row_fields({(k or "").strip().lower(): v for k, v in row.items()})


def _row_fields(row: dict) -> tuple[str, str | None, PaperRef | None]:
    # OpenReview notes, column-name aliases and the user's identity: ingest_formats.
    return ingest_formats.row_fields(row)


_READERS = {".txt": _txt_rows, ".jsonl": _jsonl_rows, ".csv": _csv_rows, **ingest_formats.READERS}


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files named directly, plus every supported file under named directories (sorted)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix.lower() in SUPPORTED_SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not found:
                raise InputError(f"{path}: no {', '.join(SUPPORTED_SUFFIXES)} files in directory")
            files.extend(found)
        elif path.is_file():
            if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                raise InputError(
                    f"{path}: unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})"
                )
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    return files


def read_inputs(paths: Iterable[Path], *, stream: bool = False) -> IngestResult:
    """Read every abstract from the given files/directories; same text -> one record, all sources.

    Every input error is raised here. With `stream=True` the texts are not kept: `abstracts`
    is an `AbstractStream` that reads them from the files again as it is iterated.
    """
    paths = list(paths)
    by_id: dict[str, _Entry] = {}
    scanned_files: list[_ScannedFile] = []
    n_inputs = 0
    skipped: list[str] = []
    for path in expand_paths(paths):
        scanned, rows, file_skipped = _scan_file(path)
        for position in file_skipped:
            skipped.append(f"{path}#{position}: empty abstract")
            log.warning("%s#%d: empty abstract skipped", path, position)
        for position, abstract_id, title, ref, fingerprint in rows:
            n_inputs += 1
            paper_id = ref.id if ref else None
            source = Source(file=str(path), position=position, paper_id=paper_id, ref=ref)
            entry = by_id.get(abstract_id)
            if entry is None:
                entry = by_id[abstract_id] = _Entry(abstract_id, title, source, fingerprint)
                scanned.firsts.append((position, entry))
            else:
                entry.sources.append(source)
                if entry.title is None and title:
                    entry.title = title
        scanned_files.append(scanned)
    abstracts = AbstractStream(scanned_files, len(by_id))
    return IngestResult(
        abstracts if stream else list(abstracts), n_inputs, skipped, [str(p) for p in paths]
    )


_Row = tuple[int, str, str | None, PaperRef | None, int]  # position, id, title, ref, fingerprint


def _scan_file(path: Path) -> tuple[_ScannedFile, list[_Row], list[int]]:
    """One file's rows without their texts; UTF-8, else (with a warning) cp1252."""
    try:
        return _scan_file_as(path, _UTF8)
    except UnicodeDecodeError:
        log.warning("%s is not valid UTF-8; read it as Latin-1/cp1252", path)
        return _scan_file_as(path, _FALLBACK)


def _scan_file_as(path: Path, encoding: str) -> tuple[_ScannedFile, list[_Row], list[int]]:
    _check_text_file(path, encoding)
    rows: list[_Row] = []
    skipped: list[int] = []  # positions of empty abstracts
    try:
        with _open_text(path, encoding) as f:
            for position, (text, title, ref) in enumerate(
                _READERS[path.suffix.lower()](path, f), 1
            ):
                if not text.strip():  # same test as an empty normalize_ws(text)
                    skipped.append(position)
                    continue
                rows.append((position, text_hash(text), title, ref, hash(text)))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not rows:
        raise InputError(f"{path}: no abstracts found")
    return _ScannedFile(path, encoding), rows, skipped
