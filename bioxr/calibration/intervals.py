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
from ._optimism import PAIR_NOISE, dcf_noise_ratio, minimum_interval, moment_scale, pav_noise_ratio
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
#: A sample minimum's bias over a replicate's extra bias under the cube-root law when a replicate's noise equals
#: the sample's: 1 / (2^(2/3) - 1). The reported ``*_bias`` uses the data's noise ratio; the interval brackets the
#: exponent (:data:`~bioxr.calibration._optimism.OPTIMISM_EXPONENTS`).
OPTIMISM_FACTOR = 1 / (2 ** (2 / 3) - 1)
_MINIMUM_TEXT = ("the replicates' deviations from their mean, scaled by the crossed moment variance over the "
                 "pigeonhole's and by sqrt(n / (n - 1)) t_{n-1} / z (n subjects), read around the estimate shifted "
                 "by -f b (b = mean replicate - estimate, f = 1 / ((1 + lambda)^gamma - 1), lambda a replicate's local "
                 "noise over the sample's): the lower bound with gamma = 1, the upper with gamma = 1/2 (the optimism "
                 "of a minimum, bracketed), each widened to the bootstrap-t of the same deviations (studentiser the "
                 "cluster-robust variance of each replicate at its own optimum, held fixed), clipped to [0, 1]")
INTERVAL_TEXT = {
    "corrected": f"subject bootstrap; minDCF: {_MINIMUM_TEXT}; actDCF plain percentile",
    "percentile": "percentile bootstrap (minDCF and minCllr are optimistic: this under-covers them)",
}
CLLR_INTERVAL_TEXT = {
    "corrected": (f"subject bootstrap; minCllr: {_MINIMUM_TEXT}; Cllr: percentile, widened to its union with the "
                  "calibrated bootstrap-t interval (studentiser the cluster-robust variance of each replicate)"),
    "percentile": "percentile bootstrap (minCllr is optimistic and Cllr's costs skewed: this under-covers them)",
}
ZERO_TEXT = "; at a cost of 0 (perfect separation) one-sided on the subjects, never a zero-width interval"
#: Measured coverage of the 95% intervals (table in the module docstring).
COVERAGE = ("95% intervals measured on the coverage registry's cells (60 subjects x 4 samples, all against all, "
            "with and without subject effects; 1,000 experiments, 200 replicates; benchmarks/COVERAGE.md): minDCF "
            "0.941-0.957 at P_target 0.01, 0.1 and 0.5, minCllr 0.951-0.954; actDCF and Cllr: bioxr.calibration "
            "docstring")


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


def _bounds(point, reps, level, *, zero_bound=None, minimum=None, cap=None):
    """``(bounds (j, 2), kinds (j,), bias (j,))`` from replicates ``(replicate, j)``; never zero-width.

    Percentile intervals, or with ``minimum`` (per ``j``: the replicates'
    studentisers, the noise ratio and the scale of
    :func:`~bioxr.calibration._optimism.minimum_interval`) the corrected
    interval of a minimum and its estimated bias.
    """
    alpha = (1 - level) / 2
    point = np.atleast_1d(np.asarray(point, dtype=float))
    out, bias = np.full((point.size, 2), np.nan), np.full(point.size, np.nan)
    kinds = np.empty(point.size, dtype=object)
    for j in range(point.size):
        r = reps[:, j][np.isfinite(reps[:, j])]
        lo, hi = np.quantile(r, [alpha, 1 - alpha]) if r.size else (np.nan, np.nan)
        if r.size and hi > lo:
            if minimum is not None:
                var_reps, ratio, scale = minimum[j]
                var_reps = var_reps if r.size == reps.shape[0] else None
                (lo2, hi2), bias[j] = minimum_interval(point[j], r, var_reps, level=level, noise_ratio=ratio,
                                                      scale=scale, cap=np.inf if cap is None else cap)
                if hi2 > lo2:
                    lo, hi = lo2, hi2
            out[j], kinds[j] = (lo, hi), BOUND_KINDS[0]
        elif point[j] == 0 and zero_bound is not None:
            out[j], kinds[j] = (0.0, zero_bound[j]), BOUND_KINDS[1]
        else:
            kinds[j] = DEGENERATE
    return out, kinds, bias


def _add_interval(ds, name, reps, dims, level, *, cap=None, zero_bound=None, minimum=None, var_reps=None):
    """Put ``name``'s interval, bound kind, replicates (and a minimum's bias and studentisers) into ``ds``.

    Returns the number of failed replicates.
    """
    scalar = not dims
    reps = reps.reshape(reps.shape[0], -1)
    bounds, kinds, bias = _bounds(ds[name].values, reps, level, cap=cap, zero_bound=zero_bound, minimum=minimum)
    pick = (lambda a: a[0]) if scalar else (lambda a: a)
    ds[f"{name}_interval"] = xr.DataArray(pick(bounds), dims=(*dims, "bound"), coords={"bound": ["lower", "upper"]})
    ds[f"{name}_bound_kind"] = xr.DataArray(pick(kinds.astype(str)), dims=dims)
    if minimum is not None:
        ds[f"{name}_bias"] = xr.DataArray(pick(bias), dims=dims)
        ds[f"{name}_bias"].attrs["long_name"] = ("estimated bias of the sample value (optimism of a minimum, "
                                                 "cube-root law)")
        ds[f"{name}_noise_ratio"] = xr.DataArray(pick(np.array([m[1] for m in minimum])), dims=dims, attrs={
            "long_name": "a replicate's local noise over the sample's (lambda): sets the optimism's correction"})
        ds[f"{name}_scale"] = xr.DataArray(pick(np.array([m[2] for m in minimum])), dims=dims, attrs={
            "long_name": "factor on the replicates' deviations (crossed moment variance, few subjects)"})
    ds[f"{name}_replicates"] = xr.DataArray(reps[:, 0] if scalar else reps, dims=("replicate", *dims))
    if var_reps is not None:
        ds[f"{name}_replicate_variance"] = xr.DataArray(var_reps.reshape(reps.shape[0], -1)[:, 0] if scalar
                                                        else var_reps, dims=("replicate", *dims), attrs={
            "long_name": "cluster-robust (per-subject influence) variance of each replicate, the bootstrap-t "
                         "studentiser"})
    return int(np.sum(~np.isfinite(reps).all(axis=1)))


def _widen(ds, name, reps, var_reps, level, *, cap=np.inf):
    """Widen ``name``'s percentile interval in ``ds`` to its union with the calibrated bootstrap-t interval."""
    ds[f"{name}_replicate_variance"] = xr.DataArray(var_reps, dims=("replicate",), attrs={
        "long_name": "cluster-robust (per-subject influence) variance of each replicate, the bootstrap-t studentiser"})
    if ds[f"{name}_bound_kind"].item() != BOUND_KINDS[0]:
        return
    ds[f"{name}_interval"].values = studentized_union(ds[f"{name}_interval"].values, ds[name].item(), reps, var_reps,
                                                      level=level, cap=cap)


def _dcf_costs(p, cm, cf):
    """The costs of a missed mated and of an accepted non-mated comparison, doubled (CostVariance halves)."""
    norm = np.minimum(cm * p, cf * (1 - p))
    return 2 * cm * p / norm, 2 * cf * (1 - p) / norm


def _dcf_variances(boot: _Bootstrap, w, at, cand, costs) -> np.ndarray:
    """Each replicate's cluster-robust variance of its DCF at its own optimal threshold, held fixed, ``(B, j)``.

    The envelope theorem: moving the threshold is second order at a
    minimum. A mated comparison costs ``2 c_miss p / D`` when missed, a
    non-mated one ``2 c_fa (1 - p) / D`` when accepted (``D`` the
    normaliser; :class:`~bioxr.calibration._studentized.CostVariance`
    halves their sum).
    """
    p, cm, cf = costs
    n_runs = boot.runs.n_runs
    first = np.append(cand, n_runs)[at]  # each replicate's first accepted run (n_runs: reject all)
    variance = np.full(first.shape, np.nan)
    runs = np.arange(n_runs)
    step = max(1, 4_000_000 // max(n_runs, 1))  # replicates at a time: (replicate, run) costs of a few MB
    for j in range(p.size):
        a, b = _dcf_costs(p[j], cm[j], cf[j])
        for s in range(0, w.shape[0], step):
            miss = runs[None, :] < first[s : s + step, j : j + 1]
            variance[s : s + step, j] = boot.variance(w[s : s + step], a * miss, b * ~miss,
                                                      runs=(boot.run_m, boot.run_n))
    return variance


def _dcf_minimum(boot: _Bootstrap, w, at, cand, costs, level, scheme) -> list:
    """Per operating point: the studentisers, the noise ratio and the scale of minDCF's corrected interval."""
    p, cm, cf = costs
    variance = _dcf_variances(boot, w, at, cand, costs)
    one = np.ones((1, boot.n_units))
    t0, n0 = boot.sums(one)
    at0 = _dcf_from(t0, n0, boot.runs, p, cm, cf)[1][0]
    first = np.append(cand, boot.runs.n_runs)[at0]
    ratio = dcf_noise_ratio(p, cm, cf, float(t0.sum()), float(n0.sum()), PAIR_NOISE if scheme == "pigeonhole" else 1.0)
    out = []
    for j in range(p.size):
        a, b = _dcf_costs(p[j], cm[j], cf[j])
        miss = np.arange(boot.runs.n_runs) < first[j]
        S, P = boot.variance.parts((a * miss)[boot.run_m], (b * ~miss)[boot.run_n])
        out.append((variance[:, j], float(ratio[j]), moment_scale(S, P, boot.n_units, level)))
    return out


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
        ``"corrected"`` (default): the interval of a minimum (module
        docstring of :mod:`bioxr.calibration`): the replicates' spread
        rescaled to the crossed moment variance and for few subjects, read
        around the estimate corrected for the optimism of a minimum, which
        it brackets, and widened to its union with the bootstrap-t
        interval (each replicate's studentiser is the cluster-robust
        variance of its DCF at its own optimal threshold, held fixed:
        moving the threshold is second order at a minimum);
        ``"percentile"``: the plain percentiles (under-cover minDCF).
    failure_policy : {"exclude", "nist"}, keyword-only

    Returns
    -------
    xarray.Dataset
        ``min_dcf`` and ``min_dcf_interval`` (``(..., "bound")``),
        ``min_dcf_bound_kind``; with "corrected" ``min_dcf_bias`` (the
        cube-root estimate of the sample value's optimism),
        ``min_dcf_noise_ratio`` (``lambda``), ``min_dcf_scale`` (the factor
        on the replicates' deviations) and ``min_dcf_replicate_variance``
        (the studentiser, ``replicate``, ...); ``min_dcf_replicates`` (``replicate``,
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
    minimum = _dcf_minimum(boot, w, at, cand, (p, cm, cf), level, scheme) if interval == "corrected" else None
    bad = _add_interval(ds, "min_dcf", reps, dims, level, cap=cap, zero_bound=zero, minimum=minimum,
                        var_reps=None if minimum is None else np.stack([m[0] for m in minimum], axis=1))
    if llr:
        act = _act_from(T, N, boot.runs, theta, p, cm, cf)[0]
        zero = _zero_cost_bound(p, cm, cf, boot.mated_units, boot.nonmated_units, level, cap=False)
        bad = max(bad, _add_interval(ds, "act_dcf", act, dims, level, zero_bound=zero))
    ds.attrs = {**point.attrs, **_interval_attrs(boot, scheme, interval, level, n_replicates, seed, bad)}
    return ds


def cllr_interval(obj, *, llr: bool = False, n_replicates: int = 2000, level: float = 0.95, seed=0,
                  nonmated_weights: str = NONMATED_WEIGHTS[0], interval: str = "corrected",
                  failure_policy: str = "exclude") -> xr.Dataset:
    """minCllr (and, for LLRs, Cllr) with subject-bootstrap intervals.

    Each replicate runs PAV on its weighted comparisons (minCllr) and
    averages the weighted costs of the LLRs (Cllr). PAV fits the labels it
    is scored on, so a sample's minCllr is optimistic: its interval is the
    corrected interval of a minimum, as minDCF's in :func:`dcf_interval`
    (module docstring; ``min_cllr_bias``, ``min_cllr_noise_ratio``,
    ``min_cllr_scale``). A minCllr of 0 (perfect separation) has no
    interval: NaN bounds, and ``min_cllr_bound_kind`` says so. PAV needs
    every score in order, so a lazy (dask-backed) cube or list is loaded
    into memory (every score with its subjects, as float64).

    With ``interval="corrected"`` (default) both intervals are widened
    to their union with a calibrated bootstrap-t interval (as the FMR's
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
    order: the PAV LLRs minimise the cost). For Cllr, with ``u_b = (r_b -
    e) sqrt(mean(V) / V_b)`` (``e`` the estimate) the bootstrap-t
    interval is ``[e - u_{1-a}, e - u_a]``, clipped to ``[0, inf)``; the
    reported interval is the lower of the two lower bounds and the higher
    of the two upper ones, never narrower than the percentile one. For
    minCllr the same, on the rescaled deviations from the replicates'
    mean, around the corrected estimate (module docstring). Measured
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
        ``min_cllr_bound_kind``, ``min_cllr_bias``,
        ``min_cllr_noise_ratio`` and ``min_cllr_scale`` (with "corrected",
        as in :func:`dcf_interval`),
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
    minimum = None
    if corrected:
        _, cost_m, cost_n, bt, bn = pav_costs(*(x[0] for x in boot.sums(np.ones((1, boot.n_units)))), blocks=True)
        S, P = boot.variance.parts(cost_m[boot.run_m], cost_n[boot.run_n])
        ratio = pav_noise_ratio(bt, bn, PAIR_NOISE if scheme == "pigeonhole" else 1.0)
        minimum = [(var_min, ratio, moment_scale(S, P, boot.n_units, level))]
    bad = _add_interval(ds, "min_cllr", reps, (), level, cap=1.0, minimum=minimum,
                        var_reps=var_min if corrected else None)
    if llr:
        reps = boot.cllr(w, T, N)
        bad = max(bad, _add_interval(ds, "cllr", reps, (), level))
        if corrected:
            _widen(ds, "cllr", reps, var_cllr, level)
    ds.attrs = {**point.attrs, **_interval_attrs(boot, scheme, interval, level, n_replicates, seed, bad)}
    ds.attrs["interval"] = CLLR_INTERVAL_TEXT[interval] + "; a minCllr of 0 (perfect separation) has no interval (NaN)"
    return ds
