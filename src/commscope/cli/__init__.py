"""Command-line front end: the only place that reads argv, prints and exits.

Each subcommand is a module in this package with ``NAME``, ``HELP``, ``setup_parser(parser)``
and ``run(args) -> int``.

Every command's parser is built at each start, so these modules import numpy, SciPy,
Matplotlib, Jinja2, jsonschema, PyYAML and rich inside the functions that run a command, never
at the top: ``commscope --help`` then takes a tenth of a second, not two seconds.
tests/unit/test_cli_startup.py checks that building the parser leaves them unimported.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

from commscope import __version__, status
from commscope.cli.common import terminal_text
from commscope.data.location import default_store
from commscope.errors import CommscopeError, Interrupted

SUBCOMMANDS = (
    "run",
    "runs",
    "show",
    "export",
    "report",
    "compare",
    "import",
    "check-store",
    "baseline",
    "check",
    "history",
    "topology",
    "undrain",
    "validate",
    "engine",
    "vcluster",
    "tcp",
    "predict",
    "simulate",
    "completion",
    "manpage",
)


class OneLineParser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line naming the fix, exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Print one line and exit 2.

        argparse quotes some values it names and not others ("unrecognized arguments: ..."),
        so line breaks are folded and control characters shown escaped.
        """
        text = terminal_text(" ".join(message.split()))
        self.exit(2, f"{self.prog}: error: {text} (see '{self.prog} --help')\n")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        """An option's value of ``--`` (``--label=--``, ``--trim=--``) is the text ``--``.

        argparse before Python 3.13 drops every ``--`` it is given, so such an option got an
        empty list instead of text: a list the option's checks then indexed or stripped, and
        a traceback. Given as text, ``--`` meets each option's own check like any value.
        """
        if action.option_strings and action.nargs in (None, "?") and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def build_parser() -> argparse.ArgumentParser:
    """Build the full parser with every subcommand."""
    parser = OneLineParser(
        prog="commscope",
        description="Measure, analyse and report how this cluster's communication performs.",
        epilog="examples:\n"
        "  commscope run                 characterise this machine, write a report\n"
        "  commscope run p2p --mpi mpich point-to-point with MPICH\n"
        "  commscope runs                list stored runs\n"
        "  commscope show latest         figures of the newest run",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"commscope {__version__}")
    parser.add_argument(
        "--store",
        default=default_store(),
        help="SQLite store (env COMMSCOPE_STORE; default %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"commscope.cli.{name.replace('-', '_')}_cmd")
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=module.HELP,
            epilog=getattr(module, "EXAMPLES", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.setup_parser(p)
        p.set_defaults(_module=module)
    return parser


# Signals that end a command as Ctrl-C does: the job's process group is killed, the run kept.
TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into :class:`Interrupted` while the block runs.

    The first signal raises; later ones are ignored, so a second SIGTERM cannot cut short the
    cleanup the first one started (killing the MPI job, marking the run incomplete), which is
    bounded in time. A signal that was ignored when commscope started (``nohup``, a background
    job's SIGINT) stays ignored. Handlers can only be set from the main thread; elsewhere the
    block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if received:
            return  # cleanup of the first signal is under way
        received.append(signum)
        raise Interrupted(signum)

    previous = {}
    for sig in TERMINATING:
        current = signal.getsignal(sig)
        if current is signal.SIG_IGN:
            continue
        previous[sig] = signal.signal(sig, interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# Commands monitoring runs: they exit with :mod:`commscope.status` alone (0 OK, 1 WARNING,
# 2 CRITICAL, 3 UNKNOWN), so a usage error, any error and an interrupt are 3, never 2.
MONITORED = ("check", "undrain", "check-store")
MONITORED_WHEN = {"run": "--drain"}  # `run` is monitored when given this option


def monitored(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` runs a command monitoring reads (see MONITORED)."""
    rest = list(argv)
    while rest and rest[0].startswith("-"):  # global options before the command
        option = rest.pop(0)
        if option == "--store" and rest:
            rest.pop(0)
    if not rest:
        return False
    command, options = rest[0], rest[1:]
    wanted = MONITORED_WHEN.get(command)
    return command in MONITORED or (
        wanted is not None and any(o == wanted or o.startswith(f"{wanted}=") for o in options)
    )


class NoteLines(logging.Handler):
    """Prints what the parts log (WARNING and up) as one line each on stderr.

    The parts never print: a store that is found on a shared filesystem, for one, says so
    through :mod:`logging` (:mod:`commscope.data.store_file`), and here it becomes
    ``commscope COMMAND: note: ...``.
    """

    command = ""

    def emit(self, record: logging.LogRecord) -> None:
        """Print ``record``'s message on one line."""
        text = " ".join(record.getMessage().split())
        print(terminal_text(f"commscope {self.command}: note: {text}"), file=sys.stderr)


NOTES = NoteLines(logging.WARNING)


def _print_notes(command: str) -> None:
    NOTES.command = command
    parts = logging.getLogger("commscope")
    if NOTES not in parts.handlers:
        parts.addHandler(NOTES)
        parts.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    """Run commscope with ``argv`` and return the exit status.

    Ctrl-C, SIGTERM and SIGHUP end a command with one line on stderr and the status 128 +
    the signal's number (130, 143, 129); a usage error exits 2. A command monitoring reads
    (:func:`monitored`) exits 3, UNKNOWN, for all three.
    """
    raw = list(sys.argv[1:] if argv is None else argv)
    watched = monitored(raw)
    parser = build_parser()
    # A command line cannot hold a NUL, but a caller's list can: no path, name or value may
    # (the OS refuses it in a path or a launched command's argument), so none goes further.
    nul = next((arg for arg in raw if "\0" in arg), None)
    if nul is not None:
        shown = terminal_text(repr(nul[:60]))
        print(
            f"commscope: error: the argument {shown} holds a NUL byte; remove it", file=sys.stderr
        )
        return status.UNKNOWN if watched else 2
    try:
        args = parser.parse_args(raw)
    except SystemExit as done:  # argparse's usage error (2); --help and --version exit 0
        if done.code == 2 and watched:
            return status.UNKNOWN
        raise
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    _print_notes(args.command)
    try:
        with signals_interrupt():
            return int(args._module.run(args))
    except CommscopeError as err:
        print(terminal_text(f"commscope {args.command}: error: {err.one_line()}"), file=sys.stderr)
        return status.UNKNOWN if watched else err.exit_code
    except KeyboardInterrupt as err:
        # The runner may have put the run's state into the message; keep it on one line.
        text = " ".join(str(err).split()) or "interrupted"
        print(terminal_text(f"commscope {args.command}: {text}"), file=sys.stderr)
        if watched:
            return status.UNKNOWN
        return err.exit_code if isinstance(err, Interrupted) else 128 + signal.SIGINT
    except BrokenPipeError:
        # The reader (e.g. `head`) went away; stop quietly as other Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
