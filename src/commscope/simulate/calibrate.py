"""SMPI's piecewise factors and link figures from a measured ping-pong run.

SMPI times a message of m bytes on a route of latency L and bottleneck bandwidth B as
``lat_factor(m) * L + m / (bw_factor(m) * B)``, each factor piecewise constant in m and the
same for every route. ``factor_fit`` fits both factors per size segment within physical
bounds, to the inter-node and the intra-node curve at once:

- The inter-node route's latency L is the fastest one-way time of the smallest messages (the
  first segment's sizes): what the route takes when nothing holds it up, so ``lat_factor >=
  1`` means no message is faster than that, and ``lat_factor`` says how much slower messages
  typically are (the median would put a busy machine's slow samples into L, and leave the
  fast half of a two-mode latency with +300 % errors); two NICs share it. B is the NIC's
  nominal rate when the model has one (so ``bw_factor`` says how far below it the network
  runs), else the measured asymptotic bandwidth.
- The memory link (transfers within a node) gets the latency and bandwidth that fit the
  intra-node curve under the same factors; factors and memory link are fitted in turn until
  neither moves.
- With both levels, each segment below the eager limit also gets the sender's overhead
  (SMPI's ``smpi/os``), the same on every route: ``factor_fit.fit_factors``.
- Each level's curve may come from its own run (the model gives every rank a core, so on a
  host with fewer cores than ranks each level is measured in a launch of its own), and the
  fit sees one time per size: the median of its size group (``steady_curve``), so a point
  disturbed as a whole does not set a segment's factors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commscope.analysis.curve import asymptotic_bandwidth, curve_of
from commscope.data.records import Point
from commscope.errors import SimulateError
from commscope.simulate.factor_fit import (
    FIRST_BREAK,
    Level,
    SegmentFit,
    bw_factor_max,
    factor_at,
    fit_factors,
    fit_link,
    steady_curve,
)
from commscope.simulate.params import SimParams

# The virtual cluster's veths carry TCP at this rate when tbf does not hold them back
# (measured: 4.6 GB/s one-way for 768 KiB, inside the 1.6 MB burst of a 2-node vcluster at
# 100gbit, Open MPI ping-pong).
# Within a tbf burst a message can go that fast, so it bounds bw_factor there.
VETH_LINE_Bps = 4.5e9
_ROUNDS_OF_ALTERNATION = 30


@dataclass(frozen=True)
class Limits:
    """What bounds the factors: the inter-node route and the link's burst, if any."""

    route_latency_s: float
    bandwidth_Bps: float
    burst_bytes: int | None

    def bw_max(self, start: int) -> float:
        """The largest bw_factor of a segment starting at ``start`` bytes."""
        return bw_factor_max(start, self.burst_bytes, VETH_LINE_Bps / self.bandwidth_Bps)


@dataclass(frozen=True)
class Calibration:
    """The calibrated parameters, the segment fits behind them and their bounds."""

    params: SimParams
    inter: list[SegmentFit]
    intra: bool  # whether an intra-node curve took part
    limits: Limits


Curve = tuple[NDArray[np.int64], NDArray[np.float64]]


def _curve(points: list[Point], inter: bool) -> Curve:
    """Every measured one-way time of the level, sizes ascending (a size may repeat).

    Points of several runs may be given together (each level measured in its own launch):
    a level's pair is the same label in each, so all of them are kept.
    """
    pairs = sorted({p.pair for p in points if p.op == "pingpong"})
    wanted = [p for p in pairs if (p == "inter-node") == inter]
    if not wanted:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    curve = curve_of(points, "pingpong", wanted[0])
    assert curve is not None
    ok = np.isfinite(curve.time_s) & (curve.time_s > 0)
    return curve.bytes[ok], curve.time_s[ok]


def _steady(curve: Curve) -> Curve:
    return steady_curve(*curve) if curve[0].size else curve


def calibrate(
    points: list[Point],
    base: SimParams,
    nominal_nic_Bps: float | None,
    label: str,
    burst_bytes: int | None = None,
) -> Calibration:
    """Factors and link figures from a ping-pong run's points.

    Args:
        points: the p2p points of one run or several (ping-pong between nodes is required;
            each level may come from its own run).
        base: the model's parameters; figures not calibrated are kept.
        nominal_nic_Bps: the NIC's nominal rate (None: use the measured bandwidth).
        label: what the calibration came from, kept in the model.
        burst_bytes: the token bucket of a shaped link (the virtual cluster's tbf), if any.

    Raises:
        SimulateError: the run has no inter-node ping-pong.
    """
    sizes, times = _curve(points, inter=True)
    if np.unique(sizes).size < 2:
        raise SimulateError(
            f"{label}: no inter-node ping-pong to calibrate from; measure one"
            " with 'commscope run p2p' across two nodes (e.g. --vcluster)"
        )
    bandwidth = nominal_nic_Bps
    if not bandwidth:
        asym = asymptotic_bandwidth(sizes, np.where(sizes > 0, sizes / times, np.nan))
        if asym is None:
            raise SimulateError(f"{label}: no positive message sizes to find a bandwidth from")
        bandwidth = asym[0]
    smallest = sizes < FIRST_BREAK
    if not smallest.any():
        smallest = sizes == sizes.min()
    limits = Limits(float(np.min(times[smallest])), float(bandwidth), burst_bytes)
    params = dataclasses.replace(
        base,
        nic_bw_Bps=float(bandwidth),
        nic_lat_s=max(limits.route_latency_s - base.switch_lat_s, 0.0) / 2.0,
        calibrated_from=label,
    )
    cal = _fit(_steady((sizes, times)), _steady(_curve(points, inter=False)), params, limits)
    sources = dict(cal.params.sources)
    sources["nic latency"] = f"calibrated from {label}"
    sources["nic bandwidth"] = "model channels" if nominal_nic_Bps else f"calibrated from {label}"
    if cal.intra:
        sources["memory latency"] = sources["memory bandwidth"] = f"calibrated from {label}"
    return dataclasses.replace(
        cal, params=dataclasses.replace(cal.params, sources=tuple(sources.items()))
    )


def _fit(inter: Curve, intra: Curve, params: SimParams, limits: Limits) -> Calibration:
    """Factors for both curves and the memory link under them, fitted in turn."""
    inter_level = Level(inter[0], inter[1], limits.route_latency_s, limits.bandwidth_Bps)
    has_intra = np.unique(intra[0]).size >= 2
    mem_lat, mem_bw = params.memory_lat_s, params.memory_bw_Bps
    if has_intra:  # start from the intra-node curve's own line (factors of 1)
        ones = [SegmentFit(0, 0, 1.0, 1.0, 1.0, 0)]
        mem_lat, mem_bw = fit_link(Level(intra[0], intra[1], 1.0, 1.0), ones)
    # The sender's overhead is what lets two levels share factors; one level needs none.
    eager = params.eager_bytes if has_intra else None
    segs = fit_factors([inter_level], limits.bw_max)
    for _ in range(_ROUNDS_OF_ALTERNATION if has_intra else 0):
        levels = [inter_level, Level(intra[0], intra[1], mem_lat, mem_bw)]
        segs = fit_factors(levels, limits.bw_max, eager)
        new_lat, new_bw = fit_link(Level(intra[0], intra[1], 1.0, 1.0), segs)
        moved = abs(new_lat / mem_lat - 1) + abs(new_bw / mem_bw - 1)
        mem_lat, mem_bw = new_lat, new_bw
        if moved < 1e-6:
            break
    params = dataclasses.replace(
        params,
        memory_lat_s=mem_lat,
        memory_bw_Bps=mem_bw,
        lat_factor=tuple((s.start, s.lat_factor) for s in segs),
        bw_factor=tuple((s.start, s.bw_factor) for s in segs),
        send_overhead=tuple((s.start, s.overhead_s) for s in segs) if eager else (),
    )
    return Calibration(params, segs, bool(has_intra), limits)


def refine(cal: Calibration, measured: list[Point], simulated: list[Point]) -> Calibration:
    """Correct the calibration by what a simulation of it gave, within the same bounds.

    The engine's own protocol (a control message between samples, rendezvous above the
    eager limit) adds time in SMPI that the closed form leaves out. Each measured time is
    scaled by closed form / simulated at its size, and the bounded fit is made again on those
    targets: the simulation's extra time comes off, and the factors keep their bounds.
    """
    curves = []
    for inter in (True, False):
        sizes, times = _steady(_curve(measured, inter))
        sim = dict(zip(*(x.tolist() for x in _steady(_curve(simulated, inter))), strict=True))
        keep = np.asarray([sim.get(int(m), 0.0) > 0 for m in sizes], dtype=bool)
        sizes, times = sizes[keep], times[keep]
        model = np.asarray([smpi_time(cal.params, int(m), inter) for m in sizes])
        simulated_t = np.asarray([sim[int(m)] for m in sizes])
        curves.append((sizes, times * model / simulated_t))
    if np.unique(curves[0][0]).size < 2:
        return cal
    return _fit(curves[0], curves[1], cal.params, cal.limits)


def smpi_time(params: SimParams, size: int, inter: bool) -> float:
    """One-way time SMPI's model gives one message alone on its route (the closed form)."""
    lat = 2 * params.nic_lat_s + params.switch_lat_s if inter else params.memory_lat_s
    bw = params.nic_bw_Bps if inter else params.memory_bw_Bps
    lf = _factor(params.lat_factor, size)
    bf = _factor(params.bw_factor, size)
    # SMPI charges the sender's overhead (smpi/os) on eager messages only.
    o = _factor(params.send_overhead, size) if params.send_overhead else 0.0
    return (o if size < params.eager_bytes else 0.0) + lf * lat + size / (bf * bw)


def _factor(factors: tuple[tuple[int, float], ...], size: int) -> float:
    if not factors:
        return 1.0
    return factor_at([s for s, _ in factors], [f for _, f in factors], size)
