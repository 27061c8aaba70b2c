"""Test-size planning: the certification arithmetic, the design effects, and the planned power in simulation."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import bioxr
from bioxr import claims, planning
from bioxr.claims import binomial_upper_bound, claim_test, clustered_upper_bound, zero_error_bound
from bioxr.correlation import simulate_clustered_decisions
from bioxr.planning import plan_test
from bioxr.simulate import _entropy


# ------------------------------------------------------------------ the certification documents' arithmetic
@pytest.mark.parametrize("level,cross,instances,expected", [
    # cPP-biometrics #331: 123 (246 instances) and 195 (390 instances) people with two instances; rule of three, 95%
    (0.95, "one-per-pair", 2, [123, 195]),
    # one instance per person: the minimum is 246 (#306's "not allowed") and 388 ("roughly 245" and 390 in #331)
    (0.95, "one-per-pair", 1, [246, 388]),
    # #306: 174 when both orders of a pair are compared
    (0.95, "all", 1, [174, 275]),
    # the same protocols at FIDO's 80% (1.61 / r)
    (0.8, "one-per-pair", 1, [180, 285]),
    (0.8, "one-per-pair", 2, [91, 143]),
    (0.8, "all", 1, [128, 202]),
])
def test_certification_figures(level, cross, instances, expected):
    plan = plan_test(fmr=[1e-4, 4e-5], level=level, cross_comparisons=cross, instances_per_subject=instances,
                     method="binomial")
    assert plan.subjects.values.tolist() == expected
    for r, n in zip([1e-4, 4e-5], expected):
        need = np.log1p(-level) / np.log1p(-r)  # 1 - (1 - c)^(1/N) <= r
        u = instances * np.array([n - 1, n])
        pairs = u * (u - instances) * (1 if cross == "all" else 0.5)
        assert pairs[1] >= need > pairs[0]  # enough at n, not at n - 1
        # the rounded rule of three (3 / r at 95%, 1.61 / r at 80%) gives the same size
        rounded = (3.0 if level == 0.95 else 1.61) / r
        assert pairs[1] >= rounded > pairs[0] or abs(rounded - need) > abs(pairs[1] - need)
    assert plan.fmr_units.values.tolist() == [instances * n for n in expected]
    assert (plan.fmr_allowed_errors == 0).all() and plan.fmr_zero_errors_pass.all()


def test_cpp_instances_and_comparisons():
    plan = plan_test(fmr=[1e-4, 4e-5], level=0.95, cross_comparisons="one-per-pair", instances_per_subject=2,
                     method="binomial")
    assert plan.fmr_units.values.tolist() == [246, 390]
    assert plan.fmr_comparisons.values.tolist() == [30_012, 75_660]  # pairs of instances of different people


def test_fmr_plan_for_the_subject_bootstrap():
    """claim_test's default FMR bound, the subject bootstrap, is planned on N / (1.5 deff): at zero errors it rests
    on the bootstrap's effective count, below N (measured: the cPP size 128 passed with zero errors in 61% of 150
    tests, 156 subjects in 95%)."""
    need = np.log(0.2) / np.log1p(-1e-4)  # comparisons the exact rule of three needs at 80%
    auto = plan_test(fmr=1e-4)
    n = auto.subjects.item()
    assert n * (n - 1) / 1.5 >= need > (n - 1) * (n - 2) / 1.5 and n == 156
    assert plan_test(fmr=1e-4, method="binomial").subjects.item() == 128
    assert "1.5 deff" in auto.attrs["fmr_bound"] and auto.fmr_effective_comparisons.item() == n * (n - 1) / 1.5
    assert plan_test(fmr=1e-4, method={"fmr": "subject"}).subjects.item() == n


def test_zero_error_plan_rate_for_power():
    plan = plan_test(fmr=1e-4, level=0.8, power=0.8)
    n = plan.fmr_comparisons.item()
    assert plan.fmr_allowed_errors.item() == 0
    assert plan.fmr_rate_for_power.item() == pytest.approx(1 - 0.8 ** (1 / n), rel=1e-6)  # (1 - pi)^N = power
    assert np.isnan(plan.fmr_pass_probability.item())


def test_max_errors_plan():
    plan = plan_test(fnmr=0.02, max_errors=3, samples_per_subject=4, method="binomial")
    n = plan.subjects.item()
    assert binomial_upper_bound(3, 4 * n, level=0.8) <= 0.02 < binomial_upper_bound(3, 4 * (n - 1), level=0.8)
    assert plan.fnmr_allowed_errors.item() >= 3


def test_fnmr_zero_errors_count_the_subjects():
    """Design-aware: with zero errors extra attempts buy nothing; binomial: every attempt counts."""
    for m, icc in ((1, 0.0), (5, 0.0), (5, 0.4)):
        plan = plan_test(fnmr=0.01, level=0.8, samples_per_subject=m, icc=icc)
        assert plan.subjects.item() == int(np.ceil(np.log(0.2) / np.log(0.99)))  # 161 subjects
    plan = plan_test(fnmr=0.01, level=0.8, samples_per_subject=5, method="binomial")
    assert plan.subjects.item() == int(np.ceil(np.ceil(np.log(0.2) / np.log(0.99)) / 5))


# ------------------------------------------------------------------ design effects
def _brute_design_effect(n, k, m, cross, icc):
    """1 + (sum of correlations over ordered pairs of distinct comparisons) / N, by enumeration."""
    units = [(s, i) for s in range(n) for i in range(k)]
    if cross == "all":
        comps = [(a, b, j) for a in units for b in units if a[0] != b[0] for j in range(m)]
    else:
        comps = [(a, b, 0) for a, b in itertools.combinations(units, 2) if a[0] != b[0]]
    total = 0.0
    for x, y in itertools.permutations(comps, 2):
        shared = len({x[0], x[1]} & {y[0], y[1]})
        total += icc * shared  # one shared unit: icc; both: 2 icc
    return 1 + total / len(comps), len(comps)


@pytest.mark.parametrize("n,k,m,cross", [(5, 1, 1, "all"), (5, 1, 3, "all"), (4, 2, 2, "all"),
                                         (6, 1, 1, "one-per-pair"), (4, 2, 1, "one-per-pair")])
def test_fmr_design_effect_by_enumeration(n, k, m, cross):
    icc = 0.01
    deff, big_n = _brute_design_effect(n, k, m, cross, icc)
    design = planning._Design("fmr", k=k, m=m, icc=icc, cross=cross, bound="effective")
    assert design.comparisons(n) == big_n
    assert design.design_effect(n) == pytest.approx(deff, rel=1e-12)


def test_fnmr_design_effect():
    plan = plan_test(fnmr=0.05, expected_rate=0.01, icc=0.25, samples_per_subject=5)
    assert plan.fnmr_design_effect.item() == pytest.approx(1 + 4 * 0.25)
    assert plan.fnmr_effective_comparisons.item() == pytest.approx(plan.fnmr_comparisons.item() / 2)


def test_crossed_fmr_variance_matches_the_design_effect():
    """Latent crossed subjects (z_ab = s (A_a + A_b) + E_ab), one comparison per pair: Var(FMR) = p(1-p) deff / N."""
    u, p, sigma, replicates = 60, 0.05, 0.35, 3000
    rng = np.random.default_rng(12)
    tau = np.sqrt(2 * sigma**2 + 1) * stats.norm.isf(p)
    a, b = np.triu_indices(u, 1)
    fmr = np.empty(replicates)
    for r in range(replicates):
        effect = rng.normal(0, sigma, u)
        fmr[r] = np.mean(effect[a] + effect[b] + rng.normal(0, 1, a.size) > tau)
    # binary correlation of two comparisons sharing one subject (latent correlation s^2 / (2 s^2 + 1))
    rho = sigma**2 / (2 * sigma**2 + 1)
    z = stats.norm.isf(p)
    both = stats.multivariate_normal([0, 0], [[1, rho], [rho, 1]]).cdf([-z, -z])
    icc = (both - p * p) / (p * (1 - p))
    design = planning._Design("fmr", k=1, m=1, icc=icc, cross="one-per-pair", bound="effective")
    predicted = p * (1 - p) * design.design_effect(u) / design.comparisons(u)
    assert design.design_effect(u) > 2  # the subjects' share dominates
    assert np.var(fmr, ddof=1) == pytest.approx(predicted, rel=0.12)


# ------------------------------------------------------------------ the planned power, in claim_test's own bound
def claim_test_fnmr_passes(n, m, rate, icc, claim, level, method, *, seed, replicates):
    """Independently simulated tests (simulate_clustered_decisions: p_i ~ Beta, then binomial attempts), each tested
    by clustered_upper_bound, the function claim_test calls on the per-subject counts; whether each passes."""
    sim = simulate_clustered_decisions(n, m, rate=rate, rho=icc, seed=seed, replicates=replicates)
    errors = np.sort(sim.errors.values, axis=1)  # the bound depends on the counts, not on their order
    unique, inverse = np.unique(errors, axis=0, return_inverse=True)
    counts = xr.Dataset({"errors": (("replicate", "individual"), unique), "attempts": ("individual", np.full(n, m))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # errors in fewer than 3 subjects: DesignWarning
        bound = clustered_upper_bound(counts, level=level, method=method).bound.values
    return (bound <= claim)[inverse.ravel()]


def planners_simulation(plan_kwargs, n):
    """The planner's own simulated pass probability at n subjects (the same draws as plan_test's default seed)."""
    m, rate, icc = plan_kwargs["samples_per_subject"], plan_kwargs["expected_rate"], plan_kwargs["icc"]
    method = {"auto": "beta-binomial"}.get(plan_kwargs.get("method", "auto"), plan_kwargs.get("method"))
    draws = planning._Draws(planning._unit_pmf(m, rate, icc), planning.N_SIMULATIONS, _entropy(0))
    sim = planning._Simulated(draws, 1, plan_kwargs["fnmr"], plan_kwargs.get("level", 0.8), method, 0.8,
                              claims._Tables())
    return float(sim.passes(n, planning.N_SIMULATIONS).mean())


FNMR_CELLS = [  # expected rate a third of the claim
    {"fnmr": 0.03, "expected_rate": 0.01, "icc": 0.0, "samples_per_subject": 5},
    {"fnmr": 0.03, "expected_rate": 0.01, "icc": 0.3, "samples_per_subject": 5},
    {"fnmr": 0.06, "expected_rate": 0.02, "icc": 0.3, "samples_per_subject": 3, "level": 0.95},
    {"fnmr": 0.03, "expected_rate": 0.01, "icc": 0.3, "samples_per_subject": 4, "method": "icc"},
]


@pytest.mark.parametrize("kwargs", FNMR_CELLS)
def test_fnmr_plan_passes_claim_test_with_the_stated_probability(kwargs):
    """The planned size, simulated independently and tested by claim_test's FNMR bound, passes with >= power;
    one subject fewer does not reach the power in the planner's own simulation (the smallest size)."""
    plan = plan_test(**kwargs, power=0.8)
    n, planned, se = plan.subjects.item(), plan.fnmr_pass_probability.item(), plan.fnmr_pass_probability_se.item()
    method = kwargs.get("method", "beta-binomial")
    assert method in plan.attrs["fnmr_bound"] and "simulated" in plan.attrs["fnmr_bound"]
    assert planned >= 0.8 and 0.005 < se < 0.012
    passed = claim_test_fnmr_passes(n, kwargs["samples_per_subject"], kwargs["expected_rate"], kwargs["icc"],
                                    kwargs["fnmr"], kwargs.get("level", 0.8), method, seed=5, replicates=1500)
    print(kwargs, n, planned, passed.mean())
    assert passed.mean() >= 0.8 - 0.03
    assert passed.mean() == pytest.approx(planned, abs=0.045)  # two independent simulations
    assert planners_simulation(kwargs, n) == pytest.approx(planned, abs=1e-12)
    assert planners_simulation(kwargs, n - 1) < 0.8


def test_the_old_effective_count_plan_misses_in_claim_test():
    """What this planner fixes: the effective-count plan (the true ICC, n_simulations=0) at ICC 0 is too small for
    claim_test's beta-binomial bound, which does not know the ICC."""
    kwargs = {"fnmr": 0.03, "expected_rate": 0.01, "icc": 0.0, "samples_per_subject": 5}
    old = plan_test(**kwargs, n_simulations=0)
    assert old.subjects.item() == 45 and old.fnmr_pass_probability.item() >= 0.8
    assert "approximated" in old.attrs["fnmr_bound"] and np.isnan(old.fnmr_pass_probability_se.item())
    passed = claim_test_fnmr_passes(45, 5, 0.01, 0.0, 0.03, 0.8, "beta-binomial", seed=6, replicates=1500)
    assert passed.mean() < 0.75  # about 0.70
    assert plan_test(**kwargs).subjects.item() == 53


def test_effective_count_plan_passes_its_own_bound():
    """n_simulations=0: the analytic plan; its pass probability is that of the effective-count bound (true ICC)."""
    claim, expected, icc, m = 0.03, 0.01, 0.3, 5
    plan = plan_test(fnmr=claim, expected_rate=expected, icc=icc, samples_per_subject=m, n_simulations=0)
    n, planned = plan.subjects.item(), plan.fnmr_pass_probability.item()
    assert (n, planned >= 0.8) == (76, True)
    sim = simulate_clustered_decisions(n, m, rate=expected, rho=icc, seed=5, replicates=4000)
    errors = sim.errors.sum("individual").values
    deff = 1 + (m - 1) * icc
    # exact Clopper-Pearson on the effective count; zero errors on the subjects
    bound = np.where(errors == 0, zero_error_bound(n, 0.8), binomial_upper_bound(errors / deff, n * m / deff, level=0.8))
    assert float((bound <= claim).mean()) == pytest.approx(planned, abs=0.02)


def test_simulated_rate_for_power():
    """The importance-reweighted rate_for_power: tests simulated at that rate pass with about the power (0.8, and
    0.5 further from the simulated rate)."""
    kwargs = {"fnmr": 0.05, "expected_rate": 0.02, "icc": 0.1, "samples_per_subject": 3}
    plan = plan_test(**kwargs)
    n, rate = plan.subjects.item(), plan.fnmr_rate_for_power.item()
    assert kwargs["expected_rate"] < rate < kwargs["fnmr"]
    passed = claim_test_fnmr_passes(n, 3, rate, 0.1, 0.05, 0.8, "beta-binomial", seed=8, replicates=1500)
    assert passed.mean() == pytest.approx(0.8, abs=0.05)  # the plan's own simulation and this one: both noisy
    draws = planning._Draws(planning._unit_pmf(3, 0.02, 0.1), planning.N_SIMULATIONS, _entropy(0))
    sim = planning._Simulated(draws, 1, 0.05, 0.8, "beta-binomial", 0.8, claims._Tables())
    half = planning._simulated_rate_for_power(sim, n, sim.passes(n, draws.n_sim), 0.02, 0.1, 0.05, 0.5)
    assert 1.1 * rate < half < 0.05
    passed = claim_test_fnmr_passes(n, 3, half, 0.1, 0.05, 0.8, "beta-binomial", seed=9, replicates=1500)
    assert passed.mean() == pytest.approx(0.5, abs=0.05)


def configurations(errors, m):
    """Brute force: every multiset of per-unit error counts (1..m) summing to errors."""
    out = set()
    for parts in itertools.product(range(m + 1), repeat=errors):
        if sum(parts) == errors:
            out.add(tuple(sorted(p for p in parts if p)))
    return sorted(out)


@pytest.mark.parametrize("method", ["beta-binomial", "icc"])
def test_rule_of_three_plan_under_a_clustered_bound(method):
    """max_errors=4: every way 4 or fewer errors can fall on the units passes claim_test's bound at the planned size,
    not at one subject fewer (where zero errors still pass: the clustered placements decide)."""
    claim, m, level, most = 0.03, 4, 0.8, 4
    plan = plan_test(fnmr=claim, samples_per_subject=m, max_errors=most, icc=0.2, method=method)
    n = plan.subjects.item()
    placements = [c for e in range(most + 1) for c in configurations(e, m)]

    def worst(size):
        errors = np.zeros((len(placements), size), dtype=int)
        for row, parts in enumerate(placements):
            errors[row, :len(parts)] = parts
        counts = xr.Dataset({"errors": (("case", "individual"), errors), "attempts": ("individual", np.full(size, m))})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(clustered_upper_bound(counts, level=level, method=method).bound.max())

    assert worst(n) <= claim < worst(n - 1)
    assert n - 1 >= np.log(1 - level) / np.log(1 - claim)  # zero errors pass at n - 1
    assert plan.fnmr_allowed_errors.item() >= most and np.isnan(plan.fnmr_pass_probability.item())
    for e in range(1, 6):
        assert len(planning._configurations(e, m)) == len(configurations(e, m))
    assert planning._configurations(2, m).tolist() == [[0, 1, 0, 0], [2, 0, 0, 0]]  # one unit with 2; two with 1


@pytest.mark.parametrize("m,icc,rate", [(5, 0.3, 0.01), (3, 0.0, 0.03), (6, 0.5, 0.03)])
def test_fast_bounds_decide_as_claim_test(m, icc, rate):
    """The planner's vectorised FNMR bounds against clustered_upper_bound, on configurations around the claim."""
    n = 80
    sim = simulate_clustered_decisions(n, m, rate=rate, rho=icc, seed=2, replicates=100)
    errors = np.unique(np.sort(sim.errors.values, axis=1), axis=0)
    hist = np.stack([(errors == e).sum(1) for e in range(m + 1)], axis=1)
    counts = xr.Dataset({"errors": (("replicate", "individual"), errors), "attempts": ("individual", np.full(n, m))})
    for method in ("beta-binomial", "icc"):
        for level in (0.8, 0.95):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bound = clustered_upper_bound(counts, level=level, method=method).bound.values
            if method == "icc":
                mid = (hist[:, 1:].sum(1) > 0) & (hist[:, m] < n)
                fast = claims._icc_bound(hist[mid].astype(float), m, level)
                np.testing.assert_allclose(fast, bound[mid], rtol=1e-12)
            for claim in np.quantile(bound, [0.2, 0.5, 0.8]):  # many configurations near the claim
                ours = claims._config_passes(hist, m, claim, level, method, claims._Tables())
                differ = ours != (bound <= claim)
                assert np.all(np.abs(bound[differ] - claim) < 2e-3 * claim), (method, level, claim)
                assert differ.sum() <= 1


def test_fmr_plan_passes_with_the_stated_probability_in_claim_test():
    """Data of the planned size (independent non-mated scores, as many as the protocol forms), tested by claim_test."""
    claim, expected, m = 2e-3, 5e-4, 2
    plan = plan_test(fmr=claim, expected_rate=expected, samples_per_subject=m, method="binomial")
    n, planned = plan.subjects.item(), plan.fmr_pass_probability.item()
    big_n = n * (n - 1) * m
    assert plan.fmr_comparisons.item() == big_n and planned >= 0.8
    t = stats.norm.isf(expected)  # non-mated scores are N(0, 1): FMR(t) = expected
    rng = np.random.default_rng(7)
    passes = [bool(claim_test(bioxr.from_scores(rng.normal(4, 1, n * m), rng.normal(0, 1, big_n)), fmr=claim,
                              threshold=t).passes) for _ in range(300)]
    assert np.mean(passes) == pytest.approx(planned, abs=0.06)
    # and one cube of the protocol: the same count of non-mated comparisons
    cube = bioxr.simulate.gaussian(n, m, seed=1)
    assert claim_test(cube, fmr=claim, threshold=t, method="binomial").trials.item() == big_n


@pytest.mark.parametrize("kwargs", [
    {"fnmr": 0.03, "expected_rate": 0.01, "icc": 0.3, "samples_per_subject": 5, "n_simulations": 0},
    {"fmr": 1e-3, "expected_rate": 3e-4, "samples_per_subject": 2},
    {"fmr": 1e-3, "expected_rate": 3e-4, "icc": 0.002, "cross_comparisons": "one-per-pair"},
])
def test_analytic_plan_is_the_smallest_size_that_reaches_the_power(kwargs):
    plan = plan_test(**kwargs, power=0.8)
    rate = "fmr" if "fmr" in kwargs else "fnmr"
    design = planning._Design(rate, k=1, m=kwargs.get("samples_per_subject", 1), icc=kwargs.get("icc", 0.0),
                              cross=kwargs.get("cross_comparisons", "all"), bound="effective",
                              inflation=planning.SUBJECT_FMR_INFLATION if rate == "fmr" else 1.0)
    n = plan.subjects.item()
    scan = [planning._pass_probability(design, s, kwargs[rate], 0.8, kwargs["expected_rate"])[0]
            for s in range(design.n_min, n + 1)]
    assert scan[-1] >= 0.8 and max(scan[:-1]) < 0.8


def test_methods_correspond_to_claim_test():
    """plan_test(method=X) plans for claim_test(method=X); 'auto' as claim_test resolves it with subject labels."""
    plan = plan_test(fmr=1e-3, fnmr=0.03, expected_rate={"fmr": 3e-4, "fnmr": 0.01}, samples_per_subject=3)
    assert plan.attrs["method"] == str({"fmr": "subject", "fnmr": "beta-binomial"})
    assert "claim_test(method='subject')" in plan.attrs["fmr_bound"]
    assert "claim_test(method='beta-binomial')" in plan.attrs["fnmr_bound"]
    mixed = plan_test(fnmr=0.03, expected_rate=0.01, icc=0.3, samples_per_subject=5,
                      method={"fnmr": "icc"})
    direct = plan_test(fnmr=0.03, expected_rate=0.01, icc=0.3, samples_per_subject=5, method="icc")
    xr.testing.assert_identical(mixed, direct)
    binom = plan_test(fnmr=0.03, expected_rate=0.01, icc=0.3, samples_per_subject=5, method="binomial")
    assert "all N comparisons" in binom.attrs["fnmr_bound"] and np.isnan(binom.fnmr_pass_probability_se.item())
    with pytest.raises(ValueError, match="FNMR only"):
        plan_test(fmr=1e-3, method="icc")


def test_seed_and_simulations():
    kwargs = {"fnmr": 0.05, "expected_rate": 0.0167, "icc": 0.1, "samples_per_subject": 4}
    a, b = plan_test(**kwargs, seed=3), plan_test(**kwargs, seed=3)
    xr.testing.assert_identical(a, b)
    few = plan_test(**kwargs, n_simulations=400, seed=3)
    assert few.fnmr_pass_probability_se.item() > a.fnmr_pass_probability_se.item()
    assert abs(few.subjects.item() - a.subjects.item()) <= 10


# ------------------------------------------------------------------ the table
def test_table_over_claims_and_levels():
    plan = plan_test(fmr=[1e-3, 1e-4, 1e-5], level=[0.8, 0.9, 0.95])
    assert plan.subjects.dims == ("fmr_claim", "level")
    assert (plan.subjects.diff("fmr_claim") > 0).all() and (plan.subjects.diff("level") > 0).all()
    frame = plan.to_dataframe()
    assert len(frame) == 9 and {"subjects", "fmr_comparisons", "fmr_rate_for_power"} <= set(frame.columns)
    assert "protocol" in plan.attrs and "assumptions" in plan.attrs


def test_both_rates_take_the_larger_size():
    plan = plan_test(fmr=1e-4, fnmr=0.03, expected_rate={"fmr": 3e-5, "fnmr": 0.01}, icc={"fnmr": 0.3},
                     samples_per_subject=5)
    assert plan.subjects.item() == max(plan.fmr_subjects.item(), plan.fnmr_subjects.item())
    assert plan.fnmr_design_effect.item() == pytest.approx(2.2) and plan.fmr_design_effect.item() == 1


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kwargs,match", [
    ({}, "give a claim"),
    ({"fmr": 0.0}, r"\(0, 1\)"),
    ({"fmr": [1e-4, 1.0]}, r"\(0, 1\)"),
    ({"fnmr": -0.01}, r"\(0, 1\)"),
    ({"fmr": 1e-4, "level": 0.4}, "exceed 0.5"),
    ({"fmr": 1e-4, "level": [0.8, 1.2]}, "between 0 and 1"),
    ({"fmr": 1e-4, "expected_rate": 2e-4}, "not below"),
    ({"fmr": 1e-4, "expected_rate": 5e-5, "max_errors": 1}, "not both"),
    ({"fmr": 1e-4, "fnmr": 0.03, "expected_rate": 0.01}, "mapping"),
    ({"fnmr": 0.03, "icc": 1.0}, r"\[0, 1\)"),
    ({"fmr": 1e-4, "cross_comparisons": "pairs"}, "one-per-pair"),
    ({"fmr": 1e-4, "method": "bayes"}, "choose one of"),
    ({"fmr": 1e-4, "method": "beta-binomial"}, "FNMR only"),
    ({"fnmr": 0.03, "method": {"far": "binomial"}}, "keys 'fmr' and 'fnmr'"),
    ({"fnmr": 0.03, "n_simulations": 50}, "n_simulations"),
    ({"fnmr": 0.03, "n_simulations": 1.5}, "n_simulations"),
    ({"fnmr": 0.03, "n_simulations": True}, "n_simulations"),
    ({"fmr": 1e-4, "samples_per_subject": 0}, "whole number"),
    ({"fmr": 1e-4, "instances_per_subject": 1.5}, "whole number"),
    ({"fmr": 1e-4, "max_errors": -1}, "whole number"),
    ({"fmr": 1e-4, "power": 1.0}, "between 0 and 1"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plan_test(**kwargs)
