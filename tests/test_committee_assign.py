"""Assignment a program committee can trust: conflicts never ignored, expertise from past
papers, reasons on every pair, pruning that does not lose coverage, the per-reviewer page."""

from __future__ import annotations

import csv
import html
import importlib
import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pipeline.assign import (
    ConflictPolicy,
    PastPaper,
    Reviewer,
    assign,
    candidate_arcs,
    keyword_counts,
    load_pool,
    summary,
)
from pipeline.assign.conflicts import declared_conflicts, derived_conflicts, domain_keys
from pipeline.assign.solver import solve_arcs
from pipeline.cli import main
from pipeline.errors import ConfigError, InputError
from pipeline.report.reviewers import render_reviewers_html
from pipeline.rundir import Paper

aff = importlib.import_module("pipeline.assign.affinity")  # the module, not the function
REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "openreview"

SAE = "Sparse autoencoders recover interpretable features from superposition in language models."
GNN = "Message passing graph neural networks suffer from over-squashing on long-range tasks."
DIFF = "Score matching trains diffusion models that denoise images step by step."


def paper(pid: str, abstract: str = "", tags=(), **kw) -> Paper:
    return Paper(id=pid, title=kw.pop("title", None), abstract=abstract, tags=tuple(tags), **kw)


# ---- declared conflicts


def test_conflicts_match_user_ids_numbers_and_hashes_in_any_case():
    papers = [
        paper("aaaa000000000001", paper_id="rJlnfaNYvB", paper_ids=("rJlnfaNYvB",), number="12"),
        paper("aaaa000000000002", paper_id="H1eUz1rKPr", paper_ids=("H1eUz1rKPr",), number="13"),
        paper("AAAA000000000003"),
    ]
    r = Reviewer(id="r", conflicts=frozenset({"RJLNFANYVB", " #13 ", "aaaa000000000003"}))
    got = {c.paper for c in declared_conflicts(papers, [r])}
    assert got == {"aaaa000000000001", "aaaa000000000002", "AAAA000000000003"}
    r12 = Reviewer.model_validate({"id": "x", "conflicts": [12]})  # a YAML number
    assert [c.paper for c in declared_conflicts(papers, [r12])] == ["aaaa000000000001"]


def test_unmatched_conflicts_stop_with_every_one_listed():
    papers = [
        paper("39954d708d621dc0", title="Latent Flow Distillation"),
        paper("506c1eae6e5ec217", paper_id="P-7", paper_ids=("P-7",)),
    ]
    reviewers = [
        Reviewer(id="a", conflicts=frozenset({"39954d70", "latent flow distillation"})),
        Reviewer(id="b", conflicts=frozenset({"P-8", "506c1eae6e5ec217"})),
    ]
    with pytest.raises(InputError) as err:
        declared_conflicts(papers, reviewers)
    msg = str(err.value)
    assert msg.startswith("3 conflict(s) in the reviewers file name no paper of this run")
    assert "a: '39954d70' (a prefix of 39954d708d621dc0: give the whole id)" in msg
    assert "a: 'latent flow distillation' (the title of 39954d708d621dc0" in msg
    assert "b: 'P-8'" in msg
    with pytest.raises(InputError, match="name no paper"):
        assign(papers, reviewers, per_paper=1, max_load=2)


def test_cli_assign_exits_2_on_an_unknown_conflict_and_writes_nothing(tmp_path, example_run):
    reviewers = tmp_path / "r.yaml"
    reviewers.write_text(
        "reviewers:\n  - {id: a, conflicts: [NOT-A-PAPER]}\n  - {id: b}\n  - {id: c}\n  - {id: d}\n"
    )
    out = tmp_path / "a.csv"
    res = CliRunner().invoke(main, ["assign", str(example_run), str(reviewers), "--out", str(out)])
    assert res.exit_code == 2
    assert "1 conflict(s)" in res.stderr and "a: 'NOT-A-PAPER'" in res.stderr
    assert not out.exists()


# ---- reviewer ids


@pytest.mark.parametrize("second", ['"a "', "' a'", "A"])
def test_reviewer_ids_that_differ_in_case_or_spaces_are_one_person(tmp_path, second):
    path = tmp_path / "r.yaml"
    path.write_text(f"reviewers:\n  - {{id: a}}\n  - {{id: {second}}}\n")
    with pytest.raises(ConfigError, match="duplicate reviewer id"):
        load_pool(path, None)
    assert Reviewer(id=" a ").id == "a"


# ---- derived conflicts


def test_derived_conflicts_author_domain_institution():
    p = paper(
        "p1",
        authors=("Ada Lovelace", "Grace Hopper"),
        authorids=("~Ada_Lovelace1", "grace@cs.northfield.example", "x@gmail.com", "y@ox.ac.uk"),
        affiliations=("The Lakeside Institute", "riverside.example"),
    )
    reviewers = [
        Reviewer(id="ada", openreview_id="~Ada_Lovelace1"),
        Reviewer(id="hopper", name="grace  HOPPER"),
        Reviewer(id="north", emails=("n@northfield.example",)),
        Reviewer(id="gmail", emails=("someone@gmail.com",)),
        Reviewer(id="cam", emails=("c@cam.ac.uk",)),
        Reviewer(id="lake", institutions=("Lakeside Institute",)),
        Reviewer(id="river", domains=("mail.riverside.example",)),
        Reviewer(id="clean", emails=("c@elsewhere.example",), institutions=("Elsewhere",)),
    ]
    got = {c.reviewer: c for c in derived_conflicts([p], reviewers, ConflictPolicy())}
    assert set(got) == {"ada", "hopper", "north", "lake", "river"}
    assert got["ada"].kind == "author" and "~Ada_Lovelace1" in got["ada"].reason
    assert got["hopper"].kind == "author" and "Grace Hopper" in got["hopper"].reason
    assert got["north"].kind == "domain" and "northfield.example" in got["north"].reason
    assert got["lake"].kind == "institution"
    assert got["river"].kind == "domain"
    # the list of ignored domains is configurable (here: gmail counts, northfield does not)
    policy = ConflictPolicy(ignore_domains=("northfield.example",))
    names = {c.reviewer for c in derived_conflicts([p], reviewers, policy)}
    assert "gmail" in names and "north" not in names
    assert derived_conflicts([p], reviewers, ConflictPolicy(derive=False)) == []
    assert domain_keys("cs.ox.ac.uk") == ["cs.ox.ac.uk", "ox.ac.uk"]
    assert domain_keys("a.b.mit.edu") == ["a.b.mit.edu", "b.mit.edu", "mit.edu"]


def test_derived_conflicts_are_never_assigned():
    papers = [paper(f"p{i}", authorids=(f"x{i}@uni.example",)) for i in range(4)]
    reviewers = [Reviewer(id="insider", emails=("me@cs.uni.example",), tags=("t",))]
    reviewers += [Reviewer(id=f"r{j}") for j in range(3)]
    result = assign(papers, reviewers, per_paper=2, max_load=4)
    assert not [r for _, r, _ in result.pairs if r == "insider"]
    assert len(result.conflicts) == 4 and {c.kind for c in result.conflicts} == {"domain"}


# ---- expertise


def test_spurious_single_words_stop_counting_as_expertise():
    for word in ("code", "complexity", "neurons", "features", "model"):
        assert not keyword_counts(word), word
    for kw in ("code generation", "heterophilous", "Wasserstein", "KAN", "induction heads"):
        assert keyword_counts(kw), kw
    assert not keyword_counts("of the")
    p = paper("p", "We release code; the complexity of neurons is studied. Code generation helps.")
    r = Reviewer(id="r", keywords=("code", "complexity", "neurons", "code generation"))
    m = aff.affinity(p, r)
    assert m.keywords == ("code generation",) and m.affinity == 1


def test_acronyms_match_case_and_phrases_match_whole():
    p = paper("p", "We clip gradients. Score-matching objectives; no GANs here.")
    r = Reviewer(id="r", keywords=("CLIP", "score matching", "GAN"))
    assert aff.affinity(p, r).keywords == ("score matching",)
    q = paper("q", "CLIP embeddings of images.")
    assert aff.affinity(q, r).keywords == ("CLIP",)


def test_a_keyword_in_most_papers_does_not_count():
    papers = [paper(f"p{i}", f"Graph transformers, variant {i}.") for i in range(8)]
    papers.append(paper("rare", "Nothing related."))
    r = Reviewer(id="r", keywords=("graph transformers",))
    scorer = aff.Scorer(papers, [r])
    assert scorer.ignored_keywords == {"graph transformers": "found in 8 of 9 papers"}
    assert scorer.explain(0, 0).keywords == ()


def test_text_affinity_is_tfidf_cosine_aggregated_by_max_and_mean():
    from sklearn.feature_extraction.text import TfidfVectorizer

    papers = [paper("s", SAE, title="SAE"), paper("g", GNN, title="GNN"), paper("d", DIFF)]
    past = (
        PastPaper(title="Dictionary learning", abstract="Sparse dictionary features in models."),
        PastPaper(title="Graphs", abstract="Over-squashing in message passing graph networks."),
    )
    r = Reviewer(id="r", papers=past)
    scorer = aff.Scorer(papers, [r])
    docs = [f"{p.title or ''}\n{p.abstract}" for p in papers] + [pp.text for pp in past]
    x = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform(docs)
    cos = (x[:3] @ x[3:].T).toarray()
    for i in range(3):
        m = scorer.explain(i, 0)
        expected = 0.5 * cos[i].max() + 0.5 * cos[i].mean()
        assert m.text == pytest.approx(expected, abs=1e-4)
        assert m.affinity == pytest.approx(aff.TEXT_WEIGHT * expected, abs=1e-3)
    assert scorer.explain(1, 0).similar == "Graphs"
    assert scorer.explain(0, 0).similar == "Dictionary learning"
    assert 'most similar past paper: "Graphs"' in scorer.explain(1, 0).reason()
    block = scorer.block(np.arange(3))
    assert block[:, 0] == pytest.approx([scorer.explain(i, 0).affinity for i in range(3)], abs=1e-3)


def test_past_papers_put_the_right_reviewer_on_the_paper():
    papers = [paper("s", SAE), paper("g", GNN)]
    reviewers = [
        Reviewer(
            id="graphs",
            papers=(PastPaper(title="Over-squashing in message passing", abstract=GNN),),
        ),
        Reviewer(id="sparse", papers=(PastPaper(title="Superposition", abstract=SAE),)),
    ]
    result = assign(papers, reviewers, per_paper=1, max_load=1)
    assert {(p, r) for p, r, _ in result.pairs} == {("s", "sparse"), ("g", "graphs")}
    assert all(m.similar for _, _, m in result.pairs)


def test_block_scores_equal_the_explained_affinity_on_the_example(example_pool, example_papers):
    scorer = aff.Scorer(example_papers, example_pool.reviewers)
    rows = np.arange(len(example_papers))
    block = scorer.block(rows)
    rng = random.Random(3)
    for _ in range(40):
        i, j = rng.randrange(len(rows)), rng.randrange(len(example_pool.reviewers))
        assert block[i, j] == pytest.approx(scorer.explain(i, j).affinity, abs=2e-3)


# ---- pruning and the solver


def test_pruning_widens_until_no_paper_is_left_short():
    # Every paper's single best reviewer is `star` (load 1): with top-1 candidates four
    # papers would be short; widening finds the exact-k assignment the full problem has.
    papers = [paper(f"p{i}", tags=("t",)) for i in range(5)]
    reviewers = [Reviewer(id="star", tags=("t",), max_load=1)]
    reviewers += [Reviewer(id=f"r{j}", max_load=1) for j in range(4)]
    pruned = assign(papers, reviewers, per_paper=1, max_load=1, top_k=1)
    full = assign(papers, reviewers, per_paper=1, max_load=1, top_k=None)
    assert not pruned.uncovered and pruned.pruning.rounds > 1
    assert pruned.total_affinity == full.total_affinity


@pytest.mark.parametrize("seed", range(6))
def test_pruned_assignments_keep_every_constraint_and_lose_little(
    seed, example_pool, example_papers
):
    rng = random.Random(seed)
    reviewers = [
        r.model_copy(update={"max_load": rng.randint(6, 9)}) for r in example_pool.reviewers
    ]
    full = assign(example_papers, reviewers, per_paper=3, max_load=8, top_k=None)
    pruned = assign(example_papers, reviewers, per_paper=3, max_load=8, top_k=4)
    conflicts = {(c.paper, c.reviewer) for c in pruned.conflicts}
    for result in (full, pruned):
        assert not result.uncovered
        assert not {(p, r) for p, r, _ in result.pairs} & conflicts
        loads = result.loads()
        assert all(loads[r.id] <= r.max_load for r in reviewers)
        per = {}
        for p, r, _ in result.pairs:
            per.setdefault(p, set()).add(r)
        assert all(len(rs) == 3 for rs in per.values()) and len(per) == len(example_papers)
    assert pruned.total_affinity <= full.total_affinity + 1e-6
    assert pruned.total_affinity >= 0.97 * full.total_affinity


def test_candidate_arcs_exclude_conflicts_and_unavailable_reviewers(example_pool, example_papers):
    scorer = aff.Scorer(example_papers, example_pool.reviewers)
    n_r = len(example_pool.reviewers)
    loads = np.full(n_r, 8)
    loads[0] = 0
    forbidden = [np.asarray([1, 2]) for _ in example_papers]
    arcs = candidate_arcs(scorer, 5, forbidden, loads)
    assert len(arcs) == 5 * len(example_papers)
    assert not np.isin(arcs.reviewer, [0, 1, 2]).any()
    eligible = np.full(len(example_papers), n_r - 3)
    flow = solve_arcs(len(example_papers), loads, arcs, 3, eligible, lambda i: "")
    assert np.bincount(arcs.paper[flow.chosen]).tolist() == [3] * len(example_papers)


# ---- outputs


def test_zero_affinity_assignments_are_listed_by_paper():
    papers = [paper("aaaa", title="Untouched topic"), paper("bbbb", tags=("t",))]
    reviewers = [Reviewer(id="x", name="X"), Reviewer(id="y", tags=("t",))]
    result = assign(papers, reviewers, per_paper=1, max_load=1)
    assert result.zero_affinity() == {"aaaa": ["x"]}
    text = summary(result)
    assert "1 weak pair(s) on 1 paper(s)" in text
    assert "weak pairs on 1 paper(s) (all in weak_pairs.csv):\n  aaaa  Untouched topic: x" in text


def test_reviewers_page_lists_each_reviewer_their_papers_and_the_papers_left_short():
    papers = [paper("p0", title="<b>Bold</b>", tags=("t",)), paper("p1", title="Lonely")]
    reviewers = [
        Reviewer(id="x", name="<script>alert(1)</script>", tags=("t",)),
        Reviewer(id="y", conflicts=frozenset({"p1"})),
    ]
    result = assign(papers, reviewers, per_paper=2, max_load=2)
    assert [u.paper_id for u in result.uncovered] == ["p1"]
    page = render_reviewers_html(result, None)
    # the page's data is script-safe JSON: a name cannot end the script element
    assert "<script>alert" not in page and "\\u003cscript\\u003ealert(1)" in page
    assert html.escape("<script>alert(1)</script>") not in page  # JSON-escaped, not HTML
    data = json.loads(page.split('id="reviewers-data">')[1].split("</script>")[0])
    assert data["papers"][0][:4] == ["p1", "", "Lonely", data["papers"][0][3]]  # short first
    assert "only 1 eligible reviewer(s), 2 needed" in data["papers"][0][3]
    assert '<p class="short" id="short">' in page
    csp = html.unescape(page.split('Content-Security-Policy" content="')[1].split('"')[0])
    assert "script-src 'sha256-" in csp and "unsafe-inline" not in csp.split("script-src")[1]


def test_cli_assign_on_the_openreview_example(example_run, tmp_path):
    out = tmp_path / "assignments.csv"
    res = CliRunner().invoke(
        main, ["assign", str(example_run), str(EXAMPLE / "reviewers.yaml"), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "covered 48 of 48 papers" in res.stdout
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert list(rows[0])[:4] == ["paper_id", "paper_number", "paper_title", "paper_hash"]
    assert len(rows) == 48 * 3 and all(r["reason"] for r in rows)
    assert all(r["paper_id"] != r["paper_hash"] for r in rows)  # the user's ids lead
    assert sum(1 for r in rows if r["similar_past_paper"]) > 100
    conflicts = list(csv.DictReader((tmp_path / "conflicts.csv").open(encoding="utf-8")))
    kinds = {c["kind"] for c in conflicts}
    assert {"declared", "author", "domain"} <= kinds and all(c["reason"] for c in conflicts)
    forbidden = {(c["paper_hash"], c["reviewer_id"]) for c in conflicts}
    assert not {(r["paper_hash"], r["reviewer_id"]) for r in rows} & forbidden
    declared = [c for c in conflicts if c["kind"] == "declared"]
    assert len(declared) == 3  # an upper-cased OpenReview id, a number, a #number
    page = (tmp_path / "reviewers.html").read_text(encoding="utf-8")
    data = json.loads(page.split('id="reviewers-data">')[1].split("</script>")[0])
    assert len(data["reviewers"]) == 24 and len(data["papers"]) == 48


# ---- fixtures


@pytest.fixture(scope="module")
def example_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("assign-example")
    res = CliRunner().invoke(
        main,
        ["run", str(EXAMPLE / "submissions.json"), "--provider", "offline"]
        + ["--out", str(root / "run"), "--cache-dir", str(root / "cache"), "--no-progress"],
    )
    assert res.exit_code == 0, res.output
    return root / "run"


@pytest.fixture(scope="module")
def example_pool():
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.taxonomy import load_taxonomy

    return load_pool(
        EXAMPLE / "reviewers.yaml", load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    )


@pytest.fixture(scope="module")
def example_papers(example_run):
    from pipeline.rundir import RunReader

    return list(RunReader(example_run).papers())


def test_papers_file_beside_the_yaml(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"reviewer": "A ", "title": "T", "abstract": "x y"}\n')
    (tmp_path / "r.yaml").write_text("papers_file: p.jsonl\nreviewers:\n  - {id: a}\n")
    (r,) = load_pool(tmp_path / "r.yaml", None).reviewers
    assert r.papers == (PastPaper(title="T", abstract="x y"),)
    (tmp_path / "p.jsonl").write_text('{"reviewer": "zed", "abstract": "x"}\n')
    with pytest.raises(ConfigError, match="papers of unknown reviewer"):
        load_pool(tmp_path / "r.yaml", None)
