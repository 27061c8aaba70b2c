"""The PDF beside the HTML: printed by headless Chromium, A4, no chart split, headings kept with what follows.

Needs Chromium (``$BIOXR_CHROMIUM``, or ``chromium``, ``chromium-browser`` or
``google-chrome`` on PATH; Debian: ``apt-get install chromium``) and
``pypdf`` to read the pages back. Outside CI a missing one skips these tests
with the reason; under CI (CI=true) it is a failure.
"""

from __future__ import annotations

import base64
import html
import http.server
import os
import re
import threading
import unicodedata
import xml.etree.ElementTree as ET

import nbformat
import pytest

from bioxr import __main__ as cli
from bioxr import printing, report

A4 = (595.0, 842.0)  # points; Chromium writes 594.96 x 841.92


def _unavailable(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason + "; under CI it must be installed.")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium() -> str:
    try:
        return printing.find_chromium()
    except printing.PrintError as err:
        _unavailable(str(err))


@pytest.fixture(scope="module")
def pypdf():
    try:
        import pypdf
    except ImportError:
        _unavailable("pypdf is not installed (pip install pypdf)")
    return pypdf


def _flat(text: str) -> str:
    """NFKC (ligatures such as 'fi' undone) without whitespace: how text is compared with the PDF's."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", html.unescape(text)))


def page_texts(pypdf, path) -> list[str]:
    return [p.extract_text() for p in pypdf.PdfReader(str(path)).pages]


def text_positions(pypdf, path) -> list[list[tuple[float, float, str]]]:
    """(x, y, text) of every text run, page by page, in PDF points from the bottom left."""
    pages = []
    for page in pypdf.PdfReader(str(path)).pages:
        runs = []

        def visit(text, cm, tm, font, size, runs=runs):
            if text.strip():
                x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
                y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                runs.append((x, y, text.strip()))

        page.extract_text(visitor_text=visit)
        pages.append(runs)
    return pages


def printed_size(pypdf, path, start: str) -> float:
    """The font size (points, as printed) of the first text run starting with ``start``.

    Chromium shrinks the whole document when anything is wider than the
    paper, so body text printed smaller than its CSS size (10.5 pt) means
    something ran wider than the page.
    """
    for page in pypdf.PdfReader(str(path)).pages:
        found = []

        def visit(text, cm, tm, font, size, found=found):
            if text.strip().startswith(start):
                found.append(size * abs(tm[2] * cm[1] + tm[3] * cm[3]))

        page.extract_text(visitor_text=visit)
        if found:
            return found[0]
    raise AssertionError(f"no text starting with {start!r} in {path}")


def chart_texts(page: str) -> list[list[str]]:
    """The text of each Vega chart on an HTML page (SVG images and inline SVG), one list per chart."""
    svgs = [base64.b64decode(b).decode("utf-8")
            for b in re.findall(r"src=\"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)\"", page)]
    svgs += re.findall(r"<svg\b.*?</svg>", page, re.S)
    charts = []
    for svg in svgs:
        if 'class="marks"' not in svg[:400]:
            continue  # an icon, not a chart
        root = ET.fromstring(svg)
        texts = ["".join(el.itertext()).strip() for el in root.iter() if el.tag.endswith("}text")]
        charts.append([t for t in texts if t])
    return charts


def split_charts(charts: list[list[str]], pages: list[str]) -> list[list[str]]:
    """The charts no single page holds all the text of (a split chart has its title and axes on two pages)."""
    flat = [_flat(p) for p in pages]
    return [texts for texts in charts if not any(all(_flat(t) in p for t in texts) for p in flat)]


def headings(page: str) -> list[str]:
    return [re.sub(r"<[^>]+>|¶", "", h).strip() for h in re.findall(r"<h[1-3]\b[^>]*>(.*?)</h[1-3]>", page, re.S)]


def stranded_headings(pages: list[str], titles: list[str]) -> list[tuple[int, str]]:
    """(page number, heading) for each page whose last line of body text is a heading."""
    found = []
    for number, text in enumerate(pages, start=1):
        lines = [ln for ln in text.splitlines() if ln.strip() and not re.fullmatch(r"Page \d+ of \d+.*", ln.strip())]
        if lines and number < len(pages) and _flat(lines[-1]) in {_flat(t) for t in titles}:
            found.append((number, lines[-1]))
    return found


# ------------------------------------------------------- a real report ---


@pytest.fixture(scope="module")
def printed(rendered, chromium, pypdf):
    """The verification report on the simulator (small): the suite's shared render, which also prints its PDF."""
    from conftest import PRINTED

    out = rendered(*PRINTED)
    return out, rendered.process(*PRINTED)


def test_the_pdf_is_written_beside_the_html(printed, pypdf):
    out, proc = printed
    pdf = out / "verification.pdf"
    assert f"PDF report:        {pdf}" in proc.stdout
    assert pdf.read_bytes()[:5] == b"%PDF-"
    reader = pypdf.PdfReader(str(pdf))
    box = reader.pages[0].mediabox
    assert abs(float(box.width) - A4[0]) < 2 and abs(float(box.height) - A4[1]) < 2, "A4 paper"
    page = (out / "verification.html").read_text(encoding="utf-8")
    sections = len(re.findall(r"<h2\b", page))
    assert 3 <= len(reader.pages) <= sections + 2, (len(reader.pages), sections)  # about one page a section
    texts = page_texts(pypdf, pdf)
    assert all(f"Page {k} of {len(texts)}" in t for k, t in enumerate(texts, start=1)), "page numbers in the footer"
    assert all("Verification report" in t for t in texts), "the title in the footer"
    assert not any(re.search(r"(In|Out)\s*\[\s*\d*\s*\]:", t) for t in texts), "no notebook prompts"
    assert printed_size(pypdf, pdf, "The scores come") > 10, "nothing is wider than the paper (the page is not shrunk)"


def test_no_chart_is_split_across_pages(printed, pypdf):
    out, _ = printed
    charts = chart_texts((out / "verification.html").read_text(encoding="utf-8"))
    assert len(charts) >= 4 and all(len(c) >= 5 for c in charts), "DET, histogram, rates, DET by weather"
    pages = page_texts(pypdf, out / "verification.pdf")
    assert split_charts(charts, pages) == []
    # the check can fail: a chart's text spread over two pages is found
    assert split_charts(charts, [t[: len(t) // 2] for t in pages] + [t[len(t) // 2:] for t in pages]) != []


def test_no_heading_ends_a_page(printed, pypdf):
    out, _ = printed
    titles = headings((out / "verification.html").read_text(encoding="utf-8"))
    assert len(titles) >= 8
    assert stranded_headings(page_texts(pypdf, out / "verification.pdf"), titles) == []


def test_no_tcp_warning_and_no_browser_noise(printed):
    _, proc = printed
    assert "without encryption" not in proc.stderr, "the kernel runs over IPC"
    assert "dbus" not in proc.stderr.lower() and "bus.cc" not in proc.stderr


# ------------------------------------------------------- the print layout ---


def _svg(width: int, height: int, top: str, bottom: str) -> str:
    """A Vega-like SVG: a title at the top, a frame, an axis title at the bottom."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="marks" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}"><text x="10" y="24" font-size="18">{top}</text>'
            f'<rect x="40" y="40" width="{width - 60}" height="{height - 100}" fill="none" stroke="#333"/>'
            f'<text x="{width // 2}" y="{height - 20}" font-size="14" text-anchor="middle">{bottom}</text></svg>')


def _output(mime: str, data: str):
    return nbformat.v4.new_output("display_data", data={mime: data})


@pytest.fixture(scope="module")
def layout(tmp_path_factory, chromium, pypdf):
    """A made-up report: a heading near a page's foot before a chart, a chart taller than a page, a wide table."""
    folder = tmp_path_factory.mktemp("layout")
    wide = "".join(f"<th>false non-match rate at target {k}</th>" for k in range(8)) + "<th>file</th>"
    row = "".join(f"<td>{k * 12345.891 + 10000:,.3f}</td>" for k in range(8))
    row += "<td>/a/long/path/to/the/score/file/of/this/laboratory/and/its/system/under/test/scores.csv</td>"
    cells = [
        nbformat.v4.new_markdown_cell("# Print layout check\n\n" + "Filler text. " * 20),
        nbformat.v4.new_code_cell(outputs=[_output("text/html", '<div style="height:190mm">tall filler</div>')]),
        nbformat.v4.new_markdown_cell("## Heading near the foot of a page"),
        nbformat.v4.new_code_cell(outputs=[_output("image/svg+xml", _svg(600, 560, "Chart after the heading",
                                                                          "Its axis title"))]),
        nbformat.v4.new_markdown_cell("## A chart taller than a page"),
        nbformat.v4.new_code_cell(outputs=[_output("image/svg+xml", _svg(600, 1600, "Tall chart title",
                                                                          "Tall chart axis title"))]),
        nbformat.v4.new_markdown_cell("## A wide table"),
        nbformat.v4.new_code_cell(outputs=[_output("text/html", f"<table><thead><tr>{wide}</tr></thead>"
                                                                f"<tbody><tr>{row}</tr><tr>{row}</tr></tbody></table>")]),
    ]
    for cell in cells:
        if cell.cell_type == "code":
            cell.metadata["tags"] = []
    nb = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(nb, folder / "layout.ipynb")
    page = report.notebook_to_html(folder / "layout.ipynb", folder / "layout.html")
    pdf = printing.html_to_pdf(page, folder / "layout.pdf", chromium=chromium)
    return page, pdf


def test_a_heading_moves_with_the_chart_it_introduces(layout, pypdf):
    _, pdf = layout
    texts = page_texts(pypdf, pdf)
    (where,) = [k for k, t in enumerate(texts) if "Heading near the foot" in t]
    assert "Chart after the heading" in texts[where] and "tall filler" not in texts[where]


def test_a_chart_taller_than_a_page_is_shrunk_to_one_page(layout, pypdf):
    page, pdf = layout
    charts = chart_texts(page.read_text(encoding="utf-8"))
    assert ["Tall chart title", "Tall chart axis title"] in charts
    assert split_charts(charts, page_texts(pypdf, pdf)) == []


def test_a_wide_table_stays_on_the_paper(layout, pypdf):
    _, pdf = layout
    runs = [run for page in text_positions(pypdf, pdf) for run in page]
    table = [(x, text) for x, y, text in runs if re.search(r"target|^[\d,.]+$|/", text)]
    assert "target7" in _flat(" ".join(page_texts(pypdf, pdf))), "the header of the last numeric column is printed"
    assert "/a/long/path/to/the/score/file" in _flat(" ".join(page_texts(pypdf, pdf))), "a long path wraps"
    assert all(0 <= x <= A4[0] - 30 for x, _ in table), max(table)
    assert printed_size(pypdf, pdf, "Filler text") > 10, "the table fits without shrinking the whole page"


def test_the_page_looks_the_same_on_screen(layout):
    """Every added rule is for print: the style sheet holds nothing outside @page and @media print."""
    css = printing.print_css("t")
    outside = re.sub(r"@page\s*\{(?:[^{}]|\{[^{}]*\})*\}|@media print\s*\{(?:[^{}]|\{[^{}]*\})*\}|/\*.*?\*/", "", css,
                     flags=re.S)
    assert outside.strip() == ""
    page, _ = layout
    assert page.read_text(encoding="utf-8").count('<style id="bioxr-print">') == 1


def test_printing_fetches_nothing(tmp_path, chromium):
    """Chromium resolves no address while printing, not even a literal 127.0.0.1."""
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        page = tmp_path / "p.html"
        page.write_text(f'<p>offline</p><img src="{base}/a.png"><link rel="stylesheet" href="{base}/b.css">'
                        f'<img src="http://localhost:{server.server_address[1]}/c.png">'
                        f'<script>fetch("{base}/d")</script>')
        printing.html_to_pdf(page, tmp_path / "p.pdf", chromium=chromium)
    finally:
        server.shutdown()
        server.server_close()
    assert (tmp_path / "p.pdf").read_bytes()[:5] == b"%PDF-"
    assert hits == []


# ------------------------------------------------------- run_report ------


def _fake_run(path, nb_path, values, *, cwd, **kwargs):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Fake report\n\nA paragraph.")])
    nb.metadata["papermill"] = {"output_path": str(nb_path)}
    nbformat.write(nb, nb_path)


def test_pdf_without_html_and_a_failed_print(monkeypatch, tmp_path, chromium):
    monkeypatch.setattr(report, "_execute", _fake_run)
    files = report.run_report("verification", tmp_path / "only-pdf", html=False, pdf=True)
    assert files.html is None and files.pdf == tmp_path / "only-pdf" / "verification.pdf"
    assert sorted(p.name for p in files.pdf.parent.iterdir()) == [".bioxr-report", "verification.ipynb",
                                                                   "verification.pdf"]
    files = report.run_report("verification", tmp_path / "no-pdf")
    assert files.pdf is None and not (tmp_path / "no-pdf" / "verification.pdf").exists()

    def broken(*args, **kwargs):
        raise printing.PrintError("chromium could not print verification.html to PDF (exit status 1).")

    monkeypatch.setattr(report, "html_to_pdf", broken)
    with pytest.raises(report.ReportError, match=r"could not be printed: .*exit status 1.*is as it was"):
        report.run_report("verification", tmp_path / "no-pdf", pdf=True, overwrite=True)
    assert sorted(p.name for p in (tmp_path / "no-pdf").iterdir()) == [".bioxr-report", "verification.html",
                                                                       "verification.ipynb"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no staged folder left"


def test_missing_chromium_is_one_line_before_any_kernel(monkeypatch, capsys, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("a kernel was started although no Chromium can print the PDF")

    monkeypatch.setattr(report, "_execute", refuse)
    monkeypatch.delenv(printing.CHROMIUM_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert cli.main(["report", "verification", "--pdf", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bioxr report: error: --pdf") and err.count("\n") == 1, err
    assert "apt-get install chromium" in err and printing.CHROMIUM_ENV in err
    monkeypatch.setenv(printing.CHROMIUM_ENV, str(tmp_path / "no-such-chromium"))
    with pytest.raises(report.UsageError, match=r"BIOXR_CHROMIUM is '.*no-such-chromium', which is not an executable"):
        report.run_report("verification", tmp_path / "out", pdf=True)
    assert not (tmp_path / "out").exists()
