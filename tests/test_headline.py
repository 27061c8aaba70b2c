"""The summary table: every row equals the function that computes it, flags follow the counts, exports round-trip."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr import headline
from bioxr.cube import score_cube

B = dict(n_replicates=300, seed=4)  # few replicates: the rows are compared with their functions, not studied
pytestmark = pytest.mark.filterwarnings("ignore::bioxr.bootstrap.FewReplicatesWarning")


@pytest.fixture(scope="module")
def cube():
    return bioxr.simulate.gaussian(n_subjects=40, n_samples=2, seed=0)


@pytest.fixture(scope="module")
def table(cube):
    return headline.summary(cube, **B)


def _rows(table, metric):
    return table.isel(row=np.flatnonzero(table.metric.values == metric))


def test_eer_rows_are_the_eer_and_its_interval_in_each_convention(cube, table):
    rows = _rows(table, "EER")
    assert rows.convention.values.tolist() == list(headline.EER_METHODS)
    for r in range(rows.sizes["row"]):
        method = str(rows.convention.values[r])
        exact = bioxr.verification.eer(cube, method=method)
        ci = bioxr.bootstrap.eer_interval(cube, method=method, **B)  # one set of replicates shared: the same draws
        assert rows.value.values[r] == float(exact.eer)
        assert rows.threshold.values[r] == float(exact.threshold)
        np.testing.assert_array_equal([rows.lower.values[r], rows.upper.values[r]], ci.eer_interval.values)
        assert rows.units.values[r] == 40
        assert rows.errors.values[r] == int(exact.false_matches) + int(exact.false_nonmatches)
        assert rows.trials.values[r] == int(exact.n_mated) + int(exact.n_nonmated)


def test_conventions_are_said_in_words(table):
    """Every row's convention column says how its number was read, never a bare library name."""
    said = dict(zip(table.metric.values.tolist(), table.convention.values.tolist()))
    assert said["FNMR"] == "most lenient threshold with FMR <= target"
    assert said["FMR"] == "strictest threshold with FNMR <= target"
    assert said["rank-1 identification rate"] == "Annex F.2 tie shares"
    assert "bioxr" not in table.convention.values.tolist()


def test_fnmr_rows_and_resolution(cube, table):
    rows = _rows(table, "FNMR")
    op = bioxr.verification.fnmr_at_fmr(cube, list(headline.FMR_TARGETS))
    ci = bioxr.bootstrap.fnmr_at_fmr_interval(cube, list(headline.FMR_TARGETS), **B)
    n_nm = int(op.n_nonmated)
    for r, t in enumerate(headline.FMR_TARGETS):
        if t * n_nm >= 1:
            assert rows.value.values[r] == float(op.fnmr[r])
            assert rows.errors.values[r] == int(op.false_nonmatches[r])
            np.testing.assert_array_equal([rows.lower.values[r], rows.upper.values[r]], ci.fnmr_interval.values[r])
        else:  # kept as a row, with the reason
            assert np.isnan(rows.value.values[r]) and "not resolvable" in rows.flags.values[r]
            assert f"{int(np.ceil(1 / t)):,}" in rows.flags.values[r]
    assert (np.array(headline.FMR_TARGETS) * n_nm >= 1).sum() == np.isfinite(rows.value.values).sum() == 2  # 3,120


def test_fmr_rows_rank1_and_failures(cube, table):
    rows = _rows(table, "FMR")
    op = bioxr.verification.fmr_at_fnmr(cube, [0.01, 0.1])
    np.testing.assert_array_equal(rows.value.values, op.fmr.values)
    np.testing.assert_array_equal(rows.errors.values, op.false_matches.values)
    band = bioxr.bootstrap.bootstrap_curve(cube, thresholds=np.unique(op.threshold.values), **B)
    np.testing.assert_array_equal(rows.upper.values, band.fmr_interval.sel(bound="upper").values)
    r1 = _rows(table, "rank-1 identification rate")
    ci = bioxr.bootstrap.cmc_interval(cube, max_rank=1, **B)
    assert r1.value.item() == float(ci.cmc.sel(rank=1))
    assert r1.lower.item() == float(ci.cmc_interval.sel(rank=1, bound="lower"))
    f = bioxr.failures.failure_rates(cube)
    assert _rows(table, "FTE").value.item() == float(f.fte) and _rows(table, "FTA").trials.item() == int(f.n_probes)
    fnir = _rows(table, "FNIR")
    assert fnir.sizes["row"] == 2 and all("closed-set" in x for x in fnir.flags.values)


def test_rule_of_30_flags_follow_the_counts(table):
    for r in range(table.sizes["row"]):
        e = table.errors.values[r]
        if np.isfinite(e) and table.metric.values[r] in ("FNMR", "FMR"):
            flagged = f"{int(e)} false" in table.flags.values[r]
            assert flagged == (e < 30), (table.metric.values[r], e, table.flags.values[r])
    assert "rule of 30" in table.attrs["rule_of_30"]


def test_fnir_at_fpir_is_the_most_lenient_threshold_within_the_target():
    rng = np.random.default_rng(0)
    n, n_enrolled = 120, 60
    subj = [f"s{i}" for i in range(n)]
    scores = rng.normal(0, 1, (n, n_enrolled))
    scores[np.arange(n_enrolled), np.arange(n_enrolled)] += 3
    cube = score_cube(scores, subject=subj, reference_subject=subj[:n_enrolled])
    table = headline.summary(cube, fpir=(0.1, 0.05), eer_methods=(), fmr=(), fnmr=(), **B)
    rows = _rows(table, "FNIR")
    top_impostor = scores[n_enrolled:].max(axis=1)
    mated = scores[np.arange(n_enrolled), np.arange(n_enrolled)]
    rank1 = mated > scores[:n_enrolled].max(axis=1, where=~np.eye(n, n_enrolled, dtype=bool)[:n_enrolled],
                                                initial=-np.inf)
    for r, t in enumerate((0.1, 0.05)):
        best = None
        for thr in np.unique(np.r_[top_impostor, mated]):
            if np.mean(top_impostor >= thr) <= t:
                fnir = 1 - np.mean(rank1 & (mated >= thr))
                best = fnir if best is None else min(best, fnir)
        assert rows.value.values[r] == pytest.approx(best, abs=1e-12)
        assert rows.lower.values[r] <= rows.value.values[r] <= rows.upper.values[r]


def test_same_table_on_the_comparison_list_and_for_the_same_seed(cube, table):
    listed = headline.summary(bioxr.to_comparisons(cube), **B)
    for name in ("value", "lower", "upper", "errors", "trials", "threshold"):
        np.testing.assert_allclose(listed[name].values, table[name].values, rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(listed.flags.values, table.flags.values)
    few = dict(eer_methods=("rocch", "nearest"), fmr=(0.01,), fnmr=(0.1,), fpir=())
    again = headline.summary(cube, **few, **B)
    xr.testing.assert_identical(again, headline.summary(cube, **few, **B))  # the same seed, the same table
    assert again.upper.values[0] == table.upper.values[0]  # the rocch EER row, as in the full table
    other = headline.summary(cube, n_replicates=300, seed=5, **few)
    assert not np.array_equal(other.upper.values, again.upper.values, equal_nan=True)
    narrow = headline.summary(cube, level=0.5, **few, **B)
    table = again
    finite = np.isfinite(table.lower.values) & (table.metric.values != "FTE") & (table.metric.values != "FTA")
    assert ((narrow.upper - narrow.lower).values[finite] < (table.upper - table.lower).values[finite]).all()


def test_csv_round_trips_exactly(tmp_path, table):
    path = tmp_path / "summary.csv"
    headline.to_csv(table, path)
    back = headline.read_csv(path)
    assert list(back.columns) == list(headline.COLUMNS)
    for name in ("value", "lower", "upper", "errors", "trials", "units", "threshold"):
        np.testing.assert_array_equal(back[name].to_numpy(dtype=float), table[name].values)
    for name in ("metric", "at", "convention", "flags"):
        assert back[name].tolist() == table[name].values.tolist()


def test_latex_and_markdown_hold_the_rounded_numbers(table):
    tex = headline.to_latex(table, caption="Face & fingers")
    body = [line for line in tex.splitlines() if line.endswith(r"\\")][1:]  # the header line first
    assert len(body) == table.sizes["row"]
    for line, v, lo, hi in zip(body, table.value.values, table.lower.values, table.upper.values):
        cells = line[:-2].split(" & ")
        if np.isfinite(v):
            assert float(cells[3].replace(r"\%", "")) == pytest.approx(100 * v, rel=5.1e-3)
            got = [float(x) for x in re.findall(r"([\d.]+)\\%", cells[4])]
            assert got == pytest.approx([100 * lo, 100 * hi], rel=5.1e-3, abs=1e-9)
        else:
            assert cells[3] == ""
    assert r"\caption{Face \& fingers}" in tex and r"\toprule" in tex
    md = headline.to_markdown(table)
    assert md.count("\n|") == table.sizes["row"] + 1 and "rule of 30" in md


def test_bad_input_is_refused(cube):
    with pytest.raises(ValueError, match="fmr targets"):
        headline.summary(cube, fmr=(0.0,), intervals=False)
    with pytest.raises(ValueError, match="not EER methods"):
        headline.summary(cube, eer_methods=("median",), intervals=False)
    with pytest.raises(ValueError, match="level"):
        headline.summary(cube, level=1.5)


def test_top_level_name():
    assert bioxr.summary is headline.summary


def test_resolution_is_one_over_the_comparisons():
    rng = np.random.default_rng(1)
    for n_nm, resolvable in ((700, False), (999, False), (1000, True), (1500, True)):
        table = headline.summary(bioxr.from_scores(rng.normal(3, 1, 50), rng.normal(0, 1, n_nm)), fmr=(1e-3,),
                                 eer_methods=(), fnmr=(), identification=False, intervals=False)
        row = _rows(table, "FNMR")
        assert np.isfinite(row.value.item()) == resolvable, n_nm
        assert ("not resolvable" in row.flags.item()) != resolvable


def test_rule_of_30_is_fewer_than_30():
    assert headline._thirty(30, "false matches") == ""
    assert headline._thirty(29, "false matches") == "29 false matches (< 30)"
    assert headline._thirty(np.nan, "false matches") == ""
    assert headline._thirty(1, "false matches set this threshold") == "1 false match set this threshold (< 30)"


def test_a_system_dimension_gives_one_table_per_system(tmp_path, cube):
    other = bioxr.simulate.gaussian(n_subjects=40, n_samples=2, seed=9)
    both = xr.concat([cube, other], dim="system").assign_coords(system=["face", "finger"])
    kw = dict(eer_methods=("rocch",), fmr=(0.01,), fnmr=(0.1,), fpir=(), **B)
    table = headline.summary(both, **kw)
    n = table.sizes["row"] // 2
    assert table.system.values.tolist() == ["face"] * n + ["finger"] * n
    for k, one in enumerate((cube, other)):
        alone = headline.summary(one, **kw)
        np.testing.assert_array_equal(table.value.values[k * n:(k + 1) * n], alone.value.values)
        np.testing.assert_array_equal(table.upper.values[k * n:(k + 1) * n], alone.upper.values)
    headline.to_csv(table, tmp_path / "s.csv")
    back = headline.read_csv(tmp_path / "s.csv")
    assert back.system.tolist() == table.system.values.tolist()
    assert headline.to_latex(table).splitlines()[2].startswith("system & metric")
