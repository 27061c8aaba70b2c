"""Altair charts of verification and identification results, drawn offline.

Tidy frames in, charts out: every function takes a result Dataset (or a
score cube), turns it into a pandas frame and returns an
:class:`altair.Chart`. Nothing is computed here that a topic module should
compute; the charts only show what the Datasets hold.

- :func:`det_chart`: the DET curve on probit (normal-deviate) axes, with the
  EER point and its convention;
- :func:`roc_chart`: the ROC curve (TMR against FMR);
- :func:`score_histogram`: mated and non-mated score densities;
- :func:`rates_chart`: FMR and FNMR against the threshold;
- :func:`cmc_chart`: the CMC (identification rate against rank);
- :func:`open_set_chart`: the open-set DET (FNIR against FPIR).

Kept dimensions of a result (``collection``, ``weather``, ...) become one
curve each, coloured by their label. Exact curves have a point per distinct
score; they are thinned (:func:`_thin`) to at most about 2,000 points per
curve, keeping every point where the drawn curve moves by more than a
fraction of a pixel, so a curve of 1e6 scores draws like the full one.

Charts render without a network: :func:`render_svg` and :func:`save_png`
use vl-convert, :func:`to_html` writes one self-contained interactive page
(the Vega bundle embedded once, ``vegaEmbed`` per chart). In a notebook,
``alt.renderers.enable("svg")`` shows them offline.
"""

from __future__ import annotations

import html as _html
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import ndtri

__all__ = [
    "det_chart",
    "roc_chart",
    "score_histogram",
    "rates_chart",
    "cmc_chart",
    "open_set_chart",
    "probit",
    "render_svg",
    "save_png",
    "save_svg",
    "to_html",
    "save_html",
]

#: Vega-Lite version used to render (must match Altair's schema major version).
VL_VERSION = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
MAX_POINTS = 2000  # per curve after thinning; Altair refuses more than 5,000 rows
SIZE = 400  # side of a DET/ROC chart in pixels
_AXIS = dict(labelFontSize=12, titleFontSize=13, titlePadding=8)
_LEGEND = dict(labelFontSize=12, titleFontSize=12)

_RATE_FORMAT = ".3~%"
# tick candidates of the probit axes, most wanted first
_TICKS_MAJOR = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 0.5, 0.9, 0.99]
_TICKS_MINOR = [0.05, 0.2, 0.02, 0.4, 0.005, 0.002, 5e-4, 2e-4, 5e-5, 2e-5, 5e-6, 2e-6, 0.3, 0.8, 0.95, 0.98,
                0.6, 0.7]
_TICKS_HIGH = [0.5, 0.6, 0.8, 0.9, 0.95, 0.99]  # candidate upper limits of the DET axes


def probit(p):
    """The normal deviate (probit) of a rate: the DET axes' coordinate.

    Parameters
    ----------
    p : float or array_like
        Rates in [0, 1]; 0 and 1 map to -inf and +inf.

    Returns
    -------
    numpy.ndarray or float
        ``scipy.special.ndtri(p)``.

    Examples
    --------
    >>> from bioxr.plot import probit
    >>> float(probit(0.5)), round(float(probit(0.02275)), 3)
    (0.0, -2.0)
    """
    return ndtri(np.asarray(p, dtype=float))


# ---------------------------------------------------------------- frames ---


def _kept(ds: xr.Dataset, var: str, along: str = "threshold") -> list:
    return [d for d in ds[var].dims if d != along]


def _field(name) -> str:
    """A column name Vega-Lite reads as one field (dots and brackets nest)."""
    return str(name).replace(".", "_").replace("[", "(").replace("]", ")")


def _series_frame(ds: xr.Dataset, variables: Sequence[str], along: str = "threshold") -> tuple[pd.DataFrame, str | None]:
    """Tidy frame of ``variables`` over (*kept, along), with a ``series`` label."""
    kept = _kept(ds, variables[0], along)
    sub = ds[list(variables)]
    sub = sub.drop_vars([c for c in sub.coords if c not in sub.dims and not set(sub[c].dims) <= set(sub.dims)])
    frame = sub.to_dataframe().reset_index()
    frame = frame.rename(columns={c: _field(c) for c in frame.columns})
    if not kept:
        return frame, None
    if len(kept) == 1:
        name = _field(kept[0])
    else:
        name = " × ".join(_field(d) for d in kept)
        frame[name] = frame[[_field(d) for d in kept]].astype(str).agg(", ".join, axis=1)
    return frame, name


def _order_rows(frame: pd.DataFrame, series: str | None) -> pd.DataFrame:
    keys = ([series] if series else []) + ["threshold"]
    frame = frame.sort_values(keys, kind="stable").reset_index(drop=True)
    frame["order"] = np.arange(len(frame))
    frame["threshold"] = frame["threshold"].where(np.isfinite(frame["threshold"]))
    return frame


def _thin(frame: pd.DataFrame, x: str, y: str, *, by: str | None = None, max_points: int = MAX_POINTS,
          domain: tuple[tuple[float, float], tuple[float, float]] | None = None) -> pd.DataFrame:
    """Thin dense curves to at most ``max_points`` rows per series, keeping their shape.

    The plotting area is cut into a grid of about ``max_points / 4`` cells a
    side (under a pixel each for charts of a few hundred pixels). Walking
    along each curve in row order, the first and last point in every cell
    it passes through are kept, and so are both endpoints; a monotone curve
    crosses at most twice as many cells as the grid has a side, so this
    keeps every visible corner. Should a series still have too many points
    the grid is coarsened until it fits.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows in drawing order within each series.
    x, y : str
        Columns of the plotted coordinates (after any transform, e.g. probit).
    by : str, optional
        Column naming the series; each is thinned on its own.
    max_points : int
    domain : ((x0, x1), (y0, y1)), optional
        The plotted ranges; default the data's range. Points outside fall
        into the border cells.

    Returns
    -------
    pandas.DataFrame
        A subset of the rows of ``frame``, in their order.
    """
    if domain is None:
        domain = tuple(_finite_range(frame[c].to_numpy(float)) for c in (x, y))
    parts = [frame] if by is None else [g for _, g in frame.groupby(by, sort=False)]
    kept = [part.iloc[_thin_index(part[x].to_numpy(float), part[y].to_numpy(float), max_points, domain)]
            for part in parts]
    return pd.concat(kept) if kept else frame


def _budget(frame: pd.DataFrame, series: str | None) -> int:
    """Points per series so that all series together stay under Altair's 5,000 rows."""
    n = frame[series].nunique() if series is not None and len(frame) else 1
    return max(min(MAX_POINTS, 4800 // max(n, 1)), 20)


def _finite_range(values: np.ndarray) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return (0.0, 1.0)
    lo, hi = float(values.min()), float(values.max())
    return (lo, hi if hi > lo else lo + 1.0)


def _thin_index(xs: np.ndarray, ys: np.ndarray, max_points: int, domain) -> np.ndarray:
    n = xs.size
    if n <= max_points:
        return np.arange(n)
    (x0, x1), (y0, y1) = domain
    res = max(max_points // 4, 2)
    while True:
        cx = np.clip(np.floor((xs - x0) / (x1 - x0) * res), -1, res)
        cy = np.clip(np.floor((ys - y0) / (y1 - y0) * res), -1, res)
        moved = np.flatnonzero((cx[1:] != cx[:-1]) | (cy[1:] != cy[:-1]))
        keep = np.unique(np.concatenate([[0, n - 1], moved, moved + 1]))
        if keep.size <= max_points or res <= 2:
            return keep[:max_points] if keep.size > max_points else keep
        res = max(int(res * 0.7), 2)


# ---------------------------------------------------------------- axes -----


def _label(p: float) -> str:
    text = np.format_float_positional(p * 100, precision=6, trim="-")
    return f"{text}%"


def _probit_ticks(lo: float, hi: float, min_gap: float) -> list[float]:
    """Tick rates inside [lo, hi] (rates), at least ``min_gap`` apart in deviates."""
    chosen: list[float] = []
    for p in _TICKS_MAJOR + _TICKS_MINOR:
        if not lo <= p <= hi:
            continue
        z = float(ndtri(p))
        if all(abs(z - float(ndtri(q))) >= min_gap for q in chosen):
            chosen.append(p)
    return sorted(chosen)


def _probit_axis(title: str, lo: float, hi: float, size: int) -> tuple[alt.Scale, alt.Axis]:
    zlo, zhi = float(ndtri(lo)), float(ndtri(hi))
    ticks = _probit_ticks(lo, hi, min_gap=(zhi - zlo) * 46 / size)
    values = [round(float(ndtri(p)), 6) for p in ticks]
    zlo, zhi = min([zlo, *values]) - 1e-9, max([zhi, *values]) + 1e-9
    expr = "''"
    for p, z in zip(reversed(ticks), reversed(values)):
        expr = f"abs(datum.value - ({z})) < 1e-4 ? '{_label(p)}' : {expr}"
    scale = alt.Scale(domain=[zlo, zhi], nice=False, zero=False)
    axis = alt.Axis(values=values, labelExpr=expr, title=title, grid=True, labelOverlap=False, **_AXIS)
    return scale, axis


def _probit_limits(frame: pd.DataFrame, limits, cols: tuple[str, str] = ("fmr", "fnmr")) -> tuple[float, float]:
    """Rates shown on both DET axes: the region where the curve has both rates low."""
    if cols != ("fmr", "fnmr"):
        frame = frame[list(cols)].set_axis(["fmr", "fnmr"], axis=1)
    if limits is not None:
        lo, hi = (float(v) for v in limits)
        if not 0 < lo < hi < 1:
            raise ValueError(f"limits={limits!r}: give two rates with 0 < low < high < 1.")
        return lo, hi
    near_eer = float(np.maximum(frame["fmr"], frame["fnmr"]).min()) if len(frame) else 0.25
    want = min(0.99, max(0.5, 2.5 * near_eer))
    hi = min(p for p in _TICKS_HIGH if p >= want)
    inside = frame[(frame["fmr"] <= hi) & (frame["fnmr"] <= hi)]
    smallest = float(min(inside["fmr"].min(), inside["fnmr"].min())) if len(inside) else 1e-3
    candidates = sorted(_TICKS_MAJOR + _TICKS_MINOR)
    lo = max([p for p in candidates if p <= smallest] or [candidates[0]])
    return min(lo, 0.01), hi


def _log_axis(title: str, lo: float, hi: float) -> alt.Axis:
    """Ticks at powers of ten, or at 1-2-5 steps when the axis spans at most three decades."""
    powers = 10.0 ** np.arange(np.floor(np.log10(lo)), 1)
    steps = (1, 2, 5) if np.log10(hi / lo) <= 3 else (1,)
    values = sorted({float(f"{m * v:.12g}") for v in powers for m in steps if lo * (1 - 1e-9) <= m * v <= hi * (1 + 1e-9)})
    return alt.Axis(values=values, format="~%", title=title, grid=True, **_AXIS)


class _DetAxes(NamedTuple):
    frame: pd.DataFrame  # thinned, with plotted columns x and y
    n_off: int  # points at infinity (rate 0 or 1), not drawn
    n_all: int  # points on the axes before thinning
    domain: tuple  # plotted ranges, for thinning and label placement
    x: alt.X
    y: alt.Y
    to_plot: object  # rate -> plotted coordinate
    limits: tuple[float, float]  # lowest and highest rate shown (on the x axis)
    y_limits: tuple[float, float]  # the same on the y axis


def _det_axes(frame: pd.DataFrame, cols: tuple[str, str], titles: tuple[str, str], axes: str, limits,
              series: str | None, *, same_range: bool = True) -> _DetAxes:
    """Axes of a DET-style chart (two error rates, probit or log-log), shared by DET and open-set charts.

    Drops the points lying at infinity on the chosen axes, picks the shown
    rates (the same range on both axes, or with ``same_range=False`` a y
    range fitted to the curve), transforms the rates to plotted ``x``/``y``
    columns and thins the curve.
    """
    xr_, yr_ = cols
    if axes == "probit":
        infinite = (frame[xr_] <= 0) | (frame[xr_] >= 1) | (frame[yr_] <= 0) | (frame[yr_] >= 1)
    else:
        infinite = (frame[xr_] <= 0) | (frame[yr_] <= 0)
    n_off = int(infinite.sum())
    frame = frame[~infinite]
    lo, hi = _probit_limits(frame, limits, cols=cols)
    ylo, yhi = lo, hi
    if not same_range:
        inside = frame.loc[(frame[xr_] >= lo) & (frame[xr_] <= hi), yr_]
        if len(inside):
            candidates = sorted(_TICKS_MAJOR + _TICKS_MINOR)
            ylo = max([p for p in candidates if p <= float(inside.min())] or [candidates[0]])
            yhi = min([p for p in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, *_TICKS_HIGH[2:]) if p >= float(inside.max())] or [0.99])
            ylo = min(ylo, yhi / 2)
    if axes == "probit":
        frame = frame.assign(x=probit(frame[xr_]), y=probit(frame[yr_]))
        domain = ((float(ndtri(lo)), float(ndtri(hi))), (float(ndtri(ylo)), float(ndtri(yhi))))
        xs, xa = _probit_axis(titles[0], lo, hi, SIZE)
        ys, ya = _probit_axis(titles[1], ylo, yhi, SIZE)
        to_plot = probit
    else:
        frame = frame.assign(x=frame[xr_], y=frame[yr_])
        domain = ((np.log10(lo), np.log10(hi)), (np.log10(ylo), np.log10(yhi)))
        xs = alt.Scale(type="log", domain=[lo, hi], nice=False)
        ys = alt.Scale(type="log", domain=[ylo, yhi], nice=False)
        xa, ya = _log_axis(titles[0], lo, hi), _log_axis(titles[1], ylo, yhi)
        to_plot = np.asarray
    n_all = len(frame)
    if axes == "loglog":
        frame = frame.assign(lx=np.log10(frame["x"]), ly=np.log10(frame["y"]))
        frame = _thin(frame, "lx", "ly", by=series, domain=domain, max_points=_budget(frame, series)).drop(columns=["lx", "ly"])
    else:
        frame = _thin(frame, "x", "y", by=series, domain=domain, max_points=_budget(frame, series))
    return _DetAxes(frame, n_off, n_all, domain, alt.X("x:Q", scale=xs, axis=xa), alt.Y("y:Q", scale=ys, axis=ya),
                    to_plot, (lo, hi), (ylo, yhi))


def _color(frame: pd.DataFrame, series: str | None, sort=None):
    if series is None:
        return alt.value("#1f77b4")
    n = frame[series].nunique()
    numeric = pd.api.types.is_numeric_dtype(frame[series])
    if numeric and n > 12:
        return alt.Color(f"{series}:Q", title=series, scale=alt.Scale(scheme="viridis"))
    scheme = "tableau10" if n <= 10 else "tableau20"
    return alt.Color(f"{series}:N", title=series, scale=alt.Scale(scheme=scheme),
                     legend=alt.Legend(symbolLimit=40, columns=1 if n <= 20 else 2, **_LEGEND))


def _title(text: str, subtitle: list[str]) -> alt.TitleParams:
    return alt.TitleParams(text=text, subtitle=[s for s in subtitle if s], anchor="start",
                           subtitleColor="#555", fontSize=16, subtitleFontSize=12, subtitlePadding=4, offset=10)


def _counts_text(ds: xr.Dataset) -> str:
    if "n_mated" not in ds or "n_nonmated" not in ds:
        return ""
    m, n = int(ds["n_mated"].sum()), int(ds["n_nonmated"].sum())
    return f"{m:,} mated and {n:,} non-mated comparisons"


def _points_text(n_thin: int, n_all: int) -> str:
    return f"thinned to {n_thin:,} of {n_all:,} points, shape kept" if n_thin < n_all else ""


def _check_curve(ds, variables, what):
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"{what} takes a result Dataset (e.g. from bioxr.verification.det_curve), got {type(ds).__name__}.")
    missing = [v for v in variables if v not in ds]
    if missing:
        raise ValueError(f"{what} needs variables {list(variables)}; the Dataset lacks {missing}.")
    if "threshold" not in ds[variables[0]].dims:
        raise ValueError(f"{what} needs a 'threshold' dimension (a curve from det_curve or roc_curve).")


# ---------------------------------------------------------------- charts ---


def det_chart(det: xr.Dataset, *, eer: xr.Dataset | None = None, axes: str = "probit",
              limits: tuple[float, float] | None = None, title: str = "DET curve") -> alt.LayerChart:
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
    bioxr.verification.det_curve, bioxr.verification.eer

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> det = bioxr.verification.det_curve(cube)
    >>> chart = plot.det_chart(det, eer=bioxr.verification.eer(cube))
    >>> [layer["mark"]["type"] for layer in chart.to_dict()["layer"]]
    ['line', 'line', 'point', 'text']
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
    layers = [
        alt.Chart(diag).mark_line(color="#aaaaaa", strokeDash=[4, 4], strokeWidth=1).encode(x=x, y=y),
        alt.Chart(frame).mark_line(clip=True, strokeWidth=2).encode(x=x, y=y, color=color, order="order:Q", tooltip=tooltip),
    ]
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


def roc_chart(roc: xr.Dataset, *, xscale: str = "log", title: str = "ROC curve") -> alt.Chart:
    """The ROC curve: true match rate (1 - FNMR) against FMR.

    Parameters
    ----------
    roc : xarray.Dataset
        From :func:`bioxr.verification.roc_curve` (``tmr`` is computed from
        ``fnmr`` when absent, so a DET Dataset also works).
    xscale : {"log", "linear"}, keyword-only
        FMR axis scale; on a log axis points with FMR 0 are not drawn (the
        subtitle says how many).
    title : str, keyword-only

    Returns
    -------
    altair.Chart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> roc = bioxr.verification.roc_curve(bioxr.simulate.gaussian(n_subjects=40, seed=2))
    >>> spec = plot.roc_chart(roc).to_dict()
    >>> spec["mark"]["type"], spec["encoding"]["x"]["scale"]["type"]
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
    return alt.Chart(frame).mark_line(strokeWidth=2, clip=True).encode(
        x=alt.X("fmr:Q", scale=xsc, axis=_log_axis("False match rate (FMR)", max(lo, 1e-12), 1.0) if xscale == "log"
                else alt.Axis(format="~%", title="False match rate (FMR)", **_AXIS)),
        y=alt.Y("tmr:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="~%", title="True match rate (1 − FNMR)", **_AXIS)),
        color=_color(frame, series), order="order:Q", tooltip=tooltip,
    ).properties(width=SIZE, height=SIZE, title=_title(title, subtitle))


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
    cube : xarray.DataArray
        A score cube.
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
    from .cube import compared_mask, mated_mask, score_kind, validate_score_cube

    validate_score_cube(cube)
    if int(bins) < 1:
        raise ValueError("bins must be a positive integer.")
    compared = compared_mask(cube)
    mated = (mated_mask(cube) & compared).transpose(*cube.dims)
    nonmated = (~mated_mask(cube) & compared).transpose(*cube.dims)
    values = np.asarray(cube.values, dtype=float)
    m_scores = values[np.asarray(mated.values)]
    n_scores = values[np.asarray(nonmated.values)]
    both = np.concatenate([m_scores, n_scores])
    edges = np.histogram_bin_edges(both, bins=int(bins))
    rows = []
    for label, scores in (("mated", m_scores), ("non-mated", n_scores)):
        counts, _ = np.histogram(scores, bins=edges)
        density = counts / (scores.size * np.diff(edges)) if scores.size else counts * 0.0
        rows.append(pd.DataFrame({"start": edges[:-1], "end": edges[1:], "density": density, "count": counts,
                                  "comparison": label}))
    frame = pd.concat(rows, ignore_index=True)
    kind = score_kind(cube)
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


# ------------------------------------------------------- identification ---


def _check_ranked(cmc, what):
    if not isinstance(cmc, xr.Dataset) or "cmc" not in cmc:
        raise TypeError(f"{what} takes the Dataset of bioxr.identification.cmc_curve, got {type(cmc).__name__}.")
    if "rank" not in cmc["cmc"].dims:
        raise ValueError(f"{what} needs a 'rank' dimension (a curve from cmc_curve, not one rank).")


def _ties_text(attrs) -> str:
    rule = str(attrs.get("tie_rule", ""))
    return "Ties split as in ISO/IEC 19795-1 Annex F (fractional counts)" if "Annex F" in rule else rule


def cmc_chart(cmc: xr.Dataset, *, max_rank: int | None = None, xscale: str = "auto",
              title: str = "CMC curve") -> alt.LayerChart:
    """The cumulative match characteristic: identification rate against rank.

    A line through the rates at each integer rank, with a point per rank
    (when there are at most 60) and the rank-1 identification rate marked
    and labelled. Kept dimensions (``collection``, ``weather``, ...) give
    one curve each, coloured by their label.

    Parameters
    ----------
    cmc : xarray.Dataset
        From :func:`bioxr.identification.cmc_curve`: ``cmc`` over
        ``(*kept, "rank")``; ``n_probes`` and ``n_excluded`` (if present)
        are summed into the subtitle, the tie rule from ``attrs``.
    max_rank : int, optional, keyword-only
        Highest rank drawn; default every rank in ``cmc``.
    xscale : {"auto", "linear", "log"}, keyword-only
        Rank axis; "auto" is linear up to 50 ranks and logarithmic beyond.
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    See Also
    --------
    bioxr.identification.cmc_curve, bioxr.identification.identification_rate

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> cmc = bioxr.identification.cmc_curve(bioxr.simulate.gaussian(n_subjects=30, seed=1))
    >>> spec = plot.cmc_chart(cmc, max_rank=10).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['line', 'point', 'point', 'text']
    """
    _check_ranked(cmc, "cmc_chart")
    if xscale not in ("auto", "linear", "log"):
        raise ValueError(f"xscale={xscale!r}; choose 'auto', 'linear' or 'log'.")
    if max_rank is not None:
        if int(max_rank) < 1:
            raise ValueError("max_rank must be at least 1.")
        cmc = cmc.isel(rank=np.flatnonzero(cmc["rank"].values <= int(max_rank)))
    frame, series = _series_frame(cmc, ("cmc",), along="rank")
    frame = frame.dropna(subset=["cmc"]).sort_values(([series] if series else []) + ["rank"], kind="stable")
    if frame.empty:
        raise ValueError("cmc_chart: no rank to draw (check max_rank).")
    top = int(frame["rank"].max())
    log = xscale == "log" or (xscale == "auto" and top > 50)
    low = float(frame["cmc"].min())
    ylo = max(0.0, np.floor(low * 10 - 1e-9) / 10 - (0.05 if low > 0.9 else 0.0))
    if log:
        ticks = [float(m * 10**e) for e in range(0, len(str(top)) + 1) for m in (1, 2, 5) if m * 10**e <= top]
        xsc = alt.Scale(type="log", domain=[1, top], nice=False)
        xax = alt.Axis(values=ticks, format="d", title="Rank (log scale)", grid=True, **_AXIS)
    else:
        xsc = alt.Scale(domain=[0.5, top + 0.5], nice=False, zero=False)
        xax = alt.Axis(format="d", tickMinStep=1, title="Rank", grid=True, **_AXIS)
    x = alt.X("rank:Q", scale=xsc, axis=xax)
    y = alt.Y("cmc:Q", scale=alt.Scale(domain=[ylo, 1], nice=False),
              axis=alt.Axis(format="~%", title="Identification rate (mate at or below the rank)", **_AXIS))
    color = _color(frame, series)
    tooltip = [alt.Tooltip("rank:Q", format="d"), alt.Tooltip("cmc:Q", title="identification rate", format=".2%")] + (
        [alt.Tooltip(f"{series}:N")] if series else [])
    n_series = frame[series].nunique() if series else 1
    layers = [alt.Chart(frame).mark_line(strokeWidth=2, clip=True).encode(x=x, y=y, color=color, tooltip=tooltip)]
    per_curve = len(frame) / n_series
    layers.append(alt.Chart(frame if per_curve <= 60 else frame.iloc[:0]).mark_point(filled=True, size=30, clip=True)
                  .encode(x=x, y=y, color=color, tooltip=tooltip))
    first = frame[frame["rank"] == 1]
    first = first.assign(label=[f"rank 1: {v:.2%}" for v in first["cmc"]])
    layers.append(alt.Chart(first).mark_point(filled=True, size=90, shape="diamond", stroke="black", strokeWidth=1)
                  .encode(x=x, y=y, color=color, tooltip=tooltip))
    if 0 < len(first) <= 3:
        labels = first.assign(dy=np.arange(len(first)) * 16 + 14)
        layers.append(alt.Chart(labels).mark_text(align="left", dx=8, fontSize=13, fontWeight="bold")
                      .encode(x=x, y=y, yOffset=alt.YOffset("dy:Q", scale=None), text="label:N"))
    n_probes = int(cmc["n_probes"].sum()) if "n_probes" in cmc else None
    n_excl = int(cmc["n_excluded"].sum()) if "n_excluded" in cmc else 0
    subtitle = [
        (f"{n_probes:,} closed-set searches" if n_probes is not None else "")
        + (f" · {n_excl:,} probe(s) not enrolled or never compared with their mate, not counted" if n_excl else ""),
        _ties_text(cmc.attrs),
    ]
    return alt.layer(*layers).properties(width=SIZE + 100, height=SIZE * 3 // 4, title=_title(title, subtitle))


def open_set_chart(curve: xr.Dataset, *, axes: str = "probit", limits: tuple[float, float] | None = None,
                   title: str = "Open-set identification: FNIR against FPIR") -> alt.LayerChart:
    """The open-set DET: FNIR (1 - DIR) against FPIR, on probit axes.

    The same probit axes and thinning as :func:`det_chart`, but the FNIR
    axis is fitted to the curve (FNIR cannot fall below the closed-set miss
    rate at the candidate-list rank, so a square range would leave most of
    the chart empty) and there is no FPIR = FNIR diagonal: open-set
    identification has no equal error rate convention. FPIR is counted over
    impostor *searches* (one per probe), not over comparisons, so its
    smallest step is 1 / (impostor searches): the subtitle gives both
    counts, the candidate-list rank and which probes were impostors.

    Parameters
    ----------
    curve : xarray.Dataset
        From :func:`bioxr.identification.open_set_curve`: ``fpir`` and
        ``fnir`` (or ``dir``) over ``(*kept, "threshold")``.
    axes : {"probit", "loglog"}, keyword-only
    limits : (float, float), optional, keyword-only
        Lowest and highest rate shown on both axes (the same range); default
        from the data.
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    See Also
    --------
    bioxr.identification.open_set_curve, det_chart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> curve = bioxr.identification.open_set_curve(cube, impostors="all")
    >>> spec = plot.open_set_chart(curve).to_dict()
    >>> spec["layer"][0]["encoding"]["x"]["axis"]["title"]
    'False positive identification rate (FPIR)'
    """
    if axes not in ("probit", "loglog"):
        raise ValueError(f"axes={axes!r}; choose 'probit' or 'loglog'.")
    if isinstance(curve, xr.Dataset) and "fnir" not in curve and "dir" in curve:
        curve = curve.assign(fnir=1 - curve["dir"])
    _check_curve(curve, ("fpir", "fnir"), "open_set_chart")
    frame, series = _series_frame(curve, ("fpir", "fnir"))
    frame = _order_rows(frame.dropna(subset=["fpir", "fnir"]), series)
    geo = _det_axes(frame, ("fpir", "fnir"),
                    ("False positive identification rate (FPIR)", "False negative identification rate (FNIR)"),
                    axes, limits, series, same_range=limits is not None)
    tooltip = [alt.Tooltip("threshold:Q", format=".4~g"), alt.Tooltip("fpir:Q", title="FPIR", format=_RATE_FORMAT),
               alt.Tooltip("fnir:Q", title="FNIR", format=_RATE_FORMAT)] + ([alt.Tooltip(f"{series}:N")] if series else [])
    layers = [
        alt.Chart(geo.frame).mark_line(clip=True, strokeWidth=2)
        .encode(x=geo.x, y=geo.y, color=_color(geo.frame, series), order="order:Q", tooltip=tooltip),
    ]
    n_m = int(curve["n_mated_probes"].sum()) if "n_mated_probes" in curve else None
    n_i = int(curve["n_impostor_probes"].sum()) if "n_impostor_probes" in curve else None
    who = {"all": "every probe, with its own mates left out", "non-enrolled": "probes whose subject is not enrolled"}
    impostors = curve.attrs.get("impostors")
    subtitle = [
        " and ".join(t for t in (f"{n_m:,} mated searches" if n_m is not None else "",
                                 f"{n_i:,} impostor searches" if n_i is not None else "") if t)
        + (f" (impostors: {who.get(impostors, impostors)})" if impostors else ""),
        ("Normal-deviate (probit) axes" if axes == "probit" else "Logarithmic axes")
        + (f" · candidate list of rank {curve.attrs['rank']}" if "rank" in curve.attrs else "")
        + (" · " + _ties_text(curve.attrs) if "tie_rule" in curve.attrs else ""),
        " · ".join(t for t in (f"{geo.n_off:,} point(s) at a rate of 0 or 100% are off the axes, not drawn"
                               if geo.n_off else "", _points_text(len(geo.frame), geo.n_all)) if t),
    ]
    return alt.layer(*layers).properties(width=SIZE, height=SIZE, title=_title(title, subtitle))


# ---------------------------------------------------------------- output ---


def _spec(chart) -> dict:
    return chart.to_dict() if hasattr(chart, "to_dict") else dict(chart)


def render_svg(chart) -> str:
    """Render a chart to an SVG string, offline (vl-convert).

    Examples
    --------
    >>> import altair as alt, pandas as pd
    >>> from bioxr.plot import render_svg
    >>> svg = render_svg(alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q"))
    >>> svg.startswith("<svg")
    True
    """
    import vl_convert

    return vl_convert.vegalite_to_svg(_spec(chart), vl_version=VL_VERSION)


def save_svg(chart, path) -> Path:
    """Write a chart as an SVG file; returns the path."""
    path = Path(path)
    path.write_text(render_svg(chart), encoding="utf-8")
    return path


def save_png(chart, path, *, scale: float = 2.0) -> Path:
    """Write a chart as a PNG file, offline (vl-convert); returns the path.

    Parameters
    ----------
    chart : altair chart or Vega-Lite dict
    path : str or Path
    scale : float, keyword-only
        Pixel density (2 = sharp on high-resolution screens).
    """
    import vl_convert

    path = Path(path)
    path.write_bytes(vl_convert.vegalite_to_png(_spec(chart), vl_version=VL_VERSION, scale=scale))
    return path


@lru_cache(maxsize=2)
def _bundle(vl_version: str) -> str:
    import vl_convert

    js = vl_convert.javascript_bundle(vl_version=vl_version)
    return js.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def to_html(charts, *, title: str = "bioxr charts", full_page: bool = True) -> str:
    """One self-contained interactive HTML page (or fragment) of charts.

    The Vega, Vega-Lite and vega-embed JavaScript (from vl-convert, about
    0.9 MB) is embedded once, inside a block so its top-level declarations
    cannot collide with the page's, and ``vegaEmbed`` is called once per
    chart. The page fetches nothing: it works offline and from ``file://``.

    Parameters
    ----------
    charts : altair chart, sequence of charts or mapping of str to chart
        A mapping's keys become headings.
    title : str, keyword-only
    full_page : bool, keyword-only
        False returns a fragment (``<div>`` and ``<script>`` elements) to
        place in another page; embed only one fragment per page.

    Returns
    -------
    str

    Examples
    --------
    >>> import altair as alt, pandas as pd
    >>> from bioxr.plot import to_html
    >>> chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q")
    >>> page = to_html({"first": chart, "second": chart})
    >>> page.count("vegaEmbed(") >= 2, "src=\\"http" in page
    (True, False)
    """
    if isinstance(charts, Mapping):
        items = list(charts.items())
    elif isinstance(charts, (list, tuple)):
        items = [(None, c) for c in charts]
    else:
        items = [(None, charts)]
    blocks, calls = [], []
    for k, (name, chart) in enumerate(items):
        heading = f"<h2>{_html.escape(str(name))}</h2>\n" if name is not None else ""
        blocks.append(f'<section class="bioxr-chart">{heading}<div id="bioxr-chart-{k}"></div></section>')
        spec = json.dumps(_spec(chart), allow_nan=False).replace("</", "<\\/").replace("<!--", "<\\!--")
        calls.append(f'vegaEmbed("#bioxr-chart-{k}", {spec}, {{"actions": false, "renderer": "svg"}})'
                     f'.catch(function (e) {{ console.error(e); }});')
    script = "<script>\n{\n" + _bundle(VL_VERSION) + "\n}\n</script>\n<script>\n" + "\n".join(calls) + "\n</script>"
    fragment = "\n".join(blocks) + "\n" + script
    if not full_page:
        return fragment
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{_html.escape(title)}</title>\n"
        "<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
        ".bioxr-chart{margin-bottom:2.5em}</style>\n</head>\n<body>\n"
        f"<h1>{_html.escape(title)}</h1>\n{fragment}\n</body>\n</html>\n"
    )


def save_html(charts, path, *, title: str = "bioxr charts") -> Path:
    """Write :func:`to_html` of ``charts`` to ``path``; returns the path."""
    path = Path(path)
    path.write_text(to_html(charts, title=title), encoding="utf-8")
    return path
