"""Time the Photohead-style experiment at the paper's size (seed 000).

256 subjects x 4 images x 1440 collections against 1024 originals: 1.5e9
scores, generated and reduced to the outcome cube chunk by chunk, never held
at once; then the EER streamed over the same lazy cube. Prints the wall
times and the peak resident memory.

    python benchmarks/photohead_full.py [--chunk 8]
"""

from __future__ import annotations

import argparse
import resource
import time

import bioxr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunk", type=int, default=8, help="collections per chunk")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    cube = bioxr.simulate.photohead(256, 4, 1440, seed=args.seed, chunks={"collection": args.chunk})
    out = cube.bio.outcomes().compute()
    elapsed = time.perf_counter() - start
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    n_scores = cube.size
    print(f"scores: {n_scores:.3g} ({cube.nbytes / 2**30:.1f} GiB if held at once)")
    print(f"outcome cube: {dict(out.sizes)}, rank-1 rate {float((out.mated_rank_min == 1).mean()):.4f}")
    print(f"wall time: {elapsed:.1f} s (target < 60 s); peak RSS {peak_gb:.2f} GiB")
    start = time.perf_counter()
    eer = cube.bio.eer(method="interpolated")
    elapsed = time.perf_counter() - start
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"EER (interpolated) streamed over the lazy cube: {eer.eer.item():.4f} in {elapsed:.1f} s; "
          f"peak RSS {peak_gb:.2f} GiB")


if __name__ == "__main__":
    main()
