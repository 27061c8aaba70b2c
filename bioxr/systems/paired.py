"""The paired subject bootstrap: differences of systems on the same subjects (METHODS.md section 10)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .._core import check_level, check_policy, check_replicates, check_targets
from ..bootstrap._stats import _counts, _default_grid, _moment_corrected, _Stats, subject_draws
from ..simulate import _entropy
from ._stack import (_METHOD_TEXT, _P_VALUE_TEXT, FMR_VARIANCES, STATISTICS, _check_same_subjects, _pairs, _per_system,
                     _split, _subject_labels, _unique, adjust_p_values)



def _check_statistic(statistic, method, convention, fmr, threshold):
    if statistic not in STATISTICS:
        raise ValueError(f"statistic={statistic!r}; choose one of {STATISTICS}: 'eer' (method= / convention= choose "
                         "the rule), 'fnmr_at_fmr' (with fmr= targets), 'fmr' or 'fnmr' (with threshold=).")
    if statistic != "eer" and (method is not None or convention != "bioxr"):
        raise ValueError(f"method= and convention= choose the EER's rule; statistic={statistic!r} uses bioxr's own "
                         "(the most lenient threshold within the FMR target; the decision rule at a threshold).")
    if statistic == "fnmr_at_fmr":
        if fmr is None:
            raise ValueError("statistic='fnmr_at_fmr' needs fmr=: one or more FMR targets, e.g. fmr=[1e-2, 1e-3].")
        return check_targets(fmr, "fmr", closed=False)
    if fmr is not None:
        raise ValueError(f"fmr= gives the targets of statistic='fnmr_at_fmr', not of statistic={statistic!r}.")
    if statistic == "eer" and threshold is not None:
        raise ValueError("threshold= applies to statistic='fmr' or 'fnmr'; the EER sets its own threshold.")
    return None


def _grid(sub, extra=()):
    """The bootstrap grid (raw orientation): the default grid of :mod:`bioxr.bootstrap` plus ``extra`` thresholds."""
    from .._core import split_scores

    mated, nonmated, kind = split_scores(sub)
    sign = -1.0 if kind == "distance" else 1.0
    grid = _default_grid(sign * mated, sign * nonmated)
    extra = np.asarray(extra, dtype=float).ravel()
    grid = np.unique(np.concatenate([grid, sign * extra[np.isfinite(extra)]]))
    return sign * grid


def _replicate_curves(stats: _Stats, w: np.ndarray, fmr_variance: str):
    """Replicate FMR and FNMR at the grid (lenient to strict) and the point curves (weights 1)."""
    fm = np.empty((w.shape[0], stats.grid.size))
    fn = np.empty_like(fm)
    for s in range(0, w.shape[0], 250):
        fm[s : s + 250], fn[s : s + 250] = stats.fmr(w[s : s + 250]), stats.fnmr(w[s : s + 250])
    ones = np.ones((1, stats.n_units), dtype=np.float32)
    fm0, fn0 = stats.fmr(ones)[0], stats.fnmr(ones)[0]
    if fmr_variance == "moments":  # the moment variance; the binomial one only where it is not positive
        moment = stats.fmr_variance()
        fm = _moment_corrected(fm, fm0, np.where(moment > 0, moment, fm0 * (1 - fm0) / stats.n_nonmated))
    fm, fn = stats.generalize(w, fm, fn)
    fm0, fn0 = (a[0] for a in stats.generalize(ones, fm0[None, :], fn0[None, :]))
    return fm, fn, fm0, fn0


def _eer_values(fm, fn, method, ties):
    from ..eer import eer_point

    out = np.full(fm.shape[0], np.nan)
    for r in range(fm.shape[0]):
        if np.isfinite(fm[r]).all() and np.isfinite(fn[r]).all():
            out[r] = eer_point(np.r_[1.0, fm[r], 0.0], np.r_[0.0, fn[r], 1.0], method, ties)[0]
    return out


def _at_targets(fm, fn, targets):
    """FNMR at the most lenient grid threshold with FMR <= target, per row: ``(rows, targets)``."""
    rows = np.arange(fm.shape[0])
    out = np.empty((fm.shape[0], targets.size))
    for j, f in enumerate(targets):
        ok = fm <= f
        first = np.where(ok.any(axis=1), ok.argmax(axis=1), fm.shape[1] - 1)
        out[:, j] = fn[rows, first]
    return out


def paired_difference(obj, statistic: str = "eer", *, dim: str = "system", baseline=None, pairs: str = "baseline",
                      method: str | None = None, convention: str = "bioxr", fmr=None, threshold=None,
                      n_replicates: int = 2000, level: float = 0.95, seed=0, adjust: str = "holm",
                      fmr_variance: str = "moments", failure_policy: str = "exclude") -> xr.Dataset:
    """Differences of a statistic between systems on the same subjects, by the paired subject bootstrap.

    Each replicate draws the subjects once (with replacement, on one
    coding of the subjects of every system) and applies the draw to every
    system: subject ``i`` drawn ``w_i`` times weighs its mated comparisons
    by ``w_i`` and the non-mated comparisons of subjects ``a`` and ``c`` by
    ``w_a w_c`` in each system. The replicates of ``system - baseline``
    then carry the correlation of the systems through their shared
    subjects, which an unpaired comparison loses.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A cube with a ``dim`` dimension or a comparison list with a ``dim``
        cofactor (:func:`stack_systems`). Other probe dims are pooled.
    statistic : {"eer", "fnmr_at_fmr", "fmr", "fnmr"}
        What is compared: the EER (by ``method`` / ``convention``), the
        FNMR at the FMR targets ``fmr``, or FMR or FNMR at ``threshold``.
    dim : str, keyword-only
    baseline : str, optional, keyword-only
        The system the others are compared with; default the first.
    pairs : {"baseline", "all"}, keyword-only
        Every system against the baseline, or every pair (later minus
        earlier, in the order of ``dim``).
    method, convention : keyword-only
        The EER rule, as in :func:`bioxr.verification.eer`: method
        ``"rocch"``, ``"interpolated"``, ``"nearest"`` or ``"fvc2000"``;
        convention ``"bioxr"``, ``"bob"`` or ``"pyeer"``.
    fmr : float or sequence, keyword-only
        FMR targets (statistic ``"fnmr_at_fmr"``).
    threshold : float, mapping or DataArray, keyword-only
        Statistic ``"fmr"`` or ``"fnmr"``: one threshold for every system,
        or one per system (``{"A": 0.6, "B": 41}`` or a DataArray over
        ``dim``, e.g. the ``threshold`` of ``fnmr_at_fmr`` on the stacked
        cube).
    n_replicates : int, keyword-only
    level : float, keyword-only
    seed : int, SeedSequence or Generator, keyword-only
    adjust : {"holm", "bonferroni", "none"}, keyword-only
        Adjustment over the family: every pair and FMR target of the call.
    fmr_variance : {"moments", "pigeonhole"}, keyword-only
        As in :func:`bioxr.bootstrap.bootstrap_replicates`: each system's
        replicate FMR curve rescaled to the moment variance of crossed
        subjects (default), or the raw pair weights (about 3 times the
        variance of nearly independent comparisons: FMR differences then
        reject 0.6% of the time at 5%). The rescaling is linear at each
        threshold, so the correlation of the systems' replicates is kept.
        Unlike :mod:`bioxr.bootstrap`, the moment variance is floored at the
        binomial one only where it is not positive: with nearly
        independent comparisons it scatters around the binomial variance,
        and flooring each system's variance biases the difference's up
        (type I error 2.5% instead of 5% for an FMR difference).
    failure_policy : {"exclude", "nist", "iso"}, keyword-only

    Returns
    -------
    xarray.Dataset
        ``estimate`` (system[, fmr_target]): each system's statistic on the
        data (exact, as :mod:`bioxr.verification` gives it); over ``pair``
        (labels ``"B - A"``, coordinates ``pair_system`` and
        ``pair_baseline``): ``difference`` (system minus baseline),
        ``difference_interval`` (percentile, ``bound``), ``p_value``
        (two-sided, attrs ``p_value``), ``p_adjusted`` (``adjust`` over the
        family); ``difference_replicates``; ``threshold`` per system for
        ``"fmr"`` / ``"fnmr"``; ``n_mated``, ``n_nonmated``. attrs:
        method, statistic, level, n_replicates, n_subjects, seed, family.

    Notes
    -----
    Each replicate's statistic is computed on the bootstrap grid (every
    distinct score when there are few, else about 400 thresholds, plus the
    thresholds of the data's own operating points) and re-centred on the
    exact estimate: ``d*_b = d + (d_b - d_grid)``, ``d_grid`` the
    difference at the grid on the data, so the grid's resolution cancels.
    The interval is the percentile interval of ``d*_b``; the p-value
    inverts it (see attrs). Type I error, power and agreement with a
    brute-force paired resampling are measured in ``tests/test_systems.py``.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.systems import paired_difference
    >>> cube = bioxr.simulate.systems(n_subjects=60, n_samples=2, shift=-0.8, seed=1)
    >>> res = paired_difference(cube, "eer", n_replicates=200, seed=2)
    >>> res.difference.dims, res.pair.values.tolist()
    (('pair',), ['B - A'])
    >>> bool(res.difference_interval.sel(bound="lower") < res.difference < res.difference_interval.sel(bound="upper"))
    True
    >>> bool(res.difference > 0), res.p_value.item() < 0.05  # B's mated scores are lower: its EER is higher
    (True, True)
    """
    from ..conventions import eer_rule
    from ..verification import eer as exact_eer
    from ..verification import fnmr_at_fmr

    targets = _check_statistic(statistic, method, convention, fmr, threshold)
    if statistic == "eer":
        method, ties = eer_rule(method, convention)
    level = check_level(level)
    n_replicates = check_replicates(n_replicates, minimum=2, level=level)
    check_policy(failure_policy)
    if fmr_variance not in FMR_VARIANCES:
        raise ValueError(f"fmr_variance={fmr_variance!r}; choose one of {FMR_VARIANCES}.")
    adjust_p_values([], adjust)  # checks the name before the long work
    names, subs = _split(obj, dim)
    pair_idx, base_name = _pairs(names, baseline, pairs)
    _check_same_subjects(names, [_subject_labels(s) for s in subs])
    thresholds = _per_system(threshold, names, dim, f"statistic={statistic!r}") if statistic in ("fmr", "fnmr") else None

    # each system's exact estimate, and its bootstrap grid
    if statistic == "eer":
        points = [exact_eer(s, method=method, convention=convention, failure_policy=failure_policy) for s in subs]
        estimate = np.array([[float(p.eer)] for p in points])
        grids = [None] * len(subs)
    elif statistic == "fnmr_at_fmr":
        points = [fnmr_at_fmr(s, targets, failure_policy=failure_policy) for s in subs]
        estimate = np.array([p.fnmr.values for p in points])
        grids = [_grid(s, p.threshold.values) for s, p in zip(subs, points)]
    else:  # a one-point grid at the threshold: its rate on the data is the exact rate (error_rates' rule)
        grids = [np.array([t]) for t in thresholds]
    stats = [_Stats(s, g, "subject", failure_policy) for s, g in zip(subs, grids)]

    # one joint coding of the subjects, one draw per replicate, every system's weights read off it
    units = pd.Index(_unique(np.concatenate([st.units for st in stats])))
    if units.dtype.kind == "O" or not units.is_monotonic_increasing:
        units = units.sort_values()
    draws = subject_draws(len(units), n_replicates, seed=_entropy(seed))
    weights = _counts(draws, len(units))
    del draws
    width = 1 if targets is None else targets.size
    values = np.empty((len(subs), n_replicates, width))
    at_grid = np.empty((len(subs), width))
    for k, st in enumerate(stats):
        w = np.ascontiguousarray(weights[:, units.get_indexer(st.units)])
        fm, fn, fm0, fn0 = _replicate_curves(st, w, fmr_variance)
        if statistic == "eer":
            values[k, :, 0] = _eer_values(fm, fn, method, ties)
            at_grid[k, 0] = _eer_values(fm0[None, :], fn0[None, :], method, ties)[0]
        elif statistic == "fnmr_at_fmr":
            values[k] = _at_targets(fm, fn, targets)
            at_grid[k] = _at_targets(fm0[None, :], fn0[None, :], targets)[0]
        else:
            values[k, :, 0] = (fm if statistic == "fmr" else fn)[:, 0]
            at_grid[k, 0] = (fm0 if statistic == "fmr" else fn0)[0]
    if statistic in ("fmr", "fnmr"):
        estimate = at_grid.copy()
    # replicates re-centred on the exact estimates: the grid's resolution cancels in each system
    centred = values - at_grid[:, None, :] + estimate[:, None, :]
    diff = np.array([estimate[i] - estimate[j] for i, j in pair_idx])  # (pair, target)
    reps = np.stack([centred[i] - centred[j] for i, j in pair_idx])  # (pair, replicate, target)
    alpha = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        lo, hi = np.nanquantile(reps, [alpha, 1 - alpha], axis=1)
    ok = np.isfinite(reps)
    n_ok = ok.sum(axis=1)
    below, above = (ok & (reps <= 0)).sum(axis=1), (ok & (reps >= 0)).sum(axis=1)
    p = np.minimum(1.0, 2.0 * (np.minimum(below, above) + 1) / (n_ok + 1))
    p_adj = adjust_p_values(p, adjust)

    labels = [f"{names[i]} - {names[j]}" for i, j in pair_idx]
    coords = {dim: np.asarray(names), "pair": labels, "pair_system": ("pair", [names[i] for i, _ in pair_idx]),
              "pair_baseline": ("pair", [names[j] for _, j in pair_idx]), "bound": ["lower", "upper"]}
    pair_dims, sys_dims = ("pair",), (dim,)
    if targets is not None:
        coords["fmr_target"] = targets
        pair_dims, sys_dims = ("pair", "fmr_target"), (dim, "fmr_target")
    squeeze = lambda a: a if targets is not None else a[..., 0]
    data = {
        "estimate": (sys_dims, squeeze(estimate)),
        "difference": (pair_dims, squeeze(diff)),
        "difference_interval": ((*pair_dims, "bound"), np.stack([squeeze(lo), squeeze(hi)], axis=-1)),
        "p_value": (pair_dims, squeeze(p)),
        "p_adjusted": (pair_dims, squeeze(p_adj)),
        "difference_replicates": (("pair", "replicate", *pair_dims[1:]), squeeze(reps)),
        "n_mated": (dim, [st.n_mated for st in stats]),
        "n_nonmated": (dim, [st.n_nonmated for st in stats]),
    }
    if thresholds is not None:
        data["threshold"] = (dim, thresholds)
    what = {"eer": f"EER ({method}, convention {convention})", "fnmr_at_fmr": "FNMR at the FMR target",
            "fmr": "FMR at the threshold", "fnmr": "FNMR at the threshold"}[statistic]
    ds = xr.Dataset(data, coords=coords, attrs={
        "method": _METHOD_TEXT, "statistic": statistic, "statistic_name": what, "interval": (
            "percentile interval of the replicate differences, re-centred on the exact estimates (d + d_b - d_grid)"),
        "p_value": _P_VALUE_TEXT, "adjust": adjust or "none", "family": (
            f"{int(np.isfinite(p).sum())} hypotheses ({len(labels)} pair(s)"
            + (f" x {targets.size} FMR target(s)" if targets is not None else "") + ")"),
        "baseline": base_name, "pairs": pairs, "difference": "system minus baseline (an error rate: < 0 is better)",
        "level": level, "n_replicates": n_replicates, "seed": str(seed), "n_subjects": len(units),
        "fmr_variance": fmr_variance, "failure_policy": failure_policy,
        "score_kind": stats[0].kind, "unit": "subject"})
    if statistic == "eer":
        ds.attrs.update({"eer_method": method, "convention": convention,
                         "eer_convention": points[0].attrs.get("eer_convention", "")})
    ds["difference"].attrs["long_name"] = f"difference of the {what}, system minus baseline"
    ds["estimate"].attrs["long_name"] = what
    return ds


# ------------------------------------------------------------------ McNemar

def system_bands(obj, *, dim: str = "system", n_replicates: int = 1000, level: float = 0.95, seed=0,
                 failure_policy: str = "exclude", **options) -> xr.Dataset:
    """Each system's pointwise subject-bootstrap DET band, stacked over ``dim``.

    :func:`bioxr.bootstrap.bootstrap_curve` on each system with the same
    ``seed``; the grids differ between systems, so the result is over the
    union of the thresholds (NaN where a system has no grid point).
    ``options`` go to :func:`bioxr.bootstrap.bootstrap_curve`.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.systems import system_bands
    >>> cube = bioxr.simulate.systems(n_subjects=30, n_samples=2, seed=0)
    >>> band = system_bands(cube, n_replicates=100, seed=1)
    >>> band.fmr_interval.dims
    ('system', 'threshold', 'bound')
    """
    from ..bootstrap import bootstrap_curve

    names, subs = _split(obj, dim)
    bands = [bootstrap_curve(s, n_replicates=n_replicates, level=level, seed=seed, failure_policy=failure_policy,
                             **options) for s in subs]
    out = xr.concat(bands, dim=dim, join="outer", combine_attrs="override")
    return out.assign_coords({dim: np.asarray(names)})
