"""Demographic differentials: are the FNMRs of G groups detectably different?

Two approaches of seeds/002 (METHODS.md section 5), both on per-individual
counts: ``errors`` ``e_i`` (false non-matches) in ``attempts`` ``m_i`` of
individual ``i`` (from :func:`group_counts` or
:func:`bioxr.correlation.attempt_counts`), with a ``group`` label per
individual. Attempts by one person are correlated (METHODS.md section 4), so
both resample whole individuals, never single attempts.

- :func:`differential_test`: a bootstrap test of H0 "all groups share one
  FNMR". The statistic is the one-way analysis-of-variance F on the
  individuals' error rates ``r_i = e_i / m_i``, weighted by attempts (so a
  group's mean rate is its FNMR ``p_g = E_g / M_g``):

      ``F = [sum_g M_g (p_g - p)^2 / (G - 1)] / [sum_g sum_{i in g} m_i (r_i - p_g)^2 / (n - G)]``

  with ``p = E / M`` the pooled FNMR and ``n`` the number of individuals.
  Its reference distribution under H0 comes from drawing ``n`` individuals
  with replacement from the pooled data (all their attempts together) and
  dealing them into groups of the observed sizes; the p-value is the share
  of replicates at or above the observed F, counted as ``(1 + #{F* >= F}) /
  (1 + B)`` so it is never 0 (the usual Monte Carlo p-value).
- :func:`margin_of_error`: under the same resampling, ``D* = max_g |p*_g -
  p*|``; the margin ``M`` is its ``level`` quantile, and a group whose FNMR
  lies outside ``p +- M`` is detectably different from the rest. The same
  for the ratio form ``max_g max(p_g / p, p / p_g)``. ``M`` grows with the
  number of groups (multiplicity) and shrinks with the number of
  individuals.

And the summaries cited there, on per-group rates:
:func:`fairness_discrepancy_rate` (FDR, de Freitas Pereira & Marcel),
:func:`garbe` (Gini aggregation, Howard et al.) and :func:`max_min_ratio`.

Conventions (stated in the results' attrs): the F of data without any
variation (``0 / 0``) is 0, with variation between but none within groups
``inf``; F is NaN where undefined (fewer than two groups with attempts, or
no more individuals than groups); replicates with a NaN F count as at or
above the observed one (conservative). Quantiles are order statistics
(``numpy.quantile(..., method="inverted_cdf")``: the smallest replicate
value with at least ``level`` of the replicates at or below it). A group
ratio is 1 where ``p_g == p`` (also both 0) and ``inf`` where exactly one of
them is 0.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
import xarray as xr

from .correlation import INDIVIDUAL, _check_counts_dataset, attempt_counts
from .intervals import BOUNDS
from .simulate import _entropy, _rng

__all__ = [
    "group_counts",
    "differential_test",
    "margin_of_error",
    "fairness_discrepancy_rate",
    "garbe",
    "gini",
    "max_min_ratio",
]

_BLOCK_ELEMENTS = 4_000_000  # gathered values per block of replicates (memory bound)
_DRAW_KEY = 11  # stream of the null draws under the root seed
_H0 = (
    "H0: all groups share one FNMR; n individuals drawn with replacement from the pooled data "
    "(all attempts of an individual together) and dealt into groups of the observed sizes"
)
_F_TEXT = (
    "attempt-weighted one-way ANOVA F on individual error rates e_i/m_i: "
    "[sum_g M_g (p_g - p)^2 / (G - 1)] / [sum_g sum_i m_i (e_i/m_i - p_g)^2 / (n - G)]"
)
_F_CONVENTIONS = (
    "F = 0 when there is no variation at all (0/0), inf when all variation is between groups; "
    "NaN when fewer than 2 groups have attempts or n <= G; NaN replicates count as >= observed"
)
_QUANTILE = "order statistic: numpy.quantile(method='inverted_cdf') of the replicates"


def group_counts(cube: xr.DataArray, threshold, *, by: Hashable = "subject", group: Hashable = "group", dim=None) -> xr.Dataset:
    """Per-individual false non-matches and attempts, with each individual's group.

    A thin layer on :func:`bioxr.correlation.attempt_counts` that checks the
    ``group`` coordinate survives on ``individual`` (it must be constant
    within each individual).

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube with a ``group`` coordinate on its probe dims.
    threshold : float or array_like
        Decision threshold(s); a sequence becomes the ``threshold`` dim.
    by : str, keyword-only
        Coordinate naming the individual (default ``"subject"``).
    group : str, keyword-only
        Coordinate naming the demographic group (default ``"group"``).
    dim : str, sequence of str or None, keyword-only
        Probe dims to pool over (default all), as in ``attempt_counts``.

    Returns
    -------
    xarray.Dataset
        ``errors`` and ``attempts`` over ``individual`` (and ``threshold``
        and kept dims), with the ``group`` coordinate on ``individual``.

    See Also
    --------
    bioxr.correlation.attempt_counts, differential_test, margin_of_error

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import group_counts
    >>> cube = bioxr.simulate.gaussian(n_subjects=6, n_samples=3, groups={"A": 0.0, "B": -0.5}, seed=2)
    >>> counts = group_counts(cube, 2.0)
    >>> counts.group.values.tolist()
    ['A', 'B', 'A', 'B', 'A', 'B']
    """
    if group not in cube.coords:
        raise ValueError(
            f"group={group!r} is not a coordinate of the cube; its coordinates are {sorted(map(str, cube.coords))}. "
            "Add the demographic label of each probe as a coordinate on the probe dims."
        )
    counts = attempt_counts(cube, threshold, by=by, dim=dim)
    if group not in counts.coords:
        raise ValueError(
            f"the {group!r} coordinate is not constant within each {by!r}: every individual must belong to one group."
        )
    counts.attrs["group"] = str(group)
    return counts


def differential_test(
    counts: xr.Dataset,
    *,
    group: Hashable = "group",
    n_replicates: int = 2000,
    seed=0,
    dim: Hashable = INDIVIDUAL,
) -> xr.Dataset:
    """Bootstrap test that G demographic groups share one FNMR.

    Parameters
    ----------
    counts : xarray.Dataset
        Per-individual ``errors`` and ``attempts`` over ``dim``, with a
        ``group`` coordinate (or variable) on ``dim`` (see
        :func:`group_counts`). Other dims (``threshold``, kept probe dims)
        are kept; every slice is tested with the same resampled individuals.
    group : str, keyword-only
        Name of the group label on ``dim``; also the name of the groups'
        dimension in the result.
    n_replicates : int, keyword-only
        Bootstrap replicates ``B`` of the null distribution.
    seed : int, SeedSequence or numpy Generator, keyword-only
        The same seed gives the same replicates (also in
        :func:`margin_of_error`).
    dim : str, keyword-only
        The individuals' dimension, default ``"individual"``.

    Returns
    -------
    xarray.Dataset
        ``statistic`` (F) and ``p_value`` (``(1 + #{F* >= F}) / (1 + B)``),
        ``df_between`` (``G - 1``), ``df_within`` (``n - G``),
        ``pooled_fnmr``; over ``group``: ``fnmr``, ``errors``, ``attempts``,
        ``n_individuals``; ``n_replicates``. attrs ``method``,
        ``statistic``, ``null``, ``p_value_rule``, ``conventions``,
        ``group``.

    See Also
    --------
    margin_of_error, group_counts

    References
    ----------
    seeds/002 (Schuckers et al., statistical methods for differences in FNMR
    across demographic groups), section IV; METHODS.md section 5.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import group_counts, differential_test
    >>> cube = bioxr.simulate.gaussian(n_subjects=120, n_samples=4, groups={"A": 0.0, "B": -1.0}, seed=1)
    >>> res = differential_test(group_counts(cube, 2.0), n_replicates=199, seed=0)
    >>> res.fnmr.dims
    ('group',)
    >>> bool(res.p_value < 0.05)
    True
    """
    data = _prepare(counts, group, dim)
    n_replicates = _check_replicates(n_replicates)
    obs = data.observed()
    null_f = np.empty((n_replicates, data.n_slices))
    for lo, sums in data.null_sums(n_replicates, seed):
        f = _f_statistic(*sums)
        null_f[lo : lo + len(f)] = f
    f_obs = obs["statistic"][0]
    p_value = _mc_p_value(null_f, f_obs)

    ds = data.per_group(obs)
    ds["statistic"] = data.wrap(f_obs)
    ds["p_value"] = data.wrap(p_value)
    ds["df_between"] = data.wrap(obs["df_between"][0])
    ds["df_within"] = data.wrap(obs["df_within"][0])
    ds["n_replicates"] = n_replicates
    ds["statistic"].attrs["long_name"] = "F: between-group over within-group mean square of individual error rates"
    ds["p_value"].attrs["long_name"] = "share of null replicates with F* >= F, (1 + #) / (1 + B)"
    ds.attrs = {
        "method": "bootstrap F test of equal FNMR across groups, resampling individuals (seeds/002)",
        "statistic": _F_TEXT,
        "null": _H0,
        "p_value_rule": "(1 + #{F* >= F}) / (1 + n_replicates), F* >= F up to a relative 1e-9",
        "conventions": _F_CONVENTIONS,
        "group": str(group),
    }
    return ds[["statistic", "p_value", "df_between", "df_within", "pooled_fnmr", "fnmr", "errors",
               "attempts", "n_individuals", "n_replicates"]]


def margin_of_error(
    counts: xr.Dataset,
    *,
    group: Hashable = "group",
    level: float = 0.95,
    n_replicates: int = 2000,
    seed=0,
    dim: Hashable = INDIVIDUAL,
) -> xr.Dataset:
    """Margin of error for the FNMR of G groups around the pooled FNMR.

    Under H0 (one FNMR for all) individuals are resampled as in
    :func:`differential_test`; in each replicate ``D* = max_g |p*_g - p*|``
    and ``R* = max_g max(p*_g / p*, p* / p*_g)``. The margin ``M`` is the
    ``level`` quantile of ``D*``: a group with ``|p_g - p| > M`` is
    detectably different. ``ratio_margin`` is the same for ``R*``.

    Parameters
    ----------
    counts : xarray.Dataset
        Per-individual ``errors`` and ``attempts`` over ``dim`` with a
        ``group`` label on ``dim`` (see :func:`group_counts`).
    group : str, keyword-only
        Name of the group label; also the groups' dimension in the result.
    level : float, keyword-only
        Quantile of the null maxima, in (0, 1); default 0.95.
    n_replicates : int, keyword-only
    seed : int, SeedSequence or numpy Generator, keyword-only
    dim : str, keyword-only
        The individuals' dimension, default ``"individual"``.

    Returns
    -------
    xarray.Dataset
        ``margin`` (``M``), ``pooled_fnmr`` (``p``), ``margin_interval``
        (``p -+ M`` clipped to [0, 1], dim ``bound``), ``max_difference``
        (observed ``max_g |p_g - p|``) and its ``p_value``; ``ratio_margin``
        and ``max_ratio`` (observed ``R``); over ``group``: ``fnmr``,
        ``difference`` (``p_g - p``), ``outside`` (``|p_g - p| > M``),
        ``ratio`` (``max(p_g / p, p / p_g)``), ``outside_ratio`` (``ratio >
        ratio_margin``), ``errors``, ``attempts``, ``n_individuals``;
        ``n_replicates``. attrs ``method``, ``level``, ``null``,
        ``quantile``, ``group``.

    See Also
    --------
    differential_test

    References
    ----------
    seeds/002, section IV (margin of error); METHODS.md section 5.

    Examples
    --------
    >>> from bioxr.correlation import simulate_clustered_decisions
    >>> from bioxr.demographics import margin_of_error
    >>> counts = simulate_clustered_decisions(300, 5, rate=0.05, rho=0.1, seed=3)
    >>> counts = counts.assign_coords(group=("individual", list("ABC") * 100))
    >>> res = margin_of_error(counts, n_replicates=500, seed=1)
    >>> 0.005 < float(res.margin) < 0.05
    True
    >>> res.margin_interval.dims, res.outside.dims
    (('bound',), ('group',))
    """
    if not 0 < level < 1:
        raise ValueError(f"level={level!r} must lie strictly between 0 and 1.")
    data = _prepare(counts, group, dim)
    n_replicates = _check_replicates(n_replicates)
    obs = data.observed()
    null_d = np.empty((n_replicates, data.n_slices))
    null_r = np.empty((n_replicates, data.n_slices))
    for lo, sums in data.null_sums(n_replicates, seed):
        d, r = _max_deviations(*sums)
        null_d[lo : lo + len(d)] = d
        null_r[lo : lo + len(r)] = r
    margin = np.quantile(null_d, level, axis=0, method="inverted_cdf")
    ratio_margin = np.quantile(null_r, level, axis=0, method="inverted_cdf")
    d_obs, r_obs = _max_deviations(*obs["sums"])

    ds = data.per_group(obs)
    p = ds["pooled_fnmr"]
    ds["margin"] = data.wrap(margin)
    ds["difference"] = ds["fnmr"] - p
    ds["outside"] = np.abs(ds["difference"]) > ds["margin"]
    lower = (p - ds["margin"]).clip(0, 1)
    upper = (p + ds["margin"]).clip(0, 1)
    band = xr.concat([lower, upper], dim="bound").assign_coords(bound=list(BOUNDS))
    ds["margin_interval"] = band.transpose(*lower.dims, "bound")
    ds["max_difference"] = data.wrap(d_obs[0])
    ds["p_value"] = data.wrap(_mc_p_value(null_d, d_obs[0]))
    ratio = data.wrap_groups(_group_ratios(*obs["sums"])[0])
    ds["ratio"] = ratio
    ds["max_ratio"] = data.wrap(r_obs[0])
    ds["ratio_margin"] = data.wrap(ratio_margin)
    ds["outside_ratio"] = ratio > ds["ratio_margin"]
    ds["n_replicates"] = n_replicates
    ds["margin"].attrs["long_name"] = f"{level:.0%} quantile of max_g |p*_g - p*| under H0"
    ds["margin_interval"].attrs["long_name"] = "pooled FNMR -+ margin, clipped to [0, 1]"
    ds["outside"].attrs["long_name"] = "group FNMR outside pooled FNMR -+ margin (detectably different)"
    ds["p_value"].attrs["long_name"] = "share of null replicates with D* >= D, (1 + #) / (1 + B)"
    ds["ratio"].attrs["long_name"] = "max(p_g / p, p / p_g)"
    ds["ratio_margin"].attrs["long_name"] = f"{level:.0%} quantile of max_g max(p*_g / p*, p* / p*_g) under H0"
    ds.attrs = {
        "method": "bootstrap margin of error for group FNMRs around the pooled FNMR (seeds/002)",
        "level": float(level),
        "null": _H0,
        "quantile": _QUANTILE,
        "ratio_convention": "ratio 1 where p_g == p (also both 0), inf where exactly one is 0",
        "p_value_rule": "(1 + #{D* >= D}) / (1 + n_replicates)",
        "group": str(group),
    }
    return ds[["margin", "pooled_fnmr", "margin_interval", "max_difference", "p_value", "ratio_margin",
               "max_ratio", "fnmr", "difference", "outside", "ratio", "outside_ratio", "errors", "attempts",
               "n_individuals", "n_replicates"]]


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


# --------------------------------------------------------------------------
# internals
# --------------------------------------------------------------------------


class _Prepared:
    """Per-individual sufficient statistics, sorted by group, flattened over the other dims."""

    def __init__(self, counts: xr.Dataset, group: Hashable, dim: Hashable):
        label = counts[group]
        codes, uniques = pd.factorize(np.asarray(label.values), sort=True, use_na_sentinel=True)
        if (codes < 0).any():
            raise ValueError(f"{int((codes < 0).sum())} individual(s) have no {group!r} label; drop them first.")
        if len(uniques) < 2:
            raise ValueError(
                f"only one group ({uniques[0]!r}) in {group!r}: a differential needs at least two groups."
            )
        e, m = xr.broadcast(counts["errors"], counts["attempts"])
        extra = tuple(d for d in e.dims if d != dim)
        e = e.transpose(dim, *extra)
        m = m.transpose(dim, *extra)
        self.extra = extra
        self.extra_shape = tuple(e.sizes[d] for d in extra)
        self.n_slices = int(np.prod(self.extra_shape)) if extra else 1
        self.order = np.argsort(codes, kind="stable")
        n = len(codes)
        ev = np.asarray(e.values, dtype=float).reshape(n, self.n_slices)[self.order]
        mv = np.asarray(m.values, dtype=float).reshape(n, self.n_slices)[self.order]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(mv > 0, ev**2 / mv, 0.0)
        self.stats = np.concatenate([ev, mv, q, (mv > 0).astype(float)], axis=1)
        self.sizes = np.bincount(codes, minlength=len(uniques))
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        self.n = n
        self.group = group
        self.labels = np.asarray(uniques)
        self.coords = {
            name: c.variable for name, c in e.coords.items() if c.dims and set(c.dims) <= set(extra)
        }
        self.coords.update({name: c.variable for name, c in e.coords.items() if not c.dims})

    def _sums(self, idx: np.ndarray):
        """Group sums ``(E, M, Q, H)``, each (replicates, groups, slices), of the individuals in ``idx``."""
        gathered = self.stats[idx]  # (b, n, 4K)
        sums = np.add.reduceat(gathered, self.starts, axis=1)
        return tuple(np.split(sums, 4, axis=2))

    def observed(self) -> dict:
        sums = self._sums(np.arange(self.n)[None, :])
        f, df1, df2 = _f_statistic(*sums, with_df=True)
        return {"sums": sums, "statistic": f, "df_between": df1, "df_within": df2}

    def null_sums(self, n_replicates: int, seed):
        """Blocks of null replicates: ``(first replicate, group sums)``; one stream whatever the block size."""
        rng = _rng(_entropy(seed), _DRAW_KEY)
        block = max(1, _BLOCK_ELEMENTS // (self.n * self.stats.shape[1]))
        for lo in range(0, n_replicates, block):
            b = min(block, n_replicates - lo)
            idx = rng.integers(0, self.n, size=(b, self.n), dtype=np.int64)
            yield lo, self._sums(idx)

    def wrap(self, values) -> xr.DataArray:
        values = np.asarray(values).reshape(self.extra_shape)
        return xr.DataArray(values, dims=self.extra, coords=self.coords)

    def wrap_groups(self, values) -> xr.DataArray:
        values = np.asarray(values).reshape((len(self.labels), *self.extra_shape))
        coords = dict(self.coords)
        coords[self.group] = self.labels
        return xr.DataArray(values, dims=(self.group, *self.extra), coords=coords)

    def per_group(self, obs: dict) -> xr.Dataset:
        e, m, _, h = (s[0] for s in obs["sums"])
        with np.errstate(divide="ignore", invalid="ignore"):
            fnmr = np.where(m > 0, e / m, np.nan)
            pooled = e.sum(0) / m.sum(0)
        ds = xr.Dataset(
            {
                "pooled_fnmr": self.wrap(np.where(m.sum(0) > 0, pooled, np.nan)),
                "fnmr": self.wrap_groups(fnmr),
                "errors": self.wrap_groups(e.astype(np.int64)),
                "attempts": self.wrap_groups(m.astype(np.int64)),
                "n_individuals": self.wrap_groups(h.astype(np.int64)),
            }
        )
        ds["pooled_fnmr"].attrs["long_name"] = "pooled FNMR, sum e_i / sum m_i"
        ds["fnmr"].attrs["long_name"] = "FNMR of the group, E_g / M_g"
        ds["errors"].attrs["long_name"] = "false non-matches of the group"
        ds["attempts"].attrs["long_name"] = "attempts (mated comparisons) of the group"
        ds["n_individuals"].attrs["long_name"] = "individuals of the group with at least one attempt"
        return ds


def _prepare(counts, group, dim) -> _Prepared:
    _check_counts_dataset(counts, dim)
    if group not in counts.variables:
        raise ValueError(
            f"counts has no {group!r} coordinate; its coordinates are {sorted(map(str, counts.coords))}. "
            f"Label each individual's group on {dim!r} (group_counts does it from a score cube)."
        )
    if counts[group].dims != (dim,):
        raise ValueError(f"counts[{group!r}] must lie on {dim!r} alone; its dims are {counts[group].dims}.")
    return _Prepared(counts, group, dim)


def _check_replicates(n_replicates) -> int:
    if isinstance(n_replicates, bool) or not isinstance(n_replicates, (int, np.integer)) or n_replicates < 1:
        raise ValueError(f"n_replicates={n_replicates!r} must be a positive int.")
    return int(n_replicates)


def _f_statistic(e, m, q, h, *, with_df: bool = False):
    """F of each replicate (and slice) from group sums, shape (b, G, K) each."""
    present = m > 0
    big_e, big_m = e.sum(1), m.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = big_e / big_m
        pg = np.where(present, e / m, p[:, None, :])
        between = (m * (pg - p[:, None, :]) ** 2).sum(1)
        within_g = np.where(present, q - np.where(present, e**2 / m, 0.0), 0.0)
        within = np.clip(within_g, 0.0, None).sum(1)
        within = np.where(within <= 1e-10 * q.sum(1), 0.0, within)  # rounding of equal rates
        g_eff = present.sum(1)
        df1 = g_eff - 1
        df2 = h.sum(1) - g_eff
        f = (between / df1) / (within / df2)
        f = np.where(between == 0, 0.0, np.where(within == 0, np.inf, f))
    f = np.where((df1 >= 1) & (df2 >= 1) & (big_m > 0), f, np.nan)
    if with_df:
        return f, df1.astype(float), df2.astype(float)
    return f


def _group_ratios(e, m, q=None, h=None):
    """``max(p_g / p, p / p_g)`` per replicate and group: 1 where equal, NaN without attempts."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (e.sum(1) / m.sum(1))[:, None, :]
        pg = np.where(m > 0, e / m, np.nan)
        r = np.where(pg == p, 1.0, np.maximum(pg / p, p / pg))
    return np.where(np.isnan(pg) | np.isnan(p), np.nan, r)


def _max_deviations(e, m, q=None, h=None):
    """``D = max_g |p_g - p|`` and ``R = max_g max(p_g / p, p / p_g)`` per replicate and slice."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (e.sum(1) / m.sum(1))[:, None, :]
        pg = np.where(m > 0, e / m, np.nan)
    d = np.fmax.reduce(np.abs(pg - p), axis=1)
    r = np.fmax.reduce(_group_ratios(e, m), axis=1)
    return d, r


def _mc_p_value(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``(1 + #{null >= observed}) / (1 + B)`` per slice; NaN null values count as >=."""
    with np.errstate(invalid="ignore"):
        bar = np.where(np.isinf(observed), observed, observed - 1e-9 * np.abs(observed))
        hits = (null >= bar) | np.isnan(null)
    p = (1 + hits.sum(0)) / (1 + null.shape[0])
    return np.where(np.isnan(observed), np.nan, p)


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
