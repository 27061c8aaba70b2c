"""Read and write score files as validated score cubes.

Readers turn a matrix CSV, a long-form CSV or Parquet table, bob-style 4/5
column text, a ``.npz`` archive, a netCDF file or a Zarr store into a score
cube checked by :func:`bioxr.cube.validate_score_cube`. Bad input raises
:class:`ScoreFileError`, which names the file, the line (or row) and column,
and what to do. Nothing is dropped silently: cells with no score are counted
in ``attrs["n_not_compared"]``, a declared sentinel in ``attrs["n_missing"]``.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from bioxr.cube import ScoreCubeError, score_cube, validate_score_cube
from bioxr.cube import score_kind as cube_score_kind

__all__ = ["ScoreFileError", "read_matrix_csv", "read_long", "read_bob", "read_npz", "write_npz", "to_netcdf",
           "to_zarr", "open_score_cube", "read_scores"]

_RESERVED_COORDS = ("probe", "reference", "subject", "reference_subject", "probe_id", "reference_id")
_SUFFIX_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".txt": "bob", ".scores": "bob",
                   ".4col": "bob", ".5col": "bob", ".npz": "npz", ".nc": "netcdf", ".nc4": "netcdf", ".zarr": "zarr"}
_FORMATS = ("csv", "matrix", "long", "parquet", "bob", "npz", "netcdf", "zarr")
_BOB_COLUMNS = {4: ("claimed_id", "real_id", "test_label", "score"),
                5: ("claimed_id", "model_label", "real_id", "test_label", "score")}
_NPZ_KEYS = ("scores", "subject", "reference_subject", "probe_id", "reference_id", "probe", "reference", "score_kind")
# Attributes xarray's CF coders act on (a "missing_value" attribute would mask those scores!) are kept, with those
# netCDF cannot hold (None, bool, list, dict), as JSON in the bioxr_encoding attribute.
_CF_ATTRS = ("_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar", "dtype", "coordinates",
             "compress")
_ENCODING_ATTR = "bioxr_encoding"
_UNNAMED = "__xarray_dataarray_variable__"
_ZARR_MARKERS = (".zgroup", ".zmetadata", "zarr.json")


class ScoreFileError(ScoreCubeError):
    """A score file cannot be read; the message names the file, the place and the fix."""


# ---------------------------------------------------------------- file access
def _existing_file(path) -> Path:
    path = Path(path)
    if not path.exists():
        raise ScoreFileError(f"{path}: no such file. Check the path (relative paths start at {Path.cwd()}).")
    if path.is_dir():
        raise ScoreFileError(f"{path}: is a directory, not a score file. A Zarr store is a directory: open it "
                             "with open_score_cube.")
    if path.stat().st_size == 0:
        raise ScoreFileError(f"{path}: the file is empty (0 bytes); it holds no scores.")
    return path


def _read_text(path) -> str:
    path = _existing_file(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ScoreFileError(f"{path}: cannot be read ({err.strerror or err}).") from err
    if b"\x00" in data[:65536]:
        raise ScoreFileError(f"{path}: is binary, not text (it holds NUL bytes). Score text files are UTF-8; for "
                             "Parquet, npz, netCDF or Zarr use read_scores, which picks the reader by suffix.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ScoreFileError(f"{path}: line {line} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                             f"{err.start}). Save the file as UTF-8, or check that it is a score file.") from err
    if not text.strip():
        raise ScoreFileError(f"{path}: the file is empty (only whitespace); it holds no scores.")
    return text


def _csv_grid(path) -> tuple[int, list[str], list[tuple[int, list[str]]]]:
    """Header line number, header cells and (line number, cells) of each later non-blank record, all as wide."""
    reader = csv.reader(io.StringIO(_read_text(path), newline=""))
    try:
        (hline, header), *rows = [(reader.line_num, [c.strip() for c in cells]) for cells in reader if cells]
    except csv.Error as err:
        raise ScoreFileError(f"{path}: line {reader.line_num} is not valid CSV ({err}).") from err
    for line, cells in rows:
        if len(cells) != len(header):
            shown = ", ".join(map(repr, header[:6])) + (", ..." if len(header) > 6 else "")
            raise ScoreFileError(f"{path}: line {line} has {len(cells)} cells but the header (line {hline}) has "
                                 f"{len(header)} ({shown}). Give every row one cell per column; leave a cell empty "
                                 "for 'not compared'.")
    return hline, header, rows


def _q(value) -> str:
    """repr of a label, without NumPy's np.str_(...) wrapping."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _first_duplicate(labels) -> tuple[int, int] | None:
    seen: dict = {}
    for j, label in enumerate(labels):
        if label in seen:
            return seen[label], j
        seen[label] = j
    return None


# -------------------------------------------------------------- score parsing
def _check_finite(path, values: np.ndarray, where) -> None:
    inf = np.isinf(values)
    if inf.any():
        idx = tuple(int(i) for i in np.argwhere(inf)[0])
        raise ScoreFileError(f"{path}: {where(idx)}: the score is infinite ({values[idx]}); {int(inf.sum())} "
                             "score(s) are. Scores must be finite: leave the cell empty (or write nan) for 'not "
                             "compared', or declare a sentinel with missing=.")


def _text_to_float(path, text, where) -> np.ndarray:
    """Parse score text: '' and 'nan' mean not compared; anything else must be a finite number."""
    text = np.asarray(text, dtype=str)
    blank = text == ""
    try:
        values = np.where(blank, "nan", text).astype(np.float64)
    except ValueError:
        for idx in np.ndindex(text.shape):  # slow path, only to name the culprit
            try:
                float(text[idx]) if not blank[idx] else None
            except ValueError:
                raise ScoreFileError(f"{path}: {where(idx)}: {str(text[idx])!r} is not a number. Scores must be "
                                     "numbers; leave the cell empty (or write nan) for 'not compared'.") from None
        raise ScoreFileError(f"{path}: some scores are not numbers.") from None
    _check_finite(path, values, where)
    return values


def _score_column(path, values: np.ndarray, column: str, locate) -> np.ndarray:
    def where(idx):
        return f"{locate(idx[0])}, column {column!r}"

    if values.dtype.kind in "iuf":
        values = values if values.dtype == np.float32 else values.astype(np.float64)
        _check_finite(path, values, where)
        return values
    if values.dtype.kind == "O":
        values = pd.Series(values, dtype=object).fillna("").astype(str).to_numpy()
    return _text_to_float(path, values.astype(str), where)


# --------------------------------------------------------------- long tables
def _labels(path, values: np.ndarray, column: str, what: str, locate) -> np.ndarray:
    """Labels of a column (text stripped, numbers kept); an empty cell is an error."""
    if values.dtype.kind == "f":
        empty = np.isnan(values)
    elif values.dtype.kind in "OUS":
        na = pd.isna(values) if values.dtype.kind == "O" else np.zeros(values.shape, bool)
        text = np.strings.strip(np.where(na, "", values).astype(str))
        empty = na | (text == "")
        if values.dtype.kind != "O" or all(isinstance(v, str) for v in values):
            values = text
    else:
        empty = np.zeros(values.shape, bool)
    if empty.any():
        raise ScoreFileError(f"{path}: {locate(int(np.argmax(empty)))} has no {what} (column {column!r} is "
                             "empty); every comparison needs one. Fill it in or delete that line.")
    return values


def _typed(values: np.ndarray) -> np.ndarray:
    """A text column as integers or floats when every cell is one, else as text."""
    for dtype in (np.int64, np.float64) if values.dtype.kind == "U" else ():
        try:
            return values.astype(dtype)
        except (ValueError, OverflowError):
            pass
    return values


def _per_group(values: np.ndarray, codes: np.ndarray):
    """(value of each group, None) if constant within groups, else (None, (i, j)): two rows that differ."""
    first = np.unique(codes, return_index=True)[1]
    expected = values[first][codes]
    same = pd.Series(values, dtype=object).eq(pd.Series(expected, dtype=object)).to_numpy()
    same = same | (pd.isna(values) & pd.isna(expected))
    if same.all():
        return values[first], None
    j = int(np.argmin(same))
    return None, (int(first[codes[j]]), j)


def _cube_from_table(path, table: dict, locate, *, probe, reference, score, probe_subject, reference_subject,
                     score_kind, missing, sample_ids: bool) -> xr.DataArray:
    """Build a (probe, reference) cube from one-row-per-comparison columns."""
    wanted = {"probe": probe, "reference": reference, "score": score, "probe_subject": probe_subject,
              "reference_subject": reference_subject}
    absent = [f"{arg}={col!r}" for arg, col in wanted.items() if col is not None and col not in table]
    if absent:
        raise ScoreFileError(f"{path}: no column for {', '.join(absent)}; the columns found are {list(table)}. "
                             "Name the right ones with probe=, reference=, score= (probe_subject=, ...).")
    if len(table[score]) == 0:
        raise ScoreFileError(f"{path}: holds a header but no comparisons (no data rows).")
    pcode, probes = pd.factorize(_labels(path, table[probe], probe, "probe id", locate))
    rcode, refs = pd.factorize(_labels(path, table[reference], reference, "reference id", locate))
    scores = _score_column(path, table[score], score, locate)
    key = pcode.astype(np.int64) * len(refs) + rcode
    repeat = pd.Series(key).duplicated().to_numpy()
    if repeat.any():
        j = int(np.argmax(repeat))
        i = int(np.argmax(key == key[j]))
        raise ScoreFileError(f"{path}: probe {_q(probes[pcode[j]])} is compared with reference "
                             f"{_q(refs[rcode[j]])} twice, at {locate(i)} and {locate(j)}. Keep one score per "
                             "pair (drop or average the repeats).")
    subjects = {"probe": probes, "reference": refs}
    for side, column, codes in (("probe", probe_subject, pcode), ("reference", reference_subject, rcode)):
        if column is not None:
            labels = _labels(path, table[column], column, f"{side} subject", locate)
            subjects[side], clash = _per_group(labels, codes)
            if clash:
                i, j = clash
                ids = probes if side == "probe" else refs
                raise ScoreFileError(f"{path}: {side} {_q(ids[codes[j]])} has two subjects in column {column!r}: "
                                     f"{_q(labels[i])} at {locate(i)} and {_q(labels[j])} at {locate(j)}. A sample "
                                     "belongs to one subject.")
    cofactors = {}
    for column in (c for c in table if c not in wanted.values()):
        if column in _RESERVED_COORDS:
            raise ScoreFileError(f"{path}: column {column!r} would clash with the cube's own {column!r} "
                                 "coordinate. Rename it, or name it as a label column (e.g. probe_subject='subject').")
        values = _typed(table[column])
        (per_probe, probe_clash), (per_ref, ref_clash) = _per_group(values, pcode), _per_group(values, rcode)
        if per_probe is None and per_ref is None:
            (pi, pj), (ri, rj) = probe_clash, ref_clash
            raise ScoreFileError(
                f"{path}: column {column!r} varies within a probe ({_q(probes[pcode[pj]])}: {locate(pi)} and "
                f"{locate(pj)}) and within a reference ({_q(refs[rcode[rj]])}: {locate(ri)} and {locate(rj)}), so "
                "it is neither a probe nor a reference cofactor. Make it a separate probe dimension (one cube "
                f"per {column!r} value, concatenated along a new dimension) or drop the column.")
        cofactors[column] = ("probe", per_probe) if per_probe is not None else ("reference", per_ref)
    matrix = np.full((len(probes), len(refs)), np.nan, dtype=scores.dtype)
    matrix[pcode, rcode] = scores
    ids = {"probe_id": probes, "reference_id": refs} if sample_ids else {}
    n_not_compared = int(np.isnan(matrix).sum())
    cube = _build(path, matrix, subject=subjects["probe"], reference_subject=subjects["reference"],
                  coords={"probe": probes, "reference": refs, **cofactors}, score_kind=score_kind,
                  missing=missing, **ids)
    cube.attrs["n_not_compared"] = n_not_compared
    if sample_ids:
        same_sample = np.asarray(probes)[:, None] == np.asarray(refs)[None, :]
        cube.attrs["n_self_comparisons"] = int((same_sample & ~np.isnan(cube.values)).sum())
    return cube


def _build(path, scores, **kw) -> xr.DataArray:
    """score_cube, with the file named in any error."""
    try:
        return score_cube(scores, source=str(path), **kw)
    except ScoreFileError:
        raise
    except ValueError as err:  # ScoreCubeError, or xarray refusing coordinates of the wrong length
        raise ScoreFileError(str(err) if str(path) in str(err) else f"{path}: {err}") from err


# -------------------------------------------------------------------- readers
def read_matrix_csv(path, *, score_kind: str = "similarity", missing: float | None = None) -> xr.DataArray:
    """Read a matrix CSV: a header of reference ids, then one row of scores per probe.

    The first row is an empty cell then the reference ids; every later row is
    a probe id then one score per reference. The ids are the subject labels.
    An empty cell (or ``nan``) means "not compared".

    Parameters
    ----------
    path : str or path-like
    score_kind : {"similarity", "distance"}
    missing : float, optional
        A sentinel meaning "not compared" (e.g. ``-1``); it becomes NaN and is
        counted in ``attrs["n_missing"]``. Without it every number is a score.

    Returns
    -------
    xarray.DataArray
        Dims ``("probe", "reference")``; the ``probe`` and ``reference`` indexes,
        ``subject`` and ``reference_subject`` hold the ids;
        ``attrs["n_not_compared"]`` counts the cells without a score in the file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "scores.csv")
    >>> _ = path.write_text(",a,b,c\\na,0.9,0.1,-1\\nb,0.2,0.8,\\n")
    >>> cube = read_matrix_csv(path, missing=-1)
    >>> cube.sizes["probe"], cube.sizes["reference"], cube.attrs["n_missing"], cube.attrs["n_not_compared"]
    (2, 3, 1, 1)
    """
    hline, header, rows = _csv_grid(path)
    refs = header[1:]
    if header[0]:
        raise ScoreFileError(f"{path}: the first cell of line {hline} is {header[0]!r}, not empty, so this is not "
                             "a matrix CSV (an empty cell, then one reference id per column). For one row per "
                             "comparison use read_long.")
    for j, rid in enumerate(refs or [""]):
        if not rid:
            raise ScoreFileError(f"{path}: column {j + 2} of the header (line {hline}) has no reference id; every "
                                 "column needs the reference's subject label.")
    if duplicate := _first_duplicate(refs):
        i, j = duplicate
        raise ScoreFileError(f"{path}: reference id {refs[j]!r} heads two columns, {i + 2} and {j + 2}; keep one "
                             "column per reference.")
    if not rows:
        raise ScoreFileError(f"{path}: holds a header but no probe rows.")
    for line, cells in rows:
        if not cells[0]:
            raise ScoreFileError(f"{path}: line {line} has no probe id in its first cell; every row needs the "
                                 "probe's subject label.")
    lines, probes = [line for line, _ in rows], [cells[0] for _, cells in rows]
    if duplicate := _first_duplicate(probes):
        i, j = duplicate
        raise ScoreFileError(f"{path}: probe id {probes[j]!r} labels two rows, lines {lines[i]} and {lines[j]}; "
                             "keep one row per probe.")

    def where(idx):
        return f"line {lines[idx[0]]}, column {idx[1] + 2} (reference {refs[idx[1]]!r})"

    scores = _text_to_float(path, [cells[1:] for _, cells in rows], where)
    probes, refs = np.asarray(probes, dtype=str), np.asarray(refs, dtype=str)
    n_not_compared = int(np.isnan(scores).sum())
    cube = _build(path, scores, subject=probes, reference_subject=refs, coords={"probe": probes, "reference": refs},
                  score_kind=score_kind, missing=missing)
    cube.attrs["n_not_compared"] = n_not_compared
    return cube


def _read_csv_table(path):
    hline, header, rows = _csv_grid(path)
    for k, name in enumerate(header):
        if not name:
            raise ScoreFileError(f"{path}: column {k + 1} of the header (line {hline}) has no name.")
    if duplicate := _first_duplicate(header):
        raise ScoreFileError(f"{path}: the header (line {hline}) names column {header[duplicate[1]]!r} twice.")
    lines = [line for line, _ in rows]
    columns = list(zip(*(cells for _, cells in rows))) or [()] * len(header)
    return {name: np.asarray(col, dtype=str) for name, col in zip(header, columns)}, lambda i: f"line {lines[i]}"


def _read_parquet_table(path):
    path = _existing_file(path)
    try:
        frame = pd.read_parquet(path)
    except (ValueError, OSError, ImportError) as err:
        raise ScoreFileError(f"{path}: cannot be read as Parquet ({type(err).__name__}: {err}).") from err
    return {str(c): frame[c].to_numpy() for c in frame.columns}, lambda i: f"row {i + 1}"


def read_long(path, *, probe: str = "probe", reference: str = "reference", score: str = "score",
              probe_subject: str | None = None, reference_subject: str | None = None,
              score_kind: str = "similarity", missing: float | None = None, format: str | None = None) -> xr.DataArray:
    """Read a long-form CSV or Parquet table: one row per comparison.

    Pairs absent from the table are "not compared" (NaN), counted in
    ``attrs["n_not_compared"]``. Every other column is a cofactor: constant per
    probe, it becomes a coordinate on ``probe``, else constant per reference, on
    ``reference``; one varying within both is an error. CSV columns whose cells
    are all numbers become numeric (ids stay as written). Parquet rows count from 1.

    Parameters
    ----------
    path : str or path-like
    probe, reference, score : str
        Columns of the probe sample id, the reference sample id and the score.
    probe_subject, reference_subject : str, optional
        Columns of subject labels; without one, the id is the subject label.
        With both, ids are sample ids: a probe and a reference with the same id
        are one sample (``probe_id``/``reference_id`` coordinates), a self
        comparison never counted and tallied in ``attrs["n_self_comparisons"]``.
    score_kind : {"similarity", "distance"}
    missing : float, optional
        A sentinel meaning "not compared"; it becomes NaN, counted in ``attrs["n_missing"]``.
    format : {"csv", "parquet"}, optional
        Default: from the suffix (``.csv``, ``.parquet``, ``.pq``).

    Returns
    -------
    xarray.DataArray
        Dims ``("probe", "reference")``, labels in order of first appearance.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "long.csv")
    >>> _ = path.write_text("probe,subject,reference,score,sensor\\n"
    ...                     "a1,a,a,0.9,s1\\na1,a,b,0.2,s1\\nb1,b,b,0.8,s2\\n")
    >>> cube = read_long(path, probe_subject="subject")
    >>> cube.sizes["probe"], cube.attrs["n_not_compared"], cube["sensor"].dims
    (2, 1, ('probe',))
    """
    fmt = format or {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}.get(Path(path).suffix.lower())
    if fmt not in ("csv", "parquet"):
        raise ScoreFileError(f"{path}: cannot tell whether this is CSV or Parquet from its suffix; pass "
                             "format='csv' or format='parquet'.")
    table, locate = _read_csv_table(path) if fmt == "csv" else _read_parquet_table(path)
    return _cube_from_table(path, table, locate, probe=probe, reference=reference, score=score,
                            probe_subject=probe_subject, reference_subject=reference_subject, score_kind=score_kind,
                            missing=missing, sample_ids=probe_subject is not None and reference_subject is not None)


def read_bob(path, *, score_kind: str = "similarity", missing: float | None = None) -> xr.DataArray:
    """Read bob-style score text: 4 or 5 whitespace-separated columns per line.

    ``claimed_id real_id test_label score`` (the reference is the model of
    ``claimed_id``) or ``claimed_id model_label real_id test_label score`` (the
    reference is ``model_label``, of subject ``claimed_id``). The probe is
    ``test_label``, of subject ``real_id``. Lines starting with ``#`` and blank
    lines are skipped. In the 5-column form labels are sample ids: a model and a
    probe with the same label are one sample (see :func:`read_long`).

    Parameters
    ----------
    path : str or path-like
    score_kind : {"similarity", "distance"}
    missing : float, optional
        A sentinel meaning "not compared"; it becomes NaN, counted in ``attrs["n_missing"]``.

    Returns
    -------
    xarray.DataArray
        Dims ``("probe", "reference")``; absent pairs are NaN, counted in ``attrs["n_not_compared"]``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "scores.txt")
    >>> _ = path.write_text("# claimed real test score\\na a a_1.png 0.9\\nb a a_1.png 0.1\\nb b b_1.png 0.7\\n")
    >>> cube = read_bob(path)
    >>> [str(s) for s in cube["subject"].values], cube.attrs["n_not_compared"]
    (['a', 'b'], 1)
    """
    rows, lines, width, first = [], [], None, None
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) not in _BOB_COLUMNS:
            raise ScoreFileError(f"{path}: line {number} has {len(fields)} fields; a bob score line has 4 "
                                 "(claimed_id real_id test_label score) or 5 (claimed_id model_label real_id "
                                 "test_label score), separated by whitespace, with no spaces inside a label.")
        if width is None:
            width, first = len(fields), number
        elif len(fields) != width:
            raise ScoreFileError(f"{path}: line {number} has {len(fields)} fields but line {first} has {width}; a "
                                 "bob file is all 4-column or all 5-column.")
        rows.append(fields)
        lines.append(number)
    if not rows:
        raise ScoreFileError(f"{path}: holds no score lines (only comments or blank lines).")
    table = {name: np.asarray(col, dtype=str) for name, col in zip(_BOB_COLUMNS[width], zip(*rows))}
    return _cube_from_table(path, table, lambda i: f"line {lines[i]}", probe="test_label",
                            reference="claimed_id" if width == 4 else "model_label", score="score",
                            probe_subject="real_id", reference_subject=None if width == 4 else "claimed_id",
                            score_kind=score_kind, missing=missing, sample_ids=width == 5)


def read_npz(path) -> xr.DataArray:
    """Read a score cube from a ``.npz`` archive, never unpickling anything.

    The archive holds ``scores`` (probes x references), ``subject`` and
    ``reference_subject``, optionally ``probe_id``, ``reference_id``, ``probe``
    and ``reference`` (index labels) and a scalar ``score_kind``. String labels
    must be unicode arrays (``np.asarray(labels, dtype=str)``), not objects.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    xarray.DataArray
        Dims ``("probe", "reference")``; NaN cells are counted in ``attrs["n_not_compared"]``.

    Examples
    --------
    >>> import numpy as np
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "scores.npz")
    >>> np.savez(path, scores=np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...          subject=np.array(["a", "b"]), reference_subject=np.array(["a", "b"]))
    >>> read_npz(path).shape
    (2, 2)
    """
    path = _existing_file(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ScoreFileError(f"{path}: cannot be read as a NumPy .npz archive ({err}). Save scores with np.savez "
                             "or write_npz.") from err
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ScoreFileError(f"{path}: holds a single array (.npy), not a .npz archive of named arrays; save the "
                             "scores and labels together with write_npz.")
    with archive:
        found = list(archive.files)
        absent = [k for k in _NPZ_KEYS[:3] if k not in found]
        unknown = [k for k in found if k not in _NPZ_KEYS]
        if absent or unknown:
            raise ScoreFileError(f"{path}: holds the arrays {found}; missing {absent}, not understood {unknown}. A "
                                 f"score .npz holds {list(_NPZ_KEYS[:3])} and optionally {list(_NPZ_KEYS[3:])}.")
        arrays = {}
        for key in found:
            try:
                arrays[key] = archive[key]
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
                hint = ("it holds Python objects, which bioxr never unpickles (allow_pickle=False). Save labels "
                        "as unicode text: np.asarray(labels, dtype=str)") if "allow_pickle" in str(err) else err
                raise ScoreFileError(f"{path}: array {key!r} cannot be read: {hint}.") from err
    scores = arrays.pop("scores")
    kind = arrays.pop("score_kind", np.array("similarity"))
    if scores.ndim != 2 or kind.ndim != 0:
        raise ScoreFileError(f"{path}: 'scores' has {scores.ndim} dimension(s) and 'score_kind' {kind.ndim}; "
                             "scores must be 2-D (probes x references) and score_kind a scalar string.")
    coords = {dim: arrays.pop(dim) for dim in ("probe", "reference") if dim in arrays}
    n_not_compared = int(np.isnan(scores).sum()) if scores.dtype.kind == "f" else 0
    cube = _build(path, scores, coords=coords, score_kind=str(kind), **arrays)
    cube.attrs["n_not_compared"] = n_not_compared
    return cube


def _unicode(name: str, values: np.ndarray) -> np.ndarray:
    if values.dtype.kind != "O":
        return values
    if all(isinstance(v, str) for v in values.ravel()):
        return values.astype(str)
    raise ScoreCubeError(f"coordinate {name!r} holds Python objects that are not strings; .npz cannot store them "
                         "without pickle. Convert them to text or numbers first.")


def write_npz(cube: xr.DataArray, path) -> None:
    """Write a 2-D score cube to a ``.npz`` archive that :func:`read_npz` reads back.

    Keeps the scores, ``subject``, ``reference_subject``, ``probe_id`` and
    ``reference_id`` (when present), the index labels and ``score_kind``; other
    coordinates and attrs are not kept (use :func:`to_netcdf` for a lossless copy).

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube with dims ``(probe_dim, "reference")``.
    path : str or path-like
        Written as given (no suffix is added).

    Returns
    -------
    None

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube([[0.9, 0.1], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"])
    >>> path = pathlib.Path(tempfile.mkdtemp(), "cube.npz")
    >>> write_npz(cube, path)
    >>> read_npz(path).drop_attrs().identical(cube.drop_attrs())
    True
    """
    validate_score_cube(cube, require_mated=False, require_nonmated=False)
    pdim = cube.dims[0]
    if cube.ndim != 2 or cube["subject"].dims != (pdim,):
        raise ScoreCubeError(f"write_npz writes 2-D cubes with 'subject' on the probe dimension; this one has dims "
                             f"{cube.dims}. Stack the probe dimensions first (cube.stack(...)) or use to_netcdf.")
    arrays = {"scores": cube.values, "subject": cube["subject"].values,
              "reference_subject": cube["reference_subject"].values, "score_kind": np.array(cube_score_kind(cube))}
    arrays.update({key: cube[key].values for key in ("probe_id", "reference_id") if key in cube.coords})
    if pdim in cube.indexes and pdim != "subject":
        arrays["probe"] = cube[pdim].values
    if "reference" in cube.indexes:
        arrays["reference"] = cube["reference"].values
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **{k: _unicode(k, np.asarray(v)) for k, v in arrays.items()})


# ------------------------------------------------------------ netCDF and Zarr
def _native_attr(key, value) -> bool:
    """Can netCDF hold this attribute as is, without xarray's CF coders acting on it?"""
    if key in _CF_ATTRS or str(key).startswith("_") or isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim == 1 and value.dtype.kind in "iuf"
    return isinstance(value, (str, int, float, np.integer, np.floating))


def _json_default(value):
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _encode_for_disk(cube) -> xr.Dataset:
    """A Dataset netCDF and Zarr store as is; what they cannot hold goes to the bioxr_encoding attribute."""
    if not isinstance(cube, xr.DataArray):
        raise ScoreCubeError(f"expected a score cube (xarray.DataArray), got {type(cube).__name__}.")
    name = _UNNAMED if cube.name is None else cube.name
    ds = cube.drop_encoding().to_dataset(name=name).copy(deep=False)  # new variables: the input stays untouched
    meta: dict = {"name": cube.name, "dtypes": {}, "gaps": {}, "attrs": {}}
    for var, variable in ds.variables.items():
        if variable.dtype.kind in "OU":  # netCDF and Zarr read strings back as <U or StringDType, gaps as ''
            meta["dtypes"][str(var)] = variable.dtype.str
            gaps = np.flatnonzero(pd.isna(variable.values.ravel())) if variable.dtype.kind == "O" else []
            if len(gaps):
                meta["gaps"][str(var)] = gaps.tolist()
        special = {k: v for k, v in variable.attrs.items() if not _native_attr(k, v)}
        if special:
            meta["attrs"][str(var)] = special
            variable.attrs = {k: v for k, v in variable.attrs.items() if k not in special}
    try:
        ds[name].attrs[_ENCODING_ATTR] = json.dumps(meta, default=_json_default)
    except TypeError as err:
        raise ScoreCubeError(f"an attribute of the cube cannot be saved ({err}); use text, numbers, lists, dicts "
                             "or None.") from err
    return ds


def _decode_from_disk(path, ds: xr.Dataset) -> xr.DataArray:
    names = list(ds.data_vars)
    if len(names) != 1:
        raise ScoreFileError(f"{path}: holds {len(names)} data variables {names}; a score cube file holds exactly "
                             "one (the scores). Select it with xarray and save it alone with to_netcdf or to_zarr.")
    stored = names[0]
    cube = ds[stored].drop_encoding()
    meta = json.loads(cube.attrs.pop(_ENCODING_ATTR, "{}"))
    gaps = meta.get("gaps", {})
    for var, dtype in meta.get("dtypes", {}).items():
        if var in cube.coords and (cube[var].dtype.str != dtype or var in gaps):
            coord = cube[var]
            values = coord.values.astype(dtype)  # a copy
            values.ravel()[gaps.get(var, [])] = np.nan
            cube = cube.assign_coords({var: (coord.dims, values, coord.attrs)})
    for var, special in meta.get("attrs", {}).items():
        if var == stored or var in cube.coords:
            (cube if var == stored else cube.coords[var]).attrs.update(special)
    for var in (cube, *cube.coords.values()):  # NumPy scalars back to the Python numbers they were written from
        var.attrs.update({k: v.item() for k, v in var.attrs.items() if isinstance(v, np.generic)})
    return cube.rename(meta["name"] if "name" in meta else None if stored == _UNNAMED else stored)


def to_netcdf(cube: xr.DataArray, path) -> None:
    """Write a score cube to a netCDF-4 file (engine h5netcdf), losing nothing.

    Coordinates (string labels keep their dtype, object or unicode), attrs
    (``None``, booleans, lists and dicts included, kept as JSON in the
    ``bioxr_encoding`` attribute), dtypes and NaN all survive :func:`open_score_cube`.

    Parameters
    ----------
    cube : xarray.DataArray
    path : str or path-like

    Returns
    -------
    None

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube([[0.9, -1.0], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"], missing=-1)
    >>> path = pathlib.Path(tempfile.mkdtemp(), "cube.nc")
    >>> to_netcdf(cube, path)
    >>> back = open_score_cube(path)
    >>> back.identical(cube), back.attrs["n_missing"]
    (True, 1)
    """
    _encode_for_disk(cube).to_netcdf(path, engine="h5netcdf")


def to_zarr(cube: xr.DataArray, path) -> None:
    """Write a score cube to a Zarr store (a directory, Zarr format 2), losing nothing.

    An existing Zarr store at ``path`` is replaced; any other existing path is an error.

    Parameters
    ----------
    cube : xarray.DataArray
    path : str or path-like

    Returns
    -------
    None

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube([[0.9, 0.1], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"])
    >>> path = pathlib.Path(tempfile.mkdtemp(), "cube.zarr")
    >>> to_zarr(cube, path)
    >>> open_score_cube(path).identical(cube)
    True
    """
    path = Path(path)
    if path.exists() and not (path.is_dir() and (_is_zarr(path) or not any(path.iterdir()))):
        raise ScoreFileError(f"{path}: exists and is not a Zarr store; refusing to overwrite it. Pick a new path.")
    _encode_for_disk(cube).to_zarr(path, mode="w", zarr_format=2, consolidated=True)


def _is_zarr(path: Path) -> bool:
    return any((path / marker).exists() for marker in _ZARR_MARKERS)


def open_score_cube(path) -> xr.DataArray:
    """Open a score cube saved by :func:`to_netcdf` or :func:`to_zarr`, detecting which.

    Loads it into memory, restores what the writers encoded and validates it.

    Parameters
    ----------
    path : str or path-like
        A netCDF file or a Zarr store directory.

    Returns
    -------
    xarray.DataArray

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube([[0.9, 0.1], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"])
    >>> path = pathlib.Path(tempfile.mkdtemp(), "cube.nc")
    >>> to_netcdf(cube, path)
    >>> open_score_cube(path).dims
    ('probe', 'reference')
    """
    path = Path(path)
    if path.is_dir():
        if not _is_zarr(path):
            raise ScoreFileError(f"{path}: is a directory but not a Zarr store (no .zgroup or zarr.json inside).")
        engine = "zarr"
    else:
        with _existing_file(path).open("rb") as handle:
            magic = handle.read(8)
        if not magic.startswith((b"\x89HDF\r\n\x1a\n", b"CDF")):
            raise ScoreFileError(f"{path}: is neither netCDF nor a Zarr store (no netCDF/HDF5 signature). For CSV, "
                                 "Parquet, bob text or .npz use read_scores.")
        engine = "h5netcdf" if magic.startswith(b"\x89HDF") else None  # netCDF-3: let xarray pick
    try:
        with xr.open_dataset(path, engine=engine) as ds:
            cube = _decode_from_disk(path, ds.load())
    except ScoreFileError:
        raise
    except (OSError, ValueError, KeyError) as err:
        raise ScoreFileError(f"{path}: cannot be opened as a score cube ({type(err).__name__}: {err}).") from err
    try:
        return validate_score_cube(cube)
    except ScoreCubeError as err:
        raise ScoreFileError(f"{path}: {err}") from err


def _header_starts_empty(path) -> bool:
    with _existing_file(path).open("rb") as handle:
        head = handle.read(65536).decode("utf-8-sig", errors="replace")
    first = next(csv.reader(io.StringIO(head.lstrip("\r\n"), newline="")), [""])
    return not first or not first[0].strip()


def read_scores(path, *, format: str | None = None, **kw) -> xr.DataArray:
    """Read any supported score file, choosing the reader by suffix or ``format=``.

    ``.csv``: matrix CSV when the header's first cell is empty, else long form;
    ``.parquet``/``.pq``: long form; ``.txt``/``.scores``/``.4col``/``.5col``:
    bob text; ``.npz``; ``.nc``/``.nc4``: netCDF; ``.zarr``: Zarr.

    Parameters
    ----------
    path : str or path-like
    format : {"csv", "matrix", "long", "parquet", "bob", "npz", "netcdf", "zarr"}, optional
    **kw
        Passed to the reader (e.g. ``missing=``, ``probe_subject=``).

    Returns
    -------
    xarray.DataArray

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "scores.csv")
    >>> _ = path.write_text(",a,b\\na,0.9,0.1\\nb,0.2,0.8\\n")
    >>> read_scores(path).dims
    ('probe', 'reference')
    """
    path = Path(path)
    fmt = format or _SUFFIX_FORMATS.get(path.suffix.lower())
    if fmt not in _FORMATS:
        raise ScoreFileError(f"{path}: unknown format={fmt!r}; use one of {list(_FORMATS)}." if format else
                             f"{path}: cannot tell the format from the suffix {path.suffix!r}. Known suffixes: "
                             f"{sorted(_SUFFIX_FORMATS)}; or pass format= one of {list(_FORMATS)}.")
    if fmt == "csv":
        fmt = "matrix" if _header_starts_empty(path) else "long"
    if fmt in ("long", "parquet"):
        return read_long(path, format="parquet" if fmt == "parquet" else "csv", **kw)
    readers = {"matrix": read_matrix_csv, "bob": read_bob, "npz": read_npz}
    return readers.get(fmt, open_score_cube)(path, **kw)
