"""Demographic differentials (METHODS.md section 5): formulas against brute force,
the null calibration of the bootstrap test, power, the trends of the margin of
error, seeding and errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr import demographics as dm
from bioxr.correlation import simulate_clustered_decisions
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


def test_statistic_and_group_rates_match_brute_force():
    counts = _random_counts(1)
    e, m, g = (counts[v].values.tolist() for v in ("errors", "attempts", "group"))
    res = dm.differential_test(counts, n_replicates=9, seed=0)
    assert float(res.statistic) == pytest.approx(_brute_f(e, m, g), rel=1e-12)
    assert int(res.df_between) == 2 and int(res.df_within) == len(g) - 3
    for lab in ("x", "y", "z"):
        members = [i for i in range(len(g)) if g[i] == lab]
        assert int(res.errors.sel(group=lab)) == sum(e[i] for i in members)
        assert int(res.attempts.sel(group=lab)) == sum(m[i] for i in members)
        assert int(res.n_individuals.sel(group=lab)) == len(members)
        assert float(res.fnmr.sel(group=lab)) == pytest.approx(sum(e[i] for i in members) / sum(m[i] for i in members))
    assert float(res.pooled_fnmr) == pytest.approx(sum(e) / sum(m))


def test_null_distribution_matches_resampling_by_hand():
    """Same draws, recomputed by loops: resample individuals into groups of the observed sizes."""
    counts = _random_counts(2)
    n_rep, seed, level = 40, 5, 0.9
    e, m, g = (np.asarray(counts[v].values) for v in ("errors", "attempts", "group"))
    order = np.argsort(g, kind="stable")
    e, m, g = e[order], m[order], g[order]  # pooled data, group positions in sorted order
    idx = _rng(_entropy(seed), dm._DRAW_KEY).integers(0, len(g), size=(n_rep, len(g)))
    f_null, d_null, r_null = [], [], []
    for row in idx:
        f_null.append(_brute_f(e[row].tolist(), m[row].tolist(), g.tolist()))
        d, r = _brute_dev(e[row].tolist(), m[row].tolist(), g.tolist())
        d_null.append(d)
        r_null.append(r)
    f_obs = _brute_f(e.tolist(), m.tolist(), g.tolist())
    res = dm.differential_test(counts, n_replicates=n_rep, seed=seed)
    assert float(res.p_value) == pytest.approx((1 + sum(f >= f_obs for f in f_null)) / (1 + n_rep))

    moe = dm.margin_of_error(counts, n_replicates=n_rep, seed=seed, level=level)
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


# ---------------------------------------------------------------- calibration and power


def test_null_calibration_monte_carlo():
    """Under H0 (beta-binomial, one FNMR) p-values are roughly uniform: ~5% rejected at 5%."""
    n_data, n_rep = 200, 99
    sims = simulate_clustered_decisions(90, 4, rate=0.1, rho=0.2, seed=11, replicates=n_data)
    p_values = np.empty(n_data)
    for k in range(n_data):
        counts = _grouped(sims.isel(replicate=k).drop_vars("individual_rate"), 3)
        p_values[k] = float(dm.differential_test(counts, n_replicates=n_rep, seed=k).p_value)
    rejection = np.mean(p_values <= 0.05)
    assert 0.02 <= rejection <= 0.09, rejection
    # and roughly uniform overall: about half below 0.5
    assert 0.38 <= np.mean(p_values <= 0.5) <= 0.62


def test_power_when_groups_differ():
    parts = [
        simulate_clustered_decisions(100, 5, rate=rate, rho=0.1, seed=s)
        for s, rate in enumerate((0.05, 0.05, 0.15))
    ]
    counts = xr.concat(parts, dim="individual").drop_vars("individual_rate")
    counts = counts.assign_coords(
        individual=np.arange(300), group=("individual", np.repeat(["A", "B", "C"], 100))
    )
    res = dm.differential_test(counts, n_replicates=499, seed=0)
    assert float(res.p_value) == pytest.approx(1 / 500)
    moe = dm.margin_of_error(counts, n_replicates=499, seed=0)
    assert bool(moe.outside.sel(group="C")) and bool(moe.outside_ratio.sel(group="C"))
    assert float(moe.p_value) < 0.01


def test_power_from_a_score_cube():
    cube = bioxr.simulate.gaussian(n_subjects=150, n_samples=4, groups={"A": 0.0, "B": 0.0, "C": -1.2}, seed=4)
    counts = dm.group_counts(cube, 2.0)
    res = dm.differential_test(counts, n_replicates=199, seed=1)
    assert float(res.p_value) < 0.05
    assert res.fnmr.sel(group="C") > res.fnmr.sel(group="A")


def _margin(n_groups, n_per_group, seed, *, rate=0.05, rho=0.1, m=5):
    sim = simulate_clustered_decisions(n_groups * n_per_group, m, rate=rate, rho=rho, seed=seed)
    counts = _grouped(sim.drop_vars("individual_rate"), n_groups)
    return float(dm.margin_of_error(counts, n_replicates=400, seed=seed).margin)


def test_margin_grows_with_groups_and_shrinks_with_individuals():
    """The trends of seeds/002: M grows with G (multiplicity), shrinks with N."""
    by_g = [np.mean([_margin(g, 150, s) for s in range(3)]) for g in (2, 5, 12)]
    assert by_g[0] < by_g[1] < by_g[2], by_g
    by_n = [np.mean([_margin(4, n, s) for s in range(3)]) for n in (40, 160, 640)]
    assert by_n[0] > by_n[1] > by_n[2], by_n
    # about 1 / sqrt(N): quadrupling N about halves M
    assert 1.5 < by_n[0] / by_n[1] < 2.7 and 1.5 < by_n[1] / by_n[2] < 2.7


def test_margin_grows_with_correlation():
    low = np.mean([_margin(4, 150, s, rho=0.01) for s in range(3)])
    high = np.mean([_margin(4, 150, s, rho=0.4) for s in range(3)])
    assert high > low


# ---------------------------------------------------------------- behaviour


def test_seed_reproduces_and_generators_work():
    counts = _random_counts(3)
    a = dm.margin_of_error(counts, n_replicates=300, seed=7)
    b = dm.margin_of_error(counts, n_replicates=300, seed=7)
    xr.testing.assert_identical(a, b)
    c = dm.margin_of_error(counts, n_replicates=300, seed=8)
    assert float(a.margin) != float(c.margin) or float(a.ratio_margin) != float(c.ratio_margin)
    g1 = dm.differential_test(counts, n_replicates=300, seed=np.random.default_rng(1))
    g2 = dm.differential_test(counts, n_replicates=300, seed=np.random.default_rng(1))
    xr.testing.assert_identical(g1, g2)
    with pytest.raises(ValueError, match="seed is None"):
        dm.differential_test(counts, seed=None)


def test_blocks_do_not_change_results(monkeypatch):
    counts = _random_counts(4)
    whole = dm.differential_test(counts, n_replicates=101, seed=3)
    monkeypatch.setattr(dm, "_BLOCK_ELEMENTS", 1)  # one replicate a block
    xr.testing.assert_identical(whole, dm.differential_test(counts, n_replicates=101, seed=3))


def test_extra_dims_are_kept_and_match_slices():
    cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=3, groups={"A": 0.0, "B": -0.5}, seed=2)
    counts = dm.group_counts(cube, [1.5, 2.0, 2.5])
    res = dm.differential_test(counts, n_replicates=99, seed=1)
    assert res.statistic.dims == ("threshold",) and res.fnmr.dims == ("group", "threshold")
    moe = dm.margin_of_error(counts, n_replicates=99, seed=1)
    assert moe.margin_interval.dims == ("threshold", "bound")
    for t in (1.5, 2.0, 2.5):
        one = dm.differential_test(dm.group_counts(cube, t), n_replicates=99, seed=1)
        xr.testing.assert_allclose(res.sel(threshold=t).drop_vars("threshold"), one.drop_vars("threshold"))
        one_m = dm.margin_of_error(dm.group_counts(cube, t), n_replicates=99, seed=1)
        xr.testing.assert_allclose(moe.sel(threshold=t).drop_vars("threshold"), one_m.drop_vars("threshold"))


def test_statistic_invariant_to_order_of_individuals():
    counts = _random_counts(5)
    perm = np.random.default_rng(0).permutation(counts.sizes["individual"])
    a = dm.differential_test(counts, n_replicates=9, seed=0)
    b = dm.differential_test(counts.isel(individual=perm), n_replicates=9, seed=0)
    assert float(a.statistic) == pytest.approx(float(b.statistic))
    xr.testing.assert_identical(a.fnmr, b.fnmr)


def test_no_errors_at_all():
    counts = _counts([0] * 8, [3] * 8, list("AABBAABB"))
    res = dm.differential_test(counts, n_replicates=50, seed=0)
    assert float(res.statistic) == 0.0 and float(res.p_value) == 1.0
    moe = dm.margin_of_error(counts, n_replicates=50, seed=0)
    assert float(moe.margin) == 0.0 and float(moe.ratio_margin) == 1.0
    assert not bool(moe.outside.any()) and (moe.ratio == 1.0).all()


def test_equal_rates_within_groups_give_infinite_f():
    counts = _counts([0, 0, 0, 3, 3, 3], [3] * 6, list("AAABBB"))
    res = dm.differential_test(counts, n_replicates=50, seed=0)
    assert float(res.statistic) == np.inf
    assert float(res.p_value) < 1.0


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
    with pytest.raises(ValueError, match="level"):
        dm.margin_of_error(_random_counts(), level=1.0)
    with pytest.raises(ValueError, match="n_replicates"):
        dm.differential_test(_random_counts(), n_replicates=0)
    with pytest.raises(TypeError, match="errors"):
        dm.differential_test(xr.Dataset({"x": ("individual", [1])}))
    cube = bioxr.simulate.gaussian(n_subjects=6, n_samples=2, seed=0).drop_vars("group")
    with pytest.raises(ValueError, match="not a coordinate of the cube"):
        dm.group_counts(cube, 2.0)
    cube = bioxr.simulate.gaussian(n_subjects=6, n_samples=2, seed=0)
    cube = cube.assign_coords(group=("probe", np.tile(["A", "B"], 6)))  # varies within a subject
    with pytest.raises(ValueError, match="not constant"):
        dm.group_counts(cube, 2.0)
