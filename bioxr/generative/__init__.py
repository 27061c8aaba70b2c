"""Specificity and generalisation of a generative model.

A generative model (of faces, shapes, registered images...) is judged by
comparing the samples it synthesises with the samples it was trained on
(METHODS.md section 6; Schestowitz et al., seed ``003_*.txt``). With a
training set ``{I_i}, i = 1..n``, a synthetic set ``{I_j}, j = 1..m`` and a
distance ``|I_i - I_j|``:

- generalisation ``G = mean_i min_j |I_i - I_j|``: how close the model comes
  to every training sample (can it *reach* the whole class?);
- specificity ``S = mean_j min_i |I_i - I_j|``: how close every synthetic
  sample lies to some training sample (does it generate *only* the class?);
- standard errors ``sigma_G = SD_i(min_j |I_i - I_j|) / sqrt(n - 1)`` and
  ``sigma_S = SD_j(min_i |I_i - I_j|) / sqrt(m - 1)``.

Both are low for a good model. A model that memorises its training set has
``G = S = 0``; both measures say nothing about over-fitting on their own, so
read them beside held-out data.

Conventions (stated in the results' attrs):

- SD is the population standard deviation (``ddof=0``). The ``sqrt(n - 1)``
  of the formula is then Bessel's correction, so ``sigma_G = SD_ddof1 /
  sqrt(n)``: the usual standard error of a mean. Taking ``ddof=1`` *and*
  dividing by ``sqrt(n - 1)`` would correct twice. The standard errors treat
  the nearest distances as independent, which they are only approximately
  (two training samples may share a nearest synthetic sample). They need
  ``n >= 2`` (``m >= 2``): with one sample the formula divides by zero, and
  bioxr raises rather than return a meaningless number.
- Nearest neighbours are found in tiles of at most ``block_size`` distances
  (default ``2**23``, 64 MB of float64), so the ``n x m`` distance matrix is
  never built; both minima (for ``G`` and for ``S``) come from the same
  pass over the tiles. The samples themselves (``n x d`` and ``m x d``) are
  held in memory; besides a tile, the search holds a boolean mask of it and
  at most 16 candidate neighbours per sample.
- ``"euclidean"`` and ``"sqeuclidean"`` give the brute-force answer
  (:func:`scipy.spatial.distance.cdist`) for any common offset of the data.
  Both sets are centred on the training mean, which cancels an offset
  exactly; on the centred samples ``|a|^2 + |b|^2 - 2 a.b`` (a matrix
  product) screens the candidates: every sample within that shortcut's
  worst-case rounding bound of the best stays a candidate, and the
  candidates' distances are recomputed directly, ``|a - b|`` from the
  original values, to choose the nearest and report its distance. An exact
  copy gives exactly 0, ties are ties of the direct distances, and float32
  (or integer) samples are compared in float64. A sample with more than 16
  candidates (many exact or near ties, or samples far from the training
  mean compared with their nearest distances, such as far-apart clusters)
  is resolved by a direct scan of the other set: still exact, but without
  the matrix product, so slower. Other metrics go through
  :func:`scipy.spatial.distance.cdist` tile by tile.
- A lab's own samples come in through :func:`read_samples` (``.npy``,
  ``.npz`` or CSV/TSV files: the training set, and one set per model),
  which refuses, before any distance is computed, rows with NaN,
  dimensions that differ from the training set's and sets of fewer than two
  samples.
- Ties: the nearest neighbour reported is the first (lowest position) among
  equally near samples.
"""


from __future__ import annotations

from .measures import (DEFAULT_BLOCK_SIZE, SYNTHETIC, TRAINING, compare_models, generalisation, specificity,
                       specificity_generalisation)
from .samples import (MIN_SAMPLES, SampleFileError, Samples, describe_samples, read_samples, report_provenance,
                      sizes_note)
from .text import describe, to_markdown

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "MIN_SAMPLES",
    "SampleFileError",
    "Samples",
    "read_samples",
    "describe_samples",
    "sizes_note",
    "report_provenance",
    "compare_models",
    "describe",
    "to_markdown",
    "SYNTHETIC",
    "TRAINING",
    "generalisation",
    "specificity",
    "specificity_generalisation",
]

