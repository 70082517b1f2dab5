"""Small hand-built assignment instances whose scores come from a table (built-in affinity off)."""

from __future__ import annotations

from pipeline.assign import Reviewer, Scoring, assign
from pipeline.assign.scores import Row, ScoreSource
from pipeline.rundir import Paper


def papers(*ids: str) -> list[Paper]:
    return [
        Paper(id=p, title=f"Paper {p}", abstract="", number=str(n + 1)) for n, p in enumerate(ids)
    ]


def table(scores: dict[tuple[str, str], float], name: str = "table", **kw) -> Scoring:
    """A Scoring whose only source is `scores` (built-in affinity off)."""
    rows = tuple(Row(p, r, str(s), f"{name}:{n}") for n, ((p, r), s) in enumerate(scores.items()))
    weights = {"builtin": 0.0, **kw.pop("weights", {})}
    return Scoring(sources=(ScoreSource(name, rows),), weights=weights, **kw)


def solve_table(scores, reviewers, per_paper=1, max_load=1, **kw):
    ids = list(dict.fromkeys(p for p, _ in scores))
    people = [r if isinstance(r, Reviewer) else Reviewer(id=r) for r in reviewers]
    return assign(
        papers(*ids), people, per_paper=per_paper, max_load=max_load, scoring=table(scores), **kw
    )


def pairs(result) -> set[tuple[str, str]]:
    return {(p, r) for p, r, _ in result.pairs}
