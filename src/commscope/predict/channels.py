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

:func:`slots` names the channel sides of each transfer, once; :func:`count` counts any
step transfer by transfer from them, and the timeline recounts the sides of the transfers in
flight at each event. :func:`count_classes` serves symmetric
placements and rotation-invariant steps: it counts only the first node's transfers (behind
several switches, the first switch's), by step, level and socket pair, which fixes every
transfer's cf (every node carries the same, and every switch).
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


@dataclass(frozen=True)
class Slots:
    """Per transfer: its level and the channel sides it uses, with its count on each.

    ``key[i]`` names up to four channel sides (below ``sides``; the unused ones are ``sides``
    itself, weighted 0). A transfer counts 1 on a memory controller, a socket link side or a
    NIC side, and NIC rate / uplink rate on an uplink side. Given how many transfers use each
    side, a transfer's cf is the largest weighted count over its sides.
    """

    level: NDArray[np.int8]
    key: NDArray[np.int64]
    weight: NDArray[np.float64]
    sides: int


def slots(
    model: ClusterModel, placement: Placement, src: NDArray[np.int64], dst: NDArray[np.int64]
) -> Slots:
    """The level and channel sides of every transfer (see :class:`Slots`)."""
    node, sock = placement.node, placement.socket
    ns, nd, ss, sd = node[src], node[dst], sock[src], sock[dst]
    inter = ns != nd
    cross = ~inter & (ss != sd)
    level = np.where(inter, NIC, np.where(cross, SOCKET, MEMORY)).astype(np.int8)
    # Side numbering: memory controllers, socket link out and in sides (one per socket of
    # the cluster each), NIC send and receive sides (one per node each), uplink up and down
    # sides (one per switch each), then the unused slot.
    sockets, n = model.nodes * model.sockets, model.nodes
    switches = len(model.switches)
    nic0 = 3 * sockets
    up0 = nic0 + 2 * n
    sides = up0 + 2 * switches
    key = np.full((src.size, 4), sides, dtype=np.int64)
    weight = np.zeros((src.size, 4))
    here = ns * model.sockets
    key[:, 0] = np.where(inter, nic0 + ns, np.where(cross, sockets + here + ss, here + ss))
    key[:, 1] = np.where(inter, nic0 + n + nd, np.where(cross, 2 * sockets + here + sd, sides))
    weight[:, 0] = 1.0
    weight[:, 1] = np.where(inter | cross, 1.0, 0.0)
    if switches:
        sw = model.switch_of
        far = inter & (sw[ns] != sw[nd])
        ratio = model.uplink_ratios()
        key[far, 2] = up0 + sw[ns[far]]
        key[far, 3] = up0 + switches + sw[nd[far]]
        weight[far, 2] = ratio[sw[ns[far]]]
        weight[far, 3] = ratio[sw[nd[far]]]
    return Slots(level, key, weight, sides)


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
    used = slots(model, placement, src, dst)
    inter = used.level == NIC
    step = np.zeros(src.size, dtype=np.int64) if step_of is None else step_of
    # Each step has its own copy of every side: keys are offset by step x sides.
    per = used.sides + 1
    key = used.key + (step * per)[:, None]
    users = np.bincount(key.ravel(), minlength=steps * per)
    cf = np.asarray((users[key] * used.weight).max(axis=1), dtype=np.float64)
    fabric = np.zeros(src.size)
    fabric[inter] = np.bincount(step[inter], minlength=steps)[step[inter]]
    return Usage(used.level, cf, fabric)


FAR = 3  # a class of its own: inter-node transfers that leave their switch (NIC and uplinks)


@dataclass(frozen=True)
class ClassCounts:
    """Transfers of a symmetric placement's representatives, per step, by class and socket pair.

    ``n[k, c, s, t]`` counts the transfers of step k in class c (MEMORY, SOCKET, NIC, or FAR:
    between nodes behind different switches) from socket s to socket t, over the ranks of the
    placement's first ``period`` nodes. Every node carries the same memory, socket and NIC
    load, and every switch the same uplink load, so the cf of every transfer follows from this
    table (see :meth:`cf`). ``ratio``: NIC rate / uplink rate of the switches (0: none).
    """

    n: NDArray[np.int64]
    period: int = 1
    ratio: float = 0.0

    def cf(self) -> NDArray[np.float64]:
        """The cf of each class, shaped like ``n``.

        Memory per socket, link sides, NIC sides, and for FAR the busier of NIC and uplink.
        """
        n = self.n.astype(np.float64) / self.period  # one node's share
        cf = np.zeros_like(n)
        sockets = n.shape[-1]
        diag = np.arange(sockets)
        cf[:, MEMORY, diag, diag] = n[:, MEMORY, diag, diag]
        out_side = n[:, SOCKET].sum(axis=2)  # per (step, source socket)
        in_side = n[:, SOCKET].sum(axis=1)  # per (step, destination socket)
        cf[:, SOCKET] = np.maximum(out_side[:, :, None], in_side[:, None, :])
        # Each node's NIC sends all its inter-node transfers; every NIC receives as much.
        nic = n[:, NIC].sum(axis=(1, 2)) + n[:, FAR].sum(axis=(1, 2))
        cf[:, NIC] = nic[:, None, None]
        # Each switch's uplink carries its nodes' far transfers up, and as many come down.
        uplink = self.n[:, FAR].sum(axis=(1, 2)) * self.ratio
        cf[:, FAR] = np.maximum(nic, uplink)[:, None, None]
        return cf

    def fabric(self, nodes: int) -> NDArray[np.float64]:
        """Per step, the inter-node transfers of all ``nodes`` nodes (each sends as many)."""
        inter = self.n[:, NIC].sum(axis=(1, 2)) + self.n[:, FAR].sum(axis=(1, 2))
        return np.asarray(inter * nodes / self.period, dtype=np.float64)


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
        placement: a symmetric placement (every node used looks alike, and every switch).
        offsets: the offsets of every step, concatenated (rank r sends to r - d).
        step_of: per offset, the index of its step.
        steps: number of steps.
        chunk: transfers handled at once (bounds memory; counts are summed over chunks).
    """
    p, sockets = placement.p, model.sockets
    src = placement.representatives()
    switch = model.switch_of
    home = switch[placement.node[src[0]]]
    classes = 4 * sockets * sockets
    total = np.zeros(steps * classes, dtype=np.int64)
    per = max(1, chunk // src.size)
    for a in range(0, offsets.size, per):
        d = offsets[a : a + per]
        s = np.repeat(src, d.size)
        t = (s - np.tile(d, src.size)) % p
        ss, sd = placement.socket[s], placement.socket[t]
        ns, nd = placement.node[s], placement.node[t]
        level = np.where(ns != nd, NIC, np.where(ss != sd, SOCKET, MEMORY))
        level = np.where(switch[nd] != home, FAR, level)
        key = (np.tile(step_of[a : a + per], src.size) * 4 + level) * sockets
        total += np.bincount((key + ss) * sockets + sd, minlength=steps * classes)
    ratio = float(model.uplink_ratios()[home]) if home >= 0 else 0.0
    return ClassCounts(total.reshape(steps, 4, sockets, sockets), placement.period, ratio)
