"""All-against-all experiments: single- and multi-template (seeds/001).

In an all-against-all experiment every sample is compared with every other:
a G x G matrix whose rows are probes and columns references. The diagonal
(a sample against itself) is no attempt; every other same-subject cell is a
mated attempt.

- Single template: every off-diagonal cell is an attempt. For N subjects
  with S samples each, ``TG = |G|(S-1)`` mated and ``TI = |G|(N-1)S``
  non-mated attempts: the ``n_mated`` and ``n_nonmated`` that every
  verification function reports on the cube from :func:`all_against_all`.
- Multi template: per probe and per enrolled subject, the best score over
  that subject's samples (the probe itself left out): ``TG = |G|``,
  ``TI = |G|(N-1)``. :func:`best_per_subject` turns the matrix into that
  cube, and the same functions apply.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .cube import REFERENCE, compared_mask, score_cube, score_kind, validate_score_cube

__all__ = ["all_against_all", "best_per_subject"]


def all_against_all(
    scores,
    labels,
    *,
    sample_ids=None,
    score_kind: str = "similarity",
    missing: float | None = None,
    source: str | None = None,
) -> xr.DataArray:
    """A score cube from a G x G all-against-all matrix.

    Parameters
    ----------
    scores : array_like, shape (G, G)
        Row ``i``, column ``j``: sample ``i`` (probe) against sample ``j``
        (reference).
    labels : array_like, shape (G,)
        Subject of each sample (the same order on both sides).
    sample_ids : array_like, shape (G,), optional
        Sample ids; default ``0 .. G-1``. Equal ids on both sides mark the
        diagonal, which is never counted.
    score_kind, missing, source
        As in :func:`bioxr.cube.score_cube`.

    Returns
    -------
    xarray.DataArray
        Score cube with dims ``("probe", "reference")`` and ``probe_id`` /
        ``reference_id`` coordinates.

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(["a", "b", "c"], 2)          # N = 3 subjects, S = 2
    >>> cube = bioxr.gallery.all_against_all(rng.random((6, 6)), labels)
    >>> r = bioxr.verification.error_rates(cube, 0.5)
    >>> int(r.n_mated), int(r.n_nonmated)               # |G|(S-1), |G|(N-1)S
    (6, 24)
    """
    scores = np.asarray(scores)
    labels = np.asarray(labels)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1]:
        raise ValueError(f"an all-against-all matrix is square; got shape {scores.shape}.")
    if labels.shape != (scores.shape[0],):
        raise ValueError(f"labels has shape {labels.shape}; it needs one subject per sample ({scores.shape[0]}).")
    ids = np.arange(labels.size) if sample_ids is None else np.asarray(sample_ids)
    return score_cube(
        scores,
        subject=labels,
        reference_subject=labels,
        probe_id=ids,
        reference_id=ids,
        score_kind=score_kind,
        missing=missing,
        source=source,
    )


def best_per_subject(cube: xr.DataArray) -> xr.DataArray:
    """The multi-template cube: each probe's best score per reference subject.

    Self comparisons (same ``probe_id`` and ``reference_id``) are left out
    first, so in an all-against-all matrix a probe's own subject is
    represented by its other samples. "Best" is the highest similarity or
    the lowest distance; a subject with no compared reference gives NaN.

    Returns
    -------
    xarray.DataArray
        Score cube with one ``reference`` per subject (``reference`` and
        ``reference_subject`` are the subject labels), the probe
        coordinates kept, ``attrs["templates"] = "multi"``.

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(["a", "b", "c"], 2)
    >>> multi = bioxr.gallery.best_per_subject(bioxr.gallery.all_against_all(rng.random((6, 6)), labels))
    >>> r = bioxr.verification.error_rates(multi, 0.5)
    >>> int(r.n_mated), int(r.n_nonmated)               # |G|, |G|(N-1)
    (6, 12)
    """
    validate_score_cube(cube)
    kind = score_kind(cube)
    masked = cube.where(compared_mask(cube))
    masked = masked.drop_vars([c for c in ("probe_id", "reference_id") if c in masked.coords])
    reduce = "max" if kind == "similarity" else "min"
    grouped = getattr(masked.groupby("reference_subject"), reduce)(REFERENCE, skipna=True)
    grouped = grouped.rename({"reference_subject": REFERENCE})
    grouped = grouped.assign_coords(reference_subject=(REFERENCE, grouped[REFERENCE].values))
    grouped = grouped.transpose(*[d for d in cube.dims])
    grouped.attrs = {**cube.attrs, "templates": "multi"}
    grouped.name = cube.name
    return validate_score_cube(grouped)
