"""`commscope engine`: show or (re)build the measuring engine for an MPI."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from commscope.cli import common
from commscope.measure import engine
from commscope.measure import mpi as mpi_mod

HELP = "show which engine serves an MPI, or build one (e.g. after 'module load')"
EXAMPLES = """examples:
  commscope engine info --mpi mpich
  commscope engine build --mpi mpich
  commscope engine build --mpicc /opt/mpi/bin/mpicc --mpi /opt/mpi
"""
ACTIONS = {
    "info": (
        "show the engine that serves an MPI (without building it)",
        "Show where the engine for an MPI is, its version and the MPI it was built with.",
        """examples:
  commscope engine info                  the MPI on PATH
  commscope engine info --mpi mpich --json
""",
    ),
    "build": (
        "build (or rebuild) the engine for an MPI",
        "Build the engine with the MPI's compiler wrapper (CMake), e.g. after 'module load'.",
        """examples:
  module load openmpi && commscope engine build
  commscope engine build --mpi mpich
  commscope engine build --mpicc /opt/mpi/bin/mpicc --mpi /opt/mpi
""",
    ),
}


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare `commscope engine info` and `commscope engine build`."""
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, (summary, description, examples) in ACTIONS.items():
        sub = actions.add_parser(
            name,
            help=summary,
            description=description,
            epilog=examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        common.option(
            sub,
            "--mpi",
            env="COMMSCOPE_MPI",
            help="openmpi, mpich or an MPI install prefix (default: mpiexec on PATH)",
        )
        sub.add_argument("--mpicc", help="compiler wrapper to build with (default: the MPI's own)")
        sub.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Print the engine for the MPI, building it first for 'build'."""
    mpi = mpi_mod.resolve(args.mpi)
    if args.mpicc:
        mpi = dataclasses.replace(mpi, mpicc=args.mpicc)
    info = engine.build(mpi) if args.action == "build" else engine.find(mpi, build_missing=False)
    data = {
        "path": str(Path(info.path)),
        "engine_version": info.engine_version,
        "mpi_family": info.family,
        "mpi_version": info.mpi_version,
        "launcher": mpi.launcher,
        "mpicc": mpi.mpicc,
    }
    if args.json:
        common.print_json(data)
    else:
        for key, value in data.items():
            print(common.terminal_text(f"{key}: {value}"))
    return 0
