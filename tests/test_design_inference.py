"""The analysis step of a design study (bioxr.design.inference): interval, equivalence verdict, power, F test.

Three kinds of evidence:

1. the model itself (chi-square draws of the pooled empirical variance and
   the mean estimator, exactly as the interval assumes): coverage, the
   equivalence test's size at the band's edge and its power, against the
   closed forms;
2. end to end, design_study on data whose true ratio is known exactly: a
   finite population per series (a fixed number of successes among T
   collections), time shuffled afresh each run, so that the stratified
   estimator is exactly unbiased and the simple random one has a ratio
   computed in closed form; the band's edge is put on that ratio;
3. the words: too few trials, p-values that underflow, argument checks.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from bioxr import design
from bioxr.design import inference

# --------------------------------------------------------------------------
# format_pvalue
# --------------------------------------------------------------------------


def test_format_pvalue():
    assert design.format_pvalue(0.04435) == "0.044"
    assert design.format_pvalue(0.5, digits=3) == "0.5"
    assert design.format_pvalue(1.0) == "1"
    assert design.format_pvalue(2e-16) == "2e-16"
    for tiny in (0.0, 1e-17, 9.0e-143, np.float64(0)):
        assert design.format_pvalue(tiny) == "< 1e-16"
    assert design.format_pvalue(float("nan")) == "n/a"
    for bad in (-0.1, 1.5, "x", None):
        with pytest.raises(ValueError, match="p="):
            design.format_pvalue(bad)
    with pytest.raises(ValueError, match="digits"):
        design.format_pvalue(0.5, digits=0)


def test_an_underflowed_pvalue_prints_as_below_1e_16():
    """Every collection all success or all failure: trial rates swing far beyond what any estimator allows."""
    rng = np.random.default_rng(0)
    z = rng.random(200) < 0.5
    values = np.broadcast_to(z, (12, 3, 200)).astype(float).copy()
    values[rng.random(values.shape) < 0.02] = 1.0
    success = xr.DataArray(values, dims=("subject", "image", "collection"))
    test = design.design_test(design.design_study(success, n_collections=160, n_runs=10, seed=1))
    assert float(test.pvalue.sel(estimator="st")) == 0.0  # the float underflows ...
    for est in ("srs", "st", "cl"):
        text = test.statement.sel(estimator=est).item()
        assert "p < 1e-16" in text and "p = <" not in text and "p = 0 " not in text and "p = 0." not in text, text
        assert test.verdict.sel(estimator=est).item() == "incompatible"


# --------------------------------------------------------------------------
# 1. The model: theta / ratio ~ F(d1, d2)
# --------------------------------------------------------------------------


def _model_ratios(theta, d1, d2, n, seed):
    rng = np.random.default_rng(seed)
    pooled = rng.chisquare(d1, n) / d1
    vbar = theta * (rng.chisquare(d2, n) / d2 if np.isfinite(d2) else np.ones(n))
    return vbar / pooled


@pytest.mark.parametrize("d1, d2", [(30.0, 5e4), (800.0, np.inf), (3000.0, 900.0)])
def test_interval_covers_at_its_level(d1, d2):
    r = _model_ratios(1.3, d1, d2, 40_000, seed=int(d1))
    lo, hi = inference._ratio_interval(1.0, d1, d2, 0.9)  # r times these
    cover = np.mean((r * lo <= 1.3) & (1.3 <= r * hi))
    assert cover == pytest.approx(0.9, abs=3.5 * np.sqrt(0.09 / 40_000))
    below = np.mean(r * hi < 1.3)  # equal tails
    assert below == pytest.approx(0.05, abs=3.5 * np.sqrt(0.0475 / 40_000))


@pytest.mark.parametrize("level, tolerance, d1, d2", [(0.95, 0.05, 9000.0, 2e5), (0.9, 0.2, 400.0, np.inf),
                                                      (0.95, 0.1, 4000.0, 6000.0)])
def test_equivalence_size_at_the_band_edge_and_power(level, tolerance, d1, d2):
    """At a true ratio on either edge of the band "compatible" comes out at most (1 - level) / 2 of the
    time; at 1 as often as power() says; the verdicts are computed by the function the studies use."""
    n = 20_000
    a = (1 - level) / 2
    q_lo, q_hi = inference._ratio_interval(1.0, d1, d2, level)
    b = 1 + tolerance
    for theta in (b, 1 / b, 1.0):
        r = _model_ratios(theta, d1, d2, n, seed=7)
        verdicts = np.array([inference._verdict(x * q_lo, x * q_hi, tolerance) for x in r])
        rate = np.mean(verdicts == "compatible")
        expected = inference._power(d1, d2, level, tolerance, theta=theta)
        sd = np.sqrt(max(expected * (1 - expected), 1e-4) / n)
        assert rate == pytest.approx(expected, abs=4 * sd), (theta, rate, expected)
        if theta != 1.0:
            assert expected <= a + 1e-12 and rate <= a + 4 * np.sqrt(a * (1 - a) / n), (theta, rate)
            assert expected > 0.6 * a  # a size near alpha: the test is not needlessly conservative here
    assert inference._power(d1, d2, level, tolerance) > 0.5


def test_power_against_the_normal_approximation_and_trials_needed():
    """log F(d, inf) is about N(0, 2 / d): TOST power 2 Phi(log b / s - z) - 1; 80% at ±5% and 95% takes
    d = 2 ((z_0.975 + z_0.9) / log 1.05)^2 = 8,830 degrees of freedom."""
    b = np.log(1.05)
    for d in (8000.0, 20000.0, 40000.0):
        s = np.sqrt(2 / d)
        approx = 2 * stats.norm.cdf(b / s - stats.norm.ppf(0.975)) - 1
        assert inference._power(d, np.inf, 0.95, 0.05) == pytest.approx(approx, abs=0.01)
    independent = {"n_collections": 100, "n_times": 10**12, "independent_draws": 1}
    df_needed = 2 * ((stats.norm.ppf(0.975) + stats.norm.ppf(0.9)) / b) ** 2
    needed = inference._trials_needed(independent, 30, 2, np.inf, 0.95, 0.05)
    assert needed == pytest.approx(df_needed + 30, rel=0.02)
    # brute force: the smallest number of trials a run (30 runs) whose power reaches 80%
    k = int(needed // 30)
    assert needed == 30 * k
    assert inference._power(30 * (k - 1), np.inf, 0.95, 0.05) >= 0.8 > inference._power(30 * (k - 2), np.inf, 0.95, 0.05)
    # a noisy estimator (finite Satterthwaite df, growing with the trials) needs more trials, by brute force
    df2 = 60 * 50.0  # 60 trials, a per-trial coefficient of variation of 0.2
    noisy = inference._trials_needed(independent, 30, 2, df2, 0.95, 0.05)
    k = int(noisy // 30)
    assert noisy == 30 * k and noisy > needed
    reach = [inference._power(30 * (j - 1), df2 * j / 2, 0.95, 0.05) for j in (k - 1, k)]
    assert reach[0] < 0.8 <= reach[1], reach
    # the runs' overlap caps the degrees of freedom: more trials cannot reach 80% power
    clustered = {"n_collections": 180, "n_times": 1440, "independent_draws": 1}
    assert np.isnan(inference._trials_needed(clustered, 30, 45, np.inf, 0.95, 0.05))
    assert inference._trials_needed(clustered, 30, 45, np.inf, 0.95, 0.2) < 30 * 45


def test_verdict_is_three_way():
    v = inference._verdict
    assert v(0.96, 1.04, 0.05) == "compatible"
    assert v(1 / 1.05, 1.05, 0.05) == "compatible"  # the edges belong to the band
    assert v(1.06, 1.2, 0.05) == "incompatible" and v(0.5, 0.9, 0.05) == "incompatible"
    assert v(1.01, 1.08, 0.05) == "inconclusive"  # straddles the upper edge
    assert v(0.32, 1.94, 0.05) == "inconclusive"  # wider than the band
    assert v(np.nan, np.nan, 0.05) == "inconclusive"


# --------------------------------------------------------------------------
# 2. End to end, with the true ratio known exactly
# --------------------------------------------------------------------------


def _finite_population(n_groups, n_times, spread, seed=1):
    """Group i holds round(p_i T) successes among its T collections, placed at random."""
    rng = np.random.default_rng(seed)
    p = 0.5 + spread * np.linspace(-1, 1, n_groups)
    k = np.round(p * n_times).astype(int)
    x = np.zeros((n_groups, n_times))
    for i in range(n_groups):
        x[i, rng.choice(n_times, k[i], replace=False)] = 1.0
    return xr.DataArray(x, dims=("subject", "collection")), k / n_times


def _srs_ratio(p, n_times, m):
    """E[V_srs] / E[S^2] for trials of m collections drawn without replacement (time shuffled per series).

    E[S^2] = sum_i s_i^2 / (G^2 m), s_i^2 = T p_i q_i / (T - 1) (disjoint trials of a random permutation);
    E[V_srs] = (pbar qbar - Var(trial rate)) / (G m), Var = sum_i p_i q_i (T - m) / (m (T - 1)) / G^2.
    """
    g, t = p.size, n_times
    target = (t * p * (1 - p) / (t - 1)).sum() / (g * g * m)
    var_rate = (p * (1 - p) * (t - m) / (m * (t - 1))).sum() / g**2
    return (p.mean() * (1 - p.mean()) - var_rate) / (g * m * target)


def test_finite_population_ratios_are_exact():
    """The closed forms the end-to-end test relies on, checked by many runs (1 - 2% precision)."""
    success, p = _finite_population(10, 120, 0.4)
    study = design.design_study(success, m=3, n_collections=60, n_runs=400, randomize="collection", seed=3)
    assert float(study.ratio.sel(estimator="st")) == pytest.approx(1.0, abs=0.03)
    assert float(study.ratio.sel(estimator="srs")) == pytest.approx(_srs_ratio(p, 120, 3), abs=0.03)


def test_equivalence_end_to_end_size_and_power():
    """Band edge on the srs ratio (1.27): "compatible" at most 2.5% of the time; the stratified estimator
    (ratio exactly 1) is called compatible as often as the reported power says (about 0.86)."""
    success, p = _finite_population(16, 200, 0.4)
    m, n_exp = 2, 120
    tolerance = _srs_ratio(p, 200, m) - 1.0
    counts = {"srs": 0, "st": 0}
    power = []
    for seed in range(n_exp):
        study = design.design_study(success, m=m, n_collections=100, n_runs=10, randomize="collection",
                                    tolerance=tolerance, seed=seed)
        for est in counts:
            counts[est] += study.verdict.sel(estimator=est).item() == "compatible"
        power.append(float(study.power.sel(estimator="st")))
    # size: binomial(120, 0.025) exceeds 8 with probability 0.003
    assert counts["srs"] <= 8, counts
    expected = float(np.mean(power))
    assert 0.75 < expected < 0.95
    assert counts["st"] == pytest.approx(n_exp * expected, abs=3.5 * np.sqrt(n_exp * expected * (1 - expected)))


# --------------------------------------------------------------------------
# design_test agrees with design_study; the words
# --------------------------------------------------------------------------


def _stratified(n_groups=30, n_times=300, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.2, 0.9, n_groups)
    return xr.DataArray((rng.random((n_groups, n_times)) < p[:, None]).astype(float), dims=("subject", "collection"))


def test_design_test_and_study_share_the_verdict():
    success = _stratified()
    for kw in (dict(), dict(randomize="collection", m=2), dict(design="cluster", m=20), dict(level=0.8)):
        study = design.design_study(success, n_collections=200, n_runs=12, seed=4, **kw)
        test = design.design_test(study)
        np.testing.assert_allclose(test.ratio_interval.values, study.ratio_interval.values, rtol=1e-12)
        assert test.verdict.values.tolist() == study.verdict.values.tolist()
        np.testing.assert_allclose(test.power.values, study.power.values)
        level = kw.get("level", 0.95)
        q = stats.f.ppf([(1 - level) / 2, (1 + level) / 2], test.df_empirical.values[:, None],
                        test.df_estimator.values[:, None])
        np.testing.assert_allclose(study.ratio_interval.values, study.ratio.values[:, None] * q, rtol=1e-9)
        # the F test: p > 1 - level exactly when 1 is inside the interval
        inside = (test.ratio_interval.sel(bound="lower") <= 1) & (test.ratio_interval.sel(bound="upper") >= 1)
        assert ((test.pvalue > 1 - level) == inside).all()
        # two one-sided tests: compatible exactly when the larger p-value is at most (1 - level) / 2
        assert ((test.equivalence_pvalue <= (1 - level) / 2) == test.compatible).all()
        assert test.attrs["band"] == "[0.9524, 1.05]" and test.attrs["tolerance"] == 0.05
    # the test takes the study's band and level
    wide = design.design_test(design.design_study(success, n_collections=200, n_runs=12, seed=4, tolerance=0.5,
                                                  level=0.9))
    assert wide.attrs["band"] == "[0.6667, 1.5]" and wide.attrs["level"] == 0.9 and wide.attrs["tolerance"] == 0.5


def test_a_compatible_design_when_the_study_is_large_enough():
    """Fixed groups, time shuffled: V_st is exactly unbiased; 30 runs of 120 trials prove it within ±10%."""
    success = _stratified(n_groups=40, n_times=480, seed=5)
    study = design.design_study(success, m=2, n_collections=240, n_runs=30, randomize="collection", tolerance=0.1,
                                seed=6)
    assert study.verdict.values.tolist() == ["incompatible", "compatible", "incompatible"]
    assert float(study.power.sel(estimator="st")) > 0.8
    assert study.statement.sel(estimator="st").item().startswith(
        "compatible: the 95% interval of the variance ratio, ")
    assert "lies inside the ±10% band (0.909–1.10)" in study.statement.sel(estimator="st").item()
    assert "overestimates" in study.statement.sel(estimator="cl").item()
    # two one-sided tests, by hand: H0 ratio >= b (F small) and H0 ratio <= 1/b (F large)
    test = design.design_test(study)
    for est in ("srs", "st", "cl"):
        t = test.sel(estimator=est)
        f, d1, d2 = float(t.statistic), float(t.df_empirical), float(t.df_estimator)
        by_hand = max(stats.f.sf(1.1 * f, d1, d2), stats.f.cdf(f / 1.1, d1, d2))
        assert float(t.equivalence_pvalue) == pytest.approx(by_hand, rel=1e-9, abs=1e-300)
        assert (float(t.equivalence_pvalue) <= 0.025) == (t.verdict.item() == "compatible")
        p_two = 2 * min(stats.f.cdf(f, d1, d2), stats.f.sf(f, d1, d2))
        assert float(t.pvalue) == pytest.approx(p_two, rel=1e-9, abs=1e-300)


def test_two_trials_a_run_say_too_few_trials():
    """m = n_collections / 2: the reviewer's case. Wide interval, 'inconclusive: too few trials', and the
    number of trials an 80% chance would take."""
    success = _stratified(n_groups=30, n_times=4000, seed=2)  # long series: the runs' overlap costs little
    study = design.design_study(success, m=100, n_collections=200, n_runs=30, randomize="collection", seed=1)
    test = design.design_test(study)
    st = test.sel(estimator="st")
    lo, hi = st.ratio_interval.values
    assert hi / lo > 2 and st.verdict.item() == "inconclusive" and float(st.power) < 0.01
    text = st.statement.item()
    expected = (f"inconclusive: too few trials (the 95% interval of the variance ratio, {lo:#.3g}–{hi:#.3g}, "
                "is wider than the ±5% band; about ")
    assert text.startswith(expected), text
    needed = float(st.trials_needed)
    assert 8860 < needed < 10_000 and f"about {needed:,.0f} trials would be needed" in text and "at the 60 here" in text
    assert "F test of agreement: F = " in text and "(two-sided)" in text


def test_study_results_save_as_netcdf(tmp_path):
    study = design.design_study(_stratified(), n_collections=200, n_runs=4, seed=0)
    test = design.design_test(study)
    for name, ds in (("study", study), ("test", test)):
        ds.to_netcdf(tmp_path / f"{name}.nc", engine="h5netcdf")
        back = xr.open_dataset(tmp_path / f"{name}.nc", engine="h5netcdf")
        assert back.verdict.values.tolist() == ds.verdict.values.tolist()
        assert back.statement.values.tolist() == ds.statement.values.tolist()


# --------------------------------------------------------------------------
# 3. Arguments
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(level=0), "level"),
        (dict(level=1.5), "level"),
        (dict(level=-0.5), "level"),
        (dict(tolerance=0), "tolerance"),
        (dict(tolerance=-0.1), "tolerance"),
        (dict(tolerance=float("nan")), "tolerance"),
        (dict(tolerance=True), "tolerance"),
        (dict(n_runs=1), "n_runs"),
        (dict(n_runs=2.5), "n_runs"),
        (dict(m=0), "m="),
        (dict(n_collections=1), "n_collections"),
    ],
)
def test_bad_arguments_say_what_is_wrong(kwargs, match):
    with pytest.raises(ValueError, match=match):
        design.design_study(_stratified(), **{"n_collections": 200, "n_runs": 4, **kwargs})


def test_design_test_and_dichotomize_check_their_arguments():
    study = design.design_study(_stratified(), n_collections=200, n_runs=4, seed=0)
    for attrs in (dict(level=1.0), dict(level=0), dict(tolerance=0), dict(tolerance=-1)):
        with pytest.raises(ValueError, match="level|tolerance"):
            design.design_test(study.assign_attrs(**attrs))
    with pytest.raises(ValueError, match="design_study"):
        design.design_test(study[["ratio"]])
    from bioxr import simulate
    from bioxr.outcomes import outcomes

    out = outcomes(simulate.photohead(4, 2, 3, seed=0))
    for rank in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="ranks are whole numbers"):
            design.dichotomize(out, rank=rank)
    assert design.dichotomize(out, rank=2.0).attrs["rule"].startswith("rank-2 success")
