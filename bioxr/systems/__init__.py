"""Two or more systems on the same subjects: the stacked form, paired differences, McNemar (METHODS.md section 10).

Matchers compared on one test crowd share its subjects: a subject who is
hard for one matcher is often hard for the other, so the two systems'
rates are correlated and their difference varies less than either rate.
A comparison that ignores the pairing (two independent intervals, or a
bootstrap that resamples each system on its own) over-states the
difference's variance and loses power.

- :func:`stack_systems` puts systems together: a cube with a leading
  ``system`` dimension, or a comparison list with a ``system`` cofactor,
  aligned on the same subjects and comparisons;
- :func:`paired_difference`: the paired subject bootstrap. One draw of
  subjects per replicate is applied to every system (one joint coding of
  the subjects; non-mated comparisons weighted ``w_a w_c`` as in
  :mod:`bioxr.bootstrap`), so each replicate's difference carries the
  correlation of the systems. Differences of the EER (each convention),
  of FNMR at FMR targets and of FMR or FNMR at thresholds, with percentile
  intervals, bootstrap p-values and a Holm-adjusted family;
- :func:`mcnemar_test`: McNemar's exact test on paired decisions at
  fixed thresholds, with the cluster-adjusted test of Obuchowski (1998)
  beside it (subjects as clusters; crossed subjects for non-mated
  comparisons);
- :func:`adjust_p_values`: Holm's step-down (or Bonferroni) adjustment;
- :func:`system_bands`: each system's pointwise DET band, for
  :func:`bioxr.plot.systems_det_chart`.
"""

from ._stack import ADJUSTMENTS, MCNEMAR_KINDS, PAIRS, STATISTICS, adjust_p_values, stack_systems
from ._text import describe
from .mcnemar import mcnemar_test
from .paired import paired_difference, system_bands

__all__ = ["ADJUSTMENTS", "MCNEMAR_KINDS", "PAIRS", "STATISTICS", "adjust_p_values", "describe", "mcnemar_test",
           "paired_difference", "stack_systems", "system_bands"]
