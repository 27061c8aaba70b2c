"""The design report (seed 000) end to end: `bioxr report design`, its charts, results, and nothing fetched.

One small run through the command line is shared by the session (the
``rendered`` fixture of tests/conftest.py): 8 subjects x 96 collections, runs
of 48 collections, 8 runs (about 10 s). The browser test
reuses tests/test_browser.py's Chromium fixture and page opener.
"""

from __future__ import annotations

import base64
import re

import nbformat
import pytest
import xarray as xr
from test_browser import _open, browser  # noqa: F401  (a fixture, used by name)
from test_report import external_fetches

from bioxr import report

SMALL = {"n_subjects": 8, "n_collections": 96, "collections_per_run": 48, "n_runs": 8, "seed": 2}


@pytest.fixture(scope="module")
def design_report(rendered):
    """The session's one render of the design report (tests/conftest.py), shared with test_report_text."""
    assert {k: rendered.parameters("design")[k] for k in SMALL} == SMALL
    return rendered("design"), rendered.process("design")


def _charts(page: str) -> list[str]:
    """The SVG charts embedded as images, decoded."""
    return [base64.b64decode(data).decode("utf-8")
            for data in re.findall(r"<img\b[^>]*\ssrc=\"data:image/svg\+xml;base64,([^\"]+)\"", page)]


def test_template_parameters_name_the_papers_size():
    params = {p.name: p for p in report.template_parameters("design")}
    assert list(params)[:3] == ["seed", "n_subjects", "n_collections"]
    assert "256" in params["n_subjects"].help and "1440" in params["n_collections"].help
    assert params["m"].default == 4 and params["collections_per_run"].default == 180 and params["n_runs"].default == 30


def test_report_runs_and_saves_the_studies(design_report):
    out, proc = design_report
    nb = nbformat.read(out / "design.ipynb", as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    names = {f.stem.removeprefix("design_") for f in out.glob("design_*.nc")}
    assert {"study1", "study2", "study3", "study4", "test3", "test4"} <= names
    for name in names:
        assert str(out / f"design_{name}.nc") in proc.stdout
    study = xr.open_dataset(out / "design_study3.nc")
    assert study.attrs["partition"] == "subject, image" and study.attrs["n_runs"] == SMALL["n_runs"]
    assert study.sizes["trial"] == 48 // 4
    test = xr.open_dataset(out / "design_test3.nc")
    assert ((test.pvalue >= 0) & (test.pvalue <= 1)).all()


def test_html_has_a_chart_per_iteration_and_the_summary(design_report):
    out, _ = design_report
    page = (out / "design.html").read_text(encoding="utf-8")
    charts = _charts(page)
    design = [svg for svg in charts if "Design study: " in svg]
    assert len(design) == 4, "one design chart per iteration"
    assert any("Which design describes the variance?" in svg for svg in charts)
    assert any("Rank-1 rate per collection" in svg for svg in charts)
    for svg in design:  # drawn: four lines (empirical and three estimators)
        assert len(re.findall(r'aria-roledescription="line mark"', svg)) >= 4
    # exploratory iterations: ratios only; the verdicts and the F test at the last iteration
    assert all("compatible" not in svg for svg in design)
    text = re.sub(r"<[^>]+>", " ", page)
    assert "The last iteration: verdicts and a formal test" in text
    # tiny p-values print as "< 1e-16"; design_test's statement adds the degrees of freedom
    assert re.search(r"F = [\d.]+(?: on [\d,]+ and [\d.e+,]+ degrees of freedom)?, p (?:= |&lt; |< )[\d.e-]+", text)
    assert not re.search(r"p = 0(?![.\d])", text), "an underflowed p-value printed as 0"
    assert "Mean estimator / empirical variance" in text and "95% intervals" in text
    assert "simulated, seed 2" in text and "Provenance" in text


def test_html_fetches_nothing_from_outside(design_report):
    out, _ = design_report
    page = (out / "design.html").read_text(encoding="utf-8")
    assert external_fetches(page) == []
    assert "cdn." not in page and "unpkg" not in page


@pytest.mark.browser
def test_report_opens_offline_in_chromium(browser, design_report):  # noqa: F811
    out, _ = design_report
    page, outside, errors = _open(browser, out / "design.html")
    try:
        assert outside == [], f"the report asked the network for {outside}"
        assert errors == [], errors
        shown = page.evaluate(
            """() => Array.from(document.images).filter(i => i.src.startsWith('data:image/svg+xml'))
                   .map(i => i.complete && i.naturalWidth > 100 && i.getBoundingClientRect().width > 100)""")
        assert len(shown) >= 6 and all(shown)
    finally:
        page.close()
