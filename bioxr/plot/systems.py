"""Several systems on one DET chart, each with its subject-bootstrap band, and their paired differences."""

from __future__ import annotations

import altair as alt
import numpy as np
import xarray as xr

from ._axes import _counts_text, _title

__all__ = ["systems_det_chart"]


def _rate(v: float) -> str:
    return f"{v:+.2%}" if abs(v) >= 1e-3 or v == 0 else f"{v:+.3g}"


def _per_system_counts(det: xr.Dataset, dim: str) -> str:
    m, n = det["n_mated"].values.astype(int), det["n_nonmated"].values.astype(int)
    if (m == m[0]).all() and (n == n[0]).all():
        return f"{m[0]:,} mated and {n[0]:,} non-mated comparisons in each system"
    return "; ".join(f"{s}: {a:,} mated, {b:,} non-mated" for s, a, b in zip(det[dim].values.tolist(), m, n))


def _difference_lines(diff: xr.Dataset) -> list[str]:
    """Subtitle lines of a :func:`bioxr.systems.paired_difference` result: one per pair (and target)."""
    if not isinstance(diff, xr.Dataset) or "difference_interval" not in diff:
        raise TypeError("difference= takes the Dataset of bioxr.systems.paired_difference.")
    a = diff.attrs
    name = {"eer": f"EER ({a.get('eer_method', '')})", "fnmr_at_fmr": "FNMR", "fmr": "FMR",
            "fnmr": "FNMR"}.get(a.get("statistic"), "statistic")
    n_tests = int(np.isfinite(diff["p_value"].values).sum())
    adjusted = a.get("adjust", "none") != "none" and n_tests > 1
    lines = [f"Paired subject bootstrap, {int(a.get('n_subjects', 0)):,} subjects, "
             f"{int(a.get('n_replicates', 0)):,} replicates: difference [{float(a.get('level', 0.95)):.0%} percentile "
             "interval], two-sided p" + (f" {a['adjust'].capitalize()}-adjusted over {n_tests} tests" if adjusted else "")]
    targets = diff["fmr_target"].values.tolist() if "fmr_target" in diff.dims else [None]
    for pair in diff["pair"].values.tolist():
        for t in targets:
            sel = {"pair": pair, **({"fmr_target": t} if t is not None else {})}
            d = float(diff["difference"].sel(sel))
            lo, hi = (float(v) for v in diff["difference_interval"].sel(sel).values)
            p = float((diff["p_adjusted"] if adjusted else diff["p_value"]).sel(sel))
            at = f" at FMR {t:.3g}" if t is not None else ""
            lines.append(f"{name}{at}, {pair.replace(' - ', ' − ')}: {_rate(d)} [{_rate(lo)}, {_rate(hi)}], "
                         f"p{' (adjusted)' if adjusted else ''} = {p:.3g}")
    return lines


def systems_det_chart(obj, *, dim: str = "system", band=True, difference: xr.Dataset | None = None,
                      eer: bool = True, method: str | None = None, convention: str = "bioxr",
                      n_replicates: int = 1000, level: float = 0.95, seed=0, failure_policy: str = "exclude",
                      axes: str = "probit", limits=None, fmr_targets=None, size: int | None = None,
                      title: str | None = None) -> alt.LayerChart:
    """The DET curves of several systems on one chart, each with its pointwise subject-bootstrap band.

    Each system's curve is its exact DET (:func:`bioxr.verification.det_curve`),
    coloured by system, with its EER point; under it the system's
    pointwise band (:func:`bioxr.systems.system_bands`, the subject
    bootstrap of :func:`bioxr.bootstrap.bootstrap_curve`). The bands show
    each system's own uncertainty: overlapping bands do not mean the
    systems are alike, because the systems share their subjects and their
    difference varies less than either curve. ``difference`` adds the
    paired comparison (:func:`bioxr.systems.paired_difference`) to the
    subtitle, one line per pair.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        Stacked systems (:func:`bioxr.systems.stack_systems`).
    dim : str, keyword-only
    band : bool or xarray.Dataset, keyword-only
        True (default): compute the bands with ``n_replicates``, ``level``
        and ``seed``; a Dataset from :func:`bioxr.systems.system_bands`;
        False: no bands.
    difference : xarray.Dataset, optional, keyword-only
    eer : bool, keyword-only
        Mark each system's EER (``method``, ``convention``).
    axes, limits, fmr_targets, size, title : keyword-only
        As in :func:`bioxr.plot.det_chart` (``fmr_targets`` marks each
        system's FNMR at those FMRs).

    Returns
    -------
    altair.LayerChart

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.plot import systems_det_chart
    >>> cube = bioxr.simulate.systems(n_subjects=40, n_samples=2, shift=-0.5, seed=1)
    >>> spec = systems_det_chart(cube, n_replicates=100, seed=2).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['line', 'line', 'line', 'point', 'text', 'text']
    >>> spec["title"]["text"]
    'DET curves of 2 systems on the same 40 subjects'
    """
    from ..systems import _stack, system_bands
    from ..verification import det_curve
    from ..verification import eer as _eer
    from .verification import det_chart

    names, subs = _stack._split(obj, dim)
    if band is True:
        band = system_bands(obj, dim=dim, n_replicates=n_replicates, level=level, seed=seed,
                                     failure_policy=failure_policy)
    elif band is False or band is None:
        band = None
    elif not isinstance(band, xr.Dataset):
        raise TypeError("band= takes True, False or the Dataset of bioxr.systems.system_bands.")
    index = {dim: list(names)}
    det = xr.concat([det_curve(s, failure_policy=failure_policy) for s in subs], dim=dim, join="outer",
                    combine_attrs="override").assign_coords(index)
    points = None
    if eer:
        points = xr.concat([_eer(s, method=method, convention=convention, failure_policy=failure_policy)
                            for s in subs], dim=dim, combine_attrs="override").assign_coords(index)
    n_subjects = len(set().union(*(_stack._subject_labels(s) for s in subs)))
    text = title or f"DET curves of {len(names)} systems on the same {n_subjects:,} subjects"
    extra = {} if size is None else {"size": size}
    chart = det_chart(det, eer=points, band=band, axes=axes, limits=limits, fmr_targets=fmr_targets, title=text,
                      **extra)
    pooled = _counts_text(det)  # the counts of each system, said once when they are the same
    subtitle = [_per_system_counts(det, dim) if line == pooled else line for line in chart.title.subtitle if line]
    if band is not None:
        subtitle.append("Each band is one system's own uncertainty; the systems share their subjects, so compare "
                        "them by the paired difference")
    if difference is not None:
        subtitle += _difference_lines(difference)
    chart.title = _title(text, subtitle, chart.width + 160)
    return chart
