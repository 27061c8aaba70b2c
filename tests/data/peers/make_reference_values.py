"""Compute the peers' own numbers on their own example files: reference_values.json.

Run by hand, not by the test suite. Each peer runs in a venv of its own
(bob.measure pins numpy 1.26), so this script re-runs itself under each
peer's Python and merges what they print:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install pyeer==0.5.6
    python3 -m venv /tmp/bobenv && /tmp/bobenv/bin/pip install bob.measure==6.1.1
    python tests/data/peers/make_reference_values.py --pyeer-python /tmp/peers/bin/python \\
        --bob-python /tmp/bobenv/bin/python

Nothing here imports bioxr: every number comes from the peer's own code, fed
the way the peer's own loaders read the files (pyeer's command line: the last
space-separated field of each line; bob.bio.base's ``split_four_column`` /
``split_five_column`` and ``cmc_four_column``, re-typed below because
bob.bio.base itself needs dask and bob.pipelines).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PYEER_FILES = ("exp1", "exp2", "exp3")
BOB_FILES = {"dev-4col.txt": 1, "dev-5col.txt": 2, "test-4col.txt": 1}  # file: index of real_id
FMR_TARGETS = (0.1, 0.01, 0.001, 0.0)

# built by hand: two thresholds equally near FMR = FNMR (the lenient one has
# mean 15/32, the strict one 13/32), and ties of a mate with non-mates in ranks
TIE_EER = {
    "mated": [0, 0, 1, 2, 2, 2, 2, 4, 5, 5, 6, 6, 6, 7, 8, 9],
    "nonmated": [0, 1, 1, 1, 1, 1, 1, 2, 3, 3, 5, 6, 7, 7, 9, 9],
}
TIE_CMC = {  # probes x references, one reference per subject
    "scores": [[0.9, 0.9, 0.1, 0.3], [0.2, 0.5, 0.7, 0.5], [0.4, 0.4, 0.4, 0.8], [0.6, 0.1, 0.2, 0.3]],
    "subject": ["a", "b", "c", "d"],
    "reference_subject": ["a", "b", "c", "d"],
}


def pyeer_scores(path: Path) -> list:
    """As pyeer's get_eer_info_cmd reads a score file: the last space-separated field of each line."""
    with open(path) as f:
        return [float(line.strip().split(" ")[-1]) for line in f]


def bob_split(path: Path, real: int):
    """bob.bio.base split_four_column / split_five_column: (negatives, positives), one comparison per line."""
    neg, pos = [], []
    with open(path, newline="") as f:
        for fields in csv.reader(f, delimiter=" "):
            (pos if fields[0] == fields[real] else neg).append(float(fields[-1]))
    return neg, pos


def bob_cmc_split(path: Path):
    """bob.bio.base cmc_four_column: per probe label (sorted), (negatives, positives)."""
    pos_d, neg_d = {}, {}
    with open(path, newline="") as f:
        for fields in csv.reader(f, delimiter=" "):
            which = pos_d if fields[0] == fields[1] else neg_d
            which.setdefault(fields[2], []).append(float(fields[-1]))
    names = sorted(set(pos_d) | set(neg_d))
    return [(neg_d.get(n), pos_d.get(n)) for n in names]


def run_pyeer() -> dict:
    from pyeer.eer_info import get_eer_stats

    import pyeer

    out = {"version": getattr(pyeer, "__version__", "0.5.6"), "files": {}}
    files = {f"pyeer/{e}": (pyeer_scores(HERE / "pyeer" / f"{e}_true.txt"), pyeer_scores(HERE / "pyeer" / f"{e}_false.txt"))
             for e in PYEER_FILES}
    for name, real in BOB_FILES.items():
        neg, pos = bob_split(HERE / "bob" / name, real)
        files[f"bob/{name}"] = (pos, neg)
    files["hand/tie_eer"] = (TIE_EER["mated"], TIE_EER["nonmated"])
    for key, (gen, imp) in files.items():
        st = get_eer_stats(gen, imp)
        out["files"][key] = {
            "eer": float(st.eer), "eer_threshold": float(st.eer_th),
            "fmr100": float(st.fmr100), "fmr100_threshold": float(st.fmr100_th),
            "fmr1000": float(st.fmr1000), "fmr1000_threshold": float(st.fmr1000_th),
            "fmr10": float(st.fmr10), "fmr10_threshold": float(st.fmr10_th),
            "fmr0": float(st.fmr0), "fmr0_threshold": float(st.fmr0_th),
        }
    return out


def run_bob() -> dict:
    import numpy as np

    import bob.measure

    from importlib.metadata import version

    out = {"version": version("bob.measure"), "files": {}}
    files = {}
    for name, real in BOB_FILES.items():
        files[f"bob/{name}"] = bob_split(HERE / "bob" / name, real)
    for e in PYEER_FILES:
        files[f"pyeer/{e}"] = (pyeer_scores(HERE / "pyeer" / f"{e}_false.txt"), pyeer_scores(HERE / "pyeer" / f"{e}_true.txt"))
    files["hand/tie_eer"] = (TIE_EER["nonmated"], TIE_EER["mated"])
    for key, (neg, pos) in files.items():
        neg, pos = np.asarray(neg, float), np.asarray(pos, float)
        entry = {"eer": float(bob.measure.eer(neg, pos)), "eer_threshold": float(bob.measure.eer_threshold(neg, pos))}
        ops = []
        for far in FMR_TARGETS:
            t = bob.measure.far_threshold(neg, pos, far)
            fa, fr = bob.measure.farfrr(neg, pos, t)
            ops.append({"far": far, "threshold": float(t), "far_attained": float(fa), "frr": float(fr)})
        entry["frr_at_far"] = ops
        out["files"][key] = entry
    # identification: bob's own CMC file, and the hand-built ties
    cmc_sets = {"bob/scores-cmc-4col.txt": bob_cmc_split(HERE / "bob" / "scores-cmc-4col.txt")}
    hand = []
    for row, subject in zip(TIE_CMC["scores"], TIE_CMC["subject"]):
        pos = [s for s, r in zip(row, TIE_CMC["reference_subject"]) if r == subject]
        neg = [s for s, r in zip(row, TIE_CMC["reference_subject"]) if r != subject]
        hand.append((np.asarray(neg, float), np.asarray(pos, float)))
    cmc_sets["hand/tie_cmc"] = hand
    for key, sets in cmc_sets.items():
        sets = [(None if n is None else np.asarray(n, float), None if p is None else np.asarray(p, float)) for n, p in sets]
        curve = bob.measure.cmc(sets)
        out["files"][key] = {
            "cmc": [float(v) for v in curve],
            "recognition_rate": {str(r): float(bob.measure.recognition_rate(sets, rank=r)) for r in (1, 2, 3, 5)},
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("pyeer", "bob"))
    ap.add_argument("--pyeer-python", default="/tmp/peers/bin/python")
    ap.add_argument("--bob-python", default="/tmp/bobenv/bin/python")
    args = ap.parse_args()
    if args.part == "pyeer":
        print(json.dumps(run_pyeer()))
        return
    if args.part == "bob":
        print(json.dumps(run_bob()))
        return
    result = {
        "note": "computed by the peers themselves with tests/data/peers/make_reference_values.py; do not edit",
        "inputs": {"tie_eer": TIE_EER, "tie_cmc": TIE_CMC, "fmr_targets": list(FMR_TARGETS)},
    }
    for part, python in (("pyeer", args.pyeer_python), ("bob", args.bob_python)):
        done = subprocess.run([python, __file__, "--part", part], check=True, capture_output=True, text=True)
        result[part] = json.loads(done.stdout.strip().splitlines()[-1])
    (HERE / "reference_values.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {HERE / 'reference_values.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
