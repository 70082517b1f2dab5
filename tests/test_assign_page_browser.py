"""reviewers.html in a real headless Chromium at a phone's 390 px: the per-paper view (papers
left short first, reasons, weak flags), search, the per-reviewer view, paging, escaping.
Needs Debian's `chromium` and `chromium-driver` (as tests/test_report_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from pipeline.assign import PastPaper, Reviewer, assign
from pipeline.report.reviewers import write_reviewers_html
from pipeline.rundir import Paper

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
_missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$", r"::1$", r"localhost$"]),
    pytest.mark.skipif(bool(_missing), reason=f"no headless browser: {', '.join(_missing)}"),
]

XSS = '<img src=x onerror="window.__xss=1">'
FACE = "A part based morphable model of the human face fitted to scans with sparse landmarks."
CONTROL = "Explaining learned controllers: saliency for policies in continuous control tasks."


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
        "--window-size=390,844",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    drv.set_page_load_timeout(30)
    # headless Chromium's windows are at least 500 px wide: emulate the phone's viewport
    drv.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True},
    )
    yield drv
    drv.quit()


def open_page(drv, path: Path, fragment: str = "") -> None:
    drv.get("about:blank")
    drv.get(path.as_uri() + fragment)
    WebDriverWait(drv, 20).until(lambda d: d.execute_script("return document.body.dataset.ready"))


def shown(drv, kind: str) -> list[str]:
    attr = "paper" if kind == "paper" else "reviewer"
    return drv.execute_script(
        f"return Array.from(document.querySelectorAll('section.{kind}'), e => e.dataset.{attr})"
    )


def chair_result():
    papers = [
        Paper(id="h1", title="Graphs", abstract="graph networks", tags=("gnn",), number="2",
              forum="ForumA", paper_id="ForumA"),
        Paper(id="h2", title=XSS, abstract="graph networks again", tags=("gnn",), number="3"),
        Paper(id="h3", title="Faces", abstract=FACE + " Control of the fit.", number="1"),
        Paper(id="h4", title="Lonely", abstract="nobody", number="4"),
    ]  # fmt: skip
    control = PastPaper(title="Challenges of Explaining Control", abstract=CONTROL)
    birds = PastPaper(title="Birds", abstract="Migratory birds navigate by magnetic fields.")
    reviewers = [
        Reviewer(id="gi", name="Gi " + XSS, tags=("gnn",), conflicts=frozenset({"4"})),
        Reviewer(id="ha", name="Ha", tags=("gnn",), conflicts=frozenset({"4"})),
        Reviewer(id="cy", name="Cy", papers=(control, birds)),
    ]
    return assign(papers, reviewers, per_paper=2, max_load=3)


def test_per_paper_view_at_390px(driver, tmp_path):
    result = chair_result()
    assert [u.paper_id for u in result.uncovered] == ["h4"]
    open_page(driver, write_reviewers_html(result, tmp_path / "reviewers.html", None))
    assert driver.execute_script("return window.innerWidth") == 390
    assert driver.execute_script("return typeof window.__xss") == "undefined"
    # papers left short first, then by submission number
    assert shown(driver, "paper") == ["#4", "#1", "ForumA", "#3"]
    short = driver.find_element(By.CSS_SELECTOR, 'section.paper[data-paper="#4"]')
    assert "is-short" in short.get_attribute("class")
    assert "left short (1 of 2): only 1 eligible reviewer(s), 2 needed" in short.text
    faces = driver.find_element(By.CSS_SELECTOR, 'section.paper[data-paper="#1"]')
    weak_rows = faces.find_elements(By.CSS_SELECTOR, "tr.weak")
    assert len(weak_rows) >= 1 and "weak" in weak_rows[0].text
    assert 'most similar past paper: "Challenges of Explaining Control"' in faces.text
    hostile = driver.find_element(By.CSS_SELECTOR, 'section.paper[data-paper="#3"] h2')
    assert XSS in hostile.text  # shown as text
    link = driver.find_element(By.ID, "conflicts-link")
    assert link.get_attribute("href").endswith("/conflicts.csv") and link.is_displayed()
    assert link.rect["x"] + link.rect["width"] <= 390
    # nothing wider than the phone's screen
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
    forum = driver.find_element(By.CSS_SELECTOR, 'section.paper[data-paper="ForumA"] h2 a')
    assert forum.get_attribute("href") == "https://openreview.net/forum?id=ForumA"


def test_search_and_the_per_reviewer_view(driver, tmp_path):
    open_page(driver, write_reviewers_html(chair_result(), tmp_path / "reviewers.html", None))
    driver.find_element(By.ID, "q").send_keys("cy")
    WebDriverWait(driver, 30).until(lambda d: shown(d, "paper") != ["#4", "#1", "ForumA", "#3"])
    for ref in shown(driver, "paper"):
        section = driver.find_element(By.CSS_SELECTOR, f'section.paper[data-paper="{ref}"]')
        assert "(cy)" in section.text
    driver.find_element(By.ID, "q").clear()
    driver.find_element(By.ID, "weak-only").click()
    WebDriverWait(driver, 30).until(lambda d: shown(d, "paper") == ["#4", "#1"])
    driver.find_element(By.ID, "weak-only").click()
    driver.find_element(By.ID, "view-reviewers").click()
    WebDriverWait(driver, 30).until(lambda d: len(shown(d, "reviewer")) == 3)
    assert shown(driver, "reviewer") == ["cy", "gi", "ha"]  # by name
    cy = driver.find_element(By.CSS_SELECTOR, 'section.reviewer[data-reviewer="cy"]')
    assert "load " in cy.text and "of at most 3" in cy.text
    assert driver.current_url.endswith("#by-reviewer")
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390


def test_only_a_page_of_entries_is_in_the_dom(driver, tmp_path):
    papers = [
        Paper(id=f"{i:04x}", title=f"Paper {i}", abstract="graph networks", tags=("gnn",),
              number=str(i + 1))
        for i in range(130)
    ]  # fmt: skip
    reviewers = [Reviewer(id=f"r{j}", tags=("gnn",)) for j in range(60)]
    result = assign(papers, reviewers, per_paper=1, max_load=3)
    open_page(driver, write_reviewers_html(result, tmp_path / "reviewers.html", None))
    assert shown(driver, "paper") == [f"#{i}" for i in range(1, 51)]
    assert driver.find_element(By.ID, "count").text == "130 paper(s), 50 shown"
    driver.find_element(By.ID, "more").click()
    WebDriverWait(driver, 30).until(lambda d: len(shown(d, "paper")) == 100)
    driver.find_element(By.ID, "more").click()
    WebDriverWait(driver, 30).until(lambda d: len(shown(d, "paper")) == 130)
    assert not driver.find_element(By.ID, "more").is_displayed()
