"""The gallery's share of the variance of identification rates (bioxr/bootstrap/_gallery.py), by brute force and
Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr.bootstrap._gallery import Gallery, inflation, moments


def test_best_score_per_enrolled_subject_by_brute_force():
    rng = np.random.default_rng(0)
    ref_subject = np.array(["c", "a", "b", "a", "c", "b"])
    subject = np.array(["a", "a", "b", "d"])
    values = rng.normal(size=(4, 6))
    values[1, 2] = np.nan
    cube = bioxr.score_cube(values, subject=subject, reference_subject=ref_subject, score_kind="distance",
                            probe_id=["p0", "r1", "p2", "p3"], reference_id=["r0", "r1", "r2", "r3", "r4", "r5"])
    ds = bioxr.outcomes.outcomes(cube)
    gal = Gallery.from_cube(cube, ds["mated_rank_min"])
    assert list(gal.gallery) == ["a", "b", "c"]
    for p in range(4):
        for g, name in enumerate(gal.gallery):
            cols = [c for c in range(6) if ref_subject[c] == name and not (p == 1 and c == 1)]
            vals = [-values[p, c] for c in cols if not np.isnan(values[p, c])]  # distance: negated
            assert gal.best[p, g] == (max(vals) if vals else -np.inf)
    assert list(gal.mate) == [0, 0, 1, -1]
    # the mate's best score is the outcome cube's mated score, and the beaten count its rank
    for p in range(3):
        assert -gal.best[p, gal.mate[p]] == ds["mated_score"].values[p]
        nm = [g for g in range(3) if g != gal.mate[p] and np.isfinite(gal.best[p, g])]
        assert 1 + sum(gal.best[p, g] > gal.best[p, gal.mate[p]] for g in nm) == ds["mated_rank_min"].values[p]


def _experiment(rng, n=60, k=3, lamb=1.0, mean=2.0):
    """Closed set: one gallery entry per subject with a lamb effect, k probes per subject, no wolves."""
    subj = np.repeat(np.arange(n), k)
    w = rng.normal(0, lamb, n)
    best = w[None, :] + rng.standard_normal((n * k, n))
    best[np.arange(n * k), subj] = mean + rng.standard_normal(n * k)
    gal = Gallery(best, subj, np.arange(n), subj.copy())
    mated = best[np.arange(n * k), subj]
    beats = (best > mated[:, None]).sum(axis=1)  # the mate never beats itself
    return gal, mated, beats


@pytest.mark.parametrize("lamb", [0.0, 1.0])
def test_crossed_moment_variance_matches_monte_carlo(lamb):
    """Mean of V over experiments against the variance of the CMC across them (ranks 1, 3 and 10)."""
    rng = np.random.default_rng(1)
    cuts = np.array([0, 2, 9])
    cmc, v_tot, v_pr = [], [], []
    for _ in range(300):
        gal, mated, beats = _experiment(rng, lamb=lamb)
        y = (beats[:, None] <= cuts[None, :]).astype(float)
        rows = np.arange(mated.size)
        vt, vp = moments(gal, rows, np.repeat(mated[:, None], cuts.size, axis=1), cuts, y)
        cmc.append(y.mean(axis=0))
        v_tot.append(vt)
        v_pr.append(vp)
    true = np.var(np.array(cmc), axis=0, ddof=1)
    est, probe = np.mean(v_tot, axis=0), np.mean(v_pr, axis=0)
    np.testing.assert_array_less(np.abs(np.log(est / true)), np.log(1.3))  # within 30% (MC SE of a variance ~8%)
    if lamb:
        assert np.all(probe < 0.75 * true)  # the probe side alone misses the lambs' share
    else:
        np.testing.assert_array_less(np.abs(np.log(probe / true)), np.log(1.3))


def test_inflation_is_one_without_boundary_searches_and_never_below_one():
    rng = np.random.default_rng(2)
    gal, mated, beats = _experiment(rng, lamb=0.0)
    y = (beats[:, None] <= np.array([0])).astype(float)
    f = inflation(gal, np.arange(mated.size), mated[:, None], np.array([0]), y)
    assert f.shape == (1,) and f[0] >= 1.0
    # a level no search reaches: every search fails, nothing at the boundary
    f = inflation(gal, np.arange(mated.size), np.full((mated.size, 1), -np.inf), np.array([0]), np.zeros((mated.size, 1)))
    assert f[0] == 1.0


def test_cmc_interval_widens_with_lambs_and_records_it():
    rng = np.random.default_rng(3)
    n, k = 50, 3
    subj = np.repeat(np.arange(n), k)
    scores = rng.normal(0, 1.2, n)[None, :] + rng.standard_normal((n * k, n))
    scores[np.arange(n * k), subj] = 2.0 + rng.standard_normal(n * k)
    cube = bioxr.score_cube(scores, subject=subj, reference_subject=np.arange(n))
    kw = dict(max_rank=3, n_replicates=400, seed=0)
    with_g = bioxr.bootstrap.cmc_interval(cube, **kw)
    without = bioxr.bootstrap.cmc_interval(cube, gallery_variance=False, **kw)
    width = lambda r: (r.cmc_interval.sel(bound="upper") - r.cmc_interval.sel(bound="lower")).values  # noqa: E731
    assert np.all(width(with_g) >= width(without) - 1e-12) and np.any(width(with_g) > 1.1 * width(without))
    assert "gallery subjects' share" in with_g.attrs["gallery_variance"]
    assert "not requested" in without.attrs["gallery_variance"]
    xr.testing.assert_equal(with_g.cmc, without.cmc)  # the point estimate is the same
    # from the outcome cube the scores are gone: said in attrs
    res = bioxr.bootstrap.cmc_interval(bioxr.outcomes.outcomes(cube), **kw)
    assert "not included" in res.attrs["gallery_variance"]
    xr.testing.assert_allclose(res.cmc_interval, without.cmc_interval)


def test_open_set_fpir_widens_with_lambs():
    rng = np.random.default_rng(4)
    n, k, extra = 50, 2, 40
    subj = np.repeat(np.arange(n + extra), k)
    scores = rng.normal(0, 1.2, n)[None, :] + rng.standard_normal((subj.size, n))
    rows = np.flatnonzero(subj < n)
    scores[rows, subj[rows]] = 3.0 + rng.standard_normal(rows.size)
    cube = bioxr.score_cube(scores, subject=subj, reference_subject=np.arange(n))
    kw = dict(n_replicates=400, seed=0)
    t = [3.0, 3.5]
    a = bioxr.bootstrap.open_set_interval(cube, t, **kw)
    b = bioxr.bootstrap.open_set_interval(cube, t, gallery_variance=False, **kw)
    wa = (a.fpir_interval.sel(bound="upper") - a.fpir_interval.sel(bound="lower")).values
    wb = (b.fpir_interval.sel(bound="upper") - b.fpir_interval.sel(bound="lower")).values
    assert np.all(wa >= wb - 1e-12) and np.any(wa > 1.05 * wb)
    xr.testing.assert_equal(a.dir_interval, b.dir_interval)  # the DIR is left as it was
