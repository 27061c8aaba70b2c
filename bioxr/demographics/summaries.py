"""Summaries of group rates cited by seeds/002: FDR, the Gini coefficient, GARBE, the max/min ratio.

Conventions: a Gini coefficient is 0 when all groups are equal (also all 0);
a max/min ratio is 1 when all are equal and ``inf`` when only the lowest is
0; NaN rates give NaN.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import xarray as xr

__all__ = ["fairness_discrepancy_rate", "gini", "garbe", "max_min_ratio"]


def fairness_discrepancy_rate(
    fmr_by_group: xr.DataArray, fnmr_by_group: xr.DataArray, *, alpha: float = 0.5, dim: Hashable = "group"
) -> xr.Dataset:
    """Fairness Discrepancy Rate: ``1 - (alpha A + (1 - alpha) B)``.

    ``A = max_{g,h} |FMR_g - FMR_h|`` and ``B = max_{g,h} |FNMR_g -
    FNMR_h|`` (the ranges of the group rates). 1 is perfectly fair; lower
    is less fair.

    Parameters
    ----------
    fmr_by_group, fnmr_by_group : xarray.DataArray
        Group rates with dim ``dim`` (same groups); other dims (a
        ``threshold``, say) broadcast and are kept.
    alpha : float, keyword-only
        Weight of the FMR gap, in [0, 1].
    dim : str, keyword-only
        The groups' dimension, default ``"group"``.

    Returns
    -------
    xarray.Dataset
        ``fdr``, ``fmr_gap`` (``A``), ``fnmr_gap`` (``B``); attrs ``method``,
        ``alpha``. NaN rates give NaN.

    See Also
    --------
    garbe, max_min_ratio

    References
    ----------
    de Freitas Pereira & Marcel, "Fairness in biometrics: a figure of merit
    to assess biometric verification systems" (2021); METHODS.md section 5.

    Examples
    --------
    >>> import xarray as xr
    >>> from bioxr.demographics import fairness_discrepancy_rate
    >>> fmr = xr.DataArray([0.001, 0.002, 0.004], dims="group", coords={"group": ["A", "B", "C"]})
    >>> fnmr = xr.DataArray([0.02, 0.05, 0.03], dims="group", coords={"group": ["A", "B", "C"]})
    >>> round(float(fairness_discrepancy_rate(fmr, fnmr).fdr), 4)
    0.9835
    """
    alpha = _check_alpha(alpha)
    fmr = _rates(fmr_by_group, dim, "fmr_by_group")
    fnmr = _rates(fnmr_by_group, dim, "fnmr_by_group")
    fmr, fnmr = _align_groups(fmr, fnmr, dim)
    a = fmr.max(dim, skipna=False) - fmr.min(dim, skipna=False)
    b = fnmr.max(dim, skipna=False) - fnmr.min(dim, skipna=False)
    ds = xr.Dataset({"fdr": 1 - (alpha * a + (1 - alpha) * b), "fmr_gap": a, "fnmr_gap": b})
    ds["fdr"].attrs["long_name"] = "fairness discrepancy rate, 1 - (alpha A + (1 - alpha) B)"
    ds["fmr_gap"].attrs["long_name"] = "A = max over group pairs of |FMR_g - FMR_h|"
    ds["fnmr_gap"].attrs["long_name"] = "B = max over group pairs of |FNMR_g - FNMR_h|"
    ds.attrs = {"method": "FDR (de Freitas Pereira & Marcel): 1 is fair", "alpha": alpha}
    return ds


def gini(rates: xr.DataArray, *, dim: Hashable = "group") -> xr.DataArray:
    """Gini coefficient of group rates, with the small-sample factor of GARBE.

    ``Gini(x) = n / (n - 1) * sum_i sum_j |x_i - x_j| / (2 n^2 mean(x))``:
    0 when all groups are equal (also all 0), 1 when one group has every
    error.

    Parameters
    ----------
    rates : xarray.DataArray
        Non-negative rates over ``dim`` (at least two groups).
    dim : str, keyword-only

    Returns
    -------
    xarray.DataArray
        The coefficient, over the other dims (NaN where a rate is NaN).

    Examples
    --------
    >>> import xarray as xr
    >>> from bioxr.demographics import gini
    >>> float(gini(xr.DataArray([0.0, 0.0, 0.3], dims="group")))
    1.0
    """
    x = _rates(rates, dim, "rates")
    if bool((x < 0).any()):
        raise ValueError("rates must be non-negative for a Gini coefficient.")
    out = xr.apply_ufunc(_gini_last_axis, x, input_core_dims=[[dim]], keep_attrs=False)
    out.attrs["long_name"] = "Gini coefficient, n/(n-1) sum_ij |x_i - x_j| / (2 n^2 mean)"
    return out


def garbe(
    fmr_by_group: xr.DataArray, fnmr_by_group: xr.DataArray, *, alpha: float = 0.5, dim: Hashable = "group"
) -> xr.Dataset:
    """Gini Aggregation Rate for Biometric Equitability: ``alpha Gini(FMR) + (1 - alpha) Gini(FNMR)``.

    0 is perfectly equitable; higher is less (the opposite sense of FDR).

    Parameters
    ----------
    fmr_by_group, fnmr_by_group : xarray.DataArray
        Non-negative group rates over ``dim`` (same groups, at least two).
    alpha : float, keyword-only
        Weight of the FMR term, in [0, 1].
    dim : str, keyword-only

    Returns
    -------
    xarray.Dataset
        ``garbe``, ``fmr_gini``, ``fnmr_gini`` (see :func:`gini`); attrs
        ``method``, ``alpha``.

    See Also
    --------
    gini, fairness_discrepancy_rate

    References
    ----------
    Howard, Laird, Rubin, Sirotin, Tipton & Vemury, "Evaluating proposed
    fairness models for face recognition algorithms" (2022); METHODS.md
    section 5.

    Examples
    --------
    >>> import xarray as xr
    >>> from bioxr.demographics import garbe
    >>> fmr = xr.DataArray([0.001, 0.001], dims="group")
    >>> fnmr = xr.DataArray([0.01, 0.03], dims="group")
    >>> round(float(garbe(fmr, fnmr).garbe), 4)
    0.25
    """
    alpha = _check_alpha(alpha)
    fmr = _rates(fmr_by_group, dim, "fmr_by_group")
    fnmr = _rates(fnmr_by_group, dim, "fnmr_by_group")
    fmr, fnmr = _align_groups(fmr, fnmr, dim)
    g_fmr = gini(fmr, dim=dim)
    g_fnmr = gini(fnmr, dim=dim)
    ds = xr.Dataset({"garbe": alpha * g_fmr + (1 - alpha) * g_fnmr, "fmr_gini": g_fmr, "fnmr_gini": g_fnmr})
    ds["garbe"].attrs["long_name"] = "alpha Gini(FMR_g) + (1 - alpha) Gini(FNMR_g)"
    ds.attrs = {"method": "GARBE (Howard et al.): 0 is equitable", "alpha": alpha}
    return ds


def max_min_ratio(rates: xr.DataArray, *, dim: Hashable = "group") -> xr.Dataset:
    """Ratio of the highest to the lowest group rate (NIST's inequity view).

    Parameters
    ----------
    rates : xarray.DataArray
        Non-negative rates over ``dim`` (at least two groups).
    dim : str, keyword-only

    Returns
    -------
    xarray.Dataset
        ``ratio`` (``max / min``; 1 when all are equal, also all 0; ``inf``
        when the lowest is 0 and the highest not), ``max_rate``,
        ``min_rate``, ``max_group`` and ``min_group`` (labels of the
        extremes). NaN rates give NaN.

    Examples
    --------
    >>> import xarray as xr
    >>> from bioxr.demographics import max_min_ratio
    >>> r = max_min_ratio(xr.DataArray([0.02, 0.05, 0.01], dims="group", coords={"group": list("ABC")}))
    >>> float(r.ratio), str(r.max_group.values), str(r.min_group.values)
    (5.0, 'B', 'C')
    """
    x = _rates(rates, dim, "rates")
    if bool((x < 0).any()):
        raise ValueError("rates must be non-negative.")
    if dim not in x.coords:
        x = x.assign_coords({dim: np.arange(x.sizes[dim])})
    hi = x.max(dim, skipna=False)
    lo = x.min(dim, skipna=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = xr.where(hi == lo, 1.0, hi / lo).where(hi.notnull() & lo.notnull())
    ds = xr.Dataset({"ratio": ratio, "max_rate": hi, "min_rate": lo})
    if not bool(x.isnull().any()):
        ds["max_group"] = x.idxmax(dim)
        ds["min_group"] = x.idxmin(dim)
    ds["ratio"].attrs["long_name"] = "max over groups / min over groups"
    ds.attrs = {"method": "max/min ratio of group rates: 1 where all equal, inf where only the minimum is 0"}
    return ds



def _gini_last_axis(a: np.ndarray) -> np.ndarray:
    n = a.shape[-1]
    if n < 2:
        raise ValueError("a Gini coefficient needs at least two groups.")
    s = np.sort(a, axis=-1)
    i = np.arange(1, n + 1)
    pair_sum = 2.0 * ((2 * i - n - 1) * s).sum(-1)  # sum_i sum_j |x_i - x_j|
    mean = a.mean(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = n / (n - 1) * pair_sum / (2.0 * n**2 * mean)
    g = np.where(pair_sum == 0, 0.0, g)
    return np.where(np.isnan(a).any(-1), np.nan, g)


def _rates(x, dim, name) -> xr.DataArray:
    if isinstance(x, xr.Dataset):
        raise TypeError(f"{name} must be a DataArray of group rates (pass e.g. result['fnmr']), not a Dataset.")
    if not isinstance(x, xr.DataArray):
        raise TypeError(f"{name} must be an xarray.DataArray with a {dim!r} dim, got {type(x).__name__}.")
    if dim not in x.dims:
        raise ValueError(f"{name} has no {dim!r} dim; its dims are {x.dims}. Pass dim= the groups' dimension.")
    if x.sizes[dim] < 2:
        raise ValueError(f"{name} has {x.sizes[dim]} group(s); a comparison needs at least two.")
    return x


def _align_groups(a, b, dim):
    if dim in a.coords and dim in b.coords:
        if not np.array_equal(np.asarray(a[dim].values), np.asarray(b[dim].values)):
            raise ValueError(f"the FMR and FNMR rates must have the same {dim!r} labels in the same order.")
    elif a.sizes[dim] != b.sizes[dim]:
        raise ValueError(f"the FMR and FNMR rates have different numbers of groups along {dim!r}.")
    return a, b


def _check_alpha(alpha) -> float:
    alpha = float(alpha)
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha={alpha!r} must lie in [0, 1].")
    return alpha
