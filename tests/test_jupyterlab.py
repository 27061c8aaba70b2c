"""The threshold explorer live in JupyterLab, driven through a real (headless) Chromium.

A JupyterLab server starts on 127.0.0.1 with its config, data, runtime,
settings and workspace folders in a temporary directory; Playwright opens a
fresh notebook that builds the explorer, runs all cells through
``window.jupyterapp.commands`` once the kernel is idle, moves the slider with
the keyboard and checks that the rates table in the page changes: the
browser -> kernel -> browser round trip of the widget.

Needs the ``playwright`` package and Debian's Chromium at /usr/bin/chromium
(``apt-get install chromium``; never ``playwright install``). Outside CI a
missing browser skips the test with the reason; under CI (CI=true) it fails.
Set ``BIOXR_SHOTS`` to a folder to keep a screenshot (``lab_explorer.png``).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("BIOXR_CHROMIUM", "/usr/bin/chromium"))
NOTEBOOK = """\
import bioxr
from bioxr import widgets

cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
explorer = widgets.threshold_explorer(cube)
explorer"""


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


@pytest.fixture()
def lab(tmp_path):
    """A JupyterLab server on a free port, with a fresh notebook; stopped by its PID afterwards."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    if not CHROMIUM.is_file():
        _unavailable(f"{CHROMIUM} not found (apt-get install chromium, or set BIOXR_CHROMIUM)")
    root, home = tmp_path / "root", tmp_path / "jupyter"
    root.mkdir()
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no news or update checks: they would ask the network and pop up a notification over the page
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(NOTEBOOK)], metadata={
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
    log = tmp_path / "lab.log"
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
        yield f"{base}/lab/tree/explorer.ipynb?token={token}", log
    finally:
        proc.send_signal(signal.SIGTERM)  # the server shuts its kernels down on the way out
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def test_slider_moves_the_rates_table_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    url, log = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            # keys or commands sent before the kernel is idle get lost
            page.wait_for_function(
                """() => {
                    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
                    return k && k.status === 'idle';
                }""", timeout=60000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            table = page.locator(".bioxr-rates")
            table.wait_for(timeout=60000)
            before = table.inner_text()
            assert "FMR" in before and "FNMR" in before and "At threshold" in before
            assert page.locator(".bioxr-overlay").count() == 0  # the charts are images, not inline SVG
            assert page.locator(".widget-html img[src^='data:image/svg+xml']").count() == 2

            handle = page.locator(".widget-slider .noUi-handle").first
            handle.focus()
            for _ in range(5):
                page.keyboard.press("ArrowRight")
                page.wait_for_timeout(100)
            page.wait_for_function(
                "before => { const t = document.querySelector('.bioxr-rates'); return t && t.innerText !== before; }",
                arg=before, timeout=30000)
            after = table.inner_text()
            assert after != before
            threshold = lambda text: float(text.split("At threshold", 1)[1].split()[0])  # noqa: E731
            assert threshold(after) > threshold(before), (before, after)
            chosen = page.locator(".widget-dropdown select").first.evaluate("s => s.options[s.selectedIndex].text")
            chosen = chosen.replace("\xa0", " ")  # ipywidgets shows spaces in options as no-break spaces
            assert chosen == "custom (slider)", "a hand-moved slider leaves the named operating point"
            shots = Path(os.environ.get("BIOXR_SHOTS", tmp_path))
            shots.mkdir(parents=True, exist_ok=True)
            page.locator(".jp-OutputArea-output").first.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "lab_explorer.png"))
            assert not [e for e in errors if "bioxr" in e or "widget" in e.lower()], errors
        finally:
            browser.close()
