"""The outcome cube checked against a brute-force reading of ISO/IEC 19795-1 Annex F.2.

For each probe the reference is a plain loop over its cells (METHODS.md
section 2): every enrolled subject's candidate score is its best score over
its references (NaN cells and self comparisons skipped); ``x`` counts the
other subjects whose best beats the mate's best, ``y`` the subjects tied
with it, the mate included; the rank is spread over ``x+1 .. x+y``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bioxr import simulate
from bioxr.cube import ScoreCubeError, score_cube
from bioxr.outcomes import outcomes

VARIABLES = ("mated_score", "nonmated_best", "mated_rank", "mated_rank_min", "mated_rank_max", "n_candidates")


def examples(n: int):
    return settings(
        max_examples=n, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow]
    )


# --------------------------------------------------------------------------
# Brute force
# --------------------------------------------------------------------------


def better(a: float, b: float, kind: str) -> bool:
    return a > b if kind == "similarity" else a < b


def brute_probe(row, probe_subject, reference_subject, kind, skip=()):
    """Outcomes of one probe from its row of scores (one per reference), by a loop.

    ``skip`` holds the reference positions that are self comparisons."""
    best: dict = {}
    for r, s in enumerate(row):
        s = float(s)
        if math.isnan(s) or r in skip:
            continue
        k = reference_subject[r]
        if k not in best or better(s, best[k], kind):
            best[k] = s
    nonmated_best = math.nan
    for k, b in best.items():
        if k != probe_subject and (math.isnan(nonmated_best) or better(b, nonmated_best, kind)):
            nonmated_best = b
    n_candidates = float(len(best))
    if probe_subject not in best:
        return (math.nan, nonmated_best, math.nan, math.nan, math.nan, n_candidates)
    mate = best[probe_subject]
    x = 0
    y = 1  # the mate itself
    for k, b in best.items():
        if k == probe_subject:
            continue
        if better(b, mate, kind):
            x += 1
        elif b == mate:
            y += 1
    return (mate, nonmated_best, x + (y + 1) / 2, float(x + 1), float(x + y), n_candidates)


@dataclass
class Case:
    scores: np.ndarray  # (P, C, R)
    subject: list
    reference_subject: list
    probe_id: list | None
    reference_id: list | None
    kind: str

    def cube(self):
        P, C, R = self.scores.shape
        return score_cube(
            self.scores,
            subject=self.subject,
            reference_subject=self.reference_subject,
            dims=("probe", "collection", "reference"),
            coords={"collection": np.arange(C), "weather": ("collection", ["w"] * C)},
            probe_id=self.probe_id,
            reference_id=self.reference_id,
            score_kind=self.kind,
        )

    def brute(self):
        P, C, R = self.scores.shape
        out = np.empty((P, C, len(VARIABLES)))
        for p in range(P):
            skip = set()
            if self.probe_id is not None:
                skip = {r for r in range(R) if self.reference_id[r] == self.probe_id[p]}
            for c in range(C):
                out[p, c] = brute_probe(self.scores[p, c], self.subject[p], self.reference_subject, self.kind, skip)
        return out


@st.composite
def cases(draw, kind=None):
    P = draw(st.integers(1, 5))
    C = draw(st.integers(1, 3))
    R = draw(st.integers(2, 7))
    subject = draw(st.lists(st.sampled_from(["a", "b", "c", "z"]), min_size=P, max_size=P))
    # several references per subject: labels drawn with repetition
    reference_subject = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=R, max_size=R))
    flat = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, math.nan]), min_size=P * C * R, max_size=P * C * R))
    probe_id = reference_id = None
    if draw(st.booleans()):
        pool = [f"i{k}" for k in range(P + R)]
        probe_id = draw(st.permutations(pool))[:P]
        reference_id = draw(st.permutations(pool))[:R]
    kind = draw(st.sampled_from(["similarity", "distance"])) if kind is None else kind
    case = Case(np.array(flat).reshape(P, C, R), subject, reference_subject, probe_id, reference_id, kind)
    try:
        case.cube()
    except ScoreCubeError:
        assume(False)
    return case


def as_array(ds):
    return np.stack([ds[v].values for v in VARIABLES], axis=-1)


# --------------------------------------------------------------------------
# Property-based: outcomes vs the brute force
# --------------------------------------------------------------------------


@examples(200)
@given(case=cases())
def test_outcomes_match_brute_force(case):
    out = outcomes(case.cube())
    assert out.mated_rank.dims == ("probe", "collection")
    np.testing.assert_array_equal(as_array(out), case.brute())


@examples(60)
@given(case=cases())
def test_ranks_only_gives_the_same_ranks(case):
    cube = case.cube()
    ranks = outcomes(cube, ranks_only=True)
    assert set(ranks.data_vars) == {"mated_rank", "mated_rank_min", "mated_rank_max"}
    xr.testing.assert_identical(ranks, outcomes(cube)[list(ranks.data_vars)])


@examples(40)
@given(case=cases(), data=st.data())
def test_permuting_references_changes_nothing_and_probes_follow(case, data):
    cube = case.cube()
    ref_perm = list(data.draw(st.permutations(range(cube.sizes["reference"]))))
    probe_perm = list(data.draw(st.permutations(range(cube.sizes["probe"]))))
    base = outcomes(cube)
    xr.testing.assert_identical(outcomes(cube.isel(reference=ref_perm)), base)
    xr.testing.assert_identical(outcomes(cube.isel(probe=probe_perm)), base.isel(probe=probe_perm))


@examples(20)
@given(case=cases())
def test_dask_chunked_equals_in_memory_random(case):
    cube = case.cube()
    lazy = cube.chunk({"probe": 2, "collection": 1})
    res = outcomes(lazy)
    assert res.mated_rank.chunks is not None  # computed lazily, chunk by chunk
    xr.testing.assert_identical(res.compute(), outcomes(cube))


def test_outcomes_on_photohead_with_ties_match_brute_force():
    # subject is a probe dimension here; round the scores so subjects tie
    cube = simulate.photohead(4, 3, 3, seed=6)
    cube = cube.copy(data=np.round(cube.values))
    out = outcomes(cube)
    ref_subject = cube.reference_subject.values.tolist()
    for s, subj in enumerate(cube.subject.values.tolist()):
        for i in range(cube.sizes["image"]):
            for c in range(cube.sizes["collection"]):
                row = cube.values[s, i, c]
                expected = brute_probe(row, subj, ref_subject, "similarity")
                got = tuple(float(out[v].values[s, i, c]) for v in VARIABLES)
                np.testing.assert_array_equal(got, expected)
    assert bool((out.mated_rank_max > out.mated_rank_min).any()), "the rounding should create ties"


def _brute_rows(values, subject_of_row, reference_subject, kind, self_col_of_row=None):
    """Brute force over the rows of a (rows, R) array; row i belongs to subject_of_row[i]."""
    out = np.empty((values.shape[0], len(VARIABLES)))
    for i, row in enumerate(values.tolist()):
        skip = () if self_col_of_row is None or self_col_of_row[i] < 0 else (self_col_of_row[i],)
        out[i] = brute_probe(row, subject_of_row[i], reference_subject, kind, skip)
    return out


def test_large_photohead_with_ties_matches_brute_force():
    # > 4 * 2**17 cells: the blocked, two-threaded path; subjects' references are contiguous
    cube = simulate.photohead(32, 4, 40, seed=12)
    cube = cube.copy(data=np.round(cube.values, 1))
    assert cube.size >= 4 * 2**17
    out = outcomes(cube)
    S, I, C, R = cube.shape
    rows_subject = [subj for subj in cube.subject.values.tolist() for _ in range(I * C)]
    expected = _brute_rows(cube.values.reshape(-1, R), rows_subject, cube.reference_subject.values.tolist(), "similarity")
    np.testing.assert_array_equal(as_array(out).reshape(-1, len(VARIABLES)), expected)
    assert bool((out.mated_rank_max > out.mated_rank_min).any())


@pytest.mark.parametrize("kind", ["similarity", "distance"])
def test_large_one_reference_per_subject_matches_brute_force(kind):
    # one reference per subject, no ids: the no-copy path of ranks_only
    rng = np.random.default_rng(8)
    n = 760
    subject = [f"s{i}" for i in range(n)]
    scores = rng.integers(0, 20, size=(n, n)).astype(float)
    scores[np.arange(n), np.arange(n)] += rng.integers(0, 6, size=n)
    cube = score_cube(scores, subject=subject, reference_subject=subject, score_kind=kind)
    full = outcomes(cube)
    expected = _brute_rows(scores, subject, subject, kind)
    np.testing.assert_array_equal(as_array(full), expected)
    ranks = outcomes(cube, ranks_only=True)
    xr.testing.assert_identical(ranks, full[list(ranks.data_vars)])
    np.testing.assert_array_equal(cube.values, scores)  # the scores are left alone


@pytest.mark.parametrize("kind", ["similarity", "distance"])
def test_large_all_against_all_matches_brute_force(kind):
    # interleaved subjects (not contiguous), self comparisons, NaN cells, integer ties
    rng = np.random.default_rng(5)
    n = 800
    subject = [f"s{i % 160}" for i in range(n)]
    ids = [f"x{i}" for i in range(n)]
    scores = rng.integers(0, 12, size=(n, n)).astype(float)
    scores[rng.random((n, n)) < 0.02] = np.nan
    cube = score_cube(scores, subject=subject, reference_subject=subject, probe_id=ids, reference_id=ids, score_kind=kind)
    out = outcomes(cube)
    expected = _brute_rows(scores, subject, subject, kind, list(range(n)))
    np.testing.assert_array_equal(as_array(out), expected)


# --------------------------------------------------------------------------
# Hand-made Annex F cases with known answers
# --------------------------------------------------------------------------


def one_probe(row, refs, subject="a", kind="similarity", **kw):
    cube = score_cube(np.array([row], dtype=float), subject=[subject], reference_subject=refs, score_kind=kind, **kw)
    out = outcomes(cube).isel(probe=0)
    return {v: float(out[v]) for v in VARIABLES}


def test_mate_tied_with_two_others_at_the_top():
    r = one_probe([5.0, 5.0, 5.0, 1.0], ["a", "b", "c", "d"])
    assert (r["mated_rank_min"], r["mated_rank_max"], r["mated_rank"]) == (1.0, 3.0, 2.0)
    assert r["mated_score"] == 5.0 and r["nonmated_best"] == 5.0 and r["n_candidates"] == 4.0


def test_one_better_and_one_tied():
    r = one_probe([4.0, 5.0, 4.0, 1.0], ["a", "b", "c", "d"])
    assert (r["mated_rank_min"], r["mated_rank_max"], r["mated_rank"]) == (2.0, 3.0, 2.5)


def test_no_tie_gives_an_integer_rank():
    r = one_probe([4.0, 5.0, 3.9, 6.0], ["a", "b", "c", "d"])
    assert (r["mated_rank_min"], r["mated_rank_max"], r["mated_rank"]) == (3.0, 3.0, 3.0)


def test_subjects_are_ranked_not_templates():
    # b has three references all above the mate: as templates the mate would be 4th,
    # as subjects it is 2nd
    r = one_probe([6.0, 7.0, 7.0, 7.0, 1.0], ["a", "b", "b", "b", "c"])
    assert (r["mated_rank_min"], r["mated_rank_max"], r["mated_rank"]) == (2.0, 2.0, 2.0)
    assert r["n_candidates"] == 3.0


def test_mate_best_over_its_references():
    # the mate's weaker reference (1) must not be used: its best is 6, tied with c
    r = one_probe([1.0, 6.0, 5.0, 6.0], ["a", "a", "b", "c"])
    assert r["mated_score"] == 6.0
    assert (r["mated_rank_min"], r["mated_rank_max"]) == (1.0, 2.0)


def test_distance_best_is_lowest():
    r = one_probe([1.0, 1.0, 3.0, 0.5], ["a", "b", "c", "d"], kind="distance")
    # d (0.5) beats the mate (1.0); b ties with it
    assert (r["mated_rank_min"], r["mated_rank_max"], r["mated_rank"]) == (2.0, 3.0, 2.5)
    assert r["mated_score"] == 1.0 and r["nonmated_best"] == 0.5


def test_not_enrolled_probe_has_nan_rank():
    cube = score_cube(np.array([[1.0, 0.0], [3.0, 2.0]]), subject=["a", "z"], reference_subject=["a", "b"])
    out = outcomes(cube).isel(probe=1)
    assert math.isnan(float(out.mated_rank)) and math.isnan(float(out.mated_score))
    assert math.isnan(float(out.mated_rank_min)) and math.isnan(float(out.mated_rank_max))
    assert float(out.nonmated_best) == 3.0 and float(out.n_candidates) == 2.0


def test_mate_never_compared_has_nan_rank():
    cube = score_cube(
        np.array([[np.nan, 2.0, 1.0], [1.0, 5.0, 0.0]]), subject=["a", "b"], reference_subject=["a", "b", "c"]
    )
    out = outcomes(cube)
    assert math.isnan(float(out.mated_rank[0])) and float(out.n_candidates[0]) == 2.0
    assert float(out.nonmated_best[0]) == 2.0
    assert float(out.mated_rank[1]) == 1.0


def test_self_comparison_is_excluded():
    # probe p0 is also reference p0 (score 9): its mate score must come from a's other reference
    r = one_probe([9.0, 4.0, 5.0], ["a", "a", "b"], probe_id=["p0"], reference_id=["p0", "p1", "p2"])
    assert r["mated_score"] == 4.0
    assert (r["mated_rank_min"], r["mated_rank_max"]) == (2.0, 2.0)
    # without ids the self comparison would count
    r = one_probe([9.0, 4.0, 5.0], ["a", "a", "b"])
    assert r["mated_score"] == 9.0 and r["mated_rank"] == 1.0


def test_nan_cells_are_never_candidates():
    r = one_probe([2.0, np.nan, np.nan, 1.0], ["a", "b", "b", "c"])
    assert r["n_candidates"] == 2.0 and r["nonmated_best"] == 1.0 and r["mated_rank"] == 1.0


def test_attrs_and_coordinates():
    cube = simulate.photohead(4, 2, 3, seed=1)
    out = outcomes(cube)
    assert out.attrs["score_kind"] == "similarity"
    assert "Annex F" in out.attrs["tie_rule"]
    for name in ("weather", "time", "subject_effect", "image_effect"):
        xr.testing.assert_identical(out[name], cube[name])
    assert "reference_subject" not in out.coords and "reference" not in out.dims
    assert dict(out.sizes) == {"subject": 4, "image": 2, "collection": 3}


# --------------------------------------------------------------------------
# Dask
# --------------------------------------------------------------------------


def test_dask_chunked_photohead_equals_in_memory():
    eager = simulate.photohead(6, 3, 7, seed=9)
    lazy = simulate.photohead(6, 3, 7, seed=9, chunks={"collection": 3})
    res = outcomes(lazy)
    assert res.mated_rank.chunks is not None
    xr.testing.assert_identical(res.compute(), outcomes(eager))


def test_reference_chunks_are_joined():
    eager = simulate.photohead(5, 2, 6, seed=3)
    lazy = eager.chunk({"collection": 2, "reference": 3})
    xr.testing.assert_identical(outcomes(lazy).compute(), outcomes(eager))


def test_rechunked_lazy_photohead():
    lazy = simulate.photohead(5, 2, 6, seed=3, chunks=2).chunk({"reference": 3})
    xr.testing.assert_identical(outcomes(lazy).compute(), outcomes(simulate.photohead(5, 2, 6, seed=3)))


def test_outcomes_requires_mated_but_not_nonmated():
    # a single subject: no non-mated comparison, yet outcomes are defined (rank 1)
    cube = xr.DataArray(
        np.array([[3.0, 2.0]]),
        dims=("probe", "reference"),
        coords={"subject": ("probe", ["a"]), "reference_subject": ("reference", ["a", "a"])},
    )
    out = outcomes(cube)
    assert float(out.mated_rank[0]) == 1.0 and math.isnan(float(out.nonmated_best[0]))
    with pytest.raises(ScoreCubeError):
        outcomes(cube.assign_coords(reference_subject=("reference", ["b", "c"])))


def test_row_counts_of_a_block_in_fortran_order():
    """A transposed block (not C-ordered) with a multiple of 8 references: once a crash of .view(np.uint64)."""
    from bioxr.outcomes import _count_per_row

    mask = np.random.default_rng(0).random((24, 16)) < 0.4
    for block in (np.asfortranarray(mask), mask.T.copy().T, mask[:, ::-1]):  # none is C-contiguous
        np.testing.assert_array_equal(_count_per_row(block), mask.sum(axis=1))
