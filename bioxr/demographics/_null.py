"""The null distributions of the demographic tests: per-individual sums, draws, statistics.

Two nulls (:data:`NULLS`), both resampling whole individuals:

- ``"exchangeable"``: ``n`` individuals drawn with replacement from the
  pooled data and dealt into groups of the observed sizes (seeds/002);
- ``"equal-rate"``: within each group, individuals drawn with replacement
  from the group's exponentially tilted empirical distribution, the
  nearest (Kullback-Leibler) to the observed one whose attempt-weighted
  FNMR is the pooled FNMR ``p``: weights ``w_i ~ exp(t u_i)``, ``u_i = e_i -
  p m_i``, with ``t`` solving ``sum_i w_i u_i = 0`` (Efron 1981; Davison &
  Hinkley 1997, section 4.4). Each group keeps its own attempts per person
  and its own dispersion. A group whose individuals all lie on one side of
  ``p`` cannot be tilted to it: its counts are scaled by ``p / p_g``
  (uniform weights), and a group without errors stays without errors.

Statistics are computed from group sums with the groups on axis 1, shape
``(replicates, groups, slices)``; individuals are sorted by group so that
``numpy.add.reduceat`` forms the sums.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
import xarray as xr

from ..simulate import _entropy, _rng

NULLS = ("equal-rate", "exchangeable")
SMALL_GROUP = 50  # fewer individuals than this (with repeated attempts): the equal-rate level is not assured


class SmallGroupWarning(UserWarning):
    """A group has too few individuals for the equal-rate null to learn its spread from them."""

_BLOCK_ELEMENTS = 4_000_000  # gathered values per block of replicates (memory bound)
_DRAW_KEY = 11  # stream of the exchangeable draws under the root seed
_TILT_KEY = 12  # stream of the uniforms behind the equal-rate draws
_TILT_STEPS = 90  # bisection steps for the tilt on [-_TILT_SPAN, _TILT_SPAN] (u scaled to [-1, 1])
_TILT_SPAN = 700.0


def check_null(null) -> str:
    if null not in NULLS:
        raise ValueError(
            f"null={null!r}; choose 'equal-rate' (H0: every group has the same FNMR, each keeping its own attempts "
            "per person and correlation) or 'exchangeable' (H0: the groups are alike in everything, so individuals "
            "can be dealt among them at random; seeds/002)."
        )
    return null


class Prepared:
    """Per-individual counts sorted by group, flattened over the other dims (``K`` slices)."""

    def __init__(self, counts: xr.Dataset, group: Hashable, dim: Hashable):
        label = counts[group]
        codes, uniques = pd.factorize(np.asarray(label.values), sort=True, use_na_sentinel=True)
        if (codes < 0).any():
            raise ValueError(f"{int((codes < 0).sum())} individual(s) have no {group!r} label; drop them first.")
        if len(uniques) < 2:
            raise ValueError(
                f"only one group ({uniques[0]!r}) in {group!r}: a differential needs at least two groups."
            )
        e, m = xr.broadcast(counts["errors"], counts["attempts"])
        extra = tuple(d for d in e.dims if d != dim)
        e = e.transpose(dim, *extra)
        m = m.transpose(dim, *extra)
        self.extra = extra
        self.extra_shape = tuple(e.sizes[d] for d in extra)
        self.n_slices = int(np.prod(self.extra_shape)) if extra else 1
        self.order = np.argsort(codes, kind="stable")
        n = len(codes)
        self.e = np.asarray(e.values, dtype=float).reshape(n, self.n_slices)[self.order]
        self.m = np.asarray(m.values, dtype=float).reshape(n, self.n_slices)[self.order]
        self._stats = None
        self.sizes = np.bincount(codes, minlength=len(uniques))
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        self.n = n
        self.group = group
        self.labels = np.asarray(uniques)
        self.coords = {
            name: c.variable for name, c in e.coords.items() if c.dims and set(c.dims) <= set(extra)
        }
        self.coords.update({name: c.variable for name, c in e.coords.items() if not c.dims})

    # ------------------------------------------------------------- sums
    def exchangeable_sums(self, idx: np.ndarray):
        """Group sums ``(E, M, Q, H)`` of the individuals ``idx`` (replicates, n), shared by all slices."""
        if self._stats is None:
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.where(self.m > 0, self.e**2 / self.m, 0.0)
            self._stats = np.concatenate([self.e, self.m, q, (self.m > 0).astype(float)], axis=1)
        sums = np.add.reduceat(self._stats[idx], self.starts, axis=1)
        return tuple(np.split(sums, 4, axis=2))

    @staticmethod
    def moments(e: np.ndarray, m: np.ndarray) -> np.ndarray:
        """Per-individual ``(e, m, e^2, e m, m^2, [m > 0])`` stacked on a last axis: (n, K, 6)."""
        return np.stack([e, m, e * e, e * m, m * m, (m > 0).astype(float)], axis=-1)

    def moment_sums(self, x: np.ndarray):
        """Group sums ``(E, M, S_ee, S_em, S_mm, H)`` (replicates, G, K) of gathered moments (replicates, n, K, 6)."""
        sums = np.add.reduceat(x, self.starts, axis=1)
        return tuple(sums[..., j] for j in range(6))

    def observed(self, null: str) -> dict:
        if null == "exchangeable":
            sums = self.exchangeable_sums(np.arange(self.n)[None, :])
        else:
            sums = self.moment_sums(self.moments(self.e, self.m)[None])
        return {"sums": sums}

    # ------------------------------------------------------------- draws
    def exchangeable_null(self, n_replicates: int, seed):
        """Blocks of ``(first replicate, (E, M, Q, H))``: one stream whatever the block size."""
        rng = _rng(_entropy(seed), _DRAW_KEY)
        block = max(1, _BLOCK_ELEMENTS // (self.n * 4 * self.n_slices))
        for lo in range(0, n_replicates, block):
            b = min(block, n_replicates - lo)
            idx = rng.integers(0, self.n, size=(b, self.n), dtype=np.int64)
            yield lo, self.exchangeable_sums(idx)

    def equal_rate_null(self, n_replicates: int, seed):
        """Blocks of ``(first replicate, (E, M, S_ee, S_em, S_mm, H))`` from the tilted groups."""
        e_null, cum = self.tilted()
        rng = _rng(_entropy(seed), _TILT_KEY)
        k = self.n_slices
        block = max(1, _BLOCK_ELEMENTS // (self.n * 8 * k))
        table = self.moments(e_null, self.m).reshape(self.n * k, 6)
        for lo in range(0, n_replicates, block):
            b = min(block, n_replicates - lo)
            u = rng.random((b, self.n))
            idx = np.empty((b, self.n, k), dtype=np.int64)
            for start, size, c in zip(self.starts, self.sizes, cum):
                idx[:, start : start + size] = start + inverse_cdf(c, u[:, start : start + size])
            yield lo, self.moment_sums(table[idx * k + np.arange(k)])

    def tilted(self):
        """Counts under the equal-rate null and each group's cumulative weights (n_g, K).

        Weights ``exp(t u_i)`` normalised, ``u_i = e_i - p m_i``; groups that
        cannot be tilted (every ``u_i`` on one side of 0) get uniform weights
        and counts scaled by ``p / p_g`` (left as they are when ``p_g = 0``).
        """
        e, m = self.e, self.m
        with np.errstate(divide="ignore", invalid="ignore"):
            p = e.sum(0) / m.sum(0)
        p = np.where(np.isfinite(p), p, 0.0)
        e_null = e.copy()
        cum = []
        for start, size in zip(self.starts, self.sizes):
            sl = slice(start, start + size)
            w, scale = tilt_weights(e[sl], m[sl], p)
            e_null[sl] *= scale
            c = np.cumsum(w, axis=0)
            cum.append(c / c[-1])
        return e_null, cum

    def small_groups(self) -> list[str]:
        """Groups with fewer than SMALL_GROUP individuals with attempts, some of them with repeated attempts."""
        present = self.m > 0
        out = []
        for label, start, size in zip(self.labels, self.starts, self.sizes):
            sl = slice(start, start + size)
            n_ind = int(present[sl].any(1).sum())
            if 0 < n_ind < SMALL_GROUP and (self.m[sl] > 1).any():
                out.append(f"{label!s} ({n_ind})")
        return out

    # ------------------------------------------------------------- results
    def wrap(self, values) -> xr.DataArray:
        values = np.asarray(values).reshape(self.extra_shape)
        return xr.DataArray(values, dims=self.extra, coords=self.coords)

    def wrap_groups(self, values) -> xr.DataArray:
        values = np.asarray(values).reshape((len(self.labels), *self.extra_shape))
        coords = dict(self.coords)
        coords[self.group] = self.labels
        return xr.DataArray(values, dims=(self.group, *self.extra), coords=coords)

    def per_group(self) -> xr.Dataset:
        e, m, h = (np.add.reduceat(x, self.starts, axis=0) for x in (self.e, self.m, (self.m > 0).astype(float)))
        with np.errstate(divide="ignore", invalid="ignore"):
            fnmr = np.where(m > 0, e / m, np.nan)
            pooled = e.sum(0) / m.sum(0)
        ds = xr.Dataset(
            {
                "pooled_fnmr": self.wrap(np.where(m.sum(0) > 0, pooled, np.nan)),
                "fnmr": self.wrap_groups(fnmr),
                "errors": self.wrap_groups(e.astype(np.int64)),
                "attempts": self.wrap_groups(m.astype(np.int64)),
                "n_individuals": self.wrap_groups(h.astype(np.int64)),
            }
        )
        ds["pooled_fnmr"].attrs["long_name"] = "pooled FNMR, sum e_i / sum m_i"
        ds["fnmr"].attrs["long_name"] = "FNMR of the group, E_g / M_g"
        ds["errors"].attrs["long_name"] = "false non-matches of the group"
        ds["attempts"].attrs["long_name"] = "attempts (mated comparisons) of the group"
        ds["n_individuals"].attrs["long_name"] = "individuals of the group with at least one attempt"
        return ds


def tilt_weights(e: np.ndarray, m: np.ndarray, p: np.ndarray):
    """Tilted weights (n_g, K) moving a group's FNMR to ``p`` (K,), and the count scale (K,)."""
    u = e - p * m
    u = np.where(np.abs(u) <= 1e-10 * np.maximum(m, 1.0), 0.0, u)
    feasible = (u.min(0) < 0) & (u.max(0) > 0)
    s = np.abs(u).max(0)
    us = u / np.where(s > 0, s, 1.0)
    lo = np.full(u.shape[1], -_TILT_SPAN)
    hi = np.full(u.shape[1], _TILT_SPAN)
    for _ in range(_TILT_STEPS):  # sum_i u_i exp(t u_i) increases with t
        t = 0.5 * (lo + hi)
        x = t * us
        up = (us * np.exp(x - x.max(0))).sum(0) > 0
        hi = np.where(up, t, hi)
        lo = np.where(up, lo, t)
    x = 0.5 * (lo + hi) * us
    w = np.exp(x - x.max(0))
    w = np.where(feasible, w, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pg = e.sum(0) / m.sum(0)
        scale = np.where(~feasible & (pg > 0), p / pg, 1.0)
    return w, scale


def inverse_cdf(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Draws (b, n_g, K): in each slice ``k``, the individual whose cumulative weight ``cum[:, k]`` first exceeds ``u``.

    The uniforms of each row are sorted first (the same draws as a multiset, which is all group sums see),
    so the binary searches walk forward through the table and the later gathers are nearly sequential.
    """
    size, k = cum.shape
    us = np.sort(u, axis=1)
    out = np.empty(us.shape + (k,), dtype=np.int64)
    for j in range(k):
        out[..., j] = np.searchsorted(cum[:, j], us, side="right")
    return np.minimum(out, size - 1)


# ------------------------------------------------------------- statistics
def f_statistic(e, m, q, h, *, with_df: bool = False):
    """Attempt-weighted one-way ANOVA F from group sums (b, G, K)."""
    present = m > 0
    big_e, big_m = e.sum(1), m.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = big_e / big_m
        pg = np.where(present, e / m, p[:, None, :])
        between = (m * (pg - p[:, None, :]) ** 2).sum(1)
        within_g = np.where(present, q - np.where(present, e**2 / m, 0.0), 0.0)
        within = np.clip(within_g, 0.0, None).sum(1)
        within = np.where(within <= 1e-10 * q.sum(1), 0.0, within)  # rounding of equal rates
        g_eff = present.sum(1)
        df1 = g_eff - 1
        df2 = h.sum(1) - g_eff
        f = (between / df1) / (within / df2)
        f = np.where(between == 0, 0.0, np.where(within == 0, np.inf, f))
    f = np.where((df1 >= 1) & (df2 >= 1) & (big_m > 0), f, np.nan)
    if with_df:
        return f, df1.astype(float), df2.astype(float)
    return f


def group_variances(e, m, see, sem, smm, h):
    """Pooled rate ``p``, group rates ``p_g`` and their variances ``V_g`` (b, G, K) from moment sums.

    ``V_g = max(n_g / (n_g - 1) sum_i (e_i - p_g m_i)^2 / M_g^2, p (1 - p) / M_g)``: the cluster-robust
    (CR1) variance of a ratio estimate, floored at the binomial one (design effect at least 1); a group
    of one individual gets ``p (1 - p) sum m_i^2 / M_g^2`` (design effect of perfectly correlated
    attempts). NaN for groups without attempts.
    """
    present = m > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        p = e.sum(1, keepdims=True) / m.sum(1, keepdims=True)
        pg = np.where(present, e / m, np.nan)
        ss = np.clip(see - 2 * pg * sem + pg**2 * smm, 0.0, None)
        cr1 = h / (h - 1) * ss / m**2
        binomial = p * (1 - p) / m
        v = np.where(h >= 2, np.maximum(cr1, binomial), p * (1 - p) * smm / m**2)
    return p, pg, np.where(present, v, np.nan)


def wald_statistic(e, m, see, sem, smm, h, *, with_parts: bool = False):
    """``W = sum_g (p_g - p_w)^2 / V_g``, ``p_w`` the inverse-variance mean; 0 where every ``V_g`` is 0."""
    _, pg, v = group_variances(e, m, see, sem, smm, h)
    present = m > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(present, 1 / v, 0.0)
        pw = np.nansum(np.where(present, w * pg, 0.0), 1, keepdims=True) / w.sum(1, keepdims=True)
        terms = np.where(present, w * (pg - pw) ** 2, 0.0)
        stat = terms.sum(1)
    stat = np.where((v == 0).any(1) & present.any(1), 0.0, stat)
    stat = np.where(present.sum(1) >= 2, stat, np.nan)
    if with_parts:
        return stat, v
    return stat


def studentized_deviations(e, m, see, sem, smm, h):
    """``z_g = |p_g - p| / sd(p_g - p)`` (b, G, K) and the standard deviations.

    ``Var(p_g - p) = V_g (1 - a_g)^2 + sum_{h != g} a_h^2 V_h`` with ``a_g = M_g / M`` the
    attempt shares and ``V_g`` of :func:`group_variances`; ``z = 0`` where the deviation is 0.
    """
    p, pg, v = group_variances(e, m, see, sem, smm, h)
    a = m / m.sum(1, keepdims=True)
    av = np.where(m > 0, a**2 * v, 0.0)
    var = np.where(m > 0, v * (1 - a) ** 2 + av.sum(1, keepdims=True) - av, np.nan)
    sd = np.sqrt(var)
    dev = np.abs(pg - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(dev == 0, 0.0, dev / sd)
    return z, sd


def max_studentized(e, m, see, sem, smm, h):
    z, _ = studentized_deviations(e, m, see, sem, smm, h)
    z = np.fmax.reduce(z, axis=1)
    return np.where((m > 0).sum(1) >= 2, z, np.nan)


def ratio_deviations(e, m, see, sem, smm, h):
    """``z_g = p (1 - 1 / r_g) / sd_g``, ``r_g = max(p_g / p, p / p_g)`` (b, G, K): the smallest ``c`` with ``r_g``
    inside ``p / (p - c sd_g)``, the band of the ratio form.

    It is ``(p - p_g) / sd_g`` below ``p`` (as :func:`studentized_deviations`) and ``(p_g - p) / sd_g * p / p_g``
    above it, where the ratio band ``p / (p - c sd_g)`` reaches further than ``p + c sd_g``; 0 where ``r_g = 1``.
    """
    z, sd = studentized_deviations(e, m, see, sem, smm, h)
    r = group_ratios(e, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (e.sum(1) / m.sum(1))[:, None, :]
        pg = np.where(m > 0, e / m, np.nan)
        zr = np.where(pg > p, z / r, z)
    return np.where(r == 1, 0.0, zr)


def max_ratio_studentized(e, m, see, sem, smm, h):
    z = np.fmax.reduce(ratio_deviations(e, m, see, sem, smm, h), axis=1)
    return np.where((m > 0).sum(1) >= 2, z, np.nan)


def group_ratios(e, m, *_):
    """``max(p_g / p, p / p_g)`` per replicate and group: 1 where equal, NaN without attempts."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (e.sum(1) / m.sum(1))[:, None, :]
        pg = np.where(m > 0, e / m, np.nan)
        r = np.where(pg == p, 1.0, np.maximum(pg / p, p / pg))
    return np.where(np.isnan(pg) | np.isnan(p), np.nan, r)


def max_deviations(e, m, *_):
    """``D = max_g |p_g - p|`` and ``R = max_g max(p_g / p, p / p_g)`` per replicate and slice."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (e.sum(1) / m.sum(1))[:, None, :]
        pg = np.where(m > 0, e / m, np.nan)
    d = np.fmax.reduce(np.abs(pg - p), axis=1)
    r = np.fmax.reduce(group_ratios(e, m), axis=1)
    return d, r


def mc_p_value(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``(1 + #{null >= observed}) / (1 + B)`` per slice; NaN null values count as >=."""
    with np.errstate(invalid="ignore"):
        bar = np.where(np.isinf(observed), observed, observed - 1e-9 * np.abs(observed))
        hits = (null >= bar) | np.isnan(null)
    p = (1 + hits.sum(0)) / (1 + null.shape[0])
    return np.where(np.isnan(observed), np.nan, p)
