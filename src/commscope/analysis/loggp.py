"""LogGP parameters L, o_s, o_r, g, G from Netgauge-style measurements.

The method is Netgauge's (Hoefler, Schneider, Lumsdaine, "LogGP in theory and practice"):
the engine measures parameterised round trips PRTT(n, d, s), n messages of s bytes with a
delay d between them and one message back, plus the time of each send call and of a receive
whose message had already arrived. Per size s, from the medians over samples:

    o_s(s) = time of an MPI_Send call of the delayed trains          (sender overhead)
    o_r(s) = time of an MPI_Recv whose message was already there      (receiver overhead)
    g(s)   = (PRTT(n,0,s) - PRTT(1,0,s)) / (n - 1)                     (time per message
                                                                         back to back)
    L(s)   = PRTT(1,0,s) / 2 - o_s(s) - o_r(s)                         (what the overheads
                                                                         leave of one way)
    o_s from the round trips = (PRTT(n,d,s) - PRTT(1,0,s)) / (n - 1) - d  (Netgauge's own
                                                                         estimate; a check)

The send and receive times include one timer call; they lose its cost, the 25 % trimmed mean
of the empty timed intervals the engine recorded for the pair (``timer_s``).

LogGP's model is g(s) = g + G s; o_s(s), o_r(s) and L(s) are straight lines in s too. Protocol
switches (short, eager, rendezvous) break these lines, so the sizes are split into regimes at
the thresholds ``regimes.find_thresholds`` finds in the one-way time PRTT(1,0,s)/2 and in g(s).
L, o_s, o_r and g are the intercepts of lines fitted over the first regime (small messages,
where LogGP's constants are defined); G, the gap per byte, is the slope of g(s) over the last
regime of the one-way time that holds at least ``MIN_LARGE_SIZES`` sizes (large messages,
where bandwidth rules). Each line is a least-squares fit of residuals relative to the one-way
time at that size, made robust by Tukey's biweight (iteratively reweighted least squares,
c = 4.685 robust standard deviations of the relative residuals, which are taken as at least
1 %): on a shared machine a rank descheduled during the long samples of one size stretches that
size alone, and such a size gets weight zero instead of bending the line. Sizes whose weight
ends at zero are listed as dropped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commscope.analysis import regimes as reg
from commscope.analysis import stats
from commscope.analysis.p2p import PAIR_ORDER
from commscope.data.records import LogGP
from commscope.units import percent_text, rate_text, size_text, time_text

MIN_LARGE_SIZES = 4
_BIWEIGHT_C = 4.685
_MIN_SPREAD = 0.01  # relative residuals below this spread count as noise-free
_MAD_TO_SIGMA = 1.4826
_ITERATIONS = 50


@dataclass(frozen=True)
class LineFit:
    """y(s) = intercept + slope * s over sizes first_bytes..last_bytes."""

    intercept: float  # seconds
    slope: float  # seconds per byte
    first_bytes: int
    last_bytes: int
    n_sizes: int  # sizes with a positive weight
    dropped_bytes: tuple[int, ...]  # sizes whose weight ended at zero (outliers)
    rms_relative_error: float  # of the kept sizes, relative to the one-way time

    def at(self, nbytes: Any) -> NDArray[np.float64]:
        """The line at ``nbytes``, seconds."""
        return self.intercept + self.slope * np.asarray(nbytes, dtype=np.float64)

    def to_json(self) -> dict[str, Any]:
        """Plain dict: seconds, seconds per byte, bytes."""
        return {
            "intercept_s": self.intercept,
            "slope_s_per_byte": self.slope,
            "first_bytes": self.first_bytes,
            "last_bytes": self.last_bytes,
            "n_sizes": self.n_sizes,
            "dropped_bytes": list(self.dropped_bytes),
            "rms_relative_error": self.rms_relative_error,
        }


@dataclass(frozen=True)
class SizeCurves:
    """Per-size medians of one pair, seconds, sizes ascending."""

    bytes: NDArray[np.int64]
    one_way_s: NDArray[np.float64]  # PRTT(1,0,s) / 2
    o_s_s: NDArray[np.float64]
    o_r_s: NDArray[np.float64]
    g_s: NDArray[np.float64]
    L_s: NDArray[np.float64]  # noqa: N815 - LogGP's name
    o_s_prtt_s: NDArray[np.float64]  # Netgauge's o_s from PRTT(n,d,s)
    delay_s: NDArray[np.float64]
    samples: NDArray[np.int64]


@dataclass(frozen=True)
class LogGPFit:
    """LogGP parameters of one pair, with the lines and per-size curves they came from."""

    pair: str
    ranks: tuple[int, int]
    L_s: float  # noqa: N815 - LogGP's names, units in the suffix
    o_s_s: float
    o_r_s: float
    g_s: float
    G_s_per_byte: float  # noqa: N815
    small_bytes: tuple[int, int]  # sizes of the first regime (L, o_s, o_r, g)
    large_bytes: tuple[int, int]  # sizes of the regime G comes from
    lines: dict[str, LineFit] = field(hash=False)  # L, o_s, o_r, g (first regime), G (large)
    curves: SizeCurves = field(hash=False, repr=False)

    @property
    def bandwidth_Bps(self) -> float | None:  # noqa: N802 - the unit is part of the name
        """1 / G: the asymptotic bandwidth LogGP implies (None when G is not positive)."""
        return 1.0 / self.G_s_per_byte if self.G_s_per_byte > 0 else None

    @property
    def message_rate_per_s(self) -> float | None:
        """1 / g: small messages one sender can issue per second (None when g <= 0)."""
        return 1.0 / self.g_s if self.g_s > 0 else None

    @property
    def delay_below_gap_bytes(self) -> tuple[int, ...]:
        """Sizes whose delay d did not exceed g(s): Netgauge's o_s check is void there."""
        c = self.curves
        return tuple(int(m) for m, d, g in zip(c.bytes, c.delay_s, c.g_s, strict=True) if d <= g)

    def to_json(self) -> dict[str, Any]:
        """Plain dict: seconds, seconds per byte, bytes per second."""
        c = self.curves
        return {
            "pair": self.pair,
            "ranks": list(self.ranks),
            "L_s": self.L_s,
            "o_s_s": self.o_s_s,
            "o_r_s": self.o_r_s,
            "g_s": self.g_s,
            "G_s_per_byte": self.G_s_per_byte,
            "bandwidth_Bps": self.bandwidth_Bps,
            "message_rate_per_s": self.message_rate_per_s,
            "small_bytes": list(self.small_bytes),
            "large_bytes": list(self.large_bytes),
            "lines": {k: v.to_json() for k, v in self.lines.items()},
            "sizes": [
                {
                    "bytes": int(c.bytes[i]),
                    "one_way_s": float(c.one_way_s[i]),
                    "o_s_s": float(c.o_s_s[i]),
                    "o_r_s": float(c.o_r_s[i]),
                    "g_s": float(c.g_s[i]),
                    "L_s": float(c.L_s[i]),
                    "o_s_prtt_s": float(c.o_s_prtt_s[i]),
                    "delay_s": float(c.delay_s[i]),
                    "samples": int(c.samples[i]),
                }
                for i in range(c.bytes.size)
            ],
        }


def timer_cost_s(points: Sequence[LogGP]) -> float:
    """Cost of one timer call: 25 % trimmed mean of all empty intervals of ``points``."""
    empty = [t for p in points for t in p.timer_s]
    return stats.mean(stats.trimmed(empty, 0.25)) if empty else 0.0


def size_curves(points: Sequence[LogGP]) -> SizeCurves:
    """Per-size medians of one pair's points (see the module docstring for each quantity)."""
    ps = sorted(points, key=lambda p: p.bytes)
    timer_overhead_s = timer_cost_s(ps)

    def med(xs: Sequence[float]) -> float:
        return float(np.median(np.asarray(xs, dtype=np.float64)))

    prtt1 = np.array([med(p.prtt_1_0_s) for p in ps])
    prttn = np.array([med(p.prtt_n_0_s) for p in ps])
    prttd = np.array([med(p.prtt_n_d_s) for p in ps])
    n = np.array([p.n for p in ps], dtype=np.float64)
    delay = np.array([p.delay_s for p in ps])
    o_s = np.array([med(p.send_s) for p in ps]) - timer_overhead_s
    o_r = np.array([med(p.recv_s) for p in ps]) - timer_overhead_s
    return SizeCurves(
        bytes=np.array([p.bytes for p in ps], dtype=np.int64),
        one_way_s=prtt1 / 2.0,
        o_s_s=o_s,
        o_r_s=o_r,
        g_s=(prttn - prtt1) / (n - 1.0),
        L_s=prtt1 / 2.0 - o_s - o_r,
        o_s_prtt_s=(prttd - prtt1) / (n - 1.0) - delay,
        delay_s=delay,
        samples=np.array([p.n_samples for p in ps], dtype=np.int64),
    )


def line_fit(
    sizes: NDArray[np.float64], values: NDArray[np.float64], scale: NDArray[np.float64]
) -> LineFit | None:
    """Robust least-squares line through ``values``, residuals relative to ``scale``.

    Tukey's biweight by iteratively reweighted least squares (see the module docstring).

    Returns:
        The line; None without a size of positive scale. One size gives a flat line.
    """
    ok = np.isfinite(values) & np.isfinite(scale) & (scale > 0)
    m, y, w = sizes[ok], values[ok], scale[ok]
    if m.size == 0:
        return None
    weight = np.ones(m.size)
    a, b = _solve(m, y, w, weight)
    for _ in range(_ITERATIONS):
        resid = (y - a - b * m) / w
        kept = resid[weight > 0]
        spread = max(_MIN_SPREAD, _MAD_TO_SIGMA * float(np.median(np.abs(kept - np.median(kept)))))
        u = resid / (_BIWEIGHT_C * spread)
        new = np.where(np.abs(u) < 1.0, (1.0 - u**2) ** 2, 0.0)
        if np.count_nonzero(new) < min(2, m.size):
            break
        weight = new
        a_new, b_new = _solve(m, y, w, weight)
        done = abs(a_new - a) <= 1e-12 * max(abs(a), 1e-30) and abs(b_new - b) <= 1e-12 * max(
            abs(b), 1e-30
        )
        a, b = a_new, b_new
        if done:
            break
    used = weight > 0
    resid = (y - a - b * m) / w
    rms = float(np.sqrt(np.mean(resid[used] ** 2)))
    return LineFit(
        a,
        b,
        int(m[used].min()),
        int(m[used].max()),
        int(used.sum()),
        tuple(int(x) for x in m[~used]),
        rms,
    )


def _solve(
    m: NDArray[np.float64],
    y: NDArray[np.float64],
    w: NDArray[np.float64],
    weight: NDArray[np.float64],
) -> tuple[float, float]:
    """Weighted least squares of (y - a - b m) / w with weights ``weight``."""
    use = weight > 0
    if np.unique(m[use]).size < 2:
        return float(np.average(y[use], weights=weight[use])), 0.0
    root = np.sqrt(weight[use]) / w[use]
    design = np.column_stack([root, m[use] * root])
    coef, *_ = np.linalg.lstsq(design, y[use] * root, rcond=None)
    return float(coef[0]), float(coef[1])


def _edges(c: SizeCurves, curves: Sequence[NDArray[np.float64]]) -> list[int]:
    """Last size below each threshold found in any of ``curves``, ascending."""
    found = {th.below_bytes for y in curves for th in reg.find_thresholds(c.bytes, y)}
    return sorted(found)


def fit_pair(points: Sequence[LogGP]) -> LogGPFit | None:
    """LogGP parameters of one pair (see the module docstring).

    Returns:
        The fit; None when the points hold fewer than two sizes.
    """
    if len({p.bytes for p in points}) < 2:
        return None
    c = size_curves(points)
    m = c.bytes.astype(np.float64)
    # First regime: below the first threshold of the one-way time or of g(s).
    small_edges = _edges(c, [c.one_way_s, c.g_s])
    small = m <= small_edges[0] if small_edges else np.ones(m.size, dtype=bool)
    # Large messages: the last regime of the one-way time with enough sizes.
    large_edges = _edges(c, [c.one_way_s])
    bounds = [-math.inf, *large_edges, math.inf]
    large = np.ones(m.size, dtype=bool)
    for lo, hi in reversed(list(zip(bounds[:-1], bounds[1:], strict=True))):
        inside = (m > lo) & (m <= hi)
        if int(inside.sum()) >= MIN_LARGE_SIZES:
            large = inside
            break
    lines: dict[str, LineFit] = {}
    for name, values, where in (
        ("L", c.L_s, small),
        ("o_s", c.o_s_s, small),
        ("o_r", c.o_r_s, small),
        ("g", c.g_s, small),
        ("G", c.g_s, large),
    ):
        line = line_fit(m[where], values[where], c.one_way_s[where])
        if line is None:
            return None
        lines[name] = line
    first = points[0]

    def span(where: NDArray[np.bool_]) -> tuple[int, int]:
        return int(c.bytes[where].min()), int(c.bytes[where].max())

    return LogGPFit(
        first.pair,
        first.ranks,
        lines["L"].intercept,
        lines["o_s"].intercept,
        lines["o_r"].intercept,
        lines["g"].intercept,
        lines["G"].slope,
        span(small),
        span(large),
        lines,
        c,
    )


def fits(points: Sequence[LogGP]) -> list[LogGPFit]:
    """One LogGP fit per pair, nearest pair first (pairs with too few sizes are left out)."""
    out = []
    for pair in sorted(
        {p.pair for p in points},
        key=lambda x: PAIR_ORDER.index(x) if x in PAIR_ORDER else len(PAIR_ORDER),
    ):
        f = fit_pair([p for p in points if p.pair == pair])
        if f is not None:
            out.append(f)
    return out


def findings(fitted: Sequence[LogGPFit]) -> list[str]:
    """Plain sentences about what stands out in each pair's LogGP parameters."""
    out = []
    for f in fitted:
        one_way = f.L_s + f.o_s_s + f.o_r_s
        cpu = f.o_s_s + f.o_r_s
        if one_way > 0 and f.o_s_s > 0 and f.o_r_s > 0:
            share = cpu / one_way
            if share >= 0.5:
                out.append(
                    f"{f.pair}: the send and receive overheads (o_s {time_text(f.o_s_s)}, o_r"
                    f" {time_text(f.o_r_s)}) make up {percent_text(share)} of the"
                    f" small-message one-way time ({time_text(one_way)}): the CPUs are busy for"
                    " most of the latency, so overlapping communication with computation"
                    " hides little of it."
                )
            else:
                out.append(
                    f"{f.pair}: L ({time_text(f.L_s)}) is {percent_text(f.L_s / one_way)} of"
                    f" the small-message one-way time ({time_text(one_way)}); the CPU overheads"
                    " are the rest, so nonblocking communication can hide most of the latency."
                )
        if f.g_s > 0 and f.o_s_s > 0 and f.g_s > 1.5 * f.o_s_s:
            out.append(
                f"{f.pair}: back to back, a small message leaves every g = {time_text(f.g_s)},"
                f" {f.g_s / f.o_s_s:.1f}x the send call's overhead: the transport, not the"
                f" sending CPU, limits the message rate (at most about {1 / f.g_s:.3g}"
                " messages per second)."
            )
        large = f.lines["G"]
        if f.bandwidth_Bps:
            text = (
                f"{f.pair}: the gap grows by G = {f.G_s_per_byte * 1e9:.3g} ns per byte from"
                f" {size_text(large.first_bytes)} to {size_text(large.last_bytes)}, a LogGP"
                f" bandwidth of {rate_text(f.bandwidth_Bps)}"
            )
            c = f.curves
            big = (c.bytes >= large.first_bytes) & (c.bytes <= large.last_bytes)
            o_big = line_fit(c.bytes[big].astype(np.float64), c.o_s_s[big], c.one_way_s[big])
            if o_big is not None and o_big.n_sizes >= 2 and o_big.slope >= 0.5 * f.G_s_per_byte:
                text += (
                    "; the send call's time grows at"
                    f" {percent_text(o_big.slope / f.G_s_per_byte)} of that rate, so the"
                    " sender is busy for the whole transfer (it copies the data itself or"
                    " waits in the call for it to finish)"
                )
            out.append(text + ".")
        short = f.delay_below_gap_bytes
        if short:
            out.append(
                f"{f.pair}: at {len(short)} size(s) (first {size_text(short[0])}) the delay d"
                " of PRTT(n,d,s) did not exceed g(s); Netgauge's o_s check is void there"
                " (the direct send-call times are unaffected)."
            )
    return out
