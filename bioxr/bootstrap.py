"""Subject-level bootstrap by sufficient statistics (METHODS.md section 7).

Comparisons of one subject are correlated, so the bootstrap resamples
subjects, not comparisons. Each subject's errors are counted once at every
threshold of a grid; a replicate is then a weighted sum with multinomial
weights (how often each subject was drawn), one matrix product for all
replicates:

- mated: ``FNMR_b(t) = sum_i w_bi e_i(t) / sum_i w_bi m_i``;
- non-mated: a comparison of probe subject ``a`` with reference subject
  ``c`` is in the replicate once for every pair of draws, so it takes the
  weight ``w_a w_c``: ``FMR_b(t) = sum_ac w_ba w_bc f_ac(t) / sum_ac w_ba
  w_bc n_ac``.

This is exactly what resampling the subjects and recounting their scores
gives (a test checks it with the same draws), at a fraction of the cost.
With ``two_level=True`` each drawn subject's mated attempts are resampled
too (subjects, then their samples).

The rates are exact at the grid's thresholds; curves and bands are drawn
through them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ._core import FewReplicatesWarning, check_level, check_replicates, check_targets, flat_comparisons, tie_share
from .simulate import _entropy, _rng

__all__ = ["FewReplicatesWarning", "subject_draws", "bootstrap_replicates", "bootstrap_curve", "fnmr_at_fmr_interval", "eer_interval", "bootstrap_rate_interval", "cmc_interval", "open_set_interval"]

_CHUNK = 256  # replicates per block of the non-mated products


def subject_draws(n_units: int, n_replicates: int, *, seed=0) -> np.ndarray:
    """Indices of the units drawn, with replacement, for each replicate.

    Returns an ``(n_replicates, n_units)`` int array; the bootstrap uses the
    counts of each index per row. Seeded: the same seed gives the same draws.

    Examples
    --------
    >>> from bioxr.bootstrap import subject_draws
    >>> subject_draws(4, 2, seed=1).shape
    (2, 4)
    """
    rng = _rng(_entropy(seed), 7)
    return rng.integers(0, n_units, size=(n_replicates, n_units), dtype=np.int32)


def _counts(draws: np.ndarray, n_units: int) -> np.ndarray:
    """How often each unit was drawn, per replicate (float32: small integers, exact)."""
    out = np.empty((draws.shape[0], n_units), dtype=np.float32)
    for r, row in enumerate(draws):
        out[r] = np.bincount(row, minlength=n_units)
    return out


def _default_grid(mated: np.ndarray, nonmated: np.ndarray, size: int = 200) -> np.ndarray:
    """Every distinct score if few, else mated quantiles and log-spaced non-mated tail quantiles.

    Failed comparisons (scores of -inf) are never grid points.
    """
    mated, nonmated = mated[np.isfinite(mated)], nonmated[np.isfinite(nonmated)]
    scores = np.unique(np.concatenate([mated, nonmated]))
    if scores.size <= 4 * size:
        return scores
    q_m = np.quantile(mated, np.linspace(0, 1, size))
    fmr = np.geomspace(max(1.0 / max(nonmated.size, 1), 1e-7), 1.0, size)
    q_n = np.quantile(nonmated, 1 - fmr)
    return np.unique(np.concatenate([q_m, q_n]))


class _Stats:
    """Per-unit sufficient statistics at a threshold grid."""

    def __init__(self, data, thresholds, unit: str, failure_policy: str = "exclude"):
        if unit != "subject":
            raise ValueError("only unit='subject' is supported: subjects are what both sides share.")
        scores, p_unit, r_unit, mated, self.kind = flat_comparisons(
            data, failure_policy="exclude" if failure_policy == "iso" else failure_policy)
        sign = -1.0 if self.kind == "distance" else 1.0  # similarity orientation
        # units: the sorted union of subjects on both sides (the order of the data is no matter); int32 codes,
        # and every large temporary freed as soon as it is used: memory stays a few times the comparisons
        units = pd.Index(pd.unique(np.concatenate([pd.unique(p_unit), pd.unique(r_unit)]))).sort_values()
        self.units = np.asarray(units)
        self.n_units = len(units)
        pu = units.get_indexer(p_unit).astype(np.int32)
        ru = units.get_indexer(r_unit).astype(np.int32)
        del p_unit, r_unit
        m_scores, m_unit = sign * scores[mated], pu[mated]
        nonmated = ~mated
        n_scores = scores[nonmated]
        if sign < 0:
            np.negative(n_scores, out=n_scores)
        del scores
        if m_scores.size == 0 or n_scores.size == 0:
            raise ValueError("the bootstrap needs both mated and non-mated comparisons.")
        t = None if thresholds is None else np.atleast_1d(np.asarray(thresholds, dtype=float))
        grid = _default_grid(m_scores, n_scores) if t is None else np.sort(sign * t)
        self.grid = grid  # similarity orientation, ascending
        self.thresholds = sign * grid
        k = grid.size
        # mated: errors (score < t) of unit i at grid point j, i.e. j >= b
        b = np.searchsorted(grid, m_scores, side="right")
        hist = np.zeros((self.n_units, k + 1), dtype=np.float32)
        np.add.at(hist, (m_unit, b), 1.0)
        self.mated_errors = np.cumsum(hist, axis=1)[:, :k]
        del hist
        self.attempts = np.bincount(m_unit, minlength=self.n_units).astype(np.float32)
        self.m_scores, self.m_unit = m_scores, m_unit
        # non-mated: a false match (score >= t) at grid point j iff j < b; aggregate by (bin, pair)
        u2 = np.int64(self.n_units) * self.n_units
        key = np.searchsorted(grid, n_scores, side="right").astype(np.int64)
        del n_scores
        key *= u2
        key += pu[nonmated].astype(np.int64) * self.n_units
        key += ru[nonmated]
        del pu, ru, nonmated
        # entries sorted by bin (then pair), so per-bin sums are one reduceat
        uniq, counts = np.unique(key, return_counts=True)
        del key
        self.count_f32 = counts.astype(np.float32)
        del counts
        bins = uniq // u2
        uniq -= bins * u2  # the pair
        self.pair_a = (uniq // self.n_units).astype(np.int32)
        self.pair_c = (uniq % self.n_units).astype(np.int32)
        del uniq
        self.bin_starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
        self.bin_ids = bins[self.bin_starts]
        del bins
        self.iso = None
        if failure_policy == "iso":
            self.iso = self._iso_units(data)

    def _iso_units(self, data):
        """Per subject: references, failed references, probes, failed probes (for FTE_b and FTA_b)."""
        from ._core import Grouped

        groups = Grouped(data, None, failure_policy="iso")
        if not groups.has_failures:
            return None
        index = pd.Index(self.units)
        out = []
        for table in groups.unit_failure_table():
            code = index.get_indexer(table["subject"].to_numpy())
            ok = code >= 0  # units of subjects with no counted comparison cannot be resampled
            total = np.bincount(code[ok], minlength=self.n_units).astype(np.float64)
            failed = np.bincount(code[ok], weights=table["failed"].to_numpy()[ok], minlength=self.n_units)
            out += [failed, total]
        return out  # fe, n_ref, fa, n_probe

    def generalize(self, w, fmr, fnmr):
        """Replicate rates into GFAR and GFRR with each replicate's own FTE and FTA (policy "iso")."""
        if self.iso is None:
            return fmr, fnmr
        fe, n_ref, fa, n_probe = self.iso
        w = np.asarray(w, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            fte = np.nan_to_num((w @ fe) / (w @ n_ref))[:, None]
            fta = np.nan_to_num((w @ fa) / (w @ n_probe))[:, None]
        c = (1 - fte) * (1 - fta)
        return c * fmr, fte + (1 - fte) * fta + c * fnmr

    def fnmr(self, w: np.ndarray, two_level_rng=None) -> np.ndarray:
        if two_level_rng is None:
            w32 = np.asarray(w, dtype=np.float32)  # integer counts: exact in float32 up to 2**24
            return (w32 @ self.mated_errors).astype(np.float64) / (w32 @ self.attempts).astype(np.float64)[:, None]
        return self._fnmr_two_level(w, two_level_rng)

    def _fnmr_two_level(self, w, rng):
        """Resample each drawn subject's attempts too: attempt weights within subject."""
        order = np.argsort(self.m_unit, kind="stable")
        unit_sorted = self.m_unit[order]
        starts = np.searchsorted(unit_sorted, np.arange(self.n_units))
        sizes = self.attempts.astype(np.int64)
        out = np.empty((w.shape[0], self.grid.size))
        score_order = np.argsort(self.m_scores[order], kind="stable")
        pos = np.searchsorted(self.m_scores[order][score_order], self.grid, side="left")
        for r in range(w.shape[0]):
            draws = starts[unit_sorted] + (rng.random(unit_sorted.size) * sizes[unit_sorted]).astype(np.int64)
            within = np.bincount(draws, minlength=unit_sorted.size).astype(np.float64)
            weight = within * w[r, unit_sorted]
            csum = np.concatenate([[0.0], np.cumsum(weight[score_order])])
            out[r] = csum[pos] / weight.sum()
        return out

    def fmr(self, w: np.ndarray) -> np.ndarray:
        """FMR per replicate: pair weights w_a * w_c, summed per grid bin, then over bins >= j."""
        wt = np.ascontiguousarray(w.T, dtype=np.float32)  # (units, replicates): rows gather fast
        out = np.empty((w.shape[0], self.grid.size))
        # replicates per block: each (entries x block) temporary stays under about 16 MiB
        chunk = int(max(1, min(_CHUNK, (1 << 22) // max(self.pair_a.size, 1))))
        for s in range(0, w.shape[0], chunk):
            block = wt[:, s : s + chunk]
            vals = block[self.pair_a] * block[self.pair_c]  # (entries, chunk), exact small integers
            vals *= self.count_f32[:, None]
            per_bin = np.zeros((self.grid.size + 1, vals.shape[1]))
            per_bin[self.bin_ids] = np.add.reduceat(vals, self.bin_starts, axis=0, dtype=np.float64)
            suffix = np.cumsum(per_bin[::-1], axis=0)[::-1]  # sum over bins >= j
            out[s : s + chunk] = (suffix[1:] / suffix[0]).T
        return out


def bootstrap_replicates(
    cube: xr.DataArray,
    *,
    thresholds=None,
    n_replicates: int = 2000,
    seed=0,
    unit: str = "subject",
    two_level: bool = False,
    progress: bool = False,
    failure_policy: str = "exclude",
) -> xr.Dataset:
    """FMR and FNMR of every bootstrap replicate at a grid of thresholds.

    Parameters
    ----------
    cube : xarray.DataArray or xarray.Dataset
        A score cube (in memory), or a comparison list: a Dataset over a
        ``comparison`` dimension with ``score``, ``subject`` and
        ``reference_subject`` (for sparse designs where each probe meets
        only a few references).
    thresholds : array_like, optional, keyword-only
        The grid; default every distinct score when there are few, else
        about 400 points: quantiles of the mated scores and log-spaced
        FMR levels of the non-mated ones.
    n_replicates : int, keyword-only
    seed : int, SeedSequence or Generator, keyword-only
    unit : str, keyword-only
        What is resampled: ``"subject"``.
    two_level : bool, keyword-only
        Also resample each drawn subject's mated attempts.
    progress : bool, keyword-only
        Show a progress bar (tqdm: a widget in notebooks).
    failure_policy : {"exclude", "nist", "iso"}, keyword-only
        How failed enrolments and acquisitions count: left out; (NIST) as
        comparisons never accepted, so a mated one is an error at every
        threshold; or (ISO) through the generalized rates, each replicate
        with the FTE and FTA of its own resampled subjects. Failures are
        resampled with their subjects.

    Returns
    -------
    xarray.Dataset
        ``fmr`` and ``fnmr`` over ``("replicate", "threshold")``, and the
        point estimates ``fmr_point``, ``fnmr_point`` over ``threshold``.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    >>> reps = bioxr.bootstrap.bootstrap_replicates(cube, n_replicates=50, seed=1)
    >>> reps.fnmr.dims
    ('replicate', 'threshold')
    """
    n_replicates = check_replicates(n_replicates, minimum=1)
    stats = _Stats(cube, thresholds, unit, failure_policy)
    root = _entropy(seed)
    draws = subject_draws(stats.n_units, n_replicates, seed=root)
    weights = _counts(draws, stats.n_units)
    ones = np.ones((1, stats.n_units), dtype=np.float32)
    rng2 = _rng(root, 11) if two_level else None
    fnmr = np.empty((n_replicates, stats.grid.size))
    fmr = np.empty_like(fnmr)
    bar = _progress_bar(n_replicates, progress)
    step = 250
    for s in range(0, n_replicates, step):
        w = weights[s : s + step]
        fmr[s : s + step], fnmr[s : s + step] = stats.generalize(w, stats.fmr(w), stats.fnmr(w, rng2))
        if bar is not None:
            bar.update(w.shape[0])
    if bar is not None:
        bar.close()
    t = stats.thresholds
    order = np.argsort(t)
    point_fmr, point_fnmr = stats.generalize(ones, stats.fmr(ones), stats.fnmr(ones))
    coords = {"threshold": t[order]}
    ds = xr.Dataset(
        {
            "fmr": (("replicate", "threshold"), fmr[:, order]),
            "fnmr": (("replicate", "threshold"), fnmr[:, order]),
            "fmr_point": ("threshold", point_fmr[0][order]),
            "fnmr_point": ("threshold", point_fnmr[0][order]),
        },
        coords=coords,
        attrs={
            "method": "subject bootstrap by sufficient statistics (METHODS.md section 7)",
            "unit": unit,
            "two_level": int(two_level),
            "n_replicates": n_replicates,
            "n_units": stats.n_units,
            "impostor_weights": "w_a * w_c for probe subject a and reference subject c",
            "score_kind": stats.kind,
            "failure_policy": failure_policy,
        },
    )
    return ds


def _progress_bar(total: int, wanted: bool):
    if not wanted:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with papermill
        return None
    return tqdm(total=total, desc="bootstrap replicates")


def _percentile_bounds(rep: xr.DataArray, level: float) -> xr.DataArray:
    alpha = (1 - check_level(level)) / 2
    q = rep.quantile([alpha, 1 - alpha], dim="replicate", skipna=True)
    q = q.rename(quantile="bound").assign_coords(bound=["lower", "upper"])
    return q.transpose(*[d for d in q.dims if d != "bound"], "bound")


def bootstrap_curve(
    cube: xr.DataArray,
    *,
    thresholds=None,
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
    unit: str = "subject",
    two_level: bool = False,
    progress: bool = False,
    failure_policy: str = "exclude",
) -> xr.Dataset:
    """FMR and FNMR with percentile bootstrap intervals at a grid of thresholds.

    The bands of a DET or ROC curve. Parameters as in
    :func:`bootstrap_replicates`, plus ``level``.

    Returns
    -------
    xarray.Dataset
        ``fmr``, ``fnmr`` over ``threshold``; ``fmr_interval``,
        ``fnmr_interval`` over ``("threshold", "bound")``; attrs method,
        level, n_replicates, seed.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    >>> band = bioxr.bootstrap.bootstrap_curve(cube, n_replicates=100, seed=2)
    >>> bool((band.fnmr_interval.sel(bound="lower") <= band.fnmr).all())
    True
    """
    reps = bootstrap_replicates(
        cube, thresholds=thresholds, n_replicates=n_replicates, seed=seed, unit=unit, two_level=two_level, progress=progress,
        failure_policy=failure_policy,
    )
    out = xr.Dataset(
        {
            "fmr": reps.fmr_point,
            "fnmr": reps.fnmr_point,
            "fmr_interval": _percentile_bounds(reps.fmr, level),
            "fnmr_interval": _percentile_bounds(reps.fnmr, level),
        },
        attrs={**reps.attrs, "interval": "percentile", "level": level, "seed": str(seed)},
    )
    return out


def fnmr_at_fmr_interval(
    cube: xr.DataArray,
    fmr,
    *,
    thresholds=None,
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
    unit: str = "subject",
    two_level: bool = False,
    progress: bool = False,
    failure_policy: str = "exclude",
) -> xr.Dataset:
    """Percentile bootstrap interval of FNMR at FMR targets (a vertical DET band).

    In every replicate the threshold is the most lenient grid threshold
    whose FMR is at most the target, so both the threshold and the FNMR
    vary across replicates, as they do across repeated experiments.

    Returns
    -------
    xarray.Dataset
        ``fnmr`` (point, at the same rule on the full data) and
        ``fnmr_interval`` over ``("fmr_target", "bound")``.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=4, seed=0)
    >>> res = bioxr.bootstrap.fnmr_at_fmr_interval(cube, [0.05, 0.01], n_replicates=200, seed=3)
    >>> res.fnmr_interval.dims
    ('fmr_target', 'bound')
    """
    check_level(level)
    targets = check_targets(fmr, "fmr")
    reps = bootstrap_replicates(
        cube, thresholds=thresholds, n_replicates=n_replicates, seed=seed, unit=unit, two_level=two_level, progress=progress,
        failure_policy=failure_policy,
    )
    similarity = reps.attrs["score_kind"] == "similarity"
    # order grid points from lenient to strict
    fm = reps.fmr.values if similarity else reps.fmr.values[:, ::-1]
    fn = reps.fnmr.values if similarity else reps.fnmr.values[:, ::-1]
    fm0 = reps.fmr_point.values if similarity else reps.fmr_point.values[::-1]
    fn0 = reps.fnmr_point.values if similarity else reps.fnmr_point.values[::-1]
    point = np.empty(targets.size)
    per_rep = np.empty((fm.shape[0], targets.size))
    for j, f in enumerate(targets):
        ok = fm <= f  # FMR falls from lenient to strict: first True is the most lenient
        first = np.where(ok.any(axis=1), ok.argmax(axis=1), fm.shape[1] - 1)
        per_rep[:, j] = fn[np.arange(fn.shape[0]), first]
        k = int(np.argmax(fm0 <= f)) if (fm0 <= f).any() else fm0.size - 1
        point[j] = fn0[k]
    rep = xr.DataArray(per_rep, dims=("replicate", "fmr_target"), coords={"fmr_target": targets})
    out = xr.Dataset(
        {
            "fnmr": xr.DataArray(point, dims="fmr_target", coords={"fmr_target": targets}),
            "fnmr_interval": _percentile_bounds(rep, level),
        },
        attrs={**reps.attrs, "interval": "percentile", "level": level, "seed": str(seed),
               "operating_point": "most lenient grid threshold with FMR <= target, per replicate"},
    )
    return out.isel(fmr_target=0) if np.ndim(fmr) == 0 else out


def bootstrap_rate_interval(
    errors: xr.DataArray,
    attempts: xr.DataArray,
    *,
    dim: str = "individual",
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
) -> xr.Dataset:
    """Percentile bootstrap interval of a rate from per-individual counts.

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

    Returns
    -------
    xarray.Dataset
        ``rate`` and ``rate_interval`` (with a ``bound`` dim), the other
        dims kept; attrs method, level, n_replicates.

    Examples
    --------
    >>> import xarray as xr
    >>> from bioxr.bootstrap import bootstrap_rate_interval
    >>> e = xr.DataArray([0, 1, 0, 3, 0, 0, 1, 0], dims="individual")
    >>> m = xr.full_like(e, 5)
    >>> res = bootstrap_rate_interval(e, m, n_replicates=500, seed=0)
    >>> float(res.rate)
    0.125
    >>> bool(res.rate_interval.sel(bound="lower") < 0.125 < res.rate_interval.sel(bound="upper"))
    True
    """
    if dim not in errors.dims or dim not in attempts.dims:
        raise ValueError(f"errors and attempts need the dimension {dim!r}.")
    errors, attempts = xr.broadcast(errors, attempts)
    other = [d for d in errors.dims if d != dim]
    e = errors.transpose(dim, *other)
    m = attempts.transpose(dim, *other)
    n = e.sizes[dim]
    w = _counts(subject_draws(n, check_replicates(n_replicates), seed=seed), n)  # (B, n)
    flat_e = np.asarray(e.values, dtype=np.float32).reshape(n, -1)
    flat_m = np.asarray(m.values, dtype=np.float32).reshape(n, -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (w @ flat_e).astype(np.float64) / (w @ flat_m).astype(np.float64)  # (B, rest)
        alpha = (1 - check_level(level)) / 2
        bounds = np.nanquantile(reps, [alpha, 1 - alpha], axis=0)  # (2, rest)
        rate = flat_e.sum(axis=0, dtype=np.float64) / flat_m.sum(axis=0, dtype=np.float64)
    shape = tuple(e.sizes[d] for d in other)
    coords = {k: v for k, v in e.coords.items() if dim not in v.dims}
    rate_da = xr.DataArray(rate.reshape(shape), dims=other, coords=coords)
    interval = xr.DataArray(
        np.moveaxis(bounds.reshape((2, *shape)), 0, -1), dims=(*other, "bound"), coords={**coords, "bound": ["lower", "upper"]}
    )
    return xr.Dataset(
        {"rate": rate_da, "rate_interval": interval},
        attrs={
            "method": f"percentile bootstrap over {dim} (all of an individual's attempts together)",
            "level": level,
            "n_replicates": n_replicates,
        },
    )


def eer_interval(
    cube: xr.DataArray,
    *,
    method: str | None = None,
    convention: str = "bioxr",
    thresholds=None,
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
    unit: str = "subject",
    two_level: bool = False,
    progress: bool = False,
    failure_policy: str = "exclude",
) -> xr.Dataset:
    """The EER with a percentile subject-bootstrap interval.

    The point estimate is the exact EER (:func:`bioxr.verification.eer`,
    same ``method`` and ``convention``); each replicate's EER is computed
    by the same rule on its curve at the bootstrap grid (every distinct
    score when there are few, else about 400 thresholds), so replicate
    values carry the grid's resolution.

    Parameters
    ----------
    method : {"rocch", "interpolated", "nearest", "fvc2000"} or None, keyword-only
        As in :func:`bioxr.verification.eer`; None: the convention's own.
    convention : {"bioxr", "bob", "pyeer"}, keyword-only
        As in :func:`bioxr.verification.eer` (:data:`bioxr.conventions.EER`).

    Returns
    -------
    xarray.Dataset
        ``eer`` and ``eer_interval`` (``bound``); attrs method, level,
        n_replicates, eer_method, convention.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=3, seed=0)
    >>> res = bioxr.bootstrap.eer_interval(cube, n_replicates=200, seed=1)
    >>> lo, hi = res.eer_interval.values
    >>> bool(lo <= float(res.eer) <= hi)
    True
    """
    from . import eer as _eer
    from .verification import eer as exact_eer

    from .conventions import eer_rule

    check_level(level)
    method, ties = eer_rule(method, convention)

    reps = bootstrap_replicates(
        cube, thresholds=thresholds, n_replicates=n_replicates, seed=seed, unit=unit, two_level=two_level, progress=progress,
        failure_policy=failure_policy,
    )
    similarity = reps.attrs["score_kind"] == "similarity"
    fm = reps.fmr.values if similarity else reps.fmr.values[:, ::-1]
    fn = reps.fnmr.values if similarity else reps.fnmr.values[:, ::-1]
    # close each replicate's curve at both ends (everything accepted, nothing accepted)
    values = np.empty(fm.shape[0])
    for r in range(fm.shape[0]):
        x = np.concatenate([[1.0], fm[r], [0.0]])
        y = np.concatenate([[0.0], fn[r], [1.0]])
        values[r] = _eer.eer_point(x, y, method, ties)[0]
    point = exact_eer(cube, method=method, convention=convention, failure_policy=failure_policy)
    rep = xr.DataArray(values, dims="replicate")
    return xr.Dataset(
        {"eer": point.eer, "eer_interval": _percentile_bounds(rep, level)},
        attrs={**reps.attrs, "interval": "percentile", "level": level, "seed": str(seed), "eer_method": method,
               "convention": convention, "eer_convention": point.attrs["eer_convention"]},
    )


def _per_subject(values: np.ndarray, subjects: np.ndarray, weights=None):
    """Sum rows of ``values`` (probe, ...) per subject: (individual, ...) and the subject labels."""
    codes, labels = pd.factorize(subjects, sort=True)  # the order of the data is no matter
    out = np.zeros((len(labels), *values.shape[1:]))
    np.add.at(out, codes, values)
    return out, labels


def cmc_interval(
    obj, *, max_rank: int | None = None, n_replicates: int = 2000, level: float = 0.95, seed=0
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

    Returns
    -------
    xarray.Dataset
        ``cmc`` over ``rank`` and ``cmc_interval`` over ``("rank", "bound")``;
        ``n_probes``, ``n_subjects``; attrs method, level, tie rule.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    >>> res = bioxr.bootstrap.cmc_interval(cube, max_rank=3, n_replicates=200, seed=1)
    >>> res.cmc_interval.dims
    ('rank', 'bound')
    """
    from .identification import _outcome_cube, cmc_curve

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
    boot = bootstrap_rate_interval(found_da, searches_da, n_replicates=n_replicates, level=level, seed=seed)
    return xr.Dataset(
        {
            "cmc": curve["cmc"],
            "cmc_interval": boot["rate_interval"].transpose("rank", "bound"),
            "n_probes": curve["n_probes"],
            "n_subjects": len(labels),
        },
        attrs={**boot.attrs, "tie_rule": curve.attrs["tie_rule"], "seed": str(seed),
               **{k: curve.attrs[k] for k in ("candidate_list_length", "rank_unit") if k in curve.attrs},
               "interval": "percentile, pointwise in rank, subjects resampled with all their searches"},
    )


def open_set_interval(
    obj,
    threshold,
    *,
    rank: int = 1,
    impostors: str = "non-enrolled",
    n_replicates: int = 2000,
    level: float = 0.95,
    seed=0,
) -> xr.Dataset:
    """DIR and FPIR at thresholds with subject-bootstrap intervals (open set).

    Mated searches are grouped by their subject and impostor searches by
    theirs; whole subjects are resampled on each side (the same seed draws
    both). See :func:`bioxr.identification.open_set_rates` for the rates.

    Returns
    -------
    xarray.Dataset
        ``dir``, ``fpir`` over ``threshold``; ``dir_interval``,
        ``fpir_interval`` over ``("threshold", "bound")``; attrs.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=40, n_samples=3, seed=0)
    >>> res = bioxr.bootstrap.open_set_interval(cube, [1.0, 2.0], impostors="all", n_replicates=200, seed=1)
    >>> res.fpir_interval.dims
    ('threshold', 'bound')
    """
    from .identification import _impostor_scores, _outcome_cube, _Probes, open_set_rates

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
    out = {}
    for name, rows, values in (("dir", enrolled, hit), ("fpir", use, alarm)):
        num, _ = _per_subject(values[rows], subj[rows])
        den, _ = _per_subject(np.ones(rows.sum()), subj[rows])
        boot = bootstrap_rate_interval(
            xr.DataArray(num, dims=("individual", "threshold"), coords={"threshold": t}),
            xr.DataArray(den, dims="individual"),
            n_replicates=n_replicates, level=level, seed=seed,
        )
        out[name] = rates[name]
        out[f"{name}_interval"] = boot["rate_interval"].transpose("threshold", "bound")
    result = xr.Dataset(out, attrs={**rates.attrs, "method": "percentile subject bootstrap (searches grouped by subject)",
                                    "level": level, "n_replicates": n_replicates, "seed": str(seed)})
    return result.isel(threshold=0) if np.ndim(threshold) == 0 else result
