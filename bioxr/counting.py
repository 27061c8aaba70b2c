"""Exact error counts for one group of comparisons, fast.

The verification functions reduce a score cube to groups (one per
combination of kept dimensions). For each group this module gathers the
mated and self-comparison cells from the labels alone (they are sparse),
and leaves the non-mated scores where they are: a count over the non-mated
scores is a count over all cells minus the same count over the mated and
excluded cells. No mask the size of the scores is ever built.

Two ways to get the non-mated scores in order:

- :meth:`Pool.full`: one ``np.sort`` of all the group's scores; used for
  whole curves (``points="all"``, and groups too small for the next).
- :meth:`Pool.between`: no sort of the non-mated scores, only their counts
  between consecutive distinct mated (and excluded) scores, in one pass
  (:func:`bioxr._core.binning.count_between`); used for the corners of the
  DET and ROC (Annex F.1), with the same results as :meth:`Pool.full`.
- :meth:`Pool.window`: only the scores in a window ``[lo, hi]`` (and the
  count of those above it), found by one pass in cache-sized blocks; used
  for operating points (EER, FNMR at FMR) that live in a narrow band of
  the curve. Callers check that the window held the answer exactly and
  widen it otherwise.

On a lazy (chunked) group every pass runs blockwise where the blocks live
and only small results reach the client: the window's scores (or, for a
block whose window is large, counts at the mated scores in it), the mated
and excluded cells, the sample (:mod:`bioxr._core.blockwise`). Where the
mated cells are many (:data:`SPREAD_FROM`: a trial list with 10% target
trials), the EER and the operating points keep them where they were
gathered, sorted per block (:class:`bioxr._core.blockwise.Spread`): a
strided sample of them places the window, and only those in the window,
and counts at given thresholds, travel. The NumPy path is one pass over
the array, as before.

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

from ._core import binning
from ._core.errors import ScoreCubeError

__all__ = ["CellIndex", "Pool", "MIN_BETWEEN_CELLS", "MIN_WINDOW_CELLS", "mated_cells", "strided_sample"]

_BLOCK = 1 << 16  # elements per block of the extraction pass (512 KiB of float64)
#: Below this many cells a group is simply sorted: a window would not pay.
MIN_WINDOW_CELLS = 1 << 18
#: From this many cells (in memory) :meth:`Pool.between` counts instead of sorting, when the compiled
#: kernel runs (numba, ``bioxr[fast]``) or an engine is asked for: the crossover with NumPy's sort on the
#: project's machine (benchmarks/det_kernel.py, benchmarks/RESULTS.md). Without numba the sort is faster.
MIN_BETWEEN_CELLS = 1 << 23


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


def _is_lazy(values) -> bool:
    """A chunked (lazy) group of scores: its passes run blockwise (:mod:`bioxr._core.blockwise`)."""
    if isinstance(values, np.ndarray):
        return False
    from ._core import blockwise

    return blockwise.is_chunked(values)


def _skip(index) -> np.ndarray | None:
    """Mated and excluded positions of an index (None if there are none): the cells a sample leaves out.

    A lazy list's index gives them block by block, sorted
    (:class:`bioxr._core.blockwise.PerBlock`), as they are.
    """
    if index.mated.size + index.excluded.size == 0:
        return None
    if getattr(index, "skip", None) is not None:
        return index.skip
    return np.concatenate([index.mated, index.excluded])


def _sorted_skip(skip):
    """``skip`` as sorted int64 positions (None when empty); positions given per block as they are (sorted)."""
    if skip is None or not len(skip):
        return None
    if hasattr(skip, "parts"):
        return skip
    return np.sort(np.asarray(skip, dtype=np.int64))


_INFINITE = (
    "the score cube holds infinite scores; scores must be finite (NaN means not compared, "
    "or declare a sentinel with missing=)."
)


def _check_finite(block: np.ndarray) -> bool:
    """True when the block holds NaN; raise when it holds an infinity."""
    if np.isfinite(np.add.reduce(block)):
        return False
    if np.isinf(block).any():
        raise ScoreCubeError(_INFINITE)
    return True


def mated_cells(values, index: CellIndex, distance: bool):
    """Sorted (similarity-oriented) mated and excluded scores, NaN dropped."""
    if _is_lazy(values):  # each block gathers its own cells where it lives
        from ._core import blockwise

        m, x = blockwise.gather(values, index.mated, index.excluded)  # fresh arrays: sorted in place below
    else:
        flat = np.asarray(values).reshape(-1)
        m = flat[index.mated].astype(np.float64, copy=False)
        x = flat[index.excluded].astype(np.float64, copy=False)
    return _sorted_cells(m, x, distance)


def _lt(a, t, side: str = "left") -> np.ndarray:
    """Scores of the sorted ``a`` below each ``t`` (``side="right"``: at or below).

    ``a`` is an array, or a lazy group's mated scores kept where they are
    (:class:`bioxr._core.blockwise.Spread`), which counts them there.
    """
    if isinstance(a, np.ndarray):
        return np.searchsorted(a, t, side=side)
    return a.count_lt(t, side)


def _ge(a, t) -> np.ndarray:
    """Scores of the sorted ``a`` at or above each ``t``."""
    return a.size - _lt(a, t)


def _within(a, lo: float, hi: float) -> np.ndarray:
    """The sorted scores of ``a`` (an array or a Spread) in ``[lo, hi]``."""
    if isinstance(a, np.ndarray):
        return a[(a >= lo) & (a <= hi)]
    return a.inside(lo, hi)


def _held(cells):
    """``cells`` with mated scores kept where they are (a Spread) gathered: for the paths that need them all."""
    if cells is None or isinstance(cells[0], np.ndarray):
        return cells
    return np.asarray(cells[0]), cells[1]


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
        Sorted mated and excluded scores (all of them). On a lazy group
        with many mated comparisons ``mated`` may be a
        :class:`bioxr._core.blockwise.Spread`: the scores stay where they
        were gathered and are counted there, or brought in the window.
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
        m, x = _held(cells) if cells is not None else mated_cells(values, index, distance)
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
    def between(cls, values: np.ndarray, index: CellIndex, distance: bool, cells=None, engine=None) -> "Pool":
        """A full pool known by counts between the mated and excluded scores, without a sort.

        One pass counts every score into the intervals between consecutive
        distinct mated and excluded scores, with the lowest score of each
        above its left edge (:func:`bioxr._core.binning.count_between`;
        ``engine`` as there). That is all the corners of the exact curve
        need: :meth:`corner_thresholds`, :meth:`hull_thresholds` and
        :meth:`false_matches` (at any threshold) equal :meth:`full`'s. On a
        lazy group of :data:`MIN_WINDOW_CELLS` cells or more the counting
        runs blockwise where the blocks live (only ``3 (M + 1)`` numbers per
        block travel, and nothing is loaded whole); an in-memory group of
        fewer than :data:`MIN_BETWEEN_CELLS` cells, or without the compiled
        kernel (:func:`bioxr._core.binning.beats_sort`), or one without
        mated scores, is sorted (:meth:`full`) instead.
        """
        lazy = _is_lazy(values)
        if values.size < (MIN_WINDOW_CELLS if lazy else MIN_BETWEEN_CELLS) or not (lazy or binning.beats_sort(engine)):
            return cls.full(values, index, distance, cells)
        sample = None
        if cells is not None:
            m, x = _held(cells)
        elif lazy:  # the orientation check's sample from the same pass (each pass regenerates or rereads blocks)
            (m, x), sample = cells_and_sample(values, index, distance)
        else:
            m, x = mated_cells(values, index, distance)
        if m.size == 0 or not (np.isfinite(m).all() and np.isfinite(x).all()):
            return cls.full(values, index, distance, (m, x))  # nothing to count between, or an infinity to refuse
        return _Counted(values, index, distance, m, x, engine, sample=sample)

    @classmethod
    def window(
        cls, values: np.ndarray, index: CellIndex, distance: bool, lo: float, hi: float = np.inf, cells=None, edges=(),
        need_scores: bool = False, at=(), mated_grid: bool = True,
    ) -> "Pool":
        """Keep the scores in ``[lo, hi]`` (similarity orientation) and count those above.

        One pass over the scores in cache-sized blocks. It also counts the
        cells at or beyond each of ``edges``, so FMR is known exactly there
        (:meth:`edge_false_matches`). A window that is not bounded below
        sorts everything instead.

        On a lazy group the pass runs blockwise where the blocks live. A
        block whose window is large sends counts at the mated scores in the
        window (and ``lo``) instead of its scores, unless ``need_scores``;
        the pool then answers :meth:`false_matches` there (and at ``at``,
        thresholds in similarity orientation the caller will ask for) from the counts
        and fetches those blocks' scores only if something else needs them
        (:class:`bioxr._core.blockwise.CountedPool`). Without ``mated_grid``
        those counts are at ``lo`` and ``at`` only (a caller that asks for
        FMR at sampled scores, not at the mated ones: a trial list's mated
        scores in a wide window can be most of them). Mated scores kept
        where they are (a Spread in ``cells``) are brought in the window
        only as the grid needs them, their counts at ``edges`` in the same
        pass.
        """
        if not np.isfinite(lo) or values.size < MIN_WINDOW_CELLS:
            return cls.full(values, index, distance, cells)
        m, x = cells if cells is not None else mated_cells(values, index, distance)
        grid = None
        if not need_scores and _is_lazy(values):
            at = np.asarray(at, dtype=float).reshape(-1)
            if not mated_grid:
                inside = np.empty(0)
            elif isinstance(m, np.ndarray):
                inside = m[(m >= lo) & (m <= hi)]
            else:  # the mated scores in the window and their counts at the edges (the ROCCH bands): one pass
                inside = m.inside(lo, hi, at=edges)
            grid = np.unique(np.concatenate([[float(lo)], inside, at[(at >= lo) & (at <= hi)]]))
        if not isinstance(m, np.ndarray) and len(edges):
            m.count_lt(np.asarray(edges, dtype=float))  # known already when counted with the window
        kept, n_above, n_nan, n_edges, lazy = _extract(values, lo, hi, distance, edges, grid)
        kept = _oriented(kept, distance)
        n_valid = values.size - n_nan
        if lazy is not None and lazy["missing"]:
            from ._core.blockwise import CountedPool

            pool = CountedPool(kept, m, x, n_valid - m.size - x.size, lo, hi, n_above)
            pool.counted(grid, lazy["hist"], lambda: _oriented(lazy["fetch"](), distance))
        else:
            pool = cls(kept, m, x, n_valid - m.size - x.size, lo, hi, n_above)
        pool.edges, pool.n_edges = np.asarray(edges, dtype=float), n_edges
        return pool

    @classmethod
    def windows(cls, values, index: CellIndex, distance: bool, bounds, cells) -> list:
        """One :meth:`window` pool per ``(lo, hi)`` of ``bounds`` (finite ``lo``), from one pass over a lazy group.

        Each pool is exactly :meth:`window`'s for its bounds (its scores and
        counts); on a lazy group one blockwise pass serves every window (meant
        for narrow ones: every block sends its scores in each). ``cells``: the
        group's :func:`mated_cells`.
        """
        if not _is_lazy(values):
            return [cls.window(values, index, distance, lo, hi, cells, need_scores=True) for lo, hi in bounds]
        from ._core import blockwise

        m, x = cells
        raw = [((-hi, -lo) if distance else (lo, hi)) + (bool(np.isfinite(hi)),) for lo, hi in bounds]
        pools = []
        for (lo, hi), (kept, n_above, n_nan) in zip(bounds, blockwise.windows(values, raw, distance)):
            n_valid = values.size - n_nan
            pool = cls(_oriented(kept, distance), m, x, n_valid - m.size - x.size, lo, hi, n_above)
            pools.append(pool)
        return pools

    @classmethod
    def tail(cls, values: np.ndarray, index: CellIndex, distance: bool, *, share: float) -> "Pool":
        """Keep about the top ``share`` of the scores (cut read off a strided sample)."""
        if share >= 0.5 or values.size < MIN_WINDOW_CELLS:
            return cls.full(values, index, distance)
        sample = strided_sample(values, distance, skip=_skip(index))
        if sample.size == 0:
            return cls.full(values, index, distance)
        lo = float(np.quantile(sample, 1 - share, method="lower"))
        return cls.window(values, index, distance, lo, need_scores=True)

    # -- counts --------------------------------------------------------------
    def false_matches(self, t) -> np.ndarray:
        """Non-mated scores >= t."""
        t = np.asarray(t, dtype=float)
        ge = lambda a: a.size - np.searchsorted(a, t, side="left")  # noqa: E731
        above = np.where(np.isposinf(t), 0, self.n_above)
        return ge(self.pool) + above - _ge(self.mated, t) - ge(self.excluded)

    def edge_false_matches(self) -> np.ndarray:
        """Non-mated scores at or above each edge counted in the pass (exact anywhere)."""
        ge = lambda a: a.size - np.searchsorted(a, self.edges, side="left")  # noqa: E731
        return self.n_edges - _ge(self.mated, self.edges) - ge(self.excluded)

    def false_nonmatches(self, t) -> np.ndarray:
        """Mated scores < t, and failed mated comparisons."""
        return _lt(self.mated, np.asarray(t, dtype=float)) + self.failed_mated

    def _inside(self, a: np.ndarray) -> np.ndarray:
        return _within(a, self.lo, self.hi)

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


def _count_between(values, edges, **kw):
    """:func:`bioxr._core.binning.count_between`, blockwise on a lazy group (the same result)."""
    if _is_lazy(values):
        from ._core import blockwise

        return blockwise.count_between(values, edges, **kw)
    return binning.count_between(values, edges, **kw)


class _Counted(Pool):
    """A full pool (:meth:`Pool.between`) known by counts between its mated and excluded scores.

    With edges ``e`` (the distinct mated and excluded scores) the pass gives,
    for interval ``i`` = ``[e[i-1], e[i])``, its count, how many equal
    ``e[i-1]``, and its lowest score ``L[i]`` above ``e[i-1]``: every score
    strictly between edges is non-mated. Scores at or above a threshold
    ``t`` are then known exactly when ``t`` is an edge or ``t <= L[i]``
    (the corners are such); at another threshold (a corner of another
    group's curve) one more pass counts them.
    """

    def __init__(self, values, index, distance, m, x, engine=None, sample=None):
        edges = np.unique(np.concatenate([m, x]))
        b = _count_between(values, edges, negate=distance, minima=True, engine=engine)
        if b.n_inf:
            raise ScoreCubeError(_INFINITE)
        n_valid = int(values.size) - b.n_nan
        super().__init__(np.empty(0), m, x, n_valid - m.size - x.size, -np.inf)
        self._values, self._index, self._distance, self._engine = values, index, distance, engine
        self._edges, self._at_edge, self._lowest = edges, b.at_edge, b.lowest
        self._tail = np.concatenate([np.cumsum(b.counts[::-1])[::-1], [0]])  # scores in intervals i, i+1, ...
        # the distinct comparison scores that can follow an edge, in order: L[0], e[0], L[1], e[1], ..., L[M]
        n_excl = np.searchsorted(x, edges, side="right") - np.searchsorted(x, edges, side="left")
        slots = np.empty(2 * edges.size + 1)
        slots[0::2], slots[1::2] = b.lowest, edges
        ok = np.empty(slots.size, dtype=bool)
        ok[0::2] = np.isfinite(b.lowest)
        ok[1::2] = b.at_edge[1:] > n_excl  # an edge all of whose copies are self comparisons is no score
        self._slots = slots[ok]
        self._sample = sample

    @property
    def pool(self):
        """A sorted strided sample of the scores (for the orientation check only: nothing is sorted whole)."""
        if self._sample is None:
            self._sample = strided_sample(self._values, self._distance, skip=_skip(self._index))
        return self._sample

    @pool.setter
    def pool(self, value):
        self._sample = None

    def _at_or_above(self, t: np.ndarray) -> np.ndarray:
        """Scores (of any kind) >= each threshold."""
        i = np.searchsorted(self._edges, t, side="right")
        out = self._tail[i] - self._at_edge[i]  # t above e[i-1], and t <= L[i]
        on = i > 0
        on[on] = t[on] == self._edges[i[on] - 1]
        out[on] = self._tail[i[on]]
        out[np.isposinf(t)] = 0
        todo = ~on & (t > self._lowest[i]) & ~np.isposinf(t)
        if todo.any():
            u = np.unique(t[todo])
            extra = _count_between(self._values, u, negate=self._distance, engine=self._engine).counts
            out[todo] = np.cumsum(extra[::-1])[::-1][np.searchsorted(u, t[todo]) + 1]
        return out

    def false_matches(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        ge = lambda a: a.size - np.searchsorted(a, t, side="left")  # noqa: E731
        return self._at_or_above(np.atleast_1d(t)).reshape(t.shape) - ge(self.mated) - ge(self.excluded)

    def _next_comparison_scores(self, values: np.ndarray, strictly_above: bool = True) -> np.ndarray:
        """Exact where ``values`` are edges (mated scores) or -inf, as the corners ask."""
        pos = np.searchsorted(self._slots, values, side="right" if strictly_above else "left")
        out = np.full(values.size, np.inf)
        inside = pos < self._slots.size
        out[inside] = self._slots[pos[inside]]
        return out

    def _needs_sort(self, *_args, **_kwargs):
        raise NotImplementedError("a pool from Pool.between knows the corners only; use Pool.full for every score.")

    thresholds = nonmated_tail = edge_false_matches = _needs_sort


#: The strided sample of an in-memory group: about this many scores.
SAMPLE_SIZE = 400_000
#: A lazy group's sample: this share of its cells, at least :data:`LAZY_SAMPLE_MIN` scores and at most
#: :data:`SAMPLE_SIZE`. The sample travels to the client whole; it only places the windows (whose answers are
#: certified exact), so a smaller one costs at most a wider window, whose large blocks send counts anyway.
LAZY_SAMPLE_SHARE = 1e-3
LAZY_SAMPLE_MIN = 50_000
#: From this many mated comparisons a lazy (dask) group keeps its mated scores where they were gathered
#: (:func:`cells_and_sample` with ``spread``) for the EER and FNMR at FMR: only windows of them and counts travel.
#: Below it they travel (8 bytes each: a cube's few mated cells).
SPREAD_FROM = 1 << 16


def sample_size(values) -> int:
    """How many scores :func:`strided_sample` draws from ``values`` by default (fewer for a lazy group)."""
    if not _is_lazy(values):
        return SAMPLE_SIZE
    return int(min(SAMPLE_SIZE, max(LAZY_SAMPLE_MIN, int(values.size) * LAZY_SAMPLE_SHARE)))


def strided_sample(values, distance: bool = False, size: int | None = None, skip=None) -> np.ndarray:
    """About ``size`` evenly strided scores, NaN dropped, similarity-oriented, sorted.

    ``values`` is a NumPy array (any shape) or a 2-D dask array. ``size``
    defaults to :func:`sample_size`. ``skip``:
    flat positions to leave out (an index's mated and excluded cells), so
    that the sample stands for the non-mated scores even where mated ones
    are many (a trial list with 10% target trials).
    """
    stride = max(1, int(values.size) // (sample_size(values) if size is None else size))
    skip = _sorted_skip(skip)
    if _is_lazy(values):  # each block draws its own share of the sample where it lives
        from ._core import blockwise

        sample = blockwise.sample(values, stride, skip)
    else:
        flat = np.asarray(values).reshape(-1)
        flat = flat if np.issubdtype(flat.dtype, np.floating) else flat.astype(np.float64)
        if skip is None:
            sample = flat[::stride].copy()  # a copy: a view would keep the whole block alive
        else:
            pos = np.arange(0, flat.size, stride, dtype=np.int64)
            hit = np.minimum(np.searchsorted(skip, pos), skip.size - 1)
            sample = flat[pos[skip[hit] != pos]]
        sample = sample[~np.isnan(sample)]
    return _sorted_sample(sample, distance)


def cells_and_sample(values, index, distance: bool, size: int | None = None, spread: bool = False):
    """``(mated_cells(...), strided_sample(..., skip=_skip(index)))`` in one pass over a lazy group.

    The same arrays as the two calls; on a lazy group one blockwise pass
    instead of two (each pass over a lazily generated or stored cube
    generates or reads it again). With ``spread``, a lazy (dask) group of
    :data:`SPREAD_FROM` mated comparisons or more keeps its mated scores
    where they are: the first item is then a
    :class:`bioxr._core.blockwise.Spread` (their number, a sorted strided
    sample of them, counts and windows on request) for the callers that
    handle one.
    """
    if not _is_lazy(values):
        return mated_cells(values, index, distance), strided_sample(values, distance, size, skip=_skip(index))
    from ._core import blockwise

    skip = _sorted_skip(_skip(index))
    n_sample = sample_size(values) if size is None else size
    stride = max(1, int(values.size) // n_sample)
    if spread and len(index.mated) >= SPREAD_FROM:
        out = blockwise.spread_and_sample(values, index.mated, index.excluded, stride, skip, distance, n_sample)
        if out is not None:
            m, x, sample = out
            return (m, _own_sorted(x, distance)), _sorted_sample(sample, distance)
    (m, x), sample = blockwise.gather_and_sample(values, index.mated, index.excluded, stride, skip)
    return _sorted_cells(m, x, distance), _sorted_sample(sample, distance)


def _sorted_cells(m, x, distance: bool):
    """``m`` and ``x`` as float64, NaN dropped, similarity-oriented, sorted: in place where they already are
    float64 without NaN (the callers hand over fresh arrays; a list's mated scores can be a tenth of it)."""
    return _own_sorted(m, distance), _own_sorted(x, distance)


def _own_sorted(a, distance: bool) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype != np.float64:
        a = a.astype(np.float64)
    nan = np.isnan(a)
    if nan.any():
        a = a[~nan]
    del nan
    if distance:
        np.negative(a, out=a)
    a.sort()
    return a


def _sorted_sample(sample, distance: bool):
    if distance:
        sample = -sample
    sample.sort()
    return sample


def _oriented(kept: np.ndarray, distance: bool) -> np.ndarray:
    """Window scores sorted ascending in similarity orientation, float64 (sorted first: faster in float32)."""
    kept.sort()
    kept = kept.astype(np.float64, copy=False)
    if distance:
        kept = kept[::-1]
        np.negative(kept, out=kept)
    return kept


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


def _extract(values, lo: float, hi: float, distance: bool, edges=(), thresholds=None):
    """One blocked pass: values in the window, cells above it, cells at or
    beyond each edge, and NaN cells.

    ``lo``, ``hi`` and ``edges`` are in similarity orientation; for
    distances the window is ``[-hi, -lo]``, "above" means below ``-hi`` and
    "beyond an edge e" means at or below ``-e``. Infinite scores raise
    :class:`bioxr.cube.ScoreCubeError` on the way.

    A lazy group is passed over blockwise (:func:`bioxr._core.blockwise.window`);
    with ``thresholds`` its largest windows come back as counts at them,
    and the result has a fifth item, the blockwise pass's dict (None for a
    NumPy group).
    """
    limits = [-e for e in edges] if distance else list(edges)
    bounds = ((-hi, -lo) if distance else (lo, hi)) + (bool(np.isfinite(hi)),)
    if _is_lazy(values):
        from ._core import blockwise

        out = blockwise.window(values, bounds, limits, distance, thresholds)
        out["fetch"] = lambda: blockwise.window(values, bounds, limits, distance, blocks=out["missing"])["kept"]
        return out["kept"], out["n_above"], out["n_nan"], out["n_edges"], out
    flat = np.asarray(values).reshape(-1)
    flat = flat if np.issubdtype(flat.dtype, np.floating) else flat.astype(np.float64)
    return (*_scan(flat, *bounds, limits, distance), None)


#: Up to this many edges the window's pass compares the scores with each; beyond, they are counted between them.
EDGES_COMPARED = 4


def _at_or_beyond(flat: np.ndarray, limits, distance: bool) -> np.ndarray:
    """Scores at or beyond each limit (raw orientation: ``>=``, or ``<=`` for distances), NaN left out."""
    e = np.asarray(limits, dtype=np.float64)
    edges, where = np.unique(-e if distance else e, return_inverse=True)
    counts = binning.count_between(flat, edges, negate=distance).counts
    tail = np.cumsum(counts[::-1])[::-1]  # tail[i]: scores in intervals i, i+1, ... = at or above edges[i - 1]
    return tail[where + 1]


def _scan(flat: np.ndarray, a0: float, b0: float, bounded: bool, limits, distance: bool):
    """The pass of :func:`_extract` over one flat float array: ``(kept, n_above, n_nan, n_edges)``.

    The scores are compared in their own dtype against ``a0``, ``b0`` and
    ``limits`` (raw orientation) rounded outwards to it.
    """
    kept = []
    n_above = 0
    n_nan = 0
    n_edges = np.zeros(len(limits), dtype=np.int64)
    # each comparison "s op v" in the block's dtype with v rounded outwards: the float64 decision, exactly
    a, b = _dtype_bound(a0, flat.dtype, up=True), _dtype_bound(b0, flat.dtype, up=False)  # for >= / < and <= / >
    if len(limits) > EDGES_COMPARED and binning.engine_available("numba"):
        # many edges (the EER's bands): counted into the intervals between them in one compiled pass, not
        # compared one by one (binning.count_between: exact in the scores' dtype, as the DET's counts are)
        n_edges = _at_or_beyond(flat, limits, distance)
        limits = ()
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
    return (np.concatenate(kept) if kept else flat[:0]), n_above, n_nan, n_edges
