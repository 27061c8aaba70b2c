"""The analysis step of a design study: the ratio's interval, an equivalence verdict, power, and the F test.

Under a design's hypothesis the trial rates of a run are independent with
variance ``V`` (they average thousands of outcomes, so they are close to
normal). The pooled empirical variance then is ``V chi2(d1) / d1`` and the
estimator's mean over all trials ``theta V chi2(d2) / d2``, ``theta`` the
estimator's bias ratio (1 when the design is right), ``d1`` the empirical
variance's degrees of freedom corrected for the runs' overlap and ``d2``
Satterthwaite's for the mean estimator. So ``theta / ratio`` is
``F(d1, d2)`` whatever ``theta`` is, and

- the interval of the ratio at ``level`` is ``ratio x [F_a, F_(1-a)]``,
  ``a = (1 - level) / 2``: exact under the model;
- the verdict is an equivalence test against the band ``[1 / (1 +
  tolerance), 1 + tolerance]``: *compatible* when the whole interval lies
  inside the band (two one-sided tests, each at ``a``: a design whose true
  ratio sits on the band's edge is called compatible at most ``a`` of the
  time), *incompatible* when it lies wholly outside, *inconclusive*
  otherwise (it straddles an edge, or is wider than the band: too few
  trials);
- the power, the chance that a correct design (``theta = 1``) is called
  compatible, is ``P(F_(1-a) / b <= X <= F_a b)`` for ``X ~ F(d1, d2)``,
  ``b = 1 + tolerance``, and the trials needed for :data:`TARGET_POWER`
  follow from the same distribution with the degrees of freedom a larger
  study would have;
- the paper's test of agreement (H0: ``theta = 1``) refers ``F = 1 / ratio``
  to ``F(d1, d2)``, two-sided.
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr
from scipy import special

from .._core import check_level
from .estimators import ESTIMATORS

#: The verdicts, in the order of the band: inside it, outside it, neither.
VERDICTS = ("compatible", "incompatible", "inconclusive")
#: The chance of "compatible" for a correct design that ``trials_needed`` aims at.
TARGET_POWER = 0.8
#: p-values below this are printed as "< 1e-16" (see :func:`format_pvalue`).
P_FLOOR = 1e-16

_REFERENCE = "R. J. Micheals and T. E. Boult (2001), Improving Variance Estimation in Biometric Systems"


# --------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------


def _p_text(pvalue) -> str:
    """``p = 0.03`` or ``p < 1e-16``: never ``p = < ...``."""
    text = format_pvalue(pvalue)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def format_pvalue(p, *, digits: int = 2) -> str:
    """A p-value as text: ``digits`` significant digits, and ``"< 1e-16"`` below 1e-16, never 0.

    Below about 1e-16 a tail probability is no longer resolved in double
    precision (it underflows to 0 in places), and the approximations behind
    the design tests (normal trial rates, effective degrees of freedom) are
    far coarser than that: a printed 0 or 9e-143 would claim a precision the
    test does not have.

    Parameters
    ----------
    p : float
        A p-value in [0, 1], or NaN (printed ``"n/a"``).
    digits : int, keyword-only
        Significant digits (default 2).

    Returns
    -------
    str

    See Also
    --------
    design_test : its ``statement`` prints p-values this way.

    Examples
    --------
    >>> from bioxr.design import format_pvalue
    >>> format_pvalue(0.04435), format_pvalue(5.5e-15), format_pvalue(1.0)
    ('0.044', '5.5e-15', '1')
    >>> format_pvalue(0.0), format_pvalue(9.0e-143)
    ('< 1e-16', '< 1e-16')
    """
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits < 1:
        raise ValueError(f"digits={digits!r}; give a whole number of significant digits, at least 1.")
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise ValueError(f"p={p!r} is not a number; give a p-value in [0, 1].") from None
    if np.isnan(value):
        return "n/a"
    if not 0 <= value <= 1:
        raise ValueError(f"p={p!r} is not a p-value: p-values lie in [0, 1].")
    if value < P_FLOOR:
        return "< 1e-16"
    return f"{value:.{int(digits)}g}"


def _num(r: float) -> str:
    """Three significant digits, trailing zeros kept (1.00, 0.0850)."""
    return f"{r:#.3g}" if np.isfinite(r) else ("∞" if r > 0 else "n/a")


def _percent(share: float) -> str:
    return f"{share * 100:.3g}%"


def band(tolerance: float) -> tuple[float, float]:
    """The equivalence band of a ratio: ``[1 / (1 + tolerance), 1 + tolerance]``.

    Symmetric on the log scale (an estimator twice too large is as wrong as
    one half too small).

    Examples
    --------
    >>> from bioxr.design import band
    >>> [round(b, 4) for b in band(0.05)]
    [0.9524, 1.05]
    """
    tol = _check_tolerance(tolerance)
    return 1.0 / (1.0 + tol), 1.0 + tol


def _check_tolerance(tolerance) -> float:
    """The half-width of the equivalence band: a positive, finite share."""
    try:
        value = float(tolerance)
    except (TypeError, ValueError):
        value = float("nan")
    if isinstance(tolerance, bool) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"tolerance={tolerance!r}; give the half-width of the equivalence band as a positive share, "
                         "e.g. 0.05 for the band [1/1.05, 1.05] around a ratio of 1.")
    return value


# --------------------------------------------------------------------------
# Degrees of freedom
# --------------------------------------------------------------------------


def _overlap(attrs, n_runs: int) -> float:
    """The relative variance the runs share: ``(1 - 1/R) (C / T) / ((C - 1) U)`` (0 without the sizes)."""
    c, t = attrs.get("n_collections"), attrs.get("n_times")
    u = attrs.get("independent_draws", 1)
    if not c or not t or c < 2:
        return 0.0
    return (1.0 - 1.0 / n_runs) * (c / t) / ((c - 1) * u)


def _empirical_df(attrs, n_runs: int, n_trials: int) -> float:
    """Effective degrees of freedom of the empirical variance pooled over runs.

    Each run contributes ``K - 1``; but runs draw from the same data, so they
    share information. A run's empirical variance carries the sample variance
    of the values it drew (``C - 1`` degrees of freedom per independent
    draw); two runs share a fraction ``C / T`` of them. Runs that draw the
    same collections for every series (no randomization, ``U = 1``
    independent draws) therefore add a common relative variance
    ``(1 - 1/R) (C / T) 2 / (C - 1)``; with randomization every series draws
    on its own (``U`` = number of series) and the shared part is negligible.
    """
    return 1.0 / (1.0 / (n_runs * (n_trials - 1)) + _overlap(attrs, n_runs))


def _estimator_df(v: np.ndarray) -> float:
    """Satterthwaite's degrees of freedom of the mean of per-trial estimates: ``2 Vbar^2 / Var(Vbar)``."""
    v = np.asarray(v, dtype=float).ravel()
    var_vbar = v.var(ddof=1) / v.size
    return float(2 * v.mean() ** 2 / var_vbar) if var_vbar > 0 else float("inf")


# The F(d1, d2) distribution (chi-square(d1) / d1 when d2 is infinite), through scipy.special's ufuncs: the
# same functions scipy.stats.f calls, without its per-call overhead (trials_needed evaluates the power often).


def _ppf(q, df1: float, df2: float):
    q = np.asarray(q, dtype=float)
    if np.isfinite(df2):
        return special.fdtri(df1, df2, q)
    return special.chdtri(df1, 1.0 - q) / df1


def _cdf(x, df1: float, df2: float):
    if np.isfinite(df2):
        return special.fdtr(df1, df2, x)
    return special.chdtr(df1, np.multiply(x, df1))


def _sf(x, df1: float, df2: float):
    if np.isfinite(df2):
        return special.fdtrc(df1, df2, x)
    return special.chdtrc(df1, np.multiply(x, df1))


# --------------------------------------------------------------------------
# Interval, verdict, power, trials needed
# --------------------------------------------------------------------------


def _ratio_interval(ratio: float, df1: float, df2: float, level: float) -> tuple[float, float]:
    """The interval of a variance ratio at ``level``: ``ratio x`` the F(df1, df2) quantiles."""
    a = (1 - level) / 2
    lo, hi = _ppf([a, 1 - a], df1, df2)
    return float(ratio * lo), float(ratio * hi)


def _verdict(lower: float, upper: float, tolerance: float) -> str:
    """Equivalence: ``"compatible"`` inside the band, ``"incompatible"`` wholly outside, else ``"inconclusive"``."""
    low, high = 1.0 / (1.0 + tolerance), 1.0 + tolerance
    if not (np.isfinite(lower) and np.isfinite(upper)):
        return "inconclusive"
    if low <= lower and upper <= high:
        return "compatible"
    if upper < low or lower > high:
        return "incompatible"
    return "inconclusive"


def _power(df1: float, df2: float, level: float, tolerance: float, theta: float = 1.0) -> float:
    """The chance that the verdict is ``"compatible"`` when the true ratio is ``theta``.

    ``theta / ratio ~ F(df1, df2)``: the interval ``ratio [q_lo, q_hi]`` lies
    in ``[1/b, b]`` exactly when ``theta q_hi / b <= X <= theta q_lo b``.
    """
    a = (1 - level) / 2
    q_lo, q_hi = _ppf([a, 1 - a], df1, df2)
    b = 1.0 + tolerance
    lo, hi = theta * q_hi / b, theta * q_lo * b
    if not hi > lo:
        return 0.0
    if lo >= 1:  # both in the upper tail: a difference of survival functions keeps its digits
        return float(max(0.0, _sf(lo, df1, df2) - _sf(hi, df1, df2)))
    return float(max(0.0, _cdf(hi, df1, df2) - _cdf(lo, df1, df2)))


def _trials_needed(attrs, n_runs: int, n_trials: int, df2: float, level: float, tolerance: float,
                  target: float = TARGET_POWER) -> float:
    """Trials (the runs kept, more trials a run) for a ``target`` chance of "compatible" when the design is right.

    A study of ``R`` runs of ``K'`` trials has ``d1 = 1 / (1 / (R (K' - 1)) +
    overlap)`` (the overlap of this study's runs) and ``d2`` growing with the
    trials (``df2 K' / K``). Returns ``R K'`` for the smallest ``K'`` whose
    :func:`_power` reaches ``target``, or NaN when no number of trials can
    (the runs' overlap caps ``d1``: more collections or randomization are
    needed, not more trials).
    """
    shared = _overlap(attrs, n_runs)

    def reach(k: float) -> float:
        d1 = 1.0 / (1.0 / (n_runs * (k - 1)) + shared)
        d2 = df2 * k / n_trials if np.isfinite(df2) else df2
        return _power(d1, d2, level, tolerance)

    if shared > 0 and _power(1.0 / shared, float("inf"), level, tolerance) < target:
        return float("nan")
    lo, hi = 2, 2
    while reach(hi) < target:
        lo, hi = hi, hi * 2
        if hi > 10**12:
            return float("nan")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if reach(mid) < target else (lo, mid)
    return float(n_runs * (hi if reach(lo) < target else lo))


def _statement(verdict_: str, lower: float, upper: float, *, level: float, tolerance: float, power_: float,
              needed: float, n_trials: int, cap: float | None = None, randomized: bool = False) -> str:
    """The verdict as a sentence: why, and for an inconclusive one what would settle it."""
    interval = f"the {level:.0%} interval of the variance ratio, {_num(lower)}–{_num(upper)},"
    tol = f"±{_percent(tolerance)} band"
    low, high = 1.0 / (1.0 + tolerance), 1.0 + tolerance
    if not (np.isfinite(lower) and np.isfinite(upper)):
        return "inconclusive: the trial rates do not vary (or an estimator is undefined): no variance to compare"
    if verdict_ == "compatible":
        return f"compatible: {interval} lies inside the {tol} ({_num(low)}–{_num(high)})"
    if verdict_ == "incompatible":
        side = ("above", "overestimates") if lower > high else ("below", "underestimates")
        return f"incompatible: {interval} lies {side[0]} the {tol} (the estimator {side[1]} the variance)"
    if np.isfinite(needed):
        more = (f"about {needed:,.0f} trials would be needed for a correct design to be called compatible "
                f"{TARGET_POWER:.0%} of the time; "
                + (f"at the {n_trials:,} here the interval is always wider than the band" if power_ < 0.005 else
                   f"with the {n_trials:,} here it would be {power_:.0%} of the time"))
    else:
        more = ("more trials from these data cannot narrow it enough: the runs share their collections, which caps "
                + (f"the empirical variance at about {cap:,.0f} degrees of freedom; " if cap else "its precision; ")
                + ("collect more collections" if randomized else "randomize over time or collect more collections"))
    if upper / lower > high / low:
        return f"inconclusive: too few trials ({interval} is wider than the {tol}; {more})"
    edge = high if upper > high else low
    text = f"inconclusive: {interval} straddles the edge {_num(edge)} of the {tol}"
    return text + (f"; {more}" if power_ < TARGET_POWER else "")


def _assess(ratio: float, df1: float, df2: float, attrs, n_runs: int, n_trials: int, level: float,
           tolerance: float) -> dict:
    """Interval, verdict, power, trials needed and the sentence for one estimator's ratio."""
    lower, upper = _ratio_interval(ratio, df1, df2, level) if np.isfinite(ratio) else (np.nan, np.nan)
    v = _verdict(lower, upper, tolerance)
    pw = _power(df1, df2, level, tolerance)
    needed = _trials_needed(attrs, n_runs, n_trials, df2, level, tolerance)
    shared = _overlap(attrs, n_runs)
    text = _statement(v, lower, upper, level=level, tolerance=tolerance, power_=pw, needed=needed,
                     n_trials=n_runs * n_trials, cap=1.0 / shared if shared > 0 else None,
                     randomized=attrs.get("independent_draws", 1) > 1)
    return {"lower": lower, "upper": upper, "verdict": v, "power": pw, "trials_needed": needed, "statement": text}


VERDICT_RULE = ("equivalence: compatible when the whole level interval of the ratio (ratio x F(df_empirical, "
                "df_estimator) quantiles) lies inside [1/(1+tolerance), 1+tolerance], i.e. two one-sided tests each "
                "at (1-level)/2; incompatible when it lies wholly outside; inconclusive otherwise")


# --------------------------------------------------------------------------
# The formal test of the last iteration
# --------------------------------------------------------------------------


def design_test(study: xr.Dataset) -> xr.Dataset:
    """The last iteration's verdict: an equivalence test, the power, and the F test of each estimator.

    For the last iteration of the methodology only (the paper's advice: a
    formal test earlier turns exploration into premature conclusions). The
    paper compares the empirical variance of the trial rates with the mean
    point estimator and rejects a design whose estimator disagrees; here:

    - **the F test of agreement** (the paper's formal test, H0: the
      estimator is unbiased). Under the design's hypothesis the trial rates
      of a run are independent with variance ``V``, so ``(K - 1) S^2 / V`` is
      about chi-square with ``K - 1`` degrees of freedom (``K`` trials; trial
      rates average thousands of outcomes, so they are close to normal).
      Pooled over ``R`` runs the empirical variance would have ``R (K - 1)``
      degrees of freedom if runs were independent; they overlap (a run draws
      ``C`` of ``T`` collections), so ``df_empirical = 1 / (1 / (R (K-1)) +
      (1 - 1/R) (C/T) / ((C - 1) U))`` with ``U = 1`` when all series share
      the run's draw (no randomization) and ``U`` = the number of series
      when each draws its own (``randomize``), where the overlap term
      vanishes. The estimator's mean over all ``R K`` trials estimates ``V``
      too, with Satterthwaite's degrees of freedom ``2 Vbar^2 /
      Var(Vbar)``. ``F = empirical / Vbar`` is referred to
      ``F(df_empirical, df_estimator)``, two-sided. A large p-value is no
      evidence *for* the design when the study is small;
    - **the equivalence verdict**: the ratio ``Vbar / empirical`` has the
      interval ``ratio x [F_a, F_(1-a)]`` (``a = (1 - level) / 2``, the same
      F distribution); ``compatible`` when it lies inside the band ``[1 /
      (1 + tolerance), 1 + tolerance]`` (two one-sided tests, each at
      ``a``), ``incompatible`` when wholly outside, else ``inconclusive``;
    - **the power**: the chance that a correct design is called compatible
      at this size, and the trials that would give it
      :data:`TARGET_POWER`.

    Parameters
    ----------
    study : xarray.Dataset
        A result of :func:`design_study`; its ``level`` and ``tolerance``
        (the half-width of the equivalence band, 5% by default) are the
        test's.

    Returns
    -------
    xarray.Dataset
        Over ``estimator``:

        - ``statistic`` (F), ``df_empirical``, ``df_estimator``, ``pvalue``
          (two-sided; it can underflow to 0: print it with
          :func:`format_pvalue`) and ``ratio`` (``1 / F``);
        - ``ratio_interval`` (estimator, bound) at ``level``;
        - ``verdict`` (``"compatible"``, ``"incompatible"`` or
          ``"inconclusive"``), ``compatible`` (bool), ``equivalence_pvalue``
          (the larger of the two one-sided p-values: compatible exactly when
          it is at most ``(1 - level) / 2``);
        - ``power`` (chance of "compatible" for a correct design at this
          size), ``trials_needed`` (trials, the runs kept, for an 80% chance;
          NaN when the runs' overlap makes it unreachable);
        - ``statement``: the verdict and the F test in a sentence, p-values
          printed by :func:`format_pvalue`.

        attrs: the study's, then method, hypothesis, alternative,
        equivalence (the rule), level, tolerance and band.

    See Also
    --------
    design_study, format_pvalue

    Notes
    -----
    The overlap correction is a first-order approximation, checked by
    simulation in the test suite (nominal size of the F test with and
    without randomization; the equivalence test's size at the band's edge
    and its power). Use the test, as the paper says, only at the last
    iteration, on a design that the exploratory ratios already support.

    References
    ----------
    seeds/000 section 3.3; METHODS.md section 3. Schuirmann (1987), the two
    one-sided tests procedure for equivalence.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bioxr import design
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.3, 0.9, 60)  # fixed groups, no time effect: stratified holds
    >>> success = xr.DataArray(rng.random((60, 400)) < p[:, None], dims=("subject", "collection"))
    >>> study = design.design_study(success, n_collections=200, n_runs=20, m=4, seed=1)
    >>> test = design.design_test(study)
    >>> bool(test.pvalue.sel(estimator="st") > 0.01)
    True
    >>> round(float(test.df_empirical.sel(estimator="st")))  # 980 if runs did not overlap
    293
    >>> test.verdict.sel(estimator="st").item()  # 293 df cannot resolve a ±5% band
    'inconclusive'
    >>> print(test.statement.sel(estimator="st").item()[:70])
    inconclusive: too few trials (the 95% interval of the variance ratio,
    """
    needed = ["empirical_variance", *(f"v_{name}" for name in ESTIMATORS)]
    if not isinstance(study, xr.Dataset) or any(n not in study.data_vars for n in needed):
        raise ValueError("expected the Dataset returned by bioxr.design.design_study.")
    level = check_level(study.attrs.get("level", 0.95))
    tolerance = _check_tolerance(study.attrs.get("tolerance", 0.05))
    n_runs, n_trials = study.sizes["run"], study.sizes["trial"]
    df1 = _empirical_df(study.attrs, n_runs, n_trials)
    pooled = float(study["empirical_variance"].mean())
    b = 1.0 + tolerance
    rows = []
    for name in ESTIMATORS:
        v = np.asarray(study[f"v_{name}"].values, dtype=float)
        vbar = float(v.mean())
        df2 = _estimator_df(v)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = pooled / vbar
            ratio = vbar / pooled
        if np.isfinite(f):
            pvalue = min(1.0, 2 * min(_cdf(f, df1, df2), _sf(f, df1, df2)))
            # H0 theta >= b: small ratios are evidence against it; H0 theta <= 1/b: large ones
            p_up, p_low = _sf(b * f, df1, df2), _cdf(f / b, df1, df2)
            p_eq = float(max(p_up, p_low))
        else:
            pvalue = p_eq = float("nan")
        r = _assess(ratio, df1, df2, study.attrs, n_runs, n_trials, level, tolerance)
        text = (f"{r['statement']}; F test of agreement: F = {_num(f)} on {df1:,.0f} and "
                f"{_df_text(df2)} degrees of freedom, {_p_text(pvalue)} (two-sided)")
        rows.append({"statistic": f, "df_estimator": df2, "pvalue": pvalue, "ratio": ratio, "lower": r["lower"],
                     "upper": r["upper"], "verdict": r["verdict"], "equivalence_pvalue": p_eq, "power": r["power"],
                     "trials_needed": r["trials_needed"], "statement": text})
    col = {k: [row[k] for row in rows] for k in rows[0]}
    est = "estimator"
    out = xr.Dataset(
        {
            "statistic": (est, np.array(col["statistic"], float)),
            "df_empirical": (est, np.full(len(ESTIMATORS), float(df1))),
            "df_estimator": (est, np.array(col["df_estimator"], float)),
            "pvalue": (est, np.array(col["pvalue"], float)),
            "ratio": (est, np.array(col["ratio"], float)),
            "ratio_interval": ((est, "bound"), np.array([col["lower"], col["upper"]], float).T),
            "verdict": (est, np.array(col["verdict"], dtype=str)),
            "compatible": (est, np.array([v == "compatible" for v in col["verdict"]])),
            "equivalence_pvalue": (est, np.array(col["equivalence_pvalue"], float)),
            "power": (est, np.array(col["power"], float)),
            "trials_needed": (est, np.array(col["trials_needed"], float)),
            "statement": (est, np.array(col["statement"], dtype=str)),
        },
        coords={est: list(ESTIMATORS), "bound": ["lower", "upper"]},
    )
    low, high = 1 / b, b
    long_names = {
        "statistic": "F = pooled empirical variance / mean estimator",
        "df_empirical": "effective degrees of freedom of the pooled empirical variance (runs' overlap corrected)",
        "df_estimator": "Satterthwaite degrees of freedom of the mean estimator",
        "pvalue": "two-sided p-value of the F test (H0: the estimator is unbiased)",
        "ratio": "mean estimator / pooled empirical variance",
        "ratio_interval": f"{level:.0%} interval of the ratio: ratio x F(df_empirical, df_estimator) quantiles",
        "verdict": f"equivalence verdict against the band [{low:.4g}, {high:.4g}]",
        "compatible": "verdict == 'compatible'",
        "equivalence_pvalue": "two one-sided tests: the larger p-value (H0: ratio outside the band)",
        "power": "chance of 'compatible' for a correct design (ratio 1) at this size",
        "trials_needed": f"trials (runs kept) for a {TARGET_POWER:.0%} chance of 'compatible' for a correct design",
        "statement": "the verdict and the F test in words",
    }
    for name, text in long_names.items():
        out[name].attrs["long_name"] = text
    out.attrs = {
        **study.attrs,
        "method": "F test: pooled empirical variance (runs x (trials-1) df) vs mean estimator (Satterthwaite df); "
                  "equivalence by two one-sided tests on the same F distribution",
        "hypothesis": "F test H0: the design's estimator is unbiased for the variance of the trial rate; "
                      "equivalence H0: its ratio lies outside the band",
        "alternative": "two-sided",
        "equivalence": VERDICT_RULE,
        "level": float(level),
        "tolerance": float(tolerance),
        "band": f"[{low:.4g}, {high:.4g}]",
        "target_power": TARGET_POWER,
        "references": _REFERENCE + "; Schuirmann (1987), two one-sided tests",
    }
    return out


def _df_text(df: float) -> str:
    if not np.isfinite(df):
        return "infinite"
    return f"{df:,.0f}" if df < 1e6 else f"{df:.2g}"
