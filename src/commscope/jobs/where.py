"""Where a run starts its ranks: this machine, named hosts, a Slurm allocation, the vcluster.

:class:`Where` is what the user chose; :func:`placed` turns it into the request's hosts or
allocation (and holds an allocation while the run measures); :func:`resumed` gives a stored
request a live allocation of the same shape.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from commscope.data.request import RunRequest
from commscope.errors import UsageError
from commscope.measure import hosts as hosts_mod
from commscope.measure import slurm
from commscope.measure.mpi import MPIInstall

RESUME_OUTSIDE = (
    "--resume: this run ran inside a Slurm allocation; resume it inside "
    "one (salloc ... commscope run --resume ...)"
)


@dataclass(frozen=True)
class Where:
    """Where the user asked a run's ranks to start (every field unset: here, or the allocation).

    Attributes:
        np: ranks, when given.
        vcluster: on the virtual cluster.
        hostfile: a hostfile's path; hosts: "NAME[:SLOTS],..." (started by ssh).
        slurm: allocate ``nodes`` x ``ranks_per_node`` in ``partition`` now.
        launcher: the run's --launcher ("auto", "mpirun", "srun").
    """

    np: int | None = None
    vcluster: bool = False
    hostfile: str | None = None
    hosts: str | None = None
    slurm: bool = False
    nodes: int | None = None
    partition: str | None = None
    ranks_per_node: int | None = None
    launcher: str = "auto"

    def given(self) -> list[str]:
        """The options that chose a place, as the user typed them."""
        flags = [
            ("--hostfile", self.hostfile),
            ("--hosts", self.hosts),
            ("--slurm", self.slurm),
            ("--vcluster", self.vcluster),
        ]
        return [flag for flag, value in flags if value]

    def chosen(self) -> list[str]:
        """The hosts or allocation options given (--vcluster is not one: TCP runs take it)."""
        return [flag for flag in self.given() if flag != "--vcluster"]

    @property
    def named_hosts(self) -> bool:
        """True when a hostfile or a host list names the hosts."""
        return bool(self.hostfile or self.hosts)


def check(where: Where) -> None:
    """Refuse contradictory choices, and --slurm without Slurm, before anything runs."""
    given = where.given()
    if len(given) > 1:
        raise UsageError(f"{given[0]} and {given[1]}: choose one place to run")
    if where.nodes and not where.slurm:
        raise UsageError(
            f"--nodes {where.nodes}: only with --slurm (a hostfile run takes its "
            "hosts' count; --vcluster its nodes)"
        )
    if where.partition and not where.slurm:
        raise UsageError(f"--partition {where.partition}: only with --slurm")
    if where.slurm:
        slurm.require_installed("--slurm")
    if where.named_hosts:  # bad hosts fail before any MPI is looked for
        hosts_mod.named_hosts(where.hostfile, where.hosts)
    if where.named_hosts and where.launcher == "srun":
        raise UsageError(
            "--launcher srun: srun takes its hosts from Slurm; drop --hostfile/"
            "--hosts or use --launcher mpirun"
        )


def uses_slurm(where: Where, launcher: str) -> bool:
    """True when the run's ranks start with srun (``launcher``: the request's launcher)."""
    if where.slurm or launcher == "srun":
        return True
    return (
        launcher == "auto"
        and bool(os.environ.get("SLURM_JOB_ID"))
        and not (where.named_hosts or where.vcluster)
    )


@contextmanager
def placed(
    where: Where, mpi: MPIInstall, request: RunRequest, root: int = 0
) -> Iterator[RunRequest]:
    """Fill in where ``request`` runs (hosts, allocation, rank count) and hold it meanwhile.

    Yields the request ready to store; an allocation made for it is released on exit.
    ``root``: the collectives' root rank, checked against the rank count found.
    """
    if where.named_hosts:
        placement = hosts_mod.placement_for(
            mpi, where.hostfile, where.hosts, where.ranks_per_node, where.np
        )
        request = request.replace(placement=placement.to_json(), np=placement.nranks)
        _check_root(root, request)
        yield request
        return
    if not uses_slurm(where, request.launcher):
        yield request
        return
    with allocation(where, mpi, where.nodes or 2, where.np or 0) as (held, plugin):
        request = request.replace(
            launcher="srun",
            np=where.np or held.ntasks or request.np,
            slurm={**held.to_json(), "plugin": plugin},
        )
        _check_root(root, request)
        yield request


@contextmanager
def allocation(
    where: Where, mpi: MPIInstall, nodes: int, ntasks: int
) -> Iterator[tuple[slurm.Allocation, str]]:
    """The allocation a run's srun steps use, and srun's plugin for ``mpi``.

    With --slurm, one of ``nodes`` x --ranks-per-node made now and released on exit; else
    the allocation this process is in (``ntasks`` when Slurm's environment does not say).
    """
    plugin = slurm.mpi_plugin(mpi)
    if where.slurm:
        held = slurm.allocate(nodes, where.ranks_per_node or 1, where.partition)
    else:
        held = slurm.current() or slurm.Allocation("", (), ntasks)
    try:
        yield held, plugin
    finally:
        slurm.release(held)


def _check_root(root: int, request: RunRequest) -> None:
    if root >= request.np:
        raise UsageError(f"--root {root}: not a rank")


@contextmanager
def resumed(request: RunRequest, outside: str = RESUME_OUTSIDE) -> Iterator[RunRequest]:
    """The stored ``request`` with a live allocation when it ran under Slurm.

    A run whose allocation commscope made gets a new one of the same shape; a run made
    inside an allocation uses the one this process is in, and outside one is refused with
    ``outside``, a message naming what the user typed.
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
        raise UsageError(outside)
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
