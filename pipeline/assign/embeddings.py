"""The `embeddings` affinity source: cosine of embedding vectors from the configured endpoint.

Submissions (title + abstract) and every reviewer's past papers are embedded through the
OpenAI-compatible `/v1/embeddings` endpoint of the settings (the same base_url and key as
the chat backend). Vectors are cached like stage answers: `<cache_dir>/embeddings.jsonl`,
an append-only StageCache keyed by `cache_key` over (model, endpoint, sha256 of the text),
so a rerun, or another run with the same papers, sends nothing for them.

A reviewer's similarity to a paper is aggregated like the TF-IDF text: 0.5 x the best
cosine + 0.5 x the mean over their past papers (0 without past papers). `EmbeddingSource`
is a named affinity source (`name = "embeddings"`): `block(rows)` is a papers x reviewers
matrix of the same shape as the built-in affinity's, which the assignment adds with its
weight (`EMBEDDING_WEIGHT` by default, the weight of the TF-IDF text).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.assign.reviewers import Reviewer
from pipeline.cache import StageCache, cache_key
from pipeline.errors import FatalBackendError
from pipeline.rundir import Paper

log = logging.getLogger(__name__)

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
EMBEDDING_WEIGHT = 10.0  # affinity per unit of aggregated cosine, as the TF-IDF text's
EMBEDDINGS_CACHE = "embeddings.jsonl"
BATCH_INPUTS = 128  # texts per request
MAX_CHARS = 24_000  # a text is cut here: under the 8,191-token input limit of OpenAI's models
MAX_SHARE = 0.5  # similarity = share * best + (1 - share) * mean over the past papers
SCHEMA_VERSION = 1

Embedder = Callable[[list[str]], list[np.ndarray]]  # texts -> one vector each, in order


def embedding_key(model: str, endpoint: str, text: str) -> str:
    """The cache key of one text's vector: model, endpoint and the text's sha256."""
    return cache_key(
        abstract_text=text,
        stage="embeddings",
        prompt_hash="",
        schema_version=SCHEMA_VERSION,
        backend="openai",
        model=model,
        params={"endpoint": endpoint},
    )


def _decode(record: dict | None) -> np.ndarray | None:
    if not record or not isinstance(record.get("vector"), str):
        return None
    try:
        raw = base64.b64decode(record["vector"], validate=True)
    except ValueError:
        return None
    if not raw or len(raw) % 4 or len(raw) // 4 != record.get("dims"):
        return None
    vec = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    return vec if np.isfinite(vec).all() else None


@dataclass
class EmbeddingStats:
    """How the vectors were obtained."""

    texts: int = 0  # distinct non-empty texts
    cached: int = 0
    fetched: int = 0
    requests: int = 0


def embed_texts(
    texts: Sequence[str],
    embedder: Embedder,
    store: StageCache,
    *,
    model: str,
    endpoint: str,
    stats: EmbeddingStats | None = None,
) -> np.ndarray:
    """Unit vectors of `texts` (rows; an empty text is a zero row), cache first."""
    stats = stats if stats is not None else EmbeddingStats()
    texts = [t[:MAX_CHARS] for t in texts]
    keys = {t: embedding_key(model, endpoint, t) for t in dict.fromkeys(texts) if t.strip()}
    found: dict[str, np.ndarray] = {}
    missing: list[str] = []
    for text, key in keys.items():
        vec = _decode(store.get(key))
        if vec is None:
            missing.append(text)
        else:
            found[text] = vec
    stats.texts += len(keys)
    stats.cached += len(found)
    for start in range(0, len(missing), BATCH_INPUTS):
        chunk = missing[start : start + BATCH_INPUTS]
        vectors = embedder(chunk)
        stats.requests += 1
        if len(vectors) != len(chunk):
            raise FatalBackendError(
                f"{endpoint} returned {len(vectors)} embeddings for {len(chunk)} texts"
            )
        for text, vec in zip(chunk, vectors, strict=True):
            vec = np.asarray(vec, dtype=np.float32).ravel()
            if not len(vec) or not np.isfinite(vec).all():
                raise FatalBackendError(f"{endpoint} returned an empty or non-finite embedding")
            store.put(
                keys[text],
                {
                    "model": model,
                    "dims": len(vec),
                    "vector": base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii"),
                },
            )
            found[text] = vec
        stats.fetched += len(chunk)
    dims = {len(v) for v in found.values()}
    if len(dims) > 1:
        raise FatalBackendError(
            f"embeddings of {model} at {endpoint} have different lengths {sorted(dims)}"
        )
    width = dims.pop() if dims else 1
    out = np.zeros((len(texts), width), dtype=np.float32)
    for n, text in enumerate(texts):
        vec = found.get(text)
        if vec is not None:
            norm = float(np.linalg.norm(vec))
            out[n] = vec / norm if norm else vec
    return out


class EmbeddingSource:
    """Aggregated embedding cosine of every (paper, reviewer) pair, by blocks of papers."""

    name = "embeddings"

    def __init__(self, paper_vectors: np.ndarray, reviewers: Sequence[Reviewer], past: np.ndarray):
        self.papers = paper_vectors
        self.n_reviewers = len(reviewers)
        counts = np.asarray([len(r.papers) for r in reviewers], dtype=np.int64)
        self._past_t = np.ascontiguousarray(past.T)
        self._with_papers = np.flatnonzero(counts)
        self._starts = np.concatenate([[0], np.cumsum(counts[self._with_papers])[:-1]]).astype(
            np.int64
        )
        self._counts = counts[self._with_papers].astype(np.float32)
        self._first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def block(self, rows: np.ndarray) -> np.ndarray:
        """Similarity of some papers (rows) to every reviewer: float32 (rows x reviewers)."""
        out = np.zeros((len(rows), self.n_reviewers), dtype=np.float32)
        if not len(rows) or not len(self._with_papers):
            return out
        cos = self.papers[rows] @ self._past_t
        best = np.maximum.reduceat(cos, self._starts, axis=1)
        mean = np.add.reduceat(cos, self._starts, axis=1) / self._counts
        out[:, self._with_papers] = MAX_SHARE * best + (1 - MAX_SHARE) * mean
        return out

    def pairs(self, papers: np.ndarray, reviewers: np.ndarray) -> np.ndarray:
        """Similarity of each (papers[n], reviewers[n]) pair: float64."""
        out = np.zeros(len(papers))
        for n, (i, j) in enumerate(zip(papers.tolist(), reviewers.tolist(), strict=True)):
            lo, hi = self._first[j], self._first[j + 1]
            if hi > lo:
                cos = self.papers[i] @ self._past_t[:, lo:hi]
                out[n] = MAX_SHARE * float(cos.max()) + (1 - MAX_SHARE) * float(cos.mean())
        return out


def paper_text(paper: Paper) -> str:
    """What a submission is embedded from: title and abstract."""
    return f"{paper.title or ''}\n{paper.abstract}".strip()


def embeddings_source(
    papers: Sequence[Paper],
    reviewers: Sequence[Reviewer],
    embedder: Embedder,
    cache_dir: Path,
    *,
    model: str,
    endpoint: str,
    stats: EmbeddingStats | None = None,
) -> EmbeddingSource:
    """The source for these papers and reviewers, vectors from the cache or the endpoint."""
    store = StageCache(Path(cache_dir) / EMBEDDINGS_CACHE)
    stats = stats if stats is not None else EmbeddingStats()

    def vectors(texts: list[str]) -> np.ndarray:
        return embed_texts(texts, embedder, store, model=model, endpoint=endpoint, stats=stats)

    paper_texts = [paper_text(p) for p in papers]
    past_texts = [pp.text for r in reviewers for pp in r.papers]
    try:
        every = vectors(paper_texts + past_texts)  # one request per BATCH_INPUTS texts
    finally:
        store.close()
    return EmbeddingSource(every[: len(paper_texts)], reviewers, every[len(paper_texts) :])


def openai_embedder(settings, model: str) -> tuple[Embedder, Callable[[], None]]:  # noqa: ANN001
    """An Embedder over the settings' endpoint (SDK client, its own retries) and its close."""
    import openai

    from pipeline.backends.openai_backend import connection_cause, error_detail, sync_client
    from pipeline.config import DEFAULT_BASE_URL, public_url
    from pipeline.redact import Redactor, secrets_of

    where = settings.endpoint or public_url(DEFAULT_BASE_URL)
    redact = Redactor(secrets_of(settings))
    client = sync_client(settings, max_retries=settings.max_retries, timeout_s=settings.timeout_s)

    def embed(texts: list[str]) -> list[np.ndarray]:
        try:
            answer = client.embeddings.create(model=model, input=texts, encoding_format="float")
        except openai.APIStatusError as exc:
            message = f"{where} refused embeddings ({exc.status_code}: {error_detail(exc)})"
            if exc.status_code == 401:
                message += "; set OPENAI_API_KEY to a valid key"
            raise FatalBackendError(redact(message)) from None
        except openai.APIConnectionError as exc:
            cause = connection_cause(exc) or str(exc)
            raise FatalBackendError(
                redact(f"cannot reach {where} for embeddings: {cause}")
            ) from None
        data = sorted(answer.data, key=lambda d: d.index)
        return [np.asarray(d.embedding, dtype=np.float32) for d in data]

    return embed, client.close
