"""The threshold explorer: a slider over the decision threshold, with the histogram, DET and rates following."""

from __future__ import annotations

import base64
import html
import re
import time

import ipywidgets as W
import numpy as np
import xarray as xr

from .. import plot, verification
from ._common import _FONT, _INK, _display_now, _num, _pct

try:  # confidence intervals for the table (bioxr.intervals)
    from ..intervals import binomial_interval
except ImportError:  # pragma: no cover - the hook: the table then shows no interval column
    binomial_interval = None

__all__ = ["ThresholdExplorer", "threshold_explorer", "DEFAULT_FMR_TARGETS", "CUSTOM"]


#: FMR targets offered as operating points (those below 1 / non-mated comparisons are left out).
DEFAULT_FMR_TARGETS = (0.1, 0.05, 0.01, 1e-3, 1e-4, 1e-5, 1e-6)
#: Above this many cells the explorer shows a progress bar while it computes (in a notebook).
PROGRESS_CELLS = 2_000_000
#: The operating-point choice meaning "wherever the slider is".
CUSTOM = "custom"
_LEVEL = 0.95
_TABLE_STYLE = ("<style>.bioxr-rates table th, .bioxr-rates table td {padding: 3px 12px; text-align: right} "
                ".bioxr-rates table tr > :first-child {text-align: left; padding-left: 0} "
                ".bioxr-rates table tr:first-child > * {border-bottom: 1px solid #999}</style>")


class _Canvas:
    """A chart rendered once to SVG, with marks drawn over it on every update.

    The plotting area's origin is read from the SVG (Vega's renderer
    translates its root group there) and the scales are the chart's own
    explicit domains, so an overlaid mark lands where Vega would draw it.
    """

    def __init__(self, chart, *, layer_with_domain: int, alt_text: str):
        spec = chart.to_dict()
        self.svg = plot.render_svg(spec)
        found = re.search(r'<g\b[^>]*\btransform="translate\(([-\d.e]+),\s*([-\d.e]+)\)"', self.svg)
        if found is None:  # pragma: no cover - depends on vl-convert's SVG writer
            raise RuntimeError("cannot locate the plotting area in the rendered chart")
        self.origin = (float(found.group(1)), float(found.group(2)))
        self.width, self.height = float(spec["width"]), float(spec["height"])
        enc = spec["layer"][layer_with_domain]["encoding"]
        self.x_domain = tuple(map(float, enc["x"]["scale"]["domain"]))
        y_scale = enc.get("y", {}).get("scale") or {}
        self.y_domain = tuple(map(float, y_scale["domain"])) if "domain" in y_scale else (0.0, 1.0)
        self.alt_text = alt_text

    def px(self, x: float) -> float:
        x0, x1 = self.x_domain
        return float(np.clip((x - x0) / (x1 - x0), 0.0, 1.0)) * self.width

    def py(self, y: float) -> float:
        y0, y1 = self.y_domain
        return (1.0 - float(np.clip((y - y0) / (y1 - y0), 0.0, 1.0))) * self.height

    def text(self, x: float, y: float, label: str, *, anchor: str = "start", bold: bool = False) -> str:
        weight = ' font-weight="bold"' if bold else ""
        return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="12" {_FONT}{weight} fill="{_INK}" '
                f'stroke="white" stroke-width="3" paint-order="stroke">{html.escape(label)}</text>')

    def image(self, overlay: str) -> str:
        ox, oy = self.origin
        end = self.svg.rfind("</svg>")
        svg = f'{self.svg[:end]}<g class="bioxr-overlay" transform="translate({ox},{oy})">{overlay}</g></svg>'
        data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        return (f'<img alt="{html.escape(self.alt_text)}" style="max-width:100%;height:auto" '
                f'src="data:image/svg+xml;base64,{data}">')


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
    histogram, det : ipywidgets.HTML
        The score histogram with the threshold, and the DET curve with the
        operating point (SVG images).
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
        Time the last update took (counting errors, the table and both charts).
    """

    def __init__(self, cube: xr.DataArray, *, eer_method: str = "rocch", fmr_targets=DEFAULT_FMR_TARGETS,
                 show_progress: bool | None = None):
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
        self._hist = _Canvas(plot.score_histogram(cube, threshold=marks), layer_with_domain=0,
                             alt_text="mated and non-mated score histograms with the threshold")
        self._step("the DET chart")
        self._det = _Canvas(plot.det_chart(self.det_curve, eer=self.eer, limits=self._det_limits()), layer_with_domain=1,
                            alt_text="DET curve with the current operating point")

        step = _slider_step(lo, hi, integer)
        self.slider = W.FloatSlider(
            min=lo, max=hi, step=step, value=float(np.clip(eer_t, lo, hi)), continuous_update=False,
            readout_format=".4g", description="threshold", layout=W.Layout(width="55%", min_width="320px"),
            style={"description_width": "initial"},
        )
        options = [(f"EER ({eer_method})", "eer")] + [(f"FMR ≤ {_pct(f)}", f) for f in targets]
        options.append(("custom (slider)", CUSTOM))
        self.target = W.Dropdown(options=options, value="eer", description="operating point",
                                 style={"description_width": "initial"}, layout=W.Layout(width="260px"))
        self.table = W.HTML()
        self.histogram = W.HTML()
        self.det = W.HTML()
        self.threshold = eer_t
        self.slider.observe(self._on_slider, names="value")
        self.target.observe(self._on_target, names="value")

        self.progress.value = self.progress.max
        self.progress.layout.display = "none"
        if shown is not None:
            shown.layout.display = "none"
        controls = W.HBox([self.slider, self.target], layout=W.Layout(flex_flow="row wrap", align_items="center"))
        charts = W.HBox([W.VBox([self.histogram, self.table]), self.det],
                        layout=W.Layout(flex_flow="row wrap", align_items="flex-start"))
        super().__init__([self.progress, controls, charts, self.status])
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
        self.histogram.value = self._hist.image(self._rule_overlay())
        self.det.value = self._det.image(self._point_overlay(self.rates))
        self.last_update_seconds = time.perf_counter() - start
        self.status.value = f"{reason} · updated in {self.last_update_seconds * 1000:.0f} ms"

    def _rule_overlay(self) -> str:
        c = self._hist
        x = c.px(self.threshold)
        label = f"threshold {_num(self.threshold)}"
        anchor, dx = ("end", -5) if x > c.width * 0.6 else ("start", 5)
        return (f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{c.height:.1f}" stroke="{_INK}" stroke-width="2.5"/>'
                + c.text(x + dx, c.height * 0.45, label, anchor=anchor, bold=True))

    def _point_overlay(self, r: xr.Dataset) -> str:
        c = self._det
        fmr, fnmr = float(r.fmr), float(r.fnmr)
        x, y = c.px(float(plot.probit(fmr))), c.py(float(plot.probit(fnmr)))
        off = [name for name, v in (("FMR", fmr), ("FNMR", fnmr)) if v <= 0 or v >= 1]
        guide = f'stroke="{_INK}" stroke-width="1" stroke-dasharray="3,3"'
        parts = [
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y:.1f}" y2="{c.height:.1f}" {guide}/>',
            f'<line x1="0" x2="{x:.1f}" y1="{y:.1f}" y2="{y:.1f}" {guide}/>',
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="7" fill="#ff7f0e" stroke="{_INK}" stroke-width="1.5"'
            + (' fill-opacity="0.35"' if off else "") + "/>",
        ]
        label = f"FMR {_pct(fmr)}, FNMR {_pct(fnmr)}"
        if off:
            label += f" ({' and '.join(off)} off the axes)"
        right = x > c.width * 0.5
        ty = y - 12 if y > 30 else y + 22
        parts.append(c.text(x + (-10 if right else 10), ty, label, anchor="end" if right else "start", bold=True))
        return "".join(parts)

    def _table_html(self, r: xr.Dataset) -> str:
        fm, fnm = int(r.false_matches), int(r.false_nonmatches)
        n_n, n_m = int(r.n_nonmated), int(r.n_mated)
        rows = [("FMR", "false match rate", float(r.fmr), fm, n_n, "non-mated comparisons accepted"),
                ("FNMR", "false non-match rate", float(r.fnmr), fnm, n_m, "mated comparisons rejected")]
        intervals = _intervals([fm, fnm], [n_n, n_m])
        head = "<tr><th>rate</th><th>value</th><th>errors</th><th>of</th>"
        head += f"<th>{_LEVEL:.0%} interval ({intervals[0]})</th></tr>" if intervals else "<th>interval</th></tr>"
        body = []
        for k, (short, long, rate, errors, trials, what) in enumerate(rows):
            cell = "<td>–</td>"
            if intervals:
                lo, hi, method = intervals[1][k]
                note = " (rule of three)" if method != intervals[0] else ""
                cell = f"<td>{_pct(lo)} – {_pct(hi)}{note}</td>"
            body.append(f'<tr class="bioxr-{short.lower()}"><th title="{long}">{short}</th><td><b>{_pct(rate)}</b></td>'
                        f'<td>{errors:,}</td><td>{trials:,} {what.split()[0]}</td>{cell}</tr>')
        rule = html.escape(str(r.attrs.get("decision_rule", "")))
        note = ("Intervals treat comparisons as independent; attempts of one subject are correlated, so the "
                "true uncertainty is larger (see bioxr.correlation)." if intervals else
                "Confidence intervals need bioxr.intervals, which is not available.")
        return (
            '<div class="bioxr-rates" style="font-size:13px">' + _TABLE_STYLE +
            f"<div><b>At threshold {_num(self.threshold)}</b> ({rule})</div>"
            '<table style="border-collapse:collapse;margin:4px 0">' + head + "".join(body) + "</table>"
            f'<div style="color:#555;font-size:12px;max-width:540px">{note}</div></div>'
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
                       show_progress: bool | None = None) -> ThresholdExplorer:
    """An interactive explorer of the decision threshold on a score cube.

    A slider over the score range (or an operating point picked from a list:
    the EER, or the most lenient threshold meeting an FMR target) moves the
    threshold; the score histogram shows it as a rule, the DET curve as a
    point, and a table gives FMR and FNMR with their counts and 95% modified-Wilson
    intervals. Works offline: charts are SVG rendered in the kernel.

    The exact DET curve, the EER and the FMR targets are computed once (a
    progress bar shows the steps for cubes of 2e6 cells or more); each move
    then counts errors at one threshold and redraws only the threshold.

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
    return ThresholdExplorer(cube, eer_method=eer_method, fmr_targets=fmr_targets, show_progress=show_progress)


# --------------------------------------------------------------------------
# The design explorer (Micheals-Boult, seed 000)
# --------------------------------------------------------------------------

#: Randomization choices of the design explorer: label -> value of ``randomize`` (the trial dim when shuffled).
_SHUFFLE = "shuffle"
_DESIGN_TABLE_STYLE = ("<style>.bioxr-design table th, .bioxr-design table td {padding: 3px 10px; text-align: right} "
                       ".bioxr-design table tr > :first-child {text-align: left; padding-left: 0} "
                       ".bioxr-design table tr:first-child > * {border-bottom: 1px solid #999}</style>")
_MAX_HISTORY = 8
#: How each verdict of the design explorer is drawn.
_VERDICT_STYLE = {"compatible": '<b style="color:#2a7d2a">compatible</b>',
                  "incompatible": '<span style="color:#b00">incompatible</span>',
                  "inconclusive": '<span style="color:#8a5a00">inconclusive</span>'}
_ESTIMATOR_NAMES = {"srs": "simple random", "st": "stratified", "cl": "cluster"}


