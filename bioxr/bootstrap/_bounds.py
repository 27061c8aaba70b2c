"""Intervals from bootstrap replicates: effective counts, percentiles, one-sided bounds at zero.

A rate's replicates say how variable it is; at small counts their
percentiles say little more (a rate seen 0 times has replicates all 0, a
[0, 0] interval). The default interval therefore takes only the
replicates' variance from the bootstrap: the design effect ``deff = V_boot
/ (p (1 - p) / N)`` (floored at 1) gives an effective count ``N / deff``,
and the binomial interval of :func:`bioxr.intervals.binomial_interval` on
it (Korn & Graubard 1998, for proportions from complex designs) keeps the
skew and the discreteness of a small count. Where the rate is 0 (or 1) no
variance can be seen: the bound is one-sided, on the independent units
(subjects for a rate of mated comparisons; see the callers for crossed
comparisons), and marked as such in ``bound_kind``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

INTERVALS = ("effective", "percentile")
from ..intervals import BOUND_KINDS  # noqa: E402  one vocabulary for every interval

INTERVAL_TEXT = {
    "effective": ("binomial interval on the effective count N / deff, deff = bootstrap variance / (p (1 - p) / N) "
                  "floored at 1 (Korn & Graubard 1998); one-sided on the independent units where the rate is 0 or 1"),
    "percentile": ("percentile bootstrap interval; one-sided on the independent units where the rate is 0 or 1 "
                   "(never a zero-width interval)"),
}


#: Floor of the estimated design effect of a rate of per-individual counts. Not 1: the bootstrap's design effect
#: is an estimate, noisy with few individuals (its relative SD is about sqrt(2 / n)), and flooring a noisy estimate
#: at the true minimum biases it up; with 60 individuals and independent attempts the floor at 1 over-covered
#: (0.968-0.971 at 2,000 experiments; 0.945-0.963 without it, correlated cells unchanged). 1/2 only keeps a
#: degenerate replicate set from claiming a count far beyond the attempts.
COUNTS_DEFF_FLOOR = 0.5

#: appended to the "effective" text where :func:`studentized_union` widens the interval (rates of counts)
STUDENTIZED_TEXT = ("; widened to the bootstrap-t interval on the cluster-robust variance of the ratio where every "
                    "replicate has a variance (the union of the two)")


def check_interval(interval, allowed=INTERVALS) -> str:
    if interval not in allowed:
        raise ValueError(f"interval={interval!r}; choose one of {allowed}: 'effective' (the default) is the binomial "
                         "interval on the bootstrap's effective count, 'percentile' the quantiles of the replicates.")
    return interval


def effective_count(point, reps, trials, zero_count, floor: float = 1.0):
    """The effective count of a rate from its replicates (axis 0): ``N / max(floor, deff)``.

    Where the rate is 0 or 1 (no variance), ``zero_count`` (the number of
    independent units). ``point``, ``trials`` and ``zero_count`` broadcast
    against ``reps[0]``. ``floor`` bounds the estimated design effect from
    below (see :data:`COUNTS_DEFF_FLOOR`).
    """
    point = np.asarray(point, dtype=float)
    trials = np.broadcast_to(np.asarray(trials, dtype=float), point.shape)
    var = np.nanvar(reps, axis=0, ddof=1) if reps.shape[0] > 1 else np.zeros(point.shape)
    binom = point * (1 - point) / trials
    with np.errstate(invalid="ignore", divide="ignore"):
        deff = np.where(binom > 0, np.maximum(floor, var / binom), 1.0)
        n_eff = trials / deff
    edge = (point <= 0) | (point >= 1)
    return np.where(edge, np.minimum(np.broadcast_to(zero_count, point.shape), trials), n_eff)


def bound_kind(point) -> np.ndarray:
    point = np.asarray(point, dtype=float)
    return np.where(point <= 0, BOUND_KINDS[1], np.where(point >= 1, BOUND_KINDS[2], BOUND_KINDS[0]))


def rate_bounds(point, reps, trials, n_eff, *, level: float, interval: str) -> np.ndarray:
    """Bounds (last axis lower, upper) of rates from their replicates (axis 0) and effective counts."""
    from ..intervals import binomial_interval

    point = np.asarray(point, dtype=float)
    n_eff = np.asarray(n_eff, dtype=float)
    ok = np.isfinite(point) & np.isfinite(n_eff) & (n_eff > 0)
    safe_n = np.where(ok, n_eff, 1.0)
    ci = binomial_interval(np.where(ok, point, 0.0) * safe_n, safe_n, level=level)
    out = np.asarray(ci.values, dtype=float).reshape(point.shape + (2,))
    if interval == "percentile":
        alpha = (1 - level) / 2
        q = np.moveaxis(np.nanquantile(reps, [alpha, 1 - alpha], axis=0), 0, -1)
        inner = (point > 0) & (point < 1)
        out = np.where(inner[..., None], q, out)  # at 0 or 1: the one-sided bound, never [0, 0]
    out[~ok] = np.nan
    return out


def bounds_array(values: np.ndarray, dims, coords) -> xr.DataArray:
    return xr.DataArray(values, dims=(*dims, "bound"), coords={**coords, "bound": ["lower", "upper"]})


def ratio_variances(w, flat_e, flat_m):
    """Cluster-robust variances of ``sum e / sum m``: of the data and of each replicate.

    ``w`` (B, n) are the replicates' draw counts of the ``n`` individuals,
    ``flat_e`` / ``flat_m`` (n, rest) their error and attempt counts. The
    sandwich (linearisation) variance of a ratio estimator over independent
    clusters, ``n / (n - 1) sum_i (e_i - p m_i)^2 / (sum_i m_i)^2``
    (Cochran 1977, 6.9), from three sums per replicate (``sum w e^2``,
    ``sum w e m``, ``sum w m^2``), so no second-level bootstrap is needed.
    Returns ``(V, V_reps)``, shapes (rest,) and (B, rest).
    """
    e = np.asarray(flat_e, dtype=np.float64)
    m = np.asarray(flat_m, dtype=np.float64)
    n = e.shape[0]
    c = n / (n - 1) if n > 1 else np.inf
    w = np.asarray(w, dtype=np.float64)
    sm, se = w @ m, w @ e
    see, sem, smm = w @ (e * e), w @ (e * m), w @ (m * m)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_b = se / sm
        v_b = c * _residual_sum(see, sem, smm, p_b) / sm**2
        big_m = m.sum(axis=0)
        p = e.sum(axis=0) / big_m
        v = c * _residual_sum((e * e).sum(axis=0), (e * m).sum(axis=0), (m * m).sum(axis=0), p) / big_m**2
    return v, v_b


#: Relative size below which a residual sum of squares is rounding noise, i.e. zero.
_CANCELLATION = 1e-12


def _residual_sum(see, sem, smm, p):
    """``sum (e - p m)^2`` from its three sums, exactly 0 where it is zero up to rounding.

    The expanded form cancels: a replicate holding one individual (or only
    individuals with the same rate) has residuals of exactly 0, but the
    three sums give +-1e-17 whose sign depends on the order of the data.
    Whether the bootstrap-t applies must not depend on that order (a cube
    and its comparison list hold the individuals in different orders), so
    anything below ``1e-12`` of the sums' scale counts as 0.
    """
    r = see - 2 * p * sem + p**2 * smm
    return np.where(r > _CANCELLATION * (see + p**2 * smm), r, 0.0)


def studentized_union(bounds, point, reps, var, var_reps, *, level: float) -> np.ndarray:
    """Widen effective-count ``bounds`` (rest, 2) to the bootstrap-t interval where that is defined.

    The bootstrap-t (studentised) interval ``[p - t*_{1-a} s, p - t*_a s]``,
    with ``t* = (p* - p) / s*`` over the replicates (Efron & Tibshirani 1993,
    12.5; Davison & Hinkley 1997, 5.2), is second-order accurate: it carries
    the skew of a ratio whose variance grows with it (a few individuals who
    err often, with many attempts), where an interval on an effective count
    is binomial-shaped around the observed rate and misses high. It is
    defined only where every replicate has a variance (each contains an
    error and a success) and the rate is inside (0, 1); elsewhere, and
    always on the side where it is narrower, the effective-count bound is
    kept, so the union is never narrower than the interval it widens.
    """
    point = np.asarray(point, dtype=float)
    ok = (point > 0) & (point < 1) & (var > 0) & np.all(var_reps > 0, axis=0) & np.all(np.isfinite(reps), axis=0)
    if not ok.any():
        return bounds
    alpha = (1 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (reps - point) / np.sqrt(var_reps)
    t = np.where(ok, t, 0.0)
    t_lo, t_hi = np.quantile(t, [alpha, 1 - alpha], axis=0)
    s = np.sqrt(np.where(ok, var, 0.0))
    lo = np.clip(point - t_hi * s, 0.0, 1.0)
    hi = np.clip(point - t_lo * s, 0.0, 1.0)
    out = bounds.copy()
    out[..., 0] = np.where(ok, np.minimum(bounds[..., 0], lo), bounds[..., 0])
    out[..., 1] = np.where(ok, np.maximum(bounds[..., 1], hi), bounds[..., 1])
    return out
