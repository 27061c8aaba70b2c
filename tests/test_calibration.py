"""minDCF, actDCF, Cllr and minCllr against brute force, a plain PAV and scikit-learn; their subject bootstrap."""

from __future__ import annotations

import numpy as np
from scipy import stats
import pytest
import xarray as xr
from sklearn.isotonic import IsotonicRegression

import bioxr
from bioxr import calibration as cal
from bioxr.eer import lower_hull

P = np.array([0.001, 0.01, 0.1, 0.5, 0.9])
CM = np.array([1.0, 10.0, 1.0, 2.0, 1.0])
CF = np.array([1.0, 1.0, 3.0, 1.0, 0.5])


# ------------------------------------------------------------------ independent references
def brute_dcf(mated, nonmated, p, cm, cf):
    """Normalized DCF at every distinct score and +inf (accept s >= t), by a plain loop: (min, t, P_miss, P_fa).

    Scores of -inf (failures under "nist") are never accepted: -inf is no threshold.
    """
    best = (np.inf, None, None, None)
    scores = np.unique(np.concatenate([mated, nonmated]))
    for t in np.append(scores[np.isfinite(scores)], np.inf):
        pm, pf = np.mean(mated < t), np.mean(nonmated >= t)
        value = (cm * p * pm + cf * (1 - p) * pf) / min(cm * p, cf * (1 - p))
        if value < best[0] - 1e-12:  # of equal minima the most lenient
            best = (value, t, pm, pf)
    return best


def plain_pav(y, w):
    """Isotonic regression by merging adjacent violators until none is left (quadratic, obviously right)."""
    blocks = [[float(v), float(x)] for v, x in zip(y, w)]  # [mean, weight]
    members = [[i] for i in range(len(blocks))]
    merged = True
    while merged:
        merged = False
        for i in range(len(blocks) - 1):
            if blocks[i][0] > blocks[i + 1][0]:
                (m1, w1), (m2, w2) = blocks[i], blocks[i + 1]
                blocks[i] = [(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2]
                members[i] += members.pop(i + 1)
                del blocks[i + 1]
                merged = True
                break
    fit = np.empty(len(y))
    for (m, _), idx in zip(blocks, members):
        fit[idx] = m
    return fit


def cllr_of(mated_llr, nonmated_llr):
    """Cllr by the textbook formula (log2), with the PAV convention 0 * inf = 0 at infinite LLRs."""
    cm = np.where(np.isposinf(mated_llr), 0.0, np.log2(1 + np.exp(-np.clip(mated_llr, -700, 700))))
    cn = np.where(np.isneginf(nonmated_llr), 0.0, np.log2(1 + np.exp(np.clip(nonmated_llr, -700, 700))))
    return 0.5 * (cm.mean() + cn.mean())


def reference_min_cllr(mated, nonmated, method="plain"):
    """minCllr: PAV of the labels on the scores (ties pooled), posterior log-odds minus prior log-odds."""
    scores = np.concatenate([mated, nonmated])
    labels = np.r_[np.ones(mated.size), np.zeros(nonmated.size)]
    if method == "sklearn":
        post = IsotonicRegression(increasing=True).fit(scores, labels).predict(scores)
    else:
        u, inv = np.unique(scores, return_inverse=True)
        tw = np.bincount(inv, weights=labels, minlength=u.size)
        w = np.bincount(inv, minlength=u.size).astype(float)
        post = plain_pav(tw / w, w)[inv]
    with np.errstate(divide="ignore"):
        llr = np.log(post) - np.log1p(-post) - np.log(mated.size / nonmated.size)
    return cllr_of(llr[: mated.size], llr[mated.size:])


def tied_cube(seed=3, n=40, k=3):
    """Integer scores with many ties across classes, like the BSSR1 fingerprint matcher."""
    cube = bioxr.simulate.gaussian(n, n_samples=k, mated_mean=1.5, seed=seed)
    return np.round(2 * cube).assign_attrs(cube.attrs)


def split(obj):
    m, n, kind = bioxr._core.split_scores(obj)
    return (-m, -n) if kind == "distance" else (m, n)


@pytest.fixture(scope="module")
def cube():
    return bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=5)


# ------------------------------------------------------------------ minDCF / actDCF
@pytest.mark.parametrize("make", [lambda: bioxr.simulate.gaussian(30, n_samples=2, seed=1), tied_cube])
def test_min_dcf_equals_brute_force(make):
    cube = make()
    m, n = split(cube)
    res = cal.dcf(cube, p_target=P, c_miss=CM, c_fa=CF)
    assert res.min_dcf.dims == ("p_target",)
    np.testing.assert_array_equal(res.p_target, P)
    np.testing.assert_array_equal(res.c_miss, CM)
    np.testing.assert_array_equal(res.c_fa, CF)
    for j in range(P.size):
        value, t, pm, pf = brute_dcf(m, n, P[j], CM[j], CF[j])
        assert res.min_dcf[j].item() == pytest.approx(value, abs=1e-12), j
        assert res.min_dcf_threshold[j].item() == t
        assert res.min_dcf_p_miss[j].item() == pytest.approx(pm, abs=1e-15)
        assert res.min_dcf_p_fa[j].item() == pytest.approx(pf, abs=1e-15)
        assert res.min_dcf_misses[j].item() == round(pm * m.size)
        assert res.min_dcf_false_alarms[j].item() == round(pf * n.size)
    assert res.effective_prior.values == pytest.approx(CM * P / (CM * P + CF * (1 - P)))
    assert res.dcf_normalizer.values == pytest.approx(np.minimum(CM * P, CF * (1 - P)))


def test_min_dcf_rates_are_the_house_rates_at_its_threshold():
    """P_miss and P_fa at the reported threshold are bioxr.verification's FNMR and FMR there (same tie rule)."""
    cube = tied_cube()
    res = cal.dcf(cube, p_target=[0.05, 0.3, 0.7])
    for j in range(3):
        t = res.min_dcf_threshold[j].item()
        rates = bioxr.verification.error_rates(cube, t)
        assert rates.fnmr.item() == res.min_dcf_p_miss[j].item()
        assert rates.fmr.item() == res.min_dcf_p_fa[j].item()


def test_scalar_operating_point_and_vectorised_agree(cube):
    one = cal.dcf(cube, p_target=0.1, c_miss=2.0, c_fa=1.0, llr=True)
    many = cal.dcf(cube, p_target=[0.01, 0.1], c_miss=[1.0, 2.0], c_fa=1.0, llr=True)
    assert one.min_dcf.dims == () and float(one.p_target) == 0.1
    assert float(one.dcf_normalizer) == min(2.0 * 0.1, 0.9) and float(one.effective_prior) == pytest.approx(0.2 / 1.1)
    for v in ("min_dcf", "min_dcf_threshold", "act_dcf", "act_dcf_p_fa"):
        assert one[v].item() == many[v].isel(p_target=1).item()


def test_equal_minima_take_the_most_lenient_threshold():
    # P_miss + P_fa at p = 0.5: 1 at t = 1, 3 and +inf (and 1.5 at t = 2, 4)
    res = cal.dcf(bioxr.from_scores([1.0, 3.0], [2.0, 4.0]), p_target=0.5)
    assert res.min_dcf.item() == 1.0 and res.min_dcf_threshold.item() == 1.0


def test_act_dcf_equals_direct_formula():
    rng = np.random.default_rng(11)
    p, cm, cf = np.array([0.01, 0.2, 0.5]), np.array([1.0, 1.0, 5.0]), np.array([1.0, 2.0, 1.0])
    theta = np.log(cf * (1 - p) / (cm * p))
    mated = np.r_[rng.normal(2, 2, 300), theta]  # LLRs equal to each Bayes threshold: accepted (tie rule)
    nonmated = np.r_[rng.normal(-2, 2, 3000), theta, theta]
    res = cal.dcf(bioxr.from_scores(mated, nonmated), p_target=p, c_miss=cm, c_fa=cf, llr=True)
    for j in range(p.size):
        pm, pf = np.mean(mated < theta[j]), np.mean(nonmated >= theta[j])
        expected = (cm[j] * p[j] * pm + cf[j] * (1 - p[j]) * pf) / min(cm[j] * p[j], cf[j] * (1 - p[j]))
        assert res.act_dcf[j].item() == pytest.approx(expected, rel=1e-12)
        assert res.act_dcf_threshold[j].item() == pytest.approx(theta[j], rel=1e-15)
        assert res.act_dcf_p_miss[j].item() == pm and res.act_dcf_p_fa[j].item() == pf
        assert res.act_dcf_false_alarms[j].item() == np.sum(nonmated >= theta[j])
    assert (res.act_dcf >= res.min_dcf - 1e-12).all()
    assert res.attrs["llr"] == 1 and "Bayes threshold" in res.attrs["act_dcf"]


def test_not_llr_says_so_and_computes_only_min(cube):
    res = cal.dcf(cube)
    assert "act_dcf" not in res and res.attrs["act_dcf"] == cal.NOT_LLR
    c = cal.cllr(cube)
    assert "cllr" not in c and "min_cllr" in c and "not declared log-likelihood" in c.attrs["cllr"]


# ------------------------------------------------------------------ Cllr / minCllr
def test_cllr_equals_direct_formula():
    rng = np.random.default_rng(2)
    mated, nonmated = rng.normal(1.5, 2, 400), rng.normal(-1, 1.5, 2500)
    res = cal.cllr(bioxr.from_scores(mated, nonmated), llr=True)
    direct = 0.5 * (np.mean(np.log2(1 + np.exp(-mated))) + np.mean(np.log2(1 + np.exp(nonmated))))
    assert res.cllr.item() == pytest.approx(direct, rel=1e-12)
    assert res.calibration_loss.item() == pytest.approx(direct - res.min_cllr.item(), rel=1e-12)
    assert 0 < res.min_cllr < res.cllr


@pytest.mark.parametrize("make", [lambda: bioxr.simulate.gaussian(30, n_samples=2, seed=4), tied_cube])
def test_min_cllr_equals_plain_pav_and_sklearn(make):
    cube = make()
    m, n = split(cube)
    got = cal.cllr(cube).min_cllr.item()
    assert got == pytest.approx(reference_min_cllr(m, n, "plain"), rel=1e-10)
    assert got == pytest.approx(reference_min_cllr(m, n, "sklearn"), rel=1e-10)


def test_min_cllr_edge_cases():
    separated = bioxr.from_scores([3.0, 4.0], [0.0, 1.0, 2.0])
    assert cal.cllr(separated).min_cllr.item() == 0.0  # +-inf LLRs cost nothing
    useless = bioxr.from_scores([1.0, 1.0], [1.0, 1.0, 1.0])  # one tied block: the prior, 1 bit
    assert cal.cllr(useless).min_cllr.item() == pytest.approx(reference_min_cllr(np.ones(2), np.ones(3)))
    reversed_ = bioxr.from_scores([0.0, 1.0], [2.0, 3.0, 4.0])  # PAV pools all: no better than the prior
    assert cal.cllr(reversed_).min_cllr.item() == pytest.approx(cal.cllr(useless).min_cllr.item())


# ------------------------------------------------------------------ ROCCH
@pytest.mark.parametrize("make", [lambda: bioxr.simulate.gaussian(40, n_samples=2, seed=9), tied_cube])
def test_min_dcf_is_the_least_dcf_over_the_rocch_vertices(make):
    cube = make()
    det = bioxr.verification.det_curve(cube, points="all")
    x, y = det.fmr.values, det.fnmr.values  # lenient to strict
    hull = lower_hull(x, y)
    assert hull.size < x.size
    res = cal.dcf(cube, p_target=P, c_miss=CM, c_fa=CF)
    for j in range(P.size):
        cost = (CM[j] * P[j] * y + CF[j] * (1 - P[j]) * x) / min(CM[j] * P[j], CF[j] * (1 - P[j]))
        assert res.min_dcf[j].item() == pytest.approx(cost[hull].min(), abs=1e-12)
        assert cost[hull].min() == pytest.approx(cost.min(), abs=1e-12)
    # the PAV blocks are the hull's segments: their corners give the same minima
    m, n = split(cube)
    scores = np.concatenate([m, n])
    flags = np.r_[np.ones(m.size, bool), np.zeros(n.size, bool)]
    runs = cal._Runs(scores, flags)
    bt, bn = cal._pav(np.bincount(runs.run[flags], minlength=runs.n_runs).astype(float),
                      np.bincount(runs.run[~flags], minlength=runs.n_runs).astype(float))
    pm = np.r_[0.0, np.cumsum(bt)] / m.size
    pf = 1 - np.r_[0.0, np.cumsum(bn)] / n.size
    for j in range(P.size):
        cost = (CM[j] * P[j] * pm + CF[j] * (1 - P[j]) * pf) / min(CM[j] * P[j], CF[j] * (1 - P[j]))
        assert res.min_dcf[j].item() == pytest.approx(cost.min(), abs=1e-12)


# ------------------------------------------------------------------ invariances and forms
def test_cube_and_comparison_list_agree(cube):
    lst = bioxr.to_comparisons(cube)
    xr.testing.assert_identical(cal.dcf(cube, p_target=P, llr=True), cal.dcf(lst, p_target=P, llr=True))
    xr.testing.assert_identical(cal.cllr(cube, llr=True), cal.cllr(lst, llr=True))
    a = cal.dcf_interval(cube, p_target=[0.01, 0.1], llr=True, n_replicates=100, seed=2)
    b = cal.dcf_interval(lst, p_target=[0.01, 0.1], llr=True, n_replicates=100, seed=2)
    xr.testing.assert_allclose(a, b, rtol=1e-12)
    c = cal.cllr_interval(cube, llr=True, n_replicates=100, seed=2, nonmated_weights="pigeonhole")
    d = cal.cllr_interval(lst, llr=True, n_replicates=100, seed=2, nonmated_weights="pigeonhole")
    xr.testing.assert_allclose(c, d, rtol=1e-12)


def test_permuting_probes_changes_nothing(cube):
    perm = np.random.default_rng(0).permutation(cube.sizes["probe"])
    other = cube.isel(probe=perm)
    xr.testing.assert_identical(cal.dcf(cube, p_target=P, llr=True), cal.dcf(other, p_target=P, llr=True))
    xr.testing.assert_identical(cal.cllr(cube, llr=True), cal.cllr(other, llr=True))
    a = cal.dcf_interval(cube, p_target=0.05, n_replicates=100, seed=1)
    b = cal.dcf_interval(other, p_target=0.05, n_replicates=100, seed=1)
    xr.testing.assert_allclose(a, b, rtol=1e-12)
    c = cal.cllr_interval(cube, llr=True, n_replicates=100, seed=1)
    d = cal.cllr_interval(other, llr=True, n_replicates=100, seed=1)
    xr.testing.assert_allclose(c, d, rtol=1e-12)


def test_distance_scores_by_orientation(cube):
    dist = (-cube).assign_attrs(cube.attrs, score_kind="distance")
    s, d = cal.dcf(cube, p_target=P), cal.dcf(dist, p_target=P)
    np.testing.assert_array_equal(s.min_dcf, d.min_dcf)
    np.testing.assert_array_equal(s.min_dcf_threshold, -d.min_dcf_threshold)
    assert cal.cllr(dist).min_cllr.item() == cal.cllr(cube).min_cllr.item()
    t = d.min_dcf_threshold[1].item()
    assert bioxr.verification.fnmr(dist, t).fnmr.item() == d.min_dcf_p_miss[1].item()
    a = cal.dcf_interval(cube, p_target=[0.01, 0.2], n_replicates=50, seed=1)
    b = cal.dcf_interval(dist, p_target=[0.01, 0.2], n_replicates=50, seed=1)
    np.testing.assert_array_equal(a.min_dcf_replicates, b.min_dcf_replicates)
    np.testing.assert_array_equal(cal.cllr_interval(cube, n_replicates=50, seed=1).min_cllr_replicates,
                                  cal.cllr_interval(dist, n_replicates=50, seed=1).min_cllr_replicates)
    for f in (cal.dcf, cal.cllr, cal.dcf_interval, cal.cllr_interval):
        with pytest.raises(ValueError, match="similarity scores"):
            f(dist, llr=True)


def test_kept_dims_equal_selections():
    cube = bioxr.simulate.photohead(n_subjects=8, n_collections=3, seed=1)
    res = cal.dcf(cube, p_target=[0.05, 0.2], dim=("subject", "image"))
    c = cal.cllr(cube, dim=("subject", "image"))
    assert res.min_dcf.dims == ("collection", "p_target")
    for k in range(3):
        one = cube.isel(collection=k)
        np.testing.assert_array_equal(res.min_dcf.isel(collection=k), cal.dcf(one, p_target=[0.05, 0.2]).min_dcf)
        assert c.min_cllr.isel(collection=k).item() == cal.cllr(one).min_cllr.item()


def test_failure_policies():
    cube = tied_cube(n=20, k=2)
    fe = np.zeros(cube.sizes["reference"], dtype=bool)
    fe[[2, 7]] = True
    marked = bioxr.failures.mark_failures(cube.where(~xr.DataArray(fe, dims="reference")), enrolment=fe)
    nist = cal.dcf(marked, p_target=P, failure_policy="nist")
    m, n = split(marked)
    n_fail_m, n_fail_n = 2 * 2, 2 * 2 * 19  # a failed reference: its 2 mated and 38 non-mated comparisons
    m_all = np.r_[m, np.full(n_fail_m, -np.inf)]
    n_all = np.r_[n, np.full(n_fail_n, -np.inf)]
    assert int(nist.n_mated) == m_all.size and int(nist.n_nonmated) == n_all.size
    for j in range(P.size):
        assert nist.min_dcf[j].item() == pytest.approx(brute_dcf(m_all, n_all, P[j], 1.0, 1.0)[0], abs=1e-12)
    iso = cal.dcf(marked, p_target=[0.05, 0.3], failure_policy="iso")
    for j in range(2):
        rates = bioxr.verification.error_rates(marked, iso.min_dcf_threshold[j].item(), failure_policy="iso")
        assert iso.min_dcf_p_miss[j].item() == pytest.approx(rates.fnmr.item(), abs=1e-15)
        assert iso.min_dcf_p_fa[j].item() == pytest.approx(rates.fmr.item(), abs=1e-15)
    assert cal.cllr(marked, failure_policy="nist").min_cllr.item() > cal.cllr(marked).min_cllr.item() - 1
    with pytest.raises(ValueError, match="iso"):
        cal.cllr(marked, failure_policy="iso")
    with pytest.raises(ValueError, match="iso"):
        cal.dcf_interval(marked, failure_policy="iso", n_replicates=100)


# ------------------------------------------------------------------ the bootstrap
def _resampled_list(cube, units, draw, scheme):
    """The replicate by hand: the drawn subjects' comparisons, repeated as the draws say."""
    counts = np.bincount(draw, minlength=len(units))
    lst = bioxr.to_comparisons(cube)
    code = {u: i for i, u in enumerate(units)}
    a = np.array([code[u] for u in lst.subject.values])
    c = np.array([code[u] for u in lst.reference_subject.values])
    reps = np.where(a == c, counts[a], counts[a] * (counts[c] if scheme == "pigeonhole" else 1))
    idx = np.repeat(np.arange(lst.sizes["comparison"]), reps)
    return bioxr.comparison_list(lst.score.values[idx], subject=lst.subject.values[idx],
                                 reference_subject=lst.reference_subject.values[idx])


@pytest.mark.parametrize("scheme", cal.NONMATED_WEIGHTS)
def test_replicates_equal_resampling_and_recounting(scheme):
    cube = tied_cube(n=15, k=2)
    units = np.unique(cube.subject.values)
    draws = bioxr.bootstrap.subject_draws(units.size, 3, seed=4)
    ops = {"p_target": [0.05, 0.3], "c_miss": [1.0, 4.0], "c_fa": [2.0, 1.0], "llr": True}
    d = cal.dcf_interval(cube, n_replicates=3, seed=4, nonmated_weights=scheme, **ops)
    xr.testing.assert_identical(d.min_dcf, cal.dcf(cube, **ops).min_dcf)
    xr.testing.assert_identical(d.act_dcf, cal.dcf(cube, **ops).act_dcf)
    c = cal.cllr_interval(cube, llr=True, n_replicates=3, seed=4, nonmated_weights=scheme)
    for r in range(3):
        lst = _resampled_list(cube, units, draws[r], scheme)
        point = cal.dcf(lst, **ops)
        np.testing.assert_allclose(d.min_dcf_replicates[r], point.min_dcf, rtol=1e-12)
        np.testing.assert_allclose(d.act_dcf_replicates[r], point.act_dcf, rtol=1e-12)
        pc = cal.cllr(lst, llr=True)
        assert c.min_cllr_replicates[r].item() == pytest.approx(pc.min_cllr.item(), rel=1e-10)
        assert c.cllr_replicates[r].item() == pytest.approx(pc.cllr.item(), rel=1e-10)


def shifted(point, reps, ratio, scale, level, cap=1.0):
    """The corrected interval of a minimum before its bootstrap-t union, written out from the docs: the scaled
    deviations' percentiles around the estimate, shifted by f b, f = 1 / ((1 + ratio)^gamma - 1) with gamma 1
    (lower bound) and 1/2 (upper bound), b = mean(replicates) - estimate."""
    a = (1 - level) / 2
    b = reps.mean() - point
    d = scale * (reps - reps.mean())
    f_lo, f_up = 1 / ratio, 1 / (np.sqrt(1 + ratio) - 1)
    return np.clip([point - f_lo * b + np.quantile(d, a), point - f_up * b + np.quantile(d, 1 - a)], 0, cap), b


def minimum_union(point, reps, var, ratio, scale, level, cap=1.0):
    """``shifted`` widened to its union with the bootstrap-t of the scaled deviations, shifted alike."""
    (lo, hi), b = shifted(point, reps, ratio, scale, level, cap)
    a = (1 - level) / 2
    u = scale * (reps - reps.mean()) * np.sqrt(np.mean(var) / var)
    f_lo, f_up = 1 / ratio, 1 / (np.sqrt(1 + ratio) - 1)
    t_lo, t_hi = np.clip([point - f_lo * b - np.quantile(u, 1 - a), point - f_up * b - np.quantile(u, a)], 0, cap)
    return np.array([min(lo, t_lo), max(hi, t_hi)])


def union(bounds, center, dev, var, level, cap=np.inf):
    """The union of ``bounds`` with the calibrated bootstrap-t interval, written out: ``center - quantiles of u``
    (clipped to ``[0, cap]``)."""
    var = np.asarray(var, dtype=float)
    u = np.asarray(dev, dtype=float) * np.sqrt(var.mean() / var)
    a = (1 - level) / 2
    lo, hi = np.clip([center - np.quantile(u, 1 - a), center - np.quantile(u, a)], 0, cap)
    return np.array([min(bounds[0], lo), max(bounds[1], hi)])


def min_dcf_union(res, level):
    """dcf_interval's corrected minDCF interval by its formula, prior by prior."""
    reps, point, var = res.min_dcf_replicates.values, res.min_dcf.values, res.min_dcf_replicate_variance.values
    ratio, scale = res.min_dcf_noise_ratio.values, res.min_dcf_scale.values
    return np.stack([minimum_union(point[j], reps[:, j], var[:, j], ratio[j], scale[j], level)
                     for j in range(point.size)])


def cube_factor(res, level):
    """The moment scale without its first factor: sqrt(n / (n - 1)) t_{n-1} / z at the level."""
    n, q = res.attrs["n_units"], 1 - (1 - level) / 2
    return np.sqrt(n / (n - 1)) * stats.t.ppf(q, n - 1) / stats.norm.ppf(q)


def test_intervals_contain_the_point_seeded_and_level_forwarded(cube):
    kw = {"p_target": [0.01, 0.1], "llr": True, "n_replicates": 400}
    with pytest.warns(bioxr._core.FewReplicatesWarning, match="1,000"):  # check_replicates sees the level
        a = cal.dcf_interval(cube, seed=3, **kw)
    assert a.min_dcf_interval.dims == ("p_target", "bound")
    for name in ("min_dcf", "act_dcf"):
        lo, hi = a[f"{name}_interval"].sel(bound="lower"), a[f"{name}_interval"].sel(bound="upper")
        assert ((lo <= a[name]) & (a[name] <= hi) & (lo < hi)).all()
    reps, point = a.min_dcf_replicates.values, a.min_dcf.values
    np.testing.assert_allclose(a.min_dcf_interval.values, min_dcf_union(a, 0.95))
    p, T, N = np.array([0.01, 0.1]), a.n_mated.item(), a.n_nonmated.item()
    r = (1 - p) * T / (p * N)
    np.testing.assert_allclose(a.min_dcf_noise_ratio, (1 + 3 * r) / (1 + r))  # pigeonhole pair weights: variance 3
    assert ((a.min_dcf_scale > 0) & (a.min_dcf_scale <= cube_factor(a, 0.95) + 1e-12)).all()
    np.testing.assert_allclose(a.min_dcf_bias, (reps.mean(axis=0) - point) / ((1 + a.min_dcf_noise_ratio) ** (2 / 3) - 1))
    assert (a.min_dcf_bias < 0).all()  # a minimum is optimistic: the corrected interval moves up
    np.testing.assert_allclose(a.act_dcf_interval.values, np.quantile(a.act_dcf_replicates, [0.025, 0.975], axis=0).T)
    assert "act_dcf_bias" not in a
    plain = cal.dcf_interval(cube, seed=3, interval="percentile", **kw)
    np.testing.assert_allclose(plain.min_dcf_interval.values, np.quantile(reps, [0.025, 0.975], axis=0).T)
    assert "min_dcf_bias" not in plain and "min_dcf_replicate_variance" not in plain
    assert "percentile" in plain.attrs["interval"]
    xr.testing.assert_identical(a, cal.dcf_interval(cube, seed=3, **kw))
    other = cal.dcf_interval(cube, seed=4, **kw)
    assert not np.array_equal(a.min_dcf_replicates.values, other.min_dcf_replicates.values)
    half = cal.dcf_interval(cube, seed=3, level=0.5, **kw)
    assert (half.min_dcf_interval.diff("bound") < a.min_dcf_interval.diff("bound")).all()
    np.testing.assert_allclose(half.min_dcf_interval.values, min_dcf_union(half, 0.5))
    np.testing.assert_allclose(half.act_dcf_interval.values,
                               np.quantile(half.act_dcf_replicates.values, [0.25, 0.75], axis=0).T)
    assert a.attrs["level"] == 0.95 and half.attrs["level"] == 0.5 and a.attrs["nonmated_weights"] == "pigeonhole"

    c = cal.cllr_interval(cube, llr=True, n_replicates=400, seed=3)
    for name in ("min_cllr", "cllr"):
        lo, hi = c[f"{name}_interval"].values
        assert lo <= c[name].item() <= hi and lo < hi
    r = c.min_cllr_replicates.values
    ratio, scale = c.min_cllr_noise_ratio.item(), c.min_cllr_scale.item()
    assert 1 < ratio < 3 and 0 < scale <= cube_factor(c, 0.95)
    np.testing.assert_allclose(c.min_cllr_bias, (r.mean() - c.min_cllr.item()) / ((1 + ratio) ** (2 / 3) - 1))
    np.testing.assert_allclose(c.min_cllr_interval.values, minimum_union(c.min_cllr.item(), r,
                                                                         c.min_cllr_replicate_variance.values, ratio,
                                                                         scale, 0.95))
    q = np.quantile(c.cllr_replicates, [0.025, 0.975])
    np.testing.assert_allclose(c.cllr_interval.values,
                               union(q, c.cllr.item(), c.cllr_replicates - c.cllr, c.cllr_replicate_variance, 0.95))
    plain = cal.cllr_interval(cube, llr=True, n_replicates=400, seed=3, interval="percentile")
    np.testing.assert_allclose(plain.cllr_interval.values, q)
    np.testing.assert_allclose(plain.min_cllr_interval.values, np.quantile(r, [0.025, 0.975]))
    assert "cllr_replicate_variance" not in plain
    xr.testing.assert_identical(c, cal.cllr_interval(cube, llr=True, n_replicates=400, seed=3))
    assert not np.array_equal(c.min_cllr_replicates, cal.cllr_interval(cube, n_replicates=400, seed=5).min_cllr_replicates)
    ch = cal.cllr_interval(cube, llr=True, n_replicates=400, seed=3, level=0.5, interval="percentile")
    assert np.diff(ch.cllr_interval.values) < np.diff(c.cllr_interval.values)
    np.testing.assert_allclose(ch.min_cllr_interval.values, np.quantile(ch.min_cllr_replicates.values, [0.25, 0.75]))


def _small_wolves_cube(n: int, *, seed: int, mated_mean: float):
    """``n`` subjects with 2 probes and 1 reference each; non-mated scores carry the references' effects (SD 0.7)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 1, (2 * n, n)) + rng.normal(0, 0.7, n)[None, :]
    probes = np.repeat(np.arange(n), 2)
    s[np.arange(2 * n), probes] = mated_mean + rng.normal(0, 1.2, 2 * n)
    names = np.array([f"s{i:02d}" for i in range(n)])
    return bioxr.score_cube(s, subject=names[probes], reference_subject=names)


@pytest.mark.parametrize("scheme", ["pigeonhole", "probe"])
def test_replicate_variance_is_the_sandwich_of_finite_difference_influences(scheme):
    """V_b = n / (n - 1) sum_i w_i psi_i^2, psi_i = dCllr / dw_i by central differences of the replicate's
    Cllr (a separate code path) and of its minCllr (PAV refitted: the envelope theorem makes the fixed-cost
    influence exact to first order)."""
    n = 12
    cube = _small_wolves_cube(n, seed=5, mated_mean=2.0)
    boot = cal._Bootstrap(cube, "exclude", scheme, llr=True)
    w = boot.weights(2, seed=1)
    T, N = boot.sums(w)
    value, var_min, var_cllr = boot.min_cllr(w, T, N, True)
    np.testing.assert_allclose(value, [cal._min_cllr_from(T[b], N[b]) for b in range(2)], rtol=1e-12)
    eps = 1e-6
    for b in range(2):
        plus = w[b] + eps * np.eye(n)
        minus = w[b] - eps * np.eye(n)
        tp, np_ = boot.sums(plus)
        tm, nm = boot.sums(minus)
        psi_c = (boot.cllr(plus, tp, np_) - boot.cllr(minus, tm, nm)) / (2 * eps)
        psi_m = np.array([cal._min_cllr_from(tp[i], np_[i]) - cal._min_cllr_from(tm[i], nm[i]) for i in range(n)]) / (2 * eps)
        assert var_cllr[b] == pytest.approx(n / (n - 1) * np.sum(w[b] * psi_c**2), rel=1e-5)
        assert var_min[b] == pytest.approx(n / (n - 1) * np.sum(w[b] * psi_m**2), rel=1e-4)


@pytest.mark.parametrize("scheme", ["pigeonhole", "probe"])
def test_min_dcf_variance_is_the_sandwich_of_finite_difference_influences(scheme):
    """minDCF's studentiser V_b = n / (n - 1) sum_i w_i psi_i^2, psi_i = d minDCF / dw_i by central differences
    of the replicate's minDCF recomputed from its perturbed run sums (the envelope theorem: its threshold held
    fixed is exact to first order), at each prior."""
    n = 12
    cube = _small_wolves_cube(n, seed=6, mated_mean=1.5)
    priors = [0.05, 0.3, 0.5, 0.8]
    res = cal.dcf_interval(cube, p_target=priors, n_replicates=3, seed=2, nonmated_weights=scheme,
                           level=0.5)
    boot = cal._Bootstrap(cube, "exclude", scheme)
    w = boot.weights(3, seed=2)
    p, cm, cf, _ = cal._operating_points(priors, 1.0, 1.0)
    eps = 1e-7
    for b in range(3):
        plus, minus = w[b] + eps * np.eye(n), w[b] - eps * np.eye(n)
        psi = (cal._dcf_from(*boot.sums(plus), boot.runs, p, cm, cf)[0]
               - cal._dcf_from(*boot.sums(minus), boot.runs, p, cm, cf)[0]) / (2 * eps)  # (unit, prior)
        expect = n / (n - 1) * np.sum(w[b][:, None] * psi**2, axis=0)
        np.testing.assert_allclose(res.min_dcf_replicate_variance.values[b], expect, rtol=1e-5)


def _linear_parts(scheme, seed=0):
    """A small crossed cube's bootstrap, random per-comparison costs, and the halved centred influences x."""
    cube = _small_wolves_cube(12, seed=seed, mated_mean=2.0)
    boot = cal._Bootstrap(cube, "exclude", scheme)
    v = boot.variance
    rng = np.random.default_rng(seed)
    cm, cn = rng.exponential(1.0, v.pu_m.size), rng.exponential(1.0, v.pu_n.size)
    xm, xn = (cm - cm.mean()) / cm.size / 2, (cn - cn.mean()) / cn.size / 2
    return boot, cm, cn, xm, xn


@pytest.mark.parametrize("scheme", ["pigeonhole", "probe"])
def test_cost_variance_parts_are_the_dyadic_sums_by_brute_force(scheme):
    """S - P sums x_i x_j over every two comparisons that share a subject (each once, a comparison with itself
    included): the dyadic moment variance; S alone counts the pairs of the same two subjects twice. Under "probe"
    weights a non-mated comparison belongs to its probe subject only (P = 0). And n / (n - 1) S is the sandwich
    that CostVariance gives with every weight 1."""
    boot, cm, cn, xm, xn = _linear_parts(scheme)
    v = boot.variance
    S, P = v.parts(cm, cn)
    x = np.r_[xm, xn]
    if scheme == "pigeonhole":
        sides = [{a} for a in v.pu_m] + [{a, c} for a, c in zip(v.pu_n, v.ru_n)]
    else:
        sides = [{a} for a in v.pu_m] + [{a} for a in v.pu_n]
    share = sum(x[i] * x[j] for i in range(x.size) for j in range(x.size) if sides[i] & sides[j])
    twice = sum(x[i] * x[j] for i in range(x.size) for j in range(x.size) if len(sides[i] & sides[j]) == 2)
    assert S - P == pytest.approx(share, rel=1e-9)
    assert S == pytest.approx(share + (twice if scheme == "pigeonhole" else 0.0), rel=1e-9)
    assert (P > 0) is (scheme == "pigeonhole")
    n = v.n
    assert v(np.ones((1, n)), cm, cn)[0] == pytest.approx(n / (n - 1) * S, rel=1e-9)


def test_a_pigeonhole_replicate_varies_as_s_plus_p():
    """The linear statistic of a pigeonhole replicate (non-mated comparisons weighted by w_a w_c, subjects drawn
    as bioxr draws them) has variance about S + P: the moment variance S - P plus each pair's own noise twice
    more (a weight w_a w_c has variance 3; Owen 2007), the premise of moment_scale. Non-mated costs only (the
    mated ones constant), 30 subjects; Monte Carlo over 20,000 replicates (multinomial draws of 30 subjects
    give a few % less than Poisson's)."""
    cube = _small_wolves_cube(30, seed=4, mated_mean=2.0)
    boot = cal._Bootstrap(cube, "exclude", "pigeonhole")
    v = boot.variance
    cn = np.random.default_rng(4).exponential(1.0, v.pu_n.size)
    S, P = v.parts(np.ones(v.pu_m.size), cn)
    xn = (cn - cn.mean()) / cn.size / 2
    w = boot.weights(20_000, seed=1)
    lin = np.concatenate([(ws[:, v.pu_n] * ws[:, v.ru_n]) @ xn for ws in np.array_split(w, 10)])
    assert np.var(lin) == pytest.approx(S + P, rel=0.1)
    assert np.var(lin) > 1.5 * (S - P)  # not the moment variance: the pigeonhole over-states it


def test_noise_ratios_and_moment_scale():
    from bioxr.calibration._optimism import dcf_noise_ratio, moment_scale, optimism_factor, pav_noise_ratio

    one = np.ones(1)
    # equal local noise from both sides (C_fa (1 - P) T = C_miss P N): (1 + 3) / 2 with pair weights
    assert dcf_noise_ratio(0.5 * one, one, one, 100.0, 100.0, 3.0)[0] == pytest.approx(2.0)
    assert dcf_noise_ratio(0.5 * one, one, one, 100.0, 100.0, 1.0)[0] == pytest.approx(1.0)
    assert dcf_noise_ratio(0.5 * one, one, one, 10.0, 1e6, 3.0)[0] == pytest.approx(1.0, abs=1e-4)  # mated-led
    assert dcf_noise_ratio(0.5 * one, 2 * one, one, 100.0, 100.0, 3.0)[0] == pytest.approx((1 + 1.5) / 1.5)
    assert optimism_factor(1.0, 2 / 3) == pytest.approx(1 / (2 ** (2 / 3) - 1))
    assert optimism_factor(1.0, 0.5) == pytest.approx(1 / (np.sqrt(2) - 1))
    assert optimism_factor(3.0, 1.0) == pytest.approx(1 / 3)
    # one two-class PAV block (t, n) = (1, 1) with T = N: (n + 3 t) / (n + t); one-class blocks do not count
    assert pav_noise_ratio(np.array([0.0, 1.0, 5.0]), np.array([5.0, 1.0, 0.0]), 3.0) == pytest.approx(2.0)
    assert pav_noise_ratio(np.array([0.0, 5.0]), np.array([5.0, 0.0]), 3.0) == 1.0
    factor = np.sqrt(60 / 59) * stats.t.ppf(0.975, 59) / stats.norm.ppf(0.975)
    assert moment_scale(3.0, 1.0, 60, 0.95) == pytest.approx(np.sqrt(2 / 4) * factor)
    assert moment_scale(1.0, 1.0, 60, 0.95) == pytest.approx(np.sqrt(1 / 2) * factor)  # floored at P
    assert moment_scale(0.0, 0.0, 60, 0.95) == pytest.approx(factor)  # costs that do not vary: no correction
    assert moment_scale(3.0, 1.0, 60, 0.5) < moment_scale(3.0, 1.0, 60, 0.95)  # t / z grows with the level


def test_minimum_interval_is_never_zero_width_where_it_is_clipped():
    """An interval clipped flat at 0 or at the cap keeps the replicates' width as a one-sided statement; one that
    is not clipped is the shifted percentiles of the scaled deviations (no studentisers)."""
    from bioxr.calibration._optimism import minimum_interval

    reps = np.linspace(0.0, 0.1, 201)
    width = np.diff(np.quantile(reps, [0.025, 0.975]))[0]
    low, _ = minimum_interval(-1.0, reps, None, level=0.95, noise_ratio=1.0, scale=1.0, cap=1.0)
    np.testing.assert_allclose(low, [0.0, width])
    high, _ = minimum_interval(3.0, reps, None, level=0.95, noise_ratio=1.0, scale=1.0, cap=1.0)
    np.testing.assert_allclose(high, [1.0 - width, 1.0])
    mid, bias = minimum_interval(0.04, reps, None, level=0.95, noise_ratio=1.0, scale=0.5, cap=1.0)
    b = reps.mean() - 0.04
    q = np.quantile(0.5 * (reps - reps.mean()), [0.025, 0.975])
    np.testing.assert_allclose(mid, [0.04 - b + q[0], 0.04 - b / (np.sqrt(2) - 1) + q[1]])
    assert bias == pytest.approx(b / (2 ** (2 / 3) - 1))


def test_studentized_union_never_narrower_and_widens_where_the_spread_grows_with_the_level():
    from bioxr.calibration._studentized import studentized_union

    rng = np.random.default_rng(2)
    for _ in range(50):  # any replicates, any variances: never narrower than the interval it widens
        reps = rng.gamma(rng.uniform(0.5, 5), 1.0, 300)
        var = rng.uniform(0.1, 2.0, 300)
        bounds = np.quantile(reps, [0.025, 0.975])
        out = studentized_union(bounds, reps.mean(), reps, var, level=0.95)
        assert out[0] <= bounds[0] and out[1] >= bounds[1]
    reps = 1.0 + rng.normal(0, 0.1, 2000)
    bounds = np.quantile(reps, [0.025, 0.975])
    flat = studentized_union(bounds, 1.0, reps, np.ones(2000), level=0.95)
    np.testing.assert_allclose(flat, bounds, atol=0.01)  # symmetric replicates, constant variance: nothing to add
    grow = studentized_union(bounds, 1.0, reps, reps**4, level=0.95)  # sd ~ level^2: a low sample hides the tail
    assert grow[1] > bounds[1] + 0.02 and grow[0] == pytest.approx(bounds[0], abs=0.01)
    nan = studentized_union(bounds, 1.0, reps, np.r_[0.0, np.ones(1999)], level=0.95)
    np.testing.assert_array_equal(nan, bounds)  # a replicate without variance: left as it is


def test_cllr_interval_widens_the_percentile_one_upward_on_skewed_costs():
    rng = np.random.default_rng(3)
    n = 60
    s = rng.normal(-3, 1, (n, n))
    lamb = np.where(rng.random(n) < 0.1, -5.0, 0.0)  # a few lambs hold most of the mated cost: skewed Cllr
    s[np.arange(n), np.arange(n)] = 3.0 + lamb + rng.normal(0, 1, n)
    names = np.array([f"s{i:02d}" for i in range(n)])
    cube = bioxr.score_cube(s, subject=names, reference_subject=names)
    kw = {"llr": True, "n_replicates": 500, "seed": 1}
    with pytest.warns(bioxr._core.FewReplicatesWarning):
        default, plain = cal.cllr_interval(cube, **kw), cal.cllr_interval(cube, interval="percentile", **kw)
    for name in ("cllr", "min_cllr"):
        assert np.corrcoef(default[f"{name}_replicates"], default[f"{name}_replicate_variance"])[0, 1] > 0.5
    lo, hi = default.cllr_interval.values
    plo, phi = plain.cllr_interval.values
    assert lo <= plo and hi > phi + 0.2 * (phi - plo)  # a sample that missed a lamb would under-state Cllr
    moved, _ = shifted(default.min_cllr.item(), default.min_cllr_replicates.values, default.min_cllr_noise_ratio.item(),
                       default.min_cllr_scale.item(), 0.95)
    lo, hi = default.min_cllr_interval.values
    assert lo <= moved[0] and hi > moved[1] + 0.1 * (moved[1] - moved[0])
    assert "bootstrap-t" in default.attrs["interval"] and "bootstrap-t" not in plain.attrs["interval"]


def test_pigeonhole_is_wider_than_probe_only():
    cube = bioxr.simulate.gaussian(60, n_samples=2, seed=8)
    a = cal.dcf_interval(cube, p_target=0.01, n_replicates=400, seed=1, nonmated_weights="probe")
    b = cal.dcf_interval(cube, p_target=0.01, n_replicates=400, seed=1, nonmated_weights="pigeonhole")
    assert b.min_dcf_replicates.std() > a.min_dcf_replicates.std()
    assert b.attrs["nonmated_weights"] == "pigeonhole" and "w_probe * w_reference" in b.attrs["resampling"]


def test_never_a_zero_width_interval():
    rng = np.random.default_rng(1)
    n = 30
    s = rng.normal(0, 1, (n, n))
    s[np.arange(n), np.arange(n)] = 10 + rng.normal(0, 1, n)  # perfect separation
    names = np.array([f"s{i}" for i in range(n)])
    cube = bioxr.score_cube(s, subject=names, reference_subject=names)
    d = cal.dcf_interval(cube, p_target=[0.01, 0.5], llr=True, n_replicates=200, seed=0)
    assert (d.min_dcf == 0).all()
    assert (d.min_dcf_bound_kind == bioxr.intervals.BOUND_KINDS[1]).all()
    lo, hi = d.min_dcf_interval.sel(bound="lower"), d.min_dcf_interval.sel(bound="upper")
    assert (lo == 0).all() and (hi > 0).all() and (hi <= 1).all()
    # zero-error bounds on 30 subjects: 1 - 0.025^(1/30) on each rate
    u = 1 - 0.025 ** (1 / n)
    assert hi.sel(p_target=0.5).item() == pytest.approx(min(1.0, 2 * u))
    c = cal.cllr_interval(cube, n_replicates=200, seed=0)
    assert c.min_cllr.item() == 0 and np.isnan(c.min_cllr_interval).all()
    assert c.min_cllr_bound_kind.item().startswith("degenerate")


def test_checks_fail_early(cube):
    for bad in (0.0, 1.0, -0.1, [0.5, 1.2], np.nan):
        with pytest.raises(ValueError, match="p_target"):
            cal.dcf(cube, p_target=bad)
    for name in ("c_miss", "c_fa"):
        for bad in (0.0, -1.0, np.inf, "x"):
            with pytest.raises(ValueError, match=name):
                cal.dcf(cube, **{name: bad})
    with pytest.raises(ValueError, match="lengths"):
        cal.dcf(cube, p_target=[0.1, 0.2], c_miss=[1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="llr"):
        cal.dcf(cube, llr="yes")
    with pytest.raises(ValueError, match="level"):
        cal.dcf_interval(cube, level=95)
    with pytest.raises(ValueError, match="n_replicates"):
        cal.cllr_interval(cube, n_replicates=1)
    with pytest.raises(ValueError, match="interval"):
        cal.cllr_interval(cube, interval="bca", n_replicates=100)
    with pytest.raises(ValueError, match="nonmated_weights"):
        cal.dcf_interval(cube, nonmated_weights="reference", n_replicates=100)
    no_subjects = bioxr.from_scores([2.0, 3.0, 2.5], [0.0, 1.0, -1.0, 0.5])
    assert cal.dcf(no_subjects).min_dcf.item() == 0.0  # the point needs no subjects
    with pytest.raises(ValueError, match="subject"):
        cal.dcf_interval(no_subjects, n_replicates=100)


# ------------------------------------------------------------------ BSSR1
def test_bssr1_face_min_dcf_equals_brute_force(face_csv):
    from bioxr.io import read_matrix_csv

    cube = read_matrix_csv(face_csv, missing=-1)
    m, n = split(cube)
    res = cal.dcf(cube, p_target=[0.01, 0.001])
    ts = np.append(np.unique(np.concatenate([m, n])), np.inf)  # every distinct score a threshold
    pm = np.searchsorted(np.sort(m), ts, side="left") / m.size
    pf = (n.size - np.searchsorted(np.sort(n), ts, side="left")) / n.size
    for j, p in enumerate((0.01, 0.001)):
        cost = pm + (1 - p) / p * pf
        k = int(np.argmin(cost))
        assert res.min_dcf[j].item() == pytest.approx(cost[k], abs=1e-12)
        assert res.min_dcf_threshold[j].item() == ts[k]
    assert int(res.n_mated) == m.size and int(res.n_nonmated) == n.size
