"""The cluster model: nodes of sockets of cores, and the channels transfers share.

Every node is alike: ``sockets`` sockets of ``cores`` cores each. The channels are the three
levels of Peryshkova and Kurnosov 2018 (contention-aware placement) plus optional switches:

- ``memory``: one memory controller per socket, used by a transfer between two cores of it;
- ``socket``: one socket interconnect per node, used by a transfer between two of its sockets;
- ``nic``: one network interface per node, used by a transfer between two nodes;
- switches: groups of nodes behind one switch; a transfer between nodes behind different
  switches also crosses the uplink of each switch.

A model may instead name its network's topology (a fat tree, a dragonfly or a torus, see
:mod:`commscope.predict.topologies`): its switches are then the topology's leaves, and
:meth:`ClusterModel.hops` counts the links between two nodes in closed form.

A channel may carry a nominal bandwidth and latency (from a YAML file or the virtual cluster's
rate); costs come from measured tables first, see :mod:`commscope.predict.cost`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope import limits, strict
from commscope.errors import PredictError
from commscope.predict.topologies import FatTree, Topology

LEVELS = ("memory", "socket", "nic")
MEMORY, SOCKET, NIC = 0, 1, 2

# Node names are written as they are into hostfiles, rankfiles and Slurm options, so only
# RFC 1123 host names pass: no shell metacharacter, space, control character or leading dash.
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
HOST_NAME_RULE = (
    "give a host name: dot-separated labels of 1 to 63 letters, digits and hyphens"
    f" (not first or last), at most {limits.MAX_HOST_NAME_CHARS} characters"
)


def host_name_problem(name: str) -> str | None:
    """Why ``name`` is not a node name commscope may write out, or None when it is one."""
    if len(name) > limits.MAX_HOST_NAME_CHARS:
        return f"node name {strict.shown(name)} has {len(name)} characters; {HOST_NAME_RULE}"
    if not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return f"node name {strict.shown(name)} is not a host name; {HOST_NAME_RULE}"
    return None


@dataclass(frozen=True)
class Link:
    """Nominal figures of one channel; None where unknown."""

    bandwidth_Bps: float | None = None
    latency_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain dict: bytes/s and seconds."""
        return {"bandwidth_Bps": self.bandwidth_Bps, "latency_s": self.latency_s}


@dataclass(frozen=True)
class Switch:
    """Nodes behind one switch, and the switch's uplink to the rest of the network."""

    name: str
    nodes: tuple[int, ...]
    uplink: Link

    def to_json(self) -> dict[str, Any]:
        """Plain dict with node indices."""
        return {"name": self.name, "nodes": list(self.nodes), "uplink": self.uplink.to_json()}


@dataclass(frozen=True)
class ClusterModel:
    """A homogeneous cluster: node names, sockets per node, cores per socket, channels.

    Attributes:
        name: what the model describes, shown in outputs.
        node_names: host names, in node index order.
        sockets: sockets per node.
        cores: cores per socket.
        memory: each socket's memory controller.
        socket_link: each node's socket interconnect.
        nic: each node's network interface (each direction: it is full duplex).
        switches: groups of nodes with their uplinks; empty for one flat network.
        source: where the model came from (a file, hwloc, the virtual cluster).
        topology: the network's fat tree, dragonfly or torus (its leaves are ``switches``);
            None for a flat network or listed switches.
    """

    name: str
    node_names: tuple[str, ...]
    sockets: int
    cores: int
    memory: Link = Link()
    socket_link: Link = Link()
    nic: Link = Link()
    switches: tuple[Switch, ...] = ()
    source: str = ""
    topology: Topology | None = None
    _switch_of: NDArray[np.int64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = self.source or self.name
        if not self.node_names:
            raise PredictError(f"{where}: a cluster model needs at least one node")
        if self.sockets < 1 or self.cores < 1:
            raise PredictError(f"{where}: sockets and cores per socket must be at least 1")
        for name in self.node_names:
            if problem := host_name_problem(name):
                raise PredictError(f"{where}: {problem}")
        if len(set(self.node_names)) != len(self.node_names):
            raise PredictError(f"{where}: node names must be distinct")
        if self.topology is not None and self.topology.nodes != len(self.node_names):
            raise PredictError(
                f"{where}: {len(self.node_names)} nodes, but its {self.topology.describe()}"
                f" holds {self.topology.nodes}; give as many nodes as the topology holds"
            )
        switch_of = np.full(len(self.node_names), -1, dtype=np.int64)
        for k, sw in enumerate(self.switches):
            for n in sw.nodes:
                if not 0 <= n < len(self.node_names) or switch_of[n] >= 0:
                    raise PredictError(
                        f"{where}: switch {sw.name}: node {n} is not a node of"
                        " the model or is behind another switch already"
                    )
                switch_of[n] = k
            if not sw.uplink.bandwidth_Bps:
                raise PredictError(f"{where}: switch {sw.name} needs an uplink bandwidth")
        if self.switches:
            if (switch_of < 0).any():
                lost = self.node_names[int(np.flatnonzero(switch_of < 0)[0])]
                raise PredictError(
                    f"{where}: node {lost} is behind no switch; put every node"
                    " behind one switch, or give no switches"
                )
            if not self.nic.bandwidth_Bps:
                raise PredictError(
                    f"{where}: switches need the NIC bandwidth, to compare uplinks with NICs"
                )
        object.__setattr__(self, "_switch_of", switch_of)

    @property
    def nodes(self) -> int:
        """Number of nodes."""
        return len(self.node_names)

    @property
    def cores_per_node(self) -> int:
        """Cores of one node."""
        return self.sockets * self.cores

    @property
    def switch_of(self) -> NDArray[np.int64]:
        """Per node: index of its switch (-1 without switches)."""
        return self._switch_of

    def hops(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Network links a transfer from node ``a`` to node ``b`` crosses (arrays; 0 inside).

        Flat: the two NICs; listed switches: also both uplinks between switches; a topology:
        its own count, in closed form (linear in the pairs asked, whatever the nodes).
        """
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        if self.topology is not None:
            return self.topology.hops(a, b)
        links = np.full(np.broadcast(a, b).shape, 2, dtype=np.int64)
        if self.switches:
            links += 2 * (self._switch_of[a] != self._switch_of[b])
        return np.where(a == b, 0, links)

    def latency_s(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
        """Nominal network latency from node ``a`` to node ``b`` (arrays; 0 inside a node).

        Every link of a topology and every NIC has the NIC's latency; an uplink its own.
        """
        hops = self.hops(a, b)
        nic = float(self.nic.latency_s or 0.0)
        if self.topology is not None or not self.switches:
            return np.asarray(hops * nic, dtype=np.float64)
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        up = np.array([float(sw.uplink.latency_s or 0.0) for sw in self.switches])
        far = self._switch_of[a] != self._switch_of[b]
        extra = np.where(far, up[self._switch_of[a]] + up[self._switch_of[b]], 0.0)
        return np.asarray(np.minimum(hops, 2) * nic + extra, dtype=np.float64)

    def extra_latency_s(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
        """Nominal latency from node ``a`` to node ``b`` beyond a route through one switch.

        A route between two nodes of one switch crosses two NIC links, which is what the NIC
        level's cost holds; a longer route (across uplinks, or more links of a topology) adds
        the rest of its latency. 0 inside a node and without a NIC latency. On a torus, whose
        nodes have no link of their own, a route of one ring link takes one link's latency
        off.
        """
        near = 2 * float(self.nic.latency_s or 0.0)
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        extra = self.latency_s(a, b) - near
        if self.topology is not None and not self.topology.node_links:
            return np.asarray(np.where(a == b, 0.0, extra), dtype=np.float64)
        return np.asarray(np.maximum(extra, 0.0), dtype=np.float64)

    def has_route_latency(self) -> bool:
        """Whether any NIC or uplink has a latency (else every route's latency is 0)."""
        return bool(self.nic.latency_s) or any(sw.uplink.latency_s for sw in self.switches)

    def routes_repeat(self) -> bool:
        """Whether every switch's routes add the latencies the first switch's add.

        Then the first switch's transfers stand for every switch's (``predict.rank``): a flat
        network, listed switches of one uplink latency, a fat tree of two levels, or routes
        that add no latency at all. Not a deeper fat tree, a dragonfly or a torus: how long a
        route is there depends on where its ends sit, not only on how far apart they are. Not
        a topology whose links are counted one by one (a dragonfly, a torus), latency or
        not: which of them a route shares depends on where its ends sit too.
        """
        if self.topology is not None and self.topology.inner_links() is not None:
            return False
        if not self.has_route_latency():
            return True
        if self.topology is not None:
            return isinstance(self.topology, FatTree) and self.topology.levels <= 2
        return len({sw.uplink.latency_s or 0.0 for sw in self.switches}) <= 1

    def uplink_ratios(self) -> NDArray[np.float64]:
        """Per switch: NIC bandwidth / uplink bandwidth (a transfer's share of the uplink)."""
        nic = float(self.nic.bandwidth_Bps or 0.0)
        return np.array([nic / float(sw.uplink.bandwidth_Bps or nic) for sw in self.switches])

    def node_order(self) -> list[int]:
        """Nodes in the order placements take them: switch by switch, biggest switch first."""
        if not self.switches:
            return list(range(self.nodes))
        groups = sorted(self.switches, key=lambda s: -len(s.nodes))
        return [n for sw in groups for n in sorted(sw.nodes)]

    def describe(self) -> str:
        """One line: nodes, sockets, cores and switches."""
        text = (
            f"{self.name}: {self.nodes} node(s) x {self.sockets} socket(s) x {self.cores} core(s)"
        )
        if self.topology is not None:
            text += f", {self.topology.describe()}"
        elif self.switches:
            text += f", {len(self.switches)} switch(es)"
        return text + (f" (from {self.source})" if self.source else "")

    def to_json(self) -> dict[str, Any]:
        """Plain dict: counts, node names, channels in bytes/s and seconds."""
        return {
            "name": self.name,
            "source": self.source,
            "nodes": list(self.node_names),
            "sockets": self.sockets,
            "cores": self.cores,
            "channels": {
                "memory": self.memory.to_json(),
                "socket": self.socket_link.to_json(),
                "nic": self.nic.to_json(),
            },
            "switches": [sw.to_json() for sw in self.switches],
            "topology": None if self.topology is None else self.topology.to_yaml(),
        }
