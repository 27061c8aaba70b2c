"""Altair charts of verification, identification and uncertainty results, drawn offline.

Tidy frames in, charts out: every function takes a result Dataset (or a
score cube), turns it into a pandas frame and returns an Altair chart.
Nothing is computed here that a topic module should compute; the charts
only show what the Datasets hold.

Verification (:mod:`bioxr.plot.verification`):

- :func:`det_chart`: the DET curve on probit (normal-deviate) axes, with the
  EER point and its convention, and optionally a bootstrap band;
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
  several studies side by side, with its interval and the tolerance band.

Kept dimensions of a result (``collection``, ``weather``, ...) become one
curve each, coloured by their label, or one panel each with
:func:`facet_chart`. Exact curves have a point per distinct
score; they are thinned to at most about 2,000 points per curve, keeping
every point where the drawn curve moves by more than a fraction of a pixel,
so a curve of 1e6 scores draws like the full one.

Charts render without a network (:mod:`bioxr.plot._render`):
:func:`render_svg` and :func:`save_png` use vl-convert, :func:`to_html`
writes one self-contained interactive page (the Vega bundle embedded once,
``vegaEmbed`` per chart). In a notebook, ``alt.renderers.enable("svg")``
shows them offline.
"""

from __future__ import annotations

from ._axes import MAX_POINTS, SIZE, _thin, probit
from ._render import VL_VERSION, render_svg, save_html, save_png, save_svg, to_html
from .facets import facet_chart
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
    "probit",
    "render_svg",
    "save_png",
    "save_svg",
    "to_html",
    "save_html",
]
