"""Shared machinery of the charts: tidy frames, thinning, probit and log axes, titles.

Private to :mod:`bioxr.plot`. Every chart module turns a result Dataset into
a tidy frame (:func:`_series_frame`: kept dimensions become one ``series``
column), thins dense curves (:func:`_thin`) and builds its axes here, so all
charts share one look: the same fonts, tick choices, colours and subtitles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import ndtr, ndtri

MAX_POINTS = 2000  # per curve after thinning; Altair refuses more than 5,000 rows
SIZE = 400  # base size of the smaller charts in pixels
DET_SIZE = 520  # side of a DET or ROC chart in pixels
_AXIS = dict(labelFontSize=12, titleFontSize=13, titlePadding=8)
_LEGEND = dict(labelFontSize=12, titleFontSize=12)

_RATE_FORMAT = ".3~%"
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

#: Rates a fitted DET axis may end on: 1-2-5 steps below one half, then the usual high ends.
_ENDS_LOW = sorted(float(f"{m * 10.0 ** e:.12g}") for e in range(-9, 0) for m in (1, 2, 5))
_ENDS_HIGH = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999]
_MARGIN = 0.04  # share of an axis left empty beyond the data at each fitted end


def _label_px(text: str) -> float:
    """Width in pixels of a 12 px tick label of digits, points and a percent sign."""
    return sum(3.6 if c == "." else 12.5 if c == "%" else 7.3 for c in text)


def _label(p: float) -> str:
    """A probit tick's label: the rate in percent, without the sign (the axis title says "in %")."""
    return np.format_float_positional(p * 100, precision=6, trim="-")


def _tick_priority(lo: float, hi: float) -> list[float]:
    """Tick candidates of a probit axis, most wanted first: the two ends, decades, 50%, then 2s, 5s and the rest."""
    decades = [10.0 ** e for e in range(-9, 0)]
    twos = [float(f"{2 * 10.0 ** e:.12g}") for e in range(-9, -1)]
    fives = [float(f"{5 * 10.0 ** e:.12g}") for e in range(-9, -1)]
    high = [0.5, 0.9, 0.99, 0.999, 0.2, 0.8, 0.95, 0.98, 0.3, 0.4, 0.6, 0.7, 0.995]
    ordered = [lo, hi, *decades[::-1], 0.5, *twos[::-1], *fives[::-1], *high]
    return [p for p in dict.fromkeys(ordered) if lo * (1 - 1e-9) <= p <= hi * (1 + 1e-9)]


def _probit_ticks(lo: float, hi: float, size: float = 520, *, horizontal: bool = True,
                  min_gap: float | None = None) -> list[float]:
    """Tick rates of a probit axis from ``lo`` to ``hi``: both ends, the decades, then 1-2-5 steps where they fit.

    A candidate is kept when its label clears its neighbours' labels:
    on a horizontal axis by half their widths plus 8 px, on a vertical one
    by 18 px (``min_gap``, in deviates, overrides this).
    """
    zlo, zhi = float(ndtri(lo)), float(ndtri(hi))
    scale = size / (zhi - zlo)
    chosen: list[float] = []
    for p in _tick_priority(lo, hi):
        z = float(ndtri(p))
        ok = True
        for q in chosen:
            gap = abs(z - float(ndtri(q)))
            if min_gap is not None:
                ok = gap >= min_gap
            elif horizontal:
                ok = gap * scale >= (_label_px(_label(p)) + _label_px(_label(q))) / 2 + 12
            else:
                ok = gap * scale >= 18
            if not ok:
                break
        if ok:
            chosen.append(p)
    return sorted(chosen)


def _probit_axis(title: str, lo: float, hi: float, size: int, *, horizontal: bool = True) -> tuple[alt.Scale, alt.Axis]:
    ticks = _probit_ticks(lo, hi, size, horizontal=horizontal)
    values = [round(float(ndtri(p)), 6) for p in ticks]
    zlo, zhi = float(ndtri(lo)), float(ndtri(hi))
    zlo, zhi = min([zlo, *values]) - 1e-9, max([zhi, *values]) + 1e-9
    expr = "''"
    for p, z in zip(reversed(ticks), reversed(values)):
        expr = f"abs(datum.value - ({z})) < 1e-4 ? '{_label(p)}' : {expr}"
    scale = alt.Scale(domain=[zlo, zhi], nice=False, zero=False)
    title = f"{title[:-1]}, in %)" if title.endswith(")") else f"{title} (in %)"  # as on the classic DET plots
    axis = alt.Axis(values=values, labelExpr=expr, title=title, grid=True, labelOverlap=False, **_AXIS)
    return scale, axis


def _parse_limits(limits, name: str = "limits"):
    """``limits`` as ``(x, y)``, each ``None`` (fitted) or ``(low, high)`` rates with 0 < low < high < 1.

    Accepts None, one pair for both axes, a pair of pairs (or None) for x
    and y, or a mapping with keys ``"x"`` and ``"y"``.
    """
    if limits is None:
        return None, None
    if isinstance(limits, Mapping):
        unknown = set(limits) - {"x", "y"}
        if unknown:
            raise ValueError(f"{name}= takes the keys 'x' and 'y'; got {sorted(map(str, unknown))}.")
        pair = (limits.get("x"), limits.get("y"))
    else:
        items = list(limits)
        if len(items) != 2:
            raise ValueError(f"{name}={limits!r}: give (low, high) for both axes, or ((low, high), (low, high)).")
        if all(v is None or np.ndim(v) == 1 for v in items) and any(v is not None and np.ndim(v) == 1 for v in items):
            pair = tuple(items)
        else:
            pair = (items, items)
    out = []
    for v in pair:
        if v is None:
            out.append(None)
            continue
        try:
            lo, hi = (float(t) for t in v)
        except (TypeError, ValueError):
            raise ValueError(f"{name}={limits!r}: give rates (low, high) with 0 < low < high < 1.") from None
        if not 0 < lo < hi < 1:
            raise ValueError(f"{name}={limits!r}: give two rates with 0 < low < high < 1.")
        out.append((lo, hi))
    return tuple(out)


def _fit_end(rates: np.ndarray, to_plot, from_plot, fallback: tuple[float, float], crowded=None,
             top: float | None = None) -> tuple[float, float]:
    """An axis range fitted to ``rates``: a margin beyond both ends, each end snapped out to a tick rate."""
    rates = rates[np.isfinite(rates) & (rates > 0) & (rates < 1)]
    if rates.size == 0:
        return fallback
    rmin, rmax = float(rates.min()), float(rates.max())
    zlo, zhi = float(to_plot(rmin)), float(to_plot(min(rmax, top) if top is not None else rmax))
    pad = _MARGIN * max(zhi - zlo, 0.5)
    lo_want, hi_want = float(from_plot(zlo - pad)), float(from_plot(zhi + pad))
    below = [p for p in _ENDS_LOW if p <= lo_want][::-1] or [_ENDS_LOW[0]]
    hi = min([p for p in _ENDS_HIGH if p >= hi_want and p > below[0]] or [_ENDS_HIGH[-1]])
    lo = below[0]
    if top is not None:
        lo, hi = _cap((lo, hi), top)
    if crowded is not None and crowded(lo, lo, hi):  # an end so close to the next decade that a label would go
        decade = 10.0 ** np.ceil(np.log10(lo) - 1e-9)
        if decade <= rmin:  # up to the decade when the data still fit (a thinner margin) ...
            lo = decade
        else:  # ... else down to an end that leaves the decade room
            lo = next((p for p in below[:4] if not crowded(p, p, hi)), lo)
    return lo, hi


def _crowds_a_decade(size: float, to_plot):
    """A test of whether a low end ``p`` leaves no room for the label of the decade just above it."""
    def crowded(p: float, lo: float, hi: float) -> bool:
        decade = 10.0 ** np.ceil(np.log10(p) - 1e-9)
        if np.isclose(decade, p) or decade >= hi:
            return False
        z0, z1 = float(to_plot(p)), float(to_plot(hi))
        gap = (float(to_plot(decade)) - z0) / (z1 - z0) * size
        return gap < (_label_px(_label(p)) + _label_px(_label(decade))) / 2 + 10
    return crowded


def _det_limits(frame: pd.DataFrame, cols: tuple[str, str], limits, *, axes: str = "probit",
                show=((), ()), size: float = 520) -> tuple[tuple[float, float], tuple[float, float]]:
    """Rates shown on the x and y axes of a DET-style chart, each fitted to its own data.

    The region shown is where the curve has both rates low: up to a high
    end set by the curve's closest approach to the diagonal (at least 50%,
    and 2.5 times that rate), then each axis shrinks to the rates the curve
    actually takes there, with a margin, its ends snapped to tick rates.
    ``show`` holds rates (x ones, y ones) that must be inside: the EER and
    the operating points. ``limits`` (see :func:`_parse_limits`) fixes an
    axis instead.
    """
    fixed_x, fixed_y = _parse_limits(limits)
    xs, ys = frame[cols[0]].to_numpy(float), frame[cols[1]].to_numpy(float)
    if axes == "probit":
        to_plot, from_plot = ndtri, ndtr
    else:
        to_plot, from_plot = np.log10, lambda z: 10.0 ** np.asarray(z)
    near = float(np.maximum(xs, ys).min()) if xs.size else 0.25
    want = min(0.99, max(0.5, 2.5 * near))
    top = min(p for p in _TICKS_HIGH if p >= want)
    ytop = fixed_y[1] if fixed_y else top
    show_x, show_y = (np.asarray(list(v), float) for v in show)
    show_x, show_y = (v[np.isfinite(v) & (v > 0) & (v < 1)] for v in (show_x, show_y))

    def reach(rates):  # a high end that also holds the marked points (an FNMR at a low FMR target may be high)
        above = [p for p in _ENDS_HIGH if p >= float(rates.max()) * 1.02] if rates.size else []
        return max(top, min(above or [_ENDS_HIGH[-1]])) if rates.size else top

    crowded = _crowds_a_decade(size, to_plot) if axes == "probit" else None
    x_top, y_top = reach(show_x), reach(show_y)
    x_lim = fixed_x or _fit_end(np.r_[xs[ys <= max(ytop, y_top)], show_x], to_plot, from_plot, (1e-3, x_top), crowded,
                                x_top)
    inside = (xs <= x_lim[1]) & (xs >= x_lim[0])
    y_lim = fixed_y or _fit_end(np.r_[ys[inside], show_y], to_plot, from_plot, (1e-3, y_top), top=y_top)
    return x_lim, y_lim


def _cap(lim: tuple[float, float], top: float) -> tuple[float, float]:
    """A fitted range whose high end is at most ``top`` (and still above its low end)."""
    lo, hi = lim
    hi = min(hi, top)
    if hi <= lo:
        hi = min([p for p in _ENDS_HIGH if p > lo] or [_ENDS_HIGH[-1]])
    return lo, hi


def _snap_log(lo: float, hi: float, steps=(1, 2, 5)) -> tuple[float, float]:
    """A log axis range snapped out to 1-2-5 values, so that both ends carry a tick."""
    nice = sorted(float(f"{m * 10.0 ** e:.12g}") for e in range(-14, 6) for m in steps)
    lo_ = max([v for v in nice if v <= lo * (1 + 1e-9)] or [nice[0]])
    hi_ = min([v for v in nice if v >= hi * (1 - 1e-9)] or [nice[-1]])
    return lo_, hi_


def _log_axis(title: str, lo: float, hi: float, size: float | None = None, fmt: str = "~%") -> alt.Axis:
    """Ticks at powers of ten (and 2s and 5s when they fit), always one at each end of the range."""
    span = np.log10(hi / lo)
    powers = 10.0 ** np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
    inside = lambda v: lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)
    values = [lo, hi] + [float(f"{v:.12g}") for v in powers if inside(v)]
    if size is not None:
        per_decade = size / max(span, 1e-9)
        extra = (2, 5) if per_decade >= 170 else (2,) if per_decade >= 115 else ()
    else:
        extra = (2, 5) if span <= 3 else ()
    values += [float(f"{m * v:.12g}") for m in extra for v in powers if inside(m * v)]
    values = sorted(set(values))
    if size is not None:  # an inner tick crowding an end tick goes
        px = lambda v: np.log10(v / lo) / span * size
        values = [v for v in values if v in (lo, hi) or min(px(v), size - px(v)) >= 18]
    return alt.Axis(values=values, format=fmt, title=title, grid=True, **_AXIS)


class _DetAxes(NamedTuple):
    frame: pd.DataFrame  # thinned, with plotted columns x and y
    n_off: int  # points at infinity (rate 0 or 1), not drawn
    n_all: int  # points on the axes before thinning
    domain: tuple  # plotted ranges, for thinning and label placement
    x: alt.X
    y: alt.Y
    to_plot: object  # rate -> plotted coordinate
    limits: tuple[float, float]  # lowest and highest rate shown on the x axis
    y_limits: tuple[float, float]  # the same on the y axis


def _det_axes(frame: pd.DataFrame, cols: tuple[str, str], titles: tuple[str, str], axes: str, limits,
              series: str | None, *, same_range: bool = False, size: int | None = None, show=((), ())) -> _DetAxes:
    """Axes of a DET-style chart (two error rates, probit or log-log), shared by DET and open-set charts.

    Drops the points lying at infinity on the chosen axes, fits each axis
    to its own data (:func:`_det_limits`; ``same_range=True`` gives both
    axes the union of the two ranges), transforms the rates to plotted
    ``x``/``y`` columns and thins the curve.
    """
    size = size or DET_SIZE
    xr_, yr_ = cols
    if axes == "probit":
        infinite = (frame[xr_] <= 0) | (frame[xr_] >= 1) | (frame[yr_] <= 0) | (frame[yr_] >= 1)
    else:
        infinite = (frame[xr_] <= 0) | (frame[yr_] <= 0)
    n_off = int(infinite.sum())
    frame = frame[~infinite]
    (lo, hi), (ylo, yhi) = _det_limits(frame, cols, limits, axes=axes, show=show, size=size)
    if same_range:
        lo, hi = ylo, yhi = min(lo, ylo), max(hi, yhi)
    if axes == "probit":
        frame = frame.assign(x=probit(frame[xr_]), y=probit(frame[yr_]))
        domain = ((float(ndtri(lo)), float(ndtri(hi))), (float(ndtri(ylo)), float(ndtri(yhi))))
        xs, xa = _probit_axis(titles[0], lo, hi, size, horizontal=True)
        ys, ya = _probit_axis(titles[1], ylo, yhi, size, horizontal=False)
        to_plot = probit
    else:
        frame = frame.assign(x=frame[xr_], y=frame[yr_])
        domain = ((np.log10(lo), np.log10(hi)), (np.log10(ylo), np.log10(yhi)))
        xs = alt.Scale(type="log", domain=[lo, hi], nice=False)
        ys = alt.Scale(type="log", domain=[ylo, yhi], nice=False)
        xa, ya = _log_axis(titles[0], lo, hi, size), _log_axis(titles[1], ylo, yhi, size)
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

def _wrap(line: str, width: float) -> list[str]:
    """A subtitle line cut at spaces (or after " · ") so that it fits ``width`` pixels of 12 px text."""
    limit = max(int((width + 80) / 5.8), 40)  # the axis labels' room beside the plotting area included
    if len(line) <= limit:
        return [line]
    parts = line.split(" · ")
    out, current = [], ""
    for k, part in enumerate(parts):
        piece = part if not current else current + " · " + part
        if len(piece) <= limit:
            current = piece
            continue
        if current:
            out.append(current + " ·")
        current = part
        while len(current) > limit:
            cut = current.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            out.append(current[:cut].rstrip())
            current = current[cut:].lstrip()
    if current:
        out.append(current)
    return out


def _title(text: str, subtitle: list[str], width: float | None = None) -> alt.TitleParams:
    """The chart title with its subtitle lines (empty ones dropped; with ``width``, long ones wrapped)."""
    lines = [s for s in subtitle if s]
    if width is not None:
        lines = [piece for s in lines for piece in _wrap(s, width)]
    return alt.TitleParams(text=text, subtitle=lines, anchor="start",
                           subtitleColor="#555", fontSize=16, subtitleFontSize=12, subtitlePadding=4, offset=10)


def _counts_text(ds: xr.Dataset) -> str:
    """Mated and non-mated counts: one pair, the same pair "in each" series, or a pair per series."""
    if "n_mated" not in ds or "n_nonmated" not in ds:
        return ""
    m, n = ds["n_mated"], ds["n_nonmated"]
    if not m.dims and not n.dims:
        return f"{int(m):,} mated and {int(n):,} non-mated comparisons"
    m, n = xr.broadcast(m, n)
    mv, nv = m.values.astype(int).ravel(), n.values.astype(int).ravel()
    what = " × ".join(str(d) for d in m.dims)
    if (mv == mv[0]).all() and (nv == nv[0]).all():
        return f"{mv[0]:,} mated and {nv[0]:,} non-mated comparisons in each {what}"
    stacked = m.stack(_s=m.dims) if m.ndim > 1 else m
    labels = [", ".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in stacked[stacked.dims[0]].values.tolist()]
    if len(labels) > 6:
        return (f"{int(mv.min()):,} to {int(mv.max()):,} mated and {int(nv.min()):,} to {int(nv.max()):,} "
                f"non-mated comparisons per {what}")
    return "; ".join(f"{lab}: {a:,} mated, {b:,} non-mated" for lab, a, b in zip(labels, mv, nv))


def _points_text(n_thin: int, n_all: int) -> str:
    """For the chart's description (not its subtitle): how many points of the curve are drawn."""
    return (f"The curve is drawn through {n_thin:,} of its {n_all:,} points; the others lie within a pixel of "
            "the line." if n_thin < n_all else "")


def _off_text(n_off: int, rates: str = "FMR or FNMR") -> str:
    """For the chart's description: points at a rate of 0 or 100%, which probit axes cannot show."""
    return (f"{n_off:,} points of the curve have {rates} at 0% or 100%, which lie at infinity on these axes "
            "and are not drawn." if n_off else "")


#: Result Datasets told apart by their variables: (variables it has, variables it lacks, the function).
_RESULTS = [
    (("eer_interval",), (), "bioxr.bootstrap.eer_interval"),
    (("fnmr_interval", "fmr_target"), (), "bioxr.bootstrap.fnmr_at_fmr_interval"),
    (("fmr_interval", "fnmr_interval"), (), "bioxr.bootstrap.bootstrap_curve"),
    (("cmc_interval",), (), "bioxr.bootstrap.cmc_interval"),
    (("rate_interval",), (), "bioxr.bootstrap.bootstrap_rate_interval"),
    (("empirical_variance",), (), "bioxr.design.design_study"),
    (("fpir",), (), "bioxr.identification.open_set_curve"),
    (("cmc", "rank@"), (), "bioxr.identification.cmc_curve"),
    (("cmc",), (), "bioxr.identification.identification_rate"),
    (("eer",), (), "bioxr.verification.eer"),
    (("fnmr", "fmr_target"), (), "bioxr.verification.fnmr_at_fmr"),
    (("fmr", "fnmr", "threshold@"), (), "bioxr.verification.det_curve"),
    (("fmr", "fnmr"), (), "bioxr.verification.error_rates"),
]


class ResultTypeError(TypeError, ValueError):
    """A chart was given a result of another function (or no result at all)."""


def _describe(obj) -> str:
    """What ``obj`` looks like: "the result of bioxr.x.y", "a score cube", or its type and variables."""
    if isinstance(obj, xr.DataArray):
        return "a DataArray (a score cube?)" if obj.ndim >= 2 else f"the DataArray {obj.name!r}"
    if not isinstance(obj, xr.Dataset):
        return f"a {type(obj).__name__}"
    for has, _, fn in _RESULTS:
        ok = all((h[:-1] in obj.dims) if h.endswith("@") else (h in obj.variables) for h in has)
        if ok:
            return f"the result of {fn}"
    return f"a Dataset with variables {sorted(map(str, obj.data_vars))}"


def _expect(obj, what: str, fn: str, needs: str) -> None:
    """Raise :class:`ResultTypeError` naming the function whose result ``what`` expects."""
    raise ResultTypeError(f"{what} expects the result of {fn} ({needs}); it was given {_describe(obj)}.")


def _check_curve(ds, variables, what, fn: str = "bioxr.verification.det_curve"):
    needs = f"{' and '.join(variables)} over a 'threshold' dimension"
    if not isinstance(ds, xr.Dataset):
        _expect(ds, what, fn, needs)
    missing = [v for v in variables if v not in ds]
    if missing or "threshold" not in ds[variables[0]].dims:
        _expect(ds, what, fn, needs)


def _shared(chart, share: dict):
    """Keep on ``chart`` (not in its spec) the ranges it fitted, for :func:`bioxr.plot.facet_chart` to share."""
    object.__setattr__(chart, "_bioxr_share", share)
    return chart
