"""Reviewer assignment: exactly k reviewers per paper, load limits, no conflicts, max total affinity.

Affinity of reviewer r for paper p (documented in examples/reviewers.yaml too):

    affinity = 2 * |r.tags & p.tags|           each shared taxonomy tag
             + 1 if p's primary (first) tag is among r.tags
             + 1 * |r.keywords found in p|     whole-phrase, case-insensitive, in the title,
                                               abstract, TL;DR or the paper's keywords

A conflict is a forbidden pair, not a low score. Pairs with affinity 0 are allowed, so a
paper still gets k reviewers when too few experts exist; the solver uses them only when it
must.

Solver: min-cost max-flow (networkx) on source -> paper (capacity k) -> reviewer (capacity 1,
cost = scaled (max affinity - affinity)) -> sink (capacity = the reviewer's load limit). With
the flow value fixed, minimum cost is maximum total affinity, and integral capacities give an
integral optimum.

When not every paper can get k reviewers:
- a paper with fewer than k eligible reviewers (conflicts, load 0) is reported and left out;
- if the remaining papers need more slots than all load limits together, nothing is
  assigned: an InputError says how much capacity is missing (raise --max-load or add people);
- if capacity suffices in total but some papers compete for the same few reviewers (Hall's
  condition fails), the max flow leaves as few slots empty as possible; papers left short are
  reported and left out, and the rest are re-solved for an optimal exact-k assignment.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.csvfile import SafeCsvWriter
from pipeline.errors import ConfigError, InputError
from pipeline.rundir import Paper
from pipeline.taxonomy import Taxonomy
from pipeline.text import normalize_ws
from pipeline.triage import tag_label

TAG_WEIGHT = 2.0
PRIMARY_TAG_BONUS = 1.0
KEYWORD_WEIGHT = 1.0
COST_SCALE = 100  # affinities become integer costs with two decimals


class Reviewer(BaseModel):
    """One reviewer from reviewers.yaml: expertise as taxonomy tags and free keywords."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    name: str | None = None
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    conflicts: frozenset[str] = frozenset()
    max_load: int | None = Field(default=None, ge=0)


class _ReviewersFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reviewers: list[Reviewer]


def load_reviewers(path: Path, taxonomy: Taxonomy | None) -> list[Reviewer]:
    """Read reviewers.yaml; tags may be ids, labels or synonyms and are resolved to ids."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        parsed = _ReviewersFile.model_validate(data)
    except OSError as exc:
        raise ConfigError(f"cannot read reviewers file {path}: {exc}") from exc
    except (yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"invalid reviewers file {path}: {exc}") from exc
    seen: set[str] = set()
    out: list[Reviewer] = []
    for r in parsed.reviewers:
        if r.id in seen:
            raise ConfigError(f"{path}: duplicate reviewer id {r.id!r}")
        seen.add(r.id)
        tags: list[str] = []
        for name in r.tags:
            tag_id = taxonomy.resolve(name) if taxonomy is not None else name
            if tag_id is None:
                raise ConfigError(f"{path}: reviewer {r.id!r}: unknown tag {name!r}")
            if tag_id not in tags:
                tags.append(tag_id)
        out.append(r.model_copy(update={"tags": tuple(tags)}))
    if not out:
        raise ConfigError(f"{path}: no reviewers listed")
    return out


@dataclass(frozen=True)
class Match:
    """Why a reviewer fits a paper: the score and what produced it."""

    affinity: float
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


def _phrase_re(phrase: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in normalize_ws(phrase).split(" ")]
    return re.compile(r"(?<!\w)" + r"[\s\-]+".join(words) + r"(?!\w)", re.IGNORECASE)


def affinity(paper: Paper, reviewer: Reviewer) -> Match:
    """The affinity of a reviewer for a paper (see the module docstring for the formula)."""
    shared = tuple(t for t in paper.tags if t in reviewer.tags)
    score = TAG_WEIGHT * len(shared)
    if paper.tags and paper.tags[0] in reviewer.tags:
        score += PRIMARY_TAG_BONUS
    text = " ".join(
        [paper.title or "", paper.abstract, paper.tldr or "", " | ".join(paper.keywords)]
    )
    found = tuple(k for k in reviewer.keywords if normalize_ws(k) and _phrase_re(k).search(text))
    score += KEYWORD_WEIGHT * len(found)
    return Match(score, shared, found)


@dataclass(frozen=True)
class Uncovered:
    """A paper left without reviewers, and why."""

    paper_id: str
    reason: str


@dataclass
class Solution:
    """Chosen pairs (paper id -> reviewer ids) and the papers that could not be covered."""

    pairs: dict[str, list[str]] = field(default_factory=dict)
    uncovered: list[Uncovered] = field(default_factory=list)


def _max_flow(
    papers: list[str],
    scores: Mapping[tuple[str, str], float],
    per_paper: int,
    loads: Mapping[str, int],
) -> dict[str, list[str]]:
    top = max((scores[p, r] for p in papers for r in loads if (p, r) in scores), default=0.0)
    g: nx.DiGraph = nx.DiGraph()
    for p in papers:
        g.add_edge("source", ("p", p), capacity=per_paper, weight=0)
    for r, cap in loads.items():
        if cap > 0:
            g.add_edge(("r", r), "sink", capacity=cap, weight=0)
    for p in papers:
        for r in loads:
            if (p, r) in scores and loads[r] > 0:
                cost = round((top - scores[p, r]) * COST_SCALE)
                g.add_edge(("p", p), ("r", r), capacity=1, weight=cost)
    if "source" not in g or "sink" not in g:
        return {p: [] for p in papers}
    flow = nx.max_flow_min_cost(g, "source", "sink")
    return {p: [r for (_, r), f in flow[("p", p)].items() if f > 0] for p in papers}


def solve(
    papers: Iterable[str],
    scores: Mapping[tuple[str, str], float],
    *,
    per_paper: int,
    loads: Mapping[str, int],
) -> Solution:
    """Optimal assignment for an affinity table; a pair missing from `scores` is forbidden."""
    if per_paper < 1:
        raise InputError("--per-paper must be at least 1")
    papers = list(dict.fromkeys(papers))
    available = sum(1 for cap in loads.values() if cap > 0)
    if available < per_paper:
        raise InputError(
            f"{per_paper} reviewers per paper requested but only {available} reviewer(s) "
            "can take papers; lower --per-paper or add reviewers"
        )
    sol = Solution()
    eligible = {p: [r for r in loads if (p, r) in scores and loads[r] > 0] for p in papers}
    coverable = []
    for p in papers:
        n = len(eligible[p])
        if n < per_paper:
            conflicted = sum(1 for r in loads if (p, r) not in scores)
            unavailable = sum(1 for r in loads if (p, r) in scores and loads[r] <= 0)
            why = [f"{conflicted} of {len(loads)} reviewers have a conflict"]
            if unavailable:
                why.append(f"{unavailable} more have max_load 0")
            sol.uncovered.append(
                Uncovered(p, f"only {n} eligible reviewer(s), {per_paper} needed: {'; '.join(why)}")
            )
        else:
            coverable.append(p)
    need = len(coverable) * per_paper
    capacity = sum(loads.values())
    if need > capacity:
        raise InputError(
            f"not enough reviewing capacity: {len(coverable)} papers x {per_paper} reviewers = "
            f"{need} assignments, but the {len(loads)} reviewers' load limits add up to "
            f"{capacity}; raise --max-load to at least {math.ceil(need / max(len(loads), 1))} "
            "or add reviewers"
        )
    chosen = _max_flow(coverable, scores, per_paper, loads)
    short = [p for p in coverable if len(chosen[p]) < per_paper]
    if short:
        used: dict[str, int] = {}
        for rs in chosen.values():
            for r in rs:
                used[r] = used.get(r, 0) + 1
        for p in short:
            names = ", ".join(eligible[p][:8]) + (", ..." if len(eligible[p]) > 8 else "")
            sol.uncovered.append(
                Uncovered(
                    p,
                    f"its {len(eligible[p])} eligible reviewers ({names}) are needed at full "
                    f"load by other papers; at most {len(chosen[p])} of {per_paper} could be "
                    "given to it",
                )
            )
        coverable = [p for p in coverable if p not in short]
        chosen = _max_flow(coverable, scores, per_paper, loads)
    sol.pairs = {p: sorted(chosen[p], key=lambda r: (-scores[p, r], r)) for p in coverable}
    return sol


@dataclass
class AssignmentResult:
    """The assignment of a run: pairs with their matches, uncovered papers, reviewer loads."""

    per_paper: int
    papers: dict[str, Paper]
    reviewers: dict[str, Reviewer]
    pairs: list[tuple[str, str, Match]]
    uncovered: list[Uncovered]

    @property
    def total_affinity(self) -> float:
        """Sum of the affinities of all chosen pairs."""
        return sum(m.affinity for _, _, m in self.pairs)

    def loads(self) -> dict[str, int]:
        """Papers assigned to each reviewer (every reviewer listed, 0 included)."""
        out = dict.fromkeys(self.reviewers, 0)
        for _, r, _ in self.pairs:
            out[r] += 1
        return out


def assign(
    papers: list[Paper], reviewers: list[Reviewer], *, per_paper: int, max_load: int
) -> AssignmentResult:
    """Assign exactly `per_paper` reviewers to every coverable paper, maximizing affinity."""
    if not papers:
        raise InputError("the run has no papers to assign")
    matches: dict[tuple[str, str], Match] = {}
    for p in papers:
        for r in reviewers:
            if p.id not in r.conflicts:
                matches[p.id, r.id] = affinity(p, r)
    loads = {r.id: (r.max_load if r.max_load is not None else max_load) for r in reviewers}
    scores = {k: m.affinity for k, m in matches.items()}
    sol = solve([p.id for p in papers], scores, per_paper=per_paper, loads=loads)
    pairs = [(p, r, matches[p, r]) for p, rs in sol.pairs.items() for r in rs]
    return AssignmentResult(
        per_paper=per_paper,
        papers={p.id: p for p in papers},
        reviewers={r.id: r for r in reviewers},
        pairs=pairs,
        uncovered=sol.uncovered,
    )


CSV_FIELDS = (
    "paper_id",
    "paper_title",
    "reviewer_id",
    "reviewer_name",
    "affinity",
    "matching_tags",
    "matching_keywords",
)


def write_assignments_csv(result: AssignmentResult, path: Path, taxonomy: Taxonomy | None) -> Path:
    """Write one row per (paper, reviewer) pair, with the affinity and what matched; returns path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = SafeCsvWriter(fh)
        writer.writerow(CSV_FIELDS)
        for p, r, m in sorted(result.pairs, key=lambda x: (x[0], -x[2].affinity, x[1])):
            paper, reviewer = result.papers[p], result.reviewers[r]
            row = [
                p,
                paper.title or "",
                r,
                reviewer.name or "",
                f"{m.affinity:g}",
                [tag_label(taxonomy, t) for t in m.tags],
                list(m.keywords),
            ]
            writer.writerow(row)
    return path


def summary(result: AssignmentResult) -> str:
    """A few lines for the terminal: coverage, total affinity, zero-affinity pairs, loads."""
    n_pairs = len(result.pairs)
    covered = len({p for p, _, _ in result.pairs})
    zero = sum(1 for _, _, m in result.pairs if m.affinity == 0)
    loads = result.loads()
    mean = result.total_affinity / n_pairs if n_pairs else 0.0
    lines = [
        f"covered {covered} of {len(result.papers)} papers with {result.per_paper} reviewers each "
        f"({n_pairs} pairs)",
        f"total affinity {result.total_affinity:g} (mean {mean:.2f} per pair); "
        f"{zero} pair(s) with no matching expertise",
        f"reviewer load: min {min(loads.values())}, max {max(loads.values())}, "
        f"{sum(1 for v in loads.values() if v == 0)} reviewer(s) unused",
    ]
    return "\n".join(lines)
