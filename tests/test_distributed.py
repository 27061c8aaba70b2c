"""Lazy cubes are reduced where their blocks live: same results as in memory, small results to the client.

Every pass of :mod:`bioxr.counting` over a dask-backed group runs blockwise
(:mod:`bioxr._core.blockwise`); here the EER, FNMR at FMR, FMR at FNMR and
error rates at a few thresholds on cubes with odd, single and irregular
chunks and chunks along ``reference`` equal the in-memory results exactly,
under dask's threaded scheduler and on a ``dask.distributed`` LocalCluster
of two worker processes; and the bytes that reach the client for an EER
stay within a small bound.

``counting.MIN_WINDOW_CELLS`` is lowered so that these small cubes take the
window paths (a window of scores, counts at thresholds) rather than a sort.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")


import bioxr  # noqa: E402
from bioxr import counting, verification  # noqa: E402
from bioxr._core import blockwise  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(scope="module")
def client():
    # worker processes (not threads): the block functions, their results and errors really cross a process boundary
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = distributed.Client(cluster, set_as_default=False)
    client.run(lambda: __import__("bioxr"))  # warm the workers up
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def scheduler(request, name, chunking):
    if request.param == "threads":
        with dask.config.set(scheduler="threads"):
            yield "threads"
    else:
        with dask.config.set(scheduler=request.getfixturevalue("client")):
            yield "distributed"


@pytest.fixture(autouse=True)
def small_windows(monkeypatch):
    monkeypatch.setattr(counting, "MIN_WINDOW_CELLS", 1 << 12)


def _photohead():
    return bioxr.simulate.photohead(n_subjects=40, n_images=3, n_collections=5, seed=5)  # float32, similarity


def _distance():
    """Distance scores with ties, NaN and self comparisons (excluded cells)."""
    cube = bioxr.simulate.all_against_all(60, 4, seed=2)
    values = -np.round(cube.values, 1)
    values[np.random.default_rng(0).random(values.shape) < 0.03] = np.nan
    return cube.copy(data=values).assign_attrs(score_kind="distance")


CUBES = {"photohead": _photohead, "distance": _distance}
CHUNKS = {
    "photohead": {
        "odd": {"collection": 2, "subject": 13},
        "single": {},
        "irregular+reference": {"collection": (1, 3, 1), "reference": (7, 50, 63)},
    },
    "distance": {
        "odd": {"probe": 97, "reference": 131},
        "single": {},
        "irregular+reference": {"probe": (1, 120, 119), "reference": (239, 1)},
        "reference only": {"reference": 31},
    },
}
CASES = [(c, k) for c in CHUNKS for k in CHUNKS[c]]
#: On the cluster (about 0.1 s a pass): the two cases with every kind of chunk at once.
CLUSTER_CASES = [("photohead", "irregular+reference"), ("distance", "odd")]


def _calls(cube):
    t = np.quantile(cube.values[~np.isnan(cube.values)], [0.5, 0.9, 0.99])
    return {
        "eer": lambda c: verification.eer(c),
        "eer interpolated": lambda c: verification.eer(c, method="interpolated"),
        "eer pyeer": lambda c: verification.eer(c, convention="pyeer"),  # fvc2000: a window on a lazy cube
        "eer bob": lambda c: verification.eer(c, convention="bob"),
        "fnmr_at_fmr": lambda c: verification.fnmr_at_fmr(c, [0.02, 0.005]),
        "fnmr_at_fmr bob": lambda c: verification.fnmr_at_fmr(c, [0.02, 0.005, 1e-9], convention="bob"),
        "fmr_at_fnmr": lambda c: verification.fmr_at_fnmr(c, [0.05, 0.2]),
        "error_rates": lambda c: verification.error_rates(c, t),
        "det_curve": lambda c: verification.det_curve(c),  # corners counted between mated scores, blockwise
        "roc_curve": lambda c: verification.roc_curve(c),
    }


_EXPECTED = {}


def _expected(name):
    if name not in _EXPECTED:
        cube = CUBES[name]()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(counting, "MIN_WINDOW_CELLS", 1 << 12)
            _EXPECTED[name] = (cube, {k: f(cube) for k, f in _calls(cube).items()})
    return _EXPECTED[name]


@pytest.mark.parametrize(
    "name,chunking,scheduler",
    [(*case, "threads") for case in CASES] + [(*case, "distributed") for case in CLUSTER_CASES],
    indirect=["scheduler"],
)
def test_lazy_equals_in_memory(name, chunking, scheduler):
    cube, expected = _expected(name)
    lazy = cube.chunk(CHUNKS[name][chunking] or -1)
    assert lazy.chunks is not None
    if scheduler == "distributed":
        lazy = lazy.persist()  # the blocks live on the workers, as a cube read there would
    for what, f in _calls(cube).items():
        got = f(lazy)
        try:
            xr.testing.assert_identical(got, expected[what])
        except AssertionError as err:
            raise AssertionError(f"{what} under {scheduler} with {chunking} chunks: {err}") from None


@pytest.mark.parametrize("name,chunking", CASES)
def test_passes_equal_in_memory(name, chunking):
    """The sample, the mated and excluded cells and the window pass, block by block, as on the whole array."""
    cube, _ = _expected(name)
    groups = bioxr._core.Grouped(cube.chunk(CHUNKS[name][chunking] or -1), None)
    lazy, index = groups.block(0)
    values = lazy.compute()  # the same group (a lazy cube may order its probe dims differently), in memory
    assert blockwise.is_chunked(lazy) and not blockwise.is_chunked(values)
    d = groups.distance
    with dask.config.set(scheduler="threads"):
        for skip in (None, counting._skip(index)):
            for size in (1000, 10**6):
                want = counting.strided_sample(values, d, size=size, skip=skip)
                got = counting.strided_sample(lazy, d, size=size, skip=skip)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
        for got, want in zip(counting.mated_cells(lazy, index, d), counting.mated_cells(values, index, d)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        (m_got, x_got), s_got = counting.cells_and_sample(lazy, index, d, size=1000)  # one pass for both
        (m_want, x_want), s_want = counting.cells_and_sample(values, index, d, size=1000)
        for got, want in ((m_got, m_want), (x_got, x_want), (s_got, s_want)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        m, _ = counting.mated_cells(values, index, d)
        lo, hi = float(np.quantile(m, 0.3)), float(np.quantile(m, 0.9))
        for bounds in ((lo, hi), (lo, np.inf)):
            want = counting._extract(values, *bounds, d, edges=(lo - 1, lo - 2))
            got = counting._extract(lazy, *bounds, d, edges=(lo - 1, lo - 2))
            np.testing.assert_array_equal(np.sort(got[0]), np.sort(want[0]))
            assert got[0].dtype == want[0].dtype
            assert got[1:3] == want[1:3]
            np.testing.assert_array_equal(got[3], want[3])


@pytest.mark.parametrize("name,chunking", CASES)
def test_count_between_equals_in_memory(name, chunking, request):
    """Counts between the mated scores (the exact DET's corners), blockwise: the in-memory Binned exactly."""
    from bioxr._core.binning import count_between

    cube, _ = _expected(name)
    groups = bioxr._core.Grouped(cube.chunk(CHUNKS[name][chunking] or -1), None)
    lazy, index = groups.block(0)
    values = lazy.compute()
    m, x = counting.mated_cells(values, index, groups.distance)
    edges = np.unique(np.concatenate([m, x]))
    want = count_between(values, edges, negate=groups.distance, minima=True, engine="numpy")
    engines = ["threads"] + ([request.getfixturevalue("client")] if (name, chunking) in CLUSTER_CASES else [])
    for engine in engines:
        with dask.config.set(scheduler=engine):
            got = blockwise.count_between(lazy, edges, negate=groups.distance, minima=True, engine="numpy")
        for field in want._fields:
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)


def test_counts_and_scores_give_the_same_pool(monkeypatch):
    """Blocks that send counts at the thresholds, blocks that send scores, and a mix: one answer."""
    cube, expected = _expected("distance")
    lazy = cube.chunk({"probe": 37, "reference": 53})
    missing = []
    window = blockwise.window

    def spy(*args, **kwargs):
        out = window(*args, **kwargs)
        missing.append(len(out["missing"]))
        return out

    monkeypatch.setattr(blockwise, "window", spy)
    with dask.config.set(scheduler="threads"):
        for share in (blockwise.CONTENTS_SHARE, 0.0, 1.0):
            monkeypatch.setattr(blockwise, "CONTENTS_SHARE", share)
            missing.clear()
            for what in ("eer", "fmr_at_fnmr", "error_rates", "fnmr_at_fmr"):
                xr.testing.assert_identical(_calls(cube)[what](lazy), expected[what])
            if share == 1.0:
                assert sum(missing) == 0  # every block sent its scores
            else:
                assert sum(missing) > 0  # some blocks sent counts only


def test_counts_at_asked_thresholds_need_no_scores():
    """``Pool.window(..., at=t)``: false matches at ``t`` come from the counts, no block sends its scores."""
    cube, _ = _expected("distance")
    groups = bioxr._core.Grouped(cube.chunk({"probe": 97, "reference": 131}), None)
    lazy, index = groups.block(0)
    values, d = lazy.compute(), groups.distance
    m, _ = counting.mated_cells(values, index, d)
    t = np.concatenate([np.quantile(m, [0.2, 0.5]), [np.inf]])
    lo = float(t.min())
    want = counting.Pool.window(values, index, d, lo).false_matches(t)
    with dask.config.set(scheduler="threads"):
        pool = counting.Pool.window(lazy, index, d, lo, at=t)
        assert isinstance(pool, blockwise.CountedPool)
        np.testing.assert_array_equal(pool.false_matches(t), want)
        assert pool._fetch is not None  # answered from the counts
        other = t + 0.05  # inside the window, not among the counted thresholds
        np.testing.assert_array_equal(pool.false_matches(other), counting.Pool.window(values, index, d, lo).false_matches(other))
        assert pool._fetch is None  # another threshold: the scores were fetched


def test_other_engines_path(monkeypatch):
    """An engine without dask's graph is read band by band through its xarray chunk manager: same results."""
    cube, expected = _expected("distance")
    lazy = cube.chunk({"probe": 97, "reference": 131})
    bands = []

    def by_bands(values, chunk, combine, args, todo):
        bands.append(values)
        return blockwise._run_bands(values, blockwise.Layout(values.chunks), chunk, combine, args, todo)

    monkeypatch.setattr(blockwise, "_run_dask", by_bands)
    with dask.config.set(scheduler="threads"):
        for what in ("eer", "fnmr_at_fmr", "error_rates"):
            xr.testing.assert_identical(_calls(cube)[what](lazy), expected[what])
    assert bands and type(blockwise._manager(bands[0])).__name__ == "DaskManager"


def test_infinite_score_raises_on_a_worker(client):
    cube = _photohead()
    values = cube.values.copy()
    values[3, 1, 2, 7] = np.inf
    lazy = cube.copy(data=values).chunk({"collection": 2})
    with dask.config.set(scheduler=client), pytest.raises(bioxr.ScoreCubeError, match="infinite"):
        verification.eer(lazy)


# ------------------------------------------------------------------ bytes to the client
SAMPLE = 400_000  # counting.strided_sample's default size: the sample travels whole, whatever the cube's size


def _bound(cube):
    """1% of the cube, plus what any EER needs whatever the cube's size.

    The fixed allowance: the strided sample (about ``SAMPLE`` scores; all
    of them in a cube of fewer than ``2 * SAMPLE``), the mated and excluded
    scores (once), per window pass the 4-byte counts at the mated scores in
    the window (at most one per mated score; up to four passes), and 64 KiB
    for the small counts and containers.
    """
    groups = bioxr._core.Grouped(cube, None)
    index = groups.block(0)[1]
    n_cells = index.mated.size + index.excluded.size
    n_sample = -(-cube.size // max(1, cube.size // SAMPLE))
    size = cube.dtype.itemsize
    return 0.01 * cube.nbytes + size * n_sample + size * n_cells + 4 * 4 * n_cells + (1 << 16)


@pytest.fixture(scope="module")
def big_cube():
    # 2.5 M cells (10 MB of float32) in 7 blocks: the sample is a sixth of the cells
    return bioxr.simulate.photohead(n_subjects=150, n_images=4, n_collections=7, seed=3, chunks=1)


def test_client_receives_small_results_threaded(big_cube, received):
    """Everything dask hands back to the caller, summed by dask's own sizeof."""
    with dask.config.set(scheduler="threads"):
        res = verification.eer(big_cube)
    assert 0.1 < float(res.eer) < 0.4
    assert len(received) >= 2  # mated cells with the sample (one pass), then at least one window
    assert sum(received) < _bound(big_cube), (sum(received), _bound(big_cube), big_cube.nbytes)


def test_client_receives_small_results_distributed(big_cube, client):
    """Bytes the workers sent to anyone but another worker (their transfer logs): the client's share."""
    client.run(lambda dask_worker: dask_worker.transfer_outgoing_log.clear())
    with dask.config.set(scheduler=client):
        res = verification.eer(big_cube)
    workers = set(client.scheduler_info()["workers"])
    logs = client.run(lambda dask_worker: [(e["who"], e["total"]) for e in dask_worker.transfer_outgoing_log])
    to_client = sum(total for log in logs.values() for who, total in log if who not in workers)
    assert 0.1 < float(res.eer) < 0.4
    assert 0 < to_client < _bound(big_cube), (to_client, _bound(big_cube), big_cube.nbytes)


def test_client_receives_small_results_for_the_det(big_cube, received):
    """The exact DET of a lazy cube: counts between the mated scores travel, never the scores."""
    with dask.config.set(scheduler="threads"):
        det = verification.det_curve(big_cube)
    n_mated = int(det.n_mated)
    # what the EER may receive (the mated cells, the orientation sample), plus the counts between the mated
    # scores (3 numbers of 8 bytes per edge) and the thresholds of one more pass if any: O(M), not O(cube)
    bound = _bound(big_cube) + 2 * 24 * (n_mated + 1)
    assert sum(received) < bound, (sum(received), bound, big_cube.nbytes, n_mated)
    expected = verification.det_curve(big_cube.compute())
    xr.testing.assert_identical(det, expected)


# ------------------------------------------------------------------ each block read once
def _read_counted(cube, chunks):
    """``cube`` as a dask cube of ``chunks`` that records the location of every block it hands out, and the record."""
    import threading

    import dask.array as da

    reads, lock = [], threading.Lock()

    def counted(block, block_info=None):
        with lock:
            reads.append(block_info[0]["chunk-location"])
        return block

    data = da.from_array(cube.values, chunks=chunks).map_blocks(counted, dtype=cube.dtype)
    return cube.copy(data=data), reads


def test_det_reads_each_block_twice():
    """The lazy DET (corners) passes over the blocks twice: the mated cells with the orientation check's sample,
    then the counts between them (a third pass had drawn the sample alone)."""
    cube = bioxr.simulate.photohead(n_subjects=64, n_images=3, n_collections=8, seed=5)
    assert cube.size >= bioxr.counting.MIN_WINDOW_CELLS  # counted blockwise, not loaded
    lazy, reads = _read_counted(cube, (13, 3, 3, -1))
    n_blocks = lazy.data.npartitions
    with dask.config.set(scheduler="threads"):
        got = bioxr.verification.det_curve(lazy)
    assert len(reads) == 2 * n_blocks and len(set(reads)) == n_blocks, (len(reads), n_blocks)
    xr.testing.assert_identical(got, bioxr.verification.det_curve(cube))


def test_identification_reads_each_block_once():
    """The lazy CMC and open-set rates compute their outcome variables together: every block is generated once.

    A lazily generated or stored cube is generated or read again by every
    compute that needs it; computing the outcome variables one at a time
    regenerated each block once per variable.
    """
    cube = _photohead()
    lazy, reads = _read_counted(cube, (13, 3, 2, -1))
    n_blocks = lazy.data.npartitions
    with dask.config.set(scheduler="threads"):
        for f in (bioxr.identification.cmc_curve,
                  lambda c: bioxr.identification.open_set_rates(c, [0.5], impostors="all")):
            reads.clear()
            got = f(lazy)
            assert len(reads) == n_blocks and len(set(reads)) == n_blocks, (len(reads), n_blocks)
            xr.testing.assert_identical(got, f(cube))


@pytest.mark.parametrize("distance", [False, True])
def test_spread_counts_and_windows_equal_the_gathered_scores(distance, received):
    """A lazy group's mated scores kept on the workers (blockwise.Spread) answer every count and window as the
    gathered, sorted scores do: at thresholds inside a window already brought (answered on the client), counted
    before, infinite, or new (one pass), on both sides, with ties and NaN; only windows and counts travel."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(7)
    values = np.round(rng.normal(size=(60, 300)), 1)
    values[rng.random(values.shape) < 0.05] = np.nan
    lazy = da.from_array(values, chunks=(7, 128))
    mated = np.sort(rng.choice(values.size, 2000, replace=False))
    excluded = np.sort(np.setdiff1d(rng.choice(values.size, 50, replace=False), mated))
    skip = np.sort(np.concatenate([mated, excluded]))
    spread, x, sample = blockwise.spread_and_sample(lazy, mated, excluded, 10, skip, distance, 100)
    m = values.reshape(-1)[mated]
    m = np.sort(-m[~np.isnan(m)] if distance else m[~np.isnan(m)])
    assert spread.size == m.size and 0 < spread.sample.size <= 2 * 100
    assert np.all(np.diff(spread.sample) >= 0) and np.isin(spread.sample, m).all()
    np.testing.assert_array_equal(np.sort(x), np.sort(values.reshape(-1)[excluded]))
    t = np.concatenate([rng.choice(m, 40), rng.normal(size=40), [-np.inf, np.inf, m[0], m[-1]]])
    lo, hi = np.quantile(m, [0.3, 0.6])
    np.testing.assert_array_equal(spread.inside(lo, hi, at=t[:10]), m[(m >= lo) & (m <= hi)])
    passes = spread.fetches
    for side in ("left", "right"):
        np.testing.assert_array_equal(spread.count_lt(t, side), np.searchsorted(m, t, side=side), side)
        inner = t[(t >= lo) & (t <= hi)]
        np.testing.assert_array_equal(spread.count_lt(inner, side), np.searchsorted(m, inner, side=side))
    assert spread.fetches == passes + 2  # one pass per side for the thresholds outside the window, then none
    np.testing.assert_array_equal(spread.count_lt(t[:10]), np.searchsorted(m, t[:10]))  # counted with the window
    assert spread.fetches == passes + 2
    # after the pass that made it (the samples, the excluded cells), only the window (30% of them) and counts
    assert sum(received[1:]) < 8 * m.size / 2
    ranks = np.concatenate([[0, m.size - 1], rng.integers(m.size, size=20)])
    np.testing.assert_array_equal(spread.take(ranks), m[ranks])  # order statistics: a narrow window each
    with pytest.raises(IndexError, match="ranks"):
        spread.take([m.size])
    np.testing.assert_array_equal(np.asarray(spread), m)  # and all of them, when asked


@pytest.mark.parametrize("method", ["interpolated", "nearest"])
def test_eer_reads_each_block_twice(method):
    """The lazy EER of "interpolated" and "nearest" passes over the blocks twice: the mated cells with the sample,
    then the window, whose scores (every one a threshold) travel in that pass; counted there instead, they were
    fetched in a third pass."""
    cube = bioxr.simulate.photohead(n_subjects=64, n_images=3, n_collections=8, seed=5)
    lazy, reads = _read_counted(cube, (13, 3, 3, -1))
    n_blocks = lazy.data.npartitions
    with dask.config.set(scheduler="threads"):
        got = bioxr.verification.eer(lazy, method=method)
    assert len(reads) == 2 * n_blocks and len(set(reads)) == n_blocks, (len(reads), n_blocks)
    xr.testing.assert_identical(got, bioxr.verification.eer(cube, method=method))
