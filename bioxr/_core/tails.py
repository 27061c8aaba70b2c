"""Operating points in the upper tail of a lazy group, from counts and narrow windows (small results only)."""

from __future__ import annotations

import numpy as np

from ..counting import Pool, cells_and_sample

__all__ = ["fnmr_at_fmr_counted"]


def fnmr_at_fmr_counted(values, index, groups, g: int, raw, convention: str, share: float, allowed, finish):
    """FNMR at FMR of a lazy group without sending its tail: ``(t, fm, fnm, n_mated, n_nonmated)`` per target.

    ``raw``: the FMR targets (of comparisons); ``share``: the tail share to
    start from; ``allowed(f, n)``: the false matches a target allows (the
    convention's); ``finish(pool)``: the failure policy applied to a pool.
    The same operating points as :func:`bioxr.verification.fnmr_at_fmr`'s tail pool, in three
    blockwise passes whose results are small: the mated cells and the
    strided sample; counts of the non-mated scores at or above each sampled
    score of the tail (blocks whose tail is large send counts, not scores),
    which place each target's pivot, the ``(k + 1)``-th highest non-mated
    score, between two consecutive sampled scores; and the scores between
    those two, one narrow window per target. The pivot and the threshold
    after it are read there exactly (the upper sampled score is itself a
    non-mated score above the pivot, so the window holds the next score
    and, for "bob", the next non-mated one). None when the tail was never
    deep enough (the caller then sorts, as before).
    """
    # many mated scores stay where they are (a Spread): counted at the grid, brought only in the narrow windows
    (m, x), sample = cells_and_sample(values, index, groups.distance, spread=True)
    while share < 0.5 and sample.size:
        lo = float(np.quantile(sample, 1 - share, method="lower"))
        grid = np.unique(sample[sample >= lo])
        # counts at the sampled scores only: the mated ones in this wide window can be most of them
        pool = finish(Pool.window(values, index, groups.distance, lo, cells=(m, x), at=grid, mated_grid=False))
        groups.require(pool, g, "FNMR at FMR")
        ks = np.array([allowed(f, pool.n_nonmated) for f in raw])
        n_ge = pool.false_matches(grid)  # non-mated scores >= each sampled score, exact
        if n_ge[0] >= ks.max() + 1 and ks.max() < pool.n_nonmated:
            break
        share = min(0.5, share * 4)
    else:
        return None
    cut = [int(np.count_nonzero(n_ge >= k + 1)) - 1 for k in ks]  # the pivot lies in [grid[i], grid[i + 1])
    bounds = sorted({(float(grid[i]), float(grid[i + 1]) if i + 1 < grid.size else np.inf) for i in cut})
    pools = dict(zip(bounds, Pool.windows(values, index, groups.distance, bounds, (m, x))))
    out = []
    for k, i in zip(ks, cut):
        key = (float(grid[i]), float(grid[i + 1]) if i + 1 < grid.size else np.inf)
        p = finish(pools[key])
        q = p.nonmated_tail()
        # non-mated scores above the window
        n_hi = 0 if np.isposinf(p.hi) else int(p.false_matches([p.hi])[0]) - int(np.count_nonzero(q == p.hi))
        pivot = q[q.size - 1 - (int(k) - n_hi)]  # the (k+1)-th highest non-mated score
        if convention == "bob":
            above = int(np.searchsorted(q, pivot, side="right"))
            t = q[above] if above < q.size else np.nextafter(q[-1], np.inf)
        else:
            t_all = p.thresholds()
            t = t_all[np.searchsorted(t_all, pivot, side="right")]
        out.append((t, int(p.false_matches([t])[0]), int(p.false_nonmatches([t])[0]), p.n_mated, p.n_nonmated))
    return out
