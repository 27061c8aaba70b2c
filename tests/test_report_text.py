"""What the reports say: sections the data support, sentences true for the data, a lab's header and references.

Every template is rendered once per session through the shared ``rendered``
fixture (tests/conftest.py): on the simulator at a small size, and the
score templates on each BSSR1 file (face-C.csv with -1 as "not compared",
finger-left.csv; the comparison report on the two together, the same
subjects). The narrative text is read out of the HTML and checked for
"nan", empty sections, internal names (seed files, METHODS.md, snake_case
table headers), numbers printed with machine precision, and statements the
data contradict. :func:`problems` is also used by tests/test_report.py on
its own score-file renders.
"""

from __future__ import annotations

import html as _html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import bioxr
from bioxr import narrative, references, report
from conftest import SMALL_REPORT

REPO = Path(__file__).resolve().parents[1]
TEMPLATES = sorted(p.stem for p in (REPO / "templates").glob("*.ipynb"))
#: (template, data) of every score report: on the simulator and on each BSSR1 file
SCORE_RENDERS = [(t, d) for t in ("verification", "identification", "certification") for d in ("face", "finger")]
SCORE_RENDERS += [("comparison", "face-finger")]
ALL_RENDERS = [(t, "simulator") for t in TEMPLATES] + SCORE_RENDERS
BSSR1 = {"face", "finger", "face-finger"}


# ------------------------------------------------------------ reading a page


def _visible(page: str) -> str:
    """The HTML body without styles, scripts and embedded images."""
    body = page[page.find("<body"):]
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", body, flags=re.S | re.I)
    return re.sub(r"<svg\b.*?</svg>", "<img>", body, flags=re.S | re.I)


def text_of(page: str) -> str:
    """The words a reader sees, one space between them."""
    body = _visible(page)
    body = re.sub(r"<img\b[^>]*>", " ", body)
    return re.sub(r"\s+", " ", _html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


def sections(page: str) -> list[tuple[str, str]]:
    """(heading, what follows it up to the next heading) for every heading; images count as content."""
    body = _visible(page)
    parts = re.split(r"(<h[1-6]\b[^>]*>.*?</h[1-6]>)", body, flags=re.S | re.I)
    out = []
    for k in range(1, len(parts), 2):
        head = re.sub(r"\s+", " ", _html.unescape(re.sub(r"<[^>]+>", " ", parts[k]))).replace("¶", "").strip()
        follow = parts[k + 1] if k + 1 < len(parts) else ""
        content = re.sub(r"<img\b[^>]*>", " [image] ", follow)
        content = re.sub(r"\s+", " ", _html.unescape(re.sub(r"<[^>]+>", " ", content))).strip()
        out.append((head, content))
    return out


def table_headers(page: str) -> list[str]:
    return [re.sub(r"\s+", " ", _html.unescape(re.sub(r"<[^>]+>", "", h))).strip()
            for h in re.findall(r"<th\b[^>]*>(.*?)</th>", _visible(page), flags=re.S | re.I)]


INTERNAL = [r"\bseeds?[ /_]?0\d\d", r"METHODS\.md", r"\bsection \d", r"\.txt\b"]


def problems(page: str) -> list[str]:
    """What no report may print, whatever its data: nan, empty sections, internal names, machine-precision numbers."""
    found = []
    text = text_of(page)
    for m in re.finditer(r"\bnan\b|\bNaN\b|\binf%|\bNone\b(?! of)", text):
        found.append(f"prints {m.group()!r}: ...{text[max(0, m.start() - 80):m.end() + 40]}...")
    for head, content in sections(page):
        if not content:
            found.append(f"empty section {head!r}")
    for pattern in INTERNAL:
        for m in re.finditer(pattern, text, flags=re.I):
            found.append(f"internal name {m.group()!r}: ...{text[max(0, m.start() - 80):m.end() + 40]}...")
    for h in table_headers(page):
        if re.fullmatch(r"[a-z]+(?:_[a-z0-9]+)+", h):
            found.append(f"snake_case table header {h!r}")
    for m in re.finditer(r"(?<![\w.])-?\d+\.\d{7,}(?![\w])", text):
        found.append(f"a number with machine precision {m.group()!r}")
    for cell in re.findall(r"<td\b[^>]*>(.*?)</td>", _visible(page), flags=re.S | re.I):
        cell = _html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
        if re.fullmatch(r"-?[\d,]+\.0", cell):
            found.append(f"a count or rank printed as a float {cell!r}")
    return found


def provenance_rows(page: str) -> dict:
    """The provenance table's rows: {section: {name: value}} (parameters by their code name)."""
    table = re.search(r"<table class=[\"']bioxr-provenance[\"']>(.*?)</table>", page, flags=re.S).group(1)
    rows, section = {}, None
    for head, name, value in re.findall(r"<tr><th[^>]*>(.*?)</th><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td></tr>", table):
        section = head or section
        rows.setdefault(section, {})[_html.unescape(re.sub(r"<[^>]+>", "", name))] = _html.unescape(value)
    return rows


def page_of(out: Path, template: str) -> str:
    return (out / f"{template}.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def page(rendered, request):
    template, data = request.param
    return template, data, page_of(rendered(template, data), template)


def _ids(pairs):
    return [f"{t}-{d}" for t, d in pairs]


# ------------------------------------------------------------ every report


@pytest.mark.parametrize("page", ALL_RENDERS, ids=_ids(ALL_RENDERS), indirect=True)
def test_no_nan_empty_section_internal_name_or_raw_number(page):
    template, data, html = page
    assert problems(html) == []


@pytest.mark.parametrize("page", ALL_RENDERS, ids=_ids(ALL_RENDERS), indirect=True)
def test_a_labs_header_then_the_summary_table_first(page):
    template, data, html = page
    parts = sections(html)
    title = {p.name: p for p in report.template_parameters(template)}["title"].default
    assert parts[0][0] == title, parts[0][0]
    top = parts[0][1]
    assert "System under test: Matcher <X> 1.0" in top and "Laboratory: Test Lab & Co" in top, top
    assert f"Date: {SMALL_REPORT['date']}" in top
    assert "Data: " in top
    assert "<X>" not in _visible(html), "the system's name is escaped"
    assert parts[1][0].startswith("Summary"), [h for h, _ in parts[:3]]
    headings = [h for h, _ in parts]
    assert headings[-1] == "References" and "Provenance" in headings


@pytest.mark.parametrize("page", ALL_RENDERS, ids=_ids(ALL_RENDERS), indirect=True)
def test_references_are_written_out(page):
    template, data, html = page
    cited = dict(sections(html))["References"]
    assert re.search(r"\b(19|20)\d\d\b", cited) and "," in cited
    body = text_of(html).replace(cited, "")
    listed = [key for key, work in references.WORKS.items() if work.citation.replace("*", "")[:40] in cited]
    assert listed, cited
    for key in listed:  # every work listed is cited in the text
        assert any(m in body for m in references.WORKS[key].mentions), f"{key} is listed but not cited"
    for key, work in references.WORKS.items():  # every work the text names is listed
        if key not in listed and work.short in body:
            raise AssertionError(f"{work.short} is cited but not listed")


@pytest.mark.parametrize("page", ALL_RENDERS, ids=_ids(ALL_RENDERS), indirect=True)
def test_provenance_lists_only_what_applies(page):
    template, data, html = page
    rows = provenance_rows(html)
    params = {p.name: p for p in report.template_parameters(template)}
    simulator = {n for n, p in params.items() if p.help.startswith("simulator")}
    reader = {n for n, p in params.items() if p.help.startswith(("score file", "long files"))}
    used, data_rows = set(rows["Parameters"]), rows["Data"]
    if data in BSSR1:
        assert "sha256" in data_rows and not simulator & used, simulator & used
        assert "simulator" not in data_rows and not data_rows["source"].startswith("simulated")
    else:
        assert "sha256" not in data_rows and not reader & used, reader & used
        assert data_rows["source"] == f"simulated, seed {rendered_seed(template)}"
    assert {"numpy", "bioxr", "python"} <= set(rows["Versions"])
    assert rows["Parameters"]["date"] == SMALL_REPORT["date"]


def rendered_seed(template: str) -> int:
    from conftest import SMALL_SIMULATOR

    return SMALL_SIMULATOR.get(template, {}).get("seed", SMALL_REPORT["seed"])


# ------------------------------------------------------------ true for the data


@pytest.mark.parametrize("page", [("verification", d) for d in ("simulator", "face", "finger")],
                         ids=["simulator", "face", "finger"], indirect=True)
def test_verification_says_what_the_attempts_per_subject_allow(page, rendered):
    template, data, html = page
    text = text_of(html)
    cube = _cube(rendered, template, data)
    m = float(bioxr.correlation.fnmr_interval(cube, 0.0).m0)
    if m <= 1:
        assert "One attempt per subject" in text and "independent by design" in text
        assert "intra-class correlation" not in text and "Attempts of one subject are correlated" not in text
    else:
        assert re.search(r"intra-class correlation -?\d\.\d{3}, so they are worth about [\d,]+ independent", text)
    assert ("By weather condition" in dict(sections(html))) == narrative.has_cofactor(cube, "weather", "collection")
    hardest = dict(sections(html))["The hardest probes"]
    assert "mate's rank" in hardest and not re.search(r"\b\d+\.0\b", hardest)


@pytest.mark.parametrize("page", [("identification", d) for d in ("simulator", "face", "finger")],
                         ids=["simulator", "face", "finger"], indirect=True)
def test_identification_shows_open_set_only_with_impostor_searches(page, rendered):
    template, data, html = page
    text = text_of(html)
    cube = _cube(rendered, template, data)
    outcome = bioxr.outcomes.outcomes(cube)
    mode, note = narrative.open_set_plan(outcome, "auto", fpir_target=0.01)
    heads = dict(sections(html))
    assert ("Open set: FNIR against FPIR" in heads) == (mode is not None)
    if mode is None:
        assert "closed-set test" in text and "impostor searches return a candidate" not in text
    assert "carry no interval" not in text
    if data == "finger":
        assert not re.search(r"\bfaces?\b", text), "a fingerprint report speaks of faces"
    assert ("By weather condition" in heads) == narrative.has_cofactor(outcome, "weather", "collection")
    if data == "face":  # one reference column never compared: its subject is not enrolled
        assert "The gallery holds 516 enrolled subjects" in text and "516 are closed-set searches" in text
        assert "holding the sentinel -1" in text


def test_design_provenance_names_each_iterations_design(rendered):
    html = page_of(rendered("design"), "design")
    design = provenance_rows(html)["Conventions"]["design"]
    said = {label: value for part in design.split("; ") for value in [part.rsplit(": ", 1)[1]]
            for label in part.rsplit(": ", 1)[0].split(", ")}
    for k in (1, 2, 3, 4):
        study = xr.open_dataset(rendered("design") / f"design_study{k}.nc")
        assert said[f"iteration {k}"] == study.attrs["design"], design
    assert said["iteration 1"] != said["iteration 4"]


def test_comparison_on_bssr1_names_both_files(rendered):
    html = page_of(rendered("comparison", "face-finger"), "comparison")
    text = text_of(html)
    assert "face-C.csv (face-C) and finger-left.csv (finger-left)" in text
    data_rows = provenance_rows(html)["Data"]
    assert {"sha256", "sha256 2"} <= set(data_rows) and data_rows["sha256"] != data_rows["sha256 2"]
    assert data_rows["source"] == "score file face-C.csv" and data_rows["source 2"] == "score file finger-left.csv"


def _cube(rendered, template, data):
    import bioxr.io

    values = rendered.parameters(template, data)
    if data == "simulator":
        cube = bioxr.simulate.photohead(n_subjects=values["n_subjects"], n_collections=values["n_collections"],
                                        seed=values["seed"])
        return cube.where(cube.reference_image == cube.image)
    return bioxr.io.read_scores(values["scores"], missing=report.parse_number(values.get("missing", "")))


# ------------------------------------------------------------ the library's sentences (fast)


def test_attempts_sentence_follows_the_attempts_per_subject():
    one = bioxr.simulate.gaussian(n_subjects=40, n_samples=1, seed=0)
    text = narrative.attempts_sentence(bioxr.correlation.fnmr_interval(one, 3.0))
    assert text.startswith("One attempt per subject (40 mated attempts of 40 subjects): attempts are independent")
    assert "nan" not in text and "correlation" not in text
    several = bioxr.simulate.gaussian(n_subjects=40, n_samples=4, seed=0)
    icc = bioxr.correlation.fnmr_interval(several, 3.0)
    text = narrative.attempts_sentence(icc)
    assert f"intra-class correlation {float(icc.rho):.3f}" in text and "160 mated attempts of 40 subjects" in text
    none = narrative.attempts_sentence(bioxr.correlation.fnmr_interval(several, -50.0))  # nothing rejected
    assert "cannot be estimated" in none and "no attempt rejected" in none and "nan" not in none


def test_open_set_plan_needs_enough_non_enrolled_probes():
    cube = bioxr.simulate.gaussian(n_subjects=30, seed=0)
    out = bioxr.outcomes.outcomes(cube)
    mode, note = narrative.open_set_plan(out, "auto", fpir_target=0.01)
    assert mode is None and note.startswith("Every probe's subject is enrolled") and "100" in note
    assert narrative.open_set_plan(out, "all")[0] == "all"
    gone = bioxr.outcomes.outcomes(cube.where(~cube.reference_subject.isin(["s0000", "s0001", "s0002"])))
    mode, note = narrative.open_set_plan(gone, "auto", fpir_target=0.01)
    assert mode is None and note.startswith("Only 6 probes of 60 have no enrolled mate")
    assert narrative.open_set_plan(gone, "auto", fpir_target=0.2)[0] == "non-enrolled"  # 6 >= 1/0.2
    assert narrative.open_set_plan(out, "non-enrolled")[0] is None  # asked for, but there are none


def test_has_cofactor_wants_two_values_on_the_dimension():
    cube = bioxr.simulate.photohead(n_subjects=2, n_collections=48, seed=0)
    assert narrative.has_cofactor(cube, "weather", "collection")
    assert not narrative.has_cofactor(cube.isel(collection=slice(0, 1)), "weather", "collection")
    assert not narrative.has_cofactor(bioxr.simulate.gaussian(n_subjects=3, seed=0), "weather", "collection")


def test_header_escapes_and_dates():
    top = narrative.header({"title": "A *b*", "system": "<s>", "lab": "", "data_description": "", "date": ""},
                           data="the file x")
    assert top.startswith("# A \\*b\\*\n") and "&lt;s&gt;" in top and "Laboratory" not in top
    assert f"**Date:** {pd.Timestamp.today().date().isoformat()}" in top
    with pytest.raises(report.ParameterError, match="parameter 'date' must be an ISO date"):
        narrative.report_date("30/11/2026")


def test_public_text_drops_internal_references():
    for raw in ("subject bootstrap by sufficient statistics (METHODS.md section 7)",
                "Micheals & Boult (seeds/000); METHODS.md section 3", "as in seed 000_3245829b7fb40f53.txt"):
        cleaned = narrative.public_text(raw)
        assert "METHODS" not in cleaned and "seed" not in cleaned and cleaned == cleaned.strip(), cleaned


def test_hardest_probes_headers_and_ranks_for_people():
    out = bioxr.outcomes.outcomes(bioxr.simulate.photohead(n_subjects=3, n_collections=6, seed=1))
    text, table = narrative.hardest_probes(out, n=5)
    assert "mated_rank" not in table.columns and "mate's rank" in table.columns and table.index.name == "subject"
    ranks = out.mated_rank.values[np.isfinite(out.mated_rank.values)]
    assert all(not r.endswith(".0") for r in table["mate's rank"])
    assert narrative.format_rank(16.0) == "16" and narrative.format_rank(2.5) == "2.5"
    assert max(float(r) for r in table["mate's rank"]) == ranks.max()
    md = narrative.markdown_table(table)
    assert md.splitlines()[0].startswith("| subject |") and "nonmated_best" not in md


def test_provenance_conventions_per_result_and_parameters_that_apply():
    cube = bioxr.simulate.photohead(n_subjects=4, n_collections=4, seed=0)
    a, b = xr.Dataset(attrs={"design": "stratified"}), xr.Dataset(attrs={"design": "cluster"})
    p = narrative.provenance("design", {"seed": 1}, cube=cube, results={"iteration 1": a, "iteration 2": b})
    assert p.conventions["design"] == "iteration 1: stratified; iteration 2: cluster"
    same = narrative.provenance("design", {"seed": 1}, results=[a, xr.Dataset(attrs={"design": "stratified"})])
    assert same.conventions["design"] == "stratified"
    sim = narrative.provenance("verification", {"seed": 1, "scores": ""})
    assert "n_subjects" in sim.parameters and "missing" not in sim.parameters and "scores" not in sim.parameters
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", sim.parameters["date"])
    shown = sim._repr_html_()
    assert "<code>eer_method</code>" in shown and ">Parameters<" in shown


def test_references_are_full_citations_with_a_clear_error_for_an_unknown_key():
    text = references.references(["micheals-boult", "iso-19795-1", "schuckers-2010", "schuckers-2022"])
    assert "R. J. Micheals and T. E. Boult, *Improving Variance Estimation in Biometric Systems*" in text
    assert "ISO/IEC 19795-1:2021" in text and "Annex F" in text
    assert "*Computational Methods in Biometric Authentication" in text and "2010" in text
    assert "Purnapatra" in text and "Across Demographic Groups" in text
    assert [line[:2] for line in text.splitlines()] == ["1.", "2.", "3.", "4."]
    with pytest.raises(KeyError, match="no cited work 'smith'"):
        references.cite("smith")
