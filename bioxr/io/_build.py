"""From parsed columns to a score cube or a comparison list: labels, failures, layout, sample ids.

One row per comparison comes in (long tables, bob text); out comes a
(probe, reference) cube or a comparison list, whichever ``layout`` asks for
(``"auto"``: a list when the implied cube would be under half full). Labels
are NFC-normalised; failures declared by a sentinel or by marker columns
become boolean coordinates; every row left out is counted in ``attrs``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from bioxr.comparisons import COMPARISON, FAILURE_COORDS, normalise_labels, validate_comparison_list
from bioxr.cube import score_cube

from ._text import Labels, ScoreFileError, labels_of, scores_of

LAYOUTS = ("auto", "list", "cube")
AUTO_FILL = 0.5
_CUBE_RESERVED = ("probe", "reference", "subject", "reference_subject", "probe_id", "reference_id", *FAILURE_COORDS)
_LIST_RESERVED = (*_CUBE_RESERVED, "mated", "score", "comparison")
_TRUE = ("true", "1", "yes", "y", "t")
_FALSE = ("false", "0", "no", "n", "f", "")


def q(value) -> str:
    """repr of a label, without NumPy's np.str_(...) wrapping."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def first_duplicate(labels) -> tuple[int, int] | None:
    """Positions (first, repeat) of the first label that repeats, or None."""
    dup = pd.Series(np.asarray(labels, dtype=object)).duplicated().to_numpy()
    if not dup.any():
        return None
    j = int(np.argmax(dup))
    return int(np.flatnonzero(np.asarray(labels, dtype=object) == labels[j])[0]), j


def check_options(src, *, layout, sample_ids, missing, failure) -> None:
    if layout not in LAYOUTS:
        raise ScoreFileError(f"{src}: layout={layout!r}; use 'auto' (a comparison list when the implied cube would "
                             "be under half full), 'list' or 'cube'.")
    if sample_ids not in (None, True, False):
        raise ScoreFileError(f"{src}: sample_ids={sample_ids!r}; use True (probe and reference ids name the same "
                             "samples), False or None.")
    if missing is not None and failure is not None and float(missing) == float(failure):
        raise ScoreFileError(f"{src}: missing= and failure= are both {missing!r}; a value means either 'not "
                             "compared' (missing=) or 'failed' (failure=), not both.")


def normalised(col: Labels, *, merge: bool) -> tuple[Labels, int]:
    """Labels in NFC without zero-width characters, and how many cells changed.

    With ``merge`` labels that became equal share one code (one subject);
    without it the distinct values are fixed in place, codes unchanged.
    """
    u = col.uniques
    if u.dtype.kind not in "OU" or not len(u):
        return col, 0
    odd = np.flatnonzero([isinstance(v, str) and not v.isascii() for v in u])
    if not odd.size:
        return col, 0
    fixed, n_changed = normalise_labels(u[odd].astype(object))
    if not n_changed:
        return col, 0
    changed = np.zeros(len(u), dtype=bool)
    changed[odd] = np.asarray([a != b for a, b in zip(fixed, u[odd])], dtype=bool)
    new = u.astype(object, copy=True)
    new[odd] = fixed
    counts = np.bincount(col.codes[col.codes >= 0], minlength=len(u))
    out = col.remap(new) if merge else Labels(col.codes, new, col.missing)
    return out, int(counts[changed].sum())


def label_column(src, col, column: str, what: str, locate, *, normalise: bool = True) -> tuple[Labels, int]:
    """A column of labels (ids or subjects): every cell filled; normalised and merged if asked."""
    if not isinstance(col, Labels):
        col = labels_of(np.asarray(col), missing=None)
    empty = col.codes < 0
    if empty.any():
        raise ScoreFileError(f"{src}: {locate(int(np.argmax(empty)))} has no {what} (column {column!r} is "
                             "empty); every comparison needs one. Fill it in or delete that line.")
    return normalised(col, merge=True) if normalise else (col, 0)


def flag_column(src, col, column: str, locate) -> np.ndarray:
    """A boolean-ish marker column: true/false, 1/0, yes/no (any case); an empty cell is false."""
    if not isinstance(col, Labels):
        values = np.asarray(col)
        if values.dtype.kind == "b":
            return values
        if values.dtype.kind in "iuf":
            bad = ~np.isin(values, (0, 1)) & ~np.isnan(values.astype(float))
            if bad.any():
                row = int(np.argmax(bad))
                raise ScoreFileError(f"{src}: {locate(row)}, column {column!r}: {values[row]!r} is not a failure "
                                     "flag; write true/false, 1/0 or yes/no.")
            return np.nan_to_num(values.astype(float)) == 1
        col = labels_of(values, missing=None)
    text = np.asarray([str(u).strip().lower() for u in col.uniques], dtype=object)
    truth = np.isin(text, _TRUE)
    bad = ~truth & ~np.isin(text, _FALSE)
    if bad.any():
        row = int(np.flatnonzero(bad[np.maximum(col.codes, 0)] & (col.codes >= 0))[0])
        raise ScoreFileError(f"{src}: {locate(row)}, column {column!r}: {str(col.uniques[col.codes[row]])!r} is not "
                             "a failure flag; write true/false, 1/0 or yes/no (an empty cell is false).")
    return np.where(col.codes >= 0, truth[np.maximum(col.codes, 0)], False)


def typed(col, force: str | None = None) -> np.ndarray:
    """Values of a cofactor column: text from a text file as integers or floats when every cell is one.

    ``force`` (``"int"``, ``"float"`` or ``"text"``; from :func:`typing_of` over every partition of a
    partitioned read) types a text column as the whole column decided, whatever this part of it holds.
    """
    if not isinstance(col, Labels):
        return np.asarray(col)
    u = col.uniques
    if col.missing == "" and not (col.codes < 0).any() and u.size and all(isinstance(v, str) for v in u):
        if force == "text":
            return col.values()
        text = u.astype(str)
        for dtype in {None: (np.int64, np.float64), "int": (np.int64,), "float": (np.float64,)}[force]:
            try:
                return text.astype(dtype).take(col.codes)
            except (ValueError, OverflowError):
                pass
        return col.values()
    return col.values()


def typing_of(values) -> str | None:
    """How :func:`typed` typed a text column: ``"int"``, ``"float"`` or ``"text"`` (None: not text)."""
    kind = np.asarray(values).dtype.kind
    return {"i": "int", "f": "float", "O": "text", "U": "text"}.get(kind)


def _group_codes(values) -> np.ndarray:
    if isinstance(values, Labels):
        return values.codes
    return pd.factorize(pd.Series(np.asarray(values), dtype=object) if np.asarray(values).dtype.kind == "O"
                        else np.asarray(values), use_na_sentinel=False)[0]


def per_group(codes: np.ndarray, groups: np.ndarray, n_groups: int):
    """(first row of each group, None) when ``codes`` is constant within groups, else (None, (i, j))."""
    first = np.full(n_groups, -1, dtype=np.int64)
    first[groups[::-1]] = np.arange(len(groups) - 1, -1, -1)
    same = codes == codes[first[groups]]
    if same.all():
        return first, None
    j = int(np.argmin(same))
    return None, (int(first[groups[j]]), j)


def failures(scores, pcode, rcode, n_p, n_r, failure):
    """Failed enrolments (references) and acquisitions (probes) from a sentinel, and isolated failed cells.

    A reference whose every scored comparison is at the sentinel failed to
    enrol; a probe whose every scored comparison is at it (not all against
    failed references) failed to be acquired; other sentinel cells are
    failed comparisons ("not compared").
    """
    hit = scores == failure
    valid = ~np.isnan(scores)
    n_valid_ref = np.bincount(rcode, weights=valid, minlength=n_r)
    fe = (n_valid_ref > 0) & (np.bincount(rcode, weights=hit, minlength=n_r) == n_valid_ref)
    n_valid_probe = np.bincount(pcode, weights=valid, minlength=n_p)
    unexplained = np.bincount(pcode, weights=hit & ~fe[rcode], minlength=n_p) > 0
    fa = (n_valid_probe > 0) & (np.bincount(pcode, weights=hit, minlength=n_p) == n_valid_probe) & unexplained
    isolated = hit & ~fe[rcode] & ~fa[pcode]
    return fe, fa, isolated


def matrix_failures(values: np.ndarray, failure: float, probe_dim: str) -> tuple[dict, dict]:
    """Apply a failure sentinel to a (probe, reference) matrix in place: failed cells become NaN.

    Returns the coordinates (``failed_enrolment`` on ``reference``,
    ``failed_acquisition`` on ``probe_dim``) and the attrs that count them.
    """
    n_p, n_r = values.shape
    flat = values.reshape(-1)
    pcode, rcode = np.repeat(np.arange(n_p), n_r), np.tile(np.arange(n_r), n_p)
    fe, fa, isolated = failures(flat, pcode, rcode, n_p, n_r, float(failure))
    flat[isolated] = np.nan
    values[:, fe] = np.nan
    values[fa, :] = np.nan
    coords = {"failed_enrolment": ("reference", fe), "failed_acquisition": (probe_dim, fa)}
    attrs = dict(failure_sentinel=float(failure), n_failed_enrolments=int(fe.sum()),
                 n_failed_acquisitions=int(fa.sum()), n_failed_comparisons=int(isolated.sum()))
    return coords, attrs


def _consistent_flag(src, flags, codes, n, column, side, ids, locate) -> np.ndarray:
    first, clash = per_group(flags.astype(np.int8), codes, n)
    if clash:
        i, j = clash
        raise ScoreFileError(f"{src}: {side} {q(ids[codes[j]])} is marked failed in column {column!r} at "
                             f"{locate(j) if flags[j] else locate(i)} but not at "
                             f"{locate(i) if flags[j] else locate(j)}; a failure belongs to the {side}: mark all "
                             "its rows, or read with layout='list' to keep per-comparison flags.")
    return flags[first]


def build(src, table, *, probe, reference, score, probe_subject=None, reference_subject=None,
          score_kind="similarity", missing=None, failure=None, failed_enrolment=None, failed_acquisition=None,
          sample_ids=None, layout="auto", ids_are_samples_hint=True, partition=None):
    """A (probe, reference) cube or a comparison list from one-row-per-comparison columns.

    ``partition``: a dict when the table is one partition of a larger list
    (:mod:`bioxr.io.partitioned`): a list is built without the checks that
    need the whole list (mated and non-mated comparisons present), the
    sample-id warning is left to the caller, and the dict receives what the
    caller combines over partitions (ids with their subjects, flagged units,
    cofactor typing); ``partition["typing"]`` forces how text cofactors are
    typed.
    """
    cols, locate = table.columns, table.locate
    check_options(src, layout=layout, sample_ids=sample_ids, missing=missing, failure=failure)
    wanted = {"probe": probe, "reference": reference, "score": score, "probe_subject": probe_subject,
              "reference_subject": reference_subject, "failed_enrolment": failed_enrolment,
              "failed_acquisition": failed_acquisition}
    absent = [f"{arg}={col!r}" for arg, col in wanted.items() if col is not None and col not in cols]
    if absent:
        raise ScoreFileError(f"{src}: no column for {', '.join(absent)}; the columns found are {list(cols)}. "
                             "Name the right ones with probe=, reference=, score= (probe_subject=, ...).")
    if table.n_rows == 0:
        raise ScoreFileError(f"{src}: holds a header but no comparisons (no data rows).")
    if sample_ids and (probe_subject is None or reference_subject is None):
        raise ScoreFileError(f"{src}: sample_ids=True says probe and reference ids name the same samples, but "
                             "without both probe_subject= and reference_subject= the ids are the subjects, and "
                             "every mated comparison would be a self comparison. Name the subject columns.")
    # ids are kept as written (two spellings, two samples) unless they are declared sample ids
    pl, n_norm = label_column(src, cols[probe], probe, "probe id", locate, normalise=bool(sample_ids))
    rl, k = label_column(src, cols[reference], reference, "reference id", locate, normalise=bool(sample_ids))
    n_norm += k
    scores = scores_of(src, cols[score], where=lambda i: f"{locate(i)}, column {score!r}")
    pcode, rcode, n_p, n_r = pl.codes, rl.codes, len(pl.uniques), len(rl.uniques)
    key = pcode.astype(np.int64) * n_r + rcode
    ordered = np.sort(key)  # values only: the fastest sort (SIMD); faster than hashing 1e7 keys
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    del ordered
    if repeated.size:
        i, j = (int(k) for k in np.flatnonzero(key == repeated[0])[:2])
        raise ScoreFileError(f"{src}: probe {q(pl.uniques[pcode[j]])} is compared with reference "
                             f"{q(rl.uniques[rcode[j]])} twice, at {locate(i)} and {locate(j)}. Keep one score per "
                             "pair (drop or average the repeats).")
    del key
    subjects = {}
    for side, column, ids in (("probe", probe_subject, pl), ("reference", reference_subject, rl)):
        if column is None:  # the ids are the subjects: normalised, two spellings are one subject
            fixed, k = (ids, 0) if sample_ids else normalised(ids, merge=False)
            subjects[side] = fixed.uniques
            n_norm += k
            continue
        labels, k = label_column(src, cols[column], column, f"{side} subject", locate)
        n_norm += k
        first, clash = per_group(labels.codes, ids.codes, len(ids.uniques))
        if clash:
            i, j = clash
            raise ScoreFileError(f"{src}: {side} {q(ids.uniques[ids.codes[j]])} has two subjects in column "
                                 f"{column!r}: {q(labels.uniques[labels.codes[i]])} at {locate(i)} and "
                                 f"{q(labels.uniques[labels.codes[j]])} at {locate(j)}. A sample belongs to one "
                                 "subject.")
        subjects[side] = labels.uniques.take(labels.codes[first])
    attrs: dict = {}
    valid = ~np.isnan(scores)
    n_empty = int(table.n_rows - np.count_nonzero(valid))
    if missing is not None:
        hit = scores == missing
        n_missing = int(np.count_nonzero(hit))
        if n_missing:
            scores = np.where(hit, np.nan, scores)
        attrs.update(missing_sentinel=float(missing), n_missing=n_missing)
    flags = {}
    for name, column in (("failed_enrolment", failed_enrolment), ("failed_acquisition", failed_acquisition)):
        if column is not None:
            flags[name] = flag_column(src, cols[column], column, locate)
    fe_ref = np.zeros(n_r, dtype=bool)
    fa_probe = np.zeros(n_p, dtype=bool)
    isolated = None
    if failure is not None:
        fe_ref, fa_probe, isolated = failures(scores, pcode, rcode, n_p, n_r, float(failure))
        attrs["failure_sentinel"] = float(failure)
    n_cells = n_p * n_r
    fill = table.n_rows / n_cells
    chosen = layout if layout != "auto" else ("list" if fill < AUTO_FILL else "cube")
    how = (f"auto: under {AUTO_FILL:.0%} full, a comparison list" if chosen == "list" else
           f"auto: at least {AUTO_FILL:.0%} full, a cube") if layout == "auto" else f"layout={layout!r} requested"
    attrs["layout"] = chosen
    attrs["layout_reason"] = (f"{table.n_rows} comparisons of {n_p} probes x {n_r} references fill "
                              f"{fill:.4%} of the implied cube ({how})")
    attrs["fill_fraction"] = float(fill)
    for name, side_flags, codes, n, side, ids in (
            ("failed_enrolment", fe_ref, rcode, n_r, "reference", rl.uniques),
            ("failed_acquisition", fa_probe, pcode, n_p, "probe", pl.uniques)):
        if name in flags and chosen == "cube":
            side_flags |= _consistent_flag(src, flags[name], codes, n, wanted[name], side, ids, locate)
    # sample ids: equal ids are one sample only when declared
    r_in_p = pd.Index(pl.uniques).get_indexer(rl.uniques)
    same_row = r_in_p[rcode] == pcode
    attrs["n_self_comparisons"] = int(np.count_nonzero(same_row & ~np.isnan(scores))) if sample_ids else 0
    if partition is not None:
        first_same = int(np.argmax(same_row)) if same_row.any() else -1
        partition.update(n_same_ids=int(np.count_nonzero(same_row)), first_same_id=None if first_same < 0 else (
            q(pl.uniques[pcode[first_same]]), locate(first_same)),
            probe_ids=(pl.uniques, subjects["probe"]), reference_ids=(rl.uniques, subjects["reference"]))
    elif sample_ids is None and probe_subject is not None and reference_subject is not None and same_row.any():
        n_same = int(np.count_nonzero(same_row))
        warnings.warn(f"{src}: {n_same} comparison(s) pair a probe and a reference with the same id (first "
                      f"{q(pl.uniques[pcode[int(np.argmax(same_row))]])} at {locate(int(np.argmax(same_row)))}). "
                      "They are kept as comparisons of two samples; if probe and reference ids name the same "
                      "samples, pass sample_ids=True to mark them as self comparisons, never counted.",
                      UserWarning, stacklevel=3)
    del same_row
    others = [c for c in cols if c not in wanted.values()]
    reserved = _LIST_RESERVED if chosen == "list" else _CUBE_RESERVED
    for column in others:
        if column in reserved:
            raise ScoreFileError(f"{src}: column {column!r} would clash with the {chosen}'s own {column!r} "
                                 "coordinate. Rename it, or name it as a label column (e.g. probe_subject='subject').")
    common = dict(src=src, scores=scores, pl=pl, rl=rl, subjects=subjects, cols=cols, others=others,
                  score_kind=score_kind, sample_ids=bool(sample_ids), locate=locate)
    if partition is not None:
        common["partition"] = partition
    if chosen == "cube":
        out = _as_cube(**common, fe_ref=fe_ref if failure is not None or failed_enrolment else None,
                       fa_probe=fa_probe if failure is not None or failed_acquisition else None, isolated=isolated)
    else:
        out = _as_list(**common, flags=flags, fe_ref=fe_ref, fa_probe=fa_probe, isolated=isolated,
                       failure=failure is not None)
    attrs["n_not_compared"] = n_empty if chosen == "list" else n_cells - table.n_rows + n_empty
    out.attrs.update(attrs)
    out.attrs["n_labels_normalised"] = n_norm
    return out


def _as_cube(*, src, scores, pl, rl, subjects, cols, others, score_kind, sample_ids, locate, fe_ref, fa_probe,
             isolated):
    n_p, n_r = len(pl.uniques), len(rl.uniques)
    cofactors = {}
    for column in others:
        values = typed(cols[column])
        codes = _group_codes(cols[column]) if isinstance(cols[column], Labels) else _group_codes(values)
        (per_probe, probe_clash), (per_ref, ref_clash) = (per_group(codes, pl.codes, n_p),
                                                          per_group(codes, rl.codes, n_r))
        if per_probe is None and per_ref is None:
            (pi, pj), (ri, rj) = probe_clash, ref_clash
            raise ScoreFileError(
                f"{src}: column {column!r} varies within a probe ({q(pl.uniques[pl.codes[pj]])}: {locate(pi)} and "
                f"{locate(pj)}) and within a reference ({q(rl.uniques[rl.codes[rj]])}: {locate(ri)} and "
                f"{locate(rj)}), so it is neither a probe nor a reference cofactor. Make it a separate probe "
                f"dimension (one cube per {column!r} value, concatenated along a new dimension), drop the column, "
                "or read a comparison list (layout='list'), where every column is a cofactor.")
        kept = values[per_probe] if per_probe is not None else values[per_ref]
        if kept.dtype.kind == "O" and isinstance(cols[column], Labels) and cols[column].missing == "":
            kept = kept.astype(str)  # text of a text file: fixed-width text, as it was written
        cofactors[column] = ("probe" if per_probe is not None else "reference", kept)
    matrix = np.full((n_p, n_r), np.nan, dtype=scores.dtype)
    matrix[pl.codes, rl.codes] = scores
    attrs = {}
    if isolated is not None:
        matrix[pl.codes[isolated], rl.codes[isolated]] = np.nan
        attrs["n_failed_comparisons"] = int(np.count_nonzero(isolated))
    if fe_ref is not None:
        matrix[:, fe_ref] = np.nan
        cofactors["failed_enrolment"] = ("reference", fe_ref)
        attrs["n_failed_enrolments"] = int(fe_ref.sum())
    if fa_probe is not None:
        matrix[fa_probe, :] = np.nan
        cofactors["failed_acquisition"] = ("probe", fa_probe)
        attrs["n_failed_acquisitions"] = int(fa_probe.sum())
    ids = {"probe_id": pl.uniques, "reference_id": rl.uniques} if sample_ids else {}
    cube = build_cube(src, matrix, subject=subjects["probe"], reference_subject=subjects["reference"],
                      coords={"probe": pl.uniques, "reference": rl.uniques, **cofactors}, score_kind=score_kind,
                      **ids)
    cube.attrs.update(attrs)
    return cube


def _as_list(*, src, scores, pl, rl, subjects, cols, others, score_kind, sample_ids, locate, flags, fe_ref,
             fa_probe, isolated, failure, partition=None):
    row_fe = flags.get("failed_enrolment")
    row_fa = flags.get("failed_acquisition")
    if failure:
        row_fe = fe_ref[rl.codes] if row_fe is None else row_fe | fe_ref[rl.codes]
        row_fa = fa_probe[pl.codes] if row_fa is None else row_fa | fa_probe[pl.codes]
    failed = None
    for f in (row_fe, row_fa):
        if f is not None:
            failed = f if failed is None else failed | f
    attrs: dict = {}
    keep = ~np.isnan(scores)
    if isolated is not None:
        keep &= ~isolated
        attrs["n_failed_comparisons"] = int(np.count_nonzero(isolated))
    if failed is not None:
        scores = np.where(failed, np.nan, scores)
        keep |= failed
    idx = None if keep.all() else np.flatnonzero(keep)

    def rows(values):
        return values if idx is None else values[idx]

    pcodes, rcodes = rows(pl.codes), rows(rl.codes)
    probe_ids, ref_ids = pl.uniques.take(pcodes), rl.uniques.take(rcodes)
    subject = probe_ids if subjects["probe"] is pl.uniques else subjects["probe"].take(pcodes)
    ref_subject = ref_ids if subjects["reference"] is rl.uniques else subjects["reference"].take(rcodes)
    coords = {} if sample_ids else {"probe": probe_ids, "reference": ref_ids}
    force = {} if partition is None else partition.get("typing") or {}
    for column in others:
        coords[column] = rows(typed(cols[column], force.get(column)))
        if partition is not None:
            partition.setdefault("typed", {})[column] = typing_of(coords[column]) if isinstance(
                cols[column], Labels) else None
    fkw = {}
    for name, f, codes in (("failed_enrolment", row_fe, rl.codes), ("failed_acquisition", row_fa, pl.codes)):
        if f is not None:
            fkw[name] = rows(f)
            attrs[f"n_{name}s"] = int(len(np.unique(codes[f])))
            if partition is not None:
                ids = (rl if name == "failed_enrolment" else pl).uniques
                partition.setdefault("flagged", {})[name] = ids[np.unique(codes[f])]
    # the Dataset comparison_list would build (tests check they are identical), built without xarray's
    # conversion of object arrays through pandas (seconds per column of 1e7 labels)
    score = rows(scores)
    variables = {"subject": subject, "reference_subject": ref_subject}
    if sample_ids:
        variables.update(probe_id=probe_ids, reference_id=ref_ids)
    variables.update(fkw)
    variables.update(coords)
    ds = xr.Dataset({"score": _variable(score if score.dtype.kind == "f" else score.astype(np.float64))},
                    coords={k: _variable(np.asarray(v)) for k, v in variables.items()},
                    attrs={"score_kind": score_kind, "form": "comparison list", "probe_dims": [],
                           "source": str(src)})
    try:
        whole = partition is None  # a partition may hold no mated (or no non-mated) comparison
        validate_comparison_list(ds, require_mated=whole, require_nonmated=whole)
    except ValueError as err:
        raise ScoreFileError(str(err) if str(src) in str(err) else f"{src}: {err}") from err
    ds.attrs.update(attrs)
    return ds


def _variable(values: np.ndarray) -> xr.Variable:
    return xr.Variable(COMPARISON, values, fastpath=True)


def build_cube(src, scores, **kw) -> xr.DataArray:
    """score_cube, with the file named in any error."""
    try:
        return score_cube(scores, source=str(src), **kw)
    except ScoreFileError:
        raise
    except ValueError as err:  # ScoreCubeError, or xarray refusing coordinates of the wrong length
        raise ScoreFileError(str(err) if str(src) in str(err) else f"{src}: {err}") from err
