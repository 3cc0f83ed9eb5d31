"""P_peak from the higher of the nominal clock and the busy clock measured per core count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commscope.analysis import node as node_analysis
from commscope.data import peak
from commscope.errors import EngineError
from commscope.measure.compute import busyclock, cpu, hpcc, node, pinning
from tests.unit.test_cpu_peak import ZEN_FLAGS, cpuinfo, sysfs
from tests.unit.test_node_analysis import linpack

NOMINAL_GHZ = 2.249998


def busy(ghz: float, cpus: tuple[int, ...]) -> peak.BusyClock:
    return peak.BusyClock(ghz, cpus, tuple(ghz - 0.01 * k for k in range(len(cpus))), "adds")


def nominal_model(tmp_path: Path, max_khz: int | None = None) -> peak.PeakModel:
    root = sysfs(tmp_path, [(0, 0), (0, 1)], max_khz=max_khz)
    return cpu.peak_model([0, 1], cpuinfo_text=cpuinfo(ZEN_FLAGS), sysfs=root)


def test_a_busy_clock_above_the_nominal_one_sets_the_peak(tmp_path):
    one, two = busy(2.9, (0,)), busy(2.6, (0, 1))
    model = nominal_model(tmp_path).with_busy({1: one, 2: two})
    fpc = model.flops_per_cycle.value
    # Each core count gets the clock measured with that many cores busy.
    assert model.peak_gflops(1) == pytest.approx(1 * one.ghz * fpc)
    assert model.peak_gflops(2) == pytest.approx(2 * two.ghz * fpc)
    assert model.clock_for(2).source.startswith("busy clock measured by commscope-clock")
    text = model.derivation(2)
    assert text.startswith(f"P_peak = 2 cores x {two.ghz:.3f} GHz x {fpc:g} flops/cycle")
    # Both clocks and where they came from are spelled out.
    assert f"busy clock {two.ghz:.3f} GHz" in text and "cpus 0,1 busy at once" in text
    assert f"nominal clock {NOMINAL_GHZ:.3f} GHz from /proc/cpuinfo cpu MHz" in text
    assert "the higher is used" in text
    assert "cpu 0 busy" in model.derivation(1)


def test_a_nominal_clock_above_the_busy_one_stays(tmp_path):
    model = nominal_model(tmp_path, max_khz=3_500_000).with_busy({2: busy(2.6, (0, 1))})
    assert model.clock_for(2) == peak.Clock(3.5, "cpufreq cpuinfo_max_freq")
    assert model.peak_gflops(2) == pytest.approx(2 * 3.5 * model.flops_per_cycle.value)
    assert "busy clock 2.600 GHz" in model.derivation(2)
    # A core count measured without a busy clock keeps the nominal clock too.
    assert model.clock_for(1) == model.clock


def test_the_override_beats_both_clocks(tmp_path):
    root = sysfs(tmp_path, [(0, 0)])
    model = cpu.peak_model([0], ghz_override=2.0, cpuinfo_text=cpuinfo(ZEN_FLAGS), sysfs=root)
    model = model.with_busy({1: busy(2.9, (0,))})
    assert model.clock_for(1) == peak.Clock(2.0, "--peak-ghz")
    assert "(clock: --peak-ghz;" in model.derivation(1)


def test_busy_clocks_survive_the_store_and_old_runs_still_load(tmp_path):
    model = nominal_model(tmp_path).with_busy({1: busy(2.9, (0,)), 2: busy(2.6, (0, 1))})
    stored = json.loads(json.dumps(model.to_json()))
    assert stored["busy_clock"]["2"]["cpus"] == [0, 1]
    assert stored["busy_clock"]["1"]["source"] == "commscope-clock"
    assert peak.PeakModel.from_json(stored) == model
    old = {k: v for k, v in stored.items() if k not in ("busy_clock", "busy_clock_error")}
    assert peak.PeakModel.from_json(old) == nominal_model(tmp_path / "again")


def test_a_failed_measurement_keeps_the_nominal_clock_and_says_why(tmp_path):
    seen: list[list[int]] = []

    def meter(cpus):
        seen.append(list(cpus))
        if len(seen) > 1:
            raise EngineError("no C compiler 'cc' to build commscope-clock")
        return busy(2.9, tuple(cpus))

    clocks, error = node.busy_clocks({2: (0, 1), 1: (0,)}, meter)
    assert seen == [[0], [0, 1]]  # fewest cores first, on exactly the cpus given
    assert set(clocks) == {1} and error is not None and "no C compiler" in error
    model = nominal_model(tmp_path).with_busy(clocks, error)
    assert model.clock_for(2) == model.clock
    assert "busy clock not measured: no C compiler" in model.derivation(2)


def test_parse_takes_each_cpus_best_repeat_and_the_fastest_cpu():
    line = {
        "program": "commscope-clock",
        "method": "dependent adds",
        "adds": 1000,
        "repeats": 3,
        "timer": "CLOCK_MONOTONIC_RAW",
        "cpus": [{"cpu": 0, "ghz": [1.2, 2.7, 2.5]}, {"cpu": 3, "ghz": [2.8, 0.9, 2.6]}],
    }
    clock = busyclock.parse(line)
    assert clock.cpus == (0, 3) and clock.per_cpu_ghz == (2.7, 2.8) and clock.ghz == 2.8
    assert "best of 3 x 1000" in clock.method


@pytest.mark.parametrize(
    "line",
    [
        {"program": "commscope-tcp", "cpus": []},
        {"program": "commscope-clock", "cpus": []},
        {"program": "commscope-clock", "cpus": [{"cpu": 0, "ghz": [0.0, None]}]},
    ],
)
def test_parse_rejects_lines_without_a_clock(line):
    with pytest.raises(EngineError):
        busyclock.parse(line)


def test_the_argument_list_is_a_list_of_plain_arguments():
    argv = busyclock.argv("/x/commscope-clock", [0, 2], adds=64, repeats=3, warmup_s=0.5)
    assert argv == [
        "/x/commscope-clock",
        "--cpus",
        "0,2",
        "--adds",
        "64",
        "--repeats",
        "3",
        "--warmup",
        "0.5",
    ]


def test_the_request_measures_each_core_count_where_its_sweep_runs():
    calls: list[list[int]] = []

    def meter(cpus):
        calls.append(list(cpus))
        return busy(3.0 - 0.1 * len(calls), tuple(cpus))

    request = node.build_request(cores="1", sizes=[100], clock_meter=meter)
    assert calls == [request["cpus"]["1"]]
    stored = request["cpu"]["busy_clock"]["1"]
    assert stored["cpus"] == calls[0] and stored["ghz"] == pytest.approx(2.9)
    assert "busy clock 2.900 GHz" in request["peak_derivation"]["1"]

    calls.clear()
    given = node.build_request(cores="1", sizes=[100], peak_ghz=2.0, clock_meter=meter)
    assert calls == [] and given["cpu"]["busy_clock"] == {}


def test_figures_carry_both_clocks_and_divide_by_the_higher(tmp_path):
    model = nominal_model(tmp_path).with_busy({1: busy(2.9, (0,))})
    request = {"cpu": model.to_json()}
    points = [linpack(1, 100, [10.0]), linpack(1, 400, [40.0])]
    (f,) = node_analysis.summarize(request, points).figures
    assert f.busy_ghz == pytest.approx(2.9) and f.clock_ghz == pytest.approx(2.9)
    assert f.nominal_ghz == pytest.approx(NOMINAL_GHZ)
    assert f.nominal_source == "/proc/cpuinfo cpu MHz"
    assert f.efficiency == pytest.approx(40.0 / (2.9 * model.flops_per_cycle.value))
    assert f.to_json()["busy_ghz"] == f.busy_ghz


def test_hpl_requests_measure_the_cores_their_ranks_use(monkeypatch):
    # run node --grid 1x1: P_peak of one core, with that core's busy clock.
    seen: list[list[int]] = []

    def meter(cpus):
        seen.append(list(cpus))
        return busy(2.9, tuple(cpus))

    monkeypatch.setattr(busyclock, "measure", meter)
    request = hpcc.build_request("1x1", [100], 64, 60.0)
    assert seen == [list(pinning.choose_cpus(1, pinning.allowed_cpus()))]
    assert "busy clock 2.900 GHz" in request["peak_derivation"]["1"]
