"""`commscope run`: measure this machine (or an allocation) and store the results."""

from __future__ import annotations

import argparse
import os

from commscope import safe_write
from commscope.cli import (
    common,
    run_fence,
    run_hpl,
    run_kinds,
    run_matrix,
    run_node,
    run_outcome,
    run_tcp,
    run_where,
)
from commscope.cli.run_request import (
    DEFAULT_TIMEOUT_S,
    build_request,
    paired_ranks_per_node,
)
from commscope.data.request import RunRequest
from commscope.errors import UsageError
from commscope.measure import cvars, launch
from commscope.measure import mpi as mpi_mod

HELP = "measure communication performance and store it (default: characterise this machine)"
EXAMPLES = """examples:
  commscope run                        p2p, loggp and collectives here, then a report
  commscope run p2p --mpi mpich        point-to-point with MPICH
  commscope run coll --help            a kind's options and examples
  commscope run matrix --slurm --nodes 16 --drain   in a new allocation; drain slow nodes
  commscope run --resume latest        measure only what a failed run is missing
"""

DEFAULT_REPORT = "commscope-report.html"


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare `commscope run`: the options every kind shares, then one parser per kind."""
    run_kinds.declare(p)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark(s), print the key figures, write the report when asked."""
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    if run_hpl.wanted(args):  # a whole program, not the engine: its own options and runs
        return run_hpl.run(args)
    for flag, given, what in (
        ("--mca", args.mca, "Open MPI parameters"),
        ("--cvar", args.cvar, "MPICH settings"),
    ):
        if given and args.resume:
            raise UsageError(
                f"{flag} {given[0]}: a resumed run keeps the {what} stored with it; drop {flag}"
            )
        if given and (run_tcp.wanted(args) or run_node.wanted(args)):
            raise UsageError(
                f"{flag} {given[0]}: only MPI communication runs (p2p, coll, "
                f"contention, loggp, all) take {what}"
            )
    if run_where.chosen(args) and (run_tcp.wanted(args) or run_node.wanted(args)):
        raise UsageError(
            f"{run_where.chosen(args)[0]}: only MPI runs (p2p, coll, contention, "
            "loggp, all) start ranks on hosts; TCP runs take --peer or --vcluster"
        )
    if args.report:  # a bad report path fails now, not after the measurement
        safe_write.check_target(args.report, "--report")
    if args.drain and (run_tcp.wanted(args) or run_node.wanted(args)):
        raise UsageError(
            f"--drain with {args.benchmark}: only the all-pairs matrix names nodes to drain;"
            " run 'commscope run matrix --drain'"
        )
    if run_tcp.wanted(args) or run_node.wanted(args) or args.resume:
        args.timeout = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if run_tcp.wanted(args):  # TCP runs have no MPI: their own requests and runner
        return run_tcp.run(args)
    if run_node.wanted(args):  # node runs have no MPI either
        return run_node.run(args)
    if args.resume:
        return _resume(args)
    if (
        kinds.benchmark(args.benchmark).paired
        and args.ranks_per_node is None
        and (args.hostfile or args.hosts)
    ):
        args.ranks_per_node = paired_ranks_per_node(args)
    request = build_request(args)  # bad input fails before the store
    _check_cores(args)
    if request.benchmark == kinds.DEFAULT_RUN and not args.report:
        safe_write.check_target(DEFAULT_REPORT, "--report")
    run_where.check(args)
    run_fence.check(args)  # Slurm answers and lets this user drain, before the measurement
    mpi = mpi_mod.resolve(request.mpi)
    launch.check_mca(mpi, request.mca)  # before a run is stored
    cvars.check(mpi, request.cvar)
    if mpi.family == "mpich":  # the ranks inherit these: record them with the run
        request = request.replace(cvar={**cvars.from_environment(), **(request.cvar or {})} or None)
    with run_where.placed(args, mpi, request) as request, common.open_store(args) as store:
        request = run_where.one_sided_component(request, mpi)
        run_id = store.create_run(
            request.benchmark, args.label, mpi.tag, mpi.launcher, request.np, request.to_json()
        )
        outcome = run_outcome.measure(store, run_id, request, mpi, args.quiet or args.json)
        if kinds.benchmark(request.benchmark).drains and not args.no_confirm:
            run_matrix.confirm(store, run_id, request, mpi, args.quiet or args.json)
        report = args.report or (DEFAULT_REPORT if request.benchmark == kinds.DEFAULT_RUN else None)
        return run_outcome.show_outcome(args, store, run_id, request, outcome, report)


def _check_cores(args: argparse.Namespace) -> None:
    """Refuse more ranks than this machine has cores unless --oversubscribe.

    Hosts from a hostfile, Slurm or the virtual cluster say what they offer themselves;
    here, ``--np 99999`` on 2 cores would start 99999 engines that never get going.
    """
    if args.np is None or args.oversubscribe or run_where.chosen(args) or args.vcluster:
        return
    if run_where.uses_slurm(args, args.launcher):
        return
    cores = len(os.sched_getaffinity(0))
    if args.np > cores:
        raise UsageError(
            f"--np {args.np}: this machine offers {cores} cores; give --np {cores} or"
            " fewer, run on more hosts (--hostfile, --slurm), or add --oversubscribe to"
            " share cores (timings then include waiting for a core)"
        )


def _resume(args: argparse.Namespace) -> int:
    """Measure what a stored incomplete run is missing, where it ran before."""
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    with common.open_store(args) as store:
        run_id, stored = common.resumable_request(store, args.resume)
        request = RunRequest.from_json(stored)
        if args.drain:
            if not kinds.benchmark(request.benchmark).drains:
                raise UsageError(
                    f"--drain with --resume {args.resume}: run {run_id} is a"
                    f" {request.benchmark} run; only the all-pairs matrix names nodes to drain"
                )
            run_fence.check(args)
        if request.simulate:
            from commscope.simulate import smpi

            mpi = smpi.install()
        else:
            mpi = mpi_mod.resolve(request.mpi)
        with run_where.resumed(request) as live:
            outcome = run_outcome.measure(store, run_id, live, mpi, args.quiet or args.json)
        report = args.report or (DEFAULT_REPORT if request.benchmark == kinds.DEFAULT_RUN else None)
        return run_outcome.show_outcome(args, store, run_id, request, outcome, report)
