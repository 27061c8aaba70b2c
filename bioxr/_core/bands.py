"""Simultaneous (family-wise) bands of a rate curve from its bootstrap replicates.

A pointwise band holds each grid point at its level on its own; the chance
that the *whole* curve lies inside is much lower (measured: 0.70 for a 95%
band over 30 thresholds of one rate curve, 0.49 over the 60 of a DET's two
rates). A simultaneous band holds the whole curve at once.
:func:`simultaneous_band` builds it from any bootstrap of the curve (the
subject bootstrap of the DET, ROC or CMC rates) as the studentised
max-modulus envelope (a "sup-t" band):

1. transform the rates to a scale ``g`` on which they behave (probit, as on
   the DET axes, or logit), after a continuity offset
   ``r' = (r n + 1/2) / (n + 1)`` so that rates of 0 and 1 stay finite;
2. at every grid point ``j``, the replicate standard deviation ``s_j`` of
   ``g(theta*_bj)``;
3. for every replicate ``b``, ``M_b = max_j |g(theta*_bj) - g(theta_j)| / s_j``
   (``studentise="fixed"``, the default); with ``studentise="replicate"``
   each replicate is divided by its own standard error
   ``s_j v(theta*_bj) / v(theta_j)`` instead, ``v(r) = g'(r') sqrt(r' (1 - r'))``
   the binomial variance function on the scale (a bootstrap-t);
4. ``c`` = the ``level`` quantile of the ``M_b`` (the ``ceil(level (B + 1))``-th
   smallest);
5. the band ``g^-1(g(theta_j) +- c s_j)``, offset undone, inside [0, 1].

Measured (``benchmarks/BANDS.md``: 2,000 experiments a cell, B = 1,000,
95%, 30 thresholds, the whole true curve inside):

- subject bootstrap of clustered attempts (100 or 300 subjects x 4,
  subject SD 0.3 or 0.7): ``"fixed"`` covers 0.944-0.957, ``"replicate"``
  0.929-0.947;
- independent scores (200 or 2,000 a side, rates 0.13% to 84%, zero errors
  in the tails): ``"fixed"`` 0.966-0.980 for one rate curve and 0.975-0.986
  for both rates of a DET at once (wider than needed where counts are
  small: the probit scale does not stabilise a binomial rate's variance),
  ``"replicate"`` 0.940-0.951 for both;
- the 95% pointwise band holds the whole curve 0.14-0.70 of the time (one
  curve), 0.02-0.49 (both rates).

So the default covers the level or more in these cells (to within the
Monte Carlo error of 0.005); the bootstrap-t is tighter and right for
independent comparisons, a little short (0.93) with few, strongly
clustered subjects, where the binomial variance function over-corrects.

Grid points where every replicate equals the estimate (``s_j = 0``: no
error in the data at that threshold, or a CMC at 100%) carry no bootstrap
information and would give a band of zero width; there the band is the
Clopper-Pearson interval of the rate on ``n`` trials at the pointwise level
``2 Phi(c) - 1`` that ``c`` stands for, so the family keeps its level. A
``floor`` (the pointwise interval, or a one-sided bound at zero errors on
the independent units) widens the band wherever it is narrower.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xarray as xr
from scipy import stats
from scipy.special import expit, logit, ndtr, ndtri

from .checks import check_level, check_replicates

__all__ = ["BAND_METHODS", "BAND_SCALES", "BAND_STUDENTISE", "simultaneous_band"]

#: Scales the max-modulus envelope is studentised on.
BAND_SCALES = ("probit", "logit", "identity")
#: Envelope methods.
BAND_METHODS = ("max-modulus",)
#: How replicates are studentised: all by the replicate sd, or each by its own standard error.
BAND_STUDENTISE = ("fixed", "replicate")

_REFERENCES = ("Campbell, Statistics in Medicine 13 (1994) 499-508 (ROC confidence bands); "
               "Macskassy, Provost & Rosset, ROC confidence bands: an empirical evaluation, ICML 2005; "
               "Hall & Horowitz, Annals of Statistics 41 (2013) 1892-1921; "
               "Montiel Olea & Plagborg-Moller, Journal of Applied Econometrics 34 (2019) 1-17 (sup-t bands); "
               "Davison & Hinkley, Bootstrap Methods and their Application (1997)")


def _names(along) -> tuple[str, ...]:
    names = (along,) if isinstance(along, str) else tuple(along) if isinstance(along, Sequence) else None
    if not names or not all(isinstance(a, str) for a in names):
        raise ValueError(f"along={along!r}; name the grid dimension(s) of the curve, e.g. along='threshold' or "
                         "along='rank' (or a tuple of names for one joint band).")
    return names


def _check_inputs(replicates, point, along, dim, scale, method, studentise):
    if not isinstance(replicates, xr.DataArray) or not isinstance(point, xr.DataArray):
        raise TypeError("simultaneous_band takes two DataArrays: the replicates over (dim, *along) and the point "
                        f"curve over along; got {type(replicates).__name__} and {type(point).__name__}.")
    if scale not in BAND_SCALES:
        raise ValueError(f"scale={scale!r}; choose one of {BAND_SCALES} (probit keeps the band inside [0, 1] "
                         "and behaves in the tails).")
    if method not in BAND_METHODS:
        raise ValueError(f"method={method!r}; choose one of {BAND_METHODS}.")
    if studentise not in BAND_STUDENTISE:
        raise ValueError(f"studentise={studentise!r}; choose 'fixed' (every replicate by the replicate sd, the "
                         "default) or 'replicate' (each replicate by its own standard error).")
    if dim not in replicates.dims:
        raise ValueError(f"dim={dim!r} is not a dimension of the replicates {replicates.dims}: name the "
                         "replicate dimension.")
    for a in along:
        if a == dim or a not in replicates.dims or a not in point.dims:
            raise ValueError(f"along={a!r} must be a dimension of both the replicates {replicates.dims} and the "
                             f"point curve {point.dims}, other than dim={dim!r}.")
    if set(point.dims) != set(replicates.dims) - {dim}:
        raise ValueError(f"the point curve has dims {point.dims} but the replicates {replicates.dims}: the point "
                         f"needs every dimension of the replicates except {dim!r}.")
    try:
        xr.align(replicates, point, join="exact")
    except ValueError:
        raise ValueError("the replicates and the point curve have different coordinates along "
                         f"{tuple(point.dims)}: compute both on the same grid.") from None


def _rates(values: np.ndarray, what: str) -> np.ndarray:
    finite = values[np.isfinite(values)]
    if finite.size and (finite.min() < -1e-12 or finite.max() > 1 + 1e-12):
        raise ValueError(f"the {what} must be rates in [0, 1]; they span {finite.min():.4g} to {finite.max():.4g}.")
    return np.clip(values, 0.0, 1.0)


def _trials(n, point: xr.DataArray, order, P: np.ndarray) -> tuple[np.ndarray, str]:
    """Trials behind each rate, (F, K): given, or inferred per curve from its finest point rate."""
    F, K = P.shape
    if n is not None:
        try:
            da = n if isinstance(n, xr.DataArray) else xr.DataArray(np.asarray(n, dtype=float))
            values = da.broadcast_like(point).transpose(*order).values.astype(float).reshape(F, K)
        except (ValueError, TypeError):
            raise ValueError(f"n must be a positive number or a DataArray over dims of the point curve "
                             f"{point.dims}; got {n!r}.") from None
        if not (np.isfinite(values) & (values > 0)).all():
            raise ValueError("n (the trials behind each rate) must be positive and finite.")
        return values, "given"
    # per curve (the last grid dim): the smallest positive rate or complement is 1/n when the point is k/n
    shape = point.transpose(*order).shape
    edge = np.minimum(P, 1 - P).reshape(shape)
    edge = np.where(edge > 0, edge, np.inf).min(axis=-1, keepdims=True)
    if not np.isfinite(edge).all():
        raise ValueError("a curve has every rate at 0 or 1, so nothing says how many trials lie behind it: "
                         "pass n= (the comparisons, or the independent subjects, behind each rate).")
    values = np.broadcast_to(1.0 / edge, shape).reshape(F, K).copy()
    return values, "inferred per curve: 1 / (smallest rate or complement of a rate above 0)"


def _forward(r, n, scale):
    if scale == "identity":
        return r
    shrunk = (r * n + 0.5) / (n + 1)
    return ndtri(shrunk) if scale == "probit" else logit(shrunk)


def _spread(r, n, scale):
    """The binomial variance function on the scale: g'(r') sqrt(r' (1 - r')), up to a constant."""
    shrunk = (r * n + 0.5) / (n + 1)
    root = np.sqrt(shrunk * (1 - shrunk))
    if scale == "identity":
        return root
    if scale == "logit":
        return 1 / root
    z = ndtri(shrunk)  # probit: g' = 1 / phi(z)
    return root * np.exp(0.5 * z * z)


def _inverse(g, n, scale):
    if scale == "identity":
        return np.clip(g, 0.0, 1.0)
    shrunk = ndtr(g) if scale == "probit" else expit(g)
    return np.clip((shrunk * (n + 1) - 0.5) / n, 0.0, 1.0)


def _critical(M: np.ndarray, level: float, n_grid: int) -> float:
    """The ceil(level (B + 1))-th smallest of the finite M_b (B: their number)."""
    M = np.sort(M[np.isfinite(M)])
    if M.size == 0:  # no grid point with bootstrap information: Bonferroni over the grid
        return float(ndtri(1 - (1 - level) / (2 * n_grid)))
    k = min(max(math.ceil(level * (M.size + 1) - 1e-9), 1), M.size)
    return float(M[k - 1])


def simultaneous_band(replicates: xr.DataArray, point: xr.DataArray, *, level: float, along, dim: str = "replicate",
                      scale: str = "probit", method: str = "max-modulus", studentise: str = "fixed", n=None,
                      floor: xr.DataArray | None = None) -> xr.DataArray:
    """A family-wise band of a rate curve: the studentised max-modulus envelope of its bootstrap replicates.

    With probability about ``level`` the whole true curve (every grid point
    at once) lies inside, where a pointwise band holds each point alone.
    The recipe is in the module docstring; the critical value ``c`` and the
    pointwise ``z`` it replaces are in ``attrs``.

    Parameters
    ----------
    replicates : xarray.DataArray
        Bootstrap replicates of the rates, over ``(dim, *along)`` and any
        other dims; each combination of the other dims (a ``collection``,
        a ``group``) is its own family with its own ``c``.
    point : xarray.DataArray
        The estimate on the full data: every dim of ``replicates`` but ``dim``,
        with the same coordinates.
    level : float, keyword-only
        Family-wise confidence level in (0, 1). No default: say it.
    along : str or sequence of str, keyword-only
        The grid: ``"threshold"`` for DET and ROC rates, ``"rank"`` for the
        CMC. Several names make one joint band: e.g. FMR and FNMR stacked on
        a ``rate`` dim with ``along=("rate", "threshold")`` hold both curves
        at once, so the union of the (FMR band x FNMR band) rectangles over
        the thresholds covers the whole DET curve at ``level``.
    dim : str, keyword-only
        The replicate dimension.
    scale : {"probit", "logit", "identity"}, keyword-only
        Scale of the studentisation; probit and logit keep the band inside
        [0, 1] and behave in the tails; identity clips at 0 and 1.
    method : {"max-modulus"}, keyword-only
    studentise : {"fixed", "replicate"}, keyword-only
        Divide every replicate's deviation by ``s_j`` (the plain envelope,
        default: at or above the level in every measured cell, wider than
        needed for independent comparisons at small counts), or each by its
        own standard error ``s_j v(theta*) / v(theta_hat)`` (a bootstrap-t
        with the binomial variance function: right for independent
        comparisons, about 0.93 at 95% with 100 strongly clustered
        subjects). See the module docstring for the measurements.
    n : float or xarray.DataArray, optional, keyword-only
        Trials behind each rate (a number, or over dims of ``point``): the
        continuity offset ``(r n + 1/2) / (n + 1)`` and the Clopper-Pearson
        bounds where every replicate equals the estimate use it. Give the
        independent units (subjects) when attempts are correlated. Default:
        per curve (each combination of the other dims and all but the last
        name in ``along``), ``1 /`` the smallest rate (or complement of a
        rate) above 0, which is at most the count when the rates are
        ``k / n``. With the subject bootstrap of :mod:`bioxr.bootstrap`, its
        effective counts (``fmr_n_eff``, ``fnmr_n_eff``) are the ones to give.
    floor : xarray.DataArray, optional, keyword-only
        Bounds over (dims of ``point``, ``"bound"``) with ``lower`` and
        ``upper``, e.g. the pointwise interval or a one-sided bound at zero
        errors: the band is widened to contain them.

    Returns
    -------
    xarray.DataArray
        The band over ``(*point.dims, "bound")``, ``bound`` = ``lower``,
        ``upper``. attrs: ``band`` (the label), ``level``, ``method``,
        ``scale``, ``critical_value`` (a float; a list over the families, in
        the order of ``critical_value_dims``, when there are several),
        ``pointwise_z`` (``Phi^-1(1 - (1 - level) / 2)``),
        ``pointwise_level`` (``2 Phi(c) - 1``), ``n_replicates``,
        ``n_degenerate`` (grid points where every replicate equals the
        estimate), ``n``, ``floor`` and ``references``.

    Raises
    ------
    ValueError
        For a level outside (0, 1), unknown scale or method, dims or
        coordinates that do not match, values outside [0, 1], or a curve all
        at 0 and 1 without ``n``.

    See Also
    --------
    bioxr.bootstrap.bootstrap_replicates : replicates of FMR and FNMR over (replicate, threshold).

    Notes
    -----
    The band is symmetric on the transformed scale, so where the replicates
    are skewed it can be narrower than the percentile interval on one side
    at some points; pass the pointwise interval as ``floor`` to have it
    never narrower. ``c`` is a quantile of ``B`` values: ask for at least
    ``50 / (1 - level)`` replicates (a :class:`FewReplicatesWarning` says so).

    References
    ----------
    Campbell, Advances in statistical methodology for the evaluation of
    diagnostic and laboratory tests, Statistics in Medicine 13 (1994)
    499-508 (bootstrap confidence bands of the ROC curve); Macskassy,
    Provost & Rosset, ROC confidence bands: an empirical evaluation, ICML
    2005 (pointwise bands do not contain whole curves); Hall & Horowitz, A
    simple bootstrap method for constructing nonparametric confidence bands
    for functions, Annals of Statistics 41 (2013) 1892-1921; Montiel Olea &
    Plagborg-Moller, Simultaneous confidence bands: theory, implementation,
    and an application to SVARs, Journal of Applied Econometrics 34 (2019)
    1-17 (the sup-t band); Davison & Hinkley, Bootstrap Methods and their
    Application (1997) (studentised bootstrap, the (B + 1) quantile rule).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bioxr._core import simultaneous_band
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal(size=200)
    >>> t = np.linspace(-1.5, 1.5, 30)
    >>> point = xr.DataArray((scores[:, None] >= t).mean(0), dims="threshold", coords={"threshold": t})
    >>> draws = scores[rng.integers(0, 200, (1000, 200))]
    >>> reps = xr.DataArray((draws[..., None] >= t).mean(1), dims=("replicate", "threshold"), coords={"threshold": t})
    >>> band = simultaneous_band(reps, point, level=0.95, along="threshold", n=200)
    >>> band.dims, band.attrs["band"]
    (('threshold', 'bound'), 'simultaneous (max-modulus, studentised on the probit scale)')
    >>> bool(band.attrs["critical_value"] > band.attrs["pointwise_z"])
    True
    """
    level = check_level(level)
    along = _names(along)
    _check_inputs(replicates, point, along, dim, scale, method, studentise)
    B = check_replicates(replicates.sizes[dim], minimum=2, level=level)
    fam = [d for d in point.dims if d not in along]
    order = (*fam, *along)
    F = int(np.prod([point.sizes[d] for d in fam])) if fam else 1
    K = int(np.prod([point.sizes[d] for d in along]))
    P = _rates(point.transpose(*order).values.astype(float).reshape(F, K), "point rates")
    R = _rates(replicates.transpose(dim, *order).values.astype(float).reshape(B, F, K), "replicates")
    N, n_text = _trials(n, point, order, P)
    floor_lo = floor_hi = None
    if floor is not None:
        floor_lo, floor_hi = _floor(floor, point, order, F, K)

    gP, gR = _forward(P, N, scale), _forward(R, N, scale)
    with np.errstate(invalid="ignore"):
        sd = np.nanstd(gR, axis=0, ddof=1)
    sd = np.where(np.isfinite(sd), sd, 0.0)
    degenerate = (sd <= 1e-12 * np.maximum(1.0, np.abs(gP))) & np.isfinite(gP)
    safe = np.where(degenerate, 1.0, sd)
    # s_j for every replicate, or each replicate's own standard error s_j v(theta*) / v(theta_hat) (bootstrap-t)
    se = safe * (_spread(R, N, scale) / _spread(P, N, scale) if studentise == "replicate" else 1.0)
    with np.errstate(invalid="ignore"):
        Z = np.abs(gR - gP) / se
    Z = np.where(degenerate | ~np.isfinite(Z), -np.inf, Z)
    M = Z.max(axis=2)  # (B, F); -inf: a replicate without a finite value
    c = np.array([_critical(M[:, f], level, K) for f in range(F)])

    half = c[:, None] * sd
    lower, upper = _inverse(gP - half, N, scale), _inverse(gP + half, N, scale)
    # no bootstrap information: Clopper-Pearson on n trials at the pointwise level c stands for
    tail = np.broadcast_to(ndtr(-c)[:, None], P.shape)  # (1 - pointwise level) / 2
    k = np.clip(P * N, 0, N)
    with np.errstate(invalid="ignore", divide="ignore"):
        cp_lo = np.where(k > 0, stats.beta.ppf(tail, np.maximum(k, 1e-300), N - k + 1), 0.0)
        cp_hi = np.where(k < N, stats.beta.ppf(1 - tail, k + 1, np.maximum(N - k, 1e-300)), 1.0)
    lower = np.where(degenerate, cp_lo, lower)
    upper = np.where(degenerate, cp_hi, upper)
    if floor_lo is not None:
        lower, upper = np.fmin(lower, floor_lo), np.fmax(upper, floor_hi)
    missing = ~np.isfinite(P)
    lower, upper = np.where(missing, np.nan, lower), np.where(missing, np.nan, upper)

    shape = tuple(point.sizes[d] for d in order)
    values = np.stack([lower.reshape(shape), upper.reshape(shape)], axis=-1)
    coords = {k_: v for k_, v in point.coords.items()}
    out = xr.DataArray(values, dims=(*order, "bound"), coords={**coords, "bound": ["lower", "upper"]})
    out = out.transpose(*point.dims, "bound")
    on = "rate" if scale == "identity" else scale
    out.attrs = {
        "band": f"simultaneous ({method}, studentised on the {on} scale)",
        "level": level,
        "method": method,
        "scale": scale,
        "studentise": ("each replicate by its own standard error s_j v(theta*) / v(theta_hat), v the binomial "
                       "variance function on the scale" if studentise == "replicate" else "every replicate by s_j"),
        "critical_value": float(c[0]) if F == 1 else [float(v) for v in c],
        "pointwise_z": float(ndtri(1 - (1 - level) / 2)),
        "pointwise_level": float(2 * ndtr(c.min()) - 1) if F == 1 else [float(2 * ndtr(v) - 1) for v in c],
        "n_replicates": B,
        "n_grid_points": K,
        "n_degenerate": int(degenerate.sum()),
        "degenerate_rule": ("where every replicate equals the estimate: Clopper-Pearson bounds on n trials at the "
                            "pointwise level 2 Phi(c) - 1"),
        "continuity_offset": "(r n + 1/2) / (n + 1) before the transform" if scale != "identity" else "none",
        "n": n_text,
        "floor": "none" if floor is None else "given: the band contains it",
        "references": _REFERENCES,
    }
    if F > 1:
        out.attrs["critical_value_dims"] = list(fam)
    if point.name is not None:
        out.name = f"{point.name}_band"
    return out


def _floor(floor, point, order, F, K):
    if not isinstance(floor, xr.DataArray) or "bound" not in floor.dims:
        raise ValueError("floor= takes a DataArray with a 'bound' dimension (lower, upper), e.g. a pointwise "
                         "interval.")
    labels = floor["bound"].values.tolist() if "bound" in floor.coords else []
    if set(labels) != {"lower", "upper"}:
        raise ValueError(f"floor= needs bound labels 'lower' and 'upper'; it has {labels}.")
    extra = [d for d in floor.dims if d != "bound" and d not in point.dims]
    if extra:
        raise ValueError(f"floor= has dims {extra} that the point curve {point.dims} lacks.")
    try:
        xr.align(point, floor.isel(bound=0, drop=True), join="exact")
    except ValueError:
        raise ValueError("floor= and the point curve have different coordinates: compute both on one grid.") from None
    parts = [floor.sel(bound=b, drop=True).broadcast_like(point).transpose(*order).values.astype(float).reshape(F, K)
             for b in ("lower", "upper")]
    return parts[0], parts[1]
