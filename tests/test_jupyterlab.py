"""The Jupyter experience in a real JupyterLab, driven through a real (headless) Chromium.

One JupyterLab server per module starts on 127.0.0.1 with its config, data,
runtime, settings and workspace folders in a temporary directory. Each test
opens a fresh copy of a notebook in a workspace of its own (no tabs
restored), waits for the kernel, runs all cells through
``window.jupyterapp.commands`` and reads the page:

- the threshold explorer: a key press on the slider moves the threshold rule
  on the histogram and the operating point on the DET (marks Vega draws in
  the page, read back from its SVG), their labels agree with the rates table,
  and the DET stays beside the slider and histogram at 1400 and 1200 px;
- every notebook in ``notebooks/`` runs top to bottom with no error output
  and no "Error displaying widget" or "Error loading script" box.

Every page is watched for requests that leave 127.0.0.1 and for console
errors; there must be none. Needs the ``playwright`` package and Debian's
Chromium at /usr/bin/chromium (``apt-get install chromium``; never
``playwright install``). Outside CI a missing browser skips with the reason;
under CI (CI=true) it fails. Set ``BIOXR_SHOTS`` to a folder to keep the
screenshots (``lab_explorer_1400.png``, ``lab_explorer_1200.png``,
``lab_explorer_moved.png``, ``lab_<notebook>_<page>.png``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CHROMIUM = Path(os.environ.get("BIOXR_CHROMIUM", "/usr/bin/chromium"))
EXPLORER = """\
import bioxr
from bioxr import widgets

cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
explorer = widgets.threshold_explorer(cube)
explorer"""
#: Seconds a notebook may take in the page (its own run time plus a few seconds).
NOTEBOOK_TIMEOUT = 300

# Is the notebook done? Kernel idle, no cell queued or running, and every code cell run (or one failed,
# after which JupyterLab runs no further cell).
_DONE = """() => {
    const w = window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    if (!k || k.status !== 'idle') return false;
    const cells = w.content.widgets.filter(c => c.model.type === 'code');
    if (cells.some(c => c.promptNode && c.promptNode.textContent.includes('*'))) return false;
    const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
    return failed || cells.every(c => c.model.executionCount !== null);
}"""
_KERNEL_IDLE = """() => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return k && k.status === 'idle';
}"""
_OUTPUTS = """() => window.jupyterapp.shell.currentWidget.content.widgets
    .filter(c => c.model.type === 'code')
    .map(c => ({count: c.model.executionCount, outputs: c.model.outputs.toJSON()}))"""


def _unavailable(message: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + "; under CI the browser tests must run.")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"JupyterLab did not answer within {timeout} s:\n{log.read_text()[-3000:]}")


class _Lab:
    """A running JupyterLab: its address, token and root folder."""

    def __init__(self, base: str, token: str, root: Path, log: Path):
        self.base, self.token, self.root, self.log = base, token, root, log
        self._workspaces = 0

    def url(self, relative: str) -> str:
        """The notebook's address in a fresh workspace (nothing restored from an earlier test)."""
        self._workspaces += 1
        return f"{self.base}/lab/workspaces/bioxr-{self._workspaces}/tree/{relative}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        """Ask the server to end every session's kernel; not waited for (the next test starts its own)."""
        headers = {"Authorization": f"token {self.token}"}
        with urllib.request.urlopen(urllib.request.Request(f"{self.base}/api/sessions", headers=headers)) as r:
            sessions = json.load(r)

        def delete(sid):
            req = urllib.request.Request(f"{self.base}/api/sessions/{sid}", method="DELETE", headers=headers)
            try:
                urllib.request.urlopen(req, timeout=30).close()
            except OSError:  # the server may be stopping at the end of the module
                pass

        for s in sessions:
            threading.Thread(target=delete, args=(s["id"],), daemon=True).start()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab server for the module, on a free port; stopped by its PID afterwards.

    Its root holds copies of ``notebooks/`` (Lab autosaves outputs into what it
    opens) with the repository's neighbours linked where the notebooks look for
    data (``../shared``, ``../../shared``).
    """
    try:
        import playwright  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    if not CHROMIUM.is_file():
        _unavailable(f"{CHROMIUM} not found (apt-get install chromium, or set BIOXR_CHROMIUM)")
    tmp = tmp_path_factory.mktemp("lab")
    root, home = tmp / "root", tmp / "jupyter"
    root.mkdir()
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    shared = REPO.parent / "shared"
    if shared.is_dir():
        (tmp / "shared").symlink_to(shared)
        (root / "shared").symlink_to(shared)
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no news or update checks: they would ask the network and pop up a notification over the page
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(EXPLORER)], metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}})
    nbformat.write(nb, root / "explorer.ipynb")
    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ)
    env.update({
        "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "JUPYTER_PLATFORM_DIRS": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])),
    })
    log = tmp / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--allow-root",
             "--LabApp.expose_app_in_browser=True", "--ServerApp.port_retries=0"],
            cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for_server(f"{base}/api/status?token={token}", proc, log)
        yield _Lab(base, token, root, log)
    finally:
        proc.send_signal(signal.SIGTERM)  # the server shuts its kernels down on the way out
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync"],
        )
        try:
            yield b
        finally:
            b.close()


class _Watched:
    """A page with every request that leaves the server, every console error and every page error recorded."""

    def __init__(self, browser, lab: _Lab, width: int, height: int):
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.outside, self.errors = [], []
        local = (lab.base, lab.base.replace("http:", "ws:"), "data:", "blob:", "about:")
        self.page.on("request", lambda r: None if r.url.startswith(local) else self.outside.append(r.url))
        self.page.on("websocket", lambda w: None if w.url.startswith(local) else self.outside.append(w.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open_and_run(self, url: str, timeout: float) -> float:
        """Open a notebook, run all cells once the kernel is idle; seconds from run to done."""
        self.page.goto(url)
        self.page.wait_for_function(_KERNEL_IDLE, timeout=90000)  # keys or commands sent earlier get lost
        start = time.monotonic()
        self.page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.page.wait_for_timeout(500)
        self.page.wait_for_function(_DONE, timeout=timeout * 1000, polling=500)
        return time.monotonic() - start

    def check_clean(self) -> None:
        assert not self.outside, f"requests that left 127.0.0.1: {self.outside}"
        assert not self.errors, f"console or page errors: {self.errors}"


@pytest.fixture()
def watched(browser, lab):
    made = []

    def make(width=1400, height=1100):
        made.append(_Watched(browser, lab, width, height))
        return made[-1]

    yield make
    for w in made:
        w.page.close()
    lab.shutdown_kernels()  # a kernel per test, not one per notebook left running


def _shots(tmp_path) -> Path:
    shots = Path(os.environ.get("BIOXR_SHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def _box(page, selector: str) -> dict:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return box


def _overlay(page) -> dict:
    """Where Vega drew the overlay in the page: the threshold rule's x, the operating point's centre, the labels."""
    rule = _box(page, ".bioxr-chart g.bioxr_threshold_rule_marks line")
    point = _box(page, ".bioxr-chart g.bioxr_operating_point_marks path")
    return {"rule_x": rule["x"] + rule["width"] / 2, "point_x": point["x"] + point["width"] / 2,
            "point_y": point["y"] + point["height"] / 2,
            "rule_label": page.locator(".bioxr-chart g.bioxr_threshold_label_marks text").first.text_content(),
            "point_label": page.locator(".bioxr-chart g.bioxr_operating_label_marks text").first.text_content(),
            "table": page.locator(".bioxr-rates").first.inner_text()}


def _table_rate(table: str, name: str) -> str:
    """The value column of a row of the rates table (as the page shows it)."""
    line = next(x for x in table.splitlines() if x.split("\t")[0].strip() == name)
    return line.split("\t")[1].strip()


def _beside(page) -> tuple[dict, dict, dict]:
    """The slider, the DET and the histogram (the explorer's first chart is the DET, beside the controls)."""
    slider, det = _box(page, ".widget-slider"), _box(page, ".bioxr-chart")
    hist = page.locator(".bioxr-chart").nth(1).bounding_box()
    return slider, det, hist


def test_explorer_overlay_moves_with_the_slider_in_jupyterlab(lab, watched, tmp_path):
    shots = _shots(tmp_path)
    w = watched(1400, 1100)
    page = w.page
    seconds = w.open_and_run(lab.url("explorer.ipynb"), timeout=120)
    try:
        page.locator(".bioxr-chart g.bioxr_operating_point_marks path").first.wait_for(timeout=60000)
    except Exception:
        w.check_clean()  # a chart that never draws: say why first (a CDN request, a script error)
        raise
    assert page.locator(".bioxr-chart svg").count() == 2, "both charts are Vega views in the page (SVG renderer)"
    before = _overlay(page)
    assert before["point_label"] == (f"FMR {_table_rate(before['table'], 'FMR')}, "
                                     f"FNMR {_table_rate(before['table'], 'FNMR')}")

    # the DET beside the slider and the rates table, 500 px or more, at 1400 and 1200 px (file browser
    # open); the histogram below, across the width
    for width in (1400, 1200):
        page.set_viewport_size({"width": width, "height": 1100})
        page.wait_for_timeout(400)
        slider, det, hist = _beside(page)
        assert det["x"] >= slider["x"] + slider["width"] - 1 and det["y"] < slider["y"] + slider["height"], \
            f"at {width} px the DET is not beside the slider: {slider}, {det}"
        assert det["width"] >= 500, f"at {width} px the DET is {det['width']:.0f} px wide (at least 500)"
        assert det["x"] + det["width"] <= width, f"at {width} px the DET runs off the window"
        table = _box(page, ".bioxr-rates table")
        assert table["x"] + table["width"] <= det["x"] + 1, f"at {width} px the rates table runs under the DET"
        assert hist["y"] >= det["y"] + det["height"] - 1 and hist["width"] >= 500, \
            f"at {width} px the histogram is not below the DET across the width: {det}, {hist}"
        page.locator(".jp-OutputArea-output").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / f"lab_explorer_{width}.png"))

    before = _overlay(page)
    page.locator(".widget-slider .noUi-handle").first.focus()
    for _ in range(8):
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(80)
    page.wait_for_function(
        "before => { const t = document.querySelector('.bioxr-chart g.bioxr_threshold_label_marks text');"
        " return t && t.textContent !== before; }", arg=before["rule_label"], timeout=30000)
    page.wait_for_timeout(300)
    after = _overlay(page)
    threshold = lambda label: float(label.split()[-1])
    assert threshold(after["rule_label"]) > threshold(before["rule_label"]), (before, after)
    assert after["rule_x"] > before["rule_x"] + 1, "a higher threshold: the rule moves right on the histogram"
    # stricter: fewer false matches (left) and more false non-matches (up) on the DET, or the same step
    assert after["point_x"] <= before["point_x"] + 0.5 and after["point_y"] <= before["point_y"] + 0.5, (before, after)
    assert (after["point_x"], after["point_y"]) != (before["point_x"], before["point_y"]), "the operating point moved"
    # what Vega draws is what the kernel computed: the label shows the table's rates
    assert after["point_label"] == (f"FMR {_table_rate(after['table'], 'FMR')}, "
                                    f"FNMR {_table_rate(after['table'], 'FNMR')}")
    assert f"At threshold {threshold(after['rule_label']):g}" in after["table"]
    chosen = page.locator(".widget-dropdown select").first.evaluate("s => s.options[s.selectedIndex].text")
    assert chosen.replace("\xa0", " ") == "custom (slider)", "a hand-moved slider leaves the named operating point"
    page.screenshot(path=str(shots / "lab_explorer_moved.png"))
    # one key press, from the browser to the kernel and back to Vega's redraw
    start = time.monotonic()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "before => document.querySelector('.bioxr-chart g.bioxr_threshold_label_marks text').textContent !== before",
        arg=after["rule_label"], timeout=30000, polling="raf")
    print(f"explorer notebook ran in {seconds:.1f} s; one key press redrawn in {1000 * (time.monotonic() - start):.0f} ms")
    w.check_clean()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_jupyterlab(notebook, lab, watched, tmp_path):
    w = watched(1400, 1000)
    seconds = w.open_and_run(lab.url(f"notebooks/{notebook.name}"), timeout=NOTEBOOK_TIMEOUT)
    w.page.wait_for_timeout(500)  # widget views and charts finish drawing
    cells = w.page.evaluate(_OUTPUTS)
    errors = [f"code cell {i + 1}: {o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(cells) for o in c["outputs"]
              if o.get("output_type") == "error"]
    assert not errors, errors
    assert all(c["count"] is not None for c in cells), "every code cell ran"
    shown = w.page.locator(".jp-Notebook").first.inner_text()
    for box in ("Error displaying widget", "Error loading script", "Traceback (most recent call last)"):
        assert box not in shown, f"{notebook.name} shows {box!r}"
    stderr = [o.get("text", "")[:200] for c in cells for o in c["outputs"] if o.get("name") == "stderr"]
    print(f"{notebook.name}: ran in {seconds:.1f} s; stderr: {stderr}")
    w.check_clean()
    if not os.environ.get("BIOXR_SHOTS"):
        return
    # the whole notebook, a window at a time (Lab draws the cells of the visible part)
    shots, panel = _shots(tmp_path), ".jp-NotebookPanel .jp-WindowedPanel-outer"
    # the content ends at the last cell (Lab pads the panel so the last cell can scroll to the top)
    height, step = w.page.evaluate(f"""() => {{
        const outer = document.querySelector('{panel}');
        const last = window.jupyterapp.shell.currentWidget.content.widgets.at(-1).node;
        return [last.getBoundingClientRect().bottom - outer.getBoundingClientRect().top + outer.scrollTop,
                outer.clientHeight]; }}""")
    for k in range(min(int(-(-height // max(step - 40, 200))), 40)):
        w.page.evaluate(f"t => {{ document.querySelector('{panel}').scrollTop = t; }}", k * (step - 40))
        w.page.wait_for_timeout(250)
        w.page.screenshot(path=str(shots / f"lab_{notebook.stem}_{k + 1:02d}.png"))
    w.check_clean()
