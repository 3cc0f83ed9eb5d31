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
BRIDGE = "csbr0"
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
# so it spreads a socket's bursts rather than bounding its share (docs/predict-measurements.md).
DEFAULT_TCP_LIMIT_OUTPUT = MIN_QUEUE_BYTES // 8
MIN_TCP_LIMIT_OUTPUT = 4096
MAX_TCP_LIMIT_OUTPUT = 64 << 20

# Daemons a cluster may run in its nodes, in the order up() starts them.
SERVICES = ("ssh", "slurm")

MIN_RATE_BPS = 1_000_000
MAX_RATE_BPS = 1_000_000_000_000

# Names of the pieces a vcluster makes; down() also finds leftovers by these alone.
NODE_RE = re.compile(rf"{NODE_PREFIX}\d+")
VETH_RE = re.compile(rf"{VETH_PREFIX}\d+")


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
        services: daemons run in every node: "ssh" (sshd), "slurm" (slurmd, munged).
        tcp_cc: TCP congestion control set in every node; empty: the host's default, which a
            new namespace inherits.
        restore_allowed_cc: the host's net.ipv4.tcp_allowed_congestion_control before
            :func:`up` added ``tcp_cc`` to it, put back by ``down``; empty: left unchanged.
        tcp_limit_output: net.ipv4.tcp_limit_output_bytes set in every node; 0: the kernel's
            default, left as it is.
        slow_start_after_idle: net.ipv4.tcp_slow_start_after_idle set in every node (1: an
            idle connection restarts from the initial window); -1: the kernel's, left as it is.
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
            "services": list(self.services),
            "tcp_cc": self.tcp_cc,
            "restore_allowed_cc": self.restore_allowed_cc,
            "tcp_limit_output": self.tcp_limit_output,
            "slow_start_after_idle": self.slow_start_after_idle,
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
                services=tuple(str(s) for s in data.get("services", [])),
                tcp_cc=str(data.get("tcp_cc", "")),
                restore_allowed_cc=str(data.get("restore_allowed_cc", "")),
                tcp_limit_output=int(data.get("tcp_limit_output", 0)),
                slow_start_after_idle=int(data.get("slow_start_after_idle", -1)),
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


def plan(
    nodes: int,
    rate: str = DEFAULT_RATE,
    subnet: str = DEFAULT_SUBNET,
    services: tuple[str, ...] = (),
    tcp_cc: str = "",
    tcp_limit_output: int = DEFAULT_TCP_LIMIT_OUTPUT,
    slow_start_after_idle: int = -1,
) -> ClusterState:
    """Validate the inputs and return the cluster that :func:`up` would build.

    The bridge takes the subnet's first host address; node ``i`` (from 1) takes the next ones.

    Raises:
        ClusterError: nodes not in 1..64, a bad rate, an unknown service, a congestion
            control name that is not one, a TCP output limit that is neither 0 (the kernel's)
            nor 4 KiB .. 64 MiB, a slow start after idle that is not -1, 0 or 1, or a
            subnet that is not an IPv4 network of /24 or
            larger (a /24 has room for the bridge and 64 nodes). Whether this kernel has the
            congestion control is :func:`up`'s check: it reads the machine.
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= MAX_NODES:
        raise ClusterError(f"bad node count {nodes!r}: use 1 .. {MAX_NODES}")
    rate_bps = parse_rate(rate)
    unknown = [s for s in services if s not in SERVICES]
    if unknown:
        raise ClusterError(f"unknown vcluster service {unknown[0]!r}: use {', '.join(SERVICES)}")
    services = tuple(s for s in SERVICES if s in services)
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
        services=services,
        tcp_cc=tcp_cc,
        tcp_limit_output=tcp_limit_output,
        slow_start_after_idle=slow_start_after_idle,
    )


def same_layout(a: ClusterState, b: ClusterState) -> bool:
    """True when two states have the same nodes, addresses, link rate, services and TCP."""
    return (
        a.nodes == b.nodes
        and a.subnet == b.subnet
        and a.bridge == b.bridge
        and parse_rate(a.rate) == parse_rate(b.rate)
        and a.services == b.services
        and a.tcp_cc == b.tcp_cc
        and a.tcp_limit_output == b.tcp_limit_output
        and a.slow_start_after_idle == b.slow_start_after_idle
    )
