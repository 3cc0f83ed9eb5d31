"""The MPIPerf report of a collective point, checked against scipy on the same numbers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from commscope.analysis.coll import min_valid_of, summarize, warning_text
from commscope.data.record_parse import record_from_dict


def coll(times: list[float], flags: list[int], **extra: object) -> object:
    return record_from_dict(
        {
            "type": "coll",
            "op": "bcast",
            "group": "world",
            "nranks": 4,
            "bytes": 1024,
            "root": 0,
            "method": "window",
            "times_s": times,
            "flags": flags,
            "stage": [1] * len(times),
            "stop": "rule_b",
            **extra,
        },
        "test",
    )


@pytest.mark.parametrize("level", [0.90, 0.95, 0.99])
def test_report_matches_scipy_after_dropping_invalid_and_trimming(level):
    rng = np.random.default_rng(7)
    valid = rng.lognormal(mean=-11, sigma=0.2, size=40)
    times = list(valid) + [1e-2, 2e-2, 5e-2]  # three launches far off, all invalid
    point = coll(times, [0] * 40 + [1, 2, 3])
    s = summarize(point, level=level, trim=0.25)
    kept = np.sort(valid)[10:30]  # 25 % of 40 = 10 dropped at each end
    assert (s.nt, s.nc, s.ns) == (43, 40, 20)
    assert (s.invalid_late, s.invalid_overrun) == (2, 2)  # flag 3 is both
    assert s.time_s == pytest.approx(kept.mean())
    assert s.se_s == pytest.approx(sps.sem(kept))
    half = sps.t.ppf((1 + level) / 2, df=kept.size - 1) * sps.sem(kept)
    assert s.error_s == pytest.approx(half)
    assert (s.ci_low_s, s.ci_high_s) == pytest.approx((kept.mean() - half, kept.mean() + half))
    assert s.min_s == kept.min() and s.max_s == kept.max()
    assert s.max_s < 1e-2  # invalid launches never reach the result


def test_a_point_with_no_valid_launch_reports_nothing_rather_than_a_number():
    s = summarize(coll([1e-3, 2e-3], [1, 2]))
    assert s.nc == 0 and np.isnan(s.time_s)
    assert s.to_json()["time_s"] is None


def test_a_point_with_too_few_valid_launches_says_so():
    s = summarize(coll([1e-3] * 12, [0] * 4 + [1] * 6 + [2] * 2))
    assert s.nc == 4 and s.warnings == ("too_few_valid", "late_starts")
    assert s.late_share == pytest.approx(0.5)
    assert s.to_json()["warnings"] == ["too_few_valid", "late_starts"]
    assert "4 valid of 12, 50% started late" in warning_text(s)


def test_enough_valid_launches_with_few_late_starts_raise_no_warning():
    s = summarize(coll([1e-3] * 12, [0] * 11 + [1]))
    assert s.warnings == () and warning_text(s) == ""
    assert summarize(coll([1e-3] * 12, [0] * 11 + [1]), min_valid=12).warnings == ("too_few_valid",)


def test_the_valid_minimum_follows_the_run_s_stop_rule():
    assert min_valid_of({"stop": "b", "min_valid": 30}) == 10
    assert min_valid_of({"stop": "rse:0.01", "min_valid": 30}) == 30
    assert min_valid_of(None) == 10


def test_the_table_marks_a_flagged_point_and_says_why():
    from rich.console import Console

    from commscope.analysis.coll import summaries
    from commscope.kinds import coll as coll_kind

    console = Console(record=True, width=200)
    rows = summaries([coll([1e-3] * 12, [0] * 4 + [1] * 8)], 0.95)
    for item in coll_kind.table(coll_kind.CollRun(rows, 0.95, 0.25)):
        console.print(item)
    text = console.export_text()
    assert "1000.00 !" in text
    assert "bcast 1024 B: too few valid launches" in text and "67% started late" in text


@pytest.mark.parametrize(
    ("unexplained_s", "flagged"),
    [
        (-1e-7, False),  # within what the two estimates' round trips explain
        (4e-6, False),  # explained by nothing, but under 5 % of the 100 us median
        (6e-6, True),  # over 5 %: every launch time may be off by that much
    ],
)
def test_a_clock_check_beyond_its_bounds_and_5_percent_voids_the_point(unexplained_s, flagged):
    times = [100e-6] * 20
    point = coll(
        times,
        [0] * 20,
        clock_check={"error_s": abs(unexplained_s) + 1e-7, "unexplained_s": unexplained_s},
    )
    s = summarize(point)
    assert ("clock_drift" in s.warnings) is flagged
    assert s.clock_unexplained_s == unexplained_s
    if flagged:
        text = warning_text(s)
        assert "clocks drifted apart" in text and "6.00 us unexplained" in text


def test_a_point_without_a_clock_check_is_not_flagged_for_it():
    s = summarize(coll([100e-6] * 20, [0] * 20))
    assert s.clock_unexplained_s is None and s.warnings == ()
