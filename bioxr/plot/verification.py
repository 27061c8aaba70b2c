"""Verification charts: DET, ROC, error rates against the threshold, score histograms."""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from ._axes import (_AXIS, _LEGEND, _RATE_FORMAT, DET_SIZE, SIZE, ResultTypeError, _budget, _check_curve, _color,
                    _counts_text, _describe, _det_axes, _field, _finite_range, _log_axis, _off_text, _order_rows,
                    _points_text, _series_frame, _snap_log, _thin, _shared, _title)
from .uncertainty import _band_text, _rate_band_frame, _rate_band_layer

__all__ = ["det_chart", "roc_chart", "rates_chart", "score_histogram"]


def det_chart(det: xr.Dataset, *, eer: xr.Dataset | None = None, band: xr.Dataset | None = None,
              axes: str = "probit", limits=None, fmr_targets=None, size: int = DET_SIZE,
              title: str = "DET curve") -> alt.LayerChart:
    """The DET curve: FNMR against FMR on probit (normal-deviate) axes.

    Vega-Lite has no probit scale, so the rates are transformed with
    :func:`probit` and the axes carry explicit ticks labelled in percent:
    both ends, every decade, then 2s and 5s inside the decades where their
    labels fit. Each axis is fitted to its own data (the rates the curve
    takes where both rates are low, with a margin), so a curve whose FNMR
    never falls below 0.2% does not get an axis down to 0.0005%. Points
    where FMR or FNMR is 0 or 1 lie at infinity on these axes and are not
    drawn (the chart's ``description`` says how many). One curve per
    combination of the kept dimensions, coloured by it, with a legend.

    Parameters
    ----------
    det : xarray.Dataset
        From :func:`bioxr.verification.det_curve`: ``fmr`` and ``fnmr`` over
        ``(*kept, "threshold")``.
    eer : xarray.Dataset, optional, keyword-only
        From :func:`bioxr.verification.eer` (same kept dims): each series'
        EER is marked by a large black diamond on the diagonal, labelled with
        the series' name and value, beside the curve; the convention
        (``attrs["eer_method"]``) is in the subtitle.
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
    limits : optional, keyword-only
        Fixed axes instead of fitted ones: ``(low, high)`` rates for both
        axes, ``((x_low, x_high), (y_low, y_high))`` for each (``None`` for
        a fitted one), or ``{"x": (low, high), "y": (low, high)}``.
    fmr_targets : sequence of float, optional, keyword-only
        Operating points: at each target FMR a dashed vertical line, labelled
        with the target, and on each curve a square where the most lenient
        threshold with FMR at or below the target lies (the convention of
        :func:`bioxr.verification.fnmr_at_fmr`), labelled with its FNMR.
        Targets below one non-mated comparison are left out (the subtitle
        says so).
    size : int, keyword-only
        Width and height of the plotting area in pixels (default 520).
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    Raises
    ------
    TypeError
        When ``det`` (or ``eer``) is the result of another function; the
        message names the function whose result is expected.

    See Also
    --------
    bioxr.verification.det_curve, bioxr.verification.eer, bioxr.bootstrap.bootstrap_curve

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> det = bioxr.verification.det_curve(cube)
    >>> chart = plot.det_chart(det, eer=bioxr.verification.eer(cube), fmr_targets=[0.01])
    >>> [layer["mark"]["type"] for layer in chart.to_dict()["layer"]]
    ['line', 'line', 'point', 'text', 'rule', 'text', 'point', 'text']
    >>> band = bioxr.bootstrap.bootstrap_curve(cube, n_replicates=200, seed=1)
    >>> spec = plot.det_chart(det, band=band).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['line', 'line', 'line']
    >>> " ".join(spec["title"]["subtitle"]).split("Band: ")[1]
    '95% pointwise interval of FMR and FNMR at each threshold (effective-count binomial; FMR on the Korn-Graubard count for crossed subjects) Subject bootstrap: whole subjects resampled, 200 replicates'
    """
    if axes not in ("probit", "loglog"):
        raise ValueError(f"axes={axes!r}; choose 'probit' or 'loglog'.")
    _check_curve(det, ("fmr", "fnmr"), "det_chart")
    size = int(size)
    if size < 100:
        raise ValueError(f"size={size}: give the side of the plotting area in pixels (at least 100).")
    frame, series = _series_frame(det, ("fmr", "fnmr"))
    frame = frame.dropna(subset=["fmr", "fnmr"])
    frame = _order_rows(frame, series)
    ops, skipped = _operating_points(frame, det, series, fmr_targets)
    eer_points, method_text = (_eer_frame(eer, series, np.asarray) if eer is not None else (None, ""))
    show_x = [*(eer_points["eer"] if eer_points is not None else []), *(ops["target"] if ops is not None else [])]
    show_y = [*(eer_points["eer"] if eer_points is not None else []), *(ops["fnmr"] if ops is not None else [])]
    geo = _det_axes(frame, ("fmr", "fnmr"), ("False match rate (FMR)", "False non-match rate (FNMR)"),
                    axes, limits, series, size=size, show=(show_x, show_y))
    frame, to_plot = geo.frame, geo.to_plot
    (lo, hi), (ylo, yhi) = geo.limits, geo.y_limits
    tooltip = [alt.Tooltip("threshold:Q", format=".4~g"), alt.Tooltip("fmr:Q", title="FMR", format=_RATE_FORMAT),
               alt.Tooltip("fnmr:Q", title="FNMR", format=_RATE_FORMAT)] + ([alt.Tooltip(f"{series}:N")] if series else [])
    color = _color(frame, series)
    x, y = geo.x, geo.y
    dlo, dhi = max(lo, ylo), min(hi, yhi)
    diag = pd.DataFrame({"x": [float(to_plot(dlo)), float(to_plot(dhi))], "y": [float(to_plot(dlo)), float(to_plot(dhi))]})
    layers = [alt.Chart(diag).mark_line(color="#aaaaaa", strokeDash=[4, 4], strokeWidth=1, clip=True).encode(x=x, y=y)]
    if band is not None:
        polygon = _rate_band_frame(band, series)
        layers.append(_rate_band_layer(polygon, ("fmr", "fnmr"), x, y, series, frame, to_plot))
    layers.append(alt.Chart(frame).mark_line(clip=True, strokeWidth=2)
                  .encode(x=x, y=y, color=color, order="order:Q", tooltip=tooltip))
    place = _Placer(geo.domain, size, axes)
    if eer_points is not None and len(eer_points):
        points = eer_points.assign(x=to_plot(eer_points["eer"]), y=to_plot(eer_points["eer"]))
        layers.append(alt.Chart(points).mark_point(filled=True, size=180, shape="diamond", color="black",
                                                   stroke="white", strokeWidth=1.5, opacity=1, clip=True)
                      .encode(x=x, y=y, tooltip=[alt.Tooltip("eer:Q", title="EER", format=_RATE_FORMAT),
                                                 alt.Tooltip("threshold:Q", format=".4~g")]
                              + ([alt.Tooltip(f"{series}:N")] if series else [])))
        if len(points) <= 4:
            named = series is not None
            texts = [(f"{row[series]}: " if named else "") + f"EER {row['eer']:.2%}"
                     + ("" if named else f" ({method_text})") for _, row in points.iterrows()]
            labels = place.eer_labels(points.assign(label=texts))
            for side in ("right", "left"):  # Vega-Lite has no align channel: a text layer per alignment
                part = labels[labels["align"] == side].drop(columns="align")
                if len(part):
                    layers.append(alt.Chart(part).mark_text(align=side, fontSize=13, fontWeight="bold", color="black")
                                  .encode(x=x, y=y, text="label:N", xOffset=alt.XOffset("dx:Q", scale=None),
                                          yOffset=alt.YOffset("dy:Q", scale=None)))
    if ops is not None and len(ops):
        ops = ops.assign(x=to_plot(ops["fmr"]), y=to_plot(ops["fnmr"]))
        rules = ops.drop_duplicates("target").assign(xt=lambda f: to_plot(f["target"]))
        rules = rules.assign(label=[f"FMR {_pct(t)}" for t in rules["target"]],
                             ybottom=float(to_plot(ylo)))
        layers.append(alt.Chart(rules).mark_rule(color="#555", strokeDash=[2, 3], strokeWidth=1.2)
                      .encode(x=alt.X("xt:Q", scale=x["scale"])))
        # the target's name at the foot of its line: the low-FMR, low-FNMR corner is where no curve goes
        layers.append(alt.Chart(rules).mark_text(align="left", baseline="bottom", dx=4, dy=-4, fontSize=12,
                                                 color="#333")
                      .encode(x=alt.X("xt:Q", scale=x["scale"]), y=alt.Y("ybottom:Q", scale=y["scale"]),
                              text="label:N"))
        layers.append(alt.Chart(ops).mark_point(shape="square", size=90, filled=True, fill="white", stroke="black",
                                                strokeWidth=2, opacity=1, clip=True)
                      .encode(x=x, y=y, tooltip=[alt.Tooltip("target:Q", title="FMR target", format=_RATE_FORMAT),
                                                 alt.Tooltip("fmr:Q", title="FMR", format=_RATE_FORMAT),
                                                 alt.Tooltip("fnmr:Q", title="FNMR", format=_RATE_FORMAT),
                                                 alt.Tooltip("threshold:Q", format=".4~g")]
                              + ([alt.Tooltip(f"{series}:N")] if series else [])))
        if len(ops) <= 12:
            texts = [(f"{row[series]}: " if series else "FNMR ") + f"{row['fnmr']:.2%}" for _, row in ops.iterrows()]
            labels = place.point_labels(ops.assign(label=texts))
            for side in ("left", "right"):
                part = labels[labels["align"] == side].drop(columns="align")
                if len(part):
                    layers.append(alt.Chart(part).mark_text(align=side, baseline="bottom", fontSize=12, color="black")
                                  .encode(x=x, y=y, text="label:N"))
    subtitle = [
        _counts_text(det),
        ("Normal-deviate (probit) axes" if axes == "probit" else "Logarithmic axes")
        + (f" · EER convention: {method_text} (black diamond)" if method_text else ""),
        _targets_text(ops, skipped, det),
        *(_band_text(band, "FMR and FNMR at each threshold") if band is not None else []),
    ]
    description = " ".join(t for t in (f"{title}: FNMR against FMR.", _off_text(geo.n_off),
                                       _points_text(len(frame), geo.n_all)) if t)
    width = size + (160 if series else 0)
    return _shared(alt.layer(*layers).properties(width=size, height=size, title=_title(title, subtitle, width),
                                         description=description), {"limits": [[lo, hi], [ylo, yhi]]})


def _pct(p: float) -> str:
    """A rate in percent with as many digits as it needs: 1%, 0.1%, 0.0001%, 12.5%."""
    return f"{np.format_float_positional(float(f'{float(p) * 100:.4g}'), trim='-')}%"


def _operating_points(frame: pd.DataFrame, det: xr.Dataset, series: str | None, fmr_targets):
    """Per series and target FMR: the curve's point at the most lenient threshold with FMR <= target."""
    if fmr_targets is None:
        return None, []
    from .._core.checks import check_targets

    targets = sorted({float(t) for t in check_targets(fmr_targets, "fmr_targets", closed=False)}, reverse=True)
    n_non = int(det["n_nonmated"].min()) if "n_nonmated" in det else None
    kept = [t for t in targets if n_non is None or t * n_non >= 1]
    skipped = [t for t in targets if t not in kept]
    rows = []
    parts = [(None, frame)] if series is None else list(frame.groupby(series, sort=False))
    for name, part in parts:
        for t in kept:
            ok = part[part["fmr"] <= t * (1 + 1e-12)]
            if ok.empty:
                continue
            best = ok.loc[ok["fnmr"].idxmin()]
            if not 0 < float(best["fnmr"]) < 1 or not 0 < float(best["fmr"]) < 1:
                continue  # at infinity on probit axes
            row = {"target": t, "fmr": float(best["fmr"]), "fnmr": float(best["fnmr"]),
                   "threshold": float(best["threshold"]) if np.isfinite(best["threshold"]) else None}
            if series is not None:
                row[series] = name
            rows.append(row)
    return pd.DataFrame(rows, columns=["target", "fmr", "fnmr", "threshold"] + ([series] if series else [])), skipped


def _targets_text(ops, skipped, det) -> str:
    if ops is None:
        return ""
    shown = sorted(set(ops["target"]), reverse=True)
    text = ""
    if shown:
        text = ("White squares: FNMR at FMR " + " and ".join(_pct(t) for t in shown)
                + " (the most lenient threshold with FMR ≤ target)")
    if skipped:
        n = int(det["n_nonmated"].min())
        text += (" · " if text else "") + ("FMR " + ", ".join(_pct(t) for t in skipped)
                                          + f" not marked: below 1 in {n:,} non-mated comparisons")
    return text


class _Placer:
    """Label positions that keep the EER and operating-point labels off the curves and apart.

    Offsets are worked out in pixels and turned back into plotted
    coordinates (Vega-Lite's text marks take one ``dx``/``dy`` per layer).
    """

    def __init__(self, domain, size: int, axes: str):
        (self.x0, self.x1), (self.y0, self.y1) = domain
        self.size = size
        self.log = axes == "loglog"

    def _px(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = frame["x"].to_numpy(float), frame["y"].to_numpy(float)
        if self.log:
            xs, ys = np.log10(xs), np.log10(ys)
        return ((xs - self.x0) / (self.x1 - self.x0) * self.size,
                (1 - (ys - self.y0) / (self.y1 - self.y0)) * self.size)

    def _moved(self, frame: pd.DataFrame, px: np.ndarray, py: np.ndarray) -> pd.DataFrame:
        xs = self.x0 + px / self.size * (self.x1 - self.x0)
        ys = self.y0 + (1 - py / self.size) * (self.y1 - self.y0)
        if self.log:
            xs, ys = 10.0 ** xs, 10.0 ** ys
        return frame.assign(x=xs, y=ys)

    def eer_labels(self, points: pd.DataFrame) -> pd.DataFrame:
        """The best (lowest) EER labelled below-left of its point, inside the curve; the others above-right.

        A label that would leave the plotting area goes to the other side.
        Labels on the same side are kept 16 px apart.
        """
        points = points.sort_values("eer").reset_index(drop=True)
        px, py = self._px(points)
        align, lx, ly = [], px.copy(), py.copy()
        for k, label in enumerate(points["label"]):
            width = _text_px(label, 13)
            below_left = px[k] - 12 - width >= 0 and py[k] + 22 <= self.size
            above_right = px[k] + 12 + width <= self.size + 40 and py[k] - 14 >= 0
            if (k == 0 and below_left) or not above_right:
                align.append("right")
                lx[k], ly[k] = px[k] - 12, py[k] + 20
            else:
                align.append("left")
                lx[k], ly[k] = px[k] + 12, py[k] - 12
        for side in ("left", "right"):
            idx = sorted((k for k, a in enumerate(align) if a == side), key=lambda k: ly[k], reverse=True)
            for a, b in zip(idx, idx[1:]):
                if ly[a] - ly[b] < 16:
                    ly[b] = ly[a] - 16
        return self._moved(points, lx, ly).assign(align=align)

    def point_labels(self, ops: pd.DataFrame) -> pd.DataFrame:
        """Operating-point labels above-right of their squares, off the curve, kept 15 px apart at each target."""
        ops = ops.reset_index(drop=True)
        px, py = self._px(ops)
        lx, ly = px + 9, py - 9
        for _, idx in ops.groupby("target").groups.items():
            idx = sorted(idx, key=lambda k: ly[k])
            for a, b in zip(idx, idx[1:]):
                if ly[b] - ly[a] < 15:
                    ly[b] = ly[a] + 15
        # too near the top: below-left instead, inside the curve
        high = ly < 16
        align = np.where(high, "right", "left")
        lx, ly = np.where(high, px - 9, lx), np.where(high, py + 20, ly)
        return self._moved(ops, lx, ly).assign(align=align)


def _text_px(text: str, font: float = 12) -> float:
    """Approximate width of ``text`` in pixels (Liberation Sans / Helvetica metrics)."""
    narrow, wide = set(".,:;il1I()[] "), set("%MWmw")
    units = sum(0.3 if c in narrow else 0.9 if c in wide else 0.56 for c in str(text))
    return units * font


def _eer_frame(eer: xr.Dataset, series: str | None, to_plot) -> tuple[pd.DataFrame, str]:
    if not isinstance(eer, xr.Dataset) or "eer" not in eer or "threshold" not in eer:
        raise ResultTypeError("eer= expects the result of bioxr.verification.eer (eer and its threshold); "
                              f"it was given {_describe(eer)}.")
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


def roc_chart(roc: xr.Dataset, *, band: xr.Dataset | None = None, xscale: str = "log", limits=None,
              size: int = DET_SIZE, title: str = "ROC curve") -> alt.LayerChart:
    """The ROC curve: true match rate (1 - FNMR) against FMR.

    Both axes are fitted to the curve: the FMR axis (log) from the power
    of ten below the smallest non-zero FMR to 100%, the TMR axis from a
    round rate below the lowest TMR drawn (a margin included) to 100%.

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
        chart's ``description`` says how many).
    limits : optional, keyword-only
        Fixed axes: ``((fmr_low, fmr_high), (tmr_low, tmr_high))``, either
        pair ``None`` for a fitted axis, or a mapping with keys ``"x"`` and
        ``"y"``.
    size : int, keyword-only
        Side of the plotting area in pixels.
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
    >>> curve["encoding"]["y"]["scale"]["domain"]  # fitted: the lowest TMR drawn, with a margin, to 100%
    [0.2, 1.0]
    """
    if xscale not in ("log", "linear"):
        raise ValueError(f"xscale={xscale!r}; choose 'log' or 'linear'.")
    _check_curve(roc, ("fmr", "fnmr"), "roc_chart", "bioxr.verification.roc_curve")
    fixed_x, fixed_y = _roc_limits(limits)
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
    if xscale == "log":
        smallest = float(frame["fmr"].min()) if len(frame) else 1e-3
        lo, xhi = fixed_x or (10.0 ** np.floor(np.log10(smallest) + 1e-9), 1.0)
    else:
        lo, xhi = fixed_x or (0.0, 1.0)
    shown = frame[(frame["fmr"] >= lo) & (frame["fmr"] <= xhi)]["tmr"]
    if fixed_y:
        ylo, yhi = fixed_y
    else:
        low = float(shown.min()) if len(shown) else 0.0
        low -= _MARGIN_ROC * max(1.0 - low, 0.05)
        step = 0.1 if 1 - low > 0.3 else 0.05 if 1 - low > 0.1 else 0.01
        ylo, yhi = max(0.0, float(np.floor(low / step + 1e-9) * step)), 1.0
        ylo = round(ylo, 6)
    if xscale == "log":
        frame = frame.assign(lx=np.log10(frame["fmr"]))
        frame = _thin(frame, "lx", "tmr", by=series, domain=((np.log10(lo), np.log10(xhi)), (ylo, yhi)),
                      max_points=_budget(frame, series)).drop(columns="lx")
        xsc = alt.Scale(type="log", domain=[lo, xhi], nice=False)
    else:
        frame = _thin(frame, "fmr", "tmr", by=series, domain=((lo, xhi), (ylo, yhi)), max_points=_budget(frame, series))
        xsc = alt.Scale(domain=[lo, xhi], nice=False)
    subtitle = [_counts_text(roc)]
    description = " ".join(t for t in (f"{title}: true match rate against FMR.",
                                       f"{n_off:,} points with FMR 0 lie at minus infinity on the log axis and are "
                                       "not drawn." if n_off else "", _points_text(len(frame), n_all)) if t)
    tooltip = [alt.Tooltip("threshold:Q", format=".4~g"), alt.Tooltip("fmr:Q", title="FMR", format=_RATE_FORMAT),
               alt.Tooltip("tmr:Q", title="TMR", format=_RATE_FORMAT)] + ([alt.Tooltip(f"{series}:N")] if series else [])
    x = alt.X("fmr:Q", scale=xsc, axis=_log_axis("False match rate (FMR)", lo, xhi, size) if xscale == "log"
              else alt.Axis(format="~%", title="False match rate (FMR)", **_AXIS))
    yticks = [round(v, 6) for v in np.arange(ylo, yhi + 1e-9, 0.1 if yhi - ylo > 0.3 else 0.05 if yhi - ylo > 0.1
                                             else 0.01)]
    y = alt.Y("tmr:Q", scale=alt.Scale(domain=[ylo, yhi], nice=False),
              axis=alt.Axis(format="~%", title="True match rate (1 − FNMR)", values=yticks, **_AXIS))
    layers = []
    if band is not None:
        polygon = _rate_band_frame(band, series, tmr=True)
        if xscale == "log":
            polygon = polygon.assign(fmr=polygon["fmr"].clip(lower=max(lo, 1e-12) / 10))  # FMR 0: off the log axis
        layers.append(_rate_band_layer(polygon, ("fmr", "tmr"), x, y, series, frame))
        subtitle += _band_text(band, "FMR and TMR at each threshold")
    layers.append(alt.Chart(frame).mark_line(strokeWidth=2, clip=True).encode(
        x=x, y=y, color=_color(frame, series), order="order:Q", tooltip=tooltip))
    return _shared(alt.layer(*layers).properties(width=size, height=size, description=description,
                                         title=_title(title, subtitle, size + (160 if series else 0))), {"limits": [[lo, xhi], [ylo, yhi]]})


_MARGIN_ROC = 0.04


def _roc_limits(limits):
    if limits is None:
        return None, None
    if isinstance(limits, Mapping):
        pair = (limits.get("x"), limits.get("y"))
    else:
        pair = tuple(limits)
        if len(pair) != 2 or not all(v is None or np.ndim(v) == 1 for v in pair):
            raise ValueError(f"limits={limits!r}: give ((fmr_low, fmr_high), (tmr_low, tmr_high)), None for a fitted one.")
    out = []
    for v in pair:
        if v is None:
            out.append(None)
            continue
        lo, hi = (float(t) for t in v)
        if not 0 <= lo < hi <= 1:
            raise ValueError(f"limits={limits!r}: give rates with 0 <= low < high <= 1.")
        out.append((lo, hi))
    return tuple(out)


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
    if yscale == "log":
        ylo = _snap_log(ylo, 1.0, steps=(1,))[0]
    yscale_ = alt.Scale(type="log", domain=[ylo, 1], nice=False) if yscale == "log" else alt.Scale(domain=[0, 1])
    enc = dict(
        x=alt.X("threshold:Q", scale=alt.Scale(zero=False),
                axis=alt.Axis(title=f"Threshold ({det.attrs.get('score_kind', 'score')} score)", **_AXIS)),
        y=alt.Y("value:Q", scale=yscale_, axis=_log_axis("Error rate", ylo, 1.0, SIZE * 2 // 3) if yscale == "log"
                else alt.Axis(format="~%", title="Error rate", **_AXIS)),
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
                "gives every threshold)" if corners else ""]
    description = " ".join(t for t in (f"{title}: FMR and FNMR against the threshold.",
                                       "The sentinel threshold ±inf (nothing accepted) is not drawn." if n_sentinel
                                       else "", _points_text(len(long), n_all)) if t)
    return alt.layer(*layers).properties(width=SIZE + 140, height=SIZE * 2 // 3, description=description,
                                         title=_title(title, subtitle, SIZE + 220))


def score_histogram(cube: xr.DataArray, *, threshold=None, bins="auto", yscale: str = "auto",
                    title: str = "Mated and non-mated scores") -> alt.LayerChart:
    """Normalised histograms of mated and non-mated scores, with threshold rules.

    Non-mated comparisons usually outnumber mated ones by far, so each
    histogram is a density (its area is 1) and the counts are in the
    subtitle. NaN cells and self comparisons are not comparisons and are
    left out, as everywhere in bioxr.

    Integer scores (a fingerprint matcher's, say) are binned on integer
    edges with a whole number of score values in every bin, one value a
    bin up to 120 of them: bins of a fractional width
    would hold alternately more and fewer score values and draw a
    sawtooth that is not in the data.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list.
    threshold : float or mapping of str to float, optional, keyword-only
        Thresholds drawn as vertical rules; a mapping labels each one, e.g.
        ``{"EER (rocch)": 1.2}``. Infinite values are skipped.
    bins : int or "auto", keyword-only
        Number of bins shared by both histograms (for integer scores, at
        most this many, each a whole number of values wide). "auto": 60, or
        for integer scores one bin per value up to 120 values, else about
        100 bins of a whole number of values.
    yscale : {"auto", "linear", "sqrt", "log"}, keyword-only
        Density axis. A square-root or log axis keeps the thin tails and
        the small class readable beside a tall peak (log bars start at a
        floor below the smallest non-zero density). "auto": "log" when one
        class's tallest bar is over 5 times the other's (the other class and
        the tails would be flattened against the axis), else linear.
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
    >>> ints = (cube * 10).round().assign_attrs(cube.attrs)  # integer scores: integer edges, whole widths
    >>> rows = plot.score_histogram(ints, bins=20).to_dict()["datasets"]
    >>> edges = {r["start"] for rows_ in rows.values() for r in rows_}
    >>> all(float(e).is_integer() for e in edges)
    True
    """
    from .._core import split_scores

    if yscale not in ("auto", "linear", "sqrt", "log"):
        raise ValueError(f"yscale={yscale!r}; choose 'auto', 'linear', 'sqrt' or 'log'.")
    if not (bins == "auto" or (isinstance(bins, (int, np.integer)) and int(bins) >= 1)):
        raise ValueError(f"bins={bins!r}: give a positive integer or 'auto'.")
    if isinstance(cube, xr.Dataset) and "score" not in cube and _describe(cube).startswith("the result of"):
        raise ResultTypeError("score_histogram expects a score cube or a comparison list (the scores themselves); "
                              f"it was given {_describe(cube)}.")
    m_scores, n_scores, kind = split_scores(cube)
    both = np.concatenate([m_scores, n_scores])
    edges, integer = _score_edges(both, bins)
    rows = []
    for label, scores in (("mated", m_scores), ("non-mated", n_scores)):
        counts, _ = np.histogram(scores, bins=edges)
        density = counts / (scores.size * np.diff(edges)) if scores.size else counts * 0.0
        rows.append(pd.DataFrame({"start": edges[:-1], "end": edges[1:], "density": density, "count": counts,
                                  "comparison": label}))
    frame = pd.concat(rows, ignore_index=True)
    positive = frame["density"][frame["density"] > 0]
    if yscale == "auto":
        tallest = frame.groupby("comparison")["density"].max()
        dwarfs = float(tallest.min()) > 0 and float(tallest.max()) > 5 * float(tallest.min())
        yscale = "log" if dwarfs else "linear"
    if yscale == "log":
        floor = 10.0 ** np.floor(np.log10(float(positive.min()) / 2)) if len(positive) else 1e-6
        frame = frame[frame["density"] > 0].assign(base=floor)
        top = _snap_log(floor, float(positive.max()) if len(positive) else 1.0)[1]
        ysc = alt.Scale(type="log", domain=[floor, top], nice=False)
        y2 = alt.Y2("base:Q")
        yaxis = _log_axis("Density (log scale)", floor, top, SIZE * 2 // 3, fmt="~e")
    else:
        ysc = alt.Scale(type="sqrt", zero=True) if yscale == "sqrt" else alt.Scale(zero=True)
        y2 = alt.datum(0)
        yaxis = alt.Axis(title="Density (square-root scale)" if yscale == "sqrt" else "Density", **_AXIS)
    layers = [
        alt.Chart(frame).mark_rect(opacity=0.5).encode(
            x=alt.X("start:Q", scale=alt.Scale(zero=False, nice=False, domain=[float(edges[0]), float(edges[-1])]),
                    axis=alt.Axis(title=f"Score ({kind}: {'higher' if kind == 'similarity' else 'lower'} is more alike)",
                                  **_AXIS)),
            x2="end:Q",
            y=alt.Y("density:Q", scale=ysc, axis=yaxis),
            y2=y2,
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
    n_bins = len(edges) - 1
    width = float(edges[1] - edges[0]) if n_bins else 0.0
    binning = (f"{n_bins} shared bins, one score value each" if integer and width == 1 else
               f"{n_bins} shared bins of {width:g} score values each" if integer else f"{n_bins} shared bins")
    subtitle = [f"{m_scores.size:,} mated and {n_scores.size:,} non-mated comparisons in {binning}",
                "Each histogram is a density (area 1), so both show whatever their counts"
                + (" · square-root axis, so that the tails and the smaller class show" if yscale == "sqrt" else
                   " · log axis, so that the tails show: one non-mated comparison makes a bar of "
                   f"{1 / (max(n_scores.size, 1) * width):.1e}" if yscale == "log" else "")]
    return alt.layer(*layers).properties(width=SIZE + 140, height=SIZE * 2 // 3,
                                         title=_title(title, subtitle, SIZE + 240))


def _score_edges(scores: np.ndarray, bins) -> tuple[np.ndarray, bool]:
    """Bin edges shared by both classes; integer scores get integer edges a whole number of values apart."""
    scores = scores[np.isfinite(scores)]
    if scores.size == 0:
        return np.array([0.0, 1.0]), False
    lo, hi = float(scores.min()), float(scores.max())
    integer = bool(np.all(scores == np.round(scores))) and hi - lo < 1e7
    if not integer:
        return np.histogram_bin_edges(scores, bins=60 if bins == "auto" else int(bins)), False
    values = int(hi - lo) + 1
    if bins == "auto":
        want = 1.0 if values <= 120 else values / 100
    else:
        want = values / int(bins)
    nice = [1, 2, 3, 4, 5, 10, 20, 25, 50]
    steps = [m * 10**e for e in range(0, 8) for m in (1, 2, 5)]
    width = next(w for w in sorted(set(nice + steps)) if w >= want)
    start = np.floor(lo / width) * width
    n = int(np.floor((hi - start) / width)) + 1
    return start + width * np.arange(n + 1, dtype=float), True
