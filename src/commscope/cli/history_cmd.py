"""``commscope history``: one figure over every stored run, or the change points in the runs."""

from __future__ import annotations

import argparse

from commscope.cli import common

NAME = "history"
HELP = (
    "a figure over every stored run (table or --json), e.g. p2p_latency_seconds; --changes:"
    " where the figures stepped to another level"
)
EXAMPLES = """examples:
  commscope history p2p_latency_seconds                      every pair and size
  commscope history 'p2p_latency_seconds{pair="inter-node",bytes="8"}'
  commscope history coll_time_seconds --last 30 --json
  commscope history --list                                   the figure names there are
  commscope history --list --json                            ... with units, as JSON
  commscope history --changes                                change points of every figure
  commscope history --changes 'p2p_bandwidth_bytes_per_second{pair="inter-node"}'
  commscope history --changes --last 60 --fdr 5% --json"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope history`."""
    p.add_argument("selector", nargs="?", metavar="SELECTOR", help='NAME or NAME{label="value"}')
    p.add_argument("--last", type=common.whole(1, 10**6), metavar="N", help="the newest N runs")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.add_argument(
        "--changes",
        action="store_true",
        help="the runs where each figure (of SELECTOR, or every one) stepped to another level,"
        " per request and hosts: a permutation test of the best split, Benjamini-Hochberg"
        " across figures; a changed environment starts a new part",
    )
    p.add_argument(
        "--fdr",
        default="1%",
        metavar="PCT",
        help="with --changes: the false discovery rate held across figures [default: %(default)s]",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    """Print the selected figures of every run, oldest first, or their change points."""
    from commscope import kinds
    from commscope.check import history

    specs = kinds.figure_specs()
    if args.list:
        if args.json:
            common.print_json(
                {
                    "figures": [
                        {"name": s.name, "unit": s.unit, "better": s.better, "help": s.help}
                        for s in specs.values()
                    ]
                }
            )
            return 0
        for spec in specs.values():
            print(f"{spec.name}  ({spec.better} is better) {spec.help}")
        return 0
    if args.changes:
        from commscope.cli import history_changes

        return history_changes.run(args, specs)
    common.require(
        args.selector is not None,
        "give a figure selector, e.g. 'commscope history p2p_latency_seconds'"
        " ('commscope history --list' names them), or --changes",
    )
    from commscope.jobs import figures

    selector = history.parse_selector(args.selector, specs)
    stored = figures.read(args.store, args.last, [selector.name])
    found = history.points(stored.values, stored.runs, selector)
    if args.json:
        common.print_json({"selector": args.selector, "points": [p.to_json() for p in found]})
        return 0
    if not found:
        # the selector as typed, but a control character in it shown escaped, not run
        print(f"no stored run has {common.terminal_text(args.selector)}")
        return 0
    from rich.table import Table

    from commscope.check.verdict import shown

    table = Table(title=common.terminal_text(f"{selector.name} over the stored runs"))
    for col in ("run", "date", "label", "figure", "value", "samples"):
        table.add_column(col, justify="right" if col in ("run", "value", "samples") else "left")
    for p in found:
        table.add_row(
            str(p.run_id),
            common.date_text(p.created_unix),
            common.terminal_text(p.label or ""),
            common.terminal_text(p.key),
            shown(p.center, p.unit),
            str(p.n_samples),
        )
    common.console().print(table)
    return 0
