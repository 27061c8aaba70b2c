"""The seeded simulators: reproducibility, chunking, global state, and the
statistical structure they promise (mated above non-mated; rank-1 outcomes
clustered in time)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from bioxr import simulate
from bioxr.cube import validate_score_cube

SMALL = dict(n_subjects=5, n_images=2, n_collections=7)


# --------------------------------------------------------------------------
# Reproducibility
# --------------------------------------------------------------------------


def test_same_int_seed_gives_identical_cubes():
    xr.testing.assert_identical(simulate.gaussian(12, 3, seed=4), simulate.gaussian(12, 3, seed=4))
    xr.testing.assert_identical(simulate.photohead(**SMALL, seed=4), simulate.photohead(**SMALL, seed=4))


def test_same_generator_state_gives_identical_cubes():
    a = simulate.photohead(**SMALL, seed=np.random.default_rng(11))
    b = simulate.photohead(**SMALL, seed=np.random.default_rng(11))
    xr.testing.assert_identical(a, b)
    a = simulate.gaussian(8, seed=np.random.default_rng(11))
    b = simulate.gaussian(8, seed=np.random.default_rng(11))
    xr.testing.assert_identical(a, b)


def test_same_seed_sequence_gives_identical_cubes():
    a = simulate.gaussian(8, seed=np.random.SeedSequence(3))
    b = simulate.gaussian(8, seed=np.random.SeedSequence(3))
    xr.testing.assert_identical(a, b)


def test_different_seeds_give_different_cubes():
    for make in (lambda s: simulate.gaussian(8, seed=s), lambda s: simulate.photohead(**SMALL, seed=s)):
        a, b = make(1), make(2)
        assert not np.array_equal(a.values, b.values)
        c, d = make(np.random.default_rng(1)), make(np.random.default_rng(2))
        assert not np.array_equal(c.values, d.values)


def test_reusing_a_generator_draws_new_data():
    rng = np.random.default_rng(5)
    a = simulate.gaussian(8, seed=rng)
    b = simulate.gaussian(8, seed=rng)
    assert not np.array_equal(a.values, b.values)


def test_spawned_seed_sequences_give_different_cubes():
    a, b = np.random.SeedSequence(5).spawn(2)
    assert not np.array_equal(simulate.gaussian(6, seed=a).values, simulate.gaussian(6, seed=b).values)


@pytest.mark.parametrize("chunks", [1, 3, {"collection": 2}, {"collection": 100}])
def test_chunked_photohead_equals_unchunked(chunks):
    eager = simulate.photohead(**SMALL, seed=21)
    lazy = simulate.photohead(**SMALL, seed=21, chunks=chunks)
    assert lazy.chunks is not None
    step = chunks["collection"] if isinstance(chunks, dict) else chunks
    assert max(lazy.chunksizes["collection"]) == min(step, SMALL["n_collections"])
    xr.testing.assert_identical(lazy.compute(), eager)


def test_chunked_photohead_with_generator_seed_equals_unchunked():
    eager = simulate.photohead(**SMALL, seed=np.random.default_rng(8))
    lazy = simulate.photohead(**SMALL, seed=np.random.default_rng(8), chunks=2)
    xr.testing.assert_identical(lazy.compute(), eager)


def _global_state():
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return name, keys.copy(), pos, has_gauss, cached


def test_global_random_state_is_untouched():
    np.random.seed(12345)
    before = _global_state()
    simulate.gaussian(10, seed=1)
    simulate.gaussian(10, seed=np.random.default_rng(1))
    simulate.gaussian(10, seed=np.random.SeedSequence(1))
    simulate.photohead(**SMALL, seed=1)
    simulate.photohead(**SMALL, seed=np.random.default_rng(2), chunks=3).compute()
    after = _global_state()
    assert before[0] == after[0]
    np.testing.assert_array_equal(before[1], after[1])
    assert before[2:] == after[2:]


# --------------------------------------------------------------------------
# Structure and statistics
# --------------------------------------------------------------------------


def test_photohead_structure():
    cube = simulate.photohead(**SMALL, seed=0)
    validate_score_cube(cube)
    assert cube.dims == ("subject", "image", "collection", "reference")
    assert cube.dtype == np.float32
    assert cube.sizes["reference"] == SMALL["n_subjects"] * SMALL["n_images"]
    assert set(cube.weather.values.tolist()) <= set(simulate.PHOTOHEAD_WEATHER)
    # reference k is original image k % n_images of subject k // n_images
    subjects = cube.subject.values.tolist()
    assert cube.reference_subject.values.tolist() == [s for s in subjects for _ in range(SMALL["n_images"])]
    assert bool(np.isfinite(cube.values).all())


def test_gaussian_structure_and_means():
    cube = simulate.gaussian(60, 3, mated_mean=3.0, seed=2)
    validate_score_cube(cube)
    assert cube.sizes == {"probe": 180, "reference": 60}
    mated = np.asarray(cube.subject.values)[:, None] == np.asarray(cube.reference_subject.values)[None, :]
    m, q = cube.values[mated], cube.values[~mated]
    assert m.size == 180 and q.size == 180 * 59
    assert m.mean() > q.mean() + 2.0
    # non-mated N(0, 1); mated about N(3, 1 + 0.7^2) (loose, but far from each other)
    assert abs(q.mean()) < 0.05 and abs(q.std() - 1) < 0.05
    assert abs(m.mean() - 3.0) < 0.5
    # probe ids never equal reference ids: no self comparisons in this design
    assert not set(cube.probe_id.values.tolist()) & set(cube.reference_id.values.tolist())


def test_gaussian_group_shift():
    cube = simulate.gaussian(200, 2, groups={"g0": 0.0, "g1": -2.0}, seed=3)
    mated = np.asarray(cube.subject.values)[:, None] == np.asarray(cube.reference_subject.values)[None, :]
    group = np.asarray(cube.group.values)
    per_probe = np.where(mated, cube.values, 0).sum(axis=1)
    shift = per_probe[group == "g1"].mean() - per_probe[group == "g0"].mean()
    assert -2.6 < shift < -1.4


def _rank1_by_collection(cube: xr.DataArray) -> np.ndarray:
    """Rank-1 successes per (subject, image, collection), read off the scores directly:
    the best score over the subject's own originals beats every other original."""
    values = cube.values  # (S, I, C, R)
    ref_subject = np.asarray(cube.reference_subject.values)
    out = np.empty(values.shape[:3], dtype=bool)
    for s, subj in enumerate(cube.subject.values.tolist()):
        own = ref_subject == subj
        out[s] = values[s][..., own].max(axis=-1) > values[s][..., ~own].max(axis=-1)
    return out


def _dispersion(success: np.ndarray):
    """Between-collection variance of the rank-1 rate over its binomial value, and the
    chi-square p-value of homogeneity (k_c ~ Binomial(n, p) for every collection)."""
    n = success.shape[0] * success.shape[1]
    k = success.sum(axis=(0, 1)).astype(float)
    p = k.sum() / (n * k.size)
    ratio = np.var(k / n, ddof=1) / (p * (1 - p) / n)
    chi2 = ((k - n * p) ** 2 / (n * p * (1 - p))).sum()
    return ratio, stats.chi2.sf(chi2, k.size - 1)


def test_rank1_outcomes_cluster_in_time():
    cube = simulate.photohead(16, 4, 96, seed=2024)
    success = _rank1_by_collection(cube)
    p = success.mean()
    assert 0.5 < p < 0.97  # neither degenerate nor saturated
    ratio, pvalue = _dispersion(success)
    # binomial sampling alone gives a ratio near 1 (less, with fixed subjects and
    # images in every collection); the simulated time effects should give well over 2
    assert ratio > 2.0, ratio
    assert pvalue < 1e-6, pvalue
    # control: shuffle each (subject, image)'s collections independently; the time
    # structure goes and the dispersion falls back to binomial
    rng = np.random.default_rng(0)
    shuffled = np.array([[rng.permutation(row) for row in per_subject] for per_subject in success])
    ratio0, pvalue0 = _dispersion(shuffled)
    assert ratio0 < 1.5, ratio0
    assert pvalue0 > 1e-3, pvalue0


def test_rank1_rate_tracks_weather():
    cube = simulate.photohead(16, 4, 96, seed=2024)
    rate = xr.DataArray(_rank1_by_collection(cube).mean(axis=(0, 1)), dims="collection", coords={"weather": cube.weather})
    by_weather = rate.groupby("weather").mean()
    effect = xr.DataArray(
        [simulate.PHOTOHEAD_WEATHER[w] for w in by_weather.weather.values.tolist()], dims="weather"
    )
    # better weather (higher effect) gives a higher rank-1 rate, on average
    assert np.corrcoef(effect.values, by_weather.values)[0, 1] > 0.5


# --------------------------------------------------------------------------
# Bad arguments
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [dict(n_subjects=1), dict(n_samples=0)],
)
def test_gaussian_bad_sizes_raise(kwargs):
    with pytest.raises(ValueError):
        simulate.gaussian(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [dict(n_subjects=1), dict(n_images=0), dict(n_collections=0)],
)
def test_photohead_bad_sizes_raise(kwargs):
    with pytest.raises(ValueError):
        simulate.photohead(**kwargs)


@pytest.mark.parametrize("seed", [None, -1, 1.5, "7", [1, 2]])
def test_bad_seeds_raise(seed):
    with pytest.raises((TypeError, ValueError)):
        simulate.gaussian(4, seed=seed)
    with pytest.raises((TypeError, ValueError)):
        simulate.photohead(**SMALL, seed=seed)


@pytest.mark.parametrize("chunks", [0, {"subject": 2}, {"collection": 0}])
def test_photohead_bad_chunks_raise(chunks):
    with pytest.raises(ValueError):
        simulate.photohead(**SMALL, seed=0, chunks=chunks)
