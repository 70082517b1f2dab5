"""Report cards: one paper's share of report.html, and a store of them in the cache folder.

A card is the paper's protocol object as script-safe JSON text plus the few values the
page's sort orders and facets need; `card_of` builds it from a Paper. A warm rerun writes
the same records again, so building every card again is most of what such a run does
(~85 us of ~200 us per paper at 10k). `CardStore` keeps the cards of earlier runs in
`<cache_dir>/report-cards-<code>.jsonl`, keyed by the record line it came from:

- the key is sha256 of the code digest, the taxonomy, the forum template and the summary
  line as written without its stages' provenance (`without_provenance`: a card never shows
  it, and a rerun of cached answers differs from the run that asked only there);
- `<code>` digests every source file of the package, taken when this module is imported
  (`card_code_id`): any code change starts a new file, and the files of other code
  versions are deleted when a store opens, so the folder holds one version's cards;
- lines are the cache's own sealed lines (pipeline/cache.py); a line whose seal fails is a
  miss. A card is derived data: a store that cannot be opened, read or written is dropped
  with one warning and the page is built as without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sys
import unicodedata
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pipeline.cache import StageCache
from pipeline.errors import StorageError
from pipeline.jsonl import compact_json
from pipeline.prompts import content_hash
from pipeline.report.protocol import facet_labels, report_paper
from pipeline.rundir import Paper
from pipeline.taxonomy import Taxonomy

log = logging.getLogger(__name__)

CARDS_PREFIX = "report-cards-"

_SCRIPT_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def script_json(obj: Any) -> str:
    """Compact JSON that is safe inside a <script> element (no `<`, `>` or `&` characters)."""
    return script_safe(compact_json(obj).decode("utf-8"))  # a 10k-paper page: 30 MB of JSON


def script_safe(text: str) -> str:
    """JSON text with `<`, `>`, `&`, U+2028/9 written as `\\uXXXX` (the same JSON values, and
    nothing that can end a <script>); script_json's text comes back as it is."""
    # A chain of str.replace is ~40x faster than str.translate on long texts.
    for char, escaped in _SCRIPT_ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


def is_script_safe(text: str) -> bool:
    """True when `text` holds none of the characters script_safe escapes."""
    return not any(char in text for char, _ in _SCRIPT_ESCAPES)


class Card(NamedTuple):
    """One paper's card JSON (script-safe) and what the page's orders and facets need."""

    json: str
    id: str
    title: str | None
    tags: tuple[str, ...]
    n_claims: int
    n_quantitative: int
    paper_id: str | None
    number: str | None
    metrics: list[str]
    metric_labels: list[str]
    datasets: list[str]
    dataset_labels: list[str]

    def aux(self) -> list[Any]:
        """Everything but the JSON, as a JSON array (the store's line)."""
        return [*self[1:3], list(self.tags), *self[4:]]


def card_of(paper: Paper, taxonomy: Taxonomy | None, forum: str) -> Card:
    """The card of one paper."""
    data: dict[str, Any] = report_paper(paper, taxonomy, forum)  # type: ignore[assignment]
    metrics, datasets = data["metrics"], data["datasets"]
    return Card(
        json=script_json(data),
        id=paper.id,
        title=paper.title,
        tags=paper.tags,
        n_claims=len(paper.claims),
        n_quantitative=data["n_quantitative"],
        paper_id=paper.paper_id,
        number=paper.number,
        metrics=metrics,
        metric_labels=facet_labels(paper, "metric", metrics),
        datasets=datasets,
        dataset_labels=facet_labels(paper, "dataset", datasets),
    )


def without_provenance(line: bytes) -> bytes:
    """A summary line without its stages' `"provenance":{...}` members, which no card shows:
    a rerun of cached answers, a `--force` run and a run that mixes answers of concurrent
    runs then share their cards.

    Only a member key can match (a quote inside a JSON string is escaped), and the cut ends
    at the first `}` after it: provenance holds scalars only, and a `}` inside one of its
    strings just leaves the rest of it in. Nothing outside provenance is ever cut.
    """
    start = 0
    parts = []
    while (at := line.find(b'"provenance":{', start)) >= 0:
        end = line.find(b"}", at)
        if end < 0:
            break
        parts.append(line[start:at])
        start = end + 1
    if not parts:
        return line
    parts.append(line[start:])
    return b"".join(parts)


def _code_id() -> str | None:
    """sha256 of what a card's bytes depend on besides its record: the package's version and
    every source file, the Python and Unicode database versions (str.lower, split, NFC) and
    orjson's version. None when the sources cannot be read (no cards are kept then)."""
    from pipeline import __version__

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(
        f"{__version__}\0{sys.version}\0{unicodedata.unidata_version}\0{orjson.__version__}".encode()
    )
    sources = sorted(root.rglob("*.py"))
    if not sources:
        return None  # not installed as files (a zip, say): nothing to digest
    try:
        for path in sources:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


# At import, with the report code, not at the first record: code changed on disk while a
# run goes (a checkout under an editable install) must not label cards of the old code.
_CODE_ID = _code_id()


def card_code_id() -> str | None:
    """The digest of the card-building code this process loaded (see _code_id)."""
    return _CODE_ID


class CardStore:
    """The cards of earlier runs (module docstring), read and written by the report sink."""

    def __init__(self, cache_dir: Path, taxonomy: Taxonomy | None, forum: str, code: str) -> None:
        name = f"{CARDS_PREFIX}{code[:16]}.jsonl"
        for old in cache_dir.glob(f"{CARDS_PREFIX}*.jsonl"):
            if old.name != name:
                with contextlib.suppress(OSError):
                    old.unlink()
        self._cache: StageCache | None = StageCache(cache_dir / name, seal_id=code)
        self.path = self._cache.path
        taxonomy_id = content_hash(taxonomy.model_dump(mode="json")) if taxonomy else "-"
        self._salt = f"{code}\0{taxonomy_id}\0{forum}\0".encode()

    @classmethod
    def open(cls, cache_dir: Path, taxonomy: Taxonomy | None, forum: str) -> CardStore | None:
        """The store of `cache_dir`, or None (with a warning) when it cannot be opened, or
        when the code's digest is unknown (then no card could be told stale)."""
        code = card_code_id()
        if code is None:
            log.warning("report cards are not kept (the package sources cannot be read)")
            return None
        try:
            return cls(cache_dir, taxonomy, forum, code)
        except (StorageError, OSError) as exc:
            log.warning("report cards are not kept (%s); the page is built in full", exc)
            return None

    def key(self, line: bytes) -> str:
        """The key of the card of one summary line (its stages' provenance left out)."""
        return hashlib.sha256(self._salt + without_provenance(line)).hexdigest()

    def get(self, key: str, abstract: str) -> Card | None:
        """The card stored under `key` (of a record of `abstract`), or None."""
        if self._cache is None:
            return None
        try:
            line, sealed = self._cache.lookup_line(key)
        except OSError as exc:  # e.g. EIO, or ESTALE on NFS
            log.warning("report cards are no longer read (%s: %s)", self.path, exc)
            self.close()
            return None
        if line is None or not sealed:
            return None
        try:
            record = orjson.loads(line)
            head, tail = record["card"]
            # A line can be forged with a valid seal (the seal's inputs are public): a stored
            # part that could end the page's <script> is a miss, never spliced.
            if not is_script_safe(head) or (tail is not None and not is_script_safe(tail)):
                log.warning("%s: a card that is not script-safe; rebuilt", self.path)
                return None
            text = head if tail is None else head + script_json(abstract) + tail
            card_id, title, tags, *counts_and_values = record["aux"]
            card = Card(text, card_id, title, tuple(tags), *counts_and_values)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None
        return card

    def put(self, key: str, card: Card, abstract: str) -> None:
        """Keep one card; a failed write drops the store (one warning), never the run.

        The abstract, most of a card, is left out where the card holds it as it is (the
        record the key comes from has it).
        """
        if self._cache is None:
            return
        shown = script_json(abstract)
        at = card.json.find('"abstract":' + shown)
        if at < 0:
            parts: tuple[str, str | None] = (card.json, None)
        else:
            cut = at + len('"abstract":')
            parts = (card.json[:cut], card.json[cut + len(shown) :])
        try:
            self._cache.put(key, {"card": parts, "aux": card.aux()}, index=False)
        except (StorageError, OSError) as exc:
            log.warning("report cards are no longer kept (%s)", exc)
            self.close()

    def close(self) -> None:
        """Release the file."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None
