"""One-sided communication (MPI-3 RMA): latency and bandwidth per operation and synchronisation.

The records are Points whose op is OP_MODE_SYNC (``point_ops.RMA_OPS``): put, get or acc
(MPI_Accumulate), lat (one operation and its synchronisation per sample) or bw (a window of
operations per epoch), under fence, lock (passive target, OSU's default: a shared lock held
over the point, MPI_Win_flush per epoch) or pscw. Imported OSU and IMB figures use the same
names. A series is one (pair, operation, mode, sync) over sizes; the key figures per
(pair, operation, sync) are the latency at the smallest non-empty size and the peak bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from commscope.analysis.p2p import PAIR_ORDER
from commscope.data.point_ops import RMA_OPERATIONS, RMA_SYNCS, is_rma
from commscope.data.records import Point
from commscope.units import time_text


@dataclass(frozen=True)
class Series:
    """One op/mode/sync of one pair against size: median sample time and its rate."""

    pair: str
    operation: str  # put, get, acc
    mode: str  # lat, bw
    sync: str  # fence, lock, pscw
    bytes: tuple[int, ...]
    time_s: tuple[float, ...]  # one operation (lat) or one epoch of a window (bw)
    bandwidth_Bps: tuple[float, ...]
    sync_calls: str | None  # what the engine recorded it called, None when imported

    @property
    def name(self) -> str:
        """The stored op name, e.g. put_lat_fence."""
        return f"{self.operation}_{self.mode}_{self.sync}"

    def to_json(self) -> dict[str, Any]:
        """Sizes with time and rate, for `show --json`."""
        return {
            "pair": self.pair,
            "op": self.name,
            "sync_calls": self.sync_calls,
            "sizes": [
                {"bytes": b, "time_s": t, "bandwidth_Bps": r}
                for b, t, r in zip(self.bytes, self.time_s, self.bandwidth_Bps, strict=True)
            ],
        }


@dataclass(frozen=True)
class Figures:
    """What people read first for one (pair, operation, sync)."""

    pair: str
    operation: str
    sync: str
    latency_s: float | None
    latency_bytes: int | None
    peak_bandwidth_Bps: float | None
    peak_bytes: int | None

    def to_json(self) -> dict[str, Any]:
        """The figures by name."""
        return {
            "pair": self.pair,
            "operation": self.operation,
            "sync": self.sync,
            "latency_s": self.latency_s,
            "latency_bytes": self.latency_bytes,
            "peak_bandwidth_Bps": self.peak_bandwidth_Bps,
            "peak_bytes": self.peak_bytes,
        }


@dataclass(frozen=True)
class RmaSummary:
    """Every series of a run and the key figures drawn from them."""

    series: tuple[Series, ...]
    figures: tuple[Figures, ...]


def _order(pair: str) -> int:
    return PAIR_ORDER.index(pair) if pair in PAIR_ORDER else len(PAIR_ORDER)


def series(points: list[Point]) -> list[Series]:
    """One series per (pair, op), sizes ascending; non-RMA points are left out."""
    by: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        if is_rma(p.op):
            by.setdefault((p.pair, p.op), []).append(p)
    out = []
    for (pair, op), mine in by.items():
        mine.sort(key=lambda p: p.bytes)
        operation, mode, sync = op.split("_")
        out.append(
            Series(
                pair=pair,
                operation=operation,
                mode=mode,
                sync=sync,
                bytes=tuple(p.bytes for p in mine),
                time_s=tuple(p.median_s for p in mine),
                bandwidth_Bps=tuple(p.bandwidth_Bps for p in mine),
                sync_calls=mine[0].raw.get("rma_sync"),
            )
        )
    rank = {name: i for i, name in enumerate(RMA_OPERATIONS + RMA_SYNCS)}
    out.sort(key=lambda s: (_order(s.pair), rank[s.operation], s.mode, rank[s.sync]))
    return out


def _figures(pair: str, operation: str, sync: str, found: list[Series]) -> Figures:
    lat = next((s for s in found if s.mode == "lat"), None)
    bw = next((s for s in found if s.mode == "bw"), None)
    latency_s = latency_bytes = None
    if lat is not None:
        # The smallest size that moves data: a 0-byte operation is the synchronisation alone.
        i = next((i for i, b in enumerate(lat.bytes) if b > 0), 0)
        latency_s, latency_bytes = lat.time_s[i], lat.bytes[i]
    peak = peak_bytes = None
    if bw is not None:
        rates = [(r, b) for r, b in zip(bw.bandwidth_Bps, bw.bytes, strict=True) if r == r and b]
        if rates:
            peak, peak_bytes = max(rates)
    return Figures(pair, operation, sync, latency_s, latency_bytes, peak, peak_bytes)


def summarize(points: list[Point]) -> RmaSummary | None:
    """Series and key figures; None without RMA points."""
    found = series(points)
    if not found:
        return None
    groups: dict[tuple[str, str, str], list[Series]] = {}
    for s in found:
        groups.setdefault((s.pair, s.operation, s.sync), []).append(s)
    figures = tuple(_figures(*key, mine) for key, mine in groups.items())
    return RmaSummary(tuple(found), figures)


def findings(summary: RmaSummary) -> list[str]:
    """Per pair and operation: the synchronisations from fastest to slowest small latency."""
    out = []
    by: dict[tuple[str, str], list[Figures]] = {}
    for f in summary.figures:
        if f.latency_s is not None:
            by.setdefault((f.pair, f.operation), []).append(f)
    for (pair, operation), mine in by.items():
        if len(mine) < 2:
            continue
        mine.sort(key=lambda f: f.latency_s or 0.0)
        order = " < ".join(f"{f.sync} {time_text(f.latency_s or 0.0)}" for f in mine)
        out.append(f"{pair}: {operation} latency at {mine[0].latency_bytes} B: {order}")
    return out
