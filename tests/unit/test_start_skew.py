"""Launch times that rise with their ranks' start delay: found, and not found where they do not."""

from __future__ import annotations

import numpy as np
import pytest

from commscope.analysis import start_skew
from commscope.analysis.coll import summarize, warning_text
from commscope.errors import CommscopeError
from tests import synthetic_runs

# The pairwise All-to-all's 4x1 at 256 KiB on the 4-node virtual cluster
# (bench/results/predict-vcluster.md): sixteen launches begun within 0.4 ms of their start ran
# about 137 ms, the four begun 1.4-2.9 ms late about 200 ms.
PROMPT_MS = [0.05, 0.05, 0.05, 0.06, 0.06, 0.06, 0.07, 0.08, 0.08, 0.09]
PROMPT_MS += [0.09, 0.10, 0.15, 0.19, 0.19, 0.37]
LATE_MS = [1.43, 2.53, 2.62, 2.92]


def skewed() -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(3)
    times = list(0.137 + rng.normal(0, 0.003, len(PROMPT_MS)))
    times += list(0.200 + rng.normal(0, 0.005, len(LATE_MS)))
    return times, [d / 1e3 for d in PROMPT_MS + LATE_MS]


def coll(times, delays, flags=None):
    return synthetic_runs.window_coll(times, flags or [0] * len(times), delays)


def test_launches_slowed_beyond_their_delay_are_found():
    times, delays = skewed()
    found = start_skew.effect(times, delays)
    assert found is not None
    assert (found.launches, found.later) == (20, 4)
    assert found.from_delay_s == pytest.approx(1.43e-3)
    assert found.max_delay_s == pytest.approx(2.92e-3)
    assert found.effect_s == pytest.approx(0.063, abs=0.006)
    assert found.p_value < start_skew.LEVEL
    assert start_skew.effect(times, delays) == found  # seeded: the same answer every time


def test_the_same_times_in_an_order_unrelated_to_the_delays_are_not_flagged():
    times, delays = skewed()
    # The slow launches spread evenly over the delays: the modes stay, their tie to them goes.
    fast, slow = times[:16], times[16:]
    mixed = fast[0:2] + slow[0:1] + fast[2:6] + slow[1:2] + fast[6:10] + slow[2:3]
    mixed += fast[10:14] + slow[3:4] + fast[14:16]
    assert sorted(mixed) == sorted(times)
    assert start_skew.effect(mixed, delays) is None


def test_a_rise_no_larger_than_the_delays_themselves_is_what_the_bound_allows():
    rng = np.random.default_rng(5)
    delays = list(rng.uniform(0, 5e-3, 40))
    times = [0.1 + d for d in delays]  # each launch ends exactly its delay later
    assert start_skew.effect(times, delays) is None


def test_a_rise_within_what_the_late_rule_accepts_is_not_flagged():
    # 2x2 at 256 KiB on the same cluster: the six launches begun 1.85-2.47 ms late ran 3.3 ms
    # longer (median) than the rest's 181.9, under the 2 % a late start may add unflagged.
    rng = np.random.default_rng(11)
    delays = [d / 1e3 for d in [*rng.uniform(0.05, 1.8, 24), *rng.uniform(1.85, 2.47, 6)]]
    times = [*(0.1819 + rng.normal(0, 0.0002, 24)), *(0.1852 + rng.normal(0, 0.0002, 6))]
    assert start_skew.effect(times, delays) is None
    # The same launches 4 ms longer: beyond both the delays and the 2 %.
    assert start_skew.effect([*times[:24], *(t + 0.004 for t in times[24:])], delays)


def test_too_few_launches_or_no_spread_of_delays_say_nothing():
    times, delays = skewed()
    assert start_skew.effect(times[-9:], delays[-9:]) is None
    assert start_skew.effect(times, [1e-3] * len(times)) is None
    with pytest.raises(ValueError, match="20 launch times against 19 start delays"):
        start_skew.effect(times, delays[:-1])


def test_the_point_summary_warns_and_says_by_how_much():
    times, delays = skewed()
    s = summarize(coll(times, delays))
    assert s.warnings == ("start_skew",)
    assert s.start_delay_median_s == pytest.approx(np.median(delays))
    text = warning_text(s)
    assert "launch times rise with start delay" in text
    assert "the 4 of 20 valid launches begun 1.43-2.92 ms late" in text
    assert "amplifies start skew" in text
    assert s.to_json()["start_skew"]["later"] == 4


def test_only_valid_launches_are_checked():
    times, delays = skewed()
    # The four late launches flagged late by the engine: the rest show no rise.
    point = coll(times, delays, [0] * 16 + [1] * 4)
    assert point.valid_start_delays_s == tuple(delays[:16])
    s = summarize(point)
    assert "start_skew" not in s.warnings
    assert s.start_delay_median_s == pytest.approx(np.median(delays[:16]))


def test_records_without_start_delays_are_read_and_left_unchecked():
    times, _ = skewed()
    point = synthetic_runs.window_coll(times, [0] * len(times))
    assert point.start_delays_s == () and point.valid_start_delays_s is None
    s = summarize(point)
    assert s.start_delay_median_s is None and s.start_skew is None


def test_start_delays_must_match_the_launches():
    times, delays = skewed()
    with pytest.raises(CommscopeError, match="start_delays_s must have one entry per launch"):
        coll(times, delays[:-2])
