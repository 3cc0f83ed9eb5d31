"""Derived point-to-point figures against synthetic curves whose answers are known."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from commscope.analysis import curve, findings, p2p, regimes
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Point
from commscope.units import netpipe_schedule, size_text

SIZES = np.array(netpipe_schedule(4 << 20, 3), dtype=float)  # 0..4 MiB, +-3-byte neighbours


def hockney(m, alpha, beta):
    return alpha + np.asarray(m, dtype=float) / beta


def point(op, pair, nbytes, samples, window=None, ranks=(0, 1)):
    per_window = window or 1
    data = {
        "type": "point",
        "op": op,
        "pair": pair,
        "ranks": list(ranks),
        "bytes": int(nbytes),
        "bytes_per_sample": int(nbytes)
        * (1 if op == "pingpong" else per_window * (2 if op == "bibw" else 1)),
        "iters_per_sample": 10,
        "warmup": 1,
        "samples_s": [float(s) for s in samples],
        "stop": "rse",
    }
    if window:
        data["window"] = window
    rec = record_from_dict(data, "test")
    assert isinstance(rec, Point)
    return rec


def pingpong_points(pair, times, ranks=(0, 1)):
    return [
        point("pingpong", pair, m, [t * 0.99, t, t * 1.01], ranks=ranks)
        for m, t in zip(SIZES, times, strict=True)
    ]


# Hockney fit


def test_pure_hockney_curve_gives_back_alpha_and_beta():
    fit = regimes.hockney_fit(SIZES, hockney(SIZES, 5e-6, 1.2e9))
    assert fit is not None
    assert fit.alpha_s == pytest.approx(5e-6, rel=0.01)
    assert fit.beta_Bps == pytest.approx(1.2e9, rel=0.01)
    assert fit.rms_relative_error < 1e-6
    assert regimes.find_thresholds(SIZES, hockney(SIZES, 5e-6, 1.2e9)) == ()


def test_noisy_hockney_curve_gives_alpha_and_beta_and_no_threshold():
    rng = np.random.default_rng(42)
    t = hockney(SIZES, 2e-6, 10e9) * np.exp(rng.normal(0, 0.01, SIZES.size))
    fit = regimes.hockney_fit(SIZES, t)
    assert fit.alpha_s == pytest.approx(2e-6, rel=0.02)
    assert fit.beta_Bps == pytest.approx(10e9, rel=0.02)
    assert regimes.find_thresholds(SIZES, t) == ()


def test_flat_curve_has_no_beta():
    fit = regimes.hockney_fit(SIZES[:10], np.full(10, 1e-6))
    assert fit.beta_Bps is None and fit.alpha_s == pytest.approx(1e-6)


def test_two_column_nonnegative_fit_matches_scipy_nnls():
    from scipy.optimize import nnls

    rng = np.random.default_rng(7)
    faces = set()
    for _ in range(400):
        a = rng.normal(size=(rng.integers(2, 12), 2))
        b = rng.normal(size=a.shape[0])
        ours = regimes.nonnegative_lstsq2(a, b)
        ref, ref_norm = nnls(a, b)
        assert np.all(ours >= 0)
        assert np.linalg.norm(a @ ours - b) == pytest.approx(ref_norm, rel=1e-9, abs=1e-12)
        faces.add(tuple(ours > 0))
    assert faces == {(True, True), (True, False), (False, True), (False, False)}


# Thresholds


def two_regimes(limit=8192):
    # Eager: 1 us + m / 2 GB/s up to the limit; rendezvous: 6 us + m / 3 GB/s above.
    return np.where(SIZES <= limit, hockney(SIZES, 1e-6, 2e9), hockney(SIZES, 6e-6, 3e9))


def test_two_regime_curve_gives_the_threshold_and_each_regime():
    t = two_regimes()
    (th,) = regimes.find_thresholds(SIZES, t)
    assert (th.below_bytes, th.above_bytes, th.nominal_bytes) == (8192, 8195, 8192)
    assert th.jump > 0.5
    low, high = regimes.piecewise_hockney(SIZES, t, [th])
    assert (low.first_bytes, low.last_bytes, high.first_bytes) == (0, 8192, 8195)
    assert low.fit.alpha_s == pytest.approx(1e-6, rel=0.01)
    assert low.fit.beta_Bps == pytest.approx(2e9, rel=0.01)
    assert high.fit.alpha_s == pytest.approx(6e-6, rel=0.01)
    assert high.fit.beta_Bps == pytest.approx(3e9, rel=0.01)


def test_threshold_between_perturbation_clusters_and_under_noise():
    rng = np.random.default_rng(7)
    # The switch lies between 3075 and 4093 bytes, as with Open MPI's 4 KiB shared-memory limit.
    t = np.where(SIZES <= 3075, hockney(SIZES, 0.3e-6, 8e9), hockney(SIZES, 2.3e-6, 11e9))
    for _ in range(20):
        noisy = t * np.exp(rng.normal(0, 0.02, t.size))
        found = [
            (th.below_bytes, th.above_bytes, th.nominal_bytes)
            for th in regimes.find_thresholds(SIZES, noisy)
        ]
        assert found == [(3075, 4093, 4096)]


def test_a_single_slow_size_is_not_a_threshold():
    t = hockney(SIZES, 3e-6, 5e9)
    spiky = t.copy()
    spiky[SIZES == 65539] *= 1.3  # one misaligned size, 30 % slow
    assert regimes.find_thresholds(SIZES, spiky) == ()


def test_a_faster_protocol_shows_as_a_negative_jump():
    t = np.where(SIZES <= 131072, hockney(SIZES, 20e-6, 0.5e9), hockney(SIZES, 30e-6, 1.1e9))
    (th,) = regimes.find_thresholds(SIZES, t)
    assert (th.below_bytes, th.above_bytes) == (131072, 131075)
    assert th.jump < -0.2


# Bandwidth figures


def test_half_peak_size_of_a_known_curve():
    alpha, beta = 4e-6, 2e9
    bw = SIZES / hockney(SIZES, alpha, beta)
    peak = float(bw[-1])  # monotone: the peak is at the largest size
    expected = (peak / 2) * alpha / (1 - peak / (2 * beta))  # m / (alpha + m / beta) = peak / 2
    assert curve.half_peak_size(SIZES, bw) == pytest.approx(expected, rel=0.02)
    assert curve.peak_bandwidth(SIZES, bw) == (pytest.approx(peak), int(SIZES[-1]))


def test_asymptotic_bandwidth_is_the_median_of_the_largest_sizes():
    bw = np.where(SIZES >= 1 << 20, 5e9, 1e9)
    bw[-1] = 50e9  # one wild value does not move a median
    value, start = curve.asymptotic_bandwidth(SIZES, bw)
    assert value == 5e9 and start == 1 << 20


def test_saturation_point_of_a_hockney_curve_is_near_nine_times_n_half():
    # The log-log slope of alpha + m / beta is m / (N + m) with N = alpha * beta: >= 0.9 from 9N.
    alpha, beta = 10e-6, 1e9
    found = curve.saturation_point(SIZES, hockney(SIZES, alpha, beta))
    assert found is not None
    assert 9 * alpha * beta / 1.5 <= found <= 9 * alpha * beta * 1.5


def test_no_saturation_when_time_stays_flat():
    assert curve.saturation_point(SIZES[:40], np.full(40, 1e-6)) is None


def test_cache_dip_is_flagged_only_when_large_sizes_fall_below_the_peak():
    base = SIZES / hockney(SIZES, 1e-6, 10e9)
    dipped = np.where(SIZES > 1 << 20, base * 0.6, base)
    dip = curve.cache_dip(SIZES, dipped)
    assert dip is not None
    assert dip.drop == pytest.approx(0.4, abs=0.05)
    assert dip.onset_bytes in (1048579, 1572861)
    assert curve.cache_dip(SIZES, base) is None


# From points to figures and findings


def test_bw_points_become_per_message_times():
    pts = [point("bw", "inter-node", 1024, [64 * 1024 / 1e9] * 3, window=64)]
    c = curve.curve_of(pts, "bw", "inter-node")
    assert c.bandwidth_Bps[0] == pytest.approx(1e9)
    assert c.time_s[0] == pytest.approx(1024 / 1e9)


def test_pair_figures_and_findings_of_two_pairs():
    near = pingpong_points("intra-socket", two_regimes())
    far = pingpong_points("inter-node", hockney(SIZES, 20e-6, 1.1e9), ranks=(0, 2))
    figs = p2p.pair_figures(near + far)
    assert [f.pair for f in figs] == ["intra-socket", "inter-node"]
    assert figs[1].ranks == (0, 2)
    assert figs[0].latency_s == pytest.approx(1e-6) and figs[0].latency_bytes == 0
    pp = figs[0].curve("pingpong")
    assert [t.nominal_bytes for t in pp.thresholds] == [8192]
    json.dumps([f.to_json() for f in figs])  # plain JSON, no NaN or numpy types
    text = findings.findings(figs)
    # No limits recorded: the step is named by its sizes, with no protocol claim.
    assert any("a step at 8 KiB (between" in s and "jumps by" in s for s in text), text
    assert not any("eager" in s or "rendezvous" in s for s in text), text
    ratio = figs[1].curve("pingpong").asymptotic_bandwidth_Bps / pp.asymptotic_bandwidth_Bps
    assert any(
        s.startswith(f"inter-node bandwidth is {ratio * 100:.0f} % of intra-socket") for s in text
    ), text
    assert any(s.startswith("inter-node latency is 20.0x intra-socket") for s in text), text


def test_findings_numbers_come_from_the_figures():
    pts = pingpong_points("intra-node", hockney(SIZES, 3e-6, 4e9))
    (fig,) = p2p.pair_figures(pts)
    pp = fig.curve("pingpong")
    text = " ".join(findings.findings([fig]))
    assert "zero-byte latency is 3.00 us" in text
    assert f"saturation point at {size_text(pp.saturation_bytes)}" in text
    assert f"asymptotic bandwidth {pp.asymptotic_bandwidth_Bps / 1e9:.2f} GB/s" in text
    assert f"reached at {size_text(round(pp.half_peak_bytes))} (N1/2)" in text
    assert "jumps" not in text and "drops" not in text


def test_empty_input_gives_no_figures():
    assert p2p.pair_figures([]) == []
    assert findings.findings([]) == []
    assert curve.peak_bandwidth([], []) is None
    assert curve.half_peak_size([0], [math.nan]) is None
