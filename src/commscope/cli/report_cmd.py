"""`commscope report`: one self-contained HTML file for one or more runs."""

from __future__ import annotations

import argparse
import os

from commscope.cli import common

HELP = "write a self-contained HTML report of stored runs"
EXAMPLES = """examples:
  commscope report latest -o report.html
  commscope report 3 4 -o compare.html
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope report`."""
    p.add_argument("runs", nargs="*", default=["latest"], help="run ids or 'latest'")
    p.add_argument("-o", "--output", default="commscope-report.html", help="[default: %(default)s]")


def run(args: argparse.Namespace) -> int:
    """Write the report and say where."""
    from commscope.report import html  # Matplotlib, Jinja2: only when a report is written

    with common.open_store(args) as store:
        ids = [store.resolve_run(r) for r in args.runs]
        html.write_report(store, ids, args.output)
    print(f"report: {os.path.abspath(args.output)}")
    return 0
