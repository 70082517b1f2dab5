"""The realistic-answer corpus and the LLM path end to end (issue 10, points 2-4 and 6):
answers written as models write them, served by a local replay server to the real `openai`
client on 127.0.0.1; re-asks over HTTP; cached tokens; progress; cost line; dry run."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from samples import FAKE_KEY

from pipeline.cli import main
from pipeline.cli.progress import BarProgress
from pipeline.config import load_settings
from pipeline.ingest import read_inputs
from pipeline.job import run_job
from pipeline.pricing import DEFAULT_PRICES, Price, format_cost, price_for
from pipeline.testing.realistic import VARIANTS, build, load_corpus, run_variant
from pipeline.testing.replay_server import ReplayServer
from pipeline.text import normalize_ws, text_hash

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


def _strings(value: object) -> list[str]:
    """Every string inside a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


_SAME_ABSTRACTS_AS_THE_NUMBERS_GOLD = {
    "claims_gold_dev_numbers.jsonl",
    "claims_dev_numbers_annotator2.jsonl",
    "claims_gold_dev2_numbers.jsonl",
    "tags_gold_dev2.jsonl",
}


def _shipped_text() -> str:
    """All text of the shipped examples and of tests/data, JSON decoded, one string.

    Left out: the corpus itself, and the dev gold files drawn after the base dev set, which
    hold corpus abstracts as evaluation data for another extractor, never as an input:
    claims_gold_dev_numbers.jsonl, the offline extractor's quantitative gold supplement
    (18 of its 54 rows are corpus abstracts), agreement/claims_dev_numbers_annotator2.jsonl,
    a second annotator's labels of those same abstracts, claims_gold_dev2_numbers.jsonl (3 of
    132) and tags_gold_dev2.jsonl (8 of 60), the second dev numbers supplement and tags set.
    """
    parts: list[str] = []
    files = [*(REPO / "examples").rglob("*"), *(REPO / "tests" / "data").rglob("*")]
    for path in sorted(files):
        if not path.is_file() or "realistic" in path.parts:
            continue
        if path.name in _SAME_ABSTRACTS_AS_THE_NUMBERS_GOLD or path.suffix == ".py":
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            parts += _strings(json.loads(text))
        elif path.suffix == ".jsonl":
            for line in text.splitlines():
                if line.strip():
                    row = json.loads(line)
                    parts += _strings(row)
                    if isinstance(row.get("source"), list):
                        parts.append(" ".join(row["source"]))
        else:
            parts.append(text)
    return "\n".join(parts)


def test_the_corpus_is_40_plus_abstracts_the_project_does_not_ship(corpus):
    assert len(corpus) >= 40
    shipped = _shipped_text()
    assert len(shipped) > 500_000  # the examples and gold sets were read
    assert [p.id for p in corpus if p.abstract in shipped] == []
    ids = {text_hash(t) for t in shipped.split("\n")}
    assert not ids & {p.id for p in corpus}
    assert sum(len(p.claims) for p in corpus) >= 70


def test_variants_really_differ_from_the_natural_answers(corpus):
    natural, _ = build("natural", corpus)
    retyped, _ = build("typography", corpus)
    shaped, _ = build("shapes", corpus)
    for key, text in natural.items():
        if key[0] == "claims" and json.loads(text)["claims"]:
            evidence = [c["evidence"] for c in json.loads(text)["claims"]]
            changed = [c["evidence"] for c in json.loads(retyped[key])["claims"]]
            assert all(a != b for a, b in zip(evidence, changed, strict=True)), key
            assert shaped[key] != text
    _, fabricated = build("fabricated", corpus)
    assert fabricated.fabricated_claims > len(corpus) and fabricated.fabricated_tags == len(corpus)


def test_faithful_claims_are_kept_and_nothing_fabricated_reaches_the_output(corpus, tmp_path):
    """The issue's target, re-asks off: >= 99% of faithful claims kept, 0 fabricated items."""
    scores = [run_variant(v, corpus, tmp_path, max_reasks=0) for v in VARIANTS]
    faithful = sum(s.faithful for s in scores)
    kept = sum(s.kept for s in scores)
    assert kept / faithful >= 0.99, [(s.variant, s.kept, s.faithful) for s in scores]
    assert sum(s.fabricated_in_output for s in scores) == 0
    assert all(s.fabricated == 0 for s in scores if s.variant != "fabricated")
    assert scores[-1].fabricated > 0  # the fabricated variant did hold fabrications
    assert all(s.requests == 3 * len(corpus) for s in scores)  # re-asks off: one per stage


ABSTRACT = (
    "We present Zip, a sparse attention layer. Zip cuts inference latency by 41% on "
    "LongBench. It also matches dense attention on GLUE."
)
GOOD = [
    {"statement": "s", "kind": "quantitative", "metric": "latency", "value": "41", "unit": "%",
     "dataset": "LongBench", "comparison": None, "evidence": "Zip cuts inference latency by 41%"},
    {"statement": "s", "kind": "qualitative", "metric": None, "value": None, "unit": None,
     "dataset": "GLUE", "comparison": "dense attention", "evidence": "It also matches dense attention on GLUE"},
]  # fmt: skip
CHANGED = {**GOOD[0], "value": "14", "evidence": "Zip cuts inference latency by 14%"}


def settings_for(url, tmp_path, **overrides):
    values = {
        "provider": "openai",
        "base_url": url,
        "model": "gpt-4o-mini",
        "cache_dir": tmp_path / "cache",
        "out_dir": tmp_path / "run",
        "progress": False,
        "max_retries": 0,
        **overrides,
    }
    return load_settings(None, env={"OPENAI_API_KEY": FAKE_KEY}, overrides=values)


def write_inputs(tmp_path, texts):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"abstract": t}) + "\n" for t in texts))
    return path


def test_a_reask_over_http_names_the_rejected_claim_and_quotes_nothing_to_copy(tmp_path):
    def answer(call):
        if call.stage != "claims":
            return {"tldr": '{"tldr": "Zip is a sparse attention layer."}'}.get(
                call.stage, '{"tags": ["efficient-attention"], "keywords": []}'
            )
        return json.dumps({"claims": [CHANGED, GOOD[1]] if call.attempt == 1 else [GOOD[0]]})

    with ReplayServer(answer) as server:
        settings = settings_for(server.base_url, tmp_path, stages="claims", max_reasks=1)
        run_job(settings, read_inputs([write_inputs(tmp_path, [ABSTRACT])]), settings.out_dir)
        bodies = list(server.requests)
    assert len(bodies) == 2
    reask = bodies[1]["messages"][-1]["content"]
    assert "claims[0]" in reask and "claims[1]" not in reask
    # The invented number is named; the abstract's own is not offered to copy (issue 20.2).
    assert "Zip cuts inference latency by 41%" not in reask and "closest" not in reask
    record = json.loads((tmp_path / "run" / "summaries.jsonl").read_text())
    evidence = [c["evidence"] for c in record["stages"]["claims"]["output"]["claims"]]
    assert evidence == [GOOD[0]["evidence"], GOOD[1]["evidence"]]


def tags_answer(call):
    return '{"tags": ["efficient-attention"], "keywords": []}'


def no_claims_answer(call):
    return '{"claims": []}'


def test_cached_prompt_tokens_are_recorded_in_provenance_and_manifest(tmp_path):
    texts = [f"{ABSTRACT} Variant {i}." for i in range(3)]
    with ReplayServer(no_claims_answer, prompt_cache=True) as server:
        settings = settings_for(
            server.base_url,
            tmp_path,
            stages="claims",
            max_concurrency=1,
            response_format="json_object",
        )
        result = run_job(settings, read_inputs([write_inputs(tmp_path, texts)]), settings.out_dir)
    records = [
        json.loads(x) for x in (tmp_path / "run" / "summaries.jsonl").read_text().splitlines()
    ]
    cached = [r["stages"]["claims"]["provenance"]["tokens_cached"] for r in records]
    # The claims system prompt with json_object's example and rules (>= 1,024 tokens) is the
    # same for every abstract: the first request fills the provider's cache, the next read it.
    assert cached[0] == 0 and all(c >= 1024 for c in cached[1:])
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["tokens"]["cached"] == sum(cached) == result.stats.tokens_cached
    assert manifest["counts"]["stages"]["claims"]["tokens_cached"] == sum(cached)


class Recording(BarProgress):
    """The CLI's bar, drawing into a buffer, with the order of events recorded."""

    def __init__(self, release: threading.Event, others: int) -> None:
        super().__init__(DEFAULT_PRICES["gpt-4o-mini"], file=io.StringIO(), mininterval=0)
        self.release = release
        self.others = others
        self.events: list[str] = []
        self.lock = threading.Lock()

    def stage_done(self, stage, **kw):
        super().stage_done(stage, **kw)
        self.events.append("stage")
        if self.events.count("stage") == self.others:
            self.release.set()  # every other abstract is done: let the first one finish

    def record_done(self):
        self.events.append("record")


def test_progress_moves_with_each_result_while_the_first_record_is_still_pending(tmp_path):
    """The issue's bar sat at 1/57: records are written in order, so a slow first abstract
    held it. Now every finished request moves it, before any record is complete."""
    texts = [f"{ABSTRACT} Copy {i}." for i in range(5)]
    release = threading.Event()
    progress = Recording(release, others=(len(texts) - 1) * 3)

    def hold(call):
        return release if call.abstract.endswith("Copy 0.") else None

    def answer(call):
        return {
            "tldr": '{"tldr": "Zip is a sparse attention layer."}',
            "tags": '{"tags": ["efficient-attention"], "keywords": []}',
            "claims": json.dumps({"claims": GOOD}),
        }[call.stage]

    with ReplayServer(answer, latency=0.6, hold=hold) as server:
        settings = settings_for(server.base_url, tmp_path)
        run_job(
            settings,
            read_inputs([write_inputs(tmp_path, texts)]),
            settings.out_dir,
            progress=progress,
        )
    first_record = progress.events.index("record")
    assert first_record >= progress.others  # 12 results counted before any record was done
    assert progress.events.count("stage") == 15 and progress.events.count("record") == 5
    shown = progress._file.getvalue()
    assert "tldr 4/5" in shown and "claims 5/5" in shown
    assert "in" in shown and "~$" in shown  # tokens and the estimated cost so far


def digest(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_dry_run_prints_the_plan_and_sends_nothing(tmp_path, digest_at):
    texts = [f"{ABSTRACT} Copy {i}." for i in range(4)]
    inputs = write_inputs(tmp_path, texts)
    common = {"model": "gpt-4o-mini", "cache": "c"}

    def answer(call):
        return {
            "tldr": '{"tldr": "Zip is a sparse attention layer."}',
            "tags": '{"tags": ["efficient-attention"], "keywords": []}',
            "claims": json.dumps({"claims": GOOD}),
        }[call.stage]

    with ReplayServer(answer) as server:
        url = server.base_url
        dry = digest_at(url, inputs, "--dry-run", out="dry", progress=True, **common)
        assert dry.exit_code == 0, dry.output
        assert server.http_requests == 0  # not one request, not even a models list
        assert not (tmp_path / "dry").exists() and not (tmp_path / "c").exists()
        assert "total: 12 requests" in dry.output
        assert "estimated cost: $" in dry.output and "gpt-4o-mini list prices" in dry.output
        # Run two of the four, then plan again: cached results are not counted.
        half = (
            write_inputs(tmp_path / "half", texts[:2])
            if (tmp_path / "half").mkdir() is None
            else None
        )
        real = digest_at(url, half, out="run", **common)
        assert real.exit_code == 0, real.output
        sent = server.http_requests
        again = digest_at(url, inputs, "--dry-run", out=None, progress=True, **common)
        assert server.http_requests == sent
    assert "total: 6 requests" in again.output
    assert "cached       2" in again.output


def test_a_run_ends_with_tokens_and_an_estimated_cost(tmp_path, digest_at):
    inputs = write_inputs(tmp_path, [ABSTRACT])
    config = tmp_path / "config.yaml"
    config.write_text("prices:\n  my-model: {input: 1000, cached_input: 500, output: 2000}\n")
    with ReplayServer(tags_answer) as server:
        base = (server.base_url, inputs, "--stages", "tags")
        known = digest_at(*base, model="gpt-4o-mini", out="a", cache="c")
        priced = digest_at(*base, "--config", config, model="my-model", out="b", cache="c")
        unknown = digest_at(*base, model="mystery-7b", out="d", cache="c")
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    tokens_in, tokens_out = manifest["tokens"]["in"], manifest["tokens"]["out"]
    line = next(x for x in priced.output.splitlines() if x.startswith("tokens:"))
    assert line == (
        f"tokens: {tokens_in:,} input (0 cached), {tokens_out:,} output; estimated cost "
        f"{format_cost((tokens_in * 1000 + tokens_out * 2000) / 1e6)} at my-model list prices"
    )
    assert "estimated cost $0.0" in known.output and "at gpt-4o-mini list prices" in known.output
    assert "no price for 'mystery-7b'" in unknown.output


def test_prices_resolve_dated_snapshots_and_config_overrides():
    assert price_for("gpt-4o-mini-2024-07-18", {}) == DEFAULT_PRICES["gpt-4o-mini"]
    assert price_for("gpt-4.1", {}) != price_for("gpt-4.1-mini", {})
    own = Price(input=1, output=2)
    assert price_for("gpt-4o", {"gpt-4o": own}) is own
    assert price_for("llama-3-8b", {}) is None
    assert DEFAULT_PRICES["gpt-4o-mini"].cost(1_000_000, 500_000, 1_000_000) == pytest.approx(
        0.5 * 0.15 + 0.5 * 0.075 + 0.60
    )
    assert set(DEFAULT_PRICES) >= {"gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "gpt-4.1", "o4-mini"}


def test_replay_keys_ignore_whitespace_normalization(corpus):
    table, _ = build("natural", corpus)
    assert all(abstract == normalize_ws(abstract) for _, abstract in table)


def test_the_cli_progress_bar_shows_the_cost_so_far(tmp_path, monkeypatch, digest_at):
    """`digest run` (no --no-progress) draws the bar with the estimated cost so far, from
    the same price as the closing cost line; the offline backend's bar shows no cost."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    inputs = write_inputs(tmp_path, [ABSTRACT])
    common = ["run", str(inputs), "--stages", "tags", "--cache-dir", str(tmp_path / "c")]
    with ReplayServer(tags_answer) as server:
        priced = digest_at(
            server.base_url, inputs, "--stages", "tags", model="gpt-4o-mini", out="a",
            cache="c", progress=True,
        )  # fmt: skip
    assert priced.exit_code == 0, priced.output + priced.stderr
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    tokens = manifest["tokens"]
    cost = DEFAULT_PRICES["gpt-4o-mini"].cost(tokens["in"], tokens["cached"], tokens["out"])
    bar = priced.stderr
    assert "tags 1/1" in bar and f"{tokens['out']:,} out ~${cost:.4f}" in bar
    assert f"estimated cost ${cost:.4f} at gpt-4o-mini list prices" in priced.output

    offline = digest(*common, "--provider", "offline", "--out", str(tmp_path / "b"))
    assert offline.exit_code == 0, offline.output + offline.stderr
    assert "tags 1/1" in offline.stderr and "~$" not in offline.stderr


def test_the_replay_server_lists_the_model_the_bench_asks_for(tmp_path, caplog):
    """The realistic bench (pipeline.testing.realistic) asks for gpt-4o-mini: the preflight finds it in GET /models, so the
    bench prints no 'not in the models ... lists' warning."""
    with ReplayServer(tags_answer) as server:
        settings = settings_for(server.base_url, tmp_path, stages="tags")
        with caplog.at_level("WARNING"):
            run_job(settings, read_inputs([write_inputs(tmp_path, [ABSTRACT])]), settings.out_dir)
    assert settings.model == "gpt-4o-mini"
    assert not [r for r in caplog.records if "is not in the models" in r.getMessage()]
