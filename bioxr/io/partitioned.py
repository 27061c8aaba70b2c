"""Long-form tables in many parts, read lazily: a comparison list backed by dask.

``read_long(path, ..., chunks=N)`` reads a partitioned Parquet dataset (a
directory, Hive-style ``key=value`` folders becoming columns), a glob, or a
list of CSV/TSV/Parquet files into a comparison list whose every variable
is a dask array over ``comparison``. Each partition (consecutive Parquet row
groups of one file, up to ``N`` rows; or one CSV file) is parsed by pyarrow
and built by the in-memory reader's own code (:func:`bioxr.io._build.build`),
so a partition is checked exactly as a file read whole would be, and an
error names the file and the row (Parquet) or line (CSV).

Before anything long, :func:`read_partitioned` reads every file's schema
(or header) and checks the columns; then one pass over the partitions
(where they live, on any dask scheduler) checks every row and returns only
small results: the number of comparisons kept, the counts of ``attrs``,
the distinct ids with their subjects, flagged units and how text cofactors
were typed. From these it checks what spans partitions (one subject per
id, mated and non-mated comparisons present), fills ``attrs`` as the
in-memory reader does, and types each text cofactor as the whole column
decides. Each later pass over the list reads its partitions again, but
only the columns of the variables it needs (a pass over the scores reads
the score column, and the failure columns), with the same helpers and no
checks (:func:`read_variable`); ``.persist()`` the list to keep it in
memory where it lives instead.

Not checked across partitions: a (probe, reference) pair repeated in two
partitions (within one partition it is refused, as in memory); the
``failure=`` sentinel, which needs every comparison of a reference at
once, is refused (flag failures in ``failed_enrolment=`` /
``failed_acquisition=`` columns, or read in memory).
"""

from __future__ import annotations

import glob as _glob
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ._text import ScoreFileError

__all__ = ["read_partitioned"]

_PARQUET = (".parquet", ".pq")
_CSV = (".csv", ".tsv")


@dataclass(frozen=True)
class Part:
    """One partition: a CSV file, or consecutive row groups of a Parquet file (Hive keys as constant columns)."""

    path: str
    format: str
    row_groups: tuple = ()
    first_row: int = 0
    n_rows: int = -1
    keys: tuple = field(default=())  # ((name, value), ...) from the folders


# ------------------------------------------------------------------ finding the parts
def _files(path, format) -> tuple[list, str, dict]:
    """``(files, shown, hive)``: the files in order, how the source is named, Hive keys per file."""
    if isinstance(path, (list, tuple)):
        files = [Path(p) for p in path]
        shown = f"{len(files)} files ({files[0]}, ...)" if files else "[]"
    else:
        text = str(path)
        if Path(text).is_dir():
            return _directory(Path(text), format)
        if any(c in text for c in "*?["):
            files = [Path(p) for p in sorted(_glob.glob(text))]
            shown = text
            if not files:
                raise ScoreFileError(f"{text}: no file matches this pattern. Check the pattern (relative paths "
                                     f"start at {Path.cwd()}).")
        else:
            files, shown = [Path(text)], text
    if not files:
        raise ScoreFileError("read_long(..., chunks=...) was given no files; pass a directory, a glob or a list "
                             "of paths.")
    for f in files:
        if not f.exists():
            raise ScoreFileError(f"{f}: no such file. Check the path (relative paths start at {Path.cwd()}).")
        if f.is_dir():
            raise ScoreFileError(f"{f}: is a directory; pass a directory alone (a partitioned Parquet dataset), "
                                 "or a list of files.")
    return files, shown, {}


def _directory(root: Path, format) -> tuple[list, str, dict]:
    if format not in (None, "parquet"):
        files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))
        return files, str(root), {}
    import pyarrow.dataset as pds

    try:
        dataset = pds.dataset(str(root), format="parquet", partitioning="hive")
    except Exception as err:  # pyarrow raises ArrowInvalid, OSError...
        raise ScoreFileError(f"{root}: cannot be read as a partitioned Parquet dataset ({type(err).__name__}: "
                             f"{err}). A directory is read as Parquet files (Hive-style key=value folders).") from err
    hive = {}
    files = []
    for fragment in sorted(dataset.get_fragments(), key=lambda f: f.path):
        keys = pds.get_partition_keys(fragment.partition_expression)
        files.append(Path(fragment.path))
        hive[str(fragment.path)] = tuple(sorted(keys.items()))
    if not files:
        raise ScoreFileError(f"{root}: holds no Parquet file (files starting with '.' or '_' are skipped).")
    return files, str(root), hive


def _format(path: Path, format) -> str:
    if format is not None:
        if format not in ("csv", "tsv", "parquet"):
            raise ScoreFileError(f"{path}: format={format!r}; read_long reads format='csv' (or 'tsv') or "
                                 "format='parquet'.")
        return "csv" if format == "tsv" else format
    suffix = path.suffix.lower()
    if suffix in _PARQUET:
        return "parquet"
    if suffix in _CSV:
        return "csv"
    raise ScoreFileError(f"{path}: cannot tell whether this is CSV or Parquet from its suffix {suffix!r}; pass "
                         "format='csv' or format='parquet'.")


def _parquet_parts(path: Path, chunks: int, keys: tuple) -> tuple[list, list]:
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(str(path))
    except Exception as err:  # pyarrow raises ArrowInvalid, OSError...
        raise ScoreFileError(f"{path}: cannot be read as Parquet ({type(err).__name__}: {err}).") from err
    sizes = [meta.metadata.row_group(i).num_rows for i in range(meta.num_row_groups)]
    parts, group, rows, first = [], [], 0, 0
    for i, n in enumerate(sizes):
        if group and rows + n > chunks:
            parts.append(Part(str(path), "parquet", tuple(group), first, rows, keys))
            first += rows
            group, rows = [], 0
        group.append(i)
        rows += n
    if group:
        parts.append(Part(str(path), "parquet", tuple(group), first, rows, keys))
    return parts, list(meta.schema_arrow.names) + [k for k, _ in keys]


def _csv_header(path: Path, delimiter) -> list:
    from ._text import Source, sniff

    src = Source(path)
    lay = sniff(src, delimiter=delimiter)
    for k, name in enumerate(lay.names):
        if not name:
            raise ScoreFileError(f"{src}: column {k + 1} of the header (line {lay.header_line}) has no name.")
    return list(lay.names)


def plan(path, *, chunks, format, delimiter, wanted: dict) -> tuple[list, str]:
    """The partitions, after checking every file's columns (from its schema or header, nothing else read)."""
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise ScoreFileError(f"chunks={chunks!r}; give the most comparisons per partition, a positive integer "
                             "(e.g. chunks=1_000_000).")
    files, shown, hive = _files(path, format)
    parts, first_columns, first_file = [], None, None
    for f in files:
        fmt = _format(f, format)
        if fmt == "parquet":
            found, columns = _parquet_parts(f, int(chunks), hive.get(str(f), ()))
        else:
            columns = _csv_header(f, delimiter)
            found = [Part(str(f), "csv")]
        absent = [f"{arg}={col!r}" for arg, col in wanted.items() if col is not None and col not in columns]
        if absent:
            raise ScoreFileError(f"{f}: no column for {', '.join(absent)}; the columns found are {columns}. Name "
                                 "the right ones with probe=, reference=, score= (probe_subject=, ...).")
        if first_columns is None:
            first_columns, first_file = columns, f
        elif set(columns) != set(first_columns):
            extra, lost = sorted(set(columns) - set(first_columns)), sorted(set(first_columns) - set(columns))
            raise ScoreFileError(f"{f}: its columns differ from those of {first_file} (more: {extra}; missing: "
                                 f"{lost}). Every part of a list needs the same columns.")
        parts += [p for p in found if p.n_rows != 0]
    if not parts:
        raise ScoreFileError(f"{shown}: holds no comparisons (no rows in any file).")
    return parts, shown


# ------------------------------------------------------------------ reading one part
def _table(part: Part, delimiter, score, only=None):
    """The parsed columns of one partition (a :class:`bioxr.io._text.Table`) and its source.

    ``only``: read only these columns (Parquet; a CSV file is parsed whole).
    """
    from ._text import Source, Table, arrow_column, read_table, sniff, system_arrow_pool

    src = Source(part.path)
    if part.format == "csv":
        lay = sniff(src, delimiter=delimiter)
        header = lay.names
        from ._build import first_duplicate

        if duplicate := first_duplicate(header):
            raise ScoreFileError(f"{src}: the header (line {lay.header_line}) names column "
                                 f"{header[duplicate[1]]!r} twice.")
        return src, read_table(src, lay, names=header, numeric={score} & set(header),
                               width_error=_width(src, lay, header))
    import pyarrow.parquet as pq

    with system_arrow_pool():
        try:
            keys = {k for k, _ in part.keys}
            wanted = None if only is None else [c for c in only if c not in keys]
            table = pq.ParquetFile(part.path).read_row_groups(list(part.row_groups), columns=wanted)
        except Exception as err:  # pyarrow raises ArrowInvalid, OSError...
            raise ScoreFileError(f"{src}: row groups {list(part.row_groups)} cannot be read from Parquet "
                                 f"({type(err).__name__}: {err}).") from err
        columns = {str(name): arrow_column(table.column(name)) for name in table.column_names}
        for name, value in part.keys:  # Hive keys: one value for the whole file, typed as pyarrow reads them
            if only is not None and name not in only:
                continue
            if isinstance(value, str):
                from ._text import labels_of

                columns[str(name)] = labels_of(np.full(table.num_rows, value, dtype=object), missing=None)
            else:
                columns[str(name)] = np.full(table.num_rows, value)
    first = part.first_row
    return src, Table(columns, table.num_rows, lambda i: f"row {first + i + 1}")


def _width(src, lay, names):
    from .tables import _width_error

    return _width_error(src, lay, names)


def read_part(part: Part, options: dict, typing: dict | None = None, table=None):
    """One partition as an in-memory comparison list, and what it tells the whole (see :func:`build`)."""
    from ._build import build

    src, table = table or _table(part, options["delimiter"], options["score"])
    info = {"typing": typing, "n_rows": table.n_rows}
    kw = {k: v for k, v in options.items() if k != "delimiter"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ds = build(src, table, layout="list", partition=info, **kw)
    return ds, info


def _ids(info: dict, i: int) -> dict:
    """A partition's distinct ids with their subjects, per side, for the tree that merges them."""
    return {side: pd.DataFrame({"id": np.asarray(info[key][0], dtype=object),
                                "subject": np.asarray(info[key][1], dtype=object), "part": i})
            for side, key in (("probe", "probe_ids"), ("reference", "reference_ids"))}


def _merge_ids(*parts: dict) -> dict:
    return {side: pd.concat([p[side] for p in parts], ignore_index=True).drop_duplicates(["id", "subject"])
            for side in ("probe", "reference")}


def _ids_result(merged: dict) -> dict:
    """Per side: how many distinct ids, and the first id with two subjects (in two partitions), if any."""
    out = {}
    for side, frame in merged.items():
        clash = frame["id"].duplicated(keep=False)
        first = None
        if clash.any():
            rows = frame[frame["id"] == frame[clash].iloc[0]["id"]]
            first = [(r["id"], r["subject"], int(r["part"])) for _, r in rows.iloc[:2].iterrows()]
        out[side] = (int(frame["id"].nunique()), first)
    return out


def _light(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in ("probe_ids", "reference_ids")}


def _summary(part: Part, options: dict):
    src, table = _table(part, options["delimiter"], options["score"])
    if table.n_rows == 0:  # a part with a header only: no comparisons
        empty = np.empty(0, dtype=object)
        return dict(n=0, n_rows=0, attrs={}, n_mated=0, n_nonmated=0, n_same_ids=0, probe_ids=(empty, empty),
                    reference_ids=(empty, empty))
    ds, info = read_part(part, options, table=(src, table))
    mated = np.asarray(ds["subject"].values == ds["reference_subject"].values, dtype=bool)
    info.pop("typing", None)
    info.update(n=ds.sizes["comparison"], attrs=dict(ds.attrs), n_mated=int(mated.sum()),
                n_nonmated=int((~mated).sum()),
                dtypes={name: v.dtype for name, v in ds.variables.items()},
                order=[*ds.data_vars, *ds.coords])
    return info


def _sources(name: str, options: dict) -> list:
    """The columns one variable of the list is made from (besides the score and flags that decide the rows)."""
    o = options
    own = {"score": o["score"], "subject": o["probe_subject"] or o["probe"],
           "reference_subject": o["reference_subject"] or o["reference"], "probe": o["probe"],
           "probe_id": o["probe"], "reference": o["reference"], "reference_id": o["reference"],
           "failed_enrolment": o["failed_enrolment"], "failed_acquisition": o["failed_acquisition"]}
    return [own.get(name, name)]


def read_variable(part: Part, options: dict, typing: dict, name: str, dtype, dropped: bool):
    """One variable of one partition, from its own columns only (the partition was checked whole before).

    The values :func:`read_part` gives for ``name``, by the same helpers
    (:func:`bioxr.io._build.build`'s), without the checks and the other
    columns; the score and failure columns are read too when the partition
    dropped rows (``dropped``: rows without a score), to drop the same ones.
    """
    from ._build import flag_column, label_column, normalised, typed
    from ._text import scores_of

    o = options
    flags = [(k, o[k]) for k in ("failed_enrolment", "failed_acquisition") if o[k] is not None]
    needed = _sources(name, o)
    if dropped or name == "score":
        needed += [o["score"], *(c for _, c in flags)]
    src, table = _table(part, o["delimiter"], o["score"], only=list(dict.fromkeys(needed)))
    cols, locate = table.columns, table.locate
    keep, scores = None, None
    if dropped or name == "score":
        scores = scores_of(src, cols[o["score"]], where=lambda i: f"{locate(i)}, column {o['score']!r}")
        if o["missing"] is not None:
            scores = np.where(scores == o["missing"], np.nan, scores)
        failed = None
        for _, column in flags:
            f = flag_column(src, cols[column], column, locate)
            failed = f if failed is None else failed | f
        keep = ~np.isnan(scores)
        if failed is not None:
            scores = np.where(failed, np.nan, scores)
            keep |= failed
    if name == "score":
        values = scores if scores.dtype.kind == "f" else scores.astype(np.float64)
    elif name in ("failed_enrolment", "failed_acquisition"):
        values = flag_column(src, cols[o[name]], o[name], locate)
    elif name in ("subject", "reference_subject", "probe", "probe_id", "reference", "reference_id"):
        probe_side = name in ("subject", "probe", "probe_id")
        id_column = o["probe"] if probe_side else o["reference"]
        subject_column = o["probe_subject"] if probe_side else o["reference_subject"]
        if name in ("subject", "reference_subject") and subject_column is not None:
            labels = label_column(src, cols[subject_column], subject_column, "subject", locate)[0]
        else:
            labels = label_column(src, cols[id_column], id_column, "id", locate, normalise=bool(o["sample_ids"]))[0]
            if name in ("subject", "reference_subject") and not o["sample_ids"]:
                labels = normalised(labels, merge=False)[0]
        values = labels.uniques.take(labels.codes)
    else:
        values = typed(cols[name], (typing or {}).get(name))
    values = np.asarray(values)
    if keep is not None and dropped:
        values = values[keep]
    return values if values.dtype == dtype else values.astype(dtype)


# ------------------------------------------------------------------ the list
def read_partitioned(path, *, chunks, format=None, delimiter=None, probe="probe", reference="reference",
                     score="score", probe_subject=None, reference_subject=None, score_kind="similarity",
                     missing=None, failure=None, failed_enrolment=None, failed_acquisition=None, sample_ids=None,
                     layout="list") -> xr.Dataset:
    """A dask-backed comparison list from many files or row groups (see :func:`bioxr.io.read_long`)."""
    import dask
    import dask.array as da

    shown = str(path) if not isinstance(path, (list, tuple)) else f"{len(path)} files"
    if layout == "cube":
        raise ScoreFileError(f"{shown}: chunks= reads a lazy comparison list; a cube needs every comparison in "
                             "memory at once. Use layout='list' (or 'auto'), or read without chunks= for a cube.")
    if layout not in ("list", "auto"):
        raise ScoreFileError(f"{shown}: layout={layout!r}; use 'auto' (a comparison list when the implied cube would "
                             "be under half full), 'list' or 'cube'.")
    if failure is not None:
        raise ScoreFileError(f"{shown}: failure= needs every comparison of a reference (or probe) at once, which a "
                             "partitioned read does not hold. Flag failures in columns (failed_enrolment=, "
                             "failed_acquisition=), or read the table in memory (without chunks=).")
    wanted = {"probe": probe, "reference": reference, "score": score, "probe_subject": probe_subject,
              "reference_subject": reference_subject, "failed_enrolment": failed_enrolment,
              "failed_acquisition": failed_acquisition}
    parts, shown = plan(path, chunks=chunks, format=format, delimiter=delimiter, wanted=wanted)
    options = dict(probe=probe, reference=reference, score=score, probe_subject=probe_subject,
                   reference_subject=reference_subject, score_kind=score_kind, missing=missing,
                   failed_enrolment=failed_enrolment, failed_acquisition=failed_acquisition, sample_ids=sample_ids,
                   delimiter=delimiter)
    # one pass: every row of every part checked where it lives; only counts come back, and from a tree that
    # merges the parts' distinct ids (drop_duplicates at each node), their number and any id with two subjects
    from bioxr._core.blockwise import SPLIT_EVERY

    summaries = [dask.delayed(_summary, pure=True)(p, options) for p in parts]
    tree = [dask.delayed(_ids, pure=True)(s, i) for i, s in enumerate(summaries)]
    while len(tree) > 1:
        tree = [dask.delayed(_merge_ids, pure=True)(*tree[i:i + SPLIT_EVERY]) for i in range(0, len(tree), SPLIT_EVERY)]
    infos, ids = dask.compute([dask.delayed(_light, pure=True)(s) for s in summaries],
                              dask.delayed(_ids_result, pure=True)(tree[0]))
    if not any(info["n_rows"] for info in infos):
        raise ScoreFileError(f"{shown}: holds a header but no comparisons (no data rows in any part).")
    attrs = _combine(shown, parts, infos, ids, options, layout)
    typing = _typing(infos)
    keep = [i for i, info in enumerate(infos) if info["n"]]
    node = dask.delayed(read_variable, pure=True)
    variables = {}
    for name in infos[keep[0]]["order"] if keep else []:
        dtype = np.result_type(*[infos[i]["dtypes"][name] for i in keep])
        if dtype.kind in "USO":
            dtype = np.dtype(object) if any(infos[i]["dtypes"][name].kind == "O" for i in keep) else dtype
        for col, t in typing.items():
            if name == col:
                dtype = {"int": np.dtype(np.int64), "float": np.dtype(np.float64), "text": np.dtype(object)}[t]
        arrays = [da.from_delayed(node(parts[i], options, typing, name, dtype, infos[i]["n"] < infos[i]["n_rows"]),
                                  shape=(infos[i]["n"],), dtype=dtype) for i in keep]
        variables[name] = xr.Variable("comparison", da.concatenate(arrays) if len(arrays) > 1 else arrays[0])
    score_var = variables.pop("score")
    out = xr.Dataset({"score": score_var}, coords=variables, attrs=attrs)
    return out


def _typing(infos) -> dict:
    """How the whole column types each text cofactor: int if every part is, float if every part is a number."""
    kinds: dict = {}
    for info in infos:
        if not info["n"]:
            continue
        for column, kind in info.get("typed", {}).items():
            kinds.setdefault(column, set()).add(kind)
    out = {}
    for column, ks in kinds.items():
        if None in ks:
            continue
        out[column] = "int" if ks == {"int"} else "float" if ks <= {"int", "float"} else "text"
    return out


def _combine(shown, parts, infos, ids, options, layout) -> dict:
    """The whole list's attrs, and the checks that span partitions (one subject per id, mated comparisons)."""
    from ._build import q

    distinct = {}
    for side, column in (("probe", options["probe_subject"]), ("reference", options["reference_subject"])):
        distinct[side], clash = ids[side]
        if column is not None and clash is not None:
            (first, a, i), (_, b, j) = clash
            raise ScoreFileError(f"{shown}: {side} {q(first)} has two subjects in column {column!r}: {q(a)} in "
                                 f"{parts[i].path} and {q(b)} in {parts[j].path}. A sample belongs to one subject.")
    where = f" (from {shown})"
    if not sum(info["n_mated"] for info in infos):
        raise ScoreFileError(f"the comparison list{where} holds no mated comparison (no subject equals its "
                             "reference_subject); check that both sides use the same ids.")
    if not sum(info["n_nonmated"] for info in infos):
        raise ScoreFileError(f"the comparison list{where} holds no non-mated comparison; FMR needs comparisons "
                             "of different subjects.")
    if (options["sample_ids"] is None and options["probe_subject"] is not None
            and options["reference_subject"] is not None):
        n_same = sum(info["n_same_ids"] for info in infos)
        if n_same:
            i = next(i for i, info in enumerate(infos) if info["n_same_ids"])
            label, at = infos[i]["first_same_id"]
            warnings.warn(f"{parts[i].path}: {n_same} comparison(s) pair a probe and a reference with the same id "
                          f"(first {label} at {at}). They are kept as comparisons of two samples; if probe and "
                          "reference ids name the same samples, pass sample_ids=True to mark them as self "
                          "comparisons, never counted.", UserWarning, stacklevel=4)
    first = next(info["attrs"] for info in infos if info["n"])  # there are some: mated comparisons were found
    attrs = {k: v for k, v in first.items() if k in ("score_kind", "form", "probe_dims", "missing_sentinel")}
    attrs["source"] = shown
    for key in ("n_failed_comparisons", "n_self_comparisons", "n_not_compared", "n_missing", "n_labels_normalised"):
        if any(key in info["attrs"] for info in infos):
            attrs[key] = int(sum(info["attrs"].get(key, 0) for info in infos))
    for name in ("failed_enrolment", "failed_acquisition"):
        flagged = [info.get("flagged", {}).get(name) for info in infos]
        if any(f is not None for f in flagged):
            attrs[f"n_{name}s"] = int(pd.unique(np.concatenate([np.asarray(f, dtype=object) for f in flagged
                                                                if f is not None])).size)
    n_p, n_r = distinct["probe"], distinct["reference"]
    total = sum(info["n_rows"] for info in infos)
    fill = total / (n_p * n_r)
    how = f"layout={layout!r} requested" if layout == "list" else "chunks=: a lazy comparison list"
    attrs["layout"] = "list"
    attrs["layout_reason"] = (f"{total} comparisons of {n_p} probes x {n_r} references fill {fill:.4%} of the "
                              f"implied cube ({how})")
    attrs["fill_fraction"] = float(fill)
    return attrs
