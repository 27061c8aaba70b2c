"""Specificity and generalisation in sentences and a table, for reports and notebooks."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .measures import TRAINING

__all__ = ["describe", "to_markdown"]


def _num(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, in positional notation (1,234; 0.0123)."""
    if not np.isfinite(x) or x == 0:
        return f"{x:g}"
    decimals = max(0, digits - 1 - int(np.floor(np.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


def _pm(value: float, se: float) -> tuple[str, str]:
    """``value`` and ``se`` to the decimals of ``se``'s second significant digit (1.191, 0.012)."""
    if not (np.isfinite(se) and se > 0):
        return _num(value), _num(se)
    decimals = max(0, 1 - int(np.floor(np.log10(se))))
    return f"{value:,.{decimals}f}", f"{se:,.{decimals}f}"


def _diff_se(result, measure: str, dim, best, other) -> tuple[float, str]:
    """Standard error of ``measure[other] - measure[best]`` and how it was formed."""
    td = result.get("training_distance")
    if measure == "G" and td is not None and td.dims == (dim, TRAINING) and bool(np.isfinite(td).all()):
        d = (td.sel({dim: other}) - td.sel({dim: best})).values
        return float(d.std(ddof=0) / np.sqrt(d.size - 1)), f"paired over the same {d.size:,} training samples"
    sigma = f"sigma_{measure}"
    se = float(np.hypot(result[sigma].sel({dim: other}), result[sigma].sel({dim: best})))
    return se, "independent " + ("synthetic sets" if measure == "S" else "estimates")


def describe(result: xr.Dataset, *, z: float = 2.0, part: str = "all") -> str:
    """What specificity and generalisation say, in sentences (Markdown).

    Each model's ``G`` and ``S`` with standard errors and counts; with
    several models, which is lowest on each measure and by how many
    standard errors of the difference the others are higher (for ``G``
    paired over the shared training samples when ``training_distance``
    is there, else as independent estimates; for ``S`` the synthetic sets
    are independent), and whether one model is better on both counts.

    Parameters
    ----------
    result : xarray.Dataset
        From :func:`specificity_generalisation` (one model) or
        :func:`compare_models` (one dimension of models); a Dataset of
        results concatenated along a numeric dimension (training sizes, say)
        is described as a trend.
    z : float, keyword-only
        Differences smaller than ``z`` standard errors are called unresolved.
    part : {"all", "verdict"}, keyword-only
        ``"verdict"``: only the sentence saying which model is better (for a
        summary), for a dimension of named models.

    Returns
    -------
    str

    Examples
    --------
    >>> from bioxr import generative, simulate
    >>> clouds = simulate.generative_models(n_training=60, n_synthetic=80, n_features=4, seed=2)
    >>> res = generative.compare_models(clouds.training, clouds.synthetic, synthetic_dim="draw")
    >>> "**good** is the better model on both counts" in generative.describe(res)
    True
    """
    if not isinstance(result, xr.Dataset) or not {"G", "sigma_G", "S", "sigma_S"} <= set(result.data_vars):
        raise TypeError("describe takes the result of bioxr.generative.specificity_generalisation or compare_models.")
    dims = result["G"].dims
    if len(dims) > 1:
        raise ValueError(f"describe takes one model or one dimension of models, not dims {dims}.")
    named = len(dims) == 1 and result.sizes[dims[0]] > 1 and not np.issubdtype(result[dims[0]].dtype, np.number)
    if part not in ("all", "verdict") or (part == "verdict" and not named):
        raise ValueError(f"part must be 'all' or, for two or more named models, 'verdict'; got {part!r}.")
    metric = result.attrs.get("metric", "euclidean")
    caveat = (f"Both are mean {metric} distances to the nearest sample of the other set, in the samples' own units: "
              "lower is better. A model that only reproduces its training samples scores 0 on both, so low values "
              "do not rule out over-fitting; compare models on the same training set, and check held-out samples.")

    def one(ds, label=None):
        head = f"**{label}**: " if label is not None else ""
        g, s = _pm(float(ds.G), float(ds.sigma_G)), _pm(float(ds.S), float(ds.sigma_S))
        return (f"{head}generalisation G = {g[0]} ± {g[1]} (standard error, {int(ds.n_training):,} training "
                f"samples), specificity S = {s[0]} ± {s[1]} ({int(ds.n_synthetic):,} synthetic samples).")

    if not dims:
        return one(result)[0].upper() + one(result)[1:] + "\n\n" + caveat
    dim = dims[0]
    labels = result[dim].values.tolist()
    lines = ["- " + one(result.sel({dim: label}), label) for label in labels]
    text = "\n".join(lines)
    if len(labels) < 2:
        return text + "\n\n" + caveat
    if np.issubdtype(result[dim].dtype, np.number):
        first, last = result.isel({dim: 0}), result.isel({dim: -1})
        trend = (f"From {str(dim).replace('_', ' ')} {labels[0]:,} to {labels[-1]:,}, G goes from "
                 f"{_num(float(first.G))} to {_num(float(last.G))} and S from {_num(float(first.S))} to "
                 f"{_num(float(last.S))}.")
        return text + "\n\n" + trend + "\n\n" + caveat
    best, resolved, parts = {}, True, []
    for measure, name in (("G", "Generalisation"), ("S", "Specificity")):
        values = result[measure].values
        best[measure] = labels[int(np.argmin(values))]
        others = []
        for label in labels:
            if label == best[measure]:
                continue
            diff = float(result[measure].sel({dim: label}) - result[measure].sel({dim: best[measure]}))
            se, how = _diff_se(result, measure, dim, best[measure], label)
            ratio = diff / se if se > 0 else np.inf
            resolved &= bool(ratio >= z)
            size = (f"{ratio:.1f} standard errors of the difference" if np.isfinite(ratio) else "with no sampling error")
            others.append(f"{label} is higher by {_num(diff)} ({size}, {how})")
        parts.append(f"{name}: **{best[measure]}** is lowest; " + "; ".join(others) + ".")
    if best["G"] == best["S"]:
        verdict = (f"**{best['G']}** is the better model on both counts"
                   + (f", each difference at least {z:g} standard errors." if resolved else
                      f", though some differences are under {z:g} standard errors: these samples do not separate "
                      "those models."))
    else:
        verdict = (f"No model is best on both counts: **{best['G']}** comes closest to every training sample "
                   f"(lowest G), **{best['S']}** generates the samples closest to the training set (lowest S).")
    sizes = [int(n) for n in np.atleast_1d(result["n_synthetic"].values)]
    if len(set(sizes)) > 1:  # G falls with the number of synthetic samples alone: say so beside the verdict
        each = ", ".join(f"{m} {n:,}" for m, n in zip(labels, sizes))
        verdict += (f" The models were given different numbers of samples ({each}); more samples lower G by "
                    "themselves, so the comparison on G is not at equal sizes: draw as many samples from each "
                    "model to compare them on G.")
    return "\n\n".join([text, " ".join(parts), verdict, caveat] if part == "all" else [verdict])


def to_markdown(result: xr.Dataset) -> str:
    """A table of ``G`` and ``S`` with standard errors and counts, one row per model (Markdown).

    Examples
    --------
    >>> from bioxr import generative, simulate
    >>> clouds = simulate.generative_models(n_training=60, n_synthetic=80, n_features=4, seed=2)
    >>> res = generative.compare_models(clouds.training, clouds.synthetic, synthetic_dim="draw")
    >>> print(generative.to_markdown(res).splitlines()[0])
    | Model | Generalisation G | SE of G | Specificity S | SE of S | Training samples | Synthetic samples |
    """
    dims = result["G"].dims
    if len(dims) > 1:
        raise ValueError(f"to_markdown takes one model or one dimension of models, not dims {dims}.")
    dim = dims[0] if dims else None
    head = str(dim).replace("_", " ").capitalize() if dim is not None else "Model"
    rows = [f"| {head} | Generalisation G | SE of G | Specificity S | SE of S | Training samples | Synthetic samples |",
            "|:--|--:|--:|--:|--:|--:|--:|"]
    for label in (result[dim].values.tolist() if dim is not None else [None]):
        ds = result.sel({dim: label}) if dim is not None else result
        name = "model" if label is None else (f"{label:,}" if isinstance(label, int) else str(label))
        g, s = _pm(float(ds.G), float(ds.sigma_G)), _pm(float(ds.S), float(ds.sigma_S))
        rows.append(f"| {name} | {g[0]} | {g[1]} | {s[0]} | {s[1]} | {int(ds.n_training):,} | {int(ds.n_synthetic):,} |")
    return "\n".join(rows)
