"""`commscope runs`: list stored runs."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from commscope.cli import common

if TYPE_CHECKING:
    from rich.console import Console

HELP = "list the runs in the store"
COLUMNS = ("id", "created", "kind", "label", "status", "mpi", "ranks", "points")
EXAMPLES = """examples:
  commscope runs
  commscope runs --json | jq '.[] | select(.status == "incomplete") | .id'
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope runs`."""
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Print one line per run, newest last."""
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
    title = f"runs in {args.store}"
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
    return 0


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
