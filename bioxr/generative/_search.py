"""Exact nearest neighbours between two sample sets, tiled, for specificity and generalisation.

The Euclidean shortcut ``|a|^2 + |b|^2 - 2 a.b`` on centred data picks candidates; every candidate
within the shortcut's rounding bound is re-measured directly, so the nearest distance is exact for
any offset of the data (a sample with too many tied candidates falls back to a direct scan).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

_TRICK_METRICS = ("euclidean", "sqeuclidean")
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
