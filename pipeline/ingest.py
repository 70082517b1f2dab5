"""Input files into `Abstract` records with stable content-hash ids; duplicates collapsed."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import InputError
from pipeline.text import normalize_ws, text_hash

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".txt", ".jsonl", ".csv")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
csv.field_size_limit(64 * 1024 * 1024)


@dataclass(frozen=True, slots=True)
class Source:
    """Where an abstract appeared: file, 1-based position in it, and the file's own id if any."""

    file: str
    position: int
    paper_id: str | None = None

    def to_dict(self) -> dict:
        """JSON form; `paper_id` only when the input file carried one."""
        out: dict = {"file": self.file, "position": self.position}
        if self.paper_id is not None:
            out["paper_id"] = self.paper_id
        return out


@dataclass(slots=True)
class Abstract:
    """One unique abstract: original text (kept verbatim for grounding), id, title, sources."""

    id: str
    text: str
    title: str | None = None
    sources: list[Source] = field(default_factory=list)


@dataclass(slots=True)
class IngestResult:
    """Unique abstracts in first-seen order, plus how many input rows were read or skipped."""

    abstracts: list[Abstract]
    n_inputs: int
    skipped: list[str]


def _looks_like_header(paragraph: str) -> bool:
    """A short single-line title such as 'ICLR 2026 Papers' is a list header, not an abstract."""
    line = paragraph.strip()
    return "\n" not in line and len(line) <= 100 and len(line.split()) <= 12 and not line.endswith(".")


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if b"\x00" in raw[:8192]:
        raise InputError(f"{path} is not a text file (binary content)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
        log.warning("%s is not valid UTF-8; read it as Latin-1/cp1252", path)
    controls = sum(1 for ch in text[:8192] if ord(ch) < 32 and ch not in "\n\r\t\f")
    if controls > 0.05 * max(1, min(len(text), 8192)):
        raise InputError(f"{path} is not a text file (control characters)")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _txt_rows(path: Path, text: str) -> Iterator[tuple[str, str | None, str | None]]:
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    if paragraphs and _looks_like_header(paragraphs[0]):
        paragraphs = paragraphs[1:]
    for paragraph in paragraphs:
        yield paragraph, None, None


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[str, str | None, str | None]]:
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
        if not isinstance(row, dict) or "abstract" not in row:
            raise InputError(f"{path}:{lineno}: expected an object with an 'abstract' field")
        yield _row_fields(row)


def _csv_rows(path: Path, text: str) -> Iterator[tuple[str, str | None, str | None]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "abstract" not in [f.strip().lower() for f in reader.fieldnames]:
        raise InputError(f"{path}: CSV needs an 'abstract' column (found: {reader.fieldnames})")
    for row in reader:
        yield _row_fields({(k or "").strip().lower(): v for k, v in row.items()})


def _row_fields(row: dict) -> tuple[str, str | None, str | None]:
    abstract = row.get("abstract")
    title = row.get("title")
    paper_id = row.get("id")
    return (
        abstract if isinstance(abstract, str) else "",
        str(title) if title not in (None, "") else None,
        str(paper_id) if paper_id not in (None, "") else None,
    )


_READERS = {".txt": _txt_rows, ".jsonl": _jsonl_rows, ".csv": _csv_rows}


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


def read_inputs(paths: Iterable[Path]) -> IngestResult:
    """Read every abstract from the given files/directories; same text -> one record, all sources."""
    by_id: dict[str, Abstract] = {}
    n_inputs = 0
    skipped: list[str] = []
    for path in expand_paths(paths):
        text = _read_text(path)
        if not text.strip():
            raise InputError(f"{path} is empty")
        found = 0
        for position, (abstract, title, paper_id) in enumerate(
            _READERS[path.suffix.lower()](path, text), 1
        ):
            if not normalize_ws(abstract):
                skipped.append(f"{path}#{position}: empty abstract")
                log.warning("%s#%d: empty abstract skipped", path, position)
                continue
            found += 1
            n_inputs += 1
            source = Source(file=str(path), position=position, paper_id=paper_id)
            abstract_id = text_hash(abstract)
            record = by_id.get(abstract_id)
            if record is None:
                by_id[abstract_id] = Abstract(abstract_id, abstract, title, [source])
            else:
                record.sources.append(source)
                if record.title is None and title:
                    record.title = title
        if not found:
            raise InputError(f"{path}: no abstracts found")
    return IngestResult(list(by_id.values()), n_inputs, skipped)
