"""Coverage of every interval function on the cells it claims (issue 9): the registry in coverage_cells.py.

One parametrised test per registered (function, cell, quantity): seeded
experiments from generators written from the papers (beta-binomial and
logit-normal decisions, Gaussian scores with probe- and reference-subject
effects), each interval checked against the known truth, and an exact
binomial test of "coverage = 95%" on the hit count at alpha = 0.001
(two-sided; the lower side only in discrete cells, where every valid
interval over-covers). The verdict fails for a measured coverage outside
92.6-97.1% at 1,000 experiments (the intervals on counts), 91.3-98.3% at
400 (the bootstrap of counts), 90.7-98.7% at 300 (60-subject score cells)
and 89.5-99.0% at 200 (100-subject cells, identification, FTE/FTA): a true
coverage of 92% or 98% fails about half the time at 1,000, less at the
smaller sizes, so the test is a guard against gross errors (a forwarded
level, a dropped design effect, a [0, 0] interval) and the tables of
``benchmarks/coverage_study.py`` (2,000 experiments a cell, fewer for the
expensive bootstraps) are the measurement.

Cells the current code fails carry ``xfail(strict=False)`` with the
coverage measured at the test's sizes (``KNOWN_FAILURES``); remove the
mark when a fix lands. An entry also passes where it misses but the
function emits, in at least half of the experiments, the DesignWarning its
docs describe for such data (``Outcome.warns``). The fast cells run in the
default suite (about 4-5 minutes of CPU on a 2-core machine); the
``slow`` ones (the 100-subject all-against-all cells, 160,000 comparisons
an experiment, and every EER and FNMR@FMR bootstrap) stand behind the
60-subject cells and take about 15-25 minutes more with ``-m "coverage and
slow"``; ``-m coverage`` selects the registry alone.

A meta-test walks the public topic modules: a function whose name ends in
``_interval``, or whose Returns section names an ``*_interval`` variable,
must be registered (or exempted here with a reason).
"""

from __future__ import annotations

import inspect
import re
import types

import coverage_cells as cc
import numpy as np
import pytest
import xarray as xr
from scipy import stats

import bioxr

#: entry id -> coverage measured at the test's sizes, and in the study (benchmarks/COVERAGE.md); remove an entry
#: when its fix lands (xfail is not strict: a fixed cell passes anyway).
KNOWN_FAILURES: dict[str, str] = {
    "correlation.clustered_interval[design=icc]::bb-unb-n60-pi0.1-rho0::rate":
        "0.974 over 1000 experiments (study: 0.965 over 2000, inside the band): the ICC design effect floored at 1 "
        "with a noisy rho over-covers a little at rho = 0",
}

#: public functions that return an interval-named variable but are not coverage intervals, and why.
EXEMPT = {
    "demographics.group_rates": "each group's FNMR and FMR intervals are bootstrap_curve's at one fixed threshold on "
    "that group's comparisons (bootstrap_curve is registered here)",
    "demographics.margin_of_error": "a band p -+ M under the null of the differential test (its level is a "
    "type-I error, studied in the demographics tests), not an interval for a parameter",
    "design.design_study": "the interval of a ratio of variance estimators across runs (Student t on log ratios) "
    "in the Micheals-Boult design study; its cells need Photohead-style runs, outside this registry (issue 9 item 10)",
    "design.design_test": "the F interval of the same variance ratio, the test of design_study's result (as above)",
    "deveval.dev_eval": "the evaluation FMR/FNMR intervals are bootstrap_curve's at a fixed threshold (registered "
    "here); the HTER interval's coverage is measured in benchmarks/DEV_EVAL.md (0.92-0.95)",
    "systems.paired_difference": "an interval for a difference of two systems on the same subjects: its level is "
    "checked as the type I error of the paired test (3-7%, tests/test_systems.py) and its coverage of a known "
    "shift there",
}


def _param(entry: cc.Entry):
    marks = [pytest.mark.coverage] + ([pytest.mark.slow] if entry.slow else [])
    if entry.id in KNOWN_FAILURES:
        marks.append(pytest.mark.xfail(strict=False, reason=KNOWN_FAILURES[entry.id]))
    return pytest.param(entry, id=entry.id, marks=marks)


@pytest.mark.parametrize("entry", [_param(e) for e in cc.registry()])
def test_coverage(entry, request):
    wanted = request.config.getoption("markexpr") or ""
    if entry.slow and "slow" not in wanted:
        # the 100-subject all-against-all cells and the EER / FNMR@FMR bootstraps: 15-25 minutes together,
        # beyond the suite's budget; the 60-subject cells stand for them by default
        pytest.skip("slow coverage cell (minutes): run with -m 'coverage and slow'")
    outcome = cc.run(entry)
    assert outcome.passed, outcome.summary()


# --------------------------------------------------------------------------
# every interval function is registered
# --------------------------------------------------------------------------


def _topic_modules():
    for name in bioxr.__all__:
        module = getattr(bioxr, name)
        if isinstance(module, types.ModuleType):
            yield name, module


def _returns_interval(fn) -> bool:
    """The numpydoc Returns section of ``fn`` names a variable ``*_interval``."""
    doc = inspect.getdoc(fn) or ""
    section = re.search(r"^Returns\n-+\n(.*?)(?=^\S[^\n]*\n-{3,}\n|\Z)", doc, re.S | re.M)
    return bool(section and re.search(r"``\w+_interval``", section.group(1)))


def interval_functions() -> set[str]:
    found = set()
    for topic, module in _topic_modules():
        for name in getattr(module, "__all__", []):
            fn = getattr(module, name, None)
            if inspect.isfunction(fn) and (name.endswith("_interval") or _returns_interval(fn)):
                found.add(f"{topic}.{name}")
    return found


def test_every_interval_function_is_registered():
    registered = {e.function for e in cc.registry()}
    found = interval_functions()
    missing = sorted(found - registered - set(EXEMPT))
    assert not missing, f"register these in tests/coverage_cells.py (or EXEMPT them with a reason): {missing}"
    stale = sorted((registered | set(EXEMPT)) - found)
    assert not stale, f"registered or exempted but not public interval functions (renamed?): {stale}"


def test_the_walk_sees_interval_variables_in_returns():
    """bootstrap_curve is found by its Returns section (fmr_interval), not by its name."""
    assert "bootstrap.bootstrap_curve" in interval_functions()
    assert "bootstrap.bootstrap_replicates" not in interval_functions()
    assert _returns_interval(bioxr.bootstrap.bootstrap_curve)


def test_every_interval_function_is_checked_where_errors_are_frequent():
    """Each registered function has at least one cell that is not discrete (both sides tested)."""
    two_sided = {e.function for e in cc.registry() if not e.discrete}
    assert two_sided == {e.function for e in cc.registry()}


# --------------------------------------------------------------------------
# the harness: a miscalibrated interval fails, both ways
# --------------------------------------------------------------------------


def _level_entry(level: float, cell) -> cc.Entry:
    def call(batch, seed, n_replicates):
        errors = batch.errors.sum("individual")
        ci = bioxr.intervals.binomial_interval(errors, int(batch.attempts.sum()), method="clopper-pearson", level=level)
        return {"rate": (ci.sel(bound="lower").values, ci.sel(bound="upper").values)}

    return cc.Entry("intervals.binomial_interval", f"level={level}", cell, "rate", cell.pi, call,
                    discrete=cell.expected_errors <= cc.DISCRETE_AT_MOST)


@pytest.mark.parametrize("level, passes", [(0.95, True), (0.90, False), (0.99, False)])
def test_the_binomial_test_rejects_a_wrong_level(level, passes):
    cell = cc.DecisionCell(200, 0.1, 0.0, "balanced")
    assert cc.run(_level_entry(level, cell)).passed is passes


def test_a_discrete_cell_tests_the_lower_side_only():
    cell = cc.DecisionCell(200, 0.001, 0.0, "balanced")  # one expected error in 1,000 attempts
    wide = cc.run(_level_entry(0.99, cell))
    narrow = cc.run(_level_entry(0.50, cell))  # misses at 0 errors (rule of three at 50%: 0.69 / N) and at 3+
    assert cell.expected_errors <= cc.DISCRETE_AT_MOST
    assert wide.coverage > 0.98 and wide.passed
    assert narrow.coverage < 0.9 and not narrow.passed


# --------------------------------------------------------------------------
# the generators: their true values, checked by brute force
# --------------------------------------------------------------------------


@pytest.mark.parametrize("propensity", ["beta", "logit-normal"])
def test_decisions_have_the_stated_rate_and_intra_class_correlation(propensity):
    """E e_i = m_i pi and Var e_i = m_i pi (1 - pi) (1 + (m_i - 1) rho), per attempt count m_i."""
    cell = cc.DecisionCell(200, 0.05, 0.3, "unbalanced", propensity)
    errors = cell.simulate(np.random.default_rng(5), 4000).errors.values  # (experiment, individual)
    m = cell.attempts
    for k in (1, 5, 20):
        e = errors[:, m == k].ravel()
        mean, var = k * cell.pi, k * cell.pi * (1 - cell.pi) * (1 + (k - 1) * cell.rho)
        assert abs(e.mean() - mean) < 4 * np.sqrt(var / e.size)
        if k > 1:
            assert abs(e.var() / var - 1) < 0.08, (k, e.var(), var)


def test_logit_normal_parameters_hold_the_moments():
    mu, s = cc.logit_normal_parameters(0.01, 0.6)
    p = 1 / (1 + np.exp(-(mu + s * np.random.default_rng(1).standard_normal(2_000_000))))
    assert abs(p.mean() / 0.01 - 1) < 0.02
    assert abs(p.var() / (0.01 * 0.99) / 0.6 - 1) < 0.03


def _pooled_rates(cell, thresholds, experiments=60):
    """FMR, FNMR per experiment by direct counting in NumPy (not bioxr): (experiment, threshold)."""
    fm, fnm = [], []
    for i in range(experiments):
        cube = cell.simulate(np.random.default_rng([99, i]))
        s = cube.values
        mated = cube.subject.values[:, None] == cube.reference_subject.values[None, :]
        counted = cube.probe_id.values[:, None] != cube.reference_id.values[None, :]  # self comparisons
        mated_s, non_s = s[mated & counted], s[~mated & counted]
        fm.append([(non_s >= t).mean() for t in thresholds])
        fnm.append([(mated_s < t).mean() for t in thresholds])
    return np.array(fm), np.array(fnm)


@pytest.mark.parametrize("name", ["aaa-60x4-wolves", "aaa-60x4-indep"])
def test_score_cells_have_the_stated_rates(name):
    cell = cc.VERIFICATION_CELLS[name]
    k = cell.n_subjects * cell.n_samples
    named = cell.thresholds()
    t = [named["FMR=0.01"], named["FMR=0.001"], cell.threshold_at_fmr(0.1)]
    fm, fnm = _pooled_rates(cell, t)
    assert cell.n_nonmated == k * (k - cell.n_samples) and cell.n_mated == k * (cell.n_samples - 1)
    for j, tj in enumerate(t):
        for rates, truth in ((fm[:, j], cell.fmr(tj)), (fnm[:, j], cell.fnmr(tj))):
            se = rates.std(ddof=1) / np.sqrt(rates.size)
            assert abs(rates.mean() - truth) < 4 * se + 1e-12, (name, tj, rates.mean(), truth)
    assert cell.fmr(named["FMR=0.01"]) == pytest.approx(0.01)
    t_eer = cell.threshold_at_fmr(cell.eer())
    assert cell.fnmr(t_eer) == pytest.approx(cell.eer(), rel=1e-9)


def test_score_cell_effects_are_crossed():
    """A wolf raises every non-mated score of its probes, a lamb every one against its references."""
    cell = cc.VERIFICATION_CELLS["aaa-60x4-wolves"]
    cube = cell.simulate(np.random.default_rng(3))
    s, subj = cube.values, cube.subject.values
    mated = subj[:, None] == subj[None, :]
    non = np.where(mated, np.nan, s)
    rows = np.array([np.nanmean(non[subj == a]) for a in range(cell.n_subjects)])
    cols = np.array([np.nanmean(non[:, subj == c]) for c in range(cell.n_subjects)])
    # per-subject means have variance sd^2 + (other effect + noise) / comparisons: clearly above the noise alone
    assert 0.3 < rows.var() < 0.8 and 0.3 < cols.var() < 0.8
    flat = cc.VERIFICATION_CELLS["aaa-60x4-indep"].simulate(np.random.default_rng(3)).values
    flat_rows = np.array([np.nanmean(np.where(mated, np.nan, flat)[subj == a]) for a in range(cell.n_subjects)])
    assert flat_rows.var() < 0.01


@pytest.mark.parametrize("name", sorted(cc.IDENTIFICATION_CELLS))
def test_identification_truths_by_brute_force(name):
    """Rank-1 and rank-5 CMC, DIR and FPIR at the cell's threshold, counted on simulated searches."""
    cell = cc.IDENTIFICATION_CELLS[name]
    t = cell.threshold_at_fpir(cc.FPIR_TARGET)
    n = cell.n_subjects
    per = {"cmc1": [], "cmc5": [], "dir": [], "fpir": []}
    for i in range(150):
        cube = cell.simulate(np.random.default_rng([7, i]))
        s, subj = cube.values, cube.subject.values
        enrolled = subj < n
        mate = np.where(enrolled, s[np.arange(s.shape[0]), np.minimum(subj, n - 1)], np.nan)
        others = np.where(np.arange(n)[None, :] == subj[:, None], -np.inf, s)
        ahead = (others > mate[:, None]).sum(axis=1)
        per["cmc1"].append((ahead[enrolled] == 0).mean())
        per["cmc5"].append((ahead[enrolled] < 5).mean())
        per["dir"].append(((ahead == 0) & (mate >= t))[enrolled].mean())
        per["fpir"].append((s[~enrolled].max(axis=1) >= t).mean())
    truths = {"cmc1": cell.cmc(1), "cmc5": cell.cmc(5), "dir": cell.dir(t), "fpir": cell.fpir(t)}
    assert truths["fpir"] == pytest.approx(cc.FPIR_TARGET)
    for key, values in per.items():
        values = np.asarray(values)
        se = values.std(ddof=1) / np.sqrt(values.size)
        assert abs(values.mean() - truths[key]) < 4 * se, (key, values.mean(), truths[key])


@pytest.mark.parametrize("effects", [cc.INDEPENDENT, cc.WOLVES])
def test_identification_truths_in_closed_form_for_tiny_galleries(effects):
    """One or two references: the integrals reduce to normal probabilities (catches N vs N - 1)."""
    one = cc.ScoreCell("one", "gallery", 1, 4, **effects)
    two = cc.ScoreCell("two", "gallery", 2, 4, **effects)
    t = 1.7
    assert one.fpir(t) == pytest.approx(one.fmr(t), rel=1e-9)  # the best of one non-mated score
    assert one.dir(t) == pytest.approx(1 - one.fnmr(t), rel=1e-6)  # no other subject to beat
    sd = np.sqrt(two.mated_sd**2 + two.wolf_sd**2 + two.lamb_sd**2 + 2.0)  # mated - non-mated of the same probe
    assert two.cmc(1) == pytest.approx(stats.norm.cdf(two.mated_mean / sd), rel=1e-9)
    assert two.cmc(2) == pytest.approx(1.0)


def test_experiments_are_seeded_and_independent_of_the_function():
    """The same cell gives every function the same experiments; a rerun gives the same bounds."""
    entry = next(e for e in cc.registry() if e.function == "intervals.binomial_interval")
    a = cc.run(entry, experiments=300)
    cc._CACHE.clear()
    b = cc.run(entry, experiments=300)
    assert (a.hits, a.mean_width) == (b.hits, b.mean_width)
    one = cc.DecisionCell(60, 0.1, 0.3, "balanced").simulate(np.random.default_rng([1, 0]), 10).errors
    two = cc.DecisionCell(60, 0.1, 0.3, "balanced").simulate(np.random.default_rng([1, 0]), 10).errors
    xr.testing.assert_equal(one, two)


def test_the_verdict_is_an_exact_binomial_test():
    entry = next(e for e in cc.registry() if not e.discrete)
    for hits, passes in ((930, True), (920, False), (969, True), (975, False)):
        outcome = cc.Outcome(entry, 1000, 0, hits, 0, 0.1, 0.0, 0.0)
        assert outcome.p_value == pytest.approx(stats.binomtest(hits, 1000, 0.95).pvalue)
        assert outcome.passed is passes, (hits, outcome.p_value)
    assert outcome.mc_interval[0] < 0.975 < outcome.mc_interval[1]


def test_calibration_truths():
    """minDCF at P_target 0.5 of an equal-variance cell is twice its EER (FNMR = FMR at the midpoint); minCllr is
    the Cllr of a fine isotonic (PAV, scikit-learn) recalibration of the two densities, and minDCF a grid minimum."""
    from sklearn.isotonic import IsotonicRegression

    indep, wolves = cc.VERIFICATION_CELLS["aaa-60x4-indep"], cc.VERIFICATION_CELLS["aaa-60x4-wolves"]
    assert indep.min_dcf(0.5) == pytest.approx(2 * indep.eer(), rel=1e-9)
    for cell in (indep, wolves):
        t = np.linspace(-6, 10, 400_001)
        for p in (0.01, 0.1, 0.5):
            grid = (p * stats.norm.cdf((t - cell.mated_mean) / cell.sigma_m)
                    + (1 - p) * stats.norm.sf(t / cell.sigma_n)) / min(p, 1 - p)
            assert cell.min_dcf(p) == pytest.approx(min(grid.min(), 1.0), abs=1e-8)
        x = np.linspace(-14 * cell.sigma_n, cell.mated_mean + 14 * cell.sigma_m, 200_001)
        m = np.diff(stats.norm.cdf((x - cell.mated_mean) / cell.sigma_m))
        n = np.diff(stats.norm.cdf(x / cell.sigma_n))
        keep = (m + n) > 0
        m, n, mid = m[keep], n[keep], (x[1:] + x[:-1])[keep] / 2
        q = IsotonicRegression(y_min=0, y_max=1).fit(mid, m / (m + n), sample_weight=m + n).predict(mid)
        with np.errstate(divide="ignore", invalid="ignore"):
            cost_m = np.where(m > 0, m * -np.log2(q), 0.0)
            cost_n = np.where(n > 0, n * -np.log2(1 - q), 0.0)
        assert cell.min_cllr() == pytest.approx((cost_m.sum() / m.sum() + cost_n.sum() / n.sum()) / 2, rel=1e-4)
