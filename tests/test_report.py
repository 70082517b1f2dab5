"""report.html and the Markdown digest: escaping, evidence highlighting, grouping, the CLI."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.csvfile import csv_cell
from pipeline.report.cards import _SCRIPT_ESCAPES, script_json
from pipeline.report.html import render_html, write_html_report
from pipeline.report.markdown import md_escape, render_markdown, write_markdown_report
from pipeline.report.protocol import (
    ROW_FIELDS,
    SEARCH_FIELDS,
    SortOrders,
    export_row,
    highlight_segments,
    report_paper,
)
from pipeline.rundir import Paper, RunReader
from pipeline.taxonomy import Taxonomy
from pipeline.triage import SORT_KEYS, claim_values, paper_row, search_text, sort_papers

RUN = Path(__file__).parent / "data" / "run_small"
XSS = "506c1eae6e5ec217"

TAXONOMY = Taxonomy.model_validate(
    yaml.safe_load(
        """
version: 1
facets:
  - id: method
    label: Method family
    tags:
      - {id: graph-neural-networks, label: Graph neural networks}
      - {id: diffusion-models, label: Diffusion models}
"""
    )
)


def _blob(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="digest-data">(.*?)</script>', page, re.S)
    assert m, "no data blob"
    return json.loads(m.group(1))


def test_script_json_cannot_close_the_script_element():
    value = {"a": "</script><script>alert(1)</script>", "b": "x & y > z", "c": "\u2028"}
    text = script_json(value)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == value


def test_script_json_writes_what_json_dumps_writes():
    """orjson (the fast path) and json.dumps give the same values (floats may be spelled
    differently: 1e-7 for 1e-07), byte for byte on values without floats; what orjson
    refuses (an int past 64 bits, a non-str key) still goes out, through json."""

    def by_json(value):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        for char, escaped in _SCRIPT_ESCAPES:
            text = text.replace(char, escaped)
        return text

    exact = [
        {"s": 'Résumé — $L_0$ \\ "q" <b>&amp; \u4e2d', "n": [0, -1, 2**63 - 1, None, True]},
        [("a", "b"), {"nested": [[]], "": {}}, "\t\n\x00\x1f\x7f\u2028\u2029"],
        2**70,
        {1: "a"},
    ]
    for value in exact:
        assert script_json(value) == by_json(value)
    floats = {"f": [0.1, 1e-7, 2.5e20, -0.0, 3.0, 1 / 3]}
    assert json.loads(script_json(floats)) == json.loads(by_json(floats))


def test_highlight_segments_cover_the_abstract_in_order():
    abstract = "Alpha beta gamma delta epsilon."
    claims = [{"span": [6, 16]}, {"span": [11, 22]}, {"span": [0, 99]}, {"span": None}]
    segs = highlight_segments(abstract, claims)
    assert segs == [
        ["Alpha "],
        ["beta ", 1],
        ["gamma", 1, 2],
        [" delta", 2],
        [" epsilon."],
    ]
    assert "".join(s[0] for s in segs) == abstract


def test_highlight_on_original_offsets_then_display_normalized():
    abstract = "Using $\\textit{in vivo}$ data we reach 91% accuracy."
    start = abstract.index("91%")
    segs = highlight_segments(abstract, [{"span": [start, start + 12]}])
    assert segs == [["Using in vivo data we reach "], ["91% accuracy", 1], ["."]]


def test_claim_without_valid_span_keeps_its_evidence_as_text():
    (paper,) = [p for p in RunReader(RUN).papers() if p.id == "39954d708d621dc0"]
    data = report_paper(paper)
    assert all("evidence" not in c for c in data["claims"])  # every span valid: no fallback
    marked = ["".join(str(s[0])) for s in derived_segments(data) if len(s) > 1]
    assert marked == [
        "On ImageNet 256x256 it reaches an FID of 2.31",
        "improving over consistency models by 0.8 FID",
        "Sampling is 20x faster than the teacher",
    ]
    broken = paper.__class__(**{**paper.__dict__, "claims": ({**paper.claims[0], "span": [5, 2]},)})
    assert report_paper(broken)["claims"][0]["evidence"] == paper.claims[0]["evidence"]


def test_page_is_self_contained_and_escapes_everything():
    page = render_html(RunReader(RUN).papers(), TAXONOMY, title="<b>run</b>")
    # exactly two script elements: the inert JSON blob and the code; no external resources
    assert page.count("<script") == 2
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<title>&lt;b&gt;run&lt;/b&gt;</title>" in page
    for raw in ("<script>window", "<img src", "<svg onload", "<b>heterophilous"):
        assert raw not in page
    data = _blob(page)
    assert len(data["papers"]) == 6
    xss = next(p for p in data["papers"] if p["id"] == XSS)
    assert xss["title"].startswith("</script><script>window.__xss=3")  # data, shown as text
    assert xss["failed"] == {
        "claims": {
            "kind": "ungrounded",
            "message": "evidence is not verbatim in the abstract: '<script>alert(1)</script>'",
        }
    }
    # known tags get taxonomy labels; unknown ones fall back to their id in an "other" facet
    assert data["tags"]["graph-neural-networks"] == ["Graph neural networks", "method"]
    assert data["tags"]["neuroscience"] == ["neuroscience", "other"]


def test_csp_allows_exactly_the_inline_script_and_no_network():
    page = render_html([], None)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    csp = csp.replace("&#x27;", "'")
    assert "default-src 'none'" in csp and "connect-src" not in csp
    code = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(code) == 1
    digest = base64.b64encode(hashlib.sha256(code[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    assert "innerHTML" not in code[0] and "insertAdjacentHTML" not in code[0]


def test_write_html_report_streams_into_the_run_folder(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    path = write_html_report(run, TAXONOMY)
    assert path == run / "report.html"
    assert len(_blob(path.read_text(encoding="utf-8"))["papers"]) == 6
    assert not list(run.glob(".*.tmp"))


def test_markdown_groups_by_primary_tag_and_escapes():
    md = render_markdown(RunReader(RUN).papers(), TAXONOMY, title="Digest")
    headings = re.findall(r"^## (.+)$", md, re.M)
    # no primary tag has 3 papers: the taxonomy's ones merge under their facet, the rest
    # (not in the taxonomy) under "Other tags"
    assert headings == [
        "Other: Method family (3)",
        "Other: Other tags (2)",
        "No tags (tags stage failed or not run) (1)",
    ]
    assert "<script" not in md and "<img" not in md
    assert "&lt;/script>&lt;script>window.\\_\\_xss=3" in md
    assert "@alice" not in md
    assert "  - *claims failed* (ungrounded)" in md
    assert "  - *tags failed* (schema)" in md
    assert "Results: Reaches FID 2.31 on ImageNet 256x256. (FID, 2.31, ImageNet 256x256)" in md
    assert "- *Graph neural networks*: **" in md  # a merged section names the primary tag
    assert md.startswith(
        "# Digest\n\n6 papers, 3 with quantitative results, 2 with a failed stage."
    )


def test_markdown_gives_big_groups_their_own_section():
    papers = list(RunReader(RUN).papers())
    gnn = [p for p in papers if p.tags[:1] == ("graph-neural-networks",)]
    md = render_markdown(papers + gnn, TAXONOMY, title="D")  # 4 papers now lead with GNN
    headings = re.findall(r"^## (.+)$", md, re.M)
    assert headings[0] == "Graph neural networks (4)"


def test_md_escape_neutralizes_markup_without_over_escaping():
    assert md_escape("*a* [x](http://y) <b> @bob `c`") == (
        "\\*a\\* \\[x\\](http://y) &lt;b> &#64;bob \\`c\\`"
    )
    plain = "FID 2.31 (ImageNet), 20x faster; a+b=c #1 50% - e.g. snake_case a@b.org Recall@10!"
    assert md_escape(plain) == plain
    assert md_escape("_emph_ ~~gone~~ &amp; \\*") == "\\_emph\\_ \\~~gone\\~~ &amp;amp; \\\\\\*"
    assert md_escape("a | b", cell=True) == "a \\| b"


@pytest.mark.parametrize("fmt,name", [("html", "report.html"), ("md", "report.md")])
def test_cli_report(tmp_path, fmt, name):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    res = CliRunner().invoke(main, ["report", str(run), "--format", fmt])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == str(run / name)
    assert (run / name).stat().st_size > 1000


def test_cli_report_on_a_non_run_folder_is_exit_2(tmp_path):
    res = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "not a run folder" in res.stderr


def test_write_markdown_report_path(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    out = write_markdown_report(run, None, tmp_path / "digest.md")
    assert out.read_text(encoding="utf-8").startswith("# Digest of run\n")


# ---- the compact protocol: what the script derives equals what triage computes


def _norm(text) -> str:
    return " ".join(str(text or "").split()).lower()


def _card_field(data: dict, code: int) -> str:
    name = SEARCH_FIELDS[code]
    if name == "statements":
        return " ".join(c["statement"] for c in data["claims"])
    value = data[name]
    return " ".join(value) if isinstance(value, list) else value


def derived_search(data: dict) -> str:
    """The search text as report.js rebuilds it (norm() is exact on what Python names)."""
    if isinstance(data["search"], str):
        return data["search"]
    parts = [_norm(_card_field(data, x)) if isinstance(x, int) else x for x in data["search"]]
    return " ".join(p for p in parts if p)


def derived_segments(data: dict) -> list:
    """The abstract's pieces as report.js cuts them from a string abstract and the spans."""
    if not isinstance(data["abstract"], str):
        return data["abstract"]
    text = data["abstract"]
    found = [(*c["span"], n) for n, c in enumerate(data["claims"], 1) if "span" in c]
    if not found:
        return [[text]] if text else []
    cuts = sorted({0, len(text), *(x for s, e, _ in found for x in (s, e))})
    out: list = []
    last = None
    for a, b in zip(cuts, cuts[1:], strict=False):
        cov = [n for s, e, n in found if s <= a and b <= e]
        if out and last == cov:
            out[-1][0] += text[a:b]
        else:
            out.append([text[a:b], *cov])
            last = cov
    return out


ODD_TEXTS = [
    "Plain ASCII text with  double  spaces\tand tabs.",
    "Typographic \u2018quotes\u2019 \u201clike\u201d these \u2014 and dashes \u2013 \u00d7 2 \u2264 3.",
    "Non-ASCII: \u00c9COLE na\u00efve \u0130stanbul STRASSE \u00df \u03a3\u039f\u03a6\u039f\u03a3 end.",
    "Odd whitespace\u00a0nbsp\u2003em\u2028line\x1cfs\x1dgs\x85nel\ufeffbom here.",
    "Markup: $\\textit{in vivo}$ and *emphasis* and ``quoted'' text.",
    "Astral \U0001d465 math and emoji \U0001f600 before 91% accuracy.",
    "Circled \u24b6 and Kelvin \u212a and Angstrom \u212b signs.",
]


def _odd_papers() -> list:
    out = []
    for i, text in enumerate(ODD_TEXTS):
        start = text.index(" ") + 1
        claims = (
            {"statement": f"Claim {text[:20]}", "kind": "quantitative", "span": [start, start + 8]},
            {"statement": "=1+2 formula", "kind": "qualitative", "metric": "-5", "span": [0, 4]},
            {"statement": "n", "kind": "quantitative", "value": [1, True][i % 2], "metric": "-5"},
        )
        out.append(
            Paper(
                id=f"{i:016x}",
                title=text if i % 2 else f"T\u00cdTULO {i}",
                abstract=text,
                paper_id=["=cmd", "-12", "+1e3", "@x", f"P{i}", "-inf", "\tx"][i],
                paper_ids=(f"ALT{i}",),
                tldr=text[::-1],
                tags=[(), ("graph-neural-networks", "=odd"), ("-5", "x"), ("-5",)][i % 4],
                keywords=(text[:10], "*kw*") if i % 2 else ("-kw",),
                author_keywords=("AK \u00c9",),
                authors=("\u00c5sa N\u00f8rd", '"Q, uote"'),
                venue="V\r\nenue",
                claims=claims,
                sources=(("in.jsonl", i),),
            )
        )
    return out


def test_script_derivations_equal_triage_on_real_and_odd_papers():
    papers = list(RunReader(RUN).papers()) + _odd_papers()
    for paper in papers:
        data = json.loads(script_json(report_paper(paper, TAXONOMY)))  # what the script reads
        assert derived_search(data) == search_text(paper)
        assert derived_segments(data) == highlight_segments(paper.abstract, paper.claims)
        assert data["metrics"] == claim_values(paper, "metric")
        assert data["datasets"] == claim_values(paper, "dataset")
        assert data["n_quantitative"] == paper.n_quantitative
        row = paper_row(paper, TAXONOMY)
        assert export_row(data, TAXONOMY) == list(row.values())
        assert list(row) == list(ROW_FIELDS)
        texts = [
            "; ".join(map(str, v)) if isinstance(v, list) else "" if v is None else str(v)
            for v in row.values()
        ]
        # formula-like cells csv_cell leaves bare (numbers): the script must not quote them
        bare = [
            i
            for i, (t, v) in enumerate(zip(texts, row.values(), strict=True))
            if t[:1] in ("=", "+", "-", "@", "\t", "\r")
            and t
            and csv_cell(t) == t
            and not isinstance(v, int)
        ]
        assert data.get("f", []) == bare
    odd = [report_paper(p, TAXONOMY) for p in _odd_papers()]
    assert any(isinstance(d["abstract"], str) for d in odd)
    assert any(not isinstance(d["abstract"], str) for d in odd)  # markup, astral
    assert any(d.get("f") for d in odd)
    assert any(isinstance(d["search"], list) and 3 not in d["search"] for d in odd)


def test_sort_orders_equal_triage_sorting():
    base = list(RunReader(RUN).papers()) + _odd_papers()
    papers = base + [
        Paper(id=f"z{i}", title=t, abstract="x", paper_id=u, number=n, tags=g, claims=c)
        for i, (t, u, n, g, c) in enumerate(
            [
                (None, None, "10", (), ()),
                ("beta", None, "9", ("neuroscience",), ({"kind": "quantitative"},)),
                ("Beta", "P10", None, ("graph-neural-networks",), ({},)),
                ("", "P2", None, ("diffusion-models",), ({}, {})),
                (None, None, None, ("neuroscience",), ({"kind": "quantitative"}, {})),
            ]
        )
    ]
    orders = SortOrders(TAXONOMY)
    for p in papers:
        orders.add(p, p.n_quantitative)
    got = orders.orders()
    for key in SORT_KEYS:
        expected = [p.id for p in sort_papers(papers, key, TAXONOMY)]
        assert [papers[i].id for i in got[key]] == expected, key
