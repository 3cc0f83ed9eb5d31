"""What ``commscope run NAME`` offers: one sub-command per engine benchmark or kind.

Each entry is the data behind a sub-command: its line in `commscope run --help`, its own
--help (description and examples), which of the --ops, --sizes and size-schedule options it
takes and their help, the engine option table's rows it takes, the option sets the CLI adds
for it (``cli/run_kinds`` declares them), and which program measures it. The CLI builds the
parsers; adding a kind adds its entries here. This module stays light (no numpy, no Rich):
the parser reads it at start.
"""

from __future__ import annotations

from dataclasses import dataclass

from commscope.kinds.benchmarks import DEFAULT_RUN

# What measures a command's runs (``RunCommand.measured_by``).
ENGINE = "commscope-engine"  # over MPI, the request stored before the job starts
TCP_PROGRAM = "commscope-tcp"  # no MPI: a client and a server, a run per socket buffer
LINPACK = "linpack"  # no MPI: one process on this node (or hpcc's HPL with --grid)
WHOLE_PROGRAM = "whole program"  # an MPI program built and run as it is (HPC Challenge)

# The defaults `commscope run` measures, which the commands' help cites.
P2P_OPS = "pingpong,bw,bibw"
COLL_OPS = "barrier,bcast,reduce,allreduce,gather,scatter,allgather,alltoall,ibcast,iallreduce"
COLL_SIZES = "8,64,512,4K,32K,256K,1MiB"
CONTENTION_SIZES = "256K,1MiB,4MiB"
RMA_OPS = "put,get,acc"
# The p2p rows a TCP ping-pong takes too: how long each point is sampled.
SAMPLING = ("warmup", "min_samples", "max_samples", "target_rse", "point_budget_s")
_SCHEDULE = "largest size of the NetPIPE schedule (regular steps, +-perturbation)"
_NETPIPE_SIZES = "[default: the NetPIPE schedule to --max-size]"


@dataclass(frozen=True)
class RunCommand:
    """One ``commscope run NAME``.

    Attributes:
        name: the word after ``commscope run``, stored as the run's benchmark.
        summary: its line in `commscope run --help`.
        description: its --help's first paragraph.
        examples: its --help's examples, a command a line.
        ops: the help of --ops; None: no --ops.
        sizes: the help of --sizes; None: no --sizes.
        max_size: the help of --max-size, the end of its size schedule; None: no --max-size.
        perturbed: its schedule takes --perturbation.
        rows: the benchmarks whose rows of the engine's option table it takes.
        extra_rows: rows it takes beyond those benchmarks'.
        dropped_rows: rows of those benchmarks it leaves out.
        options: the option sets the CLI declares for it, in order (``cli/run_kinds``).
        measured_by: the program that measures it (``ENGINE``, ``TCP_PROGRAM``...).
    """

    name: str
    summary: str
    description: str
    examples: str
    ops: str | None = None
    sizes: str | None = None
    max_size: str | None = None
    perturbed: bool = False
    rows: tuple[str, ...] = ()
    extra_rows: tuple[str, ...] = ()
    dropped_rows: tuple[str, ...] = ()
    options: tuple[str, ...] = ("engine rows",)
    measured_by: str = ENGINE


# In the order `commscope run --help` lists them.
COMMANDS: tuple[RunCommand, ...] = (
    RunCommand(
        DEFAULT_RUN,
        "p2p, loggp, coll, then a report (the default)",
        "Characterise this machine or allocation: point-to-point, LogGP and the default"
        " collective suite, then an HTML report. It also takes every option of 'commscope"
        " run coll' (see its --help).",
        """  commscope run                          the same as 'commscope run all'
  commscope run all --max-size 1MiB --report here.html
  commscope run all --vcluster --sync ring""",
        max_size=_SCHEDULE,
        perturbed=True,
        rows=("p2p", "loggp", "coll"),
        options=("default run rows", "confidence"),
    ),
    RunCommand(
        "p2p",
        "latency and bandwidth of rank pairs (NetPIPE)",
        "Point-to-point latency and bandwidth between two ranks of each pair kind"
        " (docs/reference/p2p.md).",
        """  commscope run p2p --mpi mpich               point-to-point with MPICH
  commscope run p2p --sizes 0,8,1K,1MiB --ops pingpong
  commscope run p2p --ops bw --recv-buffers one,each   one receive buffer, and one per message
  commscope run p2p --vcluster                intra- and inter-node pairs
  commscope run p2p --hostfile hosts --ranks-per-node 2""",
        ops=f"operations, in order [default: {P2P_OPS}]",
        sizes=f"message sizes, e.g. 0,8,1K,1MiB {_NETPIPE_SIZES}",
        max_size=_SCHEDULE,
        perturbed=True,
        rows=("p2p",),
    ),
    RunCommand(
        "loggp",
        "LogGP's L, o_s, o_r, g, G (Netgauge)",
        "LogGP parameters of one pair by Netgauge's PRTT method (docs/reference/loggp.md).",
        """  commscope run loggp --mpi mpich
  commscope run loggp --sizes 0,1K,64K,1MiB""",
        sizes=f"message sizes {_NETPIPE_SIZES}",
        max_size=_SCHEDULE,
        rows=("loggp",),
    ),
    RunCommand(
        "coll",
        "collectives, timed by the MPIPerf method",
        "Collective operations timed by the MPIPerf method of Kurnosov 2012: synchronised"
        " clocks and a window schedule of launches (docs/reference/coll.md).",
        """  commscope run coll --ops alltoall,bcast --sizes 8,1KiB,1MiB --sync ring
  commscope run coll --sync barrier              the naive back-to-back loop
  commscope run coll --np 8 --procs 2,4,8 --ops allreduce   time against process count
  commscope run coll --stop rse:0.05 --max-launches 200""",
        ops="collectives, e.g. alltoall,bcast (all: docs/reference/coll.md)"
        f" [default: {COLL_OPS.replace(',', ', ')}]",
        sizes=f"message sizes [default: {COLL_SIZES}]",
        rows=("coll",),
        options=("engine rows", "confidence"),
    ),
    RunCommand(
        "contention",
        "time as pairs share a channel: t(m, cf)",
        "t(m, cf): how the time of an exchange grows as pairs share a channel, per level"
        " (docs/reference/contention.md).",
        """  commscope run contention --vcluster --sizes 1MiB,4MiB
  commscope run contention --vcluster --idle 0.5   also the first exchange after 0.5 s idle
  commscope run contention --repeats 9 --iterations 20""",
        sizes=f"message sizes [default: {CONTENTION_SIZES}]",
        rows=("contention",),
        options=("levels", "engine rows"),
    ),
    RunCommand(
        "matrix",
        "every node pair at once (mpiGraph); bad nodes",
        "Bandwidth and latency of every ordered node pair, all at once as mpiGraph does;"
        " slow nodes are named and can be drained in Slurm (docs/reference/matrix.md).",
        """  commscope run matrix --vcluster
  commscope run matrix --slurm --nodes 16 --drain    and drain in Slurm each node named slow
  commscope run matrix --hostfile hosts --partners 4 --samples 20""",
        sizes="message sizes of the bandwidth windows [default: 128K]",
        rows=("matrix",),
        options=("pairs", "engine rows", "partners", "drain"),
    ),
    RunCommand(
        "bisection",
        "effective bisection bandwidth (Netgauge)",
        "Effective bisection bandwidth: random perfect matchings of the nodes, each"
        " measured at once, as Netgauge's ebb (docs/reference/matrix.md).",
        """  commscope run bisection --vcluster --repeats 20
  commscope run bisection --hostfile hosts --seed 7""",
        sizes="message sizes of the bandwidth windows [default: 128K]",
        rows=("bisection",),
    ),
    RunCommand(
        "rma",
        "one-sided put, get and accumulate",
        "One-sided communication: put, get and accumulate under fence, lock and PSCW"
        " synchronisation (docs/reference/rma.md).",
        """  commscope run rma --ops put,get --rma-sync fence,lock --check
  commscope run rma --vcluster --sizes 8,1K,1MiB""",
        ops=f"one-sided operations [default: {RMA_OPS}]",
        sizes=f"message sizes [default: {COLL_SIZES}]",
        rows=("p2p", "rma"),
        extra_rows=("check",),
        dropped_rows=("recv_buffers",),
    ),
    RunCommand(
        "mbw",
        "several pairs at once (osu_mbw_mr)",
        "Bandwidth and message rate of k pairs sending at once, as osu_mbw_mr"
        " (docs/reference/mbw.md).",
        """  commscope run mbw --vcluster --pairs-per-step 1,2
  commscope run mbw --max-size 1MiB""",
        sizes="message sizes [default: powers of two to --max-size]",
        max_size="largest size",
        rows=("mbw",),
    ),
    RunCommand(
        "tcp",
        "the TCP network below MPI",
        "The TCP network below MPI: ping-pong over the size schedule and a bidirectional"
        " stream (docs/reference/tcp.md). Takes --vcluster, or --peer or --loopback.",
        """  commscope run tcp --peer node2 --sockbuf default,64K,256K   one run per buffer size
  commscope run tcp --vcluster --tcp-mode both
  commscope run tcp --loopback""",
        sizes=f"message sizes {_NETPIPE_SIZES}",
        max_size=_SCHEDULE,
        perturbed=True,
        extra_rows=SAMPLING,
        options=("sockets", "engine rows"),
        measured_by=TCP_PROGRAM,
    ),
    RunCommand(
        "node",
        "Linpack on this node: P_max, N_1/2",
        "Linpack on this node over core counts and matrix orders: P_max, N_1/2 and the"
        " efficiency against P_peak (docs/reference/node.md).",
        """  commscope run node --cores 1,all
  commscope run node --matrix-order 500,1000,2000 --min-samples 5
  commscope run node --grid 2x2 --nb 192      HPL with Debian's hpcc instead""",
        options=("linpack",),
        measured_by=LINPACK,
    ),
    RunCommand(
        "hpl",
        "HPC Challenge's HPL, one run per grid",
        "HPC Challenge's HPL built with the MPI's mpicc, one run per process grid"
        " (docs/reference/node.md).",
        """  commscope run hpl --vcluster --grid 1x2,2x1 --matrix-order 2000 \\
      --source hpcc_1.5.0.orig.tar.gz
  commscope run hpl --slurm --grid 4x4 --repeats 3""",
        options=("hpl grid",),
        measured_by=WHOLE_PROGRAM,
    ),
)


def named(name: str | None) -> RunCommand | None:
    """The command ``commscope run NAME``; None for a name `commscope run` does not take."""
    return next((c for c in COMMANDS if c.name == name), None)


def measured_by(name: str | None) -> str | None:
    """What measures the runs of ``commscope run NAME`` (or of a stored run of that kind)."""
    command = named(name)
    return None if command is None else command.measured_by
