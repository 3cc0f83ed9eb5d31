"""`commscope runs`: list stored runs."""

from __future__ import annotations

import argparse
import time

from commscope.cli import common

HELP = "list the runs in the store"
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
    from rich.table import Table

    table = Table(title=f"runs in {args.store}")
    for col in ("id", "created", "kind", "label", "status", "mpi", "ranks", "points"):
        table.add_column(col)
    for r in runs:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_unix))
        table.add_row(
            str(r.id),
            created,
            r.kind,
            r.label or "",
            r.status,
            r.mpi or "",
            str(r.nranks),
            str(r.n_points),
        )
    common.console().print(table)
    return 0
