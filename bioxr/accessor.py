"""The ``.bio`` accessor: one thin door to bioxr's functions.

Registered on both :class:`xarray.DataArray` (score cubes) and
:class:`xarray.Dataset` (outcome cubes and results). ``__init__`` only stores
the object; every method is a one-line call of a topic function, which
validates its input. There is no logic here.
"""

from __future__ import annotations

import xarray as xr

from . import outcomes as _outcomes
from . import verification as _verification

__all__ = ["BioAccessor"]


class BioAccessor:
    """Biometric statistics on a score cube (``cube.bio``).

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=50, seed=3)
    >>> cube.bio.eer().attrs["eer_method"]
    'rocch'
    """

    def __init__(self, obj):
        self._obj = obj

    def error_rates(self, threshold, *, dim=None) -> xr.Dataset:
        """FMR and FNMR with counts at thresholds; see :func:`bioxr.verification.error_rates`."""
        return _verification.error_rates(self._obj, threshold, dim=dim)

    def fmr(self, threshold, *, dim=None) -> xr.Dataset:
        """False match rate at thresholds; see :func:`bioxr.verification.fmr`."""
        return _verification.fmr(self._obj, threshold, dim=dim)

    def fnmr(self, threshold, *, dim=None) -> xr.Dataset:
        """False non-match rate at thresholds; see :func:`bioxr.verification.fnmr`."""
        return _verification.fnmr(self._obj, threshold, dim=dim)

    def det_curve(self, *, dim=None) -> xr.Dataset:
        """Exact DET curve; see :func:`bioxr.verification.det_curve`."""
        return _verification.det_curve(self._obj, dim=dim)

    def roc_curve(self, *, dim=None) -> xr.Dataset:
        """Exact ROC curve; see :func:`bioxr.verification.roc_curve`."""
        return _verification.roc_curve(self._obj, dim=dim)

    def eer(self, *, dim=None, method: str = "rocch") -> xr.Dataset:
        """Equal error rate by a stated convention; see :func:`bioxr.verification.eer`."""
        return _verification.eer(self._obj, dim=dim, method=method)

    def outcomes(self) -> xr.Dataset:
        """Per-probe outcome cube with Annex F ranks; see :func:`bioxr.outcomes.outcomes`."""
        return _outcomes.outcomes(self._obj)


xr.register_dataarray_accessor("bio")(BioAccessor)
xr.register_dataset_accessor("bio")(BioAccessor)
