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
from pipeline.report.cards import CARDS_PREFIX, CardStore, card_code_id, card_of
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
    assert len(kept) == 3  # one card per paper, written by the run that asked
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
    store = CardStore(tmp_path, None, FORUM)
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


def test_the_key_reads_a_fresh_record_as_its_cached_rerun(tmp_path):
    store = CardStore(tmp_path, None, FORUM)
    try:
        fresh = b'{"id":"a","stages":{"tldr":{"provenance":{"cached":false}}}}'
        assert store.key(fresh) == store.key(fresh.replace(b"false", b"true"))
        assert store.key(fresh) != store.key(fresh.replace(b'"a"', b'"b"'))
        assert store.key(fresh) != CardStore(tmp_path, None, FORUM + "&x").key(fresh)
    finally:
        store.close()


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
