"""Grouped comparisons: score cubes and comparison lists split into groups for the counting engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..comparisons import COMPARISON, RESERVED, canonical, has_subjects, is_comparison_list, mated_flags, self_flags
from ..comparisons import validate_comparison_list
from ..counting import CellIndex
from ..cube import REFERENCE, SYSTEM, label_codes, pooled_dims, probe_dims, reduce_dims, score_kind, validate_score_cube
from .checks import FAILURE_RULES, check_policy
from .errors import ScoreCubeError
from .partitions import LazyList, is_lazy_list

# ------------------------------------------------------------------ grouping
class ListIndex:
    """Flat positions of the mated and excluded (self) comparisons in a group of a list."""

    def __init__(self, mated: np.ndarray, excluded: np.ndarray):
        self.mated = mated.astype(np.int64)
        self.excluded = excluded.astype(np.int64)


def as_data(obj, what: str = "this statistic"):
    """Check that ``obj`` is a score cube or a comparison list; say how to get one otherwise."""
    if isinstance(obj, xr.DataArray) or is_comparison_list(obj):
        return obj
    if isinstance(obj, xr.Dataset):
        raise ScoreCubeError(
            f"{what} takes a score cube (a DataArray) or a comparison list (a Dataset over 'comparison' with a "
            f"'score' variable); this Dataset has dims {dict(obj.sizes)} and variables {list(obj.data_vars)}. "
            "Build a list with bioxr.comparison_list(...) or bioxr.from_frame(df, ...).")
    if isinstance(obj, pd.DataFrame):
        raise TypeError(f"{what} takes a score cube or a comparison list, not a DataFrame: convert it with "
                        "bioxr.from_frame(df, score=..., subject=..., reference_subject=...).")
    raise TypeError(f"{what} takes a score cube or a comparison list, got {type(obj).__name__}. For two arrays of "
                    "mated and non-mated scores use bioxr.from_scores(mated, nonmated).")


class Grouped:
    """A score cube or a comparison list split into one group of comparisons per kept-dims combination.

    Parameters
    ----------
    obj : xarray.DataArray or xarray.Dataset
        A score cube or a comparison list.
    dim : str, sequence of str or None
        What to pool over: probe dims of a cube, or the ``probe_dims``
        cofactors of a list; the rest are kept.
    failure_policy : {"exclude", "nist", "iso"}
    lazy : bool, keyword-only
        Keep a dask-backed comparison list lazy: its groups are chunked
        arrays and its index comes from one pass over the partitions
        (:mod:`bioxr._core.partitions`), so callers whose passes run
        blockwise (:mod:`bioxr.counting`) never load it. Default False: a
        lazy list is loaded (for callers that need its arrays in memory).
        A lazy cube stays lazy either way.
    """

    def __init__(self, obj, dim, *, failure_policy: str = "exclude", lazy: bool = False):
        self.policy = check_policy(failure_policy)
        as_data(obj)
        self.form = "list" if isinstance(obj, xr.Dataset) else "cube"
        self._lazy_list = None
        if self.form == "list":
            self._init_list(obj, dim, lazy)
        else:
            self._init_cube(obj, dim)
        self.distance = self.kind == "distance"

    # -- a cube ---------------------------------------------------------------
    def _init_cube(self, cube, dim):
        # the scores themselves are checked for infinities in the pass that reads them (bioxr.counting)
        validate_score_cube(cube, require_nonmated=False, check_values=False)
        self.kind = score_kind(cube)
        reduced = reduce_dims(cube, dim, default=pooled_dims(probe_dims(cube)))
        self.kept = tuple(d for d in probe_dims(cube) if d not in reduced)
        if cube.chunks is not None:
            # dask merges dims without rechunking only when the first of them carries the chunks
            chunked = {d for d, c in zip(cube.dims, cube.chunks) if len(c) > 1}
            reduced = tuple(sorted(reduced, key=lambda d: d not in chunked))
            self.kept = tuple(sorted(self.kept, key=lambda d: d not in chunked))
        order = (*self.kept, *reduced, REFERENCE)
        cube = cube.transpose(*order)
        self.kept_shape = tuple(cube.sizes[d] for d in self.kept)
        self.n_groups = int(np.prod(self.kept_shape)) if self.kept else 1
        self.kept_coords = {
            name: coord.variable for name, coord in cube.coords.items() if coord.dims and set(coord.dims) <= set(self.kept)
        }
        self.n_ref = cube.sizes[REFERENCE]
        self.data = cube.data.reshape(self.n_groups, -1, self.n_ref)
        self.lazy = cube.chunks is not None
        probe_codes, self.ref_codes, self_cols = label_codes(cube, order[:-1])
        self.probe_codes = probe_codes.reshape(self.n_groups, -1)
        self.self_cols = None if self_cols is None else self_cols.reshape(self.n_groups, -1)
        self._cube, self._order = cube, order
        self.has_subjects = True
        self._failures_cube(cube, order)

    def _failures_cube(self, cube, order):
        fe = fa = None
        if "failed_enrolment" in cube.coords:
            fe = np.asarray(cube["failed_enrolment"].values, dtype=bool)
            if cube["failed_enrolment"].dims != (REFERENCE,):
                raise ScoreCubeError("the 'failed_enrolment' coordinate must lie on 'reference' alone.")
        if "failed_acquisition" in cube.coords:
            coord = cube["failed_acquisition"]
            if REFERENCE in coord.dims:
                raise ScoreCubeError("the 'failed_acquisition' coordinate must lie on probe dimensions.")
            template = cube.isel({REFERENCE: 0}, drop=True)
            fa = np.asarray(coord.broadcast_like(template).transpose(*order[:-1]).values, dtype=bool)
            fa = fa.reshape(self.n_groups, -1)
        self._fe, self._fa = fe, fa
        self.has_failures = bool((fe is not None and fe.any()) or (fa is not None and fa.any()))

    # -- a list ---------------------------------------------------------------
    def _init_list(self, ds, dim, lazy=False):
        ds = canonical(validate_comparison_list(ds, require_nonmated=False))
        self.kind = ds.attrs.get("score_kind", "similarity")
        candidates = tuple(d for d in ds.attrs.get("probe_dims", []) if d in ds.coords)
        if dim is None:
            reduced = pooled_dims(candidates)
        else:
            names = (dim,) if isinstance(dim, str) else tuple(dim)
            unknown = [d for d in names if d not in candidates and d != COMPARISON]
            if unknown:
                raise ValueError(
                    f"dim={dim!r} names {unknown}, which this comparison list does not have as probe dims; its "
                    f"probe dims (attrs['probe_dims']) are {list(candidates)}. Declare cofactors as probe dims with "
                    "bioxr.comparison_list(..., probe_dims=[...]).")
            reduced = names
        self.kept = tuple(d for d in candidates if d not in reduced)
        self.lazy = False
        self.n_ref = None
        self.has_subjects = has_subjects(ds)
        self._ds = ds
        if is_lazy_list(ds):
            if lazy:
                return self._init_lazy_list(ds)
            ds = self._ds = _loaded(ds)  # every array in memory, once (not one compute per .values)
            validate_comparison_list(ds, require_nonmated=False)
        score = np.asarray(ds["score"].values)
        mated = mated_flags(ds)
        selfc = self_flags(ds)
        failed = np.zeros(score.size, dtype=bool)
        for name in ("failed_enrolment", "failed_acquisition"):
            if name in ds.coords:
                failed |= np.asarray(ds[name].values, dtype=bool)
        self.has_failures = bool(failed.any())
        codes, levels = [], []
        for k in self.kept:
            c, u = pd.factorize(np.asarray(ds[k].values), sort=False)
            codes.append(c)
            levels.append(np.asarray(u))
        self.kept_shape = tuple(len(u) for u in levels)
        self.n_groups = int(np.prod(self.kept_shape)) if self.kept else 1
        if self.kept:
            gcode = np.ravel_multi_index(codes, self.kept_shape)
            order = np.argsort(gcode, kind="stable")
            bounds = np.searchsorted(gcode[order], np.arange(self.n_groups + 1))
        else:
            order, bounds = None, np.array([0, score.size])
        self._list = dict(score=score, mated=mated, self=selfc, failed=failed, order=order, bounds=bounds)
        self.kept_coords = {k: xr.Variable(k, u) for k, u in zip(self.kept, levels)}
        if self.kept:
            self.kept_coords.update(_dependent_coords(ds, self.kept, codes, levels))

    def _init_lazy_list(self, ds):
        where = f" (from {ds.attrs['source']})" if "source" in ds.attrs else ""
        lazy = self._lazy_list = LazyList(ds, self.kept, where)
        self.lazy = True
        self.kept_shape, self.n_groups = lazy.shape, lazy.n_groups
        self.has_failures = lazy.has_failures
        self.kept_coords = {k: xr.Variable(k, u) for k, u in zip(self.kept, lazy.levels)}
        self.kept_coords.update(lazy.dependent)

    def _take(self, name, g):
        a = self._list[name]
        if a is None:
            return None
        order, b = self._list["order"], self._list["bounds"]
        return a if order is None else a[order[b[g] : b[g + 1]]]

    # -- per group ------------------------------------------------------------
    def block(self, g: int):
        """The group's scores (NumPy; dask for a lazy cube, or a lazy list built with ``lazy=True``) and its index."""
        if self._lazy_list is not None:
            lazy = self._lazy_list
            return lazy.values(g), lazy.index_of(g)
        if self.form == "list":
            values = self._take("score", g)
            mated = self._take("mated", g)
            selfc = self._take("self", g)
            if selfc is None:
                return values, ListIndex(np.flatnonzero(mated), np.empty(0, dtype=np.int64))
            return values, ListIndex(np.flatnonzero(mated & ~selfc), np.flatnonzero(selfc))
        values = self.data[g]
        if not self.lazy:
            values = np.asarray(values)
            if not np.issubdtype(values.dtype, np.floating):
                values = values.astype(np.float64)
        self_cols = None if self.self_cols is None else self.self_cols[g]
        return values, CellIndex(self.probe_codes[g], self.ref_codes, self_cols)

    def failure_counts(self, g: int, index=None) -> tuple[int, int]:
        """Failed mated and failed non-mated comparisons of group ``g`` (self comparisons left out)."""
        if not self.has_failures:
            return 0, 0
        if self._lazy_list is not None:
            return self._lazy_list.failure_counts(g)
        if self.form == "list":
            failed = self._take("failed", g)
            mated = self._take("mated", g)
            selfc = self._take("self", g)
            ok = failed if selfc is None else failed & ~selfc
            n_m = int(np.count_nonzero(ok & mated))
            return n_m, int(np.count_nonzero(ok)) - n_m
        if index is None:
            index = self.block(g)[1]
        n_rows = self.probe_codes.shape[1]
        fe = self._fe if self._fe is not None else np.zeros(self.n_ref, dtype=bool)
        fa = self._fa[g] if self._fa is not None else np.zeros(n_rows, dtype=bool)
        rows, cols = index.mated // self.n_ref, index.mated % self.n_ref
        n_m = int(np.count_nonzero(fe[cols] | fa[rows]))
        n_fa, n_fe = int(fa.sum()), int(fe.sum())
        total = n_fa * self.n_ref + n_fe * n_rows - n_fa * n_fe
        if index.excluded.size:
            er, ec = index.excluded // self.n_ref, index.excluded % self.n_ref
            total -= int(np.count_nonzero(fe[ec] | fa[er]))
        return n_m, total - n_m

    def failed_at(self, g: int, pos: np.ndarray) -> np.ndarray:
        """True where the comparisons at flat positions ``pos`` of group ``g`` failed."""
        if not self.has_failures:
            return np.zeros(pos.size, dtype=bool)
        if self.form == "list":
            self._require_loaded("failure flags at positions")
            return self._take("failed", g)[pos]
        fe = self._fe if self._fe is not None else np.zeros(self.n_ref, dtype=bool)
        out = fe[pos % self.n_ref]
        if self._fa is not None:
            out = out | self._fa[g][pos // self.n_ref]
        return out

    def unit_failures(self) -> dict:
        """Failed and total references and probes (for FTE and FTA), over the whole data."""
        refs, probes = self.unit_failure_table()
        return dict(n_failed_enrolments=int(refs["failed"].sum()), n_references=len(refs),
                    n_failed_acquisitions=int(probes["failed"].sum()), n_probes=len(probes))

    def unit_failure_table(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """One row per reference and one per probe: its ``subject`` and whether it ``failed``.

        A reference is a position on ``reference`` (cube), or a distinct
        ``reference_id`` / ``reference`` / ``reference_subject`` (list); a
        probe a cell of the probe dims (cube), or a distinct probe of a list
        (its probe dims, ``probe_id``, ``probe`` or ``subject``).
        """
        if self.form == "cube":
            cube, order = self._cube, self._order
            n_rows = self.probe_codes.size
            fe = self._fe if self._fe is not None else np.zeros(self.n_ref, dtype=bool)
            fa = self._fa.reshape(-1) if self._fa is not None else np.zeros(n_rows, dtype=bool)
            template = cube.isel({REFERENCE: 0}, drop=True)
            subject = np.asarray(cube["subject"].broadcast_like(template).transpose(*order[:-1]).values).reshape(-1)
            refs = pd.DataFrame({"subject": np.asarray(cube["reference_subject"].values), "failed": fe})
            return refs, pd.DataFrame({"subject": subject, "failed": fa})
        ds = self._ds
        tables, sides = [], []
        for side, flag, keys, who in (
            ("references", "failed_enrolment", ("reference_id", "reference", "reference_subject"), "reference_subject"),
            ("probes", "failed_acquisition", ("probe_id", "probe", "subject"), "subject"),
        ):
            key = [k for k in keys if k in ds.variables][:1]
            if side == "probes" and ds.attrs.get("probe_dims"):
                key = [k for k in ds.attrs["probe_dims"] if k in ds.variables] or key
            sides.append((key, who if who in ds.variables else None, flag if flag in ds.variables else None))
            if self._lazy_list is not None:
                continue
            frame = pd.DataFrame({k: np.asarray(ds[k].values) for k in key})
            codes = frame.groupby(key, sort=False).ngroup().to_numpy() if key else np.arange(ds.sizes[COMPARISON])
            n_units = int(codes.max()) + 1 if codes.size else 0
            failed = np.zeros(n_units, dtype=bool)
            if flag in ds.variables:
                failed[codes[np.asarray(ds[flag].values, dtype=bool)]] = True
            subject = np.empty(n_units, dtype=object)
            if who in ds.variables:
                first = np.unique(codes, return_index=True)[1]
                subject = np.asarray(ds[who].values)[first]
            tables.append(pd.DataFrame({"subject": subject, "failed": failed}))
        if self._lazy_list is not None:
            if not all(key for key, _, _ in sides):  # no ids: every comparison is its own unit
                return Grouped(_loaded(ds), None, failure_policy=self.policy).unit_failure_table()
            if self._lazy_list.units is not None:  # one pass per Grouped (policy_attrs and the ISO factors ask)
                return self._lazy_list.units
            tables = self._lazy_list.unit_tables(sides)
            for table, (_, who, _) in zip(tables, sides):
                if who is not None:
                    table["subject"] = np.asarray(table["subject"].to_numpy(), dtype=ds[who].dtype)
            self._lazy_list.units = (tables[0], tables[1])
        return tables[0], tables[1]

    def probe_labels(self, g: int, name: str):
        """A function from flat positions in group ``g`` to the values of a probe-side coordinate."""
        if self.form == "list":
            self._require_loaded("probe labels")
            if name not in self._ds.coords:
                raise ValueError(f"by={name!r} is not a coordinate of the comparison list; its coordinates are "
                                 f"{sorted(map(str, self._ds.coords))}.")
            labels = self._take_values(name, g)
            return lambda pos: labels[pos]
        cube, order = self._cube, self._order
        template = cube.isel({REFERENCE: 0}, drop=True)
        rows = np.asarray(cube[name].broadcast_like(template).transpose(*order[:-1]).values).reshape(self.n_groups, -1)[g]
        n_ref = self.n_ref
        return lambda pos: rows[pos // n_ref]

    def _require_loaded(self, what):
        if self._lazy_list is not None:
            raise NotImplementedError(f"{what} of a lazy comparison list: build Grouped(..., lazy=False).")

    def _take_values(self, name, g):
        a = np.asarray(self._ds[name].values)
        order, b = self._list["order"], self._list["bounds"]
        return a if order is None else a[order[b[g] : b[g + 1]]]

    # -- results --------------------------------------------------------------
    def dataarray(self, data, extra_dims=(), extra_coords=None) -> xr.DataArray:
        data = np.asarray(data)
        shape = (*self.kept_shape, *data.shape[1:])
        coords = dict(self.kept_coords)
        coords.update(extra_coords or {})
        return xr.DataArray(data.reshape(shape), dims=(*self.kept, *extra_dims), coords=coords)

    def orient(self, t):
        """Thresholds between similarity orientation and the scores' own."""
        return -np.asarray(t, dtype=float) if self.distance else np.asarray(t, dtype=float)

    def require(self, pool, g: int, what: str, *, mated=True, nonmated=True):
        for flag, n, label in ((mated, pool.n_mated, "mated"), (nonmated, pool.n_nonmated, "non-mated")):
            if flag and n == 0:
                where = f" in group {g} of the kept dims {list(self.kept)}" if self.kept else ""
                raise ValueError(
                    f"{what} needs {label} comparisons, but there are none{where}. Reduce over "
                    "more dimensions (dim=...) or select groups that have them."
                )

    def policy_attrs(self) -> dict:
        attrs = {"failure_policy": self.policy, "failure_rule": FAILURE_RULES[self.policy]}
        if self.has_failures:
            attrs.update(self.unit_failures())
        return attrs

    def require_subjects(self, what: str) -> None:
        if not self.has_subjects:
            raise_no_subjects(what)


def _loaded(ds: xr.Dataset) -> xr.Dataset:
    """A lazy list with every array computed, in one pass over its partitions."""
    return ds.compute()


def raise_no_subjects(what: str):
    raise ValueError(
        f"{what} needs to know who gave each score, but these comparisons have no subject labels (they came from "
        "two arrays of scores). Comparisons of one person are correlated, so an interval that treats every score "
        "as independent is too narrow. Supply the subjects: bioxr.comparison_list(scores, subject=..., "
        "reference_subject=...) or bioxr.from_frame(df, ...). Without them, bioxr.intervals.rates_interval gives "
        "binomial intervals that assume independent comparisons.")


def _dependent_coords(ds, kept, codes, levels) -> dict:
    """Coordinates of a list that are constant within the groups of one kept name (as on a cube)."""
    out = {}
    skip = set(kept) | set(RESERVED) | {REFERENCE}
    for name, coord in ds.coords.items():
        if name in skip or coord.dims != (COMPARISON,) or str(name).startswith("reference_"):
            continue
        values = np.asarray(coord.values)
        for k, c, u in zip(kept, codes, levels):
            frame = pd.DataFrame({"c": c, "v": values})
            if (frame.groupby("c")["v"].nunique(dropna=False) <= 1).all():
                first = np.unique(c, return_index=True)[1]
                out[name] = xr.Variable(k, values[first])
                break
    return out


# ------------------------------------------------------------------ flat comparisons
def _refuse_systems(obj) -> None:
    """The subject bootstrap pools every comparison it is given: never those of several matchers."""
    if SYSTEM in obj.dims and obj.sizes[SYSTEM] > 1:
        n = obj.sizes[SYSTEM]
    elif isinstance(obj, xr.Dataset) and SYSTEM in obj.coords and obj[SYSTEM].ndim == 1 and SYSTEM not in obj.dims:
        n = len(pd.unique(np.asarray(obj[SYSTEM].values)))
        if n < 2:
            return
    else:
        return
    raise ScoreCubeError(
        f"these scores hold {n} systems (the '{SYSTEM}' {'dimension' if SYSTEM in obj.dims else 'coordinate'}); "
        "resampling subjects would pool their comparisons into one. Take one system (obj.sel(system=...) or, for a "
        "list, obj.where(obj.system == ..., drop=True)), or compare them on the same subjects with "
        "bioxr.systems.paired_difference.")


def flat_comparisons(obj, *, failure_policy: str = "exclude"):
    """Every counted comparison as flat arrays, for estimators that need them one by one.

    Returns ``(scores, probe_subject, reference_subject, mated, kind)``;
    NaN and self comparisons left out. Under ``"nist"`` failed comparisons
    are kept with the score ``-inf`` (similarity) or ``+inf`` (distance):
    never accepted, so a mated one is an error at every threshold.
    """
    policy = check_policy(failure_policy)
    as_data(obj)
    _refuse_systems(obj)
    if isinstance(obj, xr.Dataset):
        obj = canonical(validate_comparison_list(obj))
        if not has_subjects(obj):
            raise_no_subjects("the subject bootstrap")
        kind = obj.attrs.get("score_kind", "similarity")
        score = np.asarray(obj["score"].values, dtype=float)
        keep = ~np.isnan(score)
        selfc = self_flags(obj)
        if policy == "nist":
            failed = np.zeros(score.size, dtype=bool)
            for name in ("failed_enrolment", "failed_acquisition"):
                if name in obj.coords:
                    failed |= np.asarray(obj[name].values, dtype=bool)
            score = np.where(failed, -np.inf if kind == "similarity" else np.inf, score)
            keep |= failed
        if selfc is not None:
            keep &= ~selfc
        p = np.asarray(obj["subject"].values)
        r = np.asarray(obj["reference_subject"].values)
        if not keep.all():  # no copies when every comparison counts
            score, p, r = score[keep], p[keep], r[keep]
        return score, p, r, p == r, kind
    cube = obj
    if cube.chunks is not None:
        cube = cube.compute()
    groups = Grouped(cube, None, failure_policy=policy)
    values, index = groups.block(0)
    flat = values.reshape(-1)
    n_ref = groups.n_ref
    valid = ~np.isnan(flat)
    if index.excluded.size:
        valid[index.excluded] = False
    if policy == "nist" and groups.has_failures:
        fe = groups._fe if groups._fe is not None else np.zeros(n_ref, dtype=bool)
        fa = groups._fa[0] if groups._fa is not None else np.zeros(flat.size // n_ref, dtype=bool)
        failed = (fa[:, None] | fe[None, :]).reshape(-1)
        if index.excluded.size:
            failed[index.excluded] = False
        flat = np.where(failed, -np.inf if groups.kind == "similarity" else np.inf, flat)
        valid |= failed
    pos = np.flatnonzero(valid)
    mated = np.zeros(flat.size, dtype=bool)
    mated[index.mated] = True
    subject = groups.probe_labels(0, "subject")
    ref_subject = np.asarray(groups._cube["reference_subject"].values)
    # float64 as for a list: thresholds built from the scores (quantiles, midpoints) are then float64 ones
    return flat[pos].astype(np.float64, copy=False), subject(pos), ref_subject[pos % n_ref], mated[pos], groups.kind


def split_scores(obj) -> tuple[np.ndarray, np.ndarray, str]:
    """All mated and all non-mated scores of a cube or list (their own orientation), NaN and self left out."""
    groups = Grouped(obj, None)
    values, index = groups.block(0)
    flat = np.asarray(values, dtype=float).reshape(-1)
    mated = flat[index.mated]
    other = np.ones(flat.size, dtype=bool)
    other[index.mated] = False
    other[index.excluded] = False
    nonmated = flat[other]
    return mated[~np.isnan(mated)], nonmated[~np.isnan(nonmated)], groups.kind
