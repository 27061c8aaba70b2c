"""Confidence intervals for error rates: binomial proportions, plain or design-aware.

An error rate is a proportion ``p = errors / trials``. Its interval depends on
how much independent information the trials carry: when attempts of one
individual are correlated (METHODS.md section 4) the binomial interval on
``trials`` is too narrow, and the right one uses the *effective sample size*
``n_eff`` instead (see :mod:`bioxr.correlation`, which estimates it). Here
``n_eff`` is simply taken as given: the interval is the binomial interval of
an experiment with ``n_eff`` trials and the same proportion, i.e. with
``x_eff = p * n_eff`` errors (not necessarily an integer).

Methods (Brown, Cai & DasGupta 2001):

- ``"modified-wilson"`` (the default): the Wilson interval, except that
  where the (effective) count ``x`` is at most ``MODIFIED_WILSON_COUNT =
  10`` the lower bound is the Clopper-Pearson one when that is lower (and,
  symmetrically, the upper bound where ``n - x <= 10``). In the spirit of
  Brown, Cai & DasGupta's modified Wilson interval (section 4.1.1, a
  Poisson-exact lower bound for ``x <= 3``), with two changes that the
  measurements below call for: the exact beta bound (defined for
  non-integer ``x`` and finite ``n``) instead of its Poisson limit, and up
  to ten counts instead of three, because the zero-error bound is
  one-sided (next paragraph);
- ``"wilson"``: the score interval, closed form;
- ``"clopper-pearson"``: the "exact" interval, from beta quantiles
  ``Beta(x, n - x + 1)`` and ``Beta(x + 1, n - x)``, which are defined for
  non-integer ``x`` and ``n`` too;
- ``"jeffreys"``: the equal-tailed interval of the Beta(1/2, 1/2)
  posterior, ``Beta(x + 1/2, n - x + 1/2)`` quantiles, with the lower bound 0
  at ``x = 0`` and the upper bound 1 at ``x = n``.

Zero observed errors are never given a zero-width or method-dependent
interval: the interval is ``[0, -ln(1 - level) / n]``, the *rule of three*
(``-ln 0.05 = 2.996``, so about ``3 / n`` at 95%). It is a one-sided upper
bound: whatever the true rate ``pi > -ln(1 - level) / n``, the chance of
seeing no error is ``(1 - pi)^n < exp(-n pi) < 1 - level``. All errors
(``p = 1``) get the mirror image, the one-sided lower bound ``[1 -
-ln(1 - level) / n, 1]``. The cells where either was used are labelled
``"rule of three"`` in the ``interval_method`` coordinate; the
``bound_kind`` coordinate says ``"two-sided"``, ``"one-sided upper (zero
errors)"`` or ``"one-sided lower (all errors)"``, and the rules are
stated in ``attrs["zero_error_rule"]`` and ``attrs["bound_rule"]``.

Measured coverage (exact binomial sums, no simulation; the study script
``benchmarks/small_rates.py``, output in ``benchmarks/SMALL_RATES.md``):
for each ``n`` in {50, 100, 200, 1000, 10^4, 10^6} and 500 log-spaced
``pi`` from ``1/n`` to 0.5, with the rule of three at zero errors as
shipped, 95% intervals:

=================  ======================  ===================
method             minimum coverage        mean coverage
=================  ======================  ===================
modified-wilson    0.931 - 0.938           0.954 - 0.966
wilson             0.910 - 0.916           0.951 - 0.953
jeffreys           0.914 - 0.920           0.952 - 0.957
clopper-pearson    0.938 - 0.946           0.957 - 0.973
mid-p              0.917 - 0.925           0.953 - 0.961
BCD mod. Wilson    0.910 - 0.916           0.951 - 0.953
=================  ======================  ===================

(ranges over ``n``). Wilson's minimum sits near ``n pi = 1`` (its lower
bound at 3 errors out of 1000, 0.001021, lies above 0.001, so
Binomial(1000, 0.001) is covered 0.920 of the time) and, once the
zero-error bound is one-sided, near ``n pi = 3``: there ``P(no error)``
alone is almost 5%, so any lower bound that misses adds to it; Wilson's
lower bound at ``x = 7`` is above ``3 / n`` and the coverage falls to
0.91. Brown, Cai & DasGupta's modification (exact lower bound for ``x <=
3``) mends the first dip only. Exact lower bounds up to ten counts mend
both; Clopper-Pearson has the best minimum but is conservative on average
(0.97 at small ``n``). ``"modified-wilson"`` keeps every cell at 93% or
more with a mean closest to 95%, so it is the default. No method reaches
95% everywhere: a one-sided bound at zero errors, as METHODS.md asks,
costs at least 1.1 points just above ``n pi = 3`` even with exact bounds.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr
from scipy import stats
from scipy.special import ndtri

from ._core import check_level

__all__ = ["BOUND_KINDS", "DEFAULT_METHOD", "INTERVAL_METHODS", "binomial_interval", "rates_interval", "rule_of_three"]

#: The interval methods :func:`binomial_interval` knows; the first is the default.
INTERVAL_METHODS = ("modified-wilson", "wilson", "clopper-pearson", "jeffreys")
DEFAULT_METHOD = INTERVAL_METHODS[0]
#: Up to this many (effective) errors, or non-errors, ``"modified-wilson"`` takes the exact bound on that side.
MODIFIED_WILSON_COUNT = 10.0
BOUNDS = ("lower", "upper")
RULE_OF_THREE = "rule of three"
#: Values of the ``bound_kind`` coordinate.
BOUND_KINDS = ("two-sided", "one-sided upper (zero errors)", "one-sided lower (all errors)")
BOUND_RULE = (
    "bound_kind says which statement each interval makes: 'two-sided' (lower <= rate <= upper at the level), "
    "'one-sided upper (zero errors)' (rate <= upper at the level; lower is 0) or 'one-sided lower (all errors)' "
    "(rate >= lower at the level; upper is 1)"
)

#: For :func:`rates_interval`: rate name -> (error count, number of trials).
_RATE_COUNTS = {"fmr": ("false_matches", "n_nonmated"), "fnmr": ("false_nonmatches", "n_mated")}


def rule_of_three(level: float = 0.95) -> float:
    """The numerator ``c`` of the zero-error upper bound ``c / n``.

    ``c = -ln(1 - level)``: 2.996 (about 3) at 95%, 4.605 at 99%.

    Examples
    --------
    >>> round(rule_of_three(0.95), 3)
    2.996
    """
    level = check_level(level)
    return float(-np.log1p(-level))


def binomial_interval(errors, trials, *, method: str = DEFAULT_METHOD, level: float = 0.95, n_eff=None) -> xr.DataArray:
    """Confidence interval for a proportion ``errors / trials``.

    Parameters
    ----------
    errors, trials : number, array_like or xarray.DataArray
        Error counts and numbers of trials (``0 <= errors <= trials``; they
        need not be integers). DataArrays broadcast by dimension name, NumPy
        arrays by position. NaN gives NaN bounds, as does ``trials == 0``.
    method : {"modified-wilson", "wilson", "clopper-pearson", "jeffreys"}, keyword-only
        Default ``"modified-wilson"`` (module docstring: why, and its
        measured coverage).
    level : float, keyword-only
        Confidence level, in (0, 1).
    n_eff : number, array_like or xarray.DataArray, optional, keyword-only
        Effective sample size (> 0), for correlated trials: the interval is
        computed for ``p = errors / trials`` observed on ``n_eff`` trials,
        i.e. ``x_eff = p * n_eff`` errors. Default: ``trials``.

    Returns
    -------
    xarray.DataArray
        Dims of the broadcast inputs plus ``bound`` (``"lower"``,
        ``"upper"``), with their coordinates. Coordinate ``interval_method``
        (dims of the inputs) names the method used in each cell: ``method``,
        or ``"rule of three"`` where ``errors == 0``. attrs ``method``,
        ``level``, ``zero_error_rule`` and ``sample_size``.

    See Also
    --------
    rates_interval : intervals for the FMR and FNMR of :func:`bioxr.verification.error_rates`.
    bioxr.correlation.fnmr_interval : FNMR with an interval that accounts for correlated attempts.

    References
    ----------
    Brown, Cai & DasGupta, Interval estimation for a binomial proportion,
    Statistical Science 16 (2001); Jovanovic & Levy, A look at the rule of
    three, The American Statistician 51 (1997); METHODS.md section 4.

    Examples
    --------
    >>> from bioxr.intervals import binomial_interval
    >>> ci = binomial_interval(12, 400, method="wilson")
    >>> ci.round(4).values.tolist()
    [0.0172, 0.0517]
    >>> binomial_interval(12, 400, method="clopper-pearson").round(4).values.tolist()
    [0.0156, 0.0518]

    The default takes the exact lower bound at ten errors or fewer, where
    Wilson's is too high (3 errors in 1000 trials: Wilson's lower bound
    0.001021 excludes a true rate of 0.001):

    >>> binomial_interval(3, 1000, method="wilson").round(6).values.tolist()
    [0.001021, 0.008783]
    >>> binomial_interval(3, 1000).round(6).values.tolist()
    [0.000619, 0.008783]

    With a smaller effective sample size (correlated attempts) the interval widens:

    >>> binomial_interval(12, 400, n_eff=100, method="wilson").round(4).values.tolist()
    [0.0103, 0.0845]

    No error: the rule of three, ``[0, 3/n]``:

    >>> ci = binomial_interval([0, 5], 1000)
    >>> ci.sel(bound="upper").round(6).values.tolist()
    [0.002996, 0.011651]
    >>> ci.interval_method.values.tolist()
    ['rule of three', 'modified-wilson']
    >>> ci.bound_kind.values.tolist()
    ['one-sided upper (zero errors)', 'two-sided']
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"method={method!r}; choose one of {INTERVAL_METHODS}.")
    level = check_level(level)
    x, n, size = _as_dataarrays(errors=errors, trials=trials, n_eff=n_eff)
    _check_counts(x, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = x / n
    if size is None:
        size = n
    elif size.chunks is None and bool((size <= 0).any()):
        raise ValueError("n_eff must be positive (an effective number of trials).")
    size = size.astype(float)
    p, size = xr.broadcast(p, size)
    bounds = xr.apply_ufunc(
        _bounds,
        p,
        size,
        kwargs={"method": method, "level": level},
        output_core_dims=[["bound"]],
        dask="parallelized",
        output_dtypes=[float],
        dask_gufunc_kwargs={"output_sizes": {"bound": 2}},
    )
    used = xr.where((p == 0) | (p == 1), RULE_OF_THREE, method)
    kind = xr.where(p == 0, BOUND_KINDS[1], xr.where(p == 1, BOUND_KINDS[2], BOUND_KINDS[0]))
    bounds = bounds.assign_coords(bound=list(BOUNDS), interval_method=used, bound_kind=kind)
    bounds.name = "interval"
    bounds.attrs = {
        "method": method,
        "level": float(level),
        "zero_error_rule": _zero_rule_text(level),
        "bound_rule": BOUND_RULE,
        "sample_size": "n_eff (effective sample size, p = errors / trials)" if n_eff is not None else "trials",
    }
    return bounds


def rates_interval(rates_ds: xr.Dataset, *, method: str = DEFAULT_METHOD, level: float = 0.95, n_eff=None) -> xr.Dataset:
    """Confidence intervals for the FMR and FNMR of a rates Dataset.

    Parameters
    ----------
    rates_ds : xarray.Dataset
        A Dataset from :func:`bioxr.verification.error_rates` (or
        :func:`~bioxr.verification.fmr`, :func:`~bioxr.verification.fnmr`,
        :func:`~bioxr.verification.det_curve`), or anything holding
        ``false_matches`` and ``n_nonmated`` (FMR) and/or
        ``false_nonmatches`` and ``n_mated`` (FNMR).
    method : {"modified-wilson", "wilson", "clopper-pearson", "jeffreys"}, keyword-only
    level : float, keyword-only
    n_eff : mapping or xarray.Dataset, optional, keyword-only
        Effective sample sizes per rate, keys ``"fmr"`` and/or ``"fnmr"``
        (numbers or DataArrays broadcasting against the rate). A rate not
        named uses its number of comparisons.

    Returns
    -------
    xarray.Dataset
        ``rates_ds`` with ``fmr_interval`` and/or ``fnmr_interval`` added
        (dims of the rate plus ``bound``), and coordinates
        ``fmr_interval_method`` / ``fnmr_interval_method`` saying where the
        rule of three replaced ``method`` and ``fmr_bound_kind`` /
        ``fnmr_bound_kind`` saying which bounds are one-sided. attrs gain
        ``interval_method``, ``level``, ``zero_error_rule`` and
        ``bound_rule``.

    See Also
    --------
    binomial_interval

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.intervals import rates_interval
    >>> cube = bioxr.simulate.gaussian(n_subjects=100, seed=1)
    >>> rates = bioxr.verification.error_rates(cube, [1.0, 2.0])
    >>> ci = rates_interval(rates)
    >>> ci.fnmr_interval.dims
    ('threshold', 'bound')
    >>> bool(((ci.fnmr_interval.sel(bound="lower") <= ci.fnmr)
    ...       & (ci.fnmr <= ci.fnmr_interval.sel(bound="upper"))).all())
    True
    """
    if not isinstance(rates_ds, xr.Dataset):
        raise TypeError(f"rates_ds must be an xarray.Dataset of rates and counts, got {type(rates_ds).__name__}.")
    if n_eff is None:
        n_eff = {}
    if isinstance(n_eff, xr.Dataset):
        n_eff = {k: n_eff[k] for k in n_eff.data_vars}
    if not isinstance(n_eff, Mapping):
        raise TypeError(
            "n_eff must be a mapping (or Dataset) of effective sizes per rate, e.g. {'fnmr': 250.0}; "
            f"got {type(n_eff).__name__}. FMR and FNMR have different numbers of trials."
        )
    unknown = set(n_eff) - set(_RATE_COUNTS)
    if unknown:
        raise ValueError(f"n_eff names {sorted(map(str, unknown))}; use the keys 'fmr' and 'fnmr'.")
    present = [r for r, needs in _RATE_COUNTS.items() if all(v in rates_ds for v in needs)]
    if not present:
        raise ValueError(
            "rates_ds holds neither false_matches and n_nonmated (FMR) nor false_nonmatches and "
            f"n_mated (FNMR); its variables are {sorted(map(str, rates_ds.data_vars))}."
        )
    missing = set(n_eff) - set(present)
    if missing:
        raise ValueError(f"n_eff gives sizes for {sorted(missing)}, which rates_ds has no counts for.")
    out = rates_ds.copy()
    for rate in present:
        errors, trials = _RATE_COUNTS[rate]
        ci = binomial_interval(rates_ds[errors], rates_ds[trials], method=method, level=level, n_eff=n_eff.get(rate))
        ci = ci.rename({"interval_method": f"{rate}_interval_method", "bound_kind": f"{rate}_bound_kind"})
        ci.attrs = {"long_name": f"{level:.0%} confidence interval for {rate.upper()}", "method": method,
                    "sample_size": ci.attrs["sample_size"]}
        out[f"{rate}_interval"] = ci
    out.attrs.update({"interval_method": method, "level": float(level), "zero_error_rule": _zero_rule_text(level),
                      "bound_rule": BOUND_RULE})
    return out


# --------------------------------------------------------------------------
# internals
# --------------------------------------------------------------------------


def _bounds(p: np.ndarray, n: np.ndarray, *, method: str, level: float) -> np.ndarray:
    """Lower and upper bounds (last axis) for proportions ``p`` on ``n`` trials."""
    p = np.asarray(p, dtype=float)
    n = np.asarray(n, dtype=float)
    alpha = 1.0 - level
    out = np.full(np.broadcast(p, n).shape + (2,), np.nan)
    ok = np.isfinite(p) & np.isfinite(n) & (n > 0)
    p, n = np.broadcast_to(p, ok.shape)[ok], np.broadcast_to(n, ok.shape)[ok]
    x = p * n
    some, all_ = x > 0, p >= 1
    safe_x = np.where(some, x, 1.0)
    rest = np.where(all_, 1.0, n - x)
    if method in ("wilson", "modified-wilson"):
        z = ndtri(1.0 - alpha / 2)
        z2n = z * z / n
        center = (p + z2n / 2) / (1 + z2n)
        half = z / (1 + z2n) * np.sqrt(p * (1 - p) / n + z2n / (4 * n))
        lower, upper = center - half, center + half
        if method == "modified-wilson":  # the exact bound on a side with few counts, where it is further out
            few_low, few_high = some & (x <= MODIFIED_WILSON_COUNT), ~all_ & (n - x <= MODIFIED_WILSON_COUNT)
            if few_low.any():
                exact = stats.beta.ppf(alpha / 2, safe_x[few_low], n[few_low] - x[few_low] + 1)
                lower[few_low] = np.minimum(lower[few_low], exact)
            if few_high.any():
                exact = stats.beta.ppf(1 - alpha / 2, x[few_high] + 1, rest[few_high])
                upper[few_high] = np.maximum(upper[few_high], exact)
    elif method == "clopper-pearson":
        lower = np.where(some, stats.beta.ppf(alpha / 2, safe_x, n - x + 1), 0.0)
        upper = np.where(all_, 1.0, stats.beta.ppf(1 - alpha / 2, x + 1, rest))
    else:  # jeffreys
        lower = np.where(some, stats.beta.ppf(alpha / 2, safe_x + 0.5, n - x + 0.5), 0.0)
        upper = np.where(all_, 1.0, stats.beta.ppf(1 - alpha / 2, x + 0.5, rest + 0.5))
    # no error: the one-sided rule of three; every trial an error: its mirror image
    c = -np.log1p(-level) / n
    zero = p == 0
    lower = np.where(zero, 0.0, np.where(all_, np.maximum(0.0, 1.0 - c), lower))
    upper = np.where(zero, np.minimum(1.0, c), np.where(all_, 1.0, upper))
    out[ok] = np.stack([np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)], axis=-1)
    return out


def _as_dataarrays(**values):
    """DataArrays from numbers, arrays or DataArrays (None stays None).

    DataArrays broadcast by name. Plain arrays broadcast by position (as in
    NumPy) among themselves, into dims ``dim_0, dim_1, ...``; next to a
    DataArray only plain numbers are accepted, since positions and names
    cannot be matched safely.
    """
    given = {k: v for k, v in values.items() if v is not None}
    for name, v in given.items():
        if isinstance(v, xr.Dataset):
            raise TypeError(f"{name} must be a number, an array or a DataArray, not a Dataset.")
    labelled = any(isinstance(v, xr.DataArray) for v in given.values())
    plain = {k: np.asarray(v) for k, v in given.items() if not isinstance(v, xr.DataArray)}
    for name, arr in plain.items():
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise TypeError(f"{name} must be numeric; got dtype {arr.dtype}.")
        if labelled and arr.ndim:
            raise TypeError(
                f"{name} is a plain array next to a DataArray: wrap it in an xarray.DataArray with "
                "named dims so it broadcasts by name."
            )
    if plain and not labelled:
        try:
            shaped = np.broadcast_arrays(*plain.values())
        except ValueError as err:
            raise ValueError(f"{', '.join(plain)} do not broadcast together: {err}") from None
        plain = dict(zip(plain, shaped))
    out = []
    for name, v in values.items():
        if v is None:
            out.append(None)
        elif isinstance(v, xr.DataArray):
            out.append(v)
        else:
            arr = plain[name]
            out.append(xr.DataArray(arr, dims=[f"dim_{i}" for i in range(arr.ndim)]))
    return out


def _check_counts(x: xr.DataArray, n: xr.DataArray) -> None:
    if x.chunks is not None or n.chunks is not None:
        return  # checked lazily would mean computing: trust dask inputs
    with np.errstate(invalid="ignore"):
        if bool((x < 0).any()) or bool((n < 0).any()):
            raise ValueError("errors and trials must be non-negative.")
        if bool((x > n).any()):
            raise ValueError("errors exceed trials in some cell: each rate needs errors <= trials.")


def _zero_rule_text(level: float) -> str:
    return (
        f"where errors == 0 the interval is [0, {rule_of_three(level):.4g} / n] (rule of three, "
        "-ln(1 - level) / n, n the effective sample size when given): a one-sided upper bound, "
        f"never a zero-width interval; where errors == trials it is [1 - {rule_of_three(level):.4g} / n, 1], "
        "a one-sided lower bound"
    )
