"""The report path end to end: template -> papermill -> self-contained HTML, via the CLI."""

from __future__ import annotations

import ast
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from bioxr import report

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "templates" / "verification.ipynb"
SMALL = ["-p", "n_subjects", "6", "-p", "n_collections", "12", "-p", "seed", "3", "-p", "n_replicates", "200"]


def run_cli(*args, timeout=180) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run([sys.executable, "-m", "bioxr", *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def external_fetches(page: str) -> list[str]:
    """Addresses the browser would fetch from outside the page (scripts, styles, images, CSS urls)."""
    found = re.findall(r"<(?:script|img|iframe|audio|video|source|embed)\b[^>]*\ssrc\s*=\s*[\"']?(https?:[^\"'\s>]*)",
                       page, re.I)
    found += re.findall(r"<link\b[^>]*\shref\s*=\s*[\"']?(https?:[^\"'\s>]*)", page, re.I)
    found += re.findall(r"url\(\s*[\"']?(https?:[^\"')]*)", page, re.I)
    found += re.findall(r"@import\s+[\"'](https?:[^\"']*)", page, re.I)
    found += re.findall(r"import\(\s*[\"'](https?:[^\"']*)", page)
    return found


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("simulated")
    proc = run_cli("report", "verification", *SMALL, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out, proc


# ------------------------------------------------------------ template ----


def test_template_is_committed_clean():
    nb = nbformat.read(TEMPLATE, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "commit the template without outputs"
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for line in tagged[0].source.splitlines():
        assert re.fullmatch(r"\w+: [\w |]+ = .+  # .+", line), line
    for cell in code:
        tree = ast.parse(cell.source)
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Lambda))], \
            "no function definitions in templates"


def test_template_parameters_are_parsed():
    params = {p.name: p for p in report.template_parameters("verification")}
    assert list(params)[:2] == ["seed", "scores"]
    assert params["scores"].type == "str" and params["scores"].default == ""
    assert "score file" in params["scores"].help
    assert params["eer_method"].default == "rocch"
    assert params["missing"].type == "str" and params["missing"].default == ""
    assert report.parse_value(params["threshold_fmr"], "1e-4") == 1e-4
    assert report.parse_value(params["n_subjects"], "7") == 7
    with pytest.raises(report.ReportError, match="expects int"):
        report.parse_value(params["n_subjects"], "seven")


def test_papermill_reads_the_same_parameters():
    import papermill

    declared = papermill.inspect_notebook(str(TEMPLATE))
    assert list(declared) == [p.name for p in report.template_parameters("verification")]


def test_template_dir_is_the_repository_folder_in_a_checkout():
    assert report.template_path("verification") == TEMPLATE.resolve() or report.template_path("verification").name == TEMPLATE.name


# ------------------------------------------------------------ CLI ---------


def test_list_prints_templates_and_parameters():
    for args in (("report", "--list"), ("templates",)):
        proc = run_cli(*args, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "verification" in proc.stdout
        assert "seed: int = 0  # " in proc.stdout
        assert "scores: str = ''  # path to a score file" in proc.stdout
        assert "eer_method: str = 'rocch'" in proc.stdout


def test_unknown_parameter_is_a_clear_error(tmp_path):
    proc = run_cli("report", "verification", "-p", "n_subject", "5", "-o", tmp_path, timeout=60)
    assert proc.returncode == 1
    assert "no parameter 'n_subject'" in proc.stderr
    assert "did you mean 'n_subjects'" in proc.stderr
    assert not list(tmp_path.iterdir()), "nothing is run for a bad parameter"


def test_wrong_type_and_unknown_template_are_clear_errors(tmp_path):
    proc = run_cli("report", "verification", "-p", "seed", "abc", "-o", tmp_path, timeout=60)
    assert proc.returncode == 1 and "parameter 'seed' expects int; got 'abc'" in proc.stderr
    proc = run_cli("report", "verificaton", "-o", tmp_path, timeout=60)
    assert proc.returncode == 1 and "did you mean 'verification'" in proc.stderr


def test_failing_cell_is_named(tmp_path):
    proc = run_cli("report", "verification", "-p", "n_subjects", "1", "-p", "n_collections", "2", "-o", tmp_path)
    assert proc.returncode == 1
    err = proc.stderr
    assert "failed in cell" in err and "of the template" in err
    assert "bioxr.simulate.photohead(" in err  # the failing cell's source
    assert "ValueError: need n_subjects >= 2" in err
    assert str(tmp_path / "verification.ipynb") in err
    assert (tmp_path / "verification.ipynb").is_file()


# ------------------------------------------------------------ the report --


def test_report_writes_notebook_and_html(simulated):
    out, proc = simulated
    assert (out / "verification.ipynb").is_file() and (out / "verification.html").is_file()
    assert str(out / "verification.html") in proc.stdout
    assert str(out / "verification.ipynb") in proc.stdout


def test_results_are_saved_as_netcdf_beside_the_report(simulated):
    import xarray as xr

    out, proc = simulated
    files = sorted(out.glob("verification_*.nc"))
    names = {f.stem.removeprefix("verification_") for f in files}
    assert {"err", "eer_ci", "op", "op_icc"} <= names, names
    for f in files:
        assert str(f) in proc.stdout
    eer = xr.open_dataset(out / "verification_err.nc")
    assert eer.attrs["eer_method"] == "rocch" and 0 < float(eer.eer) < 0.5
    ci = xr.open_dataset(out / "verification_eer_ci.nc")
    lo, hi = ci.eer_interval.values
    assert lo <= float(eer.eer) <= hi


def test_executed_notebook_has_the_injected_parameters(simulated):
    out, _ = simulated
    nb = nbformat.read(out / "verification.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    assert "n_subjects = 6" in injected[0].source and "seed = 3" in injected[0].source
    assert nb.metadata.papermill.parameters["n_collections"] == 12
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_html_shows_charts_numbers_and_provenance(simulated):
    out, _ = simulated
    page = (out / "verification.html").read_text(encoding="utf-8")
    charts = re.findall(r"<img\b[^>]*\ssrc=\"data:image/svg\+xml;base64,", page) + re.findall(r"<svg\b", page)
    assert len(charts) >= 4, "DET, histogram, rates and the per-weather DET"
    assert "import altair as alt" not in page  # inputs are left out
    assert "mated</strong> and <strong>" in page
    assert "convention is <strong>" in page
    assert "subject-bootstrap interval" in page and "effective size is" in page  # every number with its uncertainty
    assert "simulated, seed 3" in page  # provenance
    assert "numpy" in page and "eer_method" in page


def test_html_fetches_nothing_from_outside(simulated):
    out, _ = simulated
    page = (out / "verification.html").read_text(encoding="utf-8")
    assert external_fetches(page) == []
    assert "cdn." not in page and "unpkg" not in page


def test_report_from_a_score_file_escapes_labels(tmp_path):
    rng = np.random.default_rng(1)
    labels = [f"s{i:02d}" for i in range(9)] + ["<i>evil</i>&co"]
    scores = rng.normal(0.0, 1.0, (10, 10)) + 3.0 * np.eye(10)
    scores[9, 9] = -5.0  # the evil subject's mate scores worst: it heads the 'hardest' table
    scores[0, 4] = -1  # a sentinel: "not compared"
    path = tmp_path / "tiny scores.csv"
    lines = ["," + ",".join(labels)] + [lab + "," + ",".join(f"{v:.4f}" for v in row) for lab, row in zip(labels, scores)]
    path.write_text("\n".join(lines) + "\n")
    pytest.importorskip("bioxr.io")
    out = tmp_path / "out"
    proc = run_cli("report", "verification", "--scores", path, "-p", "missing", "-1", "-o", out)
    assert proc.returncode == 0, proc.stderr
    nb = nbformat.read(out / "verification.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert str(path.resolve()) in injected.source and 'missing = "-1"' in injected.source
    page = (out / "verification.html").read_text(encoding="utf-8")
    assert hashlib.sha256(path.read_bytes()).hexdigest() in page
    assert "tiny scores.csv" in page
    assert "<i>evil</i>" not in page
    assert "&lt;i&gt;evil&lt;/i&gt;&amp;co" in page
    assert "held the sentinel -1" in page
    assert "no breakdown by weather" in page
    assert external_fetches(page) == []
