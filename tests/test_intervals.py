"""Binomial intervals checked against scipy and independent closed forms.

Reference values: ``scipy.stats.binomtest(...).proportion_ci`` (Wilson and
exact), the algebraic Wilson form written out here, the defining tail
equations of Clopper-Pearson (binomial sums, regularized incomplete beta)
and of Jeffreys (posterior tails by numerical integration), and the rule of
three. Nothing here calls bioxr to compute an expected value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import integrate, special
from scipy import stats

import bioxr
from bioxr import verification
from bioxr.intervals import INTERVAL_METHODS, binomial_interval, rates_interval, rule_of_three


def examples(n: int):
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bounds(ci) -> tuple[float, float]:
    return float(ci.sel(bound="lower")), float(ci.sel(bound="upper"))


def wilson_closed_form(x, n, level):
    """Wilson (1927) written as (x + z^2/2)/(n + z^2) +- z sqrt(n)/(n + z^2) sqrt(p q + z^2/(4n))."""
    z = stats.norm.ppf(1 - (1 - level) / 2)
    p = x / n
    centre = (x + z * z / 2) / (n + z * z)
    half = z * math.sqrt(n) / (n + z * z) * math.sqrt(p * (1 - p) + z * z / (4 * n))
    return centre - half, centre + half


# --------------------------------------------------------------------------
# against scipy
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 7, 40, 333])
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_wilson_and_clopper_pearson_match_scipy_binomtest(n, level):
    k = np.arange(1, n)  # k = 0 and k = n are the one-sided rules, tested below
    wil = binomial_interval(k, n, method="wilson", level=level)
    cp = binomial_interval(k, n, method="clopper-pearson", level=level)
    for i, ki in enumerate(k):
        res = stats.binomtest(int(ki), n)
        w = res.proportion_ci(confidence_level=level, method="wilson")
        e = res.proportion_ci(confidence_level=level, method="exact")
        np.testing.assert_allclose(wil.values[i], [w.low, w.high], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(cp.values[i], [e.low, e.high], rtol=1e-9, atol=1e-12)


@given(
    x=st.floats(0.01, 500), extra=st.floats(0.0, 500), level=st.sampled_from([0.5, 0.9, 0.95, 0.999])
)
@examples(80)
def test_wilson_matches_its_closed_form_and_inverts_the_score_test(x, extra, level):
    assume(x / (x + extra) < 1)  # p == 1 is the one-sided rule
    n = x + extra
    lo, hi = bounds(binomial_interval(x, n, level=level, method="wilson"))
    exp_lo, exp_hi = wilson_closed_form(x, n, level)
    assert lo == pytest.approx(max(exp_lo, 0.0), rel=1e-9, abs=1e-12)
    assert hi == pytest.approx(min(exp_hi, 1.0), rel=1e-9, abs=1e-12)
    # the bounds are where the score statistic equals z: n (p - pi)^2 = z^2 pi (1 - pi)
    z = stats.norm.ppf(1 - (1 - level) / 2)
    p = x / n
    for b in (lo, hi):
        if 0 < b < 1:
            assert n * (p - b) ** 2 == pytest.approx(z * z * b * (1 - b), rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("n", [5, 30, 250])
def test_clopper_pearson_bounds_solve_the_binomial_tail_equations(n):
    alpha = 0.05
    for x in range(1, n):
        lo, hi = bounds(binomial_interval(x, n, method="clopper-pearson"))
        assert stats.binom.sf(x - 1, n, lo) == pytest.approx(alpha / 2, rel=1e-7)  # P(X >= x | lo)
        assert stats.binom.cdf(x, n, hi) == pytest.approx(alpha / 2, rel=1e-7)  # P(X <= x | hi)


@given(p=st.floats(0.01, 0.99), n_eff=st.floats(2.0, 3000.0))
@examples(60)
def test_non_integer_clopper_pearson_uses_the_incomplete_beta_continuation(p, n_eff):
    # P(X >= x) = I_pi(x, n - x + 1) continues the binomial tail to real x
    assume(n_eff * (1 - p) > 0.5)  # else 1 - upper is below double resolution near 1
    trials = 1000.0
    lo, hi = bounds(binomial_interval(p * trials, trials, method="clopper-pearson", n_eff=n_eff))
    x = p * n_eff
    assert special.betainc(x, n_eff - x + 1, lo) == pytest.approx(0.025, rel=1e-6)
    assert special.betaincc(x + 1, n_eff - x, hi) == pytest.approx(0.025, rel=1e-6)


@pytest.mark.parametrize(("x", "n"), [(1, 10), (3, 17.5), (20.25, 80), (49, 50)])
def test_jeffreys_bounds_are_equal_tailed_posterior_quantiles(x, n):
    # integrate the Beta(x + 1/2, n - x + 1/2) density numerically
    a, b = x + 0.5, n - x + 0.5
    log_norm = special.betaln(a, b)

    def density(t):
        return math.exp((a - 1) * math.log(t) + (b - 1) * math.log1p(-t) - log_norm)

    lo, hi = bounds(binomial_interval(x, n, method="jeffreys"))
    left = integrate.quad(density, 0, lo, epsabs=1e-12, limit=200)[0]
    right = integrate.quad(density, hi, 1, epsabs=1e-12, limit=200)[0]
    assert left == pytest.approx(0.025, rel=1e-5)
    assert right == pytest.approx(0.025, rel=1e-5)


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_all_errors_give_the_mirrored_one_sided_bound(method):
    n = 20
    ci = binomial_interval(n, n, method=method, level=0.9)
    lo, hi = bounds(ci)
    assert hi == 1.0 and lo == pytest.approx(1 + math.log(0.1) / n, rel=1e-12)
    assert str(ci.bound_kind.values) == "one-sided lower (all errors)"
    assert str(ci.interval_method.values) == "rule of three"
    # the mirror of the zero-error bound: P(all n err) = pi^n < 10% below the bound
    assert stats.binom.pmf(n, n, lo * 0.9999) < 0.1
    assert bounds(binomial_interval(2, 2))[0] == 0.0  # capped


# --------------------------------------------------------------------------
# zero errors: the rule of three
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", INTERVAL_METHODS)
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_zero_errors_give_the_rule_of_three(method, level):
    ci = binomial_interval(0, 500, method=method, level=level)
    lo, hi = bounds(ci)
    assert lo == 0.0
    assert hi == pytest.approx(-math.log(1 - level) / 500, rel=1e-12)
    assert str(ci.interval_method.values) == "rule of three"
    assert str(ci.bound_kind.values) == "one-sided upper (zero errors)"
    assert "rule of three" in ci.attrs["zero_error_rule"] and "one-sided" in ci.attrs["bound_rule"]
    assert ci.attrs["method"] == method


def test_rule_of_three_is_three_over_n_at_95_and_uses_n_eff():
    assert rule_of_three(0.95) == pytest.approx(3.0, abs=0.005)
    _, hi = bounds(binomial_interval(0, 1000))
    assert hi == pytest.approx(3 / 1000, rel=0.002)
    _, hi = bounds(binomial_interval(0, 1000, n_eff=250))
    assert hi == pytest.approx(rule_of_three(0.95) / 250, rel=1e-12)
    _, hi = bounds(binomial_interval(0, 2))
    assert hi == 1.0  # capped: 3/2 is no probability


def test_rule_of_three_covers_in_its_worst_case():
    # the bound misses pi only when no error occurs although pi > c/n; that chance is < 5%
    n = 300
    pis = np.linspace(rule_of_three() / n * 1.0001, 0.2, 400)
    assert (stats.binom.pmf(0, n, pis) < 0.05).all()


def test_cells_report_their_own_method():
    ci = binomial_interval(xr.DataArray([0, 3, 100], dims="g"), 100, method="jeffreys")
    assert ci.interval_method.values.tolist() == ["rule of three", "jeffreys", "rule of three"]
    assert ci.bound_kind.values.tolist() == ["one-sided upper (zero errors)", "two-sided", "one-sided lower (all errors)"]
    assert ci.attrs["method"] == "jeffreys"
    assert (ci.diff("bound") > 0).all()


# --------------------------------------------------------------------------
# the default: modified Wilson, and its exact coverage
# --------------------------------------------------------------------------


def exact_coverage(method, n, pis, level=0.95):
    """Coverage summed over the Binomial(n, pi) pmf, intervals from bioxr for every count."""
    k = np.arange(n + 1)
    ci = binomial_interval(k, n, method=method, level=level).values
    pmf = stats.binom.pmf(k[None, :], n, pis[:, None])
    hit = (ci[None, :, 0] <= pis[:, None]) & (pis[:, None] <= ci[None, :, 1])
    return (pmf * hit).sum(1)


@pytest.mark.parametrize("n", [12, 60, 1000])
def test_modified_wilson_is_wilson_with_the_exact_bound_at_ten_counts_or_fewer(n):
    for k in sorted({*range(1, min(n, 14)), *range(max(1, n - 13), n), n // 2}):
        got = bounds(binomial_interval(k, n))
        res = stats.binomtest(k, n)
        w, e = res.proportion_ci(method="wilson"), res.proportion_ci(method="exact")
        exp_lo = min(w.low, e.low) if k <= 10 else w.low
        exp_hi = max(w.high, e.high) if n - k <= 10 else w.high
        np.testing.assert_allclose(got, [exp_lo, exp_hi], rtol=1e-9, atol=1e-13)
    assert binomial_interval(5, n).interval_method.item() == "modified-wilson"


def test_modified_wilson_continues_to_non_integer_counts():
    # x_eff = 2.5 of n_eff = 400: the lower bound solves the incomplete beta continuation I_lo(x, n - x + 1) = 2.5%
    lo, hi = bounds(binomial_interval(25, 4000, n_eff=400))
    assert special.betainc(2.5, 398.5, lo) == pytest.approx(0.025, rel=1e-6)
    assert hi == pytest.approx(wilson_closed_form(2.5, 400, 0.95)[1], rel=1e-10)


def test_wilsons_hole_near_one_over_n_is_mended():
    # Brown, Cai & DasGupta (2001): Binomial(1000, 0.001) is covered 0.920 of the time by Wilson
    pi = np.array([0.001])
    assert exact_coverage("wilson", 1000, pi)[0] == pytest.approx(0.920, abs=0.001)
    assert bounds(binomial_interval(3, 1000, method="wilson"))[0] > 0.001  # the lower bound at 3 errors excludes pi
    assert exact_coverage("modified-wilson", 1000, pi)[0] >= 0.95
    assert bounds(binomial_interval(3, 1000))[0] < 0.001


@pytest.mark.parametrize("n", [50, 1000])
def test_default_covers_at_least_93_percent_from_one_over_n_to_one_half(n):
    """The measured minimum (module docstring): 0.931 or more over pi in [1/n, 1/2], with the one-sided
    rule of three at zero errors; Wilson falls to 0.91 just above n pi = 3, where P(no error) is almost 5%."""
    pis = np.geomspace(1 / n, 0.5, 400)
    default = exact_coverage("modified-wilson", n, pis)
    wilson = exact_coverage("wilson", n, pis)
    assert default.min() >= 0.93
    assert 0.95 <= default.mean() <= 0.97
    assert wilson.min() < 0.92
    near = (pis * n > 3) & (pis * n < 3.6)
    assert wilson[near].min() < 0.92 <= default[near].min()


# --------------------------------------------------------------------------
# effective sample size, broadcasting, edge cases
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_n_eff_rescales_to_the_same_proportion_on_fewer_trials(method):
    a = binomial_interval(30, 600, method=method, n_eff=200)
    b = binomial_interval(10, 200, method=method)
    np.testing.assert_allclose(a.values, b.values, rtol=1e-10)
    same = binomial_interval(30, 600, method=method, n_eff=600)
    np.testing.assert_allclose(same.values, binomial_interval(30, 600, method=method).values, rtol=1e-12)
    assert a.attrs["sample_size"].startswith("n_eff")


def test_dataarrays_broadcast_by_name_and_keep_coords():
    errors = xr.DataArray([[1, 5], [0, 9]], dims=("threshold", "group"),
                          coords={"threshold": [0.5, 1.0], "group": ["a", "b"], "note": ("group", ["x", "y"])})
    trials = xr.DataArray([50, 60], dims="group", coords={"group": ["a", "b"]})
    ci = binomial_interval(errors, trials, level=0.9, method="wilson")
    assert ci.dims == ("threshold", "group", "bound")
    assert ci.bound.values.tolist() == ["lower", "upper"]
    assert ci.note.values.tolist() == ["x", "y"]
    assert ci.attrs["level"] == 0.9
    exp = wilson_closed_form(9, 60, 0.9)
    np.testing.assert_allclose(ci.sel(threshold=1.0, group="b").values, exp, rtol=1e-10)
    np.testing.assert_allclose(ci.sel(threshold=1.0, group="a").values, [0, rule_of_three(0.9) / 50])


def test_plain_arrays_broadcast_like_numpy():
    ci = binomial_interval(np.array([[1], [2]]), np.array([10, 20, 30]), method="wilson")
    assert ci.shape == (2, 3, 2)
    np.testing.assert_allclose(ci.values[1, 2], wilson_closed_form(2, 30, 0.95), rtol=1e-10)


def test_nan_and_empty_cells_give_nan():
    ci = binomial_interval(np.array([np.nan, 0.0, 1.0]), np.array([10.0, 0.0, 10.0]))
    assert np.isnan(ci.values[:2]).all()
    assert np.isfinite(ci.values[2]).all()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (dict(errors=11, trials=10), ValueError),
        (dict(errors=-1, trials=10), ValueError),
        (dict(errors=1, trials=10, method="wald"), ValueError),
        (dict(errors=1, trials=10, level=95), ValueError),
        (dict(errors=1, trials=10, level=1.0), ValueError),
        (dict(errors=1, trials=10, level=-0.5), ValueError),
        (dict(errors=1, trials=10, level=0), ValueError),
        (dict(errors=1, trials=10, level=float("nan")), ValueError),
        (dict(errors=1, trials=10, n_eff=0), ValueError),
        (dict(errors=xr.DataArray([1, 2], dims="g"), trials=np.array([10, 20])), TypeError),
        (dict(errors="3", trials=10), TypeError),
    ],
)
def test_bad_input_is_refused(kwargs, error):
    errors, trials = kwargs.pop("errors"), kwargs.pop("trials")
    with pytest.raises(error):
        binomial_interval(errors, trials, **kwargs)


@given(
    k=st.integers(0, 400), extra=st.integers(0, 400), n_eff=st.one_of(st.none(), st.floats(1.0, 5000.0)),
    level=st.floats(0.5, 0.999),
)
@examples(80)
def test_every_interval_contains_p_has_width_and_nests(k, extra, n_eff, level):
    n = k + extra
    if n == 0:
        return
    p = k / n
    out = {m: bounds(binomial_interval(k, n, method=m, level=level, n_eff=n_eff)) for m in INTERVAL_METHODS}
    x, size = p * (n_eff or n), n_eff or n
    for m, (lo, hi) in out.items():
        assert 0 <= lo < hi <= 1  # never zero width
        # Jeffreys is a Bayesian interval: with under one (effective) error, or one success, or a
        # low level, its equal tails may leave p outside (Brown, Cai & DasGupta 2001)
        if m != "jeffreys" or (level >= 0.8 and x >= 1 and size - x >= 1) or k == 0:
            assert lo <= p + 1e-12 and p - 1e-12 <= hi
        wider = bounds(binomial_interval(k, n, method=m, level=min(level + 0.0005, 0.9995), n_eff=n_eff))
        assert wider[0] <= lo + 1e-12 and wider[1] >= hi - 1e-12
    if 0 < k < n:  # Jeffreys lies inside Clopper-Pearson (its beta laws are stochastically between)
        (jl, jh), (cl, ch) = out["jeffreys"], out["clopper-pearson"]
        assert cl <= jl + 1e-12 and jh <= ch + 1e-12


# --------------------------------------------------------------------------
# rates_interval
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def photohead():
    return bioxr.simulate.photohead(6, 2, 5, seed=21)


def test_rates_interval_equals_binomial_interval_per_rate(photohead):
    rates = verification.error_rates(photohead, [0.0, 2.0, 4.0, 40.0], dim=("subject", "image"))
    res = rates_interval(rates, method="clopper-pearson", level=0.9)
    assert res.fmr_interval.dims == ("collection", "threshold", "bound")
    assert res.fnmr_interval.dims == ("collection", "threshold", "bound")
    assert "weather" in res.fnmr_interval.coords and "weather" in res.coords
    for rate, e, n in (("fmr", "false_matches", "n_nonmated"), ("fnmr", "false_nonmatches", "n_mated")):
        for c in range(rates.sizes["collection"]):
            for j in range(rates.sizes["threshold"]):
                k = int(rates[e][c, j])
                total = int(rates[n][c])
                got = res[f"{rate}_interval"].values[c, j]
                if k == 0:
                    exp = (0.0, -math.log(0.1) / total)
                elif k == total:
                    exp = (max(0.0, 1 + math.log(0.1) / total), 1.0)
                else:
                    ci = stats.binomtest(k, total).proportion_ci(confidence_level=0.9, method="exact")
                    exp = (ci.low, ci.high)
                np.testing.assert_allclose(got, exp, rtol=1e-9, atol=1e-12)
    assert (res.fmr_interval_method.sel(threshold=40.0) == "rule of three").all()
    assert res.attrs["interval_method"] == "clopper-pearson" and res.attrs["level"] == 0.9
    assert (res.fmr_bound_kind.sel(threshold=40.0) == "one-sided upper (zero errors)").all()
    assert res.attrs["bound_rule"].startswith("bound_kind")
    xr.testing.assert_identical(res.drop_vars(["fmr_interval", "fnmr_interval", "fmr_interval_method",
                                                "fnmr_interval_method", "fmr_bound_kind", "fnmr_bound_kind",
                                                "bound"]).drop_attrs(), rates.drop_attrs())


def test_rates_interval_takes_n_eff_per_rate_and_partial_datasets(photohead):
    rates = verification.error_rates(photohead, 2.0)
    res = rates_interval(rates, n_eff={"fnmr": 30.0})
    exp = binomial_interval(rates.false_nonmatches, rates.n_mated, n_eff=30.0)
    np.testing.assert_allclose(res.fnmr_interval.values, exp.values)
    np.testing.assert_allclose(
        res.fmr_interval.values, binomial_interval(rates.false_matches, rates.n_nonmated).values
    )
    res_ds = rates_interval(rates, n_eff=xr.Dataset({"fnmr": 30.0}))
    xr.testing.assert_identical(res, res_ds)
    only = rates_interval(verification.fnmr(photohead, 2.0))
    assert "fnmr_interval" in only and "fmr_interval" not in only
    with pytest.raises(ValueError, match="no counts"):
        rates_interval(verification.fnmr(photohead, 2.0), n_eff={"fmr": 10.0})
    with pytest.raises(TypeError, match="mapping"):
        rates_interval(rates, n_eff=30.0)
    with pytest.raises(ValueError, match="keys"):
        rates_interval(rates, n_eff={"eer": 3.0})
    with pytest.raises(ValueError, match="neither"):
        rates_interval(rates[["fmr"]])


def test_dask_inputs_give_the_in_memory_result():
    pytest.importorskip("dask")
    e = xr.DataArray(np.arange(12) % 7, dims="t")
    n = xr.DataArray(np.full(12, 20), dims="t")
    for method in INTERVAL_METHODS:
        lazy = binomial_interval(e.chunk(5), n.chunk(5), method=method, n_eff=(n * 0.5).chunk(5))
        assert lazy.chunks is not None
        xr.testing.assert_identical(lazy.compute(), binomial_interval(e, n, method=method, n_eff=n * 0.5))
