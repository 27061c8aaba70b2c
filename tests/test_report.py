"""The report path end to end: template -> papermill -> self-contained HTML, via the CLI."""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import numpy as np
import pytest

import bioxr.headline
import xarray as xr
from bioxr import __main__ as cli
from bioxr import report
from test_report_text import problems

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "templates" / "verification.ipynb"
TEMPLATES = [REPO / "templates" / f"{name}.ipynb" for name in ("verification", "identification")]
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
def simulated(rendered):
    """The verification report on the simulator: the session's one render (tests/conftest.py), shared with test_report_text."""
    return rendered("verification"), rendered.process("verification")


# ------------------------------------------------------------ template ----


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.stem)
def test_template_is_committed_clean(template):
    nb = nbformat.read(template, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "commit the template without outputs"
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for line in tagged[0].source.splitlines():
        assert re.fullmatch(r"\w+: [\w |]+ = .+  # .+", line), line
        assert line.count("=") == 1, f"papermill cannot parse a parameter line with two '=': {line}"
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


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.stem)
def test_papermill_reads_the_same_parameters(template):
    import papermill

    declared = papermill.inspect_notebook(str(template))
    assert list(declared) == [p.name for p in report.template_parameters(template.stem)]


def test_help_text_declares_choices_and_ranges():
    for name in ("verification", "identification"):
        params = {p.name: p for p in report.template_parameters(name)}
        assert params["score_kind"].choices == ("similarity", "distance")
        assert params["layout"].choices == ("auto", "list", "cube")
        assert set(params["format"].choices) <= set(report.FORMATS)
        assert params["level"].bounds == (0.0, False, 1.0, False)
        assert params["n_replicates"].bounds == (2.0, True, float("inf"), False)
        assert params["missing"].wants_number and params["failure"].wants_number
        assert params["scores"].is_path and not params["seed"].is_path
    assert report.template_parameters("verification")[[p.name for p in report.template_parameters(
        "verification")].index("failure_policy")].choices == report.FAILURE_POLICIES
    assert "candidates" in {p.name: p for p in report.template_parameters("identification")}["format"].choices
    # the design template's help mentions an interval of expressions, not numbers: no range is read from it
    assert {p.name: p for p in report.template_parameters("design")}["tolerance"].bounds is None


def test_parse_columns():
    assert report.parse_columns("score=llr,subject=spk, reference_subject=enrol") == {
        "score": "llr", "subject": "spk", "reference_subject": "enrol"}
    assert report.parse_columns("score:llr,probe_id:utt") == {"score": "llr", "probe_id": "utt"}
    assert report.parse_columns("") is None and report.parse_columns(None) is None
    for bad, message in (("scor=llr", "unknown key 'scor' (did you mean 'score'?)"), ("score", "is not key=column"),
                         ("score=a,score=b", "gives 'score' twice"), ("subject=a,probe_subject=b", "one role"),
                         ("score=a,,subject=b", "empty entry")):
        with pytest.raises(report.ParameterError, match=re.escape(message)):
            report.parse_columns(bad)


def test_check_parameters_converts_and_makes_paths_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store.zarr").mkdir()  # a Zarr store is a folder
    values = report.check_parameters("verification", {"scores": "store.zarr", "missing": "-1", "level": "0.9",
                                                      "failure_policy": "nist", "format": ""})
    assert values == {"scores": str(tmp_path / "store.zarr"), "missing": "-1", "level": 0.9,
                      "failure_policy": "nist", "format": ""}


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
    assert proc.returncode == 2
    assert "no parameter 'n_subject'" in proc.stderr
    assert "did you mean 'n_subjects'" in proc.stderr
    assert not list(tmp_path.iterdir()), "nothing is run for a bad parameter"


def test_wrong_type_and_unknown_template_are_clear_errors(tmp_path):
    proc = run_cli("report", "verification", "-p", "seed", "abc", "-o", tmp_path, timeout=60)
    assert proc.returncode == 2 and "parameter 'seed' expects int; got 'abc'" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    proc = run_cli("report", "verificaton", "-o", tmp_path, timeout=60)
    assert proc.returncode == 2 and "did you mean 'verification'" in proc.stderr


def _kernel_never_starts(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a kernel was started for a value that should have been refused first")

    monkeypatch.setattr(report, "_execute", refuse)


BAD_VALUES = [
    (["--failure-policy", "nsit"], "--failure-policy must be one of exclude, nist, iso; got 'nsit'. Did you mean 'nist'?"),
    (["--score-kind", "distnce"], "--score-kind must be one of similarity, distance; got 'distnce'"),
    (["--missing", "abc"], "--missing expects a number (or nothing); got 'abc'."),
    (["--failure", "x1"], "--failure expects a number (or nothing); got 'x1'."),
    (["--missing", "-1", "--failure", "-1"], "--failure is the same number as missing (-1)"),
    (["--format", "xlsx"], "--format must be one of matrix, long, parquet, bob, npz, netcdf, zarr; got 'xlsx'"),
    (["--format", "candidates"], "candidate lists go to the identification report"),
    (["--layout", "dense"], "--layout must be one of auto, list, cube; got 'dense'"),
    (["--columns", "scor=llr"], "--columns has an unknown key 'scor' (did you mean 'score'?)"),
    (["--columns", "score"], "--columns entry 'score' is not key=column"),
    (["--scores", "no-such-scores.csv"], "--scores names no file or folder: 'no-such-scores.csv'"),
    (["-p", "level", "1.5"], "parameter 'level' must be in (0, 1); got 1.5."),
    (["-p", "n_replicates", "0"], "parameter 'n_replicates' must be in [2, inf); got 0."),
    (["-p", "threshold_fmr", "0"], "parameter 'threshold_fmr' must be in (0, 1); got 0.0."),
    (["-p", "eer_method", "hull"], "parameter 'eer_method' must be one of rocch, interpolated, nearest"),
    (["-p", "seed", "abc"], "parameter 'seed' expects int; got 'abc'."),
    (["-p", "n_subject", "5"], "has no parameter 'n_subject'; did you mean 'n_subjects'?"),
    (["--score-kind", "distance", "-p", "score_kind", "distance"], "either with --score-kind or with -p score_kind"),
]


@pytest.mark.parametrize("args, message", BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_each_bad_value_is_one_line_before_any_kernel(args, message, monkeypatch, capsys, tmp_path):
    _kernel_never_starts(monkeypatch)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["report", "verification", *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bioxr report: error: ") and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing is written for a refused value"


@pytest.mark.parametrize("args, message", [
    (["design", "--format", "npz"], "--format: template 'design' has no parameter 'format'"),
    (["identification", "--failure-policy", "iso"], "nist and iso are verification policies"),
    (["verificaton"], "unknown report template 'verificaton'; did you mean 'verification'?"),
])
def test_options_a_template_does_not_take_are_refused(args, message, monkeypatch, capsys, tmp_path):
    _kernel_never_starts(monkeypatch)
    assert cli.main(["report", *args, "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_options_become_parameters_and_a_zarr_folder_is_a_score_path(monkeypatch, tmp_path):
    seen = {}

    def fake(path, nb_path, values, **kwargs):
        seen.update(values)
        raise RuntimeError("stopped where the kernel would start")

    monkeypatch.setattr(report, "_execute", fake)
    store = tmp_path / "scores.zarr"
    store.mkdir()
    args = ["report", "identification", "--scores", str(store), "--format", "zarr", "--columns", "score=llr,subject=spk",
            "--score-kind", "distance", "--missing", "-1", "--failure", "-2", "--layout", "list", "-o", str(tmp_path / "o")]
    assert cli.main(args) == 1  # the values passed: the run got as far as the kernel
    assert seen == {"scores": str(store.resolve()), "format": "zarr", "columns": "score=llr,subject=spk",
                    "score_kind": "distance", "missing": "-1", "failure": "-2", "layout": "list"}


def test_version():
    import bioxr

    proc = run_cli("--version", timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"bioxr {bioxr.__version__}"


# ------------------------------------------------------------ the output folder


def _fake_run(barrier=None):
    """A stand-in for the kernel: writes a notebook and a result file stamped with the run's seed."""

    def execute(path, nb_path, values, *, cwd, **kwargs):
        run = values.get("seed", 0)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"run {run}")])
        nb.metadata["papermill"] = {"output_path": str(nb_path)}
        nbformat.write(nb, nb_path)
        (cwd / f"{path.stem}_err.nc").write_text(f"run {run}")
        if barrier is not None:
            barrier.wait(timeout=30)  # both runs are staged before either puts its report in place

    return execute


def _stamps(folder: Path) -> set:
    nb = nbformat.read(folder / "verification.ipynb", as_version=4)
    mark = json.loads((folder / ".bioxr-report").read_text())
    return {nb.cells[0].source, (folder / "verification_err.nc").read_text(), f"run {mark['parameters']['seed']}"}


def _leftovers(parent: Path) -> list:
    return [p.name for p in parent.iterdir() if p.name.startswith(".")]


def test_existing_report_is_refused_and_overwrite_replaces_it(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(report, "_execute", _fake_run())
    out = tmp_path / "report"
    files = report.run_report("verification", out, {"seed": 1}, html=False)
    assert files.notebook == out / "verification.ipynb" and files.results == (out / "verification_err.nc",)
    assert _stamps(out) == {"run 1"}
    nb = nbformat.read(files.notebook, as_version=4)
    assert nb.metadata.papermill.output_path == str(out / "verification.ipynb")  # not the temporary folder
    assert cli.main(["report", "verification", "-p", "seed", "2", "--no-html", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds an earlier report" in err and "--overwrite" in err and err.count("\n") == 1
    assert _stamps(out) == {"run 1"}
    assert cli.main(["report", "verification", "-p", "seed", "2", "--no-html", "--overwrite", "-o", str(out)]) == 0
    assert _stamps(out) == {"run 2"}
    assert _leftovers(tmp_path) == []
    other = tmp_path / "documents"
    other.mkdir()
    (other / "thesis.tex").write_text("precious")
    with pytest.raises(report.UsageError, match="holds other files .'thesis.tex'"):
        report.run_report("verification", other, html=False, overwrite=True)
    assert [p.name for p in other.iterdir()] == ["thesis.tex"]
    empty = tmp_path / "empty"
    empty.mkdir()
    report.run_report("verification", empty, {"seed": 3}, html=False)
    assert _stamps(empty) == {"run 3"}


@pytest.mark.parametrize("overwrite", [False, True])
def test_concurrent_runs_into_one_folder(overwrite, monkeypatch, tmp_path):
    """Without overwrite the second to finish refuses; with it the last to finish wins, whole. Never a mix."""
    monkeypatch.setattr(report, "_execute", _fake_run(threading.Barrier(2)))
    out = tmp_path / "report"
    outcome = {}

    def run(seed):
        try:
            report.run_report("verification", out, {"seed": seed}, html=False, overwrite=overwrite)
            outcome[seed] = "written"
        except report.ReportError as err:
            outcome[seed] = err

    threads = [threading.Thread(target=run, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    written = [seed for seed, result in outcome.items() if result == "written"]
    if overwrite:
        assert sorted(written) == [1, 2]
    else:
        assert len(written) == 1
        (refused,) = [result for result in outcome.values() if result != "written"]
        assert isinstance(refused, report.UsageError) and "another report was written there" in str(refused)
    assert len(_stamps(out)) == 1 and _stamps(out) <= {"run 1", "run 2"}
    assert sorted(p.name for p in out.iterdir()) == [".bioxr-report", "verification.ipynb", "verification_err.nc"]
    assert _leftovers(tmp_path) == []


def test_failing_run_leaves_the_old_report_untouched(tmp_path):
    template = tmp_path / "failing.ipynb"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Failing"),
        nbformat.v4.new_code_cell("seed: int = 0  # a seed", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell('raise ValueError(f"boom at seed {seed}")'),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, template)
    out = tmp_path / "report"
    out.mkdir()
    (out / "failing.html").write_text("the earlier report")
    (out / ".bioxr-report").write_text("{}")
    proc = run_cli("report", template, "-p", "seed", "7", "--overwrite", "-o", out)
    assert proc.returncode == 1
    err = proc.stderr
    assert "failed in cell 3 of the template" in err and 'raise ValueError(f"boom at seed {seed}")' in err
    assert "ValueError: boom at seed 7" in err
    kept = tmp_path / "report.failed.ipynb"
    assert f"kept at {kept}; {out} is as it was." in err
    assert "without encryption" not in err  # the kernel runs over IPC: no eavesdropping warning
    assert any(o.get("ename") == "ValueError" for c in nbformat.read(kept, as_version=4).cells for o in c.get("outputs", []))
    assert sorted(p.name for p in out.iterdir()) == [".bioxr-report", "failing.html"]
    assert (out / "failing.html").read_text() == "the earlier report"
    assert _leftovers(tmp_path) == []


# ------------------------------------------------------------ the report --


def test_report_writes_notebook_and_html(simulated):
    out, proc = simulated
    assert "without encryption" not in proc.stderr  # the kernel runs over IPC: no eavesdropping warning
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


def test_executed_notebook_has_the_injected_parameters(simulated, rendered):
    out, _ = simulated
    nb = nbformat.read(out / "verification.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    values = rendered.parameters("verification")
    assert f"n_subjects = {values['n_subjects']}" in injected[0].source and f"seed = {values['seed']}" in injected[0].source
    assert nb.metadata.papermill.parameters["n_collections"] == values["n_collections"]
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
    assert "subject-bootstrap interval" in page and "which also carries the uncertainty of that correlation" in page  # every number with its uncertainty
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
    out = tmp_path / "out"
    proc = run_cli("report", "verification", "--scores", path, "--missing", "-1", "--format", "matrix", "-o", out)
    assert proc.returncode == 0, proc.stderr
    nb = nbformat.read(out / "verification.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert str(path.resolve()) in injected.source and 'missing = "-1"' in injected.source
    assert 'format = "matrix"' in injected.source
    page = (out / "verification.html").read_text(encoding="utf-8")
    assert hashlib.sha256(path.read_bytes()).hexdigest() in page
    assert "tiny scores.csv" in page
    assert "<i>evil</i>" not in page
    assert "&lt;i&gt;evil&lt;/i&gt;&amp;co" in page
    assert "1 cells holding the sentinel -1" in page
    assert "Failure policy <strong>exclude</strong>" in page and "FTE = <strong>0.00%</strong>" in page
    assert "By weather condition" not in page  # no cofactor, no section
    assert problems(page) == []
    assert external_fetches(page) == []


def test_report_from_a_trial_list_with_failures(tmp_path):
    """A speaker-style trial list: named columns, a failure sentinel, the NIST policy, kept as a comparison list."""
    rng = np.random.default_rng(2)
    rows = ["utt\tspk\tenrol\tllr"]
    speakers = [f"spk{i}" for i in range(8)]
    for s in speakers:
        for k in range(3):
            for e in speakers:
                if e == s or rng.random() < 0.6:
                    rows.append(f"{s}-u{k}\t{s}\t{e}\t{rng.normal(3.0 if e == s else 0.0, 1.0):.3f}")
    rows += ["spk7-u9\tspk7\tspk7\t-2", "spk7-u9\tspk7\tspk1\t-2"]  # one probe failed to be acquired
    path = tmp_path / "trials.tsv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    proc = run_cli("report", "verification", "--scores", path, "--format", "long", "--layout", "list",
                   "--columns", "score=llr,subject=spk,reference_subject=enrol,probe=utt,reference=enrol",
                   "--failure", "-2", "--failure-policy", "nist", "--score-kind", "similarity",
                   *SMALL[-3:], "-o", out)
    assert proc.returncode == 0, proc.stderr
    page = (out / "verification.html").read_text(encoding="utf-8")
    assert "a comparison list of" in page
    assert "Failure policy <strong>nist</strong>" in page
    assert "FTA = <strong>4.00%</strong> (1 of 25 probes failed to be acquired" in page
    assert "0 failed enrolments and 1 failed acquisition" in page
    err = xr_open(out / "verification_err.nc")
    assert err.attrs["failure_policy"] == "nist"
    assert problems(page) == []
    assert external_fetches(page) == []


def test_identification_report_from_candidate_lists(tmp_path):
    rng = np.random.default_rng(5)
    rows = ["search,subject,rank,candidate,score"]
    people = [f"p{i:02d}" for i in range(30)]
    for n, who in enumerate(people * 2):
        others = list(rng.choice([p for p in people if p != who], size=4, replace=False))
        listed = others + ([who] if rng.random() < 0.85 else [str(rng.choice([p for p in people if p != who and p not in others]))])
        scores = rng.normal(0.0, 1.0, 5) + np.array([0, 0, 0, 0, 2.5 if listed[-1] == who else 0])
        for r, k in enumerate(np.argsort(-scores), start=1):
            rows.append(f"s{n:03d},{who},{r},{listed[k]},{scores[k]:.4f}")
    path = tmp_path / "top5.csv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    proc = run_cli("report", "identification", "--scores", path, "--format", "candidates", "-p", "max_rank", "5",
                   *SMALL[-3:], "-o", out)
    assert proc.returncode == 0, proc.stderr
    page = (out / "identification.html").read_text(encoding="utf-8")
    assert "an outcome cube (one row per search) with dimensions search (60)" in page
    assert "Each search returned at most 5 candidates" in page
    assert "rank-1 identification rate</strong> is <strong>" in page
    assert problems(page) == []
    assert external_fetches(page) == []


def xr_open(path):
    import xarray as xr

    with xr.open_dataset(path) as ds:
        return ds.load()


def test_every_report_writes_its_summary_table(simulated):
    out, proc = simulated
    table = bioxr.headline.read_csv(out / "summary.csv")
    assert str(out / "summary.csv") in proc.stdout
    eer = table[(table.metric == "EER") & (table.convention == "rocch")]
    import xarray as xr

    assert float(eer.value.iloc[0]) == float(xr.open_dataset(out / "verification_err.nc").eer)
    assert "Summary table" in (out / "verification.html").read_text()


def test_comparison_report_narrates_the_paired_differences(rendered):
    out = rendered("comparison")  # the session's one render on the simulator (tests/conftest.py)
    html = (out / "comparison.html").read_text()
    diff = xr.open_dataset(out / "comparison_d_eer.nc")
    lo, hi = diff.difference_interval.values[0]
    assert f"B - A = {100 * float(diff.difference[0]):+.2f} points" in html
    assert f"{100 * lo:+.2f} to {100 * hi:+.2f}" in html
    assert "with subjects as clusters" in html and "data:image/svg+xml;base64," in html
    assert not re.findall(r"<(?:script|img|link)\b[^>]*\s(?:src|href)\s*=\s*[\"']?https?:", html)  # offline
    table = bioxr.headline.read_csv(out / "summary.csv")
    assert sorted(set(table.system)) == ["A", "B"]


def test_certification_report_states_the_verdict_and_the_next_test(rendered):
    out = rendered("certification")  # the session's one render on the simulator (tests/conftest.py)
    html = (out / "certification.html").read_text()
    claim = xr.open_dataset(out / "certification_claim.nc")
    for k, rate in enumerate(("FMR", "FNMR")):
        word = "passes" if bool(claim.passes.values[k]) else "fails"
        assert f"the claim {rate} ≤ {float(claim.claim.values[k]):g} <strong>{word}</strong>" in html
    assert "The next test" in html and "intra-class correlation" in html
    assert not re.findall(r"<(?:script|img|link)\b[^>]*\s(?:src|href)\s*=\s*[\"']?https?:", html)  # offline
    assert (out / "summary.csv").is_file()
