"""Launchers: build argument lists for mpirun, hydra's mpiexec and srun, and run jobs.

Jobs run in their own process group with a timeout; on timeout or interrupt the whole group is
killed, so no orphaned rank keeps a core busy.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from commscope.errors import LaunchError, UsageError
from commscope.measure import cvars as cvar_settings
from commscope.measure.mpi import MPIInstall

LAUNCHERS = ("auto", "mpirun", "mpiexec", "srun")
MCA_NAME = re.compile(r"[a-z][a-z0-9_]*")


def parse_mca(items: Sequence[str]) -> dict[str, str]:
    """Open MPI parameters from repeated ``--mca NAME=VALUE`` options (later ones win)."""
    mca: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not MCA_NAME.fullmatch(name) or not value:
            raise UsageError(
                f"--mca {item}: give NAME=VALUE, e.g. --mca "
                "btl_tcp_flags=send,inplace,need-ack,need-csum,hetero-rdma"
            )
        mca[name] = value
    return mca


def check_mca(mpi: MPIInstall, mca: dict[str, str] | None) -> None:
    """MCA parameters are Open MPI's: refuse them for another MPI rather than drop them."""
    if mca and mpi.family != "openmpi":
        raise UsageError(
            f"--mca {next(iter(mca))}: MCA parameters are Open MPI's and this run "
            f"uses {mpi.tag}; give MPICH settings with --cvar MPIR_CVAR_NAME=VALUE instead"
        )


def mca_argv(mca: dict[str, str]) -> list[str]:
    """The mpirun options that set ``mca``."""
    return [arg for name, value in mca.items() for arg in ("--mca", name, value)]


def flag_argv(options: dict[str, Any], flags: dict[str, str]) -> list[str]:
    """Program flags for the options that are set: lists joined by commas, None left out."""
    argv: list[str] = []
    for key, flag in flags.items():
        value = options.get(key)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        argv += [flag, str(value)]
    return argv


@dataclass(frozen=True)
class Job:
    """A job ready to start: argument list and extra environment."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    """Ranks on named hosts: (host, ranks) in rank order, and each host's cores.

    Ranks fill the first host, then the next: rank r is on the host whose range holds r.
    """

    hosts: tuple[tuple[str, int], ...]
    cores: tuple[int, ...]

    @property
    def nranks(self) -> int:
        """Ranks over all hosts."""
        return sum(count for _, count in self.hosts)

    @property
    def oversubscribed(self) -> bool:
        """True when a host gets more ranks than it has cores: they cannot be bound."""
        return any(count > cores for (_, count), cores in zip(self.hosts, self.cores, strict=True))

    def host_list(self) -> str:
        """The hosts as both MPIs' launchers take them: ``a:2,b:2``."""
        return ",".join(f"{name}:{count}" for name, count in self.hosts)

    def to_json(self) -> dict[str, Any]:
        """The placement as stored in a run's request."""
        return {"hosts": [[name, count] for name, count in self.hosts], "cores": list(self.cores)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Placement:
        """The placement stored by :meth:`to_json`."""
        return cls(
            tuple((str(n), int(c)) for n, c in data["hosts"]), tuple(int(c) for c in data["cores"])
        )


def root_env() -> dict[str, str]:
    """Environment that lets Open MPI's mpirun run as root (it refuses unless told twice)."""
    if os.geteuid() == 0:
        return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return {}


def build_job(
    mpi: MPIInstall,
    nranks: int,
    program: Sequence[str],
    launcher: str = "auto",
    cores: int | None = None,
    extra_args: Sequence[str] = (),
    extra_env: dict[str, str] | None = None,
    mca: dict[str, str] | None = None,
    placement: Placement | None = None,
    srun_mpi: str | None = None,
    cvars: dict[str, str] | None = None,
) -> Job:
    """Return the job that starts ``program`` on ``nranks`` ranks, one per core when possible.

    Args:
        mpi: the MPI installation.
        nranks: number of ranks.
        program: engine path and its arguments.
        launcher: "auto" (the MPI's own), "mpirun", "mpiexec" or "srun".
        cores: cores available here; more ranks than cores turns on oversubscription.
        extra_args: launcher options placed before the program (e.g. for the virtual cluster).
        extra_env: environment added to the job.
        mca: Open MPI parameters (mpirun options; environment under srun).
        placement: hosts and ranks on each (a hostfile run); their cores decide binding.
        srun_mpi: srun's ``--mpi`` plugin (pmix for Open MPI, pmi2 for MPICH).
        cvars: MPICH control variables (the ranks' environment).
    """
    if launcher not in LAUNCHERS:
        raise UsageError(f"--launcher {launcher}: choose one of {', '.join(LAUNCHERS)}")
    if nranks < 1:
        raise UsageError(f"--np {nranks}: need at least 1 rank")
    check_mca(mpi, mca)
    cvar_settings.check(mpi, cvars)
    mca = mca or {}
    cores = cores or os.cpu_count() or 1
    env = dict(root_env())
    env.update(cvars or {})  # hydra and srun hand the environment to every rank
    if placement is not None:
        nranks = placement.nranks
    if launcher == "srun":
        argv = ["srun", "-n", str(nranks)]
        if srun_mpi:
            argv.append(f"--mpi={srun_mpi}")
        if placement is not None:
            argv += [
                f"--nodes={len(placement.hosts)}",
                "--nodelist",
                ",".join(name for name, _ in placement.hosts),
            ]
            counts = {count for _, count in placement.hosts}
            if len(counts) == 1:
                argv.append(f"--ntasks-per-node={counts.pop()}")
        argv += ["--cpu-bind=cores", *extra_args, *program]
        env.update({f"OMPI_MCA_{name}": value for name, value in mca.items()})
    elif mpi.family == "openmpi":
        argv = [mpi.launcher, "-np", str(nranks), *mca_argv(mca)]
        if extra_args:
            argv += list(extra_args)
        elif placement is not None:
            argv += ["-H", placement.host_list()]
            argv += (
                ["--oversubscribe", "--bind-to", "none"]
                if placement.oversubscribed
                else ["--bind-to", "core", "--map-by", "core"]
            )
        elif nranks > cores:
            # Binding more ranks than cores to cores would fail; let them float and yield.
            argv += ["--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"]
        else:
            argv += ["--bind-to", "core", "--map-by", "core"]
        argv += list(program)
    else:
        argv = [mpi.launcher, "-n", str(nranks)]
        if extra_args:
            argv += list(extra_args)
        elif placement is not None:
            argv += ["-hosts", placement.host_list()]
            if not placement.oversubscribed:
                argv += ["-bind-to", "core"]
        elif nranks <= cores:
            argv += ["-bind-to", "core"]
        argv += list(program)
    env.update(extra_env or {})
    return Job(argv, env)


@dataclass
class JobResult:
    """What a finished (or killed) job left behind."""

    returncode: int
    stderr: str
    timed_out: bool
    killed_after_output: bool = False  # output was complete but the job did not exit


def run_streaming(
    job: Job,
    on_line: Callable[[str], bool | None],
    timeout_s: float,
    cwd: str | None = None,
    exit_grace_s: float = 15.0,
) -> JobResult:
    """Run ``job``, hand each stdout line to ``on_line`` as it arrives, return when it ends.

    The job runs in a new session (its own process group). When ``on_line`` returns True the
    output is complete; a job still alive ``exit_grace_s`` later (an MPI_Finalize that hangs)
    is killed. If ``on_line`` raises, the group is killed and the exception propagates after
    the job is reaped.
    """
    env = dict(os.environ)
    env.update(job.env)
    try:
        proc = subprocess.Popen(
            job.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as err:
        raise LaunchError(f"cannot start {job.argv[0]}") from err
    assert proc.stdout is not None and proc.stderr is not None
    stderr = proc.stderr  # narrowed to not None here; the lambda below could not see that
    err_chunks: list[str] = []
    reader = threading.Thread(target=lambda: err_chunks.append(stderr.read()), daemon=True)
    reader.start()
    timed_out, lingered = threading.Event(), threading.Event()

    def expire(flag: threading.Event) -> None:
        flag.set()
        kill_group(proc)

    timer = threading.Timer(timeout_s, expire, (timed_out,))
    timer.start()
    grace: threading.Timer | None = None
    try:
        for line in proc.stdout:
            if on_line(line) and grace is None:
                grace = threading.Timer(exit_grace_s, expire, (lingered,))
                grace.start()
        proc.wait()
        _kill_stragglers(proc.pid)
    except BaseException:
        kill_group(proc)
        raise
    finally:
        timer.cancel()
        if grace is not None:
            grace.cancel()
        reader.join(timeout=10)
    return JobResult(proc.returncode, "".join(err_chunks), timed_out.is_set(), lingered.is_set())


def kill_group(proc: subprocess.Popen[str]) -> None:
    """Terminate the job's process group, then kill what is left after a grace period.

    Ranks still in the group once the launcher has exited are killed too: a launcher that
    dies on SIGTERM before its ranks must not leave them running.
    """
    for sig, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            _kill_stragglers(proc.pid)
            return
        except subprocess.TimeoutExpired:
            continue


def _kill_stragglers(pgid: int) -> None:
    # A launcher that exits after losing a rank may leave the other ranks spinning.
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
