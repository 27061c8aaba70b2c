"""Closed- and open-set identification against brute-force loops (METHODS.md s.2, seeds/001, 004)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import bioxr
from bioxr.cube import ScoreCubeError, score_cube
from bioxr.identification import cmc_curve, identification_rate, open_set_curve, open_set_rates


def brute_searches(scores, subj, rsubj, distance=False):
    """Per probe: ('mated', x, y, mate score) or ('impostor', top score), by plain loops."""
    out = []
    for i in range(scores.shape[0]):
        best = {}
        for j in range(scores.shape[1]):
            v = scores[i, j]
            if np.isnan(v):
                continue
            key = -v if distance else v
            if rsubj[j] not in best or key > best[rsubj[j]]:
                best[rsubj[j]] = key
        if not best:
            continue
        if subj[i] in best:
            m = best[subj[i]]
            x = sum(1 for k, v in best.items() if k != subj[i] and v > m)
            y = sum(1 for v in best.values() if v == m)
            others = [v for k, v in best.items() if k != subj[i]]
            top = max(others) if others else None
            out.append(("mated", x, y, m, top))
        else:
            out.append(("impostor", max(best.values())))
    return out


cubes = st.integers(0, 2**32 - 1).map(np.random.default_rng)


def random_case(rng):
    p, r = int(rng.integers(3, 10)), int(rng.integers(2, 8))
    scores = rng.integers(0, 4, (p, r)).astype(float)
    scores[rng.random((p, r)) < 0.1] = np.nan
    subj = rng.integers(0, r + 2, p)
    rsubj = rng.integers(0, max(r - 1, 1), r)
    return scores, subj, rsubj


@settings(max_examples=200, deadline=None)
@given(cubes, st.sampled_from(["similarity", "distance"]))
def test_cmc_matches_annex_f_brute_force(rng, kind):
    scores, subj, rsubj = random_case(rng)
    try:
        cube = score_cube(scores, subject=subj, reference_subject=rsubj, score_kind=kind)
    except ScoreCubeError:
        return
    searches = [s for s in brute_searches(scores, subj, rsubj, kind == "distance") if s[0] == "mated"]
    if not searches:
        with pytest.raises(ValueError):
            cmc_curve(cube)
        return
    n_ref = len(set(rsubj))
    cmc = cmc_curve(cube, max_rank=n_ref + 1)
    for r in range(1, n_ref + 2):
        expected = np.mean([min(max((r - x) / y, 0.0), 1.0) for _, x, y, _, _ in searches])
        assert cmc.cmc.sel(rank=r).item() == pytest.approx(expected, abs=1e-12)
    assert int(cmc.n_probes) == len(searches)


@settings(max_examples=150, deadline=None)
@given(cubes, st.sampled_from(["similarity", "distance"]), st.integers(1, 3))
def test_open_set_rates_match_brute_force(rng, kind, rank):
    scores, subj, rsubj = random_case(rng)
    try:
        cube = score_cube(scores, subject=subj, reference_subject=rsubj, score_kind=kind)
    except ScoreCubeError:
        return
    searches = brute_searches(scores, subj, rsubj, kind == "distance")
    mated = [s for s in searches if s[0] == "mated"]
    impostors = [s for s in searches if s[0] == "impostor"]
    if not mated or not impostors:
        return
    thresholds = np.array([-1.0, 0.0, 1.0, 1.5, 2.0, 3.0, 4.0])
    res = open_set_rates(cube, thresholds, rank=rank)
    sign = -1 if kind == "distance" else 1
    for k, t in enumerate(thresholds):
        key_t = sign * t
        dir_ = np.mean([min(max((rank - x) / y, 0.0), 1.0) * (m >= key_t) for _, x, y, m, _ in mated])
        fpir = np.mean([top >= key_t for _, top in impostors])
        assert res.dir.values[k] == pytest.approx(dir_, abs=1e-12)
        assert res.fpir.values[k] == pytest.approx(fpir, abs=1e-12)
        assert res.fnir.values[k] == pytest.approx(1 - dir_, abs=1e-12)


def test_hand_made_annex_f_ties():
    # probe a: mate ties with b and c at the top -> rank spread over 1..3 (fractional 2)
    cube = score_cube(
        np.array([[0.8, 0.8, 0.8, 0.1], [0.1, 0.9, 0.2, 0.3]]),
        subject=["a", "b"],
        reference_subject=["a", "b", "c", "d"],
    )
    out = cube.bio.outcomes()
    assert out.mated_rank.values.tolist() == [2.0, 1.0]
    cmc = cmc_curve(cube, max_rank=4).cmc.values
    np.testing.assert_allclose(cmc, [(1 / 3 + 1) / 2, (2 / 3 + 1) / 2, 1.0, 1.0])


def test_several_references_per_subject_rank_subjects_not_templates():
    # subject b has two references scoring above the mate: it is one candidate, so rank 2, not 3
    cube = score_cube(
        np.array([[0.5, 0.9, 0.8, 0.1]]), subject=["a"], reference_subject=["a", "b", "b", "c"]
    )
    assert cube.bio.outcomes().mated_rank.item() == 2.0
    assert identification_rate(cube, [1, 2]).cmc.values.tolist() == [0.0, 1.0]


def test_cmc_keeps_dims_and_equals_selection():
    cube = bioxr.simulate.photohead(n_subjects=6, n_collections=5, seed=3)
    per = cmc_curve(cube, dim=("subject", "image"), max_rank=6)
    assert per.cmc.dims == ("collection", "rank")
    assert "weather" in per.coords
    for c in range(5):
        one = cmc_curve(cube.isel(collection=[c]), max_rank=6)
        np.testing.assert_allclose(per.cmc.isel(collection=c).values, one.cmc.values)


def test_outcome_cube_and_score_cube_give_the_same_cmc():
    cube = bioxr.simulate.gaussian(n_subjects=30, seed=2)
    xr.testing.assert_identical(cmc_curve(cube), cmc_curve(cube.bio.outcomes()))


def test_open_set_curve_is_the_rates_at_every_threshold():
    cube = bioxr.simulate.gaussian(n_subjects=25, seed=4)
    curve = open_set_curve(cube, impostors="all")
    at = open_set_rates(cube, curve.threshold.values, impostors="all")
    np.testing.assert_allclose(curve.dir.values, at.dir.values)
    np.testing.assert_allclose(curve.fpir.values, at.fpir.values)
    assert curve.fpir.values[-1] == 0 and curve.dir.values[-1] == 0
    assert (np.diff(curve.fpir.values) <= 0).all()


def test_impostors_all_uses_each_probe_with_its_mates_left_out():
    cube = bioxr.simulate.gaussian(n_subjects=20, seed=5)
    out = cube.bio.outcomes()
    res = open_set_rates(cube, 1.5, impostors="all")
    assert int(res.n_impostor_probes) == cube.sizes["probe"]
    assert res.fpir.item() == pytest.approx(float((out.nonmated_best >= 1.5).mean()))


def test_open_set_without_non_enrolled_probes_says_what_to_do():
    cube = bioxr.simulate.gaussian(n_subjects=10, seed=0)
    with pytest.raises(ValueError, match="impostors='all'"):
        open_set_rates(cube, 1.0)


def test_wrong_inputs_get_clear_errors():
    cube = bioxr.simulate.gaussian(n_subjects=10, seed=0)
    with pytest.raises(ValueError, match="impostors="):
        open_set_rates(cube, 1.0, impostors="everyone")
    with pytest.raises(ValueError, match="lacks"):
        cmc_curve(xr.Dataset({"x": ("probe", [1.0])}))
    with pytest.raises(ValueError, match="ranks start at 1"):
        identification_rate(cube, 0)


def test_bssr1_rank_one_rates_against_an_independent_count(face_csv, finger_csv):
    from bioxr.io import read_matrix_csv

    for path, missing in ((face_csv, -1.0), (finger_csv, None)):
        cube = read_matrix_csv(path, missing=missing)
        m = cube.values
        labels_p = cube["subject"].values
        labels_r = cube["reference_subject"].values
        fractions = []
        for i in range(m.shape[0]):
            j = int(np.flatnonzero(labels_r == labels_p[i])[0])
            row = m[i]
            mate = row[j]
            if np.isnan(mate):
                continue
            others = np.delete(row, j)
            others = others[~np.isnan(others)]
            x = int((others > mate).sum())
            y = 1 + int((others == mate).sum())
            fractions.append(1.0 if x == 0 and y == 1 else (max(0.0, (1 - x) / y)))
        rate = identification_rate(cube).cmc.item()
        assert rate == pytest.approx(np.mean(fractions), abs=1e-12)
        assert 0.5 < rate <= 1.0
