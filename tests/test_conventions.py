"""Named conventions reproduce the peers' own numbers on the peers' own example files.

The expected values in tests/data/peers/reference_values.json were computed
by bob.measure 6.1.1 and pyeer 0.5.6 themselves, run on their own example
files (bob.bio.base's dev-4col.txt, dev-5col.txt, test-4col.txt and
scores-cmc-4col.txt; pyeer's exp1..exp3) and on two cases built by hand, by
tests/data/peers/make_reference_values.py (run by hand). Nothing here calls
a peer, and nothing calls bioxr to compute an expected value.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bioxr
from bioxr import conventions, identification, verification
from bioxr.bootstrap import eer_interval
from bioxr.cube import score_cube
from bioxr.io import read_bob

PEERS = Path(__file__).parent / "data" / "peers"
REF = json.loads((PEERS / "reference_values.json").read_text())
PYEER = REF["pyeer"]["files"]
BOB = REF["bob"]["files"]
BOB_FILES = ("dev-4col.txt", "dev-5col.txt", "test-4col.txt")
PYEER_FILES = ("exp1", "exp2", "exp3")


def pyeer_scores(path: Path) -> np.ndarray:
    """As pyeer's command line reads a score file: the last space-separated field of each line."""
    return np.array([float(line.strip().split(" ")[-1]) for line in path.read_text().splitlines()])


def comparisons(key: str):
    """The scores of an example file as bioxr reads them (bob's files by read_bob)."""
    folder, name = key.split("/")
    if folder == "bob":
        return read_bob(PEERS / "bob" / name)
    if folder == "pyeer":
        return bioxr.from_scores(pyeer_scores(PEERS / "pyeer" / f"{name}_true.txt"),
                                 pyeer_scores(PEERS / "pyeer" / f"{name}_false.txt"))
    case = REF["inputs"]["tie_eer"]
    return bioxr.from_scores(case["mated"], case["nonmated"])


VERIFICATION_KEYS = [f"bob/{f}" for f in BOB_FILES] + [f"pyeer/{e}" for e in PYEER_FILES] + ["hand/tie_eer"]


# ----------------------------------------------------------------- the EER


@pytest.mark.parametrize("key", VERIFICATION_KEYS)
def test_pyeer_convention_is_pyeers_eer(key):
    res = verification.eer(comparisons(key), convention="pyeer")
    assert res.attrs["eer_method"] == "fvc2000" and res.attrs["convention"] == "pyeer"
    assert float(res.eer) == pytest.approx(PYEER[key]["eer"], abs=1e-12)
    assert float(res.threshold) == pytest.approx(PYEER[key]["eer_threshold"], abs=1e-12)


@pytest.mark.parametrize("key", VERIFICATION_KEYS)
def test_fvc2000_method_is_the_pyeer_convention(key):
    cube = comparisons(key)
    assert float(verification.eer(cube, method="fvc2000").eer) == pytest.approx(PYEER[key]["eer"], abs=1e-12)


@pytest.mark.parametrize("key", VERIFICATION_KEYS)
def test_bob_convention_is_bobs_eer(key):
    res = verification.eer(comparisons(key), convention="bob")
    assert res.attrs["eer_method"] == "nearest" and res.attrs["convention"] == "bob"
    assert float(res.eer) == pytest.approx(BOB[key]["eer"], abs=1e-12)
    assert float(res.threshold) == pytest.approx(BOB[key]["eer_threshold"], abs=1e-12)
    # the attained rates are bob's farfrr at bob's threshold
    assert (float(res.fmr) + float(res.fnmr)) / 2 == pytest.approx(BOB[key]["eer"], abs=1e-12)


def test_nearest_tie_goes_lenient_in_bioxr_and_strict_in_bob():
    cube = comparisons("hand/tie_eer")
    assert float(verification.eer(cube, method="nearest").eer) == 0.46875
    assert float(verification.eer(cube, convention="bob").eer) == 0.40625 == BOB["hand/tie_eer"]["eer"]


def test_pyeer_exp3_four_conventions_differ_as_documented():
    cube = comparisons("pyeer/exp3")
    got = {m: round(float(verification.eer(cube, method=m).eer), 6) for m in verification.EER_METHODS}
    assert got == {"fvc2000": 0.114169, "rocch": 0.116138, "interpolated": 0.117023, "nearest": 0.117096}


def test_default_is_still_rocch():
    cube = comparisons("bob/dev-4col.txt")
    res = verification.eer(cube)
    assert res.attrs["eer_method"] == "rocch" and res.attrs["convention"] == "bioxr"
    assert float(res.eer) == float(verification.eer(cube, method="rocch", convention="bioxr").eer)


def test_eer_windowed_bob_convention_equals_full_sort():
    # large enough for the windowed path; bob's rule read off the whole sorted curve by hand
    cube = bioxr.simulate.gaussian(n_subjects=400, n_samples=2, seed=3)  # 320000 cells: a window
    res = verification.eer(cube, convention="bob")
    is_mated = np.asarray(cube.subject.values)[:, None] == np.asarray(cube.reference_subject.values)[None, :]
    values = cube.values.reshape(-1, cube.shape[-1])
    mask = np.broadcast_to(is_mated[:, None, :] if cube.ndim == 3 else is_mated, cube.shape).reshape(values.shape)
    pos, neg = np.sort(values[mask]), np.sort(values[~mask])
    t = np.unique(np.concatenate([pos, neg]))
    far = (neg.size - np.searchsorted(neg, t, side="left")) / neg.size
    frr = np.searchsorted(pos, t, side="left") / pos.size
    gap = np.abs(far - frr)
    k = np.flatnonzero(gap == gap.min())[-1]
    assert float(res.eer) == pytest.approx((far[k] + frr[k]) / 2, abs=1e-15)
    assert float(res.threshold) == pytest.approx((t[k - 1] + t[k]) / 2, abs=1e-15)


# ------------------------------------------------------- FNMR at an FMR target


@pytest.mark.parametrize("key", VERIFICATION_KEYS)
def test_bob_convention_is_bobs_far_threshold(key):
    ops = BOB[key]["frr_at_far"]
    res = verification.fnmr_at_fmr(comparisons(key), [op["far"] for op in ops], convention="bob")
    assert res.attrs["convention"] == "bob"
    np.testing.assert_allclose(res.threshold.values, [op["threshold"] for op in ops], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.fmr.values, [op["far_attained"] for op in ops], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.fnmr.values, [op["frr"] for op in ops], rtol=0, atol=1e-12)
    # thresholds only at non-mated scores: never a lower FNMR than bioxr's
    ours = verification.fnmr_at_fmr(comparisons(key), [op["far"] for op in ops])
    assert (res.fnmr.values >= ours.fnmr.values).all()


@pytest.mark.parametrize("key", VERIFICATION_KEYS)
def test_pyeer_convention_is_pyeers_fmr_operating_points(key):
    names = {0.1: "fmr10", 0.01: "fmr100", 0.001: "fmr1000", 0.0: "fmr0"}
    res = verification.fnmr_at_fmr(comparisons(key), list(names), convention="pyeer")
    np.testing.assert_allclose(res.fnmr.values, [PYEER[key][n] for n in names.values()], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.threshold.values, [PYEER[key][f"{n}_threshold"] for n in names.values()],
                               rtol=0, atol=1e-12)


def test_pyeer_operating_point_may_exceed_the_target():
    res = verification.fnmr_at_fmr(comparisons("bob/dev-4col.txt"), 0.001, convention="pyeer")
    assert float(res.fmr) > 0.001  # the nearest FMR (1/520) lies above the target
    assert float(verification.fnmr_at_fmr(comparisons("bob/dev-4col.txt"), 0.001).fmr) <= 0.001


# ----------------------------------------------------------------- rank ties


def test_bob_cmc_on_bobs_cmc_file():
    cube = read_bob(PEERS / "bob" / "scores-cmc-4col.txt")
    ref = BOB["bob/scores-cmc-4col.txt"]
    curve = identification.cmc_curve(cube, max_rank=len(ref["cmc"]), convention="bob")
    np.testing.assert_allclose(curve.cmc.values, ref["cmc"], rtol=0, atol=1e-12)
    for rank, value in ref["recognition_rate"].items():
        got = identification.identification_rate(cube, int(rank), convention="bob")
        assert float(got.cmc) == pytest.approx(value, abs=1e-12)
    assert curve.attrs["convention"] == "bob"


def tie_cube():
    case = REF["inputs"]["tie_cmc"]
    return score_cube(np.array(case["scores"]), subject=case["subject"], reference_subject=case["reference_subject"])


def test_bob_cmc_breaks_ties_pessimistically():
    ref = BOB["hand/tie_cmc"]
    bob = identification.cmc_curve(tie_cube(), max_rank=len(ref["cmc"]), convention="bob")
    np.testing.assert_allclose(bob.cmc.values, ref["cmc"], rtol=0, atol=1e-12)
    # bioxr's Annex F shares: a spread over ranks 1-2, b over 2-3, c over 2-4, d at 2
    ours = identification.cmc_curve(tie_cube(), max_rank=4)
    expected = [(1 / 2) / 4, (1 + 1 / 2 + 1 / 3 + 1) / 4, (1 + 1 + 2 / 3 + 1) / 4, 1.0]
    np.testing.assert_allclose(ours.cmc.values, expected, rtol=0, atol=1e-12)
    assert (ours.cmc.values >= bob.cmc.values - 1e-12).all()


def test_bob_open_set_dir_uses_the_worst_tied_rank():
    cube = score_cube(np.array([[0.9, 0.9], [0.3, 0.8], [0.6, 0.1]]), subject=["a", "b", "z"],
                      reference_subject=["a", "b"])
    ours = identification.open_set_rates(cube, 0.5)
    bob = identification.open_set_rates(cube, 0.5, convention="bob")
    assert float(ours.dir) == 0.75 and float(bob.dir) == 0.5
    assert bob.attrs["convention"] == "bob" and float(bob.fpir) == float(ours.fpir)
    curve = identification.open_set_curve(cube, convention="bob")
    assert curve.attrs["convention"] == "bob"


# ---------------------------------------------------------------- read_bob


@pytest.mark.parametrize("name", BOB_FILES)
def test_read_bob_reads_bobs_own_files_one_probe_per_line(name):
    lst = read_bob(PEERS / "bob" / name)
    n_lines = len((PEERS / "bob" / name).read_text().splitlines())
    assert lst.attrs["n_probes_from_lines"] == n_lines == 910
    assert "each line is its own probe" in lst.attrs["probe_labels"]
    res = verification.eer(lst, convention="bob")
    assert int(res.n_mated) == 390 and int(res.n_nonmated) == 520  # bob's split: claimed_id == real_id


def test_read_bob_five_and_four_columns_agree():
    four, five = read_bob(PEERS / "bob" / "dev-4col.txt"), read_bob(PEERS / "bob" / "dev-5col.txt")
    assert "model_labels" in five.attrs
    for conv in ("bioxr", "bob", "pyeer"):
        assert float(verification.eer(four, convention=conv).eer) == float(verification.eer(five, convention=conv).eer)


def test_read_bob_keeps_one_real_probe_label():
    cube = read_bob("a a p1 0.9\nb a p1 0.1\n")  # one probe of subject a against two references
    assert "n_probes_from_lines" not in cube.attrs


# ------------------------------------------------------- errors and plumbing


def test_convention_that_does_not_apply_says_which_do():
    cube = comparisons("hand/tie_eer")
    with pytest.raises(ValueError, match=r"does not apply to the EER; the conventions for it are 'bioxr', 'bob', 'pyeer'"):
        verification.eer(cube, convention="sklearn")
    with pytest.raises(ValueError, match=r"does not apply to tied ranks.*'bioxr', 'bob'"):
        identification.cmc_curve(tie_cube(), convention="pyeer")
    with pytest.raises(ValueError, match="not known"):
        verification.fnmr_at_fmr(cube, 0.1, convention="matlab")
    with pytest.raises(ValueError, match=r"convention='bob' computes the EER by method 'nearest' only"):
        verification.eer(cube, method="rocch", convention="bob")


def test_conventions_table_names_a_peer_for_every_rule():
    for statistic, table in conventions.TABLES.items():
        assert set(table) == set(conventions.CONVENTIONS)
        for name in conventions.applies(statistic):
            assert table[name]["rule"] and table[name]["references"]
            if name != "bioxr":
                assert table[name]["peer"]


def test_eer_interval_takes_the_convention():
    cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    for kwargs, method in (({"method": "fvc2000"}, "fvc2000"), ({"convention": "bob"}, "nearest"),
                           ({"convention": "pyeer"}, "fvc2000")):
        res = eer_interval(cube, n_replicates=50, seed=1, **kwargs)
        assert res.attrs["eer_method"] == method
        lo, hi = res.eer_interval.values
        assert 0 <= lo <= hi <= 1
        assert float(res.eer) == float(verification.eer(cube, **kwargs).eer)
    with pytest.raises(ValueError, match="does not apply"):
        eer_interval(cube, n_replicates=10, convention="sklearn")


def test_accessor_passes_the_convention():
    cube = comparisons("bob/dev-4col.txt")
    assert float(cube.bio.eer(convention="pyeer").eer) == pytest.approx(PYEER["bob/dev-4col.txt"]["eer"], abs=1e-12)
    assert cube.bio.fnmr_at_fmr(0.01, convention="bob").attrs["convention"] == "bob"


def test_the_table_lists_every_eer_method():
    assert conventions.EER["bioxr"]["methods"] == verification.EER_METHODS
