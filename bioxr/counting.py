"""Exact error counts for one group of comparisons, fast.

The verification functions reduce a score cube to groups (one per
combination of kept dimensions). For each group this module gathers the
mated and self-comparison cells from the labels alone (they are sparse),
and leaves the non-mated scores where they are: a count over the non-mated
scores is a count over all cells minus the same count over the mated and
excluded cells. No mask the size of the scores is ever built.

Two ways to get the non-mated scores in order:

- :meth:`Pool.full`: one ``np.sort`` of all the group's scores; used for
  whole curves.
- :meth:`Pool.window`: only the scores in a window ``[lo, hi]`` (and the
  count of those above it), found by one pass in cache-sized blocks; used
  for operating points (EER, FNMR at FMR) that live in a narrow band of
  the curve. Callers check that the window held the answer exactly and
  widen it otherwise.

Everything here works in "similarity orientation": distance scores are
negated (only the small arrays ever are), so "accept when s >= t" holds
throughout and the caller negates thresholds back.

Scores of any float dtype are compared with float64 thresholds exactly as
in float64: the pools (sorted scores, mated and excluded cells) are held in
float64, and the one pass over the raw scores compares them in their own
dtype against the threshold rounded outwards to that dtype
(:func:`_dtype_bound`), which gives the same decisions without a cast of the
scores.
"""

from __future__ import annotations

import numpy as np

from ._core.errors import ScoreCubeError

__all__ = ["CellIndex", "Pool", "MIN_WINDOW_CELLS", "mated_cells", "strided_sample"]

_BLOCK = 1 << 16  # elements per block of the extraction pass (512 KiB of float64)
#: Below this many cells a group is simply sorted: a window would not pay.
MIN_WINDOW_CELLS = 1 << 18


class CellIndex:
    """Flat positions of mated and excluded (self) cells in a 2-D score block.

    Parameters
    ----------
    probe_codes : ndarray of int, shape (P,)
        Code of each probe's subject among the reference subjects (-1: not enrolled).
    ref_codes : ndarray of int, shape (R,)
        Code of each reference's subject.
    self_cols : ndarray of int, shape (P,), optional
        Reference column holding the probe itself (-1: none).
    """

    def __init__(self, probe_codes, ref_codes, self_cols=None):
        n_ref = ref_codes.size
        order = np.argsort(ref_codes, kind="stable")
        n_codes = int(ref_codes.max()) + 1 if ref_codes.size else 0
        counts = np.bincount(ref_codes, minlength=n_codes)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        enrolled = probe_codes >= 0
        per_probe = np.where(enrolled, counts[np.where(enrolled, probe_codes, 0)], 0)
        rows = np.repeat(np.arange(probe_codes.size), per_probe)
        first = np.repeat(starts[np.where(enrolled, probe_codes, 0)], per_probe)
        offset = np.arange(rows.size) - np.repeat(np.cumsum(per_probe) - per_probe, per_probe)
        cols = order[first + offset]
        flat = rows * n_ref + cols
        excluded = np.empty(0, dtype=np.int64)
        if self_cols is not None:
            has = self_cols >= 0
            excluded = np.flatnonzero(has) * n_ref + self_cols[has]
            flat = np.setdiff1d(flat, excluded, assume_unique=False)
        self.mated = flat.astype(np.int64)
        self.excluded = excluded.astype(np.int64)


def _pieces(values):
    """Yield ``(flat offset, flat float block)`` over a 2-D NumPy or dask array, in row order.

    A NumPy array is one piece; a dask array is computed one row-block at a
    time, so a lazy cube is never held at once.
    """
    if not hasattr(values, "blocks"):
        flat = np.asarray(values).reshape(-1)
        yield 0, flat if np.issubdtype(flat.dtype, np.floating) else flat.astype(np.float64)
        return
    import dask

    arr = values.rechunk({1: -1}) if len(values.chunks[1]) > 1 else values
    offset = 0
    step = 2  # two row-blocks computed at once: both cores busy, two blocks in memory
    for i in range(0, arr.numblocks[0], step):
        for block in dask.compute(*[arr.blocks[j] for j in range(i, min(i + step, arr.numblocks[0]))]):
            block = np.asarray(block).reshape(-1)
            if not np.issubdtype(block.dtype, np.floating):
                block = block.astype(np.float64)
            yield offset, block
            offset += block.size


def _skip(index) -> np.ndarray | None:
    """Mated and excluded positions of an index, when they are a large enough share to bias a sample."""
    if index.mated.size + index.excluded.size == 0:
        return None
    return np.concatenate([index.mated, index.excluded])


def _check_finite(block: np.ndarray) -> bool:
    """True when the block holds NaN; raise when it holds an infinity."""
    if np.isfinite(np.add.reduce(block)):
        return False
    if np.isinf(block).any():
        raise ScoreCubeError(
            "the score cube holds infinite scores; scores must be finite (NaN means not compared, "
            "or declare a sentinel with missing=)."
        )
    return True


def mated_cells(values, index: CellIndex, distance: bool):
    """Sorted (similarity-oriented) mated and excluded scores, NaN dropped."""
    if hasattr(values, "blocks"):
        mated_idx, excl_idx = np.sort(index.mated), np.sort(index.excluded)
        m_parts, x_parts = [], []
        for offset, flat in _pieces(values):
            for idx, parts in ((mated_idx, m_parts), (excl_idx, x_parts)):
                a, b = np.searchsorted(idx, [offset, offset + flat.size])
                parts.append(flat[idx[a:b] - offset])
        m, x = np.concatenate(m_parts).astype(np.float64), np.concatenate(x_parts).astype(np.float64)
    else:
        flat = np.asarray(values).reshape(-1)
        m = flat[index.mated].astype(np.float64, copy=False)
        x = flat[index.excluded].astype(np.float64, copy=False)
    m = m[~np.isnan(m)]
    x = x[~np.isnan(x)]
    if distance:
        m, x = -m, -x
    return np.sort(m), np.sort(x)


class Pool:
    """The non-mated scores of a group, known exactly in a window of scores.

    Attributes
    ----------
    pool : ndarray
        Sorted (ascending, similarity-oriented) values of *all* compared
        cells (mated and excluded included) in ``[lo, hi]``.
    lo, hi : float
        The window; ``-inf`` and ``+inf`` when every score is in the pool.
    n_above : int
        Compared cells (of any kind) above ``hi``.
    mated, excluded : ndarray
        Sorted mated and excluded scores (all of them).
    n_mated, n_nonmated : int
        Numbers of mated and non-mated comparisons in the group (all of them).

    Counts are exact at thresholds in ``[lo, hi]``, and at ``+inf`` when
    ``hi`` is ``+inf``.
    """

    def __init__(self, pool, mated, excluded, n_nonmated, lo, hi=np.inf, n_above=0):
        self.pool = pool
        self.mated = mated
        self.excluded = excluded
        self.n_nonmated = int(n_nonmated)
        self.n_mated = int(mated.size)
        self.lo = float(lo)
        self.hi = float(hi)
        self.n_above = int(n_above)
        self.edges = np.empty(0)
        self.n_edges = np.empty(0, dtype=np.int64)
        self.failed_mated = 0
        self.failed_nonmated = 0

    def add_failures(self, n_mated: int, n_nonmated: int) -> "Pool":
        """Count failed comparisons (failure policy "nist"): never accepted at any threshold.

        A failed mated comparison is a false non-match everywhere; a failed
        non-mated one is a correct non-match everywhere. Both count in the
        denominators.
        """
        self.failed_mated, self.failed_nonmated = int(n_mated), int(n_nonmated)
        self.n_mated = int(self.mated.size) + self.failed_mated
        self.n_nonmated += self.failed_nonmated
        return self

    @property
    def is_full(self) -> bool:
        return np.isneginf(self.lo) and np.isposinf(self.hi)

    # -- construction -------------------------------------------------------
    @classmethod
    def full(cls, values: np.ndarray, index: CellIndex, distance: bool, cells=None) -> "Pool":
        """Sort every score of the group once (``cells``: its mated_cells, if known)."""
        m, x = cells if cells is not None else mated_cells(values, index, distance)
        s = np.sort(np.asarray(values), axis=None)  # curves need every score: a lazy cube is loaded here
        # float64 (sorted first: faster in float32), so that thresholds made from the scores are float64 ones
        s = s.astype(np.float64, copy=False)
        n_valid = int(np.searchsorted(s, np.inf, side="right"))
        if n_valid and (np.isinf(s[0]) or np.isinf(s[n_valid - 1])):
            _check_finite(s[[0, n_valid - 1]])
        s = s[:n_valid]
        if distance:
            s = s[::-1]
            np.negative(s, out=s)
        return cls(s, m, x, n_valid - m.size - x.size, -np.inf)

    @classmethod
    def window(
        cls, values: np.ndarray, index: CellIndex, distance: bool, lo: float, hi: float = np.inf, cells=None, edges=()
    ) -> "Pool":
        """Keep the scores in ``[lo, hi]`` (similarity orientation) and count those above.

        One pass over the scores in cache-sized blocks. It also counts the
        cells at or beyond each of ``edges``, so FMR is known exactly there
        (:meth:`edge_false_matches`). A window that is not bounded below
        sorts everything instead.
        """
        if not np.isfinite(lo) or values.size < MIN_WINDOW_CELLS:
            return cls.full(values, index, distance, cells)
        m, x = cells if cells is not None else mated_cells(values, index, distance)
        kept, n_above, n_nan, n_edges = _extract(values, lo, hi, distance, edges)
        kept.sort()
        kept = kept.astype(np.float64, copy=False)
        if distance:
            kept = kept[::-1]
            np.negative(kept, out=kept)
        n_valid = values.size - n_nan
        pool = cls(kept, m, x, n_valid - m.size - x.size, lo, hi, n_above)
        pool.edges, pool.n_edges = np.asarray(edges, dtype=float), n_edges
        return pool

    @classmethod
    def tail(cls, values: np.ndarray, index: CellIndex, distance: bool, *, share: float) -> "Pool":
        """Keep about the top ``share`` of the scores (cut read off a strided sample)."""
        if share >= 0.5 or values.size < MIN_WINDOW_CELLS:
            return cls.full(values, index, distance)
        sample = strided_sample(values, distance, skip=_skip(index))
        if sample.size == 0:
            return cls.full(values, index, distance)
        lo = float(np.quantile(sample, 1 - share, method="lower"))
        return cls.window(values, index, distance, lo)

    # -- counts --------------------------------------------------------------
    def false_matches(self, t) -> np.ndarray:
        """Non-mated scores >= t."""
        t = np.asarray(t, dtype=float)
        ge = lambda a: a.size - np.searchsorted(a, t, side="left")  # noqa: E731
        above = np.where(np.isposinf(t), 0, self.n_above)
        return ge(self.pool) + above - ge(self.mated) - ge(self.excluded)

    def edge_false_matches(self) -> np.ndarray:
        """Non-mated scores at or above each edge counted in the pass (exact anywhere)."""
        ge = lambda a: a.size - np.searchsorted(a, self.edges, side="left")  # noqa: E731
        return self.n_edges - ge(self.mated) - ge(self.excluded)

    def false_nonmatches(self, t) -> np.ndarray:
        """Mated scores < t, and failed mated comparisons."""
        return np.searchsorted(self.mated, np.asarray(t, dtype=float), side="left") + self.failed_mated

    def _inside(self, a: np.ndarray) -> np.ndarray:
        return a[(a >= self.lo) & (a <= self.hi)]

    def nonmated_tail(self) -> np.ndarray:
        """Sorted non-mated scores in the window (the pool less mated and excluded values)."""
        v = np.sort(np.concatenate([self._inside(self.mated), self._inside(self.excluded)]))
        if v.size == 0:
            return self.pool
        # the k-th copy of a repeated value sits k places after its first copy
        idx = np.searchsorted(self.pool, v, side="left") + (np.arange(v.size) - np.searchsorted(v, v, side="left"))
        return np.delete(self.pool, idx)

    def thresholds(self) -> np.ndarray:
        """Every distinct comparison score in the window, ascending.

        Starts with ``lo`` when it is finite; ends with ``+inf`` when the
        window is open above.
        """
        values = np.unique(np.concatenate([self.nonmated_tail(), self._inside(self.mated)]))
        parts = [values]
        if np.isfinite(self.lo) and (values.size == 0 or values[0] > self.lo):
            parts.insert(0, [self.lo])
        if np.isposinf(self.hi):
            parts.append([np.inf])
        return np.concatenate(parts)

    def corner_thresholds(self) -> np.ndarray:
        """Thresholds of the corners of the exact staircase in the window, ascending.

        Between two consecutive mated values only FMR changes, so the points
        there are collinear: the curve through the corners is the whole
        curve. Corners: the lowest comparison score (or ``lo``), each
        distinct mated value, the first comparison score above each mated
        value, and +inf when the window is open above. Scores of excluded
        (self) comparisons are never thresholds.
        """
        mv = np.unique(self._inside(self.mated))
        nxt = self._next_comparison_scores(mv)
        first, tail = self._ends()
        return np.unique(np.concatenate([first, mv, nxt[np.isfinite(nxt)], tail]))

    def _ends(self):
        """The window's first threshold (the lowest comparison score, or ``lo``) and +inf when open above."""
        if np.isneginf(self.lo):
            first = self._next_comparison_scores(np.array([-np.inf]), strictly_above=False)
            first = first[np.isfinite(first)]
        else:
            first = np.array([self.lo])
        return first, np.array([np.inf] if np.isposinf(self.hi) else [])

    def hull_thresholds(self) -> np.ndarray:
        """The corners that can be vertices of the ROC convex hull, ascending.

        On the staircase from (FMR 1, FNMR 0) to (0, 1), the lower-left
        corners are at the mated values (FMR lowest before FNMR steps up);
        the corners just above them are upper-right ones, never on the lower
        hull. Plus the window's first threshold and +inf when open above.
        """
        first, tail = self._ends()
        return np.unique(np.concatenate([first, np.unique(self._inside(self.mated)), tail]))

    def _next_comparison_scores(self, values: np.ndarray, strictly_above: bool = True) -> np.ndarray:
        """For each value, the lowest comparison score in the pool above it (+inf if none).

        A pool value all of whose copies are excluded cells is skipped.
        """
        pool = self.pool
        side = "right" if strictly_above else "left"
        pos = np.searchsorted(pool, values, side=side)
        out = np.full(values.size, np.inf)
        todo = np.arange(values.size)
        while todo.size:
            p = pos[todo]
            inside = p < pool.size
            todo, p = todo[inside], p[inside]
            if not todo.size:
                break
            v = pool[p]
            if self.excluded.size:
                copies = np.searchsorted(pool, v, side="right") - np.searchsorted(pool, v, side="left")
                excl = np.searchsorted(self.excluded, v, side="right") - np.searchsorted(self.excluded, v, side="left")
                only_excluded = excl >= copies
            else:
                only_excluded = np.zeros(v.size, dtype=bool)
            done = ~only_excluded
            out[todo[done]] = v[done]
            todo = todo[only_excluded]
            pos[todo] = np.searchsorted(pool, v[only_excluded], side="right")
        return out


def strided_sample(values, distance: bool = False, size: int = 400_000, skip=None) -> np.ndarray:
    """About ``size`` evenly strided scores, NaN dropped, similarity-oriented, sorted.

    ``values`` is a NumPy array (any shape) or a 2-D dask array. ``skip``:
    flat positions to leave out (an index's mated and excluded cells), so
    that the sample stands for the non-mated scores even where mated ones
    are many (a trial list with 10% target trials).
    """
    stride = max(1, int(values.size) // size)
    skip = None if skip is None or not len(skip) else np.sort(np.asarray(skip, dtype=np.int64))
    parts = []
    for offset, flat in _pieces(values):
        first = (-offset) % stride
        if skip is None:
            parts.append(flat[first::stride].copy())  # a copy: a view would keep the whole block alive
            continue
        pos = np.arange(offset + first, offset + flat.size, stride, dtype=np.int64)
        hit = np.searchsorted(skip, pos)
        hit = np.minimum(hit, skip.size - 1)
        pos = pos[skip[hit] != pos]
        parts.append(flat[pos - offset])
    sample = np.concatenate(parts) if parts else np.empty(0)
    sample = sample[~np.isnan(sample)]
    if distance:
        sample = -sample
    sample.sort()
    return sample


def _dtype_bound(value: float, dtype, *, up: bool):
    """``value`` rounded up (or down) to ``dtype``: the nearest float of that dtype on one side.

    For a score ``s`` of that dtype, ``s >= v`` and ``s < v`` decide as
    ``s >= up(v)`` and ``s < up(v)``; ``s <= v`` and ``s > v`` as
    ``s <= down(v)`` and ``s > down(v)``: exactly the float64 decisions,
    while the comparison runs in the scores' own dtype.
    """
    dtype = np.dtype(dtype)
    value = float(value)
    if dtype == np.float64 or np.isnan(value):
        return np.float64(value)
    with np.errstate(over="ignore"):
        near = dtype.type(value)  # round to nearest (an infinity beyond the range)
    if up and float(near) < value:  # compare as Python floats: no rounding
        near = np.nextafter(near, dtype.type(np.inf))
    elif not up and float(near) > value:
        near = np.nextafter(near, dtype.type(-np.inf))
    return near


def _extract(values, lo: float, hi: float, distance: bool, edges=()):
    """One blocked pass: values in the window, cells above it, cells at or
    beyond each edge, and NaN cells.

    ``lo``, ``hi`` and ``edges`` are in similarity orientation; for
    distances the window is ``[-hi, -lo]``, "above" means below ``-hi`` and
    "beyond an edge e" means at or below ``-e``. Infinite scores raise
    :class:`bioxr.cube.ScoreCubeError` on the way.
    """
    kept = []
    n_above = 0
    n_nan = 0
    n_edges = np.zeros(len(edges), dtype=np.int64)
    limits = [-e for e in edges] if distance else list(edges)
    a0, b0 = (-hi, -lo) if distance else (lo, hi)
    bounded = np.isfinite(hi)
    for _, flat in _pieces(values):
        # each comparison "s op v" in the block's dtype with v rounded outwards: the float64 decision, exactly
        a, b = _dtype_bound(a0, flat.dtype, up=True), _dtype_bound(b0, flat.dtype, up=False)  # for >= / < and <= / >
        edge = [_dtype_bound(e, flat.dtype, up=not distance) for e in limits]
        for start in range(0, flat.size, _BLOCK):
            block = flat[start : start + _BLOCK]
            if distance:
                keep = block <= b
                if bounded:
                    keep &= block >= a
                    n_above += int(np.count_nonzero(block < a))
            else:
                keep = block >= a
                if bounded:
                    keep &= block <= b
                    n_above += int(np.count_nonzero(block > b))
            kept.append(block[keep])
            for j, e in enumerate(edge):
                n_edges[j] += np.count_nonzero(block <= e) if distance else np.count_nonzero(block >= e)
            if _check_finite(block):
                n_nan += int(np.count_nonzero(np.isnan(block)))
    return (np.concatenate(kept) if kept else np.empty(0)), n_above, n_nan, n_edges
