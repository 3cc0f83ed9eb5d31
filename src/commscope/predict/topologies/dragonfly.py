"""A dragonfly (Cray Cascade): group, chassis, router, node, as SimGrid builds and routes it.

A node link up and down, then minimal routing: inside a group a router link (same chassis)
and a chassis link; between groups to the router that holds the group link, across it, then
to the target router. Its groups are the switches of the model. Its links are counted one by
one (:meth:`Dragonfly.route`): which router, chassis and group links a route takes depends on
where its ends sit, and the transfers that meet on one of them share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope.predict.topologies.base import Fail, Leaves
from commscope.predict.topologies.common import count, fits, pairs

_LINKS = ("groups", "chassis", "routers")  # the keys of its section's links: mapping


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
    yaml_keys: ClassVar[tuple[str, ...]] = (
        "kind",
        "groups",
        "chassis",
        "routers",
        "nodes_per_router",
        "links",
    )

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
        a, b = (v.ravel() for v in np.broadcast_arrays(*pairs(a, b)))
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
        a, b = pairs(a, b)
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

    @classmethod
    def from_yaml(cls, data: dict[str, Any], fail: Fail) -> Dragonfly:
        """The dragonfly of a ``topology:`` section whose keys are all of ``yaml_keys``."""
        counts = {}
        for key in ("groups", "chassis", "routers", "nodes_per_router"):
            if key not in data:
                raise fail(
                    f"topology.{key}",
                    "missing; a dragonfly needs groups, chassis, routers and nodes_per_router",
                )
            counts[key] = count(data[key], f"topology.{key}", fail)
        raw = data.get("links") or {}
        if not isinstance(raw, dict):
            raise fail("topology.links", f"expected a mapping with keys {', '.join(_LINKS)}")
        for key in raw:
            if key not in _LINKS:
                known = ", ".join(_LINKS)
                raise fail(f"topology.links.{key}", f"unknown field; expected one of {known}")
        links = {k: 1 if raw.get(k) is None else count(raw[k], f"topology.links.{k}", fail)
                 for k in _LINKS}  # fmt: skip
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
        fits((fly.groups, fly.chassis, fly.routers, fly.nodes_per_router), "topology", fail)
        return fly
