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
the comparisons' own noise, which the corrected interval takes out),
``"probe"`` by ``w_probe`` (leaves out the reference subjects' share).
Each replicate recomputes the statistic exactly (minDCF over its
thresholds, PAV on its weights). actDCF gets the percentile interval,
Cllr the percentile interval widened to a calibrated bootstrap-t.

minDCF and minCllr are minima over thresholds / calibrations fitted to the
data they score, so the sample value is optimistic and a percentile
interval misses below the truth (minCllr: 0.70 at 95% with 150
subjects). ``interval="corrected"`` (default) builds the interval of a
minimum (:mod:`bioxr.calibration._optimism`):

1. *The optimism, bracketed.* A replicate's minimum is optimistic again,
   ``b = mean(replicates) - estimate < 0``. If the optimism grows with the
   noise variance as ``variance^gamma`` and a replicate carries ``lambda``
   times the sample's local noise on top of it, the sample's bias is ``f
   b``, ``f = 1 / ((1 + lambda)^gamma - 1)``. ``gamma`` is 2/3 under the
   cube-root asymptotics (Kim & Pollard 1990), 1/2 where the minimum picks
   among a few separated near-ties, 1 at a smooth or boundary minimum, and
   it is not known at a given sample size (60 subjects needed ``f`` from
   1.0 to 2.2 where the cube-root value is 1.70): the lower bound takes
   ``gamma = 1``, the upper ``gamma = 1/2``. ``lambda`` is 1 for mated
   comparisons and 3 for pigeonhole non-mated ones (the variance of ``w_a
   w_c``), mixed in the shares each side holds of the local noise at the
   optimum (``*_noise_ratio``); ``*_bias`` reports ``f(lambda, 2/3) b``.
2. *The spread, rescaled* (``*_scale``): by ``sqrt((S - P) / (S + P))``,
   the crossed moment variance of the statistic's linearisation at the
   estimate over the pigeonhole's (``S`` sums each subject's squared
   influence, ``P`` each pair of subjects'; the moment variance is floored
   at ``P``), and by ``sqrt(n / (n - 1)) t_{n-1} / z`` for ``n`` subjects
   (few clusters: Cameron & Miller 2015).
3. *Shifted percentiles and a bootstrap-t, united*: ``[e - f_lo b + q_a,
   e - f_up b + q_{1-a}]`` over the rescaled deviations ``d`` from the
   replicates' mean, widened to the bootstrap-t interval of the same
   deviations studentised by each replicate's cluster-robust variance
   (``*_replicate_variance``: minDCF's at the replicate's own optimal
   threshold, minCllr's with its own PAV costs, each held fixed: the
   envelope theorem), clipped to ``[0, 1]``.

Coverage at 95% on the coverage registry's cells (``tests/coverage_cells.py``:
60 subjects x 4 samples, all against all, mated mean 3, noise SD 1, without
subject effects and with SDs 0.7 for the subjects' mated, wolf and lamb
effects; 1,000 experiments, 200 replicates; ``benchmarks/COVERAGE.md``):

===================  ===========  ==========  ==========  =========
cell                 minDCF .01   minDCF .1   minDCF .5   minCllr
===================  ===========  ==========  ==========  =========
no subject effects   .946         .941        .942        .954
wolves, lambs        .955         .957        .951        .951
===================  ===========  ==========  ==========  =========

The same cells with 100 subjects (160,000 comparisons; 300 experiments,
standard error 1.3 points; outside the registry, which runs them at 60):
.963 / .953 / .953 / .950 without subject effects, .970 / .960 / .953 /
.963 with them.

actDCF and Cllr (scores that are LLRs; their intervals are unchanged)
were measured on Gaussian LLRs, 100-150 subjects with 2 probes and 1
reference each, with and without subject effects (300 or 200 experiments,
1,000 replicates; standard errors 1.3-1.5 points): actDCF 0.93-0.99
(pigeonhole), Cllr 0.93-0.97 after its bootstrap-t union (0.92-0.95
before).

The intervals before this construction (a fixed cube-root shift, ``f =
1.70``, and the plain pigeonhole spread) covered minDCF 0.972 / 0.940 /
0.923 and 0.941 / 0.944 / 0.938 and minCllr 0.920 / 0.939 there.
"""

from ._point import NOT_LLR, cllr, dcf
from ._point import _pav, _Runs, _bayes_threshold, _dcf_from, _min_cllr_from, _operating_points  # noqa: F401  (internals)
from ._optimism import OPTIMISM_EXPONENTS
from .intervals import INTERVALS, NONMATED_WEIGHTS, OPTIMISM_FACTOR, _Bootstrap, cllr_interval, dcf_interval  # noqa: F401

__all__ = ["INTERVALS", "NONMATED_WEIGHTS", "NOT_LLR", "OPTIMISM_EXPONENTS", "OPTIMISM_FACTOR", "cllr", "cllr_interval", "dcf", "dcf_interval"]
