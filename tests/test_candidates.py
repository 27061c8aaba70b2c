"""Top-L candidate lists against the score cube they are cut from.

The reference is independent of the code under test: from a random score
cube, each search's full candidate list is built by a plain loop (best
score per candidate subject, sorted with a random tie-break, cut at L and
optionally at a threshold T). Wherever the cut cannot change the answer
(the mate's whole tie range at or above L, thresholds at or beyond T), the
outcome cube, the CMC and the open-set rates of the lists equal those of
the cube (bioxr.outcomes.outcomes, bioxr.identification).
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import bioxr
from bioxr.bootstrap import cmc_interval, open_set_interval
from bioxr.candidates import from_candidates, read_candidates
from bioxr.cube import ScoreCubeError, score_cube
from bioxr.identification import cmc_curve, identification_rate, open_set_curve, open_set_rates
from bioxr.io import ScoreFileError
from bioxr.outcomes import outcomes

RANKS = ("mated_rank", "mated_rank_min", "mated_rank_max")


def examples(n: int):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


# --------------------------------------------------------------------------
# Candidate lists cut from a cube, by a loop
# --------------------------------------------------------------------------


def lists_from_cube(scores, subject, reference_subject, kind, L, seed, cut=None):
    """One row per returned candidate (an empty-list row when none), as a DataFrame."""
    tie_break = random.Random(seed)
    gallery = set(reference_subject)
    sign = 1.0 if kind == "similarity" else -1.0
    rows = []
    for p, row in enumerate(scores):
        best: dict = {}
        for r, s in enumerate(row):
            k = reference_subject[r]
            if k not in best or sign * s > sign * best[k]:
                best[k] = float(s)
        items = list(best.items())
        tie_break.shuffle(items)
        items.sort(key=lambda kv: -sign * kv[1])  # stable: the shuffle breaks the ties
        if cut is not None:
            items = [kv for kv in items if sign * kv[1] >= sign * cut]
        base = {"search": f"q{p}", "subject": subject[p], "enrolled": subject[p] in gallery, "sensor": f"s{p % 2}"}
        for rank, (k, s) in enumerate(items[:L], start=1):
            rows.append({**base, "rank": rank, "candidate": k, "score": s})
        if not items:
            rows.append({**base, "rank": np.nan, "candidate": None, "score": np.nan})
    return pd.DataFrame(rows)


@st.composite
def experiments(draw):
    P = draw(st.integers(1, 8))
    R = draw(st.integers(2, 8))
    reference_subject = draw(st.lists(st.sampled_from("abcde"), min_size=R, max_size=R))  # several refs per subject
    subject = draw(st.lists(st.sampled_from("abcdexz"), min_size=P, max_size=P))  # x, z: not enrolled
    assume(set(subject) & set(reference_subject) and len(set(reference_subject)) >= 2)
    values = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0]), min_size=P * R, max_size=P * R))  # ties
    kind = draw(st.sampled_from(["similarity", "distance"]))
    L = draw(st.integers(1, 5))
    cut = draw(st.sampled_from([None, 1.0, 2.0]))
    seed = draw(st.integers(0, 10**6))
    scores = np.array(values).reshape(P, R)
    cube = score_cube(scores, subject=subject, reference_subject=reference_subject, score_kind=kind)
    frame = lists_from_cube(scores, subject, reference_subject, kind, L, seed, cut)
    return cube, frame, L, cut, kind


def _at_or_beyond(values, cut, kind):
    if cut is None:
        return np.ones(np.shape(values), dtype=bool)
    with np.errstate(invalid="ignore"):
        return values >= cut if kind == "similarity" else values <= cut


@given(experiments())
@examples(150)
def test_outcome_cube_of_the_lists_equals_the_cubes_where_the_cut_cannot_matter(exp):
    cube, frame, L, cut, kind = exp
    full = outcomes(cube)
    out = from_candidates(frame, enrolled="enrolled", score_kind=kind, list_length=L)
    assert out.sizes["search"] == cube.sizes["probe"]
    assert out.attrs["candidate_list_length"] == L
    enrolled = ~np.isnan(full.mated_rank_min.values)
    np.testing.assert_array_equal(out.enrolled.values, enrolled)
    passes = _at_or_beyond(full.mated_score.values, cut, kind)
    exact = enrolled & (full.mated_rank_max.values <= L) & passes
    for name in (*RANKS, "mated_score"):
        np.testing.assert_array_equal(out[name].values[exact], full[name].values[exact])
    assert out.mate_in_list.values[exact].all()
    beyond = enrolled & ((full.mated_rank_min.values > L) | ~passes)
    assert not out.mate_in_list.values[beyond].any()
    for name in RANKS:
        np.testing.assert_array_equal(out[name].values[beyond], L + 1)
        assert np.isnan(out[name].values[~enrolled]).all()
    assert np.isnan(out.mated_score.values[~out.mate_in_list.values]).all()
    # the best non-mate is known where it passes the cut: for impostor searches, and for L >= 2 for all
    known = (~enrolled | (L >= 2)) & _at_or_beyond(full.nonmated_best.values, cut, kind)
    np.testing.assert_array_equal(out.nonmated_best.values[known], full.nonmated_best.values[known])
    assert out.attrs["n_not_in_list"] == int((enrolled & ~out.mate_in_list.values).sum())
    assert out.attrs["n_nonenrolled_searches"] == int((~enrolled).sum())
    assert out.attrs["n_mated_searches"] + out.attrs["n_nonenrolled_searches"] == out.attrs["n_searches"]
    assert out["sensor"].dims == ("search",)


@given(experiments())
@examples(100)
def test_cmc_and_open_set_rates_of_the_lists_equal_the_cubes_up_to_L(exp):
    cube, frame, L, cut, kind = exp
    full = outcomes(cube)
    out = from_candidates(frame, enrolled="enrolled", score_kind=kind, list_length=L)
    lo, hi = full.mated_rank_min.values, full.mated_rank_max.values
    # a tie across the cut at L changes the shares from its lowest rank on; below it nothing changes
    straddle = (lo <= L) & (hi > L)
    top = int(min(L, lo[straddle].min() - 1)) if straddle.any() else L
    curve = cmc_curve(out)
    assert curve.sizes["rank"] == L and curve.attrs["candidate_list_length"] == L
    if top >= 1 and cut is None:
        np.testing.assert_array_equal(curve.cmc.values[:top], cmc_curve(full, max_rank=L).cmc.values[:top])
        assert int(curve.n_probes) == int(cmc_curve(full).n_probes)
    thresholds = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    if cut is not None:
        thresholds = thresholds[_at_or_beyond(thresholds, cut, kind)]
    has_impostors = bool((~out.enrolled.values).any())
    for impostors in ("non-enrolled", "all"):
        if (impostors == "non-enrolled" and not has_impostors) or (impostors == "all" and L < 2):
            continue
        for r in range(1, top + 1):
            mine = open_set_rates(out, thresholds, rank=r, impostors=impostors)
            theirs = open_set_rates(full, thresholds, rank=r, impostors=impostors)
            for name in ("detected", "false_positives", "n_mated_probes", "n_impostor_probes"):
                np.testing.assert_allclose(mine[name].values, theirs[name].values, rtol=0, atol=1e-12)
            assert mine.attrs["candidate_list_length"] == L


@given(experiments())
@examples(25)
def test_open_set_curve_runs_on_any_lists(exp):
    cube, frame, L, cut, kind = exp
    out = from_candidates(frame, enrolled="enrolled", score_kind=kind, list_length=L)
    n = out.attrs["candidate_list_length"]
    if (~out.enrolled.values).any():
        curve = open_set_curve(out, rank=n)
        assert not np.isnan(curve.threshold.values).any()
        nothing = curve.isel(threshold=-1 if kind == "similarity" else 0)  # the sentinel: nothing returned
        assert np.isinf(nothing.threshold) and float(nothing.fpir) == 0.0 and float(nothing.dir) == 0.0
        assert curve.attrs["candidate_list_length"] == n


# --------------------------------------------------------------------------
# Hand-made cases
# --------------------------------------------------------------------------


def frame(rows, columns=("search", "subject", "rank", "candidate", "score")):
    return pd.DataFrame(rows, columns=list(columns))


def test_hand_made_ties_follow_annex_f():
    df = frame([
        ("s1", "a", 1, "b", 0.9), ("s1", "a", 2, "a", 0.8), ("s1", "a", 3, "c", 0.8), ("s1", "a", 4, "d", 0.8),
        ("s1", "a", 5, "e", 0.1),
        ("s2", "b", 1, "b", 0.7), ("s2", "b", 2, "a", 0.7), ("s2", "b", 3, "c", 0.2),
    ])
    out = from_candidates(df)
    # s1: x = 1 better, y = 3 tied (mate included): ranks 2..4, fractional 3
    assert out.mated_rank_min.values.tolist() == [2.0, 1.0]
    assert out.mated_rank_max.values.tolist() == [4.0, 2.0]
    assert out.mated_rank.values.tolist() == [3.0, 1.5]
    assert out.nonmated_best.values.tolist() == [0.9, 0.7]
    assert out.n_candidates.values.tolist() == [5, 3]
    assert out.attrs["candidate_list_length"] == 5
    cmc = cmc_curve(out).cmc.values
    np.testing.assert_allclose(cmc, [0.25, (1 / 3 + 1) / 2, (2 / 3 + 1) / 2, 1.0, 1.0])
    assert out.attrs["n_tied_at_cut"] == 0


def test_tie_with_the_last_candidate_of_a_full_list_is_counted():
    df = frame([("s1", "a", 1, "b", 0.9), ("s1", "a", 2, "a", 0.5), ("s2", "b", 1, "b", 0.5), ("s2", "b", 2, "a", 0.5)])
    out = from_candidates(df)
    assert out.attrs["n_tied_at_cut"] == 2  # both mates tie with the 2nd, last, candidate
    out = from_candidates(df, list_length=3)  # lists not full: nothing was cut
    assert out.attrs["n_tied_at_cut"] == 0


def test_mates_not_in_the_list_are_counted_and_miss_at_every_rank():
    df = frame([("s1", "a", 1, "a", 0.9), ("s1", "a", 2, "b", 0.3),
                ("s2", "b", 1, "c", 0.8), ("s2", "b", 2, "a", 0.6),
                ("s3", "c", 1, "a", 0.5), ("s3", "c", 2, "b", 0.4)])
    out = from_candidates(df)
    assert out.attrs["n_not_in_list"] == 2 and out.attrs["n_mated_searches"] == 3
    assert out.mate_in_list.values.tolist() == [True, False, False]
    assert out.mated_rank.values.tolist() == [1.0, 3.0, 3.0]
    assert np.isnan(out.mated_score.values[1:]).all()
    np.testing.assert_allclose(cmc_curve(out).cmc.values, [1 / 3, 1 / 3])
    assert float(identification_rate(out, 2).cmc) == pytest.approx(1 / 3)


def test_rank_beyond_L_is_refused():
    df = frame([("s1", "a", 1, "a", 0.9), ("s1", "a", 2, "b", 0.3), ("s2", "b", 1, "a", 0.9)])
    out = from_candidates(df)
    with pytest.raises(ValueError, match=r"max_rank=3 is beyond the candidate-list length L=2"):
        cmc_curve(out, max_rank=3)
    with pytest.raises(ValueError, match=r"rank=5 is beyond the candidate-list length L=2"):
        identification_rate(out, [1, 5])
    with pytest.raises(ValueError, match="beyond the candidate-list length"):
        open_set_rates(out, 0.5, rank=3, impostors="all")
    with pytest.raises(ValueError, match="beyond the candidate-list length"):
        cmc_interval(out, max_rank=3, n_replicates=10)
    assert cmc_curve(out, max_rank=2).sizes["rank"] == 2


def test_empty_lists_and_open_set_rates_by_hand():
    df = pd.DataFrame({
        "search": ["m1", "m1", "m2", "n1", "n1", "n2", "n3"],
        "subject": ["a", "a", "b", "x", "x", "y", "z"],
        "mated": [True, True, True, False, False, False, False],
        "rank": [1, 2, np.nan, 1, 2, 1, np.nan],
        "candidate": ["a", "c", None, "a", "b", "c", None],
        "score": [0.9, 0.4, np.nan, 0.7, 0.2, 0.3, np.nan],
    })
    out = from_candidates(df, enrolled="mated")
    assert out.attrs["n_empty_lists"] == 2 and out.attrs["n_nonenrolled_searches"] == 3
    assert out.attrs["n_not_in_list"] == 1  # m2 returned nothing
    r = open_set_rates(out, [0.25, 0.5, 0.95])
    assert r.n_impostor_probes.item() == 3  # n3's empty list is an impostor search with no candidate
    assert r.fpir.values.tolist() == [2 / 3, 1 / 3, 0.0]
    assert r.dir.values.tolist() == [0.5, 0.5, 0.0]
    assert r.attrs["candidate_list_length"] == 2
    curve = open_set_curve(out)
    assert curve.threshold.values.tolist() == [0.3, 0.7, 0.9, np.inf]
    with pytest.raises(ValueError, match="not enrolled"):
        from_candidates(df.assign(candidate=["a", "c", None, "x", "b", "c", None]), enrolled="mated")


def test_duplicate_candidates_keep_their_best_score_and_are_counted():
    df = frame([("s1", "a", 1, "b", 0.9), ("s1", "a", 2, "a", 0.8), ("s1", "a", 3, "b", 0.7), ("s1", "a", 4, "a", 0.1)])
    out = from_candidates(df)
    assert out.attrs["n_duplicate_candidates"] == 2
    assert out.n_candidates.item() == 2 and out.mated_rank.item() == 2.0 and out.mated_score.item() == 0.8
    assert out.attrs["candidate_list_length"] == 4


def test_distance_scores_and_their_rank_order():
    df = frame([("s1", "a", 1, "b", 0.1), ("s1", "a", 2, "a", 0.3), ("s1", "a", 3, "c", 0.5)])
    out = from_candidates(df, score_kind="distance")
    assert out.mated_rank.item() == 2.0 and out.nonmated_best.item() == 0.1
    with pytest.raises(ScoreCubeError, match="contradicts the scores.*score_kind='distance'"):
        from_candidates(df)  # read as similarities, rank 1 has the worst score
    assert from_candidates(df, rank=None).mated_rank.item() == 2.0  # by the scores alone


def test_rank_column_contradiction_names_the_rows():
    df = frame([("s1", "a", 1, "b", 0.9), ("s1", "a", 2, "a", 0.8), ("s2", "b", 1, "b", 0.5),
                ("s2", "b", 2, "a", 0.6), ("s2", "b", 2, "c", 0.1)])
    with pytest.raises(ScoreCubeError, match=r"1 search\(es\): in search 's2', row 2 has rank 1 .* row 3 has rank 2"):
        from_candidates(df)
    ok = frame([("s1", "a", 1, "b", 0.9), ("s1", "a", 2, "a", 0.9), ("s1", "a", 2, "c", 0.9)])
    assert from_candidates(ok).mated_rank.item() == 2.0  # tied scores, any order of ranks


def test_cofactors_on_search_and_per_candidate_columns_reported():
    df = frame([("s1", "a", 1, "a", 0.9, "x", "t1"), ("s1", "a", 2, "b", 0.3, "x", "t2"),
                ("s2", "b", 1, "b", 0.8, "y", "t3")],
               columns=("search", "subject", "rank", "candidate", "score", "sensor", "template"))
    out = from_candidates(df)
    assert out.sensor.dims == ("search",) and out.sensor.values.tolist() == ["x", "y"]
    assert out.attrs["per_candidate_columns"] == ["template"]
    assert out.search.values.tolist() == ["s1", "s2"] and out.subject.values.tolist() == ["a", "b"]
    assert cmc_curve(out.isel(search=[1, 0])).cmc.values.tolist() == cmc_curve(out).cmc.values.tolist()


def test_closed_set_without_a_marker_and_integer_labels():
    df = frame([(10, 1, 1, 2, 0.9), (10, 1, 2, 1, 0.8), (11, 2, 1, 2, 0.7)])
    out = from_candidates(df)
    assert out.attrs["enrolment"].startswith("closed set")
    assert out.search.values.tolist() == [10, 11] and out.search.dtype.kind == "i"
    assert out.enrolled.values.all() and out.mated_rank.values.tolist() == [2.0, 1.0]
    with pytest.raises(ScoreCubeError, match="same type"):
        from_candidates(df.assign(candidate=df.candidate.astype(str)))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(score=None), r"no column for score='score'"),
        (dict(subject="who"), r"no column for subject='who'"),
        (dict(score_kind="similar"), "score_kind='similar'"),
        (dict(list_length=1), r"lists 2 candidates, more than list_length=1"),
        (dict(list_length=0), "list_length=0"),
    ],
)
def test_wrong_inputs_get_clear_errors(change, message):
    df = frame([("s1", "a", 1, "a", 0.9), ("s1", "a", 2, "b", 0.3)])
    if change.get("score", 1) is None:
        df, change = df.drop(columns="score"), {}
    with pytest.raises(ScoreCubeError, match=message):
        from_candidates(df, **change)


def test_table_errors_name_the_row():
    df = frame([("s1", "a", 1, "a", 0.9), ("s1", "b", 2, "b", 0.3)])
    with pytest.raises(ScoreCubeError, match=r"row 1: column 'subject' holds 'b' but row 0 .* one subject"):
        from_candidates(df)
    df = frame([("s1", "a", 1, "a", 0.9), ("s1", "a", 2, "b", "high")])
    with pytest.raises(ScoreCubeError, match=r"row 1, column 'score': 'high' is not a number"):
        from_candidates(df)
    df = frame([("s1", "a", 1, "a", 0.9), ("s1", "a", 2, "b", np.nan)])
    with pytest.raises(ScoreCubeError, match=r"row 1: column 'score' is empty for candidate 'b'"):
        from_candidates(df)
    df = frame([("s1", "a", 1, "a", 0.9), ("s1", "a", 2, "b", 0.5)]).assign(enrolled=["yes", "maybe"])
    with pytest.raises(ScoreCubeError, match=r"row 1, column 'enrolled': 'maybe' is not True or False"):
        from_candidates(df, enrolled="enrolled")
    with pytest.raises(ScoreCubeError, match=r"pass enrolled='enrolled'"):
        from_candidates(df)


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


@given(experiments())
@examples(15)
def test_csv_tsv_and_parquet_read_as_the_frame(tmp_path_factory, exp):
    _, df, L, _, kind = exp
    expected = from_candidates(df, enrolled="enrolled", score_kind=kind, list_length=L)
    folder = tmp_path_factory.mktemp("lists")
    df.to_csv(folder / "lists.csv", index=False)
    df.to_csv(folder / "lists.tsv", index=False, sep="\t")
    df.to_parquet(folder / "lists.parquet")
    for name in ("lists.csv", "lists.tsv", "lists.parquet"):
        got = read_candidates(folder / name, enrolled="enrolled", score_kind=kind, list_length=L)
        assert got.attrs.pop("source").endswith(name)
        for var in expected.data_vars:
            np.testing.assert_array_equal(got[var].values, expected[var].values)
        assert got.search.values.tolist() == expected.search.values.tolist()
        assert got.attrs == expected.attrs


def test_file_errors_name_the_file_line_and_column(tmp_path):
    path = tmp_path / "lists.csv"
    path.write_text("search,subject,rank,candidate,score\n"
                    "q1,a,1,a,0.9\n"
                    "\n"
                    'q1,a,2,"b\nb",0.5\n'
                    "q2,b,1,a,0.8\n"
                    "q2,b,2,b,high\n")
    with pytest.raises(ScoreFileError, match=r"lists.csv: line 7, column 'score': 'high' is not a number"):
        read_candidates(path)
    path.write_text("search,subject,rank,candidate,score\nq1,a,1,a,0.9\nq1,a,2,b,0.5,7\n")
    with pytest.raises(ScoreFileError, match=r"lists.csv: is not valid CSV .*line 3"):
        read_candidates(path)
    path.write_text("search,subject,rank,candidate,score\nq1,a,1,a,0.9\nq1,a,2,,0.5\n")
    with pytest.raises(ScoreFileError, match=r"line 3: column 'candidate' is empty but column 'score' holds"):
        read_candidates(path)
    path.write_text("search,subject,rank,candidate,score\nq1,a,1,b,0.4\nq1,a,2,a,0.5\n")
    with pytest.raises(ScoreFileError, match=r"line 2 has rank 1 and score '0.4' but line 3 has rank 2"):
        read_candidates(path)
    path.write_text("search,subject,candidate,score\nq1,a,b,0.4\n")
    with pytest.raises(ScoreFileError, match=r"lists.csv: the table has no column for rank='rank'"):
        read_candidates(path)
    assert read_candidates(path, rank=None).attrs["n_not_in_list"] == 1
    with pytest.raises(ScoreFileError, match="no such file"):
        read_candidates(tmp_path / "absent.csv")
    with pytest.raises(ScoreFileError, match="format="):
        read_candidates(tmp_path / "lists.json")
    pd.DataFrame({"search": ["q1", "q1"], "subject": ["a", "a"], "candidate": ["a", "b"],
                  "score": ["0.9", "x"]}).to_parquet(tmp_path / "l.parquet")
    with pytest.raises(ScoreFileError, match=r"l.parquet: row 2, column 'score': 'x' is not a number"):
        read_candidates(tmp_path / "l.parquet", rank=None)


# --------------------------------------------------------------------------
# Bootstrap and the comparison-list door
# --------------------------------------------------------------------------


def test_cmc_and_open_set_intervals_run_on_candidate_lists():
    cube = bioxr.simulate.gaussian(n_subjects=30, n_samples=2, seed=0)
    scores = cube.values
    subj = [str(s) for s in cube.subject.values]
    refs = [str(s) for s in cube.reference_subject.values]
    subj = [s if i % 5 else "nobody" for i, s in enumerate(subj)]  # some probes not enrolled
    df = lists_from_cube(scores, subj, refs, "similarity", 5, seed=0)
    out = from_candidates(df, enrolled="enrolled")
    res = cmc_interval(out, n_replicates=200, seed=1)
    assert res.sizes["rank"] == 5
    np.testing.assert_array_equal(res.cmc.values, cmc_curve(out).cmc.values)
    lo, hi = res.cmc_interval.sel(bound="lower").values, res.cmc_interval.sel(bound="upper").values
    assert (lo <= res.cmc.values + 1e-12).all() and (res.cmc.values <= hi + 1e-12).all()
    t = [0.0, 1.0, 2.0]
    ci = open_set_interval(out, t, rank=3, n_replicates=200, seed=1)
    rates = open_set_rates(out, t, rank=3)
    np.testing.assert_array_equal(ci.dir.values, rates.dir.values)
    np.testing.assert_array_equal(ci.fpir.values, rates.fpir.values)
    assert ci.attrs["candidate_list_length"] == 5
    with pytest.raises(ValueError, match="beyond the candidate-list length"):
        open_set_interval(out, t, rank=6, n_replicates=10)


def test_comparison_lists_go_to_outcomes(monkeypatch):
    cube = bioxr.simulate.gaussian(n_subjects=6, seed=0)
    trials = bioxr.to_comparisons(cube)
    expected = cmc_curve(cube).cmc.values
    np.testing.assert_allclose(cmc_curve(trials).cmc.values, expected)  # the list's own outcome cube
    np.testing.assert_allclose(open_set_rates(trials, [1.0, 2.0], impostors="all").fpir.values,
                               open_set_rates(cube, [1.0, 2.0], impostors="all").fpir.values)
    seen = []

    def spy(obj, *, ranks_only=False):
        seen.append((obj, ranks_only))
        return outcomes(cube, ranks_only=ranks_only)

    monkeypatch.setattr(bioxr.identification, "outcomes", spy)
    np.testing.assert_array_equal(cmc_curve(trials).cmc.values, expected)
    assert seen[0][0] is trials and seen[0][1] is True
    open_set_rates(trials, 0.5, impostors="all")
    assert seen[1][0] is trials and seen[1][1] is False
