"""The certification workflow: a claim's verdict in words, its table, and the next test planned from it.

:func:`bioxr.claims.claim_test` says whether claims "FMR <= r" and
"FNMR <= r" pass; :func:`bioxr.planning.plan_test` sizes a test. This
module joins them the way a test lab reports: :func:`verdict` (one
sentence), :func:`to_markdown` (the claims as a table) and
:func:`plan_next` (the next test's size, from the rates, attempts and
correlation observed in this one).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import correlation as _correlation
from .planning import plan_test

__all__ = ["verdict", "to_markdown", "plan_next"]

#: Plan at the observed rate only when it is at most this share of the claim; closer, the rule-of-three plan.
CLOSE = 0.8


def _label(rate: str) -> str:
    return rate.upper()


def verdict(claim) -> str:
    """One sentence: which claims pass at which confidence, with their bounds.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=100, n_samples=3, mated_mean=5.0, seed=0)
    >>> claim = bioxr.claim_test(cube, fmr=0.01, fnmr=0.2, n_replicates=1000)
    >>> print(bioxr.certification.verdict(claim))  # doctest: +ELLIPSIS
    At 80% confidence, the claim FMR ≤ 0.01 **fails** (upper bound 0.0105...) and the claim FNMR ≤ 0.2 **passes** ...
    """
    level = float(claim["level"])
    parts = []
    for k, rate in enumerate(claim["rate"].values):
        ok = bool(claim["passes"].values[k])
        parts.append(f"the claim {_label(str(rate))} ≤ {float(claim['claim'].values[k]):g} "
                     f"**{'passes' if ok else 'fails'}** (upper bound {float(claim['bound'].values[k]):.3g}, "
                     f"{int(claim['errors'].values[k]):,} errors in {int(claim['trials'].values[k]):,} comparisons "
                     f"from {int(claim['units'].values[k]):,} subjects)")
    flags = []
    for k, rate in enumerate(claim["rate"].values):
        if bool(claim["rule_of_30"].values[k]):
            flags.append(f"the {_label(str(rate))} rests on fewer than 30 errors (rule of 30)")
        if bool(claim["beyond_resolution"].values[k]):
            flags.append(f"the {_label(str(rate))} claim is below what this test can show even with zero errors")
    text = f"At {level:.0%} confidence, " + " and ".join(parts) + "."
    if flags:
        text += " Note: " + "; ".join(flags) + "."
    return text


def to_markdown(claim) -> str:
    """The claims as a Markdown table: claim, observed, errors, trials, subjects, bound, verdict, margin."""
    lines = ["| claim | observed | errors | trials | subjects | upper bound | bound | verdict | margin |",
             "|---|---|---|---|---|---|---|---|---|"]
    for k, rate in enumerate(claim["rate"].values):
        get = lambda name: claim[name].values[k]  # noqa: E731
        lines.append(
            f"| {_label(str(rate))} ≤ {float(get('claim')):g} | {float(get('observed')):.3g} | {int(get('errors')):,} "
            f"| {int(get('trials')):,} | {int(get('units')):,} | {float(get('bound')):.3g} | {get('bound_method')} "
            f"| {'pass' if bool(get('passes')) else 'fail'} | {float(get('margin')):+.3g} |")
    return "\n".join(lines) + "\n"


def plan_next(obj, claim, *, levels=(0.8, 0.9, 0.95), stricter: float = 2.0, power: float = 0.8,
              n_simulations: int = 2000, seed=0) -> pd.DataFrame:
    """The next test's size for each claim (and a ``stricter`` one), at several confidence levels.

    The plan assumes the true rates are the ones observed in ``claim`` and
    that attempts correlate as they do in ``obj`` (the intra-class
    correlation of the FNMR decisions at the claim's threshold), with the
    same attempts per subject; non-mated comparisons are formed as here
    (every probe against every other subject's references) and assumed
    independent across subject pairs (the FMR's crossed correlation is not
    estimated). A claim whose observed rate is already at or above it
    cannot be supported by a larger test: its row says so. Where the
    observed rate is within 20% of the claim (as the FMR is at an
    operating point chosen to meet the claim), planning at it would ask
    for a test of unbounded size; the row then gives the smallest test
    that can show the claim with zero errors (the rule of three), and says
    so.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        The scores ``claim`` was computed on.
    claim : xarray.Dataset
        A :func:`bioxr.claims.claim_test` result.
    levels : sequence of float, keyword-only
    stricter : float, keyword-only
        Also plan for each claim divided by this (0 or 1: not).
    power : float, keyword-only
        The probability with which the next test should pass.
    n_simulations, seed : keyword-only
        For :func:`bioxr.planning.plan_test`'s Monte Carlo check.

    Returns
    -------
    pandas.DataFrame
        One row per rate, claim and level: ``subjects``, ``comparisons``,
        ``allowed errors``, ``pass probability``; ``attrs["narrative"]``
        says what was assumed.
    """
    threshold = float(claim["threshold"])
    rows, notes = [], []
    for k, rate in enumerate(claim["rate"].values):
        rate = str(rate)
        r0, observed = float(claim["claim"].values[k]), float(claim["observed"].values[k])
        units, trials = float(claim["units"].values[k]), float(claim["trials"].values[k])
        if rate == "fnmr":
            counts = _correlation.attempt_counts(obj, threshold)
            icc = float(_correlation.icc(counts)["rho"])
            icc = min(max(icc, 0.0), 0.95) if np.isfinite(icc) else 0.0
            m = max(1, int(round(trials / units)))
        else:
            icc, m = 0.0, max(1, int(round(trials / max(units * (units - 1), 1))))
        claims = [r0] + ([r0 / stricter] if stricter and stricter > 1 else [])
        for r in claims:
            if observed >= r:
                rows.append({"rate": _label(rate), "claim": r, "level": np.nan, "subjects": np.nan,
                             "comparisons": np.nan, "allowed errors": np.nan, "pass probability": np.nan,
                             "note": f"observed {observed:.3g} is not below the claim: no test size supports it"})
                continue
            at_observed = 0 < observed <= CLOSE * r
            kw = {rate: r, "level": list(levels), "icc": icc, "samples_per_subject": m, "power": power,
                  "n_simulations": n_simulations, "seed": seed, "expected_rate": observed if at_observed else None}
            plan = plan_test(**kw)
            why = ("" if at_observed else "zero errors observed: the rule-of-three plan" if observed == 0 else
                   f"observed {observed:.3g} is within {1 - CLOSE:.0%} of the claim (an operating point chosen to "
                   "meet it): the smallest test that can show the claim, with zero errors (rule of three)")
            for j, level in enumerate(plan["level"].values):
                sel = {d: i for d, i in ((f"{rate}_claim", 0), ("level", j)) if d in plan[f"{rate}_subjects"].dims}
                rows.append({"rate": _label(rate), "claim": r, "level": float(level),
                             "subjects": int(plan[f"{rate}_subjects"].isel(sel)),
                             "comparisons": int(plan[f"{rate}_comparisons"].isel(sel)),
                             "allowed errors": int(plan[f"{rate}_allowed_errors"].isel(sel)),
                             "pass probability": float(plan[f"{rate}_pass_probability"].isel(sel))
                             if at_observed else np.nan, "note": why})
        attempts = ("one attempt per subject, independent by design" if m == 1 and rate == "fnmr" else
                    f"{m:,} attempt{'s' if m != 1 else ''} per subject"
                    + (f", intra-class correlation {icc:.2f} as estimated here" if rate == "fnmr" else ""))
        notes.append(f"{_label(rate)}: true rate {observed:.3g} as observed, {attempts}"
                     + ("" if rate == "fnmr" else ", non-mated comparisons of different subject pairs independent"))
    frame = pd.DataFrame(rows)
    for name in ("subjects", "comparisons", "allowed errors"):
        frame[name] = frame[name].astype("Int64")  # counts, blank where there is no plan
    frame.attrs["narrative"] = (f"Where the table gives a pass probability, the next test of that size passes the "
                                f"claim with probability at least {power:.0%} if the matcher behaves as in this "
                                "test (" + "; ".join(notes) + "), planned by bioxr.plan_test for the bound "
                                "claim_test uses by default. Rows without one are not plans at the observed rate: "
                                "they give the smallest test that could show the claim at all, with zero errors, "
                                "or say why no size can; at a true rate near the claim, a test of that size "
                                "usually fails.")
    return frame
