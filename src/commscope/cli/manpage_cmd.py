"""``commscope manpage``: the manual page, generated from the parser by argparse-manpage."""

from __future__ import annotations

import argparse

HELP = "print commscope's manual page (roff), generated from its parser by argparse-manpage"
EXAMPLES = """examples:
  commscope manpage > commscope.1 && man ./commscope.1
  commscope manpage > ~/.local/share/man/man1/commscope.1   then: man commscope
  commscope manpage -o /usr/local/share/man/man1/commscope.1"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the output file."""
    p.add_argument("-o", "--output", metavar="FILE", help="write it here [default: stdout]")


# Every environment variable commscope reads (tests/unit/test_manpage.py finds each one the
# code reads in this table).
ENVIRONMENT = (
    (
        "COMMSCOPE_STORE",
        "the store (SQLite file) when --store is not given [default:"
        " $XDG_DATA_HOME/commscope/store.sqlite, else ~/.local/share/commscope/store.sqlite]",
    ),
    (
        "COMMSCOPE_HOME",
        "where engines and TCP programs built on demand are cached [default:"
        " $XDG_CACHE_HOME/commscope, else ~/.cache/commscope]",
    ),
    ("XDG_DATA_HOME", "the base of the default store's folder"),
    ("XDG_CACHE_HOME", "the base of the default cache"),
    ("COMMSCOPE_MPI", "the MPI for run, engine and validate when --mpi is not given"),
    ("COMMSCOPE_TIMER", "the engine's timer when --timer is not given"),
    ("COMMSCOPE_OVERSUBSCRIBE", "1: allow more ranks than cores (--oversubscribe)"),
    ("COMMSCOPE_CLUSTER", "the cluster model for predict and simulate when --cluster is not given"),
    ("COMMSCOPE_HPL_SOURCE", "HPL's source folder for run hpl and simulate hpl"),
    ("COMMSCOPE_TCP_PEER", "the peer host of run tcp"),
    (
        "SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_NODELIST, SLURM_NTASKS, SLURM_NPROCS,"
        " SLURM_CPUS_ON_NODE, SLURM_JOB_PARTITION, SLURM_JOB_RESERVATION, SLURM_JOB_ACCOUNT,"
        " SLURM_JOB_QOS",
        "read inside a Slurm allocation: a run measures on its nodes and records where the"
        " allocation was granted",
    ),
    (
        "SUDO_USER",
        "under sudo, without --store or COMMSCOPE_STORE, root's default store is"
        " refused and this user's is named",
    ),
    ("MPIR_CVAR_*", "MPICH settings inherited by the ranks, recorded with the run"),
    ("UCX_RNDV_THRESH", "recorded as the eager limit of MPICH built on UCX"),
)
EXIT_STATUS = (
    ("0", "success; for check, undrain, check-store and run --drain: OK"),
    (
        "1",
        "an error the message names (bad input, a failed measurement, a damaged store);"
        " for the monitored commands: WARNING",
    ),
    (
        "2",
        "a usage error (argparse); for the monitored commands: CRITICAL (check: a"
        " regression; run --drain: a node drained; undrain: a node still slow, drained"
        " again; check-store: damage found)",
    ),
    (
        "3",
        "for check, undrain, check-store and run --drain: UNKNOWN, whatever stopped them"
        " (a usage error, any error, an interrupt): monitoring reads them as Nagios, Icinga and"
        " NHC read plugins",
    ),
    (
        "128+N",
        "interrupted by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP); the completed"
        " measurements are kept",
    ),
)


def text() -> str:
    """The manual page of every command, action and kind, in roff."""
    from argparse_manpage.manpage import Manpage

    from commscope import __version__
    from commscope.cli import build_parser

    parser = build_parser()
    page = Manpage(
        parser,
        _data={
            "description": "measure, analyse and report how a cluster's communication performs",
            "project_name": "commscope",
            "version": __version__,
        },
    )
    page.add_section("EXIT STATUS", ">", _items(EXIT_STATUS))
    page.add_section("ENVIRONMENT", ">", _items(ENVIRONMENT))
    page.add_section("EXAMPLES", ">", _examples(parser))
    return str(page)


def _roff(line: str) -> str:
    """A line of text safe in roff: backslashes doubled, a leading dot or quote escaped."""
    line = line.replace("\\", "\\e")
    return "\\&" + line if line.startswith((".", "'")) else line


def _items(rows: tuple[tuple[str, str], ...]) -> str:
    return "\n".join(f".TP\n.B {_roff(name)}\n{_roff(text)}" for name, text in rows)


def _examples(parser: argparse.ArgumentParser, prefix: str = "") -> str:
    """Every command's and action's examples, as their --help shows them, preformatted."""
    out = []
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its subparsers there
        if not isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            continue
        for name, sub in action.choices.items():
            title = f"{prefix}{name}"
            if sub.epilog:
                lines = sub.epilog.splitlines()
                out += [f".SS {_roff(title)}", ".nf", *(_roff(x) for x in lines), ".fi"]
            nested = _examples(sub, f"{title} ")
            if nested:
                out.append(nested)
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    """Print (or write) the page."""
    page = text()
    if args.output:
        from commscope import safe_write

        safe_write.check_target(args.output, "--output")
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(page)
    else:
        print(page)
    return 0
