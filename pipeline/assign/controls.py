"""The chair's controls: demands, minimum loads, locked / forbidden / kept pairs, attribute rules.

- `--demand FILE`: CSV `paper_id,demand`; papers not listed keep `--per-paper` (0 = skip it).
- `--min-load N`: every reviewer who can take papers takes at least N (fewer when
  their own max_load is lower); met before any affinity is gained, when it can be met.
- `--lock FILE` / `--forbid FILE`: CSV `paper_id,reviewer_id`; a locked pair is assigned
  whatever its score (it counts against the demand and the load), a forbidden one never is.
- `--keep assignments.csv`: a previous assignment (its `paper_id` and `reviewer_id`
  columns); every pair still valid (paper in the run, reviewer in the pool, no conflict,
  not forbidden) is kept as if locked, the others are listed as dropped, and the solver
  fills what is missing.
- `--require KEY=VALUE[:N]`: at least N (default 1) of each paper's reviewers have
  attribute KEY equal to VALUE; a paper that cannot have them is listed as short.
- `--at-most KEY[:N]`: at most N (default 1) of each paper's reviewers share one value of
  KEY (one per institution); `--at-most KEY=VALUE[:N]`: at most N with that value.
Attributes are the reviewers' `attributes:` in the reviewers file (any keys, strings,
values compared case-insensitively).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.assign.conflicts import Conflict
from pipeline.assign.reviewers import Reviewer
from pipeline.assign.scores import (
    PaperIndex,
    ReviewerIndex,
    Row,
    listing,
    read_csv_lines,
    resolve_rows,
)
from pipeline.errors import ConfigError, InputError


@dataclass(frozen=True)
class Rule:
    """One attribute rule: at least (`require`) or at most `count` reviewers per paper."""

    kind: str  # "require" | "at-most"
    key: str
    value: str | None  # None: each distinct value of the key (at-most only)
    count: int

    @property
    def text(self) -> str:
        """The rule as it is written on the command line."""
        what = self.key if self.value is None else f"{self.key}={self.value}"
        return f"--{self.kind} {what}:{self.count}"

    def members(self, reviewers: Sequence[Reviewer]) -> np.ndarray:
        """Per reviewer: the group they fall in (-1 = none): one group per value or the value."""
        out = np.full(len(reviewers), -1, dtype=np.int64)
        groups: dict[str, int] = {}
        for j, r in enumerate(reviewers):
            value = r.attribute(self.key)
            if value is None:
                continue
            folded = value.casefold()
            if self.value is not None and folded != self.value.casefold():
                continue
            out[j] = groups.setdefault(folded, len(groups))
        return out


def parse_rule(kind: str, text: str) -> Rule:
    """`seniority=senior:1` (require) or `institution:1` / `country=FR:2` (at-most)."""
    body, colon, count_text = text.rpartition(":")
    if not colon:
        body, count_text = text, "1"
    try:
        count = int(count_text)
    except ValueError:
        raise ConfigError(f"--{kind} {text}: the count after ':' must be a whole number") from None
    key, eq, value = body.partition("=")
    key, value = key.strip(), value.strip()
    if not key or (eq and not value):
        raise ConfigError(f"--{kind} {text}: expected KEY=VALUE[:N] or KEY[:N]")
    if kind == "require" and not eq:
        raise ConfigError(f"--require {text}: name the value, e.g. --require seniority=senior:1")
    if count < (1 if kind == "require" else 0):
        raise ConfigError(f"--{kind} {text}: the count must be at least 1")
    return Rule(kind, key, value if eq else None, count)


@dataclass(frozen=True)
class Controls:
    """Everything the chair asked beyond --per-paper and --max-load."""

    demand: tuple[Row, ...] = ()  # value = the demand
    min_load: int = 0
    locked: tuple[Row, ...] = ()
    forbidden: tuple[Row, ...] = ()
    keep: tuple[Row, ...] = ()
    rules: tuple[Rule, ...] = ()
    alternates: int = 0

    @property
    def needs_mip(self) -> bool:
        """True when a rule goes beyond what a flow network can hold."""
        return bool(self.rules)


def read_demand(path: Path) -> tuple[Row, ...]:
    """CSV `paper_id,demand` (a header row is skipped); a demand is a whole number >= 0."""
    path = Path(path)
    lines = read_csv_lines(path, "demand file")
    out = []
    for n, cells in enumerate(lines, 1):
        cells = [c.strip() for c in cells]
        if not any(cells):
            continue
        if n == 1 and cells[0].lower() in {"paper_id", "paper"}:
            continue
        if len(cells) < 2 or not cells[1].isdigit():
            raise InputError(f"{path}:{n}: expected paper_id,demand (a whole number >= 0)")
        out.append(Row(cells[0], "", cells[1], f"{path.name}:{n}"))
    return tuple(out)


def demands(rows: Sequence[Row], papers: PaperIndex, n_papers: int, default: int) -> np.ndarray:
    """The demand of every paper: the file's, else `default`; unknown papers are an error."""
    out = np.full(n_papers, default, dtype=np.int64)
    unknown = []
    for row in rows:
        hits = papers.find(row.paper)
        if not hits:
            unknown.append(f"{row.paper!r} ({row.where})")
        for i in hits:
            out[i] = int(row.value)
    if unknown:
        raise InputError(f"demand file: {len(unknown)} unknown paper id(s): {listing(unknown)}")
    return out


@dataclass
class Fixed:
    """Pairs decided before solving (locked, kept), and the kept pairs dropped with why."""

    pairs: list[tuple[int, int]]  # the locked ones first
    dropped: list[str]
    locked: int = 0


def fixed_pairs(
    controls: Controls,
    p_index: PaperIndex,
    r_index: ReviewerIndex,
    blocked: set[tuple[int, int]],
    why_blocked: dict[tuple[int, int], str],
) -> Fixed:
    """Locked pairs (a conflicted or forbidden one is an error) and the still-valid kept ones."""
    locked = resolve_rows(controls.locked, p_index, r_index, "locked pairs")
    bad = [
        f"{row.paper},{row.reviewer} ({row.where}: {why_blocked[i, j]})"
        for i, j, row in locked
        if (i, j) in blocked
    ]
    if bad:
        raise InputError(f"{len(bad)} locked pair(s) are not allowed: {listing(bad)}")
    pairs = list(dict.fromkeys((i, j) for i, j, _ in locked))
    n_locked = len(pairs)
    dropped: list[str] = []
    seen = set(pairs)
    for row in controls.keep:
        hits = p_index.find(row.paper)
        j = r_index.find(row.reviewer)
        if not hits:
            dropped.append(f"{row.paper},{row.reviewer}: the paper is not in this run")
            continue
        if j is None:
            dropped.append(f"{row.paper},{row.reviewer}: the reviewer is not in the pool")
            continue
        for i in hits:
            if (i, j) in blocked:
                dropped.append(f"{row.paper},{row.reviewer}: {why_blocked[i, j]}")
            elif (i, j) not in seen:
                seen.add((i, j))
                pairs.append((i, j))
    return Fixed(pairs, dropped, locked=n_locked)


@dataclass
class PairPlan:
    """The pairs decided before solving, and what the solver may still choose from."""

    fixed: Fixed
    forbidden: list[np.ndarray]  # per paper: conflicts, forbidden and fixed reviewers
    per_paper: np.ndarray  # fixed pairs of each paper
    per_reviewer: np.ndarray  # fixed pairs of each reviewer


def plan_pairs(
    controls: Controls,
    p_index: PaperIndex,
    r_index: ReviewerIndex,
    conflicts: Sequence[Conflict],
    forbidden: list[np.ndarray],
    loads: np.ndarray,
    reviewers: Sequence[Reviewer],
) -> PairPlan:
    """Locked and kept pairs fixed, forbidden ones removed; locks past a load are an error."""
    blocked_why: dict[tuple[int, int], str] = {}
    chair_forbidden = resolve_rows(controls.forbidden, p_index, r_index, "forbidden pairs")
    if controls.locked or controls.keep:
        for c in conflicts:
            i, j = p_index.by_id[c.paper], r_index.find(c.reviewer)
            if j is not None:
                blocked_why[i, j] = f"conflict ({c.reason})"
        for i, j, row in chair_forbidden:
            blocked_why.setdefault((i, j), f"forbidden in {row.where}")
    fixed = fixed_pairs(controls, p_index, r_index, set(blocked_why), blocked_why)
    extra: list[set[int]] = [set() for _ in forbidden]
    for i, j, _ in chair_forbidden:
        extra[i].add(j)
    for i, j in fixed.pairs:
        extra[i].add(j)
    if any(extra):
        forbidden = [
            np.union1d(f, np.fromiter(e, np.int64, len(e))) if e else f
            for f, e in zip(forbidden, extra, strict=True)
        ]
    per_paper = np.bincount(
        np.asarray([i for i, _ in fixed.pairs], np.int64), minlength=len(forbidden)
    )
    per_reviewer = np.bincount(
        np.asarray([j for _, j in fixed.pairs], np.int64), minlength=len(loads)
    )
    over = np.flatnonzero(per_reviewer > loads)
    if len(over):
        raise InputError(
            f"locked and kept pairs exceed the load limit of {len(over)} reviewer(s): "
            + listing(
                [f"{reviewers[j].id} ({per_reviewer[j]} > {loads[j]})" for j in over.tolist()]
            )
        )
    return PairPlan(fixed, forbidden, per_paper, per_reviewer)
