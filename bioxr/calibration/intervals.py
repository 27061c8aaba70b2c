"""Subject-bootstrap intervals of :mod:`bioxr.calibration`: :func:`dcf_interval` and :func:`cllr_interval`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from scipy import sparse

from .._core import check_level, check_replicates, flat_comparisons
from ..bootstrap import subject_draws
from ..cube import ScoreCubeError
from ..intervals import BOUND_KINDS
from ..simulate import _entropy
from ._studentized import CostVariance, pav_costs, studentized_union
from ._point import _act_from, _bayes_threshold, _dcf_from, _operating_points, _Runs, cllr, dcf

#: How a non-mated comparison is weighted in a bootstrap replicate; the first is the default.
NONMATED_WEIGHTS = ("pigeonhole", "probe")
NONMATED_TEXT = {
    "pigeonhole": ("subject bootstrap; a mated comparison weighted by its subject's draws, a non-mated one by "
                   "w_probe * w_reference (pigeonhole: both sides resampled; over-states the comparisons' own noise, "
                   "Owen 2007)"),
    "probe": ("subject bootstrap; a mated comparison weighted by its subject's draws, a non-mated one by its probe "
              "subject's draws only (the reference subjects' share of the variance is left out)"),
}
DEGENERATE = "degenerate (every replicate equals the estimate; no interval)"
#: Interval kinds: "corrected" (default) shifts minDCF and minCllr for the optimism of a minimum; "percentile" not.
INTERVALS = ("corrected", "percentile")
#: A sample minimum's bias over the extra bias of a replicate's: 1 / (2^(2/3) - 1) under the cube-root law.
OPTIMISM_FACTOR = 1 / (2 ** (2 / 3) - 1)
INTERVAL_TEXT = {
    "corrected": ("percentile bootstrap; for minDCF and minCllr shifted by -(1 + f) (mean replicate - estimate), "
                  "f = 1 / (2^(2/3) - 1) = 1.70 (the optimism of a minimum, cube-root law), clipped to [0, 1], and "
                  "minDCF's widened to its union with the calibrated bootstrap-t interval (studentiser the "
                  "cluster-robust variance of each replicate's DCF at its own optimal threshold, held fixed); "
                  "actDCF and Cllr plain percentile"),
    "percentile": "percentile bootstrap (minDCF and minCllr are optimistic: this under-covers them)",
}
CLLR_INTERVAL_TEXT = {
    "corrected": ("percentile bootstrap (minCllr shifted by -(1 + f) (mean replicate - estimate), f = 1 / (2^(2/3) - 1) "
                  "= 1.70, clipped to [0, 1]), widened to its union with the calibrated bootstrap-t interval: "
                  "studentiser the cluster-robust (per-subject influence) variance of each replicate, PAV costs held "
                  "fixed for minCllr (the minCllr bootstrap-t shifted by the same bias)"),
    "percentile": "percentile bootstrap (minCllr is optimistic and Cllr's costs skewed: this under-covers them)",
}
ZERO_TEXT = "; at a cost of 0 (perfect separation) one-sided on the subjects, never a zero-width interval"
#: Measured coverage of the 95% intervals (table in the module docstring).
COVERAGE = ("95% intervals measured on simulated all-against-all data, 100-150 subjects (bioxr.calibration docstring): "
            "minDCF and actDCF 0.91-0.99 (pigeonhole; minDCF before its bootstrap-t union, which only widens); "
            "minCllr and Cllr 0.93-0.97 with the studentised union of cllr_interval (0.89-0.91 and 0.92-0.95 "
            "without); with 60 subjects minDCF 0.92-0.97 and minCllr 0.92-0.94: below 95% where the minimum's "
            "optimism is large")


def _prepare(level, n_replicates, nonmated_weights, interval, failure_policy):
    """The interval arguments, checked before any work."""
    level = check_level(level)
    n_replicates = check_replicates(n_replicates, level=level)
    if nonmated_weights not in NONMATED_WEIGHTS:
        raise ValueError(f"nonmated_weights={nonmated_weights!r}; choose one of {NONMATED_WEIGHTS}: 'probe' weights "
                         "a non-mated comparison by its probe subject's draws, 'pigeonhole' by both subjects'.")
    if interval not in INTERVALS:
        raise ValueError(f"interval={interval!r}; choose one of {INTERVALS}: 'corrected' (default) corrects minDCF "
                         "and minCllr for the optimism of a minimum, 'percentile' gives the plain percentiles.")
    if failure_policy == "iso":
        raise ValueError("failure_policy='iso' has no bootstrap here (the generalized rates need each replicate's "
                         "FTE and FTA); use 'exclude' or 'nist', or dcf(..., failure_policy='iso') for the point.")
    return level, n_replicates, nonmated_weights, interval



# ------------------------------------------------------------------ the subject bootstrap
class _Sums:
    """Weighted sums of a per-comparison value by group (a run, or one group), for replicate subject weights.

    ``scheme`` "unit": weight ``w[a]``; "pigeonhole": ``w[a] w[c]``.
    """

    def __init__(self, a, c, group, value, n_groups: int, n_units: int, scheme: str):
        self.n_groups, self.scheme = n_groups, scheme
        if scheme == "unit":
            self.matrix = sparse.csr_matrix((value, (a, group)), shape=(n_units, n_groups))
            return
        key = (group.astype(np.int64) * n_units + a) * n_units + c
        uniq, inverse = np.unique(key, return_inverse=True)
        self.value = np.bincount(inverse, weights=value)
        self.group = uniq // (n_units * n_units)
        rest = uniq % (n_units * n_units)
        self.a, self.c = rest // n_units, rest % n_units
        self.starts = np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]])
        self.present = self.group[self.starts]

    def __call__(self, w: np.ndarray) -> np.ndarray:
        if self.scheme == "unit":
            return np.asarray(self.matrix.T.dot(w.T).T)
        out = np.zeros((w.shape[0], self.n_groups))
        step = max(1, 4_000_000 // max(self.value.size, 1))
        for s in range(0, w.shape[0], step):
            ws = w[s : s + step]
            v = ws[:, self.a] * ws[:, self.c]
            v *= self.value
            out[s : s + step, self.present] = np.add.reduceat(v, self.starts, axis=1)
        return out


class _Bootstrap:
    """Flat comparisons, their runs and per-unit sums: the statistics of any weighting of the subjects."""

    def __init__(self, obj, failure_policy: str, scheme: str, cuts=(), llr: bool = False):
        # every comparison one by one (PAV, runs of tied scores): a lazy cube or list is loaded here, whole
        scores, p_unit, r_unit, mated, kind = flat_comparisons(obj, failure_policy=failure_policy)
        if kind == "distance":
            scores = -scores  # failures (+inf distances under "nist") become -inf
        if np.isposinf(scores).any() or (np.isneginf(scores).any() and failure_policy != "nist"):
            raise ScoreCubeError("the scores hold infinities; scores must be finite (NaN means not compared).")
        nm = ~mated
        if mated.sum() == 0 or nm.sum() == 0:
            raise ValueError("the bootstrap needs both mated and non-mated comparisons.")
        units = pd.Index(pd.unique(np.concatenate([pd.unique(p_unit), pd.unique(r_unit)]))).sort_values()
        self.n_units = n = len(units)
        pu = units.get_indexer(p_unit).astype(np.int64)
        ru = units.get_indexer(r_unit).astype(np.int64)
        self.mated_units = int(np.unique(pu[mated]).size)
        self.nonmated_units = int(min(np.unique(pu[nm]).size, np.unique(ru[nm]).size))
        self.runs = _Runs(scores, mated, cuts)
        run, R = self.runs.run, self.runs.n_runs
        self.run_m, self.run_n = run[mated], run[nm]
        self.variance = CostVariance(pu[mated], pu[nm], ru[nm], n, scheme == "pigeonhole")
        side = "unit" if scheme == "probe" else "pigeonhole"
        self._t = _Sums(pu[mated], pu[mated], run[mated], np.ones(int(mated.sum())), R, n, "unit")
        self._n = _Sums(pu[nm], ru[nm], run[nm], np.ones(int(nm.sum())), R, n, side)
        if llr:
            one = np.zeros(scores.size, dtype=np.int64)  # every cost in one group
            cost_m, cost_n = np.logaddexp(0.0, -scores[mated]) / np.log(2), np.logaddexp(0.0, scores[nm]) / np.log(2)
            self.cost_m, self.cost_n = cost_m, cost_n
            self._cost = (_Sums(pu[mated], pu[mated], one[mated], cost_m, 1, n, "unit"),
                          _Sums(pu[nm], ru[nm], one[nm], cost_n, 1, n, side))

    def sums(self, w: np.ndarray):
        """Mated and non-mated weight of every run, ``(replicate, run)`` each."""
        return self._t(w), self._n(w)

    def cllr(self, w: np.ndarray, T: np.ndarray, N: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self._cost[0](w)[:, 0] / T.sum(axis=1) + self._cost[1](w)[:, 0] / N.sum(axis=1)) / 2

    def min_cllr(self, w: np.ndarray, T: np.ndarray, N: np.ndarray, llr: bool):
        """Per replicate: minCllr, its cluster-robust variance (PAV costs held fixed), and Cllr's (NaN unless llr)."""
        fits = [pav_costs(T[b], N[b]) for b in range(w.shape[0])]
        value = np.array([f[0] for f in fits])
        cost_m, cost_n = np.stack([f[1] for f in fits]), np.stack([f[2] for f in fits])
        var_min = self.variance(w, cost_m, cost_n, runs=(self.run_m, self.run_n))
        var_cllr = self.variance(w, self.cost_m, self.cost_n) if llr else np.full(w.shape[0], np.nan)
        return value, var_min, var_cllr

    def weights(self, n_replicates: int, seed) -> np.ndarray:
        """How often each unit is drawn, ``(replicate, unit)``, from :func:`bioxr.bootstrap.subject_draws`."""
        draws = subject_draws(self.n_units, n_replicates, seed=_entropy(seed))
        return np.stack([np.bincount(row, minlength=self.n_units) for row in draws]).astype(float)


def _zero_cost_bound(p, cm, cf, n_mated_units, n_nonmated_units, level, cap):
    """One-sided upper bound of a DCF seen at 0: the zero-error bounds of P_miss and P_fa on the units.

    ``1 - (alpha/2)^(1/n)`` for each rate (Bonferroni over the two; a
    bound on clusters, valid for any correlation within them).
    """
    alpha = (1 - level) / 2
    u_m = 1 - alpha ** (1 / max(n_mated_units, 1))
    u_f = 1 - alpha ** (1 / max(n_nonmated_units, 1))
    value = (cm * p * u_m + cf * (1 - p) * u_f) / np.minimum(cm * p, cf * (1 - p))
    return np.minimum(value, 1.0) if cap else value


def _bounds(point, reps, level, *, corrected=False, cap=None, zero_bound=None):
    """``(bounds (j, 2), kinds (j,), bias (j,))`` from replicates ``(replicate, j)``; never zero-width.

    ``corrected``: the percentile interval of a minimum, shifted for its
    optimism. A replicate's minimum is optimistic again, ``b =
    mean(replicates) - estimate`` (a replicate doubles the noise variance);
    the sample's own bias is ``f b``, ``f = 1 / (2^(2/3) - 1)``, as minima of
    empirical step processes and isotonic fits follow the cube-root law
    (Kim & Pollard 1990: bias ~ sigma^(4/3)). Replicates centred on the
    estimate (``- b``), estimate corrected (``- f b``).
    """
    alpha = (1 - level) / 2
    point = np.atleast_1d(np.asarray(point, dtype=float))
    out, bias = np.full((point.size, 2), np.nan), np.full(point.size, np.nan)
    kinds = np.empty(point.size, dtype=object)
    for j in range(point.size):
        r = reps[:, j][np.isfinite(reps[:, j])]
        lo, hi = np.quantile(r, [alpha, 1 - alpha]) if r.size else (np.nan, np.nan)
        if r.size and hi > lo:
            if corrected:
                b = float(np.mean(r)) - point[j]
                bias[j] = OPTIMISM_FACTOR * b
                lo2, hi2 = np.clip(np.array([lo, hi]) - b - bias[j], 0.0, np.inf if cap is None else cap)
                if hi2 > lo2:
                    lo, hi = lo2, hi2
            out[j], kinds[j] = (lo, hi), BOUND_KINDS[0]
        elif point[j] == 0 and zero_bound is not None:
            out[j], kinds[j] = (0.0, zero_bound[j]), BOUND_KINDS[1]
        else:
            kinds[j] = DEGENERATE
    return out, kinds, bias


def _add_interval(ds, name, reps, dims, level, *, corrected, cap=None, zero_bound=None):
    """Put ``name``'s interval, bound kind, replicates (and bias of a minimum) into ``ds``; failed replicates."""
    scalar = not dims
    reps = reps.reshape(reps.shape[0], -1)
    bounds, kinds, bias = _bounds(ds[name].values, reps, level, corrected=corrected, cap=cap, zero_bound=zero_bound)
    pick = (lambda a: a[0]) if scalar else (lambda a: a)
    ds[f"{name}_interval"] = xr.DataArray(pick(bounds), dims=(*dims, "bound"), coords={"bound": ["lower", "upper"]})
    ds[f"{name}_bound_kind"] = xr.DataArray(pick(kinds.astype(str)), dims=dims)
    if corrected:
        ds[f"{name}_bias"] = xr.DataArray(pick(bias), dims=dims)
        ds[f"{name}_bias"].attrs["long_name"] = "estimated bias of the sample value (optimism of a minimum)"
    ds[f"{name}_replicates"] = xr.DataArray(reps[:, 0] if scalar else reps, dims=("replicate", *dims))
    return int(np.sum(~np.isfinite(reps).all(axis=1)))


def _widen(ds, name, reps, var_reps, level, *, center=None, shift=0.0, cap=np.inf):
    """Widen ``name``'s ordinary interval in ``ds`` to its union with the calibrated bootstrap-t interval."""
    ds[f"{name}_replicate_variance"] = xr.DataArray(var_reps, dims=("replicate",), attrs={
        "long_name": "cluster-robust (per-subject influence) variance of each replicate, the bootstrap-t studentiser"})
    if ds[f"{name}_bound_kind"].item() != BOUND_KINDS[0]:
        return
    ds[f"{name}_interval"].values = studentized_union(ds[f"{name}_interval"].values, ds[name].item(), reps, var_reps,
                                                      level=level, center=center, shift=shift, cap=cap)


def _widen_min_dcf(ds, boot: _Bootstrap, w, reps, at, cand, costs, level, cap, dims):
    """minDCF's corrected interval widened to its union with the calibrated bootstrap-t interval.

    Each replicate's studentiser is the cluster-robust variance of its DCF
    at its own optimal threshold, held fixed (the envelope theorem: moving
    the threshold is second order at a minimum), as minCllr's with its PAV
    costs: a mated comparison costs ``2 c_miss p / D`` when missed, a
    non-mated one ``2 c_fa (1 - p) / D`` when accepted (``D`` the
    normaliser; :class:`~bioxr.calibration._studentized.CostVariance`
    halves their sum).
    """
    p, cm, cf = costs
    n_runs = boot.runs.n_runs
    first = np.append(cand, n_runs)[at]  # each replicate's first accepted run (n_runs: reject all)
    norm = np.minimum(cm * p, cf * (1 - p))
    point = np.atleast_1d(ds["min_dcf"].values).astype(float)
    bounds = np.array(ds["min_dcf_interval"].values, dtype=float).reshape(-1, 2)
    kinds = np.atleast_1d(ds["min_dcf_bound_kind"].values)
    bias = np.atleast_1d(ds["min_dcf_bias"].values).astype(float)
    variance = np.full(reps.shape, np.nan)
    runs = np.arange(n_runs)
    step = max(1, 4_000_000 // max(n_runs, 1))  # replicates at a time: (replicate, run) costs of a few MB
    for j in range(p.size):
        a, b = 2 * cm[j] * p[j] / norm[j], 2 * cf[j] * (1 - p[j]) / norm[j]
        for s in range(0, w.shape[0], step):
            miss = runs[None, :] < first[s : s + step, j : j + 1]
            variance[s : s + step, j] = boot.variance(w[s : s + step], a * miss, b * ~miss,
                                                      runs=(boot.run_m, boot.run_n))
        if kinds[j] == BOUND_KINDS[0]:
            bounds[j] = studentized_union(bounds[j], point[j], reps[:, j], variance[:, j], level=level,
                                          center=float(np.mean(reps[:, j])), shift=-bias[j],
                                          cap=np.inf if cap is None else cap)
    ds["min_dcf_interval"].values = bounds[0] if not dims else bounds
    ds["min_dcf_replicate_variance"] = xr.DataArray(variance[:, 0] if not dims else variance,
                                                    dims=("replicate", *dims), attrs={
        "long_name": "cluster-robust variance of each replicate's DCF at its optimal threshold (the studentiser)"})


def _interval_attrs(boot: _Bootstrap, scheme, interval, level, n_replicates, seed, n_bad) -> dict:
    return {"interval": INTERVAL_TEXT[interval] + ZERO_TEXT, "resampling": NONMATED_TEXT[scheme],
            "nonmated_weights": scheme, "level": level, "n_replicates": int(n_replicates), "seed": str(seed),
            "n_units": boot.n_units, "mated_units": boot.mated_units, "nonmated_units": boot.nonmated_units,
            "failed_replicates": int(n_bad), "coverage": COVERAGE}


def dcf_interval(obj, *, p_target=0.01, c_miss=1.0, c_fa=1.0, llr: bool = False, n_replicates: int = 2000,
                 level: float = 0.95, seed=0, nonmated_weights: str = NONMATED_WEIGHTS[0],
                 interval: str = "corrected", failure_policy: str = "exclude") -> xr.Dataset:
    """minDCF (and, for LLRs, actDCF) with subject-bootstrap intervals.

    The point estimates are those of :func:`dcf` (pooled over every probe
    dimension); each replicate recomputes the exact minDCF (and the actDCF
    at the same Bayes threshold) of its weighted comparisons. The
    "corrected" minDCF interval is for the population's minDCF and can sit
    above the (optimistic) sample value; weighting, correction and the
    measured coverage: module docstring.

    Every replicate reruns the exact minimum over all the comparisons'
    scores, so a lazy (dask-backed) cube or list is loaded into memory
    (every score with its subjects, as float64), unlike the counting
    statistics of :mod:`bioxr.bootstrap`.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list with subject labels.
    p_target, c_miss, c_fa, llr
        As in :func:`dcf`.
    n_replicates : int, keyword-only
        Bootstrap replicates (warns below ``50 / (1 - level)``).
    level : float, keyword-only
        Confidence level of the two-sided interval.
    seed : int, SeedSequence or Generator, keyword-only
    nonmated_weights : {"pigeonhole", "probe"}, keyword-only
        Weight of a non-mated comparison in a replicate: the product of
        both subjects' draws (default), or its probe subject's draws only.
    interval : {"corrected", "percentile"}, keyword-only
        ``"corrected"`` (default): minDCF's percentile interval shifted for
        the optimism of a minimum (:data:`OPTIMISM_FACTOR`), then widened
        to its union with the calibrated bootstrap-t interval, as minCllr's
        in :func:`cllr_interval`: each replicate's studentiser is the
        cluster-robust variance of its DCF at its own optimal threshold,
        held fixed (moving the threshold is second order at a minimum);
        ``"percentile"``: the plain percentiles (under-cover minDCF).
    failure_policy : {"exclude", "nist"}, keyword-only

    Returns
    -------
    xarray.Dataset
        ``min_dcf`` and ``min_dcf_interval`` (``(..., "bound")``),
        ``min_dcf_bound_kind``, ``min_dcf_bias`` and
        ``min_dcf_replicate_variance`` (the studentiser, ``replicate``,
        ...) with "corrected", ``min_dcf_replicates`` (``replicate``,
        ...); with ``llr=True``
        ``act_dcf`` and its interval, bound kind and replicates;
        ``n_mated``, ``n_nonmated``. ``p_target`` as in :func:`dcf`.
        attrs: interval, resampling, level, n_replicates, seed, units.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> res = bioxr.calibration.dcf_interval(cube, p_target=0.1, n_replicates=200, seed=1)
    >>> lo, hi = res.min_dcf_interval.values
    >>> bool(lo <= res.min_dcf <= hi), bool(res.min_dcf_bias < 0)
    (True, True)
    """
    p, cm, cf, scalar = _operating_points(p_target, c_miss, c_fa)
    level, n_replicates, scheme, interval = _prepare(level, n_replicates, nonmated_weights, interval, failure_policy)
    point = dcf(obj, p_target=p_target, c_miss=c_miss, c_fa=c_fa, llr=llr, failure_policy=failure_policy)
    theta = _bayes_threshold(p, cm, cf)
    boot = _Bootstrap(obj, failure_policy, scheme, cuts=theta if llr else ())
    w = boot.weights(n_replicates, seed)
    T, N = boot.sums(w)
    dims = () if scalar else ("p_target",)
    ds = point[["min_dcf", "n_mated", "n_nonmated"] + (["act_dcf"] if llr else [])]
    zero = _zero_cost_bound(p, cm, cf, boot.mated_units, boot.nonmated_units, level, cap=failure_policy != "nist")
    cap = 1.0 if failure_policy != "nist" else None  # a minDCF is at most 1 unless failures are never accepted
    reps, at, cand = _dcf_from(T, N, boot.runs, p, cm, cf)[:3]
    bad = _add_interval(ds, "min_dcf", reps, dims, level, corrected=interval == "corrected", cap=cap,
                        zero_bound=zero)
    if interval == "corrected":
        _widen_min_dcf(ds, boot, w, reps, at, cand, (p, cm, cf), level, cap, dims)
    if llr:
        act = _act_from(T, N, boot.runs, theta, p, cm, cf)[0]
        zero = _zero_cost_bound(p, cm, cf, boot.mated_units, boot.nonmated_units, level, cap=False)
        bad = max(bad, _add_interval(ds, "act_dcf", act, dims, level, corrected=False, zero_bound=zero))
    ds.attrs = {**point.attrs, **_interval_attrs(boot, scheme, interval, level, n_replicates, seed, bad)}
    return ds


def cllr_interval(obj, *, llr: bool = False, n_replicates: int = 2000, level: float = 0.95, seed=0,
                  nonmated_weights: str = NONMATED_WEIGHTS[0], interval: str = "corrected",
                  failure_policy: str = "exclude") -> xr.Dataset:
    """minCllr (and, for LLRs, Cllr) with subject-bootstrap intervals.

    Each replicate runs PAV on its weighted comparisons (minCllr) and
    averages the weighted costs of the LLRs (Cllr). PAV fits the labels it
    is scored on, so a sample's minCllr is optimistic: its percentile
    interval is first shifted for that optimism (``min_cllr_bias``), as in
    :func:`dcf_interval`. A minCllr of 0 (perfect separation) has no
    interval: NaN bounds, and ``min_cllr_bound_kind`` says so. PAV needs
    every score in order, so a lazy (dask-backed) cube or list is loaded
    into memory (every score with its subjects, as float64).

    With ``interval="corrected"`` (default) both intervals are then widened
    to their union with the calibrated bootstrap-t interval (as the FMR's
    in :mod:`bioxr.bootstrap`): a Cllr is a mean of costs that a few
    subjects dominate (lambs with very low mated LLRs), so a sample that
    drew fewer of them has a lower Cllr *and* a smaller spread, and a
    percentile interval misses high. Each replicate ``b`` gets the
    cluster-robust variance ``V_b = n / (n - 1) sum_i w_i psi_i^2`` of its
    statistic, ``psi_i`` a drawn subject's influence: its summed mated
    costs (centred at the replicate's mean cost, over the mated weight)
    plus its non-mated ones, as probe and, under ``"pigeonhole"``, as
    reference, each weighted by the other subject's draws (the crossed
    form, METHODS.md section 12), halved; for minCllr the costs of the
    replicate's own PAV calibration, held fixed (the refit is second
    order: the PAV LLRs minimise the cost). With ``u_b = (r_b - c)
    sqrt(mean(V) / V_b)`` (``c`` the estimate; for minCllr the replicates'
    mean) the bootstrap-t interval is ``[e - u_{1-a}, e - u_a]``, ``e``
    the estimate (for minCllr, the bias-corrected one), clipped to
    ``[0, 1]`` for minCllr and ``[0, inf)`` for Cllr; the reported
    interval is the lower of the two lower bounds and the higher of the
    two upper ones, never narrower than the percentile one. Measured
    coverage: module docstring. ``interval="percentile"``: the plain
    percentiles of both.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list with subject labels.
    llr : bool, keyword-only
        As in :func:`cllr`.
    n_replicates, level, seed, nonmated_weights, interval, failure_policy
        As in :func:`dcf_interval`.

    Returns
    -------
    xarray.Dataset
        ``min_cllr``, ``min_cllr_interval`` (``bound``),
        ``min_cllr_bound_kind``, ``min_cllr_bias`` (with "corrected"),
        ``min_cllr_replicates`` and ``min_cllr_replicate_variance`` (the
        studentiser ``V_b``, with "corrected"), over ``replicate``; with
        ``llr=True`` the same for ``cllr`` (no bias); ``n_mated``,
        ``n_nonmated``.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> res = bioxr.calibration.cllr_interval(cube, n_replicates=200, seed=1)
    >>> lo, hi = res.min_cllr_interval.values
    >>> bool(lo <= res.min_cllr <= hi)
    True
    """
    level, n_replicates, scheme, interval = _prepare(level, n_replicates, nonmated_weights, interval, failure_policy)
    point = cllr(obj, llr=llr, failure_policy=failure_policy)
    boot = _Bootstrap(obj, failure_policy, scheme, llr=llr)
    w = boot.weights(n_replicates, seed)
    T, N = boot.sums(w)
    ds = point[["min_cllr"] + (["cllr"] if llr else []) + ["n_mated", "n_nonmated"]]
    reps, var_min, var_cllr = boot.min_cllr(w, T, N, llr)
    corrected = interval == "corrected"
    bad = _add_interval(ds, "min_cllr", reps, (), level, corrected=corrected, cap=1.0)
    if corrected:  # the minimum's deviations centred on their mean, the interval on the corrected estimate
        _widen(ds, "min_cllr", reps, var_min, level, center=np.mean(reps), shift=-float(ds["min_cllr_bias"]), cap=1.0)
    if llr:
        reps = boot.cllr(w, T, N)
        bad = max(bad, _add_interval(ds, "cllr", reps, (), level, corrected=False))
        if corrected:
            _widen(ds, "cllr", reps, var_cllr, level)
    ds.attrs = {**point.attrs, **_interval_attrs(boot, scheme, interval, level, n_replicates, seed, bad)}
    ds.attrs["interval"] = CLLR_INTERVAL_TEXT[interval] + "; a minCllr of 0 (perfect separation) has no interval (NaN)"
    return ds
