"""Reports of a run folder: a self-contained report.html and a Markdown digest grouped by tag.

report.html embeds the papers as one JSON blob (`<`, `>`, `&`, U+2028/9 written as `\\uXXXX`,
so no string can close the `<script>`) and renders them client-side with a small vanilla
script that builds the DOM with `textContent` only, never `innerHTML`. A Content-Security-
Policy allows exactly that one script (by hash) and no network at all. The page shows 50
cards at a time, so it stays fast at 10k papers; filters, sort and page live in the URL hash.

Evidence spans index the original abstract; the abstract is cut into pieces at span
boundaries first and each piece is normalized for display (`display_text`) afterwards.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pipeline.taxonomy import Taxonomy
from pipeline.text import display_text, normalize_ws, split_sentences
from pipeline.triage import STAGES, Paper, iter_papers, sort_papers, tag_label

HTML_FILE = "report.html"
MARKDOWN_FILE = "report.md"

_SCRIPT_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def script_json(obj: Any) -> str:
    """Compact JSON that is safe inside a <script> element (no `<`, `>` or `&` characters)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    # A chain of str.replace is ~40x faster than str.translate on long texts.
    for char, escaped in _SCRIPT_ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


def valid_span(abstract: str, span: Any) -> tuple[int, int] | None:
    """The (start, end) of a claim's span when it lies inside the abstract, else None."""
    if not isinstance(span, list | tuple) or len(span) != 2:
        return None
    start, end = span
    if not (isinstance(start, int) and isinstance(end, int)):
        return None
    return (start, end) if 0 <= start < end <= len(abstract) else None


def highlight_segments(abstract: str, claims: Iterable[dict[str, Any]]) -> list[list[Any]]:
    """The abstract cut at evidence-span boundaries: [text, claim_no, ...] pieces (1-based)."""
    spans = [(valid_span(abstract, c.get("span")), n) for n, c in enumerate(claims, 1)]
    spans = [(s, n) for s, n in spans if s is not None]
    cuts = sorted({0, len(abstract), *(x for s, _ in spans for x in s)})
    out: list[list[Any]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        piece = display_text(abstract[a:b])
        if not piece:
            continue
        covering = [n for (s, e), n in spans if s <= a and b <= e]
        if out and out[-1][1:] == covering:
            out[-1][0] += piece
        else:
            out.append([piece, *covering])
    return out


def _headline(paper: Paper) -> str | None:
    if paper.title:
        return None
    sentences = split_sentences(display_text(paper.abstract))
    first = sentences[0] if sentences else ""
    return first if len(first) <= 160 else first[:159].rstrip() + "\u2026"


def _opt(value: Any) -> str | None:
    return display_text(normalize_ws(str(value))) if value not in (None, "") else None


def paper_json(paper: Paper) -> dict[str, Any]:
    """The compact per-paper object the report's script renders."""
    claims = []
    for c in paper.claims:
        row = [
            _opt(c.get("statement")) or "",
            "q" if c.get("kind") == "quantitative" else "l",
            _opt(c.get("metric")),
            _opt(c.get("value")),
            _opt(c.get("unit")),
            _opt(c.get("dataset")),
            _opt(c.get("comparison")),
        ]
        if valid_span(paper.abstract, c.get("span")) is None:
            row.append(_opt(c.get("evidence")))  # shown under the claim instead of highlighted
        claims.append(row)
    out: dict[str, Any] = {
        "id": paper.id,
        "t": _opt(paper.title),
        "h": _headline(paper),
        "s": _opt(paper.tldr),
        "g": list(paper.tags),
        "k": [display_text(k) for k in paper.keywords],
        "c": claims,
        "a": highlight_segments(paper.abstract, paper.claims),
        "x": paper.status,
        "f": {k: [v["kind"], v["message"]] for k, v in paper.failed.items()},
        "src": [f"{f}:{p}" if p is not None else f for f, p in paper.sources],
    }
    return out


def _tag_table(taxonomy: Taxonomy | None, seen: Counter[str]) -> tuple[dict, list]:
    tags: dict[str, list[str]] = {}
    facets: list[list[str]] = []
    if taxonomy is not None:
        for facet in taxonomy.facets:
            facets.append([facet.id, facet.label])
            for tag in facet.tags:
                tags[tag.id] = [tag.label, facet.id]
    unknown = [t for t in seen if t not in tags]
    if unknown:
        facets.append(["other", "Other tags" if taxonomy is not None else "Tags"])
        for t in sorted(unknown):
            tags[t] = [t, "other"]
    return tags, facets


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def write_html(
    fh: IO[str], papers: Iterable[Paper], taxonomy: Taxonomy | None, *, title: str, info: str = ""
) -> int:
    """Write the whole report page for `papers` to a text stream; returns the paper count."""
    head, tail = _PAGE.split("<!--DATA-->")
    slots = {"CSP": html.escape(_csp(_JS)), "TITLE": html.escape(title), "STYLE": _CSS}
    fh.write(re.sub(r"\{\{(CSP|TITLE|STYLE)\}\}", lambda m: slots[m.group(1)], head))
    fh.write('<script type="application/json" id="digest-data">{"papers":[')
    seen: Counter[str] = Counter()
    n = 0
    for paper in papers:
        seen.update(paper.tags)
        fh.write(("," if n else "") + script_json(paper_json(paper)))
        n += 1
    tags, facets = _tag_table(taxonomy, seen)
    meta = {
        "title": title,
        "info": info,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "stages": list(STAGES),
        "tags": tags,
        "facets": facets,
    }
    fh.write("]," + script_json(meta)[1:] + "</script>\n")
    fh.write(f"<script>{_JS}</script>")
    fh.write(tail)
    return n


def render_html(
    papers: Iterable[Paper], taxonomy: Taxonomy | None, *, title: str = "digest"
) -> str:
    """The report page as a string (tests, small runs)."""
    buf = io.StringIO()
    write_html(buf, papers, taxonomy, title=title)
    return buf.getvalue()


def _atomic_write(path: Path, writer: Callable[[IO[str]], object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            writer(fh)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_html_report(run_dir: Path, taxonomy: Taxonomy | None, out: Path | None = None) -> Path:
    """Write RUN_DIR/report.html (streams summaries.jsonl); returns its path."""
    run_dir = Path(run_dir)
    title = f"Digest of {run_dir.resolve().name}"
    info = run_info(run_dir)
    return _atomic_write(
        out or run_dir / HTML_FILE,
        lambda fh: write_html(fh, iter_papers(run_dir), taxonomy, title=title, info=info),
    )


def run_info(run_dir: Path) -> str:
    """'backend model, run started ...' from manifest.json, or '' when there is none."""
    try:
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(manifest, dict):
        return ""
    parts = [str(manifest[k]) for k in ("backend", "model") if manifest.get(k)]
    started = str(manifest.get("started_at") or "")[:16].replace("T", " ")
    return " ".join(parts) + (f", run started {started} UTC" if started else "")


# ---------------------------------------------------------------- Markdown

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
    name = p.title or _headline(p) or p.id
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
    for stage in STAGES:
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
    run_dir = Path(run_dir)
    text = render_markdown(
        iter_papers(run_dir), taxonomy, title=f"Digest of {run_dir.resolve().name}"
    )
    return _atomic_write(out or run_dir / MARKDOWN_FILE, lambda fh: fh.write(text))


# ---------------------------------------------------------------- page assets (inline, no network)

_PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{TITLE}}</title>
<style>{{STYLE}}</style>
</head>
<body>
<header class="top">
  <h1>{{TITLE}}</h1>
  <p id="summary" class="summary"></p>
</header>
<div class="layout">
  <aside class="side">
    <input id="q" type="search" placeholder="Search papers  (press /)" autocomplete="off" aria-label="Search">
    <label class="opt"><input id="quant" type="checkbox"> has quantitative results</label>
    <label class="opt"><input id="failed" type="checkbox"> has a failed stage</label>
    <label class="opt"><input id="any" type="checkbox"> match <em>any</em> selected tag (default: all)</label>
    <div id="facets"></div>
  </aside>
  <main>
    <section id="chart" class="chart"></section>
    <div class="bar-top">
      <span id="count" class="count"></span>
      <span id="active" class="active"></span>
      <button id="clear" type="button" class="clear" hidden>clear filters</button>
      <label class="sortl">sort by
        <select id="sort">
          <option value="id">id</option>
          <option value="claims">number of claims</option>
          <option value="tag">tag</option>
          <option value="title">title</option>
        </select>
      </label>
    </div>
    <nav id="pager-top" class="pager"></nav>
    <div id="papers"></div>
    <nav id="pager-bottom" class="pager"></nav>
  </main>
</div>
<noscript><p class="empty">This report needs JavaScript to list the papers (no network is used).</p></noscript>
<!--DATA-->
</body>
</html>
"""

_CSS = r""":root { --ink:#1d2330; --muted:#5f6b7a; --line:#e3e7ed; --bg:#f5f6f8; --card:#fff; --accent:#2456c7; --bad:#b42318; --badbg:#fef3f2; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; color:var(--ink); background:var(--bg); }
.top { padding:14px 24px 10px; background:#fff; border-bottom:1px solid var(--line); }
.top h1 { margin:0; font-size:20px; }
.summary { margin:2px 0 0; color:var(--muted); font-size:13px; }
.layout { display:grid; grid-template-columns:280px minmax(0,1fr); gap:20px; padding:16px 24px; max-width:1400px; }
.side { position:sticky; top:12px; align-self:start; max-height:calc(100vh - 24px); overflow:auto; padding-right:4px; }
#q { width:100%; padding:8px 10px; border:1px solid #c9d1db; border-radius:8px; font:inherit; margin-bottom:8px; }
.opt { display:block; font-size:13px; color:var(--muted); margin:3px 0; cursor:pointer; }
.facet h3 { font-size:12px; text-transform:uppercase; letter-spacing:.05em; color:var(--muted); margin:16px 0 4px; }
.ft { display:flex; align-items:center; gap:6px; font-size:13px; padding:2px 4px; border-radius:6px; cursor:pointer; }
.ft:hover { background:#eaeef4; }
.ft.zero { opacity:.45; }
.ft .fl { flex:1; }
.ft .n { color:var(--muted); font-variant-numeric:tabular-nums; }
.more { border:0; background:none; color:var(--accent); font:inherit; font-size:12px; cursor:pointer; padding:2px 4px; }
.dot { width:9px; height:9px; border-radius:50%; flex:none; }
.chart { background:#fff; border:1px solid var(--line); border-radius:10px; padding:10px 14px; margin-bottom:12px; }
.chart h3 { margin:0 0 6px; font-size:13px; color:var(--muted); font-weight:600; }
.bar { display:grid; grid-template-columns:210px 1fr 56px; align-items:center; gap:8px; width:100%; border:0; background:none; padding:1px 2px; font:inherit; font-size:13px; text-align:left; cursor:pointer; border-radius:4px; color:inherit; }
.bar:hover, .bar.on { background:#eef3fd; }
.bar .bl { overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
.bar .track { position:relative; height:12px; }
.bar .all, .bar .now { position:absolute; left:0; top:0; bottom:0; border-radius:3px; }
.bar .all { background:#e4e8ee; }
.bar .bn { color:var(--muted); font-variant-numeric:tabular-nums; text-align:right; }
.bar-top { display:flex; flex-wrap:wrap; align-items:center; gap:8px; margin:4px 0 8px; }
.count { font-weight:600; }
.active { display:flex; flex-wrap:wrap; gap:4px; align-items:center; }
.mode { font-size:12px; color:var(--muted); margin-left:4px; }
.clear { border:1px solid #c9d1db; background:#fff; border-radius:6px; font:inherit; font-size:12px; padding:2px 8px; cursor:pointer; }
.sortl { margin-left:auto; font-size:13px; color:var(--muted); }
.sortl select { font:inherit; padding:2px 4px; }
.pager { display:flex; gap:10px; align-items:center; justify-content:flex-end; margin:6px 0; font-size:13px; }
.pg { border:1px solid #c9d1db; background:#fff; border-radius:6px; padding:3px 10px; font:inherit; cursor:pointer; }
.pg:disabled { opacity:.4; cursor:default; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 16px; margin-bottom:10px; }
.card h2 { font-size:16px; margin:0 0 2px; line-height:1.35; }
.card h2.derived { font-weight:600; color:#2b3240; }
.meta { display:flex; flex-wrap:wrap; gap:12px; font-size:12px; color:var(--muted); }
.meta code { font-size:12px; }
.nc { font-weight:600; color:#3b4658; }
.tldr { margin:8px 0 6px; }
.tldr b { color:var(--accent); font-size:12px; letter-spacing:.04em; }
.chips { display:flex; flex-wrap:wrap; gap:5px; margin:6px 0; }
.chip { border:1px solid transparent; border-radius:999px; padding:1px 9px; font:inherit; font-size:12px; cursor:pointer; }
.chip.on { outline:2px solid var(--ink); outline-offset:1px; }
.kw { border:1px dashed #c2cad5; border-radius:999px; padding:0 8px; font-size:12px; color:var(--muted); }
.f0 { background:#dbe7ff; color:#1b3f8f; } .now.f0, .dot.f0 { background:#5b8def; }
.f1 { background:#dcf3e6; color:#17613a; } .now.f1, .dot.f1 { background:#3fae72; }
.f2 { background:#fdebd3; color:#8a4b08; } .now.f2, .dot.f2 { background:#e69838; }
.f3 { background:#eee1fb; color:#5b2a8c; } .now.f3, .dot.f3 { background:#9b6bd6; }
.f4 { background:#d7f2f5; color:#0f5f69; } .now.f4, .dot.f4 { background:#2fa7b5; }
.f5 { background:#fbe0ea; color:#8a1f4a; } .now.f5, .dot.f5 { background:#d9638f; }
.f6 { background:#eef0d6; color:#5b5f12; } .now.f6, .dot.f6 { background:#a3a935; }
.f7 { background:#e6e9ee; color:#3b4350; } .now.f7, .dot.f7 { background:#8592a3; }
.claims { margin:8px 0 4px; padding-left:22px; font-size:14px; }
.claim { margin:3px 0; cursor:pointer; }
.claim:hover .stmt { text-decoration:underline dotted; }
.kind { font-size:10px; text-transform:uppercase; letter-spacing:.05em; border-radius:4px; padding:0 5px; margin-right:6px; vertical-align:1px; }
.kind.q { background:#e3f1e8; color:#17613a; } .kind.l { background:#eef0f3; color:#5f6b7a; }
.kv { display:inline-flex; flex-wrap:wrap; gap:8px; margin-left:8px; font-size:12px; color:#3b4658; }
.kv i { color:var(--muted); font-style:normal; }
.ev { display:block; font-size:12px; color:var(--muted); }
.failed { background:var(--badbg); color:var(--bad); border:1px solid #fecdca; border-radius:6px; padding:4px 8px; margin:6px 0; font-size:13px; display:flex; gap:8px; flex-wrap:wrap; }
.failed .kindtag { font-family:ui-monospace,monospace; font-size:12px; }
.failed .msg { color:#7a271a; }
.notrun { color:var(--muted); font-size:12px; font-style:italic; margin:4px 0; }
details.abs summary { cursor:pointer; color:var(--accent); font-size:13px; margin-top:4px; }
details.abs p { margin:6px 0 0; font-size:14px; color:#2b3240; white-space:pre-wrap; }
mark { background:#fff1a8; border-radius:2px; padding:0 1px; }
mark.hot { background:#ffd84d; box-shadow:0 0 0 2px #ffd84d; }
sup { color:#8a6d00; font-size:10px; margin-left:1px; }
.empty { color:var(--muted); padding:24px; text-align:center; }
@media (max-width: 820px) { .layout { grid-template-columns:1fr; padding:10px; } .side { position:static; max-height:none; } .bar { grid-template-columns:130px 1fr 50px; } }
"""

_JS = r"""(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("digest-data").textContent);
  var P = D.papers, TAGS = D.tags, PAGE = 50, FACET_TOP = 8, OPEN = {};
  var FACETS = D.facets.map(function (f) { return f[0]; });
  var S = { tags: [], any: false, q: "", quant: false, failed: false, sort: "id", page: 1 };
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function label(t) { return TAGS[t] ? TAGS[t][0] : t; }
  function facetNo(t) { var i = TAGS[t] ? FACETS.indexOf(TAGS[t][1]) : -1; return i < 0 ? 7 : i % 8; }

  P.forEach(function (p) {
    p.nq = p.c.filter(function (c) { return c[1] === "q"; }).length;
    p.bad = Object.keys(p.f).length > 0;
    p.key = p.g.length ? label(p.g[0]).toLowerCase() : "\uffff";
    p.hay = [p.id, p.t || "", p.s || "", p.a.map(function (s) { return s[0]; }).join(""),
      p.k.join(" "), p.g.map(label).join(" "), p.g.join(" "),
      p.c.map(function (c) { return c.slice(0, 7).join(" "); }).join(" ")].join(" ").toLowerCase();
  });
  var total = {};
  P.forEach(function (p) { p.g.forEach(function (t) { total[t] = (total[t] || 0) + 1; }); });

  // ---- URL state (hash, so it works from file://)
  function readHash() {
    var q = new URLSearchParams(location.hash.replace(/^#/, ""));
    S.tags = q.getAll("tag").filter(function (t, i, a) { return a.indexOf(t) === i; });
    S.any = q.get("mode") === "any";
    S.q = q.get("q") || "";
    S.quant = q.get("quant") === "1";
    S.failed = q.get("failed") === "1";
    S.sort = ["id", "claims", "tag", "title"].indexOf(q.get("sort")) >= 0 ? q.get("sort") : "id";
    S.page = Math.max(1, parseInt(q.get("page"), 10) || 1);
  }
  var lastHash = null;
  function writeHash() {
    var q = new URLSearchParams();
    S.tags.forEach(function (t) { q.append("tag", t); });
    if (S.any) q.set("mode", "any");
    if (S.q) q.set("q", S.q);
    if (S.quant) q.set("quant", "1");
    if (S.failed) q.set("failed", "1");
    if (S.sort !== "id") q.set("sort", S.sort);
    if (S.page > 1) q.set("page", String(S.page));
    var h = q.toString();
    lastHash = h;
    try { history.replaceState(null, "", h ? "#" + h : location.pathname + location.search); }
    catch (e) { location.hash = h; }
  }
  window.addEventListener("hashchange", function () {
    if (location.hash.replace(/^#/, "") === lastHash) return;
    readHash(); syncControls(); render(false);
  });

  // ---- filtering and sorting
  function matches(p, terms) {
    if (S.tags.length) {
      var hits = 0;
      for (var i = 0; i < S.tags.length; i++) if (p.g.indexOf(S.tags[i]) >= 0) hits++;
      if (S.any ? hits === 0 : hits < S.tags.length) return false;
    }
    if (S.quant && !p.nq) return false;
    if (S.failed && !p.bad) return false;
    for (var j = 0; j < terms.length; j++) if (p.hay.indexOf(terms[j]) < 0) return false;
    return true;
  }
  var CMP = {
    id: function (a, b) { return a.id < b.id ? -1 : a.id > b.id ? 1 : 0; },
    claims: function (a, b) { return b.c.length - a.c.length || b.nq - a.nq || CMP.id(a, b); },
    tag: function (a, b) { return a.key < b.key ? -1 : a.key > b.key ? 1 : CMP.id(a, b); },
    title: function (a, b) {
      var x = (a.t || a.h || "").toLowerCase(), y = (b.t || b.h || "").toLowerCase();
      return x < y ? -1 : x > y ? 1 : CMP.id(a, b);
    }
  };

  // ---- rendering
  function chip(t, on) {
    var b = el("button", "chip f" + facetNo(t) + (on ? " on" : ""), label(t));
    b.type = "button"; b.dataset.tag = t; b.title = on ? "Remove this tag filter" : "Filter by this tag";
    return b;
  }
  function claimItem(c, n) {
    var li = el("li", "claim"); li.dataset.c = String(n);
    li.appendChild(el("span", "kind " + (c[1] === "q" ? "q" : "l"), c[1] === "q" ? "quantitative" : "qualitative"));
    li.appendChild(el("span", "stmt", c[0]));
    var kv = [["metric", c[2]], ["value", c[3] ? c[3] + (c[4] ? (/^(%|x|\u00d7)$/.test(c[4]) ? "" : " ") + c[4] : "") : null],
      ["dataset", c[5]], ["vs", c[6]]];
    var box = el("span", "kv");
    kv.forEach(function (x) {
      if (!x[1]) return;
      var s = el("span", "k-" + x[0]); s.appendChild(el("i", null, x[0])); s.appendChild(document.createTextNode(" " + x[1]));
      box.appendChild(s);
    });
    if (box.childNodes.length) li.appendChild(box);
    if (c.length > 7 && c[7]) li.appendChild(el("q", "ev", c[7]));
    return li;
  }
  function stageNote(p, st) {
    if (p.f[st]) {
      var d = el("div", "failed");
      d.appendChild(el("b", null, st + " failed"));
      d.appendChild(el("span", "kindtag", p.f[st][0]));
      if (p.f[st][1]) d.appendChild(el("span", "msg", p.f[st][1]));
      return d;
    }
    if (!p.x[st]) return el("div", "notrun", st + ": not run");
    return null;
  }
  function card(p) {
    var a = el("article", "card"); a.dataset.id = p.id;
    var h = el("h2", p.t ? "title" : "title derived", p.t || p.h || p.id);
    if (!p.t) h.title = "No title in the input: first sentence of the abstract";
    a.appendChild(h);
    var meta = el("div", "meta");
    meta.appendChild(el("code", null, p.id));
    if (p.src.length) meta.appendChild(el("span", null, p.src.join(", ")));
    if (p.x.claims === "ok") meta.appendChild(el("span", "nc", p.c.length + (p.c.length === 1 ? " claim" : " claims") + (p.nq ? " \u00b7 " + p.nq + " quantitative" : "")));
    a.appendChild(meta);
    if (p.s) { var t = el("p", "tldr"); t.appendChild(el("b", null, "TL;DR ")); t.appendChild(document.createTextNode(p.s)); a.appendChild(t); }
    var chips = el("div", "chips");
    p.g.forEach(function (t) { chips.appendChild(chip(t, S.tags.indexOf(t) >= 0)); });
    p.k.forEach(function (k) { chips.appendChild(el("span", "kw", k)); });
    if (chips.childNodes.length) a.appendChild(chips);
    D.stages.forEach(function (st) { var n = stageNote(p, st); if (n) a.appendChild(n); });
    if (p.c.length) {
      var ol = el("ol", "claims");
      p.c.forEach(function (c, i) { ol.appendChild(claimItem(c, i + 1)); });
      a.appendChild(ol);
    }
    var det = el("details", "abs");
    det.appendChild(el("summary", null, "Abstract"));
    var body = el("p");
    p.a.forEach(function (s) {
      if (s.length === 1) { body.appendChild(document.createTextNode(s[0])); return; }
      var m = el("mark", null, s[0]); m.dataset.c = s.slice(1).join(" ");
      m.title = s.slice(1).map(function (n) { return "claim " + n + ": " + p.c[n - 1][0]; }).join("\n");
      body.appendChild(m);
      var sup = el("sup", null, s.slice(1).join(",")); body.appendChild(sup);
    });
    det.appendChild(body);
    a.appendChild(det);
    return a;
  }

  function pager(box, pages) {
    box.textContent = "";
    if (pages <= 1) return;
    var prev = el("button", "pg", "\u2039 Prev"); prev.type = "button"; prev.dataset.page = String(S.page - 1); prev.disabled = S.page <= 1;
    var next = el("button", "pg", "Next \u203a"); next.type = "button"; next.dataset.page = String(S.page + 1); next.disabled = S.page >= pages;
    box.appendChild(prev); box.appendChild(el("span", "pgno", "page " + S.page + " of " + pages)); box.appendChild(next);
  }

  function facets(rows) {
    var cur = {};
    rows.forEach(function (p) { p.g.forEach(function (t) { cur[t] = (cur[t] || 0) + 1; }); });
    var box = $("facets"); box.textContent = "";
    D.facets.forEach(function (f) {
      var ids = Object.keys(TAGS).filter(function (t) { return TAGS[t][1] === f[0] && total[t]; });
      if (!ids.length) return;
      ids.sort(function (a, b) {
        return (cur[b] || 0) - (cur[a] || 0) || total[b] - total[a] || (label(a) < label(b) ? -1 : 1);
      });
      var sec = el("section", "facet"); sec.appendChild(el("h3", null, f[1]));
      var open = OPEN[f[0]] || ids.length <= FACET_TOP + 2;
      ids.forEach(function (t, i) {
        if (!open && i >= FACET_TOP && S.tags.indexOf(t) < 0) return;
        var lab = el("label", "ft" + (cur[t] ? "" : " zero"));
        var cb = el("input"); cb.type = "checkbox"; cb.dataset.tag = t; cb.checked = S.tags.indexOf(t) >= 0;
        lab.appendChild(cb); lab.appendChild(el("span", "dot f" + facetNo(t)));
        lab.appendChild(el("span", "fl", label(t)));
        var n = el("span", "n", cur[t] || 0); n.title = (cur[t] || 0) + " shown of " + total[t] + " in the run";
        lab.appendChild(n);
        sec.appendChild(lab);
      });
      if (ids.length > FACET_TOP + 2) {
        var more = el("button", "more", open ? "show fewer" : "+ " + (ids.length - FACET_TOP) + " more");
        more.type = "button"; more.dataset.facet = f[0];
        sec.appendChild(more);
      }
      box.appendChild(sec);
    });
    return cur;
  }

  function chart(cur) {
    var ids = Object.keys(total).sort(function (a, b) { return total[b] - total[a] || (label(a) < label(b) ? -1 : 1); }).slice(0, 12);
    var box = $("chart"); box.textContent = "";
    if (!ids.length) { box.hidden = true; return; }
    box.hidden = false;
    var max = total[ids[0]];
    box.appendChild(el("h3", null, "Most frequent tags"));
    ids.forEach(function (t) {
      var row = el("button", "bar" + (S.tags.indexOf(t) >= 0 ? " on" : "")); row.type = "button"; row.dataset.tag = t;
      row.title = (cur[t] || 0) + " of " + total[t] + " papers with this tag match the current filters";
      row.appendChild(el("span", "bl", label(t)));
      var track = el("span", "track");
      var all = el("span", "all"); all.style.width = (100 * total[t] / max) + "%";
      var now = el("span", "now f" + facetNo(t)); now.style.width = (100 * (cur[t] || 0) / max) + "%";
      track.appendChild(all); track.appendChild(now); row.appendChild(track);
      row.appendChild(el("span", "bn", (cur[t] || 0) === total[t] ? String(total[t]) : (cur[t] || 0) + "/" + total[t]));
      box.appendChild(row);
    });
  }

  function render(scroll) {
    var terms = S.q.toLowerCase().split(/\s+/).filter(Boolean);
    var rows = P.filter(function (p) { return matches(p, terms); }).sort(CMP[S.sort]);
    var pages = Math.max(1, Math.ceil(rows.length / PAGE));
    if (S.page > pages) S.page = pages;
    var cur = facets(rows);
    chart(cur);
    var shown = rows.slice((S.page - 1) * PAGE, S.page * PAGE);
    $("count").textContent = rows.length === P.length
      ? "All " + P.length + " papers"
      : rows.length + " of " + P.length + " papers match";
    var act = $("active"); act.textContent = "";
    S.tags.forEach(function (t) { act.appendChild(chip(t, true)); });
    if (S.tags.length > 1) act.appendChild(el("span", "mode", S.any ? "any of these tags" : "all of these tags"));
    $("clear").hidden = !(S.tags.length || S.q || S.quant || S.failed);
    var list = $("papers"); list.textContent = "";
    if (!rows.length) list.appendChild(el("p", "empty", "No paper matches these filters."));
    shown.forEach(function (p) { list.appendChild(card(p)); });
    pager($("pager-top"), pages); pager($("pager-bottom"), pages);
    writeHash();
    if (scroll) window.scrollTo(0, 0);
  }

  function syncControls() {
    $("q").value = S.q; $("quant").checked = S.quant; $("failed").checked = S.failed;
    $("sort").value = S.sort; $("any").checked = S.any;
  }
  function toggleTag(t) {
    var i = S.tags.indexOf(t);
    if (i >= 0) S.tags.splice(i, 1); else S.tags.push(t);
    S.page = 1; render(false);
  }

  // ---- summary and events
  var nq = P.filter(function (p) { return p.nq; }).length, nb = P.filter(function (p) { return p.bad; }).length;
  $("summary").textContent = P.length + " papers \u00b7 " + nq + " with quantitative results \u00b7 " +
    nb + " with a failed stage \u00b7 " + (D.info ? D.info + " \u00b7 " : "") + "report generated " + D.generated;

  document.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-tag],[data-page],[data-facet],li.claim") : null;
    if (!t) return;
    if (t.dataset.facet) { OPEN[t.dataset.facet] = !OPEN[t.dataset.facet]; render(false); return; }
    if (t.matches("input[data-tag]")) return;
    if (t.dataset.tag) { toggleTag(t.dataset.tag); return; }
    if (t.dataset.page) { S.page = parseInt(t.dataset.page, 10); render(true); return; }
    if (t.matches("li.claim")) {
      var c = t.closest(".card"), n = t.dataset.c;
      c.querySelector("details.abs").open = true;
      c.querySelectorAll("mark").forEach(function (m) {
        m.classList.toggle("hot", m.dataset.c.split(" ").indexOf(n) >= 0);
      });
    }
  });
  $("facets").addEventListener("change", function (ev) { if (ev.target.dataset.tag) toggleTag(ev.target.dataset.tag); });
  var timer = null;
  $("q").addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { S.q = $("q").value.trim(); S.page = 1; render(false); }, 120);
  });
  $("quant").addEventListener("change", function () { S.quant = this.checked; S.page = 1; render(false); });
  $("failed").addEventListener("change", function () { S.failed = this.checked; S.page = 1; render(false); });
  $("any").addEventListener("change", function () { S.any = this.checked; S.page = 1; render(false); });
  $("sort").addEventListener("change", function () { S.sort = this.value; S.page = 1; render(false); });
  $("clear").addEventListener("click", function () {
    S.tags = []; S.q = ""; S.quant = false; S.failed = false; S.page = 1; syncControls(); render(false);
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "/" && document.activeElement !== $("q")) { ev.preventDefault(); $("q").focus(); }
  });

  readHash(); syncControls(); render(false);
  document.body.dataset.ready = "1";
})();
"""
