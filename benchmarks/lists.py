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

A lazy list larger than memory: ``--lazy 1e8`` writes a partitioned Parquet
dataset (one file per ``--file-rows`` trials, row groups of 1e6; each file
holds its own probes, so no pair repeats across files), reads it with
``read_long(..., chunks=1_000_000)`` and computes the EER and FNMR at FMR
on dask's threaded scheduler, never loading the list: it prints the time
of each step, the peak memory above the baseline against the list's size
(what it would take in memory) and the bytes handed back to the client
(``dask.sizeof`` of every ``dask.compute`` result) against the list.
``--lazy 1e6 --check`` also reads the same rows in memory and compares.
``--replicates 1000`` adds the EER's subject-bootstrap interval on the
lazy list, with its own peak memory and client bytes: its sufficient
statistics are O(threshold bins x speaker pairs), whatever the number of
trials, so ``--speakers`` sets their size::

    python benchmarks/lists.py --lazy 1e8
    python benchmarks/lists.py --lazy 2e6 --check --replicates 200
    python benchmarks/lists.py --lazy 1e9 --speakers 500 --replicates 1000 --data /big/disk/trials1e9

``--data DIR`` writes the dataset there and keeps it; a later run with the
same ``--lazy``, ``--file-rows`` and ``--speakers`` reads it again (1e9
trials: 16,195 MiB, about 10 minutes to write).
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


def make_parts(root: Path, n: int, file_rows: int, n_speakers: int, seed: int = 0) -> int:
    """A partitioned Parquet dataset of ``n`` trials, written one file at a time (bounded memory); its bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    speaker_of = rng.integers(0, n_speakers, 200_000)  # the references: 200,000 utterances
    by_speaker = [np.flatnonzero(speaker_of == s) for s in range(n_speakers)]
    offset = 0
    for f in range(-(-n // file_rows)):
        m = min(file_rows, n - f * file_rows)
        n_probes = max(m // 500, 1)  # 500 trials per probe utterance: its own probes in each file
        probe_speaker = rng.integers(0, n_speakers, n_probes)
        probe = rng.integers(0, n_probes, m)
        target = rng.random(m) < 0.1
        ref = rng.integers(0, speaker_of.size, m)
        sp = probe_speaker[probe[target]]
        ref[target] = [by_speaker[s][rng.integers(len(by_speaker[s]))] for s in sp]
        same = probe_speaker[probe] == speaker_of[ref]
        score = rng.normal(0, 1, m) + 2.5 * same
        key = probe.astype(np.int64) * speaker_of.size + ref
        _, first = np.unique(key, return_index=True)
        keep = np.sort(first)  # a trial list holds each pair once
        table = pa.table({"probe_id": probe[keep] + offset + 10**9, "reference_id": ref[keep],
                          "subject": probe_speaker[probe[keep]], "reference_subject": speaker_of[ref[keep]],
                          "score": score[keep]})
        pq.write_table(table, root / f"part-{f:05d}.parquet", row_group_size=1_000_000)
        offset += n_probes
    return sum(p.stat().st_size for p in root.iterdir())


class _Received:
    """Sum of dask.sizeof over every result dask hands back to the caller (as tests/test_lazy_lists.py)."""

    def __init__(self):
        import dask
        import dask.base

        self.sizes, self._saved = [], dask.base.compute

    def __enter__(self):
        import dask
        import dask.base
        from dask.sizeof import sizeof

        base = self._saved

        def counted(*args, **kwargs):
            out = base(*args, **kwargs)
            self.sizes.append(sizeof(out))
            return out

        dask.compute = dask.base.compute = counted
        return self

    def __exit__(self, *exc):
        import dask
        import dask.base

        dask.compute = dask.base.compute = self._saved


def lazy_stage(root: Path, check: bool, replicates: int = 0) -> dict:
    import dask

    import bioxr  # noqa: F401  (imports before the baseline)
    import bioxr.bootstrap
    import bioxr.io
    import pyarrow.parquet  # noqa: F401

    _reset_peak()
    base = _rss_mib()
    out: dict = {"stage": "lazy"}
    kw = dict(probe="probe_id", reference="reference_id", probe_subject="subject",
              reference_subject="reference_subject", sample_ids=True, layout="list")
    with dask.config.set(scheduler="threads"), _Received() as received:
        t0 = time.perf_counter()
        trials = bioxr.io.read_long(root, chunks=1_000_000, **kw)
        out["read_s"] = time.perf_counter() - t0
        out["read_client"] = sum(received.sizes)
        out["n"] = int(trials.sizes["comparison"])
        out["partitions"] = int(trials["score"].data.numblocks[0])
        # what the list would take in memory: its arrays' bytes (object labels: 8 bytes a pointer, not counted)
        out["list_mib"] = sum(v.dtype.itemsize * out["n"] for v in trials.variables.values()) / 2**20
        results = {}
        for name, call in (("eer", lambda d: bioxr.verification.eer(d)),
                           ("fnmr_at_fmr", lambda d: bioxr.verification.fnmr_at_fmr(d, [1e-2, 1e-3]))):
            received.sizes.clear()
            t0 = time.perf_counter()
            results[name] = call(trials)
            out[f"{name}_s"] = time.perf_counter() - t0
            out[f"{name}_client"] = sum(received.sizes)
            out[f"{name}_passes"] = len(received.sizes)
        out["eer"] = float(results["eer"].eer)
        out["fnmr"] = [float(v) for v in results["fnmr_at_fmr"].fnmr.values]
        out["peak_above_baseline_mib"] = _peak_mib() - base
        if replicates:  # the subject-bootstrap interval, its own peak (the high-water mark reset)
            import gc

            gc.collect()
            _reset_peak()
            start_rss = _rss_mib()
            received.sizes.clear()
            t0 = time.perf_counter()
            results["interval"] = bioxr.bootstrap.eer_interval(trials, n_replicates=replicates, seed=0)
            out["interval_s"] = time.perf_counter() - t0
            out["interval_client"] = sum(received.sizes)
            out["interval"] = [float(v) for v in results["interval"].eer_interval.values]
            out["n_units"] = int(results["interval"].attrs["n_units"])
            out["interval_peak_above_baseline_mib"] = _peak_mib() - base
            out["interval_start_mib"] = start_rss - base
    if check:  # the same rows in memory: the same results
        import xarray as xr

        memory = trials.compute()
        calls = [("eer", lambda d: bioxr.verification.eer(d)),
                 ("fnmr_at_fmr", lambda d: bioxr.verification.fnmr_at_fmr(d, [1e-2, 1e-3]))]
        if replicates:
            calls.append(("interval", lambda d: bioxr.bootstrap.eer_interval(d, n_replicates=replicates, seed=0)))
        out["same"] = all(xr.Dataset.identical(call(memory), results[name]) for name, call in calls)
    return out


def _lazy_main(n: int, file_rows: int, speakers: int, check: bool, replicates: int = 0, data=None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(data) if data else Path(tmp, "trials")
        if data and root.exists():  # written by an earlier run with the same arguments (its stamp says so)
            stamp = json.loads((root / "_made.json").read_text())
            if stamp != {"n": n, "file_rows": file_rows, "speakers": speakers}:
                raise SystemExit(f"{root} holds {stamp}, not these arguments: remove it or pick another --data")
            size = sum(p.stat().st_size for p in root.glob("*.parquet"))
            print(f"partitioned Parquet (kept from an earlier run): {n:,} trials, {size / 2**20:.0f} MiB")
        else:
            t0 = time.perf_counter()
            size = make_parts(root, n, file_rows, speakers)
            print(f"partitioned Parquet: {n:,} trials in {len(list(root.iterdir()))} files, "
                  f"{size / 2**20:.0f} MiB, written in {time.perf_counter() - t0:.0f} s")
            if data:
                (root / "_made.json").write_text(json.dumps({"n": n, "file_rows": file_rows, "speakers": speakers}))
        args = [sys.executable, __file__, "--stage", "lazy", "--path", str(root), "--replicates", str(replicates)]
        args += ["--check"] if check else []
        run = subprocess.run(args, capture_output=True, text=True, check=True)
        r = json.loads(run.stdout.strip().splitlines()[-1])
    list_bytes = r["list_mib"] * 2**20
    print(f"lazy list: {r['n']:,} comparisons in {r['partitions']} partitions; in memory its arrays would take "
          f"{r['list_mib']:.0f} MiB (labels as int64)")
    print(f"  read_long(..., chunks=1e6): every row checked in one pass, {r['read_s']:.1f} s; "
          f"client received {r['read_client'] / 2**20:.1f} MiB = {r['read_client'] / list_bytes:.4f} of the list")
    print(f"  EER (rocch) {r['eer']:.4%}: {r['eer_s']:.1f} s, {r['eer_passes']} computes, client received "
          f"{r['eer_client'] / 2**20:.2f} MiB = {r['eer_client'] / list_bytes:.4f} of the list")
    print(f"  FNMR at FMR 1e-2, 1e-3 {r['fnmr']}: {r['fnmr_at_fmr_s']:.1f} s, {r['fnmr_at_fmr_passes']} computes, "
          f"client received {r['fnmr_at_fmr_client'] / 2**20:.2f} MiB = "
          f"{r['fnmr_at_fmr_client'] / list_bytes:.4f} of the list")
    print(f"  peak memory above baseline (read + EER + FNMR@FMR): {r['peak_above_baseline_mib']:.0f} MiB = "
          f"{r['peak_above_baseline_mib'] / r['list_mib']:.3f}x the list")
    if replicates:
        lo, hi = r["interval"]
        print(f"  EER with a {replicates:,}-replicate subject-bootstrap interval ({r['n_units']} subjects): "
              f"[{lo:.4%}, {hi:.4%}] in {r['interval_s']:.1f} s; client received "
              f"{r['interval_client'] / 2**20:.2f} MiB = {r['interval_client'] / list_bytes:.4f} of the list; peak "
              f"{r['interval_peak_above_baseline_mib']:.0f} MiB above baseline = "
              f"{r['interval_peak_above_baseline_mib'] / r['list_mib']:.3f}x the list "
              f"(from {r['interval_start_mib']:.0f} MiB held before it)")
    if "same" in r:
        print(f"  the same as the list read in memory: {r['same']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7, help="trials (default 1e7)")
    parser.add_argument("--samples", type=float, default=None, help="samples (default sqrt(n / 2.5e-4))")
    parser.add_argument("--speakers", type=int, default=4000)
    parser.add_argument("--lazy", type=float, default=None, help="trials of a lazy partitioned list (e.g. 1e8)")
    parser.add_argument("--file-rows", type=float, default=5e6, help="trials per Parquet file (--lazy)")
    parser.add_argument("--check", action="store_true", help="--lazy: compare with the list read in memory")
    parser.add_argument("--replicates", type=int, default=0,
                        help="--lazy: also the EER's subject-bootstrap interval with this many replicates")
    parser.add_argument("--data", help="--lazy: write the dataset here and keep it (reused when it exists)")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage == "lazy":
        print(json.dumps(lazy_stage(Path(args.path), args.check, args.replicates)))
        return
    if args.stage:
        print(json.dumps(stage(args.stage, Path(args.path))))
        return
    if args.lazy:
        _lazy_main(int(args.lazy), int(args.file_rows), args.speakers, args.check, args.replicates, args.data)
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
