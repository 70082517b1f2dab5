"""report.html: one self-contained page (no network), written as a stream of papers.

The page is assets/report.html with assets/report.css inlined and assets/report.js as its
only script; the papers travel as one `ReportData` JSON object (protocol.py) with `<`, `>`,
`&`, U+2028/9 written as `\\uXXXX`, so no string can close the `<script>`. The script builds
the DOM with `textContent` only, never `innerHTML`, and a Content-Security-Policy allows
exactly that script (by hash) and no network at all. 50 cards show at a time, so the page
stays fast at 10k papers; filters, sort and page live in the URL hash.

`HtmlReportSink` writes the page while a run goes (a record at a time, nothing read back);
`write_html_report` feeds it a finished run folder.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import os
import re
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import IO

from pipeline.atomicfile import open_temp, temp_name
from pipeline.errors import StorageError
from pipeline.report.cards import Card, CardStore, card_of, script_json, script_safe
from pipeline.report.protocol import CSV_HEADER, ROW_FIELDS, FacetCounter, SortOrders
from pipeline.rundir import Manifest, Paper, RunReader, SummaryRecord
from pipeline.rundir.writer import remove_stale_tmp
from pipeline.stages import stage_names
from pipeline.taxonomy import Taxonomy
from pipeline.triage import DEFAULT_FORUM_URL, tag_label

HTML_FILE = "report.html"
_BATCH = 64  # cards per write


@cache
def asset(name: str) -> str:
    """The text of one file in pipeline/report/assets/."""
    return files("pipeline.report").joinpath("assets", name).read_text(encoding="utf-8")


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def _tag_table(taxonomy: Taxonomy | None, seen: Counter[str]) -> tuple[dict, list]:
    tags: dict[str, list[str]] = {}
    facets: list[list[str]] = []
    if taxonomy is not None:
        for facet in taxonomy.facets:
            facets.append([facet.id, facet.label])
            for tag in facet.tags:
                tags[tag.id] = [tag_label(taxonomy, tag.id), facet.id]
    unknown = [t for t in seen if t not in tags]
    if unknown:
        facets.append(["other", "Other tags" if taxonomy is not None else "Tags"])
        for t in sorted(unknown):
            tags[t] = [t, "other"]
    return tags, facets


class HtmlPageWriter:
    """Writes the page to a text stream: head, then papers one by one, then the rest."""

    def __init__(
        self,
        fh: IO[str],
        taxonomy: Taxonomy | None,
        *,
        title: str,
        forum: str = DEFAULT_FORUM_URL,
    ) -> None:
        self.fh = fh
        self.taxonomy = taxonomy
        self.title = title
        self.forum = forum
        self.seen: Counter[str] = Counter()
        self.n = 0
        self._metrics = FacetCounter()
        self._datasets = FacetCounter()
        self._orders = SortOrders(taxonomy)
        self._batch: list[str] = []
        self._written = 0
        head = asset("report.html").split("<!--DATA-->")[0]
        slots = {
            "CSP": html.escape(_csp(asset("report.js"))),
            "TITLE": html.escape(title),
            "STYLE": asset("report.css"),
        }
        fh.write(re.sub(r"\{\{(CSP|TITLE|STYLE)\}\}", lambda m: slots[m.group(1)], head))
        fh.write('<script type="application/json" id="digest-data">{"papers":[')

    def add(self, paper: Paper) -> None:
        """One paper's card."""
        self.add_card(card_of(paper, self.taxonomy, self.forum))

    def add_card(self, card: Card) -> None:
        """One paper's card, built by card_of (now or by an earlier run)."""
        seen = self.seen
        for tag in card.tags:
            seen[tag] += 1
        self._orders.add_values(
            card.id,
            card.title,
            card.n_claims,
            card.n_quantitative,
            card.tags[0] if card.tags else None,
            card.paper_id,
            card.number,
        )
        self._metrics.add(card.metrics, card.metric_labels)
        self._datasets.add(card.datasets, card.dataset_labels)
        # Escaped again where it is spliced: a card from the store may be forged (cards.py).
        self._batch.append(script_safe(card.json))
        if len(self._batch) >= _BATCH:
            self._flush()
        self.n += 1

    def _flush(self) -> None:
        if self._batch:
            self.fh.write(("," if self._written else "") + ",".join(self._batch))
            self._written += len(self._batch)
            self._batch = []

    def finish(self, *, info: str = "", incomplete: str | None = None) -> int:
        """Everything after the papers; returns the paper count."""
        self._flush()
        tags, facets = _tag_table(self.taxonomy, self.seen)
        # The orders go out as JSON text straight from their compact arrays.
        orders = ",".join(
            f'"{key}":[{",".join(map(str, idx))}]' for key, idx in self._orders.orders().items()
        )
        meta = {
            "title": self.title,
            "info": info,
            "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "incomplete": incomplete,
            "stages": list(stage_names()),
            "tags": tags,
            "facets": facets,
            "metric_facets": self._metrics.facets(),
            "dataset_facets": self._datasets.facets(),
            "csv_header": CSV_HEADER,
            "row_fields": list(ROW_FIELDS),
        }
        self.fh.write('],"order":{' + orders + "}," + script_json(meta)[1:] + "</script>\n")
        self.fh.write(f"<script>{asset('report.js')}</script>")
        self.fh.write(asset("report.html").split("<!--DATA-->")[1])
        return self.n


def render_html(
    papers: Iterable[Paper],
    taxonomy: Taxonomy | None,
    *,
    title: str = "digest",
    info: str = "",
    forum: str = DEFAULT_FORUM_URL,
) -> str:
    """The report page as a string (tests, small runs)."""
    import io

    buf = io.StringIO()
    page = HtmlPageWriter(buf, taxonomy, title=title, forum=forum)
    for paper in papers:
        page.add(paper)
    page.finish(info=info)
    return buf.getvalue()


def run_info(manifest: Manifest | None) -> str:
    """'backend model, run started ...' from the manifest, or '' when there is none."""
    if manifest is None:
        return ""
    started = manifest.started_at[:16].replace("T", " ")
    return f"{manifest.backend} {manifest.model}, run started {started} UTC"


def incomplete_reason(manifest: Manifest | None) -> str | None:
    """Why a run's page shows fewer papers than its inputs (None for a finished run)."""
    if manifest is None:
        return "this run has no manifest (it was killed before it finished)"
    if manifest.complete:
        return None
    detail = f": {manifest.fatal_error}" if manifest.fatal_error else ""
    return (
        f"this run is incomplete ({manifest.status}{detail}); it holds "
        f"{manifest.counts.records_written} of {manifest.counts.unique} abstracts"
    )


class HtmlReportSink:
    """Writes RUN_DIR/report.html from the records of a run as they come (a RecordSink).

    The page goes to a temporary file, opened at the first record, and replaces `path` only
    when it is complete: a killed run never leaves half a page behind, and the temporary
    file a killed run did leave (its pid no longer runs) is deleted when the next page is
    written there. A failed write (disk full) is a StorageError and the page is dropped.
    """

    def __init__(
        self,
        path: Path,
        taxonomy: Taxonomy | None,
        *,
        title: str,
        forum: str = DEFAULT_FORUM_URL,
        cache_dir: Path | None = None,
    ) -> None:
        self.path = path
        self.taxonomy = taxonomy
        self.title = title
        self.forum = forum
        # With a cache folder, cards of earlier runs are reused (cards.py); opened at the
        # first record.
        self._cache_dir = cache_dir
        self.cards: CardStore | None = None
        self._tmp = temp_name(path)
        self._fh: IO[str] | None = None
        self._page: HtmlPageWriter | None = None
        self._failed = False

    def _open(self) -> HtmlPageWriter:
        if self._page is None:
            if self._cache_dir is not None:
                self.cards = CardStore.open(self._cache_dir, self.taxonomy, self.forum)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_tmp(self.path.parent, self.path.name)
            # Made exclusively, never through a link planted under the temp name.
            self._fh = open_temp(self.path, newline="\n")
            self._page = HtmlPageWriter(self._fh, self.taxonomy, title=self.title, forum=self.forum)
        return self._page

    def add(self, record: SummaryRecord, line: bytes | None = None) -> None:
        """One record's paper (`line`: the record as summaries.jsonl holds it, which keys
        the card store)."""
        if self._failed:
            return
        try:
            page = self._open()
            cards = self.cards
            if cards is None or line is None:
                page.add(Paper.from_record(record))
                return
            key = cards.key(line)
            card = cards.get(key, record.abstract)
            if card is None:
                card = card_of(Paper.from_record(record), self.taxonomy, self.forum)
                cards.put(key, card, record.abstract)
            page.add_card(card)
        except StorageError:
            self._failed = True
            raise
        except OSError as exc:
            self._failed = True
            raise StorageError.from_os_error(self._tmp, exc) from exc

    def abort(self) -> None:
        """Drop the half-written page (its temporary file)."""
        if self.cards is not None:
            self.cards.close()
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
        self._tmp.unlink(missing_ok=True)

    def finish(self, manifest: Manifest | None) -> None:
        """Close the page and move it into place atomically."""
        try:
            if self._failed:
                return
            page = self._open()
            page.finish(info=run_info(manifest), incomplete=incomplete_reason(manifest))
            assert self._fh is not None
            self._fh.close()
            os.replace(self._tmp, self.path)  # a link planted at the path is replaced
        except StorageError:
            self._failed = True
            raise
        except OSError as exc:
            self._failed = True
            raise StorageError.from_os_error(self.path, exc) from exc
        finally:
            self.abort()


def report_title(reader: RunReader) -> str:
    """The page title of a run folder's report."""
    return f"Digest of {reader.dir.resolve().name}"


def stream_html_report(
    run_dir: Path, taxonomy: Taxonomy | None, fh: IO[str], *, forum: str = DEFAULT_FORUM_URL
) -> int:
    """Write a run folder's report page to an open stream (`--out -`); returns the paper count."""
    reader = RunReader(run_dir)
    page = HtmlPageWriter(fh, taxonomy, title=report_title(reader), forum=forum)
    for paper in reader.papers():
        page.add(paper)
    return page.finish(
        info=run_info(reader.manifest), incomplete=incomplete_reason(reader.manifest)
    )


def write_html_report(
    run_dir: Path,
    taxonomy: Taxonomy | None,
    out: Path | None = None,
    *,
    forum: str = DEFAULT_FORUM_URL,
) -> Path:
    """Write RUN_DIR/report.html (or `out`) from a finished or partial run folder."""
    reader = RunReader(run_dir)
    sink = HtmlReportSink(
        out or reader.dir / HTML_FILE, taxonomy, title=report_title(reader), forum=forum
    )
    try:
        for record in reader.records():
            sink.add(record)
    except BaseException:
        sink.abort()
        raise
    sink.finish(reader.manifest)
    return sink.path
