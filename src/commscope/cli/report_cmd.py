"""`commscope report`: one self-contained HTML file for one or more runs."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from commscope.cli import common

HELP = "write a self-contained HTML report of stored runs"
EXAMPLES = """examples:
  commscope report latest -o report.html
  commscope report 3 4 -o compare.html
  commscope report latest --trend nightly -o trend.html   the baseline's figures over the runs
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope report`."""
    p.add_argument("runs", nargs="*", default=["latest"], help="run ids or 'latest'")
    p.add_argument(
        "-o",
        "--output",
        default="commscope-report.html",
        help="the HTML file to write, '-' for standard output [default: %(default)s]",
    )
    p.add_argument(
        "--trend",
        metavar="BASELINE",
        help="add a trend section: the baseline's key figures over the stored runs of its kind",
    )
    p.add_argument(
        "--last",
        type=common.whole(1, 100000),
        default=60,
        metavar="N",
        help="the trend's newest N runs [default: %(default)s]",
    )


def run(args: argparse.Namespace) -> int:
    """Write the report and say where."""
    from commscope import (
        kinds,  # Matplotlib, Jinja2: only when a report is written
        safe_write,
    )
    from commscope.data.run_data import read_run
    from commscope.data.store import Store

    to_stdout = args.output == "-"
    if not to_stdout:
        safe_write.check_target(args.output, "-o")  # before the store is opened
    for ref in args.runs:  # a bad reference is named before a missing store
        Store.check_ref(ref)
    with common.open_store(args, write=False) as store:
        runs = [read_run(store, store.resolve_run(r)) for r in args.runs]
        trend = _trend(store, args.trend, args.last) if args.trend else None
    if to_stdout:
        sys.stdout.write(kinds.render_report(runs, trend=trend))
        return 0
    written = kinds.write_report(runs, args.output, "-o", trend)
    print(f"report: {common.terminal_text(str(written))}")
    return 0


def _trend(store: Any, name: str, last: int) -> dict[str, Any]:
    """The trend entry of baseline ``name`` over the newest ``last`` runs of its kind."""
    from commscope.check import history
    from commscope.check.baseline import Baseline
    from commscope.check.verdict import RECORD_KIND
    from commscope.data.run_data import read_run
    from commscope.jobs.history import trend_changes
    from commscope.report import trend_section

    baseline = Baseline.from_json(store.baseline(name))
    infos = [i for i in store.list_runs() if i.kind == baseline.kind][-last:]
    runs = [read_run(store, i.id) for i in infos]
    verdicts = {i.id: store.run_data(i.id, RECORD_KIND) or {} for i in infos}
    changes = trend_changes(store, baseline, infos, history.trend_keys(baseline, verdicts))
    return trend_section.build(name, history.trend(baseline, runs, verdicts, changes=changes))
