"""The score cube constructor and validator: every bad input gets a clear
ScoreCubeError; masks agree with a plain loop over the cells."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bioxr
from bioxr.cube import (
    ScoreCubeError,
    compared_mask,
    mated_mask,
    probe_dims,
    score_cube,
    validate_score_cube,
)

GOOD = np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.4]])
SUBJ = ["a", "b"]
REFS = ["a", "b", "c"]


def make(scores=GOOD, **kw):
    kw.setdefault("subject", SUBJ)
    kw.setdefault("reference_subject", REFS)
    return score_cube(np.asarray(scores), **kw)


def test_good_cube():
    cube = make()
    assert cube.dims == ("probe", "reference")
    assert cube.attrs["score_kind"] == "similarity"
    assert cube.subject.dims == ("probe",) and cube.reference_subject.dims == ("reference",)
    assert validate_score_cube(cube) is cube
    assert probe_dims(cube) == ("probe",)


def test_multi_dim_cube_with_subject_dimension():
    scores = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)
    cube = score_cube(
        scores,
        reference_subject=["a", "a", "b", "b"],
        dims=("subject", "collection", "reference"),
        coords={"subject": ["a", "b"], "collection": [1, 2, 3], "weather": ("collection", ["x", "y", "x"])},
    )
    assert probe_dims(cube) == ("subject", "collection")
    assert cube.weather.dims == ("collection",)
    assert cube.dtype == np.float64


# --------------------------------------------------------------------------
# Constructor errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_scores_raise(bad):
    scores = GOOD.copy()
    scores[1, 2] = bad
    with pytest.raises(ScoreCubeError, match="infinite") as err:
        make(scores)
    assert "'probe': 1" in str(err.value) and "'reference': 2" in str(err.value)


def test_no_reference_dim_raises():
    with pytest.raises(ScoreCubeError, match="reference"):
        make(dims=("probe", "gallery"))
    bare = xr.DataArray(
        GOOD, dims=("probe", "gallery"), coords={"subject": ("probe", SUBJ), "reference_subject": ("gallery", REFS)}
    )
    with pytest.raises(ScoreCubeError, match="'reference'"):
        validate_score_cube(bare)
    only_ref = xr.DataArray([1.0, 2.0], dims="reference", coords={"reference_subject": ("reference", ["a", "b"])})
    with pytest.raises(ScoreCubeError, match="probe"):
        validate_score_cube(only_ref)


@pytest.mark.parametrize(
    "subject, refs",
    [
        (["a", None], REFS),
        (["a", ""], REFS),
        (["a", "  "], REFS),
        (np.array(["a", np.nan], dtype=object), REFS),
        (pd.Series(["a", np.nan]), REFS),
        (SUBJ, ["a", None, "c"]),
        (SUBJ, ["a", "b", ""]),
        ([1.0, np.nan], [1.0, 2.0, 3.0]),
        ([1.0, 2.0], [1.0, np.nan, 3.0]),
    ],
)
def test_missing_labels_raise(subject, refs):
    with pytest.raises(ScoreCubeError, match="label"):
        make(subject=subject, reference_subject=refs)


def test_missing_label_as_nan_in_a_plain_list_raises():
    with pytest.raises(ScoreCubeError, match="label"):
        make(subject=["a", np.nan])


def test_missing_coordinates_raise():
    cube = make()
    with pytest.raises(ScoreCubeError, match="'subject'"):
        validate_score_cube(cube.drop_vars("subject"))
    with pytest.raises(ScoreCubeError, match="'reference_subject'"):
        validate_score_cube(cube.drop_vars("reference_subject"))
    with pytest.raises(ScoreCubeError, match="'subject'"):
        make(subject=None)


def test_labels_on_the_wrong_dimension_raise():
    cube = make().drop_vars("subject").assign_coords(subject=("reference", REFS))
    with pytest.raises(ScoreCubeError, match="probe dimensions"):
        validate_score_cube(cube)


def test_duplicated_labels_raise():
    with pytest.raises(ScoreCubeError, match="duplicated"):
        make(coords={"reference": ["r1", "r1", "r2"]})
    with pytest.raises(ScoreCubeError, match="duplicated"):
        make(coords={"probe": ["p", "p"]})
    with pytest.raises(ScoreCubeError, match="duplicated"):
        score_cube(GOOD, subject=["a", "a"], reference_subject=REFS, dims=("subject", "reference"))


def test_duplicated_reference_ids_raise_a_score_cube_error():
    with pytest.raises(ScoreCubeError):
        make(probe_id=["x", "y"], reference_id=["x", "x", "z"])


def test_no_label_overlap_raises():
    with pytest.raises(ScoreCubeError, match="no probe subject"):
        make(subject=["p", "q"])


def test_no_mated_comparison_raises():
    scores = GOOD.copy()
    scores[0, 0] = scores[1, 1] = np.nan  # the only mated cells
    with pytest.raises(ScoreCubeError, match="no mated"):
        make(scores)
    # the only mated cells are self comparisons
    with pytest.raises(ScoreCubeError, match="no mated"):
        make(probe_id=["s0", "s1"], reference_id=["s0", "s1", "s2"])
    # waived
    cube = make()
    no_mated = cube.where(~mated_mask(cube))
    assert validate_score_cube(no_mated, require_mated=False) is no_mated


def test_no_nonmated_comparison_raises():
    with pytest.raises(ScoreCubeError, match="no non-mated"):
        score_cube(np.array([[1.0, 2.0], [3.0, 4.0]]), subject=["a", "a"], reference_subject=["a", "a"])
    scores = GOOD.copy()
    scores[0, 1:] = scores[1, [0, 2]] = np.nan
    with pytest.raises(ScoreCubeError, match="no non-mated"):
        make(scores)
    cube = make()
    validate_score_cube(cube.where(mated_mask(cube)), require_nonmated=False)


def test_wrong_score_kind_raises():
    with pytest.raises(ScoreCubeError, match="score_kind"):
        make(score_kind="similar")
    with pytest.raises(ScoreCubeError, match="score_kind"):
        validate_score_cube(make().assign_attrs(score_kind="probability"))
    assert make(score_kind="distance").attrs["score_kind"] == "distance"


@pytest.mark.parametrize(
    "kw",
    [
        dict(scores=np.array([0.1, 0.2])),  # 1-D
        dict(scores=np.zeros((2, 2, 3))),  # 3-D without dims
        dict(dims=("probe", "collection", "reference")),  # 3 names for 2 dims
        dict(subject=["a", "b", "c"]),  # one label too many
        dict(reference_subject=["a", "b"]),  # one label too few
        dict(subject=[["a"], ["b"]]),  # not 1-D
    ],
)
def test_wrong_shapes_raise(kw):
    with pytest.raises(ScoreCubeError):
        make(**kw)


@pytest.mark.parametrize("scores", [np.array([["1", "2", "3"], ["4", "5", "6"]]), GOOD.astype(complex), GOOD > 0.5])
def test_non_real_scores_raise(scores):
    with pytest.raises(ScoreCubeError, match="real numbers"):
        make(scores)


def test_dataset_and_other_types_raise():
    with pytest.raises(ScoreCubeError, match="Dataset"):
        validate_score_cube(make().to_dataset())
    with pytest.raises(ScoreCubeError, match="DataArray"):
        validate_score_cube(GOOD)


def test_source_is_named_in_errors():
    scores = GOOD.copy()
    scores[0, 0] = np.inf
    with pytest.raises(ScoreCubeError, match="scores.csv"):
        make(scores, source="scores.csv")


# --------------------------------------------------------------------------
# missing= sentinel
# --------------------------------------------------------------------------


def test_missing_sentinel_becomes_nan_and_is_counted():
    scores = np.array([[5, -1, 2], [-1, 7, -1]])  # integers, like a fingerprint matcher's
    cube = make(scores, missing=-1)
    assert cube.dtype == np.float64
    assert cube.attrs["n_missing"] == 3 and cube.attrs["missing_sentinel"] == -1.0
    expected = [[5.0, math.nan, 2.0], [math.nan, 7.0, math.nan]]
    np.testing.assert_array_equal(cube.values, expected)
    assert int(compared_mask(cube).sum()) == 3


def test_missing_sentinel_absent_counts_zero_and_keeps_scores():
    cube = make(missing=-1)
    assert cube.attrs["n_missing"] == 0
    np.testing.assert_array_equal(cube.values, GOOD)


def test_without_missing_a_sentinel_is_a_score():
    cube = make(np.array([[5.0, -1.0, 2.0], [1.0, 7.0, -1.0]]))
    assert "n_missing" not in cube.attrs
    assert int(compared_mask(cube).sum()) == 6


def test_missing_sentinel_can_leave_no_mated_comparison():
    with pytest.raises(ScoreCubeError, match="no mated"):
        make(np.array([[-1.0, 0.2, 0.1], [0.3, -1.0, 0.4]]), missing=-1)


# --------------------------------------------------------------------------
# Masks against a plain loop
# --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_masks_match_a_loop(data):
    P = data.draw(st.integers(1, 4))
    R = data.draw(st.integers(1, 5))
    subject = data.draw(st.lists(st.sampled_from("abc"), min_size=P, max_size=P))
    refs = data.draw(st.lists(st.sampled_from("abcd"), min_size=R, max_size=R))
    flat = data.draw(st.lists(st.sampled_from([0.0, 1.0, math.nan]), min_size=P * R, max_size=P * R))
    pid = data.draw(st.lists(st.sampled_from(["i0", "i1", "i2"]), min_size=P, max_size=P))
    rid = data.draw(st.permutations([f"i{k}" for k in range(R + 2)]))[:R]
    scores = np.array(flat).reshape(P, R)
    cube = xr.DataArray(
        scores,
        dims=("probe", "reference"),
        coords={
            "subject": ("probe", subject),
            "reference_subject": ("reference", refs),
            "probe_id": ("probe", pid),
            "reference_id": ("reference", rid),
        },
    )
    mated = mated_mask(cube).transpose("probe", "reference").values
    compared = compared_mask(cube).transpose("probe", "reference").values
    for p in range(P):
        for r in range(R):
            assert mated[p, r] == (subject[p] == refs[r])
            assert compared[p, r] == (not math.isnan(scores[p, r]) and pid[p] != rid[r])
    # the validator's counts agree with the loop: it raises exactly when a kind is absent
    n_mated = sum(mated[p, r] and compared[p, r] for p in range(P) for r in range(R))
    n_nonmated = sum((not mated[p, r]) and compared[p, r] for p in range(P) for r in range(R))
    overlap = bool(set(subject) & set(refs))
    try:
        validate_score_cube(cube)
        ok = True
    except ScoreCubeError:
        ok = False
    assert ok == (overlap and n_mated > 0 and n_nonmated > 0)


# -- a system dimension: several matchers on the same trials are never pooled by default -------------------------

def _two_systems():
    a = bioxr.simulate.gaussian(n_subjects=30, n_samples=2, seed=0)
    b = bioxr.simulate.gaussian(n_subjects=30, n_samples=2, seed=1)
    return a, b, xr.concat([a, b], dim="system").assign_coords(system=["A", "B"])


def test_system_dimension_is_kept_unless_named():
    a, b, both = _two_systems()
    eer = both.bio.eer()
    assert eer.eer.dims == ("system",)
    assert eer.eer.sel(system="A").item() == a.bio.eer().eer.item()
    assert eer.eer.sel(system="B").item() == b.bio.eer().eer.item()
    pooled = both.bio.eer(dim=["system", "probe"])  # named: pooled, as asked
    assert pooled.eer.dims == ()
    op = both.bio.fnmr_at_fmr([0.01, 0.1])
    assert op.fnmr.dims == ("system", "fmr_target")
    cmc = both.bio.outcomes().bio.cmc_curve(max_rank=3)
    assert cmc.cmc.sel(system="B").values.tolist() == b.bio.outcomes().bio.cmc_curve(max_rank=3).cmc.values.tolist()


def test_system_dimension_is_refused_by_the_subject_bootstrap():
    _, _, both = _two_systems()
    with pytest.raises(ScoreCubeError, match="2 systems.*paired_difference"):
        both.bio.bootstrap_curve(n_replicates=1000)
    one = both.sel(system="A")
    assert one.bio.bootstrap_curve(thresholds=[1.0], n_replicates=1000).fmr.size == 1
    listed = bioxr.to_comparisons(one).assign_coords(system=("comparison", np.repeat(["A", "B"], [10, one.size - 10])))
    with pytest.raises(ScoreCubeError, match="2 systems"):
        listed.bio.eer_interval(n_replicates=1000)
