"""Demographic groups from a lab's own subject table: attach them to the scores, set aside groups too small to test.

A score file rarely carries demographics: a lab keeps them in a table of
its own, one row per subject (subject id, then sex, age band, skin tone...).
:func:`read_subject_table` reads such a table (CSV, TSV or Parquet, through
the score readers' parser, so a bad row is named by its line);
:func:`attach_groups` puts one of its columns on the probe and the reference
side of a score cube or a comparison list, as the coordinates the functions
of :mod:`bioxr.demographics` read (``<column>`` and ``reference_<column>``);
:func:`set_aside_small_groups` leaves out groups with too few subjects for a
subject bootstrap; :func:`group_coordinates` names the coordinates to use,
or says exactly what to pass when there are none; :func:`describe_groups`
says in words what was attached and what was left out.

Nothing is dropped silently. Subjects of the scores that the table does not
list (or lists with an empty cell) have no group: by default their
comparisons are left out, counted in ``attrs`` and said by
:func:`describe_groups`. They are not pooled into an "unknown" group, because
such a group is not a demographic group: its rate would enter the test of
equal FNMR, the margins, FDR and GARBE as if it were one (``unknown="name"``
keeps them under that label for whoever wants it). A subject listed twice
with different groups is an error naming the subject and the lines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .._core import ScoreCubeError
from ..comparisons import is_comparison_list, normalise_labels

__all__ = ["MIN_SUBJECTS", "read_subject_table", "attach_groups", "set_aside_small_groups", "group_coordinates",
           "describe_groups", "groups_provenance"]

#: Fewest subjects a group needs to be analysed: a subject bootstrap of n subjects has C(2n - 1, n) distinct
#: resamples, 35 for n = 4 and 126 for n = 5, and the 2.5% and 97.5% points of a 95% interval need some 40.
MIN_SUBJECTS = 5
_SHOWN = 3  # subjects named as examples in attrs and sentences


class _Table:
    """A subject table's subject and group columns as text (None: empty cell), and each row's place in the file."""

    def __init__(self, subjects, groups, places, source: str, column: str, sha256: str | None):
        self.subjects, self.groups, self.places = subjects, groups, places
        self.source, self.column, self.sha256 = source, column, sha256


def _as_text(values) -> np.ndarray:
    """Cells as str (numbers without a trailing .0), None where empty or NaN."""
    out = np.empty(len(values), dtype=object)
    for k, v in enumerate(values):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            out[k] = None
        elif isinstance(v, (float, np.floating)) and float(v).is_integer():
            out[k] = str(int(v))
        else:
            text = str(v).strip()
            out[k] = text or None
    return out


def _file_columns(path) -> tuple[dict, object, str, str]:
    """The columns of a CSV/TSV/Parquet file (text), a row -> place function, the file's name and sha256."""
    from ..io._text import ScoreFileError, Source, read_table, sniff
    from ..io.tables import _parquet_table

    src = Source(path)
    digest = hashlib.sha256(src.data()).hexdigest() if src.path is not None else None
    if src.suffix in (".parquet", ".pq") or src.head(4) == b"PAR1":
        table = _parquet_table(src)
        columns, place = table.columns, table.locate
    else:
        lay = sniff(src, empty="the file is empty (only whitespace or comments); it lists no subjects.")
        names = lay.names
        if len(set(names)) < len(names) or "" in names:
            raise ScoreFileError(f"{src}: the header (line {lay.header_line}) needs one distinct, non-empty name "
                                 f"per column; it reads {names}.")

        def width(line, n):
            return (f"{src}: line {line} has {n} cells but the header (line {lay.header_line}) has {len(names)}; "
                    "give every row one cell per column (an empty cell for an unknown group).")

        table = read_table(src, lay, names=names, numeric=set(), width_error=width)
        columns, place = table.columns, table.locate
    out = {}
    for name, col in columns.items():
        out[str(name)] = _as_text(col.values() if hasattr(col, "values") and hasattr(col, "codes") else col)
    return out, place, src.path.name if src.path is not None else src.name, digest


def _choose(columns: list[str], subject, group, source: str) -> tuple[str, str]:
    shown = ", ".join(map(repr, columns))
    if subject is None:
        subject = "subject"
    if subject not in columns:
        raise ScoreCubeError(f"the subject table {source} has no column {subject!r} of subject ids; its columns "
                             f"are {shown}. Name the subject column (subject=, in a report -p subject_column NAME).")
    others = [c for c in columns if c != subject]
    if group is None:
        if len(others) == 1:
            return subject, others[0]
        if not others:
            raise ScoreCubeError(f"the subject table {source} has only the subject column {subject!r}: add a column "
                                 "of demographic groups (sex, age band, ...).")
        raise ScoreCubeError(f"the subject table {source} has several group columns ({', '.join(map(repr, others))}): "
                             "name the one to analyse (group=, in a report -p group NAME).")
    if group not in others:
        raise ScoreCubeError(f"the subject table {source} has no group column {group!r}; its columns are {shown}.")
    return subject, group


def _read(table, subject, group) -> _Table:
    if isinstance(table, _Table):
        return table
    source, digest = "<DataFrame>", None
    if isinstance(table, pd.Series):
        source, digest = table.attrs.get("source") or "<Series>", table.attrs.get("sha256") or None
        subject, group = subject or table.index.name or "subject", group or table.name or "group"
        table = pd.DataFrame({subject: table.index.to_numpy(), group: table.to_numpy()})
    elif isinstance(table, Mapping):
        subject, group = subject or "subject", group or "group"
        table = pd.DataFrame({subject: list(table), group: list(table.values())})
        source = "<mapping>"
    if isinstance(table, pd.DataFrame):
        columns = {str(c): _as_text(table[c].to_numpy()) for c in table.columns}

        def place(row):
            return f"row {row + 1}"
    else:
        columns, place, source, digest = _file_columns(table)
    subject, group = _choose(list(columns), subject, group, source)
    subjects = columns[subject]
    empty = np.flatnonzero([s is None for s in subjects])
    if empty.size:
        raise ScoreCubeError(f"the subject table {source}: {place(int(empty[0]))} has no subject id (column "
                             f"{subject!r}); every row needs one.")
    subjects = np.asarray(normalise_labels(subjects.astype(object))[0], dtype=object)
    return _Table(subjects, columns[group], place, source, group, digest)


def _mapping(t: _Table) -> dict:
    """subject -> group (None: listed without a group); conflicting rows are an error naming them."""
    frame = pd.DataFrame({"s": t.subjects, "g": t.groups, "row": np.arange(len(t.subjects))})
    stated = frame.dropna(subset=["g"])
    distinct = stated.drop_duplicates(["s", "g"])
    clash = distinct["s"].duplicated(keep=False)
    if clash.any():
        s = distinct.loc[clash, "s"].iloc[0]
        rows = stated[stated["s"] == s]
        said = "; ".join(f"{t.places(int(r))} says {g!r}" for r, g in zip(rows["row"], rows["g"]))
        n = int(distinct.loc[clash, "s"].nunique())
        raise ScoreCubeError(f"the subject table {t.source} gives subject {s!r} two groups in column {t.column!r}: "
                             f"{said}. A subject belongs to one group: correct or remove the row"
                             + (f" ({n} subjects have such conflicting rows)." if n > 1 else "."))
    out = dict.fromkeys(frame["s"].tolist())
    out.update(zip(distinct["s"].tolist(), distinct["g"].tolist()))
    return out


def read_subject_table(table, *, subject: str | None = None, group: str | None = None) -> pd.Series:
    """A lab's subject table as one group per subject: a pandas Series indexed by subject id.

    Parameters
    ----------
    table : str, path-like, pandas.DataFrame, pandas.Series or mapping
        A CSV or TSV file (delimiter sniffed, ``#`` comments skipped) or a
        Parquet file, one row per subject; or a DataFrame; or a Series or
        mapping of subject to group.
    subject : str, optional, keyword-only
        The column of subject ids (default ``"subject"``); the ids are
        matched as text, NFC-normalised as the score readers do.
    group : str, optional, keyword-only
        The group column to read; default the only column besides the
        subject's (several: an error that lists them).

    Returns
    -------
    pandas.Series
        Group labels (str, None for a subject listed with an empty cell),
        named after the column; ``attrs`` ``source`` (the file's name) and
        ``sha256`` (of the file).

    Raises
    ------
    bioxr.cube.ScoreCubeError
        A missing or ambiguous column, a row without a subject id, or a
        subject listed twice with different groups (the message names the
        subject and both lines).

    Examples
    --------
    >>> import io
    >>> from bioxr.demographics import read_subject_table
    >>> read_subject_table(io.StringIO("subject,sex\\ns1,F\\ns2,M\\ns1,F\\n")).to_dict()
    {'s1': 'F', 's2': 'M'}
    >>> read_subject_table(io.StringIO("subject,sex\\ns1,F\\ns1,M\\n"))
    Traceback (most recent call last):
    ...
    bioxr.cube.ScoreCubeError: the subject table <text> gives subject 's1' two groups in column 'sex': line 2 says 'F'; line 3 says 'M'. A subject belongs to one group: correct or remove the row.
    """
    t = _read(table, subject, group)
    mapping = _mapping(t)
    out = pd.Series(list(mapping.values()), index=pd.Index(list(mapping), name="subject"), name=t.column,
                    dtype=object)
    out.attrs.update(source=t.source, sha256=t.sha256 or "")
    return out


# ------------------------------------------------------------------ attaching
def _labels(data, name: str) -> xr.DataArray:
    if name not in data.coords:
        raise ScoreCubeError(f"the data have no {name!r} labels: groups are attached by subject, so the scores "
                             "need subject labels on both sides.")
    return data[name]


def _n_compared(data) -> int:
    """Comparisons in the data, as :func:`bioxr.to_comparisons` counts them (NaN cells of failures included)."""
    if is_comparison_list(data):
        return int(data.sizes["comparison"])
    keep = data.notnull()
    for flag in ("failed_enrolment", "failed_acquisition"):
        if flag in data.coords:
            keep = keep | data[flag].astype(bool)
    return int(keep.sum())


def _keep_subjects(data, keep_probe: np.ndarray, keep_ref: np.ndarray, probe_dim, ref_dim):
    if is_comparison_list(data):
        return data.isel(comparison=np.flatnonzero(keep_probe & keep_ref))
    return data.isel({probe_dim: np.flatnonzero(keep_probe), ref_dim: np.flatnonzero(keep_ref)})


def _side(data, name: str) -> tuple[np.ndarray, Hashable]:
    coord = _labels(data, name)
    if coord.ndim != 1:
        raise ScoreCubeError(f"{name!r} spans {coord.dims}; attach groups to a comparison list "
                             "(bioxr.to_comparisons) instead.")
    return np.asarray(coord.values).astype(str), coord.dims[0]


def attach_groups(data, table, *, subject: str | None = None, group: str | None = None, name: str | None = None,
                  unknown: str | None = None):
    """Put a subject table's group on the probe and reference side of the scores.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list with ``subject`` and
        ``reference_subject`` labels.
    table : str, path-like, pandas.DataFrame, pandas.Series or mapping
        The subject table (see :func:`read_subject_table`).
    subject, group : str, optional, keyword-only
        Its subject and group columns (see :func:`read_subject_table`).
    name : str, optional, keyword-only
        The coordinate to create; default the group column's name. The
        reference side gets ``reference_<name>``.
    unknown : str, optional, keyword-only
        What to do with subjects of the scores that have no group (not in
        the table, or an empty cell). ``None`` (default): their comparisons
        are left out, counted in attrs. A string: they keep their
        comparisons under that group label (it then enters every test and
        summary as a group).

    Returns
    -------
    xarray.DataArray or xarray.Dataset
        The data (of the type given) with coordinates ``name`` on the
        probe side and ``reference_<name>`` on the reference side, without
        the left-out comparisons. attrs: ``group_coordinate``,
        ``reference_group_coordinate``, ``group_table`` (its file name),
        ``group_table_sha256``, ``group_column``,
        ``n_subjects_without_group``, ``subjects_without_group`` (up to three
        examples, comma-separated), ``n_comparisons_without_group`` (left
        out; 0 with ``unknown``), ``unknown_group`` (the label, or ""),
        ``n_table_subjects_unscored`` (listed in the table, absent from the
        scores).

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import attach_groups
    >>> cube = bioxr.simulate.gaussian(n_subjects=4, seed=0)
    >>> table = {"s0000": "F", "s0001": "M", "s0002": "F"}  # s0003 is not listed
    >>> out = attach_groups(cube, table, group="sex")
    >>> sorted(set(out["sex"].values.tolist())), out.attrs["n_subjects_without_group"]
    (['F', 'M'], 1)
    >>> bool((out["reference_sex"] == "F").sum() == 2)
    True
    """
    if not (isinstance(data, xr.DataArray) or is_comparison_list(data)):
        raise TypeError(f"expected a score cube (DataArray) or a comparison list (Dataset), got {type(data).__name__}.")
    t = _read(table, subject, group)
    mapping = _mapping(t)
    name = str(name or t.column)
    ref_name = f"reference_{name}"
    for n in (name, ref_name):
        if n in data.coords:
            raise ScoreCubeError(f"the data already have a {n!r} coordinate; give the attached group another name "
                                 "(name=) or drop that coordinate first.")
    probe, pdim = _side(data, "subject")
    ref, rdim = _side(data, "reference_subject")
    probe_key = normalise_labels(probe.astype(object))[0]
    ref_key = normalise_labels(ref.astype(object))[0]
    lookup = pd.Series(mapping, dtype=object)
    pg = lookup.reindex(probe_key).to_numpy(dtype=object)
    rg = lookup.reindex(ref_key).to_numpy(dtype=object)
    p_none, r_none = pd.isna(pg), pd.isna(rg)
    scored = set(probe_key.tolist()) | set(ref_key.tolist())
    without = sorted({s for s, g in zip(probe_key, p_none) if g} | {s for s, g in zip(ref_key, r_none) if g})
    before = _n_compared(data)
    if unknown is None:
        keep_p, keep_r = ~p_none, ~r_none
        if is_comparison_list(data):
            keep_p = keep_r = keep_p & keep_r
        out = _keep_subjects(data, keep_p, keep_r, pdim, rdim)
        pg, rg = pg[keep_p], rg[keep_r]
        dropped = before - _n_compared(out)
    else:
        out = data.copy(deep=False)
        pg, rg = np.where(p_none, str(unknown), pg), np.where(r_none, str(unknown), rg)
        dropped = 0
    out = out.assign_coords({name: (pdim, np.asarray(pg, dtype=str)), ref_name: (rdim, np.asarray(rg, dtype=str))})
    out.attrs = {**data.attrs, "group_coordinate": name, "reference_group_coordinate": ref_name,
                 "group_table": t.source, "group_table_sha256": t.sha256 or "", "group_column": t.column,
                 "n_subjects_without_group": len(without), "subjects_without_group": ", ".join(without[:_SHOWN]),
                 "n_comparisons_without_group": int(dropped), "unknown_group": "" if unknown is None else str(unknown),
                 "n_table_subjects_unscored": len(set(mapping) - scored)}
    if unknown is None and _n_compared(out) == 0:
        raise ScoreCubeError(f"none of the {len(scored):,} subjects of the scores is given a group by the subject "
                             f"table {t.source} (column {t.column!r}; e.g. scores name {without[0]!r}, the table "
                             f"{next(iter(mapping), 'nothing')!r}): check that its subject column holds the same ids.")
    return out


# ------------------------------------------------------------ which groups
def group_coordinates(data, group: str | None = None, reference_group: str | None = None) -> tuple[str, str]:
    """The probe's and the reference's group coordinates of the data, checked; or what to pass to get them.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
    group : str, optional
        The probe's group coordinate; default the one :func:`attach_groups`
        made, else ``"group"``.
    reference_group : str, optional
        The reference's; default ``reference_<group>`` (when the data lack
        it, the functions give each reference subject its group as a probe).

    Raises
    ------
    bioxr.cube.ScoreCubeError
        The data have no such coordinate: the message lists the data's
        coordinates and the two ways to give groups.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import group_coordinates
    >>> group_coordinates(bioxr.simulate.demographic({"A": 5, "B": 5}, seed=0))
    ('group', 'reference_group')
    """
    group = group or data.attrs.get("group_coordinate") or "group"
    reference_group = reference_group or data.attrs.get("reference_group_coordinate") or f"reference_{group}"
    if group not in data.coords:
        own = sorted(str(c) for c in data.coords if str(c) not in ("probe", "reference", "comparison"))
        source = data.attrs.get("source")
        where = f"the score file {Path(str(source)).name} carries" if source else "the scores carry"
        raise ScoreCubeError(
            f"{where} no demographic group {group!r} ({'its' if source else 'their'} labels: "
            f"{', '.join(own) or 'none'}). Give the "
            "groups in one of two ways: a subject table, one row per subject with a subject column and a group "
            "column (CSV, TSV or Parquet: -p subject_table PATH, with -p subject_column NAME if its subject "
            "column is not 'subject' and -p group NAME if it has several group columns; in Python "
            "bioxr.demographics.attach_groups), or a group column in the score file itself, named with -p group "
            "NAME (group= in Python).")
    return group, reference_group


def _subject_groups(data, group, reference_group) -> dict:
    from .rates import _Trials

    return _Trials(data, group, reference_group).subject_group


def set_aside_small_groups(data, *, group: Hashable = "group", reference_group: Hashable = "reference_group",
                           min_subjects: int = MIN_SUBJECTS):
    """Leave out the groups with fewer than ``min_subjects`` subjects (all their comparisons), saying which.

    Parameters
    ----------
    data : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list with group coordinates.
    group, reference_group : str, keyword-only
        The probe's and the reference's group coordinates.
    min_subjects : int, keyword-only
        Fewest subjects (probe or reference side) a group needs; default
        :data:`MIN_SUBJECTS`.

    Returns
    -------
    xarray.DataArray or xarray.Dataset
        The data without the small groups' comparisons (across groups
        too); attrs ``min_subjects``, ``groups_set_aside`` and
        ``group_sizes_set_aside`` (comma-separated, in step),
        ``n_comparisons_set_aside``. Unchanged (but for the attrs) when no
        group is small.

    Raises
    ------
    bioxr.cube.ScoreCubeError
        Fewer than two groups would remain: there is nothing to compare.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics import set_aside_small_groups
    >>> cube = bioxr.simulate.demographic({"A": 20, "B": 20, "C": 3}, seed=0)
    >>> out = set_aside_small_groups(cube)
    >>> out.attrs["groups_set_aside"], sorted(set(out["group"].values.tolist()))
    ('C', ['A', 'B'])
    """
    min_subjects = int(min_subjects)
    if min_subjects < 1:
        raise ValueError(f"min_subjects={min_subjects}; give a number of subjects of at least 1.")
    if not (isinstance(data, xr.DataArray) or is_comparison_list(data)):
        raise TypeError(f"expected a score cube (DataArray) or a comparison list (Dataset), got {type(data).__name__}.")
    owner = _subject_groups(data, group, reference_group)
    sizes = pd.Series(owner).value_counts()
    small = sorted(str(g) for g, n in sizes.items() if n < min_subjects)
    big = sorted(str(g) for g, n in sizes.items() if n >= min_subjects)
    attrs = {"min_subjects": min_subjects, "groups_set_aside": ", ".join(small),
             "group_sizes_set_aside": ", ".join(str(int(sizes[g])) for g in small), "n_comparisons_set_aside": 0}
    if len(big) < 2:
        shown = ", ".join(f"{g} ({int(n)})" for g, n in sizes.items())
        raise ScoreCubeError(f"only {len(big)} group{'' if len(big) == 1 else 's'} of {group!r} "
                             f"{'has' if len(big) == 1 else 'have'} at least {min_subjects} subjects (subjects per "
                             f"group: {shown}): there is nothing to compare. Merge small groups or choose another "
                             "group column.")
    if not small:
        out = data.copy(deep=False)
        out.attrs = {**data.attrs, **attrs}
        return out
    probe, pdim = _side(data, "subject")
    ref, rdim = _side(data, "reference_subject")
    keep = {s for s, g in owner.items() if str(g) not in small}
    out = _keep_subjects(data, np.isin(probe, list(keep)), np.isin(ref, list(keep)), pdim, rdim)
    attrs["n_comparisons_set_aside"] = _n_compared(data) - _n_compared(out)
    out.attrs = {**data.attrs, **attrs}
    return out


# ------------------------------------------------------------------ in words
def _subjects(n: int) -> str:
    return f"{n:,} subject{'' if n == 1 else 's'}"


def _comparisons(n: int) -> str:
    return f"{n:,} comparison{'' if n == 1 else 's'}"


def describe_groups(data) -> str:
    """Where the groups came from and what was left out, in sentences (Markdown); "" when nothing is to say.

    Reads the attrs of :func:`attach_groups` and :func:`set_aside_small_groups`.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr import demographics as dm
    >>> cube = bioxr.simulate.gaussian(n_subjects=4, seed=0)
    >>> out = dm.attach_groups(cube, {"s0000": "F", "s0001": "M", "s0002": "F"}, group="sex")
    >>> print(dm.describe_groups(out))  # doctest: +NORMALIZE_WHITESPACE
    Each subject's group is column `sex` of the subject table. 1 subject of the scores has no group there
    (s0003): its 14 comparisons are left out, and the threshold is set on the rest.
    """
    from ..narrative import escape

    a = data.attrs
    parts = []
    if a.get("group_column"):
        table = a.get("group_table", "")
        table = f" {escape(table)}" if table and not table.startswith("<") else ""
        parts.append(f"Each subject's group is column `{escape(a['group_column'])}` of the subject table{table}.")
        n = int(a.get("n_subjects_without_group", 0))
        if n:
            examples = escape(a.get("subjects_without_group", ""))
            examples = f" ({'e.g. ' if n > _SHOWN else ''}{examples}{', ...' if n > _SHOWN else ''})"
            if a.get("unknown_group"):
                parts.append(f"{_subjects(n)} of the scores {'has' if n == 1 else 'have'} no group there{examples}: "
                             f"they form the group {escape(a['unknown_group'])}.")
            else:
                k = int(a.get("n_comparisons_without_group", 0))
                parts.append(f"{_subjects(n)} of the scores {'has' if n == 1 else 'have'} no group there{examples}: "
                             f"{'its' if n == 1 else 'their'} {_comparisons(k)} are left out, and the threshold is "
                             "set on the rest.")
        extra = int(a.get("n_table_subjects_unscored", 0))
        if extra:
            parts.append(f"The table also lists {_subjects(extra)} without scores here; they play no part.")
    if a.get("groups_set_aside"):
        names = [escape(g) for g in a["groups_set_aside"].split(", ")]
        sizes = [int(n) for n in a["group_sizes_set_aside"].split(", ")]
        each = ", ".join(f"{g} ({_subjects(n)})" for g, n in zip(names, sizes))
        one = len(names) == 1
        parts.append(f"{'Group' if one else 'Groups'} {each} {'has' if one else 'have'} fewer than "
                     f"{int(a['min_subjects'])} subjects, too few for a subject-bootstrap interval (a group of n "
                     f"subjects has only C(2n - 1, n) distinct resamples): {'it is' if one else 'they are'} set "
                     f"aside, with {'its' if one else 'their'} {_comparisons(int(a['n_comparisons_set_aside']))} "
                     "(across groups too), and not analysed. Merge small groups to include them.")
    return " ".join(parts)


def groups_provenance(data) -> dict:
    """Provenance lines for the subject table (its name and sha256), from :func:`attach_groups`' attrs; {} without.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.demographics.groups import groups_provenance
    >>> groups_provenance(bioxr.simulate.demographic({"A": 5, "B": 5}, seed=0))
    {}
    """
    a = data.attrs
    if not a.get("group_column"):
        return {}
    # the table's sha256 is in the provenance under its parameter's name (narrative.provenance hashes every file
    # a parameter names), and in attrs["group_table_sha256"]
    return {"subject table": f"{a.get('group_table', '')}, column {a['group_column']}"}
