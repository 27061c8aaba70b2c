"""The interval of a minimum (minDCF, minCllr): the optimism's bracket, the bootstrap's noise, few subjects.

A minimum over thresholds (minDCF) or over monotone calibrations (minCllr)
fitted to the data it scores is optimistic: ``E[estimate] <= truth``.
A bootstrap replicate's minimum is optimistic again, relative to the
estimate: ``b = mean(replicates) - estimate < 0``. If the optimism grows
with the noise variance ``s`` as ``s^gamma`` and a replicate carries the
sample's noise plus ``lambda`` times as much again, the sample's own bias
is ``f b`` with

    f(lambda, gamma) = 1 / ((1 + lambda)^gamma - 1).

``gamma`` is not known at a given sample size: it is 2/3 for the
cube-root asymptotics of an interior minimum of an empirical step process
or an isotonic fit (Kim & Pollard 1990), 1/2 where the minimum picks among
a few separated near-ties (bias proportional to the noise SD), and 1 at a
smooth or boundary minimum (bias proportional to the variance). Measured on
60 subjects, the bias needed ``f`` from 1.0 to 2.2 (the cube-root value
with ``lambda = 1`` is 1.70). The interval therefore brackets the
correction: its lower bound takes the least correction (``gamma = 1``),
its upper bound the greatest (``gamma = 1/2``). :data:`OPTIMISM_EXPONENTS`.

``lambda`` is the ratio of a replicate's *local* noise (the jitter of the
cost curve near the optimum, where the minimum's optimism is made) to the
sample's. Locally, comparisons fall near the optimum independently; in a
replicate a mated comparison is weighted by its subject's draws (variance
1: ``lambda = 1``), a non-mated one under ``"pigeonhole"`` by ``w_a w_c``
(variance 3: :data:`PAIR_NOISE`), so where non-mated comparisons carry
much of the local noise (minDCF at a small prior) ``lambda`` approaches 3
and ``f`` is smaller. For minDCF, with ``T`` mated and ``N`` non-mated
comparisons, the non-mated share of the local variance at the optimum
follows from its first-order condition (``C_miss P f_M = C_fa (1 - P)
f_N``): ``r = C_fa (1 - P) T / (C_miss P N)`` against 1. For minCllr each
two-class PAV block ``(t, n)`` adds, after Takeuchi's criterion for its one
fitted log-odds, ``alpha beta (n + t) / (alpha t + beta n)`` to the
optimism (``alpha = 1 / 2T``, ``beta = 1 / 2N``), of which the replicate's
noise makes ``alpha beta (n + lambda_N t) / (alpha t + beta n)``.

The spread of the replicates is then rescaled (:func:`moment_scale`): by
the crossed moment variance over the pigeonhole's (which counts each pair
of subjects' own noise three times, Owen 2007), by ``n / (n - 1)``, and by
``t_{n-1} / z`` at the level (Student t with ``n - 1`` degrees of freedom
for ``n`` subjects: the few-clusters correction of Cameron & Miller 2015).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Bracket of the optimism's exponent in the noise variance: the upper bound's, then the lower bound's.
OPTIMISM_EXPONENTS = (0.5, 1.0)
#: Variance of a pigeonhole replicate's weight ``w_a w_c`` of a non-mated comparison (each draw count has mean 1
#: and variance 1): 2 x 2 - 1.
PAIR_NOISE = 3.0


def optimism_factor(noise_ratio, gamma: float) -> np.ndarray:
    """``f = 1 / ((1 + lambda)^gamma - 1)``: the sample's bias over a replicate's (module docstring)."""
    return 1.0 / ((1.0 + np.asarray(noise_ratio, dtype=float)) ** gamma - 1.0)


def dcf_noise_ratio(p, cm, cf, n_mated: float, n_nonmated: float, pair_noise: float) -> np.ndarray:
    """``lambda`` of the minDCF at each operating point: ``(1 + pair_noise r) / (1 + r)``,
    ``r = C_fa (1 - P) T / (C_miss P N)`` the non-mated share of the local noise against the mated."""
    r = cf * (1 - p) * n_mated / (cm * p * n_nonmated)
    return (1 + pair_noise * r) / (1 + r)


def pav_noise_ratio(bt: np.ndarray, bn: np.ndarray, pair_noise: float) -> float:
    """``lambda`` of minCllr from the PAV blocks' mated and non-mated weights (1 without a two-class block)."""
    both = (bt > 0) & (bn > 0)
    if not both.any():
        return 1.0
    t, n = bt[both], bn[both]
    alpha, beta = 1 / (2 * bt.sum()), 1 / (2 * bn.sum())
    s = alpha * t + beta * n
    return float(np.sum((n + pair_noise * t) / s) / np.sum((n + t) / s))


def moment_scale(S: float, P: float, n_units: int, level: float) -> float:
    """Factor on the replicates' deviations: ``sqrt(max(S - P, P) / (S + P))`` (crossed moment variance over the
    pigeonhole's; 1 where the costs do not vary), times ``sqrt(n / (n - 1)) t_{n-1} / z`` at the level.

    ``S`` and ``P`` from :meth:`~bioxr.calibration._studentized.CostVariance.parts`; the moment variance is floored
    at the pairs' own part ``P`` (its value without subject effects is about ``P``; a negative estimate is noise).
    """
    k = np.sqrt(max(S - P, P) / (S + P)) if S + P > 0 else 1.0
    if n_units >= 2:
        q = 1 - (1 - level) / 2
        k *= np.sqrt(n_units / (n_units - 1)) * stats.t.ppf(q, n_units - 1) / stats.norm.ppf(q)
    return float(k)


def minimum_interval(point: float, reps: np.ndarray, var_reps, *, level: float, noise_ratio: float, scale: float,
                     cap: float = np.inf) -> tuple[np.ndarray, float]:
    """The interval of a minimum from its replicates, and the estimated bias of the sample value.

    With ``b = mean(reps) - point``, ``d = scale (reps - mean(reps))``,
    ``f_up = f(lambda, 1/2)`` and ``f_lo = f(lambda, 1)``:

    - shifted percentiles ``[point - f_lo b + q_a(d), point - f_up b + q_{1-a}(d)]``;
    - where every ``var_reps`` is finite and positive, widened to its union
      with the bootstrap-t ``[point - f_lo b - u_{1-a}, point - f_up b -
      u_a]``, ``u = d sqrt(mean(V) / V_b)`` (a replicate studentised by its
      own cluster-robust variance);
    - clipped to ``[0, cap]``.

    The bias returned is the cube-root one, ``f(lambda, 2/3) b``.
    ``(nan, nan)`` where the replicates do not vary.
    """
    alpha = (1 - level) / 2
    reps = np.asarray(reps, dtype=float)
    centre = float(np.mean(reps))
    b = centre - point
    f_up, f_lo = (float(optimism_factor(noise_ratio, g)) for g in OPTIMISM_EXPONENTS)
    bias = float(optimism_factor(noise_ratio, 2 / 3)) * b
    d = scale * (reps - centre)
    d_lo, d_hi = np.quantile(d, [alpha, 1 - alpha])
    if not d_hi > d_lo:
        return np.array([np.nan, np.nan]), bias
    lo, hi = point - f_lo * b + d_lo, point - f_up * b + d_hi
    v = np.asarray(var_reps, dtype=float) if var_reps is not None else np.array([np.nan])
    if np.all(np.isfinite(v)) and np.all(v > 0) and v.shape == reps.shape:
        u = d * np.sqrt(np.mean(v) / v)
        u_lo, u_hi = np.quantile(u, [alpha, 1 - alpha])
        lo, hi = min(lo, point - f_lo * b - u_hi), max(hi, point - f_up * b - u_lo)
    lo, hi = np.clip([lo, hi], 0.0, cap)
    if not hi > lo:  # clipped flat at 0 or at the cap: a one-sided statement of the same width
        lo, hi = (0.0, max(hi, d_hi - d_lo)) if hi <= 0 else (min(lo, cap - (d_hi - d_lo)), cap)
    return np.array([lo, hi]), bias
