"""Comparison lists backed by dask: grouped, indexed and checked partition by partition.

A lazy comparison list (its ``score`` a chunked array over ``comparison``;
labels, ids, cofactors and failure flags chunked alike, or small in-memory
arrays) is never loaded whole by the verification passes. What
:class:`bioxr._core.Grouped` needs from it is computed where the
partitions live, each partition returning only small results:

- the *levels pass* (only with kept dims): the distinct values of each
  kept cofactor, in order of first appearance, and the distinct pairs
  (kept value, other coordinate) that decide which coordinates are
  constant within groups;
- the *index pass*: per partition the mated and self comparisons (from the
  labels: ``subject == reference_subject``, ``probe_id == reference_id``)
  as positions within each group's rows of the partition (kept where the
  partition lives: persisted on the workers), and, to the client, the
  group sizes, the mated, self and failure counts, and the checks of the
  in-memory :func:`bioxr.validate_comparison_list` (infinite scores, NaN
  without a failure flag, no mated comparison), with the same messages
  and the same "first at comparison i";
- the *units pass* (only with failure flags): one row per reference and
  per probe with its subject and whether it failed, aggregated per
  partition.

Group ``g`` of the list is then a chunked 2-D array of shape ``(n_g, 1)``
(the partitions' comparisons of that group, in list order, exactly the
in-memory group's scores) with a :class:`PartitionIndex`: the mated and
self positions of each of its blocks, handed to that block's task. Every
pass of :mod:`bioxr.counting` over it runs blockwise
(:mod:`bioxr._core.blockwise`), as over a lazy cube.

What travels to the client: the levels and per-partition counts; never
the scores, the labels or the positions. The passes over a group then
send what :mod:`bioxr.counting` asks for (the mated and self scores, a
sample, window contents and counts).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .errors import ScoreCubeError

__all__ = ["is_lazy_list", "LazyList", "PartitionIndex"]

COMPARISON = "comparison"
_FLAGS = ("failed_enrolment", "failed_acquisition")


def is_lazy_list(ds) -> bool:
    """True for a comparison list whose ``score`` is a chunked (dask) array."""
    from .blockwise import is_chunked

    return isinstance(ds, xr.Dataset) and "score" in ds.variables and is_chunked(ds["score"].data)


def _blocks(ds: xr.Dataset, name: str, chunks) -> list:
    """The delayed partitions of ``ds[name]`` aligned with the score's ``chunks`` (in-memory arrays are split)."""
    import dask.array as da

    data = ds[name].data
    if not hasattr(data, "to_delayed"):
        data = da.from_array(np.asarray(data), chunks=(chunks,))
    elif data.chunks[0] != chunks:
        data = data.rechunk((chunks,))
    return list(data.to_delayed(optimize_graph=True).ravel())


def _codes(values, levels) -> np.ndarray:
    """Codes of ``values`` among ``levels`` (-1 where absent), as :func:`pandas.factorize` over the whole list."""
    return pd.Index(levels).get_indexer(np.asarray(values))


def _group_codes(kept_values, levels, shape) -> np.ndarray:
    codes = [_codes(v, u) for v, u in zip(kept_values, levels)]
    return np.ravel_multi_index(codes, shape)


# ------------------------------------------------------------------ the levels pass
def _levels_part(kept_values, others):
    uniques = [pd.unique(np.asarray(v)) for v in kept_values]
    pairs = {key: pd.DataFrame({"k": np.asarray(k), "v": np.asarray(v)}).drop_duplicates()
             for key, (k, v) in others.items()}
    return uniques, pairs


# ------------------------------------------------------------------ the index pass
def _within(codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Each row's position among the rows of its group in this partition."""
    if n_groups == 1:
        return np.arange(codes.size, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(codes.size, dtype=np.int64)
    rank[order] = np.arange(codes.size) - starts[codes[order]]
    return rank


def _index_part(score, subject, reference_subject, mated, probe_id, reference_id, fe, fa, kept_values, levels,
                shape):
    score = np.asarray(score)
    n = score.size
    n_groups = int(np.prod(shape)) if shape else 1
    if subject is not None:
        m = np.asarray(np.asarray(subject) == np.asarray(reference_subject), dtype=bool)
    else:
        m = np.asarray(mated, dtype=bool)
    selfc = None if probe_id is None else np.asarray(np.asarray(probe_id) == np.asarray(reference_id), dtype=bool)
    failed = None
    for f in (fe, fa):
        if f is not None:
            f = np.asarray(f, dtype=bool)
            failed = f if failed is None else failed | f
    out = dict(n=n, n_mated_any=int(np.count_nonzero(m)), n_inf=0, first_inf=-1, n_bad_nan=0, first_bad_nan=-1)
    if n and np.issubdtype(score.dtype, np.floating) and not np.isfinite(np.add.reduce(score)):
        inf = np.isinf(score)
        if inf.any():
            out.update(n_inf=int(inf.sum()), first_inf=int(np.argmax(inf)))
        bad = np.isnan(score) if failed is None else np.isnan(score) & ~failed
        if bad.any():
            out.update(n_bad_nan=int(bad.sum()), first_bad_nan=int(np.argmax(bad)))
    gc = _group_codes(kept_values, levels, shape) if shape else np.zeros(n, dtype=np.int64)
    counted_mated = m if selfc is None else m & ~selfc
    out["counts"] = np.bincount(gc, minlength=n_groups).astype(np.int64)
    out["n_mated"] = np.bincount(gc[counted_mated], minlength=n_groups).astype(np.int64)
    out["n_excluded"] = (np.bincount(gc[selfc], minlength=n_groups).astype(np.int64) if selfc is not None
                         else np.zeros(n_groups, dtype=np.int64))
    out["has_failed"] = bool(failed is not None and failed.any())
    if out["has_failed"]:
        ok = failed if selfc is None else failed & ~selfc
        out["failed_mated"] = np.bincount(gc[ok & m], minlength=n_groups).astype(np.int64)
        out["failed_all"] = np.bincount(gc[ok], minlength=n_groups).astype(np.int64)
    marks = _marks(gc, n_groups, counted_mated, selfc)
    return out, marks


def _marks(gc: np.ndarray, n_groups: int, mated: np.ndarray, selfc) -> list:
    """Per group, the positions of its mated and of its self comparisons among its rows of this partition.

    Ascending (list order), int32 where the partition's rows fit: they stay
    where the partition lives, for the passes over the group's blocks.
    """
    dtype = np.int32 if gc.size < 2**31 else np.int64
    if n_groups == 1:
        x = np.flatnonzero(selfc).astype(dtype) if selfc is not None else np.empty(0, dtype)
        return [(np.flatnonzero(mated).astype(dtype), x)]
    rank = _within(gc, n_groups)
    out = []
    for mask in (mated, selfc):
        if mask is None:
            out.append([np.empty(0, dtype)] * n_groups)
            continue
        g, r = gc[mask], rank[mask].astype(dtype)
        order = np.argsort(g, kind="stable")  # rows in list order within each group: ascending positions
        cuts = np.searchsorted(g[order], np.arange(n_groups + 1))
        r = r[order]
        out.append([r[cuts[k] : cuts[k + 1]] for k in range(n_groups)])
    return list(zip(*out))


def _group_marks(marks: list, g: int):
    """``(mated, excluded, both)`` local positions of group ``g`` in one partition (``both`` sorted)."""
    m, x = marks[g]
    return m, x, (np.sort(np.concatenate([m, x])) if x.size else m)


def _select_part(score, kept_values, levels, shape, g):
    score = np.asarray(score)
    return score[_group_codes(kept_values, levels, shape) == g]


# ------------------------------------------------------------------ the units pass
def _units_part(columns: dict, key, who, flag):
    frame = pd.DataFrame({k: np.asarray(columns[k]) for k in key})
    frame["_who"] = np.asarray(columns[who]) if who is not None else None
    frame["_failed"] = np.asarray(columns[flag], dtype=bool) if flag is not None else False
    return frame.groupby(list(key), sort=False).agg(_who=("_who", "first"), _failed=("_failed", "any"))


class PartitionIndex:
    """The mated and self comparisons of a group of a lazy list, as positions within each of its blocks.

    ``mated``, ``excluded`` and ``skip`` (both, sorted) are
    :class:`bioxr._core.blockwise.PerBlock`: one (delayed) array of local
    positions per block of the group's scores, computed and kept where the
    partition lives; the blockwise passes hand each block its own. Only
    their sizes are known here.
    """

    def __init__(self, mated, excluded, skip, n_mated: int, n_excluded: int):
        from .blockwise import PerBlock

        self.mated = PerBlock(mated, n_mated)
        self.excluded = PerBlock(excluded, n_excluded)
        self.skip = PerBlock(skip, n_mated + n_excluded)

    @classmethod
    def empty(cls) -> "PartitionIndex":
        """No comparison: plain empty arrays, as an in-memory group's index."""
        index = cls([], [], [], 0, 0)
        index.mated = index.excluded = np.empty(0, dtype=np.int64)
        index.skip = None
        return index

    def positions(self, chunks) -> tuple[np.ndarray, np.ndarray]:
        """The flat positions in the group, brought to the client (for checks; ``chunks``: the blocks' rows)."""
        import dask

        offsets = np.concatenate([[0], np.cumsum(chunks)[:-1]]).astype(np.int64)
        out = []
        for side in (self.mated, self.excluded):
            parts = dask.compute(*side.parts)
            out.append(np.concatenate([np.asarray(p, np.int64) + o for p, o in zip(parts, offsets)])
                       if parts else np.empty(0, np.int64))
        return out[0], out[1]


class LazyList:
    """The groups of a lazy comparison list over the kept cofactors, and their index (see the module).

    Parameters
    ----------
    ds : xarray.Dataset
        A canonical comparison list whose ``score`` is a dask array.
    kept : tuple of str
        The cofactors kept as dims.
    where : str
        `` (from <source>)`` or empty, for the messages.
    """

    def __init__(self, ds: xr.Dataset, kept: tuple, where: str = ""):
        import dask

        self.ds, self.kept = ds, tuple(kept)
        score = ds["score"].data
        if not np.issubdtype(score.dtype, np.floating):
            raise ScoreCubeError(f"scores{where} must be floating point; got {score.dtype}.")
        self.chunks = tuple(int(c) for c in score.chunks[0])
        self.offsets = np.concatenate([[0], np.cumsum(self.chunks)]).astype(np.int64)
        self._blocks = {}
        self.units = None  # the unit tables, once computed (Grouped.unit_failure_table)
        self.score_blocks = self.blocks("score")
        self.levels, self.dependent = (), {}
        if self.kept:
            self._levels_pass(dask)
        self.shape = tuple(len(u) for u in self.levels)
        self.n_groups = int(np.prod(self.shape)) if self.kept else 1
        self._index_pass(dask, where)

    def blocks(self, name):
        """The delayed partitions of one variable of the list."""
        if name not in self._blocks:
            self._blocks[name] = _blocks(self.ds, name, self.chunks)
        return self._blocks[name]

    def _optional(self, name):
        return self.blocks(name) if name in self.ds.variables else [None] * len(self.chunks)

    def _kept_blocks(self):
        per = [self.blocks(k) for k in self.kept]
        return [tuple(b[i] for b in per) for i in range(len(self.chunks))]

    # -- passes ---------------------------------------------------------------
    def _levels_pass(self, dask):
        from ..comparisons import RESERVED
        from ..cube import REFERENCE

        ds = self.ds
        skip = set(self.kept) | set(RESERVED) | {REFERENCE}
        others = [name for name, coord in ds.coords.items()
                  if name not in skip and coord.dims == (COMPARISON,) and not str(name).startswith("reference_")]
        kept_blocks = self._kept_blocks()
        parts = []
        for i in range(len(self.chunks)):
            pairs = {(name, k): (kept_blocks[i][j], self.blocks(name)[i])
                     for name in others for j, k in enumerate(self.kept)}
            parts.append(dask.delayed(_levels_part, pure=True)(kept_blocks[i], pairs))
        results = dask.compute(*parts)
        levels = []
        for j, k in enumerate(self.kept):
            u = pd.unique(np.concatenate([r[0][j] for r in results]))
            u = u[~pd.isna(u)] if u.dtype.kind in "fOc" else u  # pandas.factorize leaves NaN out of the levels
            levels.append(np.asarray(u))
        self.levels = tuple(levels)
        for name in others:  # as _dependent_coords: the first kept name within whose groups it is constant
            for j, k in enumerate(self.kept):
                pairs = pd.concat([r[1][(name, k)] for r in results], ignore_index=True).drop_duplicates()
                pairs = pairs[pd.Index(levels[j]).get_indexer(pairs["k"].to_numpy()) >= 0]
                if (pairs.groupby("k", sort=False)["v"].nunique(dropna=False) <= 1).all():
                    first = pairs.drop_duplicates("k").set_index("k")["v"]
                    values = first.reindex(pd.Index(levels[j])).to_numpy()
                    self.dependent[name] = xr.Variable(k, np.asarray(values, dtype=ds[name].dtype))
                    break

    def _index_pass(self, dask, where):
        ds = self.ds
        names = ("subject", "reference_subject", "mated", "probe_id", "reference_id", *_FLAGS)
        has = {n: n in ds.variables for n in names}
        if not (has["subject"] and has["reference_subject"]):
            has["subject"] = has["reference_subject"] = False
        cols = {n: (self.blocks(n) if has[n] else [None] * len(self.chunks)) for n in names}
        if not (has["probe_id"] and has["reference_id"]):
            cols["probe_id"] = cols["reference_id"] = [None] * len(self.chunks)
        kept_blocks = self._kept_blocks() if self.kept else [()] * len(self.chunks)
        node = dask.delayed(_index_part, pure=True, nout=2)
        parts = [node(self.score_blocks[i], *(cols[n][i] for n in names), kept_blocks[i], self.levels, self.shape)
                 for i in range(len(self.chunks))]
        summaries, marks = [p[0] for p in parts], [p[1] for p in parts]
        # the marks stay where they were computed (on the workers; in this process under the threaded scheduler)
        kept = dask.persist(*summaries, *marks)
        results, self.marks = dask.compute(*kept[: len(parts)]), list(kept[len(parts):])
        self._check(results, where)
        counts = np.stack([r["counts"] for r in results]) if results else np.zeros((0, self.n_groups), np.int64)
        self.sizes = counts.sum(axis=0)
        self.group_chunks = counts.T  # (n_groups, n_partitions)
        zero = np.zeros(self.n_groups, dtype=np.int64)
        self.n_mated = sum((r["n_mated"] for r in results), zero)
        self.n_excluded = sum((r["n_excluded"] for r in results), zero)
        self.has_failures = any(r["has_failed"] for r in results)
        if self.has_failures:
            zero = np.zeros(self.n_groups, dtype=np.int64)
            self.failed_mated = sum((r.get("failed_mated", zero) for r in results), zero)
            self.failed_all = sum((r.get("failed_all", zero) for r in results), zero)

    def _check(self, results, where):
        """The in-memory list's checks (validate_comparison_list), with its messages."""
        for key, first in (("n_inf", "first_inf"), ("n_bad_nan", "first_bad_nan")):
            total = sum(r[key] for r in results)
            if not total:
                continue
            i = next(i for i, r in enumerate(results) if r[key])
            at = int(self.offsets[i] + results[i][first])
            if key == "n_inf":
                raise ScoreCubeError(f"{total} score(s){where} are infinite, first at comparison {at}. Scores must "
                                     "be finite numbers.")
            raise ScoreCubeError(
                f"{total} comparison(s){where} have no score (NaN), first at comparison {at}, and no failure flag. "
                "A comparison list holds comparisons that were made: drop the ones that were not (and count "
                "them), or flag failures with failed_enrolment= / failed_acquisition=.")
        if not sum(r["n_mated_any"] for r in results):
            raise ScoreCubeError(f"the comparison list{where} holds no mated comparison (no subject equals its "
                                 "reference_subject); check that both sides use the same ids.")

    # -- per group ------------------------------------------------------------
    def values(self, g: int):
        """Group ``g``'s scores in list order: a chunked ``(n_g, 1)`` array (a NumPy one when empty)."""
        import dask
        import dask.array as da

        score = self.ds["score"].data
        if not self.kept:
            return score[:, None]
        sizes = self.group_chunks[g]
        if not sizes.sum():
            return np.empty(0, dtype=score.dtype)
        kept_blocks = self._kept_blocks()
        node = dask.delayed(_select_part, pure=True)
        parts = [da.from_delayed(node(self.score_blocks[i], kept_blocks[i], self.levels, self.shape, g),
                                 shape=(int(c),), dtype=score.dtype)
                 for i, c in enumerate(sizes) if c]
        return da.concatenate(parts)[:, None]

    def index_of(self, g: int) -> "PartitionIndex":
        """Group ``g``'s mated and self comparisons, block by block of :meth:`values` (kept where they are)."""
        import dask

        if not self.kept:
            blocks = range(len(self.chunks))
        else:
            blocks = [i for i, c in enumerate(self.group_chunks[g]) if c]
        if not blocks:  # an empty group: its scores are an empty NumPy array
            return PartitionIndex.empty()
        node = dask.delayed(_group_marks, pure=True, nout=3)
        per = [node(self.marks[i], g) for i in blocks]
        return PartitionIndex([p[0] for p in per], [p[1] for p in per], [p[2] for p in per],
                              int(self.n_mated[g]), int(self.n_excluded[g]))

    def failure_counts(self, g: int) -> tuple[int, int]:
        if not self.has_failures:
            return 0, 0
        n_m = int(self.failed_mated[g])
        return n_m, int(self.failed_all[g]) - n_m

    def unit_tables(self, sides) -> list:
        """One frame per side ``(key, who, flag)``: a row per unit with its ``subject`` and whether it ``failed``."""
        import dask

        tables = []
        for key, who, flag in sides:
            names = [*key, *([who] if who else []), *([flag] if flag else [])]
            parts = []
            for i in range(len(self.chunks)):
                columns = {n: self.blocks(n)[i] for n in names}
                parts.append(dask.delayed(_units_part, pure=True)(columns, tuple(key), who, flag))
            frames = dask.compute(*parts)
            frame = pd.concat(frames).groupby(level=list(range(len(key))), sort=False).agg(
                _who=("_who", "first"), _failed=("_failed", "any"))
            subject = frame["_who"].to_numpy() if who else np.empty(len(frame), dtype=object)
            tables.append(pd.DataFrame({"subject": subject, "failed": frame["_failed"].to_numpy(dtype=bool)}))
        return tables
