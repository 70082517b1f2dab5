"""reviewers.html at conference scale: file size, build time and render time in Chromium.

Builds the synthetic conference of bench/assign_scale.py (12,000 papers x 8,000 reviewers
by default), assigns it as `digest assign` does, writes reviewers.html and prints its size
(and the JSON's), the time Python takes to build it, and, when Debian's chromium and
chromium-driver are installed, in headless Chromium at a 390 px viewport: the time until
the page has rendered its first entries, the DOM size, and the time a search, the switch
to the per-reviewer view and "Show more" take.

    python -m bench.reviewers_page                       # 12,000 x 8,000
    python -m bench.reviewers_page --papers 2000 --reviewers 1500
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.assign_scale import build, peak_rss_mb
from pipeline.assign import assign
from pipeline.report.reviewers import page_data, write_reviewers_html

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

_TIMED_JS = """
const t = performance.now();
%s
return performance.now() - t;
"""


def _browser(page: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    opts = Options()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        drv.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True},
        )
        drv.set_page_load_timeout(120)
        wall = time.perf_counter()
        drv.get(page.as_uri())
        WebDriverWait(drv, 120, poll_frequency=0.05).until(
            lambda d: d.execute_script("return document.body.dataset.ready")
        )
        load = time.perf_counter() - wall
        at = drv.execute_script("return performance.now()")
        nodes = drv.execute_script("return document.getElementsByTagName('*').length")
        print(f"chromium, 390 px: ready {at / 1000:.2f} s after navigation ({load:.2f} s wall)")
        print(f"  DOM elements after the first render: {nodes}")
        steps = {
            "search 'rev123' (by paper)": "q.value = 'rev123'; q.dispatchEvent(new Event('input'));",
            "search 'rev4567' (texts kept)": "q.value = 'rev4567'; "
            "q.dispatchEvent(new Event('input'));",
            "clear the search": "q.value = ''; q.dispatchEvent(new Event('input'));",
            "show more (50 more papers)": "document.getElementById('more').click();",
            "switch to by reviewer": "document.getElementById('view-reviewers').click();",
            "search 'Reviewer 77' (by reviewer)": "q.value = 'reviewer 77'; "
            "q.dispatchEvent(new Event('input'));",
        }
        for what, js in steps.items():
            ms = drv.execute_script("const q = document.getElementById('q');" + _TIMED_JS % js)
            print(f"  {what:<36} {ms:7.0f} ms")
    finally:
        drv.quit()


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=12_000)
    ap.add_argument("--reviewers", type=int, default=8_000)
    ap.add_argument("--per-paper", type=int, default=3)
    args = ap.parse_args()
    papers, reviewers = build(args.papers, args.reviewers)
    result = assign(papers, reviewers, per_paper=args.per_paper, max_load=8)
    print(
        f"instance: {args.papers} papers x {args.reviewers} reviewers, {len(result.pairs)} "
        f"pairs, {len(result.uncovered)} short"
    )
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        data = page_data(result, None)
        t_data = time.perf_counter() - t
        t = time.perf_counter()
        page = write_reviewers_html(result, Path(tmp) / "reviewers.html", None)
        t_page = time.perf_counter() - t
        size = page.stat().st_size
        text = page.read_text(encoding="utf-8")
        start = text.index('id="reviewers-data">') + len('id="reviewers-data">')
        json_size = len(text[start : text.index("</script>", start)].encode("utf-8"))
        print(
            f"reviewers.html: {size / 1e6:.1f} MB ({json_size / 1e6:.1f} MB of it the JSON); "
            f"{len(data['past'])} past-paper titles and {len(data['tags'])} tag labels stored once"
        )
        print(
            f"  built in {t_page:.2f} s (the data alone {t_data:.2f} s); peak RSS {peak_rss_mb():.0f} MB"
        )
        if CHROMIUM.exists() and CHROMEDRIVER.exists():
            _browser(page)
        else:
            print("no chromium/chromedriver: render time not measured")


if __name__ == "__main__":
    main()
