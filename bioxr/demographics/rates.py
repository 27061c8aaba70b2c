"""Group rates at one global threshold: per-group FNMR and FMR with intervals, the cross-group FMR matrix, FDR and GARBE with intervals.

ISO/IEC 19795-10 and NIST's demographic studies (Grother, Ngan & Hanaoka,
FRVT Part 3, NISTIR 8280) compare groups at **one** threshold, the one a
deployed system would use: set on all the data for an overall FMR target
(``fmr_target=``) or given (``threshold=``). At that threshold:

- :func:`group_rates`: each group's FNMR (its mated comparisons) and FMR
  (non-mated comparisons within the group, probe and reference of the same
  group, NIST's convention for a group's FMR), with subject-bootstrap
  intervals (:func:`bioxr.bootstrap.bootstrap_curve` on the group's
  comparisons: subjects are the units, FMR with the crossed-subjects
  variance), and the overall rates with theirs;
- :func:`cross_group_fmr`: the FMR of every (probe group, reference group)
  pair of non-mated comparisons, NIST's cross-group impostor matrix;
- :func:`fairness_intervals`: FDR and GARBE (:mod:`.summaries`) of the
  group rates with percentile intervals from a subject bootstrap within
  groups (group sizes fixed, as a study's design fixes them).

Input: a score cube or a comparison list with a ``group`` label on the
probe side and ``reference_group`` on the reference side (a list read from
a file carries them as columns); without ``reference_group`` the reference
subjects take the group their subject has as a probe. Failed comparisons
(NaN scores) are left out (failure policy ``exclude``).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable

import numpy as np
import pandas as pd
import xarray as xr

from .._core import FewReplicatesWarning, check_level, check_replicates
from ..comparisons import is_comparison_list, to_comparisons
from ..intervals import BOUNDS
from ..simulate import _entropy, _rng
from .summaries import fairness_discrepancy_rate, garbe

__all__ = ["global_threshold", "group_rates", "cross_group_fmr", "fairness_intervals"]

#: What the threshold of every group comparison is, in attrs ``threshold_rule``.
THRESHOLD_RULE = ("one global threshold for every group: the most lenient whose FMR over all non-mated "
                  "comparisons is at most the target (bioxr.verification.fnmr_at_fmr)")


class _Trials:
    """The comparisons as flat arrays with each side's group, checked once."""

    def __init__(self, data, group: Hashable, reference_group: Hashable):
        if isinstance(data, xr.DataArray):
            ds = to_comparisons(data)
        elif is_comparison_list(data):
            ds = data
        else:
            raise TypeError(f"expected a score cube (DataArray) or a comparison list (Dataset), got {type(data).__name__}.")
        for name in ("subject", "reference_subject"):
            if name not in ds.coords:
                raise ValueError(f"the data have no {name!r} labels: group rates need subjects (who is who).")
        if group not in ds.coords:
            raise ValueError(
                f"group={group!r} is not a coordinate of the data; its coordinates are {sorted(map(str, ds.coords))}. "
                "Give each probe's demographic group (a column of the comparison list).")
        self.data = ds
        self.kind = ds.attrs.get("score_kind", "similarity")
        score = np.asarray(ds["score"].values, dtype=float)
        subj = np.asarray(ds["subject"].values).astype(str)
        rsubj = np.asarray(ds["reference_subject"].values).astype(str)
        g = np.asarray(ds[group].values).astype(str)
        keep = ~np.isnan(score)
        if "probe_id" in ds.coords and "reference_id" in ds.coords:
            keep &= np.asarray(ds["probe_id"].values) != np.asarray(ds["reference_id"].values)
        probe_map = _one_group(subj, g, "probe")
        if reference_group in ds.coords:
            rg = np.asarray(ds[reference_group].values).astype(str)
            ref_map = _one_group(rsubj, rg, "reference")
            clash = [s for s in set(probe_map) & set(ref_map) if probe_map[s] != ref_map[s]]
            if clash:
                s = sorted(clash)[0]
                raise ValueError(f"subject {s!r} is in group {probe_map[s]!r} as a probe and {ref_map[s]!r} as a "
                                 "reference: a subject belongs to one group.")
        else:
            unknown = sorted(set(rsubj) - set(probe_map))
            if unknown:
                raise ValueError(f"there is no {reference_group!r} coordinate and reference subject {unknown[0]!r} "
                                 f"never appears as a probe, so its group is unknown. Add a {reference_group!r} "
                                 "column (the reference's group).")
            rg = pd.Series(probe_map).reindex(rsubj).to_numpy().astype(str)
        self.score, self.subject, self.reference_subject = score[keep], subj[keep], rsubj[keep]
        self.group, self.reference_group = g[keep], rg[keep]
        self.mated = self.subject == self.reference_subject
        self.groups = sorted(set(probe_map.values()) | set(np.unique(rg).tolist()))
        self.subject_group = {**probe_map, **dict(zip(self.reference_subject, self.reference_group))}
        self.index = np.flatnonzero(keep)

    def accepted(self, threshold: float) -> np.ndarray:
        return self.score <= threshold if self.kind == "distance" else self.score >= threshold

    def within(self, g: str) -> xr.Dataset:
        """The comparisons (a list) with probe and reference both in group ``g``."""
        rows = self.index[(self.group == g) & (self.reference_group == g)]
        return self.data.isel(comparison=rows)


def _one_group(subjects: np.ndarray, groups: np.ndarray, side: str) -> dict:
    frame = pd.DataFrame({"s": subjects, "g": groups}).drop_duplicates()
    twice = frame["s"].duplicated(keep=False)
    if twice.any():
        s = frame.loc[twice, "s"].iloc[0]
        found = sorted(frame.loc[frame["s"] == s, "g"].tolist())
        raise ValueError(f"{side} subject {s!r} has several groups {found}: a subject belongs to one group.")
    return dict(zip(frame["s"], frame["g"]))


def global_threshold(data, fmr_target: float) -> float:
    """The one threshold of a group comparison: the most lenient with overall FMR at most ``fmr_target``.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list.
    fmr_target : float
        Overall FMR target in (0, 1).

    Returns
    -------
    float

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import global_threshold
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 20}, n_samples=2, fmr=0.01, seed=0)
    >>> t = global_threshold(cube, 0.001)
    >>> bool(bioxr.verification.fmr(cube, t).fmr <= 0.001)
    True
    """
    from ..verification import fnmr_at_fmr

    fmr_target = float(fmr_target)
    if not 0 < fmr_target < 1:
        raise ValueError(f"fmr_target={fmr_target!r}; give an FMR in (0, 1), e.g. 0.001.")
    return float(fnmr_at_fmr(data, fmr_target).threshold)


def _resolve(data, threshold, fmr_target) -> tuple[float, dict]:
    if (threshold is None) == (fmr_target is None):
        raise ValueError("give exactly one of threshold= (a score) and fmr_target= (an overall FMR in (0, 1)).")
    if threshold is not None:
        t = float(threshold)
        if not np.isfinite(t):
            raise ValueError(f"threshold={threshold!r}; give a finite score.")
        return t, {"threshold_rule": "one global threshold for every group, given", "fmr_target": np.nan}
    return global_threshold(data, fmr_target), {"threshold_rule": THRESHOLD_RULE, "fmr_target": float(fmr_target)}


def group_rates(data, *, threshold=None, fmr_target=None, group: Hashable = "group",
                reference_group: Hashable = "reference_group", n_replicates: int = 1000, level: float = 0.95,
                seed=0) -> xr.Dataset:
    """Each group's FNMR and FMR at one global threshold, with subject-bootstrap intervals.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list with ``group`` on the probe side
        (and ``reference_group`` on the reference side).
    threshold : float, optional, keyword-only
        The threshold; or
    fmr_target : float, optional, keyword-only
        an overall FMR target that sets it (:func:`global_threshold`).
        Give exactly one.
    group, reference_group : str, keyword-only
        Names of the probe's and the reference's group labels.
    n_replicates, level, seed : keyword-only
        Of the subject bootstrap (:func:`bioxr.bootstrap.bootstrap_curve`,
        run on each group's comparisons and on all of them).

    Returns
    -------
    xarray.Dataset
        Over ``group``: ``fnmr``, ``fnmr_interval`` (dim ``bound``),
        ``false_nonmatches``, ``n_mated``, ``fmr`` (within the group),
        ``fmr_interval``, ``false_matches``, ``n_nonmated``,
        ``n_subjects``, ``fnmr_bound_kind``, ``fmr_bound_kind``. Scalars:
        ``threshold``, ``overall_fnmr``, ``overall_fnmr_interval``,
        ``overall_fmr`` (all non-mated comparisons, across groups too),
        ``overall_fmr_interval``, ``overall_false_nonmatches``, ``overall_n_mated``,
        ``overall_false_matches``, ``overall_n_nonmated``. attrs ``threshold_rule``, ``fmr_target``
        (NaN if the threshold was given), ``fmr_convention``, ``method``,
        ``interval``, ``level``, ``n_replicates``, ``group``.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import group_rates
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 20}, n_samples=3, fnmr={"A": 0.05, "B": 0.2}, seed=0)
    >>> r = group_rates(cube, threshold=0.0, n_replicates=200)
    >>> r.fnmr.dims, r.fnmr_interval.dims
    (('group',), ('group', 'bound'))
    >>> bool(r.fnmr.sel(group="B") > r.fnmr.sel(group="A"))
    True
    """
    from ..bootstrap import bootstrap_curve

    level = check_level(level)
    n_replicates = check_replicates(n_replicates, level=level)
    trials = _Trials(data, group, reference_group)
    t, rule = _resolve(trials.data, threshold, fmr_target)
    accepted = trials.accepted(t)
    names = ["fnmr", "fnmr_interval", "fnmr_bound_kind", "fmr", "fmr_interval", "fmr_bound_kind"]
    rows = {k: [] for k in names}
    counts = {k: [] for k in ("false_nonmatches", "n_mated", "false_matches", "n_nonmated", "n_subjects")}
    nan2 = np.array([np.nan, np.nan])
    for g in trials.groups:
        inside = (trials.group == g) & (trials.reference_group == g)
        m = inside & trials.mated
        n = inside & ~trials.mated
        counts["false_nonmatches"].append(int((m & ~accepted).sum()))
        counts["n_mated"].append(int(m.sum()))
        counts["false_matches"].append(int((n & accepted).sum()))
        counts["n_nonmated"].append(int(n.sum()))
        counts["n_subjects"].append(sum(1 for s, h in trials.subject_group.items() if h == g))
        if m.any() and n.any():
            with warnings.catch_warnings():  # check_replicates above has said it once
                warnings.simplefilter("ignore", FewReplicatesWarning)
                b = bootstrap_curve(trials.within(g), thresholds=[t], n_replicates=n_replicates, level=level,
                                    seed=_rng(_entropy(seed), 11, len(rows["fnmr"])))
            b = b.isel(threshold=0)
            for k in names:
                rows[k].append(b[k].values)
        else:  # no mated, or no non-mated comparison inside the group: rates undefined
            for k, v in zip(names, (np.nan, nan2, "undefined", np.nan, nan2, "undefined")):
                rows[k].append(v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewReplicatesWarning)
        whole = bootstrap_curve(data, thresholds=[t], n_replicates=n_replicates, level=level, seed=seed)
    whole = whole.isel(threshold=0)
    coords = {group: trials.groups, "bound": list(BOUNDS)}
    ds = xr.Dataset(coords=coords)
    for k in names:
        dims = (group, "bound") if k.endswith("interval") else (group,)
        ds[k] = (dims, np.array(rows[k]))
    for k, v in counts.items():
        ds[k] = (group, np.array(v, dtype=np.int64))
    ds["threshold"] = t
    ds["overall_fnmr"] = float(whole.fnmr)
    ds["overall_fnmr_interval"] = ("bound", np.asarray(whole.fnmr_interval.values, dtype=float))
    ds["overall_fmr"] = float(whole.fmr)
    ds["overall_fmr_interval"] = ("bound", np.asarray(whole.fmr_interval.values, dtype=float))
    ds["overall_false_nonmatches"] = int((trials.mated & ~accepted).sum())
    ds["overall_n_mated"] = int(trials.mated.sum())
    ds["overall_false_matches"] = int((~trials.mated & accepted).sum())
    ds["overall_n_nonmated"] = int((~trials.mated).sum())
    ds["fmr"].attrs["long_name"] = "FMR of non-mated comparisons within the group (probe and reference in it)"
    ds["fnmr"].attrs["long_name"] = "FNMR of the group's mated comparisons"
    ds.attrs = {
        **rule,
        "fmr_convention": "a group's FMR: non-mated comparisons with probe and reference both in the group "
                          "(NIST FRVT Part 3); across groups see cross_group_fmr",
        "method": whole.attrs.get("method", "subject bootstrap"),
        "interval": whole.attrs.get("interval", ""),
        "level": level,
        "n_replicates": n_replicates,
        "group": str(group),
        "score_kind": trials.kind,
    }
    return ds


def cross_group_fmr(data, *, threshold=None, fmr_target=None, group: Hashable = "group",
                    reference_group: Hashable = "reference_group") -> xr.Dataset:
    """FMR of every (probe group, reference group) pair at one global threshold: NIST's cross-group matrix.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list with group labels (see
        :func:`group_rates`).
    threshold, fmr_target : float, optional, keyword-only
        Exactly one: the threshold, or the overall FMR target setting it.
    group, reference_group : str, keyword-only

    Returns
    -------
    xarray.Dataset
        Over ``(probe_group, reference_group)``: ``fmr``, ``false_matches``,
        ``n_nonmated`` (NaN FMR where a pair has no comparison); scalars
        ``threshold`` and ``overall_fmr`` (all non-mated comparisons);
        attrs ``threshold_rule``, ``fmr_target``, ``score_kind``.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import cross_group_fmr
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 20}, n_samples=2, fmr=0.01, seed=0)
    >>> m = cross_group_fmr(cube, fmr_target=0.001)
    >>> m.fmr.dims
    ('probe_group', 'reference_group')
    >>> int(m.n_nonmated.sum()) == 60 * 2 * 59
    True
    """
    trials = _Trials(data, group, reference_group)
    t, rule = _resolve(trials.data, threshold, fmr_target)
    nm = ~trials.mated
    accepted = trials.accepted(t) & nm
    gs = trials.groups
    code = {g: k for k, g in enumerate(gs)}
    pc = np.array([code[g] for g in trials.group]) if trials.group.size else np.zeros(0, int)
    rc = np.array([code[g] for g in trials.reference_group]) if trials.group.size else np.zeros(0, int)
    cell = pc * len(gs) + rc
    n = np.bincount(cell[nm], minlength=len(gs) ** 2).reshape(len(gs), len(gs))
    f = np.bincount(cell[accepted], minlength=len(gs) ** 2).reshape(len(gs), len(gs))
    with np.errstate(invalid="ignore", divide="ignore"):
        fmr = np.where(n > 0, f / np.maximum(n, 1), np.nan)
    ds = xr.Dataset(
        {"fmr": (("probe_group", "reference_group"), fmr),
         "false_matches": (("probe_group", "reference_group"), f),
         "n_nonmated": (("probe_group", "reference_group"), n)},
        coords={"probe_group": gs, "reference_group": gs},
    )
    ds["threshold"] = t
    ds["overall_fmr"] = float(f.sum() / n.sum()) if n.sum() else np.nan
    ds["fmr"].attrs["long_name"] = "FMR of non-mated comparisons of a probe of probe_group with a reference of reference_group"
    ds.attrs = {**rule, "score_kind": trials.kind,
                "decision_rule": "a false match when d <= t" if trials.kind == "distance" else "a false match when s >= t"}
    return ds


def fairness_intervals(data, *, threshold=None, fmr_target=None, alpha: float = 0.5, group: Hashable = "group",
                       reference_group: Hashable = "reference_group", n_replicates: int = 1000, level: float = 0.95,
                       seed=0) -> xr.Dataset:
    """FDR and GARBE of the group rates at one threshold, with subject-bootstrap percentile intervals.

    Each replicate draws, within every group, as many subjects as it has,
    with replacement (all their comparisons together: a subject drawn k
    times counts k times as probe and as reference, so a within-group
    non-mated pair of subjects a, c takes the weight ``w_a w_c``, METHODS.md
    section 7), recomputes every group's FNMR and within-group FMR, and
    from them FDR (:func:`fairness_discrepancy_rate`) and GARBE
    (:func:`garbe`). The interval is the replicates' ``level`` percentile
    interval. Both summaries are ranges or spreads of noisy rates, so they
    read as less fair than the truth when groups are small: even groups
    with equal true rates give an FDR below 1 and a GARBE above 0, and the
    interval shows how far chance alone takes them. The pair weights make
    the FMR replicates somewhat too spread (Owen 2007): its interval errs
    wide. Measured (200 simulated studies of 100, 60 and 40 subjects, 3
    attempts each, rho 0.2, 400 replicates): with unequal true rates (FNMR
    3/6/12%, FMR 0.1/0.3/0.2%) both 95% intervals covered the true FDR and
    GARBE in 97% of studies; with equal true rates in none (the true values
    1 and 0 lie on the boundary that a spread of noisy rates never reaches):
    read the intervals as the precision of an unequal summary, never as a
    test of equality (that is :func:`differential_test`).

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list with group labels.
    threshold, fmr_target : float, optional, keyword-only
        Exactly one (see :func:`group_rates`).
    alpha : float, keyword-only
        Weight of the FMR term in both summaries, in [0, 1].
    group, reference_group : str, keyword-only
    n_replicates, level, seed : keyword-only

    Returns
    -------
    xarray.Dataset
        ``fdr``, ``fmr_gap``, ``fnmr_gap``, ``garbe``, ``fmr_gini``,
        ``fnmr_gini``, each with ``<name>_interval`` (dim ``bound``); over
        ``group``: ``fmr`` and ``fnmr`` (the point rates); ``threshold``;
        attrs ``method``, ``interval``, ``alpha``, ``level``,
        ``n_replicates``, ``threshold_rule``, ``fmr_target``.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import fairness_intervals
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 30}, n_samples=3, fnmr={"A": 0.05, "B": 0.2}, seed=0)
    >>> fair = fairness_intervals(cube, threshold=0.0, n_replicates=200)
    >>> lo, hi = fair.garbe_interval.values
    >>> bool(lo <= fair.garbe <= hi), bool(fair.fdr < 1)
    (True, True)
    """
    from .summaries import _check_alpha

    alpha = _check_alpha(alpha)
    level = check_level(level)
    n_replicates = check_replicates(n_replicates, level=level)
    trials = _Trials(data, group, reference_group)
    if len(trials.groups) < 2:
        raise ValueError(f"the data hold one group ({trials.groups}); FDR and GARBE compare at least two.")
    t, rule = _resolve(trials.data, threshold, fmr_target)
    accepted = trials.accepted(t)
    root = _entropy(seed)
    point = {"fmr": [], "fnmr": []}
    reps = {"fmr": [], "fnmr": []}
    for k, g in enumerate(trials.groups):
        e_fnm, m_att, f_pairs, n_pairs = _group_sufficient(trials, g, accepted)
        n_units = e_fnm.size
        point["fnmr"].append(e_fnm.sum() / m_att.sum() if m_att.sum() else np.nan)
        point["fmr"].append(f_pairs.sum() / n_pairs.sum() if n_pairs.sum() else np.nan)
        draws = _rng(root, 13, k).integers(0, n_units, size=(n_replicates, n_units))
        w = np.zeros((n_replicates, n_units))
        np.add.at(w, (np.repeat(np.arange(n_replicates), n_units), draws.ravel()), 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            reps["fnmr"].append((w @ e_fnm) / (w @ m_att))
            reps["fmr"].append(((f_pairs.T @ w.T).T * w).sum(1) / ((n_pairs.T @ w.T).T * w).sum(1))
    gdim = str(group)
    rates = {k: xr.DataArray(np.array(v, dtype=float), dims=gdim, coords={gdim: trials.groups}) for k, v in point.items()}
    rep_rates = {k: xr.DataArray(np.array(v, dtype=float).T, dims=("replicate", gdim), coords={gdim: trials.groups})
                 for k, v in reps.items()}
    fdr = fairness_discrepancy_rate(rates["fmr"], rates["fnmr"], alpha=alpha, dim=gdim)
    gb = garbe(rates["fmr"], rates["fnmr"], alpha=alpha, dim=gdim)
    fdr_r = fairness_discrepancy_rate(rep_rates["fmr"], rep_rates["fnmr"], alpha=alpha, dim=gdim)
    gb_r = garbe(rep_rates["fmr"], rep_rates["fnmr"], alpha=alpha, dim=gdim)
    q = [round((1 - level) / 2, 12), round((1 + level) / 2, 12)]  # 0.025, not 0.025000000000000022
    ds = xr.Dataset(coords={gdim: trials.groups, "bound": list(BOUNDS)})
    for name, src, rsrc in (("fdr", fdr, fdr_r), ("fmr_gap", fdr, fdr_r), ("fnmr_gap", fdr, fdr_r),
                            ("garbe", gb, gb_r), ("fmr_gini", gb, gb_r), ("fnmr_gini", gb, gb_r)):
        ds[name] = src[name]
        ds[name].attrs = src[name].attrs
        values = np.asarray(rsrc[name].values, dtype=float)
        values = values[np.isfinite(values)]
        bounds = np.quantile(values, q, method="inverted_cdf") if values.size else np.array([np.nan, np.nan])
        ds[f"{name}_interval"] = ("bound", bounds)
    ds["fmr"], ds["fnmr"] = rates["fmr"], rates["fnmr"]
    ds["threshold"] = t
    ds.attrs = {
        **rule,
        "method": "subject bootstrap within groups (group sizes fixed; a subject's comparisons as probe and as "
                  "reference together; within-group non-mated pairs weighted w_a w_c)",
        "interval": f"{level:.0%} percentile interval of the replicates",
        "alpha": alpha,
        "level": level,
        "n_replicates": n_replicates,
        "group": gdim,
    }
    return ds


def _group_sufficient(trials: _Trials, g: str, accepted: np.ndarray):
    """Per-subject false non-matches and attempts, and per subject-pair false matches and non-mated counts, of group g."""
    from scipy import sparse

    units = sorted(s for s, h in trials.subject_group.items() if h == g)
    idx = {s: k for k, s in enumerate(units)}
    n = len(units)
    inside = (trials.group == g) & (trials.reference_group == g)
    m = inside & trials.mated
    who = np.array([idx[s] for s in trials.subject[m]], dtype=np.int64)
    e = np.bincount(who[~accepted[m]], minlength=n).astype(float)
    att = np.bincount(who, minlength=n).astype(float)
    nm = inside & ~trials.mated
    a = np.array([idx[s] for s in trials.subject[nm]], dtype=np.int64)
    c = np.array([idx[s] for s in trials.reference_subject[nm]], dtype=np.int64)
    ones = np.ones(a.size)
    pairs = sparse.csr_matrix((ones, (a, c)), shape=(n, n))
    fm = accepted[nm]
    false = sparse.csr_matrix((ones[fm], (a[fm], c[fm])), shape=(n, n))
    return e, att, false, pairs
