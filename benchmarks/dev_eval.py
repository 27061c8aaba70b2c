"""Coverage of the evaluation-side intervals of bioxr.deveval.dev_eval at a fixed threshold.

The threshold is held fixed (the intervals are for the evaluation rates at
that threshold), so the truth is known in closed form for the simulator:
non-mated N(0, 1), mated N(3 + u_s, 1) with u_s ~ N(0, subject_sd).

    python benchmarks/dev_eval.py [--experiments 400] [--replicates 1000]

Prints, per cell, the share of experiments whose FMR, FNMR and HTER
intervals hold the true rates.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import norm

import bioxr
from bioxr import deveval

CELLS = [  # (subjects, samples, subject_sd, threshold, interval)
    (60, 3, 0.7, 1.8, "subject"),
    (200, 2, 0.7, 2.3, "subject"),
    (200, 2, 0.0, 2.3, "subject"),
    (200, 2, 0.0, 2.3, "binomial"),
    (200, 2, 0.7, 2.3, "binomial"),
]


def truth(t, sd):
    fmr = norm.sf(t)
    fnmr = norm.cdf((t - 3.0) / np.sqrt(1 + sd**2))
    return fmr, fnmr, (fmr + fnmr) / 2


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=400)
    ap.add_argument("--replicates", type=int, default=1000)
    args = ap.parse_args(argv)
    dev = bioxr.simulate.gaussian(n_subjects=10, seed=0)
    print(f"{'subjects':>8} {'samples':>7} {'sd':>4} {'t':>4} {'interval':>9}  {'FMR':>6} {'FNMR':>6} {'HTER':>6}")
    for n, m, sd, t, kind in CELLS:
        f0, m0, h0 = truth(t, sd)
        hits = np.zeros(3)
        for e in range(args.experiments):
            ev = bioxr.simulate.gaussian(n_subjects=n, n_samples=m, subject_sd=sd, seed=10_000 + e)
            r = deveval.dev_eval(dev, ev, criterion="threshold", value=t, interval=kind,
                                 n_replicates=args.replicates, seed=e)
            for i, (name, true) in enumerate((("fmr", f0), ("fnmr", m0), ("hter", h0))):
                lo, hi = r[f"{name}_interval"].values[0]
                hits[i] += lo <= true <= hi
        cov = hits / args.experiments
        print(f"{n:>8} {m:>7} {sd:>4} {t:>4} {kind:>9}  {cov[0]:6.3f} {cov[1]:6.3f} {cov[2]:6.3f}", flush=True)


if __name__ == "__main__":
    main()
