"""Comparison lists backed by dask: the same results as in memory, the list never loaded by the counting passes.

Every function of the registry of tests/test_comparisons.py runs on a lazy
list (``trials.chunk``) with odd, single and irregular partitions and must
equal the in-memory list exactly; ``counting.MIN_WINDOW_CELLS`` is lowered
for the lazy runs so that these small lists take the blockwise window and
count-between paths, not a sort. ``read_long(..., chunks=)`` from a
partitioned Parquet directory and from several CSV files equals the
in-memory read of the same rows; the bytes handed back to the client for
the EER and FNMR at FMR of a lazy list are a small share of the list; and
one LocalCluster case.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings

dask = pytest.importorskip("dask")


import bioxr  # noqa: E402
from bioxr import counting, verification  # noqa: E402
from bioxr._core import Grouped, blockwise  # noqa: E402
from bioxr.cube import ScoreCubeError  # noqa: E402
from bioxr.io import ScoreFileError, read_long, read_scores  # noqa: E402
from test_comparisons import REGISTRY, _same, sparse_data  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

CHUNKINGS = {
    "odd": lambda n: 7,
    "single": lambda n: -1,
    "irregular": lambda n: (1, max(n // 3, 1), n - 1 - max(n // 3, 1)),
}


def _lazy(trials, chunking):
    return trials.chunk({"comparison": CHUNKINGS[chunking](trials.sizes["comparison"])})


@pytest.mark.parametrize("spread", [False, True], ids=["gathered", "spread"])
@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture],
          derandomize=True)
@given(data=sparse_data())
def test_every_registered_function_on_a_lazy_list_equals_in_memory(chunking, spread, data):
    """``spread``: the mated scores of the EER and FNMR at FMR stay on the workers (counting.SPREAD_FROM)."""
    trials, _ = data
    lazy = _lazy(trials, chunking)
    assert blockwise.is_chunked(lazy["score"].data) and blockwise.is_chunked(lazy["subject"].data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, call in REGISTRY.items():
            try:
                expected = call(trials)
            except (ValueError, ScoreCubeError) as err:
                with pytest.raises(type(err)), _small_windows(spread), dask.config.set(scheduler="sync"):
                    call(lazy)
                continue
            with _small_windows(spread), dask.config.set(scheduler="sync"):
                got = call(lazy)
            if isinstance(expected, xr.DataArray):
                expected, got = expected.to_dataset(name="x"), got.to_dataset(name="x")
            _same(expected, got, f"{name} ({chunking})")


@contextlib.contextmanager
def _small_windows(spread: bool = False):
    """These lists hold about 100 comparisons: take the blockwise window and count-between paths, not a sort
    (and, with ``spread``, keep every mated score on the workers)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(counting, "MIN_WINDOW_CELLS", 16)
        if spread:
            mp.setattr(counting, "SPREAD_FROM", 1)
        yield


@settings(max_examples=3, deadline=None, derandomize=True)
@given(data=sparse_data())
def test_lazy_groups_and_index_equal_in_memory(data):
    """The groups of a lazy list (kept dims too): the same scores, mated and self positions, failure counts."""
    trials, _ = data
    n = trials.sizes["comparison"]
    trials = trials.assign_coords(probe_id=("comparison", trials["probe"].values % 4),
                                  reference_id=("comparison", np.arange(n) % 5),
                                  failed_acquisition=("comparison", np.arange(n) % 7 == 3))  # some of a probe's
    lazy = _lazy(trials, "odd")
    for dim in (None, "probe", ()):
        mem, lz = Grouped(trials, dim), Grouped(lazy, dim, lazy=True)
        assert lz.n_groups == mem.n_groups and lz.kept == mem.kept
        for k in mem.kept_coords:
            assert mem.kept_coords[k].identical(lz.kept_coords[k]), k
        assert set(mem.kept_coords) == set(lz.kept_coords)
        assert lz.has_failures == mem.has_failures
        for g in range(mem.n_groups):
            (v, i), (w, j) = mem.block(g), lz.block(g)
            np.testing.assert_array_equal(np.asarray(w).reshape(-1), v)
            chunks = w.chunks[0] if hasattr(w, "chunks") else (w.size,)
            mated, excluded = j.positions(chunks) if hasattr(j, "positions") else (j.mated, j.excluded)
            np.testing.assert_array_equal(mated, i.mated)
            np.testing.assert_array_equal(excluded, i.excluded)
            assert (j.mated.size, j.excluded.size) == (i.mated.size, i.excluded.size)
            assert lz.failure_counts(g) == mem.failure_counts(g)
        for a, b in zip(lz.unit_failure_table(), mem.unit_failure_table()):
            pd.testing.assert_frame_equal(a, b)


def test_lazy_list_checks_as_in_memory():
    rng = np.random.default_rng(0)
    n = 50
    subject, ref = rng.choice(list("abc"), n), rng.choice(list("abc"), n)
    score = rng.normal(size=n)
    ok = bioxr.comparison_list(score, subject=subject, reference_subject=ref)
    for bad, match in ((np.inf, "infinite, first at comparison 23"),
                       (np.nan, "no score \\(NaN\\), first at comparison 23")):
        values = score.copy()
        values[[23, 40]] = bad
        lazy = ok.copy(data={"score": values}).chunk({"comparison": 9})
        with pytest.raises(ScoreCubeError, match=match):
            verification.eer(lazy)
    none = ok.assign_coords(reference_subject=("comparison", np.char.add(ref, "x")))
    with pytest.raises(ScoreCubeError, match="no mated comparison"):
        verification.eer(none.chunk({"comparison": 9}))


# ------------------------------------------------------------------ reading lists in parts
def _frame(n=1500, seed=1):
    rng = np.random.default_rng(seed)
    subj = rng.integers(30, size=n)
    ref = np.where(rng.random(n) < 0.25, subj, rng.integers(30, size=n))
    df = pd.DataFrame({
        "probe": [f"p{s}_{k}" for s, k in zip(subj, rng.integers(4, size=n))],
        "subject": [f"s{s}" for s in subj],
        "reference": [f"r{r}" for r in ref],
        "reference_subject": [f"s{r}" for r in ref],
        "score": np.round(rng.normal(size=n) + 2 * (subj == ref), 2),
        "session": rng.integers(3, size=n),
        "sensor": rng.choice(["x", "y"], n),
        "failed": rng.random(n) < 0.02,
    }).drop_duplicates(["probe", "reference"]).reset_index(drop=True)
    # ids kept as written; subjects NFC-normalised (one subject spelt two ways), counted
    df["probe"] = df["probe"].str.replace("p1_", "pe\u0301_", regex=False)
    df["subject"] = df["subject"].replace("s1", "se\u0301")
    df["reference_subject"] = df["reference_subject"].replace("s1", "s\u00e9")
    df.loc[df.index[[3, len(df) // 2]], "score"] = np.nan  # not compared: dropped and counted
    df.loc[df.failed, "score"] = np.nan
    return df


def _equal_reads(lazy, memory):
    assert blockwise.is_chunked(lazy["score"].data)
    assert all(blockwise.is_chunked(v.data) for v in lazy.coords.values())
    got = lazy.compute()
    got.attrs.pop("source"), memory.attrs.pop("source")
    xr.testing.assert_identical(got, memory)


KW = dict(probe_subject="subject", reference_subject="reference_subject", failed_enrolment="failed", layout="list")


def test_read_long_from_several_csv_files_equals_in_memory(tmp_path):
    df = _frame()
    df["session"] = df["session"].astype(float)
    cut = [0, 400, 401, len(df) - 300, len(df)]  # one file of one row
    for i in range(4):
        part = df.iloc[cut[i]:cut[i + 1]].copy()
        if i == 2:
            part["session"] = part["session"] + 0.5  # numbers in one file, non-integers here: floats for all
        df.loc[part.index, "session"] = part["session"]
        part.to_csv(tmp_path / f"part{i}.csv", index=False, float_format="%g")
    df.to_csv(tmp_path / "all.csv", index=False, float_format="%g")
    memory = read_long(tmp_path / "all.csv", **KW)
    assert memory["session"].dtype == np.float64
    lazy = read_long(str(tmp_path / "part*.csv"), chunks=100, **KW)
    assert lazy["score"].data.numblocks == (4,)
    _equal_reads(lazy, memory)
    files = [tmp_path / f"part{i}.csv" for i in range(4)]
    _equal_reads(read_scores(files, chunks=10, layout="list", columns={"subject": "subject", "failed_enrolment":
                 "failed", "reference_subject": "reference_subject"}), read_long(tmp_path / "all.csv", **KW))
    with dask.config.set(scheduler="threads"):
        for f in (verification.eer, lambda d: verification.fnmr_at_fmr(d, [0.01, 0.1], failure_policy="nist")):
            xr.testing.assert_identical(f(lazy), f(memory))


def test_read_long_from_a_partitioned_parquet_directory_equals_in_memory(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    df = _frame(seed=2)
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, tmp_path / "all.parquet", row_group_size=128)
    # Hive folders by session (a column again when read), row groups of 128 rows
    pq.write_to_dataset(table, tmp_path / "trials", partition_cols=["session"], row_group_size=128)
    lazy = read_long(tmp_path / "trials", chunks=300, **KW)
    assert lazy["score"].data.numblocks[0] > 3
    order = pd.concat([df[df.session == s] for s in sorted(df.session.unique())])  # folder order
    pq.write_table(pa.Table.from_pandas(order, preserve_index=False), tmp_path / "ordered.parquet")
    _equal_reads(lazy, read_long(tmp_path / "ordered.parquet", **KW))
    # one file of many row groups, two row groups a partition
    flat = read_long(tmp_path / "all.parquet", **KW)
    lazy_flat = read_long([tmp_path / "all.parquet"], chunks=256, **KW)
    assert lazy_flat["score"].data.numblocks[0] > 2
    _equal_reads(lazy_flat, read_long(tmp_path / "all.parquet", **KW))
    with dask.config.set(scheduler="threads"):
        for f in (verification.eer, verification.det_curve, lambda d: verification.error_rates(d, [0.0, 1.0])):
            xr.testing.assert_identical(f(lazy_flat), f(flat))


def test_read_long_in_parts_names_the_file_and_line(tmp_path):
    df = _frame(n=200)
    for i, part in enumerate((df.iloc[:100], df.iloc[100:])):
        part.to_csv(tmp_path / f"p{i}.csv", index=False)
    text = (tmp_path / "p1.csv").read_text().splitlines()
    text[5] = text[5].replace(text[5].split(",")[4], "oops") if text[5].split(",")[4] else text[5] + "oops"
    (tmp_path / "p1.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(ScoreFileError, match=r"p1.csv: line 6, column 'score': 'oops' is not a number"):
        read_long(str(tmp_path / "p*.csv"), chunks=10, **KW)
    (tmp_path / "p1.csv").unlink()
    df.iloc[100:].drop(columns="sensor").to_csv(tmp_path / "p1.csv", index=False)
    with pytest.raises(ScoreFileError, match=r"p1.csv: its columns differ .* missing: \['sensor'\]"):
        read_long(str(tmp_path / "p*.csv"), chunks=10, **KW)
    clash = df.iloc[100:].copy()
    clash.loc[clash.index[0], "subject"] = "somebody else"
    clash.loc[clash.probe == clash.probe.iloc[0], "subject"] = "somebody else"
    clash.to_csv(tmp_path / "p1.csv", index=False)
    if clash.probe.iloc[0] in set(df.probe.iloc[:100]):
        with pytest.raises(ScoreFileError, match="has two subjects in column 'subject'.*p0.csv.*p1.csv"):
            read_long(str(tmp_path / "p*.csv"), chunks=10, **KW)
    with pytest.raises(ScoreFileError, match="no column for score='s'"):
        read_long(str(tmp_path / "p*.csv"), chunks=10, score="s")
    with pytest.raises(ScoreFileError, match="failure= needs every comparison"):
        read_long(str(tmp_path / "p*.csv"), chunks=10, failure=-1)
    with pytest.raises(ScoreFileError, match="no file matches"):
        read_long(str(tmp_path / "q*.csv"), chunks=10)
    with pytest.raises(ScoreFileError, match="positive integer"):
        read_long(str(tmp_path / "p*.csv"), chunks=0)


# ------------------------------------------------------------------ bytes to the client
@pytest.fixture(scope="module")
def big_list():
    """1.2 M comparisons (9.6 MB of scores, 19 MB with the labels) in 24 partitions, 10% mated (VoxCeleb's share
    of target trials: 120,000 mated scores, more than counting.SPREAD_FROM)."""
    rng = np.random.default_rng(4)
    n = 1_200_000
    subject = rng.integers(3000, size=n)
    reference = np.where(rng.random(n) < 0.1, subject, rng.integers(3000, size=n))
    score = rng.normal(size=n) + 3.0 * (subject == reference)
    trials = bioxr.comparison_list(score, subject=subject.astype(np.int32),
                                   reference_subject=reference.astype(np.int32))
    return trials, trials.chunk({"comparison": 50_000})


def _list_bound(trials, lazy):
    """1% of the list, plus what any operating point needs whatever the list's size.

    The fixed allowance: the strided sample (``counting.sample_size``
    scores: a lazy list's is at least 50,000) and as many of the mated
    scores, and 64 KiB for the small counts and containers. Nothing grows
    with the mated comparisons: they stay on the workers (their positions
    and their scores), and only the windows of them an operating point
    needs travel.
    """
    n = trials.sizes["comparison"]
    n_sample = -(-n // max(1, n // counting.sample_size(lazy["score"].data)))
    list_bytes = sum(v.nbytes for v in trials.variables.values())
    return 0.01 * list_bytes + 2 * 8 * n_sample + (1 << 16), list_bytes


@pytest.mark.parametrize("what", ["eer", "fnmr_at_fmr", "fmr_at_fnmr"])
def test_client_receives_small_results_for_a_lazy_list(big_list, received, what):
    trials, lazy = big_list
    call = {"eer": verification.eer, "fnmr_at_fmr": lambda d: verification.fnmr_at_fmr(d, [1e-3, 1e-2]),
            "fmr_at_fnmr": lambda d: verification.fmr_at_fnmr(d, [0.01, 0.1])}[what]
    with dask.config.set(scheduler="threads"):
        got = call(lazy)
    bound, list_bytes = _list_bound(trials, lazy)
    assert len(received) >= 2  # the index pass, then the sample and the windows
    # the index pass sends counts per partition, not the mated positions (24,000 of them: 192 KB as int64)
    assert received[0] < 2048 * lazy["score"].data.numblocks[0], received[0]
    assert sum(received) < bound, (sum(received), bound, list_bytes)
    assert sum(received) < 0.1 * list_bytes
    xr.testing.assert_identical(got, call(trials))


# ------------------------------------------------------------------ a cluster
def test_lazy_list_on_a_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    df = _frame(n=4000, seed=5)
    (tmp_path / "trials").mkdir()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "trials" / "a.parquet",
                   row_group_size=500)
    memory = read_long(tmp_path / "trials" / "a.parquet", **KW)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    client = distributed.Client(cluster, set_as_default=False)
    try:
        with dask.config.set(scheduler=client), pytest.MonkeyPatch.context() as mp:
            mp.setattr(counting, "MIN_WINDOW_CELLS", 1 << 10)  # take the window paths on the workers
            mp.setattr(counting, "SPREAD_FROM", 1 << 8)  # and keep the mated scores there
            lazy = read_long(tmp_path / "trials", chunks=1000, **KW)  # each part read and checked on a worker
            for f in (verification.eer, lambda d: verification.fnmr_at_fmr(d, [0.01, 0.05]),
                      lambda d: verification.det_curve(d, failure_policy="nist")):
                expected = f(memory)
                xr.testing.assert_identical(f(lazy), expected)
    finally:
        client.close()
        cluster.close()
