"""A lab's own samples: the training set and each model's synthetic samples, read from files and checked.

:func:`read_samples` reads the training set (``.npy``, ``.npz`` with one
array, or a CSV/TSV table of numbers, one row per sample) and the models'
samples (one file per model, a folder of such files, or an ``.npz`` holding
one array per model), and refuses, before any distance is computed, what
would make the measures meaningless: samples of another dimension than the
training set's, rows holding NaN or infinite values (counted, and named by
their line or row), fewer than two samples in a set (the standard error
divides by ``n - 1``), text where a number is expected. Files are named by
their stem (``poor.npy`` is model ``poor``); an ``.npz`` names its arrays.
:func:`describe_samples` says in words what was read.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["SampleFileError", "Samples", "read_samples", "describe_samples", "sizes_note", "report_provenance",
           "MIN_SAMPLES", "SAMPLE_SUFFIXES"]

#: Fewest samples a set needs: the standard errors divide by sqrt(n - 1).
MIN_SAMPLES = 2
#: The file kinds read, by suffix.
SAMPLE_SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".txt")
_SHOWN = 5


class SampleFileError(ValueError):
    """A training or sample file cannot be used; the message names the file, the place and the fix."""


SampleFileError.__module__ = "bioxr.generative"


@dataclass
class Samples:
    """What :func:`read_samples` read: arrays ready for :func:`bioxr.generative.compare_models`.

    Attributes
    ----------
    training : numpy.ndarray
        ``(n, d)`` float64.
    synthetic : dict of str to numpy.ndarray
        Each model's ``(m, d)`` samples, in reading order.
    files : dict of str to pathlib.Path
        Where each came from: ``"training"`` and each model's name.
    shape : tuple
        A sample's shape in its file (``(d,)``, or e.g. ``(h, w)`` for images, flattened to ``d`` features).
    """

    training: np.ndarray
    synthetic: dict
    files: dict = field(default_factory=dict)
    shape: tuple = ()

    @property
    def source(self) -> str:
        """The data in a phrase: "the training set t.npy and the samples of 2 models (a.npy, b.npy)"."""
        from ..narrative import escape

        train = self.files.get("training")
        files = list(dict.fromkeys(Path(p).name for m, p in self.files.items() if m != "training" and p is not None))
        k = len(self.synthetic)
        return (f"the training set{' ' + escape(Path(train).name) if train is not None else ''} and the samples of "
                f"{k} model{'' if k == 1 else 's'}" + (f" ({escape(', '.join(files))})" if files else ""))

    def sha256(self) -> dict:
        """The sha256 of each distinct file read, by file name."""
        out = {}
        for path in dict.fromkeys(self.files.values()):
            if path is not None and Path(path).is_file():
                out[Path(path).name] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        return out


# ------------------------------------------------------------------ one file
def _read_text(path: Path) -> tuple[np.ndarray, object]:
    """A table of numbers (delimiter sniffed, a header line of names allowed, # comments skipped) and a row locator."""
    from ..io._text import ScoreFileError, Source, _NotANumber, read_table, sniff, split_cells, to_float

    src = Source(path)
    try:
        lay = sniff(src, empty="the file is empty (only whitespace or comments); it holds no samples.")
    except ScoreFileError as err:
        raise SampleFileError(str(err)) from None
    try:
        [float(c) for c in lay.names]
        lay = sniff(src, header=False)  # the first line is numbers: no header
        names = [str(k) for k in range(len(split_cells(lay.first_data[0], lay.delimiter)))]
    except ValueError:
        names = [str(k) for k in range(len(lay.names))]

    def width(line, n):
        return (f"{path.name}: line {line} has {n} numbers but the first row has {len(names)}; every sample needs "
                "the same number of features.")

    try:
        table = read_table(src, lay, names=names, numeric=set(names), width_error=width)
    except ScoreFileError as err:
        raise SampleFileError(str(err)) from None
    columns = []
    for k, name in enumerate(names):
        try:
            columns.append(to_float(table.columns[name], where=table.locate))
        except _NotANumber as err:
            raise SampleFileError(f"{path.name}: {table.locate(err.row)}, column {k + 1}: {err.text!r} is not a "
                                  "number. A sample is a row of numbers (features); write nan for a missing one "
                                  "(such rows are then refused, and counted).") from None
    values = np.column_stack(columns) if columns else np.zeros((0, 0))
    return values, table.locate


def _arrays(path: Path) -> list[tuple[str, np.ndarray, object]]:
    """(name, array, row locator) of each array in a file."""
    suffix = path.suffix.lower()
    if suffix not in SAMPLE_SUFFIXES:
        raise SampleFileError(f"{path.name}: cannot read a {suffix or 'suffix-less'} file as samples; give .npy, "
                              f".npz or a CSV/TSV table of numbers ({', '.join(SAMPLE_SUFFIXES)}).")
    def row(k):  # arrays count rows from 1
        return f"row {k + 1}"

    if suffix == ".npy":
        try:
            return [(path.stem, np.load(path, allow_pickle=False), row)]
        except (ValueError, OSError, EOFError) as err:  # pickled objects, a truncated or foreign file
            raise SampleFileError(f"{path.name}: cannot be read as a NumPy array ({type(err).__name__}: {err}).") from None
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as npz:
                out = [(str(k), npz[k], row) for k in npz.files]
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:  # pickled objects, not a zip, truncated
            raise SampleFileError(f"{path.name}: cannot be read as NumPy arrays ({type(err).__name__}: {err}).") from None
        if not out:
            raise SampleFileError(f"{path.name}: holds no array.")
        return out
    values, locate = _read_text(path)
    return [(path.stem, values, locate)]


def _checked(name: str, where: str, values: np.ndarray, locate, role: str) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise SampleFileError(f"{where}: {role} holds {values.dtype} values, not real numbers.")
    if values.ndim < 2:
        hint = (f" If each of the {values.shape[0]:,} values is a sample of one feature, save it as shape "
                f"({values.shape[0]}, 1)." if values.ndim == 1 else "")
        raise SampleFileError(f"{where}: {role} has shape {values.shape}; give one sample per row, shape (n, d).{hint}")
    n = values.shape[0]
    flat = values.reshape(n, -1).astype(np.float64, copy=False)
    if n < MIN_SAMPLES:
        raise SampleFileError(f"{where}: {role} has {n} sample{'' if n == 1 else 's'}; the standard errors of G and S "
                              f"divide by sqrt(n - 1), so a set needs at least {MIN_SAMPLES}.")
    if flat.shape[1] == 0:
        raise SampleFileError(f"{where}: {role} has no features (shape {values.shape}).")
    bad = np.flatnonzero(~np.isfinite(flat).all(axis=1))
    if bad.size:
        places = [str(locate(int(k))) for k in bad[:_SHOWN]]
        raise SampleFileError(f"{where}: {bad.size:,} of {n:,} samples of {role} hold NaN or infinite values "
                              f"({', '.join(places)}{', ...' if bad.size > _SHOWN else ''}); distances to them are "
                              "undefined. Drop or impute those samples first: none is dropped silently.")
    return flat


def _sources(samples) -> list[tuple[str, object, Path | None]]:
    """(model name, array or path, file) of each model, from a path, a folder, a list of paths or a mapping."""
    if isinstance(samples, Mapping):
        return [(str(k), v, Path(v) if isinstance(v, (str, Path)) else None) for k, v in samples.items()]
    if isinstance(samples, (str, Path)):
        path = Path(samples).expanduser()
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in SAMPLE_SUFFIXES)
            if not files:
                raise SampleFileError(f"{path}: the folder holds no sample file ({', '.join(SAMPLE_SUFFIXES)}): "
                                      "put one file per model in it, named after the model.")
            return [(p.stem, p, p) for p in files]
        return [(None, path, path)]
    return [(None, Path(p), Path(p)) for p in samples]


def _exists(path: Path, role: str) -> Path:
    path = Path(path).expanduser()
    if not path.exists():
        raise SampleFileError(f"{role}: no such file or folder: {str(path)!r}.")
    return path


def read_samples(training, samples) -> Samples:
    """Read a training set and each model's samples from files, checked for what the measures need.

    Parameters
    ----------
    training : str, path-like or array_like
        The training set: a ``.npy`` file, an ``.npz`` holding one array
        (or an array named ``training``), or a CSV/TSV table of numbers
        (one row per sample; a header line of names is allowed); or an
        array. Shape ``(n, d)``; ``(n, h, w, ...)`` is flattened to ``d =
        h w ...`` features.
    samples : str, path-like, sequence of paths or mapping
        Each model's samples, of the training set's sample shape: a folder
        (each ``.npy``, ``.npz`` or CSV/TSV file in it is a model named by
        its stem), an ``.npz`` (each array a model named by its key), one
        file (one model), a list of files, or a mapping of model name to
        file or array.

    Returns
    -------
    Samples

    Raises
    ------
    SampleFileError
        A file that cannot be read, or holds no samples, text where a
        number belongs, rows with NaN or infinite values (counted, the first
        rows named), fewer than two samples, or samples of another shape
        than the training set's; two models of one name.

    Examples
    --------
    >>> import numpy as np
    >>> from bioxr import generative
    >>> rng = np.random.default_rng(0)
    >>> s = generative.read_samples(rng.normal(size=(30, 3)), {"a": rng.normal(size=(40, 3))})
    >>> s.training.shape, list(s.synthetic)
    ((30, 3), ['a'])
    >>> generative.read_samples(rng.normal(size=(30, 3)), {"a": rng.normal(size=(40, 4))})
    Traceback (most recent call last):
    ...
    bioxr.generative.SampleFileError: model 'a': its samples have 4 features (shape (4,)), the training set's 3 (shape (3,)); every model must sample the training set's space.
    """
    files: dict = {}
    for role, given in (("training", training), ("samples", samples)):
        if given is None or (isinstance(given, str) and not given.strip()):
            other = "samples" if role == "training" else "training"
            raise SampleFileError(f"{role} is empty: give the {'training set' if role == 'training' else 'models' + chr(39) + ' samples'} "
                                  f"as well as the {other} (in a report, -p {role} PATH).")
    if isinstance(training, (str, Path)):
        path = _exists(training, "training")
        arrays = _arrays(path)
        if len(arrays) > 1:
            named = [a for a in arrays if a[0] == "training"]
            if not named:
                raise SampleFileError(f"{path.name}: holds {len(arrays)} arrays ({', '.join(a[0] for a in arrays)}); "
                                      "the training set is one array: keep one, or name it 'training'.")
            arrays = named
        _, values, locate = arrays[0]
        where = path.name if path.suffix.lower() != ".npz" else f"{path.name}[{arrays[0][0]!r}]"
        files["training"] = path
    else:
        values, locate, where = training, (lambda k: f"row {k + 1}"), "training"
    shape = tuple(np.shape(values)[1:])
    train = _checked("training", where, values, locate, "the training set")
    synthetic: dict = {}
    for name, source, path in _sources(samples):
        if path is not None:
            path = _exists(path, "samples")
            found = _arrays(path)
            if name is not None and len(found) > 1:
                found = [(f"{name}/{k}", v, loc) for k, v, loc in found]  # an .npz in a folder: one model per array
            elif name is not None:
                found = [(name, found[0][1], found[0][2])]
        else:
            found = [(name, source, lambda k: f"row {k + 1}")]
        for model, array, loc in found:
            where = path.name if path is not None and path.suffix.lower() != ".npz" else \
                (f"{path.name}[{model.split('/')[-1]!r}]" if path is not None else f"model {model!r}")
            if model in synthetic:
                raise SampleFileError(f"{where}: a second set of samples for model {model!r} "
                                      f"(the first from {files[model].name if files.get(model) else 'an array'}); "
                                      "give each model one file.")
            got = tuple(np.shape(array)[1:])
            flat = _checked(model, where, array, loc, f"model {model!r}")
            if flat.shape[1] != train.shape[1]:
                raise SampleFileError(f"{where}: its samples have {flat.shape[1]:,} features (shape {got}), the "
                                      f"training set's {train.shape[1]:,} (shape {shape}); every model must sample "
                                      "the training set's space.")
            synthetic[model] = flat
            files[model] = path
    if not synthetic:
        raise SampleFileError("samples: no model's samples were given.")
    return Samples(train, synthetic, files, shape)


def describe_samples(inputs: Samples) -> str:
    """What :func:`read_samples` read, in a sentence (Markdown) for a report's data section.

    Examples
    --------
    >>> import numpy as np
    >>> from bioxr import generative
    >>> s = generative.read_samples(np.zeros((30, 3)) + np.arange(30)[:, None], {"a": np.ones((40, 3))})
    >>> generative.describe_samples(s)
    'The training set holds 30 samples of 3 features each; model a was given 40 samples.'
    """
    from ..narrative import escape

    def named(role):
        path = inputs.files.get(role)
        return f" ({escape(Path(path).name)})" if path is not None else ""

    n, d = inputs.training.shape
    feats = f"{d:,} features each" if len(inputs.shape) <= 1 else \
        f"{d:,} features each (arrays of shape {' x '.join(map(str, inputs.shape))}, flattened)"
    models = [f"{escape(m)}{named(m)} {len(v):,}" for m, v in inputs.synthetic.items()]
    what = (f"model {models[0].rsplit(' ', 1)[0]} was given {len(next(iter(inputs.synthetic.values()))):,} samples"
            if len(models) == 1 else "the models were given " + ", ".join(models[:-1]) + " and " + models[-1]
            + " samples")
    return f"The training set{named('training')} holds {n:,} samples of {feats}; {what}."


def sizes_note(result) -> str:
    """Whether the models were compared at equal sizes, in a sentence (G and S both depend on the sizes).

    Examples
    --------
    >>> from bioxr import generative, simulate
    >>> clouds = simulate.generative_models(n_training=30, n_synthetic=40, n_features=3, seed=1)
    >>> generative.sizes_note(generative.compare_models(clouds.training, clouds.synthetic, synthetic_dim="draw"))
    'Here every model was given 40 samples, so their G and S are compared at equal sizes.'
    """
    dim = result["G"].dims[0] if result["G"].dims else None
    sizes = {str(m): int(n) for m, n in zip(result[dim].values.tolist(), result["n_synthetic"].values)} if dim else \
        {"model": int(result["n_synthetic"])}
    if len(set(sizes.values())) == 1:
        n = next(iter(sizes.values()))
        return (f"Here every model was given {n:,} samples, so their G and S are compared at equal sizes." if dim else
                f"Here the model was given {n:,} samples.")
    each = ", ".join(f"{m} {n:,}" for m, n in sizes.items())
    return (f"Here the models were given different numbers of samples ({each}): a model with more samples has a "
            "lower G for that alone, so compare G only at equal sizes (draw as many samples from each); S, a mean "
            "over the model's own samples, depends on their number far less.")


def report_provenance(namespace: dict, inputs: Samples | None, results=()):
    """The generative report's provenance: :func:`bioxr.report.provenance`, on the user's files when given.

    With ``inputs`` (the report read its training set and samples from
    files) the simulator's parameters are left out, the file parameters
    shown, and the data named by file, size and sha256.

    Examples
    --------
    >>> from bioxr.generative import report_provenance
    >>> report_provenance({"seed": 3}, None).data["source"]
    'simulated, seed 3'
    """
    from ..report import provenance, template_parameters

    record = provenance("generative", namespace, results=results)
    if inputs is None:
        return record
    params = template_parameters("generative")
    record.parameters = {p.name: namespace.get(p.name, p.default) for p in params
                         if not p.help.lower().startswith("simulator")}
    if "date" in record.parameters:
        from ..narrative import report_date

        record.parameters["date"] = report_date(record.parameters["date"])
    data = {"source": inputs.source.replace("\\", "")}
    for role, path in inputs.files.items():
        if path is not None:
            data[f"{role} file" if role == "training" else f"model {role}"] = str(Path(path).resolve())
    for name, digest in inputs.sha256().items():
        data[f"sha256 {name}"] = digest
    data["samples"] = ", ".join([f"training {len(inputs.training):,}"] +
                                [f"{m} {len(v):,}" for m, v in inputs.synthetic.items()])
    data["features per sample"] = f"{inputs.training.shape[1]:,}"
    data.update({k: v for k, v in record.data.items() if k == "files beside this report"})
    record.data = data
    return record
