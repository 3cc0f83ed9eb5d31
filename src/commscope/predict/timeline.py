"""Pricing on a timeline: transfers share channels with whatever else is in flight.

Step-by-step pricing counts a channel's sharers within one step. Where a rank's steps overlap
another rank's (Open MPI's binomial Bcast: a child forwards while its parent still sends to
its siblings over the same NIC), the count has to follow time instead. Each transfer starts
once both its ranks are done with their transfers of earlier steps; while it is in flight it
advances at 1 / t(m, cf) of its bytes per second, cf counted over the transfers in flight at
that moment (``channels.count``), so a transfer that keeps one cf takes exactly t(m, cf).

A transfer between nodes whose two NICs carry nothing the other way while it flows (a fan-in
or fan-out, no pair exchange) is priced at the NIC's nominal rate, cf m / B, when the cost
model has one for the level: the t(m, cf) tables are pair exchanges, which on the virtual
cluster move at about 84 % of the tbf rate each way, while Open MPI's one-way Bcast and
Gather flows measured about 95 % of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commscope.predict import channels
from commscope.predict.cost import CombinedCost, CostModel, TableCost, with_fabric
from commscope.predict.model import LEVELS, NIC, ClusterModel
from commscope.predict.patterns import Pattern
from commscope.predict.placement import Placement

DONE = 1.0 - 1e-9  # progress at which a transfer counts as finished (float rounding)


@dataclass(frozen=True)
class Timeline:
    """Start and end of every transfer, in pattern order."""

    step: NDArray[np.int64]
    start_s: NDArray[np.float64]
    end_s: NDArray[np.float64]
    level: NDArray[np.int8]
    max_cf: NDArray[np.float64]  # per level, the most transfers on one channel at once
    missing: tuple[str, ...]

    def step_s(self, steps: int) -> NDArray[np.float64]:
        """Per step, its longest transfer."""
        out = np.zeros(steps)
        np.maximum.at(out, self.step, self.end_s - self.start_s)
        return out


def nominal_Bps(cost: CostModel, level: str) -> float | None:
    """The nominal rate a table cost model floors ``level`` at, if any."""
    owner = cost.owners.get(level) if isinstance(cost, CombinedCost) else cost
    return owner.floor_Bps.get(level) if isinstance(owner, TableCost) else None


def _one_way(
    node: NDArray[np.int64], src: NDArray[np.int64], dst: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """Per transfer: between nodes, and nothing in flight goes the other way between NICs.

    That is, no transfer leaves its destination node or enters its source node.
    """
    ns, nd = node[src], node[dst]
    inter = ns != nd
    senders, receivers = set(ns[inter].tolist()), set(nd[inter].tolist())
    back = np.array(
        [a in receivers or b in senders for a, b in zip(ns.tolist(), nd.tolist(), strict=True)],
        dtype=bool,
    )
    return np.asarray(inter & ~back, dtype=bool)


def run(model: ClusterModel, placement: Placement, pattern: Pattern, cost: CostModel) -> Timeline:
    """Play ``pattern`` on ``placement``: when each transfer starts and ends."""
    parts = [(k, s.transfers(pattern.p)) for k, s in enumerate(pattern.steps)]
    parts = [(k, t) for k, t in parts if t[0].size]
    if not parts:
        empty = np.zeros(0)
        return Timeline(
            np.zeros(0, np.int64), empty, empty, np.zeros(0, np.int8), np.zeros(len(LEVELS)), ()
        )
    src = np.concatenate([t[0] for _, t in parts])
    dst = np.concatenate([t[1] for _, t in parts])
    nbytes = np.concatenate([t[2] for _, t in parts])
    step = np.repeat(np.array([k for k, _ in parts]), [t[0].size for _, t in parts])
    n = src.size
    # waits[i, j]: transfer i waits for j (an earlier step of one of i's ranks).
    ends = np.stack((src, dst), axis=1)
    shares = (ends[:, None, :, None] == ends[None, :, None, :]).any(axis=(2, 3))
    waits = shares & (step[:, None] > step[None, :])
    pending = waits.sum(axis=1)
    level = channels.count(model, placement, src, dst).level
    known = set(cost.sources())
    missing = tuple(lv for c, lv in enumerate(LEVELS) if (level == c).any() and lv not in known)
    rate_nic = nominal_Bps(cost, LEVELS[NIC])
    start = np.where(pending == 0, 0.0, np.nan)
    end = np.full(n, np.nan)
    done = np.zeros(n)
    max_cf = np.zeros(len(LEVELS))
    now = 0.0
    while np.isnan(end).any():
        act = np.flatnonzero(~np.isnan(start) & np.isnan(end))
        usage = channels.count(model, placement, src[act], dst[act])
        cf = usage.cf
        took = np.zeros(act.size)
        for code, lv in enumerate(LEVELS):
            sel = level[act] == code
            if not sel.any():
                continue
            max_cf[code] = max(max_cf[code], float(cf[sel].max()))
            if lv in known:
                took[sel] = cost.time_s(lv, nbytes[act][sel], cf[sel])
        if rate_nic:
            alone = _one_way(placement.node, src[act], dst[act])
            took[alone] = cf[alone] * nbytes[act][alone] / rate_nic
        nic = level[act] == NIC
        took[nic] = with_fabric(cost, known, took[nic], nbytes[act][nic], usage.fabric[nic])
        # Unpriced (and empty) transfers finish at once; the rest advance at 1 / took.
        left = np.where(took > 0, (1.0 - done[act]) * took, 0.0)
        dt = float(left.min())
        done[act] = np.where(took > 0, done[act] + dt / np.where(took > 0, took, 1.0), 1.0)
        now += dt
        fin = act[done[act] >= DONE]
        end[fin] = now
        pending -= waits[:, fin].sum(axis=1)
        start[np.isnan(start) & (pending == 0)] = now
    return Timeline(step, start, end, level, max_cf, missing)
