"""How well does each affinity find a reviewer's own topic? recall@10 on SciTLDR dev.

Protocol (no people involved, nothing tuned on the answer):
- the 619 SciTLDR dev papers are tagged by the offline tagger; a paper's topic is its
  primary tag; topics with at least 6 papers are kept;
- each topic gives one synthetic reviewer whose past papers are a random half of the
  topic's papers (title + abstract); their self-declared tags are the 3 tags most frequent
  among those papers (as a person would list their areas);
- every other dev paper is a submission (the held-back halves plus all papers of other
  topics as distractors);
- each reviewer ranks all submissions by an affinity; recall@10 = held-back papers of their
  topic among their top 10 / min(10, held-back papers). Ties are broken at random; the
  figures are means over reviewers and 5 seeds.

Caveat: topics come from the same tagger that produces the tags, which favours the
tags-only affinity; text affinity never sees the topic labels.

    python -m bench.affinity_recall [/work/shared/data/scitldr/dev.jsonl]
"""

from __future__ import annotations

import importlib
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from pipeline.assign import PastPaper, Reviewer
from pipeline.offline.tags import match_tags
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.rundir import Paper
from pipeline.taxonomy import load_taxonomy

# the module, not the function `pipeline.assign.affinity` the package exports
aff = importlib.import_module("pipeline.assign.affinity")

DEV = Path("/work/shared/data/scitldr/dev.jsonl")
MIN_TOPIC = 6
TOP = 10
SEEDS = 5


def load(path: Path) -> list[Paper]:
    """SciTLDR papers, tagged offline."""
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        abstract = " ".join(row["source"])
        tags, keywords = match_tags(abstract, taxonomy)
        out.append(
            Paper(
                id=row["paper_id"],
                title=row.get("title"),
                abstract=abstract,
                tags=tuple(tags),
                keywords=tuple(keywords),
            )
        )
    return out


def split(papers: list[Paper], seed: int):
    """Reviewers (one per topic) and submissions, with each reviewer's held-back papers."""
    rng = np.random.default_rng(seed)
    by_topic: dict[str, list[int]] = {}
    for i, p in enumerate(papers):
        by_topic.setdefault(p.tags[0], []).append(i)
    reviewers, held = [], []
    past_ids: set[int] = set()
    for topic, members in sorted(by_topic.items()):
        if len(members) < MIN_TOPIC:
            continue
        order = rng.permutation(members)
        half = len(order) // 2
        mine, rest = order[:half], order[half:]
        past_ids.update(int(i) for i in mine)
        counts = Counter(t for i in mine for t in papers[i].tags)
        reviewers.append(
            Reviewer(
                id=f"r-{topic}",
                tags=tuple(t for t, _ in counts.most_common(3)),
                papers=tuple(
                    PastPaper(title=papers[i].title, abstract=papers[i].abstract) for i in mine
                ),
            )
        )
        held.append({int(i) for i in rest})
    subs = [i for i in range(len(papers)) if i not in past_ids]
    return reviewers, subs, held


def recall(scores: np.ndarray, subs: list[int], held: list[set[int]], rng) -> float:
    """Mean recall@10 over reviewers (columns) of a submissions x reviewers score matrix."""
    out = []
    for j, mine in enumerate(held):
        noise = rng.random(len(subs)) * 1e-6  # random tie-break
        top = np.argsort(-(scores[:, j] + noise))[:TOP]
        hits = sum(1 for t in top if subs[t] in mine)
        out.append(hits / min(TOP, len(mine)))
    return float(np.mean(out))


def variants(scorer, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Score matrices of each affinity variant."""
    tags = (scorer._p_tags[rows] @ scorer._r_tags_t).toarray() * aff.TAG_WEIGHT
    tags += (scorer._p_primary[rows] @ scorer._r_tags_t).toarray() * aff.PRIMARY_TAG_BONUS
    cos = scorer._cosines(rows)
    best = np.maximum.reduceat(cos, scorer._starts, axis=1)
    mean = np.add.reduceat(cos, scorer._starts, axis=1) / scorer._counts
    text = aff.TEXT_MAX_SHARE * best + (1 - aff.TEXT_MAX_SHARE) * mean
    return {
        "tags only (2/shared tag + 1 primary)": tags,
        "text: max over past papers": best,
        "text: mean over past papers": mean,
        f"text: {aff.TEXT_MAX_SHARE:g} max + {1 - aff.TEXT_MAX_SHARE:g} mean": text,
        f"combined: tags + {aff.TEXT_WEIGHT:g} x text (the default)": tags + aff.TEXT_WEIGHT * text,
        "combined: tags + 5 x text": tags + 5 * text,
        "combined: tags + 20 x text": tags + 20 * text,
    }


def main() -> None:
    """Print the recall@10 table."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEV
    papers = load(path)
    results: dict[str, list[float]] = {}
    n_reviewers = n_subs = 0
    for max_df in (aff.TEXT_MAX_DF, 1.0):
        aff.TEXT_MAX_DF = max_df
        for seed in range(SEEDS):
            reviewers, subs, held = split(papers, seed)
            n_reviewers, n_subs = len(reviewers), len(subs)
            scorer = aff.Scorer([papers[i] for i in subs], reviewers)
            rows = np.arange(len(subs))
            rng = np.random.default_rng(100 + seed)
            for name, scores in variants(scorer, rows).items():
                if max_df != 0.1 and not name.startswith("combined: tags + 10"):
                    continue
                label = name if max_df == 0.1 else f"{name}, no max_df"
                results.setdefault(label, []).append(recall(scores, subs, held, rng))
    aff.TEXT_MAX_DF = 0.1
    print(
        f"SciTLDR dev: {len(papers)} papers, {n_reviewers} synthetic reviewers (topics with "
        f">= {MIN_TOPIC} papers), {n_subs} submissions; mean over {SEEDS} splits"
    )
    print("| affinity | recall@10 |")
    print("|---|---:|")
    for name, values in results.items():
        print(f"| {name} | {np.mean(values):.3f} |")


if __name__ == "__main__":
    main()
