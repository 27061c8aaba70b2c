"""The EER of one group from a window of scores around the crossing, certified exact.

:func:`_eer_group` places a window from a strided sample (and the mated
scores, or a strided sample of them when a lazy group keeps them where they
are), counts exactly inside it (:class:`bioxr.counting.Pool`), and
:func:`_eer_from_pool` answers only if no point outside the window could
change the answer: points beyond it are bounded by phantom corners, from
the window's ends or from bands between edges where FMR and FNMR are
counted exactly. Otherwise the window widens, up to sorting everything.
The public entry is :func:`bioxr.verification.eer`.
"""

from __future__ import annotations

import numpy as np

from .. import counting
from .. import eer as _eer
from ..counting import Pool
from .checks import warn_if_reversed
from .groups import Grouped


def _finish(groups: Grouped, pool: Pool, g: int, index) -> Pool:
    """Apply the failure policy to a group's pool ("nist": failures are never accepted)."""
    if groups.policy == "nist" and groups.has_failures:
        pool.add_failures(*groups.failure_counts(g, index))
    return pool



#: The mated scores at which :func:`_estimate_eer` looks for the crossing, at most.
ESTIMATE_POINTS = 1 << 20


def _estimate_eer(sample: np.ndarray, mated: np.ndarray):
    """A rough EER, and the DET slope there, from a sorted sample and the sorted mated scores.

    The crossing is searched at every mated score up to :data:`ESTIMATE_POINTS` of them, else at evenly
    strided ones (FNMR steps of at most 1 / ESTIMATE_POINTS): it only places the window, whose answer is
    certified, and the temporaries stay small when a trial list holds 1e8 mated comparisons.
    """
    n = mated.size
    if n == 0 or sample.size == 0:
        return 0.5, -1.0
    j = np.arange(0, n, max(1, n // ESTIMATE_POINTS))  # at t = mated[j]: j mated below
    fmr_at = lambda t: (sample.size - np.searchsorted(sample, t, side="left")) / sample.size  # noqa: E731
    fmr_ = fmr_at(mated[j])
    i = int(np.argmin(np.abs(fmr_ - j / n)))
    k = int(j[i])
    span = max(n // 50, 1)
    a, b = max(k - span, 0), min(k + span, n - 1)
    dx = float(fmr_at(mated[b]) - fmr_at(mated[a]))
    slope = (b / n - a / n) / dx if dx < 0 else -1.0
    return float((fmr_[i] + k / n) / 2), float(min(slope, -1e-3))



def _eer_group(values, index, groups: Grouped, g: int, method: str, ties: str = "lenient"):
    """EER of one group from a window of scores around the crossing.

    A strided sample places the crossing. For "interpolated" and "nearest"
    the window holds the scores whose FMR is within ``w`` of it; for
    "rocch" it holds every score above the point where the tangent at the
    crossing meets FNMR = 0, since any point below that line could be a
    hull vertex. If the answer could depend on scores outside the window,
    the window widens, up to sorting everything.
    """
    # one pass over lazy blocks; many mated scores of a lazy group stay where they are (a Spread: counted there,
    # brought in the window), and a strided sample of them places the window
    (m, x), sample = counting.cells_and_sample(values, index, groups.distance, spread=True)
    ms = m if isinstance(m, np.ndarray) else m.sample
    if g == 0:
        warn_if_reversed(ms, sample, groups.kind)
    estimate, slope = _estimate_eer(sample, ms)
    n_s = max(sample.size, 1)
    w = 6 * np.sqrt(max(estimate * (1 - estimate), 1.0 / n_s) / n_s) + 2.0 / n_s
    if method == "rocch" and values.size >= counting.MIN_WINDOW_CELLS and ms is not m:
        # the mated scores stay where they are: a closed window with bands of exact counts on both sides, so that
        # only the mated scores in it travel (widened twice before the ladder and the windows open above)
        for half in (max(3 * w, HALF[0] * estimate), max(6 * w, HALF[1] * estimate)):
            banded = _banded_window(sample, ms, estimate, half)
            if banded is None:
                break
            lo, hi, edges = banded
            pool = _finish(groups, Pool.window(values, index, groups.distance, lo, hi, (m, x), edges), g, index)
            groups.require(pool, g, "the EER")
            result = _eer_from_pool(pool, method, ties=ties)
            if result is not None:
                return result
    if method == "rocch" and values.size >= counting.MIN_WINDOW_CELLS:
        ladder = _rocch_ladder(sample, ms, estimate, slope, w)
        if ladder is not None:
            lo, edges = ladder
            # first a window closed above too (FMR down to a third of the EER): few hull points when mated
            # scores are many; certified by a phantom point beyond it, else the window opens above
            hi_share = estimate / 3 - w
            his = [float(np.quantile(sample, 1 - hi_share, method="higher")), np.inf] if hi_share > 0 else [np.inf]
            for hi in his:
                pool = _finish(groups, Pool.window(values, index, groups.distance, lo, hi, (m, x), edges), g, index)
                groups.require(pool, g, "the EER")
                result = _eer_from_pool(pool, method, ties=ties)
                if result is not None:
                    return result
    if method == "rocch":
        w += estimate / -slope + 0.1 * estimate
    while True:
        lo_share = estimate + w
        hi_share = estimate - w if method != "rocch" else 0.0
        if lo_share >= 0.5 or values.size < counting.MIN_WINDOW_CELLS:
            pool = Pool.full(values, index, groups.distance, (m, x))
        else:
            lo = float(np.quantile(sample, 1 - lo_share, method="lower"))
            hi = float(np.quantile(sample, 1 - hi_share, method="higher")) if hi_share > 0 else np.inf
            # every score in the window is a threshold of "interpolated" and "nearest": sent at once, not counted
            # first and fetched in a second pass
            pool = Pool.window(values, index, groups.distance, lo, hi, (m, x), need_scores=method != "rocch")
        pool = _finish(groups, pool, g, index)
        groups.require(pool, g, "the EER")
        result = _eer_from_pool(pool, method, ties=ties)
        if result is not None:
            return result
        w *= 2


def _eer_from_pool(pool: Pool, method: str, affine=None, ties: str = "lenient"):
    """EER from the points in the window, or None if the window may have missed it.

    Points outside the window are bounded: below it (more lenient) they
    have FMR >= x[0] and FNMR <= y[0]; above it FMR <= x[-1] and FNMR >=
    y[-1]. "interpolated" needs only the crossing inside the window;
    "nearest" also needs its best |FMR - FNMR| to beat those bounds;
    "rocch" (whose window is open above) adds the phantom point (x[0], 0),
    which lies below-left of every point outside the window: if the hull's
    crossing segment does not use it, no real point lies below that segment.
    "fvc2000" takes a full pool. With ``ties="strict"`` (bob) the threshold
    is bob's midpoint between the chosen score and the next lower one,
    which must lie in the window.
    """
    # hull vertices are staircase corners, so "rocch" needs only those
    t = pool.hull_thresholds() if method == "rocch" else pool.thresholds()  # lenient to strict
    fm = pool.false_matches(t)
    fnm = pool.false_nonmatches(t)
    x = fm / pool.n_nonmated
    y = fnm / pool.n_mated
    if affine is not None:  # generalized rates (a full pool only: no window bounds to keep)
        a, c = affine
        x, y = c * x, a + c * y
    open_lo, open_hi = np.isneginf(pool.lo), np.isposinf(pool.hi)
    if x.size == 0 or (not open_lo and not y[0] < x[0]) or (not open_hi and not y[-1] > x[-1]):
        return None
    if method == "rocch" and not open_lo:
        xs, ys, first = _below_window(pool, x, y)
        n_real = xs.size
        if not open_hi:
            # every point stricter than the window has FMR >= 0 and FNMR >= y[-1]: the phantom (0, y[-1]) lies
            # below-left of all of them, as (x[0], 0) does for the lenient side; edges above the window cut
            # them into bands with tighter phantoms
            ax, ay = _above_window(pool, y[-1])
            xs, ys = np.append(xs, ax), np.append(ys, ay)
        value, lo, hi, s = _eer.eer_point(xs, ys, method)
        if lo < first or hi < first or lo >= n_real or hi >= n_real:
            return None  # the crossing may involve points outside the window
        lo, hi = lo - first, hi - first
    else:
        value, lo, hi, s = _eer.eer_point(x, y, method, ties)
        if method == "nearest":
            bound = min(x[0] - y[0] if not open_lo else np.inf, y[-1] - x[-1] if not open_hi else np.inf)
            if not abs(x[lo] - y[lo]) < bound:
                return None
    if method == "nearest" and ties == "strict":  # bob.measure's threshold: between this score and the one below
        if lo == 0 and not open_lo:
            return None
        if lo == 0:
            threshold = t[0]
        elif np.isfinite(t[lo]):
            threshold = (t[lo - 1] + t[lo]) / 2
        else:
            threshold = np.nextafter(t[lo - 1], np.inf)
    elif method == "interpolated" and lo != hi and np.isfinite(t[lo]) and np.isfinite(t[hi]):
        threshold = t[lo] + s * (t[hi] - t[lo])
    else:
        near = lo if (lo == hi or s < 0.5 or not np.isfinite(t[hi])) else hi
        threshold = t[near]
    # the rates actually attained at the reported threshold (inside the window: exact)
    fm_t = int(pool.false_matches([threshold])[0])
    fnm_t = int(pool.false_nonmatches([threshold])[0])
    x_t, y_t = fm_t / pool.n_nonmated, fnm_t / pool.n_mated
    if affine is not None:
        x_t, y_t = affine[1] * x_t, affine[0] + affine[1] * y_t
    return (value, threshold, x_t, y_t, fm_t, fnm_t, pool.n_mated, pool.n_nonmated)


def _below_window(pool: Pool, x, y):
    """The window's points behind bounds on every point below it.

    The thresholds below the window are cut into bands by the pool's edges
    (FMR counted exactly there). A point in band ``[e_j, e_{j+1})`` has FMR
    at least ``x(e_{j+1})`` and FNMR at least ``y(e_j)``: the phantom corner
    ``(x(e_{j+1}), y(e_j))`` lies below-left of all of them. Each edge is a
    real point too. Returns ``(xs, ys, first)`` lenient to strict, with the
    window's points from index ``first``.
    """
    below = pool.edges < pool.lo  # edges above the window are _above_window's
    order = np.argsort(pool.edges[below])  # most lenient edge first
    ex = (pool.edge_false_matches()[below] / pool.n_nonmated)[order]
    ey = (pool.false_nonmatches(pool.edges[below]) / pool.n_mated)[order]
    xs, ys = [], []
    floor = 0.0
    for px, py in zip(ex, ey):
        xs += [px, px]
        ys += [floor, py]
        floor = py
    xs.append(x[0])
    ys.append(floor)
    first = len(xs)
    return np.concatenate([xs, x]), np.concatenate([ys, y]), first


def _above_window(pool: Pool, y_last: float):
    """Points behind bounds on every point stricter than a closed window, lenient to strict.

    ``y_last``: FNMR at the window's last threshold. The pool's edges
    above the window ``e_1 < ... < e_K`` (FMR and FNMR counted exactly
    there) cut the stricter thresholds into bands: a point in ``(t_last,
    e_1)`` has FMR >= ``x(e_1)`` and FNMR >= ``y_last``; in ``[e_j,
    e_{j+1})`` FMR >= ``x(e_{j+1})`` and FNMR >= ``y(e_j)``; beyond
    ``e_K`` FMR >= 0 and FNMR >= ``y(e_K)``. Each phantom corner lies
    below-left of its band's points; each edge is a real point too.
    Without edges: the one phantom ``(0, y_last)``.
    """
    above = pool.edges > pool.hi
    order = np.argsort(pool.edges[above])
    ex = (pool.edge_false_matches()[above] / pool.n_nonmated)[order]
    ey = (pool.false_nonmatches(pool.edges[above]) / pool.n_mated)[order]
    xs, ys = [], []
    floor = y_last
    for px, py in zip(ex, ey):
        xs += [px, px]
        ys += [floor, py]
        floor = py
    return np.array(xs + [0.0]), np.array(ys + [floor])


#: Edges on each side of the narrow window of a lazy group whose mated scores stay where they are.
BAND_EDGES = 12
#: The banded windows' half-widths in FMR, as shares of the sampled EER (at least 3 and 6 sampling margins ``w``):
#: the first certified on every smooth curve tried, the second on tied ones; narrower ones (0.1, 0.2) missed
#: on a Photohead cube and cost a pass.
HALF = (0.4, 0.8)


def _banded_window(sample: np.ndarray, ms: np.ndarray, estimate: float, half: float):
    """A closed window around the sampled EER and edges on both sides of it, from the two samples.

    The window holds the thresholds whose sampled FMR is within ``half``
    of ``estimate`` (``half`` at most 0.9 times the distance to FMR 0 and
    to 0.5); :data:`BAND_EDGES` edges below it sit at sampled FNMR
    levels ``y_lo (1 - (i / (K + 1))^2)``, ``i = K, ..., 1``, and as many
    above it at sampled FMR levels ``x_hi (1 - (i / (K + 1))^2)``: closer
    together towards the window, where the curve comes close to the hull's
    crossing segment and the bands' phantom corners must stay above it. Only places
    the window: :func:`_eer_from_pool` certifies it with the exact counts.
    Returns ``(lo, hi, edges)``, or None without a sample or a window.
    """
    half = min(half, 0.9 * estimate, 0.9 * (0.5 - estimate))  # a closed window, short of either end of the curve
    if ms.size == 0 or sample.size == 0 or not half > 0:
        return None
    lo = float(np.quantile(sample, 1 - (estimate + half), method="lower"))
    hi = float(np.quantile(sample, 1 - (estimate - half), method="higher"))
    if not lo < hi:
        return None
    share = 1 - (np.arange(BAND_EDGES, 0, -1) / (BAND_EDGES + 1.0)) ** 2
    y_lo = np.searchsorted(ms, lo, side="left") / ms.size
    x_hi = (sample.size - np.searchsorted(sample, hi, side="right")) / sample.size
    below = np.quantile(ms, y_lo * share, method="lower") if y_lo > 0 else np.empty(0)
    above = np.quantile(sample, 1 - x_hi * share, method="higher") if x_hi > 0 else np.empty(0)
    edges = np.unique(np.concatenate([below[below < lo], above[above > hi]]))
    return lo, hi, edges


def _rocch_ladder(sample: np.ndarray, mated: np.ndarray, estimate: float, slope: float, w: float):
    """A narrow window and a few edges below it that should certify the ROCCH EER.

    Predicted from the sample: the hull's crossing segment is close to the
    line through (EER, EER) with the local slope. Below the window, each
    band's phantom corner must stay above that line; each next edge is the
    most lenient threshold whose (exact) FNMR keeps it so, given the
    sampled FMR at the previous edge less four standard errors. ``mated``
    may be a strided sample of the mated scores (a lazy group's): the edges
    are then placed approximately, and the window's pass counts FNMR at
    them exactly. Returns ``(lo, edges)`` or None when no short ladder
    reaches FNMR = 0.
    """
    n_s, n_m = sample.size, mated.size
    if n_s == 0 or n_m == 0:
        return None
    sd = lambda p: np.sqrt(max(p * (1 - p), 1.0 / n_s) / n_s)  # noqa: E731
    fmr_at = lambda t: (n_s - np.searchsorted(sample, t, side="left")) / n_s  # noqa: E731
    line = lambda fmr: estimate + slope * (fmr - estimate)  # noqa: E731
    lo_share = min(estimate + max(0.4 * estimate, 2 * w), 0.5)
    lo = float(np.quantile(sample, 1 - lo_share, method="lower"))
    edges, current = [], lo
    for _ in range(12):
        fmr = fmr_at(current)
        need = line(fmr - 4 * sd(fmr)) + 1.0 / n_m
        if need <= 0:
            return lo, edges
        k = int(np.ceil(need * n_m))
        if k >= n_m:
            return None
        edge = float(mated[k])  # FNMR there is k / n_m >= need
        if edge >= current:
            return None
        edges.append(edge)
        current = edge
    return None
