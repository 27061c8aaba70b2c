"""The FMR variance of crossed subjects, the corrected pigeonhole bootstrap and the two-level bootstrap.

Each is checked against a brute-force sum or a Monte Carlo study written
here from the model, not against itself.
"""

from __future__ import annotations

import numpy as np
import pytest

import bioxr
from bioxr.bootstrap import _Stats, bootstrap_replicates


def _crossed_cube(rng, n, k, *, wolf=0.0, lamb=0.0, mated_mean=3.0):
    """All-against-all: n subjects with k probes each against one reference each; subject effects on both sides."""
    v = rng.normal(0, wolf, n)  # probe-side ("wolf") effect
    w = rng.normal(0, lamb, n)  # reference-side ("lamb") effect
    subj = np.repeat(np.arange(n), k)
    scores = v[subj][:, None] + w[None, :] + rng.normal(0, 1, (n * k, n))
    scores[np.arange(n * k), subj] += mated_mean
    return bioxr.score_cube(scores, subject=subj, reference_subject=np.arange(n))


def _brute_force_variance(cube, t):
    """Sum of z_i z_j over every two non-mated comparisons that share a subject, over N^2, times n / (n - 1)."""
    s = cube.values
    a = np.broadcast_to(cube.subject.values[:, None], s.shape).ravel()
    c = np.broadcast_to(cube.reference_subject.values[None, :], s.shape).ravel()
    y = (s.ravel() >= t).astype(float)
    keep = a != c
    a, c, y = a[keep], c[keep], y[keep]
    z = y - y.mean()
    share = (a[:, None] == a[None, :]) | (a[:, None] == c[None, :]) | (c[:, None] == a[None, :]) | (c[:, None] == c[None, :])
    n = len(np.union1d(a, c))
    return float(z @ share @ z) / y.size**2 * n / (n - 1)


@pytest.mark.parametrize("effects", [0.0, 0.8])
def test_moment_variance_is_the_sum_over_comparisons_that_share_a_subject(effects):
    rng = np.random.default_rng(3)
    cube = _crossed_cube(rng, 9, 2, wolf=effects, lamb=effects)
    t = np.array([-1.0, 0.3, 1.2, 2.5])
    stats = _Stats(cube, t, "subject")
    got = stats.fmr_variance()
    want = [_brute_force_variance(cube, tk) for tk in np.sort(t)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)


def test_moment_variance_of_a_comparison_list_with_repeated_pairs_and_both_orders():
    rng = np.random.default_rng(5)
    n = 8
    a = rng.integers(0, n, 300)
    c = rng.integers(0, n, 300)
    keep = a != c
    a, c = a[keep], c[keep]
    a = np.r_[a, np.arange(n)]
    c = np.r_[c, np.arange(n)]  # one mated comparison per subject
    score = rng.normal(0, 1, a.size) + 2.0 * (a == c)
    lst = bioxr.comparisons.comparison_list(score, subject=a, reference_subject=c)
    t = np.array([0.0, 1.0])
    got = _Stats(lst, t, "subject").fmr_variance()
    nm = a != c
    for j, tk in enumerate(t):
        y = (score[nm] >= tk).astype(float)
        z = y - y.mean()
        aa, cc = a[nm], c[nm]
        share = (aa[:, None] == aa) | (aa[:, None] == cc) | (cc[:, None] == aa) | (cc[:, None] == cc)
        want = float(z @ share @ z) / y.size**2 * n / (n - 1)
        assert got[j] == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("effects, lo, hi", [(0.0, 0.85, 1.2), (0.7, 0.75, 1.2)])
def test_moment_variance_matches_the_monte_carlo_variance(effects, lo, hi):
    """Across independent experiments: mean estimated variance / empirical variance of the FMR is near 1.

    Without subject effects the pigeonhole bootstrap's variance is about
    three times the truth (Owen 2007); the moment variance is not.
    """
    rng = np.random.default_rng(11)
    t = np.array([1.6])  # FMR about 0.06 marginally without effects
    fmr, v_moment, v_pigeon = [], [], []
    for e in range(120):
        cube = _crossed_cube(rng, 40, 3, wolf=effects, lamb=effects)
        reps = bootstrap_replicates(cube, thresholds=t, n_replicates=200, seed=e, fmr_variance="pigeonhole")
        fmr.append(float(reps.fmr_point[0]))
        v_pigeon.append(float(reps.fmr.var("replicate")[0]))
        v_moment.append(float(_Stats(cube, t, "subject").fmr_variance()[0]))
    truth = np.var(fmr, ddof=1)
    assert lo < np.mean(v_moment) / truth < hi
    if effects == 0.0:
        assert np.mean(v_pigeon) / truth > 2.2  # the over-statement the correction removes


def test_corrected_replicates_carry_the_moment_variance_and_stay_monotone():
    rng = np.random.default_rng(2)
    cube = _crossed_cube(rng, 30, 3)
    reps = bootstrap_replicates(cube, n_replicates=400, seed=1)
    fm = reps.fmr.values
    assert np.all(np.diff(fm, axis=1) <= 1e-15)  # thresholds ascending: FMR never rises
    inner = (reps.fmr_point > 0.01) & (reps.fmr_point < 0.5)
    dev = ((reps.fmr - reps.fmr_point) ** 2).mean("replicate")
    ratio = (dev / reps.fmr_variance).where(inner, drop=True)
    assert float(ratio.min()) > 0.8 and float(ratio.max()) < 1.2
    raw = bootstrap_replicates(cube, n_replicates=400, seed=1, fmr_variance="pigeonhole")
    np.testing.assert_array_equal(raw.fnmr.values, reps.fnmr.values)  # the mated side is untouched


def test_two_level_copies_of_a_subject_get_independent_resamples():
    """Independent attempts: the second stage adds the within-subject variance once more (about 2x), no more.

    Sharing one resample among a subject's copies inflated it about 2.6x.
    """
    rng = np.random.default_rng(4)
    n, k = 300, 6
    subj = np.repeat(np.arange(n), k)
    scores = rng.normal(0, 1, (n * k, n))
    scores[np.arange(n * k), subj] = rng.normal(1.0, 1, n * k)  # independent attempts: rho = 0
    cube = bioxr.score_cube(scores, subject=subj, reference_subject=np.arange(n))
    t = np.array([0.5])
    one = bootstrap_replicates(cube, thresholds=t, n_replicates=1500, seed=3)
    two = bootstrap_replicates(cube, thresholds=t, n_replicates=1500, seed=3, two_level=True)
    ratio = float(two.fnmr.var("replicate")[0] / one.fnmr.var("replicate")[0])
    assert 1.7 < ratio < 2.3


def _brute_force_dof(cube, t):
    """Satterthwaite's df of the subjects' residual totals: each non-mated comparison in both its subjects' totals."""
    s = cube.values
    a = np.broadcast_to(cube.subject.values[:, None], s.shape).ravel()
    c = np.broadcast_to(cube.reference_subject.values[None, :], s.shape).ravel()
    keep = a != c
    y = (s.ravel()[keep] >= t).astype(float)
    z = y - y.mean()
    totals = np.array([z[(a[keep] == u) | (c[keep] == u)].sum() for u in np.union1d(a, c)])
    return float((totals**2).sum() ** 2 / (totals**4).sum())


@pytest.mark.parametrize("effects", [0.0, 0.8])
def test_fmr_interval_is_korn_graubard_on_the_moment_variance(effects):
    """``N / max(1/2, deff) * (z / t_df)^2`` from brute-force sums, then the default binomial interval on it."""
    from scipy import stats as st

    cube = _crossed_cube(np.random.default_rng(11), 12, 3, wolf=effects, lamb=effects)
    t = np.array([0.5, 1.5, 2.2])
    _, _, dof = _Stats(cube, t, "subject").fmr_variance(parts=True)
    np.testing.assert_allclose(dof, [_brute_force_dof(cube, tk) for tk in t], rtol=1e-9)
    res = bioxr.bootstrap.bootstrap_curve(cube, thresholds=t, n_replicates=50, seed=1, level=0.9)
    n_nm = float((cube.subject.values[:, None] != cube.reference_subject.values[None, :]).sum())
    for tk in t:
        p = float(res.fmr.sel(threshold=tk))
        assert 0 < p < 1
        deff = max(0.5, _brute_force_variance(cube, tk) / (p * (1 - p) / n_nm))
        want = n_nm / deff * (st.norm.ppf(0.95) / st.t.ppf(0.95, _brute_force_dof(cube, tk))) ** 2
        assert float(res.fmr_n_eff.sel(threshold=tk)) == pytest.approx(want, rel=1e-9)
        ci = bioxr.intervals.binomial_interval(p * want, want, level=0.9)
        np.testing.assert_allclose(res.fmr_interval.sel(threshold=tk).values, ci.values, rtol=1e-9)
    assert "Korn & Graubard" in res.attrs["interval"]
