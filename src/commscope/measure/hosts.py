"""Hosts a run spans: read from a hostfile or ``--hosts``, checked, and their cores found.

A host name is only ever passed to a launcher inside an argument list, and only after it
passed :data:`HOST_NAME` (letters, digits, dots, dashes, underscores: no shell
metacharacter, no option-like leading dash) and resolved to an address.

Slots and cores come from the hosts themselves: a probe job runs one process on each host
through the same launcher as the measurement and reads how many cores it may use there
(``nproc``, which honours the cpuset a resource manager gives the job).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from commscope import strict
from commscope.errors import LaunchError, UsageError
from commscope.measure.launch import Job, Placement, root_env
from commscope.measure.mpi import MPIInstall

HOST_NAME = strict.HOST_NAME
MAX_SLOTS = 4096
MAX_HOSTS = 100_000
PROBE_TIMEOUT_S = 120.0
# One line per probe process: its rank, then how many cores it may run on. The script is a
# constant: no user input reaches the shell.
PROBE_SCRIPT = 'echo "commscope-probe ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-$SLURM_PROCID}} $(nproc)"'


@dataclass(frozen=True)
class Host:
    """One host of a run.

    Attributes:
        name: host name as the launcher will be given it.
        slots: ranks the user allows on it (None: one per core).
    """

    name: str
    slots: int | None = None


def _slots(text: str, where: str) -> int:
    if not re.fullmatch(r"[0-9]{1,9}", text) or not 1 <= int(text) <= MAX_SLOTS:
        raise UsageError(f"{where}: slots '{text}' must be a whole number from 1 to {MAX_SLOTS}")
    return int(text)


def _host(name: str, slots: str | None, where: str) -> Host:
    if not HOST_NAME.fullmatch(name):
        raise UsageError(
            f"{where}: '{name}' is not a host name (letters, digits, '.', '-', '_'); fix the name"
        )
    return Host(name, None if slots is None else _slots(slots, where))


def parse_hosts(text: str) -> list[Host]:
    """Parse ``--hosts NAME[:SLOTS],...``.

    Raises:
        UsageError: an empty list, a bad name or slot count, or a host given twice.
    """
    hosts = []
    for item in text.split(","):
        name, sep, slots = item.strip().partition(":")
        hosts.append(_host(name, slots if sep else None, f"--hosts {text}"))
    return _unique(hosts, f"--hosts {text}")


def read_hostfile(path: str | Path) -> list[Host]:
    """Read a hostfile in Open MPI's (``NAME slots=N``) or MPICH's (``NAME:N``) form.

    Blank lines and ``#`` comments are skipped; a bare ``NAME`` means one rank per core.

    Raises:
        UsageError: the file cannot be read, or a line is malformed (named with its number).
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or "not UTF-8 text"
        raise UsageError(f"--hostfile {path}: cannot read it ({reason})") from None
    hosts = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"--hostfile {path} line {number}"
        name, sep, slots = words[0].partition(":")
        _host(name, None, where)  # the name first: it is what a bad line most often gets wrong
        rest = words[1:]
        if rest and not sep and len(rest) == 1 and rest[0].startswith(("slots=", "max_slots=")):
            slots, sep = rest[0].split("=", 1)[1], "="
            rest = []
        if rest:
            raise UsageError(
                f"{where}: expected 'NAME', 'NAME slots=N' or 'NAME:N', got {line.strip()!r}"
            )
        hosts.append(_host(name, slots if sep else None, where))
    if not hosts:
        raise UsageError(f"--hostfile {path}: no hosts in it; give one host name per line")
    return _unique(hosts, f"--hostfile {path}")


def _unique(hosts: list[Host], where: str) -> list[Host]:
    if len(hosts) > MAX_HOSTS:
        raise UsageError(f"{where}: {len(hosts)} hosts, more than {MAX_HOSTS}")
    seen: set[str] = set()
    for host in hosts:
        if host.name.lower() in seen:
            raise UsageError(
                f"{where}: host '{host.name}' is listed twice; list each host once with its slots"
            )
        seen.add(host.name.lower())
    return hosts


def check_resolvable(hosts: Sequence[Host], where: str) -> None:
    """Raise UsageError naming the first host that does not resolve to an address."""
    for host in hosts:
        try:
            socket.getaddrinfo(host.name, None)
        except (socket.gaierror, UnicodeError):
            raise UsageError(
                f"{where}: unknown host '{host.name}' (it does not resolve); fix "
                "the name or add it to /etc/hosts"
            ) from None


def probe_job(mpi: MPIInstall, hosts: Sequence[Host]) -> Job:
    """The job that runs one probe process on each host, unbound."""
    names = [h.name for h in hosts]
    program = ["sh", "-c", PROBE_SCRIPT]
    if mpi.family == "openmpi":
        argv = [
            mpi.launcher,
            "-np",
            str(len(names)),
            "-H",
            ",".join(f"{n}:1" for n in names),
            "--bind-to",
            "none",
            *program,
        ]
    else:
        argv = [
            mpi.launcher,
            "-n",
            str(len(names)),
            "-hosts",
            ",".join(f"{n}:1" for n in names),
            *program,
        ]
    return Job(argv, root_env())


def probe_cores(mpi: MPIInstall, hosts: Sequence[Host]) -> dict[str, int]:
    """Cores each host lets a process use, read on the host itself.

    Raises:
        LaunchError: the probe job failed (names the launcher's last words) or a host did
            not answer.
    """
    job = probe_job(mpi, hosts)
    try:
        done = subprocess.run(
            job.argv,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env={**os.environ, **job.env},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"probing the hosts' cores with {job.argv[0]} hung for "
            f"{PROBE_TIMEOUT_S:.0f} s; check that each host is reachable by ssh "
            "without a password"
        ) from None
    except OSError as err:
        raise LaunchError(f"cannot start {job.argv[0]} ({err.strerror})") from None
    cores: dict[str, int] = {}
    for match in re.finditer(r"commscope-probe ([0-9]{1,9}) ([0-9]{1,9})", done.stdout):
        rank, count = int(match.group(1)), int(match.group(2))
        if rank < len(hosts):
            cores[hosts[rank].name] = count
    if done.returncode != 0 or len(cores) != len(hosts):
        lines = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        missing = [h.name for h in hosts if h.name not in cores]
        why = lines[-1].strip() if lines else f"exit status {done.returncode}"
        raise LaunchError(
            f"probing the hosts' cores failed ({why}); no answer from "
            f"{', '.join(missing) or 'some host'}: check that each host is "
            "reachable by ssh without a password and has this MPI installed"
        )
    return cores


def place(
    hosts: Sequence[Host],
    cores: dict[str, int],
    ranks_per_node: int | None,
    nranks: int | None,
    where: str,
) -> Placement:
    """Ranks on each host: ``ranks_per_node``, else the host's slots, else its cores.

    With ``nranks``, hosts are filled in order until that many ranks are placed.

    Raises:
        UsageError: more ranks per node than a host's slots, or more ranks than all slots.
    """
    placed: list[tuple[str, int]] = []
    for host in hosts:
        count = ranks_per_node or host.slots or cores[host.name]
        if ranks_per_node and host.slots and ranks_per_node > host.slots:
            raise UsageError(
                f"--ranks-per-node {ranks_per_node}: {where} gives {host.name} "
                f"{host.slots} slots; lower it or raise the host's slots"
            )
        placed.append((host.name, count))
    total = sum(count for _, count in placed)
    if nranks is not None:
        if nranks > total:
            raise UsageError(
                f"--np {nranks}: {where} has room for {total} ranks; lower --np "
                "or add hosts or slots"
            )
        kept, left = [], nranks
        for name, count in placed:
            if left > 0:
                kept.append((name, min(count, left)))
                left -= min(count, left)
        placed = kept
    return Placement(tuple(placed), tuple(cores[name] for name, _ in placed))


def named_hosts(hostfile: str | None, hosts_text: str | None) -> tuple[list[Host], str]:
    """The hosts of ``--hostfile`` or ``--hosts``, checked, and how to name them in errors.

    Raises:
        UsageError: a malformed file or list, or a host that does not resolve.
    """
    where = f"--hostfile {hostfile}" if hostfile else f"--hosts {hosts_text}"
    named = read_hostfile(hostfile) if hostfile else parse_hosts(hosts_text or "")
    check_resolvable(named, where)
    return named, where


def placement_for(
    mpi: MPIInstall,
    hostfile: str | None,
    hosts_text: str | None,
    ranks_per_node: int | None,
    nranks: int | None,
) -> Placement:
    """Ranks on the hosts of ``--hostfile`` or ``--hosts``, their cores probed there."""
    named, where = named_hosts(hostfile, hosts_text)
    return place(named, probe_cores(mpi, named), ranks_per_node, nranks, where)
