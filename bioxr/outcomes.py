"""The outcome cube: one row of identification outcomes per probe.

From a score cube, per probe: the best mated score, the best non-mated
score and the rank of the mate among the enrolled subjects, with ties as in
ISO/IEC 19795-1 Annex F.2 (METHODS.md section 2). References are ranked by
subject: each subject's best score over its references is its candidate
score, so several references per subject rank subjects, not templates.

The result lives on the probe dimensions only (for a Photohead-style cube,
``subject x image x collection``), so it is small, and it is computed chunk
by chunk when the score cube is dask-backed: the scores are never held at
once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .cube import REFERENCE, probe_dims, score_kind, validate_score_cube

__all__ = ["outcomes"]

_VARIABLES = ("mated_score", "nonmated_best", "mated_rank", "mated_rank_min", "mated_rank_max", "n_candidates")


def outcomes(cube: xr.DataArray) -> xr.Dataset:
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
    cube : xarray.DataArray
        A score cube; may be dask-backed (chunk the probe dimensions only;
        ``reference`` must be one chunk).

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
    validate_score_cube(cube, require_nonmated=False)
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
        ref_chunks = cube.chunksizes.get(REFERENCE, ())
        if len(ref_chunks) > 1:
            cube = cube.chunk({REFERENCE: -1})
            inputs[0] = cube
    results = xr.apply_ufunc(
        _outcome_kernel,
        *inputs,
        input_core_dims=core,
        output_core_dims=[[]] * len(_VARIABLES),
        kwargs=dict(order=order, starts=starts, n_subjects=len(uniques), distance=kind == "distance", self_excluded=ref_ids is not None),
        dask="parallelized",
        output_dtypes=[np.float64] * len(_VARIABLES),
        keep_attrs=False,
    )
    ds = xr.Dataset(dict(zip(_VARIABLES, results)))
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
        ds[name].attrs["long_name"] = text
    return ds


def _outcome_kernel(scores, probe_code, self_col=None, *, order, starts, n_subjects, distance, self_excluded):
    """NumPy core: scores (..., R), probe_code (...), self_col (...)."""
    lead = scores.shape[:-1]
    s = np.array(scores, dtype=np.float64).reshape(-1, scores.shape[-1])
    if distance:
        s = -s
    if self_excluded:
        sc = np.broadcast_to(self_col, lead).reshape(-1)
        rows = np.flatnonzero(sc >= 0)
        s[rows, sc[rows]] = np.nan
    s = np.where(np.isnan(s), -np.inf, s)
    best = np.maximum.reduceat(s[:, order], starts, axis=1)  # (P, K) best per subject
    code = np.broadcast_to(probe_code, lead).reshape(-1)
    enrolled = code >= 0
    p = np.arange(best.shape[0])
    mate = np.full(best.shape[0], -np.inf)
    mate[enrolled] = best[p[enrolled], code[enrolled]]
    others = best.copy()
    others[p[enrolled], code[enrolled]] = -np.inf
    has_score = np.isfinite(best)
    n_candidates = has_score.sum(axis=1).astype(np.float64)
    nonmated = others.max(axis=1)
    valid = np.isfinite(mate)
    x = (others > mate[:, None]).sum(axis=1).astype(np.float64)
    y = 1.0 + (others == mate[:, None]).sum(axis=1)
    rank_min = np.where(valid, x + 1, np.nan)
    rank_max = np.where(valid, x + y, np.nan)
    rank = np.where(valid, x + (y + 1) / 2, np.nan)
    sign = -1.0 if distance else 1.0
    mated_score = np.where(valid, sign * mate, np.nan)
    nonmated_best = np.where(np.isfinite(nonmated), sign * nonmated, np.nan)
    outs = (mated_score, nonmated_best, rank, rank_min, rank_max, n_candidates)
    return tuple(o.reshape(lead) for o in outs)
