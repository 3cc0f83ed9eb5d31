"""The bounded fit of SMPI's factors on synthetic ping-pong curves (no SimGrid)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from commscope.data.records import Point
from commscope.simulate import calibrate
from commscope.simulate.factor_fit import BW_FACTOR_MIN, LAT_FACTOR_MAX, bw_factor_max
from commscope.simulate.params import SimParams
from commscope.units import netpipe_schedule

NOMINAL = 125e6  # 1 Gbit/s
BASE = SimParams(nic_bw_Bps=NOMINAL, nic_lat_s=10e-6, memory_bw_Bps=10e9, memory_lat_s=1e-6)
SIZES = netpipe_schedule(1 << 22, 3)


def points(time_of: Callable[[str, int], float], pairs=("inter-node", "intra-socket")):
    return [
        Point(
            op="pingpong",
            pair=pair,
            ranks=(0, 1),
            bytes=m,
            bytes_per_sample=m,
            window=None,
            iters_per_sample=1,
            warmup=1,
            samples_s=(time_of(pair, m),) * 3,
            stop="rse",
            raw={},
        )
        for pair in pairs
        for m in SIZES
    ]


def model_errors(cal: calibrate.Calibration, time_of, inter: bool) -> np.ndarray:
    pair = "inter-node" if inter else "intra-socket"
    return np.asarray(
        [calibrate.smpi_time(cal.params, m, inter) / time_of(pair, m) - 1 for m in SIZES]
    )


def hockney(pair: str, m: int) -> float:
    return 30e-6 + m / NOMINAL if pair == "inter-node" else 2e-6 + m / 5e9


def test_a_hockney_curve_gives_factors_of_one_and_the_links_it_was_made_of() -> None:
    cal = calibrate.calibrate(points(hockney), BASE, NOMINAL, "synthetic")
    lat = [f for _, f in cal.params.lat_factor]
    bw = [f for _, f in cal.params.bw_factor]
    assert len(lat) > 10
    assert lat == pytest.approx([1.0] * len(lat), rel=1e-3)
    # Below 1 KiB a byte costs < 1 % of the latency, so the slope there is barely defined.
    above = [f for (s, f) in cal.params.bw_factor if s >= 1024]
    assert above == pytest.approx([1.0] * len(above), rel=1e-2)
    assert all(BW_FACTOR_MIN <= f <= 1.0 for f in bw)
    assert cal.params.nic_lat_s == pytest.approx(15e-6, rel=1e-2)  # half the route
    assert cal.params.memory_lat_s == pytest.approx(2e-6, rel=1e-2)
    assert cal.params.memory_bw_Bps == pytest.approx(5e9, rel=1e-2)
    for inter in (True, False):
        assert np.abs(model_errors(cal, hockney, inter)).max() < 0.01


def test_a_curve_faster_than_nominal_is_held_at_the_bound_and_left_as_error() -> None:
    # Three times the nominal rate with no burst to explain it: the model must not follow.
    def fast(pair: str, m: int) -> float:
        return 30e-6 + m / (3 * NOMINAL)

    cal = calibrate.calibrate(points(fast, ("inter-node",)), BASE, NOMINAL, "synthetic")
    assert max(f for _, f in cal.params.bw_factor) <= 1.0
    big = [s for s in cal.inter if s.start >= 65536]
    assert big and all(any(h.startswith("bw<=") for h in s.held) for s in big)
    errors = model_errors(cal, fast, True)
    # At 4 MiB the bytes dominate: the model is close to 3x too slow, and says so.
    assert errors[-1] == pytest.approx(2.0, abs=0.1)
    assert np.median(np.abs(errors[np.asarray(SIZES) >= 65536])) > 1.0


def test_a_burst_lets_small_segments_go_faster_within_its_bound() -> None:
    burst = 16000
    line_ratio = calibrate.VETH_LINE_Bps / NOMINAL

    def bursty(pair: str, m: int) -> float:  # the first 'burst' bytes at twice the rate
        return 30e-6 + (m if m <= burst else burst / 2 + (m - burst)) / NOMINAL / (
            2 if m <= burst else 1
        )

    cal = calibrate.calibrate(points(bursty, ("inter-node",)), BASE, NOMINAL, "synthetic", burst)
    for seg in cal.inter:
        assert seg.bw_max == bw_factor_max(seg.start, burst, line_ratio)
        assert BW_FACTOR_MIN <= seg.bw_factor <= seg.bw_max
        assert 1.0 <= seg.lat_factor <= LAT_FACTOR_MAX
    by_start = {s.start: s for s in cal.inter}
    assert by_start[4096].bw_factor == pytest.approx(2.0, rel=0.05)
    assert by_start[1 << 21].bw_max < 1.01  # far above the burst it can barely help
    assert np.median(np.abs(model_errors(cal, bursty, True))) < 0.02


def test_bw_factor_bounds_follow_the_burst() -> None:
    assert bw_factor_max(0, None, 36.0) == 1.0
    assert bw_factor_max(8192, 16000, 36.0) == 36.0
    assert bw_factor_max(32768, 16000, 36.0) == pytest.approx(32768 / (32768 - 16000))
    assert bw_factor_max(32768, 16000, 1.5) == 1.5
    assert bw_factor_max(1 << 30, 16000, 0.5) == 1.0


def test_a_curve_far_slower_than_nominal_keeps_bw_factor_in_range_and_shows_the_error() -> None:
    # A hundredth of the nominal rate: the hosts, not the network; the error stays visible.
    def slow(pair: str, m: int) -> float:
        return 30e-6 + m / (NOMINAL / 100)

    cal = calibrate.calibrate(points(slow, ("inter-node",)), BASE, NOMINAL, "synthetic")
    assert all(BW_FACTOR_MIN <= f <= 1.0 for _, f in cal.params.bw_factor)
    assert all(1.0 <= f <= LAT_FACTOR_MAX for _, f in cal.params.lat_factor)
    errors = model_errors(cal, slow, True)
    # At 1 MiB and up the model is at best 4 / 100 of the time: about -96 %.
    big = errors[np.asarray(SIZES) >= 1 << 20]
    assert big.size and (big < -0.9).all()


def test_a_step_larger_than_a_rendezvous_holds_lat_factor_at_its_bound() -> None:
    # 10 route latencies extra from 64 KiB: more than three one-way trips can explain.
    def stepped(pair: str, m: int) -> float:
        return 30e-6 * (11 if m >= 65536 else 1) + m / NOMINAL

    cal = calibrate.calibrate(points(stepped, ("inter-node",)), BASE, NOMINAL, "synthetic")
    seg = next(s for s in cal.inter if s.start == 65536)
    assert seg.lat_factor == pytest.approx(LAT_FACTOR_MAX)
    assert f"lat<={LAT_FACTOR_MAX:g}" in seg.held
    assert all(1.0 <= f <= LAT_FACTOR_MAX for _, f in cal.params.lat_factor)


def test_refine_keeps_the_bounds_however_far_off_the_simulation_was() -> None:
    cal = calibrate.calibrate(points(hockney), BASE, NOMINAL, "synthetic")
    for factor in (0.01, 100.0):  # a simulation 100x too fast, then 100x too slow

        def simulated(pair: str, m: int, f: float = factor) -> float:
            return hockney(pair, m) * f

        refined = calibrate.refine(cal, points(hockney), points(simulated))
        assert all(1.0 <= f <= LAT_FACTOR_MAX for _, f in refined.params.lat_factor)
        assert all(BW_FACTOR_MIN <= f <= 1.0 for _, f in refined.params.bw_factor)
        assert refined.limits == cal.limits
    # A simulation that agrees with the closed form changes nothing.
    same = calibrate.refine(
        cal,
        points(hockney),
        points(lambda pair, m: calibrate.smpi_time(cal.params, m, pair == "inter-node")),
    )
    assert [f for _, f in same.params.lat_factor] == pytest.approx(
        [f for _, f in cal.params.lat_factor], rel=1e-3
    )
