"""Point-to-point figures per size and per pair: latency, bandwidth, key figures.

``pair_figures`` is the full analysis of a run's points: per pair, the zero-byte latency and,
per operation, peak and asymptotic bandwidth, N1/2, saturation point, protocol thresholds,
a Hockney fit per regime and the cache dip. The definitions live in ``curve`` and ``regimes``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from commscope.analysis import curve as curves
from commscope.analysis import regimes as reg
from commscope.data.records import Point
from commscope.units import size_text

PAIR_ORDER = ("intra-socket", "inter-socket", "intra-node", "inter-node", "unknown")
# bw_each, bibw_each: bw and bibw with one receive buffer per message (see recv_buffers)
OP_ORDER = ("pingpong", "bw", "bw_each", "bibw", "bibw_each")


@dataclass(frozen=True)
class SizeRow:
    """One size of one pair: the median of each operation's samples.

    ``bandwidth_Bps`` and ``bidirectional_bandwidth_Bps`` are bw and bibw with one receive
    buffer reused; the ``_each`` fields the same with one receive buffer per message.
    """

    pair: str
    bytes: int
    latency_s: float | None  # ping-pong one-way time
    pingpong_bandwidth_Bps: float | None
    bandwidth_Bps: float | None  # windowed unidirectional
    bidirectional_bandwidth_Bps: float | None
    bandwidth_each_Bps: float | None = None
    bidirectional_each_Bps: float | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)


@dataclass(frozen=True)
class KeyFigures:
    """What people read first for one pair.

    The peaks come from bw and bibw with one receive buffer reused, or, in a run that
    measured only one per message, from that series: ``recv_buffers`` says which.
    """

    pair: str
    ranks: tuple[int, int]
    latency_s: float | None  # smallest-size ping-pong one-way time (0 bytes when measured)
    latency_bytes: int | None
    peak_bandwidth_Bps: float | None  # best windowed unidirectional median
    peak_bandwidth_bytes: int | None
    peak_bidirectional_Bps: float | None
    recv_buffers: str | None = None  # "one" or "each": the series the peaks come from

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        d = asdict(self)
        d["ranks"] = list(self.ranks)
        return d


def pairs_in(points: list[Point]) -> list[str]:
    """Pair labels present, hierarchy order."""
    present = {p.pair for p in points}
    return [label for label in PAIR_ORDER if label in present]


def _rate(point: Point | None, size: int) -> float | None:
    return point.bandwidth_Bps if point is not None and size else None


def size_rows(points: list[Point]) -> list[SizeRow]:
    """One row per (pair, size), operations side by side."""
    by: dict[tuple[str, int], dict[str, Point]] = {}
    for p in points:
        by.setdefault((p.pair, p.bytes), {})[p.op] = p
    rows = []
    for pair in pairs_in(points):
        for size in sorted(b for (pr, b) in by if pr == pair):
            ops = by[(pair, size)]
            pp = ops.get("pingpong")
            rate = [
                _rate(ops.get(op), size)
                for op in ("pingpong", "bw", "bibw", "bw_each", "bibw_each")
            ]
            rows.append(SizeRow(pair, size, pp.latency_s if pp else None, *rate))
    return rows


def key_figures(points: list[Point]) -> list[KeyFigures]:
    """Latency and peak bandwidths per pair."""
    out = []
    for pair in pairs_in(points):
        mine = [p for p in points if p.pair == pair]
        pp = sorted((p for p in mine if p.op == "pingpong"), key=lambda p: p.bytes)
        ops = {p.op for p in mine}
        policy = (
            "one" if ops & {"bw", "bibw"} else "each" if ops & {"bw_each", "bibw_each"} else None
        )
        uni, bi = ("bw", "bibw") if policy != "each" else ("bw_each", "bibw_each")
        bw = [p for p in mine if p.op == uni and p.bytes > 0]
        bibw = [p for p in mine if p.op == bi and p.bytes > 0]
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
                policy,
            )
        )
    return out


@dataclass(frozen=True)
class CurveFigures:
    """Derived figures of one operation between one pair (see ``curve`` and ``regimes``)."""

    pair: str
    op: str
    n_sizes: int
    min_bytes: int
    max_bytes: int
    first_time_s: float  # time of one message at the smallest size
    peak_bandwidth_Bps: float | None
    peak_bytes: int | None
    asymptotic_bandwidth_Bps: float | None
    asymptotic_from_bytes: int | None  # smallest size whose bandwidth entered the median
    half_peak_bytes: float | None  # N1/2
    saturation_bytes: int | None
    thresholds: tuple[reg.Threshold, ...]
    regimes: tuple[reg.Regime, ...]
    cache_dip: curves.CacheDip | None

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        d = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("thresholds", "regimes", "cache_dip")
        }
        d["thresholds"] = [t.to_json() for t in self.thresholds]
        d["regimes"] = [r.to_json() for r in self.regimes]
        d["cache_dip"] = self.cache_dip.to_json() if self.cache_dip else None
        return d


@dataclass(frozen=True)
class PairFigures:
    """Everything derived for one pair of ranks."""

    pair: str
    ranks: tuple[int, int]
    latency_s: float | None  # ping-pong one-way time at the smallest size (0 bytes if measured)
    latency_bytes: int | None
    curves: tuple[CurveFigures, ...]

    def curve(self, op: str) -> CurveFigures | None:
        """The figures of ``op``, if it was measured."""
        return next((c for c in self.curves if c.op == op), None)

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return {
            "pair": self.pair,
            "ranks": list(self.ranks),
            "latency_s": self.latency_s,
            "latency_bytes": self.latency_bytes,
            "curves": [c.to_json() for c in self.curves],
        }


def beyond_saturation(th: reg.Threshold, saturation_bytes: int | None) -> bool:
    """Whether a step lies past the saturation point: more likely caches than a protocol."""
    return saturation_bytes is not None and th.above_bytes > saturation_bytes


def curve_figures(curve: curves.Curve) -> CurveFigures:
    """Derive every figure of one curve.

    The cache dip is sought from the last threshold below the saturation point on: a step
    past saturation (e.g. the last cache level overflowing at once) belongs to the dip.
    """
    m, t, bw = curve.bytes, curve.time_s, curve.bandwidth_Bps
    peak = curves.peak_bandwidth(m, bw)
    asym = curves.asymptotic_bandwidth(m, bw)
    thresholds = reg.find_thresholds(m, t)
    saturation = curves.saturation_point(m, t)
    protocol = [th for th in thresholds if not beyond_saturation(th, saturation)]
    last_regime = protocol[-1].above_bytes if protocol else 0
    return CurveFigures(
        pair=curve.pair,
        op=curve.op,
        n_sizes=len(curve),
        min_bytes=int(m[0]),
        max_bytes=int(m[-1]),
        first_time_s=float(t[0]),
        peak_bandwidth_Bps=peak[0] if peak else None,
        peak_bytes=peak[1] if peak else None,
        asymptotic_bandwidth_Bps=asym[0] if asym else None,
        asymptotic_from_bytes=asym[1] if asym else None,
        half_peak_bytes=curves.half_peak_size(m, bw),
        saturation_bytes=saturation,
        thresholds=thresholds,
        regimes=reg.piecewise_hockney(m, t, thresholds),
        cache_dip=curves.cache_dip(m, bw, start_bytes=last_regime),
    )


def pair_figures(points: list[Point]) -> list[PairFigures]:
    """The full point-to-point analysis, one entry per pair in hierarchy order."""
    out = []
    for pair in pairs_in(points):
        mine = [p for p in points if p.pair == pair]
        found = [curves.curve_of(mine, op, pair) for op in OP_ORDER]
        figs = tuple(curve_figures(c) for c in found if c is not None)
        pp = next((c for c in found if c is not None and c.op == "pingpong"), None)
        out.append(
            PairFigures(
                pair=pair,
                ranks=(mine[0].ranks[0], mine[0].ranks[1]),
                latency_s=float(pp.time_s[0]) if pp is not None else None,
                latency_bytes=int(pp.bytes[0]) if pp is not None else None,
                curves=figs,
            )
        )
    return out


INTERRUPTED_NOTE = 0.25  # a point whose share of interrupted samples reaches this is named


@dataclass(frozen=True)
class Interrupted:
    """A point many of whose samples had a rank lose its core to another process."""

    pair: str
    op: str
    bytes: int
    n_samples: int
    n_interrupted: int
    n_kept: int  # samples the medians use: the others, or all when fewer than two are left
    sizes: int = 1  # sizes merged into this line (they print as the same size)

    def text(self) -> str:
        """One line naming the point and what its medians rest on."""
        label = size_text(self.bytes) + (f" ({self.sizes} sizes)" if self.sizes > 1 else "")
        head = (
            f"{self.pair} {self.op} {label}: {self.n_interrupted} of"
            f" {self.n_samples} samples had a rank lose its core to another process"
        )
        if self.n_kept == self.n_samples:
            return head + "; too few others, so its figures use every sample"
        return head + f"; its figures use the other {self.n_kept}"

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names (one point: ``sizes`` is left out)."""
        return {k: v for k, v in asdict(self).items() if k != "sizes"}


def merged(items: list[Interrupted]) -> list[Interrupted]:
    """``items`` with the points whose sizes print alike joined, their samples added.

    3145725 B and 3145731 B both read "3.0 MiB": one line names them. Order is kept.
    """
    groups: dict[tuple[str, str, str], list[Interrupted]] = {}
    for x in items:
        groups.setdefault((x.pair, x.op, size_text(x.bytes)), []).append(x)
    return [
        Interrupted(
            g[0].pair,
            g[0].op,
            g[0].bytes,
            sum(x.n_samples for x in g),
            sum(x.n_interrupted for x in g),
            sum(x.n_kept for x in g),
            sum(x.sizes for x in g),
        )
        for g in groups.values()
    ]


def interrupted(points: list[Point], share: float = INTERRUPTED_NOTE) -> list[Interrupted]:
    """Points at least ``share`` of whose samples were interrupted, in table order."""
    out = [
        Interrupted(p.pair, p.op, p.bytes, p.n_samples, len(p.interrupted), len(p.kept_samples_s))
        for p in points
        if p.interrupted and p.interrupted_share >= share
    ]
    order = {op: i for i, op in enumerate(OP_ORDER)}
    return sorted(
        out,
        key=lambda x: (
            PAIR_ORDER.index(x.pair) if x.pair in PAIR_ORDER else 9,
            order.get(x.op, 9),
            x.bytes,
        ),
    )


def interrupted_summary(points: list[Point]) -> str:
    """One line on the interrupted samples left out of a run's figures ("" when none)."""
    hit = [p for p in points if p.interrupted]
    if not hit:
        return ""
    n = sum(len(p.interrupted) for p in hit)
    total = sum(p.n_samples for p in points)
    return (
        f"{n} of {total} samples in {len(hit)} of {len(points)} points had a rank lose its"
        " core to another process (the machine was busy); medians leave them out"
    )
