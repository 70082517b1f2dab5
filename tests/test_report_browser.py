"""report.html in a real headless Chromium: escaping, filters, URL state, paging, a screenshot.

Needs Debian's `chromium` and `chromium-driver` (/usr/bin/chromium, /usr/bin/chromedriver);
the driver path is passed explicitly, so Selenium Manager never tries to download anything.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from pipeline.cli import main
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.report import write_html_report
from pipeline.rundir import RunReader
from pipeline.taxonomy import load_taxonomy
from pipeline.triage import Query, select


def iter_papers(run_dir):
    return RunReader(run_dir).papers()


CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
RUN = Path(__file__).parent / "data" / "run_small"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "iclr2026"
EXPORT = Path(__file__).resolve().parents[1] / "examples" / "openreview" / "submissions.json"
NOTES = json.loads(EXPORT.read_text(encoding="utf-8"))
LFD, XSS, VNODE, LLM, BENCH, DALE = (
    "39954d708d621dc0",
    "506c1eae6e5ec217",
    "8784778aa46f08df",
    "97240d0de36ffdb0",
    "001b5cef982cc57a",
    "77b8763385a25f31",
)

_missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
pytestmark = [
    pytest.mark.browser,
    # Selenium talks to chromedriver over loopback HTTP; nothing else may connect.
    pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$", r"::1$", r"localhost$"]),
    pytest.mark.skipif(
        bool(_missing),
        reason=f"no headless browser: {', '.join(_missing)} missing "
        "(apt-get install chromium chromium-driver)",
    ),
]


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    opts = Options()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    drv.set_page_load_timeout(30)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def taxonomy():
    return load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")


def open_report(drv, path: Path, fragment: str = "") -> None:
    drv.get("about:blank")  # a fresh load even when only the fragment differs
    drv.get(path.as_uri() + fragment)
    WebDriverWait(drv, 20).until(lambda d: d.execute_script("return document.body.dataset.ready"))


def visible_ids(drv) -> list[str]:
    return drv.execute_script(
        "return Array.from(document.querySelectorAll('article.card'), e => e.dataset.id)"
    )


def wait_ids(drv, expected: list[str]) -> None:
    try:
        WebDriverWait(drv, 5).until(lambda d: visible_ids(d) == expected)
    except Exception:
        assert visible_ids(drv) == expected  # show the difference
        raise


def card(drv, paper_id: str):
    return drv.find_element(By.CSS_SELECTOR, f'article.card[data-id="{paper_id}"]')


def test_hostile_strings_render_as_text_and_failures_show(driver, tmp_path, taxonomy):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    open_report(driver, write_html_report(run, taxonomy))
    wait_ids(driver, [LFD, LLM, DALE, VNODE, XSS, BENCH])  # most claims first, then title
    assert driver.execute_script("return typeof window.__xss") == "undefined"
    assert driver.find_elements(By.CSS_SELECTOR, "#papers img, #papers svg, #papers script") == []
    hostile = card(driver, XSS)
    title = hostile.find_element(By.TAG_NAME, "h2").text
    assert title == "</script><script>window.__xss=3</script>Rewiring <b>heterophilous</b> graphs"
    assert 'onerror="window.__xss=2"' in hostile.find_element(
        By.CSS_SELECTOR, "details p"
    ).get_attribute("textContent")
    failed = hostile.find_element(By.CSS_SELECTOR, ".failed").text
    assert (
        "claims failed" in failed
        and "ungrounded" in failed
        and "<script>alert(1)</script>" in failed
    )
    bench = card(driver, BENCH).text
    assert "tags failed" in bench and "claims: not run" in bench
    marks = card(driver, LFD).find_elements(By.TAG_NAME, "mark")
    assert [m.get_attribute("textContent") for m in marks] == [
        "On ImageNet 256x256 it reaches an FID of 2.31",
        "improving over consistency models by 0.8 FID",
        "Sampling is 20x faster than the teacher",
    ]


def test_tag_filter_search_and_url_state(driver, tmp_path, taxonomy):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    report = write_html_report(run, taxonomy)
    open_report(driver, report)
    card(driver, XSS).find_element(
        By.CSS_SELECTOR, 'button.chip[data-tag="graph-neural-networks"]'
    ).click()
    wait_ids(driver, [VNODE, XSS])
    assert "tag=graph-neural-networks" in driver.current_url
    driver.find_element(By.ID, "q").send_keys("virtual nodes")
    wait_ids(driver, [VNODE])
    assert driver.find_element(By.ID, "count").text == "1 of 6 papers match"
    shared = driver.current_url
    assert re.search(r"#.*q=virtual\+nodes", shared)
    # a chair's link reopens the same filtered view
    open_report(driver, report, "#" + shared.split("#", 1)[1])
    wait_ids(driver, [VNODE])
    assert driver.find_element(By.ID, "q").get_attribute("value") == "virtual nodes"
    box = driver.find_element(By.CSS_SELECTOR, '#facets input[data-tag="graph-neural-networks"]')
    assert box.is_selected()
    # has-quantitative-results filter and sort by id
    open_report(driver, report, "#quant=1&sort=id")
    wait_ids(driver, [LFD, DALE, LLM])
    driver.find_element(By.ID, "clear").click()  # filters go, the sort stays
    wait_ids(driver, sorted([LFD, LLM, DALE, VNODE, BENCH, XSS]))


def _search_term(papers, taxonomy) -> str:
    """A word from the first matching paper's TL;DR that no tag label or id contains."""
    names = " ".join([*taxonomy.ids, *(t.label for t in taxonomy.tags.values())]).lower()
    words = re.findall(r"[a-z]{6,}", (papers[0].tldr or papers[0].abstract).lower())
    return max((w for w in words if w not in names), key=len)


def test_real_run_over_the_shipped_samples(driver, tmp_path, taxonomy):
    out = tmp_path / "run"
    res = CliRunner().invoke(
        main,
        ["run", str(EXAMPLES), "--provider", "offline", "--out", str(out)]
        + ["--cache-dir", str(tmp_path / "cache"), "--no-progress"],
    )
    assert res.exit_code in (0, 1), res.output  # 1: some stage failed, everything still written
    report = out / "report.html"
    assert report.is_file(), "digest run did not write report.html"
    papers = list(iter_papers(out))
    n = len(papers)
    tag = Counter(t for p in papers for t in p.tags).most_common(1)[0][0]
    by_tag = select(papers, Query(tags=(tag,)))
    term = _search_term(by_tag, taxonomy)
    both = select(papers, Query(tags=(tag,), grep=term))
    assert 1 <= len(both) <= len(by_tag) < n

    open_report(driver, report)
    assert driver.find_element(By.ID, "count").text == f"All {n} papers"
    driver.find_element(By.CSS_SELECTOR, f'#facets input[data-tag="{tag}"]').click()
    wait_ids(driver, [p.id for p in by_tag][:50])
    assert driver.find_element(By.ID, "count").text == f"{len(by_tag)} of {n} papers match"
    driver.find_element(By.ID, "q").send_keys(term)
    wait_ids(driver, [p.id for p in both])
    bar = driver.find_element(By.CSS_SELECTOR, f'#chart button.bar[data-tag="{tag}"]')
    assert bar.find_element(By.CLASS_NAME, "bn").text == f"{len(both)}/{len(by_tag)}"
    # claims with valid spans are highlighted inside the abstract
    with_claims = [p for p in both if p.claims]
    if with_claims:
        marks = card(driver, with_claims[0].id).find_elements(By.TAG_NAME, "mark")
        assert marks
    shot = tmp_path / "report.png"
    driver.execute_script("document.querySelector('details.abs').open = true; scrollTo(0, 0)")
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000


def test_paging_keeps_the_page_small_at_scale(driver, tmp_path, taxonomy):
    records = [json.loads(line) for line in (RUN / "summaries.jsonl").read_text().splitlines()]
    run = tmp_path / "big"
    run.mkdir()
    with (run / "summaries.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(3000):
            rec = dict(records[i % len(records)], id=f"{i:016x}")
            fh.write(json.dumps(rec) + "\n")
    open_report(driver, write_html_report(run, taxonomy), "#sort=id")
    assert len(visible_ids(driver)) == 50
    assert driver.find_element(By.CSS_SELECTOR, "#pager-top .pgno").text == "page 1 of 60"
    driver.find_element(By.CSS_SELECTOR, "#pager-top button.pg:last-child").click()
    wait_ids(driver, [f"{i:016x}" for i in range(50, 100)])
    assert "page=2" in driver.current_url
    driver.find_element(By.ID, "q").send_keys("heterophilous")
    WebDriverWait(driver, 5).until(
        lambda d: d.find_element(By.ID, "count").text == "500 of 3000 papers match"
    )
    assert len(visible_ids(driver)) == 50 and "page=" not in driver.current_url


# ---- the page and `digest triage` answer the same queries the same way

AGREEMENT_QUERIES = [
    pytest.param([], {}, id="everything"),
    pytest.param(["--tag", "graph-neural-networks"], {"tag": ["graph-neural-networks"]}, id="tag"),
    pytest.param(
        ["--tag", "graph-neural-networks", "--tag", "theoretical-analysis"],
        {"tag": ["graph-neural-networks", "theoretical-analysis"]},
        id="tags-all",
    ),
    pytest.param(
        ["--tag", "graph-neural-networks", "--tag", "large-language-models", "--any"],
        {"tag": ["graph-neural-networks", "large-language-models"], "mode": "any"},
        id="tags-any",
    ),
    pytest.param(["--has-results"], {"quant": "1"}, id="has-results"),
    pytest.param(["--failed"], {"failed": "1"}, id="failed"),
    pytest.param(["--metric", "fid"], {"metric": "fid"}, id="metric"),
    pytest.param(["--dataset", "ImageNet"], {"dataset": "ImageNet"}, id="dataset"),
    pytest.param(["--grep", "model learning"], {"q": "model learning"}, id="words"),
    pytest.param(["--grep", '"language model"'], {"q": '"language model"'}, id="phrase"),
    pytest.param(["--grep", "<script>"], {"q": "<script>"}, id="markup"),
    pytest.param(["--sort", "title"], {"sort": "title"}, id="sort-title"),
    pytest.param(["--sort", "tag", "--reverse"], {"sort": "tag", "dir": "desc"}, id="sort-tag-rev"),
    pytest.param(["--sort", "id", "--has-results"], {"sort": "id", "quant": "1"}, id="sort-id"),
    pytest.param(["--reverse"], {"dir": "desc"}, id="claims-reversed"),
    # permalinks: a paper by the hash, the user's id (any case) or its number
    pytest.param(["--paper", XSS.upper()], {"paper": XSS.upper()}, id="paper-hash"),
    pytest.param(
        ["--paper", NOTES[4]["id"].lower()], {"paper": NOTES[4]["id"].lower()}, id="paper-id"
    ),
    pytest.param(["--paper", "#7"], {"paper": "#7"}, id="paper-number"),
    pytest.param(["--paper", "12", "--has-results"], {"paper": "12", "quant": "1"}, id="paper-and"),
    # the metric/dataset facets set these same filters
    pytest.param(["--metric", "accuracy"], {"metric": "accuracy"}, id="metric-facet"),
    pytest.param(["--dataset", "cifar"], {"dataset": "cifar"}, id="dataset-facet"),
    pytest.param(
        ["--grep", '"adversarial training"'], {"q": '"adversarial training"'}, id="phrase2"
    ),
    pytest.param(["--grep", "adversarial training"], {"q": "adversarial training"}, id="words2"),
    pytest.param(["--sort", "id", "--reverse"], {"sort": "id", "dir": "desc"}, id="sort-id-rev"),
]


@pytest.fixture(scope="module")
def agreement_runs(tmp_path_factory, taxonomy):
    """The hostile fixture and a real offline run over the shipped samples, with reports."""
    root = tmp_path_factory.mktemp("agree")
    small = root / "small"
    shutil.copytree(RUN, small)
    write_html_report(small, taxonomy)
    real = root / "real"
    res = CliRunner().invoke(
        main,
        ["run", str(EXAMPLES), "--provider", "offline", "--out", str(real)]
        + ["--cache-dir", str(root / "cache"), "--no-progress"],
    )
    assert res.exit_code in (0, 1), res.output
    export = root / "openreview"
    res = CliRunner().invoke(
        main,
        ["run", str(EXPORT), "--provider", "offline", "--out", str(export)]
        + ["--cache-dir", str(root / "cache"), "--no-progress"],
    )
    assert res.exit_code in (0, 1), res.output
    odd = root / "odd"
    rows = [
        {
            "id": ["=cmd", "-12", "+1e3", "@x", "P4", "-inf", "\tx", "P7"][i % 8]
            + f"{i}" * (i > 7),
            "number": str(i),
            "title": text if i % 2 else f"T\u00cdTULO {i} \u03a3\u039f\u03a6\u039f\u03a3",
            "abstract": f"{text} The model reaches {90 + i}.{i}% accuracy on ImageNet, "
            f"improving over the baseline by {i}.5 points. Language model training.",
            "authors": ["\u00c5sa N\u00f8rd", '"Q, uote"', "-minus"],
            "keywords": [text[:12], "*kw*", "=kw"],
            "venue": 'V\u00e9nue, "x"',
        }
        for i, text in enumerate(ODD_ABSTRACTS * 2)
    ]
    inputs = root / "odd.jsonl"
    inputs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = CliRunner().invoke(
        main,
        ["run", str(inputs), "--provider", "offline", "--out", str(odd)]
        + ["--cache-dir", str(root / "cache"), "--no-progress"],
    )
    assert res.exit_code in (0, 1), res.output
    return {"small": small, "real": real, "openreview": export, "odd": odd}


# Texts where Python's and JavaScript's whitespace and case rules differ, markup the card
# shows differently, astral characters (two UTF-16 units), typographic punctuation
ODD_ABSTRACTS = [
    "Plain ASCII text with  double  spaces\tand tabs.",
    "Typographic \u2018quotes\u2019 \u201clike\u201d these \u2014 dashes \u2013 \u00d7 2 \u2264 3.",
    "Non-ASCII: \u00c9COLE na\u00efve \u0130stanbul STRASSE \u00df \u03a3\u039f\u03a6\u039f\u03a3 end.",
    "Odd whitespace\u00a0nbsp\u2003em\u2028line\x1cfs\x1dgs\x85nel\ufeffbom here.",
    "Markup: $\\textit{in vivo}$ and *emphasis* and ``quoted'' text.",
    "Astral \U0001d465 math and emoji \U0001f600 before the results.",
    "Circled \u24b6 and Kelvin \u212a and Angstrom \u212b signs.",
    "Greek \u039f\u0394\u039f\u03a3 \u03a3 final sigma and \u1e9e capital sharp s.",
]


def _cli_ids(run_dir: Path, args: list[str], taxonomy_path: Path) -> list[str]:
    res = CliRunner().invoke(
        main,
        ["triage", str(run_dir), "--format", "jsonl", "--taxonomy", str(taxonomy_path), *args],
    )
    if res.exit_code == 2 and "has the id" in res.stderr:
        return []  # --paper naming no paper of this run: the CLI says so, the page shows none
    assert res.exit_code == 0, res.output
    return [json.loads(line)["id"] for line in res.stdout.splitlines()]


ODD_QUERIES = [
    pytest.param(["--grep", "\u00e9cole"], {"q": "\u00e9cole"}, id="odd-accent"),
    pytest.param(
        ["--grep", "\u03c3\u03bf\u03c6\u03bf\u03c2"],
        {"q": "\u03c3\u03bf\u03c6\u03bf\u03c2"},
        id="odd-sigma",
    ),
    pytest.param(
        ["--grep", "\u03c3\u03bf\u03c6\u03bf\u03c3"],
        {"q": "\u03c3\u03bf\u03c6\u03bf\u03c3"},
        id="odd-sigma2",
    ),
    pytest.param(["--grep", '"nbsp em"'], {"q": '"nbsp em"'}, id="odd-nbsp"),
    pytest.param(["--grep", '"line fs"'], {"q": '"line fs"'}, id="odd-fs"),
    pytest.param(["--grep", '"gs nel"'], {"q": '"gs nel"'}, id="odd-nel"),
    pytest.param(["--grep", '"nel bom"'], {"q": '"nel bom"'}, id="odd-bom"),
    pytest.param(["--grep", '"double spaces and"'], {"q": '"double spaces and"'}, id="odd-ws"),
    pytest.param(["--grep", '"in vivo"'], {"q": '"in vivo"'}, id="odd-markup"),
    pytest.param(["--grep", "textit"], {"q": "textit"}, id="odd-markup-raw"),
    pytest.param(["--grep", "\u24d0"], {"q": "\u24d0"}, id="odd-circled"),
    pytest.param(["--grep", "k"], {"q": "\u212a"}, id="odd-kelvin"),
    pytest.param(["--grep", "i\u0307stanbul"], {"q": "i\u0307stanbul"}, id="odd-dotted-i"),
    pytest.param(["--grep", "\U0001f600 before"], {"q": "\U0001f600 before"}, id="odd-emoji"),
    pytest.param(["--grep", '"\u2014 dashes"'], {"q": '"\u2014 dashes"'}, id="odd-dash"),
    pytest.param(["--grep", '"sigma and \u00df"'], {"q": '"sigma and \u00df"'}, id="odd-sharp-s"),
    pytest.param(["--grep", "n\u00f8rd -minus"], {"q": "n\u00f8rd -minus"}, id="odd-authors"),
    pytest.param(["--grep", '"*kw* =kw"'], {"q": '"*kw* =kw"'}, id="odd-keywords"),
    pytest.param(["--sort", "title"], {"sort": "title"}, id="odd-sort-title"),
    pytest.param(["--sort", "id", "--reverse"], {"sort": "id", "dir": "desc"}, id="odd-sort-id"),
]


@pytest.mark.parametrize("which", ["small", "real", "openreview"])
@pytest.mark.parametrize(("args", "state"), AGREEMENT_QUERIES)
def test_page_and_cli_agree(driver, agreement_runs, which, args, state):
    from urllib.parse import urlencode

    run_dir = agreement_runs[which]
    expected = _cli_ids(run_dir, args, PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    open_report(driver, run_dir / "report.html", "#" + urlencode(state, doseq=True))
    wait_ids(driver, expected[:50])
    total = len(list(iter_papers(run_dir)))
    count = driver.find_element(By.ID, "count").text
    assert count == (
        f"All {total} papers"
        if len(expected) == total
        else f"{len(expected)} of {total} papers match"
    )


@pytest.mark.parametrize(("args", "state"), AGREEMENT_QUERIES[:8] + ODD_QUERIES)
def test_page_and_cli_agree_on_odd_texts(driver, agreement_runs, args, state):
    test_page_and_cli_agree(driver, agreement_runs, "odd", args, state)


def test_odd_queries_select_something(agreement_runs):
    papers = list(iter_papers(agreement_runs["odd"]))
    for param in ODD_QUERIES[:-2]:
        args = param.values[0]
        hits = select(papers, Query(grep=args[1]))
        # a medial sigma never matches a final one, and U+FEFF is no
        # whitespace to Python (the page must agree: it finds nothing either)
        assert hits or args[1] in ODD_EMPTY_OK, args


ODD_EMPTY_OK = ("\u03c3\u03bf\u03c6\u03bf\u03c3", '"nel bom"')


def test_phrase_queries_match_as_phrases(agreement_runs):
    run_dir = agreement_runs["openreview"]
    papers = list(iter_papers(run_dir))
    words = select(papers, Query(grep="adversarial training"))
    phrase = select(papers, Query(grep='"adversarial training"'))
    # the words occur apart in some papers that do not contain the phrase
    assert 0 < len(phrase) < len(words)


# ---- the report as a chair uses it: identity, permalinks, facets, export, phone, dark, keys


def _cli_out(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_cards_lead_with_the_users_id_title_and_forum_link(driver, agreement_runs):
    run_dir = agreement_runs["openreview"]
    open_report(driver, run_dir / "report.html", "#sort=id")
    first = sorted(NOTES, key=lambda n: n["id"].lower())[0]
    c = driver.find_element(By.CSS_SELECTOR, "article.card")
    assert c.get_attribute("data-ref") == first["id"]
    assert c.find_element(By.TAG_NAME, "h2").text == first["content"]["title"]["value"]
    ref = c.find_element(By.CSS_SELECTOR, ".meta a.ref")
    assert ref.text == first["id"]
    assert ref.get_attribute("href") == f"https://openreview.net/forum?id={first['id']}"
    assert "#" + str(first["number"]) in c.find_element(By.CSS_SELECTOR, ".meta").text
    authors = c.find_element(By.CSS_SELECTOR, ".authors").text
    assert authors == ", ".join(first["content"]["authors"]["value"])


def test_forum_url_template_is_configurable(driver, agreement_runs, tmp_path):
    run_dir = agreement_runs["openreview"]
    out = tmp_path / "r.html"
    _cli_out(
        ["report", str(run_dir), "--out", str(out), "--forum-url", "https://or.example/f?x={id}"]
    )
    open_report(driver, out, "#sort=id")
    first = sorted(NOTES, key=lambda n: n["id"].lower())[0]
    href = driver.find_element(By.CSS_SELECTOR, "article.card .meta a.ref").get_attribute("href")
    assert href == f"https://or.example/f?x={first['id']}"
    res = CliRunner().invoke(main, ["report", str(run_dir), "--forum-url", "javascript:{id}"])
    assert res.exit_code == 2 and "must start with http" in res.output


def test_untitled_papers_lead_with_their_tldr(driver, agreement_runs):
    run_dir = agreement_runs["real"]  # the shipped .txt samples have no titles
    p = next(p for p in select(list(iter_papers(run_dir)), Query()) if p.tldr)
    open_report(driver, run_dir / "report.html", f"#paper={p.id}")
    wait_ids(driver, [p.id])
    h2 = card(driver, p.id).find_element(By.TAG_NAME, "h2")
    assert h2.find_element(By.CLASS_NAME, "lead").text == "TL;DR"
    assert h2.text.replace("\n", "").replace("TL;DR", "", 1).strip() == p.tldr


def test_permalink_opens_one_paper_and_clear_shows_all(driver, agreement_runs):
    run_dir = agreement_runs["openreview"]
    n = len(NOTES)
    open_report(driver, run_dir / "report.html")
    target = driver.find_elements(By.CSS_SELECTOR, "article.card")[2]
    paper_hash, ref = target.get_attribute("data-id"), target.get_attribute("data-ref")
    target.find_element(By.CSS_SELECTOR, "a.plink").click()
    wait_ids(driver, [paper_hash])
    assert "#paper=" + ref in driver.current_url
    assert driver.find_element(By.ID, "count").text == f"1 of {n} papers match"
    # the same link opened fresh, in another case
    open_report(driver, run_dir / "report.html", "#paper=" + ref.swapcase())
    wait_ids(driver, [paper_hash])
    driver.find_element(By.ID, "clear").click()
    WebDriverWait(driver, 5).until(lambda d: len(visible_ids(d)) == n)


def test_metric_facet_selects_what_triage_metric_selects(driver, agreement_runs):
    run_dir = agreement_runs["openreview"]
    open_report(driver, run_dir / "report.html")
    button = driver.find_element(By.CSS_SELECTOR, '#claimfacets button[data-field="metric"]')
    value = button.get_attribute("data-value")
    shown = int(button.find_element(By.CLASS_NAME, "n").text)
    button.click()
    expected = _cli_ids(run_dir, ["--metric", value], PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    wait_ids(driver, expected[:50])
    assert shown == len(expected)
    assert driver.find_element(By.ID, "metric").get_attribute("value") == value
    ds = driver.find_element(By.CSS_SELECTOR, '#claimfacets button[data-field="dataset"]')
    assert ds.get_attribute("data-value")
    driver.find_element(By.CSS_SELECTOR, "#claimfacets button.on").click()  # toggles off
    WebDriverWait(driver, 5).until(lambda d: len(visible_ids(d)) == len(NOTES))


@pytest.mark.parametrize(
    ("which", "fragment", "args"),
    [
        ("openreview", "#q=adversarial&sort=title", ["--grep", "adversarial", "--sort", "title"]),
        ("odd", "#sort=id", ["--sort", "id"]),  # formula-like, quoted, non-ASCII cells
        ("small", "#dir=desc", ["--reverse"]),
    ],
)
def test_export_of_the_filtered_set_equals_triage_output(
    driver, agreement_runs, tmp_path, which, fragment, args
):
    run_dir = agreement_runs[which]
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    open_report(driver, run_dir / "report.html", fragment)
    expected_ids = _cli_ids(run_dir, args, PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    wait_ids(driver, expected_ids[:50])
    driver.find_element(By.ID, "export-csv").click()
    csv_file = downloads / "papers.csv"
    WebDriverWait(driver, 10).until(lambda d: csv_file.is_file() and csv_file.stat().st_size > 0)
    triage_csv = CliRunner().invoke(
        main, ["triage", str(run_dir), "--format", "csv", *args], catch_exceptions=False
    )
    assert csv_file.read_bytes() == triage_csv.stdout_bytes  # CRLF rows, byte for byte
    driver.find_element(By.ID, "export-json").click()
    json_file = downloads / "papers.json"
    WebDriverWait(driver, 10).until(lambda d: json_file.is_file() and json_file.stat().st_size > 0)
    rows = json.loads(json_file.read_text(encoding="utf-8"))
    jsonl = CliRunner().invoke(main, ["triage", str(run_dir), "--format", "jsonl", *args])
    assert rows == [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [r["id"] for r in rows] == expected_ids
    assert rows[0]["paper_id"] or which == "small"
    if which == "odd":
        text = csv_file.read_bytes().decode("utf-8")
        assert "\r\n'=cmd" in text and "\r\n-12,1," in text  # a formula is quoted, a number not


def test_phone_layout_puts_papers_first_and_facets_behind_a_button(driver, agreement_runs):
    run_dir = agreement_runs["openreview"]
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )
    try:
        open_report(driver, run_dir / "report.html")
        wide = driver.execute_script(
            "return Array.from(document.querySelectorAll('body *'))"
            ".filter(e => e.getBoundingClientRect().right > 391)"
            ".map(e => e.tagName + '.' + e.className + '#' + e.id)"
        )
        assert wide == [], "wider than the phone"
        assert driver.execute_script("return window.innerWidth") == 390
        top = driver.execute_script(
            "return document.querySelector('article.card').getBoundingClientRect().top"
        )
        assert top < 844 / 2, f"the first paper starts {top}px down"
        facets = driver.find_element(By.ID, "facets")
        assert not facets.is_displayed() and not driver.find_element(By.ID, "q").is_displayed()
        assert driver.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth"
        ), "the page scrolls sideways"
        button = driver.find_element(By.ID, "filters-btn")
        assert button.is_displayed()
        button.click()
        assert facets.is_displayed()
        tag = facets.find_element(By.CSS_SELECTOR, "input[data-tag]")
        expected = _cli_ids(
            run_dir, ["--tag", tag.get_attribute("data-tag")], PACKAGE_PROMPTS_DIR / "taxonomy.yaml"
        )
        tag.click()
        wait_ids(driver, expected[:50])
        assert button.text == "Filters (1)"
        shot = driver.get_screenshot_as_png()
        assert len(shot) > 10_000
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", css)[:3])


def test_dark_mode_follows_prefers_color_scheme(driver, agreement_runs):
    run_dir = agreement_runs["small"]
    background = "return getComputedStyle(document.body).backgroundColor"
    try:
        for scheme in ("light", "dark"):
            driver.execute_cdp_cmd(
                "Emulation.setEmulatedMedia",
                {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
            )
            open_report(driver, run_dir / "report.html")
            bg = _rgb(driver.execute_script(background))
            card_bg = _rgb(
                driver.execute_script(
                    "return getComputedStyle(document.querySelector('article.card')).backgroundColor"
                )
            )
            ink = _rgb(
                driver.execute_script(
                    "return getComputedStyle(document.querySelector('article.card h2')).color"
                )
            )
            if scheme == "dark":
                assert max(bg) < 60 and max(card_bg) < 60 and min(ink) > 180, (bg, card_bg, ink)
            else:
                assert min(bg) > 200 and min(card_bg) > 240 and max(ink) < 80, (bg, card_bg, ink)
    finally:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_j_k_move_between_papers_and_o_opens_one(driver, agreement_runs):
    run_dir = agreement_runs["openreview"]
    open_report(driver, run_dir / "report.html")
    body = driver.find_element(By.TAG_NAME, "body")
    ids = visible_ids(driver)

    def current():
        return driver.execute_script(
            "var c = document.querySelector('article.card.cur'); return c && c.dataset.id"
        )

    body.send_keys("j")
    assert current() == ids[0]
    body.send_keys("jj")
    assert current() == ids[2]
    body.send_keys("k")
    assert current() == ids[1]
    details = card(driver, ids[1]).find_element(By.CSS_SELECTOR, "details.abs")
    assert details.get_attribute("open") is None
    body.send_keys("o")
    assert details.get_attribute("open") is not None
    body.send_keys("o")
    assert details.get_attribute("open") is None
    # typing in the search box is not navigation
    box = driver.find_element(By.ID, "q")
    box.send_keys("jj")
    # j twice as navigation would move the current card from the 2nd to the 4th. The
    # search the text starts may re-render the list first (a busy machine): the current
    # position is kept (the 2nd card of what matches "j"), clamped to fewer matches, or
    # gone when nothing matches; never moved forward.
    index = driver.execute_script(
        "var cs = Array.from(document.querySelectorAll('#papers article.card'));"
        "return cs.findIndex(function (c) { return c.classList.contains('cur'); });"
    )
    assert box.get_attribute("value") == "jj" and index <= 1


@pytest.mark.parametrize("which", ["real", "odd"])
def test_highlights_equal_highlight_segments(driver, agreement_runs, which):
    from pipeline.report.protocol import highlight_segments

    run_dir = agreement_runs[which]
    papers = [p for p in iter_papers(run_dir) if p.claims][:6]
    assert papers
    for p in papers:
        open_report(driver, run_dir / "report.html", f"#paper={p.id}")
        wait_ids(driver, [p.id])
        body = card(driver, p.id).find_element(By.CSS_SELECTOR, "details.abs p")
        got = driver.execute_script(
            "return Array.from(arguments[0].childNodes).filter(function (n) {"
            " return n.nodeName !== 'SUP'; }).map(function (n) {"
            " return n.nodeName === 'MARK' ? [n.textContent, n.dataset.c] : [n.textContent]; });",
            body,
        )
        expected = [
            [s[0], " ".join(map(str, s[1:]))] if len(s) > 1 else [s[0]]
            for s in highlight_segments(p.abstract, p.claims)
        ]
        assert got == expected
