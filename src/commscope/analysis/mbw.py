"""Multi-pair bandwidth and message rate (osu_mbw_mr's method): k pairs sending at once.

Each point "mbw_k<k>" holds samples that are the time in which every pair's window arrived;
its ``bytes_per_sample`` is k x window x bytes. From the median sample:

- aggregate bandwidth = bytes_per_sample / median (bytes per second over all k pairs);
- message rate = k x window / median (messages per second over all k pairs), which is the
  aggregate bandwidth divided by the message size, as osu_mbw_mr prints it.

Per k the peak of each, and the k at which the bandwidth saturates: the fewest pairs whose
peak aggregate bandwidth reaches ``SATURATED`` of the highest peak of any k. More pairs than
that add little: the channel they share (memory, or the network link between two nodes) is
full.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from commscope.analysis.p2p import PAIR_ORDER
from commscope.data.point_ops import mbw_pairs
from commscope.data.records import Point

SATURATED = 0.9  # share of the highest peak at which the bandwidth counts as saturated


@dataclass(frozen=True)
class MbwRow:
    """One size measured with k pairs at once."""

    pairs: int
    bytes: int
    window: int
    aggregate_Bps: float  # noqa: N815 - the unit is part of the name
    message_rate_per_s: float
    n_samples: int
    stop: str


@dataclass(frozen=True)
class MbwStep:
    """Every size of one pair count k, and its peaks."""

    pairs: int
    rows: tuple[MbwRow, ...]
    peak_Bps: float  # noqa: N815
    peak_bytes: int
    peak_rate_per_s: float
    peak_rate_bytes: int

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self) | {"rows": [asdict(r) for r in self.rows]}


@dataclass(frozen=True)
class MbwSummary:
    """The pair counts measured between one kind of pair (e.g. inter-node), ascending."""

    pair: str
    steps: tuple[MbwStep, ...]
    saturation_pairs: int | None  # None with fewer than two pair counts

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return {
            "pair": self.pair,
            "saturation_pairs": self.saturation_pairs,
            "steps": [s.to_json() for s in self.steps],
        }


def row(point: Point) -> MbwRow:
    """The aggregate bandwidth and message rate of one mbw point.

    Raises:
        ValueError: ``point`` is not an mbw point.
    """
    k = mbw_pairs(point.op)
    if k is None:
        raise ValueError(f"op {point.op!r} is not a multi-pair bandwidth op")
    window = point.window or 1
    median = point.median_s
    rate = k * window / median if median > 0 else float("nan")
    return MbwRow(
        pairs=k,
        bytes=point.bytes,
        window=window,
        aggregate_Bps=point.bandwidth_Bps,
        message_rate_per_s=rate,
        n_samples=point.n_samples,
        stop=point.stop,
    )


def _known(x: float) -> float:
    return x if math.isfinite(x) else -1.0


def _step(k: int, rows: list[MbwRow]) -> MbwStep:
    rows.sort(key=lambda r: r.bytes)
    bw = max(rows, key=lambda r: _known(r.aggregate_Bps))
    mr = max(rows, key=lambda r: _known(r.message_rate_per_s))
    return MbwStep(k, tuple(rows), bw.aggregate_Bps, bw.bytes, mr.message_rate_per_s, mr.bytes)


def saturation(steps: Iterable[MbwStep]) -> int | None:
    """The fewest pairs whose peak bandwidth reaches SATURATED of the best; None below 2 ks."""
    steps = sorted(steps, key=lambda s: s.pairs)
    if len(steps) < 2:
        return None
    best = max(s.peak_Bps for s in steps)
    return next(s.pairs for s in steps if s.peak_Bps >= SATURATED * best)


def summarize(points: Iterable[Point]) -> list[MbwSummary]:
    """One summary per pair label of the mbw points, in the hierarchy's order."""
    by_pair: dict[str, dict[int, list[MbwRow]]] = {}
    for p in points:
        r = row(p)
        by_pair.setdefault(p.pair, {}).setdefault(r.pairs, []).append(r)
    out = []
    for pair in sorted(by_pair, key=lambda x: PAIR_ORDER.index(x) if x in PAIR_ORDER else 9):
        steps = tuple(_step(k, rows) for k, rows in sorted(by_pair[pair].items()))
        out.append(MbwSummary(pair, steps, saturation(steps)))
    return out


def findings(summaries: Iterable[MbwSummary]) -> list[str]:
    """One sentence per pair label: where the aggregate bandwidth stops growing with k."""
    out = []
    for s in summaries:
        if s.saturation_pairs is None:
            continue
        best = max(s.steps, key=lambda x: x.peak_Bps)
        first = s.steps[0]
        gain = best.peak_Bps / first.peak_Bps if first.peak_Bps > 0 else float("nan")
        if s.saturation_pairs == first.pairs:
            out.append(
                f"{s.pair}: more pairs do not raise the aggregate bandwidth: {first.pairs}"
                f" already reach{'es' if first.pairs == 1 else ''} {SATURATED:.0%} of its peak"
                f" ({best.peak_Bps / 1e6:.1f} MB/s with {best.pairs})"
            )
            continue
        out.append(
            f"{s.pair}: the aggregate bandwidth saturates at {s.saturation_pairs} pair"
            f"{'' if s.saturation_pairs == 1 else 's'} (peak {best.peak_Bps / 1e6:.1f} MB/s"
            f" with {best.pairs}, {gain:.2f}x that of {first.pairs})"
        )
    return out
