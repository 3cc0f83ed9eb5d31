"""`run hpl`: HPC Challenge's HPL solved on real hosts, each solve stored as a run.

HPL is built with the chosen MPI's mpicc (:mod:`commscope.measure.hpl`, cached by digest and
MPI), then solves one system per process grid and repeat, here, on named hosts, in a Slurm
allocation or across the virtual cluster (:mod:`commscope.measure.program` launches it).
Each solve is stored once it ended, as a complete run of kind ``hpl`` marked ``measured``
with its hosts and MPI: a solve stopped part way is the only work lost.
"""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commscope.data.store import Store
from commscope.errors import CommscopeError, LaunchError, UsageError
from commscope.jobs import programs, runs
from commscope.jobs import where as where_mod
from commscope.measure import hpl, program
from commscope.measure import mpi as mpi_mod

if TYPE_CHECKING:
    from commscope.measure.launch import Job as Launch


@dataclass(frozen=True)
class HplJob:
    """HPL solves as asked.

    Attributes:
        source: HPC Challenge 1.5.0's source, its tarball or tree (None is refused).
        grid: the process grids as given, ``PxQ[,PxQ...]``; a run each.
        n: the matrix order (HPL's N); nb: the block size (HPL's NB), at most ``n``.
        repeat: solves per grid, each its own run.
        where: where the ranks start (its ``np``, when given, must be every grid's P x Q).
        mpi: the MPI as --mpi names it (None: the default one).
        timeout: seconds a solve may last (None: no limit).
        label: the runs' label; each also gets its grid.
    """

    source: str | None
    grid: str
    n: int
    nb: int
    repeat: int
    where: where_mod.Where
    mpi: str | None = None
    timeout: float | None = None
    label: str | None = None


def run(store_path: str, job: HplJob, note: runs.Note | None = None) -> programs.ProgramRuns:
    """Build HPL with the MPI's mpicc, solve once per grid and repeat, store each as a run.

    ``note`` hears of a solve whose residual check failed. An interrupt or an error while
    solving is raised again with the solves already stored and the grids still to run added
    to its message.
    """
    where_mod.check(job.where)
    grids = hpl.parse_grids(job.grid, job.where.np)
    if not job.source:
        raise UsageError(f"--source: missing; {hpl.SOURCE_HINT}")
    if job.nb > job.n:
        raise UsageError(f"--nb {job.nb}: larger than --matrix-order {job.n}; give NB <= N")
    mpi = mpi_mod.resolve(job.mpi)
    # Hosts are checked before the build; an allocation is made after it (idle nodes wait).
    early = {(p, q): _where(job.where, mpi, p * q) for p, q in grids if not job.where.slurm}
    binary = hpl.build(Path(job.source), mpi.mpicc, mpi.tag)
    most = max(p * q for p, q in grids)
    done: list[programs.ProgramRun] = []
    with _slurm_steps(job.where, mpi, most) as steps, Store.open(store_path) as store:
        places = {g: _where(job.where, mpi, g[0] * g[1], steps) for g in grids} if steps else early
        launches = {g: program.job(mpi, g[0] * g[1], [str(binary)], w) for g, w in places.items()}
        try:
            for (p, q), where in places.items():
                for solve in range(job.repeat):
                    solved = _stored_solve(store, job, mpi, launches[(p, q)], where, p, q, solve)
                    programs.note_failed_check(solved, note)
                    done.append(solved)
        except (KeyboardInterrupt, CommscopeError) as err:
            hpl.add_what_was_lost(err, [r.row() for r in done], grids, job.repeat)
            raise
    return programs.ProgramRuns(tuple(done))


def _where(
    asked: where_mod.Where, mpi: mpi_mod.MPIInstall, nranks: int, steps: Any = None
) -> program.Where:
    from commscope.measure import hosts as hosts_mod

    if steps is not None:
        return program.Where(slurm=steps)
    if asked.vcluster:
        return program.Where(vcluster_ranks_per_node=asked.ranks_per_node or 1)
    if asked.named_hosts:
        placement = hosts_mod.placement_for(
            mpi, asked.hostfile, asked.hosts, asked.ranks_per_node, nranks
        )
        return program.Where(placement=placement)
    return program.Where()


def _hosts(where: program.Where, nranks: int) -> tuple[list[str], dict[str, Any] | None]:
    """The hosts the ranks ran on, in order, and the virtual cluster's rate when there."""
    if where.vcluster_ranks_per_node:
        from commscope.measure import vcluster

        state = vcluster.status()
        if state is None:
            raise LaunchError("no virtual cluster is up; run 'commscope vcluster up' first")
        nodes = [n.name for n in state.nodes[: where.nodes_for(nranks)]]
        return nodes, {"nodes": len(nodes), "rate": state.rate}
    return where.hosts(nranks) or [socket.gethostname()], None


@contextmanager
def _slurm_steps(
    asked: where_mod.Where, mpi: mpi_mod.MPIInstall, most_ranks: int
) -> Iterator[program.SlurmSteps | None]:
    """The solves' srun steps when the run uses Slurm (None when it does not).

    --slurm allocates --nodes (default: enough for the largest grid) x --ranks-per-node
    (default 1); inside an allocation its tasks are spread evenly over its nodes.
    """
    if not where_mod.uses_slurm(asked, asked.launcher):
        yield None
        return
    per_node = asked.ranks_per_node or 1
    nodes = asked.nodes or math.ceil(most_ranks / per_node)
    with where_mod.allocation(asked, mpi, nodes, most_ranks) as (held, part):
        if not asked.slurm and not asked.ranks_per_node:
            per_node = max(1, held.ntasks // max(1, len(held.nodes)))
        yield program.SlurmSteps(part, per_node)


def _stored_solve(
    store: Store,
    job: HplJob,
    mpi: mpi_mod.MPIInstall,
    launch: Launch,
    where: program.Where,
    p: int,
    q: int,
    solve: int,
) -> programs.ProgramRun:
    """Solve once on the ``p`` x ``q`` grid and store it as a complete run."""
    hosts, vc = _hosts(where, p * q)
    label = " ".join(x for x in (job.label, f"{p}x{q}") if x)
    what = {"kind": programs.HPL, "label": label, "grid": f"{p}x{q}", "measured": True}
    measured = {
        "n": job.n,
        "nb": job.nb,
        "hosts": hosts,
        "vcluster": vc,
        "solve": solve + 1,
        **where.to_json(p * q),
    }
    # No --timeout: None, which the launcher's timer waits on for ever.
    data = hpl.solve(launch, job.n, job.nb, p, q, job.timeout, mpi.tag)  # type: ignore[arg-type]
    rid = store.create_run(
        programs.HPL,
        label,
        mpi.tag,
        "srun" if where.slurm else mpi.launcher,
        p * q,
        {"benchmark": programs.HPL, "np": p * q, "what": what, "measured": measured},
    )
    data = {**what, **measured, "mpi": mpi.tag, **data}
    store.set_run_data(rid, programs.HPL, data)
    store.set_run_status(rid, "complete")
    return programs.ProgramRun(rid, "", data)
