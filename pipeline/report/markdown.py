"""report.md: a Markdown digest of a run, papers grouped under their primary (first) tag."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pipeline.report.protocol import headline
from pipeline.rundir import Paper, RunReader
from pipeline.stages import stage_names
from pipeline.taxonomy import Taxonomy
from pipeline.text import display_text, normalize_ws
from pipeline.triage import sort_papers, tag_label

MARKDOWN_FILE = "report.md"
_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}()#+!|~])")


def md_escape(text: str) -> str:
    """Inline Markdown text that renders literally: no markup, no HTML, no @mentions."""
    text = normalize_ws(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text).replace("@", "&#64;")


def _md_claim(c: dict[str, Any]) -> str:
    text = md_escape(display_text(str(c.get("statement") or "")))
    bits = [str(c[k]) for k in ("metric", "dataset") if c.get(k)]
    if c.get("value"):
        bits.insert(1 if c.get("metric") else 0, f"{c['value']}{c.get('unit') or ''}")
    return text + (f" ({md_escape(', '.join(bits))})" if bits else "")


def _md_paper(p: Paper, taxonomy: Taxonomy | None, primary: str | None) -> list[str]:
    name = p.title or headline(p) or p.id
    line = f"- **{md_escape(display_text(name))}** `{p.id}`"
    if p.tldr:
        line += f": {md_escape(display_text(p.tldr))}"
    lines = [line]
    other = [tag_label(taxonomy, t) for t in p.tags if t != primary]
    if other:
        lines.append(f"  - Also: {md_escape(', '.join(other))}")
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


def render_markdown(papers: Iterable[Paper], taxonomy: Taxonomy | None, *, title: str) -> str:
    """A Markdown digest: papers grouped under their primary (first) tag, biggest groups first."""
    groups: dict[str, list[Paper]] = {}
    n = n_quant = n_failed = 0
    for p in papers:
        n += 1
        n_quant += p.has_results
        n_failed += bool(p.failed)
        groups.setdefault(p.tags[0] if p.tags else "", []).append(p)
    order = sorted(
        groups,
        key=lambda t: (t == "", -len(groups[t]), tag_label(taxonomy, t).lower() if t else ""),
    )
    out = [
        f"# {md_escape(title)}",
        "",
        f"{n} papers, {n_quant} with quantitative results, {n_failed} with a failed stage. "
        "Each paper is listed once, under its primary tag.",
        "",
        "| Primary tag | Papers |",
        "|---|---:|",
    ]
    for t in order:
        label = tag_label(taxonomy, t) if t else "No tags"
        out.append(f"| {md_escape(label)} | {len(groups[t])} |")
    for t in order:
        label = tag_label(taxonomy, t) if t else "No tags (tags stage failed or not run)"
        out += ["", f"## {md_escape(label)} ({len(groups[t])})", ""]
        for p in sort_papers(groups[t], "claims"):
            out += _md_paper(p, taxonomy, t or None)
    return "\n".join(out) + "\n"


def write_markdown_report(
    run_dir: Path, taxonomy: Taxonomy | None, out: Path | None = None
) -> Path:
    """Write RUN_DIR/report.md, the Markdown digest grouped by tag; returns its path."""
    reader = RunReader(run_dir)
    text = render_markdown(
        reader.papers(), taxonomy, title=f"Digest of {reader.dir.resolve().name}"
    )
    path = out or reader.dir / MARKDOWN_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
