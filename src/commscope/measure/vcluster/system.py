"""The machine as a vcluster sees it: commands, namespace and link queries, state file, /etc/hosts.

Every function here does one small thing and raises :class:`ClusterError` naming the command or
file that failed; :mod:`commscope.measure.vcluster.lifecycle` puts them together into up, down
and status.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from commscope.errors import ClusterError
from commscope.measure.vcluster.model import (
    BRIDGE_RE,
    NODE_RE,
    STATE_DIR,
    STATE_FILE,
    UPLINK_RE,
    VETH_RE,
    ClusterState,
)

HOSTS_FILE = Path("/etc/hosts")
HOSTS_MARK = "# commscope-vcluster"
TOOLS = ("ip", "tc", "unshare", "hostname")
COMMAND_TIMEOUT_S = 60


# ---------------------------------------------------------------- commands


def run(argv: Sequence[str]) -> str:
    """Run a command; return its stdout or raise ClusterError naming the command."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, check=True, timeout=COMMAND_TIMEOUT_S
        )
    except FileNotFoundError:
        raise ClusterError(
            f"'{argv[0]}' is not installed: install iproute2 and util-linux"
        ) from None
    except subprocess.TimeoutExpired:
        raise ClusterError(f"'{shlex.join(argv)}' hung for {COMMAND_TIMEOUT_S} s") from None
    except subprocess.CalledProcessError as err:
        lines = (err.stderr or "").strip().splitlines()
        detail = lines[-1] if lines else f"exit status {err.returncode}"
        raise ClusterError(f"'{shlex.join(argv)}' failed: {detail}") from None
    return done.stdout


def try_run(argv: Sequence[str]) -> bool:
    """Run a cleanup command, True if it worked; a missing object is not an error here."""
    try:
        run(argv)
    except ClusterError:
        return False
    return True


def require_root_and_tools() -> None:
    """Raise ClusterError unless running as root with every tool in :data:`TOOLS` on PATH."""
    if os.geteuid() != 0:
        raise ClusterError(
            "commscope vcluster needs root: run it with sudo (it creates network namespaces, "
            "a bridge and /etc/hosts entries)"
        )
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise ClusterError(
            f"commscope vcluster needs {', '.join(missing)}, not found on PATH: "
            "install iproute2 (ip, tc) and util-linux (unshare), hostname"
        )


# ---------------------------------------------------------------- queries


def namespaces() -> list[str]:
    """Names of all network namespaces that iproute2 knows."""
    return [entry["name"] for entry in json.loads(run(["ip", "-j", "netns", "list"]) or "[]")]


def links() -> dict[str, dict[str, Any]]:
    """All links of the root namespace, by name."""
    return {link["ifname"]: link for link in json.loads(run(["ip", "-j", "link", "show"]) or "[]")}


def leftovers() -> list[str]:
    """Return the vcluster pieces that exist now, found by name alone."""
    found = [ns for ns in namespaces() if NODE_RE.fullmatch(ns)]
    found += [
        name
        for name in links()
        if BRIDGE_RE.fullmatch(name) or VETH_RE.fullmatch(name) or UPLINK_RE.fullmatch(name)
    ]
    if any(line.rstrip().endswith(HOSTS_MARK) for line in read_hosts()):
        found.append(f"{HOSTS_FILE} entries")
    return found


def check_subnet_free(state: ClusterState) -> None:
    """Refuse a subnet that overlaps an address the machine already uses."""
    ours = ipaddress.IPv4Network(state.subnet)
    out = json.loads(run(["ip", "-j", "-4", "addr", "show"]) or "[]")
    for link in out:
        for addr in link.get("addr_info", []):
            theirs = ipaddress.IPv4Network(f"{addr['local']}/{addr['prefixlen']}", strict=False)
            if ours.overlaps(theirs):
                raise ClusterError(
                    f"subnet {state.subnet} overlaps {addr['local']}/{addr['prefixlen']} on "
                    f"{link['ifname']}: pick a free one with --subnet"
                )


# ---------------------------------------------------------------- TCP congestion control

# The available and allowed lists are the host's; each namespace has its own default.
TCP_SYSCTL = Path("/proc/sys/net/ipv4")


def _read_sysctl(name: str) -> str:
    try:
        return (TCP_SYSCTL / name).read_text(encoding="ascii").strip()
    except OSError as err:
        raise ClusterError(f"cannot read {TCP_SYSCTL / name} ({err.strerror})") from None


def check_congestion_control(name: str) -> None:
    """Refuse a congestion control this kernel does not offer, naming those it does."""
    available = _read_sysctl("tcp_available_congestion_control").split()
    if name not in available:
        raise ClusterError(
            f"--tcp-cc {name}: this kernel offers {', '.join(available)}; pick one of them "
            f"(or load its module first: modprobe tcp_{name})"
        )


def allowed_congestion_control() -> str:
    """The host's net.ipv4.tcp_allowed_congestion_control: what a namespace may choose."""
    return _read_sysctl("tcp_allowed_congestion_control")


def write_allowed_congestion_control(allowed: str) -> None:
    """Set the host's net.ipv4.tcp_allowed_congestion_control to ``allowed``."""
    path = TCP_SYSCTL / "tcp_allowed_congestion_control"
    try:
        path.write_text(allowed.strip() + "\n", encoding="ascii")
    except OSError as err:
        raise ClusterError(f"cannot write {path} ({err.strerror})") from None


def _write_node_sysctl(namespace: str, name: str, value: str, option: str) -> None:
    """Set the net.ipv4 sysctl ``name`` of ``namespace``; ``option`` names the cause in errors."""
    if shutil.which("sysctl") is None:
        raise ClusterError(f"{option} needs sysctl, not found on PATH: install procps")
    run(["ip", "netns", "exec", namespace, "sysctl", "-q", "-w", f"net.ipv4.{name}={value}"])


def _read_node_sysctl(namespace: str, name: str) -> str:
    return run(["ip", "netns", "exec", namespace, "cat", str(TCP_SYSCTL / name)]).strip()


def set_congestion_control(namespace: str, name: str) -> None:
    """Make ``name`` the TCP congestion control of new connections in ``namespace``."""
    _write_node_sysctl(namespace, "tcp_congestion_control", name, "--tcp-cc")


def congestion_control(namespace: str) -> str:
    """The TCP congestion control of new connections in ``namespace``."""
    return _read_node_sysctl(namespace, "tcp_congestion_control")


def set_tcp_limit_output(namespace: str, limit: int) -> None:
    """Let each TCP socket of ``namespace`` queue at most ``limit`` bytes below it."""
    _write_node_sysctl(namespace, "tcp_limit_output_bytes", str(limit), "--tcp-limit-output")


def _read_node_count(namespace: str, name: str) -> int:
    text = _read_node_sysctl(namespace, name)
    try:
        return int(text)
    except ValueError:
        raise ClusterError(f"{namespace}: {name} reads {text!r}") from None


def tcp_limit_output(namespace: str) -> int:
    """The net.ipv4.tcp_limit_output_bytes of ``namespace``."""
    return _read_node_count(namespace, "tcp_limit_output_bytes")


def set_slow_start_after_idle(namespace: str, value: int) -> None:
    """Set net.ipv4.tcp_slow_start_after_idle of ``namespace`` (1: idle connections restart)."""
    _write_node_sysctl(
        namespace, "tcp_slow_start_after_idle", str(value), "--tcp-slow-start-after-idle"
    )


def slow_start_after_idle(namespace: str) -> int:
    """The net.ipv4.tcp_slow_start_after_idle of ``namespace``."""
    return _read_node_count(namespace, "tcp_slow_start_after_idle")


# ---------------------------------------------------------------- state file


def read_state() -> ClusterState | None:
    """Return the state recorded in :data:`STATE_FILE`, or None when there is no such file."""
    try:
        text = STATE_FILE.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ClusterError(
            f"cannot read {STATE_FILE} ({err.strerror}): check its permissions"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ClusterError(f"{STATE_FILE} is not JSON: run 'commscope vcluster down'") from None
    return ClusterState.from_json(data)


def write_state(state: ClusterState) -> None:
    """Record ``state`` in :data:`STATE_FILE`, replacing it whole (never half-written)."""
    try:
        STATE_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        tmp = STATE_FILE.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.to_json(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, STATE_FILE)
    except OSError as err:
        raise ClusterError(f"cannot write {STATE_FILE} ({err.strerror}): check /run") from None


# ---------------------------------------------------------------- /etc/hosts


def read_hosts() -> list[str]:
    """Return the lines of :data:`HOSTS_FILE` (none when it does not exist)."""
    try:
        return HOSTS_FILE.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except OSError as err:
        raise ClusterError(f"cannot read {HOSTS_FILE} ({err.strerror})") from None


def write_hosts(lines: list[str]) -> None:
    """Replace the contents of :data:`HOSTS_FILE` with ``lines``."""
    # Written in place: /etc/hosts is often a bind mount, which a rename cannot replace.
    try:
        with HOSTS_FILE.open("w", encoding="utf-8") as out:
            out.write("".join(line + "\n" for line in lines))
    except OSError as err:
        raise ClusterError(f"cannot write {HOSTS_FILE} ({err.strerror})") from None


def strip_hosts_block(lines: list[str]) -> list[str]:
    """Return ``lines`` without the vcluster's marked entries."""
    return [line for line in lines if not line.rstrip().endswith(HOSTS_MARK)]


def add_hosts_block(state: ClusterState) -> None:
    """Replace the vcluster's marked entries in :data:`HOSTS_FILE` by one per node of ``state``."""
    lines = strip_hosts_block(read_hosts())
    lines += [f"{node.address}\t{node.name}\t{HOSTS_MARK}" for node in state.nodes]
    write_hosts(lines)
