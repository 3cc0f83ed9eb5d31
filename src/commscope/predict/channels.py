"""Channel counting: per transfer of a step, its level and how many transfers share its channel.

A transfer uses exactly one level's channels, chosen by where its ends run:

- same socket: that socket's memory controller, shared by every transfer inside the socket;
- two sockets of one node: the node's socket interconnect, full duplex: the transfer uses the
  send side of its source socket and the receive side of its destination socket;
- two nodes: the NICs, full duplex: the send side of the source node's NIC and the receive
  side of the destination node's (as in a SimGrid SPLITDUPLEX link). Between nodes behind
  different switches it also uses the uplink of each switch, up at the source and down at
  the destination; k transfers on an uplink count as k * (NIC rate / uplink rate) NIC-sized
  transfers, so the uplink binds when it is the narrower share.

A transfer's ``cf`` is the count on the busiest channel (side) it uses: it moves at the pace
of its most shared channel. Counts are of transfers; cost models map them to their own units.

:func:`count` counts any step transfer by transfer. :func:`count_classes` serves symmetric
placements and rotation-invariant steps: it counts only the first node's transfers, by step,
level and socket pair, which fixes every transfer's cf (every node carries the same).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commscope.predict.model import MEMORY, NIC, SOCKET, ClusterModel
from commscope.predict.placement import Placement


@dataclass(frozen=True)
class Usage:
    """Per transfer: level code (MEMORY, SOCKET, NIC) and transfers sharing its channel.

    ``fabric``: for an inter-node transfer, the inter-node transfers of its step (the load on
    the fabric, itself included); 0 inside a node.
    """

    level: NDArray[np.int8]
    cf: NDArray[np.float64]
    fabric: NDArray[np.float64]


def _shared(keys: NDArray[np.int64], size: int) -> NDArray[np.float64]:
    """Per key, how many keys are equal to it (keys are below ``size``)."""
    return np.bincount(keys, minlength=size)[keys].astype(np.float64)


def count(
    model: ClusterModel,
    placement: Placement,
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    step_of: NDArray[np.int64] | None = None,
    steps: int = 1,
) -> Usage:
    """Level and cf of every transfer of one step, or of several steps counted apart.

    Args:
        model: the cluster.
        placement: where ranks run.
        src: source rank per transfer.
        dst: destination rank per transfer (never equal to src).
        step_of: per transfer, the index of its step (below ``steps``); None for one step.
        steps: number of steps: channels are shared only within a step.

    Returns:
        The level and cf of each transfer.
    """
    node, sock = placement.node, placement.socket
    ns, nd, ss, sd = node[src], node[dst], sock[src], sock[dst]
    inter = ns != nd
    cross = ~inter & (ss != sd)
    local = ~inter & ~cross
    level = np.where(inter, NIC, np.where(cross, SOCKET, MEMORY)).astype(np.int8)
    cf = np.zeros(src.size, dtype=np.float64)
    fabric = np.zeros(src.size, dtype=np.float64)
    sockets = model.nodes * model.sockets
    # Each step has its own copy of every channel: keys are offset by step x channels.
    step = np.zeros(src.size, dtype=np.int64) if step_of is None else step_of
    if local.any():
        key = step[local] * sockets + ns[local] * model.sockets + ss[local]
        cf[local] = _shared(key, steps * sockets)
    if cross.any():
        key = step[cross] * sockets + ns[cross] * model.sockets
        cf[cross] = np.maximum(
            _shared(key + ss[cross], steps * sockets), _shared(key + sd[cross], steps * sockets)
        )
    if inter.any():
        a, b, k = ns[inter], nd[inter], step[inter]
        n = model.nodes
        nic = np.maximum(_shared(k * n + a, steps * n), _shared(k * n + b, steps * n))
        if model.switches:
            nic = np.maximum(nic, _uplinks(model, a, b, k, steps))
        cf[inter] = nic
        fabric[inter] = _shared(k, steps)
    return Usage(level, cf, fabric)


def _uplinks(
    model: ClusterModel,
    a: NDArray[np.int64],
    b: NDArray[np.int64],
    step: NDArray[np.int64],
    steps: int,
) -> NDArray[np.float64]:
    """NIC-equivalent cf on the uplinks of inter-node transfers (0 within one switch)."""
    sw = model.switch_of
    sa, sb = sw[a], sw[b]
    far = sa != sb
    out = np.zeros(a.size, dtype=np.float64)
    if far.any():
        n = len(model.switches)
        ratio = model.uplink_ratios()
        sa, sb, k = sa[far], sb[far], step[far] * n
        out[far] = np.maximum(
            _shared(k + sa, steps * n) * ratio[sa], _shared(k + sb, steps * n) * ratio[sb]
        )
    return out


@dataclass(frozen=True)
class ClassCounts:
    """Transfers of a symmetric placement's first node, per step, by level and socket pair.

    ``n[k, level, s, t]`` counts the transfers of step k at ``level`` from socket s (of the
    first node) to socket t (of the destination's node). Every node carries the same, so the
    cf of every transfer follows from this table (see :meth:`cf`).
    """

    n: NDArray[np.int64]

    def cf(self) -> NDArray[np.float64]:
        """The cf of each class, shaped like ``n``: memory per socket, link sides, NIC sides."""
        n = self.n.astype(np.float64)
        cf = np.zeros_like(n)
        sockets = n.shape[-1]
        diag = np.arange(sockets)
        cf[:, MEMORY, diag, diag] = n[:, MEMORY, diag, diag]
        out_side = n[:, SOCKET].sum(axis=2)  # per (step, source socket)
        in_side = n[:, SOCKET].sum(axis=1)  # per (step, destination socket)
        cf[:, SOCKET] = np.maximum(out_side[:, :, None], in_side[:, None, :])
        # The first node's NIC sends all its inter-node transfers; every NIC receives as much.
        cf[:, NIC] = n[:, NIC].sum(axis=(1, 2))[:, None, None]
        return cf

    def fabric(self, nodes: int) -> NDArray[np.float64]:
        """Per step, the inter-node transfers of all ``nodes`` nodes (each sends as many)."""
        return np.asarray(self.n[:, NIC].sum(axis=(1, 2)) * nodes, dtype=np.float64)


def count_classes(
    model: ClusterModel,
    placement: Placement,
    offsets: NDArray[np.int64],
    step_of: NDArray[np.int64],
    steps: int,
    chunk: int = 1 << 20,
) -> ClassCounts:
    """Class counts of rotation-invariant steps on a symmetric placement.

    Args:
        model: the cluster.
        placement: a symmetric placement (every node used looks alike).
        offsets: the offsets of every step, concatenated (rank r sends to r - d).
        step_of: per offset, the index of its step.
        steps: number of steps.
        chunk: transfers handled at once (bounds memory; counts are summed over chunks).
    """
    p, sockets = placement.p, model.sockets
    src = placement.first_node_ranks()
    node0 = placement.node[src[0]]
    classes = 3 * sockets * sockets
    total = np.zeros(steps * classes, dtype=np.int64)
    per = max(1, chunk // src.size)
    for a in range(0, offsets.size, per):
        d = offsets[a : a + per]
        s = np.repeat(src, d.size)
        t = (s - np.tile(d, src.size)) % p
        ss, sd, nd = placement.socket[s], placement.socket[t], placement.node[t]
        level = np.where(nd != node0, NIC, np.where(ss != sd, SOCKET, MEMORY))
        key = (np.tile(step_of[a : a + per], src.size) * 3 + level) * sockets
        total += np.bincount((key + ss) * sockets + sd, minlength=steps * classes)
    return ClassCounts(total.reshape(steps, 3, sockets, sockets))
