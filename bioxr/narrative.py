"""What report templates write: provenance, escaped labels, and sentences about the data.

Templates reach these through :mod:`bioxr.report` (``report.provenance``,
``report.escape``, ...), which re-exports them; they live here to keep the
runner and the narration apart. Each sentence helper reads what the readers
and statistics record in ``attrs``, so a template states the failure policy,
FTE/FTA and every excluded count in a line or two.
"""

from __future__ import annotations

import hashlib
import html
import importlib.metadata
import os
import platform
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import xarray as xr

__all__ = ["Provenance", "provenance", "escape", "probe_dims", "describe_scores", "exclusions", "failure_summary",
           "score_kind_warning", "RESULTS_ENV", "SUMMARY_FILE"]


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")


def escape(value) -> str:
    """Make a string from the data safe inside Markdown (and so HTML).

    HTML special characters become entities and Markdown punctuation is
    backslash-escaped, so a subject label such as ``<script>`` or ``*x*``
    shows literally.

    Examples
    --------
    >>> from bioxr.narrative import escape
    >>> escape("<b>S_01</b>")
    '&lt;b&gt;S\\\\_01&lt;/b&gt;'
    """
    return _MD_SPECIAL.sub(r"\\\1", html.escape(str(value), quote=True))


def _sha256(path: Path) -> tuple[str, int]:
    """sha256 and size of a file, or of a folder (a Zarr store): its files' relative paths and contents, in order."""
    digest, size = hashlib.sha256(), 0
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        size += file.stat().st_size
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest(), size


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        module = sys.modules.get(name)
        return getattr(module, "__version__", "not installed")


@dataclass
class Provenance:
    """What a report was made from; shown as an HTML table in notebooks."""

    parameters: dict
    data: dict
    versions: dict
    conventions: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"parameters": self.parameters, "data": self.data, "versions": self.versions,
                "conventions": self.conventions}

    def _repr_html_(self) -> str:
        rows = []
        for section, items in self.as_dict().items():
            for k, (key, value) in enumerate(items.items()):
                head = html.escape(section) if k == 0 else ""
                rows.append(f"<tr><th style='text-align:left;vertical-align:top'>{head}</th>"
                            f"<td style='text-align:left'><code>{html.escape(str(key))}</code></td>"
                            f"<td style='text-align:left'>{html.escape(str(value))}</td></tr>")
        return "<table class='bioxr-provenance'>\n" + "\n".join(rows) + "\n</table>"


RESULTS_ENV = "BIOXR_REPORT_RESULTS"
#: The summary table every report writes beside itself.
SUMMARY_FILE = "summary.csv"


def _save_results(template: str, namespace: dict, results, folder: Path) -> dict:
    """Write each result Dataset as netCDF, named after its variable in the notebook."""
    names = {id(v): k for k, v in namespace.items() if not k.startswith("_")}
    saved = {}
    for k, result in enumerate(results):
        if not isinstance(result, (xr.Dataset, xr.DataArray)):
            continue
        name = names.get(id(result), f"result{k}")
        ds = result.to_dataset(name=result.name or name) if isinstance(result, xr.DataArray) else result
        ds = ds.copy()
        ds.attrs = {a: (v if isinstance(v, (str, int, float)) else str(v)) for a, v in ds.attrs.items()}
        for var in ds.variables.values():
            var.attrs = {a: (v if isinstance(v, (str, int, float)) else str(v)) for a, v in var.attrs.items()}
        path = folder / f"{Path(str(template)).stem}_{name}.nc"
        ds.to_netcdf(path, engine="h5netcdf")
        saved[name] = path.name
    return saved


def provenance(template, namespace: dict, *, cube=None, results=(), summary=None) -> Provenance:
    """Record a report's provenance: parameters, data, versions, conventions.

    Parameters
    ----------
    template : str or path
        The template's name: its declared parameters are looked up in
        ``namespace``.
    namespace : dict
        The notebook's variables (``globals()``).
    cube : xarray.DataArray or xarray.Dataset, optional, keyword-only
        The score cube or comparison list, for its simulator, score kind
        and missing-value record.
    summary : xarray.Dataset, optional, keyword-only
        The report's summary table (:func:`bioxr.summary`); under
        ``bioxr report`` it is written beside the report as
        ``summary.csv`` (:func:`bioxr.headline.to_csv`).
    results : sequence of xarray.Dataset, keyword-only
        Results whose ``attrs`` name conventions (EER method, decision
        rule, tie rule); they are collected. Under ``bioxr report`` each
        is also saved beside the report as ``<template>_<variable>.nc``
        (netCDF), and the files are listed.

    Returns
    -------
    Provenance
        ``data`` holds the scores file's path, size and sha256, or
        "simulated, seed N" with the simulator call.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import provenance
    >>> cube = bioxr.simulate.gaussian(n_subjects=10, seed=3)
    >>> p = provenance("verification", {"seed": 3, "scores": ""}, cube=cube)
    >>> p.data["source"]
    'simulated, seed 3'
    """
    from .report import template_parameters

    params = template_parameters(template)
    values = {p.name: namespace.get(p.name, p.default) for p in params}
    data: dict = {}
    scores = values.get("scores") or namespace.get("scores")
    if scores:
        path = Path(scores)
        data["source"] = f"score {'folder' if path.is_dir() else 'file'} {path.name}"
        data["path"] = str(path.resolve())
        data["sha256"], size = _sha256(path)
        data["bytes"] = f"{size:,}"
    else:
        data["source"] = f"simulated, seed {values.get('seed', namespace.get('seed'))}"
    if cube is not None:
        if "simulator" in cube.attrs and not scores:
            data["simulator"] = cube.attrs["simulator"]
        data["dims"] = ", ".join(f"{d}: {n}" for d, n in cube.sizes.items())
        data["score_kind"] = cube.attrs.get("score_kind", "similarity")
        sentinel = cube.attrs.get("missing_sentinel", cube.attrs.get("missing_value"))
        if sentinel is not None or "n_missing" in cube.attrs:
            data["missing sentinel"] = f"{sentinel} ({cube.attrs.get('n_missing', 0):,} cells, not compared)"
    versions = {name: _version(name) for name in ("bioxr", "numpy", "xarray", "pandas", "scipy", "altair")}
    versions["python"] = platform.python_version()
    folder = os.environ.get(RESULTS_ENV)
    if folder:
        for name, file in _save_results(template, namespace, results, Path(folder)).items():
            data[f"result {name}"] = file
        if summary is not None:
            from .headline import to_csv

            to_csv(summary, Path(folder) / SUMMARY_FILE)
            data["summary table"] = SUMMARY_FILE
    conventions = {}
    for result in results:
        for key in ("eer_method", "eer_convention", "decision_rule", "tie_rule", "operating_point", "interval",
                    "method", "level", "partition", "design", "randomize", "rule", "impostors", "failure_policy"):
            if key in getattr(result, "attrs", {}):
                conventions.setdefault(key, result.attrs[key])
    return Provenance(values, data, versions, conventions)


# ------------------------------------------------------------- sentences ---

_POLICIES = {
    "exclude": "comparisons with a failed enrolment or acquisition are left out of every rate, so the rates hold "
               "for what was enrolled and acquired; FTE and FTA are reported beside them",
    "nist": "as in NIST's practice (usnistgov/frvt #133), a failed template in a mated comparison is a false "
            "non-match at every threshold, and in a non-mated comparison a correct non-match kept in the "
            "denominator, so failures raise FNMR and never FMR",
    "iso": "the generalized rates of ISO/IEC 19795-1 for single-attempt transactions: GFRR = FTE + (1 - FTE) FTA "
           "+ (1 - FTE)(1 - FTA) FNMR and GFAR = (1 - FTE)(1 - FTA) FMR",
}


def probe_dims(obj) -> tuple:
    """The probe dimensions of a score or outcome cube, or a comparison list's probe cofactors.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import probe_dims
    >>> probe_dims(bioxr.simulate.photohead(n_subjects=2, n_collections=2, seed=0))
    ('subject', 'image', 'collection')
    """
    if isinstance(obj, xr.Dataset) and "comparison" in obj.dims:
        return tuple(obj.attrs.get("probe_dims", ()))
    return tuple(d for d in obj.dims if d != "reference")


def describe_scores(obj) -> str:
    """What the scores are, as a phrase: a cube's dimensions, a list's comparisons, or the searches.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import describe_scores
    >>> describe_scores(bioxr.simulate.gaussian(n_subjects=3, seed=0))
    'a score cube with dimensions probe (6), reference (3)'
    """
    if isinstance(obj, xr.Dataset) and "comparison" in obj.dims:
        cofactors = probe_dims(obj)
        return (f"a comparison list of {obj.sizes['comparison']:,} comparisons"
                + (f" (probe cofactors: {', '.join(escape(c) for c in cofactors)})" if cofactors else ""))
    sizes = ", ".join(f"{escape(d)} ({n:,})" for d, n in obj.sizes.items())
    if isinstance(obj, xr.Dataset):
        return f"an outcome cube (one row per search) with dimensions {sizes}"
    return f"a score cube with dimensions {sizes}"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def exclusions(obj, *, missing=None, failure=None) -> str:
    """One sentence with every count that was left out of the comparisons, zeros included.

    Reads the readers' records in ``attrs``: ``n_not_compared`` (cells or
    rows without a score), ``n_missing`` (the ``missing`` sentinel),
    ``n_failed_enrolments``, ``n_failed_acquisitions`` and
    ``n_failed_comparisons`` (the ``failure`` sentinel), ``n_self_comparisons``
    and ``n_labels_normalised``. Without ``n_not_compared`` the empty cells of
    an in-memory cube are counted.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import exclusions
    >>> exclusions(bioxr.simulate.gaussian(n_subjects=3, seed=0))
    'Left out of the counts: 0 cells without a score (not compared); no "not compared" sentinel was declared; 0 self comparisons (the same sample on both sides); no failure sentinel was declared.'
    """
    from .report import parse_number

    attrs = obj.attrs
    is_list = isinstance(obj, xr.Dataset) and "comparison" in obj.dims
    unit = "rows" if is_list else "cells"
    empty = attrs.get("n_not_compared")
    if empty is None and isinstance(obj, xr.DataArray) and not hasattr(obj.data, "dask"):
        empty = max(0, int(obj.isnull().sum()) - int(attrs.get("n_missing", 0)))
    parts = [f"{int(empty or 0):,} {unit} without a score (not compared)"]
    sentinel = attrs.get("missing_sentinel", parse_number(missing))
    parts.append(f"{int(attrs.get('n_missing', 0)):,} {unit} holding the sentinel {sentinel:g}, which means "
                 "\"not compared\"" if sentinel is not None else "no \"not compared\" sentinel was declared")
    parts.append(f"{int(attrs.get('n_self_comparisons', 0)):,} self comparisons (the same sample on both sides)")
    failed = attrs.get("failure_sentinel", parse_number(failure))
    if failed is None:
        parts.append("no failure sentinel was declared")
    else:
        parts.append(f"at the failure sentinel {failed:g}, {_count(int(attrs.get('n_failed_enrolments', 0)), 'failed enrolment')} "
                     f"and {_count(int(attrs.get('n_failed_acquisitions', 0)), 'failed acquisition')} (counted by the "
                     f"failure policy below) and {int(attrs.get('n_failed_comparisons', 0)):,} other {unit} (not compared)")
    text = "Left out of the counts: " + "; ".join(parts) + "."
    normalised = int(attrs.get("n_labels_normalised", 0))
    if normalised:
        text += (f" {_count(normalised, 'label was', 'labels were')} normalised to Unicode NFC, so that one "
                 "subject written two ways counts once.")
    return text


def failure_summary(obj, *, failure_policy: str = "exclude", level: float = 0.95) -> str:
    """The failure policy and FTE/FTA with their intervals, as Markdown (bioxr.failures.failure_rates).

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import failure_summary
    >>> failure_summary(bioxr.simulate.gaussian(n_subjects=3, seed=0)).startswith("Failure policy **exclude**")
    True
    """
    if failure_policy not in _POLICIES:
        from .report import ParameterError

        raise ParameterError("failure_policy", f"must be one of {', '.join(_POLICIES)}; got {failure_policy!r}.")
    text = f"Failure policy **{failure_policy}**: {_POLICIES[failure_policy]}."
    from bioxr.comparisons import is_comparison_list
    from bioxr.failures import failure_rates

    if not (isinstance(obj, xr.DataArray) or is_comparison_list(obj)):
        return text + " FTE and FTA are not known: candidate lists record searches, not enrolment or acquisition attempts."
    rates = failure_rates(obj, level=level)
    for rate, failed, total, what in (("fte", "n_failed_enrolments", "n_references", "references failed to enrol"),
                                      ("fta", "n_failed_acquisitions", "n_probes", "probes failed to be acquired")):
        lo, hi = (float(v) for v in rates[f"{rate}_interval"].values)
        text += (f" {rate.upper()} = **{float(rates[rate]):.2%}** ({int(rates[failed]):,} of "
                 f"{int(rates[total]):,} {what}; {level:.0%} interval {lo:.2%} to {hi:.2%}).")
    return text


def score_kind_warning(obj) -> str:
    """A bold warning when the scores look reversed for their declared kind, else ``""``.

    From :func:`bioxr.comparisons.check_score_kind`; templates print it first.
    """
    from bioxr.comparisons import check_score_kind

    warning = check_score_kind(obj)
    return f"**Warning: {escape(warning)}**" if warning else ""
