"""Top-L candidate lists (1:N searches) into the outcome cube.

A 1:N evaluation in the style of NIST FRTE reports, per search, the top
``L`` candidates a system returned: rows of (search id, rank, candidate
subject id, score). No score matrix exists, so these lists go straight to
the outcome cube that :func:`bioxr.outcomes.outcomes` makes from a score
cube, over a ``search`` dimension, with the ranks known up to ``L``.

Semantics
---------
- **The candidates' scores decide the ranks.** The mate's rank follows
  ISO/IEC 19795-1 Annex F.2 (METHODS.md section 2) over the candidates in
  the list: ``x`` candidates score strictly better than the mate, ``y``
  score the same (the mate included), the rank is spread over
  ``x+1 .. x+y``. The ``rank`` column, when given, is only checked: a pair
  of candidates whose ranks contradict their scores is an error (a wrong
  ``score_kind`` is the usual cause).
- **Ranks are of subjects.** A candidate subject listed twice in one
  search keeps its best score; the extra rows are counted in
  ``attrs["n_duplicate_candidates"]``.
- **Who is a mated search.** Without an ``enrolled`` column every search is
  mated (closed set): its subject is in the gallery, and a mate missing
  from the list is a miss at every rank up to ``L``. With an ``enrolled``
  column (True/False per search), non-enrolled searches are the impostor
  searches of the open-set FPIR; their subject must not appear among their
  candidates.
- **A mate not in the list** is only known to rank beyond ``L``:
  ``mated_rank = mated_rank_min = mated_rank_max = L + 1`` and
  ``mate_in_list`` is False. It counts as not found at every rank
  ``r <= L``, and no statistic beyond rank ``L`` is computed.
- **An empty list** (nothing passed the system's threshold) is a search row
  whose ``candidate``, ``score`` and ``rank`` cells are empty. It is a
  search in which no candidate was returned: a miss for a mated search, no
  false positive for an impostor search. Counted in ``attrs["n_empty_lists"]``.
- **Ties at the cut cannot be resolved.** When the L-th candidate of a full
  list ties with candidates the system did not return, the list shows one
  tie-break of them: a mate tied at the cut may have a wider range in truth
  (``attrs["n_tied_at_cut"]`` counts mated searches whose mate ties with
  the last candidate of a full list), and a mate left out by the tie-break
  counts as not in the list. The rates are those of the lists returned.

Every other column that is constant within each search (a cofactor:
sensor, demographic group, ...) becomes a coordinate on ``search``; columns
varying within a search (per-candidate columns) are not kept and are named
in ``attrs["per_candidate_columns"]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .cube import SCORE_KINDS, ScoreCubeError

__all__ = ["from_candidates", "read_candidates", "SEARCH"]

SEARCH = "search"
_VARIABLES = ("mated_score", "nonmated_best", "mated_rank", "mated_rank_min", "mated_rank_max", "n_candidates",
              "mate_in_list")
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}
_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet"}


class _Source:
    """Where rows come from: names a row (or file line) and raises the right error."""

    def __init__(self, name=None, lines=None, error=ScoreCubeError, first_row=0):
        self.name, self.lines, self.error, self.first_row = name, lines, error, first_row

    def where(self, i: int) -> str:
        if self.lines is not None:
            return f"line {int(self.lines[i])}"
        return f"row {i + self.first_row}"

    def fail(self, message: str):
        raise self.error(f"{self.name}: {message}" if self.name else message)


def from_candidates(
    df,
    *,
    search: str = "search",
    rank: str | None = "rank",
    candidate: str = "candidate",
    score: str = "score",
    subject: str = "subject",
    enrolled: str | None = None,
    score_kind: str = "similarity",
    list_length: int | None = None,
) -> xr.Dataset:
    """The outcome cube of top-L candidate lists given as a table.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per (search, candidate); a search with an empty list is one
        row with empty ``candidate``, ``score`` and ``rank`` cells. Rows are
        named in errors by their position (``df.iloc``, from 0).
    search, rank, candidate, score, subject : str, keyword-only
        Column names: the search id, the candidate's rank (only checked
        against the scores; ``rank=None`` when there is no such column),
        the candidate's subject id, its score, and the search's true
        subject (constant within a search).
    enrolled : str, optional, keyword-only
        A True/False column (constant within a search) saying whether the
        search's subject is enrolled. Without it every search is mated
        (closed set).
    score_kind : {"similarity", "distance"}, keyword-only
    list_length : int, optional, keyword-only
        ``L``, the length of the lists the system was asked for; default
        the longest list seen. A longer list is an error.

    Returns
    -------
    xarray.Dataset
        Over ``search`` (labels in order of first appearance), with
        coordinates ``subject``, ``enrolled`` and the per-search cofactors:

        - ``mated_score``: the mate's score (NaN when not in the list or
          not enrolled);
        - ``nonmated_best``: the best score of another subject in the list
          (NaN when there is none);
        - ``mated_rank``, ``mated_rank_min``, ``mated_rank_max``: Annex F
          fractional rank of the mate and its range; ``L + 1`` when the mate
          is not in the list, NaN for a non-enrolled search;
        - ``n_candidates``: distinct candidate subjects in the list;
        - ``mate_in_list``: True when the mate is in the list.

        attrs: ``score_kind``, ``tie_rule``, ``rank_unit``, ``form``,
        ``candidate_list_length`` (``L``), ``n_searches``,
        ``n_mated_searches``, ``n_not_in_list``, ``n_nonenrolled_searches``,
        ``n_empty_lists``, ``n_duplicate_candidates``, ``n_tied_at_cut``,
        ``per_candidate_columns``.

    See Also
    --------
    read_candidates : the same from a CSV, TSV or Parquet file.
    bioxr.outcomes.outcomes : the outcome cube of a score cube.
    bioxr.identification.cmc_curve : the CMC up to rank ``L``.

    References
    ----------
    ISO/IEC 19795-1:2006 Annex F.2 (seeds/004); METHODS.md section 2;
    NIST FRTE 1:N reports (candidate lists, FNIR at rank and threshold).

    Examples
    --------
    >>> import pandas as pd, bioxr
    >>> from bioxr.candidates import from_candidates
    >>> df = pd.DataFrame({
    ...     "search": ["s1", "s1", "s1", "s2", "s2", "s2"],
    ...     "subject": ["a", "a", "a", "b", "b", "b"],
    ...     "rank": [1, 2, 3, 1, 2, 3],
    ...     "candidate": ["c", "a", "d", "c", "d", "e"],
    ...     "score": [0.9, 0.9, 0.4, 0.8, 0.7, 0.6]})
    >>> out = from_candidates(df)
    >>> out.mated_rank.values.tolist(), out.mate_in_list.values.tolist()
    ([1.5, 4.0], [True, False])
    >>> out.attrs["candidate_list_length"], out.attrs["n_not_in_list"]
    (3, 1)
    >>> bioxr.identification.cmc_curve(out).cmc.values.tolist()
    [0.25, 0.5, 0.5]
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"from_candidates expects a pandas DataFrame, got {type(df).__name__}; read a file with "
                        "bioxr.candidates.read_candidates.")
    return _outcome_cube(df.reset_index(drop=True), _Source(), text=False, search=search, rank=rank,
                         candidate=candidate, score=score, subject=subject, enrolled=enrolled,
                         score_kind=score_kind, list_length=list_length)


def read_candidates(
    path,
    *,
    search: str = "search",
    rank: str | None = "rank",
    candidate: str = "candidate",
    score: str = "score",
    subject: str = "subject",
    enrolled: str | None = None,
    score_kind: str = "similarity",
    list_length: int | None = None,
    format: str | None = None,
) -> xr.Dataset:
    """Read top-L candidate lists from a CSV, TSV or Parquet file into the outcome cube.

    CSV and TSV are parsed by pandas' C engine (labels stay as written,
    blank lines are skipped), Parquet by pyarrow. Errors raise
    :class:`bioxr.io.ScoreFileError` naming the file, the line (CSV/TSV,
    counted from 1 at the header) or row (Parquet, from 1) and the column.
    In text files ``enrolled`` cells read ``True``/``False`` (also
    ``1``/``0``, ``yes``/``no``). See :func:`from_candidates` for the
    columns, the semantics and the result; ``attrs["source"]`` holds the path.

    Parameters
    ----------
    path : str or path-like
    search, rank, candidate, score, subject, enrolled, score_kind, list_length : keyword-only
        As in :func:`from_candidates`.
    format : {"csv", "tsv", "parquet"}, optional, keyword-only
        Default from the suffix (``.csv``; ``.tsv``, ``.tab``; ``.parquet``, ``.pq``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "lists.csv")
    >>> _ = path.write_text("search,subject,enrolled,rank,candidate,score\\n"
    ...                     "q1,a,True,1,a,0.9\\nq1,a,True,2,b,0.3\\n"
    ...                     "q2,z,False,1,b,0.6\\nq2,z,False,2,a,0.2\\n")
    >>> out = read_candidates(path, enrolled="enrolled")
    >>> out.attrs["n_mated_searches"], out.attrs["n_nonenrolled_searches"]
    (1, 1)
    >>> read_candidates(path, score="similarity")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bioxr.io.ScoreFileError: ...lists.csv: the table has no column for score='similarity'; its columns are ...
    """
    from .io import ScoreFileError

    path = Path(path)
    fmt = format or _FORMATS.get(path.suffix.lower())
    if fmt not in ("csv", "tsv", "parquet"):
        raise ScoreFileError(f"{path}: cannot tell whether this is CSV, TSV or Parquet from its suffix; pass "
                             "format='csv', format='tsv' or format='parquet'.")
    if not path.is_file():
        raise ScoreFileError(f"{path}: no such file. Check the path (relative paths start at {Path.cwd()}).")
    if fmt == "parquet":
        try:
            frame = pd.read_parquet(path, engine="pyarrow")
        except (ValueError, OSError, ImportError) as err:
            raise ScoreFileError(f"{path}: cannot be read as Parquet ({type(err).__name__}: {err}).") from err
        source, text = _Source(path, error=ScoreFileError, first_row=1), False
    else:
        frame, lines = _read_text_table(path, "," if fmt == "csv" else "\t", ScoreFileError)
        source, text = _Source(path, lines=lines, error=ScoreFileError), True
    out = _outcome_cube(frame, source, text=text, search=search, rank=rank, candidate=candidate, score=score,
                        subject=subject, enrolled=enrolled, score_kind=score_kind, list_length=list_length)
    out.attrs["source"] = str(path)
    return out


def _read_text_table(path: Path, sep: str, error):
    """All cells as stripped text, blank lines dropped, and the file line of each row."""
    try:
        frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_filter=False,
                            skip_blank_lines=False, index_col=False, engine="c", encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise error(f"{path}: the file is empty; it holds no candidate lists.") from None
    except pd.errors.ParserError as err:
        raise error(f"{path}: is not valid {'CSV' if sep == ',' else 'TSV'} ({str(err).split('. ', 1)[-1]}).") from err
    except UnicodeDecodeError as err:
        raise error(f"{path}: is not UTF-8 text ({err.reason} at byte {err.start}); save it as UTF-8.") from err
    header = [str(c) for c in frame.columns]
    unnamed = [k for k, c in enumerate(header) if c.startswith("Unnamed: ") or not c.strip()]
    if unnamed:
        raise error(f"{path}: column {unnamed[0] + 1} of the header (line 1) has no name; name every column.")
    dup = [c for c in header if header.count(c) > 1 or c.rsplit(".", 1)[0] in header and c.rsplit(".", 1)[-1].isdigit()]
    if dup:
        raise error(f"{path}: the header (line 1) names a column twice ({dup[0]!r}); give each column one name.")
    cells = frame.to_numpy(dtype=object)
    # physical line of each record: the header is line 1, quoted fields may span lines
    breaks = np.zeros(len(frame), dtype=np.int64)
    if len(frame) and any("\n" in c for c in frame.columns):
        breaks += sum(c.count("\n") for c in frame.columns)
    has_break = np.vectorize(lambda c: "\n" in c, otypes=[bool])(cells) if cells.size else np.zeros(cells.shape, bool)
    if has_break.any():
        extra = np.vectorize(lambda c: c.count("\n"), otypes=[np.int64])(cells).sum(axis=1)
        breaks += np.concatenate([[0], np.cumsum(extra)[:-1]])
    lines = np.arange(len(frame), dtype=np.int64) + 2 + breaks
    stripped = frame.apply(lambda col: col.str.strip())
    keep = (stripped != "").any(axis=1).to_numpy()
    stripped = stripped[keep].reset_index(drop=True)
    if not len(stripped):
        raise error(f"{path}: the file has a header but no rows; it holds no candidate lists.")
    return stripped, lines[keep]


# ------------------------------------------------------------------ the core
def _outcome_cube(frame: pd.DataFrame, src: _Source, *, text: bool, search, rank, candidate, score, subject,
                  enrolled, score_kind, list_length) -> xr.Dataset:
    if score_kind not in SCORE_KINDS:
        src.fail(f"score_kind={score_kind!r}; it must be 'similarity' (higher is more alike) or 'distance'.")
    wanted = {"search": search, "rank": rank, "candidate": candidate, "score": score, "subject": subject,
              "enrolled": enrolled}
    absent = [f"{k}={v!r}" for k, v in wanted.items() if v is not None and v not in frame.columns]
    if absent:
        src.fail(f"the table has no column for {', '.join(absent)}; its columns are {list(map(str, frame.columns))}. "
                 "Name the right ones with search=, rank=, candidate=, score=, subject= (enrolled=).")
    named = [v for v in wanted.values() if v is not None]
    if len(set(named)) < len(named):
        src.fail(f"one column is named for two roles ({wanted}); each role needs its own column.")
    clash = [c for c in frame.columns if c in _VARIABLES]
    if clash:
        src.fail(f"column {clash[0]!r} has the name of an outcome-cube variable; rename it.")
    for reserved, role in ((SEARCH, "search"), ("subject", "subject"), ("enrolled", "enrolled")):
        if reserved in frame.columns and reserved not in named:
            src.fail(f"the table has a column {reserved!r} that is not used as {role}={reserved!r}; pass "
                     f"{role}={reserved!r} if it is one, or rename the column (it would clash with the "
                     f"{reserved!r} coordinate of the result).")
    if list_length is not None and (isinstance(list_length, bool) or not float(list_length).is_integer()
                                    or list_length < 1):
        src.fail(f"list_length={list_length!r}; it must be a whole number of candidates, at least 1.")
    if not len(frame):
        src.fail("the table has no rows; it holds no candidate lists.")
    search_lab = _labels(frame[search], search, "search id", src, text)
    subject_lab = _labels(frame[subject], subject, "subject", src, text)
    cand_raw = frame[candidate]
    cand_empty = _empty(cand_raw, text)
    scores = _numbers(frame[score], score, "score", src, text)
    sign = -1.0 if score_kind == "distance" else 1.0
    for i in np.flatnonzero(cand_empty & ~np.isnan(scores))[:1]:
        src.fail(f"{src.where(i)}: column {candidate!r} is empty but column {score!r} holds {frame[score].iloc[i]!r}; "
                 "a scored row needs its candidate. An empty list is one row with no candidate, score or rank.")
    for i in np.flatnonzero(~cand_empty & np.isnan(scores))[:1]:
        src.fail(f"{src.where(i)}: column {score!r} is empty for candidate {cand_raw.iloc[i]!r}; every candidate "
                 "needs its score (an empty list is one row with no candidate, score or rank).")
    codes, search_ids = pd.factorize(pd.Series(search_lab, dtype=object), sort=False)
    n_searches = len(search_ids)
    first = np.unique(codes, return_index=True)[1]
    subj_of = _per_search(subject_lab, codes, first, subject, "subject", src)
    if enrolled is not None:
        enr = _booleans(frame[enrolled], enrolled, src)
        enr_of = _per_search(enr, codes, first, enrolled, "enrolment marker", src).astype(bool)
    else:
        enr_of = np.ones(n_searches, dtype=bool)
    has = ~cand_empty
    mixed = np.bincount(codes[cand_empty], minlength=n_searches) * np.bincount(codes[has], minlength=n_searches)
    if mixed.any():
        s = int(np.argmax(mixed > 0))
        i = int(np.flatnonzero(cand_empty & (codes == s))[0])
        src.fail(f"{src.where(i)}: search {search_ids[s]!r} has a row with no candidate besides rows with "
                 "candidates; a row without a candidate stands for an empty list. Delete it or fill it in.")
    entries = np.bincount(codes[has], minlength=n_searches)
    if list_length is None:
        if not entries.any():
            src.fail("no search returned a candidate; give the list length with list_length=.")
        L = int(entries.max())
    else:
        L = int(list_length)
        if (entries > L).any():
            s = int(np.argmax(entries > L))
            src.fail(f"search {search_ids[s]!r} lists {int(entries[s])} candidates, more than list_length={L}. "
                     "Give the length the system was asked for, or leave list_length=None.")
    rows = np.flatnonzero(has)
    code, o = codes[rows], sign * scores[rows]
    cand = np.asarray(_labels(cand_raw.iloc[rows], candidate, "candidate", src, text, positions=rows), dtype=object)
    if rank is not None:
        ranks = _numbers(frame[rank], rank, "rank", src, text)
        for i in np.flatnonzero(has & np.isnan(ranks))[:1]:
            src.fail(f"{src.where(i)}: column {rank!r} is empty for candidate {cand_raw.iloc[i]!r}; give every "
                     "candidate its rank, or pass rank=None to go by the scores alone.")
        _check_rank_order(ranks[rows], o, code, rows, search_ids, frame[score], rank, src)
    # one row per (search, candidate subject): its best score
    cand_codes, cand_ids = pd.factorize(pd.Series(cand, dtype=object), sort=False)
    order = np.lexsort((-o, cand_codes, code))
    keep = np.r_[True, (np.diff(code[order]) != 0) | (np.diff(cand_codes[order]) != 0)] if order.size else order
    n_duplicates = int(order.size - int(np.count_nonzero(keep)))
    order = order[keep]
    code, o, cand_codes = code[order], o[order], cand_codes[order]
    subj_code = pd.Index(cand_ids).get_indexer(pd.Series(subj_of, dtype=object))
    if len(cand_ids) and not np.isin(subj_code, np.arange(len(cand_ids))).any():
        _check_label_types(subj_of, cand_ids, enr_of, src)
    is_mate = cand_codes == subj_code[code]
    listed_not_enrolled = is_mate & ~enr_of[code]
    if listed_not_enrolled.any():
        s = int(code[np.argmax(listed_not_enrolled)])
        src.fail(f"search {search_ids[s]!r} is marked not enrolled (column {enrolled!r}) but its subject "
                 f"{subj_of[s]!r} is among its candidates; fix the marker or the labels.")
    n_cand = np.bincount(code, minlength=n_searches)
    mate_o = np.full(n_searches, np.nan)
    mate_o[code[is_mate]] = o[is_mate]
    in_list = ~np.isnan(mate_o)
    x = np.bincount(code, weights=o > mate_o[code], minlength=n_searches)
    y = np.bincount(code, weights=o == mate_o[code], minlength=n_searches)
    nonmate = np.full(n_searches, -np.inf)
    np.maximum.at(nonmate, code[~is_mate], o[~is_mate])
    nonmate[np.isneginf(nonmate)] = np.nan
    last = np.full(n_searches, np.inf)
    np.minimum.at(last, code, o)
    tied_at_cut = in_list & (entries == L) & (mate_o == last)
    rank_min = np.where(in_list, x + 1, np.where(enr_of, L + 1, np.nan))
    rank_max = np.where(in_list, x + y, np.where(enr_of, L + 1, np.nan))
    data = {
        "mated_score": sign * mate_o,
        "nonmated_best": sign * nonmate,
        "mated_rank": (rank_min + rank_max) / 2,
        "mated_rank_min": rank_min,
        "mated_rank_max": rank_max,
        "n_candidates": n_cand.astype(np.int64),
        "mate_in_list": in_list,
    }
    coords = {SEARCH: _native(search_ids, text), "subject": (SEARCH, _native(subj_of, text)),
              "enrolled": (SEARCH, enr_of)}
    per_candidate = []
    for col in frame.columns:
        if col in named:
            continue
        values = _typed(frame[col].to_numpy(), text)
        const = _constant_within(values, codes, first)
        if const is None:
            per_candidate.append(str(col))
        else:
            coords[str(col)] = (SEARCH, const)
    ds = xr.Dataset({k: (SEARCH, v) for k, v in data.items()}, coords=coords)
    for name, meaning in (
        ("mated_score", "score of the mate in the candidate list"),
        ("nonmated_best", "best score of another subject in the candidate list"),
        ("mated_rank", f"fractional rank of the mate (Annex F ties); {L + 1} = not in the top {L}"),
        ("mated_rank_min", "best rank the mate could take among tied candidates"),
        ("mated_rank_max", "worst rank the mate could take among tied candidates"),
        ("n_candidates", "distinct candidate subjects in the list"),
        ("mate_in_list", "the mate is in the candidate list"),
    ):
        ds[name].attrs["long_name"] = meaning
    ds.attrs = {
        "score_kind": score_kind,
        "tie_rule": ("ISO/IEC 19795-1 Annex F.2 over the candidates in the list: x score better than the mate, y "
                     "(mate included) the same; the rank is uniform over x+1..x+y. Ties at the cut (the L-th "
                     "candidate tied with candidates not returned) cannot be resolved"),
        "rank_unit": "candidate subjects in the list (best score over each subject's rows)",
        "form": "candidate lists",
        "candidate_list_length": L,
        "n_searches": int(n_searches),
        "n_mated_searches": int(enr_of.sum()),
        "n_not_in_list": int((enr_of & ~in_list).sum()),
        "n_nonenrolled_searches": int((~enr_of).sum()),
        "n_empty_lists": int((entries == 0).sum()),
        "n_duplicate_candidates": n_duplicates,
        "n_tied_at_cut": int(tied_at_cut.sum()),
        "per_candidate_columns": per_candidate,
        "enrolment": ("from the enrolled column" if enrolled is not None
                      else "closed set: every search's subject is enrolled (no enrolled column given)"),
    }
    return ds


# ------------------------------------------------------------- column parsing
def _empty(values: pd.Series, text: bool) -> np.ndarray:
    if text:
        return (values.to_numpy(dtype=object) == "")
    na = values.isna().to_numpy()
    if values.dtype.kind == "O":
        na = na | values.map(lambda v: isinstance(v, str) and not v.strip()).to_numpy(dtype=bool)
    return na


def _labels(values: pd.Series, column, what, src: _Source, text, positions=None) -> np.ndarray:
    empty = _empty(values, text)
    if empty.any():
        i = int(np.argmax(empty))
        i = i if positions is None else int(positions[i])
        src.fail(f"{src.where(i)}: column {column!r} is empty; every row needs its {what}.")
    arr = values.to_numpy()
    if arr.dtype.kind == "O" and not text:
        arr = np.array([v.strip() if isinstance(v, str) else v for v in arr], dtype=object)
    return arr


def _numbers(values: pd.Series, column, what, src: _Source, text) -> np.ndarray:
    if values.dtype.kind in "iuf" and values.dtype != bool:
        out = values.to_numpy(dtype=float)
    else:
        empty = _empty(values, text)
        parsed = pd.to_numeric(values.where(~empty), errors="coerce").to_numpy(dtype=float)
        bad = np.isnan(parsed) & ~empty
        if text:
            bad &= values.str.lower().to_numpy(dtype=object) != "nan"
        if bad.any():
            i = int(np.argmax(bad))
            src.fail(f"{src.where(i)}, column {column!r}: {values.iloc[i]!r} is not a number; each {what} must be "
                     f"a number ({int(bad.sum())} cell(s) are not).")
        out = parsed
    inf = np.isinf(out)
    if inf.any():
        i = int(np.argmax(inf))
        src.fail(f"{src.where(i)}, column {column!r}: the {what} is infinite; it must be a finite number.")
    return out


def _booleans(values: pd.Series, column, src: _Source) -> np.ndarray:
    if values.dtype == bool:
        return values.to_numpy()
    def parse(v):
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1):
            return bool(v)
        if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
            return v.strip().lower() in _TRUE
        return None
    parsed = [parse(v) for v in values]
    for i, p in enumerate(parsed):
        if p is None:
            src.fail(f"{src.where(i)}, column {column!r}: {values.iloc[i]!r} is not True or False; say whether "
                     "the search's subject is enrolled (True/False, 1/0 or yes/no).")
    return np.array(parsed, dtype=bool)


def _per_search(values: np.ndarray, codes: np.ndarray, first: np.ndarray, column, what, src: _Source) -> np.ndarray:
    const = _constant_within(values, codes, first)
    if const is None:
        expected = values[first][codes]
        j = int(np.argmax(pd.Series(values, dtype=object).ne(pd.Series(expected, dtype=object)).to_numpy()))
        src.fail(f"{src.where(j)}: column {column!r} holds {values[j]!r} but {src.where(int(first[codes[j]]))} of "
                 f"the same search holds {expected[j]!r}; a search has one {what}.")
    return const


def _constant_within(values: np.ndarray, codes: np.ndarray, first: np.ndarray):
    expected = values[first][codes]
    a, b = pd.Series(values, dtype=object), pd.Series(expected, dtype=object)
    same = a.eq(b).to_numpy() | (a.isna() & b.isna()).to_numpy()
    return values[first] if same.all() else None


def _native(values, text: bool) -> np.ndarray:
    """Labels as text (files) or in their own dtype (a DataFrame's ints stay ints)."""
    if text:
        return np.asarray(values, dtype=str)
    return pd.Series(np.asarray(values, dtype=object), dtype=object).infer_objects().to_numpy()


def _typed(values: np.ndarray, text: bool) -> np.ndarray:
    """A text cofactor as integers or floats when every cell is one, else as text."""
    if not text:
        return values
    values = values.astype(str)
    for dtype in (np.int64, np.float64):
        try:
            return values.astype(dtype)
        except (ValueError, OverflowError):
            pass
    return values


def _check_rank_order(ranks, o, code, rows, search_ids, score_col, rank_col, src: _Source) -> None:
    """Error when a candidate with a better (lower) rank has a strictly worse score."""
    order = np.lexsort((-o, ranks, code))
    c, r, s = code[order], ranks[order], o[order]
    bad = (c[1:] == c[:-1]) & (r[1:] > r[:-1]) & (s[1:] > s[:-1])
    if not bad.any():
        return
    k = int(np.argmax(bad))
    i, j = int(rows[order[k]]), int(rows[order[k + 1]])
    n_bad = len(np.unique(c[1:][bad]))
    src.fail(f"the rank column {rank_col!r} contradicts the scores in {n_bad} search(es): in search "
             f"{search_ids[c[k]]!r}, {src.where(i)} has rank {r[k]:g} and score {score_col.iloc[i]!r} but "
             f"{src.where(j)} has rank {r[k + 1]:g} and a better score {score_col.iloc[j]!r}. Ranks follow the "
             "scores here: if lower scores are better pass score_kind='distance'; to go by the scores alone pass "
             "rank=None.")


def _check_label_types(subj_of, cand_ids, enr_of, src: _Source) -> None:
    """No search finds its own subject among its candidates: an error when the label types differ."""
    kinds = {type(v).__name__ for v in subj_of[:100]}, {type(v).__name__ for v in list(cand_ids)[:100]}
    if enr_of.any() and kinds[0].isdisjoint(kinds[1]):
        src.fail(f"no search finds its own subject among its candidates, and the subject labels are "
                 f"{sorted(kinds[0])} while the candidate labels are {sorted(kinds[1])}: give both columns the "
                 "same type (e.g. df[col] = df[col].astype(str)).")
