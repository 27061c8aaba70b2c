"""The generative report, rendered once per session on its simulated point clouds, checked against the library.

Every number the report prints is recomputed here from the same seeded
simulation; the page must fetch nothing, print no "nan", cite the source
as a citation and never name an internal file.
"""

from __future__ import annotations

import html
import re

import pytest

from bioxr import generative, report, simulate


@pytest.fixture(scope="module")
def values(rendered):
    """The parameters of the session's one simulator render of the template (tests/conftest.py)."""
    return rendered.parameters("generative")


@pytest.fixture(scope="module")
def raw(rendered):
    return (rendered("generative") / "generative.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def page(raw):
    return html.unescape(raw)


@pytest.fixture(scope="module")
def expected(values):
    params = {p.name: p.default for p in report.template_parameters("generative")} | values
    clouds = simulate.generative_models(n_training=params["n_training"], n_synthetic=params["n_synthetic"],
                                        n_features=params["n_features"],
                                        misregistration=(0.0, params["misregistration"]), seed=params["seed"])
    return generative.compare_models(clouds.training, clouds.synthetic, synthetic_dim="draw", metric=params["metric"])


def _text(page: str) -> str:
    """The page's visible text (tags and the embedded scripts and styles dropped)."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S | re.I)
    body = re.sub(r"<img\b[^>]*>", " ", body)
    body = re.sub(r"</?(strong|em|code|a|span)\b[^>]*>", "", body)  # inline tags join their words
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def test_report_prints_the_library_numbers(page, expected):
    text = _text(page)
    for line in generative.to_markdown(expected).splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert " ".join(cells) in text, cells
    for sentence in generative.describe(expected).replace("**", "").split("\n"):
        assert sentence.lstrip("- ").strip() in text
    good, poor = (float(expected.G.sel(model=m)) for m in ("good", "poor"))
    assert poor > good and "good is the better model on both counts" in text
    assert f"{int(expected.n_training[0]):,} training samples of 10 features each" in text
    assert "misregistered by independent Gaussian noise of standard deviation 0.6" in text


def test_report_is_a_document_a_reader_can_follow(page):
    text = _text(page)
    assert re.search(r"\bnan\b", text, re.I) is None
    for internal in ("METHODS.md", "seed 00", "_6b210d", ".txt", "Traceback"):
        assert internal not in text, internal
    assert "R. S. Schestowitz, C. J. Twining" in text and "2006" in text and "References" in text
    sections = re.findall(r"<h2[^>]*>(.*?)</h2>", page, flags=re.S)
    assert [re.sub(r"<[^>]+>|¶", "", s).strip() for s in sections][:2] == ["Summary", "The data"]
    charts = re.findall(r"<img\b[^>]*\ssrc=\"data:image/svg\+xml;base64,", page) + re.findall(r"<svg\b", page)
    assert charts, "the chart of G and S"
    outside = re.findall(r"<(?:script|img|iframe|link)\b[^>]*\s(?:src|href)\s*=\s*[\"']?(https?:[^\"'\s>]*)", page, re.I)
    assert outside == []


def test_report_header_and_provenance(raw, page, values):
    text = _text(page)
    assert "Matcher &lt;X&gt; 1.0" in raw and "Test Lab &amp; Co" in raw  # the lab's words, escaped
    assert "Date: 2026-11-30" in text and "Generative model report" in text
    assert f"simulated, seed {values['seed']}" in text
    assert "misregistration 0.6" in text and "n_training 200" in text
    assert "specificity and generalisation of a generative model (Schestowitz et al. 2006)" in text
