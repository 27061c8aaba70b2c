"""Bytes that reach the client, and wall times, for a lazy Photohead cube: threaded, LocalCluster(2), in memory.

The EER, FNMR at FMR, the exact DET and the EER with its 1,000-replicate
subject-bootstrap interval on a lazily generated Photohead cube (default
200 subjects x 4 images x 80 collections against 800 references: 51 M
float32 scores, 205 MB), each computed three ways with identical results:

- dask's threaded scheduler on the lazy cube;
- a ``dask.distributed`` LocalCluster of 2 worker processes (1 thread each)
  on the same lazy cube (the blocks are generated on the workers);
- the cube generated in memory (time to generate it printed apart).

Bytes to the client: for the threaded scheduler, the ``dask.sizeof`` of
everything ``dask.compute`` (and ``dask.array.compute``, which xarray's
``.compute()`` calls) hands back (what ``dask.persist`` keeps stays in the
process: on one machine there is no other place); on the cluster, the
bytes the workers sent to anyone but another worker (their
``transfer_outgoing_log``: the client's gathers), which also counts what
xarray's ``.compute()`` pulls.

The bootstrap of a lazy cube counts its per-subject sufficient statistics
blockwise (:mod:`bioxr._core.blockstats`) and keeps them where they were
assembled, on a worker (``dask.persist``); the replicates and the interval
are computed there (:meth:`bioxr.bootstrap._stats._Stats.remote`), so the
client receives the grid's points, the subjects' codes, the replicates'
EERs and the point EER's own passes, never the statistics (printed for
scale: O(bins x pairs), a third of this cube). ``--scale K`` also runs the
interval on a cube of K times the collections (threaded scheduler only, in
a child process whose peak memory is printed).

    python benchmarks/scale_out.py [--collections 80] [--chunk 4] [--scale 4] [--replicates 1000]
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import subprocess
import sys
import time

import dask
import dask.array
import numpy as np
from dask.sizeof import sizeof

import bioxr
from bioxr import bootstrap, verification
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


STATS_FIELDS = ("grid", "units", "mated_errors", "attempts", "m_scores", "m_unit", "count_f32", "pair_a", "pair_c",
                "bin_starts", "bin_ids")


def _key(res):
    if isinstance(res, _Stats):  # every array of the statistics, byte for byte
        digest = hashlib.sha256()
        for name in STATS_FIELDS:
            a = np.asarray(getattr(res, name))
            digest.update(str(a.dtype).encode() + (a.astype(str) if a.dtype == object else a).tobytes())
        return digest.hexdigest()
    return tuple(np.asarray(res[v].values).tobytes() for v in res.data_vars)


def _held(stats) -> int:
    """Bytes of the statistics' arrays (what the bootstrap keeps in memory)."""
    return sum(a.nbytes for a in vars(stats).values() if isinstance(a, np.ndarray))


def _peak_resident() -> int:
    """This process's peak resident bytes: VmHWM (Linux; ``ru_maxrss`` would carry the parent's peak across exec)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _interval(cube, n_replicates: int):
    return bootstrap.eer_interval(cube, n_replicates=n_replicates, seed=1)


def _scale_child(args) -> None:
    """In a child process: the EER interval of a cube with ``--scale`` times the collections, threaded."""
    collections = args.collections * args.scale
    lazy = bioxr.simulate.photohead(n_subjects=args.subjects, n_images=4, n_collections=collections, seed=args.seed,
                                    chunks={"collection": args.chunk})
    with dask.config.set(scheduler="threads"), Received() as got:
        start = time.perf_counter()
        res = _interval(lazy, args.replicates)
        took = time.perf_counter() - start
    peak = _peak_resident()
    lo, hi = res.eer_interval.values
    print(f"{collections} collections: {lazy.size / 1e6:.0f} M scores, {lazy.nbytes / 1e6:.0f} MB, "
          f"{lazy.data.npartitions} chunks; EER {float(res.eer):.4f} [{lo:.4f}, {hi:.4f}] with "
          f"{args.replicates} replicates (threaded) in {took:.1f} s, client/cube {got.total / lazy.nbytes:.4f}, "
          f"peak resident {peak / 1e9:.2f} GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subjects", type=int, default=200)
    parser.add_argument("--collections", type=int, default=80)
    parser.add_argument("--chunk", type=int, default=4, help="collections per chunk")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replicates", type=int, default=1000, help="of the EER interval's subject bootstrap")
    parser.add_argument("--no-bootstrap", action="store_true", help="leave out the EER interval")
    parser.add_argument("--scale", type=int, default=0,
                        help="also the EER interval of a cube with this many times the collections (threaded)")
    parser.add_argument("--scale-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scale_child:
        return _scale_child(args)
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
        f"EER, {args.replicates} reps": lambda c: _interval(c, args.replicates),
    }
    if args.no_bootstrap:
        del jobs[f"EER, {args.replicates} reps"]
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
    held = _held(stats)
    print(f"the bootstrap's statistics (grid {stats.grid.size} thresholds, {stats.n_units} subjects, "
          f"{stats.count_f32.size / 1e6:.1f} M (bin, pair) counts) are {held / nbytes:.3f} x the cube: they stay on "
          "the workers, with the replicates")
    del eager, stats
    if args.scale:
        cmd = [sys.executable, __file__, "--scale-child", "--scale", str(args.scale), "--subjects", str(args.subjects),
               "--collections", str(args.collections), "--chunk", str(args.chunk), "--seed", str(args.seed),
               "--replicates", str(args.replicates)]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
