"""SMPI's piecewise factors and link figures from a measured ping-pong run.

SMPI times a message of m bytes on a route of latency L and bottleneck bandwidth B as
``lat_factor(m) * L + m / (bw_factor(m) * B)``, each factor piecewise constant in m. So a
straight line ``t = a + b m`` fitted to the measured one-way times of each size segment gives
that segment's factors exactly: ``lat_factor = a / L``, ``bw_factor = 1 / (b B)``.

- The inter-node curve sets the factors, the NIC latency (half the smallest message's
  one-way time: a route crosses two NICs) and keeps the NIC's nominal rate as B when the model
  has one (so the factors say how far below its rate the network runs), else the measured
  asymptotic bandwidth.
- The factors are global in SMPI, so the memory link (transfers within a node) gets the
  latency and bandwidth that best fit the intra-node curve under the same factors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import nnls

from commscope.analysis.curve import asymptotic_bandwidth, curve_of
from commscope.data.records import Point
from commscope.errors import SimulateError
from commscope.simulate.params import SimParams

# Segments start at 0 and then at every power of two from 64 B (65536, a usual eager limit,
# is one of them): each gets its own factors. Powers of four were too coarse for TCP's
# convex curve between 16 and 64 KiB (50 % off at 16 KiB on the virtual cluster).
FIRST_BREAK = 64
STEP = 2
MIN_FACTOR = 1e-3
MAX_FACTOR = 1e3


@dataclass(frozen=True)
class Segment:
    """One size segment's straight-line fit: t = a + b * m for sizes in [start, end)."""

    start: int
    end: int
    a_s: float
    b_s_per_byte: float
    sizes: int


def segments(sizes: NDArray[np.int64], times: NDArray[np.float64]) -> list[Segment]:
    """Weighted (relative-error) straight-line fits per size segment with two sizes or more."""
    top = int(sizes.max()) if sizes.size else 0
    breaks = [0] + [FIRST_BREAK * STEP**k for k in range(32) if FIRST_BREAK * STEP**k <= top]
    breaks.append(top + 1)
    out: list[Segment] = []
    for lo, hi in zip(breaks[:-1], breaks[1:], strict=True):
        inside = (sizes >= lo) & (sizes < hi)
        m, t = sizes[inside].astype(float), times[inside]
        if np.unique(m).size < 2:
            # Too few sizes for a line: merge into the previous segment.
            if out and m.size:
                prev = out.pop()
                sel = (sizes >= prev.start) & (sizes < hi)
                out.append(_fit(prev.start, hi, sizes[sel].astype(float), times[sel]))
            continue
        out.append(_fit(lo, hi, m, t))
    if not out:
        raise SimulateError("calibration needs ping-pong times at two sizes or more")
    return out


def _fit(lo: int, hi: int, m: NDArray[np.float64], t: NDArray[np.float64]) -> Segment:
    # Relative errors (every size counts alike); a and b may not go negative, as noise
    # would otherwise give a negative latency or bandwidth.
    w = 1.0 / t
    scale = max(float(m.max()), 1.0)  # keeps the two columns of similar magnitude
    design = np.stack([np.ones_like(m), m / scale], axis=1) * w[:, None]
    (a, b), _ = nnls(design, t * w)
    return Segment(lo, hi, float(a), float(b) / scale, int(m.size))


def _curve(points: list[Point], inter: bool) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    pairs = sorted({p.pair for p in points if p.op == "pingpong"})
    wanted = [p for p in pairs if (p == "inter-node") == inter]
    if not wanted:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    curve = curve_of(points, "pingpong", wanted[0])
    assert curve is not None
    ok = np.isfinite(curve.time_s) & (curve.time_s > 0)
    return curve.bytes[ok], curve.time_s[ok]


@dataclass(frozen=True)
class Calibration:
    """The calibrated parameters and the fits behind them."""

    params: SimParams
    inter: list[Segment]
    intra: list[Segment]


def calibrate(
    points: list[Point], base: SimParams, nominal_nic_Bps: float | None, label: str
) -> Calibration:
    """Factors and link figures from a ping-pong run's points.

    Args:
        points: the run's p2p points (ping-pong between nodes is required).
        base: the model's parameters; figures not calibrated are kept.
        nominal_nic_Bps: the NIC's nominal rate (None: use the measured bandwidth).
        label: what the calibration came from, kept in the model.

    Raises:
        SimulateError: the run has no inter-node ping-pong.
    """
    sizes, times = _curve(points, inter=True)
    if sizes.size < 2:
        raise SimulateError(
            f"{label}: no inter-node ping-pong to calibrate from; measure one"
            " with 'commscope run p2p' across two nodes (e.g. --vcluster)"
        )
    inter = segments(sizes, times)
    latency = float(times[np.argmin(sizes)])
    bandwidth = nominal_nic_Bps
    if not bandwidth:
        asym = asymptotic_bandwidth(sizes, np.where(sizes > 0, sizes / times, np.nan))
        if asym is None:
            raise SimulateError(f"{label}: no positive message sizes to find a bandwidth from")
        bandwidth = asym[0]
    route_lat = max(latency, 1e-9)
    lat_f = tuple((s.start, _clamp(s.a_s / route_lat)) for s in inter)
    bw_f = tuple(
        (s.start, _clamp(1.0 / (s.b_s_per_byte * bandwidth)) if s.b_s_per_byte > 0 else MAX_FACTOR)
        for s in inter
    )
    nic_lat = max(route_lat - base.switch_lat_s, 0.0) / 2.0
    params = dataclasses.replace(
        base,
        nic_bw_Bps=float(bandwidth),
        nic_lat_s=nic_lat,
        lat_factor=lat_f,
        bw_factor=bw_f,
        calibrated_from=label,
    )
    intra: list[Segment] = []
    isizes, itimes = _curve(points, inter=False)
    if isizes.size >= 2:
        intra = segments(isizes, itimes)
        lats, bws = [], []
        for seg in intra:
            lf = _factor_at(lat_f, seg.start)
            bf = _factor_at(bw_f, seg.start)
            if seg.a_s > 0:
                lats.append(seg.a_s / lf)
            if seg.b_s_per_byte > 0:
                bws.append(1.0 / (seg.b_s_per_byte * bf))
        if lats:
            params = dataclasses.replace(params, memory_lat_s=float(np.median(lats)))
        if bws:
            params = dataclasses.replace(params, memory_bw_Bps=float(np.median(bws)))
    sources = dict(params.sources)
    sources.update(
        {
            "nic latency": f"calibrated from {label}",
            "nic bandwidth": "model channels" if nominal_nic_Bps else f"calibrated from {label}",
        }
    )
    if intra:
        sources.update(
            {
                "memory latency": f"calibrated from {label}",
                "memory bandwidth": f"calibrated from {label}",
            }
        )
    params = dataclasses.replace(params, sources=tuple(sources.items()))
    return Calibration(params, inter, intra)


def _clamp(f: float) -> float:
    return min(max(f, MIN_FACTOR), MAX_FACTOR)


def refine(params: SimParams, measured: list[Point], simulated: list[Point]) -> SimParams:
    """Correct the factors by what a simulation of the calibrated model gave.

    The engine's own protocol (a control message between samples, rendezvous above the
    eager limit) adds time in SMPI that the closed form leaves out. Each segment's two factors
    are scaled together by the median ratio of measured to simulated times over its sizes:
    the closed-form fit keeps the shape, the simulation sets the level. (Correcting latency and
    bandwidth apart from the two lines' intercepts and slopes let a noisy slope throw a
    segment off: 2 KiB once simulated 9x too slow on the virtual cluster.) The memory link's
    latency and bandwidth are corrected from the intra-node lines, their medians over segments.
    """

    def lines(points: list[Point], inter: bool) -> dict[int, Segment]:
        sizes, times = _curve(points, inter)
        return {s.start: s for s in segments(sizes, times)} if sizes.size >= 2 else {}

    m_sizes, m_times = _curve(measured, True)
    s_time = dict(zip(*(x.tolist() for x in _curve(simulated, True)), strict=True))
    lat_f, bw_f = [], []
    for (start, lf), (_, bf), end in zip(
        params.lat_factor,
        params.bw_factor,
        [s for s, _ in params.lat_factor[1:]] + [np.inf],
        strict=True,
    ):
        inside = (m_sizes >= start) & (m_sizes < end)
        ratios = [
            t / s_time[int(b)]
            for b, t in zip(m_sizes[inside], m_times[inside], strict=True)
            if s_time.get(int(b), 0.0) > 0
        ]
        if ratios:
            r = float(np.median(ratios))
            lf, bf = _clamp(lf * r), _clamp(bf / r)
        lat_f.append((start, lf))
        bw_f.append((start, bf))
    out = dataclasses.replace(params, lat_factor=tuple(lat_f), bw_factor=tuple(bw_f))
    m_intra, s_intra = lines(measured, False), lines(simulated, False)
    lat_r = [
        m_intra[k].a_s / s_intra[k].a_s
        for k in m_intra
        if k in s_intra and m_intra[k].a_s > 0 and s_intra[k].a_s > 0
    ]
    bw_r = [
        s_intra[k].b_s_per_byte / m_intra[k].b_s_per_byte
        for k in m_intra
        if k in s_intra and m_intra[k].b_s_per_byte > 0 and s_intra[k].b_s_per_byte > 0
    ]
    if lat_r:
        out = dataclasses.replace(out, memory_lat_s=out.memory_lat_s * float(np.median(lat_r)))
    if bw_r:
        out = dataclasses.replace(out, memory_bw_Bps=out.memory_bw_Bps * float(np.median(bw_r)))
    return out


def _factor_at(factors: tuple[tuple[int, float], ...], size: int) -> float:
    """SMPI's rule: the factor of the largest threshold not above ``size``."""
    value = factors[0][1]
    for start, f in factors:
        if start <= size:
            value = f
    return value


def smpi_time(params: SimParams, size: int, inter: bool) -> float:
    """One-way time SMPI's model gives one message alone on its route (for checks)."""
    lat = 2 * params.nic_lat_s + params.switch_lat_s if inter else params.memory_lat_s
    bw = params.nic_bw_Bps if inter else params.memory_bw_Bps
    lf = _factor_at(params.lat_factor, size) if params.lat_factor else 1.0
    bf = _factor_at(params.bw_factor, size) if params.bw_factor else 1.0
    return lf * lat + size / (bf * bw)
