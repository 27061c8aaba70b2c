"""Live explorers: ipywidgets built from bioxr's functions and charts.

Import it explicitly (``from bioxr import widgets``): ``import bioxr`` does
not load ipywidgets.

- :func:`threshold_explorer`: move a decision threshold (a slider, or an
  operating point picked from a list: the EER or an FMR target) and watch
  the score histogram, the DET curve and a table of FMR and FNMR with their
  counts and confidence intervals follow.
- :func:`design_explorer`: the Micheals-Boult methodology by hand: choose a
  partition, a design, whether to randomize over time and m, run the study,
  and read the design chart, the ratios with their verdicts (compatible,
  incompatible, or inconclusive when the study has too few trials to tell)
  and the F tests; every run joins a ratio chart of the iterations so far.
- :func:`demographics_explorer`: pick the group variable and the global
  threshold (from an overall FMR target, or typed) and watch the per-group
  FNMR and FMR with their margins and the cross-group impostor FMR heatmap
  follow (ISO/IEC 19795-10).

The threshold explorer's charts are live Vega views (Altair's JupyterChart,
offline: the Vega bundle comes from vl-convert, so nothing loads from a
CDN); the threshold and the operating point are Vega-Lite params that a move
of the slider sends from the kernel, and Vega redraws the overlay itself.
Without anywidget it falls back to images re-rendered by vl-convert
(``live=False``). The other explorers render Altair to SVG with vl-convert
and show it in ``ipywidgets.HTML``, so they draw offline in JupyterLab, in
nbconvert and in a static page. Everything exact is computed once when an
explorer is built; a move only counts errors at one threshold.
"""

from __future__ import annotations

from ._common import _num, _pct  # noqa: F401 - formats the tests read
from .design import DesignExplorer, design_explorer
from .demographics import DEFAULT_DEMOGRAPHIC_TARGETS, DemographicsExplorer, demographics_explorer, group_variables
from .threshold import CUSTOM, DEFAULT_FMR_TARGETS, ThresholdExplorer, threshold_explorer

__all__ = ["ThresholdExplorer", "threshold_explorer", "DesignExplorer", "design_explorer", "DEFAULT_FMR_TARGETS",
           "CUSTOM", "DemographicsExplorer", "demographics_explorer", "group_variables", "DEFAULT_DEMOGRAPHIC_TARGETS"]
