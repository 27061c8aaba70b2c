"""Certification claims: one-sided upper bounds of FMR and FNMR against a claimed rate (METHODS.md section 9).

A claim "FMR <= r at confidence c" (or "FNMR <= r") passes when the
one-sided upper confidence bound ``U`` of the rate, at level ``c``, does
not exceed ``r`` (FIDO; the Common Criteria biometric cPP: "the upper bound
of the confidence interval must not exceed the claimed FAR/FRR"). The
margin is ``r - U``. How ``U`` is computed depends on the design
(``method``):

- ``"binomial"``: the exact one-sided Clopper-Pearson bound ``U =
  Beta^-1(c; k + 1, N - k)`` for ``k`` errors in ``N`` comparisons, valid
  when the comparisons are independent. At ``k = 0`` it is ``1 - (1 -
  c)^(1/N)``, the exact form of the rule of three: about ``-ln(1 - c) / N``,
  ``3 / N`` at 95%, ``1.61 / N`` at 80% (the exact value is smaller by a
  relative ``-ln(1 - c) / (2N)``, 8e-5 at 80% and 10,000 comparisons).
- ``"subject"``: the subject bootstrap (whole subjects resampled with all
  their comparisons). FNMR: :func:`bioxr.bootstrap.bootstrap_rate_interval`
  on the per-subject counts of :func:`bioxr.correlation.attempt_counts`;
  FMR: :func:`bioxr.bootstrap.bootstrap_curve` at the threshold (crossed
  subjects: the Korn-Graubard count on the dyadic moment variance).
- ``"beta-binomial"`` and ``"icc"`` (FNMR only):
  :func:`bioxr.correlation.clustered_interval`, the beta-binomial posterior
  bound with the intra-class correlation integrated out, or the exact
  Clopper-Pearson bound on the ICC effective count ``N / (1 + (m0 - 1)
  rho)``.
- ``"auto"`` (default): with subject labels, ``"beta-binomial"`` for the
  FNMR and ``"subject"`` for the FMR (the only design-aware bound for
  crossed non-mated comparisons); without them (scores from two arrays),
  ``"binomial"``. The choice is recorded in ``bound_method``.

One-sided from two-sided. The interval functions above give two-sided,
equal-tailed intervals: the upper end of a two-sided interval at level ``2c
- 1`` leaves ``1 - c`` above it, so it is the one-sided upper bound at
``c`` (checked in each: the Wilson / Clopper-Pearson bounds of
:func:`bioxr.intervals.binomial_interval` take ``z_{1 - alpha/2}`` and
``Beta^-1(1 - alpha/2)``, the bootstrap-t the ``alpha/2`` quantile of the
studentised replicates, the beta-binomial posterior its ``1 - alpha/2``
quantile, each with ``alpha = 1 - level``: at ``level = 2c - 1`` all are at
``c``). Hence ``level`` must exceed 0.5. The zero-error bounds of those
functions are already one-sided (``-ln(1 - level) / n``) and would be too
small at ``2c - 1``; with no error the bound is therefore computed here, at
``c``: ``1 - (1 - c)^(1/n)`` on the independent units ``n``:

- FNMR, design-aware methods: ``n`` = the subjects with mated attempts,
  valid whatever the correlation of one subject's attempts (each errs at
  least once with chance at least the rate; METHODS.md section 9);
- FMR, ``"subject"``: the effective count of the bootstrap at the threshold
  (the design effect borrowed from the nearest more lenient threshold with
  at least 10 false matches, or, with none, the number of disjoint pairs of
  subjects, valid whatever the subject effects);
- ``"binomial"``: ``n`` = the comparisons.

Measured one-sided coverage on clustered FNMR data (beta-binomial attempts,
``rho = 0.3``, 2,000 experiments a cell, :func:`clustered_upper_bound`; cells
of 100-200 subjects x 3-10 attempts at FNMR 0.005-0.1, eight cells;
``tests/test_claims.py`` runs a smaller version):

=================  ==============  ==============
method             at 80%          at 95%
=================  ==============  ==============
beta-binomial      0.804 - 1.000   0.951 - 1.000
icc                0.810 - 0.841   0.914 - 1.000
subject            0.742 - 0.841   0.914 - 1.000
binomial           0.697 - 0.751   0.818 - 0.895
=================  ==============  ==============

The beta-binomial bound covers at the level in every cell (over-covering
where zero errors are common: the bound on the subjects); where few errors
are expected (100-200 x 5 attempts at FNMR 0.01-0.02) the subject bootstrap
under-covers at both levels (0.74-0.75 at 80%, 0.914-0.93 at 95%) and the
ICC count at 95% (0.914-0.93), which is why ``"auto"`` takes the
beta-binomial bound for the FNMR; the binomial bound, which ignores the
correlation, misses by 5-13 points.

Which claims, at which threshold:

- ``threshold`` given: every claim is tested at it (the system's fixed
  operating threshold, as certification requires);
- ``threshold=None`` with both ``fmr`` and ``fnmr``: the operating point
  "FNMR at FMR <= the FMR claim": the threshold is the most lenient one
  whose *observed* FMR does not exceed the FMR claim
  (:func:`bioxr.verification.fnmr_at_fmr`), and both claims are tested
  there. The threshold is chosen on the same data, so the FMR claim there
  usually fails (its bound lies above an observed FMR near the claim) and
  the FNMR there is optimistic; for a certification claim fix the
  threshold beforehand;
- ``threshold=None`` with only one claim: refused (an FMR or FNMR claim
  means nothing without a threshold).

Flags, for each claim: ``rule_of_30`` (fewer than 30 errors: the rate's
relative error exceeds about +-30% at 90% confidence, Doddington's rule of
30), ``resolution`` = ``1 / N`` (the rate's step) and ``beyond_resolution``
(the claim is below the bound that zero errors would give with this design:
no outcome of this test could support it).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr
from scipy import special, stats

from ._core import as_data, check_level, check_policy, check_replicates, check_targets, flat_comparisons, raise_no_subjects
from .correlation import _LOG_W_RHO, _RHO

__all__ = ["CLAIM_METHODS", "RULE_OF_30", "binomial_upper_bound", "claim_test", "clustered_upper_bound",
           "zero_error_bound"]

#: Methods of :func:`claim_test`; ``"beta-binomial"`` and ``"icc"`` are for the FNMR only.
CLAIM_METHODS = ("auto", "binomial", "subject", "beta-binomial", "icc")
_FOR_RATE = {"fmr": ("binomial", "subject"), "fnmr": ("binomial", "subject", "beta-binomial", "icc")}
#: Fewer errors than this leave a rate unreliable (Doddington's rule of 30).
RULE_OF_30 = 30
#: False matches a more lenient threshold needs for the FMR bootstrap to borrow its design effect at zero errors.
_BORROW = (10, 30, 100)
_NAMES = {"fmr": ("false matches", "non-mated comparisons"), "fnmr": ("false non-matches", "mated comparisons")}

BOUND_RULE = ("one-sided upper bound at the level c: exact Clopper-Pearson Beta^-1(c; k + 1, N - k) ('binomial'), "
              "or the upper end of the design-aware two-sided interval at level 2c - 1, which leaves 1 - c above "
              "it; with zero errors 1 - (1 - c)^(1/n) on the independent units n (subjects for the FNMR, the "
              "bootstrap's effective count for the FMR, the comparisons for 'binomial')")
RULE_OF_30_TEXT = ("rule_of_30: fewer than 30 errors, so the observed rate's relative error exceeds about +-30% at "
                   "90% confidence (Doddington)")
RESOLUTION_TEXT = ("resolution = 1 / N, the step of the observed rate; beyond_resolution: the claim is below the "
                   "bound zero errors would give with this design, so no outcome of this test could support it")


# ------------------------------------------------------------------ bounds
def zero_error_bound(units, level: float = 0.8):
    """The exact one-sided upper bound at zero errors, ``1 - (1 - level)^(1/n)``.

    Valid for ``n`` independent trials, and for ``n`` independent units
    (subjects) whatever the correlation of each unit's attempts. About
    ``-ln(1 - level) / n``: the rule of three (``3 / n``) at 95%, ``1.61 /
    n`` at 80%.

    Examples
    --------
    >>> round(float(zero_error_bound(1000, 0.95)) * 1000, 3)
    2.991
    >>> round(float(zero_error_bound(1000, 0.8)) * 1000, 3)
    1.608
    """
    level = check_level(level)
    n = np.asarray(units, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, -np.expm1(np.log1p(-level) / np.where(n > 0, n, 1.0)), np.nan)


def binomial_upper_bound(errors, trials, *, level: float = 0.8):
    """Exact one-sided Clopper-Pearson upper bound, ``Beta^-1(level; k + 1, N - k)``.

    ``errors`` may be non-integer (an effective count). 1 where every trial
    is an error; at zero errors :func:`zero_error_bound`.

    Examples
    --------
    >>> from scipy import stats
    >>> u = binomial_upper_bound(3, 1000, level=0.8)
    >>> bool(abs(u - stats.beta.ppf(0.8, 4, 997)) < 1e-15)
    True
    """
    level = check_level(level)
    k = np.asarray(errors, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = stats.beta.ppf(level, k + 1, np.where(n - k > 0, n - k, 1.0))
    return np.where(n <= 0, np.nan, np.where(k >= n, 1.0, np.where(k <= 0, zero_error_bound(n, level), inner)))


def _claim_level(level) -> float:
    level = check_level(level)
    if level <= 0.5:
        raise ValueError(f"level={level!r}; a claim's confidence must exceed 0.5 (e.g. 0.8, as FIDO asks, or 0.95): "
                         "the one-sided bound at c is the upper end of a two-sided interval at 2c - 1.")
    return level


def clustered_upper_bound(counts: xr.Dataset, *, level: float = 0.8, method: str = "beta-binomial",
                          n_replicates: int = 2000, seed=0, dim: str = "individual") -> xr.Dataset:
    """One-sided upper bound of a rate from per-individual error and attempt counts.

    Parameters
    ----------
    counts : xarray.Dataset
        ``errors`` and ``attempts`` over ``dim`` (from
        :func:`bioxr.correlation.attempt_counts` or
        :func:`bioxr.correlation.simulate_clustered_decisions`); other dims
        are kept (a ``replicate`` dim makes a Monte Carlo study one call).
    level : float, keyword-only
        One-sided confidence, above 0.5.
    method : {"beta-binomial", "icc", "subject", "binomial"}, keyword-only
        As in :func:`claim_test` (module docstring).
    n_replicates, seed : keyword-only
        Of the subject bootstrap.
    dim : str, keyword-only

    Returns
    -------
    xarray.Dataset
        ``bound``, ``errors``, ``trials``, ``units`` (individuals with
        attempts), ``effective_trials`` (the count the bound rests on),
        ``zero_error_bound`` (the bound of this design at zero errors) and
        ``bound_kind``, over the other dims.

    Examples
    --------
    >>> from bioxr.correlation import simulate_clustered_decisions
    >>> counts = simulate_clustered_decisions(150, 5, rate=0.05, rho=0.3, seed=1)
    >>> res = clustered_upper_bound(counts, level=0.8)
    >>> bool(res.bound > res.errors / res.trials), int(res.units)
    (True, 150)
    """
    level = _claim_level(level)
    if method not in _FOR_RATE["fnmr"]:
        raise ValueError(f"method={method!r}; choose one of {_FOR_RATE['fnmr']}.")
    e, m = counts["errors"], counts["attempts"]
    total = e.sum(dim).astype(float)
    trials = m.broadcast_like(e).sum(dim).astype(float)
    units = (m > 0).sum(dim).astype(float).broadcast_like(total)
    if method == "binomial":
        bound = xr.apply_ufunc(binomial_upper_bound, total, trials, kwargs={"level": level})
        n_eff = trials
        zero = xr.apply_ufunc(zero_error_bound, trials, kwargs={"level": level})
    else:
        if method == "subject":
            from .bootstrap import bootstrap_rate_interval

            res = bootstrap_rate_interval(e, m, dim=dim, n_replicates=n_replicates, level=2 * level - 1, seed=seed)
        else:
            from .correlation import clustered_interval

            res = clustered_interval(counts[["errors", "attempts"]], level=2 * level - 1, design=method,
                                     method="clopper-pearson", dim=dim)
        upper = res["rate_interval"].sel(bound="upper", drop=True)
        drop = [c for c in upper.coords if c not in upper.dims]
        bound, n_eff = upper.drop_vars(drop), res["n_eff"].drop_vars([c for c in res["n_eff"].coords
                                                                       if c not in res["n_eff"].dims])
        zero = xr.apply_ufunc(zero_error_bound, units, kwargs={"level": level})
        bound = xr.where(total <= 0, zero, bound)
        n_eff = xr.where(total <= 0, units, n_eff)
    bound = xr.where(total >= trials, 1.0, bound)
    kind = xr.where(total <= 0, "zero errors: on the " + ("comparisons" if method == "binomial" else "subjects"),
                    "from the errors")
    return xr.Dataset({"bound": bound, "errors": total, "trials": trials, "units": units,
                       "effective_trials": n_eff.astype(float), "zero_error_bound": zero, "bound_kind": kind},
                      attrs={"method": method, "level": level, "bound_rule": BOUND_RULE})


# ------------------------------------------------------------------ the claim
def claim_test(obj, *, fmr=None, fnmr=None, threshold=None, level: float = 0.8, method="auto",
               n_replicates: int = 2000, seed=0, failure_policy: str = "exclude") -> xr.Dataset:
    """Test claims "FMR <= r" and/or "FNMR <= r" by their one-sided upper bound at ``level``.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list (the same result from either).
    fmr, fnmr : float, optional, keyword-only
        The claimed rates, in (0, 1); at least one.
    threshold : float, optional, keyword-only
        The decision threshold of the claim (accept when ``s >= t`` for
        similarity scores, ``d <= t`` for distances; ties with the
        threshold are accepted, so a non-mated score equal to it is a false
        match). None: with both claims, the operating point where the
        observed FMR first meets the FMR claim (module docstring); with
        one claim, an error.
    level : float, keyword-only
        One-sided confidence, above 0.5; default 0.8 (FIDO).
    method : str or mapping, keyword-only
        ``"auto"`` (default), ``"binomial"``, ``"subject"``,
        ``"beta-binomial"`` or ``"icc"`` (the last two FNMR only); a
        mapping such as ``{"fmr": "binomial", "fnmr": "icc"}`` chooses per
        rate. See the module docstring.
    n_replicates, seed : keyword-only
        Of the subject bootstrap (``"subject"``, and ``"auto"`` for the FMR).
    failure_policy : {"exclude", "nist"}, keyword-only
        ``"nist"``: a failed mated comparison is a false non-match.
        (``"iso"`` generalized rates are not counts of errors and have no
        binomial bound: refused.)

    Returns
    -------
    xarray.Dataset
        Over ``rate`` (the claimed ones, ``"fmr"`` then ``"fnmr"``):
        ``claim``, ``observed``, ``errors``, ``trials``, ``units`` (the
        independent units: subjects with mated attempts for the FNMR,
        subjects in non-mated comparisons for the FMR; NaN without subject
        labels), ``probe_units`` and ``reference_units`` (FMR: the probe
        and the reference subjects), ``effective_trials``, ``bound``,
        ``bound_method``, ``bound_kind``, ``zero_error_bound``, ``passes``
        (``bound <= claim``), ``margin`` (``claim - bound``),
        ``rule_of_30``, ``resolution`` (``1 / trials``),
        ``beyond_resolution`` and ``statement`` (a sentence). Scalar
        coordinates ``threshold`` and ``level``. attrs ``summary`` (the
        sentences), ``threshold_source``, ``bound_rule``, ``rule_of_30``,
        ``resolution``, ``failure_policy``, ``score_kind``,
        ``decision_rule``, ``n_replicates``, ``seed``.

    See Also
    --------
    bioxr.planning.plan_test : the test size a claim needs.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.claims import claim_test
    >>> cube = bioxr.simulate.gaussian(n_subjects=150, n_samples=3, mated_mean=5.0, seed=0)
    >>> res = claim_test(cube, fmr=1e-3, fnmr=0.1, threshold=3.2, n_replicates=500)
    >>> res.passes.values.tolist(), res.errors.values.tolist(), res.units.values.tolist()
    ([True, True], [47.0, 29.0], [150.0, 150.0])
    >>> res.bound_method.values.tolist(), res.rule_of_30.values.tolist()
    (['subject', 'beta-binomial'], [False, True])
    >>> print(res.statement.sel(rate="fnmr").item())  # doctest: +ELLIPSIS
    FNMR <= 0.1 at threshold 3.2: PASSES at 80% confidence. 29 false non-matches in 450 mated comparisons (150 subjects)...

    Independent comparisons, the exact Clopper-Pearson bound:

    >>> exact = claim_test(cube, fmr=1e-3, threshold=3.2, method="binomial")
    >>> from scipy import stats
    >>> bool(abs(exact.bound.item() - stats.beta.ppf(0.8, 48, 67050 - 47)) < 1e-12)
    True
    """
    obj = as_data(obj, "claim_test")
    claims = _check_claims(fmr, fnmr)
    level = _claim_level(level)
    if failure_policy == "iso":
        raise ValueError("failure_policy='iso' gives generalized rates (GFAR, GFRR), which are not counts of errors "
                         "and have no binomial bound; use 'nist' (a failed mated comparison is a false non-match) "
                         "or 'exclude', and report FTE/FTA beside the claim.")
    check_policy(failure_policy)
    subjects = _has_subjects(obj)
    methods = _check_methods(method, claims, subjects)
    if "subject" in methods.values():
        n_replicates = check_replicates(n_replicates, minimum=10, level=2 * level - 1)
    t, source = _threshold(obj, claims, threshold, failure_policy)
    from .verification import error_rates

    rates = error_rates(obj, t, failure_policy=failure_policy)
    rows = {}
    for rate, claim in claims.items():
        do = _fmr_row if rate == "fmr" else _fnmr_row
        rows[rate] = do(obj, t, rates, claim, level, methods[rate], n_replicates, seed, failure_policy, subjects)
    return _assemble(rows, t, level, source, rates.attrs, failure_policy, n_replicates, seed)


def _check_claims(fmr, fnmr) -> dict:
    claims = {}
    for name, value in (("fmr", fmr), ("fnmr", fnmr)):
        if value is None:
            continue
        if np.ndim(value) != 0:
            raise ValueError(f"{name}={value!r}; a claim is one rate (a number in (0, 1)); test several claims "
                             "with several calls.")
        claims[name] = float(check_targets(value, name, closed=False)[0])
    if not claims:
        raise ValueError("give a claim: fmr= and/or fnmr=, the claimed rate(s) in (0, 1), e.g. fmr=1e-4.")
    return claims


def _has_subjects(obj) -> bool:
    if isinstance(obj, xr.Dataset):
        from .comparisons import has_subjects

        return has_subjects(obj)
    return True


def _check_methods(method, claims, subjects) -> dict:
    given = dict(method) if isinstance(method, Mapping) else {rate: method for rate in claims}
    unknown = set(given) - {"fmr", "fnmr"}
    if unknown:
        raise ValueError(f"method names {sorted(map(str, unknown))}; a mapping of methods takes the keys 'fmr' "
                         "and 'fnmr'.")
    out = {}
    for rate in claims:
        m = given.get(rate, "auto")
        if m not in CLAIM_METHODS:
            raise ValueError(f"method={m!r} for the {rate.upper()}; choose one of {CLAIM_METHODS}.")
        if m == "auto":
            m = ("subject" if rate == "fmr" else "beta-binomial") if subjects else "binomial"
        if m not in _FOR_RATE[rate]:
            raise ValueError(f"method={m!r} is for the FNMR only (attempts clustered within subjects); for the FMR, "
                             "whose non-mated comparisons cross two subjects, use 'subject' or 'binomial', e.g. "
                             "method={'fmr': 'subject', 'fnmr': '" + m + "'}.")
        if m != "binomial" and not subjects:
            raise_no_subjects(f"method={m!r}")
        out[rate] = m
    return out


def _threshold(obj, claims, threshold, failure_policy):
    if threshold is not None:
        try:
            bad = np.ndim(threshold) != 0 or not np.isfinite(float(threshold))
        except (TypeError, ValueError):
            bad = True
        if bad:
            raise ValueError(f"threshold={threshold!r}; give the claim's decision threshold, one finite number.")
        return float(threshold), "given"
    if len(claims) < 2:
        (rate,) = claims
        raise ValueError(f"an {rate.upper()} claim needs a threshold: give threshold= (the system's fixed operating "
                         "threshold), or give both fmr= and fnmr= to test the FNMR at the operating point where the "
                         "observed FMR meets the FMR claim.")
    from .verification import fnmr_at_fmr

    op = fnmr_at_fmr(obj, claims["fmr"], failure_policy=failure_policy)
    return float(op["threshold"]), ("operating point: the most lenient threshold whose observed FMR does not exceed "
                                    "the FMR claim (bioxr.verification.fnmr_at_fmr), chosen on these data: the FMR "
                                    "bound there is usually above the claim and the FNMR optimistic; fix the "
                                    "threshold beforehand for a certification claim")


def _fmr_row(obj, t, rates, claim, level, method, n_replicates, seed, failure_policy, subjects):
    k, n = float(rates["false_matches"]), float(rates["n_nonmated"])
    row = {"claim": claim, "errors": k, "trials": n, "units": np.nan, "probe_units": np.nan,
           "reference_units": np.nan}
    top = kind = None
    if subjects:
        from ._core import blockstats

        if blockstats.is_lazy(obj):  # blockwise: the subjects and the few highest scores, never the scores
            summary = blockstats.nonmated_summary(obj, failure_policy, top=_BORROW)
            row.update({k: float(summary[k]) for k in ("units", "probe_units", "reference_units")})
            top, kind = summary["top"], summary["kind"]
        else:
            scores, p, r, mated, kind = flat_comparisons(obj, failure_policy=failure_policy)
            p, r = p[~mated], r[~mated]
            row.update(units=float(np.unique(np.concatenate([p, r])).size), probe_units=float(np.unique(p).size),
                       reference_units=float(np.unique(r).size))
            top = _highest(scores[~mated], kind)
    if method == "binomial":
        row.update(bound=float(binomial_upper_bound(k, n, level=level)), effective_trials=n,
                   zero_error_bound=float(zero_error_bound(n, level)),
                   bound_kind="zero errors: on the comparisons" if k == 0 else "from the errors")
    else:
        from .bootstrap import bootstrap_curve

        grid, borrow = _fmr_grid(top, t, kind)
        boot = bootstrap_curve(obj, thresholds=grid, n_replicates=n_replicates, level=2 * level - 1, seed=seed,
                               failure_policy=failure_policy)
        at = boot.sel(threshold=t)
        n_eff = float(at["fmr_n_eff"])
        zero = float(zero_error_bound(n_eff, level))
        if k == 0:
            bound = zero
            how = ("zero errors: on the bootstrap's effective count, borrowed from a more lenient threshold"
                   if borrow else "zero errors: on the disjoint pairs of subjects")
        else:
            bound, how = float(at["fmr_interval"].sel(bound="upper")), "from the errors"
        row.update(bound=1.0 if k >= n else bound, effective_trials=n_eff, zero_error_bound=zero, bound_kind=how)
    row["bound_method"] = method
    return row


def _highest(scores, kind) -> dict:
    """The ``k``-th highest finite non-mated score (similarity orientation) for each ``k`` of ``_BORROW``."""
    sign = -1.0 if kind == "distance" else 1.0
    s = np.sort(sign * scores[np.isfinite(scores)])[::-1]
    return {k: s[k - 1] for k in _BORROW if s.size >= k}


def _fmr_grid(top, t, kind):
    """The claim's threshold and, for the zero-error count, a few more lenient ones with 10+ false matches.

    ``top``: the ``k``-th highest non-mated scores (similarity orientation), :func:`_highest`.
    """
    sign = -1.0 if kind == "distance" else 1.0
    lenient = [sign * v for v in top.values() if v < sign * t]
    return np.unique(np.r_[t, lenient]), bool(lenient)


def _fnmr_row(obj, t, rates, claim, level, method, n_replicates, seed, failure_policy, subjects):
    k, n = float(rates["false_nonmatches"]), float(rates["n_mated"])
    if n <= 0:
        raise ValueError("the data hold no mated comparison: an FNMR claim needs some.")
    row = {"claim": claim, "errors": k, "trials": n, "units": np.nan, "probe_units": np.nan,
           "reference_units": np.nan}
    if subjects:
        from .correlation import attempt_counts

        counts = attempt_counts(obj, t, failure_policy=failure_policy)
        res = clustered_upper_bound(counts, level=level, method=method, n_replicates=n_replicates, seed=seed)
        row["units"] = float(res["units"])
        if method != "binomial":
            row.update(bound=float(res["bound"]), effective_trials=float(res["effective_trials"]),
                       zero_error_bound=float(res["zero_error_bound"]), bound_kind=str(res["bound_kind"].values),
                       bound_method=method)
            return row
    row.update(bound=float(binomial_upper_bound(k, n, level=level)), effective_trials=n,
               zero_error_bound=float(zero_error_bound(n, level)), bound_method="binomial",
               bound_kind="zero errors: on the comparisons" if k == 0 else "from the errors")
    return row


_ORDER = ("claim", "observed", "errors", "trials", "units", "probe_units", "reference_units", "effective_trials",
          "bound", "bound_method", "bound_kind", "zero_error_bound", "passes", "margin", "rule_of_30", "resolution",
          "beyond_resolution", "statement")


def _assemble(rows, t, level, source, rate_attrs, failure_policy, n_replicates, seed) -> xr.Dataset:
    for rate, row in rows.items():
        row["observed"] = row["errors"] / row["trials"]
        row["passes"] = bool(row["bound"] <= row["claim"])
        row["margin"] = row["claim"] - row["bound"]
        row["rule_of_30"] = bool(row["errors"] < RULE_OF_30)
        row["resolution"] = 1.0 / row["trials"]
        row["beyond_resolution"] = bool(row["zero_error_bound"] > row["claim"])
        row["statement"] = _statement(rate, row, t, level)
    names = list(rows)
    data = {v: ("rate", [rows[r][v] for r in names]) for v in _ORDER}
    ds = xr.Dataset(data, coords={"rate": names, "threshold": t, "level": level})
    texts = {"claim": "claimed rate", "observed": "observed rate, errors / trials", "bound": f"one-sided {level:.0%} "
             "upper bound", "margin": "claim - bound (negative: fails)", "units": "independent units (subjects)",
             "effective_trials": "the count the bound rests on", "passes": "bound <= claim"}
    for name, text in texts.items():
        ds[name].attrs["long_name"] = text
    ds.attrs = {
        "summary": " ".join(rows[r]["statement"] for r in names),
        "threshold_source": source,
        "bound_rule": BOUND_RULE,
        "rule_of_30": RULE_OF_30_TEXT,
        "resolution": RESOLUTION_TEXT,
        "failure_policy": failure_policy,
        "score_kind": rate_attrs.get("score_kind", "similarity"),
        "decision_rule": rate_attrs.get("decision_rule", ""),
        "n_replicates": int(n_replicates),
        "seed": str(seed),
    }
    return ds


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _statement(rate, row, t, level) -> str:
    errs, trials = _NAMES[rate]
    verdict = "PASSES" if row["passes"] else "FAILS"
    if np.isnan(row["units"]):
        units = "no subject labels: the comparisons are taken as independent"
    elif rate == "fmr":
        units = (f"{int(row['probe_units']):,} probe and {int(row['reference_units']):,} reference subjects, "
                 f"{int(row['units']):,} in all")
    else:
        units = f"{int(row['units']):,} subjects"
    text = (f"{rate.upper()} <= {_fmt(row['claim'])} at threshold {t:.6g}: {verdict} at {level:.0%} confidence. "
            f"{int(row['errors']):,} {errs} in {int(row['trials']):,} {trials} ({units}); observed "
            f"{_fmt(row['observed'])}, one-sided {level:.0%} upper bound {_fmt(row['bound'])} ({row['bound_method']}; "
            f"{row['bound_kind']}), margin {row['margin']:+.3g}.")
    if row["rule_of_30"]:
        text += f" Fewer than {RULE_OF_30} errors (rule of 30): the observed rate is imprecise."
    text += f" Resolution 1/{int(row['trials']):,} = {_fmt(row['resolution'])}."
    if row["beyond_resolution"]:
        text += (f" The claim is below {_fmt(row['zero_error_bound'])}, the bound even zero errors would give: this "
                 "test cannot support it at this level; test more subjects (bioxr.planning.plan_test).")
    return text


# ------------------------------------------------------------------ the FNMR bounds, per configuration
# For planning (bioxr.planning): the design-aware FNMR bounds of a balanced test (every subject with m attempts)
# depend on the data only through its configuration, how many subjects show 0, 1, ..., m errors; these compute
# them for many configurations at once (tests/test_planning.py checks them against clustered_upper_bound).
_W_RHO = np.exp(_LOG_W_RHO)


def _icc_bound(hist, m: int, level: float) -> np.ndarray:
    """claim_test's ``"icc"`` bound (errors in (0, N)): Clopper-Pearson at ``c`` on ``N / deff``, ``deff`` from the
    moment ICC of :func:`bioxr.correlation.icc`."""
    e = np.arange(m + 1.0)
    units = hist.sum(1)
    big_n = units * m
    p = (hist @ e) / big_n
    q = p[:, None]
    cross = (hist * ((e - m * q) ** 2 - (e * (1 - q) ** 2 + (m - e) * q**2))).sum(1)
    pairs = units * m * (m - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(pairs > 0, np.minimum(cross / (p * (1 - p) * pairs), 1.0), 0.0)
    n_eff = big_n / np.maximum(1.0, 1.0 + (m - 1.0) * rho)
    x = p * n_eff
    return stats.beta.ppf(level, x + 1, n_eff - x)


class _Tables:
    """Log beta-binomial probabilities of e = 0..m errors (up to a constant in e) on (pi, rho), pi on the logit
    lattice ``i 2^-q`` and rho on the grid of the beta-binomial bound; computed once per lattice point."""

    def __init__(self):
        self.store: dict = {}

    @staticmethod
    def _compute(m: int, g) -> np.ndarray:
        pe = np.arange(m + 1.0)
        gg, r = g[:, None, None], _RHO[None, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (1 - r) / r
            table = special.betaln(pe + gg * s, m - pe + (1 - gg) * s) - special.betaln(gg * s, (1 - gg) * s)
        return np.where(r == 0, pe * np.log(gg) + (m - pe) * np.log1p(-gg), table)  # rho = 0: binomial

    def get(self, m: int, q: int, i_lo: int, i_hi: int) -> np.ndarray:
        """The table at lattice points ``i_lo..i_hi``: shape (points, rho, m + 1)."""
        h = 2.0**-q
        first, table = self.store.get((m, q), (i_lo, np.zeros((0, _RHO.size, m + 1))))
        if not table.size:
            first = i_lo
        last = first + table.shape[0] - 1
        parts = []
        if i_lo < first:
            parts.append(self._compute(m, special.expit(h * np.arange(i_lo, first))))
        parts.append(table)
        if i_hi > last:
            parts.append(self._compute(m, special.expit(h * np.arange(max(last + 1, i_lo), i_hi + 1))))
        if len(parts) > 1:
            first, table = min(first, i_lo), np.concatenate(parts)
            self.store[(m, q)] = (first, table)
        return table[i_lo - first:i_hi - first + 1]


def _bb_cdf(hist, m: int, x: float, tables: _Tables, *, per_sd: float, width: float, margin: float) -> np.ndarray:
    """The posterior CDF at logit ``x`` of claim_test's ``"beta-binomial"`` upper bound, per configuration.

    The model of :func:`bioxr.correlation.clustered_interval`: beta-binomial
    likelihood integrated over its ``rho`` grid and prior, flat prior on
    logit(pi) times ``(pi (1 - pi))^(1/2)`` for the upper bound, trapezoid
    CDF on a logit grid of step at most ``sd / per_sd`` spanning ``centre
    +- (width spread + margin)`` (claim_test: 6, 6, 3). The bound is at most
    the claim exactly where this CDF at the claim is at least ``c``.
    """
    pe = np.arange(m + 1.0)
    big_n = hist.sum(1) * m
    p = (hist @ pe) / big_n
    centre = special.logit(p)
    sd = 1 / np.sqrt(big_n * p * (1 - p))  # logit scale, independent attempts
    spread = np.sqrt(m) * sd  # ... units whose attempts agree (rho = 1)
    out = np.empty(hist.shape[0])
    order = np.argsort(centre, kind="stable")
    start = 0
    while start < order.size:  # configurations with close centres share one grid
        stop = max(int(np.searchsorted(centre[order], centre[order[start]] + 0.25, side="right")), start + 1)
        idx = order[start:stop]
        start = stop
        lo = float((centre[idx] - width * spread[idx] - margin).min())
        hi = float((centre[idx] + width * spread[idx] + margin).max())
        if x >= hi or x <= lo:
            out[idx] = float(x >= hi)
            continue
        q = int(np.ceil(np.log2(per_sd / float(sd[idx].min()))))
        i_lo, i_hi = int(np.floor(lo * 2.0**q)), int(np.ceil(hi * 2.0**q))
        grid = np.arange(i_lo, i_hi + 1) * 2.0**-q
        g = special.expit(grid)
        table = tables.get(m, q, i_lo, i_hi)
        ll = (hist[idx] @ table.reshape(-1, m + 1).T).reshape(idx.size, grid.size, _RHO.size)
        ll -= ll.max((1, 2))[:, None, None]  # what underflows has no mass
        np.exp(ll, out=ll)
        f = (ll @ _W_RHO) * np.sqrt(g * (1 - g))  # rho integrated out; the upper bound's prior
        # the mass below x: trapezoid to the node j below x with its Euler-Maclaurin end correction, then the
        # quadratic through nodes j - 1, j, j + 1 from it to x (error O(h^4), not the O(h^2) of the trapezoid)
        j = min(max(int(np.searchsorted(grid, x, side="right")) - 1, 1), grid.size - 2)
        t = (x - grid[j]) / (grid[1] - grid[0])
        f0, f1, f2 = f[:, j - 1], f[:, j], f[:, j + 1]
        below = (f[:, :j].sum(1) + f1 / 2 - (f2 - f0) / 24 + f1 * t + (f2 - f0) * t**2 / 4
                 + (f2 - 2 * f1 + f0) * t**3 / 6)
        out[idx] = np.clip(below / (f.sum(1) - (f[:, 0] + f[:, -1]) / 2), 0.0, 1.0)
    return out


def _bb_passes(hist, m: int, claim: float, level: float, tables: _Tables) -> np.ndarray:
    """claim_test's beta-binomial bound <= claim (errors in (0, N)): clear cases on a coarse grid, the rest fine.

    The coarse CDF is within 0.003 of the exact integral, the fine one within
    2e-4 (measured against a grid eight times finer, levels 0.8 and 0.95);
    claim_test's own trapezoid grid is within about 1e-3.
    """
    x = float(special.logit(claim))
    e = np.arange(m + 1.0)
    big_n = hist.sum(1) * m
    p = (hist @ e) / big_n
    centre, spread = special.logit(p), np.sqrt(m / (big_n * p * (1 - p)))
    out = x >= centre + 8 * spread  # the posterior lies below the claim
    near = np.flatnonzero((x < centre + 8 * spread) & (x > centre - 8 * spread - 3))
    if near.size:
        coarse = _bb_cdf(hist[near], m, x, tables, per_sd=1.5, width=5.0, margin=0.0)
        out[near] = coarse >= level
        unsure = near[np.abs(coarse - level) < 0.01]
        if unsure.size:
            out[unsure] = _bb_cdf(hist[unsure], m, x, tables, per_sd=3.0, width=6.0, margin=1.0) >= level
    return out


def _config_passes(hist, m: int, claim: float, level: float, method: str, tables: _Tables) -> np.ndarray:
    """Whether claim_test's FNMR bound (``method``) is at most the claim, for configurations ``hist`` (C, m + 1)."""
    hist = np.asarray(hist, dtype=float).reshape(-1, m + 1)
    units = hist.sum(1)
    total = hist @ np.arange(m + 1.0)
    out = np.zeros(hist.shape[0], dtype=bool)
    zero = total <= 0
    out[zero] = zero_error_bound(units[zero], level) <= claim  # on the units, whatever the correlation
    mid = ~zero & (total < units * m)  # every attempt an error: the bound is 1
    if mid.any():
        out[mid] = (_icc_bound(hist[mid], m, level) <= claim if method == "icc"
                    else _bb_passes(hist[mid], m, claim, level, tables))
    return out
