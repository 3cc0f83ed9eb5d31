"""Where a run starts its ranks: this machine, named hosts, a Slurm allocation, the vcluster.

:class:`Where` is what the user chose; :func:`placed` turns it into the request's hosts or
allocation (and holds an allocation while the run measures); :func:`resumed` gives a stored
request a live allocation on the nodes it ran on, after reading their Slurm states.

A Slurm run's request keeps, in its ``slurm`` part, the allocation (job, nodes, tasks, whether
commscope made it, srun's MPI plugin) and where it was asked for: salloc's partition,
reservation, account, QoS, constraint, node list, time, exclusive and the wait, as given
(inside an allocation: what Slurm's environment says of it). So a stored run says where it
ran, and a check or a resume asks for the same again.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from commscope.data.request import RunRequest
from commscope.errors import LaunchError, UsageError
from commscope.measure import hosts as hosts_mod
from commscope.measure import slurm, slurm_nodes
from commscope.measure.mpi import MPIInstall

SLURM_WAIT_S = slurm.ALLOC_TIMEOUT_S  # how long --slurm waits for the grant unless told


@dataclass(frozen=True)
class Where:
    """Where the user asked a run's ranks to start (every field unset: here, or the allocation).

    Attributes:
        np: ranks, when given.
        vcluster: on the virtual cluster.
        hostfile: a hostfile's path; hosts: "NAME[:SLOTS],..." (started by ssh).
        slurm: allocate ``nodes`` x ``ranks_per_node`` now, with salloc's ``partition``,
            ``reservation``, ``account``, ``qos``, ``constraint``, ``nodelist``, ``time``
            and ``exclusive``, waiting at most ``slurm_wait`` seconds for the grant.
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
    reservation: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    nodelist: str | None = None
    time: str | None = None
    exclusive: bool = False
    slurm_wait: int | None = None

    def slurm_options(self) -> list[tuple[str, str, str]]:
        """The allocation's options given: (request key, flag, value as typed)."""
        given = [(key, flag, getattr(self, key)) for key, flag in slurm.NAMED.items()]
        given.append(("exclusive", "--exclusive", "" if self.exclusive else None))
        given.append(("wait_s", "--slurm-wait", self.slurm_wait))
        return [(key, flag, str(value)) for key, flag, value in given if value is not None]

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
    for key, flag, value in where.slurm_options():
        if not where.slurm:
            typed = f"{flag} {value}".strip()
            raise UsageError(
                f"{typed}: only with --slurm (which asks Slurm for an allocation); inside"
                " one, Slurm placed the run already"
            )
        if key in slurm.NAMED:
            slurm.check_option(key, value)
    if where.slurm:
        slurm.require_installed("--slurm")
        listed = _listed(where)
        if where.nodes and where.nodes < listed:
            raise UsageError(
                f"--nodes {where.nodes} with --nodelist {where.nodelist} ({listed} nodes):"
                f" give --nodes {listed} or more, or fewer nodes in the list"
            )
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
    with allocation(where, mpi, where.nodes or 2, where.np or 0) as (held, part):
        request = request.replace(
            launcher="srun", np=where.np or held.ntasks or request.np, slurm=part
        )
        _check_root(root, request)
        yield request


def _listed(where: Where) -> int:
    """How many nodes --nodelist names (0 without one)."""
    return len(slurm.hostnames(where.nodelist)) if where.nodelist else 0


def slurm_request(where: Where, nodes: int) -> slurm.AllocationRequest:
    """What --slurm asks salloc for: --nodes, else --nodelist's count, else ``nodes``."""
    return slurm.AllocationRequest(
        nodes=where.nodes or _listed(where) or nodes,
        ntasks_per_node=where.ranks_per_node or 1,
        partition=where.partition,
        reservation=where.reservation,
        account=where.account,
        qos=where.qos,
        constraint=where.constraint,
        nodelist=where.nodelist,
        time=where.time,
        exclusive=where.exclusive,
        wait_s=where.slurm_wait or slurm.ALLOC_TIMEOUT_S,
    )


@contextmanager
def allocation(
    where: Where, mpi: MPIInstall, nodes: int, ntasks: int
) -> Iterator[tuple[slurm.Allocation, dict[str, Any]]]:
    """The allocation a run's srun steps use, and the request's ``slurm`` part for it.

    With --slurm, one of ``nodes`` (unless --nodes or --nodelist says) x --ranks-per-node
    made now and released on exit; else
    the allocation this process is in (``ntasks`` when Slurm's environment does not say).
    The part holds the allocation, srun's plugin for ``mpi`` and where it was asked for.
    """
    plugin = slurm.mpi_plugin(mpi)
    if where.slurm:
        asked = slurm_request(where, nodes)
        held = slurm.allocate(asked)
        options = asked.to_json()
    else:
        held = slurm.current() or slurm.Allocation("", (), ntasks)
        options = slurm.current_options()
    try:
        yield held, {**options, **held.to_json(), "plugin": plugin}
    finally:
        slurm.release(held)


def _check_root(root: int, request: RunRequest) -> None:
    if root >= request.np:
        raise UsageError(f"--root {root}: not a rank")


@contextmanager
def resumed(
    request: RunRequest, what: str = "--resume", allow_subset: bool | None = None
) -> Iterator[RunRequest]:
    """The stored ``request`` with a live allocation on its nodes when it ran under Slurm.

    A Slurm run is measured again on the nodes it ran on (its ``slurm`` part's ``nodes``):
    inside an allocation, which must hold them (srun's steps are kept to them); outside one,
    in a new allocation of exactly those nodes, asked for as the run's was (partition,
    reservation, account, QoS, constraint, time, exclusive, wait).

    Before anything is allocated each node's Slurm state is read (:func:`unavailable`). A
    node drained, down, failed, in a reservation the run does not ask for, or missing from
    this allocation ends it in a LaunchError naming the node and its state (``what``: what
    the user typed). With ``allow_subset`` the others are measured instead, with the ranks
    per node kept, and the part's ``left_out_nodes`` names each node left out and why;
    None: the command offers no such choice, and its message does not name one.
    """
    stored = request.slurm
    if not stored:
        yield request
        return
    wanted = [str(n) for n in stored.get("nodes") or []]
    current = slurm.current()
    if not wanted:  # a run that did not record its nodes: the allocation it is in
        if current is None:
            raise UsageError(
                f"{what}: the run's Slurm nodes were not recorded; measure it inside an"
                " allocation (salloc ... commscope ...)"
            )
        yield request.replace(slurm={**stored, **current.to_json()})
        return
    own = current_reservation() if current is not None else stored.get("reservation")
    left_out = unavailable(wanted, own, current)
    kept = [n for n in wanted if n not in left_out]
    if left_out and not (allow_subset and kept):
        raise LaunchError(_unavailable_text(what, left_out, allow_subset, bool(kept)))
    np = request.np
    if left_out:
        per_node, rest = divmod(np, len(wanted))
        if rest or not per_node:
            raise UsageError(
                f"--allow-subset: the run's {np} ranks are not spread evenly over its"
                f" {len(wanted)} nodes, so no subset keeps their placement; measure all of"
                f" them when {', '.join(left_out)} is back"
            )
        np = per_node * len(kept)
    if current is not None:
        held = current
        part = {**dict.fromkeys(slurm.NAMED), **slurm.current_options(), **held.to_json()}
        if set(held.nodes) != set(kept):  # a larger allocation: the steps go where the run ran
            part["step_nodes"] = kept
    else:
        asked = slurm.AllocationRequest.again(stored, kept, math.ceil(np / len(kept)))
        held = slurm.allocate(asked, what, "the wait its runs were asked with")
        part = {**asked.to_json(), **held.to_json()}
    part["plugin"] = stored.get("plugin")
    if left_out:
        part["left_out_nodes"] = left_out
    try:
        yield request.replace(np=np, slurm=part)
    finally:
        slurm.release(held)


def on_hosts(request: RunRequest, hosts: Sequence[str]) -> RunRequest:
    """A Slurm ``request`` kept to the nodes its ranks ran on (``hosts``, as they named them).

    A run inside a larger allocation records all its nodes; measured again, it asks only
    for those its ranks used. A host matches a node of the same name or its short form
    (``n1.example`` -> ``n1``); a request none of whose nodes match is left as it is.
    """
    part = request.slurm
    if not part or not hosts:
        return request
    names = set(hosts) | {h.split(".", 1)[0] for h in hosts}
    nodes = [n for n in part.get("nodes") or [] if n in names]
    return request.replace(slurm={**part, "nodes": nodes}) if nodes else request


def current_reservation() -> str | None:
    """The reservation of the allocation this process runs in (None: none)."""
    found = slurm.current_options().get("reservation")
    return str(found) if found else None


def unavailable(
    nodes: Sequence[str], reservation: str | None, current: slurm.Allocation | None
) -> dict[str, str]:
    """Each of ``nodes`` Slurm would start no job of ours on now, and why (its state).

    Read from ``sinfo`` (drained, draining, down, failed...) and ``scontrol show
    reservation`` (active reservations other than ``reservation``); inside an allocation
    (``current``) a node it does not hold is named too.

    Raises:
        LaunchError: sinfo or scontrol failed.
    """
    known = slurm_nodes.nodes()
    holding: dict[str, list[slurm_nodes.Reservation]] = {}
    for held in slurm_nodes.reservations():
        if held.active and held.nodes:
            for name in slurm.hostnames(held.nodes):
                holding.setdefault(name, []).append(held)
    out = {}
    for node in nodes:
        state = slurm_nodes.find(node, known)
        if state is None:
            out[node] = "not a node this Slurm knows (sinfo -N)"
            continue
        why = slurm_nodes.closed(state, holding.get(state.name, []), reservation)
        if why is None and current is not None and node not in current.nodes:
            why = f"{state.state}, not in this allocation (job {current.job}:"
            why += f" {','.join(current.nodes)})"
        if why:
            out[node] = why
    return out


def _unavailable_text(
    what: str, left_out: dict[str, str], allow_subset: bool | None, any_left: bool
) -> str:
    named = "; ".join(f"{node} is {why}" for node, why in left_out.items())
    if allow_subset is False and any_left:
        fix = "measure when it is back (sinfo -N), or give --allow-subset to judge the rest"
    elif any_left:
        fix = "measure when it is back (sinfo -N)"
    else:
        fix = "no node of the run is left to measure; measure when they are back (sinfo -N)"
    return f"{what}: {named}; {fix}"


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
