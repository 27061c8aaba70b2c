"""Passes over a chunked group of scores that run where the blocks live.

A group of a lazy score cube is a 2-D chunked array (probes by
references). The passes of :mod:`bioxr.counting` over it (the window of
scores and the counts around it, the mated and excluded cells, the
strided sample) are map-reduce jobs here: a function runs on each block
where it lives and returns only its small result (the block's window
scores or counts at given thresholds, its mated cells, its sample);
partial results are combined in a tree, ``SPLIT_EVERY`` at a time (the
pattern of ``dask.array.reduction`` and flox), so the client receives one
small result instead of the blocks.

Blocks may be chunked along ``reference`` too: a block covers rows
``[r0, r1)`` and columns ``[c0, c1)`` of the group, so its cells are not
contiguous in the group's flat (row-major) order. :class:`Layout` maps the
group's flat positions to the blocks and back.

Chunked arrays are recognised through xarray's chunk-manager API
(:func:`xarray.namedarray.pycompat.is_chunked_array`,
:func:`xarray.namedarray.parallelcompat.get_chunked_array_type`). The
blockwise tree runs on dask (any scheduler: threaded, processes,
``dask.distributed``); another engine's arrays are read one row band at a
time through its chunk manager's ``compute``, with the same block
functions and identical results, but the bands travel to the client.
"""

from __future__ import annotations

import numpy as np

from ..counting import Pool, _ge, _scan

#: Partial results combined per node of the tree.
SPLIT_EVERY = 8
#: A block whose window holds more than this share of its cells sends counts at the thresholds instead.
CONTENTS_SHARE = 0.01


# ------------------------------------------------------------------ engines
def is_chunked(values) -> bool:
    """True for a chunked (lazy) array: dask, or any engine registered with xarray's chunk managers."""
    try:
        from xarray.namedarray.pycompat import is_chunked_array
    except ImportError:  # pragma: no cover - older xarray
        return hasattr(values, "blocks")
    return bool(is_chunked_array(values))


def _manager(values):
    from xarray.namedarray.parallelcompat import get_chunked_array_type

    return get_chunked_array_type(values)


class Layout:
    """Where the blocks of a 2-D chunked array sit in its flat (row-major) order.

    Blocks are numbered in row-major order of the block grid.

    Examples
    --------
    A 3 x 4 array in blocks of rows (2, 1) and columns (3, 1): flat
    position 5 (row 1, column 1) is local position 4 of block 0 (2 x 3);
    position 3 (row 0, column 3) is local position 0 of block 1 (2 x 1),
    position 11 (row 2, column 3) local position 0 of block 3 (1 x 1).

    >>> layout = Layout(((2, 1), (3, 1)))
    >>> [p.tolist() for p in layout.split([5, 11, 3])]
    [[4], [0], [], [0]]
    >>> layout.bounds(3)
    (2, 3, 3, 4)
    """

    def __init__(self, chunks):
        rows, cols = (np.asarray(c, dtype=np.int64) for c in chunks)
        self.r_edges = np.concatenate([[0], np.cumsum(rows)])
        self.c_edges = np.concatenate([[0], np.cumsum(cols)])
        self.n_rows, self.n_cols = int(self.r_edges[-1]), int(self.c_edges[-1])
        self.shape = (rows.size, cols.size)
        self.n_blocks = rows.size * cols.size

    def bounds(self, b: int):
        """``(r0, r1, c0, c1)`` of block ``b``."""
        i, j = divmod(b, self.shape[1])
        return int(self.r_edges[i]), int(self.r_edges[i + 1]), int(self.c_edges[j]), int(self.c_edges[j + 1])

    def split(self, pos: np.ndarray) -> list:
        """Flat positions of the group, as local flat positions in each block (sorted)."""
        pos = np.asarray(pos, dtype=np.int64)
        if self.n_cols == 0:
            return [np.empty(0, dtype=np.int64)] * self.n_blocks
        rows, cols = np.divmod(pos, self.n_cols)
        bi = np.searchsorted(self.r_edges, rows, side="right") - 1
        bj = np.searchsorted(self.c_edges, cols, side="right") - 1
        width = np.diff(self.c_edges)[bj]
        local = (rows - self.r_edges[bi]) * width + (cols - self.c_edges[bj])
        block = bi * self.shape[1] + bj
        order = np.lexsort((local, block))
        block, local = block[order], local[order]
        cuts = np.searchsorted(block, np.arange(self.n_blocks + 1))
        return [local[cuts[b] : cuts[b + 1]] for b in range(self.n_blocks)]


class PerBlock:
    """Positions already given block by block: one array of local flat positions (or a dask Delayed) per block.

    What a lazy comparison list's index is (:class:`bioxr._core.partitions.PartitionIndex`):
    each block's positions are computed, and stay, where its partition
    lives; a pass hands each block its own instead of splitting global
    positions (:meth:`Layout.split`). ``size`` is their total number.
    """

    def __init__(self, parts, size: int):
        self.parts = list(parts)
        self.size = int(size)

    def __len__(self) -> int:
        return self.size


def _split(layout: Layout, pos) -> list:
    """Local positions per block: ``pos`` split by the layout, or as given by a :class:`PerBlock`."""
    if isinstance(pos, PerBlock):
        if len(pos.parts) != layout.n_blocks:
            raise ValueError(f"{len(pos.parts)} blocks of positions for {layout.n_blocks} blocks of scores")
        return pos.parts
    return layout.split(np.empty(0, dtype=np.int64) if pos is None else pos)


def run(values, chunk, combine, args, blocks=None):
    """``combine`` over ``chunk(block, *args[b])`` of every block ``b`` (or of ``blocks``), in a tree.

    On dask each ``chunk`` runs where its block lives and the partials are
    combined ``SPLIT_EVERY`` at a time on the workers; only the root
    reaches the client. ``combine`` takes any number of partials.
    """
    layout = Layout(values.chunks)
    todo = list(range(layout.n_blocks)) if blocks is None else list(blocks)
    if hasattr(values, "to_delayed") and hasattr(values, "dask"):
        return _run_dask(values, chunk, combine, args, todo)
    return _run_bands(values, layout, chunk, combine, args, todo)


def _run_dask(values, chunk, combine, args, todo):
    import dask

    grid = values.to_delayed(optimize_graph=True).ravel()
    node = dask.delayed(chunk, pure=True)
    shared = {}  # an array argument goes into the graph once (a key of its own), however many blocks take it

    def once(a):
        if not isinstance(a, np.ndarray) or a.nbytes <= 4096:
            return a
        if id(a) not in shared:
            shared[id(a)] = (a, dask.delayed(a, pure=True))
        return shared[id(a)][1]

    return _tree([node(grid[b], *map(once, args[b])) for b in todo], combine)


def _run_bands(values, layout, chunk, combine, args, todo):
    """Another engine: compute one band of block rows at a time through its chunk manager."""
    manager = _manager(values)
    parts = []
    for i in sorted({b // layout.shape[1] for b in todo}):
        r0, r1 = int(layout.r_edges[i]), int(layout.r_edges[i + 1])
        (band,) = manager.compute(values[r0:r1])
        band = np.asarray(band)
        for b in todo:
            if b // layout.shape[1] == i:
                _, _, c0, c1 = layout.bounds(b)
                parts.append(chunk(band[:, c0:c1], *args[b]))
    return combine(*parts)


def _flat(block) -> np.ndarray:
    flat = np.asarray(block).reshape(-1)
    return flat if np.issubdtype(flat.dtype, np.floating) else flat.astype(np.float64)


def _cat(arrays):
    arrays = [a for a in arrays if a is not None]
    return np.concatenate(arrays) if arrays else np.empty(0)


# ------------------------------------------------------------------ mated and excluded cells
def _gather_chunk(block, *local):
    flat = _flat(block)
    return tuple(flat[p] for p in local)


def _gather_combine(*parts):
    if not parts:
        return None
    return tuple(_cat([p[k] for p in parts]) for k in range(len(parts[0])))


def gather(values, *positions):
    """The cells at each array of flat ``positions`` (in no particular order), one blockwise pass."""
    layout = Layout(values.chunks)
    splits = [_split(layout, p) for p in positions]
    args = [tuple(s[b] for s in splits) for b in range(layout.n_blocks)]
    out = run(values, _gather_chunk, _gather_combine, args)
    return out if out is not None else tuple(np.empty(0) for _ in positions)


# ------------------------------------------------------------------ strided sample
def _sample_chunk(block, r0, c0, n_cols, stride, skip):
    """The block's cells at flat group positions that are multiples of ``stride``, less ``skip`` (local), NaN dropped."""
    h, w = block.shape
    if h == 0 or w == 0:
        return _flat(block)[:0]
    start, end = r0 * n_cols + c0, (r0 + h - 1) * n_cols + c0 + w
    pos = np.arange(-(-start // stride) * stride, end, stride, dtype=np.int64)
    rows, cols = np.divmod(pos, n_cols)
    inside = (cols >= c0) & (cols < c0 + w)
    local = (rows[inside] - r0) * w + (cols[inside] - c0)
    if skip.size:
        hit = np.minimum(np.searchsorted(skip, local), skip.size - 1)
        local = local[skip[hit] != local]
    out = _flat(block)[local]
    return out[~np.isnan(out)]


def _sample_combine(*parts):
    return _cat(parts)


def sample(values, stride: int, skip) -> np.ndarray:
    """The cells at flat positions ``0, stride, 2 stride, ...`` less ``skip``, NaN dropped (in no particular order)."""
    layout = Layout(values.chunks)
    skips = _split(layout, skip)
    args = []
    for b in range(layout.n_blocks):
        r0, _, c0, _ = layout.bounds(b)
        args.append((r0, c0, layout.n_cols, int(stride), skips[b]))
    return run(values, _sample_chunk, _sample_combine, args)


# ------------------------------------------------------------------ both in one pass
def _both_chunk(block, local_m, local_x, r0, c0, n_cols, stride, skip):
    return _gather_chunk(block, local_m, local_x), _sample_chunk(block, r0, c0, n_cols, stride, skip)


def _both_combine(*parts):
    if not parts:
        return None
    return _gather_combine(*[p[0] for p in parts]), _cat([p[1] for p in parts])


def gather_and_sample(values, mated, excluded, stride: int, skip):
    """:func:`gather` of ``mated`` and ``excluded`` and :func:`sample`, in one blockwise pass."""
    layout = Layout(values.chunks)
    m, x, skips = _split(layout, mated), _split(layout, excluded), _split(layout, skip)
    args = []
    for b in range(layout.n_blocks):
        r0, _, c0, _ = layout.bounds(b)
        args.append((m[b], x[b], r0, c0, layout.n_cols, int(stride), skips[b]))
    return run(values, _both_chunk, _both_combine, args)


# ------------------------------------------------------------------ sorted cells kept where they were gathered
def _spread_chunk(block, local_m, local_x, r0, c0, n_cols, stride, skip, distance):
    """A block's mated cells sorted (float64, similarity orientation, NaN dropped), its excluded cells and its
    sample: the first stays where it was made, the others travel."""
    flat = _flat(block)
    m = flat[local_m].astype(np.float64)
    m = m[~np.isnan(m)]
    if np.isinf(m).any():
        from ..counting import _INFINITE
        from .errors import ScoreCubeError

        raise ScoreCubeError(_INFINITE)
    if distance:
        np.negative(m, out=m)
    m.sort()
    return m, flat[local_x], _sample_chunk(block, r0, c0, n_cols, stride, skip)


def _spread_small(part, every):
    """What travels of a block's :func:`_spread_chunk`: its mated count, every ``every``-th mated cell (sorted),
    its excluded cells and its sample."""
    m, x, s = part
    return m.size, m[every // 2 :: every], x, s


def _spread_small_combine(*parts):
    if not parts:
        return None
    return (sum(p[0] for p in parts),) + tuple(_cat([p[k] for p in parts]) for k in (1, 2, 3))


def spread_and_sample(values, mated, excluded, stride: int, skip, distance: bool, n_sample: int):
    """The mated cells kept where they are, as a :class:`Spread`, with the excluded cells and the sample.

    One blockwise pass, as :func:`gather_and_sample`, on a dask array:
    each block sorts its mated cells (similarity orientation, NaN
    dropped) and keeps them; only their number, about ``n_sample`` of them
    (evenly strided in each block's sorted part, sorted), the excluded
    cells and the strided sample reach the client. Returns ``(spread,
    excluded, sample)``, the last two unsorted in the scores' orientation;
    None for another engine (the caller gathers instead).
    """
    if not (hasattr(values, "to_delayed") and hasattr(values, "dask")):
        return None
    import dask

    layout = Layout(values.chunks)
    m, x, skips = _split(layout, mated), _split(layout, excluded), _split(layout, skip)
    grid = values.to_delayed(optimize_graph=True).ravel()
    node = dask.delayed(_spread_chunk, pure=True)
    parts = []
    for b in range(layout.n_blocks):
        r0, _, c0, _ = layout.bounds(b)
        parts.append(node(grid[b], m[b], x[b], r0, c0, layout.n_cols, int(stride), skips[b], distance))
    parts = list(dask.persist(*parts))
    every = max(1, len(mated) // max(int(n_sample), 1))
    n, m_sample, cells, sample = _tree([dask.delayed(_spread_small, pure=True)(p, every) for p in parts],
                                       _spread_small_combine)
    m_sample.sort()
    getter = dask.delayed(_first, pure=True)
    return Spread([getter(p) for p in parts], n, m_sample), cells, sample


def _first(part):
    return part[0]


def _tree(nodes, combine):
    """``combine`` over the (delayed) ``nodes`` in a tree, ``SPLIT_EVERY`` at a time, computed: the root."""
    import dask

    merge = dask.delayed(combine, pure=True)
    while len(nodes) > 1:
        nodes = [merge(*nodes[i : i + SPLIT_EVERY]) for i in range(0, len(nodes), SPLIT_EVERY)]
    if not nodes:
        return combine()
    (root,) = dask.compute(nodes[0])
    return root


def _counts_part(part, t, side):
    return np.searchsorted(part, t, side=side)


def _sum(*parts):
    return sum(parts[1:], parts[0]) if parts else None


def _window_part(part, lo, hi, t, side):
    i0, i1 = np.searchsorted(part, lo, side="left"), np.searchsorted(part, hi, side="right")
    return i0, part[i0:i1], np.searchsorted(part, t, side=side)


def _window_combine_parts(*parts):
    return sum(p[0] for p in parts), _cat([p[1] for p in parts]), sum(p[2] for p in parts[1:]) + parts[0][2]


class Spread:
    """Sorted scores held in parts where they were gathered (one sorted part per block), known by counts.

    A lazy group's mated scores when they are many (a trial list with 10%
    target trials: a tenth of the list): each block keeps its own part,
    sorted (:func:`spread_and_sample`), and the client holds their number
    (``size``), a sorted strided ``sample`` and the windows of them it
    asks for. :meth:`count_lt` counts below any thresholds in one
    blockwise task per part, summed in a tree; :meth:`inside` brings the
    scores of a window ``[lo, hi]`` and the count below it, after which
    counts at thresholds in the window are answered on the client.
    ``np.asarray`` gathers every score (sorted), for the callers that need
    them all.
    """

    def __init__(self, parts, size: int, sample: np.ndarray):
        self.parts = list(parts)
        self.size = int(size)
        self.sample = sample
        self.fetches = 0  # blockwise passes over the parts (the tests count them)
        self._windows = []  # (lo, hi, n_below, inside)
        self._known = {}  # side -> (thresholds, counts) counted before

    def __len__(self) -> int:
        return self.size

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(self.inside(-np.inf, np.inf))
        return a if dtype is None else a.astype(dtype)

    def count_lt(self, t, side: str = "left") -> np.ndarray:
        """Scores below each threshold (``side="right"``: at or below), exactly.

        Thresholds in a window already brought (:meth:`inside`), counted
        there before, or infinite are answered here; the others in one
        blockwise pass.
        """
        t = np.asarray(t, dtype=float)
        flat = t.reshape(-1)
        out = np.full(flat.size, -1, dtype=np.int64)
        out[np.isneginf(flat)] = 0
        out[np.isposinf(flat)] = self.size
        for lo, hi, n_below, inside in self._windows:
            hit = (out < 0) & (flat >= lo) & (flat <= hi)
            out[hit] = n_below + np.searchsorted(inside, flat[hit], side=side)
        todo = np.flatnonzero(out < 0)
        if todo.size:
            known = self._known.get(side)
            if known is not None:
                pos = np.minimum(np.searchsorted(known[0], flat[todo]), known[0].size - 1)
                hit = known[0][pos] == flat[todo]
                out[todo[hit]] = known[1][pos[hit]]
                todo = todo[~hit]
        if todo.size:
            u = np.unique(flat[todo])
            counts = np.asarray(self._run(_counts_part, _sum, u, side), dtype=np.int64)
            self._remember(side, u, counts)
            out[todo] = counts[np.searchsorted(u, flat[todo])]
        return out.reshape(t.shape)

    def _remember(self, side: str, t: np.ndarray, counts: np.ndarray) -> None:
        """Keep counts at thresholds (sorted, distinct) for later calls."""
        if not t.size:
            return
        if side in self._known:
            t0, c0 = self._known[side]
            t, idx = np.unique(np.concatenate([t0, t]), return_index=True)
            counts = np.concatenate([c0, counts])[idx]
        self._known[side] = (t, counts)

    def inside(self, lo: float, hi: float, at=(), side: str = "left") -> np.ndarray:
        """The sorted scores in ``[lo, hi]`` (and, in the same pass, the counts at ``at``, kept for :meth:`count_lt`)."""
        lo, hi = float(lo), float(hi)
        for wlo, whi, _, inside in self._windows:
            if wlo <= lo and hi <= whi and not len(at):
                return inside[(inside >= lo) & (inside <= hi)]
        at = np.unique(np.asarray(at, dtype=float))
        n_below, inside, counts = self._run(_window_part, _window_combine_parts, lo, hi, at, side)
        inside.sort()
        self._windows.append((lo, hi, int(n_below), inside))
        self._remember(side, at, np.asarray(counts, dtype=np.int64).reshape(-1))
        return inside

    def take(self, k) -> np.ndarray:
        """The ``k``-th lowest scores (0-based ranks, each ``< size``), exactly.

        Each rank is bracketed by the sorted sample: a score drawn every
        ``e``-th from each of ``P`` sorted parts is within ``P e`` ranks of
        its place, so the sample's neighbours ``P + 1`` places away on each
        side hold the rank between them; the window between them is brought
        (:meth:`inside`) and read. A bracket that misses opens to the end
        of the scores it missed.
        """
        k = np.asarray(k, dtype=np.int64).reshape(-1)
        if np.any((k < 0) | (k >= self.size)):
            raise IndexError(f"ranks must lie in [0, {self.size}); got {k.tolist()}")
        s = self.sample
        reach = len(self.parts) + 1
        out = np.empty(k.size)
        for j, rank in enumerate(k.tolist()):
            i = int(rank * s.size / self.size) if s.size else 0
            lo = float(s[i - reach]) if s.size and i - reach >= 0 else -np.inf
            hi = float(s[i + reach]) if i + reach < s.size else np.inf
            while True:
                inside = self.inside(lo, hi)
                n_below = int(self.count_lt([lo])[0])  # lo is in a window brought: no pass
                if n_below <= rank < n_below + inside.size:
                    out[j] = inside[rank - n_below]
                    break
                lo, hi = (-np.inf, hi) if rank < n_below else (lo, np.inf)
        return out

    def _run(self, fn, combine, *args):
        import dask

        self.fetches += 1
        shared = [dask.delayed(a, pure=True) if isinstance(a, np.ndarray) and a.nbytes > 4096 else a for a in args]
        node = dask.delayed(fn, pure=True)
        return _tree([node(p, *shared) for p in self.parts], combine)


# ------------------------------------------------------------------ counts between edges
def _between_chunk(block, edges, negate, minima, engine, dtype):
    """A block's :class:`~bioxr._core.binning.Binned`, compact: it is what travels and waits to be combined.

    Counts in ``dtype`` (4 bytes where the whole array's cells fit), the
    lowest scores in the block's own float dtype (each is one of its
    scores, negated or not: exact), or one ``inf`` without ``minima``:
    12 bytes an edge for float32 scores instead of 24.
    """
    from .binning import count_between as _count

    b = _count(block, edges, negate=negate, minima=minima, engine=engine)
    values = np.asarray(block)
    low = values.dtype if np.issubdtype(values.dtype, np.floating) else np.float64
    lowest = b.lowest.astype(low) if minima else np.float64(np.inf)
    return b._replace(counts=b.counts.astype(dtype), at_edge=b.at_edge.astype(dtype), lowest=lowest)


def _between_combine(*parts):
    """Partials summed (in place, into a copy of the first) and their minima taken."""
    if not parts:
        return None
    first = parts[0]
    counts, at_edge, lowest = first.counts.copy(), first.at_edge.copy(), np.array(first.lowest, copy=True)
    for p in parts[1:]:
        counts += p.counts
        at_edge += p.at_edge
        np.minimum(lowest, p.lowest, out=lowest)
    return first._replace(counts=counts, at_edge=at_edge, lowest=lowest, n_nan=sum(p.n_nan for p in parts),
                          n_inf=sum(p.n_inf for p in parts))


def count_between(values, edges, *, negate: bool = False, minima: bool = False, engine=None):
    """:func:`bioxr._core.binning.count_between` over a chunked 2-D array, blockwise: the same ``Binned``.

    Each block counts its scores into the intervals between ``edges``
    where it lives; counts and NaN/infinity tallies add up, the lowest
    scores take the minimum, so only ``3 (M + 1)`` numbers per node travel,
    in 4-byte counts (8 beyond ``2**32`` cells) and, for float32 scores,
    4-byte minima; the result is in the dtypes of the in-memory one.
    """
    edges = np.asarray(edges, dtype=np.float64)
    layout = Layout(values.chunks)
    dtype = np.uint32 if int(np.prod(values.shape, dtype=np.float64)) < 2**32 else np.int64
    args = [(edges, negate, minima, engine, dtype)] * layout.n_blocks
    b = run(values, _between_chunk, _between_combine, args)
    if b is None:
        return b
    m = edges.size
    lowest = b.lowest.astype(np.float64) if minima else np.full(m + 1, np.inf)
    return b._replace(counts=b.counts.astype(np.int64), at_edge=b.at_edge.astype(np.int64), lowest=lowest)


# ------------------------------------------------------------------ the window pass
def _window_chunk(block, b, bounds, limits, distance, thresholds, cap, count_dtype):
    """One block's window: its scores in the window, or (when more than ``cap`` of its cells) counts at ``thresholds``."""
    flat = _flat(block)
    kept, n_above, n_nan, n_edges = _scan(flat, *bounds, limits, distance)
    out = dict(kept=[kept], n_above=n_above, n_nan=n_nan, n_edges=n_edges, hist=None, missing=[])
    if thresholds is not None and kept.size > cap * flat.size:
        from .binning import count_between

        # every window score is >= lo = thresholds[0] (decided exactly by counting._scan)
        if thresholds.size >= kept.size:  # more thresholds than scores (a list's mated scores): each score searched
            v = kept.astype(np.float64)
            if distance:
                np.negative(v, out=v)
            hist = np.bincount(np.searchsorted(thresholds, v, side="right") - 1,
                               minlength=thresholds.size).astype(count_dtype)
        else:  # fewer: count_between, a compiled pass or a sort (a search of each score had taken 70% of a cube's
            # EER window pass)
            # interval i + 1 of count_between is [thresholds[i], thresholds[i + 1]); interval 0 (below lo) is
            # empty, and +inf, a threshold some callers ask about, holds no score (scores are finite)
            n_finite = int(np.searchsorted(thresholds, np.inf))
            hist = np.zeros(thresholds.size, dtype=count_dtype)
            hist[:n_finite] = count_between(kept, thresholds[:n_finite], negate=distance).counts[1:]
        out.update(kept=[], hist=hist, missing=[b])
    return out


def _window_combine(*parts):
    if not parts:
        return None
    hists = [p["hist"] for p in parts if p["hist"] is not None]
    return dict(
        kept=[np.concatenate([k for p in parts for k in p["kept"]])] if any(p["kept"] for p in parts) else [],
        n_above=sum(p["n_above"] for p in parts),
        n_nan=sum(p["n_nan"] for p in parts),
        n_edges=sum(p["n_edges"] for p in parts),
        hist=sum(hists[1:], hists[0]) if hists else None,
        missing=[b for p in parts for b in p["missing"]],
    )


def window(values, bounds, limits, distance: bool, thresholds=None, blocks=None):
    """The window pass of :func:`bioxr.counting._extract`, blockwise.

    ``bounds`` is ``(a0, b0, bounded)`` as there. With ``thresholds``
    (sorted, similarity orientation, starting at the window's ``lo``), a
    block whose window holds more than ``CONTENTS_SHARE`` of its cells
    sends, instead of its scores, how many of them fall in each interval
    ``[thresholds[i], thresholds[i + 1])``. Returns a dict: ``kept`` (the
    scores sent, unsorted, in the scores' dtype), ``n_above``, ``n_nan``,
    ``n_edges``, ``hist`` (summed counts, or None) and ``missing`` (blocks
    that sent counts).
    """
    layout = Layout(values.chunks)
    cap = CONTENTS_SHARE if thresholds is not None else np.inf
    # counts summed over the whole group never exceed its cells: 4 bytes a threshold where that fits
    count_dtype = np.uint32 if layout.n_rows * layout.n_cols < 2**32 else np.int64
    args = [(b, bounds, limits, distance, thresholds, cap, count_dtype) for b in range(layout.n_blocks)]
    out = run(values, _window_chunk, _window_combine, args, blocks)
    kept = out["kept"][0] if out["kept"] else np.empty(0)
    return dict(out, kept=kept)


# ------------------------------------------------------------------ several narrow windows in one pass
def _windows_chunk(block, bounds_list, distance):
    flat = _flat(block)
    return [_scan(flat, *bounds, [], distance)[:3] for bounds in bounds_list]


def _windows_combine(*parts):
    if not parts:
        return None
    return [(_cat([p[w][0] for p in parts]), sum(p[w][1] for p in parts), sum(p[w][2] for p in parts))
            for w in range(len(parts[0]))]


def windows(values, bounds_list, distance: bool) -> list:
    """The window pass for several windows at once: ``(kept, n_above, n_nan)`` per window, blockwise.

    ``bounds_list`` holds ``(a0, b0, bounded)`` per window, as
    :func:`window`'s ``bounds``; every block sends the scores of each window
    (meant for narrow windows: a few scores each).
    """
    layout = Layout(values.chunks)
    args = [(list(bounds_list), distance)] * layout.n_blocks
    out = run(values, _windows_chunk, _windows_combine, args)
    if out is None:
        return [(np.empty(0), 0, 0) for _ in bounds_list]
    return out


class CountedPool(Pool):
    """A window pool whose largest blocks sent counts at given thresholds, not their scores.

    ``false_matches`` at those thresholds (and at +inf) is answered from
    the counts; anything else that needs the window's scores (``pool``,
    ``thresholds``, ``nonmated_tail``) fetches the missing blocks' scores
    once, in one more blockwise pass over those blocks only. Every answer
    is the one the whole window gives.
    """

    _fetch = None

    @property
    def pool(self):
        if self._fetch is not None:
            extra, self._fetch = self._fetch(), None
            self._pool = np.sort(np.concatenate([self._pool, extra]))
        return self._pool

    @pool.setter
    def pool(self, value):
        self._pool = value

    def counted(self, thresholds, hist, fetch) -> "CountedPool":
        """Add the counts of the blocks that sent none of their scores (``fetch`` gets those scores)."""
        self._thresholds = thresholds
        self._ge_counted = np.cumsum(hist[::-1].astype(np.int64))[::-1]  # counted scores >= thresholds[i]
        self._fetch = fetch
        return self

    def false_matches(self, t) -> np.ndarray:
        if self._fetch is None:
            return super().false_matches(t)
        t = np.asarray(t, dtype=float)
        grid = self._thresholds
        pos = np.minimum(np.searchsorted(grid, t), grid.size - 1)
        top = np.isposinf(t)
        if not np.all(top | (grid[pos] == t)):  # a threshold the counts do not cover: fetch the scores
            return super().false_matches(t)
        ge = lambda a: a.size - np.searchsorted(a, t, side="left")  # noqa: E731
        counted = np.where(top, 0, self._ge_counted[pos])
        above = np.where(top, 0, self.n_above)
        return ge(self._pool) + counted + above - _ge(self.mated, t) - ge(self.excluded)


# ------------------------------------------------------------------ tasks where the data are
def defer(fn, *args, keep: bool = True):
    """``fn(*args)``, run where its arguments live.

    When any argument is a dask Delayed (a result :meth:`LazyComparisons._run`
    kept on the workers), a task: persisted there with ``keep`` (for more
    tasks to use), else left for :func:`fetch` to compute, so that only its
    result travels. With no Delayed argument, ``fn(*args)`` now. Only
    top-level arguments are looked at: a Delayed inside a tuple or dict
    would reach ``fn`` as it is, so pass each one as an argument of its own.
    """
    from dask.delayed import Delayed

    if not any(isinstance(a, Delayed) for a in args):
        return fn(*args)
    import dask

    out = dask.delayed(fn, pure=True)(*args)
    return dask.persist(out)[0] if keep else out


def fetch(value):
    """The value of a Delayed (computed, brought to the client); anything else as it is."""
    from dask.delayed import Delayed

    if isinstance(value, Delayed):
        import dask

        return dask.compute(value)[0]
    return value
