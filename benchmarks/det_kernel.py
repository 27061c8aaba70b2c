"""The DET without a sort (issue 12, deliverable 4), side by side with the machine's limits.

On 1e8 scores (1e5 probes x 1,000 references, 1e5 mated: the set-up of
``benchmarks/run.py``), float64 and float32, in one process. Every case
runs once per round, the rounds interleaved (a burst of load on the
machine slows every case alike), after a warm-up round (numba's
compilation is in the warm-up); the best round counts:

- ``np.sort`` of all the scores, the same sort in place in a buffer
  allocated once (a fresh output can cost as much as the sort), and one
  ``np.sum`` pass: the limits;
- the sort-based exact DET (``det_curve``, corners, through ``Pool.full``);
- the counted DET (``Pool.between``) on the NumPy path and on the numba
  path, and the kernel alone (``count_between``) on each; the numba kernel
  on one thread and on all of the process's cores (the default);

with the ratios new / the faster of the two sorts (target <= 0.5) and
new / ``np.sum`` (target <= 30), and a check that every curve equals the
sort-based one. Then the crossover: the DET of groups of 2**16 to 2**24
cells (1,000 references), sorted and counted, for
``bioxr.counting.MIN_BETWEEN_CELLS``.

    python benchmarks/det_kernel.py [--small] [--repeat 3] [--no-crossover]

``--small`` runs 1e6 scores (1e4 probes x 100 references) in seconds.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import xarray as xr

import bioxr
from bioxr import counting, verification
from bioxr._core import binning


def make(n_probes: int, n_refs: int, dtype, seed: int = 0) -> xr.DataArray:
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n_probes, n_refs))
    subject = np.arange(n_probes) % n_refs
    scores[np.arange(n_probes), subject] += 3.0
    return bioxr.score_cube(scores.astype(dtype, copy=False), subject=subject, reference_subject=np.arange(n_refs))


def rounds(cases: dict, repeat: int) -> dict:
    """Best time of each case over ``repeat`` interleaved rounds, after a warm-up round."""
    for fn in cases.values():
        fn()  # warm-up: page faults, numba's compilation
    times = {label: [] for label in cases}
    for _ in range(repeat):
        for label, fn in cases.items():
            start = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - start)
    return {label: min(t) for label, t in times.items()}


def det(cube, *, between: bool, engine: str | None = None, threads: int | None = None):
    default = counting.MIN_BETWEEN_CELLS
    counting.MIN_BETWEEN_CELLS = 0 if between else 1 << 62
    if engine:
        os.environ["BIOXR_KERNEL"] = engine
    if threads:
        os.environ["BIOXR_THREADS"] = str(threads)
    try:
        return verification.det_curve(cube)
    finally:
        os.environ.pop("BIOXR_KERNEL", None)
        os.environ.pop("BIOXR_THREADS", None)
        counting.MIN_BETWEEN_CELLS = default


def kernel(scores, mated, engine: str, threads: int | None = None):
    if threads:
        os.environ["BIOXR_THREADS"] = str(threads)
    try:
        return binning.count_between(scores, mated, minima=True, engine=engine)
    finally:
        os.environ.pop("BIOXR_THREADS", None)


def sort_in_place(scores: np.ndarray, buffer: np.ndarray) -> None:
    """``np.sort`` without its allocation: copy into a buffer already faulted in, sort there."""
    np.copyto(buffer, scores.reshape(-1))
    buffer.sort()


def run(n_probes: int, n_refs: int, dtype, repeat: int) -> None:
    cube = make(n_probes, n_refs, dtype)
    scores = cube.data
    mated = np.unique(scores[np.arange(n_probes), np.arange(n_probes) % n_refs].astype(np.float64))
    name = np.dtype(dtype).name
    print(f"\n{scores.size:.0e} {name} scores ({scores.nbytes / 2**30:.2f} GiB), {mated.size:.0e} distinct mated; "
          f"load average {os.getloadavg()[0]:.2f}")
    buffer = np.empty(scores.size, dtype=scores.dtype)  # the sort without a fresh 0.4-0.75 GiB allocation
    numba = binning.engine_available("numba")
    cores = binning._threads(scores.size)
    rows = {
        "np.sort of all scores": lambda: np.sort(scores, axis=None),
        "the same sort in place, buffer reused": lambda: sort_in_place(scores, buffer),
        "one np.sum pass": lambda: np.sum(scores),
        "det_curve, sort-based (Pool.full)": lambda: det(cube, between=False),
        "count_between alone, NumPy path": lambda: kernel(scores, mated, "numpy"),
        "det_curve, counted, NumPy path": lambda: det(cube, between=True, engine="numpy"),
    }
    if numba:
        rows["count_between alone, numba, 1 thread"] = lambda: kernel(scores, mated, "numba", 1)
        rows[f"count_between alone, numba, {cores} threads"] = lambda: kernel(scores, mated, "numba")
        rows["det_curve, counted, numba, 1 thread"] = lambda: det(cube, between=True, engine="numba", threads=1)
        rows[f"det_curve, counted, numba, {cores} threads"] = lambda: det(cube, between=True, engine="numba")
    times = rounds(rows, repeat)
    # the limit is the faster of the two sorts: a fresh allocation can cost as much as the sort on this VM
    sort = min(times["np.sort of all scores"], times["the same sort in place, buffer reused"])
    total = times["one np.sum pass"]
    print(f"sort: the faster of the two sorts below, {sort:.3f} s")
    print(f"| case ({name}) | time | / sort | / np.sum |")
    print("| --- | ---: | ---: | ---: |")
    for label, t in times.items():
        print(f"| {label} | {t:.3f} s | {t / sort:.2f}x | {t / total:.1f}x |")
    reference = det(cube, between=False)
    checks = {"det_curve, counted, NumPy path": ("numpy", None)}
    if numba:
        checks["det_curve, counted, numba, 1 thread"] = ("numba", 1)
        checks[f"det_curve, counted, numba, {cores} threads"] = ("numba", None)
    for label, (engine, threads) in checks.items():
        same = reference.identical(det(cube, between=True, engine=engine, threads=threads))
        new = times[label]
        print(f"{label}: equals the sort-based DET: {same}; {new / sort:.2f}x the sort "
              f"(target <= 0.5: {'met' if new <= 0.5 * sort else 'missed'}), {new / total:.1f}x np.sum "
              f"(target <= 30: {'met' if new <= 30 * total else 'missed'})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def crossover(dtype, repeat: int, n_refs: int = 1000) -> None:
    """The DET of one group, sorted and counted (default engine and threads), from 2**16 cells up."""
    print(f"\ncrossover ({np.dtype(dtype).name}, {n_refs} references, one group; load average "
          f"{os.getloadavg()[0]:.2f}):")
    print("| cells | sorted | counted | counted / sorted |")
    print("| ---: | ---: | ---: | ---: |")
    for log2 in (16, 18, 20, 22, 23, 24):
        cube = make(max(1, (1 << log2) // n_refs), n_refs, dtype, seed=log2)
        t = rounds({"sorted": lambda: det(cube, between=False), "counted": lambda: det(cube, between=True)},
                   repeat)
        print(f"| {cube.size:,} | {t['sorted'] * 1e3:.1f} ms | {t['counted'] * 1e3:.1f} ms | "
              f"{t['counted'] / t['sorted']:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1e6 scores instead of 1e8")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-crossover", action="store_true")
    args = parser.parse_args()
    shape = (10_000, 100) if args.small else (100_000, 1_000)
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores); numpy {np.__version__}; "
          f"numba: {'yes' if binning.engine_available('numba') else 'no'}; "
          f"MIN_BETWEEN_CELLS = 2**{counting.MIN_BETWEEN_CELLS.bit_length() - 1}")
    for dtype in (np.float64, np.float32):
        run(*shape, dtype, args.repeat)
    if not args.no_crossover:
        for dtype in (np.float64, np.float32):
            crossover(dtype, max(args.repeat, 5))
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
