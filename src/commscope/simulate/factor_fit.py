"""SMPI's piecewise factors by bounded least squares, so that they stay physically readable.

SMPI times a message of m bytes on a route of latency L and bottleneck bandwidth B as
``lat_factor(m) * L + m / (bw_factor(m) * B)``; the factors are global (every route, the
memory link within a node included) and piecewise constant in m. In each size segment the
time is linear in ``lat_factor`` and in ``1 / bw_factor``, so one bounded linear
least-squares problem on relative errors (every size counts alike) gives both, fitted to
every level at once:

- ``lat_factor`` in [1, LAT_FACTOR_MAX]: no message is faster than the route's latency (the
  fastest of the smallest messages), and a message costs at most three one-way trips (a
  rendezvous: request, clear-to-send, data).
- ``bw_factor`` in [BW_FACTOR_MIN, bw_max(segment)]: 1 is the link's nominal rate; a segment
  may go faster only where the link is known to let a burst through (see ``bw_factor_max``).
  Below a quarter of the nominal rate a factor describes the hosts (copies, scheduling), not
  the network: SimGrid's own defaults (calibrated on TACC's Stampede) go down to 0.34. Without
  that bound a segment whose bytes barely count between nodes (below 1 KiB) took its slope
  from the intra-node curve alone: 0.017 on a busy virtual cluster.

A curve the model cannot follow within these bounds leaves an error, which ``simulate
validate`` shows, rather than a factor of 0.001 or 1000 that absorbs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import lsq_linear

from commscope.errors import SimulateError

# Segments start at 0 and then at every power of two from 64 B (65536, a usual eager limit,
# is one of them): each gets its own factors. Powers of four were too coarse for TCP's
# convex curve between 16 and 64 KiB (50 % off at 16 KiB on the virtual cluster).
FIRST_BREAK = 64
STEP = 2
LAT_FACTOR_MIN = 1.0
LAT_FACTOR_MAX = 3.0
BW_FACTOR_MIN = 0.25
# A segment whose sizes barely feel the bandwidth (below 1 KiB between nodes: < 5 % of the
# latency) would take any bw_factor between its bounds on noise; one extra row of this weight
# pulls 1 / bw_factor towards 1 (the nominal rate), too weak to move a segment the bytes fix.
_NOMINAL_PRIOR = 0.3
# Sizes this close (b - 3, b, b + 3 of the ping-pong schedule) form one group in steady_curve.
GROUP_SPAN = 6
# A link's own figure (memory link): kept above these so the fit never divides by zero.
_MIN_LATENCY_S = 1e-9
_MAX_BYTE_TIME_S = 1.0


@dataclass(frozen=True)
class Level:
    """One measured curve (one-way time per size) and the route SMPI gives it."""

    sizes: NDArray[np.int64]
    times: NDArray[np.float64]
    latency_s: float
    bandwidth_Bps: float


@dataclass(frozen=True)
class SegmentFit:
    """One size segment [start, end): its factors and the upper bound bw_factor had."""

    start: int
    end: int
    lat_factor: float
    bw_factor: float
    bw_max: float
    sizes: int
    overhead_s: float = 0.0  # the sender's time per eager message (SMPI's smpi/os)

    @property
    def held(self) -> list[str]:
        """The bounds the fit rests on (where the model cannot follow the curve further)."""
        out = []
        if self.lat_factor <= LAT_FACTOR_MIN * (1 + 1e-6):
            out.append("lat>=1")
        if self.lat_factor >= LAT_FACTOR_MAX * (1 - 1e-6):
            out.append(f"lat<={LAT_FACTOR_MAX:g}")
        if self.bw_factor >= self.bw_max * (1 - 1e-6):
            out.append(f"bw<={self.bw_max:.3g}")
        if self.bw_factor <= BW_FACTOR_MIN * (1 + 1e-6):
            out.append(f"bw>={BW_FACTOR_MIN:g}")
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain dict."""
        return {
            "start": self.start,
            "end": self.end,
            "sizes": self.sizes,
            "lat_factor": self.lat_factor,
            "bw_factor": self.bw_factor,
            "lat_factor_range": [LAT_FACTOR_MIN, LAT_FACTOR_MAX],
            "bw_factor_range": [BW_FACTOR_MIN, self.bw_max],
            "bw_factor_max": self.bw_max,
            "overhead_s": self.overhead_s,
            "held": self.held,
        }


def bw_factor_max(start: int, burst_bytes: int | None, line_ratio: float) -> float:
    """The largest bw_factor a segment starting at ``start`` bytes may have.

    1 (the nominal rate) unless the link is a token bucket of ``burst_bytes`` (the virtual
    cluster's tbf): a full bucket lets up to ``burst_bytes`` through at the line rate,
    ``line_ratio`` times the nominal one, so a message of m > burst bytes goes at most
    m / (m - burst) times faster than nominal, and a smaller one at most ``line_ratio`` times.
    """
    if not burst_bytes:
        return 1.0
    if start <= burst_bytes:
        return max(1.0, line_ratio)
    return max(1.0, min(line_ratio, start / (start - burst_bytes)))


def breaks(sizes: NDArray[np.int64]) -> list[int]:
    """Segment starts: 0 and the powers of two from FIRST_BREAK, with two sizes or more each.

    A segment with fewer than two distinct sizes cannot fix a line: it joins the one before.
    """
    if sizes.size == 0:
        return []
    top = int(sizes.max())
    starts = [0] + [FIRST_BREAK * STEP**k for k in range(40) if FIRST_BREAK * STEP**k <= top]
    ends = starts[1:] + [top + 1]
    kept: list[int] = []
    for lo, hi in zip(starts, ends, strict=True):
        distinct = np.unique(sizes[(sizes >= lo) & (sizes < hi)]).size
        if distinct >= 2 or not kept:
            kept.append(lo)
    return kept


def steady_curve(
    sizes: NDArray[np.int64], times: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """One time per distinct size: the median over its size group, robust to a disturbed point.

    The ping-pong schedule measures each base size b at b - 3, b and b + 3 (NetPIPE's
    perturbation), and a level may come from several runs: sizes within GROUP_SPAN bytes of a
    group's smallest cost the same, so every time measured in the group stands for each of
    them. A point disturbed as a whole (the machine busy for its 0.25 s) is then one vote
    among several instead of a target the fit must meet. A protocol threshold inside a group
    gives its odd size the others' time: one point's error, where a disturbed point would
    pull a whole segment's factors.
    """
    order = np.argsort(sizes, kind="stable")
    sizes, times = sizes[order], times[order]
    out_sizes: list[int] = []
    out_times: list[float] = []
    i = 0
    while i < sizes.size:
        j = int(np.searchsorted(sizes, sizes[i] + GROUP_SPAN, side="right"))
        median = float(np.median(times[i:j]))
        for m in np.unique(sizes[i:j]):
            out_sizes.append(int(m))
            out_times.append(median)
        i = j
    return np.asarray(out_sizes, dtype=np.int64), np.asarray(out_times, dtype=np.float64)


def factor_at(starts: list[int], values: list[float], size: int) -> float:
    """SMPI's rule: the value of the largest segment start not above ``size``."""
    index = int(np.searchsorted(np.asarray(starts), size, side="right")) - 1
    return values[max(index, 0)]


def fit_factors(
    levels: list[Level], bw_max_of: Callable[[int], float], eager_bytes: int | None = None
) -> list[SegmentFit]:
    """Both factors of every segment, fitted to all levels at once within their bounds.

    With ``eager_bytes``, each segment below it also gets the sender's overhead o (SMPI's
    smpi/os, which SMPI charges eager messages only), the same on every route: LogP's o
    (Culler et al. 1993, "LogP: towards a realistic model of parallel computation"). It lets
    levels whose latencies differ in shape share the factors (the virtual cluster's network
    in its tbf burst and shared memory at 4-16 KiB). Bounds: 0 <= o <= the fastest time any
    level measured in the segment (a message cannot cost less than its sender's overhead).

    Args:
        levels: the measured curves; the first one's sizes set the segments.
        bw_max_of: a segment start -> the largest bw_factor allowed there.
        eager_bytes: fit an overhead below this size (None: no overhead).

    Raises:
        SimulateError: fewer than two sizes to fit.
    """
    starts = breaks(levels[0].sizes)
    if len(np.unique(levels[0].sizes)) < 2:
        raise SimulateError("calibration needs ping-pong times at two sizes or more")
    ends = starts[1:] + [int(levels[0].sizes.max()) + 1]
    out = []
    for lo, hi in zip(starts, ends, strict=True):
        rows, target, fastest = [], [], []
        for lv in levels:
            inside = (lv.sizes >= lo) & (lv.sizes < hi)
            m, t = lv.sizes[inside].astype(float), lv.times[inside]
            # t / t = 1: relative errors, so small and large sizes count alike. The overhead's
            # unknown is in microseconds, which keeps the columns alike in scale.
            rows.append(np.stack([lv.latency_s / t, m / lv.bandwidth_Bps / t, 1e-6 / t], axis=1))
            target.append(np.ones_like(t))
            fastest += t.tolist()
        rows.append(np.asarray([[0.0, _NOMINAL_PRIOR, 0.0]]))
        target.append(np.asarray([_NOMINAL_PRIOR]))
        design, y = np.concatenate(rows), np.concatenate(target)
        bw_max = bw_max_of(lo)
        lower = [LAT_FACTOR_MIN, 1.0 / bw_max]
        upper = [LAT_FACTOR_MAX, 1.0 / BW_FACTOR_MIN]
        with_overhead = eager_bytes is not None and lo < eager_bytes and min(fastest) > 0
        if with_overhead:
            lower.append(0.0)
            upper.append(min(fastest) * 1e6)
        else:
            design = design[:, :2]
        # Unknowns: lat_factor, 1 / bw_factor and (below the eager limit) o in microseconds.
        fit = lsq_linear(design, y, bounds=(lower, upper))
        lat_f, inv_bw = float(fit.x[0]), float(fit.x[1])
        overhead = float(fit.x[2]) * 1e-6 if with_overhead else 0.0
        n = int(np.count_nonzero((levels[0].sizes >= lo) & (levels[0].sizes < hi)))
        out.append(SegmentFit(lo, hi, lat_f, 1.0 / inv_bw, bw_max, n, overhead))
    return out


def fit_link(level: Level, segments: list[SegmentFit]) -> tuple[float, float]:
    """The latency and bandwidth of the link under ``level`` that fit it best with the factors.

    Used for the memory link: the factors are global, so only its own figures are free.
    """
    starts = [s.start for s in segments]
    lat_f = np.asarray(
        [factor_at(starts, [s.lat_factor for s in segments], int(m)) for m in level.sizes]
    )
    inv_bw = np.asarray(
        [factor_at(starts, [1.0 / s.bw_factor for s in segments], int(m)) for m in level.sizes]
    )
    overhead = np.asarray(
        [factor_at(starts, [s.overhead_s for s in segments], int(m)) for m in level.sizes]
    )
    t = level.times
    design = np.stack([lat_f / t, level.sizes * inv_bw / t], axis=1)
    # Unknowns in microseconds and nanoseconds per byte keep the columns alike in scale.
    scale = np.asarray([1e-6, 1e-9])
    fit = lsq_linear(
        design * scale,
        np.maximum(t - overhead, 0.0) / t,  # what the link itself must take
        bounds=(
            np.asarray([_MIN_LATENCY_S, 1e-18]) / scale,
            np.asarray([np.inf, _MAX_BYTE_TIME_S]) / scale,
        ),
    )
    latency, byte_time = (float(v) for v in fit.x * scale)
    return latency, 1.0 / byte_time
