"""`commscope run KIND`: one sub-parser per kind, each with only its own options and examples.

`commscope run` itself (no kind: ``all``) holds the options every kind shares: the MPI, where
the ranks run, the job's limits and the output. Each kind's parser accepts them too, after the
kind, without listing them again: its --help shows what that kind measures and how.
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
from commscope.cli.run_request import (
    COLL_OPS,
    COLL_SIZES,
    CONTENTION_SIZES,
    DEFAULT_TIMEOUT_S,
    P2P_OPS,
    RMA_OPS,
)

# name: (one line for `run --help`, description, examples)
KINDS: dict[str, tuple[str, str, str]] = {
    "all": (
        "p2p, loggp, coll, then a report (the default)",
        "Characterise this machine or allocation: point-to-point, LogGP and the default"
        " collective suite, then an HTML report. It also takes every option of 'commscope"
        " run coll' (see its --help).",
        """  commscope run                          the same as 'commscope run all'
  commscope run all --max-size 1MiB --report here.html
  commscope run all --vcluster --sync ring""",
    ),
    "p2p": (
        "latency and bandwidth of rank pairs (NetPIPE)",
        "Point-to-point latency and bandwidth between two ranks of each pair kind"
        " (docs/reference/p2p.md).",
        """  commscope run p2p --mpi mpich               point-to-point with MPICH
  commscope run p2p --sizes 0,8,1K,1MiB --ops pingpong
  commscope run p2p --ops bw --recv-buffers one,each   one receive buffer, and one per message
  commscope run p2p --vcluster                intra- and inter-node pairs
  commscope run p2p --hostfile hosts --ranks-per-node 2""",
    ),
    "loggp": (
        "LogGP's L, o_s, o_r, g, G (Netgauge)",
        "LogGP parameters of one pair by Netgauge's PRTT method (docs/reference/loggp.md).",
        """  commscope run loggp --mpi mpich
  commscope run loggp --sizes 0,1K,64K,1MiB""",
    ),
    "coll": (
        "collectives, timed by the MPIPerf method",
        "Collective operations timed by the MPIPerf method of Kurnosov 2012: synchronised"
        " clocks and a window schedule of launches (docs/reference/coll.md).",
        """  commscope run coll --ops alltoall,bcast --sizes 8,1KiB,1MiB --sync ring
  commscope run coll --sync barrier              the naive back-to-back loop
  commscope run coll --np 8 --procs 2,4,8 --ops allreduce   time against process count
  commscope run coll --stop rse:0.05 --max-launches 200""",
    ),
    "contention": (
        "time as pairs share a channel: t(m, cf)",
        "t(m, cf): how the time of an exchange grows as pairs share a channel, per level"
        " (docs/reference/contention.md).",
        """  commscope run contention --vcluster --sizes 1MiB,4MiB
  commscope run contention --vcluster --idle 0.5   also the first exchange after 0.5 s idle
  commscope run contention --repeats 9 --iterations 20""",
    ),
    "matrix": (
        "every node pair at once (mpiGraph); bad nodes",
        "Bandwidth and latency of every ordered node pair, all at once as mpiGraph does;"
        " slow nodes are named and can be drained in Slurm (docs/reference/matrix.md).",
        """  commscope run matrix --vcluster
  commscope run matrix --slurm --nodes 16 --drain    and drain in Slurm each node named slow
  commscope run matrix --hostfile hosts --partners 4 --samples 20""",
    ),
    "bisection": (
        "effective bisection bandwidth (Netgauge)",
        "Effective bisection bandwidth: random perfect matchings of the nodes, each"
        " measured at once, as Netgauge's ebb (docs/reference/matrix.md).",
        """  commscope run bisection --vcluster --repeats 20
  commscope run bisection --hostfile hosts --seed 7""",
    ),
    "rma": (
        "one-sided put, get and accumulate",
        "One-sided communication: put, get and accumulate under fence, lock and PSCW"
        " synchronisation (docs/reference/rma.md).",
        """  commscope run rma --ops put,get --rma-sync fence,lock --check
  commscope run rma --vcluster --sizes 8,1K,1MiB""",
    ),
    "mbw": (
        "several pairs at once (osu_mbw_mr)",
        "Bandwidth and message rate of k pairs sending at once, as osu_mbw_mr"
        " (docs/reference/mbw.md).",
        """  commscope run mbw --vcluster --pairs-per-step 1,2
  commscope run mbw --max-size 1MiB""",
    ),
    "tcp": (
        "the TCP network below MPI",
        "The TCP network below MPI: ping-pong over the size schedule and a bidirectional"
        " stream (docs/reference/tcp.md). Takes --vcluster, or --peer or --loopback.",
        """  commscope run tcp --peer node2 --sockbuf default,64K,256K   one run per buffer size
  commscope run tcp --vcluster --tcp-mode both
  commscope run tcp --loopback""",
    ),
    "node": (
        "Linpack on this node: P_max, N_1/2",
        "Linpack on this node over core counts and matrix orders: P_max, N_1/2 and the"
        " efficiency against P_peak (docs/reference/node.md).",
        """  commscope run node --cores 1,all
  commscope run node --matrix-order 500,1000,2000 --min-samples 5
  commscope run node --grid 2x2 --nb 192      HPL with Debian's hpcc instead""",
    ),
    "hpl": (
        "HPC Challenge's HPL, one run per grid",
        "HPC Challenge's HPL built with the MPI's mpicc, one run per process grid"
        " (docs/reference/node.md).",
        """  commscope run hpl --vcluster --grid 1x2,2x1 --matrix-order 2000 \\
      --source hpcc_1.5.0.orig.tar.gz
  commscope run hpl --slurm --grid 4x4 --repeats 3""",
    ),
}
SHARED = (
    "Options all kinds share (--mpi, --np, --vcluster, --hostfile, --slurm, --ranks-per-node,"
    " --timeout, --label, --json, ...): see 'commscope run --help'."
)
OPS_HELP = {
    "p2p": f"operations, in order [default: {P2P_OPS}]",
    "coll": "collectives, e.g. alltoall,bcast (all: docs/reference/coll.md)"
    f" [default: {COLL_OPS.replace(',', ', ')}]",
    "rma": f"one-sided operations [default: {RMA_OPS}]",
}
SIZES_HELP = {
    "p2p": "message sizes, e.g. 0,8,1K,1MiB [default: the NetPIPE schedule to --max-size]",
    "loggp": "message sizes [default: the NetPIPE schedule to --max-size]",
    "coll": f"message sizes [default: {COLL_SIZES}]",
    "contention": f"message sizes [default: {CONTENTION_SIZES}]",
    "matrix": "message sizes of the bandwidth windows [default: 128K]",
    "bisection": "message sizes of the bandwidth windows [default: 128K]",
    "rma": f"message sizes [default: {COLL_SIZES}]",
    "mbw": "message sizes [default: powers of two to --max-size]",
    "tcp": "message sizes [default: the NetPIPE schedule to --max-size]",
}
# Kinds that take --max-size, and its help.
_SCHEDULE_HELP = "largest size of the NetPIPE schedule (regular steps, +-perturbation)"
SCHEDULE = {
    **{name: _SCHEDULE_HELP for name in ("all", "p2p", "loggp", "tcp")},
    "mbw": "largest size",
}
PERTURBED = ("all", "p2p", "tcp")  # kinds whose schedule takes --perturbation


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


def _measure(kind: str, group: Any) -> None:
    """--ops, --sizes, --max-size and --perturbation, as this kind reads them."""
    if kind in OPS_HELP:
        common.option(group, "--ops", help=OPS_HELP[kind])
    if kind in SIZES_HELP:
        common.option(group, "--sizes", help=SIZES_HELP[kind])
    if kind in SCHEDULE:
        common.option(group, "--max-size", default="4MiB", help=SCHEDULE[kind])
    if kind in PERTURBED:
        common.option(
            group,
            "--perturbation",
            type=common.whole(0, 1 << 20),
            default=3,
            help="bytes added and removed around each schedule size (0: none)",
        )


def _confidence(group: Any) -> None:
    common.option(
        group,
        "--confidence",
        type=float,
        default=0.95,
        choices=(0.90, 0.95, 0.99),
        help="confidence level of the intervals shown",
    )


# Each kind's own options beyond --ops, --sizes and the schedule: fn(kind, what, how, parser),
# where ``what`` and ``how`` are its "what to measure" and "how it is measured" groups.
def _engine(kind: str, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    """The option table's rows the kind's engine benchmarks read (run_options)."""
    run_options.add_options({"*": how}, kind)


def _all(kind: str, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    # run coll's options are taken, and listed by `run coll --help`
    run_options.add_options({"p2p": how, "*": None, "hidden": p}, kind)
    _confidence(how)


def _coll(kind: str, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    _engine(kind, what, how, p)
    _confidence(how)


def _contention(kind: str, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    common.option(
        what,
        "--levels",
        default="auto",
        help="auto (memory, and nic across nodes) or a list of"
        " memory,socket,nic,fabric,queue (docs/reference/contention.md)",
    )
    _engine(kind, what, how, p)


def _matrix(kind: str, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    common.option(
        what,
        "--pairs",
        default="auto",
        help="all (auto), quick (a few rounds) or a file of 'sender receiver' lines",
    )
    _engine(kind, what, how, p)
    run_matrix.add_options(what)
    run_matrix.add_drain_option(p.add_argument_group("bad nodes"))


def _tcp(kind: str, what: Any, how: Any, p: argparse.ArgumentParser) -> None:
    run_tcp.add_options(p)
    _engine(kind, what, how, p)


OWN_OPTIONS: dict[str, Callable[[str, Any, Any, argparse.ArgumentParser], None]] = {
    "all": _all,  # commscope run with no kind
    "coll": _coll,
    "contention": _contention,
    "matrix": _matrix,
    run_tcp.KIND: _tcp,
    run_node.KIND: lambda kind, what, how, p: run_node.add_options(p),
    "hpl": lambda kind, what, how, p: run_hpl.add_options(p),
}


def _kind_options(kind: str, p: argparse.ArgumentParser) -> None:
    """Declare ``commscope run KIND``'s own options, grouped."""
    what = p.add_argument_group("what to measure")
    how = p.add_argument_group("how it is measured")
    _measure(kind, what)
    OWN_OPTIONS.get(kind, _engine)(kind, what, how, p)


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
    for name, (summary, description, examples) in KINDS.items():
        k = kinds.add_parser(
            name,
            prog=f"{p.prog} {name}",
            help=summary,
            description=f"{_fill(description)}\n\n{_fill(SHARED)}",
            epilog=f"examples:\n{examples}",
            formatter_class=Formatter,
            usage="%(prog)s [options]",
        )
        _kind_options(name, k)
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
