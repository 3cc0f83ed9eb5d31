"""Where `commscope run` starts its ranks: this machine, named hosts, or a Slurm allocation."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from commscope import limits
from commscope.cli import common
from commscope.data.request import RunRequest
from commscope.errors import UsageError
from commscope.measure import hosts as hosts_mod
from commscope.measure import slurm
from commscope.measure.mpi import MPIInstall


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
        help="allocate --nodes x --ranks-per-node in Slurm",
    )
    g.add_argument(
        "--nodes",
        "-N",
        type=common.whole(1, limits.MAX_MODEL_NODES),
        metavar="N",
        help="--slurm: nodes [default: 2; hpl: largest grid's]",
    )
    common.option(g, "--partition", metavar="NAME", help="--slurm: the partition")
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


def check(args: argparse.Namespace) -> None:
    """Refuse contradictory choices, and --slurm without Slurm, before anything runs."""
    given = _given(args)
    if len(given) > 1:
        raise UsageError(f"{given[0]} and {given[1]}: choose one place to run")
    if args.nodes and not args.slurm:
        raise UsageError(
            f"--nodes {args.nodes}: only with --slurm (a hostfile run takes its "
            "hosts' count; --vcluster its nodes)"
        )
    if args.partition and not args.slurm:
        raise UsageError(f"--partition {args.partition}: only with --slurm")
    if args.slurm:
        slurm.require_installed("--slurm")
    if args.hostfile or args.hosts:  # bad hosts fail before any MPI is looked for
        hosts_mod.named_hosts(args.hostfile, args.hosts)
    if (args.hostfile or args.hosts) and args.launcher == "srun":
        raise UsageError(
            "--launcher srun: srun takes its hosts from Slurm; drop --hostfile/"
            "--hosts or use --launcher mpirun"
        )


def uses_slurm(args: argparse.Namespace, launcher: str) -> bool:
    """True when the run's ranks start with srun (``launcher``: the run's --launcher)."""
    if args.slurm or launcher == "srun":
        return True
    return (
        launcher == "auto"
        and bool(os.environ.get("SLURM_JOB_ID"))
        and not (args.hostfile or args.hosts or args.vcluster)
    )


@contextmanager
def placed(
    args: argparse.Namespace,
    mpi: MPIInstall,
    request: RunRequest,
) -> Iterator[RunRequest]:
    """Fill in where ``request`` runs (hosts, allocation, rank count) and hold it meanwhile.

    Yields the request ready to store; an allocation made for it is released on exit.
    """
    if args.hostfile or args.hosts:
        placement = hosts_mod.placement_for(
            mpi, args.hostfile, args.hosts, args.ranks_per_node, args.np
        )
        request = request.replace(placement=placement.to_json(), np=placement.nranks)
        _check_root(args, request)
        yield request
        return
    if not uses_slurm(args, request.launcher):
        yield request
        return
    with allocation(args, mpi, args.nodes or 2, args.np or 0) as (held, plugin):
        request = request.replace(
            launcher="srun",
            np=args.np or held.ntasks or request.np,
            slurm={**held.to_json(), "plugin": plugin},
        )
        _check_root(args, request)
        yield request


@contextmanager
def allocation(
    args: argparse.Namespace, mpi: MPIInstall, nodes: int, ntasks: int
) -> Iterator[tuple[slurm.Allocation, str]]:
    """The allocation a run's srun steps use, and srun's plugin for ``mpi``.

    With --slurm, one of ``nodes`` x --ranks-per-node made now and released on exit; else
    the allocation this process is in (``ntasks`` when Slurm's environment does not say).
    """
    plugin = slurm.mpi_plugin(mpi)
    if args.slurm:
        held = slurm.allocate(nodes, args.ranks_per_node or 1, args.partition)
    else:
        held = slurm.current() or slurm.Allocation("", (), ntasks)
    try:
        yield held, plugin
    finally:
        slurm.release(held)


def _check_root(args: argparse.Namespace, request: RunRequest) -> None:
    common.require(args.root < request.np, f"--root {args.root}: not a rank")


@contextmanager
def resumed(request: RunRequest) -> Iterator[RunRequest]:
    """The stored ``request`` with a live allocation when it ran under Slurm.

    A run whose allocation commscope made gets a new one of the same shape; a run made
    inside an allocation uses the one this process is in.
    """
    stored = request.slurm
    if not stored:
        yield request
        return
    current = slurm.current()
    if current is not None:
        allocation = current
    elif stored.get("own"):
        nodes = max(1, len(stored["nodes"]))
        allocation = slurm.allocate(nodes, max(1, stored["ntasks"] // nodes))
    else:
        raise UsageError(
            "--resume: this run ran inside a Slurm allocation; resume it inside "
            "one (salloc ... commscope run --resume ...)"
        )
    try:
        yield request.replace(slurm={**stored, **allocation.to_json()})
    finally:
        slurm.release(allocation)


def host_count(request: RunRequest) -> int:
    """How many hosts the ranks of ``request`` span (1 for this machine alone)."""
    if request.vcluster:
        return int(request.vcluster["nodes"])
    if request.placement:
        return len(request.placement["hosts"])
    if request.slurm:
        return max(len(request.slurm["nodes"]), 1)
    return 1


def one_sided_component(request: RunRequest, mpi: MPIInstall) -> RunRequest:
    """Open MPI one-sided runs across hosts use osc/ucx unless the run names a component.

    Open MPI 4.1 has no one-sided path over TCP of its own (osc/rdma wants RDMA hardware,
    osc/pt2pt is gone): MPI_Win_allocate fails across nodes without UCX. The choice is
    recorded with the run's other MCA parameters.
    """
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    mca = request.mca or {}
    if (
        not kinds.benchmark(request.benchmark).one_sided
        or mpi.family != "openmpi"
        or "osc" in mca
        or host_count(request) < 2
    ):
        return request
    return request.replace(mca={**mca, "osc": "ucx"})
