"""Verification rates: FMR, FNMR, ROC and DET curves, EER and operating points.

Every function reduces over ``dim`` (default: all probe dimensions) and keeps
the other probe dimensions, as :meth:`xarray.DataArray.mean` does; rates are
pooled over every compared cell of the reduced dimensions and all references.

Conventions (METHODS.md section 1, ISO/IEC 19795-1 Annex F.1):

- similarity scores accept when ``s >= t``; distance scores when ``d <= t``
  (a score equal to the threshold is accepted: a tie between a mated and a
  non-mated score is a false match at that threshold);
- ``FMR(t)`` = accepted non-mated comparisons / all non-mated comparisons;
  ``FNMR(t)`` = rejected mated comparisons / all mated comparisons;
  ``TMR = 1 - FNMR`` (GAR), ``TNR = 1 - FMR`` (GRR);
- NaN cells and self comparisons (same ``probe_id`` and ``reference_id``)
  are not comparisons and are never counted.

Everything is exact. Curves come from one sort of the scores (Annex F.1);
operating points (EER, FNMR at FMR) from the upper tail of the non-mated
scores only, found in one pass, with a check that the tail was deep enough
(see :mod:`bioxr.counting`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import conventions as _conventions
from . import counting
from . import eer as _eer
from .counting import Pool, mated_cells
from ._core import Grouped, check_targets, tails, warn_if_reversed
from ._core.eer_windows import _eer_from_pool, _eer_group, _finish
from .cube import ScoreCubeError

__all__ = [
    "EER_METHODS",
    "error_rates",
    "fmr",
    "fnmr",
    "det_curve",
    "roc_curve",
    "eer",
    "fnmr_at_fmr",
    "fmr_at_fnmr",
]

EER_METHODS = _eer.METHODS
CURVE_POINTS = ("corners", "all")


def _pools(groups: Grouped, lo=None, between=False, at=()):
    """Yield ``(g, Pool)``: every score sorted (``between``: counted between the mated ones, for
    corners only), or only those >= ``lo`` (similarity orientation), with exact counts ``at`` thresholds."""
    full = Pool.between if between else Pool.full
    for g in range(groups.n_groups):
        values, index = groups.block(g)
        pool = (full(values, index, groups.distance) if lo is None
                else Pool.window(values, index, groups.distance, lo, at=at))
        yield g, _finish(groups, pool, g, index)


def _iso_factors(groups: Grouped):
    """``(a, c, fte, fta)`` with GFRR = a + c FNMR and GFAR = c FMR (identity without failures)."""
    if groups.policy != "iso" or not groups.has_failures:
        return 0.0, 1.0, 0.0, 0.0
    u = groups.unit_failures()
    fte = u["n_failed_enrolments"] / u["n_references"] if u["n_references"] else 0.0
    fta = u["n_failed_acquisitions"] / u["n_probes"] if u["n_probes"] else 0.0
    return fte + (1 - fte) * fta, (1 - fte) * (1 - fta), fte, fta


def _generalize(ds: xr.Dataset, groups: Grouped) -> xr.Dataset:
    """Under failure_policy "iso", turn FMR and FNMR into GFAR and GFRR (counts stay those of comparisons)."""
    if groups.policy != "iso" or not groups.has_failures:
        return ds
    a, c, fte, fta = _iso_factors(groups)
    ds["fmr"] = c * ds["fmr"]
    ds["fnmr"] = a + c * ds["fnmr"]
    if "tmr" in ds:
        ds["tmr"] = 1 - ds["fnmr"]
    if "tnr" in ds:
        ds["tnr"] = 1 - ds["fmr"]
    ds["fmr"].attrs["long_name"] = "generalized false accept rate GFAR = (1-FTE)(1-FTA) FMR"
    ds["fnmr"].attrs["long_name"] = "generalized false reject rate GFRR = FTE + (1-FTE) FTA + (1-FTE)(1-FTA) FNMR"
    ds.attrs.update({"fte": fte, "fta": fta, "rates": "generalized (GFAR in fmr, GFRR in fnmr); counts are of comparisons made"})
    return ds


def _attrs(groups: Grouped, **extra) -> dict:
    return {"score_kind": groups.kind, "decision_rule": _convention(groups.kind), **extra, **groups.policy_attrs()}


def _convention(kind: str) -> str:
    if kind == "similarity":
        return "accept when score >= threshold; a tie with the threshold is a match"
    return "accept when distance <= threshold; a tie with the threshold is a match"


def _counts_dataset(groups: Grouped, fm, fnm, n_m, n_n, extra_dims, extra_coords, attrs) -> xr.Dataset:
    fm, fnm = np.asarray(fm), np.asarray(fnm)
    n_m = np.asarray(n_m).reshape((-1,) + (1,) * (fm.ndim - 1))
    n_n = np.asarray(n_n).reshape((-1,) + (1,) * (fm.ndim - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = {"fmr": fm / n_n, "fnmr": fnm / n_m}
    da = lambda a: groups.dataarray(a, extra_dims, extra_coords)  # noqa: E731
    ds = xr.Dataset(
        {
            "fmr": da(rates["fmr"]),
            "fnmr": da(rates["fnmr"]),
            "tmr": da(1 - rates["fnmr"]),
            "tnr": da(1 - rates["fmr"]),
            "false_matches": da(fm),
            "false_nonmatches": da(fnm),
            "n_mated": groups.dataarray(n_m.ravel()),
            "n_nonmated": groups.dataarray(n_n.ravel()),
        },
        attrs=attrs,
    )
    for name, text in (
        ("fmr", "false match rate"),
        ("fnmr", "false non-match rate"),
        ("tmr", "true match rate (GAR), 1 - FNMR"),
        ("tnr", "true non-match rate (GRR), 1 - FMR"),
        ("false_matches", "accepted non-mated comparisons"),
        ("false_nonmatches", "rejected mated comparisons"),
        ("n_mated", "mated comparisons"),
        ("n_nonmated", "non-mated comparisons"),
    ):
        ds[name].attrs["long_name"] = text
    return ds


def error_rates(cube: xr.DataArray, threshold, *, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
    """FMR, FNMR, TMR and TNR with their counts at given thresholds.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube, dims ``(*probe_dims, "reference")``, or a comparison
        list (:func:`bioxr.comparison_list`); both give the same result.
    threshold : float or array_like
        One or more decision thresholds; a sequence becomes the
        ``threshold`` dimension of the result, a scalar a scalar
        ``threshold`` coordinate (as with ``.sel``).
    dim : str, sequence of str or None, keyword-only
        Probe dimensions (of a list: its ``probe_dims`` cofactors) to pool
        over; None (default) pools over all of them. The others are kept.
    failure_policy : {"exclude", "nist", "iso"}, keyword-only
        How failed enrolments and acquisitions count (coordinates
        ``failed_enrolment`` / ``failed_acquisition``): left out
        (default), as false non-matches in mated comparisons (NIST), or
        through the ISO/IEC 19795-1 generalized rates (``fmr`` then holds
        GFAR and ``fnmr`` GFRR). Recorded in ``attrs["failure_policy"]``.

    Returns
    -------
    xarray.Dataset
        ``fmr``, ``fnmr``, ``tmr``, ``tnr``, ``false_matches``,
        ``false_nonmatches`` with dims ``(*kept, "threshold")``;
        ``n_mated``, ``n_nonmated`` with dims ``kept``; attrs
        ``score_kind`` and ``decision_rule``.

    See Also
    --------
    det_curve : the same counts at every distinct score.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=50, seed=1)
    >>> r = bioxr.verification.error_rates(cube, [1.0, 2.0])
    >>> r.fmr.dims
    ('threshold',)
    >>> bool((r.fmr.diff("threshold") <= 0).all())
    True
    """
    groups = Grouped(cube, dim, failure_policy=failure_policy, lazy=True)
    t = np.atleast_1d(np.asarray(threshold, dtype=float))
    if t.ndim != 1:
        raise ValueError("threshold must be a number or a 1-D sequence of numbers.")
    if np.isnan(t).any():
        raise ValueError("threshold contains NaN; give numeric thresholds.")
    ts = groups.orient(t)
    fm = np.empty((groups.n_groups, t.size), dtype=np.int64)
    fnm = np.empty_like(fm)
    n_m = np.empty(groups.n_groups, dtype=np.int64)
    n_n = np.empty_like(n_m)
    for g, pool in _pools(groups, lo=float(ts.min()) if t.size <= 16 else None, at=ts):
        fm[g] = pool.false_matches(ts)
        fnm[g] = pool.false_nonmatches(ts)
        n_m[g], n_n[g] = pool.n_mated, pool.n_nonmated
    if n_n.sum() == 0:
        raise ScoreCubeError("the scores hold no non-mated comparison with a score; FMR needs some.")
    ds = _counts_dataset(groups, fm, fnm, n_m, n_n, ("threshold",), {"threshold": t}, _attrs(groups))
    ds = _generalize(ds, groups)
    return ds.isel(threshold=0) if np.ndim(threshold) == 0 else ds


def fmr(cube: xr.DataArray, threshold, *, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
    """False match rate at given thresholds, with its counts.

    Returns a Dataset with ``fmr``, ``false_matches`` (dims ``(*kept,
    "threshold")``) and ``n_nonmated`` (dims ``kept``). See
    :func:`error_rates` for the parameters.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=50, seed=1)
    >>> float(bioxr.verification.fmr(cube, 10.0).fmr.item())
    0.0
    """
    return error_rates(cube, threshold, dim=dim, failure_policy=failure_policy)[["fmr", "false_matches", "n_nonmated"]]


def fnmr(cube: xr.DataArray, threshold, *, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
    """False non-match rate at given thresholds, with its counts.

    Returns a Dataset with ``fnmr``, ``false_nonmatches`` (dims ``(*kept,
    "threshold")``) and ``n_mated`` (dims ``kept``). See :func:`error_rates`
    for the parameters.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=50, seed=1)
    >>> float(bioxr.verification.fnmr(cube, -10.0).fnmr.item())
    0.0
    """
    return error_rates(cube, threshold, dim=dim, failure_policy=failure_policy)[["fnmr", "false_nonmatches", "n_mated"]]


def det_curve(cube: xr.DataArray, *, dim=None, points: str = "corners", failure_policy: str = "exclude") -> xr.Dataset:
    """The exact DET curve: FMR and FNMR over every threshold that matters.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all); the rest are kept.
    points : {"corners", "all"}, keyword-only
        ``"all"``: every distinct score is a threshold. ``"corners"``
        (default): only the corners of that staircase (the lowest score,
        each distinct mated score, the first score above each, and the
        sentinel). Between two consecutive mated scores only FMR moves, so
        the points left out lie on the straight segments between corners:
        the curve drawn is the same, exactly, with at most about twice as
        many points as distinct mated scores.
    failure_policy : {"exclude", "nist", "iso"}, keyword-only
        How failed enrolments and acquisitions count (coordinates
        ``failed_enrolment`` / ``failed_acquisition``): left out
        (default), as false non-matches in mated comparisons (NIST), or
        through the ISO/IEC 19795-1 generalized rates (``fmr`` then holds
        GFAR and ``fnmr`` GFRR). Recorded in ``attrs["failure_policy"]``.

    Returns
    -------
    xarray.Dataset
        ``fmr``, ``fnmr``, ``tmr``, ``tnr``, ``false_matches``,
        ``false_nonmatches`` over ``(*kept, "threshold")``; ``n_mated``,
        ``n_nonmated`` over ``kept``. Thresholds ascend and end with a
        sentinel at which nothing is accepted (``+inf`` for similarity,
        ``-inf`` first for distance), so the curve runs from (FMR 1, FNMR 0)
        to (FMR 0, FNMR 1). With kept dims all groups share the union of
        their thresholds; each group's curve is exact at each of them.

    References
    ----------
    ISO/IEC 19795-1:2006 Annex F.1 (seeds/004); METHODS.md section 1.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=30, seed=0)
    >>> det = bioxr.verification.det_curve(cube)
    >>> float(det.fmr[0]), float(det.fnmr[0]), float(det.fmr[-1]), float(det.fnmr[-1])
    (1.0, 0.0, 0.0, 1.0)
    >>> det.sizes["threshold"] < bioxr.verification.det_curve(cube, points="all").sizes["threshold"]
    True
    """
    if points not in CURVE_POINTS:
        raise ValueError(f"points={points!r}; choose 'corners' or 'all'.")
    groups = Grouped(cube, dim, failure_policy=failure_policy, lazy=True)
    pools = []
    for g, pool in _pools(groups, between=points == "corners"):
        groups.require(pool, g, "a DET curve")
        pools.append(pool)
    warn_if_reversed(pools[0].mated, pools[0].pool, groups.kind)
    per_group = [p.corner_thresholds() if points == "corners" else p.thresholds() for p in pools]
    ts = per_group[0] if len(per_group) == 1 else np.unique(np.concatenate(per_group))
    fm = np.stack([p.false_matches(ts) for p in pools])
    fnm = np.stack([p.false_nonmatches(ts) for p in pools])
    t = groups.orient(ts)
    if groups.distance:
        t, fm, fnm = t[::-1], fm[:, ::-1], fnm[:, ::-1]
    attrs = _attrs(groups, curve="DET: FMR against FNMR; plot on probit (normal deviate) axes", points=points)
    n_m = [p.n_mated for p in pools]
    n_n = [p.n_nonmated for p in pools]
    return _generalize(_counts_dataset(groups, fm, fnm, n_m, n_n, ("threshold",), {"threshold": t}, attrs), groups)


def roc_curve(cube: xr.DataArray, *, dim=None, points: str = "corners", failure_policy: str = "exclude") -> xr.Dataset:
    """The exact ROC curve: TMR (= 1 - FNMR) against FMR.

    The same Dataset as :func:`det_curve` (which already carries ``tmr``),
    labelled as an ROC.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=30, seed=0)
    >>> roc = bioxr.verification.roc_curve(cube)
    >>> bool(((roc.tmr + roc.fnmr) == 1).all())
    True
    """
    ds = det_curve(cube, dim=dim, points=points, failure_policy=failure_policy)
    ds.attrs["curve"] = "ROC: TMR against FMR"
    return ds


def eer(
    cube: xr.DataArray, *, dim=None, method: str | None = None, convention: str = "bioxr", failure_policy: str = "exclude"
) -> xr.Dataset:
    """Equal error rate, by a stated convention, with its threshold.

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all); the rest are kept.
    method : {"rocch", "interpolated", "nearest", "fvc2000"} or None, keyword-only
        ``"rocch"``: where the ROC convex hull crosses FMR = FNMR
        (BOSARIS). ``"interpolated"``: the crossing of the straight line
        between the two consecutive thresholds that bracket it.
        ``"nearest"``: the mean of FMR and FNMR at the threshold where they
        are closest (of two equally close, the more lenient).
        ``"fvc2000"``: FVC2000's midpoint of ``[EER_low, EER_high]`` at
        the better of the two thresholds that bracket the crossing
        (pyeer's EER). None (default): the convention's method ("rocch"
        for "bioxr"). See :mod:`bioxr.eer` for how they differ with heavy
        ties.
    convention : {"bioxr", "bob", "pyeer"}, keyword-only
        Whose rule (:data:`bioxr.conventions.EER`). ``"bioxr"`` (default)
        offers every method. ``"bob"``: bob.measure's ``eer``, method
        "nearest" with ties going to the stricter threshold, and bob's
        threshold (the midpoint between that score and the next lower
        one). ``"pyeer"``: pyeer's ``get_eer_stats``, method "fvc2000".
        Recorded in ``attrs["convention"]``; a method the convention does
        not use, or a convention that has no EER ("sklearn"), is an error.

    Returns
    -------
    xarray.Dataset
        ``eer``; ``threshold`` (see ``method``); ``fmr``, ``fnmr`` and
        their counts actually attained at that threshold (for "rocch" and
        "interpolated" they differ from ``eer``, which no single threshold
        attains); ``n_mated``, ``n_nonmated``; all over the kept dims.
        attrs ``convention``, ``eer_method`` and ``eer_convention`` say
        which rule was used.

    Notes
    -----
    Only a narrow window of the scores is sorted: a strided sample places
    the crossing, one pass keeps the scores whose FMR lies near it (and
    counts those above), and the answer is checked to be the one the whole
    curve gives; otherwise the window widens, down to sorting everything.

    References
    ----------
    Brümmer & de Villiers, The BOSARIS toolkit (2011), ROCCH-EER;
    METHODS.md section 1.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=200, seed=0)
    >>> res = bioxr.verification.eer(cube)
    >>> res.attrs["eer_method"], res.attrs["convention"]
    ('rocch', 'bioxr')
    >>> 0 < float(res.eer) < 0.5
    True
    >>> pyeer = bioxr.verification.eer(cube, convention="pyeer")
    >>> pyeer.attrs["eer_method"]
    'fvc2000'
    """
    method, ties = _conventions.eer_rule(method, convention)
    groups = Grouped(cube, dim, failure_policy=failure_policy, lazy=True)
    cols = ("eer", "threshold", "fmr", "fnmr", "false_matches", "false_nonmatches", "n_mated", "n_nonmated")
    out = np.empty((groups.n_groups, len(cols)))
    a, c, fte, fta = _iso_factors(groups)
    for g in range(groups.n_groups):
        values, index = groups.block(g)
        generalized = c != 1.0 or a != 0.0
        # fvc2000 reads the two points around the crossing: a window holds them (checked as for "interpolated"),
        # which a lazy group uses; in memory the whole curve is sorted, as before
        if generalized or (method == "fvc2000" and not counting._is_lazy(values)):
            pool = _finish(groups, Pool.full(values, index, groups.distance), g, index)
            groups.require(pool, g, "the EER")
            if g == 0 and not generalized:
                warn_if_reversed(pool.mated, pool.pool, groups.kind)
            out[g] = _eer_from_pool(pool, method, affine=(a, c) if generalized else None, ties=ties)
        else:
            out[g] = _eer_group(values, index, groups, g, method, ties)
    out[:, 1] = groups.orient(out[:, 1])
    ds = _scalar_dataset(groups, cols, out)
    rule = _eer.DESCRIPTIONS[method] if convention == "bioxr" else _conventions.describe("eer", convention)
    ds.attrs = _attrs(groups, convention=convention, eer_method=method, eer_convention=rule)
    if c != 1.0 or a != 0.0:
        ds.attrs.update({"fte": fte, "fta": fta, "rates": "generalized: the EER where GFAR = GFRR"})
    ds["eer"].attrs["long_name"] = f"equal error rate ({method})"
    return ds


def _scalar_dataset(groups: Grouped, cols, out, extra_dims=(), extra_coords=None) -> xr.Dataset:
    ints = {"false_matches", "false_nonmatches", "n_mated", "n_nonmated"}
    data = {}
    for j, name in enumerate(cols):
        column = out[:, j] if out.ndim == 2 else out[:, :, j]
        if name in ints:
            column = column.astype(np.int64)
        dims = () if name in ("n_mated", "n_nonmated") else extra_dims
        if not dims and column.ndim > 1:
            column = column[:, 0]
        data[name] = groups.dataarray(column, dims, extra_coords if dims else None)
    return xr.Dataset(data)


def _allowed(rate: float, n: int) -> int:
    """Largest error count k with k / n <= rate, robust to rounding."""
    return int(np.floor(rate * n * (1 + 8 * np.finfo(float).eps)))


def fnmr_at_fmr(
    cube: xr.DataArray, fmr, *, dim=None, convention: str = "bioxr", failure_policy: str = "exclude"
) -> xr.Dataset:
    """FNMR at the most lenient threshold whose FMR does not exceed each target.

    For a target ``f`` with ``n`` non-mated comparisons, at most ``k =
    floor(f n)`` false matches are allowed; the threshold is the lowest
    score above the ``(k+1)``-th highest non-mated score. Exact: no
    interpolation, ties respected. The peers place the threshold
    differently (``convention``).

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list.
    fmr : float or array_like
        FMR targets in [0, 1]; a sequence becomes the ``fmr_target``
        dimension, a scalar a scalar coordinate.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all).
    convention : {"bioxr", "bob", "pyeer"}, keyword-only
        Whose operating point (:data:`bioxr.conventions.FNMR_AT_FMR`).
        ``"bioxr"`` (default): as above, the threshold at any score.
        ``"bob"``: bob.measure's ``far_threshold`` then ``farfrr``: the
        threshold only at a non-mated score (the lowest whose FMR does not
        exceed the target; just above the highest non-mated score when
        none does), so FNMR is never below bioxr's. ``"pyeer"``: pyeer's
        FMR100 / FMR1000 (``get_fmr_op``): the distinct score whose FMR is
        nearest the target, even above it. Recorded in
        ``attrs["convention"]``.
    failure_policy : {"exclude", "nist", "iso"}, keyword-only
        How failed enrolments and acquisitions count (coordinates
        ``failed_enrolment`` / ``failed_acquisition``): left out
        (default), as false non-matches in mated comparisons (NIST), or
        through the ISO/IEC 19795-1 generalized rates (``fmr`` then holds
        GFAR and ``fnmr`` GFRR). Recorded in ``attrs["failure_policy"]``.

    Returns
    -------
    xarray.Dataset
        Over ``(*kept, "fmr_target")``: ``fnmr``, ``threshold``, ``fmr``
        (attained, ``<=`` target except under "pyeer"),
        ``false_matches``, ``false_nonmatches``; ``n_mated``,
        ``n_nonmated`` over ``kept``.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=200, seed=0)
    >>> op = bioxr.verification.fnmr_at_fmr(cube, [0.01, 0.001])
    >>> bool((op.fmr <= op.fmr_target).all())
    True
    >>> bob = bioxr.verification.fnmr_at_fmr(cube, [0.01, 0.001], convention="bob")
    >>> bool((bob.fnmr >= op.fnmr).all()), bob.attrs["convention"]
    (True, 'bob')
    """
    _conventions.check("fnmr_at_fmr", convention)
    targets = check_targets(fmr, "fmr")
    groups = Grouped(cube, dim, failure_policy=failure_policy, lazy=True)
    a, c, _, _ = _iso_factors(groups)
    raw = np.minimum(targets / c, 1.0)  # GFAR <= f  <=>  FMR <= f / c
    cols = ("fnmr", "threshold", "fmr", "false_matches", "false_nonmatches", "n_mated", "n_nonmated")
    out = np.empty((groups.n_groups, targets.size, len(cols)))
    for g in range(groups.n_groups):
        values, index = groups.block(g)
        share = min(0.5, 1.5 * float(raw.max()) + 0.002) if convention != "pyeer" else 1.0
        counted = None
        if share < 0.5 and counting._is_lazy(values) and values.size >= counting.MIN_WINDOW_CELLS:
            allowed = _allowed if convention != "bob" else _conventions.bob_allowed
            counted = tails.fnmr_at_fmr_counted(values, index, groups, g, raw, convention, share, allowed,
                                                lambda pool: _finish(groups, pool, g, index))
        if counted is not None:  # a lazy group: counts at sampled scores, then a narrow window per target
            for j, (t, fm_, fnm_, n_m, n_n) in enumerate(counted):
                out[g, j] = (a + c * (fnm_ / n_m), t, c * (fm_ / n_n), fm_, fnm_, n_m, n_n)
            continue
        while True:
            if share >= 1.0:  # pyeer's nearest FMR may lie anywhere: the whole curve
                pool = _finish(groups, Pool.full(values, index, groups.distance), g, index)
            else:
                pool = _finish(groups, Pool.tail(values, index, groups.distance, share=share), g, index)
            groups.require(pool, g, "FNMR at FMR")
            q = pool.nonmated_tail()
            allowed = _allowed if convention != "bob" else _conventions.bob_allowed
            ks = np.array([allowed(f, pool.n_nonmated) for f in raw])
            if pool.is_full or q.size >= ks.max() + 1:
                break
            share = min(0.5, share * 4)
        t_all = pool.thresholds()
        if convention == "pyeer":  # pyeer's thresholds: every distinct score (no sentinel)
            t_scores = t_all[np.isfinite(t_all)]
            x_all = pool.false_matches(t_scores) / pool.n_nonmated
        for j, k in enumerate(ks):
            if convention == "pyeer":
                t = t_scores[int(np.argmin(np.abs(x_all - raw[j])))]
            elif k >= pool.n_nonmated:
                # k >= n only for target 1, which sorts everything; bob: just below the lowest non-mated score
                t = t_all[0] if convention == "bioxr" else np.nextafter(q[0], -np.inf)
            else:
                pivot = q[q.size - 1 - k]  # the (k+1)-th highest non-mated score
                if convention == "bob":  # the lowest non-mated score above it, else just above them all
                    above = int(np.searchsorted(q, pivot, side="right"))
                    t = q[above] if above < q.size else np.nextafter(q[-1], np.inf)
                else:
                    t = t_all[np.searchsorted(t_all, pivot, side="right")]
            fm_ = int(pool.false_matches([t])[0])
            fnm_ = int(pool.false_nonmatches([t])[0])
            x, y = fm_ / pool.n_nonmated, fnm_ / pool.n_mated
            out[g, j] = (a + c * y, t, c * x, fm_, fnm_, pool.n_mated, pool.n_nonmated)
    out[:, :, 1] = groups.orient(out[:, :, 1])
    ds = _scalar_dataset(groups, cols, out, ("fmr_target",), {"fmr_target": targets})
    if np.ndim(fmr) == 0:
        ds = ds.isel(fmr_target=0)
    point = "most lenient threshold with FMR <= target (no interpolation)"
    if convention != "bioxr":
        point = _conventions.describe("fnmr_at_fmr", convention)
    ds.attrs = _attrs(groups, convention=convention, operating_point=point)
    if groups.policy == "iso" and groups.has_failures:
        ds.attrs["rates"] = "generalized: GFRR at the most lenient threshold with GFAR <= target"
    return ds


def fmr_at_fnmr(cube: xr.DataArray, fnmr, *, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
    """FMR at the strictest threshold whose FNMR does not exceed each target.

    For a target ``f`` with ``n`` mated comparisons, at most ``k = floor(f
    n)`` false non-matches are allowed; the threshold is the ``(k+1)``-th
    lowest mated score. Exact. Where failures alone make FNMR exceed a
    target (policies "nist" and "iso"), no threshold attains it: the
    threshold and the rates are NaN there.

    Returns
    -------
    xarray.Dataset
        Over ``(*kept, "fnmr_target")``: ``fmr``, ``threshold``, ``fnmr``
        (attained, ``<=`` target) and the counts.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=200, seed=0)
    >>> op = bioxr.verification.fmr_at_fnmr(cube, 0.1)
    >>> bool((op.fnmr <= 0.1).all())
    True
    """
    targets = check_targets(fnmr, "fnmr")
    groups = Grouped(cube, dim, failure_policy=failure_policy, lazy=True)
    a, c, _, _ = _iso_factors(groups)
    raw = (targets - a) / c  # GFRR <= f  <=>  FNMR <= (f - a) / c
    cols = ("fmr", "threshold", "fnmr", "false_matches", "false_nonmatches", "n_mated", "n_nonmated")
    out = np.empty((groups.n_groups, targets.size, len(cols)))
    for g in range(groups.n_groups):
        values, index = groups.block(g)
        if counting._is_lazy(values):  # many mated scores of a lazy group stay where they are (a Spread)
            (m, x), _ = counting.cells_and_sample(values, index, groups.distance, spread=True)
        else:
            m, x = mated_cells(values, index, groups.distance)
        if m.size == 0:
            raise ValueError("FMR at FNMR needs mated comparisons; this group has none.")
        failed_m = groups.failure_counts(g, index)[0] if groups.policy == "nist" else 0
        ks = np.array([_allowed(f, m.size + failed_m) - failed_m if f >= 0 else -1 for f in raw])
        inside = (ks >= 0) & (ks < m.size)
        ts = np.full(ks.size, np.inf)
        ts[inside] = m[ks[inside]] if isinstance(m, np.ndarray) else m.take(ks[inside])
        spread = not isinstance(m, np.ndarray)  # FMR counted at the thresholds only, not at every mated score above
        pool = Pool.window(values, index, groups.distance, float(np.min(ts)), cells=(m, x), at=ts, mated_grid=not spread)
        pool = _finish(groups, pool, g, index)
        groups.require(pool, g, "FMR at FNMR")
        fm_ = pool.false_matches(ts)
        fnm_ = pool.false_nonmatches(ts)
        for j in range(targets.size):
            if ks[j] < 0:  # the failures alone exceed the target
                out[g, j] = (np.nan, np.nan, np.nan, 0, 0, pool.n_mated, pool.n_nonmated)
                continue
            xr_, yr_ = fm_[j] / pool.n_nonmated, fnm_[j] / pool.n_mated
            out[g, j] = (c * xr_, ts[j], a + c * yr_, fm_[j], fnm_[j], pool.n_mated, pool.n_nonmated)
    out[:, :, 1] = groups.orient(out[:, :, 1])
    ds = _scalar_dataset(groups, cols, out, ("fnmr_target",), {"fnmr_target": targets})
    if np.ndim(fnmr) == 0:
        ds = ds.isel(fnmr_target=0)
    ds.attrs = _attrs(groups, operating_point="strictest threshold with FNMR <= target (no interpolation)")
    return ds
