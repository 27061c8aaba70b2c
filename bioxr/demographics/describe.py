"""Sentences about demographic differentials, from the results themselves (for reports and notebooks).

Each function takes the Datasets of :mod:`bioxr.demographics` and returns
Markdown: what was tested (H0), what came out, which groups are flagged,
and the warnings the data call for (small groups, few errors). Nothing here
computes a statistic.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._null import SMALL_GROUP

#: Why a small group's test result is fragile (measured; see :mod:`bioxr.demographics`).
SMALL_GROUP_TEXT = ("a small group whose attempts are strongly correlated can hide its spread (few of its people err, "
                    "and those err a lot); measured with 20 to 40 such people, the test of equal FNMR rejected a "
                    "true H0 up to four times too often. Read a p-value near the level as inconclusive, or merge "
                    "small groups.")

__all__ = ["REFERENCES", "references", "describe_rates", "describe_cross", "describe_fairness", "parse_group_map",
           "summary_table", "describe_simulation"]

#: Works a demographic report cites beyond :data:`bioxr.references.WORKS`: (a word that cites it, citation).
OWN_WORKS = (
    ("ISO/IEC 19795-10", "ISO/IEC 19795-10:2024, *Information technology — Biometric performance testing and "
     "reporting — Part 10: Quantifying biometric system performance variation across demographic groups*. Geneva: "
     "ISO/IEC, 2024."),
    ("Grother", "P. Grother, M. Ngan and K. Hanaoka, *Face Recognition Vendor Test (FRVT) Part 3: Demographic "
     "Effects*, NISTIR 8280, National Institute of Standards and Technology, 2019."),
    ("de Freitas Pereira", "T. de Freitas Pereira and S. Marcel, Fairness in biometrics: a figure of merit to assess "
     "biometric verification systems, *IEEE Transactions on Biometrics, Behavior, and Identity Science*, 2022."),
    ("Howard", "J. J. Howard, E. J. Laird, R. E. Rubin, Y. B. Sirotin, J. L. Tipton and A. R. Vemury, *Evaluating "
     "Proposed Fairness Models for Face Recognition Algorithms*, 2022."),
)
#: Works of :data:`bioxr.references.WORKS` a demographic report may cite, by key.
SHARED_WORKS = ("schuckers-2022", "doddington")


def _shared():
    from .. import references as _refs

    return _refs


REFERENCES = tuple(c for _, c in OWN_WORKS)
_RULE_OF_30 = 30


def references(*texts: str) -> str:
    """The works cited in ``texts`` (all of them when none is given), as a numbered Markdown list.

    A work is listed when one of its marks (an author's name, the
    standard's number) appears in the texts, so a report lists what it
    cites and nothing else.

    Examples
    --------
    >>> from bioxr.demographics import references
    >>> print(references("Following ISO/IEC 19795-10 ..."))
    1. ISO/IEC 19795-10:2024, *Information technology — Biometric performance testing and reporting — Part 10: Quantifying biometric system performance variation across demographic groups*. Geneva: ISO/IEC, 2024.
    >>> len(references().splitlines())
    6
    """
    refs = _shared()
    works = [OWN_WORKS[0]]
    for key in SHARED_WORKS:
        work = refs.WORKS[key]
        works.append((getattr(work, "mentions", (work.short,)), work.citation))
    works[2:2] = OWN_WORKS[1:]  # the standard, Schuckers et al., the other works, Doddington last
    body = " ".join(texts)
    cited = [c for marks, c in works
             if not texts or any(m in body for m in ((marks,) if isinstance(marks, str) else marks))]
    return "\n".join(f"{k}. {c}" for k, c in enumerate(cited, start=1))


def parse_group_map(text: str, *, name: str = "value", number=float) -> dict | float:
    """A per-group setting written ``A:200,B:50`` as a dict (a plain number stays a number).

    A report parameter cannot hold a dict; this reads one from text.

    Parameters
    ----------
    text : str
        ``group:value`` pairs separated by commas, or one number.
    name : str, keyword-only
        The parameter's name, for error messages.
    number : callable, keyword-only
        Converts each value (``float`` or ``int``).

    Examples
    --------
    >>> from bioxr.demographics import parse_group_map
    >>> parse_group_map("A:200, B:50", name="groups", number=int)
    {'A': 200, 'B': 50}
    >>> parse_group_map("0.05", name="fnmr")
    0.05
    """
    text = str(text).strip()
    if not text:
        raise ValueError(f"{name} is empty; write group:value pairs, e.g. A:0.03,B:0.06, or one number.")
    if ":" not in text:
        try:
            return number(text)
        except ValueError:
            raise ValueError(f"{name}={text!r} is neither a number nor group:value pairs (e.g. A:0.03,B:0.06).") from None
    out = {}
    for item in text.split(","):
        key, colon, value = (part.strip() for part in item.partition(":"))
        if not colon or not key or not value:
            raise ValueError(f"{name}: entry {item.strip()!r} is not group:value (e.g. A:0.03).")
        if key in out:
            raise ValueError(f"{name} gives group {key!r} twice.")
        try:
            out[key] = number(value)
        except ValueError:
            raise ValueError(f"{name}: the value of group {key!r}, {value!r}, is not a number.") from None
    return out


def _pct(rate: float) -> str:
    if not np.isfinite(rate):
        return "undefined"
    if rate == 0:
        return "0%"
    return np.format_float_positional(rate * 100, precision=3, fractional=False, trim="-") + "%"


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _threshold(ds: xr.Dataset) -> str:
    t = float(ds["threshold"])
    target = ds.attrs.get("fmr_target", np.nan)
    if target is not None and np.isfinite(target):
        return (f"All groups are compared at one global threshold, {t:.4g}: the most lenient at which the FMR "
                f"over all non-mated comparisons is at most {_pct(float(target))}.")
    return f"All groups are compared at one global threshold, {t:.4g}."


def describe_rates(rates: xr.Dataset, margin: xr.Dataset | None = None, test: xr.Dataset | None = None) -> str:
    """The per-group rates, the test of equal FNMR, the groups outside the margin, and warnings.

    Parameters
    ----------
    rates : xarray.Dataset
        From :func:`bioxr.demographics.group_rates`.
    margin : xarray.Dataset, optional
        From :func:`bioxr.demographics.margin_of_error` (same threshold).
    test : xarray.Dataset, optional
        From :func:`bioxr.demographics.differential_test` (same threshold).

    Returns
    -------
    str
        Markdown paragraphs.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import demographics as dm
    >>> cube = bioxr.simulate.demographic({"A": 60, "B": 60}, n_samples=3, seed=0)
    >>> text = dm.describe_rates(dm.group_rates(cube, threshold=0.0, n_replicates=200))
    >>> "one global threshold, 0" in text
    True
    """
    gdim = rates.attrs.get("group", "group")
    level = float(rates.attrs.get("level", 0.95))
    groups = [str(g) for g in rates[gdim].values.tolist()]
    parts = [_threshold(rates) + f" Intervals are {level:.0%} subject-bootstrap intervals: subjects, with all "
             "their comparisons, are the units resampled, because a subject's comparisons are correlated."]
    lines = []
    for g in groups:
        r = rates.sel({gdim: g})
        fl, fh = (float(v) for v in r["fnmr_interval"].values)
        ml, mh = (float(v) for v in r["fmr_interval"].values)
        lines.append(
            f"- **{g}** ({int(r['n_subjects']):,} subjects): FNMR {_pct(float(r['fnmr']))} ({_pct(fl)} to {_pct(fh)}; "
            f"{int(r['false_nonmatches']):,} of {int(r['n_mated']):,} mated comparisons), FMR within the group "
            f"{_pct(float(r['fmr']))} ({_pct(ml)} to {_pct(mh)}; {int(r['false_matches']):,} of "
            f"{int(r['n_nonmated']):,} non-mated comparisons)")
    parts.append("\n".join(lines))
    parts.append(
        f"Overall, FNMR is {_pct(float(rates['overall_fnmr']))} and FMR {_pct(float(rates['overall_fmr']))} over all "
        "non-mated comparisons, across groups too; a group's own FMR counts only impostors of its own group, who "
        "usually look more alike, so it can lie above the overall FMR.")
    if test is not None:
        p = float(test["p_value"])
        alpha = 1 - float(margin.attrs.get("level", 0.95)) if margin is not None else 0.05
        verdict = (f"below {alpha:g}: the FNMRs of the groups are detectably different" if p < alpha else
                   f"not below {alpha:g}: the data do not show the groups' FNMRs to differ (which is not a proof "
                   "that they are equal)")
        parts.append(f"**Test of equal FNMR.** {test.attrs['h0']}. The {test.attrs['method']}, gives a statistic of "
                     f"{float(test['statistic']):.3g} and a p-value of {p:.3g} ({int(test['n_replicates']):,} "
                     f"replicates), {verdict}.")
    if margin is not None:
        mdim = margin.attrs.get("group", "group")
        outside = [str(g) for g in margin[mdim].values.tolist() if bool(margin["outside"].sel({mdim: g}))]
        lvl = float(margin.attrs.get("level", 0.95))
        per_group = "margin" in margin and mdim in margin["margin"].dims
        how = ("each group has its own margin, its standard error times one critical value shared by all groups"
               if per_group else "one margin serves all groups")
        if outside:
            side = [f"{g} ({'above' if float(margin['difference'].sel({mdim: g})) > 0 else 'below'})" for g in outside]
            flagged = f"Outside their margins: {_join(side)}; these groups' FNMRs are detectably different from the overall FNMR."
        else:
            flagged = "No group lies outside its margin: no group's FNMR is detectably different from the overall FNMR."
        parts.append(f"**Margin of error.** Under the same H0, every group's FNMR lies within the overall FNMR plus "
                     f"or minus its margin with probability {lvl:.0%} ({how}). {flagged}")
    warn = []
    small = [g for g in groups if int(rates["n_subjects"].sel({gdim: g})) < SMALL_GROUP]
    if small:
        warn.append(f"{_join(small)} {'has' if len(small) == 1 else 'have'} fewer than {SMALL_GROUP} subjects: "
                    + SMALL_GROUP_TEXT)
    few = [g for g in groups if int(rates["false_nonmatches"].sel({gdim: g})) < _RULE_OF_30]
    if few:
        warn.append(f"Fewer than {_RULE_OF_30} false non-matches in {_join(few)}: by "
                    f"{_shared().cite('doddington')} the relative error of such a rate exceeds about ±30% at 90% "
                    "confidence; read its interval, not its point.")
    zero = [g for g in groups if int(rates["false_matches"].sel({gdim: g})) == 0]
    if zero:
        warn.append(f"No false match within {_join(zero)}: its FMR interval is a one-sided upper bound.")
    if warn:
        parts.append("**Warnings.** " + " ".join(warn))
    return "\n\n".join(parts)


def describe_cross(cross: xr.Dataset) -> str:
    """The cross-group FMR matrix in words: the highest cells, on and off the diagonal.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import demographics as dm
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 20}, n_samples=2, fmr={"A": 0.001, "B": 0.01}, seed=0)
    >>> "highest within-group FMR is B's" in dm.describe_cross(dm.cross_group_fmr(cube, threshold=0.0))
    True
    """
    gs = [str(g) for g in cross["probe_group"].values.tolist()]
    f = np.asarray(cross["fmr"].values, dtype=float)
    overall = float(cross["overall_fmr"])
    diag = np.diag(f)
    k = int(np.nanargmax(diag))
    ratio = lambda v: f"{v / overall:.2g} times the overall {_pct(overall)}" if overall > 0 else "above an overall 0%"
    parts = [f"At this threshold the highest within-group FMR is {gs[k]}'s, {_pct(diag[k])} ({ratio(diag[k])})."]
    if len(gs) > 1:
        lo = int(np.nanargmin(diag))
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = diag[k] / diag[lo] if diag[lo] > 0 else np.inf
        parts.append(f"The lowest is {gs[lo]}'s, {_pct(diag[lo])}"
                     + (f"; the highest is {spread:.2g} times the lowest." if np.isfinite(spread) else
                        ", with no false match."))
        off = f.copy()
        np.fill_diagonal(off, np.nan)
        if np.isfinite(off).any():
            i, j = np.unravel_index(int(np.nanargmax(off)), off.shape)
            parts.append(f"Across groups the highest is probes of {gs[i]} against references of {gs[j]}, "
                         f"{_pct(off[i, j])}; impostors of another group are "
                         + ("usually less alike than those of one's own." if np.nanmax(off) < np.nanmin(diag) else
                            "here sometimes as alike as those of a group's own."))
    parts.append("The cells carry no intervals: each is a count of false matches among the comparisons shown; few "
                 "false matches make a cell's rate uncertain.")
    return " ".join(parts)


def describe_fairness(fair: xr.Dataset) -> str:
    """FDR and GARBE with their intervals in words, and what they can and cannot say.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import demographics as dm
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 30}, n_samples=3, seed=0)
    >>> "GARBE" in dm.describe_fairness(dm.fairness_intervals(cube, threshold=0.0, n_replicates=200))
    True
    """
    level = float(fair.attrs.get("level", 0.95))
    alpha = float(fair.attrs.get("alpha", 0.5))
    fl, fh = (float(v) for v in fair["fdr_interval"].values)
    gl, gh = (float(v) for v in fair["garbe_interval"].values)
    return (
        f"With the FMR weighted {alpha:g} and the FNMR {1 - alpha:g}, the fairness discrepancy rate is "
        f"**FDR = {float(fair['fdr']):.3f}** ({level:.0%} interval {fl:.3f} to {fh:.3f}; 1 is perfectly fair; the "
        f"largest gaps between two groups are {_pct(float(fair['fmr_gap']))} in FMR and "
        f"{_pct(float(fair['fnmr_gap']))} in FNMR) and **GARBE = {float(fair['garbe']):.3f}** ({gl:.3f} to "
        f"{gh:.3f}; 0 is perfectly equitable; Gini of the group FMRs {float(fair['fmr_gini']):.3f}, of the FNMRs "
        f"{float(fair['fnmr_gini']):.3f}). FDR measures gaps in absolute rates, so it stays near 1 whenever the "
        "rates are small, however unequal; GARBE measures relative inequality. Both are spreads of noisy rates: "
        "with groups of these sizes even equal true rates would give an FDR below 1 and a GARBE above 0, and "
        "intervals that exclude 1 and 0, so neither is a test; the test of equal FNMR and the margins above are.")


def summary_table(rates: xr.Dataset, margin: xr.Dataset | None = None):
    """The headline numbers per group, with headers for people: a pandas DataFrame.

    Columns: subjects, FNMR and its interval, the errors behind it, FMR
    within the group and its interval, and (with ``margin``) whether the
    group's FNMR lies outside the margin of error; a last row "all groups"
    gives the overall rates.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import demographics as dm
    >>> cube = bioxr.simulate.demographic({"A": 40, "B": 20}, n_samples=3, seed=0)
    >>> table = dm.summary_table(dm.group_rates(cube, threshold=0.0, n_replicates=200))
    >>> table.index.tolist(), table.columns[0]
    (['A', 'B', 'all groups'], 'subjects')
    """
    import pandas as pd

    gdim = rates.attrs.get("group", "group")
    level = float(rates.attrs.get("level", 0.95))
    rows = {}
    for g in rates[gdim].values.tolist():
        r = rates.sel({gdim: g})
        row = {
            "subjects": f"{int(r['n_subjects']):,}",
            "FNMR": _pct(float(r["fnmr"])),
            f"FNMR {level:.0%} interval": "{} to {}".format(*(_pct(float(v)) for v in r["fnmr_interval"].values)),
            "false non-matches": f"{int(r['false_nonmatches']):,} of {int(r['n_mated']):,}",
            "FMR (within group)": _pct(float(r["fmr"])),
            f"FMR {level:.0%} interval": "{} to {}".format(*(_pct(float(v)) for v in r["fmr_interval"].values)),
            "false matches": f"{int(r['false_matches']):,} of {int(r['n_nonmated']):,}",
        }
        if margin is not None:
            mdim = margin.attrs.get("group", "group")
            out = bool(margin["outside"].sel({mdim: g}))
            row["FNMR outside the margin of error"] = (
                ("yes, above" if float(margin["difference"].sel({mdim: g})) > 0 else "yes, below") if out else "no")
        rows[str(g)] = row
    total = {
        "subjects": f"{int(rates['n_subjects'].sum()):,}",
        "FNMR": _pct(float(rates["overall_fnmr"])),
        f"FNMR {level:.0%} interval": "{} to {}".format(*(_pct(float(v)) for v in rates["overall_fnmr_interval"].values)),
        "false non-matches": f"{int(rates['overall_false_nonmatches']):,} of {int(rates['overall_n_mated']):,}",
        "FMR (within group)": _pct(float(rates["overall_fmr"])) + " (all pairs)",
        f"FMR {level:.0%} interval": "{} to {}".format(*(_pct(float(v)) for v in rates["overall_fmr_interval"].values)),
        "false matches": f"{int(rates['overall_false_matches']):,} of {int(rates['overall_n_nonmated']):,}",
    }
    if margin is not None:
        total["FNMR outside the margin of error"] = ""
    rows["all groups"] = total
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = str(gdim)
    return table


def describe_simulation(cube) -> str:
    """The simulated study of :func:`bioxr.simulate.demographic` in words, from its attrs.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import describe_simulation
    >>> cube = bioxr.simulate.demographic({"A": 20, "B": 10}, n_samples=2, fnmr={"A": 0.02, "B": 0.1}, seed=0)
    >>> describe_simulation(cube).startswith("a simulated study of 2 groups (A: 20 subjects, B: 10 subjects)")
    True
    """
    a = cube.attrs
    if "fnmr" not in a or "fmr" not in a:
        return "simulated scores"
    groups = list(a["fnmr"])
    sizes = {str(g): 0 for g in groups}
    for g in np.asarray(cube["reference_group"].values).astype(str):
        sizes[g] += 1
    if a.get("groups_set_aside"):  # set aside before the analysis (bioxr.demographics.set_aside_small_groups)
        sizes.update(zip(a["groups_set_aside"].split(", "), map(int, a["group_sizes_set_aside"].split(", "))))
    n_samples = int(cube.sizes["probe"] // max(cube.sizes["reference"], 1))
    each = lambda d: _join([f"{_pct(float(d[g]))} ({g})" for g in groups])
    rho = sorted(set(float(v) for v in a["rho"].values()))
    rho_text = f"{rho[0]:g}" if len(rho) == 1 else _join([f"{float(a['rho'][g]):g} ({g})" for g in groups])
    return (f"a simulated study of {len(groups)} groups ({', '.join(f'{g}: {sizes[g]:,} subjects' for g in groups)}), "
            f"each subject with one reference and {n_samples} probe attempts. At the simulator's threshold "
            f"{float(a['threshold']):g} its true FNMRs are {each(a['fnmr'])}, its true within-group FMRs "
            f"{each(a['fmr'])}, across groups {float(a['cross_fmr']):g} times the geometric mean of the two groups' "
            f"FMRs, and the intra-class correlation of a subject's decisions is {rho_text}; the report sets its own "
            "threshold from the FMR target")
