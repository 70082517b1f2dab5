"""reviewers.html: the assignment per reviewer, one self-contained static page (no script).

For each reviewer: their load against their limit and every paper assigned to them, with
the affinity and its reason (shared tags, most similar past paper, matched keywords).
Above them: the papers left short (with why) and the zero-affinity assignments by paper.
Every string is HTML-escaped; the Content-Security-Policy allows no script and no network.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.atomicfile import make_parent, write_text
from pipeline.taxonomy import Taxonomy
from pipeline.triage import DEFAULT_FORUM_URL, forum_url, lead_text, tag_label

if TYPE_CHECKING:
    from pipeline.assign import AssignmentResult

REVIEWERS_FILE = "reviewers.html"
_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
_CSS = """
:root { --ink:#1d2330; --muted:#5f6b7a; --line:#e3e7ed; --bg:#f5f6f8; --card:#fff;
  --accent:#2456c7; --bad:#b42318; --badbg:#fef3f2; }
@media (prefers-color-scheme: dark) { :root { --ink:#e6e9ef; --muted:#9aa5b4; --line:#2c3442;
  --bg:#12161d; --card:#1a202a; --accent:#8fb0ff; --bad:#ff9b8f; --badbg:#3a1d1b; } }
* { box-sizing:border-box; }
body { margin:0; padding:16px 24px; font:15px/1.5 system-ui,sans-serif; color:var(--ink);
  background:var(--bg); max-width:1200px; }
h1 { font-size:20px; margin:0 0 4px; } h2 { font-size:16px; margin:0 0 6px; }
.muted { color:var(--muted); font-size:13px; }
section { background:var(--card); border:1px solid var(--line); border-radius:10px;
  padding:12px 16px; margin:12px 0; }
table { border-collapse:collapse; width:100%; font-size:14px; }
td, th { text-align:left; vertical-align:top; padding:4px 8px; border-top:1px solid var(--line); }
th { font-size:12px; color:var(--muted); font-weight:600; }
td.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
a { color:var(--accent); }
.short { background:var(--badbg); color:var(--bad); }
.zero { color:var(--bad); }
.index { columns:3 260px; font-size:13px; }
.index a { text-decoration:none; }
code { font-size:12px; }
@media (max-width:700px) { body { padding:8px; } td, th { padding:3px 4px; } }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _paper_cell(result: AssignmentResult, paper_id: str, forum: str) -> str:
    paper = result.papers[paper_id]
    url = forum_url(paper, forum)
    ref = (
        f'<a href="{_e(url)}" rel="noopener noreferrer">{_e(paper.ref)}</a>'
        if url
        else _e(paper.ref)
    )
    return f"<td><code>{ref}</code></td><td>{_e(lead_text(paper))}</td>"


def render_reviewers_html(
    result: AssignmentResult,
    taxonomy: Taxonomy | None,
    *,
    title: str = "Reviewer assignment",
    forum: str = DEFAULT_FORUM_URL,
) -> str:
    """The per-reviewer page as a string."""
    label = lambda t: tag_label(taxonomy, t)  # noqa: E731
    loads = result.loads()
    by_reviewer: dict[str, list] = {r: [] for r in result.reviewers}
    for p, r, m in result.pairs:
        by_reviewer[r].append((p, m))
    zero = result.zero_affinity()
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{len(result.papers)} papers, {len(result.reviewers)} reviewers, '
        f"{result.per_paper} per paper; {len(result.pairs)} assignments, total affinity "
        f"{result.total_affinity:.6g}; {len(result.uncovered)} paper(s) left short; "
        f"{len(result.conflicts)} conflict(s) (conflicts.csv)</p>",
    ]
    if result.uncovered:
        out.append('<section class="short" id="short"><h2>Papers left short</h2><table>')
        out.append("<tr><th>paper</th><th>title</th><th>why</th></tr>")
        for u in result.uncovered:
            out.append(f"<tr>{_paper_cell(result, u.paper_id, forum)}<td>{_e(u.reason)}</td></tr>")
        out.append("</table></section>")
    if zero:
        out.append('<section id="zero"><h2>Zero-affinity assignments</h2>')
        out.append(
            '<p class="muted">Reviewers given a paper with no matching expertise.</p><table>'
        )
        out.append("<tr><th>paper</th><th>title</th><th>reviewers</th></tr>")
        for p, rs in zero.items():
            names = ", ".join(result.reviewers[r].name or r for r in rs)
            out.append(f"<tr>{_paper_cell(result, p, forum)}<td>{_e(names)}</td></tr>")
        out.append("</table></section>")
    order = sorted(result.reviewers, key=lambda r: ((result.reviewers[r].name or r).lower(), r))
    anchors = {r: f"r{n}" for n, r in enumerate(order)}
    out.append('<section id="index"><h2>Reviewers</h2><div class="index">')
    for r in order:
        limit = result.max_loads.get(r)
        cap = f" / {limit}" if limit is not None else ""
        out.append(
            f'<div><a href="#{anchors[r]}">{_e(result.reviewers[r].name or r)}</a> '
            f'<span class="muted">{loads[r]}{cap}</span></div>'
        )
    out.append("</div></section>")
    for r in order:
        reviewer = result.reviewers[r]
        limit = result.max_loads.get(r)
        cap = f" of at most {limit}" if limit is not None else ""
        out.append(f'<section class="reviewer" id="{anchors[r]}" data-reviewer="{_e(r)}">')
        out.append(
            f"<h2>{_e(reviewer.name or r)} <code>{_e(r)}</code></h2>"
            f'<p class="muted load">load {loads[r]}{cap}; '
            f"{len(reviewer.papers)} past paper(s); tags: "
            f"{_e(', '.join(label(t) for t in reviewer.tags) or '-')}</p>"
        )
        rows = sorted(by_reviewer[r], key=lambda x: -x[1].affinity)
        if not rows:
            out.append('<p class="muted">No papers assigned.</p></section>')
            continue
        out.append("<table><tr><th>paper</th><th>title</th><th>affinity</th><th>why</th></tr>")
        for p, m in rows:
            cls = ' class="zero"' if m.affinity <= 0 else ""
            out.append(
                f"<tr{cls}>{_paper_cell(result, p, forum)}"
                f'<td class="num">{m.affinity:g}</td><td>{_e(m.reason(label))}</td></tr>'
            )
        out.append("</table></section>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write_reviewers_html(
    result: AssignmentResult,
    path: Path,
    taxonomy: Taxonomy | None,
    *,
    forum: str = DEFAULT_FORUM_URL,
) -> Path:
    """Write reviewers.html atomically; returns its path."""
    return write_text(make_parent(path), render_reviewers_html(result, taxonomy, forum=forum))
