"""Every teaching notebook and every report template runs top to bottom without an error.

Notebooks in ``notebooks/`` are executed with nbclient from their own folder
(relative paths such as ``../shared/data`` resolve as they do for a reader),
whoever added them. Templates in ``templates/`` go through the ``bioxr
report`` command with small simulator parameters; the verification template
is left to tests/test_report.py, which runs it end to end.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

import bioxr
from test_browser import _open, browser  # noqa: F401  (a fixture, used by name)
from bioxr import report

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
TEMPLATES = sorted((REPO / "templates").glob("*.ipynb"))
#: run by test_report.py (verification, comparison, certification) and test_design_report.py
COVERED_IN_TEST_REPORT = {"verification", "design", "comparison", "certification"}
#: Small values for the simulator parameters a template declares (only those it declares are passed).
SMALL = {"n_subjects": "6", "n_collections": "12", "seed": "3"}
NOTEBOOK_SECONDS = 60


def _code(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _definitions(source: str) -> list[str]:
    tree = ast.parse(source)
    return [type(n).__name__ for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Lambda))]


def _errors(nb) -> list[str]:
    return [f"{o.get('ename')}: {o.get('evalue')}" for c in _code(nb) for o in c.outputs if o.output_type == "error"]


def _cli(*args, timeout=240) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run([sys.executable, "-m", "bioxr", *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _outside(page: str) -> list[str]:
    """Addresses a page would fetch (scripts, images, styles, CSS urls)."""
    found = re.findall(r"<(?:script|img|iframe|source|embed)\b[^>]*\ssrc\s*=\s*[\"']?(https?:[^\"'\s>]*)", page, re.I)
    found += re.findall(r"<link\b[^>]*\shref\s*=\s*[\"']?(https?:[^\"'\s>]*)", page, re.I)
    found += re.findall(r"url\(\s*[\"']?(https?:[^\"')]*)", page, re.I)
    return found


# ------------------------------------------------------------ notebooks ---


def test_there_are_notebooks():
    assert {"01_quickstart.ipynb", "02_roc_det_cmc.ipynb", "06_generative_models.ipynb",
            "07_from_your_own_scores.ipynb", "08_design_explorer.ipynb"} <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_prose_names_no_internal_file(path):
    """Notebooks cite their sources by author and year, not by the repository's seed files."""
    text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    assert re.search(r"\b00\d_\w+\.txt\b|seeds/", text) is None


def _lab_runs_the_notebooks() -> bool:
    """Whether tests/test_jupyterlab.py runs every notebook in JupyterLab (Playwright and Chromium present, or CI).

    Under CI the browser tests must run (they fail when the browser is
    missing), so each notebook is executed once there; elsewhere without a
    browser, nbclient executes them here instead.
    """
    if os.environ.get("CI", "").lower() == "true":
        return True
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return Path(os.environ.get("BIOXR_CHROMIUM", "/usr/bin/chromium")).is_file()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_clean_from_its_folder(path, monkeypatch):
    """Committed clean, no definitions, offline renderer; executed here only where JupyterLab's test cannot run."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert all(not c.outputs and c.execution_count is None for c in _code(nb)), "commit notebooks without outputs"
    for cell in _code(nb):
        assert not _definitions(cell.source), f"no function definitions in notebooks: {cell.source[:80]!r}"
    charts = any("plot." in c.source or "alt.Chart" in c.source for c in _code(nb))
    if charts:
        head = "\n".join(c.source for c in _code(nb)[:2])
        assert 'alt.renderers.enable("svg")' in head, "enable the offline SVG renderer at the top"
    if _lab_runs_the_notebooks():
        return  # executed once, in a real JupyterLab, by tests/test_jupyterlab.py (errors, outputs, requests)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]]
                                                                       if os.environ.get("PYTHONPATH") else [])))
    start = time.perf_counter()
    NotebookClient(nb, timeout=NOTEBOOK_SECONDS * 2, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    assert _errors(nb) == []
    print(f"{path.name}: {seconds:.0f} s")  # speed is measured, not asserted; the timeout guards hangs


# ------------------------------------------------------------ templates ---


def test_identification_is_listed_with_its_parameters(capsys):
    from bioxr.__main__ import main

    assert main(["report", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "identification  (" in listed
    assert "impostors: str = 'auto'  # open set" in listed
    params = {p.name: p for p in report.template_parameters("identification")}
    assert list(params)[:2] == ["seed", "scores"] and params["scores"].default == ""


@pytest.mark.parametrize("path", [t for t in TEMPLATES if t.stem not in COVERED_IN_TEST_REPORT], ids=lambda p: p.stem)
def test_template_is_committed_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert all(not c.outputs and c.execution_count is None for c in _code(nb))
    tagged = [c for c in _code(nb) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for line in tagged[0].source.splitlines():
        assert re.fullmatch(r"\w+: [\w |]+ = .+  # .+", line), line
    for cell in _code(nb):
        assert not _definitions(cell.source), "no function definitions in templates"


@pytest.fixture(scope="module")
def simulated_report(rendered):
    """A template's report on the simulator at a small size: the session's one render (tests/conftest.py)."""

    def run(name: str) -> tuple[subprocess.CompletedProcess, Path]:
        proc = rendered.process(name)
        return proc, (rendered(name) if proc.returncode == 0 else None)

    return run


@pytest.mark.parametrize("path", [t for t in TEMPLATES if t.stem not in COVERED_IN_TEST_REPORT], ids=lambda p: p.stem)
def test_template_report_runs_on_the_simulator(path, simulated_report):
    proc, out = simulated_report(path.stem)
    assert proc.returncode == 0, proc.stderr
    nb = nbformat.read(out / f"{path.stem}.ipynb", as_version=4)
    assert _errors(nb) == []
    page = (out / f"{path.stem}.html").read_text(encoding="utf-8")
    assert _outside(page) == []
    assert "Provenance" in page


def test_identification_report_narrates_the_numbers(simulated_report, rendered):
    proc, out = simulated_report("identification")
    assert proc.returncode == 0, proc.stderr
    page = (out / "identification.html").read_text(encoding="utf-8")
    values = rendered.parameters("identification")
    cube = bioxr.simulate.photohead(n_subjects=values["n_subjects"], n_collections=values["n_collections"],
                                    seed=values["seed"])
    cube = cube.where(cube.reference_image == cube.image)
    out = bioxr.outcomes.outcomes(cube)
    rank1 = float(bioxr.identification.cmc_curve(out).cmc.sel(rank=1))
    assert f"<strong>rank-1 identification rate</strong> is <strong>{rank1:.2%}</strong>" in page
    assert "Annex F" in page
    # every probe's subject is enrolled: a closed-set test, no open-set section (impostors="auto")
    assert "Every probe&#39;s subject is enrolled" in page or "Every probe's subject is enrolled" in page
    assert "closed-set test" in page and "Open set: FNIR against FPIR" not in page
    charts = re.findall(r"<img\b[^>]*\ssrc=\"data:image/svg\+xml;base64,", page) + re.findall(r"<svg\b", page)
    assert len(charts) >= 2, "CMC, CMC by weather"
    assert f"simulated, seed {values['seed']}" in page and "tie rule" in page
    # the matrix-file case (a reference never compared, the sentinel) is checked on BSSR1 face-C in test_report_text


@pytest.mark.browser
@pytest.mark.parametrize("path", [t for t in TEMPLATES if t.stem not in COVERED_IN_TEST_REPORT], ids=lambda p: p.stem)
def test_template_report_opens_offline_in_chromium(path, simulated_report, browser):  # noqa: F811
    """Each report, in a real browser: no request leaves the machine, no JavaScript error, charts drawn."""
    proc, out = simulated_report(path.stem)
    assert proc.returncode == 0, proc.stderr
    page, outside, errors = _open(browser, out / f"{path.stem}.html")
    try:
        assert outside == [], outside
        assert errors == [], errors
        drawn = page.evaluate(
            "() => Array.from(document.images).filter(i => i.src.startsWith('data:image/svg') && i.naturalWidth > 0).length"
        )
        total = page.evaluate("() => Array.from(document.images).filter(i => i.src.startsWith('data:image/svg')).length")
        assert total >= 1 and drawn == total, f"{drawn} of {total} charts drawn"
    finally:
        page.close()
