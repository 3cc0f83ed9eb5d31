"""Slurm as a launcher: the allocation a run is in, an allocation of its own, the MPI plugin.

Inside an allocation (``SLURM_JOB_ID`` set) ranks start with ``srun`` over the allocation's
nodes and tasks. Outside one, :func:`allocate` gets one with ``salloc --no-shell`` and
:func:`release` gives it back; steps then run with ``srun --jobid``. Every Slurm command runs
from an argument list.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from commscope.errors import LaunchError, UsageError
from commscope.measure.mpi import MPIInstall

# srun's --mpi plugin each MPI family needs, best first: Open MPI 4 speaks PMIx, MPICH's
# default PMI client speaks PMI-2's wire protocol.
PLUGINS = {"openmpi": ("pmix_v4", "pmix_v3", "pmix"), "mpich": ("pmi2",)}
COMMAND_TIMEOUT_S = 60.0
ALLOC_TIMEOUT_S = 600  # how long salloc waits for a grant unless told (--slurm-wait)


@dataclass(frozen=True)
class Allocation:
    """A Slurm allocation a run uses.

    Attributes:
        job: the job id.
        nodes: node names, in Slurm's order.
        ntasks: tasks the allocation holds.
        own: True when commscope made it and must release it.
    """

    job: str
    nodes: tuple[str, ...]
    ntasks: int
    own: bool = False

    def to_json(self) -> dict[str, Any]:
        """The allocation as stored with a run."""
        return {"job": self.job, "nodes": list(self.nodes), "ntasks": self.ntasks, "own": self.own}


CLIENTS = ("salloc", "srun", "squeue", "scontrol", "scancel")


def slurm_text(raw: bytes) -> str:
    r"""Slurm's output as text: UTF-8, with each byte that is not UTF-8 read as U+FFFD.

    Node names, reasons and partitions are whatever an admin typed, in whatever encoding
    their terminal had (``Reason="maintenance pr\xe9vue"`` in Latin-1): a strict decode
    would end the command on a node it was not even asked about.
    """
    return raw.decode("utf-8", errors="replace")


def require_installed(what: str) -> None:
    """Raise UsageError naming the fix unless Slurm's client commands are on PATH."""
    missing = [name for name in CLIENTS if shutil.which(name) is None]
    if missing:
        raise UsageError(
            f"{what}: Slurm is not installed here ({', '.join(missing)} not found"
            "); install Slurm's client commands (Debian: slurm-client) or use "
            "--hostfile"
        )


def _run(argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
    if shutil.which(argv[0]) is None:
        raise UsageError(
            f"{what}: '{argv[0]}' is not installed; install Slurm's client "
            "commands (Debian: slurm-client) or run without Slurm"
        )
    try:
        raw = subprocess.run(
            argv,
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        done = subprocess.CompletedProcess(
            argv, raw.returncode, slurm_text(raw.stdout), slurm_text(raw.stderr)
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"{what}: '{argv[0]}' hung for {COMMAND_TIMEOUT_S:.0f} s; check "
            "that slurmctld is reachable (scontrol ping)"
        ) from None
    if done.returncode != 0:
        lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        raise LaunchError(f"{what}: {argv[0]} failed: {lines[-1] if lines else done.returncode}")
    return done


def hostnames(nodelist: str) -> tuple[str, ...]:
    """Expand a Slurm node list (``csnode[1-3]``) with ``scontrol show hostnames``."""
    out = _run(["scontrol", "show", "hostnames", nodelist], "expanding the node list").stdout
    return tuple(out.split())


def current() -> Allocation | None:
    """The allocation this process runs in, from Slurm's environment (None outside one)."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return None
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST", "")
    nodes = hostnames(nodelist) if nodelist else ()
    ntasks = os.environ.get("SLURM_NTASKS") or os.environ.get("SLURM_NPROCS")
    if not (ntasks and ntasks.isdigit()):
        per_node = os.environ.get("SLURM_CPUS_ON_NODE", "1")
        ntasks = str(max(1, len(nodes)) * (int(per_node) if per_node.isdigit() else 1))
    return Allocation(job, nodes, int(ntasks))


# salloc's options a run may give, as the stored request names them -> salloc's flag.
NAMED = {
    "partition": "--partition",
    "reservation": "--reservation",
    "account": "--account",
    "qos": "--qos",
    "constraint": "--constraint",
    "nodelist": "--nodelist",
    "time": "--time",
}
# What each takes. Every value becomes one element of salloc's argument list (never a shell
# string); these keep out what Slurm would read another way (a '/' makes a node list a file
# name, a leading '-' an option) and anything no Slurm name holds (spaces, control characters).
_NAMES = r"[A-Za-z0-9][A-Za-z0-9_.+@:-]*(?:,[A-Za-z0-9][A-Za-z0-9_.+@:-]*)*"
PATTERNS = {
    "partition": (_NAMES, "names (letters, digits, '_', '.', '-'), comma-separated"),
    "reservation": (_NAMES, "a reservation's name (scontrol show reservation)"),
    "account": (_NAMES, "an account's name (sacctmgr show assoc user=$USER)"),
    "qos": (_NAMES, "a QoS's name (sacctmgr show qos)"),
    "constraint": (
        r"[A-Za-z0-9\[(][A-Za-z0-9_.&|,*:\[\]()-]*",
        "node features joined by & | , as sbatch takes them (e.g. ib&haswell)",
    ),
    "nodelist": (
        r"[A-Za-z0-9][A-Za-z0-9_.,\[\]-]*",
        "node names or a Slurm host list (e.g. node[01-04],node9)",
    ),
    "time": (
        r"(?:\d+(?::\d+){0,2}|\d+-\d+(?::\d+){0,2}|UNLIMITED|INFINITE)",
        "a Slurm time: MINUTES, MM:SS, HH:MM:SS, DAYS-HH[:MM[:SS]] (e.g. 30 or 2:00:00)",
    ),
}
MAX_OPTION_CHARS = 1024


def check_option(key: str, value: str) -> str:
    """``value`` if salloc can take it as ``key`` (a key of :data:`NAMED`).

    Raises:
        UsageError: one line naming the flag, the value and what it takes.
    """
    pattern, takes = PATTERNS[key]
    if len(value) > MAX_OPTION_CHARS or not re.fullmatch(pattern, value):
        shown = value[:60].encode("unicode_escape").decode("ascii")
        raise UsageError(f"{NAMED[key]} {shown!r}: not one; give {takes}")
    return value


@dataclass(frozen=True)
class AllocationRequest:
    """What ``salloc`` is asked for: a shape, where, and how long to wait.

    Attributes:
        nodes: nodes (``--nodes``).
        ntasks_per_node: tasks on each node.
        partition, reservation, account, qos, constraint, nodelist, time: salloc's options
            of those names (None: Slurm's default), checked by :func:`check_option`.
        exclusive: no other job on the nodes (``--exclusive``).
        wait_s: the longest Slurm may take to grant it (salloc's ``--immediate``).
    """

    nodes: int
    ntasks_per_node: int
    partition: str | None = None
    reservation: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    nodelist: str | None = None
    time: str | None = None
    exclusive: bool = False
    wait_s: int = ALLOC_TIMEOUT_S

    def __post_init__(self) -> None:
        for key in NAMED:
            value = getattr(self, key)
            if value is not None:
                check_option(key, value)

    def argv(self) -> list[str]:
        """``salloc --no-shell ...``, as an argument list."""
        argv = [
            "salloc",
            "--no-shell",
            "--job-name=commscope",
            f"--nodes={self.nodes}",
            f"--ntasks-per-node={self.ntasks_per_node}",
            f"--immediate={self.wait_s}",
        ]
        argv += [
            f"{flag}={getattr(self, key)}" for key, flag in NAMED.items() if getattr(self, key)
        ]
        if self.exclusive:
            argv.append("--exclusive")
        return argv

    def to_json(self) -> dict[str, Any]:
        """Where the allocation was asked for, as stored in a run's ``slurm`` part."""
        out: dict[str, Any] = {key: getattr(self, key) for key in NAMED}
        return {**out, "exclusive": self.exclusive, "wait_s": self.wait_s}

    @classmethod
    def again(
        cls, stored: Mapping[str, Any], nodes: Sequence[str], ntasks_per_node: int
    ) -> AllocationRequest:
        """A stored run's allocation asked for again on ``nodes`` (by name), as it was asked.

        A run made inside an allocation stored what Slurm's environment said of it
        (:func:`current_options`).
        """
        asked = {key: stored.get(key) for key in NAMED if key not in ("nodelist",)}
        return cls(
            nodes=len(nodes),
            ntasks_per_node=ntasks_per_node,
            nodelist=",".join(nodes),
            exclusive=bool(stored.get("exclusive")),
            wait_s=int(stored.get("wait_s") or ALLOC_TIMEOUT_S),
            **asked,
        )


# Slurm's environment inside an allocation -> the stored request's key.
ENVIRONMENT = {
    "SLURM_JOB_PARTITION": "partition",
    "SLURM_JOB_RESERVATION": "reservation",
    "SLURM_JOB_ACCOUNT": "account",
    "SLURM_JOB_QOS": "qos",
}


def current_options() -> dict[str, Any]:
    """Where the allocation this process runs in was granted, as Slurm's environment says.

    Values Slurm sets to "(null)" and values :func:`check_option` refuses are left out.
    """
    out: dict[str, Any] = {}
    for variable, key in ENVIRONMENT.items():
        value = os.environ.get(variable, "")
        if value and value != "(null)" and re.fullmatch(PATTERNS[key][0], value):
            out[key] = value
    return out


def allocate(
    asked: AllocationRequest, what: str = "--slurm", wait_from: str | None = None
) -> Allocation:
    """Get the allocation ``asked`` for with ``salloc --no-shell``.

    salloc gives up when Slurm has not granted it within ``asked.wait_s`` (its
    ``--immediate``). An interrupt while it waits ends salloc and cancels the job it queued.
    ``what``: the option or command the user typed; ``wait_from``: where the wait came from
    (default ``--slurm-wait S``), both named in a refusal.

    Raises:
        UsageError: Slurm is not installed.
        LaunchError: Slurm refused or did not grant the allocation in time.
    """
    wait_from = wait_from or f"--slurm-wait {asked.wait_s}"
    said = _salloc(asked, what, wait_from)
    m = re.search(r"Granted job allocation (\d+)", said)
    if not m:
        raise LaunchError(f"{what}: salloc granted no allocation ({_told(said)})")
    job = m.group(1)
    out = _run(["squeue", "-h", "-j", job, "-o", "%N"], what).stdout.strip()
    return Allocation(
        job, hostnames(out) if out else (), asked.nodes * asked.ntasks_per_node, own=True
    )


def _salloc(asked: AllocationRequest, what: str, wait_from: str) -> str:
    """Run salloc; what it said. Whatever stops it early, the job it queued is cancelled."""
    argv = asked.argv()
    timeout_s = asked.wait_s + COMMAND_TIMEOUT_S
    if shutil.which(argv[0]) is None:
        raise UsageError(
            f"{what}: '{argv[0]}' is not installed; install Slurm's client "
            "commands (Debian: slurm-client) or run without Slurm"
        )
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except BaseException as stop:  # a timeout, Ctrl-C, SIGTERM: no job may outlive commscope
        proc.terminate()  # salloc revokes a pending request when it is told to stop
        try:
            out, err = proc.communicate(timeout=COMMAND_TIMEOUT_S / 6)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        queued = re.search(r"(?:Pending|Granted) job allocation (\d+)", err + out)
        if queued:
            subprocess.run(
                ["scancel", queued.group(1)], capture_output=True, timeout=60, check=False
            )
        if isinstance(stop, subprocess.TimeoutExpired):
            raise LaunchError(
                f"{what}: salloc hung for {timeout_s:.0f} s; check that slurmctld is"
                " reachable (scontrol ping)"
            ) from None
        raise
    said = err + out
    if proc.returncode != 0:
        if "Pending job allocation" in said:  # queued, then not granted within --immediate
            nodes = f"{asked.nodes} node{'s' if asked.nodes > 1 else ''}"
            nodes += f" ({asked.nodelist})" if asked.nodelist else ""
            raise LaunchError(
                f"{what}: Slurm did not grant {nodes} within {asked.wait_s} s ({wait_from};"
                f" salloc: {_told(said)}); ask again later, or see why with 'squeue --start'"
                " and 'sinfo -N'"
            )
        raise LaunchError(f"{what}: salloc failed: {_told(said) or proc.returncode}")
    return said


def _told(text: str) -> str:
    """What salloc said, without its progress lines, on one line."""
    progress = ("Pending job allocation", "queued and waiting", "Granted job allocation")
    lines = [
        ln.strip().removeprefix("salloc: ").removeprefix("error: ")
        for ln in text.splitlines()
        if ln.strip() and not any(p in ln for p in progress)
    ]
    return "; ".join(lines)


def release(allocation: Allocation) -> None:
    """Give back an allocation that :func:`allocate` made (others are left alone)."""
    if allocation.own:
        subprocess.run(["scancel", allocation.job], capture_output=True, timeout=60, check=False)


def mpi_plugin(mpi: MPIInstall) -> str:
    """The ``srun --mpi`` plugin for ``mpi``, checked against ``srun --mpi=list``.

    Raises:
        UsageError: this Slurm has no plugin the MPI can use (names the fix).
    """
    out = _run(["srun", "--mpi=list"], "--launcher srun")
    text = out.stdout + out.stderr
    have = set(re.findall(r"\b(pmix(?:_v\d+)?|pmi2|none|cray_shasta)\b", text))
    wanted = PLUGINS.get(mpi.family, ())
    for plugin in wanted:
        if plugin in have:
            return plugin
    raise UsageError(
        f"--launcher srun: this Slurm has no {' or '.join(wanted)} plugin for "
        f"{mpi.tag} (srun --mpi=list: {', '.join(sorted(have)) or 'none'}); install "
        "Slurm's MPI plugins (Debian: slurm-wlm-basic-plugins, or slurm-wlm with "
        "PMIx) or use --launcher mpirun with --hostfile"
    )


def show_nodes(names: tuple[str, ...] = ()) -> str:
    """``scontrol -o show nodes [NAMES]``: one line of KEY=VALUE per node."""
    wanted = [",".join(names)] if names else []
    return _run(["scontrol", "-o", "show", "nodes", *wanted], "--cluster slurm").stdout


def node_names() -> tuple[str, ...]:
    """Every node Slurm knows, by name."""
    return tuple(_run(["sinfo", "-h", "-N", "-o", "%N"], "--submit").stdout.split())


def show_topology() -> str | None:
    """``scontrol -o show topology``, or None when Slurm has no topology plugin."""
    require_installed("--cluster slurm")
    done = subprocess.run(
        ["scontrol", "-o", "show", "topology"],
        capture_output=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    out = slurm_text(done.stdout)
    return out if done.returncode == 0 and out.strip() else None


# sbatch takes these srun options from the environment of the job's steps instead.
STEP_ONLY = ("--cpu-bind",)


def submit(options: list[str], script: str) -> str:
    """Submit ``script`` with sbatch ``options``; return the job id.

    Raises:
        UsageError: the script is not a readable file, or Slurm is not installed.
        LaunchError: sbatch refused the job (its reason).
    """
    if not os.path.isfile(script) or not os.access(script, os.R_OK):
        raise UsageError(
            f"--submit {script}: not a readable job script; give the path of a batch script"
        )
    batch = [opt for opt in options if not opt.startswith(STEP_ONLY)]
    env_binding = [opt.split("=", 1)[1] for opt in options if opt.startswith("--cpu-bind=")]
    argv = ["sbatch", "--parsable", *batch]
    if env_binding:
        argv.append(f"--export=ALL,SLURM_CPU_BIND={env_binding[0]}")
    out = _run([*argv, script], "--submit").stdout.strip()
    job = out.split(";", 1)[0]
    if not job.isdigit():
        raise LaunchError(f"--submit: sbatch printed no job id ({out!r})")
    return job
