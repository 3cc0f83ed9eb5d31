"""Network topologies of a cluster model: fat tree, dragonfly and torus, as SimGrid builds them.

Each is one SimGrid 3.32 cluster zone (``<cluster topology="FAT_TREE" topo_parameters=...>``,
``DRAGONFLY``, ``TORUS``): SimGrid computes every route from the parameters, so a platform of
N nodes is written in time and memory linear in N. In such a zone every link has one rate and
one latency (the model's NIC); a level is made wider with more links, not faster ones: a fat
tree's taper is its down ports over its up ports.

The predictor needs, for a pair of nodes, how many links a transfer crosses (each one NIC
latency) and which nodes share a switch's uplink. Both are given here in closed form, in the
order SimGrid routes (its own code, not a shortest path search), for arrays of node pairs:

- fat tree (Zahavi's parallel-ports generalised fat tree, d-mod-k routing): nodes ``a`` and
  ``b`` meet at the lowest level L whose subtrees hold both (``a // P_L == b // P_L`` with
  ``P_L`` the nodes under one level-L switch); the route goes up L links and down L links.
  Its leaves (level-1 switches) are the switches of the model; each uplink carries
  ``up[1] x links[1]`` links.
- dragonfly (Cray Cascade): group, chassis, router, node. A node link up and down, then
  minimal routing: inside a group a router link (same chassis) and a chassis link; between
  groups to the router that holds the group link, across it, then to the target router. Its
  groups are the switches of the model. Its links are counted one by one
  (:meth:`Dragonfly.route`): which router, chassis and group links a route takes depends on
  where its ends sit, and the transfers that meet on one of them share it.
- torus: dimension-ordered routing, each dimension the short way round a ring: the hops are
  the sum of the ring distances. No switch: every node is a router, with no link of its own
  (a node sends straight onto its ring links). Its ring links are counted one by one
  (:meth:`Torus.route`).

Transfers inside a node take the zone's loopback, which SimGrid makes a FATPIPE: on these
models the ranks of one node do not contend for its memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from math import prod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope import limits, strict
from commscope.errors import PredictError

TOPOLOGIES = ("fat_tree", "dragonfly", "torus")  # what a model's topology.kind may name
MAX_LEVELS = 8  # fat tree levels of switches; real ones have 2 or 3
MAX_DIMS = 8  # torus dimensions; real ones have up to 6
MAX_COUNT = limits.MAX_MODEL_NODES  # any one count: ports, links, dimensions, groups
# SimGrid's memory for a platform grows with its links (each cable an up and a down link):
# ~0.7 KB a link (4,096-node fat trees of 8,736 and 73,728 links loaded in 48 and 94 MB;
# bench/platform_scale.py). Four million links take ~3 GB: above that, a platform would not
# fit a usual machine's memory beside the simulated ranks.
MAX_PLATFORM_LINKS = 4_000_000

Fail = Callable[[str, str], PredictError]


def _pairs(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    return np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)


@dataclass(frozen=True)
class Leaves:
    """Nodes grouped behind switches for channel counting: a leaf's nodes are consecutive.

    Attributes:
        name: name prefix of each switch (``leaf``, ``group``).
        size: nodes per switch.
        uplink_links: links of one switch's uplink (each at the NIC rate).
    """

    name: str
    size: int
    uplink_links: int


@dataclass(frozen=True)
class FatTree:
    """A parallel-ports generalised fat tree of ``levels`` switch levels.

    Attributes:
        down: per switch level i = 1..h, the elements of level i - 1 below each switch.
        up: per level i = 1..h, the switches each element of level i - 1 links up to.
        links: per level i = 1..h, the parallel links between two linked elements.
        ports: ports per switch, if stated (checked: down and up links must fit).
    """

    down: tuple[int, ...]
    up: tuple[int, ...]
    links: tuple[int, ...]
    ports: int | None = None
    kind: ClassVar[str] = "fat_tree"
    node_links: ClassVar[bool] = True  # each node has its own link to a switch

    @property
    def levels(self) -> int:
        """Switch levels (h)."""
        return len(self.down)

    @property
    def nodes(self) -> int:
        """Nodes the tree holds: the product of ``down``."""
        return prod(self.down)

    def switches(self, level: int) -> int:
        """Switches at ``level`` (1..h)."""
        return prod(self.up[:level]) * prod(self.down[level:])

    def ports_used(self, level: int) -> int:
        """Ports one switch of ``level`` (1..h) uses: its down links and its up links."""
        below = self.down[level - 1] * self.links[level - 1]
        above = self.up[level] * self.links[level] if level < self.levels else 0
        return below + above

    def taper(self) -> list[float]:
        """Per level below the top: down links over up links of one switch (1: full bisection)."""
        return [
            self.down[i - 1] * self.links[i - 1] / (self.up[i] * self.links[i])
            for i in range(1, self.levels)
        ]

    def simgrid(self) -> tuple[str, str]:
        """SimGrid's topology name and ``topo_parameters`` ("h;m_1,..;w_1,..;p_1,..")."""

        def join(v: tuple[int, ...]) -> str:
            return ",".join(map(str, v))

        return "FAT_TREE", f"{self.levels};{join(self.down)};{join(self.up)};{join(self.links)}"

    def platform_links(self) -> int:
        """Link objects SimGrid creates: one up and one down per cable."""
        elements = [self.nodes] + [self.switches(i) for i in range(1, self.levels)]
        return sum(2 * e * w * p for e, w, p in zip(elements, self.up, self.links, strict=True))

    def hops(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Links crossed from node ``a`` to node ``b`` (arrays): 2 L, L the meeting level."""
        a, b = _pairs(a, b)
        meet = np.ones(np.broadcast(a, b).shape, dtype=np.int64)
        span = 1
        for m in self.down[:-1]:
            span *= m
            meet += (a // span) != (b // span)
        return np.where(a == b, 0, 2 * meet)

    def leaves(self) -> Leaves | None:
        """Level-1 switches, their uplinks at ``up[1] x links[1]`` links; None for one level."""
        if self.levels < 2:
            return None
        return Leaves("leaf", self.down[0], self.up[1] * self.links[1])

    def inner_links(self) -> NDArray[np.float64] | None:
        """None: a fat tree's links are counted by leaves and their uplinks."""
        return None

    def route(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """No link is counted one by one (see :meth:`inner_links`): no row."""
        a, b = _pairs(a, b)
        return np.full((0, np.broadcast(a, b).size), -1, dtype=np.int64)

    def describe(self) -> str:
        """One phrase: levels, switches per level, taper."""
        per = ", ".join(str(self.switches(i)) for i in range(1, self.levels + 1))
        text = f"fat tree of {self.levels} level(s) ({per} switches)"
        tapers = self.taper()
        if tapers:
            text += ", taper " + ", ".join(f"{t:.3g}:1" for t in tapers)
        return text

    def to_yaml(self) -> dict[str, Any]:
        """The ``topology:`` section."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "down": list(self.down),
            "up": list(self.up),
            "links": list(self.links),
        }
        if self.ports is not None:
            out["ports"] = self.ports
        return out


@dataclass(frozen=True)
class Dragonfly:
    """A dragonfly: groups of chassis of routers of nodes, as SimGrid builds it.

    Attributes:
        groups: groups, joined all to all by group links.
        chassis: chassis per group, joined all to all (router n of each chassis to router n).
        routers: routers per chassis, joined all to all.
        nodes_per_router: nodes on each router.
        group_links, chassis_links, router_links: parallel links of each connection.
    """

    groups: int
    chassis: int
    routers: int
    nodes_per_router: int
    group_links: int = 1
    chassis_links: int = 1
    router_links: int = 1
    kind: ClassVar[str] = "dragonfly"
    node_links: ClassVar[bool] = True  # each node has its own link to its router

    @property
    def nodes(self) -> int:
        """Nodes: groups x chassis x routers x nodes per router."""
        return self.groups * self.chassis * self.routers * self.nodes_per_router

    def simgrid(self) -> tuple[str, str]:
        """SimGrid's topology name and ``topo_parameters`` ("G,blue;C,black;R,green;n")."""
        return "DRAGONFLY", (
            f"{self.groups},{self.group_links};{self.chassis},{self.chassis_links};"
            f"{self.routers},{self.router_links};{self.nodes_per_router}"
        )

    def platform_links(self) -> int:
        """Link objects SimGrid creates (each connection one up and one down link)."""
        g, c, r = self.groups, self.chassis, self.routers
        cables = self.nodes + g * c * r * (r - 1) // 2 + g * r * c * (c - 1) // 2 + g * (g - 1) // 2
        return 2 * cables

    def coords(self, n: NDArray[np.int64]) -> tuple[NDArray[np.int64], ...]:
        """Group, chassis and router of each node."""
        table = self._coords
        return table[0][n], table[1][n], table[2][n]

    @cached_property
    def _coords(self) -> NDArray[np.int64]:
        # Looked up rather than divided: routes are asked for millions of transfers.
        router = np.arange(self.nodes, dtype=np.int64) // self.nodes_per_router
        return np.stack(
            (
                router // (self.routers * self.chassis),
                (router // self.routers) % self.chassis,
                router % self.routers,
            )
        )

    def inner_links(self) -> NDArray[np.float64] | None:
        """Per link inside the network, one direction of it: NIC rate / its rate.

        Numbered router links first (per chassis, from router j to router k), then chassis
        links (per group and router number, from chassis j to chassis k), then group links
        (from group i to group j). SimGrid makes each connection one link at its parallel
        links' total rate, and one link per direction.
        """
        g, c, r = self.groups, self.chassis, self.routers
        return np.concatenate(
            (
                np.full(g * c * r * r, 1.0 / self.router_links),
                np.full(g * r * c * c, 1.0 / self.chassis_links),
                np.full(g * g, 1.0 / self.group_links),
            )
        )

    def route(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Links inside the network from node ``a`` to node ``b`` (arrays); -1 for none.

        One row per hop, one column per pair; links numbered as :meth:`inner_links`, in
        SimGrid 3.32's minimal routing order. Five hops: to the router that holds the group
        link (in the source's chassis), to chassis 0, across the group link, to the target's
        router number, to its chassis. Like SimGrid, after a router link inside a group the
        route goes on from chassis 0.
        """
        a, b = (v.ravel() for v in np.broadcast_arrays(*_pairs(a, b)))
        ga, ca, ra = self.coords(a)
        gb, cb, rb = self.coords(b)
        c, r = self.chassis, self.routers
        black0 = self.groups * c * r * r
        blue0 = black0 + self.groups * r * c * c

        def router_link(chassis: Any, j: Any, k: Any) -> NDArray[np.int64]:
            return np.asarray((chassis * r + j) * r + k, dtype=np.int64)

        def chassis_link(group: Any, blade: Any, j: Any, k: Any) -> NDArray[np.int64]:
            return np.asarray(black0 + ((group * r + blade) * c + j) * c + k, dtype=np.int64)

        none = np.int64(-1)
        moves = (ga != gb) | (ca != cb) | (ra != rb)
        across = ga != gb
        # To the router of the target group's number, then to chassis 0 (which holds the
        # group links), then across.
        to_router = np.where(across & (ra != gb), router_link(ga * c + ca, ra, gb), none)
        to_chassis0 = np.where(across & (ca != 0), chassis_link(ga, gb, ca, 0), none)
        to_group = np.where(across, blue0 + ga * self.groups + gb, none)
        # Where the route stands now: across groups, router (gb, 0, ga); else the source's.
        at_c, at_r = np.where(across, 0, ca), np.where(across, ga, ra)
        hop = moves & (rb != at_r)
        to_target_router = np.where(hop, router_link(gb * c + at_c, at_r, rb), none)
        at_c, at_r = np.where(hop, 0, at_c), np.where(hop, rb, at_r)
        hop = moves & (cb != at_c)
        to_target_chassis = np.where(hop, chassis_link(gb, at_r, at_c, cb), none)
        return np.stack((to_router, to_chassis0, to_group, to_target_router, to_target_chassis))

    def hops(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Links crossed from node ``a`` to node ``b`` (arrays): the route's and two node links.

        In closed form, cheaper than :meth:`route` (a test checks they agree).
        """
        a, b = _pairs(a, b)
        ga, ca, ra = self.coords(a)
        gb, cb, rb = self.coords(b)
        # Inside a group: a router link to the target's router number, which SimGrid then
        # takes in chassis 0, so a chassis link follows unless the target is in chassis 0.
        inside = np.where(rb != ra, 1 + (cb != 0), (cb != ca).astype(np.int64))
        # Between groups: to router (own chassis, blade = target group), to chassis 0, the
        # group link, to the target's router number in chassis 0, then to its chassis.
        across = (ra != gb).astype(np.int64) + (ca != 0) + 1 + (rb != ga) + (cb != 0)
        routed = 2 + np.where(ga == gb, inside, across)
        same_router = (ga == gb) & (ca == cb) & (ra == rb)
        return np.where(a == b, 0, np.where(same_router, 2, routed))

    def leaves(self) -> Leaves | None:
        """Groups, each uplink its ``groups - 1`` group links; None for one group."""
        if self.groups < 2:
            return None
        size = self.chassis * self.routers * self.nodes_per_router
        return Leaves("group", size, (self.groups - 1) * self.group_links)

    def describe(self) -> str:
        """One phrase: groups, chassis, routers, nodes per router."""
        return (
            f"dragonfly of {self.groups} group(s) x {self.chassis} chassis x"
            f" {self.routers} router(s) x {self.nodes_per_router} node(s)"
        )

    def to_yaml(self) -> dict[str, Any]:
        """The ``topology:`` section."""
        return {
            "kind": self.kind,
            "groups": self.groups,
            "chassis": self.chassis,
            "routers": self.routers,
            "nodes_per_router": self.nodes_per_router,
            "links": {
                "groups": self.group_links,
                "chassis": self.chassis_links,
                "routers": self.router_links,
            },
        }


@dataclass(frozen=True)
class Torus:
    """A torus: nodes on a grid, each linked to its neighbours, rings in every dimension."""

    dims: tuple[int, ...]
    kind: ClassVar[str] = "torus"
    node_links: ClassVar[bool] = False  # a node sends straight onto its ring links

    @property
    def nodes(self) -> int:
        """Nodes: the product of the dimensions."""
        return prod(self.dims)

    def simgrid(self) -> tuple[str, str]:
        """SimGrid's topology name and ``topo_parameters`` ("d1,d2,...")."""
        return "TORUS", ",".join(map(str, self.dims))

    def platform_links(self) -> int:
        """Link objects SimGrid creates: per node and dimension, one up and one down."""
        return 2 * self.nodes * len(self.dims)

    def hops(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Links crossed from node ``a`` to node ``b`` (arrays): the sum of ring distances."""
        a, b = _pairs(a, b)
        total = np.zeros(np.broadcast(a, b).shape, dtype=np.int64)
        span = 1
        for d in self.dims:
            step = np.abs((a // span) % d - (b // span) % d)
            total += np.minimum(step, d - step)
            span *= d
        return total

    def leaves(self) -> Leaves | None:
        """None: every node routes; there is no switch to share."""
        return None

    def inner_links(self) -> NDArray[np.float64] | None:
        """Per ring link, one direction of it: NIC rate / its rate (1: every link alike).

        Numbered per node and dimension (the link from that node to its next neighbour),
        then direction: up (towards the next neighbour) and down.
        """
        return np.ones(self.nodes * len(self.dims) * 2)

    def route(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Ring links from node ``a`` to node ``b`` (arrays), numbered as :meth:`inner_links`.

        SimGrid 3.32's dimension-ordered routing: dimension by dimension, up the ring where
        the target is at most half a ring above (round the wrap too), else down. One row per
        possible hop (half of each ring), one column per pair; -1 for none.
        """
        a, b = (v.ravel() for v in np.broadcast_arrays(*_pairs(a, b)))
        dims = len(self.dims)
        spans = [prod(self.dims[:j]) for j in range(dims)]
        mine, target = list(self._coords[:, a]), list(self._coords[:, b])
        cols = []
        for j, d in enumerate(self.dims):
            m, t, half = mine[j], target[j], d // 2
            up = ((t > m) & (t <= m + half)) | ((m > half) & ((m + half) % d >= t))
            steps = np.where(up, (t - m) % d, (m - t) % d)
            # The node whose link to its next neighbour each hop crosses: the hop's start
            # going up, its end going down. Dimensions before j are at the target already.
            base = sum((target[i] if i < j else mine[i]) * spans[i] for i in range(dims) if i != j)
            for k in range(half):
                owner = np.where(up, (m + k) % d, (m - k - 1) % d)
                link = ((base + owner * spans[j]) * dims + j) * 2 + np.where(up, 0, 1)
                cols.append(np.where(k < steps, link, -1))
        if not cols:
            return np.full((0, a.size), -1, dtype=np.int64)
        return np.stack(cols).astype(np.int64)

    @cached_property
    def _coords(self) -> NDArray[np.int64]:
        # Per dimension, each node's place on its ring; looked up rather than divided.
        n = np.arange(self.nodes, dtype=np.int64)
        return np.stack([(n // prod(self.dims[:j])) % d for j, d in enumerate(self.dims)])

    def describe(self) -> str:
        """One phrase: the dimensions."""
        return "torus " + " x ".join(map(str, self.dims))

    def to_yaml(self) -> dict[str, Any]:
        """The ``topology:`` section."""
        return {"kind": self.kind, "dims": list(self.dims)}


Topology = FatTree | Dragonfly | Torus

_KEYS = {
    "fat_tree": ("kind", "levels", "down", "up", "links", "ports"),
    "dragonfly": ("kind", "groups", "chassis", "routers", "nodes_per_router", "links"),
    "torus": ("kind", "dims"),
}
_DRAGONFLY_LINKS = ("groups", "chassis", "routers")


def _count(value: Any, field: str, fail: Fail, most: int = MAX_COUNT) -> int:
    try:
        return strict.check_whole(value, 1, most)
    except strict.NumberError as err:
        raise fail(field, str(err)) from None


def _counts(value: Any, field: str, fail: Fail, size: int | None, most: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or len(value) > most:
        raise fail(field, f"give a list of 1 to {most} whole numbers, one per level")
    if size is not None and len(value) != size:
        raise fail(field, f"{len(value)} values for {size} level(s); give one per level")
    return tuple(_count(v, f"{field}[{i}]", fail) for i, v in enumerate(value))


def _fits(counts: tuple[int, ...], field: str, fail: Fail) -> None:
    """Refuse counts whose product, the topology's nodes, is more than a model holds."""
    if prod(counts) > limits.MAX_MODEL_NODES:
        raise fail(
            field,
            f"{' x '.join(map(str, counts))} = {prod(counts)} nodes, above the"
            f" {limits.MAX_MODEL_NODES} a model holds; lower the counts",
        )


def _fat_tree(data: dict[str, Any], fail: Fail) -> FatTree:
    for key in ("down", "up"):
        if key not in data:
            raise fail(f"topology.{key}", "missing; a fat tree needs down and up, one per level")
    levels = None if data.get("levels") is None else _count(data["levels"], "topology.levels",
                                                            fail, MAX_LEVELS)  # fmt: skip
    down = _counts(data["down"], "topology.down", fail, levels, MAX_LEVELS)
    up = _counts(data["up"], "topology.up", fail, len(down), MAX_LEVELS)
    links = (
        (1,) * len(down)
        if data.get("links") is None
        else _counts(data["links"], "topology.links", fail, len(down), MAX_LEVELS)
    )
    ports = None if data.get("ports") is None else _count(data["ports"], "topology.ports", fail)
    tree = FatTree(down, up, links, ports)
    _fits(down, "topology.down", fail)
    if ports is not None:
        for level in range(1, tree.levels + 1):
            used = tree.ports_used(level)
            if used > ports:
                raise fail(
                    "topology.ports",
                    f"a level-{level} switch needs {used} ports ({_port_sum(tree, level)}),"
                    f" more than its {ports}; raise ports or lower down, up or links",
                )
    return tree


def _port_sum(tree: FatTree, level: int) -> str:
    text = f"{tree.down[level - 1]} down x {tree.links[level - 1]} link(s)"
    if level < tree.levels:
        text += f" + {tree.up[level]} up x {tree.links[level]} link(s)"
    return text


def _dragonfly(data: dict[str, Any], fail: Fail) -> Dragonfly:
    counts = {}
    for key in ("groups", "chassis", "routers", "nodes_per_router"):
        if key not in data:
            raise fail(
                f"topology.{key}",
                "missing; a dragonfly needs groups, chassis, routers and nodes_per_router",
            )
        counts[key] = _count(data[key], f"topology.{key}", fail)
    raw = data.get("links") or {}
    if not isinstance(raw, dict):
        raise fail("topology.links", f"expected a mapping with keys {', '.join(_DRAGONFLY_LINKS)}")
    for key in raw:
        if key not in _DRAGONFLY_LINKS:
            known = ", ".join(_DRAGONFLY_LINKS)
            raise fail(f"topology.links.{key}", f"unknown field; expected one of {known}")
    links = {k: 1 if raw.get(k) is None else _count(raw[k], f"topology.links.{k}", fail)
             for k in _DRAGONFLY_LINKS}  # fmt: skip
    if counts["groups"] > counts["routers"]:
        raise fail(
            "topology.groups",
            f"{counts['groups']} groups need at least as many routers per chassis (SimGrid"
            f" links group j to router j of chassis 0), not {counts['routers']};"
            " raise topology.routers or lower topology.groups",
        )
    fly = Dragonfly(
        counts["groups"],
        counts["chassis"],
        counts["routers"],
        counts["nodes_per_router"],
        links["groups"],
        links["chassis"],
        links["routers"],
    )
    _fits((fly.groups, fly.chassis, fly.routers, fly.nodes_per_router), "topology", fail)
    return fly


def _torus(data: dict[str, Any], fail: Fail) -> Torus:
    if "dims" not in data:
        raise fail("topology.dims", "missing; a torus needs its dimensions, e.g. [8, 8, 16]")
    value = data["dims"]
    if not isinstance(value, list) or not value or len(value) > MAX_DIMS:
        raise fail("topology.dims", f"give a list of 1 to {MAX_DIMS} dimensions, e.g. [8, 8, 16]")
    torus = Torus(tuple(_count(v, f"topology.dims[{i}]", fail) for i, v in enumerate(value)))
    _fits(torus.dims, "topology.dims", fail)
    return torus


def parse(data: Any, fail: Fail) -> Topology:
    """A topology from a model file's ``topology:`` section.

    Args:
        data: the decoded section.
        fail: builds the error for a field and a message (it names the file).

    Raises:
        PredictError: a key is missing, unknown or inconsistent, or the platform would not
            fit in memory (one line naming the key and the fix).
    """
    if not isinstance(data, dict) or data.get("kind") not in TOPOLOGIES:
        raise fail("topology.kind", f"give the kind of network: {', '.join(TOPOLOGIES)}")
    kind = str(data["kind"])
    for key in data:
        if key not in _KEYS[kind]:
            raise fail(
                f"topology.{key}", f"unknown field of a {kind}; expected one of"
                f" {', '.join(_KEYS[kind])}"
            )  # fmt: skip
    topo: Topology = (
        _fat_tree(data, fail)
        if kind == "fat_tree"
        else _dragonfly(data, fail)
        if kind == "dragonfly"
        else _torus(data, fail)
    )
    if topo.platform_links() > MAX_PLATFORM_LINKS:
        raise fail(
            "topology",
            f"its SimGrid platform would hold {topo.platform_links():,} links, more than the"
            f" {MAX_PLATFORM_LINKS:,} that fit in memory; give fewer nodes, levels or"
            " parallel links",
        )
    return topo
