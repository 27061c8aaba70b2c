"""Verification charts: DET, ROC, error rates against the threshold, score histograms."""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from ._axes import (_AXIS, _LEGEND, _RATE_FORMAT, SIZE, _budget, _check_curve, _color, _counts_text, _det_axes,
                    _field, _finite_range, _log_axis, _order_rows, _points_text, _series_frame, _thin, _title)
from .uncertainty import _band_text, _rate_band_frame, _rate_band_layer

__all__ = ["det_chart", "roc_chart", "rates_chart", "score_histogram"]


def det_chart(det: xr.Dataset, *, eer: xr.Dataset | None = None, band: xr.Dataset | None = None,
              axes: str = "probit", limits: tuple[float, float] | None = None,
              title: str = "DET curve") -> alt.LayerChart:
    """The DET curve: FNMR against FMR on probit (normal-deviate) axes.

    Vega-Lite has no probit scale, so the rates are transformed with
    :func:`probit` and the axes carry explicit ticks labelled in percent.
    Points where FMR or FNMR is 0 or 1 lie at infinity on these axes and
    are not drawn; the subtitle says how many. One curve per combination of
    the kept dimensions, coloured by it.

    Parameters
    ----------
    det : xarray.Dataset
        From :func:`bioxr.verification.det_curve`: ``fmr`` and ``fnmr`` over
        ``(*kept, "threshold")``.
    eer : xarray.Dataset, optional, keyword-only
        From :func:`bioxr.verification.eer` (same kept dims): its point is
        marked and labelled with ``attrs["eer_method"]``.
    band : xarray.Dataset, optional, keyword-only
        From :func:`bioxr.bootstrap.bootstrap_curve`: ``fmr_interval`` and
        ``fnmr_interval`` over ``(threshold, bound)`` (and the curve's kept
        dims, if any). At each threshold of its grid the two intervals make
        a rectangle in which that threshold's operating point lies; the
        shaded band is the union of these rectangles, drawn under the curve.
        It is pointwise (each threshold at the band's level, not all at
        once). With ``fmr_band`` and ``fnmr_band`` (``simultaneous=True``)
        the simultaneous band, the whole curve at once, is drawn lighter
        around it. The subtitle says which band is which, the method,
        level and replicates.
    axes : {"probit", "loglog"}, keyword-only
        Normal-deviate axes (the DET convention) or logarithmic axes.
    limits : (float, float), optional, keyword-only
        Lowest and highest rate shown on both axes; default from the data.
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    See Also
    --------
    bioxr.verification.det_curve, bioxr.verification.eer, bioxr.bootstrap.bootstrap_curve

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> det = bioxr.verification.det_curve(cube)
    >>> chart = plot.det_chart(det, eer=bioxr.verification.eer(cube))
    >>> [layer["mark"]["type"] for layer in chart.to_dict()["layer"]]
    ['line', 'line', 'point', 'text']
    >>> band = bioxr.bootstrap.bootstrap_curve(cube, n_replicates=200, seed=1)
    >>> spec = plot.det_chart(det, band=band).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['line', 'line', 'line']
    >>> spec["title"]["subtitle"][-2:]
    ['Band: 95% pointwise effective-count binomial (FMR widened to the bootstrap-t) intervals of FMR and FNMR at each threshold', 'subject bootstrap: whole subjects resampled, 200 replicates']
    """
    if axes not in ("probit", "loglog"):
        raise ValueError(f"axes={axes!r}; choose 'probit' or 'loglog'.")
    _check_curve(det, ("fmr", "fnmr"), "det_chart")
    frame, series = _series_frame(det, ("fmr", "fnmr"))
    frame = frame.dropna(subset=["fmr", "fnmr"])
    frame = _order_rows(frame, series)
    geo = _det_axes(frame, ("fmr", "fnmr"), ("False match rate (FMR)", "False non-match rate (FNMR)"),
                    axes, limits, series)
    frame, n_off, n_all, domain, to_plot, (lo, hi) = geo.frame, geo.n_off, geo.n_all, geo.domain, geo.to_plot, geo.limits
    tooltip = [alt.Tooltip("threshold:Q", format=".4~g"), alt.Tooltip("fmr:Q", title="FMR", format=_RATE_FORMAT),
               alt.Tooltip("fnmr:Q", title="FNMR", format=_RATE_FORMAT)] + ([alt.Tooltip(f"{series}:N")] if series else [])
    color = _color(frame, series)
    x, y = geo.x, geo.y
    diag = pd.DataFrame({"x": [float(to_plot(lo)), float(to_plot(hi))], "y": [float(to_plot(lo)), float(to_plot(hi))]})
    layers = [alt.Chart(diag).mark_line(color="#aaaaaa", strokeDash=[4, 4], strokeWidth=1).encode(x=x, y=y)]
    if band is not None:
        polygon = _rate_band_frame(band, series)
        layers.append(_rate_band_layer(polygon, ("fmr", "fnmr"), x, y, series, frame, to_plot))
    layers.append(alt.Chart(frame).mark_line(clip=True, strokeWidth=2)
                  .encode(x=x, y=y, color=color, order="order:Q", tooltip=tooltip))
    method_text = ""
    if eer is not None:
        points, method_text = _eer_frame(eer, series, to_plot)
        labels = points.assign(label=[f"EER {v:.2%} ({method_text})" for v in points["eer"]])
        layers.append(alt.Chart(points).mark_point(filled=True, size=70, shape="diamond", stroke="black", strokeWidth=1, clip=True)
                      .encode(x=x, y=y, color=color, tooltip=[alt.Tooltip("eer:Q", title="EER", format=_RATE_FORMAT),
                                                              alt.Tooltip("threshold:Q", format=".4~g")]
                              + ([alt.Tooltip(f"{series}:N")] if series else [])))
        if len(points) <= 3:
            # label below-right of the point, or above-left when the point is in the right half
            zlo, zhi = domain[0]
            pos = ((np.log10(points["x"]) if axes == "loglog" else points["x"]) - zlo) / (zhi - zlo)
            right = bool(len(points) and float(pos.max()) > 0.55)
            layers.append(alt.Chart(labels).mark_text(align="right" if right else "left", dx=-10 if right else 10,
                                                      dy=-10 if right else 10, fontSize=13, fontWeight="bold")
                          .encode(x=x, y=y, text="label:N"))
    subtitle = [
        _counts_text(det),
        ("Normal-deviate (probit) axes" if axes == "probit" else "Logarithmic axes")
        + (f" · EER convention: {method_text}" if method_text else ""),
        " · ".join(t for t in (f"{n_off:,} point(s) at a rate of 0 or 100% are off the axes, not drawn" if n_off else "",
                               _points_text(len(frame), n_all)) if t),
        *(_band_text(band, "FMR and FNMR at each threshold") if band is not None else []),
    ]
    return alt.layer(*layers).properties(width=SIZE, height=SIZE, title=_title(title, subtitle))


def _eer_frame(eer: xr.Dataset, series: str | None, to_plot) -> tuple[pd.DataFrame, str]:
    if not isinstance(eer, xr.Dataset) or "eer" not in eer:
        raise TypeError("eer= takes the Dataset returned by bioxr.verification.eer.")
    method = str(eer.attrs.get("eer_method", "unknown method"))
    frame = eer[["eer", "threshold"]].to_dataframe().reset_index() if eer["eer"].dims else pd.DataFrame(
        {"eer": [float(eer["eer"])], "threshold": [float(eer["threshold"])]})
    frame = frame.rename(columns={c: _field(c) for c in frame.columns})
    kept = [_field(d) for d in eer["eer"].dims]
    if series and series not in frame and len(kept) > 1:
        frame[series] = frame[kept].astype(str).agg(", ".join, axis=1)
    if series and series not in frame:
        raise ValueError(f"eer= has dims {list(eer['eer'].dims)} but the curve is coloured by {series!r}: compute both with the same dim=.")
    frame = frame[(frame["eer"] > 0) & (frame["eer"] < 1)]
    frame = frame.assign(x=to_plot(frame["eer"]), y=to_plot(frame["eer"]))
    frame["threshold"] = frame["threshold"].where(np.isfinite(frame["threshold"]))
    return frame, method


def roc_chart(roc: xr.Dataset, *, band: xr.Dataset | None = None, xscale: str = "log",
              title: str = "ROC curve") -> alt.LayerChart:
    """The ROC curve: true match rate (1 - FNMR) against FMR.

    Parameters
    ----------
    roc : xarray.Dataset
        From :func:`bioxr.verification.roc_curve` (``tmr`` is computed from
        ``fnmr`` when absent, so a DET Dataset also works).
    band : xarray.Dataset, optional, keyword-only
        From :func:`bioxr.bootstrap.bootstrap_curve`: shaded under the curve
        as in :func:`det_chart`, the union over thresholds of the rectangles
        (FMR interval) x (TMR interval, from the FNMR interval).
    xscale : {"log", "linear"}, keyword-only
        FMR axis scale; on a log axis points with FMR 0 are not drawn (the
        subtitle says how many).
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    See Also
    --------
    bioxr.verification.roc_curve, bioxr.bootstrap.bootstrap_curve

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> roc = bioxr.verification.roc_curve(bioxr.simulate.gaussian(n_subjects=40, seed=2))
    >>> curve = plot.roc_chart(roc).to_dict()["layer"][-1]
    >>> curve["mark"]["type"], curve["encoding"]["x"]["scale"]["type"]
    ('line', 'log')
    """
    if xscale not in ("log", "linear"):
        raise ValueError(f"xscale={xscale!r}; choose 'log' or 'linear'.")
    _check_curve(roc, ("fmr", "fnmr"), "roc_chart")
    if "tmr" not in roc:
        roc = roc.assign(tmr=1 - roc["fnmr"])
    frame, series = _series_frame(roc, ("fmr", "tmr"))
    frame = _order_rows(frame.dropna(subset=["fmr", "tmr"]), series)
    n_off = 0
    if xscale == "log":
        off = frame["fmr"] <= 0
        n_off = int(off.sum())
        frame = frame[~off]
    n_all = len(frame)
    lo = float(frame["fmr"].min()) if xscale == "log" and len(frame) else 0.0
    if xscale == "log":
        frame = frame.assign(lx=np.log10(frame["fmr"]))
        frame = _thin(frame, "lx", "tmr", by=series, domain=((np.log10(lo), 0.0), (0.0, 1.0)),
                      max_points=_budget(frame, series)).drop(columns="lx")
        xsc = alt.Scale(type="log", domain=[lo, 1], nice=False)
    else:
        frame = _thin(frame, "fmr", "tmr", by=series, domain=((0.0, 1.0), (0.0, 1.0)), max_points=_budget(frame, series))
        xsc = alt.Scale(domain=[0, 1])
    subtitle = [_counts_text(roc),
                " · ".join(t for t in (f"{n_off:,} point(s) with FMR = 0 are off the log axis, not drawn" if n_off else "",
                                       _points_text(len(frame), n_all)) if t)]
    tooltip = [alt.Tooltip("threshold:Q", format=".4~g"), alt.Tooltip("fmr:Q", title="FMR", format=_RATE_FORMAT),
               alt.Tooltip("tmr:Q", title="TMR", format=_RATE_FORMAT)] + ([alt.Tooltip(f"{series}:N")] if series else [])
    x = alt.X("fmr:Q", scale=xsc, axis=_log_axis("False match rate (FMR)", max(lo, 1e-12), 1.0) if xscale == "log"
              else alt.Axis(format="~%", title="False match rate (FMR)", **_AXIS))
    y = alt.Y("tmr:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="~%", title="True match rate (1 − FNMR)", **_AXIS))
    layers = []
    if band is not None:
        polygon = _rate_band_frame(band, series, tmr=True)
        if xscale == "log":
            polygon = polygon.assign(fmr=polygon["fmr"].clip(lower=max(lo, 1e-12) / 10))  # FMR 0: off the log axis
        layers.append(_rate_band_layer(polygon, ("fmr", "tmr"), x, y, series, frame))
        subtitle += _band_text(band, "FMR and TMR at each threshold")
    layers.append(alt.Chart(frame).mark_line(strokeWidth=2, clip=True).encode(
        x=x, y=y, color=_color(frame, series), order="order:Q", tooltip=tooltip))
    return alt.layer(*layers).properties(width=SIZE, height=SIZE, title=_title(title, subtitle))


def rates_chart(det: xr.Dataset, *, eer: xr.Dataset | None = None, yscale: str = "linear",
                title: str = "Error rates against the threshold") -> alt.LayerChart:
    """FMR and FNMR against the decision threshold.

    Parameters
    ----------
    det : xarray.Dataset
        From :func:`bioxr.verification.det_curve` (or ``error_rates``):
        ``fmr``, ``fnmr`` over ``(*kept, "threshold")``. Kept dims draw one
        dashed line style each. Use ``det_curve(cube, points="all")``: a
        curve of DET corners only lacks the FMR between them, which is then
        drawn as straight lines (the subtitle says so).
    eer : xarray.Dataset, optional, keyword-only
        From :func:`bioxr.verification.eer` without kept dims: a vertical
        rule marks its threshold.
    yscale : {"linear", "log"}, keyword-only
        On a log axis rates of 0 are not drawn.
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> det = bioxr.verification.det_curve(bioxr.simulate.gaussian(n_subjects=40, seed=2))
    >>> spec = plot.rates_chart(det).to_dict()
    >>> spec["layer"][0]["encoding"]["color"]["field"]
    'rate'
    """
    if yscale not in ("linear", "log"):
        raise ValueError(f"yscale={yscale!r}; choose 'linear' or 'log'.")
    _check_curve(det, ("fmr", "fnmr"), "rates_chart")
    frame, series = _series_frame(det, ("fmr", "fnmr"))
    frame = _order_rows(frame, series)
    n_sentinel = int(frame["threshold"].isna().sum())
    frame = frame.dropna(subset=["threshold"])
    ids = ["threshold", "order"] + ([series] if series else [])
    long = frame.melt(id_vars=ids, value_vars=["fmr", "fnmr"], var_name="rate", value_name="value").dropna(subset=["value"])
    long["rate"] = long["rate"].map({"fmr": "FMR", "fnmr": "FNMR"})
    if yscale == "log":
        long = long[long["value"] > 0]
    key = "curve"
    long[key] = long["rate"] + ("" if series is None else " " + long[series].astype(str))
    n_all = len(long)
    ylo = float(long["value"].min()) if yscale == "log" and len(long) else 0.0
    ycol = "value"
    if yscale == "log":
        long = long.assign(lv=np.log10(long["value"]))
        ycol = "lv"
    long = _thin(long, "threshold", ycol, by=key, max_points=_budget(long, key),
                 domain=(_finite_range(long["threshold"].to_numpy(float)),
                         (np.log10(ylo), 0.0) if yscale == "log" else (0.0, 1.0)))
    long = long.drop(columns=[c for c in ("lv",) if c in long])
    yscale_ = alt.Scale(type="log", domain=[ylo, 1], nice=False) if yscale == "log" else alt.Scale(domain=[0, 1])
    enc = dict(
        x=alt.X("threshold:Q", scale=alt.Scale(zero=False),
                axis=alt.Axis(title=f"Threshold ({det.attrs.get('score_kind', 'score')} score)", **_AXIS)),
        y=alt.Y("value:Q", scale=yscale_, axis=alt.Axis(format="~%", title="Error rate", **_AXIS)),
        color=alt.Color("rate:N", title="rate", scale=alt.Scale(domain=["FMR", "FNMR"], range=["#d62728", "#1f77b4"]),
                        legend=alt.Legend(**_LEGEND)),
        detail="curve:N",
        order="order:Q",
        tooltip=[alt.Tooltip("threshold:Q", format=".4~g"), alt.Tooltip("rate:N"), alt.Tooltip("value:Q", format=_RATE_FORMAT)]
        + ([alt.Tooltip(f"{series}:N")] if series else []),
    )
    if series is not None:
        enc["strokeDash"] = alt.StrokeDash(f"{series}:N", title=series, legend=alt.Legend(**_LEGEND))
    corners = det.attrs.get("points") == "corners"
    # similarity: the rate at threshold t_i holds on (t_i-1, t_i]; distance: on [t_i, t_i+1)
    step = "step-before" if det.attrs.get("score_kind", "similarity") == "similarity" else "step-after"
    layers = [alt.Chart(long).mark_line(strokeWidth=2, clip=True, interpolate="linear" if corners else step)
              .encode(**enc)]
    if eer is not None:
        points, method = _eer_frame(eer, None if not eer["eer"].dims else series, np.asarray)
        points = points.dropna(subset=["threshold"]).assign(label=lambda f: [f"EER threshold ({method})"] * len(f))
        layers.append(alt.Chart(points).mark_rule(color="#444", strokeDash=[3, 3]).encode(x="threshold:Q"))
        if len(points) == 1:
            layers.append(alt.Chart(points).mark_text(align="left", dx=4, y=8, fontSize=12, color="#444")
                          .encode(x="threshold:Q", text="label:N"))
    subtitle = [_counts_text(det), det.attrs.get("decision_rule", "").capitalize(),
                "Only the DET corners are known: FMR is drawn straight between them (det_curve(points='all') "
                "gives every threshold)" if corners else "",
                " · ".join(t for t in ("The sentinel threshold ±inf (nothing accepted) is not drawn"
                                       if n_sentinel else "", _points_text(len(long), n_all)) if t)]
    return alt.layer(*layers).properties(width=SIZE + 140, height=SIZE * 2 // 3, title=_title(title, subtitle))


def score_histogram(cube: xr.DataArray, *, threshold=None, bins: int = 60,
                    title: str = "Mated and non-mated scores") -> alt.LayerChart:
    """Normalised histograms of mated and non-mated scores, with threshold rules.

    Non-mated comparisons usually outnumber mated ones by far, so each
    histogram is a density (its area is 1) and the counts are in the
    subtitle. NaN cells and self comparisons are not comparisons and are
    left out, as everywhere in bioxr.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list.
    threshold : float or mapping of str to float, optional, keyword-only
        Thresholds drawn as vertical rules; a mapping labels each one, e.g.
        ``{"EER (rocch)": 1.2}``. Infinite values are skipped.
    bins : int, keyword-only
        Number of bins shared by both histograms.
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> cube = bioxr.simulate.gaussian(n_subjects=30, seed=4)
    >>> spec = plot.score_histogram(cube, threshold=1.5, bins=20).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['rect', 'rule', 'text']
    """
    from .._core import split_scores

    if int(bins) < 1:
        raise ValueError("bins must be a positive integer.")
    m_scores, n_scores, kind = split_scores(cube)
    both = np.concatenate([m_scores, n_scores])
    edges = np.histogram_bin_edges(both, bins=int(bins))
    rows = []
    for label, scores in (("mated", m_scores), ("non-mated", n_scores)):
        counts, _ = np.histogram(scores, bins=edges)
        density = counts / (scores.size * np.diff(edges)) if scores.size else counts * 0.0
        rows.append(pd.DataFrame({"start": edges[:-1], "end": edges[1:], "density": density, "count": counts,
                                  "comparison": label}))
    frame = pd.concat(rows, ignore_index=True)
    layers = [
        alt.Chart(frame).mark_rect(opacity=0.5).encode(
            x=alt.X("start:Q", scale=alt.Scale(zero=False, nice=False, domain=[float(edges[0]), float(edges[-1])]),
                    axis=alt.Axis(title=f"Score ({kind}: {'higher' if kind == 'similarity' else 'lower'} is more alike)",
                                  **_AXIS)),
            x2="end:Q",
            y=alt.Y("density:Q", axis=alt.Axis(title="Density", **_AXIS)),
            y2=alt.datum(0),
            color=alt.Color("comparison:N", title="comparison", legend=alt.Legend(**_LEGEND),
                            scale=alt.Scale(domain=["mated", "non-mated"], range=["#1f77b4", "#d62728"])),
            tooltip=[alt.Tooltip("comparison:N"), alt.Tooltip("start:Q", format=".4~g"), alt.Tooltip("end:Q", format=".4~g"),
                     alt.Tooltip("count:Q", format=","), alt.Tooltip("density:Q", format=".3~g")],
        )
    ]
    if threshold is not None:
        marks = threshold if isinstance(threshold, Mapping) else {"threshold": threshold}
        rules = pd.DataFrame({"label": [str(k) for k in marks], "threshold": [float(v) for v in marks.values()]})
        rules = rules[np.isfinite(rules["threshold"])].reset_index(drop=True)
        rules["label"] = [f"{lab} = {t:.4g}" for lab, t in zip(rules["label"], rules["threshold"])]
        rules["dy"] = np.arange(len(rules)) * 14 + 8
        layers.append(alt.Chart(rules).mark_rule(color="#333", strokeDash=[4, 3], strokeWidth=1.5).encode(x="threshold:Q"))
        layers.append(alt.Chart(rules).mark_text(align="left", dx=4, fontSize=12, color="#333").encode(
            x="threshold:Q", y=alt.Y("dy:Q", scale=None, axis=None),
            text="label:N"))
    subtitle = [f"{m_scores.size:,} mated and {n_scores.size:,} non-mated comparisons in {int(bins)} shared bins",
                "Each histogram is a density (area 1), so both show whatever their counts"]
    return alt.layer(*layers).properties(width=SIZE + 140, height=SIZE * 2 // 3, title=_title(title, subtitle))

