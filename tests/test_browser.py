"""Open the HTML report and the interactive chart page in a real (headless) Chromium.

Every request that leaves the page (anything but file:, data:, about: and
blob: URLs) and every console error or uncaught page error is recorded; the
tests assert there are none and that the charts are drawn.

Needs the ``playwright`` package and Debian's Chromium at /usr/bin/chromium
(``apt-get install chromium``; never ``playwright install``). Outside CI a
missing browser skips these tests with the reason; under CI (CI=true) it
fails them.
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import pytest

import bioxr
from bioxr import plot

pytestmark = pytest.mark.browser

CHROMIUM = Path(os.environ.get("BIOXR_CHROMIUM", "/usr/bin/chromium"))
LOCAL = ("file:", "data:", "about:", "blob:")


def _unavailable(message: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + "; under CI the browser tests must run.")
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    if not CHROMIUM.is_file():
        _unavailable(f"{CHROMIUM} not found (apt-get install chromium, or set BIOXR_CHROMIUM)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync"],
        )
        yield b
        b.close()


def _open(browser, path: Path):
    """Load a local page; return it with the outside requests and errors seen."""
    page = browser.new_page(viewport={"width": 1200, "height": 1600})
    outside, errors = [], []
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else outside.append(r.url))
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url[:80]} {r.failure}"))
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_timeout(500)
    return page, outside, errors


@pytest.fixture(scope="module")
def report_html(rendered):
    return rendered("verification") / "verification.html"  # the suite's shared render of the simulator


def test_report_fetches_nothing_throws_nothing_and_draws_its_charts(browser, report_html):
    page, outside, errors = _open(browser, report_html)
    try:
        assert outside == [], f"the report asked the network for {outside}"
        assert errors == [], errors
        images = page.evaluate(
            """() => Array.from(document.images)
                   .filter(i => i.src.startsWith('data:image/svg+xml'))
                   .map(i => ({ok: i.complete && i.naturalWidth > 100 && i.naturalHeight > 100,
                               shown: i.getBoundingClientRect().width > 100, src: i.src}))"""
        )
        assert len(images) >= 4, "DET, histogram, rates and per-weather DET charts (the simulator has weather)"
        for image in images:
            assert image["ok"] and image["shown"]
            svg = base64.b64decode(image["src"].split(",", 1)[1]).decode("utf-8")
            marks = re.findall(r'class="mark-(?:line|rect|symbol|rule)[^"]*role-mark', svg)
            assert marks, "chart without marks"
            assert re.search(r"<path[^>]*\sd=\"M", svg), "chart with empty marks"
        assert "Provenance" in page.inner_text("body")
    finally:
        page.close()


def test_interactive_chart_page_renders_offline(browser, tmp_path):
    cube = bioxr.simulate.gaussian(n_subjects=60, seed=4)
    det = bioxr.verification.det_curve(cube)
    eer = bioxr.verification.eer(cube)
    charts = {
        "DET": plot.det_chart(det, eer=eer),
        "Scores": plot.score_histogram(cube, threshold=float(eer.threshold)),
        "Rates": plot.rates_chart(det, eer=eer),
    }
    path = plot.save_html(charts, tmp_path / "charts.html")
    page, outside, errors = _open(browser, path)
    try:
        page.wait_for_function("document.querySelectorAll('svg.marks').length >= 3", timeout=15000)
        assert outside == [], f"the chart page asked the network for {outside}"
        assert errors == [], errors
        counts = page.evaluate(
            """() => Array.from(document.querySelectorAll('svg.marks'))
                   .map(s => s.querySelectorAll('g.role-mark path, g.role-mark line').length)"""
        )
        assert len(counts) == 3 and all(c > 0 for c in counts), counts
    finally:
        page.close()
