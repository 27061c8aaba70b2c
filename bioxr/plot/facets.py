"""Small multiples: one chart per label of a kept dimension."""

from __future__ import annotations

from collections.abc import Callable, Hashable

import inspect

import altair as alt
import xarray as xr

from ._axes import DET_SIZE

__all__ = ["facet_chart"]


def facet_chart(
    chart: Callable[..., alt.TopLevelMixin], result: xr.Dataset, dim: Hashable, *, columns: int = 3,
    share: bool = True, **kwargs
) -> alt.ConcatChart:
    """Facet any bioxr chart over a kept dimension: one panel per label, on shared axes.

    ``chart`` is a chart function (``det_chart``, ``roc_chart``,
    ``cmc_chart``, ...) and ``result`` a Dataset that kept ``dim``. Every
    keyword argument that is an xarray object with ``dim`` (an ``eer`` or
    ``band`` Dataset, say) is cut the same way, so each panel shows its own
    EER and band. Panels are titled ``dim = label``.

    By default every panel has the same axes, so the panels compare at a
    glance: the charts that fit their axes to the data (DET, ROC, CMC,
    open-set) are drawn a second time with ``limits=`` set to the union of
    the panels' ranges; for the others the scales are shared.

    Parameters
    ----------
    chart : callable
        A chart function of :mod:`bioxr.plot` taking the result first.
    result : xarray.Dataset
        A result with the dimension ``dim``.
    dim : str
    columns : int, keyword-only
        Panels per row.
    share : bool, keyword-only
        Share the axes across panels (default); False fits each panel to its
        own data.
    **kwargs
        Passed to ``chart`` for every panel (a ``limits=`` given here is
        used as it is). Charts with a ``size`` (DET, ROC) get panels that
        fit ``columns`` to a row of about 1,200 pixels unless it is given.

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
    >>> spec = plot.facet_chart(plot.det_chart, det, "collection", eer=eer).to_dict()
    >>> len(spec["concat"])
    3
    >>> len({str(panel["layer"][1]["encoding"]["x"]["scale"]["domain"]) for panel in spec["concat"]})
    1
    """
    if dim not in result.dims:
        raise ValueError(f"{dim!r} is not a dimension of the result (its dims are {list(result.dims)}).")
    labels = list(result[dim].values)
    if "size" in inspect.signature(chart).parameters and "size" not in kwargs:
        kwargs = {**kwargs, "size": max(240, min(DET_SIZE, 1200 // max(int(columns), 1) - 100))}  # a row fits 1200 px

    def panel(label, **extra):
        cut = {k: (v.sel({dim: label}) if isinstance(v, (xr.Dataset, xr.DataArray)) and dim in v.dims else v)
               for k, v in kwargs.items()}
        cut.setdefault("title", f"{dim} = {label}")
        return chart(result.sel({dim: label}), **cut, **extra)

    panels = [panel(label) for label in labels]
    shares = [_share_of(p) for p in panels]
    if share and "limits" not in kwargs and shares and all(s is not None for s in shares):
        union = _union([s["limits"] for s in shares])
        panels = [panel(label, limits=union) for label in labels]
    out = alt.concat(*panels, columns=columns)
    if share and not all(s is not None for s in shares):
        out = out.resolve_scale(x="shared", y="shared")
    return out


def _share_of(chart) -> dict | None:
    """The ranges a chart fitted to its data (kept beside its spec), or None."""
    return chart.__dict__.get("_bioxr_share")


def _union(ranges):
    """The smallest range holding every one of ``ranges`` (pairs, or pairs of pairs)."""
    first = ranges[0]
    if isinstance(first[0], (list, tuple)):
        return tuple(_union([r[k] for r in ranges]) for k in range(len(first)))
    return (min(float(r[0]) for r in ranges), max(float(r[1]) for r in ranges))
