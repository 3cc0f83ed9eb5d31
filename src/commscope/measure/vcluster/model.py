"""What a vcluster is: its nodes, link rate and addresses, checked and planned without side effects.

Also where the state file lives and how it is written (:meth:`ClusterState.to_json`), since its
format is this model's; reading and writing the file is
:mod:`commscope.measure.vcluster.system`'s job.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commscope.errors import ClusterError, InputError
from commscope.strict import CONGESTION_CONTROL_NAME, shown
from commscope.units import parse_tc_rate

STATE_DIR = Path("/run/commscope-vcluster")
STATE_FILE = STATE_DIR / "state.json"
STATE_FORMAT = 1
BRIDGE = "csbr0"  # the one switch; with several, the core that joins the leaves
BRIDGE_PREFIX = "csbr"  # leaf switches: csbr1 .. csbrK
UPLINK_PREFIX = "csup"  # an uplink's end in the core (csupK); its end in leaf K is csuplK
NODE_PREFIX = "csnode"
VETH_PREFIX = "csveth"
MAX_NODES = 64
DEFAULT_RATE = "1gbit"
DEFAULT_SUBNET = "10.77.0.0/24"

# The bucket holds this much sending time: enough for TCP to reach > 90 % of the rate,
# little enough that a 64 KiB message at 1 gbit does not slip through unshaped. At low
# rates the floor (two full Ethernet frames and slack) takes over.
BURST_SECONDS = 128e-6
MIN_BURST_BYTES = 4096

# Each shaped link queues this much sending time, but at least MIN_QUEUE_BYTES. Sized in time
# alone, a slowed link's queue holds few packets (~40 at 50 mbit) and drops what converging
# flows bring at once (an all-to-all's incast: each flow starts with 10 segments). The floor
# holds ~180 frames, the first windows of 16 flows; a deeper one holds a pair exchange's
# handshakes behind the data going the other way (1 MiB: up to 168 ms at 50 mbit).
QUEUE_SECONDS = 0.010
MIN_QUEUE_BYTES = 256 << 10

# How much each TCP socket may keep in its node's own shaped queue (the kernel's
# net.ipv4.tcp_limit_output_bytes, 4 MiB by default, set in every node). A NIC pushes back on
# its sockets when its ring is full; a tbf queue drops instead, so at the kernel's 4 MiB one
# fan-out's sockets overflow the 256 KiB queue and time out where a real node would have
# waited. 32 KiB, an eighth of the smallest queue, halved the drops and timeouts of a fan-out
# Bcast on 4 nodes; on kernel 6.18 a socket can still queue its whole window past the limit,
# so it spreads a socket's bursts rather than bounding its share.
DEFAULT_TCP_LIMIT_OUTPUT = MIN_QUEUE_BYTES // 8
MIN_TCP_LIMIT_OUTPUT = 4096
MAX_TCP_LIMIT_OUTPUT = 64 << 20

# Daemons a cluster may run in its nodes, in the order up() starts them.
SERVICES = ("ssh", "slurm", "accounting")

MIN_RATE_BPS = 1_000_000
MAX_RATE_BPS = 1_000_000_000_000

# Names of the pieces a vcluster makes; down() also finds leftovers by these alone.
NODE_RE = re.compile(rf"{NODE_PREFIX}\d+")
VETH_RE = re.compile(rf"{VETH_PREFIX}\d+")
BRIDGE_RE = re.compile(rf"{BRIDGE_PREFIX}\d+")
UPLINK_RE = re.compile(rf"{UPLINK_PREFIX}l?\d+")


@dataclass(frozen=True)
class Node:
    """One vcluster node.

    Attributes:
        name: namespace name, host name in /etc/hosts and the node's own hostname.
        address: IPv4 address of the node's eth0.
        veth: name of the link's end in the root namespace, attached to the node's switch.
        switch: the bridge (switch) the node's link is attached to.
        rate: the node's own link rate in tc syntax; empty: the cluster's rate.
    """

    name: str
    address: str
    veth: str
    switch: str = BRIDGE
    rate: str = ""


@dataclass(frozen=True)
class Uplink:
    """The link that joins a leaf switch to the core: a veth pair shaped in both directions.

    Attributes:
        leaf: the leaf bridge (``csbrK``).
        core_end: the pair's end attached to the core bridge (``csupK``); its queue shapes
            what the core sends down to the leaf.
        leaf_end: the end attached to the leaf (``csuplK``); its queue shapes what the leaf
            sends up.
    """

    leaf: str
    core_end: str
    leaf_end: str


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
        services: daemons run in every node: "ssh" (sshd), "slurm" (slurmd, munged),
            "accounting" (slurmdbd and its MariaDB, with "slurm").
        tcp_cc: TCP congestion control set in every node; empty: the host's default, which a
            new namespace inherits.
        restore_allowed_cc: the host's net.ipv4.tcp_allowed_congestion_control before
            :func:`up` added ``tcp_cc`` to it, put back by ``down``; empty: left unchanged.
        tcp_limit_output: net.ipv4.tcp_limit_output_bytes set in every node; 0: the kernel's
            default, left as it is.
        slow_start_after_idle: net.ipv4.tcp_slow_start_after_idle set in every node (1: an
            idle connection restarts from the initial window); -1: the kernel's, left as it is.
        switches: how many switches hold the nodes: 1, the bridge alone; K >= 2, leaf
            bridges csbr1 .. csbrK joined to the core ``bridge`` by uplinks.
        uplink_rate: rate of each uplink in each direction (tc syntax); empty with 1 switch.
        complete: False while (or if) :func:`up` has not finished building.
        problems: what the health check found wrong; empty when healthy (never stored).
    """

    nodes: tuple[Node, ...]
    rate: str
    subnet: str
    bridge: str
    bridge_address: str
    burst_bytes: int
    services: tuple[str, ...] = ()
    tcp_cc: str = ""
    restore_allowed_cc: str = ""
    tcp_limit_output: int = 0
    slow_start_after_idle: int = -1
    switches: int = 1
    uplink_rate: str = ""
    complete: bool = False
    problems: tuple[str, ...] = field(default=(), compare=False)

    @property
    def leaves(self) -> tuple[str, ...]:
        """The leaf bridges, in order; none with one switch (the nodes sit on ``bridge``)."""
        if self.switches < 2:
            return ()
        return tuple(f"{BRIDGE_PREFIX}{k}" for k in range(1, self.switches + 1))

    @property
    def uplinks(self) -> tuple[Uplink, ...]:
        """The uplink of each leaf switch; none with one switch."""
        return tuple(
            Uplink(leaf, f"{UPLINK_PREFIX}{k}", f"{UPLINK_PREFIX}l{k}")
            for k, leaf in enumerate(self.leaves, start=1)
        )

    def node_rate(self, node: Node) -> str:
        """The rate ``node``'s link is shaped at when built: its own, else the cluster's."""
        return node.rate or self.rate

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
            "services": list(self.services),
            "tcp_cc": self.tcp_cc,
            "restore_allowed_cc": self.restore_allowed_cc,
            "tcp_limit_output": self.tcp_limit_output,
            "slow_start_after_idle": self.slow_start_after_idle,
            "switches": self.switches,
            "uplink_rate": self.uplink_rate,
            "nodes": [
                {
                    "name": n.name,
                    "address": n.address,
                    "veth": n.veth,
                    "switch": n.switch,
                    "rate": self.node_rate(n),
                    "own_rate": bool(n.rate),
                }
                for n in self.nodes
            ],
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
            # Before switches existed every node sat on the one bridge at the cluster's rate.
            nodes = tuple(
                Node(
                    str(n["name"]),
                    str(n["address"]),
                    str(n["veth"]),
                    str(n.get("switch", data["bridge"])),
                    str(n["rate"]) if n.get("own_rate") else "",
                )
                for n in data["nodes"]
            )
            return cls(
                nodes=nodes,
                rate=str(data["rate"]),
                subnet=str(data["subnet"]),
                bridge=str(data["bridge"]),
                bridge_address=str(data["bridge_address"]),
                burst_bytes=int(data["burst_bytes"]),
                services=tuple(str(s) for s in data.get("services", [])),
                tcp_cc=str(data.get("tcp_cc", "")),
                restore_allowed_cc=str(data.get("restore_allowed_cc", "")),
                tcp_limit_output=int(data.get("tcp_limit_output", 0)),
                slow_start_after_idle=int(data.get("slow_start_after_idle", -1)),
                switches=int(data.get("switches", 1)),
                uplink_rate=str(data.get("uplink_rate", "")),
                complete=bool(data["complete"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ClusterError(
                f"unreadable vcluster state {STATE_FILE} ({err}): run 'commscope vcluster down'"
            ) from None


def parse_rate(rate: str) -> int:
    """Return a tc rate (``100mbit``, ``1gbit``, ``1.5gbit``, ``125mbps``) in bits per second.

    Raises:
        ClusterError: not tc's syntax, or outside 1 mbit .. 1 tbit.
    """
    try:
        bps = parse_tc_rate(rate)
    except InputError as err:
        raise ClusterError(err.one_line()) from None
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise ClusterError(f"rate {shown(rate)} is out of range: use 1mbit .. 1tbit")
    return bps


def burst_bytes(rate_bps: int) -> int:
    """Return the tbf bucket size for a link of ``rate_bps`` bits per second."""
    return max(MIN_BURST_BYTES, math.ceil(rate_bps / 8 * BURST_SECONDS))


def queue_bytes(rate_bps: int) -> int:
    """Return the tbf queue limit for a link of ``rate_bps`` bits per second."""
    return max(MIN_QUEUE_BYTES, math.ceil(rate_bps / 8 * QUEUE_SECONDS))


def parse_rates(text: str, nodes: int) -> tuple[str, dict[str, str]]:
    """Split ``--rate``'s value into the cluster's rate and the nodes' own.

    ``1gbit`` is every link's rate; ``1gbit,csnode3=200mbit`` shapes csnode3's link at
    200 mbit and every other at 1 gbit; ``csnode3=200mbit`` alone leaves the others at
    :data:`DEFAULT_RATE`.

    Returns:
        The cluster's rate (lower case) and node name -> its own rate (lower case).

    Raises:
        ClusterError: a rate that is not one, two rates for every link, a node that is not
            one of csnode1 .. csnodeN, or a node given twice.
    """
    names = [f"{NODE_PREFIX}{i}" for i in range(1, nodes + 1)]
    base = ""
    own: dict[str, str] = {}
    for item in text.split(","):
        node, eq, rate = item.partition("=")
        if not eq:
            parse_rate(item)
            if base:
                raise ClusterError(
                    f"--rate {shown(text)} gives two rates for every link: give one, and "
                    "NODE=RATE for the nodes that differ, e.g. 1gbit,csnode3=200mbit"
                )
            base = item.strip().lower()
            continue
        node = node.strip()
        if node not in names:
            raise ClusterError(
                f"--rate {shown(item)}: {shown(node)} is not a node of this cluster "
                f"({names[0]} .. {names[-1]}): give NODE=RATE for one of them"
            )
        if node in own:
            raise ClusterError(f"--rate {shown(text)} gives {node} twice: give each node one rate")
        parse_rate(rate)
        own[node] = rate.strip().lower()
    return base or DEFAULT_RATE, own


def check_switches(switches: int, nodes: int, uplink_rate: str) -> None:
    """Refuse a switch count the nodes cannot fill, or an uplink rate that is not one.

    Raises:
        ClusterError: switches not in 1 .. nodes, an uplink rate with one switch, or an
            uplink rate that is not a rate.
    """
    if isinstance(switches, bool) or not isinstance(switches, int) or switches < 1:
        raise ClusterError(
            f"--switches {switches!r}: give a whole number of switches, 1 .. the node count "
            "(1: every node on one bridge; 2 or more: leaves joined by uplinks)"
        )
    if switches > nodes:
        raise ClusterError(
            f"--switches {switches} is more than the {nodes} node(s): every switch holds at "
            f"least one node; give --switches {nodes} or fewer, or more --nodes"
        )
    if not uplink_rate:
        return
    if switches < 2:
        raise ClusterError(
            f"--uplink-rate {shown(uplink_rate)} with one switch: there is no uplink; "
            "give --switches 2 or more, or drop --uplink-rate"
        )
    try:
        parse_rate(uplink_rate)
    except ClusterError as err:
        raise ClusterError(f"--uplink-rate: {err.one_line()}") from None


def switch_of(index: int, nodes: int, switches: int) -> str:
    """The bridge node ``index`` (from 0) of ``nodes`` sits on: contiguous blocks per leaf."""
    if switches < 2:
        return BRIDGE
    return f"{BRIDGE_PREFIX}{index * switches // nodes + 1}"


def plan(
    nodes: int,
    rate: str = DEFAULT_RATE,
    subnet: str = DEFAULT_SUBNET,
    services: tuple[str, ...] = (),
    tcp_cc: str = "",
    tcp_limit_output: int = DEFAULT_TCP_LIMIT_OUTPUT,
    slow_start_after_idle: int = -1,
    switches: int = 1,
    uplink_rate: str = "",
) -> ClusterState:
    """Validate the inputs and return the cluster that :func:`up` would build.

    The bridge takes the subnet's first host address; node ``i`` (from 1) takes the next ones.
    With ``switches`` K >= 2, node i of n (from 0) sits on leaf i*K//n + 1, so each leaf holds
    a contiguous block of nodes, and every uplink runs at ``uplink_rate`` (default: the
    cluster's rate).

    Raises:
        ClusterError: nodes not in 1..64, a bad rate (or a node's own rate for a node that is
            not one), switches not in 1 .. nodes, a bad uplink rate (or one with one switch),
            an unknown service, a congestion
            control name that is not one, a TCP output limit that is neither 0 (the kernel's)
            nor 4 KiB .. 64 MiB, a slow start after idle that is not -1, 0 or 1, or a
            subnet that is not an IPv4 network of /24 or
            larger (a /24 has room for the bridge and 64 nodes). Whether this kernel has the
            congestion control is :func:`up`'s check: it reads the machine.
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= MAX_NODES:
        raise ClusterError(f"bad node count {nodes!r}: use 1 .. {MAX_NODES}")
    base_rate, own_rates = parse_rates(rate, nodes)
    rate_bps = parse_rate(base_rate)
    check_switches(switches, nodes, uplink_rate)
    if switches >= 2 and not uplink_rate:
        uplink_rate = base_rate
    unknown = [s for s in services if s not in SERVICES]
    if unknown:
        raise ClusterError(f"unknown vcluster service {unknown[0]!r}: use {', '.join(SERVICES)}")
    services = tuple(s for s in SERVICES if s in services)
    if "accounting" in services and "slurm" not in services:
        raise ClusterError("accounting (slurmdbd) without Slurm: add --slurm")
    if tcp_cc and not CONGESTION_CONTROL_NAME.fullmatch(tcp_cc):
        raise ClusterError(
            f"--tcp-cc {shown(tcp_cc)} is not a congestion control name: use one of "
            "/proc/sys/net/ipv4/tcp_available_congestion_control, e.g. cubic"
        )
    if tcp_limit_output != 0 and not (
        MIN_TCP_LIMIT_OUTPUT <= tcp_limit_output <= MAX_TCP_LIMIT_OUTPUT
    ):
        raise ClusterError(
            f"--tcp-limit-output {tcp_limit_output!r} is out of range: use "
            f"{MIN_TCP_LIMIT_OUTPUT} .. {MAX_TCP_LIMIT_OUTPUT} bytes, or kernel"
        )
    if slow_start_after_idle not in (-1, 0, 1):
        raise ClusterError(
            f"--tcp-slow-start-after-idle {slow_start_after_idle!r}: use 0, 1 or kernel"
        )
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
    members = []
    for i in range(1, nodes + 1):
        name = f"{NODE_PREFIX}{i}"
        members.append(
            Node(
                name,
                str(next(hosts)),
                f"{VETH_PREFIX}{i}",
                switch_of(i - 1, nodes, switches),
                own_rates.get(name, ""),
            )
        )
    return ClusterState(
        nodes=tuple(members),
        rate=base_rate,
        subnet=str(net),
        bridge=BRIDGE,
        bridge_address=str(bridge_address),
        burst_bytes=burst_bytes(rate_bps),
        services=services,
        tcp_cc=tcp_cc,
        tcp_limit_output=tcp_limit_output,
        slow_start_after_idle=slow_start_after_idle,
        switches=switches,
        uplink_rate=uplink_rate.strip().lower(),
    )


def same_layout(a: ClusterState, b: ClusterState) -> bool:
    """True when two states have the same nodes, addresses, switches, rates, services and TCP."""
    return (
        [(n.name, n.address, n.veth, n.switch) for n in a.nodes]
        == [(n.name, n.address, n.veth, n.switch) for n in b.nodes]
        and [parse_rate(a.node_rate(n)) for n in a.nodes]
        == [parse_rate(b.node_rate(n)) for n in b.nodes]
        and a.switches == b.switches
        and (a.switches < 2 or parse_rate(a.uplink_rate) == parse_rate(b.uplink_rate))
        and a.subnet == b.subnet
        and a.bridge == b.bridge
        and parse_rate(a.rate) == parse_rate(b.rate)
        and a.services == b.services
        and a.tcp_cc == b.tcp_cc
        and a.tcp_limit_output == b.tcp_limit_output
        and a.slow_start_after_idle == b.slow_start_after_idle
    )
