"""Whole MPI programs (such as HPL) started here, on named hosts, in Slurm or the virtual cluster.

The engine's runner streams records; a whole program instead leaves files in its working
directory, so this module only builds its job, runs it in that directory with the launcher's
timeout and process-group kill, and hands back what it printed and how long it took. Rank 0
reads its input and writes its output in the working directory: on real hosts that directory
and the program must be on a file system every host sees (the virtual cluster's nodes share
this machine's).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commscope.errors import UsageError
from commscope.measure import launch
from commscope.measure.mpi import MPIInstall


@dataclass(frozen=True)
class SlurmSteps:
    """Steps started with srun in a Slurm allocation.

    Attributes:
        allocation: the allocation as stored with a run (job, nodes, ntasks, own) and srun's
            MPI ``plugin``.
        ranks_per_node: ranks on each of the allocation's first nodes.
    """

    allocation: dict[str, Any]
    ranks_per_node: int


@dataclass(frozen=True)
class Where:
    """Where the ranks run: first nodes of the virtual cluster or an allocation, hosts, here.

    Attributes:
        vcluster_ranks_per_node: ranks per virtual node (None: not on the virtual cluster).
        placement: hosts and ranks on each (a hostfile run).
        slurm: srun steps in an allocation (None: not under Slurm).
    """

    vcluster_ranks_per_node: int | None = None
    placement: launch.Placement | None = None
    slurm: SlurmSteps | None = None

    def nodes_for(self, nranks: int) -> int:
        """How many nodes (or hosts, or 1 for this machine) ``nranks`` ranks span."""
        if self.vcluster_ranks_per_node:
            return math.ceil(nranks / self.vcluster_ranks_per_node)
        if self.slurm is not None:
            return math.ceil(nranks / self.slurm.ranks_per_node)
        if self.placement is not None:
            return len(self.placement.hosts)
        return 1

    def to_json(self, nranks: int) -> dict[str, Any]:
        """Where ``nranks`` ranks ran, as stored with the run."""
        if self.vcluster_ranks_per_node:
            return {
                "vcluster_nodes": self.nodes_for(nranks),
                "ranks_per_node": self.vcluster_ranks_per_node,
            }
        if self.slurm is not None:
            return {
                "slurm": self.slurm.allocation,
                "slurm_nodes": self.nodes_for(nranks),
                "ranks_per_node": self.slurm.ranks_per_node,
            }
        if self.placement is not None:
            return {"placement": self.placement.to_json()}
        return {"local": True}

    def hosts(self, nranks: int) -> list[str] | None:
        """The named hosts or allocated nodes ``nranks`` ranks ran on (None: not known here)."""
        if self.slurm is not None:
            return list(self.slurm.allocation["nodes"][: self.nodes_for(nranks)])
        if self.placement is not None:
            return [name for name, _ in self.placement.hosts]
        return None


@dataclass(frozen=True)
class ProgramRun:
    """How one launch of a program ended."""

    returncode: int
    wall_s: float
    stdout: str
    stderr: str
    timed_out: bool
    killed_after_output: bool = False  # ended after its last line: its MPI_Finalize hung


def job(
    mpi: MPIInstall, nranks: int, program: Sequence[str], where: Where, cores: int | None = None
) -> launch.Job:
    """The job that starts ``program`` on ``nranks`` ranks where ``where`` says.

    Raises:
        UsageError: named hosts hold another number of ranks than ``nranks``.
        LaunchError: no usable virtual cluster, or too few of its nodes are up.
    """
    if where.vcluster_ranks_per_node:
        from commscope.measure import runner

        rpn = where.vcluster_ranks_per_node
        args, env = runner.vcluster_launch(mpi, rpn, where.nodes_for(nranks), {})
        return launch.build_job(mpi, nranks, program, extra_args=args, extra_env=env)
    if where.slurm is not None:
        steps = where.slurm
        if nranks > steps.allocation["ntasks"]:
            raise UsageError(
                f"--grid: {nranks} ranks but the Slurm allocation holds"
                f" {steps.allocation['ntasks']} tasks; give a smaller grid or allocate more"
                " (--nodes x --ranks-per-node)"
            )
        placed = [f"--nodes={where.nodes_for(nranks)}", f"--ntasks-per-node={steps.ranks_per_node}"]
        # srun finds a commscope-made allocation by its job id; inside one it is already set.
        own = {"SLURM_JOB_ID": steps.allocation["job"]} if steps.allocation["own"] else None
        return launch.build_job(
            mpi,
            nranks,
            program,
            "srun",
            extra_args=placed,
            extra_env=own,
            srun_mpi=steps.allocation["plugin"],
        )
    if where.placement is not None:
        if where.placement.nranks != nranks:
            raise UsageError(
                f"--hosts: the hosts hold {where.placement.nranks} ranks but this grid needs"
                f" {nranks}; give --ranks-per-node so that hosts x ranks = {nranks}"
            )
        return launch.build_job(mpi, nranks, program, placement=where.placement)
    return launch.build_job(mpi, nranks, program, cores=cores)


def run(
    job: launch.Job, workdir: Path, timeout_s: float, done_line: str | None = None
) -> ProgramRun:
    """Run ``job`` in ``workdir`` until it exits or ``timeout_s`` passes (then it is killed).

    Once the program prints ``done_line`` its work is over: a job still alive 15 s later
    (an MPI_Finalize that hangs) is ended, and the run counts as finished.
    """
    lines: list[str] = []

    def keep(line: str) -> bool:
        lines.append(line)
        return done_line is not None and line.strip() == done_line

    start = time.monotonic()
    done = launch.run_streaming(job, keep, timeout_s, cwd=str(workdir))
    wall = time.monotonic() - start
    ended = done.killed_after_output
    code = 0 if ended else done.returncode
    return ProgramRun(code, wall, "".join(lines), done.stderr, done.timed_out, ended)
