"""Outcomes of a dask cube chunked along ``reference``: the in-memory result, without joining ``reference``.

:func:`bioxr.outcomes.outcomes` runs two blockwise passes over such a cube
(the mated best score per probe, then the counts of better and tied
subjects); a subject whose references fall into several reference chunks
is counted once, from the best of its per-chunk bests. Here odd,
single-element and irregular reference chunks, chunks that split a
subject's references (multi-reference subjects, references not sorted by
subject), integer ties, NaN, distance scores, self comparisons, float32
scores and unenrolled probes give exactly the in-memory outcomes, ranks,
CMC, rank-k and open-set rates, under the threaded scheduler and on a
two-worker ``dask.distributed`` LocalCluster; no block wider than a
reference chunk is ever formed.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

dask = pytest.importorskip("dask")

import bioxr  # noqa: E402
from bioxr import identification, outcomes as outcomes_module  # noqa: E402
from bioxr.cube import ScoreCubeError, score_cube  # noqa: E402
from bioxr.outcomes import outcomes  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

# 14 references of 7 subjects (1 to 4 references each), shuffled: most chunkings split some subject
N_REFS = 14
CHUNKINGS = {
    "single": (1,) * N_REFS,
    "odd": 3,
    "irregular": (5, 3, 1, 5),
    "halves": (7, 7),
    "pairs": (2,) * 7,
    "empty-chunk": (4, 0, 6, 4),
}


def _tied_cube(kind="similarity", dtype=float, seed=0):
    """Integer scores (many ties), some NaN, multi-reference subjects in shuffled order, unenrolled probes."""
    rng = np.random.default_rng(seed)
    ref_subject = rng.permutation(np.repeat([f"s{i}" for i in range(7)], [1, 2, 3, 1, 2, 4, 1]))
    probe_subject = np.array([f"s{i}" for i in np.r_[np.arange(9), rng.integers(0, 9, 4)]])  # s7, s8 not enrolled
    scores = rng.integers(0, 5, (probe_subject.size, N_REFS)).astype(float)
    scores[rng.random(scores.shape) < 0.12] = np.nan
    scores[1, ref_subject == "s1"] = np.nan  # an enrolled probe never compared with its mate
    return score_cube(scores.astype(dtype), subject=probe_subject, reference_subject=ref_subject, score_kind=kind)


def _check(cube, chunks, **kwargs):
    lazy = cube.chunk(chunks)
    for ranks_only in (False, True):
        res = outcomes(lazy, ranks_only=ranks_only)
        assert res.mated_rank.chunks is not None  # still lazy
        assert not any("rechunk" in str(name) for name in res.mated_rank.data.dask.layers)
        xr.testing.assert_identical(res.compute(), outcomes(cube, ranks_only=ranks_only))


@pytest.mark.parametrize("kind", ["similarity", "distance"])
@pytest.mark.parametrize("chunking", list(CHUNKINGS))
def test_tied_multireference_cube(kind, chunking):
    cube = _tied_cube(kind)
    _check(cube, {"reference": CHUNKINGS[chunking]})
    _check(cube, {"reference": CHUNKINGS[chunking], "probe": (5, 1, 7)})


@pytest.mark.parametrize("split_every", [2, 3])
def test_deep_combine_trees(monkeypatch, split_every):
    """Partials merged a few at a time: a straddling subject is counted only once all its chunks are merged."""
    from bioxr._core import blockwise

    monkeypatch.setattr(blockwise, "SPLIT_EVERY", split_every)
    for seed in range(4):
        for kind in ("similarity", "distance"):
            cube = _tied_cube(kind, seed=seed)
            for chunking in ("single", "pairs", "irregular"):
                lazy = outcomes(cube.chunk({"reference": CHUNKINGS[chunking], "probe": 4}))
                xr.testing.assert_identical(lazy.compute(), outcomes(cube))


def test_the_cases_are_hard_enough():
    """The fixture really has ties beyond the mate, straddling subjects, NaN mates and unenrolled probes."""
    cube = _tied_cube()
    out = outcomes(cube)
    assert (out.mated_rank_max > out.mated_rank_min).sum() >= 3
    assert np.isnan(out.mated_score.values).sum() >= 3  # s7, s8 and the never-compared probe
    ref = cube["reference_subject"].values
    edges = np.r_[0, np.cumsum(CHUNKINGS["halves"])]
    straddling = {s for s in ref if len({np.searchsorted(edges, i, "right") for i in np.flatnonzero(ref == s)}) > 1}
    assert len(straddling) >= 2


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_float32_scores(seed):
    _check(_tied_cube(dtype=np.float32, seed=seed), {"reference": (5, 3, 1, 5)})
    cube = _tied_cube(seed=seed)
    cube = cube.copy(data=(cube.values / 7).astype(np.float32))  # the comparisons happen in float32, as in memory
    _check(cube, {"reference": 3})


def test_self_comparisons_are_left_out():
    cube = bioxr.simulate.all_against_all(6, 3, seed=2)
    assert (cube["probe_id"].values[:, None] == cube["reference_id"].values[None, :]).any()
    _check(cube, {"reference": (4, 1, 6, 7)})
    _check(cube.isel(reference=np.random.default_rng(0).permutation(cube.sizes["reference"])), {"reference": 5})


def test_simulated_cubes():
    _check(bioxr.simulate.gaussian(12, 3, seed=1), {"reference": 5, "probe": 7})
    photohead = bioxr.simulate.photohead(5, 2, 6, seed=3)
    _check(photohead, {"reference": (3, 1, 6), "collection": 4, "subject": 2})
    lazy = bioxr.simulate.photohead(5, 2, 6, seed=3, chunks=2).chunk({"reference": 3})
    xr.testing.assert_identical(outcomes(lazy).compute(), outcomes(photohead))


def test_cmc_rank_and_open_set_rates():
    for kind in ("similarity", "distance"):
        cube = _tied_cube(kind, seed=4)
        lazy = cube.chunk({"reference": (2, 5, 1, 6), "probe": 4})
        xr.testing.assert_identical(identification.cmc_curve(lazy), identification.cmc_curve(cube))
        xr.testing.assert_identical(identification.cmc_curve(lazy, convention="bob"),
                                    identification.cmc_curve(cube, convention="bob"))
        xr.testing.assert_identical(identification.identification_rate(lazy, rank=2),
                                    identification.identification_rate(cube, rank=2))
        thresholds = [1.0, 2.0, 3.0]
        xr.testing.assert_identical(identification.open_set_rates(lazy, thresholds, rank=2),
                                    identification.open_set_rates(cube, thresholds, rank=2))
    photohead = bioxr.simulate.photohead(6, 2, 4, seed=5)
    lazy = photohead.chunk({"reference": (5, 2, 5), "collection": 3})
    xr.testing.assert_identical(identification.cmc_curve(lazy, dim="subject"),
                                identification.cmc_curve(photohead, dim="subject"))


def test_blocks_never_join_reference(monkeypatch):
    """Every block the passes read is one reference chunk wide: reference is never joined."""
    widths = []
    original = outcomes_module._chunk_best

    def spy(block, *args):
        widths.append(np.shape(block)[-1])
        return original(block, *args)

    monkeypatch.setattr(outcomes_module, "_chunk_best", spy)
    cube = _tied_cube()
    with dask.config.set(scheduler="threads"):
        res = outcomes(cube.chunk({"reference": (5, 3, 1, 5), "probe": 6})).compute()
    xr.testing.assert_identical(res, outcomes(cube))
    assert sorted(set(widths)) == [1, 3, 5]
    assert len(widths) == 2 * 3 * 4  # two passes over 3 x 4 blocks, each block read once per pass


def test_infinite_scores_are_refused():
    cube = _tied_cube()
    cube[2, 3] = np.inf
    with pytest.raises(ScoreCubeError, match="infinite"):
        outcomes(cube)
    with pytest.raises(ScoreCubeError, match="infinite"):
        outcomes(cube.chunk({"reference": 4})).compute()


def test_distributed_local_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = distributed.Client(cluster, set_as_default=False)
    try:
        client.run(lambda: __import__("bioxr"))  # warm the workers up
        cube = _tied_cube("distance", seed=6)
        with dask.config.set(scheduler=client):
            res = outcomes(cube.chunk({"reference": (5, 3, 1, 5), "probe": 5})).compute()
            cmc = identification.cmc_curve(cube.chunk({"reference": 3}))
        xr.testing.assert_identical(res, outcomes(cube))
        xr.testing.assert_identical(cmc, identification.cmc_curve(cube))
    finally:
        client.close()
        cluster.close()


def test_pass_one_is_done_before_pass_two_is_built(monkeypatch):
    """No block waits in memory for pass 1: the mated bests are computed first, pass 2 reads the blocks anew."""
    import dask.array as da

    cube = _tied_cube(seed=7)
    events = []

    def source(block):
        events.append("read")
        return block

    original = outcomes_module._rank_chunk

    def spy(*args):
        events.append("rank")
        return original(*args)

    monkeypatch.setattr(outcomes_module, "_rank_chunk", spy)
    data = da.from_array(cube.values, chunks=(6, (5, 3, 1, 5))).map_blocks(source, dtype=float, meta=np.array((), float))
    for lazy, n_read, n_blocks in [
        (cube.copy(data=data), 3 * 4, 3 * 4),  # the source blocks are the cube's
        (cube.copy(data=data.rechunk((5, 4))), 3 * 4, 3 * 4),  # rechunked: 3 x 4 blocks read from 3 x 4 sources
        (cube.copy(data=data.rechunk((13, 3))), 3 * 4, 5),  # and 1 x 5 blocks of 3 x 4 sources
        (cube.isel(reference=slice(1, None)).copy(data=data[:, 1:]), 3 * 4, 3 * 4),  # a slice: one read a source a pass
    ]:
        expected = outcomes(lazy.compute())
        events.clear()
        with dask.config.set(scheduler="threads"):
            res = outcomes(lazy)
            assert events == ["read"] * n_read  # pass 1 only, now
            res = res.compute()
        assert events[n_read:].count("read") == n_read and events.count("rank") == n_blocks
        xr.testing.assert_identical(res, expected)
