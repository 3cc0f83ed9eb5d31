"""`commscope report`: one self-contained HTML file for one or more runs."""

from __future__ import annotations

import argparse

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
    from commscope import (
        kinds,  # Matplotlib, Jinja2: only when a report is written
        safe_write,
    )
    from commscope.data.run_data import read_run

    safe_write.check_target(args.output, "-o")  # before the store is opened
    with common.open_store(args, write=False) as store:
        runs = [read_run(store, store.resolve_run(r)) for r in args.runs]
    written = kinds.write_report(runs, args.output, "-o")
    print(f"report: {common.terminal_text(str(written))}")
    return 0
