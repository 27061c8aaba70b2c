"""The calibrated bootstrap-t of the crossed-subject bootstrap: per-replicate variances, the union, the callers.

Each replicate variance is checked against the formula on the data applied
to the replicate written out (copies of a drawn subject made distinct
subjects), the union against its definition, the operating-point
studentiser against a statistic whose linear form is known, and the
callers by switching the union off.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr.bootstrap import _Stats, _studentized, curves


def _crossed_cube(rng, n, k, *, sd=0.0, mated_mean=3.0):
    """Probes (k per subject) against one reference per subject; wolves and lambs of SD ``sd``."""
    v, w = rng.normal(0, sd, n), rng.normal(0, sd, n)
    subj = np.repeat(np.arange(n), k)
    scores = v[subj][:, None] + w[None, :] + rng.normal(0, 1, (n * k, n))
    scores[np.arange(n * k), subj] += mated_mean
    return bioxr.score_cube(scores, subject=subj, reference_subject=np.arange(n)), scores, subj


def _written_out(scores, subj, w):
    """The replicate as a comparison list: copy j of subject a is subject 'a.j'; copies never meet each other."""
    n = w.size
    s, p, r = [], [], []
    for a in range(n):
        rows = np.flatnonzero(subj == a)
        for i in range(int(w[a])):
            for c in range(n):
                for j in range(int(w[c])):
                    if a == c and i != j:
                        continue
                    s += list(scores[rows, c])
                    p += [f"{a}.{i}"] * rows.size
                    r += [f"{c}.{j}"] * rows.size
    return xr.Dataset({"score": ("comparison", np.array(s)), "subject": ("comparison", np.array(p)),
                       "reference_subject": ("comparison", np.array(r))})


THRESHOLDS = np.array([-0.5, 0.4, 1.3, 2.2])


def test_replicate_fmr_variance_is_the_moment_variance_of_the_written_out_replicate():
    rng = np.random.default_rng(1)
    cube, scores, subj = _crossed_cube(rng, 7, 2, sd=0.8)
    stats = _Stats(cube, THRESHOLDS, "subject")
    w = rng.multinomial(7, np.full(7, 1 / 7), size=3).astype(float)
    got = stats.fmr_variance_replicates(np.vstack([np.ones(7), w]))
    np.testing.assert_allclose(got[0], stats.fmr_variance(), rtol=1e-12)  # w = 1: the data's
    for r in range(3):
        want = _Stats(_written_out(scores, subj, w[r]), THRESHOLDS, "subject").fmr_variance()
        np.testing.assert_allclose(got[r + 1], want, rtol=1e-10, atol=1e-16)


def test_replicate_fmr_variance_is_the_same_in_pieces_and_in_blocks_of_replicates(monkeypatch):
    """Bins cut into pieces of 3 entries, replicates into blocks of 2: the same variances (sequential sums)."""
    from bioxr.bootstrap import _stats

    rng = np.random.default_rng(4)
    cube, _, _ = _crossed_cube(rng, 9, 3, sd=0.8)
    stats = _Stats(cube, THRESHOLDS, "subject")
    w = np.vstack([np.ones(9), rng.multinomial(9, np.full(9, 1 / 9), size=4)]).astype(float)
    whole = stats.fmr_variance_replicates(w)
    np.testing.assert_allclose(whole[0], stats.fmr_variance(), rtol=1e-12)
    monkeypatch.setattr(_stats, "PIECE", 3)
    monkeypatch.setattr(_stats, "_REPLICATE_BLOCK", 2 * 9)
    np.testing.assert_allclose(stats.fmr_variance_replicates(w), whole, rtol=1e-12, atol=1e-18)


def test_replicate_fnmr_variance_is_the_cluster_variance_of_the_written_out_replicate():
    rng = np.random.default_rng(2)
    cube, scores, subj = _crossed_cube(rng, 9, 3, sd=0.5, mated_mean=1.0)
    stats = _Stats(cube, THRESHOLDS, "subject")
    w = rng.multinomial(9, np.full(9, 1 / 9), size=3).astype(float)
    got = stats.fnmr_variance_replicates(w)
    for r in range(3):
        e = np.array([[(scores[subj == a, a] < t).sum() for t in THRESHOLDS] for a in range(9)], dtype=float)
        m = np.bincount(subj).astype(float)
        e, m = np.repeat(e, w[r].astype(int), axis=0), np.repeat(m, w[r].astype(int))
        p = e.sum(0) / m.sum()
        want = ((e - p * m[:, None]) ** 2).sum(0) / m.sum() ** 2 * 9 / 8
        np.testing.assert_allclose(got[r], want, rtol=1e-10)


def test_union_is_the_bootstrap_t_interval_where_wider_and_keeps_the_edges():
    rng = np.random.default_rng(3)
    point = np.array([0.2, 0.0, 0.3])
    reps = point + rng.normal(0, 0.02, (400, 3))
    var = np.exp(rng.normal(0, 0.3, (400, 3))) * 4e-4
    base = np.array([[0.19, 0.21], [0.0, 0.05], [0.25, 0.35]])
    out = curves._studentized_union(base, point, reps, var, level=0.9, shift=0.01)
    u = (reps[:, 0] - 0.2) * np.sqrt(var[:, 0].mean() / var[:, 0])
    lo, hi = 0.2 - np.quantile(u, 0.95) + 0.01, 0.2 - np.quantile(u, 0.05) + 0.01
    np.testing.assert_allclose(out[0], [min(0.19, lo), max(0.21, hi)])
    assert out[0, 0] < 0.19 and out[0, 1] > 0.21  # the bootstrap-t is the wider here: it is what is returned
    np.testing.assert_array_equal(out[1], base[1])  # a rate of 0: the one-sided bound is kept
    np.testing.assert_array_equal(out[2], base[2])  # the base is the wider on both sides: kept


def test_studentized_lower_is_the_bootstrap_t_bound_alone_and_the_upper_the_higher():
    """``lower="studentized"``: [p - u_hi, max(base upper, p - u_lo)] by hand; edges (rate 0) keep the base."""
    rng = np.random.default_rng(3)
    point = np.array([0.2, 0.0, 0.3])
    reps = point + rng.normal(0, 0.02, (400, 3))
    var = np.exp(rng.normal(0, 0.3, (400, 3))) * 4e-4
    base = np.array([[0.10, 0.21], [0.0, 0.05], [0.25, 0.45]])
    out = curves._studentized_union(base, point, reps, var, level=0.9, lower="studentized")
    for j in (0, 2):
        u = (reps[:, j] - point[j]) * np.sqrt(var[:, j].mean() / var[:, j])
        lo, hi = point[j] - np.quantile(u, 0.95), point[j] - np.quantile(u, 0.05)
        np.testing.assert_allclose(out[j], [lo, max(base[j, 1], hi)])
    assert out[0, 0] > 0.10 and out[0, 1] > 0.21  # a base too wide below does not widen it; too narrow above does
    assert out[2, 1] == 0.45  # the base's upper bound is the higher: kept
    np.testing.assert_array_equal(out[1], base[1])
    with pytest.raises(ValueError, match="lower must be"):
        curves._studentized_union(base, point, reps, var, level=0.9, lower="min")


def test_studentiser_reaches_up_when_the_variance_grows_with_the_rate():
    """Replicates whose variance grows with their level (a few subjects hold the errors) stretch the upper bound."""
    rng = np.random.default_rng(4)
    point = np.array([0.01])
    reps = point * np.exp(rng.normal(0, 0.4, (2000, 1)) - 0.08)
    grows = reps**2  # proportional to the square of the level
    flat = np.full_like(reps, np.mean(grows))
    tiny = np.array([[point[0], point[0]]])  # a base that never wins
    up_grows = curves._studentized_union(tiny, point, reps, grows, level=0.95)[0]
    up_flat = curves._studentized_union(tiny, point, reps, flat, level=0.95)[0]
    assert up_grows[1] - point[0] > 1.3 * (up_flat[1] - point[0])
    assert point[0] - up_grows[0] < point[0] - up_flat[0]


def test_operating_point_variance_uses_the_regression_slopes():
    """A statistic exactly 2 dFMR - 0.5 dFNMR at the point's threshold: variance 4 V_FMR + 0.25 V_FNMR."""
    rng = np.random.default_rng(5)
    b, k = 300, 6
    fm = np.sort(rng.uniform(0.01, 0.5, (b, k)), axis=1)  # similarity-ascending grid: FMR falls
    fm = fm[:, ::-1].copy()
    fn = np.sort(rng.uniform(0.01, 0.5, (b, k)), axis=1)
    fm0, fn0 = fm.mean(0), fn.mean(0)
    vm, vn = rng.uniform(1e-3, 2e-3, (b, k)), rng.uniform(1e-3, 2e-3, (b, k))
    reps = xr.Dataset({"fmr": (("replicate", "threshold"), fm), "fnmr": (("replicate", "threshold"), fn),
                       "fmr_point": ("threshold", fm0), "fnmr_point": ("threshold", fn0),
                       "fmr_replicate_variance": (("replicate", "threshold"), vm),
                       "fnmr_replicate_variance": (("replicate", "threshold"), vn),
                       "n_nonmated": 1e9, "n_mated": 1e9}, attrs={"score_kind": "similarity"})
    at = np.array([2])
    stat = 0.3 + 2 * (fm[:, 2] - fm0[2]) - 0.5 * (fn[:, 2] - fn0[2])
    chosen = rng.integers(0, k, (b, 1))
    got = curves._operating_point_variance(reps, stat[:, None], chosen, at)[:, 0]
    rows = np.arange(b)
    np.testing.assert_allclose(got, 4 * vm[rows, chosen[:, 0]] + 0.25 * vn[rows, chosen[:, 0]], rtol=1e-8)


def _no_union(bounds, *args, **kwargs):
    return np.array(bounds, dtype=float)


@pytest.fixture(scope="module")
def wolves():
    return _crossed_cube(np.random.default_rng(6), 30, 4, sd=0.8)[0]


def test_bootstrap_curve_fmr_count_is_korn_graubard_not_the_union(wolves, monkeypatch):
    """The curve's FMR rests on the moment variance and its degrees of freedom (few with wolves), not the bootstrap-t."""
    from scipy import stats as st

    t = [3.0, 3.6, 4.2]
    kw = {"thresholds": t, "n_replicates": 200, "seed": 7}
    new = bioxr.bootstrap.bootstrap_curve(wolves, **kw)
    monkeypatch.setattr(curves, "_studentized_union", _no_union)
    xr.testing.assert_identical(new, bioxr.bootstrap.bootstrap_curve(wolves, **kw))  # the union plays no part
    moment, _, dof = _Stats(wolves, t, "subject").fmr_variance(parts=True)
    assert dof[-1] < 5 < dof[0]  # the strictest threshold's false matches come from a few wolves and lambs
    p = new.fmr.values
    n = float((wolves.subject.values[:, None] != wolves.reference_subject.values[None, :]).sum())
    deff = np.maximum(0.5, moment / (p * (1 - p) / n))
    np.testing.assert_allclose(new.fmr_n_eff.values, n / deff * (1.959963984540054 / st.t.ppf(0.975, dof)) ** 2,
                               rtol=1e-9)
    assert "Korn & Graubard" in new.attrs["interval"] and "bootstrap-t" not in new.attrs["interval"]
    pct = bioxr.bootstrap.bootstrap_curve(wolves, interval="percentile", **kw)
    assert "bootstrap-t" not in pct.attrs["interval"] and "t_df" not in pct.attrs["interval"]


def test_eer_takes_the_union(wolves, monkeypatch):
    run = lambda: bioxr.bootstrap.eer_interval(wolves, n_replicates=200, seed=8, method="interpolated")
    new = run()
    monkeypatch.setattr(curves, "_studentized_union", _no_union)
    old = run()
    lo, hi = new.eer_interval.sel(bound="lower").values, new.eer_interval.sel(bound="upper").values
    assert np.all(lo <= old.eer_interval.sel(bound="lower").values)
    assert np.all(hi >= old.eer_interval.sel(bound="upper").values)
    assert not np.allclose(new.eer_interval.values, old.eer_interval.values)


def test_fnmr_at_fmr_takes_the_bootstrap_t_lower_and_the_higher_upper(wolves, monkeypatch):
    """The FNMR@FMR lower bound is the bootstrap-t's (above the effective count's with wolves), the upper the higher."""
    run = lambda: bioxr.bootstrap.fnmr_at_fmr_interval(wolves, [0.01, 0.001], n_replicates=200, seed=8)
    new = run()
    calls = []
    real = curves._studentized_union
    monkeypatch.setattr(curves, "_studentized_union", lambda *a, **k: calls.append(k) or real(*a, **k))
    xr.testing.assert_identical(run(), new)
    assert calls and all(k["lower"] == "studentized" and k["level"] == 0.95 for k in calls)
    monkeypatch.setattr(curves, "_studentized_union", _no_union)
    old = run()
    assert np.all(new.fnmr_interval.sel(bound="upper").values >= old.fnmr_interval.sel(bound="upper").values)
    assert not np.allclose(new.fnmr_interval.sel(bound="lower").values, old.fnmr_interval.sel(bound="lower").values)
    assert "upper bound the higher" in new.attrs["interval"]


def test_no_studentiser_where_its_formula_does_not_hold(wolves):
    kw = {"thresholds": [3.0, 3.6], "n_replicates": 60, "seed": 9}
    assert "fnmr_replicate_variance" not in curves._replicates(
        wolves, unit="subject", two_level=True, progress=False, failure_policy="exclude", fmr_variance="moments",
        studentise=True, **kw)
    plain = bioxr.bootstrap.bootstrap_replicates(wolves, **kw)
    assert "fmr_replicate_variance" not in plain and "fnmr_replicate_variance" not in plain


def test_calibrated_variance_has_the_deviations_scale_and_shrunk_variation():
    rng = np.random.default_rng(11)
    var = np.exp(rng.normal(0, 0.5, (500, 2))) * np.array([1e-4, 3e-6])
    spread, shrink = np.array([2e-5, 1e-6]), np.array([1.0, 0.5])
    out = curves._calibrated_variance(var, spread, shrink)
    rel = var / var.mean(0)
    np.testing.assert_allclose(out, spread * rel ** shrink)
    np.testing.assert_allclose(np.log(out[:, 1]).std(), 0.5 * np.log(var[:, 1]).std())  # variation halved


def test_moment_variance_pair_part_is_what_the_pigeonhole_adds_twice():
    """Independent comparisons: V about p (1 - p) / N, pair part about the same, pigeonhole about 3 V."""
    rng = np.random.default_rng(12)
    cube = _crossed_cube(rng, 40, 4)[0]
    stats = _Stats(cube, [1.0], "subject")
    v, pair, _ = stats.fmr_variance(parts=True)
    np.testing.assert_allclose(v, stats.fmr_variance())
    reps = bioxr.bootstrap.bootstrap_replicates(cube, thresholds=[1.0], n_replicates=2000, seed=1,
                                                fmr_variance="pigeonhole")
    pigeonhole = float(reps.fmr.var("replicate")[0])
    assert pigeonhole == pytest.approx(float(v[0] + 2 * pair[0]), rel=0.1)


def test_floor_is_the_replicates_binomial_variance():
    reps = np.array([[0.0, 0.1], [0.2, 0.3]])
    out = _studentized._binomial_floor(np.zeros((2, 2)), reps, np.array([0.5, 0.5]), 100.0)
    np.testing.assert_allclose(out, [[0.5 / 100 / 100, 0.09 / 100], [0.16 / 100, 0.21 / 100]])


def test_replicate_fmr_variances_average_to_the_spread_they_studentise(wolves):
    reps = curves._replicates(wolves, thresholds=[2.0, 3.0], n_replicates=300, seed=13, unit="subject",
                              two_level=False, progress=False, failure_policy="exclude", fmr_variance="moments",
                              studentise=True)
    spread = ((reps.fmr - reps.fmr_point) ** 2).mean("replicate")
    mean = reps.fmr_replicate_variance.mean("replicate")
    np.testing.assert_allclose(mean.values, spread.values, rtol=0.2)  # geometric shrink: the mean moves a little


def test_fnmr_at_fmr_stretches_the_threshold_by_the_fmr_t_factor(wolves, monkeypatch):
    """The operating points move by t_df / z times the FMR deviations: wider with wolves, and only with moments."""
    from scipy import stats as st

    targets = [0.01, 0.001]
    run = lambda **kw: bioxr.bootstrap.fnmr_at_fmr_interval(wolves, targets, n_replicates=200, seed=8, **kw)
    new = run()
    reps = curves._replicates(wolves, thresholds=None, n_replicates=200, seed=8, unit="subject", two_level=False,
                              progress=False, failure_policy="exclude", fmr_variance="moments", studentise=True)
    dof = reps["fmr_dof"].values
    np.testing.assert_allclose(curves._t_factor(dof, 0.95)[np.isfinite(dof)],
                               st.t.ppf(0.975, dof[np.isfinite(dof)]) / st.norm.ppf(0.975))
    monkeypatch.setattr(curves, "_t_factor", lambda dof, level: np.ones_like(dof))
    plain = run()
    width = lambda r: r.fnmr_interval.diff("bound").values.ravel()
    assert np.all(width(new) >= width(plain) - 1e-12) and np.any(width(new) > width(plain) + 1e-3)
    xr.testing.assert_identical(new.fnmr, plain.fnmr)  # the point does not move
    calls = []
    monkeypatch.setattr(curves, "_t_factor", lambda dof, level: calls.append(level) or np.ones_like(dof))
    run(fmr_variance="pigeonhole")
    run(interval="percentile")
    assert not calls
    run(level=0.9)
    assert calls == [0.9]  # the level is forwarded


def test_fnmr_at_fmr_interval_written_out_from_its_replicates(wolves):
    """The whole interval by hand from the replicates: stretched FMR deviations, the most lenient grid threshold with
    FMR <= target per replicate, the effective-count bounds, then [p - u_hi, max(eff upper, p - u_lo)]."""
    from scipy import stats as st

    from bioxr.bootstrap._bounds import effective_count, rate_bounds

    level = 0.9
    reps = curves._replicates(wolves, thresholds=None, n_replicates=200, seed=8, unit="subject", two_level=False,
                              progress=False, failure_policy="exclude", fmr_variance="moments", studentise=True)
    order = slice(None) if reps.attrs["score_kind"] == "similarity" else slice(None, None, -1)
    fm, fn = reps.fmr.values[:, order], reps.fnmr.values[:, order]
    fm0, fn0 = reps.fmr_point.values[order], reps.fnmr_point.values[order]
    dof = reps.fmr_dof.values[order]
    tf = np.where(np.isfinite(dof) & (dof > 0), st.t.ppf((1 + level) / 2, np.where(dof > 0, dof, 1.0))
                  / st.norm.ppf((1 + level) / 2), 1.0)
    fm = fm0 + (fm - fm0) * tf
    tie = float(fm0[np.argmin(np.abs(fm0 - 0.005))])  # a target the point's FMR hits exactly: "at most" includes it
    targets = np.array([0.01, 0.001, tie])
    got = bioxr.bootstrap.fnmr_at_fmr_interval(wolves, list(targets), n_replicates=200, seed=8, level=level)
    assert fm0[np.flatnonzero(fm0 <= tie)[0]] == tie
    a = (1 - level) / 2
    for j, f in enumerate(targets):
        first = np.array([np.flatnonzero(row <= f)[0] if (row <= f).any() else row.size - 1 for row in fm])
        k = np.flatnonzero(fm0 <= f)[0]
        per_rep, point = fn[np.arange(fn.shape[0]), first], fn0[k]
        assert got.fnmr.values[j] == point and 0 < point < 1  # inside: the bootstrap-t applies
        n_mated = reps["n_mated"].item()
        n_eff = effective_count(np.array([point]), per_rep[:, None], n_mated, reps.attrs["mated_units"])
        eff = rate_bounds(np.array([point]), per_rep[:, None], n_mated, n_eff, level=level, interval="effective")[0]
        var = curves._operating_point_variance(reps, per_rep[:, None], first[:, None], np.array([k]))[:, 0]
        u = (per_rep - point) * np.sqrt(var.mean() / var)
        want = [np.clip(point - np.quantile(u, 1 - a), 0, 1), max(eff[1], np.clip(point - np.quantile(u, a), 0, 1))]
        np.testing.assert_allclose(got.fnmr_interval.values[j], want, rtol=1e-12)
