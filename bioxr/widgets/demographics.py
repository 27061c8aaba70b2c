"""The demographics explorer: pick the group variable and the global threshold, watch the group rates and the cross-group FMR."""

from __future__ import annotations

import html
import time
import warnings

import ipywidgets as W
import numpy as np
import xarray as xr

from .. import demographics as dm
from .. import plot
from .._core import check_level, check_replicates
from ..comparisons import RESERVED, is_comparison_list
from ._common import _chart_image, _pct

__all__ = ["DemographicsExplorer", "demographics_explorer", "group_variables", "DEFAULT_DEMOGRAPHIC_TARGETS"]

#: Overall FMR targets offered for the global threshold.
DEFAULT_DEMOGRAPHIC_TARGETS = (1e-4, 1e-3, 1e-2)
_MAX_LEVELS = 30  # a probe label with more distinct values is not offered as a group variable
_NOT_GROUPS = {"subject", "sample", "probe_id", "probe", "fnmr_propensity", "comparison"}


def group_variables(data) -> list[str]:
    """Probe-side labels that can serve as a demographic group variable (at most 30 distinct values).

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.widgets import group_variables
    >>> group_variables(bioxr.simulate.demographic({"A": 10, "B": 10}, n_samples=2, seed=0))
    ['group']
    """
    if is_comparison_list(data):
        dims, names = ("comparison",), [c for c in data.coords if c not in RESERVED]
    elif isinstance(data, xr.DataArray):
        dims, names = tuple(d for d in data.dims if d != "reference"), list(data.coords)
    else:
        raise TypeError(f"expected a score cube or a comparison list, got {type(data).__name__}.")
    out = []
    for name in names:
        coord = data.coords[name]
        if (str(name) in _NOT_GROUPS or str(name).startswith("reference") or not coord.dims
                or "reference" in coord.dims or not set(coord.dims) <= set(dims)):
            continue
        if coord.dtype.kind == "f" or coord.dtype.kind == "b":
            continue
        if len(np.unique(np.asarray(coord.values).astype(str))) <= _MAX_LEVELS:
            out.append(str(name))
    return out


class DemographicsExplorer(W.VBox):
    """Group FNMR and FMR at one global threshold, with the cross-group FMR matrix, redrawn on every choice.

    Built by :func:`demographics_explorer`. Attributes: the widgets
    ``group``, ``mode`` ("target" or "threshold"), ``target`` (overall FMR
    target), ``threshold_box``; the outputs ``rates_chart``, ``heatmap``
    (``ipywidgets.HTML`` holding offline SVG images), ``text`` and
    ``status``; the last results ``rates``, ``margin``, ``cross``; and
    ``threshold``, the threshold in use.
    """

    def __init__(self, data, *, group: str | None = None, fmr_targets=DEFAULT_DEMOGRAPHIC_TARGETS,
                 fmr_target: float = 1e-3, n_replicates: int = 1000, level: float = 0.95, seed=0):
        choices = group_variables(data)
        if not choices:
            raise ValueError("the data have no probe label with at most 30 values to group by: add a group "
                             "coordinate (a column of the comparison list).")
        if group is not None and group not in choices:
            raise ValueError(f"group={group!r} is not one of the group variables {choices}.")
        targets = sorted({float(t) for t in fmr_targets} | {float(fmr_target)})
        if not all(0 < t < 1 for t in targets):
            raise ValueError(f"fmr_targets={fmr_targets!r}: every target must lie in (0, 1).")
        self.level = check_level(level)
        self.n_replicates = check_replicates(n_replicates, minimum=2)
        self.seed = seed
        self.data = data
        self.rates = self.margin = self.cross = None
        self.threshold = float("nan")
        style = {"description_width": "initial"}
        self.group = W.Dropdown(options=choices, value=group or choices[0], description="group by", style=style,
                                layout=W.Layout(width="220px"))
        self.mode = W.ToggleButtons(options=[("overall FMR target", "target"), ("threshold", "threshold")],
                                    value="target", description="threshold from", style={**style, "button_width": "140px"})
        self.target = W.Dropdown(options=[(_pct(t), t) for t in targets], value=float(fmr_target),
                                 description="FMR target", style=style, layout=W.Layout(width="200px"))
        self.threshold_box = W.FloatText(value=0.0, description="threshold", style=style, disabled=True,
                                         layout=W.Layout(width="200px"))
        self.status = W.HTML()
        self.rates_chart = W.HTML()
        self.heatmap = W.HTML()
        self.text = W.HTML()
        for widget in (self.group, self.mode, self.target, self.threshold_box):
            widget.observe(self._on_change, names="value")
        controls = W.HBox([self.group, self.mode, self.target, self.threshold_box],
                          layout=W.Layout(flex_flow="row wrap", align_items="center"))
        super().__init__([controls, self.status, self.rates_chart, W.HBox([self.heatmap, self.text],
                          layout=W.Layout(flex_flow="row wrap", align_items="flex-start"))])
        self.update()

    def _on_change(self, change) -> None:
        self.threshold_box.disabled = self.mode.value != "threshold"
        self.target.disabled = self.mode.value != "target"
        if change["owner"] is self.mode and self.mode.value == "threshold" and np.isfinite(self.threshold):
            self.threshold_box.unobserve(self._on_change, names="value")
            self.threshold_box.value = self.threshold  # start from the threshold in use: nothing to redraw
            self.threshold_box.observe(self._on_change, names="value")
            return
        self.update()

    def settings(self) -> dict:
        """The keyword arguments of the :mod:`bioxr.demographics` functions the widgets describe."""
        g = self.group.value
        ref = f"reference_{g}" if f"reference_{g}" in self.data.coords else "reference_group"
        where = ({"fmr_target": float(self.target.value)} if self.mode.value == "target"
                 else {"threshold": float(self.threshold_box.value)})
        return {"group": g, "reference_group": ref, **where}

    def update(self) -> None:
        """Recompute the group rates, margins and cross-group FMR for the current choices and redraw."""
        start = time.perf_counter()
        s = self.settings()
        self.status.value = "<i>computing…</i>"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                rates = dm.group_rates(self.data, n_replicates=self.n_replicates, level=self.level, seed=self.seed, **s)
                t = float(rates["threshold"])
                counts = dm.group_counts(self.data, t, group=s["group"])
                margin = dm.margin_of_error(counts, group=s["group"], level=self.level,
                                            n_replicates=max(self.n_replicates, 1000), seed=self.seed)
                cross = dm.cross_group_fmr(self.data, threshold=t, group=s["group"],
                                           reference_group=s["reference_group"])
        except ValueError as err:
            self.status.value = f'<span style="color:#b00">{html.escape(str(err))}</span>'
            return
        self.rates, self.margin, self.cross, self.threshold = rates, margin, cross, t
        self.rates_chart.value = _chart_image(plot.group_rates_chart(rates, margin),
                                              "FNMR and FMR by group with intervals and the margin of error")
        self.heatmap.value = _chart_image(plot.cross_fmr_heatmap(cross), "false match rate across groups")
        outside = [str(g) for g in margin[s["group"]].values.tolist() if bool(margin["outside"].sel({s["group"]: g}))]
        flagged = (f"outside the FNMR margin: <b>{html.escape(', '.join(outside))}</b>" if outside
                   else "no group outside the FNMR margin")
        self.text.value = (f'<div style="max-width:420px;font-size:13px">threshold {t:.4g}; {flagged} '
                           f'(the margins\' test of equal FNMR: p = {float(margin["p_value"]):.3g}).</div>')
        notes = sorted({str(w.message).split(":")[0] for w in caught})
        extra = f" ({html.escape('; '.join(notes))})" if notes else ""
        self.status.value = (f"updated in {time.perf_counter() - start:.1f} s; intervals from "
                             f"{self.n_replicates:,} subject-bootstrap replicates{extra}")


def demographics_explorer(data, *, group: str | None = None, fmr_targets=DEFAULT_DEMOGRAPHIC_TARGETS,
                          fmr_target: float = 1e-3, n_replicates: int = 1000, level: float = 0.95,
                          seed=0) -> DemographicsExplorer:
    """An interactive view of demographic differentials at one global threshold.

    Pick the group variable (any probe label with at most 30 values and,
    on the reference side, ``reference_<name>`` or the subject's own
    group) and how the one threshold is set: by an overall FMR target or
    typed in. The explorer recomputes :func:`bioxr.demographics.group_rates`
    (subject-bootstrap intervals), :func:`bioxr.demographics.margin_of_error`
    (equal-rate null) and :func:`bioxr.demographics.cross_group_fmr`, and
    redraws :func:`bioxr.plot.group_rates_chart` and
    :func:`bioxr.plot.cross_fmr_heatmap` as offline SVG images. Each update
    runs the bootstrap again: seconds on a few hundred subjects.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list with group labels.
    group : str, optional, keyword-only
        The group variable to start with (default the first found).
    fmr_targets : sequence of float, keyword-only
        Overall FMR targets offered.
    fmr_target : float, keyword-only
        The target to start with.
    n_replicates, level, seed : keyword-only
        Of the bootstrap intervals (the margin uses at least 1,000).

    Returns
    -------
    DemographicsExplorer

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.widgets import demographics_explorer
    >>> cube = bioxr.simulate.demographic({"A": 30, "B": 20}, n_samples=2, fmr=0.01, seed=0)
    >>> ex = demographics_explorer(cube, n_replicates=200)
    >>> ex.group.value, ex.target.value
    ('group', 0.001)
    >>> ex.target.value = 0.01
    >>> bool(ex.threshold == bioxr.demographics.global_threshold(cube, 0.01))
    True
    """
    return DemographicsExplorer(data, group=group, fmr_targets=fmr_targets, fmr_target=fmr_target,
                                n_replicates=n_replicates, level=level, seed=seed)
