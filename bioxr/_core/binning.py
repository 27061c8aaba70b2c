"""Exact counts of scores between sorted edges, without sorting the scores.

The exact DET needs the non-mated scores only as counts between
consecutive distinct mated scores (ISO/IEC 19795-1 Annex F.1): the
corners sit at mated scores, and FMR there is a count of the scores at or
above each. :func:`count_between` gives those counts (and, for the corners
just above each mated score, the lowest score of each interval) without
a sort.

A score's interval is found through a coarse lookup: an affine map sends
it to one of ``K`` buckets, a table gives the first edge of its bucket,
and a comparison with that bucket's edges settles it exactly. The map is
monotone, so a score in a bucket below an edge's is below the edge; the
same float64 arithmetic maps edges and scores. Two implementations give
identical results:

- ``"numba"`` (optional dependency, ``bioxr[fast]``): per block of 2**20
  scores, a counting-sort scatter by region of buckets, then one update of
  the bucket's 64-byte record per score, in cache; a bucket holding two
  edges or more goes through an exact scan;
- ``"numpy"``: four buckets per edge counted with :func:`numpy.bincount`
  in blocks; only the scores that share a bucket with an edge are compared
  with the edges (:func:`numpy.searchsorted`).

Measured (``benchmarks/det_kernel.py``): on 1e8 scores and 1e5 edges
neither beats NumPy's vectorised ``np.sort`` on the project's machine, so
:mod:`bioxr.counting` uses them only when asked (``MIN_BETWEEN_CELLS``).

``engine=None`` takes numba when it is importable; the environment
variable ``BIOXR_KERNEL=numpy`` (or ``numba``) forces one.

Scores of any dtype are compared as float64 (float32 and integers convert
exactly, as :mod:`bioxr.counting` compares them), so the decisions are the
float64 ones of "accept when s >= t".
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

__all__ = ["Binned", "ENGINES", "count_between", "engine_available"]

ENGINES = ("numba", "numpy")
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
    """True when ``engine`` ("numba" or "numpy") can run here.

    Examples
    --------
    >>> engine_available("numpy")
    True
    """
    if engine == "numpy":
        return True
    return _numba_kernel() is not None


def _choose(engine) -> str:
    if engine is None:
        engine = os.environ.get("BIOXR_KERNEL") or None
    if engine is None:
        return "numba" if engine_available("numba") else "numpy"
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}; choose 'numba', 'numpy' or None (numba when it is installed).")
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
    engine : {"numba", "numpy"} or None
        None: numba when importable (``BIOXR_KERNEL`` overrides).

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
    k, e0, scale = _buckets(edges, per_edge=1 if engine == "numba" else 4)
    if engine == "numba":
        return _numba(values, edges, k, e0, scale, bool(negate), bool(minima), counts, at_edge, lowest)
    lut = _lut(edges, k, e0, scale)
    return _numpy(values, edges, lut, k, e0, scale, bool(negate), bool(minima), counts, at_edge, lowest)


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


def _numba(values, edges, k, e0, scale, negate, minima, counts, at_edge, lowest) -> Binned:
    """Compiled passes over blocks of scores; each score updates one 64-byte record of its bucket.

    A record holds the bucket's first edge ``f`` (the lowest edge in it or
    above it) and, of the bucket's scores, the count and lowest of those
    below ``f``, the count equal to it, the count and lowest of those above
    it. A bucket with two edges or more sends its scores to a slow exact
    scan. The records then add up into the intervals.
    """
    kernel = _numba_kernel()
    m = edges.size
    # the edges' buckets by the compiled map itself, so that the table and the scores' buckets agree exactly
    lut = np.searchsorted(kernel.buckets(edges, e0, scale, float(k)), np.arange(k + 2), side="left").astype(np.int64)
    padded = np.concatenate([edges, [np.inf]])
    multi = np.diff(np.concatenate([lut, [m]])) > 1  # the bucket holds two edges or more
    rec = np.zeros((k + 2, 8))
    rec[:, 0] = padded[lut]
    rec[:, 1] = multi
    rec[:, 3] = rec[:, 6] = np.inf
    tally = np.zeros(2, dtype=np.int64)  # NaN, infinite
    shift = max(0, int(np.log2(max(k, 1))) - 10)  # regions of 1,024 buckets: 64 KiB of records, in cache
    hist = np.zeros(((k + 1) >> shift) + 2, dtype=np.int64)
    size = 1 << 20
    part_v, part_b = np.empty(size), np.empty(size, dtype=np.int32)
    for chunk in _chunks(values, native=(np.float32, np.float64), size=size):
        kernel(chunk, padded, lut, rec, e0, scale, float(k), negate, counts, at_edge, lowest, tally, shift, hist,
               part_v, part_b)
    single = ~multi
    below, above = lut[single], lut[single] + 1
    np.add.at(counts, below, rec[single, 2].astype(np.int64))
    ok = above <= m
    # above the last edge a bucket's "first edge" is the +inf pad: +inf scores equal it, in the last interval
    counts[m] += int(rec[single, 4][~ok].sum())
    np.add.at(counts, above[ok], (rec[single, 4] + rec[single, 5]).astype(np.int64)[ok])
    np.add.at(at_edge, above[ok], rec[single, 4].astype(np.int64)[ok])
    if minima:
        np.minimum.at(lowest, below, rec[single, 3])
        np.minimum.at(lowest, above[ok], rec[single, 6][ok])
    else:
        lowest[:] = np.inf
    return Binned(counts, at_edge, lowest, int(tally[0]), int(tally[1]))


def _numba_kernel():
    """The compiled loop, or None without numba (compiled on first use, cached on disk)."""
    if _KERNEL:
        return _KERNEL[0]
    try:
        import numba
    except Exception:  # not installed, or broken (e.g. a local module shadowing one it imports): the NumPy path
        _KERNEL.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def bucket(v, e0, scale, k):  # pragma: no cover
        return np.intp(min(max((v - e0) * scale, -1.0), k)) + 1

    @numba.njit(cache=True, nogil=True)
    def regions(chunk, e0, scale, k, negate, tally, shift, hist):  # pragma: no cover
        # 1. how many scores fall in each region of buckets
        hist[:] = 0
        n_nan = 0
        for j in range(chunk.size):
            v = np.float64(chunk[j])
            if v != v:
                n_nan += 1
                continue
            hist[bucket(-v if negate else v, e0, scale, k) >> shift] += 1
        tally[0] += n_nan

    @numba.njit(cache=True, nogil=True)
    def scatter(chunk, e0, scale, k, negate, tally, shift, hist, part_v, part_b):  # pragma: no cover
        # 2. scores grouped by region (a counting-sort scatter), so that step 3 works in cache
        total = 0
        for c in range(hist.size):
            n = hist[c]
            hist[c] = total
            total += n
        n_inf = 0
        for j in range(chunk.size):
            v = np.float64(chunk[j])
            if v != v:
                continue
            if negate:
                v = -v
            if abs(v) == np.inf:
                n_inf += 1
            b = bucket(v, e0, scale, k)
            c = b >> shift
            pos = hist[c]
            hist[c] = pos + 1
            part_v[pos] = v
            part_b[pos] = b
        tally[1] += n_inf
        return total

    @numba.njit(cache=True, nogil=True)
    def records(total, part_v, part_b, padded, lut, rec, counts, at_edge, lowest):  # pragma: no cover
        # 3. each score into its bucket's record
        m = counts.size - 1
        for j in range(total):
            v = part_v[j]
            b = part_b[j]
            f = rec[b, 0]
            if rec[b, 1] == 0.0:  # at most one edge: branch-free updates of the bucket's record
                lt = v < f
                gt = v > f
                rec[b, 2] += lt
                rec[b, 4] += v == f
                rec[b, 5] += gt
                rec[b, 3] = min(rec[b, 3], v if lt else np.inf)
                rec[b, 6] = min(rec[b, 6], v if gt else np.inf)
                continue
            i = lut[b]  # intervals below i end below the bucket; padded[i] is the bucket's first edge
            while i < m and v >= padded[i]:
                i += 1
            counts[i] += 1
            if i > 0 and v == padded[i - 1]:
                at_edge[i] += 1
            elif v < lowest[i]:
                lowest[i] = v

    def kernel(chunk, padded, lut, rec, e0, scale, k, negate, counts, at_edge, lowest, tally, shift, hist,
               part_v, part_b):
        regions(chunk, e0, scale, k, negate, tally, shift, hist)
        total = scatter(chunk, e0, scale, k, negate, tally, shift, hist, part_v, part_b)
        records(total, part_v, part_b, padded, lut, rec, counts, at_edge, lowest)

    @numba.njit(cache=True, nogil=True)
    def buckets(edges, e0, scale, k):  # pragma: no cover
        out = np.empty(edges.size, dtype=np.intp)
        for j in range(edges.size):
            out[j] = bucket(edges[j], e0, scale, k)
        return out

    kernel.buckets = buckets
    _KERNEL.append(kernel)
    return kernel
