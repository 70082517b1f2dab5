"""reviewers.html: the assignment by paper and by reviewer, one self-contained page.

The page carries the assignment as one compact JSON object (`page_data`) and a small script
(`assets/reviewers.js`) renders what is asked for, 50 entries at a time: the per-paper view
(each paper's reviewers with the reason, the scores and a weak flag; papers left short
first, then in submission-number order) and the per-reviewer view (each reviewer's load
against their limit and their papers), both with a search box. So the page of 12,000
papers and 8,000 reviewers opens at once: its DOM holds the entries on screen, not all of
them (bench/reviewers_page.py measures size and render time).

The JSON is script-safe (no `<`, `>`, `&`: pipeline/report/cards.py), the script builds the
DOM with `textContent` only, and the Content-Security-Policy allows this one script (by
its hash) and no network. Links go to conflicts.csv, assignments.csv and weak_pairs.csv
beside the page.
"""

from __future__ import annotations

import base64
import hashlib
import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.assign.outputs import (
    ASSIGNMENTS_FILE,
    CONFLICTS_FILE,
    DEFAULT_WEAK_BELOW,
    WEAK_PAIRS_FILE,
    is_weak,
    ordered_pairs,
    paper_order,
)
from pipeline.atomicfile import make_parent, write_text
from pipeline.report.cards import script_json
from pipeline.report.html import asset
from pipeline.taxonomy import Taxonomy
from pipeline.triage import DEFAULT_FORUM_URL, forum_url, lead_text, tag_label

if TYPE_CHECKING:
    from pipeline.assign import AssignmentResult

REVIEWERS_FILE = "reviewers.html"
PAGE_SIZE = 50  # entries rendered at a time (assets/reviewers.js reads it from the data)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


class _Table:
    """Strings stored once, referred to by index."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        n = self._index.get(text)
        if n is None:
            n = self._index[text] = len(self.items)
            self.items.append(text)
        return n


def page_data(
    result: AssignmentResult,
    taxonomy: Taxonomy | None,
    *,
    forum: str = DEFAULT_FORUM_URL,
    weak_below: float = DEFAULT_WEAK_BELOW,
) -> dict[str, Any]:
    """What the page renders, compact (field by field below).

    - `reviewers`: [id, name, load, limit or null, past papers, [tag index]], by name;
    - `papers`: [ref, forum url or "", title, why short or "", [pair]]; papers left short
      first (in the order they were reported), then in paper order;
    - pair: [reviewer index, affinity_total, [tag index], [keyword], past-paper index or -1,
      best_past_paper_similarity, text_similarity_blended, weak 0/1, embedding or null];
    - `tags`, `past`: the tag labels and past-paper titles the indexes refer to.
    """
    label = lambda t: tag_label(taxonomy, t)  # noqa: E731
    tags, past = _Table(), _Table()
    loads = result.loads()
    order = sorted(result.reviewers, key=lambda r: ((result.reviewers[r].name or r).lower(), r))
    r_index = {r: n for n, r in enumerate(order)}
    reviewers = [
        [
            r,
            result.reviewers[r].name or "",
            loads[r],
            result.max_loads.get(r),
            len(result.reviewers[r].papers),
            [tags(label(t)) for t in result.reviewers[r].tags],
        ]
        for r in order
    ]
    pairs: dict[str, list[list[Any]]] = {}
    for p, r, m in ordered_pairs(result):
        pairs.setdefault(p, []).append(
            [
                r_index[r],
                m.affinity,
                [tags(label(t)) for t in m.tags],
                list(m.keywords),
                past(m.similar) if m.similar else -1,
                m.similar_cosine,
                m.text,
                int(is_weak(m, weak_below)),
                m.embedding,
            ]
        )
    short = {u.paper_id: u.reason for u in result.uncovered}
    paper_ids = [u.paper_id for u in result.uncovered]
    paper_ids += sorted(
        (p for p in result.papers if p not in short), key=lambda p: paper_order(result.papers[p])
    )
    papers = []
    for p in paper_ids:
        paper = result.papers[p]
        papers.append(
            [
                paper.ref,
                forum_url(paper, forum) or "",
                lead_text(paper),
                short.get(p, ""),
                pairs.get(p, []),
            ]
        )
    return {
        "per_paper": result.per_paper,
        "page_size": PAGE_SIZE,
        "weak_below": weak_below,
        "tags": tags.items,
        "past": past.items,
        "reviewers": reviewers,
        "papers": papers,
    }


def render_reviewers_html(
    result: AssignmentResult,
    taxonomy: Taxonomy | None,
    *,
    title: str = "Reviewer assignment",
    forum: str = DEFAULT_FORUM_URL,
    weak_below: float = DEFAULT_WEAK_BELOW,
) -> str:
    """The page as a string."""
    script = asset("reviewers.js")
    data = page_data(result, taxonomy, forum=forum, weak_below=weak_below)
    n_weak = sum(pair[7] for paper in data["papers"] for pair in paper[4])
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_csp(script))}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_e(title)}</title><style>{asset('reviewers.css')}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted" id="summary">{len(result.papers)} papers, {len(result.reviewers)} '
        f"reviewers, {result.per_paper} per paper; {len(result.pairs)} assignments, total "
        f"affinity {result.total_affinity:.6g}; {len(result.uncovered)} paper(s) left short; "
        f"{n_weak} weak pair(s) (no shared tag or keyword, text similarity below "
        f"{weak_below:g}); {len(result.conflicts)} conflict(s)</p>",
        '<p class="files">'
        f'<a href="{CONFLICTS_FILE}" id="conflicts-link">{CONFLICTS_FILE}</a> '
        f'<a href="{ASSIGNMENTS_FILE}">{ASSIGNMENTS_FILE}</a> '
        f'<a href="{WEAK_PAIRS_FILE}">{WEAK_PAIRS_FILE}</a></p>',
    ]
    if result.uncovered:
        out.append(
            f'<p class="short" id="short">{len(result.uncovered)} paper(s) left short: '
            "they come first under By paper, with why.</p>"
        )
    out += [
        '<nav class="views" aria-label="views">'
        '<button type="button" id="view-papers" aria-pressed="true">By paper</button>'
        '<button type="button" id="view-reviewers" aria-pressed="false">By reviewer</button>'
        "</nav>",
        '<div class="tools"><input type="search" id="q" autocomplete="off" '
        'placeholder="Search: paper id, title, reviewer" aria-label="search">'
        '<label><input type="checkbox" id="weak-only"> weak pairs only</label>'
        '<span class="muted" id="count"></span></div>',
        '<main id="list"></main>',
        '<button type="button" id="more" hidden>Show more</button>',
        '<noscript><p class="short">This page renders the assignment with a script; the '
        "same data is in assignments.csv.</p></noscript>",
        f'<script type="application/json" id="reviewers-data">{script_json(data)}</script>',
        f"<script>{script}</script>",
        "</body></html>\n",
    ]
    return "\n".join(out)


def write_reviewers_html(
    result: AssignmentResult,
    path: Path,
    taxonomy: Taxonomy | None,
    *,
    forum: str = DEFAULT_FORUM_URL,
    weak_below: float = DEFAULT_WEAK_BELOW,
) -> Path:
    """Write reviewers.html atomically; returns its path."""
    page = render_reviewers_html(result, taxonomy, forum=forum, weak_below=weak_below)
    return write_text(make_parent(path), page)
