"""Narrated reports: run a template notebook with papermill, render one HTML file.

A template is a notebook in ``bioxr/templates`` (``templates/`` in a source
checkout) with one code cell tagged ``parameters`` whose lines read
``name: type = default  # help``. :func:`run_report` checks the given
parameters against that cell, executes the notebook with papermill (which
inserts an ``injected-parameters`` cell), and converts the executed notebook
to a single self-contained HTML file that fetches nothing from the network:
charts are inline SVG, and nbconvert's MathJax and require.js addresses are
replaced by empty ``data:`` URLs.

Inside templates, :func:`provenance` records what a reader needs to
reproduce the report and :func:`escape` makes strings from the data safe to
put into Markdown.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import hashlib
import html
import importlib.metadata
import importlib.resources
import io
import json
import os
import platform
import re
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import xarray as xr

__all__ = [
    "ReportError",
    "Parameter",
    "Provenance",
    "ReportFiles",
    "template_dir",
    "list_templates",
    "template_path",
    "template_parameters",
    "parse_value",
    "run_report",
    "notebook_to_html",
    "provenance",
    "escape",
]

#: data: URLs given to nbconvert in place of its CDN addresses (nothing is fetched).
OFFLINE_JS = "data:text/javascript,"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ReportError(RuntimeError):
    """A report could not be made: unknown template or parameter, or a failing cell."""


@dataclass(frozen=True)
class Parameter:
    """One line of a template's ``parameters`` cell: ``name: type = default  # help``."""

    name: str
    type: str
    default: object
    help: str = ""

    def describe(self) -> str:
        """``name: type = default  # help`` as written in the template."""
        text = f"{self.name}: {self.type} = {self.default!r}"
        return f"{text}  # {self.help}" if self.help else text


@dataclass(frozen=True)
class ReportFiles:
    """Where :func:`run_report` wrote its outputs."""

    notebook: Path
    html: Path | None
    results: tuple = ()


# ------------------------------------------------------------- templates ---


def template_dir() -> Path:
    """The folder of report templates.

    ``bioxr/templates`` inside an installed wheel; in a source checkout or
    editable install, the repository's top-level ``templates/`` folder.
    """
    packaged = importlib.resources.files("bioxr") / "templates"
    if packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parents[1] / "templates"
    if source.is_dir():
        return source
    raise ReportError(
        f"no report templates found: neither {packaged} (installed package) nor {source} "
        "(source checkout) exists. Reinstall bioxr."
    )


def list_templates() -> dict[str, Path]:
    """Names and paths of the available templates.

    Examples
    --------
    >>> from bioxr.report import list_templates
    >>> "verification" in list_templates()
    True
    """
    return {p.stem: p for p in sorted(template_dir().glob("*.ipynb")) if not p.name.startswith(".")}


def template_path(template) -> Path:
    """Path of a template given by name (``"verification"``) or as a path to a notebook."""
    candidate = Path(template)
    if candidate.suffix == ".ipynb" and candidate.is_file():
        return candidate
    templates = list_templates()
    if str(template) in templates:
        return templates[str(template)]
    hint = difflib.get_close_matches(str(template), list(templates), n=1)
    raise ReportError(
        f"unknown report template {str(template)!r}"
        + (f"; did you mean {hint[0]!r}?" if hint else ".")
        + f" Available: {', '.join(templates) or 'none'} (see `bioxr report --list`)."
    )


def _parameters_cell(path: Path) -> str:
    """Source of the cell tagged ``parameters`` (read as plain JSON: nbformat is slow to import)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ReportError(f"cannot read template {path}: {err}") from err
    cells = [c for c in nb.get("cells", [])
             if c.get("cell_type") == "code" and "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ReportError(f"template {path} must have exactly one code cell tagged 'parameters'; it has {len(cells)}.")
    source = cells[0].get("source", "")
    return "".join(source) if isinstance(source, list) else source


def template_parameters(template) -> list[Parameter]:
    """The parameters declared in a template's ``parameters`` cell.

    Parameters
    ----------
    template : str or path
        A template name or the path of a notebook.

    Returns
    -------
    list of Parameter
        In the order written, with the type, default and help text.

    Examples
    --------
    >>> from bioxr.report import template_parameters
    >>> params = {p.name: p for p in template_parameters("verification")}
    >>> params["seed"].type, params["seed"].default
    ('int', 0)
    """
    path = template_path(template)
    source = _parameters_cell(path)
    comments = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    params = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            try:
                default = ast.literal_eval(node.value)
            except ValueError as err:
                raise ReportError(f"template {path}: the default of {node.target.id!r} must be a literal.") from err
            params.append(Parameter(node.target.id, ast.get_source_segment(source, node.annotation),
                                    default, comments.get(node.lineno, "")))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            raise ReportError(f"template {path}: write each parameter as `name: type = default  # help` "
                              f"(line {node.lineno}).")
    return params


_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def parse_value(param: Parameter, text):
    """Convert a command-line string to a parameter's declared type.

    ``int``, ``float``, ``str`` and ``bool`` are understood, and ``T | None``
    (``none`` or an empty string give None). Values that are not strings are
    checked and passed through.

    Examples
    --------
    >>> from bioxr.report import Parameter, parse_value
    >>> parse_value(Parameter("n", "int", 3), "12")
    12
    >>> parse_value(Parameter("missing", "float | None", None), "-1")
    -1.0
    >>> parse_value(Parameter("missing", "float | None", None), "none") is None
    True
    """
    kinds = [k.strip() for k in param.type.replace("Optional[", "").rstrip("]").split("|")]
    optional = "None" in kinds
    base = next((k for k in kinds if k != "None"), "str")
    if not isinstance(text, str):
        if text is None and optional:
            return None
        text = str(text)
    if optional and text.strip().lower() in ("none", "null", ""):
        return None
    try:
        if base == "int":
            return int(text)
        if base == "float":
            return float(text)
        if base == "bool":
            low = text.strip().lower()
            if low in _TRUE | _FALSE:
                return low in _TRUE
            raise ValueError(text)
        return text
    except ValueError:
        raise ReportError(f"parameter {param.name!r} expects {param.type}; got {text!r}.") from None


def _check_parameters(template, given: dict) -> dict:
    declared = {p.name: p for p in template_parameters(template)}
    values = {}
    for name, value in given.items():
        if name not in declared:
            hint = difflib.get_close_matches(name, list(declared), n=1)
            raise ReportError(
                f"template {str(template)!r} has no parameter {name!r}"
                + (f"; did you mean {hint[0]!r}?" if hint else ".")
                + f" Its parameters: {', '.join(declared)}."
            )
        values[name] = parse_value(declared[name], value)
    return values


# ------------------------------------------------------------- running -----


@contextlib.contextmanager
def _kernel_can_import_bioxr():
    """Let the kernel import this bioxr when it runs from a source tree (not installed)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file():
        yield
        return
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(root)] + ([old] if old else []))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def run_report(template, output_dir, parameters: dict | None = None, *, scores=None, html: bool = True,
               kernel_name: str | None = None, timeout: float = 600) -> ReportFiles:
    """Execute a template with papermill and render it to one HTML file.

    Parameters
    ----------
    template : str or path
        A template name (see :func:`list_templates`) or a notebook path.
    output_dir : str or path
        Created if needed; receives ``<template>.ipynb`` (executed) and
        ``<template>.html``.
    parameters : dict, optional
        Parameter values; strings are converted to the declared types. A
        name the template does not declare raises :class:`ReportError`.
    scores : str or path, optional, keyword-only
        A score file, passed as the ``scores`` parameter (made absolute).
    html : bool, keyword-only
        Also write the HTML page.
    kernel_name : str, optional, keyword-only
        Jupyter kernel; default the notebook's (``python3``).
    timeout : float, keyword-only
        Seconds allowed per cell.

    Returns
    -------
    ReportFiles

    Raises
    ------
    ReportError
        Unknown template or parameter, a value of the wrong type, or a cell
        that raised: the message names the cell and the error, and the
        partly executed notebook is left in ``output_dir``.
    """
    path = template_path(template)
    given = dict(parameters or {})
    if scores is not None:
        scores_path = Path(scores).expanduser().resolve()
        if not scores_path.is_file():
            raise ReportError(f"--scores {scores}: no such file.")
        given["scores"] = str(scores_path)
    values = _check_parameters(path, given)
    out = Path(output_dir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    nb_path = out / f"{path.stem}.ipynb"
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        with _kernel_can_import_bioxr(), _results_saved_to(out):
            papermill.execute_notebook(
                str(path), str(nb_path), parameters=values, kernel_name=kernel_name, cwd=str(out),
                progress_bar=False, log_output=False, execution_timeout=timeout,
            )
    except PapermillExecutionError as err:
        raise ReportError(_cell_failure(path, nb_path, err)) from None
    except Exception as err:  # kernel missing, bad notebook, ...
        raise ReportError(f"running template {path.name} failed before its cells ran: {type(err).__name__}: {err}") from err
    html_path = notebook_to_html(nb_path, out / f"{path.stem}.html") if html else None
    saved = tuple(sorted(out.glob(f"{path.stem}_*.nc")))
    return ReportFiles(nb_path, html_path, saved)


@contextlib.contextmanager
def _results_saved_to(folder: Path):
    """Tell :func:`provenance`, inside the kernel, where to save the result Datasets."""
    old = os.environ.get(RESULTS_ENV)
    os.environ[RESULTS_ENV] = str(folder)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(RESULTS_ENV, None)
        else:
            os.environ[RESULTS_ENV] = old


def _cell_failure(path: Path, nb_path: Path, err) -> str:
    import nbformat

    lines = (err.source or "").strip().splitlines()
    excerpt = "\n".join("    " + line for line in lines[:6]) + ("\n    ..." if len(lines) > 6 else "")
    # papermill counts the injected-parameters cell; give the template's own cell number too
    cell_no = err.cell_index + 1
    try:
        nb = nbformat.read(nb_path, as_version=4)
        injected = [i for i, c in enumerate(nb.cells) if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
        template_no = cell_no - (1 if injected and injected[0] < err.cell_index else 0)
    except Exception:  # pragma: no cover - the output notebook should exist
        template_no = cell_no
    evalue = _ANSI.sub("", str(err.evalue))
    return (
        f"template {path.name} failed in cell {template_no} of the template (counting Markdown cells; "
        f"execution count {err.exec_count}):\n{excerpt}\n{err.ename}: {evalue}\n"
        f"The executed notebook, with the full traceback in that cell, is {nb_path}"
    )


def notebook_to_html(notebook, html_path) -> Path:
    """Convert an executed notebook to one self-contained HTML file.

    Inputs are left out (the narrative is in Markdown and outputs); images
    are embedded; nbconvert's MathJax, require.js and mermaid addresses are
    empty ``data:`` URLs and widget state is dropped, so the page makes no
    request outside itself.

    Parameters
    ----------
    notebook : str or path
    html_path : str or path

    Returns
    -------
    pathlib.Path
    """
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    nb.metadata.pop("widgets", None)  # would load the widget manager from a CDN
    title = next((c.source.lstrip("# ").splitlines()[0] for c in nb.cells
                  if c.cell_type == "markdown" and c.source.startswith("# ")), Path(notebook).stem)
    nb.metadata["title"] = title
    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
        mathjax_url=OFFLINE_JS,
        require_js_url=OFFLINE_JS,
        mermaid_js_url=OFFLINE_JS,
    )
    body, _ = exporter.from_notebook_node(nb)
    html_path = Path(html_path)
    html_path.write_text(body, encoding="utf-8")
    return html_path


# ------------------------------------------------------------- in templates


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")


def escape(value) -> str:
    """Make a string from the data safe inside Markdown (and so HTML).

    HTML special characters become entities and Markdown punctuation is
    backslash-escaped, so a subject label such as ``<script>`` or ``*x*``
    shows literally.

    Examples
    --------
    >>> from bioxr.report import escape
    >>> escape("<b>S_01</b>")
    '&lt;b&gt;S\\\\_01&lt;/b&gt;'
    """
    return _MD_SPECIAL.sub(r"\\\1", html.escape(str(value), quote=True))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        module = sys.modules.get(name)
        return getattr(module, "__version__", "not installed")


@dataclass
class Provenance:
    """What a report was made from; shown as an HTML table in notebooks."""

    parameters: dict
    data: dict
    versions: dict
    conventions: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"parameters": self.parameters, "data": self.data, "versions": self.versions,
                "conventions": self.conventions}

    def _repr_html_(self) -> str:
        rows = []
        for section, items in self.as_dict().items():
            for k, (key, value) in enumerate(items.items()):
                head = html.escape(section) if k == 0 else ""
                rows.append(f"<tr><th style='text-align:left;vertical-align:top'>{head}</th>"
                            f"<td style='text-align:left'><code>{html.escape(str(key))}</code></td>"
                            f"<td style='text-align:left'>{html.escape(str(value))}</td></tr>")
        return "<table class='bioxr-provenance'>\n" + "\n".join(rows) + "\n</table>"


RESULTS_ENV = "BIOXR_REPORT_RESULTS"


def _save_results(template: str, namespace: dict, results, folder: Path) -> dict:
    """Write each result Dataset as netCDF, named after its variable in the notebook."""
    names = {id(v): k for k, v in namespace.items() if not k.startswith("_")}
    saved = {}
    for k, result in enumerate(results):
        if not isinstance(result, (xr.Dataset, xr.DataArray)):
            continue
        name = names.get(id(result), f"result{k}")
        ds = result.to_dataset(name=result.name or name) if isinstance(result, xr.DataArray) else result
        ds = ds.copy()
        ds.attrs = {a: (v if isinstance(v, (str, int, float)) else str(v)) for a, v in ds.attrs.items()}
        for var in ds.variables.values():
            var.attrs = {a: (v if isinstance(v, (str, int, float)) else str(v)) for a, v in var.attrs.items()}
        path = folder / f"{Path(str(template)).stem}_{name}.nc"
        ds.to_netcdf(path, engine="h5netcdf")
        saved[name] = path.name
    return saved


def provenance(template, namespace: dict, *, cube=None, results=()) -> Provenance:
    """Record a report's provenance: parameters, data, versions, conventions.

    Parameters
    ----------
    template : str or path
        The template's name: its declared parameters are looked up in
        ``namespace``.
    namespace : dict
        The notebook's variables (``globals()``).
    cube : xarray.DataArray, optional, keyword-only
        The score cube, for its simulator, score kind and missing-value
        record.
    results : sequence of xarray.Dataset, keyword-only
        Results whose ``attrs`` name conventions (EER method, decision
        rule, tie rule); they are collected. Under ``bioxr report`` each
        is also saved beside the report as ``<template>_<variable>.nc``
        (netCDF), and the files are listed.

    Returns
    -------
    Provenance
        ``data`` holds the scores file's path, size and sha256, or
        "simulated, seed N" with the simulator call.

    Examples
    --------
    >>> import bioxr
    >>> from bioxr.report import provenance
    >>> cube = bioxr.simulate.gaussian(n_subjects=10, seed=3)
    >>> p = provenance("verification", {"seed": 3, "scores": ""}, cube=cube)
    >>> p.data["source"]
    'simulated, seed 3'
    """
    params = template_parameters(template)
    values = {p.name: namespace.get(p.name, p.default) for p in params}
    data: dict = {}
    scores = values.get("scores") or namespace.get("scores")
    if scores:
        path = Path(scores)
        data["source"] = f"score file {path.name}"
        data["path"] = str(path.resolve())
        data["bytes"] = f"{path.stat().st_size:,}"
        data["sha256"] = _sha256(path)
    else:
        data["source"] = f"simulated, seed {values.get('seed', namespace.get('seed'))}"
    if cube is not None:
        if "simulator" in cube.attrs and not scores:
            data["simulator"] = cube.attrs["simulator"]
        data["dims"] = ", ".join(f"{d}: {n}" for d, n in cube.sizes.items())
        data["score_kind"] = cube.attrs.get("score_kind", "similarity")
        sentinel = cube.attrs.get("missing_sentinel", cube.attrs.get("missing_value"))
        if sentinel is not None or "n_missing" in cube.attrs:
            data["missing sentinel"] = f"{sentinel} ({cube.attrs.get('n_missing', 0):,} cells, not compared)"
    versions = {name: _version(name) for name in ("bioxr", "numpy", "xarray", "pandas", "scipy", "altair")}
    versions["python"] = platform.python_version()
    folder = os.environ.get(RESULTS_ENV)
    if folder:
        for name, file in _save_results(template, namespace, results, Path(folder)).items():
            data[f"result {name}"] = file
    conventions = {}
    for result in results:
        for key in ("eer_method", "eer_convention", "decision_rule", "tie_rule", "operating_point", "interval",
                    "method", "level", "partition", "design", "randomize", "rule", "impostors"):
            if key in getattr(result, "attrs", {}):
                conventions.setdefault(key, result.attrs[key])
    return Provenance(values, data, versions, conventions)
