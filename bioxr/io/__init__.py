"""Read and write score files as validated score cubes or comparison lists.

Readers turn a matrix CSV, a long-form CSV/TSV or Parquet table, bob-style
4/5 column text, a ``.npz`` archive, a netCDF file or a Zarr store into a
score cube checked by :func:`bioxr.cube.validate_score_cube`, or (long and
bob files, when sparse) a comparison list (:func:`bioxr.comparison_list`).
Text is parsed by pyarrow (or pandas' C engine), never line by line in
Python; bad input raises :class:`ScoreFileError`, which names the file, the
line (or row) and column, and what to do. Nothing is dropped silently: cells
with no score are counted in ``attrs["n_not_compared"]``, a declared
sentinel in ``attrs["n_missing"]``, failures in ``attrs["n_failed_*"]``.

Topic modules: :mod:`bioxr.io.tables` (matrix, long, bob),
:mod:`bioxr.io.stores` (npz, netCDF, Zarr), :mod:`bioxr.io.dispatch`
(:func:`read_scores`, the one door) and the private parsing layer
:mod:`bioxr.io._text`.
"""

from ._text import ScoreFileError
from .dispatch import read_candidates, read_scores
from .stores import open_score_cube, read_npz, to_netcdf, to_zarr, write_npz
from .tables import read_bob, read_long, read_matrix_csv

__all__ = ["ScoreFileError", "read_matrix_csv", "read_long", "read_bob", "read_npz", "write_npz", "to_netcdf",
           "to_zarr", "open_score_cube", "read_scores", "read_candidates"]
