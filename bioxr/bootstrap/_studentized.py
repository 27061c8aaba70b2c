"""The bootstrap-t pieces of the operating points (FNMR at an FMR target, the EER) and their shared helpers.

Private to :mod:`bioxr.bootstrap`: the calibrated studentised interval
(:func:`_studentized_union`), each replicate's variance at its operating
point (:func:`_operating_point_variance`), the binomial floor of a
replicate variance, the Korn-Graubard ``t_df / z`` factor, and the
lenient-to-strict view of a replicate set.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

def _studentized_union(bounds, point, reps, var_reps, *, level: float, shift: float = 0.0,
                       lower: str = "union") -> np.ndarray:
    """Widen effective-count (or percentile) bounds to the calibrated bootstrap-t interval.

    With strong subject
    effects a few wolves and lambs hold most false matches at a strict
    threshold, so the FMR's sampling distribution is right-skewed and its
    moment variance grows with it: a sample that missed the worst subjects
    has a low FMR *and* a small variance, and an interval on its effective
    count (binomial-shaped around the observed rate) misses high. The
    bootstrap-t (studentised) interval ``[p - u_{1-a}, p - u_a]``, with
    ``u_b = (p_b - p) / s_b`` quantiles over the replicates, carries that
    dependence of the spread on the level and is second-order accurate
    where the percentile and normal intervals are first-order (Hall 1988;
    Efron & Tibshirani 1993, 12.5; Davison & Hinkley 1997, 5.2).

    The studentiser is each replicate's own variance ``V_b`` (for the FMR
    its dyadic moment variance, :meth:`_Stats.fmr_variance_replicates`;
    for an operating point :func:`_operating_point_variance`), relative to
    its mean over the replicates, ``s_b = sqrt(V_b / mean(V))``: copies of
    a drawn subject share all their comparisons, so ``V_b`` is on the
    pigeonhole's scale (Owen 2007); the relative form, after
    :func:`_calibrated_variance` has shrunk the FMR's variation by the
    moment correction of the deviations, keeps what the bootstrap-t needs,
    how the variance moves with the rate from replicate to replicate. The
    callers floor each ``V_b`` at the replicate's binomial variance (at
    half an error where it has none: :func:`_binomial_floor`), so a
    replicate with no error cannot have ``s_b = 0``. ``shift`` moves the
    bootstrap-t interval (the EER's hull optimism). Shapes: ``point``
    (...), ``reps`` and ``var_reps`` (replicate, ...), ``bounds`` (..., 2).

    The union with the effective-count interval (the lower of the two
    lower bounds, the higher of the two upper ones) is never narrower than
    the interval it widens; where the FMR is 0 or 1 the one-sided bound
    is kept as it is. With ``lower="studentized"`` the lower bound is the
    bootstrap-t's alone and only the upper bound is the higher of the two
    (the base is a floor on the side that claims rest on), for statistics
    whose base interval is too wide below (FNMR at an FMR target).
    """
    if lower not in ("union", "studentized"):
        raise ValueError(f"lower must be 'union' or 'studentized', got {lower!r}")
    point = np.asarray(point, dtype=float)
    reps = np.asarray(reps, dtype=float).reshape((reps.shape[0],) + point.shape)
    var_reps = np.asarray(var_reps, dtype=float).reshape(reps.shape)
    inner = ((point > 0) & (point < 1) & np.all(np.isfinite(reps), axis=0) & np.all(np.isfinite(var_reps), axis=0)
             & np.all(var_reps > 0, axis=0))
    out = np.array(bounds, dtype=float, copy=True).reshape(point.shape + (2,))
    if not inner.any():
        return out
    alpha = (1 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        u = (reps - point) * np.sqrt(np.mean(var_reps, axis=0) / var_reps)
    u = np.where(inner, u, 0.0)
    u_lo, u_hi = np.quantile(u, [alpha, 1 - alpha], axis=0)
    low = np.clip(point - u_hi + shift, 0.0, 1.0)
    if lower == "union":
        low = np.minimum(out[..., 0], low)
    out[..., 0] = np.where(inner, low, out[..., 0])
    out[..., 1] = np.where(inner, np.maximum(out[..., 1], np.clip(point - u_lo + shift, 0.0, 1.0)), out[..., 1])
    return out


def _binomial_floor(var_reps, reps, point, trials):
    """Replicate variances floored at the replicate's binomial variance (at half an error where it has none)."""
    b = np.maximum(reps * (1 - reps), 0.5 / trials) / trials
    return np.maximum(var_reps, b)


def _lenient_to_strict(reps: xr.Dataset, name: str) -> np.ndarray:
    values = reps[name].values
    return values if reps.attrs["score_kind"] == "similarity" else values[..., ::-1]


def _t_factor(dof, level: float) -> np.ndarray:
    """``t_df / z`` at the two-sided ``level`` (1 where ``df`` is not finite): :func:`fmr_effective_count`'s factor."""
    from scipy import stats

    a = (1 + level) / 2
    ok = np.isfinite(dof) & (dof > 0)
    return np.where(ok, stats.t.ppf(a, np.where(ok, dof, 1.0)) / stats.norm.ppf(a), 1.0)


def _operating_point_variance(reps: xr.Dataset, stat: np.ndarray, chosen: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Each replicate's variance of a statistic read off both curves at an operating point, ``(replicate, j)``.

    An operating point (FNMR at an FMR target, the EER) moves with both
    curves: to first order ``stat_b - stat = g_N dFMR_b + g_M dFNMR_b``,
    the deviations of the two rates at the point's threshold (``at[j]``,
    lenient-to-strict index). The slopes ``g`` are the least-squares fit
    of the replicates on those deviations, the regression estimate of the
    linear approximation (of the empirical influence values: Davison &
    Hinkley 1997, section 2.7), so no density of the scores is estimated.
    Each replicate's variance is then
    ``g_N^2 V_FMR,b + g_M^2 V_FNMR,b`` at its own operating point
    (``chosen[:, j]``), from its own moment variances (floored at the
    binomial); the two rates' covariance is left out, as in the
    independent-sides variance of the DET (the studentiser needs only to
    move with the spread; its scale is calibrated away).
    """
    fm, fn = _lenient_to_strict(reps, "fmr"), _lenient_to_strict(reps, "fnmr")
    fm0, fn0 = _lenient_to_strict(reps, "fmr_point"), _lenient_to_strict(reps, "fnmr_point")
    vm = _binomial_floor(_lenient_to_strict(reps, "fmr_replicate_variance"), fm, fm0, reps["n_nonmated"].item())
    vn = _binomial_floor(_lenient_to_strict(reps, "fnmr_replicate_variance"), fn, fn0, reps["n_mated"].item())
    rows = np.arange(fm.shape[0])
    out = np.full(stat.shape, np.nan)
    for j in range(stat.shape[1]):
        k = at[j]
        x = np.column_stack([np.ones(rows.size), fm[:, k] - fm0[k], fn[:, k] - fn0[k]])
        ok = np.all(np.isfinite(x), axis=1) & np.isfinite(stat[:, j])
        if ok.sum() < 3:
            continue
        g = np.linalg.lstsq(x[ok], stat[ok, j], rcond=None)[0]
        out[:, j] = g[1] ** 2 * vm[rows, chosen[:, j]] + g[2] ** 2 * vn[rows, chosen[:, j]]
    return out


_STUDENTISED_TEXT = ("; widened to the calibrated bootstrap-t interval (each replicate studentised by its own moment "
                     "variance relative to their mean): the union of the two")

_STUDENTISED_UPPER_TEXT = ("; lower bound from the calibrated bootstrap-t interval (each replicate studentised by its "
                           "own operating-point variance relative to their mean), upper bound the higher of the "
                           "bootstrap-t's and the effective count's")
