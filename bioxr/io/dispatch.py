"""One door for every score format: :func:`read_scores` picks the reader and checks the options fit it."""

from __future__ import annotations

import io
from pathlib import Path

from ._text import WHITESPACE, ScoreFileError, Source, split_cells, sniff
from .stores import _is_zarr, open_score_cube, read_npz
from .tables import read_bob, read_long, read_matrix_csv

__all__ = ["read_scores", "read_candidates", "FORMATS"]

SUFFIX_FORMATS = {".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet", ".txt": "bob",
                  ".scores": "bob", ".4col": "bob", ".5col": "bob", ".npz": "npz", ".nc": "netcdf",
                  ".nc4": "netcdf", ".zarr": "zarr"}
FORMATS = ("csv", "matrix", "long", "parquet", "bob", "npz", "netcdf", "zarr", "candidates")
# read_long's keywords, as columns= may name them
_COLUMN_KEYS = {"probe": "probe", "reference": "reference", "probe_id": "probe", "reference_id": "reference",
                "score": "score", "subject": "probe_subject",
                "probe_subject": "probe_subject", "reference_subject": "reference_subject",
                "failed_enrolment": "failed_enrolment", "failed_acquisition": "failed_acquisition"}
# which options each format takes (beyond score_kind, missing and failure, which all but candidates take)
_TAKES = {"matrix": {"delimiter", "layout"}, "long": {"columns", "layout", "sample_ids", "delimiter"},
          "parquet": {"columns", "layout", "sample_ids"}, "bob": {"layout", "sample_ids"},
          "npz": {"layout"}, "netcdf": {"layout"}, "zarr": {"layout"}, "candidates": {"columns"}}
_DEFAULTS = {"columns": None, "layout": "auto", "sample_ids": None, "delimiter": None, "missing": None,
             "failure": None}


def read_candidates(path, **kw):
    """Read top-L candidate lists into the outcome cube: :func:`bioxr.candidates.read_candidates`.

    A door kept in :mod:`bioxr.io` beside the other readers; the work (and
    the parameters, passed on as they are) is in :mod:`bioxr.candidates`,
    imported on first use.

    Parameters
    ----------
    path : str or path-like
    **kw
        The keywords of :func:`bioxr.candidates.read_candidates` (``search=``,
        ``rank=``, ``candidate=``, ``score=``, ``subject=``, ...).

    Returns
    -------
    xarray.Dataset
        The outcome cube over ``search``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "candidates.csv")
    >>> _ = path.write_text("search,rank,candidate,score,subject\\ns1,1,a,0.9,a\\ns1,2,b,0.5,a\\n"
    ...                     "s2,1,a,0.8,b\\ns2,2,b,0.7,b\\n")
    >>> read_candidates(path).mated_rank.values.tolist()
    [1.0, 2.0]
    """
    from bioxr.candidates import read_candidates as reader

    return reader(path, **kw)


def _detect(src: Source, path, format):
    if format is not None:
        if format not in FORMATS:
            raise ScoreFileError(f"{src}: unknown format={format!r}; use one of {list(FORMATS)}.")
        return format
    if src.path is None:
        head = src.head(8)
        if head.startswith(b"PAR1"):
            return "parquet"
        if head.startswith(b"PK"):
            return "npz"
        if head.startswith((b"\x89HDF", b"CDF")):
            raise ScoreFileError(f"{src}: looks like netCDF; open netCDF files by path (read_scores(path)).")
        return "text"
    fmt = SUFFIX_FORMATS.get(src.path.suffix.lower())
    if fmt is None:
        raise ScoreFileError(f"{src}: cannot tell the format from the suffix {src.path.suffix!r}. Known "
                             f"suffixes: {sorted(SUFFIX_FORMATS)}; or pass format= one of {list(FORMATS)}.")
    return fmt


def _csv_kind(src: Source, delimiter, columns: dict) -> str:
    """'matrix' when the header's first cell is empty, or when it lacks the long columns and every data cell
    after the first is a number; else 'long'."""
    lay = sniff(src, delimiter=delimiter)
    header = lay.names
    if not header or not header[0]:
        return "matrix"
    wanted = {columns.get("reference", "reference"), columns.get("score", "score")}
    if wanted <= set(header):
        return "long"
    rows = [split_cells(line, lay.delimiter) for line in lay.first_data[:10]]
    numeric = bool(rows) and len(header) > 1 and all(len(r) == len(header) and all(_number(c) for c in r[1:])
                                                     for r in rows)
    return "matrix" if numeric else "long"


def _number(cell: str) -> bool:
    if cell == "" or cell.lower() == "nan":
        return True
    try:
        float(cell)
    except ValueError:
        return False
    return True


def read_scores(path, *, format: str | None = None, columns: dict | None = None, score_kind: str | None = None,
                missing: float | None = None, failure: float | None = None, layout: str = "auto",
                sample_ids: bool | None = None, delimiter: str | None = None, chunks: int | None = None):
    """Read any supported score file, choosing the reader by suffix, content or ``format=``.

    ``.csv``/``.tsv``: a matrix CSV when the header's first cell is empty, or
    when it is a corner label (such as ``probe`` or ``id``) over reference ids
    and the rows hold only numbers; else long form. ``.parquet``/``.pq``: long
    form; ``.txt``/``.scores``/``.4col``/``.5col``: bob text; ``.npz``;
    ``.nc``/``.nc4``: netCDF; ``.zarr`` (or any Zarr folder): Zarr.
    ``format="candidates"`` reads top-L candidate lists
    (:func:`bioxr.candidates.read_candidates`). File-like objects and text
    are read too (the format from the content).

    Parameters
    ----------
    path : str, path-like, file-like or str
    format : {"csv", "matrix", "long", "parquet", "bob", "npz", "netcdf", "zarr", "candidates"}, optional
    columns : mapping, optional
        Column names for long tables, by :func:`read_long`'s keywords:
        ``{"score": "llr", "subject": "spk", "reference_subject": "enrol"}``
        (``subject`` and ``probe_subject`` are one key; ``probe_id`` and
        ``reference_id`` name the ``probe`` and ``reference`` columns, ids that
        are the same samples on both sides only with ``sample_ids=True``).
        For ``format="candidates"``, the keywords of
        :func:`bioxr.candidates.read_candidates` (``search``, ``rank``, ...).
    score_kind : {"similarity", "distance"}, optional
        Default: what the file stores (netCDF, Zarr, npz), else ``"similarity"``;
        a stored kind it disagrees with is overridden, with a warning.
    missing, failure : float, optional
        Sentinels: "not compared" and "failed" (see :func:`read_matrix_csv`).
    layout : {"auto", "list", "cube"}
        Long and bob files: see :func:`read_long`. Cube formats read a cube;
        ``"list"`` turns it into a comparison list (:func:`bioxr.to_comparisons`).
    sample_ids : bool, optional
        Long and bob files: see :func:`read_long`.
    delimiter : str, optional
        CSV text: one character, or ``"whitespace"``; default sniffed.
    chunks : int, optional
        Long tables only: read lazily into a dask-backed comparison list,
        from a partitioned Parquet dataset (a directory), a glob or a list of
        files; see :func:`read_long`.

    Returns
    -------
    xarray.DataArray or xarray.Dataset
        A score cube or a comparison list (an outcome cube for candidates).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "scores.csv")
    >>> _ = path.write_text("probe,a,b\\na,0.9,0.1\\nb,0.2,0.8\\n")
    >>> read_scores(path).dims
    ('probe', 'reference')
    >>> trials = read_scores(path, layout="list")
    >>> trials.sizes["comparison"]
    4
    """
    if chunks is not None:
        return _read_lazy(path, format=format, columns=columns, score_kind=score_kind, missing=missing,
                          failure=failure, layout=layout, sample_ids=sample_ids, delimiter=delimiter, chunks=chunks)
    if not isinstance(path, (str, Path)) or isinstance(path, str) and "\n" in path or not Path(path).is_dir():
        src = Source(path)
    else:  # a directory: a Zarr store, whatever its suffix
        if not _is_zarr(Path(path)):
            raise ScoreFileError(f"{path}: is a directory but not a Zarr store (no .zgroup, .zarray or zarr.json "
                                 "inside).")
        src, format = None, format or "zarr"
    fmt = _detect(src, path, format) if src is not None else format
    given = {"columns": columns, "layout": layout, "sample_ids": sample_ids, "delimiter": delimiter}
    columns = dict(columns or {})
    kwargs = {} if fmt == "candidates" else _long_keywords(src or path, columns)
    if fmt == "text":  # in memory, no suffix: CSV of either kind, or bob text
        fmt = "csv" if (sniff(src, delimiter=delimiter).delimiter != WHITESPACE or columns) else "bob"
    if fmt == "csv":
        fmt = _csv_kind(src, delimiter, kwargs)
    takes = _TAKES[fmt]
    wrong = [k for k, v in given.items() if v != _DEFAULTS[k] and k not in takes]
    if fmt == "candidates":
        wrong += [k for k, v in (("missing", missing), ("failure", failure)) if v is not None]
    if wrong:
        raise ScoreFileError(f"{src or path}: option(s) {', '.join(f'{k}=' for k in wrong)} do not apply to "
                             f"{fmt} files; they apply to {_where_options_apply(wrong)}. Drop them.")
    sentinels = {"missing": missing, "failure": failure}
    if fmt == "candidates":
        extra = {"score_kind": score_kind} if score_kind is not None else {}
        return read_candidates(path, **_candidate_keywords(columns), **extra)
    if fmt in ("long", "parquet"):
        return read_long(src, **kwargs, score_kind=score_kind or "similarity", **sentinels, layout=layout,
                         sample_ids=sample_ids, format="parquet" if fmt == "parquet" else "csv",
                         **({"delimiter": delimiter} if fmt == "long" else {}))
    if fmt == "bob":
        return read_bob(src, score_kind=score_kind or "similarity", **sentinels, sample_ids=sample_ids,
                        layout=layout)
    if fmt == "matrix":
        cube = read_matrix_csv(src, score_kind=score_kind or "similarity", **sentinels, delimiter=delimiter)
    elif fmt == "npz":
        cube = read_npz(src.path if src.path is not None else io.BytesIO(src.data()), score_kind=score_kind,
                        **sentinels)
    else:
        cube = open_score_cube(src.path if src is not None else path, score_kind=score_kind, **sentinels)
    if layout == "list":
        from bioxr.comparisons import to_comparisons

        return to_comparisons(cube)
    if layout not in ("auto", "cube"):
        raise ScoreFileError(f"{src or path}: layout={layout!r}; use 'auto', 'list' or 'cube'.")
    return cube


def _read_lazy(path, *, format, columns, score_kind, missing, failure, layout, sample_ids, delimiter, chunks):
    """``read_scores(..., chunks=)``: long tables in many parts, through :func:`read_long`."""
    shown = path if not isinstance(path, (list, tuple)) else f"{len(path)} files"
    if format not in (None, "csv", "long", "parquet"):
        raise ScoreFileError(f"{shown}: chunks= reads long tables (CSV/TSV or Parquet, one row per comparison) "
                             f"lazily; format={format!r} is read in memory: drop chunks=.")
    fmt = {"long": "csv"}.get(format, format)
    return read_long(path, **_long_keywords(shown, dict(columns or {})), score_kind=score_kind or "similarity",
                     missing=missing, failure=failure, layout=layout, sample_ids=sample_ids, format=fmt,
                     delimiter=delimiter, chunks=chunks)


def _long_keywords(src, columns: dict) -> dict:
    unknown = [k for k in columns if k not in _COLUMN_KEYS]
    if unknown:
        raise ScoreFileError(f"{src}: columns= names {unknown}, which are not read_long keywords; use "
                             f"{sorted(_COLUMN_KEYS)}.")
    for a, b in (("subject", "probe_subject"), ("probe", "probe_id"), ("reference", "reference_id")):
        if a in columns and b in columns:
            raise ScoreFileError(f"{src}: columns= gives both {a!r} and {b!r}; they are one key (the "
                                 f"{_COLUMN_KEYS[b].replace('_', ' ')} column): give one.")
    return {_COLUMN_KEYS[k]: v for k, v in columns.items()}


def _candidate_keywords(columns: dict) -> dict:
    return dict(columns)


def _where_options_apply(options) -> str:
    places = {"columns": "long CSV/TSV and Parquet tables (and candidates)", "layout": "every score format",
              "sample_ids": "long tables and bob text",
              "delimiter": "CSV/TSV text", "missing": "score files (not candidate lists)",
              "failure": "score files (not candidate lists)"}
    return "; ".join(f"{k}= to {places[k]}" for k in options)
