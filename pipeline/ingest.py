"""Input files into `Abstract` records with stable content-hash ids; duplicates collapsed.

Two passes, so memory does not grow with the input: the scan reads every file once (all
input errors surface before a run starts) and keeps ids, titles, sources and a fingerprint
per unique abstract; the texts are then streamed from the files again, in first-seen order,
while the run consumes them (`read_inputs(..., stream=True)`).

Before its scan each file is read once as bytes (`_sniff`): a NUL byte anywhere makes it
binary, and it is decoded as UTF-8 with U+FFFD for invalid bytes only (one warning naming
their lines), unless no multi-byte sequence in it is valid UTF-8: then it is cp1252
throughout. Directories are walked by `expand_paths` (symlinks, unreadable folders,
ignored files).
"""

from __future__ import annotations

import codecs
import csv
import errno
import logging
import os
import re
import stat
from array import array
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
CSV_FIELD_LIMIT = 64 * 1024 * 1024
csv.field_size_limit(CSV_FIELD_LIMIT)
MAX_IGNORED_LISTED = 100  # ignored files named in the manifest (the warning gives the count)


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
            if scanned.entries:
                yield from _read_firsts(scanned)


def _read_firsts(scanned: _ScannedFile) -> Iterator[Abstract]:
    """The abstracts first seen in one file, texts read again and checked against the scan."""
    wanted = iter(range(len(scanned.entries)))
    k = next(wanted)
    position, entry, fingerprint = scanned.positions[k], scanned.entries[k], scanned.fingerprints[k]
    changed = InputError(
        f"{scanned.path}: the file changed while the run was reading it; "
        "rerun the same command (finished work is cached)"
    )
    try:
        with _open_text(scanned.path, scanned.encoding) as f:
            rows = _TEXT_READERS[scanned.path.suffix.lower()](scanned.path, f)
            for pos, (text, _title, _paper_id) in enumerate(rows, 1):
                if pos != position:
                    continue
                if hash(text) != fingerprint:
                    raise changed
                yield Abstract(entry.id, text, entry.title, entry.source_list())
                nxt = next(wanted, None)
                if nxt is None:
                    return
                position, entry = scanned.positions[nxt], scanned.entries[nxt]
                fingerprint = scanned.fingerprints[nxt]
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
    ignored: list[str] = field(default_factory=list)  # files in input folders not read, why


class _Entry:
    """What the scan keeps of one unique abstract: everything but its text."""

    __slots__ = ("id", "title", "sources")

    def __init__(self, id: str, title: str | None, source: Source) -> None:
        self.id = id
        self.title = title
        self.sources: Source | list[Source] = source  # a list from the second source on

    def add_source(self, source: Source) -> None:
        """One more place the abstract appeared."""
        if isinstance(self.sources, list):
            self.sources.append(source)
        else:
            self.sources = [self.sources, source]

    def source_list(self) -> list[Source]:
        """Every source, in the order seen."""
        return list(self.sources) if isinstance(self.sources, list) else [self.sources]


@dataclass(slots=True)
class _ScannedFile:
    """One input file and the abstracts first seen in it: their positions, what the scan
    kept of them and a fingerprint of each text (parallel arrays: a few bytes each)."""

    path: Path
    encoding: str
    positions: array[int] = field(default_factory=lambda: array("q"))
    entries: list[_Entry] = field(default_factory=list)
    fingerprints: array[int] = field(default_factory=lambda: array("q"))


def _looks_like_header(paragraph: str) -> bool:
    """A short single-line title such as 'ICLR 2026 Papers' is a list header, not an abstract."""
    line = paragraph.strip()
    return (
        "\n" not in line and len(line) <= 100 and len(line.split()) <= 12 and not line.endswith(".")
    )


_UTF8 = "utf-8-sig"
_FALLBACK = "cp1252"
_PROBE_CHARS = 8192
_CHUNK = 1 << 20
_BAD_LINES_NAMED = 10
# After decoding with surrogateescape, an invalid byte is a lone surrogate U+DC80..U+DCFF.
_BAD_BYTE = re.compile("[\udc80-\udcff]")
_VALID_NON_ASCII = re.compile("[^\x00-\x7f\udc80-\udcff]")
# A JSON \\uXXXX escape of a UTF-16 surrogate, after an even number of backslashes.
_SURROGATE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
_JSON_SUFFIXES = (".json", ".jsonl")
# Line splitting per format (open()'s `newline`): JSON Lines split on \n only, so a raw
# U+2028, U+0085 or CR inside a JSON string is data (as pipeline/jsonl.py reads them).
_NEWLINE: dict[str, str | None] = {".jsonl": "\n"}


def _open_text(path: Path, encoding: str) -> TextIO:
    """The file as text: universal newlines (\\r\\n and \\r become \\n) except for .jsonl,
    BOM dropped for UTF-8, an invalid byte replaced by U+FFFD (the scan warned about it)."""
    newline = _NEWLINE.get(path.suffix.lower())
    return open(path, encoding=encoding, errors="replace", newline=newline)  # noqa: SIM115


def _sniff(path: Path) -> str:
    """The encoding to read `path` with, after refusing binary and empty files.

    The whole file is read once as bytes: a NUL byte anywhere makes it binary. It is UTF-8
    unless some byte is invalid UTF-8 *and* no multi-byte sequence in it is valid: then it is
    Latin-1/cp1252 throughout. A UTF-8 file with a few invalid bytes stays UTF-8 (those bytes
    become U+FFFD, with one warning naming their lines), so valid text never turns to mojibake.
    """
    bad = _BadLines()
    lone = _BadLines() if path.suffix.lower() in _JSON_SUFFIXES else None
    valid_non_ascii = False
    content = False
    head: str | None = None
    carry = b""  # an incomplete UTF-8 sequence at the end of the last chunk
    line = 1
    try:
        with path.open("rb") as f:
            while True:
                chunk = f.read(_CHUNK)
                if b"\x00" in chunk:
                    raise InputError(f"{path} is not a text file (binary content)")
                data = carry + chunk
                if head is None and data.startswith(codecs.BOM_UTF8):
                    data, valid_non_ascii = data[len(codecs.BOM_UTF8) :], True
                cut = _cut(data, json_file=lone is not None) if chunk else len(data)
                data, carry = data[:cut], data[cut:]
                try:
                    text = data.decode("utf-8")  # the fast path: valid UTF-8
                except UnicodeDecodeError:
                    text = data.decode("utf-8", "surrogateescape")
                    valid_non_ascii = valid_non_ascii or bool(_VALID_NON_ASCII.search(text))
                    bad.scan(text, line)
                else:
                    valid_non_ascii = valid_non_ascii or not data.isascii()
                if lone is not None and "\\u" in text:
                    lone.scan(text, line, _lone_surrogate_escapes(text))
                if head is None:
                    head = text[:_PROBE_CHARS]
                content = content or bool(text.strip())
                line += data.count(b"\n")
                if not chunk:
                    break
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    controls = sum(1 for ch in head or "" if ord(ch) < 32 and ch not in "\n\r\t\f")
    if controls > 0.05 * max(1, len(head or "")):
        raise InputError(f"{path} is not a text file (control characters)")
    if not content:
        raise InputError(f"{path} is empty")
    if lone is not None and lone.count:
        log.warning(
            "%s: a lone UTF-16 surrogate escape (\\ud800 ...) on %d line(s) (%s); each is "
            "read as U+FFFD",
            path,
            lone.count,
            lone.named(),
        )
    if not bad.count:
        return _UTF8
    if not valid_non_ascii:
        log.warning("%s is not valid UTF-8; read it as Latin-1/cp1252", path)
        return _FALLBACK
    log.warning(
        "%s: invalid UTF-8 on %d line(s) (%s); those bytes are read as U+FFFD, the rest as UTF-8",
        path,
        bad.count,
        bad.named(),
    )
    return _UTF8


def _cut(data: bytes, *, json_file: bool) -> int:
    """Where to end this chunk: at an incomplete UTF-8 sequence, and in a JSON file after
    the last newline (an escape such as \\ud83d\\ude00 is never cut; JSON strings hold no
    newline), or, in a line longer than a chunk, before a backslash among the last bytes."""
    cut = _complete_prefix(data)
    if json_file:
        newline = data.rfind(b"\n", 0, cut)
        if newline >= 0:
            return newline + 1
        backslash = data.find(b"\\", max(0, cut - 12), cut)
        if backslash > 0:
            return backslash
    return cut


def _lone_surrogate_escapes(text: str) -> Iterator[int]:
    """Where the JSON text has an escaped UTF-16 surrogate that is not half of a pair."""
    high_end, high_start = -1, -1  # the last high surrogate escape, still waiting for its low
    for m in _SURROGATE_ESCAPE.finditer(text):
        start = m.start(1) - 2
        is_high = m.group(1)[1] in "89abAB"
        if high_start >= 0:
            if not is_high and start == high_end:
                high_start = -1
                continue
            yield high_start
            high_start = -1
        if is_high:
            high_end, high_start = m.end(), start
        else:
            yield start
    if high_start >= 0:
        yield high_start


def _complete_prefix(data: bytes) -> int:
    """Where an incomplete UTF-8 sequence at the end of `data` starts (len(data) if none)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return len(data)
        if byte >= 0xC0:  # a lead byte: is its sequence cut off?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) - back if need > back else len(data)
    return len(data)


class _BadLines:
    """The lines holding invalid UTF-8: how many, the first few and the last."""

    def __init__(self) -> None:
        self.count = 0
        self.lines: list[int] = []

    def scan(self, text: str, line: int, positions: Iterable[int] | None = None) -> None:
        """Record the lines of `text` (starting at `line`) holding a bad byte (decoded with
        surrogateescape), or else the given positions."""
        pos = 0
        if positions is None:
            positions = (m.start() for m in _BAD_BYTE.finditer(text))
        for start in positions:
            line += text.count("\n", pos, start)
            pos = start
            if self.lines and self.lines[-1] == line:
                continue
            self.count += 1
            if len(self.lines) < _BAD_LINES_NAMED:
                self.lines.append(line)
            else:
                self.lines[-1] = line

    def named(self) -> str:
        """'4, 8, 9' or, past the first few, '4, 8, ..., 29'."""
        if self.count <= len(self.lines):
            return ", ".join(map(str, self.lines))
        return ", ".join(map(str, self.lines[:-1])) + f", ..., {self.lines[-1]}"


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
    for row in _jsonl_canonical(path, f):
        yield ingest_formats.canonical_fields(row)


def _jsonl_texts(path: Path, f: TextIO) -> Iterator[tuple[str, None, None]]:
    # The texts only: what reading the abstracts again after the scan needs.
    for row in _jsonl_canonical(path, f):
        yield ingest_formats.abstract_of(row), None, None


def _jsonl_canonical(path: Path, f: TextIO) -> Iterator[dict]:
    # `f` splits on \n only (see _NEWLINE), like every other JSON Lines reader here.
    for lineno, line in enumerate(f, 1):
        if not line.strip(" \t\r\n"):
            continue
        row = ingest_formats.canonical_row(ingest_formats.json_value(line, f"{path}:{lineno}"))
        if not isinstance(row, dict) or "abstract" not in row:
            raise InputError(f"{path}:{lineno}: expected an object with an 'abstract' field")
        abstract = row["abstract"]
        if abstract is not None and not isinstance(abstract, str):
            raise InputError(
                f"{path}:{lineno}: 'abstract' must be a string, not {_json_type(abstract)}"
            )
        yield row


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"


def _csv_rows(path: Path, f: TextIO) -> Iterator[tuple[str, str | None, PaperRef | None]]:
    reader = csv.DictReader(f)
    try:
        fieldnames = reader.fieldnames
        if not fieldnames or "abstract" not in [f.strip().lower() for f in fieldnames]:
            raise InputError(f"{path}: CSV needs an 'abstract' column (found: {fieldnames})")
        for row in reader:
            yield _row_fields({(k or "").strip().lower(): v for k, v in row.items()})
    except csv.Error as exc:
        limit = f" (at most {CSV_FIELD_LIMIT // (1024 * 1024)} MB)" if "limit" in str(exc) else ""
        raise InputError(f"{path}:{reader.line_num}: invalid CSV ({exc}){limit}") from exc


def _row_fields(row: dict) -> tuple[str, str | None, PaperRef | None]:
    # OpenReview notes, column-name aliases and the user's identity: ingest_formats.
    return ingest_formats.row_fields(row)


_READERS = {".txt": _txt_rows, ".jsonl": _jsonl_rows, ".csv": _csv_rows, **ingest_formats.READERS}
# Readers that skip the title and identity fields, for reading the texts again.
_TEXT_READERS = {**_READERS, ".jsonl": _jsonl_texts}


@dataclass(slots=True)
class InputFiles:
    """The files to read, and the files under input folders that are not read (with why)."""

    files: list[Path]
    ignored: list[str]


def expand_paths(paths: Iterable[Path], *, follow_symlinks: bool = False) -> InputFiles:
    """Files named directly, plus every supported file under named directories (sorted).

    Under a directory, hidden entries are skipped silently; other files that are not read
    (unsupported type, not a regular file, a symlink leading out of the directory) are
    listed in `ignored`. Symlinks are followed only when they stay inside the directory,
    unless `follow_symlinks`; an unreadable subdirectory is an InputError.
    """
    files: list[Path] = []
    ignored: list[str] = []
    for path in paths:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            kind = "broken symlink" if path.is_symlink() else "no such file or directory"
            raise InputError(f"{path}: {kind}") from None
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
        if stat.S_ISDIR(mode):
            found = _walk(path, follow_symlinks, ignored)
            if not found:
                raise InputError(f"{path}: no {', '.join(SUPPORTED_SUFFIXES)} files in directory")
            files.extend(found)
        elif not stat.S_ISREG(mode):
            raise InputError(f"{path}: not a regular file ({_file_kind(mode)})")
        elif path.suffix.lower() not in SUPPORTED_SUFFIXES:
            raise InputError(f"{path}: unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})")
        else:
            files.append(path)
    return InputFiles(files, ignored)


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _walk(root: Path, follow_symlinks: bool, ignored: list[str]) -> list[Path]:
    """The supported files under `root`, sorted; what is not read goes to `ignored`."""
    real_root = root.resolve()
    seen_dirs = {real_root}
    found: list[Path] = []
    not_read: list[str] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            raise InputError(f"cannot read directory {folder}: {exc.strerror or exc}") from exc
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            try:
                real = _symlink_target(path) if entry.is_symlink() else None
                if real == _LOOP:
                    not_read.append(f"{path}: symlink loop")
                    continue
                if real is not None and not (follow_symlinks or real.is_relative_to(real_root)):
                    not_read.append(
                        f"{path}: symlink to {real}, outside {root} (--follow-symlinks reads it)"
                    )
                    continue
                if entry.is_dir():
                    if real is not None and (not follow_symlinks or real in seen_dirs):
                        if not follow_symlinks:
                            not_read.append(
                                f"{path}: symlink to a directory (--follow-symlinks reads it)"
                            )
                        continue
                    seen_dirs.add(real or path.resolve())
                    stack.append(path)
                elif not entry.is_file():
                    kind = "broken symlink" if real is not None and not real.exists() else None
                    not_read.append(f"{path}: {kind or 'not a regular file'}")
                elif path.suffix.lower() not in SUPPORTED_SUFFIXES:
                    not_read.append(f"{path}: unsupported file type")
                else:
                    found.append(path)
            except OSError as exc:
                raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    ignored.extend(sorted(not_read))
    return sorted(found)


_LOOP = Path("/\0loop")  # no real path holds a NUL


def _symlink_target(path: Path) -> Path:
    """Where a symlink finally leads, or _LOOP for a cycle."""
    try:
        return path.resolve()
    except RuntimeError:  # Python 3.11 raises it for a symlink loop
        return _LOOP
    except OSError as exc:  # later versions: ELOOP
        if exc.errno == errno.ELOOP:
            return _LOOP
        raise


def read_inputs(
    paths: Iterable[Path],
    *,
    stream: bool = False,
    follow_symlinks: bool = False,
    out_dir: Path | None = None,
) -> IngestResult:
    """Read every abstract from the given files/directories; same text -> one record, all sources.

    Every input error is raised here, including an input file inside `out_dir` (the run
    folder about to be written: the file would be truncated before it is read). With
    `stream=True` the texts are not kept: `abstracts` is an `AbstractStream` that reads them
    from the files again as it is iterated.
    """
    paths = list(paths)
    by_id: dict[str, _Entry] = {}
    scanned_files: list[_ScannedFile] = []
    n_inputs = 0
    skipped: list[str] = []
    found = expand_paths(paths, follow_symlinks=follow_symlinks)
    if out_dir is not None:
        _refuse_inputs_inside(found.files, out_dir)
    if found.ignored:
        log.warning(
            "ignored %d file(s) in the input folders (listed in manifest.json): %s",
            len(found.ignored),
            _first_few(found.ignored),
        )
    for path in found.files:
        scanned, rows, file_skipped = _scan_file(path)
        skipped += (f"{path}#{position}: empty abstract" for position in file_skipped)
        file = str(path)  # one string for every source in the file
        for position, abstract_id, title, ref, fingerprint in rows:
            n_inputs += 1
            paper_id = ref.id if ref else None
            source = Source(file=file, position=position, paper_id=paper_id, ref=ref)
            entry = by_id.get(abstract_id)
            if entry is None:
                entry = by_id[abstract_id] = _Entry(abstract_id, title, source)
                scanned.positions.append(position)
                scanned.entries.append(entry)
                scanned.fingerprints.append(fingerprint)
            else:
                entry.add_source(source)
                if entry.title is None and title:
                    entry.title = title
        scanned_files.append(scanned)
    if skipped:
        log.warning(
            "skipped %d row(s) with an empty abstract (counted in manifest.json): %s",
            len(skipped),
            _first_few([s.removesuffix(": empty abstract") for s in skipped]),
        )
    abstracts = AbstractStream(scanned_files, len(by_id))
    return IngestResult(
        abstracts if stream else list(abstracts),
        n_inputs,
        skipped,
        [str(p) for p in paths],
        found.ignored,
    )


def _first_few(items: list[str], shown: int = 10) -> str:
    """The first `shown` items, then how many more: one warning line for any number."""
    more = f"; and {len(items) - shown} more" if len(items) > shown else ""
    return "; ".join(items[:shown]) + more


def _refuse_inputs_inside(files: list[Path], out_dir: Path) -> None:
    real_out = out_dir.resolve()
    for path in files:
        if path.resolve().is_relative_to(real_out):
            raise InputError(
                f"{path} is inside the run folder {out_dir}, which the run is about to "
                "overwrite; choose another --out (or copy the file elsewhere first)"
            )


_Row = tuple[int, str, str | None, PaperRef | None, int]  # position, id, title, ref, fingerprint


def _scan_file(path: Path) -> tuple[_ScannedFile, list[_Row], list[int]]:
    """One file's rows without their texts, decoded as `_sniff` decides."""
    encoding = _sniff(path)
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
