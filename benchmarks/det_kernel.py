"""The DET without a sort (issue 12, deliverable 4), side by side with the machine's limits.

On 1e8 scores (1e5 probes x 1,000 references, 1e5 mated: the set-up of
``benchmarks/run.py``), float64 and float32, in one process, best of 3
after a warm-up (numba's compilation is in the warm-up):

- ``np.sort`` of all the scores and one ``np.sum`` pass: the limits;
- the sort-based exact DET (``det_curve``, corners, through ``Pool.full``);
- the counted DET (``Pool.between``) on the NumPy path and on the numba
  path, and the kernel alone (``count_between``) on each;

with the ratios new / ``np.sort`` (target <= 0.5) and new / ``np.sum``
(target <= 30), and a check that every curve equals the sort-based one.

    python benchmarks/det_kernel.py [--small] [--repeat 3]

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


def best(fn, repeat: int) -> float:
    fn()  # warm-up: page faults, numba's compilation
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def det(cube, *, between: bool, engine: str | None = None):
    default = counting.MIN_BETWEEN_CELLS
    counting.MIN_BETWEEN_CELLS = 1 << 18 if between else 1 << 62
    if engine:
        os.environ["BIOXR_KERNEL"] = engine
    try:
        return verification.det_curve(cube)
    finally:
        os.environ.pop("BIOXR_KERNEL", None)
        counting.MIN_BETWEEN_CELLS = default


def run(n_probes: int, n_refs: int, dtype, repeat: int) -> None:
    cube = make(n_probes, n_refs, dtype)
    scores = cube.data
    mated = np.unique(scores[np.arange(n_probes), np.arange(n_probes) % n_refs].astype(np.float64))
    name = np.dtype(dtype).name
    print(f"\n{scores.size:.0e} {name} scores ({scores.nbytes / 2**30:.2f} GiB), {mated.size:.0e} distinct mated")
    engines = ["numpy"] + (["numba"] if binning.engine_available("numba") else [])
    rows = {
        "np.sort of all scores": lambda: np.sort(scores, axis=None),
        "one np.sum pass": lambda: np.sum(scores),
        "det_curve, sort-based (Pool.full)": lambda: det(cube, between=False),
    }
    for engine in engines:
        rows[f"count_between alone, {engine}"] = lambda e=engine: binning.count_between(
            scores, mated, minima=True, engine=e)
        rows[f"det_curve, counted (Pool.between), {engine}"] = lambda e=engine: det(cube, between=True, engine=e)
    times = {label: best(fn, repeat) for label, fn in rows.items()}
    sort, total = times["np.sort of all scores"], times["one np.sum pass"]
    print(f"| case ({name}) | time | / np.sort | / np.sum |")
    print("| --- | ---: | ---: | ---: |")
    for label, t in times.items():
        print(f"| {label} | {t:.3f} s | {t / sort:.2f}x | {t / total:.1f}x |")
    reference = det(cube, between=False)
    for engine in engines:
        same = reference.identical(det(cube, between=True, engine=engine))
        new = times[f"det_curve, counted (Pool.between), {engine}"]
        print(f"{engine}: counted DET equals the sort-based one: {same}; "
              f"{new / sort:.2f}x np.sort (target <= 0.5: {'met' if new <= 0.5 * sort else 'missed'}), "
              f"{new / total:.1f}x np.sum (target <= 30: {'met' if new <= 30 * total else 'missed'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1e6 scores instead of 1e8")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    shape = (10_000, 100) if args.small else (100_000, 1_000)
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores); numpy {np.__version__}; "
          f"numba: {'yes' if binning.engine_available('numba') else 'no'}")
    for dtype in (np.float64, np.float32):
        run(*shape, dtype, args.repeat)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
