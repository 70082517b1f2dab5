"""Reviewer assignment at conference scale, and what top-k candidate pruning costs.

Builds a synthetic conference (topic-model texts, taxonomy-like tags, phrase keywords,
3-5 past papers per reviewer, authors with e-mail domains shared with reviewers, so that
declared and derived conflicts are both exercised), runs the same `pipeline.assign.assign`
that `digest assign` runs (affinity with TF-IDF over past papers, conflicts, pruning, the
OR-Tools min-cost flow, reasons for every pair) and prints wall time, CPU time (the
machine is shared: CPU time is what the process itself used) and peak RSS per phase.

    python -m bench.assign_scale                      # 12,000 x 8,000, then the gap on 2,000 x 150
    python -m bench.assign_scale --papers 2000 --reviewers 150 --gap-only
    python -m bench.assign_scale --papers 1500 --reviewers 1000 --objective fair --no-gap

The gap: the same 2,000 x 150 instance solved with every eligible pair (unpruned, 300k
arcs) and with top-k pruning for several k; gap = 1 - pruned total / unpruned total.
"""

from __future__ import annotations

import argparse
import resource
import time
from dataclasses import dataclass

import numpy as np

from pipeline.assign import DEFAULT_TOP_K, PastPaper, Reviewer, assign
from pipeline.rundir import Paper

N_TOPICS = 400
VOCAB = 30_000
TOPIC_WORDS = 80
DOC_WORDS = 130
N_TAGS = 160
N_INSTITUTIONS = 900


def _words(rng: np.random.Generator) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out: set[str] = set()
    while len(out) < VOCAB:
        n = int(rng.integers(4, 10))
        out.add("".join(rng.choice(letters, n)))
    return sorted(out)


@dataclass
class World:
    """The hidden structure the synthetic texts, tags and keywords are drawn from."""

    words: list[str]
    words_arr: np.ndarray
    topic_words: np.ndarray  # (topics, TOPIC_WORDS) word indexes
    topic_tags: np.ndarray  # (topics, 3) tag indexes
    background: np.ndarray  # cumulative Zipf probabilities over the vocabulary


def _world(rng: np.random.Generator) -> World:
    words = _words(rng)
    ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
    background = np.cumsum(1.0 / ranks**1.05)
    background /= background[-1]  # the CDF of a Zipf law over the vocabulary
    topic_words = rng.integers(1500, VOCAB, size=(N_TOPICS, TOPIC_WORDS))
    topic_tags = rng.integers(0, N_TAGS, size=(N_TOPICS, 3))
    return World(words, np.asarray(words, dtype=object), topic_words, topic_tags, background)


def _text(world: World, rng: np.random.Generator, topics: list[int], n: int) -> str:
    k = n // 2
    own = world.topic_words[rng.choice(topics, size=k)]
    picks = own[np.arange(k), np.minimum(rng.zipf(1.3, size=k) - 1, TOPIC_WORDS - 1)]
    back = np.searchsorted(world.background, rng.random(n - k))
    idx = np.concatenate([picks, back])
    rng.shuffle(idx)
    return " ".join(world.words_arr[np.minimum(idx, VOCAB - 1)].tolist())


def _topics(rng: np.random.Generator) -> list[int]:
    first = int(rng.integers(N_TOPICS))
    if rng.random() < 0.3:
        return [first, int(rng.integers(N_TOPICS))]
    return [first]


def build(
    n_papers: int, n_reviewers: int, seed: int = 7, loads: tuple[int, int] = (6, 8)
) -> tuple[list[Paper], list[Reviewer]]:
    """A synthetic conference: papers with tags and authors, reviewers with past papers."""
    rng = np.random.default_rng(seed)
    world = _world(rng)
    domains = [f"uni{n}.edu" for n in range(N_INSTITUTIONS)]
    reviewers: list[Reviewer] = []
    for j in range(n_reviewers):
        topics = _topics(rng)
        tags = tuple(dict.fromkeys(f"tag-{t}" for t in world.topic_tags[topics].ravel()[:4]))
        kw = world.topic_words[topics[0]][rng.choice(12, size=4, replace=False)]
        keywords = (
            f"{world.words[kw[0]]} {world.words[kw[1]]}",
            f"{world.words[kw[2]]} {world.words[kw[3]]}",
        )
        past = tuple(
            PastPaper(
                title=_text(world, rng, topics, 8), abstract=_text(world, rng, topics, DOC_WORDS)
            )
            for _ in range(int(rng.integers(3, 6)))
        )
        reviewers.append(
            Reviewer(
                id=f"rev{j}",
                name=f"Reviewer {j}",
                tags=tags,
                keywords=keywords,
                emails=(f"rev{j}@{domains[int(rng.integers(N_INSTITUTIONS))]}",),
                max_load=int(rng.integers(loads[0], loads[1] + 1)),
                papers=past,
            )
        )
    papers: list[Paper] = []
    for i in range(n_papers):
        topics = _topics(rng)
        tags = [f"tag-{t}" for t in world.topic_tags[topics[0]]]
        tags += [f"tag-{t}" for t in world.topic_tags[topics[1:]].ravel()[:1]]
        authors = [f"a{i}-{n}@{domains[int(rng.integers(N_INSTITUTIONS))]}" for n in range(3)]
        if rng.random() < 0.1:  # a reviewer co-authored it
            authors.append(reviewers[int(rng.integers(n_reviewers))].emails[0])
        papers.append(
            Paper(
                id=f"{i:016x}",
                title=_text(world, rng, topics, 8),
                abstract=_text(world, rng, topics, DOC_WORDS),
                paper_id=f"P{i}",
                paper_ids=(f"P{i}",),
                number=str(i + 1),
                tags=tuple(dict.fromkeys(tags)),
                authorids=tuple(authors),
            )
        )
    return papers, reviewers


class Meter:
    """Wall and CPU seconds since creation, and peak RSS of the process."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def lap(self) -> tuple[float, float]:
        """(wall s, cpu s) since creation."""
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def peak_rss_mb() -> float:
    """Peak resident set size of this process, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scale(
    n_papers: int, n_reviewers: int, per_paper: int, top_k: int, objective: str = "max-sum"
) -> None:
    """Build, assign and print the figures of one conference-size instance."""
    m = Meter()
    papers, reviewers = build(n_papers, n_reviewers)
    build_wall, build_cpu = m.lap()
    print(
        f"instance: {n_papers} papers x {n_reviewers} reviewers, {per_paper} per paper, loads 6-8"
    )
    print(f"  built in {build_wall:.1f} s wall ({build_cpu:.1f} s CPU); RSS {peak_rss_mb():.0f} MB")
    m = Meter()
    result = assign(
        papers, reviewers, per_paper=per_paper, max_load=8, top_k=top_k, objective=objective
    )
    wall, cpu = m.lap()
    covered = len({p for p, _, _ in result.pairs})
    derived = sum(1 for c in result.conflicts if c.kind != "declared")
    solver = "OR-Tools min-cost flow" if objective == "max-sum" else "flow, then the fair LP/MIP"
    print(f"assign --objective {objective} (affinity + conflicts + top-{top_k} pruning + {solver}")
    print("  + reasons):")
    print(f"  wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {peak_rss_mb():.0f} MB")
    for phase, (w, c) in result.timings.items():
        print(f"    {phase:<15} wall {w:6.1f} s  CPU {c:6.1f} s")
    print(
        f"  covered {covered} of {n_papers}, {len(result.pairs)} pairs, "
        f"{len(result.uncovered)} uncovered; {derived} derived conflicts; "
        f"{result.pruning.arcs if result.pruning else 0} candidate arcs in "
        f"{result.pruning.rounds if result.pruning else 0} round(s); "
        f"total affinity {result.total_affinity:.1f}"
    )
    totals = np.asarray(list(result.paper_totals().values()))
    print(
        f"  weakest paper {totals.min():.3f}, 1st percentile {np.percentile(totals, 1):.3f}, "
        f"10th percentile {np.percentile(totals, 10):.3f}"
    )
    if result.fairness is not None:
        print(
            f"  fair: floor {result.fairness.floor:.3f}, LP max-min bound "
            f"{result.fairness.lp_bound:.3f}"
        )


def gap(
    n_papers: int, n_reviewers: int, per_paper: int, ks: list[int], loads: tuple[int, int]
) -> None:
    """Total affinity unpruned vs pruned with each k, on one instance."""
    papers, reviewers = build(n_papers, n_reviewers, seed=11, loads=loads)
    capacity = sum(r.max_load or 0 for r in reviewers)
    m = Meter()
    full = assign(papers, reviewers, per_paper=per_paper, max_load=loads[1], top_k=None)
    wall, cpu = m.lap()
    print(
        f"\ngap instance: {n_papers} papers x {n_reviewers} reviewers, {per_paper} per paper, "
        f"loads {loads[0]}-{loads[1]} ({capacity} slots for {n_papers * per_paper} assignments)"
    )
    print("| candidates per paper | arcs | total affinity | gap vs unpruned | wall s | CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    base = full.total_affinity
    arcs = full.pruning.arcs if full.pruning else 0
    print(f"| all (unpruned) | {arcs} | {base:.2f} | 0 | {wall:.1f} | {cpu:.1f} |")
    for k in ks:
        m = Meter()
        res = assign(papers, reviewers, per_paper=per_paper, max_load=loads[1], top_k=k)
        wall, cpu = m.lap()
        g = 1 - res.total_affinity / base if base else 0.0
        n_arcs = res.pruning.arcs if res.pruning else 0
        rounds = res.pruning.rounds if res.pruning else 1
        widened = f" ({rounds} rounds)" if rounds > 1 else ""
        print(
            f"| top {k}{widened} | {n_arcs} | {res.total_affinity:.2f} | {100 * g:.4f}% | "
            f"{wall:.1f} | {cpu:.1f} |"
        )


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=12_000)
    ap.add_argument("--reviewers", type=int, default=8_000)
    ap.add_argument("--per-paper", type=int, default=3)
    ap.add_argument("--top-k", type=int, default=DEFAULT_TOP_K)
    ap.add_argument("--objective", choices=["max-sum", "fair"], default="max-sum")
    ap.add_argument("--gap-only", action="store_true")
    ap.add_argument("--no-gap", action="store_true")
    args = ap.parse_args()
    if not args.gap_only:
        scale(args.papers, args.reviewers, args.per_paper, args.top_k, args.objective)
    if not args.no_gap:
        gap(2000, 150, args.per_paper, [5, 10, 25, 50], loads=(45, 50))  # ~18% spare
        gap(2000, 150, args.per_paper, [5, 10, 25, 50], loads=(40, 41))  # ~1% spare


if __name__ == "__main__":
    main()
