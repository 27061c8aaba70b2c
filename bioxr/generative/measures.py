"""Specificity and generalisation of generative models (Schestowitz et al. 2006): the measures."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import numpy as np
import xarray as xr
from scipy.spatial.distance import cdist

from ._search import _TRICK_METRICS, _nearest

__all__ = ["DEFAULT_BLOCK_SIZE", "SYNTHETIC", "TRAINING", "compare_models", "generalisation", "specificity",
           "specificity_generalisation"]
#: Dimension of the per-sample results over the training set.
TRAINING = "training"
#: Dimension of the per-sample results over the synthetic set.
SYNTHETIC = "synthetic"
#: Default largest number of distances held at once: 2**23 float64 = 64 MB.
DEFAULT_BLOCK_SIZE = 2**23

# cdist metrics whose default parameters are estimated from the data passed
# in: tile by tile they would change from block to block.
_DATA_DEPENDENT = {"seuclidean": "V", "mahalanobis": "VI"}
_METHOD = "specificity and generalisation of a generative model (Schestowitz et al. 2006)"
_SE_TEXT = "sigma = SD(nearest distances, ddof=0) / sqrt(count - 1) = SD(ddof=1) / sqrt(count)"
_REFERENCE = "Schestowitz et al. (2006), equations 5 to 8"


# --------------------------------------------------------------------------- inputs
def _samples(data, name: str, sample_dim: Hashable):
    """``(values (count, features), feature_dims, DataArray or None)`` of one input."""
    if isinstance(data, xr.Dataset):
        raise TypeError(f"{name} is a Dataset: pass a DataArray (or a NumPy array) of samples.")
    if isinstance(data, xr.DataArray):
        if sample_dim not in data.dims:
            raise ValueError(
                f"{name} has no sample dimension {sample_dim!r} (dims {tuple(data.dims)}); "
                "name it with sample_dim=."
            )
        features = tuple(d for d in data.dims if d != sample_dim)
        return data.transpose(sample_dim, *features), features, data
    values = np.asarray(data)
    if values.ndim == 0:
        raise ValueError(f"{name} is a scalar: pass samples along the first axis.")
    return values, None, None


def _flatten(values, name: str) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, not dtype {values.dtype}.")
    if values.shape[0] == 0:
        raise ValueError(f"{name} has no samples.")
    if values.size == 0:
        raise ValueError(f"{name} has no features.")
    flat = values.reshape(values.shape[0], -1)
    if not np.isfinite(flat).all():
        bad = int((~np.isfinite(flat)).any(axis=1).sum())
        raise ValueError(
            f"{name} contains NaN or infinite values ({bad} of {flat.shape[0]} samples): "
            "distances to them are undefined; drop or impute those samples first."
        )
    return flat


def _prepare(training, synthetic, sample_dim):
    x, xfeat, xda = _samples(training, "training", sample_dim)
    y, yfeat, yda = _samples(synthetic, "synthetic", sample_dim)
    if xfeat is not None and yfeat is not None:
        if set(xfeat) != set(yfeat):
            raise ValueError(f"training and synthetic have different feature dims: {xfeat} and {yfeat}.")
        y = y.transpose(sample_dim, *xfeat)
        for d in xfeat:
            if x.sizes[d] != y.sizes[d]:
                raise ValueError(f"feature dim {d!r} has size {x.sizes[d]} in training, {y.sizes[d]} in synthetic.")
            if d in x.indexes and d in y.indexes and not x.indexes[d].equals(y.indexes[d]):
                raise ValueError(f"feature dim {d!r} has different coordinates in training and synthetic.")
    x = _flatten(x.values if xda is not None else x, "training")
    y = _flatten(y.values if yda is not None else y, "synthetic")
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"training has {x.shape[1]} features per sample, synthetic {y.shape[1]}: they must match."
        )
    return x, y, xda, yda


def _check_metric(metric, metric_kwargs) -> tuple[str, dict]:
    kwargs = dict(metric_kwargs or {})
    if callable(metric):
        return getattr(metric, "__name__", repr(metric)), kwargs
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string or a callable, not {type(metric).__name__}.")
    if metric in _DATA_DEPENDENT and _DATA_DEPENDENT[metric] not in kwargs:
        key = _DATA_DEPENDENT[metric]
        raise ValueError(
            f"metric {metric!r} needs metric_kwargs={{{key!r}: ...}}: scipy would otherwise "
            "estimate it from each block, and the distances would depend on the block size."
        )
    if metric in _TRICK_METRICS and kwargs:
        raise ValueError(f"metric {metric!r} takes no metric_kwargs (got {sorted(kwargs)}).")
    if metric in _TRICK_METRICS or metric in _DATA_DEPENDENT:
        return metric, kwargs
    try:  # fail before the pass on an unknown name or option
        cdist(np.zeros((1, 2)), np.ones((1, 2)), metric, **kwargs)
    except (ValueError, TypeError) as error:
        raise ValueError(f"metric {metric!r} is not usable by scipy.spatial.distance.cdist: {error}") from error
    return metric, kwargs


def _check_block_size(block_size) -> int:
    if block_size is None:
        return DEFAULT_BLOCK_SIZE
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer (distances per tile), not {block_size!r}.")
    return int(block_size)


# --------------------------------------------------------------------------- nearest neighbours
# Unit roundoff of float64 and the per-entry bound of the dot-product trick
# (see _trick_nearest): |t_ij - D_ij| <= _trick_factor(f) * (|x'_i|^2 + |y'_j|^2).
def _sample_coords(da: xr.DataArray | None, sample_dim, new_dim: str, count: int) -> dict:
    """Coordinates of ``sample_dim`` moved onto ``new_dim`` (non-index ones prefixed)."""
    coords = {new_dim: np.arange(count)}
    if da is None:
        return coords
    for name, coord in da.coords.items():
        if coord.dims != (sample_dim,):
            continue
        if name == sample_dim:
            coords[new_dim] = coord.values
        else:
            coords[f"{new_dim}_{name}"] = (new_dim, coord.values, coord.attrs)
    return coords


def _mean_se(distances: np.ndarray, what: str, symbol: str):
    count = distances.size
    if count < 2:
        raise ValueError(
            f"sigma_{symbol} needs at least 2 {what} samples (SD / sqrt({'n' if symbol == 'G' else 'm'} - 1) "
            f"divides by zero with {count}); pass more samples."
        )
    return float(distances.mean()), float(distances.std(ddof=0) / np.sqrt(count - 1))


def _metric_options_text(kwargs: dict) -> str:
    parts = []
    for key, value in kwargs.items():
        arr = np.asarray(value)
        parts.append(f"{key}={value!r}" if arr.ndim == 0 else f"{key}=<array {arr.shape}>")
    return ", ".join(parts)


def _compute(training, synthetic, sample_dim, metric, metric_kwargs, block_size, *, want_g: bool, want_s: bool):
    metric_name, kwargs = _check_metric(metric, metric_kwargs)
    block = _check_block_size(block_size)
    x, y, xda, yda = _prepare(training, synthetic, sample_dim)
    n, m = x.shape[0], y.shape[0]
    # Fail before the expensive pass when a standard error cannot be formed.
    if want_g and n < 2:
        _mean_se(np.zeros(n), "training", "G")  # raises
    if want_s and m < 2:
        _mean_se(np.zeros(m), "synthetic", "S")  # raises
    dx, ix, dy, iy = _nearest(x, y, metric, kwargs, block)

    distance_text = f"{metric_name} distance between flattened samples ({x.shape[1]} features)"
    data_vars: dict = {}
    coords: dict = {}
    if want_g:
        g, sigma_g = _mean_se(dx, "training", "G")
        data_vars["G"] = ((), g, {"long_name": "generalisation: mean over training samples of the nearest synthetic distance"})
        data_vars["sigma_G"] = ((), sigma_g, {"long_name": "standard error of G", "formula": _SE_TEXT})
    if want_s:
        s, sigma_s = _mean_se(dy, "synthetic", "S")
        data_vars["S"] = ((), s, {"long_name": "specificity: mean over synthetic samples of the nearest training distance"})
        data_vars["sigma_S"] = ((), sigma_s, {"long_name": "standard error of S", "formula": _SE_TEXT})
    data_vars["n_training"] = ((), n, {"long_name": "number of training samples"})
    data_vars["n_synthetic"] = ((), m, {"long_name": "number of synthetic samples"})
    if want_g:
        coords.update(_sample_coords(xda, sample_dim, TRAINING, n))
        data_vars["training_distance"] = (TRAINING, dx, {"long_name": "distance to the nearest synthetic sample"})
        data_vars["training_nearest"] = (TRAINING, ix, {"long_name": "position of the nearest synthetic sample"})
    if want_s:
        coords.update(_sample_coords(yda, sample_dim, SYNTHETIC, m))
        data_vars["synthetic_distance"] = (SYNTHETIC, dy, {"long_name": "distance to the nearest training sample"})
        data_vars["synthetic_nearest"] = (SYNTHETIC, iy, {"long_name": "position of the nearest training sample"})
    attrs = {
        "method": _METHOD,
        "metric": metric_name,
        "distance": distance_text,
        "metric_options": _metric_options_text(kwargs),
        "sd_ddof": 0,
        "standard_error": _SE_TEXT + " (nearest distances treated as independent)",
        "nearest_neighbour": (
            "blocked exact search, at most block_size distances per tile; "
            + ("centred on the training mean, |a|^2 + |b|^2 - 2ab to screen candidates within its rounding "
               "bound, direct |a - b| to choose and report; " if metric_name in _TRICK_METRICS else "")
            + "ties go to the lowest position"
        ),
        "block_size": block,
        "reference": _REFERENCE,
    }
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


# --------------------------------------------------------------------------- public API
_PARAMS = """
    training : xarray.DataArray or array_like
        The training samples: a DataArray with dimension ``sample_dim`` and
        any feature dims (flattened into one vector per sample), or an
        array whose first axis is the sample (a 1-D array is one feature
        per sample).
    synthetic : xarray.DataArray or array_like
        Samples drawn from the model, as ``training``; same feature dims
        (matched by name, coordinates must agree) or the same number of
        features.
    sample_dim : hashable, keyword-only
        Name of the sample dimension of DataArray inputs; default
        ``"sample"``.
    metric : str or callable, keyword-only
        Distance ``|I_i - I_j|``: ``"euclidean"`` (default) or
        ``"sqeuclidean"`` (screened by the dot-product trick, then computed
        directly: exact for any offset of the data), or any metric
        of :func:`scipy.spatial.distance.cdist` (``"cityblock"``,
        ``"cosine"``, ``"minkowski"``, a callable...).
    metric_kwargs : mapping, keyword-only
        Options of a cdist metric (``{"p": 3}`` for ``"minkowski"``).
        ``"seuclidean"`` and ``"mahalanobis"`` need ``V`` / ``VI`` here:
        estimated per tile they would depend on the block size.
    block_size : int, keyword-only
        Largest number of distances held at once (a tile of ``rows x cols``
        with ``rows * cols <= block_size``); default
        :data:`DEFAULT_BLOCK_SIZE` = ``2**23`` (64 MB of float64). The
        result does not depend on it."""


def specificity_generalisation(
    training,
    synthetic,
    *,
    sample_dim: Hashable = "sample",
    metric: str | Callable = "euclidean",
    metric_kwargs: Mapping | None = None,
    block_size: int | None = None,
) -> xr.Dataset:
    """Specificity and generalisation of a generative model, with standard errors.

    ``G = mean_i min_j |I_i - I_j|`` over training samples ``i``, ``S =
    mean_j min_i |I_i - I_j|`` over synthetic samples ``j``, and
    ``sigma = SD(ddof=0) / sqrt(count - 1)``; both nearest distances come
    from one blocked pass (see the module notes).

    Parameters
    ----------{params}

    Returns
    -------
    xarray.Dataset
        Scalars ``G``, ``sigma_G``, ``S``, ``sigma_S``, ``n_training``,
        ``n_synthetic``; over dim ``training``: ``training_distance`` (the
        nearest synthetic distance of each training sample, whose mean is
        ``G``) and ``training_nearest`` (its position in ``synthetic``);
        over dim ``synthetic``: ``synthetic_distance`` and
        ``synthetic_nearest`` likewise. The ``training`` / ``synthetic``
        coordinates take the ``sample_dim`` labels of DataArray inputs
        (positions for arrays); other coordinates on ``sample_dim`` come
        along prefixed (``training_subject``). attrs ``method``, ``metric``,
        ``distance``, ``sd_ddof``, ``standard_error``, ``block_size``,
        ``reference``.

    Raises
    ------
    ValueError
        NaN or infinite values, mismatched features, fewer than 2 training
        or synthetic samples (the standard errors divide by ``count - 1``),
        or an unknown metric.

    See Also
    --------
    generalisation, specificity

    References
    ----------
    METHODS.md section 6; seed ``003_6b210d2704e13292.txt``: Schestowitz,
    Twining, Cootes et al., specificity and generalisation of appearance
    models (equations 5-8; equation 8's ``min_j`` is read as ``min_i``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bioxr.generative import specificity_generalisation
    >>> rng = np.random.default_rng(0)
    >>> training = xr.DataArray(rng.normal(size=(40, 3, 3)), dims=("sample", "y", "x"))
    >>> good = xr.DataArray(rng.normal(size=(60, 3, 3)), dims=("sample", "y", "x"))
    >>> res = specificity_generalisation(training, good)
    >>> int(res.n_training), int(res.n_synthetic), res.training_distance.dims
    (40, 60, ('training',))
    >>> bool(np.isclose(res.G, res.training_distance.mean()))
    True
    >>> biased = specificity_generalisation(training, good + 2.0)
    >>> bool(biased.G > res.G + 3 * res.sigma_G), bool(biased.S > res.S + 3 * res.sigma_S)
    (True, True)
    >>> float(specificity_generalisation(training, training).S)  # memorised: perfect
    0.0
    """
    return _compute(training, synthetic, sample_dim, metric, metric_kwargs, block_size, want_g=True, want_s=True)


def generalisation(
    training,
    synthetic,
    *,
    sample_dim: Hashable = "sample",
    metric: str | Callable = "euclidean",
    metric_kwargs: Mapping | None = None,
    block_size: int | None = None,
) -> xr.Dataset:
    """Generalisation ``G = mean_i min_j |I_i - I_j|`` and its standard error.

    How close the model's samples come to each training sample: low when
    the model can reach the whole training class.
    ``sigma_G = SD_i(min_j |I_i - I_j|) / sqrt(n - 1)`` with the population
    SD (``ddof=0``), i.e. the usual standard error of the mean.

    Parameters
    ----------{params}

    Returns
    -------
    xarray.Dataset
        Scalars ``G``, ``sigma_G``, ``n_training``, ``n_synthetic``;
        ``training_distance`` and ``training_nearest`` over dim
        ``training``. attrs as :func:`specificity_generalisation`.

    See Also
    --------
    specificity, specificity_generalisation

    References
    ----------
    METHODS.md section 6, equations 5 and 7 of seed ``003_6b210d2704e13292.txt``.

    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.generative import generalisation
    >>> rng = np.random.default_rng(1)
    >>> training = rng.normal(size=(30, 5))
    >>> res = generalisation(training, np.vstack([training, rng.normal(size=(10, 5))]))
    >>> float(res.G), float(res.sigma_G), res.attrs["metric"]
    (0.0, 0.0, 'euclidean')
    """
    return _compute(training, synthetic, sample_dim, metric, metric_kwargs, block_size, want_g=True, want_s=False)


def specificity(
    training,
    synthetic,
    *,
    sample_dim: Hashable = "sample",
    metric: str | Callable = "euclidean",
    metric_kwargs: Mapping | None = None,
    block_size: int | None = None,
) -> xr.Dataset:
    """Specificity ``S = mean_j min_i |I_i - I_j|`` and its standard error.

    How close each synthetic sample lies to some training sample: low when
    the model generates only members of the training class.
    ``sigma_S = SD_j(min_i |I_i - I_j|) / sqrt(m - 1)`` with the population
    SD (``ddof=0``), i.e. the usual standard error of the mean.

    Parameters
    ----------{params}

    Returns
    -------
    xarray.Dataset
        Scalars ``S``, ``sigma_S``, ``n_training``, ``n_synthetic``;
        ``synthetic_distance`` and ``synthetic_nearest`` over dim
        ``synthetic``. attrs as :func:`specificity_generalisation`.

    See Also
    --------
    generalisation, specificity_generalisation

    References
    ----------
    METHODS.md section 6, equations 6 and 8 of seed ``003_6b210d2704e13292.txt``.

    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.generative import specificity
    >>> training = np.array([[0.0, 0.0], [10.0, 0.0]])
    >>> synthetic = np.array([[0.0, 1.0], [10.0, 3.0], [4.0, 0.0]])
    >>> res = specificity(training, synthetic)
    >>> res.synthetic_distance.values.tolist(), res.synthetic_nearest.values.tolist()
    ([1.0, 3.0, 4.0], [0, 1, 0])
    >>> round(float(res.S), 6), round(float(res.sigma_S), 6)
    (2.666667, 0.881917)
    """
    return _compute(training, synthetic, sample_dim, metric, metric_kwargs, block_size, want_g=False, want_s=True)


for _f in (specificity_generalisation, generalisation, specificity):
    _f.__doc__ = _f.__doc__.replace("{params}", _PARAMS)
del _f


# --------------------------------------------------------------------------- several models
def compare_models(
    training,
    synthetic,
    *,
    dim: Hashable = "model",
    sample_dim: Hashable = "sample",
    synthetic_dim: Hashable | None = None,
    metric: str | Callable = "euclidean",
    metric_kwargs: Mapping | None = None,
    block_size: int | None = None,
) -> xr.Dataset:
    """Specificity and generalisation of several models built from one training set.

    Parameters
    ----------
    training : xarray.DataArray or array_like
        As :func:`specificity_generalisation`.
    synthetic : xarray.DataArray or mapping of str to array_like
        Each model's samples: a DataArray with dimension ``dim`` (one model
        per label; other coordinates on ``dim`` come along), or a mapping
        ``{name: samples}`` (models may draw different numbers of samples).
    dim : hashable, keyword-only
        The models' dimension, in ``synthetic`` and in the result.
    sample_dim : hashable, keyword-only
        Sample dimension of ``training`` (and of ``synthetic`` unless
        ``synthetic_dim`` names another).
    synthetic_dim : hashable, keyword-only
        Sample dimension of ``synthetic`` (``"draw"`` for
        :func:`bioxr.simulate.generative_models`); default ``sample_dim``.
    metric, metric_kwargs, block_size : keyword-only
        As :func:`specificity_generalisation`.

    Returns
    -------
    xarray.Dataset
        Over ``dim``: ``G``, ``sigma_G``, ``S``, ``sigma_S``,
        ``n_training``, ``n_synthetic``; ``training_distance`` over
        (``dim``, ``training``), which pairs the models' nearest distances
        sample by sample (:func:`describe` uses it). attrs as
        :func:`specificity_generalisation`.

    Examples
    --------
    >>> from bioxr import generative, simulate
    >>> clouds = simulate.generative_models(n_training=60, n_synthetic=80, n_features=4, seed=2)
    >>> res = generative.compare_models(clouds.training, clouds.synthetic, synthetic_dim="draw")
    >>> res.G.dims, bool((res.G.sel(model="poor") > res.G.sel(model="good")).item())
    (('model',), True)
    """
    if isinstance(synthetic, Mapping):
        items, coords = list(synthetic.items()), {}
    elif isinstance(synthetic, xr.DataArray):
        if dim not in synthetic.dims:
            raise ValueError(f"synthetic has no model dimension {dim!r} (dims {tuple(synthetic.dims)}); name it with dim=.")
        items = [(label, synthetic.isel({dim: k})) for k, label in enumerate(synthetic[dim].values.tolist())]
        coords = {name: c.variable for name, c in synthetic.coords.items() if c.dims == (dim,) and name != dim}
    else:
        raise TypeError(f"synthetic must be a DataArray with a {dim!r} dimension or a mapping of model name to "
                        f"samples, not {type(synthetic).__name__}.")
    if not items:
        raise ValueError("synthetic holds no model.")
    draws = sample_dim if synthetic_dim is None else synthetic_dim
    results = []
    for label, samples in items:
        if isinstance(samples, xr.DataArray) and draws != sample_dim:
            if draws not in samples.dims:
                raise ValueError(f"model {label!r} has no sample dimension {draws!r} (dims {tuple(samples.dims)}).")
            samples = samples.rename({draws: sample_dim})
        res = specificity_generalisation(training, samples, sample_dim=sample_dim, metric=metric,
                                         metric_kwargs=metric_kwargs, block_size=block_size)
        results.append(res[["G", "sigma_G", "S", "sigma_S", "n_training", "n_synthetic", "training_distance"]])
    out = xr.concat(results, dim=dim, combine_attrs="override").assign_coords({dim: [k for k, _ in items], **coords})
    return out


# --------------------------------------------------------------------------- sentences and table
