"""`commscope validate`: can this machine's measurements be trusted?"""

from __future__ import annotations

import argparse
from typing import Any

from commscope.cli import common
from commscope.errors import UsageError
from commscope.measure import mpi as mpi_mod
from commscope.measure import runner
from commscope.validate import timers as timers_mod

HELP = "check timers and clock synchronisation (Kurnosov 2012), and placement predictions"
EXAMPLES = """examples:
  commscope validate timers                      can this machine's clocks be trusted?
  commscope validate predict --np 4 --tables 3 --vcluster   predicted vs real placements
"""
TIMERS_EXAMPLES = """examples:
  commscope validate timers
  commscope validate timers --timers tsc,mpi_wtime --syncs linear,drift --json
  commscope validate timers --hostfile hosts       the same across hosts (by ssh)
  commscope validate timers --max-error 0.5        stricter than 1 us
"""
PREDICT_EXAMPLES = """examples:
  commscope validate predict --np 4 --sizes 256K,1MiB,4MiB --tables 3 --vcluster
  commscope validate predict --np 4 --op bcast --tables 3 --vcluster      binomial, forced
  commscope validate predict --np 4 --op allreduce --tables 3 --vcluster --repeats 4
                                       each placement run 4 times in turn, judged on the mean
  commscope validate predict --np 8 --tables 3 --hostfile hosts     placements by ssh
  salloc -N 4 --ntasks-per-node 2 commscope validate predict --np 4 --tables 3
"""


def _names(text: str, known: tuple[str, ...], flag: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    for n in names:
        common.require(n in known, f"{flag} {n}: choose from {','.join(known)}")
    return names


def _mpi(p: Any) -> None:
    common.option(
        p,
        "--mpi",
        env="COMMSCOPE_MPI",
        help="openmpi, mpich or an MPI install prefix (default: mpiexec on PATH)",
    )


def _hosts(where: Any) -> None:
    common.option(
        where,
        "--hostfile",
        metavar="FILE",
        help="run on these hosts (NAME, 'NAME slots=N' or 'NAME:N'), by ssh",
    )
    common.option(where, "--hosts", metavar="NAME[:SLOTS],...", help="the hosts, as a list")


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare `commscope validate timers` and `commscope validate predict`."""
    actions = p.add_subparsers(dest="what", metavar="ACTION", required=True)
    timers = actions.add_parser(
        "timers",
        help="the timers and clock synchronisation, by MPIPerf's wait patterns",
        description="Time MPIPerf's wait patterns (Null and Up, Kurnosov 2012) with every"
        " timer and clock synchronisation, and say which can be trusted.",
        epilog=TIMERS_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _mpi(timers)
    common.option(
        timers,
        "--np",
        type=common.ranks,
        metavar="N",
        help="ranks [default: one per core here; on hosts: their slots or cores; in an"
        " allocation: its tasks]",
    )
    common.option(timers, "--timers", default=",".join(timers_mod.TIMERS), help="timers to try")
    common.option(timers, "--syncs", default=",".join(timers_mod.SYNCS), help="sync methods to try")
    common.option(
        timers,
        "--max-error",
        dest="tolerance",
        metavar="US",
        type=common.number(0, 1e6, above=True),
        default=1.0,
        help="largest acceptable clock error, microseconds",
    )
    where = timers.add_argument_group(
        "where (default: this machine; inside a Slurm allocation: srun over it)"
    ).add_mutually_exclusive_group()
    _hosts(where)
    timers.add_argument("--json", action="store_true", help="machine-readable output (seconds)")
    timers.set_defaults(vcluster=False)

    from commscope.cli import validate_predict

    pred = actions.add_parser(
        "predict",
        help="placement predictions against the same collective run for real",
        description="Predict a collective's time on every placement (as 'commscope predict'),"
        " run it on each, and judge the predicted order against the measured one.",
        epilog=PREDICT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _mpi(pred)
    validate_predict.add_options(pred)
    where = pred.add_argument_group(
        "where (default: this machine; inside a Slurm allocation: srun over it)"
    ).add_mutually_exclusive_group()
    where.add_argument(
        "--vcluster", action="store_true", help="run the placements on the virtual cluster"
    )
    _hosts(where)
    pred.add_argument("--json", action="store_true", help="machine-readable output (seconds)")


def _timer_site(args: argparse.Namespace, mpi: mpi_mod.MPIInstall) -> dict[str, Any]:
    """Request fields placing the timer checks on hosts or in this allocation (np included)."""
    import os

    from commscope.measure import hosts, slurm

    if args.vcluster:
        raise UsageError(
            "validate timers --vcluster: give the nodes with --hostfile (on a "
            "'vcluster up --ssh') or run inside a Slurm allocation"
        )
    if args.hostfile or args.hosts:
        placement = hosts.placement_for(mpi, args.hostfile, args.hosts, None, args.np)
        return {"placement": placement.to_json(), "np": placement.nranks}
    if os.environ.get("SLURM_JOB_ID"):
        allocation = slurm.current()
        assert allocation is not None
        return {
            "launcher": "srun",
            "np": args.np or allocation.ntasks,
            "slurm": {**allocation.to_json(), "plugin": slurm.mpi_plugin(mpi)},
        }
    return {}


def run(args: argparse.Namespace) -> int:
    """Run the checks and print a verdict per timer and sync method."""
    if args.what == "predict":
        from commscope.cli import validate_predict

        return validate_predict.run(args)
    timers = _names(args.timers, timers_mod.TIMERS, "--timers")
    syncs = _names(args.syncs, timers_mod.SYNCS, "--syncs")
    mpi = mpi_mod.resolve(args.mpi)
    where = _timer_site(args, mpi)
    nranks = where.get("np", args.np or runner.default_ranks())
    with common.open_store(args) as store:
        verdicts = timers_mod.check_timers(
            store, mpi, nranks, timers, syncs, args.tolerance * 1e-6, where
        )
    if args.json:
        common.print_json([v.to_json() for v in verdicts])
        return 0
    from rich.table import Table

    table = Table(
        title=f"timers and clock sync on {nranks} ranks (true: Null 0 us, Up {nranks} us)"
    )
    for col in ("timer", "sync", "Null (us)", "Up (us)", "valid", "clock error (us)", "verdict"):
        table.add_column(col, justify="left" if col in ("timer", "sync", "verdict") else "right")

    def fmt(x: float) -> str:
        return "" if x != x else f"{x * 1e6:.2f}"  # NaN prints empty

    for v in verdicts:
        table.add_row(
            v.timer,
            v.sync,
            fmt(v.null_s),
            fmt(v.up_s),
            f"{v.valid_share:.0%}",
            fmt(v.clock_error_s),
            ("trustworthy: " if v.trustworthy else "NOT trustworthy: ") + v.reason,
        )
    common.console().print(table)
    return 0
