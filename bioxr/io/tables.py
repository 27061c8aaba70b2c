"""Readers of score tables: matrix CSV, long-form CSV/TSV/Parquet, bob 4/5-column text.

Each takes a path, a file-like object (text or binary) or the text itself
(an :class:`io.StringIO`, or a ``str`` holding a newline), parses it with
pyarrow (or pandas' C engine) and names the file, the line and the column of
anything it cannot take.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ._build import build, build_cube, check_options, first_duplicate, matrix_failures, normalised
from ._text import (WHITESPACE, Labels, Layout, ScoreFileError, Source, _NotANumber, labels_of, read_table, sniff,
                    to_float)

__all__ = ["read_matrix_csv", "read_long", "read_bob"]

_BOB_COLUMNS = {4: ("claimed_id", "real_id", "test_label", "score"),
                5: ("claimed_id", "model_label", "real_id", "test_label", "score")}
_LONG_SUFFIXES = {".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def _shown(names) -> str:
    return ", ".join(map(repr, names[:6])) + (", ..." if len(names) > 6 else "")


def _width_error(src, lay: Layout, names):
    def message(line, n):
        return (f"{src}: line {line} has {n} cells but the header (line {lay.header_line}) has {len(names)} "
                f"({_shown(names)}). Give every row one cell per column; leave a cell empty for 'not compared'.")
    return message


# ---------------------------------------------------------------- matrix CSV
def read_matrix_csv(path, *, score_kind: str = "similarity", missing: float | None = None,
                    failure: float | None = None, delimiter: str | None = None) -> xr.DataArray:
    """Read a matrix CSV: a header of reference ids, then one row of scores per probe.

    The header is a corner cell (empty, or a label such as ``probe`` or
    ``id``, kept in ``attrs["corner_label"]``) then the reference ids; every
    later row is a probe id then one score per reference. The ids are the
    subject labels (NFC-normalised, counted in ``attrs["n_labels_normalised"]``).
    An empty cell (or ``nan``) means "not compared". Lines starting with
    ``#`` and blank lines are skipped; the delimiter (comma, tab, semicolon)
    is sniffed unless given.

    Parameters
    ----------
    path : str, path-like, file-like or str
        A path, an open file (text or binary), an :class:`io.StringIO`, or
        the CSV text itself (a ``str`` holding a newline).
    score_kind : {"similarity", "distance"}
    missing : float, optional
        A sentinel meaning "not compared" (e.g. ``-1``); it becomes NaN and is
        counted in ``attrs["n_missing"]``. Without it every number is a score.
    failure : float, optional
        A sentinel meaning "failed": a reference column entirely at it is a
        failed enrolment, a probe row entirely at it a failed acquisition
        (boolean ``failed_enrolment`` on ``reference``, ``failed_acquisition``
        on ``probe``, their scores NaN, counted in ``attrs["n_failed_enrolments"]``
        and ``attrs["n_failed_acquisitions"]``); other cells at it were not
        compared (NaN, ``attrs["n_failed_comparisons"]``).
    delimiter : str, optional
        One character; default: sniffed.

    Returns
    -------
    xarray.DataArray
        Dims ``("probe", "reference")``; the ``probe`` and ``reference`` indexes
        hold the ids as written, ``subject`` and ``reference_subject`` the
        subjects; ``attrs["n_not_compared"]`` counts the cells without a score in the file.

    Examples
    --------
    >>> import io
    >>> cube = read_matrix_csv(io.StringIO("id,a,b,c\\na,0.9,0.1,-1\\nb,0.2,0.8,-1\\n"), failure=-1)
    >>> cube.sizes["probe"], cube.sizes["reference"], cube.attrs["n_failed_enrolments"]
    (2, 3, 1)
    >>> cube["failed_enrolment"].values.tolist(), cube.attrs["corner_label"]
    ([False, False, True], 'id')
    """
    src = Source(path)
    check_options(src, layout="cube", sample_ids=None, missing=missing, failure=failure)
    lay = sniff(src, delimiter=delimiter)
    if lay.delimiter == WHITESPACE:
        lay.delimiter = ","
    header, hline = lay.names, lay.header_line
    refs = header[1:]
    for j, rid in enumerate(refs or [""]):
        if not rid:
            raise ScoreFileError(f"{src}: column {j + 2} of the header (line {hline}) has no reference id; every "
                                 "column needs the reference's subject label.")
    if duplicate := first_duplicate(refs):
        i, j = duplicate
        raise ScoreFileError(f"{src}: reference id {refs[j]!r} heads two columns, {i + 2} and {j + 2}; keep one "
                             "column per reference.")
    keys = [str(k) for k in range(len(header))]
    table = read_table(src, lay, names=keys, numeric=set(keys[1:]), width_error=_width_error(src, lay, header))
    if table.n_rows == 0:
        raise ScoreFileError(f"{src}: holds a header but no probe rows.")
    locate = table.locate
    probes = table.columns.pop("0")
    if not isinstance(probes, Labels):
        probes = labels_of(np.asarray(probes).astype(str))
    if (probes.codes < 0).any():
        raise ScoreFileError(f"{src}: {locate(int(np.argmax(probes.codes < 0)))} has no probe id in its first "
                             "cell; every row needs the probe's subject label.")
    if len(probes.uniques) < table.n_rows:
        j = int(np.argmax(pd.Series(probes.codes).duplicated().to_numpy()))
        i = int(np.argmax(probes.codes == probes.codes[j]))
        raise ScoreFileError(f"{src}: probe id {probes.uniques[probes.codes[j]]!r} labels two rows, lines "
                             f"{locate.lines()[i]} and {locate.lines()[j]}; keep one row per probe.")
    scores = _matrix_scores(src, table, keys[1:], refs)
    ids = np.asarray(probes.values(), dtype=str)
    ref_ids = np.asarray(refs, dtype=str)
    subject, n_p = normalised(Labels(np.arange(len(ids)), ids.astype(object)), merge=False)
    ref_subject, n_r = normalised(Labels(np.arange(len(ref_ids)), ref_ids.astype(object)), merge=False)
    n_not_compared = int(np.count_nonzero(np.isnan(scores)))
    attrs: dict = {"n_not_compared": n_not_compared}
    coords: dict = {"probe": ids, "reference": ref_ids}
    if missing is not None:
        hit = scores == missing
        attrs.update(missing_sentinel=float(missing), n_missing=int(np.count_nonzero(hit)))
        scores[hit] = np.nan
    if failure is not None:
        flags, counts = matrix_failures(scores, failure, "probe")
        coords.update(flags)
        attrs.update(counts)
    as_text = ids.dtype.kind == "U" and all(isinstance(v, str) for v in subject.uniques)
    cube = build_cube(src, scores, subject=subject.uniques.astype(str) if as_text else subject.uniques,
                      reference_subject=ref_subject.uniques.astype(str), coords=coords, score_kind=score_kind)
    cube.attrs.update(attrs)
    cube.attrs["n_labels_normalised"] = n_p + n_r
    if header[0]:
        cube.attrs["corner_label"] = header[0]
    return cube


def _looks_long(header) -> bool:
    return {"reference", "score"} <= {h.lower() for h in header}


def _matrix_scores(src, table, keys, refs) -> np.ndarray:
    """The score matrix; the first bad cell in reading order (line, then column) is named."""
    locate = table.locate
    columns, first_bad = [], None
    for j, key in enumerate(keys):
        try:
            columns.append(to_float(table.columns.pop(key), where=None))
        except _NotANumber as err:
            if first_bad is None or err.row < first_bad[0]:
                first_bad = (err.row, j, err.text)
            columns.append(None)
    if first_bad:
        row, j, text = first_bad
        hint = (" This looks like a long-form table (one row per comparison): read it with read_long."
                if _looks_long(["", *refs]) else "")
        raise ScoreFileError(f"{src}: {locate(row)}, column {j + 2} (reference {refs[j]!r}): {text!r} is not a "
                             "number. Scores must be numbers; leave the cell empty (or write nan) for 'not "
                             f"compared'.{hint}")
    dtype = np.result_type(*[c.dtype for c in columns]) if columns else np.float64
    scores = np.empty((table.n_rows, len(columns)), dtype=dtype)
    for j, c in enumerate(columns):
        scores[:, j] = c
    if scores.size and not np.isfinite(np.add.reduce(scores, axis=None)):
        inf = np.isinf(scores)
        if inf.any():
            row, j = (int(v) for v in np.argwhere(inf)[0])
            raise ScoreFileError(f"{src}: {locate(row)}, column {j + 2} (reference {refs[j]!r}): the score is "
                                 f"infinite ({scores[row, j]}); {int(inf.sum())} score(s) are. Scores must be "
                                 "finite: leave the cell empty (or write nan) for 'not compared', or declare a "
                                 "sentinel with missing=.")
    return scores


# ---------------------------------------------------------------- long form
def _long_format(src: Source, format) -> str:
    if format is not None:
        if format not in ("csv", "tsv", "parquet"):
            raise ScoreFileError(f"{src}: format={format!r}; read_long reads format='csv' (or 'tsv') or "
                                 "format='parquet'.")
        return "csv" if format == "tsv" else format
    if src.path is None:
        return "parquet" if src.head(4) == b"PAR1" else "csv"
    fmt = _LONG_SUFFIXES.get(src.suffix)
    if fmt is None:
        raise ScoreFileError(f"{src}: cannot tell whether this is CSV or Parquet from its suffix "
                             f"{src.suffix!r}; pass format='csv' or format='parquet'.")
    return fmt


def _parquet_table(src: Source):
    from ._text import system_arrow_pool

    with system_arrow_pool():
        return _read_parquet(src)


def _read_parquet(src: Source):
    from ._text import Table

    stream = src.stream()
    try:
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(stream)
        names = parquet.schema_arrow.names
    except ImportError:  # pragma: no cover - without the io extra
        try:
            frame = pd.read_parquet(stream)
        except ImportError as err:
            raise ScoreFileError(f"{src}: reading Parquet needs pyarrow: pip install 'bioxr[io]'.") from err
        columns = {str(c): (labels_of(frame[c].to_numpy(), missing=None) if frame[c].dtype.kind in "OSUT"
                            else frame[c].to_numpy()) for c in frame.columns}
        return Table(columns, len(frame), lambda i: f"row {i + 1}")
    except Exception as err:  # pyarrow raises ArrowInvalid, OSError...
        raise ScoreFileError(f"{src}: cannot be read as Parquet ({type(err).__name__}: {err}).") from err
    from ._text import arrow_column

    columns = {}
    n_rows = parquet.metadata.num_rows
    for name in names:  # one column at a time: the Arrow copy of only one column is held with the arrays
        try:
            column = parquet.read(columns=[name]).column(0)
        except Exception as err:  # pyarrow raises ArrowInvalid, OSError...
            raise ScoreFileError(f"{src}: column {name!r} cannot be read from Parquet ({type(err).__name__}: "
                                 f"{err}).") from err
        columns[str(name)] = arrow_column(column)
        del column
    return Table(columns, n_rows, lambda i: f"row {i + 1}")


def release_arrow_memory() -> None:
    """Hand memory that Arrow freed back to the system (its allocator keeps it otherwise: 2x a list's size)."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover
        return
    pa.default_memory_pool().release_unused()


def read_long(path, *, probe: str = "probe", reference: str = "reference", score: str = "score",
              probe_subject: str | None = None, reference_subject: str | None = None,
              score_kind: str = "similarity", missing: float | None = None, failure: float | None = None,
              failed_enrolment: str | None = None, failed_acquisition: str | None = None,
              sample_ids: bool | None = None, layout: str = "auto", format: str | None = None,
              delimiter: str | None = None, chunks: int | None = None):
    """Read a long-form table (CSV, TSV or Parquet): one row per comparison.

    Every column not named below is a cofactor. CSV text is parsed by
    pyarrow (or pandas' C engine); its delimiter (comma, tab, semicolon or
    whitespace) is sniffed, ``.tsv`` means tab; lines starting with ``#`` and
    blank lines are skipped; cofactor columns whose cells are all numbers
    become numeric (ids stay as written). Parquet rows count from 1.

    Parameters
    ----------
    path : str, path-like, file-like or str
        A path, an open file (text or binary), an :class:`io.StringIO`, or
        the text itself (a ``str`` holding a newline).
    probe, reference, score : str
        Columns of the probe id, the reference id and the score.
    probe_subject, reference_subject : str, optional
        Columns of subject labels; without one, the id is the subject label.
    score_kind : {"similarity", "distance"}
    missing : float, optional
        A sentinel meaning "not compared"; counted in ``attrs["n_missing"]``.
    failure : float, optional
        A sentinel meaning "failed": a reference whose every comparison is at
        it failed to enrol, a probe whose every comparison is at it (not only
        against failed references) failed to be acquired; other comparisons
        at it were not compared (``attrs["n_failed_comparisons"]``).
    failed_enrolment, failed_acquisition : str, optional
        Marker columns (true/false, 1/0, yes/no; empty is false).
    sample_ids : bool, optional
        True: probe and reference ids name the same samples, so a probe and a
        reference with the same id are one sample, a self comparison never
        counted (``probe_id``/``reference_id`` coordinates,
        ``attrs["n_self_comparisons"]``). Default (None, or False): ids on the
        two sides are plain labels, never the same sample; with both subject
        columns given, a pair of equal ids draws a ``UserWarning``.
    layout : {"auto", "list", "cube"}
        ``"auto"``: a comparison list when the implied cube (distinct probes x
        distinct references) would be under 50% full, else a cube; the choice
        and the fill are in ``attrs["layout"]`` and ``attrs["layout_reason"]``.
    format : {"csv", "tsv", "parquet"}, optional
        Default: from the suffix (``.csv``, ``.tsv``, ``.parquet``, ``.pq``).
    delimiter : str, optional
        One character, or ``"whitespace"``; default: sniffed.
    chunks : int, optional
        Read lazily, larger than memory: a comparison list whose every
        variable is a dask array over ``comparison``, from a partitioned
        Parquet dataset (a directory; Hive-style ``key=value`` folders
        become columns), a glob (``"trials/*.csv"``) or a list of CSV/TSV/
        Parquet files. A partition holds consecutive Parquet row groups of
        one file, up to ``chunks`` rows (a row group is never split), or one
        CSV file. The columns of every file are checked before anything
        else is read, then every row in one pass where the partitions live
        (only counts and distinct ids come back); errors name the file and
        the row or line. The list equals the in-memory read of the same rows
        (``attrs["source"]`` aside); ``failure=`` and ``layout="cube"`` are
        refused, and a pair repeated in two partitions is not detected (see
        :mod:`bioxr.io.partitioned`). Statistics run blockwise on it
        (:mod:`bioxr.verification`), on any dask scheduler.

    Returns
    -------
    xarray.DataArray or xarray.Dataset
        A cube: dims ``("probe", "reference")``, labels in order of first
        appearance, cofactors on ``probe`` or ``reference`` (whichever they are
        constant within), absent pairs NaN (``attrs["n_not_compared"]``).
        A comparison list (:func:`bioxr.comparison_list`): the ids as
        coordinates ``probe`` and ``reference`` (``probe_id`` and
        ``reference_id`` with ``sample_ids=True``), every cofactor a
        coordinate; rows without a score dropped and counted in
        ``attrs["n_not_compared"]``.

    Examples
    --------
    >>> import io
    >>> text = "probe,subject,reference,score,sensor\\na1,a,a,0.9,s1\\na1,a,b,0.2,s1\\nb1,b,b,0.8,s2\\n"
    >>> cube = read_long(io.StringIO(text), probe_subject="subject")
    >>> cube.sizes["probe"], cube.attrs["n_not_compared"], cube["sensor"].dims, cube.attrs["layout"]
    (2, 1, ('probe',), 'cube')
    >>> trials = read_long(io.StringIO(text), probe_subject="subject", layout="list")
    >>> trials.sizes["comparison"], trials["sensor"].values.tolist()
    (3, ['s1', 's1', 's2'])
    """
    if chunks is not None:
        from .partitioned import read_partitioned

        return read_partitioned(path, chunks=chunks, format=format, delimiter=delimiter, probe=probe,
                                reference=reference, score=score, probe_subject=probe_subject,
                                reference_subject=reference_subject, score_kind=score_kind, missing=missing,
                                failure=failure, failed_enrolment=failed_enrolment,
                                failed_acquisition=failed_acquisition, sample_ids=sample_ids,
                                layout="list" if layout == "list" else layout)
    src = Source(path)
    if _long_format(src, format) == "parquet":
        table = _parquet_table(src)
    else:
        lay = sniff(src, delimiter=delimiter)
        header = lay.names
        for k, name in enumerate(header):
            if not name:
                raise ScoreFileError(f"{src}: column {k + 1} of the header (line {lay.header_line}) has no name.")
        if duplicate := first_duplicate(header):
            raise ScoreFileError(f"{src}: the header (line {lay.header_line}) names column "
                                 f"{header[duplicate[1]]!r} twice.")
        table = read_table(src, lay, names=header, numeric={score} & set(header),
                           width_error=_width_error(src, lay, header))
    out = build(src, table, probe=probe, reference=reference, score=score, probe_subject=probe_subject,
                reference_subject=reference_subject, score_kind=score_kind, missing=missing, failure=failure,
                failed_enrolment=failed_enrolment, failed_acquisition=failed_acquisition, sample_ids=sample_ids,
                layout=layout)
    release_arrow_memory()
    return out


# ------------------------------------------------------------------------ bob
def read_bob(path, *, score_kind: str = "similarity", missing: float | None = None, failure: float | None = None,
             sample_ids: bool | None = None, layout: str = "auto"):
    """Read bob-style score text: 4 or 5 whitespace-separated columns per line.

    ``claimed_id real_id test_label score`` (the reference is the model of
    ``claimed_id``) or ``claimed_id model_label real_id test_label score`` (the
    reference is ``model_label``, of subject ``claimed_id``). The probe is
    ``test_label``, of subject ``real_id``. Lines starting with ``#`` and blank
    lines are skipped. Four columns whose third is a number on every line are
    not bob text but a multi-system file (DETConf style: true id, claimed id,
    two systems' scores), refused with a way to read it.

    bob's verification loaders (bob.bio.base ``split_four_column``,
    ``split_five_column``) read each line as one comparison and never look
    at the probe label; bob's own test files write ``x`` on every line. So
    a probe label that is the same on every line while ``real_id`` names
    several subjects (a sample has one subject) names no probe: each line
    becomes its own probe, with id ``"<label>@<line number>"``, counted in
    ``attrs["n_probes_from_lines"]`` and explained in
    ``attrs["probe_labels"]``. Likewise a 5-column model label that is the
    same on every line across several ``claimed_id`` names no model: the
    reference is then the model of ``claimed_id``, as in 4-column files
    (``attrs["model_labels"]``). One real probe label on every line of one
    subject stays one probe (repeated pairs are then refused).

    Parameters
    ----------
    path : str, path-like, file-like or str
        A path, an open file, an :class:`io.StringIO`, or the text itself.
    score_kind : {"similarity", "distance"}
    missing : float, optional
        A sentinel meaning "not compared"; counted in ``attrs["n_missing"]``.
    failure : float, optional
        A sentinel meaning "failed" (see :func:`read_long`).
    sample_ids : bool, optional
        5-column files: True when model and test labels name the same samples
        (see :func:`read_long`).
    layout : {"auto", "list", "cube"}
        As in :func:`read_long`.

    Returns
    -------
    xarray.DataArray or xarray.Dataset
        A ``("probe", "reference")`` cube (absent pairs NaN, counted in
        ``attrs["n_not_compared"]``) or a comparison list.

    Examples
    --------
    >>> text = "# claimed real test score\\na a a_1.png 0.9\\nb a a_1.png 0.1\\nb b b_1.png 0.7\\n"
    >>> cube = read_bob(text)
    >>> [str(s) for s in cube["subject"].values], cube.attrs["n_not_compared"]
    (['a', 'b'], 1)

    bob's own test files: the probe label ``x`` on every line.

    >>> lst = read_bob("a a x 0.9\\nb a x 0.1\\nb b x 0.7\\na b x 0.2\\n")
    >>> lst.attrs["n_probes_from_lines"], [str(p) for p in lst["probe"].values]
    (4, ['x@1', 'x@2', 'x@3', 'x@4'])
    """
    src = Source(path)
    lay = sniff(src, delimiter=WHITESPACE, header=False,
                empty="holds no score lines (only comments or blank lines).")
    first_line = _first_data_line(src)
    width = len(lay.first_data[0].split())

    def width_error(line, n):
        if n in _BOB_COLUMNS and n != width:
            return (f"{src}: line {line} has {n} fields but line {first_line} has {width}; a bob file is all "
                    "4-column or all 5-column.")
        return (f"{src}: line {line} has {n} fields; a bob score line has 4 (claimed_id real_id test_label "
                "score) or 5 (claimed_id model_label real_id test_label score), separated by whitespace, with no "
                "spaces inside a label.")

    if width not in _BOB_COLUMNS:
        raise ScoreFileError(width_error(first_line, width))
    names = list(_BOB_COLUMNS[width])
    table = read_table(src, lay, names=names, numeric={"score"}, width_error=width_error)
    if width == 4:
        _refuse_detconf(src, table)
    per_line = _constant_label(table, "test_label", "real_id")
    if per_line is not None:  # bob's verification loaders read one comparison per line: each line its own probe
        table.columns["test_label"] = _line_labels(table, per_line)
    by_model = width == 5 and _constant_label(table, "model_label", "claimed_id") is None
    out = build(src, table, probe="test_label", reference="model_label" if by_model else "claimed_id",
                score="score", probe_subject="real_id", reference_subject="claimed_id" if by_model else None,
                score_kind=score_kind, missing=missing, failure=failure, sample_ids=sample_ids, layout=layout)
    if per_line is not None:
        out.attrs["n_probes_from_lines"] = int(table.n_rows)
        out.attrs["probe_labels"] = (
            f"the probe label {per_line!r} is on every line, across several subjects, so it names no probe: each "
            "line is its own probe "
            f"(id '{per_line}@<line number>'), as bob.bio.base's split_four_column / split_five_column read it "
            "(one comparison per line)")
    if width == 5 and not by_model:
        out.attrs["model_labels"] = (
            f"the model label {_constant_label(table, 'model_label', 'claimed_id')!r} is on every line, across "
            "several subjects, so it names no model: the reference is "
            "the model of claimed_id, as in 4-column files")
    return out


def _constant_label(table, column: str, subject: str):
    """The one label of ``column`` when every line holds it across several ``subject`` values, else None.

    A sample belongs to one subject, so such a label cannot name a sample (bob's test files write ``x``).
    """
    col, subjects = table.columns[column], table.columns[subject]
    if table.n_rows < 2 or not isinstance(col, Labels) or len(col.uniques) != 1 or (col.codes < 0).any():
        return None
    n_subjects = len(subjects.uniques) if isinstance(subjects, Labels) else len(np.unique(np.asarray(subjects)))
    return str(col.uniques[0]) if n_subjects > 1 else None


def _line_labels(table, label: str) -> Labels:
    """``label@N`` for each score line N (its line number in the file)."""
    lines = np.asarray(table.locate.lines())
    names = np.char.add(f"{label}@", lines.astype(str)).astype(object)
    return Labels(np.arange(table.n_rows, dtype=np.int64), names)


def _first_data_line(src: Source) -> int:
    from ._text import _skippable, check_text

    for number, line in enumerate(check_text(src, src.head(1 << 16), whole=False).splitlines(), start=1):
        if not _skippable(line):
            return number
    return 1


def _refuse_detconf(src, table) -> None:
    """Four columns with numbers in the third and fourth: two systems' scores, not bob text."""
    third, fourth = table.columns["test_label"], table.columns["score"]
    try:
        to_float(third, where=None)
        to_float(fourth, where=None)
    except _NotANumber:
        return
    raise ScoreFileError(
        f"{src}: every line has 4 columns with numbers in the 3rd and 4th, so this is not bob 4-column text "
        "(claimed_id real_id test_label score, the 3rd a probe label) but a multi-system score file in the "
        "DETConf style: true id, claimed id, system-1 score, system-2 score. Read it with pandas and build one "
        "comparison list per system, e.g. df = pandas.read_csv(path, sep=r'\\s+', comment='#', header=None, "
        "names=['true_id', 'claimed_id', 'system1', 'system2']); bioxr.from_frame(df, score='system1', "
        "subject='true_id', reference_subject='claimed_id'). If the 3rd column really is a probe label made "
        "of digits, rename the labels (e.g. prefix them) so they are not numbers.")
