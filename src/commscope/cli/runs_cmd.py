"""`commscope runs`: list stored runs; `commscope runs prune`: remove old ones."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from commscope.cli import common

if TYPE_CHECKING:
    from rich.console import Console

    from commscope.data.store import RunInfo
    from commscope.jobs.prune import PruneOutcome

HELP = "list the runs in the store; 'runs prune' removes old ones"
COLUMNS = ("id", "created", "kind", "label", "status", "mpi", "ranks", "points")
EXAMPLES = """examples:
  commscope runs
  commscope runs --json | jq '.[] | select(.status == "incomplete") | .id'
  commscope runs prune --older-than 90 --keep 30 --dry-run   what would go
  commscope runs prune --older-than 90 --keep 30 --vacuum    remove it, shrink the file
"""
PRUNE_HELP = (
    "Remove old runs, with every point, segment and data of theirs, in one transaction. A"
    " run goes when every rule given says so: created more than --older-than DAYS ago, and"
    " not among the --keep N newest runs of its kind and label (the newest nightly checks"
    " and the newest matrix run both stay). A run a baseline holds never goes (delete the"
    " baseline first), nor a run still running. The file keeps its size until --vacuum."
)
PRUNE_EXAMPLES = """examples:
  commscope runs prune --older-than 90 --dry-run     list what would go
  commscope runs prune --older-than 90 --keep 30     older than 90 days, past the newest 30
  commscope runs prune --keep 100 --vacuum --json    then shrink the file; JSON out
"""
MAX_DAYS = 36500.0  # a century


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope runs` and its `prune` action."""
    p.add_argument("--json", action="store_true", help="machine-readable output")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    prune = actions.add_parser(
        "prune",
        help="remove old runs (by age, by count), never one a baseline holds",
        description=PRUNE_HELP,
        epilog=PRUNE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prune.add_argument(
        "--older-than",
        type=common.number(0.0, MAX_DAYS, above=True),
        metavar="DAYS",
        help="only runs created more than DAYS days ago (fractions allowed)",
    )
    prune.add_argument(
        "--keep",
        type=common.positive_int,
        metavar="N",
        help="keep the N newest runs of each kind and label",
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    prune.add_argument(
        "--vacuum",
        action="store_true",
        help="afterwards rewrite the file to give the space back (takes as long as the"
        " store is large, and as much free space again)",
    )
    prune.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Print one line per run, newest last; or prune."""
    if args.action == "prune":
        return _prune(args)
    with common.open_store(args, write=False) as store:
        runs = store.list_runs()
    if args.json:
        common.print_json(
            [
                {
                    "id": r.id,
                    "created_unix": r.created_unix,
                    "kind": r.kind,
                    "label": r.label,
                    "status": r.status,
                    "mpi": r.mpi,
                    "nranks": r.nranks,
                    "points": r.n_points,
                    "message": r.message,
                }
                for r in runs
            ]
        )
        return 0
    _table(f"runs in {args.store}", runs)
    return 0


def _table(title: str, runs: Sequence[RunInfo]) -> None:
    rows = [
        (
            str(r.id),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_unix)),
            r.kind,
            r.label or "",
            r.status,
            r.mpi or "",
            str(r.nranks),
            str(r.n_points),
        )
        for r in runs
    ]
    out = common.console()
    if not draw_fitting(out, title, rows):
        from rich.table import Table

        table = Table(title=title)
        for col in COLUMNS:
            table.add_column(col)
        for row in rows:
            table.add_row(*row)
        out.print(table)


def _prune(args: argparse.Namespace) -> int:
    from commscope.jobs.prune import PruneJob, prune

    job = PruneJob(
        store=args.store,
        older_than_days=args.older_than,
        keep=args.keep,
        dry_run=args.dry_run,
        vacuum=args.vacuum,
    )
    outcome = prune(job)
    if args.json:
        common.print_json(_prune_json(outcome))
        return 0
    out = common.console()
    verb = "would remove" if outcome.dry_run else "removed"
    if outcome.pruned and outcome.dry_run:
        _table(f"runs that would go from {args.store}", outcome.pruned)
    ids = " ".join(str(r.id) for r in outcome.pruned)
    out.print(
        f"{verb} {len(outcome.pruned)} runs ({outcome.points} points)" + (f": {ids}" if ids else "")
    )
    for run, names in outcome.held:
        out.print(f"kept run {run.id}: baseline {', '.join(names)} holds it")
    for run in outcome.running:
        out.print(f"kept run {run.id}: it is still running")
    if outcome.vacuumed:
        from commscope.units import size_text

        out.print(f"vacuumed: {size_text(outcome.size_before)} -> {size_text(outcome.size_after)}")
    elif outcome.pruned and not outcome.dry_run:
        out.print("the file keeps its size until 'commscope runs prune --vacuum'")
    return 0


def _prune_json(outcome: PruneOutcome) -> dict[str, Any]:
    return {
        "dry_run": outcome.dry_run,
        "pruned": [
            {
                "id": r.id,
                "created_unix": r.created_unix,
                "kind": r.kind,
                "label": r.label,
                "status": r.status,
                "points": r.n_points,
            }
            for r in outcome.pruned
        ],
        "points": outcome.points,
        "kept_by_baselines": [{"id": r.id, "baselines": list(n)} for r, n in outcome.held],
        "kept_running": [r.id for r in outcome.running],
        "vacuumed": outcome.vacuumed,
        "size_before_bytes": outcome.size_before,
        "size_after_bytes": outcome.size_after,
    }


def draw_fitting(out: Console, title: str, rows: Sequence[Sequence[str]]) -> bool:
    """Print the listing as rich draws a table that fits; False when it does not fit.

    Rich measures and renders every cell, about a millisecond a row: a second for a store of
    a thousand runs. The cells here are short, so a table that fits the console is drawn
    directly in rich's box (the title in its style, the headers in theirs); one that does not
    fit is left to rich, which wraps its cells.
    """
    from rich.cells import cell_len
    from rich.text import Text

    cells = [[common.terminal_text(cell) for cell in row] for row in [COLUMNS, *rows]]
    widths = [max(cell_len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    width = sum(widths) + 3 * len(widths) + 1
    name = common.terminal_text(title)
    if width > out.width or cell_len(name) > width:  # rich wraps what does not fit
        return False

    def line(left: str, fill: str, cross: str, right: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + right

    def row(values: list[str]) -> str:
        padded = (v + " " * (w - cell_len(v)) for v, w in zip(values, widths, strict=True))
        return "│ " + " │ ".join(padded) + " │"

    space = width - cell_len(name)
    out.print(Text(" " * (space // 2) + name + " " * (space - space // 2), style="table.title"))
    out.print(line("┏", "━", "┳", "┓"))
    header = Text("┃ ")
    for i, (value, w) in enumerate(zip(cells[0], widths, strict=True)):
        header.append(value, style="table.header")
        header.append(" " * (w - cell_len(value)) + (" ┃ " if i < len(widths) - 1 else " ┃"))
    out.print(header)
    out.print(line("┡", "━", "╇", "┩"))
    body = [row(values) for values in cells[1:]]
    out.file.write("".join(f"{text}\n" for text in body))  # printed as they are, no markup
    out.print(line("└", "─", "┴", "┘"))
    return True
