"""Altair charts of verification, identification and uncertainty results, drawn offline.

Tidy frames in, charts out: every function takes a result Dataset (or a
score cube), turns it into a pandas frame and returns an Altair chart.
Nothing is computed here that a topic module should compute; the charts
only show what the Datasets hold.

Verification (:mod:`bioxr.plot.verification`):

- :func:`det_chart`: the DET curve on probit (normal-deviate) axes, each
  fitted to its own data, with 1-2-5 ticks, the EER of each series, the
  operating points at chosen FMR targets, and optionally a bootstrap band;
- :func:`roc_chart`: the ROC curve (TMR against FMR), optionally with a band;
- :func:`score_histogram`: mated and non-mated score densities;
- :func:`rates_chart`: FMR and FNMR against the threshold.

Identification (:mod:`bioxr.plot.identification`):

- :func:`cmc_chart`: the CMC (identification rate against rank), optionally
  with a bootstrap band;
- :func:`open_set_chart`: the open-set DET (FNIR against FPIR).
- :func:`systems_det_chart`: several systems' DET curves with their bands on one chart, with the paired differences.

Uncertainty (:mod:`bioxr.plot.uncertainty`):

- :func:`design_chart`: a Micheals-Boult design study, the empirical
  variance against the three estimators run by run (seed 000's figures);
- :func:`design_ratio_chart`: the ratio estimator / empirical variance of
  several studies side by side, with its interval and the tolerance band;
- :func:`coverage_chart`: measured coverage of interval methods against
  the nominal level, with the Monte Carlo band.

Demographic differentials (:mod:`bioxr.plot.demographics`, ISO/IEC 19795-10):

- :func:`group_rates_chart`: per-group FNMR and FMR with their intervals,
  the overall rate and the margin-of-error band;
- :func:`cross_fmr_heatmap`: impostor FMR of each probe group against each
  reference group at one global threshold;
- :func:`fairness_chart`: FDR and GARBE with their bootstrap intervals.

Generative models (:mod:`bioxr.plot.generative`):

- :func:`generative_chart`: specificity and generalisation with their
  standard errors, per model or along a training size.

Kept dimensions of a result (``collection``, ``weather``, ...) become one
curve each, coloured by their label, or one panel each with
:func:`facet_chart` (on shared axes). Exact curves have a point per distinct
score; they are thinned to at most about 2,000 points per curve, keeping
every point where the drawn curve moves by more than a fraction of a pixel,
so a curve of 1e6 scores draws like the full one (the chart's
``description`` says so, and how many points lie at infinity on probit
axes; subtitles say what a reader needs). A chart given the result of
another function raises a ``TypeError`` naming the function it expects.

Charts render without a network (:mod:`bioxr.plot._render`):
:func:`render_svg` and :func:`save_png` use vl-convert, :func:`to_html`
writes one self-contained interactive page (the Vega bundle embedded once,
``vegaEmbed`` per chart). Imported in a Jupyter kernel, :mod:`bioxr.plot`
switches Altair to its offline ``svg`` renderer when the user has not
chosen a renderer (:func:`enable_offline_renderer`).
"""

from __future__ import annotations

from ._axes import MAX_POINTS, SIZE, _thin, probit
from ._render import VL_VERSION, _enable_in_kernel, enable_offline_renderer, render_svg, save_html, save_png, save_svg, to_html
from .coverage import coverage_chart
from .demographics import cross_fmr_heatmap, fairness_chart, group_rates_chart
from .facets import facet_chart
from .gallery import gallery_det_chart, gallery_heatmap
from .generative import generative_chart
from .identification import cmc_chart, open_set_chart
from .systems import systems_det_chart
from .uncertainty import design_chart, design_ratio_chart
from .verification import det_chart, rates_chart, roc_chart, score_histogram

__all__ = [
    "facet_chart",
    "det_chart",
    "roc_chart",
    "score_histogram",
    "rates_chart",
    "cmc_chart",
    "open_set_chart",
    "systems_det_chart",
    "design_chart",
    "design_ratio_chart",
    "coverage_chart",
    "group_rates_chart",
    "cross_fmr_heatmap",
    "fairness_chart",
    "generative_chart",
    "gallery_det_chart",
    "gallery_heatmap",
    "probit",
    "render_svg",
    "save_png",
    "save_svg",
    "to_html",
    "save_html",
    "enable_offline_renderer",
]

_enable_in_kernel()  # in a Jupyter kernel, charts show offline (svg) unless the user chose a renderer
