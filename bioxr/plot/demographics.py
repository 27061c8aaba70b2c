"""Charts of demographic differentials (ISO/IEC 19795-10; seed 002; NIST FRVT Part 3).

- :func:`group_rates_chart`: each group's FNMR and FMR at one global
  threshold with their subject-bootstrap intervals, the overall rate, and
  (FNMR) the margin of error around it (:func:`bioxr.demographics.margin_of_error`):
  a group whose FNMR lies outside its margin is drawn in red;
- :func:`cross_fmr_heatmap`: the FMR of every (probe group, reference
  group) pair at that threshold on a log colour scale, each cell labelled
  with its FMR and its ratio to the overall FMR, as in NIST's demographic
  report cards;
- :func:`fairness_chart`: FDR and GARBE (with its Gini terms) with their
  bootstrap intervals (:func:`bioxr.demographics.fairness_intervals`).

The charts only draw what the Datasets hold: their numbers are the
library's.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from ._axes import _AXIS, _LEGEND, _title

__all__ = ["group_rates_chart", "cross_fmr_heatmap", "fairness_chart"]

_BLUE, _RED, _GREY = "#1f5fa8", "#c0392b", "#555"
_PANEL = 420  # width of one rate panel


def _pct(rate: float) -> str:
    """A rate in percent, three significant digits, never scientific notation."""
    if not np.isfinite(rate):
        return "–"
    if rate == 0 or rate == 1:
        return f"{rate:.0%}"
    return np.format_float_positional(rate * 100, precision=3, fractional=False, trim="-") + "%"


def _check(ds, variables, what, producer):
    if not isinstance(ds, xr.Dataset) or any(v not in ds for v in variables):
        got = type(ds).__name__ if not isinstance(ds, xr.Dataset) else f"a Dataset without {[v for v in variables if v not in ds]}"
        raise TypeError(f"{what} takes the result of {producer}; got {got}.")


def _threshold_text(ds: xr.Dataset) -> str:
    t = float(ds["threshold"])
    target = ds.attrs.get("fmr_target", np.nan)
    if target is not None and np.isfinite(target):
        return f"one global threshold {t:.4g}, set for an overall FMR of {_pct(float(target))}"
    return f"one global threshold {t:.4g}"


def group_rates_frame(rates: xr.Dataset, margin: xr.Dataset | None = None) -> pd.DataFrame:
    """The tidy frame :func:`group_rates_chart` draws: one row per (rate, group).

    Columns ``rate`` ("FNMR"/"FMR"), ``group``, ``label`` (group and its
    subjects), ``value``, ``lower``, ``upper``, ``errors``, ``trials``,
    ``outside`` (FNMR outside the margin, else False), ``band_lower`` and
    ``band_upper`` (the margin interval; NaN for FMR or without a margin).
    """
    _check(rates, ("fnmr", "fmr", "fnmr_interval", "fmr_interval"), "group_rates_chart",
           "bioxr.demographics.group_rates")
    gdim = rates.attrs.get("group", "group")
    groups = [str(g) for g in rates[gdim].values.tolist()]
    rows = []
    band = None
    if margin is not None:
        _check(margin, ("margin_interval", "outside", "pooled_fnmr"), "margin=", "bioxr.demographics.margin_of_error")
        mgroups = [str(g) for g in margin[margin.attrs.get("group", "group")].values.tolist()]
        if sorted(mgroups) != sorted(groups):
            raise ValueError(f"margin= has groups {mgroups}; the rates have {groups}.")
        mi = margin["margin_interval"]
        mgdim = margin.attrs.get("group", "group")
        band = {g: (mi.sel({mgdim: g}) if mgdim in mi.dims else mi).values.astype(float) for g in groups}
        outside = {g: bool(margin["outside"].sel({mgdim: g})) for g in groups}
    for rate, errs, trials in (("FNMR", "false_nonmatches", "n_mated"), ("FMR", "false_matches", "n_nonmated")):
        key = rate.lower()
        for g in groups:
            sel = {gdim: g}
            lo, hi = (float(v) for v in rates[f"{key}_interval"].sel(sel).values)
            b = band[g] if band is not None and rate == "FNMR" else (np.nan, np.nan)
            rows.append({
                "rate": rate, "group": g,
                "label": f"{g} ({int(rates['n_subjects'].sel(sel)):,} subjects)" if "n_subjects" in rates else g,
                "value": float(rates[key].sel(sel)), "lower": lo, "upper": hi,
                "errors": int(rates[errs].sel(sel)) if errs in rates else -1,
                "trials": int(rates[trials].sel(sel)) if trials in rates else -1,
                "outside": bool(outside[g]) if band is not None and rate == "FNMR" else False,
                "band_lower": float(b[0]), "band_upper": float(b[1]),
            })
    frame = pd.DataFrame(rows)
    frame["value_text"] = frame["value"].map(_pct)
    frame["interval_text"] = [f"{_pct(a)} to {_pct(b)}" for a, b in zip(frame["lower"], frame["upper"])]
    frame["status"] = np.where(frame["outside"], "outside the margin of error", "inside the margin of error")
    return frame


def group_rates_chart(rates: xr.Dataset, margin: xr.Dataset | None = None, *, title: str | None = None) -> alt.HConcatChart:
    """Per-group FNMR and FMR at one threshold, with intervals, the overall rate and the FNMR margin of error.

    Parameters
    ----------
    rates : xarray.Dataset
        From :func:`bioxr.demographics.group_rates`.
    margin : xarray.Dataset, optional
        From :func:`bioxr.demographics.margin_of_error` on the same data at
        the same threshold: its band (the overall FNMR plus and minus each
        group's margin) is drawn grey behind each group's FNMR, and groups
        outside it are red.
    title : str, optional

    Returns
    -------
    altair.HConcatChart
        Two panels, FNMR and FMR, each with its own linear axis in percent.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import demographics as dm, plot
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 20}, n_samples=3, seed=0)
    >>> chart = plot.group_rates_chart(dm.group_rates(cube, threshold=0.0, n_replicates=200))
    >>> len(chart.hconcat)
    2
    """
    frame = group_rates_frame(rates, margin)
    level = float(rates.attrs.get("level", 0.95))
    order = frame.loc[frame["rate"] == "FNMR", "label"].tolist()
    panels = []
    for rate in ("FNMR", "FMR"):
        part = frame[frame["rate"] == rate].reset_index(drop=True)
        overall = float(rates[f"overall_{rate.lower()}"])
        olo, ohi = (float(v) for v in rates[f"overall_{rate.lower()}_interval"].values)
        top = np.nanmax(np.concatenate([part["upper"].to_numpy(), part["band_upper"].to_numpy(), [ohi]]))
        x_scale = alt.Scale(domain=[0, float(top) * 1.08 if top > 0 else 1e-3], nice=False, zero=True)
        y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelFontSize=12, labelLimit=220))
        base = alt.Chart(part)
        layers = []
        if rate == "FNMR" and part["band_lower"].notna().any():
            layers.append(base.mark_bar(color="#d9d9d9", height=22).encode(
                x=alt.X("band_lower:Q", scale=x_scale), x2="band_upper:Q", y=y,
                tooltip=[alt.Tooltip("band_lower:Q", format=".3%", title="margin from"),
                         alt.Tooltip("band_upper:Q", format=".3%", title="margin to")]))
        overall_frame = pd.DataFrame({"value": [overall], "lower": [olo], "upper": [ohi],
                                      "what": [f"overall {rate}"]})
        layers.append(alt.Chart(overall_frame).mark_rule(color=_GREY, strokeDash=[5, 4], strokeWidth=1.5).encode(
            x=alt.X("value:Q", scale=x_scale)))
        layers.append(base.mark_rule(strokeWidth=2.5).encode(
            x=alt.X("lower:Q", scale=x_scale), x2="upper:Q", y=y,
            color=alt.Color("status:N", scale=alt.Scale(domain=["inside the margin of error",
                                                                 "outside the margin of error"],
                                                         range=[_BLUE, _RED]), legend=None)))
        tooltip = [alt.Tooltip("group:N"), alt.Tooltip("value_text:N", title=rate),
                   alt.Tooltip("interval_text:N", title=f"{level:.0%} interval"),
                   alt.Tooltip("errors:Q", format=",", title="errors"),
                   alt.Tooltip("trials:Q", format=",", title="comparisons")]
        layers.append(base.mark_point(filled=True, size=90, opacity=1).encode(
            x=alt.X("value:Q", scale=x_scale,
                    axis=alt.Axis(format=".2~%", title=f"{rate} at the global threshold", grid=True, **_AXIS)),
            y=y, color=alt.Color("status:N", scale=alt.Scale(domain=["inside the margin of error",
                                                                      "outside the margin of error"],
                                                              range=[_BLUE, _RED]),
                                 legend=alt.Legend(title=None, orient="bottom", **_LEGEND)
                                 if rate == "FNMR" and margin is not None else None),
            tooltip=tooltip))
        layers.append(base.mark_text(align="left", dx=8, dy=-11, fontSize=11, color="#333").encode(
            x=alt.X("value:Q", scale=x_scale), y=y, text="value_text:N"))
        what = "non-mated within the group" if rate == "FMR" else "mated"
        sub = [f"overall {rate} {_pct(overall)} (dashed); {what}"]
        panels.append(alt.layer(*layers).properties(
            width=_PANEL, height=max(60, 44 * len(order)),
            title=alt.TitleParams(rate, subtitle=sub, anchor="start", fontSize=14, subtitleFontSize=11,
                                  subtitleColor=_GREY)))
    lines = [_threshold_text(rates) + f"; bars: {level:.0%} subject-bootstrap intervals (subjects are the units)"]
    if margin is not None:
        null = margin.attrs.get("null", "equal-rate")
        lines.append(f"grey: {float(margin.attrs.get('level', 0.95)):.0%} margin of error around the overall FNMR "
                     f"({null} null; Schuckers et al. 2022); red: a group outside it")
    return alt.hconcat(*panels, spacing=40).properties(
        title=_title(title or "FNMR and FMR by group", lines)).resolve_scale(x="independent", color="shared")


def cross_fmr_frame(matrix: xr.Dataset) -> pd.DataFrame:
    """The tidy frame :func:`cross_fmr_heatmap` draws: one row per (probe group, reference group)."""
    _check(matrix, ("fmr", "false_matches", "n_nonmated"), "cross_fmr_heatmap", "bioxr.demographics.cross_group_fmr")
    if matrix["fmr"].dims != ("probe_group", "reference_group"):
        raise TypeError(f"cross_fmr_heatmap takes the result of bioxr.demographics.cross_group_fmr; got a Dataset "
                        f"whose fmr has dims {matrix['fmr'].dims}, not ('probe_group', 'reference_group').")
    overall = float(matrix["overall_fmr"])
    frame = matrix[["fmr", "false_matches", "n_nonmated"]].to_dataframe().reset_index()
    frame["probe_group"] = frame["probe_group"].astype(str)
    frame["reference_group"] = frame["reference_group"].astype(str)
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["ratio"] = frame["fmr"] / overall if overall > 0 else np.nan
    frame["fmr_shown"] = frame["fmr"].where(frame["fmr"] > 0)  # log scale: zero cells drawn apart
    frame["label"] = [
        (f"{_pct(f)}\n{r:.2g}× overall" if f > 0 else f"0 of {int(n):,}") if n > 0 else "no pairs"
        for f, r, n in zip(frame["fmr"], frame["ratio"], frame["n_nonmated"])]
    return frame


def cross_fmr_heatmap(matrix: xr.Dataset, *, title: str | None = None, cell: int = 96) -> alt.LayerChart:
    """NIST's cross-group impostor matrix: FMR of each (probe group, reference group) at one threshold.

    Parameters
    ----------
    matrix : xarray.Dataset
        From :func:`bioxr.demographics.cross_group_fmr`.
    title : str, optional
    cell : int
        Side of a cell in pixels.

    Returns
    -------
    altair.LayerChart
        Cells coloured by FMR on a log scale (cells without a false match
        grey), each labelled with its FMR and its ratio to the overall FMR.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import demographics as dm, plot
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 20}, n_samples=2, fmr=0.01, seed=0)
    >>> chart = plot.cross_fmr_heatmap(dm.cross_group_fmr(cube, fmr_target=0.001))
    >>> chart.to_dict()["layer"][0]["encoding"]["color"]["scale"]["type"]
    'log'
    """
    frame = cross_fmr_frame(matrix)
    groups = [str(g) for g in matrix["probe_group"].values.tolist()]
    positive = frame["fmr_shown"].dropna()
    lo, hi = (float(positive.min()), float(positive.max())) if len(positive) else (1e-6, 1e-3)
    if hi <= lo:
        lo, hi = lo / 2, hi * 2
    mid = float(np.sqrt(lo * hi))
    base = alt.Chart(frame)
    x = alt.X("reference_group:N", sort=groups, title="reference (enrolled) group",
              axis=alt.Axis(labelAngle=0, orient="top", **_AXIS))
    y = alt.Y("probe_group:N", sort=groups, title="probe group", axis=alt.Axis(**_AXIS))
    tooltip = [alt.Tooltip("probe_group:N", title="probe group"), alt.Tooltip("reference_group:N", title="reference group"),
               alt.Tooltip("fmr:Q", format=".3~%", title="FMR"), alt.Tooltip("false_matches:Q", format=","),
               alt.Tooltip("n_nonmated:Q", format=",", title="non-mated comparisons")]
    cells = base.mark_rect(stroke="white", strokeWidth=2).encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("fmr_shown:Q", title="FMR",
                        scale=alt.Scale(type="log", scheme="orangered", domain=[lo, hi], nice=False),
                        legend=alt.Legend(format=".2~%", gradientLength=max(120, cell * len(groups) - 20), **_LEGEND)))
    zeros = base.transform_filter("!isValid(datum.fmr_shown)").mark_rect(color="#e6e6e6", stroke="white",
                                                                        strokeWidth=2).encode(x=x, y=y, tooltip=tooltip)
    text = base.mark_text(fontSize=12, lineBreak="\n", lineHeight=15).encode(
        x=x, y=y, text="label:N",
        color=alt.condition(f"isValid(datum.fmr_shown) && datum.fmr_shown > {mid!r}", alt.value("white"),
                            alt.value("#222")))
    overall = float(matrix["overall_fmr"])
    subtitle = [f"{_threshold_text(matrix)}; overall FMR {_pct(overall)}",
                "each cell: FMR of probes of one group against references of another (log colour scale), "
                "and its ratio to the overall FMR",
                "the diagonal holds each group's own FMR; grey: no false match"]
    return alt.layer(cells, zeros, text).properties(
        width=cell * len(groups), height=cell * len(groups),
        title=_title(title or "False match rate across groups", subtitle))


def fairness_frame(fair: xr.Dataset) -> pd.DataFrame:
    """The tidy frame :func:`fairness_chart` draws: one row per summary."""
    _check(fair, ("fdr", "fdr_interval", "garbe", "garbe_interval"), "fairness_chart",
           "bioxr.demographics.fairness_intervals")
    names = {"fdr": "FDR", "garbe": "GARBE", "fmr_gini": "Gini of group FMRs", "fnmr_gini": "Gini of group FNMRs"}
    rows = []
    for key, label in names.items():
        if key not in fair:
            continue
        lo, hi = (float(v) for v in fair[f"{key}_interval"].values)
        v = float(fair[key])
        rows.append({"summary": label, "key": key, "panel": "FDR (1 is fair)" if key == "fdr" else
                     "GARBE and its terms (0 is equitable)", "value": v, "lower": lo, "upper": hi,
                     "text": f"{v:.3f} [{lo:.3f}, {hi:.3f}]"})
    return pd.DataFrame(rows)


def fairness_chart(fair: xr.Dataset, *, title: str | None = None) -> alt.HConcatChart:
    """FDR and GARBE (with the Gini of the group FMRs and FNMRs) with their bootstrap intervals.

    Parameters
    ----------
    fair : xarray.Dataset
        From :func:`bioxr.demographics.fairness_intervals`.
    title : str, optional

    Returns
    -------
    altair.HConcatChart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import demographics as dm, plot
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 30}, n_samples=3, seed=0)
    >>> chart = plot.fairness_chart(dm.fairness_intervals(cube, threshold=0.0, n_replicates=200))
    >>> len(chart.hconcat)
    2
    """
    frame = fairness_frame(fair)
    level = float(fair.attrs.get("level", 0.95))
    panels = []
    for panel, part in frame.groupby("panel", sort=False):
        lo = float(min(part["lower"].min(), part["value"].min()))
        hi = float(max(part["upper"].max(), part["value"].max()))
        if panel.startswith("FDR"):
            domain = [max(0.0, min(lo, 1.0) - 0.1 * (1 - min(lo, 1.0)) - 1e-3), 1.0]
        else:
            domain = [0.0, min(1.0, hi * 1.15 + 1e-3)]
        scale = alt.Scale(domain=domain, nice=False, zero=False)
        y = alt.Y("summary:N", sort=part["summary"].tolist(), title=None, axis=alt.Axis(labelFontSize=12, labelLimit=200))
        base = alt.Chart(part)
        bars = base.mark_rule(strokeWidth=2.5, color=_BLUE).encode(x=alt.X("lower:Q", scale=scale), x2="upper:Q", y=y)
        dots = base.mark_point(filled=True, size=90, color=_BLUE, opacity=1).encode(
            x=alt.X("value:Q", scale=scale, title=None, axis=alt.Axis(format=".2f", tickCount=5, **_AXIS)), y=y,
            tooltip=[alt.Tooltip("summary:N"), alt.Tooltip("text:N", title=f"value [{level:.0%} interval]")])
        text = base.mark_text(align="left", dy=-12, dx=4, fontSize=11, color="#333").encode(
            x=alt.X("value:Q", scale=scale), y=y, text="text:N")
        panels.append(alt.layer(bars, dots, text).properties(
            width=300, height=44 * len(part), title=alt.TitleParams(panel, anchor="start", fontSize=14)))
    alpha = float(fair.attrs.get("alpha", 0.5))
    lines = [_threshold_text(fair) + f"; FMR weight alpha = {alpha:g}",
             f"bars: {level:.0%} percentile intervals of a subject bootstrap within groups "
             f"({int(fair.attrs.get('n_replicates', 0)):,} replicates)",
             "FDR: de Freitas Pereira & Marcel (2022); GARBE: Howard et al. (2022)"]
    return alt.hconcat(*panels, spacing=50).properties(title=_title(title or "Fairness summaries", lines))
