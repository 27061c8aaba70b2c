"""The ``bioxr`` command line (also ``python -m bioxr``).

::

    bioxr report verification -o out/                 # simulated experiment
    bioxr report verification --scores face.csv -p missing -1 -o out/
    bioxr report --list                               # templates and parameters
    bioxr templates                                   # the same
"""

from __future__ import annotations

import argparse
import sys

from . import report as _report


def _print_templates(out=sys.stdout) -> None:
    templates = _report.list_templates()
    if not templates:
        print("no report templates found", file=out)
    for name, path in templates.items():
        print(f"{name}  ({path})", file=out)
        for param in _report.template_parameters(path):
            print(f"    {param.describe()}", file=out)
        print(file=out)
    print("Run one with: bioxr report NAME [-p NAME VALUE ...] [--scores PATH] -o DIR", file=out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bioxr", description="bioxr: biometric performance evaluation on xarray.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    rep = sub.add_parser(
        "report",
        help="run a report template and render it to self-contained HTML",
        description="Execute a parameterised template notebook with papermill and write the executed "
        "notebook and one self-contained HTML page into DIR.",
    )
    rep.add_argument("template", nargs="?", help="template name (see --list)")
    rep.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"), default=[],
                     help="set a template parameter (repeatable); the value is converted to its declared type")
    rep.add_argument("--scores", metavar="PATH", help="score file to analyse (sets the 'scores' parameter)")
    rep.add_argument("-o", "--output", metavar="DIR", help="output folder (created if needed)")
    rep.add_argument("--list", action="store_true", help="list templates and their parameters, then exit")
    rep.add_argument("--no-html", action="store_true", help="only write the executed notebook")
    rep.add_argument("--timeout", type=float, default=600, metavar="S", help="seconds allowed per cell (600)")
    sub.add_parser("templates", help="list report templates and their parameters")
    return parser


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
    if not args.template:
        parser.error("report: give a template name (see `bioxr report --list`).")
    if not args.output:
        parser.error("report: give an output folder with -o DIR.")
    params = {}
    for name, value in args.parameter:
        if name in params:
            parser.error(f"report: parameter {name!r} is given twice.")
        params[name] = value
    if args.scores is not None and "scores" in params:
        parser.error("report: give the score file either with --scores or with -p scores, not both.")
    try:
        files = _report.run_report(args.template, args.output, params, scores=args.scores,
                                   html=not args.no_html, timeout=args.timeout)
    except _report.ReportError as err:
        print(f"bioxr report: error: {err}", file=sys.stderr)
        return 1
    print(f"executed notebook: {files.notebook}")
    if files.html is not None:
        print(f"HTML report:       {files.html}")
    for path in files.results:
        print(f"result (netCDF):   {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
