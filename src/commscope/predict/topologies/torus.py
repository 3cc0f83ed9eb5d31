"""A torus: dimension-ordered routing, each dimension the short way round a ring.

The hops are the sum of the ring distances. No switch: every node is a router, with no link
of its own (a node sends straight onto its ring links). Its ring links are counted one by one
(:meth:`Torus.route`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope.predict.topologies.base import Fail, Leaves
from commscope.predict.topologies.common import count, fits, pairs

MAX_DIMS = 8  # torus dimensions; real ones have up to 6


@dataclass(frozen=True)
class Torus:
    """A torus: nodes on a grid, each linked to its neighbours, rings in every dimension."""

    dims: tuple[int, ...]
    kind: ClassVar[str] = "torus"
    node_links: ClassVar[bool] = False  # a node sends straight onto its ring links
    yaml_keys: ClassVar[tuple[str, ...]] = ("kind", "dims")

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
        a, b = pairs(a, b)
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
        a, b = (v.ravel() for v in np.broadcast_arrays(*pairs(a, b)))
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

    @classmethod
    def from_yaml(cls, data: dict[str, Any], fail: Fail) -> Torus:
        """The torus of a ``topology:`` section whose keys are all of ``yaml_keys``."""
        if "dims" not in data:
            raise fail("topology.dims", "missing; a torus needs its dimensions, e.g. [8, 8, 16]")
        value = data["dims"]
        if not isinstance(value, list) or not value or len(value) > MAX_DIMS:
            raise fail(
                "topology.dims", f"give a list of 1 to {MAX_DIMS} dimensions, e.g. [8, 8, 16]"
            )
        torus = Torus(tuple(count(v, f"topology.dims[{i}]", fail) for i, v in enumerate(value)))
        fits(torus.dims, "topology.dims", fail)
        return torus
