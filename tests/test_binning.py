"""The DET faster than sorting: the counting kernel and the curve it gives.

``bioxr._core.binning.count_between`` must equal a brute-force count (by
``np.searchsorted``) on both of its paths (NumPy and numba), and the DET /
ROC corners from :meth:`bioxr.counting.Pool.between` must equal the
sort-based curve (:meth:`Pool.full`) exactly: ties, NaN, integer and
float32 scores, distance scores, self comparisons, kept dims (thresholds
from other groups), tiny groups.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bioxr
from bioxr import counting, verification
from bioxr._core import binning
from bioxr._core.binning import count_between
from bioxr.cube import ScoreCubeError, score_cube

ENGINES = [
    "numpy",
    pytest.param("numba", marks=pytest.mark.skipif(not binning.engine_available("numba"), reason="numba not installed")),
    "sort",
]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def brute(values, edges, negate=False):
    """counts, at_edge, lowest, n_nan, n_inf by np.searchsorted and loops over intervals."""
    v = np.asarray(values).astype(np.float64).ravel()
    if negate:
        v = -v
    nan = np.isnan(v)
    v = v[~nan]
    pos = np.searchsorted(edges, v, side="right")
    counts = np.bincount(pos, minlength=edges.size + 1)
    at_edge = np.zeros(edges.size + 1, dtype=np.int64)
    lowest = np.full(edges.size + 1, np.inf)
    for i in range(edges.size + 1):
        inside = v[pos == i]
        if i:
            at_edge[i] = np.count_nonzero(inside == edges[i - 1])
            inside = inside[inside != edges[i - 1]]
        if inside.size:
            lowest[i] = inside.min()
    return counts, at_edge, lowest, int(nan.sum()), int(np.isinf(v).sum())


POOL = [-3.0, -1.5, 0.0, 0.25, 0.25 + 2**-40, 1.0, 2.0, 7.5, 1e300, -1e300]


@st.composite
def kernel_cases(draw):
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64, np.int16]))
    n = draw(st.integers(0, 300))
    pool = POOL + ([np.nan, np.inf, -np.inf] if np.issubdtype(dtype, np.floating) else [])
    floats = st.one_of(st.sampled_from(pool), st.floats(-10, 10, allow_nan=False))
    raw = np.array(draw(st.lists(floats, min_size=n, max_size=n)), dtype=np.float64)
    if np.issubdtype(dtype, np.integer):
        raw = np.clip(np.round(raw), -1000, 1000)
    with np.errstate(over="ignore"):
        values = raw.astype(dtype)
    candidates = np.asarray(values, dtype=np.float64)
    extra = draw(st.lists(st.floats(-12, 12, allow_nan=False), max_size=8))
    # edges: some of the scores themselves (ties), float32 neighbours of them, others
    chosen = draw(st.lists(st.sampled_from(candidates.tolist() or [0.0]), max_size=20)) + extra
    near = [np.nextafter(np.float32(c), np.float32(np.inf)) for c in chosen[:3] if np.isfinite(c) and abs(c) < 1e30]
    edges = np.unique(np.array(chosen + [float(x) for x in near], dtype=np.float64))
    edges = edges[np.isfinite(edges)]
    negate = draw(st.booleans())
    if negate:
        edges = np.unique(-edges)
    shape = draw(st.sampled_from(["flat", "2d", "strided"]))
    if shape == "2d" and n % 3 == 0:
        values = values.reshape(3, -1)
    elif shape == "strided":
        values = np.repeat(values, 2)[::2]  # a non-contiguous view
    return values, edges, negate


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(case=kernel_cases())
def test_kernel_equals_brute_force(engine, case):
    values, edges, negate = case
    got = count_between(values, edges, negate=negate, minima=True, engine=engine)
    counts, at_edge, lowest, n_nan, n_inf = brute(values, edges, negate)
    np.testing.assert_array_equal(got.counts, counts)
    np.testing.assert_array_equal(got.at_edge, at_edge)
    np.testing.assert_array_equal(got.lowest, lowest)
    assert (got.n_nan, got.n_inf) == (n_nan, n_inf)
    assert got.counts.sum() + got.n_nan == np.asarray(values).size
    plain = count_between(values, edges, negate=negate, engine=engine)
    np.testing.assert_array_equal(plain.counts, counts)


@pytest.mark.parametrize("engine", ENGINES)
def test_kernel_on_many_scores_with_dense_edges(engine):
    # buckets holding several edges, edges between float32 neighbours, and a clump of ties
    rng = bioxr.simulate._rng(bioxr.simulate._entropy(7), 0)
    values = np.concatenate([rng.standard_normal(200_000), np.full(1000, 0.5)]).astype(np.float32)
    edges = np.unique(np.concatenate([rng.standard_normal(3000) + 1.5, values[:50].astype(np.float64), [0.5]]))
    edges = np.unique(np.concatenate([edges, np.nextafter(edges[:20], np.inf)]))
    got = count_between(values, edges, minima=True, engine=engine)
    counts, at_edge, lowest, _, _ = brute(values, edges)
    np.testing.assert_array_equal(got.counts, counts)
    np.testing.assert_array_equal(got.at_edge, at_edge)
    np.testing.assert_array_equal(got.lowest, lowest)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_kernel_split_over_threads(engine, threads, monkeypatch):
    # the compiled pass splits the scores over threads, each with its own records: the same counts
    monkeypatch.setenv("BIOXR_THREADS", threads)
    monkeypatch.setattr(binning, "_PIECE", 1000)  # many pieces, taken by the threads in turn
    rng = bioxr.simulate._rng(bioxr.simulate._entropy(11), 0)
    scores = np.round(rng.standard_normal((301, 97)), 3)  # ties with the edges
    scores[12, 8], scores[25, 2], scores[300, 96] = np.nan, -np.inf, np.inf  # in pieces other than the first
    edges = np.unique(np.round(rng.standard_normal(500) + 1.0, 3))
    for values, negate in ((scores, False), (scores.astype(np.float32), True), (scores.T, False),
                           (scores[:, ::2], True)):
        got = count_between(values, edges, negate=negate, minima=True, engine=engine)
        counts, at_edge, lowest, n_nan, n_inf = brute(values, edges, negate)
        np.testing.assert_array_equal(got.counts, counts)
        np.testing.assert_array_equal(got.at_edge, at_edge)
        np.testing.assert_array_equal(got.lowest, lowest)
        assert (got.n_nan, got.n_inf) == (n_nan, n_inf) == (1, 2)


def test_counting_replaces_the_sort_only_with_the_compiled_kernel(monkeypatch):
    # in memory, Pool.between counts when numba runs or an engine is asked for; NumPy's sort beats the NumPy path
    monkeypatch.delenv("BIOXR_KERNEL", raising=False)
    monkeypatch.setattr(counting, "MIN_BETWEEN_CELLS", 0)
    values, index = bioxr._core.Grouped(bioxr.simulate.gaussian(n_subjects=30, seed=2), None).block(0)
    kind = lambda **kw: type(counting.Pool.between(values, index, False, **kw)).__name__  # noqa: E731
    assert binning.beats_sort() == binning.engine_available("numba")
    assert kind() == ("_Counted" if binning.engine_available("numba") else "Pool")
    assert kind(engine="numpy") == "_Counted"
    monkeypatch.setattr(binning, "engine_available", lambda engine: engine == "numpy")
    assert not binning.beats_sort() and kind() == "Pool"
    monkeypatch.setenv("BIOXR_KERNEL", "numpy")
    assert binning.beats_sort() and kind() == "_Counted"


@pytest.mark.parametrize("engine", ENGINES)
def test_kernel_at_the_ends_of_the_edges(engine):
    # scores below, at and above the first and last edges, infinities, -0.0, a single edge, no edge
    up, down = np.nextafter(1.0, np.inf), np.nextafter(1.0, -np.inf)
    values = np.array([-np.inf, -1e308, -1.0, -0.0, 0.0, 1e-300, 0.5, down, 1.0, 1.0, up, 2.0, 1e308, np.inf, np.nan])
    for edges in ([0.0, 1.0], [1.0], [-0.0], [down, 1.0, up], [], [-1e308, 1e308], [0.0, 1.0, 1e308]):
        edges = np.array(edges, dtype=np.float64)
        for negate in (False, True):
            e = np.unique(-edges) if negate else edges
            for dtype in (np.float64, np.float32):
                with np.errstate(over="ignore"):
                    v = values.astype(dtype)
                got = count_between(v, e, negate=negate, minima=True, engine=engine)
                counts, at_edge, lowest, n_nan, n_inf = brute(v, e, negate)
                np.testing.assert_array_equal(got.counts, counts)
                np.testing.assert_array_equal(got.at_edge, at_edge)
                np.testing.assert_array_equal(got.lowest, lowest)
                assert (got.n_nan, got.n_inf) == (n_nan, n_inf)


def test_engine_choice_and_bad_input(monkeypatch):
    monkeypatch.setenv("BIOXR_KERNEL", "numpy")
    assert binning._choose(None) == "numpy"
    monkeypatch.delenv("BIOXR_KERNEL")
    assert binning._choose(None) == ("numba" if binning.engine_available("numba") else "numpy")
    with pytest.raises(ValueError, match="engine="):
        count_between([1.0], [0.0], engine="cuda")
    with pytest.raises(ValueError, match="sorted and distinct"):
        count_between([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        count_between([1.0], [0.0, np.inf])
    monkeypatch.setenv("BIOXR_THREADS", "two")
    with pytest.raises(ValueError, match="BIOXR_THREADS"):
        binning._threads(10)


# --------------------------------------------------------------------------
# the DET from counts equals the DET from one sort
# --------------------------------------------------------------------------

SCORES = [0.0, 1.0, 1.0, 2.0, 2.5, 3.0, -1.0, np.nan]


@st.composite
def cubes(draw):
    P = draw(st.integers(2, 6))
    C = draw(st.integers(1, 3))
    R = draw(st.integers(2, 5))
    subject = draw(st.lists(st.sampled_from("abcz"), min_size=P, max_size=P))
    reference_subject = draw(st.lists(st.sampled_from("abc"), min_size=R, max_size=R))
    floats = st.one_of(st.sampled_from(SCORES), st.floats(-5, 5, allow_nan=False, width=32))
    scores = np.array(draw(st.lists(floats, min_size=P * C * R, max_size=P * C * R))).reshape(P, C, R)
    dtype = draw(st.sampled_from(["float64", "float32", "int"]))
    if dtype == "int":
        scores = np.where(np.isnan(scores), 0, np.round(scores * 2)).astype(np.int64)
    else:
        scores = scores.astype(dtype)
    ids = None
    if draw(st.booleans()):  # self comparisons: same probe_id and reference_id
        pool = [f"i{k}" for k in range(P + R)]
        ids = (draw(st.permutations(pool))[:P], draw(st.permutations(pool))[:R])
    kind = draw(st.sampled_from(["similarity", "distance"]))
    keep = draw(st.sampled_from([(), ("collection",), ("probe",)]))
    try:
        cube = score_cube(
            scores, subject=subject, reference_subject=reference_subject, dims=("probe", "collection", "reference"),
            probe_id=None if ids is None else ids[0], reference_id=None if ids is None else ids[1], score_kind=kind,
        )
    except ScoreCubeError:
        cube = None
    return cube, tuple(d for d in ("probe", "collection") if d not in keep)


def _curve(cube, dim, between: bool, monkeypatch, curve=verification.det_curve):
    monkeypatch.setattr(counting, "MIN_BETWEEN_CELLS", 0 if between else 1 << 62)
    try:
        return curve(cube, dim=dim), None
    except (ValueError, ScoreCubeError) as error:  # no mated or non-mated comparisons in a group
        return None, (type(error), str(error))


def assert_same(a: xr.Dataset, b: xr.Dataset):
    xr.testing.assert_identical(a, b)
    for name in [*a.data_vars, "threshold"]:
        assert a[name].dtype == b[name].dtype, name
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cubes())
def test_det_from_counts_equals_det_from_sort(engine, case, monkeypatch):
    cube, dim = case
    if cube is None:
        return
    monkeypatch.setenv("BIOXR_KERNEL", engine)
    with np.errstate(all="ignore"):
        slow, slow_error = _curve(cube, dim, False, monkeypatch)
        fast, fast_error = _curve(cube, dim, True, monkeypatch)
    assert slow_error == fast_error
    if slow is not None:
        assert_same(slow, fast)


@pytest.mark.parametrize("engine", ENGINES)
def test_larger_groups_and_roc(engine, monkeypatch):
    # one group of 320,000 cells (800 x 400): many scores per bucket, several buckets per edge
    monkeypatch.setenv("BIOXR_KERNEL", engine)
    cube = bioxr.simulate.gaussian(n_subjects=400, seed=2)
    cube = cube.where(cube.probe % 7 != 0)  # some NaN
    for kind in ("similarity", "distance"):
        c = cube.round(2) if kind == "similarity" else (-cube.round(2)).assign_attrs(score_kind="distance")
        c.attrs.update({k: v for k, v in cube.attrs.items() if k != "score_kind"})
        for curve in (verification.det_curve, verification.roc_curve):
            slow, _ = _curve(c, None, False, monkeypatch, curve)
            fast, _ = _curve(c, None, True, monkeypatch, curve)
            assert_same(slow, fast)
    monkeypatch.setattr(counting, "MIN_BETWEEN_CELLS", 1 << 18)
    groups = bioxr._core.Grouped(cube, None)
    values, index = groups.block(0)
    assert type(counting.Pool.between(values, index, False)).__name__ == "_Counted"
    small = bioxr._core.Grouped(bioxr.simulate.gaussian(n_subjects=30, seed=2), None)
    assert type(counting.Pool.between(*small.block(0), False)).__name__ == "Pool"  # small: sorted


def test_points_all_and_infinite_scores_keep_their_sort(monkeypatch):
    monkeypatch.setattr(counting, "MIN_BETWEEN_CELLS", 0)
    cube = bioxr.simulate.gaussian(n_subjects=20, seed=1).round(1)
    every = verification.det_curve(cube, points="all")
    monkeypatch.setattr(counting, "MIN_BETWEEN_CELLS", 1 << 62)
    assert_same(every, verification.det_curve(cube, points="all"))
    # an infinite non-mated score is refused as the sort refuses it
    groups = bioxr._core.Grouped(cube, None)
    values, index = groups.block(0)
    values = values.copy()
    free = np.setdiff1d(np.arange(values.size), np.concatenate([index.mated, index.excluded]))[0]
    values.reshape(-1)[free] = np.inf
    monkeypatch.setattr(counting, "MIN_BETWEEN_CELLS", 0)
    for make in (counting.Pool.full, counting.Pool.between):
        with pytest.raises(ScoreCubeError, match="infinite"):
            make(values, index, False)
    pool = counting.Pool.between(values[:0], index.__class__(np.zeros(0, int), np.zeros(0, int)), False)
    assert pool.n_mated == 0  # no edges: the sort handles it


def test_dense_edges_take_the_sort_unless_an_engine_is_asked_for(monkeypatch):
    """engine=None sorts from DENSE edges per score; an engine passed or BIOXR_KERNEL keeps its own path."""
    seen = []
    real = binning._by_sort
    monkeypatch.setattr(binning, "_by_sort", lambda *a: seen.append(1) or real(*a))
    monkeypatch.delenv("BIOXR_KERNEL", raising=False)
    values = np.random.default_rng(0).normal(size=3200)
    dense = np.sort(np.random.default_rng(1).normal(size=100))  # 1/32 edges per score
    sparse = dense[:99]
    want = count_between(values, dense, minima=True, engine="numpy")
    got = count_between(values, dense, minima=True)
    assert len(seen) == 1 and all(np.array_equal(a, b) for a, b in zip(got, want))
    count_between(values, sparse, minima=True)
    count_between(values, dense, minima=True, engine="numpy")
    monkeypatch.setenv("BIOXR_KERNEL", "numpy")
    count_between(values, dense, minima=True)
    assert len(seen) == 1



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("distance", [False, True])
def test_many_edges_of_the_window_pass_are_counted_exactly(dtype, distance, monkeypatch):
    """The window pass (counting._scan) counts the scores at or beyond many edges in one count_between pass:
    the same counts as comparing each score with each edge in float64, with ties, NaN, repeated edges and edges
    a float32 score cannot equal; and the same as the pass that compares them one by one."""
    rng = np.random.default_rng(11)
    flat = np.round(rng.normal(size=5000), 2).astype(dtype)
    flat[rng.random(flat.size) < 0.03] = np.nan
    limits = np.concatenate([rng.choice(flat[~np.isnan(flat)], 6).astype(np.float64), rng.normal(size=6),
                             [0.1, 0.1, 1 / 3]])  # ties with scores, in between, repeated, not a float32
    wide = flat.astype(np.float64)
    brute = np.array([np.count_nonzero(wide <= e) if distance else np.count_nonzero(wide >= e) for e in limits])
    np.testing.assert_array_equal(counting._at_or_beyond(flat, limits, distance), brute)
    many = counting._scan(flat, -np.inf, np.inf, False, list(limits), distance)[3]
    monkeypatch.setattr(counting, "EDGES_COMPARED", 10**6)  # one comparison per edge
    one_by_one = counting._scan(flat, -np.inf, np.inf, False, list(limits), distance)[3]
    np.testing.assert_array_equal(many, brute)
    np.testing.assert_array_equal(one_by_one, brute)
