"""Are the FNMRs of G groups detectably different? The bootstrap test and the margin of error.

See :mod:`bioxr.demographics` for the statistics and the two nulls; the
draws and statistics live in :mod:`bioxr.demographics._null`.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable

import numpy as np
import xarray as xr

from .._core import check_level, check_replicates
from ..correlation import INDIVIDUAL, _check_counts_dataset, attempt_counts
from ..intervals import BOUNDS
from . import _null
from ._null import NULLS, SmallGroupWarning, check_null

__all__ = ["NULLS", "SmallGroupWarning", "group_counts", "differential_test", "margin_of_error"]

_H0 = {
    "equal-rate": "H0: all groups share one FNMR (attempt-weighted); they may differ in attempts per person and in "
                  "the correlation of a person's attempts",
    "exchangeable": "H0: the groups are exchangeable: individuals (all their attempts together) could be dealt among "
                    "the groups at random. It implies one FNMR but also one distribution of attempts per person and "
                    "one correlation, and rejects (too often) when only those differ",
}
_RESAMPLING = {
    "equal-rate": (
        "within each group, its individuals drawn with replacement with exponentially tilted weights w_i ~ "
        "exp(t (e_i - p m_i)), t such that the group's weighted FNMR is the pooled p (Efron 1981; Davison & Hinkley "
        "1997, 4.4); a group whose individuals all lie on one side of p has its counts scaled by p / p_g, and a "
        "group without errors stays without errors (the test then cannot call it better)"
    ),
    "exchangeable": ("n individuals drawn with replacement from the pooled data (all attempts of an individual "
                     "together) and dealt into groups of the observed sizes (seeds/002)"),
}
_STATISTIC = {
    "equal-rate": (
        "Wald-type chi-square W = sum_g (p_g - p_w)^2 / V_g, p_w = sum_g p_g / V_g / sum_g 1 / V_g, V_g the "
        "cluster-robust (CR1) variance of the group FNMR, n_g / (n_g - 1) sum_i (e_i - p_g m_i)^2 / M_g^2, "
        "floored at the binomial p (1 - p) / M_g"
    ),
    "exchangeable": (
        "attempt-weighted one-way ANOVA F on individual error rates e_i/m_i: "
        "[sum_g M_g (p_g - p)^2 / (G - 1)] / [sum_g sum_i m_i (e_i/m_i - p_g)^2 / (n - G)]"
    ),
}
_CONVENTIONS = {
    "equal-rate": ("W = 0 when p is 0 or 1 (no variation); a group of one individual has V_g = p (1 - p) sum m_i^2 "
                   "/ M_g^2 (perfectly correlated attempts); groups without attempts are left out; NaN when fewer "
                   "than 2 groups have attempts; NaN replicates count as >= observed"),
    "exchangeable": ("F = 0 when there is no variation at all (0/0), inf when all variation is between groups; NaN "
                     "when fewer than 2 groups have attempts or n <= G; NaN replicates count as >= observed"),
}
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
    null: str = "equal-rate",
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
        are kept; every slice is tested on its own, with common random
        numbers.
    group : str, keyword-only
        Name of the group label on ``dim``; also the name of the groups'
        dimension in the result.
    null : {"equal-rate", "exchangeable"}, keyword-only
        ``"equal-rate"`` (default): H0 "every group has the same FNMR",
        whatever their attempts per person and correlations; the Wald-type
        statistic ``W`` with each group's own cluster-robust variance,
        calibrated by resampling each group's individuals, tilted to the
        pooled FNMR. ``"exchangeable"``: the F test of seeds/002, whose
        null deals the pooled individuals among the groups; it also rejects
        when groups differ only in attempts per person or in correlation
        (see :mod:`bioxr.demographics` for the measured levels).
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
        ``statistic`` (``W`` or ``F``) and ``p_value`` (``(1 + #{T* >= T})
        / (1 + B)``), ``df_between`` (``G - 1``), ``df_within`` (``n -
        G``), ``pooled_fnmr``; over ``group``: ``fnmr``, ``errors``,
        ``attempts``, ``n_individuals`` and (equal-rate) ``standard_error``
        (``sqrt(V_g)``); ``n_replicates``. attrs ``method``, ``null`` (the
        option), ``h0``, ``resampling``, ``statistic``, ``p_value_rule``,
        ``conventions``, ``group``.

    Warns
    -----
    SmallGroupWarning
        With the equal-rate null, when a group with repeated attempts has
        fewer than 50 individuals: its level is then not assured (measured
        up to 20% at a nominal 5% for 20-40 people with strongly correlated
        attempts; see :mod:`bioxr.demographics`).

    See Also
    --------
    margin_of_error, group_counts

    References
    ----------
    seeds/002 (Schuckers et al., statistical methods for differences in FNMR
    across demographic groups), section IV; METHODS.md section 5. Davison &
    Hinkley, *Bootstrap Methods and their Application* (1997), section 4.4
    (tilted null distributions).

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import group_counts, differential_test
    >>> cube = bioxr.simulate.gaussian(n_subjects=120, n_samples=4, groups={"A": 0.0, "B": -1.0}, seed=1)
    >>> res = differential_test(group_counts(cube, 2.0), n_replicates=199, seed=0)
    >>> res.fnmr.dims, res.attrs["null"]
    (('group',), 'equal-rate')
    >>> bool(res.p_value < 0.05)
    True
    """
    null = check_null(null)
    n_replicates = check_replicates(n_replicates, minimum=1)
    data = _prepare(counts, group, dim)
    _warn_small(data, null)
    obs = data.observed(null)["sums"]
    null_t = np.empty((n_replicates, data.n_slices))
    if null == "exchangeable":
        f_obs, df1, df2 = (x[0] for x in _null.f_statistic(*obs, with_df=True))
        t_obs = f_obs
        for lo, sums in data.exchangeable_null(n_replicates, seed):
            t = _null.f_statistic(*sums)
            null_t[lo : lo + len(t)] = t
    else:
        w_obs, v = _null.wald_statistic(*obs, with_parts=True)
        t_obs = w_obs[0]
        present = obs[1][0] > 0
        df1 = present.sum(0) - 1.0
        df2 = obs[5][0].sum(0) - present.sum(0).astype(float)
        for lo, sums in data.equal_rate_null(n_replicates, seed):
            t = _null.wald_statistic(*sums)
            null_t[lo : lo + len(t)] = t

    ds = data.per_group()
    ds["statistic"] = data.wrap(t_obs)
    ds["p_value"] = data.wrap(_null.mc_p_value(null_t, t_obs))
    ds["df_between"] = data.wrap(df1)
    ds["df_within"] = data.wrap(df2)
    ds["n_replicates"] = n_replicates
    names = ["statistic", "p_value", "df_between", "df_within", "pooled_fnmr", "fnmr"]
    if null == "equal-rate":
        ds["standard_error"] = data.wrap_groups(np.sqrt(v[0]))
        ds["standard_error"].attrs["long_name"] = "cluster-robust standard error of the group FNMR, sqrt(V_g)"
        ds["statistic"].attrs["long_name"] = "W: sum_g (p_g - p_w)^2 / V_g (Wald-type chi-square)"
        names.append("standard_error")
    else:
        ds["statistic"].attrs["long_name"] = "F: between-group over within-group mean square of individual error rates"
    ds["p_value"].attrs["long_name"] = "share of null replicates at or above the statistic, (1 + #) / (1 + B)"
    label = {"equal-rate": "Wald-type test of equal FNMR with per-group cluster-robust variances, calibrated by a "
                           "tilted within-group bootstrap",
             "exchangeable": "bootstrap F test of exchangeable groups, resampling pooled individuals (seeds/002)"}
    ds.attrs = {
        "method": label[null],
        "null": null,
        "h0": _H0[null],
        "resampling": _RESAMPLING[null],
        "statistic": _STATISTIC[null],
        "p_value_rule": "(1 + #{T* >= T}) / (1 + n_replicates), T* >= T up to a relative 1e-9",
        "conventions": _CONVENTIONS[null],
        "group": str(group),
    }
    return ds[names + ["errors", "attempts", "n_individuals", "n_replicates"]]


def margin_of_error(
    counts: xr.Dataset,
    *,
    group: Hashable = "group",
    null: str = "equal-rate",
    level: float = 0.95,
    n_replicates: int = 2000,
    seed=0,
    dim: Hashable = INDIVIDUAL,
) -> xr.Dataset:
    """Margin of error for the FNMR of G groups around the pooled FNMR.

    With ``null="equal-rate"`` (default) each group has its own margin:
    ``M_g = c sd_g``, ``sd_g`` the standard deviation of ``p_g - p`` from
    the groups' cluster-robust variances and ``c`` the ``level`` quantile
    of ``Z* = max_g |p*_g - p*| / sd*_g`` under the tilted within-group
    null of :func:`differential_test`. A group with ``|p_g - p| > M_g`` is
    detectably different; under H0 all groups lie inside their margins
    with probability ``level`` (a simultaneous band). The ratio form is a
    band of the same shape on the ratio scale with its own critical value:
    ``ratio_margin_g = p / (p - c_r sd_g)`` (``inf`` when ``c_r sd_g >=
    p``), ``c_r`` the ``level`` quantile of ``Z_r* = max_g p* (1 - 1 /
    r*_g) / sd*_g``, ``r_g = max(p_g / p, p / p_g)``; a group whose ratio
    is above its ``ratio_margin`` is outside, and under H0 all are inside
    with probability ``level``. (``Z_r`` is ``Z`` below ``p`` and ``Z p /
    p_g`` above it, where the ratio band reaches further than ``p + c
    sd_g``; the band ``p / (p - M_g)`` with ``Z``'s own ``c``, used before,
    flagged 1.4-2.6% of datasets at a nominal 5%.)

    With ``null="exchangeable"`` (seeds/002) one margin serves every group:
    the ``level`` quantile of ``D* = max_g |p*_g - p*|`` with individuals
    dealt at random among the groups, and ``ratio_margin`` that of ``R* =
    max_g max(p*_g / p*, p* / p*_g)``. It holds its level only when the
    groups are alike in attempts per person and correlation.

    Parameters
    ----------
    counts : xarray.Dataset
        Per-individual ``errors`` and ``attempts`` over ``dim`` with a
        ``group`` label on ``dim`` (see :func:`group_counts`).
    group : str, keyword-only
        Name of the group label; also the groups' dimension in the result.
    null : {"equal-rate", "exchangeable"}, keyword-only
        The null of the reference distribution (see :func:`differential_test`).
    level : float, keyword-only
        Quantile of the null maxima, in (0, 1); default 0.95.
    n_replicates : int, keyword-only
        Bootstrap replicates (a warning below ``50 / (1 - level)``).
    seed : int, SeedSequence or numpy Generator, keyword-only
    dim : str, keyword-only
        The individuals' dimension, default ``"individual"``.

    Returns
    -------
    xarray.Dataset
        ``margin`` (over ``group`` with the equal-rate null, one value with
        the exchangeable one), ``pooled_fnmr`` (``p``), ``margin_interval``
        (``p -+ M`` clipped to [0, 1], dim ``bound``), ``max_difference``
        (observed ``max_g |p_g - p|``) and the test's ``p_value`` (of ``Z``
        or ``D``); ``ratio_margin`` and ``max_ratio`` (observed ``R``);
        over ``group``: ``fnmr``, ``difference`` (``p_g - p``), ``outside``
        (``|p_g - p| > M``), ``ratio`` (``max(p_g / p, p / p_g)``),
        ``outside_ratio`` (``ratio > ratio_margin``), ``errors``,
        ``attempts``, ``n_individuals``; ``n_replicates``. Equal-rate also:
        ``critical_value`` (``c``), ``statistic`` (observed ``Z``),
        ``difference_se`` (``sd_g``) and ``ratio_critical_value``
        (``c_r``). attrs ``method``, ``level``, ``null``,
        ``h0``, ``resampling``, ``quantile``, ``group``.

    Warns
    -----
    FewReplicatesWarning
        Below ``50 / (1 - level)`` replicates.
    SmallGroupWarning
        As in :func:`differential_test`.

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
    >>> bool(((0.005 < res.margin) & (res.margin < 0.05)).all())
    True
    >>> res.margin_interval.dims, res.outside.dims
    (('group', 'bound'), ('group',))
    >>> one = margin_of_error(counts, null="exchangeable", n_replicates=500, seed=1)
    >>> one.margin.dims, one.margin_interval.dims
    ((), ('bound',))
    """
    null = check_null(null)
    level = check_level(level)
    n_replicates = check_replicates(n_replicates, minimum=1, level=level)
    data = _prepare(counts, group, dim)
    _warn_small(data, null)
    obs = data.observed(null)["sums"]
    null_t = np.empty((n_replicates, data.n_slices))
    null_r = np.empty((n_replicates, data.n_slices))
    if null == "exchangeable":
        for lo, sums in data.exchangeable_null(n_replicates, seed):
            d, r = _null.max_deviations(*sums)
            null_t[lo : lo + len(d)] = d
            null_r[lo : lo + len(r)] = r
    else:
        for lo, sums in data.equal_rate_null(n_replicates, seed):
            z = _null.max_studentized(*sums)
            null_t[lo : lo + len(z)] = z
            zr = _null.max_ratio_studentized(*sums)
            null_r[lo : lo + len(zr)] = zr
    critical = np.quantile(null_t, level, axis=0, method="inverted_cdf")
    d_obs, r_obs = (x[0] for x in _null.max_deviations(*obs))

    ds = data.per_group()
    p = ds["pooled_fnmr"]
    ds["difference"] = ds["fnmr"] - p
    if null == "exchangeable":
        ds["margin"] = data.wrap(critical)
        ds["ratio_margin"] = data.wrap(np.quantile(null_r, level, axis=0, method="inverted_cdf"))
        t_obs = d_obs
    else:
        _, sd = _null.studentized_deviations(*obs)
        ds["difference_se"] = data.wrap_groups(sd[0])
        ds["critical_value"] = data.wrap(critical)
        ds["margin"] = (ds["critical_value"] * ds["difference_se"]).transpose(*ds["difference_se"].dims)
        t_obs = _null.max_studentized(*obs)[0]
        ds["statistic"] = data.wrap(t_obs)
        ds["ratio_critical_value"] = data.wrap(np.quantile(null_r, level, axis=0, method="inverted_cdf"))
        reach = (ds["ratio_critical_value"] * ds["difference_se"]).transpose(*ds["difference_se"].dims)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio_margin = xr.where(reach < p, p / (p - reach), np.inf)
        ds["ratio_margin"] = xr.where(reach == 0, 1.0, ratio_margin).where(reach.notnull())
    ds["outside"] = np.abs(ds["difference"]) > ds["margin"]
    lower = (p - ds["margin"]).clip(0, 1).transpose(*ds["margin"].dims)
    upper = (p + ds["margin"]).clip(0, 1).transpose(*ds["margin"].dims)
    band = xr.concat([lower, upper], dim="bound").assign_coords(bound=list(BOUNDS))
    ds["margin_interval"] = band.transpose(*lower.dims, "bound")
    ds["max_difference"] = data.wrap(d_obs)
    ds["p_value"] = data.wrap(_null.mc_p_value(null_t, t_obs))
    ds["ratio"] = data.wrap_groups(_null.group_ratios(*obs)[0])
    ds["max_ratio"] = data.wrap(r_obs)
    ds["outside_ratio"] = ds["ratio"] > ds["ratio_margin"]
    ds["n_replicates"] = n_replicates
    _margin_attrs(ds, level, null)
    ds.attrs = {
        "method": ("simultaneous bootstrap margins of error for group FNMRs around the pooled FNMR, studentised by "
                   "each group's cluster-robust variance" if null == "equal-rate" else
                   "bootstrap margin of error for group FNMRs around the pooled FNMR (seeds/002)"),
        "level": level,
        "null": null,
        "h0": _H0[null],
        "resampling": _RESAMPLING[null],
        "quantile": _QUANTILE,
        "ratio_convention": "ratio 1 where p_g == p (also both 0), inf where exactly one is 0",
        "p_value_rule": f"(1 + #{{{'Z* >= Z' if null == 'equal-rate' else 'D* >= D'}}}) / (1 + n_replicates)",
        "group": str(group),
    }
    names = ["margin", "pooled_fnmr", "margin_interval", "max_difference", "p_value", "ratio_margin", "max_ratio",
             "fnmr", "difference", "outside", "ratio", "outside_ratio", "errors", "attempts", "n_individuals",
             "n_replicates"]
    if null == "equal-rate":
        names[1:1] = ["critical_value", "statistic", "difference_se"]
        names.insert(names.index("ratio_margin"), "ratio_critical_value")
    return ds[names]


def _margin_attrs(ds: xr.Dataset, level: float, null: str) -> None:
    pct = f"{level:.0%}"
    if null == "exchangeable":
        ds["margin"].attrs["long_name"] = f"{pct} quantile of max_g |p*_g - p*| under H0"
        ds["ratio_margin"].attrs["long_name"] = f"{pct} quantile of max_g max(p*_g / p*, p* / p*_g) under H0"
        ds["p_value"].attrs["long_name"] = "share of null replicates with D* >= D, (1 + #) / (1 + B)"
    else:
        ds["margin"].attrs["long_name"] = "group margin M_g = critical_value * difference_se"
        ds["critical_value"].attrs["long_name"] = f"{pct} quantile of Z* = max_g |p*_g - p*| / sd*_g under H0"
        ds["statistic"].attrs["long_name"] = "Z = max_g |p_g - p| / sd_g"
        ds["difference_se"].attrs["long_name"] = "sd_g: standard deviation of p_g - p (cluster-robust)"
        ds["ratio_margin"].attrs["long_name"] = "the group's band on the ratio scale, p / (p - c_r sd_g)"
        ds["ratio_critical_value"].attrs["long_name"] = (
            f"{pct} quantile of Z_r* = max_g p* (1 - 1 / r*_g) / sd*_g under H0, r_g = max(p_g / p, p / p_g)")
        ds["p_value"].attrs["long_name"] = "share of null replicates with Z* >= Z, (1 + #) / (1 + B)"
    ds["margin_interval"].attrs["long_name"] = "pooled FNMR -+ margin, clipped to [0, 1]"
    ds["outside"].attrs["long_name"] = "group FNMR outside pooled FNMR -+ margin (detectably different)"
    ds["ratio"].attrs["long_name"] = "max(p_g / p, p / p_g)"


def _warn_small(data: _null.Prepared, null: str) -> None:
    small = data.small_groups() if null == "equal-rate" else []
    if small:
        warnings.warn(
            f"group(s) {', '.join(small)} have fewer than {_null.SMALL_GROUP} individuals: the equal-rate null learns "
            "each group's spread from its own individuals, and a small group with strongly correlated attempts can "
            "hide its spread (few of its people err, and those err a lot). Measured with 20-40 such people, the test "
            "rejected a true H0 up to 4x too often (benchmarks/DEMOGRAPHICS_NULL.md). Read p-values near the "
            "threshold as inconclusive, or merge small groups.",
            SmallGroupWarning, stacklevel=3,
        )


def _prepare(counts, group, dim) -> _null.Prepared:
    _check_counts_dataset(counts, dim)
    if group not in counts.variables:
        raise ValueError(
            f"counts has no {group!r} coordinate; its coordinates are {sorted(map(str, counts.coords))}. "
            f"Label each individual's group on {dim!r} (group_counts does it from a score cube)."
        )
    if counts[group].dims != (dim,):
        raise ValueError(f"counts[{group!r}] must lie on {dim!r} alone; its dims are {counts[group].dims}.")
    return _null.Prepared(counts, group, dim)
