"""The comparison list: the sparse form of a score cube, and the doors into it.

A comparison list is a :class:`xarray.Dataset` over one ``comparison``
dimension: the cells of a score cube that were compared, one row each. It
is what trial lists (speaker verification, IJB-B/C 1:1 template pairs, a
lab's pair list) look like, and it costs memory in proportion to the
comparisons, not to probes times references.

- ``score`` (data variable): the comparison score; NaN only where the
  comparison failed (see *Failures* below);
- ``subject``, ``reference_subject`` (coordinates): who the probe and the
  reference belong to; a comparison is mated when they are equal;
- ``probe_id``, ``reference_id`` (optional coordinates): sample ids. A
  comparison whose two ids are equal is a self comparison (the same sample
  on both sides) and is never counted;
- cofactors (optional coordinates): sensor, session, group... Those named
  in ``attrs["probe_dims"]`` play the part of a cube's probe dimensions:
  ``dim=`` reduces over them and keeps the others, exactly as on a cube;
- failures (optional boolean coordinates): ``failed_enrolment`` (the
  reference template could not be made) and ``failed_acquisition`` (the
  probe could not be captured or templated);
- ``attrs["score_kind"]``: ``"similarity"`` or ``"distance"``.

Two arrays of mated and non-mated scores (:func:`from_scores`) make a list
without subjects: a boolean ``mated`` coordinate instead of labels. Point
estimates and binomial intervals work on it; anything that resamples or
groups subjects refuses it, saying why.

Every statistic in bioxr takes a score cube or a comparison list and gives
identical results on the same comparisons.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from .cube import REFERENCE, SCORE_KINDS, ScoreCubeError, probe_dims, validate_score_cube

__all__ = [
    "COMPARISON",
    "comparison_list",
    "from_scores",
    "from_frame",
    "to_comparisons",
    "to_cube",
    "is_comparison_list",
    "validate_comparison_list",
    "has_subjects",
    "normalise_labels",
    "check_score_kind",
]

COMPARISON = "comparison"
#: coordinates with a fixed meaning on a comparison list (never cofactors)
RESERVED = ("subject", "reference_subject", "probe_id", "reference_id", "mated", "failed_enrolment",
            "failed_acquisition")
FAILURE_COORDS = ("failed_enrolment", "failed_acquisition")


def is_comparison_list(obj) -> bool:
    """True for a Dataset over a ``comparison`` dimension holding ``score``.

    Examples
    --------
    >>> import bioxr
    >>> is_comparison_list(bioxr.from_scores([0.9, 0.8], [0.1, 0.2, 0.3]))
    True
    >>> is_comparison_list(bioxr.simulate.gaussian(n_subjects=3, seed=0))
    False
    """
    return isinstance(obj, xr.Dataset) and COMPARISON in obj.dims and "score" in obj.data_vars


def has_subjects(obj) -> bool:
    """True when the comparisons carry subject labels on both sides.

    Examples
    --------
    >>> import bioxr
    >>> has_subjects(bioxr.from_scores([0.9], [0.1]))
    False
    """
    return "subject" in obj.variables and "reference_subject" in obj.variables


def canonical(ds: xr.Dataset) -> xr.Dataset:
    """The list with every variable but ``score`` as a coordinate (labels may arrive as data variables)."""
    extra = [name for name in ds.data_vars if name != "score" and ds[name].dims == (COMPARISON,)]
    return ds.set_coords(extra) if extra else ds


def normalise_labels(values) -> tuple[np.ndarray, int]:
    """Labels in Unicode NFC with zero-width characters removed, and how many changed.

    Two labels that differ only by Unicode normalisation (a composed "é"
    against "e" + a combining accent) or by an invisible zero-width
    character are one subject. Non-text labels are returned unchanged.

    Examples
    --------
    >>> labels, n = normalise_labels(["Jos\\u00e9", "Jose\\u0301", "a\\u200bb"])
    >>> labels.tolist(), n
    (['José', 'José', 'ab'], 2)
    """
    arr = np.asarray(values)
    if arr.dtype.kind not in "UO" or arr.size == 0:
        return arr, 0
    inverse, uniques = pd.factorize(pd.Series(arr.ravel(), dtype=object), use_na_sentinel=False)
    fixed = np.array([_normalise(u) for u in uniques], dtype=object)
    changed = np.array([f is not u and f != u for f, u in zip(fixed, uniques)], dtype=bool)
    n_changed = int(changed[inverse].sum()) if changed.any() else 0
    if not n_changed:
        return arr, 0
    out = fixed[inverse].reshape(arr.shape)
    if arr.dtype.kind == "U":
        out = out.astype(str)
    return out, n_changed


_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))


def _normalise(value):
    if not isinstance(value, str):
        return value
    return unicodedata.normalize("NFC", value).translate(_ZERO_WIDTH)


def _labels(values, name: str, n: int) -> np.ndarray:
    if isinstance(values, (str, bytes)) or np.ndim(values) == 0:
        raise ScoreCubeError(f"{name} must give one label per comparison ({n}); got a single value {values!r}.")
    arr = values if isinstance(values, np.ndarray) else np.asarray(list(values) if not hasattr(values, "__array__") else values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ScoreCubeError(f"{name} has shape {arr.shape}; it must give one label per comparison ({n}).")
    if arr.dtype.kind == "O":
        missing = pd.isna(pd.Series(arr)).to_numpy()
        if missing.any():
            first = int(np.argmax(missing))
            raise ScoreCubeError(f"{int(missing.sum())} comparison(s) have no {name} label, first at comparison "
                                 f"{first}. Every comparison needs both subjects to be known.")
    return arr


def comparison_list(
    scores,
    *,
    subject,
    reference_subject,
    probe_id=None,
    reference_id=None,
    score_kind: str = "similarity",
    coords: Mapping[Hashable, object] | None = None,
    probe_dims: Sequence[Hashable] | None = None,
    failed_enrolment=None,
    failed_acquisition=None,
    source: str | None = None,
) -> xr.Dataset:
    """Build a validated comparison list from one entry per comparison.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Comparison scores. NaN is allowed only where a failure is flagged.
    subject, reference_subject : array_like, shape (n,)
        Subject of the probe and of the reference of each comparison.
    probe_id, reference_id : array_like, shape (n,), optional
        Sample ids. Give both only when they are ids of the same kind: a
        comparison whose two ids are equal is then a self comparison and is
        never counted.
    score_kind : {"similarity", "distance"}, keyword-only
    coords : mapping, optional
        Cofactors, one value per comparison each (``{"sensor": [...]}``).
    probe_dims : sequence of str, optional
        The cofactors that act as the probe dimensions of a cube for
        ``dim=`` (default: every cofactor in ``coords``). ``dim=None``
        pools over all of them; ``dim="session"`` keeps the others.
    failed_enrolment, failed_acquisition : array_like of bool, shape (n,), optional
        True where the comparison's reference failed to enrol, or its probe
        failed to be acquired. Such comparisons have no score (NaN); how
        they count is each statistic's ``failure_policy``.
    source : str, optional
        Where the comparisons came from (kept in attrs, named in errors).

    Returns
    -------
    xarray.Dataset
        Over ``comparison``: ``score``; coordinates ``subject``,
        ``reference_subject`` and the optional ones; attrs ``score_kind``,
        ``probe_dims``, ``form``, and ``n_labels_normalised`` when labels
        were NFC-normalised.

    Examples
    --------
    >>> import bioxr
    >>> trials = bioxr.comparison_list(
    ...     [0.91, 0.15, 0.78, 0.33, 0.62, 0.05],
    ...     subject=["ann", "ann", "bob", "bob", "cy", "cy"],
    ...     reference_subject=["ann", "bob", "bob", "cy", "cy", "ann"])
    >>> trials.sizes["comparison"], int((trials.subject == trials.reference_subject).sum())
    (6, 3)
    >>> float(trials.bio.eer().eer)
    0.0
    """
    score = np.asarray(scores)
    if score.ndim != 1:
        raise ScoreCubeError(f"scores has shape {score.shape}; a comparison list takes one score per comparison "
                             "(1-D). For a probe x reference matrix use bioxr.score_cube.")
    n = score.shape[0]
    if not np.issubdtype(score.dtype, np.number) or np.issubdtype(score.dtype, np.complexfloating):
        raise ScoreCubeError(f"scores must be real numbers; got dtype {score.dtype}. Convert them with "
                             "np.asarray(scores, dtype=float) after checking for text in the data.")
    if not np.issubdtype(score.dtype, np.floating):
        score = score.astype(np.float64)
    subject, n_a = normalise_labels(_labels(subject, "subject", n))
    reference_subject, n_b = normalise_labels(_labels(reference_subject, "reference_subject", n))
    all_coords: dict = {"subject": (COMPARISON, subject), "reference_subject": (COMPARISON, reference_subject)}
    n_changed = n_a + n_b
    for name, ids in (("probe_id", probe_id), ("reference_id", reference_id)):
        if ids is not None:
            ids, k = normalise_labels(_labels(ids, name, n))
            n_changed += k
            all_coords[name] = (COMPARISON, ids)
    for name, flags in (("failed_enrolment", failed_enrolment), ("failed_acquisition", failed_acquisition)):
        if flags is not None:
            flags = np.asarray(flags)
            if flags.shape != (n,) or flags.dtype != bool:
                raise ScoreCubeError(f"{name} must be one boolean per comparison ({n}); got dtype {flags.dtype}, "
                                     f"shape {flags.shape}.")
            all_coords[name] = (COMPARISON, flags)
    cofactors = []
    for name, values in dict(coords or {}).items():
        if name in RESERVED or name == "score":
            raise ScoreCubeError(f"coords names {name!r}, which a comparison list uses itself; pass it as its own "
                                 "argument or rename the cofactor.")
        values = np.asarray(values)
        if values.shape != (n,):
            raise ScoreCubeError(f"cofactor {name!r} has shape {values.shape}; it needs one value per comparison ({n}).")
        all_coords[name] = (COMPARISON, values)
        cofactors.append(name)
    dims_ = list(cofactors if probe_dims is None else probe_dims)
    unknown = [d for d in dims_ if d not in all_coords or d in ("reference_subject", "reference_id")]
    if unknown:
        raise ScoreCubeError(f"probe_dims names {unknown}, which are not probe-side coordinates of this list "
                             f"(its coordinates are {sorted(map(str, all_coords))}).")
    attrs = {"score_kind": score_kind, "form": "comparison list", "probe_dims": dims_}
    if source is not None:
        attrs["source"] = str(source)
    if n_changed:
        attrs["n_labels_normalised"] = n_changed
    # labels are validated above: skip xarray's per-element conversion of object arrays (seconds per 1e7 labels)
    variables = {k: _variable(v[1]) for k, v in all_coords.items()}
    ds = xr.Dataset({"score": _variable(score)}, coords=variables, attrs=attrs)
    return validate_comparison_list(ds)


def _variable(values: np.ndarray) -> xr.Variable:
    values = np.asarray(values)
    if values.dtype.kind == "O" and values.size and not isinstance(values.flat[0], str):
        return xr.Variable(COMPARISON, values)  # mixed objects: let xarray convert (dates, ...)
    return xr.Variable(COMPARISON, values, fastpath=True)


def from_scores(mated, nonmated, *, score_kind: str = "similarity") -> xr.Dataset:
    """A comparison list from two arrays: mated and non-mated scores.

    There are no subjects: the list says so (``attrs["subjects"] =
    "unknown"``). Error rates, curves, the EER and operating points work;
    binomial intervals (:func:`bioxr.intervals.rates_interval`) treat each
    comparison as independent. The subject bootstrap, the intra-class
    correlation and identification refuse it with an error that explains
    how to supply subject labels, because an interval that ignores who
    gave the scores is too narrow.

    Parameters
    ----------
    mated, nonmated : array_like, 1-D
        Scores of mated (genuine) and non-mated (impostor) comparisons.
    score_kind : {"similarity", "distance"}, keyword-only

    Returns
    -------
    xarray.Dataset
        A comparison list with a boolean ``mated`` coordinate.

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> rng = np.random.default_rng(0)
    >>> trials = bioxr.from_scores(rng.normal(2, 1, 500), rng.normal(0, 1, 5000))
    >>> trials.attrs["subjects"]
    'unknown'
    >>> round(float(trials.bio.eer(method="interpolated").eer), 3)
    0.162
    """
    m = np.asarray(mated, dtype=float).ravel()
    x = np.asarray(nonmated, dtype=float).ravel()
    if m.size == 0 or x.size == 0:
        raise ScoreCubeError(f"from_scores needs mated and non-mated scores; got {m.size} mated and {x.size} "
                             "non-mated.")
    for name, a in (("mated", m), ("nonmated", x)):
        if not np.isfinite(a).all():
            bad = int((~np.isfinite(a)).sum())
            raise ScoreCubeError(f"{bad} {name} score(s) are NaN or infinite; two arrays of scores hold only "
                                 "comparisons that were made. Drop them (and count them) first.")
    score = np.concatenate([m, x])
    flag = np.zeros(score.size, dtype=bool)
    flag[: m.size] = True
    ds = xr.Dataset(
        {"score": (COMPARISON, score)},
        coords={"mated": (COMPARISON, flag)},
        attrs={"score_kind": score_kind, "form": "comparison list", "probe_dims": [],
               "subjects": "unknown"},
    )
    return validate_comparison_list(ds)


def from_frame(
    df,
    *,
    score: str = "score",
    subject: str = "subject",
    reference_subject: str = "reference_subject",
    probe_id: str | None = None,
    reference_id: str | None = None,
    cofactors: Sequence[str] | None = None,
    score_kind: str = "similarity",
    failed_enrolment: str | None = None,
    failed_acquisition: str | None = None,
) -> xr.Dataset:
    """A comparison list from a table with one row per comparison.

    Parameters
    ----------
    df : pandas.DataFrame, or any table with ``__dataframe__`` or an Arrow table
    score, subject, reference_subject : str, keyword-only
        Column names.
    probe_id, reference_id : str, optional
        Columns of sample ids (see :func:`comparison_list` for their meaning).
    cofactors : sequence of str, optional
        Columns kept as cofactor coordinates (they act as probe dims for
        ``dim=``); default none.
    score_kind : {"similarity", "distance"}
    failed_enrolment, failed_acquisition : str, optional
        Boolean columns marking failures.

    Examples
    --------
    >>> import pandas as pd, bioxr
    >>> df = pd.DataFrame({"score": [0.9, 0.2, 0.8, 0.3], "who": ["a", "a", "b", "b"],
    ...                    "claimed": ["a", "b", "b", "a"], "sensor": ["x", "x", "y", "y"]})
    >>> trials = bioxr.from_frame(df, subject="who", reference_subject="claimed", cofactors=["sensor"])
    >>> trials.bio.eer(dim=()).eer.dims
    ('sensor',)
    """
    frame = _as_pandas(df)
    wanted = {"score": score, "subject": subject, "reference_subject": reference_subject, "probe_id": probe_id,
              "reference_id": reference_id, "failed_enrolment": failed_enrolment,
              "failed_acquisition": failed_acquisition}
    cofactors = list(cofactors or [])
    absent = [f"{k}={v!r}" for k, v in wanted.items() if v is not None and v not in frame.columns]
    absent += [f"cofactor {c!r}" for c in cofactors if c not in frame.columns]
    if absent:
        raise ScoreCubeError(f"the table has no column for {', '.join(absent)}; its columns are "
                             f"{list(map(str, frame.columns))}. Name the right ones with score=, subject=, "
                             "reference_subject= (probe_id=, cofactors=, ...).")
    col = lambda name: None if name is None else frame[name].to_numpy()  # noqa: E731
    scores = pd.to_numeric(frame[score], errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(scores) & frame[score].notna().to_numpy()
    if bad.any():
        j = int(np.argmax(bad))
        raise ScoreCubeError(f"column {score!r} holds {int(bad.sum())} value(s) that are not numbers, first "
                             f"{frame[score].iloc[j]!r} at row {j}. Fix or drop those rows.")
    flags = {}
    for name in ("failed_enrolment", "failed_acquisition"):
        if wanted[name] is not None:
            flags[name] = frame[wanted[name]].fillna(False).to_numpy(dtype=bool)
    return comparison_list(
        scores, subject=col(subject), reference_subject=col(reference_subject), probe_id=col(probe_id),
        reference_id=col(reference_id), score_kind=score_kind, coords={c: col(c) for c in cofactors},
        **flags,
    )


def _as_pandas(df) -> pd.DataFrame:
    if isinstance(df, pd.DataFrame):
        return df
    if hasattr(df, "to_pandas"):  # pyarrow.Table, polars
        return df.to_pandas()
    if hasattr(df, "__dataframe__"):
        return pd.api.interchange.from_dataframe(df)
    raise TypeError(f"expected a pandas DataFrame (or an Arrow/interchange table), got {type(df).__name__}.")


def validate_comparison_list(ds, *, require_mated: bool = True, require_nonmated: bool = True) -> xr.Dataset:
    """Check a comparison list and return it unchanged, or raise a clear error.

    Checks: one ``comparison`` dimension; a real ``score``; a known
    ``score_kind``; subject labels on both sides (or a boolean ``mated``);
    no infinite score; NaN only where a failure is flagged; mated and
    non-mated comparisons present (each can be waived).

    Examples
    --------
    >>> import xarray as xr
    >>> validate_comparison_list(xr.Dataset({"score": ("comparison", [0.5])}))
    Traceback (most recent call last):
    ...
    bioxr.cube.ScoreCubeError: the comparison list has no 'subject' and 'reference_subject' coordinates (nor a boolean 'mated'): label each comparison, e.g. bioxr.comparison_list(scores, subject=..., reference_subject=...).
    """
    if not is_comparison_list(ds):
        raise ScoreCubeError("expected a comparison list: a Dataset over a 'comparison' dimension with a 'score' "
                             "variable (see bioxr.comparison_list).")
    where = f" (from {ds.attrs['source']})" if "source" in ds.attrs else ""
    if set(ds["score"].dims) != {COMPARISON}:
        raise ScoreCubeError(f"the comparison list{where} has 'score' over {ds['score'].dims}; it must lie on "
                             "'comparison' alone.")
    kind = ds.attrs.get("score_kind", "similarity")
    if kind not in SCORE_KINDS:
        raise ScoreCubeError(f"attrs['score_kind'] is {kind!r}; it must be 'similarity' or 'distance'.")
    if not has_subjects(ds) and "mated" not in ds.variables:
        raise ScoreCubeError("the comparison list has no 'subject' and 'reference_subject' coordinates (nor a "
                             "boolean 'mated'): label each comparison, e.g. bioxr.comparison_list(scores, "
                             "subject=..., reference_subject=...).")
    score = ds["score"].data
    if hasattr(score, "compute"):  # lazy: checked in the passes that read it
        return ds
    score = np.asarray(score)
    if not np.issubdtype(score.dtype, np.floating):
        raise ScoreCubeError(f"scores{where} must be floating point; got {score.dtype}.")
    if not np.isfinite(np.add.reduce(score)):
        inf = np.isinf(score)
        if inf.any():
            raise ScoreCubeError(f"{int(inf.sum())} score(s){where} are infinite, first at comparison "
                                 f"{int(np.argmax(inf))}. Scores must be finite numbers.")
        nan = np.isnan(score)
        failed = np.zeros(score.size, dtype=bool)
        for name in FAILURE_COORDS:
            if name in ds.variables:
                failed |= np.asarray(ds[name].values, dtype=bool)
        unexplained = nan & ~failed
        if unexplained.any():
            raise ScoreCubeError(
                f"{int(unexplained.sum())} comparison(s){where} have no score (NaN), first at comparison "
                f"{int(np.argmax(unexplained))}, and no failure flag. A comparison list holds comparisons that "
                "were made: drop the ones that were not (and count them), or flag failures with "
                "failed_enrolment= / failed_acquisition=.")
    mated = mated_flags(ds)
    if require_mated and not mated.any():
        raise ScoreCubeError(f"the comparison list{where} holds no mated comparison (no subject equals its "
                             "reference_subject); check that both sides use the same ids.")
    if require_nonmated and mated.all():
        raise ScoreCubeError(f"the comparison list{where} holds no non-mated comparison; FMR needs comparisons "
                             "of different subjects.")
    return ds


def mated_flags(ds: xr.Dataset) -> np.ndarray:
    """Boolean array: True for mated comparisons (same subject, or the ``mated`` flag)."""
    if has_subjects(ds):
        return np.asarray(ds["subject"].values == ds["reference_subject"].values, dtype=bool)
    return np.asarray(ds["mated"].values, dtype=bool)


def self_flags(ds: xr.Dataset) -> np.ndarray | None:
    """True for self comparisons (equal ``probe_id`` and ``reference_id``), or None without both ids."""
    if "probe_id" in ds.variables and "reference_id" in ds.variables:
        return np.asarray(ds["probe_id"].values == ds["reference_id"].values, dtype=bool)
    return None


def to_comparisons(cube: xr.DataArray) -> xr.Dataset:
    """The compared cells of a score cube as a comparison list.

    NaN cells are left out, except in rows and columns flagged as failures
    (``failed_acquisition`` on the probe dims, ``failed_enrolment`` on
    ``reference``), which stay with their flags. Every probe dimension
    becomes a coordinate (its labels, or positions where it has no index)
    and is recorded in ``attrs["probe_dims"]``, so ``dim=`` means the same
    on the list as on the cube; every other coordinate is carried along.
    Self comparisons (equal ``probe_id`` and ``reference_id``) stay, with
    their ids, and are not counted, as on the cube.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.photohead(n_subjects=4, n_collections=3, seed=0)
    >>> trials = bioxr.to_comparisons(cube)
    >>> trials.attrs["probe_dims"]
    ['subject', 'image', 'collection']
    >>> bool(trials.bio.eer(dim=("subject", "image")).eer.equals(cube.bio.eer(dim=("subject", "image")).eer))
    True
    """
    validate_score_cube(cube, require_mated=False, require_nonmated=False)
    pdims = probe_dims(cube)
    cube = cube.transpose(*pdims, REFERENCE)
    values = np.asarray(cube.values)
    keep = ~np.isnan(values)
    shape = values.shape
    fe = np.asarray(cube["failed_enrolment"].values, dtype=bool) if "failed_enrolment" in cube.coords else None
    fa = None
    if "failed_acquisition" in cube.coords:
        fa = np.asarray(cube["failed_acquisition"].broadcast_like(cube.isel({REFERENCE: 0}, drop=True))
                        .transpose(*pdims).values, dtype=bool)
    if fe is not None:
        keep |= fe
    if fa is not None:
        keep |= fa[..., None]
    flat = np.flatnonzero(keep.ravel())
    idx = np.unravel_index(flat, shape)
    coords: dict = {}
    template = cube.isel({REFERENCE: 0}, drop=True)
    for axis, d in enumerate(pdims):
        labels = cube.indexes[d].to_numpy() if d in cube.indexes else np.arange(shape[axis])
        coords[d] = (COMPARISON, labels[idx[axis]])
    n_ref = shape[-1]
    for name, coord in cube.coords.items():
        if name in coords or not coord.dims:
            continue
        if REFERENCE in coord.dims:
            if coord.dims != (REFERENCE,):
                continue
            v = np.asarray(coord.values)
            target = name if name != REFERENCE else "reference"
            coords[target] = (COMPARISON, v[idx[-1]])
        else:
            v = np.asarray(coord.broadcast_like(template).transpose(*pdims).values).reshape(-1)
            coords[name] = (COMPARISON, v[flat // n_ref])
    if REFERENCE not in coords and REFERENCE in cube.indexes:
        coords[REFERENCE] = (COMPARISON, cube.indexes[REFERENCE].to_numpy()[idx[-1]])
    if fe is not None:
        coords["failed_enrolment"] = (COMPARISON, fe[idx[-1]])
    if fa is not None:
        coords["failed_acquisition"] = (COMPARISON, fa.reshape(-1)[flat // n_ref])
    attrs = {k: v for k, v in cube.attrs.items()}
    attrs.update({"score_kind": cube.attrs.get("score_kind", "similarity"), "form": "comparison list",
                  "probe_dims": [str(d) for d in pdims]})
    return xr.Dataset({"score": (COMPARISON, values.reshape(-1)[flat])}, coords=coords, attrs=attrs)


def to_cube(ds: xr.Dataset) -> xr.DataArray:
    """A dense score cube from a comparison list (absent pairs become NaN).

    The probe axis is the list's probe dims (``attrs["probe_dims"]``)
    when it has them, else ``probe_id`` (or ``probe``), else ``subject``; the reference
    axis is ``reference_id`` (or ``reference``), else ``reference_subject``.
    The cube is probes x references in memory: call it only when that is
    small enough. A list of 1e6 trials among 1e5 samples makes a cube of
    1e10 cells.

    Examples
    --------
    >>> import bioxr
    >>> trials = bioxr.comparison_list([0.9, 0.1, 0.8], subject=["a", "a", "b"],
    ...                                reference_subject=["a", "b", "b"])
    >>> bioxr.to_cube(trials).sizes
    Frozen({'probe': 2, 'reference': 2})
    """
    ds = canonical(validate_comparison_list(ds, require_mated=False, require_nonmated=False))
    if not has_subjects(ds):
        raise ScoreCubeError("this comparison list has no subject labels (it came from two arrays of scores), so "
                             "it has no probe x reference layout. Build it with subject labels to make a cube.")
    dims_ = [d for d in ds.attrs.get("probe_dims", []) if d in ds.coords]
    fallback = not dims_
    if fallback:
        dims_ = [next((k for k in ("probe_id", "probe") if k in ds.coords), "subject")]
    ref_key = next((k for k in ("reference_id", "reference") if k in ds.coords), "reference_subject")
    frame = pd.DataFrame({k: np.asarray(ds[k].values) for k in [*dims_, ref_key]})
    if frame.duplicated().any():
        raise ScoreCubeError(f"some (probe, reference) pair appears twice in the list (keys {dims_ + [ref_key]}); "
                             "a cube holds one score per pair.")
    p_codes, p_levels = [], []
    for d in dims_:
        c, u = pd.factorize(frame[d], sort=False)
        p_codes.append(c)
        p_levels.append(np.asarray(u))
    r_code, r_levels = pd.factorize(frame[ref_key], sort=False)
    shape = (*[len(u) for u in p_levels], len(r_levels))
    values = np.full(shape, np.nan, dtype=np.asarray(ds["score"].values).dtype)
    values[(*p_codes, r_code)] = np.asarray(ds["score"].values)
    out_dims = ["probe"] if fallback else list(dims_)
    coords: dict = {}
    for d, od, u in zip(dims_, out_dims, p_levels):
        coords[od] = u
        if od != d:
            coords[d] = (od, u)
    coords[REFERENCE] = np.asarray(r_levels)
    if ref_key != REFERENCE:
        coords[ref_key] = (REFERENCE, np.asarray(r_levels))
    first_probe = np.unique(np.ravel_multi_index(p_codes, shape[:-1]), return_index=True)[1]
    first_ref = np.unique(r_code, return_index=True)[1]
    for name in ds.coords:
        if name in dims_ or name == ref_key or name in FAILURE_COORDS or name == REFERENCE:
            continue
        v = np.asarray(ds[name].values)
        if str(name).startswith("reference_"):
            if _constant_within(v, r_code):
                coords[name] = (REFERENCE, v[first_ref])
            continue
        if len(out_dims) == 1 and _constant_within(v, p_codes[0]):
            coords[name] = (out_dims[0], v[first_probe])
            continue
        for d, od, c in zip(dims_, out_dims, p_codes):
            if _constant_within(v, c):
                coords[name] = (od, v[np.unique(c, return_index=True)[1]])
                break
        else:
            if name not in ("subject", "probe_id") and _constant_within(v, r_code):
                coords[name] = (REFERENCE, v[first_ref])
    attrs = {k: v for k, v in ds.attrs.items() if k not in ("form", "probe_dims")}
    cube = xr.DataArray(values, dims=(*out_dims, REFERENCE), coords=coords, name="score", attrs=attrs)
    return validate_score_cube(cube, require_mated=False, require_nonmated=False)


def _constant_within(values: np.ndarray, codes: np.ndarray) -> bool:
    frame = pd.DataFrame({"c": codes, "v": values})
    return bool((frame.groupby("c")["v"].nunique(dropna=False) <= 1).all())


def check_score_kind(obj) -> str | None:
    """A warning sentence when the scores look reversed for the declared ``score_kind``, else None.

    The mated scores of a working matcher sit above the non-mated ones
    (similarity) or below them (distance). When the mated median lies on
    the wrong side and the mated scores rank below the others more often
    than chance allows (three standard errors), the kind was probably
    declared the wrong way round: every rate, the EER and every curve would
    be wrong (the ROCCH EER of reversed scores is always 50%). Statistics
    warn with :class:`bioxr._core.ScoreKindWarning`; reports print this
    sentence at the top. An outcome cube gives None (candidate lists are
    checked against their rank column when read).

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> rng = np.random.default_rng(0)
    >>> distances = bioxr.from_scores(rng.normal(0.2, 0.1, 100), rng.normal(0.8, 0.1, 1000))
    >>> print(check_score_kind(distances).split(": ")[-1])
    the scores are probably distance scores. Declare score_kind='distance', or the error rates, the EER and every curve are wrong.
    """
    from ._core import Grouped, orientation_message
    from .counting import cells_and_sample

    if isinstance(obj, xr.Dataset) and not is_comparison_list(obj) and "mated_rank_min" in obj:
        # an outcome cube (e.g. from candidate lists): the best non-mated score of a search is a maximum and may
        # well beat the mate of a weak matcher, so medians prove nothing; candidate lists check their rank column
        return None
    groups = Grouped(obj, None, lazy=True)  # a lazy list: its passes run blockwise
    values, index = groups.block(0)
    # one pass over a lazy list; its mated scores, when many, stay where they are and a sample of them speaks
    (mated, _), others = cells_and_sample(values, index, groups.distance, spread=True)
    return orientation_message(mated if isinstance(mated, np.ndarray) else mated.sample, others, groups.kind)
