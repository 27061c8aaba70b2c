"""Identification charts: the CMC and the open-set DET (FNIR against FPIR)."""

from __future__ import annotations

import altair as alt
import numpy as np
import xarray as xr

from ._axes import (_AXIS, _RATE_FORMAT, DET_SIZE, SIZE, _check_curve, _color, _det_axes, _expect, _fill, _off_text,
                    _order_rows, _points_text, _series_frame, _shared, _title)
from .uncertainty import _BAND_OPACITY, _band_text, _kind_encoding, _rank_band_frame

__all__ = ["cmc_chart", "open_set_chart"]


def _check_ranked(cmc, what):
    if not isinstance(cmc, xr.Dataset) or "cmc" not in cmc or "rank" not in cmc["cmc"].dims:
        _expect(cmc, what, "bioxr.identification.cmc_curve", "cmc over a 'rank' dimension, not one rank")


def _ties_text(attrs) -> str:
    rule = str(attrs.get("tie_rule", ""))
    return "Ties split as in ISO/IEC 19795-1 Annex F (fractional counts)" if "Annex F" in rule else rule


def cmc_chart(cmc: xr.Dataset, *, band: xr.Dataset | None = None, max_rank: int | None = None,
              xscale: str = "auto", limits: tuple[float, float] | None = None,
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
    band : xarray.Dataset, optional, keyword-only
        A pointwise interval of the identification rate at each rank, shaded
        under the curve: ``rate_interval`` (or ``cmc_interval``) over
        ``(*kept, "rank", "bound")``, e.g. from
        :func:`bioxr.bootstrap.bootstrap_rate_interval` on per-subject
        counts of searches found at or below each rank (the same replicate
        weights for every rank). The subtitle names its method, level and
        replicates from ``attrs``. A simultaneous band ``cmc_band`` (from
        :func:`bioxr._core.simultaneous_band` over ``rank``: the whole
        curve at once) beside or instead of it is shaded lighter, and a
        legend names each ("95% simultaneous band", "95% pointwise band");
        its critical value is in the subtitle.
    max_rank : int, optional, keyword-only
        Highest rank drawn; default every rank in ``cmc``.
    xscale : {"auto", "linear", "log"}, keyword-only
        Rank axis; "auto" is linear up to 50 ranks and logarithmic beyond.
    limits : (float, float), optional, keyword-only
        Lowest and highest identification rate shown; default from a round
        rate below the lowest one drawn (the band included) to 100%.
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
    >>> import xarray as xr
    >>> spread = xr.DataArray([-0.02, 0.02], dims="bound", coords={"bound": ["lower", "upper"]})
    >>> band = xr.Dataset({"rate_interval": (cmc.cmc + spread).clip(0, 1)})  # any interval per rank
    >>> [layer["mark"]["type"] for layer in plot.cmc_chart(cmc, band=band, max_rank=10).to_dict()["layer"]]
    ['area', 'line', 'point', 'point', 'text']
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
    yhi = 1.0
    if limits is not None:
        ylo, yhi = (float(v) for v in limits)
        if not 0 <= ylo < yhi <= 1:
            raise ValueError(f"limits={limits!r}: give rates with 0 <= low < high <= 1.")
    if log:
        ticks = [float(m * 10**e) for e in range(0, len(str(top)) + 1) for m in (1, 2, 5) if m * 10**e <= top]
        ticks = [t for t in ticks if t == 1 or top / t >= 1.4] + [float(top)]  # an end tick at the highest rank
        xsc = alt.Scale(type="log", domain=[1, top], nice=False)
        xax = alt.Axis(values=ticks, format="d", title="Rank (log scale)", grid=True, **_AXIS)
    else:
        xsc = alt.Scale(domain=[0.5, top + 0.5], nice=False, zero=False)
        xax = alt.Axis(format="d", tickMinStep=1, title="Rank", grid=True, **_AXIS)
    x = alt.X("rank:Q", scale=xsc, axis=xax)
    y = alt.Y("cmc:Q", scale=alt.Scale(domain=[ylo, yhi], nice=False),
              axis=alt.Axis(format="~%", title="Identification rate (mate at or below the rank)", **_AXIS))
    color = _color(frame, series)
    tooltip = [alt.Tooltip("rank:Q", format="d"), alt.Tooltip("cmc:Q", title="identification rate", format=".2%")] + (
        [alt.Tooltip(f"{series}:N")] if series else [])
    n_series = frame[series].nunique() if series else 1
    layers = []
    band_text = []
    if band is not None:
        shade = _rank_band_frame(band, series, frame["rank"].unique())
        if limits is None:
            ylo = min(ylo, max(0.0, np.floor(float(shade["lower"].min()) * 10 - 1e-9) / 10))
        yaxis = alt.Axis(format="~%", title="Identification rate (mate at or below the rank)", **_AXIS)
        y = alt.Y("cmc:Q", scale=alt.Scale(domain=[ylo, yhi], nice=False), axis=yaxis)
        detail = [alt.Detail(f"{series}:N")] if series else []
        kinds = [alt.Detail("band:N"), *_kind_encoding(shade)] if "band" in shade else []
        layers.append(alt.Chart(shade).mark_area(opacity=_BAND_OPACITY, clip=True, interpolate="linear").encode(
            x, alt.Y("lower:Q", scale=alt.Scale(domain=[ylo, yhi], nice=False), axis=yaxis), alt.Y2("upper:Q"), *detail,
            *kinds, fill=_fill(frame, series),
            tooltip=[alt.Tooltip("rank:Q", format="d"), alt.Tooltip("lower:Q", format=".2%"),
                     alt.Tooltip("upper:Q", format=".2%")] + ([alt.Tooltip("band:N")] if kinds else [])))
        band_text = _band_text(band, "the identification rate at each rank")
    layers.append(alt.Chart(frame).mark_line(strokeWidth=2, clip=True).encode(x=x, y=y, color=color, tooltip=tooltip))
    per_curve = len(frame) / n_series
    layers.append(alt.Chart(frame if per_curve <= 60 else frame.iloc[:0]).mark_point(filled=True, size=30, clip=True)
                  .encode(x=x, y=y, color=color, tooltip=tooltip))
    first = frame[frame["rank"] == 1]
    first = first.assign(label=[f"rank 1: {v:.2%}" for v in first["cmc"]])
    if band is not None and not series:
        at1 = shade[shade["rank"] == 1]
        if "band" in at1 and at1["band"].nunique() > 1:  # the pointwise interval beside the rate
            at1 = at1[at1["band"] == at1["band"].iloc[-1]]
        if len(at1) == 1:  # the rank-1 interval beside the rate
            which = ", simultaneous" if "band" in at1 and "simultaneous" in str(at1["band"].iloc[0]) else ""
            first = first.assign(label=f"rank 1: {float(first['cmc'].iloc[0]):.2%} "
                                       f"({float(at1['lower'].iloc[0]):.1%} to {float(at1['upper'].iloc[0]):.1%}"
                                       f"{which})")
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
        + (f" · {n_excl:,} {'probe' if n_excl == 1 else 'probes'} not counted (not enrolled, or never compared "
           f"with {'its' if n_excl == 1 else 'their'} mate)" if n_excl else ""),
        _ties_text(cmc.attrs),
        *band_text,
    ]
    return _shared(alt.layer(*layers).properties(width=SIZE + 100, height=SIZE * 3 // 4,
                                         title=_title(title, subtitle, SIZE + 100 + (140 if series else 0))), {"limits": [ylo, yhi]})


def open_set_chart(curve: xr.Dataset, *, axes: str = "probit", limits=None,
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
    limits : optional, keyword-only
        Fixed axes, as in :func:`det_chart`: ``(low, high)`` for both, or
        ``((x_low, x_high), (y_low, y_high))``; default: each axis fitted
        to the curve.
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
    'False positive identification rate (FPIR, in %)'
    """
    if axes not in ("probit", "loglog"):
        raise ValueError(f"axes={axes!r}; choose 'probit' or 'loglog'.")
    if isinstance(curve, xr.Dataset) and "fnir" not in curve and "dir" in curve:
        curve = curve.assign(fnir=1 - curve["dir"])
    _check_curve(curve, ("fpir", "fnir"), "open_set_chart", "bioxr.identification.open_set_curve")
    frame, series = _series_frame(curve, ("fpir", "fnir"))
    frame = _order_rows(frame.dropna(subset=["fpir", "fnir"]), series)
    geo = _det_axes(frame, ("fpir", "fnir"),
                    ("False positive identification rate (FPIR)", "False negative identification rate (FNIR)"),
                    axes, limits, series, size=DET_SIZE)
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
    ]
    description = " ".join(t for t in (f"{title}.", _off_text(geo.n_off, "FPIR or FNIR"),
                                       _points_text(len(geo.frame), geo.n_all)) if t)
    (lo, hi), (ylo, yhi) = geo.limits, geo.y_limits
    return _shared(alt.layer(*layers).properties(width=DET_SIZE, height=DET_SIZE, description=description,
                                         title=_title(title, subtitle, DET_SIZE + (160 if series else 0))), {"limits": [[lo, hi], [ylo, yhi]]})

