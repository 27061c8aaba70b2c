"""Tests of bioxr.io: round trips through every reader/writer, bad input, real BSSR1 data."""

from __future__ import annotations

import csv
import io
import zipfile

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import bioxr
from bioxr.comparisons import is_comparison_list
from bioxr.cube import ScoreCubeError, compared_mask, mated_mask, score_cube
from bioxr.io import (
    ScoreFileError,
    open_score_cube,
    read_bob,
    read_long,
    read_matrix_csv,
    read_npz,
    read_scores,
    to_netcdf,
    to_zarr,
    write_npz,
)

HYPOTHESIS = settings(max_examples=25, deadline=None)
LABEL = st.text(alphabet="abcXYZ019_-.é名", min_size=1, max_size=5)


# ------------------------------------------------------------------ helpers
def write_matrix(path, probe_ids, reference_ids, scores):
    """A matrix CSV written with the csv module; NaN becomes an empty cell."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([""] + list(reference_ids))
        for pid, row in zip(probe_ids, scores):
            writer.writerow([pid] + ["" if np.isnan(v) else repr(float(v)) for v in row])
    return path


def write_rows(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_text(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def matrix_of(cube, probes, references):
    """Scores of a cube in the order of the given labels."""
    return cube.sel(probe=list(probes), reference=list(references)).values


def compared_part(probe_ids, ref_ids, scores):
    """The probes and references with at least one score: only they appear in a long file."""
    rows, cols = ~np.isnan(scores).all(1), ~np.isnan(scores).all(0)
    return [p for p, k in zip(probe_ids, rows) if k], [r for r, k in zip(ref_ids, cols) if k], scores[rows][:, cols]


@st.composite
def labelled_scores(draw, same_ids=False):
    """Unique probe and reference ids, subjects, scores with NaN; at least one mated and one non-mated score."""
    n_probe = draw(st.integers(1, 5))
    n_ref = draw(st.integers(2, 5))
    pool = draw(st.lists(LABEL, min_size=n_probe + n_ref, max_size=n_probe + n_ref + 3, unique=True))
    probe_ids = pool[:n_probe]
    ref_ids = [probe_ids[0]] + pool[n_probe:n_probe + n_ref - 1]
    if same_ids:
        probe_subjects, ref_subjects = list(probe_ids), list(ref_ids)
    else:
        subjects = draw(st.lists(LABEL, min_size=2, max_size=4, unique=True))
        probe_subjects = [draw(st.sampled_from(subjects)) for _ in probe_ids]
        ref_subjects = [probe_subjects[0]] + [draw(st.sampled_from(subjects)) for _ in ref_ids[1:]]
        other = next(s for s in subjects if s != probe_subjects[0])
        ref_subjects[1] = other
        probe_ids = [f"p{p}" for p in probe_ids]  # sample ids distinct from reference sample ids
    values = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=n_probe * n_ref,
                           max_size=n_probe * n_ref))
    scores = np.array(values).reshape(n_probe, n_ref)
    holes = np.array(draw(st.lists(st.booleans(), min_size=scores.size, max_size=scores.size)))
    scores[holes.reshape(scores.shape)] = np.nan
    scores[0, :2] = [0.5, 0.25]  # a mated and a non-mated comparison
    return probe_ids, ref_ids, probe_subjects, ref_subjects, scores


# ------------------------------------------------------------- round trips
@HYPOTHESIS
@given(data=labelled_scores(same_ids=True))
def test_matrix_csv_round_trip(tmp_path_factory, data):
    probe_ids, ref_ids, _, _, scores = data
    path = write_matrix(tmp_path_factory.mktemp("m") / "s.csv", probe_ids, ref_ids, scores)
    cube = read_matrix_csv(path)
    assert cube.dims == ("probe", "reference")
    assert list(cube["probe"].values) == probe_ids and list(cube["subject"].values) == probe_ids
    assert list(cube["reference_subject"].values) == ref_ids
    np.testing.assert_array_equal(cube.values, scores)
    assert cube.attrs["n_not_compared"] == int(np.isnan(scores).sum())
    assert "probe_id" not in cube.coords and "n_missing" not in cube.attrs


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@HYPOTHESIS
@given(data=labelled_scores())
def test_long_round_trip(tmp_path_factory, suffix, data):
    probe_ids, ref_ids, psubj, rsubj, scores = data
    rows = [[p, ps, r, rs, float(scores[i, j])]
            for i, (p, ps) in enumerate(zip(probe_ids, psubj))
            for j, (r, rs) in enumerate(zip(ref_ids, rsubj)) if not np.isnan(scores[i, j])]
    columns = ["probe", "probe_subject", "reference", "ref_subject", "score"]
    path = tmp_path_factory.mktemp("l") / f"s{suffix}"
    if suffix == ".csv":
        write_rows(path, columns, [row[:4] + [repr(row[4])] for row in rows[::-1]])
    else:
        pd.DataFrame(rows[::-1], columns=columns).to_parquet(path)
    cube = read_long(path, probe_subject="probe_subject", reference_subject="ref_subject", layout="cube")
    probes, refs, part = compared_part(probe_ids, ref_ids, scores)
    assert sorted(cube["probe"].values) == sorted(probes) and sorted(cube["reference"].values) == sorted(refs)
    np.testing.assert_array_equal(matrix_of(cube, probes, refs), part)
    assert dict(zip(cube["probe"].values, cube["subject"].values)).items() <= dict(zip(probe_ids, psubj)).items()
    assert dict(zip(cube["reference"].values, cube["reference_subject"].values)).items() <= dict(
        zip(ref_ids, rsubj)).items()
    assert cube.attrs["n_not_compared"] == int(np.isnan(part).sum())
    assert cube.attrs["n_self_comparisons"] == 0


def test_long_csv_ids_are_subjects_and_stay_text(tmp_path):
    path = write_rows(tmp_path / "s.csv", ["probe", "reference", "score"],
                      [["007", "007", "0.9"], ["007", "7", "0.1"], ["7", "7", "0.8"], ["7", "007", ""]])
    cube = read_long(path)
    assert list(cube["probe"].values) == ["007", "7"]
    assert list(cube["subject"].values) == ["007", "7"]
    assert "probe_id" not in cube.coords
    np.testing.assert_array_equal(cube.values, [[0.9, 0.1], [np.nan, 0.8]])
    assert cube.attrs["n_not_compared"] == 1  # the explicit empty score


def test_long_self_comparisons_are_marked_and_counted(tmp_path):
    rows = [["s1", "a", "s1", "a", "1.0"], ["s1", "a", "s2", "a", "0.9"], ["s1", "a", "s3", "b", "0.1"],
            ["s2", "a", "s1", "a", "0.8"]]
    path = write_rows(tmp_path / "s.csv", ["probe", "ps", "reference", "rs", "score"], rows)
    cube = read_long(path, probe_subject="ps", reference_subject="rs", sample_ids=True)
    assert cube.attrs["n_self_comparisons"] == 1
    assert int((mated_mask(cube) & compared_mask(cube)).sum()) == 2


def test_parquet_round_trip_with_cofactors(tmp_path):
    frame = pd.DataFrame({
        "probe": [10, 10, 11, 11, 12],
        "reference": [1, 2, 1, 2, 2],
        "score": np.array([0.9, 0.2, 0.3, 0.8, 0.1], dtype=np.float32),
        "probe_subject": [1, 1, 2, 2, 2],
        "sensor": ["s1", "s1", "s2", "s2", "s1"],       # constant per probe
        "age": [30, 30, 41, 41, 52],                     # constant per probe, integers
        "gallery_quality": [0.5, 0.7, 0.5, 0.7, 0.7],    # constant per reference
    })
    path = tmp_path / "s.parquet"
    frame.to_parquet(path)
    cube = read_long(path, probe_subject="probe_subject")
    assert cube.dtype == np.float32
    assert cube["probe"].dtype.kind == "i" and list(cube["probe"].values) == [10, 11, 12]
    assert list(cube["subject"].values) == [1, 2, 2]
    assert cube["sensor"].dims == ("probe",) and list(cube["sensor"].values) == ["s1", "s2", "s1"]
    assert cube["age"].dims == ("probe",) and cube["age"].dtype.kind == "i"
    assert cube["gallery_quality"].dims == ("reference",)
    np.testing.assert_array_equal(cube["gallery_quality"].values, [0.5, 0.7])
    np.testing.assert_array_equal(cube.values, np.array([[0.9, 0.2], [0.3, 0.8], [np.nan, 0.1]], np.float32))
    assert cube.attrs["n_not_compared"] == 1
    assert read_scores(path, columns={"subject": "probe_subject"}).identical(cube)


def test_cofactor_placement_with_gaps_and_constants(tmp_path):
    frame = pd.DataFrame({"probe": ["a", "a", "b", "b"], "reference": ["a", "b", "a", "b"], "score": [1.0, 0, 0, 1],
                          "glasses": [None, None, "yes", "yes"],   # missing for probe a: still constant per probe
                          "session": ["s1"] * 4,                     # constant everywhere: a probe cofactor
                          "enrolled": ["2001", "2003", "2001", "2003"]})
    frame.to_parquet(tmp_path / "s.parquet")
    cube = read_long(tmp_path / "s.parquet")
    assert cube["glasses"].dims == ("probe",) and cube["glasses"].values[1] == "yes"
    assert pd.isna(cube["glasses"].values[0])
    assert cube["session"].dims == ("probe",)
    assert cube["enrolled"].dims == ("reference",)


def test_csv_cofactors_become_numbers_when_all_cells_are(tmp_path):
    path = write_rows(tmp_path / "s.csv", ["probe", "reference", "score", "age", "site"],
                      [["a", "a", "1", "30", "x"], ["a", "b", "0", "30", "x"], ["b", "b", "1", "41.5", "y"]])
    cube = read_long(path)
    assert cube["age"].dtype == np.float64 and cube["site"].dtype.kind == "U"


@HYPOTHESIS
@given(data=labelled_scores())
def test_bob_5_column_round_trip(tmp_path_factory, data):
    probe_ids, ref_ids, psubj, rsubj, scores = data
    lines = ["# claimed_id model_label real_id test_label score", ""]
    for i, (p, ps) in enumerate(zip(probe_ids, psubj)):
        for j, (r, rs) in enumerate(zip(ref_ids, rsubj)):
            if not np.isnan(scores[i, j]):
                lines.append(f"{rs} {r} {ps} {p} {float(scores[i, j])!r}")
    path = write_text(tmp_path_factory.mktemp("b") / "s.5col", "\n".join(lines) + "\n")
    cube = read_bob(path, sample_ids=True, layout="cube")
    probes, refs, part = compared_part(probe_ids, ref_ids, scores)
    np.testing.assert_array_equal(matrix_of(cube, probes, refs), part)
    assert dict(zip(cube["probe"].values, cube["subject"].values)).items() <= dict(zip(probe_ids, psubj)).items()
    assert dict(zip(cube["reference"].values, cube["reference_subject"].values)).items() <= dict(
        zip(ref_ids, rsubj)).items()
    assert list(cube["reference_id"].values) == list(cube["reference"].values)
    assert cube.attrs["n_not_compared"] == int(np.isnan(part).sum())
    assert read_scores(path, sample_ids=True, layout="cube").identical(cube)


@HYPOTHESIS
@given(data=labelled_scores(same_ids=True))
def test_bob_4_column_round_trip(tmp_path_factory, data):
    subjects, references, _, _, scores = data
    lines = [f"{r} {p} {p}.png {float(scores[i, j])!r}" for i, p in enumerate(subjects)
             for j, r in enumerate(references) if not np.isnan(scores[i, j])]
    path = write_text(tmp_path_factory.mktemp("b") / "s.4col", "\n".join(lines))
    cube = read_bob(path, layout="cube")
    probes, refs, part = compared_part([f"{p}.png" for p in subjects], references, scores)
    np.testing.assert_array_equal(matrix_of(cube, probes, refs), part)
    assert [f"{s}.png" for s in cube["subject"].values] == list(cube["probe"].values)
    assert list(cube["reference_subject"].values) == list(cube["reference"].values)
    assert "reference_id" not in cube.coords and "probe_id" not in cube.coords
    assert read_scores(path, layout="cube").identical(cube)


def test_bob_4_column_values(tmp_path):
    path = write_text(tmp_path / "s.4col", "a a a1 0.9\nb a a1 0.1\n\n# x\nb b b1 0.7\n")
    cube = read_bob(path, score_kind="distance")
    np.testing.assert_array_equal(cube.values, [[0.9, 0.1], [np.nan, 0.7]])
    assert list(cube["reference"].values) == ["a", "b"] and cube.attrs["score_kind"] == "distance"
    assert cube.attrs["n_not_compared"] == 1


@HYPOTHESIS
@given(data=labelled_scores())
def test_npz_round_trip(tmp_path_factory, data):
    probe_ids, ref_ids, psubj, rsubj, scores = data
    cube = score_cube(scores, subject=psubj, reference_subject=rsubj, score_kind="distance",
                      coords={"probe": probe_ids, "reference": ref_ids}, probe_id=probe_ids, reference_id=ref_ids)
    path = tmp_path_factory.mktemp("n") / "cube.npz"
    write_npz(cube, path)
    back = read_npz(path)
    assert back.drop_attrs().identical(cube.drop_attrs())
    assert back.attrs["score_kind"] == "distance"
    assert back.attrs["n_not_compared"] == int(np.isnan(scores).sum())
    with np.load(path, allow_pickle=False) as archive:  # nothing in it needs pickle
        assert all(archive[k].dtype != object for k in archive.files)


@st.composite
def rich_cubes(draw):
    probe_ids, ref_ids, psubj, rsubj, scores = draw(labelled_scores())
    label_kind = draw(st.sampled_from(["unicode", "object", "int"]))
    if label_kind == "int":
        codes = {s: k for k, s in enumerate(sorted(set(psubj) | set(rsubj)))}
        psubj, rsubj = [codes[s] for s in psubj], [codes[s] for s in rsubj]
        psubj, rsubj = np.array(psubj, dtype=np.int32), np.array(rsubj, dtype=np.int32)
    else:
        dtype = object if label_kind == "object" else str
        psubj, rsubj = np.array(psubj, dtype=dtype), np.array(rsubj, dtype=dtype)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n = len(probe_ids)
    cube = score_cube(scores.astype(dtype), subject=psubj, reference_subject=rsubj,
                      coords={"probe": np.array(probe_ids, dtype=object), "reference": ref_ids,
                              "age": ("probe", np.arange(n, dtype=np.int16)),
                              "flag": ("probe", np.arange(n) % 2 == 0),
                              "site": ("reference", np.array([f"s{k}" for k in range(len(ref_ids) - 1)] + [None],
                                                             object))},
                      missing=draw(st.sampled_from([None, -1.0])))
    extra = draw(st.dictionaries(st.sampled_from(["source", "note", "flag", "n", "x", "lst", "units", "_hidden"]),
                                 st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-1, 1),
                                           LABEL, st.lists(st.integers(0, 9), max_size=3),
                                           st.dictionaries(LABEL, st.integers(0, 3), max_size=2))))
    cube.attrs.update(extra)
    cube["site"].attrs["note"] = None
    return cube


def assert_lossless(back, cube):
    assert back.identical(cube)
    assert back.name == cube.name and back.dtype == cube.dtype and back.dims == cube.dims
    for name, coord in cube.coords.items():
        assert back[name].dtype == coord.dtype, name
        assert back[name].dims == coord.dims, name
        assert back[name].attrs == coord.attrs, name
    assert back.attrs == cube.attrs
    if "site" in cube.coords:  # a gap in a label stays a gap, not ''
        assert pd.isna(back["site"].values[-1])
    assert {k: type(v) for k, v in back.attrs.items()} == {k: type(v) for k, v in cube.attrs.items()}


@HYPOTHESIS
@given(cube=rich_cubes(), zarr=st.booleans())
def test_netcdf_and_zarr_round_trip_lose_nothing(tmp_path_factory, cube, zarr):
    path = tmp_path_factory.mktemp("x") / ("cube.zarr" if zarr else "cube.nc")
    before = cube.copy(deep=True)
    (to_zarr if zarr else to_netcdf)(cube, path)
    assert cube.identical(before) and cube.attrs == before.attrs  # the writer did not touch its input
    assert_lossless(open_score_cube(path), cube)
    assert_lossless(read_scores(path), cube)


def test_netcdf_keeps_probe_dimensions_and_unnamed_cubes(tmp_path):
    rng = np.random.default_rng(0)
    cube = score_cube(rng.random((2, 3, 4)), dims=("subject", "image", "reference"),
                      coords={"subject": ["a", "b"], "image": [1, 2, 3]},
                      reference_subject=["a", "b", "c", "d"], name=None)
    cube.attrs["source"] = None
    for writer, name in ((to_netcdf, "c.nc"), (to_zarr, "c.zarr")):
        writer(cube, tmp_path / name)
        assert_lossless(open_score_cube(tmp_path / name), cube)


def test_missing_value_attr_is_not_taken_for_a_fill_value(tmp_path):
    # xarray's CF decoding would mask every -1.0 if missing_value were a plain netCDF attribute
    cube = score_cube([[-1.0, 0.3], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"])
    cube.attrs["missing_value"] = -1.0
    to_netcdf(cube, tmp_path / "c.nc")
    back = open_score_cube(tmp_path / "c.nc")
    assert back.values[0, 0] == -1.0 and back.attrs["missing_value"] == -1.0


def test_to_zarr_replaces_a_store_but_not_other_files(tmp_path):
    cube = score_cube([[0.9, 0.1], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"])
    to_zarr(cube, tmp_path / "c.zarr")
    to_zarr(cube * 2, tmp_path / "c.zarr")
    np.testing.assert_array_equal(open_score_cube(tmp_path / "c.zarr").values, cube.values * 2)
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "notes.txt").write_text("mine")
    with pytest.raises(ScoreFileError, match="not a Zarr store; refusing"):
        to_zarr(cube, tmp_path / "keep")
    assert (tmp_path / "keep" / "notes.txt").read_text() == "mine"


def test_read_scores_dispatches_matrix_and_long_csv(tmp_path):
    matrix = write_text(tmp_path / "m.csv", ",a,b\na,0.9,0.1\nb,0.2,0.8\n")
    long = write_rows(tmp_path / "l.csv", ["probe", "reference", "score"],
                      [["a", "a", "0.9"], ["a", "b", "0.1"], ["b", "a", "0.2"], ["b", "b", "0.8"]])
    assert read_scores(matrix).identical(read_matrix_csv(matrix))
    assert read_scores(long).drop_attrs().identical(read_scores(matrix).drop_attrs())
    assert read_scores(write_text(tmp_path / "m.data", ",a,b\na,0.9,0.1\nb,0.2,0.8\n"), format="csv").shape == (2, 2)
    with pytest.raises(ScoreFileError, match=r"suffix '\.xyz'.*format="):
        read_scores(write_text(tmp_path / "s.xyz", "x"))
    with pytest.raises(ScoreFileError, match="unknown format='excel'"):
        read_scores(matrix, format="excel")
    with pytest.raises(ScoreFileError, match="format='csv' or format='parquet'"):
        read_long(write_text(tmp_path / "s.dat", "probe\treference\tscore\n"))


# ---------------------------------------------------------------- bad input
def test_missing_file(tmp_path):
    for reader in (read_matrix_csv, read_long, read_bob, read_npz, open_score_cube, read_scores):
        with pytest.raises(ScoreFileError, match=r"nope\.csv: no such file"):
            reader(tmp_path / "nope.csv")


def test_directory_instead_of_file(tmp_path):
    for reader in (read_matrix_csv, read_bob, read_npz):
        with pytest.raises(ScoreFileError, match="is a directory"):
            reader(tmp_path)
    with pytest.raises(ScoreFileError, match="directory but not a Zarr store"):
        open_score_cube(tmp_path)


@pytest.mark.parametrize("name, match", [
    ("s.csv", "binary, not text"), ("s.txt", "binary, not text"), ("s.parquet", "cannot be read as Parquet"),
    ("s.npz", "cannot be read as a NumPy .npz"), ("s.nc", "neither netCDF nor a Zarr store"),
])
def test_binary_garbage(tmp_path, name, match):
    path = tmp_path / name
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ScoreFileError, match=match):
        read_scores(path)


def test_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "s.csv"
    path.write_bytes(",a,b\na,0.9,0.1\nb\xe9,0.2,0.8\n".encode("latin-1"))
    with pytest.raises(ScoreFileError, match=r"line 3 is not UTF-8.*Save the file as UTF-8"):
        read_matrix_csv(path)


@pytest.mark.parametrize("reader", [read_matrix_csv, read_long, read_bob, read_npz, read_scores])
def test_empty_file(tmp_path, reader):
    path = tmp_path / "s.csv"
    path.write_bytes(b"")
    with pytest.raises(ScoreFileError, match=r"s\.csv: the file is empty"):
        reader(path)


def test_whitespace_and_comment_only_files_hold_no_scores(tmp_path):
    with pytest.raises(ScoreFileError, match="empty"):
        read_matrix_csv(write_text(tmp_path / "w.csv", " \n\n"))
    with pytest.raises(ScoreFileError, match="no score lines"):
        read_bob(write_text(tmp_path / "c.txt", "# only a comment\n\n"))
    with pytest.raises(ScoreFileError, match="no probe rows"):
        read_matrix_csv(write_text(tmp_path / "h.csv", ",a,b\n"))
    with pytest.raises(ScoreFileError, match="no comparisons"):
        read_long(write_text(tmp_path / "l.csv", "probe,reference,score\n"))


def test_long_missing_column_lists_the_columns_found(tmp_path):
    path = write_text(tmp_path / "s.csv", "probe,reference,similarity\na,a,0.9\n")
    with pytest.raises(ScoreFileError, match=r"no column for score='score'.*\['probe', 'reference', 'similarity'\]"):
        read_long(path)
    with pytest.raises(ScoreFileError, match="probe_subject='subj'"):
        read_long(path, score="similarity", probe_subject="subj")


@pytest.mark.parametrize("row, n", [("b,0.2,0.8,0.5", 4), ("b,0.2", 2)])
def test_matrix_row_with_wrong_cell_count_names_the_line(tmp_path, row, n):
    path = write_text(tmp_path / "s.csv", f",a,b\na,0.9,0.1\n{row}\n")
    with pytest.raises(ScoreFileError, match=rf"line 3 has {n} cells but the header \(line 1\) has 3"):
        read_matrix_csv(path)


def test_long_row_with_wrong_cell_count_names_the_line(tmp_path):
    path = write_text(tmp_path / "s.csv", "probe,reference,score\na,a,0.9\n\na,b\n")
    with pytest.raises(ScoreFileError, match=r"line 4 has 2 cells but the header \(line 1\) has 3 \('probe', 'ref"):
        read_long(path)


@pytest.mark.parametrize("line", ["a a1 0.9", "a m a a1 0.9 extra"])
def test_bob_line_with_3_or_6_fields_names_the_line(tmp_path, line):
    path = write_text(tmp_path / "s.txt", f"# header\na a a1 0.9\n{line}\n")
    with pytest.raises(ScoreFileError, match=rf"line 3 has {len(line.split())} fields; a bob score line has 4"):
        read_bob(path)


def test_bob_mixing_4_and_5_columns(tmp_path):
    path = write_text(tmp_path / "s.txt", "a a a1 0.9\na m a a1 0.9\n")
    with pytest.raises(ScoreFileError, match="line 2 has 5 fields but line 1 has 4"):
        read_bob(path)


def test_non_numeric_score_long(tmp_path):
    rows = [["a", "a", "0.9"], ["a", "b", "0.1"], ["b", "a", "0.2"], ["b", "b", "0.8"], ["c", "a", "0.3"],
            ["c", "b", "abc"]]
    path = write_rows(tmp_path / "s.csv", ["probe", "reference", "score"], rows)
    with pytest.raises(ScoreFileError, match=r"s\.csv: line 7, column 'score': 'abc' is not a number"):
        read_long(path)


def test_non_numeric_score_matrix_and_bob_and_parquet(tmp_path):
    with pytest.raises(ScoreFileError, match=r"line 3, column 3 \(reference 'b'\): '0,8x' is not a number"):
        read_matrix_csv(write_text(tmp_path / "m.csv", ',a,b\na,0.9,0.1\nb,0.2,"0,8x"\n'))
    with pytest.raises(ScoreFileError, match=r"line 2, column 'score': 'high' is not a number"):
        read_bob(write_text(tmp_path / "b.txt", "a a a1 0.9\nb a a1 high\n"))
    frame = pd.DataFrame({"probe": ["a", "b"], "reference": ["a", "a"], "score": ["0.9", "n/a"]})
    frame.to_parquet(tmp_path / "s.parquet")
    with pytest.raises(ScoreFileError, match=r"row 2, column 'score': 'n/a' is not a number"):
        read_long(tmp_path / "s.parquet")


def test_infinite_scores_name_where(tmp_path):
    with pytest.raises(ScoreFileError, match=r"line 3, column 2 \(reference 'a'\): the score is infinite"):
        read_matrix_csv(write_text(tmp_path / "m.csv", ",a,b\na,0.9,0.1\nb,-inf,0.8\n"))
    with pytest.raises(ScoreFileError, match=r"line 3, column 'score': the score is infinite"):
        read_long(write_text(tmp_path / "l.csv", "probe,reference,score\na,a,1\na,b,inf\n"))
    pd.DataFrame({"probe": ["a", "a"], "reference": ["a", "b"], "score": [np.inf, 0.1]}).to_parquet(tmp_path / "s.pq")
    with pytest.raises(ScoreFileError, match=r"row 1, column 'score': the score is infinite"):
        read_long(tmp_path / "s.pq")


def test_duplicated_comparison_long_names_both_lines(tmp_path):
    path = write_text(tmp_path / "s.csv", "probe,reference,score\na,a,0.9\na,b,0.1\nb,b,0.8\na,b,0.2\n")
    with pytest.raises(ScoreFileError, match=r"probe 'a' is compared with reference 'b' twice, at line 3 and line 5"):
        read_long(path)


def test_duplicated_comparison_bob_names_both_lines(tmp_path):
    path = write_text(tmp_path / "s.txt", "# c\na a a1 0.9\nb a a1 0.1\n\nb a a1 0.2\n")
    with pytest.raises(ScoreFileError, match=r"twice, at line 3 and line 5"):
        read_bob(path)


def test_duplicated_ids_in_matrix(tmp_path):
    with pytest.raises(ScoreFileError, match=r"probe id 'a' labels two rows, lines 2 and 4"):
        read_matrix_csv(write_text(tmp_path / "p.csv", ",a,b\na,1,0\nb,0,1\na,1,0\n"))
    with pytest.raises(ScoreFileError, match=r"reference id 'a' heads two columns, 2 and 3"):
        read_matrix_csv(write_text(tmp_path / "r.csv", ",a,a\na,1,0\n"))


def test_unlabelled_probe_matrix(tmp_path):
    with pytest.raises(ScoreFileError, match="line 3 has no probe id"):
        read_matrix_csv(write_text(tmp_path / "s.csv", ",a,b\na,0.9,0.1\n ,0.2,0.8\n"))
    with pytest.raises(ScoreFileError, match=r"column 3 of the header \(line 1\) has no reference id"):
        read_matrix_csv(write_text(tmp_path / "r.csv", ",a,,c\na,0.9,0.1,0.2\n"))


def test_unlabelled_probe_long(tmp_path):
    with pytest.raises(ScoreFileError, match=r"line 3 has no probe id \(column 'probe' is empty\)"):
        read_long(write_text(tmp_path / "s.csv", "probe,reference,score\na,a,0.9\n,b,0.1\n"))


def test_empty_subject_cell_long(tmp_path):
    path = write_text(tmp_path / "s.csv", "probe,subject,reference,score\na1,a,a,0.9\nb1,,a,0.1\n")
    with pytest.raises(ScoreFileError, match=r"line 3 has no probe subject \(column 'subject' is empty\)"):
        read_long(path, probe_subject="subject")
    frame = pd.DataFrame({"probe": ["a1", "b1"], "subject": ["a", None], "reference": ["a", "a"], "score": [1.0, 0.0]})
    frame.to_parquet(tmp_path / "s.parquet")
    with pytest.raises(ScoreFileError, match=r"row 2 has no probe subject"):
        read_long(tmp_path / "s.parquet", probe_subject="subject")


def test_probe_with_two_subjects(tmp_path):
    path = write_text(tmp_path / "s.csv", "probe,subject,reference,score\na1,a,a,0.9\na1,b,b,0.1\n")
    with pytest.raises(ScoreFileError, match=r"probe 'a1' has two subjects.*'a' at line 2 and 'b' at line 3"):
        read_long(path, probe_subject="subject")


def test_cofactor_varying_within_probe_and_reference(tmp_path):
    path = write_text(tmp_path / "s.csv", "probe,reference,score,light\na,a,1,day\na,b,0,night\nb,a,0,night\n")
    with pytest.raises(ScoreFileError, match=r"column 'light' varies within a probe .*separate probe dimension"):
        read_long(path)


def test_cofactor_named_like_a_cube_coordinate(tmp_path):
    path = write_text(tmp_path / "s.csv", "image,reference,score,subject\na1,a,1,a\na1,b,0,a\n")
    with pytest.raises(ScoreFileError, match=r"column 'subject' would clash.*probe_subject='subject'"):
        read_long(path, probe="image")


def test_label_sets_that_do_not_match(tmp_path):
    path = write_text(tmp_path / "s.csv", ",x,y\na,0.9,0.1\nb,0.2,0.8\n")
    with pytest.raises(ScoreCubeError, match=r"no probe subject.*s\.csv.*among the reference subjects"):
        read_matrix_csv(path)


def test_no_mated_comparison(tmp_path):
    # subjects overlap, but every mated pair was never compared
    path = write_text(tmp_path / "s.csv", "probe,reference,score\na,b,0.1\nb,a,0.2\n")
    with pytest.raises(ScoreFileError, match=r"s\.csv.*no mated comparison"):
        read_long(path)


def test_no_nonmated_comparison(tmp_path):
    with pytest.raises(ScoreFileError, match=r"s\.txt.*no non-mated comparison"):
        read_bob(write_text(tmp_path / "s.txt", "a a a1 0.9\na a a2 0.8\n"))


def test_netcdf_without_reference_dimension(tmp_path):
    da = xr.DataArray(np.eye(2), dims=("probe", "gallery"), name="score",
                      coords={"subject": ("probe", ["a", "b"]), "reference_subject": ("gallery", ["a", "b"])})
    da.to_netcdf(tmp_path / "g.nc", engine="h5netcdf")
    with pytest.raises(ScoreCubeError, match=r"g\.nc.*no 'reference' dimension.*rename\(\{'gallery': 'reference'\}\)"):
        open_score_cube(tmp_path / "g.nc")


def test_netcdf_with_several_variables(tmp_path):
    xr.Dataset({"a": ("x", [1.0]), "b": ("x", [2.0])}).to_netcdf(tmp_path / "d.nc", engine="h5netcdf")
    with pytest.raises(ScoreFileError, match=r"holds 2 data variables \['a', 'b'\]"):
        open_score_cube(tmp_path / "d.nc")


def test_npz_problems(tmp_path):
    scores = np.array([[0.9, 0.1], [0.2, 0.8]])
    np.savez(tmp_path / "o.npz", scores=scores, subject=np.array(["a", "b"], dtype=object),
             reference_subject=np.array(["a", "b"]))
    with pytest.raises(ScoreFileError, match=r"array 'subject' cannot be read: it holds Python objects.*unpickles"):
        read_npz(tmp_path / "o.npz")
    np.savez(tmp_path / "m.npz", scores=scores, subjects=np.array(["a", "b"]))
    with pytest.raises(ScoreFileError, match=r"missing \['subject', 'reference_subject'\], not understood \['subj"):
        read_npz(tmp_path / "m.npz")
    np.savez(tmp_path / "d.npz", scores=scores[None], subject=["a"], reference_subject=["a", "b"])
    with pytest.raises(ScoreFileError, match="'scores' has 3 dimension"):
        read_npz(tmp_path / "d.npz")
    np.savez(tmp_path / "p.npz", scores=scores, subject=["a", "b"], reference_subject=["a", "b"], probe=["x"])
    with pytest.raises(ScoreFileError, match=r"p\.npz"):
        read_npz(tmp_path / "p.npz")
    np.save(tmp_path / "one.npy", scores)
    with pytest.raises(ScoreFileError, match=r"single array \(\.npy\)"):
        read_npz(tmp_path / "one.npy")
    with zipfile.ZipFile(tmp_path / "z.npz", "w") as archive:
        archive.writestr("scores.npy", b"not an array")
    with pytest.raises(ScoreFileError, match="z.npz"):
        read_npz(tmp_path / "z.npz")


def test_declared_sentinel_and_nan(tmp_path):
    path = write_text(tmp_path / "s.csv", ",a,b,c\na,0.9,-1,0.2\nb,nan,0.8,\n")
    plain = read_matrix_csv(path)
    assert plain.values[0, 1] == -1.0 and plain.attrs["n_not_compared"] == 2 and "n_missing" not in plain.attrs
    declared = read_matrix_csv(path, missing=-1)
    assert np.isnan(declared.values[0, 1])
    assert declared.attrs["n_missing"] == 1 and declared.attrs["missing_sentinel"] == -1.0
    assert declared.attrs["n_not_compared"] == 2
    assert int(compared_mask(declared).sum()) == 3


# ---------------------------------------------------------------- BSSR1 data
def independent_parse(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    probes = [line.split(",")[0] for line in lines[1:]]
    scores = np.array([[float(x) for x in line.split(",")[1:]] for line in lines[1:]])
    return header, probes, scores


@pytest.mark.parametrize("fixture", ["face_csv", "finger_csv"])
def test_bssr1_matches_an_independent_parse(request, fixture):
    path = request.getfixturevalue(fixture)
    header, probes, scores = independent_parse(path)
    cube = read_scores(path)
    assert header[0] == "" and cube.shape == (517, 517) == scores.shape
    assert list(cube["probe"].values) == probes and list(cube["reference"].values) == header[1:]
    np.testing.assert_array_equal(cube.values, scores)
    assert cube.attrs["n_not_compared"] == 0
    # mated comparisons: wherever the ids agree, which is exactly the diagonal (same ids, same order)
    expected = np.array(probes)[:, None] == np.array(header[1:])[None, :]
    mated = mated_mask(cube).values
    np.testing.assert_array_equal(mated, expected)
    assert int(mated.sum()) == 517 and bool(np.all(np.diag(mated)))
    assert "probe_id" not in cube.coords  # probe and reference are different samples


def test_bssr1_face_sentinel(face_csv):
    raw = read_matrix_csv(face_csv)
    assert int((raw == -1.0).sum()) == 517  # without missing=, -1 is a score
    cube = read_matrix_csv(face_csv, missing=-1)
    assert cube.attrs["n_missing"] == 517 and cube.attrs["missing_sentinel"] == -1.0
    dead = (raw == -1.0).all("probe")
    assert int(dead.sum()) == 1
    assert bool(cube.sel(reference=dead).isnull().all())
    assert int(cube.isnull().sum()) == 517
    assert float(cube.min()) >= 0 and float(cube.max()) <= 0.9


def test_bssr1_finger_integer_scores(finger_csv):
    cube = read_matrix_csv(finger_csv)
    values = cube.values
    assert np.array_equal(values, np.round(values))
    assert values.min() == 0 and values.max() == 246


# ------------------------------------------------- the vectorised parser: line numbers
COMMENTED = "# scores of run 7\n\nprobe,reference,score\na,a,0.9\n# a note\n\na,b,0.1\n   \nb,b,0.8\n"


@pytest.mark.parametrize("bad, line, match", [
    ("b,a,abc", 11, r"line 11, column 'score': 'abc' is not a number"),
    ("b,a", 11, r"line 11 has 2 cells but the header \(line 3\) has 3"),
    ("b,a,0.5,extra", 11, r"line 11 has 4 cells but the header \(line 3\) has 3"),
    ("b,a,-inf", 11, r"line 11, column 'score': the score is infinite"),
    (",a,0.5", 11, r"line 11 has no probe id"),
    ("a,b,0.3", 11, r"probe 'a' is compared with reference 'b' twice, at line 7 and line 11"),
])
def test_long_errors_keep_physical_line_numbers(tmp_path, bad, line, match):
    path = write_text(tmp_path / "s.csv", COMMENTED + f"\n{bad}\n")
    assert path.read_text().splitlines()[line - 1] == bad
    with pytest.raises(ScoreFileError, match=rf"s\.csv: {match}"):
        read_long(path)


def test_long_errors_line_numbers_with_quoted_newlines(tmp_path):
    path = write_text(tmp_path / "s.csv", 'probe,reference,score\n"a\nfirst",a,0.9\na,a,0.5\nb,"x",oops\n')
    with pytest.raises(ScoreFileError, match=r"line 5, column 'score': 'oops' is not a number"):
        read_long(path)
    ok = write_text(tmp_path / "ok.csv", 'probe,reference,score\n"a,1",a,0.9\na,a,0.5\n')
    assert list(read_long(ok, layout="list")["probe"].values) == ["a,1", "a"]


def test_comment_lines_are_skipped_on_every_reader(tmp_path):
    cube = read_long(write_text(tmp_path / "s.csv", COMMENTED), layout="cube")
    np.testing.assert_array_equal(cube.values, [[0.9, 0.1], [np.nan, 0.8]])
    matrix = read_matrix_csv(write_text(tmp_path / "m.csv", "# m\n,a,b\n\na,0.9,0.1\n# x\nb,0.2,0.8\n"))
    np.testing.assert_array_equal(matrix.values, [[0.9, 0.1], [0.2, 0.8]])
    bob = read_bob(write_text(tmp_path / "b.txt", "# c\na a a1 0.9\n\n  # indented\nb a a1 0.1\n"))
    assert bob.shape == (1, 2)


def test_matrix_and_bob_errors_with_comments(tmp_path):
    with pytest.raises(ScoreFileError, match=r"line 6, column 3 \(reference 'b'\): 'oops' is not a number"):
        read_matrix_csv(write_text(tmp_path / "m.csv", "# m\n,a,b\n\na,0.9,0.1\n# x\nb,0.2,oops\n"))
    with pytest.raises(ScoreFileError, match=r"line 5 has 2 cells but the header \(line 2\) has 3"):
        read_matrix_csv(write_text(tmp_path / "w.csv", "# m\n,a,b\na,0.9,0.1\n\nb,0.2\n"))
    with pytest.raises(ScoreFileError, match=r"line 5, column 'score': 'high' is not a number"):
        read_bob(write_text(tmp_path / "b.txt", "# c\na a a1 0.9\n\n  # indented comment\nb a a1 high\n"))
    with pytest.raises(ScoreFileError, match=r"line 4 has 3 fields; a bob score line has 4"):
        read_bob(write_text(tmp_path / "c.txt", "a a a1 0.9\n# c\n\nb a 0.1\n"))


def test_not_utf8_in_a_long_file_names_the_line(tmp_path):
    path = tmp_path / "s.csv"
    path.write_bytes("probe,reference,score\na,a,0.9\n\nb\xe9,a,0.2\n".encode("latin-1"))
    with pytest.raises(ScoreFileError, match=r"line 4 is not UTF-8"):
        read_long(path)


# ------------------------------------------------------------------ layouts
def sparse_text(n=6):
    """Each probe compared with its mate and one other reference: 2 of n cells per row filled."""
    rows = [f"p{i},p{i},{0.9:.1f}" for i in range(n)] + [f"p{i},p{(i + 1) % n},0.1" for i in range(n)]
    return "probe,reference,score,sensor\n" + "\n".join(f"{r},s{i % 2}" for i, r in enumerate(rows)) + "\n"


def test_layout_auto_gives_a_list_when_sparse_and_a_cube_when_dense(tmp_path):
    trials = read_long(io.StringIO(sparse_text()))
    assert is_comparison_list(trials) and trials.attrs["layout"] == "list"
    assert "33.3333%" in trials.attrs["layout_reason"] and trials.attrs["fill_fraction"] == pytest.approx(1 / 3)
    assert trials.sizes["comparison"] == 12 and trials.attrs["probe_dims"] == []
    assert set(trials.coords) >= {"probe", "reference", "subject", "reference_subject", "sensor"}
    assert "probe_id" not in trials.coords
    dense = read_long(io.StringIO("probe,reference,score\na,a,1\na,b,0\nb,a,0\n"))
    assert isinstance(dense, xr.DataArray) and dense.attrs["layout"] == "cube"
    assert "75.0000%" in dense.attrs["layout_reason"]
    forced = read_long(io.StringIO(sparse_text()), layout="cube")
    assert forced.shape == (6, 6) and forced.attrs["layout_reason"].endswith("(layout='cube' requested)")
    assert forced.attrs["n_not_compared"] == 24
    with pytest.raises(ScoreFileError, match="layout='sparse'"):
        read_long(io.StringIO(sparse_text()), layout="sparse")


def test_list_is_what_comparison_list_builds(tmp_path):
    trials = read_long(io.StringIO(sparse_text()))
    frame = pd.read_csv(io.StringIO(sparse_text()))
    expected = bioxr.comparison_list(frame.score.to_numpy(), subject=frame.probe.to_numpy(object),
                                     reference_subject=frame.reference.to_numpy(object), probe_dims=[],
                                     coords={"probe": frame.probe.to_numpy(object),
                                             "reference": frame.reference.to_numpy(object),
                                             "sensor": frame.sensor.to_numpy(object)},
                                     source="<text>")
    assert trials.drop_attrs().identical(expected.drop_attrs())
    assert {k: expected.attrs[k] for k in expected.attrs} == {k: trials.attrs[k] for k in expected.attrs}
    assert float(trials.bio.eer().eer) == float(bioxr.to_cube(trials).bio.eer().eer)


def test_list_drops_and_counts_rows_without_a_score(tmp_path):
    text = "probe,reference,score\na,a,0.9\na,b,\nb,b,-1\nb,a,0.2\nc,c,0.7\nc,a,0.1\n"
    trials = read_long(io.StringIO(text), missing=-1, layout="list")
    assert trials.sizes["comparison"] == 4
    assert trials.attrs["n_not_compared"] == 1 and trials.attrs["n_missing"] == 1


# ------------------------------------------------------------------ inputs
def test_file_like_text_and_str_inputs(tmp_path):
    text = ",a,b\na,0.9,0.1\nb,0.2,0.8\n"
    path = write_text(tmp_path / "m.csv", text)
    expected = read_matrix_csv(path).drop_attrs()
    with open(path, encoding="utf-8") as handle:
        assert read_matrix_csv(handle).drop_attrs().identical(expected)
    with open(path, "rb") as handle:
        assert read_matrix_csv(handle).drop_attrs().identical(expected)
    assert read_matrix_csv(io.StringIO(text)).drop_attrs().identical(expected)
    assert read_matrix_csv(io.BytesIO(text.encode())).drop_attrs().identical(expected)
    assert read_matrix_csv(text).drop_attrs().identical(expected)  # a str holding a newline is the data
    assert read_matrix_csv(text).attrs["source"] == "<text>"
    assert read_scores(io.StringIO(text)).drop_attrs().identical(expected)
    assert read_bob("a a a1 0.9\nb a a1 0.1\nb b b1 0.7\n").shape == (2, 2)
    with pytest.raises(ScoreFileError, match=r"<text>: line 3, column 'score': 'x' is not a number"):
        read_long(io.StringIO("probe,reference,score\na,a,1\na,b,x\n"))
    frame = pd.DataFrame({"probe": ["a", "a", "b"], "reference": ["a", "b", "b"], "score": [0.9, 0.1, 0.8]})
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    buffer.seek(0)
    assert read_long(buffer).shape == (2, 2)


@pytest.mark.parametrize("sep, suffix", [("\t", ".csv"), (";", ".csv"), ("   ", ".csv"), ("\t", ".tsv"),
                                         (",", ".tsv")])
def test_sniffed_delimiters(tmp_path, sep, suffix):
    rows = [["probe", "reference", "score"], ["a", "a", "0.9"], ["a", "b", "0.1"], ["b", "b", "0.8"]]
    path = write_text(tmp_path / f"s{suffix}", "".join(sep.join(r) + "\n" for r in rows))
    if suffix == ".tsv" and sep == ",":  # .tsv means tab: a comma file under that name is one column
        with pytest.raises(ScoreFileError, match="no column for probe='probe'"):
            read_long(path)
        assert read_long(path, delimiter=",", layout="cube").shape == (2, 2)
        return
    cube = read_long(path, layout="cube")
    np.testing.assert_array_equal(cube.values, [[0.9, 0.1], [np.nan, 0.8]])
    assert read_scores(path, layout="cube").identical(cube)


def test_delimiter_given(tmp_path):
    path = write_text(tmp_path / "s.csv", "probe|reference|score\na|a|0.9\na|b|0.1\nb|b|0.8\n")
    assert read_long(path, delimiter="|", layout="cube").shape == (2, 2)
    with pytest.raises(ScoreFileError, match=r"delimiter='::' is not a delimiter"):
        read_long(path, delimiter="::")


def test_corner_label_matrix(tmp_path):
    path = write_text(tmp_path / "m.csv", "probe,a,b\na,0.9,0.1\nb,0.2,0.8\n")
    cube = read_matrix_csv(path)
    assert cube.attrs["corner_label"] == "probe" and list(cube["reference"].values) == ["a", "b"]
    assert read_scores(path).identical(cube)
    ids = write_text(tmp_path / "i.csv", "id;x;y\nx;1;0\ny;0;1\n")
    assert read_scores(ids).shape == (2, 2)
    long = write_text(tmp_path / "l.csv", "probe,reference,score\na,a,0.9\n")
    with pytest.raises(ScoreFileError, match="looks like a long-form table"):
        read_matrix_csv(long)


def test_nfc_labels_are_one_subject_and_counted(tmp_path):
    composed, decomposed = "Jos\u00e9", "Jose\u0301"
    text = f"probe,reference,score\n{composed},{decomposed},0.9\n{composed},b,0.1\nb,b,0.8\nb,{composed}\u200b,0.2\n"
    cube = read_long(io.StringIO(text), layout="cube")
    assert cube.attrs["n_labels_normalised"] == 2  # the decomposed and the zero-width reference cells
    assert list(cube["reference"].values) == [decomposed, "b", composed + "\u200b"]  # ids as written
    assert list(cube["reference_subject"].values) == [composed, "b", composed]
    assert int((mated_mask(cube) & compared_mask(cube)).sum()) == 2
    matrix = read_matrix_csv(f",{decomposed},b\n{composed},0.9,0.1\nb,0.2,0.8\n")
    assert matrix.attrs["n_labels_normalised"] == 1
    assert int(mated_mask(matrix).sum()) == 2


# ----------------------------------------------------------------- sample ids
SAMPLES = ("probe,ps,reference,rs,score\n1,a,1,a,0.9\n1,a,2,b,0.1\n1,a,3,b,0.2\n2,a,1,a,0.8\n2,a,2,b,0.3\n"
           "2,a,3,b,0.1\n3,b,1,a,0.2\n3,b,2,b,0.7\n3,b,3,b,0.6\n")


def test_coinciding_ids_are_not_one_sample_unless_declared(tmp_path):
    with pytest.warns(UserWarning, match=r"3 comparison\(s\) pair a probe and a reference with the same id.*"
                                         r"sample_ids=True"):
        cube = read_long(io.StringIO(SAMPLES), probe_subject="ps", reference_subject="rs")
    assert "probe_id" not in cube.coords and cube.attrs["n_self_comparisons"] == 0
    assert int((mated_mask(cube) & compared_mask(cube)).sum()) == 4  # every mated comparison kept
    declared = read_long(io.StringIO(SAMPLES), probe_subject="ps", reference_subject="rs", sample_ids=True)
    assert declared.attrs["n_self_comparisons"] == 3
    assert int((mated_mask(declared) & compared_mask(declared)).sum()) == 2
    trials = read_long(io.StringIO(SAMPLES), probe_subject="ps", reference_subject="rs", sample_ids=True,
                       layout="list")
    assert {"probe_id", "reference_id"} <= set(trials.coords) and "probe" not in trials.coords
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_long(io.StringIO(SAMPLES), probe_subject="ps", reference_subject="rs", sample_ids=False)
    with pytest.raises(ScoreFileError, match="sample_ids=True.*Name the subject columns"):
        read_long(io.StringIO(SAMPLES), sample_ids=True)


# ------------------------------------------------------------------ failures
def test_failure_sentinel_on_a_matrix(tmp_path):
    text = ",a,b,c,d\na,0.9,-1,0.1,0.2\nb,0.2,-1,0.8,-1\nc,-1,-1,-1,-1\nd,0.3,-1,0.2,0.7\n"
    cube = read_matrix_csv(text, failure=-1)
    assert cube["failed_enrolment"].values.tolist() == [False, True, False, False]
    assert cube["failed_acquisition"].values.tolist() == [False, False, True, False]
    assert cube.attrs["n_failed_enrolments"] == 1 and cube.attrs["n_failed_acquisitions"] == 1
    assert cube.attrs["n_failed_comparisons"] == 1 and cube.attrs["failure_sentinel"] == -1.0
    assert int(cube.isnull().sum()) == 4 + 3 + 1
    assert cube.sel(probe="a", reference="a").item() == 0.9
    with pytest.raises(ScoreFileError, match="missing= and failure= are both"):
        read_matrix_csv(text, failure=-1, missing=-1)


def test_failure_sentinel_and_markers_on_long_and_bob(tmp_path):
    text = ("probe,reference,score\na,a,0.9\na,b,-1\na,c,0.1\nb,a,0.2\nb,b,-1\nb,c,0.8\nc,a,-1\nc,b,-1\nc,c,-1\n"
            "d,a,-1\nd,c,0.7\n")
    cube = read_long(io.StringIO(text), failure=-1, layout="cube")
    assert cube["failed_enrolment"].values.tolist() == [False, True, False]
    assert cube["failed_acquisition"].values.tolist() == [False, False, True, False]
    assert cube.attrs["n_failed_comparisons"] == 1  # d,a
    trials = read_long(io.StringIO(text), failure=-1, layout="list")
    assert trials.sizes["comparison"] == 10  # the isolated failure is dropped
    assert trials.attrs["n_failed_comparisons"] == 1
    assert trials.attrs["n_failed_enrolments"] == 1 and trials.attrs["n_failed_acquisitions"] == 1
    assert int(trials["failed_enrolment"].sum()) == 3 and int(trials["failed_acquisition"].sum()) == 3
    assert int(trials.score.isnull().sum()) == 5
    lines = [line.split(",") for line in text.splitlines()[1:]]
    bob = read_bob("".join(f"{r} {p} {p}_1 {s}\n" for p, r, s in lines), failure=-1, layout="cube")
    assert bob.attrs["n_failed_enrolments"] == 1 and bob.attrs["n_failed_acquisitions"] == 1
    marked = ("probe,reference,score,fte,fta\na,a,0.9,no,0\na,b,,yes,0\nb,b,,1,false\nb,a,0.1,,FALSE\n"
              "c,a,,0,1\nc,b,,yes,1\n")
    cube = read_long(io.StringIO(marked), failed_enrolment="fte", failed_acquisition="fta", layout="cube")
    assert cube["failed_enrolment"].values.tolist() == [False, True]
    assert cube["failed_acquisition"].values.tolist() == [False, False, True]
    trials = read_long(io.StringIO(marked), failed_enrolment="fte", failed_acquisition="fta", layout="list")
    assert trials.sizes["comparison"] == 6 and int(trials.score.isnull().sum()) == 4
    with pytest.raises(ScoreFileError, match=r"line 3, column 'fte': 'maybe' is not a failure flag"):
        read_long(io.StringIO(marked.replace("yes", "maybe", 1)), failed_enrolment="fte")
    with pytest.raises(ScoreFileError, match=r"reference 'b' is marked failed in column 'fte' at line 3 but "
                                             r"not at line 7"):
        read_long(io.StringIO(marked.replace("c,b,,yes", "c,b,,no")), failed_enrolment="fte", layout="cube")


def test_bssr1_face_failure_sentinel(face_csv):
    raw = read_matrix_csv(face_csv)
    cube = read_matrix_csv(face_csv, failure=-1)
    assert int(cube["failed_enrolment"].sum()) == 1 and int(cube["failed_acquisition"].sum()) == 0
    assert cube.attrs["n_failed_enrolments"] == 1 and cube.attrs["n_failed_comparisons"] == 0
    dead = cube["failed_enrolment"].values
    assert bool(cube[:, dead].isnull().all())
    np.testing.assert_array_equal(cube.values[:, ~dead], raw.values[:, ~dead])  # 517 x 516 cells intact
    assert int(np.isfinite(cube.values).sum()) == 517 * 516


# ------------------------------------------------------------ declared sanity
def test_detconf_multi_system_file_is_refused(tmp_path):
    path = write_text(tmp_path / "det.txt", "# true claimed sys1 sys2\n1 1 0.93 0.88\n1 2 0.12 0.31\n2 2 0.85 0.7\n")
    with pytest.raises(ScoreFileError, match=r"DETConf style.*bioxr.from_frame"):
        read_bob(path)
    with pytest.raises(ScoreFileError, match="DETConf"):
        read_scores(path)
    assert read_bob(write_text(tmp_path / "bob.txt", "1 1 img1 0.93\n2 1 img1 0.12\n2 2 img2 0.85\n")).shape == (2, 2)


class _Hostile:
    """Unpickling this creates a file: what a hostile Zarr store would do."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def hostile_store(folder, target, *, consolidated):
    import json
    import pickle

    store = folder / "evil.zarr"
    (store / "score").mkdir(parents=True)
    (store / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    meta = {"shape": [1], "chunks": [1], "dtype": "|O", "fill_value": None, "order": "C", "compressor": None,
            "filters": [{"id": "pickle", "protocol": 5}], "zarr_format": 2, "dimension_separator": "."}
    if consolidated:  # a harmless-looking .zarray, the payload's metadata only in .zmetadata
        (store / "score" / ".zarray").write_text(json.dumps({**meta, "dtype": "<f8", "filters": None}))
        (store / ".zmetadata").write_text(json.dumps({"zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {"zarr_format": 2}, "score/.zarray": meta, "score/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]}}}))
    else:
        (store / "score" / ".zarray").write_text(json.dumps(meta))
    (store / "score" / ".zattrs").write_text(json.dumps({"_ARRAY_DIMENSIONS": ["x"]}))
    (store / "score" / "0").write_bytes(pickle.dumps(np.array([_Hostile(str(target))], dtype=object)))
    return store


@pytest.mark.parametrize("consolidated", [False, True])
def test_hostile_zarr_store_is_refused_before_decoding(tmp_path, consolidated):
    target = tmp_path / "pwned"
    store = hostile_store(tmp_path, target, consolidated=consolidated)
    for reader in (open_score_cube, read_scores):
        with pytest.raises(ScoreFileError, match=r"holds Python objects.*'pickle'.*refuses to open"):
            reader(store)
    assert not target.exists()


def test_zarr_folder_without_suffix_and_object_text_labels(tmp_path):
    cube = score_cube([[0.9, 0.1], [0.2, 0.8]], subject=np.array(["a", "b"], dtype=object),
                      reference_subject=["a", "b"])
    to_zarr(cube, tmp_path / "store")
    assert read_scores(tmp_path / "store").identical(cube)  # a folder, not "no such file"
    assert open_score_cube(tmp_path / "store").identical(cube)  # vlen-utf8 text is fine


def test_netcdf_fill_values_of_other_tools_are_counted(tmp_path):
    da = xr.DataArray(np.array([[0.9, -1.0], [0.2, 0.8]]), dims=("probe", "reference"), name="score",
                      coords={"subject": ("probe", ["a", "b"]), "reference_subject": ("reference", ["a", "b"])})
    da.encoding["_FillValue"] = -1.0
    da.to_netcdf(tmp_path / "other.nc", engine="h5netcdf")
    cube = open_score_cube(tmp_path / "other.nc")
    assert np.isnan(cube.values[0, 1]) and cube.attrs["n_fill_value"] == 1 and cube.attrs["fill_value"] == -1.0
    assert cube.attrs["n_not_compared"] == 1
    declared = read_scores(tmp_path / "other.nc", missing=-1)
    assert declared.attrs["n_missing"] == 1 and "n_fill_value" not in declared.attrs
    da.encoding = {}
    da.attrs["missing_value"] = 0.2
    da.to_netcdf(tmp_path / "mv.nc", engine="h5netcdf")
    assert open_score_cube(tmp_path / "mv.nc").attrs["n_fill_value"] == 1


# ------------------------------------------------------------ read_scores
def test_read_scores_options_per_format(tmp_path):
    cube = score_cube([[0.9, -1.0], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"],
                      score_kind="distance")
    write_npz(cube, tmp_path / "c.npz")
    to_netcdf(cube, tmp_path / "c.nc")
    for name in ("c.npz", "c.nc"):
        back = read_scores(tmp_path / name, missing=-1)
        assert back.attrs["n_missing"] == 1 and back.attrs["score_kind"] == "distance"
        with pytest.warns(UserWarning, match="file says score_kind='distance'"):
            assert read_scores(tmp_path / name, score_kind="similarity").attrs["score_kind"] == "similarity"
        with pytest.raises(ScoreFileError, match=r"sample_ids= do not apply to (npz|netcdf) files"):
            read_scores(tmp_path / name, sample_ids=True)
    assert read_scores(tmp_path / "c.nc", failure=-1).attrs["n_failed_comparisons"] == 1
    assert is_comparison_list(read_scores(tmp_path / "c.npz", layout="list"))
    long = write_text(tmp_path / "l.csv", "llr,spk,enrol\n0.9,a,a\n0.1,a,b\n0.8,b,b\n0.2,b,a\n")
    trials = read_scores(long, columns={"score": "llr", "probe": "spk", "reference": "enrol"})
    assert trials.shape == (2, 2)
    with pytest.raises(ScoreFileError, match=r"columns= names \['speaker'\]"):
        read_scores(long, columns={"speaker": "spk"})
    with pytest.raises(ScoreFileError, match="both 'subject' and 'probe_subject'"):
        read_scores(long, columns={"subject": "spk", "probe_subject": "spk"})
    matrix = write_text(tmp_path / "m.csv", ",a,b\na,0.9,0.1\nb,0.2,0.8\n")
    with pytest.raises(ScoreFileError, match=r"columns= do not apply to matrix files"):
        read_scores(matrix, columns={"score": "x"})


def test_read_candidates_is_reachable_from_bioxr_io(tmp_path):
    import bioxr.io

    assert callable(bioxr.io.read_candidates)
    path = write_text(tmp_path / "c.csv", "search,rank,candidate,score,subject\ns1,1,a,0.9,a\ns1,2,b,0.5,a\n"
                                          "s2,1,a,0.8,b\ns2,2,b,0.7,b\n")
    from bioxr.candidates import read_candidates as direct

    expected = direct(path)
    assert read_scores(path, format="candidates").identical(expected)
    assert bioxr.io.read_candidates(path).identical(expected)
