"""Bytes that reach the client, and wall times, for a lazy Photohead cube: threaded, LocalCluster(2), in memory.

The EER, FNMR at FMR, the exact DET and the bootstrap's per-subject sufficient statistics
on a lazily generated Photohead cube (default 200 subjects x 4 images x 80
collections against 800 references: 51 M float32 scores, 205 MB), each
computed three ways with identical results:

- dask's threaded scheduler on the lazy cube;
- a ``dask.distributed`` LocalCluster of 2 worker processes (1 thread each)
  on the same lazy cube (the blocks are generated on the workers);
- the cube generated in memory (time to generate it printed apart).

Bytes to the client: for the threaded scheduler, the ``dask.sizeof`` of
everything ``dask.compute`` (and ``dask.array.compute``, which xarray's
``.compute()`` calls) hands back; on the cluster, the bytes the workers
sent to anyone but another worker (their ``transfer_outgoing_log``: the
client's gathers), which also counts what xarray's ``.compute()`` pulls.

    python benchmarks/scale_out.py [--collections 80] [--chunk 4]
"""

from __future__ import annotations

import argparse
import time

import dask
import dask.array
import numpy as np
from dask.sizeof import sizeof

import bioxr
from bioxr import verification
from bioxr.bootstrap._stats import _Stats


class Received:
    """Sum of dask.sizeof over every result dask.compute hands back (threaded scheduler)."""

    def __init__(self):
        self.total = 0
        self._saved = (dask.compute, dask.array.compute)

    def __enter__(self):
        base = self._saved[0]

        def compute(*args, **kwargs):
            out = base(*args, **kwargs)
            self.total += sizeof(out)
            return out

        dask.compute = dask.array.compute = compute
        return self

    def __exit__(self, *exc):
        dask.compute, dask.array.compute = self._saved


def _to_client(client) -> int:
    workers = set(client.scheduler_info()["workers"])
    logs = client.run(lambda dask_worker: [(e["who"], e["total"]) for e in dask_worker.transfer_outgoing_log])
    return sum(total for log in logs.values() for who, total in log if who not in workers)


def _clear(client):
    client.run(lambda dask_worker: dask_worker.transfer_outgoing_log.clear())


def _key(res):
    if isinstance(res, _Stats):
        return (float(res.mated_errors.sum()), float(res.attempts.sum()), res.grid.tobytes())
    return tuple(np.asarray(res[v].values).tobytes() for v in res.data_vars)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subjects", type=int, default=200)
    parser.add_argument("--collections", type=int, default=80)
    parser.add_argument("--chunk", type=int, default=4, help="collections per chunk")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-bootstrap", action="store_true", help="leave out the bootstrap statistics (not blockwise)")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    shape = dict(n_subjects=args.subjects, n_images=4, n_collections=args.collections, seed=args.seed)
    lazy = bioxr.simulate.photohead(**shape, chunks={"collection": args.chunk})
    nbytes = lazy.nbytes
    print(f"cube: {lazy.size / 1e6:.1f} M float32 scores, {nbytes / 1e6:.1f} MB, {lazy.data.npartitions} chunks "
          f"of {args.chunk} collections")
    jobs = {
        "EER (rocch)": lambda c: verification.eer(c),
        "FNMR@FMR 1e-2, 1e-3": lambda c: verification.fnmr_at_fmr(c, [1e-2, 1e-3]),
        "exact DET (corners)": lambda c: verification.det_curve(c),
        "bootstrap statistics": lambda c: _Stats(c, None, "subject"),
    }
    if args.no_bootstrap:
        del jobs["bootstrap statistics"]
    rows = {name: {} for name in jobs}
    results = {name: {} for name in jobs}
    with dask.config.set(scheduler="threads"):
        for name, job in jobs.items():
            with Received() as got:
                start = time.perf_counter()
                results[name]["threads"] = _key(job(lazy))
                rows[name]["threads"] = (time.perf_counter() - start, got.total)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40)
    client = Client(cluster, set_as_default=False)
    client.run(lambda: __import__("bioxr"))
    with dask.config.set(scheduler=client):
        for name, job in jobs.items():
            _clear(client)
            start = time.perf_counter()
            results[name]["cluster"] = _key(job(lazy))
            rows[name]["cluster"] = (time.perf_counter() - start, _to_client(client))
    client.close()
    cluster.close()
    start = time.perf_counter()
    eager = bioxr.simulate.photohead(**shape)
    generate = time.perf_counter() - start
    for name, job in jobs.items():
        start = time.perf_counter()
        results[name]["memory"] = _key(job(eager))
        rows[name]["memory"] = (time.perf_counter() - start, None)
    print(f"in memory: the cube generated in {generate:.1f} s (not in the times below)")
    print(f"{'':22s} {'threaded':>20s} {'LocalCluster(2)':>22s} {'in memory':>10s} {'same':>5s}")
    print(f"{'':22s} {'s':>7s} {'client/cube':>12s} {'s':>9s} {'client/cube':>12s} {'s':>10s}")
    for name in jobs:
        (t1, b1), (t2, b2), (t3, _) = (rows[name][k] for k in ("threads", "cluster", "memory"))
        same = len(set(results[name].values())) == 1
        print(f"{name:22s} {t1:7.1f} {b1 / nbytes:12.4f} {t2:9.1f} {b2 / nbytes:12.4f} {t3:10.1f} {str(same):>5s}")
    if args.no_bootstrap:
        return
    stats = _Stats(eager, None, "subject")
    held = sum(a.nbytes for a in vars(stats).values() if isinstance(a, np.ndarray))
    print(f"the bootstrap statistics themselves (grid {stats.grid.size} thresholds, {stats.n_units} subjects, "
          f"{stats.count_f32.size / 1e6:.1f} M (bin, pair) counts): {held / nbytes:.3f} x the cube")


if __name__ == "__main__":
    main()
