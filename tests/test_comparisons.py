"""The comparison list: every statistic gives on a list exactly what it gives on the dense cube.

A registry of functions, in the style of scikit-learn's common tests: each
function that takes score data is registered with a call; one property-based
test runs every entry on random sparse data (ties, NaN, cofactors, self
comparisons) built twice, independently: as a trial list and as the dense
cube holding the same comparisons. A test also walks the public topic
modules and fails when a function taking score data is not registered (or
exempted with a reason), so a new function cannot be forgotten.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bioxr
from bioxr import bootstrap, correlation, demographics, failures, identification, outcomes, verification
from bioxr.cube import ScoreCubeError

T = [-1.0, 0.0, 1.0, 2.5]
#: A lab's subject table for attach_groups: s4 is not listed (its comparisons are left out), s9 has no scores;
#: in column "trio" s5 is alone in group Z (set aside by set_aside_small_groups(min_subjects=2)).
SUBJECT_TABLE = pd.DataFrame({"id": ["s0", "s1", "s2", "s3", "s5", "s9"], "site": list("XYXYXY"),
                              "trio": list("XYXYZY")})


def _groups_by_subject(data, group: str, reference_group: str) -> xr.Dataset:
    """What attach_groups / set_aside_small_groups left: comparisons and score sums per (probe, reference) group,
    each subject's group, and the counts left out (attrs, as variables)."""
    lst = data if "comparison" in data.dims else bioxr.to_comparisons(data)
    frame = pd.DataFrame({"g": lst[group].values.astype(str), "r": (lst[reference_group].values.astype(str)
                          if reference_group in lst.coords else "-"), "s": lst.score.values,
                          "who": lst.subject.values.astype(str), "ref": lst.reference_subject.values.astype(str)})
    pairs = frame.groupby(["g", "r"]).agg(n=("s", "size"), total=("s", "sum")).to_xarray()
    own = frame.drop_duplicates("who").set_index("who")["g"].sort_index()
    out = pairs.assign(subject_group=xr.DataArray(own.to_numpy(), dims="who", coords={"who": own.index.to_numpy()}))
    for key in ("n_subjects_without_group", "n_comparisons_without_group", "n_comparisons_set_aside"):
        if key in data.attrs:
            out[key] = int(data.attrs[key])
    return out

# name -> call on (data, kind); data is a cube or a list holding the same comparisons
REGISTRY = {
    "verification.error_rates": lambda d: verification.error_rates(d, T),
    "verification.error_rates[dim=probe]": lambda d: verification.error_rates(d, T, dim="probe"),
    "verification.fmr": lambda d: verification.fmr(d, T),
    "verification.fnmr": lambda d: verification.fnmr(d, T, dim="probe"),
    "verification.det_curve": lambda d: verification.det_curve(d),
    "verification.det_curve[all,dim=probe]": lambda d: verification.det_curve(d, points="all", dim="probe"),
    "verification.roc_curve": lambda d: verification.roc_curve(d),
    "verification.eer[rocch]": lambda d: verification.eer(d),
    "verification.eer[interpolated]": lambda d: verification.eer(d, method="interpolated"),
    "verification.eer[nearest,dim=probe]": lambda d: verification.eer(d, method="nearest", dim="probe"),
    "verification.fnmr_at_fmr": lambda d: verification.fnmr_at_fmr(d, [0.05, 0.2, 0.5]),
    "verification.fmr_at_fnmr": lambda d: verification.fmr_at_fnmr(d, [0.1, 0.4], dim="probe"),
    "verification.eer[fvc2000]": lambda d: verification.eer(d, method="fvc2000"),
    "verification.eer[bob,dim=probe]": lambda d: verification.eer(d, convention="bob", dim="probe"),
    "verification.fnmr_at_fmr[bob]": lambda d: verification.fnmr_at_fmr(d, [0.05, 0.2], convention="bob"),
    "verification.fnmr_at_fmr[pyeer]": lambda d: verification.fnmr_at_fmr(d, [0.05, 0.2], convention="pyeer"),
    "identification.cmc_curve[bob]": lambda d: identification.cmc_curve(d, max_rank=3, convention="bob"),
    "verification.eer[nist]": lambda d: verification.eer(d, failure_policy="nist"),
    "verification.eer[iso]": lambda d: verification.eer(d, method="interpolated", failure_policy="iso"),
    "verification.error_rates[nist]": lambda d: verification.error_rates(d, T, failure_policy="nist"),
    "verification.fnmr_at_fmr[iso]": lambda d: verification.fnmr_at_fmr(d, 0.2, failure_policy="iso"),
    "verification.fmr_at_fnmr[nist]": lambda d: verification.fmr_at_fnmr(d, 0.4, failure_policy="nist"),
    "outcomes.outcomes": lambda d: outcomes.outcomes(d),
    "identification.cmc_curve": lambda d: identification.cmc_curve(d, max_rank=4),
    "identification.identification_rate": lambda d: identification.identification_rate(d, [1, 2], dim="probe"),
    "identification.open_set_rates": lambda d: identification.open_set_rates(d, T, impostors="all"),
    "identification.open_set_curve": lambda d: identification.open_set_curve(d, impostors="all"),
    "correlation.attempt_counts": lambda d: correlation.attempt_counts(d, T),
    "correlation.attempt_counts[nist]": lambda d: correlation.attempt_counts(d, T, failure_policy="nist"),
    "correlation.fnmr_interval": lambda d: correlation.fnmr_interval(d, 1.0),
    "demographics.group_counts": lambda d: demographics.group_counts(d, 1.0, group="group"),
    "demographics.global_threshold": lambda d: xr.Dataset({"threshold": demographics.global_threshold(d, 0.2)}),
    "demographics.group_rates": lambda d: demographics.group_rates(d, threshold=1.0, n_replicates=50, seed=1),
    "demographics.cross_group_fmr": lambda d: demographics.cross_group_fmr(d, fmr_target=0.2),
    "demographics.fairness_intervals": lambda d: demographics.fairness_intervals(d, threshold=1.0, n_replicates=50,
                                                                                 seed=1),
    "bootstrap.bootstrap_replicates": lambda d: bootstrap.bootstrap_replicates(d, thresholds=T, n_replicates=20, seed=1),
    "bootstrap.bootstrap_curve[nist]": lambda d: bootstrap.bootstrap_curve(
        d, thresholds=T, n_replicates=20, seed=1, failure_policy="nist"),
    "bootstrap.bootstrap_curve[iso]": lambda d: bootstrap.bootstrap_curve(
        d, thresholds=T, n_replicates=20, seed=1, failure_policy="iso"),
    "bootstrap.fnmr_at_fmr_interval": lambda d: bootstrap.fnmr_at_fmr_interval(d, 0.2, n_replicates=20, seed=2),
    "bootstrap.eer_interval": lambda d: bootstrap.eer_interval(d, n_replicates=20, seed=3),
    "bootstrap.cmc_interval": lambda d: bootstrap.cmc_interval(d, max_rank=3, n_replicates=20, seed=4),
    "bootstrap.open_set_interval": lambda d: bootstrap.open_set_interval(d, [0.0, 1.0], impostors="all",
                                                                          n_replicates=20, seed=5),
    "failures.failure_rates": lambda d: failures.failure_rates(d),
    "demographics.attach_groups": lambda d: _groups_by_subject(
        demographics.attach_groups(d, SUBJECT_TABLE, subject="id", group="site"), "site", "reference_site"),
    "demographics.set_aside_small_groups": lambda d: _groups_by_subject(demographics.set_aside_small_groups(
        demographics.attach_groups(d, SUBJECT_TABLE, subject="id", group="trio"), group="trio",
        reference_group="reference_trio", min_subjects=2), "trio", "reference_trio"),
}

# public functions that take score data but are not in the registry, and why
EXEMPT = {
    "bootstrap.bootstrap_rate_interval": "takes per-individual counts, not score data",
    "bootstrap.subject_draws": "takes a number of units",
    "failures.mark_failures": "a constructor of failure flags (tested in test_failures_*)",
    "demographics.describe_simulation": "sentences about the simulator's parameters (in its attrs), no statistic",
    "demographics.describe_groups": "sentences from attach_groups' and set_aside_small_groups' attrs, no statistic",
    "demographics.groups_provenance": "provenance lines from attach_groups' attrs, no statistic",
    "demographics.group_coordinates": "names of coordinates (or an error saying what to pass), no statistic",
}
MODULES = (verification, outcomes, identification, correlation, demographics, bootstrap, failures)


def test_every_function_on_score_data_is_registered():
    registered = {name.split("[")[0] for name in REGISTRY}
    missing = []
    for module in MODULES:
        for name in getattr(module, "__all__", []):
            fn = getattr(module, name)
            if not inspect.isfunction(fn):
                continue
            first = next(iter(inspect.signature(fn).parameters), None)
            if first not in ("cube", "obj", "data"):
                continue
            key = f"{module.__name__.split('.')[-1]}.{name}"
            if key not in registered and key not in EXEMPT:
                missing.append(key)
    assert not missing, f"add these to REGISTRY in tests/test_comparisons.py (or EXEMPT, with a reason): {missing}"


@st.composite
def sparse_data(draw):
    """A trial list and, built separately, the dense cube (probe, session, reference) holding it."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n_subj = draw(st.integers(3, 6))
    n_probe = draw(st.integers(n_subj, 2 * n_subj + 2))
    n_session = draw(st.integers(1, 3))
    n_ref = draw(st.integers(n_subj, 2 * n_subj))
    kind = draw(st.sampled_from(["similarity", "distance"]))
    density = draw(st.sampled_from([0.3, 0.7, 1.0]))
    subjects = np.array([f"s{i}" for i in range(n_subj)])
    probe_subject = np.concatenate([subjects, rng.choice(subjects, n_probe - n_subj)])
    ref_subject = np.concatenate([subjects, rng.choice(subjects, n_ref - n_subj)])
    groups = {s: g for s, g in zip(subjects, rng.choice(["A", "B"], n_subj))}
    shape = (n_probe, n_session, n_ref)
    mated = probe_subject[:, None, None] == ref_subject[None, None, :]
    sign = -1 if kind == "distance" else 1
    scores = rng.integers(-2, 3, size=shape) + sign * 2.0 * mated  # integers: ties everywhere
    compared = rng.random(shape) < density
    compared |= mated & (rng.random(shape) < 0.9)
    every = rng.integers(n_ref, size=(n_probe, n_session))  # each probe of each session compared at least once
    compared[np.arange(n_probe)[:, None], np.arange(n_session)[None, :], every] = True
    compared[rng.integers(n_probe, size=n_ref), rng.integers(n_session, size=n_ref), np.arange(n_ref)] = True
    failed_ref = np.zeros(n_ref, dtype=bool)
    if draw(st.booleans()):
        failed_ref[rng.integers(n_ref)] = True
    p, s, r = np.nonzero(compared | failed_ref[None, None, :])
    # the list: one row per comparison, in shuffled order (order must not matter)
    order = rng.permutation(p.size)
    p, s, r = p[order], s[order], r[order]
    fe = failed_ref[r]
    trials = bioxr.comparison_list(
        np.where(fe, np.nan, scores[p, s, r]),
        subject=probe_subject[p],
        reference_subject=ref_subject[r],
        coords={"probe": p, "session": s, "reference": np.array([f"r{j}" for j in r]),
                "group": np.array([groups[x] for x in probe_subject[p]])},
        probe_dims=["probe", "session"],
        score_kind=kind,
        failed_enrolment=fe,
    )
    # the cube, by hand: NaN where not compared, failed column NaN and flagged
    dense = np.where(compared & ~failed_ref[None, None, :], scores, np.nan)
    cube = xr.DataArray(
        dense, dims=("probe", "session", "reference"),
        coords={"probe": np.arange(n_probe), "session": np.arange(n_session),
                "reference": [f"r{j}" for j in range(n_ref)], "subject": ("probe", probe_subject),
                "reference_subject": ("reference", ref_subject),
                "group": ("probe", np.array([groups[x] for x in probe_subject])),
                "failed_enrolment": ("reference", failed_ref)},
        attrs={"score_kind": kind},
    )
    return trials, cube


def _same(a: xr.Dataset, b: xr.Dataset, name: str):
    assert set(a.data_vars) == set(b.data_vars), name
    for v in a.data_vars:
        x, y = a[v], b[v]
        assert set(x.dims) == set(y.dims), (name, v, x.dims, y.dims)
        y = y.transpose(*x.dims)
        for d in x.dims:
            if d in x.coords and d in y.coords:
                xs, ys = [str(q) for q in x[d].values], [str(q) for q in y[d].values]
                if xs != ys:  # kept labels in another order: align on them
                    y = y.sel({d: y[d].values[[ys.index(q) for q in xs]]})
        if x.dtype.kind in "USO":  # labels (a bound's kind): equal as text
            np.testing.assert_array_equal(x.values.astype(str), y.values.astype(str), err_msg=f"{name}: {v}")
            continue
        np.testing.assert_allclose(np.asarray(x.values, dtype=float), np.asarray(y.values, dtype=float),
                                   rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=f"{name}: {v}")


# derandomize: the same 15 examples every run, so CI is repeatable. A random search of 3,000 examples (cmc_interval)
# found no mismatch after the fix in bootstrap._bounds._residual_sum (rounding noise decided the bootstrap-t)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(data=sparse_data())
def test_list_equals_dense_cube_for_every_registered_function(data):
    trials, cube = data
    for name, call in REGISTRY.items():
        try:
            expected = call(cube)
        except (ValueError, ScoreCubeError) as err:  # a group without mates etc.: the list must refuse too
            with pytest.raises(type(err)):
                call(trials)
            continue
        got = call(trials)
        if isinstance(expected, xr.DataArray):
            expected, got = expected.to_dataset(name="x"), got.to_dataset(name="x")
        _same(expected, got, name)


def test_to_comparisons_round_trip_and_dims():
    cube = bioxr.simulate.photohead(n_subjects=5, n_collections=4, seed=1)
    trials = bioxr.to_comparisons(cube)
    assert trials.sizes["comparison"] == int(cube.notnull().sum())
    back = bioxr.to_cube(trials).transpose(*cube.dims)
    np.testing.assert_array_equal(back.values, cube.values)
    per = trials.bio.eer(dim=("subject", "image"))
    xr.testing.assert_allclose(per.eer, cube.bio.eer(dim=("subject", "image")).eer)
    assert "weather" in per.coords and per["weather"].dims == ("collection",)


def test_from_scores_matches_scikit_learn_roc_at_shared_thresholds():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    mated, nonmated = np.round(rng.normal(2, 1, 300), 1), np.round(rng.normal(0, 1, 3000), 1)
    trials = bioxr.from_scores(mated, nonmated)
    det = bioxr.verification.det_curve(trials, points="all")
    y = np.r_[np.ones(mated.size), np.zeros(nonmated.size)]
    fpr, tpr, thr = sk.roc_curve(y, np.r_[mated, nonmated], drop_intermediate=False)
    ours = det.sel(threshold=thr[1:])
    np.testing.assert_allclose(ours.fmr.values, fpr[1:], atol=1e-15)
    np.testing.assert_allclose(ours.tmr.values, tpr[1:], atol=1e-15)


def test_from_scores_refuses_subject_statistics_with_the_reason():
    trials = bioxr.from_scores([0.9, 0.8, 0.7, 0.95, 0.6], [0.1, 0.2, 0.3, 0.75, 0.4])
    assert trials.attrs["subjects"] == "unknown"
    for call in (lambda: trials.bio.eer_interval(n_replicates=50),
                 lambda: trials.bio.bootstrap_curve(n_replicates=50),
                 lambda: trials.bio.attempt_counts(0.5),
                 lambda: trials.bio.cmc_curve()):
        with pytest.raises(ValueError, match="no subject labels"):
            call()
    ci = bioxr.intervals.rates_interval(trials.bio.error_rates(0.5))
    assert (ci.fnmr_interval.sel(bound="upper") > ci.fnmr_interval.sel(bound="lower")).all()


def test_bare_arrays_and_frames_get_a_door_in_the_error():
    with pytest.raises(TypeError, match="from_scores"):
        bioxr.verification.eer(np.array([0.1, 0.2]))
    with pytest.raises(TypeError, match="from_frame"):
        bioxr.verification.eer(pd.DataFrame({"score": [0.1]}))


def test_from_frame_keeps_cofactors_as_dims():
    rng = np.random.default_rng(0)
    n = 400
    who = rng.choice(list("abcdefgh"), n)
    claim = np.where(rng.random(n) < 0.3, who, rng.choice(list("abcdefgh"), n))
    df = pd.DataFrame({"s": rng.normal(size=n) + 2 * (who == claim), "spk": who, "enrol": claim,
                       "sensor": rng.choice(["x", "y"], n)})
    trials = bioxr.from_frame(df, score="s", subject="spk", reference_subject="enrol", cofactors=["sensor"])
    per = trials.bio.eer(dim=())
    assert per.eer.dims == ("sensor",)
    for sensor in ("x", "y"):
        sub = df[df.sensor == sensor]
        one = bioxr.from_frame(sub, score="s", subject="spk", reference_subject="enrol")
        assert float(per.eer.sel(sensor=sensor)) == float(one.bio.eer().eer)


def test_nfc_labels_are_one_subject_and_counted():
    trials = bioxr.comparison_list([0.9, 0.1, 0.8, 0.2], subject=["Jos\u00e9", "Jos\u00e9", "bo", "bo"],
                                   reference_subject=["Jose\u0301", "bo", "b\u200bo", "Jos\u00e9"])
    assert trials.attrs["n_labels_normalised"] == 2
    assert int(trials.bio.eer().n_mated) == 2


def test_nan_without_a_failure_flag_is_refused():
    with pytest.raises(ScoreCubeError, match="no failure flag"):
        bioxr.comparison_list([0.9, np.nan], subject=["a", "a"], reference_subject=["a", "b"])


def test_failure_policies_against_a_hand_count():
    # 3 probes x 3 references, reference c failed to enrol; probe b failed to be acquired
    scores = np.array([[0.9, 0.2, 0.0], [0.0, 0.0, 0.0], [0.3, 0.4, 0.0]])
    cube = bioxr.score_cube(scores, subject=["a", "b", "c"], reference_subject=["a", "b", "c"])
    cube = failures.mark_failures(cube, enrolment=[False, False, True], acquisition=[False, True, False])
    # made comparisons: (a,a)=.9 m, (a,b)=.2, (c,a)=.3, (c,b)=.4; failed: row b (3 cells), column c (a,c),(c,c)
    t = 0.35
    ex = verification.error_rates(cube, t)
    assert (int(ex.n_mated), int(ex.n_nonmated)) == (1, 3)
    assert (int(ex.false_nonmatches), int(ex.false_matches)) == (0, 1)
    ni = verification.error_rates(cube, t, failure_policy="nist")
    # failed mated: (b,b), (c,c) -> 2 false non-matches; failed non-mated: (b,a), (b,c), (a,c) -> 3 more non-mated
    assert (int(ni.n_mated), int(ni.n_nonmated)) == (3, 6)
    assert (int(ni.false_nonmatches), int(ni.false_matches)) == (2, 1)
    iso = verification.error_rates(cube, t, failure_policy="iso")
    fte, fta = 1 / 3, 1 / 3
    assert float(iso.fnmr) == pytest.approx(fte + (1 - fte) * fta + (1 - fte) * (1 - fta) * 0.0)
    assert float(iso.fmr) == pytest.approx((1 - fte) * (1 - fta) * 1 / 3)
    assert iso.attrs["failure_policy"] == "iso" and ni.attrs["n_failed_enrolments"] == 1
    rates = failures.failure_rates(cube)
    assert float(rates.fte) == pytest.approx(1 / 3) and float(rates.fta) == pytest.approx(1 / 3)
    # the bootstrap's point estimates under each policy are the exact rates
    for policy, exact in (("nist", ni), ("iso", iso)):
        band = bootstrap.bootstrap_curve(cube, thresholds=[t], n_replicates=30, seed=0, failure_policy=policy)
        assert float(band.fnmr.squeeze()) == pytest.approx(float(exact.fnmr))
        assert float(band.fmr.squeeze()) == pytest.approx(float(exact.fmr))
    lst = bioxr.to_comparisons(cube)
    for policy in ("exclude", "nist", "iso"):
        a = verification.error_rates(cube, t, failure_policy=policy)
        b = verification.error_rates(lst, t, failure_policy=policy)
        _same(a, b, policy)


def test_reversed_score_kind_warns():
    rng = np.random.default_rng(1)
    trials = bioxr.from_scores(rng.normal(0, 1, 300), rng.normal(3, 1, 3000))  # distances declared similarity
    with pytest.warns(bioxr._core.ScoreKindWarning, match="probably distance"):
        trials.bio.eer()
    with pytest.warns(bioxr._core.ScoreKindWarning):
        trials.bio.det_curve()
    assert bioxr.comparisons.check_score_kind(trials) is not None
    fine = bioxr.from_scores(rng.normal(3, 1, 300), rng.normal(0, 1, 3000))
    assert bioxr.comparisons.check_score_kind(fine) is None


def test_face_c_nist_failed_enrolment(face_csv):
    df = pd.read_csv(face_csv, index_col=0)
    v = df.to_numpy(float)
    cube = bioxr.score_cube(np.where(v == -1, np.nan, v), subject=df.index.astype(str),
                            reference_subject=df.columns.astype(str))
    cube = failures.mark_failures(cube, enrolment=(v == -1).all(axis=0))
    nist = cube.bio.eer(failure_policy="nist")
    assert round(float(nist.eer) * 100, 4) == 4.3207
    assert (int(nist.n_mated), int(nist.n_nonmated)) == (517, 266772)
    assert round(float(cube.bio.eer().eer) * 100, 2) == 4.20
    lst = cube.bio.to_comparisons()
    assert float(lst.bio.eer(failure_policy="nist").eer) == float(nist.eer)
