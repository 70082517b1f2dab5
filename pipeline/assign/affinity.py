"""Affinity of a reviewer for a paper: tags, keywords and the text of their own past papers.

    affinity = 2  * |r.tags & p.tags|                 each shared taxonomy tag
             + 1  if p's primary (first) tag is among r.tags
             + 1  * |counting r.keywords found in p|  see below
             + 10 * text                              TF-IDF similarity to r's past papers

text: TF-IDF cosine (scikit-learn; English stop words, sublinear tf, terms found in more
than 10% of the documents dropped, fitted on this assignment's papers and every reviewer's
past papers) between the paper (title + abstract)
and each past paper of the reviewer, aggregated as 0.5 * max + 0.5 * mean over their
papers: the max rewards one paper on exactly this topic, the mean a body of work around
it. A reviewer without past papers has text 0. Cosines between different abstracts of one
topic are typically 0.1-0.4, so a close past paper weighs about as much as one shared tag
plus the primary-tag bonus. bench/affinity_recall.py measures the weights on SciTLDR dev.

Keywords: a reviewer's keyword counts only when it names something specific (IDF and
whole phrases): a phrase of two or more words with at least one that is not an English
stop word ("score matching", "induction heads"), or a single word that is rare in ML
abstracts: not an English stop word and not among the words found in more than 2% of the
SciTLDR abstracts (common_words.txt, made by bench/common_words.py). So "code",
"complexity" and "neurons" (in 4.6%, 4.9% and 2.5% of them) do not count: they match
papers of every topic; "heterophilous", "Wasserstein" or "KAN" do. A keyword is matched
as a whole phrase (hyphen or space between words), case-insensitively except acronyms (two
or more capitals: "CLIP" is not "clip"), in the title, abstract, TL;DR and keywords of the
paper; one found in more than a quarter of the papers (and in at least 4) does not count
either.

More sources (`--affinity embeddings`: pipeline/assign/embeddings.py) are added with a
weight: each is an object with a `name`, `block(rows)` (a papers x reviewers matrix like
`Scorer.block`) and `pairs(papers, reviewers)`; an `embeddings` source's similarity is the
pair's `Match.embedding`.

Everything is computed a block of papers at a time as dense numpy rows over all reviewers,
so 12,000 x 8,000 pairs never sit in memory at once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Protocol

import numpy as np
from scipy import sparse

from pipeline.assign.reviewers import Reviewer
from pipeline.datafiles import common_words
from pipeline.rundir import Paper
from pipeline.text import normalize_ws

log = logging.getLogger(__name__)

TAG_WEIGHT = 2.0
PRIMARY_TAG_BONUS = 1.0
KEYWORD_WEIGHT = 1.0
TEXT_WEIGHT = 10.0
TEXT_MAX_SHARE = 0.5  # text = share * max + (1 - share) * mean over the reviewer's papers
KEYWORD_MAX_SHARE = 0.25  # a keyword found in more of the papers than this is generic here
BLOCK_CELLS = 12_000_000  # floats per dense block (rows x columns): about 48 MB
TEXT_MAX_DF = 0.1  # terms in more than this share of the documents are dropped ...
TEXT_MAX_DF_FROM = 100  # ... once there are this many documents (a tiny corpus keeps all)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Match:
    """Why a reviewer fits a paper: the score and what produced it."""

    affinity: float
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    text: float = 0.0  # aggregated TF-IDF cosine, 0..1
    similar: str | None = None  # the most similar past paper (its title, else its opening)
    similar_cosine: float = 0.0
    embedding: float | None = None  # embeddings source: aggregated cosine (None: not used)

    def reason(self, tag_label=lambda t: t) -> str:  # noqa: ANN001 - any str -> str
        """One line: shared tags, the most similar past paper, matched keywords."""
        bits = []
        if self.tags:
            bits.append("shared tags: " + ", ".join(tag_label(t) for t in self.tags))
        if self.similar:
            bits.append(f'most similar past paper: "{self.similar}" ({self.similar_cosine:.2f})')
        if self.keywords:
            bits.append("keywords: " + ", ".join(self.keywords))
        if self.embedding is not None:
            bits.append(f"embedding similarity {self.embedding:.2f}")
        return "; ".join(bits) if bits else "no matching expertise"


class AffinitySource(Protocol):
    """A named affinity source: a papers x reviewers score matrix, a block of papers at a time."""

    name: str

    def block(self, rows: np.ndarray) -> np.ndarray:
        """Scores of some papers (rows) for every reviewer: float32 (rows x reviewers)."""
        ...

    def pairs(self, papers: np.ndarray, reviewers: np.ndarray) -> np.ndarray:
        """The score of each (papers[n], reviewers[n]) pair."""
        ...


@cache
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def keyword_counts(keyword: str) -> bool:
    """True when a keyword is specific enough to count as expertise (module docstring)."""
    words = _WORD.findall(keyword.lower())
    if not words:
        return False
    stop = _stop_words()
    if len(words) >= 2:
        return any(w not in stop for w in words)
    return words[0] not in stop and words[0] not in common_words()


def _is_acronym(word: str) -> bool:
    return sum(c.isupper() for c in word) >= 2


def keyword_pattern(keyword: str) -> re.Pattern[str]:
    """Whole-phrase pattern: words joined by spaces or hyphens; acronyms match case."""
    words = normalize_ws(keyword).split(" ")
    body = r"[\s\-]+".join(
        re.escape(w) if _is_acronym(w) else f"(?i:{re.escape(w)})" for w in words
    )
    return re.compile(r"(?<!\w)" + body + r"(?!\w)")


def paper_text(paper: Paper) -> str:
    """What keywords are looked for in: title, abstract, TL;DR and keywords."""
    return " ".join(
        [
            paper.title or "",
            paper.abstract,
            paper.tldr or "",
            " | ".join(paper.keywords),
            " | ".join(paper.author_keywords),
        ]
    )


def _snippet(title: str | None, text: str) -> str:
    if title and title.strip():
        return normalize_ws(title)
    words = normalize_ws(text).split(" ")
    return " ".join(words[:12]) + (" ..." if len(words) > 12 else "")


class Scorer:
    """The affinity of every (paper, reviewer) pair of one assignment, by blocks of papers."""

    def __init__(
        self,
        papers: Sequence[Paper],
        reviewers: Sequence[Reviewer],
        sources: Sequence[tuple[AffinitySource, float]] = (),
    ) -> None:
        self.papers = list(papers)
        self.reviewers = list(reviewers)
        self.sources = list(sources)  # (source, weight) added to the built-in affinity
        self.n_papers = len(self.papers)
        self.n_reviewers = len(self.reviewers)
        self._tag_matrices()
        self._keyword_matrix()
        self._text_model()

    # ---- tags
    def _tag_matrices(self) -> None:
        vocab: dict[str, int] = {}
        for r in self.reviewers:
            for t in r.tags:
                vocab.setdefault(t, len(vocab))
        rows, cols, prim_rows, prim_cols = [], [], [], []
        for i, p in enumerate(self.papers):
            for t in dict.fromkeys(p.tags):
                if t in vocab:
                    rows.append(i)
                    cols.append(vocab[t])
            if p.tags and p.tags[0] in vocab:
                prim_rows.append(i)
                prim_cols.append(vocab[p.tags[0]])
        shape = (self.n_papers, max(len(vocab), 1))
        self._p_tags = _binary(rows, cols, shape)
        self._p_primary = _binary(prim_rows, prim_cols, shape)
        r_rows = [j for j, r in enumerate(self.reviewers) for t in dict.fromkeys(r.tags)]
        r_cols = [vocab[t] for r in self.reviewers for t in dict.fromkeys(r.tags)]
        self._r_tags_t = _binary(r_rows, r_cols, (self.n_reviewers, shape[1])).T.tocsr()

    # ---- keywords
    def _keyword_matrix(self) -> None:
        owners: dict[str, list[int]] = {}
        self.ignored_keywords: dict[str, str] = {}  # keyword -> why it does not count
        for j, r in enumerate(self.reviewers):
            for k in r.keywords:
                if not keyword_counts(k):
                    self.ignored_keywords[k] = (
                        "only stop words"
                        if " " in k.strip()
                        else "a single word common in ML abstracts"
                    )
                    continue
                owners.setdefault(normalize_ws(k), []).append(j)
        positions = self._positions({w for k in owners for w in _WORD.findall(k.lower())})
        limit = max(4, KEYWORD_MAX_SHARE * self.n_papers)
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        self._keyword_hits: dict[str, frozenset[int]] = {}
        for k, who in owners.items():
            words = _WORD.findall(k.lower())
            if not words or any(w not in positions for w in words):
                continue
            cand = set(positions[words[0]])
            for w in words[1:]:
                cand &= positions[w].keys()
            # words in sequence (cheap), then the exact whole-phrase pattern on those only
            cand = {i for i in cand if _in_sequence(positions, words, i)}
            if not cand:
                continue
            pattern = keyword_pattern(k)
            hits = [i for i in sorted(cand) if pattern.search(self._texts[i])]
            if len(hits) > limit:
                self.ignored_keywords[k] = f"found in {len(hits)} of {self.n_papers} papers"
                continue
            self._keyword_hits[k] = frozenset(hits)
            for j in who:
                rows.append(np.asarray(hits, dtype=np.int64))
                cols.append(np.full(len(hits), j, dtype=np.int64))
        shape = (self.n_papers, self.n_reviewers)
        if rows:
            hit_rows, hit_cols = np.concatenate(rows), np.concatenate(cols)
            self._keywords = sparse.csr_matrix(
                (np.ones(len(hit_rows), dtype=np.float32), (hit_rows, hit_cols)), shape=shape
            )
        else:
            self._keywords = sparse.csr_matrix(shape, dtype=np.float32)
        self._owners = owners

    @cached_property
    def _texts(self) -> list[str]:
        return [paper_text(p) for p in self.papers]

    def _positions(self, wanted: set[str]) -> dict[str, dict[int, set[int]]]:
        """word -> paper -> word positions in its text, for the words of the keywords only."""
        out: dict[str, dict[int, set[int]]] = {}
        if not wanted:
            return out
        for i, text in enumerate(self._texts):
            words = _WORD.findall(text.lower())
            if wanted.isdisjoint(words):
                continue
            for pos, w in enumerate(words):
                if w in wanted:
                    out.setdefault(w, {}).setdefault(i, set()).add(pos)
        return out

    # ---- text
    def _text_model(self) -> None:
        owner = [j for j, r in enumerate(self.reviewers) for _ in r.papers]
        self.has_text = bool(owner)
        if not self.has_text:
            return
        from sklearn.feature_extraction.text import TfidfVectorizer

        docs = [f"{p.title or ''}\n{p.abstract}" for p in self.papers]
        past = [pp for r in self.reviewers for pp in r.papers]
        docs += [pp.text for pp in past]
        vectorizer = TfidfVectorizer(
            stop_words="english",
            sublinear_tf=True,
            dtype=np.float32,
            max_df=TEXT_MAX_DF if len(docs) >= TEXT_MAX_DF_FROM else 1.0,
        )
        try:
            x = vectorizer.fit_transform(docs).tocsr()
        except ValueError:  # nothing but stop words
            self.has_text = False
            return
        self._x_papers = x[: self.n_papers]
        self._x_past = x[self.n_papers :]
        self._x_past_t = self._x_past.T.tocsr()
        self._past = past
        self._owner = np.asarray(owner, dtype=np.int64)  # reviewer of each past paper
        counts = np.bincount(self._owner, minlength=self.n_reviewers)
        self._with_papers = np.flatnonzero(counts)  # reviewers that have past papers
        self._starts = np.concatenate([[0], np.cumsum(counts[self._with_papers])[:-1]])
        self._counts = counts[self._with_papers].astype(np.float32)
        self._first_past = np.concatenate([[0], np.cumsum(counts)])  # per reviewer

    def _cosines(self, rows: np.ndarray) -> np.ndarray:
        return (self._x_papers[rows] @ self._x_past_t).toarray()

    def text_block(self, rows: np.ndarray) -> np.ndarray:
        """Aggregated text similarity of some papers (rows) to every reviewer (0 without papers)."""
        out = np.zeros((len(rows), self.n_reviewers), dtype=np.float32)
        if not self.has_text or not len(rows):
            return out
        cos = self._cosines(rows)
        best = np.maximum.reduceat(cos, self._starts, axis=1)
        mean = np.add.reduceat(cos, self._starts, axis=1) / self._counts
        out[:, self._with_papers] = TEXT_MAX_SHARE * best + (1 - TEXT_MAX_SHARE) * mean
        return out

    def block(self, rows: np.ndarray) -> np.ndarray:
        """Affinity of some papers (row indexes) to every reviewer: float32 (rows x reviewers)."""
        tags = self._p_tags[rows]
        out = (tags @ self._r_tags_t).toarray().astype(np.float32) * TAG_WEIGHT
        out += (self._p_primary[rows] @ self._r_tags_t).toarray() * PRIMARY_TAG_BONUS
        out += self._keywords[rows].toarray() * KEYWORD_WEIGHT
        if self.has_text:
            out += TEXT_WEIGHT * self.text_block(rows)
        for source, weight in self.sources:
            out += np.float32(weight) * source.block(rows)
        return out

    def block_rows(self) -> int:
        """How many papers one block holds within BLOCK_CELLS."""
        width = self.n_reviewers + (len(self._past) if self.has_text else 0)
        return max(1, BLOCK_CELLS // max(width, 1))

    # ---- explanations
    def explain(self, i: int, j: int) -> Match:
        """The affinity of paper i for reviewer j, with what produced it."""
        return self.explain_many(np.asarray([i]), np.asarray([j]))[0]

    def explain_many(self, papers: np.ndarray, reviewers: np.ndarray) -> list[Match]:
        """The Match of each (papers[n], reviewers[n]) pair; the text part vectorized."""
        n = len(papers)
        text = np.zeros(n)
        best = np.full(n, -1, dtype=np.int64)  # index into self._past
        best_cos = np.zeros(n)
        if self.has_text and n:
            counts = self._first_past[reviewers + 1] - self._first_past[reviewers]
            sel = np.flatnonzero(counts > 0)
            if len(sel):
                c = counts[sel]
                group = np.concatenate([[0], np.cumsum(c)[:-1]])
                pair_of = np.repeat(sel, c)
                offset = np.arange(int(c.sum())) - np.repeat(group, c)
                past = self._first_past[reviewers[pair_of]] + offset
                dots = self._x_papers[papers[pair_of]].multiply(self._x_past[past]).sum(axis=1)
                dots = np.asarray(dots, dtype=np.float64).ravel()
                top = np.maximum.reduceat(dots, group)
                mean = np.add.reduceat(dots, group) / c
                text[sel] = TEXT_MAX_SHARE * top + (1 - TEXT_MAX_SHARE) * mean
                at_top = np.flatnonzero(dots == np.repeat(top, c))
                firsts, where = np.unique(pair_of[at_top], return_index=True)
                best[firsts] = past[at_top[where]]
                best_cos[sel] = top
        extra = np.zeros(n)
        embedding: np.ndarray | None = None
        for source, weight in self.sources:
            values = np.asarray(source.pairs(papers, reviewers), dtype=np.float64)
            extra += weight * values
            if source.name == "embeddings":
                embedding = values
        out = []
        for n_, (i, j) in enumerate(zip(papers.tolist(), reviewers.tolist(), strict=True)):
            paper, reviewer = self.papers[i], self.reviewers[j]
            shared = tuple(t for t in dict.fromkeys(paper.tags) if t in reviewer.tags)
            score = TAG_WEIGHT * len(shared)
            if paper.tags and paper.tags[0] in reviewer.tags:
                score += PRIMARY_TAG_BONUS
            found = tuple(
                k
                for k in reviewer.keywords
                if i in self._keyword_hits.get(normalize_ws(k), frozenset())
            )
            score += KEYWORD_WEIGHT * len(found) + TEXT_WEIGHT * text[n_] + extra[n_]
            similar, cosine = None, 0.0
            if best[n_] >= 0 and best_cos[n_] > 0:
                pp = self._past[best[n_]]
                similar, cosine = _snippet(pp.title, pp.abstract), float(best_cos[n_])
            out.append(
                Match(
                    round(float(score), 3),
                    shared,
                    found,
                    round(float(text[n_]), 4),
                    similar,
                    round(cosine, 4),
                    None if embedding is None else round(float(embedding[n_]), 4),
                )
            )
        return out


def _in_sequence(positions: dict[str, dict[int, set[int]]], words: list[str], i: int) -> bool:
    starts = positions[words[0]][i]
    for n, w in enumerate(words[1:], 1):
        nxt = positions[w][i]
        starts = {s for s in starts if s + n in nxt}
        if not starts:
            return False
    return True


def _binary(rows: list[int], cols: list[int], shape: tuple[int, int]) -> sparse.csr_matrix:
    data = np.ones(len(rows), dtype=np.float32)
    return sparse.csr_matrix((data, (rows, cols)), shape=shape)


def affinity(paper: Paper, reviewer: Reviewer) -> Match:
    """The affinity of one reviewer for one paper, scored on its own (module docstring).

    TF-IDF weights come from the two texts alone here; `assign` fits them on all papers.
    """
    return Scorer([paper], [reviewer]).explain(0, 0)
