"""bioxr: statistics of biometric performance evaluation on labelled xarray cubes.

Score cubes (probe dims x ``reference``) and outcome cubes (probe dims) are
plain xarray objects; ``import bioxr`` registers the ``.bio`` accessor on
them. Topic modules hold the pure functions:

- :mod:`bioxr.cube`: the score cube, its constructor and validation;
- :mod:`bioxr.comparisons`: the comparison list (the sparse form), from arrays and frames;
- :mod:`bioxr.io`: readers and writers of score files;
- :mod:`bioxr.simulate`: seeded simulators;
- :mod:`bioxr.verification`: FMR, FNMR, DET/ROC curves, EER;
- :mod:`bioxr.outcomes`: the per-probe outcome cube (ranks with ties);
- :mod:`bioxr.candidates`: top-L candidate lists (1:N) into the outcome cube;
- :mod:`bioxr.identification`: CMC, rank-k rates, open-set DIR/FPIR;
- :mod:`bioxr.gallery`: all-against-all, single- and multi-template;
- :mod:`bioxr.intervals`: Wilson, Clopper-Pearson, Jeffreys, rule of three;
- :mod:`bioxr.failures`: failures to enrol and acquire (FTE, FTA) and the failure policies;
- :mod:`bioxr.correlation`: intra-class correlation and design-aware FNMR intervals;
- :mod:`bioxr.bootstrap`: subject bootstrap by sufficient statistics;
- :mod:`bioxr.claims`: certification claims "rate <= r" tested by one-sided, design-aware bounds;
- :mod:`bioxr.certification`: a claim's verdict, its table and the next test planned from it;
- :mod:`bioxr.planning`: the subjects (and comparisons) a test needs for a claim to pass;
- :mod:`bioxr.systems`: two or more systems on the same subjects (stacking, paired differences, McNemar);
- :mod:`bioxr.calibration`: minDCF, actDCF, Cllr and minCllr (PAV), with subject-bootstrap intervals;
- :mod:`bioxr.design`: the Micheals-Boult study of which sample design the data follow;
- :mod:`bioxr.deveval`: thresholds from development data applied to evaluation data, the HTER and the EPC;
- :mod:`bioxr.generative`: specificity and generalisation of a generative model;
- :mod:`bioxr.headline`: the summary table of the headline numbers (``bioxr.summary``), to CSV, Markdown, LaTeX;
- :mod:`bioxr.demographics`: FNMR differentials across groups (bootstrap test and margins under equal FNMR, FDR, GARBE);
- :mod:`bioxr.plot` (Altair charts), :mod:`bioxr.widgets` (ipywidgets
  explorers), :mod:`bioxr.report` (templates into HTML reports) and
  :mod:`bioxr.io` load on first use, so ``import bioxr`` stays light.
"""

from importlib.metadata import PackageNotFoundError, version

from . import accessor, bootstrap, calibration, candidates, certification, claims, comparisons, correlation, cube, demographics, design, deveval, failures, gallery, generative, headline, identification, intervals, outcomes, planning, simulate, systems, verification
from .comparisons import comparison_list, from_frame, from_scores, to_comparisons, to_cube
from .cube import ScoreCubeError, score_cube, validate_score_cube
from .claims import claim_test
from .headline import summary
from .planning import plan_test
from .systems import stack_systems

try:
    __version__ = version("bioxr")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "ScoreCubeError",
    "accessor",
    "comparison_list",
    "comparisons",
    "from_frame",
    "from_scores",
    "to_comparisons",
    "to_cube",
    "bootstrap",
    "calibration",
    "candidates",
    "certification",
    "claim_test",
    "claims",
    "correlation",
    "cube",
    "demographics",
    "design",
    "deveval",
    "failures",
    "gallery",
    "generative",
    "headline",
    "identification",
    "intervals",
    "outcomes",
    "plan_test",
    "planning",
    "score_cube",
    "simulate",
    "stack_systems",
    "summary",
    "systems",
    "validate_score_cube",
    "verification",
]


def __getattr__(name):
    """Load the heavier layers (charts, widgets, reports, readers) on first use."""
    if name in ("io", "plot", "report", "widgets"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'bioxr' has no attribute {name!r}")
