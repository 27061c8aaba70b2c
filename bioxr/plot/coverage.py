"""Coverage of interval methods measured by simulation, against the nominal level.

- :func:`coverage_chart`: one point per method and simulated cell, the
  nominal level as a line and, around it, the band in which the measured
  coverage of an exactly calibrated method falls (binomial Monte Carlo
  error of ``n_replicates`` experiments), so a point outside the band is a
  miss the simulation can see and a point inside it is not.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
from scipy import stats

from ._axes import _AXIS, _LEGEND, _title

__all__ = ["coverage_chart", "monte_carlo_band"]


def monte_carlo_band(level: float, n_replicates: int, *, band: float = 0.95) -> tuple[float, float]:
    """Where the measured coverage of an exactly calibrated interval falls with probability ``band``.

    The number of the ``n_replicates`` intervals that contain the truth is
    Binomial(``n_replicates``, ``level``) for a method whose coverage is
    exactly ``level``; the band is its central ``band`` quantiles, divided
    by ``n_replicates``.

    Examples
    --------
    >>> from bioxr.plot.coverage import monte_carlo_band
    >>> lo, hi = monte_carlo_band(0.95, 2000)
    >>> round(lo, 4), round(hi, 4)
    (0.94, 0.9595)
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), not {level!r}.")
    if not 0 < band < 1:
        raise ValueError(f"band must be in (0, 1), not {band!r}.")
    if isinstance(n_replicates, bool) or not isinstance(n_replicates, (int, np.integer)) or n_replicates < 1:
        raise ValueError(f"n_replicates must be a positive integer (experiments per cell), not {n_replicates!r}.")
    tail = (1 - band) / 2
    lo, hi = stats.binom.ppf([tail, 1 - tail], n_replicates, level)
    return float(lo) / n_replicates, float(hi) / n_replicates


def coverage_chart(table: pd.DataFrame, *, x: str, method: str = "method", coverage: str = "coverage",
                   column: str | None = None, row: str | None = None, level: float = 0.95,
                   n_replicates: int, band: float = 0.95, title: str = "Coverage of the intervals"):
    """Measured coverage per method against the nominal level, with the band of Monte Carlo error.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per method and simulated cell (a tidy frame): the measured
        coverage as a fraction in [0, 1] and the columns naming the cell.
    x : str, keyword-only
        The column along the horizontal axis (e.g. the correlation rho).
    method : str, keyword-only
        The column naming the interval method (one colour each).
    coverage : str, keyword-only
        The column of measured coverages (fractions, not percent).
    column, row : str, keyword-only
        Columns splitting the cells into panels (e.g. attempts, the rate).
    level : float, keyword-only
        The intervals' nominal level: a line.
    n_replicates : int, keyword-only
        Simulated experiments per cell: the width of the band.
    band : float, keyword-only
        Probability of the band (:func:`monte_carlo_band`).
    title : str, keyword-only

    Returns
    -------
    altair.FacetChart
        Or a LayerChart when neither ``column`` nor ``row`` is given.

    Examples
    --------
    >>> import pandas as pd
    >>> from bioxr import plot
    >>> table = pd.DataFrame({"rho": [0.0, 0.0, 0.3, 0.3], "m": 5, "design": ["binomial", "icc"] * 2,
    ...                       "coverage": [0.95, 0.95, 0.71, 0.94]})
    >>> chart = plot.coverage_chart(table, x="rho", method="design", column="m", level=0.95, n_replicates=2000)
    >>> spec = chart.to_dict()
    >>> [layer["mark"]["type"] for layer in spec["spec"]["layer"]]
    ['rect', 'rule', 'point']
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"coverage_chart takes a pandas DataFrame (one row per method and cell), not {type(table).__name__}.")
    wanted = [c for c in (x, method, coverage, column, row) if c is not None]
    missing = [c for c in wanted if c not in table.columns]
    if missing:
        raise ValueError(f"coverage_chart: the table has no column {missing} (columns: {list(table.columns)}); "
                         "reset_index() a pivoted table first.")
    values = table[coverage].to_numpy(float)
    if np.any(np.isfinite(values) & ((values < 0) | (values > 1))):
        raise ValueError(f"coverage_chart: {coverage!r} must hold fractions in [0, 1]; divide percentages by 100.")
    lo, hi = monte_carlo_band(level, n_replicates, band=band)
    frame = table[wanted].copy()
    frame["_lo"], frame["_hi"], frame["_level"] = lo, hi, level
    frame["_outside"] = np.where((values < lo) | (values > hi), "outside the band", "inside the band")
    span = [float(np.nanmin(np.r_[values, lo])), float(np.nanmax(np.r_[values, hi]))]
    pad = 0.06 * (span[1] - span[0])
    domain = [max(0.0, span[0] - pad), min(1.0, span[1] + pad)]
    methods = list(dict.fromkeys(frame[method].astype(str)))
    ysc = alt.Scale(domain=domain, nice=False, zero=False)
    y = alt.Y(f"{coverage}:Q", scale=ysc, title="measured coverage", axis=alt.Axis(format=".0%", grid=True, **_AXIS))
    xenc = alt.X(f"{x}:O", title=x, axis=alt.Axis(labelAngle=0, **_AXIS))
    color = alt.Color(f"{method}:N", title=method, sort=methods, scale=alt.Scale(scheme="tableau10"),
                      legend=alt.Legend(orient="bottom", direction="horizontal", **_LEGEND))
    tooltip = [alt.Tooltip(f"{c}:N") for c in (row, column, x, method) if c is not None] + [
        alt.Tooltip(f"{coverage}:Q", format=".1%"), alt.Tooltip("_outside:N", title="Monte Carlo band")]
    base = alt.Chart()
    layers = alt.layer(
        base.mark_rect(color="#2ca02c", opacity=0.18).encode(y=alt.Y("min(_lo):Q", scale=ysc), y2="min(_hi):Q"),
        base.mark_rule(color="#333", strokeWidth=1.2).encode(y=alt.Y("min(_level):Q", scale=ysc)),
        base.mark_point(size=70, filled=True, opacity=1).encode(
            x=xenc, xOffset=alt.XOffset(f"{method}:N", sort=methods), y=y, color=color, tooltip=tooltip,
            shape=alt.Shape("_outside:N", title=None, scale=alt.Scale(domain=["inside the band", "outside the band"],
                                                                     range=["circle", "diamond"]),
                            legend=alt.Legend(orient="bottom", **_LEGEND))),
        data=frame,
    ).properties(width=170 if column else 420, height=200)
    facet = {}
    if column is not None:
        facet["column"] = alt.Column(f"{column}:O", title=column, header=alt.Header(labelFontSize=12, titleFontSize=13))
    if row is not None:
        facet["row"] = alt.Row(f"{row}:O", title=row, header=alt.Header(labelFontSize=12, titleFontSize=13))
    subtitle = [f"Line: the nominal {level:.0%}; shaded: where an exactly calibrated method's measured coverage "
                f"falls with {band:.0%} probability",
                f"({n_replicates:,} simulated experiments per cell: binomial Monte Carlo error); diamonds lie outside it"]
    chart = layers.facet(**facet) if facet else layers
    return chart.properties(title=_title(title, subtitle))
