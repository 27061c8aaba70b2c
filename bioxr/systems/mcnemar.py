"""McNemar's test on paired decisions, exact and cluster-adjusted (Obuchowski 1998)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..comparisons import self_flags
from ..cube import REFERENCE, probe_dims
from ._stack import (_FAILURES, MCNEMAR_KINDS, _check_same_subjects, _key_names, _list_keys, _pairs, _per_system,
                     _split, _subject_labels, adjust_p_values)



def _decisions(sub, failure_policy, units):
    """Per counted comparison of one system: key, score, accepted-able flag, mated, subject codes."""
    if isinstance(sub, xr.DataArray):
        pdims = probe_dims(sub)
        sub = sub.transpose(*pdims, REFERENCE)
        shape = sub.shape
        score = np.asarray(sub.values, dtype=float).reshape(-1)
        template = sub.isel({REFERENCE: 0}, drop=True)
        p_code = units.get_indexer(np.asarray(sub["subject"].broadcast_like(template).transpose(*pdims).values)
                                   .reshape(-1))
        r_code = units.get_indexer(np.asarray(sub["reference_subject"].values))
        p_full = np.repeat(p_code, shape[-1])
        r_full = np.tile(r_code, int(np.prod(shape[:-1])))
        failed = np.zeros(score.size, dtype=bool)
        if "failed_enrolment" in sub.coords:
            failed |= np.tile(np.asarray(sub["failed_enrolment"].values, dtype=bool), int(np.prod(shape[:-1])))
        if "failed_acquisition" in sub.coords:
            fa = np.asarray(sub["failed_acquisition"].broadcast_like(template).transpose(*pdims).values, dtype=bool)
            failed |= np.repeat(fa.reshape(-1), shape[-1])
        selfc = None
        if "probe_id" in sub.coords and "reference_id" in sub.coords:
            pid = np.asarray(sub["probe_id"].broadcast_like(template).transpose(*pdims).values).reshape(-1)
            selfc = np.repeat(pid, shape[-1]) == np.tile(np.asarray(sub["reference_id"].values), pid.size)
        key = np.arange(score.size)
    else:
        score = np.asarray(sub["score"].values, dtype=float)
        p_full = units.get_indexer(np.asarray(sub["subject"].values))
        r_full = units.get_indexer(np.asarray(sub["reference_subject"].values))
        failed = np.zeros(score.size, dtype=bool)
        for f in _FAILURES:
            if f in sub.coords:
                failed |= np.asarray(sub[f].values, dtype=bool)
        selfc = self_flags(sub)
        key = None
    counted = ~np.isnan(score) | (failed if failure_policy == "nist" else False)
    if failure_policy == "exclude":
        counted &= ~failed
    if selfc is not None:
        counted &= ~selfc
    return {"score": score, "failed": failed, "counted": counted, "p": p_full, "r": r_full, "key": key}


def _dyadic_variance(z, p_code, r_code, mated, n_units):
    """Var of sum(z) counting every two comparisons that share a subject (one-way for mated ones).

    ``sum_s Z_s^2 - sum_u Z_u^2``: ``Z_s`` sums ``z`` over the comparisons
    involving subject ``s`` (a mated comparison involves one subject, a
    non-mated one two), ``Z_u`` over the non-mated comparisons of the
    unordered pair ``u`` (counted twice in the first sum). For mated
    comparisons alone it is the cluster-robust variance of Obuchowski
    (1998); for non-mated ones the dyadic variance of crossed subjects
    (METHODS.md section 12).
    """
    zs = np.bincount(p_code, z, n_units) + np.bincount(r_code[~mated], z[~mated], n_units)
    a, c = p_code[~mated].astype(np.int64), r_code[~mated].astype(np.int64)
    if a.size:
        _, u = np.unique(np.minimum(a, c) * n_units + np.maximum(a, c), return_inverse=True)
        zu = np.bincount(u, z[~mated])
        pair_part = float(zu @ zu)
    else:
        pair_part = 0.0
    return float(zs @ zs) - pair_part


def mcnemar_test(obj, threshold, *, dim: str = "system", kind: str = "both", cluster: bool = True, baseline=None,
                 pairs: str = "baseline", adjust: str = "holm", failure_policy: str = "exclude") -> xr.Dataset:
    """McNemar's exact test on paired decisions at fixed thresholds, and its cluster-adjusted version.

    Every comparison counted in both systems of a pair is a paired
    decision. ``b`` counts the comparisons where the baseline errs and the
    system does not, ``c`` the reverse (an error: a rejected mated
    comparison for the FNMR, an accepted non-mated one for the FMR). The
    exact test: ``p = min(1, 2 BinomCDF(min(b, c); b + c, 1/2))`` (1 when
    ``b + c = 0``).

    The exact test takes the comparisons as independent. Those of one
    subject are not: where a subject's errors lean to one system (a
    subject one matcher fails and the other does not), its discordant
    decisions share a sign and the exact test rejects too often (15% at a
    nominal 5% with 40 subjects x 4 attempts under
    ``simulate.systems(subject_system_sd=0.8)``). The cluster-adjusted test (Obuchowski 1998) treats
    subjects as clusters: with ``d_i`` the system's minus the baseline's
    error on comparison ``i`` and ``z_i = d_i - mean(d)``,
    ``X^2 = (sum d)^2 / (K/(K-1) V)``, ``V`` the cluster-robust variance of
    ``sum d`` (mated: by subject; non-mated: every two comparisons that
    share a subject on either side, the crossed design), ``K`` the
    subjects; ``p`` from chi-square with 1 degree of freedom. With one
    comparison per subject it is McNemar's chi-square test.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        Stacked systems (:func:`stack_systems`).
    threshold : float, mapping or DataArray
        One threshold for every system or one per system (dict, or a
        DataArray over ``dim`` such as ``fnmr_at_fmr(...).threshold``).
    dim : str, keyword-only
    kind : {"fnmr", "fmr", "both"}, keyword-only
        Test the mated decisions (FNMR), the non-mated ones (FMR), or both
        (a ``rate`` dimension, both in the family).
    cluster : bool, keyword-only
        Also give the cluster-adjusted test, and make it ``p_value``
        (default: comparisons of one subject are correlated, so the exact
        test's p-value is too small wherever subjects hold several
        comparisons). ``cluster=False``: ``p_value`` is the exact test's,
        valid when the comparisons are independent (one per subject).
    baseline, pairs, adjust : keyword-only
        As in :func:`paired_difference`.
    failure_policy : {"exclude", "nist"}, keyword-only
        ``"exclude"``: a comparison that failed in any system is not a
        paired decision; ``"nist"``: a failed comparison is never accepted.

    Returns
    -------
    xarray.Dataset
        Over ``(pair, rate)``: ``n_paired``, ``b``, ``c``, ``error_baseline``
        and ``error_system`` (rates on the paired comparisons),
        ``difference``, ``p_exact``; with ``cluster``, ``chi2_cluster``,
        ``p_cluster`` and ``design_effect`` (the cluster variance over the
        independent one); ``p_value`` and ``p_adjusted``. ``threshold``
        over ``dim``.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.systems import mcnemar_test
    >>> cube = bioxr.simulate.systems(n_subjects=50, n_samples=2, shift=-1.0, seed=4)
    >>> res = mcnemar_test(cube, 1.5, kind="fnmr")
    >>> res.b.item() < res.c.item()  # B errs more often than A
    True
    >>> res.attrs["p_value"][:28]
    'cluster-adjusted (Obuchowski'
    """
    from scipy.stats import binom, chi2

    if kind not in MCNEMAR_KINDS:
        raise ValueError(f"kind={kind!r}; choose one of {MCNEMAR_KINDS}: the mated decisions (FNMR), the non-mated "
                         "ones (FMR), or both.")
    if failure_policy not in ("exclude", "nist"):
        raise ValueError(f"failure_policy={failure_policy!r}; McNemar's test takes 'exclude' or 'nist' (a paired "
                         "decision per comparison; the generalized rates of 'iso' are not decisions).")
    adjust_p_values([], adjust)
    names, subs = _split(obj, dim)
    pair_idx, base_name = _pairs(names, baseline, pairs)
    _check_same_subjects(names, [_subject_labels(s) for s in subs])
    thresholds = _per_system(threshold, names, dim, "mcnemar_test")
    units = pd.Index(pd.unique(np.concatenate([np.asarray(list(_subject_labels(s)), dtype=object) for s in subs])))
    tables = [_decisions(s, failure_policy, units) for s in subs]
    if tables[0]["key"] is None:  # comparison lists: pair comparisons by their keys
        keys = _key_names(subs, dim)
        index = [pd.MultiIndex.from_frame(_list_keys(s, keys)) for s in subs]
        common = index[0]
        for ix in index[1:]:
            common = common[common.isin(ix)]
        pos = [ix.get_indexer(common) for ix in index]
    else:
        pos = [np.arange(tables[0]["score"].size)] * len(subs)
    kinds = subs[0].attrs.get("score_kind", "similarity")
    errors, counted = [], []
    for t, where, thr in zip(tables, pos, thresholds):
        s = t["score"][where]
        with np.errstate(invalid="ignore"):
            accept = (s >= thr) if kinds == "similarity" else (s <= thr)
        accept &= ~t["failed"][where]
        mated = t["p"][where] == t["r"][where]
        errors.append(np.where(mated, ~accept, accept))
        counted.append(t["counted"][where])
    p_code, r_code = tables[0]["p"][pos[0]], tables[0]["r"][pos[0]]
    mated = p_code == r_code
    rates = ["fnmr", "fmr"] if kind == "both" else [kind]
    shape = (len(pair_idx), len(rates))
    out = {k: np.full(shape, np.nan) for k in ("n_paired", "b", "c", "error_baseline", "error_system", "difference",
                                                "p_exact", "chi2_cluster", "p_cluster", "design_effect")}
    for q, (i, j) in enumerate(pair_idx):
        both = counted[i] & counted[j]
        for r, rate in enumerate(rates):
            sel = both & (mated if rate == "fnmr" else ~mated)
            e_sys, e_base = errors[i][sel], errors[j][sel]
            n = int(sel.sum())
            b, c = int((e_base & ~e_sys).sum()), int((e_sys & ~e_base).sum())
            out["n_paired"][q, r], out["b"][q, r], out["c"][q, r] = n, b, c
            if n:
                out["error_baseline"][q, r], out["error_system"][q, r] = e_base.mean(), e_sys.mean()
                out["difference"][q, r] = (c - b) / n
            out["p_exact"][q, r] = min(1.0, 2.0 * binom.cdf(min(b, c), b + c, 0.5)) if b + c else 1.0
            if cluster:
                d = e_sys.astype(float) - e_base.astype(float)
                if b + c == 0:
                    out["chi2_cluster"][q, r], out["p_cluster"][q, r] = 0.0, 1.0
                    continue
                z = d - d.mean()
                pc, rc, m = p_code[sel], r_code[sel], mated[sel]
                k_units = np.unique(np.concatenate([pc, rc[~m]])).size
                v = _dyadic_variance(z, pc, rc, m, len(units)) * k_units / max(k_units - 1, 1)
                v_ind = float(z @ z)
                if not v > 0:  # the dyadic sum can fall below zero on tiny data: the independent variance
                    v = v_ind
                x2 = float(d.sum()) ** 2 / v
                out["chi2_cluster"][q, r], out["p_cluster"][q, r] = x2, float(chi2.sf(x2, 1))
                out["design_effect"][q, r] = v / v_ind if v_ind > 0 else np.nan
    p_value = out["p_cluster"] if cluster else out["p_exact"]
    coords = {dim: np.asarray(names), "pair": [f"{names[i]} - {names[j]}" for i, j in pair_idx],
              "pair_system": ("pair", [names[i] for i, _ in pair_idx]),
              "pair_baseline": ("pair", [names[j] for _, j in pair_idx]), "rate": rates}
    keep = [k for k in out if cluster or k not in ("chi2_cluster", "p_cluster", "design_effect")]
    data = {k: (("pair", "rate"), out[k].astype(int) if k in ("n_paired", "b", "c") else out[k]) for k in keep}
    data.update({"p_value": (("pair", "rate"), p_value),
                 "p_adjusted": (("pair", "rate"), adjust_p_values(p_value, adjust)),
                 "threshold": (dim, thresholds)})
    return xr.Dataset(data, coords=coords, attrs={
        "method": "McNemar's test on paired decisions at fixed thresholds (McNemar 1947)",
        "b_c": "b: comparisons where the baseline errs and the system does not; c: the reverse",
        "p_exact": "exact McNemar: min(1, 2 BinomCDF(min(b, c); b + c, 1/2))",
        "p_cluster": ("Obuchowski (1998) cluster-adjusted chi-square, 1 df: subjects as clusters (non-mated "
                      "comparisons: every two sharing a subject on either side), small-sample factor K/(K-1)"),
        "p_value": ("cluster-adjusted (Obuchowski 1998): comparisons of one subject are correlated" if cluster
                    else "exact McNemar (comparisons taken as independent)"),
        "adjust": adjust or "none", "family": f"{int(np.isfinite(p_value).sum())} hypotheses",
        "baseline": base_name, "pairs": pairs, "difference": "system minus baseline error rate",
        "score_kind": kinds, "failure_policy": failure_policy, "n_subjects": len(units)})


# ------------------------------------------------------------------ bands for the chart
