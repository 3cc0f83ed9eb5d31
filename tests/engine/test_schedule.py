"""The window scheduler's decisions, driven by a fake clock (deterministic, one rank)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
ENGINE = Path(__file__).parents[2] / "engine"
US = 1e-6


@pytest.fixture(scope="module")
def decisions(tmp_path_factory) -> dict[str, dict]:
    need(have_mpi("openmpi"), "openmpi is not installed")
    build = tmp_path_factory.mktemp("build")
    for cmd in (
        ["cmake", "-S", str(ENGINE), "-B", str(build), "-DMPI_C_COMPILER=mpicc.openmpi"],
        ["cmake", "--build", str(build), "--target", "commscope-schedule-test"],
    ):
        subprocess.run(cmd, check=True, capture_output=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(
        ["mpirun.openmpi", "-np", "1", str(build / "commscope-schedule-test")],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return {d["scenario"]: d for d in map(json.loads, out.stdout.splitlines())}


def test_stage_zero_sets_the_first_window_and_steady_launches_are_valid(decisions):
    d = decisions["steady"]
    # Stage 0: 4 back-to-back launches of 10 us -> b1 = 1.1 * 40 us / 4 = 11 us.
    assert d["windows_s"][0] == pytest.approx(11 * US, rel=1e-3)
    assert set(d["flags"]) == {0}
    assert all(0 <= t < 0.01 * US for t in d["start_delays_s"])  # a few fake clock reads
    assert all(t == pytest.approx(10 * US, rel=1e-3) for t in d["times_s"])
    # Rule b: relative SE <= 5 % with >= 10 valid launches: two stages of eight.
    assert d["stop"] == "rule_b" and len(d["times_s"]) == 16
    assert 0 not in d["stage"]  # stage 0 is never counted
    # Clean stages never widen the window (gamma * 10 us + t_bcast = 12 us > 11 us).
    assert d["windows_s"][1] == pytest.approx(11 * US, rel=1e-3)


def test_an_overrun_flags_the_cascade_and_widens_the_window_from_on_time_launches(decisions):
    d = decisions["one_slow"]
    # Stage 1: launch 5 takes 30 us in an 11 us window (overrun), launches 6 and 7 start late
    # and end after their windows.
    assert d["flags"][:8] == [0, 0, 0, 0, 0, 2, 3, 3]
    assert d["times_s"][5] == pytest.approx(30 * US, rel=1e-3)
    assert d["times_s"][6] == pytest.approx(29 * US, rel=1e-3)  # end - scheduled start
    # 3 of 8 invalid > g = 25 %: the window grows to gamma * (upper quartile of the on-time
    # launches: five of 10 us, one of 30 us) + t_bcast = 1.1 * 10 us + 1 us, not to the
    # paper's gamma * (stage end - tau) / k, which takes in the cascade.
    assert d["windows_s"][1] == pytest.approx(12 * US, rel=1e-3)
    assert set(d["flags"][8:]) == {0}
    valid = sum(1 for f in d["flags"] if f == 0)
    assert d["stop"] == "rule_b" and valid >= 10 and len(d["times_s"]) == 16


def test_a_slow_stage_at_most_doubles_the_window_and_a_clean_one_brings_it_back(decisions):
    d = decisions["slow_stage"]
    # Stage 1: every launch takes 30 us in an 11 us window; only launch 0 starts on time.
    assert d["flags"][0] == 2 and all(f & 1 for f in d["flags"][1:8])
    # gamma * 30 us + 1 us = 34 us, capped at twice 11 us.
    assert d["windows_s"][1] == pytest.approx(22 * US, rel=1e-3)
    # Stage 2 (10 us again) is clean: the window shrinks towards 1.1 * 10 us + 1 us = 12 us.
    assert set(d["flags"][8:16]) == {0}
    assert d["windows_s"][2] == pytest.approx(12 * US, rel=1e-3)


def test_a_rank_that_loses_its_core_while_waiting_starts_late(decisions):
    d = decisions["stall"]
    # The clock read before the wait says on time; the 20 us stall happens in the spin. The
    # launch is late from the read taken as it really starts, not counted as operation time.
    assert d["flags"][:2] == [0, 0]
    assert d["flags"][2] & 1
    assert d["times_s"][2] == pytest.approx(29 * US, rel=1e-3)
    assert all(f & 1 for f in d["flags"][3:8])  # the schedule catches up 1 us per launch
    # Each launch records how late it began: the stall, less 1 us per launch caught up.
    assert d["start_delays_s"][:8] == pytest.approx(
        [0, 0, *(k * US for k in range(19, 13, -1))], abs=0.01 * US
    )
    # Late starts only: the on-time launches took 10 us, so the window stays near them.
    assert d["windows_s"][1] == pytest.approx(12 * US, rel=1e-3)


def test_a_window_too_large_shrinks_even_when_late_starts_disturb_the_stage(decisions):
    d = decisions["late_shrinks"]
    # Stage 0 took 130 us for four launches: b1 = 1.1 * 130 us / 4, far above 10 us.
    assert d["windows_s"][0] == pytest.approx(1.1 * 130 * US / 4, rel=1e-3)
    # Stage 1 lost 200 us in a wait: six of eight launches start late, so the stage counts as
    # disturbed, yet its on-time launches took 10 us and the window halves towards them.
    assert sum(1 for f in d["flags"][:8] if f & 1) == 6
    assert d["windows_s"][1] == pytest.approx(1.1 * 130 * US / 8, rel=1e-3)


def test_rule_a_stops_after_more_than_30_valid_launches(decisions):
    d = decisions["rule_a"]
    assert d["stop"] == "rule_a" and len(d["times_s"]) == 32


def test_launch_budget_stops_an_unreachable_target(decisions):
    d = decisions["max_launches"]
    # Whole stages: the first stage end at or past 20 launches.
    assert d["stop"] == "max_launches" and len(d["times_s"]) == 24
