"""The score cube: construction, validation and the masks every statistic uses.

A score cube is a :class:`xarray.DataArray` of comparison scores with one
dimension named ``reference`` and one or more probe dimensions. The probe's
identity is the ``subject`` coordinate (a dimension, or a coordinate on the
probe dimensions); the reference's is the ``reference_subject`` coordinate on
``reference``. ``attrs["score_kind"]`` is ``"similarity"`` (higher is more
alike, accept when ``s >= t``) or ``"distance"`` (accept when ``d <= t``).
NaN means "not compared" and is never a score.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from ._core.errors import ScoreCubeError
from .counting import CellIndex

__all__ = [
    "ScoreCubeError",
    "score_cube",
    "validate_score_cube",
    "probe_dims",
    "pooled_dims",
    "reduce_dims",
    "mated_mask",
    "compared_mask",
    "score_kind",
    "label_codes",
]

REFERENCE = "reference"
#: A dimension of several matchers scored on the same trials: kept, never pooled, unless named in ``dim``.
SYSTEM = "system"
SCORE_KINDS = ("similarity", "distance")


def score_kind(cube: xr.DataArray) -> str:
    """Return ``"similarity"`` or ``"distance"`` for a score cube.

    Examples
    --------
    >>> import bioxr
    >>> score_kind(bioxr.simulate.gaussian(n_subjects=3, seed=0))
    'similarity'
    """
    kind = cube.attrs.get("score_kind", "similarity")
    if kind not in SCORE_KINDS:
        raise ScoreCubeError(
            f"attrs['score_kind'] is {kind!r}; it must be 'similarity' (higher "
            "scores are more alike) or 'distance' (lower scores are more alike)."
        )
    return kind


def probe_dims(cube: xr.DataArray) -> tuple[Hashable, ...]:
    """The probe dimensions of a score cube: every dimension but ``reference``.

    Examples
    --------
    >>> import bioxr
    >>> probe_dims(bioxr.simulate.photohead(n_subjects=2, n_collections=2, seed=0))
    ('subject', 'image', 'collection')
    """
    return tuple(d for d in cube.dims if d != REFERENCE)


def pooled_dims(dims) -> tuple[Hashable, ...]:
    """What ``dim=None`` pools: the given probe dimensions but ``system``.

    Scores of different matchers (a ``system`` dimension) are never pooled
    unless ``dim`` names it: pooling two matchers' scores gives the rates of
    neither.

    Examples
    --------
    >>> pooled_dims(("system", "probe"))
    ('probe',)
    """
    return tuple(d for d in dims if d != SYSTEM)


def reduce_dims(obj, dim, *, default: Sequence[Hashable]) -> tuple[Hashable, ...]:
    """Normalise a ``dim`` argument (name, sequence or None) and check it exists.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
    dim : str, sequence of str or None
        None means ``default``.
    default : sequence of str

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.photohead(n_subjects=2, n_collections=2, seed=0)
    >>> reduce_dims(cube, "image", default=probe_dims(cube))
    ('image',)
    >>> reduce_dims(cube, None, default=probe_dims(cube))
    ('subject', 'image', 'collection')
    """
    if dim is None:
        dims = tuple(default)
    elif isinstance(dim, str) or not isinstance(dim, Sequence):
        dims = (dim,)
    else:
        dims = tuple(dim)
    missing = [d for d in dims if d not in obj.dims]
    if missing:
        raise ValueError(
            f"dim={dim!r} names {missing}, which the data does not have; its "
            f"dimensions are {list(obj.dims)}."
        )
    if REFERENCE in dims:
        raise ValueError(
            "the 'reference' dimension cannot be kept or reduced by name: rates "
            "always pool over references. Select references with .sel first."
        )
    return dims


def score_cube(
    scores,
    *,
    subject=None,
    reference_subject,
    dims: Sequence[Hashable] | None = None,
    coords: Mapping[Hashable, object] | None = None,
    probe_id=None,
    reference_id=None,
    score_kind: str = "similarity",
    missing: float | None = None,
    name: str = "score",
    source: str | None = None,
) -> xr.DataArray:
    """Build a validated score cube from NumPy arrays and labels.

    Parameters
    ----------
    scores : array_like, shape (*probe_shape, n_reference)
        Comparison scores; the last axis is the ``reference`` dimension.
        NaN means "not compared".
    subject : array_like, optional
        Subject label of each probe, of length ``probe_shape[0]`` (a coordinate
        on the first probe dimension). Omit it when ``"subject"`` is itself one
        of ``dims``; its labels then come from ``coords["subject"]``.
    reference_subject : array_like, shape (n_reference,)
        Subject label of each reference.
    dims : sequence of str, optional
        Dimension names; the last must be ``"reference"``. Default
        ``("probe", "reference")`` for 2-D scores.
    coords : mapping, optional
        Further coordinates (cofactors such as ``collection`` or ``sensor``),
        passed to :class:`xarray.DataArray`.
    probe_id, reference_id : array_like, optional
        Sample ids. Where a probe and a reference carry the same id they are
        the same sample: that cell is a self comparison and is never counted.
    score_kind : {"similarity", "distance"}
    missing : float, optional
        A sentinel value that stands for "not compared" (for example ``-1``
        for a failed enrolment). It becomes NaN and the number of such cells
        is recorded in ``attrs["n_missing"]``, the sentinel in
        ``attrs["missing_sentinel"]``.
    name : str
    source : str, optional
        Where the scores came from, used in error messages and kept in attrs.

    Returns
    -------
    xarray.DataArray
        The score cube, dims ``(*probe_dims, "reference")``.

    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube(
    ...     np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.4]]),
    ...     subject=["a", "b"], reference_subject=["a", "b", "c"])
    >>> cube.dims
    ('probe', 'reference')
    >>> int(mated_mask(cube).sum())
    2
    """
    arr = np.asarray(scores)
    if arr.ndim < 2:
        raise ScoreCubeError(
            f"scores has {arr.ndim} dimension(s); a score cube needs at least two: "
            "one or more probe dimensions and a last 'reference' dimension."
        )
    if dims is None:
        if arr.ndim != 2:
            raise ScoreCubeError(
                f"scores has {arr.ndim} dimensions: name them with dims=(..., 'reference')."
            )
        dims = ("probe", REFERENCE)
    dims = tuple(dims)
    if len(dims) != arr.ndim:
        raise ScoreCubeError(f"dims={dims} names {len(dims)} dimensions but scores has {arr.ndim}.")
    if dims[-1] != REFERENCE:
        raise ScoreCubeError(f"the last dimension must be 'reference'; dims={dims}.")
    all_coords: dict = dict(coords or {})
    if subject is not None:
        subject = _label_array(subject)
        if subject.shape != (arr.shape[0],):
            raise ScoreCubeError(
                f"subject has shape {subject.shape}; it must give one label per entry "
                f"of the first probe dimension {dims[0]!r} ({arr.shape[0]})."
            )
        if dims[0] == "subject":
            all_coords["subject"] = subject
        else:
            all_coords["subject"] = (dims[0], subject)
    reference_subject = _label_array(reference_subject)
    if reference_subject.shape != (arr.shape[-1],):
        raise ScoreCubeError(
            f"reference_subject has shape {reference_subject.shape}; it must give one "
            f"label per reference ({arr.shape[-1]})."
        )
    all_coords["reference_subject"] = (REFERENCE, reference_subject)
    if probe_id is not None:
        all_coords["probe_id"] = (dims[0], np.asarray(probe_id))
    if reference_id is not None:
        all_coords["reference_id"] = (REFERENCE, np.asarray(reference_id))
    attrs = {"score_kind": score_kind}
    if source is not None:
        attrs["source"] = str(source)
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ScoreCubeError(
            f"scores must be real numbers; got dtype {arr.dtype}. Convert them with "
            "np.asarray(scores, dtype=float) after checking for text in the data."
        )
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if missing is not None:
        hit = arr == missing
        n_missing = int(hit.sum())
        if n_missing:
            arr = np.where(hit, np.nan, arr)
        attrs["missing_sentinel"] = float(missing)
        attrs["n_missing"] = n_missing
    cube = xr.DataArray(arr, dims=dims, coords=all_coords, name=name, attrs=attrs)
    return validate_score_cube(cube)


def validate_score_cube(
    cube, *, require_mated: bool = True, require_nonmated: bool = True, check_values: bool = True
):
    """Check a score cube and return it unchanged, or raise a clear error.

    Checks: it is a DataArray with a ``reference`` dimension and at least one
    probe dimension; ``subject`` and ``reference_subject`` labels exist and
    none is missing; ``score_kind`` is known; scores are real and finite (NaN
    = not compared); no index has duplicated labels; the probe and reference
    label sets share at least one subject; there are mated and non-mated
    comparisons (each can be waived).

    Parameters
    ----------
    cube : xarray.DataArray
    require_mated, require_nonmated : bool, keyword-only
        Raise when the cube holds no mated (non-mated) comparison.
    check_values : bool, keyword-only
        Look at every score for infinities (one pass). A caller that
        passes over the scores anyway may check them there instead, as
        :func:`bioxr.outcomes.outcomes` does.

    Returns
    -------
    xarray.DataArray
        ``cube`` itself.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> bad = xr.DataArray(np.zeros((2, 2)), dims=("probe", "gallery"))
    >>> validate_score_cube(bad)
    Traceback (most recent call last):
    ...
    bioxr.cube.ScoreCubeError: the score cube has no 'reference' dimension (its dims are ['probe', 'gallery']). Name the dimension that indexes references 'reference', e.g. cube.rename({'gallery': 'reference'}).
    """
    where = f" (from {cube.attrs['source']})" if isinstance(cube, xr.DataArray) and "source" in cube.attrs else ""
    if isinstance(cube, xr.Dataset):
        raise ScoreCubeError(
            "expected a score cube (a DataArray of scores) but got a Dataset; pick "
            "its score variable, e.g. ds['score']."
        )
    if not isinstance(cube, xr.DataArray):
        raise ScoreCubeError(f"expected a score cube (xarray.DataArray), got {type(cube).__name__}.")
    if REFERENCE not in cube.dims:
        raise ScoreCubeError(
            f"the score cube{where} has no 'reference' dimension (its dims are "
            f"{list(cube.dims)}). Name the dimension that indexes references "
            "'reference', e.g. cube.rename({'gallery': 'reference'})."
        )
    pdims = probe_dims(cube)
    if not pdims:
        raise ScoreCubeError(f"the score cube{where} has only a 'reference' dimension; it needs a probe dimension.")
    score_kind(cube)
    if "subject" not in cube.coords:
        raise ScoreCubeError(
            f"the score cube{where} has no 'subject' coordinate: label each probe with "
            "its subject, e.g. cube.assign_coords(subject=('probe', labels))."
        )
    if "reference_subject" not in cube.coords:
        raise ScoreCubeError(
            f"the score cube{where} has no 'reference_subject' coordinate: label each "
            "reference, e.g. cube.assign_coords(reference_subject=('reference', labels))."
        )
    if REFERENCE in cube["subject"].dims:
        raise ScoreCubeError("the 'subject' coordinate must lie on probe dimensions, not on 'reference'.")
    if cube["reference_subject"].dims != (REFERENCE,):
        raise ScoreCubeError(
            f"'reference_subject' must lie on the 'reference' dimension alone; it has dims {cube['reference_subject'].dims}."
        )
    for label in ("subject", "reference_subject"):
        values = np.asarray(cube[label].values)
        bad = _missing_labels(values)
        if bad.any():
            raise ScoreCubeError(
                f"{int(bad.sum())} {'probe' if label == 'subject' else 'reference'}(s){where} "
                f"have no {label!r} label (empty or missing), first at position "
                f"{np.argwhere(bad)[0].tolist()}. Every comparison needs both subjects to be known."
            )
    for d in cube.dims:
        if d in cube.indexes:
            idx = cube.indexes[d]
            if idx.has_duplicates:
                dup = idx[idx.duplicated()].unique()[:5].tolist()
                raise ScoreCubeError(
                    f"dimension {d!r}{where} has duplicated labels {dup}: each comparison must "
                    "appear once. Remove or average the duplicates before building the cube."
                )
    if not _is_lazy(cube):
        values = np.asarray(cube.values)
        if not np.issubdtype(values.dtype, np.floating):
            raise ScoreCubeError(f"scores{where} must be floating point; got {values.dtype}.")
        # one cheap pass: a finite sum means no NaN and no infinity anywhere
        clean = bool(np.isfinite(np.add.reduce(values, axis=None))) if check_values else None
        if clean is False:
            inf = np.isinf(values)
            if inf.any():
                first = np.argwhere(inf)[0]
                pos = {str(d): _label_at(cube, d, i) for d, i in zip(cube.dims, first)}
                raise ScoreCubeError(
                    f"{int(inf.sum())} score(s){where} are infinite, first at {pos}. Scores must be "
                    "finite; use NaN for 'not compared' or declare a sentinel with missing=."
                )
    probe_labels = set(pd.unique(np.asarray(cube["subject"].values).ravel()).tolist())
    ref_labels = set(pd.unique(np.asarray(cube["reference_subject"].values).ravel()).tolist())
    if require_mated and not probe_labels & ref_labels:
        raise ScoreCubeError(
            f"no probe subject{where} is among the reference subjects, so no comparison is "
            f"mated (probe labels e.g. {sorted(map(str, probe_labels))[:3]}, reference labels "
            f"e.g. {sorted(map(str, ref_labels))[:3]}). Check that both sides use the same ids."
        )
    if not _is_lazy(cube):
        probe_codes, ref_codes, self_cols = label_codes(cube, probe_dims(cube))
        index = CellIndex(probe_codes, ref_codes, self_cols)
        flat = values.reshape(-1)
        n_mated = int(np.count_nonzero(~np.isnan(flat[index.mated])))
        n_excluded = int(np.count_nonzero(~np.isnan(flat[index.excluded])))
        if require_nonmated:
            n_valid = flat.size if clean else flat.size - int(np.count_nonzero(np.isnan(flat)))
            n_nonmated = n_valid - n_mated - n_excluded
        if require_mated and n_mated == 0:
            raise ScoreCubeError(
                f"the score cube{where} holds no mated comparison with a score (all are NaN "
                "or self comparisons); FNMR and identification rates need some."
            )
        if require_nonmated and n_nonmated == 0:
            raise ScoreCubeError(
                f"the score cube{where} holds no non-mated comparison with a score; FMR needs "
                "comparisons of different subjects."
            )
    return cube


def label_codes(cube: xr.DataArray, probe_order: Sequence[Hashable]):
    """Integer codes of the subjects on both sides, for fast cell lookups.

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube.
    probe_order : sequence of str
        The probe dimensions in the order the probes are flattened.

    Returns
    -------
    probe_codes : ndarray of int, shape (n_probes,)
        Each probe's subject as an index into the reference subjects' codes
        (-1: not enrolled).
    ref_codes : ndarray of int, shape (n_reference,)
    self_cols : ndarray of int or None
        For each probe, the reference column holding the same sample (-1:
        none), when the cube has ``probe_id`` and ``reference_id``.

    Examples
    --------
    >>> import numpy as np
    >>> cube = score_cube(np.zeros((2, 3)), subject=["b", "z"], reference_subject=["a", "b", "b"])
    >>> probe, ref, _ = label_codes(cube, ("probe",))
    >>> probe.tolist(), ref.tolist()  # z is not enrolled
    ([1, -1], [0, 1, 1])
    """
    template = cube.isel({REFERENCE: 0}, drop=True)
    codes, uniques = pd.factorize(np.asarray(cube["reference_subject"].values), sort=False)
    subject = cube["subject"].broadcast_like(template).transpose(*probe_order)
    probe_codes = pd.Index(uniques).get_indexer(np.asarray(subject.values).ravel())
    self_cols = None
    if "probe_id" in cube.coords and "reference_id" in cube.coords:
        pid = cube["probe_id"].broadcast_like(template).transpose(*probe_order)
        ref_ids = pd.Index(np.asarray(cube["reference_id"].values))
        if ref_ids.has_duplicates:
            dup = ref_ids[ref_ids.duplicated()].unique()[:5].tolist()
            raise ScoreCubeError(
                f"reference_id repeats {dup}: each reference sample needs its own id, or self "
                "comparisons cannot be told apart. Drop reference_id or make the ids unique."
            )
        self_cols = ref_ids.get_indexer(np.asarray(pid.values).ravel())
    return probe_codes.astype(np.int64), codes.astype(np.int64), self_cols


def mated_mask(cube: xr.DataArray) -> xr.DataArray:
    """Boolean DataArray, True where probe and reference share a subject.

    It broadcasts over the dims of ``subject`` and ``reference``; combine it
    with :func:`compared_mask` to count comparisons.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=3, n_samples=2, seed=0)
    >>> int(mated_mask(cube).sum())  # 6 probes, each with one mated reference
    6
    """
    return cube["subject"] == cube["reference_subject"]


def compared_mask(cube: xr.DataArray) -> xr.DataArray:
    """Boolean DataArray, True where a comparison has a score and is not a self comparison.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.gallery.all_against_all(np.ones((3, 3)), ["a", "a", "b"])
    >>> int(compared_mask(cube).sum())  # the diagonal is no comparison
    6
    """
    mask = cube.notnull()
    if "probe_id" in cube.coords and "reference_id" in cube.coords:
        mask = mask & (cube["probe_id"] != cube["reference_id"])
    return mask


def _label_array(labels) -> np.ndarray:
    """Labels as an array, keeping a missing label detectable.

    ``np.asarray(["a", np.nan])`` would turn the NaN into the text "nan";
    a list holding a missing value stays an object array instead.
    """
    if isinstance(labels, np.ndarray):
        return labels
    as_object = np.asarray(list(labels), dtype=object)
    if pd.isna(as_object).any():
        return as_object
    return np.asarray(list(labels))


def _missing_labels(values: np.ndarray) -> np.ndarray:
    """True where a label is missing: NaN, None or blank text."""
    if values.dtype.kind in "fc":
        return np.isnan(values)
    if values.dtype.kind in "US":
        return np.char.str_len(np.char.strip(values)) == 0
    if values.dtype.kind == "O":
        flat = pd.Series(values.ravel())
        blank = flat.map(lambda v: isinstance(v, str) and v.strip() == "").to_numpy(dtype=bool)
        return (flat.isna().to_numpy() | blank).reshape(values.shape)
    return np.zeros(values.shape, dtype=bool)


def _label_at(cube: xr.DataArray, d, i):
    if d in cube.indexes:
        v = cube.indexes[d][i]
        return v.item() if hasattr(v, "item") else v
    return int(i)


def _is_lazy(cube: xr.DataArray) -> bool:
    return cube.chunks is not None
