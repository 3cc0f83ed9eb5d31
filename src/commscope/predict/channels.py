"""Channel counting: per transfer of a step, its level and how many transfers share its channel.

A transfer uses exactly one level's channels, chosen by where its ends run:

- same socket: that socket's memory controller, shared by every transfer inside the socket;
- two sockets of one node: the node's socket interconnect, full duplex: the transfer uses the
  send side of its source socket and the receive side of its destination socket;
- two nodes: the NICs, full duplex: the send side of the source node's NIC and the receive
  side of the destination node's (as in a SimGrid SPLITDUPLEX link). Between nodes behind
  different switches it also uses the uplink of each switch, up at the source and down at
  the destination; k transfers on an uplink count as k * (NIC rate / uplink rate) NIC-sized
  transfers, so the uplink binds when it is the narrower share. Where the topology counts
  its links one by one (a dragonfly's router, chassis and group links, a torus' ring
  links), a transfer uses every link of its route instead of uplinks, each counted the same
  way at its rate; a torus node has no link of its own, so there its NIC sides count 0.

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

    ``key[:, i]`` names the channel sides transfer i uses (below ``sides``; the unused ones
    are ``sides`` itself, weighted 0): four, or two and a route's links where the topology
    counts its links one by one. A transfer counts 1 on a memory controller, a socket link side or a
    NIC side, and NIC rate / uplink rate on an uplink side (or on a link of its route).
    Given how many transfers use each side, a transfer's cf is the largest weighted count
    over its sides.
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
    # sides (one per switch each; or one per direction of each link a route may take), then
    # the unused slot.
    sockets, n = model.nodes * model.sockets, model.nodes
    switches = len(model.switches)
    topo = model.topology
    links = None if topo is None else topo.inner_links()
    route = None if topo is None or links is None else topo.route(ns[inter], nd[inter])
    nic0 = 3 * sockets
    up0 = nic0 + 2 * n
    sides = up0 + (2 * switches if links is None else links.size)
    # One row per side a transfer may use, one column per transfer.
    width = 4 if route is None else 2 + route.shape[0]
    key = np.full((width, src.size), sides, dtype=np.int64)
    weight = np.zeros((width, src.size))
    here = ns * model.sockets
    key[0] = np.where(inter, nic0 + ns, np.where(cross, sockets + here + ss, here + ss))
    key[1] = np.where(inter, nic0 + n + nd, np.where(cross, 2 * sockets + here + sd, sides))
    weight[0] = 1.0
    weight[1] = np.where(inter | cross, 1.0, 0.0)
    if topo is not None and route is not None and links is not None:
        taken = route >= 0
        on_route = np.where(taken, up0 + route, sides)
        share = np.where(taken, links[np.maximum(route, 0)], 0.0)
        if inter.all():  # the usual case at scale: no mask to apply
            key[2:], weight[2:] = on_route, share
        else:
            key[2:, inter], weight[2:, inter] = on_route, share
        if not topo.node_links:  # a torus node sends straight onto its ring links: no NIC
            weight[:2, inter] = 0.0
    elif switches:
        sw = model.switch_of
        far = inter & (sw[ns] != sw[nd])
        ratio = model.uplink_ratios()
        key[2, far] = up0 + sw[ns[far]]
        key[3, far] = up0 + switches + sw[nd[far]]
        weight[2, far] = ratio[sw[ns[far]]]
        weight[3, far] = ratio[sw[nd[far]]]
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
    key = used.key + step * per
    users = np.bincount(key.ravel(), minlength=steps * per)
    cf = np.asarray((users[key] * used.weight).max(axis=0), dtype=np.float64)
    fabric = np.zeros(src.size)
    fabric[inter] = np.bincount(step[inter], minlength=steps)[step[inter]]
    return Usage(used.level, cf, fabric)


FAR = 3  # a class of its own: inter-node transfers that leave their switch (NIC and uplinks)


@dataclass(frozen=True)
class ClassCounts:
    """Transfers of a symmetric placement's representatives, per step, by class and socket pair.

    ``n[k, c, s, t]`` counts the transfers of step k in class c (MEMORY, SOCKET, NIC, or FAR:
    between nodes behind different switches) from socket s to socket t, over the ranks of the
    placement's first ``period`` nodes (behind switches, all of the first switch's). Every
    node carries the same memory, socket and NIC load, and every switch the same uplink load,
    so the cf of every transfer follows from this table (see :meth:`cf`), and a far
    transfer's from ``far`` (see :meth:`far_cf`).

    ``far[k, g]``: the far transfers of step k to switch g. ``uplink_ratio``: NIC rate / the
    first switch's uplink rate. ``extra_s`` (like ``n``) and ``far_extra_s`` (like ``far``):
    the most route latency beyond one switch's (``ClusterModel.extra_latency_s``) of any of
    those transfers; None: no transfer has any.
    """

    n: NDArray[np.int64]
    period: int = 1
    far: NDArray[np.int64] | None = None
    uplink_ratio: float = 0.0
    extra_s: NDArray[np.float64] | None = None
    far_extra_s: NDArray[np.float64] | None = None

    def _nic(self) -> NDArray[np.float64]:
        """Per step, one NIC side's transfers (a node sends all its inter-node ones)."""
        n = self.n.astype(np.float64) / self.period
        return np.asarray(n[:, NIC].sum(axis=(1, 2)) + n[:, FAR].sum(axis=(1, 2)))

    def cf(self) -> NDArray[np.float64]:
        """The cf of the MEMORY, SOCKET and NIC classes, shaped like ``n`` (FAR: 0).

        Memory per socket, socket link sides, NIC sides.
        """
        n = self.n.astype(np.float64) / self.period  # one node's share
        cf = np.zeros_like(n)
        sockets = n.shape[-1]
        diag = np.arange(sockets)
        cf[:, MEMORY, diag, diag] = n[:, MEMORY, diag, diag]
        out_side = n[:, SOCKET].sum(axis=2)  # per (step, source socket)
        in_side = n[:, SOCKET].sum(axis=1)  # per (step, destination socket)
        cf[:, SOCKET] = np.maximum(out_side[:, :, None], in_side[:, None, :])
        cf[:, NIC] = self._nic()[:, None, None]
        return cf

    def far_cf(self) -> NDArray[np.float64]:
        """Per step and target switch, a far transfer's cf.

        The busier of its NIC sides and the uplink it shares with the first switch's other
        far transfers (each uplink carries its switch's far transfers up, and as many come
        down).
        """
        if self.far is None:
            return np.zeros((self.n.shape[0], 0))
        links = np.broadcast_to(
            self.far.sum(axis=1, keepdims=True) * self.uplink_ratio, self.far.shape
        )
        return np.asarray(np.maximum(self._nic()[:, None], links), dtype=np.float64)

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
    switches = len(model.switches)
    classes = 4 * sockets * sockets
    total = np.zeros(steps * classes, dtype=np.int64)
    extra = np.zeros(steps * classes)
    far = np.zeros(steps * max(switches, 1), dtype=np.int64)
    far_extra = np.zeros(far.size)
    per = max(1, chunk // src.size)
    timed = model.has_route_latency()
    for a in range(0, offsets.size, per):
        d = offsets[a : a + per]
        s = np.repeat(src, d.size)
        t = (s - np.tile(d, src.size)) % p
        ss, sd = placement.socket[s], placement.socket[t]
        ns, nd = placement.node[s], placement.node[t]
        level = np.where(ns != nd, NIC, np.where(ss != sd, SOCKET, MEMORY))
        level = np.where(switch[nd] != home, FAR, level)
        step = np.tile(step_of[a : a + per], src.size)
        cell = ((step * 4 + level) * sockets + ss) * sockets + sd
        total += np.bincount(cell, minlength=steps * classes)
        out = level == FAR
        # Without any latency every route's extra is 0: skip finding it.
        route = model.extra_latency_s(ns, nd) if timed else None
        if route is not None:
            np.maximum.at(extra, cell[~out], route[~out])
        if switches and out.any():
            target = step[out] * switches + switch[nd[out]]
            far += np.bincount(target, minlength=far.size)
            if route is not None:
                np.maximum.at(far_extra, target, route[out])
    n = total.reshape(steps, 4, sockets, sockets)
    if home < 0:
        return ClassCounts(
            n, placement.period, extra_s=extra.reshape(n.shape) if extra.any() else None
        )
    return ClassCounts(
        n,
        placement.period,
        far.reshape(steps, switches),
        float(model.uplink_ratios()[home]),
        extra.reshape(n.shape) if extra.any() else None,
        far_extra.reshape(steps, switches) if far_extra.any() else None,
    )
