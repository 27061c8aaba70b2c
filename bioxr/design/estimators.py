"""The first steps of the Micheals-Boult methodology: dichotomize, and the three point estimators.

- :func:`dichotomize`: the outcome cube to a binary success per probe;
- :func:`variance_srs`, :func:`variance_stratified`,
  :func:`variance_cluster`: the variance of a rate under simple random,
  stratified and cluster sampling, on a (group, element) array (METHODS.md
  section 3; seeds/000 sections 2.1-2.2).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .._core import check_rank, tie_share

TIES = ("strict", "fractional")
#: The three designs compared, by their short names in results.
ESTIMATORS = ("srs", "st", "cl")


# --------------------------------------------------------------------------
# Dichotomization
# --------------------------------------------------------------------------


def dichotomize(
    outcomes: xr.Dataset, *, rank: int | None = None, threshold: float | None = None, ties: str = "strict"
) -> xr.DataArray:
    """Binary success per probe: rank-k identification or a mated score over a threshold.

    The first step of the methodology: reduce each probe's outcome to a
    success (1) or a failure (0). Give exactly one rule.

    Parameters
    ----------
    outcomes : xarray.Dataset
        An outcome cube from :func:`bioxr.outcomes.outcomes` (probe dims).
    rank : int, keyword-only
        Rank-``rank`` success: the mate is among the first ``rank``
        enrolled subjects.
    threshold : float, keyword-only
        Score success: the mated score is at or over ``threshold`` (at or
        under it when ``attrs["score_kind"] == "distance"``).
    ties : {"strict", "fractional"}, keyword-only
        For ``rank`` only, a mate tied with other subjects (Annex F ranks
        ``mated_rank_min .. mated_rank_max``): ``"strict"`` (default) counts
        a success only if every tie order puts it within ``rank``
        (``mated_rank_max <= rank``), so the result is binary, as the
        variance estimators need; ``"fractional"`` gives the share of the
        tie range at or below ``rank`` (not binary: the estimators'
        ``p(1 - p)`` forms then only approximate).

    Returns
    -------
    xarray.DataArray
        ``success`` over the probe dims, float 1.0 / 0.0 (NaN where the
        probe has no mated score), with the probe coordinates; attrs
        ``rule`` and ``ties`` or ``score_kind``.

    See Also
    --------
    design_study : the design study on the result.

    References
    ----------
    seeds/000 section 3.1 (dichotomization step); METHODS.md sections 2-3.

    Examples
    --------
    >>> from bioxr import simulate, design
    >>> from bioxr.outcomes import outcomes
    >>> out = outcomes(simulate.photohead(8, 2, 5, seed=1))
    >>> success = design.dichotomize(out, rank=1)
    >>> success.dims
    ('subject', 'image', 'collection')
    >>> sorted(set(success.values.ravel().tolist()))
    [0.0, 1.0]
    >>> success.attrs["rule"]
    'rank-1 success: mated_rank_max <= 1'
    """
    if not isinstance(outcomes, xr.Dataset):
        raise TypeError(
            f"expected an outcome cube (Dataset from bioxr.outcomes.outcomes), got {type(outcomes).__name__}."
        )
    if (rank is None) == (threshold is None):
        raise ValueError("give exactly one of rank= or threshold=.")
    if rank is not None:
        rank = check_rank(rank, "rank")
        if ties not in TIES:
            raise ValueError(f"ties must be one of {TIES}, got {ties!r}.")
        _require(outcomes, ("mated_rank_min", "mated_rank_max"))
        lo, hi = outcomes["mated_rank_min"], outcomes["mated_rank_max"]
        if ties == "strict":
            success = xr.where(hi <= rank, 1.0, 0.0)
            rule = f"rank-{int(rank)} success: mated_rank_max <= {int(rank)}"
        else:
            success = xr.apply_ufunc(tie_share, lo, hi, rank)  # Annex F share of the range at or below rank
            rule = f"rank-{int(rank)} success: share of mated_rank_min..mated_rank_max at or below {int(rank)}"
        success = success.where(lo.notnull())
        attrs = {"rule": rule, "ties": ties}
    else:
        if ties != "strict":
            raise ValueError("ties= applies to rank= only.")
        threshold = float(threshold)
        _require(outcomes, ("mated_score",))
        kind = outcomes.attrs.get("score_kind", "similarity")
        score = outcomes["mated_score"]
        if kind == "distance":
            success, op = xr.where(score <= threshold, 1.0, 0.0), "<="
        else:
            success, op = xr.where(score >= threshold, 1.0, 0.0), ">="
        success = success.where(score.notnull())
        attrs = {"rule": f"score success: mated_score {op} {threshold!r}", "score_kind": kind}
    success = success.astype(float)
    success.name = "success"
    success.attrs = attrs
    return success


def _require(ds: xr.Dataset, names) -> None:
    missing = [n for n in names if n not in ds.data_vars]
    if missing:
        raise ValueError(f"the outcome cube lacks {missing}: compute it with bioxr.outcomes.outcomes(cube).")


# --------------------------------------------------------------------------
# Point estimators on (group, element) data
# --------------------------------------------------------------------------


def _v_srs(pg: np.ndarray, e: int) -> np.ndarray:
    p = pg.mean(axis=-1)
    return p * (1.0 - p) / (pg.shape[-1] * e)


def _v_st(pg: np.ndarray, e: int) -> np.ndarray:
    g = pg.shape[-1]
    return (e / (e - 1.0) * pg * (1.0 - pg)).sum(axis=-1) / (g * g * e)


def _v_cl(pg: np.ndarray, e: int) -> np.ndarray:
    g = pg.shape[-1]
    return pg.var(axis=-1, ddof=1) / g


_KERNELS = {"srs": _v_srs, "st": _v_st, "cl": _v_cl}
_LONG_NAMES = {
    "srs": "simple random sampling variance p(1-p)/(nm)",
    "st": "stratified variance sum_i s_i^2/(n^2 m), s_i^2 = m/(m-1) p_i(1-p_i)",
    "cl": "cluster variance s_b^2/n, s_b^2 = sum_i (p_i-p)^2/(n-1)",
}


def _dims(dims, what: str) -> tuple[str, ...]:
    if isinstance(dims, str):
        return (dims,)
    try:
        out = tuple(dims)
    except TypeError:
        raise TypeError(f"{what} must be a dimension name or a sequence of names, got {dims!r}.") from None
    if not out or not all(isinstance(d, str) for d in out):
        raise TypeError(f"{what} must be a dimension name or a non-empty sequence of names, got {dims!r}.")
    return out


def _estimate(x, name: str, group_dim, element_dim):
    kernel = _KERNELS[name]
    if isinstance(x, xr.DataArray):
        gd, ed = _dims(group_dim, "group_dim"), _dims(element_dim, "element_dim")
        missing = [d for d in (*gd, *ed) if d not in x.dims]
        if missing:
            raise ValueError(f"dims {missing} not in the array's dims {x.dims}.")
        if set(gd) & set(ed):
            raise ValueError(f"group_dim {gd} and element_dim {ed} overlap.")
        g = int(np.prod([x.sizes[d] for d in gd]))
        e = int(np.prod([x.sizes[d] for d in ed]))
        _check_sizes(name, g, e)

        def core(a):
            a = np.asarray(a, dtype=float)
            return kernel(a.reshape(a.shape[: a.ndim - len(gd) - len(ed)] + (g, e)).mean(axis=-1), e)

        out = xr.apply_ufunc(core, x, input_core_dims=[[*gd, *ed]], dask="allowed", keep_attrs=False)
        out.name = f"v_{name}"
        out.attrs = {
            "estimator": name,
            "long_name": _LONG_NAMES[name],
            "group_dim": ", ".join(gd),
            "element_dim": ", ".join(ed),
        }
        return out
    a = np.asarray(x, dtype=float)
    if a.ndim < 2:
        raise ValueError("expected an array with (group, element) as its last two axes.")
    _check_sizes(name, a.shape[-2], a.shape[-1])
    return kernel(a.mean(axis=-1), a.shape[-1])


def _check_sizes(name: str, g: int, e: int) -> None:
    if name == "st" and e < 2:
        raise ValueError("the stratified estimator needs at least 2 elements per group.")
    if name == "cl" and g < 2:
        raise ValueError("the cluster estimator needs at least 2 groups.")
    if g < 1 or e < 1:
        raise ValueError("need at least one group and one element.")


_ESTIMATOR_DOC = """
    Parameters
    ----------
    x : array_like or xarray.DataArray
        Binary outcomes (1 = success). An array has groups on axis -2 and
        elements on axis -1 (leading axes are kept); a DataArray names them.
    group_dim, element_dim : str or sequence of str, keyword-only
        For a DataArray: the dims whose combinations are the groups and the
        elements within a group (default ``"group"`` and ``"element"``).

    Returns
    -------
    numpy.ndarray or xarray.DataArray
        The estimate over the remaining axes / dims (a DataArray for a
        DataArray input, named ``v_{name}``).

    See Also
    --------
    variance_srs, variance_stratified, variance_cluster, design_study

    References
    ----------
    seeds/000 sections 2.1-2.2 (infinite-population forms); METHODS.md section 3.
"""


def variance_srs(x, *, group_dim="group", element_dim="element"):
    """Simple random sampling variance of the rate: ``p(1-p)/(nm)``.

    Every one of the ``n m`` outcomes is an independent draw from one
    population: the groups are ignored.
    {doc}
    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.design import variance_srs
    >>> x = np.array([[1, 1, 1, 0], [1, 0, 0, 0]])  # 2 groups of 4
    >>> float(variance_srs(x))  # p = 0.5: 0.25 / 8
    0.03125
    """
    return _estimate(x, "srs", group_dim, element_dim)


def variance_stratified(x, *, group_dim="group", element_dim="element"):
    """Stratified sampling variance: ``sum_i s_i^2 / (n^2 m)``.

    The same ``n`` groups (strata) are in every trial and ``m`` outcomes are
    drawn independently within each; ``s_i^2 = m/(m-1) p_i (1 - p_i)`` is
    the within-group sample variance of binary outcomes.
    {doc}
    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.design import variance_stratified
    >>> x = np.array([[1, 1, 1, 0], [1, 0, 0, 0]])
    >>> float(variance_stratified(x))  # s_i^2 = 4/3 * 3/16 = 0.25 each; 0.5 / (4 * 4)
    0.03125
    """
    return _estimate(x, "st", group_dim, element_dim)


def variance_cluster(x, *, group_dim="group", element_dim="element"):
    """Cluster sampling variance: ``s_b^2 / n`` with ``s_b^2 = sum_i (p_i - p)^2 / (n-1)``.

    The groups themselves are drawn at random every trial (two-stage
    sampling); the spread of the group rates carries both stages.
    {doc}
    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.design import variance_cluster
    >>> x = np.array([[1, 1, 1, 0], [1, 0, 0, 0]])
    >>> float(variance_cluster(x))  # p_i = 0.75, 0.25: s_b^2 = 0.125, / 2
    0.0625
    """
    return _estimate(x, "cl", group_dim, element_dim)


for _f, _n in ((variance_srs, "srs"), (variance_stratified, "st"), (variance_cluster, "cl")):
    _f.__doc__ = _f.__doc__.replace("{doc}", _ESTIMATOR_DOC.replace("{name}", _n))
