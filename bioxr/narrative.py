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

import numpy as np
import xarray as xr

__all__ = ["Provenance", "provenance", "escape", "probe_dims", "describe_scores", "exclusions", "failure_summary",
           "score_kind_warning", "RESULTS_ENV", "SUMMARY_FILE", "HEADER_PARAMETERS", "public_text", "report_date",
           "header", "has_cofactor", "attempts_sentence", "open_set_plan", "replicates_note", "markdown_table",
           "plan_table", "plan_narrative", "format_rank", "hardest_probes", "enrolled_subjects",
           "computed_rows"]


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
                head = html.escape(section.capitalize()) if k == 0 else ""
                # parameters are named as they are given (-p name value); the rest are labels for people
                name = f"<code>{html.escape(str(key))}</code>" if section == "parameters" else html.escape(str(key))
                shown = ("(empty)" if section == "parameters" and value == "" else
                         f"{value:g}" if isinstance(value, float) else html.escape(str(value)))
                rows.append(f"<tr><th style='text-align:left;vertical-align:top'>{head}</th>"
                            f"<td style='text-align:left'>{name}</td>"
                            f"<td style='text-align:left'>{shown}</td></tr>")
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
    results : sequence or dict of xarray.Dataset, keyword-only
        Results whose ``attrs`` name conventions (EER method, decision
        rule, tie rule); they are collected, and a convention on which
        they differ lists each value once, or, when ``results`` is a dict,
        each result's value under its key (e.g. ``{"iteration 1": study1}``).
        Under ``bioxr report`` each is also saved beside the report as
        ``<template>_<variable>.nc`` (netCDF), and the files are listed.

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

    labelled = results if isinstance(results, dict) else None
    results = list(results.values()) if labelled is not None else list(results)
    params = template_parameters(template)
    values = {p.name: namespace.get(p.name, p.default) for p in params}
    scores = values.get("scores") or namespace.get("scores") or values.get("scores_a")
    values = {p.name: values[p.name] for p in params if _applies(p, bool(scores))}
    if "date" in values:
        values["date"] = report_date(values["date"])
    data: dict = {}
    if scores:
        paths = [values.get(name) or namespace.get(name) for name in ("scores", "scores_a", "scores_b")]
        for k, given in enumerate(p for p in paths if p):
            path, tail = Path(given), "" if k == 0 else f" {k + 1}"
            data["source" + tail] = f"score {'folder' if path.is_dir() else 'file'} {path.name}"
            data["path" + tail] = str(path.resolve())
            data["sha256" + tail], size = _sha256(path)
            data["bytes" + tail] = f"{size:,}"
    else:
        data["source"] = f"simulated, seed {values.get('seed', namespace.get('seed'))}"
    for param in params:  # every other file a parameter names (labels, a subject table): it shapes the results too
        given = values.get(param.name)
        if param.is_path and given and param.name not in _SCORE_PARAMETERS and Path(str(given)).exists():
            path = Path(str(given))
            data[f"{param.name} {'folder' if path.is_dir() else 'file'}"] = str(path.resolve())
            data[f"{param.name} sha256"] = _sha256(path)[0]
    if cube is not None:
        if "simulator" in cube.attrs and not scores:
            data["simulator"] = cube.attrs["simulator"]
        data["dimensions"] = ", ".join(f"{d}: {n:,}" for d, n in cube.sizes.items())
        data["score kind"] = cube.attrs.get("score_kind", "similarity")
        sentinel = cube.attrs.get("missing_sentinel", cube.attrs.get("missing_value"))
        if sentinel is not None or "n_missing" in cube.attrs:
            data["missing sentinel"] = f"{sentinel} ({cube.attrs.get('n_missing', 0):,} cells, not compared)"
    versions = {name: _version(name) for name in ("bioxr", "numpy", "xarray", "pandas", "scipy", "altair")}
    versions["python"] = platform.python_version()
    folder = os.environ.get(RESULTS_ENV)
    if folder:
        files = list(_save_results(template, namespace, results, Path(folder)).values())
        if summary is not None:
            from .headline import to_csv

            to_csv(summary, Path(folder) / SUMMARY_FILE)
            files.insert(0, SUMMARY_FILE)
        if files:
            data["files beside this report"] = ", ".join(files)
    return Provenance(values, data, versions, _conventions(results, labelled))


#: The conventions a result's ``attrs`` may name, and how provenance labels them.
_CONVENTIONS = {"eer_method": "EER method", "eer_convention": "EER convention", "decision_rule": "decision rule",
                "tie_rule": "tie rule", "operating_point": "operating point", "interval": "interval",
                "method": "method", "level": "confidence level", "partition": "partition", "design": "design",
                "randomize": "randomized over", "rule": "success rule", "impostors": "impostor searches",
                "failure_policy": "failure policy"}


_SCORE_PARAMETERS = ("scores", "scores_a", "scores_b")


def _applies(param, from_file: bool) -> bool:
    """Whether a template parameter was used: simulator settings only on simulated data, reader settings only on files."""
    help_ = param.help.lower()
    if help_.startswith("simulator"):
        return not from_file
    if help_.startswith(("score file", "long files", "path to")) or param.name in ("scores", "scores_a", "scores_b"):
        return from_file
    return True


def _conventions(results, labelled: dict | None) -> dict:
    """Each convention the results name; where they differ, each value once (or each labelled result's value)."""
    labels = list(labelled) if labelled is not None else [None] * len(results)
    found: dict = {}
    for label, result in zip(labels, results):
        attrs = getattr(result, "attrs", {})
        for key in _CONVENTIONS:
            if key in attrs:
                found.setdefault(key, []).append((label, public_text(attrs[key])))
    conventions = {}
    for key, pairs in found.items():
        values = list(dict.fromkeys(v for _, v in pairs))
        if len(values) == 1:
            text = values[0]
        elif labelled is not None:  # each value once, after the results that share it
            by_value: dict = {}
            for label, value in pairs:
                by_value.setdefault(value, []).append(str(label))
            text = "; ".join(f"{', '.join(labels)}: {value}" for value, labels in by_value.items())
        else:
            text = "; ".join(values)
        conventions[_CONVENTIONS[key]] = text
    return conventions


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


# ------------------------------------------------------- a lab's document ---

#: The parameters every template declares for its header (:func:`header`).
HEADER_PARAMETERS = ("title", "system", "lab", "data_description", "date")
_INTERNAL = re.compile(r"\s*\((?:see )?(?:METHODS\.md|seeds?[/ ]0\d\d)[^()]*\)|;?\s*(?:METHODS\.md section \d+"
                       r"(?:\.\d+)?|seeds?[/ ]0\d\d\S*(?: sections? [\d.-]+)?)", re.I)


def public_text(text) -> str:
    """A library string with the references to bioxr's own files taken out (for a reader who has none of them).

    Examples
    --------
    >>> from bioxr.narrative import public_text
    >>> public_text("subject bootstrap by sufficient statistics (METHODS.md section 7)")
    'subject bootstrap by sufficient statistics'
    """
    return _INTERNAL.sub("", str(text)).strip()


def report_date(value: str = "") -> str:
    """The report's date: ``value`` checked as an ISO date (YYYY-MM-DD), or today's date when empty.

    Examples
    --------
    >>> from bioxr.narrative import report_date
    >>> report_date("2026-03-01")
    '2026-03-01'
    >>> len(report_date(""))
    10
    """
    import datetime

    if not str(value).strip():
        return datetime.date.today().isoformat()
    try:
        return datetime.date.fromisoformat(str(value).strip()).isoformat()
    except ValueError:
        from .report import ParameterError

        raise ParameterError("date", f"must be an ISO date, YYYY-MM-DD, or empty for today; got {value!r}.") from None


def header(namespace: dict, *, data: str = "") -> str:
    """The top of a report, as Markdown: its title, then the system under test, laboratory, data and date.

    Reads the ``title``, ``system``, ``lab``, ``data_description`` and
    ``date`` parameters from ``namespace`` (a template's ``globals()``);
    an empty ``system`` or ``lab`` is left out, an empty
    ``data_description`` is replaced by ``data`` (what the template read),
    and an empty ``date`` is today's.

    Examples
    --------
    >>> from bioxr.narrative import header
    >>> print(header({"title": "Face matcher X", "system": "X 2.1", "lab": "", "data_description": "",
    ...               "date": "2026-03-01"}, data="the score file face.csv"))
    # Face matcher X
    <BLANKLINE>
    **System under test:** X 2.1<br>
    **Data:** the score file face.csv<br>
    **Date:** 2026-03-01
    """
    title = str(namespace.get("title") or "Report").strip()
    rows = [("System under test", namespace.get("system", "")), ("Laboratory", namespace.get("lab", "")),
            ("Data", namespace.get("data_description", "") or data),
            ("Date", report_date(namespace.get("date", "")))]
    # the user's words are escaped; the data phrase and the date are written by bioxr
    lines = [f"**{label}:** {value if label == 'Date' or (label == 'Data' and not namespace.get('data_description')) else escape(value)}"
             for label, value in rows if str(value).strip()]
    return f"# {escape(title)}\n\n" + "<br>\n".join(lines)


def has_cofactor(obj, coord: str, dim: str) -> bool:
    """Whether ``obj`` has the cofactor ``coord`` along its probe dimension ``dim``, with two values or more.

    A breakdown by a cofactor is shown only when this holds, so a score
    file without it gets no empty section.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import has_cofactor
    >>> has_cofactor(bioxr.simulate.photohead(n_subjects=2, n_collections=48, seed=0), "weather", "collection")
    True
    >>> has_cofactor(bioxr.simulate.gaussian(n_subjects=3, seed=0), "weather", "collection")
    False
    """
    if coord not in obj.coords or dim not in (probe_dims(obj) + tuple(getattr(obj, "dims", ()))):
        return False
    return len(set(obj[coord].values.ravel().tolist())) > 1


def attempts_sentence(icc: xr.Dataset, *, level: float = 0.95) -> str:
    """What the attempts per subject say about the FNMR interval (from :func:`bioxr.correlation.fnmr_interval`).

    One attempt per subject: the attempts are independent by design and no
    correlation is estimated. Several: the intra-class correlation, the
    effective number of attempts and the beta-binomial interval; where no
    attempt (or every one) is an error the correlation cannot be estimated,
    and the sentence says so.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import attempts_sentence
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=1, seed=0)
    >>> attempts_sentence(bioxr.correlation.fnmr_interval(cube, 3.0)).startswith("One attempt per subject")
    True
    """
    n, subjects = int(icc.attempts), int(icc.n_individuals)
    lo, hi = (float(v) for v in icc.fnmr_interval.values)
    interval = f"the {level:.0%} beta-binomial interval of FNMR at this threshold is {lo:.2%} to {hi:.2%}"
    if float(icc.m0) <= 1:
        return (f"One attempt per subject ({_count(n, 'mated attempt')} of {_count(subjects, 'subject')}): attempts "
                f"are independent by design, and {interval}")
    rho = float(icc.rho)
    if rho != rho:  # NaN: no variation to estimate it from
        return (f"The {n:,} mated attempts come from {_count(subjects, 'subject')}; with "
                f"{'no' if float(icc.fnmr) == 0 else 'every'} attempt rejected their intra-class correlation cannot "
                f"be estimated, so the cautious value 1 is used (worth {float(icc.n_eff):,.0f} independent attempts), "
                f"and {interval}")
    return (f"Attempts of one subject are correlated ({n:,} mated attempts of {_count(subjects, 'subject')}, "
            f"intra-class correlation {rho:.3f}, so they are worth about {float(icc.n_eff):,.0f} independent ones): "
            f"{interval}, which also carries the uncertainty of that correlation")


def open_set_plan(outcome, impostors: str = "auto", *, fpir_target: float = 0.01) -> tuple[str | None, str]:
    """Which impostor searches an open-set section uses, and a sentence saying why (or why there is none).

    ``impostors="auto"`` uses the probes whose subject is not enrolled when
    there are at least ``1 / fpir_target`` of them (enough to resolve the
    FPIR target), and otherwise shows no open-set rates; ``"non-enrolled"``
    and ``"all"`` are used as asked (``"all"``: every probe also searches
    with its own mates left out).

    Returns
    -------
    (str or None, str)
        The ``impostors`` argument of :func:`bioxr.identification.open_set_curve`
        (None: no open-set section) and a Markdown sentence.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import open_set_plan
    >>> cube = bioxr.simulate.gaussian(n_subjects=20, seed=0)
    >>> open_set_plan(bioxr.outcomes.outcomes(cube))[0] is None
    True
    """
    enrolled = outcome.mated_rank_min.notnull()
    natural = ~enrolled & (outcome.nonmated_best.notnull() if "search" not in outcome.dims else True)
    n_natural, n_probes = int(natural.sum()), int(outcome.mated_rank_min.size)
    needed = int(np.ceil(1 / fpir_target - 1e-9))
    if impostors == "all":
        return "all", ""
    if impostors == "non-enrolled" or (impostors == "auto" and n_natural >= needed):
        if n_natural == 0:
            return None, ("**Every probe's subject is enrolled**, so there are no impostor searches for "
                          "open-set rates (`impostors=\"non-enrolled\"`); `impostors=\"all\"` would let every probe "
                          "also search with its own mates left out.")
        return "non-enrolled", ""
    who = ("Every probe's subject is enrolled" if n_natural == 0 else
           f"Only {_count(n_natural, 'probe')} of {n_probes:,} {'has' if n_natural == 1 else 'have'} no enrolled "
           "mate")
    return None, (f"{who}, so these data are a closed-set test: the false positive identification rate (FPIR) "
                  f"needs searches whose subject is not enrolled, at least {needed:,} to resolve an FPIR of "
                  f"{fpir_target:.2%}. The report gives no open-set rates; `impostors=\"all\"` would let every probe "
                  "also search with its own mates left out.")


def replicates_note(n_replicates: int) -> str:
    """A sentence when the bootstrap has fewer than 1,000 replicates (its bounds read off few tail values), else ``""``.

    Examples
    --------
    >>> from bioxr.narrative import replicates_note
    >>> replicates_note(1000)
    ''
    """
    if n_replicates >= 1000:
        return ""
    return (f" These intervals use {n_replicates:,} bootstrap replicates, fewer than the 1,000 that stable bounds "
            "need (they are read off the replicates' tails): read them as rough.")


def markdown_table(frame, *, index: bool = True) -> str:
    """A DataFrame as a Markdown table with one header row (the index, named, as the first column), cells escaped.

    Examples
    --------
    >>> import pandas as pd
    >>> from bioxr.narrative import markdown_table
    >>> print(markdown_table(pd.DataFrame({"EER": ["1.0%"]}, index=pd.Index(["fog"], name="weather"))))
    | weather | EER |
    |---|---|
    | fog | 1.0% |
    """
    frame = frame.reset_index() if index else frame
    head = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(escape(v) for v in row) + " |")
    return "\n".join(lines)


def format_rank(rank) -> str:
    """A (fractional, Annex F) rank for people: ``16`` for 16.0, ``2.5`` for a tie spread over two places."""
    rank = float(rank)
    return "" if rank != rank else f"{rank:,.0f}" if rank == int(rank) else f"{rank:,.1f}"


def hardest_probes(outcome: xr.Dataset, n: int = 8):
    """The probes whose mate ranks worst (then lowest mated score), as a table with readable headers, and a sentence.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import hardest_probes
    >>> out = bioxr.outcomes.outcomes(bioxr.simulate.gaussian(n_subjects=20, seed=1))
    >>> text, table = hardest_probes(out, n=3)
    >>> list(table.columns)
    ['mated score', 'best non-mated score', "mate's rank"]
    """
    import pandas as pd

    frame = outcome.to_dataframe().reset_index().dropna(subset=["mated_rank"])
    hardest = frame.sort_values(["mated_rank", "mated_score"], ascending=[False, True]).head(n)
    names = {"subject": "subject", "weather": "weather", "hour": "hour", "mated_score": "mated score",
             "nonmated_best": "best non-mated score", "mated_rank": "mate's rank"}
    table = pd.DataFrame({label: hardest[c].to_numpy() for c, label in names.items() if c in hardest})
    for column in ("mated score", "best non-mated score"):
        if column in table:
            table[column] = [f"{v:.4g}" for v in table[column]]
    table["mate's rank"] = [format_rank(r) for r in table["mate's rank"]]
    if "hour" in table:
        table["hour"] = [f"{int(h):02d}:00" if h == h else "" for h in table["hour"]]
    table = table.set_index("subject")
    first = float((frame.mated_rank_max <= 1).mean())
    text = (f"Of {len(frame):,} probes with a mated score, {first:.1%} rank their mate first without a tie. "
            f"The hardest is subject {escape(hardest['subject'].iloc[0])}, whose mate ranks "
            f"{format_rank(hardest['mated_rank'].iloc[0])}.")
    return text, table


def plan_table(plan) -> str:
    """The next-test plan of :func:`bioxr.certification.plan_next` as a Markdown table, numbers formatted for people.

    Examples
    --------
    >>> import pandas as pd
    >>> from bioxr.narrative import plan_table
    >>> frame = pd.DataFrame([{"rate": "FMR", "claim": 0.001, "level": 0.8, "subjects": 1234, "comparisons": 56789,
    ...                        "allowed errors": 3, "pass probability": 0.81234, "note": ""}])
    >>> print(plan_table(frame).splitlines()[2])
    | FMR ≤ 0.001 | 80% | 1,234 | 56,789 | 3 | 81% |  |
    """
    import pandas as pd

    def count(v):
        return "" if pd.isna(v) else f"{int(v):,}"

    shown = pd.DataFrame({
        "claim": [f"{r} ≤ {c:g}" for r, c in zip(plan["rate"], plan["claim"])],
        "confidence": ["" if pd.isna(v) else f"{v:.0%}" for v in plan["level"]],
        "subjects": [count(v) for v in plan["subjects"]],
        "comparisons": [count(v) for v in plan["comparisons"]],
        "allowed errors": [count(v) for v in plan["allowed errors"]],
        "pass probability": ["" if pd.isna(v) else f"{v:.0%}" for v in plan["pass probability"]],
        "note": list(plan["note"]),
    })
    return markdown_table(shown, index=False)


def enrolled_subjects(cube) -> int | None:
    """How many reference subjects the probes were compared with (a reference never compared is not enrolled).

    None for candidate lists, which name no gallery.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import enrolled_subjects
    >>> cube = bioxr.simulate.gaussian(n_subjects=5, seed=0)
    >>> enrolled_subjects(cube), enrolled_subjects(cube.where(cube.reference_subject != "s0000"))
    (5, 4)
    """
    if "reference_subject" not in cube.coords:
        return None
    if isinstance(cube, xr.Dataset) and "comparison" in cube.dims:
        scored = cube["score"].notnull()
        return len(set(cube.reference_subject.values[scored.values].tolist()))
    if not isinstance(cube, xr.DataArray):
        return len(set(cube.reference_subject.values.ravel().tolist()))
    compared = cube.notnull().any([d for d in cube.dims if d != "reference"])
    return len(set(cube.reference_subject.values[compared.values].tolist()))


_ATTEMPTS = re.compile(r"\b(\d+) attempt\(s\) per subject(, intra-class correlation -?[\d.]+ as estimated here)?")


def plan_narrative(plan) -> str:
    """The next-test plan's narrative (``plan.attrs["narrative"]``), true for one attempt per subject too.

    With one attempt per subject no intra-class correlation is estimated:
    the attempts are independent by design, and the sentence says so.

    Examples
    --------
    >>> import pandas as pd
    >>> from bioxr.narrative import plan_narrative
    >>> plan = pd.DataFrame()
    >>> plan.attrs["narrative"] = "(FNMR: true rate 0.1 as observed, 1 attempt(s) per subject, intra-class correlation 0.00 as estimated here)"
    >>> plan_narrative(plan)
    '(FNMR: true rate 0.1 as observed, one attempt per subject, independent by design)'
    """
    def said(m):
        n = int(m.group(1))
        if n == 1:
            return "one attempt per subject, independent by design"
        return f"{n:,} attempts per subject" + (m.group(2) or "")

    return _ATTEMPTS.sub(said, str(plan.attrs.get("narrative", "")))


def computed_rows(table: xr.Dataset) -> xr.Dataset:
    """The rows of a summary table (:func:`bioxr.summary`) that hold a number, for data that give only a few.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.narrative import computed_rows
    >>> cube = bioxr.simulate.photohead(n_subjects=3, n_collections=4, seed=0)
    >>> table = bioxr.summary(bioxr.outcomes.outcomes(cube, ranks_only=True), intervals=False)
    >>> [str(m) for m in computed_rows(table).metric.values]
    ['rank-1 identification rate']
    """
    return table.isel(row=np.flatnonzero(np.isfinite(table["value"].values)))
