"""The gallery's share of the variance of identification rates (crossed probe and gallery subjects).

A CMC or an FPIR averages searches of one gallery: every search meets the
same enrolled subjects. Resampling the searches' subjects (the subject
bootstrap) sees the probe side only: a "lamb", an enrolled subject whom
many searches rank too high, moves every search at once, and a different
gallery would have other lambs. Resampling gallery subjects with
replacement is no answer either: a replicate gallery holds about 63% of
the distinct subjects, so ranks improve in every replicate.

The variance is computed instead by the method of moments for crossed
(dyadic) designs, as for the FMR (:mod:`bioxr.bootstrap._stats`; Aronow,
Samii & Assenova 2015; Owen 2007): each subject ``s`` gets an influence
``Z_s = P_s + G_s``, its searches' deviation ``P_s = sum_{p in s} (Y_p -
c) / P`` plus its gallery entry's influence ``G_s``, and

    V = n / (n - 1) [ sum_s Z_s^2 - sum_{s, g} G_{s g}^2 ],

where ``G_{s g}`` is gallery subject ``g``'s influence through the
searches of subject ``s`` (``G_g = sum_s G_{s g}``). The subtracted
terms are the pair-level noise, which ``P_s`` already counts: without
subject effects ``V`` is the binomial-like probe-side variance, with lambs
it grows by their covariance across searches.

The influence of gallery subject ``g`` on search ``p`` is what the search's
outcome loses if ``g`` is replaced by a typical gallery subject (one that
beats the search's level with the search's own rate ``a_p``, the share of
its non-mated subjects that beat it). A search succeeds when at most ``K``
non-mated subjects beat it (``K = k - 1`` for the CMC at rank ``k``, the
mate's best score being the level; ``K = 0`` for "no alarm" at an FPIR
threshold): only searches with exactly ``K`` or ``K + 1`` beating subjects
can change, so the influence is ``a_p [c_p = K] [g does not beat p] -
(1 - a_p) [c_p = K + 1] [g beats p]``, centred over the search's
non-mated subjects. Ties of the mate count as not beating (the point
estimates keep their Annex F shares; this is a variance).

The caller widens its subject-bootstrap interval by ``sqrt(V / V_probe)``
(floored at 1), ``V_probe = n_p / (n_p - 1) sum_s P_s^2`` the moment
variance of the probe side alone, so the interval keeps its shape and the
gallery adds what the bootstrap cannot see.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..cube import REFERENCE

#: Above this many search x gallery-subject cells the gallery variance is not computed (recorded in attrs).
MAX_CELLS = 50_000_000
TEXT = ("gallery subjects' share of the variance included (method of moments for crossed probe and gallery "
        "subjects; the subject-bootstrap interval widened by sqrt(V / V_probe), floored at 1)")


class Gallery:
    """Best score of every search against every enrolled subject, aligned with an outcome cube's searches.

    ``best`` (P, G): similarity-oriented (distance negated), ``-inf`` where
    absent or excluded (a self comparison); ``probe`` (P,) subject labels;
    ``gallery`` (G,) the enrolled subjects; ``mate`` (P,) the column of the
    search's own subject or -1.
    """

    def __init__(self, best, probe, gallery, mate):
        self.best, self.probe, self.gallery, self.mate = best, probe, gallery, mate

    @classmethod
    def from_cube(cls, obj, like: xr.DataArray) -> Gallery | None:
        """From a score cube or a comparison list (densified); None (the caller records it) for outcome cubes
        or when the searches x references would exceed MAX_CELLS."""
        from ..comparisons import is_comparison_list, to_cube

        if is_comparison_list(obj):
            refs = next((k for k in ("reference_id", "reference", "reference_subject") if k in obj.coords), None)
            if refs is None or int(like.size) * len(pd.unique(np.asarray(obj[refs].values))) > MAX_CELLS:
                return None
            obj = to_cube(obj)
        if not isinstance(obj, xr.DataArray) or REFERENCE not in obj.dims:
            return None
        pdims = tuple(like.dims)
        if set(pdims) != set(obj.dims) - {REFERENCE}:
            return None
        n_probes = int(np.prod([obj.sizes[d] for d in pdims])) if pdims else 1
        ref_subject = np.asarray(obj["reference_subject"].values)
        codes, labels = pd.factorize(ref_subject, sort=True)
        if n_probes * len(labels) > MAX_CELLS:
            return None
        sign = -1.0 if obj.attrs.get("score_kind", "similarity") == "distance" else 1.0
        values = sign * np.asarray(obj.transpose(*pdims, REFERENCE).values, dtype=float).reshape(n_probes, -1)
        values = np.where(np.isnan(values), -np.inf, values)
        if "probe_id" in obj.coords and "reference_id" in obj.coords:  # self comparisons are not candidates
            pid = np.asarray(obj["probe_id"].broadcast_like(like).transpose(*pdims).values).ravel()
            col = pd.Index(np.asarray(obj["reference_id"].values)).get_indexer(pid)
            rows = np.flatnonzero(col >= 0)
            values[rows, col[rows]] = -np.inf
        order = np.argsort(codes, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
        best = np.maximum.reduceat(values[:, order], starts, axis=1)
        probe = np.asarray(obj["subject"].broadcast_like(like).transpose(*pdims).values).ravel()
        mate = pd.Index(labels).get_indexer(probe)
        return cls(best, probe, np.asarray(labels), mate)


def _influence(beats: np.ndarray, nonmated: np.ndarray, cut: int, count=None, n_nm=None) -> np.ndarray:
    """Centred influence (P, G) of each gallery subject on ``[#beating <= cut]`` (see the module docstring)."""
    count = (beats & nonmated).sum(axis=1) if count is None else count
    n_nm = nonmated.sum(axis=1) if n_nm is None else n_nm
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(n_nm > 0, count / n_nm, 0.0)
    at, above = count == cut, count == cut + 1
    t = np.zeros(beats.shape)
    if at.any():
        t[at] = a[at, None] * (~beats[at] & nonmated[at])
    if above.any():
        t[above] -= (1 - a[above, None]) * (beats[above] & nonmated[above])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n_nm > 0, t.sum(axis=1) / np.maximum(n_nm, 1), 0.0)
    return np.where(nonmated, t - mean[:, None], 0.0)


def inflation(gallery: Gallery, rows: np.ndarray, levels: np.ndarray, cuts, outcome: np.ndarray) -> np.ndarray:
    """``V / V_probe`` (floored at 1) for each column of ``outcome`` (arguments as in :func:`moments`)."""
    v_total, v_probe = moments(gallery, rows, levels, cuts, outcome)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = v_total / v_probe
    return np.where((v_probe > 0) & np.isfinite(ratio), np.maximum(ratio, 1.0), 1.0)


def moments(gallery: Gallery, rows: np.ndarray, levels: np.ndarray, cuts, outcome: np.ndarray):
    """The crossed moment variance ``V`` and the probe side's ``V_probe`` of the mean of ``outcome``, per column.

    ``rows`` selects the searches (indices into the gallery's rows);
    ``levels`` (len(rows), J) the score each search's non-mated subjects must
    beat (strictly) for column j, similarity-oriented; ``cuts`` (J,) the
    ``K`` of each column; ``outcome`` (len(rows), J) each search's outcome
    as the estimator counts it (tie shares included), whose mean over the
    searches is the rate.
    """
    best = gallery.best[rows]
    subj_codes, subjects = pd.factorize(gallery.probe[rows], sort=True)
    every = pd.Index(np.union1d(subjects.astype(object), gallery.gallery.astype(object)))
    s_of_probe = every.get_indexer(subjects)[subj_codes]
    g_of_col = every.get_indexer(gallery.gallery)
    n_all, n_search = len(every), len(rows)
    nonmated = np.isfinite(best)
    mate = gallery.mate[rows]
    has = mate >= 0
    nonmated[np.flatnonzero(has), mate[has]] = False
    v_total, v_probe = np.zeros(outcome.shape[1]), np.zeros(outcome.shape[1])
    order = np.argsort(s_of_probe, kind="stable")  # searches grouped by their subject, for the (s, g) sums
    starts = np.flatnonzero(np.r_[True, np.diff(s_of_probe[order]) != 0])
    n_nm = nonmated.sum(axis=1)
    same_level = bool(np.all(levels == levels[:, :1])) if levels.size else True  # the CMC: the mate's score
    beats = count = None
    n_probe_subj = len(subjects)
    for j in range(outcome.shape[1]):
        y = outcome[:, j]
        rate = y.mean()
        p_side = np.bincount(s_of_probe, weights=y - rate, minlength=n_all) / n_search
        v_probe[j] = n_probe_subj / max(n_probe_subj - 1, 1) * (p_side**2).sum()
        if beats is None or not same_level:
            beats = best > levels[:, j : j + 1]
            count = (beats & nonmated).sum(axis=1)
        cut = int(cuts[j])
        if not np.any((count == cut) | (count == cut + 1)):  # no search at the boundary: no gallery influence
            v_total[j] = n_all / max(n_all - 1, 1) * (p_side**2).sum()
            continue
        t = _influence(beats, nonmated, cut, count, n_nm) / n_search
        g_side = np.zeros(n_all)
        g_side[g_of_col] = t.sum(axis=0)
        per_sg = np.add.reduceat(t[order], starts, axis=0)
        v_total[j] = n_all / max(n_all - 1, 1) * (((p_side + g_side) ** 2).sum() - (per_sg**2).sum())
    return v_total, v_probe
