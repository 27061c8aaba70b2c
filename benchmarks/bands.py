"""Coverage of simultaneous bands (issue 9, deliverable 7): the whole true curve inside, experiment by experiment.

Each cell draws many independent evaluations from a model whose true
curves are known, bootstraps each evaluation, and counts the experiments
whose band holds the whole true curve (every grid point at once):

- ``iid``: non-mated scores N(0, 1) and mated scores N(2, 1), ``n`` of
  each, the nonparametric bootstrap of the scores (written here: the
  resampled scores fall into the bins between thresholds with multinomial
  counts of the observed bin shares, which is what resampling and
  recounting them gives). True FMR(t) = 1 - Phi(t), FNMR(t) = Phi(t - 2).
- ``subjects``: 100 or 300 subjects x 4 mated attempts, score 2 + u_i + e_ij
  with a subject effect u ~ N(0, sd_u^2), sd_u 0.7 or 0.3: the subject
  bootstrap (whole subjects resampled, multinomial weights) of the FNMR
  curve. True FNMR(t) = Phi((t - 2) / sqrt(1 + sd_u^2)).

Columns: family-wise coverage of the simultaneous band for one rate curve
(FMR, or FNMR in the subjects cell) and for both rates of the DET together
(one joint band over 60 points), the same for the 95% pointwise percentile
band, the joint band with the pointwise band as its floor, the mean
critical value c against z, and the share of experiments whose simultaneous
band (without floor) contains the percentile band at every point. Seeded;
the binomial standard error of a coverage of 0.95 over E experiments is
sqrt(0.95 * 0.05 / E) (0.005 at 2,000).

    python benchmarks/bands.py               # 2,000 experiments a cell, B = 1,000
    python benchmarks/bands.py --quick       # 300 experiments a cell
    python benchmarks/bands.py --cells 3 4   # some cells only (numbered from 0)

Its latest output is in ``benchmarks/BANDS.md``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import xarray as xr
from scipy.special import ndtr

from bioxr._core import FewReplicatesWarning, simultaneous_band

LEVEL = 0.95


def _iid(rng, E, n, t, B, mu=2.0):
    """Replicates (B, E, 2, T) and points (E, 2, T) of (FMR, FNMR) from the score bootstrap."""
    R = np.empty((B, E, 2, t.size))
    P = np.empty((E, 2, t.size))
    for e in range(E):
        for r, (scores, accept) in enumerate(((rng.normal(0, 1, n), True), (rng.normal(mu, 1, n), False))):
            bins = np.searchsorted(t, scores, side="right")  # score >= t_j  iff  j < bin
            share = np.bincount(bins, minlength=t.size + 1) / n
            counts = rng.multinomial(n, share, size=B)  # the bins of the resampled scores
            above = counts[:, ::-1].cumsum(1)[:, ::-1][:, 1:] / n  # share >= t_j
            point = share[::-1].cumsum()[::-1][1:]
            R[:, e, r] = above if accept else 1 - above
            P[e, r] = point if accept else 1 - point
    truth = np.stack([1 - ndtr(t), ndtr(t - mu)])
    return R, P, truth, {"fmr": n, "fnmr": n}


def _subjects(rng, E, n_subjects, t, B, mu=2.0, sd_u=0.7, m=4):
    """FNMR replicates from the subject bootstrap (B, E, 1, T), with clustered attempts."""
    R = np.empty((B, E, 1, t.size))
    P = np.empty((E, 1, t.size))
    for e in range(E):
        scores = mu + rng.normal(0, sd_u, (n_subjects, 1)) + rng.normal(0, 1, (n_subjects, m))
        errors = (scores[:, :, None] < t).sum(1).astype(float)  # (subjects, T)
        w = rng.multinomial(n_subjects, np.full(n_subjects, 1 / n_subjects), size=B).astype(float)
        R[:, e, 0] = (w @ errors) / (w.sum(1, keepdims=True) * m)
        P[e, 0] = errors.sum(0) / (n_subjects * m)
    truth = ndtr((t - mu) / np.sqrt(1 + sd_u**2))[None]
    return R, P, truth, {"fnmr": n_subjects}


def _inside(band: np.ndarray, truth: np.ndarray, axes) -> np.ndarray:
    return ((band[..., 0] <= truth) & (truth <= band[..., 1])).all(axis=axes)


def cell(kind, E, n, t, B, seed, scale="probit", studentise="fixed", chunk=100, sd_u=0.7):
    rng = np.random.default_rng(seed)
    hits = {k: 0 for k in ("one", "one_pw", "joint", "joint_pw", "joint_floor", "contains")}
    cs, zs = [], []
    for s0 in range(0, E, chunk):
        e = min(chunk, E - s0)
        R, P, truth, counts = (_iid(rng, e, n, t, B) if kind == "iid" else _subjects(rng, e, n, t, B, sd_u=sd_u))
        rates = list(counts)
        coords = {"rate": rates, "threshold": t}
        reps = xr.DataArray(R, dims=("replicate", "experiment", "rate", "threshold"), coords=coords)
        point = xr.DataArray(P, dims=("experiment", "rate", "threshold"), coords=coords)
        trials = xr.DataArray([float(counts[r]) for r in rates], dims="rate", coords={"rate": rates})
        a = (1 - LEVEL) / 2
        pw = np.moveaxis(np.quantile(R, [a, 1 - a], axis=0), 0, -1)  # (E, rate, T, 2)
        floor = xr.DataArray(pw, dims=("experiment", "rate", "threshold", "bound"),
                             coords={**coords, "bound": ["lower", "upper"]})
        opts = dict(level=LEVEL, scale=scale, studentise=studentise)
        one = simultaneous_band(reps.isel(rate=0), point.isel(rate=0), along="threshold", n=trials.isel(rate=0),
                                **opts).values
        joint = simultaneous_band(reps, point, along=("rate", "threshold"), n=trials, **opts)
        floored = simultaneous_band(reps, point, along=("rate", "threshold"), n=trials, floor=floor, **opts).values
        cs += list(np.atleast_1d(joint.attrs["critical_value"]))
        zs.append(joint.attrs["pointwise_z"])
        jv = joint.values
        hits["one"] += int(_inside(one, truth[0], 1).sum())
        hits["one_pw"] += int(_inside(pw[:, 0], truth[0], 1).sum())
        hits["joint"] += int(_inside(jv, truth, (1, 2)).sum())
        hits["joint_pw"] += int(_inside(pw, truth, (1, 2)).sum())
        hits["joint_floor"] += int(_inside(floored, truth, (1, 2)).sum())
        contains = (jv[..., 0] <= pw[..., 0] + 1e-12) & (jv[..., 1] >= pw[..., 1] - 1e-12)
        hits["contains"] += int(contains.all(axis=(1, 2)).sum())
    out = {k: v / E for k, v in hits.items()}
    out["c"], out["z"] = float(np.mean(cs)), float(np.mean(zs))
    return out


CELLS = [
    # kind, n (scores a side, or subjects), thresholds, subject SD, label
    ("iid", 200, np.linspace(0.3, 1.7, 30), 0.0, "iid, 200 + 200 scores, rates 4.5%-38%"),
    ("iid", 200, np.linspace(-1.0, 3.0, 30), 0.0, "iid, 200 + 200 scores, rates 0.13%-84% (zero errors in the tails)"),
    ("iid", 2000, np.linspace(-1.0, 3.0, 30), 0.0, "iid, 2,000 + 2,000 scores, rates 0.13%-84%"),
    ("subjects", 100, np.linspace(0.0, 3.0, 30), 0.7, "subjects, 100 x 4 attempts, subject SD 0.7 (FNMR 5%-79%)"),
    ("subjects", 100, np.linspace(0.0, 3.0, 30), 0.3, "subjects, 100 x 4 attempts, subject SD 0.3"),
    ("subjects", 300, np.linspace(0.0, 3.0, 30), 0.7, "subjects, 300 x 4 attempts, subject SD 0.7"),
]


def main(quick: bool = False, cells=None) -> None:
    E = 300 if quick else 2000
    B = 1000
    warnings.simplefilter("ignore", FewReplicatesWarning)
    print(f"Simultaneous bands at {LEVEL:.0%}: family-wise coverage over {E:,} experiments a cell, B = {B:,} "
          f"(binomial SE at 0.95: {np.sqrt(LEVEL * (1 - LEVEL) / E):.3f})\n")
    print("| cell | scale, studentise | one curve: sim | pointwise | both rates: sim | pointwise | sim + floor "
          "| mean c (z) | sim contains pointwise |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k, (kind, n, t, sd_u, label) in enumerate(CELLS):
        if cells is not None and k not in cells:
            continue
        variants = [("probit", "fixed"), ("probit", "replicate")] + ([("logit", "replicate")] if k == 1 else [])
        for scale, studentise in variants:
            start = time.perf_counter()
            r = cell(kind, E, n, t, B, seed=100 + k, scale=scale, studentise=studentise, sd_u=sd_u)
            both = ("- | - | -" if kind == "subjects"
                    else f"{r['joint']:.3f} | {r['joint_pw']:.3f} | {r['joint_floor']:.3f}")
            print(f"| {label} | {scale}, {studentise} | {r['one']:.3f} | {r['one_pw']:.3f} | {both} | "
                  f"{r['c']:.2f} ({r['z']:.2f}) | {r['contains']:.3f} |  <!-- {time.perf_counter() - start:.0f} s -->",
                  flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 experiments a cell")
    parser.add_argument("--cells", type=int, nargs="+", help="the cells to run, numbered from 0")
    args = parser.parse_args()
    main(args.quick, args.cells)
