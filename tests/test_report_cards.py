"""Report cards kept in the cache folder (pipeline/report/cards.py): a rerun that reuses them
writes the very page a run without them writes."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.report.cards import (
    CARDS_PREFIX,
    CardStore,
    card_code_id,
    card_of,
    without_provenance,
)
from pipeline.report.html import write_html_report
from pipeline.rundir import Paper, RunReader, SummaryRecord
from pipeline.taxonomy import load_taxonomy

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"

FORUM = "https://openreview.net/forum?id={id}"


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def page(path: Path) -> str:
    """report.html without what differs between two runs of the same records."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r'"generated":"[^"]*"', "", text)
    return re.sub(r"run started [0-9: T-]*UTC", "", text)


def card_files(cache: Path) -> list[Path]:
    return sorted(cache.glob(f"{CARDS_PREFIX}*.jsonl"))


@pytest.fixture
def abstracts(tmp_path: Path) -> Path:
    """Abstracts of both card shapes: plain text (kept without its abstract) and TeX
    markup (kept whole, as segments), with a title and a formula-like cell."""
    path = tmp_path / "in.jsonl"
    rows = [
        {
            "abstract": "We propose FastNet, which improves accuracy by 4.2% on ImageNet "
            "over ResNet-50. It trains 3x faster than prior work.",
            "title": "=FastNet & friends <b>",
            "paper_id": "p1",
        },
        {
            "abstract": "We study $\\textit{in vivo}$ imaging with graph neural networks and "
            "reach 91.5% F1 on Cora. Our method is simple.",
            "paper_id": "p2",
        },
        {"abstract": "A short abstract about reinforcement learning agents in games."},
        {
            # spliced back on a hit: what script_json escapes must be escaped there too
            "abstract": "We show that a < b && c > d holds </script><script>alert(1)"
            '\u2028 for "abstract": texts, and gain 2.5 BLEU on WMT14 with transformers.',
            "number": "17",
            "title": "   ",
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(inputs: Path, cache: Path, out: Path, *extra: object) -> None:
    result = invoke(
        "run", inputs, "--provider", "offline", "--cache-dir", cache, "--out", out,
        "--no-progress", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_a_rerun_reuses_the_cards_and_writes_the_same_page(tmp_path, abstracts):
    cache = tmp_path / "cache"
    run(abstracts, cache, tmp_path / "a" / "out")
    (store,) = card_files(cache)
    kept = store.read_text(encoding="utf-8").splitlines()
    assert len(kept) == 4  # one card per paper, written by the run that asked
    run(abstracts, cache, tmp_path / "b" / "out")  # every stage cached: cached=true records
    assert store.read_text(encoding="utf-8").splitlines() == kept  # all three were hits
    # A page built from the run folder alone (no cards at all) is the same page.
    taxonomy = load_taxonomy(PROMPTS / "taxonomy.yaml")
    rebuilt = write_html_report(tmp_path / "b" / "out", taxonomy, tmp_path / "c" / "out.html")
    first, second = (page(tmp_path / x / "out" / "report.html") for x in "ab")
    assert first == second == page(rebuilt).replace("Digest of out", "Digest of out", 1)


def test_a_plain_abstract_is_not_kept_twice_and_markup_is_kept_whole(tmp_path, abstracts):
    cache = tmp_path / "cache"
    run(abstracts, cache, tmp_path / "a" / "out")
    lines = [json.loads(line) for line in card_files(cache)[0].read_text("utf-8").splitlines()]
    by_id = {line["aux"][0]: line["card"] for line in lines}
    records = {r.id: r for r in RunReader(tmp_path / "a" / "out").records()}
    for paper_id, (head, tail) in by_id.items():
        abstract = records[paper_id].abstract
        if "$" in abstract:
            assert tail is None and "in vivo" in head  # segments: stored as they are
        else:
            assert head.endswith('"abstract":') and tail.startswith(',"status":')


def test_a_card_line_edited_by_hand_is_a_miss_not_a_wrong_card(tmp_path, abstracts):
    cache = tmp_path / "cache"
    run(abstracts, cache, tmp_path / "a" / "out")
    (store,) = card_files(cache)
    text = store.read_text(encoding="utf-8")
    assert "FastNet" in text
    store.write_text(text.replace("FastNet", "SlowNet"), encoding="utf-8")
    run(abstracts, cache, tmp_path / "b" / "out")
    shown = page(tmp_path / "b" / "out" / "report.html")
    assert "SlowNet" not in shown and "FastNet" in shown
    assert shown == page(tmp_path / "a" / "out" / "report.html")


def test_cards_of_other_code_versions_are_deleted_when_a_store_opens(tmp_path):
    stale = tmp_path / f"{CARDS_PREFIX}0000000000000000.jsonl"
    stale.write_text('{"key":"x"}\n', encoding="utf-8")
    other = tmp_path / "claims.jsonl"
    other.write_text("", encoding="utf-8")
    store = CardStore.open(tmp_path, None, FORUM)
    try:
        assert not stale.exists() and other.exists()
        assert store.path.name == f"{CARDS_PREFIX}{card_code_id()[:16]}.jsonl"
    finally:
        store.close()


def test_a_card_never_depends_on_provenance(tmp_path, abstracts):
    """Why the key reads "cached":false as "cached":true (and may ignore provenance)."""
    run(abstracts, tmp_path / "cache", tmp_path / "a" / "out")
    for record in RunReader(tmp_path / "a" / "out").records():
        data = record.model_dump(mode="json")
        for stage in data["stages"].values():
            stage["provenance"].update(cached=True, latency_ms=1e9, attempts=7, model="other")
        changed = SummaryRecord.model_validate(data)
        assert changed != record
        one = card_of(Paper.from_record(record), None, FORUM)
        other = card_of(Paper.from_record(changed), None, FORUM)
        assert one == other


def test_the_key_leaves_out_provenance_and_only_provenance(tmp_path):
    store = CardStore.open(tmp_path, None, FORUM)
    try:
        line = (
            b'{"id":"a","abstract":"x \\"provenance\\":{y}","stages":{"tldr":{"status":"ok",'
            b'"output":{"tldr":"t"},"provenance":{"cached":false,"latency_ms":3.5}},"tags":'
            b'{"status":"ok","output":{"tags":[]},"provenance":{"model":"m}","attempts":1}}}}'
        )
        assert without_provenance(line) == (
            b'{"id":"a","abstract":"x \\"provenance\\":{y}","stages":{"tldr":{"status":"ok",'
            b'"output":{"tldr":"t"},},"tags":{"status":"ok","output":{"tags":[]},",'
            b'"attempts":1}}}}'
        )  # the escaped key inside the abstract stays; a "}" in a value just ends the cut early
        rerun = line.replace(b"false", b"true").replace(b"3.5", b"9.25")
        assert store.key(line) == store.key(rerun)
        assert store.key(line) != store.key(line.replace(b'"t"', b'"u"'))
        assert store.key(line) != CardStore.open(tmp_path, None, FORUM + "&x").key(line)
        taxonomy = load_taxonomy(PROMPTS / "taxonomy.yaml")
        assert store.key(line) != CardStore.open(tmp_path, taxonomy, FORUM).key(line)
    finally:
        store.close()


def test_a_forced_rerun_reuses_the_cards(tmp_path, abstracts):
    cache = tmp_path / "cache"
    run(abstracts, cache, tmp_path / "a" / "out")
    (store,) = card_files(cache)
    kept = store.read_text(encoding="utf-8")
    run(abstracts, cache, tmp_path / "b" / "out", "--force")  # new latencies, same content
    assert store.read_text(encoding="utf-8") == kept


def test_a_card_file_that_cannot_be_read_is_dropped_with_a_warning_not_the_run(
    tmp_path, abstracts, monkeypatch, caplog
):
    from pipeline.cache import StageCache

    cache = tmp_path / "cache"
    run(abstracts, cache, tmp_path / "a" / "out")
    lookup = StageCache.lookup_line

    def failing_lookup(self, key):
        if self.path.name.startswith(CARDS_PREFIX):
            raise OSError(116, "Stale file handle")
        return lookup(self, key)

    monkeypatch.setattr(StageCache, "lookup_line", failing_lookup)
    with caplog.at_level(logging.WARNING):
        run(abstracts, cache, tmp_path / "b" / "out")
    assert sum("no longer read" in r.getMessage() for r in caplog.records) == 1
    assert page(tmp_path / "a" / "out" / "report.html") == page(
        tmp_path / "b" / "out" / "report.html"
    )


def test_the_code_digest_is_taken_at_import_not_when_a_store_opens(monkeypatch):
    before = card_code_id()

    def changed(self):
        raise AssertionError("read again")

    monkeypatch.setattr(Path, "read_bytes", changed)
    assert card_code_id() == before


def test_a_store_that_cannot_be_written_is_dropped_with_a_warning_not_the_run(
    tmp_path, abstracts, monkeypatch, caplog
):
    from pipeline.cache import StageCache
    from pipeline.errors import StorageError

    put = StageCache.put

    def failing_put(self, key, record, *, index=True):
        if self.path.name.startswith(CARDS_PREFIX):
            raise StorageError("no space left on device")
        return put(self, key, record, index=index)

    monkeypatch.setattr(StageCache, "put", failing_put)
    with caplog.at_level(logging.WARNING):
        run(abstracts, tmp_path / "cache", tmp_path / "a" / "out")
    assert sum("no longer kept" in r.getMessage() for r in caplog.records) == 1
    monkeypatch.setattr(StageCache, "put", put)
    run(abstracts, tmp_path / "cache2", tmp_path / "b" / "out")
    assert page(tmp_path / "a" / "out" / "report.html") == page(
        tmp_path / "b" / "out" / "report.html"
    )


def test_a_rerun_over_the_shipped_examples_writes_the_same_page(tmp_path, examples_dir):
    """Many papers: tag order, user ids and numbers (the OpenReview export) all reach the
    page's sort orders and facets, which a hit feeds from the stored card."""
    cache = tmp_path / "cache"
    inputs = [examples_dir, examples_dir.parent / "openreview" / "submissions.json"]
    for name in "ab":
        result = invoke(
            "run", *inputs, "--provider", "offline", "--cache-dir", cache,
            "--out", tmp_path / name / "out", "--no-progress",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    (store,) = card_files(cache)
    n = len(store.read_text(encoding="utf-8").splitlines())
    assert n > 100
    first, second = (page(tmp_path / x / "out" / "report.html") for x in "ab")
    assert first == second
    assert len(store.read_text(encoding="utf-8").splitlines()) == n


def test_without_a_code_digest_no_cards_are_kept(tmp_path, monkeypatch, caplog):
    """Sources that cannot be read give no digest: no card could be told stale, so none is
    kept (and importing the report code never fails on it)."""
    from pipeline.report import cards

    def unreadable(self):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as m:
        m.setattr(Path, "read_bytes", unreadable)
        assert cards._code_id() is None
    monkeypatch.setattr(cards, "_CODE_ID", None)
    with caplog.at_level(logging.WARNING):
        assert CardStore.open(tmp_path, None, FORUM) is None
    assert "cannot be read" in caplog.text
    assert card_files(tmp_path) == []
