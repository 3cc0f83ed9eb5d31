"""Linpack figures on synthetic curves whose P_max, N_max and N_1/2 are known."""

from __future__ import annotations

import math

import pytest

from commscope.analysis import node
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Linpack
from commscope.measure.compute.cpu import Clock, FlopsPerCycle, PeakModel


def linpack(cores: int, n: int, rates: list[float]) -> Linpack:
    flops = 2 / 3 * n**3 + 2 * n**2
    rec = record_from_dict(
        {
            "type": "linpack",
            "cores": cores,
            "threads": cores,
            "n": n,
            "routine": "dgetrf+dgetrs",
            "times_s": [flops / (g * 1e9) for g in rates],
            "gflops": rates,
            "residual": 0.01,
            "affinity": list(range(cores)),
        },
        "synthetic linpack",
    )
    assert isinstance(rec, Linpack)
    return rec


PEAK = PeakModel(
    "test CPU",
    FlopsPerCycle(16.0, "avx2+fma", "2 FMA units x 4 doubles x 2 flops", "/proc/cpuinfo flags"),
    Clock(2.0, "--peak-ghz"),
)


def test_half_reached_exactly_at_a_measured_n():
    ns = [100, 200, 400, 800, 1600]
    assert node.p_max(ns, [2, 4, 8, 12, 16]) == (16.0, 1600)
    assert node.n_half(ns, [2, 4, 8, 12, 16]) == (pytest.approx(400.0), False)


def test_half_interpolated_in_log_n():
    ns = [100, 200, 400, 800, 1600]
    half, at_smallest = node.n_half(ns, [2, 4, 6, 10, 16])  # 8 lies half-way from 6 to 10
    assert not at_smallest
    assert half == pytest.approx(math.sqrt(400 * 800))


def test_p_max_before_the_largest_n_and_first_crossing():
    # Memory pressure makes the largest N slower: N_max is where the rate peaked.
    ns = [100, 200, 400, 800, 1600]
    rates = [1.0, 6.0, 11.0, 20.0, 14.0]
    assert node.p_max(ns, rates) == (20.0, 800)
    half, _ = node.n_half(ns, rates)
    assert half == pytest.approx(math.exp(math.log(200) + 0.8 * math.log(2)))


def test_half_at_the_smallest_n_is_flagged():
    assert node.n_half([100, 200], [9.0, 10.0]) == (100.0, True)


def test_ties_take_the_smaller_n():
    assert node.p_max([100, 200, 400], [5.0, 10.0, 10.0]) == (10.0, 200)


def test_figures_per_core_count_with_peak_and_efficiency():
    # One core: P(N) = 30 N / (N + 300); two cores: the same shape, twice as high, N0 = 900.
    ns = [100, 200, 400, 800, 1600, 3200]
    points = [linpack(1, n, [30 * n / (n + 300)] * 3) for n in ns]
    points += [linpack(2, n, [60 * n / (n + 900), 60 * n / (n + 900) * 0.9, 1.0]) for n in ns]
    one, two = node.figures(points, PEAK)
    assert (one.cores, two.cores) == (1, 2)
    assert one.p_max_gflops == pytest.approx(30 * 3200 / 3500)
    assert one.n_max == 3200 and one.largest_n == 3200 and one.n_points == 6
    assert one.p_peak_gflops == pytest.approx(32.0) and two.p_peak_gflops == pytest.approx(64.0)
    assert one.efficiency == pytest.approx(one.p_max_gflops / 32.0)
    # Half of P_max (13.7) is crossed between 200 (12.0) and 400 (17.1) on one core.
    assert 200 < one.n_half < 400 < two.n_half < two.n_max
    # The median of the solves, not the best or the worst, makes the curve.
    assert two.p_max_gflops == pytest.approx(60 * 3200 / 4100 * 0.9)
    assert "2 cores x 2.000 GHz x 16 flops/cycle = 64.0 GFLOPS" in (two.peak_derivation or "")


def test_figures_without_a_peak_model():
    (f,) = node.figures([linpack(1, 100, [1.0]), linpack(1, 200, [2.0])])
    assert f.p_peak_gflops is None and f.efficiency is None and f.peak_derivation is None


def test_summary_reads_the_peak_from_the_request_and_serialises():
    points = [linpack(1, n, [n / 100]) for n in (100, 200, 400)]
    summary = node.summarize({"cpu": PEAK.to_json()}, points)
    data = summary.to_json()
    assert data["cpu_model"] == "test CPU"
    assert data["figures"][0]["efficiency"] == pytest.approx(4.0 / 32.0)
    assert [r["n"] for r in data["points"]] == [100, 200, 400]
    assert node.summarize({}, points).figures[0].efficiency is None


def test_panel_balance_crossover_is_where_both_times_meet():
    b = node.panel_balance(4000, 20.0, 100e6, latency_s=50e-6)
    assert b is not None
    assert b.panel_bytes == 8 * 4000 * 256
    assert b.send_s == pytest.approx(50e-6 + b.panel_bytes / 100e6)
    assert b.compute_s == pytest.approx(2 * 3744**2 * 256 / 20e9)
    at = node.panel_balance(round(b.crossover_n), 20.0, 100e6, latency_s=50e-6)
    assert at is not None and at.send_s == pytest.approx(at.compute_s, rel=0.01)
    # Faster compute or a slower network push the crossover up, roughly as P / B.
    faster = node.panel_balance(4000, 40.0, 100e6, latency_s=50e-6)
    assert faster is not None and 1.6 < faster.crossover_n / b.crossover_n < 2.0
    assert node.panel_balance(200, 20.0, 100e6) is None


def test_blas_kernels_narrower_than_the_cpu_set_a_ceiling():
    # An AVX-512 CPU (32 flops/cycle at 2 GHz: 64 GFLOPS a core) solved by OpenBLAS's Haswell
    # (AVX2) kernels: at most 16 flops/cycle, so 32 GFLOPS is the ceiling; 24 is 75 % of it.
    wide = PeakModel(
        "test CPU",
        FlopsPerCycle(
            32.0, "avx512f+fma", "2 FMA units x 8 doubles x 2 flops", "/proc/cpuinfo flags"
        ),
        Clock(2.0, "--peak-ghz"),
    )
    blas = [
        {
            "user_api": "blas",
            "internal_api": "openblas",
            "version": "0.3.30",
            "architecture": "Haswell",
            "filepath": "/x/numpy.libs/libscipy_openblas64_.so",
        },
        {
            "user_api": "blas",
            "internal_api": "openblas",
            "version": "0.3.30",
            "architecture": "Haswell",
            "filepath": "/x/scipy.libs/libscipy_openblas.so",
        },
    ]
    points = [linpack(1, n, [g] * 3) for n, g in ((1000, 12.0), (4000, 24.0))]
    for p in points:
        p.raw["blas"] = blas
    (f,) = node.figures(points, wide)
    assert f.blas == "OpenBLAS 0.3.30 (Haswell kernels)" and f.kernel_flops_per_cycle == 16
    assert f.efficiency == pytest.approx(24 / 64)
    assert f.kernel_ceiling is not None
    assert "cannot pass 50% of P_peak" in f.kernel_ceiling
    assert "P_max is 75% of that 32.0 GFLOPS ceiling" in f.kernel_ceiling
    # Kernels as wide as the CPU (or an unknown library) say nothing.
    (same,) = node.figures(points, PEAK)
    assert same.kernel_ceiling is None
    for p in points:
        p.raw["blas"] = [dict(blas[1], architecture="SkylakeX")]
    assert node.figures(points, wide)[0].kernel_ceiling is None


def with_shares(point: Linpack, own: float | None, sweep: float | None) -> Linpack:
    raw = dict(point.raw)
    if own is not None:
        raw["others_cpu_share"] = own
    if sweep is not None:
        raw["sweep_others_cpu_share"] = sweep
    rec = record_from_dict(raw, "synthetic linpack")
    assert isinstance(rec, Linpack)
    return rec


def test_short_points_on_a_busy_machine_are_warned_about_through_the_sweeps_share():
    # Points too short for a share of their own; from the fourth on, the sweep so far has run
    # long enough for one: another process took half of the two cores.
    ns = [100, 200, 400, 700, 1000]
    rates = [9.0, 15.0, 24.0, 7.0, 3.0]
    sweep = [None, None, None, 0.52, 0.5]
    busy = [
        with_shares(linpack(2, n, [g]), None, w) for n, g, w in zip(ns, rates, sweep, strict=True)
    ]
    (fig,) = node.figures(busy)
    assert fig.others_cpu_share == pytest.approx(0.52)
    assert fig.warning and "52%" in fig.warning
    quiet = [with_shares(linpack(2, n, [g]), None, 0.01) for n, g in zip(ns, rates, strict=True)]
    (calm,) = node.figures(quiet)
    assert calm.others_cpu_share == pytest.approx(0.01) and not calm.warning
    (none,) = node.figures([with_shares(linpack(2, 100, [9.0]), None, None)])
    assert none.others_cpu_share is None and not none.warning


def test_the_largest_of_the_points_and_the_sweeps_shares_counts():
    points = [
        with_shares(linpack(1, 100, [5.0]), None, 0.02),
        with_shares(linpack(1, 1000, [10.0]), 0.3, 0.12),  # one long point disturbed
    ]
    (fig,) = node.figures(points)
    assert fig.others_cpu_share == pytest.approx(0.3)
