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
from dataclasses import dataclass
from typing import Any

from commscope.errors import LaunchError, UsageError
from commscope.measure.mpi import MPIInstall

# srun's --mpi plugin each MPI family needs, best first: Open MPI 4 speaks PMIx, MPICH's
# default PMI client speaks PMI-2's wire protocol.
PLUGINS = {"openmpi": ("pmix_v4", "pmix_v3", "pmix"), "mpich": ("pmi2",)}
COMMAND_TIMEOUT_S = 60.0
ALLOC_TIMEOUT_S = 600


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


def allocate(
    nodes: int, ntasks_per_node: int, partition: str | None = None, time_limit: str | None = None
) -> Allocation:
    """Get an allocation of ``nodes`` x ``ntasks_per_node`` with ``salloc --no-shell``.

    Raises:
        UsageError: Slurm is not installed.
        LaunchError: Slurm refused or did not grant the allocation in time.
    """
    argv = [
        "salloc",
        "--no-shell",
        "--job-name=commscope",
        f"--nodes={nodes}",
        f"--ntasks-per-node={ntasks_per_node}",
        f"--immediate={ALLOC_TIMEOUT_S}",
    ]
    if partition:
        argv.append(f"--partition={partition}")
    if time_limit:
        argv.append(f"--time={time_limit}")
    done = _run(argv, "--slurm")
    m = re.search(r"Granted job allocation (\d+)", done.stderr + done.stdout)
    if not m:
        raise LaunchError(f"--slurm: salloc granted no allocation ({done.stderr.strip()})")
    job = m.group(1)
    out = _run(["squeue", "-h", "-j", job, "-o", "%N"], "--slurm").stdout.strip()
    return Allocation(job, hostnames(out) if out else (), nodes * ntasks_per_node, own=True)


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
