"""Simultaneous bands (issue 9, deliverable 7): checked against theory, brute force, scipy and a Monte Carlo study.

- Gaussian replicates with a known correlation: the critical value is
  Sidak's ``Phi^-1((1 + level^(1/K)) / 2)`` for K independent points and
  the pointwise ``z`` for perfectly correlated ones;
- the critical value and the bounds recomputed by brute force (loops over
  replicates and grid points);
- where every replicate equals the estimate, the bounds are scipy's exact
  (Clopper-Pearson) interval at the pointwise level of ``c``;
- the whole true curve of i.i.d. binomial data inside the band, over
  seeded experiments with a score bootstrap written here.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats
from scipy.special import ndtr, ndtri

from bioxr._core import FewReplicatesWarning, simultaneous_band


@pytest.fixture(autouse=True)
def _few_replicates_are_fine_here():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewReplicatesWarning)
        yield


def _curve(values, along="threshold"):
    values = np.asarray(values, float)
    grid = np.arange(values.shape[-1], dtype=float)
    dims = ("replicate", along) if values.ndim == 2 else (along,)
    return xr.DataArray(values, dims=dims, coords={along: grid})


def _gaussian_replicates(K, B, rho, seed, centre=0.5, sd=0.01):
    """Replicates centre + sd Z with corr(Z_j, Z_k) = rho (one shared factor)."""
    rng = np.random.default_rng(seed)
    Z = np.sqrt(rho) * rng.normal(size=(B, 1)) + np.sqrt(1 - rho) * rng.normal(size=(B, K))
    return _curve(centre + sd * Z), _curve(np.full(K, centre))


def _brute_critical(reps, point, level, se):
    """M_b by loops, then the ceil(level (B + 1))-th smallest."""
    B, K = reps.shape
    M = [max(abs(reps[b, j] - point[j]) / se[b][j] for j in range(K)) for b in range(B)]
    return sorted(M)[math.ceil(level * (B + 1)) - 1]


# ------------------------------------------------------------ theory -------


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_independent_points_give_sidaks_critical_value(level):
    reps, point = _gaussian_replicates(K=10, B=20_000, rho=0.0, seed=1)
    band = simultaneous_band(reps, point, level=level, along="threshold", scale="identity", studentise="fixed")
    sidak = float(ndtri((1 + level ** (1 / 10)) / 2))  # 2.80 at 95%, 2.32 at 80%
    assert band.attrs["critical_value"] == pytest.approx(sidak, abs=0.04)
    assert band.attrs["level"] == level
    assert band.attrs["pointwise_z"] == pytest.approx(float(ndtri(1 - (1 - level) / 2)), rel=1e-12)
    assert band.attrs["pointwise_level"] == pytest.approx(2 * ndtr(band.attrs["critical_value"]) - 1)


def test_perfectly_correlated_points_give_the_pointwise_z():
    reps, point = _gaussian_replicates(K=10, B=20_000, rho=1.0, seed=2)
    band = simultaneous_band(reps, point, level=0.95, along="threshold", scale="identity", studentise="fixed")
    assert band.attrs["critical_value"] == pytest.approx(1.96, abs=0.05)
    assert band.attrs["pointwise_z"] == pytest.approx(1.959964, abs=1e-6)


def test_the_probit_band_is_symmetric_on_the_probit_scale():
    rng = np.random.default_rng(3)
    p = np.linspace(0.01, 0.3, 12)
    reps = _curve(ndtr(ndtri(p) + 0.1 * rng.normal(size=(4000, 1)) + 0.05 * rng.normal(size=(4000, 12))))
    band = simultaneous_band(reps, _curve(p), level=0.9, along="threshold", n=1e12, studentise="fixed")
    s = ndtri(reps.values).std(axis=0, ddof=1)
    c = band.attrs["critical_value"]
    np.testing.assert_allclose(band.sel(bound="lower"), ndtr(ndtri(p) - c * s), rtol=1e-6)
    np.testing.assert_allclose(band.sel(bound="upper"), ndtr(ndtri(p) + c * s), rtol=1e-6)


# ------------------------------------------------------------ brute force --


@pytest.mark.parametrize("scale", ["probit", "logit", "identity"])
@pytest.mark.parametrize("studentise", ["fixed", "replicate"])
def test_critical_value_and_bounds_by_brute_force(scale, studentise):
    rng = np.random.default_rng(4)
    n, B, K, level = 50, 199, 6, 0.9
    p = np.array([0.04, 0.1, 0.3, 0.5, 0.8, 0.96])
    reps = rng.binomial(n, p, size=(B, K)) / n
    band = simultaneous_band(_curve(reps), _curve(p), level=level, along="threshold", n=n, scale=scale,
                             studentise=studentise)

    def g(r):  # the continuity offset, then the scale
        r = (r * n + 0.5) / (n + 1)
        return ndtri(r) if scale == "probit" else np.log(r / (1 - r))

    gr, gp = (reps, p) if scale == "identity" else (g(reps), g(p))
    s = [float(np.std([gr[b][j] for b in range(B)], ddof=1)) for j in range(K)]

    def v(r):  # the binomial variance function on the scale
        rs = (r * n + 0.5) / (n + 1)
        d = {"probit": 1 / stats.norm.pdf(ndtri(rs)), "logit": 1 / (rs * (1 - rs)), "identity": 1.0}[scale]
        return d * math.sqrt(rs * (1 - rs))

    se = [[s[j] * (v(reps[b][j]) / v(p[j]) if studentise == "replicate" else 1.0) for j in range(K)] for b in range(B)]
    c = _brute_critical(gr, gp, level, se)
    assert band.attrs["critical_value"] == pytest.approx(c, rel=1e-9)
    for j in range(K):
        lo, hi = gp[j] - c * s[j], gp[j] + c * s[j]
        if scale == "probit":
            lo, hi = ndtr(lo), ndtr(hi)
        elif scale == "logit":
            lo, hi = 1 / (1 + math.exp(-lo)), 1 / (1 + math.exp(-hi))
        if scale != "identity":
            lo, hi = (lo * (n + 1) - 0.5) / n, (hi * (n + 1) - 0.5) / n
        assert band.isel(threshold=j).values == pytest.approx([min(max(lo, 0), 1), min(max(hi, 0), 1)], rel=1e-9)


def test_grid_points_without_bootstrap_information_get_the_exact_interval():
    # every replicate equals the estimate at the first and last point: 0 of 40 and 40 of 40
    rng = np.random.default_rng(5)
    n = 40
    p = np.array([0.0, 0.2, 0.5, 0.7, 1.0])
    reps = rng.binomial(n, p, size=(500, 5)) / n
    band = simultaneous_band(_curve(reps), _curve(p), level=0.95, along="threshold", n=n)
    c = band.attrs["critical_value"]
    confidence = 2 * ndtr(c) - 1
    assert band.attrs["n_degenerate"] == 2 and confidence == pytest.approx(band.attrs["pointwise_level"])
    for j, k in ((0, 0), (4, n)):
        exact = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
        assert band.isel(threshold=j).values == pytest.approx([exact.low, exact.high], rel=1e-9)
    assert float(band.isel(threshold=0).sel(bound="upper")) > 0.05  # never zero width: about -ln(tail) / n
    # a default n comes from the finest point rate (1/40 here, as 0.2 = 8/40 and 1 - 0.975 would be finer)
    fine = simultaneous_band(_curve(reps), _curve(p), level=0.95, along="threshold")
    assert fine.attrs["n"].startswith("inferred")


def test_default_n_is_one_over_the_finest_rate_of_each_curve():
    rng = np.random.default_rng(6)
    n = 80
    p = np.array([1, 4, 20, 40, 79]) / n
    reps = _curve(rng.binomial(n, p, size=(300, 5)) / n)
    given = simultaneous_band(reps, _curve(p), level=0.9, along="threshold", n=n)
    inferred = simultaneous_band(reps, _curve(p), level=0.9, along="threshold")
    xr.testing.assert_allclose(given, inferred)
    with pytest.raises(ValueError, match="pass n="):
        simultaneous_band(reps * 0, _curve(p * 0), level=0.9, along="threshold")


# ------------------------------------------------------------ families -----


def test_each_family_has_its_own_critical_value_and_joint_grids_one():
    rng = np.random.default_rng(7)
    p = np.linspace(0.05, 0.6, 8)
    reps = xr.DataArray(rng.binomial(100, p, size=(400, 2, 8)) / 100, dims=("replicate", "group", "threshold"),
                        coords={"group": ["A", "B"], "threshold": np.arange(8.0)})
    point = xr.DataArray(np.stack([p, p]), dims=("group", "threshold"), coords=reps.isel(replicate=0).coords)
    band = simultaneous_band(reps, point, level=0.95, along="threshold", n=100)
    assert band.dims == ("group", "threshold", "bound") and band.attrs["critical_value_dims"] == ["group"]
    for k, g in enumerate(["A", "B"]):
        alone = simultaneous_band(reps.sel(group=g), point.sel(group=g), level=0.95, along="threshold", n=100)
        assert band.attrs["critical_value"][k] == pytest.approx(alone.attrs["critical_value"])
        xr.testing.assert_allclose(band.sel(group=g), alone)
    joint = simultaneous_band(reps, point, level=0.95, along=("group", "threshold"), n=100)
    assert isinstance(joint.attrs["critical_value"], float)
    assert joint.attrs["critical_value"] >= max(band.attrs["critical_value"]) - 1e-12  # more points, wider
    stacked = reps.stack(point=("group", "threshold")).reset_index("point", drop=True)
    flat = simultaneous_band(stacked, point.stack(point=("group", "threshold")).reset_index("point", drop=True),
                             level=0.95, along="point", n=100)
    assert flat.attrs["critical_value"] == pytest.approx(joint.attrs["critical_value"])


def test_floor_widens_the_band_to_contain_it():
    rng = np.random.default_rng(8)
    p = np.linspace(0.02, 0.5, 10)
    reps = _curve(rng.binomial(60, p, size=(300, 10)) / 60)
    point = _curve(p)
    plain = simultaneous_band(reps, point, level=0.95, along="threshold", n=60)
    wide = xr.concat([plain.sel(bound="lower") / 2, plain.sel(bound="upper") * 0 + 0.9], dim="bound")
    floored = simultaneous_band(reps, point, level=0.95, along="threshold", n=60, floor=wide.transpose(..., "bound"))
    np.testing.assert_allclose(floored.sel(bound="lower"), plain.sel(bound="lower") / 2)
    np.testing.assert_allclose(floored.sel(bound="upper"), np.maximum(plain.sel(bound="upper"), 0.9))
    assert floored.attrs["floor"].startswith("given")
    narrow = plain.copy(data=np.stack([p, p], axis=-1))  # a zero-width floor changes nothing
    xr.testing.assert_identical(simultaneous_band(reps, point, level=0.95, along="threshold", n=60, floor=narrow)
                                .drop_attrs(), plain.drop_attrs())
    with pytest.raises(ValueError, match="different coordinates"):
        simultaneous_band(reps, point, level=0.95, along="threshold", n=60,
                          floor=plain.assign_coords(threshold=plain.threshold + 1))
    with pytest.raises(ValueError, match="'bound'"):
        simultaneous_band(reps, point, level=0.95, along="threshold", n=60, floor=plain.sel(bound="lower"))


# ------------------------------------------------------------ Monte Carlo --


def _score_bootstrap(rng, scores, t, B):
    """Resample the scores with replacement B times; the share at or above each threshold.

    Each score is replaced by its bin between thresholds (how many thresholds
    it reaches); a replicate counts its drawn bins and cumulates them.
    """
    n, k = scores.size, t.size
    reached = np.searchsorted(t, scores, side="right")  # score >= t_j  iff  j < reached
    drawn = reached[rng.integers(0, n, (B, n))] + (k + 1) * np.arange(B)[:, None]
    counts = np.bincount(drawn.ravel(), minlength=B * (k + 1)).reshape(B, k + 1)
    share = counts[:, ::-1].cumsum(axis=1)[:, ::-1][:, 1:] / n
    return share, (scores[:, None] >= t).mean(axis=0)


def _whole(band, curve, axes):
    """Share of experiments whose band holds the whole curve."""
    return float(((band[..., 0] <= curve) & (curve <= band[..., 1])).all(axis=axes).mean())


def test_monte_carlo_whole_curve_coverage_with_independent_scores():
    # FMR of N(0, 1) non-mated scores (200) and FNMR of N(2, 1) mated scores (200) at 30 thresholds
    rng = np.random.default_rng(2026)
    t = np.linspace(0.3, 1.7, 30)
    truth = np.stack([1 - ndtr(t), ndtr(t - 2.0)])
    E, B, level = 200, 400, 0.95
    reps, points = np.empty((B, E, 2, 30)), np.empty((E, 2, 30))
    for e in range(E):
        reps[:, e, 0], points[e, 0] = _score_bootstrap(rng, rng.normal(0, 1, 200), t, B)
        above, point = _score_bootstrap(rng, rng.normal(2, 1, 200), t, B)
        reps[:, e, 1], points[e, 1] = 1 - above, 1 - point
    coords = {"rate": ["fmr", "fnmr"], "threshold": t}
    R = xr.DataArray(reps, dims=("replicate", "experiment", "rate", "threshold"), coords=coords)
    P = xr.DataArray(points, dims=("experiment", "rate", "threshold"), coords=coords)
    lo, hi = np.quantile(reps, [(1 - level) / 2, 1 - (1 - level) / 2], axis=0)
    pointwise = np.stack([lo, hi], axis=-1)
    cover = {}
    for studentise in ("fixed", "replicate"):
        one = simultaneous_band(R.sel(rate="fmr"), P.sel(rate="fmr"), level=level, along="threshold", n=200,
                                studentise=studentise).values
        joint = simultaneous_band(R, P, level=level, along=("rate", "threshold"), n=200, studentise=studentise).values
        cover[studentise] = (_whole(one, truth[0], 1), _whole(joint, truth, (1, 2)))
        # the simultaneous band is wider than the percentile band nearly everywhere
        inside = (joint[..., 0] <= lo + 1e-12) & (hi - 1e-12 <= joint[..., 1])
        assert inside.mean() > 0.99
    # measured (200 experiments; binomial SE 0.015): fixed 0.980 and 0.990 (wider than needed: the probit scale
    # does not stabilise a binomial rate's variance), replicate 0.950 and 0.965; pointwise 0.685 and 0.50
    assert all(0.93 <= c <= 1.0 for c in cover["fixed"])
    assert all(0.90 <= c <= 0.99 for c in cover["replicate"])
    assert cover["replicate"][1] < cover["fixed"][1]
    assert _whole(pointwise[:, 0], truth[0], 1) < 0.8 and _whole(pointwise, truth, (1, 2)) < 0.6


def test_monte_carlo_whole_curve_coverage_with_the_subject_bootstrap():
    # 100 subjects x 4 mated attempts, score 2 + u + e with a subject effect u ~ N(0, 0.7^2): FNMR at 30 thresholds
    rng = np.random.default_rng(7)
    t, n, m, B, E, level = np.linspace(0.0, 3.0, 30), 100, 4, 400, 200, 0.95
    truth = ndtr((t - 2.0) / np.sqrt(1 + 0.7**2))
    reps, points = np.empty((B, E, 30)), np.empty((E, 30))
    for e in range(E):
        scores = 2.0 + rng.normal(0, 0.7, (n, 1)) + rng.normal(0, 1, (n, m))
        errors = (scores[:, :, None] < t).sum(axis=1)  # per subject and threshold
        w = rng.multinomial(n, np.full(n, 1 / n), size=B)  # how often each subject is drawn
        reps[:, e], points[e] = (w @ errors) / (n * m), errors.sum(axis=0) / (n * m)
    R = xr.DataArray(reps, dims=("replicate", "experiment", "threshold"), coords={"threshold": t})
    P = xr.DataArray(points, dims=("experiment", "threshold"), coords={"threshold": t})
    band = simultaneous_band(R, P, level=level, along="threshold", n=n).values
    lo, hi = np.quantile(reps, [(1 - level) / 2, 1 - (1 - level) / 2], axis=0)
    # measured: 0.930 (200 experiments, binomial SE 0.015; the benchmark's 2,000 give 0.944); pointwise 0.68
    assert 0.90 <= _whole(band, truth, 1) <= 0.99
    assert _whole(np.stack([lo, hi], axis=-1), truth, 1) < 0.8


# ------------------------------------------------------------ real replicates


def test_joint_det_band_from_the_subject_bootstrap():
    import bioxr

    cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    reps = bioxr.bootstrap.bootstrap_replicates(cube, thresholds=np.linspace(-1, 4, 25), n_replicates=300, seed=1)
    rates = xr.concat([reps.fmr, reps.fnmr], dim="rate").assign_coords(rate=["fmr", "fnmr"])
    point = xr.concat([reps.fmr_point, reps.fnmr_point], dim="rate").assign_coords(rate=["fmr", "fnmr"])
    band = simultaneous_band(rates, point, level=0.95, along=("rate", "threshold"))
    assert band.dims == ("rate", "threshold", "bound")
    lower, upper = band.sel(bound="lower"), band.sel(bound="upper")
    assert bool(((lower <= point) & (point <= upper)).all()) and bool((upper > lower).all())  # never zero width
    assert band.attrs["critical_value"] > band.attrs["pointwise_z"]


# ------------------------------------------------------------ input checks -


def test_bad_input_is_refused_with_a_reason():
    reps, point = _gaussian_replicates(K=5, B=100, rho=0.3, seed=9)
    ok = dict(level=0.95, along="threshold")
    for level in (0, 1, -0.5, 1.5, "high"):
        with pytest.raises(ValueError, match="level"):
            simultaneous_band(reps, point, level=level, along="threshold")
    with pytest.raises(TypeError):
        simultaneous_band(reps, point, along="threshold")  # no default level: say it
    with pytest.raises(ValueError, match="scale"):
        simultaneous_band(reps, point, scale="log", **ok)
    with pytest.raises(ValueError, match="method"):
        simultaneous_band(reps, point, method="bonferroni", **ok)
    with pytest.raises(ValueError, match="studentise"):
        simultaneous_band(reps, point, studentise="none", **ok)
    with pytest.raises(ValueError, match="along"):
        simultaneous_band(reps, point, level=0.95, along="rank")
    with pytest.raises(ValueError, match="along"):
        simultaneous_band(reps, point, level=0.95, along=[])
    with pytest.raises(ValueError, match="dim="):
        simultaneous_band(reps, point, dim="draw", **ok)
    with pytest.raises(ValueError, match="different coordinates"):
        simultaneous_band(reps, point.assign_coords(threshold=point.threshold * 2), **ok)
    with pytest.raises(ValueError, match="needs every dimension"):
        simultaneous_band(reps.expand_dims(group=2).copy(), point, **ok)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        simultaneous_band(reps * 100, point, **ok)
    with pytest.raises(ValueError, match="trials behind each rate"):
        simultaneous_band(reps, point, n=0, **ok)
    with pytest.raises(TypeError, match="DataArrays"):
        simultaneous_band(reps.values, point, **ok)
    with pytest.raises(ValueError, match="n_replicates"):
        simultaneous_band(reps.isel(replicate=[0]), point, **ok)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewReplicatesWarning)
        with pytest.raises(FewReplicatesWarning, match="1,000"):
            simultaneous_band(reps, point, **ok)


def test_missing_points_stay_missing():
    reps, point = _gaussian_replicates(K=5, B=200, rho=0.3, seed=10)
    point = point.where(point.threshold != 2)
    band = simultaneous_band(reps, point, level=0.95, along="threshold")
    assert np.isnan(band.sel(threshold=2.0)).all() and np.isfinite(band.sel(threshold=1.0)).all()


def test_the_score_bootstrap_of_these_tests_recounts_the_resampled_scores():
    rng = np.random.default_rng(11)
    scores, t = rng.normal(size=30), np.linspace(-1, 1, 7)
    share, point = _score_bootstrap(np.random.default_rng(12), scores, t, 5)
    draws = scores[np.random.default_rng(12).integers(0, 30, (5, 30))]
    np.testing.assert_allclose(share, (draws[:, :, None] >= t).mean(axis=1))
    np.testing.assert_allclose(point, [(scores >= v).mean() for v in t])
