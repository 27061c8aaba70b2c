"""Failures as data: failure to enrol (FTE) and failure to acquire (FTA).

A failed enrolment (no reference template could be made) and a failed
acquisition (no probe sample or template) are not "not compared": they
are outcomes of the test. bioxr records them as boolean coordinates,
distinct from NaN:

- on a score cube, ``failed_enrolment`` on ``reference`` and
  ``failed_acquisition`` on the probe dimensions (the scores there are NaN);
- on a comparison list, both on ``comparison``.

Readers set them from a declared sentinel (``failure=-1``: a column that is
all sentinel is a failed enrolment, a row a failed acquisition) or from
marker columns. How the rates count them is each statistic's
``failure_policy`` (:data:`bioxr._core.FAILURE_RULES`):

- ``"exclude"``: left out of FMR and FNMR, and counted in the result's attrs;
- ``"nist"``: a mated comparison involving a failure is a false non-match at
  every threshold, a non-mated one a correct non-match (NIST FRVT/FRTE);
- ``"iso"``: the ISO/IEC 19795-1 generalized rates
  ``GFRR = FTE + (1 - FTE) FTA + (1 - FTE)(1 - FTA) FNMR`` and
  ``GFAR = (1 - FTE)(1 - FTA) FMR``.

:func:`failure_rates` gives FTE and FTA themselves, with intervals.
"""

from __future__ import annotations

import xarray as xr

from ._core import FAILURE_POLICIES, FAILURE_RULES, Grouped, check_level
from .intervals import DEFAULT_METHOD, INTERVAL_METHODS, binomial_interval

__all__ = ["FAILURE_POLICIES", "FAILURE_RULES", "failure_rates", "mark_failures"]


def failure_rates(obj, *, level: float = 0.95, method: str = DEFAULT_METHOD) -> xr.Dataset:
    """Failure-to-enrol and failure-to-acquire rates, with binomial intervals.

    FTE is the share of references (enrolment attempts) that failed; FTA the
    share of probes (acquisition attempts). A reference is a position on the
    ``reference`` dimension of a cube, or a distinct ``reference_id`` (else
    ``reference``, else ``reference_subject``) of a list; a probe is a cell
    of the probe dims of a cube, or a distinct probe of a list (its probe
    dims, ``probe_id``, ``probe`` or ``subject``).

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list.
    level : float, keyword-only
    method : {"modified-wilson", "wilson", "clopper-pearson", "jeffreys"}, keyword-only
        Interval method of :func:`bioxr.intervals.binomial_interval` (each
        enrolment or acquisition attempt counted as independent; the rule
        of three at zero failures).

    Returns
    -------
    xarray.Dataset
        ``fte``, ``fta`` and ``fte_interval``, ``fta_interval`` (``bound``
        dim), ``fte_bound_kind``, ``fta_bound_kind`` (two- or one-sided);
        ``n_failed_enrolments``, ``n_references``,
        ``n_failed_acquisitions``, ``n_probes``.

    References
    ----------
    ISO/IEC 19795-1:2006, 4.6 and 8.3 (FTE, FTA, generalized rates).

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> scores = np.array([[0.9, 0.2, np.nan], [0.1, 0.8, np.nan], [0.3, 0.2, np.nan]])
    >>> cube = bioxr.score_cube(scores, subject=["a", "b", "c"], reference_subject=["a", "b", "c"])
    >>> cube = bioxr.failures.mark_failures(cube, enrolment=[False, False, True])
    >>> r = bioxr.failures.failure_rates(cube)
    >>> round(float(r.fte), 4), int(r.n_failed_enrolments), float(r.fta)
    (0.3333, 1, 0.0)
    """
    check_level(level)
    u = Grouped(obj, None).unit_failures() if _has_flags(obj) else _no_failures(obj)
    out = {}
    for rate, failed, total in (("fte", "n_failed_enrolments", "n_references"),
                                ("fta", "n_failed_acquisitions", "n_probes")):
        n, k = u[total], u[failed]
        out[rate] = xr.DataArray(k / n if n else float("nan"))
        ci = binomial_interval(k, n, method=method, level=level)
        out[f"{rate}_interval"] = ci.drop_vars(["interval_method", "bound_kind"], errors="ignore")
        if "bound_kind" in ci.coords:
            out[f"{rate}_bound_kind"] = xr.DataArray(ci["bound_kind"].item())
        out[failed] = xr.DataArray(k)
        out[total] = xr.DataArray(n)
    ds = xr.Dataset(out, attrs={"method": method, "level": level,
                                "units": "references (enrolment attempts) and probes (acquisition attempts)"})
    ds["fte"].attrs["long_name"] = "failure-to-enrol rate"
    ds["fta"].attrs["long_name"] = "failure-to-acquire rate"
    return ds


def _has_flags(obj) -> bool:
    return any(name in obj.coords for name in ("failed_enrolment", "failed_acquisition"))


def _no_failures(obj) -> dict:
    groups = Grouped(obj, None)
    return groups.unit_failures() if groups.form == "list" else {
        "n_failed_enrolments": 0, "n_references": groups.n_ref, "n_failed_acquisitions": 0,
        "n_probes": int(groups.probe_codes.size)}


def mark_failures(obj, *, enrolment=None, acquisition=None):
    """Flag failed enrolments (references) and failed acquisitions (probes) on a score cube or list.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube, or a comparison list.
    enrolment : array_like of bool, optional
        One flag per reference (cube) or per comparison (list).
    acquisition : array_like of bool or xarray.DataArray, optional
        One flag per probe: a boolean DataArray over probe dims, or an array
        over the first probe dimension (cube); one per comparison (list).

    Returns
    -------
    The same object with ``failed_enrolment`` / ``failed_acquisition``
    coordinates; the scores of flagged cells become NaN (they were not
    comparisons).

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> cube = bioxr.score_cube(np.eye(3), subject=list("abc"), reference_subject=list("abc"))
    >>> marked = mark_failures(cube, acquisition=[True, False, False])
    >>> int(marked.isnull().sum()), int(marked.failed_acquisition.sum())
    (3, 1)
    """
    import numpy as np

    from .comparisons import COMPARISON, is_comparison_list
    from .cube import REFERENCE, probe_dims

    if is_comparison_list(obj):
        ds = obj
        mask = np.zeros(ds.sizes[COMPARISON], dtype=bool)
        for name, flags in (("failed_enrolment", enrolment), ("failed_acquisition", acquisition)):
            if flags is not None:
                flags = np.asarray(flags, dtype=bool)
                ds = ds.assign_coords({name: (COMPARISON, flags)})
                mask |= flags
        return ds.assign(score=ds["score"].where(~xr.DataArray(mask, dims=COMPARISON)))
    cube = obj
    mask = xr.zeros_like(cube, dtype=bool)
    if enrolment is not None:
        flags = np.asarray(enrolment, dtype=bool)
        cube = cube.assign_coords(failed_enrolment=(REFERENCE, flags))
        mask = mask | cube["failed_enrolment"]
    if acquisition is not None:
        if isinstance(acquisition, xr.DataArray):
            coord = acquisition.astype(bool)
        else:
            coord = xr.DataArray(np.asarray(acquisition, dtype=bool), dims=probe_dims(cube)[0])
        cube = cube.assign_coords(failed_acquisition=coord)
        mask = mask | cube["failed_acquisition"]
    return cube.where(~mask)


__doc__ += "\n\nFailure rules, as recorded in ``attrs['failure_rule']``:\n\n" + "\n".join(
    f"- ``{k}``: {v}" for k, v in FAILURE_RULES.items()
)
