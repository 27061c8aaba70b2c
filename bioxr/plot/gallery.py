"""Charts of an all-against-all experiment: single- against multi-template DET, and the matrix itself.

- :func:`gallery_det_chart`: the DET curves of the two protocols of one
  G x G matrix (:mod:`bioxr.gallery`) on one set of axes, drawn by
  :func:`bioxr.plot.det_chart` (a ``protocol`` series each, with its EER
  and operating points), the attempts of each protocol and their formulas
  in the subtitle;
- :func:`gallery_heatmap`: the matrix for a small G, samples sorted by
  subject, the diagonal (a sample against itself) left blank.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from ._axes import _AXIS, _LEGEND, _counts_text, _title

__all__ = ["gallery_det_chart", "gallery_heatmap"]

#: The series labels of the two protocols.
PROTOCOLS = ("single template", "multi-template")
#: Largest G drawn by :func:`gallery_heatmap` (G x G cells; Altair takes 5,000 rows by default).
HEATMAP_MAX = 70


def _check_cube(cube, what: str) -> None:
    square = (isinstance(cube, xr.DataArray) and tuple(cube.dims) == ("probe", "reference")
              and "probe_id" in cube.coords and "reference_id" in cube.coords
              and sorted(map(str, cube.probe_id.values.tolist())) == sorted(map(str, cube.reference_id.values.tolist())))
    if not square:
        from ._axes import ResultTypeError, _describe

        raise ResultTypeError(f"{what} expects the all-against-all score cube of bioxr.gallery.all_against_all "
                              f"(or bioxr.simulate.all_against_all); it was given {_describe(cube)}.")


def gallery_det_chart(cube: xr.DataArray, *, eer_method: str = "rocch", fmr_targets=(1e-2,), band: bool = False,
                      n_replicates: int = 1000, level: float = 0.95, seed=0, failure_policy: str = "exclude",
                      axes: str = "probit", limits=None, size: int | None = None,
                      title: str = "DET curves: single- and multi-template") -> alt.LayerChart:
    """Single- and multi-template DET curves of one all-against-all matrix on one set of axes.

    Single template: every off-diagonal cell is an attempt. Multi-template:
    each probe against each subject's best sample (its own sample left
    out, :func:`bioxr.gallery.best_per_subject`). Both are drawn by
    :func:`bioxr.plot.det_chart` as two series of a ``protocol``
    dimension, each with its EER (black diamond) and its FNMR at
    ``fmr_targets`` (white squares); the subtitle gives each protocol's
    mated (TG) and non-mated (TI) attempts with their formulas (N
    subjects, S samples each, ``|G| = N S``).

    Parameters
    ----------
    cube : xarray.DataArray
        From :func:`bioxr.gallery.all_against_all`.
    eer_method : str, keyword-only
        EER convention (:func:`bioxr.verification.eer`).
    fmr_targets : sequence of float or None, keyword-only
    band : bool, keyword-only
        Draw each protocol's pointwise subject-bootstrap band
        (:func:`bioxr.bootstrap.bootstrap_curve`, ``n_replicates``,
        ``level``, ``seed``).
    axes, limits, size, title : keyword-only
        As in :func:`bioxr.plot.det_chart`.

    Returns
    -------
    altair.LayerChart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> cube = bioxr.simulate.all_against_all(n_subjects=20, n_samples=3, seed=0)
    >>> spec = plot.gallery_det_chart(cube).to_dict()
    >>> spec["title"]["subtitle"][0]
    'Single template: TG = |G|(S−1) = 60 × 2 = 120 mated, TI = |G|(N−1)S = 60 × 19 × 3 = 3,420 non-mated'
    """
    from ..bootstrap import bootstrap_curve
    from ..gallery import best_per_subject, protocol_counts
    from ..verification import det_curve, eer
    from .verification import det_chart

    _check_cube(cube, "gallery_det_chart")
    cubes = (cube, best_per_subject(cube))
    index = {"protocol": list(PROTOCOLS)}
    det = xr.concat([det_curve(c, failure_policy=failure_policy) for c in cubes], dim="protocol", join="outer",
                    combine_attrs="override").assign_coords(index)
    points = xr.concat([eer(c, method=eer_method, failure_policy=failure_policy) for c in cubes], dim="protocol",
                       combine_attrs="override").assign_coords(index)
    bands = None
    if band:
        bands = xr.concat([bootstrap_curve(c, n_replicates=n_replicates, level=level, seed=seed,
                                           failure_policy=failure_policy) for c in cubes],
                          dim="protocol", join="outer", combine_attrs="override").assign_coords(index)
    extra = {} if size is None else {"size": size}
    chart = det_chart(det, eer=points, band=bands, axes=axes, limits=limits, fmr_targets=fmr_targets, title=title,
                      **extra)
    counts = protocol_counts(cube, failure_policy=failure_policy)
    lines = []
    for key, name in zip(("single", "multi"), ("Single template", "Multi-template")):
        (tg, ti), texts = counts[key]["counted"], counts[key]["formula_text"]
        if counts[key]["counted"] == counts[key]["formula"]:
            lines.append(f"{name}: {texts[0]} mated, {texts[1]} non-mated")
        else:
            lines.append(f"{name}: {tg:,} mated, {ti:,} non-mated (the formulas give {texts[0]}, {texts[1]})")
    who = (f"N = {counts['N']:,} subjects × S = {counts['S']} samples = |G| = {counts['G']:,}" if counts["S"]
           else f"N = {counts['N']:,} subjects, |G| = {counts['G']:,} samples (unequal S)")
    pooled = _counts_text(det)
    subtitle = [line for line in chart.title.subtitle if line and line != pooled]
    chart.title = _title(title, [*lines, who + "; a sample against itself is no attempt", *subtitle],
                         chart.width + 160)
    return chart


def gallery_heatmap(cube: xr.DataArray, *, max_samples: int = HEATMAP_MAX,
                    title: str = "The all-against-all matrix") -> alt.Chart:
    """The G x G matrix as a heatmap, samples sorted by subject, the diagonal blank (small G only).

    Each subject's samples form a block on the diagonal: its mated
    comparisons. Light cells off those blocks are non-mated comparisons
    that score like mated ones. Cells not compared and the diagonal are
    left white.

    Parameters
    ----------
    cube : xarray.DataArray
        From :func:`bioxr.gallery.all_against_all`.
    max_samples : int, keyword-only
        Largest G drawn; a larger matrix raises ``ValueError`` (its cells
        would be smaller than a pixel or two).

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import plot
    >>> spec = plot.gallery_heatmap(bioxr.simulate.all_against_all(4, 3, seed=0)).to_dict()
    >>> spec["mark"]["type"], len(spec["datasets"][spec["data"]["name"]])  # 12 x 12 cells less the diagonal
    ('rect', 132)
    """
    _check_cube(cube, "gallery_heatmap")
    g = cube.sizes["probe"]
    if g > max_samples:
        raise ValueError(f"the matrix has G = {g:,} samples; a heatmap is drawn for G <= {max_samples} only "
                         "(pass max_samples= to draw a larger one).")
    subject = np.asarray(cube["subject"].values).astype(str)
    pid = np.asarray(cube["probe_id"].values).astype(str)
    rid = np.asarray(cube["reference_id"].values).astype(str)
    rsub = np.asarray(cube["reference_subject"].values).astype(str)
    prow = np.lexsort((pid, subject))
    rcol = np.lexsort((rid, rsub))
    values = np.asarray(cube.values, dtype=float)[np.ix_(prow, rcol)]
    P, R = np.meshgrid(np.arange(g), np.arange(cube.sizes["reference"]), indexing="ij")
    frame = pd.DataFrame({"probe": pid[prow][P.ravel()], "reference": rid[rcol][R.ravel()],
                          "probe_subject": subject[prow][P.ravel()], "reference_subject": rsub[rcol][R.ravel()],
                          "score": values.ravel()})
    frame["mated"] = np.where(frame["probe_subject"] == frame["reference_subject"], "mated", "non-mated")
    frame = frame[(frame["probe"] != frame["reference"]) & np.isfinite(frame["score"])]
    order_p, order_r = pid[prow].tolist(), rid[rcol].tolist()
    cell = max(6, min(16, 560 // max(g, 1)))
    kind = cube.attrs.get("score_kind", "similarity")
    chart = alt.Chart(frame).mark_rect().encode(
        x=alt.X("reference:N", sort=order_r, title="reference sample (sorted by subject)",
                axis=alt.Axis(labels=g <= 40, labelFontSize=9, **{k: v for k, v in _AXIS.items() if k != "labelFontSize"})),
        y=alt.Y("probe:N", sort=order_p, title="probe sample (sorted by subject)",
                axis=alt.Axis(labels=g <= 40, labelFontSize=9, **{k: v for k, v in _AXIS.items() if k != "labelFontSize"})),
        color=alt.Color("score:Q", title=f"{kind} score",
                        scale=alt.Scale(scheme="viridis", reverse=kind == "distance"), legend=alt.Legend(**_LEGEND)),
        tooltip=["probe:N", "reference:N", "probe_subject:N", "reference_subject:N", "mated:N",
                 alt.Tooltip("score:Q", format=".4~g")],
    )
    n_sub = len(set(subject.tolist()))
    subtitle = [f"{g:,} samples of {n_sub:,} subjects; the blocks on the diagonal are each subject's mated "
                "comparisons", "the diagonal itself (a sample against itself) is blank: it is no attempt"]
    return chart.properties(width=cell * cube.sizes["reference"], height=cell * g,
                            title=_title(title, subtitle, cell * g))
