"""Demographic differentials at one global threshold: the simulator's groups, the group rates, the cross-group
FMR matrix, FDR and GARBE intervals (against brute force), their charts (checked through their specs: the data
drawn are the library's numbers), the sentences, and the explorer driven headless."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr import demographics as dm
from bioxr import plot
from bioxr.simulate import _entropy, _rng

pytestmark = [pytest.mark.filterwarnings("ignore::bioxr._core.errors.FewReplicatesWarning"),
              pytest.mark.filterwarnings("ignore::bioxr.demographics.SmallGroupWarning")]

SIZES = {"A": 40, "B": 30, "C": 20}
FNMR = {"A": 0.05, "B": 0.05, "C": 0.3}
FMR = {"A": 0.002, "B": 0.01, "C": 0.004}


@pytest.fixture(scope="module")
def cube():
    return bioxr.simulate.demographic(SIZES, n_samples=3, fnmr=FNMR, fmr=FMR, rho=0.2, seed=5)


@pytest.fixture(scope="module")
def threshold(cube):
    return dm.global_threshold(cube, 0.002)


@pytest.fixture(scope="module")
def rates(cube):
    return dm.group_rates(cube, fmr_target=0.002, n_replicates=200, seed=1)


@pytest.fixture(scope="module")
def margin(cube, rates):
    return dm.margin_of_error(dm.group_counts(cube, float(rates.threshold)), n_replicates=1000, seed=1)


@pytest.fixture(scope="module")
def cross(cube):
    return dm.cross_group_fmr(cube, fmr_target=0.002)


@pytest.fixture(scope="module")
def fair(cube):
    return dm.fairness_intervals(cube, fmr_target=0.002, n_replicates=50, seed=3)


def _within(cube, g):
    return cube.isel(probe=cube.group.values == g, reference=cube.reference_group.values == g)


# ------------------------------------------------------------------ simulator --


def test_simulator_realises_the_rates_and_correlation_asked_for():
    """Realised FNMR, within- and cross-group FMR and intra-class correlation match the asked values within 4 SE."""
    fnmr, fmr, rho, n_samples = {"A": 0.1, "B": 0.25}, {"A": 0.002, "B": 0.01}, 0.3, 3
    cube = bioxr.simulate.demographic({"A": 600, "B": 600}, n_samples=n_samples, fnmr=fnmr, fmr=fmr, rho=rho,
                                      cross_fmr=0.2, threshold=1.5, seed=11)
    scores = cube.values
    mated = cube.subject.values[:, None] == cube.reference_subject.values[None, :]
    pg, rg = cube.group.values, cube.reference_group.values
    counts = bioxr.correlation.attempt_counts(cube, 1.5)
    for g in "AB":
        block = scores[pg == g][:, rg == g]
        m = mated[pg == g][:, rg == g]
        p = (block[m] < 1.5).mean()
        se = np.sqrt(fnmr[g] * (1 - fnmr[g]) * (1 + (n_samples - 1) * rho) / m.sum())
        assert abs(p - fnmr[g]) < 4 * se, (g, p)
        f = (block[~m] >= 1.5).mean()
        assert abs(f - fmr[g]) < 4 * np.sqrt(fmr[g] / (~m).sum()), (g, f)
        icc = float(bioxr.correlation.icc(counts.where(counts.group == g, drop=True)).rho)
        assert abs(icc - rho) < 0.1, (g, icc)
    cross = (scores[pg == "A"][:, rg == "B"] >= 1.5).mean()
    want = 0.2 * np.sqrt(fmr["A"] * fmr["B"])
    assert abs(cross - want) < 4 * np.sqrt(want / (600 * 3 * 600))
    assert cube.attrs["fnmr"] == fnmr and cube.attrs["rho"] == {"A": rho, "B": rho}


def test_simulator_rho_zero_is_binomial_and_seeded():
    a = bioxr.simulate.demographic({"A": 50, "B": 10}, 2, rho=0.0, seed=3)
    assert np.unique(a.fnmr_propensity.values).tolist() == [0.05]
    b = bioxr.simulate.demographic({"A": 50, "B": 10}, 2, rho=0.0, seed=3)
    assert bool((a == b).all()) and not bool((a == bioxr.simulate.demographic({"A": 50, "B": 10}, 2, rho=0.0,
                                                                                seed=4)).all())


@pytest.mark.parametrize("kwargs, message", [
    ({"groups": {}}, "empty"),
    ({"groups": {"A": 0}}, "positive whole number"),
    ({"groups": {"A": 10}, "fnmr": 1.2}, r"fnmr of group 'A' is 1.2"),
    ({"groups": {"A": 10}, "fmr": {"B": 0.1}}, "the groups are"),
    ({"groups": {"A": 10}, "rho": 1.0}, r"\[0, 1\)"),
    ({"groups": {"A": 10}, "n_samples": 0}, "n_samples"),
])
def test_simulator_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bioxr.simulate.demographic(**kwargs)


# ----------------------------------------------------------------- the numbers --


def test_group_rates_are_the_rates_of_each_groups_comparisons(cube, rates, threshold):
    assert float(rates.threshold) == threshold
    assert bioxr.verification.fmr(cube, threshold).fmr <= 0.002
    for g in SIZES:
        sub = _within(cube, g)
        er = bioxr.verification.error_rates(sub, threshold)
        r = rates.sel(group=g)
        assert float(r.fnmr) == float(er.fnmr) and float(r.fmr) == float(er.fmr)
        assert int(r.false_matches) == int(er.false_matches) and int(r.n_mated) == int(er.n_mated)
        assert int(r.n_nonmated) == int(er.n_nonmated) and int(r.false_nonmatches) == int(er.false_nonmatches)
        assert int(r.n_subjects) == SIZES[g]
        lo, hi = r.fnmr_interval.values
        assert lo <= float(r.fnmr) <= hi and hi > lo
    whole = bioxr.bootstrap.bootstrap_curve(cube, thresholds=[threshold], n_replicates=200, seed=1).isel(threshold=0)
    np.testing.assert_allclose(rates.overall_fmr_interval.values, whole.fmr_interval.values)
    assert float(rates.overall_fnmr) == float(bioxr.verification.fnmr(cube, threshold).fnmr)


def test_group_rates_on_a_comparison_list_equal_those_on_the_cube(cube, rates):
    trials = bioxr.to_comparisons(cube).drop_vars("reference_group")  # reference groups from the probes' labels
    again = dm.group_rates(trials, fmr_target=0.002, n_replicates=200, seed=1)
    for v in ("fnmr", "fmr", "fnmr_interval", "fmr_interval", "false_matches", "n_nonmated"):
        np.testing.assert_allclose(again[v].values, rates[v].values, err_msg=v)


def test_cross_group_fmr_counts_every_pair_by_brute_force(cube, cross, rates):
    t = float(cross.threshold)
    s, pg, rg = cube.values, cube.group.values, cube.reference_group.values
    mated = cube.subject.values[:, None] == cube.reference_subject.values[None, :]
    for g in SIZES:
        for h in SIZES:
            block, m = s[pg == g][:, rg == h], mated[pg == g][:, rg == h]
            assert int(cross.false_matches.sel(probe_group=g, reference_group=h)) == int((block[~m] >= t).sum())
            assert int(cross.n_nonmated.sel(probe_group=g, reference_group=h)) == int((~m).sum())
    # probes of A against references of B all match, the reverse not: the matrix is not symmetric
    skewed = cube.copy(data=np.where((pg[:, None] == "A") & (rg[None, :] == "B"), 10.0, s))
    m = dm.cross_group_fmr(skewed, threshold=t)
    assert float(m.fmr.sel(probe_group="A", reference_group="B")) == 1.0
    assert float(m.fmr.sel(probe_group="B", reference_group="A")) == float(cross.fmr.sel(probe_group="B",
                                                                                          reference_group="A"))
    diag = [int(cross.false_matches.sel(probe_group=g, reference_group=g)) for g in SIZES]
    assert diag == rates.false_matches.values.tolist()
    assert float(cross.overall_fmr) == pytest.approx(float(bioxr.verification.fmr(cube, t).fmr))


def test_fairness_intervals_match_a_brute_force_bootstrap(cube):
    fair = dm.fairness_intervals(cube, fmr_target=0.002, n_replicates=40, seed=3)
    t = float(fair.threshold)
    root, reps_fmr, reps_fnmr = _entropy(3), [], []
    for k, g in enumerate(SIZES):
        sub = _within(cube, g)
        units = sorted(set(sub.reference_subject.values.tolist()))
        s, ps, rs = sub.values, sub.subject.values, sub.reference_subject.values
        # every pair of subjects' false matches (or the subject's own false non-matches) and comparisons, by hand
        errs = np.array([[((s[ps == p][:, rs == q] >= t) if p != q else (s[ps == p][:, rs == q] < t)).sum()
                          for q in units] for p in units])
        size = np.array([[s[ps == p][:, rs == q].size for q in units] for p in units])
        draws = _rng(root, 13, k).integers(0, len(units), size=(40, len(units)))
        fnmr_b, fmr_b = [], []
        for row in draws:  # the drawn subjects, each as often as drawn, as probes and as references
            pairs = np.ix_(row, row)
            other = row[:, None] != row[None, :]
            fnmr_b.append(np.diag(errs)[row].sum() / np.diag(size)[row].sum())
            fmr_b.append(errs[pairs][other].sum() / size[pairs][other].sum())
        reps_fnmr.append(fnmr_b)
        reps_fmr.append(fmr_b)
        assert float(fair.fnmr.sel(group=g)) == pytest.approx(np.diag(errs).sum() / np.diag(size).sum())
        off = ~np.eye(len(units), dtype=bool)
        assert float(fair.fmr.sel(group=g)) == pytest.approx(errs[off].sum() / size[off].sum())
    fr = xr.DataArray(np.array(reps_fmr).T, dims=("replicate", "group"))
    fn = xr.DataArray(np.array(reps_fnmr).T, dims=("replicate", "group"))
    fdr = dm.fairness_discrepancy_rate(fr, fn).fdr.values
    gb = dm.garbe(fr, fn).garbe.values
    np.testing.assert_allclose(fair.fdr_interval.values, np.quantile(fdr, [0.025, 0.975], method="inverted_cdf"))
    np.testing.assert_allclose(fair.garbe_interval.values, np.quantile(gb, [0.025, 0.975], method="inverted_cdf"))
    assert float(fair.garbe) == float(dm.garbe(fair.fmr, fair.fnmr).garbe)
    assert float(fair.fdr) == float(dm.fairness_discrepancy_rate(fair.fmr, fair.fnmr).fdr)


def test_threshold_choice_is_checked(cube):
    with pytest.raises(ValueError, match="exactly one"):
        dm.group_rates(cube, n_replicates=200)
    with pytest.raises(ValueError, match="exactly one"):
        dm.cross_group_fmr(cube, threshold=0.0, fmr_target=0.001)
    with pytest.raises(ValueError, match=r"fmr_target=1.5"):
        dm.cross_group_fmr(cube, fmr_target=1.5)
    with pytest.raises(ValueError, match="is not a coordinate"):
        dm.cross_group_fmr(cube, threshold=0.0, group="age")
    bad = cube.assign_coords(reference_group=("reference", np.roll(cube.reference_group.values, 1)))
    with pytest.raises(ValueError, match="a subject belongs to one group"):
        dm.cross_group_fmr(bad, threshold=0.0)


# ------------------------------------------------------------------- the charts --


def _datasets(chart) -> list[list[dict]]:
    return list(chart.to_dict()["datasets"].values())


def _rows_with(chart, key) -> list[dict]:
    return [row for data in _datasets(chart) for row in data if key in row]


def test_group_rates_chart_draws_the_library_numbers(rates, margin):
    chart = plot.group_rates_chart(rates, margin)
    rows = [r for r in _rows_with(chart, "rate") if "band_lower" in r]
    for g in SIZES:
        fn = next(r for r in rows if r["rate"] == "FNMR" and r["group"] == g)
        fm = next(r for r in rows if r["rate"] == "FMR" and r["group"] == g)
        assert fn["value"] == float(rates.fnmr.sel(group=g)) and fm["value"] == float(rates.fmr.sel(group=g))
        assert [fn["lower"], fn["upper"]] == rates.fnmr_interval.sel(group=g).values.tolist()
        assert [fm["lower"], fm["upper"]] == rates.fmr_interval.sel(group=g).values.tolist()
        assert [fn["band_lower"], fn["band_upper"]] == margin.margin_interval.sel(group=g).values.tolist()
        assert fn["outside"] == bool(margin.outside.sel(group=g))
    overall = [r["value"] for r in _rows_with(chart, "what")]
    assert overall == [float(rates.overall_fnmr), float(rates.overall_fmr)]
    spec = chart.to_dict()
    coloured = [layer["encoding"]["color"]["scale"] for layer in spec["hconcat"][0]["layer"]
                if "scale" in layer["encoding"].get("color", {})]
    assert len(coloured) == 2  # the interval and the point of each group
    for colours in coloured:
        assert colours["range"][colours["domain"].index("outside the margin of error")] == "#c0392b"
    assert "margin of error" in " ".join(spec["title"]["subtitle"])


def test_group_rates_chart_flags_a_group_outside_its_margin():
    cube = bioxr.simulate.demographic({"A": 120, "B": 120}, n_samples=3, fnmr={"A": 0.03, "B": 0.25}, rho=0.1,
                                      seed=2)
    rates = dm.group_rates(cube, threshold=0.0, n_replicates=200)
    margin = dm.margin_of_error(dm.group_counts(cube, 0.0), n_replicates=1000)
    assert margin.outside.values.tolist() == [True, True]
    rows = [r for r in _rows_with(plot.group_rates_chart(rates, margin), "status") if r["rate"] == "FNMR"]
    assert {r["status"] for r in rows} == {"outside the margin of error"}
    assert "Outside their margins: A (below) and B (above)" in dm.describe_rates(rates, margin)


def test_cross_fmr_heatmap_is_labelled_on_a_log_scale(cross):
    chart = plot.cross_fmr_heatmap(cross)
    spec = chart.to_dict()
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["type"] == "log"
    rows = _rows_with(chart, "probe_group")
    assert len(rows) == len(SIZES) ** 2
    for row in rows:
        sel = dict(probe_group=row["probe_group"], reference_group=row["reference_group"])
        f = float(cross.fmr.sel(sel))
        assert row["fmr"] == f
        if f > 0:
            assert row["label"].startswith(plot.demographics._pct(f)) and "× overall" in row["label"]
            assert scale["domain"][0] <= f <= scale["domain"][1]
        else:
            assert row["label"] == f"0 of {int(cross.n_nonmated.sel(sel)):,}" and row["fmr_shown"] is None
    assert spec["layer"][2]["mark"]["type"] == "text"


def test_fairness_chart_draws_the_intervals(fair):
    rows = _rows_with(plot.fairness_chart(fair), "summary")
    by = {r["key"]: r for r in rows}
    for key in ("fdr", "garbe", "fmr_gini", "fnmr_gini"):
        assert by[key]["value"] == float(fair[key])
        assert [by[key]["lower"], by[key]["upper"]] == fair[f"{key}_interval"].values.tolist()


def test_charts_say_which_result_they_expect(rates, cross):
    with pytest.raises(TypeError, match="bioxr.demographics.group_rates"):
        plot.group_rates_chart(cross)
    with pytest.raises(TypeError, match="bioxr.demographics.cross_group_fmr"):
        plot.cross_fmr_heatmap(rates)
    with pytest.raises(TypeError, match="bioxr.demographics.fairness_intervals"):
        plot.fairness_chart(rates)
    with pytest.raises(TypeError, match="margin_of_error"):
        plot.group_rates_chart(rates, margin=rates)


def test_charts_render_offline(rates, margin, cross, fair):
    for chart in (plot.group_rates_chart(rates, margin), plot.cross_fmr_heatmap(cross), plot.fairness_chart(fair)):
        svg = plot.render_svg(chart)
        assert svg.startswith("<svg") and "NaN" not in svg


# ------------------------------------------------------------------ sentences --


def test_sentences_state_h0_values_flags_and_warnings(rates, margin, cross, fair, cube):
    test = dm.differential_test(dm.group_counts(cube, float(rates.threshold)), n_replicates=199)
    text = dm.describe_rates(rates, margin, test)
    assert test.attrs["h0"] in text and f"{float(test.p_value):.3g}" in text
    assert "C has fewer than 50 subjects" in text.replace("A, B and C have", "C has").replace("B and C have", "C has")
    assert "rule of 30" in text and "nan" not in text.lower()
    outside = [g for g in SIZES if bool(margin.outside.sel(group=g))]
    assert ("Outside their margins" in text) == bool(outside)
    words = dm.describe_fairness(fair)
    assert f"FDR = {float(fair.fdr):.3f}" in words and f"GARBE = {float(fair.garbe):.3f}" in words
    k = int(np.nanargmax(np.diag(cross.fmr.values)))
    assert f"highest within-group FMR is {list(SIZES)[k]}'s" in dm.describe_cross(cross)
    refs = dm.references()
    assert "ISO/IEC 19795-10" in refs and "Schuckers" in refs and "seed" not in refs.lower()


def test_summary_table_for_people(rates, margin):
    table = dm.summary_table(rates, margin)
    assert table.index.tolist() == [*SIZES, "all groups"]
    assert table.loc["A", "FNMR"] == plot.demographics._pct(float(rates.fnmr.sel(group="A")))
    assert table.loc["all groups", "false non-matches"] == (f"{int(rates.false_nonmatches.sum()):,} of "
                                                            f"{int(rates.overall_n_mated):,}")


# ------------------------------------------------------------------- explorer --


def _svg(value: str) -> str:
    return base64.b64decode(re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', value).group(1)).decode()


def test_explorer_redraws_for_the_group_variable_and_threshold(cube):
    pytest.importorskip("ipywidgets")
    from bioxr.widgets import demographics_explorer, group_variables

    age = np.where(np.arange(cube.sizes["reference"]) % 2 == 0, "young", "old")
    code = {s: a for s, a in zip(cube.reference_subject.values, age)}
    data = cube.assign_coords(age=("probe", [code[s] for s in cube.subject.values]), reference_age=("reference", age))
    assert group_variables(data) == ["group", "age"]
    ex = demographics_explorer(data, n_replicates=50)
    assert ex.threshold == dm.global_threshold(data, 0.001)
    assert "C (20 subjects)" in _svg(ex.rates_chart.value)
    first = ex.heatmap.value
    ex.target.value = 0.01
    assert ex.threshold == dm.global_threshold(data, 0.01) and ex.heatmap.value != first
    np.testing.assert_array_equal(ex.rates.fnmr.values, dm.group_rates(data, fmr_target=0.01, n_replicates=50).fnmr)
    ex.group.value = "age"
    assert ex.rates["age"].values.tolist() == ["old", "young"] and "young" in _svg(ex.heatmap.value)
    assert ex.cross.attrs["score_kind"] == "similarity" and ex.settings()["reference_group"] == "reference_age"
    before = ex.rates
    ex.mode.value = "threshold"
    assert not ex.threshold_box.disabled and ex.target.disabled
    assert ex.rates is before and ex.threshold_box.value == ex.threshold  # the same threshold, typed in
    ex.threshold_box.value = 0.5
    assert float(ex.rates.threshold) == 0.5 and float(ex.cross.threshold) == 0.5
    assert "updated in" in ex.status.value and "p = " in ex.text.value
