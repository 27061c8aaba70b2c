"""Cost and calibration: minDCF, actDCF, Cllr and minCllr, with subject-bootstrap intervals.

The detection cost function of the NIST speaker recognition evaluations and
the BOSARIS toolkit (METHODS.md section 11), at an operating point
``(P_target, C_miss, C_fa)``::

    DCF(t) = C_miss P_target P_miss(t) + C_fa (1 - P_target) P_fa(t)

with ``P_miss = FNMR`` and ``P_fa = FMR`` under the house decision rule (a
similarity score equal to the threshold is accepted; a distance score is
accepted when ``d <= t``). Every DCF here is *normalized*: divided by
``min(C_miss P_target, C_fa (1 - P_target))``, the cost of the better of
the two systems that ignore the scores (accept all, reject all), so 1 means
"no better than not looking" and the value depends on the operating point
only through the effective prior ``P_eff = C_miss P / (C_miss P + C_fa (1 -
P))``.

- ``minDCF``: the least DCF over every threshold of the step curve (each
  distinct score, and ``+inf``: reject all), exact, on any score. A linear
  cost is least at a vertex of the ROC convex hull, so minDCF is also the
  least DCF over the ROCCH vertices (:func:`bioxr.eer.lower_hull`), the
  hull of the ROCCH EER; the PAV blocks below are the hull's segments.
- ``actDCF``: the DCF at the Bayes threshold ``log(C_fa (1 - P_target) /
  (C_miss P_target))``, meaningful only for scores that are
  log-likelihood ratios (LLRs, natural log; ``llr=True``). Its excess over
  minDCF is the cost of miscalibration at that operating point.
- ``Cllr = 1/2 [mean_mated log2(1 + e^-s) + mean_nonmated log2(1 + e^s)]``
  (``llr=True`` only), the cost of the LLRs over all operating points.
- ``minCllr``: the Cllr after the optimal monotone recalibration, PAV of
  the labels on the sorted scores (BOSARIS ``min_cllr``): a block of
  ``T_b`` mated and ``N_b`` non-mated comparisons gets the posterior
  ``T_b / (T_b + N_b)``, less the empirical prior log-odds ``log(T / N)``.
  Tied scores are pooled first (one LLR per score; PYLLR puts mated before
  non-mated among ties, which pools them too). One-class end blocks have
  LLRs ``-inf`` / ``+inf`` and cost nothing (``0 log 0 = 0``, as PYLLR's
  ``min_cllr``; no epsilon). ``Cllr - minCllr`` is the calibration loss.

Scores that are not declared LLRs (``llr=False``, the default) get only the
threshold-free measures (minDCF, minCllr), and the result says so. Distance
scores cannot be LLRs (LLRs grow with the evidence for a mate):
``llr=True`` on them is an error.

Intervals (:func:`dcf_interval`, :func:`cllr_interval`): the subject
bootstrap. Whole subjects are drawn with replacement
(:func:`bioxr.bootstrap.subject_draws`); a mated comparison takes its
subject's count of draws as weight. A non-mated comparison involves two
subjects (METHODS.md section 12): ``nonmated_weights="pigeonhole"``
(default) weights it by ``w_probe w_reference`` (Owen 2007: over-states
the comparisons' own noise), ``"probe"`` by ``w_probe`` (leaves out the
reference subjects' share). Each replicate recomputes the statistic
exactly (minDCF over its thresholds, PAV on its weights). actDCF and Cllr
get the percentile interval. minDCF and minCllr are minima over
thresholds / calibrations fitted to the data they score, so the sample
value is optimistic (bias -0.4 to -0.8 SD at 150 subjects) and percentile
intervals miss (minCllr: 0.70 at 95%); ``interval="corrected"`` (default)
shifts them by the optimism the replicates show, scaled by the cube-root
law (:data:`OPTIMISM_FACTOR`, ``*_bias`` in the result).

Coverage measured at 95% (1,000 replicates; 300 or 200 simulated
experiments, standard error 1.3-1.5 points): Gaussian scores with
marginals N(3, 1) mated and N(0, 1) non-mated, 2 probes and 1 reference
per subject, all against all; ``rho`` = shares of variance of the subject
effect (mated) and of the probe and reference subjects' effects
(non-mated). pigeonhole | probe:

==========================  =========  ==========  =========  ==========  =========  ==========
scenario                    minDCF .01 actDCF .01  minDCF .1  actDCF .1   minCllr    Cllr
==========================  =========  ==========  =========  ==========  =========  ==========
150 subjects, rho 0/0/0     .98 | .95  .99 | .94   .98 | .97  .98 | .98   .89 | .89  .93 | .93
150 subjects, rho .5/0/0    .96 | .93  .98 | .97   .94 | .93  .96 | .96   .87 | .87  .91 | .90
150 subjects, rho .5/.1/.1  .93 | .89  .96 | .89   .91 | .89  .93 | .91   .86 | .86  .91 | .90
100 subjects, rho .5/.2/.2  .94 | .88  .96 | .87   .92 | .89  .95 | .92   .90 | .86  .93 | .93
==========================  =========  ==========  =========  ==========  =========  ==========

Uncorrected percentile intervals of the minima (pigeonhole, same rows):
minDCF .01 .95 .95 .92 .89, minDCF .1 .90 .90 .89 .88, minCllr .70 .70
.71 .77. "probe" falls below 0.90 once non-mated scores carry subject
effects; "pigeonhole" is never below 0.91 for the DCFs and over-covers
only without subject effects: it is the default. The minCllr and Cllr
columns above are of the percentile intervals (minCllr shifted): they
miss low (the interval below the truth), as per-subject costs are skewed
and a sample that drew fewer costly subjects has a lower Cllr and a
smaller spread. :func:`cllr_interval` therefore widens both to their
union with the calibrated bootstrap-t interval, studentised by each
replicate's cluster-robust variance (its docstring). Measured at 95%
(pigeonhole, 400 replicates; 100 simulated experiments per row, 200 in
the last, so standard errors 1.5-2.2 points), coverage (below, above) before | after:

==========================  ===============================  ===============================
scenario                    minCllr                          Cllr
==========================  ===============================  ===============================
150 subjects, rho 0/0/0     .90 (.09, .01) | .95 (.04, .01)  .95 (.02, .03) | .95 (.02, .03)
150 subjects, rho .5/0/0    .91 (.08, .01) | .97 (.02, .01)  .94 (.04, .02) | .97 (.01, .02)
150 subjects, rho .5/.1/.1  .91 (.05, .04) | .94 (.02, .04)  .93 (.03, .04) | .95 (.01, .04)
100 subjects, rho .5/.2/.2  .89 (.10, .02) | .93 (.06, .02)  .92 (.06, .02) | .93 (.05, .02)
==========================  ===============================  ===============================

minDCF's corrected interval is widened the same way (:func:`dcf_interval`):
its studentiser is the cluster-robust variance of each replicate's DCF at
its own optimal threshold. The union only widens, so the minDCF columns of
the first table (measured before it) are lower bounds for it.

On the coverage registry's cells (``tests/coverage_cells.py``: 60 subjects
x 4 samples, all against all, mated mean 3, without subject effects and
with SDs 0.7 for the subjects' mated, wolf and lamb effects; 1,000
experiments, 200 replicates; ``benchmarks/coverage_study.py --pending``)
minDCF covers 0.972 / 0.940 / 0.923 at ``P_target`` 0.01 / 0.1 / 0.5
without subject effects and 0.941 / 0.944 / 0.938 with them (0.961 /
0.922 / 0.898 and 0.918 / 0.914 / 0.914 before the union); minCllr 0.920
and 0.939. The misses of minCllr and of minDCF at ``P_target`` 0.5 are
mostly intervals wholly below the truth: with 60 subjects the optimism of
a minimum is a second-order effect that the cube-root correction only
partly removes. Read these intervals as approximate below about 100
subjects; they are not yet in the coverage registry.
"""

from ._point import NOT_LLR, cllr, dcf
from ._point import _pav, _Runs, _bayes_threshold, _dcf_from, _min_cllr_from, _operating_points  # noqa: F401  (internals)
from .intervals import INTERVALS, NONMATED_WEIGHTS, OPTIMISM_FACTOR, _Bootstrap, cllr_interval, dcf_interval  # noqa: F401

__all__ = ["INTERVALS", "NONMATED_WEIGHTS", "NOT_LLR", "OPTIMISM_FACTOR", "cllr", "cllr_interval", "dcf", "dcf_interval"]
