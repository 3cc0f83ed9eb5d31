"""`commscope run KIND`: one sub-parser per kind, each with only its own options and examples.

`commscope run` itself (no kind: ``all``) holds the options every kind shares: the MPI, where
the ranks run, the job's limits and the output. Each kind's parser accepts them too, after the
kind, without listing them again: its --help shows what that kind measures and how. What each
sub-command says and takes is the kinds' data (``kinds/run_commands``); the parsers are built
here.
"""

from __future__ import annotations

import argparse
import os
import textwrap
from collections.abc import Callable
from typing import Any

from commscope.cli import (
    common,
    run_hpl,
    run_matrix,
    run_node,
    run_options,
    run_tcp,
    run_where,
)
from commscope.cli.run_request import DEFAULT_TIMEOUT_S
from commscope.kinds import run_commands
from commscope.kinds.run_commands import RunCommand

SHARED = (
    "Options all kinds share (--mpi, --np, --vcluster, --hostfile, --slurm, --ranks-per-node,"
    " --timeout, --label, --json, ...): see 'commscope run --help'."
)


def _fill(text: str) -> str:
    return textwrap.fill(text, 79, break_on_hyphens=False, break_long_words=False)


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help with the option's text beside it where it fits: one screen per kind."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=24)


class _Hidden:
    """Declares options on a kind's parser that are listed by `commscope run --help` only.

    They take no default there (argparse.SUPPRESS), so a value given before KIND is kept.
    """

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser

    def add_argument(self, *flags: str, **kwargs: Any) -> Any:
        kwargs.update(help=argparse.SUPPRESS, default=argparse.SUPPRESS)
        return self.parser.add_argument(*flags, **kwargs)

    def add_argument_group(self, *args: Any, **kwargs: Any) -> _Hidden:
        return self

    def add_mutually_exclusive_group(self, *args: Any, **kwargs: Any) -> _Hidden:
        return self


def _measure(command: RunCommand, group: Any) -> None:
    """--ops, --sizes, --max-size and --perturbation, as this command reads them."""
    if command.ops is not None:
        common.option(group, "--ops", help=command.ops)
    if command.sizes is not None:
        common.option(group, "--sizes", help=command.sizes)
    if command.max_size is not None:
        common.option(group, "--max-size", default="4MiB", help=command.max_size)
    if command.perturbed:
        common.option(
            group,
            "--perturbation",
            type=common.whole(0, 1 << 20),
            default=3,
            help="bytes added and removed around each schedule size (0: none)",
        )


# The option sets a command names (``RunCommand.options``): fn(command, what, how, parser),
# where ``what`` and ``how`` are its "what to measure" and "how it is measured" groups.
OptionSet = Callable[[RunCommand, Any, Any, argparse.ArgumentParser], None]


def _engine_rows(command: RunCommand, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    """The option table's rows the command's engine benchmarks read (run_options)."""
    run_options.add_options({"*": how}, command.name)


def _default_run_rows(command: RunCommand, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    # run coll's options are taken, and listed by `run coll --help`
    run_options.add_options({"p2p": how, "*": None, "hidden": p}, command.name)


def _confidence(command: RunCommand, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    common.option(
        how,
        "--confidence",
        type=float,
        default=0.95,
        choices=(0.90, 0.95, 0.99),
        help="confidence level of the intervals shown",
    )


def _levels(command: RunCommand, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    common.option(
        what,
        "--levels",
        default="auto",
        help="auto (memory, and nic across nodes) or a list of"
        " memory,socket,nic,fabric,queue (docs/reference/contention.md)",
    )


def _pairs(command: RunCommand, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    common.option(
        what,
        "--pairs",
        default="auto",
        help="all (auto), quick (a few rounds) or a file of 'sender receiver' lines",
    )


OPTION_SETS: dict[str, OptionSet] = {
    "engine rows": _engine_rows,
    "default run rows": _default_run_rows,
    "confidence": _confidence,
    "levels": _levels,
    "pairs": _pairs,
    "partners": lambda command, what, how, p: run_matrix.add_options(what),
    "drain": lambda command, what, how, p: run_matrix.add_drain_option(
        p.add_argument_group("bad nodes")
    ),
    "sockets": lambda command, what, how, p: run_tcp.add_options(p),
    "linpack": lambda command, what, how, p: run_node.add_options(p),
    "hpl grid": lambda command, what, how, p: run_hpl.add_options(p),
}


def _command_options(command: RunCommand, p: argparse.ArgumentParser) -> None:
    """Declare ``commscope run NAME``'s own options, grouped."""
    what = p.add_argument_group("what to measure")
    how = p.add_argument_group("how it is measured")
    _measure(command, what)
    for name in command.options:
        OPTION_SETS[name](command, what, how, p)


def declare(p: argparse.ArgumentParser) -> None:
    """Declare `commscope run` on ``p``: the options every kind shares, then one parser per kind.

    `simulate run` parses its benchmark options after '--' with the same declaration.
    """
    p.formatter_class = Formatter
    p.usage = "%(prog)s [KIND] [options]"
    add_shared(p)
    _add_kinds(p)


def _add_kinds(p: argparse.ArgumentParser) -> None:
    """Declare one sub-parser per kind on `commscope run`'s parser ``p``.

    Each kind's parser takes the options every kind shares (``add_shared``), unlisted.
    Every option of every kind gets a default on ``p`` too, so `commscope run`
    without a kind (``all``) reads the same names.
    """
    kinds = p.add_subparsers(
        dest="benchmark", metavar="KIND", title="kinds (default: all)", parser_class=type(p)
    )
    for command in run_commands.COMMANDS:
        k = kinds.add_parser(
            command.name,
            prog=f"{p.prog} {command.name}",
            help=command.summary,
            description=f"{_fill(command.description)}\n\n{_fill(SHARED)}",
            epilog=f"examples:\n{command.examples}",
            formatter_class=Formatter,
            usage="%(prog)s [options]",
        )
        _command_options(command, k)
        add_shared(_Hidden(k))
        defaults = {
            a.dest: a.default
            for a in k._actions
            if a.default is not argparse.SUPPRESS and a.dest != "help"
        }
        own = {a.dest for a in p._actions}
        p.set_defaults(**{d: v for d, v in defaults.items() if d not in set(p._defaults) | own})
    p.set_defaults(benchmark="all")


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
