"""Score cubes on disk: ``.npz`` archives, netCDF files and Zarr stores.

No store runs code when opened: ``.npz`` archives are read with
``allow_pickle=False``, and a Zarr store's metadata is inspected before any
array is decoded, refusing Python-object arrays and object codecs (pickle,
JSON, msgpack). Values other tools mark with ``_FillValue`` or
``missing_value`` are masked by bioxr itself (not by xarray's CF decoding),
so they are counted in ``attrs`` like a declared sentinel.
"""

from __future__ import annotations

import json
import os
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from bioxr.cube import SCORE_KINDS, ScoreCubeError, probe_dims, validate_score_cube
from bioxr.cube import score_kind as cube_score_kind

from ._build import build_cube, check_options, matrix_failures
from ._text import ScoreFileError, existing_file

__all__ = ["read_npz", "write_npz", "to_netcdf", "to_zarr", "open_score_cube"]

_NPZ_KEYS = ("scores", "subject", "reference_subject", "probe_id", "reference_id", "probe", "reference", "score_kind")
# Attributes xarray's CF coders act on (a "missing_value" attribute would mask those scores!) are kept, with those
# netCDF cannot hold (None, bool, list, dict), as JSON in the bioxr_encoding attribute.
_CF_ATTRS = ("_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar", "dtype", "coordinates",
             "compress")
_ENCODING_ATTR = "bioxr_encoding"
_UNNAMED = "__xarray_dataarray_variable__"
_ZARR_MARKERS = (".zgroup", ".zarray", ".zmetadata", "zarr.json")
# codecs that decode to arbitrary Python objects; pickle runs code while it does
_OBJECT_CODECS = ("pickle", "json", "json2", "msgpack", "msgpack2", "vlen-array", "object")
_STRING_CODECS = ("vlen-utf8", "vlen-bytes")


# ------------------------------------------------------- options on a stored cube
def _apply_options(src, cube: xr.DataArray, *, score_kind, missing, failure) -> xr.DataArray:
    """Honour score_kind (overriding the stored one, with a warning), missing= and failure= on a loaded cube."""
    check_options(src, layout="cube", sample_ids=None, missing=missing, failure=failure)
    if score_kind is not None:
        if score_kind not in SCORE_KINDS:
            raise ScoreFileError(f"{src}: score_kind={score_kind!r}; use 'similarity' or 'distance'.")
        stored = cube.attrs.get("score_kind", "similarity")
        if stored != score_kind:
            warnings.warn(f"{src}: the file says score_kind={stored!r}, the call says {score_kind!r}; using "
                          f"{score_kind!r}. Drop score_kind= to keep the file's.", UserWarning, stacklevel=4)
            cube.attrs["score_kind"] = score_kind
    if missing is None and failure is None:
        return cube
    pdims = probe_dims(cube)
    if failure is not None:
        if len(pdims) != 1:
            raise ScoreFileError(f"{src}: failure= reads a 2-D (probe, reference) cube; this one has dims "
                                 f"{cube.dims}. Flag failures with bioxr.failures.mark_failures instead.")
        cube = cube.transpose(pdims[0], "reference")
    values = np.array(cube.values, dtype=cube.dtype if cube.dtype.kind == "f" else np.float64)
    attrs = dict(cube.attrs)
    if missing is not None:
        hit = values == missing
        values[hit] = np.nan
        attrs.update(missing_sentinel=float(missing), n_missing=int(attrs.get("n_missing", 0)) + int(hit.sum()))
    coords = {}
    if failure is not None:
        coords, counts = matrix_failures(values, failure, pdims[0])
        attrs.update(counts)
    return cube.copy(data=values).assign_coords(coords).assign_attrs(attrs)


# ----------------------------------------------------------------------- npz
def read_npz(path, *, score_kind: str | None = None, missing: float | None = None,
             failure: float | None = None) -> xr.DataArray:
    """Read a score cube from a ``.npz`` archive, never unpickling anything.

    The archive holds ``scores`` (probes x references), ``subject`` and
    ``reference_subject``, optionally ``probe_id``, ``reference_id``, ``probe``
    and ``reference`` (index labels) and a scalar ``score_kind``. String labels
    must be unicode arrays (``np.asarray(labels, dtype=str)``), not objects.

    Parameters
    ----------
    path : str or path-like
    score_kind : {"similarity", "distance"}, optional
        Overrides the archive's ``score_kind`` (with a warning when they differ).
    missing, failure : float, optional
        Sentinels, as in :func:`bioxr.io.read_matrix_csv`.

    Returns
    -------
    xarray.DataArray
        Dims ``("probe", "reference")``; NaN cells are counted in ``attrs["n_not_compared"]``.

    Examples
    --------
    >>> import numpy as np
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "scores.npz")
    >>> np.savez(path, scores=np.array([[0.9, 0.1], [0.2, -1.0]]),
    ...          subject=np.array(["a", "b"]), reference_subject=np.array(["a", "b"]))
    >>> cube = read_npz(path, missing=-1)
    >>> cube.shape, cube.attrs["n_missing"]
    ((2, 2), 1)
    """
    path = path if hasattr(path, "read") else existing_file(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ScoreFileError(f"{path}: cannot be read as a NumPy .npz archive ({err}). Save scores with np.savez "
                             "or write_npz.") from err
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ScoreFileError(f"{path}: holds a single array (.npy), not a .npz archive of named arrays; save the "
                             "scores and labels together with write_npz.")
    with archive:
        found = list(archive.files)
        absent = [k for k in _NPZ_KEYS[:3] if k not in found]
        unknown = [k for k in found if k not in _NPZ_KEYS]
        if absent or unknown:
            raise ScoreFileError(f"{path}: holds the arrays {found}; missing {absent}, not understood {unknown}. A "
                                 f"score .npz holds {list(_NPZ_KEYS[:3])} and optionally {list(_NPZ_KEYS[3:])}.")
        arrays = {}
        for key in found:
            try:
                arrays[key] = archive[key]
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
                hint = ("it holds Python objects, which bioxr never unpickles (allow_pickle=False). Save labels "
                        "as unicode text: np.asarray(labels, dtype=str)") if "allow_pickle" in str(err) else err
                raise ScoreFileError(f"{path}: array {key!r} cannot be read: {hint}.") from err
    scores = arrays.pop("scores")
    kind = arrays.pop("score_kind", np.array("similarity"))
    if scores.ndim != 2 or kind.ndim != 0:
        raise ScoreFileError(f"{path}: 'scores' has {scores.ndim} dimension(s) and 'score_kind' {kind.ndim}; "
                             "scores must be 2-D (probes x references) and score_kind a scalar string.")
    coords = {dim: arrays.pop(dim) for dim in ("probe", "reference") if dim in arrays}
    n_not_compared = int(np.isnan(scores).sum()) if scores.dtype.kind == "f" else 0
    cube = build_cube(path, scores, coords=coords, score_kind=str(kind), **arrays)
    cube.attrs["n_not_compared"] = n_not_compared
    return _apply_options(path, cube, score_kind=score_kind, missing=missing, failure=failure)


def _unicode(name: str, values: np.ndarray) -> np.ndarray:
    if values.dtype.kind != "O":
        return values
    if all(isinstance(v, str) for v in values.ravel()):
        return values.astype(str)
    raise ScoreCubeError(f"coordinate {name!r} holds Python objects that are not strings; .npz cannot store them "
                         "without pickle. Convert them to text or numbers first.")


def write_npz(cube: xr.DataArray, path) -> None:
    """Write a 2-D score cube to a ``.npz`` archive that :func:`read_npz` reads back.

    Keeps the scores, ``subject``, ``reference_subject``, ``probe_id`` and
    ``reference_id`` (when present), the index labels and ``score_kind``; other
    coordinates and attrs are not kept (use :func:`to_netcdf` for a lossless copy).

    Parameters
    ----------
    cube : xarray.DataArray
        A score cube with dims ``(probe_dim, "reference")``.
    path : str or path-like
        Written as given (no suffix is added).

    Returns
    -------
    None

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube([[0.9, 0.1], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"])
    >>> path = pathlib.Path(tempfile.mkdtemp(), "cube.npz")
    >>> write_npz(cube, path)
    >>> read_npz(path).drop_attrs().identical(cube.drop_attrs())
    True
    """
    validate_score_cube(cube, require_mated=False, require_nonmated=False)
    pdim = cube.dims[0]
    if cube.ndim != 2 or cube["subject"].dims != (pdim,):
        raise ScoreCubeError(f"write_npz writes 2-D cubes with 'subject' on the probe dimension; this one has dims "
                             f"{cube.dims}. Stack the probe dimensions first (cube.stack(...)) or use to_netcdf.")
    arrays = {"scores": cube.values, "subject": cube["subject"].values,
              "reference_subject": cube["reference_subject"].values, "score_kind": np.array(cube_score_kind(cube))}
    arrays.update({key: cube[key].values for key in ("probe_id", "reference_id") if key in cube.coords})
    if pdim in cube.indexes and pdim != "subject":
        arrays["probe"] = cube[pdim].values
    if "reference" in cube.indexes:
        arrays["reference"] = cube["reference"].values
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **{k: _unicode(k, np.asarray(v)) for k, v in arrays.items()})


# ------------------------------------------------------------ netCDF and Zarr
def _native_attr(key, value) -> bool:
    """Can netCDF hold this attribute as is, without xarray's CF coders acting on it?"""
    if key in _CF_ATTRS or str(key).startswith("_") or isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim == 1 and value.dtype.kind in "iuf"
    return isinstance(value, (str, int, float, np.integer, np.floating))


def _json_default(value):
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _encode_for_disk(cube) -> xr.Dataset:
    """A Dataset netCDF and Zarr store as is; what they cannot hold goes to the bioxr_encoding attribute."""
    if not isinstance(cube, xr.DataArray):
        raise ScoreCubeError(f"expected a score cube (xarray.DataArray), got {type(cube).__name__}.")
    name = _UNNAMED if cube.name is None else cube.name
    ds = cube.drop_encoding().to_dataset(name=name).copy(deep=False)  # new variables: the input stays untouched
    meta: dict = {"name": cube.name, "dtypes": {}, "gaps": {}, "attrs": {}}
    for var, variable in ds.variables.items():
        if variable.dtype.kind in "OU":  # netCDF and Zarr read strings back as <U or StringDType, gaps as ''
            meta["dtypes"][str(var)] = variable.dtype.str
            gaps = np.flatnonzero(pd.isna(variable.values.ravel())) if variable.dtype.kind == "O" else []
            if len(gaps):
                meta["gaps"][str(var)] = gaps.tolist()
        special = {k: v for k, v in variable.attrs.items() if not _native_attr(k, v)}
        if special:
            meta["attrs"][str(var)] = special
            variable.attrs = {k: v for k, v in variable.attrs.items() if k not in special}
    try:
        ds[name].attrs[_ENCODING_ATTR] = json.dumps(meta, default=_json_default)
    except TypeError as err:
        raise ScoreCubeError(f"an attribute of the cube cannot be saved ({err}); use text, numbers, lists, dicts "
                             "or None.") from err
    return ds


def _decode_from_disk(path, ds: xr.Dataset) -> xr.DataArray:
    names = list(ds.data_vars)
    if len(names) != 1:
        raise ScoreFileError(f"{path}: holds {len(names)} data variables {names}; a score cube file holds exactly "
                             "one (the scores). Select it with xarray and save it alone with to_netcdf or to_zarr.")
    stored = names[0]
    cube = ds[stored].drop_encoding()
    meta = json.loads(cube.attrs.pop(_ENCODING_ATTR, "{}"))
    gaps = meta.get("gaps", {})
    for var, dtype in meta.get("dtypes", {}).items():
        if var in cube.coords and (cube[var].dtype.str != dtype or var in gaps):
            coord = cube[var]
            values = coord.values.astype(dtype)  # a copy
            values.ravel()[gaps.get(var, [])] = np.nan
            cube = cube.assign_coords({var: (coord.dims, values, coord.attrs)})
    for var, special in meta.get("attrs", {}).items():
        if var == stored or var in cube.coords:
            (cube if var == stored else cube.coords[var]).attrs.update(special)
    for var in (cube, *cube.coords.values()):  # NumPy scalars back to the Python numbers they were written from
        var.attrs.update({k: v.item() for k, v in var.attrs.items() if isinstance(v, np.generic)})
    return cube.rename(meta["name"] if "name" in meta else None if stored == _UNNAMED else stored)


def to_netcdf(cube: xr.DataArray, path) -> None:
    """Write a score cube to a netCDF-4 file (engine h5netcdf), losing nothing.

    Coordinates (string labels keep their dtype, object or unicode), attrs
    (``None``, booleans, lists and dicts included, kept as JSON in the
    ``bioxr_encoding`` attribute), dtypes and NaN all survive :func:`open_score_cube`.

    Parameters
    ----------
    cube : xarray.DataArray
    path : str or path-like

    Returns
    -------
    None

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube([[0.9, -1.0], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"], missing=-1)
    >>> path = pathlib.Path(tempfile.mkdtemp(), "cube.nc")
    >>> to_netcdf(cube, path)
    >>> back = open_score_cube(path)
    >>> back.identical(cube), back.attrs["n_missing"]
    (True, 1)
    """
    _encode_for_disk(cube).to_netcdf(path, engine="h5netcdf")


def to_zarr(cube: xr.DataArray, path) -> None:
    """Write a score cube to a Zarr store (a directory, Zarr format 2), losing nothing.

    An existing Zarr store at ``path`` is replaced; any other existing path is an error.

    Parameters
    ----------
    cube : xarray.DataArray
    path : str or path-like

    Returns
    -------
    None

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube([[0.9, 0.1], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"])
    >>> path = pathlib.Path(tempfile.mkdtemp(), "cube.zarr")
    >>> to_zarr(cube, path)
    >>> open_score_cube(path).identical(cube)
    True
    """
    path = Path(path)
    if path.exists() and not (path.is_dir() and (_is_zarr(path) or not any(path.iterdir()))):
        raise ScoreFileError(f"{path}: exists and is not a Zarr store; refusing to overwrite it. Pick a new path.")
    _encode_for_disk(cube).to_zarr(path, mode="w", zarr_format=2, consolidated=True)


def _is_zarr(path: Path) -> bool:
    return path.is_dir() and any((path / marker).exists() for marker in _ZARR_MARKERS)


def _zarr_arrays(path: Path):
    """(where, metadata) of every array a Zarr store describes: .zarray, zarr.json and consolidated metadata."""
    for root, _, files in os.walk(path):
        for name in files:
            if name not in (".zarray", ".zmetadata", "zarr.json"):
                continue
            where = Path(root, name)
            try:
                meta = json.loads(where.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise ScoreFileError(f"{where}: the Zarr metadata cannot be read as JSON ({err}).") from err
            if not isinstance(meta, dict):
                raise ScoreFileError(f"{where}: the Zarr metadata is not a JSON object.")
            if name == ".zarray":
                yield where, meta
            consolidated = meta.get("metadata") if name == ".zmetadata" else \
                (meta.get("consolidated_metadata") or {}).get("metadata")
            if isinstance(consolidated, dict):
                for key, sub in consolidated.items():
                    if isinstance(sub, dict) and (key.endswith(".zarray") or sub.get("node_type") == "array"):
                        yield f"{where} ({key})", sub
            if name == "zarr.json" and meta.get("node_type") == "array":
                yield where, meta


def _codec_names(meta: dict) -> list[str]:
    codecs = [meta.get("compressor"), *(meta.get("filters") or []), *(meta.get("codecs") or [])]
    names = []
    for codec in codecs:
        if isinstance(codec, dict):
            name = str(codec.get("id") or codec.get("name") or "")
            names.append(name.removeprefix("numcodecs."))
            conf = codec.get("configuration")
            if isinstance(conf, dict) and isinstance(conf.get("codecs"), list):  # sharding: codecs inside
                names += _codec_names({"codecs": conf["codecs"]})
    return names


def _is_object_dtype(dtype) -> bool:
    if isinstance(dtype, str):
        return "O" in dtype or dtype.lower() == "object"
    if isinstance(dtype, list):  # a structured dtype: [[name, type], ...]
        return any(_is_object_dtype(field[1]) for field in dtype if isinstance(field, list) and len(field) > 1)
    return isinstance(dtype, dict)  # a v3 extension data type we do not know


def check_zarr_store(path: Path) -> None:
    """Refuse a Zarr store holding Python objects, reading only its metadata (nothing is decoded).

    Object arrays are accepted only as text (the ``vlen-utf8`` or
    ``vlen-bytes`` codec); any codec that decodes to objects (pickle, which
    runs code, JSON, msgpack) is refused wherever it appears.
    """
    for where, meta in _zarr_arrays(path):
        codecs = _codec_names(meta)
        dtype = meta.get("dtype", meta.get("data_type"))
        unsafe = [c for c in codecs if c in _OBJECT_CODECS or "pickle" in c]
        objects = _is_object_dtype(dtype)
        if unsafe or (objects and not any(c in _STRING_CODECS for c in codecs)):
            what = f"codec {unsafe[0]!r}" if unsafe else "no text codec"
            raise ScoreFileError(
                f"{where}: this Zarr array holds Python objects (dtype {dtype!r}, {what}); decoding it could run "
                "code (pickle) or build arbitrary objects, so bioxr refuses to open the store. Store scores as "
                "numbers and labels as fixed-width text (np.asarray(labels, dtype=str)), e.g. with "
                "bioxr.io.to_zarr.")


def _fill_values(variable: xr.Variable) -> list[float]:
    """The _FillValue and missing_value(s) of a variable opened without CF masking."""
    out = []
    for key in ("_FillValue", "missing_value"):
        value = variable.attrs.get(key, variable.encoding.get(key))
        for v in np.atleast_1d(np.asarray(value)) if value is not None else ():
            if np.asarray(v).dtype.kind in "iuf" and not np.isnan(v):
                out.append(float(v))
    return out


def _open(path: Path, engine):
    """Open without CF masking of the scores: fill values are masked here and counted."""
    with xr.open_dataset(path, engine=engine) as probe:
        names = list(probe.data_vars)
    masked = {name: False for name in names}
    with xr.open_dataset(path, engine=engine, mask_and_scale=masked) as ds:
        ds = ds.load()
    counts = {}
    for name in names:
        variable = ds[name].variable
        fills = _fill_values(variable)
        scale, offset = variable.attrs.pop("scale_factor", None), variable.attrs.pop("add_offset", None)
        values = np.asarray(variable.values)
        hit = np.zeros(values.shape, dtype=bool)
        for f in fills:
            hit |= values == f
        for key in ("_FillValue", "missing_value"):  # masked here, not by the CF coders
            variable.attrs.pop(key, None)
            variable.encoding.pop(key, None)
        if fills or scale is not None or offset is not None:
            values = values.astype(np.float64 if values.dtype.itemsize > 4 or values.dtype.kind != "f"
                                   else values.dtype)
            if scale is not None:
                values = values * scale
            if offset is not None:
                values = values + offset
            values[hit] = np.nan
        ds[name] = variable.copy(data=values)
        counts[name] = (fills, int(np.count_nonzero(hit)))
    return ds, counts


def open_score_cube(path, *, score_kind: str | None = None, missing: float | None = None,
                    failure: float | None = None) -> xr.DataArray:
    """Open a score cube saved by :func:`to_netcdf` or :func:`to_zarr` (or another tool), detecting which.

    Loads it into memory, restores what the writers encoded and validates it.
    A Zarr store is refused, before anything is decoded, when it holds Python
    objects. Scores other tools marked with ``_FillValue`` or ``missing_value``
    become NaN and are counted: in ``attrs["n_missing"]`` when the fill value
    is the declared ``missing=``, else in ``attrs["n_fill_value"]`` (and in
    ``attrs["n_not_compared"]``).

    Parameters
    ----------
    path : str or path-like
        A netCDF file or a Zarr store directory.
    score_kind : {"similarity", "distance"}, optional
        Overrides the stored ``score_kind`` (with a warning when they differ).
    missing, failure : float, optional
        Sentinels, as in :func:`bioxr.io.read_matrix_csv`.

    Returns
    -------
    xarray.DataArray

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bioxr.cube import score_cube
    >>> cube = score_cube([[0.9, 0.1], [0.2, 0.8]], subject=["a", "b"], reference_subject=["a", "b"])
    >>> path = pathlib.Path(tempfile.mkdtemp(), "cube.nc")
    >>> to_netcdf(cube, path)
    >>> open_score_cube(path).dims
    ('probe', 'reference')
    """
    path = Path(path)
    if path.is_dir():
        if not _is_zarr(path):
            raise ScoreFileError(f"{path}: is a directory but not a Zarr store (no .zgroup, .zarray or zarr.json "
                                 "inside).")
        check_zarr_store(path)
        engine = "zarr"
    else:
        with existing_file(path).open("rb") as handle:
            magic = handle.read(8)
        if not magic.startswith((b"\x89HDF\r\n\x1a\n", b"CDF")):
            raise ScoreFileError(f"{path}: is neither netCDF nor a Zarr store (no netCDF/HDF5 signature). For CSV, "
                                 "Parquet, bob text or .npz use read_scores.")
        engine = "h5netcdf" if magic.startswith(b"\x89HDF") else None  # netCDF-3: let xarray pick
    try:
        ds, counts = _open(path, engine)
        cube = _decode_from_disk(path, ds)
    except ScoreFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ScoreFileError(f"{path}: cannot be opened as a score cube ({type(err).__name__}: {err}).") from err
    fills, n_fill = next(iter(counts.values()), ([], 0))
    if fills:
        if missing is not None and float(missing) in fills:
            cube.attrs.update(missing_sentinel=float(missing), n_missing=int(cube.attrs.get("n_missing", 0)) + n_fill)
        else:
            cube.attrs.update(fill_value=fills[0] if len(fills) == 1 else fills, n_fill_value=n_fill)
            if "n_not_compared" in cube.attrs or n_fill:
                cube.attrs["n_not_compared"] = int(cube.attrs.get("n_not_compared", 0)) + n_fill
    try:
        cube = validate_score_cube(cube)
    except ScoreCubeError as err:
        raise ScoreFileError(f"{path}: {err}") from err
    if score_kind is None and missing is None and failure is None:
        return cube
    return _apply_options(path, cube, score_kind=score_kind, missing=missing, failure=failure)
