"""`commscope show`: the figures of one run."""

from __future__ import annotations

import argparse

from commscope.cli import common
from commscope.errors import UsageError

HELP = "show a run's latency (us) and bandwidth (MB/s) per size"
EXAMPLES = """examples:
  commscope show latest
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
    """Print key figures and per-size tables."""
    # The analysis brings numpy and SciPy: imported when the command runs, not at start.
    from dataclasses import asdict

    from commscope.analysis import coll as coll_analysis
    from commscope.analysis import load as load_analysis
    from commscope.analysis import loggp as loggp_analysis
    from commscope.analysis import node as node_analysis
    from commscope.analysis import p2p
    from commscope.analysis import recv_buffers as rbuf
    from commscope.analysis.contention import tables as contention_tables
    from commscope.cli import render, tcp_render

    with common.open_store(args, write=False) as store:
        run_id = store.resolve_run(args.run)
        info = store.get_run(run_id)
        points = store.points(run_id)
        colls = store.colls(run_id)
        contentions = store.contentions(run_id)
        linpacks = store.linpacks(run_id)
        loggps = store.loggps(run_id)
        tcp = tcp_render.TcpRun(info, points, store.streams(run_id)) if info.kind == "tcp" else None
        ends = [seg.end for seg in store.segments(run_id)]
    level = args.confidence or info.request.get("confidence", 0.95)
    min_valid = coll_analysis.min_valid_of((info.header or {}).get("options"))
    if not 0 <= args.trim < 0.5:
        raise UsageError(f"--trim {args.trim}: give a share in [0, 0.5)")
    if args.json:
        common.print_json(
            {
                "run": run_id,
                "status": info.status,
                "kind": info.kind,
                "label": info.label,
                "mpi": info.mpi,
                "nranks": info.nranks,
                "message": info.message,
                "load": [asdict(h) for end in ends for h in load_analysis.hosts(end)],
                "load_warnings": load_analysis.warnings(ends),
                "key_figures": [k.to_json() for k in p2p.key_figures(points)],
                "sizes": [r.to_json() for r in p2p.size_rows(points)],
                "recv_buffers": list(rbuf.run_policies(info.header, points)),
                "recv_buffers_recorded": rbuf.recorded(info.header),
                "recv_buffer_contrasts": [c.to_json() for c in rbuf.contrasts(points)],
                "interrupted_samples": sum(len(p.interrupted) for p in points),
                "interrupted_points": [x.to_json() for x in p2p.interrupted(points)],
                "collectives": [
                    c.to_json() for c in coll_analysis.summaries(colls, level, args.trim, min_valid)
                ],
                "contention": [t.to_json() for t in contention_tables(contentions).values()],
                "loggp": [f.to_json() for f in loggp_analysis.fits(loggps)],
                "node": node_analysis.summarize(info.request, linpacks).to_json()
                if linpacks
                else None,
                "tcp": tcp_render.run_json(tcp) if tcp else None,
            }
        )
        return 0
    out = common.console()
    out.print(render.run_title(info))
    if info.message:
        out.print(info.message)
    render.load_warnings(out, ends)
    if tcp:
        tcp_render.print_run(out, tcp)
    if points:
        render.key_figures(out, points)
        render.size_table(out, points)
        render.recv_buffers(out, info.header, points)
        render.interrupted(out, points)
    if colls:
        render.coll_table(out, colls, level, min_valid, args.trim)
    if contentions:
        render.contention_tables(out, contentions)
    if loggps:
        render.loggp_table(out, loggps)
    if linpacks:
        summary = node_analysis.summarize(info.request, linpacks)
        render.node_figures(out, summary)
        render.node_rows(out, summary)
    return 0
