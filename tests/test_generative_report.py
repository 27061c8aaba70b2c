"""The generative report, rendered once per session on its simulated point clouds and once on a lab's own
files (a training set and a folder of models' samples written here), checked against the library.

Every number the report prints is recomputed here from the same seeded
simulation; the page must fetch nothing, print no "nan", cite the source
as a citation and never name an internal file.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from bioxr import generative, report, simulate


@pytest.fixture(scope="session")
def values(rendered):
    """The parameters of the session's one simulator render of the template (tests/conftest.py)."""
    return rendered.parameters("generative")


@pytest.fixture(scope="session")
def raw(rendered):
    return (rendered("generative") / "generative.html").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def page(raw):
    return html.unescape(raw)


@pytest.fixture(scope="session")
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


@pytest.fixture(scope="session")
def own_files(tmp_path_factory):
    """A training set (.npy) and a folder with two models of unequal sizes (.npy and a CSV with a header)."""
    folder = tmp_path_factory.mktemp("generative-files")
    rng = np.random.default_rng(11)
    train = rng.normal(size=(60, 5)) * np.geomspace(1, 0.3, 5)
    np.save(folder / "training.npy", train)
    models = folder / "models"
    models.mkdir()
    np.save(models / "shape-model.npy", rng.normal(size=(80, 5)) * np.geomspace(1, 0.3, 5))
    blurred = rng.normal(size=(50, 5)) * np.geomspace(1, 0.3, 5) + rng.normal(scale=0.5, size=(50, 5))
    with open(models / "blurred.csv", "w") as f:
        f.write("x1,x2,x3,x4,x5\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in blurred) + "\n")
    return folder / "training.npy", models


@pytest.fixture(scope="session")
def own_page(rendered, own_files):
    training, samples = own_files
    out = rendered("generative", training=str(training), samples=str(samples))
    return html.unescape((out / "generative.html").read_text(encoding="utf-8"))


def test_report_on_a_labs_own_files_prints_what_the_library_reads(own_page, own_files):
    text = _text(own_page)
    training, samples = own_files
    inputs = generative.read_samples(training, samples)
    result = generative.compare_models(inputs.training, inputs.synthetic)
    for line in generative.to_markdown(result).splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert " ".join(cells) in text, cells
    for sentence in generative.describe(result).replace("**", "").split("\n"):
        assert sentence.lstrip("- ").strip() in text
    assert ("The training set (training.npy) holds 60 samples of 5 features each; the models were given blurred "
            "(blurred.csv) 50 and shape-model (shape-model.npy) 80 samples.") in text
    assert "Data: the training set training.npy and the samples of 2 models (blurred.csv, shape-model.npy)" in text
    assert "different numbers of samples (blurred 50, shape-model 80)" in text and "as here" not in text
    assert "so the comparison on G is not at equal sizes" in text.split("The data")[0]  # in the summary
    for simulated in ("simulat", "misregist", "n_training", "seed"):
        assert simulated not in text, simulated
    assert re.search(r"\bnan\b", text, re.I) is None
    from test_report_text import problems  # what no report may print (tests/test_report_text.py)

    assert problems(own_page) == []
    import hashlib

    provenance = text[text.index("Provenance"):]
    assert hashlib.sha256(training.read_bytes()).hexdigest() in provenance
    assert hashlib.sha256((samples / "blurred.csv").read_bytes()).hexdigest() in provenance
    assert "samples training 60, blurred 50, shape-model 80" in provenance
