"""EER on the real NIST BSSR1 scores, both score kinds, against scikit-learn and scipy.

The reference points come from ``sklearn.metrics.roc_curve`` (every distinct
score a threshold); the three EER conventions are then read off them by
plain code here, the convex hull by ``scipy.spatial.ConvexHull``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import ConvexHull
from sklearn.metrics import roc_curve

from bioxr.io import read_matrix_csv
from bioxr.verification import eer, fnmr_at_fmr


def reference_points(cube):
    """(fmr, fnmr) at every threshold, lenient to strict, from scikit-learn."""
    s = cube.values
    mated = (cube["subject"] == cube["reference_subject"]).broadcast_like(cube).values
    valid = ~np.isnan(s)
    sign = -1.0 if cube.attrs["score_kind"] == "distance" else 1.0
    fpr, tpr, _ = roc_curve(mated[valid], sign * s[valid], drop_intermediate=False)
    return fpr[::-1], (1 - tpr)[::-1]  # sklearn runs strict to lenient


def reference_eer(x, y, method):
    d = y - x
    if method == "nearest":
        best = np.abs(d).min()
        k = np.flatnonzero(np.abs(d) == best)[0]  # the most lenient of equally near points
        return (x[k] + y[k]) / 2
    if method == "interpolated":
        k = int(np.flatnonzero(d >= 0)[0])
        if d[k] == 0:
            return x[k]
        s = -d[k - 1] / (d[k] - d[k - 1])
        return x[k - 1] + s * (x[k] - x[k - 1])
    pts = np.unique(np.c_[x, y], axis=0)
    hull = ConvexHull(np.vstack([pts, [[1.0, 1.0]]]))
    best = np.inf
    for i, j in hull.simplices:
        if len(pts) in (i, j):
            continue  # an edge to the added corner (1, 1) is not part of the lower-left chain
        (x1, y1), (x2, y2) = pts[i], pts[j]
        d1, d2 = y1 - x1, y2 - x2
        if d1 == 0:
            best = min(best, x1)
        elif d2 == 0:
            best = min(best, x2)
        elif d1 * d2 < 0:
            s = d1 / (d1 - d2)
            best = min(best, x1 + s * (x2 - x1))
    return best


@pytest.mark.parametrize("kind", ["similarity", "distance"])
@pytest.mark.parametrize("name", ["face", "finger"])
def test_bssr1_eer_all_conventions(name, kind, face_csv, finger_csv):
    path, missing = (face_csv, -1.0) if name == "face" else (finger_csv, None)
    cube = read_matrix_csv(path, missing=missing)
    if kind == "distance":
        cube = (-cube).assign_attrs(cube.attrs, score_kind="distance")
    x, y = reference_points(cube)
    for method in ("rocch", "interpolated", "nearest"):
        got = eer(cube, method=method)
        assert got.eer.item() == pytest.approx(reference_eer(x, y, method), abs=1e-12), method
        assert got.attrs["eer_method"] == method
    # FNMR at FMR 1%: the most lenient threshold whose FMR is within target
    op = fnmr_at_fmr(cube, 0.01)
    k = int(np.flatnonzero(x <= 0.01)[0])
    assert op.fnmr.item() == pytest.approx(y[k], abs=1e-15)


def test_bssr1_conventions_differ_on_tied_fingerprint_scores(finger_csv):
    cube = read_matrix_csv(finger_csv)
    values = {m: eer(cube, method=m).eer.item() for m in ("rocch", "interpolated", "nearest")}
    assert values["rocch"] < values["interpolated"] < values["nearest"]
    assert np.isclose(cube.values % 1, 0).all()  # integer scores: heavy ties
