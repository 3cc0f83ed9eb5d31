"""The options that choose where `commscope run` starts its ranks, and the request they make."""

from __future__ import annotations

import argparse
from typing import Any

from commscope import limits
from commscope.cli import common
from commscope.jobs import where as where_mod
from commscope.jobs.where import Where
from commscope.measure import hosts as hosts_mod


def add_options(p: Any) -> None:
    """Declare the options that choose the ranks and hosts of a run."""
    g = p.add_argument_group("where ranks run (default: here; in a Slurm allocation: srun over it)")
    common.option(
        g,
        "--np",
        type=common.ranks,
        metavar="N",
        help="ranks [default: a core each; nodes x ranks per node]",
    )
    g.add_argument(
        "--vcluster",
        action="store_true",
        help="on the virtual cluster (see commscope vcluster)",
    )
    common.option(
        g,
        "--hostfile",
        metavar="FILE",
        help="hosts (NAME, NAME slots=N or NAME:N), by ssh",
    )
    common.option(g, "--hosts", metavar="NAME[:SLOTS],...", help="hosts, as a list")
    g.add_argument(
        "--slurm",
        action="store_true",
        help="allocate --nodes x --ranks-per-node in Slurm; salloc's --partition,"
        " --reservation, --account, --qos, --constraint, --nodelist, --exclusive, --time;"
        f" --slurm-wait S: wait S s at most [default: {where_mod.SLURM_WAIT_S}]",
    )
    g.add_argument(
        "--nodes",
        "-N",
        type=common.whole(1, limits.MAX_MODEL_NODES),
        metavar="N",
        help="--slurm: nodes [default: 2; hpl: largest grid's]",
    )
    # salloc's own options, named in --slurm's help (one screen) and docs/reference/slurm.md.
    for flag in ("--partition", "--reservation", "--account", "--qos", "--constraint"):
        g.add_argument(flag, metavar="NAME", help=argparse.SUPPRESS)
    g.add_argument("--nodelist", metavar="NODES", help=argparse.SUPPRESS)
    g.add_argument("--time", metavar="TIME", help=argparse.SUPPRESS)
    g.add_argument("--exclusive", action="store_true", help=argparse.SUPPRESS)
    g.add_argument(
        "--slurm-wait",
        dest="slurm_wait",
        type=common.whole(1, int(limits.MAX_COMMAND_S)),
        metavar="S",
        help=argparse.SUPPRESS,
    )
    g.add_argument(
        "--ranks-per-node",
        dest="ranks_per_node",
        type=common.whole(1, hosts_mod.MAX_SLOTS),
        default=None,
        metavar="N",
        help="ranks on each node [default: its slots, else its cores; --vcluster: 2; --slurm: 1]",
    )


def chosen(args: argparse.Namespace) -> list[str]:
    """The hosts or allocation options given (--vcluster is not one: TCP runs take it)."""
    return [flag for flag in _given(args) if flag != "--vcluster"]


def _given(args: argparse.Namespace) -> list[str]:
    flags = [
        ("--hostfile", args.hostfile),
        ("--hosts", args.hosts),
        ("--slurm", args.slurm),
        ("--vcluster", args.vcluster),
    ]
    return [flag for flag, value in flags if value]


def where(args: argparse.Namespace) -> Where:
    """Where the options ask the ranks to start."""
    return Where(
        np=args.np,
        vcluster=bool(args.vcluster),
        hostfile=args.hostfile,
        hosts=args.hosts,
        slurm=bool(args.slurm),
        nodes=args.nodes,
        partition=args.partition,
        ranks_per_node=args.ranks_per_node,
        launcher=getattr(args, "launcher", "auto"),
        reservation=args.reservation,
        account=args.account,
        qos=args.qos,
        constraint=args.constraint,
        nodelist=args.nodelist,
        time=args.time,
        exclusive=args.exclusive,
        slurm_wait=args.slurm_wait,
    )
