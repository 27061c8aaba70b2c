"""float32 scores against float64 thresholds: every decision is the float64 one.

A threshold given as a Python float may fall between two adjacent float32
values. Casting it down to float32 rounds it onto one of them and can flip
the decision ``s >= t`` for a score equal to that value; so can building a
threshold (a midpoint, the next value above a score) in float32. Each test
here places thresholds at exact float32 values and strictly between
adjacent ones (``np.nextafter`` in float64), on cubes and on comparison
lists (:func:`bioxr.comparisons.to_comparisons`), and compares bioxr's
counts with a brute-force NumPy count in float64; and checks that a float32
cube gives exactly the result of the same values in float64.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from bioxr import counting, identification, verification
from bioxr._core import flat_comparisons
from bioxr.comparisons import to_comparisons
from bioxr.correlation import attempt_counts
from bioxr.cube import score_cube


# --------------------------------------------------------------------------- data and brute force
def float32_cube(n_subjects=30, *, kind="similarity", grid=None, sessions=1, extra_probes=0, seed=0):
    """A float32 cube: 2 probes a subject (times ``sessions``), one reference each, 4 references unmated.

    ``grid``: scores rounded to multiples of 1/grid (heavy ties). ``extra_probes``: probes of subjects
    that are not enrolled (impostor searches for open-set rates).
    """
    rng = np.random.default_rng(seed)
    n_ref = n_subjects + 4
    subject = np.concatenate([np.repeat(np.arange(n_subjects), 2), 1000 + np.arange(extra_probes)])
    p = subject.size
    s = rng.normal(size=(p, sessions, n_ref))
    enrolled = subject < n_subjects
    s[np.flatnonzero(enrolled), :, subject[enrolled]] += 2.5
    if grid:
        s = np.round(s * grid) / grid
    s = s.astype(np.float32)
    if kind == "distance":
        s = -s
    if sessions == 1:
        return score_cube(s[:, 0], subject=subject, reference_subject=np.arange(n_ref), score_kind=kind)
    return score_cube(s, subject=subject, reference_subject=np.arange(n_ref), dims=("probe", "session", "reference"),
                      coords={"session": np.arange(sessions)}, score_kind=kind)


def split64(cube):
    """Mated and non-mated scores of a 2-D cube, in float64, by the labels (no bioxr counting)."""
    v = np.asarray(cube.transpose("probe", "reference").values, dtype=np.float64)
    mated = np.asarray(cube["subject"].values)[:, None] == np.asarray(cube["reference_subject"].values)[None, :]
    return v[mated], v[~mated]


def brute_counts(cube, thresholds):
    """False matches and false non-matches at each threshold, decided in float64 one score at a time."""
    m, n = split64(cube)
    t = np.asarray(thresholds, dtype=np.float64)
    if cube.attrs.get("score_kind") == "distance":
        return (n[None, :] <= t[:, None]).sum(axis=1), (m[None, :] > t[:, None]).sum(axis=1)
    return (n[None, :] >= t[:, None]).sum(axis=1), (m[None, :] < t[:, None]).sum(axis=1)


def sorted_counts(cube, thresholds):
    """The same counts for many thresholds, by binary search on float64 copies."""
    m, n = (np.sort(a) for a in split64(cube))
    t = np.asarray(thresholds, dtype=np.float64)
    if cube.attrs.get("score_kind") == "distance":
        return np.searchsorted(n, t, side="right"), m.size - np.searchsorted(m, t, side="right")
    return n.size - np.searchsorted(n, t, side="left"), np.searchsorted(m, t, side="left")


def tricky_thresholds(cube, k=6, seed=1):
    """Thresholds at k scores, one float64 ulp either side, and a quarter of the way to the next float32s."""
    v = np.asarray(cube.values).ravel()
    s = v[np.random.default_rng(seed).choice(v.size, k, replace=False)]
    s64 = s.astype(np.float64)
    up32 = np.nextafter(s, np.float32(np.inf)).astype(np.float64)
    down32 = np.nextafter(s, np.float32(-np.inf)).astype(np.float64)
    t = np.concatenate([s64, np.nextafter(s64, np.inf), np.nextafter(s64, -np.inf), s64 + (up32 - s64) / 4,
                        s64 + (down32 - s64) / 4])
    # each in-between threshold rounds to a score in float32: the cast would flip its decision
    between = t[k:]
    assert np.isin(between.astype(np.float32), s).all() and not np.isin(between, s64).any()
    return t


def forms(cube):
    return [("cube", cube), ("list", to_comparisons(cube))]


KINDS = ["similarity", "distance"]


@pytest.fixture
def windows_everywhere(monkeypatch):
    """Small cubes take the one-pass window paths (normally from 2**18 cells) as well as the sorted ones."""
    monkeypatch.setattr(counting, "MIN_WINDOW_CELLS", 0)


# --------------------------------------------------------------------------- the primitive
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_dtype_bound_gives_the_float64_decision(dtype):
    rng = np.random.default_rng(0)
    scores = rng.normal(scale=100, size=2000).astype(dtype)
    s64 = np.unique(scores.astype(np.float64))
    t = np.concatenate([s64, np.nextafter(s64, np.inf), np.nextafter(s64, -np.inf), [1e39, -1e39, 7e4, -7e4]])
    for v in t:
        up = counting._dtype_bound(v, dtype, up=True)
        down = counting._dtype_bound(v, dtype, up=False)
        assert up.dtype == dtype and down.dtype == dtype
        assert float(down) <= v <= float(up)
        x = scores.astype(np.float64)
        assert np.array_equal(scores >= up, x >= v) and np.array_equal(scores < up, x < v)
        assert np.array_equal(scores <= down, x <= v) and np.array_equal(scores > down, x > v)
    assert counting._dtype_bound(0.1, np.float64, up=True) == 0.1


@pytest.mark.parametrize("kind", KINDS)
def test_window_pass_counts_edges_and_bounds_in_float64(kind, windows_everywhere):
    # the blocked pass over raw float32 scores: a window [lo, hi] and edge counts at thresholds just beside
    # scores (cast to the nearest float32 they would land on the score and count it on the wrong side)
    cube = float32_cube(40, kind=kind, seed=3)
    values, index = cube.values, counting.CellIndex(*_codes(cube))
    sign = -1.0 if kind == "distance" else 1.0
    o = sign * np.asarray(values, dtype=np.float64)  # similarity orientation, float64
    u = np.unique(o)
    quarter_up = u + (np.nextafter(u.astype(np.float32), np.float32(np.inf)).astype(np.float64) - u) / 4
    lo = float(np.nextafter(u[u.size // 2], np.inf))  # just above a score: that score is outside
    hi = float(np.nextafter(u[-u.size // 5], -np.inf))  # just below a score: that score is above the window
    edges = np.array([np.nextafter(u[u.size // 4], np.inf), quarter_up[u.size // 3], u[u.size // 5]])
    pool = counting.Pool.window(values, index, kind == "distance", lo, hi, edges=edges)
    assert pool.pool.dtype == np.float64 and pool.mated.dtype == np.float64
    assert pool.n_above == int(np.count_nonzero(o > hi))
    assert pool.pool.size == int(np.count_nonzero((o >= lo) & (o <= hi)))
    fm, _ = brute_counts(cube, sign * edges)
    np.testing.assert_array_equal(pool.edge_false_matches(), fm)
    inside = np.array([lo, np.nextafter(u[u.size // 2 + 3], -np.inf), quarter_up[u.size // 2 + 5], hi])
    fm, fnm = brute_counts(cube, sign * inside)
    np.testing.assert_array_equal(pool.false_matches(inside), fm)
    np.testing.assert_array_equal(pool.false_nonmatches(inside), fnm)


def _codes(cube):
    subject = np.asarray(cube["subject"].values)
    ref = np.asarray(cube["reference_subject"].values)
    codes = {s: i for i, s in enumerate(np.unique(ref))}
    return np.array([codes.get(s, -1) for s in subject]), np.array([codes[s] for s in ref])


# --------------------------------------------------------------------------- error rates
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("window", [False, True])
def test_error_rates_at_thresholds_between_float32_values(kind, window, monkeypatch):
    if window:
        monkeypatch.setattr(counting, "MIN_WINDOW_CELLS", 0)
    cube = float32_cube(kind=kind)
    t = tricky_thresholds(cube)
    fm, fnm = brute_counts(cube, t)
    for form, obj in forms(cube):
        for chunk in (t[:16], t):  # up to 16 thresholds: one window pass; more: one sort
            r = verification.error_rates(obj, chunk)
            np.testing.assert_array_equal(r.false_matches, fm[: chunk.size], err_msg=form)
            np.testing.assert_array_equal(r.false_nonmatches, fnm[: chunk.size], err_msg=form)
            assert r.threshold.dtype == np.float64
            np.testing.assert_array_equal(r.threshold, chunk)  # the threshold itself is not rounded
        one = float(t[7])  # a Python float between two float32 values
        assert int(verification.fmr(obj, one).false_matches) == fm[7]
        assert int(verification.fnmr(obj, one).false_nonmatches) == fnm[7]


def test_error_rates_on_a_lazy_float32_cube():
    pytest.importorskip("dask")
    cube = float32_cube(kind="similarity", seed=5)
    t = tricky_thresholds(cube, seed=6)
    fm, fnm = brute_counts(cube, t)
    lazy = cube.chunk({"probe": 7})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(counting, "MIN_WINDOW_CELLS", 0)
        for chunk in (t[:16], t):
            r = verification.error_rates(lazy, chunk)
            np.testing.assert_array_equal(r.false_matches, fm[: chunk.size])
            np.testing.assert_array_equal(r.false_nonmatches, fnm[: chunk.size])
        values, index = lazy.data, counting.CellIndex(*_codes(cube))
        assert counting.Pool.window(values, index, False, float(t.min())).mated.dtype == np.float64


def test_error_rates_with_kept_dims():
    cube = float32_cube(20, sessions=3, seed=7)
    t = tricky_thresholds(cube.isel(session=0), seed=8)
    for form, obj in forms(cube):
        r = verification.error_rates(obj, t, dim="probe")
        for k in range(3):
            fm, fnm = brute_counts(cube.isel(session=k), t)
            np.testing.assert_array_equal(r.false_matches.isel(session=k), fm, err_msg=form)
            np.testing.assert_array_equal(r.false_nonmatches.isel(session=k), fnm, err_msg=form)


# --------------------------------------------------------------------------- curves and operating points
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("grid", [None, 16])
def test_det_curve_counts_at_its_own_thresholds(kind, grid):
    cube = float32_cube(kind=kind, grid=grid)
    for form, obj in forms(cube):
        for points in ("all", "corners"):
            det = verification.det_curve(obj, points=points)
            assert det.threshold.dtype == np.float64
            fm, fnm = sorted_counts(cube, det.threshold.values)
            np.testing.assert_array_equal(det.false_matches, fm, err_msg=f"{form} {points}")
            np.testing.assert_array_equal(det.false_nonmatches, fnm, err_msg=f"{form} {points}")


OPERATING_POINTS = {
    "eer rocch": lambda o: verification.eer(o, method="rocch"),
    "eer interpolated": lambda o: verification.eer(o, method="interpolated"),
    "eer nearest": lambda o: verification.eer(o, method="nearest"),
    "eer fvc2000": lambda o: verification.eer(o, method="fvc2000"),
    "eer bob": lambda o: verification.eer(o, convention="bob"),
    "fnmr_at_fmr bioxr": lambda o: verification.fnmr_at_fmr(o, [0.0, 1e-3, 0.01, 0.2, 1.0]),
    "fnmr_at_fmr bob": lambda o: verification.fnmr_at_fmr(o, [0.0, 1e-3, 0.01, 0.2, 1.0], convention="bob"),
    "fnmr_at_fmr pyeer": lambda o: verification.fnmr_at_fmr(o, [0.0, 1e-3, 0.01, 0.2], convention="pyeer"),
    "fmr_at_fnmr": lambda o: verification.fmr_at_fnmr(o, [0.0, 0.05, 0.5]),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("grid", [None, 16])
@pytest.mark.parametrize("window", [False, True])
def test_operating_points_of_float32_equal_those_of_float64(kind, grid, window, monkeypatch):
    # the same values in float64 give the identical result: thresholds (midpoints, the next value above
    # a score) are made in float64, and the counts at each reported threshold are the float64 counts
    if window:
        monkeypatch.setattr(counting, "MIN_WINDOW_CELLS", 0)
    cube = float32_cube(kind=kind, grid=grid, seed=11)
    wide = cube.astype(np.float64)
    for (form, obj), (_, obj64) in zip(forms(cube), forms(wide)):
        for name, f in OPERATING_POINTS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got, expected = f(obj), f(obj64)
            xr.testing.assert_identical(got, expected)
            fm, fnm = brute_counts(cube, np.atleast_1d(got.threshold.values))
            np.testing.assert_array_equal(np.atleast_1d(got.false_matches.values), fm, err_msg=f"{form} {name}")
            np.testing.assert_array_equal(np.atleast_1d(got.false_nonmatches.values), fnm, err_msg=f"{form} {name}")


# --------------------------------------------------------------------------- per-individual counts
@pytest.mark.parametrize("kind", KINDS)
def test_attempt_counts_at_thresholds_between_float32_values(kind):
    cube = float32_cube(kind=kind, seed=13)
    t = tricky_thresholds(cube, seed=14)
    subject = np.asarray(cube["subject"].values)
    v = np.asarray(cube.values, dtype=np.float64)
    mated = subject[:, None] == np.asarray(cube["reference_subject"].values)[None, :]
    for form, obj in forms(cube):
        r = attempt_counts(obj, t)
        for i, who in enumerate(r.individual.values):
            scores = v[(subject == who)[:, None] & mated]
            wrong = scores[None, :] > t[:, None] if kind == "distance" else scores[None, :] < t[:, None]
            np.testing.assert_array_equal(r.errors.isel(individual=i), wrong.sum(axis=1), err_msg=form)


# --------------------------------------------------------------------------- identification
@pytest.mark.parametrize("kind", KINDS)
def test_open_set_rates_at_thresholds_between_float32_values(kind):
    cube = float32_cube(25, kind=kind, extra_probes=12, seed=15)
    sign = -1.0 if kind == "distance" else 1.0
    v = sign * np.asarray(cube.values, dtype=np.float64)  # similarity orientation
    subject = np.asarray(cube["subject"].values)
    ref = np.asarray(cube["reference_subject"].values)
    mated = subject[:, None] == ref[None, :]
    enrolled = mated.any(axis=1)
    mate = np.where(mated, v, -np.inf).max(axis=1)
    best_other = np.where(mated, -np.inf, v).max(axis=1)
    # thresholds at, and between float32 values next to, the mated and top impostor scores
    s = np.concatenate([mate[enrolled][:5], best_other[~enrolled][:5]]).astype(np.float32)
    s64 = s.astype(np.float64)
    t_sim = np.concatenate([s64, np.nextafter(s64, np.inf), np.nextafter(s64, -np.inf)])
    detected = ((mate[enrolled][None, :] >= t_sim[:, None]) & (mate[enrolled] > best_other[enrolled])[None, :]).sum(1)
    false_pos = (best_other[~enrolled][None, :] >= t_sim[:, None]).sum(axis=1)
    for form, obj in forms(cube):
        r = identification.open_set_rates(obj, sign * t_sim, rank=1)
        np.testing.assert_array_equal(r.detected, detected, err_msg=form)
        np.testing.assert_array_equal(r.false_positives, false_pos, err_msg=form)


def test_open_set_curve_of_float32_equals_float64():
    cube = float32_cube(25, grid=16, extra_probes=12, seed=17)
    for (form, obj), (_, obj64) in zip(forms(cube), forms(cube.astype(np.float64))):
        for impostors in ("non-enrolled", "all"):
            xr.testing.assert_identical(identification.open_set_curve(obj, impostors=impostors),
                                        identification.open_set_curve(obj64, impostors=impostors))


# --------------------------------------------------------------------------- flat comparisons (bootstrap input)
@pytest.mark.parametrize("kind", KINDS)
def test_flat_comparisons_are_float64_for_cubes_and_lists(kind):
    # the subject bootstrap builds its default thresholds (quantiles) from these scores: in float32 they
    # would differ from those of the same values in float64
    cube = float32_cube(kind=kind, seed=19)
    for form, obj in forms(cube):
        scores = flat_comparisons(obj)[0]
        assert scores.dtype == np.float64, form
        wide = cube.astype(np.float64)
        expected = flat_comparisons(to_comparisons(wide) if form == "list" else wide)
        np.testing.assert_array_equal(scores, expected[0])
