"""What `run hpl`, `simulate app` and `simulate hpl` share: whole MPI programs, a run each.

The --matrix-order option (HPL's N) and the table of the programs' stored runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from commscope.cli import common


def add_matrix_order(group: Any, default: int) -> None:
    """Declare --matrix-order (HPL's N), as `run hpl` and `simulate hpl` take it."""
    common.option(
        group,
        "--matrix-order",
        dest="n",
        metavar="N",
        type=common.whole(1, 1_000_000),
        default=default,
        help="matrix order (HPL's N)",
    )


def show_runs(
    args: argparse.Namespace,
    rows: list[dict[str, Any]],
    columns: tuple[str, ...],
    how: str = "simulated",
) -> None:
    """The runs as a table (``how``: simulated or measured), or as JSON with --json."""
    if args.json:
        common.print_json({"runs": [{k: v for k, v in r.items() if k != "output"} for r in rows]})
        return
    from rich.table import Table

    table = Table(title=f"{how} runs")
    traced = any("netload" in r for r in rows)
    names = ["run", "label", *columns]
    if traced:
        names += ["switch MB", "mean message (B)", "switch Mbit/s"]
    for name in names:
        table.add_column(name, justify="right")
    for r in rows:
        cells = [str(r["run"]), r.get("label") or "", *(_cell(r[c]) for c in columns)]
        if traced:
            sw = r.get("netload", {}).get("switch", {})
            cells += [
                _cell(sw.get("bytes", 0) / 1e6),
                _cell(sw.get("mean_message_bytes")),
                _cell(sw.get("mbit_per_s")),
            ]
        table.add_row(*cells)
    common.console().print(table)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "PASSED" if value else "FAILED"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
