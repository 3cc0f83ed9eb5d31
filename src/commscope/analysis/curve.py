"""One operation of one pair as arrays, and the figures read off its bandwidth curve.

A ``Curve`` holds, per message size, the median time of one message and the bandwidth it
implies. The functions below are pure: numpy arrays in, numbers or frozen dataclasses out.

Definitions (sizes of 0 bytes are left out wherever a bandwidth or a logarithm is needed):

- Smoothed bandwidth: running median over three neighbouring sizes, so that one outlier
  (e.g. a misaligned +3-byte size) neither makes nor breaks a peak or a crossing.
- Peak bandwidth: the largest smoothed bandwidth, and the size where it occurs.
- Asymptotic bandwidth: the median bandwidth of the sizes of at least a quarter of the largest
  size measured (at least three sizes): with the default schedule, the last two octaves.
- N1/2: the smallest size whose smoothed bandwidth reaches half the peak, interpolated linearly
  in log size between the two sizes around the crossing.
- Saturation point: the smallest size from which the local log-log slope of time against size
  stays at or above 0.9 (within 10 % of linear growth). The local slope at a size is the
  least-squares slope over the sizes within one octave on either side. Slopes above 1
  (time growing faster than size, i.e. bandwidth falling) do not end saturation: that is the
  cache dip, flagged separately.
- Cache dip: within the last protocol regime, the asymptotic bandwidth lies at least 15 %
  below the peak, and the peak sits at smaller sizes than the asymptotic tail. Its onset is the
  smallest size after the peak from which the smoothed bandwidth stays below half-way between
  peak and tail.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope.data.records import Point

TAIL_FACTOR = 4.0  # asymptotic bandwidth: sizes >= largest / TAIL_FACTOR
TAIL_MIN_POINTS = 3
SATURATION_TOLERANCE = 0.1
CACHE_DIP_MIN_DROP = 0.15
_SLOPE_HALF_WIDTH = math.log(2.0)  # one octave on each side
_MIN_SLOPE_SPREAD = 0.2  # a local slope needs sizes spanning at least e^0.2 = 1.22x


@dataclass(frozen=True, eq=False)
class Curve:
    """Median figures per size for one operation between one pair of ranks.

    ``time_s`` is the time of one message at the measured rate (bytes / bandwidth): the
    one-way time for ping-pong, the window time divided by the messages in it for bw and bibw
    (both directions count for bibw). ``bandwidth_Bps`` is NaN at 0 bytes.
    """

    op: str
    pair: str
    bytes: NDArray[np.int64]
    time_s: NDArray[np.float64]
    bandwidth_Bps: NDArray[np.float64]
    n_samples: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.bytes.size)


@dataclass(frozen=True)
class CacheDip:
    """Bandwidth falling at large sizes below its peak at mid sizes."""

    peak_Bps: float
    peak_bytes: int
    tail_Bps: float
    tail_from_bytes: int
    drop: float  # 1 - tail / peak
    onset_bytes: int

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)


def messages_per_sample(point: Point) -> float:
    """How many messages one sample of ``point`` times (1 for ping-pong's one-way time)."""
    if point.op == "pingpong":
        return 1.0
    if point.bytes > 0 and point.bytes_per_sample > 0:
        return point.bytes_per_sample / point.bytes
    return float((point.window or 1) * (2 if point.op.startswith("bibw") else 1))


def message_time(point: Point) -> float:
    """Median time of one message of ``point`` (see ``Curve``)."""
    return point.median_s / messages_per_sample(point)


def message_samples(point: Point) -> NDArray[np.float64]:
    """Every kept sample of ``point`` as the time of one message, so other windows compare.

    Kept samples leave out those a rank lost its core in (``Point.kept_samples_s``).
    """
    return np.asarray(point.kept_samples_s, dtype=np.float64) / messages_per_sample(point)


def curve_of(points: list[Point], op: str, pair: str) -> Curve | None:
    """The curve of ``op`` between ``pair``, sizes ascending; None when nothing was measured."""
    mine = sorted((p for p in points if p.op == op and p.pair == pair), key=lambda p: p.bytes)
    if not mine:
        return None
    bw = [p.bandwidth_Bps if p.bytes > 0 else math.nan for p in mine]
    return Curve(
        op=op,
        pair=pair,
        bytes=np.array([p.bytes for p in mine], dtype=np.int64),
        time_s=np.array([message_time(p) for p in mine], dtype=np.float64),
        bandwidth_Bps=np.array(bw, dtype=np.float64),
        n_samples=np.array([p.n_samples for p in mine], dtype=np.int64),
    )


def _valid(sizes: ArrayLike, values: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Sizes > 0 with finite positive values, sorted by size."""
    m = np.asarray(sizes, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    keep = (m > 0) & np.isfinite(v) & (v > 0)
    order = np.argsort(m[keep], kind="stable")
    return m[keep][order], v[keep][order]


def running_median3(values: ArrayLike) -> NDArray[np.float64]:
    """Running median over each value and its two neighbours (the ends repeat themselves)."""
    v = np.array(values, dtype=np.float64)  # a copy
    if v.size < 3:
        return v
    padded = np.concatenate(([v[0]], v, [v[-1]]))
    stacked = np.stack([padded[:-2], padded[1:-1], padded[2:]])
    return np.asarray(np.median(stacked, axis=0), dtype=np.float64)


def peak_bandwidth(sizes: ArrayLike, bandwidth: ArrayLike) -> tuple[float, int] | None:
    """(largest smoothed bandwidth, its size); None without a positive bandwidth."""
    m, bw = _valid(sizes, bandwidth)
    if m.size == 0:
        return None
    smooth = running_median3(bw)
    i = int(np.argmax(smooth))
    return float(smooth[i]), int(m[i])


def asymptotic_bandwidth(
    sizes: ArrayLike, bandwidth: ArrayLike, tail_factor: float = TAIL_FACTOR
) -> tuple[float, int] | None:
    """(median bandwidth of the largest sizes, smallest size used); None without data.

    The sizes used are those >= largest / ``tail_factor``, or the three largest when fewer.
    """
    m, bw = _valid(sizes, bandwidth)
    if m.size == 0:
        return None
    tail = m >= m[-1] / tail_factor
    if int(tail.sum()) < TAIL_MIN_POINTS:
        tail = np.zeros(m.size, dtype=bool)
        tail[-TAIL_MIN_POINTS:] = True
    return float(np.median(bw[tail])), int(m[tail][0])


def half_peak_size(sizes: ArrayLike, bandwidth: ArrayLike) -> float | None:
    """N1/2: the size reaching half the peak bandwidth, interpolated in log size."""
    m, bw = _valid(sizes, bandwidth)
    if m.size == 0:
        return None
    smooth = running_median3(bw)
    half = float(np.max(smooth)) / 2
    i = int(np.argmax(smooth >= half))
    if i == 0:
        return float(m[0])
    x0, x1 = math.log(m[i - 1]), math.log(m[i])
    y0, y1 = smooth[i - 1], smooth[i]
    frac = (half - y0) / (y1 - y0) if y1 != y0 else 1.0
    return float(math.exp(x0 + frac * (x1 - x0)))


def local_slopes(
    sizes: ArrayLike, times: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(sizes, log-log slope of time against size at each size); NaN where undetermined.

    The slope at a size is fitted over the sizes within one octave on either side,
    widened to the next neighbours when those span less than a factor 1.22.
    """
    m, t = _valid(sizes, times)
    x, y = np.log(m), np.log(t)
    slopes = np.full(m.size, np.nan)
    for i in range(m.size):
        lo = int(np.searchsorted(x, x[i] - _SLOPE_HALF_WIDTH, side="left"))
        hi = int(np.searchsorted(x, x[i] + _SLOPE_HALF_WIDTH, side="right")) - 1
        while x[hi] - x[lo] < _MIN_SLOPE_SPREAD and (lo > 0 or hi < m.size - 1):
            lo, hi = max(lo - 1, 0), min(hi + 1, m.size - 1)
        if x[hi] - x[lo] < _MIN_SLOPE_SPREAD:
            continue
        xs, ys = x[lo : hi + 1], y[lo : hi + 1]
        dx = xs - xs.mean()
        slopes[i] = float(np.dot(dx, ys - ys.mean()) / np.dot(dx, dx))
    return m, slopes


def saturation_point(
    sizes: ArrayLike, times: ArrayLike, tolerance: float = SATURATION_TOLERANCE
) -> int | None:
    """Smallest size from which time grows (at least) linearly with size; None if never."""
    m, slopes = local_slopes(sizes, times)
    known = np.isfinite(slopes)
    if not known.any():
        return None
    ok = ~known | (slopes >= 1.0 - tolerance)
    if not ok[known][-1]:
        return None
    bad = np.nonzero(~ok)[0]
    start = int(bad[-1]) + 1 if bad.size else 0
    first_known = start + int(np.argmax(known[start:]))
    return int(m[first_known])


def cache_dip(
    sizes: ArrayLike,
    bandwidth: ArrayLike,
    start_bytes: int = 0,
    min_drop: float = CACHE_DIP_MIN_DROP,
) -> CacheDip | None:
    """The cache dip among sizes >= ``start_bytes`` (the last protocol regime); None if absent."""
    m, bw = _valid(sizes, bandwidth)
    keep = m >= start_bytes
    m, bw = m[keep], bw[keep]
    if m.size < 5:
        return None
    smooth = running_median3(bw)
    p = int(np.argmax(smooth))
    peak = float(smooth[p])
    tail = asymptotic_bandwidth(m, bw)
    if tail is None or m[p] >= tail[1]:
        return None
    tail_bw, tail_from = tail
    drop = 1.0 - tail_bw / peak
    if drop < min_drop:
        return None
    mid = (peak + tail_bw) / 2
    above = np.nonzero(smooth[p + 1 :] >= mid)[0]
    onset = p + 1 + (int(above[-1]) + 1 if above.size else 0)
    onset = min(onset, m.size - 1)
    return CacheDip(peak, int(m[p]), tail_bw, tail_from, drop, int(m[onset]))
