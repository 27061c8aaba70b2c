"""Point estimates of :mod:`bioxr.calibration`: minDCF, actDCF, Cllr and minCllr (PAV), and their internals."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .._core import Grouped, check_targets, warn_if_reversed
from ..cube import ScoreCubeError
from ..verification import _attrs as _rate_attrs
from ..verification import _iso_factors

NOT_LLR = "scores are not declared log-likelihood ratios: only the threshold-free minDCF is computed"
NOT_LLR_CLLR = "scores are not declared log-likelihood ratios: only the threshold-free minCllr is computed"
NORMALIZATION = ("DCF / min(C_miss P_target, C_fa (1 - P_target)): the cost of the better trivial system (accept "
                 "all or reject all) is 1 (BOSARIS, NIST SRE)")
MIN_RULE = ("least DCF over every threshold of the step curve (each distinct score, and +inf: reject all); equal to "
            "the least DCF over the vertices of the ROC convex hull")
ACT_RULE = "DCF at the Bayes threshold log(C_fa (1 - P_target) / (C_miss P_target)) on the LLRs (accept LLR >= it)"
PAV_RULE = ("Cllr of the PAV-calibrated scores: tied scores pooled, each block's posterior T_b / (T_b + N_b) minus the "
            "empirical prior log-odds log(T / N); one-class end blocks have LLR -inf / +inf at no cost (BOSARIS "
            "min_cllr, no epsilon)")
CLLR_RULE = "1/2 [mean over mated of log2(1 + e^-s) + mean over non-mated of log2(1 + e^s)], s natural-log LLRs"


# ------------------------------------------------------------------ checks
def _operating_points(p_target, c_miss, c_fa):
    """``(p, c_miss, c_fa, scalar)``: 1-D float arrays broadcast together, checked."""
    p = check_targets(p_target, "p_target", closed=False)
    costs = []
    for name, value in (("c_miss", c_miss), ("c_fa", c_fa)):
        try:
            a = np.atleast_1d(np.asarray(value, dtype=float))
        except (TypeError, ValueError):
            a = np.array([np.nan])
        if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"{name}={value!r}; a cost is a positive finite number (or a 1-D sequence of them), "
                             "e.g. c_miss=1, c_fa=1 as in the NIST SRE.")
        costs.append(a)
    try:
        p, cm, cf = np.broadcast_arrays(p, *costs)
    except ValueError:
        raise ValueError(f"p_target, c_miss and c_fa have lengths {p.size}, {costs[0].size} and {costs[1].size}; "
                         "give one operating point per element: sequences of one length, or scalars.") from None
    scalar = all(np.ndim(v) == 0 for v in (p_target, c_miss, c_fa))
    return p.astype(float), cm.astype(float), cf.astype(float), scalar


def _check_llr(llr, kind: str) -> bool:
    if not isinstance(llr, (bool, np.bool_)):
        raise TypeError(f"llr={llr!r}; say llr=True when the scores are log-likelihood ratios, else llr=False.")
    if llr and kind == "distance":
        raise ValueError("llr=True with score_kind='distance': log-likelihood ratios grow with the evidence for a "
                         "mate, so they are similarity scores. If these are negated LLRs, negate them back and "
                         "declare score_kind='similarity'; otherwise use llr=False (minDCF and minCllr only).")
    return bool(llr)



# ------------------------------------------------------------------ runs of the sorted scores
class _Runs:
    """The sorted scores cut into runs: the elements of PAV and the candidate thresholds of minDCF.

    Tied scores form one group. Consecutive groups that hold only mated (or
    only non-mated) scores form one run: PAV gives adjacent elements with
    equal labels equal values, so pooling them first changes nothing, and
    within a run of mated scores only its lowest score can minimise a DCF
    (the others miss more at the same false alarms). A group with both
    kinds (a tie across classes) is a run of its own. ``cuts`` (the Bayes
    thresholds of actDCF) also start runs, so a run lies wholly on one side
    of each. Scores of ``-inf`` (failures under the "nist" policy) never
    start a candidate: no threshold accepts them.
    """

    def __init__(self, scores: np.ndarray, mated: np.ndarray, cuts=()):
        order = np.argsort(scores, kind="stable")
        s, m = scores[order], mated[order]
        new = np.ones(s.size, dtype=bool)
        new[1:] = s[1:] != s[:-1]
        gid = np.cumsum(new) - 1
        n_groups = int(gid[-1]) + 1 if s.size else 0
        g_score = s[new]
        has_m = np.bincount(gid, weights=m, minlength=n_groups) > 0
        has_n = np.bincount(gid, weights=~m, minlength=n_groups) > 0
        kind = np.where(has_m & has_n, 2, has_m.astype(np.int64))
        brk = np.ones(n_groups, dtype=bool)
        brk[1:] = (kind[1:] != kind[:-1]) | (kind[1:] == 2)
        first_finite = int(np.searchsorted(g_score, -np.inf, side="right"))
        cut_at = np.searchsorted(g_score, np.asarray(list(cuts), dtype=float), side="left")
        for g in (first_finite, *cut_at.tolist()):
            if 0 < g < n_groups:
                brk[g] = True
        run_of_group = np.cumsum(brk) - 1
        self.n_runs = int(run_of_group[-1]) + 1 if n_groups else 0
        self.run = np.empty(s.size, dtype=np.int64)
        self.run[order] = run_of_group[gid]
        self.start = g_score[brk]  # each run's lowest score
        self.candidate = (kind[brk] > 0) & np.isfinite(self.start)

    def position(self, t: np.ndarray) -> np.ndarray:
        """The first run accepted at each threshold ``t`` (runs from it on have scores >= t)."""
        return np.searchsorted(self.start, t, side="left")


def _pav(t: np.ndarray, n: np.ndarray):
    """Pool adjacent violators on elements sorted by score: mated weight ``t``, non-mated ``n``.

    Returns the blocks' mated and non-mated weights, lowest block first;
    elements without weight are skipped. A stack pass, linear in the
    elements: a new element is merged with the block below while that
    block's share of mated weight is at least its own.
    """
    bt: list[float] = []
    bn: list[float] = []
    for ti, ni in zip(t.tolist(), n.tolist()):
        if ti + ni <= 0:
            continue
        while bt and bt[-1] * ni >= ti * bn[-1]:
            ti += bt.pop()
            ni += bn.pop()
        bt.append(ti)
        bn.append(ni)
    return np.asarray(bt, dtype=float), np.asarray(bn, dtype=float)


def _min_cllr_from(t: np.ndarray, n: np.ndarray) -> float:
    """minCllr from the PAV blocks of elements with weights ``t``, ``n`` (in bits)."""
    bt, bn = _pav(t, n)
    big_t, big_n = bt.sum(), bn.sum()
    if big_t <= 0 or big_n <= 0:
        return np.nan
    both = bt * big_n + bn * big_t  # e^-LLR_b = bn T / (bt N): softplus(-LLR_b) = log(both / (bt N))
    mt, mn = bt > 0, bn > 0
    cost_t = np.sum(bt[mt] * (np.log(both[mt]) - np.log(bt[mt] * big_n))) / big_t
    cost_n = np.sum(bn[mn] * (np.log(both[mn]) - np.log(bn[mn] * big_t))) / big_n
    return float((cost_t + cost_n) / (2 * np.log(2)))


def _dcf_from(T: np.ndarray, N: np.ndarray, runs: _Runs, p, cm, cf, affine=(0.0, 1.0)):
    """minDCF per row of run sums ``T``, ``N`` (replicate, run): values, candidate index, P_miss, P_fa.

    The candidates are the runs that may start an optimum, then ``+inf``
    (reject all), lenient to strict; of equal minima the most lenient.
    """
    a, c = affine
    cand = np.flatnonzero(runs.candidate)
    t_tot, n_tot = T.sum(axis=1, keepdims=True), N.sum(axis=1, keepdims=True)
    below_t = np.cumsum(T, axis=1) - T  # mated weight in runs below run k: misses when run k is the first accepted
    below_n = np.cumsum(N, axis=1) - N
    misses = np.concatenate([below_t[:, cand], t_tot], axis=1)
    alarms = np.concatenate([n_tot - below_n[:, cand], np.zeros_like(n_tot)], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_miss = a + c * (misses / t_tot)
        p_fa = c * (alarms / n_tot)
    norm = np.minimum(cm * p, cf * (1 - p))
    out = np.empty((T.shape[0], p.size))
    at = np.empty((T.shape[0], p.size), dtype=np.int64)
    for j in range(p.size):
        cost = (cm[j] * p[j] * p_miss + cf[j] * (1 - p[j]) * p_fa) / norm[j]
        at[:, j] = np.argmin(np.where(np.isnan(cost), np.inf, cost), axis=1)
        out[:, j] = np.take_along_axis(cost, at[:, j : j + 1], axis=1)[:, 0]
    rows = np.arange(T.shape[0])[:, None]
    return out, at, cand, misses[rows, at], alarms[rows, at], p_miss[rows, at], p_fa[rows, at]


def _act_from(T, N, runs: _Runs, theta, p, cm, cf, affine=(0.0, 1.0)):
    """actDCF per row at the Bayes thresholds ``theta``: values, misses, false alarms, P_miss, P_fa."""
    a, c = affine
    k = runs.position(theta)
    t_tot, n_tot = T.sum(axis=1, keepdims=True), N.sum(axis=1, keepdims=True)
    cum_t = np.concatenate([np.zeros_like(t_tot), np.cumsum(T, axis=1)], axis=1)
    cum_n = np.concatenate([np.zeros_like(n_tot), np.cumsum(N, axis=1)], axis=1)
    misses, alarms = cum_t[:, k], n_tot - cum_n[:, k]
    with np.errstate(invalid="ignore", divide="ignore"):
        p_miss = a + c * misses / t_tot
        p_fa = c * alarms / n_tot
    value = (cm * p * p_miss + cf * (1 - p) * p_fa) / np.minimum(cm * p, cf * (1 - p))
    return value, misses, alarms, p_miss, p_fa


def _bayes_threshold(p, cm, cf) -> np.ndarray:
    return np.log(cf * (1 - p)) - np.log(cm * p)


def _cllr_value(mated: np.ndarray, nonmated: np.ndarray) -> float:
    return float((np.mean(np.logaddexp(0.0, -mated)) + np.mean(np.logaddexp(0.0, nonmated))) / (2 * np.log(2)))


# ------------------------------------------------------------------ the scores of a group
def _group_scores(groups: Grouped, g: int):
    """Similarity-oriented mated and non-mated scores of group ``g``; "nist" failures as ``-inf``."""
    values, index = groups.block(g)
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    is_mated = np.zeros(flat.size, dtype=bool)
    is_mated[index.mated] = True
    keep = ~np.isnan(flat)
    keep[index.excluded] = False
    if np.isinf(flat[keep]).any():
        raise ScoreCubeError("the scores hold infinities; scores must be finite (NaN means not compared). An LLR of "
                             "+-inf claims certainty: clip such LLRs to a finite bound first.")
    if groups.distance:
        flat = -flat
    if groups.policy == "nist" and groups.has_failures:
        failed = groups.failed_at(g, np.arange(flat.size))
        failed[index.excluded] = False
        flat = np.where(failed, -np.inf, flat)
        keep |= failed
    return flat[keep & is_mated], flat[keep & ~is_mated]


def _group_runs(groups: Grouped, g: int, what: str, cuts=()):
    """Group ``g``'s mated and non-mated scores, their runs and the run counts ``T``, ``N`` (1, run)."""
    mated, nonmated = _group_scores(groups, g)
    if mated.size == 0 or nonmated.size == 0:
        where = f" in group {g} of the kept dims {list(groups.kept)}" if groups.kept else ""
        raise ValueError(f"{what} needs mated and non-mated comparisons; there are {mated.size} mated and "
                         f"{nonmated.size} non-mated{where}. Pool over more dimensions (dim=...).")
    if g == 0:
        warn_if_reversed(mated[np.isfinite(mated)], nonmated[np.isfinite(nonmated)], groups.kind)
    flags = np.r_[np.ones(mated.size, dtype=bool), np.zeros(nonmated.size, dtype=bool)]
    runs = _Runs(np.concatenate([mated, nonmated]), flags, cuts)
    T = np.bincount(runs.run[flags], minlength=runs.n_runs).astype(float)[None, :]
    N = np.bincount(runs.run[~flags], minlength=runs.n_runs).astype(float)[None, :]
    return mated, nonmated, runs, T, N


def _coords(p, cm, cf, scalar: bool) -> dict:
    eff = cm * p / (cm * p + cf * (1 - p))
    norm = np.minimum(cm * p, cf * (1 - p))
    if scalar:
        return {"p_target": p[0], "c_miss": cm[0], "c_fa": cf[0], "effective_prior": eff[0], "dcf_normalizer": norm[0]}
    return {"p_target": ("p_target", p), "c_miss": ("p_target", cm), "c_fa": ("p_target", cf),
            "effective_prior": ("p_target", eff), "dcf_normalizer": ("p_target", norm)}


# ------------------------------------------------------------------ point estimates
def dcf(obj, *, p_target=0.01, c_miss=1.0, c_fa=1.0, llr: bool = False, dim=None,
        failure_policy: str = "exclude") -> xr.Dataset:
    """Normalized minDCF (and, for LLRs, actDCF) at given operating points.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list (also one from
        :func:`bioxr.from_scores`: no subjects are needed).
    p_target : float or array_like, keyword-only
        Prior probability of a mated comparison, in (0, 1). Default 0.01.
    c_miss, c_fa : float or array_like, keyword-only
        Costs of a miss (false non-match) and a false alarm (false match),
        positive. ``p_target``, ``c_miss`` and ``c_fa`` broadcast together;
        any sequence makes a ``p_target`` dimension (one operating point per
        element; ``c_miss``, ``c_fa``, ``effective_prior`` and
        ``dcf_normalizer`` are coordinates on it).
    llr : bool, keyword-only
        True when the scores are natural-log likelihood ratios: adds actDCF
        at the Bayes threshold. Refused for distance scores.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions (of a list: its ``probe_dims``) to pool over;
        None (default) pools all of them, the others are kept.
    failure_policy : {"exclude", "nist", "iso"}, keyword-only
        As in :func:`bioxr.verification.error_rates`: under "nist" a failed
        comparison is never accepted; under "iso" P_miss and P_fa are GFRR
        and GFAR.

    Returns
    -------
    xarray.Dataset
        Over ``(*kept, "p_target")``: ``min_dcf`` (normalized),
        ``min_dcf_threshold`` (the most lenient threshold attaining it, in
        the scores' own orientation: ``inf`` rejects all),
        ``min_dcf_p_miss``, ``min_dcf_p_fa``, ``min_dcf_misses``,
        ``min_dcf_false_alarms``; with ``llr=True`` also ``act_dcf``,
        ``act_dcf_threshold`` (the Bayes threshold), ``act_dcf_p_miss``,
        ``act_dcf_p_fa``, ``act_dcf_misses``, ``act_dcf_false_alarms``;
        ``n_mated``, ``n_nonmated`` over ``kept``. attrs ``dcf_normalization``,
        ``min_dcf``, ``act_dcf`` (the rule, or why it is not computed),
        ``llr``, ``decision_rule``, ``failure_policy``.

    See Also
    --------
    cllr, dcf_interval

    References
    ----------
    Brümmer & de Villiers, The BOSARIS toolkit (2011); NIST SRE evaluation
    plans; METHODS.md section 11.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> res = bioxr.calibration.dcf(cube, p_target=[0.01, 0.1])
    >>> res.min_dcf.round(3).values.tolist()
    [0.579, 0.317]
    >>> res.attrs["act_dcf"]
    'scores are not declared log-likelihood ratios: only the threshold-free minDCF is computed'
    >>> res.min_dcf_p_miss.round(3).values.tolist(), res.min_dcf_false_alarms.values.tolist()
    ([0.383, 0.25], [14, 53])
    """
    p, cm, cf, scalar = _operating_points(p_target, c_miss, c_fa)
    groups = Grouped(obj, dim, failure_policy=failure_policy)
    llr = _check_llr(llr, groups.kind)
    affine = _iso_factors(groups)[:2]
    theta = _bayes_threshold(p, cm, cf)
    names = ["min_dcf", "min_dcf_threshold", "min_dcf_p_miss", "min_dcf_p_fa", "min_dcf_misses", "min_dcf_false_alarms"]
    if llr:
        names += ["act_dcf", "act_dcf_threshold", "act_dcf_p_miss", "act_dcf_p_fa", "act_dcf_misses",
                  "act_dcf_false_alarms"]
    out = {k: np.empty((groups.n_groups, p.size)) for k in names}
    counts = np.empty((groups.n_groups, 2), dtype=np.int64)
    for g in range(groups.n_groups):
        mated, nonmated, runs, T, N = _group_runs(groups, g, "the DCF", theta if llr else ())
        value, at, cand, miss, alarm, pm, pf = _dcf_from(T, N, runs, p, cm, cf, affine)
        starts = np.append(runs.start[cand], np.inf)
        out["min_dcf"][g], out["min_dcf_misses"][g], out["min_dcf_false_alarms"][g] = value[0], miss[0], alarm[0]
        out["min_dcf_p_miss"][g], out["min_dcf_p_fa"][g] = pm[0], pf[0]
        out["min_dcf_threshold"][g] = groups.orient(starts[at[0]])
        if llr:
            act, miss, alarm, pm, pf = _act_from(T, N, runs, theta, p, cm, cf, affine)
            out["act_dcf"][g], out["act_dcf_threshold"][g] = act[0], theta
            out["act_dcf_misses"][g], out["act_dcf_false_alarms"][g] = miss[0], alarm[0]
            out["act_dcf_p_miss"][g], out["act_dcf_p_fa"][g] = pm[0], pf[0]
        counts[g] = mated.size, nonmated.size
    coords = _coords(p, cm, cf, scalar)
    data = {}
    for k in names:
        a = out[k][:, 0] if scalar else out[k]
        if k.endswith(("misses", "false_alarms")):
            a = a.astype(np.int64)
        data[k] = groups.dataarray(a, () if scalar else ("p_target",))
    data["n_mated"] = groups.dataarray(counts[:, 0])
    data["n_nonmated"] = groups.dataarray(counts[:, 1])
    ds = xr.Dataset(data).assign_coords(coords)
    for k, text in _LONG_NAMES.items():
        if k in ds:
            ds[k].attrs["long_name"] = text
    ds.attrs = _rate_attrs(groups, dcf_normalization=NORMALIZATION, min_dcf=MIN_RULE,
                           act_dcf=ACT_RULE if llr else NOT_LLR, llr=int(llr))
    if affine != (0.0, 1.0):
        ds.attrs["rates"] = "generalized: P_miss is GFRR and P_fa GFAR (ISO/IEC 19795-1); counts are of comparisons made"
    return ds


_AT = {"min": "the minDCF threshold", "act": "the Bayes threshold"}
_LONG_NAMES = {
    "min_dcf": "normalized minimum detection cost", "min_dcf_threshold": "most lenient threshold attaining minDCF",
    "act_dcf": "normalized actual detection cost at the Bayes threshold",
    "act_dcf_threshold": "Bayes threshold log(C_fa (1 - P_target) / (C_miss P_target))",
    **{f"{k}_dcf_p_miss": f"P_miss (FNMR) at {v}" for k, v in _AT.items()},
    **{f"{k}_dcf_p_fa": f"P_fa (FMR) at {v}" for k, v in _AT.items()},
    **{f"{k}_dcf_misses": f"rejected mated comparisons at {v}" for k, v in _AT.items()},
    **{f"{k}_dcf_false_alarms": f"accepted non-mated comparisons at {v}" for k, v in _AT.items()},
    "min_cllr": "minimum cost of log-likelihood ratios (bits), after PAV calibration",
    "cllr": "cost of log-likelihood ratios (bits)", "calibration_loss": "Cllr - minCllr (bits)",
    "n_mated": "mated comparisons", "n_nonmated": "non-mated comparisons",
}


def cllr(obj, *, llr: bool = False, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
    """minCllr (PAV), and for LLRs Cllr and the calibration loss, in bits.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list (no subjects needed).
    llr : bool, keyword-only
        True when the scores are natural-log likelihood ratios: adds
        ``cllr`` and ``calibration_loss``. Refused for distance scores.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all); the rest are kept.
    failure_policy : {"exclude", "nist"}, keyword-only
        Under "nist" a failed comparison is a score of ``-inf``: it falls in
        the lowest PAV block, and as an LLR a failed mated comparison makes
        Cllr infinite. "iso" has no Cllr.

    Returns
    -------
    xarray.Dataset
        ``min_cllr``; with ``llr=True`` ``cllr`` and ``calibration_loss``;
        ``n_mated``, ``n_nonmated``; all over the kept dims. attrs
        ``min_cllr``, ``cllr`` (the rule, or why it is not computed),
        ``llr``.

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> rng = np.random.default_rng(0)
    >>> mated = rng.normal(2.0, 2.0, 2000)      # LLRs of a calibrated Gaussian system: N(+-d^2/2, d^2)
    >>> trials = bioxr.from_scores(mated, rng.normal(-2.0, 2.0, 2000))
    >>> res = bioxr.calibration.cllr(trials, llr=True)
    >>> bool(0 < res.min_cllr < res.cllr < 1)
    True
    """
    if failure_policy == "iso":
        raise ValueError("failure_policy='iso' generalizes error rates at a threshold; Cllr has no such form. Use "
                         "'exclude' (failures left out) or 'nist' (a failure is a score of -inf).")
    groups = Grouped(obj, dim, failure_policy=failure_policy)
    llr = _check_llr(llr, groups.kind)
    out = np.empty((groups.n_groups, 3))
    counts = np.empty((groups.n_groups, 2), dtype=np.int64)
    for g in range(groups.n_groups):
        mated, nonmated, _, T, N = _group_runs(groups, g, "Cllr")
        out[g, 0] = _min_cllr_from(T[0], N[0])
        out[g, 1] = _cllr_value(mated, nonmated) if llr else np.nan
        counts[g] = mated.size, nonmated.size
    data = {"min_cllr": groups.dataarray(out[:, 0])}
    if llr:
        data["cllr"] = groups.dataarray(out[:, 1])
        data["calibration_loss"] = groups.dataarray(out[:, 1] - out[:, 0])
    data["n_mated"] = groups.dataarray(counts[:, 0])
    data["n_nonmated"] = groups.dataarray(counts[:, 1])
    ds = xr.Dataset(data)
    for k in ds.data_vars:
        ds[k].attrs["long_name"] = _LONG_NAMES[k]
    ds.attrs = _rate_attrs(groups, min_cllr=PAV_RULE, cllr=CLLR_RULE if llr else NOT_LLR_CLLR, llr=int(llr))
    return ds

