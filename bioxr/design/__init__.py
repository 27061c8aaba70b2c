"""Sample design of a rate: the Micheals-Boult methodology (seed 000).

A rate estimated from repeated measures (every subject, every image, at
many collection times) has no single variance: it depends on how the data
were sampled. Micheals and Boult turn the usual order around: propose a
partition of the data into groups and a sample design, compute the rate and
the design's variance estimator on many independent trials, and compare the
*empirical* variance of the trial rates with the *mean* of the estimator. A
design whose estimator disagrees is rejected; iterate (randomize a
cofactor, change the partition, change which groups a trial draws) until one
agrees, and test formally only at the last iteration.

- :func:`dichotomize`: the outcome cube to a binary success per probe;
- :func:`variance_srs`, :func:`variance_stratified`,
  :func:`variance_cluster`: the three point estimators on a (group,
  element) array (METHODS.md section 3);
- :func:`design_study`: the paper's runs of trials, vectorised, with each
  estimator's ratio, its interval and a three-way verdict (compatible,
  incompatible, inconclusive: an equivalence test against a band around
  1, which says when a study has too few trials to tell designs apart);
- :func:`design_test`: the formal test of the last iteration (the paper's
  F test of agreement, the equivalence verdict, its power and the trials
  it would need);
- :func:`format_pvalue`: p-values as text, ``"< 1e-16"`` rather than 0.

For binary data with ``G`` groups of ``E`` elements the three estimators
obey an exact identity, ``G E V_srs = G (E - 1) V_st + (G - 1) V_cl``, so
``V_st <= V_srs`` holds exactly when the groups differ by more than binomial
noise, and then ``V_srs <= V_cl`` too (the paper's equation 9).
"""

from __future__ import annotations

# the private names are the old single module's, still used by the tests and the explorer
from .estimators import (  # noqa: F401
    _KERNELS,
    ESTIMATORS,
    TIES,
    _check_sizes,
    _dims,
    _estimate,
    _require,
    dichotomize,
    variance_cluster,
    variance_srs,
    variance_stratified,
)
from .inference import (  # noqa: F401
    P_FLOOR,
    TARGET_POWER,
    VERDICTS,
    _check_tolerance,
    _empirical_df,
    band,
    design_test,
    format_pvalue,
)
from .study import DESIGNS, _draw, _generator, design_study  # noqa: F401

__all__ = [
    "ESTIMATORS",
    "TARGET_POWER",
    "VERDICTS",
    "band",
    "design_study",
    "design_test",
    "dichotomize",
    "format_pvalue",
    "variance_cluster",
    "variance_srs",
    "variance_stratified",
]
