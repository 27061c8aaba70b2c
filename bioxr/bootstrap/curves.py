"""Bootstrap replicates of the FMR and FNMR curves, their bands, FNMR at FMR targets and the EER."""

from __future__ import annotations

import functools

import numpy as np
import xarray as xr

from .._core import check_level, check_replicates, check_targets
from ..simulate import _entropy, _rng
from ._bounds import INTERVAL_TEXT, bound_kind, bounds_array, check_interval, effective_count, rate_bounds
from ._stats import _check_thresholds, _check_unit, _counts, _moment_corrected, _Stats, subject_draws
from ._studentized import (_STUDENTISED_TEXT, _STUDENTISED_UPPER_TEXT, _lenient_to_strict, _operating_point_variance,
                           _studentized_union, _t_factor)

FMR_VARIANCES = ("moments", "pigeonhole")
#: Non-mated comparisons that make the variance of a zero-error FMR borrowable from a nearby threshold.
BORROW_AT = 10

_FMR_VARIANCE_TEXT = {
    "moments": ("pigeonhole replicates (pair weights w_a w_c) rescaled at each threshold to the method-of-moments "
                "variance for crossed subjects (dyadic cluster-robust; Owen 2007, the pigeonhole bootstrap), floored at the "
                "binomial variance"),
    "pigeonhole": "pair weights w_a w_c (Owen's pigeonhole bootstrap: about 3x the variance of independent comparisons)",
}


def _check_fmr_variance(value) -> str:
    if value not in FMR_VARIANCES:
        raise ValueError(f"fmr_variance={value!r}; choose one of {FMR_VARIANCES}: 'moments' (the default) corrects "
                         "the pigeonhole bootstrap's FMR spread for crossed subjects, 'pigeonhole' keeps it raw.")
    return value


def bootstrap_replicates(
    cube: xr.DataArray,
    *,
    thresholds=None,
    n_replicates: int = 2000,
    seed=0,
    unit: str = "subject",
    two_level: bool = False,
    progress: bool = False,
    failure_policy: str = "exclude",
    fmr_variance: str = "moments",
) -> xr.Dataset:
    """FMR and FNMR of every bootstrap replicate at a grid of thresholds.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube (in memory), or a comparison list: a Dataset over a
        ``comparison`` dimension with ``score``, ``subject`` and
        ``reference_subject`` (for sparse designs where each probe meets
        only a few references).
    thresholds : array_like, optional, keyword-only
        The grid; default every distinct score when there are few, else
        about 400 points: quantiles of the mated scores and log-spaced
        FMR levels of the non-mated ones.
    n_replicates : int, keyword-only
    seed : int, SeedSequence or Generator, keyword-only
    unit : str, keyword-only
        What is resampled: ``"subject"``.
    two_level : bool, keyword-only
        Also resample each drawn subject's mated attempts: every copy of a
        subject drawn ``w`` times gets its own resample of its attempts.
        The one-stage bootstrap (the default) already carries the
        within-subject variation, since it resamples subjects with all
        their attempts; the second stage adds it again, so two-level
        replicates over-state the variance of the FNMR by about the
        within-subject part, ``p (1 - p) (1 - rho) / N`` (Davison &
        Hinkley 1997, section 3.8): by a factor near 2 when attempts are
        independent, less when subjects differ. Use it for a deliberately
        conservative band, or to study the design.
    progress : bool, keyword-only
        Show a progress bar (tqdm: a widget in notebooks). Not on a
        dask-backed cube or list: there the replicates run as tasks on the
        workers, beside the statistics, and no bar is shown.
    failure_policy : {"exclude", "nist", "iso"}, keyword-only
        How failed enrolments and acquisitions count: left out; (NIST) as
        comparisons never accepted, so a mated one is an error at every
        threshold; or (ISO) through the generalized rates, each replicate
        with the FTE and FTA of its own resampled subjects. Failures are
        resampled with their subjects.
    fmr_variance : {"moments", "pigeonhole"}, keyword-only
        A non-mated comparison of probe subject ``a`` with reference
        subject ``c`` is in a replicate ``w_a w_c`` times. Those pair
        weights carry the subject effects, but they triple the share of
        the comparisons' own noise (Owen 2007): with nearly independent
        comparisons the replicate FMR varies about three times too much.
        ``"moments"`` (default) rescales each replicate's deviation from
        the point FMR, threshold by threshold, to the method-of-moments
        variance of crossed subjects (``fmr_variance`` in the result;
        METHODS.md section 12), floored at the binomial variance, and keeps
        each replicate curve monotone. ``"pigeonhole"``: the raw pair
        weights (what resampling and recounting the subjects gives).

    Returns
    -------
    xarray.Dataset
        ``fmr`` and ``fnmr`` over ``("replicate", "threshold")``, and the
        point estimates ``fmr_point``, ``fnmr_point`` over ``threshold``;
        ``false_matches``, ``n_nonmated`` and ``n_mated`` (counts), and with
        ``"moments"`` ``fmr_variance`` (the moment variance of the FMR).
        attrs ``n_units`` (subjects), ``mated_units`` (subjects with a mated
        comparison), ``nonmated_units``.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    >>> reps = bioxr.bootstrap.bootstrap_replicates(cube, n_replicates=50, seed=1)
    >>> reps.fnmr.dims
    ('replicate', 'threshold')
    """
    return _replicates(cube, thresholds=thresholds, n_replicates=n_replicates, seed=seed, unit=unit,
                       two_level=two_level, progress=progress, failure_policy=failure_policy,
                       fmr_variance=fmr_variance)


def _replicates(cube, *, thresholds, n_replicates, seed, unit, two_level, progress, failure_policy, fmr_variance,
                studentise: bool = False, then=None):
    """:func:`bootstrap_replicates`; with ``studentise``, also ``fmr_replicate_variance`` and
    ``fnmr_replicate_variance`` (replicate, threshold): each replicate's own variance of its FMR (dyadic moments,
    :meth:`_Stats.fmr_variance_replicates`, calibrated by :func:`_calibrated_variance`) and FNMR (cluster-robust),
    the studentisers of the bootstrap-t.

    With ``then`` (a picklable function of the replicates), ``then(replicates)`` instead. On a lazy cube or list
    the statistics are built where its blocks are and kept there (:meth:`_Stats.remote`), the replicates' raw
    curves run in tasks of ``REPLICATE_TASK`` (one task with ``two_level``, whose second stage is one random
    stream), the rest and ``then`` in a task beside the statistics, and only the result travels: a band or an
    interval, not the replicates nor the statistics. The progress bar is then not shown."""
    from .._core.blockstats import defer, fetch, is_lazy

    n_replicates = check_replicates(n_replicates, minimum=2)
    _check_fmr_variance(fmr_variance)
    run = functools.partial(_replicates_of, n_replicates=n_replicates, root=_entropy(seed), unit=unit,
                            two_level=two_level, failure_policy=failure_policy, fmr_variance=fmr_variance,
                            studentise=studentise, then=then)
    if is_lazy(cube):  # the statistics stay where they were counted; the replicates (and then) run there too
        stats = _Stats.remote(cube, thresholds, unit, failure_policy)
        if isinstance(stats, _Stats):  # another engine: built here, block by block
            return run(stats, progress=progress)
        if two_level:  # one random stream through every replicate's second stage: one task
            return fetch(defer(run, stats, keep=False))
        # the replicates' raw curves in tasks of REPLICATE_TASK rows (in parallel on the workers), then one task
        # beside the statistics finishes them; each row depends on its own draw only, so the result is the same
        parts = [defer(functools.partial(_raw_rows, n_replicates=n_replicates, root=run.keywords["root"],
                                         rows=(r0, min(r0 + REPLICATE_TASK, n_replicates)), studentise=studentise),
                       stats, keep=False) for r0 in range(0, n_replicates, REPLICATE_TASK)]
        return fetch(defer(run, stats, *parts, keep=False))
    return run(_Stats(cube, thresholds, unit, failure_policy), progress=progress)


#: Replicates per task on a lazy cube: their raw curves are computed in parallel where the statistics are.
REPLICATE_TASK = 250


def _weights(n_units: int, n_replicates: int, root, rows=None) -> np.ndarray:
    draws = subject_draws(n_units, n_replicates, seed=root)
    return _counts(draws if rows is None else draws[rows[0] : rows[1]], n_units)


def _raw(stats: _Stats, weights, rng2, studentise: bool, two_level: bool, bar=None):
    """The replicates' raw FMR and FNMR, and (``studentise``) their own variances; each row from its own weights."""
    fnmr = np.empty((weights.shape[0], stats.grid.size))
    fmr = np.empty_like(fnmr)
    step = 250
    for s in range(0, weights.shape[0], step):
        w = weights[s : s + step]
        fmr[s : s + step], fnmr[s : s + step] = stats.fmr(w), stats.fnmr(w, rng2)
        if bar is not None:
            bar.update(w.shape[0])
    if bar is not None:
        bar.close()
    var = {}
    if studentise and stats.iso is None:  # generalized rates (ISO) are not the ratios whose variances these are
        var["fmr"] = stats.fmr_variance_replicates(weights)
        if not two_level:  # a second stage adds variance that the one-stage formula does not see
            var["fnmr"] = stats.fnmr_variance_replicates(weights)
    return fmr, fnmr, var


def _raw_rows(stats: _Stats, *, n_replicates, root, rows, studentise):
    """:func:`_raw` of replicates ``rows[0]`` to ``rows[1]`` (one-stage bootstrap): a task of its own."""
    return _raw(stats, _weights(stats.n_units, n_replicates, root, rows), None, studentise, False)


def _replicates_of(stats: _Stats, *raw, n_replicates, root, unit, two_level, failure_policy, fmr_variance, studentise,
                   then=None, progress=False):
    """The replicates Dataset of :func:`_replicates` from the statistics, then ``then(replicates)`` if given.

    A pure function of its arguments (the seed's SeedSequence ``root``): on a
    lazy cube it runs as a task where the statistics are, given the raw
    curves of :func:`_raw_rows` in ``raw`` (computed here when there are none).
    """
    weights = _weights(stats.n_units, n_replicates, root)
    ones = np.ones((1, stats.n_units), dtype=np.float32)
    if raw:
        fmr = np.concatenate([r[0] for r in raw])
        fnmr = np.concatenate([r[1] for r in raw])
        var = {k: np.concatenate([r[2][k] for r in raw]) for k in raw[0][2]}
    else:
        rng2 = _rng(root, 11) if two_level else None
        fmr, fnmr, var = _raw(stats, weights, rng2, studentise, two_level, _progress_bar(n_replicates, progress))
    raw_fmr0, raw_fnmr0 = stats.fmr(ones)[0], stats.fnmr(ones)[0]
    extra = {}
    shrink = np.ones(stats.grid.size)  # how much the deviations were shrunk (the moment correction)
    if fmr_variance == "moments":
        n_nm = stats.n_nonmated
        moment, pair, dof = stats.fmr_variance(parts=True)
        target = np.maximum(moment, raw_fmr0 * (1 - raw_fmr0) / n_nm)
        fmr = _moment_corrected(fmr, raw_fmr0, target)
        extra["fmr_variance"] = target
        if stats.iso is None:  # the moment variance and its degrees of freedom: the FMR's effective count
            extra["fmr_moment_variance"], extra["fmr_dof"] = moment, dof
        with np.errstate(invalid="ignore", divide="ignore"):
            shrink = np.sqrt(target / (target + 2 * np.maximum(pair, 0.0)))
    rep_var = {}
    if "fmr" in var:
        rep_var["fmr_replicate_variance"] = _calibrated_variance(var["fmr"], np.nanmean((fmr - raw_fmr0) ** 2, axis=0),
                                                                 shrink)
    if "fnmr" in var:
        rep_var["fnmr_replicate_variance"] = var["fnmr"]
    step = 250
    for s in range(0, n_replicates, step):
        w = weights[s : s + step]
        fmr[s : s + step], fnmr[s : s + step] = stats.generalize(w, fmr[s : s + step], fnmr[s : s + step])
    point_fmr, point_fnmr = stats.generalize(ones, raw_fmr0[None, :], raw_fnmr0[None, :])
    t = stats.thresholds
    order = np.argsort(t)
    data = {
        "fmr": (("replicate", "threshold"), fmr[:, order]),
        "fnmr": (("replicate", "threshold"), fnmr[:, order]),
        "fmr_point": ("threshold", point_fmr[0][order]),
        "fnmr_point": ("threshold", point_fnmr[0][order]),
        "false_matches": ("threshold", stats.false_matches()[order]),
        "n_nonmated": stats.n_nonmated,
        "n_mated": stats.n_mated,
    }
    data.update({k: ("threshold", v[order]) for k, v in extra.items()})
    data.update({k: (("replicate", "threshold"), v[:, order]) for k, v in rep_var.items()})
    ds = xr.Dataset(
        data,
        coords={"threshold": t[order]},
        attrs={
            "method": "subject bootstrap by sufficient statistics (whole subjects resampled; Efron & Tibshirani 1993)",
            "unit": unit,
            "two_level": int(two_level),
            "n_replicates": n_replicates,
            "n_units": stats.n_units,
            "mated_units": stats.mated_units,
            "nonmated_units": stats.nonmated_units,
            "impostor_weights": "w_a * w_c for probe subject a and reference subject c",
            "fmr_variance": _FMR_VARIANCE_TEXT[fmr_variance],
            "score_kind": stats.kind,
            "failure_policy": failure_policy,
        },
    )
    return ds if then is None else then(ds)


def _calibrated_variance(var_reps: np.ndarray, spread: np.ndarray, shrink: np.ndarray) -> np.ndarray:
    """Replicate FMR variances put on the scale of the (moment-corrected) replicate deviations.

    Copies of a drawn subject share all their comparisons, so each
    replicate's moment variance ``V_b`` is on the pigeonhole's scale, and it
    moves from replicate to replicate as the pigeonhole deviations do. The
    moment correction shrinks the deviations by about ``f = sqrt(V / (V +
    2 P))`` (``P`` the pair part of the moment variance, which the
    pigeonhole counts three times; ``f = 1`` with ``"pigeonhole"``); the
    variances get the same treatment: mean ``spread`` (the variance of the
    deviations they studentise) and relative variation ``(V_b / mean
    V)^f``, ``f`` clipped to [0, 1]. To first order, for a variance
    proportional to the level, ``V(p + f d) / V(p) = 1 + f d / p``, which is
    this. Without it the bootstrap-t would correct for a skew ``1 / f``
    times too strong where the comparisons' own noise dominates
    (independent comparisons: ``f`` about ``1 / sqrt(3)``). ``f`` comes
    from the data's moments, not from the replicates, so it carries no
    resampling noise.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(var_reps, axis=0)
        f = np.clip(shrink, 0.0, 1.0)
        rel = np.where(mean > 0, var_reps / mean, 1.0)
        out = spread * np.power(np.maximum(rel, 0.0), np.nan_to_num(f, nan=1.0))
    return np.where(np.isfinite(out), out, var_reps)


def _progress_bar(total: int, wanted: bool):
    if not wanted:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with papermill
        return None
    return tqdm(total=total, desc="bootstrap replicates")


def _fmr_zero_count(reps: xr.Dataset, n_eff: np.ndarray) -> np.ndarray:
    """Effective counts for thresholds where no false match is seen.

    No variance is seen there, so the design effect is borrowed from the
    nearest threshold (toward the lenient side) with at least
    :data:`BORROW_AT` false matches; with none anywhere, the count is the
    number of disjoint pairs of subjects (valid whatever the subject
    effects: a bound on ``n / 2`` independent comparisons).
    """
    fm = reps["false_matches"].values
    similarity = reps.attrs["score_kind"] == "similarity"
    lenient_first = np.arange(fm.size) if similarity else np.arange(fm.size)[::-1]
    out = np.full(fm.size, float(max(reps.attrs["nonmated_units"] // 2, 1)))
    borrowed = np.nan
    for j in lenient_first:  # walk from lenient to strict, carrying the last trustworthy count
        if fm[j] >= BORROW_AT:
            borrowed = n_eff[j]
        if fm[j] == 0 and np.isfinite(borrowed):  # never above the comparisons: at zero, no noise to floor
            out[j] = min(borrowed, float(reps["n_nonmated"].item()))
    return out


def _curve_bounds(reps: xr.Dataset, level: float, interval: str):
    """Pointwise bounds, effective counts and bound kinds of FMR and FNMR at the grid."""
    out = {}
    fnmr0 = reps["fnmr_point"].values
    n_eff = effective_count(fnmr0, reps["fnmr"].values, reps["n_mated"].item(), reps.attrs["mated_units"])
    out["fnmr"] = (rate_bounds(fnmr0, reps["fnmr"].values, reps["n_mated"].item(), n_eff, level=level,
                               interval=interval), n_eff)
    fmr0 = reps["fmr_point"].values
    n_nm = reps["n_nonmated"].item()
    if interval == "effective" and "fmr_dof" in reps:
        moment = reps["fmr_moment_variance"].values
        n_eff = fmr_effective_count(fmr0, moment, reps["fmr_dof"].values, n_nm, level)
        # at zero a threshold borrows the design effect alone: the t factor is the neighbour's own uncertainty
        borrow = fmr_effective_count(fmr0, moment, None, n_nm, level)
    else:
        n_eff = borrow = effective_count(fmr0, reps["fmr"].values, n_nm, np.inf)
    n_eff = np.where(fmr0 <= 0, _fmr_zero_count(reps, borrow), n_eff)
    fmr_bounds = rate_bounds(fmr0, reps["fmr"].values, n_nm, n_eff, level=level, interval=interval)
    out["fmr"] = (fmr_bounds, n_eff)
    return out


#: Floor of the FMR's estimated design effect (as :data:`COUNTS_DEFF_FLOOR` for counts): without subject effects
#: the dyadic moment variance is about binomial but noisy, and flooring it at 1 over-covered (0.966-0.973).
FMR_DEFF_FLOOR = 0.5


def fmr_effective_count(point, variance, dof, trials, level):
    """Korn & Graubard's effective count of an FMR with crossed subjects: ``N / deff * (z / t_df)^2``.

    ``deff`` is the dyadic moment variance (:meth:`_Stats.fmr_variance`)
    over the binomial ``p (1 - p) / N``, floored at :data:`FMR_DEFF_FLOOR`;
    ``t_df`` the Student quantile at the Satterthwaite degrees of freedom of
    that variance, from the subjects' residual totals (Korn & Graubard
    1998, for proportions from complex surveys; Satterthwaite 1946). The
    factor ``(z / t_df)^2`` is what makes it cover with subject effects: a
    few wolves and lambs holding the false matches leave the variance with
    a few degrees of freedom, and the interval widens by their t quantile
    (60 subjects with subject SDs 0.7: 0.92 at FMR 0.001 with the
    bootstrap's variance, in the band with this count; see
    benchmarks/COVERAGE.md). Without subject effects ``df`` is about a
    third of the subjects (the plug-in is conservative: see
    :meth:`_Stats.fmr_variance`), a factor of 0.88 with 60 subjects,
    which the floor of ``deff`` at 1/2 offsets (measured: 0.94-0.95 on
    independent comparisons). ``dof=None`` gives ``N / deff`` alone:
    what a threshold with no false match borrows (:func:`_fmr_zero_count`),
    the design effect without the neighbour's own t factor. Where the rate
    is 0 or 1 this gives ``N`` (at 0 the callers supply the count).
    """
    point = np.asarray(point, dtype=float)
    binom = point * (1 - point) / trials
    with np.errstate(invalid="ignore", divide="ignore"):
        deff = np.maximum(FMR_DEFF_FLOOR, np.where(binom > 0, variance / binom, 1.0))
        n_eff = trials / deff if dof is None else trials / deff / _t_factor(dof, level) ** 2
    edge = (point <= 0) | (point >= 1)
    return np.where(edge, float(trials), n_eff)


def bootstrap_curve(
    cube: xr.DataArray,
    *,
    thresholds=None,
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
    unit: str = "subject",
    two_level: bool = False,
    progress: bool = False,
    failure_policy: str = "exclude",
    fmr_variance: str = "moments",
    interval: str = "effective",
    simultaneous: bool = False,
) -> xr.Dataset:
    """FMR and FNMR with subject-bootstrap intervals at a grid of thresholds.

    The bands of a DET or ROC curve, pointwise. Parameters as in
    :func:`bootstrap_replicates`, plus ``level`` and ``interval``.

    Parameters
    ----------
    interval : {"effective", "percentile"}, keyword-only
        ``"effective"`` (default): the binomial interval
        (:func:`bioxr.intervals.binomial_interval`) on the effective count
        ``N / deff``, the design effect ``deff`` being the replicates'
        variance over the binomial one (floored at 1): subject-aware, and
        it keeps the skew of a small count. ``"percentile"``: quantiles of
        the replicates. Either way, where a rate is 0 (or 1) the interval
        is a one-sided bound on the independent units, never [0, 0]: for
        the FNMR the subjects with mated comparisons (valid whatever the
        correlation of their attempts); for the FMR the count of the
        nearest threshold with at least 10 false matches (the design
        effect is taken to change slowly along the curve), or, with none,
        the number of disjoint pairs of subjects (valid whatever the
        subject effects). ``fmr_bound_kind`` / ``fnmr_bound_kind`` say which.

        With ``"effective"`` and ``fmr_variance="moments"`` (the
        defaults) the FMR's count is not the replicates' but Korn &
        Graubard's, ``N / deff * (z / t_df)^2``
        (:func:`fmr_effective_count`): ``deff`` from the dyadic moment
        variance for crossed subjects, ``t_df`` at its Satterthwaite
        degrees of freedom from the subjects' residual totals. Subject
        effects make the FMR at a strict threshold depend on a few wolves
        and lambs; its variance then rests on a few degrees of freedom, and
        an interval that takes it as known misses (0.92 at FMR 0.001 with
        60 or 100 subjects whose SDs are 0.7); the t factor widens it by
        what that variance is worth. Without subject effects ``df`` is
        about a third of the subjects and ``deff`` about 1 (floored at
        1/2, not 1: a noisy estimate floored at its minimum over-covers). The design this assumes: comparisons correlated
        through their probe and reference subjects (one effect each) and
        independent otherwise. Not with ``failure_policy="iso"``
        (generalized rates: the replicates' count).
    simultaneous : bool, keyword-only
        Also give a family-wise band, ``fmr_band`` and ``fnmr_band``: with
        probability about ``level`` the whole curve, FMR and FNMR at every
        threshold at once, lies inside (the pointwise intervals hold each
        point alone). The studentised max-modulus envelope of the
        replicates on the probit scale, joint over both rates, never
        narrower than the pointwise interval
        (:func:`bioxr._core.simultaneous_band`); its attrs ``band`` says so,
        and ``critical_value`` gives the multiplier that replaces ``z``.

    Returns
    -------
    xarray.Dataset
        ``fmr``, ``fnmr`` over ``threshold``; ``fmr_interval``,
        ``fnmr_interval`` over ``("threshold", "bound")``; ``fmr_n_eff``,
        ``fnmr_n_eff`` (the effective counts), ``fmr_bound_kind`` and
        ``fnmr_bound_kind`` (two- or one-sided); attrs method, level,
        n_replicates, seed, interval.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    >>> band = bioxr.bootstrap.bootstrap_curve(cube, n_replicates=100, seed=2)
    >>> bool((band.fnmr_interval.sel(bound="lower") <= band.fnmr).all())
    True
    >>> bool((band.fmr_interval.diff("bound") > 0).all())  # never a zero-width interval
    True
    """
    level = check_level(level)
    check_interval(interval)
    check_replicates(n_replicates, level=level)
    then = functools.partial(_curve_result, level=level, interval=interval, simultaneous=simultaneous, seed=seed)
    return _replicates(
        cube, thresholds=thresholds, n_replicates=n_replicates, seed=seed, unit=unit, two_level=two_level,
        progress=progress, failure_policy=failure_policy, fmr_variance=fmr_variance, then=then,
    )


def _curve_result(reps: xr.Dataset, *, level, interval, simultaneous, seed) -> xr.Dataset:
    """:func:`bootstrap_curve`'s Dataset from the replicates."""
    bounds = _curve_bounds(reps, level, interval)
    coords = {"threshold": reps["threshold"].values}
    out = xr.Dataset(
        {
            "fmr": reps.fmr_point,
            "fnmr": reps.fnmr_point,
            "fmr_interval": bounds_array(bounds["fmr"][0], ("threshold",), coords),
            "fnmr_interval": bounds_array(bounds["fnmr"][0], ("threshold",), coords),
            "fmr_n_eff": ("threshold", bounds["fmr"][1]),
            "fnmr_n_eff": ("threshold", bounds["fnmr"][1]),
            "fmr_bound_kind": ("threshold", bound_kind(reps.fmr_point.values)),
            "fnmr_bound_kind": ("threshold", bound_kind(reps.fnmr_point.values)),
        },
        attrs={**reps.attrs, "level": level, "seed": str(seed),
               "interval": INTERVAL_TEXT[interval] + (_KORN_GRAUBARD_TEXT if "fmr_dof" in reps and interval == "effective"
                                                      else "")},
    )
    if simultaneous:
        out = _with_band(out, reps, level)
    return out


def _with_band(out: xr.Dataset, reps: xr.Dataset, level: float) -> xr.Dataset:
    """Add the joint simultaneous band of FMR and FNMR (``fmr_band``, ``fnmr_band``)."""
    import pandas as pd

    from .._core import simultaneous_band

    rate = pd.Index(["fmr", "fnmr"], name="rate")
    band = simultaneous_band(
        xr.concat([reps.fmr, reps.fnmr], dim=rate), xr.concat([reps.fmr_point, reps.fnmr_point], dim=rate),
        level=level, along=("rate", "threshold"), n=xr.concat([out.fmr_n_eff, out.fnmr_n_eff], dim=rate),
        floor=xr.concat([out.fmr_interval, out.fnmr_interval], dim=rate),
    )
    for name in ("fmr", "fnmr"):
        out[f"{name}_band"] = band.sel(rate=name, drop=True)
        out[f"{name}_band"].attrs = {**band.attrs, "long_name": f"{level:.0%} simultaneous band of {name.upper()}"}
    return out


def fnmr_at_fmr_interval(
    cube: xr.DataArray,
    fmr,
    *,
    thresholds=None,
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
    unit: str = "subject",
    two_level: bool = False,
    progress: bool = False,
    failure_policy: str = "exclude",
    fmr_variance: str = "moments",
    interval: str = "effective",
) -> xr.Dataset:
    """Subject-bootstrap interval of FNMR at FMR targets (a vertical DET band).

    In every replicate the threshold is the most lenient grid threshold
    whose FMR is at most the target, so both the threshold and the FNMR
    vary across replicates, as they do across repeated experiments (with
    ``fmr_variance="moments"`` the replicate FMR curves carry the variance
    of crossed subjects; see :func:`bootstrap_replicates`).
    ``interval`` as in :func:`bootstrap_curve`: the effective count comes
    from the variance of the replicate FNMRs; where the FNMR is 0 the bound
    is one-sided on the subjects with mated comparisons.

    With ``"effective"`` the lower bound is the calibrated bootstrap-t
    interval's and the upper bound the higher of the bootstrap-t's and the
    effective count's. The threshold at an FMR target inherits the skew of
    the FMR under subject effects (a sample short of wolves puts it too
    lenient, and its FNMR too low): the point estimate's distribution is
    skewed to the left, the effective-count interval (symmetric in its
    count) misses high and reaches too far down. The bootstrap-t carries
    the skew; the effective-count upper bound stays as a floor on the
    side a claim rests on. Measured (FMR 0.01 | 0.001, 1,000
    experiments a cell, ``benchmarks/COVERAGE.md``): 60x4 with wolves
    0.946 | 0.942, 100x4 with wolves 0.952 | 0.949, 100x4 independent
    0.950 | 0.947; 60x4 independent 0.936 | 0.938 (500 experiments, a
    held-out cell); the union of the two (used before) over-covered,
    0.967 | 0.982 at 100x4 with wolves. Each
    replicate is studentised by its own variance of the FNMR at its own
    operating point, ``g_N^2 V_FMR + g_M^2 V_FNMR`` (the threshold's part
    through the FMR, the FNMR's own), with the slopes ``g`` fitted to the
    replicates (:func:`_operating_point_variance`; Davison & Hinkley 1997,
    section 2.7) and the variances each replicate's own moment and
    cluster-robust ones; see :func:`_studentized_union`. Not with
    ``two_level`` or ``failure_policy="iso"``.

    Before the operating points are read, each replicate's FMR deviation
    is stretched by ``t_df / z`` at its threshold, the factor by which the
    FMR's own interval widens (:func:`fmr_effective_count`): the moment
    variance that scales the deviations rests on a few degrees of freedom
    where a few wolves and lambs hold the false matches, and the
    threshold at a strict target is as uncertain as that FMR (60
    subjects with SDs 0.7: 0.924 at FMR 0.001 without the stretch, nearly
    all misses on the upper side). Without subject effects the factor is
    near 1.

    Returns
    -------
    xarray.Dataset
        ``fnmr`` (point, at the same rule on the full data) and
        ``fnmr_interval`` over ``("fmr_target", "bound")``, ``n_eff`` and
        ``fnmr_bound_kind``.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=4, seed=0)
    >>> res = bioxr.bootstrap.fnmr_at_fmr_interval(cube, [0.05, 0.01], n_replicates=200, seed=3)
    >>> res.fnmr_interval.dims
    ('fmr_target', 'bound')
    """
    level = check_level(level)
    check_interval(interval)
    targets = check_targets(fmr, "fmr", closed=False)
    check_replicates(n_replicates, level=level)
    then = functools.partial(_fnmr_at_fmr_result, targets=targets, level=level, interval=interval, seed=seed,
                             scalar=np.ndim(fmr) == 0)
    return _replicates(
        cube, thresholds=thresholds, n_replicates=n_replicates, seed=seed, unit=unit, two_level=two_level,
        progress=progress, failure_policy=failure_policy, fmr_variance=fmr_variance,
        studentise=interval == "effective", then=then,
    )


def _fnmr_at_fmr_result(reps: xr.Dataset, *, targets, level, interval, seed, scalar) -> xr.Dataset:
    """:func:`fnmr_at_fmr_interval`'s Dataset from the replicates."""
    fm, fn = _lenient_to_strict(reps, "fmr"), _lenient_to_strict(reps, "fnmr")
    fm0, fn0 = _lenient_to_strict(reps, "fmr_point"), _lenient_to_strict(reps, "fnmr_point")
    if interval == "effective" and "fmr_dof" in reps:  # the threshold's spread, widened by the FMR variance's t factor
        fm = fm0 + (fm - fm0) * _t_factor(_lenient_to_strict(reps, "fmr_dof"), level)
    point = np.empty(targets.size)
    per_rep = np.empty((fm.shape[0], targets.size))
    chosen = np.empty((fm.shape[0], targets.size), dtype=int)  # each replicate's operating point
    at = np.empty(targets.size, dtype=int)  # the point's
    for j, f in enumerate(targets):
        ok = fm <= f  # FMR falls from lenient to strict: first True is the most lenient
        first = np.where(ok.any(axis=1), ok.argmax(axis=1), fm.shape[1] - 1)
        per_rep[:, j] = fn[np.arange(fn.shape[0]), first]
        k = int(np.argmax(fm0 <= f)) if (fm0 <= f).any() else fm0.size - 1
        point[j] = fn0[k]
        chosen[:, j], at[j] = first, k
    n_mated = reps["n_mated"].item()
    n_eff = effective_count(point, per_rep, n_mated, reps.attrs["mated_units"])
    bounds = rate_bounds(point, per_rep, n_mated, n_eff, level=level, interval=interval)
    studentised = "fnmr_replicate_variance" in reps and "fmr_replicate_variance" in reps
    if studentised:
        var = _operating_point_variance(reps, per_rep, chosen, at)
        bounds = _studentized_union(bounds, point, per_rep, var, level=level, lower="studentized")
    coords = {"fmr_target": targets}
    out = xr.Dataset(
        {
            "fnmr": xr.DataArray(point, dims="fmr_target", coords=coords),
            "fnmr_interval": bounds_array(bounds, ("fmr_target",), coords),
            "n_eff": xr.DataArray(n_eff, dims="fmr_target", coords=coords),
            "fnmr_bound_kind": xr.DataArray(bound_kind(point), dims="fmr_target", coords=coords),
        },
        attrs={**reps.attrs, "interval": INTERVAL_TEXT[interval] + (_STUDENTISED_UPPER_TEXT if studentised else ""),
               "level": level, "seed": str(seed),
               "operating_point": "most lenient grid threshold with FMR <= target, per replicate"},
    )
    return out.isel(fmr_target=0) if scalar else out


_KORN_GRAUBARD_TEXT = ("; FMR: the effective count N / deff * (z / t_df)^2, deff from the dyadic moment variance "
                       "for crossed subjects (floored at 1/2), df its Satterthwaite degrees of freedom from the "
                       "subjects' residual totals (Korn & Graubard 1998)")
EER_INTERVALS = ("corrected", "percentile", "bc", "basic", "effective")
_EER_INTERVAL_TEXT = {
    "corrected": ("percentile bootstrap; for the ROCCH shifted up by the hull's optimism, the mean over replicates "
                  "of (interpolated EER - ROCCH EER)"),
    "bc": ("bias-corrected percentile bootstrap (Efron 1981): the replicate quantiles at Phi(2 z0 +- z), z0 from the "
           "share of replicates below the point EER"),
    "effective": "binomial interval on the effective count of the replicate EERs' variance",
    "percentile": "percentile bootstrap",
    "basic": "basic bootstrap, [2 EER - q_hi, 2 EER - q_lo]",
}


def _eer_bounds(point: float, values: np.ndarray, level: float, interval: str, n_trials: float, units: int,
                shift: float = 0.0):
    alpha = (1 - level) / 2
    if interval == "corrected":
        lo, hi = np.quantile(values, [alpha, 1 - alpha]) + shift
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    elif interval == "effective":
        n_eff = effective_count(point, values[:, None], n_trials, units)
        return rate_bounds(np.atleast_1d(point), values[:, None], n_trials, np.atleast_1d(n_eff), level=level,
                           interval="effective")[0]
    if interval == "percentile":
        lo, hi = np.quantile(values, [alpha, 1 - alpha])
    elif interval == "basic":
        q_lo, q_hi = np.quantile(values, [alpha, 1 - alpha])
        lo, hi = max(0.0, 2 * point - q_hi), min(1.0, 2 * point - q_lo)
    else:  # bias-corrected percentile
        from scipy.stats import norm

        below = (np.sum(values < point) + 0.5 * np.sum(values == point)) / values.size
        z0 = norm.ppf(np.clip(below, 0.5 / values.size, 1 - 0.5 / values.size))
        probs = norm.cdf(2 * z0 + norm.ppf([alpha, 1 - alpha]))
        lo, hi = np.quantile(values, probs)
    if point <= 0 or hi <= lo:  # never a zero-width interval: fall back on the one-sided count
        return _eer_bounds(point, values, level, "effective", n_trials, units)
    return np.array([lo, hi])


def eer_interval(
    cube: xr.DataArray,
    *,
    method: str | None = None,
    convention: str = "bioxr",
    thresholds=None,
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
    unit: str = "subject",
    two_level: bool = False,
    progress: bool = False,
    failure_policy: str = "exclude",
    fmr_variance: str = "moments",
    interval: str = "corrected",
) -> xr.Dataset:
    """The EER with a subject-bootstrap interval.

    The point estimate is the exact EER (:func:`bioxr.verification.eer`,
    same ``method`` and ``convention``); each replicate's EER is computed
    by the same rule on its curve at the bootstrap grid (every distinct
    score when there are few, else about 400 thresholds), so replicate
    values carry the grid's resolution.

    The interval is for the EER of the matcher on the population the
    subjects were drawn from: the value this EER rule would give on
    unlimited data. The interpolated, nearest and FVC2000 values are
    nearly unbiased and their percentile interval covers (measured in
    ``benchmarks/COVERAGE.md``). The ROCCH of a sample is optimistic: its
    hull bridges the dents that noise puts in the staircase, so the sample
    ROCCH EER sits below the population's (by about 3% of the EER, a
    third of a standard error, at 100 subjects x 4 probes), and a
    percentile interval around it misses too often (0.92 at 95%). The
    bootstrap does not see this bias in the ROCCH replicates themselves,
    but it does see the hull's optimism in each replicate, the gap between
    its interpolated and its ROCCH EER; the default interval
    (``"corrected"``) shifts the percentile interval up by the mean gap
    (``hull_optimism`` in attrs). Where the population ROC is convex near
    the EER (smooth score distributions) this targets the population EER;
    with heavily tied scores part of the gap is real (the hull is what
    randomising between thresholds reaches) and the shifted interval leans
    to the interpolated value.

    Parameters
    ----------
    method : {"rocch", "interpolated", "nearest", "fvc2000"} or None, keyword-only
        As in :func:`bioxr.verification.eer`; None: the convention's own.
    convention : {"bioxr", "bob", "pyeer"}, keyword-only
        As in :func:`bioxr.verification.eer` (:data:`bioxr.conventions.EER`).
    interval : {"corrected", "percentile", "bc", "basic", "effective"}, keyword-only
        ``"corrected"`` (default): percentile, shifted for the ROCCH by the
        hull's optimism (equal to ``"percentile"`` for the other methods),
        widened where that is wider to the calibrated bootstrap-t interval
        (same shift): each replicate's EER studentised by its own variance
        at its own crossing, ``g_N^2 V_FMR + g_M^2 V_FNMR`` with slopes
        fitted to the replicates, as in :func:`fnmr_at_fmr_interval`. The
        EER moves with the level of both curves, and under subject effects
        its spread grows with it, so the percentile interval misses high
        (0.92 on aaa-60x4 with subject SDs 0.7, nearly all on the upper
        side); the union carries the skew (Hall 1988; Efron & Tibshirani
        1993, 12.5). Not with ``two_level`` or ``failure_policy="iso"``;
        ``"bc"``: bias-corrected percentile (Efron 1981); ``"basic"``;
        ``"effective"``: the binomial interval on the effective count of
        the replicates' variance. An EER of 0 gets a one-sided bound on
        the subjects.
    fmr_variance : {"moments", "pigeonhole"}, keyword-only
        As in :func:`bootstrap_replicates`.

    Returns
    -------
    xarray.Dataset
        ``eer`` and ``eer_interval`` (``bound``), ``eer_replicates`` (the
        replicates' EERs, by the same rule); attrs method, level,
        n_replicates, eer_method, convention, interval.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=3, seed=0)
    >>> res = bioxr.bootstrap.eer_interval(cube, n_replicates=200, seed=1)
    >>> lo, hi = res.eer_interval.values
    >>> bool(lo <= float(res.eer) <= hi)
    True
    """
    return eer_intervals(cube, methods=(method,), convention=convention, thresholds=thresholds,
                         n_replicates=n_replicates, level=level, seed=seed, unit=unit, two_level=two_level,
                         progress=progress, failure_policy=failure_policy, fmr_variance=fmr_variance,
                         interval=interval)[0]


def eer_intervals(cube, *, methods, convention="bioxr", thresholds=None, n_replicates=2000, level=0.95, seed=0,
                  unit="subject", two_level=False, progress=False, failure_policy="exclude", fmr_variance="moments",
                  interval="corrected") -> list:
    """:func:`eer_interval` for several EER methods from one set of replicates (one Dataset per method)."""
    from ..conventions import eer_rule

    level = check_level(level)
    check_interval(interval, EER_INTERVALS)
    check_replicates(n_replicates, level=level)
    from ..verification import eer as exact_eer

    rules = [eer_rule(method, convention) for method in methods]
    # every argument checked before the point EERs' passes (long on a large lazy cube)
    check_replicates(n_replicates, minimum=2)
    _check_fmr_variance(fmr_variance)
    _check_unit(unit)
    _check_thresholds(thresholds)
    points = [exact_eer(cube, method=method, convention=convention, failure_policy=failure_policy)
              for method, _ in rules]
    then = functools.partial(_eer_results, rules=rules, points=points, convention=convention, level=level,
                             seed=seed, interval=interval)
    return _replicates(
        cube, thresholds=thresholds, n_replicates=n_replicates, seed=seed, unit=unit, two_level=two_level,
        progress=progress, failure_policy=failure_policy, fmr_variance=fmr_variance,
        studentise=interval == "corrected", then=then,
    )


def _eer_results(reps: xr.Dataset, *, rules, points, **kwargs) -> list:
    return [_eer_from_replicates(reps, point, method, ties, **kwargs) for (method, ties), point in zip(rules, points)]


def _eer_from_replicates(reps, point, method, ties, *, convention, level, seed, interval):
    from .. import eer as _eer

    fm, fn = _lenient_to_strict(reps, "fmr"), _lenient_to_strict(reps, "fnmr")
    # close each replicate's curve at both ends (everything accepted, nothing accepted)
    values = np.empty(fm.shape[0])
    gaps = np.zeros(fm.shape[0])
    for r in range(fm.shape[0]):
        x = np.concatenate([[1.0], fm[r], [0.0]])
        y = np.concatenate([[0.0], fn[r], [1.0]])
        values[r] = _eer.eer_point(x, y, method, ties)[0]
        if method == "rocch" and interval == "corrected":
            gaps[r] = _eer.eer_point(x, y, "interpolated")[0] - values[r]
    shift = float(np.mean(gaps))
    value = float(point.eer)
    # the EER's information is about that of the mated side (the scarcer one), counted in subjects at zero
    bounds = _eer_bounds(value, values, level, interval, reps["n_mated"].item(), reps.attrs["mated_units"], shift)
    studentised = "fnmr_replicate_variance" in reps and "fmr_replicate_variance" in reps and 0 < value < 1
    if studentised:
        fm0, fn0 = _lenient_to_strict(reps, "fmr_point"), _lenient_to_strict(reps, "fnmr_point")
        grid_value = _eer.eer_point(np.r_[1.0, fm0, 0.0], np.r_[0.0, fn0, 1.0], method, ties)[0]
        crossing = np.nanargmin(np.abs(np.nan_to_num(fm - fn, nan=np.inf)), axis=1)  # each replicate's EER threshold
        at = np.array([int(np.argmin(np.abs(fm0 - fn0)))])
        var = _operating_point_variance(reps, values[:, None], crossing[:, None], at)[:, 0]
        # deviations from the EER of the point curve on the same grid, so the grid's resolution cancels
        bounds = _studentized_union(bounds, np.float64(value), values - grid_value + value, var, level=level,
                                    shift=shift)[()]
    return xr.Dataset(
        {"eer": point.eer, "eer_interval": xr.DataArray(bounds, dims="bound", coords={"bound": ["lower", "upper"]}),
         "eer_replicates": ("replicate", values)},
        attrs={**reps.attrs, "interval": _EER_INTERVAL_TEXT[interval] + (_STUDENTISED_TEXT if studentised else ""),
               "level": level, "seed": str(seed),
               "eer_method": method, "convention": convention, "eer_convention": point.attrs["eer_convention"],
               "hull_optimism": shift},
    )
