"""Pricing on a timeline: transfers share channels with whatever else is in flight.

Step-by-step pricing counts a channel's sharers within one step. Where a rank's steps overlap
another rank's (Open MPI's binomial Bcast: a child forwards while its parent still sends to
its siblings over the same NIC), the count has to follow time instead. Each transfer starts
once both its ranks are done with their transfers of earlier steps; while it is in flight it
advances at 1 / t(m, cf) of its bytes per second, cf counted over the transfers in flight at
that moment (``channels.slots``), so a transfer that keeps one cf takes exactly t(m, cf).

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

from commscope.predict import channels, pricing
from commscope.predict.cost import FABRIC, CombinedCost, CostModel, TableCost, with_fabric
from commscope.predict.model import LEVELS, NIC, ClusterModel
from commscope.predict.patterns import Pattern
from commscope.predict.placement import Placement

DONE = 1.0 - 1e-9  # progress at which a transfer counts as finished (float rounding)
NEVER = np.iinfo(np.int64).max  # the step of no unfinished transfer


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


@dataclass(frozen=True)
class _Plan:
    """What a pattern gives every placement alike: its transfers, in step order."""

    src: NDArray[np.int64]
    dst: NDArray[np.int64]
    nbytes: NDArray[np.int64]
    step: NDArray[np.int64]
    pending: NDArray[np.int64]  # per transfer end, sorted by rank: its transfer's step
    end_at: NDArray[np.int64]  # where each transfer's two ends went in that order
    first: NDArray[np.int64]  # where each rank's ends begin
    rank: NDArray[np.int64]  # the rank of each such run of ends

    @classmethod
    def of(cls, pattern: Pattern) -> _Plan | None:
        """The plan of ``pattern`` (None: it moves nothing)."""
        (src, dst, nbytes), step = pattern.flat()
        if not src.size:
            return None
        ranks = np.concatenate((src, dst))
        by_rank = np.argsort(ranks, kind="stable")
        end_at = np.empty_like(by_rank)
        end_at[by_rank] = np.arange(by_rank.size)
        sorted_ranks = ranks[by_rank]
        first = np.flatnonzero(np.r_[True, sorted_ranks[1:] != sorted_ranks[:-1]])
        plan = cls(
            src, dst, nbytes, step, step[by_rank % src.size], end_at, first, sorted_ranks[first]
        )
        for a in vars(plan).values():  # shared by every placement's timeline: read only
            a.flags.writeable = False
        return plan


# The last pattern planned: ranking placements plays one pattern on each in turn.
_last: tuple[Pattern, _Plan | None] | None = None


def _plan(pattern: Pattern) -> _Plan | None:
    global _last
    kept = _last
    if kept is None or kept[0] is not pattern:
        kept = (pattern, _Plan.of(pattern))
        _last = kept
    return kept[1]


class _Order:
    """Which transfers may start: both their ranks are done with every earlier step.

    Kept per rank as the lowest step among its unfinished transfers: the transfers' ends
    sorted by rank, each end's step until its transfer finishes; one reduction per event,
    with no transfer-by-transfer table.
    """

    def __init__(self, plan: _Plan):
        self.plan = plan
        self.pending = plan.pending.copy()
        self.low = np.full(int(plan.rank[-1]) + 1, NEVER)

    def finish(self, transfers: NDArray[np.int64]) -> None:
        """Mark ``transfers`` finished."""
        self.pending[self.plan.end_at[transfers]] = NEVER
        self.pending[self.plan.end_at[transfers + self.plan.src.size]] = NEVER

    def ready(self) -> NDArray[np.bool_]:
        """Per transfer: both its ranks have no unfinished transfer of an earlier step."""
        p = self.plan
        self.low[p.rank] = np.minimum.reduceat(self.pending, p.first)
        return (self.low[p.src] >= p.step) & (self.low[p.dst] >= p.step)


def _one_way(
    ns: NDArray[np.int64], nd: NDArray[np.int64], inter: NDArray[np.bool_], nodes: int
) -> NDArray[np.bool_]:
    """Per transfer: between nodes, and nothing in flight goes the other way between NICs.

    That is, no inter-node transfer leaves its destination node or enters its source node.
    """
    sending = np.bincount(ns[inter], minlength=nodes) > 0
    receiving = np.bincount(nd[inter], minlength=nodes) > 0
    return np.asarray(inter & ~receiving[ns] & ~sending[nd], dtype=np.bool_)


def run(model: ClusterModel, placement: Placement, pattern: Pattern, cost: CostModel) -> Timeline:
    """Play ``pattern`` on ``placement``: when each transfer starts and ends."""
    plan = _plan(pattern)
    if plan is None:
        empty = np.zeros(0)
        return Timeline(
            np.zeros(0, np.int64), empty, empty, np.zeros(0, np.int8), np.zeros(len(LEVELS)), ()
        )
    src, dst, nbytes, step = plan.src, plan.dst, plan.nbytes, plan.step
    n = src.size
    used = channels.slots(model, placement, src, dst)
    level = used.level
    known = set(cost.sources())
    present = [c for c in range(len(LEVELS)) if (level == c).any()]
    missing = tuple(LEVELS[c] for c in present if LEVELS[c] not in known)
    priced = [(c, LEVELS[c]) for c in present if LEVELS[c] in known]
    fabric = FABRIC in known
    rate_nic = nominal_Bps(cost, LEVELS[NIC])
    node = placement.node
    # What each inter-node transfer's route adds beyond one switch's: its own, whatever cf.
    route = np.zeros(n)
    between = level == NIC
    if between.any() and LEVELS[NIC] in known:
        route[between] = pricing.route_s(
            model, placement, src[between], dst[between], nbytes[between], cost
        )
    order = _Order(plan)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    unstarted = np.ones(n, dtype=bool)
    in_flight = np.zeros(n, dtype=bool)
    done = np.zeros(n)
    # Each transfer's price at the cf it had last: priced again only when its cf changes
    # (unpriced levels cost 0: their transfers finish at once); and the most cf it had.
    priced_s = np.zeros(n)
    priced_cf = np.zeros(n)  # 0: not priced yet (a transfer's cf is at least 1)
    peak_cf = np.zeros(n)
    now = 0.0
    while True:
        begin = order.ready() & unstarted
        start[begin] = now
        unstarted &= ~begin
        in_flight |= begin
        act = np.flatnonzero(in_flight)
        if not act.size:
            break
        key = used.key[:, act]
        cf = (np.bincount(key.ravel(), minlength=used.sides + 1)[key] * used.weight[:, act]).max(0)
        changed = cf != priced_cf[act]
        if changed.any():
            again, new_cf = act[changed], cf[changed]
            if len(priced) == len(present) == 1:  # one level, priced: no sorting by level
                priced_s[again] = cost.time_s(priced[0][1], nbytes[again], new_cf)
            else:
                at = level[again]
                for code, lv in priced:
                    sel = at == code
                    if sel.any():
                        priced_s[again[sel]] = cost.time_s(lv, nbytes[again[sel]], new_cf[sel])
            priced_cf[again] = new_cf
            peak_cf[again] = np.maximum(peak_cf[again], new_cf)
        took = priced_s[act]
        nic = level[act] == NIC
        if nic.any():
            if rate_nic:
                alone = _one_way(node[src[act]], node[dst[act]], nic, model.nodes)
                took[alone] = cf[alone] * nbytes[act[alone]] / rate_nic
            if fabric:
                k = np.count_nonzero(nic)
                load = np.full(k, float(k))
                took[nic] = with_fabric(cost, known, took[nic], nbytes[act[nic]], load)
            took[nic] += route[act[nic]]
        # Unpriced (and empty) transfers finish at once; the rest advance at 1 / took.
        dt = float(((1.0 - done[act]) * took).min())
        with np.errstate(divide="ignore", invalid="ignore"):  # took 0: replaced by 1.0
            moved = np.where(took > 0, done[act] + dt / took, 1.0)
        done[act] = moved
        now += dt
        fin = act[moved >= DONE]
        end[fin] = now
        in_flight[fin] = False
        order.finish(fin)
    max_cf = np.zeros(len(LEVELS))
    for c in present:
        max_cf[c] = peak_cf[level == c].max()
    return Timeline(step, start, end, level, max_cf, missing)
