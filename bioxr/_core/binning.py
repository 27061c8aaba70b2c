"""Exact counts of scores between sorted edges, without sorting the scores (unless the edges are dense).

The exact DET needs the non-mated scores only as counts between
consecutive distinct mated scores (ISO/IEC 19795-1 Annex F.1): the
corners sit at mated scores, and FMR there is a count of the scores at or
above each. :func:`count_between` gives those counts (and, for the corners
just above each mated score, the lowest score of each interval) without
a sort of all the scores; where the edges are about as many as the scores
(a block of a lazy cube), sorting that block is the faster way.

A score's interval is found through a coarse lookup: an affine map sends
it to one of ``K`` buckets (about two per edge), a table gives the first
edge of its bucket, and a comparison with that bucket's edge settles it
exactly. The map is monotone, so a score in a bucket below an edge's is
below the edge, and a score equal to an edge shares its bucket; the same
float64 arithmetic maps edges and scores. Two implementations give
identical results:

- ``"numba"`` (optional dependency, ``bioxr[fast]``): one compiled pass;
  each score reads its bucket's entry and updates one 32-byte record of
  its interval (the edge, counts, lowest score); a bucket holding two
  edges or more scans them. Float32 scores are read as they are (widened
  to float64 one at a time), distance scores negated in the loop. From
  the main thread a large pass splits over the process's cores, each
  thread with its own records, taking pieces in turn;
- ``"numpy"``: four buckets per edge counted with :func:`numpy.bincount`
  in blocks; only the scores that share a bucket with an edge are compared
  with the edges (:func:`numpy.searchsorted`);
- ``"sort"``: the scores sorted (:func:`numpy.sort`), then the edges placed
  among them (:func:`numpy.searchsorted` with sorted keys: nearly a
  merge). When the edges are about as many as the scores (a block of a
  lazy cube with millions of mated scores) the records no longer fit in a
  cache and every score of a pass misses it: there sorting is faster
  (8.4 M float32 scores on one thread, synthetic edges: 0.73 s against
  2.2 s with 11.8 M edges, 0.13 s against 0.31 s with 1 M). ``engine=None`` takes it from
  ``DENSE`` edges per score.

Measured (``benchmarks/det_kernel.py``, benchmarks/RESULTS.md): on 1e8
float64 scores and 1e5 edges the numba pass takes about half the time of
``np.sort``; the NumPy path is slower than the sort, so :mod:`bioxr.counting`
counts instead of sorting in memory only with numba (:func:`beats_sort`,
``MIN_BETWEEN_CELLS``).

``engine=None`` takes numba when it is importable; the environment
variable ``BIOXR_KERNEL=numpy`` (or ``numba``, ``sort``) forces one, and
``BIOXR_THREADS`` sets the numba pass's threads.

Scores of any dtype are compared as float64 (float32 and integers convert
exactly, as :mod:`bioxr.counting` compares them), so the decisions are the
float64 ones of "accept when s >= t".
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

__all__ = ["Binned", "ENGINES", "beats_sort", "count_between", "engine_available"]

ENGINES = ("numba", "numpy", "sort")
#: Edges per score from which ``engine=None`` sorts the scores instead of a pass (measured: see the module's text).
DENSE = 1 / 32
_BLOCK = 1 << 20  # scores per block of the NumPy path (8 MiB of float64 per buffer)


class Binned(NamedTuple):
    """What :func:`count_between` returns, for ``M`` edges.

    Attributes
    ----------
    counts : ndarray of int64, shape (M + 1,)
        Scores in ``(-inf, e0)``, ``[e0, e1)``, ..., ``[e_{M-1}, inf)``.
    at_edge : ndarray of int64, shape (M + 1,)
        Of those, the scores equal to the interval's left edge
        (``at_edge[0]`` is 0).
    lowest : ndarray of float64, shape (M + 1,)
        The lowest score of each interval strictly above its left edge (of
        the first interval: its lowest score); ``+inf`` where there is none.
        Only with ``minima=True`` (else all ``+inf``).
    n_nan, n_inf : int
        NaN scores (in no interval) and infinite ones (in the end intervals).
    """

    counts: np.ndarray
    at_edge: np.ndarray
    lowest: np.ndarray
    n_nan: int
    n_inf: int


def engine_available(engine: str) -> bool:
    """True when ``engine`` ("numba", "numpy" or "sort") can run here.

    Examples
    --------
    >>> engine_available("numpy")
    True
    """
    if engine in ("numpy", "sort"):
        return True
    return _numba_kernel() is not None


def beats_sort(engine: str | None = None) -> bool:
    """True when counting a group in memory should replace its sort: the compiled kernel runs, or ``engine`` (or
    ``BIOXR_KERNEL``) asks for one.

    The NumPy path is slower than NumPy's own sort (``benchmarks/det_kernel.py``).

    Examples
    --------
    >>> beats_sort("numpy")
    True
    """
    if engine is not None or os.environ.get("BIOXR_KERNEL"):
        return True
    return engine_available("numba")


def _choose(engine) -> str:
    if engine is None:
        engine = os.environ.get("BIOXR_KERNEL") or None
    if engine is None:
        return "numba" if engine_available("numba") else "numpy"
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}; choose 'numba', 'numpy', 'sort' or None (numba when it is installed, "
                         "the sort where the edges are dense).")
    if not engine_available(engine):
        raise ImportError("engine='numba' needs numba, which could not be imported: pip install 'bioxr[fast]'.")
    return engine


def count_between(values, edges, *, negate: bool = False, minima: bool = False, engine: str | None = None) -> Binned:
    """Count ``values`` (negated first if ``negate``) into the intervals between sorted ``edges``.

    Parameters
    ----------
    values : array_like
        Scores of any shape and real dtype; NaN is counted apart.
    edges : array_like of float
        Sorted, distinct, finite float64 edges (``M`` of them, possibly 0).
    negate : bool
        Count ``-values`` (distance scores in similarity orientation),
        without a negated copy of the scores.
    minima : bool
        Also find each interval's lowest score above its left edge
        (:attr:`Binned.lowest`).
    engine : {"numba", "numpy", "sort"} or None
        None: the sort from ``DENSE`` edges per score, else numba when
        importable (``BIOXR_KERNEL`` overrides both).

    Returns
    -------
    Binned

    Examples
    --------
    >>> import numpy as np
    >>> b = count_between(np.array([0.5, 1.0, 1.0, 2.5, np.nan]), [1.0, 2.0], minima=True, engine="numpy")
    >>> b.counts.tolist(), b.at_edge.tolist(), b.lowest.tolist(), b.n_nan
    ([1, 2, 1], [0, 2, 0], [0.5, inf, 2.5], 1)
    >>> count_between([3, 1, 2], [2.0], negate=True, engine="numpy").counts.tolist()  # -3, -1, -2
    [3, 0]
    """
    auto = engine is None and not os.environ.get("BIOXR_KERNEL")
    engine = _choose(engine)
    edges = np.ascontiguousarray(edges, dtype=np.float64).reshape(-1)
    if edges.size and not np.isfinite(edges).all():
        raise ValueError("edges must be finite.")
    if edges.size > 1 and not (edges[1:] > edges[:-1]).all():
        raise ValueError("edges must be sorted and distinct.")
    values = np.asarray(values)
    if not (np.issubdtype(values.dtype, np.floating) or np.issubdtype(values.dtype, np.integer) or values.dtype == bool):
        raise TypeError(f"values must be real numbers, not {values.dtype}.")
    m = edges.size
    counts = np.zeros(m + 1, dtype=np.int64)
    at_edge = np.zeros(m + 1, dtype=np.int64)
    lowest = np.full(m + 1, np.inf)
    if engine == "sort" or (auto and m >= DENSE * values.size):
        return _by_sort(values, edges, bool(negate), bool(minima), counts, at_edge, lowest)
    k, e0, scale = _buckets(edges, per_edge=2 if engine == "numba" else 4)
    if engine == "numba":
        return _numba(values, edges, k, e0, scale, bool(negate), bool(minima), counts, at_edge, lowest)
    lut = _lut(edges, k, e0, scale)
    return _numpy(values, edges, lut, k, e0, scale, bool(negate), bool(minima), counts, at_edge, lowest)


def _by_sort(values, edges, negate, minima, counts, at_edge, lowest) -> Binned:
    """The ``"sort"`` engine: sort the scores, place the edges among them; the same :class:`Binned` as a pass."""
    v = np.asarray(values).reshape(-1)
    if v.dtype not in (np.float32, np.float64):
        v = v.astype(np.float64)  # integers and booleans: exact, as the pass reads them
    s = np.sort(v)  # NaN last
    n_nan = int(np.count_nonzero(np.isnan(s)))
    s = s[: s.size - n_nan]
    if negate:
        s = -s[::-1]
    s = s.astype(np.float64, copy=False)  # float32 widens exactly
    n = s.size
    n_inf = int(np.searchsorted(s, -np.inf, side="right") + n - np.searchsorted(s, np.inf, side="left"))
    lo = np.searchsorted(s, edges, side="left")  # scores below each edge
    hi = lo.copy()
    if n and edges.size:
        on = np.flatnonzero(s[np.minimum(lo, n - 1)] == edges)  # edges that are scores: count their copies
        hi[on] = np.searchsorted(s, edges[on], side="right")
    counts[:] = np.diff(np.concatenate([[0], lo, [n]]))
    at_edge[1:] = hi - lo
    if minima:  # interval i runs from the first score above e[i-1] (index hi[i-1]) to lo[i]
        start = np.concatenate([[0], hi])
        ok = start < np.concatenate([lo, [n]])
        lowest[ok] = s[start[ok]]
    return Binned(counts, at_edge, lowest, n_nan, n_inf)


# ------------------------------------------------------------------ buckets
def _buckets(edges: np.ndarray, per_edge: int = 4):
    """``(K, e0, scale)`` of the map ``b(v) = trunc(clip((v - e0) * scale, -1, K)) + 1`` into 0..K+1."""
    m = edges.size
    k = int(min(max(per_edge * m, 16), 1 << 22))
    if m == 0:
        return k, 0.0, 1.0
    span = float(edges[-1]) - float(edges[0])
    scale = k / span if 0 < span < np.inf else 1.0
    if not 0 < scale < np.inf:
        scale = 1.0
    return k, float(edges[0]), scale


def _bucket_of(x: np.ndarray, e0: float, scale: float, k: int, out=None, negate=False, work=None) -> np.ndarray:
    """Bucket of each value (float64 arithmetic, identical for edges and scores: the map is monotone)."""
    if work is None:
        work = np.empty(x.shape, dtype=np.float64)
    with np.errstate(over="ignore"):  # a huge score's bucket is the last one all the same
        if negate:
            np.negative(x, out=work, dtype=np.float64)
            np.subtract(work, e0, out=work)
        else:
            np.subtract(x, e0, out=work, dtype=np.float64)
        np.multiply(work, scale, out=work)
    np.clip(work, -1.0, float(k), out=work)
    if out is None:
        out = np.empty(x.shape, dtype=np.intp)
    out[...] = work  # truncation toward zero: monotone too
    out += 1
    return out


def _lut(edges: np.ndarray, k: int, e0: float, scale: float) -> np.ndarray:
    """For each bucket, the number of edges in lower buckets (the first candidate interval)."""
    eb = _bucket_of(edges, e0, scale, k)
    return np.searchsorted(eb, np.arange(k + 2), side="left").astype(np.int64)


def _chunks(values: np.ndarray, native=(np.float64,), size: int = 1 << 22):
    """Contiguous 1-D pieces of ``values`` (views when possible) in a dtype of ``native`` (else float64)."""
    convert = values.dtype.type not in native
    if values.ndim == 0:
        values = values.reshape(1)
    flat = values.ravel(order="K") if (values.flags.c_contiguous or values.flags.f_contiguous) else None
    if flat is not None:
        for start in range(0, flat.size, size):
            piece = flat[start : start + size]
            yield piece.astype(np.float64) if convert else piece
        return
    rows = max(1, size // max(1, values[0].size))
    for start in range(0, values.shape[0], rows):
        piece = np.ascontiguousarray(values[start : start + rows]).reshape(-1)
        yield piece.astype(np.float64) if convert else piece


# ------------------------------------------------------------------ NumPy path
def _numpy(values, edges, lut, k, e0, scale, negate, minima, counts, at_edge, lowest) -> Binned:
    m = edges.size
    dirty = np.zeros(k + 2, dtype=bool)
    eb = _bucket_of(edges, e0, scale, k)
    dirty[eb] = True
    bucket_counts = np.zeros(k + 2, dtype=np.int64)
    bucket_min = np.full(k + 2, np.inf) if minima else None
    kept = []
    n_nan = n_inf = 0
    work = np.empty(_BLOCK, dtype=np.float64)
    idx = np.empty(_BLOCK, dtype=np.intp)
    for piece in _chunks(values, native=(np.float32, np.float64)):
        for start in range(0, piece.size, _BLOCK):
            block = piece[start : start + _BLOCK]
            with np.errstate(invalid="ignore", over="ignore"):
                finite = np.isfinite(np.add.reduce(block))
            if not finite:
                nan = np.isnan(block)
                n_nan += int(np.count_nonzero(nan))
                n_inf += int(np.count_nonzero(np.isinf(block)))
                block = block[~nan]
            n = block.size
            w, b = work[:n], idx[:n]
            _bucket_of(block, e0, scale, k, out=b, negate=negate, work=w)
            bucket_counts += np.bincount(b, minlength=k + 2)
            hit = dirty[b]
            if minima:
                # w is free again: the block's scores as float64, similarity oriented
                np.negative(block, out=w, dtype=np.float64) if negate else np.copyto(w, block, casting="unsafe")
                np.minimum.at(bucket_min, b, w)
                kept.append(w[hit])
            else:
                sel = block[hit].astype(np.float64)
                kept.append(-sel if negate else sel)
    # clean buckets hold no edge: their interval is the bucket's first candidate, exactly
    clean = ~dirty
    np.add.at(counts, lut[clean], bucket_counts[clean])
    exact = np.concatenate(kept) if kept else np.empty(0)
    pos = np.searchsorted(edges, exact, side="right")  # interval: edges <= the score
    counts += np.bincount(pos, minlength=m + 1)
    on = pos > 0
    on[on] = exact[on] == edges[pos[on] - 1]
    at_edge += np.bincount(pos[on], minlength=m + 1)
    if minima:
        above = ~on
        np.minimum.at(lowest, pos[above], exact[above])
        # the lowest score of a clean bucket is the lowest of its interval above its edge if it comes first
        filled = np.flatnonzero(clean & (bucket_counts > 0))
        if filled.size:
            inter = lut[filled]
            first = np.flatnonzero(np.r_[True, inter[1:] != inter[:-1]])
            np.minimum.at(lowest, inter[first], bucket_min[filled[first]])
    return Binned(counts, at_edge, lowest, n_nan, n_inf)


# ------------------------------------------------------------------ numba path
_KERNEL = []
_MIN_SPLIT = 1 << 21  # scores from which the compiled pass splits over threads
_PIECE = 1 << 22  # scores a thread takes at a time (32 MiB of float64)


def _threads(n: int) -> int:
    """Threads for a pass over ``n`` scores: the process's cores from the main thread, else one.

    Inside a dask (or any other) worker thread the caller already runs in
    parallel, so the pass stays on its thread. ``BIOXR_THREADS`` overrides.
    """
    forced = os.environ.get("BIOXR_THREADS")
    if forced:
        if not forced.strip().isdigit():
            raise ValueError(f"BIOXR_THREADS={forced!r}; give a whole number of threads (1 or more).")
        return max(1, int(forced))
    if n < _MIN_SPLIT or threading.current_thread() is not threading.main_thread():
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _numba(values, edges, k, e0, scale, negate, minima, counts, at_edge, lowest) -> Binned:
    """One compiled pass; each score reads its bucket's first interval and updates one interval record.

    ``first[b]`` is the number of edges in buckets below ``b`` (so the
    score's interval is ``first[b]`` or, when it is at or above the edge
    ``e[first[b]]``, the next one), or ``-1 - first[b]`` when bucket ``b``
    holds two edges or more (an exact scan of them). Interval ``i``'s
    record holds ``e[i]`` (NaN for the last interval: never reached, never
    equal), its count of scores strictly above its left edge, its lowest
    such score, and its count equal to the left edge. The pass splits over
    threads (:func:`_threads`), each with its own records.
    """
    kernel = _numba_kernel()
    m = edges.size
    # the edges' buckets by the compiled map itself, so that the table and the scores' buckets agree exactly
    lut = np.searchsorted(kernel.buckets(edges, e0, scale, float(k)), np.arange(k + 2), side="left")
    multi = np.diff(np.concatenate([lut, [m]])) > 1  # the bucket holds two edges or more
    first = np.where(multi, -1 - lut, lut).astype(np.int32 if m < 1 << 30 else np.int64)
    padded = np.concatenate([edges, [np.inf]])
    template = np.zeros((m + 1, 4))
    template[:, 0] = padded
    template[m, 0] = np.nan
    template[:, 2] = np.inf
    sign = -1.0 if negate else 1.0
    n_threads = _threads(int(values.size))
    pieces = _pieces(values, _PIECE if n_threads > 1 else 1 << 62)
    lock = threading.Lock()

    def work(piece, own=False):  # one thread's records: its first piece, then the next one left (balanced under load)
        # a lone thread fills the template itself: no second (M + 1) x 4 array (32 bytes an edge) per call
        rec, tally = (template if own else template.copy()), np.zeros(2, dtype=np.int64)  # NaN, infinite
        while piece is not None:
            kernel.run(piece, 0, piece.size, sign, e0, scale, float(k), first, padded, rec, tally)
            with lock:
                piece = next(pieces, None)
        return rec, tally

    if n_threads == 1:
        parts = [work(next(pieces, None), own=True)]
    else:
        with ThreadPoolExecutor(n_threads) as pool:
            starts = [next(pieces, None) for _ in range(n_threads)]
            parts = [job.result() for job in [pool.submit(work, piece) for piece in starts]]
    rec, tally = parts[0]
    for other, more in parts[1:]:
        rec[:, 1] += other[:, 1]
        rec[:, 3] += other[:, 3]
        np.minimum(rec[:, 2], other[:, 2], out=rec[:, 2])
        tally += more
    at_edge[:] = rec[:, 3]
    counts[:] = rec[:, 1]
    counts += at_edge
    if minima:
        lowest[:] = rec[:, 2]
    return Binned(counts, at_edge, lowest, int(tally[0]), int(tally[1]))


def _pieces(values: np.ndarray, size: int):
    """The scores as 1-D float32 or float64 pieces of ``size``: views when contiguous, else converted copies."""
    if values.dtype in (np.float32, np.float64) and (values.flags.c_contiguous or values.flags.f_contiguous):
        flat = values.ravel(order="K")  # a view: the array is contiguous
        return (flat[start : start + size] for start in range(0, flat.size, size))
    return _chunks(values, native=(np.float32, np.float64), size=min(size, 1 << 22))


def _numba_kernel():
    """The compiled pass, or None without numba (compiled on first use, cached on disk)."""
    if _KERNEL:
        return _KERNEL[0]
    try:
        import numba
    except Exception:  # not installed, or broken (e.g. a local module shadowing one it imports): the NumPy path
        _KERNEL.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def kernel(x, start, stop, sign, e0, scale, k, first, padded, rec, tally):  # pragma: no cover
        m = padded.size - 1
        n_nan = 0
        n_inf = 0
        for j in range(start, stop):
            v = np.float64(x[j]) * sign  # exact: float32 widens, negation is exact
            if v != v:
                n_nan += 1
                continue
            # unsigned indices: no wrap-around test for negative ones in the hot loop
            f = first[np.uintp(np.intp(min(max((v - e0) * scale, -1.0), k)) + 1)]
            if f >= 0:  # at most one edge in the bucket, e[f] (the edges below f are in lower buckets)
                fu = np.uintp(f)
                edge = rec[fu, 0]
                i = fu + np.uintp(v >= edge)
                eq = v == edge
            else:  # two or more: scan them (edges of higher buckets are above v)
                s = -1 - f
                while s < m and v >= padded[s]:
                    s += 1
                eq = s > 0 and v == padded[s - 1]
                i = np.uintp(s)
            n_inf += abs(v) == np.inf
            if eq:
                rec[i, 3] += 1.0
            else:
                rec[i, 1] += 1.0
                if v < rec[i, 2]:
                    rec[i, 2] = v
        tally[0] += n_nan
        tally[1] += n_inf

    @numba.njit(cache=True, nogil=True)
    def buckets(edges, e0, scale, k):  # pragma: no cover
        out = np.empty(edges.size, dtype=np.intp)
        for j in range(edges.size):
            out[j] = np.intp(min(max((edges[j] - e0) * scale, -1.0), k)) + 1
        return out

    compiled = _Compiled(kernel, buckets)
    _KERNEL.append(compiled)
    return compiled


class _Compiled(NamedTuple):
    run: object  # the pass over scores
    buckets: object  # the map of edges to buckets, as the pass computes it
