"""`commscope show`: the figures of one run."""

from __future__ import annotations

import argparse

from commscope.analysis import p2p
from commscope.cli import common, render

HELP = "show a run's latency (us) and bandwidth (MB/s) per size"
EXAMPLES = """examples:
  commscope show latest
  commscope show 3 --json
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope show`."""
    p.add_argument("run", nargs="?", default="latest", help="run id or 'latest' [default: latest]")
    p.add_argument("--json", action="store_true",
                   help="machine-readable: bytes, seconds (latency_s), bytes/s (bandwidth_Bps)")


def run(args: argparse.Namespace) -> int:
    """Print key figures and per-size tables."""
    with common.open_store(args) as store:
        run_id = store.resolve_run(args.run)
        info = store.get_run(run_id)
        points = store.points(run_id)
    if args.json:
        common.print_json({
            "run": run_id, "status": info.status, "kind": info.kind, "label": info.label,
            "mpi": info.mpi, "nranks": info.nranks, "message": info.message,
            "key_figures": [k.to_json() for k in p2p.key_figures(points)],
            "sizes": [r.to_json() for r in p2p.size_rows(points)],
        })
        return 0
    out = common.console()
    out.print(render.run_title(info))
    if info.message:
        out.print(info.message)
    render.key_figures(out, points)
    render.size_table(out, points)
    return 0
