"""Specificity and generalisation of generative models, with their standard errors.

- :func:`generative_chart`: ``G`` and ``S`` (Schestowitz et al. 2006) with
  bars of their standard errors, one row per model
  (:func:`bioxr.generative.compare_models`), or against a numeric
  dimension such as the training size (results concatenated along it),
  as the source's figures draw them against the degree of misregistration.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from ._axes import _AXIS, _LEGEND, SIZE, _title

__all__ = ["generative_chart"]

_MEASURES = {  # variable: (label, colour)
    "G": ("generalisation G", "#1f77b4"),
    "S": ("specificity S", "#d62728"),
}


def _fmt(value: float, se: float) -> str:
    decimals = max(0, 1 - int(np.floor(np.log10(se)))) if np.isfinite(se) and se > 0 else 3
    return f"{value:,.{decimals}f} ± {se:,.{decimals}f}"


def _frame(result: xr.Dataset, dim, se: float) -> pd.DataFrame:
    labels = result[dim].values.tolist() if dim is not None else ["model"]
    rows = []
    for label in labels:
        ds = result.sel({dim: label}) if dim is not None else result
        for var, (name, _) in _MEASURES.items():
            value, sigma = float(ds[var]), float(ds[f"sigma_{var}"])
            rows.append({"model": str(label), "position": label, "measure": name, "value": value, "sigma": sigma,
                         "lower": value - se * sigma, "upper": value + se * sigma, "text": _fmt(value, sigma),
                         "count": int(ds["n_training" if var == "G" else "n_synthetic"])})
    return pd.DataFrame(rows)


def _range(values) -> str:
    values = sorted({int(v) for v in np.atleast_1d(values)})
    return f"{values[0]:,}" if len(values) == 1 else f"{values[0]:,} to {values[-1]:,}"


def _counts_lines(result: xr.Dataset) -> list[str]:
    distance = str(result.attrs.get("distance", ""))
    lines = [distance[:1].upper() + distance[1:]] if distance else []
    if "n_training" in result and "n_synthetic" in result:
        lines.append(f"{_range(result['n_training'].values)} training samples; {_range(result['n_synthetic'].values)} "
                     "synthetic samples" + (" per model" if result["G"].ndim else ""))
    return lines


def generative_chart(result: xr.Dataset, *, se: float = 1.0, title: str | None = None) -> alt.LayerChart:
    """Specificity and generalisation with their standard errors, per model or along a numeric dimension.

    Points are ``G`` and ``S``; bars span ``value ± se x sigma``. With a
    dimension of model names (from :func:`bioxr.generative.compare_models`)
    each model is a row holding both measures, labelled with value and
    standard error; along a numeric dimension (training sizes, degrees of
    misregistration) the measures are lines against it. The distance axis
    is fitted to the bars with a margin (zero is a model that copies its
    training set, and is drawn only when the bars come near it).

    Parameters
    ----------
    result : xarray.Dataset
        From :func:`bioxr.generative.specificity_generalisation` (one
        model), :func:`bioxr.generative.compare_models`, or such results
        concatenated along one dimension: ``G``, ``sigma_G``, ``S``,
        ``sigma_S`` over at most one dimension.
    se : float, keyword-only
        Half-width of the bars in standard errors (1: the source's figures;
        2: about a 95% interval).
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    See Also
    --------
    bioxr.generative.compare_models, bioxr.generative.describe

    Examples
    --------
    >>> from bioxr import generative, plot, simulate
    >>> clouds = simulate.generative_models(n_training=60, n_synthetic=80, n_features=4, seed=2)
    >>> res = generative.compare_models(clouds.training, clouds.synthetic, synthetic_dim="draw")
    >>> spec = plot.generative_chart(res).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['rule', 'point', 'text']
    """
    if not isinstance(result, xr.Dataset) or not {"G", "sigma_G", "S", "sigma_S"} <= set(result.data_vars):
        raise TypeError("generative_chart takes the result of bioxr.generative.specificity_generalisation or "
                        f"compare_models (G, sigma_G, S, sigma_S), got {type(result).__name__}"
                        + (f" with variables {sorted(result.data_vars)}." if isinstance(result, xr.Dataset) else "."))
    if not (np.isfinite(se) and se > 0):
        raise ValueError(f"se must be a positive number of standard errors, not {se!r}.")
    dims = result["G"].dims
    if len(dims) > 1:
        raise ValueError(f"generative_chart draws one model or one dimension of models, not dims {dims}: "
                         "select or stack the others first.")
    dim = dims[0] if dims else None
    frame = _frame(result, dim, se)
    lo, hi = float(frame["lower"].min()), float(frame["upper"].max())
    pad = 0.08 * (hi - lo) if hi > lo else 0.1 * max(abs(hi), 1e-12)
    domain = [max(0.0, lo - pad) if lo - pad < 0.25 * (hi - lo) else lo - pad, hi + pad]
    names = [v[0] for v in _MEASURES.values()]
    color = alt.Color("measure:N", title=None, scale=alt.Scale(domain=names, range=[v[1] for v in _MEASURES.values()]),
                      legend=alt.Legend(orient="bottom", direction="horizontal", **_LEGEND))
    tooltip = [alt.Tooltip("model:N", title=str(dim or "model")), alt.Tooltip("measure:N"),
               alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("sigma:Q", title="standard error", format=".2g"),
               alt.Tooltip("count:Q", title="samples averaged", format=",")]
    what = str(result.attrs.get("metric", "euclidean"))
    axis_title = f"mean nearest {what} distance (lower is better)"
    numeric = dim is not None and np.issubdtype(result[dim].dtype, np.number)
    if numeric:
        positions = frame["position"].astype(float)
        log = positions.min() > 0 and positions.max() / positions.min() >= 8
        xsc = alt.Scale(type="log" if log else "linear", nice=False, padding=12)
        x = alt.X("position:Q", scale=xsc, title=str(dim).replace("_", " "),
                  axis=alt.Axis(values=sorted(set(positions)), format="~g", grid=False, **_AXIS))
        ysc = alt.Scale(domain=domain, nice=False, zero=False)
        y = alt.Y("value:Q", scale=ysc, title=axis_title, axis=alt.Axis(grid=True, **_AXIS))
        layers = [
            alt.Chart(frame).mark_line(strokeWidth=1.6).encode(x=x, y=y, color=color),
            alt.Chart(frame).mark_rule(strokeWidth=2).encode(x=x, y=alt.Y("lower:Q", scale=ysc), y2="upper:Q",
                                                              color=color, tooltip=tooltip),
            alt.Chart(frame).mark_point(size=60, filled=True, opacity=1).encode(x=x, y=y, color=color, tooltip=tooltip),
        ]
        size = dict(width=SIZE + 160, height=SIZE * 3 // 4)
    else:
        order = list(dict.fromkeys(frame["model"]))
        domain[1] += 0.14 * (domain[1] - domain[0])  # room for the labels right of the bars
        xsc = alt.Scale(domain=domain, nice=False, zero=False)
        x = alt.X("value:Q", scale=xsc, title=axis_title, axis=alt.Axis(grid=True, tickCount=8, **_AXIS))
        y = alt.Y("model:N", sort=order, title=None,
                  axis=alt.Axis(labelLimit=300, labelFontSize=12, labelPadding=6, domain=False, ticks=False))
        offset = alt.YOffset("measure:N", sort=names, scale=alt.Scale(domain=names, paddingOuter=0.5))
        layers = [
            alt.Chart(frame).mark_rule(strokeWidth=2.4).encode(x=alt.X("lower:Q", scale=xsc), x2="upper:Q", y=y,
                                                                yOffset=offset, color=color, tooltip=tooltip),
            alt.Chart(frame).mark_point(size=70, filled=True, opacity=1).encode(x=x, y=y, yOffset=offset,
                                                                               color=color, tooltip=tooltip),
            alt.Chart(frame).mark_text(align="left", dx=8, fontSize=11, color="#333").encode(
                x=alt.X("upper:Q", scale=xsc), y=y, yOffset=offset, text="text:N"),
        ]
        size = dict(width=SIZE + 300, height=max(110, 74 * len(order)))
    bars = "1 standard error" if se == 1 else f"{se:g} standard errors"
    subtitle = ["Points: G and S, each a mean distance to the nearest sample of the other set",
                f"Bars: ± {bars}; lower is better", *_counts_lines(result)]
    title = title if title is not None else "Generalisation and specificity" + (
        f" by {str(dim).replace('_', ' ')}" if dim is not None else "")
    return alt.layer(*layers).properties(title=_title(title, subtitle), **size)
