"""Small multiples: one chart per label of a kept dimension."""

from __future__ import annotations

from collections.abc import Callable, Hashable

import altair as alt
import xarray as xr

__all__ = ["facet_chart"]


def facet_chart(
    chart: Callable[..., alt.TopLevelMixin], result: xr.Dataset, dim: Hashable, *, columns: int = 3, **kwargs
) -> alt.ConcatChart:
    """Facet any bioxr chart over a kept dimension: one panel per label.

    ``chart`` is a chart function (``det_chart``, ``roc_chart``,
    ``cmc_chart``, ...) and ``result`` a Dataset that kept ``dim``. Every
    keyword argument that is an xarray object with ``dim`` (an ``eer`` or
    ``band`` Dataset, say) is cut the same way, so each panel shows its own
    EER and band. Panels are titled ``dim = label``.

    Parameters
    ----------
    chart : callable
        A chart function of :mod:`bioxr.plot` taking the result first.
    result : xarray.Dataset
        A result with the dimension ``dim``.
    dim : str
    columns : int, keyword-only
        Panels per row.
    **kwargs
        Passed to ``chart`` for every panel (``limits=`` gives DET panels
        the same axes).

    Returns
    -------
    altair.ConcatChart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> cube = bioxr.simulate.photohead(n_subjects=6, n_collections=3, seed=0)
    >>> det = bioxr.verification.det_curve(cube, dim=("subject", "image"))
    >>> eer = bioxr.verification.eer(cube, dim=("subject", "image"))
    >>> len(plot.facet_chart(plot.det_chart, det, "collection", eer=eer).to_dict()["concat"])
    3
    """
    if dim not in result.dims:
        raise ValueError(f"{dim!r} is not a dimension of the result (its dims are {list(result.dims)}).")
    panels = []
    for label in result[dim].values:
        cut = {k: (v.sel({dim: label}) if isinstance(v, (xr.Dataset, xr.DataArray)) and dim in v.dims else v)
               for k, v in kwargs.items()}
        cut.setdefault("title", f"{dim} = {label}")
        panels.append(chart(result.sel({dim: label}), **cut))
    return alt.concat(*panels, columns=columns)
