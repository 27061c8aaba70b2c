"""Verification rates: FMR, FNMR, ROC and DET curves and the equal error rate.

Every function reduces over ``dim`` (default: all probe dimensions) and keeps
the other probe dimensions, as :meth:`xarray.DataArray.mean` does; rates are
pooled over every compared cell of the reduced dimensions and all references.

Conventions (METHODS.md section 1, ISO/IEC 19795-1 Annex F.1):

- similarity scores accept when ``s >= t``; distance scores when ``d <= t``;
- ``FMR(t)`` = accepted non-mated comparisons / all non-mated comparisons;
  ``FNMR(t)`` = rejected mated comparisons / all mated comparisons;
- NaN cells and self comparisons (same ``probe_id`` and ``reference_id``)
  are not comparisons and are never counted.

Curves are exact: every distinct score is a threshold, counted by one sort
and a binary search (no loop over thresholds).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import xarray as xr

from .cube import compared_mask, mated_mask, probe_dims, reduce_dims, score_kind, validate_score_cube

__all__ = [
    "EER_METHODS",
    "error_rates",
    "fmr",
    "fnmr",
    "det_curve",
    "roc_curve",
    "eer",
]

EER_METHODS = ("rocch", "interpolated", "nearest")

_EER_DESCRIPTIONS = {
    "rocch": (
        "ROC convex hull (ROCCH) EER, as in the BOSARIS toolkit: where the lower-left "
        "convex hull of the (FMR, FNMR) points crosses FMR = FNMR. It is reachable by "
        "randomising between the two thresholds of the hull segment; 'threshold' is the "
        "hull vertex nearer the crossing."
    ),
    "interpolated": (
        "linear-interpolated EER: where the straight segment between the two consecutive "
        "thresholds that bracket FMR = FNMR crosses it; 'threshold' is interpolated by "
        "the same fraction."
    ),
    "nearest": (
        "nearest-threshold EER, as in bob.measure: at the threshold minimising "
        "|FMR - FNMR|, the mean (FMR + FNMR) / 2."
    ),
}


class _Groups:
    """Sorted mated and non-mated scores for each combination of kept dims."""

    def __init__(self, cube: xr.DataArray, dim):
        validate_score_cube(cube)
        self.kind = score_kind(cube)
        reduced = reduce_dims(cube, dim, default=probe_dims(cube))
        self.kept = tuple(d for d in probe_dims(cube) if d not in reduced)
        order = (*self.kept, *reduced, "reference")
        cube = cube.transpose(*order)
        mated = mated_mask(cube).broadcast_like(cube).transpose(*order).values
        compared = compared_mask(cube).broadcast_like(cube).transpose(*order).values
        values = np.asarray(cube.values)
        kept_shape = tuple(cube.sizes[d] for d in self.kept)
        self.kept_shape = kept_shape
        self.kept_coords = {
            name: coord.variable
            for name, coord in cube.coords.items()
            if coord.dims and set(coord.dims) <= set(self.kept)
        }
        n_groups = int(np.prod(kept_shape)) if kept_shape else 1
        values = values.reshape(n_groups, -1)
        mated = mated.reshape(n_groups, -1)
        compared = compared.reshape(n_groups, -1)
        self.mated = [np.sort(v[m & c]) for v, m, c in zip(values, mated, compared)]
        self.nonmated = [np.sort(v[~m & c]) for v, m, c in zip(values, mated, compared)]
        self.dtype = values.dtype

    def counts(self, thresholds: np.ndarray):
        """False non-matches and false matches at each threshold, per group."""
        fnm = np.empty((len(self.mated), thresholds.size), dtype=np.int64)
        fm = np.empty_like(fnm)
        for g, (m, q) in enumerate(zip(self.mated, self.nonmated)):
            if self.kind == "similarity":
                fnm[g] = np.searchsorted(m, thresholds, side="left")
                fm[g] = q.size - np.searchsorted(q, thresholds, side="left")
            else:
                fnm[g] = m.size - np.searchsorted(m, thresholds, side="right")
                fm[g] = np.searchsorted(q, thresholds, side="right")
        return fnm, fm

    def n_mated(self) -> np.ndarray:
        return np.array([m.size for m in self.mated], dtype=np.int64)

    def n_nonmated(self) -> np.ndarray:
        return np.array([q.size for q in self.nonmated], dtype=np.int64)

    def all_thresholds(self) -> np.ndarray:
        """Every distinct score, plus the sentinel at which nothing is accepted."""
        scores = np.unique(np.concatenate([*self.mated, *self.nonmated]))
        if self.kind == "similarity":
            return np.concatenate([scores, [np.inf]])
        return np.concatenate([[-np.inf], scores])

    def kept_dataarray(self, data: np.ndarray, extra_dims: Sequence[Hashable] = (), extra_coords=None, name=None):
        shape = (*self.kept_shape, *data.shape[1:])
        coords = dict(self.kept_coords)
        if extra_coords:
            coords.update(extra_coords)
        return xr.DataArray(data.reshape(shape), dims=(*self.kept, *extra_dims), coords=coords, name=name)

    def require(self, mated: bool, nonmated: bool, what: str):
        for flag, arrays, label in ((mated, self.mated, "mated"), (nonmated, self.nonmated, "non-mated")):
            if flag:
                empty = [g for g, a in enumerate(arrays) if a.size == 0]
                if empty:
                    raise ValueError(
                        f"{what} needs {label} comparisons, but {len(empty)} of {len(arrays)} "
                        f"group(s) of the kept dims {list(self.kept)} have none. Reduce over "
                        "more dimensions (dim=...) or select groups that have them."
                    )


def _rates_dataset(groups: _Groups, thresholds, fnm, fm, extra_dims, extra_coords, attrs):
    n_m = groups.n_mated()[:, None]
    n_n = groups.n_nonmated()[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        fnmr_v = fnm / n_m
        fmr_v = fm / n_n
    ds = xr.Dataset(
        {
            "fmr": groups.kept_dataarray(fmr_v, extra_dims, extra_coords),
            "fnmr": groups.kept_dataarray(fnmr_v, extra_dims, extra_coords),
            "false_matches": groups.kept_dataarray(fm, extra_dims, extra_coords),
            "false_nonmatches": groups.kept_dataarray(fnm, extra_dims, extra_coords),
            "n_mated": groups.kept_dataarray(n_m[:, 0]),
            "n_nonmated": groups.kept_dataarray(n_n[:, 0]),
        },
        attrs=attrs,
    )
    ds["fmr"].attrs["long_name"] = "false match rate"
    ds["fnmr"].attrs["long_name"] = "false non-match rate"
    return ds


def _convention(kind: str) -> str:
    if kind == "similarity":
        return "accept when score >= threshold; a tie with the threshold is a match"
    return "accept when distance <= threshold; a tie with the threshold is a match"


def error_rates(cube: xr.DataArray, threshold, *, dim=None) -> xr.Dataset:
    """FMR and FNMR, with their counts, at given thresholds.

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube, dims ``(*probe_dims, "reference")``.
    threshold : float or array_like
        One or more decision thresholds; they become the ``threshold``
        dimension of the result.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over; None (default) pools over all of them.
        The others are kept.

    Returns
    -------
    xarray.Dataset
        ``fmr``, ``fnmr``, ``false_matches``, ``false_nonmatches`` with dims
        ``(*kept, "threshold")``; ``n_mated``, ``n_nonmated`` with dims
        ``kept``; attrs ``score_kind`` and ``decision_rule``.

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
    groups = _Groups(cube, dim)
    t = np.atleast_1d(np.asarray(threshold, dtype=float))
    if t.ndim != 1:
        raise ValueError("threshold must be a number or a 1-D sequence of numbers.")
    if np.isnan(t).any():
        raise ValueError("threshold contains NaN; give numeric thresholds.")
    fnm, fm = groups.counts(t)
    attrs = {"score_kind": groups.kind, "decision_rule": _convention(groups.kind)}
    return _rates_dataset(groups, t, fnm, fm, ("threshold",), {"threshold": t}, attrs)


def fmr(cube: xr.DataArray, threshold, *, dim=None) -> xr.Dataset:
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
    return error_rates(cube, threshold, dim=dim)[["fmr", "false_matches", "n_nonmated"]]


def fnmr(cube: xr.DataArray, threshold, *, dim=None) -> xr.Dataset:
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
    return error_rates(cube, threshold, dim=dim)[["fnmr", "false_nonmatches", "n_mated"]]


def det_curve(cube: xr.DataArray, *, dim=None) -> xr.Dataset:
    """The exact DET curve: FMR and FNMR at every distinct score.

    The thresholds are every distinct score of the (kept-dims) data, sorted
    ascending, plus one sentinel at which nothing is accepted (``+inf`` for
    similarity, ``-inf`` for distance), so the curve runs from (FMR 1, FNMR 0)
    to (FMR 0, FNMR 1). With kept dimensions all groups share the union of
    thresholds; each group's curve is still exact at each of them.

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all); the rest are kept.

    Returns
    -------
    xarray.Dataset
        ``fmr``, ``fnmr``, ``false_matches``, ``false_nonmatches`` over
        ``(*kept, "threshold")``; ``n_mated``, ``n_nonmated`` over ``kept``.

    References
    ----------
    ISO/IEC 19795-1:2006 Annex F.1 (seeds/004); METHODS.md section 1.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=30, seed=0)
    >>> det = bioxr.verification.det_curve(cube)
    >>> float(det.fmr[0]), float(det.fnmr[-1])
    (1.0, 1.0)
    """
    groups = _Groups(cube, dim)
    groups.require(True, True, "a DET curve")
    t = groups.all_thresholds()
    fnm, fm = groups.counts(t)
    attrs = {
        "score_kind": groups.kind,
        "decision_rule": _convention(groups.kind),
        "curve": "DET: FMR against FNMR; plot on probit (normal deviate) axes",
    }
    return _rates_dataset(groups, t, fnm, fm, ("threshold",), {"threshold": t}, attrs)


def roc_curve(cube: xr.DataArray, *, dim=None) -> xr.Dataset:
    """The exact ROC curve: FMR and TMR (= 1 - FNMR) at every distinct score.

    Same thresholds and parameters as :func:`det_curve`; the Dataset adds
    ``tmr`` (true match rate, also called GAR).

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=30, seed=0)
    >>> roc = bioxr.verification.roc_curve(cube)
    >>> bool(((roc.tmr + roc.fnmr) == 1).all())
    True
    """
    ds = det_curve(cube, dim=dim)
    ds["tmr"] = 1 - ds["fnmr"]
    ds["tmr"].attrs["long_name"] = "true match rate (1 - FNMR)"
    ds.attrs["curve"] = "ROC: TMR against FMR"
    return ds


def eer(cube: xr.DataArray, *, dim=None, method: str = "rocch") -> xr.Dataset:
    """Equal error rate, by a stated convention, with its threshold.

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all); the rest are kept.
    method : {"rocch", "interpolated", "nearest"}, keyword-only
        ``"rocch"`` (default): where the ROC convex hull crosses FMR = FNMR
        (BOSARIS). ``"interpolated"``: the crossing of the straight line
        between the two consecutive thresholds that bracket it.
        ``"nearest"``: bob.measure's mean of FMR and FNMR at the threshold
        where they are closest. On continuous scores the three agree to
        within one step of the curve; with heavy ties (integer scores) the
        steps are large and they differ by up to a step: ROCCH is the
        lowest, being a hull, and is attainable only by randomising
        between two thresholds.

    Returns
    -------
    xarray.Dataset
        ``eer``; ``threshold`` (see ``method``); ``fmr`` and ``fnmr`` at that
        threshold; all over the kept dims. attrs ``eer_method`` and
        ``eer_convention`` say which convention was used.

    References
    ----------
    Brümmer & de Villiers, The BOSARIS toolkit (2011), ROCCH-EER;
    METHODS.md section 1.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=200, seed=0)
    >>> res = bioxr.verification.eer(cube)
    >>> res.attrs["eer_method"]
    'rocch'
    >>> 0 < float(res.eer) < 0.5
    True
    """
    if method not in EER_METHODS:
        raise ValueError(f"method={method!r}; choose one of {EER_METHODS}.")
    groups = _Groups(cube, dim)
    groups.require(True, True, "the EER")
    t = groups.all_thresholds()
    fnm, fm = groups.counts(t)
    n_m = groups.n_mated()
    n_n = groups.n_nonmated()
    # order points from lenient to strict: FMR falls, FNMR rises
    if groups.kind == "distance":
        t = t[::-1]
        fnm = fnm[:, ::-1]
        fm = fm[:, ::-1]
    out = np.empty((len(n_m), 4))
    for g in range(len(n_m)):
        x = fm[g] / n_n[g]
        y = fnm[g] / n_m[g]
        out[g] = _EER_FUNCS[method](x, y, t)
    attrs = {
        "eer_method": method,
        "eer_convention": _EER_DESCRIPTIONS[method],
        "score_kind": groups.kind,
        "decision_rule": _convention(groups.kind),
    }
    ds = xr.Dataset(
        {
            "eer": groups.kept_dataarray(out[:, 0]),
            "threshold": groups.kept_dataarray(out[:, 1]),
            "fmr": groups.kept_dataarray(out[:, 2]),
            "fnmr": groups.kept_dataarray(out[:, 3]),
            "n_mated": groups.kept_dataarray(n_m),
            "n_nonmated": groups.kept_dataarray(n_n),
        },
        attrs=attrs,
    )
    ds["eer"].attrs["long_name"] = f"equal error rate ({method})"
    return ds


def _eer_nearest(x, y, t):
    k = int(np.argmin(np.abs(x - y)))
    return (x[k] + y[k]) / 2, t[k], x[k], y[k]


def _eer_interpolated(x, y, t):
    d = y - x  # non-decreasing from lenient to strict
    k = int(np.searchsorted(d, 0.0, side="left"))
    if k < d.size and d[k] == 0:
        return x[k], t[k], x[k], y[k]
    lo, hi = k - 1, k
    s = -d[lo] / (d[hi] - d[lo])
    value = x[lo] + s * (x[hi] - x[lo])
    if np.isfinite(t[lo]) and np.isfinite(t[hi]):
        thr = t[lo] + s * (t[hi] - t[lo])
        near = lo if s < 0.5 else hi
    else:
        near = lo if np.isfinite(t[lo]) else hi
        thr = t[near]
    return value, thr, x[near], y[near]


def _eer_rocch(x, y, t):
    hull = _lower_hull(x, y)
    hx, hy = x[hull], y[hull]
    d = hy - hx  # along the hull (lenient to strict) strictly increasing
    k = int(np.searchsorted(d, 0.0, side="left"))
    if k < d.size and d[k] == 0:
        v = hull[k]
        return hx[k], t[v], x[v], y[v]
    lo, hi = k - 1, k
    s = -d[lo] / (d[hi] - d[lo])
    value = hx[lo] + s * (hx[hi] - hx[lo])
    v = hull[lo] if abs(d[lo]) <= abs(d[hi]) else hull[hi]
    return value, t[v], x[v], y[v]


def _lower_hull(x, y) -> np.ndarray:
    """Indices of the lower-left convex hull of points ordered with x falling.

    Points arrive ordered lenient to strict (x non-increasing, y
    non-decreasing). The hull is built on them reversed (x ascending, y
    non-increasing) with Andrew's monotone chain and returned in the
    original order. Only corners of the staircase can be hull vertices: of
    each run of equal x the last point (lowest y) and of each run of equal y
    the first point (lowest x).
    """
    idx = np.arange(x.size)[::-1]
    xs, ys = x[::-1], y[::-1]
    n = xs.size
    last_of_x = np.ones(n, dtype=bool)
    last_of_x[:-1] = xs[1:] != xs[:-1]
    first_of_y = np.ones(n, dtype=bool)
    first_of_y[1:] = ys[1:] != ys[:-1]
    candidates = np.flatnonzero(last_of_x & first_of_y)
    stack: list[int] = []
    for i in candidates.tolist():
        while len(stack) >= 2:
            a, b = stack[-2], stack[-1]
            cross = (xs[b] - xs[a]) * (ys[i] - ys[a]) - (ys[b] - ys[a]) * (xs[i] - xs[a])
            if cross <= 0:
                stack.pop()
            else:
                break
        stack.append(i)
    return idx[np.array(stack)][::-1]


_EER_FUNCS = {"rocch": _eer_rocch, "interpolated": _eer_interpolated, "nearest": _eer_nearest}
