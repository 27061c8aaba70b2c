"""Rates of per-individual counts: the bootstrap-t widening and the design warnings (issue 9, item 5)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr._core import DesignWarning
from bioxr._core.designs import concentrated
from bioxr.bootstrap import bootstrap_rate_interval, subject_draws
from bioxr.bootstrap._bounds import ratio_variances


def _unbalanced(seed=0, n=120, pi=0.08, rho=0.4):
    rng = np.random.default_rng(seed)
    m = np.resize(np.array([1, 2, 3, 5, 8, 12, 20]), n)
    a, b = pi * (1 - rho) / rho, (1 - pi) * (1 - rho) / rho
    e = rng.binomial(m, rng.beta(a, b, n))
    return xr.DataArray(e, dims="individual"), xr.DataArray(m, dims="individual")


def test_ratio_variances_equal_a_loop_over_replicates():
    e, m = _unbalanced()
    draws = subject_draws(e.size, 50, seed=3)
    w = np.stack([np.bincount(d, minlength=e.size) for d in draws]).astype(float)
    v, v_b = ratio_variances(w, e.values[:, None], m.values[:, None])
    n = e.size

    def sandwich(ee, mm):
        p = ee.sum() / mm.sum()
        return n / (n - 1) * ((ee - p * mm) ** 2).sum() / mm.sum() ** 2

    assert v[0] == pytest.approx(sandwich(e.values, m.values), rel=1e-12)
    brute = [sandwich(e.values[d], m.values[d]) for d in draws]
    np.testing.assert_allclose(v_b[:, 0], brute, rtol=1e-10)


def test_effective_interval_is_the_union_with_a_brute_force_bootstrap_t():
    e, m = _unbalanced(seed=4)
    B, seed, level = 400, 11, 0.95
    plain = bootstrap_rate_interval(e, m, n_replicates=B, seed=seed, interval="effective")
    # brute force: the same draws, each replicate's ratio and sandwich variance by a loop
    draws = subject_draws(e.size, B, seed=seed)
    n, p = e.size, float(e.sum() / m.sum())

    def ratio_var(d):
        ee, mm = e.values[d].astype(float), m.values[d].astype(float)
        q = ee.sum() / mm.sum()
        return q, n / (n - 1) * ((ee - q * mm) ** 2).sum() / mm.sum() ** 2

    reps = np.array([ratio_var(d) for d in draws])
    s = np.sqrt(ratio_var(np.arange(n))[1])
    t = (reps[:, 0] - p) / np.sqrt(reps[:, 1])
    t_lo, t_hi = np.quantile(t, [0.025, 0.975])
    boot_t = (p - t_hi * s, p - t_lo * s)
    lo, hi = plain.rate_interval.values
    assert hi == pytest.approx(max(hi, boot_t[1]), rel=1e-6) and hi >= boot_t[1] - 1e-9
    assert lo <= boot_t[0] + 1e-9
    assert "bootstrap-t" in plain.attrs["interval"]
    # the skewed case: the bootstrap-t upper bound is the wider one, so the union is what the user gets
    assert hi == pytest.approx(boot_t[1], rel=1e-6)


def test_union_lifts_coverage_in_an_unbalanced_correlated_design():
    """A small Monte Carlo (seeded): coverage of the union is not below the effective count's, and near 95%."""
    pi, hits_union, hits_eff, n_exp = 0.1, 0, 0, 150
    rng = np.random.default_rng(2)
    m = np.resize(np.array([1, 2, 3, 5, 8, 12, 20]), 150)
    rho = 0.4
    a, b = pi * (1 - rho) / rho, (1 - pi) * (1 - rho) / rho
    e = xr.DataArray(rng.binomial(m, rng.beta(a, b, (n_exp, m.size))), dims=("experiment", "individual"))
    mm = xr.DataArray(m, dims="individual")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DesignWarning)
        u = bootstrap_rate_interval(e, mm, n_replicates=400, seed=5).rate_interval
    from bioxr.bootstrap._bounds import effective_count, rate_bounds
    from bioxr.bootstrap.rates import _rate_replicates

    _, _, reps, rate, trials = _rate_replicates(e, mm, "individual", 400, 5)
    eff = rate_bounds(rate, reps, trials, effective_count(rate, reps, trials, m.size), level=0.95, interval="effective")
    hits_union = int(((u.sel(bound="lower") <= pi) & (pi <= u.sel(bound="upper"))).sum())
    hits_eff = int(((eff[:, 0] <= pi) & (pi <= eff[:, 1])).sum())
    assert hits_union >= hits_eff
    assert hits_union / n_exp >= 0.90


def test_concentrated_errors_with_unbalanced_attempts_warn():
    m = xr.DataArray([20] * 10 + [2] * 190, dims="individual")
    e = xr.zeros_like(m).copy(data=[12, 9, 4] + [0] * 197)
    with pytest.warns(DesignWarning, match="concentrated on fewer than 6"):
        bootstrap_rate_interval(e, m, n_replicates=200, seed=0)
    with pytest.warns(DesignWarning, match="beta-binomial"):
        bioxr.correlation.clustered_interval(xr.Dataset({"errors": e, "attempts": m}), design="icc")
    # the beta-binomial design models the propensities: no such warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", DesignWarning)
        bioxr.correlation.clustered_interval(xr.Dataset({"errors": e, "attempts": m}))
    # spread errors (each its own individual) or balanced attempts: no warning from the bootstrap
    spread = xr.zeros_like(m).copy(data=[1] * 25 + [0] * 175)
    balanced = xr.full_like(m, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DesignWarning)
        bootstrap_rate_interval(spread, m, n_replicates=200, seed=0)
        bootstrap_rate_interval(xr.zeros_like(m).copy(data=[5, 4, 3] + [0] * 197), balanced, n_replicates=200, seed=0)
    # the percentile interval makes no variance claim: the concentration check is for "effective"
    assert not bool(concentrated(spread, m, "individual"))


def test_icc_design_warns_with_unbalanced_attempts_and_correlation():
    e, m = _unbalanced(seed=1, n=300, pi=0.1, rho=0.5)
    counts = xr.Dataset({"errors": e, "attempts": m})
    assert float(bioxr.correlation.icc(counts)["rho"]) > 0.1
    with pytest.warns(DesignWarning, match="ICC design effect"):
        bioxr.correlation.clustered_interval(counts, design="icc")
    e0, m0 = _unbalanced(seed=1, n=300, pi=0.1, rho=0.5)
    bal = xr.Dataset({"errors": xr.DataArray(np.random.default_rng(0).binomial(5, 0.1, 300), dims="individual"),
                      "attempts": xr.full_like(m0, 5)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DesignWarning)
        bioxr.correlation.clustered_interval(bal, design="icc")
