"""The headline numbers of an evaluation in one table, with intervals, counts, units and conventions.

:func:`summary` computes every number a report or a paper quotes first:
the EER in each convention, FNMR at the standard FMR targets (1e-2 to
1e-6, where the test can resolve them), FMR at FNMR targets, the rank-1
identification rate, FNIR at FPIR targets (when some searches have no
mate enrolled), and the failure rates FTE and FTA. Each row holds the
value, its interval and how it was made, the error count, the trials and
the independent units (subjects) behind it, the threshold, and flags: a
rate resting on fewer than 30 errors (Doddington's rule of 30), a target
below the test's resolution. A number that cannot be computed is a row
with its reason, never a missing row.

The table is an :class:`xarray.Dataset` over ``row``; :func:`to_frame`,
:func:`to_csv`, :func:`to_markdown` and :func:`to_latex` export it, and
:func:`read_csv` reads a CSV export back.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from . import bootstrap as _bootstrap
from . import failures as _failures
from . import identification as _identification
from . import verification as _verification
from ._core import as_data
from ._core.checks import check_level, check_replicates, check_targets
from .bootstrap.curves import eer_intervals
from .cube import SYSTEM

__all__ = ["FMR_TARGETS", "COLUMNS", "summary", "describe", "to_frame", "to_csv", "read_csv", "to_markdown", "to_latex"]

#: The standard FMR targets of the FNMR rows.
FMR_TARGETS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
EER_METHODS = ("rocch", "interpolated", "nearest", "fvc2000")
RULE_OF_30 = 30
RULE_OF_30_TEXT = ("(< 30): fewer than 30 errors leave a rate uncertain by more than about 30% at 90% confidence "
                   "(Doddington's rule of 30)")
#: The table's variables, in order.
COLUMNS = ("metric", "at", "convention", "value", "lower", "upper", "bound_kind", "interval_method", "errors",
           "trials", "units", "threshold", "flags")
_CLOSED = ("not computed: every search has its mate enrolled (closed-set data), so there are no non-enrolled "
           "searches to measure FPIR")
_TEXT = ("metric", "at", "convention", "bound_kind", "interval_method", "flags")
#: How each operating point is read off the curve (the ``convention`` column of the FNMR and FMR rows).
FNMR_AT_FMR = "most lenient threshold with FMR <= target"
FMR_AT_FNMR = "strictest threshold with FNMR <= target"
#: The rank-tie rules of bioxr.conventions.RANK_TIES, in words (the ``convention`` column of identification rows).
RANK_RULES = {"bioxr": "Annex F.2 tie shares", "bob": "bob.measure: worst tied rank"}


def _rank_rule(attrs) -> str:
    name = attrs.get("convention", "bioxr")
    return RANK_RULES.get(name, name)


def _row(metric, at, convention="", value=np.nan, bounds=(np.nan, np.nan), bound_kind="", interval_method="",
         errors=np.nan, trials=np.nan, units=np.nan, threshold=np.nan, flags=()) -> dict:
    return {"metric": metric, "at": at, "convention": convention, "value": float(value), "lower": float(bounds[0]),
            "upper": float(bounds[1]), "bound_kind": bound_kind, "interval_method": interval_method,
            "errors": float(errors), "trials": float(trials), "units": float(units), "threshold": float(threshold),
            "flags": "; ".join(f for f in flags if f)}


def _units(obj) -> tuple[int, int]:
    """Subjects (probe or reference side) and subjects on both sides (those with mated comparisons), from the labels."""
    if "subject" not in obj.coords or "reference_subject" not in obj.coords:
        return np.nan, np.nan
    p = set(pd.unique(np.asarray(obj["subject"].values).ravel()))
    r = set(pd.unique(np.asarray(obj["reference_subject"].values).ravel()))
    return len(p | r), len(p & r)


def _thirty(errors, what: str) -> str:
    if np.isfinite(errors) and errors < RULE_OF_30:
        n = int(round(errors))
        if n == 1:
            for many, one in (("matches", "match"), ("searches", "search"), ("positives", "positive")):
                what = what.replace(many, one, 1)
        return f"{n} {what} (< {RULE_OF_30})"
    return ""


def _fmt_target(t: float) -> str:
    return f"{t:.0e}".replace("e-0", "e-") if t < 0.01 else f"{t:g}"


def _eer_rows(obj, methods, level, n_replicates, seed, failure_policy, intervals):
    rows = []
    ints = (eer_intervals(obj, methods=methods, n_replicates=n_replicates, level=level, seed=seed,
                          failure_policy=failure_policy) if intervals else [None] * len(methods))
    for method, ci in zip(methods, ints):
        e = _verification.eer(obj, method=method, failure_policy=failure_policy)
        n = int(e.n_mated) + int(e.n_nonmated)
        rows.append(_row("EER", "FMR = FNMR", method, e.eer, ci.eer_interval.values if ci is not None else
                         (np.nan, np.nan), "two-sided" if ci is not None else "",
                         "subject bootstrap" if ci is not None else "",
                         errors=int(e.false_matches) + int(e.false_nonmatches), trials=n,
                         units=ci.attrs["n_units"] if ci is not None else _units(obj)[0], threshold=e.threshold,
                         flags=[_thirty(int(e.false_nonmatches), "false non-matches at the EER threshold")]))
    return rows


def _fnmr_rows(obj, targets, level, n_replicates, seed, failure_policy, intervals):
    op = _verification.fnmr_at_fmr(obj, targets, failure_policy=failure_policy)
    n_nm = int(op.n_nonmated)
    ci = (_bootstrap.fnmr_at_fmr_interval(obj, targets, n_replicates=n_replicates, level=level, seed=seed,
                                          failure_policy=failure_policy) if intervals else None)
    rows = []
    for i, t in enumerate(np.atleast_1d(targets)):
        at = f"FMR = {_fmt_target(t)}"
        if t * n_nm < 1:
            rows.append(_row("FNMR", at, FNMR_AT_FMR, trials=int(op.n_mated), flags=[
                f"not resolvable: {n_nm:,} non-mated comparisons resolve FMR down to 1/N = {1 / n_nm:.1e}; "
                f"this target needs at least {int(np.ceil(1 / t)):,}"]))
            continue
        sel = op.isel(fmr_target=i)
        b = ci.fnmr_interval.values[i] if ci is not None else (np.nan, np.nan)
        fm = int(sel.false_matches)
        rows.append(_row("FNMR", at, FNMR_AT_FMR, sel.fnmr, b, ci.fnmr_bound_kind.values[i] if ci is not None else "",
                         "subject bootstrap" if ci is not None else "", errors=int(sel.false_nonmatches),
                         trials=int(op.n_mated), units=ci.attrs["mated_units"] if ci is not None else _units(obj)[1],
                         threshold=sel.threshold,
                         flags=[_thirty(int(sel.false_nonmatches), "false non-matches"),
                                _thirty(fm, "false matches set this threshold")]))
    return rows


def _fmr_rows(obj, targets, level, n_replicates, seed, failure_policy, intervals):
    op = _verification.fmr_at_fnmr(obj, targets, failure_policy=failure_policy)
    thresholds = np.atleast_1d(op.threshold.values).astype(float)
    ci = None
    finite = np.isfinite(thresholds)
    if intervals and finite.any():
        unique, inverse = np.unique(thresholds[finite], return_inverse=True)
        band = _bootstrap.bootstrap_curve(obj, thresholds=unique, n_replicates=n_replicates, level=level, seed=seed,
                                          failure_policy=failure_policy)
        at = np.cumsum(finite) - 1  # row i -> its place among the finite thresholds
        ci = (band.fmr_interval.values[inverse][at], band.fmr_bound_kind.values[inverse][at], band.attrs["n_units"])
    rows = []
    for i, t in enumerate(np.atleast_1d(targets)):
        if not finite[i]:
            rows.append(_row("FMR", f"FNMR = {_fmt_target(t)}", FMR_AT_FNMR, trials=int(op.n_nonmated), flags=[
                "not reachable: even accepting every score leaves FNMR above the target (failures count as false "
                "non-matches under this failure policy)"]))
            continue
        sel = op.isel(fnmr_target=i)
        fm = int(sel.false_matches)
        rows.append(_row("FMR", f"FNMR = {_fmt_target(t)}", FMR_AT_FNMR, sel.fmr,
                         ci[0][i] if ci else (np.nan, np.nan), ci[1][i] if ci else "",
                         "subject bootstrap (crossed-subject moments)" if ci else "", errors=fm,
                         trials=int(op.n_nonmated), units=ci[2] if ci else _units(obj)[0], threshold=sel.threshold,
                         flags=[_thirty(fm, "false matches")]))
    return rows


def _rank1_rows(obj, level, n_replicates, seed, intervals):
    try:
        res = (_bootstrap.cmc_interval(obj, max_rank=1, n_replicates=n_replicates, level=level, seed=seed)
               if intervals else _identification.cmc_curve(obj, max_rank=1))
    except (ValueError, TypeError) as err:
        return [_row("rank-1 identification rate", "rank 1", flags=[f"not computed: {err}"])]
    value = float(res.cmc.sel(rank=1))
    n = next((int(res[k]) for k in ("n_probes", "n_mated_probes") if k in res), np.nan)
    units = int(res["n_subjects"]) if "n_subjects" in res else _units(obj)[1]
    b = res.cmc_interval.sel(rank=1).values if intervals else (np.nan, np.nan)
    misses = (1 - value) * n if np.isfinite(n) else np.nan
    return [_row("rank-1 identification rate", "rank 1", _rank_rule(res.attrs), value, b,
                 str(res.cmc_bound_kind.sel(rank=1).values) if intervals and "cmc_bound_kind" in res else
                 ("two-sided" if intervals else ""), "subject bootstrap" if intervals else "", errors=misses,
                 trials=n, units=units, flags=[_thirty(misses, "searches missed at rank 1")])]


def _fnir_rows(obj, targets, level, n_replicates, seed, intervals, units):
    try:
        curve = _identification.open_set_curve(obj)
    except (ValueError, TypeError) as err:
        closed = "impostor searches" in str(err)
        return [_row("FNIR", f"FPIR = {_fmt_target(t)}", flags=[_CLOSED if closed else f"not computed: {err}"])
                for t in targets]
    n_imp = int(curve.n_impostor_probes)
    if n_imp == 0:
        return [_row("FNIR", f"FPIR = {_fmt_target(t)}", flags=[_CLOSED]) for t in targets]
    rows = []
    fpir, fnir, thr = curve.fpir.values, curve.fnir.values, curve.threshold.values
    for t in targets:
        at = f"FPIR = {_fmt_target(t)}"
        if t * n_imp < 1:
            rows.append(_row("FNIR", at, trials=int(curve.n_mated_probes), flags=[
                f"not resolvable: {n_imp:,} non-enrolled searches resolve FPIR down to {1 / n_imp:.1e}"]))
            continue
        ok = np.flatnonzero(fpir <= t)
        k = ok[np.argmin(fnir[ok])]  # the most lenient threshold with FPIR <= target
        b, kind = (np.nan, np.nan), ""
        if intervals:
            ci = _bootstrap.open_set_interval(obj, float(thr[k]), n_replicates=n_replicates, level=level, seed=seed)
            lo, hi = np.asarray(ci.dir_interval.values).reshape(-1)[-2:]
            b, kind = (1 - hi, 1 - lo), "two-sided"
        misses = fnir[k] * int(curve.n_mated_probes)
        rows.append(_row("FNIR", at, _rank_rule(curve.attrs), fnir[k], b, kind,
                         "subject bootstrap" if intervals else "", errors=misses, trials=int(curve.n_mated_probes),
                         units=units, threshold=thr[k], flags=[_thirty(misses, "missed searches"),
                                                  _thirty(float(curve.false_positives.values[k]),
                                                          "false positives set this threshold")]))
    return rows


def _failure_rows(obj, level):
    try:
        f = _failures.failure_rates(obj, level=level)
    except (ValueError, TypeError):
        why = "not computed: failure rates need the scores (a score cube or comparison list), not outcomes"
        return [_row("FTE", "enrolment", flags=[why]), _row("FTA", "acquisition", flags=[why])]
    side = {name: len(pd.unique(np.asarray(obj[name].values).ravel())) if name in obj.coords else np.nan
            for name in ("reference_subject", "subject")}
    rows = []
    for name, errors, trials in (("FTE", "n_failed_enrolments", "n_references"),
                                 ("FTA", "n_failed_acquisitions", "n_probes")):
        key = name.lower()
        rows.append(_row(name, "enrolment" if name == "FTE" else "acquisition", "ISO/IEC 19795-1", f[key],
                         f[f"{key}_interval"].values, str(f[f"{key}_bound_kind"].values),
                         f.attrs.get("method", ""), errors=int(f[errors]), trials=int(f[trials]),
                         units=side["reference_subject" if name == "FTE" else "subject"]))
    return rows


def summary(obj, *, fmr=FMR_TARGETS, fnmr=(0.01, 0.1), fpir=(0.01, 0.001), eer_methods=EER_METHODS,
            identification: bool = True, intervals: bool = True, level: float = 0.95, n_replicates: int = 1000,
            seed=0, failure_policy: str = "exclude") -> xr.Dataset:
    """Every headline number of a score cube or comparison list, with its interval, counts and convention.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list; with a ``system`` dimension,
        one table per system stacked, with a ``system`` column.
    fmr, fnmr, fpir : sequence of float, keyword-only
        Targets of the FNMR-at-FMR, FMR-at-FNMR and FNIR-at-FPIR rows.
        A target the test cannot resolve (fewer than ``1 / target``
        comparisons or searches) is a row flagged "not resolvable".
    eer_methods : sequence of str, keyword-only
        EER conventions, one row each (:func:`bioxr.verification.eer`).
    identification : bool, keyword-only
        Add the rank-1 identification rate and FNIR at FPIR.
    intervals : bool, keyword-only
        Subject-bootstrap intervals (one set of replicates for all EER
        conventions); False for the point values only (fast).
    level : float, keyword-only
    n_replicates : int, keyword-only
    seed : int, keyword-only
        Seeds every bootstrap: the same seed gives the same table.
    failure_policy : {"exclude", "nist", "iso"}, keyword-only

    Returns
    -------
    xarray.Dataset
        Over ``row``: ``metric``, ``at`` (the operating point),
        ``convention``, ``value``, ``lower``, ``upper``, ``bound_kind``,
        ``interval_method``, ``errors`` (the errors behind the rate; for
        an EER row the false matches plus false non-matches at the EER
        threshold, over all comparisons as ``trials``), ``trials``
        (comparisons, searches or attempts), ``units``
        (independent subjects), ``threshold`` and ``flags``; attrs
        ``level``, ``n_replicates``, ``seed``, ``failure_policy``,
        ``score_kind``, ``rule_of_30``, ``units``. On identification
        outcomes (candidate lists) the verification rows say why they
        are missing.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, seed=0)
    >>> table = bioxr.summary(cube, intervals=False)
    >>> table.metric.values[:4].tolist()
    ['EER', 'EER', 'EER', 'EER']
    >>> print(table.flags.values[6])  # FNMR at FMR 1e-4: 120 probes x 59 other subjects
    not resolvable: 7,080 non-mated comparisons resolve FMR down to 1/N = 1.4e-04; this target needs at least 10,000
    """
    outcomes = "search" in obj.dims or "mated_rank_min" in getattr(obj, "data_vars", {})
    if not outcomes:
        as_data(obj)
    kw = dict(fmr=fmr, fnmr=fnmr, fpir=fpir, eer_methods=eer_methods, identification=identification,
              intervals=intervals, level=level, n_replicates=n_replicates, seed=seed, failure_policy=failure_policy)
    if SYSTEM in obj.dims:  # one table per system, stacked, with a system column (the same seed for each)
        names = [str(v) for v in obj[SYSTEM].values] if SYSTEM in obj.coords else [str(i) for i in
                                                                                    range(obj.sizes[SYSTEM])]
        parts = [summary(obj.isel({SYSTEM: k}, drop=True), **kw) for k in range(obj.sizes[SYSTEM])]
        table = xr.concat(parts, dim="row", combine_attrs="override")
        table[SYSTEM] = ("row", np.repeat(names, [p.sizes["row"] for p in parts]).astype(str))
        return table[[SYSTEM, *COLUMNS]]
    level = check_level(level)
    if intervals:
        check_replicates(n_replicates, level=level)
    fmr_t = check_targets(fmr, "fmr", closed=False) if len(fmr) else np.empty(0)
    fnmr_t = check_targets(fnmr, "fnmr", closed=False) if len(fnmr) else np.empty(0)
    fpir_t = check_targets(fpir, "fpir", closed=False) if len(fpir) else np.empty(0)
    unknown = [m for m in eer_methods if m not in EER_METHODS]
    if unknown:
        raise ValueError(f"eer_methods={list(eer_methods)!r}: {unknown} are not EER methods; use any of {EER_METHODS}.")
    args = (level, n_replicates, seed, failure_policy, intervals)
    rows = []
    if outcomes:  # candidate lists or ranks
        why = ("not computed: these are identification outcomes (candidate lists or ranks), which hold no "
               "non-mated score distribution")
        rows += [_row("EER", "FMR = FNMR", m, flags=[why]) for m in eer_methods]
        rows += [_row("FNMR", f"FMR = {_fmt_target(t)}", flags=[why]) for t in fmr_t]
        rows += [_row("FMR", f"FNMR = {_fmt_target(t)}", flags=[why]) for t in fnmr_t]
    else:
        rows += _eer_rows(obj, tuple(eer_methods), *args) if len(eer_methods) else []
        if fmr_t.size:
            rows += _fnmr_rows(obj, fmr_t, *args)
        if fnmr_t.size:
            rows += _fmr_rows(obj, fnmr_t, *args)
    if identification:
        rows += _rank1_rows(obj, level, n_replicates, seed, intervals)
        if fpir_t.size:  # the mated searches' subjects are those of the rank-1 rate
            rows += _fnir_rows(obj, fpir_t, level, n_replicates, seed, intervals, rows[-1]["units"])
    rows += _failure_rows(obj, level)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    table = xr.Dataset({c: ("row", frame[c].to_numpy(dtype=object if c in _TEXT else float).astype(
        str if c in _TEXT else float)) for c in COLUMNS})
    table.attrs = {"level": level, "n_replicates": n_replicates if intervals else 0, "seed": str(seed),
                   "failure_policy": failure_policy, "score_kind": obj.attrs.get("score_kind", "similarity"),
                   "rule_of_30": RULE_OF_30_TEXT,
                   "units": "independent subjects behind each rate; trials are comparisons (verification), "
                            "searches (identification) or attempts (failures)"}
    return table


def describe(table: xr.Dataset) -> str:
    """Sentences on a summary table: what it holds, what could not be computed, what rests on few errors.

    Examples
    --------
    >>> import bioxr
    >>> table = bioxr.summary(bioxr.simulate.gaussian(n_subjects=60, seed=0), intervals=False)
    >>> print(bioxr.headline.describe(table).split(". ")[0])
    The table holds 11 of its 16 numbers, as point values (no intervals)
    """
    frame = to_frame(table)
    done = np.isfinite(frame["value"].to_numpy(dtype=float))
    out = [f"The table holds {int(done.sum())} of its {len(frame)} numbers"
           + (f", at {table.attrs['level']:.0%} confidence" if table.attrs.get("n_replicates") else
              ", as point values (no intervals)") + "."]
    unresolved = frame[frame["flags"].str.startswith("not resolvable")]
    if len(unresolved):
        out.append(f"{len(unresolved)} {'is' if len(unresolved) == 1 else 'are'} beyond what this test can resolve ("
                   + ", ".join(f"{m} at {a}" for m, a in zip(unresolved["metric"], unresolved["at"]))
                   + "): too few comparisons or searches for the target.")
    missing = frame[frame["flags"].str.startswith("not computed")]
    if len(missing):
        reasons = sorted(set(f.split(": ", 1)[1] for f in missing["flags"]))
        out.append(f"{len(missing)} could not be computed from these data: " + "; ".join(reasons) + ".")
    few = frame[frame["flags"].str.contains("(< 30)", regex=False) & done]
    if len(few):
        out.append(f"{len(few)} of the computed numbers rest on fewer than 30 errors (Doddington's rule of 30: "
                   "uncertain by more than about 30%): " + ", ".join(f"the {c} EER" if m == "EER" else f"{m} at {a}"
                                                                for m, a, c in zip(few["metric"], few["at"],
                                                                                   few["convention"])) + ".")
    eer = frame[(frame["metric"] == "EER") & done]
    if len(eer) > 1:
        lo, hi = eer["value"].idxmin(), eer["value"].idxmax()
        out.append(f"The EER conventions give {eer['value'][lo]:.2%} ({eer['convention'][lo]}) to "
                   f"{eer['value'][hi]:.2%} ({eer['convention'][hi]}).")
    return " ".join(out)


def _columns(table) -> list:
    return ([SYSTEM] if SYSTEM in table else []) + list(COLUMNS)


def to_frame(table: xr.Dataset) -> pd.DataFrame:
    """The table as a pandas DataFrame (one row per number), its attrs in ``frame.attrs``."""
    frame = pd.DataFrame({c: table[c].values for c in _columns(table)})
    frame.attrs = dict(table.attrs)
    return frame


def to_csv(table: xr.Dataset, path) -> None:
    """Write the table as CSV, numbers at full precision (``read_csv`` reads it back exactly)."""
    to_frame(table).to_csv(path, index=False, float_format="%.17g")


def read_csv(path) -> pd.DataFrame:
    """Read a table written by :func:`to_csv`."""
    frame = pd.read_csv(path, keep_default_na=False, na_values={c: [""] for c in COLUMNS if c not in _TEXT},
                        dtype={SYSTEM: str})
    return frame


def _pretty(frame: pd.DataFrame, digits: int):
    def rate(x):
        return "" if not np.isfinite(x) else f"{100 * x:.{digits}g}%"

    out = pd.DataFrame({
        **({SYSTEM: frame[SYSTEM]} if SYSTEM in frame else {}),
        "metric": frame["metric"], "at": frame["at"], "convention": frame["convention"],
        "value": [rate(v) for v in frame["value"]],
        "interval": [f"{rate(lo)} to {rate(hi)}" if np.isfinite(lo) else "" for lo, hi in
                     zip(frame["lower"], frame["upper"])],
        "errors": [f"{e:,.0f}" if np.isfinite(e) else "" for e in frame["errors"]],
        "trials": [f"{t:,.0f}" if np.isfinite(t) else "" for t in frame["trials"]],
        "subjects": [f"{u:,.0f}" if np.isfinite(u) else "" for u in frame["units"]],
        "flags": frame["flags"]})
    return out


def to_markdown(table: xr.Dataset, *, digits: int = 3) -> str:
    """The table as a Markdown table (rates in percent to ``digits`` significant digits)."""
    pretty = _pretty(to_frame(table), digits)
    lines = ["| " + " | ".join(pretty.columns) + " |", "|" + "---|" * len(pretty.columns)]
    for _, r in pretty.iterrows():
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in r) + " |")
    if pretty["flags"].str.contains("(< 30)", regex=False).any():
        lines += ["", RULE_OF_30_TEXT + "."]
    return "\n".join(lines) + "\n"


def to_latex(table: xr.Dataset, *, digits: int = 3, caption: str | None = None) -> str:
    """The table as a LaTeX ``tabular`` (booktabs rules), rates in percent to ``digits`` significant digits."""
    pretty = _pretty(to_frame(table), digits)

    def tex(s: str) -> str:
        for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                     ("<", r"$<$"), (">", r"$>$"), ("~", r"\~{}"), ("^", r"\^{}")):
            s = s.replace(a, b)
        return s

    level = table.attrs.get("level", 0.95)
    head = ["metric", "at", "convention", "value", f"{level:.0%} interval", "errors", "trials", "subjects", "flags"]
    spec = "lllrlrrrp{5cm}"
    if SYSTEM in pretty:
        head, spec = [SYSTEM, *head], "l" + spec
    lines = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(tex(h) for h in head) + r" \\",
             r"\midrule"]
    for _, r in pretty.iterrows():
        lines.append(" & ".join(tex(str(v)) for v in r) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    body = "\n".join(lines)
    if caption:
        body = "\\begin{table}\n\\centering\n" + body + f"\n\\caption{{{tex(caption)}}}\n\\end{{table}}"
    return body + "\n"
