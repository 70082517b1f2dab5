"""What `--objective fair` buys over max-sum, against the LP max-min bound, on real abstracts.

The instance: 2,000 SciTLDR abstracts (train + dev, ../shared/data/scitldr) as submissions,
and 150 reviewers whose past papers are the other abstracts, grouped by topic (each
reviewer: a seed abstract and its 3 nearest neighbours by TF-IDF), 3 reviewers per paper.
Affinity is the built-in one (text only: the abstracts carry no tags here).

For each objective it prints the weakest paper's total affinity, the 1st and 10th
percentile and the total, and independently of the solver (scipy HiGHS, over every
eligible pair, not only the top-k candidates the solver sees):
- the LP max-min bound: max T such that a fractional assignment gives every paper >= T;
- the best total any (even fractional) assignment with the floor `fair` reached can have.

    python -m bench.assign_fairness [--loads 40] [--papers 2000] [--reviewers 150]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from pipeline.assign import PastPaper, Reviewer, assign, candidate_arcs
from pipeline.assign.affinity import Scorer
from pipeline.rundir import Paper

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "scitldr"


def build(n_papers: int, n_reviewers: int, data: Path, seed: int = 0) -> tuple[list, list]:
    """Submissions and topic-grouped reviewers from the SciTLDR abstracts."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    rows = [
        json.loads(line)
        for name in ("train.jsonl", "dev.jsonl")
        for line in (data / name).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    texts = [" ".join(r["source"]) for r in rows]
    titles = [r.get("title") or None for r in rows]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(rows))
    subs, rest = order[:n_papers], order[n_papers:]
    x = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform(
        [texts[i] for i in rest]
    )
    sim = (x @ x.T).toarray()
    np.fill_diagonal(sim, -1)
    left = set(range(len(rest)))
    groups: list[list[int]] = []
    for s in rng.permutation(len(rest)):
        if len(groups) == n_reviewers:
            break
        if s not in left:
            continue
        left.discard(s)
        near = [int(j) for j in np.argsort(-sim[s]) if j in left][:3]
        left.difference_update(near)
        groups.append([int(s), *near])
    reviewers = [
        Reviewer(
            id=f"r{j}",
            papers=tuple(PastPaper(title=titles[rest[i]], abstract=texts[rest[i]]) for i in group),
        )
        for j, group in enumerate(groups)
    ]
    papers = [
        Paper(id=f"{n:016x}", title=titles[i], abstract=texts[i], number=str(n + 1))
        for n, i in enumerate(subs)
    ]
    return papers, reviewers


def lp_figures(papers: list, reviewers: list, per_paper: int, load: int, floor: float):
    """(LP max-min bound, best LP total with every paper >= floor), over every pair."""
    scorer = Scorer(papers, reviewers)
    n_p, n_r = len(papers), len(reviewers)
    none = [np.zeros(0, np.int64)] * n_p
    arcs = candidate_arcs(scorer, None, none, np.full(n_r, load))
    n = len(arcs)
    cols = np.arange(n)
    a_p = sparse.csr_matrix((np.ones(n), (arcs.paper, cols)), shape=(n_p, n))
    a_r = sparse.csr_matrix((np.ones(n), (arcs.reviewer, cols)), shape=(n_r, n))
    a_s = sparse.csr_matrix((arcs.score, (arcs.paper, cols)), shape=(n_p, n))
    c = np.zeros(n + 1)
    c[-1] = -1
    a_ub = sparse.vstack(
        [
            sparse.hstack([a_r, sparse.csr_matrix((n_r, 1))]),
            sparse.hstack([-a_s, np.ones((n_p, 1))]),
        ],
        format="csr",
    )
    b_ub = np.concatenate([np.full(n_r, load), np.zeros(n_p)])
    a_eq = sparse.hstack([a_p, sparse.csr_matrix((n_p, 1))], format="csr")
    bounds = np.column_stack([np.zeros(n + 1), np.r_[np.ones(n), np.inf]])
    bound = linprog(
        c,
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=np.full(n_p, per_paper),
        bounds=bounds,
        method="highs-ipm",
    )
    best = linprog(
        -arcs.score,
        A_ub=sparse.vstack([a_r, -a_s], format="csr"),
        b_ub=np.concatenate([np.full(n_r, load), np.full(n_p, -floor)]),
        A_eq=a_p,
        b_eq=np.full(n_p, per_paper),
        bounds=(0, 1),
        method="highs-ipm",
    )
    return -bound.fun, -best.fun, n


def figures(result) -> tuple[float, float, float, float]:
    """(weakest, p1, p10, total) of an assignment."""
    v = np.asarray(list(result.paper_totals().values()))
    return v.min(), np.percentile(v, 1), np.percentile(v, 10), result.total_affinity


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=2000)
    ap.add_argument("--reviewers", type=int, default=150)
    ap.add_argument("--per-paper", type=int, default=3)
    ap.add_argument("--loads", type=int, default=40)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    papers, reviewers = build(args.papers, args.reviewers, args.data)
    k, load = args.per_paper, args.loads
    print(
        f"instance: {len(papers)} SciTLDR abstracts x {len(reviewers)} reviewers (4 past "
        f"abstracts each, topic-grouped), {k} per paper, load {load} "
        f"({len(reviewers) * load} slots for {len(papers) * k})"
    )
    print("| objective | weakest | p1 | p10 | total | wall s | CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    results = {}
    for objective in ("max-sum", "fair"):
        wall, cpu = time.perf_counter(), time.process_time()
        res = assign(papers, reviewers, per_paper=k, max_load=load, objective=objective)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        results[objective] = res
        w, p1, p10, total = figures(res)
        print(
            f"| {objective} | {w:.4f} | {p1:.4f} | {p10:.4f} | {total:.2f} | {wall:.1f} | {cpu:.1f} |"
        )
    fair = results["fair"]
    weakest, _, _, total = figures(fair)
    bound, best_total, n_pairs = lp_figures(papers, reviewers, k, load, weakest)
    plain_weakest = figures(results["max-sum"])[0]
    print(f"LP max-min bound over all {n_pairs} pairs: {bound:.4f}")
    print(f"  max-sum's weakest paper: {100 * plain_weakest / bound:.1f}% of the bound")
    print(f"  fair's weakest paper:    {100 * weakest / bound:.1f}% of the bound (target >= 95%)")
    if fair.fairness is not None:
        print(
            f"  (the solver's own LP bound, over its top-k candidates: {fair.fairness.lp_bound:.4f})"
        )
    print(
        f"best LP total with every paper >= {weakest:.4f}: {best_total:.2f}; fair's total "
        f"{total:.2f} is {100 * (1 - total / best_total):.3f}% below it (target <= 2%)"
    )
    print(
        f"fair costs {100 * (1 - total / results['max-sum'].total_affinity):.3f}% of the "
        "max-sum total"
    )


if __name__ == "__main__":
    main()
