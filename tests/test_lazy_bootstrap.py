"""The subject bootstrap on lazy cubes and lists: statistics counted blockwise, equal to in memory.

:class:`bioxr.bootstrap._stats._Stats` on a dask-backed cube or comparison
list runs the passes of :mod:`bioxr._core.blockstats` where the blocks live
(the mated scores, the (bin, pair) counts merged in a tree, exact order
statistics for the default grid) and must hold the in-memory arrays
element for element, dtypes included; the public bootstrap functions then
give identical results. Cubes with odd, single and irregular chunks and
chunks along ``reference``, lists in partitions of 7 and more, the three
failure policies; the bytes that reach the client are bounded by the
statistics' own size; one case on a LocalCluster.

``cmc_interval`` loads a lazy cube (its ranks need every score of a probe):
it is checked for equal results only.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

dask = pytest.importorskip("dask")


import bioxr  # noqa: E402
from bioxr import bootstrap, failures  # noqa: E402
from bioxr._core import blockstats  # noqa: E402
from bioxr.bootstrap._stats import GRID_SIZE, _Stats  # noqa: E402
from bioxr.claims import claim_test  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::bioxr._core.errors.FewReplicatesWarning")]

FIELDS = ("grid", "thresholds", "units", "mated_errors", "attempts", "m_scores", "m_unit", "count_f32", "pair_a",
          "pair_c", "bin_starts", "bin_ids")
POLICIES = ("exclude", "nist", "iso")
T = [-0.5, 0.3, 1.0, 2.0]  # explicit thresholds (similarity cubes; a distance cube takes them as distances)


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def _photohead():
    return bioxr.simulate.photohead(n_subjects=40, n_images=3, n_collections=5, seed=5)  # float32, continuous


def _distance():
    """Distance scores with ties (few distinct: the grid is every score), NaN and self comparisons."""
    cube = bioxr.simulate.all_against_all(60, 4, seed=2)
    values = -np.round(cube.values, 1)
    values[np.random.default_rng(0).random(values.shape) < 0.03] = np.nan
    return cube.copy(data=values).assign_attrs(score_kind="distance")


def _ties():
    """Distances with many distinct values and heavy ties (the order statistics fall on tied runs), NaN, self."""
    cube = bioxr.simulate.all_against_all(60, 4, seed=2)
    values = -np.round(cube.values * 40) / 40
    values[np.random.default_rng(1).random(values.shape) < 0.03] = np.nan
    return cube.copy(data=values).assign_attrs(score_kind="distance")


def _marked():
    """Failed enrolments and acquisitions (NaN and flagged), a similarity cube."""
    cube = _photohead()
    rng = np.random.default_rng(1)
    fe = rng.random(cube.sizes["reference"]) < 0.05
    fa = xr.DataArray(rng.random((cube.sizes["subject"], cube.sizes["image"])) < 0.05, dims=("subject", "image"))
    return failures.mark_failures(cube, enrolment=fe, acquisition=fa)


CUBES = {"photohead": _photohead, "distance": _distance, "ties": _ties, "marked": _marked}
CHUNKS = {
    "photohead": {"odd": {"collection": 2, "subject": 13}, "single": {},
                  "irregular+reference": {"collection": (1, 3, 1), "reference": (7, 50, 63)}},
    "distance": {"odd": {"probe": 97, "reference": 131}, "single": {},
                 "irregular+reference": {"probe": (1, 120, 119), "reference": (239, 1)}, "reference only": {"reference": 31}},
    "ties": {"odd": {"probe": 37, "reference": 53}},
    "marked": {"odd": {"collection": 2, "subject": 13}, "irregular+reference": {"collection": (1, 3, 1),
                                                                               "reference": (7, 50, 63)}},
}
CASES = [(c, k) for c in CHUNKS for k in CHUNKS[c]]
_MADE = {}


def _cube(name):
    if name not in _MADE:
        _MADE[name] = CUBES[name]()
    return _MADE[name]


def assert_same_stats(got: _Stats, want: _Stats, what: str = ""):
    for name in FIELDS:
        x, y = getattr(got, name), getattr(want, name)
        assert x.dtype == y.dtype, (what, name, x.dtype, y.dtype)
        np.testing.assert_array_equal(x, y, err_msg=f"{what}: {name}")
    assert (got.n_units, got.kind) == (want.n_units, want.kind), what
    assert (got.iso is None) == (want.iso is None), what
    for x, y in zip(got.iso or (), want.iso or ()):
        np.testing.assert_array_equal(x, y, err_msg=f"{what}: iso")


# ------------------------------------------------------------------ np.quantile, bit for bit
@settings(max_examples=200, deadline=None, derandomize=True)
@given(values=st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32) | st.sampled_from([0.0, -0.0, 1.5, 3.0]),
                       min_size=1, max_size=60),
       q=st.lists(st.floats(0, 1) | st.sampled_from([0.0, 0.5, 1.0, 1 - 1e-7]), min_size=1, max_size=12))
def test_linear_quantiles_are_numpys_bit_for_bit(values, q):
    x, q = np.asarray(values, dtype=np.float64), np.asarray(q)
    got = blockstats.linear_quantiles(lambda ranks: np.sort(x)[ranks], x.size, q)
    want = np.quantile(x, q)
    np.testing.assert_array_equal(got, want)
    assert got[got != 0].tobytes() == want[want != 0].tobytes()  # bit for bit (a zero's sign may differ: equal values)


def test_the_default_grid_quantiles_are_numpys_on_the_fmr_levels():
    rng = np.random.default_rng(0)
    from bioxr.bootstrap._stats import _fmr_levels

    for n in (1, 2, 3, 10, 1001, 54321):
        x = rng.normal(size=n)
        q = 1 - _fmr_levels(n, 200)
        got = blockstats.linear_quantiles(lambda ranks: np.sort(x)[ranks], n, q)
        assert got.tobytes() == np.quantile(x, q).tobytes(), n


# ------------------------------------------------------------------ the statistics
@pytest.mark.parametrize("name,chunking", CASES)
def test_lazy_cube_statistics_equal_in_memory(name, chunking):
    cube = _cube(name)
    lazy = cube.chunk(CHUNKS[name][chunking] or -1)
    assert lazy.chunks is not None
    for policy in POLICIES:
        for t in (None, T):
            want = _Stats(cube, t, "subject", policy)
            got = _Stats(lazy, t, "subject", policy)
            assert_same_stats(got, want, f"{name} {chunking} {policy} thresholds={t}")


@pytest.mark.parametrize("name", ["photohead", "ties", "marked"])
@pytest.mark.parametrize("chunk", [4001, None])
def test_lazy_list_statistics_equal_in_memory(name, chunk):
    trials = bioxr.to_comparisons(_cube(name))
    order = np.random.default_rng(2).permutation(trials.sizes["comparison"])  # the order of a list is no matter
    trials = trials.isel(comparison=order)
    lazy = trials.chunk({"comparison": chunk or trials.sizes["comparison"]})
    assert blockstats.is_lazy(lazy)
    for policy in POLICIES:
        for t in (None, T):
            assert_same_stats(_Stats(lazy, t, "subject", policy), _Stats(trials, t, "subject", policy),
                              f"list {name} {chunk} {policy} thresholds={t}")


def _small_list(seed=0, n=400):
    """A sparse trial list of a few hundred comparisons with ties, NaN failures and self comparisons."""
    rng = np.random.default_rng(seed)
    subjects = np.array([f"s{i}" for i in range(9)])
    p, r = rng.choice(subjects, n), rng.choice(subjects, n)
    p[: n // 4] = r[: n // 4]  # a quarter mated
    score = np.round(rng.normal(size=n) + 2.0 * (p == r), 1)
    fe = rng.random(n) < 0.05
    ids = np.arange(n)
    rid = np.where(rng.random(n) < 0.03, ids, -1 - ids)  # a few self comparisons
    return bioxr.comparison_list(np.where(fe, np.nan, score), subject=p, reference_subject=r,
                                 probe_id=ids, reference_id=rid, failed_enrolment=fe)


@pytest.mark.parametrize("chunk", [7, 64])
def test_small_partitions_and_ties(chunk):
    trials = _small_list()
    for policy in POLICIES:
        for t in (None, [0.0, 1.0, 2.5]):
            assert_same_stats(_Stats(trials.chunk({"comparison": chunk}), t, "subject", policy),
                              _Stats(trials, t, "subject", policy), f"{chunk} {policy} {t}")


@pytest.mark.parametrize("margin,sample_min", [(0.0, 16), (blockstats.MARGIN, 64)])
def test_order_statistics_are_exact_whatever_the_sample(monkeypatch, margin, sample_min):
    """A tiny sample and no margin: the intervals gathered grow, the quantiles stay exact (a cube sorted along
    its blocks makes the strided sample as unrepresentative as it gets)."""
    monkeypatch.setattr(blockstats, "MARGIN", margin)
    monkeypatch.setattr(blockstats, "SAMPLE_MIN", sample_min)
    monkeypatch.setattr(blockstats, "SAMPLE_FACTOR", 1)
    cube = _photohead()
    ordered = cube.copy(data=np.sort(cube.values, axis=-1))
    for c in (cube, ordered):
        lazy = c.chunk({"collection": 2, "reference": 50})
        source = blockstats.LazyComparisons(lazy)
        assert source.sample_stride() > 1  # the order statistics come from the count and gather passes
        assert_same_stats(_Stats(lazy, None, "subject"), _Stats(c, None, "subject"))


def test_other_engines_read_block_by_block(monkeypatch):
    """A cube whose engine has no dask graph is read one block at a time through its chunk manager: same arrays."""
    managers = []
    compute = blockstats.LazyComparisons._run_local

    def spy(self, *args):
        from bioxr._core.blockwise import _manager

        managers.append(type(_manager(self.values)).__name__)
        return compute(self, *args)

    monkeypatch.setattr(blockstats.LazyComparisons, "by_blocks", True)
    monkeypatch.setattr(blockstats.LazyComparisons, "_run_local", spy)
    cube = _marked()
    for policy in POLICIES:
        assert_same_stats(_Stats(cube.chunk({"collection": 2, "reference": 50}), None, "subject", policy),
                          _Stats(cube, None, "subject", policy), policy)
    assert managers and set(managers) == {"DaskManager"}


def test_pairs_merged_by_sorting_equal_the_dense_merge(monkeypatch):
    """Where the key space is too large for a dense array the partials are merged by sorting: the same counts."""
    calls = []

    def by_sorting(*parts, space):
        calls.append(space)
        return blockstats._merge_counts(*parts)

    cube = _ties()
    want = _Stats(cube, None, "subject")
    monkeypatch.setattr(blockstats, "_merge_pairs", by_sorting)
    assert_same_stats(_Stats(cube.chunk({"probe": 37, "reference": 53}), None, "subject"), want)
    assert calls


def test_few_distinct_scores_are_the_grid():
    cube = _distance()
    want = _Stats(cube, None, "subject")
    assert want.grid.size <= 800  # every distinct score (the self comparisons' left out)
    assert set(want.grid) < set(np.unique(-cube.values[np.isfinite(cube.values)]))
    assert_same_stats(_Stats(cube.chunk({"probe": 61}), None, "subject"), want)


def test_subjects_with_no_counted_comparison_are_no_units():
    """A subject whose scores are all NaN, as probe and as reference: left out of the units, as in memory."""
    cube = _photohead()
    values = cube.values.copy()
    values[..., cube.reference_subject.values == cube.subject.values[1]] = np.nan
    values[1] = np.nan
    cube = cube.copy(data=values)
    want = _Stats(cube, None, "subject")
    assert want.n_units == cube.sizes["subject"] - 1 and cube.subject.values[1] not in want.units
    assert_same_stats(_Stats(cube.chunk({"collection": 2, "subject": 7}), None, "subject"), want)


# ------------------------------------------------------------------ the public functions
CALLS = {
    "bootstrap_curve": lambda d, p: bootstrap.bootstrap_curve(d, n_replicates=40, seed=1, failure_policy=p),
    "bootstrap_replicates[two_level]": lambda d, p: bootstrap.bootstrap_replicates(
        d, n_replicates=30, seed=1, two_level=True, failure_policy=p),
    "fnmr_at_fmr_interval": lambda d, p: bootstrap.fnmr_at_fmr_interval(d, [0.01, 0.1], n_replicates=40, seed=2,
                                                                       failure_policy=p),
    "eer_interval": lambda d, p: bootstrap.eer_interval(d, n_replicates=40, seed=3, failure_policy=p),
    "cmc_interval": lambda d, p: bootstrap.cmc_interval(d, max_rank=3, n_replicates=40, seed=4),  # loads the cube
}


@pytest.mark.parametrize("form", ["cube", "list"])
@pytest.mark.parametrize("policy", POLICIES)
def test_bootstrap_functions_on_lazy_data_equal_in_memory(form, policy):
    cube = _marked()
    data = cube if form == "cube" else bioxr.to_comparisons(cube)
    lazy = data.chunk({"collection": 2, "reference": 50} if form == "cube" else {"comparison": 3001})
    for what, call in CALLS.items():
        if what == "cmc_interval" and (form == "list" or policy != "exclude"):
            continue
        try:
            want = call(data, policy)
        except (ValueError, NotImplementedError) as err:
            with pytest.raises(type(err)):
                call(lazy, policy)
            continue
        got = call(lazy, policy)
        try:
            xr.testing.assert_identical(got, want)
        except AssertionError as err:
            raise AssertionError(f"{what} on a lazy {form}, policy {policy}: {err}") from None


@pytest.mark.parametrize("what", ["eer_interval", "fnmr_at_fmr_interval", "bootstrap_curve"])
def test_replicates_split_into_tasks_equal_in_memory(monkeypatch, what):
    """On dask the raw replicate curves run in tasks of REPLICATE_TASK rows: uneven splits change nothing."""
    from bioxr.bootstrap import curves

    cube = _photohead()
    want = CALLS[what](cube, "exclude")
    for rows in (7, 13, 40):
        monkeypatch.setattr(curves, "REPLICATE_TASK", rows)
        xr.testing.assert_identical(CALLS[what](cube.chunk({"collection": 2}), "exclude"), want)


def test_claim_test_on_a_lazy_cube_equals_in_memory():
    cube = _photohead()
    lazy = cube.chunk({"collection": 2, "subject": 13})
    kinds = []
    for kw in (dict(fmr=0.01, threshold=2.5), dict(fmr=1e-6, threshold=6.0), dict(fmr=0.01, fnmr=0.2, threshold=2.0)):
        want = claim_test(cube, n_replicates=100, **kw)
        xr.testing.assert_identical(claim_test(lazy, n_replicates=100, **kw), want)
        kinds += list(want["bound_kind"].values)
    assert any("borrowed" in k for k in kinds), kinds  # a zero-error count used the highest non-mated scores


def test_lazy_list_errors_are_the_in_memory_ones():
    trials = _small_list()
    bad = trials.assign(score=trials.score.where(trials.comparison != 5, np.inf))
    with pytest.raises(bioxr.ScoreCubeError, match="infinite, first at comparison 5"):
        _Stats(bad, None, "subject")
    with pytest.raises(bioxr.ScoreCubeError, match="infinite, first at comparison 5"):
        _Stats(bad.chunk({"comparison": 7}), None, "subject")
    nan = trials.assign(score=trials.score.where(trials.comparison != 11)).drop_vars("failed_enrolment")
    nan = nan.assign(score=nan.score.fillna(0.5).where(nan.comparison != 11))
    for d in (nan, nan.chunk({"comparison": 7})):
        with pytest.raises(bioxr.ScoreCubeError, match="no score \\(NaN\\), first at comparison 11"):
            _Stats(d, None, "subject")
    two = trials.assign_coords(system=("comparison", np.where(np.arange(trials.sizes["comparison"]) < 50, "a", "b")))
    for d in (two, two.chunk({"comparison": 7})):
        with pytest.raises(bioxr.ScoreCubeError, match="2 systems"):
            _Stats(d, None, "subject")


# ------------------------------------------------------------------ bytes to the client
def _held(stats: _Stats) -> int:
    return sum(a.nbytes for a in vars(stats).values() if isinstance(a, np.ndarray))


@pytest.fixture(scope="module")
def big_cube():
    # 640,000 cells (2.6 MB of float32) in 10 blocks; 20 subjects, so O(bins x pairs) statistics stay small
    return bioxr.simulate.photohead(n_subjects=20, n_images=4, n_collections=100, seed=3, chunks=10)


def test_client_receives_the_statistics_not_the_cube(big_cube, received):
    t = np.linspace(-2, 6, 20)
    stats = _Stats(big_cube, t, "subject")
    # the statistics themselves (the mated cells, the (bin, pair) counts) and small containers: never the cube
    assert sum(received) <= _held(stats) + (1 << 14), (sum(received), _held(stats), big_cube.nbytes)
    assert sum(received) < 0.25 * big_cube.nbytes
    assert_same_stats(stats, _Stats(big_cube.compute(), t, "subject"))


def test_client_receives_the_grid_not_the_sample_for_the_default_grid(big_cube, received):
    stats = _Stats(big_cube, None, "subject")
    n_sample = max(blockstats.SAMPLE_MIN, np.sqrt(blockstats.SAMPLE_FACTOR * big_cube.size))
    # the passes send back counts, the grid's points (at most 4 x GRID_SIZE scores, read off the mated scores
    # and the order statistics) and the subjects' codes; the mated scores, the sample, the counts at its edges and
    # the gathered intervals stay where they were computed. The last compute brings the statistics themselves.
    *passes, last = received
    assert len(passes) == 4, received  # first-pass counts, mated quantiles, order statistics, codes
    assert sum(passes) <= 16 * 4 * GRID_SIZE + (1 << 13) < 8 * n_sample, (passes, n_sample)
    assert _held(stats) <= last <= _held(stats) + (1 << 12), (last, _held(stats))
    assert_same_stats(stats, _Stats(big_cube.compute(), None, "subject"))


@pytest.mark.parametrize("what", ["bootstrap_curve", "fnmr_at_fmr_interval", "eer_interval"])
def test_bootstrap_functions_send_back_their_results_only(big_cube, received, what):
    """The replicates run where the statistics are kept: neither travels, only the band or the interval."""
    from dask.sizeof import sizeof

    base = 0
    if what == "eer_interval":  # the point EER's own passes (tests/test_distributed.py bounds them)
        bioxr.verification.eer(big_cube)
        base = sum(received)
    received.clear()
    got = CALLS[what](big_cube, "exclude")
    held = _held(_Stats(big_cube.compute(), None, "subject"))
    assert sum(received) - base <= sizeof(got) + 16 * 4 * GRID_SIZE + (1 << 13), (received, base, sizeof(got))
    assert sum(received) - base < held / 4, (received, held)
    xr.testing.assert_identical(got, CALLS[what](big_cube.compute(), "exclude"))


# ------------------------------------------------------------------ a cluster
def test_statistics_on_a_local_cluster_equal_in_memory():
    distributed = pytest.importorskip("distributed")
    cube = _marked()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster, set_as_default=False) as client:
        lazy = cube.chunk({"collection": (1, 3, 1), "reference": (7, 50, 63)})
        with dask.config.set(scheduler=client):
            lazy = lazy.persist()  # the blocks live on the workers
            assert_same_stats(_Stats(lazy, None, "subject", "nist"), _Stats(cube, None, "subject", "nist"))
            base = _to_client(client, lambda: bioxr.verification.eer(lazy, failure_policy="nist"))
            got = []
            sent = _to_client(client, lambda: got.append(CALLS["eer_interval"](lazy, "nist")))
        xr.testing.assert_identical(got[0], CALLS["eer_interval"](cube, "nist"))
        # besides the point EER's passes: the grid, the replicates' EERs and the subjects' codes, not the statistics
        assert sent - base < _held(_Stats(cube, None, "subject", "nist")) / 4, (sent, base)


def _to_client(client, call) -> int:
    """Bytes the workers sent to anyone but another worker (their transfer logs) during ``call()``."""
    client.run(lambda dask_worker: dask_worker.transfer_outgoing_log.clear())
    call()
    workers = set(client.scheduler_info()["workers"])
    logs = client.run(lambda dask_worker: [(e["who"], e["total"]) for e in dask_worker.transfer_outgoing_log])
    return sum(total for log in logs.values() for who, total in log if who not in workers)


@pytest.mark.parametrize("n_subjects, kind", [(40, "similarity"), (260, "similarity"), (260, "distance")])
def test_nonmated_summary_equals_a_sort_of_the_nonmated_scores(n_subjects, kind):
    """The k-th highest finite non-mated scores and the subject counts, blockwise, against a plain sort.

    260 subjects x 2 samples give 134,680 non-mated scores: more than the lazy sample holds, so the order
    statistics come from the count and gather passes; 40 subjects fit in the sample. Ties and NaN included.
    """
    from bioxr._core import flat_comparisons

    cube = bioxr.simulate.gaussian(n_subjects, 2, seed=5)
    values = np.round(cube.values * 4) / 4  # ties everywhere
    values[np.random.default_rng(1).random(values.shape) < 0.01] = np.nan
    cube = cube.copy(data=-values if kind == "distance" else values)
    if kind == "distance":
        cube.attrs["score_kind"] = "distance"
    lazy = cube.chunk({"probe": 97, "reference": 60} if "probe" in cube.dims else {cube.dims[0]: 97})
    got = blockstats.nonmated_summary(lazy, top=(1, 10, 30, 100, 10**7))
    scores, p, r, mated, k = flat_comparisons(cube, failure_policy="exclude")
    sign = -1.0 if k == "distance" else 1.0
    s = np.sort(sign * scores[~mated][np.isfinite(scores[~mated])])[::-1]
    assert got["kind"] == k == kind and got["n_finite"] == s.size
    assert got["top"] == {j: s[j - 1] for j in (1, 10, 30, 100)}  # 10**7 exceeds the scores: left out
    pr = np.unique(np.concatenate([p[~mated], r[~mated]]))
    assert (got["units"], got["probe_units"], got["reference_units"]) == (pr.size, np.unique(p[~mated]).size,
                                                                          np.unique(r[~mated]).size)
