"""Benchmark: bioxr's long-form readers against ``pandas.read_csv`` on the same file.

Writes long CSVs of 1e7 and 2e6 rows (probe, reference, score and one
cofactor, a sparse trial list: 20,000 probes against 20,000 references, each
probe compared with 500 of them), then, for each, times
``bioxr.io.read_long(path, layout="list")`` and ``pandas.read_csv(path)``
and measures the peak memory of each call in a fresh subprocess
(the resident high-water mark ``VmHWM`` after the call, reset after the
imports through ``/proc/self/clear_refs``, minus the resident memory then,
so both sides pay for the same interpreter and an import's own peak hides
nothing). It prints
the times, the peak memories and their ratios; it asserts nothing. The
targets are bioxr at most 1.5x the time and 2x the peak memory of pandas.

    python benchmarks/readers.py                 # 1e7 and 2e6 rows
    python benchmarks/readers.py --rows 100000   # a quick look
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = r"""
import json, sys, time
import numpy, pandas, pyarrow, pyarrow.csv, xarray
import bioxr, bioxr.io
which, path = sys.argv[1], sys.argv[2]
def status(key):  # kB
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))
with open("/proc/self/clear_refs", "w") as f:  # reset the peak (VmHWM): the imports' own peak must not hide the read's
    f.write("5")
base = status("VmRSS")
t0 = time.perf_counter()
if which == "pandas":
    out = pandas.read_csv(path)
    n = len(out)
elif which == "pandas+numpy":  # context: what a Dataset needs, NumPy arrays, from pandas
    frame = pandas.read_csv(path)
    out = {c: frame.pop(c).to_numpy() for c in list(frame.columns)}
    n = len(out["score"])
else:
    out = bioxr.io.read_long(path, layout="list")
    n = out.sizes["comparison"]
elapsed = time.perf_counter() - t0
peak = status("VmHWM")
print(json.dumps({"seconds": elapsed, "peak_mib": (peak - base) / 1024, "rows": int(n)}))
"""


def write_long_csv(path: Path, n_rows: int, *, n_probes: int = 20_000, seed: int = 0) -> Path:
    """A sparse trial list of about ``n_rows`` comparisons, written with pyarrow (fast, no quoting).

    The ids are the subjects (one sample per subject on each side): each
    probe is compared with itself (mated) and with ``n_rows / n_probes - 1``
    others; ``sensor`` is the cofactor.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    per_probe = max(2, n_rows // n_probes)
    n_refs = max(n_probes, 40 * per_probe)
    rows = np.arange(n_probes * per_probe)
    probe = rows // per_probe
    k = rows - probe * per_probe
    ref = np.where(k == 0, probe, (probe * 7 + k * 37) % n_refs)
    keep = ~pd.DataFrame({"p": probe, "r": ref}).duplicated().to_numpy()  # a pair drawn twice: keep the first
    probe, ref = probe[keep], ref[keep]
    table = pa.table({"probe": np.char.add("u", probe.astype(str)), "reference": np.char.add("u", ref.astype(str)),
                      "score": np.round(rng.random(len(probe)), 6),
                      "sensor": np.char.add("s", (probe % 4).astype(str))})
    pacsv.write_csv(table, path, write_options=pacsv.WriteOptions(quoting_style="none"))
    return path


def measure(which: str, path: Path, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, which, str(path)], capture_output=True, text=True,
                             check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {"seconds": min(r["seconds"] for r in runs), "peak_mib": min(r["peak_mib"] for r in runs),
            "rows": runs[0]["rows"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[1e7, 2e6])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None, help="where to write the files (default: a temp dir)")
    parser.add_argument("--context", action="store_true",
                        help="also time pandas.read_csv followed by .to_numpy() of every column")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n in (int(r) for r in args.rows):
            path = folder / f"long_{n}.csv"
            if not path.exists():
                write_long_csv(path, n)
            size = path.stat().st_size / 2**20
            pandas = measure("pandas", path, args.repeats)
            bioxr = measure("bioxr", path, args.repeats)
            context = measure("pandas+numpy", path, 1) if args.context else None
            print(f"{pandas['rows']:>10,} rows ({size:,.0f} MiB): "
                  f"pandas.read_csv {pandas['seconds']:.2f} s, {pandas['peak_mib']:,.0f} MiB; "
                  f"read_long(layout='list') {bioxr['seconds']:.2f} s, {bioxr['peak_mib']:,.0f} MiB; "
                  f"time {bioxr['seconds'] / pandas['seconds']:.2f}x (target <= 1.5x), "
                  f"memory {bioxr['peak_mib'] / pandas['peak_mib']:.2f}x (target <= 2x)", flush=True)
            if context:
                print(f"{'':>10}  context: pandas.read_csv then .to_numpy() per column (the arrays a Dataset "
                      f"holds) {context['seconds']:.2f} s, {context['peak_mib']:,.0f} MiB: read_long takes "
                      f"{bioxr['seconds'] / context['seconds']:.2f}x the time, "
                      f"{bioxr['peak_mib'] / context['peak_mib']:.2f}x the memory", flush=True)


if __name__ == "__main__":
    main()
