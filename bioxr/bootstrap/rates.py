"""Subject-bootstrap intervals of rates from per-individual counts: any rate, the CMC, open-set DIR and FPIR."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .._core import check_level, check_rank, check_replicates, tie_share
from .._core.designs import warn_design
from ._bounds import COUNTS_DEFF_FLOOR, INTERVAL_TEXT, STUDENTIZED_TEXT, bound_kind, check_interval, effective_count, rate_bounds, ratio_variances, studentized_union
from ._gallery import TEXT as GALLERY_TEXT, Gallery, inflation
from ._stats import _counts, subject_draws

GALLERY_MISSING = ("not included: needs a dense score cube (pass the cube, not an outcome cube or a comparison list); "
                   "the interval then sees the probe side only")


def bootstrap_rate_interval(
    errors: xr.DataArray,
    attempts: xr.DataArray,
    *,
    dim: str = "individual",
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
    interval: str = "effective",
) -> xr.Dataset:
    """Subject-bootstrap interval of a rate from per-individual counts.

    The individuals along ``dim`` are resampled with replacement (all their
    attempts together); a replicate's rate is ``sum w_i e_i / sum w_i m_i``.
    Other dimensions are kept and share the same draws, so a whole
    Monte Carlo study is one matrix product.

    Parameters
    ----------
    errors, attempts : xarray.DataArray
        Per-individual error and attempt counts, with dimension ``dim``.
    dim : str, keyword-only
    n_replicates, level, seed : keyword-only
    interval : {"effective", "percentile"}, keyword-only
        ``"effective"`` (default): the binomial interval
        (:func:`bioxr.intervals.binomial_interval`) on the effective count
        ``N / deff``, with the design effect ``deff`` the replicates'
        variance over the binomial variance (Korn & Graubard 1998; floored
        at 1/2, not 1: flooring a noisy estimate at 1 over-covered with 60
        individuals, :data:`bioxr.bootstrap._bounds.COUNTS_DEFF_FLOOR`): it keeps the skew and discreteness of a small count, where
        percentiles of a few resampled errors do not. Where every replicate
        has a variance, the interval is widened to the bootstrap-t
        (studentised) interval on the cluster-robust variance of the ratio
        (the union of the two): it carries the extra skew of errors held by
        a few individuals with many attempts, where the effective count
        alone missed high (coverage 0.90-0.93 in unbalanced, correlated
        protocols; ``benchmarks/COVERAGE.md``). ``"percentile"``: the
        replicates' quantiles. Either way a rate of 0 (or 1) gets a
        one-sided bound on the number of individuals with attempts (valid
        whatever the correlation of an individual's attempts: each errs at
        least once with chance at least the rate), never [0, 0].

    Returns
    -------
    xarray.Dataset
        ``rate``, ``rate_interval`` (with a ``bound`` dim) and ``n_eff``,
        the other dims kept; ``rate_bound_kind`` ("two-sided" or the
        one-sided kind); attrs method, interval, level, n_replicates.

    Examples
    --------
    >>> import xarray as xr
    >>> from bioxr.bootstrap import bootstrap_rate_interval
    >>> e = xr.DataArray([0, 1, 0, 3, 0, 0, 1, 0], dims="individual")
    >>> m = xr.full_like(e, 5)
    >>> res = bootstrap_rate_interval(e, m, n_replicates=1000, seed=0)
    >>> float(res.rate)
    0.125
    >>> bool(res.rate_interval.sel(bound="lower") < 0.125 < res.rate_interval.sel(bound="upper"))
    True

    No error among 200 people: a one-sided bound on the 200 people
    (``-ln(0.05) / 200``), whatever the correlation of their attempts.

    >>> res = bootstrap_rate_interval(xr.zeros_like(m.isel(individual=[0] * 200)),
    ...                               xr.full_like(m.isel(individual=[0] * 200), 5), n_replicates=1000)
    >>> res.rate_interval.round(4).values.tolist(), str(res.rate_bound_kind.values)
    ([0.0, 0.015], 'one-sided upper (zero errors)')
    """
    level = check_level(level)
    check_interval(interval)
    n_replicates = check_replicates(n_replicates, level=level)
    if dim not in errors.dims or dim not in attempts.dims:
        raise ValueError(f"errors and attempts need the dimension {dim!r}.")
    warn_design(errors, attempts, dim, variance_based=interval == "effective", what="the subject-bootstrap interval")
    return _rate_interval(errors, attempts, dim, n_replicates, level, seed, interval)


def _rate_interval(errors, attempts, dim, n_replicates, level, seed, interval, inflate=None) -> xr.Dataset:
    """The body of :func:`bootstrap_rate_interval` (arguments checked); ``inflate`` (rest,) multiplies the variance.

    ``inflate`` is a variance the resampled individuals cannot show (the
    gallery's, for identification rates: :mod:`._gallery`), as a factor:
    each replicate's deviation from the rate is scaled by its square root,
    and so are the variances of the bootstrap-t.
    """
    e, other, reps, rate, trials, draws = _rate_replicates(errors, attempts, dim, n_replicates, seed, draws=True)
    flat_e = np.asarray(e["e"].values, dtype=np.float64).reshape(e.sizes[dim], -1)
    flat_m = np.asarray(e["m"].values, dtype=np.float64).reshape(e.sizes[dim], -1)
    if inflate is not None:
        factor = np.broadcast_to(np.asarray(inflate, dtype=float).ravel(), rate.shape)
        reps = rate + (reps - rate) * np.sqrt(factor)
    units = (flat_m > 0).sum(axis=0)
    n_eff = effective_count(rate, reps, trials, units, floor=COUNTS_DEFF_FLOOR)
    bounds = rate_bounds(rate, reps, trials, n_eff, level=level, interval=interval)  # (rest, 2)
    if interval == "effective":
        var, var_reps = ratio_variances(draws, flat_e, flat_m)
        if inflate is not None:
            var, var_reps = var * factor, var_reps * factor
        bounds = studentized_union(bounds, rate, reps, var, var_reps, level=level)
    shape = tuple(e.sizes[d] for d in other)
    coords = {k: v for k, v in e.coords.items() if dim not in v.dims}
    rate_da = xr.DataArray(rate.reshape(shape), dims=other, coords=coords)
    bound_da = xr.DataArray(
        bounds.reshape((*shape, 2)), dims=(*other, "bound"), coords={**coords, "bound": ["lower", "upper"]}
    )
    out = xr.Dataset(
        {"rate": rate_da, "rate_interval": bound_da,
         "n_eff": xr.DataArray(n_eff.reshape(shape), dims=other, coords=coords)},
        attrs={
            "method": f"subject bootstrap over {dim} (all of an individual's attempts together)",
            "interval": (INTERVAL_TEXT[interval].replace("floored at 1", f"floored at {COUNTS_DEFF_FLOOR:g}")
                         + (STUDENTIZED_TEXT if interval == "effective" else "")),
            "level": level,
            "n_replicates": n_replicates,
        },
    )
    out["rate_bound_kind"] = xr.DataArray(bound_kind(rate).reshape(shape), dims=other, coords=coords)
    return out


def _rate_replicates(errors, attempts, dim, n_replicates, seed, draws=False):
    """Replicate rates ``(B, rest)``, point rates, trials; and the aligned counts (a Dataset ``e``, ``m``).

    With ``draws=True`` also the draw counts ``(B, n)`` of the individuals.
    """
    errors, attempts = xr.broadcast(errors, attempts)
    other = [d for d in errors.dims if d != dim]
    both = xr.Dataset({"e": errors.transpose(dim, *other), "m": attempts.transpose(dim, *other)})
    n = both.sizes[dim]
    w = _counts(subject_draws(n, n_replicates, seed=seed), n)  # (B, n)
    flat_e = np.asarray(both["e"].values, dtype=np.float32).reshape(n, -1)
    flat_m = np.asarray(both["m"].values, dtype=np.float32).reshape(n, -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (w @ flat_e).astype(np.float64) / (w @ flat_m).astype(np.float64)  # (B, rest)
        trials = flat_m.sum(axis=0, dtype=np.float64)
        rate = flat_e.sum(axis=0, dtype=np.float64) / trials
    if draws:
        return both, other, reps, rate, trials, w
    return both, other, reps, rate, trials


def _per_subject(values: np.ndarray, subjects: np.ndarray, weights=None):
    """Sum rows of ``values`` (probe, ...) per subject: (individual, ...) and the subject labels."""
    codes, labels = pd.factorize(subjects, sort=True)  # the order of the data is no matter
    out = np.zeros((len(labels), *values.shape[1:]))
    np.add.at(out, codes, values)
    return out, labels


def cmc_interval(
    obj, *, max_rank: int | None = None, n_replicates: int = 2000, level: float = 0.95, seed=0,
    interval: str = "effective", simultaneous: bool = False, gallery_variance: bool = True,
) -> xr.Dataset:
    """The CMC with pointwise subject-bootstrap intervals (closed set, Annex F ties).

    Per subject: its closed-set searches and, at each rank, how many found
    the mate at or below it (a tied mate counts its Annex F share). Whole
    subjects are resampled (:func:`bootstrap_rate_interval`); the same
    replicates serve every rank.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or its outcome cube (with a ``subject`` coordinate).
    max_rank, n_replicates, level, seed : keyword-only
    interval : {"effective", "percentile"}, keyword-only
        As in :func:`bootstrap_rate_interval`; where every search finds its
        mate by a rank the bound is one-sided (lower), on the subjects.
    simultaneous : bool, keyword-only
        Also give ``cmc_band``, a family-wise band over the ranks: the
        whole CMC inside with probability about ``level`` (the studentised
        max-modulus envelope of the same replicates on the probit scale,
        never narrower than the pointwise interval; attrs ``band``).
    gallery_variance : bool, keyword-only
        Add the gallery subjects' share of the variance (default): every
        search meets the same enrolled subjects, and one who attracts many
        searches ("lamb") moves them all, which resampling the searches'
        subjects cannot show (coverage 0.82-0.86 without it, with strong
        subject effects; ``benchmarks/COVERAGE.md``). A method-of-moments
        variance for crossed probe and gallery subjects widens the
        bootstrap interval (see ``bioxr/bootstrap/_gallery.py``). Needs the
        scores: from an outcome cube or a comparison list it is left out,
        and attrs ``gallery_variance`` says so.

    Returns
    -------
    xarray.Dataset
        ``cmc`` over ``rank`` and ``cmc_interval`` over ``("rank", "bound")``;
        ``n_probes``, ``n_subjects``; ``cmc_bound_kind`` over ``rank``;
        attrs method, interval, level, tie rule.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    >>> res = bioxr.bootstrap.cmc_interval(cube, max_rank=3, n_replicates=200, seed=1)
    >>> res.cmc_interval.dims
    ('rank', 'bound')
    """
    from ..identification import _outcome_cube, cmc_curve

    ds = _outcome_cube(obj, ranks_only=True)
    curve = cmc_curve(ds, max_rank=max_rank)
    ranks = curve["rank"].values
    lo = np.asarray(ds["mated_rank_min"].values, dtype=float).ravel()
    hi = np.asarray(ds["mated_rank_max"].values, dtype=float).ravel()
    subj = np.asarray(ds["subject"].broadcast_like(ds["mated_rank_min"]).values).ravel()
    valid = ~np.isnan(lo)
    share = tie_share(lo[valid, None], hi[valid, None], ranks[None, :])
    found, labels = _per_subject(share, subj[valid])
    searches, _ = _per_subject(np.ones(valid.sum()), subj[valid])
    found_da = xr.DataArray(found, dims=("individual", "rank"), coords={"rank": ranks})
    searches_da = xr.DataArray(searches, dims="individual")
    level = check_level(level)
    check_interval(interval)
    n_replicates = check_replicates(n_replicates, level=level)
    if max_rank is not None:
        check_rank(max_rank, "max_rank")
    warn_design(found_da, searches_da, "individual", variance_based=interval == "effective",
                what="the subject-bootstrap CMC interval")
    inflate, gallery_text = None, "not requested (gallery_variance=False)"
    if gallery_variance:
        gal = Gallery.from_cube(obj, ds["mated_rank_min"])
        if gal is None:
            gallery_text = GALLERY_MISSING
        else:
            rows = np.flatnonzero(valid)
            mate = gal.mate[rows]
            mated = np.where(mate >= 0, gal.best[rows, np.maximum(mate, 0)], np.nan)
            inflate = inflation(gal, rows, np.repeat(mated[:, None], ranks.size, axis=1), ranks - 1, share)
            gallery_text = GALLERY_TEXT
    boot = _rate_interval(found_da, searches_da, "individual", n_replicates, level, seed, interval, inflate)
    out = xr.Dataset(
        {
            "cmc": curve["cmc"],
            "cmc_interval": boot["rate_interval"].transpose("rank", "bound"),
            "cmc_bound_kind": boot["rate_bound_kind"],
            "n_probes": curve["n_probes"],
            "n_subjects": len(labels),
        },
        attrs={**boot.attrs, "unit": "subject", "tie_rule": curve.attrs["tie_rule"], "seed": str(seed),
               **{k: curve.attrs[k] for k in ("candidate_list_length", "rank_unit") if k in curve.attrs},
               "band": "pointwise in rank, subjects resampled with all their searches",
               "gallery_variance": gallery_text},
    )
    if simultaneous:
        from .._core import simultaneous_band

        _, _, reps, _, _ = _rate_replicates(found_da, searches_da, "individual", boot.attrs["n_replicates"], seed)
        band = simultaneous_band(
            xr.DataArray(reps, dims=("replicate", "rank"), coords={"rank": ranks}), curve["cmc"], level=boot.attrs["level"],
            along="rank", n=boot["n_eff"], floor=out["cmc_interval"],
        )
        out["cmc_band"] = band
    return out


def open_set_interval(
    obj,
    threshold,
    *,
    rank: int = 1,
    impostors: str = "non-enrolled",
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
    interval: str = "effective",
    gallery_variance: bool = True,
) -> xr.Dataset:
    """DIR and FPIR at thresholds with subject-bootstrap intervals (open set).

    Mated searches are grouped by their subject and impostor searches by
    theirs; whole subjects are resampled on each side (the same seed draws
    both). See :func:`bioxr.identification.open_set_rates` for the rates.

    ``interval`` as in :func:`bootstrap_rate_interval` (where no impostor
    search raises an alarm, the FPIR bound is one-sided on the impostor
    subjects). ``gallery_variance`` as in :func:`cmc_interval`, for the
    FPIR: an enrolled subject who draws alarms from many impostor searches
    moves them all (coverage 0.89 without it, with strong subject effects).

    Returns
    -------
    xarray.Dataset
        ``dir``, ``fpir`` over ``threshold``; ``dir_interval``,
        ``fpir_interval`` over ``("threshold", "bound")``; ``dir_bound_kind``,
        ``fpir_bound_kind``; attrs.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    >>> res = bioxr.bootstrap.open_set_interval(cube, [1.0, 2.0], impostors="all", n_replicates=200, seed=1)
    >>> res.fpir_interval.dims
    ('threshold', 'bound')
    """
    from ..identification import _impostor_scores, _outcome_cube, _Probes, open_set_rates

    rank = check_rank(rank)
    ds = _outcome_cube(obj, ranks_only=False)
    rates = open_set_rates(ds, np.atleast_1d(threshold), rank=rank, impostors=impostors)
    probes = _Probes(ds, None, ("mated_rank_min", "mated_rank_max", "mated_score", "nonmated_best"))
    enrolled, use = _impostor_scores(probes, impostors)
    enrolled, use = enrolled[0], use[0]
    subj = np.asarray(ds["subject"].broadcast_like(ds["mated_rank_min"]).values).ravel()
    t = rates["threshold"].values
    sign = -1.0 if ds.attrs.get("score_kind", "similarity") == "distance" else 1.0
    weight = tie_share(probes.arrays["mated_rank_min"][0], probes.arrays["mated_rank_max"][0], rank)
    with np.errstate(invalid="ignore"):
        hit = (sign * probes.arrays["mated_score"][0][:, None] >= sign * t) * weight[:, None]
        alarm = (sign * probes.arrays["nonmated_best"][0][:, None] >= sign * t).astype(float)
    level = check_level(level)
    check_interval(interval)
    n_replicates = check_replicates(n_replicates, level=level)
    gal = Gallery.from_cube(obj, ds["mated_rank_min"]) if gallery_variance else None
    gallery_text = ("not requested (gallery_variance=False)" if not gallery_variance
                    else GALLERY_MISSING if gal is None else GALLERY_TEXT + "; FPIR only")
    out = {}
    for name, rows, values in (("dir", enrolled, hit), ("fpir", use, alarm)):
        num, _ = _per_subject(values[rows], subj[rows])
        den, _ = _per_subject(np.ones(rows.sum()), subj[rows])
        num_da = xr.DataArray(num, dims=("individual", "threshold"), coords={"threshold": t})
        den_da = xr.DataArray(den, dims="individual")
        warn_design(num_da, den_da, "individual", variance_based=interval == "effective",
                    what=f"the subject-bootstrap {name.upper()} interval")
        inflate = None
        if name == "fpir" and gal is not None and rows.any():
            idx = np.flatnonzero(rows)
            levels = np.broadcast_to(np.nextafter(sign * t, -np.inf), (idx.size, t.size))  # beats: best >= t
            inflate = inflation(gal, idx, levels, np.zeros(t.size, dtype=int), 1.0 - values[rows])
        boot = _rate_interval(num_da, den_da, "individual", n_replicates, level, seed, interval, inflate)
        out[name] = rates[name]
        out[f"{name}_interval"] = boot["rate_interval"].transpose("threshold", "bound")
        out[f"{name}_bound_kind"] = boot["rate_bound_kind"]
    result = xr.Dataset(out, attrs={**rates.attrs, "method": "subject bootstrap (searches grouped by subject)",
                                    "interval": boot.attrs["interval"], "level": level,
                                    "n_replicates": n_replicates, "seed": str(seed),
                                    "gallery_variance": gallery_text})
    return result.isel(threshold=0) if np.ndim(threshold) == 0 else result
