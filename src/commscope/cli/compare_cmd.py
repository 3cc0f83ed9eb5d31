"""`commscope compare`: several runs size by size, with a significance test."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from commscope.cli import common
from commscope.data.store import RunInfo

if TYPE_CHECKING:
    from rich.text import Text

    from commscope.analysis.compare import CompareRow

HELP = "compare runs size by size: medians, relative difference, Mann-Whitney U p-value"
EXAMPLES = """examples:
  commscope compare 3 4                              terminal tables, run 3 is the reference
  commscope compare 3 4 5 --labels mtu1500,mtu3000,mtu9000 -o mtu.html
  commscope compare 3 latest --json > diff.json       bytes, latency_s, bandwidth_Bps, p_value
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope compare`."""
    p.add_argument(
        "runs", nargs="+", metavar="RUN", help="run ids or 'latest'; the first is the reference"
    )
    p.add_argument(
        "--labels",
        help="comma-separated names for the runs, in order"
        " [default: each run's label, else 'run N']",
    )
    p.add_argument("-o", "--output", help="also write an HTML page with overlay figures")
    p.add_argument(
        "--json",
        action="store_true",
        help="machine-readable: bytes, median_s, latency_s, bandwidth_Bps, p_value",
    )


def _labels(args: argparse.Namespace, infos: list[RunInfo]) -> list[str]:
    if args.labels is None:
        return [i.label or f"run {i.id}" for i in infos]
    labels = [x.strip() for x in args.labels.split(",")]
    common.require(
        len(labels) == len(infos) and all(labels),
        f"--labels has {len(labels)} names for {len(infos)} runs; give one"
        " non-empty name per run, comma-separated",
    )
    return labels


def run(args: argparse.Namespace) -> int:
    """Compare, then print tables or JSON, and write the HTML page if asked."""
    # Imported here: scipy and matplotlib would slow the start of every other subcommand.
    from commscope.analysis import recv_buffers
    from commscope.analysis.compare import ALPHA, compare_runs

    common.require(
        len(args.runs) >= 2, "compare needs at least two runs, e.g. 'commscope compare 3 4'"
    )
    if args.output:
        from commscope import safe_write

        safe_write.check_target(args.output, "-o")  # before the comparison is computed
    with common.open_store(args, write=False) as store:
        ids = [store.resolve_run(r) for r in args.runs]
        infos = [store.get_run(i) for i in ids]
        labels = _labels(args, infos)
        rows = compare_runs([(i, [*store.points(i), *store.colls(i)]) for i in ids])
        note = recv_buffers.mixed_note(
            [
                (label, info.header, store.points(info.id))
                for info, label in zip(infos, labels, strict=True)
            ]
        )
        written = None
        if args.output:
            from commscope.report import compare_html  # matplotlib: only when asked

            written = compare_html.write_compare(store, ids, labels, args.output, "-o")
    if args.json:
        common.print_json(
            {
                "alpha": ALPHA,
                "runs": [
                    {"id": i.id, "label": label} for i, label in zip(infos, labels, strict=True)
                ],
                "rows": [r.to_json() for r in rows],
                "recv_buffers_note": note or None,
            }
        )
    else:
        _print_tables(rows, labels, ALPHA)
        if note:
            from rich.text import Text

            common.console().print(Text(common.terminal_text(note), style="yellow"))
    if written is not None and not args.json:
        print(f"comparison: {common.terminal_text(os.fspath(written))}")
    return 0


def _cell(row: CompareRow, i: int, rate: bool) -> str:
    v = row.values[i]
    if v is None:
        return ""
    if rate:
        return "" if v.bandwidth_Bps is None else f"{v.bandwidth_Bps / 1e6:.1f}"
    return f"{v.median_s * 1e6:.3f}"


def _print_tables(rows: list[CompareRow], labels: list[str], alpha: float) -> None:
    from rich.table import Table
    from rich.text import Text

    from commscope.analysis.compare import grouped, shows_rate

    out = common.console()
    if not rows:
        out.print("nothing to compare: the runs hold no measurements")
        return
    for (kind, op, pair), members in grouped(rows):
        rate = shows_rate(kind, op)
        unit = "MB/s" if rate else "us"
        # Text, not markup: labels come from users and may hold square brackets or ESC.
        table = Table(
            title=Text(
                common.terminal_text(
                    f"{op} {pair} ({unit}; delta = change of the median time vs {labels[0]},"
                    f" positive = slower; * = p < {alpha}, Mann-Whitney U)"
                )
            )
        )
        table.add_column("bytes", justify="right")
        for k, label in enumerate(labels):
            table.add_column(Text(common.terminal_text(label)), justify="right")
            if k:
                table.add_column("delta", justify="right")
                table.add_column("p", justify="right")
        for r in members:
            cells: list[str | Text] = [str(r.bytes)]
            for k in range(len(labels)):
                cells.append(_cell(r, k, rate))
                if k:
                    cells += _difference_cells(r, k)
            table.add_row(*cells)
        out.print(table)


def _difference_cells(row: CompareRow, k: int) -> list[str | Text]:
    from rich.text import Text

    d = row.differences[k - 1]
    if d is None:
        return ["", ""]
    style = "bold red" if d.significant else ""
    mark = "*" if d.significant else ""
    p = "" if d.p_value is None else f"{d.p_value:.2g}"
    return [Text(f"{d.relative_difference * 100:+.1f} %{mark}", style=style), Text(p, style=style)]
