"""`commscope run`: measure this machine (or an allocation) and store the results."""

from __future__ import annotations

import argparse
import os
from typing import Any

from commscope import mpi as mpi_mod
from commscope import runner
from commscope.cli import common, render
from commscope.errors import UsageError
from commscope.sizes import netpipe_schedule, parse_size, parse_size_list

HELP = "measure communication performance and store it (default: characterise this machine)"
EXAMPLES = """examples:
  commscope run                          all benchmarks with embedded defaults, then a report
  commscope run p2p --mpi mpich          point-to-point with MPICH
  commscope run p2p --sizes 0,8,1K,1MiB --ops pingpong
  commscope run p2p --max-size 64MiB --timer tsc --label jumbo-mtu
  commscope run --resume latest          measure only what a failed run is missing
"""
BENCHMARKS = ("all", "p2p")
DEFAULT_REPORT = "commscope-report.html"


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope run`."""
    p.add_argument("benchmark", nargs="?", default="all", choices=BENCHMARKS,
                   help="what to measure; 'all' also writes an HTML report [default: all]")
    common.option(p, "--mpi", env="COMMSCOPE_MPI",
                  help="openmpi, mpich or an MPI install prefix (default: mpiexec on PATH)")
    common.option(p, "--launcher", default="auto", choices=("auto", "mpirun", "mpiexec", "srun"),
                  help="how to start ranks")
    common.option(p, "--np", type=common.positive_int, default=runner.default_ranks(),
                  help="number of ranks")
    common.option(p, "--ops", default="pingpong,bw,bibw", help="point-to-point operations")
    common.option(p, "--sizes", help="explicit sizes, e.g. 0,8,1K,1MiB (overrides --max-size)")
    common.option(p, "--max-size", default="4MiB",
                  help="largest size of the NetPIPE schedule (regular steps with +-perturbation)")
    common.option(p, "--perturbation", type=int, default=3,
                  help="bytes added and removed around each schedule size (0: none)")
    common.option(p, "--pairs", default="auto",
                  help="auto, or a list of intra-socket,inter-socket,intra-node,inter-node")
    common.option(p, "--timer", env="COMMSCOPE_TIMER", default="monotonic_raw",
                  choices=("gettimeofday", "mpi_wtime", "monotonic_raw", "tsc"), help="clock")
    common.option(p, "--target-rse", type=common.positive_float, default=0.01,
                  help="stop a point when its relative standard error reaches this")
    common.option(p, "--point-budget", type=common.positive_float, default=0.25,
                  help="seconds one point may take at most")
    common.option(p, "--min-samples", type=int, default=10, help="samples before the RSE rule")
    common.option(p, "--max-samples", type=int, default=1000, help="samples per point at most")
    common.option(p, "--window", type=common.positive_int, default=64,
                  help="messages in flight for bw and bibw")
    common.option(p, "--warmup", type=int, default=10, help="untimed iterations per point")
    common.option(p, "--timeout", type=common.positive_float, default=3600.0,
                  help="seconds before the whole job is killed")
    common.option(p, "--label", help="a name for this run, shown in reports and comparisons")
    common.option(p, "--resume", metavar="RUN",
                  help="re-launch a stored incomplete run and measure only its missing points")
    common.option(p, "--report", help=f"write an HTML report here ('all' default: {DEFAULT_REPORT})")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")


def _sizes(args: argparse.Namespace) -> list[int]:
    if args.sizes:
        return parse_size_list(args.sizes)
    common.require(args.perturbation >= 0, f"--perturbation {args.perturbation}: must be >= 0")
    return netpipe_schedule(parse_size(args.max_size), args.perturbation)


def _request(args: argparse.Namespace, benchmark: str) -> dict[str, Any]:
    common.require(args.min_samples >= 2, "--min-samples: need at least 2")
    common.require(args.max_samples >= args.min_samples, "--max-samples must be >= --min-samples")
    common.require(args.warmup >= 0, "--warmup: must be >= 0")
    return {
        "benchmark": benchmark,
        "mpi": args.mpi,
        "np": args.np,
        "launcher": args.launcher,
        "timeout_s": args.timeout,
        "engine": {
            "ops": args.ops, "sizes": _sizes(args), "pairs": args.pairs, "timer": args.timer,
            "window": args.window, "warmup": args.warmup, "min_samples": args.min_samples,
            "max_samples": args.max_samples, "target_rse": args.target_rse,
            "point_budget_s": args.point_budget,
        },
    }


def run(args: argparse.Namespace) -> int:
    """Run the benchmark(s), print the key figures, write the report when asked."""
    request = None if args.resume else _request(args, "p2p")  # bad input fails before the store
    with common.open_store(args) as store:
        if request is None:
            run_id = store.resolve_run(args.resume)
            info = store.get_run(run_id)
            if info.status == "complete":
                raise UsageError(f"--resume {args.resume}: run {run_id} is complete; nothing to do")
            request = info.request
            mpi = mpi_mod.resolve(request["mpi"])
        else:
            mpi = mpi_mod.resolve(request["mpi"])
            run_id = store.create_run(
                request["benchmark"], args.label, mpi.tag, mpi.launcher, request["np"], request
            )
        outcome = runner.run(store, run_id, request, mpi)
        info = store.get_run(run_id)
        points = store.points(run_id)
        report = args.report or (DEFAULT_REPORT if args.benchmark == "all" and not args.resume
                                 else None)
        if report:
            from commscope.report import html

            html.write_report(store, [run_id], report)
        if args.json:
            common.print_json({"run": run_id, "status": info.status, "new_points": outcome.new_points,
                               "points": outcome.total_points, "store": os.path.abspath(args.store),
                               "report": os.path.abspath(report) if report else None})
            return 0
        out = common.console()
        out.print(render.run_title(info))
        render.key_figures(out, points)
        out.print(f"stored in {args.store} as run {run_id}; details: commscope show {run_id}")
        if report:
            out.print(f"report: {os.path.abspath(report)}")
    return 0
