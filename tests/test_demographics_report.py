"""The demographics report, rendered once per (data, parameters) for the whole module: on the simulator with
groups, on a comparison list read from a score file with group columns, and on BSSR1 face-C with the groups
in a subject table of their own (as a lab keeps them), written here from the subject ids. Its text is checked against the
library's numbers on the same data, for nan, internal file names, empty sections and outside requests."""

from __future__ import annotations

import hashlib
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


@pytest.fixture(scope="session")
def score_file(tmp_path_factory):
    cube = bioxr.simulate.demographic({"A": 30, "B": 25}, n_samples=2, fnmr={"A": 0.05, "B": 0.2}, fmr=0.003, seed=9)
    trials = bioxr.to_comparisons(cube)
    path = tmp_path_factory.mktemp("demographics") / "trials.csv"
    pd.DataFrame({"probe": trials.probe_id.values, "reference": trials.reference_id.values,
                  "score": trials.score.values, "probe_subject": trials.subject.values,
                  "reference_subject": trials.reference_subject.values, "group": trials.group.values,
                  "reference_group": trials.reference_group.values}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def subject_table(tmp_path_factory, face_csv):
    """face-C's subjects in two groups by a hash of their id, the first three in a group too small to analyse,
    every 40th (by hash) left out, a subject without scores and one row repeated; two group columns."""
    ids = sorted(pd.read_csv(face_csv, index_col=0, nrows=0).columns.astype(str))
    rows = []
    for k, s in enumerate(ids):
        h = int(hashlib.sha256(s.encode()).hexdigest()[:8], 16)
        if k >= 3 and h % 40 == 0:
            continue
        rows.append((s, "tiny" if k < 3 else "odd" if h % 2 else "even", "north" if h % 3 else "south"))
    rows += [rows[5], ("NOT-IN-THE-SCORES", "odd", "north")]
    path = tmp_path_factory.mktemp("subjects") / "subjects.csv"
    pd.DataFrame(rows, columns=["subject", "band", "site"]).to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def from_table(rendered, subject_table):
    out = rendered("demographics", "face", subject_table=str(subject_table), group="band")
    return (out / "demographics.html").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def simulated(rendered):
    """The session's one render of the template on its simulator (tests/conftest.py), and the values passed."""
    return (rendered("demographics") / "demographics.html").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def from_file(rendered, score_file):
    out = rendered("demographics", scores=str(score_file), columns=COLUMNS, layout="list")
    return (out / "demographics.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("which", ["simulated", "from_file", "from_table"])
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


def test_report_on_a_subject_table_says_what_was_attached_and_left_out(from_table, subject_table, face_csv, rendered):
    text = _text(from_table)
    v = rendered.parameters("demographics", "face", subject_table=str(subject_table), group="band")
    scores = bioxr.io.read_scores(face_csv, missing=-1)
    attached = dm.attach_groups(scores, subject_table, group="band")
    data = dm.set_aside_small_groups(attached, group="band", reference_group="reference_band")
    a = data.attrs
    assert a["n_subjects_without_group"] > 5 and a["n_table_subjects_unscored"] == 1
    assert (a["groups_set_aside"], a["group_sizes_set_aside"]) == ("tiny", "3")
    assert dm.describe_groups(data).replace("`", "") in text  # every sentence, with the counts
    assert f"{a['n_subjects_without_group']} subjects of the scores have no group there" in text
    assert f"their {a['n_comparisons_without_group']:,} comparisons are left out" in text
    assert "Group tiny (3 subjects) has fewer than 5 subjects" in text
    assert "column band of the subject table subjects.csv" in text and "labelled by band" in text
    rates = dm.group_rates(data, fmr_target=0.001, group="band", reference_group="reference_band",
                           n_replicates=int(v["n_replicates"]), seed=int(v["seed"]))
    assert rates["band"].values.tolist() == ["even", "odd"]
    for g in ("even", "odd"):
        r = rates.sel(band=g)
        lo, hi = (dm.describe._pct(float(x)) for x in r.fnmr_interval.values)
        assert (f"{g} ({int(r.n_subjects)} subjects): FNMR {dm.describe._pct(float(r.fnmr))} ({lo} to {hi}; "
                f"{int(r.false_nonmatches)} of {int(r.n_mated)} mated comparisons)") in text
    assert f"{int(rates.overall_n_nonmated):,} non-mated" in text and "tiny (3 subjects): FNMR" not in text
    assert "tiny" not in dict(_sections(from_table))["Summary table"]
    from test_report_text import problems  # what no report may print (tests/test_report_text.py)

    assert problems(from_table) == []
    provenance = dict(_sections(from_table))["Provenance"]
    assert "subject table subjects.csv, column band" in provenance
    assert hashlib.sha256(subject_table.read_bytes()).hexdigest() in provenance


def test_a_score_file_without_groups_stops_before_any_bootstrap_saying_what_to_pass(face_csv):
    """The template's own cells, run here up to its data cell (a render would spend 17 s to fail in cell 3)."""
    import warnings

    import altair as alt
    import nbformat

    cells = [c.source for c in nbformat.read(bioxr.report.template_path("demographics"), as_version=4).cells
             if c.cell_type == "code"]
    namespace: dict = {}
    exec(cells[0], namespace)  # the defaults
    namespace.update(scores=str(face_csv), missing="-1")
    renderer = alt.renderers.active
    try:
        with warnings.catch_warnings():
            exec(cells[1], namespace)  # the imports
            with pytest.raises(bioxr.ScoreCubeError) as err:  # shown by `bioxr report` without code (a data error)
                exec(cells[2], namespace)
    finally:
        alt.renderers.enable(renderer)
    message = str(err.value)
    assert message.startswith("the score file face-C.csv carries no demographic group 'group'")
    assert "-p subject_table PATH" in message and "-p group NAME" in message
    assert "rates" not in namespace and "data" in namespace  # read, and stopped before the first statistic
