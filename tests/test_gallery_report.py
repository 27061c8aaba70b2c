"""The all-against-all capability in Jupyter: simulator, chart, the ``gallery`` template and its score-file door.

The simulator render is the session's shared one (tests/conftest.py,
``rendered``, also read by tests/test_report_text.py and
tests/test_notebooks.py); the score-file render reads the tiny matrix in
tests/data/gallery/ (24 samples of 8 subjects, one cell at the sentinel -1,
columns in another order than the rows) with its labels file (subject and
capture session of each sample).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from test_report_text import problems, sections, text_of

import bioxr
from bioxr import gallery, plot

DATA = Path(__file__).resolve().parent / "data" / "gallery"
MATRIX, LABELS = DATA / "matrix.csv", DATA / "labels.csv"


# ------------------------------------------------------------ simulator ---


def test_simulator_is_seeded_symmetric_and_counts_as_the_formulas_say():
    cube = bioxr.simulate.all_against_all(n_subjects=6, n_samples=4, n_sessions=2, session_effect=1.0, seed=5)
    assert dict(cube.sizes) == {"probe": 24, "reference": 24}
    xr.testing.assert_identical(cube, bioxr.simulate.all_against_all(6, 4, n_sessions=2, session_effect=1.0, seed=5))
    assert not np.array_equal(cube.values, bioxr.simulate.all_against_all(6, 4, n_sessions=2, session_effect=1.0,
                                                                          seed=6).values)
    v = cube.values
    np.testing.assert_array_equal(v, v.T)  # a symmetric matcher
    assert (np.diag(v) > np.max(v - np.diag(np.diag(v) + np.inf), axis=1)).all()  # a sample matches itself best
    r = bioxr.verification.error_rates(cube, 0.0)
    assert (int(r.n_mated), int(r.n_nonmated)) == (24 * 3, 24 * 5 * 4)  # |G|(S-1), |G|(N-1)S: diagonal left out
    assert cube.attrs["n_self_comparisons"] == 24
    assert cube.session.values.tolist() == [0, 1, 0, 1] * 6
    assert "session_effect=1.0" in cube.attrs["simulator"]


def test_simulator_session_effect_lifts_same_session_mated_scores_only():
    kw = dict(n_subjects=40, n_samples=4, n_sessions=2, seed=0)
    flat, lifted = (bioxr.simulate.all_against_all(**kw, session_effect=e) for e in (0.0, 2.0))
    same = (flat.session.values[:, None] == flat.reference_session.values[None, :])
    mated = bioxr.cube.mated_mask(flat).values & (flat.probe_id.values[:, None] != flat.reference_id.values[None, :])
    diff = lifted.values - flat.values
    np.testing.assert_allclose(diff[mated & same], 2.0)
    other = (~mated | ~same) & ~np.eye(diff.shape[0], dtype=bool)  # the diagonal (self) is no comparison
    np.testing.assert_allclose(diff[other], 0.0, atol=1e-12)


@pytest.mark.parametrize("kw, match", [({"n_samples": 1}, "n_samples=1"), ({"n_subjects": 1}, "n_subjects=1"),
                                       ({"n_sessions": 5}, "n_sessions=5"), ({"seed": None}, "seed is None")])
def test_simulator_refuses_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        bioxr.simulate.all_against_all(**{"n_subjects": 4, "n_samples": 4, **kw})


# ------------------------------------------------------------ the file door ---


def test_read_matrix_lines_up_columns_and_finds_subjects_in_the_ids():
    cube = gallery.read_matrix(MATRIX, missing=-1)
    ids = cube.probe_id.values.tolist()
    assert ids == cube.reference_id.values.tolist()  # columns put in the rows' order
    assert cube.subject.values.tolist()[:3] == ["ana"] * 3 and len(set(cube.subject.values.tolist())) == 8
    raw = [line.split(",") for line in MATRIX.read_text().splitlines()[1:]]
    head, rows = raw[0], {r[0]: r[1:] for r in raw[1:]}
    i, j = ids.index("cai_2"), ids.index("gus_3")
    assert float(cube.values[i, j]) == float(rows["cai_2"][head.index("gus_3") - 1])
    assert cube.attrs["n_missing"] == 1 and cube.attrs["n_self_comparisons"] == 24
    c = gallery.protocol_counts(cube)
    assert c["single"]["formula"] == (48, 504) and c["single"]["counted"] == (48, 503)  # the -1 cell is non-mated
    assert not c["formula_holds"]
    assert "**not** what the formulas give (48 and 504)" in gallery.counts_text(c)
    labelled = gallery.read_matrix(MATRIX, labels=LABELS)
    assert labelled.subject.values.tolist()[:3] == ["ANA"] * 3
    assert labelled.session.values.tolist()[:3] == ["day1", "day1", "day2"]  # the labels file's third column
    note = gallery.session_note(labelled)
    assert "16 same-session mated comparisons" in note and "32 cross-session" in note and "(not higher:" in note
    by_rule = gallery.read_matrix(MATRIX, subject_of=r"(\w)")  # first letter: every name starts differently
    assert by_rule.subject.values.tolist()[:3] == ["a"] * 3


def test_read_matrix_errors_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="first group is the subject, or give labels"):
        gallery.read_matrix(MATRIX, subject_of=r"(\w+)-")
    with pytest.raises(ValueError, match="no mated comparison"):
        gallery.read_matrix(MATRIX, subject_of=r"(.*)")
    with pytest.raises(ValueError, match="labels give no subject for 3 of the 24 samples"):
        gallery.from_matrix(bioxr.io.read_scores(MATRIX), labels={s: "x" for s in
                                                                  bioxr.io.read_scores(MATRIX).probe.values[3:]})
    other = tmp_path / "probes.csv"
    other.write_text("id,a_1,a_2,b_1\na_1,9,0.1,0.2\nb_2,0.3,0.4,0.5\n")  # a probe set against a gallery
    with pytest.raises(ValueError, match=r"rows and the columns name the same samples; here 1 row\(s\) name no column "
                                         r"\(first 'b_2'\) and 2 column\(s\) no row"):
        gallery.read_matrix(other)


# ------------------------------------------------------------ library numbers ---


def test_summary_rows_are_the_library_numbers():
    cube = bioxr.simulate.all_against_all(20, 3, seed=2)
    t = gallery.summary_table(cube, fmr=(0.01,), fnmr=(), fpir=(0.05,), n_replicates=50, seed=1)
    metric = t.metric.values.tolist()
    assert metric == ["EER (single template)", "FNMR (single template)", "EER (multi-template)",
                      "FNMR (multi-template)", "rank-1 identification rate", "FNIR", "FTE", "FTA"]
    value = dict(zip(metric, t.value.values.tolist()))
    assert value["EER (multi-template)"] == float(bioxr.verification.eer(gallery.best_per_subject(cube)).eer)
    assert value["EER (single template)"] == float(bioxr.verification.eer(cube).eer)
    curve = bioxr.identification.open_set_curve(cube, impostors="all")
    k = np.flatnonzero(curve.fpir.values <= 0.05)
    assert value["FNIR"] == pytest.approx(curve.fnir.values[k].min())
    row = metric.index("FNIR")
    assert t.trials.values[row] == 60 and t.convention.values[row] == "every probe also an impostor"


def test_session_note_splits_mated_comparisons_by_session():
    cube = bioxr.simulate.all_against_all(20, 4, n_sessions=2, session_effect=1.5, seed=0)
    note = gallery.session_note(cube)
    same = cube.session.values[:, None] == cube.reference_session.values[None, :]
    within = cube.where(~bioxr.cube.mated_mask(cube) | xr.DataArray(same, dims=cube.dims))
    e = bioxr.verification.eer(within)
    assert f"with the {int(e.n_mated):,} same-session mated comparisons the EER (rocch) is {float(e.eer):.2%}" in note
    assert "80 same-session" in note and "160 cross-session" in note and "(higher, as the caveat expects;" in note
    assert "carry no session" in gallery.session_note(bioxr.gallery.all_against_all(cube.values, cube.subject.values))


# ------------------------------------------------------------ charts ---


def test_det_chart_has_both_protocols_their_counts_and_fitted_axes():
    cube = bioxr.simulate.all_against_all(20, 3, seed=0)
    chart = plot.gallery_det_chart(cube, fmr_targets=[0.01])
    spec = chart.to_dict()
    sub = spec["title"]["subtitle"]
    assert sub[0] == "Single template: TG = |G|(S−1) = 60 × 2 = 120 mated, TI = |G|(N−1)S = 60 × 19 × 3 = 3,420 non-mated"
    assert sub[1] == "Multi-template: TG = |G| = 60 mated, TI = |G|(N−1) = 60 × 19 = 1,140 non-mated"
    assert sum("non-mated" in s for s in sub) == 2  # det_chart's own counts line is replaced by the two above
    data = [rows for rows in spec["datasets"].values()]
    curves = next(rows for rows in data if rows and "fnmr" in rows[0] and "order" in rows[0])
    assert {r["protocol"] for r in curves} == {"single template", "multi-template"}
    eers = next(rows for rows in data if rows and "eer" in rows[0] and "label" not in rows[0])
    multi = gallery.best_per_subject(cube)
    assert sorted(r["eer"] for r in eers) == sorted([float(bioxr.verification.eer(cube).eer),
                                                     float(bioxr.verification.eer(multi).eer)])
    (xlo, _), (ylo, yhi) = chart._bioxr_share["limits"]
    fnmr = np.concatenate([bioxr.verification.det_curve(c).fnmr.values for c in (cube, multi)])
    lowest = fnmr[fnmr > 0].min()
    assert lowest / 10 < ylo <= lowest and yhi <= 0.6  # fitted to the curves, not a fixed 1e-6 .. 50%
    assert xlo >= 1 / 3420 / 10


def test_chart_refuses_what_is_not_an_all_against_all_cube():
    with pytest.raises(TypeError, match="gallery_det_chart expects the all-against-all score cube"):
        plot.gallery_det_chart(bioxr.simulate.gaussian(n_subjects=10, seed=0))


def test_heatmap_leaves_the_diagonal_blank_and_only_draws_small_matrices():
    cube = bioxr.simulate.all_against_all(5, 3, seed=0)
    spec = plot.gallery_heatmap(cube).to_dict()
    rows = spec["datasets"][spec["data"]["name"]]
    assert len(rows) == 15 * 14 and all(r["probe"] != r["reference"] for r in rows)
    assert sum(r["mated"] == "mated" for r in rows) == 15 * 2
    order = spec["encoding"]["y"]["sort"]
    assert [s.split("-")[0] for s in order] == sorted(s.split("-")[0] for s in order)  # grouped by subject
    with pytest.raises(ValueError, match="G <= 70"):
        plot.gallery_heatmap(bioxr.simulate.all_against_all(36, 2, seed=0))


# ------------------------------------------------------------ the report ---


@pytest.fixture(scope="session")
def sim(rendered):
    out = rendered("gallery")
    return rendered.parameters("gallery"), (out / "gallery.html").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def from_file(rendered):
    out = rendered("gallery", scores=str(MATRIX), labels=str(LABELS), missing="-1")
    return (out / "gallery.html").read_text(encoding="utf-8")


def test_report_on_the_simulator_prints_the_library_numbers(sim):
    values, html = sim
    text = text_of(html)
    n, s = values["n_subjects"], values["n_samples"]
    g = n * s
    cube = bioxr.simulate.all_against_all(n_subjects=n, n_samples=s, n_sessions=2, session_effect=1.0,
                                          seed=values["seed"])
    assert f"TG = |G|(S−1) = {g} × {s - 1} = {g * (s - 1):,} mated" in text
    assert f"TI = |G|(N−1)S = {g} × {n - 1} × {s} = {g * (n - 1) * s:,} non-mated" in text
    assert f"counted on the data: {g * (s - 1):,} and {g * (n - 1) * s:,}, as the formulas give" in text
    assert f"TG = |G| = {g} mated and TI = |G|(N−1) = {g} × {n - 1} = {g * (n - 1):,}" in text
    multi = gallery.best_per_subject(cube)
    for name, obj in (("Single template", cube), ("Multi-template", multi)):
        assert re.search(rf"{name}\. .*?The EER by the rocch convention is {float(bioxr.verification.eer(obj).eer):.2%}",
                         text), name
    rank1 = float(bioxr.identification.cmc_curve(cube, max_rank=1).cmc.sel(rank=1))
    assert f"The rank-1 identification rate is {rank1:.2%} over {g} searches" in text
    assert f"{g} genuine searches" in text and f"{g} impostor searches" in text
    assert gallery.session_note(cube).split(". These data")[1] in text  # the session split, as computed
    heads = [h for h, _ in sections(html)]
    assert "The matrix" in heads and "Sessions" in heads and "DET curves" in heads  # G = 45: the heatmap is drawn
    assert len(re.findall(r"<img\b[^>]*\ssrc=\"data:image/svg\+xml;base64,", html)) >= 4  # heatmap, DET, CMC, open set


def test_report_on_a_matrix_file(from_file):
    html = from_file
    text = text_of(html)
    assert problems(html) == []
    assert "the score file matrix.csv" in text
    assert "counted on the data: 48 and 503, not what the formulas give (48 and 504)" in text
    assert "1 cells holding the sentinel -1" in text and "24 self comparisons" in text
    labelled = gallery.read_matrix(MATRIX, labels=LABELS, missing=-1)
    assert gallery.session_note(labelled).split(". These data")[1] in text  # sessions from the labels' third column
    assert "16 same-session mated comparisons" in text
    assert "not computed" not in text  # every row of the summary table holds a number
    heads = [h for h, _ in sections(html)]
    assert heads[0] == "All-against-all report" and heads[1] == "Summary table" and heads[-1] == "References"
