"""Correlated attempts: intra-class correlation, effective sample size, FNMR intervals.

Attempts by one individual are not independent: a person who is hard to
match fails again and again. With decisions ``D_ij`` (1 = error) for
individual ``i = 1..n`` and attempt ``j = 1..m_i``, ``N = sum_i m_i``, the
FNMR estimate ``p = sum D_ij / N`` has variance (METHODS.md section 4;
Schuckers 2010)

    ``V[p] = p (1 - p) (1 + (m0 - 1) rho) / N``,  ``m0 = sum_i m_i^2 / N``,

where ``rho`` is the intra-class correlation, estimated by

    ``rho = sum_i sum_{j != j'} (D_ij - p)(D_ij' - p) / (p (1 - p) sum_i m_i (m_i - 1))``.

The double sum needs only each individual's counts (``e_i`` errors in
``m_i`` attempts): ``sum_{j != j'} (D_ij - p)(D_ij' - p) = (e_i - m_i p)^2 -
[e_i (1 - p)^2 + (m_i - e_i) p^2]`` (the square of the sum minus the sum
of the squares). ``1 + (m0 - 1) rho`` is the *design effect* and ``N /
(1 + (m0 - 1) rho)`` the *effective sample size* ``n_eff``: the number of
independent attempts carrying the same information. Intervals use it in
place of ``N`` (:func:`bioxr.intervals.binomial_interval`).

Conventions (stated in the results' attrs):

- the design effect is floored at 1 (``n_eff <= N``): a negative ``rho``
  estimate (attempts of one person *less* alike than those of different
  people, implausible in biometrics and usually sampling noise) never
  claims more information than ``N`` independent attempts;
- ``rho`` is undefined when ``p`` is 0 or 1 (no variation: NaN) and when no
  individual has two attempts (every ``m_i <= 1``: NaN, but then ``m0 = 1``,
  the design effect is 1 and ``n_eff = N`` whatever ``rho``);
- with ``p`` 0 or 1 the data say nothing about ``rho``: :func:`icc` gives
  ``n_eff = N / m0``, the most conservative value any ``rho`` in [0, 1]
  allows for the variance.

Zero errors (and all errors). The interval is one-sided and counts the
independent units, the ``n`` individuals with attempts: ``[0, -ln(1 -
level) / n]`` (about ``3 / n``), whatever the design and the correlation.
It covers at the level because each individual errs at least once with
chance ``1 - E[(1 - p_i)^m_i] >= E[p_i] = pi`` and individuals are
independent, so ``P(no error) <= (1 - pi)^n < 1 - level`` for every ``pi``
above the bound. (``N / m0`` would be wrong in unbalanced protocols: 10
people x 50 attempts plus 90 x 2 give ``N / m0 = 18`` and a bound of 0.164
where 0.030 on the 100 people is valid.) All errors: the mirror image,
``[1 + ln(1 - level) / n, 1]``. The ``bound_kind`` coordinate marks these
cells (``"one-sided upper (zero errors)"``, ``"one-sided lower (all
errors)"``; others ``"two-sided"``).

Designs of :func:`clustered_interval` (``design=``):

- ``"beta-binomial"`` (default): each individual has an error propensity
  ``p_i ~ Beta`` with mean ``pi`` and intra-class correlation ``rho``, so
  ``e_i ~ BetaBinomial(m_i)``. The interval is the equal-tailed 95%
  posterior interval of ``pi`` after integrating the likelihood over
  ``rho`` (prior density ``2 (1 - rho)`` on [0, 1)); the prior on ``pi``
  is ``pi^-1 (1 - pi)^-1`` for the lower bound (which makes it the
  Clopper-Pearson bound when ``rho = 0``) and Jeffreys' ``pi^-1/2 (1 -
  pi)^-1/2`` for the upper one. Integrating over ``rho`` rather than
  plugging in an estimate is what lets it cover at small rates: there a
  handful of individuals carry all errors, the moment estimate of ``rho``
  is low exactly when the error count is low (0.49 on average when the
  truth is 0.6 at ``pi = 0.01``, 200 people x 5), and the ``n_eff``
  interval then misses from above. The price is at ``rho = 0``, the edge
  of the prior's support: there integrating over ``rho`` can only widen
  the interval, which covers 0.97-0.98 (60-200 people; the binomial
  interval covers 0.95-0.96 there). Where attempts are known to be
  independent, ``design="binomial"`` is the sharper choice.
- ``"icc"``: the binomial interval (``method``) on ``n_eff`` from the
  moment estimate of ``rho``. With unbalanced attempts and correlated
  errors the moment estimate is dominated by the individuals with many
  attempts and the interval under-covers (0.84-0.93 measured): a
  :class:`DesignWarning` says so and points to the default design.
- ``"binomial"``: all ``N`` attempts as independent (too narrow when ``rho
  > 0``).

Measured coverage of 95% intervals (``benchmarks/small_rates.py``, 2,000
experiments a cell, beta-binomial data and, as an independent check,
logit-normal propensities; output in ``benchmarks/SMALL_RATES.md``): see
:data:`COVERAGE_NOTE`. Where expected errors are tiny (``N pi`` about 1)
every valid interval over-covers, by discreteness.

When no interval can cover. With few individuals holding most attempts
(Kish's effective number of individuals ``N^2 / sum m_i^2`` small) or with
errors from very few individuals, the data cannot tell a rare, clustered
error from a common, spread one; :func:`clustered_interval` and
:func:`fnmr_interval` then emit a :class:`DesignWarning` saying what the
data look like.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
import xarray as xr

from scipy import special

from ._core import DesignWarning, check_level
from ._core.designs import FEW_ERRING, FEW_INDIVIDUALS, warn_design
from .cube import REFERENCE
from .intervals import BOUND_KINDS, BOUND_RULE, DEFAULT_METHOD, INTERVAL_METHODS, RULE_OF_THREE, binomial_interval
from .simulate import _entropy, _rng

__all__ = [
    "COVERAGE_NOTE",
    "DESIGNS",
    "DesignWarning",
    "attempt_counts",
    "icc",
    "clustered_interval",
    "fnmr_interval",
    "simulate_clustered_decisions",
]

#: Designs of :func:`clustered_interval` and :func:`fnmr_interval`; the first is the default.
DESIGNS = ("beta-binomial", "icc", "binomial")
INDIVIDUAL = "individual"

#: The measured coverage, in short (full tables: benchmarks/SMALL_RATES.md).
COVERAGE_NOTE = "see benchmarks/SMALL_RATES.md"

_DESIGN_TEXT = {
    "beta-binomial": ("beta-binomial: equal-tailed posterior interval of pi with the likelihood integrated over rho "
                      "(prior 2 (1 - rho)); prior on pi 1/(pi (1 - pi)) for the lower bound, Jeffreys for the upper"),
    "icc": "intra-class correlation: effective sample size N / (1 + (m0 - 1) rho), design effect floored at 1",
    "binomial": "binomial: all N attempts independent (ignores correlation; too narrow when rho > 0)",
}
_UNDEFINED_RHO = (
    "rho is NaN where p is 0 or 1 (no variation) or where no individual has two attempts; "
    "with p 0 or 1, n_eff = N / m0 (the conservative rho = 1); with every m_i <= 1, n_eff = N"
)


def attempt_counts(
    cube: xr.DataArray, threshold, *, by: Hashable = "subject", dim=None, failure_policy: str = "exclude"
) -> xr.Dataset:
    """Mated attempts and false non-matches of each individual at thresholds.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube, dims ``(*probe_dims, "reference")``, or a comparison
        list (``by`` is then a coordinate on ``comparison``).
    threshold : float or array_like
        Decision threshold(s). A similarity score ``s < t`` is a false
        non-match, a distance ``d > t`` is one. A sequence becomes the
        ``threshold`` dimension, a scalar a scalar coordinate.
    by : str, keyword-only
        The coordinate (on the reduced probe dims) that names the
        individual whose attempts are correlated; default ``"subject"``.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all); the others are kept.
        ``by`` must lie on pooled dims only.
    failure_policy : {"exclude", "nist"}, keyword-only
        ``"nist"``: a failed mated comparison is an attempt and an error.

    Returns
    -------
    xarray.Dataset
        ``errors`` (dims ``(*kept, "individual", "threshold")``) and
        ``attempts`` (dims ``(*kept, "individual")``): the numbers of false
        non-matches and of mated comparisons of each individual. Every
        mated comparison with a score is one attempt; NaN cells and self
        comparisons are not attempts. The ``individual`` coordinate holds
        the ``by`` labels (sorted); other coordinates on the dims of
        ``by`` that are constant within each individual (a demographic
        ``group``, say) are kept on ``individual``. attrs ``by``,
        ``score_kind``, ``decision_rule``.

    See Also
    --------
    icc, fnmr_interval

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.correlation import attempt_counts
    >>> cube = bioxr.simulate.gaussian(n_subjects=6, n_samples=3, seed=2)
    >>> counts = attempt_counts(cube, 2.0)
    >>> counts.attempts.values.tolist()
    [3, 3, 3, 3, 3, 3]
    >>> int(counts.errors.sum()) == int(bioxr.verification.fnmr(cube, 2.0).false_nonmatches)
    True
    """
    from ._core import Grouped

    t = np.atleast_1d(np.asarray(threshold, dtype=float))
    if t.ndim != 1 or np.isnan(t).any():
        raise ValueError("threshold must be a number or a 1-D sequence of numbers (no NaN).")
    groups = Grouped(cube, dim, failure_policy=failure_policy)
    groups.require_subjects("attempt counts per individual")
    kind = groups.kind
    if by not in cube.coords and (not isinstance(cube, xr.Dataset) or by not in cube.variables):
        raise ValueError(
            f"by={by!r} is not a coordinate of the data; its coordinates are {sorted(map(str, cube.coords))}. "
            "Name the coordinate that identifies each individual (on the probe side)."
        )
    if groups.form == "cube":
        label = cube[by]
        if REFERENCE in label.dims:
            raise ValueError(f"by={by!r} lies on 'reference'; it must label probes.")
        if set(label.dims) & set(groups.kept):
            raise ValueError(
                f"by={by!r} varies along the kept dims {sorted(set(label.dims) & set(groups.kept))}: an individual's "
                "attempts must be pooled. Add those dims to dim=, or select first."
            )
        reduced = tuple(d for d in groups._order[:-1] if d not in groups.kept)
        template = groups._cube.isel({REFERENCE: 0}, drop=True).isel({d: 0 for d in groups.kept}, drop=True)
        labels = np.asarray(label.broadcast_like(template).transpose(*reduced).values).ravel()
    else:
        if str(by).startswith("reference"):
            raise ValueError(f"by={by!r} labels references; it must label probes.")
        labels = np.asarray(cube[by].values)
    codes, uniques = pd.factorize(labels, sort=True, use_na_sentinel=True)
    if (codes < 0).any():
        raise ValueError(f"{int((codes < 0).sum())} probe(s) have no {by!r} label; every attempt needs one.")
    n_ind = len(uniques)
    n_groups = groups.n_groups
    errors = np.zeros((n_groups, n_ind, t.size), dtype=np.int64)
    attempts = np.zeros((n_groups, n_ind), dtype=np.int64)
    for g in range(n_groups):
        values, index = groups.block(g)
        flat = np.asarray(values, dtype=float).reshape(-1)
        scores = flat[index.mated]
        valid = ~np.isnan(scores)
        if groups.form == "cube":
            who_all = codes[index.mated // groups.n_ref]
        else:
            who_all = _group_codes(groups, codes, g)[index.mated]
        who = who_all[valid]
        scores = scores[valid]
        attempts[g] = np.bincount(who, minlength=n_ind)
        for k, tk in enumerate(t):
            wrong = scores > tk if kind == "distance" else scores < tk
            errors[g, :, k] = np.bincount(who[wrong], minlength=n_ind)
        if groups.policy == "nist" and groups.has_failures:
            failed = groups.failed_at(g, index.mated) & ~valid
            extra = np.bincount(who_all[failed], minlength=n_ind)
            attempts[g] += extra
            errors[g] += extra[:, None]
    kept_shape = groups.kept_shape
    coords = dict(groups.kept_coords)
    coords[INDIVIDUAL] = np.asarray(uniques)
    if groups.form == "cube":
        coords.update(_individual_coords(groups._cube, template, reduced, label.dims, codes, n_ind, exclude={by}))
    else:
        coords.update(_list_individual_coords(cube, codes, n_ind, exclude={by}))
    coords["threshold"] = ("threshold", t)
    kept = groups.kept
    ds = xr.Dataset(
        {
            "errors": ((*kept, INDIVIDUAL, "threshold"), errors.reshape(*kept_shape, n_ind, t.size)),
            "attempts": ((*kept, INDIVIDUAL), attempts.reshape(*kept_shape, n_ind)),
        },
        coords=coords,
    )
    ds["errors"].attrs["long_name"] = "false non-matches of the individual"
    ds["attempts"].attrs["long_name"] = "mated comparisons (attempts) of the individual"
    ds.attrs = {
        "by": str(by),
        "score_kind": kind,
        "decision_rule": "false non-match when s < t" if kind == "similarity" else "false non-match when d > t",
        **groups.policy_attrs(),
    }
    return ds.isel(threshold=0) if np.ndim(threshold) == 0 else ds


def _group_codes(groups, codes, g):
    """Individual codes of the comparisons of group ``g`` of a list, in the group's order."""
    order, b = groups._list["order"], groups._list["bounds"]
    return codes if order is None else codes[order[b[g] : b[g + 1]]]


def _list_individual_coords(ds, codes, n_ind, *, exclude) -> dict:
    """Coordinates of a comparison list that are constant within each individual."""
    from .comparisons import RESERVED

    out = {}
    firsts = np.unique(codes, return_index=True)[1]
    for name, coord in ds.coords.items():
        if name in exclude or name in RESERVED or str(name).startswith("reference") or coord.dims != ("comparison",):
            continue
        values = np.asarray(coord.values)
        frame = pd.DataFrame({"who": codes, "value": values})
        if (frame.groupby("who")["value"].nunique(dropna=False) > 1).any():
            continue
        out[name] = (INDIVIDUAL, values[firsts])
    return out


def icc(counts: xr.Dataset, *, dim: Hashable = INDIVIDUAL) -> xr.Dataset:
    """Intra-class correlation of attempts and the effective sample size.

    Parameters
    ----------
    counts : xarray.Dataset
        Per-individual ``errors`` and ``attempts`` over ``dim`` (from
        :func:`attempt_counts` or :func:`simulate_clustered_decisions`);
        other dims (threshold, kept dims, replicates) are kept.
    dim : str, keyword-only
        The individuals' dimension, default ``"individual"``.

    Returns
    -------
    xarray.Dataset
        Over the other dims: ``p`` (pooled error rate), ``rho`` (intra-class
        correlation, NaN where undefined), ``m0`` (``sum m_i^2 / N``),
        ``design_effect`` (``max(1, 1 + (m0 - 1) rho)``), ``variance``
        (``p (1 - p) design_effect / N``), ``n_eff`` (``N /
        design_effect``), ``errors`` and ``attempts`` (totals, ``N``) and
        ``n_individuals`` (individuals with at least one attempt). attrs
        state the conventions (module docstring).

    References
    ----------
    Schuckers, Computational Methods in Biometric Authentication (2010),
    ch. 3; Fleiss, Levin & Paik (2003); METHODS.md section 4; seeds/002.

    Examples
    --------
    >>> import xarray as xr
    >>> from bioxr.correlation import icc
    >>> counts = xr.Dataset({"errors": ("individual", [0, 0, 3, 0, 1]),
    ...                      "attempts": ("individual", [3, 3, 3, 3, 3])})
    >>> r = icc(counts)
    >>> round(float(r.p), 4), round(float(r.rho), 4), round(float(r.n_eff), 3)
    (0.2667, 0.6591, 6.471)
    """
    _check_counts_dataset(counts, dim)
    e = counts["errors"].astype(float)
    m = counts["attempts"].astype(float)
    big_n = m.sum(dim)
    total_e = e.sum(dim)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = total_e / big_n
        pairs = (m * (m - 1)).sum(dim)
        cross = ((e - m * p) ** 2 - (e * (1 - p) ** 2 + (m - e) * p**2)).sum(dim)
        rho = (cross / (p * (1 - p) * pairs)).where((p > 0) & (p < 1) & (pairs > 0))
        m0 = (m**2).sum(dim) / big_n
    # rho undefined: m0 == 1 -> no pairs, effect 1; p in {0, 1} -> conservative rho = 1
    # a correlation is at most 1; the moment estimator can exceed it with few individuals
    rho_used = xr.where(pairs == 0, 0.0, xr.where(rho.isnull(), 1.0, np.minimum(rho, 1.0)))
    design_effect = np.maximum(1.0, 1.0 + (m0 - 1.0) * rho_used).where(big_n > 0)
    n_eff = big_n / design_effect
    variance = p * (1 - p) / n_eff
    ds = xr.Dataset(
        {
            "p": p,
            "rho": rho,
            "m0": m0,
            "design_effect": design_effect,
            "variance": variance,
            "n_eff": n_eff,
            "errors": counts["errors"].sum(dim),
            "attempts": counts["attempts"].sum(dim),
            "n_individuals": (counts["attempts"] > 0).sum(dim),
        }
    )
    ds["p"].attrs["long_name"] = "pooled error rate, sum e_i / N"
    ds["rho"].attrs["long_name"] = "intra-class correlation of attempts (Schuckers 2010)"
    ds["m0"].attrs["long_name"] = "sum m_i^2 / N"
    ds["design_effect"].attrs["long_name"] = "max(1, 1 + (m0 - 1) rho)"
    ds["variance"].attrs["long_name"] = "variance of p: p (1 - p) design_effect / N"
    ds["n_eff"].attrs["long_name"] = "effective sample size N / design_effect"
    ds.attrs = {"design": _DESIGN_TEXT["icc"], "undefined_rho": _UNDEFINED_RHO}
    return ds


def clustered_interval(
    counts: xr.Dataset,
    *,
    method: str = DEFAULT_METHOD,
    level: float = 0.95,
    design: str = DESIGNS[0],
    dim: Hashable = INDIVIDUAL,
) -> xr.Dataset:
    """An error rate and its interval from per-individual counts.

    Parameters
    ----------
    counts : xarray.Dataset
        Per-individual ``errors`` and ``attempts`` over ``dim``.
    method : {"modified-wilson", "wilson", "clopper-pearson", "jeffreys"}, keyword-only
        The binomial interval of the designs ``"icc"`` and ``"binomial"``
        (:func:`bioxr.intervals.binomial_interval`); the beta-binomial
        design has its own.
    level : float, keyword-only
        Confidence level, in (0, 1).
    design : {"beta-binomial", "icc", "binomial"}, keyword-only
        ``"beta-binomial"`` (default): the posterior interval of the
        beta-binomial model with ``rho`` integrated out (module docstring).
        ``"icc"``: the binomial interval on the effective sample size
        ``n_eff`` of :func:`icc`. ``"binomial"``: on all ``N`` attempts, as
        if independent (shown for comparison; too narrow when ``rho > 0``).
    dim : str, keyword-only
        The individuals' dimension.

    Returns
    -------
    xarray.Dataset
        ``rate`` and ``rate_interval`` (extra dim ``bound``; coordinates
        ``rate_interval_method``, the method of each cell or ``"rule of
        three"``, and ``bound_kind``, ``"two-sided"`` or one of the
        one-sided kinds), and the variables of :func:`icc` (``rho``,
        ``n_eff``, ``m0``, ``design_effect``, ``variance``, ``errors``,
        ``attempts``, ``n_individuals``); with ``design="binomial"`` ``n_eff
        = N`` and ``design_effect = 1`` (``rho`` is still the estimate).
        Where the rate is 0 or 1 the one-sided bound counts the
        individuals, and ``n_eff`` is ``n_individuals`` there. attrs
        ``method``, ``level``, ``design``, ``design_description``,
        ``zero_error_rule``, ``bound_rule``.

    Warns
    -----
    DesignWarning
        Where Kish's effective number of individuals, ``N^2 / sum m_i^2``,
        is below 30 and half the individuals (a few people hold most
        attempts), or where errors come from fewer than 3 individuals: no
        interval can then cover as stated for every correlation.

    Examples
    --------
    >>> from bioxr.correlation import clustered_interval, simulate_clustered_decisions
    >>> counts = simulate_clustered_decisions(200, 10, rate=0.1, rho=0.3, seed=4)
    >>> res = clustered_interval(counts)
    >>> naive = clustered_interval(counts, design="binomial")
    >>> float(res.rho) > 0.2
    True
    >>> ratio = res.rate_interval.diff("bound") / naive.rate_interval.diff("bound")
    >>> bool(ratio.item() > 1.5)
    True
    >>> str(res.rate_interval.bound_kind.values), res.attrs["design"]
    ('two-sided', 'beta-binomial')

    No error among 100 people (10 x 50 attempts, 90 x 2): the one-sided
    bound over the 100 individuals, ``-ln(0.05) / 100``, with a warning
    about the skewed design:

    >>> import numpy as np, warnings, xarray as xr
    >>> skewed = xr.Dataset({"errors": ("individual", np.zeros(100, int)),
    ...                      "attempts": ("individual", [50] * 10 + [2] * 90)})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     zero = clustered_interval(skewed)
    >>> round(float(zero.rate_interval.sel(bound="upper")), 4), str(zero.rate_interval.bound_kind.values)
    (0.03, 'one-sided upper (zero errors)')
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    10 of 100 individuals hold 74% of the attempts: the effective number of individuals is 18...
    """
    if design not in DESIGNS:
        raise ValueError(f"design={design!r}; choose one of {DESIGNS}.")
    if method not in INTERVAL_METHODS:
        raise ValueError(f"method={method!r}; choose one of {INTERVAL_METHODS}.")
    level = check_level(level)
    stats = icc(counts, dim=dim)
    if design == "binomial":
        big_n = stats["attempts"].astype(float).broadcast_like(stats["p"])
        stats["design_effect"] = xr.ones_like(big_n).where(big_n > 0)
        stats["n_eff"] = big_n
        stats["variance"] = stats["p"] * (1 - stats["p"]) / big_n
    stats = stats.rename({"p": "rate"})
    extreme = (stats["rate"] == 0) | (stats["rate"] == 1)
    # zero (or all) errors: the one-sided bound over the independent units, the individuals
    if design != "binomial":  # the binomial design keeps its own assumption: every attempt independent
        stats["n_eff"] = xr.where(extreme, stats["n_individuals"].astype(float), stats["n_eff"])
    ci = binomial_interval(stats["errors"], stats["attempts"], method=method, level=level, n_eff=stats["n_eff"])
    used = method
    if design == "beta-binomial":
        bb = _beta_binomial_bounds(counts, dim, level)
        ci = xr.where(extreme, ci, bb.transpose(*ci.dims)).assign_coords(ci.coords)
        ci.coords["interval_method"] = xr.where(extreme, RULE_OF_THREE, design)
        used = design
    stats["rate_interval"] = ci.rename({"interval_method": "rate_interval_method"})
    stats["rate_interval"].attrs = {"long_name": f"{level:.0%} confidence interval", "method": used}
    stats.attrs = {
        "method": used,
        "level": float(level),
        "design": design,
        "design_description": _DESIGN_TEXT[design],
        "zero_error_rule": (f"where the rate is 0 the interval is [0, {-np.log1p(-level):.4g} / n], n the individuals "
                            "with attempts (valid for any correlation: each errs at least once with chance >= pi); "
                            "where it is 1, the mirror image"),
        "bound_rule": BOUND_RULE,
        "undefined_rho": _UNDEFINED_RHO,
    }
    names = ["rate", "rate_interval", "rho", "n_eff", "errors", "attempts", "n_individuals", "m0", "design_effect", "variance"]
    warn_design(counts["errors"], counts["attempts"], dim, variance_based=design == "icc",
                what="the ICC design effect 1 + (m0 - 1) rho", rho=stats["rho"] if design == "icc" else None,
                stacklevel=3)
    return stats[names]


def fnmr_interval(
    cube: xr.DataArray,
    threshold,
    *,
    by: Hashable = "subject",
    method: str = DEFAULT_METHOD,
    level: float = 0.95,
    design: str = DESIGNS[0],
    dim=None,
    failure_policy: str = "exclude",
) -> xr.Dataset:
    """FNMR at thresholds with a confidence interval that respects correlated attempts.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list. ``failure_policy`` as in
        :func:`attempt_counts` ("exclude" or "nist").
    threshold : float or array_like
        Decision threshold(s); a sequence becomes the ``threshold`` dim.
    by : str, keyword-only
        Coordinate naming the individual whose attempts correlate (default
        ``"subject"``).
    method : {"modified-wilson", "wilson", "clopper-pearson", "jeffreys"}, keyword-only
        Binomial interval of the designs ``"icc"`` and ``"binomial"``.
    level : float, keyword-only
    design : {"beta-binomial", "icc", "binomial"}, keyword-only
        ``"beta-binomial"`` (default): the beta-binomial posterior interval
        with ``rho`` integrated out; ``"icc"``: the binomial interval on
        the effective sample size ``N / (1 + (m0 - 1) rho)``;
        ``"binomial"``: on all ``N`` mated attempts, as if they were
        independent. See :func:`clustered_interval`.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all); the rest are kept.

    Returns
    -------
    xarray.Dataset
        Over ``(*kept, "threshold")``: ``fnmr``, ``fnmr_interval`` (extra
        dim ``bound``; coordinates ``fnmr_interval_method``, which marks
        the rule of three, used where there is no error, and
        ``bound_kind``), ``rho``, ``n_eff``,
        ``errors``, ``attempts`` (totals), ``n_individuals``, ``m0``,
        ``design_effect``, ``variance``. attrs ``method``, ``level``,
        ``design``, ``by``, ``zero_error_rule``, ``bound_rule``,
        ``score_kind``, ``decision_rule``.

    Warns
    -----
    DesignWarning
        As :func:`clustered_interval`: few individuals hold most attempts,
        or errors come from very few individuals.

    See Also
    --------
    attempt_counts, icc, bioxr.intervals.binomial_interval

    References
    ----------
    Schuckers, Computational Methods in Biometric Authentication (2010);
    METHODS.md section 4; seeds/002.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.correlation import fnmr_interval
    >>> cube = bioxr.simulate.gaussian(n_subjects=150, n_samples=6, subject_sd=1.5, seed=3)
    >>> res = fnmr_interval(cube, 2.0)
    >>> res.fnmr_interval.dims
    ('bound',)
    >>> bool(res.rho > 0.1), bool(res.n_eff < res.attempts)
    (True, True)
    >>> naive = fnmr_interval(cube, 2.0, design="binomial")
    >>> bool((res.fnmr_interval.diff("bound") > naive.fnmr_interval.diff("bound")).all())
    True
    """
    if design not in DESIGNS:
        raise ValueError(f"design={design!r}; choose one of {DESIGNS}.")
    if method not in INTERVAL_METHODS:
        raise ValueError(f"method={method!r}; choose one of {INTERVAL_METHODS}.")
    check_level(level)
    counts = attempt_counts(cube, threshold, by=by, dim=dim, failure_policy=failure_policy)
    res = clustered_interval(counts, method=method, level=level, design=design)
    res = res.rename({"rate": "fnmr", "rate_interval": "fnmr_interval", "rate_interval_method": "fnmr_interval_method"})
    res["fnmr"].attrs["long_name"] = "false non-match rate"
    res["errors"].attrs["long_name"] = "false non-matches"
    res["attempts"].attrs["long_name"] = "mated comparisons"
    res.attrs.update({k: v for k, v in counts.attrs.items() if k not in res.attrs})
    return res


def simulate_clustered_decisions(
    n_individuals: int,
    attempts,
    *,
    rate: float,
    rho: float,
    seed,
    replicates: int | None = None,
) -> xr.Dataset:
    """Beta-binomial decisions: correlated attempts with a chosen intra-class correlation.

    Each individual has an error propensity ``p_i ~ Beta(a, b)``, ``a =
    rate (1 - rho) / rho``, ``b = (1 - rate) (1 - rho) / rho``, so
    ``E[p_i] = rate`` and the correlation of two attempts of one individual
    is ``1 / (a + b + 1) = rho``; its ``m_i`` attempts are then independent
    Bernoulli(``p_i``), and ``errors_i ~ Binomial(m_i, p_i)``. ``rho = 0``
    gives plain binomial decisions, ``rho = 1`` individuals who always or
    never fail.

    Parameters
    ----------
    n_individuals : int
    attempts : int or array_like of int, shape (n_individuals,)
        Attempts per individual (an array for unbalanced designs).
    rate : float, keyword-only
        The true error rate ``pi`` (FNMR), in [0, 1].
    rho : float, keyword-only
        Intra-class correlation, in [0, 1].
    seed : int, SeedSequence or numpy Generator, keyword-only
    replicates : int, optional, keyword-only
        Simulate this many independent experiments at once, along a
        ``replicate`` dimension (for coverage studies).

    Returns
    -------
    xarray.Dataset
        ``errors`` (dims ``([replicate,] individual)``), ``attempts``
        (``individual``) and the drawn propensities ``individual_rate``
        (like ``errors``): ready for :func:`icc` and
        :func:`clustered_interval`. attrs ``rate``, ``rho``, ``beta_a``,
        ``beta_b``, ``simulator``.

    Examples
    --------
    >>> from bioxr.correlation import simulate_clustered_decisions, icc
    >>> sim = simulate_clustered_decisions(1000, 8, rate=0.1, rho=0.4, seed=0)
    >>> sim.errors.dims, int(sim.attempts.sum())
    (('individual',), 8000)
    >>> r = icc(sim)
    >>> abs(float(r.p) - 0.1) < 0.02, abs(float(r.rho) - 0.4) < 0.08
    (True, True)
    """
    n_individuals = int(n_individuals)
    if n_individuals < 1:
        raise ValueError("n_individuals must be at least 1.")
    m = np.asarray(attempts)
    if m.ndim == 0:
        m = np.full(n_individuals, int(m))
    if m.shape != (n_individuals,) or not np.issubdtype(m.dtype, np.integer) or (m < 0).any():
        raise ValueError(f"attempts must be a non-negative int or {n_individuals} non-negative ints.")
    if not 0 <= rate <= 1:
        raise ValueError(f"rate={rate!r} must lie in [0, 1].")
    if not 0 <= rho <= 1:
        raise ValueError(f"rho={rho!r} must lie in [0, 1] (the beta-binomial has no negative correlation).")
    if replicates is not None and int(replicates) < 1:
        raise ValueError("replicates must be a positive int or None.")
    rng = _rng(_entropy(seed), 0)
    shape = (n_individuals,) if replicates is None else (int(replicates), n_individuals)
    a = b = np.inf
    if rho == 0 or rate in (0, 1):
        p_i = np.full(shape, float(rate))
    elif rho == 1:
        a = b = 0.0
        p_i = (rng.random(shape) < rate).astype(float)
    else:
        a = rate * (1 - rho) / rho
        b = (1 - rate) * (1 - rho) / rho
        p_i = rng.beta(a, b, shape)
    errors = rng.binomial(m, p_i)
    dims = (INDIVIDUAL,) if replicates is None else ("replicate", INDIVIDUAL)
    coords = {INDIVIDUAL: np.arange(n_individuals)}
    if replicates is not None:
        coords["replicate"] = np.arange(int(replicates))
    ds = xr.Dataset(
        {
            "errors": (dims, errors.astype(np.int64)),
            "attempts": ((INDIVIDUAL,), m.astype(np.int64)),
            "individual_rate": (dims, p_i),
        },
        coords=coords,
    )
    ds.attrs = {
        "rate": float(rate),
        "rho": float(rho),
        "beta_a": float(a),
        "beta_b": float(b),
        "simulator": f"bioxr.correlation.simulate_clustered_decisions(rate={rate}, rho={rho}): beta-binomial",
    }
    return ds


# --------------------------------------------------------------------------
# internals
# --------------------------------------------------------------------------


def _check_counts_dataset(counts, dim) -> None:
    if not isinstance(counts, xr.Dataset) or "errors" not in counts or "attempts" not in counts:
        raise TypeError("counts must be a Dataset with per-individual 'errors' and 'attempts' (see attempt_counts).")
    for name in ("errors", "attempts"):
        if dim not in counts[name].dims:
            raise ValueError(f"counts[{name!r}] has no {dim!r} dimension; its dims are {counts[name].dims}.")
    e, m = counts["errors"], counts["attempts"]
    if bool((e < 0).any()) or bool((e > m).any()):
        raise ValueError("counts must satisfy 0 <= errors <= attempts for every individual.")


#: rho grid of the beta-binomial design and the log prior weights of its points (density 2 (1 - rho)).
_RHO = np.r_[0.0, np.geomspace(1e-3, 0.98, 60)]
_LOG_W_RHO = np.log(np.gradient(_RHO) * 2 * (1 - _RHO))
_MAX_GRID = 3000


def _beta_binomial_bounds(counts: xr.Dataset, dim, level: float) -> xr.DataArray:
    """Equal-tailed posterior bounds of pi, beta-binomial likelihood integrated over rho (module docstring).

    Every cell (combination of the other dims) is summarised by how many
    individuals have each pair (attempts, errors); the log likelihood on a
    (pi, rho) grid is then one matrix product with a table of beta-binomial
    log probabilities. Cells where the rate is 0, 1 or undefined get NaN.
    """
    e = counts["errors"]
    m = counts["attempts"].broadcast_like(e)
    other = [d for d in e.dims if d != dim]
    e2 = e.transpose(*other, dim).values.reshape(-1, e.sizes[dim]).astype(np.int64)
    m2 = m.transpose(*other, dim).values.reshape(-1, e.sizes[dim]).astype(np.int64)
    big_n, total = m2.sum(1), e2.sum(1)
    out = np.full((e2.shape[0], 2), np.nan)
    cells = np.flatnonzero((total > 0) & (total < big_n))
    if cells.size:
        width = int(m2.max()) + 1
        codes, inverse = np.unique(m2[cells] * width + e2[cells], return_inverse=True)
        hist = np.zeros((cells.size, codes.size))
        np.add.at(hist, (np.repeat(np.arange(cells.size), e2.shape[1]), inverse.ravel()), 1.0)
        keep = codes // width > 0  # individuals without attempts carry no likelihood
        out[cells] = _posterior_bounds(hist[:, keep], codes[keep] // width, codes[keep] % width, level)
    shape = [e.sizes[d] for d in other] + [2]
    return xr.DataArray(out.reshape(shape), dims=(*other, "bound"), coords={k: v for k, v in e.coords.items()
                                                                            if set(v.dims) <= set(other)})


def _posterior_bounds(hist, pm, pe, level):
    """Bounds for cells (rows of ``hist``, counts of individuals per (attempts, errors) pair)."""
    big_n, total = hist @ pm, hist @ pe
    p = total / big_n
    centre = special.logit(p)
    # a conservative logit-scale spread (the variance of rho = 1), for the grid's span and step
    m0 = (hist @ (pm * pm)) / big_n
    spread = np.sqrt(m0 / (big_n * p * (1 - p)))
    lo, hi = centre - 6 * spread - 3, centre + 6 * spread + 3
    step = float(np.min(spread / np.sqrt(m0))) / 6
    size = int(np.ceil((hi.max() - lo.min()) / step)) + 2
    if size > _MAX_GRID and hist.shape[0] > 1:  # cells too different for one grid: split them
        order = np.argsort(centre)
        halves = np.array_split(order, 2)
        out = np.empty((hist.shape[0], 2))
        for half in halves:
            out[half] = _posterior_bounds(hist[half], pm, pe, level)
        return out
    logit_grid = np.linspace(lo.min(), hi.max(), min(size, _MAX_GRID))
    grid = special.expit(logit_grid)
    log_post = np.empty((hist.shape[0], grid.size))
    for s in range(0, grid.size, 100):
        g = grid[s:s + 100, None, None]
        r = _RHO[None, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            size_ab = (1 - r) / r
            table = special.betaln(pe + g * size_ab, pm - pe + (1 - g) * size_ab) - special.betaln(g * size_ab, (1 - g) * size_ab)
        table = np.where(r == 0, pe * np.log(g) + (pm - pe) * np.log1p(-g), table)  # rho = 0: binomial
        ll = (hist @ table.reshape(-1, pm.size).T).reshape(hist.shape[0], g.shape[0], _RHO.size)
        log_post[:, s:s + 100] = special.logsumexp(ll + _LOG_W_RHO, axis=2)
    alpha = (1 - level) / 2
    log_edge = np.log(grid) + np.log1p(-grid)
    bounds = np.empty((hist.shape[0], 2))
    # on the logit scale, prior pi^-1 (1-pi)^-1 is flat; Jeffreys' adds (pi (1 - pi))^(1/2)
    for k, (a, q) in enumerate(((0.0, alpha), (0.5, 1 - alpha))):
        lp = log_post + a * log_edge
        dens = np.exp(lp - lp.max(1, keepdims=True))
        cdf = np.concatenate([np.zeros((dens.shape[0], 1)), np.cumsum(dens[:, 1:] + dens[:, :-1], 1)], 1)  # trapezoid
        cdf /= cdf[:, -1:]
        bounds[:, k] = [np.interp(q, c, logit_grid) for c in cdf]
    return special.expit(bounds)


def _individual_coords(cube, template, reduced, label_dims, codes, n_ind, *, exclude) -> dict:
    """Coordinates on the dims of the ``by`` label that are constant within each individual."""
    out = {}
    for name, coord in cube.coords.items():
        if name in exclude or not coord.dims or not set(coord.dims) <= set(label_dims):
            continue
        values = np.asarray(coord.broadcast_like(template).transpose(*reduced).values).ravel()
        frame = pd.DataFrame({"who": codes, "value": values})
        if (frame.groupby("who")["value"].nunique(dropna=False) > 1).any():
            continue
        first = frame.drop_duplicates("who").set_index("who")["value"].reindex(np.arange(n_ind))
        out[name] = (INDIVIDUAL, first.to_numpy(dtype=values.dtype))
    return out
