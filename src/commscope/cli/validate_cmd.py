"""`commscope validate`: can this machine's measurements be trusted?"""

from __future__ import annotations

import argparse

from rich.table import Table

from commscope import mpi as mpi_mod
from commscope import runner, validate
from commscope.cli import common

HELP = "check timers and clock synchronisation with seed 004's wait patterns"
EXAMPLES = """examples:
  commscope validate timers
  commscope validate timers --timers tsc,mpi_wtime --syncs linear,drift --json
"""


def _names(text: str, known: tuple[str, ...], flag: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    for n in names:
        common.require(n in known, f"{flag} {n}: choose from {','.join(known)}")
    return names


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope validate`."""
    p.add_argument("what", choices=("timers",), help="what to validate")
    common.option(p, "--mpi", env="COMMSCOPE_MPI",
                  help="openmpi, mpich or an MPI install prefix (default: mpiexec on PATH)")
    common.option(p, "--np", type=common.positive_int, default=runner.default_ranks(),
                  help="number of ranks")
    common.option(p, "--timers", default=",".join(validate.TIMERS), help="timers to try")
    common.option(p, "--syncs", default=",".join(validate.SYNCS), help="sync methods to try")
    common.option(p, "--tolerance", type=common.positive_float, default=1.0,
                  help="largest acceptable error, microseconds")
    p.add_argument("--json", action="store_true", help="machine-readable output (seconds)")


def run(args: argparse.Namespace) -> int:
    """Run the checks and print a verdict per timer and sync method."""
    timers = _names(args.timers, validate.TIMERS, "--timers")
    syncs = _names(args.syncs, validate.SYNCS, "--syncs")
    mpi = mpi_mod.resolve(args.mpi)
    with common.open_store(args) as store:
        verdicts = validate.check_timers(store, mpi, args.np, timers, syncs,
                                         args.tolerance * 1e-6)
    if args.json:
        common.print_json([v.to_json() for v in verdicts])
        return 0
    table = Table(title=f"timers and clock sync on {args.np} ranks (true: Null 0 us, "
                  f"Up {args.np} us)")
    for col in ("timer", "sync", "Null (us)", "Up (us)", "valid", "clock error (us)", "verdict"):
        table.add_column(col, justify="left" if col in ("timer", "sync", "verdict") else "right")
    for v in verdicts:
        fmt = lambda x: "" if x != x else f"{x * 1e6:.2f}"  # noqa: E731 - NaN prints empty
        table.add_row(v.timer, v.sync, fmt(v.null_s), fmt(v.up_s), f"{v.valid_share:.0%}",
                      fmt(v.clock_error_s),
                      ("trustworthy: " if v.trustworthy else "NOT trustworthy: ") + v.reason)
    common.console().print(table)
    return 0
