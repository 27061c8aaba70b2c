"""Demographic differentials (METHODS.md section 5): formulas against brute force,
both nulls' draws recomputed by hand, the level of each null where groups share
one FNMR but differ in attempts per person and correlation (a binomial test on
the rejection count, which the exchangeable null must fail), power, the trends
of the margin of error, seeding and errors."""

from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import optimize, stats

import bioxr
from bioxr import demographics as dm
from bioxr.correlation import simulate_clustered_decisions
from bioxr.demographics import _null
from bioxr.simulate import _entropy, _rng


def _counts(errors, attempts, groups):
    return xr.Dataset(
        {"errors": ("individual", np.asarray(errors)), "attempts": ("individual", np.asarray(attempts))},
        coords={"individual": np.arange(len(groups)), "group": ("individual", np.asarray(groups))},
    )


def _random_counts(seed=0, sizes=(5, 7, 4)):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.array(["x", "y", "z"][: len(sizes)]), sizes)
    rng.shuffle(groups)
    m = rng.integers(1, 9, groups.size)
    e = rng.binomial(m, 0.3)
    return _counts(e, m, groups)


def _grouped(sim, n_groups, rates=None):
    """Give a beta-binomial simulation a group label (in turn) on individual."""
    labels = np.array([f"g{k}" for k in range(n_groups)])[np.arange(sim.sizes["individual"]) % n_groups]
    return sim.assign_coords(group=("individual", labels))


@pytest.fixture(autouse=True)
def _quiet_small_groups():
    """Most fixtures here are tiny on purpose; the warning has its own test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dm.SmallGroupWarning)
        yield


# ---------------------------------------------------------------- brute force


def _brute_f(e, m, g):
    """Attempt-weighted one-way ANOVA F on individual rates, by explicit loops."""
    labels = sorted(set(g))
    big_p = sum(e) / sum(m)
    between = within = 0.0
    for lab in labels:
        members = [i for i in range(len(g)) if g[i] == lab]
        eg = sum(e[i] for i in members)
        mg = sum(m[i] for i in members)
        pg = eg / mg
        between += mg * (pg - big_p) ** 2
        for i in members:
            within += m[i] * (e[i] / m[i] - pg) ** 2
    n, k = len(g), len(labels)
    return (between / (k - 1)) / (within / (n - k))


def _brute_dev(e, m, g):
    labels = sorted(set(g))
    big_p = sum(e) / sum(m)
    d = r = 0.0
    for lab in labels:
        pg = sum(e[i] for i in range(len(g)) if g[i] == lab) / sum(m[i] for i in range(len(g)) if g[i] == lab)
        d = max(d, abs(pg - big_p))
        r = max(r, 1.0 if pg == big_p else (np.inf if pg == 0 else max(pg / big_p, big_p / pg)))
    return d, r


def _brute_variances(e, m, g):
    """Pooled p, group rates and V_g: CR1 variance of a ratio, floored at the binomial, by loops."""
    labels = sorted(set(g))
    big_p = sum(e) / sum(m)
    rates, var = {}, {}
    for lab in labels:
        idx = [i for i in range(len(g)) if g[i] == lab]
        mg = sum(m[i] for i in idx)
        pg = sum(e[i] for i in idx) / mg
        n = len(idx)
        if n == 1:
            v = big_p * (1 - big_p) * m[idx[0]] ** 2 / mg**2
        else:
            v = max(n / (n - 1) * sum((e[i] - pg * m[i]) ** 2 for i in idx) / mg**2, big_p * (1 - big_p) / mg)
        rates[lab], var[lab] = pg, v
    return big_p, rates, var


def _brute_w(e, m, g):
    _, rates, var = _brute_variances(e, m, g)
    pw = sum(rates[k] / var[k] for k in rates) / sum(1 / var[k] for k in rates)
    return sum((rates[k] - pw) ** 2 / var[k] for k in rates)


def _brute_z(e, m, g):
    """Per-group sd of p_g - p (p the attempt-weighted mean of the p_g) and Z = max |p_g - p| / sd."""
    big_p, rates, var = _brute_variances(e, m, g)
    total = sum(m)
    share = {k: sum(m[i] for i in range(len(g)) if g[i] == k) / total for k in rates}
    sd = {}
    for k in rates:
        sd[k] = np.sqrt(var[k] * (1 - share[k]) ** 2 + sum(share[h] ** 2 * var[h] for h in rates if h != k))
    z = max(abs(rates[k] - big_p) / sd[k] for k in rates)
    return z, sd


def _brute_zr(e, m, g):
    """Z_r = max_g p (1 - 1 / r_g) / sd_g, r_g = max(p_g / p, p / p_g): the smallest c with every r_g <= p / (p - c sd_g)."""
    big_p, rates, _ = _brute_variances(e, m, g)
    _, sd = _brute_z(e, m, g)
    out = 0.0
    for k, pg in rates.items():
        r = 1.0 if pg == big_p else (np.inf if pg == 0 else max(pg / big_p, big_p / pg))
        out = max(out, big_p * (1 - 1 / r) / sd[k])
    return out


def _tilted_cumulative(e, m, p):
    """A group's tilted weights by root finding (brentq), as cumulative shares."""
    u = e - p * m
    t = optimize.brentq(lambda t: float((u * np.exp(t * u - np.max(t * u))).sum()), -60, 60, xtol=1e-15)
    w = np.exp(t * u - np.max(t * u))
    return np.cumsum(w) / w.sum()


def _equal_rate_draws(counts, n_rep, seed):
    """The equal-rate null by hand: sorted data and (n_rep, n) indices drawn from each group's tilted weights."""
    e, m, g = (np.asarray(counts[v].values) for v in ("errors", "attempts", "group"))
    order = np.argsort(g, kind="stable")
    e, m, g = e[order].astype(float), m[order].astype(float), g[order]
    p = e.sum() / m.sum()
    u = _rng(_entropy(seed), _null._TILT_KEY).random((n_rep, len(g)))
    idx = np.empty((n_rep, len(g)), dtype=int)
    for lab in sorted(set(g)):
        pos = np.flatnonzero(g == lab)
        cum = _tilted_cumulative(e[pos], m[pos], p)
        idx[:, pos] = pos[0] + np.searchsorted(cum, u[:, pos], side="right")
    return e, m, g, idx


def test_statistic_and_group_rates_match_brute_force():
    counts = _random_counts(1)
    e, m, g = (counts[v].values.tolist() for v in ("errors", "attempts", "group"))
    res = dm.differential_test(counts, null="exchangeable", n_replicates=9, seed=0)
    assert float(res.statistic) == pytest.approx(_brute_f(e, m, g), rel=1e-12)
    assert int(res.df_between) == 2 and int(res.df_within) == len(g) - 3
    for lab in ("x", "y", "z"):
        members = [i for i in range(len(g)) if g[i] == lab]
        assert int(res.errors.sel(group=lab)) == sum(e[i] for i in members)
        assert int(res.attempts.sel(group=lab)) == sum(m[i] for i in members)
        assert int(res.n_individuals.sel(group=lab)) == len(members)
        assert float(res.fnmr.sel(group=lab)) == pytest.approx(sum(e[i] for i in members) / sum(m[i] for i in members))
    assert float(res.pooled_fnmr) == pytest.approx(sum(e) / sum(m))

    wald = dm.differential_test(counts, n_replicates=9, seed=0)  # equal-rate, the default
    assert wald.attrs["null"] == "equal-rate" and "share one FNMR" in wald.attrs["h0"]
    assert float(wald.statistic) == pytest.approx(_brute_w(e, m, g), rel=1e-12)
    _, _, var = _brute_variances(e, m, g)
    for lab in ("x", "y", "z"):
        assert float(wald.standard_error.sel(group=lab)) == pytest.approx(np.sqrt(var[lab]), rel=1e-12)
    xr.testing.assert_identical(wald.fnmr, res.fnmr)

    moe = dm.margin_of_error(counts, n_replicates=9, seed=0)
    z, sd = _brute_z(e, m, g)
    assert float(moe.statistic) == pytest.approx(z, rel=1e-12)
    for lab in ("x", "y", "z"):
        assert float(moe.difference_se.sel(group=lab)) == pytest.approx(sd[lab], rel=1e-12)


def test_variance_floor_and_one_person_group():
    """The binomial floor binds for a group without spread; a group of one gets rho = 1."""
    counts = _counts([1, 1, 1, 1, 0, 3, 2, 4], [5, 5, 5, 5, 6, 6, 6, 9], list("AAAABBBC"))
    e, m, g = (counts[v].values.tolist() for v in ("errors", "attempts", "group"))
    p, _, var = _brute_variances(e, m, g)
    assert var["A"] == pytest.approx(p * (1 - p) / 20)  # all of A at rate 0.2: CR1 is 0
    assert var["C"] == pytest.approx(p * (1 - p))
    res = dm.differential_test(counts, n_replicates=9, seed=0)
    assert float(res.statistic) == pytest.approx(_brute_w(e, m, g), rel=1e-12)
    assert float(res.standard_error.sel(group="C")) == pytest.approx(np.sqrt(p * (1 - p)))


def test_exchangeable_null_matches_resampling_by_hand():
    """Same draws, recomputed by loops: resample pooled individuals into groups of the observed sizes."""
    counts = _random_counts(2)
    n_rep, seed, level = 40, 5, 0.9
    e, m, g = (np.asarray(counts[v].values) for v in ("errors", "attempts", "group"))
    order = np.argsort(g, kind="stable")
    e, m, g = e[order], m[order], g[order]  # pooled data, group positions in sorted order
    idx = _rng(_entropy(seed), _null._DRAW_KEY).integers(0, len(g), size=(n_rep, len(g)))
    f_null, d_null, r_null = [], [], []
    for row in idx:
        f_null.append(_brute_f(e[row].tolist(), m[row].tolist(), g.tolist()))
        d, r = _brute_dev(e[row].tolist(), m[row].tolist(), g.tolist())
        d_null.append(d)
        r_null.append(r)
    f_obs = _brute_f(e.tolist(), m.tolist(), g.tolist())
    res = dm.differential_test(counts, null="exchangeable", n_replicates=n_rep, seed=seed)
    assert float(res.p_value) == pytest.approx((1 + sum(f >= f_obs for f in f_null)) / (1 + n_rep))
    assert res.attrs["null"] == "exchangeable" and "exchangeable" in res.attrs["h0"]

    moe = dm.margin_of_error(counts, null="exchangeable", n_replicates=n_rep, seed=seed, level=level)
    k = int(np.ceil(level * n_rep))  # smallest value with >= level of the replicates at or below it
    assert float(moe.margin) == pytest.approx(sorted(d_null)[k - 1])
    assert float(moe.ratio_margin) == pytest.approx(sorted(r_null)[k - 1])
    d_obs, r_obs = _brute_dev(e.tolist(), m.tolist(), g.tolist())
    assert float(moe.max_difference) == pytest.approx(d_obs)
    assert float(moe.max_ratio) == pytest.approx(r_obs)
    assert float(moe.p_value) == pytest.approx((1 + sum(d >= d_obs for d in d_null)) / (1 + n_rep))
    p = float(moe.pooled_fnmr)
    assert (moe.outside == (np.abs(moe.fnmr - p) > float(moe.margin))).all()
    assert moe.margin_interval.sel(bound="lower") == pytest.approx(max(0.0, p - float(moe.margin)))
    assert moe.margin_interval.sel(bound="upper") == pytest.approx(min(1.0, p + float(moe.margin)))


def test_equal_rate_null_matches_resampling_by_hand():
    """Each group's individuals drawn from its tilted weights (found by brentq here), W and Z by loops."""
    counts = _random_counts(6, sizes=(6, 9, 5))
    n_rep, seed, level = 40, 4, 0.9
    e, m, g, idx = _equal_rate_draws(counts, n_rep, seed)
    w_null = [_brute_w(e[row].tolist(), m[row].tolist(), g.tolist()) for row in idx]
    z_null = [_brute_z(e[row].tolist(), m[row].tolist(), g.tolist())[0] for row in idx]
    zr_null = [_brute_zr(e[row].tolist(), m[row].tolist(), g.tolist()) for row in idx]
    w_obs = _brute_w(e.tolist(), m.tolist(), g.tolist())
    res = dm.differential_test(counts, n_replicates=n_rep, seed=seed)
    assert float(res.statistic) == pytest.approx(w_obs, rel=1e-12)
    assert float(res.p_value) == pytest.approx((1 + sum(w >= w_obs * (1 - 1e-9) for w in w_null)) / (1 + n_rep))

    moe = dm.margin_of_error(counts, n_replicates=n_rep, seed=seed, level=level)
    c = sorted(z_null)[int(np.ceil(level * n_rep)) - 1]
    assert float(moe.critical_value) == pytest.approx(c, rel=1e-9)
    z_obs, sd = _brute_z(e.tolist(), m.tolist(), g.tolist())
    assert float(moe.p_value) == pytest.approx((1 + sum(z >= z_obs * (1 - 1e-9) for z in z_null)) / (1 + n_rep))
    c_r = sorted(zr_null)[int(np.ceil(level * n_rep)) - 1]
    assert float(moe.ratio_critical_value) == pytest.approx(c_r, rel=1e-9)
    assert c_r <= c  # Z_r <= Z in every replicate
    p = float(moe.pooled_fnmr)
    for lab in ("x", "y", "z"):
        margin = c * sd[lab]
        assert float(moe.margin.sel(group=lab)) == pytest.approx(margin, rel=1e-9)
        assert bool(moe.outside.sel(group=lab)) == (abs(float(moe.fnmr.sel(group=lab)) - p) > margin)
        band = moe.margin_interval.sel(group=lab)
        assert band.values.tolist() == pytest.approx([max(0.0, p - margin), min(1.0, p + margin)])
        reach = c_r * sd[lab]
        want = 1.0 if reach == 0 else (np.inf if reach >= p else p / (p - reach))
        assert float(moe.ratio_margin.sel(group=lab)) == pytest.approx(want, rel=1e-9)
        assert bool(moe.outside_ratio.sel(group=lab)) == (float(moe.ratio.sel(group=lab)) > want)


@pytest.mark.parametrize("seed", range(5))
def test_tilted_weights_move_each_group_to_the_pooled_rate(seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 30, (40, 3)).astype(float)
    rate = rng.uniform(0.1, 0.5, 3)
    e = rng.binomial(m.astype(int), rate).astype(float)
    p = rate * rng.uniform(0.6, 1.4, 3)
    w, scale = _null.tilt_weights(e, m, p)
    feasible = ((e - p * m).min(0) < 0) & ((e - p * m).max(0) > 0)
    assert feasible.all() and (scale == 1).all()
    assert ((w * e).sum(0) / (w * m).sum(0)) == pytest.approx(p, rel=1e-9)
    for k in range(3):  # the same weights as root finding
        want = np.diff(np.concatenate([[0.0], _tilted_cumulative(e[:, k], m[:, k], p[k])]))
        assert w[:, k] / w[:, k].sum() == pytest.approx(want, rel=1e-6, abs=1e-300)


def test_groups_that_cannot_be_tilted():
    """A group without errors stays without errors; one with every individual above p is scaled to p."""
    e = np.array([[0, 3], [0, 2], [0, 4]], dtype=float)
    m = np.full((3, 2), 5.0)
    w, scale = _null.tilt_weights(e, m, np.array([0.1, 0.1]))
    assert (w == 1).all()
    assert scale.tolist() == pytest.approx([1.0, 0.1 / 0.6])
    counts = _counts([0, 0, 0, 3, 2, 4, 2, 0, 1, 0], [5] * 10, list("AAABBBCCCC"))
    e_null, cum = _null.Prepared(counts, "group", "individual").tilted()
    p = 12 / 50
    assert e_null[:3, 0].tolist() == [0, 0, 0]
    assert e_null[3:6, 0] == pytest.approx(np.array([3, 2, 4]) * p / 0.6)
    assert e_null[6:, 0].tolist() == [2, 0, 1, 0]  # tilted, not scaled
    assert cum[0][:, 0] == pytest.approx([1 / 3, 2 / 3, 1]) and cum[1][:, 0] == pytest.approx([1 / 3, 2 / 3, 1])
    w = np.diff(np.concatenate([[0], cum[2][:, 0]]))
    assert (w * [2, 0, 1, 0]).sum() / 5 == pytest.approx(p)


def test_inverse_cdf_draws_each_slice_from_its_own_weights():
    rng = np.random.default_rng(0)
    w = rng.uniform(0, 1, (6, 4)) ** 3
    cum = np.cumsum(w, 0) / w.sum(0)
    u = rng.random((5000, 6))
    draws = _null.inverse_cdf(cum, u)
    for k in range(4):  # the same draws as a multiset in each row (sorted)
        np.testing.assert_array_equal(draws[..., k], np.sort(np.searchsorted(cum[:, k], u, side="right"), axis=1))
        shares = np.bincount(draws[..., k].ravel(), minlength=6) / draws[..., k].size
        assert shares == pytest.approx(w[:, k] / w[:, k].sum(), abs=0.01)


def _brute_gini(x):
    n = len(x)
    total = sum(abs(a - b) for a in x for b in x)
    return n / (n - 1) * total / (2 * n**2 * (sum(x) / n))


@pytest.mark.parametrize("seed", range(4))
def test_gini_garbe_fdr_ratio_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    fmr = rng.uniform(0, 0.01, n)
    fnmr = rng.uniform(0, 0.2, n)
    labels = [f"G{i}" for i in range(n)]
    fmr_da = xr.DataArray(fmr, dims="group", coords={"group": labels})
    fnmr_da = xr.DataArray(fnmr, dims="group", coords={"group": labels})
    alpha = float(rng.uniform())
    assert float(dm.gini(fnmr_da)) == pytest.approx(_brute_gini(fnmr))
    gar = dm.garbe(fmr_da, fnmr_da, alpha=alpha)
    assert float(gar.garbe) == pytest.approx(alpha * _brute_gini(fmr) + (1 - alpha) * _brute_gini(fnmr))
    a = max(abs(fmr[i] - fmr[j]) for i, j in itertools.product(range(n), repeat=2))
    b = max(abs(fnmr[i] - fnmr[j]) for i, j in itertools.product(range(n), repeat=2))
    fdr = dm.fairness_discrepancy_rate(fmr_da, fnmr_da, alpha=alpha)
    assert float(fdr.fdr) == pytest.approx(1 - (alpha * a + (1 - alpha) * b))
    mm = dm.max_min_ratio(fnmr_da)
    assert float(mm.ratio) == pytest.approx(max(fnmr) / min(fnmr))
    assert str(mm.max_group.values) == labels[int(np.argmax(fnmr))]
    assert str(mm.min_group.values) == labels[int(np.argmin(fnmr))]


def test_summaries_edge_cases_and_kept_dims():
    eq = xr.DataArray([0.0, 0.0, 0.0], dims="group")
    assert float(dm.gini(eq)) == 0.0 and float(dm.max_min_ratio(eq).ratio) == 1.0
    assert float(dm.max_min_ratio(xr.DataArray([0.0, 0.1], dims="group")).ratio) == np.inf
    assert np.isnan(float(dm.gini(xr.DataArray([0.1, np.nan], dims="group"))))
    # a threshold dim is kept, each slice as if alone
    rates = xr.DataArray(np.random.default_rng(0).uniform(0, 0.1, (4, 3)), dims=("group", "threshold"))
    g = dm.gini(rates)
    assert g.dims == ("threshold",)
    for k in range(3):
        assert float(g[k]) == pytest.approx(_brute_gini(rates[:, k].values.tolist()))
    with pytest.raises(ValueError, match="same 'group' labels"):
        dm.fairness_discrepancy_rate(
            xr.DataArray([0.1, 0.2], dims="group", coords={"group": ["A", "B"]}),
            xr.DataArray([0.1, 0.2], dims="group", coords={"group": ["B", "A"]}),
        )
    with pytest.raises(ValueError, match="at least two"):
        dm.garbe(xr.DataArray([0.1], dims="group"), xr.DataArray([0.1], dims="group"))
    with pytest.raises(ValueError, match="alpha"):
        dm.garbe(eq, eq, alpha=1.5)
    with pytest.raises(TypeError, match="DataArray"):
        dm.max_min_ratio(xr.Dataset({"fnmr": eq}))


# ---------------------------------------------------------------- level of each null


def _beta_binomial(sizes, attempts, rhos, rates, n_datasets, seed):
    """n_datasets along a ``dataset`` dim: propensities Beta(a, b) (METHODS.md section 5), errors Binomial(m, p_i)."""
    rng = np.random.default_rng(seed)
    errors, m_all, labels = [], [], []
    for k, (n, m, rho, pi) in enumerate(zip(sizes, attempts, rhos, rates)):
        if rho == 0:
            p = np.full((n, n_datasets), pi)
        else:
            p = rng.beta(pi * (1 - rho) / rho, (1 - pi) * (1 - rho) / rho, (n, n_datasets))
        errors.append(rng.binomial(m, p))
        m_all.append(np.full(n, m))
        labels += [f"g{k}"] * n
    return xr.Dataset(
        {"errors": (("individual", "dataset"), np.concatenate(errors)),
         "attempts": ("individual", np.concatenate(m_all))},
        coords={"group": ("individual", np.array(labels))},
    )


N_DATASETS = 400  # per level cell: one call tests them all, as slices
B_LEVEL = 59  # (B + 1) * 0.05 = 3: an exact 5% test if the bootstrap null were exact


def _level_ok(hits: int, n: int = N_DATASETS) -> bool:
    """Two-sided binomial test of a 5% rejection rate (p >= 0.001): accepts about 2-9% of 400."""
    return stats.binomtest(hits, n, 0.05).pvalue >= 1e-3


def test_level_check_accepts_about_2_to_9_percent():
    accepted = [k for k in range(N_DATASETS + 1) if _level_ok(k)]
    assert accepted == list(range(accepted[0], accepted[-1] + 1))
    assert 0.015 <= accepted[0] / N_DATASETS <= 0.025 and 0.085 <= accepted[-1] / N_DATASETS <= 0.095


LEVEL_CELLS = {
    # name: (people, attempts per person, rho, the exchangeable null's rejection rule that breaks)
    "small correlated group": ((200, 50, 20), (5, 5, 5), (0.0, 0.0, 0.6), "test"),
    "2 vs 20 attempts": ((100, 100), (2, 20), (0.3, 0.3), "margin"),
    "balanced rho 0.3": ((100, 100, 100), (5, 5, 5), (0.3, 0.3, 0.3), None),
}


@functools.cache
def _level_data(name):
    sizes, attempts, rhos, _ = LEVEL_CELLS[name]
    return _beta_binomial(sizes, attempts, rhos, (0.05,) * len(sizes), N_DATASETS, seed=sum(map(ord, name)))


def _rejections(name, null, what):
    counts = _level_data(name)
    if what == "test":
        res = dm.differential_test(counts, null=null, n_replicates=B_LEVEL, seed=1)
        return int((res.p_value <= 0.05).sum())
    res = dm.margin_of_error(counts, null=null, n_replicates=B_LEVEL, seed=1)
    flag = res.outside_ratio if what == "ratio" else res.outside
    return int(flag.any("group").sum())


@pytest.mark.parametrize("what", ["test", "margin", "ratio"])
@pytest.mark.parametrize("name", list(LEVEL_CELLS))
def test_equal_rate_null_holds_its_level(name, what):
    """One FNMR (0.05) in every group; groups differ in size, attempts per person and correlation."""
    hits = _rejections(name, "equal-rate", what)
    assert _level_ok(hits), f"{name}: {what} rejected {hits} of {N_DATASETS} ({hits / N_DATASETS:.1%})"


@pytest.mark.parametrize("name", [k for k, v in LEVEL_CELLS.items() if v[3]])
def test_exchangeable_null_fails_the_same_level_check(name):
    """The mutation check: the seeds/002 null, run through the same check, rejects far too often."""
    what = LEVEL_CELLS[name][3]
    hits = _rejections(name, "exchangeable", what)
    assert not _level_ok(hits) and hits / N_DATASETS > 0.12, (name, what, hits)


# ---------------------------------------------------------------- power


def test_null_calibration_and_uniform_p_values():
    """Balanced beta-binomial groups: p-values roughly uniform under both nulls."""
    counts = _grouped(simulate_clustered_decisions(90, 4, rate=0.1, rho=0.2, seed=11, replicates=300), 3)
    counts = counts.drop_vars("individual_rate")
    for null in dm.NULLS:
        p = dm.differential_test(counts, null=null, n_replicates=99, seed=3).p_value
        assert 0.02 <= float((p <= 0.05).mean()) <= 0.09, null
        assert 0.4 <= float((p <= 0.5).mean()) <= 0.6, null


@pytest.mark.parametrize("null", dm.NULLS)
def test_power_when_groups_differ(null):
    parts = [
        simulate_clustered_decisions(100, 5, rate=rate, rho=0.1, seed=s)
        for s, rate in enumerate((0.05, 0.05, 0.15))
    ]
    counts = xr.concat(parts, dim="individual").drop_vars("individual_rate")
    counts = counts.assign_coords(
        individual=np.arange(300), group=("individual", np.repeat(["A", "B", "C"], 100))
    )
    res = dm.differential_test(counts, null=null, n_replicates=499, seed=0)
    assert float(res.p_value) == pytest.approx(1 / 500)
    moe = dm.margin_of_error(counts, null=null, n_replicates=499, seed=0)
    assert bool(moe.outside.sel(group="C")) and bool(moe.outside_ratio.sel(group="C"))
    assert float(moe.p_value) < 0.01


def test_power_at_twice_the_fnmr():
    """One group of three at 2x the FNMR (rho 0.3, 100 people x 5 attempts each): about half the datasets rejected."""
    counts = _beta_binomial((100, 100, 100), (5, 5, 5), (0.3,) * 3, (0.05, 0.05, 0.10), 200, seed=8)
    for null in dm.NULLS:
        p = dm.differential_test(counts, null=null, n_replicates=B_LEVEL, seed=2).p_value
        assert 0.35 <= float((p <= 0.05).mean()) <= 0.8, null


def test_power_from_a_score_cube():
    cube = bioxr.simulate.gaussian(n_subjects=150, n_samples=4, groups={"A": 0.0, "B": 0.0, "C": -1.2}, seed=4)
    counts = dm.group_counts(cube, 2.0)
    res = dm.differential_test(counts, n_replicates=199, seed=1)
    assert float(res.p_value) < 0.05
    assert res.fnmr.sel(group="C") > res.fnmr.sel(group="A")


def _margin(n_groups, n_per_group, seed, *, rate=0.05, rho=0.1, m=5, null="exchangeable"):
    sim = simulate_clustered_decisions(n_groups * n_per_group, m, rate=rate, rho=rho, seed=seed)
    counts = _grouped(sim.drop_vars("individual_rate"), n_groups)
    return float(dm.margin_of_error(counts, null=null, n_replicates=400, seed=seed).margin.mean())


@pytest.mark.parametrize("null", dm.NULLS)
def test_margin_grows_with_groups_and_shrinks_with_individuals(null):
    """The trends of seeds/002: M grows with G (multiplicity), shrinks with N."""
    by_g = [np.mean([_margin(g, 150, s, null=null) for s in range(3)]) for g in (2, 5, 12)]
    assert by_g[0] < by_g[1] < by_g[2], by_g
    by_n = [np.mean([_margin(4, n, s, null=null) for s in range(3)]) for n in (40, 160, 640)]
    assert by_n[0] > by_n[1] > by_n[2], by_n
    # about 1 / sqrt(N): quadrupling N about halves M
    assert 1.5 < by_n[0] / by_n[1] < 2.7 and 1.5 < by_n[1] / by_n[2] < 2.7


@pytest.mark.parametrize("null", dm.NULLS)
def test_margin_grows_with_correlation(null):
    low = np.mean([_margin(4, 150, s, rho=0.01, null=null) for s in range(3)])
    high = np.mean([_margin(4, 150, s, rho=0.4, null=null) for s in range(3)])
    assert high > low


def test_equal_rate_margins_follow_each_groups_precision():
    """A group with 20 attempts per person gets a narrower margin than one with 2 (same people, same rho)."""
    counts = _beta_binomial((100, 100), (2, 20), (0.3, 0.3), (0.05, 0.05), 1, seed=3).isel(dataset=0)
    moe = dm.margin_of_error(counts, n_replicates=999, seed=0)
    assert float(moe.margin.sel(group="g1")) < float(moe.margin.sel(group="g0"))
    assert float(moe.difference_se.sel(group="g1")) < float(moe.difference_se.sel(group="g0"))


# ---------------------------------------------------------------- behaviour


@pytest.mark.parametrize("null", dm.NULLS)
def test_seed_reproduces_and_generators_work(null):
    counts = _random_counts(3)
    a = dm.margin_of_error(counts, null=null, n_replicates=300, seed=7)
    b = dm.margin_of_error(counts, null=null, n_replicates=300, seed=7)
    xr.testing.assert_identical(a, b)
    c = dm.margin_of_error(counts, null=null, n_replicates=300, seed=8)
    assert not a.margin.equals(c.margin) or not a.ratio_margin.equals(c.ratio_margin)
    g1 = dm.differential_test(counts, null=null, n_replicates=300, seed=np.random.default_rng(1))
    g2 = dm.differential_test(counts, null=null, n_replicates=300, seed=np.random.default_rng(1))
    xr.testing.assert_identical(g1, g2)
    with pytest.raises(ValueError, match="seed is None"):
        dm.differential_test(counts, null=null, seed=None)


@pytest.mark.parametrize("null", dm.NULLS)
def test_blocks_do_not_change_results(null, monkeypatch):
    counts = _random_counts(4)
    whole = dm.differential_test(counts, null=null, n_replicates=101, seed=3)
    whole_m = dm.margin_of_error(counts, null=null, n_replicates=101, seed=3)
    monkeypatch.setattr(_null, "_BLOCK_ELEMENTS", 1)  # one replicate a block
    xr.testing.assert_identical(whole, dm.differential_test(counts, null=null, n_replicates=101, seed=3))
    xr.testing.assert_identical(whole_m, dm.margin_of_error(counts, null=null, n_replicates=101, seed=3))


@pytest.mark.parametrize("null", dm.NULLS)
def test_extra_dims_are_kept_and_match_slices(null):
    cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=3, groups={"A": 0.0, "B": -0.5}, seed=2)
    counts = dm.group_counts(cube, [1.5, 2.0, 2.5])
    res = dm.differential_test(counts, null=null, n_replicates=99, seed=1)
    assert res.statistic.dims == ("threshold",) and res.fnmr.dims == ("group", "threshold")
    moe = dm.margin_of_error(counts, null=null, n_replicates=99, seed=1)
    want = ("threshold", "bound") if null == "exchangeable" else ("group", "threshold", "bound")
    assert moe.margin_interval.dims == want
    for t in (1.5, 2.0, 2.5):
        one = dm.differential_test(dm.group_counts(cube, t), null=null, n_replicates=99, seed=1)
        xr.testing.assert_allclose(res.sel(threshold=t).drop_vars("threshold"), one.drop_vars("threshold"))
        one_m = dm.margin_of_error(dm.group_counts(cube, t), null=null, n_replicates=99, seed=1)
        xr.testing.assert_allclose(moe.sel(threshold=t).drop_vars("threshold"), one_m.drop_vars("threshold"))


@pytest.mark.parametrize("null", dm.NULLS)
def test_statistic_invariant_to_order_of_individuals(null):
    counts = _random_counts(5)
    perm = np.random.default_rng(0).permutation(counts.sizes["individual"])
    a = dm.differential_test(counts, null=null, n_replicates=9, seed=0)
    b = dm.differential_test(counts.isel(individual=perm), null=null, n_replicates=9, seed=0)
    assert float(a.statistic) == pytest.approx(float(b.statistic))
    xr.testing.assert_identical(a.fnmr, b.fnmr)


@pytest.mark.parametrize("null", dm.NULLS)
def test_no_errors_at_all(null):
    counts = _counts([0] * 8, [3] * 8, list("AABBAABB"))
    res = dm.differential_test(counts, null=null, n_replicates=50, seed=0)
    assert float(res.statistic) == 0.0 and float(res.p_value) == 1.0
    moe = dm.margin_of_error(counts, null=null, n_replicates=50, seed=0)
    assert (moe.margin == 0.0).all() and (moe.ratio_margin == 1.0).all()
    assert not bool(moe.outside.any()) and (moe.ratio == 1.0).all() and not bool(moe.outside_ratio.any())


def test_ratio_band_with_a_group_without_errors():
    """Z_r of a group with p_g = 0 (ratio inf) is p / sd_g; above p it is Z p / p_g; 0 where p_g = p."""
    rng = np.random.default_rng(5)
    m = rng.integers(2, 6, 60)
    e = np.where(np.arange(60) < 20, 0, rng.binomial(m, 0.2))
    counts = _counts(e, m, np.repeat(list("ABC"), 20))
    moe = dm.margin_of_error(counts, n_replicates=200, seed=1)
    p, sd = float(moe.pooled_fnmr), moe.difference_se
    sums = _null.Prepared(counts, "group", "individual").observed("equal-rate")["sums"]
    zr = _null.ratio_deviations(*sums)[0, :, 0]
    z = _null.studentized_deviations(*sums)[0][0, :, 0]
    fnmr = moe.fnmr.values
    assert fnmr[0] == 0 and zr[0] == pytest.approx(p / float(sd.sel(group="A")), rel=1e-12)
    high = fnmr > p
    assert high.any() and zr[high] == pytest.approx(z[high] * p / fnmr[high], rel=1e-12)
    reach = float(moe.ratio_critical_value) * sd.values
    want = np.where(reach < p, p / (p - reach), np.inf)
    assert moe.ratio_margin.values == pytest.approx(want, rel=1e-12)
    assert (moe.outside_ratio.values == (zr > float(moe.ratio_critical_value))).all()
    assert bool(moe.outside_ratio.sel(group="A"))
    same = _counts([1, 1, 2, 2], [4, 4, 8, 8], list("ABAB"))
    assert (_null.ratio_deviations(*_null.Prepared(same, "group", "individual").observed("equal-rate")["sums"]) == 0).all()


def test_equal_rates_within_groups_give_infinite_f():
    counts = _counts([0, 0, 0, 3, 3, 3], [3] * 6, list("AAABBB"))
    res = dm.differential_test(counts, null="exchangeable", n_replicates=50, seed=0)
    assert float(res.statistic) == np.inf
    assert float(res.p_value) < 1.0


def test_small_groups_warn_under_the_equal_rate_null():
    counts = _beta_binomial((200, 30), (5, 5), (0.0, 0.5), (0.05, 0.05), 1, seed=0).isel(dataset=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dm.SmallGroupWarning)
        with pytest.raises(dm.SmallGroupWarning, match=r"g1 \(30\).*fewer than 50"):
            dm.differential_test(counts, n_replicates=9, seed=0)
        with pytest.raises(dm.SmallGroupWarning, match="g1"):
            dm.margin_of_error(counts, n_replicates=9, seed=0)
        dm.differential_test(counts, null="exchangeable", n_replicates=9, seed=0)  # its null pools the spread
        one_attempt = counts.assign(attempts=counts.attempts.clip(max=1), errors=counts.errors.clip(max=1))
        dm.differential_test(one_attempt, n_replicates=9, seed=0)  # no correlated attempts to hide


def test_clear_errors():
    one = _counts([1, 0, 2], [3, 3, 3], ["A", "A", "A"])
    with pytest.raises(ValueError, match="only one group"):
        dm.differential_test(one)
    with pytest.raises(ValueError, match="only one group"):
        dm.margin_of_error(one)
    no_group = one.drop_vars("group")
    with pytest.raises(ValueError, match="no 'group' coordinate"):
        dm.differential_test(no_group)
    with pytest.raises(ValueError, match="no 'sex' coordinate"):
        dm.margin_of_error(one, group="sex")
    missing = _counts([1, 0, 2], [3, 3, 3], np.array(["A", None, "B"], dtype=object))
    with pytest.raises(ValueError, match="no 'group' label"):
        dm.differential_test(missing)
    for level in (1.0, 0, -0.5, float("nan"), "high"):
        with pytest.raises(ValueError, match="level"):
            dm.margin_of_error(_random_counts(), level=level)
    for bad in (0, -3, 2.5, "many", True):
        with pytest.raises(ValueError, match="n_replicates"):
            dm.differential_test(_random_counts(), n_replicates=bad)
        with pytest.raises(ValueError, match="n_replicates"):
            dm.margin_of_error(_random_counts(), n_replicates=bad)
    for null in ("equal", "pooled", None):
        with pytest.raises(ValueError, match="'equal-rate'.*'exchangeable'"):
            dm.differential_test(_random_counts(), null=null)
        with pytest.raises(ValueError, match="null="):
            dm.margin_of_error(_random_counts(), null=null)
    with pytest.warns(bioxr.bootstrap.FewReplicatesWarning, match="at least 1,000"):
        dm.margin_of_error(_random_counts(), n_replicates=100)
    with pytest.raises(TypeError, match="errors"):
        dm.differential_test(xr.Dataset({"x": ("individual", [1])}))
    cube = bioxr.simulate.gaussian(n_subjects=6, n_samples=2, seed=0).drop_vars("group")
    with pytest.raises(ValueError, match="not a coordinate of the cube"):
        dm.group_counts(cube, 2.0)
    cube = bioxr.simulate.gaussian(n_subjects=6, n_samples=2, seed=0)
    cube = cube.assign_coords(group=("probe", np.tile(["A", "B"], 6)))  # varies within a subject
    with pytest.raises(ValueError, match="not constant"):
        dm.group_counts(cube, 2.0)


# ------------------------------------------------------ a lab's subject table ---
def _unlabelled(sizes=None, n_samples=2, seed=1):
    """Scores without groups (a lab's score file), and the true group of each subject."""
    cube = bioxr.simulate.demographic(sizes or {"A": 8, "B": 6}, n_samples=n_samples, seed=seed)
    truth = dict(zip(cube.reference_subject.values.tolist(), cube.reference_group.values.tolist()))
    return cube.drop_vars(["group", "reference_group"]), truth


def test_attach_groups_gives_cube_and_list_the_same_groups_and_counts_what_it_leaves_out(tmp_path):
    import pandas as pd

    cube, truth = _unlabelled()
    subjects = sorted(truth)
    listed = subjects[:-2]  # the last two subjects are not in the table
    table = pd.DataFrame({"id": listed, "band": [truth[s] for s in listed], "site": "north"})
    table.loc[len(table)] = ["not-scored", "A", "south"]  # in the table, not in the scores
    table.to_csv(tmp_path / "subjects.csv", index=False)
    table.to_parquet(tmp_path / "subjects.parquet")
    lst = bioxr.to_comparisons(cube)
    for source in (tmp_path / "subjects.csv", tmp_path / "subjects.parquet", table):
        on_cube = dm.attach_groups(cube, source, subject="id", group="band")
        on_list = dm.attach_groups(lst, source, subject="id", group="band")
        back = bioxr.to_comparisons(on_cube)
        assert on_list.sizes["comparison"] == back.sizes["comparison"] == int((lst.subject.isin(listed)
                                                                                 & lst.reference_subject.isin(listed)).sum())
        for side, name in (("subject", "band"), ("reference_subject", "reference_band")):
            got = dict(zip(on_list[side].values.tolist(), on_list[name].values.tolist()))
            assert got == dict(zip(back[side].values.tolist(), back[name].values.tolist()))
            assert got == {s: truth[s] for s in got} and set(got) == set(listed)
        for a in (on_cube.attrs, on_list.attrs):
            assert a["n_subjects_without_group"] == 2 and a["subjects_without_group"] == ", ".join(subjects[-2:])
            assert a["n_comparisons_without_group"] == lst.sizes["comparison"] - on_list.sizes["comparison"]
            assert a["n_table_subjects_unscored"] == 1 and a["group_column"] == "band"
    assert on_cube.attrs["group_table"] == "<DataFrame>"
    text = dm.describe_groups(on_list)
    n_out = on_list.attrs["n_comparisons_without_group"]
    assert (f"2 subjects of the scores have no group there ({subjects[-2]}, {subjects[-1]}): their {n_out:,} "
            "comparisons are left out") in text and "1 subject without scores" in text
    # the group rates on the attached groups are those on the simulator's own labels, restricted to the listed
    kept = bioxr.simulate.demographic({"A": 8, "B": 6}, n_samples=2, seed=1)
    kept = kept.isel(probe=kept.subject.isin(listed), reference=kept.reference_subject.isin(listed))
    ours = dm.group_rates(on_cube, threshold=0.0, group="band", reference_group="reference_band", n_replicates=20)
    theirs = dm.group_rates(kept, threshold=0.0, n_replicates=20)
    np.testing.assert_array_equal(ours.fnmr.values, theirs.fnmr.values)
    np.testing.assert_array_equal(ours.n_nonmated.values, theirs.n_nonmated.values)


def test_attach_groups_unknown_label_keeps_everyone():
    cube, truth = _unlabelled()
    some = dict(list(truth.items())[:-3])
    out = dm.attach_groups(cube, some, group="g", unknown="unknown")
    assert out.sizes == cube.sizes and out.attrs["n_comparisons_without_group"] == 0
    assert int((out.reference_g == "unknown").sum()) == 3
    assert "they form the group unknown" in dm.describe_groups(out)


def test_subject_table_errors_name_the_subject_the_lines_and_the_columns(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("subject,sex,age\n# a comment\ns1,F,30\ns2,M,40\n\ns1,M,30\ns3,,50\n")
    with pytest.raises(bioxr.ScoreCubeError, match=r"subject 's1' two groups in column 'sex': line 3 says 'F'; "
                                                     r"line 6 says 'M'"):
        dm.read_subject_table(path, group="sex")
    assert dm.read_subject_table(path, group="age").to_dict() == {"s1": "30", "s2": "40", "s3": "50"}
    with pytest.raises(bioxr.ScoreCubeError, match=r"several group columns \('sex', 'age'\).*-p group NAME"):
        dm.read_subject_table(path)
    with pytest.raises(bioxr.ScoreCubeError, match=r"no column 'id' of subject ids; its columns are 'subject', "
                                                     r"'sex', 'age'"):
        dm.read_subject_table(path, subject="id")
    path.write_text("subject,sex\ns1,F\n,M\n")
    with pytest.raises(bioxr.ScoreCubeError, match="line 3 has no subject id"):
        dm.read_subject_table(path)
    path.write_text("subject,sex\ns1,F\ns2\n")
    with pytest.raises(bioxr.io.ScoreFileError, match="line 3 has 1 cells"):
        dm.read_subject_table(path)
    cube, _ = _unlabelled()
    with pytest.raises(bioxr.ScoreCubeError, match="none of the 14 subjects"):
        dm.attach_groups(cube, {"x": "A"}, group="g")
    with pytest.raises(bioxr.ScoreCubeError, match="already have a 'group' coordinate"):
        dm.attach_groups(bioxr.simulate.demographic({"A": 3, "B": 3}, seed=0), {"s0000": "A"})
    # a subject listed once with an empty cell has no group; listed again with one, it has that one
    path.write_text("subject,sex\ns0000,\ns0000,F\ns0001,\n")
    assert dm.read_subject_table(path).to_dict() == {"s0000": "F", "s0001": None}


def test_group_coordinates_say_what_to_pass():
    cube, _ = _unlabelled()
    with pytest.raises(bioxr.ScoreCubeError, match=r"carry no demographic group 'group'.*-p subject_table PATH"):
        dm.group_coordinates(cube)
    out = dm.attach_groups(cube, dict.fromkeys(_unlabelled()[1], "A"), group="sex")
    assert dm.group_coordinates(out) == ("sex", "reference_sex")
    assert dm.group_coordinates(bioxr.simulate.demographic({"A": 3, "B": 3}, seed=0)) == ("group", "reference_group")


def test_small_groups_are_set_aside_and_said():
    cube = bioxr.simulate.demographic({"A": 12, "B": 10, "C": 3, "D": 1}, n_samples=2, seed=4)
    lst = bioxr.to_comparisons(cube)
    for data in (cube, lst):
        out = dm.set_aside_small_groups(data)
        assert sorted(set(out["group"].values.tolist())) == ["A", "B"]
        assert sorted(set(out["reference_group"].values.tolist())) == ["A", "B"]
        a = out.attrs
        assert (a["groups_set_aside"], a["group_sizes_set_aside"]) == ("C, D", "3, 1")
        small = (lst.group.isin(["C", "D"]) | lst.reference_group.isin(["C", "D"])).sum()
        assert a["n_comparisons_set_aside"] == int(small)
    text = dm.describe_groups(out)
    assert ("Groups C (3 subjects), D (1 subject) have fewer than 5 subjects, too few for a subject-bootstrap "
            "interval") in text and f"their {int(small):,} comparisons (across groups too)" in text
    assert dm.set_aside_small_groups(cube, min_subjects=1).sizes == cube.sizes
    with pytest.raises(bioxr.ScoreCubeError, match=r"only 1 group of 'group' has at least 11 subjects.*A \(12\)"):
        dm.set_aside_small_groups(cube, min_subjects=11)


def test_the_simulation_is_described_whole_after_a_group_is_set_aside():
    cube = bioxr.simulate.demographic({"A": 12, "B": 10, "C": 3}, n_samples=2, seed=4)
    text = dm.describe_simulation(dm.set_aside_small_groups(cube))
    assert text == dm.describe_simulation(cube) and "C: 3 subjects" in text
