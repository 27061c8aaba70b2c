"""The stacked form of several systems, the pairs compared, and the multiplicity adjustment."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from ..comparisons import COMPARISON, is_comparison_list, validate_comparison_list
from ..cube import REFERENCE, probe_dims, validate_score_cube



STATISTICS = ("eer", "fnmr_at_fmr", "fmr", "fnmr")
PAIRS = ("baseline", "all")
ADJUSTMENTS = ("holm", "bonferroni", "none")
MCNEMAR_KINDS = ("fnmr", "fmr", "both")
FMR_VARIANCES = ("moments", "pigeonhole")
JOINS = ("exact", "inner")
_KEYS = ("subject", "reference_subject", "probe_id", "reference_id")
_FAILURES = ("failed_enrolment", "failed_acquisition")

_P_VALUE_TEXT = ("two-sided, by inverting the percentile interval: p = min(1, 2 (1 + min(#{d*_b <= 0}, "
                 "#{d*_b >= 0})) / (B + 1)) over the B replicates d*_b of the difference; p <= 1 - level exactly "
                 "when the percentile interval leaves out 0 (up to the interpolation of the quantiles); never "
                 "below 2 / (B + 1)")
_METHOD_TEXT = ("paired subject bootstrap: one draw of subjects (one joint coding of every system's subjects) per "
                "replicate, applied to every system; mated comparisons of subject i weighted w_i, non-mated "
                "comparisons of subjects a and c weighted w_a w_c (the paired subject bootstrap)")



# ------------------------------------------------------------------ the stacked form
def stack_systems(systems: Mapping, *, dim: str = "system", join: str = "exact"):
    """Put several systems scored on the same subjects into one cube or comparison list.

    Parameters
    ----------
    systems : mapping of str to cube or comparison list
        ``{"A": cube_a, "B": cube_b}``, in the order the systems should
        take (the first is the default baseline of the comparisons). All
        cubes give a cube; any comparison list among them gives a list.
    dim : str, keyword-only
        The new dimension (cubes) or cofactor (lists).
    join : {"exact", "inner"}, keyword-only
        ``"exact"`` (default): every system must hold the same
        comparisons (cubes: the same probe and reference labels; lists: the
        same comparison keys), or it is an error saying how many are
        missing on each side. ``"inner"``: keep the comparisons all systems
        share (``attrs["n_dropped"]`` counts those left out, per system).

    Returns
    -------
    xarray.DataArray or xarray.Dataset
        A cube with a leading ``dim`` dimension (probes and references in
        the first system's order), or a comparison list with a ``dim``
        coordinate and ``dim`` first in ``attrs["probe_dims"]``; in a list
        every system's comparisons come in the same order. Failure flags
        present in one system only are False in the others.

    Notes
    -----
    Cubes align on the labels of their probe dimensions and ``reference``
    (positions where a dimension has no index). Comparison lists align on
    ``(subject, reference_subject, probe_id, reference_id)`` (the ids when
    every system has them), their other probe dims, and the order of
    occurrence among comparisons with equal keys. The subjects (both
    sides) must be the same in every system; else the error says how many
    each side lacks.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.systems import stack_systems
    >>> a = bioxr.simulate.gaussian(20, 2, seed=0)
    >>> b = bioxr.simulate.gaussian(20, 2, seed=1)
    >>> both = stack_systems({"A": a, "B": b})
    >>> dict(both.sizes)
    {'system': 2, 'probe': 40, 'reference': 20}
    >>> trials = stack_systems({"A": bioxr.to_comparisons(a), "B": bioxr.to_comparisons(b)})
    >>> trials.sizes["comparison"], trials.attrs["probe_dims"]
    (1600, ['system', 'probe'])
    """
    if not isinstance(systems, Mapping) or len(systems) < 2:
        raise ValueError("stack_systems takes a mapping of at least two systems, e.g. {'A': cube_a, 'B': cube_b}.")
    if join not in JOINS:
        raise ValueError(f"join={join!r}; choose 'exact' (the same comparisons in every system) or 'inner' (the "
                         "comparisons they share).")
    names = [str(k) for k in systems]
    if len(set(names)) < len(names):
        raise ValueError(f"system names {names} repeat once made text; give distinct names.")
    objs = list(systems.values())
    for name, obj in zip(names, objs):
        if not (isinstance(obj, xr.DataArray) or is_comparison_list(obj)):
            raise TypeError(f"system {name!r} is a {type(obj).__name__}; give score cubes (DataArray) or comparison "
                            "lists (Dataset over 'comparison').")
        if dim in obj.dims or dim in obj.coords:
            raise ValueError(f"system {name!r} already has a {dim!r} dimension or coordinate: stack single systems.")
    kinds = {n: o.attrs.get("score_kind", "similarity") for n, o in zip(names, objs)}
    if len(set(kinds.values())) > 1:
        raise ValueError(f"the systems mix score kinds {kinds}: one stacked object has one score kind. Negate the "
                         "distances (and declare score_kind='similarity'), then give thresholds on that scale.")
    _check_same_subjects(names, [_subject_labels(o) for o in objs])
    if all(isinstance(o, xr.DataArray) for o in objs):
        return _stack_cubes(names, objs, dim, join)
    from ..comparisons import to_comparisons

    lists = [o if is_comparison_list(o) else to_comparisons(o) for o in objs]
    return _stack_lists(names, lists, dim, join)


def _subject_labels(obj) -> set:
    labels = set()
    for name in ("subject", "reference_subject"):
        if name not in obj.coords and name not in getattr(obj, "data_vars", {}):
            raise ValueError("a paired comparison resamples subjects: each system needs 'subject' and "
                             "'reference_subject' labels (lists from from_scores have none).")
        labels.update(_unique(np.asarray(obj[name].values).ravel()).tolist())
    return labels


def _unique(values: np.ndarray) -> np.ndarray:
    """Distinct labels (numpy's sort for text and numbers: fast; pandas for mixed objects)."""
    if values.dtype.kind in "USiuf":
        return np.unique(values)
    return np.asarray(pd.unique(values))


def _check_same_subjects(names, label_sets) -> None:
    first = label_sets[0]
    for name, labels in zip(names[1:], label_sets[1:]):
        lacks, extra = first - labels, labels - first
        if lacks or extra:
            eg = lambda s: ", ".join(repr(x) for x in sorted(map(str, s))[:3])
            raise ValueError(
                f"the systems are not on the same subjects: {name!r} lacks {len(lacks)} of {names[0]!r}'s "
                f"{len(first)} subjects{f' (e.g. {eg(lacks)})' if lacks else ''} and has {len(extra)} that "
                f"{names[0]!r} lacks{f' (e.g. {eg(extra)})' if extra else ''}. A paired comparison needs the same "
                "subjects in every system: keep the subjects common to all (e.g. cube.where(cube.subject.isin("
                "common) & cube.reference_subject.isin(common), drop=True)) before stacking.")


def _stack_cubes(names, cubes, dim, join):
    cubes = [validate_score_cube(c, require_mated=False, require_nonmated=False) for c in cubes]
    dims0 = probe_dims(cubes[0])
    for name, c in zip(names[1:], cubes[1:]):
        if set(probe_dims(c)) != set(dims0):
            raise ValueError(f"system {name!r} has probe dims {list(probe_dims(c))}, {names[0]!r} has "
                             f"{list(dims0)}: cubes stack only with the same dimensions.")
    cubes = [c.transpose(*dims0, REFERENCE) for c in cubes]
    dropped = {n: 0 for n in names}
    for d in (*dims0, REFERENCE):
        if all(d in c.indexes for c in cubes):
            labels = [c.indexes[d] for c in cubes]
            keep = labels[0]
            for name, lab in zip(names[1:], labels[1:]):
                if not lab.is_unique:
                    raise ValueError(f"the {d!r} labels of system {name!r} repeat: cubes align on them.")
                lacks, extra = keep.difference(lab), lab.difference(labels[0])
                if join == "exact" and (len(lacks) or len(extra)):
                    raise ValueError(f"system {name!r} lacks {len(lacks)} of {names[0]!r}'s {d!r} labels and has "
                                     f"{len(extra)} that {names[0]!r} lacks: the systems must hold the same "
                                     "comparisons (or pass join='inner' to keep the ones they share).")
                keep = keep[keep.isin(lab)]
            for k, c in enumerate(cubes):
                dropped[names[k]] += int((c.sizes[d] - len(keep)) * c.size // max(c.sizes[d], 1))
            cubes = [c.sel({d: keep}) for c in cubes]
        elif len({c.sizes[d] for c in cubes}) > 1:
            raise ValueError(f"dimension {d!r} has no labels and different sizes {[c.sizes[d] for c in cubes]}: "
                             "give it an index (the probe or reference ids) so the systems can be aligned.")
        else:
            cubes = [c.drop_indexes(d) if d in c.indexes else c for c in cubes]
    for label in ("subject", "reference_subject"):
        ref = cubes[0][label]
        for name, c in zip(names[1:], cubes[1:]):
            if not np.array_equal(np.asarray(c[label].broadcast_like(ref).values), np.asarray(ref.values)):
                raise ValueError(f"after alignment, system {name!r} gives different {label!r} labels to the same "
                                 f"probes or references than {names[0]!r}: the systems must score the same samples.")
    for flag in _FAILURES:
        owners = [c[flag] for c in cubes if flag in c.coords]
        if owners:
            template = owners[0]
            cubes = [c if flag in c.coords else c.assign_coords({flag: xr.zeros_like(template, dtype=bool)})
                     for c in cubes]
    out = xr.concat(cubes, dim=dim, coords="different", compat="equals", join="override", combine_attrs="drop_conflicts")
    out = out.assign_coords({dim: np.asarray(names)})
    out.attrs.update({"systems": names, "score_kind": cubes[0].attrs.get("score_kind", "similarity")})
    if join == "inner":
        out.attrs["n_dropped"] = [dropped[n] for n in names]
    return out


def _list_keys(ds: xr.Dataset, names) -> pd.DataFrame:
    frame = pd.DataFrame({k: np.asarray(ds[k].values) for k in names})
    frame["_occurrence"] = frame.groupby(list(names), sort=False).cumcount().to_numpy() if names else 0
    return frame


def _key_names(lists, dim):
    shared = [k for k in _KEYS if all(k in d.variables for d in lists)]
    extra = [p for p in lists[0].attrs.get("probe_dims", []) if p != dim and p not in shared
             and all(p in d.variables for d in lists)]
    return shared + extra


def _stack_lists(names, lists, dim, join):
    lists = [validate_comparison_list(d, require_mated=False, require_nonmated=False) for d in lists]
    keys = _key_names(lists, dim)
    frames = [_list_keys(d, keys) for d in lists]
    index = [pd.MultiIndex.from_frame(f) for f in frames]
    keep = index[0]
    for name, ix in zip(names[1:], index[1:]):
        lacks, extra = keep.difference(ix), ix.difference(index[0])
        if join == "exact" and (len(lacks) or len(extra)):
            raise ValueError(f"system {name!r} lacks {len(lacks)} of {names[0]!r}'s {len(index[0])} comparisons and "
                             f"has {len(extra)} that {names[0]!r} lacks (matched on {keys} and the order of "
                             "repeats): the systems must hold the same comparisons (or pass join='inner').")
        keep = keep[keep.isin(ix)]
    parts, dropped = [], []
    common = [c for c in lists[0].coords if all(c in d.coords for d in lists) and lists[0][c].dims == (COMPARISON,)]
    flags = [f for f in _FAILURES if any(f in d.coords for d in lists)]
    for name, d, ix in zip(names, lists, index):
        pos = ix.get_indexer(keep)
        dropped.append(int(d.sizes[COMPARISON] - pos.size))
        part = d.isel({COMPARISON: pos})
        part = part.drop_vars([c for c in part.coords if c not in common and c not in flags])
        for f in flags:
            if f not in part.coords:
                part = part.assign_coords({f: (COMPARISON, np.zeros(pos.size, dtype=bool))})
        parts.append(part.assign_coords({dim: (COMPARISON, np.full(pos.size, name))}))
    out = xr.concat(parts, dim=COMPARISON, coords="all", compat="override", join="override",
                    combine_attrs="drop_conflicts")
    pd0 = [p for p in lists[0].attrs.get("probe_dims", []) if p in out.coords]
    out.attrs.update({"form": "comparison list", "score_kind": lists[0].attrs.get("score_kind", "similarity"),
                      "probe_dims": [dim, *pd0], "systems": names, "aligned_on": keys})
    if join == "inner":
        out.attrs["n_dropped"] = dropped
    return out


def _split(obj, dim: str):
    """``(names, subs)``: each system's own cube or list (the ``dim`` dropped), in order."""
    if isinstance(obj, xr.DataArray):
        if dim not in obj.dims:
            raise ValueError(f"the cube has no {dim!r} dimension (its dims are {list(obj.dims)}): stack the systems "
                             f"with bioxr.systems.stack_systems({{'A': cube_a, 'B': cube_b}}, dim={dim!r}).")
        names = [str(v) for v in (obj[dim].values if dim in obj.coords else range(obj.sizes[dim]))]
        subs = [obj.isel({dim: k}, drop=True) for k in range(obj.sizes[dim])]
    elif is_comparison_list(obj):
        if dim not in obj.coords or obj[dim].dims != (COMPARISON,):
            raise ValueError(f"the comparison list has no {dim!r} coordinate over 'comparison': stack the systems "
                             f"with bioxr.systems.stack_systems({{'A': list_a, 'B': list_b}}, dim={dim!r}).")
        values = np.asarray(obj[dim].values)
        names_raw = pd.unique(values)
        names = [str(v) for v in names_raw]
        attrs = {**obj.attrs, "probe_dims": [p for p in obj.attrs.get("probe_dims", []) if p != dim]}
        subs = [obj.isel({COMPARISON: np.flatnonzero(values == v)}).drop_vars(dim).assign_attrs(attrs)
                for v in names_raw]
    else:
        raise TypeError(f"give a stacked cube or comparison list (bioxr.systems.stack_systems), not a "
                        f"{type(obj).__name__}.")
    if len(names) < 2:
        raise ValueError(f"only {len(names)} system along {dim!r}: a comparison needs at least two.")
    if len(set(names)) < len(names):
        raise ValueError(f"the {dim!r} labels {names} repeat: give each system its own name.")
    return names, subs


def _pairs(names, baseline, pairs):
    if pairs not in PAIRS:
        raise ValueError(f"pairs={pairs!r}; choose 'baseline' (every system against the baseline) or 'all' (every "
                         "pair of systems).")
    if baseline is None:
        base = 0
    elif str(baseline) in names:
        base = names.index(str(baseline))
    else:
        raise ValueError(f"baseline={baseline!r} is not one of the systems {names}.")
    if pairs == "baseline":
        out = [(i, base) for i in range(len(names)) if i != base]
    else:
        out = [(i, j) for j in range(len(names)) for i in range(j + 1, len(names))]
    return out, names[base]


def _per_system(value, names, dim, what):
    """One finite number per system from a number, a mapping or a DataArray over ``dim``."""
    if value is None:
        raise ValueError(f"{what} needs threshold=: one number for every system, or one per system as a dict "
                         f"{{{names[0]!r}: t_a, {names[1]!r}: t_b}} or a DataArray over {dim!r}.")
    if isinstance(value, xr.DataArray) and value.ndim == 1 and value.dims == (dim,):
        labels = [str(v) for v in value[dim].values]
        value = dict(zip(labels, np.asarray(value.values).tolist()))
    if isinstance(value, Mapping):
        given = {str(k): v for k, v in value.items()}
        missing = [n for n in names if n not in given]
        unknown = [k for k in given if k not in names]
        if missing or unknown:
            raise ValueError(f"threshold= gives no threshold for {missing}" * bool(missing)
                             + ("; " if missing and unknown else "")
                             + f"names {unknown}, which are not systems" * bool(unknown)
                             + f" (the systems are {names}).")
        out = [given[n] for n in names]
    elif np.ndim(value) == 0:
        out = [value] * len(names)
    else:
        raise ValueError(f"threshold={value!r}; give one number, or one per system as a dict or a DataArray over "
                         f"{dim!r}.")
    try:
        arr = np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"threshold= must hold numbers; got {out!r}.") from None
    if not np.isfinite(arr).all():
        raise ValueError(f"threshold= must hold finite numbers; got {dict(zip(names, arr.tolist()))}.")
    return arr


def adjust_p_values(p, method: str = "holm") -> np.ndarray:
    """Family-wise adjusted p-values: Holm's step-down (1979), Bonferroni, or none.

    Holm: with the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``, the
    adjusted ``p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting
    where ``p~ <= alpha`` controls the family-wise error at ``alpha``
    under any dependence, and never rejects less than Bonferroni
    (``min(1, m p)``). NaN p-values are left out of the family and stay NaN.

    Examples
    --------
    >>> from bioxr.systems import adjust_p_values
    >>> adjust_p_values([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_p_values([0.01, 0.04, 0.03], "bonferroni").tolist()
    [0.03, 0.12, 0.09]
    """
    if method is None:
        method = "none"
    if method not in ADJUSTMENTS:
        raise ValueError(f"adjust={method!r}; choose one of {ADJUSTMENTS} ('holm': Holm's step-down, the default).")
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    flat, ok = p.ravel(), np.isfinite(p.ravel())
    vals = flat[ok]
    if method == "none" or vals.size == 0:
        res = vals
    elif method == "bonferroni":
        res = np.minimum(1.0, vals * vals.size)
    else:
        order = np.argsort(vals, kind="stable")
        m = vals.size
        stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * vals[order]))
        res = np.empty(m)
        res[order] = stepped
    o = out.reshape(-1)
    o[ok] = res
    return out


# ------------------------------------------------------------------ paired subject bootstrap
