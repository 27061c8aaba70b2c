"""Identification: closed-set CMC and rank-k rates, open-set DIR, FNIR and FPIR.

Every function takes a score cube (a DataArray), a comparison list (a
Dataset over ``comparison``; the outcome cube of either is computed first)
or an outcome cube (a Dataset from :func:`bioxr.outcomes.outcomes`, or from
top-L candidate lists by :func:`bioxr.candidates.from_candidates`), reduces
over ``dim`` (default: all probe dimensions) and keeps the rest.

On the outcome cube of candidate lists the ranks are known up to the list
length ``L`` only (``attrs["candidate_list_length"]``): the CMC and DIR are
computed for ranks up to ``L`` (the default ``max_rank``) and a higher
rank is refused; a mate not in its list counts as not found at any rank.
Results state ``L`` in their ``attrs``.

Ties follow ISO/IEC 19795-1 Annex F.2 (METHODS.md section 2): a probe whose
mate ties with other subjects has its rank spread uniformly over
``mated_rank_min .. mated_rank_max``, and counts at rank ``r`` with the
share of that range at or below ``r``. References are ranked by subject.
``convention="bob"`` breaks ties pessimistically instead, as bob.measure's
``cmc``, ``recognition_rate`` and ``detection_identification_rate`` do
(every non-mated score ``>=`` the mate's ranks ahead of it): the rank is
``mated_rank_max`` (:data:`bioxr.conventions.RANK_TIES`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import conventions as _conventions
from ._core import tie_share
from .comparisons import is_comparison_list
from .cube import REFERENCE, pooled_dims, reduce_dims
from .outcomes import outcomes

__all__ = ["cmc_curve", "identification_rate", "open_set_rates", "open_set_curve", "IMPOSTORS"]

IMPOSTORS = ("non-enrolled", "all")


LIST_LENGTH = "candidate_list_length"


def _outcome_cube(obj, *, ranks_only: bool) -> xr.Dataset:
    if isinstance(obj, xr.DataArray) or is_comparison_list(obj):
        return outcomes(obj, ranks_only=ranks_only)
    if isinstance(obj, xr.Dataset):
        needed = {"mated_rank_min", "mated_rank_max"} | (set() if ranks_only else {"mated_score", "nonmated_best"})
        missing = needed - set(obj.data_vars)
        if missing:
            raise ValueError(
                f"the Dataset lacks {sorted(missing)}: pass a score cube, a comparison list or an outcome "
                "cube (from bioxr.outcomes.outcomes(cube) or bioxr.candidates.from_candidates(df))."
            )
        return obj
    raise TypeError(
        f"expected a score cube (DataArray), a comparison list or an outcome cube (Dataset), got {type(obj).__name__}."
    )


def _list_length(attrs) -> int | None:
    """L of a candidate-list outcome cube (ranks known up to L), or None for a full ranking."""
    value = attrs.get(LIST_LENGTH)
    return None if value is None else int(value)


def _check_rank(attrs, rank, name: str) -> None:
    L = _list_length(attrs)
    if L is not None and rank > L:
        raise ValueError(
            f"{name}={rank} is beyond the candidate-list length L={L}: ranks are known up to {L} only (a mate "
            f"not in its list could be at any rank above {L}), so the rate at rank {rank} is unknown. "
            f"Ask for {name} <= {L}, or rerun the searches with longer candidate lists."
        )


def _list_attrs(attrs) -> dict:
    L = _list_length(attrs)
    return {} if L is None else {LIST_LENGTH: L}


class _Probes:
    """Outcome variables flattened to (group, probe) with the kept dims first."""

    def __init__(self, ds: xr.Dataset, dim, names):
        pdims = tuple(d for d in ds["mated_rank_min"].dims if d != REFERENCE)
        reduced = reduce_dims(ds, dim, default=pooled_dims(pdims))
        self.kept = tuple(d for d in pdims if d not in reduced)
        order = (*self.kept, *reduced)
        self.kept_shape = tuple(ds.sizes[d] for d in self.kept)
        self.n_groups = int(np.prod(self.kept_shape)) if self.kept else 1
        # a lazy outcome cube: every variable in one compute, so the scores behind them are generated or read once
        ds = ds[list(dict.fromkeys([*names, "mated_rank_min"]))].compute()
        self.arrays = {
            name: np.asarray(ds[name].broadcast_like(ds["mated_rank_min"]).transpose(*order).values, dtype=float).reshape(
                self.n_groups, -1
            )
            for name in names
        }
        self.kept_coords = {
            name: coord.variable for name, coord in ds.coords.items() if coord.dims and set(coord.dims) <= set(self.kept)
        }
        self.attrs = ds.attrs

    def dataarray(self, data, extra_dims=(), extra_coords=None):
        data = np.asarray(data)
        coords = dict(self.kept_coords)
        coords.update(extra_coords or {})
        return xr.DataArray(
            data.reshape((*self.kept_shape, *data.shape[1:])), dims=(*self.kept, *extra_dims), coords=coords
        )


def _tie_ranks(convention: str, lo: np.ndarray, hi: np.ndarray):
    """The rank range each probe's mate is spread over under ``convention`` ("bob": its worst rank)."""
    _conventions.check("rank_ties", convention)
    return (hi, hi) if convention == "bob" else (lo, hi)


def _tie_rule(convention: str) -> str:
    if convention == "bioxr":
        return "ISO/IEC 19795-1 Annex F.2: tied ranks spread uniformly (fractional counts)"
    return _conventions.describe("rank_ties", convention)


def _share_at_or_below(rank_min: np.ndarray, rank_max: np.ndarray, r) -> np.ndarray:
    """P(rank <= r) for ranks spread uniformly over rank_min .. rank_max (the core's Annex F share)."""
    return tie_share(rank_min, rank_max, r)


def cmc_curve(obj, *, dim=None, max_rank: int | None = None, convention: str = "bioxr") -> xr.Dataset:
    """Cumulative match characteristic with Annex F fractional ties.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube, or its outcome cube.
    dim : str, sequence of str or None, keyword-only
        Probe dimensions to pool over (default all); the rest are kept.
    max_rank : int, optional, keyword-only
        Highest rank computed (default: the worst rank any probe's mate
        can take, beyond which the CMC is 1; for candidate lists, the list
        length ``L``, and a higher ``max_rank`` is an error).
    convention : {"bioxr", "bob"}, keyword-only
        How tied ranks count (:data:`bioxr.conventions.RANK_TIES`):
        ``"bioxr"`` (default) the Annex F.2 fractional share; ``"bob"``
        pessimistic, the mate at its worst tied rank ``mated_rank_max``,
        as bob.measure's ``cmc`` and ``recognition_rate``. Recorded in
        ``attrs["convention"]``.

    Returns
    -------
    xarray.Dataset
        ``cmc`` over ``(*kept, "rank")``: the share of closed-set probes
        whose mate is found at or below each rank; ``n_probes`` (probes
        whose subject is enrolled and was compared) and ``n_excluded``
        (the others, not counted) over ``kept``. attrs ``tie_rule``,
        ``rank_unit`` and, for candidate lists, ``candidate_list_length``.

    References
    ----------
    ISO/IEC 19795-1:2006 Annex F.2 (seeds/004); seeds/001 (closed set).

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube(np.array([[0.9, 0.9, 0.1], [0.2, 0.5, 0.7]]),
    ...                   subject=["a", "b"], reference_subject=["a", "b", "c"])
    >>> bioxr.identification.cmc_curve(cube).cmc.values.tolist()
    [0.25, 1.0]
    >>> bioxr.identification.cmc_curve(cube, max_rank=3).cmc.values.tolist()
    [0.25, 1.0, 1.0]
    >>> bioxr.identification.cmc_curve(cube, convention="bob").cmc.values.tolist()
    [0.0, 1.0]
    """
    _conventions.check("rank_ties", convention)
    ds = _outcome_cube(obj, ranks_only=True)
    probes = _Probes(ds, dim, ("mated_rank_min", "mated_rank_max"))
    lo, hi = _tie_ranks(convention, probes.arrays["mated_rank_min"], probes.arrays["mated_rank_max"])
    valid = ~np.isnan(lo)
    top = int(np.nanmax(hi)) if valid.any() else 1
    L = _list_length(ds.attrs)
    if max_rank is None:
        max_rank = max(top, 1) if L is None else L
    if max_rank < 1:
        raise ValueError("max_rank must be at least 1.")
    _check_rank(ds.attrs, max_rank, "max_rank")
    n_probes = valid.sum(axis=1)
    if (n_probes == 0).any():
        raise ValueError(
            "a CMC needs probes whose subject is enrolled and compared; some group has none. "
            "Check the labels, or reduce over more dimensions."
        )
    # each probe adds a ramp from rank_min to rank_max: second differences, then two cumsums
    slope = np.zeros((probes.n_groups, max_rank + 2))
    g_idx = np.nonzero(valid)
    a = lo[valid].astype(np.int64)
    b = hi[valid].astype(np.int64)
    inv = 1.0 / (b - a + 1)
    np.add.at(slope, (g_idx[0], np.minimum(a, max_rank + 1)), inv)
    np.add.at(slope, (g_idx[0], np.minimum(b + 1, max_rank + 1)), -inv)
    found = np.cumsum(np.cumsum(slope, axis=1), axis=1)[:, 1 : max_rank + 1]
    ranks = np.arange(1, max_rank + 1)
    result = xr.Dataset(
        {
            "cmc": probes.dataarray(found / n_probes[:, None], ("rank",), {"rank": ranks}),
            "n_probes": probes.dataarray(n_probes),
            "n_excluded": probes.dataarray((~valid).sum(axis=1)),
        },
        attrs={
            "convention": convention,
            "tie_rule": _tie_rule(convention),
            "rank_unit": "enrolled subjects" if L is None else "candidate subjects in the list",
            **_list_attrs(ds.attrs),
        },
    )
    result["cmc"].attrs["long_name"] = "identification rate at or below rank"
    result["n_excluded"].attrs["long_name"] = "probes not enrolled or never compared with their mate (not counted)"
    return result


def identification_rate(obj, rank=1, *, dim=None, convention: str = "bioxr") -> xr.Dataset:
    """Closed-set identification rate at rank ``rank`` (rank-1 by default).

    Returns the :func:`cmc_curve` Dataset selected at ``rank`` (an int, or
    a sequence of ints that stays a ``rank`` dimension). On candidate
    lists a rank beyond the list length ``L`` is an error. ``convention``
    as in :func:`cmc_curve` ("bob": bob.measure's ``recognition_rate``,
    pessimistic ties).

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=50, seed=0)
    >>> 0 < float(bioxr.identification.identification_rate(cube).cmc) <= 1
    True
    """
    ranks = np.atleast_1d(rank).astype(int)
    if (ranks < 1).any():
        raise ValueError("ranks start at 1.")
    if isinstance(obj, xr.Dataset):
        _check_rank(obj.attrs, int(ranks.max()), "rank")
    curve = cmc_curve(obj, dim=dim, max_rank=int(ranks.max()), convention=convention)
    return curve.sel(rank=rank)


def _impostor_scores(probes: _Probes, impostors: str):
    """Masks (group, probe) of the mated probes and of the impostor searches.

    On a score cube an impostor search needs a non-mated score; on
    candidate lists every impostor search counts, an empty list (NaN
    ``nonmated_best``) as one that returned no candidate.
    """
    if impostors not in IMPOSTORS:
        raise ValueError(f"impostors={impostors!r}; choose one of {IMPOSTORS}.")
    enrolled = ~np.isnan(probes.arrays["mated_rank_min"])
    top = probes.arrays["nonmated_best"]
    L = _list_length(probes.attrs)
    if L is not None:
        if impostors == "all" and L < 2:
            raise ValueError(
                "impostors='all' needs each mated search's best non-mated score, but with candidate lists of "
                "length 1 it is unknown wherever the mate is the one candidate. Use impostors='non-enrolled' "
                "(mark non-enrolled searches with enrolled= in from_candidates), or lists of length 2 or more."
            )
        use = ~enrolled if impostors == "non-enrolled" else np.ones_like(enrolled)
    elif impostors == "non-enrolled":
        use = ~enrolled & ~np.isnan(top)
    else:
        use = ~np.isnan(top)
    return enrolled, use


def open_set_rates(
    obj, threshold, *, rank: int = 1, dim=None, impostors: str = "non-enrolled", convention: str = "bioxr"
) -> xr.Dataset:
    """Open-set identification rates at given thresholds.

    ``DIR(t, r)``: mated probes whose mate is at rank ``<= r`` (Annex F
    fractional ties) *and* scores at or beyond ``t``, over mated probes;
    ``FNIR = 1 - DIR``. ``FPIR(t)``: impostor probes whose top candidate
    scores at or beyond ``t``, over impostor probes.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or its outcome cube.
    threshold : float or array_like
        Thresholds (a ``threshold`` dimension).
    rank : int, keyword-only
        Candidate-list length ``r``; on candidate lists at most their
        length ``L``.
    dim : str, sequence of str or None, keyword-only
    impostors : {"non-enrolled", "all"}, keyword-only
        Which probes are impostor searches: those whose subject is not
        enrolled (default), or every probe with its own mates left out
        (all-against-all, seeds/001: each probe plays once as genuine and
        once as impostor). A subject whose references were never compared
        with the probe (a failed enrolment, NaN) counts as not enrolled
        for that probe; ``attrs["enrolment"]`` says so. On candidate
        lists an impostor search with an empty list counts as returning no
        candidate, and with ``"all"`` a mated search's top non-mate is the
        best other subject in its list.
    convention : {"bioxr", "bob"}, keyword-only
        How a mate tied with other subjects counts in DIR
        (:data:`bioxr.conventions.RANK_TIES`): the Annex F.2 share
        (default) or, ``"bob"``, at its worst tied rank as bob.measure's
        ``detection_identification_rate``. Only the rank rule changes: the
        threshold accepts a score equal to it, as bob's DIR does
        (``max_pos >= threshold``). Recorded in ``attrs["convention"]``.

    Returns
    -------
    xarray.Dataset
        ``dir``, ``fnir``, ``fpir``, ``detected`` (fractional count),
        ``false_positives`` over ``(*kept, "threshold")``;
        ``n_mated_probes``, ``n_impostor_probes`` over ``kept``; attrs
        (for candidate lists also ``candidate_list_length``).

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube(np.array([[0.9, 0.2], [0.3, 0.8], [0.6, 0.1]]),
    ...                   subject=["a", "b", "z"], reference_subject=["a", "b"])
    >>> r = bioxr.identification.open_set_rates(cube, [0.5, 0.85])
    >>> r.dir.values.tolist(), r.fpir.values.tolist()
    ([1.0, 0.5], [1.0, 0.0])
    """
    _conventions.check("rank_ties", convention)
    ds = _outcome_cube(obj, ranks_only=False)
    _check_rank(ds.attrs, rank, "rank")
    probes = _Probes(ds, dim, ("mated_rank_min", "mated_rank_max", "mated_score", "nonmated_best"))
    distance = ds.attrs.get("score_kind", "similarity") == "distance"
    t = np.atleast_1d(np.asarray(threshold, dtype=float))
    if t.ndim != 1 or np.isnan(t).any():
        raise ValueError("threshold must be a number or a 1-D sequence of numbers, without NaN.")
    enrolled, use = _impostor_scores(probes, impostors)
    n_m = enrolled.sum(axis=1)
    n_i = use.sum(axis=1)
    if (n_m == 0).any():
        raise ValueError("open-set rates need mated probes (enrolled subjects) in every group.")
    if (n_i == 0).any():
        raise ValueError(
            "open-set FPIR needs impostor searches, but some group has no probe whose subject is not "
            "enrolled. Use impostors='all' to let every probe search with its own mates left out."
        )
    lo, hi = _tie_ranks(convention, probes.arrays["mated_rank_min"], probes.arrays["mated_rank_max"])
    weight = np.where(enrolled, _share_at_or_below(lo, hi, rank), 0.0)
    sign = -1.0 if distance else 1.0  # work in similarity orientation
    ts = sign * t
    detected = np.empty((probes.n_groups, t.size))
    false_pos = np.empty((probes.n_groups, t.size), dtype=np.int64)
    for g in range(probes.n_groups):
        scores = sign * probes.arrays["mated_score"][g][enrolled[g]]
        order = np.argsort(scores, kind="stable")
        scores = scores[order]
        suffix = np.concatenate([np.cumsum(weight[g][enrolled[g]][order][::-1])[::-1], [0.0]])
        detected[g] = suffix[np.searchsorted(scores, ts, side="left")]
        top = np.sort(sign * probes.arrays["nonmated_best"][g][use[g]])
        top = top[: np.count_nonzero(~np.isnan(top))]  # an empty candidate list returns no candidate
        false_pos[g] = top.size - np.searchsorted(top, ts, side="left")
    dir_ = detected / n_m[:, None]
    fpir = false_pos / n_i[:, None]
    extra = {"threshold": t}
    out = xr.Dataset(
        {
            "dir": probes.dataarray(dir_, ("threshold",), extra),
            "fnir": probes.dataarray(1 - dir_, ("threshold",), extra),
            "fpir": probes.dataarray(fpir, ("threshold",), extra),
            "detected": probes.dataarray(detected, ("threshold",), extra),
            "false_positives": probes.dataarray(false_pos, ("threshold",), extra),
            "n_mated_probes": probes.dataarray(n_m),
            "n_impostor_probes": probes.dataarray(n_i),
        },
        attrs={
            "rank": int(rank),
            "impostors": impostors,
            "enrolment": "a probe is enrolled when some reference of its subject was compared with it",
            "convention": convention,
            "tie_rule": _tie_rule(convention),
            "decision_rule": "a candidate is returned when its score is at or beyond the threshold",
            "score_kind": "distance" if distance else "similarity",
            **_list_attrs(ds.attrs),
        },
    )
    if LIST_LENGTH in ds.attrs:
        out.attrs["enrolment"] = ds.attrs.get("enrolment", "from the candidate lists")
    out["dir"].attrs["long_name"] = f"detection and identification rate (rank <= {rank})"
    out["fpir"].attrs["long_name"] = "false positive identification rate"
    return out.isel(threshold=0) if np.ndim(threshold) == 0 else out


def open_set_curve(
    obj, *, rank: int = 1, dim=None, impostors: str = "non-enrolled", convention: str = "bioxr"
) -> xr.Dataset:
    """DIR and FPIR at every distinct threshold (the open-set DET/ROC).

    Thresholds are every distinct mated score of a mated probe and top
    score of an impostor search, plus a sentinel at which nothing is
    returned (a mate not in its candidate list, or an empty list, adds no
    threshold). See :func:`open_set_rates` for the definitions and
    parameters (``convention`` included).

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, seed=0)
    >>> curve = bioxr.identification.open_set_curve(cube, impostors="all")
    >>> float(curve.fpir[-1]), float(curve.dir[-1])
    (0.0, 0.0)
    """
    ds = _outcome_cube(obj, ranks_only=False)
    _check_rank(ds.attrs, rank, "rank")
    probes = _Probes(ds, dim, ("mated_rank_min", "mated_rank_max", "mated_score", "nonmated_best"))
    distance = ds.attrs.get("score_kind", "similarity") == "distance"
    enrolled, use = _impostor_scores(probes, impostors)
    sign = -1.0 if distance else 1.0
    values = [sign * probes.arrays["mated_score"][enrolled], sign * probes.arrays["nonmated_best"][use]]
    t = np.unique(np.concatenate(values))
    t = np.concatenate([t[~np.isnan(t)], [np.inf]])  # mates not in their list have no score
    rates = open_set_rates(ds, sign * t, rank=rank, dim=dim, impostors=impostors, convention=convention)
    if distance:
        rates = rates.isel(threshold=slice(None, None, -1))
    rates.attrs["curve"] = "open-set: DIR against FPIR"
    return rates
