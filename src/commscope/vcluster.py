"""Virtual cluster: network namespaces on one machine, joined by rate-limited kernel TCP links.

Each node ``csnodeI`` is a network namespace with one veth link (``eth0`` inside, ``csvethI``
outside) attached to the bridge ``csbr0``. Both directions of every link are shaped with
``tc tbf``, so traffic between two nodes crosses two shaped hops, as on a switched network.
The node names go into a marked block of /etc/hosts.

The state file is written before anything is created and lists everything that will be, so
that :func:`down` can remove a cluster whose :func:`up` stopped halfway. :func:`down` also
removes pieces found by their name prefix alone.

The launch helpers (:func:`openmpi_args`, :func:`mpich_args`) only build argument lists; the
launcher runs them. MPI daemons reach a node through an agent script shipped in
``commscope/vcluster_agents``, used by the MPI launcher in place of ssh. It also gives each
node its own hostname (UTS namespace) and IPC namespace: all namespaces otherwise share the
machine's hostname and IPC namespace, and MPI libraries (UCX in particular) would then treat
ranks on different nodes as neighbours on one host and use shared memory between them.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from commscope.errors import ClusterError

STATE_DIR = Path("/run/commscope-vcluster")
STATE_FILE = STATE_DIR / "state.json"
HOSTS_FILE = Path("/etc/hosts")
HOSTS_MARK = "# commscope-vcluster"
BRIDGE = "csbr0"
NODE_PREFIX = "csnode"
VETH_PREFIX = "csveth"
NODE_IFACE = "eth0"
MAX_NODES = 64
DEFAULT_RATE = "1gbit"
DEFAULT_SUBNET = "10.77.0.0/24"
STATE_FORMAT = 1

# tbf drops what waits longer than this; it sizes the queue (rate x latency) deep enough
# for TCP's window at 1 gbit without adding much delay at low load.
TBF_LATENCY = "10ms"
# The bucket holds this much sending time: enough for TCP to reach > 90 % of the rate,
# little enough that a 64 KiB message at 1 gbit does not slip through unshaped. At low
# rates the floor (two full Ethernet frames and slack) takes over.
BURST_SECONDS = 128e-6
MIN_BURST_BYTES = 4096

MIN_RATE_BPS = 1_000_000
MAX_RATE_BPS = 1_000_000_000_000
TOOLS = ("ip", "tc", "unshare", "hostname")
AGENTS_DIR = Path(__file__).resolve().parent / "vcluster_agents"
COMMAND_TIMEOUT_S = 60

_RATE_RE = re.compile(r"(\d+(?:\.\d+)?)([kmgt]i?)?(bit|bps)", re.IGNORECASE)
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_NODE_RE = re.compile(rf"{NODE_PREFIX}\d+")
_VETH_RE = re.compile(rf"{VETH_PREFIX}\d+")


@dataclass(frozen=True)
class Node:
    """One vcluster node.

    Attributes:
        name: namespace name, host name in /etc/hosts and the node's own hostname.
        address: IPv4 address of the node's eth0.
        veth: name of the link's end in the root namespace, attached to the bridge.
    """

    name: str
    address: str
    veth: str


@dataclass(frozen=True)
class ClusterState:
    """What a vcluster is made of, as recorded in the state file.

    Attributes:
        nodes: the nodes, in order.
        rate: link rate in tc syntax, lower case (e.g. ``1gbit``), applied in each direction.
        subnet: the network all nodes share (e.g. ``10.77.0.0/24``).
        bridge: name of the bridge in the root namespace.
        bridge_address: the bridge's address; MPI launchers in the root namespace use it.
        burst_bytes: tbf bucket size of every shaped link.
        complete: False while (or if) :func:`up` has not finished building.
        problems: what the health check found wrong; empty when healthy (never stored).
    """

    nodes: tuple[Node, ...]
    rate: str
    subnet: str
    bridge: str
    bridge_address: str
    burst_bytes: int
    complete: bool = False
    problems: tuple[str, ...] = field(default=(), compare=False)

    @property
    def healthy(self) -> bool:
        """True when the cluster is fully built and the health check found nothing wrong."""
        return self.complete and not self.problems

    @property
    def prefixlen(self) -> int:
        """Prefix length of the subnet, used on every interface."""
        return ipaddress.IPv4Network(self.subnet).prefixlen

    def to_json(self) -> dict[str, Any]:
        """Return the state as a JSON-ready dict (health check results are left out)."""
        return {
            "format": STATE_FORMAT,
            "complete": self.complete,
            "rate": self.rate,
            "subnet": self.subnet,
            "bridge": self.bridge,
            "bridge_address": self.bridge_address,
            "burst_bytes": self.burst_bytes,
            "nodes": [{"name": n.name, "address": n.address, "veth": n.veth} for n in self.nodes],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterState:
        """Build a state from :meth:`to_json` output.

        Raises:
            ClusterError: the data is not a state of a format this version reads.
        """
        try:
            if data["format"] != STATE_FORMAT:
                raise ValueError(f"format {data['format']!r}, expected {STATE_FORMAT}")
            nodes = tuple(
                Node(str(n["name"]), str(n["address"]), str(n["veth"])) for n in data["nodes"]
            )
            return cls(
                nodes=nodes,
                rate=str(data["rate"]),
                subnet=str(data["subnet"]),
                bridge=str(data["bridge"]),
                bridge_address=str(data["bridge_address"]),
                burst_bytes=int(data["burst_bytes"]),
                complete=bool(data["complete"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ClusterError(
                f"unreadable vcluster state {STATE_FILE} ({err}): run 'commscope vcluster down'"
            ) from None


# ---------------------------------------------------------------- inputs and plan (pure)


def parse_rate(rate: str) -> int:
    """Return a tc rate (``100mbit``, ``1gbit``, ``1.5gbit``, ``125mbps``) in bits per second.

    Units follow tc: ``bit``/``bps`` (bytes per second) with an optional SI prefix
    (k, m, g, t) or IEC prefix (ki, mi, gi, ti).

    Raises:
        ClusterError: not tc's syntax, or outside 1 mbit .. 1 tbit.
    """
    match = _RATE_RE.fullmatch(rate.strip())
    if not match:
        raise ClusterError(f"bad rate {rate!r}: use tc's syntax, e.g. 100mbit, 1gbit, 10gbit")
    number, prefix, unit = match.group(1), (match.group(2) or "").lower(), match.group(3).lower()
    scale = 1024 ** (" kmgt".index(prefix[0])) if prefix.endswith("i") else _SCALE[prefix]
    bps = float(number) * scale * (8 if unit == "bps" else 1)
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise ClusterError(f"rate {rate!r} is out of range: use 1mbit .. 1tbit")
    return int(bps)


def burst_bytes(rate_bps: int) -> int:
    """Return the tbf bucket size for a link of ``rate_bps`` bits per second."""
    return max(MIN_BURST_BYTES, math.ceil(rate_bps / 8 * BURST_SECONDS))


def plan(nodes: int, rate: str = DEFAULT_RATE, subnet: str = DEFAULT_SUBNET) -> ClusterState:
    """Validate the inputs and return the cluster that :func:`up` would build.

    The bridge takes the subnet's first host address; node ``i`` (from 1) takes the next ones.

    Raises:
        ClusterError: nodes not in 1..64, a bad rate, or a subnet that is not an IPv4
            network of /24 or larger (a /24 has room for the bridge and 64 nodes).
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= MAX_NODES:
        raise ClusterError(f"bad node count {nodes!r}: use 1 .. {MAX_NODES}")
    rate_bps = parse_rate(rate)
    try:
        net = ipaddress.IPv4Network(subnet.strip(), strict=True)
    except ValueError as err:
        raise ClusterError(
            f"bad subnet {subnet!r} ({err}): use a network like 10.77.0.0/24"
        ) from None
    if net.prefixlen > 24:
        raise ClusterError(f"subnet {subnet!r} is smaller than /24: use a /24 or larger network")
    hosts = net.hosts()
    bridge_address = next(hosts)
    members = tuple(
        Node(f"{NODE_PREFIX}{i}", str(next(hosts)), f"{VETH_PREFIX}{i}")
        for i in range(1, nodes + 1)
    )
    return ClusterState(
        nodes=members,
        rate=rate.strip().lower(),
        subnet=str(net),
        bridge=BRIDGE,
        bridge_address=str(bridge_address),
        burst_bytes=burst_bytes(rate_bps),
    )


def _same_layout(a: ClusterState, b: ClusterState) -> bool:
    """True when two states have the same nodes, addresses and link rate."""
    return (
        a.nodes == b.nodes
        and a.subnet == b.subnet
        and a.bridge == b.bridge
        and parse_rate(a.rate) == parse_rate(b.rate)
    )


# ---------------------------------------------------------------- launch helpers (run nothing)


def agent_path(name: str) -> Path:
    """Return the path of a shipped agent script (``ompi-rsh-agent``, ``hydra-ssh-agent``).

    Raises:
        ClusterError: the script is missing or not executable.
    """
    path = AGENTS_DIR / name
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ClusterError(
            f"vcluster agent {path} is missing or not executable: reinstall commscope "
            f"or run 'chmod +x {AGENTS_DIR}/*'"
        )
    return path


def _host_list(state: ClusterState, ranks_per_node: int) -> str:
    if (
        isinstance(ranks_per_node, bool)
        or not isinstance(ranks_per_node, int)
        or ranks_per_node < 1
    ):
        raise ClusterError(f"bad ranks per node {ranks_per_node!r}: use 1 or more")
    return ",".join(f"{node.name}:{ranks_per_node}" for node in state.nodes)


def openmpi_args(state: ClusterState, ranks_per_node: int) -> tuple[list[str], dict[str, str]]:
    """Return the mpirun options and extra environment to run across the vcluster (Open MPI 4).

    The caller adds ``-np`` (at most ``ranks_per_node`` times the node count) and the program.
    The vcluster needs root, so the environment allows mpirun to run as root.

    Raises:
        ClusterError: ranks_per_node below 1, or the agent script is not usable.
    """
    hosts = _host_list(state, ranks_per_node)
    mca = {
        "plm_rsh_agent": str(agent_path("ompi-rsh-agent")),
        # mpirun starts every daemon itself: no node needs the agent's path resolved twice.
        "plm_rsh_no_tree_spawn": "1",
        # The btl list below only applies to ob1; some builds prefer the UCX pml.
        "pml": "ob1",
        "oob_tcp_if_include": state.subnet,
        "btl_tcp_if_include": state.subnet,
        "btl": "self,vader,tcp",
        # Ranks outnumber cores: polling ranks would starve the ones they wait for.
        "mpi_yield_when_idle": "1",
    }
    args = ["-H", hosts]
    for key, value in mca.items():
        args += ["--mca", key, value]
    # Every node's daemon binds its first rank to core 0: bound ranks of different nodes
    # would then share one core.
    args += ["--oversubscribe", "--bind-to", "none"]
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return args, env


def mpich_args(state: ClusterState, ranks_per_node: int) -> tuple[list[str], dict[str, str]]:
    """Return the mpiexec (hydra) options and extra environment to run across the vcluster.

    The caller adds ``-n`` and the program. MPICH's UCX device picks the transport: shared
    memory between ranks of one node, TCP between nodes. UCX offers shared memory to a
    peer in the same IPC namespace, and the agent gives each node its own, so no shared
    memory crosses nodes.

    Raises:
        ClusterError: ranks_per_node below 1, or the agent script is not usable.
    """
    hosts = _host_list(state, ranks_per_node)
    args = [
        "-launcher",
        "ssh",
        "-launcher-exec",
        str(agent_path("hydra-ssh-agent")),
        "-hosts",
        hosts,
        # Proxies connect back to mpiexec here; the machine's own hostname resolves to a
        # loopback address that is a different interface inside every node.
        "-localhost",
        state.bridge_address,
    ]
    env = {"UCX_TLS": "sm,tcp,self"}
    return args, env


# ---------------------------------------------------------------- system commands


def _run(argv: Sequence[str]) -> str:
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


def _try(argv: Sequence[str]) -> bool:
    """Run a cleanup command, True if it worked; a missing object is not an error here."""
    try:
        _run(argv)
    except ClusterError:
        return False
    return True


def _require_root_and_tools() -> None:
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


def _namespaces() -> list[str]:
    """Names of all network namespaces that iproute2 knows."""
    return [entry["name"] for entry in json.loads(_run(["ip", "-j", "netns", "list"]) or "[]")]


def _links() -> dict[str, dict[str, Any]]:
    """All links of the root namespace, by name."""
    return {link["ifname"]: link for link in json.loads(_run(["ip", "-j", "link", "show"]) or "[]")}


def _leftovers() -> list[str]:
    """Return the vcluster pieces that exist now, found by name alone."""
    found = [ns for ns in _namespaces() if _NODE_RE.fullmatch(ns)]
    found += [name for name in _links() if name == BRIDGE or _VETH_RE.fullmatch(name)]
    if any(line.rstrip().endswith(HOSTS_MARK) for line in _read_hosts()):
        found.append(f"{HOSTS_FILE} entries")
    return found


def _check_subnet_free(state: ClusterState) -> None:
    """Refuse a subnet that overlaps an address the machine already uses."""
    ours = ipaddress.IPv4Network(state.subnet)
    out = json.loads(_run(["ip", "-j", "-4", "addr", "show"]) or "[]")
    for link in out:
        for addr in link.get("addr_info", []):
            theirs = ipaddress.IPv4Network(f"{addr['local']}/{addr['prefixlen']}", strict=False)
            if ours.overlaps(theirs):
                raise ClusterError(
                    f"subnet {state.subnet} overlaps {addr['local']}/{addr['prefixlen']} on "
                    f"{link['ifname']}: pick a free one with --subnet"
                )


# ---------------------------------------------------------------- state and /etc/hosts


def _read_state() -> ClusterState | None:
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


def _write_state(state: ClusterState) -> None:
    try:
        STATE_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        tmp = STATE_FILE.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.to_json(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, STATE_FILE)
    except OSError as err:
        raise ClusterError(f"cannot write {STATE_FILE} ({err.strerror}): check /run") from None


def _read_hosts() -> list[str]:
    try:
        return HOSTS_FILE.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except OSError as err:
        raise ClusterError(f"cannot read {HOSTS_FILE} ({err.strerror})") from None


def _write_hosts(lines: list[str]) -> None:
    # Written in place: /etc/hosts is often a bind mount, which a rename cannot replace.
    try:
        with HOSTS_FILE.open("w", encoding="utf-8") as out:
            out.write("".join(line + "\n" for line in lines))
    except OSError as err:
        raise ClusterError(f"cannot write {HOSTS_FILE} ({err.strerror})") from None


def _strip_hosts_block(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.rstrip().endswith(HOSTS_MARK)]


def _add_hosts_block(state: ClusterState) -> None:
    lines = _strip_hosts_block(_read_hosts())
    lines += [f"{node.address}\t{node.name}\t{HOSTS_MARK}" for node in state.nodes]
    _write_hosts(lines)


# ---------------------------------------------------------------- up, down, status


def _build(state: ClusterState) -> None:
    """Create the bridge and every node of ``state``, in the order down() can undo."""
    tbf = ["tbf", "rate", state.rate, "burst", str(state.burst_bytes), "latency", TBF_LATENCY]
    bridge_cidr = f"{state.bridge_address}/{state.prefixlen}"
    _run(["ip", "link", "add", state.bridge, "type", "bridge"])
    _run(["ip", "addr", "add", bridge_cidr, "dev", state.bridge])
    _run(["ip", "link", "set", state.bridge, "up"])
    for node in state.nodes:
        ns = node.name
        _run(["ip", "netns", "add", ns])
        peer = ["peer", "name", NODE_IFACE, "netns", ns]
        _run(["ip", "link", "add", node.veth, "type", "veth", *peer])
        _run(["ip", "link", "set", node.veth, "master", state.bridge])
        _run(["ip", "link", "set", node.veth, "up"])
        cidr = f"{node.address}/{state.prefixlen}"
        _run(["ip", "-n", ns, "addr", "add", cidr, "dev", NODE_IFACE])
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _run(["ip", "-n", ns, "link", "set", NODE_IFACE, "up"])
        # Egress of the node, then egress of the bridge port, which is the node's ingress.
        _run(["tc", "-n", ns, "qdisc", "add", "dev", NODE_IFACE, "root", *tbf])
        _run(["tc", "qdisc", "add", "dev", node.veth, "root", *tbf])
    _add_hosts_block(state)


def up(nodes: int, rate: str = DEFAULT_RATE, subnet: str = DEFAULT_SUBNET) -> ClusterState:
    """Build a vcluster of ``nodes`` nodes, or return the one already up with these parameters.

    Args:
        nodes: number of nodes, 1 .. 64, named csnode1 .. csnodeN.
        rate: rate of each link in each direction, in tc syntax (``100mbit``, ``1gbit``).
        subnet: IPv4 network for the bridge and the nodes, /24 or larger.

    Returns:
        The state of the running cluster (also written to :data:`STATE_FILE`).

    Raises:
        ClusterError: not root, a tool is missing, bad inputs, a different or broken cluster
            is already there (run :func:`down` first), or a command failed.
    """
    wanted = plan(nodes, rate, subnet)
    _require_root_and_tools()
    existing = status()
    if existing is not None:
        if not _same_layout(existing, wanted):
            raise ClusterError(
                f"a vcluster of {len(existing.nodes)} nodes at {existing.rate} on "
                f"{existing.subnet} is up: run 'commscope vcluster down' first"
            )
        if not existing.healthy:
            problems = "; ".join(existing.problems) or "never finished building"
            raise ClusterError(
                f"the vcluster is broken ({problems}): run 'commscope vcluster down' first"
            )
        return existing
    leftovers = _leftovers()
    if leftovers:
        raise ClusterError(
            f"vcluster pieces without a state file exist ({', '.join(leftovers)}): "
            "run 'commscope vcluster down' first"
        )
    _check_subnet_free(wanted)
    _write_state(wanted)
    try:
        _build(wanted)
    except ClusterError as err:
        raise ClusterError(
            "building the vcluster stopped halfway: run 'commscope vcluster down' to clean up"
        ) from err
    built = replace(wanted, complete=True)
    _write_state(built)
    return built


def down() -> list[str]:
    """Remove the vcluster: links, namespaces, bridge, /etc/hosts entries and state.

    Pieces named in the state file and pieces found by name prefix are both removed, so a
    half-built cluster goes too. Pieces already gone are skipped.

    Returns:
        What was removed, one short description per piece.

    Raises:
        ClusterError: not root, or a piece exists but could not be removed.
    """
    _require_root_and_tools()
    try:
        state = _read_state()
    except ClusterError:
        state = None  # an unreadable state file still goes; the name scan finds the rest
    veths = {node.veth for node in state.nodes} if state else set()
    names = {node.name for node in state.nodes} if state else set()
    bridges = {state.bridge, BRIDGE} if state else {BRIDGE}
    links = _links()
    veths |= {name for name in links if _VETH_RE.fullmatch(name)}
    names |= {ns for ns in _namespaces() if _NODE_RE.fullmatch(ns)}

    removed: list[str] = []
    # Deleting the outer veth end takes the inner end with it, at once; deleting only the
    # namespace would leave the outer end behind for a moment.
    for veth in sorted(veths & links.keys(), key=_natural):
        if _try(["ip", "link", "del", veth]):
            removed.append(f"veth {veth}")
    present = set(_namespaces())
    for ns in sorted(names & present, key=_natural):
        if _try(["ip", "netns", "del", ns]):
            removed.append(f"namespace {ns}")
    for bridge in sorted(bridges & links.keys()):
        if _try(["ip", "link", "del", bridge]):
            removed.append(f"bridge {bridge}")
    lines = _read_hosts()
    kept = _strip_hosts_block(lines)
    if len(kept) != len(lines):
        _write_hosts(kept)
        removed.append(f"{len(lines) - len(kept)} {HOSTS_FILE} entries")
    if STATE_DIR.exists():
        shutil.rmtree(STATE_DIR, ignore_errors=True)
        removed.append(f"state {STATE_DIR}")

    left = [piece for piece in _leftovers() if piece in veths | names | bridges]
    if left or STATE_DIR.exists():
        what = ", ".join(left) or str(STATE_DIR)
        raise ClusterError(
            f"could not remove {what}: remove it by hand ('ip netns del', "
            "'ip link del') and run 'commscope vcluster down' again"
        )
    return removed


def status() -> ClusterState | None:
    """Return the recorded vcluster with a fresh health check, or None when there is none.

    The health check fills :attr:`ClusterState.problems` with what is missing: namespaces,
    veths, the bridge (or the bridge is down), /etc/hosts entries.

    Raises:
        ClusterError: the state file is unreadable, or a query command failed.
    """
    state = _read_state()
    if state is None:
        return None
    problems: list[str] = []
    if not state.complete:
        problems.append("build did not finish")
    present = set(_namespaces())
    links = _links()
    problems += [f"namespace {n.name} missing" for n in state.nodes if n.name not in present]
    problems += [f"veth {n.veth} missing" for n in state.nodes if n.veth not in links]
    bridge = links.get(state.bridge)
    if bridge is None:
        problems.append(f"bridge {state.bridge} missing")
    elif "UP" not in bridge.get("flags", []):
        problems.append(f"bridge {state.bridge} is down")
    listed = {
        line.split()[1]
        for line in _read_hosts()
        if line.rstrip().endswith(HOSTS_MARK) and len(line.split()) > 1
    }
    problems += [f"{n.name} missing from {HOSTS_FILE}" for n in state.nodes if n.name not in listed]
    return replace(state, problems=tuple(problems))


def _natural(name: str) -> tuple[str, int]:
    """Sort key that puts csnode2 before csnode10."""
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return head, int(tail) if tail else -1
