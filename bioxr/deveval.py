"""Thresholds carried from development to evaluation data: the HTER and the expected performance curve.

A threshold is chosen on one set of scores (the *development* set: at the
EER, at the least half total error, at an FMR or FNMR target, or given)
and applied unchanged to another (the *evaluation* set), as bob.measure's
dev/eval protocols and NIST's fixed thresholds do. What matters then is
the evaluation side: its FMR and FNMR at that threshold, with intervals,
and the half total error rate ``HTER = (FMR + FNMR) / 2``.

- :func:`choose_threshold`: thresholds on the development set, with the
  rates they give there;
- :func:`dev_eval`: those thresholds applied to the evaluation set, with
  the evaluation rates, their intervals and the HTER;
- :func:`epc`: the expected performance curve (Bengio & Mariethoz 2004):
  for each cost ``c`` the threshold minimising ``c FMR + (1 - c) FNMR`` on
  the development set, and the evaluation HTER there.

Thresholds are scores (the house rule: a score equal to the threshold is
accepted for similarity scores, ``attrs["decision_rule"]``); with
``convention="bob"`` they sit midway between that score and the next more
lenient one, as bob.measure places them.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import bootstrap as _bootstrap
from . import intervals as _intervals
from . import verification as _verification
from ._core import as_data
from ._core.checks import check_level, check_replicates, check_targets

__all__ = ["CRITERIA", "choose_threshold", "dev_eval", "epc"]

#: How a development threshold is chosen.
CRITERIA = ("eer", "min-hter", "weighted", "fmr", "fnmr", "threshold")
_CONVENTIONS = ("bioxr", "bob")
_INTERVALS = ("subject", "binomial", "none")

_RULES = {
    "eer": "where the development FMR and FNMR are closest (the 'nearest' EER threshold; of two equally close, "
           "the more lenient)",
    "min-hter": "the least development HTER, (FMR + FNMR) / 2 (of several, the one where FMR and FNMR are closest, "
                "then the more lenient)",
    "weighted": "the least development weighted error c FMR + (1 - c) FNMR at each cost c (bob.measure's "
                "min_weighted_error_rate_threshold; of several, the one where FMR and FNMR are closest, then the "
                "more lenient)",
    "fmr": "the most lenient development threshold whose FMR does not exceed each target (fnmr_at_fmr)",
    "fnmr": "the strictest development threshold whose FNMR does not exceed each target (fmr_at_fnmr)",
    "threshold": "given",
}


def _check_choice(criterion, value, convention):
    if criterion not in CRITERIA:
        raise ValueError(f"criterion={criterion!r} is not one of {CRITERIA}.")
    if convention not in _CONVENTIONS:
        raise ValueError(f"convention={convention!r} is not one of {_CONVENTIONS}.")
    if criterion in ("eer", "min-hter"):
        if value is not None:
            raise ValueError(f"criterion={criterion!r} takes no value; got value={value!r}. For a weighted error "
                             "give criterion='weighted' with value=cost.")
        return np.array([np.nan])
    if value is None:
        raise ValueError(f"criterion={criterion!r} needs value= (" + {
            "weighted": "the cost c in [0, 1] of c FMR + (1 - c) FNMR", "fmr": "FMR targets in [0, 1]",
            "fnmr": "FNMR targets in [0, 1]", "threshold": "the thresholds"}[criterion] + ").")
    if criterion == "threshold":
        values = np.atleast_1d(np.asarray(value, dtype=float))
        if values.ndim != 1 or np.isnan(values).any():
            raise ValueError(f"value={value!r}: thresholds must be a number or a 1-d sequence of numbers, not NaN.")
        return values
    if criterion == "fnmr" and convention == "bob":
        raise ValueError("convention='bob' has no FNMR-target threshold; use convention='bioxr'.")
    return np.atleast_1d(check_targets(value, {"weighted": "cost"}.get(criterion, criterion)))


def _weighted_choice(curve: xr.Dataset, costs: np.ndarray, distance: bool, convention: str):
    """Per cost: the curve index minimising ``c FMR + (1 - c) FNMR``, ties to balance then leniency; its threshold."""
    fmr = curve["fmr"].values
    fnmr = curve["fnmr"].values
    t = curve["threshold"].values
    gap = np.abs(fmr - fnmr)
    out = np.empty(costs.size)
    for i, c in enumerate(costs):
        w = c * fmr + (1.0 - c) * fnmr
        best = np.flatnonzero(np.isclose(w, w.min(), rtol=0.0, atol=1e-12))
        best = best[gap[best] <= gap[best].min() + 1e-12]
        k = int(best[np.argmax(fmr[best])])
        out[i] = _placed(t, k, distance, convention)
    return out


def _placed(t: np.ndarray, k: int, distance: bool, convention: str) -> float:
    """The threshold at curve index ``k``: the score itself, or (bob) midway to the next more lenient score."""
    if convention != "bob":
        return float(t[k])
    j = k + 1 if distance else k - 1
    if not (0 <= j < t.size) or not np.isfinite(t[j]) or not np.isfinite(t[k]):
        return float(t[k])
    return float((t[k] + t[j]) / 2.0)


def _thresholds(dev, criterion, values, convention, failure_policy) -> np.ndarray:
    if criterion == "threshold":
        return values
    if criterion == "eer":
        res = _verification.eer(dev, method="nearest", convention=convention, failure_policy=failure_policy)
        return np.atleast_1d(float(res["threshold"]))
    if criterion == "fmr":
        res = _verification.fnmr_at_fmr(dev, values, convention=convention, failure_policy=failure_policy)
        return np.atleast_1d(res["threshold"].values).astype(float)
    if criterion == "fnmr":
        res = _verification.fmr_at_fnmr(dev, values, failure_policy=failure_policy)
        return np.atleast_1d(res["threshold"].values).astype(float)
    curve = _verification.det_curve(dev, points="all", failure_policy=failure_policy)
    costs = np.array([0.5]) if criterion == "min-hter" else values
    return _weighted_choice(curve, costs, curve.attrs.get("score_kind") == "distance", convention)


def _rates_at(obj, thresholds: np.ndarray, failure_policy: str) -> xr.Dataset:
    """FMR, FNMR and counts at each threshold (repeats allowed), over ``operating_point``."""
    unique, inverse = np.unique(thresholds, return_inverse=True)
    rates = _verification.error_rates(obj, unique, failure_policy=failure_policy)
    if "threshold" not in rates.dims:
        rates = rates.expand_dims("threshold")
    keep = ["fmr", "fnmr", "false_matches", "false_nonmatches"]
    out = rates[keep].isel(threshold=xr.DataArray(inverse, dims="operating_point")).drop_vars("threshold")
    out["hter"] = (out["fmr"] + out["fnmr"]) / 2.0
    out["n_mated"] = rates["n_mated"]
    out["n_nonmated"] = rates["n_nonmated"]
    return out


def _check_pooled(obj, what: str) -> None:
    extra = [d for d in obj.dims if d == "system"]
    if extra:
        raise ValueError(f"the {what} set has a 'system' dimension: choose thresholds for one system at a time "
                         "(obj.sel(system=...)).")


def choose_threshold(dev, *, criterion: str = "eer", value=None, convention: str = "bioxr",
                     failure_policy: str = "exclude") -> xr.Dataset:
    """Thresholds chosen on development scores, with the rates they give there.

    Parameters
    ----------
    dev : xarray.DataArray or xarray.Dataset
        The development scores: a score cube or a comparison list.
    criterion : {"eer", "min-hter", "weighted", "fmr", "fnmr", "threshold"}, keyword-only
        ``"eer"``: where the development FMR and FNMR are closest (the
        threshold of the "nearest" EER, whatever EER convention reports the
        rate: the ROCCH and interpolated EERs are attained by no single
        threshold). ``"min-hter"``: the least ``(FMR + FNMR) / 2``.
        ``"weighted"``: the least ``c FMR + (1 - c) FNMR`` for each cost
        ``c`` in ``value``. ``"fmr"`` / ``"fnmr"``: at each target in
        ``value`` (the exact operating points of :func:`bioxr.verification.fnmr_at_fmr`
        and :func:`~bioxr.verification.fmr_at_fnmr`). ``"threshold"``:
        the thresholds in ``value``. Of several thresholds with the same
        least error, the one where FMR and FNMR are closest, then the more
        lenient.
    value : float or array_like, optional, keyword-only
        Costs, targets or thresholds (see ``criterion``); each becomes one
        ``operating_point``.
    convention : {"bioxr", "bob"}, keyword-only
        ``"bioxr"``: the threshold is a score (accepted when equal, for
        similarity scores). ``"bob"``: bob.measure's placement, midway
        between that score and the next more lenient one (``eer_threshold``,
        ``min_weighted_error_rate_threshold``, ``far_threshold``).
    failure_policy : {"exclude", "nist", "iso"}, keyword-only

    Returns
    -------
    xarray.Dataset
        Over ``operating_point``: ``threshold``; the development ``fmr``,
        ``fnmr``, ``hter`` and counts there; coordinate ``target`` (the
        cost, target or NaN). attrs ``criterion``, ``threshold_rule``,
        ``convention``, ``score_kind``, ``decision_rule``.

    Examples
    --------
    >>> import bioxr
    >>> dev = bioxr.simulate.gaussian(n_subjects=100, seed=0)
    >>> op = bioxr.deveval.choose_threshold(dev, criterion="fmr", value=[0.01, 0.001])
    >>> bool((op.fmr <= op.target).all())
    True
    """
    as_data(dev)
    _check_pooled(dev, "development")
    values = _check_choice(criterion, value, convention)
    thresholds = _thresholds(dev, criterion, values, convention, failure_policy)
    out = _rates_at(dev, thresholds, failure_policy)
    out["threshold"] = ("operating_point", thresholds)
    out = out.assign_coords(target=("operating_point", values))
    ref = _verification.fmr(dev, float(thresholds[0]), failure_policy=failure_policy)
    out.attrs = {"criterion": criterion, "threshold_rule": _RULES[criterion], "convention": convention,
                 "score_kind": ref.attrs.get("score_kind"), "decision_rule": ref.attrs.get("decision_rule"),
                 "failure_policy": failure_policy}
    return out[["threshold", "fmr", "fnmr", "hter", "false_matches", "false_nonmatches", "n_mated", "n_nonmated"]]


def _hter_bounds(hter, var, fmr_b, fnmr_b, level) -> tuple[np.ndarray, np.ndarray]:
    """The HTER interval on its effective count ``h (1 - h) / var``; at HTER 0, the mean of the rates' upper bounds."""
    hter = np.asarray(hter, dtype=float)
    var = np.asarray(var, dtype=float)
    lo = np.zeros_like(hter)
    hi = (fmr_b[..., 1] + fnmr_b[..., 1]) / 2.0
    ok = (var > 0) & (hter > 0) & (hter < 1)
    if ok.any():
        n_eff = hter[ok] * (1 - hter[ok]) / var[ok]
        b = _intervals.binomial_interval(hter[ok] * n_eff, n_eff, level=level).values
        lo[ok], hi[ok] = b[..., 0], b[..., 1]
    kind = np.where(ok, "two-sided", "one-sided upper (mean of the rates' upper bounds)")
    return np.stack([lo, hi], axis=-1), kind


def dev_eval(dev, evaluation, *, criterion: str = "eer", value=None, convention: str = "bioxr",
             interval: str = "subject", level: float = 0.95, n_replicates: int = 2000, seed=0,
             failure_policy: str = "exclude") -> xr.Dataset:
    """Thresholds chosen on development scores, applied to evaluation scores.

    Parameters
    ----------
    dev, evaluation : xarray.DataArray or xarray.Dataset
        Development and evaluation scores (cubes or comparison lists), of
        the same score kind; usually different subjects.
    criterion, value, convention : keyword-only
        How the development threshold is chosen; see
        :func:`choose_threshold`.
    interval : {"subject", "binomial", "none"}, keyword-only
        Intervals of the evaluation rates. ``"subject"`` (default): the
        subject bootstrap of :func:`bioxr.bootstrap.bootstrap_curve` at the
        chosen thresholds (whole evaluation subjects resampled, the FMR's
        crossed-subject variance by moments). ``"binomial"``: every
        comparison independent (:func:`bioxr.intervals.rates_interval`).
        The threshold is held fixed: the interval is for the evaluation
        rates at that threshold, not for the choice of threshold.
    level : float, keyword-only
    n_replicates, seed : keyword-only
        For ``interval="subject"``.
    failure_policy : {"exclude", "nist", "iso"}, keyword-only

    Returns
    -------
    xarray.Dataset
        Over ``operating_point``: ``threshold``; ``dev_fmr``, ``dev_fnmr``,
        ``dev_hter``; ``fmr``, ``fnmr``, ``hter`` on the evaluation set with
        their counts and ``fmr_interval``, ``fnmr_interval``,
        ``hter_interval`` (over ``bound``). The HTER interval is the
        binomial interval on the HTER's effective count ``h (1 - h) /
        var``, its variance from the bootstrap replicates (``"subject"``)
        or from the two binomial variances (``"binomial"``); at an HTER of 0
        its upper end is the mean of the two rates' upper bounds.

    Examples
    --------
    >>> import bioxr
    >>> dev = bioxr.simulate.gaussian(n_subjects=80, seed=0)
    >>> ev = bioxr.simulate.gaussian(n_subjects=80, seed=1)
    >>> res = bioxr.deveval.dev_eval(dev, ev, criterion="min-hter", n_replicates=1000)
    >>> float(res.hter_interval[0, 0]) <= float(res.hter[0]) <= float(res.hter_interval[0, 1])
    True
    """
    as_data(evaluation)
    _check_pooled(evaluation, "evaluation")
    if interval not in _INTERVALS:
        raise ValueError(f"interval={interval!r} is not one of {_INTERVALS}.")
    level = check_level(level)
    if interval == "subject":
        check_replicates(n_replicates, level=level)
    chosen = choose_threshold(dev, criterion=criterion, value=value, convention=convention,
                              failure_policy=failure_policy)
    kinds = (chosen.attrs["score_kind"], _verification.fmr(evaluation, 0.0).attrs.get("score_kind"))
    if kinds[0] != kinds[1]:
        raise ValueError(f"the development scores are {kinds[0]} scores and the evaluation scores {kinds[1]} "
                         "scores: a threshold cannot be carried between them.")
    thresholds = chosen["threshold"].values
    out = _rates_at(evaluation, thresholds, failure_policy)
    out["threshold"] = chosen["threshold"]
    for name in ("fmr", "fnmr", "hter"):
        out[f"dev_{name}"] = chosen[name]
    out = out.assign_coords(target=chosen["target"], bound=["lower", "upper"])
    attrs = dict(chosen.attrs, level=level, interval=interval)
    if interval != "none":
        out, attrs = _with_intervals(out, evaluation, thresholds, interval, level, n_replicates, seed,
                                     failure_policy, attrs)
    out.attrs = attrs
    return out


def _with_intervals(out, evaluation, thresholds, interval, level, n_replicates, seed, failure_policy, attrs):
    unique, inverse = np.unique(thresholds, return_inverse=True)
    pick = xr.DataArray(inverse, dims="operating_point")
    f, m = out["fmr"].values, out["fnmr"].values
    if interval == "subject":
        band = _bootstrap.bootstrap_curve(evaluation, thresholds=unique, n_replicates=n_replicates, level=level,
                                          seed=seed, failure_policy=failure_policy)
        reps = _bootstrap.bootstrap_replicates(evaluation, thresholds=unique, n_replicates=n_replicates, seed=seed,
                                               failure_policy=failure_policy)
        var = (((reps["fmr"] + reps["fnmr"]) / 2.0).var("replicate").values)[inverse]
        fmr_b = band["fmr_interval"].isel(threshold=pick).values
        fnmr_b = band["fnmr_interval"].isel(threshold=pick).values
        attrs.update(n_replicates=n_replicates, seed=seed, n_units=band.attrs.get("n_units"),
                     interval_method=band.attrs.get("interval"), fmr_variance=band.attrs.get("fmr_variance"))
    else:
        bands = _intervals.rates_interval(out[["fmr", "fnmr", "false_matches", "false_nonmatches", "n_mated",
                                               "n_nonmated"]], level=level)
        fmr_b, fnmr_b = bands["fmr_interval"].values, bands["fnmr_interval"].values
        var = (f * (1 - f) / out["n_nonmated"].values + m * (1 - m) / out["n_mated"].values) / 4.0
        attrs.update(interval_method=bands["fmr_interval_method"].values.flat[0] + " (comparisons independent)")
    hter_b, kind = _hter_bounds(out["hter"].values, var, fmr_b, fnmr_b, level)
    dims = ("operating_point", "bound")
    out["fmr_interval"] = (dims, fmr_b)
    out["fnmr_interval"] = (dims, fnmr_b)
    out["hter_interval"] = (dims, hter_b)
    out["hter_bound_kind"] = ("operating_point", kind)
    return out, attrs


def epc(dev, evaluation, *, costs=11, convention: str = "bioxr", interval: str = "none", level: float = 0.95,
        n_replicates: int = 2000, seed=0, failure_policy: str = "exclude") -> xr.Dataset:
    """The expected performance curve: the evaluation HTER at the development threshold of each cost.

    For each cost ``c`` the threshold minimises ``c FMR + (1 - c) FNMR`` on
    the development set (``criterion="weighted"`` of :func:`dev_eval`), and
    the curve is the evaluation HTER there (Bengio & Mariethoz 2004; what
    ``bob.measure.epc`` returns).

    Parameters
    ----------
    dev, evaluation : xarray.DataArray or xarray.Dataset
    costs : int or array_like, keyword-only
        An int: that many costs evenly spaced in [0, 1] (bob's
        ``n_points``); or the costs themselves.
    convention, interval, level, n_replicates, seed, failure_policy : keyword-only
        As in :func:`dev_eval` (no intervals by default).

    Returns
    -------
    xarray.Dataset
        :func:`dev_eval`'s result over a ``cost`` dimension, with
        ``dev_weighted_error`` and ``weighted_error`` (``c FMR + (1 - c) FNMR``
        on each side).

    Examples
    --------
    >>> import bioxr
    >>> dev = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> ev = bioxr.simulate.gaussian(n_subjects=60, seed=1)
    >>> curve = bioxr.deveval.epc(dev, ev, costs=5)
    >>> curve.cost.values.tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if isinstance(costs, (int, np.integer)) and not isinstance(costs, bool):
        if costs < 2:
            raise ValueError(f"costs={costs}: give at least 2 points, or the costs themselves.")
        values = np.linspace(0.0, 1.0, int(costs))
    else:
        values = np.atleast_1d(check_targets(costs, "costs"))
    res = dev_eval(dev, evaluation, criterion="weighted", value=values, convention=convention, interval=interval,
                   level=level, n_replicates=n_replicates, seed=seed, failure_policy=failure_policy)
    res = res.rename({"target": "cost"}).swap_dims({"operating_point": "cost"})
    c = res["cost"]
    res["dev_weighted_error"] = c * res["dev_fmr"] + (1 - c) * res["dev_fnmr"]
    res["weighted_error"] = c * res["fmr"] + (1 - c) * res["fnmr"]
    res.attrs["curve"] = "EPC: evaluation HTER against the cost c of c FMR + (1 - c) FNMR minimised on development"
    return res
