"""Reviewer assignment: optimality (vs greedy and brute force), constraints, infeasibility."""

from __future__ import annotations

import csv
import itertools
import random
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.assign import Reviewer, affinity, assign, load_reviewers, solve
from pipeline.cli import main
from pipeline.config import PACKAGE_PROMPTS_DIR
from pipeline.errors import ConfigError
from pipeline.taxonomy import load_taxonomy
from pipeline.triage import Paper

RUN = Path(__file__).parent / "data" / "run_small"
REPO = Path(__file__).resolve().parents[1]


def greedy(papers, scores, per_paper, loads):
    """The obvious heuristic: take the best remaining (paper, reviewer) pair while it fits."""
    left = dict(loads)
    got = {p: [] for p in papers}
    for (p, r), _ in sorted(scores.items(), key=lambda kv: -kv[1]):
        if len(got[p]) < per_paper and left[r] > 0:
            got[p].append(r)
            left[r] -= 1
    return got


def total(pairs, scores) -> float:
    return sum(scores[p, r] for p, rs in pairs.items() for r in rs)


def brute_force_best(papers, reviewers, scores, per_paper, loads) -> float:
    options = [
        [
            c
            for c in itertools.combinations(reviewers, per_paper)
            if all((p, r) in scores for r in c)
        ]
        for p in papers
    ]
    best = None
    for choice in itertools.product(*options):
        used = {}
        for c in choice:
            for r in c:
                used[r] = used.get(r, 0) + 1
        if all(used[r] <= loads[r] for r in used):
            value = sum(scores[p, r] for p, c in zip(papers, choice, strict=True) for r in c)
            best = value if best is None else max(best, value)
    return best


def test_greedy_is_worse_and_min_cost_flow_finds_the_optimum():
    # Greedy grabs (A, r1)=3 first and must then give B to r2 (0): total 3.
    # The optimum gives A to r2 and B to r1: 2 + 2 = 4.
    scores = {("A", "r1"): 3, ("A", "r2"): 2, ("B", "r1"): 2, ("B", "r2"): 0}
    loads = {"r1": 1, "r2": 1}
    assert total(greedy(["A", "B"], scores, 1, loads), scores) == 3
    sol = solve(["A", "B"], scores, per_paper=1, loads=loads)
    assert sol.pairs == {"A": ["r2"], "B": ["r1"]} and not sol.uncovered
    assert total(sol.pairs, scores) == 4


@pytest.mark.parametrize("seed", range(12))
def test_matches_brute_force_on_random_small_instances(seed):
    rng = random.Random(seed)
    papers = [f"p{i}" for i in range(4)]
    reviewers = [f"r{j}" for j in range(5)]
    best = None
    while best is None:  # draw until the instance is feasible
        scores = {
            (p, r): rng.choice([0, 0.5, 1, 2, 3.25, 5])
            for p in papers
            for r in reviewers
            if rng.random() > 0.15  # some conflicts
        }
        loads = {r: rng.choice([1, 2, 3]) for r in reviewers}
        best = brute_force_best(papers, reviewers, scores, 2, loads)
    sol = solve(papers, scores, per_paper=2, loads=loads)
    assert not sol.uncovered
    assert all(len(set(rs)) == 2 for rs in sol.pairs.values())
    assert all((p, r) in scores for p, rs in sol.pairs.items() for r in rs)
    used = [r for rs in sol.pairs.values() for r in rs]
    assert all(used.count(r) <= loads[r] for r in reviewers)
    assert total(sol.pairs, scores) == pytest.approx(best)


def _paper(pid: str, tags: list[str], abstract: str = "", **kw) -> Paper:
    return Paper(id=pid, title=None, abstract=abstract, tags=tuple(tags), **kw)


def test_affinity_formula():
    paper = _paper(
        "p",
        ["diffusion-models", "image-generation", "new-method"],
        "We study latent diffusion with score-matching objectives; no GANs here (organ).",
        keywords=("FID",),
    )
    r = Reviewer(
        id="r",
        tags=("diffusion-models", "image-generation", "robotics-control"),
        keywords=("score matching", "GAN", "organ", "fid", "transformers"),
    )
    m = affinity(paper, r)
    # 2 shared tags x 2, +1 primary tag shared, + keywords "score matching" (hyphen variant),
    # "organ", "fid" (paper keyword); "GAN" must not match inside "GANs"
    assert m.tags == ("diffusion-models", "image-generation")
    assert m.keywords == ("score matching", "organ", "fid")
    assert m.affinity == 2 * 2 + 1 + 3
    assert affinity(paper, Reviewer(id="x", tags=("image-generation",))).affinity == 2


def test_end_to_end_assignment_beats_greedy_on_real_affinities():
    papers = [
        _paper("p1", ["image-generation", "diffusion-models"], "A latent generator."),
        _paper("p2", ["diffusion-models"], "Faster samplers."),
    ]
    reviewers = [
        Reviewer(id="alice", tags=("diffusion-models", "image-generation")),
        Reviewer(id="bob", tags=("image-generation",), keywords=("latent generator",)),
    ]
    # alice: p1 = 2*2 + 1 (primary) = 5, p2 = 2 + 1 = 3; bob: p1 = 2 + 1 + 1 (keyword) = 4, p2 = 0
    scores = {(p.id, r.id): affinity(p, r).affinity for p in papers for r in reviewers}
    assert scores == {("p1", "alice"): 5, ("p1", "bob"): 4, ("p2", "alice"): 3, ("p2", "bob"): 0}
    loads = {"alice": 1, "bob": 1}
    assert total(greedy(["p1", "p2"], scores, 1, loads), scores) == 5
    result = assign(papers, reviewers, per_paper=1, max_load=1)
    assert {(p, r) for p, r, _ in result.pairs} == {("p1", "bob"), ("p2", "alice")}
    assert result.total_affinity == 7


def test_conflicts_are_never_assigned_and_loads_hold():
    papers = [_paper(f"p{i}", ["diffusion-models"]) for i in range(4)]
    star = Reviewer(id="star", tags=("diffusion-models",), conflicts=frozenset({"p0", "p1"}))
    others = [Reviewer(id=f"r{j}") for j in range(3)]
    result = assign(papers, [star, *others], per_paper=2, max_load=3)
    pairs = {(p, r) for p, r, _ in result.pairs}
    assert not {("p0", "star"), ("p1", "star")} & pairs
    assert {("p2", "star"), ("p3", "star")} <= pairs  # the expert goes where allowed
    assert max(result.loads().values()) <= 3
    assert len(pairs) == 8 and not result.uncovered


def test_paper_with_too_few_eligible_reviewers_is_reported_and_the_rest_assigned():
    papers = [_paper("p0", []), _paper("p1", [])]
    reviewers = [
        Reviewer(id="a", conflicts=frozenset({"p0"})),
        Reviewer(id="b", conflicts=frozenset({"p0"})),
        Reviewer(id="c"),
    ]
    result = assign(papers, reviewers, per_paper=2, max_load=2)
    assert [u.paper_id for u in result.uncovered] == ["p0"]
    assert "only 1 eligible reviewer(s), 2 needed: 2 of 3 reviewers have a conflict" in (
        result.uncovered[0].reason
    )
    assert len({r for p, r, _ in result.pairs if p == "p1"}) == 2


def test_a_capacity_shortfall_assigns_as_much_as_the_loads_allow_and_says_what_to_raise():
    papers = [_paper(f"p{i}", []) for i in range(5)]
    reviewers = [Reviewer(id=f"r{j}") for j in range(3)]
    result = assign(papers, reviewers, per_paper=2, max_load=3)
    assert len(result.pairs) == 9  # every slot used, no pair twice
    assert len({(p, r) for p, r, _ in result.pairs}) == 9
    assert result.capacity_short is not None and re.search(
        r"5 papers x 2 reviewers = 10 .* add up to 9; raise --max-load to at least 4",
        result.capacity_short,
    )
    ((short,),) = [[u for u in result.uncovered]]
    assert "load limits add up to less than the papers' demands" in short.reason
    assert "it got 1 of 2" in short.reason
    # more reviewers per paper than can take papers: each paper gets all it can
    result = assign(papers, reviewers, per_paper=4, max_load=10)
    assert len(result.pairs) == 15 and len(result.uncovered) == 5
    assert "only 3 eligible reviewer(s), 4 needed" in result.uncovered[0].reason


def test_competing_papers_hall_violation():
    # p0..p2 can only go to a and b (2 slots each = 4) but need 6 slots: one paper stays uncovered.
    hidden = frozenset({"p0", "p1", "p2"})
    papers = [_paper(f"p{i}", []) for i in range(4)]
    reviewers = [Reviewer(id="a"), Reviewer(id="b")]
    reviewers += [Reviewer(id=x, conflicts=hidden) for x in ("c", "d")]
    result = assign(papers, reviewers, per_paper=2, max_load=2)
    assert len(result.uncovered) == 1
    short = result.uncovered[0]
    assert short.paper_id in {"p0", "p1", "p2"} and "needed at full load" in short.reason
    covered = {p for p, _, _ in result.pairs}
    assert covered == {"p0", "p1", "p2", "p3"} - {short.paper_id}
    assert all(sum(1 for q, _, _ in result.pairs if q == p) == 2 for p in covered)


def test_load_reviewers_resolves_and_validates(tmp_path):
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    path = tmp_path / "r.yaml"
    path.write_text("reviewers:\n  - {id: a, tags: [GNN, Diffusion models], max_load: 2}\n")
    (r,) = load_reviewers(path, taxonomy)
    assert r.tags == ("graph-neural-networks", "diffusion-models") and r.max_load == 2
    for bad, msg in [
        ("reviewers:\n  - {id: a, tags: [quantum-knitting]}\n", "unknown tag 'quantum-knitting'"),
        ("reviewers:\n  - {id: a}\n  - {id: a}\n", "duplicate reviewer id 'a'"),
        ("reviewers:\n  - {id: a, conflict: [x]}\n", "did you mean 'conflicts'"),
        ("reviewers: []\n", "no reviewers"),
    ]:
        path.write_text(bad)
        with pytest.raises(ConfigError, match=msg):
            load_reviewers(path, taxonomy)


def test_shipped_example_reviewers_load_with_the_shipped_taxonomy():
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    reviewers = load_reviewers(REPO / "examples" / "reviewers.yaml", taxonomy)
    assert len(reviewers) >= 20
    assert all(r.tags for r in reviewers)


def test_cli_assign_writes_csv(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text(
        "reviewers:\n"
        "  - {id: gnn, name: G, tags: [graph-neural-networks], keywords: [heterophilous]}\n"
        "  - {id: gen, name: D, tags: [diffusion-models, image-generation]}\n"
        "  - {id: llm, tags: [large-language-models], keywords: [AUROC], conflicts: [97240d0de36ffdb0]}\n"
        "  - {id: neuro, tags: [neuroscience]}\n"
    )
    res = CliRunner().invoke(
        main, ["assign", str(run), str(reviewers), "--per-paper", "2", "--max-load", "3"]
    )
    assert res.exit_code == 0, res.output
    assert "covered 6 of 6 papers" in res.stdout
    rows = list(csv.DictReader((run / "assignments.csv").open(encoding="utf-8")))
    assert len(rows) == 12
    assert not [
        r for r in rows if r["paper_id"] == "97240d0de36ffdb0" and r["reviewer_id"] == "llm"
    ]
    het = next(r for r in rows if r["paper_id"] == "506c1eae6e5ec217" and r["reviewer_id"] == "gnn")
    assert het["affinity_total"] == "4" and het["matching_keywords"] == "heterophilous"
    assert het["matching_tags"] == "Graph neural networks"


def test_cli_assign_reports_uncovered_with_exit_1_and_infeasible_with_exit_2(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text(
        "reviewers:\n  - {id: a, conflicts: [39954d708d621dc0]}\n  - {id: b}\n  - {id: c}\n"
    )
    res = CliRunner().invoke(
        main, ["assign", str(run), str(reviewers), "--per-paper", "3", "--max-load", "6"]
    )
    assert res.exit_code == 1
    assert "39954d708d621dc0: only 2 eligible reviewer(s), 3 needed" in res.stderr
    assert "covered 5 of 6 papers" in res.stdout
    res = CliRunner().invoke(
        main, ["assign", str(run), str(reviewers), "--per-paper", "2", "--max-load", "3"]
    )
    assert res.exit_code == 1 and "not enough reviewing capacity" in res.stdout
    assert "raise --max-load to at least" in res.stdout
