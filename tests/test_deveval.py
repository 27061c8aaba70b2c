"""Dev/eval: thresholds from development scores applied to evaluation scores, the HTER and the EPC.

Checked against bob.measure (numbers computed offline with bob.measure 5 on the
seeded scores below), against brute-force loops over every threshold, and by a
Monte Carlo of the HTER interval's coverage at a fixed threshold.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.stats import norm

import bioxr
from bioxr import deveval


def _bob_scores():
    rng = np.random.default_rng(20261201)
    dn = np.round(rng.normal(0, 1, 400), 2)  # rounded to two decimals: many ties
    dp = np.round(rng.normal(2.2, 1, 120), 2)
    tn = np.round(rng.normal(0.1, 1.1, 500), 2)
    tp = np.round(rng.normal(2.0, 1, 150), 2)
    return bioxr.from_scores(dp, dn), bioxr.from_scores(tp, tn)


# bob.measure.epc(dev_neg, dev_pos, test_neg, test_pos, 11, thresholds=True) on _bob_scores()
BOB_EPC_HTER = [0.4, 0.266, 0.21566666666666667, 0.206, 0.206, 0.168, 0.168, 0.17, 0.2673333333333333,
                0.2673333333333333, 0.49666666666666665]
BOB_EPC_THRESHOLD = [-0.725, 0.245, 0.685, 0.755, 0.755, 1.265, 1.265, 1.425, 1.885, 1.885, 4.91]
# bob.measure eer_threshold / min_hter_threshold / far_threshold(., ., 0.01), then farfrr on the test scores
BOB_POINTS = {("eer", None): (1.065, 0.204, 0.12), ("min-hter", None): (1.265, 0.156, 0.18),
              ("fmr", 0.01): (2.72, 0.016, 0.7866666666666666)}


def test_epc_matches_bob_measure():
    dev, ev = _bob_scores()
    curve = deveval.epc(dev, ev, costs=11, convention="bob")
    # at cost 1 only the FMR counts: every threshold above the highest development non-mated score ties; bioxr
    # takes the one where FMR and FNMR are closest (the most lenient), bob the strictest.
    np.testing.assert_allclose(curve.hter.values[:-1], BOB_EPC_HTER[:-1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve.threshold.values[:-1], BOB_EPC_THRESHOLD[:-1], rtol=0, atol=1e-9)
    assert curve.dev_fmr.values[-1] == 0.0 and curve.hter.values[-1] < BOB_EPC_HTER[-1]


@pytest.mark.parametrize("criterion, value", list(BOB_POINTS))
def test_dev_thresholds_and_eval_rates_match_bob_measure(criterion, value):
    dev, ev = _bob_scores()
    res = deveval.dev_eval(dev, ev, criterion=criterion, value=value, convention="bob", interval="binomial")
    t, far, frr = BOB_POINTS[(criterion, value)]
    assert res.threshold.item() == pytest.approx(t, abs=1e-9)
    assert res.fmr.item() == pytest.approx(far, abs=1e-12)
    assert res.fnmr.item() == pytest.approx(frr, abs=1e-12)


def _brute_rates(mated, nonmated, t):
    return float(np.mean(nonmated >= t)), float(np.mean(mated < t))


@pytest.mark.parametrize("cost", [0.05, 0.3, 0.5, 0.77, 0.95])
def test_weighted_threshold_is_the_brute_force_minimum(cost):
    dev, ev = _bob_scores()
    dm, dn = dev.score.values[dev.mated.values], dev.score.values[~dev.mated.values]
    em, en = ev.score.values[ev.mated.values], ev.score.values[~ev.mated.values]
    grid = np.append(np.unique(dev.score.values), np.inf)
    rates = np.array([_brute_rates(dm, dn, t) for t in grid])
    w = cost * rates[:, 0] + (1 - cost) * rates[:, 1]
    res = deveval.dev_eval(dev, ev, criterion="weighted", value=cost, interval="none")
    f, m = res.dev_fmr.item(), res.dev_fnmr.item()
    assert cost * f + (1 - cost) * m == pytest.approx(w.min(), abs=1e-12)
    t = res.threshold.item()
    assert t in grid  # a score: the house placement
    best = np.flatnonzero(np.isclose(w, w.min(), atol=1e-12))
    gaps = np.abs(rates[best, 0] - rates[best, 1])
    assert abs(f - m) == pytest.approx(gaps.min(), abs=1e-12)  # of equal errors, the most balanced
    assert (res.fmr.item(), res.fnmr.item()) == _brute_rates(em, en, t)  # the evaluation side, recounted


def test_min_hter_is_weighted_at_one_half_and_eer_is_the_nearest_threshold():
    dev, ev = _bob_scores()
    a = deveval.choose_threshold(dev, criterion="min-hter")
    b = deveval.choose_threshold(dev, criterion="weighted", value=0.5)
    assert a.threshold.item() == b.threshold.item()
    e = deveval.choose_threshold(dev, criterion="eer")
    assert e.threshold.item() == float(bioxr.verification.eer(dev, method="nearest").threshold)


def test_targets_and_given_thresholds():
    dev, ev = _bob_scores()
    res = deveval.dev_eval(dev, ev, criterion="fmr", value=[0.1, 0.01], interval="none")
    op = bioxr.verification.fnmr_at_fmr(dev, [0.1, 0.01])
    np.testing.assert_array_equal(res.threshold.values, op.threshold.values)
    np.testing.assert_array_equal(res.dev_fnmr.values, op.fnmr.values)
    np.testing.assert_array_equal(res.target.values, [0.1, 0.01])
    given = deveval.dev_eval(dev, ev, criterion="threshold", value=[1.0, 1.0, 2.5], interval="binomial")
    rates = bioxr.verification.error_rates(ev, [1.0, 2.5])
    np.testing.assert_array_equal(given.fmr.values, rates.fmr.values[[0, 0, 1]])
    np.testing.assert_array_equal(given.hter.values, (given.fmr.values + given.fnmr.values) / 2)
    fn = deveval.dev_eval(dev, ev, criterion="fnmr", value=0.1, interval="none")
    assert fn.dev_fnmr.item() <= 0.1


def test_cube_and_comparison_list_agree_and_distance_scores_mirror():
    dev = bioxr.simulate.gaussian(n_subjects=40, n_samples=2, seed=3)
    ev = bioxr.simulate.gaussian(n_subjects=40, n_samples=2, seed=4)
    kw = dict(criterion="weighted", value=[0.2, 0.5], n_replicates=1000, seed=5)
    a = deveval.dev_eval(dev, ev, **kw)
    b = deveval.dev_eval(bioxr.to_comparisons(dev), bioxr.to_comparisons(ev), **kw)
    for name in ("threshold", "fmr", "fnmr", "hter", "hter_interval", "fmr_interval", "fnmr_interval"):
        np.testing.assert_allclose(a[name].values, b[name].values, rtol=1e-12)
    flip = lambda c: (-c).assign_attrs(c.attrs, score_kind="distance")  # noqa: E731
    d = deveval.dev_eval(flip(dev), flip(ev), criterion="weighted", value=[0.2, 0.5], interval="none")
    np.testing.assert_allclose(d.threshold.values, -a.threshold.values)
    np.testing.assert_allclose(d.hter.values, a.hter.values)
    bob = deveval.dev_eval(flip(dev), flip(ev), criterion="min-hter", convention="bob", interval="none")
    bob_sim = deveval.dev_eval(dev, ev, criterion="min-hter", convention="bob", interval="none")
    assert bob.threshold.item() == pytest.approx(-bob_sim.threshold.item())
    assert bob.hter.item() == bob_sim.hter.item()


def test_permuted_probes_change_nothing():
    dev = bioxr.simulate.gaussian(n_subjects=40, n_samples=2, seed=3)
    ev = bioxr.simulate.gaussian(n_subjects=40, n_samples=2, seed=4)
    perm = np.random.default_rng(0).permutation(ev.sizes["probe"])
    a = deveval.dev_eval(dev, ev, criterion="min-hter", interval="binomial")
    b = deveval.dev_eval(dev.isel(probe=perm[: dev.sizes["probe"]]), ev.isel(probe=perm), criterion="min-hter",
                         interval="binomial")
    xr.testing.assert_allclose(a[["threshold", "fmr", "fnmr", "hter", "hter_interval"]],
                               b[["threshold", "fmr", "fnmr", "hter", "hter_interval"]])


def test_intervals_seeded_level_forwarded_and_contain_the_point():
    dev = bioxr.simulate.gaussian(n_subjects=50, seed=0)
    ev = bioxr.simulate.gaussian(n_subjects=50, seed=1)
    kw = dict(criterion="fmr", value=[0.05, 0.01], n_replicates=1000)
    a = deveval.dev_eval(dev, ev, seed=1, **kw)
    assert a.attrs["interval"] == "subject" and a.attrs["n_units"] == 50
    xr.testing.assert_identical(a, deveval.dev_eval(dev, ev, seed=1, **kw))
    assert not a.hter_interval.equals(deveval.dev_eval(dev, ev, seed=2, **kw).hter_interval)
    narrow = deveval.dev_eval(dev, ev, seed=1, level=0.5, **kw)
    w = lambda r, n: (r[n].sel(bound="upper") - r[n].sel(bound="lower")).values  # noqa: E731
    for name in ("fmr_interval", "fnmr_interval", "hter_interval"):
        assert (w(narrow, name) < w(a, name)).all()
        assert (a[name].sel(bound="lower") <= a[name.replace("_interval", "")]).all()
        assert (a[name].sel(bound="upper") >= a[name.replace("_interval", "")]).all()
    binom = deveval.dev_eval(dev, ev, interval="binomial", **kw)
    assert binom.attrs["interval"] == "binomial" and not np.array_equal(binom.fmr_interval, a.fmr_interval)


def test_zero_hter_has_a_one_sided_interval():
    dev = bioxr.from_scores([5.0, 6.0, 7.0], [0.0, 1.0, 2.0])
    ev = bioxr.from_scores([5.5, 6.5] * 20, [0.5, 1.5] * 50)
    res = deveval.dev_eval(dev, ev, criterion="min-hter", interval="binomial")
    assert res.hter.item() == 0.0
    lo, hi = res.hter_interval.values[0]
    assert lo == 0.0 and hi > 0.0
    assert "one-sided" in res.hter_bound_kind.item()


def test_hter_interval_covers_with_independent_comparisons():
    # FMR(t) = 1 - Phi(t), FNMR(t) = Phi(t - 2.5): the true HTER at a fixed threshold is known
    t, n_exp, hits = 1.6, 150, 0
    truth = (norm.sf(t) + norm.cdf(t - 2.5)) / 2
    rng = np.random.default_rng(11)
    dev = bioxr.from_scores([0.0, t], [t - 1.0])  # only carries the given threshold
    for _ in range(n_exp):
        ev = bioxr.from_scores(rng.normal(2.5, 1, 60), rng.normal(0, 1, 300))
        lo, hi = deveval.dev_eval(dev, ev, criterion="threshold", value=t, interval="binomial").hter_interval.values[0]
        hits += lo <= truth <= hi
    assert 0.91 <= hits / n_exp <= 0.99, hits / n_exp  # 150 experiments; the study is benchmarks/dev_eval.py


def test_hter_interval_covers_with_subject_effects():
    # simulate.gaussian: non-mated N(0, 1); mated N(3 + u_s, 1), u_s ~ N(0, 0.7): FNMR(t) = Phi((t - 3) / sqrt(1.49))
    t, n_exp, hits = 1.8, 80, 0
    truth = (norm.sf(t) + norm.cdf((t - 3.0) / np.sqrt(1.49))) / 2
    dev = bioxr.simulate.gaussian(n_subjects=10, seed=0)
    for e in range(n_exp):
        ev = bioxr.simulate.gaussian(n_subjects=60, n_samples=3, seed=100 + e)
        res = deveval.dev_eval(dev, ev, criterion="threshold", value=t, n_replicates=1000, seed=e)
        lo, hi = res.hter_interval.values[0]
        hits += lo <= truth <= hi
    assert hits / n_exp >= 0.875, hits / n_exp  # 80 experiments: 3 SD below 95%; the study is benchmarks/dev_eval.py


def test_bad_input_is_refused_before_any_work():
    dev, ev = _bob_scores()
    with pytest.raises(ValueError, match="criterion='median'"):
        deveval.dev_eval(dev, ev, criterion="median")
    with pytest.raises(ValueError, match="needs value="):
        deveval.dev_eval(dev, ev, criterion="fmr")
    with pytest.raises(ValueError, match="takes no value"):
        deveval.dev_eval(dev, ev, criterion="eer", value=0.1)
    with pytest.raises(ValueError, match="cost targets"):
        deveval.dev_eval(dev, ev, criterion="weighted", value=1.5)
    with pytest.raises(ValueError, match="interval="):
        deveval.dev_eval(dev, ev, interval="wilson")
    with pytest.raises(ValueError, match="level"):
        deveval.dev_eval(dev, ev, level=95)
    with pytest.raises(ValueError, match="no FNMR-target"):
        deveval.dev_eval(dev, ev, criterion="fnmr", value=0.1, convention="bob")
    dist = bioxr.from_scores([0.1], [0.9], score_kind="distance")
    with pytest.raises(ValueError, match="cannot be carried"):
        deveval.dev_eval(dev, dist, interval="binomial")
    with pytest.raises(ValueError, match="at least 2"):
        deveval.epc(dev, ev, costs=1)
    a = bioxr.simulate.gaussian(n_subjects=10, seed=0)
    both = xr.concat([a, a], dim="system")
    with pytest.raises(ValueError, match="system"):
        deveval.dev_eval(both, a)


def test_of_equal_errors_and_balance_the_more_lenient_threshold():
    # (FMR, FNMR) = (0.5, 0) at threshold 3 and (0, 0.5) at 8: the same HTER, equally unbalanced
    dev = bioxr.from_scores([3.0, 3.0, 4.0, 10.0, 8.0, 11.0], [6.0, 5.0, 4.0, 2.0, 2.0, 0.0])
    assert deveval.choose_threshold(dev, criterion="min-hter").threshold.item() == 3.0
    dist = bioxr.from_scores([-3.0, -3.0, -4.0, -10.0, -8.0, -11.0], [-6.0, -5.0, -4.0, -2.0, -2.0, 0.0],
                             score_kind="distance")
    assert deveval.choose_threshold(dist, criterion="min-hter").threshold.item() == -3.0


def test_hter_interval_width_is_that_of_its_variance():
    # large counts: the interval is close to +-z sd, with sd from the binomial variances or the replicates
    dev = bioxr.simulate.gaussian(n_subjects=10, seed=0)
    ev = bioxr.simulate.gaussian(n_subjects=300, n_samples=4, seed=1)
    z = norm.ppf(0.975)
    b = deveval.dev_eval(dev, ev, criterion="threshold", value=1.5, interval="binomial")
    f, m = b.fmr.item(), b.fnmr.item()
    sd = np.sqrt((f * (1 - f) / b.n_nonmated.item() + m * (1 - m) / b.n_mated.item()) / 4)
    lo, hi = b.hter_interval.values[0]
    assert hi - lo == pytest.approx(2 * z * sd, rel=0.05)
    s = deveval.dev_eval(dev, ev, criterion="threshold", value=1.5, n_replicates=1000, seed=3)
    reps = bioxr.bootstrap.bootstrap_replicates(ev, thresholds=[1.5], n_replicates=1000, seed=3)
    sd = float(((reps.fmr + reps.fnmr) / 2).std("replicate").values[0])
    lo, hi = s.hter_interval.values[0]
    assert hi - lo == pytest.approx(2 * z * sd, rel=0.05)
