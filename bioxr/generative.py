"""Specificity and generalisation of a generative model.

A generative model (of faces, shapes, registered images...) is judged by
comparing the samples it synthesises with the samples it was trained on
(METHODS.md section 6; Schestowitz et al., seed ``003_*.txt``). With a
training set ``{I_i}, i = 1..n``, a synthetic set ``{I_j}, j = 1..m`` and a
distance ``|I_i - I_j|``:

- generalisation ``G = mean_i min_j |I_i - I_j|``: how close the model comes
  to every training sample (can it *reach* the whole class?);
- specificity ``S = mean_j min_i |I_i - I_j|``: how close every synthetic
  sample lies to some training sample (does it generate *only* the class?);
- standard errors ``sigma_G = SD_i(min_j |I_i - I_j|) / sqrt(n - 1)`` and
  ``sigma_S = SD_j(min_i |I_i - I_j|) / sqrt(m - 1)``.

Both are low for a good model. A model that memorises its training set has
``G = S = 0``; both measures say nothing about over-fitting on their own, so
read them beside held-out data.

Conventions (stated in the results' attrs):

- SD is the population standard deviation (``ddof=0``). The ``sqrt(n - 1)``
  of the formula is then Bessel's correction, so ``sigma_G = SD_ddof1 /
  sqrt(n)``: the usual standard error of a mean. Taking ``ddof=1`` *and*
  dividing by ``sqrt(n - 1)`` would correct twice. The standard errors treat
  the nearest distances as independent, which they are only approximately
  (two training samples may share a nearest synthetic sample). They need
  ``n >= 2`` (``m >= 2``): with one sample the formula divides by zero, and
  bioxr raises rather than return a meaningless number.
- Nearest neighbours are found in tiles of at most ``block_size`` distances
  (default ``2**23``, 64 MB of float64), so the ``n x m`` distance matrix is
  never built; both minima (for ``G`` and for ``S``) come from the same
  pass over the tiles. The samples themselves (``n x d`` and ``m x d``) are
  held in memory; besides a tile, the search holds a boolean mask of it and
  at most 16 candidate neighbours per sample.
- ``"euclidean"`` and ``"sqeuclidean"`` give the brute-force answer
  (:func:`scipy.spatial.distance.cdist`) for any common offset of the data.
  Both sets are centred on the training mean, which cancels an offset
  exactly; on the centred samples ``|a|^2 + |b|^2 - 2 a.b`` (a matrix
  product) screens the candidates: every sample within that shortcut's
  worst-case rounding bound of the best stays a candidate, and the
  candidates' distances are recomputed directly, ``|a - b|`` from the
  original values, to choose the nearest and report its distance. An exact
  copy gives exactly 0, ties are ties of the direct distances, and float32
  (or integer) samples are compared in float64. A sample with more than 16
  candidates (many exact or near ties, or samples far from the training
  mean compared with their nearest distances, such as far-apart clusters)
  is resolved by a direct scan of the other set: still exact, but without
  the matrix product, so slower. Other metrics go through
  :func:`scipy.spatial.distance.cdist` tile by tile.
- Ties: the nearest neighbour reported is the first (lowest position) among
  equally near samples.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import numpy as np
import xarray as xr
from scipy.spatial.distance import cdist

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "SYNTHETIC",
    "TRAINING",
    "generalisation",
    "specificity",
    "specificity_generalisation",
]

#: Dimension of the per-sample results over the training set.
TRAINING = "training"
#: Dimension of the per-sample results over the synthetic set.
SYNTHETIC = "synthetic"
#: Default largest number of distances held at once: 2**23 float64 = 64 MB.
DEFAULT_BLOCK_SIZE = 2**23

_TRICK_METRICS = ("euclidean", "sqeuclidean")
# cdist metrics whose default parameters are estimated from the data passed
# in: tile by tile they would change from block to block.
_DATA_DEPENDENT = {"seuclidean": "V", "mahalanobis": "VI"}
_METHOD = "specificity and generalisation (Schestowitz et al.; METHODS.md section 6)"
_SE_TEXT = "sigma = SD(nearest distances, ddof=0) / sqrt(count - 1) = SD(ddof=1) / sqrt(count)"
_REFERENCE = "METHODS.md section 6; seed 003_6b210d2704e13292.txt (Schestowitz et al.)"


# --------------------------------------------------------------------------- inputs
def _samples(data, name: str, sample_dim: Hashable):
    """``(values (count, features), feature_dims, DataArray or None)`` of one input."""
    if isinstance(data, xr.Dataset):
        raise TypeError(f"{name} is a Dataset: pass a DataArray (or a NumPy array) of samples.")
    if isinstance(data, xr.DataArray):
        if sample_dim not in data.dims:
            raise ValueError(
                f"{name} has no sample dimension {sample_dim!r} (dims {tuple(data.dims)}); "
                "name it with sample_dim=."
            )
        features = tuple(d for d in data.dims if d != sample_dim)
        return data.transpose(sample_dim, *features), features, data
    values = np.asarray(data)
    if values.ndim == 0:
        raise ValueError(f"{name} is a scalar: pass samples along the first axis.")
    return values, None, None


def _flatten(values, name: str) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, not dtype {values.dtype}.")
    if values.shape[0] == 0:
        raise ValueError(f"{name} has no samples.")
    if values.size == 0:
        raise ValueError(f"{name} has no features.")
    flat = values.reshape(values.shape[0], -1)
    if not np.isfinite(flat).all():
        bad = int((~np.isfinite(flat)).any(axis=1).sum())
        raise ValueError(
            f"{name} contains NaN or infinite values ({bad} of {flat.shape[0]} samples): "
            "distances to them are undefined; drop or impute those samples first."
        )
    return flat


def _prepare(training, synthetic, sample_dim):
    x, xfeat, xda = _samples(training, "training", sample_dim)
    y, yfeat, yda = _samples(synthetic, "synthetic", sample_dim)
    if xfeat is not None and yfeat is not None:
        if set(xfeat) != set(yfeat):
            raise ValueError(f"training and synthetic have different feature dims: {xfeat} and {yfeat}.")
        y = y.transpose(sample_dim, *xfeat)
        for d in xfeat:
            if x.sizes[d] != y.sizes[d]:
                raise ValueError(f"feature dim {d!r} has size {x.sizes[d]} in training, {y.sizes[d]} in synthetic.")
            if d in x.indexes and d in y.indexes and not x.indexes[d].equals(y.indexes[d]):
                raise ValueError(f"feature dim {d!r} has different coordinates in training and synthetic.")
    x = _flatten(x.values if xda is not None else x, "training")
    y = _flatten(y.values if yda is not None else y, "synthetic")
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"training has {x.shape[1]} features per sample, synthetic {y.shape[1]}: they must match."
        )
    return x, y, xda, yda


def _check_metric(metric, metric_kwargs) -> tuple[str, dict]:
    kwargs = dict(metric_kwargs or {})
    if callable(metric):
        return getattr(metric, "__name__", repr(metric)), kwargs
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string or a callable, not {type(metric).__name__}.")
    if metric in _DATA_DEPENDENT and _DATA_DEPENDENT[metric] not in kwargs:
        key = _DATA_DEPENDENT[metric]
        raise ValueError(
            f"metric {metric!r} needs metric_kwargs={{{key!r}: ...}}: scipy would otherwise "
            "estimate it from each block, and the distances would depend on the block size."
        )
    if metric in _TRICK_METRICS and kwargs:
        raise ValueError(f"metric {metric!r} takes no metric_kwargs (got {sorted(kwargs)}).")
    if metric in _TRICK_METRICS or metric in _DATA_DEPENDENT:
        return metric, kwargs
    try:  # fail before the pass on an unknown name or option
        cdist(np.zeros((1, 2)), np.ones((1, 2)), metric, **kwargs)
    except (ValueError, TypeError) as error:
        raise ValueError(f"metric {metric!r} is not usable by scipy.spatial.distance.cdist: {error}") from error
    return metric, kwargs


def _check_block_size(block_size) -> int:
    if block_size is None:
        return DEFAULT_BLOCK_SIZE
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer (distances per tile), not {block_size!r}.")
    return int(block_size)


# --------------------------------------------------------------------------- nearest neighbours
# Unit roundoff of float64 and the per-entry bound of the dot-product trick
# (see _trick_nearest): |t_ij - D_ij| <= _trick_factor(f) * (|x'_i|^2 + |y'_j|^2).
_UNIT_ROUNDOFF = 2.0**-53
#: Most candidates kept per sample before it falls back to a direct scan.
_CANDIDATE_CAP = 16


def _trick_factor(features: int) -> float:
    """Relative error bound of ``|a|^2 + |b|^2 - 2 a.b`` against the direct ``|a - b|^2``.

    Worst-case rounding (any summation order, Higham's ``gamma_f``) of the
    norms, the dot product, the two additions, the centring and the direct
    computation sums to about ``(4 f + 16) u (|a|^2 + |b|^2)``; twice that is
    used.
    """
    return (8 * features + 32) * _UNIT_ROUNDOFF


def _centred_norms(a: np.ndarray, centre: np.ndarray, rows: int) -> np.ndarray:
    out = np.empty(a.shape[0])
    for start in range(0, a.shape[0], rows):
        tile = np.asarray(a[start : start + rows], dtype=np.float64) - centre
        out[start : start + rows] = np.einsum("ij,ij->i", tile, tile)
    return out


def _pair_distances(a: np.ndarray, b: np.ndarray, ia: np.ndarray, ib: np.ndarray, rows: int, squared: bool):
    """Distances ``|a[ia[k]] - b[ib[k]]|`` computed directly, ``rows`` pairs at a time."""
    out = np.empty(ia.size)
    for start in range(0, ia.size, rows):
        stop = start + rows
        diff = np.asarray(a[ia[start:stop]], dtype=np.float64) - np.asarray(b[ib[start:stop]], dtype=np.float64)
        out[start:stop] = np.einsum("ij,ij->i", diff, diff)
    return out if squared else np.sqrt(out)


class _Candidates:
    """Candidate neighbours of each of ``count`` samples, at most ``cap`` each.

    A sample offered more than ``cap`` candidates (exact or near ties) is
    marked ``over`` and its candidates are dropped: :meth:`resolve` gives it
    a direct scan instead.
    """

    def __init__(self, count: int, cap: int):
        self.cap = cap
        self.counts = np.zeros(count, dtype=np.intp)
        self.over = np.zeros(count, dtype=bool)
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, mask: np.ndarray, t: np.ndarray, start: int, other_start: int, axis: int):
        """Store the entries of a tile's ``mask``; owners run along ``axis`` from ``start``."""
        length = mask.shape[axis]
        counts = self.counts[start : start + length]
        over = self.over[start : start + length]
        counted = np.count_nonzero(mask) > length
        if counted:  # ties somewhere: count per owner first, so no owner stores more than cap
            counts += np.count_nonzero(mask, axis=1 - axis)
            over |= counts > self.cap
            if over.any():
                mask &= ~over[:, None] if axis == 0 else ~over[None, :]
        flat = np.flatnonzero(mask)
        i, j = np.divmod(flat, mask.shape[1])
        owner, other = (i, j) if axis == 0 else (j, i)
        if not counted:  # at most one entry per owner on average: count after
            counts += np.bincount(owner, minlength=length)
            over |= counts > self.cap
            keep = ~over[owner]
            flat, owner, other = flat[keep], owner[keep], other[keep]
        self.parts.append((owner + start, other + other_start, t.ravel()[flat]))

    def resolve(self, src, dst, limit, squared, block_size):
        """``(distance, nearest)``: the exact nearest ``dst`` sample of each ``src`` sample."""
        count = self.counts.size
        dist = np.full(count, np.inf)
        nearest = np.zeros(count, dtype=np.intp)
        if self.parts:
            owner, other, t = (np.concatenate(p) for p in zip(*self.parts))
            keep = ~self.over[owner] & (t <= limit[owner])
            owner, other = owner[keep], other[keep]
            d = _pair_distances(src, dst, owner, other, max(1, block_size // src.shape[1]), squared)
            order = np.lexsort((other, d, owner))  # by owner, then distance, then position
            owner, other, d = owner[order], other[order], d[order]
            first = np.ones(owner.size, dtype=bool)
            first[1:] = owner[1:] != owner[:-1]
            dist[owner[first]] = d[first]
            nearest[owner[first]] = other[first]
        scan = np.flatnonzero(self.over)
        if scan.size:
            dist[scan], nearest[scan] = _direct_scan(src, dst, scan, squared, block_size)
        return dist, nearest


def _direct_scan(src, dst, owners, squared, block_size):
    """Nearest ``dst`` sample of each ``src[owners]`` by direct differences (no shortcut)."""
    cols = min(dst.shape[0], block_size)
    rows = max(1, block_size // cols)
    dist = np.full(owners.size, np.inf)
    nearest = np.zeros(owners.size, dtype=np.intp)
    for a in range(0, owners.size, rows):
        sa = np.asarray(src[owners[a : a + rows]], dtype=np.float64)
        for b in range(0, dst.shape[0], cols):
            d = cdist(sa, np.asarray(dst[b : b + cols], dtype=np.float64), "sqeuclidean")  # direct differences
            if not squared:
                np.sqrt(d, out=d)
            r = d.argmin(axis=1)
            rv = d[np.arange(d.shape[0]), r]
            better = rv < dist[a : a + rows]  # strict: the earlier tile wins ties
            dist[a : a + rows][better] = rv[better]
            nearest[a : a + rows][better] = r[better] + b
    return dist, nearest


def _trick_nearest(x: np.ndarray, y: np.ndarray, squared: bool, block_size: int):
    """Exact nearest neighbours both ways for the (squared) Euclidean distance.

    Both sets are centred on the training mean ``c``, so a large common
    offset cancels exactly (``x - c`` of nearby floats is exact). On the
    centred samples ``t_ij = |x'_i|^2 + |y'_j|^2 - 2 x'_i.y'_j`` (one matrix
    product of the samples augmented with their norms) differs from the
    direct ``D_ij = |x_i - y_j|^2`` by at most ``e_ij = k (|x'_i|^2 +
    |y'_j|^2)`` (:func:`_trick_factor`). Every ``j`` with ``t_ij <= min_j t_ij
    + 2 e_i`` (``e_i`` the bound with the largest ``|y'|^2``) may be the
    nearest; these candidates are kept (at most ``_CANDIDATE_CAP``, else the
    sample gets a direct scan) and their distances recomputed directly, so the
    nearest neighbour and its distance are those of a brute-force search.
    """
    n, m, f = x.shape[0], y.shape[0], x.shape[1]
    cols = min(m, block_size)
    rows = max(1, min(n, block_size // cols))
    feature_rows = max(1, block_size // f)  # input rows at a time, bounded like a tile
    centre = np.mean(x, axis=0, dtype=np.float64)
    nx = _centred_norms(x, centre, feature_rows)
    ny = _centred_norms(y, centre, feature_rows)
    factor = _trick_factor(f)
    slack_x = 2 * factor * (nx + ny.max())  # t may be e too low here and e too high at the minimum
    slack_y = 2 * factor * (ny + nx.max())
    best_x = np.full(n, np.inf)
    best_y = np.full(m, np.inf)
    cand_x = _Candidates(n, _CANDIDATE_CAP)
    cand_y = _Candidates(m, _CANDIDATE_CAP)
    cand_x.over |= ~np.isfinite(slack_x)  # norms overflowing float64: scan directly
    cand_y.over |= ~np.isfinite(slack_y)
    for a in range(0, n, rows):
        xa = np.empty((min(rows, n - a), f + 2))  # [-2 x', |x'|^2, 1]: -2 is exact
        np.subtract(x[a : a + rows], centre, out=xa[:, :f])
        xa[:, :f] *= -2.0
        xa[:, f] = nx[a : a + rows]
        xa[:, f + 1] = 1.0
        for b in range(0, m, cols):
            yb = np.empty((min(cols, m - b), f + 2))  # [y', 1, |y'|^2]
            np.subtract(y[b : b + cols], centre, out=yb[:, :f])
            yb[:, f] = 1.0
            yb[:, f + 1] = ny[b : b + cols]
            t = xa @ yb.T  # |x'|^2 + |y'|^2 - 2 x'.y'
            mask = np.empty(t.shape, dtype=bool)
            bx = best_x[a : a + rows]
            np.minimum(bx, t.min(axis=1), out=bx)
            np.less_equal(t, (bx + slack_x[a : a + rows])[:, None], out=mask)
            cand_x.add(mask, t, a, b, axis=0)
            by = best_y[b : b + cols]
            np.minimum(by, t.min(axis=0), out=by)
            np.less_equal(t, (by + slack_y[b : b + cols])[None, :], out=mask)
            cand_y.add(mask, t, b, a, axis=1)
    dx, ix = cand_x.resolve(x, y, best_x + slack_x, squared, block_size)
    dy, iy = cand_y.resolve(y, x, best_y + slack_y, squared, block_size)
    return dx, ix, dy, iy


def _nearest(x: np.ndarray, y: np.ndarray, metric, kwargs: dict, block_size: int):
    """Nearest distances and positions both ways, from one pass over tiles.

    Returns ``(dx, ix, dy, iy)``: ``dx[i] = min_j d(x_i, y_j)`` at ``j =
    ix[i]``, and ``dy[j] = min_i d(x_i, y_j)`` at ``i = iy[j]``. No tile
    holds more than ``block_size`` distances.
    """
    if isinstance(metric, str) and metric in _TRICK_METRICS:
        return _trick_nearest(x, y, metric == "sqeuclidean", block_size)
    n, m = x.shape[0], y.shape[0]
    cols = min(m, block_size)
    rows = max(1, min(n, block_size // cols))
    dx = np.full(n, np.inf)
    ix = np.zeros(n, dtype=np.intp)
    dy = np.full(m, np.inf)
    iy = np.zeros(m, dtype=np.intp)
    for a in range(0, n, rows):
        xa = np.asarray(x[a : a + rows], dtype=np.float64)
        for b in range(0, m, cols):
            yb = np.asarray(y[b : b + cols], dtype=np.float64)
            d = cdist(xa, yb, metric, **kwargs)
            if not np.isfinite(d).all():
                raise ValueError(
                    f"metric {metric!r} gave NaN or infinite distances (a cosine or "
                    "correlation distance of a constant or zero sample, say)."
                )
            # nearest synthetic sample of each training sample in this tile
            r = d.argmin(axis=1)
            rv = d[np.arange(d.shape[0]), r]
            better = rv < dx[a : a + rows]  # strict: the earlier tile wins ties
            dx[a : a + rows][better] = rv[better]
            ix[a : a + rows][better] = r[better] + b
            # nearest training sample of each synthetic sample in this tile
            c = d.argmin(axis=0)
            cv = d[c, np.arange(d.shape[1])]
            better = cv < dy[b : b + cols]
            dy[b : b + cols][better] = cv[better]
            iy[b : b + cols][better] = c[better] + a
    return dx, ix, dy, iy


# --------------------------------------------------------------------------- results
def _sample_coords(da: xr.DataArray | None, sample_dim, new_dim: str, count: int) -> dict:
    """Coordinates of ``sample_dim`` moved onto ``new_dim`` (non-index ones prefixed)."""
    coords = {new_dim: np.arange(count)}
    if da is None:
        return coords
    for name, coord in da.coords.items():
        if coord.dims != (sample_dim,):
            continue
        if name == sample_dim:
            coords[new_dim] = coord.values
        else:
            coords[f"{new_dim}_{name}"] = (new_dim, coord.values, coord.attrs)
    return coords


def _mean_se(distances: np.ndarray, what: str, symbol: str):
    count = distances.size
    if count < 2:
        raise ValueError(
            f"sigma_{symbol} needs at least 2 {what} samples (SD / sqrt({'n' if symbol == 'G' else 'm'} - 1) "
            f"divides by zero with {count}); pass more samples."
        )
    return float(distances.mean()), float(distances.std(ddof=0) / np.sqrt(count - 1))


def _metric_options_text(kwargs: dict) -> str:
    parts = []
    for key, value in kwargs.items():
        arr = np.asarray(value)
        parts.append(f"{key}={value!r}" if arr.ndim == 0 else f"{key}=<array {arr.shape}>")
    return ", ".join(parts)


def _compute(training, synthetic, sample_dim, metric, metric_kwargs, block_size, *, want_g: bool, want_s: bool):
    metric_name, kwargs = _check_metric(metric, metric_kwargs)
    block = _check_block_size(block_size)
    x, y, xda, yda = _prepare(training, synthetic, sample_dim)
    n, m = x.shape[0], y.shape[0]
    # Fail before the expensive pass when a standard error cannot be formed.
    if want_g and n < 2:
        _mean_se(np.zeros(n), "training", "G")  # raises
    if want_s and m < 2:
        _mean_se(np.zeros(m), "synthetic", "S")  # raises
    dx, ix, dy, iy = _nearest(x, y, metric, kwargs, block)

    distance_text = f"{metric_name} distance between flattened samples ({x.shape[1]} features)"
    data_vars: dict = {}
    coords: dict = {}
    if want_g:
        g, sigma_g = _mean_se(dx, "training", "G")
        data_vars["G"] = ((), g, {"long_name": "generalisation: mean over training samples of the nearest synthetic distance"})
        data_vars["sigma_G"] = ((), sigma_g, {"long_name": "standard error of G", "formula": _SE_TEXT})
    if want_s:
        s, sigma_s = _mean_se(dy, "synthetic", "S")
        data_vars["S"] = ((), s, {"long_name": "specificity: mean over synthetic samples of the nearest training distance"})
        data_vars["sigma_S"] = ((), sigma_s, {"long_name": "standard error of S", "formula": _SE_TEXT})
    data_vars["n_training"] = ((), n, {"long_name": "number of training samples"})
    data_vars["n_synthetic"] = ((), m, {"long_name": "number of synthetic samples"})
    if want_g:
        coords.update(_sample_coords(xda, sample_dim, TRAINING, n))
        data_vars["training_distance"] = (TRAINING, dx, {"long_name": "distance to the nearest synthetic sample"})
        data_vars["training_nearest"] = (TRAINING, ix, {"long_name": "position of the nearest synthetic sample"})
    if want_s:
        coords.update(_sample_coords(yda, sample_dim, SYNTHETIC, m))
        data_vars["synthetic_distance"] = (SYNTHETIC, dy, {"long_name": "distance to the nearest training sample"})
        data_vars["synthetic_nearest"] = (SYNTHETIC, iy, {"long_name": "position of the nearest training sample"})
    attrs = {
        "method": _METHOD,
        "metric": metric_name,
        "distance": distance_text,
        "metric_options": _metric_options_text(kwargs),
        "sd_ddof": 0,
        "standard_error": _SE_TEXT + " (nearest distances treated as independent)",
        "nearest_neighbour": (
            "blocked exact search, at most block_size distances per tile; "
            + ("centred on the training mean, |a|^2 + |b|^2 - 2ab to screen candidates within its rounding "
               "bound, direct |a - b| to choose and report; " if metric_name in _TRICK_METRICS else "")
            + "ties go to the lowest position"
        ),
        "block_size": block,
        "reference": _REFERENCE,
    }
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


# --------------------------------------------------------------------------- public API
_PARAMS = """
    training : xarray.DataArray or array_like
        The training samples: a DataArray with dimension ``sample_dim`` and
        any feature dims (flattened into one vector per sample), or an
        array whose first axis is the sample (a 1-D array is one feature
        per sample).
    synthetic : xarray.DataArray or array_like
        Samples drawn from the model, as ``training``; same feature dims
        (matched by name, coordinates must agree) or the same number of
        features.
    sample_dim : hashable, keyword-only
        Name of the sample dimension of DataArray inputs; default
        ``"sample"``.
    metric : str or callable, keyword-only
        Distance ``|I_i - I_j|``: ``"euclidean"`` (default) or
        ``"sqeuclidean"`` (screened by the dot-product trick, then computed
        directly: exact for any offset of the data), or any metric
        of :func:`scipy.spatial.distance.cdist` (``"cityblock"``,
        ``"cosine"``, ``"minkowski"``, a callable...).
    metric_kwargs : mapping, keyword-only
        Options of a cdist metric (``{"p": 3}`` for ``"minkowski"``).
        ``"seuclidean"`` and ``"mahalanobis"`` need ``V`` / ``VI`` here:
        estimated per tile they would depend on the block size.
    block_size : int, keyword-only
        Largest number of distances held at once (a tile of ``rows x cols``
        with ``rows * cols <= block_size``); default
        :data:`DEFAULT_BLOCK_SIZE` = ``2**23`` (64 MB of float64). The
        result does not depend on it."""


def specificity_generalisation(
    training,
    synthetic,
    *,
    sample_dim: Hashable = "sample",
    metric: str | Callable = "euclidean",
    metric_kwargs: Mapping | None = None,
    block_size: int | None = None,
) -> xr.Dataset:
    """Specificity and generalisation of a generative model, with standard errors.

    ``G = mean_i min_j |I_i - I_j|`` over training samples ``i``, ``S =
    mean_j min_i |I_i - I_j|`` over synthetic samples ``j``, and
    ``sigma = SD(ddof=0) / sqrt(count - 1)``; both nearest distances come
    from one blocked pass (see the module notes).

    Parameters
    ----------{params}

    Returns
    -------
    xarray.Dataset
        Scalars ``G``, ``sigma_G``, ``S``, ``sigma_S``, ``n_training``,
        ``n_synthetic``; over dim ``training``: ``training_distance`` (the
        nearest synthetic distance of each training sample, whose mean is
        ``G``) and ``training_nearest`` (its position in ``synthetic``);
        over dim ``synthetic``: ``synthetic_distance`` and
        ``synthetic_nearest`` likewise. The ``training`` / ``synthetic``
        coordinates take the ``sample_dim`` labels of DataArray inputs
        (positions for arrays); other coordinates on ``sample_dim`` come
        along prefixed (``training_subject``). attrs ``method``, ``metric``,
        ``distance``, ``sd_ddof``, ``standard_error``, ``block_size``,
        ``reference``.

    Raises
    ------
    ValueError
        NaN or infinite values, mismatched features, fewer than 2 training
        or synthetic samples (the standard errors divide by ``count - 1``),
        or an unknown metric.

    See Also
    --------
    generalisation, specificity

    References
    ----------
    METHODS.md section 6; seed ``003_6b210d2704e13292.txt``: Schestowitz,
    Twining, Cootes et al., specificity and generalisation of appearance
    models (equations 5-8; equation 8's ``min_j`` is read as ``min_i``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bioxr.generative import specificity_generalisation
    >>> rng = np.random.default_rng(0)
    >>> training = xr.DataArray(rng.normal(size=(40, 3, 3)), dims=("sample", "y", "x"))
    >>> good = xr.DataArray(rng.normal(size=(60, 3, 3)), dims=("sample", "y", "x"))
    >>> res = specificity_generalisation(training, good)
    >>> int(res.n_training), int(res.n_synthetic), res.training_distance.dims
    (40, 60, ('training',))
    >>> bool(np.isclose(res.G, res.training_distance.mean()))
    True
    >>> biased = specificity_generalisation(training, good + 2.0)
    >>> bool(biased.G > res.G + 3 * res.sigma_G), bool(biased.S > res.S + 3 * res.sigma_S)
    (True, True)
    >>> float(specificity_generalisation(training, training).S)  # memorised: perfect
    0.0
    """
    return _compute(training, synthetic, sample_dim, metric, metric_kwargs, block_size, want_g=True, want_s=True)


def generalisation(
    training,
    synthetic,
    *,
    sample_dim: Hashable = "sample",
    metric: str | Callable = "euclidean",
    metric_kwargs: Mapping | None = None,
    block_size: int | None = None,
) -> xr.Dataset:
    """Generalisation ``G = mean_i min_j |I_i - I_j|`` and its standard error.

    How close the model's samples come to each training sample: low when
    the model can reach the whole training class.
    ``sigma_G = SD_i(min_j |I_i - I_j|) / sqrt(n - 1)`` with the population
    SD (``ddof=0``), i.e. the usual standard error of the mean.

    Parameters
    ----------{params}

    Returns
    -------
    xarray.Dataset
        Scalars ``G``, ``sigma_G``, ``n_training``, ``n_synthetic``;
        ``training_distance`` and ``training_nearest`` over dim
        ``training``. attrs as :func:`specificity_generalisation`.

    See Also
    --------
    specificity, specificity_generalisation

    References
    ----------
    METHODS.md section 6, equations 5 and 7 of seed ``003_6b210d2704e13292.txt``.

    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.generative import generalisation
    >>> rng = np.random.default_rng(1)
    >>> training = rng.normal(size=(30, 5))
    >>> res = generalisation(training, np.vstack([training, rng.normal(size=(10, 5))]))
    >>> float(res.G), float(res.sigma_G), res.attrs["metric"]
    (0.0, 0.0, 'euclidean')
    """
    return _compute(training, synthetic, sample_dim, metric, metric_kwargs, block_size, want_g=True, want_s=False)


def specificity(
    training,
    synthetic,
    *,
    sample_dim: Hashable = "sample",
    metric: str | Callable = "euclidean",
    metric_kwargs: Mapping | None = None,
    block_size: int | None = None,
) -> xr.Dataset:
    """Specificity ``S = mean_j min_i |I_i - I_j|`` and its standard error.

    How close each synthetic sample lies to some training sample: low when
    the model generates only members of the training class.
    ``sigma_S = SD_j(min_i |I_i - I_j|) / sqrt(m - 1)`` with the population
    SD (``ddof=0``), i.e. the usual standard error of the mean.

    Parameters
    ----------{params}

    Returns
    -------
    xarray.Dataset
        Scalars ``S``, ``sigma_S``, ``n_training``, ``n_synthetic``;
        ``synthetic_distance`` and ``synthetic_nearest`` over dim
        ``synthetic``. attrs as :func:`specificity_generalisation`.

    See Also
    --------
    generalisation, specificity_generalisation

    References
    ----------
    METHODS.md section 6, equations 6 and 8 of seed ``003_6b210d2704e13292.txt``.

    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.generative import specificity
    >>> training = np.array([[0.0, 0.0], [10.0, 0.0]])
    >>> synthetic = np.array([[0.0, 1.0], [10.0, 3.0], [4.0, 0.0]])
    >>> res = specificity(training, synthetic)
    >>> res.synthetic_distance.values.tolist(), res.synthetic_nearest.values.tolist()
    ([1.0, 3.0, 4.0], [0, 1, 0])
    >>> round(float(res.S), 6), round(float(res.sigma_S), 6)
    (2.666667, 0.881917)
    """
    return _compute(training, synthetic, sample_dim, metric, metric_kwargs, block_size, want_g=False, want_s=True)


for _f in (specificity_generalisation, generalisation, specificity):
    _f.__doc__ = _f.__doc__.replace("{params}", _PARAMS)
del _f
