"""The studentised widening of the Cllr and minCllr intervals: per-replicate cluster-robust variances.

A replicate's Cllr is ``1/2 (A / T + B / N)``, sums over its weighted
comparisons of the costs (``A``, ``B``) and of the weights (``T``, ``N``).
Its linearisation over the drawn subjects is exact and cheap: a drawn copy
of subject ``i`` has the influence

    psi_i = 1/2 [sum_{mated of i} (c - C_m) / T + sum_{non-mated of i} v (c - C_n) / N]

(``C_m = A / T``, ``C_n = B / N``; a non-mated comparison counts for its
probe subject with weight ``v = 1`` under ``"probe"``, and under
``"pigeonhole"`` for both its subjects, each time weighted by the other
subject's draws: the crossed form, METHODS.md section 12, whose ``sum_i
Z_i^2`` holds the U-statistic's ``4 zeta_1 / n``), and the replicate's
variance is ``V = n / (n - 1) sum_i w_i psi_i^2`` (the sandwich, or
cluster-robust, variance; ``n`` subjects drawn). For minCllr the costs are
those of the replicate's own PAV calibration, held fixed: the refit moves
the costs only to second order (the PAV LLRs are the minimisers).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


def pav_costs(t: np.ndarray, n: np.ndarray, blocks: bool = False):
    """PAV of run weights ``t`` (mated), ``n`` (non-mated): minCllr and every run's mated and non-mated cost (bits).

    The same pooling as :func:`bioxr.calibration._point._pav`, keeping
    which block each run falls in; a run's costs are its block's,
    ``log2(1 + e^-LLR)`` and ``log2(1 + e^LLR)`` with ``LLR = log(t_b /
    n_b) - log(T / N)``; a cost with no weight behind it (a one-class end
    block, a run not drawn) is 0.
    """
    bt: list[float] = []
    bn: list[float] = []
    size: list[int] = []  # runs per block, those without weight included
    pending = 0  # leading runs without weight, given to the first block
    for ti, ni in zip(t.tolist(), n.tolist()):
        if ti + ni <= 0:
            if size:
                size[-1] += 1
            else:
                pending += 1
            continue
        k = 1
        while bt and bt[-1] * ni >= ti * bn[-1]:
            ti += bt.pop()
            ni += bn.pop()
            k += size.pop()
        bt.append(ti)
        bn.append(ni)
        size.append(k)
    if not size:
        return np.nan, np.zeros(t.size), np.zeros(t.size)
    size[0] += pending
    bt_a, bn_a = np.asarray(bt), np.asarray(bn)
    big_t, big_n = bt_a.sum(), bn_a.sum()
    if big_t <= 0 or big_n <= 0:
        return np.nan, np.zeros(t.size), np.zeros(t.size)
    both = bt_a * big_n + bn_a * big_t
    with np.errstate(divide="ignore", invalid="ignore"):
        cost_t = np.where(bt_a > 0, np.log2(both / (bt_a * big_n)), 0.0)
        cost_n = np.where(bn_a > 0, np.log2(both / (bn_a * big_t)), 0.0)
    value = float((bt_a @ cost_t / big_t + bn_a @ cost_n / big_n) / 2)
    sizes = np.asarray(size)
    out = value, np.repeat(cost_t, sizes), np.repeat(cost_n, sizes)
    return (*out, bt_a, bn_a) if blocks else out


class CostVariance:
    """Cluster-robust variances of a Cllr from per-comparison costs, for replicate subject weights.

    ``pu_m``: the subject of each mated comparison; ``pu_n``, ``ru_n``: the
    probe and reference subjects of each non-mated one; ``pigeonhole``: a
    non-mated comparison weighted by both subjects' draws (else by its
    probe subject's). Vectorised over replicates in chunks of a few million
    comparison-replicates.
    """

    def __init__(self, pu_m, pu_n, ru_n, n_units: int, pigeonhole: bool):
        self.pu_m, self.pu_n, self.ru_n = pu_m, pu_n, ru_n
        self.n, self.pigeonhole = n_units, pigeonhole
        ind = lambda u: sparse.csr_matrix((np.ones(u.size), (u, np.arange(u.size))), shape=(n_units, u.size))
        self._sm, self._sp, self._sr = ind(pu_m), ind(pu_n), ind(ru_n)

    def __call__(self, w: np.ndarray, cost_m: np.ndarray, cost_n: np.ndarray, runs=None) -> np.ndarray:
        """``V`` per row of ``w`` (replicate, unit); costs per comparison ``(k,)``, or with ``runs = (run_m,
        run_n)`` per run and replicate ``(replicate, run)``."""
        n, out = self.n, np.full(w.shape[0], np.nan)
        if n < 2:
            return out
        step = max(1, 4_000_000 // max(self.pu_n.size, 1))
        for s in range(0, w.shape[0], step):
            ws = w[s : s + step]
            if runs is None:
                cm, cn = cost_m[None, :], cost_n[None, :]
            else:
                cm, cn = cost_m[s : s + step][:, runs[0]], cost_n[s : s + step][:, runs[1]]
            wm = ws[:, self.pu_m]
            big_t = wm.sum(axis=1, keepdims=True)
            em = cm - np.sum(wm * cm, axis=1, keepdims=True) / big_t
            wp = ws[:, self.pu_n]
            wr = ws[:, self.ru_n]
            v = wp * wr if self.pigeonhole else wp
            big_n = v.sum(axis=1, keepdims=True)
            en = cn - np.sum(v * cn, axis=1, keepdims=True) / big_n
            em = np.broadcast_to(em, wm.shape)
            en = np.broadcast_to(en, wp.shape)
            psi = (self._sm @ em.T).T / big_t
            if self.pigeonhole:
                z = (self._sp @ (wr * en).T).T + (self._sr @ (wp * en).T).T
            else:
                z = (self._sp @ en.T).T
            psi = (psi + z / big_n) / 2
            out[s : s + step] = n / (n - 1) * np.sum(ws * psi**2, axis=1)
        return out

    def parts(self, cost_m: np.ndarray, cost_n: np.ndarray) -> tuple[float, float]:
        """The sample's ``(S, P)``: ``S = sum_i psi_i^2`` and the pair part ``P = sum_u phi_u^2``, unscaled.

        ``psi_i`` as in :meth:`__call__` with every weight 1 (the crossed
        form), ``phi_u`` the same sum over the non-mated comparisons of the
        unordered pair of subjects ``u``, halved. ``S`` holds each pair's
        own noise twice (once through each subject): the dyadic moment
        variance (METHODS.md section 12) is ``n / (n - 1) (S - P)``, and a
        pigeonhole replicate's variance is about ``n / (n - 1) (S + P)``
        (its pair weights ``w_a w_c`` have variance 3; Owen 2007). Under
        ``"probe"`` weights there is no pair part: ``P = 0``.
        """
        n = self.n
        em = (cost_m - cost_m.mean()) / cost_m.size
        en = (cost_n - cost_n.mean()) / cost_n.size
        psi = np.bincount(self.pu_m, em, n) + np.bincount(self.pu_n, en, n)
        if not self.pigeonhole:
            return float(np.sum((psi / 2) ** 2)), 0.0
        psi += np.bincount(self.ru_n, en, n)
        pair = np.minimum(self.pu_n, self.ru_n) * n + np.maximum(self.pu_n, self.ru_n)
        _, code = np.unique(pair, return_inverse=True)
        phi = np.bincount(code, en)
        return float(np.sum((psi / 2) ** 2)), float(np.sum((phi / 2) ** 2))


def studentized_union(bounds, point, reps, var_reps, *, level: float, cap: float = np.inf) -> np.ndarray:
    """Widen ``bounds`` (2,) to the calibrated bootstrap-t interval where it is defined; never narrower.

    ``u_b = (r_b - point) sqrt(mean(V) / V_b)`` over the replicates
    ``r_b`` with variances ``V_b``, the interval ``[point - u_{1-a},
    point - u_a]`` clipped to ``[0, cap]``, and the union with
    ``bounds`` (the lower of the lower bounds, the higher of the upper
    ones), as :func:`bioxr.bootstrap._studentized._studentized_union`. Left as it
    is where a replicate or a variance is not finite and positive.
    """
    reps, var_reps = np.asarray(reps, dtype=float), np.asarray(var_reps, dtype=float)
    out = np.array(bounds, dtype=float, copy=True)
    if (not np.all(np.isfinite(out)) or not np.isfinite(point) or not np.all(np.isfinite(reps))
            or not np.all(np.isfinite(var_reps)) or not np.all(var_reps > 0)):
        return out
    alpha = (1 - level) / 2
    u = (reps - point) * np.sqrt(np.mean(var_reps) / var_reps)
    u_lo, u_hi = np.quantile(u, [alpha, 1 - alpha])
    lo, hi = np.clip([point - u_hi, point - u_lo], 0.0, cap)
    return np.array([min(out[0], lo), max(out[1], hi)])
