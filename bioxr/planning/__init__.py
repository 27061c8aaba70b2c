"""Test-size planning: how many subjects a claim "FMR <= r" or "FNMR <= r" needs (METHODS.md section 9).

A claim passes when its one-sided upper bound at confidence ``c`` is at most
the claimed rate ``r`` (:func:`bioxr.claims.claim_test`). :func:`plan_test`
finds the smallest number of subjects for which it passes

- whatever happens, as long as at most ``max_errors`` errors occur (default,
  ``expected_rate=None``): the rule-of-three plan of the certification
  documents. ``power`` then only sets ``rate_for_power``, the true rate at
  which the planned test still passes with probability ``power``;
- with probability ``power`` when the true rate is ``expected_rate``
  (which must be below the claim).

The protocol (each *unit* is one biometric instance, a finger or an eye of a
subject, enrolled once; ``instances_per_subject`` of them per subject;
``samples_per_subject`` verification samples per instance):

- mated comparisons (FNMR): each sample against its own instance's
  reference, ``N = u m`` for ``u = n k`` units of ``n`` subjects;
- non-mated comparisons (FMR), only between instances of *different*
  subjects: ``cross_comparisons="all"`` compares every sample of each unit
  with every other subject's references, both ways, ``N = u (u - k) m``
  (ordered pairs of units times samples); ``"one-per-pair"`` makes one
  comparison per unordered pair of units, ``N = u (u - k) / 2``.

Correlated comparisons (``icc``) and the design effect:

- FNMR: ``icc`` is the intra-class correlation of one unit's attempts
  (METHODS.md section 4): design effect ``1 + (m - 1) icc``, effective
  count ``N / (1 + (m - 1) icc)``; errors are beta-binomial per unit
  (:func:`bioxr.correlation.simulate_clustered_decisions`) and their sum's
  distribution is computed exactly (FFT of the per-unit distribution).
- FMR (crossed subjects, METHODS.md section 12): the assumption used here is
  that two non-mated comparisons sharing one unit, in either role, have
  correlation ``icc``, and two sharing both units (the same pair, other
  samples or the other direction) ``2 icc``; units are independent. A
  comparison then has ``2 (u - k - 1)`` partners sharing one unit under
  "one-per-pair", design effect ``1 + 2 (u - k - 1) icc``; under "all"
  ``4 m (u - k - 1)`` partners sharing one unit and ``2m - 1`` sharing two,
  design effect ``1 + icc (4 m (u - k) - 2)``. For many subjects both give
  an effective count near ``u / (4 icc)``: the variance ``4 zeta_1 / u`` of
  a U-statistic of order two (Hoeffding), which no number of comparisons
  per pair can lower. Errors are taken as ``K / deff ~ Binomial(N / deff,
  pi)`` (the effective-binomial approximation); with ``icc = 0`` exactly
  binomial.
- Instances of one subject (two fingers) are taken as independent units.

The bound (``method``), one to one with :func:`~bioxr.claims.claim_test`:
``plan_test(method=X)`` plans for ``claim_test(method=X)`` (a string or a
mapping per rate), and ``"auto"`` resolves as claim_test does with subject
labels: ``"beta-binomial"`` for the FNMR, ``"subject"`` for the FMR. Each
unit is taken as one claim-test subject (label instances as subjects).

- FNMR ``"beta-binomial"`` and ``"icc"``, bounds that depend on how the
  errors fall on the units: planned on simulated tests. ``n_simulations``
  tests (default 2,000) of beta-binomial units with the planned ``icc`` are
  drawn once, unit by unit (``seed``; a test of ``u`` units is the first
  ``u`` of the same draws at every size); at a size claim_test's bound is
  computed on each test, vectorised over the distinct configurations (how
  many units show 0, 1, ..., m errors, all that these bounds depend on), and
  ``pass_probability`` is the share that pass, ``pass_probability_se`` its
  Monte Carlo error (about 0.009). The ``"icc"`` bound is claim_test's
  formula (equal within 1e-12); the beta-binomial one its posterior (likelihood,
  ``rho`` grid and prior) integrated with an O(h^4) rule on a cached logit
  lattice, within 2e-4 of the exact posterior CDF where it decides
  (claim_test's own grid: 1e-3), so decisions differ only for bounds within
  0.2% of the claim. The pass probability rises where one more error is
  allowed and falls in between (a saw-tooth; clustered errors blur it into
  a slope): the candidates are the sizes where zero errors, or ``j``
  errors on ``j`` units, first pass; the search gallops over them from the
  effective-count plan, then bisects between the first candidate that
  reaches ``power`` and the one before, so one subject fewer falls short in
  the planner's simulation. ``rate_for_power`` reweights the same tests to
  other true rates (importance sampling). Without ``expected_rate`` nothing
  is simulated: every placement of at most ``max_errors`` errors on the
  units must pass, and ``rate_for_power`` sums the exact chances of the
  placements that pass. ``n_simulations=0``: the analytic effective-count
  plan instead (Clopper-Pearson on ``K / deff`` errors in ``N / deff`` with
  the *planned* ``icc``, zero errors on the ``u`` units), which claim_test's
  bounds, not knowing the ICC, miss (below).
- ``"binomial"``: claim_test's exact Clopper-Pearson bound on all ``N``
  comparisons taken as independent; the pass probability is computed
  (``icc`` only widens the spread of the errors, not the bound).
- ``"subject"``, a bootstrap, too slow to simulate here: planned
  analytically. FMR (the ``"auto"`` bound): Clopper-Pearson on ``N / (1.5
  deff)`` (:data:`SUBJECT_FMR_INFLATION`), an empirical margin: the
  subject bound at few false matches is wider than Clopper-Pearson's (its
  t factor at few degrees of freedom),
  and with none it rests on the bootstrap's effective count, below ``N``
  (so even the rule-of-three plan passes with zero errors only most of the
  time). FNMR: the effective count ``N / (1 + (m - 1) icc)``, no margin.

Measured (power 0.8; claim_test's bound on tests simulated independently at
the planned size, 2,000 a cell for the FNMR, 600 for the FMR). FNMR
beta-binomial (the ``"auto"`` bound), ten cells of 2-10 attempts, ICC
0-0.5, FNMR claims 1-10% at a true third to a half, levels 0.8 and 0.95:
planned 0.80-0.88, claim_test 0.79-0.87, each within 0.02 of the other
(the effective-count plan, ``n_simulations=0``, gave 0.70-0.89 where 0.80-0.89
was planned: 0.70 and 0.74 at ICC 0, 0.75 at ICC 0.1; sizes now differ from
it by -38% to +18%). FNMR ``"icc"``: planned 0.80-0.87, claim_test
0.79-0.88 (effective-count plan 0.77-0.88). FNMR subject bootstrap, sizes
of the effective-count plan: 0.75-0.87 where 0.82-0.83 was planned, a known
gap. FMR, independent comparisons, five cells (claims 1e-3 to 5e-3 at a
quarter to a third, 1-3 samples, levels 0.8 and 0.95): binomial 0.82-0.84
(planned 0.83-0.85); subject bootstrap at sizes planned without the margin
0.76-0.84 (planned 0.84-0.86; 0.76-0.80 at 95%), with a 1.25 margin
0.76-0.88, with 1.5 (the plan) 0.84-0.90 (planned 0.81-0.86), 16-32% more
subjects than without; rule of three for FMR <= 1e-4 at 80% with zero
false matches: 128 subjects (the binomial plan) passed the subject bound
in 61% of 150 tests, 156 (this plan) in 95%. Re-measured on the bound's
Korn-Graubard count (150 tests a cell, claims 1e-3 to 5e-3 at a quarter to
a third, 1-3 samples, 80% and 95%): 0.82-0.94 where 0.85-0.87 was planned
(0.82 and 0.87 at 95%); the rule-of-three plan, 156 subjects, in 98%. Not
measured with crossed correlation (``icc > 0``).

Runtime: the analytic plans take milliseconds; a simulated FNMR plan
0.1-0.7 s (2 cores, loaded), up to 2-4 s where the bound must be computed
on many distinct configurations (10-20 attempts per unit, strong
correlation, or 30 and more errors allowed), per claim and level.

How the cPP / FIDO figures arise (cPP-biometrics #306, #331). #331 quotes
for FAR 1:10,000 "roughly 245 participants (or 123 where 2 samples per
person are allowed)" and for 1:25,000 "390 subjects (or 195)", as the FIDO
table at 80% confidence. They are reproduced exactly by the rule of three
at **95%**, not 80%: zero false matches allowed, one comparison per
unordered pair of instances of different people, two instances (fingers,
eyes) per person, the exact binomial bound: ``plan_test(fmr=[1e-4, 4e-5],
level=0.95, cross_comparisons="one-per-pair", instances_per_subject=2,
method="binomial")`` gives 123 and
195 people (246 and 390 instances, 30,012 and 75,660 comparisons against
the 29,956 and 74,894 that ``1 - 0.05^(1/N) <= r`` needs; the rounded
``3 / r`` = 30,000 and 75,000 give the same). The single-instance figures
are those instance counts: with one instance per person the minimum is
246 (``246 x 245 / 2 = 30,135``; 245 give 29,890, short of the
requirement, hence "roughly") and 388 (not 390). #306 gives, at 95%, 174
subjects when both orders of a pair are compared and 246 when not:
``cross_comparisons="all"`` (one sample) gives 174, "one-per-pair" 246. At
80% (``1.61 / r``, 16,094 and 40,236 comparisons) the same protocols need
180 people (91 with two instances) for 1:10,000 and 285 (143) for 1:25,000;
``tests/test_planning.py`` checks all of these.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from .._core import check_level, check_replicates, check_targets
from ..claims import CLAIM_METHODS, _check_methods, _Tables
from ..simulate import _entropy
from ._sizes import _analytic_cell, _configuration_cell, _Design, _Draws, _Simulated, _simulated_cell, _unit_pmf
from ._sizes import _configurations, _pass_probability, _simulated_rate_for_power  # noqa: F401  (internals, tested)

__all__ = ["CROSS_COMPARISONS", "N_SIMULATIONS", "PLAN_METHODS", "SUBJECT_FMR_INFLATION", "plan_test"]

CROSS_COMPARISONS = ("all", "one-per-pair")
#: The bounds a plan can be for: those of :func:`bioxr.claims.claim_test`, one to one.
PLAN_METHODS = CLAIM_METHODS
#: FNMR bounds planned by simulating the claim test (the others analytically).
SIMULATED = ("beta-binomial", "icc")
#: Simulated tests per planned size, by default.
N_SIMULATIONS = 2000
#: The FMR plan for claim_test's subject bootstrap inflates the design effect by this (module docstring).
SUBJECT_FMR_INFLATION = 1.5
RATES = ("fmr", "fnmr")

# ------------------------------------------------------------------ the public function
def plan_test(*, fmr=None, fnmr=None, level=0.8, expected_rate=None, icc=0.0, samples_per_subject: int = 1,
              instances_per_subject: int = 1, cross_comparisons: str = "all", max_errors=None, power: float = 0.8,
              method="auto", n_simulations: int = N_SIMULATIONS, seed=0) -> xr.Dataset:
    """The subjects (and comparisons) a test needs for claims "FMR <= r" / "FNMR <= r" to pass.

    Parameters
    ----------
    fmr, fnmr : float or array_like, optional, keyword-only
        Claimed rates in (0, 1); an array becomes the ``fmr_claim`` /
        ``fnmr_claim`` dimension. At least one.
    level : float or array_like, keyword-only
        One-sided confidence of the claim, above 0.5 (default 0.8, FIDO);
        an array becomes the ``level`` dimension.
    expected_rate : float or mapping, optional, keyword-only
        The true rate the plan assumes (below every claim); a mapping
        ``{"fmr": ..., "fnmr": ...}`` when both rates are planned. None
        (default): the rule-of-three plan, at most ``max_errors`` errors.
    icc : float or mapping, keyword-only
        Correlation of comparisons, in [0, 1) (module docstring: the FNMR's
        within-unit ICC, the FMR's crossed-subject correlation); a mapping
        per rate. Default 0: independent comparisons.
    samples_per_subject : int, keyword-only
        Verification samples (attempts) per instance.
    instances_per_subject : int, keyword-only
        Biometric instances (fingers, eyes) per subject, each enrolled and
        compared as its own identity; non-mated comparisons are only
        between instances of different subjects.
    cross_comparisons : {"all", "one-per-pair"}, keyword-only
        How the protocol forms non-mated comparisons: every sample against
        every other subject's references, both ways, or one comparison per
        unordered pair of instances.
    max_errors : int, optional, keyword-only
        With ``expected_rate=None``: the errors the test may show and still
        pass (default 0). Not with ``expected_rate`` (the errors allowed
        then follow from the size: ``allowed_errors``).
    power : float, keyword-only
        The probability with which the claim should pass at
        ``expected_rate`` (default 0.8). Without an expected rate it sets
        ``rate_for_power``.
    method : str or mapping, keyword-only
        The bound the claim will be tested with, as in
        :func:`bioxr.claims.claim_test`: ``"auto"`` (default: the
        beta-binomial bound for the FNMR, the subject bootstrap for the
        FMR), ``"binomial"``, ``"subject"``, ``"beta-binomial"`` or
        ``"icc"`` (the last two FNMR only), or a mapping such as ``{"fmr":
        "binomial", "fnmr": "icc"}``. Module docstring: which are simulated.
    n_simulations : int, keyword-only
        Simulated tests a size for the FNMR's ``"beta-binomial"`` and
        ``"icc"`` bounds (default 2,000, at least 100); 0: the analytic
        effective-count plan instead.
    seed : keyword-only
        Of the simulation (int, SeedSequence or Generator).

    Returns
    -------
    xarray.Dataset
        Over ``({rate}_claim, level)`` for each planned rate:
        ``{rate}_subjects``, ``{rate}_units`` (instances),
        ``{rate}_comparisons``, ``{rate}_effective_comparisons`` (the count
        the analytic bound rests on; for a simulated bound, ``N / deff``),
        ``{rate}_design_effect``, ``{rate}_allowed_errors`` (the most errors
        that still pass at that size, for a simulated bound when each falls
        on its own unit; -1 where none, not even zero, does),
        ``{rate}_zero_errors_pass``, ``{rate}_zero_error_bound``,
        ``{rate}_pass_probability`` (at the expected rate; NaN without one),
        ``{rate}_pass_probability_se`` (its Monte Carlo standard error; NaN
        where it is computed) and ``{rate}_rate_for_power`` (the true rate
        at which the planned test passes with probability ``power``);
        ``subjects``, the larger of the rates' sizes. attrs state the
        protocol, the bound each rate is planned for (``attrs["fmr_bound"]``,
        ``attrs["fnmr_bound"]``) and the assumptions
        (``attrs["assumptions"]``). ``to_dataframe()`` gives the table.

    Examples
    --------
    The cPP figures (module docstring): rule of three at 95%, one
    comparison per pair of instances, two instances per person, the
    binomial bound:

    >>> from bioxr.planning import plan_test
    >>> plan = plan_test(fmr=[1e-4, 4e-5], level=0.95, cross_comparisons="one-per-pair", instances_per_subject=2,
    ...                  method="binomial")
    >>> plan.subjects.values.ravel().tolist(), plan.fmr_units.values.ravel().tolist()
    ([123, 195], [246.0, 390.0])

    FIDO's 80%, every sample against every other subject's reference; for
    claim_test's default FMR bound, the subject bootstrap, more:

    >>> plan_test(fmr=1e-4, level=0.8, method="binomial").subjects.item(), plan_test(fmr=1e-4).subjects.item()
    (128, 156)

    An FNMR claim of 3% when the true FNMR is 1%, five attempts per subject
    that correlate (ICC 0.3), for claim_test's default (beta-binomial)
    bound, on 2,000 simulated tests a size:

    >>> plan = plan_test(fnmr=0.03, expected_rate=0.01, icc=0.3, samples_per_subject=5)
    >>> int(plan.subjects), int(plan.fnmr_comparisons), int(plan.fnmr_allowed_errors)
    (53, 265, 4)
    >>> round(float(plan.fnmr_pass_probability), 3), round(float(plan.fnmr_pass_probability_se), 3)
    (0.816, 0.009)

    The analytic effective-count plan (the planned ICC, not claim_test's
    bound; at this ICC it over-sizes the test):

    >>> int(plan_test(fnmr=0.03, expected_rate=0.01, icc=0.3, samples_per_subject=5, n_simulations=0).subjects)
    76
    """
    claims = {}
    for name, value in (("fmr", fmr), ("fnmr", fnmr)):
        if value is not None:
            claims[name] = check_targets(value, name, closed=False)
    if not claims:
        raise ValueError("give a claim to plan for: fmr= and/or fnmr=, rates in (0, 1), e.g. fmr=1e-4.")
    levels = np.atleast_1d(np.asarray(level, dtype=float))
    if levels.ndim != 1 or levels.size == 0:
        raise ValueError(f"level={level!r}; give one confidence level or a 1-D sequence of them.")
    for c in levels:
        check_level(c)
        if c <= 0.5:
            raise ValueError(f"level={c!r}; a claim's confidence must exceed 0.5 (e.g. 0.8 or 0.95).")
    methods = _check_methods(method, claims, True)  # claim_test's methods and their 'auto' (with subject labels)
    if cross_comparisons not in CROSS_COMPARISONS:
        raise ValueError(f"cross_comparisons={cross_comparisons!r}; choose 'all' (every sample against every other "
                         "subject's references, both ways) or 'one-per-pair' (one comparison per pair of instances).")
    m = _whole(samples_per_subject, "samples_per_subject", 1)
    k = _whole(instances_per_subject, "instances_per_subject", 1)
    try:
        power = check_level(power)
    except ValueError:
        raise ValueError(f"power={power!r}; the probability that the claim passes lies between 0 and 1, e.g. "
                         "0.8.") from None
    n_sim = 0
    if not (np.ndim(n_simulations) == 0 and not isinstance(n_simulations, bool) and n_simulations == 0):
        try:
            n_sim = check_replicates(n_simulations, minimum=100)
        except ValueError:
            raise ValueError(f"n_simulations={n_simulations!r}; give a whole number of simulated tests, at least 100 "
                             "(default 2,000), or 0 for the analytic effective-count plan.") from None
    root = _entropy(seed)
    expected = _per_rate(expected_rate, claims, "expected_rate")
    iccs = _per_rate(icc, claims, "icc")
    if expected_rate is not None and max_errors is not None:
        raise ValueError("give either expected_rate (the errors allowed then follow from the size) or max_errors "
                         "(the rule-of-three style plan: pass with at most that many errors), not both.")
    allowed = 0 if max_errors is None else _whole(max_errors, "max_errors", 0)
    out, bounds = {}, {}
    for rate, values in claims.items():
        e, rho = expected[rate], iccs[rate]
        rho = 0.0 if rho is None else float(rho)
        if not 0 <= rho < 1:
            raise ValueError(f"icc={rho!r} for the {rate.upper()}; an intra-class correlation lies in [0, 1).")
        if e is not None:
            e = float(e)
            if not 0 < e < 1:
                raise ValueError(f"expected_rate={e!r} for the {rate.upper()}; a rate lies in (0, 1).")
            too_high = values[values <= e]
            if too_high.size:
                raise ValueError(f"expected_rate={e:g} is not below the {rate.upper()} claim(s) {too_high.tolist()}: "
                                 "a claim at or below the true rate cannot pass with a given probability.")
        how = methods[rate]
        design = _Design(rate, k=k, m=m, icc=rho, cross=cross_comparisons,
                         bound="binomial" if how == "binomial" else "effective",
                         inflation=SUBJECT_FMR_INFLATION if (rate, how) == ("fmr", "subject") else 1.0)
        simulated = rate == "fnmr" and how in SIMULATED and n_sim > 0
        tables = _Tables()
        if simulated and e is not None:
            draws = _Draws(_unit_pmf(m, e, rho), n_sim, root)
            cells = [[_simulated_cell(design, _Simulated(draws, k, float(r), float(c), how, power, tables), float(r),
                                      float(c), e, power) for c in levels] for r in values]
        elif simulated:
            cells = [[_configuration_cell(design, float(r), float(c), power, allowed, how, tables) for c in levels]
                     for r in values]
        else:
            cells = [[_analytic_cell(design, float(r), float(c), e, power, allowed) for c in levels] for r in values]
        bounds[rate] = _bound_text(rate, how, simulated, e is not None, n_sim, seed)
        dims = (f"{rate}_claim", "level")
        for name in cells[0][0]:
            out[f"{rate}_{name}"] = (dims, np.array([[cell[name] for cell in row] for row in cells]))
    coords = {f"{rate}_claim": claims[rate] for rate in claims}
    coords["level"] = levels
    ds = xr.Dataset(out, coords=coords)
    sizes = [ds[f"{rate}_subjects"] for rate in claims]
    total = sizes[0]
    for extra in sizes[1:]:
        total = np.maximum(total, extra)
    ds["subjects"] = total.astype(int)
    for rate in claims:
        ds[f"{rate}_pass_probability_se"].attrs["long_name"] = ("Monte Carlo standard error of the pass probability "
                                                                "(NaN where it is computed, not simulated)")
    scalar = {f"{rate}_claim": 0 for rate, given in (("fmr", fmr), ("fnmr", fnmr)) if given is not None
              and np.ndim(given) == 0}
    if np.ndim(level) == 0:
        scalar["level"] = 0
    ds = ds.isel(scalar)  # a scalar claim or level: a scalar coordinate, as elsewhere in bioxr
    ds.attrs = _plan_attrs(claims, expected, iccs, m, k, cross_comparisons, allowed, power, methods, bounds)
    return ds


def _whole(value, name, minimum) -> int:
    ok = not isinstance(value, bool) and np.ndim(value) == 0
    try:
        ok = ok and float(value).is_integer() and int(value) >= minimum
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name}={value!r}; give a whole number, at least {minimum}.")
    return int(value)


def _per_rate(value, claims, name) -> dict:
    if isinstance(value, Mapping):
        unknown = set(value) - set(RATES)
        if unknown:
            raise ValueError(f"{name} names {sorted(map(str, unknown))}; use the keys 'fmr' and 'fnmr'.")
        return {rate: value.get(rate) for rate in claims}
    if value is not None and np.ndim(value) != 0:
        raise ValueError(f"{name}={value!r}; give one number (or a mapping per rate).")
    if name == "expected_rate" and value is not None and len(claims) > 1:
        raise ValueError("expected_rate: the FMR and the FNMR differ by orders of magnitude; give a mapping, e.g. "
                         "expected_rate={'fmr': 5e-5, 'fnmr': 0.01}.")
    return {rate: value for rate in claims}


def _bound_text(rate, how, simulated, expected, n_sim, seed) -> str:
    call = f"claim_test(method={how!r})" + (" (the 'auto' bound)" if how == ("subject" if rate == "fmr"
                                                                             else "beta-binomial") else "")
    if how == "binomial":
        return (f"{call}: exact Clopper-Pearson on all N comparisons, as if independent; the pass probability is "
                "computed (FNMR: beta-binomial errors with the planned icc, exact; FMR: K / deff ~ Binomial(N / deff, "
                "pi))")
    if simulated:
        what = ("the beta-binomial posterior bound, rho integrated out" if how == "beta-binomial" else
                "Clopper-Pearson on N / (1 + (m - 1) rho), rho the ICC estimated on each test")
        if expected:
            return (f"{call}: {what}, computed on {n_sim:,} simulated tests a size (beta-binomial units with the "
                    f"planned icc; seed {seed!r}, the same draws at every size); pass probability and "
                    "rate_for_power simulated")
        return (f"{call}: {what}; every placement of at most max_errors errors on the units passes; rate_for_power "
                "from the chances of the placements that pass")
    approx = (f"Clopper-Pearson on N / ({SUBJECT_FMR_INFLATION:g} deff), deff the crossed design effect (an empirical "
              "margin for the subject bound at few false matches)" if rate == "fmr" else "Clopper-Pearson on N / (1 + (m - 1) icc) with the "
              "planned icc, zero errors on the units")
    return (f"{call}, approximated by {approx}: claim_test's own bound is not simulated (n_simulations=0, or a "
            "bootstrap); how far its pass rate is from the planned one is measured in the module docstring")


def _plan_attrs(claims, expected, iccs, m, k, cross, allowed, power, methods, bounds) -> dict:
    protocol = (f"{k} instance(s) per subject, each enrolled once with {m} verification sample(s); mated: each "
                "sample against its own instance's reference; non-mated: "
                + ("every sample against the reference of every instance of the other subjects, both ways"
                   if cross == "all" else "one comparison per unordered pair of instances of different subjects"))
    mode = ("rule-of-three plan: the claim passes if at most "
            f"{allowed} error(s) occur" if all(expected[r] is None for r in claims)
            else f"the claim passes with probability {power:g} when the true rate is the expected one")
    attrs = {"protocol": protocol, "plan": mode, "method": str({r: methods[r] for r in claims}),
             "expected_rate": str({r: expected[r] for r in claims}), "icc": str({r: iccs[r] for r in claims}),
             "power": power}
    attrs.update({f"{rate}_bound": bounds[rate] for rate in claims})
    attrs["assumptions"] = (
        "each unit (instance) an independent cluster, labelled as its own subject in the claim test; FNMR: "
        "beta-binomial errors per unit with ICC icc, design effect 1 + (m - 1) icc; FMR: comparisons sharing one "
        "unit correlate icc, sharing two 2 icc, design effect 1 + 2 (u - k - 1) icc (one per pair) or "
        "1 + icc (4 m (u - k) - 2) (all), errors K / deff ~ Binomial(N / deff, pi); the pass probability is a "
        "saw-tooth in the size, the plan the smallest size that reaches the power")
    return attrs
