"""Cost of a transfer of m bytes at a level when its channel carries cf transfers.

Two models, and a combination that takes each level from the first model that has it:

- :class:`TableCost`, the method of Peryshkova and Kurnosov 2018 (contention-aware placement):
  the measured t(m, cf) of the level. Table cells are cf pairs exchanging at once, so a shared
  memory controller carries 2 cf transfers while each side of a duplex socket link or NIC
  carries cf: a count of k transfers reads the memory table at cf = k / 2 and the others at
  cf = k. A cell is half its exchange's time (the benchmark divides by 2 nruns: two transfers
  per exchange), but both transfers of an exchange are in flight for all of it, so a transfer
  sharing its channel that way takes the whole exchange: 2 t(m, cf). Between measured points:
  linear in cf, and a power law in m (linear in log m and log t), exact for t proportional to m.
  Outside them: below the smallest cf, the smallest cf's time (a lone transfer costs at least
  t(m, 1)); beyond the largest cf, t(m, cf_max) * cf / cf_max (the channel is saturated, every
  transfer takes an equal share); beyond the largest size, t(m_max, cf) * m / m_max
  (bandwidth-bound); below the smallest size, the power law of the first two sizes with its
  exponent clamped to [0, 1] (between latency-bound and bandwidth-bound). With a single size,
  linear in m.
- :class:`HockneyCost`: t = alpha + cf * m / beta, cf transfers sharing the bandwidth beta,
  from Hockney fits of measured ping-pong (per protocol regime) or the model's nominal rates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope.analysis import p2p
from commscope.analysis.contention import LevelTable
from commscope.data.records import Point
from commscope.predict.model import LEVELS, NIC, ClusterModel, Link
from commscope.units import size_text

# The fabric is no channel a transfer picks: it bounds every inter-node transfer by what the
# switch carries when that many node pairs exchange at once (contention level "fabric").
FABRIC = "fabric"
# Transfers a table's cf stands for: a memory cell's cf pairs are 2 cf transfers through the
# controller, a NIC side carries one per pair, the fabric two per (node) pair.
TRANSFERS_PER_CF = {"memory": 2.0, "socket": 1.0, "nic": 1.0, FABRIC: 2.0}
TRANSFERS_PER_EXCHANGE = 2.0  # a send and a receive: t(m, cf) is an exchange's time over 2
# Pair labels of point-to-point runs and the levels their figures stand for.
PAIR_LEVELS = {
    "intra-socket": ("memory",),
    "inter-socket": ("socket",),
    "intra-node": ("memory", "socket"),
    "inter-node": ("nic",),
}


class CostModel(Protocol):
    """What the predictor needs from a cost model."""

    def sources(self) -> dict[str, str]:
        """Per level it can cost: where its figures come from, in words."""
        ...

    def time_s(
        self, level: str, nbytes: NDArray[np.int64], cf: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Time of each transfer: ``nbytes`` at ``level`` with ``cf`` transfers sharing."""
        ...

    def route_s(
        self, nbytes: NDArray[np.int64], extra_s: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """What a route ``extra_s`` of nominal latency longer than the NIC level's adds."""
        ...


@dataclass(frozen=True)
class Grid:
    """A dense t(m, cf) table: positive sizes ascending, cf ascending, every cell positive."""

    sizes: NDArray[np.float64]
    cfs: NDArray[np.float64]
    t_s: NDArray[np.float64]

    @classmethod
    def from_table(cls, table: LevelTable) -> Grid | None:
        """Fill unmeasured cells along cf (as the module docstring says); None if empty.

        Rows of size 0 and cells that are NaN or not positive count as unmeasured.
        """
        cfs = np.asarray(table.cfs, dtype=np.float64)
        rows, sizes = [], []
        for m, row in zip(
            table.sizes.tolist(), np.asarray(table.t_s, dtype=np.float64), strict=True
        ):
            ok = np.isfinite(row) & (row > 0)
            if m <= 0 or not ok.any():
                continue
            c, t = cfs[ok], row[ok]
            filled = np.interp(cfs, c, t)  # inside: linear; below the first: its value
            beyond = cfs > c[-1]
            filled[beyond] = t[-1] * cfs[beyond] / c[-1]
            rows.append(filled)
            sizes.append(float(m))
        if not rows:
            return None
        return cls(np.array(sizes), cfs, np.array(rows))

    def _at_cf(self, rows: NDArray[np.int64], x: NDArray[np.float64]) -> NDArray[np.float64]:
        c, t = self.cfs, self.t_s
        if c.size == 1:
            single: NDArray[np.float64] = t[rows, 0] * x / c[0]
            return single
        j = np.clip(np.searchsorted(c, x, side="right") - 1, 0, c.size - 2)
        lo, hi = t[rows, j], t[rows, j + 1]
        inside = lo + (x - c[j]) / (c[j + 1] - c[j]) * (hi - lo)
        return np.where(x > c[-1], t[rows, -1] * x / c[-1], inside)

    def at(self, nbytes: ArrayLike, cf: ArrayLike) -> NDArray[np.float64]:
        """t(m, cf) for arrays of sizes and cf (in table units), per the module docstring."""
        m = np.maximum(np.asarray(nbytes, dtype=np.float64), 1.0)
        x = np.maximum(np.asarray(cf, dtype=np.float64), self.cfs[0])
        s = self.sizes
        if s.size == 1:
            first = self._at_cf(np.zeros(m.size, dtype=np.int64), x)
            return np.asarray(first * m / s[0], dtype=np.float64)
        i = np.clip(np.searchsorted(s, m, side="right") - 1, 0, s.size - 2)
        t0, t1 = self._at_cf(i, x), self._at_cf(i + 1, x)
        k = np.log(t1 / t0) / np.log(s[i + 1] / s[i])
        k = np.where(m < s[0], np.clip(k, 0.0, 1.0), k)
        return np.where(m > s[-1], t1 * m / s[-1], t0 * (m / s[i]) ** k)


@dataclass(frozen=True)
class TableCost:
    """The cost of Peryshkova and Kurnosov 2018: measured t(m, cf) tables, one per level."""

    grids: Mapping[str, Grid]
    where: str = ""
    # Per level: the channel's bandwidth (bytes/s). k transfers of m bytes through one side of
    # it take at least k m / B, whatever the table says: its cells are pair *exchanges*, which
    # an MPI may not overlap in both directions while an all-to-all's many transfers do, and
    # beyond its largest cf it is only extrapolated.
    floor_Bps: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_tables(
        cls, tables: Mapping[str, LevelTable], where: str = "", model: ClusterModel | None = None
    ) -> TableCost:
        """From ``analysis.contention.tables()`` output; ``where`` names the run.

        With ``model``, its channels' nominal bandwidths set the bandwidth floor.
        """
        grids = {lv: g for lv, t in tables.items() if (g := Grid.from_table(t)) is not None}
        floor: dict[str, float] = {}
        if model is not None:
            for level, link in (
                ("memory", model.memory),
                ("socket", model.socket_link),
                ("nic", model.nic),
            ):
                if link.bandwidth_Bps and level in grids:
                    floor[level] = float(link.bandwidth_Bps)
        return cls(grids, where, floor)

    def sources(self) -> dict[str, str]:
        """Per level: the table's range."""
        out = {}
        for level, g in self.grids.items():
            out[level] = (
                f"t(m, cf) table{' of ' + self.where if self.where else ''}"
                f" ({size_text(g.sizes[0])}..{size_text(g.sizes[-1])},"
                f" cf {g.cfs[0]:g}..{g.cfs[-1]:g})"
            )
            if level in self.floor_Bps:
                out[level] += (
                    f", at least k m / {self.floor_Bps[level] / 1e6:.4g} MB/s (the"
                    " channel's nominal rate)"
                )
        return out

    def time_s(
        self, level: str, nbytes: NDArray[np.int64], cf: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The exchange time 2 t(m, cf / transfers per cf) of the level, floored at cf m / B."""
        t = TRANSFERS_PER_EXCHANGE * self.grids[level].at(nbytes, cf / TRANSFERS_PER_CF[level])
        if level in self.floor_Bps:
            floor = np.asarray(cf, dtype=np.float64) * np.asarray(nbytes, dtype=np.float64)
            t = np.maximum(t, floor / self.floor_Bps[level])
        return t

    def route_s(
        self, nbytes: NDArray[np.int64], extra_s: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The extra latency as it is: a measured table holds no factor to scale it by."""
        return np.asarray(extra_s, dtype=np.float64)


@dataclass(frozen=True)
class Hockney:
    """Hockney regimes of one level: from ``first_bytes[i]`` on, alpha[i] + m * inv_beta[i]."""

    first_bytes: NDArray[np.float64]
    alpha_s: NDArray[np.float64]
    inv_beta: NDArray[np.float64] = field(repr=False)
    source: str = ""

    def time_s(self, nbytes: NDArray[np.int64], cf: NDArray[np.float64]) -> NDArray[np.float64]:
        """Time alpha + cf * m / beta in the regime holding m (the first one below its start)."""
        m = np.asarray(nbytes, dtype=np.float64)
        # Searching the starts after the first gives the regime directly, the first one for
        # m below every start (np.clip would cost more than the rest on a timeline's events).
        r = np.searchsorted(self.first_bytes[1:], m, side="right")
        return self.alpha_s[r] + np.asarray(cf, dtype=np.float64) * m * self.inv_beta[r]


@dataclass(frozen=True)
class HockneyCost:
    """Bandwidth/latency cost: cf transfers share a level's bandwidth.

    ``latency_factors``: ((from size, factor), ...) scaling a longer route's extra latency
    by message size, as SMPI scales every route's latency (its lat_factor; a segment applies
    to sizes above its start); empty: the extra latency as it is.
    """

    levels: Mapping[str, Hockney]
    latency_factors: tuple[tuple[int, float], ...] = ()

    @classmethod
    def from_p2p(cls, points: list[Point], where: str = "") -> HockneyCost:
        """Hockney fits of each pair's ping-pong regimes (a pair stands for its levels).

        A specific pair (intra-socket, inter-socket) wins over intra-node for a level.
        """
        levels: dict[str, Hockney] = {}
        for fig in p2p.pair_figures(points):
            curve = fig.curve("pingpong")
            if curve is None or not curve.regimes or fig.pair not in PAIR_LEVELS:
                continue
            regs = curve.regimes
            h = Hockney(
                np.array([r.first_bytes for r in regs], dtype=np.float64),
                np.array([r.fit.alpha_s for r in regs]),
                np.array([0.0 if r.fit.beta_Bps is None else 1.0 / r.fit.beta_Bps for r in regs]),
                f"Hockney fit of {fig.pair} ping-pong{' of ' + where if where else ''}"
                f" ({len(regs)} regime(s))",
            )
            for level in PAIR_LEVELS[fig.pair]:
                if level not in levels or fig.pair != "intra-node":
                    levels[level] = h
        return cls(levels)

    @classmethod
    def from_model(cls, model: ClusterModel) -> HockneyCost:
        """The model's nominal bandwidth and latency, for the levels that have a bandwidth."""
        links: dict[str, Link] = {
            "memory": model.memory,
            "socket": model.socket_link,
            "nic": model.nic,
        }
        levels = {}
        for level, link in links.items():
            if link.bandwidth_Bps:
                levels[level] = Hockney(
                    np.zeros(1),
                    np.array([link.latency_s or 0.0]),
                    np.array([1.0 / link.bandwidth_Bps]),
                    f"nominal rate of {model.name}",
                )
        return cls(levels)

    def sources(self) -> dict[str, str]:
        """Per level: which fit or nominal rate."""
        return {level: h.source for level, h in self.levels.items()}

    def time_s(
        self, level: str, nbytes: NDArray[np.int64], cf: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Time alpha + cf * m / beta of the level."""
        return self.levels[level].time_s(nbytes, cf)

    def route_s(
        self, nbytes: NDArray[np.int64], extra_s: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The extra latency, scaled by the factor of each message's size."""
        extra = np.asarray(extra_s, dtype=np.float64)
        if not self.latency_factors:
            return extra
        starts = np.array([s for s, _ in self.latency_factors], dtype=np.float64)
        factors = np.array([1.0] + [f for _, f in self.latency_factors])
        # Segments apply above their start: the count of starts below m picks the factor.
        at = np.searchsorted(starts, np.asarray(nbytes, dtype=np.float64), side="left")
        return np.asarray(extra * factors[at], dtype=np.float64)


@dataclass(frozen=True)
class CombinedCost:
    """Each level from the first of several models that can cost it."""

    owners: Mapping[str, CostModel]
    _sources: Mapping[str, str]

    def sources(self) -> dict[str, str]:
        """Per level: the source of the model that costs it, in hierarchy order."""
        return dict(self._sources)

    def time_s(
        self, level: str, nbytes: NDArray[np.int64], cf: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The owning model's time."""
        return self.owners[level].time_s(level, nbytes, cf)

    def route_s(
        self, nbytes: NDArray[np.int64], extra_s: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """As the model that costs the NIC level prices it (as it is without one)."""
        owner = self.owners.get(LEVELS[NIC])
        if owner is None:
            return np.asarray(extra_s, dtype=np.float64)
        return owner.route_s(nbytes, extra_s)


def combine(*models: CostModel) -> CostModel:
    """A cost model taking each level from the first of ``models`` that has it."""
    if len(models) == 1:
        return models[0]
    owners: dict[str, CostModel] = {}
    sources: dict[str, str] = {}
    for level in (*LEVELS, FABRIC):
        for m in models:
            if level in (src := m.sources()):
                owners[level], sources[level] = m, src[level]
                break
    return CombinedCost(owners, sources)


def with_fabric(
    cost: CostModel,
    known: set[str],
    took: NDArray[np.float64],
    nbytes: NDArray[np.int64],
    load: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Inter-node transfer times ``took``, at least the fabric's time at ``load``.

    ``load`` is, per transfer, how many inter-node transfers are in flight with it (itself
    included); without a fabric table (``known``: the cost's levels) ``took`` is returned.
    """
    if FABRIC not in known or took.size == 0:
        return took
    return np.maximum(took, cost.time_s(FABRIC, nbytes, load))
