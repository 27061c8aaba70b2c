"""Shared machinery of the charts: tidy frames, thinning, probit and log axes, titles.

Private to :mod:`bioxr.plot`. Every chart module turns a result Dataset into
a tidy frame (:func:`_series_frame`: kept dimensions become one ``series``
column), thins dense curves (:func:`_thin`) and builds its axes here, so all
charts share one look: the same fonts, tick choices, colours and subtitles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import ndtri

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



def _fill(frame: pd.DataFrame, series: str | None, domain=None):
    """The fill matching :func:`_color` (same scheme and domain), for bands drawn under the curves."""
    if series is None:
        return alt.value("#1f77b4")
    values = sorted(frame[series].dropna().unique().tolist()) if domain is None else list(domain)
    numeric = pd.api.types.is_numeric_dtype(frame[series])
    if numeric and len(values) > 12:
        return alt.Fill(f"{series}:Q", scale=alt.Scale(scheme="viridis"), legend=None)
    scheme = "tableau10" if len(values) <= 10 else "tableau20"
    return alt.Fill(f"{series}:N", scale=alt.Scale(scheme=scheme, domain=values), legend=None)

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

