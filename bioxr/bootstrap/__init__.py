"""Subject-level bootstrap by sufficient statistics (METHODS.md section 7).

Comparisons of one subject are correlated, so the bootstrap resamples
subjects, not comparisons. Each subject's errors are counted once at every
threshold of a grid; a replicate is then a weighted sum with multinomial
weights (how often each subject was drawn), one matrix product for all
replicates:

- mated: ``FNMR_b(t) = sum_i w_bi e_i(t) / sum_i w_bi m_i``;
- non-mated: a comparison of probe subject ``a`` with reference subject
  ``c`` is in the replicate once for every pair of draws, so it takes the
  weight ``w_a w_c``: ``FMR_b(t) = sum_ac w_ba w_bc f_ac(t) / sum_ac w_ba
  w_bc n_ac``.

This is exactly what resampling the subjects and recounting their scores
gives (a test checks it with the same draws), at a fraction of the cost.
The pair weights triple the share of the comparisons' own noise in the FMR
(Owen 2007, the pigeonhole bootstrap), so by default the replicate FMR
curves are rescaled to the method-of-moments variance of crossed subjects
(``fmr_variance="moments"``; METHODS.md section 12).

Intervals (``interval=``): by default the binomial interval on the
bootstrap's effective count (the replicates give the design effect), which
keeps the skew and the discreteness of small counts; where a rate is 0 (or
1) a one-sided bound on the independent units, marked in ``bound_kind``;
never a zero-width interval. The EER takes a percentile interval, shifted
for the ROCCH by the hull's optimism. The FMR of a band takes Korn &
Graubard's count instead, ``N / deff * (z / t_df)^2`` from the dyadic
moment variance and its Satterthwaite degrees of freedom
(``curves.fmr_effective_count``): a few wolves and lambs leave that
variance with few degrees of freedom, and FNMR@FMR stretches the FMR
deviations of its replicates by the same ``t_df / z`` before reading their
operating points. The others are widened to a bootstrap-t (studentised)
interval where that is defined (the union of the two): a sample that
missed the individuals who err most has both a low rate and a low
variance, and only the studentised interval sees that (rates of counts:
``_bounds.studentized_union``; the EER: ``_studentized._studentized_union`` with
per-replicate moment variances). FNMR@FMR takes the bootstrap-t's lower
bound alone and the higher of the two upper bounds: its point estimate is
skewed to the left, and the union over-covered.
Identification rates add the gallery's share of the variance
(``_gallery``): every search meets the same enrolled subjects. Where errors
sit with a few individuals holding many attempts, a ``DesignWarning``
says the subject bootstrap cannot cover (``bioxr._core.designs``). The
coverage of each is measured in ``benchmarks/COVERAGE.md``.

The rates are exact at the grid's thresholds; curves and bands are drawn
through them.
"""

from .._core import FewReplicatesWarning
from ._bounds import BOUND_KINDS, INTERVALS
from ._stats import _counts, _Stats, subject_draws
from .curves import EER_INTERVALS, FMR_VARIANCES, bootstrap_curve, bootstrap_replicates, eer_interval, fnmr_at_fmr_interval
from .rates import bootstrap_rate_interval, cmc_interval, open_set_interval

__all__ = ["BOUND_KINDS", "EER_INTERVALS", "FMR_VARIANCES", "INTERVALS", "FewReplicatesWarning", "subject_draws",
           "bootstrap_replicates", "bootstrap_curve", "fnmr_at_fmr_interval", "eer_interval",
           "bootstrap_rate_interval", "cmc_interval", "open_set_interval"]
