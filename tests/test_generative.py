"""Specificity and generalisation of a generative model (METHODS.md section 6).

Reference values come from a brute-force double loop written straight from
the formulas, with distances from scipy's scalar functions
(``scipy.spatial.distance.euclidean`` and friends) or plain NumPy, one pair
at a time, never through bioxr's blocked search.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial import distance as spd

from bioxr.generative import (
    DEFAULT_BLOCK_SIZE,
    generalisation,
    specificity,
    specificity_generalisation,
)

PAIR_DISTANCES = {
    "euclidean": spd.euclidean,
    "sqeuclidean": spd.sqeuclidean,
    "cityblock": spd.cityblock,
    "chebyshev": spd.chebyshev,
    "cosine": spd.cosine,
}


def brute_force(training: np.ndarray, synthetic: np.ndarray, pair):
    """G, sigma_G, S, sigma_S and the nearest distances by a double loop."""
    x = training.reshape(len(training), -1)
    y = synthetic.reshape(len(synthetic), -1)
    n, m = len(x), len(y)
    d = [[pair(x[i], y[j]) for j in range(m)] for i in range(n)]
    to_synthetic = [min(d[i][j] for j in range(m)) for i in range(n)]
    to_training = [min(d[i][j] for i in range(n)) for j in range(m)]

    def mean_se(values):
        k = len(values)
        mean = sum(values) / k
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / k)  # population SD, ddof = 0
        return mean, sd / math.sqrt(k - 1)

    g, sg = mean_se(to_synthetic)
    s, ss = mean_se(to_training)
    return g, sg, s, ss, np.array(to_synthetic), np.array(to_training)


def random_sets(seed: int, n: int = 9, m: int = 13, features=(3, 2)):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, *features)), rng.normal(size=(m, *features)) + 0.3


def as_dataarray(values: np.ndarray, dims=("sample", "y", "x")) -> xr.DataArray:
    return xr.DataArray(values, dims=dims[: values.ndim])


# --------------------------------------------------------------------------- brute force
@pytest.mark.parametrize("metric", sorted(PAIR_DISTANCES))
@pytest.mark.parametrize("features", [(), (4,), (3, 2)])
def test_matches_brute_force(metric, features):
    x, y = random_sets(11, features=features)
    g, sg, s, ss, dx, dy = brute_force(x, y, PAIR_DISTANCES[metric])
    res = specificity_generalisation(x, y, metric=metric)
    np.testing.assert_allclose([res.G, res.sigma_G, res.S, res.sigma_S], [g, sg, s, ss], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.training_distance, dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.synthetic_distance, dy, rtol=1e-10, atol=1e-12)
    assert int(res.n_training) == len(x) and int(res.n_synthetic) == len(y)
    assert res.attrs["metric"] == metric and res.attrs["sd_ddof"] == 0


def test_nearest_positions_point_at_the_nearest_sample():
    x, y = random_sets(5)
    res = specificity_generalisation(x, y)
    xf, yf = x.reshape(len(x), -1), y.reshape(len(y), -1)
    for i, j in enumerate(res.training_nearest.values):
        assert np.isclose(np.linalg.norm(xf[i] - yf[j]), res.training_distance[i])
    for j, i in enumerate(res.synthetic_nearest.values):
        assert np.isclose(np.linalg.norm(xf[i] - yf[j]), res.synthetic_distance[j])


def test_minkowski_and_callable_metrics():
    x, y = random_sets(3, features=(5,))
    g, _, s, _, _, _ = brute_force(x, y, lambda a, b: spd.minkowski(a, b, p=3))
    res = specificity_generalisation(x, y, metric="minkowski", metric_kwargs={"p": 3})
    np.testing.assert_allclose([res.G, res.S], [g, s], rtol=1e-10)
    assert res.attrs["metric_options"] == "p=3"

    def l1(a, b):
        return float(np.abs(a - b).sum())

    g, _, s, _, _, _ = brute_force(x, y, l1)
    res = specificity_generalisation(x, y, metric=l1)
    np.testing.assert_allclose([res.G, res.S], [g, s], rtol=1e-10)
    assert res.attrs["metric"] == "l1"


def test_mahalanobis_needs_its_matrix():
    x, y = random_sets(4, features=(3,))
    with pytest.raises(ValueError, match="VI"):
        specificity_generalisation(x, y, metric="mahalanobis")
    vi = np.linalg.inv(np.cov(x.T))
    g, _, s, _, _, _ = brute_force(x, y, lambda a, b: spd.mahalanobis(a, b, vi))
    res = specificity_generalisation(x, y, metric="mahalanobis", metric_kwargs={"VI": vi}, block_size=4)
    np.testing.assert_allclose([res.G, res.S], [g, s], rtol=1e-10)


def test_generalisation_and_specificity_are_the_halves():
    x, y = random_sets(8)
    both = specificity_generalisation(x, y, metric="cityblock")
    g = generalisation(x, y, metric="cityblock")
    s = specificity(x, y, metric="cityblock")
    assert set(g.data_vars) == {"G", "sigma_G", "n_training", "n_synthetic", "training_distance", "training_nearest"}
    assert set(s.data_vars) == {"S", "sigma_S", "n_training", "n_synthetic", "synthetic_distance", "synthetic_nearest"}
    xr.testing.assert_identical(g, both[list(g.data_vars)])
    xr.testing.assert_identical(s, both[list(s.data_vars)])


# --------------------------------------------------------------------------- blocking
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
@pytest.mark.parametrize("block_size", [1, 2, 5, 13, 40, 117])
def test_block_size_invariance(metric, block_size):
    x, y = random_sets(21, n=10, m=13)
    one_block = specificity_generalisation(x, y, metric=metric, block_size=10 * 13)
    tiled = specificity_generalisation(x, y, metric=metric, block_size=block_size)
    assert tiled.attrs["block_size"] == block_size
    xr.testing.assert_allclose(tiled.drop_attrs(), one_block.drop_attrs(), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(tiled.training_nearest, one_block.training_nearest)
    np.testing.assert_array_equal(tiled.synthetic_nearest, one_block.synthetic_nearest)


def test_ties_go_to_the_lowest_position_across_blocks():
    training = np.array([[0.0], [4.0]])
    synthetic = np.array([[2.0], [-2.0], [6.0], [2.0]])  # training 0 is 2 from synthetic 0, 1 and 3
    for block_size in (1, 3, 8):
        res = specificity_generalisation(training, synthetic, block_size=block_size)
        assert res.training_nearest.values.tolist() == [0, 0]
        assert res.synthetic_nearest.values.tolist() == [0, 0, 1, 0]


def test_default_block_is_64_megabytes():
    assert DEFAULT_BLOCK_SIZE * 8 == 64 * 2**20
    x, y = random_sets(0)
    assert specificity_generalisation(x, y).attrs["block_size"] == DEFAULT_BLOCK_SIZE


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "big"])
def test_bad_block_size(bad):
    x, y = random_sets(0)
    with pytest.raises(ValueError, match="block_size"):
        specificity_generalisation(x, y, block_size=bad)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 7),
    m=st.integers(2, 7),
    d=st.integers(1, 4),
    block_size=st.integers(1, 60),
    seed=st.integers(0, 2**16),
    duplicates=st.booleans(),
)
def test_property_blocked_equals_brute_force(n, m, d, block_size, seed, duplicates):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=(n, d)).astype(float)  # small integers: many exact ties
    y = rng.integers(-3, 4, size=(m, d)).astype(float)
    if duplicates:
        y[: min(n, m)] = x[: min(n, m)]
    g, sg, s, ss, dx, dy = brute_force(x, y, spd.euclidean)
    res = specificity_generalisation(x, y, block_size=block_size)
    np.testing.assert_allclose([res.G, res.sigma_G, res.S, res.sigma_S], [g, sg, s, ss], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(res.training_distance, dx)  # exact: distances recomputed directly
    np.testing.assert_array_equal(res.synthetic_distance, dy)


# --------------------------------------------------------------------------- behaviour
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cityblock"])
def test_memorising_model_scores_zero(metric):
    rng = np.random.default_rng(7)
    training = rng.normal(loc=1e3, scale=1.0, size=(25, 8, 8))  # large norms: the dot trick alone would not give 0
    synthetic = training[rng.permutation(25)]
    res = specificity_generalisation(training, synthetic, metric=metric, block_size=50)
    for name in ("G", "sigma_G", "S", "sigma_S"):
        assert float(res[name]) == 0.0, name
    # a model that memorises and adds a few copies: still zero both ways
    res = specificity_generalisation(training, np.concatenate([synthetic, training[:5]]), metric=metric)
    assert float(res.G) == 0.0 and float(res.S) == 0.0


def test_far_model_scores_large_and_good_model_small():
    rng = np.random.default_rng(9)
    training = rng.normal(size=(40, 6))
    good = specificity_generalisation(training, rng.normal(size=(80, 6)))
    far = specificity_generalisation(training, rng.normal(size=(80, 6)) + 50.0)
    shift = 50.0 * math.sqrt(6)
    assert float(far.G) > shift - 10 and float(far.S) > shift - 10
    assert float(far.G) > 20 * float(good.G) and float(far.S) > 20 * float(good.S)
    # a model too narrow (all its samples near the mean) is specific but does not generalise
    narrow = specificity_generalisation(training, rng.normal(scale=0.05, size=(80, 6)))
    assert float(narrow.G) > float(good.G) + 3 * float(good.sigma_G)


def test_sigma_uses_population_sd_over_count_minus_one():
    training = np.array([[0.0], [10.0], [20.0]])
    synthetic = np.array([[1.0], [12.0], [23.0]])
    res = specificity_generalisation(training, synthetic)
    dists = np.array([1.0, 2.0, 3.0])
    assert float(res.G) == pytest.approx(2.0)
    assert float(res.sigma_G) == pytest.approx(dists.std(ddof=0) / math.sqrt(2))
    assert float(res.sigma_G) == pytest.approx(dists.std(ddof=1) / math.sqrt(3))  # the usual SE of a mean


# --------------------------------------------------------------------------- inputs
def test_dataarray_and_numpy_agree():
    x, y = random_sets(12, features=(3, 2))
    from_numpy = specificity_generalisation(x, y)
    from_xr = specificity_generalisation(as_dataarray(x), as_dataarray(y))
    mixed = specificity_generalisation(as_dataarray(x), y.reshape(len(y), -1))
    for res in (from_xr, mixed):
        for name in ("G", "sigma_G", "S", "sigma_S", "training_distance", "synthetic_distance"):
            np.testing.assert_allclose(res[name], from_numpy[name], rtol=1e-12)


def test_feature_dims_matched_by_name_and_sample_dim_anywhere():
    x, y = random_sets(13, features=(3, 2))
    reference = specificity_generalisation(x, y)
    xa = as_dataarray(x).transpose("y", "sample", "x")
    ya = as_dataarray(y).transpose("x", "y", "sample")
    res = specificity_generalisation(xa, ya)
    np.testing.assert_allclose([res.G, res.S], [reference.G, reference.S], rtol=1e-12)
    renamed = specificity_generalisation(xa.rename(sample="face"), ya.rename(sample="face"), sample_dim="face")
    np.testing.assert_allclose([renamed.G, renamed.S], [reference.G, reference.S], rtol=1e-12)


def test_sample_coordinates_carried_onto_result_dims():
    x, y = random_sets(14, n=4, m=5, features=(2,))
    xa = xr.DataArray(x, dims=("sample", "pixel"), coords={"sample": list("abcd"), "subject": ("sample", [1, 1, 2, 2])})
    ya = xr.DataArray(y, dims=("sample", "pixel"), coords={"sample": [10, 11, 12, 13, 14]})
    res = specificity_generalisation(xa, ya)
    assert res.training.values.tolist() == list("abcd")
    assert res.training_subject.dims == ("training",)
    assert res.synthetic.values.tolist() == [10, 11, 12, 13, 14]
    assert res.training_distance.groupby("training_subject").mean().sizes["training_subject"] == 2
    assert specificity_generalisation(x, y).synthetic.values.tolist() == list(range(5))


def test_mismatched_features_rejected():
    x, y = random_sets(15, features=(3, 2))
    with pytest.raises(ValueError, match="features"):
        specificity_generalisation(x, y[:, :2])
    with pytest.raises(ValueError, match="feature dims"):
        specificity_generalisation(as_dataarray(x), as_dataarray(y, dims=("sample", "y", "z")))
    xa = as_dataarray(x).assign_coords(x=[0, 1])
    ya = as_dataarray(y).assign_coords(x=[5, 6])
    with pytest.raises(ValueError, match="coordinates"):
        specificity_generalisation(xa, ya)
    with pytest.raises(ValueError, match="sample dimension 'sample'"):
        specificity_generalisation(as_dataarray(x).rename(sample="image"), y)
    with pytest.raises(TypeError, match="Dataset"):
        specificity_generalisation(as_dataarray(x).to_dataset(name="v"), y)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("where", ["training", "synthetic"])
def test_nan_rejected_with_clear_error(bad, where):
    x, y = random_sets(16)
    (x if where == "training" else y)[2, 1, 0] = bad
    with pytest.raises(ValueError, match=f"{where} contains NaN or infinite values \\(1 of"):
        specificity_generalisation(as_dataarray(x), as_dataarray(y))


def test_metric_giving_nan_rejected():
    x, y = random_sets(17, features=(4,))
    y[3] = 0.0  # cosine distance to a zero vector is undefined
    with pytest.raises(ValueError, match="NaN or infinite distances"):
        specificity_generalisation(x, y, metric="cosine")


def test_unknown_metric_and_options():
    x, y = random_sets(18)
    with pytest.raises(ValueError, match="not usable"):
        specificity_generalisation(x, y, metric="nonsense")
    with pytest.raises(ValueError, match="no metric_kwargs"):
        specificity_generalisation(x, y, metric="euclidean", metric_kwargs={"p": 2})


@pytest.mark.parametrize(
    ("n", "m", "function", "message"),
    [
        (1, 5, specificity_generalisation, "sigma_G needs at least 2 training samples"),
        (5, 1, specificity_generalisation, "sigma_S needs at least 2 synthetic samples"),
        (1, 5, generalisation, "sigma_G"),
        (5, 1, specificity, "sigma_S"),
    ],
)
def test_single_sample_gives_clear_error(n, m, function, message):
    x, y = random_sets(19, n=n, m=m)
    with pytest.raises(ValueError, match=message):
        function(x, y)


def test_single_sample_on_the_other_side_is_fine():
    x, y = random_sets(20, n=1, m=6)
    res = specificity(x, y)  # S averages over the 6 synthetic samples; one training sample is enough
    assert float(res.S) > 0 and int(res.n_training) == 1
    res = generalisation(y, x)
    assert int(res.n_synthetic) == 1


def test_empty_and_scalar_inputs():
    x, _ = random_sets(0)
    with pytest.raises(ValueError, match="no samples"):
        specificity_generalisation(x, x[:0])
    with pytest.raises(ValueError, match="scalar"):
        specificity_generalisation(x, np.float64(1.0))


def test_float32_and_integer_inputs():
    x, y = random_sets(22, features=(4,))
    reference = specificity_generalisation(x, y)
    res = specificity_generalisation(x.astype(np.float32), y.astype(np.float32))
    np.testing.assert_allclose([res.G, res.S], [reference.G, reference.S], rtol=1e-6)
    ints = specificity_generalisation(np.arange(6).reshape(3, 2), np.arange(6).reshape(3, 2) + 1)
    assert float(ints.G) == pytest.approx(math.sqrt(2))


def test_result_saves_to_netcdf(tmp_path):
    x, y = random_sets(23)
    res = specificity_generalisation(as_dataarray(x), as_dataarray(y), metric="minkowski", metric_kwargs={"p": 1.5})
    path = tmp_path / "sg.nc"
    res.to_netcdf(path, engine="h5netcdf")
    with xr.open_dataset(path, engine="h5netcdf") as back:
        xr.testing.assert_allclose(back, res)
        assert back.attrs["metric"] == "minkowski"


def test_dask_backed_input_equals_in_memory():
    pytest.importorskip("dask")
    x, y = random_sets(24, n=12, m=9)
    in_memory = specificity_generalisation(as_dataarray(x), as_dataarray(y))
    chunked = specificity_generalisation(as_dataarray(x).chunk(sample=5), as_dataarray(y).chunk(sample=4))
    xr.testing.assert_identical(chunked, in_memory)


def test_permuting_samples_permutes_only_the_per_sample_results():
    x, y = random_sets(25)
    res = specificity_generalisation(x, y)
    p, q = np.random.default_rng(1).permutation(len(x)), np.random.default_rng(2).permutation(len(y))
    perm = specificity_generalisation(x[p], y[q])
    np.testing.assert_allclose([perm.G, perm.sigma_G, perm.S, perm.sigma_S], [res.G, res.sigma_G, res.S, res.sigma_S], rtol=1e-12)
    np.testing.assert_allclose(perm.training_distance, res.training_distance.values[p], rtol=1e-12)
    np.testing.assert_allclose(perm.synthetic_distance, res.synthetic_distance.values[q], rtol=1e-12)


def test_accessor_gives_the_function_result():
    import xarray as xr

    import bioxr  # noqa: F401  (registers .bio)
    from bioxr.generative import specificity_generalisation

    rng = np.random.default_rng(0)
    train = xr.DataArray(rng.normal(size=(20, 3)), dims=("sample", "feature"))
    synth = xr.DataArray(rng.normal(size=(15, 3)), dims=("sample", "feature"))
    xr.testing.assert_identical(train.bio.specificity_generalisation(synth), specificity_generalisation(train, synth))


# --------------------------------------------------------------------------- numerics: offsets and ties
def cdist_reference(training: np.ndarray, synthetic: np.ndarray, metric: str = "euclidean"):
    """Nearest distances and positions both ways from a full scipy cdist matrix (first position on ties)."""
    d = spd.cdist(np.asarray(training, dtype=np.float64), np.asarray(synthetic, dtype=np.float64), metric)
    return d.min(axis=1), d.argmin(axis=1), d.min(axis=0), d.argmin(axis=0)


def assert_matches_cdist(res, training, synthetic, metric="euclidean", rtol=1e-13):
    dx, ix, dy, iy = cdist_reference(training, synthetic, metric)
    np.testing.assert_array_equal(res.training_nearest, ix)
    np.testing.assert_array_equal(res.synthetic_nearest, iy)
    np.testing.assert_allclose(res.training_distance, dx, rtol=rtol, atol=0)
    np.testing.assert_allclose(res.synthetic_distance, dy, rtol=rtol, atol=0)
    np.testing.assert_allclose([res.G, res.S], [dx.mean(), dy.mean()], rtol=rtol)


@pytest.mark.parametrize("offset", [0.0, 1e4, 1e8, 1e12, -3e9])
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean"])
def test_large_common_offset_matches_cdist(offset, metric):
    # the issue's case: before the fix G was 1.63 instead of 0.63 at 1e8 + N(0, 1)
    rng = np.random.default_rng(41)
    x = offset + rng.normal(size=(70, 8))
    y = offset + rng.normal(size=(45, 8)) + 0.2
    for block_size in (DEFAULT_BLOCK_SIZE, 97, 1):
        assert_matches_cdist(specificity_generalisation(x, y, metric=metric, block_size=block_size), x, y, metric)


def test_issue_case_one_dimensional_offset():
    rng = np.random.default_rng(3)
    x, y = 1e8 + rng.normal(size=(400, 1)), 1e8 + rng.normal(size=(400, 1))
    res = generalisation(x, y)
    reference = spd.cdist(x, y).min(axis=1).mean()
    assert float(res.G) == pytest.approx(reference, rel=1e-13)


def test_offset_per_feature_and_far_synthetic_set():
    rng = np.random.default_rng(5)
    offset = np.array([1e10, -1e6, 0.0, 3e12])
    x = offset + rng.normal(size=(50, 4))
    y = offset + 40.0 + rng.normal(size=(30, 4))  # far from the training mean: centring on it still works
    assert_matches_cdist(specificity_generalisation(x, y), x, y)


def test_offset_data_need_no_direct_scan(monkeypatch):
    # centring makes offset data well conditioned: the matrix product decides, no slow fallback
    import bioxr.generative._search as generative  # the nearest-neighbour search

    def refuse(*args, **kwargs):
        raise AssertionError("direct scan used for well-conditioned data")

    monkeypatch.setattr(generative, "_direct_scan", refuse)
    rng = np.random.default_rng(6)
    x, y = 1e12 + rng.normal(size=(60, 16)), 1e12 + rng.normal(size=(40, 16))
    assert_matches_cdist(specificity_generalisation(x, y, block_size=300), x, y)


@pytest.mark.parametrize("offset", [0.0, 1e8, 2.0**45])
def test_exact_ties_at_an_offset_go_to_the_lowest_position(offset):
    # integers at an offset: all differences and squared distances are exact, so ties are exact;
    # the shortcut's rounding (the training mean is not an integer) must not break them
    rng = np.random.default_rng(7)
    x = offset + rng.integers(-3, 4, size=(80, 3)).astype(float)
    y = offset + rng.integers(-3, 4, size=(60, 3)).astype(float)
    g, sg, s, ss, dx, dy = brute_force(x, y, lambda a, b: math.sqrt(float(((a - b) ** 2).sum())))
    for block_size in (DEFAULT_BLOCK_SIZE, 50, 7):
        res = specificity_generalisation(x, y, block_size=block_size)
        np.testing.assert_array_equal(res.training_distance, dx)
        np.testing.assert_array_equal(res.synthetic_distance, dy)
        assert_matches_cdist(res, x, y, rtol=0)
        np.testing.assert_allclose([res.sigma_G, res.sigma_S], [sg, ss], rtol=1e-12)


def test_near_ties_resolved_by_direct_distances():
    # y0 and y1 lie at squared distances 1 + 2**-30 and 1 from x0 (exact at this offset); the shortcut's
    # error on centred samples this far apart (~1e6 from the mean) is larger than the gap
    base = 2.0**20
    x = np.array([[base, 0.0], [-base, 0.0], [base + 8, 0.0], [-base - 8, 0.0]])
    delta = 2.0**-31
    y = np.array([[base + 1 + delta, 0.0], [base - 1, 0.0], [-base - 1, 0.0], [-base + 1 + delta, 0.0]])
    res = specificity_generalisation(x, y, metric="sqeuclidean")
    assert res.training_nearest.values[:2].tolist() == [1, 2]
    assert res.training_distance.values[:2].tolist() == [1.0, 1.0]
    assert_matches_cdist(res, x, y, "sqeuclidean", rtol=0)


def test_badly_conditioned_far_apart_clusters_match_cdist():
    # two clusters at +-1e8: the training mean sits between them, the centred norms (1e16) swamp the
    # shortcut; the direct scan gives the brute-force answer anyway
    rng = np.random.default_rng(8)
    sign = np.repeat([1.0, -1.0], [30, 25])[:, None]
    x = 1e8 * sign + rng.normal(size=(55, 4))
    y = 1e8 * np.repeat([1.0, -1.0], [20, 22])[:, None] + rng.normal(size=(42, 4))
    for block_size in (DEFAULT_BLOCK_SIZE, 64, 5):
        assert_matches_cdist(specificity_generalisation(x, y, block_size=block_size), x, y)


def test_many_exact_duplicates_fall_back_to_a_direct_scan():
    # 40 copies of one synthetic sample: more candidates than are kept, resolved by the direct scan
    rng = np.random.default_rng(9)
    x = 1e8 + rng.normal(size=(12, 5))
    y = np.vstack([1e8 + rng.normal(size=(3, 5)), np.repeat(x[:1] + 0.5, 40, axis=0), 1e8 + rng.normal(size=(4, 5))])
    for block_size in (DEFAULT_BLOCK_SIZE, 20, 3):
        res = specificity_generalisation(x, y, block_size=block_size)
        assert_matches_cdist(res, x, y)
        assert res.synthetic_nearest.values[3:43].tolist() == [0] * 40  # ties go to the lowest position


@pytest.mark.parametrize("offset", [0.0, 1e4, 1e8])
def test_float32_inputs_at_an_offset_match_float64_brute_force(offset):
    # float32 samples are compared in float64: the answer is cdist of the float32 values, upcast;
    # at 1e8 float32 keeps multiples of 8, so exact ties abound
    rng = np.random.default_rng(10)
    x = (offset + rng.normal(scale=1 + offset * 1e-7, size=(60, 6))).astype(np.float32)
    y = (offset + rng.normal(scale=1 + offset * 1e-7, size=(40, 6))).astype(np.float32)
    res = specificity_generalisation(x, y)
    assert res.training_distance.dtype == np.float64
    assert_matches_cdist(res, x, y)
    tiled = specificity_generalisation(x, y, block_size=33)
    xr.testing.assert_identical(tiled.drop_attrs(), res.drop_attrs())


@pytest.mark.parametrize("block_size", [1, 4, DEFAULT_BLOCK_SIZE])
def test_candidates_kept_per_sample_stay_bounded(monkeypatch, block_size):
    # memory: at most _CANDIDATE_CAP candidates stored per sample, whatever the ties and the tiling
    import bioxr.generative._search as generative  # the nearest-neighbour search

    made = []

    class Recording(generative._Candidates):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(generative, "_Candidates", Recording)
    x = np.zeros((3, 2)) + 1e8
    y = np.vstack([np.ones((30, 2)), np.full((5, 2), 2.0)]) + 1e8  # 30 exact ties for every training sample
    res = specificity_generalisation(x, y, block_size=block_size)
    assert res.training_nearest.values.tolist() == [0, 0, 0]
    assert res.synthetic_nearest.values.tolist() == [0] * 35
    for candidates in made:
        owners = np.concatenate([p[0] for p in candidates.parts]) if candidates.parts else np.zeros(0, int)
        assert np.bincount(owners, minlength=candidates.counts.size).max(initial=0) <= generative._CANDIDATE_CAP
    assert made[0].over.all()  # the 30 ties overflow: direct scan


# ------------------------------------------------------------- a lab's own files ---
def _write_sets(folder):
    """A training set and three models' samples in every file kind read_samples takes."""
    from bioxr import generative  # noqa: F401 - imported for its reader below

    rng = np.random.default_rng(5)
    train = rng.normal(size=(40, 4))
    good, poor, third = rng.normal(size=(50, 4)), 2 * rng.normal(size=(30, 4)), rng.normal(size=(20, 4))
    np.save(folder / "training.npy", train)
    models = folder / "models"
    models.mkdir()
    np.save(models / "good.npy", good)
    with open(models / "poor.csv", "w") as f:  # a header of names, a comment, a blank line
        f.write("# poor model\nf1,f2,f3,f4\n")
        for k, row in enumerate(poor):
            f.write(",".join(repr(float(v)) for v in row) + "\n" + ("\n" if k == 3 else ""))
    np.savetxt(models / "third.tsv", third, delimiter="\t")  # no header, tab-separated
    return train, {"good": good, "poor": poor, "third": third}


def test_read_samples_reads_every_kind_of_file_and_gives_compare_models_the_arrays(tmp_path):
    from bioxr import generative

    train, models = _write_sets(tmp_path)
    got = generative.read_samples(tmp_path / "training.npy", tmp_path / "models")
    np.testing.assert_array_equal(got.training, train)
    assert list(got.synthetic) == ["good", "poor", "third"]  # folder order, named by the file
    for name, values in models.items():
        np.testing.assert_array_equal(got.synthetic[name], values)
    np.savez(tmp_path / "all.npz", good=models["good"], poor=models["poor"])
    from_npz = generative.read_samples(tmp_path / "training.npy", str(tmp_path / "all.npz"))
    assert list(from_npz.synthetic) == ["good", "poor"]
    res = generative.compare_models(got.training, got.synthetic)
    direct = generative.compare_models(train, models)
    xr.testing.assert_identical(res, direct)
    text = generative.describe_samples(got)
    assert text == ("The training set (training.npy) holds 40 samples of 4 features each; the models were given "
                    "good (good.npy) 50, poor (poor.csv) 30 and third (third.tsv) 20 samples.")
    assert got.source == "the training set training.npy and the samples of 3 models (good.npy, poor.csv, third.tsv)"
    assert "different numbers of samples (good 50, poor 30, third 20)" in generative.sizes_note(res)
    assert ("(good 50, poor 30, third 20); more samples lower G by themselves, so the comparison on G is not at "
            "equal sizes") in generative.describe(res)
    np.save(tmp_path / "images.npy", rng_images := np.random.default_rng(1).normal(size=(10, 2, 3)))
    img = generative.read_samples(tmp_path / "images.npy", {"m": rng_images[::-1]})
    assert img.training.shape == (10, 6) and "(arrays of shape 2 x 3, flattened)" in generative.describe_samples(img)


def test_read_samples_refuses_what_would_make_the_measures_meaningless(tmp_path):
    from bioxr import generative
    from bioxr.generative import SampleFileError

    train, models = _write_sets(tmp_path)
    t = tmp_path / "training.npy"
    np.save(tmp_path / "wide.npy", np.zeros((10, 5)))
    with pytest.raises(SampleFileError, match=r"wide.npy: its samples have 5 features \(shape \(5,\)\), the "
                                              r"training set's 4"):
        generative.read_samples(t, tmp_path / "wide.npy")
    bad = models["good"].copy()
    bad[[2, 7, 9]] = np.nan
    bad[11, 0] = np.inf
    np.save(tmp_path / "holes.npy", bad)
    with pytest.raises(SampleFileError, match=r"holes.npy: 4 of 50 samples of model 'holes' hold NaN or infinite "
                                              r"values \(row 3, row 8, row 10, row 12\).*none is dropped silently"):
        generative.read_samples(t, tmp_path / "holes.npy")
    (tmp_path / "holes.csv").write_text("a,b,c,d\n1,2,3,4\n# note\n1,,3,4\n5,6,7,8\n")
    with pytest.raises(SampleFileError, match=r"1 of 3 samples of the training set hold NaN .*\(line 4\)"):
        generative.read_samples(tmp_path / "holes.csv", tmp_path / "models")
    np.save(tmp_path / "one.npy", np.zeros((1, 4)))
    with pytest.raises(SampleFileError, match=r"one.npy: model 'one' has 1 sample; the standard errors .* at least 2"):
        generative.read_samples(t, tmp_path / "one.npy")
    np.save(tmp_path / "flat.npy", np.zeros(40))
    with pytest.raises(SampleFileError, match=r"shape \(40,\); give one sample per row.*shape \(40, 1\)"):
        generative.read_samples(tmp_path / "flat.npy", tmp_path / "models")
    (tmp_path / "text.csv").write_text("1,2,3,4\n1,2,x,4\n")
    with pytest.raises(SampleFileError, match=r"text.csv: line 2, column 3: 'x' is not a number"):
        generative.read_samples(t, tmp_path / "text.csv")
    (tmp_path / "short.csv").write_text("1,2,3,4\n1,2,3\n")
    with pytest.raises(SampleFileError, match=r"short.csv: line 2 has 3 numbers but the first row has 4"):
        generative.read_samples(t, tmp_path / "short.csv")
    np.savez(tmp_path / "two.npz", a=train, b=train)
    with pytest.raises(SampleFileError, match=r"holds 2 arrays \(a, b\); the training set is one array"):
        generative.read_samples(tmp_path / "two.npz", tmp_path / "models")
    with pytest.raises(SampleFileError, match=r"samples is empty: give the models' samples as well"):
        generative.read_samples(t, "")
    with pytest.raises(SampleFileError, match="no such file"):
        generative.read_samples(tmp_path / "nothing.npy", tmp_path / "models")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SampleFileError, match="holds no sample file"):
        generative.read_samples(t, tmp_path / "empty")
    np.save(tmp_path / "models" / "good2.npy", models["good"])
    (tmp_path / "models" / "good.csv").write_text("1,2,3,4\n5,6,7,8\n")
    with pytest.raises(SampleFileError, match="a second set of samples for model 'good'"):
        generative.read_samples(t, tmp_path / "models")
