"""`--affinity embeddings`: vectors from the configured /v1/embeddings (the local fake server
through the real openai client), cached by model and text, added to the built-in affinity."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import openai
import pytest
from click.testing import CliRunner

from pipeline.assign import PastPaper, Reviewer, assign
from pipeline.assign.affinity import Scorer
from pipeline.assign.embeddings import EMBEDDING_WEIGHT, EmbeddingStats, embeddings_source
from pipeline.cli import main
from pipeline.rundir import Paper
from pipeline.testing.embeddings import embedding_vector
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

RUN = Path(__file__).parent / "data" / "run_small"
KEY = "sk-test-embeddings-0000000000000000"


@pytest.fixture
def server():
    with OpenAIServer(ServerConfig(api_key=KEY)) as srv:
        yield srv


def test_the_fake_endpoint_answers_the_real_client_deterministically(server):
    client = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
    texts = ["graph neural networks over-squash", "diffusion models denoise images"]
    for fmt in ("float", "base64"):
        kwargs = {"encoding_format": fmt} if fmt == "float" else {}  # the SDK's default: base64
        answer = client.embeddings.create(model="m", input=texts, **kwargs)
        got = [np.asarray(d.embedding, dtype=np.float32) for d in answer.data]
        for vec, text in zip(got, texts, strict=True):
            np.testing.assert_allclose(vec, embedding_vector(text), atol=1e-6)
    a, b, c = (embedding_vector(t) for t in ["graph networks", "graph networks deep", "birds"])
    assert a @ b > 0.5 and abs(a @ c) < 0.5
    client.close()


class Tilt:
    """A source that likes reviewer 1 for paper 0 only (tests the named-source hook)."""

    name = "embeddings"

    def block(self, rows):
        out = np.zeros((len(rows), 2), dtype=np.float32)
        out[rows == 0, 1] = 1.0
        return out

    def pairs(self, papers, reviewers):
        return ((papers == 0) & (reviewers == 1)).astype(float)


def test_a_source_is_added_with_its_weight_and_changes_the_choice():
    papers = [Paper(id="p0", title="T", abstract="x", tags=("t",))]
    reviewers = [Reviewer(id="a", tags=("t",)), Reviewer(id="b")]
    builtin = assign(papers, reviewers, per_paper=1, max_load=1)
    assert [r for _, r, _ in builtin.pairs] == ["a"]  # 3 (tag + primary) vs 0
    tilted = assign(papers, reviewers, per_paper=1, max_load=1, sources=[(Tilt(), 5.0)])
    ((_, r, m),) = tilted.pairs
    assert r == "b" and m.affinity == 5.0 and m.embedding == 1.0
    assert "embedding similarity 1.00" in m.reason()
    scorer = Scorer(papers, reviewers, [(Tilt(), 5.0)])
    assert scorer.block(np.asarray([0])).tolist() == [[3.0, 5.0]]


def test_weights_set_the_embeddings_weight_and_must_name_a_source_given():
    from pipeline.assign.scores import Scoring
    from pipeline.errors import ConfigError

    papers = [Paper(id="p0", title="T", abstract="x", tags=("t",))]
    reviewers = [Reviewer(id="a", tags=("t",)), Reviewer(id="b")]
    light = Scoring(weights={"embeddings": 2.0}, affinity_sources=("embeddings",))
    kept = assign(
        papers, reviewers, per_paper=1, max_load=1, sources=[(Tilt(), 5.0)], scoring=light
    )
    ((_, r, m),) = kept.pairs
    assert r == "a" and m.affinity == 3.0  # 3 (tag + primary) beats 2 x 1.0 (5 x 1.0 did not)
    with pytest.raises(ConfigError, match="names no source: embeddings"):
        assign(
            papers, reviewers, per_paper=1, max_load=1, scoring=Scoring(weights={"embeddings": 2.0})
        )


def test_embeddings_are_cached_by_model_and_text(server, tmp_path):
    client = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
    calls: list[list[str]] = []

    def embed(texts):
        calls.append(texts)
        answer = client.embeddings.create(model="m1", input=texts, encoding_format="float")
        return [np.asarray(d.embedding, dtype=np.float32) for d in answer.data]

    papers = [Paper(id="p0", title="Graphs", abstract="message passing graph networks")]
    reviewers = [
        Reviewer(id="g", papers=(PastPaper(title="GNN", abstract="graph networks squash"),)),
        Reviewer(id="d", papers=(PastPaper(title="Diffusion", abstract="denoise images"),)),
        Reviewer(id="none"),
    ]
    stats = EmbeddingStats()
    src = embeddings_source(
        papers, reviewers, embed, tmp_path, model="m1", endpoint="e", stats=stats
    )
    assert (stats.texts, stats.cached, stats.fetched) == (3, 0, 3)
    sims = src.block(np.asarray([0]))[0]
    assert sims[0] > sims[1] and sims[2] == 0
    np.testing.assert_allclose(src.pairs(np.asarray([0, 0]), np.asarray([0, 1])), sims[:2])
    again = EmbeddingStats()
    src2 = embeddings_source(
        papers, reviewers, embed, tmp_path, model="m1", endpoint="e", stats=again
    )
    assert (again.cached, again.fetched, len(calls)) == (3, 0, 1)
    np.testing.assert_allclose(src2.block(np.asarray([0])), src.block(np.asarray([0])))
    other = EmbeddingStats()
    embeddings_source(papers, reviewers, embed, tmp_path, model="m2", endpoint="e", stats=other)
    assert other.fetched == 3  # another model is another key
    client.close()


def test_cli_affinity_embeddings_against_the_local_server(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./config.yaml
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text(
        "reviewers:\n"
        "  - {id: gen, papers: [{title: Distilling diffusion, abstract: one-step image "
        "generation distills diffusion models}]}\n"
        "  - {id: lm, papers: [{title: Language models, abstract: large language models "
        "answer questions}]}\n"
        "  - {id: none}\n"
    )
    args = ["assign", str(run), str(reviewers), "--per-paper", "1", "--max-load", "6"]
    args += ["--affinity", "embeddings", "--base-url", server.base_url]
    args += ["--cache-dir", str(tmp_path / "cache")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "fetched in 1 request(s)" in res.stderr
    requests = server.stats()["by_stage"]["embeddings"]
    assert requests == 1
    rows = list(csv.DictReader((run / "assignments.csv").open(encoding="utf-8")))
    with_vectors = [r for r in rows if r["reviewer_id"] != "none"]
    assert with_vectors and all(r["embedding_similarity"] for r in with_vectors)
    for r in with_vectors:
        builtin = 10 * float(r["text_similarity_blended"])  # no tags or keywords here
        expected = builtin + EMBEDDING_WEIGHT * float(r["embedding_similarity"])
        assert float(r["affinity_total"]) == pytest.approx(expected, abs=2e-3)
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "0 fetched in 0 request(s)" in res.stderr
    assert server.stats()["by_stage"]["embeddings"] == requests  # all from the cache
    assert KEY not in res.output


def test_cli_affinity_embeddings_needs_an_endpoint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    reviewers = tmp_path / "r.yaml"
    reviewers.write_text("reviewers:\n  - {id: a}\n")
    res = CliRunner().invoke(
        main, ["assign", str(RUN), str(reviewers), "--per-paper", "1", "--affinity", "embeddings"]
    )
    assert res.exit_code == 2 and "--affinity embeddings needs an endpoint" in res.stderr


def test_cli_a_refused_embeddings_request_exits_3_and_writes_nothing(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wrong = "sk-wrong-key-1111111111111111111111"
    monkeypatch.setenv("OPENAI_API_KEY", wrong)
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    reviewers = tmp_path / "r.yaml"
    reviewers.write_text("reviewers:\n  - {id: a, papers: [{title: T, abstract: words here}]}\n")
    res = CliRunner().invoke(
        main,
        ["assign", str(run), str(reviewers), "--per-paper", "1", "--max-load", "6"]
        + ["--affinity", "embeddings", "--base-url", server.base_url],
    )
    assert res.exit_code == 3, res.output
    assert "refused embeddings (401" in res.stderr and wrong not in res.output
    assert not (run / "assignments.csv").exists()


def test_a_long_text_is_cut_before_it_is_sent(tmp_path):
    from pipeline.assign.embeddings import MAX_CHARS, embed_texts
    from pipeline.cache import StageCache

    sent: list[str] = []

    def embed(texts):
        sent.extend(texts)
        return [embedding_vector(t) for t in texts]

    store = StageCache(tmp_path / "e.jsonl")
    out = embed_texts(["word " * 10_000, "short text"], embed, store, model="m", endpoint="e")
    store.close()
    assert [len(t) for t in sent] == [MAX_CHARS, len("short text")]
    assert out.shape == (2, 256) and np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
