"""The threshold explorer: a slider over the decision threshold, with the histogram, DET and rates following."""

from __future__ import annotations

import html
import time

import ipywidgets as W
import numpy as np
import xarray as xr

from .. import plot, verification
from ._common import _INK, _display_now, _num, _pct, _VegaView

try:  # confidence intervals for the table (bioxr.intervals)
    from ..intervals import binomial_interval
except ImportError:  # pragma: no cover - the hook: the table then shows no interval column
    binomial_interval = None

__all__ = ["CUSTOM", "DEFAULT_FMR_TARGETS", "ThresholdExplorer", "threshold_explorer"]


#: FMR targets offered as operating points (those below 1 / non-mated comparisons are left out).
DEFAULT_FMR_TARGETS = (0.1, 0.05, 0.01, 1e-3, 1e-4, 1e-5, 1e-6)
#: Above this many cells the explorer shows a progress bar while it computes (in a notebook).
PROGRESS_CELLS = 2_000_000
#: The operating-point choice meaning "wherever the slider is".
CUSTOM = "custom"
_LEVEL = 0.95
_TABLE_STYLE = ("<style>.bioxr-rates {line-height: 1.35} "
                ".bioxr-rates table th, .bioxr-rates table td {padding: 3px 5px; text-align: right} "
                ".bioxr-rates table td {white-space: nowrap; vertical-align: top} .bioxr-count {color: #555; font-size: 12px} "
                ".bioxr-rates table tr > :first-child {text-align: left; padding-left: 0} "
                ".bioxr-rates table tr:first-child > * {border-bottom: 1px solid #999}</style>")


#: Width of the column holding the slider, the operating point and the rates table.
_CONTROLS_PX = 250
# charts shrink to their flex box (Vega's SVG has a viewBox), so the DET can stay beside the histogram
_LAYOUT_STYLE = ("<style>.bioxr-chart {max-width: 100%; overflow: hidden} "
                 ".bioxr-chart .vega-embed {max-width: 100%; padding-right: 0 !important} "
                 ".bioxr-chart svg, .bioxr-chart img {max-width: 100%; height: auto}</style>")


def _domain(spec: dict, channel: str) -> tuple[float, float] | None:
    """The explicit scale domain of a channel in a layered spec (the first layer giving one)."""
    for layer in spec["layer"]:
        scale = (layer.get("encoding", {}).get(channel) or {}).get("scale") or {}
        if isinstance(scale.get("domain"), list) and len(scale["domain"]) == 2:
            return float(scale["domain"][0]), float(scale["domain"][1])
    return None


def _clip(v: float, domain: tuple[float, float] | None) -> float:
    lo, hi = domain if domain is not None else (-1e12, 1e12)
    return float(np.clip(v, lo, hi)) if not np.isnan(v) else lo


def _from_one_row(name: str, fields: dict, mark: dict, encoding: dict) -> dict:
    """An overlay layer of one datum whose fields are Vega expressions of the params."""
    return {"name": name, "data": {"values": [{}]},
            "transform": [{"calculate": expr, "as": field} for field, expr in fields.items()],
            "mark": mark, "encoding": encoding}


class _HistogramView(_VegaView):
    """The score histogram with the threshold rule and its label, drawn by Vega from params."""

    def __init__(self, chart, threshold: float, *, live=None):
        spec = chart.to_dict()
        self.x_domain = _domain(spec, "x")
        self.height = float(spec.get("height", 260))
        x = {"field": "bioxr_t", "type": "quantitative"}
        label = {"type": "text", "fontSize": 12, "fontWeight": "bold", "baseline": "middle",
                 "text": {"expr": "bioxr_label"}, "align": {"expr": "bioxr_align"}, "dx": {"expr": "bioxr_dx"}}
        where = {"x": x, "y": {"value": round(self.height * 0.45, 1)}}
        overlay = [
            _from_one_row("bioxr_threshold_rule", {"bioxr_t": "bioxr_t"},
                          {"type": "rule", "color": _INK, "strokeWidth": 2.5, "clip": True}, {"x": x}),
            _from_one_row("bioxr_threshold_halo", {"bioxr_t": "bioxr_t"},
                          {**label, "stroke": "white", "strokeWidth": 4, "strokeJoin": "round"}, where),
            _from_one_row("bioxr_threshold_label", {"bioxr_t": "bioxr_t"}, {**label, "color": _INK}, where),
        ]
        super().__init__(spec, overlay, self._params(threshold), alt_text="mated and non-mated score histograms "
                         "with the threshold", live=live)

    def _params(self, threshold: float) -> dict:
        x = _clip(threshold, self.x_domain)
        lo, hi = self.x_domain or (x - 1, x + 1)
        right = (x - lo) / (hi - lo) > 0.6 if hi > lo else False
        return {"bioxr_t": x, "bioxr_label": f"threshold {_num(threshold)}",
                "bioxr_align": "right" if right else "left", "bioxr_dx": -5 if right else 5}

    def move(self, threshold: float) -> None:
        self.set(**self._params(threshold))


class _DetView(_VegaView):
    """The DET curve with the operating point, its guides to the axes and its label, drawn by Vega from params."""

    def __init__(self, chart, fmr: float, fnmr: float, *, live=None):
        spec = chart.to_dict()
        self.x_domain, self.y_domain = _domain(spec, "x"), _domain(spec, "y")
        self.height = float(spec.get("height", 400))
        xlo = self.x_domain[0] if self.x_domain else -8.0
        ylo = self.y_domain[0] if self.y_domain else -8.0
        at = {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}}
        guide = {"type": "rule", "color": _INK, "strokeWidth": 1, "strokeDash": [3, 3]}
        label = {"type": "text", "fontSize": 12, "fontWeight": "bold", "text": {"expr": "bioxr_label"},
                 "align": {"expr": "bioxr_align"}, "dx": {"expr": "bioxr_dx"}, "dy": {"expr": "bioxr_dy"}}
        point = {"x": "bioxr_x", "y": "bioxr_y"}
        overlay = [
            _from_one_row("bioxr_guides_v", {**point, "y0": str(ylo)}, guide, {**at, "y2": {"field": "y0"}}),
            _from_one_row("bioxr_guides_h", {**point, "x0": str(xlo)}, guide, {**at, "x2": {"field": "x0"}}),
            _from_one_row("bioxr_operating_point", point,
                          {"type": "point", "shape": "circle", "filled": True, "size": 160, "fill": "#ff7f0e",
                           "stroke": _INK, "strokeWidth": 1.5, "opacity": 1, "fillOpacity": {"expr": "bioxr_fill"}}, at),
            _from_one_row("bioxr_operating_halo", point, {**label, "stroke": "white", "strokeWidth": 4,
                                                          "strokeJoin": "round"}, at),
            _from_one_row("bioxr_operating_label", point, {**label, "color": _INK}, at),
        ]
        super().__init__(spec, overlay, self._params(fmr, fnmr),
                         alt_text="DET curve with the current operating point", live=live)

    def _params(self, fmr: float, fnmr: float) -> dict:
        x = _clip(float(plot.probit(fmr)) if np.isfinite(fmr) else np.nan, self.x_domain)
        y = _clip(float(plot.probit(fnmr)) if np.isfinite(fnmr) else np.nan, self.y_domain)
        off = [name for name, v in (("FMR", fmr), ("FNMR", fnmr)) if not 0 < v < 1]
        label = f"FMR {_pct(fmr)}, FNMR {_pct(fnmr)}" + (f" ({' and '.join(off)} off the axes)" if off else "")
        xlo, xhi = self.x_domain or (x - 1, x + 1)
        ylo, yhi = self.y_domain or (y - 1, y + 1)
        right = (x - xlo) / (xhi - xlo) > 0.5 if xhi > xlo else False
        y_px = (1 - (y - ylo) / (yhi - ylo)) * self.height if yhi > ylo else 0.0
        return {"bioxr_x": x, "bioxr_y": y, "bioxr_label": label, "bioxr_align": "right" if right else "left",
                "bioxr_dx": -10 if right else 10, "bioxr_dy": -12 if y_px > 30 else 22,
                "bioxr_fill": 0.35 if off else 1.0}

    def move(self, fmr: float, fnmr: float) -> None:
        self.set(**self._params(fmr, fnmr))


class ThresholdExplorer(W.VBox):
    """A threshold slider linked to the score histogram, the DET curve and a rates table.

    Build it with :func:`threshold_explorer`. Its parts are attributes, so a
    script (or a test) can drive it without a browser: set
    ``explorer.slider.value`` or ``explorer.target.value`` and read
    ``explorer.table.value`` or ``explorer.rates``.

    Attributes
    ----------
    slider : ipywidgets.FloatSlider
        The decision threshold, over the range of the scores.
    target : ipywidgets.Dropdown
        Operating points: ``"eer"``, FMR targets (floats, e.g. ``0.001``),
        or ``"custom"`` once the slider has been moved by hand.
    table : ipywidgets.HTML
        FMR and FNMR at the threshold, with counts and 95% binomial intervals (modified Wilson).
    histogram, det : altair.JupyterChart or ipywidgets.HTML
        The score histogram with the threshold, and the DET curve with the
        operating point: live Vega views whose overlay follows Vega-Lite
        params, or (``live=False``) SVG images of the same spec.
    progress : ipywidgets.IntProgress
        Steps of the initial computation (hidden when done).
    status : ipywidgets.Label
        What happened last, and how long the update took.
    threshold : float
        The exact threshold in use (the slider shows it rounded to its step;
        an FMR target may need a threshold above every score, ``+inf``).
    rates : xarray.Dataset
        :func:`bioxr.verification.error_rates` at ``threshold``.
    det_curve, eer, operating_points : xarray.Dataset
        Computed once: the exact DET curve, the EER (``eer_method``) and
        :func:`bioxr.verification.fnmr_at_fmr` at the offered targets.
    last_update_seconds : float
        Time the last update took in the kernel (counting errors, the table, sending both
        charts' params; with ``live=False`` rendering both images).
    """

    def __init__(self, cube: xr.DataArray, *, eer_method: str = "rocch", fmr_targets=DEFAULT_FMR_TARGETS,
                 show_progress: bool | None = None, live: bool | None = None):
        from .._core import as_data

        as_data(cube, "threshold_explorer")  # a score cube or a comparison list
        if eer_method not in verification.EER_METHODS:
            raise ValueError(f"eer_method={eer_method!r}; choose one of {verification.EER_METHODS}.")
        self.cube = cube
        self.eer_method = eer_method
        self.progress = W.IntProgress(value=0, min=0, max=5, description="computing", bar_style="info",
                                      layout=W.Layout(width="60%"))
        self.status = W.Label("")
        if show_progress is None:
            show_progress = (cube["score"] if isinstance(cube, xr.Dataset) else cube).size >= PROGRESS_CELLS
        shown = W.HBox([self.progress, self.status]) if show_progress else None
        if shown is not None:
            _display_now(shown)  # the box itself only appears once built: show the steps meanwhile
        self._syncing = False
        self.last_update_seconds = float("nan")

        self._step("the score range")
        lo, hi, integer = _score_range(cube)
        self._step("the exact DET curve")
        self.det_curve = verification.det_curve(cube)
        n_nonmated = int(self.det_curve.n_nonmated)
        self._step(f"the EER ({eer_method}) and the operating points")
        self.eer = verification.eer(cube, method=eer_method)
        targets = sorted({float(f) for f in fmr_targets if float(f) * n_nonmated >= 1}, reverse=True)
        self.operating_points = verification.fnmr_at_fmr(cube, targets) if targets else None
        self._step("the score histogram")
        eer_t = float(self.eer.threshold)
        marks = {f"EER ({eer_method})": eer_t} if np.isfinite(eer_t) else None
        self._hist = _HistogramView(plot.score_histogram(cube, threshold=marks), eer_t, live=live)
        self._step("the DET chart")
        start = verification.error_rates(cube, eer_t)  # the views start where the explorer starts
        self._det = _DetView(plot.det_chart(self.det_curve, eer=self.eer, limits=self._det_limits()),
                             float(start.fmr), float(start.fnmr), live=live)

        step = _slider_step(lo, hi, integer)
        self.slider = W.FloatSlider(
            min=lo, max=hi, step=step, value=float(np.clip(eer_t, lo, hi)), continuous_update=False,
            readout_format=".4g", description="", layout=W.Layout(width="100%"),
            description_allow_html=False, tooltip="decision threshold",
        )
        options = [(f"EER ({eer_method})", "eer")] + [(f"FMR ≤ {_pct(f)}", f) for f in targets]
        options.append(("custom (slider)", CUSTOM))
        self.target = W.Dropdown(options=options, value="eer", description="operating point",
                                 style={"description_width": "initial"}, layout=W.Layout(width="100%"))
        self.table = W.HTML()
        self.histogram, self.det = self._hist.widget, self._det.widget
        self.histogram.add_class("bioxr-chart")
        self.det.add_class("bioxr-chart")
        self.threshold = eer_t
        self.slider.observe(self._on_slider, names="value")
        self.target.observe(self._on_target, names="value")

        self.progress.value = self.progress.max
        self.progress.layout.display = "none"
        if shown is not None:
            shown.layout.display = "none"
        # the controls and the rates table in a narrow column with the DET beside them (it takes the
        # rest of the row, 500 px or more in a notebook from about 1200 px windows, JupyterLab's file
        # browser open); the histogram, whose x axis is the slider's scale, across the width below
        left = W.VBox([W.Label("threshold"), self.slider, self.target, self.table],
                      layout=W.Layout(flex=f"0 1 {_CONTROLS_PX}px", min_width=f"{_CONTROLS_PX - 10}px"))
        right = W.VBox([self.det], layout=W.Layout(flex="1 1 480px", min_width="460px", max_width="640px"))
        top = W.HBox([left, right], layout=W.Layout(flex_flow="row wrap", align_items="flex-start", width="100%",
                                                     grid_gap="8px"))
        below = W.VBox([self.histogram], layout=W.Layout(width="100%", max_width="900px"))
        super().__init__([W.HTML(_LAYOUT_STYLE), self.progress, top, below, self.status])
        self._update(f"operating point: EER ({eer_method})")

    def _det_limits(self) -> tuple[float, float]:
        """DET axes wide enough for the EER and every operating point offered."""
        rates = [float(self.eer.eer)]
        if self.operating_points is not None:
            rates += self.operating_points.fmr.values.tolist() + self.operating_points.fnmr.values.tolist()
        rates = [r for r in rates if 0 < r < 1]
        if not rates:
            return (1e-3, 0.5)
        nice = [m * 10.0**e for e in range(-7, 0) for m in (1, 2, 5)]
        lo = max([p for p in nice if p <= min(min(rates), 0.01)] or [1e-7])
        hi = min([p for p in (0.5, 0.6, 0.8, 0.9, 0.95, 0.99) if p >= max(rates)] or [0.99])
        return lo, hi

    # ----------------------------------------------------------- events ---

    def _step(self, what: str) -> None:
        self.status.value = f"computing {what}…"
        self.progress.value = min(self.progress.value + 1, self.progress.max)

    def _on_slider(self, change) -> None:
        if self._syncing:
            return
        self.threshold = float(change["new"])
        if self.target.value != CUSTOM:
            self._syncing = True
            try:
                self.target.value = CUSTOM
            finally:
                self._syncing = False
        self._update("threshold set with the slider")

    def _on_target(self, change) -> None:
        if self._syncing or change["new"] == CUSTOM:
            return
        choice = change["new"]
        if choice == "eer":
            t, why = float(self.eer.threshold), f"operating point: EER ({self.eer_method})"
        else:
            op = self.operating_points.sel(fmr_target=choice)
            t, why = float(op.threshold), f"operating point: the most lenient threshold with FMR ≤ {_pct(choice)}"
        self.set_threshold(t, reason=why, keep_target=True)

    def set_threshold(self, threshold: float, *, reason: str = "threshold set", keep_target: bool = False) -> None:
        """Move to an exact threshold (the slider shows it within its range)."""
        self.threshold = float(threshold)
        self._syncing = True
        try:
            self.slider.value = float(np.clip(self.threshold, self.slider.min, self.slider.max))
            if not keep_target:
                self.target.value = CUSTOM
        finally:
            self._syncing = False
        self._update(reason)

    # ----------------------------------------------------------- drawing --

    def _update(self, reason: str) -> None:
        start = time.perf_counter()
        self.rates = verification.error_rates(self.cube, self.threshold)
        self.table.value = self._table_html(self.rates)
        self._hist.move(self.threshold)
        self._det.move(float(self.rates.fmr), float(self.rates.fnmr))
        self.last_update_seconds = time.perf_counter() - start
        self.status.value = f"{reason} · updated in {self.last_update_seconds * 1000:.0f} ms"

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, with the current state as static HTML for outputs without a widget manager."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is not None:
            bundle["text/html"] = self.static_html()
        return bundle

    def static_html(self) -> str:
        """The charts and the table at the current threshold as offline HTML (images rendered by Vega)."""
        return ('<div class="bioxr-explorer-static"><div style="display:flex;flex-flow:row wrap;gap:8px;'
                f'align-items:flex-start"><div style="flex:0 1 {_CONTROLS_PX}px;min-width:{_CONTROLS_PX - 10}px">'
                f'{self.table.value}</div><div style="flex:1 1 480px;min-width:460px;max-width:640px">'
                f'{self._det.image()}</div></div><div style="max-width:900px">{self._hist.image()}</div></div>')

    def _table_html(self, r: xr.Dataset) -> str:
        fm, fnm = int(r.false_matches), int(r.false_nonmatches)
        n_n, n_m = int(r.n_nonmated), int(r.n_mated)
        rows = [("FMR", "false match rate", float(r.fmr), fm, n_n, "non-mated comparisons accepted"),
                ("FNMR", "false non-match rate", float(r.fnmr), fnm, n_m, "mated comparisons rejected")]
        intervals = _intervals([fm, fnm], [n_n, n_m])
        head = "<tr><th>rate</th><th>value (errors)</th>"
        head += f"<th>{_LEVEL:.0%} interval</th></tr>" if intervals else "<th>interval</th></tr>"
        body = []
        for k, (short, long, rate, errors, trials, what) in enumerate(rows):
            cell = "<td>–</td>"
            if intervals:
                lo, hi, method = intervals[1][k]
                note = " (rule of three)" if method != intervals[0] else ""
                cell = f"<td>{_pct(lo)} – {_pct(hi)}{'<br>' + note if note else ''}</td>"
            body.append(f'<tr class="bioxr-{short.lower()}"><th title="{long}">{short}</th><td><b>{_pct(rate)}</b>'
                        f'<br><span class="bioxr-count" title="{what}">{errors:,} of {trials:,}</span></td>{cell}</tr>')
        rule = html.escape(str(r.attrs.get("decision_rule", "")))
        note = (f"FMR: non-mated comparisons accepted; FNMR: mated comparisons rejected. {intervals[0][0].upper()}"
                f"{intervals[0][1:]} "
                "intervals treat comparisons as independent; attempts of one subject are correlated, so the "
                "true uncertainty is larger (see bioxr.correlation)." if intervals else
                "Confidence intervals need bioxr.intervals, which is not available.")
        return (
            '<div class="bioxr-rates" style="font-size:13px">' + _TABLE_STYLE +
            f"<div><b>At threshold {_num(self.threshold)}</b> ({rule})</div>"
            '<table style="border-collapse:collapse;margin:4px 0">' + head + "".join(body) + "</table>"
            f'<div style="color:#555;font-size:12px">{note}</div></div>'
        )


def _intervals(errors, trials):
    """(method, [(lower, upper, method used), ...]) from bioxr.intervals, or None without it."""
    if binomial_interval is None:
        return None
    ci = binomial_interval(np.asarray(errors, dtype=float), np.asarray(trials, dtype=float), level=_LEVEL)
    bounds = np.asarray(ci.transpose(..., "bound").values, dtype=float).reshape(-1, 2)
    method = ci.attrs.get("method", "modified-wilson")
    used = np.asarray(ci["interval_method"].values).reshape(-1) if "interval_method" in ci.coords else [method] * 2
    label = {"modified-wilson": "modified Wilson", "wilson": "Wilson", "clopper-pearson": "Clopper-Pearson",
             "jeffreys": "Jeffreys"}.get(method, method)
    return label, [(b[0], b[1], label if m == method else str(m)) for b, m in zip(bounds, used)]


def _score_range(cube: xr.DataArray) -> tuple[float, float, bool]:
    """Lowest and highest score, and whether every score is an integer (NaN skipped)."""
    if isinstance(cube, xr.Dataset):  # a comparison list
        cube = cube["score"]
    lo, hi = float(cube.min(skipna=True)), float(cube.max(skipna=True))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("the score cube holds no finite score.")
    integer = bool(((cube % 1) == 0).where(cube.notnull(), True).all())
    return lo, (hi if hi > lo else lo + 1.0), integer


def _slider_step(lo: float, hi: float, integer: bool) -> float:
    """1 for integer scores (up to 2,000 of them); else a 1-2-5 step giving about 500 positions."""
    span = hi - lo
    if integer and span <= 2000:
        return 1.0
    raw = span / 500
    power = 10.0 ** np.floor(np.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return float(max(step, 1.0) if integer else step)



def threshold_explorer(cube: xr.DataArray, *, eer_method: str = "rocch", fmr_targets=DEFAULT_FMR_TARGETS,
                       show_progress: bool | None = None, live: bool | None = None) -> ThresholdExplorer:
    """An interactive explorer of the decision threshold on a score cube.

    A slider over the score range (or an operating point picked from a list:
    the EER, or the most lenient threshold meeting an FMR target) moves the
    threshold; the score histogram shows it as a rule, the DET curve as a
    point, and a table gives FMR and FNMR with their counts and 95% modified-Wilson
    intervals. Works offline: the overlay is a layer of the Vega-Lite chart
    itself, bound to params, and Vega's JavaScript comes from vl-convert.
    The slider, the operating point and the table sit in a narrow column
    with the DET beside them, 500 px wide or more in JupyterLab from about
    1200 px windows (file browser open); the histogram runs across the
    width below, its x axis the slider's scale. In narrower windows the
    DET wraps below the controls. A static export (nbconvert HTML without
    a widget manager) shows the state at export as images. A notebook
    saved *with* widget state makes nbconvert's page fetch the widget
    manager from a CDN instead, blank offline: export it with
    :func:`bioxr.report.notebook_to_html`, which drops the state.

    The exact DET curve, the EER and the FMR targets are computed once (a
    progress bar shows the steps for cubes of 2e6 cells or more); each move
    then counts errors at one threshold and sends the new overlay.

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube; every probe dimension is pooled.
    eer_method : {"rocch", "interpolated", "nearest"}, keyword-only
        EER convention of the starting operating point and the DET's EER mark.
    fmr_targets : sequence of float, keyword-only
        FMR targets offered as operating points; targets below one false
        match in all non-mated comparisons are left out.
    show_progress : bool, optional, keyword-only
        Display the progress bar while computing; default for cubes of
        :data:`PROGRESS_CELLS` cells or more, inside a notebook.
    live : bool, optional, keyword-only
        Draw the charts as live Vega views in the browser (Altair's
        ``JupyterChart``, offline; needs ``anywidget``): a move sends the
        threshold and the operating point as Vega-Lite params and Vega redraws
        the overlay. With ``False`` each move renders the same layered spec
        to an SVG image in the kernel (vl-convert, slower). Default: live
        when anywidget is installed.

    Returns
    -------
    ThresholdExplorer
        An :class:`ipywidgets.VBox`; display it (last expression of a cell).

    See Also
    --------
    bioxr.verification.error_rates, bioxr.verification.det_curve, bioxr.plot.det_chart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.widgets import threshold_explorer
    >>> explorer = threshold_explorer(bioxr.simulate.gaussian(n_subjects=40, seed=0))
    >>> explorer.target.value
    'eer'
    >>> explorer.slider.value = 2.0
    >>> explorer.target.value, int(explorer.rates.false_nonmatches) > 0
    ('custom', True)
    >>> "FNMR" in explorer.table.value
    True
    """
    return ThresholdExplorer(cube, eer_method=eer_method, fmr_targets=fmr_targets, show_progress=show_progress,
                             live=live)
