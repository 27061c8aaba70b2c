"""Correlated attempts: ICC, effective sample size and FNMR intervals.

Expected values come from brute force written from METHODS.md section 4:
explicit double loops over pairs of attempts ``j != j'`` for rho, loops over
every cell of small score cubes for the counts, the Wilson closed form and
scipy's ``binomtest`` for intervals. The coverage study at the end checks
the statistics of the design-aware interval by simulation.
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import bioxr
from bioxr import verification
from bioxr.correlation import (
    attempt_counts,
    clustered_interval,
    fnmr_interval,
    icc,
    simulate_clustered_decisions,
)
from bioxr.cube import score_cube
from bioxr.intervals import binomial_interval


def examples(n: int):
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------
# brute force from METHODS.md section 4
# --------------------------------------------------------------------------


def brute_icc(decisions: list[list[int]]) -> dict:
    """p, rho, m0, variance and n_eff from decision lists, pairs j != j' looped over explicitly."""
    big_n = sum(len(d) for d in decisions)
    p = sum(sum(d) for d in decisions) / big_n
    num = 0.0
    for d in decisions:
        for j in range(len(d)):
            for k in range(len(d)):
                if j != k:
                    num += (d[j] - p) * (d[k] - p)
    pairs = sum(len(d) * (len(d) - 1) for d in decisions)
    rho = num / (p * (1 - p) * pairs) if 0 < p < 1 and pairs else math.nan
    m0 = sum(len(d) ** 2 for d in decisions) / big_n
    return {"p": p, "rho": rho, "m0": m0, "N": big_n}


def wilson(x, n, level=0.95):
    z = stats.norm.ppf(1 - (1 - level) / 2)
    p = x / n
    centre = (x + z * z / 2) / (n + z * z)
    half = z * math.sqrt(n) / (n + z * z) * math.sqrt(p * (1 - p) + z * z / (4 * n))
    return centre - half, centre + half


def as_counts(decisions) -> xr.Dataset:
    return xr.Dataset(
        {
            "errors": ("individual", [int(sum(d)) for d in decisions]),
            "attempts": ("individual", [len(d) for d in decisions]),
        }
    )


decision_lists = st.lists(st.lists(st.integers(0, 1), min_size=0, max_size=7), min_size=1, max_size=12)


# --------------------------------------------------------------------------
# icc
# --------------------------------------------------------------------------


@given(decisions=decision_lists)
@examples(120)
def test_icc_matches_the_double_loop_over_attempts(decisions):
    big_n = sum(len(d) for d in decisions)
    r = icc(as_counts(decisions))
    if big_n == 0:
        assert np.isnan(float(r.p)) and np.isnan(float(r.n_eff))
        return
    b = brute_icc(decisions)
    assert float(r.p) == pytest.approx(b["p"], abs=1e-12)
    assert float(r.m0) == pytest.approx(b["m0"], rel=1e-12)
    assert int(r.attempts) == big_n and int(r.n_individuals) == sum(1 for d in decisions if d)
    if math.isnan(b["rho"]):
        assert np.isnan(float(r.rho))
    else:
        assert float(r.rho) == pytest.approx(b["rho"], rel=1e-9, abs=1e-12)
    # design effect, n_eff and variance follow from rho (floored at 1; undefined rho: see below)
    if b["m0"] == 1:
        deff = 1.0
    elif math.isnan(b["rho"]):
        deff = b["m0"]  # p in {0, 1}: the conservative rho = 1
    else:
        deff = max(1.0, 1 + (b["m0"] - 1) * min(b["rho"], 1.0))  # a correlation is at most 1
    assert float(r.design_effect) == pytest.approx(deff, rel=1e-9)
    assert float(r.n_eff) == pytest.approx(big_n / deff, rel=1e-9)
    assert float(r.variance) == pytest.approx(b["p"] * (1 - b["p"]) * deff / big_n, rel=1e-9, abs=1e-15)
    assert big_n / b["m0"] - 1e-9 <= float(r.n_eff) <= big_n + 1e-9


def test_icc_worked_example_and_balanced_variance():
    # three individuals, three attempts each: D = [1,1,1], [0,0,0], [1,0,0]
    r = icc(as_counts([[1, 1, 1], [0, 0, 0], [1, 0, 0]]))
    p = 4 / 9
    # pairs j != j': individual 1: 6 (1-p)^2; 2: 6 p^2; 3: 2 (1-p)(-p) * 2 + 2 p^2
    num = 6 * (1 - p) ** 2 + 6 * p**2 + (-4 * (1 - p) * p + 2 * p**2)
    rho = num / (p * (1 - p) * 18)
    assert float(r.rho) == pytest.approx(rho)
    assert float(r.variance) == pytest.approx(p * (1 - p) * (1 + 2 * rho) / 9)


@given(decisions=decision_lists, seed=st.integers(0, 1000))
@examples(40)
def test_icc_ignores_the_order_of_individuals_and_empty_ones(decisions, seed):
    counts = as_counts(decisions)
    if int(counts.attempts.sum()) == 0:
        return
    perm = np.random.default_rng(seed).permutation(counts.sizes["individual"])
    padded = xr.concat([counts.isel(individual=perm), as_counts([[], []])], "individual")
    xr.testing.assert_allclose(icc(counts), icc(padded))


def test_icc_is_undefined_without_variation_or_pairs():
    zero = icc(as_counts([[0, 0, 0], [0, 0], [0]]))
    assert np.isnan(float(zero.rho)) and float(zero.variance) == 0.0
    assert float(zero.n_eff) == pytest.approx(6 / ((9 + 4 + 1) / 6))  # N / m0
    assert "NaN" in zero.attrs["undefined_rho"]
    ones = icc(as_counts([[1, 1], [1]]))
    assert np.isnan(float(ones.rho))
    single = icc(as_counts([[1], [0], [0], [1]]))
    assert np.isnan(float(single.rho)) and float(single.n_eff) == 4.0 and float(single.design_effect) == 1.0


def test_icc_keeps_other_dims_and_refuses_bad_counts():
    e = xr.DataArray([[0, 1, 2], [1, 1, 0]], dims=("threshold", "individual"), coords={"threshold": [1.0, 2.0]})
    m = xr.DataArray([2, 2, 3], dims="individual")
    r = icc(xr.Dataset({"errors": e, "attempts": m}))
    assert r.rho.dims == ("threshold",) and r.m0.dims == ()
    for t, rows in enumerate(([[0, 0], [1, 0], [1, 1, 0]], [[1, 0], [1, 0], [0, 0, 0]])):
        assert float(r.rho[t]) == pytest.approx(brute_icc(rows)["rho"])
    with pytest.raises(ValueError, match="errors <= attempts"):
        icc(xr.Dataset({"errors": ("individual", [3]), "attempts": ("individual", [2])}))
    with pytest.raises(ValueError, match="individual"):
        icc(xr.Dataset({"errors": ("person", [1]), "attempts": ("person", [2])}))
    with pytest.raises(TypeError):
        icc(xr.Dataset({"errors": ("individual", [1])}))


# --------------------------------------------------------------------------
# attempt_counts on score cubes, against a loop over every cell
# --------------------------------------------------------------------------


def small_cube(seed: int, kind: str):
    """(probe, collection, reference) cube: 2 references per subject, a non-enrolled
    subject, self comparisons, NaN cells and a 'group' constant per subject."""
    rng = np.random.default_rng(seed)
    subjects = ["a", "b", "c", "d", "e"]
    ref_subject = ["a", "a", "b", "b", "c", "c", "d", "d"]
    n_probe, n_coll = 9, 3
    probe_subject = rng.choice(subjects, n_probe)
    probe_subject[:4] = ["a", "b", "c", "d"]
    scores = rng.normal(0, 1, (n_probe, n_coll, len(ref_subject)))
    scores[rng.random(scores.shape) < 0.15] = np.nan
    ref_id = [f"r{i}" for i in range(len(ref_subject))]
    probe_id = [f"p{i}" for i in range(n_probe)]
    probe_id[0], probe_id[1] = "r0", "r2"  # probe 0 is reference r0 (subject a), probe 1 is r2 (b)
    group = {"a": "g1", "b": "g2", "c": "g1", "d": "g2", "e": "g1"}
    cube = score_cube(
        scores,
        subject=probe_subject,
        reference_subject=ref_subject,
        dims=("probe", "collection", "reference"),
        coords={"collection": [10, 20, 30], "group": ("probe", [group[s] for s in probe_subject]),
                "weather": ("collection", ["sun", "rain", "fog"])},
        probe_id=probe_id,
        reference_id=ref_id,
        score_kind=kind,
    )
    return cube


def brute_counts(cube, t, by="subject", keep=None):
    """{(kept index, individual): [errors, attempts]} by looping over all cells."""
    out = {}
    s = cube.values
    for p in range(s.shape[0]):
        who = str(cube[by].values[p])
        for c in range(s.shape[1]):
            for r in range(s.shape[2]):
                if cube.subject.values[p] != cube.reference_subject.values[r] or np.isnan(s[p, c, r]):
                    continue
                if cube.probe_id.values[p] == cube.reference_id.values[r]:
                    continue
                wrong = s[p, c, r] > t if cube.attrs["score_kind"] == "distance" else s[p, c, r] < t
                key = (c if keep else None, who)
                e, m = out.get(key, (0, 0))
                out[key] = (e + int(wrong), m + 1)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["similarity", "distance"])
def test_attempt_counts_match_a_loop_over_cells(seed, kind):
    cube = small_cube(seed, kind)
    ts = [-0.5, 0.0, 0.7]
    got = attempt_counts(cube, ts)
    assert got.errors.dims == ("individual", "threshold") and got.attempts.dims == ("individual",)
    for k, t in enumerate(ts):
        exp = brute_counts(cube, t)
        for who in got.individual.values:
            e, m = exp.get((None, str(who)), (0, 0))
            assert int(got.errors.sel(individual=who)[k]) == e
            assert int(got.attempts.sel(individual=who)) == m
    # kept dims: per collection
    kept = attempt_counts(cube, 0.0, dim="probe")
    assert kept.errors.dims == ("collection", "individual")
    assert kept.weather.values.tolist() == ["sun", "rain", "fog"]
    exp = brute_counts(cube, 0.0, keep=True)
    for c in range(3):
        for who in kept.individual.values:
            e, m = exp.get((c, str(who)), (0, 0))
            assert int(kept.errors[c].sel(individual=who)) == e and int(kept.attempts[c].sel(individual=who)) == m
    # totals agree with the verification module
    rates = verification.fnmr(cube, ts)
    np.testing.assert_array_equal(got.errors.sum("individual").values, rates.false_nonmatches.values)
    assert int(got.attempts.sum()) == int(rates.n_mated)


def test_attempt_counts_by_another_coordinate_and_kept_individual_coords():
    cube = small_cube(3, "similarity")
    by_subject = attempt_counts(cube, 0.0)
    assert by_subject.group.dims == ("individual",)  # constant within each subject
    assert "weather" not in by_subject.coords and "probe_id" not in by_subject.coords
    by_group = attempt_counts(cube, 0.0, by="group")
    assert by_group.individual.values.tolist() == ["g1", "g2"]
    exp = brute_counts(cube, 0.0, by="group")
    for g in ("g1", "g2"):
        assert int(by_group.errors.sel(individual=g)) == exp[(None, g)][0]
        assert int(by_group.attempts.sel(individual=g)) == exp[(None, g)][1]
    assert by_group.attrs["by"] == "group"
    with pytest.raises(ValueError, match="kept dims"):
        attempt_counts(cube, 0.0, dim="collection")
    with pytest.raises(ValueError, match="not a coordinate"):
        attempt_counts(cube, 0.0, by="person")
    with pytest.raises(ValueError, match="threshold"):
        attempt_counts(cube, [[0.0]])


def test_attempt_counts_on_a_subject_dimension():
    cube = bioxr.simulate.photohead(5, 2, 4, seed=8)
    counts = attempt_counts(cube, 3.0, dim=("subject", "image"))
    assert counts.errors.dims == ("collection", "individual")
    assert counts.individual.values.tolist() == cube.subject.values.tolist()
    assert "subject_effect" in counts.coords
    # per collection, each subject's 2 recaptured images meet the subject's 2 originals: 4 attempts
    assert (counts.attempts == 4).all()
    np.testing.assert_array_equal(
        counts.errors.sum("individual").values,
        verification.fnmr(cube, 3.0, dim=("subject", "image")).false_nonmatches.values,
    )


# --------------------------------------------------------------------------
# fnmr_interval and clustered_interval
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def correlated_cube():
    return bioxr.simulate.gaussian(n_subjects=120, n_samples=5, subject_sd=1.5, seed=11)


def test_fnmr_interval_against_brute_force(correlated_cube):
    cube = correlated_cube
    ts = [1.0, 2.5]
    res = fnmr_interval(cube, ts, design="icc", method="wilson")
    naive = fnmr_interval(cube, ts, design="binomial", method="wilson")
    assert res.fnmr_interval.dims == ("threshold", "bound")
    assert res.attrs["design"] == "icc" and naive.attrs["design"] == "binomial"
    assert res.attrs["method"] == "wilson" and res.attrs["level"] == 0.95 and res.attrs["by"] == "subject"
    assert fnmr_interval(cube, ts).attrs["design"] == "beta-binomial"
    for k, t in enumerate(ts):
        decisions = {}
        for p in range(cube.sizes["probe"]):
            s = str(cube.subject.values[p])
            r = list(cube.reference_subject.values).index(s)
            decisions.setdefault(s, []).append(int(cube.values[p, r] < t))
        b = brute_icc(list(decisions.values()))
        n_eff = b["N"] / max(1.0, 1 + (b["m0"] - 1) * b["rho"])
        errors = round(b["p"] * b["N"])
        assert float(res.fnmr[k]) == pytest.approx(b["p"])
        assert float(res.rho[k]) == pytest.approx(b["rho"])
        assert float(res.n_eff[k]) == pytest.approx(n_eff)
        assert int(res.errors[k]) == errors and int(res.attempts) == b["N"]
        np.testing.assert_allclose(res.fnmr_interval[k].values, wilson(b["p"] * n_eff, n_eff), rtol=1e-9)
        ci = stats.binomtest(errors, b["N"]).proportion_ci(method="wilson")
        np.testing.assert_allclose(naive.fnmr_interval[k].values, [ci.low, ci.high], rtol=1e-9)
        assert float(naive.n_eff[k]) == b["N"]
        assert b["rho"] > 0.1  # the cube's subject effect makes attempts correlated
    assert (res.fnmr_interval.diff("bound") > naive.fnmr_interval.diff("bound")).all()


def test_fnmr_interval_methods_and_kept_dims():
    cube = bioxr.simulate.photohead(6, 2, 5, seed=2)
    res = fnmr_interval(cube, [2.0, 4.0], method="clopper-pearson", level=0.9, dim=("subject", "image"), design="icc")
    assert res.fnmr_interval.dims == ("collection", "threshold", "bound")
    assert "weather" in res.coords
    for c in range(5):
        counts = attempt_counts(cube.isel(collection=[c]), [2.0, 4.0])
        exp = binomial_interval(counts.errors.sum("individual"), counts.attempts.sum("individual"),
                                method="clopper-pearson", level=0.9, n_eff=icc(counts).n_eff)
        np.testing.assert_allclose(res.fnmr_interval[c].values, exp.values)
    with pytest.raises(ValueError, match="design"):
        fnmr_interval(cube, 2.0, design="cluster")
    with pytest.raises(ValueError, match="method"):
        fnmr_interval(cube, 2.0, method="wald")


def test_zero_errors_use_the_rule_of_three_on_the_conservative_n_eff(correlated_cube):
    res = fnmr_interval(correlated_cube, -20.0)
    assert int(res.errors) == 0 and np.isnan(float(res.rho))
    assert str(res.fnmr_interval_method.values) == "rule of three"
    assert str(res.fnmr_interval.bound_kind.values) == "one-sided upper (zero errors)"
    # balanced: 5 attempts each, the bound counts the 120 subjects
    assert float(res.n_eff) == pytest.approx(120)
    assert float(res.fnmr_interval.sel(bound="upper")) == pytest.approx(-math.log(0.05) / 120)
    naive = fnmr_interval(correlated_cube, -20.0, design="binomial")
    assert float(naive.fnmr_interval.sel(bound="upper")) == pytest.approx(-math.log(0.05) / 600)


def test_one_attempt_each_makes_both_designs_agree():
    counts = simulate_clustered_decisions(300, 1, rate=0.1, rho=0.5, seed=5)
    a, b = clustered_interval(counts, design="icc"), clustered_interval(counts, design="binomial")
    assert np.isnan(float(a.rho))
    xr.testing.assert_allclose(a.rate_interval, b.rate_interval)


def test_unbalanced_attempts():
    m = np.random.default_rng(3).integers(0, 12, size=150)
    sim = simulate_clustered_decisions(150, m, rate=0.15, rho=0.3, seed=9)
    np.testing.assert_array_equal(sim.attempts.values, m)
    assert (sim.errors <= sim.attempts).all()
    decisions = [[1] * int(e) + [0] * int(mi - e) for e, mi in zip(sim.errors.values, m)]
    b = brute_icc(decisions)
    r = clustered_interval(sim, design="icc", method="wilson")
    assert float(r.m0) == pytest.approx((m**2).sum() / m.sum()) and float(r.m0) == pytest.approx(b["m0"])
    assert float(r.rho) == pytest.approx(b["rho"])
    n_eff = b["N"] / max(1.0, 1 + (b["m0"] - 1) * b["rho"])
    np.testing.assert_allclose(r.rate_interval.values, wilson(b["p"] * n_eff, n_eff), rtol=1e-9)


# --------------------------------------------------------------------------
# the simulator
# --------------------------------------------------------------------------


def test_simulator_is_seeded_and_validates():
    a = simulate_clustered_decisions(50, 4, rate=0.2, rho=0.3, seed=1)
    b = simulate_clustered_decisions(50, 4, rate=0.2, rho=0.3, seed=1)
    c = simulate_clustered_decisions(50, 4, rate=0.2, rho=0.3, seed=np.random.default_rng(1))
    xr.testing.assert_identical(a, b)
    assert c.errors.shape == a.errors.shape
    assert a.attrs["beta_a"] == pytest.approx(0.2 * 0.7 / 0.3)
    flat = simulate_clustered_decisions(50, 4, rate=0.2, rho=0.0, seed=1)
    assert (flat.individual_rate == 0.2).all()
    ones = simulate_clustered_decisions(400, 4, rate=0.2, rho=1.0, seed=1)
    assert set(np.unique(ones.errors.values)) <= {0, 4}
    for kwargs in (dict(rate=1.2, rho=0.1), dict(rate=0.1, rho=-0.1), dict(rate=0.1, rho=0.1, replicates=0)):
        with pytest.raises(ValueError):
            simulate_clustered_decisions(10, 3, seed=0, **kwargs)
    with pytest.raises(ValueError):
        simulate_clustered_decisions(10, [1, 2], rate=0.1, rho=0.1, seed=0)
    with pytest.raises(ValueError):
        simulate_clustered_decisions(10, 3, rate=0.1, rho=0.1, seed=None)


@pytest.mark.parametrize(("rate", "rho", "m"), [(0.1, 0.0, 5), (0.1, 0.3, 5), (0.3, 0.6, 10)])
def test_simulated_variance_matches_the_formula(rate, rho, m):
    # V[p] = pi (1 - pi) (1 + (m - 1) rho) / (n m), balanced (METHODS.md section 4)
    n, reps = 100, 4000
    sim = simulate_clustered_decisions(n, m, rate=rate, rho=rho, seed=17, replicates=reps)
    p_hat = sim.errors.sum("individual") / (n * m)
    theory = rate * (1 - rate) * (1 + (m - 1) * rho) / (n * m)
    # the sample variance of 4000 draws is within ~2.3% (sd) of the truth for near-normal p_hat
    assert float(p_hat.var(ddof=1)) == pytest.approx(theory, rel=0.1)
    assert float(p_hat.mean()) == pytest.approx(rate, abs=4 * math.sqrt(theory / reps))
    r = icc(sim)
    assert float(r.rho.mean()) == pytest.approx(rho, abs=0.03)  # the estimator is nearly unbiased here
    assert float(r.variance.mean()) == pytest.approx(theory, rel=0.1)


# --------------------------------------------------------------------------
# the coverage study
# --------------------------------------------------------------------------

N_INDIVIDUALS = 200
REPLICATES = 2000
RATES = (0.05, 0.2)
RHOS = (0.0, 0.1, 0.3, 0.6)
ATTEMPTS = (1, 5, 20)


def exact_wilson_coverage(pi: float, n: int, level: float = 0.95) -> float:
    """Coverage of the Wilson interval for Binomial(n, pi), by summing the pmf (rule of three at 0)."""
    total = 0.0
    for k in range(n + 1):
        lo, hi = (0.0, -math.log(1 - level) / n) if k == 0 else wilson(k, n, level)
        if lo <= pi <= hi:
            total += stats.binom.pmf(k, n, pi)
    return total


def coverage_table() -> pd.DataFrame:
    rows = []
    for i, (pi, rho, m) in enumerate((pi, rho, m) for pi in RATES for rho in RHOS for m in ATTEMPTS):
        sim = simulate_clustered_decisions(N_INDIVIDUALS, m, rate=pi, rho=rho, seed=4000 + i, replicates=REPLICATES)
        row = {"fnmr": pi, "rho": rho, "m": m}
        for design in ("icc", "binomial"):
            res = clustered_interval(sim, design=design, method="wilson")
            lo, hi = res.rate_interval.sel(bound="lower"), res.rate_interval.sel(bound="upper")
            row[design] = float(((lo <= pi) & (pi <= hi)).mean())
            if design == "icc":
                row["mean_n_eff"] = float(res.n_eff.mean())
        row["deff"] = 1 + (m - 1) * rho
        # the naive interval is the ICC one shrunk by sqrt(deff): its normal-theory coverage
        row["naive_theory"] = 2 * stats.norm.cdf(stats.norm.ppf(0.975) / math.sqrt(row["deff"])) - 1
        rows.append(row)
    return pd.DataFrame(rows)


def test_coverage_of_the_icc_interval_and_undercoverage_of_the_binomial_one():
    """Beta-binomial data, 200 individuals, 2000 replicates per cell (Monte Carlo SE <= 0.5 points).

    Statements per cell:

    - m > 1: the ICC interval (Wilson on n_eff) covers 93-97%.
    - m = 1: rho is not identifiable: with one attempt each, decisions of
      different individuals are independent Bernoulli(pi) whatever rho, the
      data are Binomial(200, pi), m0 = 1 and the design effect is 1. Both
      intervals are the plain Wilson interval, whose coverage at n = 200 is
      known exactly (0.967 at pi = 0.05, 0.958 at pi = 0.2; Wilson's
      coverage oscillates with pi, Brown et al. 2001). The check is that the
      simulation agrees with that exact value within 4 Monte Carlo SE.
    - binomial design: as good as ICC at rho = 0; for rho > 0 and m > 1 it
      undercovers, as normal theory predicts (2 Phi(1.96 / sqrt(deff)) - 1,
      within 5 points), down to about 40% at rho = 0.6, m = 20.
    """
    start = time.perf_counter()
    table = coverage_table()
    elapsed = time.perf_counter() - start
    with pd.option_context("display.width", 120, "display.precision", 3):
        print(f"\ncoverage of 95% intervals ({REPLICATES} replicates per cell, {elapsed:.1f} s)")
        print(table.to_string(index=False))
    se = math.sqrt(0.95 * 0.05 / REPLICATES)
    assert se < 0.01
    for row in table.itertuples():
        if row.m == 1:
            exact = exact_wilson_coverage(row.fnmr, N_INDIVIDUALS)
            assert abs(row.icc - exact) < 4 * se, row
            assert row.icc == row.binomial
        else:
            assert 0.93 <= row.icc <= 0.97, row
            assert abs(row.binomial - row.naive_theory) < 0.05, row  # naive theory
        if row.rho == 0:
            assert 0.93 <= row.binomial <= 0.97, row
        elif row.m > 1:
            assert row.binomial < row.icc - 0.02, row
    worst = table[(table.rho == 0.6) & (table.m == 20)]
    assert (worst.binomial < 0.60).all()


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_rule_of_three_upper_bound_covers_when_zero_errors_are_likely(rho):
    """pi = 0.004 with 200 individuals x 5 attempts: no error at all in 2% (rho = 0) to 45% (rho = 0.9)
    of the experiments. The ICC design gives zero-error experiments the bound 3 m0 / N = 3 / 200,
    which holds whatever rho; 3 / N (independence) would miss pi = 0.004 > 3 / 1000 in every one of them."""
    pi, n, m, reps = 0.004, 200, 5, 2000
    sim = simulate_clustered_decisions(n, m, rate=pi, rho=rho, seed=77, replicates=reps)
    res = clustered_interval(sim, design="icc")
    zero = res.errors == 0
    upper = res.rate_interval.sel(bound="upper")
    assert (res.rate_interval_method.where(zero, "rule of three") == "rule of three").all()
    assert np.allclose(upper.where(zero, drop=True), -math.log(0.05) / n)
    assert float((upper >= pi).mean()) >= 0.95
    if rho == 0.9:
        assert float(zero.mean()) > 0.3  # zero errors are likely here
        naive = clustered_interval(sim, design="binomial").rate_interval.sel(bound="upper")
        assert float((naive >= pi).mean()) < 0.7


def test_rule_of_three_worst_case_any_rho():
    """pi just above 3 / n: every zero-error experiment misses, yet that happens with chance
    <= (1 - pi)^n < 5%, even at rho = 1 (each individual fails with chance pi)."""
    n, m = 200, 5
    pi = 3.2 / n
    for i, rho in enumerate((0.0, 0.6, 1.0)):
        sim = simulate_clustered_decisions(n, m, rate=pi, rho=rho, seed=90 + i, replicates=3000)
        res = clustered_interval(sim, design="icc")
        zero_rate = float((res.errors == 0).mean())
        assert zero_rate <= (1 - pi) ** n + 3 * math.sqrt(0.05 / 3000)
        assert float((res.rate_interval.sel(bound="upper") >= pi).mean()) >= 0.95


# --------------------------------------------------------------------------
# zero and all errors, the beta-binomial design, design warnings
# --------------------------------------------------------------------------

SKEWED = [50] * 10 + [2] * 90


def skewed_counts(errors):
    return xr.Dataset({"errors": ("individual", errors), "attempts": ("individual", SKEWED)})


@pytest.mark.parametrize("design", ["beta-binomial", "icc"])
def test_zero_errors_bound_counts_the_individuals_in_a_skewed_protocol(design):
    # 10 people x 50 attempts + 90 x 2: N / m0 = 18.2 would give 0.164; the 100 people give -ln(0.05) / 100
    with pytest.warns(bioxr.correlation.DesignWarning, match="10 of 100 individuals hold 74% of the attempts: the "
                      "effective number of individuals is 18"):
        res = clustered_interval(skewed_counts(np.zeros(100, int)), design=design, level=0.9)
    assert float(res.rate_interval.sel(bound="upper")) == pytest.approx(-math.log(0.1) / 100, rel=1e-12)
    assert float(res.rate_interval.sel(bound="lower")) == 0.0 and float(res.n_eff) == 100
    assert str(res.rate_interval.bound_kind.values) == "one-sided upper (zero errors)"
    assert "individuals" in res.attrs["zero_error_rule"] and "one-sided" in res.attrs["bound_rule"]


def test_all_errors_give_the_one_sided_lower_bound_over_the_individuals():
    counts = as_counts([[1, 1, 1]] * 40)
    res = clustered_interval(counts)
    assert res.rate_interval.values.tolist() == pytest.approx([1 + math.log(0.05) / 40, 1.0])
    assert str(res.rate_interval.bound_kind.values) == "one-sided lower (all errors)"
    assert (res.rate_interval.diff("bound") > 0).all()


def brute_posterior_bounds(errors, attempts, level=0.95):
    """The beta-binomial design written out: scipy's betabinom, quadrature over rho, a fine grid in pi."""
    from scipy import integrate

    errors, attempts = np.asarray(errors), np.asarray(attempts)

    def likelihood(pi, rho):
        if rho == 0:
            return math.exp(stats.binom.logpmf(errors, attempts, pi).sum())
        s = (1 - rho) / rho
        return math.exp(stats.betabinom.logpmf(errors, attempts, pi * s, (1 - pi) * s).sum())

    p = errors.sum() / attempts.sum()
    pis = np.geomspace(p / 200, min(0.999, p * 40), 400)
    marginal = np.array([integrate.quad(lambda r: likelihood(pi, r) * 2 * (1 - r), 0, 0.98, limit=200,
                                        points=[1e-3, 1e-2, 0.1])[0] for pi in pis])
    out = []
    for a, q in ((0.0, (1 - level) / 2), (0.5, 1 - (1 - level) / 2)):
        dens = marginal * pis ** (a - 1) * (1 - pis) ** (a - 1)  # prior density in pi
        cdf = integrate.cumulative_trapezoid(dens, pis, initial=0)
        out.append(float(np.interp(q, cdf / cdf[-1], pis)))
    return out


@pytest.mark.parametrize(("errors", "attempts", "level"), [
    ([3, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 0], [5] * 12, 0.95),
    ([0, 1, 0, 0, 4, 0, 0, 1, 0, 0], [2, 2, 3, 5, 8, 8, 1, 4, 6, 2], 0.8),
])
def test_beta_binomial_bounds_match_quadrature(errors, attempts, level):
    got = clustered_interval(as_counts([[1] * e + [0] * (m - e) for e, m in zip(errors, attempts)]), level=level)
    assert str(got.rate_interval_method.values) == "beta-binomial" and got.attrs["level"] == level
    np.testing.assert_allclose(got.rate_interval.values, brute_posterior_bounds(errors, attempts, level), rtol=0.01)


def coverage_hits(counts, pi, *, side="both"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bioxr.correlation.DesignWarning)
        ci = clustered_interval(counts).rate_interval
    lo, hi = ci.sel(bound="lower").values, ci.sel(bound="upper").values
    ok = (lo <= pi) if side == "lower" else (lo <= pi) & (pi <= hi)
    return int(ok.sum()), ok.size


def assert_coverage_within(hits, n, low=0.92, high=0.98):
    """Fails when a binomial test on the hit count says the coverage lies outside [low, high]."""
    assert stats.binomtest(hits, n, low, alternative="less").pvalue > 0.001, (hits, n)
    if high is not None:
        assert stats.binomtest(hits, n, high, alternative="greater").pvalue > 0.001, (hits, n)


@pytest.mark.parametrize(("pi", "rho", "attempts", "seed"), [
    (0.01, 0.6, [5] * 200, 1),  # the cell of issue 9: the moment estimate of rho is low, n_eff intervals cover ~0.90
    (0.01, 0.3, [2] * 100 + [8] * 100, 2),
    (0.1, 0.6, [5] * 200, 3),
    (0.05, 0.3, SKEWED, 4),
])
def test_beta_binomial_design_covers_at_small_rates(pi, rho, attempts, seed):
    counts = simulate_clustered_decisions(len(attempts), np.asarray(attempts), rate=pi, rho=rho, seed=seed,
                                          replicates=800)
    assert_coverage_within(*coverage_hits(counts, pi))


def test_tiny_expected_counts_cover_at_least_on_the_lower_side():
    # N pi = 1: discreteness makes every valid interval over-cover; only too little coverage is a fault
    counts = simulate_clustered_decisions(200, 5, rate=0.001, rho=0.3, seed=5, replicates=800)
    assert_coverage_within(*coverage_hits(counts, 0.001), high=None)


def test_few_erring_individuals_warn():
    with pytest.warns(bioxr.correlation.DesignWarning, match="errors come from only 2 individual"):
        clustered_interval(as_counts([[1, 1, 0]] * 2 + [[0, 0, 0]] * 80))
    with warnings.catch_warnings():
        warnings.simplefilter("error", bioxr.correlation.DesignWarning)
        clustered_interval(as_counts([[1, 0, 0]] * 10 + [[0, 0, 0]] * 80))  # ten individuals erred: no warning


def test_bad_levels_are_refused_before_counting(correlated_cube):
    for level in (0, 1, -0.5, 95):
        with pytest.raises(ValueError, match="level"):
            fnmr_interval(correlated_cube, 1.0, level=level)
        with pytest.raises(ValueError, match="level"):
            clustered_interval(as_counts([[1, 0]] * 5), level=level)


# --------------------------------------------------------------------------
# invariances and the teaching notebook
# --------------------------------------------------------------------------


def test_permuting_probes_and_references_changes_nothing(correlated_cube):
    rng = np.random.default_rng(0)
    cube = correlated_cube
    shuffled = cube.isel(probe=rng.permutation(cube.sizes["probe"]),
                         reference=rng.permutation(cube.sizes["reference"]))
    xr.testing.assert_identical(fnmr_interval(cube, [0.5, 1.5]), fnmr_interval(shuffled, [0.5, 1.5]))


def test_dask_cube_gives_the_in_memory_counts():
    pytest.importorskip("dask")
    cube = bioxr.simulate.photohead(4, 2, 6, seed=3)
    lazy = bioxr.simulate.photohead(4, 2, 6, seed=3, chunks={"collection": 2})
    xr.testing.assert_identical(
        fnmr_interval(cube, [2.0, 3.0], dim=("subject", "image")),
        fnmr_interval(lazy, [2.0, 3.0], dim=("subject", "image")),
    )


NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "04_correlated_attempts.ipynb"


def test_notebook_is_committed_clean_and_runs():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "commit the notebook without outputs"
    assert not any("def " in c.source for c in code), "no function definitions in notebooks"
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    text = "".join(o.get("data", {}).get("text/plain", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs)
    assert "rule of three" in text and "icc" in text


def test_icc_design_warns_where_a_few_balanced_individuals_hold_the_errors():
    """Balanced attempts, errors from 4 of 200 people: the moment rho rests on them; the ICC design says so."""
    counts = xr.Dataset({"errors": ("individual", [5, 4, 1, 1] + [0] * 196), "attempts": ("individual", [5] * 200)})
    with pytest.warns(bioxr.correlation.DesignWarning, match="moment estimate of rho behind the ICC design effect"):
        clustered_interval(counts, design="icc")
    with warnings.catch_warnings():
        warnings.simplefilter("error", bioxr.correlation.DesignWarning)
        clustered_interval(counts)  # the default design integrates over rho: nothing to warn about
        spread = counts.assign(errors=("individual", [1] * 11 + [0] * 189))  # 11 people, one error each
        clustered_interval(spread, design="icc")
