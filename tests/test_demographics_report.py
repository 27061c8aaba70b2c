"""The demographics report, rendered once per (data, parameters) for the whole module: on the simulator with
groups and on a comparison list read from a score file with group columns. Its text is checked against the
library's numbers on the same data, for nan, internal file names, empty sections and outside requests."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest

import bioxr
from bioxr import demographics as dm

pytestmark = [pytest.mark.filterwarnings("ignore::bioxr._core.errors.FewReplicatesWarning"),
              pytest.mark.filterwarnings("ignore::bioxr.demographics.SmallGroupWarning")]

COLUMNS = "subject:probe_subject,reference_subject:reference_subject"


def _text(page: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture(scope="module")
def score_file(tmp_path_factory):
    cube = bioxr.simulate.demographic({"A": 30, "B": 25}, n_samples=2, fnmr={"A": 0.05, "B": 0.2}, fmr=0.003, seed=9)
    trials = bioxr.to_comparisons(cube)
    path = tmp_path_factory.mktemp("demographics") / "trials.csv"
    pd.DataFrame({"probe": trials.probe_id.values, "reference": trials.reference_id.values,
                  "score": trials.score.values, "probe_subject": trials.subject.values,
                  "reference_subject": trials.reference_subject.values, "group": trials.group.values,
                  "reference_group": trials.reference_group.values}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def simulated(rendered):
    """The session's one render of the template on its simulator (tests/conftest.py), and the values passed."""
    return (rendered("demographics") / "demographics.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def from_file(rendered, score_file):
    out = rendered("demographics", scores=str(score_file), columns=COLUMNS, layout="list")
    return (out / "demographics.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("which", ["simulated", "from_file"])
def test_report_is_clean_offline_and_complete(which, request):
    page = request.getfixturevalue(which)
    text = _text(page)
    assert not re.search(r"\bnan\b", text, flags=re.I), "a nan in the text"
    for internal in ("seeds/", "seed 002", "METHODS.md", "benchmarks/", "DEMOGRAPHICS_NULL"):
        assert internal not in text, internal
    assert not re.search(r"""(src|href)=["']https?://""", page), "the page asks the network for something"
    sections = re.split(r"<h2[^>]*>", page)[1:]
    titles = [_text(s.split("</h2>")[0]).replace("¶", "").strip() for s in sections]
    assert titles == ["Summary table", "What this report answers", "The data", "FNMR and FMR by group",
                      "False matches across groups", "Fairness summaries", "Provenance", "References"]
    for title, body in zip(titles, sections):
        assert len(_text(body.split("</h2>", 1)[1])) > 200, f"section {title!r} is empty"
    assert page.count("<svg") >= 3 or page.count("image/svg+xml") >= 3
    assert "ISO/IEC 19795-10" in text and "Schuckers" in text and "Howard" in text


def test_simulated_report_says_what_the_library_computes(simulated, rendered):
    text = _text(simulated)
    v = rendered.parameters("demographics")
    defaults = {p.name: p.default for p in bioxr.report.template_parameters("demographics")}
    v = {**defaults, **v}
    n, seed = int(v["n_replicates"]), int(v["seed"])
    sizes = dm.parse_group_map(v["groups"], number=int)
    cube = bioxr.simulate.demographic(sizes, n_samples=int(v["n_samples"]), fnmr=dm.parse_group_map(v["fnmr"]),
                                      fmr=dm.parse_group_map(v["fmr"]), rho=float(v["rho"]), seed=seed)
    target = float(v["fmr_target"])
    rates = dm.group_rates(cube, fmr_target=target, n_replicates=n, seed=seed)
    counts = dm.group_counts(cube, float(rates.threshold))
    margin = dm.margin_of_error(counts, n_replicates=n, seed=seed)
    test = dm.differential_test(counts, n_replicates=n, seed=seed)
    assert f"System under test: {v['system']}" in text and f"Laboratory: {v['lab']}" in text
    for g in sizes:
        r = rates.sel(group=g)
        lo, hi = (dm.describe._pct(float(x)) for x in r.fnmr_interval.values)
        assert (f"{g} ({int(r.n_subjects)} subjects): FNMR {dm.describe._pct(float(r.fnmr))} ({lo} to {hi}; "
                f"{int(r.false_nonmatches)} of {int(r.n_mated)} mated comparisons)") in text
    assert f"p-value of {float(test.p_value):.3g}" in text
    outside = [g for g in sizes if bool(margin.outside.sel(group=g))]
    assert ("Outside their margins" in text) == bool(outside)
    assert ("fewer than 50 subjects" in text) == any(k < 50 for k in sizes.values())
    assert ("rule of 30" in text) == bool((rates.false_nonmatches < 30).any())
    assert ("Doddington" in dict(_sections(simulated))["References"]) == ("rule of 30" in text)
    fair = dm.fairness_intervals(cube, fmr_target=target, n_replicates=n, seed=seed)
    assert f"FDR = {float(fair.fdr):.3f}" in text and f"GARBE = {float(fair.garbe):.3f}" in text
    assert dm.describe_simulation(cube) in text  # the simulator's own settings, in words


def _sections(page: str) -> list[tuple[str, str]]:
    parts = re.split(r"<h2[^>]*>", page)[1:]
    return [(_text(p.split("</h2>")[0]).replace("¶", "").strip(), _text(p.split("</h2>", 1)[1])) for p in parts]


def test_report_on_a_score_file_names_the_file_not_the_simulator(from_file, score_file, rendered):
    text = _text(from_file)
    assert f"the score file {score_file.name}" in text
    assert "bioxr.simulate" not in text and "simulated study" not in text
    assert "comparison list" in text
    trials = bioxr.io.read_scores(score_file, columns=bioxr.report.parse_columns(COLUMNS), layout="list")
    v = rendered.parameters("demographics", scores=str(score_file), columns=COLUMNS, layout="list")
    rates = dm.group_rates(trials, fmr_target=0.001, n_replicates=int(v["n_replicates"]), seed=int(v["seed"]))
    assert f"FNMR {dm.describe._pct(float(rates.fnmr.sel(group='B')))}" in text
    assert f"{int(rates.overall_n_nonmated):,} non-mated" in text
