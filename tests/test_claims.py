"""Claims "rate <= r at confidence c": bounds against scipy, coverage on clustered data, flags, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import bioxr
from bioxr.claims import binomial_upper_bound, claim_test, clustered_upper_bound, zero_error_bound
from bioxr.correlation import DesignWarning, attempt_counts, icc, simulate_clustered_decisions


def scores_with(k_fm: int, n_nm: int, k_fnm: int, n_m: int, *, threshold: float = 0.5):
    """A list from two arrays: k_fm non-mated scores exactly at the threshold (ties are accepted), k_fnm mated below."""
    nonmated = np.r_[np.full(k_fm, threshold), np.linspace(-2, 0.4, n_nm - k_fm)]
    mated = np.r_[np.linspace(-1, 0.49, k_fnm), np.linspace(0.5, 3, n_m - k_fnm)]
    return bioxr.from_scores(mated, nonmated)


# ------------------------------------------------------------------ exact binomial bounds
@pytest.mark.parametrize("level", [0.8, 0.9, 0.95])
@pytest.mark.parametrize("k_fm,k_fnm", [(0, 0), (3, 7), (40, 1)])
def test_binomial_bound_is_one_sided_clopper_pearson(level, k_fm, k_fnm):
    data = scores_with(k_fm, 20_000, k_fnm, 400)
    res = claim_test(data, fmr=1e-3, fnmr=0.05, threshold=0.5, level=level)  # no subjects: auto is binomial
    assert res.bound_method.values.tolist() == ["binomial", "binomial"]
    assert res.errors.values.tolist() == [k_fm, k_fnm]  # ties at the threshold are false matches
    for rate, k, n in (("fmr", k_fm, 20_000), ("fnmr", k_fnm, 400)):
        expected = stats.beta.ppf(level, k + 1, n - k)
        assert res.bound.sel(rate=rate).item() == pytest.approx(expected, rel=1e-12)
        if k == 0:  # exact rule of three: 1 - (1 - c)^(1/N), about -ln(1 - c) / N
            assert res.bound.sel(rate=rate).item() == pytest.approx(1 - (1 - level) ** (1 / n), rel=1e-12)
            assert res.bound.sel(rate=rate).item() * n == pytest.approx(-np.log1p(-level), rel=-np.log1p(-level) / n)
    assert res.units.isnull().all()  # no subject labels


def test_rule_of_three_arithmetic():
    assert zero_error_bound(1000, 0.95) * 1000 == pytest.approx(2.9912, abs=1e-4)  # ~3 / N
    assert zero_error_bound(10_000, 0.8) * 10_000 == pytest.approx(1.6093, abs=1e-4)  # ~1.61 / N
    assert binomial_upper_bound(0, 30_000, level=0.95) == pytest.approx(stats.beta.ppf(0.95, 1, 30_000))
    assert binomial_upper_bound(5, 5, level=0.8) == 1.0


def test_ties_and_distances():
    sim = bioxr.from_scores([1.0, 2.0, 2.0, 3.0], [0.0, 1.0, 2.0, 2.0])
    res = claim_test(sim, fmr=0.9, fnmr=0.9, threshold=2.0, method="binomial")
    assert res.errors.values.tolist() == [2, 1]  # s >= t accepted: two non-mated ties match, mated 1.0 fails
    dist = bioxr.from_scores([-1.0, -2.0, -2.0, -3.0], [0.0, -1.0, -2.0, -2.0], score_kind="distance")
    res = claim_test(dist, fmr=0.9, fnmr=0.9, threshold=-2.0, method="binomial")
    assert res.errors.values.tolist() == [2, 1]  # d <= t accepted


def tied_cube(n_subjects=80, seed=5):
    """A cube of integer similarity scores (heavy ties), subjects on both sides."""
    cube = bioxr.simulate.gaussian(n_subjects=n_subjects, n_samples=3, mated_mean=4.0, seed=seed)
    return np.round(cube * 2)


def test_subject_fmr_counts_ties_at_the_threshold():
    cube = tied_cube()
    values = cube.values
    mated = (cube["subject"] == cube["reference_subject"]).values
    t = 6.0
    res = claim_test(cube, fmr=0.05, threshold=t, n_replicates=400)
    assert res.bound_method.item() == "subject"
    assert res.errors.item() == int((values[~mated] >= t).sum()) > 0
    assert res.bound.item() > res.observed.item()


def test_subject_fmr_bound_is_one_sided_at_the_level():
    """Independent non-mated comparisons: the subject bound sits near the exact one-sided bound at c, below c's two-sided."""
    cube = bioxr.simulate.gaussian(n_subjects=120, n_samples=2, seed=2)
    for level in (0.8, 0.95):
        res = claim_test(cube, fmr=0.01, threshold=2.6, level=level, n_replicates=1000)
        k, n = res.errors.item(), res.trials.item()
        assert 20 < k < 200
        one_sided = stats.beta.ppf(level, k + 1, n - k)
        two_sided = stats.beta.ppf((1 + level) / 2, k + 1, n - k)
        bound = res.bound.item()
        # within half the gap: the Korn-Graubard count's t factor (df about the subjects) costs a little
        assert abs(bound - one_sided) < 0.5 * (two_sided - one_sided), (level, bound, one_sided, two_sided)


def test_zero_false_matches_borrow_the_design_effect():
    cube = bioxr.simulate.gaussian(n_subjects=100, n_samples=2, seed=4)
    res = claim_test(cube, fmr=1e-4, threshold=8.0, level=0.8, n_replicates=400)
    assert res.errors.item() == 0
    assert "borrowed" in res.bound_kind.item()
    n_eff = res.effective_trials.item()
    assert 0.5 * res.trials.item() < n_eff <= res.trials.item()  # independent comparisons: close to all of them
    assert res.bound.item() == pytest.approx(1 - 0.2 ** (1 / n_eff))


# ------------------------------------------------------------------ FNMR: design-aware bounds
def test_fnmr_design_aware_at_zero_errors_counts_subjects():
    counts = xr.Dataset({"errors": ("individual", np.zeros(100, int)),
                         "attempts": ("individual", [50] * 10 + [2] * 90)})
    for method in ("beta-binomial", "icc", "subject"):
        with warnings.catch_warnings():  # a skewed design: the interval functions warn (DesignWarning)
            warnings.simplefilter("ignore", DesignWarning)
            res = clustered_upper_bound(counts, level=0.8, method=method, n_replicates=200)
        assert float(res.bound) == pytest.approx(1 - 0.2 ** (1 / 100))
        assert float(res.units) == 100 and "subjects" in str(res.bound_kind.values)
    binom = clustered_upper_bound(counts, level=0.8, method="binomial")
    assert float(binom.bound) == pytest.approx(1 - 0.2 ** (1 / 680))


@pytest.mark.parametrize("method", ["beta-binomial", "icc", "subject"])
def test_claim_test_forwards_the_fnmr_method(method):
    cube = bioxr.simulate.gaussian(n_subjects=120, n_samples=4, subject_sd=1.2, seed=6)
    res = claim_test(cube, fnmr=0.2, threshold=1.5, method=method, n_replicates=500, seed=3)
    counts = attempt_counts(cube, 1.5)
    direct = clustered_upper_bound(counts, level=0.8, method=method, n_replicates=500, seed=3)
    assert res.bound_method.item() == method
    assert res.bound.item() == pytest.approx(float(direct.bound), rel=1e-12)
    assert res.errors.item() == int(counts.errors.sum()) and res.units.item() == 120
    if method == "icc":  # independently: exact one-sided Clopper-Pearson on the ICC effective count
        stat = icc(counts)
        n_eff, x_eff = float(stat.n_eff), float(stat.p * stat.n_eff)
        assert res.bound.item() == pytest.approx(stats.beta.ppf(0.8, x_eff + 1, n_eff - x_eff), rel=1e-9)
        assert res.effective_trials.item() == pytest.approx(n_eff)
    # correlated attempts: wider than the binomial bound
    binom = claim_test(cube, fnmr=0.2, threshold=1.5, method="binomial")
    assert res.bound.item() > binom.bound.item()


@pytest.mark.parametrize("method", ["beta-binomial", "subject"])
def test_one_sided_coverage_on_clustered_attempts(method):
    """Beta-binomial attempts, rho 0.3: the one-sided bound covers at 80% and 95% (full study in the report)."""
    n, m, rate, replicates = 100, 5, 0.05, 400
    sim = simulate_clustered_decisions(n, m, rate=rate, rho=0.3, seed=21, replicates=replicates)
    measured = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for level in (0.8, 0.95):
            bound = clustered_upper_bound(sim, level=level, method=method, n_replicates=1000, seed=1).bound
            measured[level] = float((bound >= rate).mean())
    print(method, measured)
    assert measured[0.8] >= 0.8 - 0.03 and measured[0.95] >= 0.95 - 0.03
    assert measured[0.8] <= 0.87  # one-sided at c, not two-sided (that would cover about 0.90)


# ------------------------------------------------------------------ the claim result
def test_flags_margin_and_resolution():
    data = scores_with(12, 50_000, 40, 2_000)
    res = claim_test(data, fmr=1e-5, fnmr=0.05, threshold=0.5, level=0.8)
    fmr, fnmr = res.sel(rate="fmr"), res.sel(rate="fnmr")
    assert bool(fmr.rule_of_30) and not bool(fnmr.rule_of_30)  # 12 < 30 <= 40
    assert fmr.resolution.item() == 1 / 50_000 and fnmr.resolution.item() == 1 / 2_000
    assert bool(fmr.beyond_resolution)  # 1e-5 < 1 - 0.2^(1/50000) = 3.2e-5: no outcome could pass
    assert fmr.zero_error_bound.item() == pytest.approx(1 - 0.2 ** (1 / 50_000))
    assert not bool(fmr.passes) and bool(fnmr.passes)
    for row in (fmr, fnmr):
        assert row.margin.item() == pytest.approx(row.claim.item() - row.bound.item())
        assert bool(row.passes) == (row.bound.item() <= row.claim.item())
    assert "FAILS" in fmr.statement.item() and "rule of 30" in fmr.statement.item()
    assert "cannot support it" in fmr.statement.item()
    assert "PASSES" in fnmr.statement.item()
    assert res.attrs["summary"].startswith("FMR <= 1e-05")
    assert res.threshold.item() == 0.5 and res.level.item() == 0.8


def test_cube_and_list_give_the_same_claim():
    cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=3, mated_mean=4.0, seed=8)
    a = claim_test(cube, fmr=5e-3, fnmr=0.1, threshold=2.5, n_replicates=300)
    b = claim_test(bioxr.to_comparisons(cube), fmr=5e-3, fnmr=0.1, threshold=2.5, n_replicates=300)
    xr.testing.assert_identical(a, b)
    assert a.bound_method.values.tolist() == ["subject", "beta-binomial"]  # "auto" with subjects
    assert a.units.values.tolist() == [60, 60] and a.probe_units.sel(rate="fmr").item() == 60


def test_operating_point_when_no_threshold():
    cube = bioxr.simulate.gaussian(n_subjects=80, n_samples=3, mated_mean=4.0, seed=9)
    res = claim_test(cube, fmr=1e-3, fnmr=0.1, method="binomial")
    op = bioxr.verification.fnmr_at_fmr(cube, 1e-3)
    assert res.threshold.item() == float(op.threshold)
    assert res.errors.sel(rate="fnmr").item() == int(op.false_nonmatches)
    assert res.observed.sel(rate="fmr").item() <= 1e-3
    assert "operating point" in res.attrs["threshold_source"]


def test_nist_policy_counts_failures_as_false_nonmatches():
    n = 40
    subj = np.repeat(np.arange(n), n)
    ref = np.tile(np.arange(n), n)
    rng = np.random.default_rng(0)
    score = np.where(subj == ref, 3.0, 0.0) + rng.normal(0, 1, subj.size)
    failed = (subj < 4) & (subj == ref)  # four mated comparisons failed to be acquired
    score[failed] = np.nan
    data = bioxr.comparison_list(score, subject=subj, reference_subject=ref, failed_acquisition=failed)
    kept = claim_test(data, fnmr=0.3, threshold=2.0, method="binomial")
    nist = claim_test(data, fnmr=0.3, threshold=2.0, method="binomial", failure_policy="nist")
    assert nist.errors.item() == kept.errors.item() + 4 and nist.trials.item() == kept.trials.item() + 4
    with pytest.raises(ValueError, match="generalized"):
        claim_test(data, fnmr=0.3, threshold=2.0, failure_policy="iso")


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kwargs,match", [
    ({}, "give a claim"),
    ({"fmr": 0.0, "threshold": 1.0}, r"\(0, 1\)"),
    ({"fmr": 1.0, "threshold": 1.0}, r"\(0, 1\)"),
    ({"fnmr": 1.5, "threshold": 1.0}, r"\(0, 1\)"),
    ({"fnmr": -0.1, "threshold": 1.0}, r"\(0, 1\)"),
    ({"fmr": [1e-3, 1e-4], "threshold": 1.0}, "one rate"),
    ({"fmr": 1e-3, "threshold": 1.0, "level": 0.5}, "exceed 0.5"),
    ({"fmr": 1e-3, "threshold": 1.0, "level": 1.0}, "between 0 and 1"),
    ({"fmr": 1e-3, "threshold": 1.0, "level": 95}, "between 0 and 1"),
    ({"fmr": 1e-3}, "needs a threshold"),
    ({"fnmr": 1e-2}, "needs a threshold"),
    ({"fmr": 1e-3, "threshold": [1.0, 2.0]}, "one finite number"),
    ({"fmr": 1e-3, "threshold": "high"}, "one finite number"),
    ({"fmr": 1e-3, "threshold": 1.0, "method": "bayes"}, "choose one of"),
    ({"fmr": 1e-3, "threshold": 1.0, "method": "icc"}, "FNMR only"),
    ({"fmr": 1e-3, "threshold": 1.0, "method": {"far": "binomial"}}, "keys 'fmr' and 'fnmr'"),
])
def test_bad_input(kwargs, match):
    cube = bioxr.simulate.gaussian(n_subjects=10, seed=0)
    with pytest.raises(ValueError, match=match):
        claim_test(cube, **kwargs)


def test_design_aware_methods_need_subjects():
    data = scores_with(2, 1000, 2, 100)
    with pytest.raises(ValueError, match="subject labels"):
        claim_test(data, fnmr=0.05, threshold=0.5, method="beta-binomial")
    with pytest.raises(ValueError, match="subject labels"):
        claim_test(data, fmr=0.05, threshold=0.5, method="subject")
