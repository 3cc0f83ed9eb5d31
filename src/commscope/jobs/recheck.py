"""Measure a node commscope drained again, through a maintenance reservation, before returning it.

Slurm starts no job on a drained node, so the node is measured where only the recheck can
reach it: a maintenance reservation ``commscope-recheck-NODE`` (``Flags=MAINT,IGNORE_JOBS``,
for this user) of the node and three healthy partners (idle, in no active reservation, the
next ones after it in Slurm's order, as the matrix's confirmation picks partners) is
created; the node is resumed inside it; the all-pairs matrix of those nodes is measured
through the reservation (``salloc --reservation --nodelist``, waiting at most
:attr:`RecheckJob.wait_s` for the grant), with its confirmation rounds, as the run that
drained the node measured it (its MPI, sizes and samples, when the store holds that run);
and the node is judged as a matrix run judges a node before draining it
(:mod:`commscope.analysis.recheck`). Repaired: it stays resumed. Still slow: drained again
with a reason naming the new figures and run.

Whatever ends a recheck before a verdict (Slurm refusing or not granting the allocation in
time, a failed launch, Ctrl-C, SIGTERM), the node is drained again with the reason it had,
and the reservation is deleted in every case, so a recheck never returns an unmeasured node
to service and never leaves a reservation behind (a recheck killed by SIGKILL leaves one,
which ends after its duration; the next recheck of that node names it).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from commscope.analysis import recheck as recheck_analysis
from commscope.analysis.confirm import PARTNERS
from commscope.data.request import EngineOptions, RunRequest
from commscope.errors import CommscopeError, LaunchError
from commscope.jobs import runs
from commscope.jobs import where as where_mod
from commscope.measure import slurm_nodes
from commscope.measure.slurm_nodes import NodeState

log = logging.getLogger(__name__)
RESERVATION_PREFIX = "commscope-recheck-"
# With two partners the confirmation has no pair of partners free to measure beside the node
# (each round's ranks all send or receive already), so it compares with the first pass's
# median, which a slow node's links make on 3 nodes: measured on the virtual cluster, a node
# at a quarter of its partners' rate was called transient. Three give reference pairs.
MIN_PARTNERS = PARTNERS
SPARE_MINUTES = 5  # the reservation outlasts the longest recheck by this much
_RUN = re.compile(r"\brun (\d+)$")  # a commscope drain reason ends with the run that drained


@dataclass(frozen=True)
class RecheckJob:
    """How ``undrain`` rechecks: the store the measurement goes to, the allocation's wait.

    Attributes:
        store: the store's path (the recheck is a run of its own there).
        wait_s: the longest Slurm may take to grant the reservation's allocation.
    """

    store: str
    wait_s: int = where_mod.SLURM_WAIT_S


@dataclass(frozen=True)
class Plan:
    """What rechecking one node does.

    Attributes:
        node: the drained node (Slurm's name); was: the reason it is drained for.
        partners: the healthy nodes measured with it.
        reservation: the maintenance reservation's name; minutes: its duration.
        request: the matrix measured; measured_as: where that request comes from.
    """

    node: str
    was: str
    partners: tuple[str, ...]
    reservation: str
    minutes: int
    request: RunRequest
    measured_as: str

    @property
    def nodes(self) -> list[str]:
        """The reservation's nodes: the node, then its partners."""
        return [self.node, *self.partners]

    def commands(self, user: str) -> list[list[str]]:
        """The scontrol commands around the measurement, in order."""
        return [
            slurm_nodes.reserve_argv(self.reservation, self.nodes, self.minutes, user),
            slurm_nodes.resume_argv(self.node),
            slurm_nodes.unreserve_argv(self.reservation),
        ]


@dataclass(frozen=True)
class Rechecked:
    """A node measured again: the run and the verdict (the node is drained again if slow)."""

    run_id: int
    verdict: recheck_analysis.Verdict


def partners(node: str, known: dict[str, NodeState], held: set[str], count: int) -> list[str]:
    """Up to ``count`` healthy partners of ``node``: the next idle nodes after it, cyclically.

    ``held``: nodes in an active reservation (never partners). A node running jobs is not
    one: the allocation would wait for its jobs to end.
    """
    names = list(known)
    start = names.index(node)
    ring = [names[(start + k) % len(names)] for k in range(1, len(names))]
    return [n for n in ring if known[n].state == "idle" and n not in held][:count]


def request_for(store_path: str, reason: str) -> tuple[RunRequest, str]:
    """The matrix request a recheck measures, and where it comes from.

    The run that drained the node (named at the end of its reason), as it was asked (its
    MPI, sizes, samples), placed anew; without it in the store, the matrix's defaults.
    """
    from commscope.data.store import Store

    found = _RUN.search(reason)
    if found:
        try:
            with Store.open(store_path, write=False) as store:
                info = store.get_run(int(found.group(1)))
        except CommscopeError:
            info = None
        stored = RunRequest.from_json(info.request) if info is not None else None
        if stored is not None and _drains(stored.benchmark):
            assert stored.engine is not None  # a matrix run is an engine run
            engine = stored.engine.replace(matrix_plan=None, matrix_prefix=None)
            placed = stored.replace(
                engine=engine, launcher="auto", slurm=None, vcluster=None, placement=None
            )
            return placed, f"as run {found.group(1)} measured it"
    return RunRequest("matrix", np=2, engine=EngineOptions(ops="matrix")), "the matrix's defaults"


def plan(target: NodeState, known: dict[str, NodeState], held: set[str], job: RecheckJob) -> Plan:
    """How ``target`` is rechecked.

    Raises:
        LaunchError: fewer than :data:`MIN_PARTNERS` healthy partners.
    """
    found = partners(target.name, known, held, PARTNERS)
    if len(found) < MIN_PARTNERS:
        raise LaunchError(
            f"rechecking {target.name}: {len(found)} idle node{'s' if len(found) != 1 else ''}"
            f" outside reservations to measure it with ({', '.join(found) or 'none'}); a"
            f" recheck needs {MIN_PARTNERS}: try again when nodes are free, or give"
            " --no-recheck for a node known to be fixed"
        )
    request, measured_as = request_for(job.store, target.reason)
    minutes = SPARE_MINUTES + math.ceil((job.wait_s + 3 * request.timeout_s) / 60)
    name = RESERVATION_PREFIX + target.name
    return Plan(target.name, target.reason, tuple(found), name, minutes, request, measured_as)


def held_nodes() -> set[str]:
    """The nodes of Slurm's active reservations.

    Raises:
        LaunchError: scontrol failed.
    """
    from commscope.measure import slurm

    out: set[str] = set()
    for r in slurm_nodes.reservations():
        if r.active and r.nodes:
            out.update(slurm.hostnames(r.nodes))
    return out


def recheck(p: Plan, job: RecheckJob, note: runs.Note | None = None) -> Rechecked:
    """Measure ``p.node`` in its reservation; drain it again when still slow.

    A reservation that cannot be deleted after the verdict is logged (the verdict stands).

    Raises:
        CommscopeError: the recheck could not measure (the node is drained as it was).
    """
    done: list[Rechecked] = []  # filled inside the reservation, before it is deleted
    try:
        _measure(p, job, note, done)
    except CommscopeError as err:
        if not done:
            raise
        log.warning("%s", err.one_line())
    return done[0]


def _measure(p: Plan, job: RecheckJob, note: runs.Note | None, done: list[Rechecked]) -> None:
    """The recheck itself: reserved, resumed, measured, judged, drained again if slow."""
    with reserved(p):
        where = where_mod.Where(
            slurm=True,
            nodes=len(p.nodes),
            nodelist=",".join(p.nodes),
            reservation=p.reservation,
            slurm_wait=job.wait_s,
        )
        where_mod.check(where)
        run = runs.RunJob(
            p.request, where, label=f"recheck {p.node}", confirm_ops=recheck_analysis.OPS
        )
        outcome = runs.start(job.store, run, note=note)
        verdict = judged(job.store, outcome.run_id, p.node)
        if not verdict.judged:
            raise LaunchError(
                f"recheck run {outcome.run_id} measured {p.node}'s bandwidth with none of its"
                f" partners ({', '.join(p.partners)}); see 'commscope show {outcome.run_id}'"
            )
        if verdict.slow:
            slurm_nodes.drain(p.node, verdict.reason)
        done.append(Rechecked(outcome.run_id, verdict))


def judged(store_path: str, run_id: int, node: str) -> recheck_analysis.Verdict:
    """The verdict of stored recheck run ``run_id`` on ``node``, from its bandwidth alone.

    Its latency matrices are left out, as a drain leaves them out: on shared cores they name
    links whose ends would then not count as healthy partners.
    """
    from commscope.analysis import confirm
    from commscope.analysis import matrix as matrix_analysis
    from commscope.data.run_data import read_run
    from commscope.data.store import Store

    with Store.open(store_path, write=False) as store:
        run = read_run(store, run_id)
    points = run.family("paired")
    if not points:
        return recheck_analysis.judge([], None, run_id, node)
    names = matrix_analysis.rank_nodes(run.info.header, points)
    found = matrix_analysis.matrices(points, names)
    matrices = [m for m in found if m.op in recheck_analysis.OPS]
    again = [p for p in points if confirm.round_of(p.pair)]
    confirmed = confirm.judge(matrices, again, names) if again else None
    return recheck_analysis.judge(matrices, confirmed, run_id, node)


@contextmanager
def reserved(p: Plan) -> Iterator[None]:
    """``p.node`` resumed inside its maintenance reservation while the block runs.

    The reservation is deleted on the way out, however the block ends. When the block
    raises (no verdict), the node is drained again with the reason it had first.
    """
    slurm_nodes.reserve(p.reservation, p.nodes, p.minutes)
    failed: BaseException | None = None
    try:
        slurm_nodes.resume(p.node)
        yield
    except BaseException as err:  # Ctrl-C and SIGTERM too: never an unmeasured node back
        failed = err
        _drain_back(p)
        raise
    finally:
        try:
            slurm_nodes.unreserve(p.reservation)
        except CommscopeError as err:
            if failed is None:
                raise
            log.warning("%s", err.one_line())  # the first error is the one to report


def _drain_back(p: Plan) -> None:
    """Drain ``p.node`` again with its old reason; a refusal is noted, not raised."""
    try:
        slurm_nodes.drain(p.node, p.was)
    except CommscopeError as err:
        log.warning(
            "%s; %s may be in service unmeasured: drain it ('%s')",
            err.one_line(),
            p.node,
            " ".join(slurm_nodes.drain_argv(p.node, p.was)),
        )


def describe(p: Plan) -> Sequence[str]:
    """What rechecking ``p.node`` will do, one line a step (for ``--dry-run``)."""
    return (
        f"reserve {', '.join(p.nodes)} as {p.reservation} (maintenance, {p.minutes} min at most)",
        f"resume {p.node} into it and measure the matrix with {', '.join(p.partners)}"
        f" ({p.measured_as}) and its confirmation",
        f"return {p.node} if it is not slow, else drain it again with what was measured;"
        f" delete {p.reservation}",
    )


def _drains(benchmark: str) -> bool:
    """True for a benchmark whose runs drain nodes (the matrix): asked of its kind."""
    from commscope import kinds  # every kind's module: not at the command line's start

    return kinds.benchmark(benchmark).drains
