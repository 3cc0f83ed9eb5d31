"""Daemons of a vcluster's nodes, common to its services: start, record, find and stop.

A daemon runs inside its node's network namespace, under a UTS namespace with the node's own
hostname and an IPC namespace of its own (as :mod:`commscope.measure.vcluster.launch` explains, MPI
libraries tell hosts apart by both). ``ip netns exec`` also bind-mounts
``/etc/netns/NODE/hosts`` over ``/etc/hosts`` for it: each node resolves this machine's name
to the bridge address, as compute nodes resolve their login node, so launchers that connect
back by name (hydra's proxies, srun's steps) reach it.

Every daemon's pid is written under :data:`PID_DIR`; :func:`stop_all` also ends every process
left in a node's namespace and every process whose command line names the state directory,
so daemons of an ``up`` that crashed before writing a pid file go too.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from commscope.errors import ClusterError
from commscope.measure.vcluster import system
from commscope.measure.vcluster.model import STATE_DIR, ClusterState, Node

PID_DIR = STATE_DIR / "pids"
NETNS_ETC = Path("/etc/netns")
START_TIMEOUT_S = 20.0


def node_prefix(
    node: str,
    argv: Sequence[str],
    bind: tuple[Path, Path] | None = None,
) -> list[str]:
    """Return the argument list that runs ``argv`` as a process of vcluster node ``node``.

    ``bind`` = (source, target) mounts a folder of the node's own at ``target``, seen by
    this process and its children only (in a private mount namespace).
    """
    if bind is None:
        return [
            "ip",
            "netns",
            "exec",
            node,
            "unshare",
            "--uts",
            "--ipc",
            "sh",
            "-c",
            'hostname "$1" && shift && exec "$@"',
            "vcluster",
            node,
            *argv,
        ]
    return [
        "ip",
        "netns",
        "exec",
        node,
        "unshare",
        "--uts",
        "--ipc",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'hostname "$1" && mount --bind "$2" "$3" && shift 3 && exec "$@"',
        "vcluster",
        node,
        str(bind[0]),
        str(bind[1]),
        *argv,
    ]


def write_node_hosts(state: ClusterState) -> None:
    """Write each node's view of /etc/hosts: localhost, this machine, every node."""
    head = socket.gethostname()
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost", f"{state.bridge_address}\t{head}"]
    lines += [f"{node.address}\t{node.name}" for node in state.nodes]
    for node in state.nodes:
        folder = NETNS_ETC / node.name
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosts").write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as err:
            raise ClusterError(f"cannot write {folder}/hosts ({err.strerror})") from None


def remove_node_hosts(names: set[str]) -> list[str]:
    """Remove the nodes' /etc/netns folders; return what was removed."""
    removed = []
    for name in sorted(names):
        folder = NETNS_ETC / name
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"{folder}")
    return removed


def require_tools(tools: Sequence[str], option: str, install: str) -> None:
    """Raise ClusterError naming ``option``'s missing ``tools`` and the packages to install.

    ``install``: what to install, e.g. "slurm-wlm and munge"; the Debian command follows.
    """
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        raise ClusterError(
            f"{option} needs {', '.join(missing)}: install {install}"
            f" (Debian: apt-get install {install.replace(' and ', ' ')})"
        )


def run_checked(argv: Sequence[str], what: str, logs: str, timeout_s: float = 120.0) -> str:
    """Run a daemon's tool; return its output, or raise ClusterError with its last line.

    ``what``: the step, as the message names it; ``logs``: where to look, e.g. a folder.
    """
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ClusterError(f"{what} did not run ({err})") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        detail = lines[-1] if lines else f"exit status {done.returncode}"
        raise ClusterError(f"{what} failed: {detail} (logs in {logs})")
    return done.stdout


def start(
    name: str, argv: Sequence[str], pidfile: Path | None = None, log: Path | None = None
) -> int:
    """Start the daemon ``name`` detached from this process; record and return its pid.

    ``argv`` must not fork away (a daemon's foreground flag) unless ``pidfile`` names the
    file the daemon writes its own pid to.

    Raises:
        ClusterError: the program cannot start, exits at once, or writes no pid file in time.
    """
    PID_DIR.mkdir(parents=True, exist_ok=True)
    out = open(log or os.devnull, "ab")  # noqa: SIM115 - handed to the child, closed below
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    except OSError as err:
        raise ClusterError(f"cannot start {name} ({argv[0]}: {err.strerror})") from None
    finally:
        out.close()
    pid = proc.pid
    deadline = time.monotonic() + START_TIMEOUT_S
    if pidfile is not None:  # the daemon forks: its pid is the one it writes
        while not _read_pid(pidfile):
            code = proc.poll()
            if (code not in (None, 0)) or time.monotonic() > deadline:
                raise ClusterError(f"{name} did not start{_tail(log)}")
            time.sleep(0.05)
        pid = _read_pid(pidfile) or pid
    else:
        time.sleep(0.2)
        if proc.poll() is not None:
            raise ClusterError(f"{name} exited at once{_tail(log)}")
    (PID_DIR / f"{name}.pid").write_text(f"{pid}\n", encoding="utf-8")
    return pid


def daemons() -> dict[str, int]:
    """The recorded daemons: name -> pid."""
    found = {}
    if PID_DIR.is_dir():
        for path in sorted(PID_DIR.glob("*.pid")):
            pid = _read_pid(path)
            if pid:
                found[path.stem] = pid
    return found


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop_all(nodes: Sequence[Node] | set[str]) -> list[str]:
    """End the vcluster's processes; return what was ended.

    That is every recorded daemon, every process in the nodes' namespaces and every process
    naming the state directory.

    Raises:
        ClusterError: a process survived SIGKILL.
    """
    names = {n.name if isinstance(n, Node) else n for n in nodes}
    pids: dict[int, str] = {pid: name for name, pid in daemons().items()}
    present = set(system.namespaces())
    for ns in sorted(names & present):
        for line in system.run(["ip", "netns", "pids", ns]).split():
            pids.setdefault(int(line), f"process in {ns}")
    for pid in _pids_naming(str(STATE_DIR)):
        pids.setdefault(pid, "process of the vcluster")
    pids.pop(os.getpid(), None)
    living = {pid: what for pid, what in pids.items() if alive(pid)}
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        for pid in living:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait_s
        while any(alive(pid) for pid in living) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not any(alive(pid) for pid in living):
            break
    left = [f"{what} (pid {pid})" for pid, what in living.items() if alive(pid)]
    if left:
        raise ClusterError(
            f"could not stop {', '.join(left)}: kill it and run 'commscope vcluster down' again"
        )
    return [f"{what} (pid {pid})" for pid, what in sorted(living.items())]


def _pids_naming(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmd:
                if text.encode() in cmd.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.isascii() and text.isdigit() else None


def _tail(log: Path | None) -> str:
    if log is None:
        return ""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return f": {lines[-1]} (log {log})" if lines else f" (log {log} is empty)"
