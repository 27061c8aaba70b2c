"""Verification rates, curves and EER checked against independent computations.

Reference values come from plain Python loops written from METHODS.md
section 1 (accept when ``s >= t`` for similarity, ``d <= t`` for distance; a
non-mated score equal to the threshold is a false match; NaN cells and self
comparisons are not comparisons), from scikit-learn's ``roc_curve`` and
``det_curve``, and, for the EER, from brute-force searches over the operating
points. Nothing here calls bioxr to compute an expected value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn import metrics

import bioxr
from bioxr import simulate, verification
from bioxr.cube import ScoreCubeError, score_cube



def examples(n: int):
    """Hypothesis settings: n examples, no deadline (xarray's first calls are slow)."""
    return settings(
        max_examples=n, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow]
    )


PROBE_DIMS = ("probe", "collection")
WEATHER = ("clear", "rain", "fog")


# --------------------------------------------------------------------------
# Test cases as plain Python data, and the brute force on them
# --------------------------------------------------------------------------


@dataclass
class Case:
    """A small score cube as plain data: scores[p][c][r]."""

    scores: np.ndarray  # (P, C, R) floats, NaN = not compared
    subject: list  # per probe
    reference_subject: list  # per reference
    probe_id: list | None
    reference_id: list | None
    kind: str

    @property
    def shape(self):
        return self.scores.shape

    def cube(self) -> xr.DataArray:
        P, C, R = self.shape
        return score_cube(
            self.scores,
            subject=self.subject,
            reference_subject=self.reference_subject,
            dims=("probe", "collection", "reference"),
            coords={
                "collection": [10 * (c + 1) for c in range(C)],
                "weather": ("collection", [WEATHER[c % len(WEATHER)] for c in range(C)]),
            },
            probe_id=self.probe_id,
            reference_id=self.reference_id,
            score_kind=self.kind,
        )

    def is_comparison(self, p, r, s) -> bool:
        if math.isnan(s):
            return False
        if self.probe_id is not None and self.probe_id[p] == self.reference_id[r]:
            return False
        return True

    def split(self, keep: tuple[str, ...]) -> dict[tuple, tuple[list, list]]:
        """Mated and non-mated scores per group of the kept dims, by loops."""
        P, C, R = self.shape
        out: dict[tuple, tuple[list, list]] = {}
        for p in range(P):
            for c in range(C):
                key = tuple(i for name, i in (("probe", p), ("collection", c)) if name in keep)
                mated, nonmated = out.setdefault(key, ([], []))
                for r in range(R):
                    s = float(self.scores[p, c, r])
                    if not self.is_comparison(p, r, s):
                        continue
                    if self.subject[p] == self.reference_subject[r]:
                        mated.append(s)
                    else:
                        nonmated.append(s)
        return out


def accepted(s: float, t: float, kind: str) -> bool:
    return s >= t if kind == "similarity" else s <= t


def brute_counts(mated: list, nonmated: list, t: float, kind: str) -> tuple[int, int]:
    """(false non-matches, false matches) at threshold t."""
    fnm = 0
    for s in mated:
        if not accepted(s, t, kind):
            fnm += 1
    fm = 0
    for s in nonmated:
        if accepted(s, t, kind):
            fm += 1
    return fnm, fm


def brute_counts_rates(mated, nonmated, t, kind):
    fnm, fm = brute_counts(mated, nonmated, t, kind)
    return fm / len(nonmated), fnm / len(mated)


def ratio(a: int, b: int) -> float:
    return a / b if b else math.nan


def brute_points(mated: list, nonmated: list, kind: str) -> list[tuple[float, float, float]]:
    """(threshold, FMR, FNMR) at every distinct score plus the reject-all sentinel,
    ordered from the most lenient threshold to the strictest."""
    distinct = sorted(set(mated) | set(nonmated))
    if kind == "similarity":
        thresholds = distinct + [math.inf]
    else:
        thresholds = distinct[::-1] + [-math.inf]
    points = []
    for t in thresholds:
        fnm, fm = brute_counts(mated, nonmated, t, kind)
        points.append((t, fm / len(nonmated), fnm / len(mated)))
    return points


def eer_nearest_brute(points):
    """All (eer, threshold) pairs that minimise |FMR - FNMR|."""
    gap = min(abs(x - y) for _, x, y in points)
    return [((x + y) / 2, t) for t, x, y in points if abs(abs(x - y) - gap) < 1e-12]


def eer_interpolated_brute(points):
    """Every crossing of FMR = FNMR by the polyline through consecutive points.

    FMR falls and FNMR rises from lenient to strict, so all crossings share
    one value; return them all and let the caller check that."""
    values = []
    for (_, x0, y0), (_, x1, y1) in zip(points, points[1:]):
        d0, d1 = x0 - y0, x1 - y1
        if d0 == 0:
            values.append(x0)
        if d0 * d1 < 0:
            frac = d0 / (d0 - d1)
            values.append(x0 + frac * (x1 - x0))
    _, x, y = points[-1]
    if x == y:
        values.append(x)
    return values


def eer_rocch_brute(points):
    """Lowest point of the convex hull of the (FMR, FNMR) points on FMR = FNMR.

    The hull's intersection with the diagonal is a segment; its lower end is a
    convex combination of two of the points lying on opposite sides of (or on)
    the diagonal. Every such combination is inside the hull, so the minimum of
    their crossings over all pairs is exactly the ROCCH EER."""
    best = math.inf
    for _, x0, y0 in points:
        if x0 == y0:
            best = min(best, x0)
        for _, x1, y1 in points:
            d0, d1 = x0 - y0, x1 - y1
            if d0 * d1 < 0:
                frac = d0 / (d0 - d1)
                best = min(best, x0 + frac * (x1 - x0))
    return best


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

SCORE_VALUES = [0.0, 1.0, 2.0, 3.0, 4.0, math.nan]


@st.composite
def cases(draw, max_probes=5, max_collections=3, max_refs=4, ids=None, kind=None):
    P = draw(st.integers(2, max_probes))
    C = draw(st.integers(1, max_collections))
    R = draw(st.integers(2, max_refs))
    subject = draw(st.lists(st.sampled_from(["a", "b", "c", "z"]), min_size=P, max_size=P))
    reference_subject = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=R, max_size=R))
    flat = draw(st.lists(st.sampled_from(SCORE_VALUES), min_size=P * C * R, max_size=P * C * R))
    scores = np.array(flat, dtype=float).reshape(P, C, R)
    with_ids = draw(st.booleans()) if ids is None else ids
    probe_id = reference_id = None
    if with_ids:
        pool = [f"i{k}" for k in range(P + R)]
        probe_id = draw(st.permutations(pool))[:P]
        reference_id = draw(st.permutations(pool))[:R]
    kind = draw(st.sampled_from(["similarity", "distance"])) if kind is None else kind
    case = Case(scores, subject, reference_subject, probe_id, reference_id, kind)
    try:
        case.cube()
    except ScoreCubeError:
        assume(False)
    return case


KEEPS = [(), ("collection",), ("probe",), ("probe", "collection")]


def dim_for(keep):
    """The dim= argument that reduces every probe dim not in keep."""
    reduced = tuple(d for d in PROBE_DIMS if d not in keep)
    return reduced


def group_of(ds, key, keep):
    return ds.isel(dict(zip(keep, key))) if keep else ds


THRESHOLDS = [-1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0]


# --------------------------------------------------------------------------
# FMR / FNMR at thresholds
# --------------------------------------------------------------------------


def test_hand_made_ties_at_the_threshold_similarity():
    # mated 3 (a-a) and 1 (b-b); non-mated 2 (a-b) and 2 (b-a)
    cube = score_cube(np.array([[3.0, 2.0], [2.0, 1.0]]), subject=["a", "b"], reference_subject=["a", "b"])
    r = verification.error_rates(cube, [1.0, 2.0, 2.5, 3.0, 3.5])
    # at t = 2 both non-mated scores tie with t: both are false matches
    assert r.false_matches.values.tolist() == [2, 2, 0, 0, 0]
    # a mated score equal to t is accepted: only scores strictly below t are rejected
    assert r.false_nonmatches.values.tolist() == [0, 1, 1, 1, 2]
    assert r.fmr.values.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert r.fnmr.values.tolist() == [0.0, 0.5, 0.5, 0.5, 1.0]
    assert int(r.n_mated) == 2 and int(r.n_nonmated) == 2


def test_hand_made_ties_at_the_threshold_distance():
    # distance: accept when d <= t; mated 1 and 3, non-mated 2 and 2
    cube = score_cube(
        np.array([[1.0, 2.0], [2.0, 3.0]]), subject=["a", "b"], reference_subject=["a", "b"], score_kind="distance"
    )
    r = verification.error_rates(cube, [0.5, 1.0, 1.5, 2.0, 3.0])
    assert r.false_matches.values.tolist() == [0, 0, 0, 2, 2]
    assert r.false_nonmatches.values.tolist() == [2, 1, 1, 1, 0]


def test_self_comparisons_and_nan_are_not_counted():
    # all-against-all on three samples of two subjects: the diagonal is skipped
    scores = np.array([[9.0, 5.0, 1.0], [5.0, 9.0, 2.0], [1.0, np.nan, 9.0]])
    ids = ["s0", "s1", "s2"]
    cube = score_cube(
        scores, subject=["a", "a", "b"], reference_subject=["a", "a", "b"], probe_id=ids, reference_id=ids
    )
    r = verification.error_rates(cube, [5.0])
    assert int(r.n_mated) == 2  # (0,1) and (1,0); diagonal skipped
    assert int(r.n_nonmated) == 3  # (0,2), (1,2), (2,0); (2,1) is NaN
    assert r.false_nonmatches.values.tolist() == [0]  # both mated scores are 5 >= 5
    assert r.false_matches.values.tolist() == [0]


@examples(80)
@given(case=cases(), keep=st.sampled_from(KEEPS))
def test_error_rates_match_brute_force(case, keep):
    cube = case.cube()
    res = verification.error_rates(cube, THRESHOLDS, dim=dim_for(keep))
    assert res.fmr.dims == (*keep, "threshold")
    assert res.n_mated.dims == keep
    for key, (mated, nonmated) in case.split(keep).items():
        g = group_of(res, key, keep)
        assert int(g.n_mated) == len(mated)
        assert int(g.n_nonmated) == len(nonmated)
        for k, t in enumerate(THRESHOLDS):
            fnm, fm = brute_counts(mated, nonmated, t, case.kind)
            assert int(g.false_nonmatches[k]) == fnm, (key, t)
            assert int(g.false_matches[k]) == fm, (key, t)
            np.testing.assert_equal(float(g.fnmr[k]), ratio(fnm, len(mated)))
            np.testing.assert_equal(float(g.fmr[k]), ratio(fm, len(nonmated)))


@examples(15)
@given(case=cases(), keep=st.sampled_from(KEEPS))
def test_fmr_and_fnmr_are_the_matching_parts_of_error_rates(case, keep):
    cube = case.cube()
    full = verification.error_rates(cube, THRESHOLDS, dim=dim_for(keep))
    xr.testing.assert_identical(verification.fmr(cube, THRESHOLDS, dim=dim_for(keep)), full[["fmr", "false_matches", "n_nonmated"]])
    xr.testing.assert_identical(verification.fnmr(cube, THRESHOLDS, dim=dim_for(keep)), full[["fnmr", "false_nonmatches", "n_mated"]])


def test_scalar_threshold_gives_a_scalar_threshold_coordinate():
    # like .sel: a scalar selects, a sequence keeps the dimension
    cube = simulate.gaussian(n_subjects=10, seed=0)
    r = verification.error_rates(cube, 0.0)
    assert r.fmr.dims == () and float(r.threshold) == 0.0
    xr.testing.assert_identical(r, verification.error_rates(cube, [0.0]).isel(threshold=0))
    kept = verification.fmr(simulate.photohead(4, 2, 3, seed=0), 0.5, dim=("subject", "image"))
    assert kept.fmr.dims == ("collection",)
    op = verification.fnmr_at_fmr(cube, 0.1)
    assert op.fnmr.dims == () and float(op.fmr_target) == 0.1
    op = verification.fmr_at_fnmr(cube, 0.1)
    assert op.fmr.dims == () and float(op.fnmr_target) == 0.1


# --------------------------------------------------------------------------
# DET and ROC curves
# --------------------------------------------------------------------------


def _expected_thresholds(values, kind):
    distinct = sorted(set(values))
    return distinct + [math.inf] if kind == "similarity" else [-math.inf] + distinct


@examples(50)
@given(case=cases(), keep=st.sampled_from(KEEPS))
def test_det_curve_all_points_matches_brute_force_at_every_threshold(case, keep):
    groups = case.split(keep)
    assume(all(m and q for m, q in groups.values()))
    det = verification.det_curve(case.cube(), dim=dim_for(keep), points="all")
    # thresholds: every distinct compared score (all groups together) plus the sentinel
    expected_t = _expected_thresholds([s for m, q in groups.values() for s in m + q], case.kind)
    assert det.threshold.values.tolist() == expected_t
    for key, (mated, nonmated) in groups.items():
        g = group_of(det, key, keep)
        assert int(g.n_mated) == len(mated) and int(g.n_nonmated) == len(nonmated)
        for k, t in enumerate(expected_t):
            fnm, fm = brute_counts(mated, nonmated, t, case.kind)
            assert int(g.false_nonmatches[k]) == fnm
            assert int(g.false_matches[k]) == fm
            assert float(g.fmr[k]) == fm / len(nonmated)
            assert float(g.fnmr[k]) == fnm / len(mated)
            assert float(g.tmr[k]) == pytest.approx(1 - fnm / len(mated))
            assert float(g.tnr[k]) == pytest.approx(1 - fm / len(nonmated))


def _on_polyline(px, py, xs, ys) -> bool:
    """Is (px, py) on the polyline through (xs, ys)?"""
    for x0, y0, x1, y1 in zip(xs, ys, xs[1:], ys[1:]):
        if min(x0, x1) - 1e-12 <= px <= max(x0, x1) + 1e-12 and min(y0, y1) - 1e-12 <= py <= max(y0, y1) + 1e-12:
            if abs((x1 - x0) * (py - y0) - (y1 - y0) * (px - x0)) < 1e-12:
                return True
    return False


@examples(40)
@given(case=cases(), keep=st.sampled_from(KEEPS))
def test_det_curve_corners_are_exact_and_draw_the_whole_curve(case, keep):
    groups = case.split(keep)
    assume(all(m and q for m, q in groups.values()))
    det = verification.det_curve(case.cube(), dim=dim_for(keep))
    assert det.attrs["points"] == "corners"
    ts = det.threshold.values.tolist()
    all_t = _expected_thresholds([s for m, q in groups.values() for s in m + q], case.kind)
    assert ts == sorted(ts)
    assert set(ts) <= set(all_t)  # self-comparison scores are never thresholds
    assert ts[-1 if case.kind == "similarity" else 0] in (math.inf, -math.inf)
    for key, (mated, nonmated) in groups.items():
        g = group_of(det, key, keep)
        for k, t in enumerate(ts):
            fnm, fm = brute_counts(mated, nonmated, t, case.kind)
            assert (int(g.false_nonmatches[k]), int(g.false_matches[k])) == (fnm, fm)
        # every point of the full (brute-force) curve lies on the corners' polyline
        xs, ys = g.fmr.values.tolist(), g.fnmr.values.tolist()
        for _, x, y in brute_points(mated, nonmated, case.kind):
            assert _on_polyline(x, y, xs, ys), (x, y)


def test_det_corners_never_use_a_self_comparison_score():
    # the diagonal (self comparisons, score 7) must not be a threshold
    ids = ["s0", "s1", "s2"]
    cube = score_cube(
        np.array([[7.0, 3.0, 1.0], [3.0, 7.0, 2.0], [1.0, 2.0, 7.0]]),
        subject=["a", "a", "b"], reference_subject=["a", "a", "b"], probe_id=ids, reference_id=ids,
    )
    corners = verification.det_curve(cube).threshold.values.tolist()
    every = verification.det_curve(cube, points="all").threshold.values.tolist()
    assert every == [1.0, 2.0, 3.0, math.inf]
    assert 7.0 not in corners
    assert set(corners) <= set(every)


def test_rocch_eer_threshold_is_never_a_self_comparison_score():
    # probe 1 (id i0) against reference 1 (id i0) is a self comparison scoring 1.0;
    # every comparison scores 0, so the only thresholds are 0 and +inf
    cube = score_cube(
        np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]),
        subject=["a", "a", "a", "a"], reference_subject=["a", "b"],
        probe_id=["i1", "i0", "i2", "i3"], reference_id=["i1", "i0"],
    )
    assert float(verification.eer(cube, method="rocch").threshold) in (0.0, math.inf)


@examples(15)
@given(case=cases(), points=st.sampled_from(["corners", "all"]))
def test_roc_curve_is_det_curve_labelled_as_roc(case, points):
    (mated, nonmated), = case.split(()).values()
    assume(mated and nonmated)
    roc = verification.roc_curve(case.cube(), points=points)
    det = verification.det_curve(case.cube(), points=points)
    xr.testing.assert_equal(roc, det)
    assert roc.attrs["curve"].startswith("ROC")
    for k, t in enumerate(roc.threshold.values):
        fnm, _ = brute_counts(mated, nonmated, float(t), case.kind)
        assert float(roc.tmr[k]) == pytest.approx(1 - fnm / len(mated))


def _sklearn_inputs(case):
    (mated, nonmated), = case.split(()).values()
    y_true = np.r_[np.ones(len(mated)), np.zeros(len(nonmated))]
    y = np.array(mated + nonmated, dtype=float)
    # sklearn accepts when y_score >= threshold; a distance d <= t is -d >= -t
    y_score = y if case.kind == "similarity" else -y
    return mated, nonmated, y_true, y_score


def _to_bioxr_threshold(th: float, kind: str) -> float:
    return th if kind == "similarity" else -th


@examples(40)
@given(case=cases())
def test_roc_curve_agrees_with_sklearn(case):
    mated, nonmated, y_true, y_score = _sklearn_inputs(case)
    assume(mated and nonmated)
    fpr, tpr, thr = metrics.roc_curve(y_true, y_score, drop_intermediate=False)
    roc = verification.roc_curve(case.cube(), points="all")
    finite = np.isfinite(thr)
    # sklearn's finite thresholds are exactly the distinct scores
    ours = roc.threshold.values[np.isfinite(roc.threshold.values)]
    assert sorted(_to_bioxr_threshold(t, case.kind) for t in thr[finite]) == sorted(ours.tolist())
    for f, tp, th in zip(fpr[finite], tpr[finite], thr[finite]):
        point = roc.sel(threshold=_to_bioxr_threshold(float(th), case.kind))
        assert float(point.fmr) == pytest.approx(f, abs=1e-12)
        assert float(point.tmr) == pytest.approx(tp, abs=1e-12)
    # sklearn's extra threshold (+inf: nothing accepted) is our sentinel
    sentinel = roc.isel(threshold=-1 if case.kind == "similarity" else 0)
    assert float(sentinel.fmr) == fpr[0] == 0.0 and float(sentinel.tmr) == tpr[0] == 0.0


@examples(40)
@given(case=cases())
def test_det_curve_agrees_with_sklearn(case):
    mated, nonmated, y_true, y_score = _sklearn_inputs(case)
    assume(mated and nonmated)
    fpr, fnr, thr = metrics.det_curve(y_true, y_score)
    det = verification.det_curve(case.cube(), points="all")
    assert len(thr) >= 1
    for f, fn, th in zip(fpr, fnr, thr):
        if not np.isfinite(th):
            continue
        point = det.sel(threshold=_to_bioxr_threshold(float(th), case.kind))
        assert float(point.fmr) == pytest.approx(f, abs=1e-12)
        assert float(point.fnmr) == pytest.approx(fn, abs=1e-12)


def test_det_curve_ends_and_monotonicity_on_continuous_scores():
    cube = simulate.gaussian(n_subjects=40, seed=4)
    for points in ("corners", "all"):
        det = verification.det_curve(cube, points=points)
        assert float(det.fmr[0]) == 1.0 and float(det.fnmr[0]) == 0.0
        assert float(det.fmr[-1]) == 0.0 and float(det.fnmr[-1]) == 1.0
        assert bool((det.fmr.diff("threshold") <= 0).all()) and bool((det.fnmr.diff("threshold") >= 0).all())


def test_det_curve_bad_points_raises():
    with pytest.raises(ValueError, match="points"):
        verification.det_curve(simulate.gaussian(n_subjects=5, seed=0), points="every")


# --------------------------------------------------------------------------
# EER
# --------------------------------------------------------------------------


def _eer_on(cube, method, **kw):
    res = verification.eer(cube, method=method, **kw)
    return {k: float(res[k]) for k in ("eer", "threshold", "fmr", "fnmr")}


def test_eer_hand_made_heavy_ties():
    # mated 1 and 3, non-mated 2 and 2. Operating points, lenient to strict:
    # t=1 (1, 0), t=2 (1, .5), t=3 (0, .5), t=inf (0, 1).
    for kind, scores in (("similarity", [[1.0, 2.0], [2.0, 3.0]]), ("distance", [[3.0, 2.0], [2.0, 1.0]])):
        cube = score_cube(np.array(scores), subject=["a", "b"], reference_subject=["a", "b"], score_kind=kind)
        # hull (1,0)-(0,.5): x = .5 (1 - x) -> 1/3
        assert float(verification.eer(cube, method="rocch").eer) == pytest.approx(1 / 3)
        # the staircase crosses the diagonal on the segment (1,.5)-(0,.5)
        assert float(verification.eer(cube, method="interpolated").eer) == pytest.approx(0.5)
        # |FMR - FNMR| is 0.5 at both (1,.5) and (0,.5): the nearest EER is 0.75 or 0.25
        assert float(verification.eer(cube, method="nearest").eer) in (0.75, 0.25)


def _rocch_by_scipy(points):
    """ROCCH EER from scipy's convex hull of the points plus the (1, 1) corner."""
    from scipy.spatial import ConvexHull

    pts = np.array([(x, y) for _, x, y in points] + [(1.0, 1.0)])
    pts = np.unique(pts, axis=0)
    hull = ConvexHull(pts)
    best = math.inf
    for a, b in hull.simplices:
        (x0, y0), (x1, y1) = pts[a], pts[b]
        d0, d1 = x0 - y0, x1 - y1
        if d0 == 0:
            best = min(best, x0)
        if d1 == 0:
            best = min(best, x1)
        if d0 * d1 < 0:
            best = min(best, x0 + d0 / (d0 - d1) * (x1 - x0))
    return best


def test_eer_rocch_matches_scipy_convex_hull_on_a_fixed_case():
    rng = np.random.default_rng(11)
    scores = rng.integers(0, 6, size=(12, 6)).astype(float)
    subject = [f"s{i % 6}" for i in range(12)]
    ref = [f"s{i}" for i in range(6)]
    scores[np.arange(12), np.arange(12) % 6] += 2  # mated a bit higher
    case = Case(scores[:, None, :], subject, ref, None, None, "similarity")
    (mated, nonmated), = case.split(()).values()
    points = brute_points(mated, nonmated, "similarity")
    expected = _rocch_by_scipy(points)
    assert _eer_on(case.cube(), "rocch")["eer"] == pytest.approx(expected)
    assert eer_rocch_brute(points) == pytest.approx(expected)


def check_eer_against_points(cube, points, rates, *, dim=None, select=None):
    """Compare eer() for every method with the brute-force conventions on ``points``.

    ``rates(t)`` gives (FMR, FNMR) at any threshold t, computed independently."""
    res = {}
    for method in verification.EER_METHODS:
        out = verification.eer(cube, method=method, dim=dim)
        if select:
            out = out.isel(select)
        res[method] = {k: float(out[k]) for k in ("eer", "threshold", "fmr", "fnmr")}
    rocch, interp, nearest = res["rocch"], res["interpolated"], res["nearest"]

    expected_rocch = eer_rocch_brute(points) if len(points) <= 400 else _rocch_by_scipy(points)
    assert rocch["eer"] == pytest.approx(expected_rocch, abs=1e-12)

    crossings = eer_interpolated_brute(points)
    assert crossings and max(crossings) - min(crossings) < 1e-12
    assert interp["eer"] == pytest.approx(crossings[0], abs=1e-12)

    candidates = eer_nearest_brute(points)
    assert any(nearest["eer"] == pytest.approx(v, abs=1e-12) for v, _ in candidates)

    # ROCCH <= interpolated: the interpolated crossing lies on a segment between
    # two operating points, so it is a convex combination of points and lies in
    # their convex hull; the ROCCH EER is the lowest point of that hull on the
    # diagonal FMR = FNMR, so it cannot be higher.
    assert rocch["eer"] <= interp["eer"] + 1e-12

    xs = np.array([x for _, x, _ in points])
    ys = np.array([y for _, _, y in points])

    def is_point(xy):
        return bool(np.min(np.abs(xs - xy[0]) + np.abs(ys - xy[1])) < 1e-12)

    for r in res.values():
        # the reported operating point is a real one and brackets the EER
        assert is_point((r["fmr"], r["fnmr"]))
        assert min(r["fmr"], r["fnmr"]) - 1e-12 <= r["eer"] <= max(r["fmr"], r["fnmr"]) + 1e-12
    thresholds = {t for t, _, _ in points}
    for r in (rocch, nearest):
        # these report an actual threshold (a comparison score or the sentinel, never
        # e.g. a self comparison's score), and the rates there are the reported ones
        assert r["threshold"] in thresholds
        assert rates(r["threshold"]) == pytest.approx((r["fmr"], r["fnmr"]), abs=1e-12)
    # nearest: the point is one of those with the least |FMR - FNMR|
    assert abs(nearest["fmr"] - nearest["fnmr"]) == pytest.approx(min(abs(x - y) for _, x, y in points), abs=1e-12)
    # the interpolated threshold lies between the two bracketing thresholds
    # (points run lenient to strict: the FMR > FNMR points come first)
    k = next(i for i, (_, x, y) in enumerate(points) if x <= y)
    lo, hi = points[k - 1][0], points[k][0]
    assert min(lo, hi) <= interp["threshold"] <= max(lo, hi)
    return res


def brute_rates(mated, nonmated, kind):
    return lambda t: brute_counts_rates(mated, nonmated, t, kind)


@examples(80)
@given(case=cases())
def test_eer_matches_brute_force_for_every_method(case):
    (mated, nonmated), = case.split(()).values()
    assume(mated and nonmated)
    check_eer_against_points(case.cube(), brute_points(mated, nonmated, case.kind), brute_rates(mated, nonmated, case.kind))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_subjects=st.integers(2, 15))
def test_eer_on_continuous_scores(seed, n_subjects):
    cube = simulate.gaussian(n_subjects=n_subjects, n_samples=3, mated_mean=1.0, seed=seed)
    is_mated = np.asarray(cube.subject.values)[:, None] == np.asarray(cube.reference_subject.values)[None, :]
    mated = cube.values[is_mated].tolist()
    nonmated = cube.values[~is_mated].tolist()
    res = check_eer_against_points(
        cube, brute_points(mated, nonmated, "similarity"), brute_rates(mated, nonmated, "similarity")
    )
    # interpolated and nearest sit on neighbouring points of the curve: within one step.
    # (ROCCH is NOT within one step: on a few hundred continuous scores the hull
    # lies several steps below the staircase, so no such bound is checked for it.)
    step = 1 / len(mated) + 1 / len(nonmated)
    assert abs(res["interpolated"]["eer"] - res["nearest"]["eer"]) <= step + 1e-12


def test_eer_bad_method_raises():
    cube = simulate.gaussian(n_subjects=10, seed=0)
    with pytest.raises(ValueError, match="method"):
        verification.eer(cube, method="convex")


# --------------------------------------------------------------------------
# Operating points: FNMR at FMR, FMR at FNMR
# --------------------------------------------------------------------------


def brute_fnmr_at_fmr(points, target):
    """The most lenient operating point (threshold among the scores) with FMR <= target."""
    for t, x, y in points:  # lenient to strict
        if x <= target * (1 + 1e-12):
            return t, x, y
    raise AssertionError("the sentinel always has FMR 0")


def brute_fmr_at_fnmr(points, target):
    """The strictest operating point with FNMR <= target."""
    for t, x, y in reversed(points):  # strict to lenient
        if y <= target * (1 + 1e-12):
            return t, x, y
    raise AssertionError("the most lenient threshold has FNMR 0")


FMR_TARGETS = [0.0, 0.05, 0.1, 0.2, 1 / 3, 0.5, 0.75, 1.0]


@examples(50)
@given(case=cases())
def test_operating_points_match_brute_force(case):
    (mated, nonmated), = case.split(()).values()
    assume(mated and nonmated)
    points = brute_points(mated, nonmated, case.kind)
    rates_at = {t: (x, y) for t, x, y in points}
    cube = case.cube()

    op = verification.fnmr_at_fmr(cube, FMR_TARGETS)
    for j, f in enumerate(FMR_TARGETS):
        _, x, y = brute_fnmr_at_fmr(points, f)
        got = op.isel(fmr_target=j)
        assert float(got.fnmr) == pytest.approx(y, abs=1e-12), f
        assert float(got.fmr) == pytest.approx(x, abs=1e-12) and float(got.fmr) <= f + 1e-12
        fnm, fm = brute_counts(mated, nonmated, float(got.threshold), case.kind)
        assert (int(got.false_nonmatches), int(got.false_matches)) == (fnm, fm)

    op = verification.fmr_at_fnmr(cube, FMR_TARGETS)
    for j, f in enumerate(FMR_TARGETS):
        t, x, y = brute_fmr_at_fnmr(points, f)
        got = op.isel(fnmr_target=j)
        assert float(got.fmr) == pytest.approx(x, abs=1e-12), f
        assert float(got.fnmr) == pytest.approx(y, abs=1e-12) and float(got.fnmr) <= f + 1e-12
        assert rates_at.get(float(got.threshold), brute_counts_rates(mated, nonmated, float(got.threshold), case.kind)) == (x, y)


def test_operating_points_hand_made_ties():
    # non-mated 5, 5, 4, 1; mated 5, 3. At t = 5 both 5s are false matches.
    cube = score_cube(
        np.array([[5.0, 5.0, 4.0], [5.0, 1.0, 3.0]]), subject=["a", "c"], reference_subject=["a", "b", "c"]
    )
    op = verification.fnmr_at_fmr(cube, [0.25, 0.5])
    # FMR <= .25 needs t > 5 (FMR(5) = 2/4): FNMR = 1 (5 and 3 rejected); FMR <= .5 allows t = 5
    assert op.fnmr.values.tolist() == [1.0, 0.5]
    assert op.fmr.values.tolist() == [0.0, 0.5]
    op = verification.fmr_at_fnmr(cube, [0.0, 0.5])
    # FNMR 0 needs t <= 3: FMR(3) = 3/4; FNMR .5 allows t = 5: FMR 2/4
    assert op.fmr.values.tolist() == [0.75, 0.5]
    assert op.threshold.values.tolist() == [3.0, 5.0]


@pytest.mark.parametrize("bad", [-0.1, 1.5, np.nan, [[0.1]], []])
def test_operating_point_targets_out_of_range_raise(bad):
    cube = simulate.gaussian(n_subjects=10, seed=0)
    with pytest.raises(ValueError):
        verification.fnmr_at_fmr(cube, bad)
    with pytest.raises(ValueError):
        verification.fmr_at_fnmr(cube, bad)


# --------------------------------------------------------------------------
# Large cubes: the windowed (tail-only) code paths, against scikit-learn
# --------------------------------------------------------------------------


def _large_case(kind: str, *, biased_sample=False, grid=True):
    """An all-against-all cube big enough (> 4 * 2**17 cells) for the windowed paths.

    Scores sit on a 0.5 grid (heavy ties; continuous with ``grid=False``), 1 % are NaN, and the diagonal is a
    self comparison. With ``biased_sample`` the cube has > 800 000 cells, so the
    strided sample takes every other column, and the odd columns hold the
    high-scoring impostors: the sample misjudges where the EER lies.
    """
    rng = np.random.default_rng(2024)
    n_subjects, per = (200, 5) if biased_sample else (160, 5)
    n = n_subjects * per
    subject = np.repeat([f"s{i:03d}" for i in range(n_subjects)], per)
    ids = np.array([f"x{i}" for i in range(n)])
    scores = rng.normal(0.0, 1.0, (n, n))
    mated = subject[:, None] == subject[None, :]
    scores[mated] += 2.2
    if biased_sample:
        scores[:, 1::2] += np.where(mated[:, 1::2], 0.0, 1.5)
    if grid:
        scores = np.round(scores * 2) / 2
    scores[rng.random((n, n)) < 0.01] = np.nan
    if kind == "distance":
        scores = 10.0 - scores
    cube = score_cube(scores, subject=subject, reference_subject=subject, probe_id=ids, reference_id=ids, score_kind=kind)
    # the comparisons, picked out plainly: not NaN, not the diagonal
    compared = ~np.isnan(scores) & ~np.eye(n, dtype=bool)
    m = scores[compared & mated]
    q = scores[compared & ~mated]
    return cube, m, q


def _sklearn_points(m, q, kind):
    """(threshold, FMR, FNMR) at every distinct score plus the sentinel, lenient to strict,
    read off sklearn.metrics.roc_curve."""
    y_true = np.r_[np.ones(m.size), np.zeros(q.size)]
    y = np.r_[m, q]
    y_score = y if kind == "similarity" else -y
    fpr, tpr, thr = metrics.roc_curve(y_true, y_score, drop_intermediate=False)
    # sklearn runs strict to lenient with thr[0] = +inf (nothing accepted)
    out = []
    for f, tp, th in zip(fpr[::-1], tpr[::-1], thr[::-1]):
        t = th if kind == "similarity" else -th
        out.append((float(t), float(f), float(1 - tp)))
    return out


def _numpy_rates(m, q, kind):
    """(FMR, FNMR) at t, counted straight from the definition on the picked-out scores."""

    def rates(t):
        if kind == "similarity":
            return float((q >= t).sum() / q.size), float((m < t).sum() / m.size)
        return float((q <= t).sum() / q.size), float((m > t).sum() / m.size)

    return rates


@pytest.mark.parametrize("kind", ["similarity", "distance"])
def test_large_cube_error_rates_det_and_operating_points(kind):
    cube, m, q = _large_case(kind)
    assert cube.size >= 4 * 2**17
    points = _sklearn_points(m, q, kind)
    rates_at = {t: (x, y) for t, x, y in points}
    ts = [t for t, _, _ in points if np.isfinite(t)][::7] + [-100.0, 100.0]
    r = verification.error_rates(cube, ts)
    assert int(r.n_mated) == m.size and int(r.n_nonmated) == q.size
    for k, t in enumerate(ts):
        # definition, directly on the picked-out scores
        acc_q = (q >= t) if kind == "similarity" else (q <= t)
        acc_m = (m >= t) if kind == "similarity" else (m <= t)
        assert int(r.false_matches[k]) == int(acc_q.sum())
        assert int(r.false_nonmatches[k]) == int((~acc_m).sum())
        if t in rates_at:
            assert (float(r.fmr[k]), float(r.fnmr[k])) == pytest.approx(rates_at[t], abs=1e-12)
    det = verification.det_curve(cube, points="all")
    assert det.sizes["threshold"] == len(points)
    for t, x, y in points:
        p = det.sel(threshold=t)
        assert (float(p.fmr), float(p.fnmr)) == pytest.approx((x, y), abs=1e-12)
    targets = [1e-4, 1e-3, 0.01, 0.1, 0.3]
    op = verification.fnmr_at_fmr(cube, targets)
    for j, f in enumerate(targets):
        _, x, y = brute_fnmr_at_fmr(points, f)
        assert (float(op.fmr[j]), float(op.fnmr[j])) == pytest.approx((x, y), abs=1e-12)
    op = verification.fmr_at_fnmr(cube, targets)
    for j, f in enumerate(targets):
        _, x, y = brute_fmr_at_fnmr(points, f)
        assert (float(op.fmr[j]), float(op.fnmr[j])) == pytest.approx((x, y), abs=1e-12)


@pytest.mark.parametrize("kind", ["similarity", "distance"])
@pytest.mark.parametrize("biased_sample", [False, True])
def test_large_cube_eer(kind, biased_sample):
    cube, m, q = _large_case(kind, biased_sample=biased_sample)
    check_eer_against_points(cube, _sklearn_points(m, q, kind), _numpy_rates(m, q, kind))


def test_large_cube_eer_continuous_scores():
    cube, m, q = _large_case("similarity", grid=False)
    points = _sklearn_points(m, q, "similarity")
    assert len(points) > 100_000
    check_eer_against_points(cube, points, _numpy_rates(m, q, "similarity"))


# --------------------------------------------------------------------------
# Kept dims: per-group results equal results on the .sel'd sub-cube
# --------------------------------------------------------------------------


def _drop_scalar(ds):
    return ds.drop_vars([c for c in ds.coords if ds[c].ndim == 0])


@examples(25)
@given(case=cases(max_collections=3))
def test_kept_dims_equal_selected_subcube(case):
    cube = case.cube()
    groups = case.split(("collection",))
    full_ok = all(m and q for m, q in groups.values())
    rates = verification.error_rates(cube, THRESHOLDS, dim="probe")
    det = verification.det_curve(cube, dim="probe") if full_ok else None
    eers = {m: verification.eer(cube, dim="probe", method=m) for m in verification.EER_METHODS} if full_ok else {}
    for c in cube.collection.values:
        sub = cube.sel(collection=c)
        try:
            bioxr.validate_score_cube(sub)
        except ScoreCubeError:
            continue
        xr.testing.assert_identical(
            _drop_scalar(rates.sel(collection=c)), verification.error_rates(sub, THRESHOLDS)
        )
        if det is not None:
            sub_det = verification.det_curve(sub)
            # the kept-dims curve is on the union of thresholds: compare on the group's own
            xr.testing.assert_identical(_drop_scalar(det.sel(collection=c).sel(threshold=sub_det.threshold)), sub_det)
        for method, res in eers.items():
            xr.testing.assert_identical(_drop_scalar(res.sel(collection=c)), verification.eer(sub, method=method))


@examples(25)
@given(case=cases(max_collections=3))
def test_kept_dims_eer_matches_brute_force_per_group(case):
    groups = case.split(("collection",))
    assume(all(m and q for m, q in groups.values()))
    cube = case.cube()
    for (c,), (mated, nonmated) in groups.items():
        check_eer_against_points(
            cube,
            brute_points(mated, nonmated, case.kind),
            brute_rates(mated, nonmated, case.kind),
            dim="probe",
            select={"collection": c},
        )


# Two collections of a 2 x 2 cube (probes of subjects a, b; references a, b).
# The groups' scores differ, so a union of thresholds would repeat points.
KEPT_DIM_CASES = [
    [[[3.0, 0.0], [1.0, 1.0]], [[3.0, 0.0], [2.0, 1.0]]],
    [[[0.0, 1.0], [3.0, 1.0]], [[1.0, 3.0], [1.0, 1.0]]],
    [[[1.0, 2.0], [3.0, 3.0]], [[0.0, 0.0], [3.0, 3.0]]],
]


@pytest.mark.parametrize("scores", KEPT_DIM_CASES)
@pytest.mark.parametrize("method", verification.EER_METHODS)
def test_kept_dims_eer_equals_subcube_hand_made(scores, method):
    cube = score_cube(
        np.array(scores).transpose(1, 0, 2),
        subject=["a", "b"],
        reference_subject=["a", "b"],
        dims=("probe", "collection", "reference"),
        coords={"collection": [0, 1]},
    )
    res = verification.eer(cube, dim="probe", method=method)
    for c in (0, 1):
        xr.testing.assert_identical(_drop_scalar(res.sel(collection=c)), verification.eer(cube.sel(collection=c), method=method))


def test_kept_dims_eer_on_photohead_equals_subcubes():
    cube = simulate.photohead(6, 3, 5, seed=2)
    for method in verification.EER_METHODS:
        res = verification.eer(cube, dim=("subject", "image"), method=method)
        for c in cube.collection.values:
            sub = verification.eer(cube.sel(collection=c), method=method)
            assert float(res.eer.sel(collection=c)) == pytest.approx(float(sub.eer))
            assert float(res.threshold.sel(collection=c)) == float(sub.threshold)


def test_kept_coordinates_survive():
    cube = simulate.photohead(6, 2, 8, seed=5)
    for res in (
        verification.error_rates(cube, [0.0, 1.0], dim=("subject", "image")),
        verification.det_curve(cube, dim=("subject", "image")),
        verification.eer(cube, dim=("subject", "image"), method="nearest"),
        verification.fnmr_at_fmr(cube, [0.01], dim=("subject", "image")),
    ):
        for name in ("weather", "time", "hour", "collection_effect"):
            xr.testing.assert_identical(res[name], cube[name])
        assert "subject_effect" not in res.coords and "reference_subject" not in res.coords
    # two kept dims: image_effect lives on (subject, image) and must come along
    res = verification.error_rates(cube, [0.5], dim="collection")
    xr.testing.assert_identical(res["image_effect"], cube["image_effect"])
    xr.testing.assert_identical(res["subject_effect"], cube["subject_effect"])


@examples(10)
@given(case=cases(max_collections=3))
def test_kept_weather_coordinate_from_random_cube(case):
    res = verification.error_rates(case.cube(), [1.0], dim="probe")
    assert res.weather.values.tolist() == [WEATHER[c % 3] for c in range(case.shape[1])]
    assert res.weather.dims == ("collection",)


# --------------------------------------------------------------------------
# Invariances: probe order, dask chunks
# --------------------------------------------------------------------------


@examples(20)
@given(case=cases(), data=st.data())
def test_permuting_probes_changes_nothing(case, data):
    cube = case.cube()
    perm = data.draw(st.permutations(range(case.shape[0])))
    permuted = cube.isel(probe=list(perm))
    xr.testing.assert_identical(
        verification.error_rates(cube, THRESHOLDS), verification.error_rates(permuted, THRESHOLDS)
    )
    xr.testing.assert_identical(
        verification.error_rates(cube, THRESHOLDS, dim="probe"),
        verification.error_rates(permuted, THRESHOLDS, dim="probe"),
    )
    (mated, nonmated), = case.split(()).values()
    if mated and nonmated:
        xr.testing.assert_identical(verification.det_curve(cube), verification.det_curve(permuted))
        xr.testing.assert_identical(verification.fnmr_at_fmr(cube, [0.1, 0.5]), verification.fnmr_at_fmr(permuted, [0.1, 0.5]))
        for method in verification.EER_METHODS:
            xr.testing.assert_identical(
                verification.eer(cube, method=method), verification.eer(permuted, method=method)
            )


@examples(15)
@given(case=cases(), data=st.data())
def test_permuting_references_changes_nothing(case, data):
    cube = case.cube()
    perm = data.draw(st.permutations(range(case.shape[2])))
    permuted = cube.isel(reference=list(perm))
    xr.testing.assert_identical(
        verification.error_rates(cube, THRESHOLDS, dim="probe"),
        verification.error_rates(permuted, THRESHOLDS, dim="probe"),
    )


def _random_integer_cube(seed=3, kind="similarity"):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 8, size=(12, 4, 6)).astype(float)
    scores[rng.random(scores.shape) < 0.1] = np.nan
    subject = [f"s{i % 6}" for i in range(12)]
    return score_cube(
        scores,
        subject=subject,
        reference_subject=[f"s{i}" for i in range(6)],
        dims=("probe", "collection", "reference"),
        coords={"collection": [1, 2, 3, 4], "weather": ("collection", ["clear", "rain", "rain", "fog"])},
        probe_id=[f"p{i}" for i in range(12)],
        reference_id=[f"p{i}" for i in range(0, 12, 2)],
        score_kind=kind,
    )


@pytest.mark.parametrize("kind", ["similarity", "distance"])
def test_dask_chunked_equals_in_memory(kind):
    cube = _random_integer_cube(kind=kind)
    lazy = cube.chunk({"probe": 5, "collection": 2})
    assert lazy.chunks is not None
    xr.testing.assert_identical(
        verification.error_rates(lazy, THRESHOLDS, dim="probe"), verification.error_rates(cube, THRESHOLDS, dim="probe")
    )
    xr.testing.assert_identical(verification.det_curve(lazy), verification.det_curve(cube))
    xr.testing.assert_identical(verification.roc_curve(lazy, dim="probe"), verification.roc_curve(cube, dim="probe"))
    xr.testing.assert_identical(verification.fnmr_at_fmr(lazy, [0.1, 0.3]), verification.fnmr_at_fmr(cube, [0.1, 0.3]))
    xr.testing.assert_identical(verification.fmr_at_fnmr(lazy, [0.1, 0.3]), verification.fmr_at_fnmr(cube, [0.1, 0.3]))
    for method in verification.EER_METHODS:
        xr.testing.assert_identical(verification.eer(lazy, method=method), verification.eer(cube, method=method))
        xr.testing.assert_identical(
            verification.eer(lazy, dim="probe", method=method), verification.eer(cube, dim="probe", method=method)
        )


def test_dask_photohead_equals_in_memory():
    lazy = simulate.photohead(6, 2, 9, seed=8, chunks={"collection": 4})
    eager = simulate.photohead(6, 2, 9, seed=8)
    xr.testing.assert_identical(
        verification.error_rates(lazy, [0.0, 1.0, 2.0], dim=("subject", "image")),
        verification.error_rates(eager, [0.0, 1.0, 2.0], dim=("subject", "image")),
    )
    xr.testing.assert_identical(verification.eer(lazy), verification.eer(eager))
    xr.testing.assert_identical(
        verification.eer(lazy, dim=("subject", "image")), verification.eer(eager, dim=("subject", "image"))
    )


def test_dask_cube_with_inf_raises_like_in_memory():
    cube = score_cube(np.array([[1.0, 0.0], [0.0, 2.0]]), subject=["a", "b"], reference_subject=["a", "b"])
    bad = cube.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ScoreCubeError):
        verification.det_curve(bad)
    with pytest.raises(ScoreCubeError):
        verification.det_curve(bad.chunk())


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def _cube_with_unenrolled_probe():
    # probe 2 (subject z) has no mated reference: a group of its own has no mated comparison
    return score_cube(
        np.array([[[3.0, 1.0]], [[0.0, 2.0]], [[1.0, 1.0]]]),
        subject=["a", "b", "z"],
        reference_subject=["a", "b"],
        dims=("probe", "collection", "reference"),
    )


def test_no_mated_comparison_in_a_kept_group_raises_for_curves_and_eer():
    cube = _cube_with_unenrolled_probe()
    with pytest.raises(ValueError, match="mated"):
        verification.det_curve(cube, dim="collection")
    with pytest.raises(ValueError, match="mated"):
        verification.roc_curve(cube, dim="collection")
    for method in verification.EER_METHODS:
        with pytest.raises(ValueError, match="mated"):
            verification.eer(cube, dim="collection", method=method)
    with pytest.raises(ValueError, match="mated"):
        verification.fnmr_at_fmr(cube, 0.1, dim="collection")
    with pytest.raises(ValueError, match="mated"):
        verification.fmr_at_fnmr(cube, 0.1, dim="collection")


def test_no_mated_comparison_in_a_kept_group_gives_nan_rate_with_zero_count():
    r = verification.error_rates(_cube_with_unenrolled_probe(), [1.0], dim="collection")
    assert r.n_mated.values.tolist() == [1, 1, 0]
    assert np.isnan(float(r.fnmr.isel(probe=2, threshold=0)))
    assert float(r.fmr.isel(probe=2, threshold=0)) == 1.0


def test_nan_and_bad_thresholds_raise():
    cube = simulate.gaussian(n_subjects=10, seed=0)
    with pytest.raises(ValueError, match="NaN"):
        verification.error_rates(cube, [0.0, np.nan])
    with pytest.raises(ValueError, match="NaN"):
        verification.fmr(cube, np.nan)
    with pytest.raises(ValueError):
        verification.fnmr(cube, [[0.0, 1.0]])


def test_bad_dim_raises():
    cube = simulate.gaussian(n_subjects=10, seed=0)
    with pytest.raises(ValueError, match="does not have"):
        verification.error_rates(cube, 0.0, dim="collection")
    with pytest.raises(ValueError, match="reference"):
        verification.det_curve(cube, dim="reference")


def test_invalid_cube_raises():
    cube = simulate.gaussian(n_subjects=10, seed=0)
    with pytest.raises(ScoreCubeError):
        verification.eer(cube.to_dataset())
    with pytest.raises(ScoreCubeError):
        verification.eer(cube.assign_attrs(score_kind="similar"))
