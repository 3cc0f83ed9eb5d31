"""`commscope run`: measure this machine (or an allocation) and store the results."""

from __future__ import annotations

import argparse
import os

from commscope import safe_write
from commscope.cli import run_hpl, run_kinds, run_node, run_outcome, run_tcp, run_where
from commscope.cli.run_request import (
    DEFAULT_TIMEOUT_S,
    build_request,
    paired_ranks_per_node,
)
from commscope.errors import UsageError
from commscope.jobs import runs
from commscope.jobs import where as where_mod

HELP = "measure communication performance and store it (default: characterise this machine)"
EXAMPLES = """examples:
  commscope run                        p2p, loggp and collectives here, then a report
  commscope run p2p --mpi mpich        point-to-point with MPICH
  commscope run coll --help            a kind's options and examples
  commscope run matrix --slurm --nodelist n[01-16] --drain   on these nodes; drain slow ones
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
    where = run_where.where(args)
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
    if where.chosen() and (run_tcp.wanted(args) or run_node.wanted(args)):
        raise UsageError(
            f"{where.chosen()[0]}: only MPI runs (p2p, coll, contention, "
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
    quiet = args.quiet or args.json
    if args.resume:
        with run_outcome.progress_bar(quiet) as (progress, _):
            resumed = runs.resume(
                args.store,
                args.resume,
                args.drain,
                report=args.report or DEFAULT_REPORT,
                report_asked=bool(args.report),
                progress=progress,
            )
        return run_outcome.show_outcome(args, resumed)
    if (
        kinds.benchmark(args.benchmark).paired
        and args.ranks_per_node is None
        and (args.hostfile or args.hosts)
    ):
        args.ranks_per_node = paired_ranks_per_node(args)
        where = run_where.where(args)
    request = build_request(args)  # bad input fails before the store
    _check_cores(args, where)
    report = args.report
    if request.benchmark == kinds.DEFAULT_RUN and not report:
        safe_write.check_target(DEFAULT_REPORT, "--report")
        report = DEFAULT_REPORT
    where_mod.check(where)
    if args.drain:
        _check_drain(args, where)
    job = runs.RunJob(
        request,
        where,
        label=args.label,
        root=args.root,
        drain=args.drain,
        confirm=not args.no_confirm,
        report=report,
    )
    with run_outcome.progress_bar(quiet) as (progress, note):
        outcome = runs.start(args.store, job, progress, note)
    return run_outcome.show_outcome(args, outcome)


def _check_drain(args: argparse.Namespace, where: where_mod.Where) -> None:
    """Refuse ``--drain`` where it cannot work, before anything is measured."""
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    if not kinds.benchmark(args.benchmark).drains:
        raise UsageError(
            f"--drain with {args.benchmark}: only the all-pairs matrix names nodes to drain;"
            " run 'commscope run matrix --drain'"
        )
    if not (where.given() or os.environ.get("SLURM_JOB_ID")):
        raise UsageError(
            "--drain on one machine: its ranks are not nodes to drain; run the matrix across"
            " nodes (--slurm, --hostfile, --hosts or --vcluster, or inside an allocation)"
        )


def _check_cores(args: argparse.Namespace, where: where_mod.Where) -> None:
    """Refuse more ranks than this machine has cores unless --oversubscribe.

    Hosts from a hostfile, Slurm or the virtual cluster say what they offer themselves;
    here, ``--np 99999`` on 2 cores would start 99999 engines that never get going.
    """
    if args.np is None or args.oversubscribe or where.given():
        return
    if where_mod.uses_slurm(where, args.launcher):
        return
    cores = len(os.sched_getaffinity(0))
    if args.np > cores:
        raise UsageError(
            f"--np {args.np}: this machine offers {cores} cores; give --np {cores} or"
            " fewer, run on more hosts (--hostfile, --slurm), or add --oversubscribe to"
            " share cores (timings then include waiting for a core)"
        )
