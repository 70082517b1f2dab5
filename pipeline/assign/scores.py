"""Outside scores and bids, mixed with the built-in affinity by weights.

- `--scores FILE` (repeatable): CSV rows `paper_id,reviewer_id,score`, the format
  openreview-matcher reads (an optional header row is skipped). The file's stem names the
  source in `--weights` and in every pair's reason.
- `--bids FILE`: CSV rows `paper_id,reviewer_id,label` with OpenReview's labels, turned
  into scores by `DEFAULT_BID_SCORES` (or `--bid-scores`).
- `--weights builtin=W,STEM=W,bids=W`: score = sum of weight x source; every weight is 1
  unless given; `builtin=0` turns the built-in affinity off (it is then not computed).

Papers are named as in the reviewers file's `conflicts` (the user's id, number or hash,
any case), reviewers by their id (trimmed, any case). A row naming an unknown paper or
reviewer is an error listing them, never dropped. A pair with a Very Low bid is assigned
only when nothing else is feasible (see solver.py), and such a pair says so in its reason.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import sparse

from pipeline.assign.affinity import Match, Scorer
from pipeline.assign.reviewers import Reviewer, reviewer_key
from pipeline.errors import ConfigError, InputError
from pipeline.rundir import Paper
from pipeline.triage import paper_keys

BID_LABELS = ("Very High", "High", "Neutral", "Low", "Very Low")
DEFAULT_BID_SCORES: Mapping[str, float] = {
    "Very High": 1.0,
    "High": 0.5,
    "Neutral": 0.0,
    "Low": -0.5,
    "Very Low": -1.0,
}
VERY_LOW = "Very Low"
BUILTIN = "builtin"
BIDS = "bids"
LISTED = 10  # unknown ids named in an error (then a count)


@dataclass(frozen=True)
class Row:
    """One row of a scores, bids or pairs file, with where it was read."""

    paper: str
    reviewer: str
    value: str
    where: str  # file:line


@dataclass(frozen=True)
class ScoreSource:
    """One scores file: its name (the file's stem) and its rows."""

    name: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Scoring:
    """Where a pair's score comes from: outside scores, bids, and each source's weight."""

    sources: tuple[ScoreSource, ...] = ()
    bids: tuple[Row, ...] = ()
    bid_scores: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BID_SCORES))
    weights: Mapping[str, float] = field(default_factory=dict)
    # Affinity sources inside the built-in affinity (`--affinity embeddings`): a weight may
    # name them too.
    affinity_sources: tuple[str, ...] = ()

    def weight(self, name: str) -> float:
        """The weight of a source (1 unless given)."""
        return float(self.weights.get(name, 1.0))

    def describe(self) -> str:
        """The mixing formula, for the summary."""
        parts = []
        if self.weight(BUILTIN):
            parts.append(f"{self.weight(BUILTIN):g} x built-in affinity")
        parts += [f"{self.weight(s.name):g} x {s.name}" for s in self.sources]
        if self.bids:
            parts.append(f"{self.weight(BIDS):g} x bid")
        return "score = " + (" + ".join(parts) if parts else "0")


def read_csv_lines(path: Path, what: str) -> list[list[str]]:
    """The rows of a chair's CSV file (UTF-8, a BOM allowed); an InputError naming `what`."""
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as fh:
            return list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read {what} {path}: {exc}") from exc


def read_rows(path: Path, what: str) -> list[Row]:
    """CSV rows `paper_id,reviewer_id,value` (a header row naming paper/reviewer is skipped)."""
    path = Path(path)
    lines = read_csv_lines(path, what)
    out: list[Row] = []
    for n, cells in enumerate(lines, 1):
        cells = [c.strip() for c in cells]
        if not any(cells):
            continue
        if n == 1 and cells and cells[0].lower() in {"paper_id", "paper", "head"}:
            continue
        if len(cells) < 3 or not cells[0] or not cells[1]:
            raise InputError(f"{path}:{n}: expected paper_id,reviewer_id,{what.split()[0]}")
        out.append(Row(cells[0], cells[1], cells[2], f"{path.name}:{n}"))
    return out


def read_pairs(path: Path, what: str) -> list[Row]:
    """CSV rows `paper_id,reviewer_id` (more columns ignored; a header row is skipped)."""
    path = Path(path)
    lines = read_csv_lines(path, what)
    if not lines:
        return []
    header = [c.strip().lower() for c in lines[0]]
    p_col, r_col, start = 0, 1, 0
    if "paper_id" in header and "reviewer_id" in header:
        p_col, r_col, start = header.index("paper_id"), header.index("reviewer_id"), 1
    out: list[Row] = []
    for n, cells in enumerate(lines[start:], start + 1):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) <= max(p_col, r_col):
            raise InputError(f"{path}:{n}: expected paper_id,reviewer_id")
        out.append(Row(cells[p_col].strip(), cells[r_col].strip(), "", f"{path.name}:{n}"))
    return out


def load_scores(path: Path) -> ScoreSource:
    """A scores file (`paper_id,reviewer_id,score`), named by its stem."""
    rows = read_rows(path, "score file")
    for row in rows:
        try:
            value = float(row.value)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(f"{row.where}: score {row.value!r} is not a finite number")
    return ScoreSource(Path(path).stem, tuple(rows))


def bid_label(text: str) -> str | None:
    """The OpenReview label a bid names (case and spacing ignored), None if it is none."""
    key = " ".join(text.replace("_", " ").split()).casefold()
    return next((label for label in BID_LABELS if label.casefold() == key), None)


def load_bids(path: Path) -> tuple[Row, ...]:
    """A bids file (`paper_id,reviewer_id,label`); an unknown label is an InputError."""
    rows = []
    for row in read_rows(path, "bid file"):
        label = bid_label(row.value)
        if label is None:
            raise InputError(
                f"{row.where}: unknown bid {row.value!r} (expected one of {', '.join(BID_LABELS)})"
            )
        rows.append(Row(row.paper, row.reviewer, label, row.where))
    return tuple(rows)


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ConfigError(f"{what}: {text!r} is not a finite number")
    return value


def parse_weights(text: str) -> dict[str, float]:
    """`builtin=1,tpms=2,bids=0.5` -> {name: weight}."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise ConfigError(f"--weights: expected NAME=WEIGHT, got {part!r}")
        out[name.strip()] = _number(value.strip(), f"--weights {name.strip()}")
    return out


def parse_bid_scores(text: str) -> dict[str, float]:
    """`Very High=2,High=1,...` -> the label-to-score map (labels not given keep their default)."""
    out = dict(DEFAULT_BID_SCORES)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        label = bid_label(name)
        if not eq or label is None:
            raise ConfigError(
                f"--bid-scores: expected LABEL=SCORE with a label among {', '.join(BID_LABELS)}, "
                f"got {part!r}"
            )
        out[label] = _number(value.strip(), f"--bid-scores {label}")
    return out


def check_weights(scoring: Scoring) -> None:
    """Every weight names a source that is given; two score files never share a stem."""
    names = [s.name for s in scoring.sources]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"--scores: two files with the stem {twice[0]!r}; rename one")
    if BUILTIN in names or BIDS in names:
        raise ConfigError(f"--scores: a file may not be named {BUILTIN!r} or {BIDS!r}")
    known = {BUILTIN, *names, *scoring.affinity_sources, *([BIDS] if scoring.bids else [])}
    unknown = sorted(set(scoring.weights) - known)
    if unknown:
        raise ConfigError(
            f"--weights names no source: {', '.join(unknown)} (sources: {', '.join(sorted(known))})"
        )


class PaperIndex:
    """Paper references (the user's id, number, #number or hash, any case) -> paper indexes."""

    def __init__(self, papers: Sequence[Paper]) -> None:
        self.by_id = {p.id: i for i, p in enumerate(papers)}  # content hash -> index
        self._index: dict[str, list[int]] = {}
        for i, p in enumerate(papers):
            for key in paper_keys(p):
                self._index.setdefault(key, []).append(i)

    def find(self, ref: str) -> list[int]:
        """The papers a reference names (none when it names no paper)."""
        return self._index.get(ref.strip().lower(), [])


class ReviewerIndex:
    """Reviewer ids (trimmed, any case) -> reviewer indexes."""

    def __init__(self, reviewers: Sequence[Reviewer]) -> None:
        self._index = {reviewer_key(r.id): j for j, r in enumerate(reviewers)}

    def find(self, rid: str) -> int | None:
        """The reviewer an id names, None when it names none."""
        return self._index.get(reviewer_key(rid))


def listing(items: Sequence[str]) -> str:
    """The first LISTED items and how many more."""
    shown = ", ".join(items[:LISTED])
    return shown + (f" ... and {len(items) - LISTED} more" if len(items) > LISTED else "")


def resolve_rows(
    rows: Iterable[Row],
    papers: PaperIndex,
    reviewers: ReviewerIndex,
    what: str,
    *,
    unknown_reviewers_ok: bool = False,
) -> list[tuple[int, int, Row]]:
    """(paper index, reviewer index, row) per row; unknown ids are one InputError naming them."""
    out: list[tuple[int, int, Row]] = []
    bad_papers: dict[str, str] = {}
    bad_reviewers: dict[str, str] = {}
    for row in rows:
        hits = papers.find(row.paper)
        j = reviewers.find(row.reviewer)
        if not hits:
            bad_papers.setdefault(row.paper, row.where)
        if j is None and not unknown_reviewers_ok:
            bad_reviewers.setdefault(row.reviewer, row.where)
        if hits and j is not None:
            out.extend((i, j, row) for i in hits)
    problems = []
    if bad_papers:
        named = [f"{p!r} ({w})" for p, w in bad_papers.items()]
        problems.append(f"{len(bad_papers)} unknown paper id(s): {listing(named)}")
    if bad_reviewers:
        named = [f"{r!r} ({w})" for r, w in bad_reviewers.items()]
        problems.append(f"{len(bad_reviewers)} unknown reviewer id(s): {listing(named)}")
    if problems:
        raise InputError(
            f"{what}: " + "; ".join(problems) + " (papers are named by your id, number or "
            "hash; reviewers by their id in the reviewers file)"
        )
    return out


def _no_twice(pairs: list[tuple[int, int, Row]], what: str) -> None:
    seen: dict[tuple[int, int], Row] = {}
    twice = []
    for i, j, row in pairs:
        first = seen.setdefault((i, j), row)
        if first is not row:
            twice.append(f"{row.paper},{row.reviewer} ({first.where} and {row.where})")
    if twice:
        raise InputError(f"{what}: {len(twice)} pair(s) given twice: {listing(twice)}")


@dataclass(frozen=True)
class MixedMatch(Match):
    """A Match whose affinity mixes the built-in one with outside scores and a bid."""

    builtin: float = 0.0
    builtin_on: bool = True
    outside: tuple[tuple[str, float], ...] = ()
    bid: str | None = None
    forced: bool = False

    def reason(self, tag_label=lambda t: t) -> str:  # noqa: ANN001 - any str -> str
        """The built-in reason (when it counts), then each outside score, the bid, a forced pair."""
        bits = [super().reason(tag_label)] if self.builtin_on else []
        if self.builtin_on and (self.outside or self.bid):
            bits = [f"built-in {self.builtin:g}: {bits[0]}"]
        bits += [f"{name} {value:g}" for name, value in self.outside]
        if self.bid:
            bits.append(f"bid: {self.bid}")
        if self.forced:
            bits.append("assigned despite a Very Low bid: no feasible assignment avoids it")
        return "; ".join(bits) if bits else "no score"


class MixedScorer:
    """The Scorer interface (block, block_rows, explain_many) over the weighted mix."""

    def __init__(
        self,
        papers: Sequence[Paper],
        reviewers: Sequence[Reviewer],
        scoring: Scoring,
        builtin: Scorer | None,
    ) -> None:
        check_weights(scoring)
        self.scoring = scoring
        self.n_papers, self.n_reviewers = len(papers), len(reviewers)
        self.builtin = builtin
        self.builtin_weight = scoring.weight(BUILTIN)
        self.ignored_keywords = builtin.ignored_keywords if builtin is not None else {}
        p_index, r_index = PaperIndex(papers), ReviewerIndex(reviewers)
        shape = (self.n_papers, self.n_reviewers)
        self._sources: list[tuple[str, float, sparse.csr_matrix, dict[tuple[int, int], float]]]
        self._sources = []
        for source in scoring.sources:
            pairs = resolve_rows(source.rows, p_index, r_index, f"scores {source.name}")
            _no_twice(pairs, f"scores {source.name}")
            values = {(i, j): float(row.value) for i, j, row in pairs}
            self._sources.append(
                (source.name, scoring.weight(source.name), _matrix(values, shape), values)
            )
        pairs = resolve_rows(scoring.bids, p_index, r_index, "bids")
        _no_twice(pairs, "bids")
        self._bids = {(i, j): row.value for i, j, row in pairs}
        bid_values = {k: float(scoring.bid_scores[v]) for k, v in self._bids.items()}
        self._bid_matrix = _matrix(bid_values, shape)
        self._bid_weight = scoring.weight(BIDS)
        very_low = {k: 1.0 for k, v in self._bids.items() if v == VERY_LOW}
        self._very_low = _matrix(very_low, shape).astype(bool)

    def block(self, rows: np.ndarray) -> np.ndarray:
        """The mixed score of some papers (row indexes) to every reviewer: float32."""
        if self.builtin is not None and self.builtin_weight:
            out = self.builtin.block(rows) * np.float32(self.builtin_weight)
        else:
            out = np.zeros((len(rows), self.n_reviewers), dtype=np.float32)
        for _, weight, matrix, _ in self._sources:
            if weight:
                out += matrix[rows].toarray() * np.float32(weight)
        if self._bids and self._bid_weight:
            out += self._bid_matrix[rows].toarray() * np.float32(self._bid_weight)
        return out

    def block_rows(self) -> int:
        """Papers per block (the built-in scorer's, else within its cell budget)."""
        if self.builtin is not None:
            return self.builtin.block_rows()
        return max(1, 12_000_000 // max(self.n_reviewers, 1))

    def very_low(self, paper: np.ndarray, reviewer: np.ndarray) -> np.ndarray:
        """Mask over pairs: True where the reviewer bid Very Low on the paper."""
        if not self._very_low.nnz or not len(paper):
            return np.zeros(len(paper), dtype=bool)
        return np.asarray(self._very_low[paper, reviewer]).ravel().astype(bool)

    def very_low_block(self, rows: np.ndarray) -> np.ndarray:
        """Mask (rows x reviewers): True where the reviewer bid Very Low on the paper."""
        return self._very_low[rows].toarray()

    def explain_many(self, papers: np.ndarray, reviewers: np.ndarray) -> list[Match]:
        """Each pair's MixedMatch: the built-in Match, outside scores, the bid."""
        on = self.builtin is not None and self.builtin_weight != 0
        base = (
            self.builtin.explain_many(papers, reviewers)
            if on and self.builtin is not None
            else [Match(0.0)] * len(papers)
        )
        out: list[Match] = []
        for m, i, j in zip(base, papers.tolist(), reviewers.tolist(), strict=True):
            outside = tuple(
                (name, values[i, j]) for name, _, _, values in self._sources if (i, j) in values
            )
            bid = self._bids.get((i, j))
            score = self.builtin_weight * m.affinity if on else 0.0
            score += sum(w * values.get((i, j), 0.0) for _, w, _, values in self._sources)
            if bid is not None:
                score += self._bid_weight * float(self.scoring.bid_scores[bid])
            out.append(
                MixedMatch(
                    round(float(score), 3),
                    m.tags,
                    m.keywords,
                    m.text,
                    m.similar,
                    m.similar_cosine,
                    m.embedding,
                    builtin=m.affinity,
                    builtin_on=on,
                    outside=outside,
                    bid=bid,
                    forced=bid == VERY_LOW,
                )
            )
        return out


def _matrix(values: Mapping[tuple[int, int], float], shape: tuple[int, int]) -> sparse.csr_matrix:
    if not values:
        return sparse.csr_matrix(shape, dtype=np.float32)
    keys = np.asarray(list(values), dtype=np.int64)
    data = np.asarray(list(values.values()), dtype=np.float32)
    return sparse.csr_matrix((data, (keys[:, 0], keys[:, 1])), shape=shape)
