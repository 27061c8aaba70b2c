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

Charts are Altair rendered to SVG by vl-convert and shown as images in
``ipywidgets.HTML``, so they draw offline (in JupyterLab, in nbconvert and
in a static page). Everything exact is computed once when the explorer is
built (the DET curve, the EER, the FMR targets); a move of the slider only
counts errors at one threshold (:func:`bioxr.verification.error_rates`) and
draws the new threshold over the pictures rendered at the start, which
takes milliseconds instead of a fresh render (0.1 to 0.3 s a chart).
"""

from __future__ import annotations

from ._common import _num, _pct  # noqa: F401 - formats the tests read
from .design import DesignExplorer, design_explorer
from .threshold import CUSTOM, DEFAULT_FMR_TARGETS, ThresholdExplorer, threshold_explorer

__all__ = ["ThresholdExplorer", "threshold_explorer", "DesignExplorer", "design_explorer", "DEFAULT_FMR_TARGETS",
           "CUSTOM"]
