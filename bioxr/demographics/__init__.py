"""Demographic differentials: are the FNMRs of G groups detectably different?

The two approaches of seeds/002 (METHODS.md section 5), on per-individual
counts: ``errors`` ``e_i`` (false non-matches) in ``attempts`` ``m_i`` of
individual ``i`` (from :func:`group_counts` or
:func:`bioxr.correlation.attempt_counts`), with a ``group`` label per
individual. A group's FNMR is ``p_g = E_g / M_g``, the pooled one ``p = E /
M``. Attempts by one person are correlated (METHODS.md section 4), so the
tests resample whole individuals, never single attempts.

- :func:`differential_test`: a bootstrap test of equal FNMR; the p-value
  is the share of null replicates at or above the observed statistic,
  ``(1 + #{T* >= T}) / (1 + B)`` (never 0).
- :func:`margin_of_error`: margins around ``p``; a group outside its
  margin is detectably different; under H0 every group lies inside with
  probability ``level``.

Two nulls, chosen by ``null=`` (both stated in the results' attrs ``h0``
and ``resampling``):

``"equal-rate"`` (default)
    H0: every group has the same FNMR, whatever its attempts per person
    and the correlation of its people's attempts. Each group keeps its own
    individuals, resampled with replacement from its empirical
    distribution exponentially tilted to the pooled FNMR (weights
    ``exp(t (e_i - p m_i))``; Davison & Hinkley 1997, section 4.4), so each
    group keeps its own dispersion. The statistic is studentised by each
    group's cluster-robust variance ``V_g = n_g / (n_g - 1) sum_i (e_i -
    p_g m_i)^2 / M_g^2`` (floored at the binomial ``p (1 - p) / M_g``): the
    Wald-type ``W = sum_g (p_g - p_w)^2 / V_g`` for the test, ``Z = max_g
    |p_g - p| / sd_g`` for the margins ``M_g = c sd_g``, and for the ratio
    form ``Z_r = max_g p (1 - 1 / r_g) / sd_g``, ``r_g = max(p_g / p, p /
    p_g)``, with its own critical value ``c_r`` (the band ``p / (p - c_r
    sd_g)`` on the ratio scale).
``"exchangeable"``
    seeds/002: ``n`` individuals drawn from the pooled data and dealt into
    groups of the observed sizes; the attempt-weighted ANOVA ``F`` for the
    test, ``D = max_g |p_g - p|`` for one margin shared by all groups (and
    the ratio form ``max_g max(p_g / p, p / p_g)``). Its H0 is that the
    groups are alike in everything: it rejects when groups share one FNMR
    but differ in attempts per person or in correlation.

Measured (``benchmarks/DEMOGRAPHICS_NULL.md``: 2,000 datasets a cell,
beta-binomial and logit-normal propensities, FNMR 0.05 in every group, 5%
level). With 2 against 20 attempts per person (100 + 100 people, rho 0.3)
the exchangeable margin flags a group in 24% of datasets; with 200 / 50 /
20 people at rho 0 / 0 / 0.6 its F test rejects 15-17% and its margin
flags 25-26%. There, and on balanced designs (100 people a group, rho 0
and 0.3, G = 2, 3, 5), the equal-rate test rejects 3.6-5.9% and its
margins flag 2.9-6.2%; the ratio form, with its own critical value
``c_r``, 3.9-6.5% (1.4-6.0% when it reused ``c``, the additive band seen
on the ratio scale, whose upper side reaches further). Power at twice the
FNMR in one group: balanced, rho 0, 86% (exchangeable 87%; the ratio form
72%); rho 0.3, 45-54% (exchangeable 53-60%, the price of estimating each
group's own variance; ratio form 21-38%); 2 against 20 attempts, 47-52%.

Limits of the equal-rate null. Each group's spread is learnt from its own
individuals, and a small group with strongly correlated attempts can hide
it: few of its people err, and those err a lot, so a sample that misses
them looks like a group with a low FNMR and little spread. Beside 200
binomial people, a group of 20 or 40 people with 5 or 15 attempts each at
rho 0.2 or 0.5 made the test reject 4.3-20% (above 7% in 7 of 16 cells; the
worst, 20%, with 20 people x 15 attempts at rho 0.5); 150 / 60 / 30 people
with 2 / 5 / 15 attempts at rho 0.1 / 0.3 / 0.5, 9.5-11% (the exchangeable
F as much); 80 people, 4.5-7.6%; 160, 4.4-6.4%. In that 150 / 60 / 30 cell
it is the 30-person group that is flagged, low (9-9.5% of the 10%), in
samples where only 1 to 4 of its people err (they add 8.7 of 10.4
points): the tilt then makes those few people common, a null population
whose intra-class correlation is about a third of the true 0.5. A
score-type or Student-t reading of the group variances, shifted, scaled,
two-stage or half-tilted nulls and log- or square-root-scale statistics
did not hold the level there without losing it, or the power, elsewhere;
even a parametric bootstrap told the true model and correlations rejects
6.6% once it plugs in the pooled FNMR (``benchmarks/DEMOGRAPHICS_NULL.md``,
"Why 'unequal everything' over-rejects"). The functions warn
(:class:`SmallGroupWarning`) when a group with repeated attempts has fewer
than 50 individuals. Such a group
also carries little information: at twice the FNMR the 20-person group at
rho 0.6 above is found in 2-3% of datasets. A group whose individuals all
lie on one side of ``p`` cannot be tilted to it; its counts are scaled by
``p / p_g`` instead, and a group without any error stays without errors,
so the test compares the other groups and cannot call such a group better
(its one-sided bound is :func:`bioxr.correlation.fnmr_interval`).

Conventions: F is 0 for data without any variation (``0 / 0``), ``inf``
with variation between but none within groups; W and Z are 0 when ``p`` is
0 or 1; statistics are NaN where undefined (fewer than two groups with
attempts; for F also no more individuals than groups); replicates with a
NaN statistic count as at or above the observed one (conservative).
Quantiles are order statistics (``numpy.quantile(...,
method="inverted_cdf")``). A group ratio is 1 where ``p_g == p`` (also both
0) and ``inf`` where exactly one of them is 0.

And the summaries cited there, on per-group rates:
:func:`fairness_discrepancy_rate` (FDR, de Freitas Pereira & Marcel),
:func:`garbe` (Gini aggregation, Howard et al.) and :func:`max_min_ratio`.

At one global threshold (ISO/IEC 19795-10; NIST FRVT Part 3),
:mod:`bioxr.demographics.rates` gives each group's FNMR and FMR with
subject-bootstrap intervals (:func:`group_rates`), the cross-group FMR
matrix (:func:`cross_group_fmr`) and FDR and GARBE with bootstrap
intervals (:func:`fairness_intervals`); :mod:`bioxr.demographics.describe`
says what they show, in sentences for reports.

A lab's own demographics, kept in a table of subjects rather than in the
score file, come in through :mod:`bioxr.demographics.groups`:
:func:`attach_groups` puts one of the table's columns on both sides of the
scores (comparisons of subjects without a group are left out and counted),
:func:`set_aside_small_groups` leaves out groups too small for a subject
bootstrap, :func:`group_coordinates` says what to pass when the data carry
no group, and :func:`describe_groups` says all that in words.

Modules: :mod:`bioxr.demographics.differential` (the test and the margin),
:mod:`bioxr.demographics.summaries` (FDR, Gini, GARBE, max/min ratio) and
the private :mod:`bioxr.demographics._null` (draws and statistics).
"""

from .differential import NULLS, SmallGroupWarning, differential_test, group_counts, margin_of_error
from .summaries import fairness_discrepancy_rate, garbe, gini, max_min_ratio
from .rates import cross_group_fmr, fairness_intervals, global_threshold, group_rates
from .describe import (REFERENCES, describe_cross, describe_fairness, describe_rates, describe_simulation,
                       parse_group_map, references, summary_table)
from .groups import (MIN_SUBJECTS, attach_groups, describe_groups, group_coordinates, groups_provenance,
                     read_subject_table, set_aside_small_groups)

__all__ = [
    "NULLS",
    "SmallGroupWarning",
    "group_counts",
    "differential_test",
    "margin_of_error",
    "fairness_discrepancy_rate",
    "garbe",
    "gini",
    "max_min_ratio",
    "global_threshold",
    "group_rates",
    "cross_group_fmr",
    "fairness_intervals",
    "describe_rates",
    "describe_cross",
    "describe_fairness",
    "references",
    "REFERENCES",
    "parse_group_map",
    "summary_table",
    "describe_simulation",
    "MIN_SUBJECTS",
    "read_subject_table",
    "attach_groups",
    "set_aside_small_groups",
    "group_coordinates",
    "describe_groups",
    "groups_provenance",
]
