"""`commscope simulate app` and `simulate hpl`: whole MPI programs on a SimGrid model.

Each simulated run is stored as a run of kind ``app`` or ``hpl`` whose data (simulated and
wall time, output, HPL's figures, the network load) is kept with it under the same name.
The runs are :mod:`commscope.jobs.simulated_programs`' jobs; this module turns argv into
them and prints the runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, NoReturn

from commscope.cli import common, program_runs, simulate_options
from commscope.errors import UsageError

if TYPE_CHECKING:
    from commscope.jobs import simulated_programs

DEFAULT_TIMEOUT_S = 3600.0


def _common_options(p: argparse.ArgumentParser) -> None:
    simulate_options.add_model_option(p)
    p.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="one run per value of a model parameter"
        f" ({', '.join(simulate_options.sweep_names())})",
    )
    p.add_argument(
        "--netload", action="store_true", help="trace the run and keep the load on the links"
    )
    p.add_argument(
        "--smpi-cfg",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="extra SimGrid option, e.g. smpi/shared-malloc:global (repeatable)",
    )
    common.option(
        p,
        "--timeout",
        type=common.number(1, 7 * 86400),
        default=DEFAULT_TIMEOUT_S,
        help="wall-time limit of each simulation, seconds",
    )
    common.option(p, "--label", type=common.label, help="a name for the run(s)")
    p.add_argument("--json", action="store_true", help="print the runs as JSON")


def _app_options(p: argparse.ArgumentParser) -> None:
    _common_options(p)
    common.option(
        p,
        "--np",
        type=common.whole(1, 100_000),
        help="ranks, filling the model's cores node by node [default: every core]",
    )


class _LateOptions(argparse.ArgumentParser):
    """The options written after SOURCE; an error is a UsageError, printed once."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"simulate app: {message}; the program's arguments go after '--'")


def _split_program(args: argparse.Namespace) -> list[str]:
    """Options after SOURCE into ``args``; the program's arguments (after '--') returned.

    argparse hands everything after the first positional to the REMAINDER, options included.
    """
    words = list(args.program)
    head, tail = (
        (words[: words.index("--")], words[words.index("--") + 1 :])
        if "--" in words
        else (words, [])
    )
    parser = _LateOptions(prog="commscope simulate app SOURCE", add_help=False)
    _app_options(parser)
    parser.parse_args(head, namespace=args)
    return tail


def add_parsers(actions: Any) -> None:
    """Declare `simulate app` and `simulate hpl` on the `simulate` sub-parsers."""
    app = actions.add_parser(
        "app",
        help="build an MPI program with smpicc and run it on the model",
        description="Build an MPI C program (one file, or a directory whose Makefile takes"
        " CC=smpicc) and run it under smpirun on the model; its arguments follow '--'.",
        epilog="""examples:
  commscope simulate app ring.c --cluster c.yaml --np 8 --netload -- 1048576
  commscope simulate app ./miniapp --cluster c.yaml --sweep nic-latency=1us,10us -- -n 100
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _app_options(app)
    app.add_argument("source", metavar="SOURCE", help="a .c file or a directory with a Makefile")
    app.add_argument(
        "program",
        nargs=argparse.REMAINDER,
        metavar="-- ARGS",
        help="the program's arguments, after '--'",
    )

    hpl = actions.add_parser(
        "hpl",
        help="run HPL (HPC Challenge's) on the model, one run per grid",
        description="Build HPL with smpicc from the HPC Challenge source and solve one"
        " system per process grid on the model, as Rechistov et al. 2012 validated theirs.",
        epilog="""examples:
  commscope simulate hpl --matrix-order 4000 --grid 1x4,2x2 --cluster c.yaml \\
      --source hpcc_1.5.0.orig.tar.gz
  commscope simulate hpl --grid 2x2 --cluster c.yaml --sweep switch-latency=80us,400us
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common_options(hpl)
    program_runs.add_matrix_order(hpl, 4000)
    common.option(
        hpl, "--nb", type=common.whole(1, 4096), default=128, help="block size (HPL's NB)"
    )
    common.option(hpl, "--grid", default="2x2", help="process grids PxQ[,PxQ...] (one run each)")
    common.option(
        hpl,
        "--np",
        type=common.whole(1, 100_000),
        help="ranks; when given, every grid's P x Q must equal it",
    )
    common.option(
        hpl,
        "--source",
        env="COMMSCOPE_HPL_SOURCE",
        metavar="PATH",
        help="HPC Challenge 1.5.0 source: its tarball or unpacked tree (apt-get source hpcc)",
    )


def _on_model(args: argparse.Namespace) -> simulated_programs.OnModel:
    from commscope.jobs import simulated_programs

    return simulated_programs.OnModel(
        cluster=args.cluster,
        sweep=tuple(args.sweep),
        netload=args.netload,
        smpi_cfg=tuple(args.smpi_cfg),
        timeout=args.timeout,
        label=args.label,
    )


def run_app(args: argparse.Namespace) -> int:
    """`simulate app`: build the program, run it once per swept value, store each run."""
    from commscope.jobs import simulated_programs

    program_args = _split_program(args)
    job = simulated_programs.AppJob(args.source, tuple(program_args), _on_model(args), args.np)
    done = simulated_programs.run_app(args.store, job)
    program_runs.show_runs(args, done.rows(), ("simulated_s", "wall_s"))
    return 0


def run_hpl(args: argparse.Namespace) -> int:
    """`simulate hpl`: one HPL solve per grid (and swept value), each stored as a run."""
    from commscope.jobs import simulated_programs

    job = simulated_programs.SimulatedHplJob(
        args.source, args.grid, args.n, args.nb, _on_model(args), args.np
    )
    done = simulated_programs.run_hpl(args.store, job, common.console(stderr=True).print)
    program_runs.show_runs(args, done.rows(), ("gflops", "passed", "simulated_s", "wall_s"))
    return 0 if done.passed else 1
