"""Point-to-point figures per size and per pair: latency, bandwidth, key figures."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from commscope.records import Point

PAIR_ORDER = ("intra-socket", "inter-socket", "intra-node", "inter-node")


@dataclass(frozen=True)
class SizeRow:
    """One size of one pair: the median of each operation's samples."""

    pair: str
    bytes: int
    latency_s: float | None  # ping-pong one-way time
    pingpong_bandwidth_Bps: float | None
    bandwidth_Bps: float | None  # windowed unidirectional
    bidirectional_bandwidth_Bps: float | None

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)


@dataclass(frozen=True)
class KeyFigures:
    """What people read first for one pair."""

    pair: str
    ranks: tuple[int, int]
    latency_s: float | None  # smallest-size ping-pong one-way time (0 bytes when measured)
    latency_bytes: int | None
    peak_bandwidth_Bps: float | None  # best windowed unidirectional median
    peak_bandwidth_bytes: int | None
    peak_bidirectional_Bps: float | None

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        d = asdict(self)
        d["ranks"] = list(self.ranks)
        return d


def pairs_in(points: list[Point]) -> list[str]:
    """Pair labels present, hierarchy order."""
    present = {p.pair for p in points}
    return [label for label in PAIR_ORDER if label in present]


def size_rows(points: list[Point]) -> list[SizeRow]:
    """One row per (pair, size), operations side by side."""
    by: dict[tuple[str, int], dict[str, Point]] = {}
    for p in points:
        by.setdefault((p.pair, p.bytes), {})[p.op] = p
    rows = []
    for pair in pairs_in(points):
        for size in sorted(b for (pr, b) in by if pr == pair):
            ops = by[(pair, size)]
            pp, bw, bibw = ops.get("pingpong"), ops.get("bw"), ops.get("bibw")
            rows.append(
                SizeRow(
                    pair,
                    size,
                    pp.latency_s if pp else None,
                    pp.bandwidth_Bps if pp and size else None,
                    bw.bandwidth_Bps if bw and size else None,
                    bibw.bandwidth_Bps if bibw and size else None,
                )
            )
    return rows


def key_figures(points: list[Point]) -> list[KeyFigures]:
    """Latency and peak bandwidths per pair."""
    out = []
    for pair in pairs_in(points):
        mine = [p for p in points if p.pair == pair]
        pp = sorted((p for p in mine if p.op == "pingpong"), key=lambda p: p.bytes)
        bw = [p for p in mine if p.op == "bw" and p.bytes > 0]
        bibw = [p for p in mine if p.op == "bibw" and p.bytes > 0]
        best = max(bw, key=lambda p: p.bandwidth_Bps, default=None)
        best2 = max(bibw, key=lambda p: p.bandwidth_Bps, default=None)
        out.append(
            KeyFigures(
                pair,
                (mine[0].ranks[0], mine[0].ranks[1]),
                pp[0].latency_s if pp else None,
                pp[0].bytes if pp else None,
                best.bandwidth_Bps if best else None,
                best.bytes if best else None,
                best2.bandwidth_Bps if best2 else None,
            )
        )
    return out
