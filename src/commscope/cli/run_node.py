"""``commscope run node``: a Linpack sweep on 1..all cores.

The node validation of Rechistov et al. 2012 (cluster simulation).

No MPI: one process pinned to the cores asked for, OpenBLAS held to as many threads. The run
(kind "node") stores its options and the CPU facts behind P_peak in its request, and one
linpack record per (cores, N); ``commscope show`` and ``commscope report`` derive P_max,
N_max, N_1/2 and the efficiency from them.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from commscope import limits, strict
from commscope.cli import common
from commscope.errors import UsageError
from commscope.jobs import programs
from commscope.kinds import run_commands
from commscope.measure.compute import hpcc, node, sizes

KIND = "node"  # the kind these runs are stored as (kinds/node.py shows them)


def add_options(p: argparse.ArgumentParser) -> None:
    """Declare the options only `commscope run node` uses.

    It also reads --label, --resume, --report, --json and --quiet.
    """
    g = p.add_argument_group("what to measure (Linpack, as in Rechistov et al. 2012)")
    common.option(
        g,
        "--matrix-order",
        dest="sizes",
        metavar="N,...",
        help="matrix orders (HPL's N), e.g. 1000,4000 [default: up to --max-memory]",
    )
    common.option(
        g,
        "--cores",
        default=node.DEFAULT_CORES,
        help="core counts to sweep, e.g. 1,2,all (all: every physical core usable)",
    )
    common.option(
        g,
        "--max-memory",
        default=sizes.DEFAULT_MEMORY,
        help="memory the largest N may use: a share of MemAvailable or a size (8GiB)",
    )
    common.option(
        g,
        "--time-budget",
        type=common.number(0, limits.MAX_COMMAND_S),
        default=node.DEFAULT_TIME_BUDGET_S,
        help="seconds for the whole sweep, shared by the core counts; it stops before"
        " an N predicted to overrun it (0: no limit)",
    )
    common.option(
        g,
        "--min-samples",
        dest="solves",
        metavar="N",
        type=common.whole(1, 10**6),
        default=node.DEFAULT_REPEATS,
        help=f"timed solves per N at least (small N repeat until they last {node.MIN_POINT_S} s)",
    )
    common.option(
        g,
        "--peak-flops-per-cycle",
        type=common.number(0, 1e4, above=True),
        help="DP flops per cycle per core for P_peak, instead of the CPU flags' value",
    )
    common.option(
        g,
        "--peak-ghz",
        type=common.number(0, 1e3, above=True),
        help="clock for P_peak in GHz, instead of the higher of the nominal clock"
        " (cpufreq or /proc/cpuinfo) and the busy clock measured on the cores used",
    )
    common.option(
        g,
        "--grid",
        dest="hpl_grid",
        metavar="PxQ",
        help="run HPL with Debian's hpcc on P x Q Open MPI ranks instead (--matrix-order"
        f" then defaults to {','.join(map(str, hpcc.DEFAULT_SIZES))})",
    )
    common.option(
        g,
        "--nb",
        dest="hpl_nb",
        metavar="NB",
        type=common.whole(1, 1 << 16),
        default=hpcc.DEFAULT_NB,
        help="with --grid: HPL's block size NB",
    )


def wanted(args: argparse.Namespace) -> bool:
    """Whether `commscope run` should hand this invocation to the node benchmark."""
    if run_commands.measured_by(getattr(args, "benchmark", None)) == run_commands.LINPACK:
        return True
    if not getattr(args, "resume", None):
        return False
    with common.open_store(args) as store:
        kind = store.get_run(store.resolve_run(args.resume)).kind
        return run_commands.measured_by(kind) == run_commands.LINPACK


MAX_ORDER = 1 << 20  # a matrix order N: 8 TiB for one N x N matrix of doubles


def _sizes(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [strict.whole(item, 1, MAX_ORDER) for item in text.split(",")]
    except strict.NumberError as err:
        raise UsageError(
            f"--matrix-order {strict.shown(text)}: give matrix orders N, e.g. 100,1000,4000 ({err})"
        ) from None


def _request(args: argparse.Namespace) -> dict[str, Any]:
    common.require(args.time_budget >= 0, f"--time-budget {args.time_budget}: must be >= 0")
    if args.hpl_grid:
        return hpcc.build_request(
            args.hpl_grid,
            _sizes(args.sizes),
            args.hpl_nb,
            args.timeout,
            args.peak_flops_per_cycle,
            args.peak_ghz,
        )
    return node.build_request(
        cores=args.cores,
        sizes=_sizes(args.sizes),
        max_memory=args.max_memory,
        time_budget_s=args.time_budget,
        repeats=args.solves,
        peak_flops_per_cycle=args.peak_flops_per_cycle,
        peak_ghz=args.peak_ghz,
    )


def run(args: argparse.Namespace) -> int:
    """Measure (or resume) a node run, print its figures, write the report when asked."""
    # numpy and SciPy come with the analysis: imported when the command runs, not at start.
    from commscope.analysis import node as node_analysis
    from commscope.cli import render
    from commscope.kinds import node as node_kind

    request = None if args.resume else _request(args)  # bad input fails before the store
    quiet = args.quiet or args.json
    note = None if quiet else common.console(stderr=True).print
    done = programs.node_run(args.store, KIND, request, args.resume, args.label, args.report, note)
    request, run_id, outcome = done.request, done.run_id, done.measured
    with common.open_store(args, write=False) as store:
        info = store.get_run(run_id)
        points = store.linpacks(run_id)
    summary = node_analysis.summarize(request, points)
    report = os.fspath(done.report) if done.report else None
    if args.json:
        common.print_json(
            {
                "run": run_id,
                "status": info.status,
                "new_points": outcome.new_points,
                "points": outcome.total_points,
                "store": os.path.abspath(args.store),
                "report": report,
                "stops": {str(c): s for c, s in outcome.stops.items()},
                "node": summary.to_json(),
            }
        )
        return 0
    out = common.console()
    out.print(render.run_title(info))
    for item in node_kind.figures(summary):
        out.print(item)
    for cores, why in outcome.stops.items():
        out.print(f"{cores} core{'s' if cores != 1 else ''}: sweep ended: {why}")
    out.print(f"stored in {args.store} as run {run_id}; details: commscope show {run_id}")
    if report:
        out.print(f"report: {report}")
    return 0
