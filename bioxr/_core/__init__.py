"""The private core every topic module shares: grouped comparisons, checks, the tie share.

Score cubes and comparison lists are two forms of the same data. Topic
modules never handle them separately: :class:`Grouped` splits either form
into groups of comparisons (one per combination of the kept dims) and
hands each group out as ``(values, index)``: the group's scores (a 2-D
block of a cube, or a 1-D slice of a list) and the flat positions of its
mated and excluded (self) comparisons. :mod:`bioxr.counting` works on that
pair, whatever the form.

Also here: the failure policies, the checks of ``level``, ``n_replicates``
and targets, the Annex F tie share, and the reversed-score-kind check.
"""

from .bands import BAND_METHODS, BAND_SCALES, BAND_STUDENTISE, simultaneous_band
from .checks import (FAILURE_POLICIES, FAILURE_RULES, check_level, check_policy, check_rank, check_replicates, check_targets,
                     orientation_message, tie_share, warn_if_reversed)
from .errors import DesignWarning, FewReplicatesWarning, ScoreCubeError, ScoreKindWarning
from .groups import Grouped, ListIndex, as_data, flat_comparisons, raise_no_subjects, split_scores

__all__ = ["BAND_METHODS", "BAND_SCALES", "BAND_STUDENTISE", "FAILURE_POLICIES", "FAILURE_RULES", "FewReplicatesWarning", "Grouped", "ListIndex", "ScoreCubeError", "ScoreKindWarning", "as_data",
           "check_level", "check_policy", "check_rank", "check_replicates", "check_targets", "flat_comparisons",
           "orientation_message", "raise_no_subjects", "simultaneous_band", "split_scores", "tie_share", "warn_if_reversed"]
