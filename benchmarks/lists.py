"""Scale of comparison lists: a VoxCeleb-like trial list, read and evaluated in bounded memory.

A trial list of N comparisons among S samples (utterances) of P speakers,
density N / S^2 about 2.5e-4 as in VoxCeleb, 10% target trials, written as
Parquet. Each stage runs in a fresh process and reports its peak memory
above the interpreter's baseline (imports done), against the list's own
size (the bytes of its arrays), and its time against ``np.sort`` of the
same scores, measured in the same process.

Times are the best of three calls. Prints ratios; asserts nothing (targets: peak at most 3x the list, the EER
within 3x ``np.sort``). Usage::

    python benchmarks/lists.py            # 1e7 trials among 2e5 samples
    python benchmarks/lists.py --n 1e6    # a quicker run
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mib() -> float:
    """The resident high-water mark (VmHWM), reset by :func:`_reset_peak`."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the imports' own peak must not hide (or count in) the stage's
    except OSError:  # pragma: no cover - not Linux
        pass


def _best(call, repeats: int = 3) -> float:
    """Best of ``repeats`` timed calls (the first also warms the caches)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return min(times)


def make(path: Path, n: int, n_samples: int, n_speakers: int, seed: int = 0) -> None:
    import pandas as pd

    rng = np.random.default_rng(seed)
    speaker_of = rng.integers(0, n_speakers, n_samples)
    by_speaker = [np.flatnonzero(speaker_of == s) for s in range(n_speakers)]
    probe = rng.integers(0, n_samples, n)
    target = rng.random(n) < 0.1
    ref = rng.integers(0, n_samples, n)
    # target trials: a reference of the probe's own speaker
    sp = speaker_of[probe[target]]
    ref[target] = [by_speaker[s][rng.integers(len(by_speaker[s]))] for s in sp]
    same = speaker_of[probe] == speaker_of[ref]
    score = rng.normal(0, 1, n) + 2.5 * same + rng.normal(0, 0.7, n_speakers)[speaker_of[probe]] * same
    frame = pd.DataFrame({"probe_id": probe, "reference_id": ref, "subject": speaker_of[probe],
                          "reference_subject": speaker_of[ref], "score": score.astype(np.float64)})
    frame = frame.drop_duplicates(["probe_id", "reference_id"])  # a trial list holds each pair once
    frame.to_parquet(path, index=False)


def stage(name: str, path: Path) -> dict:
    import bioxr  # noqa: F401  (imports before the baseline)
    import pyarrow.parquet  # noqa: F401

    _reset_peak()
    base = _rss_mib()
    out: dict = {"stage": name}
    t0 = time.perf_counter()
    import bioxr.io

    trials = bioxr.io.read_long(path, probe="probe_id", reference="reference_id", probe_subject="subject",
                                reference_subject="reference_subject", sample_ids=True, layout="list")
    out["read_s"] = time.perf_counter() - t0
    out["list_mib"] = sum(v.nbytes for v in trials.variables.values()) / 2**20
    out["n"] = int(trials.sizes["comparison"])
    scores = np.asarray(trials["score"].values)
    out["sort_s"] = _best(lambda: np.sort(scores))
    t0 = time.perf_counter()
    if name == "eer":
        for method in ("rocch", "interpolated", "nearest"):
            out[f"eer_{method}_s"] = _best(lambda: trials.bio.eer(method=method))
            out[f"eer_{method}"] = float(trials.bio.eer(method=method).eer)
        out["fnmr_at_fmr_s"] = _best(lambda: trials.bio.fnmr_at_fmr([1e-2, 1e-3, 1e-4]))
        out["det_s"] = _best(lambda: trials.bio.det_curve())
        out["det_points"] = int(trials.bio.det_curve().sizes["threshold"])
    elif name == "bootstrap":
        ci = trials.bio.eer_interval(method="interpolated", n_replicates=1000, seed=0)
        out["interval"] = [float(v) for v in ci.eer_interval.values]
        out["n_units"] = int(ci.attrs["n_units"])
    out["stage_s"] = time.perf_counter() - t0
    out["peak_above_baseline_mib"] = _peak_mib() - base
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7, help="trials (default 1e7)")
    parser.add_argument("--samples", type=float, default=None, help="samples (default sqrt(n / 2.5e-4))")
    parser.add_argument("--speakers", type=int, default=4000)
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, Path(args.path))))
        return
    n = int(args.n)
    n_samples = int(args.samples or np.sqrt(n / 2.5e-4))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "trials.parquet")
        make(path, n, n_samples, args.speakers)
        print(f"trial list: {n:,} trials among {n_samples:,} samples of {args.speakers:,} speakers "
              f"(density {n / n_samples**2:.1e}); Parquet {path.stat().st_size / 2**20:.0f} MiB")
        for name in ("eer", "bootstrap"):
            run = subprocess.run([sys.executable, __file__, "--stage", name, "--path", str(path)],
                                 capture_output=True, text=True, check=True)
            r = json.loads(run.stdout.strip().splitlines()[-1])
            ratio = r["peak_above_baseline_mib"] / r["list_mib"]
            print(f"\n[{name}] list {r['list_mib']:.0f} MiB, read in {r['read_s']:.2f} s; np.sort of its scores "
                  f"{r['sort_s']:.2f} s")
            if name == "eer":
                for m in ("rocch", "interpolated", "nearest"):
                    print(f"  EER {m:>12}: {r[f'eer_{m}']:.4%} in {r[f'eer_{m}_s']:.2f} s "
                          f"= {r[f'eer_{m}_s'] / r['sort_s']:.2f}x np.sort (target <= 3x)")
                print(f"  FNMR at FMR 1e-2..1e-4: {r['fnmr_at_fmr_s']:.2f} s = "
                      f"{r['fnmr_at_fmr_s'] / r['sort_s']:.2f}x np.sort")
                print(f"  DET ({r['det_points']:,} corners): {r['det_s']:.2f} s = {r['det_s'] / r['sort_s']:.2f}x np.sort")
            else:
                lo, hi = r["interval"]
                print(f"  1,000-replicate subject-bootstrap EER interval over {r['n_units']:,} speakers: "
                      f"{lo:.4%} to {hi:.4%} in {r['stage_s']:.1f} s")
            print(f"  peak memory above baseline (read + evaluate): {r['peak_above_baseline_mib']:.0f} MiB "
                  f"= {ratio:.2f}x the list (target <= 3x)")


if __name__ == "__main__":
    main()
