"""The ``bioxr`` command line (also ``python -m bioxr``).

::

    bioxr report verification -o out/                 # simulated experiment
    bioxr report verification --scores face.csv --missing -1 -o out/
    bioxr report verification --scores face.csv --missing -1 --pdf -o out/   # and a PDF (needs Chromium)
    bioxr report verification --scores trials.tsv --columns score=llr,subject=spk,reference_subject=enrol \\
        --score-kind similarity --layout list -o out/
    bioxr report identification --scores top20.csv --format candidates -o out/
    bioxr report --list                               # templates and parameters
    bioxr templates                                   # the same
    bioxr --version

Every value is checked before a kernel starts: a wrong one is a one-line
error and exit status 2. A failing cell is exit status 1.
"""

from __future__ import annotations

import argparse
import sys

from . import report as _report

#: options that set a template parameter of the same meaning (``--score-kind`` sets ``score_kind``)
PARAMETER_OPTIONS = {
    "format": "score file format (matrix, long, parquet, bob, npz, netcdf, zarr, candidates); default: detected",
    "columns": "what the columns hold, e.g. score=llr,subject=spk,reference_subject=enrol",
    "score_kind": "similarity (higher is more alike, the default) or distance",
    "missing": "a number in the file meaning 'not compared', e.g. -1",
    "failure": "a number in the file meaning a failed enrolment or acquisition",
    "failure_policy": "how failures count: exclude (default), nist or iso",
    "layout": "long files: auto (default), list (a comparison list) or cube (dense)",
}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block): ``bioxr report: error: ...``, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _print_templates(out=None) -> None:
    out = sys.stdout if out is None else out  # looked up at call time (tests capture it)
    templates = _report.list_templates()
    if not templates:
        print("no report templates found", file=out)
    for name, path in templates.items():
        print(f"{name}  ({path})", file=out)
        for param in _report.template_parameters(path):
            print(f"    {param.describe()}", file=out)
        print(file=out)
    print("Run one with: bioxr report NAME [--scores PATH] [-p NAME VALUE ...] -o DIR", file=out)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="bioxr", description="bioxr: biometric performance evaluation on xarray.")
    parser.add_argument("--version", action="version", version=f"bioxr {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    rep = sub.add_parser(
        "report",
        help="run a report template and render it to self-contained HTML",
        description="Execute a parameterised template notebook with papermill and write the executed "
        "notebook and one self-contained HTML page (and, with --pdf, a PDF) into DIR. Values are checked before "
        "anything runs.",
    )
    rep.add_argument("template", nargs="?", help="template name (see --list)")
    rep.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"), default=[],
                     help="set a template parameter (repeatable); the value is converted to its declared type")
    rep.add_argument("--scores", metavar="PATH", help="score file or Zarr folder to analyse (the 'scores' parameter)")
    for name, text in PARAMETER_OPTIONS.items():
        rep.add_argument(_flag(name), dest=name, metavar=name.split("_")[-1].upper(), help=text)
    rep.add_argument("-o", "--output", metavar="DIR", help="output folder: new, empty, or an earlier report with "
                     "--overwrite")
    rep.add_argument("--overwrite", action="store_true", help="replace the earlier report in DIR")
    rep.add_argument("--list", action="store_true", help="list templates and their parameters, then exit")
    rep.add_argument("--no-html", action="store_true", help="only write the executed notebook (and the PDF with "
                     "--pdf)")
    rep.add_argument("--pdf", action="store_true", help="also write NAME.pdf, the page printed on A4 by headless "
                     "Chromium ($BIOXR_CHROMIUM, or chromium, chromium-browser or google-chrome on PATH)")
    rep.add_argument("--timeout", type=float, default=600, metavar="S", help="seconds allowed per cell (600)")
    sub.add_parser("templates", help="list report templates and their parameters")
    return parser


def _error(err: _report.ReportError, flags: dict) -> str:
    """The message, naming the command-line option where one set the parameter."""
    if isinstance(err, _report.ParameterError) and err.name in flags:
        if err.problem == "is not declared":
            return f"{flags[err.name]}: {err}"
        return f"{flags[err.name]} {err.problem}"
    return str(err)


def main(argv=None) -> int:
    """Entry point of the ``bioxr`` console script; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "templates" or (args.command == "report" and args.list):
        _print_templates()
        return 0
    if args.command != "report":
        parser.print_help()
        return 2
    rep = "bioxr report"
    if not args.template:
        return _fail(rep, "give a template name (see `bioxr report --list`).", 2)
    if not args.output:
        return _fail(rep, "give an output folder with -o DIR.", 2)
    params, flags = {}, {}
    for name, value in args.parameter:
        if name in params:
            return _fail(rep, f"parameter {name!r} is given twice.", 2)
        params[name] = value
    for name in ("scores", *PARAMETER_OPTIONS):
        value = getattr(args, name)
        if value is None:
            continue
        if name in params:
            return _fail(rep, f"give {name} either with {_flag(name)} or with -p {name}, not both.", 2)
        params[name], flags[name] = value, _flag(name)
    try:
        files = _report.run_report(args.template, args.output, params, html=not args.no_html, pdf=args.pdf,
                                   timeout=args.timeout, overwrite=args.overwrite)
    except _report.ReportError as err:
        return _fail(rep, _error(err, flags), 2 if isinstance(err, _report.UsageError) else 1)
    print(f"executed notebook: {files.notebook}")
    if files.html is not None:
        print(f"HTML report:       {files.html}")
    if files.pdf is not None:
        print(f"PDF report:        {files.pdf}")
    if files.summary is not None:
        print(f"summary table:     {files.summary}")
    for path in files.results:
        print(f"result (netCDF):   {path}")
    return 0


def _fail(prog: str, message: str, status: int) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
