"""Errors and warnings of bioxr, in one place every module imports without a cycle."""

from __future__ import annotations


class ScoreCubeError(ValueError):
    """Raised when a score cube, a comparison list (or the data they are built from) is not valid."""


ScoreCubeError.__module__ = "bioxr.cube"  # its public home: bioxr.cube.ScoreCubeError (and bioxr.ScoreCubeError)


class ScoreKindWarning(UserWarning):
    """The scores look reversed for the declared ``score_kind``."""


class FewReplicatesWarning(UserWarning):
    """Fewer bootstrap replicates than an interval at the requested level needs to be stable."""


FewReplicatesWarning.__module__ = "bioxr.bootstrap"


class DesignWarning(UserWarning):
    """The study design leaves too little independent information for an interval to cover as stated."""


DesignWarning.__module__ = "bioxr.correlation"
