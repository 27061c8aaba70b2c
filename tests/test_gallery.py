"""All-against-all single- and multi-template evaluation against seeds/001's pseudocode."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bioxr
from bioxr.gallery import all_against_all, best_per_subject
from bioxr.verification import error_rates


def seed001_single(M, label, t):
    """seeds/001 'Verification single-template' for distances, literally."""
    GA = FA = FR = GR = 0
    G = M.shape[0]
    for i in range(G):
        for j in range(G):
            if i == j:
                continue
            if M[i, j] <= t:
                if label[i] == label[j]:
                    GA += 1
                else:
                    FA += 1
            elif label[i] == label[j]:
                FR += 1
            else:
                GR += 1
    return GA, FA, FR, GR


def seed001_multi(M, label, t):
    """seeds/001 'Verification multiple-templates': best (min) per identity, self excluded."""
    GA = FA = FR = GR = 0
    G = M.shape[0]
    for i in range(G):
        for lab in sorted(set(label)):
            cells = [M[i, j] for j in range(G) if label[j] == lab and j != i]
            if not cells:
                continue
            diff = min(cells)
            if diff <= t:
                if label[i] == lab:
                    GA += 1
                else:
                    FA += 1
            elif label[i] == lab:
                FR += 1
            else:
                GR += 1
    return GA, FA, FR, GR


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 5), st.integers(2, 4), st.integers(0, 2**32 - 1))
def test_single_and_multi_template_match_seed001(n, s, seed):
    rng = np.random.default_rng(seed)
    g = n * s
    M = rng.integers(0, 6, (g, g)).astype(float)
    label = np.repeat(np.arange(n), s)
    cube = all_against_all(M, label, score_kind="distance")
    multi = best_per_subject(cube)
    for t in (-1.0, 0.0, 2.0, 3.5, 5.0, 9.0):
        GA, FA, FR, GR = seed001_single(M, label, t)
        r = error_rates(cube, t)
        assert (int(r.false_matches), int(r.false_nonmatches)) == (FA, FR)
        assert int(r.n_mated) == GA + FR == g * (s - 1)  # TG
        assert int(r.n_nonmated) == FA + GR == g * (n - 1) * s  # TI
        GA, FA, FR, GR = seed001_multi(M, label, t)
        r = error_rates(multi, t)
        assert (int(r.false_matches), int(r.false_nonmatches)) == (FA, FR)
        assert int(r.n_mated) == GA + FR == g  # TG = |G|
        assert int(r.n_nonmated) == FA + GR == g * (n - 1)  # TI = |G|(N-1)


def test_multi_template_similarity_takes_the_highest():
    M = np.array([[9.0, 1.0, 0.3, 0.2], [1.0, 9.0, 0.9, 0.1], [0.5, 0.4, 9.0, 0.6], [0.2, 0.7, 0.8, 9.0]])
    multi = best_per_subject(all_against_all(M, ["a", "a", "b", "b"]))
    assert multi.sel(reference="a").values.tolist() == [1.0, 1.0, 0.5, 0.7]
    assert multi.sel(reference="b").values.tolist() == [0.3, 0.9, 0.6, 0.8]
    assert multi.attrs["templates"] == "multi"


def test_all_against_all_rejects_non_square():
    with pytest.raises(ValueError, match="square"):
        all_against_all(np.zeros((3, 4)), [1, 2, 3])


def test_accessor_matches_function():
    rng = np.random.default_rng(0)
    cube = all_against_all(rng.random((6, 6)), np.repeat([1, 2, 3], 2))
    assert cube.bio.best_per_subject().identical(best_per_subject(cube))
    assert bioxr.verification.eer(cube).attrs["eer_method"] == "rocch"


def test_a_matrix_file_with_shuffled_columns_gives_the_seed001_counts(tmp_path):
    """Read back from a matrix CSV (columns in another order, subjects in the ids), the counts are seeds/001's."""
    rng = np.random.default_rng(4)
    n, s = 4, 3
    g = n * s
    M = rng.integers(0, 6, (g, g)).astype(float)
    label = np.repeat(np.arange(n), s)
    ids = [f"p{lab}_{k}" for lab, k in zip(label, np.tile(np.arange(s), n))]
    perm = rng.permutation(g)
    lines = ["id," + ",".join(ids[j] for j in perm)]
    lines += [ids[i] + "," + ",".join(f"{M[i, j]:g}" for j in perm) for i in range(g)]
    path = tmp_path / "m.csv"
    path.write_text("\n".join(lines) + "\n")
    cube = bioxr.gallery.read_matrix(path, score_kind="distance")
    np.testing.assert_array_equal(cube.values, M)  # the columns are back in the rows' order
    for t in (0.0, 2.0, 4.5):
        GA, FA, FR, GR = seed001_single(M, label, t)
        r = error_rates(cube, t)
        assert (int(r.false_matches), int(r.false_nonmatches), int(r.n_mated), int(r.n_nonmated)) == (
            FA, FR, GA + FR, FA + GR)
        GA, FA, FR, GR = seed001_multi(M, label, t)
        r = error_rates(best_per_subject(cube), t)
        assert (int(r.false_matches), int(r.false_nonmatches), int(r.n_mated), int(r.n_nonmated)) == (
            FA, FR, GA + FR, FA + GR)
    assert cube.attrs["n_self_comparisons"] == g


def test_multi_template_cube_is_c_ordered_for_the_outcome_kernel():
    """Eight subjects (a multiple of eight references): the rank counter reads the rows eight cells at a time."""
    cube = all_against_all(np.random.default_rng(1).random((24, 24)), np.repeat(np.arange(8), 3))
    multi = best_per_subject(cube)
    assert multi.values.flags["C_CONTIGUOUS"]
    assert 0 <= float(bioxr.identification.cmc_curve(multi, max_rank=1).cmc.sel(rank=1)) <= 1
