"""Two systems on the same subjects: stacking, the paired subject bootstrap, McNemar, Holm.

Checked against a brute-force paired resampling written here (subjects
resampled, both systems' comparisons rebuilt with their weights, the
statistics computed by plain code), against the engine of
:mod:`bioxr.bootstrap` on the same draws, scipy's binomial test, a
hand-written Obuchowski (1998) statistic, Holm's step-down by hand (and
statsmodels when installed), and seeded Monte Carlo studies of the type I
error and the power.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

import bioxr
from bioxr import simulate
from bioxr._core import FewReplicatesWarning, flat_comparisons
from bioxr.bootstrap import bootstrap_replicates, subject_draws
from bioxr.systems import (
    adjust_p_values,
    mcnemar_test,
    paired_difference,
    stack_systems,
    system_bands,
)


@pytest.fixture(autouse=True)
def _few_replicates_are_fine_here():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewReplicatesWarning)
        yield


def _labelled(cube):
    """The cube with probe and reference ids as indexes (so cubes align on labels)."""
    return cube.assign_coords(probe=cube.probe_id.values, reference=cube.reference_id.values)


def _null_lists(rng, n_subjects, n_samples, noise=0.5, subject_sd=0.7, shift=0.0):
    """Two systems on the same comparisons, the same system plus independent noise, as a stacked list (numpy only)."""
    subj = np.repeat(np.arange(n_subjects), n_samples)
    p = np.repeat(subj, n_subjects)
    r = np.tile(np.arange(n_subjects), subj.size)
    mated = p == r
    u = rng.normal(0, subject_sd, n_subjects)
    e = rng.normal(0, 1, p.size)
    scale = 1 / np.sqrt(1 + noise**2)
    scores = [(e + rng.normal(0, noise, p.size)) * scale + mated * (3.0 + k * shift + u[p]) for k in range(2)]
    labels = np.array([f"s{i:03d}" for i in range(n_subjects)])
    return bioxr.comparison_list(np.concatenate(scores), subject=np.tile(labels[p], 2),
                                 reference_subject=np.tile(labels[r], 2),
                                 coords={"system": np.repeat(["A", "B"], p.size)})


# ------------------------------------------------------------------ brute force
def _weighted_curves(scores, p, r, mated, w):
    """FMR and FNMR at every distinct score (lenient to strict), mated weighted w_p, non-mated w_p w_r."""
    t = np.unique(scores)
    wm, wn = w[p[mated]], w[p[~mated]] * w[r[~mated]]
    sm, sn = scores[mated], scores[~mated]
    fnmr = np.array([wm[sm < x].sum() for x in t]) / wm.sum()
    fmr = np.array([wn[sn >= x].sum() for x in t]) / wn.sum()
    return t, fmr, fnmr


def _interpolated_eer(fmr, fnmr):
    x, y = np.r_[1.0, fmr, 0.0], np.r_[0.0, fnmr, 1.0]
    d = y - x
    k = int(np.flatnonzero(d >= 0)[0])
    if d[k] == 0:
        return x[k]
    s = -d[k - 1] / (d[k] - d[k - 1])
    return x[k - 1] + s * (x[k] - x[k - 1])


def _brute_force(stacked, statistic, n_replicates, seed, target=None, threshold=None):
    """Replicate statistics of each system by resampling subjects and recounting (pair weights w_a w_c)."""
    names = [str(v) for v in stacked.system.values] if isinstance(stacked, xr.DataArray) else ["A", "B"]
    flat = [flat_comparisons(stacked.sel(system=n, drop=True)) for n in names]
    units = np.unique(np.concatenate([np.r_[f[1], f[2]] for f in flat]))  # one joint, sorted coding
    draws = subject_draws(units.size, n_replicates, seed=seed)
    out = np.empty((n_replicates, len(names)))
    for b in range(n_replicates):
        w = np.bincount(draws[b], minlength=units.size).astype(float)
        for k, (scores, ps, rs, mated, _) in enumerate(flat):
            p, r = np.searchsorted(units, ps), np.searchsorted(units, rs)
            _, fmr, fnmr = _weighted_curves(scores, p, r, mated, w)
            if statistic == "eer":
                out[b, k] = _interpolated_eer(fmr, fnmr)
            elif statistic == "fnmr_at_fmr":
                out[b, k] = fnmr[int(np.flatnonzero(fmr <= target)[0])]
            else:
                wn = w[p[~mated]] * w[r[~mated]]
                out[b, k] = wn[scores[~mated] >= threshold[k]].sum() / wn.sum()
    return out


@pytest.mark.parametrize("statistic", ["eer", "fnmr_at_fmr", "fmr"])
def test_replicates_equal_brute_force_paired_resampling(statistic):
    cube = simulate.systems(10, 2, shift=-0.5, noise=0.7, seed=5)
    kw = {"eer": {"method": "interpolated"}, "fnmr_at_fmr": {"fmr": 0.1},
          "fmr": {"threshold": {"A": 1.0, "B": 1.2}}}[statistic]
    res = paired_difference(cube, statistic, n_replicates=60, seed=11, fmr_variance="pigeonhole", **kw)
    brute = _brute_force(cube, statistic, 60, 11, target=kw.get("fmr"), threshold=[1.0, 1.2])
    d = brute[:, 1] - brute[:, 0]
    got = res.difference_replicates.values.reshape(60)
    np.testing.assert_allclose(got, d, atol=1e-12)
    lo, hi = np.quantile(d, [0.025, 0.975])
    np.testing.assert_allclose(res.difference_interval.values.ravel(), [lo, hi], atol=1e-12)
    below, above = (d <= 0).sum(), (d >= 0).sum()
    assert res.p_value.item() == pytest.approx(min(1, 2 * (min(below, above) + 1) / 61))
    # each system's estimate is the exact statistic of bioxr.verification
    exact = {"eer": lambda s: s.bio.eer(method="interpolated").eer.item(),
             "fnmr_at_fmr": lambda s: s.bio.fnmr_at_fmr(0.1).fnmr.item(),
             "fmr": lambda s, t: s.bio.fmr(t).fmr.item()}[statistic]
    for k, name in enumerate("AB"):
        sub = cube.sel(system=name, drop=True)
        want = exact(sub, [1.0, 1.2][k]) if statistic == "fmr" else exact(sub)
        assert res.estimate.values.ravel()[k] == pytest.approx(want, abs=1e-15)


def test_same_draws_as_bioxr_bootstrap_engine():
    """With the same seed and subject coding, each system's replicates are bootstrap_replicates' own."""
    cube = simulate.systems(25, 3, noise=0.5, seed=2)
    res = paired_difference(cube, "fnmr", threshold=2.2, n_replicates=80, seed=4, fmr_variance="pigeonhole")
    reps = [bootstrap_replicates(cube.sel(system=s, drop=True), thresholds=[2.2], n_replicates=80, seed=4,
                                 fmr_variance="pigeonhole").fnmr.values[:, 0] for s in "AB"]
    np.testing.assert_allclose(res.difference_replicates.values.ravel(), reps[1] - reps[0], atol=1e-12)


def test_moment_corrected_fmr_replicates():
    """Each system's replicate FMR deviations rescaled to its moment variance, on the shared draws."""
    from bioxr.bootstrap._stats import _Stats

    cube = simulate.systems(30, 3, noise=0.5, seed=21)
    res = paired_difference(cube, "fmr", threshold=1.2, n_replicates=150, seed=8)
    want = []
    for s in "AB":
        sub = cube.sel(system=s, drop=True)
        raw = bootstrap_replicates(sub, thresholds=[1.2], n_replicates=150, seed=8, fmr_variance="pigeonhole")
        dev = raw.fmr.values[:, 0] - raw.fmr_point.item()
        moment = _Stats(sub, [1.2], "subject").fmr_variance()[0]
        assert moment > 0
        want.append(raw.fmr_point.item() + dev * np.sqrt(moment / np.mean(dev**2)))
    np.testing.assert_allclose(res.difference_replicates.values.ravel(), want[1] - want[0], atol=1e-12)


def test_same_replicates_as_eer_interval_on_a_quantile_grid():
    """On a quantile grid: eer_interval's replicates, re-centred on the exact EER (the grid's resolution cancels)."""
    from bioxr.bootstrap import eer_interval
    from bioxr.eer import eer_point

    cube = simulate.systems(40, 3, shift=-0.3, seed=12)
    res = paired_difference(cube, n_replicates=100, seed=5, fmr_variance="pigeonhole")
    centred = []
    for s in "AB":
        sub = cube.sel(system=s, drop=True)
        ei = eer_interval(sub, n_replicates=100, seed=5, fmr_variance="pigeonhole")
        reps = bootstrap_replicates(sub, n_replicates=100, seed=5, fmr_variance="pigeonhole")
        assert reps.sizes["threshold"] < 800  # a quantile grid: the grid's EER differs from the exact one
        grid_eer = eer_point(np.r_[1.0, reps.fmr_point.values, 0.0], np.r_[0.0, reps.fnmr_point.values, 1.0], "rocch")[0]
        centred.append(ei.eer_replicates.values - grid_eer + ei.eer.item())
        assert grid_eer != ei.eer.item()
    np.testing.assert_allclose(res.difference_replicates.values.ravel(), centred[1] - centred[0], atol=1e-12)


# ------------------------------------------------------------------ cube = list, stacking
@pytest.mark.parametrize("statistic,kw", [("eer", {}), ("eer", {"convention": "bob"}),
                                          ("fnmr_at_fmr", {"fmr": [0.05, 0.01]}), ("fnmr", {"threshold": 2.0})])
def test_cube_and_comparison_list_agree(statistic, kw):
    cube = simulate.systems(30, 2, n_systems=3, shift=-0.3, seed=8)
    a = paired_difference(cube, statistic, n_replicates=100, seed=1, pairs="all", **kw)
    b = paired_difference(bioxr.to_comparisons(cube), statistic, n_replicates=100, seed=1, pairs="all", **kw)
    for v in ("estimate", "difference", "difference_interval", "p_value", "p_adjusted", "difference_replicates"):
        np.testing.assert_allclose(a[v].values, b[v].values, atol=1e-14, err_msg=v)
    assert a.pair.values.tolist() == ["B - A", "C - A", "C - B"]


def test_stack_cubes_aligns_labels_and_lists_align_keys():
    a = _labelled(simulate.gaussian(20, 2, seed=0))
    b = _labelled(simulate.gaussian(20, 2, seed=1))
    shuffled = b.isel(probe=np.random.default_rng(0).permutation(40), reference=np.arange(20)[::-1])
    both = stack_systems({"A": a, "B": shuffled})
    xr.testing.assert_equal(both.sel(system="B", drop=True).reset_coords(drop=True), b.reset_coords(drop=True))
    la, lb = bioxr.to_comparisons(a), bioxr.to_comparisons(b)
    lb = lb.isel(comparison=np.random.default_rng(1).permutation(lb.sizes["comparison"]))
    lists = stack_systems({"A": la, "B": lb})
    assert lists.attrs["probe_dims"][0] == "system"
    for k in ("eer", "fnmr_at_fmr"):
        kw = {"fmr": 0.05} if k == "fnmr_at_fmr" else {}
        x = paired_difference(both, k, n_replicates=60, seed=3, **kw)
        y = paired_difference(lists, k, n_replicates=60, seed=3, **kw)
        np.testing.assert_allclose(x.difference_replicates.values, y.difference_replicates.values, atol=1e-14)
    m1, m2 = mcnemar_test(both, 1.8), mcnemar_test(lists, 1.8)
    for v in ("b", "c", "n_paired", "p_exact", "p_cluster"):
        np.testing.assert_allclose(m1[v].values, m2[v].values, err_msg=v)
    m3 = mcnemar_test(bioxr.to_comparisons(both), 1.8)
    np.testing.assert_allclose(m1.p_cluster.values, m3.p_cluster.values)
    # lists without sample ids: repeated (subject, reference_subject) keys pair in their order of occurrence
    bare = {k: d.drop_vars(["probe_id", "reference_id", "probe"]).assign_attrs(probe_dims=[])
            for k, d in (("A", bioxr.to_comparisons(a)), ("B", bioxr.to_comparisons(b)))}
    plain = stack_systems(bare)
    assert plain.attrs["aligned_on"] == ["subject", "reference_subject"]
    m4 = mcnemar_test(plain, 1.8)
    for v in ("b", "c", "n_paired", "p_cluster"):
        np.testing.assert_allclose(m1[v].values, m4[v].values, err_msg=v)


def test_clear_errors():
    a = simulate.gaussian(20, 2, seed=0)
    fewer = a.isel(probe=slice(4, None), reference=slice(2, None))
    with pytest.raises(ValueError, match=r"'B' lacks 2 of 'A''s 20 subjects .* and has 0 that 'A' lacks"):
        stack_systems({"A": a, "B": fewer})
    la, lb = bioxr.to_comparisons(a), bioxr.to_comparisons(fewer)
    with pytest.raises(ValueError, match="lacks 2 of 'A''s 20 subjects"):
        stack_systems({"A": la, "B": lb})
    with pytest.raises(ValueError, match="lacks 0 of 'A''s 18 subjects and has 2"):
        stack_systems({"A": lb.isel(comparison=slice(0, 100)), "B": la})
    cube = simulate.systems(20, 2, seed=0)
    with pytest.raises(ValueError, match="statistic='auc'; choose one of"):
        paired_difference(cube, "auc")
    with pytest.raises(ValueError, match=r"statistic='fmr' needs threshold="):
        paired_difference(cube, "fmr")
    with pytest.raises(ValueError, match=r"gives no threshold for \['B'\]"):
        paired_difference(cube, "fnmr", threshold={"A": 1.0})
    with pytest.raises(ValueError, match=r"gives no threshold for \['B'\]"):
        mcnemar_test(cube, {"A": 1.0})
    with pytest.raises(ValueError, match="needs fmr="):
        paired_difference(cube, "fnmr_at_fmr")
    with pytest.raises(ValueError, match="no 'system' dimension"):
        paired_difference(a)
    with pytest.raises(ValueError, match="baseline='Z' is not one of"):
        paired_difference(cube, baseline="Z")
    with pytest.raises(ValueError, match="adjust='fdr'"):
        paired_difference(cube, adjust="fdr")
    with pytest.raises(ValueError, match="mix score kinds"):
        stack_systems({"A": a, "B": a.assign_attrs(score_kind="distance")})


# ------------------------------------------------------------------ Monte Carlo: type I error and power
def test_type_one_error_same_system_plus_noise():
    """200 null datasets, 39 replicates (p <= 0.05 then means no replicate beyond 0: exact 5% if calibrated)."""
    rng = np.random.default_rng(2024)
    p, d, sd = [], [], []
    for i in range(200):
        data = _null_lists(rng, 30, 3)
        res = paired_difference(data, "fnmr", threshold=2.0, n_replicates=39, seed=i)
        p.append(res.p_value.item())
        d.append(res.difference.item())
        sd.append(res.difference_replicates.std().item())
    rate = np.mean(np.array(p) <= 0.05)
    assert 0.03 <= rate <= 0.07, rate
    # the paired bootstrap's spread is the spread of the difference across datasets
    ratio = np.sqrt(np.mean(np.square(sd))) / np.std(d)
    assert 0.85 <= ratio <= 1.15, ratio


def test_power_against_a_known_shift():
    """B's mated scores 0.6 lower: its EER is higher; the true difference from the normal model."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    def true_eer(mean, sd):
        t = brentq(lambda x: norm.cdf((x - mean) / sd) - norm.sf(x), -5, 10)
        return norm.sf(t)

    sd = np.sqrt(1 + 0.7**2)
    truth = true_eer(2.4, sd) - true_eer(3.0, sd)
    rejected, covered, diffs = 0, 0, []
    for i in range(20):
        cube = simulate.systems(60, 2, shift=-0.6, noise=0.5, seed=300 + i)
        res = paired_difference(cube, "eer", method="interpolated", n_replicates=39, seed=i)
        rejected += res.p_value.item() <= 0.05
        lo, hi = res.difference_interval.values.ravel()
        covered += lo <= truth <= hi
        diffs.append(res.difference.item())
    assert rejected >= 15, rejected
    assert covered >= 16, covered
    assert abs(np.mean(diffs) - truth) < 0.25 * truth


# ------------------------------------------------------------------ McNemar
def test_exact_mcnemar_matches_scipy_binomtest():
    cube = simulate.systems(40, 3, shift=-0.4, noise=1.0, seed=9)
    res = mcnemar_test(cube, {"A": 2.0, "B": 1.8}, cluster=False)
    sa, sb = (cube.sel(system=s, drop=True) for s in "AB")
    mated = (cube.subject == cube.reference_subject).values
    for rate, where, err in (("fnmr", mated, lambda s, t: s.values < t), ("fmr", ~mated, lambda s, t: s.values >= t)):
        ea, eb = err(sa, 2.0)[where], err(sb, 1.8)[where]
        b, c = int((ea & ~eb).sum()), int((eb & ~ea).sum())
        row = res.sel(rate=rate, pair="B - A")
        assert (row.b.item(), row.c.item()) == (b, c)
        assert row.p_exact.item() == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-12)
        assert row.p_value.item() == row.p_exact.item()


def test_cluster_mcnemar_is_obuchowski_and_dyadic():
    cube = simulate.systems(25, 4, shift=-0.3, noise=1.0, subject_system_sd=0.8, seed=3)
    res = mcnemar_test(cube, 2.3, kind="both")
    mated = (cube.subject == cube.reference_subject).values
    err = {s: cube.sel(system=s, drop=True).values for s in "AB"}
    ps = np.broadcast_to(cube.subject.values[:, None], mated.shape)
    rs = np.broadcast_to(cube.reference_subject.values[None, :], mated.shape)
    # mated: Obuchowski's statistic from per-subject error counts x_i (A) and y_i (B)
    x = pd.Series((err["A"] < 2.3)[mated]).groupby(ps[mated]).sum()
    y = pd.Series((err["B"] < 2.3)[mated]).groupby(ps[mated]).sum()
    n = pd.Series(np.ones(mated.sum())).groupby(ps[mated]).sum()
    K, N = len(n), n.sum()
    pa, pb = x.sum() / N, y.sum() / N
    va = K / (K - 1) * ((x - n * pa) ** 2).sum() / N**2
    vb = K / (K - 1) * ((y - n * pb) ** 2).sum() / N**2
    cov = K / (K - 1) * ((x - n * pa) * (y - n * pb)).sum() / N**2
    x2 = (pa - pb) ** 2 / (va + vb - 2 * cov)
    row = res.sel(rate="fnmr", pair="B - A")
    assert row.chi2_cluster.item() == pytest.approx(x2, rel=1e-10)
    assert row.p_cluster.item() == pytest.approx(stats.chi2.sf(x2, 1), rel=1e-10)
    # non-mated: every two comparisons that share a subject on either side, summed by brute force
    nm = ~mated
    d = (err["B"] >= 2.3)[nm].astype(float) - (err["A"] >= 2.3)[nm].astype(float)
    z = d - d.mean()
    a, c = ps[nm], rs[nm]
    share = (a[:, None] == a[None, :]) | (a[:, None] == c[None, :]) | (c[:, None] == a[None, :]) | (c[:, None] == c[None, :])
    v = z @ share @ z * K / (K - 1)
    row = res.sel(rate="fmr", pair="B - A")
    assert row.chi2_cluster.item() == pytest.approx(d.sum() ** 2 / v, rel=1e-10)


def test_cluster_mcnemar_is_mcnemar_with_one_comparison_per_subject():
    cube = simulate.systems(400, 1, shift=-0.3, noise=1.0, seed=1)
    row = mcnemar_test(cube, 2.5, kind="fnmr").sel(rate="fnmr", pair="B - A")
    b, c, n = row.b.item(), row.c.item(), row.n_paired.item()
    chi2_mcnemar = (b - c) ** 2 / (b + c)
    assert row.chi2_cluster.item() == pytest.approx(chi2_mcnemar / (1 - (c - b) ** 2 / (n * (b + c))) * (n - 1) / n)


# ------------------------------------------------------------------ Holm
def test_holm_by_hand_and_against_statsmodels():
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.2, np.nan])
    # by hand: sorted 0.005, 0.01, 0.03, 0.04, 0.2 times 5, 4, 3, 2, 1 -> 0.025, 0.04, 0.09, 0.08, 0.2, then running max
    want = [0.04, 0.09, 0.09, 0.025, 0.2, np.nan]
    np.testing.assert_allclose(adjust_p_values(p), want)
    np.testing.assert_allclose(adjust_p_values(p, "bonferroni"), [0.05, 0.2, 0.15, 0.025, 1.0, np.nan])
    rng = np.random.default_rng(0)
    q = rng.uniform(0, 0.2, 12) ** 2
    manual = np.empty(12)
    order = np.argsort(q)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (12 - rank) * q[i]))
        manual[i] = running
    np.testing.assert_allclose(adjust_p_values(q), manual)


def test_holm_against_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    q = np.random.default_rng(0).uniform(0, 0.2, 12) ** 2
    np.testing.assert_allclose(adjust_p_values(q), multitest.multipletests(q, method="holm")[1])
    np.testing.assert_allclose(adjust_p_values(q, "bonferroni"), multitest.multipletests(q, method="bonferroni")[1])


def test_family_of_three_systems_is_holm_adjusted():
    cube = simulate.systems(40, 2, n_systems=3, shift=-0.5, seed=6)
    res = paired_difference(cube, "fnmr_at_fmr", fmr=[0.05, 0.01], n_replicates=200, seed=1)
    assert res.p_value.shape == (2, 2) and res.attrs["family"].startswith("4 hypotheses")
    np.testing.assert_allclose(res.p_adjusted.values.ravel(), adjust_p_values(res.p_value.values.ravel()))
    base = paired_difference(cube, "fnmr_at_fmr", fmr=[0.05, 0.01], n_replicates=200, seed=1, baseline="C")
    assert base.pair.values.tolist() == ["A - C", "B - C"]


# ------------------------------------------------------------------ the chart
def test_system_bands_and_chart():
    from bioxr.plot import render_svg, systems_det_chart

    cube = simulate.systems(40, 2, shift=-0.5, seed=1)
    band = system_bands(cube, n_replicates=100, seed=1)
    single = bioxr.bootstrap.bootstrap_curve(cube.sel(system="B", drop=True), n_replicates=100, seed=1)
    got = band.fnmr_interval.sel(system="B").dropna("threshold", how="all")
    np.testing.assert_allclose(got.values, single.fnmr_interval.values)
    diff = paired_difference(cube, n_replicates=200, seed=1)
    chart = systems_det_chart(cube, band=band, difference=diff)
    spec = chart.to_dict()
    assert any("B − A" in line or "B - A" in line for line in spec["title"]["subtitle"])
    assert spec["title"]["subtitle"][0] == "80 mated and 3,120 non-mated comparisons in each system"
    assert "<svg" in render_svg(chart)[:200]


# ------------------------------------------------------------------ real data
def test_bssr1_face_against_finger_on_the_same_subjects(face_csv, finger_csv):
    from bioxr.io import read_matrix_csv

    face = read_matrix_csv(face_csv, missing=-1)
    finger = read_matrix_csv(finger_csv)
    both = stack_systems({"face-C": face, "finger-left": finger})
    assert dict(both.sizes) == {"system": 2, "probe": 517, "reference": 517}
    res = paired_difference(both, n_replicates=200, seed=0)
    eers = [face.bio.eer().eer.item(), finger.bio.eer().eer.item()]
    np.testing.assert_allclose(res.estimate.values, eers, rtol=0, atol=1e-15)
    assert res.difference.item() == pytest.approx(eers[1] - eers[0])
    lo, hi = res.difference_interval.values.ravel()
    assert 0 < lo < res.difference.item() < hi  # finger's EER is higher, clearly
    op = both.bio.fnmr_at_fmr(1e-3, dim="probe")
    m = mcnemar_test(both, op.threshold, kind="fmr").sel(pair="finger-left - face-C", rate="fmr")
    mated = (both.subject == both.reference_subject).values
    fm = [(both.sel(system=s).values >= t)[~mated] for s, t in zip(both.system.values, op.threshold.values)]
    ok = ~np.isnan(face.values)[~mated]
    assert (m.b.item(), m.c.item()) == (int((fm[0] & ~fm[1] & ok).sum()), int((fm[1] & ~fm[0] & ok).sum()))
    assert m.design_effect.item() > 3  # impostor errors cluster in subjects: the exact test is far too confident


def test_describe_says_the_numbers_of_the_result():
    both = bioxr.simulate.systems(n_subjects=40, n_samples=2, shift=[0.0, -0.5], seed=3)
    d = paired_difference(both, "fnmr_at_fmr", fmr=[0.01, 0.1], n_replicates=500, seed=1)
    text = bioxr.systems.describe(d)
    for k in range(2):
        lo, hi = d.difference_interval.values[0, k]
        assert f"{100 * d.difference.values[0, k]:+.2f} points" in text
        assert f"{100 * lo:+.2f} to {100 * hi:+.2f}" in text
        assert f"Holm-adjusted {d.p_adjusted.values[0, k]:.2g}" in text
    m = mcnemar_test(both, 1.5)
    text = bioxr.systems.describe(m)
    assert f"{int(m.b.values[0, 0]):,} are false non-matches of A only and {int(m.c.values[0, 0]):,} of B only" in text
