"""`commscope run`: measure this machine (or an allocation) and store the results."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from commscope import safe_write
from commscope.cli import (
    common,
    run_fence,
    run_hpl,
    run_kinds,
    run_matrix,
    run_node,
    run_tcp,
    run_where,
)
from commscope.cli.run_request import (
    DEFAULT_TIMEOUT_S,
    PAIRED,
    build_request,
    paired_ranks_per_node,
)
from commscope.data.request import RunRequest
from commscope.errors import UsageError
from commscope.measure import cvars, launch, runner
from commscope.measure import mpi as mpi_mod

HELP = "measure communication performance and store it (default: characterise this machine)"
EXAMPLES = """examples:
  commscope run                        p2p, loggp and collectives here, then a report
  commscope run p2p --mpi mpich        point-to-point with MPICH
  commscope run coll --help            a kind's options and examples
  commscope run matrix --slurm --nodes 16 --drain   in a new allocation; drain slow nodes
  commscope run --resume latest        measure only what a failed run is missing
"""
BENCHMARKS = (
    "all",
    "p2p",
    "coll",
    "contention",
    "loggp",
    "tcp",
    "node",
    "matrix",
    "bisection",
    "rma",
    "mbw",
    "hpl",
)

DEFAULT_REPORT = "commscope-report.html"


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare `commscope run`: the options every kind shares, then one parser per kind."""
    p.formatter_class = run_kinds.Formatter
    p.usage = "%(prog)s [KIND] [options]"
    add_shared(p)
    run_kinds.add_kinds(p, add_shared)


def add_shared(p: Any) -> None:
    """Declare the options every kind takes: the MPI, where ranks run, the job, the output."""
    mpi = p.add_argument_group("MPI")
    common.option(
        mpi,
        "--mpi",
        env="COMMSCOPE_MPI",
        metavar="MPI",
        help="openmpi, mpich or a prefix [default: PATH's]",
    )
    common.option(
        mpi,
        "--launcher",
        default="auto",
        choices=("auto", "mpirun", "mpiexec", "srun"),
        metavar="NAME",
        help="auto, mpirun, mpiexec or srun",
    )
    mpi.add_argument(
        "--mca",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Open MPI parameter (repeatable; stored)",
    )
    mpi.add_argument(
        "--cvar",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="MPICH control variable (repeatable; stored)",
    )
    run_where.add_options(p)
    job = p.add_argument_group("the run")
    common.option(
        job,
        "--timeout",
        type=common.seconds,
        metavar="S",
        help=f"seconds before the job is killed [default: by points, <= {DEFAULT_TIMEOUT_S:.0f}]",
    )
    job.add_argument(
        "--oversubscribe",
        action="store_true",
        default=os.environ.get("COMMSCOPE_OVERSUBSCRIBE") == "1",
        help="more ranks than cores (env COMMSCOPE_OVERSUBSCRIBE=1)",
    )
    common.option(job, "--label", type=common.label, metavar="TEXT", help="a name for this run")
    common.option(
        job,
        "--resume",
        metavar="RUN",
        help="measure what an incomplete run misses",
    )
    common.option(
        job, "--report", metavar="FILE", help="write an HTML report [all: commscope-report.html]"
    )
    job.add_argument("--json", action="store_true", help="print the outcome as JSON")
    job.add_argument("--quiet", action="store_true", help="no progress bar")
    job.add_argument(
        "--full",
        action="store_true",
        help="every table, not only the summary",
    )


def measure(
    store: Any, run_id: int, request: RunRequest, mpi: mpi_mod.MPIInstall, quiet: bool
) -> runner.Outcome:
    """Run the engine for a stored request, with a progress bar unless ``quiet``."""
    simulation = None
    if request.simulate:
        from commscope.simulate.smpi import SimulatedLaunch

        simulation = SimulatedLaunch(request.simulate)
    if quiet:
        return runner.run(store, run_id, request, mpi, simulation=simulation)
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("measuring"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=common.console(stderr=True), transient=True) as bar:
        task = bar.add_task("points", total=None)

        def show(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        return runner.run(store, run_id, request, mpi, progress=show, simulation=simulation)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark(s), print the key figures, write the report when asked."""
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
    if args.benchmark in PAIRED and args.ranks_per_node is None and (args.hostfile or args.hosts):
        args.ranks_per_node = paired_ranks_per_node(args)
    request = build_request(args)  # bad input fails before the store
    _check_cores(args)
    if request.benchmark == "all" and not args.report:
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
        outcome = measure(store, run_id, request, mpi, args.quiet or args.json)
        if request.benchmark == "matrix" and not args.no_confirm:
            run_matrix.confirm(store, run_id, request, mpi, args.quiet or args.json)
        report = args.report or (DEFAULT_REPORT if request.benchmark == "all" else None)
        return show_outcome(args, store, run_id, request, outcome, report)


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
    with common.open_store(args) as store:
        run_id, stored = common.resumable_request(store, args.resume)
        request = RunRequest.from_json(stored)
        if args.drain:
            if request.benchmark != "matrix":
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
            outcome = measure(store, run_id, live, mpi, args.quiet or args.json)
        report = args.report or (DEFAULT_REPORT if request.benchmark == "all" else None)
        return show_outcome(args, store, run_id, request, outcome, report)


def show_outcome(
    args: argparse.Namespace,
    store: Any,
    run_id: int,
    request: RunRequest,
    outcome: runner.Outcome,
    report: str | None,
) -> int:
    """Write the report when asked, then print the run's key figures (or JSON).

    After a matrix run, the nodes it names are fenced (``--drain``) or the commands that
    would fence them printed; with ``--drain`` the exit status is the fence's (0/1/2/3).
    """
    info = store.get_run(run_id)
    written = write_report(store, run_id, report)
    fenced = run_fence.after(args, store, run_id, request)
    code = fenced.status if fenced is not None and fenced.drain else 0
    if args.json:
        result: dict[str, Any] = {
            "run": run_id,
            "status": info.status,
            "new_points": outcome.new_points,
            "points": outcome.total_points,
            "store": os.path.abspath(args.store),
            "report": os.fspath(written) if written else None,
        }
        if fenced is not None:
            result["fence"] = fenced.to_json()
        common.print_json(result)
        return code
    # numpy and SciPy: only when figures are printed
    from commscope import kinds
    from commscope.cli import render
    from commscope.data.run_data import read_run

    out = common.console()
    full = bool(getattr(args, "full", False))
    render.summary(out, read_run(store, run_id), kinds.View(), full)
    more = "" if full else f"; every table: commscope show {run_id} --full"
    out.print(f"stored in {args.store} as run {run_id}{more}")
    if written:
        out.print(f"report: {os.fspath(written)}")
    if fenced is not None:
        run_fence.print_fenced(fenced)
    return code


def write_report(store: Any, run_id: int, report: str | None) -> Path | None:
    """Write the run's HTML report to ``report`` (if given); the path written.

    Raises:
        UsageError: the report cannot be written there; the message says the run is stored
            and how to write its report elsewhere.
    """
    if not report:
        return None
    from commscope import kinds
    from commscope.data.run_data import read_run

    try:
        return kinds.write_report([read_run(store, run_id)], report, "--report")
    except UsageError as err:
        raise UsageError(
            f"{err.one_line()}; run {run_id} is stored, write its report with"
            f" 'commscope report {run_id} -o FILE'"
        ) from None
