"""A fat tree: Zahavi's parallel-ports generalised fat tree, with d-mod-k routing.

Nodes ``a`` and ``b`` meet at the lowest level L whose subtrees hold both (``a // P_L ==
b // P_L`` with ``P_L`` the nodes under one level-L switch); the route goes up L links and
down L links. Its leaves (level-1 switches) are the switches of the model; each uplink carries
``up[1] x links[1]`` links.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope.predict.topologies.base import Fail, Leaves
from commscope.predict.topologies.common import count, fits, pairs

MAX_LEVELS = 8  # fat tree levels of switches; real ones have 2 or 3


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
    yaml_keys: ClassVar[tuple[str, ...]] = ("kind", "levels", "down", "up", "links", "ports")

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
        a, b = pairs(a, b)
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
        a, b = pairs(a, b)
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

    @classmethod
    def from_yaml(cls, data: dict[str, Any], fail: Fail) -> FatTree:
        """The fat tree of a ``topology:`` section whose keys are all of ``yaml_keys``."""
        for key in ("down", "up"):
            if key not in data:
                raise fail(
                    f"topology.{key}", "missing; a fat tree needs down and up, one per level"
                )
        given = data.get("levels")
        levels = None if given is None else count(given, "topology.levels", fail, MAX_LEVELS)
        down = _counts(data["down"], "topology.down", fail, levels, MAX_LEVELS)
        up = _counts(data["up"], "topology.up", fail, len(down), MAX_LEVELS)
        links = (
            (1,) * len(down)
            if data.get("links") is None
            else _counts(data["links"], "topology.links", fail, len(down), MAX_LEVELS)
        )
        ports = None if data.get("ports") is None else count(data["ports"], "topology.ports", fail)
        tree = FatTree(down, up, links, ports)
        fits(down, "topology.down", fail)
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


def _counts(value: Any, field: str, fail: Fail, size: int | None, most: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or len(value) > most:
        raise fail(field, f"give a list of 1 to {most} whole numbers, one per level")
    if size is not None and len(value) != size:
        raise fail(field, f"{len(value)} values for {size} level(s); give one per level")
    return tuple(count(v, f"{field}[{i}]", fail) for i, v in enumerate(value))


def _port_sum(tree: FatTree, level: int) -> str:
    text = f"{tree.down[level - 1]} down x {tree.links[level - 1]} link(s)"
    if level < tree.levels:
        text += f" + {tree.up[level]} up x {tree.links[level]} link(s)"
    return text
