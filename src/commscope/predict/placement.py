"""Placements of p processes: which node, socket and core each rank runs on.

Generated placements are n nodes x c ranks per node (n * c = p) that fit the model, with the
ranks of a node spread evenly over k of its sockets (every k that fits), consecutive local
ranks on one socket, and ranks ordered across nodes in ``block`` order (rank r on node r // c)
or ``cyclic`` order (rank r on node r % n). Nodes are taken switch by switch, so a placement
that fits under one switch gets one.

Such a placement looks the same from every node it uses: rotating ranks moves node 0's ranks
onto any other node's, sockets kept. Steps that are themselves rotation-invariant (every rank
sends to rank - d) can then be priced from node 0's transfers alone (``symmetric``). Behind
several switches a placement that uses as many nodes of each switch looks the same from every
switch: its first switch's ranks stand for all (``period``: nodes per switch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commscope.errors import PredictError
from commscope.predict.model import ClusterModel

ORDERS = ("block", "cyclic")


@dataclass(frozen=True)
class Placement:
    """Where each rank runs.

    Attributes:
        label: short name, e.g. ``2x4``, ``2x4/1s cyclic`` (``/ks``: k sockets per node, shown
            when several spreads fit) or ``hostfile hosts``.
        nodes: number of nodes used.
        per_node: ranks per node (the most on one node for explicit placements).
        sockets_used: sockets used per node (the most on one node for explicit placements).
        order: ``block``, ``cyclic`` or ``explicit``.
        node: per rank, the model's node index.
        socket: per rank, the socket within its node.
        core: per rank, the core within its socket.
        symmetric: every node used looks alike (see the module docstring).
        period: nodes whose ranks stand for all in a symmetric placement: 1, or behind
            several switches the nodes of each switch used.
    """

    label: str
    nodes: int
    per_node: int
    sockets_used: int
    order: str
    node: NDArray[np.int64] = field(repr=False, compare=False)
    socket: NDArray[np.int64] = field(repr=False, compare=False)
    core: NDArray[np.int64] = field(repr=False, compare=False)
    symmetric: bool = False
    period: int = 1

    @property
    def p(self) -> int:
        """Number of ranks."""
        return int(self.node.size)

    def node_ids(self) -> list[int]:
        """Model node indices used, in order of their first rank."""
        return [int(n) for n in dict.fromkeys(self.node.tolist())]

    def representatives(self) -> NDArray[np.int64]:
        """Ranks on the first ``period`` nodes: they stand for all in a symmetric placement."""
        first = self.node_ids()[: self.period]
        return np.flatnonzero(np.isin(self.node, first)).astype(np.int64)

    def to_json(self, model: ClusterModel | None = None) -> dict[str, Any]:
        """Plain dict; with ``model``, rank locations as host names too."""
        d: dict[str, Any] = {
            "label": self.label,
            "nodes": self.nodes,
            "per_node": self.per_node,
            "sockets_used": self.sockets_used,
            "order": self.order,
        }
        if model is not None:
            d["hosts"] = [model.node_names[n] for n in self.node_ids()]
        return d


def socket_layout(
    per_node: int, sockets_used: int, cores: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Socket and core of each local rank 0..per_node-1, spread evenly over sockets_used.

    The first ``per_node % sockets_used`` sockets take one rank more; consecutive local ranks
    share a socket. Raises PredictError when a socket would need more than ``cores`` ranks.
    """
    counts = np.full(sockets_used, per_node // sockets_used, dtype=np.int64)
    counts[: per_node % sockets_used] += 1
    if counts.max() > cores:
        raise PredictError(
            f"{per_node} ranks do not fit on {sockets_used} socket(s) of {cores} cores"
        )
    socket = np.repeat(np.arange(sockets_used, dtype=np.int64), counts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    core = np.arange(per_node, dtype=np.int64) - starts[socket]
    return socket, core


def _period(model: ClusterModel, used: NDArray[np.int64]) -> int:
    """Nodes per switch when ``used`` (taken switch by switch) looks alike from every switch.

    1: one switch (or none). 0: not symmetric: the switches hold unequal shares of the nodes,
    or their uplinks differ.
    """
    switch = model.switch_of[used]
    if (switch == switch[0]).all():
        return 1
    _, counts = np.unique(switch, return_counts=True)
    ratios = model.uplink_ratios()[switch]
    if (counts != counts[0]).any() or (ratios != ratios[0]).any():
        return 0
    return int(counts[0])


def regular(
    model: ClusterModel,
    nodes: int,
    per_node: int,
    order: str = "block",
    sockets_used: int | None = None,
) -> Placement:
    """The placement ``nodes`` x ``per_node`` in ``order`` over ``sockets_used`` sockets.

    Args:
        model: the cluster.
        nodes: nodes used.
        per_node: ranks per node.
        order: ``block`` or ``cyclic`` rank order across nodes.
        sockets_used: sockets per node to spread a node's ranks over; None takes all that
            can hold a rank.

    Raises:
        PredictError: the placement does not fit the model.
    """
    if order not in ORDERS:
        raise PredictError(f"rank order {order!r}: choose block or cyclic")
    if nodes > model.nodes or per_node > model.cores_per_node or nodes < 1 or per_node < 1:
        raise PredictError(f"{nodes}x{per_node} does not fit {model.describe()}")
    k = min(model.sockets, per_node) if sockets_used is None else sockets_used
    if not 1 <= k <= model.sockets:
        raise PredictError(f"{k} sockets per node: the model's nodes have {model.sockets}")
    local_socket, local_core = socket_layout(per_node, k, model.cores)
    ranks = np.arange(nodes * per_node, dtype=np.int64)
    if order == "block":
        slot, local = ranks // per_node, ranks % per_node
    else:
        slot, local = ranks % nodes, ranks // nodes
    used = np.array(model.node_order()[:nodes], dtype=np.int64)
    period = _period(model, used)
    label = f"{nodes}x{per_node}"
    if -(-per_node // model.cores) < min(model.sockets, per_node):  # other spreads fit too
        label += f"/{k}s"
    if order == "cyclic" and nodes > 1 and per_node > 1:
        label += " cyclic"
    return Placement(
        label=label,
        nodes=nodes,
        per_node=per_node,
        sockets_used=k,
        order=order,
        node=used[slot],
        socket=local_socket[local],
        core=local_core[local],
        symmetric=period > 0,
        period=max(period, 1),
    )


def enumerate_placements(
    model: ClusterModel, p: int, orders: tuple[str, ...] = ORDERS
) -> list[Placement]:
    """Every regular placement of ``p`` ranks that fits the model.

    For each n x c with n * c = p, n <= nodes and c <= cores per node: each number of sockets
    per node that can hold c ranks, in each order. Cyclic order is left out where it equals
    block order (one node, or one rank per node).

    Raises:
        PredictError: ``p`` is below 1 or no placement fits.
    """
    if p < 1:
        raise PredictError(f"{p} processes: give at least 1")
    out = []
    for nodes in range(1, min(p, model.nodes) + 1):
        if p % nodes or p // nodes > model.cores_per_node:
            continue
        per_node = p // nodes
        first_k = -(-per_node // model.cores)
        for k in range(first_k, min(model.sockets, per_node) + 1):
            for order in orders:
                if order == "cyclic" and (nodes == 1 or per_node == 1) and "block" in orders:
                    continue
                out.append(regular(model, nodes, per_node, order, k))
    if not out:
        raise PredictError(
            f"{p} processes fit no n x c placement of {model.describe()}"
            f" ({model.cores_per_node} cores per node)"
        )
    return out
