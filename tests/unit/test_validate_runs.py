"""A placement measured in several runs: its mean, its error between runs, and the verdicts."""

from __future__ import annotations

import math
import statistics

import pytest

from commscope.validate.pairs import judge_pair
from commscope.validate.placement_time import PlacementTime
from commscope.validate.predict import check as check_placements
from commscope.validate.predict import over_runs

# Recursive doubling at 4 MiB on the 4-node virtual cluster, one set of tables: 4x1 priced
# 0.29 % ahead of 2x2; in eight runs one after another 4x1 came out ahead by these shares
# (bench/results/predict-vcluster.md). Each run's own standard error is set at 0.01 % here.
PRICED_MS = {"4x1": 1434.3, "2x2": 1438.4}
AHEAD = [0.0, -0.002, -0.0005, 0.006, 0.007, 0.002, 0.0, 0.002]
OWN_SE = 1e-4


def check(label: str, times_ms: list[float]) -> PlacementTime:
    t, se = over_runs([x / 1e3 for x in times_ms], [x / 1e3 * OWN_SE for x in times_ms])
    predicted = PRICED_MS[label] / 1e3
    return PlacementTime(
        label, 4, 1, 1 << 22, predicted, t, (predicted - t) / t, 1, measured_se_s=se
    )


def test_one_run_is_its_own_time_and_error():
    assert over_runs([1.5], [0.01]) == (1.5, 0.01)


def test_the_spread_between_runs_sets_the_error_when_it_exceeds_their_own():
    times = [1.000, 1.006, 0.998, 1.004]
    t, se = over_runs(times, [0.0005] * 4)
    assert t == pytest.approx(statistics.fmean(times))
    assert se == pytest.approx(statistics.stdev(times) / 2)


def test_runs_that_agree_by_chance_keep_their_own_error():
    t, se = over_runs([1.0, 1.0], [0.01, 0.01])
    assert t == 1.0 and se == pytest.approx(0.01 / math.sqrt(2))


def test_a_run_without_a_valid_launch_is_left_out():
    t, se = over_runs([1.0, math.nan, 1.002], [0.001, math.nan, 0.001])
    assert t == pytest.approx(1.001) and se == pytest.approx(0.001)
    assert all(math.isnan(x) for x in over_runs([math.nan, math.nan], [0.1, 0.1]))


def test_a_gap_smaller_than_the_runs_move_is_judged_on_their_mean():
    level = 1445.0
    runs_4x1 = [level * (1 - a) for a in AHEAD]
    # Judged run by run, within each run's own noise, the verdict follows the run.
    single = [
        judge_pair(check("4x1", [t]), check("2x2", [level]), None, 0, 1).hit for t in runs_4x1
    ]
    assert 0 < sum(single) < len(single)
    # Over the eight runs the measured gap carries the spread between them, and 4x1 ahead on
    # average is the predicted order: a hit.
    pooled = judge_pair(check("4x1", runs_4x1), check("2x2", [level] * len(AHEAD)), None, 0, 1)
    assert pooled.hit and pooled.measured_gap < 0
    assert pooled.measured_gap_error == pytest.approx(
        statistics.stdev(runs_4x1) / math.sqrt(len(AHEAD)) / statistics.fmean(runs_4x1), rel=0.01
    )


def test_runs_behind_every_time_still_refute_the_order():
    # 4x1 0.3-0.5 % behind in every run, as four rounds on earlier tables measured it.
    level = 1445.0
    behind = [level * (1 + b) for b in (0.003, 0.004, 0.005, 0.003)]
    pooled = judge_pair(check("4x1", behind), check("2x2", [level] * 4), None, 0, 1)
    assert not pooled.hit and pooled.text().endswith("the other way: MISSED")


def test_runs_out_of_range_are_refused_in_one_line(cli):
    out = cli("validate", "predict", "--tables", "1", "--vcluster", "--repeats", "0")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--repeats: 0 is out of range" in lines[0]


def test_the_library_refuses_no_runs_before_measuring_anything():
    with pytest.raises(ValueError, match="runs: 0; give 1 or more"):
        check_placements(None, None, None, None, 4, [1 << 20], 0, {}, runs=0)
