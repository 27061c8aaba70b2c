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
  that bracket FMR = FNMR crosses it (pyeer-like).
- ``nearest`` (bob.measure): at the point where ``|FMR - FNMR|`` is least,
  their mean.

The interpolated and nearest values agree to within one step of the curve.
The hull value is never above them and can sit several steps below where
the staircase is locally concave (the hull bridges the dent), which is
common with few mated comparisons. With heavy ties (integer fingerprint
scores) the steps are wide and all three part ways. When two points are
equally near, "nearest" takes the more lenient one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["METHODS", "DESCRIPTIONS", "eer_point", "lower_hull"]

METHODS = ("rocch", "interpolated", "nearest")

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
        "nearest-threshold EER, as in bob.measure: at the threshold minimising |FMR - FNMR|, "
        "the mean (FMR + FNMR) / 2."
    ),
}


def eer_point(x: np.ndarray, y: np.ndarray, method: str):
    """EER by ``method`` on points ordered lenient to strict.

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
    [0.3571, 0.3667, 0.4]
    """
    if method == "nearest":
        k = int(np.argmin(np.abs(x - y)))
        return (x[k] + y[k]) / 2, k, k, 0.0
    if method == "interpolated":
        return _crossing(x, y, np.arange(x.size))
    if method == "rocch":
        return _rocch(x, y)
    raise ValueError(f"method={method!r}; choose one of {METHODS}.")


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
