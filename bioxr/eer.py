"""Equal-error-rate conventions on one error-rate curve.

Each function takes the curve's points ordered from the most lenient to the
strictest threshold: ``x`` (FMR) non-increasing, ``y`` (FNMR)
non-decreasing, ``t`` the thresholds. Each returns ``(eer, k_lo, k_hi, s)``:
the value and where it sits, ``s`` of the way from point ``k_lo`` to point
``k_hi`` (``k_lo == k_hi`` when it sits on a point).

The tools users know disagree (METHODS.md section 1):

- ``rocch`` (BOSARIS): the lower-left convex hull of the points crosses
  FMR = FNMR. A hull is what randomising between two thresholds can reach,
  so this is the lowest of the three and the only one invariant to how
  finely the curve is sampled.
- ``interpolated``: the straight line between the two consecutive points
  that bracket FMR = FNMR crosses it. (Not pyeer's: pyeer takes the
  FVC2000 midpoint, ``fvc2000`` below.)
- ``nearest``: at the point where ``|FMR - FNMR|`` is least, their mean.
  When two points are equally near it takes the more lenient one
  (``ties="lenient"``); bob.measure's ``eer`` takes the stricter one
  (``ties="strict"``, the ``"bob"`` convention of :mod:`bioxr.conventions`).
  Otherwise it is bob.measure's value.
- ``fvc2000`` (pyeer; Maio et al. 2002, FVC2000): ``t2`` is the first
  point (lenient to strict) with ``FNMR >= FMR`` and ``t1`` the one before
  it (``t1 = t2`` if they are equal there); of the two, the one with the
  smaller ``FMR + FNMR`` (``t1`` on a tie) gives ``(FMR + FNMR) / 2``, the
  midpoint of FVC2000's interval ``[EER_low, EER_high]``. This is pyeer's
  ``get_eer_values``. Unlike "nearest" it looks only at the two points
  that bracket the crossing and picks by the sum, not the gap: on a wide
  step the two can differ.

The interpolated, nearest and fvc2000 values agree to within one step of
the curve. The hull value is never above the interpolated one and can sit
several steps below where the staircase is locally concave (the hull
bridges the dent), which is common with few mated comparisons; "nearest"
and "fvc2000" are means of one point's two rates, which can fall below
the hull's crossing (on ``exp3`` below, fvc2000 does). With heavy ties (integer
fingerprint scores) the steps are wide and all four part ways: on pyeer's
own example ``exp3`` (integer scores) pyeer's FVC2000 EER is 0.114169,
the hull 0.116138, the interpolated crossing 0.117023 and the nearest
point 0.117096.

"nearest" and "fvc2000" depend on which points make the curve: they are
computed on every distinct score as a threshold (the exact curve), as
bob.measure and pyeer do.
"""

from __future__ import annotations

import numpy as np

__all__ = ["METHODS", "DESCRIPTIONS", "eer_point", "lower_hull"]

METHODS = ("rocch", "interpolated", "nearest", "fvc2000")
TIES = ("lenient", "strict")

DESCRIPTIONS = {
    "rocch": (
        "ROC convex hull (ROCCH) EER, as in the BOSARIS toolkit: where the lower-left convex "
        "hull of the (FMR, FNMR) points crosses FMR = FNMR; reachable by randomising between "
        "the two thresholds of the hull segment. 'threshold' is the hull vertex nearer the crossing."
    ),
    "interpolated": (
        "linear-interpolated EER: where the straight segment between the two consecutive "
        "thresholds that bracket FMR = FNMR crosses it; 'threshold' is interpolated by the "
        "same fraction."
    ),
    "nearest": (
        "nearest-threshold EER: at the threshold minimising |FMR - FNMR|, the mean "
        "(FMR + FNMR) / 2; of two equally near thresholds the more lenient (bob.measure's eer "
        "takes the stricter: convention='bob')."
    ),
    "fvc2000": (
        "FVC2000 EER (Maio et al. 2002), as in pyeer: of the two thresholds bracketing FMR = FNMR "
        "(the last with FNMR < FMR and the first with FNMR >= FMR), the one with the smaller "
        "FMR + FNMR (the more lenient on a tie); EER = (FMR + FNMR) / 2 there, the midpoint of "
        "[EER_low, EER_high]; 'threshold' is that threshold."
    ),
}


def eer_point(x: np.ndarray, y: np.ndarray, method: str, ties: str = "lenient"):
    """EER by ``method`` on points ordered lenient to strict.

    Parameters
    ----------
    x, y : numpy.ndarray
        FMR (non-increasing) and FNMR (non-decreasing) of the points.
    method : {"rocch", "interpolated", "nearest", "fvc2000"}
    ties : {"lenient", "strict"}
        For "nearest": which of two points equally near FMR = FNMR to take
        ("strict" is bob.measure's choice). Ignored by the others.

    Returns
    -------
    tuple
        ``(eer, k_lo, k_hi, s)``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([1.0, 0.5, 0.3, 0.0])
    >>> y = np.array([0.0, 0.1, 0.5, 1.0])
    >>> [round(float(eer_point(x, y, m)[0]), 4) for m in METHODS]
    [0.3571, 0.3667, 0.4, 0.3]

    Two points equally near FMR = FNMR: bioxr takes the lenient one, bob the strict one.

    >>> x, y = np.array([1.0, 0.75, 0.25, 0.0]), np.array([0.0, 0.5, 0.5, 1.0])
    >>> float(eer_point(x, y, "nearest")[0]), float(eer_point(x, y, "nearest", ties="strict")[0])
    (0.625, 0.375)
    """
    if ties not in TIES:
        raise ValueError(f"ties={ties!r}; choose one of {TIES}.")
    if method == "nearest":
        gap = np.abs(x - y)
        k = int(np.argmin(gap)) if ties == "lenient" else int(gap.size - 1 - np.argmin(gap[::-1]))
        return (x[k] + y[k]) / 2, k, k, 0.0
    if method == "fvc2000":
        return _fvc2000(x, y)
    if method == "interpolated":
        return _crossing(x, y, np.arange(x.size))
    if method == "rocch":
        return _rocch(x, y)
    raise ValueError(f"method={method!r}; choose one of {METHODS}.")


def _fvc2000(x, y):
    """FVC2000's EER (pyeer's ``get_eer_values``), in the same floating-point steps."""
    diff = x - y  # non-increasing
    below = np.flatnonzero(diff <= 0)
    if below.size == 0:
        raise ValueError("the curve does not reach FNMR >= FMR; it needs the strict end (FMR 0 or FNMR 1).")
    t2 = int(below[0])
    t1 = t2 - 1 if diff[t2] != 0 and t2 != 0 else t2
    k = t1 if x[t1] + y[t1] <= x[t2] + y[t2] else t2
    return (y[k] + x[k]) / 2, k, k, 0.0


def _crossing(x, y, vertices):
    """Where the polyline through ``vertices`` crosses y = x."""
    d = y[vertices] - x[vertices]  # non-decreasing along the polyline
    k = int(np.searchsorted(d, 0.0, side="left"))
    if k < d.size and d[k] == 0:
        v = int(vertices[k])
        return x[v], v, v, 0.0
    if k == 0 or k == d.size:
        raise ValueError("the curve does not cross FMR = FNMR; it needs both extremes (FMR 1 and FNMR 1).")
    lo, hi = int(vertices[k - 1]), int(vertices[k])
    s = -d[k - 1] / (d[k] - d[k - 1])
    return x[lo] + s * (x[hi] - x[lo]), lo, hi, float(s)


def _rocch(x, y):
    """The hull's crossing of y = x, by duality, in vectorised passes.

    For a weight ``w`` in [0, 1], ``f(w) = min_i w x_i + (1 - w) y_i`` is the
    lower hull's support function; the hull crosses y = x at height
    ``max_w f(w)``, where the minimiser switches from a point with ``x >= y``
    (A) to one with ``x < y`` (B). Bisection on ``w`` finds such A and B; the
    weight at which they tie is then exact, and while some point lies below
    their line it replaces A or B. The crossing lies on the hull edge AB.
    """
    d = x - y
    a_idx = int(np.argmin(y))  # the minimiser at w = 0 has x >= y
    b_idx = int(np.argmin(x))  # the minimiser at w = 1 has x <= y
    lo_w, hi_w = 0.0, 1.0
    for _ in range(64):
        mid = (lo_w + hi_w) / 2
        k = int(np.argmin(mid * x + (1 - mid) * y))
        if d[k] >= 0:
            lo_w, a_idx = mid, k
        else:
            hi_w, b_idx = mid, k
        if hi_w - lo_w < 1e-15:
            break
    if d[b_idx] >= 0:  # no point with x < y: the crossing is at A
        return x[a_idx], a_idx, a_idx, 0.0
    for _ in range(x.size):
        w = (y[b_idx] - y[a_idx]) / (d[a_idx] - d[b_idx])
        level = w * x[a_idx] + (1 - w) * y[a_idx]
        values = w * x + (1 - w) * y
        k = int(np.argmin(values))
        if not values[k] < level - 1e-12 * max(1.0, abs(level)):
            break
        if d[k] >= 0:
            a_idx = k
        else:
            b_idx = k
    if d[a_idx] == 0:
        return x[a_idx], a_idx, a_idx, 0.0
    s = d[a_idx] / (d[a_idx] - d[b_idx])
    return x[a_idx] + s * (x[b_idx] - x[a_idx]), a_idx, b_idx, float(s)


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower-left convex hull of points ordered lenient to strict.

    Only corners of the staircase can be vertices: of each run of equal x the
    point with the lowest y, of each run of equal y the one with the lowest
    x. Andrew's monotone chain runs over those, x ascending; the indices come
    back in the original (lenient to strict) order.

    Examples
    --------
    >>> import numpy as np
    >>> lower_hull(np.array([1.0, 0.6, 0.5, 0.0]), np.array([0.0, 0.3, 0.6, 1.0])).tolist()
    [0, 1, 3]
    """
    n = x.size
    idx = np.arange(n)[::-1]
    xs, ys = x[::-1], y[::-1]  # x ascending, y non-increasing
    last_of_x = np.ones(n, dtype=bool)
    last_of_x[:-1] = xs[1:] != xs[:-1]
    first_of_y = np.ones(n, dtype=bool)
    first_of_y[1:] = ys[1:] != ys[:-1]
    stack: list[int] = []
    for i in np.flatnonzero(last_of_x & first_of_y).tolist():
        while len(stack) >= 2:
            a, b = stack[-2], stack[-1]
            cross = (xs[b] - xs[a]) * (ys[i] - ys[a]) - (ys[b] - ys[a]) * (xs[i] - xs[a])
            if cross <= 0:
                stack.pop()
            else:
                break
        stack.append(i)
    return idx[np.array(stack, dtype=np.int64)][::-1]
