"""Sentences on comparisons of systems, for notebooks and reports."""

from __future__ import annotations

import numpy as np
import xarray as xr


def _p(p: float) -> str:
    return f"p = {p:.2g}" if p >= 1e-3 else "p < 0.001"


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _points(x: float) -> str:
    return f"{100 * x:+.2f}"


def describe(result: xr.Dataset) -> str:
    """One sentence per pair (and target) of a :func:`paired_difference` or :func:`mcnemar_test` result.

    Examples
    --------
    >>> import bioxr
    >>> both = bioxr.simulate.systems(n_subjects=60, n_samples=2, shift=[0.0, -0.4], seed=1)
    >>> diff = bioxr.systems.paired_difference(both, "eer", n_replicates=1000)
    >>> print(bioxr.systems.describe(diff))  # doctest: +ELLIPSIS
    B's EER (rocch) is 13.75% against A's 9.93%: B - A = +3.82 points (95% paired interval +0.82 to +6.37; p = 0.008...).
    """
    if "b" in result and "c" in result:
        return _mcnemar(result)
    level = float(result.attrs.get("level", 0.95))
    stat = result.attrs.get("statistic", "eer")
    label = {"eer": f"EER ({result.attrs.get('eer_method', result.attrs.get('method', ''))})",
             "fnmr_at_fmr": "FNMR", "fmr": "FMR", "fnmr": "FNMR"}.get(stat, stat)
    extra = [d for d in result["difference"].dims if d != "pair"]
    out = []
    for k, pair in enumerate(result["pair"].values):
        a, b = str(result["pair_baseline"].values[k]), str(result["pair_system"].values[k])
        points = [{}] if not extra else [dict(zip(extra, idx)) for idx in np.ndindex(*(result.sizes[d] for d in extra))]
        for at in points:
            sel = {d: i for d, i in at.items()}
            d = float(result["difference"].isel(pair=k, **sel))
            lo, hi = (float(v) for v in result["difference_interval"].isel(pair=k, **sel).values)
            p = float(result["p_value"].isel(pair=k, **sel))
            pa = float(result["p_adjusted"].isel(pair=k, **sel))
            ea = float(result["estimate"].sel(system=a).isel(**sel)) if "system" in result["estimate"].dims else np.nan
            eb = float(result["estimate"].sel(system=b).isel(**sel)) if "system" in result["estimate"].dims else np.nan
            where = "".join(f" at {d.replace('_target', '').upper()} {result[d].values[i]:g}" for d, i in at.items())
            method = str(result.attrs.get("adjust", "holm"))
            adjusted = (f", {method.capitalize()}-adjusted {_p(pa)[4:] if pa >= 1e-3 else '< 0.001'}"
                        if result["p_value"].size > 1 and not method.startswith("none") else "")
            verdict = "" if lo > 0 or hi < 0 else " The interval holds 0: no difference is shown."
            out.append(f"{b}'s {label}{where} is {_pct(eb)} against {a}'s {_pct(ea)}: {pair} = {_points(d)} points "
                       f"({level:.0%} paired interval {_points(lo)} to {_points(hi)}; {_p(p)}{adjusted}).{verdict}")
    return " ".join(out)


def _mcnemar(result: xr.Dataset) -> str:
    out = []
    for k, pair in enumerate(result["pair"].values):
        a, b = str(result["pair_baseline"].values[k]), str(result["pair_system"].values[k])
        for r, rate in enumerate(result["rate"].values):
            nb, nc = int(result["b"].values[k, r]), int(result["c"].values[k, r])
            n = int(result["n_paired"].values[k, r])
            deff = float(result["design_effect"].values[k, r]) if "design_effect" in result else np.nan
            p_exact = float(result["p_exact"].values[k, r]) if "p_exact" in result else np.nan
            p = float(result["p_value"].values[k, r])
            what = "false non-matches" if rate == "fnmr" else "false matches"
            cluster = (f"; with subjects as clusters (design effect {deff:.2f}) {_p(p)}, exact McNemar "
                       f"{_p(p_exact)}" if np.isfinite(deff) else f"; exact McNemar {_p(p)}")
            out.append(f"{rate.upper()}: of {n:,} paired comparisons, {nb:,} are {what} of {a} only and {nc:,} of "
                       f"{b} only{cluster}.")
    return " ".join(out)
