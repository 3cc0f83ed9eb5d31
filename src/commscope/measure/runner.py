"""Run the engine for a stored request and stream its records into the store.

Every point is committed as it arrives, so a lost rank or a killed run keeps what was measured;
the run is marked complete only when the engine's end record arrives and the job exits cleanly.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from commscope.data import mpi_config
from commscope.data.record_parse import parse_record
from commscope.data.records import End, Header, Measured
from commscope.data.request import EngineOptions, RunRequest
from commscope.data.session import Measuring
from commscope.data.store import Store
from commscope.errors import LaunchError
from commscope.measure import engine, engine_options, launch, protocol_limits
from commscope.measure.exit_watch import ExitWatch
from commscope.measure.launch import Job
from commscope.measure.mpi import MPIInstall


class Simulation(Protocol):
    """How a simulated run launches: the engine built for the simulator, its job, its results.

    ``commscope.simulate`` provides one; the runner only calls it, so measuring never depends on
    the simulator.
    """

    def engine_path(self) -> Path:
        """The engine built for the simulator."""
        ...

    def job(self, program: list[str], workdir: Path) -> Job:
        """The simulator's job running ``program``, its files written into ``workdir``."""
        ...

    def keep_results(self, workdir: Path, store: Store, run_id: int) -> None:
        """After a clean simulated run: store what the simulator left in ``workdir``."""
        ...


@dataclass
class Outcome:
    """How one engine launch ended."""

    run_id: int
    new_points: int
    total_points: int


def engine_argv(path: str, options: EngineOptions, skip: set[tuple[str, str, int]]) -> list[str]:
    """Build the engine's argument list from request options (never a shell string)."""
    return [path, *engine_options.argv(options, skip)]


def lost_rank(stderr: str, header: Header | None, first: tuple[int, ...] = ()) -> str:
    """Name the cause: the engine's own message, the rank seen to end first, the launcher's.

    ``first`` holds the ranks found ended when this host saw the first rank end.
    """
    pids = {r["pid"]: r for r in header.raw["ranks"]} if header else {}
    sig = re.search(r"\(signal (\d+)\)|exited on signal (\d+)", stderr)
    how = f" (signal {sig.group(1) or sig.group(2)})" if sig else ""
    m = re.search(r"commscope-engine: (rank \d+: .*)", stderr)
    if m:  # the engine said why it stopped: that is the cause, whichever rank ended first
        return m.group(1).strip()
    if len(first) == 1 and header:
        info = next(r for r in header.raw["ranks"] if r["rank"] == first[0])
        return f"rank {first[0]} (pid {info['pid']} on {info['node']}) was lost{how}"
    m = re.search(r"rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)", stderr)
    if m:  # Open MPI
        rank, pid, node, signum = m.groups()
        return f"rank {rank} (pid {pid} on {node}) was lost (signal {signum})"
    for pid_text in re.findall(r"PID (\d+) RUNNING AT", stderr):  # hydra names pids, not ranks
        info = pids.get(int(pid_text))
        if info:
            return f"rank {info['rank']} (pid {pid_text} on {info['node']}) was lost{how}"
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not set(ln) <= set("-=* ")]
    return lines[-1] if lines else "the job ended without its end record"


def job_mca(argv: list[str]) -> dict[str, str]:
    """The MCA parameters a job's mpirun options set (the user's and the vcluster's)."""
    return {argv[i + 1]: argv[i + 2] for i in range(len(argv) - 2) if argv[i] == "--mca"}


def vcluster_launch(
    mpi: MPIInstall, ranks_per_node: int, nodes: int | None, mca: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """Launcher options that spread the ranks over the virtual cluster's first nodes."""
    import dataclasses

    from commscope.measure import vcluster

    state = vcluster.status()
    if state is None or not state.healthy:
        why = "none is up" if state is None else "; ".join(state.problems)
        raise LaunchError(
            f"no usable virtual cluster ({why}); run 'commscope vcluster up "
            "--nodes 2' as root first"
        )
    if nodes is not None:
        if nodes > len(state.nodes):
            raise LaunchError(
                f"the run needs {nodes} virtual nodes, {len(state.nodes)} are up; "
                f"run 'commscope vcluster up --nodes {nodes}'"
            )
        state = dataclasses.replace(state, nodes=state.nodes[:nodes])
    if mpi.family == "openmpi":
        return vcluster.openmpi_args(state, ranks_per_node, mca)
    return vcluster.mpich_args(state, ranks_per_node)


def run(
    store: Store,
    run_id: int,
    request: RunRequest,
    mpi: MPIInstall,
    extra_args: list[str] | None = None,
    extra_env: dict[str, str] | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    simulation: Simulation | None = None,
) -> Outcome:
    """Launch the engine for ``request`` and store its records under ``run_id``.

    Points already in the store for this run are skipped (this is how --resume works).
    ``progress(done, total)`` is called after the header and after each point. A request
    with a ``simulate`` part runs through ``simulation``.

    Raises:
        LaunchError: the job failed, timed out or lost a rank; stored points are kept.
    """
    skip = store.measured_keys(run_id)
    workdir = None
    engine_name = None  # simulated ranks are threads of one process: nothing to watch
    if request.simulate:
        if simulation is None:
            raise LaunchError("a simulated run's request reached the runner without its simulation")
        workdir = Path(tempfile.mkdtemp(prefix="commscope-smpi-"))
        job = simulation.job(
            engine_argv(str(simulation.engine_path()), request.engine, skip), workdir
        )
    else:
        info = engine.find(mpi)
        engine_name = Path(info.path).name
        mca = request.mca or {}
        launch.check_mca(mpi, mca)
        if request.vcluster:
            vc = request.vcluster
            extra_args, extra_env = vcluster_launch(mpi, vc["ranks_per_node"], vc.get("nodes"), mca)
            mca = {}  # merged into the vcluster's own parameters
        argv = engine_argv(str(info.path), request.engine, skip)
        placement = launch.Placement.from_json(request.placement) if request.placement else None
        allocation = request.slurm or {}
        if allocation.get("own"):  # steps of the allocation made for this run
            extra_env = {**(extra_env or {}), "SLURM_JOB_ID": allocation["job"]}
        if allocation.get("step_nodes"):  # in a larger allocation: the nodes it measures again
            steps = allocation["step_nodes"]
            extra_args = [
                *(extra_args or []),
                f"--nodes={len(steps)}",
                f"--nodelist={','.join(steps)}",
            ]
        job = launch.build_job(
            mpi,
            request.np,
            argv,
            request.launcher,
            extra_args=extra_args or [],
            extra_env=extra_env,
            mca=mca,
            placement=placement,
            srun_mpi=allocation.get("plugin"),
            cvars=request.cvar,
        )
        # Read before the launch, so a run that fails still says how its MPI was set up.
        limits = protocol_limits.read(
            mpi, {**job_mca(job.argv), **(request.mca or {})}, request.cvar or {}
        )
        store.set_run_data(run_id, mpi_config.RUN_DATA_KIND, limits.to_json())
    session = Measuring(store, run_id)
    state: dict[str, Any] = {"header": None, "end": None, "lines": 0, "stray": [], "watch": None}

    def on_line(line: str) -> bool:
        state["lines"] += 1
        if not line.lstrip().startswith("{"):
            state["stray"].append(line.strip())  # launcher chatter, not a record
            return False
        record = parse_record(line, where=f"engine output line {state['lines']}")
        if isinstance(record, Header):
            state["header"] = record
            session.header(segment, record)
            if engine_name:
                state["watch"] = ExitWatch(
                    {r["pid"]: r["rank"] for r in record.raw["ranks"]}, engine_name
                )
            state["total"] = engine_options.expected_points(
                request.engine, len(record.pairs), record.nranks
            )
        elif isinstance(record, Measured):
            session.add(segment, record)
        elif isinstance(record, End):
            state["end"] = record
        if progress and state["header"] is not None:
            progress(len(skip) + session.new, state["total"])
        return isinstance(record, End)

    first: tuple[int, ...] = ()
    with session.segment(job.argv) as segment:
        try:
            result = launch.run_streaming(job, on_line, float(request.timeout_s))
            if simulation is not None and workdir is not None and result.returncode == 0:
                simulation.keep_results(workdir, store, run_id)
        finally:
            if state["watch"] is not None:
                first = state["watch"].first()
                state["watch"].stop()
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
        ended = result.returncode == 0 or result.killed_after_output
        if ended and state["end"] is not None and not result.timed_out:
            # Every point arrived; a launcher stuck in MPI_Finalize afterwards loses nothing.
            note = (
                "killed after its end record: MPI_Finalize did not return"
                if result.killed_after_output
                else None
            )
            session.end_segment(segment, note, state["end"].raw)
            session.complete(note)
            return Outcome(run_id, session.new, len(session.measured()))
        if result.timed_out and state["header"] is None and not skip and session.new == 0:
            session.stop("timed out before the engine started")
            if store.discard_empty_run(run_id):
                raise LaunchError(
                    f"timed out after {request.timeout_s:g} s, before the engine started;"
                    " nothing was measured and no run was kept; raise --timeout (a start"
                    " takes seconds, more with many ranks)"
                )
        if result.timed_out:
            cause = f"timed out after {request.timeout_s} s (raise --timeout)"
        else:
            # hydra reports a lost process on stdout, Open MPI on stderr: read both.
            stray = "\n".join(state["stray"]) + "\n" + result.stderr
            cause = lost_rank(stray, state["header"], first)
        raise LaunchError(session.stop(cause))


def default_ranks() -> int:
    """Ranks for a run on this machine: one per core, at least two."""
    return max(2, len(os.sched_getaffinity(0)))


def sockets_here(sysfs: Path = Path("/sys/devices/system/cpu")) -> int:
    """Sockets (packages) of this machine's cpus, as the engine reads them; at least one."""
    ids = set()
    for path in sysfs.glob("cpu[0-9]*/topology/physical_package_id"):
        try:
            ids.add(path.read_text().strip())
        except OSError:
            continue
    return max(1, len(ids))
