"""Per-subject sufficient statistics at a threshold grid, and the replicate engine.

Counted once, the errors of every subject (mated) and of every pair of
subjects (non-mated) at every grid threshold make each bootstrap replicate
a weighted sum (METHODS.md section 7). The same counts give the
method-of-moments variance of the FMR with crossed subjects (section 12),
which corrects the pigeonhole replicates.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._core import flat_comparisons
from ..simulate import _entropy, _rng

PIECE = 1 << 19  # entries per sparse product of the replicate variance (bounds its temporaries)
_REPLICATE_BLOCK = 1 << 20  # units x replicates per block of the replicate variance



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


GRID_SIZE = 200  # quantiles of each kind in the default grid


def _default_grid(mated: np.ndarray, nonmated: np.ndarray, size: int = GRID_SIZE) -> np.ndarray:
    """Every distinct score if few, else mated quantiles and log-spaced non-mated tail quantiles.

    Failed comparisons (scores of -inf) are never grid points.
    """
    mated, nonmated = mated[np.isfinite(mated)], nonmated[np.isfinite(nonmated)]
    scores = np.unique(np.concatenate([mated, nonmated]))
    if scores.size <= 4 * size:
        return scores
    q_m = np.quantile(mated, np.linspace(0, 1, size))
    q_n = np.quantile(nonmated, 1 - _fmr_levels(nonmated.size, size))
    return np.unique(np.concatenate([q_m, q_n]))


def _fmr_levels(n_nonmated: int, size: int) -> np.ndarray:
    return np.geomspace(max(1.0 / max(n_nonmated, 1), 1e-7), 1.0, size)


def _lazy_grid(source, small: dict, kept, size: int = GRID_SIZE) -> np.ndarray:
    """:func:`_default_grid` of a lazy cube or list, the same array, without loading its scores.

    ``small, kept`` are what :meth:`bioxr._core.blockstats.LazyComparisons.first_pass`
    returns. The distinct scores come from the first pass when few;
    otherwise the mated quantiles from the mated scores (which the first
    pass keeps where it ran) and the non-mated ones from exact order
    statistics (:meth:`~bioxr._core.blockstats.LazyComparisons.order_statistics`),
    interpolated as ``np.quantile`` does. Only the grid's points reach the client.
    """
    from .._core.blockstats import _sample, defer, fetch, linear_quantiles

    if small["distinct"] is not None:
        few = fetch(defer(_few_scores, kept, small["distinct"], 4 * size, keep=False))
        if few is not None:
            return few
    q_m = fetch(defer(_mated_quantiles, kept, size, keep=False))
    n = small["n_finite"]
    q = 1 - _fmr_levels(n, size)
    if n == 0 or small["stride"] == 1:  # the sample holds every finite non-mated score
        q_n = fetch(defer(_sample_quantiles, kept, q, keep=False))
    else:
        sample = defer(_sample, kept, keep=False)
        q_n = linear_quantiles(lambda ranks: source.order_statistics(ranks, sample, n), n, q)
    return np.unique(np.concatenate([q_m, q_n]))


def _finite_mated(kept):
    return kept["m_scores"][np.isfinite(kept["m_scores"])]


def _few_scores(kept, distinct, cap):
    scores = np.unique(np.concatenate([_finite_mated(kept), distinct]))
    return scores if scores.size <= cap else None


def _mated_quantiles(kept, size):
    return np.quantile(_finite_mated(kept), np.linspace(0, 1, size))


def _sample_quantiles(kept, q):
    return np.quantile(kept["sample"], q)


def _check_thresholds(thresholds):
    t = None if thresholds is None else np.atleast_1d(np.asarray(thresholds, dtype=float))
    if t is not None and (t.ndim != 1 or np.isnan(t).any()):
        raise ValueError("thresholds must be a 1-D sequence of numbers (no NaN).")
    return t


class _Stats:
    """Per-unit sufficient statistics at a threshold grid.

    ``data`` in memory is flattened once (:func:`bioxr._core.flat_comparisons`);
    a lazy (dask-backed) cube or list is reduced blockwise where its blocks
    live (:mod:`bioxr._core.blockstats`), never loaded whole, with the same
    statistics element for element.
    """

    def __init__(self, data, thresholds, unit: str, failure_policy: str = "exclude"):
        _check_unit(unit)
        from .._core import blockstats

        if blockstats.is_lazy(data):
            vars(self).update(vars(blockstats.fetch(self.remote(data, thresholds, unit, failure_policy))))
            return
        policy = "exclude" if failure_policy == "iso" else failure_policy
        self._init_memory(data, thresholds, policy)
        self.iso = _iso_units(data, self.units) if failure_policy == "iso" else None

    @classmethod
    def remote(cls, data, thresholds, unit: str, failure_policy: str = "exclude"):
        """The statistics of a lazy cube or list, built where its blocks are: a dask Delayed (persisted).

        The passes of :mod:`bioxr._core.blockstats` run on the blocks and
        the statistics are assembled in a task on the workers, where they
        stay: a task given them (:func:`bioxr._core.blockstats.defer`)
        computes replicates there, and only its result travels. On an
        engine other than dask the passes read one block at a time and the
        statistics are returned built. Element for element the in-memory
        statistics.
        """
        from .._core.blockstats import LazyComparisons, defer

        _check_unit(unit)
        policy = "exclude" if failure_policy == "iso" else failure_policy
        source = LazyComparisons(data, policy)
        t = _check_thresholds(thresholds)
        small, kept = source.first_pass(grid=t is None, cap=4 * GRID_SIZE)
        if small["n_mated"] == 0 or small["n_nonmated"] == 0:
            raise ValueError("the bootstrap needs both mated and non-mated comparisons.")
        sign = source.sign
        grid = _lazy_grid(source, small, kept) if t is None else np.sort(sign * t)
        pairs, lut, units = source.pair_counts(grid, kept)
        iso = _iso_units(data, units) if failure_policy == "iso" else None
        return defer(_assembled, source.kind, grid, sign, units, kept, lut, pairs, iso)

    def _init_memory(self, data, thresholds, policy):
        scores, p_unit, r_unit, mated, self.kind = flat_comparisons(data, failure_policy=policy)
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
        t = _check_thresholds(thresholds)
        self._set_grid(_default_grid(m_scores, n_scores) if t is None else np.sort(sign * t), sign)
        self._set_mated(m_scores, m_unit)
        # non-mated: a false match (score >= t) at grid point j iff j < b; aggregate by (bin, pair)
        key = np.searchsorted(self.grid, n_scores, side="right").astype(np.int64)
        del n_scores
        key *= np.int64(self.n_units) * self.n_units
        key += pu[nonmated].astype(np.int64) * self.n_units
        key += ru[nonmated]
        del pu, ru, nonmated
        # entries sorted by bin (then pair), so per-bin sums are one reduceat
        uniq, counts = np.unique(key, return_counts=True)
        del key
        self._set_pairs(uniq, counts)

    def __sizeof__(self) -> int:  # what dask counts when the statistics travel (dask.sizeof falls back to this)
        arrays = [v for v in vars(self).values() if isinstance(v, np.ndarray)] + list(self.iso or [])
        return object.__sizeof__(self) + sum(a.nbytes for a in arrays)

    def _set_grid(self, grid, sign):
        self.grid = grid  # similarity orientation, ascending
        self.thresholds = sign * grid

    def _set_mated(self, m_scores, m_unit):
        """Errors (score < t) of unit i at grid point j, i.e. j >= b; attempts per unit."""
        k = self.grid.size
        b = np.searchsorted(self.grid, m_scores, side="right")
        hist = np.zeros((self.n_units, k + 1), dtype=np.float32)
        np.add.at(hist, (m_unit, b), 1.0)
        self.mated_errors = np.cumsum(hist, axis=1)[:, :k]
        del hist
        self.attempts = np.bincount(m_unit, minlength=self.n_units).astype(np.float32)
        self.m_scores, self.m_unit = m_scores, m_unit

    def _set_pairs(self, uniq, counts):
        from .._core.blockstats import pairs_from_keys

        for name, value in pairs_from_keys(uniq, counts, self.n_units).items():
            setattr(self, name, value)

    # ------------------------------------------------------------ counts
    @property
    def n_mated(self) -> float:
        return float(self.attempts.sum(dtype=np.float64))

    @property
    def n_nonmated(self) -> float:
        return float(self.count_f32.sum(dtype=np.float64))

    @property
    def mated_units(self) -> int:
        """Subjects with at least one mated comparison: the independent units of the FNMR."""
        return int((self.attempts > 0).sum())

    @property
    def nonmated_units(self) -> int:
        """Subjects in at least one non-mated comparison, on either side."""
        seen = np.zeros(self.n_units, dtype=bool)
        seen[self.pair_a] = True
        seen[self.pair_c] = True
        return int(seen.sum())

    def false_matches(self) -> np.ndarray:
        """False matches at each grid point (similarity-ascending order)."""
        per_bin = np.zeros(self.grid.size + 1)
        per_bin[self.bin_ids] = np.add.reduceat(self.count_f32.astype(np.float64), self.bin_starts)
        return np.cumsum(per_bin[::-1])[::-1][1:]

    def fmr_variance(self, parts: bool = False):
        """Method-of-moments variance of the FMR at each grid point, for crossed subjects.

        Two non-mated comparisons are correlated when they share a subject
        (on either side). With ``z_i = y_i - p`` (``y_i`` the false-match
        indicator), ``V = n / (n - 1) * (sum_s Z_s^2 - sum_u Z_u^2) / N^2``:
        ``Z_s`` sums ``z`` over the comparisons involving subject ``s``,
        ``Z_u`` over those of the unordered pair ``u`` (counted twice in the
        first sum). It is the sum of ``z_i z_j`` over every two comparisons
        that share a subject: the dyadic cluster-robust variance (Fafchamps
        & Gubert 2007; Aronow, Samii & Assenova 2015), the moment estimator
        of the U-statistic's ``4 zeta_1 / n + 2 zeta_2 / n^2`` (METHODS.md
        section 12). Without subject effects it is about ``p (1 - p) / N``,
        a third of the pigeonhole bootstrap's (Owen 2007).

        With ``parts``, also the pair part ``n / (n - 1) sum_u Z_u^2 / N^2``:
        the pigeonhole bootstrap's variance is about ``V`` plus twice it
        (its pair weights count each pair's own noise three times), and the
        degrees of freedom of ``V`` after Satterthwaite (1946), ``(sum_s
        Z_s^2)^2 / sum_s Z_s^4``: the observed fourth powers stand for the
        totals' variances squared, a conservative plug-in (about a third
        of the subjects when the totals are Gaussian, since ``E Z^4 = 3
        sigma^4``; near 1 or 2 where a few subjects hold the false
        matches; NaN where every ``Z_s`` is 0).
        """
        n, k = self.n_units, self.grid.size
        cnt = self.count_f32.astype(np.float64)
        a, c = self.pair_a, self.pair_c
        u = np.minimum(a, c).astype(np.int64) * n + np.maximum(a, c)
        _, u_code = np.unique(u, return_inverse=True)
        n_s = np.bincount(a, cnt, n) + np.bincount(c, cnt, n)
        n_u = np.bincount(u_code, cnt)
        big_n = cnt.sum()
        ss_ns, ss_nu = float(n_s @ n_s), float(n_u @ n_u)
        r = np.zeros(n)
        f = np.zeros(n_u.size)
        sr2 = srn = sf2 = sfn = total = 0.0
        ends = np.r_[self.bin_starts[1:], cnt.size]
        where = dict(zip(self.bin_ids.tolist(), zip(self.bin_starts.tolist(), ends.tolist())))
        out = np.empty(k)
        pair = np.empty(k)
        dof = np.empty(k)
        for b in range(k, 0, -1):  # false matches at grid point b - 1: the bins >= b
            if b in where:
                s, e = where[b]
                ce = cnt[s:e]
                d = np.bincount(a[s:e], ce, n) + np.bincount(c[s:e], ce, n)
                sr2 += 2 * float(r @ d) + float(d @ d)
                srn += float(d @ n_s)
                r += d
                uu, inv = np.unique(u_code[s:e], return_inverse=True)
                du = np.bincount(inv, ce)
                sf2 += 2 * float(f[uu] @ du) + float(du @ du)
                sfn += float(du @ n_u[uu])
                f[uu] += du
                total += float(ce.sum())
            p = total / big_n
            zs = sr2 - 2 * p * srn + p * p * ss_ns
            zu = sf2 - 2 * p * sfn + p * p * ss_nu
            out[b - 1] = (zs - zu) / big_n**2
            pair[b - 1] = zu / big_n**2
            if parts:  # the subjects' residual totals, directly (n numbers): no cancellation in the fourth powers
                z2 = (r - p * n_s) ** 2
                s4 = float(z2 @ z2)
                dof[b - 1] = float(z2.sum()) ** 2 / s4 if s4 > 0 else np.nan
        c = n / max(n - 1, 1)
        return (out * c, pair * c, dof) if parts else out * c

    def fnmr_variance_replicates(self, w: np.ndarray) -> np.ndarray:
        """Cluster-robust variance of each replicate's FNMR at each grid point, ``(replicates, grid)``.

        The FNMR is a ratio over independent subjects: ``V_b = n / (n - 1)
        sum_i w_i (e_i - p_b m_i)^2 / (sum_i w_i m_i)^2`` (Cochran 1977,
        6.9), ``e_i`` the errors and ``m_i`` the attempts of subject ``i``,
        ``n`` the subjects with mated comparisons; three weighted sums per
        replicate. ``w = 1`` gives the variance of the data.
        """
        w = np.asarray(w, dtype=np.float64)
        e = self.mated_errors.astype(np.float64)
        m = self.attempts.astype(np.float64)
        n = self.mated_units
        sm = w @ m
        with np.errstate(invalid="ignore", divide="ignore"):
            p = (w @ e) / sm[:, None]
            v = (w @ (e * e)) - 2 * p * (w @ (e * m[:, None])) + p * p * (w @ (m * m))[:, None]
            return np.maximum(v, 0.0) / (sm**2)[:, None] * (n / max(n - 1, 1))

    def fmr_variance_replicates(self, w: np.ndarray) -> np.ndarray:
        """The moment variance of :meth:`fmr_variance` computed on each replicate, ``(replicates, grid)``.

        A replicate holds ``w_s`` copies of subject ``s``; copies are distinct
        subjects with no comparison between them, so the comparisons of probe
        subject ``a`` with reference subject ``c`` appear ``w_a w_c`` times.
        With ``R_s = sum_c w_c S_sc`` (``S`` the false matches of the
        unordered pair, both orders) and ``Q_s = sum_c w_c n_sc`` (its
        comparisons), ``V_b = n / (n - 1) * (sum_s w_s (R_s - p_b Q_s)^2 -
        sum_{a<c} w_a w_c (S_ac - p_b n_ac)^2) / N_b^2``: the same formula as
        on the data (``w = 1`` gives :meth:`fmr_variance`), from a few sums
        kept up to date while walking the grid from strict to lenient.
        """
        from scipy import sparse

        n, k = self.n_units, self.grid.size
        w = np.asarray(w, dtype=np.float64)
        cnt = self.count_f32
        a, c = self.pair_a, self.pair_c
        u_code, ua, uc = _unordered_pairs(a, c, n)
        n_u = np.bincount(u_code, cnt)
        ends = np.r_[self.bin_starts[1:], cnt.size]
        where = dict(zip(self.bin_ids.tolist(), zip(self.bin_starts.tolist(), ends.tolist())))

        def pairs(values):  # a sparse (units x units) matrix of unordered-pair values, one entry per pair
            return sparse.csr_matrix((values, (ua, uc)), shape=(n, n))

        nu = pairs(n_u)  # Q_s = (N + N^T) w: the transpose is a view, no symmetric copy
        nu2 = _maybe_dense(pairs(n_u * n_u))  # converted once, not per block of replicates
        out = np.empty((w.shape[0], k))
        chunk = int(max(1, min(w.shape[0], _REPLICATE_BLOCK // max(n, 1))))  # (units x block) float64: 8 MiB
        for s0 in range(0, w.shape[0], chunk):
            wt = np.ascontiguousarray(w[s0 : s0 + chunk].T)  # (units, block)
            q = nu @ wt
            q += nu.T @ wt
            big_n = 0.5 * np.einsum("sb,sb->b", wt, q)  # sum_u n_u w_a w_c: each pair seen from both sides
            a0 = np.einsum("ur,ur->r", wt, nu2 @ wt)
            swq2 = np.einsum("sb,sb,sb->b", wt, q, q)
            r = np.zeros_like(wt)
            s_u = np.zeros(n_u.size)
            f, p1, p2 = (np.zeros(wt.shape[1]) for _ in range(3))
            for b in range(k, 0, -1):  # false matches at grid point b - 1: the bins >= b
                if b in where:  # in pieces of at most PIECE entries (sequential updates of s_u: the same sums)
                    s_b, e_b = where[b]
                    for s in range(s_b, e_b, PIECE):
                        e = min(s + PIECE, e_b)
                        ce = cnt[s:e].astype(np.float64)
                        uu, inv = np.unique(u_code[s:e], return_inverse=True)
                        du = np.bincount(inv, ce)
                        # one product: S (both orders) updates R_s; three pair sums as forms w^T D w
                        rows = np.concatenate([a[s:e], c[s:e], n + ua[uu], 2 * n + ua[uu], 3 * n + ua[uu]],
                                              dtype=np.int64 if 4 * n >= 2**31 else np.int32)
                        cols = np.concatenate([c[s:e], a[s:e], uc[uu], uc[uu], uc[uu]])
                        vals = np.concatenate([ce, ce, du, 2 * s_u[uu] * du + du * du, du * n_u[uu]])
                        y = sparse.csr_matrix((vals, (rows, cols)), shape=(4 * n, n)) @ wt
                        del rows, cols, vals
                        r += y[:n]
                        f += np.einsum("ur,ur->r", wt, y[n : 2 * n])
                        p2 += np.einsum("ur,ur->r", wt, y[2 * n : 3 * n])
                        p1 += np.einsum("ur,ur->r", wt, y[3 * n :])
                        s_u[uu] += du
                with np.errstate(invalid="ignore", divide="ignore"):
                    p = f / big_n
                zs = np.einsum("sb,sb,sb->b", wt, r, r) - 2 * p * np.einsum("sb,sb,sb->b", wt, r, q) + p * p * swq2
                zu = p2 - 2 * p * p1 + p * p * a0
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[s0 : s0 + chunk, b - 1] = (zs - zu) / big_n**2
        return out * n / max(n - 1, 1)

    # ------------------------------------------------------------ failures (policy "iso")
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

    # ------------------------------------------------------------ replicates
    def fnmr(self, w: np.ndarray, two_level_rng=None) -> np.ndarray:
        if two_level_rng is None:
            w32 = np.asarray(w, dtype=np.float32)  # integer counts: exact in float32 up to 2**24
            with np.errstate(invalid="ignore", divide="ignore"):  # a replicate with no mated comparison: NaN
                return (w32 @ self.mated_errors).astype(np.float64) / (w32 @ self.attempts).astype(np.float64)[:, None]
        return self._fnmr_two_level(w, two_level_rng)

    def _fnmr_two_level(self, w, rng):
        """Resample each copy of a drawn subject's attempts independently (the second stage).

        A subject drawn ``w_i`` times contributes ``w_i`` independent
        resamples of its ``m_i`` attempts: ``w_i m_i`` attempts drawn with
        replacement from its own.
        """
        order = np.argsort(self.m_unit, kind="stable")
        unit_sorted = self.m_unit[order]
        starts = np.searchsorted(unit_sorted, np.arange(self.n_units))
        sizes = self.attempts.astype(np.int64)
        scores_sorted = self.m_scores[order]
        score_order = np.argsort(scores_sorted, kind="stable")
        pos = np.searchsorted(scores_sorted[score_order], self.grid, side="left")
        out = np.empty((w.shape[0], self.grid.size))
        for r in range(w.shape[0]):
            copies = np.asarray(w[r], dtype=np.int64) * sizes  # draws per subject: w_i m_i
            owner = np.repeat(np.arange(self.n_units), copies)
            draws = starts[owner] + (rng.random(owner.size) * sizes[owner]).astype(np.int64)
            weight = np.bincount(draws, minlength=unit_sorted.size).astype(np.float64)
            csum = np.concatenate([[0.0], np.cumsum(weight[score_order])])
            out[r] = csum[pos] / weight.sum()
        return out

    def fmr(self, w: np.ndarray) -> np.ndarray:
        """FMR per replicate: pair weights ``w_a w_c`` summed per grid bin, then over the bins >= j.

        The pairs of bin ``b`` form a sparse matrix ``N_b`` (probe subject by
        reference subject; the keys are sorted by bin, probe and reference,
        so each bin's slice is already in CSR order), and its weighted false matches are
        ``w^T N_b w`` for every replicate at once: one sparse-times-dense
        product ``N_b W`` and a column-wise dot with ``W`` (a dense BLAS
        product where a bin holds more than an eighth of the ``n**2`` pairs). Counts and weights are small
        integers, so every sum is exact in float64 and the order of the sums
        changes nothing.
        """
        from scipy import sparse

        n, k = self.n_units, self.grid.size
        w = np.asarray(w, dtype=np.float64)
        out = np.empty((w.shape[0], k))
        ends = np.r_[self.bin_starts[1:], self.pair_a.size]
        probes = np.arange(n + 1)
        # replicates per block: (units x block) float64 products of at most about 64 MiB
        chunk = int(max(1, min(w.shape[0], (1 << 23) // max(n, 1))))
        for s0 in range(0, w.shape[0], chunk):
            wt = np.ascontiguousarray(w[s0 : s0 + chunk].T)  # (units, block)
            per_bin = np.zeros((k + 1, wt.shape[1]))
            for b, s, e in zip(self.bin_ids.tolist(), self.bin_starts.tolist(), ends.tolist()):
                rows, cols = self.pair_a[s:e], self.pair_c[s:e]
                counts = self.count_f32[s:e].astype(np.float64)
                per_bin[b] = _bilinear(sparse.csr_matrix((counts, cols, np.searchsorted(rows, probes)), shape=(n, n)), wt)
            suffix = np.cumsum(per_bin[::-1], axis=0)[::-1]  # sum over bins >= j
            with np.errstate(invalid="ignore", divide="ignore"):  # no non-mated comparison drawn: NaN
                out[s0 : s0 + chunk] = (suffix[1:] / suffix[0]).T
        return out


def _unordered_pairs(a: np.ndarray, c: np.ndarray, n: int):
    """Codes of the unordered pairs ``{a, c}`` (int32, ordered by ``min * n + max``) and each code's two subjects.

    A presence table over the ``n**2`` keys where that is at most four times
    the entries (no sort); ``np.unique`` otherwise.
    """
    key = np.minimum(a, c).astype(np.int32 if n * n < 2**31 else np.int64)
    key *= n
    key += np.maximum(a, c)
    if n * n <= 4 * max(a.size, 1):
        table = np.zeros(n * n, dtype=np.int32)
        table[key] = 1
        present = np.flatnonzero(table)
        np.cumsum(table, out=table)
        code = table[key]
        code -= 1
        del table
    else:
        present, code = np.unique(key, return_inverse=True)
        code = code.astype(np.int32)
    return code, (present // n).astype(np.int32), (present % n).astype(np.int32)


def _maybe_dense(matrix):
    """A sparse matrix as a dense array where more than an eighth of it is filled (BLAS is faster there)."""
    return matrix.toarray() if matrix.nnz > matrix.shape[0] * matrix.shape[1] // 8 else matrix


def _bilinear(matrix, wt: np.ndarray) -> np.ndarray:
    """``w^T M w`` for every column ``w`` of ``wt``: one product ``M W`` (dense BLAS where ``M`` is mostly full)."""
    return np.einsum("ur,ur->r", wt, _maybe_dense(matrix) @ wt)


def _check_unit(unit):
    if unit != "subject":
        raise ValueError("only unit='subject' is supported: subjects are what both sides share.")


def _assembled(kind, grid, sign, units, kept, lut, pairs, iso) -> _Stats:
    """The statistics from the passes' results (a task where they are kept; nothing is modified)."""
    stats = object.__new__(_Stats)
    stats.kind = kind
    stats._set_grid(grid, sign)
    stats.units = units
    stats.n_units = len(units)
    m_unit = kept["m_unit"] if lut is None else lut[kept["m_unit"]]
    stats._set_mated(kept["m_scores"], m_unit)
    for name, value in pairs.items():
        if name != "lut":
            setattr(stats, name, value)
    stats.iso = iso
    return stats


def _iso_units(data, units):
    """Per subject: references, failed references, probes, failed probes (for FTE_b and FTA_b), or None."""
    import inspect

    from .._core import Grouped

    # a lazy list's unit table comes from a pass over its partitions (bioxr._core.partitions), not loaded
    lazy = {"lazy": True} if "lazy" in inspect.signature(Grouped).parameters else {}
    groups = Grouped(data, None, failure_policy="iso", **lazy)
    if not groups.has_failures:
        return None
    index = pd.Index(units)
    out = []
    for table in groups.unit_failure_table():
        code = index.get_indexer(table["subject"].to_numpy())
        ok = code >= 0  # units of subjects with no counted comparison cannot be resampled
        total = np.bincount(code[ok], minlength=len(units)).astype(np.float64)
        failed = np.bincount(code[ok], weights=table["failed"].to_numpy()[ok], minlength=len(units))
        out += [failed, total]
    return out  # fe, n_ref, fa, n_probe


def _moment_corrected(reps: np.ndarray, point: np.ndarray, target_var: np.ndarray) -> np.ndarray:
    """Replicate FMR curves with their spread rescaled, point by point, to a target variance.

    ``p + (FMR_b - p) * sqrt(V_target / V_b)``; then made non-increasing
    along the grid (similarity-ascending) and kept in [0, 1].
    """
    dev = reps - point[None, :]
    v_boot = np.mean(dev**2, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.where(v_boot > 0, np.sqrt(np.maximum(target_var, 0.0) / v_boot), 1.0)
    out = point[None, :] + dev * factor[None, :]
    np.clip(out, 0.0, 1.0, out=out)
    return np.minimum.accumulate(out, axis=1)
