"""report.md: a Markdown digest of a run, papers grouped under their primary (first) tag.

A primary tag with fewer than MIN_GROUP papers gets no section of its own: its papers go
to one section per taxonomy facet ("Other: Method family"), each line naming its primary
tag, so a run of 57 papers reads as a dozen sections, not forty.

Every user string is escaped (pipeline/mdtext.py): text and table cells, the paper's id in
a code span whose fence is longer than any backticks in it, the forum link's destination.

No control character (ESC, BEL, an OSC or CSI sequence, C1, a bidi override) reaches the
file or the terminal (`--out -`): each text is passed through `terminal_safe` before it is
escaped, and the whole document once more.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pipeline.atomicfile import make_parent, write_text
from pipeline.mdtext import md_code, md_escape, md_url
from pipeline.rundir import Paper, RunReader
from pipeline.stages import stage_names
from pipeline.taxonomy import Taxonomy
from pipeline.text import display_text, terminal_safe
from pipeline.triage import DEFAULT_FORUM_URL, forum_url, sort_papers, tag_label

MARKDOWN_FILE = "report.md"
MIN_GROUP = 3  # papers a primary tag needs for a section of its own


def _md_claim(c: dict[str, Any]) -> str:
    text = md_escape(display_text(str(c.get("statement") or "")))
    bits = [str(c[k]) for k in ("metric", "dataset") if c.get(k)]
    if c.get("value"):
        bits.insert(1 if c.get("metric") else 0, f"{c['value']}{c.get('unit') or ''}")
    return text + (f" ({md_escape(', '.join(bits))})" if bits else "")


def _md_paper(
    p: Paper, taxonomy: Taxonomy | None, section_tag: str | None, forum: str
) -> list[str]:
    name = p.title or p.tldr or f"Untitled paper {p.ref}"
    line = "- "
    if section_tag is None and p.tags:  # a merged section: say which primary tag
        line += f"*{md_escape(tag_label(taxonomy, p.tags[0]))}*: "
    line += f"**{md_escape(display_text(name))}** {md_code(p.ref)}"
    url = forum_url(p, forum)
    if url:
        line += f" [forum]({md_url(url)})"
    if p.tldr and p.title:
        line += f": {md_escape(display_text(p.tldr))}"
    lines = [line]
    primary = p.tags[0] if p.tags else None
    other = [tag_label(taxonomy, t) for t in p.tags if t != primary]
    if other:
        lines.append(f"  - Also: {md_escape(', '.join(other))}")
    if p.unconfirmed_tags:
        names = ", ".join(tag_label(taxonomy, t) for t in p.unconfirmed_tags)
        lines.append(
            f"  - Unconfirmed tags (only an ambiguous word supports them): {md_escape(names)}"
        )
    quant = [c for c in p.claims if c.get("kind") == "quantitative"]
    if quant:
        lines.append("  - Results: " + "; ".join(_md_claim(c) for c in quant))
    for stage in stage_names():
        if stage in p.failed:
            err = p.failed[stage]
            msg = md_escape(err["message"][:160])
            lines.append(
                f"  - *{stage} failed* ({md_escape(err['kind'])}){': ' + msg if msg else ''}"
            )
    return lines


def _facet_of(taxonomy: Taxonomy | None, tag: str) -> tuple[int, str]:
    if taxonomy is not None:
        for n, facet in enumerate(taxonomy.facets):
            if any(t.id == tag for t in facet.tags):
                return n, facet.label
    return 10**6, "Other tags"


def sections(
    papers: Iterable[Paper], taxonomy: Taxonomy | None, *, min_group: int = MIN_GROUP
) -> list[tuple[str, str | None, list[Paper]]]:
    """(heading, primary tag or None for a merged section, papers), biggest sections first."""
    groups: dict[str, list[Paper]] = {}
    for p in papers:
        groups.setdefault(p.tags[0] if p.tags else "", []).append(p)
    own = [t for t in groups if t and len(groups[t]) >= min_group]
    merged: dict[tuple[int, str], list[Paper]] = {}
    for t, members in groups.items():
        if t and t not in own:
            merged.setdefault(_facet_of(taxonomy, t), []).extend(members)
    out: list[tuple[str, str | None, list[Paper]]] = [
        (tag_label(taxonomy, t), t, groups[t]) for t in own
    ]
    for (_, label), members in merged.items():
        out.append((f"Other: {label}", None, members))
    out.sort(key=lambda s: (-len(s[2]), s[1] is None, s[0].lower()))
    if "" in groups:
        out.append(("No tags (tags stage failed or not run)", "", groups[""]))
    return out


def render_markdown(
    papers: Iterable[Paper],
    taxonomy: Taxonomy | None,
    *,
    title: str,
    forum: str = DEFAULT_FORUM_URL,
) -> str:
    """A Markdown digest: papers grouped under their primary tag, small groups by facet."""
    papers = list(papers)
    n_quant = sum(p.has_results for p in papers)
    n_failed = sum(bool(p.failed) for p in papers)
    parts = sections(papers, taxonomy)
    out = [
        f"# {md_escape(title)}",
        "",
        f"{len(papers)} papers, {n_quant} with quantitative results, {n_failed} with a failed "
        "stage. Each paper is listed once, under its primary tag; primary tags with fewer "
        f"than {MIN_GROUP} papers are merged under their facet.",
        "",
        "| Section | Papers |",
        "|---|---:|",
    ]
    for heading, _, members in parts:
        out.append(f"| {md_escape(heading, cell=True)} | {len(members)} |")
    for heading, tag, members in parts:
        out += ["", f"## {md_escape(heading)} ({len(members)})", ""]
        ordered = sort_papers(members, "claims")
        if tag is None:  # a merged section: papers of one primary tag together
            ordered.sort(key=lambda p: tag_label(taxonomy, p.tags[0]).lower())
        for p in ordered:
            out += _md_paper(p, taxonomy, tag, forum)
    return terminal_safe("\n".join(out), keep_newlines=True) + "\n"


def markdown_of(run_dir: Path, taxonomy: Taxonomy | None, *, forum: str = DEFAULT_FORUM_URL) -> str:
    """The Markdown digest of a run folder."""
    reader = RunReader(run_dir)
    return render_markdown(
        reader.papers(), taxonomy, title=f"Digest of {reader.dir.resolve().name}", forum=forum
    )


def write_markdown_report(
    run_dir: Path,
    taxonomy: Taxonomy | None,
    out: Path | None = None,
    *,
    forum: str = DEFAULT_FORUM_URL,
) -> Path:
    """Write RUN_DIR/report.md, the Markdown digest grouped by tag; returns its path."""
    text = markdown_of(run_dir, taxonomy, forum=forum)
    return write_text(make_parent(out or Path(run_dir) / MARKDOWN_FILE), text)
