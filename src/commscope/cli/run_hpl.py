"""``commscope run hpl``: HPL measured on real hosts, the same HPL `simulate hpl` runs on a model.

HPC Challenge's HPL is built with the chosen MPI's mpicc (the recipe, sources, flags and
reference BLAS of ``measure.hpl``; cached by digest and MPI), then solves one system per
process grid (and repeat) on this machine, on named hosts or across the virtual cluster.
Each solve is stored as a run of kind ``hpl`` like a simulated one, marked ``measured``,
with its hosts and MPI, so `show` and the report read both the same way. The solves are
:mod:`commscope.jobs.hpl_runs`' job; this module turns argv into it and prints the runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from commscope.cli import common, program_runs
from commscope.errors import UsageError
from commscope.kinds import run_commands

if TYPE_CHECKING:
    from commscope.jobs import hpl_runs

DEFAULT_N = 2000
DEFAULT_NB = 128
DEFAULT_GRID = "1x2"


def add_options(p: argparse.ArgumentParser) -> None:
    """Declare the options only `commscope run hpl` uses.

    It also reads --mpi, --np, the host options, --ranks-per-node, --vcluster, --timeout,
    --label and --json.
    """
    g = p.add_argument_group("what to measure (HPC Challenge's HPL, built with the MPI's mpicc)")
    program_runs.add_matrix_order(g, DEFAULT_N)
    common.option(
        g, "--nb", type=common.whole(1, 4096), default=DEFAULT_NB, help="block size (HPL's NB)"
    )
    common.option(g, "--grid", default=DEFAULT_GRID, help="process grids PxQ[,PxQ...], a run each")
    common.option(
        g,
        "--repeats",
        dest="repeat",
        metavar="N",
        type=common.whole(1, 100),
        default=1,
        help="solves per grid, each its own run (their spread: run-to-run noise)",
    )
    common.option(
        g,
        "--source",
        env="COMMSCOPE_HPL_SOURCE",
        metavar="PATH",
        help="HPC Challenge 1.5.0 source, tarball or tree (apt-get source hpcc)",
    )


def wanted(args: argparse.Namespace) -> bool:
    """Whether `commscope run` should hand this invocation to HPL."""
    return run_commands.measured_by(getattr(args, "benchmark", None)) == run_commands.WHOLE_PROGRAM


def _refuse_others(args: argparse.Namespace) -> None:
    for flag, given in (
        ("--resume", args.resume),
        ("--mca", args.mca),
        ("--cvar", args.cvar),
        ("--report", args.report),
    ):
        if given:
            raise UsageError(
                f"{flag}: run hpl does not take it (each solve is a whole run; hosts come from"
                " --hosts, --hostfile, --slurm or --vcluster); drop it"
            )


def _job(args: argparse.Namespace) -> hpl_runs.HplJob:
    from commscope.cli import run_where
    from commscope.jobs import hpl_runs

    return hpl_runs.HplJob(
        source=args.source,
        grid=args.grid,
        n=args.n,
        nb=args.nb,
        repeat=args.repeat,
        where=run_where.where(args),
        mpi=args.mpi,
        timeout=args.timeout,
        label=args.label,
    )


def run(args: argparse.Namespace) -> int:
    """Build HPL with the MPI's mpicc, solve once per grid and repeat, store each as a run."""
    from commscope.jobs import hpl_runs

    _refuse_others(args)
    done = hpl_runs.run(args.store, _job(args), common.console(stderr=True).print)
    columns = ("gflops", "passed", "hpl_time_s", "wall_s")
    program_runs.show_runs(args, done.rows(), columns, "measured")
    return 0 if done.passed else 1
