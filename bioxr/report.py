"""Narrated reports: run a template notebook with papermill, render one HTML file.

A template is a notebook in ``bioxr/templates`` (``templates/`` in a source
checkout) with one code cell tagged ``parameters`` whose lines read
``name: type = default  # help``. :func:`run_report` checks the given
parameters against that cell, executes the notebook with papermill (which
inserts an ``injected-parameters`` cell), and converts the executed notebook
to a single self-contained HTML file that fetches nothing from the network:
charts are inline SVG, and nbconvert's MathJax and require.js addresses are
replaced by empty ``data:`` URLs. The page carries a print layout, and
``pdf=True`` prints it to a PDF beside it with headless Chromium
(:mod:`bioxr.printing`).

Checks written in the help text
-------------------------------
Every value is checked before a kernel starts, against its declared type
(``int``, ``float``, ``str``, ``bool``, ``T | None``) and against what the
help text after ``#`` says, in these phrases:

- ``one of {a,b,c}``: the value must be one of the names in braces;
- ``in [lo, hi]``, ``in (lo, hi)``, ``in [lo, hi)`` or ``in (lo, hi]``: a
  number in that interval (brackets include the bound, parentheses do not;
  ``inf`` allowed), e.g. ``in (0, 1)`` or ``in [1, inf)``;
- ``a number``: a ``str`` parameter must be empty or a number (a sentinel);
- ``path to``: a non-empty value must name an existing file or folder (a
  Zarr store is a folder); it is passed to the kernel as an absolute path.

The template's own default always passes (``""`` for "detected", say). A
parameter named ``columns`` must parse with :func:`parse_columns`, and
``missing`` and ``failure`` may not be the same number.

The output folder
-----------------
A report is written into a temporary folder beside ``output_dir`` (same
file system) and renamed into place when complete, so a reader never sees a
half-written report and two runs never mix their files. ``output_dir`` may
be absent or empty; one that holds an earlier report is refused unless
``overwrite=True`` (then the last run to finish wins, whole); one that holds
anything else is always refused, because the report replaces the folder.
A run that fails leaves ``output_dir`` as it was, removes its temporary
folder and keeps the failed notebook beside it as ``<output_dir>.failed.ipynb``.

Inside templates, :func:`parse_columns` and :func:`parse_number` turn
parameters into reader arguments; :func:`provenance`, :func:`escape` and
the sentence helpers (:func:`describe_scores`, :func:`exclusions`,
:func:`failure_summary`, :func:`score_kind_warning`) come from
:mod:`bioxr.narrative` and are re-exported here.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import errno
import importlib.resources
import io
import json
import os
import re
import shutil
import tokenize
import uuid
from dataclasses import dataclass
from pathlib import Path

from .narrative import (RESULTS_ENV, SUMMARY_FILE, Provenance, describe_scores, escape, exclusions, failure_summary,
                        probe_dims, provenance, score_kind_warning)
from .printing import PAGE_SIZE, PrintError, find_chromium, html_to_pdf, page_title, print_css

__all__ = [
    "ReportError",
    "UsageError",
    "ParameterError",
    "Parameter",
    "Provenance",
    "ReportFiles",
    "template_dir",
    "list_templates",
    "template_path",
    "template_parameters",
    "parse_value",
    "parse_columns",
    "parse_number",
    "check_parameters",
    "run_report",
    "notebook_to_html",
    "provenance",
    "escape",
    "probe_dims",
    "describe_scores",
    "exclusions",
    "failure_summary",
    "score_kind_warning",
    "COLUMN_KEYS",
    "FORMATS",
    "FAILURE_POLICIES",
]

#: data: URLs given to nbconvert in place of its CDN addresses (nothing is fetched).
OFFLINE_JS = "data:text/javascript,"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ReportError(RuntimeError):
    """A report could not be made: unknown template or parameter, or a failing cell."""


class UsageError(ReportError):
    """The request is wrong (template, parameter value, output folder); nothing was run."""


class ParameterError(UsageError, ValueError):
    """A parameter value is wrong; ``str()`` reads ``parameter 'name' <problem>``."""

    def __init__(self, name: str, problem: str, *, message: str | None = None):
        self.name, self.problem = name, problem
        super().__init__(message or f"parameter {name!r} {problem}")


#: the keys of ``columns=`` (what each column of a long file or candidate list holds)
COLUMN_KEYS = ("score", "subject", "probe_subject", "reference_subject", "probe", "reference", "probe_id",
               "reference_id", "search", "rank", "candidate", "enrolled", "failed_enrolment", "failed_acquisition")
#: the formats of ``bioxr.io.read_scores(format=...)``
FORMATS = ("matrix", "long", "parquet", "bob", "npz", "netcdf", "zarr", "candidates")
FAILURE_POLICIES = ("exclude", "nist", "iso")
_NUM = r"[-+]?(?:inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)"
_CHOICES = re.compile(r"\bone of \{([^{}]*)\}")
_RANGE = re.compile(rf"\bin ([\[(])\s*({_NUM})\s*,\s*({_NUM})\s*([\])])", re.I)


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

    @property
    def choices(self) -> tuple | None:
        """The names of a ``one of {a,b,c}`` in the help, or None."""
        found = _CHOICES.search(self.help)
        return tuple(c.strip().strip("'\"") for c in found.group(1).split(",")) if found else None

    @property
    def bounds(self) -> tuple | None:
        """``(low, low_included, high, high_included)`` from an ``in [lo, hi)`` in the help, or None."""
        found = _RANGE.search(self.help)
        if not found:
            return None
        return float(found.group(2)), found.group(1) == "[", float(found.group(3)), found.group(4) == "]"

    @property
    def wants_number(self) -> bool:
        return bool(re.search(r"\ba number\b", self.help))

    @property
    def is_path(self) -> bool:
        return bool(re.search(r"\bpath to\b", self.help))


@dataclass(frozen=True)
class ReportFiles:
    """Where :func:`run_report` wrote its outputs."""

    notebook: Path
    html: Path | None
    results: tuple = ()
    summary: Path | None = None  # summary.csv: the headline numbers (bioxr.summary)
    pdf: Path | None = None  # <template>.pdf, printed from the page when asked


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
    raise UsageError(
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
    checked and passed through. The help text's checks are
    :func:`check_parameters`' job.

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
        raise ParameterError(param.name, f"expects {param.type}; got {text!r}.") from None


def parse_number(text, *, name: str = "value") -> float | None:
    """A sentinel given as text: ``""`` gives None, ``"-1"`` gives -1.0; anything else is refused.

    Examples
    --------
    >>> from bioxr.report import parse_number
    >>> parse_number("-1"), parse_number("")
    (-1.0, None)
    """
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ParameterError(name, f"expects a number (or nothing); got {text!r}.") from None
    if value != value:
        raise ParameterError(name, "is NaN, which already means \"not compared\": give the number the file uses.")
    return value


def parse_columns(text) -> dict | None:
    """Column roles written ``key=column,key=column`` as a dict for ``read_scores(columns=)``.

    Keys are those of :data:`COLUMN_KEYS` (``subject`` and ``probe_subject``
    are one role); an empty string gives None (the reader's defaults).
    ``key:column`` works too (a template's help text cannot hold ``=``:
    papermill refuses a parameter line with two).

    Examples
    --------
    >>> from bioxr.report import parse_columns
    >>> parse_columns("score=llr, subject=spk,reference_subject:enrol")
    {'score': 'llr', 'subject': 'spk', 'reference_subject': 'enrol'}
    >>> parse_columns("") is None
    True
    """
    if isinstance(text, dict):
        text = ",".join(f"{k}={v}" for k, v in text.items())
    if text is None or not str(text).strip():
        return None
    columns: dict = {}
    for item in str(text).split(","):
        key, eq, column = (part.strip() for part in item.partition("=" if "=" in item else ":"))
        if not item.strip():
            raise ParameterError("columns", f"has an empty entry in {text!r}; write key=column,key=column.")
        if not eq or not key or not column:
            raise ParameterError("columns", f"entry {item.strip()!r} is not key=column; write e.g. "
                                 "score=llr,subject=spk.")
        if key not in COLUMN_KEYS:
            hint = difflib.get_close_matches(key, COLUMN_KEYS, n=1)
            raise ParameterError("columns", f"has an unknown key {key!r}" + (f" (did you mean {hint[0]!r}?)" if hint
                                 else "") + f"; the keys are {', '.join(COLUMN_KEYS)}.")
        same = {"subject": "probe_subject", "probe_subject": "subject"}.get(key)
        if key in columns or same in columns:
            raise ParameterError("columns", f"gives {key!r} twice" + (f" (as {same!r} too: they are one role)" if
                                 same in columns else "") + "; give each key once.")
        columns[key] = column
    return columns


def _check_value(param: Parameter, value):
    """The help text's checks (see the module docstring) on a value of the declared type."""
    if value == param.default or value is None:
        return value
    choices = param.choices
    if choices is not None and str(value) not in choices:
        hint = difflib.get_close_matches(str(value), choices, n=1)
        tail = param.help[_CHOICES.search(param.help).end():].strip(" ;,:")  # what the help says after the names
        tail = tail[1:-1] if tail.startswith("(") and tail.endswith(")") else tail
        raise ParameterError(param.name, f"must be one of {', '.join(c or repr(c) for c in choices)}; got {value!r}"
                             + (f" ({tail})." if tail else ".") + (f" Did you mean {hint[0]!r}?" if hint else ""))
    bounds = param.bounds
    if bounds is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        low, low_in, high, high_in = bounds
        if not ((value >= low if low_in else value > low) and (value <= high if high_in else value < high)):
            text = f"{'[' if low_in else '('}{low:g}, {high:g}{']' if high_in else ')'}"
            raise ParameterError(param.name, f"must be in {text}; got {value!r}.")
    if param.wants_number and isinstance(value, str):
        parse_number(value, name=param.name)
    if param.is_path and isinstance(value, str) and value:
        path = Path(value).expanduser()
        if not path.exists():
            raise ParameterError(param.name, f"names no file or folder: {value!r} (relative paths start at "
                                 f"{Path.cwd()}). Check the path.")
        value = str(path.resolve())
    if param.name == "columns" and isinstance(value, str):
        parse_columns(value)
    return value


def check_parameters(template, given: dict) -> dict:
    """Check parameter values against a template's ``parameters`` cell, before anything runs.

    Parameters
    ----------
    template : str or path
    given : dict
        Names and values (strings are converted to the declared types).

    Returns
    -------
    dict
        The converted values (paths made absolute).

    Raises
    ------
    ParameterError
        An unknown name, a value of the wrong type or outside what its help
        text allows (see the module docstring); the message is one line.

    Examples
    --------
    >>> from bioxr.report import check_parameters
    >>> check_parameters("verification", {"level": "0.9"})
    {'level': 0.9}
    >>> check_parameters("verification", {"level": "1.5"})
    Traceback (most recent call last):
    ...
    bioxr.report.ParameterError: parameter 'level' must be in (0, 1); got 1.5.
    """
    declared = {p.name: p for p in template_parameters(template)}
    values = {}
    for name, value in given.items():
        if name not in declared:
            hint = difflib.get_close_matches(name, list(declared), n=1)
            raise ParameterError(name, "is not declared", message=(
                f"template {Path(str(template)).stem!r} has no parameter {name!r}"
                + (f"; did you mean {hint[0]!r}?" if hint else ".") + f" Its parameters: {', '.join(declared)}."))
        values[name] = _check_value(declared[name], parse_value(declared[name], value))
    sentinels = {k: parse_number(values.get(k, declared[k].default), name=k) for k in ("missing", "failure")
                 if k in declared}
    if len(sentinels) == 2 and None not in sentinels.values() and len(set(sentinels.values())) == 1:
        raise ParameterError("failure", f"is the same number as missing ({sentinels['missing']:g}): a sentinel "
                             "means \"not compared\" or \"failed\", not both.")
    return values


# ------------------------------------------------------------- running -----


def _kernel_env(results: Path) -> dict:
    """Variables the kernel gets on top of ours: where results go, and this bioxr on its path in a source tree."""
    env = {RESULTS_ENV: str(results)}
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():
        old = os.environ.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join([str(root)] + ([old] if old else []))
    return env


def _kernel_manager(env: dict, cwd: Path):
    """A kernel manager class that starts the kernel in ``cwd`` with ``env``, over IPC where it can.

    Nothing process-wide is changed (papermill's ``cwd=`` would ``chdir``), so
    reports can run in threads side by side. IPC sockets (not Windows) keep
    the kernel off TCP, so ipykernel has no reason for its "Kernel is running
    over TCP without encryption" warning; the kernel's other messages and
    errors are shown as before.
    """
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    ipc = _ipc_address()

    class ReportKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport(self):
            return "ipc" if ipc else "tcp"

        @default("ip")
        def _ip(self):  # absolute: the kernel runs in another folder than ours
            return ipc or "127.0.0.1"

        async def start_kernel(self, **kw):
            kw["env"] = {**kw.get("env", os.environ), **env}
            kw["cwd"] = str(cwd)
            return await super().start_kernel(**kw)

    return ReportKernelManager


def _ipc_address() -> str | None:
    """A fresh socket prefix in Jupyter's private runtime folder, or None where IPC cannot be used (Windows, long paths)."""
    if os.name == "nt":
        return None
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(jupyter_runtime_dir())
    address = str(folder / f"bioxr-{uuid.uuid4().hex[:12]}")
    if len(address) > 90:  # the socket files add "-N" and must fit sockaddr_un (about 107 bytes)
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None
    return address


def _execute(path: Path, nb_path: Path, values: dict, *, kernel_name, timeout, env: dict, cwd: Path) -> None:
    """Run the template with papermill into ``nb_path`` (the one slow step)."""
    import papermill

    papermill.execute_notebook(
        str(path), str(nb_path), parameters=values, kernel_name=kernel_name, progress_bar=False, log_output=False,
        execution_timeout=timeout, kernel_manager_class=_kernel_manager(env, cwd),
    )


_REPORT_MARK = ".bioxr-report"
_REPORT_SUFFIXES = (".ipynb", ".html", ".nc")


def _holds_report(folder: Path) -> bool:
    """A folder bioxr wrote: its mark, or (reports of older versions) only notebooks, pages and netCDF files."""
    entries = list(folder.iterdir())
    return (folder / _REPORT_MARK).is_file() or all(e.is_file() and e.suffix in _REPORT_SUFFIXES for e in entries)


def _check_output(out: Path, overwrite: bool) -> None:
    """Refuse, before anything runs, an output folder a report may not replace."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: is a file, not a folder; give a folder for the report.")
    if not out.is_dir() or not any(out.iterdir()):
        return
    if not _holds_report(out):
        first = sorted(e.name for e in out.iterdir() if e.name != _REPORT_MARK)[0]
        raise UsageError(f"-o {out}: the folder holds other files ({first!r}, ...) and a report replaces the whole "
                         "folder; give a new or empty folder.")
    if not overwrite:
        shown = ", ".join(sorted(e.name for e in out.iterdir() if e.name != _REPORT_MARK)[:2])
        raise UsageError(f"-o {out}: the folder holds an earlier report ({shown}, ...); pass --overwrite "
                         "(overwrite=True) to replace it, or give a new folder.")


def _publish(staged: Path, out: Path, overwrite: bool) -> None:
    """Rename the finished report folder into place; the last run to finish wins, whole, with ``overwrite``.

    ``rename`` is atomic and succeeds only while ``out`` is absent or empty,
    so a concurrent run that got there first makes this one refuse (without
    ``overwrite``) or move that report aside, whole, and retry.
    """
    for _ in range(20):
        try:
            os.rename(staged, out)
            return
        except OSError as err:
            if err.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EACCES) and not isinstance(err, FileExistsError):
                raise
        with contextlib.suppress(OSError):
            out.rmdir()  # empty (Windows will not rename onto an empty folder)
        if not out.exists():
            continue
        if not overwrite or not _holds_report(out):
            raise UsageError(f"-o {out}: another report was written there while this one ran; this run's report "
                             "was not kept. Pass --overwrite (overwrite=True) to let the last run replace it.")
        aside = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:12]}")
        try:
            os.rename(out, aside)
        except FileNotFoundError:
            continue  # another run moved it first
        try:
            os.rename(staged, out)
        except OSError:
            continue  # a third run slipped in: go round again (aside is removed below)
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        return
    raise ReportError(f"-o {out}: could not put the report in place; too many runs are writing there at once.")


def _finish(staged: Path, out: Path, path: Path, values: dict, html: bool, chromium: str | None) -> None:
    """Point the notebook at its final place, render the page (and print it with ``chromium``), mark the folder."""
    import nbformat

    nb_path = staged / f"{path.stem}.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    if "papermill" in nb.metadata:
        nb.metadata.papermill["output_path"] = str(out / nb_path.name)
        nbformat.write(nb, nb_path)
    page = staged / f"{path.stem}.html"
    if html or chromium:
        notebook_to_html(nb_path, page)
    if chromium:
        try:
            html_to_pdf(page, staged / f"{path.stem}.pdf", chromium=chromium)
        except PrintError as err:
            raise ReportError(f"the report ran but its PDF could not be printed: {err} {out} is as it was; "
                              "run again without --pdf (pdf=False) for the HTML alone.") from None
        if not html:
            page.unlink()
    mark = {"template": path.stem, "parameters": {k: v for k, v in values.items()}}
    (staged / _REPORT_MARK).write_text(json.dumps(mark, indent=1, default=str) + "\n", encoding="utf-8")


def run_report(template, output_dir, parameters: dict | None = None, *, scores=None, html: bool = True,
               pdf: bool = False, kernel_name: str | None = None, timeout: float = 600,
               overwrite: bool = False) -> ReportFiles:
    """Execute a template with papermill and render it to one HTML file (and a PDF).

    Parameters
    ----------
    template : str or path
        A template name (see :func:`list_templates`) or a notebook path.
    output_dir : str or path
        Absent or empty (created), or holding an earlier report (see
        ``overwrite``); receives ``<template>.ipynb`` (executed),
        ``<template>.html``, ``summary.csv`` and the result files, all renamed into place
        together when the run succeeds.
    parameters : dict, optional
        Parameter values; strings are converted to the declared types and
        checked (see the module docstring) before anything runs.
    scores : str or path, optional, keyword-only
        A score file or Zarr folder, passed as the ``scores`` parameter (made absolute).
    html : bool, keyword-only
        Also write the HTML page.
    pdf : bool, keyword-only
        Also write ``<template>.pdf``: the page printed by headless Chromium
        (see :mod:`bioxr.printing`: A4, title and page numbers in the
        footer, no chart split across pages), published with the rest.
        Chromium is looked for before anything runs.
    kernel_name : str, optional, keyword-only
        Jupyter kernel; default the notebook's (``python3``).
    timeout : float, keyword-only
        Seconds allowed per cell.
    overwrite : bool, keyword-only
        Replace an earlier report in ``output_dir``.

    Returns
    -------
    ReportFiles

    Raises
    ------
    UsageError
        Unknown template or parameter, a value that is wrong (a
        :class:`ParameterError`), an output folder that may not be
        replaced, or ``pdf=True`` without a Chromium to print with: raised
        before a kernel starts.
    ReportError
        A cell raised: the message names the cell and the error and where
        the failed notebook is kept; ``output_dir`` is left as it was.
    """
    path = template_path(template)
    given = dict(parameters or {})
    if scores is not None:
        if "scores" in given:
            raise UsageError("give the score file either as scores= or in parameters, not both.")
        given["scores"] = str(scores)
    values = check_parameters(path, given)
    out = Path(output_dir).expanduser().resolve()
    _check_output(out, overwrite)
    try:
        chromium = find_chromium() if pdf else None
    except PrintError as err:
        raise UsageError(f"--pdf (pdf=True): {err}") from None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staged = out.with_name(f".{out.name}.{uuid.uuid4().hex[:12]}.bioxr-tmp")
        staged.mkdir()  # unlike mkdtemp, honours the umask: the folder becomes the report
    except OSError as err:
        raise UsageError(f"-o {out}: cannot create a folder in {out.parent} ({err.strerror}); pick a writable place.") from None
    nb_path = staged / f"{path.stem}.ipynb"
    from papermill.exceptions import PapermillExecutionError

    try:
        try:
            _execute(path, nb_path, values, kernel_name=kernel_name, timeout=timeout, env=_kernel_env(staged),
                     cwd=staged)
        except PapermillExecutionError as err:
            kept = _keep_failed(nb_path, out)
            raise ReportError(_cell_failure(path, kept, err, out)) from None
        except Exception as err:  # kernel missing, bad notebook, ...
            raise ReportError(f"running template {path.name} failed before its cells ran: "
                              f"{type(err).__name__}: {err}") from err
        _finish(staged, out, path, values, html, chromium)
        _publish(staged, out, overwrite)
    finally:
        shutil.rmtree(staged, ignore_errors=True)  # gone already when renamed into place
    saved = tuple(sorted(out.glob(f"{path.stem}_*.nc")))
    summary = out / SUMMARY_FILE
    return ReportFiles(out / nb_path.name, out / f"{path.stem}.html" if html else None, saved,
                       summary if summary.is_file() else None, out / f"{path.stem}.pdf" if pdf else None)


def _keep_failed(nb_path: Path, out: Path) -> Path | None:
    """Move a failed run's notebook beside the output folder (the folder itself stays as it was)."""
    kept = out.with_name(f"{out.name}.failed.ipynb")
    try:
        os.replace(nb_path, kept)
    except OSError:
        return None
    return kept


#: errors raised by bioxr about the data: their message says it all, the cell's code is not shown
_DATA_ERRORS = ("ScoreFileError", "SampleFileError", "ScoreCubeError", "ParameterError", "UsageError")


def _cell_failure(path: Path, kept: Path | None, err, out: Path) -> str:
    import nbformat

    evalue = _ANSI.sub("", str(err.evalue)).strip()
    where = (f"The executed notebook, with the full traceback in that cell, is kept at {kept}" if kept else
             "The executed notebook was not kept")
    where += f"; {out} is as it was." if out.exists() else "."
    # papermill counts the injected-parameters cell (and adds error cells to the notebook): give the template's number
    cell_no = err.cell_index + 1
    try:
        nb = nbformat.read(kept, as_version=4)
        cells = [c for c in nb.cells if "papermill-error-cell-tag" not in c.get("metadata", {}).get("tags", [])]
        injected = [i for i, c in enumerate(cells) if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
        template_no = cell_no - (1 if injected and injected[0] < err.cell_index else 0)
    except Exception:  # the notebook could not be kept
        template_no = cell_no
    if err.ename in _DATA_ERRORS:  # bioxr's own message says what is wrong with the data: no code shown
        return f"template {path.name} stopped in cell {template_no}: {err.ename}: {evalue}\n{where}"
    lines = (err.source or "").strip().splitlines()
    excerpt = "\n".join("    " + line for line in lines[:6]) + ("\n    ..." if len(lines) > 6 else "")
    return (
        f"template {path.name} failed in cell {template_no} of the template (counting Markdown cells; "
        f"execution count {err.exec_count}):\n{excerpt}\n{err.ename}: {evalue}\n{where}"
    )


def notebook_to_html(notebook, html_path, *, page_size: str = PAGE_SIZE, code: bool = False) -> Path:
    """Convert an executed notebook to one self-contained HTML file, laid out for screen and paper.

    Inputs are left out unless ``code=True`` (a report's narrative is in
    Markdown and outputs; an exploration notebook keeps its code). Widgets
    show the static snapshot they carry (the threshold explorer: its charts
    and table at export), where nbconvert would fetch a widget manager
    from a CDN for a notebook saved with widget state. Images
    are embedded; nbconvert's MathJax, require.js and mermaid addresses are
    empty ``data:`` URLs and widget state is dropped, so the page makes no
    request outside itself. A print style sheet
    (:func:`bioxr.printing.print_css`) lays the page out on paper: A4 by
    default, the title and page numbers in the footer, no chart or table
    split across pages, no notebook prompts; the screen view is unchanged.

    Parameters
    ----------
    notebook : str or path
    html_path : str or path
    page_size : str, keyword-only
        The printed paper, a CSS page size: ``"A4"`` (the default) or
        ``"letter"``.
    code : bool, keyword-only
        Show the code cells and their prompts too.

    Returns
    -------
    pathlib.Path
    """
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    nb.metadata.pop("widgets", None)  # would load the widget manager from a CDN
    title = page_title(nb, Path(notebook).stem)
    nb.metadata["title"] = title
    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=not code,
        exclude_input_prompt=not code,
        exclude_output_prompt=not code,
        embed_images=True,
        mathjax_url=OFFLINE_JS,
        require_js_url=OFFLINE_JS,
        mermaid_js_url=OFFLINE_JS,
    )
    body, _ = exporter.from_notebook_node(nb)
    style = f'<style id="bioxr-print">{print_css(title, size=page_size)}</style>\n'
    head_end = body.find("</head>")
    body = body[:head_end] + style + body[head_end:] if head_end >= 0 else style + body
    html_path = Path(html_path)
    html_path.write_text(body, encoding="utf-8")
    return html_path
