"""`commscope show`: the figures of one run."""

from __future__ import annotations

import argparse

from commscope.cli import common
from commscope.errors import UsageError

HELP = "show a run's latency (us) and bandwidth (MB/s) per size"
EXAMPLES = """examples:
  commscope show latest
  commscope show 3 --full        every table: per size, per collective point
  commscope show 3 --json
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope show`."""
    p.add_argument("run", nargs="?", default="latest", help="run id or 'latest' [default: latest]")
    p.add_argument(
        "--json",
        action="store_true",
        help="machine-readable: bytes, seconds (latency_s), bytes/s (bandwidth_Bps)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="every table (per size, per collective point, each flagged point); default:"
        " the key figures, verdicts and each warning once",
    )
    p.add_argument(
        "--confidence",
        type=float,
        choices=(0.90, 0.95, 0.99),
        help="confidence level for collectives [default: the run's]",
    )
    p.add_argument(
        "--trim",
        type=common.number(0, 0.49),
        default=0.25,
        help="share of valid collective times dropped at each end [default: 0.25]",
    )


def run(args: argparse.Namespace) -> int:
    """Print the key figures, verdicts and warnings; every table with --full."""
    # The analysis brings numpy and SciPy: imported when the command runs, not at start.
    from dataclasses import asdict

    from commscope import kinds
    from commscope.analysis import load as load_analysis
    from commscope.analysis import tcp_loss
    from commscope.cli import render
    from commscope.data.run_data import read_run
    from commscope.data.store import Store
    from commscope.kinds import show_json
    from commscope.simulate import netload

    if not 0 <= args.trim < 0.5:
        raise UsageError(f"--trim {args.trim}: give a share in [0, 0.5)")
    Store.check_ref(args.run)  # a bad reference is named before a missing store
    with common.open_store(args, write=False) as store:
        run = read_run(store, store.resolve_run(args.run))
    info = run.info
    view = kinds.View(args.confidence, args.trim)
    if args.json:
        header = {
            "run": info.id,
            "status": info.status,
            "kind": info.kind,
            "label": info.label,
            "mpi": info.mpi,
            "nranks": info.nranks,
            "message": info.message,
            "load": [asdict(h) for end in run.ends for h in load_analysis.hosts(end)],
            "load_warnings": load_analysis.warnings(run.ends),
            "tcp_loss": [asdict(ns) for end in run.ends for ns in tcp_loss.namespaces(end)],
            "tcp_loss_warnings": tcp_loss.warnings(run.ends),
            "tcp_congestion_control": tcp_loss.congestion_controls(run.ends),
            "tcp_limit_output": [
                {"bytes": b, "nodes": list(nodes)}
                for b, nodes in tcp_loss.socket_queue_limits(run.ends).items()
            ],
            "tcp_slow_start_after_idle": [
                {"value": v, "nodes": list(nodes)}
                for v, nodes in tcp_loss.idle_restarts(run.ends).items()
            ],
            "tcp_idle_restart_nodes": list(tcp_loss.idle_restart_nodes(run.ends)),
            "protocol_limits": run.protocol_limits.to_json() if run.protocol_limits else None,
            "netload": netload.stored_view(run.netload) if run.netload else None,
        }
        common.print_json(show_json.document(header, kinds.summaries(run, view)))
        return 0
    render.summary(common.console(), run, view, args.full)
    return 0
