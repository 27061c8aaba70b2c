"""Shared fixtures: the real NIST BSSR1 scores in ../shared/data/bssr1.

Outside CI a missing dataset skips the tests that need it, with the reason;
under CI (CI=true) it is a failure, so a broken checkout cannot pass quietly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BSSR1 = Path(os.environ.get("BIOXR_BSSR1", REPO.parent / "shared" / "data" / "bssr1"))


def _data_file(name: str) -> Path:
    path = BSSR1 / name
    if not path.is_file():
        message = f"BSSR1 file {path} not found (set BIOXR_BSSR1 to its folder)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + "; under CI the dataset must be present.")
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def face_csv() -> Path:
    """Path to face-C.csv (similarity floats; one reference column all -1)."""
    return _data_file("face-C.csv")


@pytest.fixture(scope="session")
def finger_csv() -> Path:
    """Path to finger-left.csv (integer similarity scores, heavy ties)."""
    return _data_file("finger-left.csv")


# ------------------------------------------------------------ report renders ---

#: Small values for the parameters a template declares, so a test render takes seconds, not minutes.
SMALL_REPORT = {"seed": 3, "n_replicates": 50, "n_simulations": 100,
                "system": "Matcher <X> 1.0", "lab": "Test Lab & Co", "date": "2026-11-30"}
#: Per template, the simulator's size (only the parameters the template declares are passed).
SMALL_SIMULATOR = {
    "verification": {"n_subjects": 6, "n_collections": 48},
    "identification": {"n_subjects": 6, "n_collections": 48},
    "certification": {"n_subjects": 60},
    "comparison": {"n_subjects": 40},
    "design": {"n_subjects": 8, "n_collections": 96, "collections_per_run": 48, "n_runs": 8, "seed": 2},
    "demographics": {"groups": "A:60,B:40,C:20", "n_samples": 3},
    "gallery": {"n_subjects": 15, "n_samples": 3, "fpir_target": 0.05},
}
#: The BSSR1 data sets by name: the template parameters that read them (face-C's -1 column means "not compared").
BSSR1_DATA = {
    "face": lambda: {"scores": _data_file("face-C.csv"), "missing": "-1"},
    "finger": lambda: {"scores": _data_file("finger-left.csv")},
    "face-finger": lambda: {"scores_a": _data_file("face-C.csv"), "scores_b": _data_file("finger-left.csv"),
                            "missing": "-1", "names": "face-C,finger-left"},
}


#: The render that also prints its PDF (when a Chromium is found), so test_pdf.py needs no render of its own.
PRINTED = ("verification", "simulator")


def _chromium() -> bool:
    from bioxr import printing

    try:
        printing.find_chromium()
    except Exception:  # noqa: BLE001 - no browser: no PDF (test_pdf.py then skips or fails under CI)
        return False
    return True


class _Renders:
    """Run `bioxr report` once per (template, data, parameters) in a session; see :func:`rendered`."""

    def __init__(self, factory):
        self._factory, self._done = factory, {}

    def parameters(self, template: str, data: str = "simulator", **params) -> dict:
        from bioxr import report

        declared = {p.name for p in report.template_parameters(template)}
        values = {k: v for k, v in SMALL_REPORT.items() if k in declared}
        if data == "simulator":
            values.update(SMALL_SIMULATOR.get(template, {}))
        elif data in BSSR1_DATA:
            values.update(BSSR1_DATA[data]())
        else:
            raise ValueError(f"unknown data {data!r}: 'simulator' or one of {', '.join(BSSR1_DATA)}")
        values = {k: v for k, v in values.items() if k in declared}
        values.update(params)  # asked for by name: passed even if undeclared, so a typo is an error, not ignored
        return values

    def process(self, template: str, data: str = "simulator", **params):
        """The finished `bioxr report` run (a CompletedProcess: returncode, stdout, stderr)."""
        return self._run(template, data, params)[1]

    def __call__(self, template: str, data: str = "simulator", **params) -> Path:
        """The output folder of the report; the run must have succeeded."""
        out, proc = self._run(template, data, params)
        assert proc.returncode == 0, f"bioxr report {template} on {data} failed:\n{proc.stderr[-3000:]}"
        return out

    def _run(self, template, data, params):
        import subprocess
        import sys

        values = self.parameters(template, data, **params)
        key = (template, data, tuple(sorted((k, str(v)) for k, v in values.items())))
        if key not in self._done:
            out = self._factory.mktemp(f"report-{template}-{data}") / "out"
            args = [a for k, v in values.items() for a in ("-p", k, str(v))]
            if (template, data) == PRINTED and _chromium():
                args.append("--pdf")  # the one PDF of the suite, read back by test_pdf.py
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            proc = subprocess.run([sys.executable, "-m", "bioxr", "report", template, *args, "-o", str(out)],
                                  cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
            self._done[key] = (out, proc)
        return self._done[key]


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """``rendered(template, data="simulator", **params)``: the output folder of one `bioxr report` run.

    Each (template, data, parameters) runs once per test session, whichever
    test file asks first, so every check on a report shares one render.
    ``data`` is ``"simulator"`` (the template's defaults at a small size:
    :data:`SMALL_SIMULATOR` and :data:`SMALL_REPORT`, for any template in
    ``templates/``), ``"face"`` or ``"finger"`` (BSSR1 face-C.csv, with -1
    as "not compared", or finger-left.csv) or ``"face-finger"`` (the
    comparison template's two files, the same subjects). Extra keyword
    arguments are template parameters. ``rendered.process(...)`` gives the
    run's CompletedProcess, ``rendered.parameters(...)`` the values passed.
    """
    return _Renders(tmp_path_factory)


#: Test files that share the session's report renders (:func:`rendered`): one xdist worker runs them all, so
#: each (template, data) is rendered once; every other file is a group of its own (module fixtures run once).
SHARED_RENDERS = {"test_report.py", "test_report_text.py", "test_notebooks.py", "test_design_report.py",
                  "test_demographics_report.py", "test_generative_report.py", "test_gallery_report.py", "test_browser.py",
                  "test_pdf.py"}


#: Files grouped by the coverage cell each test runs: tests/coverage_cells.py computes every function registered on
#: a cell in one pass over its experiments (cached), so a cell's tests belong on one worker; cells balance the workers.
BY_CELL = {"test_coverage.py"}


def _group(item, name: str) -> None:
    """Put ``item`` in xdist group ``name``: the mark, and the ``@name`` node-id suffix loadgroup schedules by.

    xdist (3.8) writes the suffix to ``item._nodeid``; pytest 9.2 builds node ids from ``item._id`` (a
    ``NodeId``) instead, so that write is lost and every test became a group of its own (renders and module
    fixtures computed once per worker, i.e. twice). Where the node id lives in ``_id``, the suffix is set there.
    """
    item.add_marker(pytest.mark.xdist_group(name))
    node_id = getattr(item, "_id", None)
    if config_loadgroup(item.config) and node_id is not None and hasattr(node_id, "_str_cache"):
        import dataclasses

        tagged = dataclasses.replace(node_id)
        object.__setattr__(tagged, "_str_cache", f"{node_id}@{name}")
        item._id = tagged


def config_loadgroup(config) -> bool:
    """True in an xdist worker of ``--dist loadgroup`` (where the suffix is read)."""
    return bool(getattr(config.option, "loadgroup", False))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    """Under ``pytest -n auto --dist loadgroup`` (the README's command) keep what shares a fixture on one worker.

    The renders of the BSSR1 files (used by test_report_text.py alone) form a
    group of their own, beside the simulator's renders.
    """
    for item in items:
        name = item.path.name
        if name in BY_CELL:
            entry = getattr(item, "callspec", None) and item.callspec.params.get("entry")
            if entry is not None:
                _group(item, f"coverage:{getattr(entry.cell, 'id', entry.cell)}")
            continue
        if name in SHARED_RENDERS:
            page = getattr(item, "callspec", None) and item.callspec.params.get("page")
            bssr1 = isinstance(page, tuple) and len(page) == 2 and page[1] in BSSR1_DATA
            group = "reports-bssr1" if bssr1 else "reports"
        else:
            group = str(item.path.relative_to(REPO))
        _group(item, group)


@pytest.fixture
def received(monkeypatch):
    """Sizes (dask's sizeof) of everything dask hands back to the caller: ``dask.compute``, and
    ``dask.base.compute``, which ``.compute()`` and ``np.asarray(lazy)`` call. The tests of bytes reaching the
    client (tests/test_distributed.py, test_lazy_lists.py, test_lazy_bootstrap.py) sum them."""
    dask = pytest.importorskip("dask")
    from dask.sizeof import sizeof

    sizes = []
    compute = dask.base.compute

    def counted(*args, **kwargs):
        out = compute(*args, **kwargs)
        sizes.append(sizeof(out))
        return out

    monkeypatch.setattr(dask, "compute", counted)
    monkeypatch.setattr(dask.base, "compute", counted)
    return sizes
