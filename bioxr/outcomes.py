"""The outcome cube: one row of identification outcomes per probe.

From a score cube, per probe: the best mated score, the best non-mated
score and the rank of the mate among the enrolled subjects, with ties as in
ISO/IEC 19795-1 Annex F.2 (METHODS.md section 2). References are ranked by
subject: each subject's best score over its references is its candidate
score, so several references per subject rank subjects, not templates.

The result lives on the probe dimensions only (for a Photohead-style cube,
``subject x image x collection``), so it is small, and it is computed chunk
by chunk when the score cube is dask-backed: the scores are never held at
once. A cube chunked along ``reference`` too is never joined into one
reference chunk: two blockwise passes (the mated best scores, then the
counts of better and tied subjects) give the same result.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import xarray as xr

from .cube import REFERENCE, ScoreCubeError, probe_dims, score_kind, validate_score_cube

__all__ = ["outcomes"]

_VARIABLES = ("mated_score", "nonmated_best", "mated_rank", "mated_rank_min", "mated_rank_max", "n_candidates")


def outcomes(cube: xr.DataArray, *, ranks_only: bool = False) -> xr.Dataset:
    """Per-probe identification outcomes with Annex F tie handling.

    For each probe, let ``x`` be the number of other enrolled subjects whose
    best score is strictly better than the mate's best score and ``y`` the
    number of subjects whose best score equals it (the mate included). The
    rank is ``x + 1`` when ``y = 1``; otherwise it is spread uniformly over
    ``x + 1 .. x + y``: ``mated_rank_min = x + 1``, ``mated_rank_max = x + y`` and
    ``mated_rank`` is their mean (the fractional rank). ``P(rank <= r)`` is the
    share of that range at or below ``r``.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube; may be dask-backed, chunked along any dimensions. When
        ``reference`` is in several chunks, the mated best scores (pass 1)
        are computed at once and the rest (pass 2) stays lazy, so the
        cube is read twice; ``reference`` is never joined into one chunk.
        Or a comparison list: a probe is
        then the combination of its ``probe_dims`` (the result lies on
        their grid, as from the cube), else its ``probe_id`` (or
        ``probe``), else its subject (a ``probe`` dimension).
    ranks_only : bool, keyword-only
        Compute only the three rank variables (faster: what a CMC needs).

    Returns
    -------
    xarray.Dataset
        Over the probe dimensions, with the probe coordinates:

        - ``mated_score``: best score over the probe's mated references
          (NaN when its subject is not enrolled or was never compared);
        - ``nonmated_best``: best score over other subjects' references;
        - ``mated_rank``, ``mated_rank_min``, ``mated_rank_max``: the
          mate's fractional rank and its range (NaN without a mated score;
          not named ``rank``, which is a Dataset method and, in CMC
          results, a dimension);
        - ``n_candidates``: enrolled subjects with at least one score.

        attrs: ``score_kind``, ``tie_rule``, ``rank_unit``.

    References
    ----------
    ISO/IEC 19795-1:2006 Annex F.2 (seeds/004); seeds/001 (closed set,
    read as "the first mate"); METHODS.md section 2.

    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.cube import score_cube
    >>> from bioxr.outcomes import outcomes
    >>> cube = score_cube(np.array([[0.5, 0.5, 0.1], [0.2, 0.9, 0.9]]),
    ...                   subject=["a", "b"], reference_subject=["a", "b", "c"])
    >>> out = outcomes(cube)
    >>> out.mated_rank.values.tolist()
    [1.5, 1.5]
    >>> out.mated_rank_min.values.tolist(), out.mated_rank_max.values.tolist()
    ([1.0, 1.0], [2.0, 2.0])
    """
    from .comparisons import is_comparison_list

    if is_comparison_list(cube):
        ds = _list_outcomes(cube, ranks_only=ranks_only)
        pdims = tuple(ds.dims)
        kind = cube.attrs.get("score_kind", "similarity")
        return _finish(ds, pdims, kind, ranks_only)
    validate_score_cube(cube, require_nonmated=False, check_values=False)  # the kernel checks the scores
    kind = score_kind(cube)
    pdims = probe_dims(cube)
    ref_labels = pd.Index(np.asarray(cube["reference_subject"].values))
    codes, uniques = pd.factorize(ref_labels, sort=False)
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    probe_code = xr.DataArray(
        pd.Index(uniques).get_indexer(np.asarray(cube["subject"].values).ravel()).reshape(cube["subject"].shape),
        dims=cube["subject"].dims,
    )
    inputs = [cube, probe_code]
    core = [[REFERENCE], []]
    has_ids = "probe_id" in cube.coords and "reference_id" in cube.coords
    ref_ids = None
    if has_ids:
        ref_id_index = pd.Index(np.asarray(cube["reference_id"].values))
        pid = np.asarray(cube["probe_id"].values)
        self_col = ref_id_index.get_indexer(pid.ravel()).reshape(pid.shape)
        inputs.append(xr.DataArray(self_col, dims=cube["probe_id"].dims))
        core.append([])
        ref_ids = True
    if cube.chunks is not None:
        ref_chunks = cube.chunks[cube.get_axis_num(REFERENCE)]
        if len(ref_chunks) > 1 and hasattr(cube.data, "dask"):
            # chunked along reference too: two blockwise passes, reference never joined into one chunk
            cube = cube.transpose(..., REFERENCE)
            inner = cube.dims[:-1]

            def full(a):  # a per-probe array over all the probe dims, in the cube's order
                return a.expand_dims({d: cube.sizes[d] for d in inner if d not in a.dims}).transpose(*inner).values

            ds = _chunked_outcomes(
                cube, codes, len(uniques), full(probe_code), full(inputs[2]) if has_ids else None,
                distance=kind == "distance", ranks_only=ranks_only,
            )
            return _finish(ds, pdims, kind, ranks_only)
        if len(ref_chunks) > 1:  # another chunk manager: reference in one chunk
            cube = cube.chunk({REFERENCE: -1})
            inputs[0] = cube
    results = xr.apply_ufunc(
        _outcome_kernel,
        *inputs,
        input_core_dims=core,
        output_core_dims=[[]] * len(_VARIABLES),
        kwargs=dict(
            order=order,
            starts=starts,
            n_subjects=len(uniques),
            distance=kind == "distance",
            self_excluded=ref_ids is not None,
            ranks_only=ranks_only,
        ),
        dask="parallelized",
        output_dtypes=[np.float64] * len(_VARIABLES),
        keep_attrs=False,
    )
    ds = xr.Dataset(dict(zip(_VARIABLES, results)))
    return _finish(ds, pdims, kind, ranks_only)


def _finish(ds: xr.Dataset, pdims, kind: str, ranks_only: bool) -> xr.Dataset:
    if ranks_only:
        ds = ds[["mated_rank", "mated_rank_min", "mated_rank_max"]]
    ds = ds.transpose(*pdims)
    ds = ds.drop_vars([c for c in ds.coords if REFERENCE in ds[c].dims], errors="ignore")
    ds.attrs = {
        "score_kind": kind,
        "tie_rule": (
            "ISO/IEC 19795-1 Annex F.2: x subjects score better than the mate, y (mate "
            "included) score the same; the rank is uniform over x+1..x+y, rank = x + (y+1)/2"
        ),
        "rank_unit": "enrolled subjects (best score over each subject's references)",
    }
    for name, text in (
        ("mated_score", "best mated score"),
        ("nonmated_best", "best non-mated score"),
        ("mated_rank", "fractional rank of the mate (Annex F ties)"),
        ("mated_rank_min", "best rank the mate could take among tied subjects"),
        ("mated_rank_max", "worst rank the mate could take among tied subjects"),
        ("n_candidates", "enrolled subjects with at least one score"),
    ):
        if name in ds:
            ds[name].attrs["long_name"] = text
    return ds


_BLOCK_CELLS = 1 << 17  # cells per row block: small enough to stay in cache


def _outcome_kernel(
    scores, probe_code, self_col=None, *, order, starts, n_subjects, distance, self_excluded, ranks_only=False
):
    """NumPy core: scores (..., R), probe_code (...), self_col (...).

    Rows are processed in cache-sized blocks (on two threads for large
    inputs); each subject's candidate score is the best over its
    references, NaN cells skipped. Works in the scores' own float dtype.
    """
    lead = scores.shape[:-1]
    n_ref = scores.shape[-1]
    s = np.asarray(scores).reshape(-1, n_ref)
    if not np.issubdtype(s.dtype, np.floating):
        s = s.astype(np.float64)
    n_rows = s.shape[0]
    code = np.ascontiguousarray(np.broadcast_to(probe_code, lead).reshape(-1))
    self_cols = np.broadcast_to(self_col, lead).reshape(-1) if self_excluded else None
    size = n_ref // n_subjects
    contiguous = (
        size * n_subjects == n_ref
        and np.array_equal(order, np.arange(n_ref))
        and np.array_equal(starts, np.arange(0, n_ref, size))
    )
    out = np.empty((6, n_rows))
    step = max(1, _BLOCK_CELLS // n_ref)
    bounds = [(r, min(r + step, n_rows)) for r in range(0, n_rows, step)]

    def work(chunk):
        for r0, r1 in chunk:
            out[:, r0:r1] = _outcome_rows(
                s[r0:r1], code[r0:r1], None if self_cols is None else self_cols[r0:r1],
                order, starts, n_subjects, size if contiguous else 0, distance, ranks_only,
            )

    if n_rows * n_ref >= 4 * _BLOCK_CELLS and len(bounds) > 1:
        halves = [bounds[: len(bounds) // 2], bounds[len(bounds) // 2 :]]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(work, halves))
    else:
        work(bounds)
    return tuple(o.reshape(lead) for o in out)


def _count_per_row(mask: np.ndarray) -> np.ndarray:
    """True cells per row of a C-contiguous boolean block, eight at a time."""
    k, n = mask.shape
    if n % 8:
        padded = np.zeros((k, n + 8 - n % 8), dtype=bool)
        padded[:, :n] = mask
        mask = padded
    mask = np.ascontiguousarray(mask)  # a view of a transposed or sliced block is not: .view needs C order
    return np.bitwise_count(mask.view(np.uint64)).sum(axis=1, dtype=np.int64)


def _outcome_rows(s, code, self_cols, order, starts, n_subjects, size, distance, ranks_only=False):
    """Outcomes of a block of probe rows; returns a (6, rows) array.

    With ``ranks_only`` only the ranks are filled (rows 2-4) and, when each
    subject has one reference, the scores are read without a copy.
    """
    if not np.isfinite(np.add.reduce(s, axis=None)) and np.isinf(s).any():
        raise ScoreCubeError(
            "the score cube holds infinite scores; scores must be finite (NaN means not compared, "
            "or declare a sentinel with missing=)."
        )
    if distance:
        s = np.negative(s)  # best = lowest distance = highest negated distance
    if size == 1:
        best = s if (ranks_only and self_cols is None) or distance else s.copy()
    elif size > 1:
        blocks = s.reshape(s.shape[0], n_subjects, size)
        best = blocks[:, :, 0].copy()
        for j in range(1, size):
            np.fmax(best, blocks[:, :, j], out=best)
    else:
        best = np.fmax.reduceat(s[:, order], starts, axis=1)
    rows = np.arange(s.shape[0])
    if self_cols is not None:
        has = self_cols >= 0
        if has.any():
            # a self comparison is no comparison: recompute those subjects' best without it
            if size == 1:
                best[rows[has], self_cols[has]] = np.nan
            else:
                masked = s[has].copy()
                masked[np.arange(masked.shape[0]), self_cols[has]] = np.nan
                best[has] = np.fmax.reduceat(masked[:, order], starts, axis=1)
    enrolled = rows[code >= 0]
    mate = np.full(best.shape[0], np.nan, dtype=best.dtype)
    mate[enrolled] = best[enrolled, code[enrolled]]
    x = _count_per_row(best > mate[:, None])  # NaN cells compare False: never candidates
    y = _count_per_row(best == mate[:, None])  # includes the mate
    valid = ~np.isnan(mate)
    result = np.full((6, best.shape[0]), np.nan)
    result[2] = np.where(valid, x + (y + 1) / 2, np.nan)
    result[3] = np.where(valid, x + 1, np.nan)
    result[4] = np.where(valid, x + y, np.nan)
    if ranks_only:
        return result
    n_subj = best.shape[1]
    if np.isnan(np.add.reduce(best, axis=None)):
        result[5] = n_subj - _count_per_row(np.isnan(best))
    else:
        result[5] = n_subj
    best[enrolled, code[enrolled]] = np.nan
    sign = -1.0 if distance else 1.0
    result[0] = sign * mate
    result[1] = sign * np.fmax.reduce(best, axis=1)
    return result


def _list_outcomes(ds: xr.Dataset, *, ranks_only: bool) -> xr.Dataset:
    """The outcome cube of a comparison list: one row per probe, O(comparisons).

    A probe is the combination of the list's probe dims (``attrs["probe_dims"]``)
    when it has them, else its ``probe_id`` (or ``probe``), else its subject.
    With probe dims the result lies on their grid, as from the cube.
    """
    from ._core import raise_no_subjects
    from .comparisons import canonical, has_subjects, self_flags, validate_comparison_list

    ds = canonical(validate_comparison_list(ds, require_nonmated=False))
    if not has_subjects(ds):
        raise_no_subjects("identification (ranks of the mate among enrolled subjects)")
    kind = ds.attrs.get("score_kind", "similarity")
    pdims = [d for d in ds.attrs.get("probe_dims", []) if d in ds.coords]
    keys = pdims or [next((k for k in ("probe_id", "probe") if k in ds.coords), "subject")]
    score = np.asarray(ds["score"].values, dtype=float)
    keep = ~np.isnan(score)
    selfc = self_flags(ds)
    if selfc is not None:
        keep &= ~selfc
    frame = pd.DataFrame({k: np.asarray(ds[k].values) for k in keys})
    probe = frame.groupby(keys, sort=False).ngroup().to_numpy()
    n_probes = int(probe.max()) + 1 if probe.size else 0
    subject = np.asarray(ds["subject"].values)
    first = np.unique(probe, return_index=True)[1]
    probe_subject = subject[first]
    if not (probe_subject[probe] == subject).all():
        j = int(np.argmax(probe_subject[probe] != subject))
        raise ScoreCubeError(f"probe {frame.iloc[j].tolist()} has comparisons under two subjects "
                             f"({probe_subject[probe[j]]!r} and {subject[j]!r}); a probe belongs to one subject.")
    r_codes, r_uniques = pd.factorize(np.asarray(ds["reference_subject"].values), sort=False)
    mate = pd.Index(r_uniques).get_indexer(probe_subject)  # -1: not enrolled
    sign = -1.0 if kind == "distance" else 1.0
    # best score per (probe, reference subject): the candidate score (Annex F ranks subjects)
    n_r = len(r_uniques)
    pair = probe[keep].astype(np.int64) * max(n_r, 1) + r_codes[keep]
    best = pd.Series(sign * score[keep]).groupby(pair).max()
    pair_key = best.index.to_numpy()
    best_v = best.to_numpy()
    p_of = pair_key // max(n_r, 1)
    r_of = pair_key % max(n_r, 1)
    is_mate = (mate[p_of] >= 0) & (r_of == mate[p_of])
    mate_best = np.full(n_probes, np.nan)
    mate_best[p_of[is_mate]] = best_v[is_mate]
    x = np.bincount(p_of, weights=best_v > mate_best[p_of], minlength=n_probes)
    y = np.bincount(p_of, weights=best_v == mate_best[p_of], minlength=n_probes)
    valid = ~np.isnan(mate_best)
    out = {
        "mated_rank": np.where(valid, x + (y + 1) / 2, np.nan),
        "mated_rank_min": np.where(valid, x + 1, np.nan),
        "mated_rank_max": np.where(valid, x + y, np.nan),
    }
    if not ranks_only:
        out["mated_score"] = sign * mate_best
        nonmated = np.full(n_probes, -np.inf)
        np.maximum.at(nonmated, p_of[~is_mate], best_v[~is_mate])
        out["nonmated_best"] = np.where(np.isneginf(nonmated), np.nan, sign * nonmated)
        out["n_candidates"] = np.bincount(p_of, minlength=n_probes).astype(float)
    order = [v for v in _VARIABLES if v in out]
    levels = [pd.factorize(frame[k].to_numpy()[first], sort=False) for k in keys]
    if pdims:
        # back onto the grid of the probe dims (absent probes NaN), levels in order of appearance
        uniq = [pd.factorize(frame[k].to_numpy(), sort=False)[1] for k in keys]
        codes = [pd.Index(u).get_indexer(frame[k].to_numpy()[first]) for k, u in zip(keys, uniq)]
        shape = tuple(len(u) for u in uniq)
        data = {}
        for name in order:
            grid = np.full(shape, np.nan)
            grid[tuple(codes)] = out[name]
            data[name] = (tuple(keys), grid)
        coords = {k: np.asarray(u) for k, u in zip(keys, uniq)}
        result = xr.Dataset(data, coords=coords)
        for name, coord in ds.coords.items():
            if name in coords or name in ("reference_subject", "reference_id", "mated") or str(name).startswith("reference"):
                continue
            v = np.asarray(coord.values)
            for k, c in zip(keys, [pd.Index(u).get_indexer(frame[k].to_numpy()) for k, u in zip(keys, uniq)]):
                grouped = pd.DataFrame({"c": c, "v": v}).groupby("c")["v"]
                if (grouped.nunique(dropna=False) <= 1).all():
                    firsts = np.unique(c, return_index=True)[1]
                    result = result.assign_coords({name: (k, v[firsts])})
                    break
    else:
        dim = "probe"
        label = levels[0][1]
        data = {name: (dim, out[name]) for name in order}
        result = xr.Dataset(data, coords={dim: np.asarray(label), "subject": (dim, probe_subject)})
        for name, coord in ds.coords.items():
            if name in ("subject", "reference_subject", "reference_id", keys[0]) or str(name).startswith("reference"):
                continue
            v = np.asarray(coord.values)
            if (pd.DataFrame({"c": probe, "v": v}).groupby("c")["v"].nunique(dropna=False) <= 1).all():
                result = result.assign_coords({name: (dim, v[first])})
    return result


# ------------------------------------------------------------------ a cube chunked along reference
def _chunked_outcomes(cube: xr.DataArray, codes, n_subjects: int, probe_code, self_col, *, distance: bool,
                      ranks_only: bool) -> xr.Dataset:
    """The outcome cube of a dask cube chunked along ``reference``, in two blockwise passes.

    Pass 1, computed now: each block sends, per probe, the best score over
    its mated references in the block; a tree of ``fmax`` (``SPLIT_EVERY``
    at a time) gives each probe's mated best score, a vector per probe
    block. Pass 2, lazy (the result): each block counts, per probe, the
    subjects wholly inside it that score better than (``x``) and as well as
    (``y``) the mate, and sends the best score of each subject that
    straddles reference chunks (probes x those subjects). The tree takes
    the ``fmax`` of a straddling subject's bests and counts the subject once
    every chunk that holds its references has been merged, then drops it.
    Only per-probe vectors and the straddlers' bests travel; the result is
    the in-memory one exactly.

    Pass 1 is computed before pass 2 is built so that no block waits in
    memory for the mated best scores of its row band (in one graph, a row
    band of all references would be held until its pass 1 is done; and
    :func:`dask.graph_manipulation.bind`, which would regenerate the blocks
    instead, does not rebind fused graphs on dask 2026.8). The cube is
    read twice: once here, once when the result is computed.
    """
    import dask
    import dask.array as da

    from ._core.blockwise import SPLIT_EVERY

    data = cube.data
    pdims = cube.dims[:-1]
    p_chunks, r_chunks = data.chunks[:-1], data.chunks[-1]
    edges = np.concatenate([[0], np.cumsum(r_chunks)]).astype(np.int64)
    chunk_of = np.searchsorted(edges, np.arange(edges[-1]), side="right") - 1
    first = np.full(n_subjects, len(r_chunks), dtype=np.int64)
    last = np.full(n_subjects, -1, dtype=np.int64)
    np.minimum.at(first, codes, chunk_of)
    np.maximum.at(last, codes, chunk_of)
    columns = []  # per reference chunk: its subjects (sorted), the column order and starts for reduceat, who is inside
    for j in range(len(r_chunks)):
        local = codes[edges[j] : edges[j + 1]]
        subjects, inverse = np.unique(local, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0]) if local.size else np.empty(0, np.int64)
        columns.append((subjects, order, starts, first[subjects] == last[subjects]))
    span = dask.delayed((first, last), pure=True)  # into the graph once: every combine node reads it
    blocks = data.to_delayed(optimize_graph=True)
    bands = list(np.ndindex(*blocks.shape[:-1]))
    p_edges = [np.concatenate([[0], np.cumsum(c)]) for c in p_chunks]

    def band_of(a, p):
        return a[tuple(slice(e[i], e[i + 1]) for e, i in zip(p_edges, p))].reshape(-1)

    def self_in(p, j):
        if self_col is None:
            return None
        col = band_of(self_col, p)
        return np.where((col >= edges[j]) & (col < edges[j + 1]), col - edges[j], -1)

    def tree(parts, combine, *args):
        while len(parts) > 1:
            parts = [dask.delayed(combine, pure=True)(*args, *parts[i : i + SPLIT_EVERY])
                     for i in range(0, len(parts), SPLIT_EVERY)]
        return parts[0]

    mates = []
    for p in bands:
        code = band_of(probe_code, p)
        parts = [dask.delayed(_mate_chunk, pure=True)(blocks[(*p, j)], code, self_in(p, j), columns[j][:3], distance)
                 for j in range(len(r_chunks))]
        mates.append(tree(parts, _mate_combine))
    mates = dask.compute(*mates)  # pass 1: one small vector per probe block reaches the client
    pieces = []
    for p, mate in zip(bands, mates):
        code = band_of(probe_code, p)
        parts = [dask.delayed(_rank_chunk, pure=True)(blocks[(*p, j)], mate, code, self_in(p, j), columns[j], j,
                                                      distance, ranks_only)
                 for j in range(len(r_chunks))]
        root = tree(parts, _rank_combine, span, mate)
        shape = tuple(int(e[i + 1] - e[i]) for e, i in zip(p_edges, p))
        done = dask.delayed(_rank_finish, pure=True)(span, root, mate, n_subjects, distance, ranks_only, shape)
        pieces.append(da.from_delayed(done, shape=(len(_VARIABLES), *shape), dtype=np.float64))
    grid = np.empty(blocks.shape[:-1], dtype=object)
    for p, piece in zip(bands, pieces):
        grid[p] = piece
    stacked = da.block(grid.tolist()) if grid.ndim else pieces[0]
    coords = {name: c.variable for name, c in cube.coords.items() if REFERENCE not in c.dims}
    return xr.Dataset({name: xr.DataArray(stacked[k], dims=pdims, coords=coords) for k, name in enumerate(_VARIABLES)})


def _chunk_best(block, self_local, columns, distance):
    """A block's rows (n, w) as candidate scores: each of its subjects' best over the block's references, (n, S_b)."""
    subjects, order, starts = columns[:3]
    s = np.asarray(block)
    s = s.reshape(int(np.prod(s.shape[:-1])), s.shape[-1])  # (-1 cannot size an empty chunk)
    if not np.issubdtype(s.dtype, np.floating):
        s = s.astype(np.float64)
    if np.isinf(s).any():
        raise ScoreCubeError(
            "the score cube holds infinite scores; scores must be finite (NaN means not compared, "
            "or declare a sentinel with missing=)."
        )
    if distance:
        s = np.negative(s)  # best = lowest distance = highest negated distance
    if self_local is not None and (self_local >= 0).any():
        has = np.flatnonzero(self_local >= 0)
        s = s.copy() if not distance else s
        s[has, self_local[has]] = np.nan  # a self comparison is no comparison
    if not subjects.size:
        return s[:, :0]
    return np.fmax.reduceat(s[:, order], starts, axis=1)


def _mate_column(subjects, code):
    """Each probe's mate among the block's (sorted) subjects: its column, or -1 (not in the block, not enrolled)."""
    if not subjects.size:
        return np.full(code.shape, -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(subjects, code), subjects.size - 1)
    return np.where((code >= 0) & (subjects[pos] == code), pos, -1)


def _mate_chunk(block, code, self_local, columns, distance):
    """Pass 1: each probe's best score over its mated references in the block (NaN: none or none compared)."""
    best = _chunk_best(block, self_local, columns, distance)
    col = _mate_column(columns[0], code)
    mate = np.full(best.shape[0], np.nan, dtype=best.dtype)
    rows = np.flatnonzero(col >= 0)
    mate[rows] = best[rows, col[rows]]
    return mate


def _mate_combine(*parts):
    return np.fmax.reduce(np.stack(parts), axis=0)


def _rank_chunk(block, mate, code, self_local, columns, j, distance, ranks_only):
    """Pass 2: the block's counts over the subjects wholly inside it, and the straddling subjects' bests."""
    subjects, _, _, inside = columns
    best = _chunk_best(block, self_local, columns, distance)
    part = dict(j0=j, j1=j + 1, x=_count_per_row(best[:, inside] > mate[:, None]),
                y=_count_per_row(best[:, inside] == mate[:, None]), ids=subjects[~inside], best=best[:, ~inside])
    if not ranks_only:
        part["n_nan"] = _count_per_row(np.isnan(best[:, inside]))
        col = _mate_column(subjects, code)
        rows = np.flatnonzero(col >= 0)
        others = best.copy()
        others[rows, col[rows]] = np.nan
        part["nonmated"] = (np.fmax.reduce(others, axis=1) if others.shape[1]
                            else np.full(others.shape[0], np.nan, dtype=others.dtype))
    return part


def _rank_combine(span, mate, *parts):
    """Merge consecutive partials: add counts, ``fmax`` the straddlers' bests and count those now complete."""
    first, last = span
    parts = sorted(parts, key=lambda q: q["j0"])
    out = dict(j0=parts[0]["j0"], j1=parts[-1]["j1"])
    for key in ("x", "y", "n_nan"):
        if key in parts[0]:
            out[key] = sum(q[key] for q in parts)
    if "nonmated" in parts[0]:
        out["nonmated"] = np.fmax.reduce(np.stack([q["nonmated"] for q in parts]), axis=0)
    ids, inverse = np.unique(np.concatenate([q["ids"] for q in parts]), return_inverse=True)
    best = np.full((mate.shape[0], ids.size), np.nan, dtype=parts[0]["best"].dtype)
    offset = 0
    for q in parts:
        idx = inverse[offset : offset + q["ids"].size]
        offset += q["ids"].size
        best[:, idx] = np.fmax(best[:, idx], q["best"])
    done = (first[ids] >= out["j0"]) & (last[ids] < out["j1"])  # every chunk holding its references is merged
    out["x"] = out["x"] + _count_per_row(best[:, done] > mate[:, None])
    out["y"] = out["y"] + _count_per_row(best[:, done] == mate[:, None])
    if "n_nan" in out:
        out["n_nan"] = out["n_nan"] + _count_per_row(np.isnan(best[:, done]))
    out["ids"], out["best"] = ids[~done], best[:, ~done]
    return out


def _rank_finish(span, root, mate, n_subjects, distance, ranks_only, shape):
    """The six outcome variables of a probe block, from pass 2's root (all straddlers counted)."""
    if root["ids"].size:  # not reached with two reference chunks or more (the root merged them all); kept safe
        root = _rank_combine(span, mate, root)
    x, y = root["x"], root["y"]
    valid = ~np.isnan(mate)
    result = np.full((len(_VARIABLES), mate.shape[0]), np.nan)
    result[2] = np.where(valid, x + (y + 1) / 2, np.nan)
    result[3] = np.where(valid, x + 1, np.nan)
    result[4] = np.where(valid, x + y, np.nan)
    if not ranks_only:
        sign = -1.0 if distance else 1.0
        result[0] = sign * mate
        result[1] = sign * root["nonmated"]
        result[5] = n_subjects - root["n_nan"]
    return result.reshape((len(_VARIABLES), *shape))
