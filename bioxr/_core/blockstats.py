"""The subject bootstrap's sufficient statistics, blockwise over lazy cubes and comparison lists.

The bootstrap (:class:`bioxr.bootstrap._stats._Stats`) needs, for every
counted comparison, its score, its probe and reference subjects and whether
it is mated: the mated scores with their subjects, and the non-mated
comparisons counted per (threshold bin, probe subject, reference subject).
On a lazy (dask-backed) score cube or comparison list each pass here runs
on the blocks where they live and returns small partial results, combined
``SPLIT_EVERY`` at a time in a tree (the pattern of flox's map-reduce):

- the *first pass*: the mated scores with their subjects (and, for a cube,
  their flat positions, to put them in the in-memory order), the counts of
  non-mated comparisons, and for the default grid a strided sample of the
  finite non-mated scores and the distinct scores when few; for a list
  also its subjects (the sorted union of both sides) and the checks of
  :func:`bioxr.validate_comparison_list`;
- for the default grid, exact order statistics of the finite non-mated
  scores without loading them: a *count pass* counts them between edges
  read off the sample around each wanted rank, which tells exactly which
  interval holds it; a *gather pass* returns the scores in those intervals
  only (as distinct values with counts). The quantiles then follow
  ``np.quantile``'s linear interpolation bit for bit (:func:`linear_quantiles`);
- the *pair pass*: per block the (bin, pair) keys of its non-mated
  comparisons with their counts (``np.unique``), merged by summing equal
  keys; the last node turns the keys into the statistics' arrays. On dask
  they stay there (``dask.persist``): the client receives only the
  subjects' codes, and the replicates are computed beside them
  (:meth:`bioxr.bootstrap._stats._Stats.remote`). The mated scores and
  the sample stay where the first pass left them too; only counts and
  the grid's points travel.

A cube's subjects are coded from its coordinates (small) before the
passes: every subject on either side, sorted; the pair pass's last node
keeps the subjects that occur in a counted comparison (as in memory, where
a subject whose comparisons are all NaN is no unit), which keeps the keys'
order. Every array equals the in-memory one (:func:`bioxr._core.flat_comparisons`
and the counts of ``_Stats``), element for element.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import pandas as pd
import xarray as xr

from ..comparisons import COMPARISON, FAILURE_COORDS, canonical, has_subjects, validate_comparison_list
from ..cube import SYSTEM, pooled_dims, probe_dims, reduce_dims
from .blockwise import SPLIT_EVERY, Layout, defer, fetch, is_chunked
from .checks import check_policy
from .errors import ScoreCubeError

__all__ = ["defer", "fetch", "is_lazy", "LazyComparisons", "linear_quantiles", "nonmated_summary", "pairs_from_keys"]

#: The sample of non-mated scores that places the edges of the count pass: at least this many scores ...
SAMPLE_MIN = 4096
#: ... and about ``sqrt(SAMPLE_FACTOR * cells)``: the sample and the gathered intervals then weigh about the same.
SAMPLE_FACTOR = 800
#: Edges cover the sample ranks within this many standard deviations of each wanted rank's expected one.
MARGIN = 4.0


def is_lazy(data) -> bool:
    """True for a dask-backed score cube, or a comparison list with a chunked variable over ``comparison``."""
    if isinstance(data, xr.DataArray):
        return data.chunks is not None
    if isinstance(data, xr.Dataset) and "score" in data.variables:
        return any(is_chunked(data[v].data) for v in data.variables if data[v].dims == (COMPARISON,))
    return False


# ------------------------------------------------------------------ quantiles as np.quantile computes them
def linear_positions(n: int, q: np.ndarray):
    """Ranks below and above each quantile's virtual index, and the weight between them (NumPy's "linear")."""
    virtual = (n - 1) * np.asarray(q, dtype=np.float64)
    prev = np.floor(virtual)
    nxt = prev + 1
    above = virtual >= n - 1
    prev[above] = -1
    nxt[above] = -1
    below = virtual < 0
    prev[below] = 0
    nxt[below] = 0
    prev, nxt = prev.astype(np.intp), nxt.astype(np.intp)
    gamma = np.asarray(virtual - prev, dtype=virtual.dtype)
    return prev % n, nxt % n, gamma


def lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """NumPy's quantile interpolation: ``a + (b - a) t``, or ``b - (b - a)(1 - t)`` where ``t >= 0.5``."""
    diff = b - a
    out = np.add(a, diff * t)
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def linear_quantiles(order_statistic, n: int, q) -> np.ndarray:
    """``np.quantile(x, q)`` of ``n`` values known through ``order_statistic(ranks)`` (sorted ranks, 0-based).

    Bit for bit the ``method="linear"`` result, from the two order
    statistics around each virtual index.

    Examples
    --------
    >>> x = np.array([3.0, 1.0, 4.0, 1.5, 9.0])
    >>> q = np.array([0.0, 0.3, 0.5, 1.0])
    >>> bool((linear_quantiles(lambda r: np.sort(x)[r], x.size, q) == np.quantile(x, q)).all())
    True
    """
    prev, nxt, gamma = linear_positions(n, q)
    ranks = np.unique(np.concatenate([prev, nxt]))
    values = np.asarray(order_statistic(ranks), dtype=np.float64)
    return lerp(values[np.searchsorted(ranks, prev)], values[np.searchsorted(ranks, nxt)], gamma)


# ------------------------------------------------------------------ keys to statistics
def pairs_from_keys(uniq: np.ndarray, counts: np.ndarray, n_units: int) -> dict:
    """The non-mated statistics from sorted unique keys ``bin * n**2 + probe * n + reference`` and their counts.

    ``uniq`` is modified in place (the keys become pairs).
    """
    u2 = np.int64(n_units) * n_units
    count_f32 = counts.astype(np.float32)
    bins = uniq // u2
    uniq -= bins * u2  # the pair
    pair_a = (uniq // n_units).astype(np.int32)
    pair_c = (uniq % n_units).astype(np.int32)
    bin_starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    return dict(count_f32=count_f32, pair_a=pair_a, pair_c=pair_c, bin_starts=bin_starts, bin_ids=bins[bin_starts])


def _merge_counts(*parts):
    """Partials ``(keys, counts)`` (each sorted and unique): equal keys' counts summed, sorted."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    keys = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts]).astype(np.int64, copy=False)
    if len(parts) == 1:
        return keys, counts
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else np.empty(0, dtype=np.intp)
    return keys[starts], np.add.reduceat(counts, starts) if keys.size else counts


def _merge_pairs(*parts, space: int):
    """:func:`_merge_counts` of (bin, pair) keys in ``[0, space)``: summed in a dense array when that is small.

    The keys of every partial are unique, so ``dense[keys] += counts`` adds
    each once, and the nonzero entries come out sorted: no sort, and memory
    about ``8 space`` bytes instead of several copies of the partials.
    """
    parts = [p for p in parts if p is not None]
    total = sum(p[0].size for p in parts)
    if len(parts) < 2 or space > max(8 * total, 1 << 20):
        return _merge_counts(*parts)
    dense = np.zeros(space, dtype=np.int64)
    for keys, counts in parts:
        dense[keys] += counts
    keys = np.flatnonzero(dense)
    return keys.astype(np.int64, copy=False), dense[keys]


def _unique_counts(values):
    keys, counts = np.unique(values, return_counts=True)
    return keys, counts.astype(np.int64)


# ------------------------------------------------------------------ the cells of a block
def _cube_cells(block, rows, cols, sign, nist, units=True):
    """A cube block's counted cells in row-major order: similarity-oriented float64 scores, mated flags,
    and (with ``units``) probe and reference unit codes, rows and columns within the block."""
    pcode, punit, selfc, fa, _ = rows
    rcode, runit, fe = cols
    v = np.asarray(block).astype(np.float64)
    if sign < 0:
        np.negative(v, out=v)
    valid = ~np.isnan(v)
    excl = None
    if selfc is not None and (selfc >= 0).any():
        excl = np.zeros(v.shape, dtype=bool)
        has = np.flatnonzero(selfc >= 0)
        excl[has, selfc[has]] = True
    if nist:
        failed = np.zeros(v.shape, dtype=bool)
        if fa is not None:
            failed |= fa[:, None]
        if fe is not None:
            failed |= fe[None, :]
        v[failed] = -np.inf  # never accepted (a distance of +inf, negated)
        valid |= failed
    if excl is not None:
        valid &= ~excl
    h, w = v.shape
    mated = (pcode[:, None] == rcode[None, :]).reshape(-1)
    if valid.all():  # no NaN, no self comparison: every cell, no gather
        vals = v.reshape(-1)
        if not units:
            return vals, mated
        ri, ci = np.repeat(np.arange(h), w), np.tile(np.arange(w), h)
    else:
        flat = np.flatnonzero(valid)
        vals, mated = v.reshape(-1)[flat], mated[flat]
        if not units:
            return vals, mated
        ri, ci = np.divmod(flat, w)
    return vals, mated, punit[ri], runit[ci], ri, ci


def _list_cells(arrays, sign, nist, units=None):
    """A list block's counted comparisons in order: float64 similarity scores, mated flags, probe and
    reference subjects (labels, or codes among ``units``)."""
    score, subject, ref_subject, probe_id, ref_id, fe, fa = arrays
    v = np.asarray(score).astype(np.float64)
    keep = ~np.isnan(v)
    if nist:
        failed = np.zeros(v.size, dtype=bool)
        for flag in (fe, fa):
            if flag is not None:
                failed |= np.asarray(flag, dtype=bool)
        v[failed] = np.inf if sign < 0 else -np.inf
        keep |= failed
    if probe_id is not None:
        keep &= ~(np.asarray(probe_id) == np.asarray(ref_id))
    p, r = np.asarray(subject), np.asarray(ref_subject)
    if not keep.all():
        v, p, r = v[keep], p[keep], r[keep]
    if sign < 0:
        np.negative(v, out=v)
    mated = p == r
    if units is not None:
        p, r = units.get_indexer(p), units.get_indexer(r)
    return v, mated, p, r


def _few_distinct(values: np.ndarray, cap):
    """The distinct values, or None when there are more than ``cap`` (a strided look first: usually cheap)."""
    if cap is None:
        return None
    if values.size > 8 * cap:
        probe = np.unique(values[:: values.size // (8 * cap)])
        if probe.size > cap:
            return None
    u = np.unique(values)
    return u if u.size <= cap else None


def _first_stats(vals, mated, stride, cap):
    nm = vals[~mated]
    fin = nm[np.isfinite(nm)]
    out = dict(n_nonmated=int(nm.size), n_finite=int(fin.size), sample=None, distinct=None, cap=cap)
    if stride:
        out["sample"] = fin[::stride].copy()
        ok = vals[np.isfinite(vals)]
        out["distinct"] = _few_distinct(ok, cap)
    return out


# ------------------------------------------------------------------ block functions
def _cube_first(block, rows, cols, c0, n_ref, sign, nist, stride, cap):
    vals, mated, pu, _, ri, ci = _cube_cells(block, rows, cols, sign, nist)
    erow = rows[4]
    out = _first_stats(vals, mated, stride, cap)
    out.update(m_vals=vals[mated], m_unit=pu[mated].astype(np.int32),
               m_pos=erow[ri[mated]].astype(np.int64) * n_ref + c0 + ci[mated])
    return out


def _list_first(*args):
    *arrays, offset, sign, nist, stride, cap, system = args
    score = np.asarray(arrays[0])
    checks = _list_checks(score, arrays, offset)
    vals, mated, p, r = _list_cells(arrays, sign, nist)
    out = _first_stats(vals, mated, stride, cap)
    out.update(m_vals=vals[mated], m_unit=p[mated], p_units=pd.unique(p), r_units=pd.unique(r), checks=checks,
               system=None if system is None else pd.unique(np.asarray(system)))
    return out


def _list_checks(score, arrays, offset):
    """What :func:`bioxr.validate_comparison_list` checks in memory: infinities, NaN without a failure, mated."""
    subject, ref_subject, fe, fa = arrays[1], arrays[2], arrays[5], arrays[6]
    inf = np.isinf(score)
    nan = np.isnan(score)
    failed = np.zeros(score.size, dtype=bool)
    for flag in (fe, fa):
        if flag is not None:
            failed |= np.asarray(flag, dtype=bool)
    bad = nan & ~failed
    mated = np.asarray(subject) == np.asarray(ref_subject)
    first = lambda m: int(offset + np.argmax(m)) if m.any() else -1  # noqa: E731
    return dict(n_inf=int(inf.sum()), first_inf=first(inf), n_bad=int(bad.sum()), first_bad=first(bad),
                n_mated=int(mated.sum()), n=int(score.size))


def _first_combine(*parts):
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    out = dict(n_nonmated=sum(p["n_nonmated"] for p in parts), n_finite=sum(p["n_finite"] for p in parts))
    out["sample"] = None if parts[0]["sample"] is None else np.concatenate([p["sample"] for p in parts])
    distinct = [p["distinct"] for p in parts]
    if parts[0]["sample"] is None or any(d is None for d in distinct):
        out["distinct"] = None
    else:
        u = np.unique(np.concatenate(distinct))
        out["distinct"] = u if u.size <= parts[0].get("cap", u.size) else None
    for key in ("m_vals", "m_unit", "m_pos", "p_units", "r_units", "system"):
        if key in parts[0]:
            got = [p[key] for p in parts if p[key] is not None]
            out[key] = np.concatenate(got) if got else None
            if key in ("p_units", "r_units", "system") and out[key] is not None:
                out[key] = pd.unique(out[key])
    if "checks" in parts[0]:
        checks = [p["checks"] for p in parts]
        out["checks"] = {k: sum(c[k] for c in checks) for k in ("n_inf", "n_bad", "n_mated", "n")}
        for k in ("first_inf", "first_bad"):
            hits = [c[k] for c in checks if c[k] >= 0]
            out["checks"][k] = min(hits) if hits else -1
    out["cap"] = parts[0].get("cap")
    return out


def _first_finish(root):
    """Mated cells in the in-memory order (a cube's by flat position), the positions dropped."""
    if root is not None and root.get("m_pos") is not None:
        order = np.argsort(root.pop("m_pos"), kind="stable")
        root["m_vals"], root["m_unit"] = root["m_vals"][order], root["m_unit"][order]
    return root


def _counts_at(vals, mated, edges, dtype):
    nm = vals[~mated]
    nm = nm[np.isfinite(nm)]
    return np.bincount(np.searchsorted(edges, nm, side="right"), minlength=edges.size + 1).astype(dtype)


def _inside(vals, mated, bounds):
    nm = vals[~mated]
    nm = nm[np.isfinite(nm)]
    j = np.searchsorted(bounds, nm, side="right")
    return _unique_counts(nm[(j & 1) == 1])


def _cube_counts(block, rows, cols, sign, nist, edges, dtype):
    return _counts_at(*_cube_cells(block, rows, cols, sign, nist, units=False), edges, dtype)


def _cube_inside(block, rows, cols, sign, nist, bounds):
    return _inside(*_cube_cells(block, rows, cols, sign, nist, units=False), bounds)


def _list_counts(*args):
    *arrays, sign, nist, edges, dtype = args
    vals, mated, _, _ = _list_cells(arrays, sign, nist)
    return _counts_at(vals, mated, edges, dtype)


def _list_inside(*args):
    *arrays, sign, nist, bounds = args
    vals, mated, _, _ = _list_cells(arrays, sign, nist)
    return _inside(vals, mated, bounds)


def _sum(*parts):
    parts = [p for p in parts if p is not None]
    return sum(parts[1:], parts[0]) if parts else None


def _keys(vals, mated, pu, ru, grid, n_units):
    nm = ~mated
    key = np.searchsorted(grid, vals[nm], side="right").astype(np.int64)
    key *= np.int64(n_units) * n_units
    key += np.asarray(pu)[nm].astype(np.int64) * n_units
    key += np.asarray(ru)[nm]
    return _unique_counts(key)


def _cube_pairs(block, rows, cols, sign, nist, grid, n_units):
    vals, mated, pu, ru, _, _ = _cube_cells(block, rows, cols, sign, nist)
    return _keys(vals, mated, pu, ru, grid, n_units)


def _list_pairs(*args):
    *arrays, sign, nist, grid, units = args
    vals, mated, pu, ru = _list_cells(arrays, sign, nist, units)
    return _keys(vals, mated, pu, ru, grid, len(units))


def _pairs_finish(root, n_units, mated_units, recode):
    """The statistics' arrays from the merged keys; with ``recode``, only the subjects that occur kept."""
    uniq, counts = root if root is not None else (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
    lut = None
    if recode:
        u2 = np.int64(n_units) * n_units
        rest = uniq % u2
        seen = np.zeros(n_units, dtype=bool)
        seen[mated_units] = True
        seen[rest // n_units] = True
        seen[rest % n_units] = True
        lut = np.cumsum(seen, dtype=np.int64) - 1
        n_new = int(seen.sum())
        a, c = lut[rest // n_units], lut[rest % n_units]
        uniq = uniq // u2 * (np.int64(n_new) * n_new) + a * n_new + c  # a monotone recoding: still sorted
        lut = np.where(seen, lut, -1).astype(np.int32)
        n_units = n_new
    out = pairs_from_keys(uniq, counts, n_units)
    out["lut"] = lut
    return out


# ------------------------------------------------------------------ the sources
class LazyComparisons:
    """The counted comparisons of a lazy cube or list, known through blockwise passes.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        A dask-backed score cube, or a comparison list whose variables are
        chunked along ``comparison``.
    failure_policy : {"exclude", "nist"}
        As :func:`bioxr._core.flat_comparisons` (``"iso"`` counts as
        ``"exclude"`` there).
    """

    def __init__(self, data, failure_policy: str = "exclude"):
        from .groups import _refuse_systems, as_data

        self.policy = check_policy(failure_policy)
        as_data(data)
        self.nist = self.policy == "nist"
        if isinstance(data, xr.Dataset):
            self.form = "list"
            self._init_list(data)
        else:
            self.form = "cube"
            _refuse_systems(data)
            self._init_cube(data)
        self.sign = -1.0 if self.kind == "distance" else 1.0

    # -- a cube ---------------------------------------------------------------
    def _init_cube(self, cube):
        from .groups import Grouped

        groups = Grouped(cube, None, failure_policy=self.policy)  # labels and flags only: nothing computed
        self.kind = groups.kind
        self.values = groups.data[0]
        n_ref = self.n_ref = groups.n_ref
        n_rows = groups.probe_codes.shape[1]
        row_labels = groups.probe_labels(0, "subject")(np.arange(n_rows, dtype=np.int64) * n_ref)
        ref_labels = np.asarray(groups._cube["reference_subject"].values)
        prov = pd.Index(pd.unique(np.concatenate([pd.unique(row_labels), pd.unique(ref_labels)]))).sort_values()
        self._labels = (row_labels, ref_labels)
        self.n_codes = len(prov)
        punit = prov.get_indexer(row_labels).astype(np.int32)
        runit = prov.get_indexer(ref_labels).astype(np.int32)
        self._punit, self._runit = punit, runit
        # flat_comparisons orders the probe dims as an in-memory Grouped does; a lazy one may order them otherwise
        kept = len(groups.kept)
        lazy_dims = groups._order[kept:-1]
        eager = reduce_dims(cube, None, default=pooled_dims(probe_dims(cube)))
        eager_dims = tuple(eager)
        shape = [cube.sizes[d] for d in eager_dims]
        erow = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        erow = erow.transpose([eager_dims.index(d) for d in lazy_dims]).reshape(-1)
        self_cols = None if groups.self_cols is None else groups.self_cols[0]
        fa = None if groups._fa is None else groups._fa[0]
        fe = groups._fe if self.nist else None
        fa = fa if self.nist else None
        self.layout = Layout(self.values.chunks)
        self._block_args = []
        for b in range(self.layout.n_blocks):
            r0, r1, c0, c1 = self.layout.bounds(b)
            selfc = None
            if self_cols is not None:
                s = self_cols[r0:r1] - c0
                selfc = np.where((self_cols[r0:r1] >= 0) & (s >= 0) & (s < c1 - c0), s, -1)
            rows = (groups.probe_codes[0][r0:r1], punit[r0:r1], selfc, None if fa is None else fa[r0:r1], erow[r0:r1])
            cols = (groups.ref_codes[c0:c1], runit[c0:c1], None if fe is None else fe[c0:c1])
            self._block_args.append((rows, cols, c0))
        self.n_cells = int(self.values.size)

    # -- a list ---------------------------------------------------------------
    def _init_list(self, ds):
        from .groups import raise_no_subjects

        ds = canonical(validate_comparison_list(ds))  # lazy: only the layout is checked here
        if not has_subjects(ds):
            raise_no_subjects("the subject bootstrap")
        score = ds["score"]
        if not np.issubdtype(score.dtype, np.floating):
            where = f" (from {ds.attrs['source']})" if "source" in ds.attrs else ""
            raise ScoreCubeError(f"scores{where} must be floating point; got {score.dtype}.")
        self._where = f" (from {ds.attrs['source']})" if "source" in ds.attrs else ""
        self.kind = ds.attrs.get("score_kind", "similarity")
        names = ["score", "subject", "reference_subject"]
        ids = "probe_id" in ds.variables and "reference_id" in ds.variables
        names += ["probe_id", "reference_id"] if ids else [None, None]
        names += [f if f in ds.coords else None for f in FAILURE_COORDS]  # every label is a coordinate (canonical)
        system = SYSTEM if (SYSTEM in ds.coords and ds[SYSTEM].ndim == 1 and SYSTEM not in ds.dims) else None
        if system is None or not is_chunked(ds[SYSTEM].data):
            from .groups import _refuse_systems

            _refuse_systems(ds)  # a dimension, or labels in memory: nothing to compute
            system = None
        ref = next(ds[v].data for v in ds.variables if ds[v].dims == (COMPARISON,) and is_chunked(ds[v].data))
        self.chunks = tuple(int(c) for c in ref.chunks[0])
        self.offsets = np.concatenate([[0], np.cumsum(self.chunks)])[:-1]
        self.n_cells = int(sum(self.chunks))
        self._blocks = [self._split(ds, n) for n in names]
        self._system = self._split(ds, system)
        self._units = None

    def _split(self, ds, name):
        """One array per partition of ``ds[name]`` (delayed for a chunked one), or None."""
        if name is None:
            return None
        data = ds[name].data
        if is_chunked(data) and hasattr(data, "to_delayed"):
            if tuple(data.chunks[0]) != self.chunks:
                data = data.rechunk((self.chunks,))
            return list(data.to_delayed(optimize_graph=True).ravel())
        data = np.asarray(data)
        return [data[o : o + c] for o, c in zip(self.offsets, self.chunks)]

    def _list_arrays(self, b):
        return [None if blocks is None else blocks[b] for blocks in self._blocks]

    # -- running passes ---------------------------------------------------------
    #: Read a cube's blocks one at a time through its chunk manager even on dask (as for another engine).
    by_blocks = False

    def _run(self, chunk, args, combine, finish=None, finish_args=(), keep=False):
        """``finish(combine(...chunk(block b, *args(b))...))``: in a tree on dask, block by block otherwise.

        A list whose chunks are not dask's is read through ``numpy.asarray``
        (loaded, one variable at a time). With ``keep``, a dask result is
        persisted where it was computed (on the workers of a cluster) and
        returned as a Delayed, for later tasks (:func:`defer`) to use
        there; other engines return it computed. ``args(b)`` and
        ``finish_args`` may hold Delayed objects.
        """
        if self.form == "cube" and (self.by_blocks or not hasattr(self.values, "to_delayed")):
            return self._run_local(chunk, args, combine, finish, finish_args)
        import dask

        node = dask.delayed(chunk, pure=True)
        shared = {}

        def once(a):  # an argument shared by every block goes into the graph once
            if isinstance(a, (np.ndarray, pd.Index)) and getattr(a, "nbytes", 0) > 4096:
                if id(a) not in shared:
                    shared[id(a)] = (a, dask.delayed(a, pure=True))
                return shared[id(a)][1]
            return a

        if self.form == "cube":
            grid = self.values.to_delayed(optimize_graph=True).ravel()
            parts = [node(grid[b], *self._block_args[b][:2], *map(once, args(b))) for b in range(self.layout.n_blocks)]
        else:
            parts = [node(*self._list_arrays(b), *map(once, args(b))) for b in range(len(self.chunks))]
        merge = dask.delayed(combine, pure=True)
        while len(parts) > 1:
            parts = [merge(*parts[i : i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)]
        root = parts[0] if parts else dask.delayed(combine, pure=True)()
        if finish is not None:
            root = dask.delayed(finish, pure=True)(root, *finish_args)
        (out,) = dask.persist(root) if keep else dask.compute(root)
        return out

    def _run_local(self, chunk, args, combine, finish, finish_args):
        """Another engine: one block at a time through its chunk manager (nothing is loaded whole)."""
        from .blockwise import _manager

        manager = _manager(self.values)
        parts = []
        for b in range(self.layout.n_blocks):
            r0, r1, c0, c1 = self.layout.bounds(b)
            (block,) = manager.compute(self.values[r0:r1, c0:c1])
            parts.append(chunk(np.asarray(block), *self._block_args[b][:2], *args(b)))
        root = combine(*parts)
        return root if finish is None else finish(root, *finish_args)

    # -- the passes -------------------------------------------------------------
    def sample_stride(self) -> int:
        size = int(min(self.n_cells, max(SAMPLE_MIN, np.sqrt(SAMPLE_FACTOR * self.n_cells))))
        return max(1, self.n_cells // max(size, 1))

    def first_pass(self, grid: bool, cap: int):
        """Mated scores and subjects, non-mated counts, and (``grid``) the sample and the few distinct scores.

        Returns ``(small, kept)``. ``small``, on the client, is a dict:
        ``n_mated``, ``n_nonmated`` (with failures), ``n_finite`` (finite
        non-mated scores), ``distinct`` (or None) and ``stride``. ``kept``
        holds ``m_scores`` (float64, similarity orientation, the in-memory
        order), ``m_unit`` (codes: a cube's provisional ones, a list's
        among :attr:`units`) and ``sample`` (or None): on dask a Delayed
        persisted where it was computed, for :func:`defer` to use there
        (the mated scores and the sample never reach the client).
        """
        stride = self.sample_stride() if grid else 0
        s, nist = self.sign, self.nist
        if self.form == "cube":
            root = self._run(_cube_first, lambda b: (self._block_args[b][2], self.n_ref, s, nist, stride, cap),
                             _first_combine, _first_finish, keep=True)
        else:
            root = self._run(_list_first, lambda b: (int(self.offsets[b]), s, nist, stride, cap,
                                                    None if self._system is None else self._system[b]),
                             _first_combine, keep=True)
        small = fetch(defer(_first_small, root, keep=False))
        small["stride"] = stride
        units = None
        if self.form == "list":
            self._list_checks(small)
            units = pd.Index(pd.unique(np.concatenate([small.pop("p_units"), small.pop("r_units")]))).sort_values()
            self._units = units
        return small, defer(_first_kept, root, units)

    def _list_checks(self, out):
        from .groups import _refuse_systems

        c, where = out["checks"], self._where
        if c["n_inf"]:
            raise ScoreCubeError(f"{c['n_inf']} score(s){where} are infinite, first at comparison {c['first_inf']}. "
                                 "Scores must be finite numbers.")
        if c["n_bad"]:
            raise ScoreCubeError(
                f"{c['n_bad']} comparison(s){where} have no score (NaN), first at comparison {c['first_bad']}, and "
                "no failure flag. A comparison list holds comparisons that were made: drop the ones that were not "
                "(and count them), or flag failures with failed_enrolment= / failed_acquisition=.")
        if c["n_mated"] == 0:
            raise ScoreCubeError(f"the comparison list{where} holds no mated comparison (no subject equals its "
                                 "reference_subject); check that both sides use the same ids.")
        if c["n_mated"] == c["n"]:
            raise ScoreCubeError(f"the comparison list{where} holds no non-mated comparison; FMR needs comparisons "
                                 "of different subjects.")
        if out.get("system") is not None and len(out["system"]) > 1:
            systems = out["system"]
            _refuse_systems(xr.Dataset({"score": (COMPARISON, np.zeros(len(systems)))},
                                       coords={SYSTEM: (COMPARISON, systems)}))

    def _pass(self, cube_fn, list_fn, extra, combine, finish=None, finish_args=(), keep=False):
        s, nist = self.sign, self.nist
        fn = cube_fn if self.form == "cube" else list_fn
        return self._run(fn, lambda b: (s, nist, *extra), combine, finish, finish_args, keep)

    def order_statistics(self, ranks: np.ndarray, sample, n: int) -> np.ndarray:
        """The finite non-mated scores of the given (sorted, 0-based) ranks, exactly, in two passes.

        A count pass counts the scores between edges taken from the sorted
        ``sample`` around each rank's expected place (``MARGIN`` standard
        deviations of a sample rank, and two sample points, either side):
        the interval holding each rank is then known exactly. A gather pass
        returns the distinct scores (with counts) of those intervals only.
        Whatever the sample, the answer is exact; a poor sample only makes
        the gathered intervals larger. ``sample`` may be a Delayed (kept
        on the workers): the edges, counts and gathered scores then stay
        there too, and only the order statistics reach the client.
        """
        ranks = np.asarray(ranks, dtype=np.int64)
        edges = defer(_edges_around, sample, ranks, n)
        # counts summed over the whole data never exceed its cells: 4 bytes an edge where that fits
        dtype = np.uint32 if self.n_cells < 2**32 else np.int64
        counts = self._pass(_cube_counts, _list_counts, (edges, dtype), _sum, keep=True)
        plan = defer(_gather_plan, counts, edges, ranks, n)
        bounds = defer(operator.itemgetter("bounds"), plan, keep=False)
        found = self._pass(_cube_inside, _list_inside, (bounds,), _merge_counts, keep=True)
        return fetch(defer(_picked, found, plan, ranks, keep=False))

    def _key_units(self) -> int:
        return self.n_codes if self.form == "cube" else len(self._units)

    def pair_counts(self, grid: np.ndarray, kept):
        """The non-mated statistics at ``grid`` (similarity orientation, ascending), and the final subjects.

        ``kept`` is the second value of :meth:`first_pass`. Returns
        ``(pairs, lut, units)``: the arrays of :func:`pairs_from_keys` in a
        dict (on dask a Delayed, kept where it was computed), a cube's
        provisional code to final code (or None), and ``units``, the
        sorted subjects that occur, as in memory.
        """
        space = (grid.size + 1) * self._key_units() ** 2
        merge = functools.partial(_merge_pairs, space=int(space))
        if self.form == "cube":
            n = self.n_codes
            mated = defer(_mated_units, kept, keep=False)
            pairs = self._pass(_cube_pairs, None, (grid, n), merge, _pairs_finish, (n, mated, True), keep=True)
            lut = fetch(defer(operator.itemgetter("lut"), pairs, keep=False))
            seen = np.flatnonzero(lut >= 0)
            rows, refs = self._labels
            p = rows[np.isin(self._punit, seen)]
            r = refs[np.isin(self._runit, seen)]
            units = np.asarray(pd.Index(pd.unique(np.concatenate([pd.unique(p), pd.unique(r)]))).sort_values())
            return pairs, lut, units
        units = self._units
        pairs = self._pass(None, _list_pairs, (grid, units), merge, _pairs_finish, (len(units), None, False),
                           keep=True)
        return pairs, None, np.asarray(units)


def nonmated_summary(data, failure_policy: str = "exclude", top=()) -> dict:
    """Subjects in the non-mated comparisons of a lazy cube or list, and its highest finite non-mated scores.

    Returns a dict: ``units`` (subjects on either side), ``probe_units``,
    ``reference_units``, ``kind``, ``n_finite`` and ``top``: for each ``k``
    in ``top`` with at least ``k`` finite non-mated scores, the ``k``-th
    highest (similarity orientation), exactly. What the in-memory
    :func:`bioxr._core.flat_comparisons` gives, in blockwise passes.
    """
    source = LazyComparisons(data, failure_policy)
    small, kept = source.first_pass(grid=True, cap=None)
    pairs, _, _ = source.pair_counts(np.array([np.inf]), kept)
    n = small["n_finite"]
    ks = sorted({int(k) for k in top if n >= k})
    ranks = np.array([n - k for k in ks], dtype=np.int64)
    if not ks:
        values = np.empty(0)
    elif small["stride"] == 1:  # the sample holds every finite non-mated score
        values = fetch(defer(_sample_at, kept, ranks, keep=False))
    else:
        order = np.argsort(ranks)
        values = np.empty(ranks.size)
        values[order] = source.order_statistics(ranks[order], defer(_sample, kept, keep=False), n)
    return dict(**fetch(defer(_pair_units, pairs, keep=False)), kind=source.kind, n_finite=n,
                top=dict(zip(ks, values.tolist())))


# ------------------------------------------------------------------ tasks where the data are
def _first_small(root) -> dict:
    out = {k: v for k, v in root.items() if k not in ("m_vals", "m_unit", "m_pos", "sample")}
    out["n_mated"] = int(root["m_vals"].size)
    return out


def _first_kept(root, units) -> dict:
    m_unit = root["m_unit"] if units is None else units.get_indexer(root["m_unit"]).astype(np.int32)
    return dict(m_scores=root["m_vals"], m_unit=m_unit, sample=root["sample"])


def _sample(kept):
    return kept["sample"]


def _sample_at(kept, ranks):
    return np.sort(kept["sample"])[ranks]


def _mated_units(kept):
    return np.unique(kept["m_unit"])


def _pair_units(pairs) -> dict:
    a, c = pairs["pair_a"], pairs["pair_c"]
    return dict(units=int(np.unique(np.concatenate([a, c])).size), probe_units=int(np.unique(a).size),
                reference_units=int(np.unique(c).size))


def _edges_around(sample, ranks, n):
    """Sample points within ``MARGIN`` standard deviations (and two points) of each rank's expected place."""
    s = np.sort(sample)
    m = s.size
    if m == 0:
        return np.empty(0)
    p = ranks / n
    pos = p * m
    sd = np.sqrt(m * p * (1 - p))
    lo = np.clip(np.floor(pos - MARGIN * sd - 2), 0, m - 1).astype(np.int64)
    hi = np.clip(np.ceil(pos + MARGIN * sd + 2), 0, m - 1).astype(np.int64)
    mark = np.zeros(m + 1, dtype=np.int64)
    np.add.at(mark, lo, 1)
    np.add.at(mark, hi + 1, -1)
    return np.unique(s[np.cumsum(mark[:-1]) > 0])


def _gather_plan(counts, edges, ranks, n) -> dict:
    """From the counts between edges: the interval holding each rank, and the bounds of those to gather."""
    cum = np.cumsum(counts, dtype=np.int64)
    if cum[-1] != n:
        raise RuntimeError(f"the count pass saw {cum[-1]} finite non-mated scores, the first pass {n}.")
    which = np.searchsorted(cum, ranks, side="right")  # the interval [edges[i-1], edges[i]) holding each rank
    base = np.where(which > 0, cum[which - 1], 0)
    chosen = np.unique(which)
    ext = np.concatenate([[-np.inf], edges, [np.inf]])  # interval i is [ext[i], ext[i + 1])
    run_start = np.r_[True, np.diff(chosen) > 1]
    run_end = np.r_[np.diff(chosen) > 1, True]
    bounds = np.empty(2 * int(run_start.sum()))
    bounds[0::2] = ext[chosen[run_start]]
    bounds[1::2] = ext[chosen[run_end] + 1]
    return dict(bounds=bounds, which=which, base=base, ext=ext)


def _picked(found, plan, ranks):
    """The order statistics from the gathered intervals' distinct scores and counts."""
    values, vcounts = found or (np.empty(0), np.empty(0))
    cc = np.cumsum(vcounts)
    start = np.searchsorted(values, plan["ext"][plan["which"]], side="left")
    offset = np.where(start > 0, cc[np.maximum(start - 1, 0)], 0)
    idx = np.searchsorted(cc, offset + (ranks - plan["base"]), side="right")
    return values[idx]
