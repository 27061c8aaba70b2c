"""A report's printed pages: the print style sheet and a PDF printed by headless Chromium.

:func:`print_css` is the style sheet :func:`bioxr.report.notebook_to_html`
puts in every report page. It changes nothing on screen (every rule is
inside ``@media print`` or ``@page``); on paper it sets A4 pages with 16 mm
margins, the report's title and "Page n of N" in the footer (CSS page
margin boxes, which Chromium draws from version 131), keeps each chart,
table and figure whole on one page and each heading with what follows it,
hides nbconvert's prompts, collapsers and heading anchors, scales charts
down to fit the page and lets wide tables wrap in a smaller font.

:func:`html_to_pdf` prints such a page with Chromium's own
``--print-to-pdf`` (no extra Python package: Playwright, which drives the
same browser, is only a test dependency). :func:`find_chromium` looks for
the browser in ``$BIOXR_CHROMIUM``, then ``chromium``, ``chromium-browser``
and ``google-chrome`` on ``PATH``. While printing, the browser resolves no
host name and runs none of its background services, so the page (which is
self-contained) cannot reach the network.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PAGE_SIZE", "CHROMIUM_ENV", "CHROMIUM_NAMES", "PrintError", "page_title", "print_css", "find_chromium", "html_to_pdf"]

#: the paper of the printed report (CSS ``@page`` size)
PAGE_SIZE = "A4"
#: the variable naming the Chromium (or Chrome) executable to print with
CHROMIUM_ENV = "BIOXR_CHROMIUM"
#: executables looked for on ``PATH`` when ``$BIOXR_CHROMIUM`` is not set
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")

_PRINT_CSS = """
@page {
  size: __SIZE__;
  margin: 16mm 15mm 18mm 15mm;
  @bottom-left { content: __TITLE__; font: 8pt sans-serif; color: #555; }
  @bottom-right { content: "Page " counter(page) " of " counter(pages); font: 8pt sans-serif; color: #555; }
}
@media print {
  html, body { background: #fff !important; }
  body.jp-Notebook { padding: 0 !important; margin: 0 !important; }
  main { padding: 0 !important; margin: 0 !important; }
  /* no notebook chrome on paper: prompts, collapsers, heading anchors, empty cells */
  .jp-InputPrompt, .jp-OutputPrompt, .jp-InputArea-prompt, .jp-OutputArea-prompt, .jp-Collapser,
  a.anchor-link, .jp-mod-noOutputs.jp-mod-noInput { display: none !important; }
  .jp-Cell { padding: 0 !important; margin: 0 !important; }
  .jp-Cell-inputWrapper, .jp-Cell-outputWrapper, .jp-OutputArea, .jp-OutputArea-child,
  .jp-OutputArea-output, .jp-RenderedHTMLCommon, .jp-RenderedSVG, .jp-RenderedImage {
    overflow: visible !important; max-width: 100% !important; }
  .jp-OutputArea-output { padding-left: 0 !important; margin-left: 0 !important; }
  /* charts and figures: scaled to fit the page (an image taller than a page would be sliced), never split */
  img, svg, canvas { max-width: 100% !important; max-height: 235mm !important; height: auto !important;
    object-fit: contain; }
  .jp-RenderedSVG, .jp-RenderedImage, .vega-embed, figure, table, pre,
  .jp-OutputArea-child:has(img, svg, canvas) { break-inside: avoid !important; }
  /* text, and text around a table, may flow on to the next page (nbconvert keeps every output whole) */
  .jp-OutputArea-child:not(:has(img, svg, canvas, pre)) { break-inside: auto; }
  /* headings stay with what follows, also a heading alone in its cell */
  h1, h2, h3, h4, h5, h6 { break-after: avoid !important; break-inside: avoid !important; }
  .jp-MarkdownCell:has(.jp-RenderedMarkdown > :is(h1, h2, h3, h4, h5, h6):last-child) { break-after: avoid; }
  /* and where Chromium cannot honour break-after (the next block is a chart that does not fit), a heading
     needs 45 mm below it on its page or moves to the next: an invisible box that adds no height to the layout */
  h2::after, h3::after, h4::after { content: ""; display: block; height: 45mm; margin-bottom: -45mm; }
  p, li { orphans: 3; widows: 3; }
  /* wide tables wrap in a smaller font instead of running off the page */
  .jp-RenderedHTMLCommon table { font-size: 8pt !important; max-width: 100% !important; table-layout: auto; }
  .jp-RenderedHTMLCommon th, .jp-RenderedHTMLCommon td { padding: 2px 4px !important; overflow-wrap: break-word; }
  .jp-RenderedHTMLCommon td:last-child { overflow-wrap: anywhere; }
  .jp-RenderedHTMLCommon thead { display: table-header-group; }
  .jp-RenderedHTMLCommon tr { break-inside: avoid; }
  /* a long table flows on to the next page (its header repeated) rather than leave a page blank */
  .jp-RenderedHTMLCommon table:has(tbody > tr:nth-child(16)) { break-inside: auto !important; }
  pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
}
"""


def page_title(nb, fallback: str = "") -> str:
    """A notebook's title: its first level-1 Markdown heading, in a Markdown cell or a Markdown output.

    Examples
    --------
    >>> import nbformat
    >>> from bioxr.printing import page_title
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Verification **face_C**\\n\\nText")])
    >>> page_title(nb), page_title(nbformat.v4.new_notebook(), "verification")
    ('Verification face_C', 'verification')
    """
    for cell in nb.cells:
        texts = [cell.source] if cell.cell_type == "markdown" else [
            "".join(o.get("data", {}).get("text/markdown", "")) for o in cell.get("outputs", [])]
        for text in texts:
            found = re.search(r"^# +(.+?)\s*#*\s*$", text, re.M)
            if found:
                return re.sub(r"[*`]", "", found.group(1)).strip() or fallback
    return fallback


class PrintError(RuntimeError):
    """Chromium could not be found or could not print the page."""


def _css_string(text: str) -> str:
    """``text`` as a CSS string literal that cannot close the string or the ``<style>`` element."""
    out = []
    for ch in " ".join(str(text).split()):
        out.append(f"\\{ord(ch):x} " if ch in '"\\<>' or ord(ch) < 32 else ch)
    return '"' + "".join(out) + '"'


def print_css(title: str = "", *, size: str = PAGE_SIZE) -> str:
    """The print style sheet of a report page, with ``title`` in the page footer.

    Parameters
    ----------
    title : str
        Shown at the bottom left of every printed page.
    size : str
        A CSS page size: ``"A4"`` (the default), ``"letter"``, ``"A4 landscape"``...

    Returns
    -------
    str
        CSS for a ``<style>`` element; every rule is for print only.

    Examples
    --------
    >>> from bioxr.printing import print_css
    >>> css = print_css('Verification "face-C"')
    >>> "size: A4;" in css, 'content: "Verification \\\\22 face-C\\\\22 ";' in css
    (True, True)
    """
    return _PRINT_CSS.replace("__SIZE__", size).replace("__TITLE__", _css_string(title))


def find_chromium() -> str:
    """The Chromium (or Chrome) executable to print with.

    ``$BIOXR_CHROMIUM`` if set (it must name an executable file), else the
    first of :data:`CHROMIUM_NAMES` found on ``PATH``.

    Raises
    ------
    PrintError
        None was found; the one-line message says how to install one.
    """
    given = os.environ.get(CHROMIUM_ENV, "").strip()
    if given:
        found = shutil.which(given)
        if found is None:
            raise PrintError(f"${CHROMIUM_ENV} is {given!r}, which is not an executable file; point it at Chromium "
                             "or Google Chrome (Debian/Ubuntu: apt-get install chromium), or unset it.")
        return found
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise PrintError(f"printing a PDF needs Chromium or Google Chrome, and none was found ({', '.join(CHROMIUM_NAMES)} "
                     f"on PATH, or ${CHROMIUM_ENV}); install one (Debian/Ubuntu: apt-get install chromium) or set "
                     f"{CHROMIUM_ENV} to its path.")


#: Chromium's complaints about a missing D-Bus and the like: harmless, never shown
_NOISE = ("dbus", "d-bus", "bytes written to file", "unexpected operator", "fontconfig", "gpu", "sandbox",
          "devtools listening", "crashpad")


def _interesting(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    kept = [ln for ln in lines if not any(word in ln.lower() for word in _NOISE)]
    return " | ".join(kept[-3:])


def html_to_pdf(html_path, pdf_path, *, chromium: str | None = None, timeout: float = 120) -> Path:
    """Print a self-contained HTML page to PDF with headless Chromium.

    The page's own print style sheet (:func:`print_css`, in every report)
    sets the paper, margins and footer; Chromium's own header and footer
    (date, file address) are turned off. The browser runs with a fresh
    profile, resolves no host name and starts none of its background
    services; its D-Bus complaints are not shown.

    Parameters
    ----------
    html_path, pdf_path : str or path
    chromium : str, optional
        The executable; default :func:`find_chromium`.
    timeout : float
        Seconds allowed for the browser.

    Returns
    -------
    pathlib.Path
        ``pdf_path``.

    Raises
    ------
    PrintError
        No browser, or the browser failed or wrote no PDF.
    """
    html_path, pdf_path = Path(html_path).resolve(), Path(pdf_path).resolve()
    exe = chromium or find_chromium()
    with tempfile.TemporaryDirectory(prefix="bioxr-chromium-") as profile:
        args = [
            exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
            "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
            "--disable-domain-reliability", "--disable-breakpad", "--metrics-recording-only",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--no-pdf-header-footer", f"--print-to-pdf={pdf_path}",
            html_path.as_uri(),
        ]
        env = {**os.environ, "DBUS_SESSION_BUS_ADDRESS": "disabled:"}
        try:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env=env, start_new_session=True)
        except OSError as err:
            raise PrintError(f"could not start {exe} to print the PDF: {err.strerror or err}.") from None
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise PrintError(f"{exe} did not finish printing {html_path.name} within {timeout:g} s.") from None
        finally:
            _kill(proc)  # its helper processes, should any outlive it
    ok = pdf_path.is_file() and pdf_path.read_bytes()[:5] == b"%PDF-"
    if proc.returncode != 0 or not ok:
        detail = _interesting(stderr)
        raise PrintError(f"{exe} could not print {html_path.name} to PDF (exit status {proc.returncode})"
                         + (f": {detail}" if detail else "."))
    return pdf_path


def _kill(proc: subprocess.Popen) -> None:
    """End the browser's process group (only the one this module started)."""
    if os.name == "nt":
        if proc.poll() is None:
            proc.kill()
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait(timeout=10)
