"""HPL through hpcc: the generated input and the import of its summary (recorded output)."""

from __future__ import annotations

from pathlib import Path

import pytest

from commscope.errors import ComputeError, UsageError
from commscope.measure.compute import hpcc

SUMMARY = (Path(__file__).parent / "fixtures" / "hpcc_summary.txt").read_text()


def test_input_keeps_hpl_line_positions():
    lines = hpcc.input_text(4000, 128, 2, 3).splitlines()
    assert lines[5].split()[0] == "4000" and lines[7].split()[0] == "128"
    assert (lines[10].split()[0], lines[11].split()[0]) == ("2", "3")
    assert lines[12].split()[0] == "16"  # HPL's residual threshold
    assert lines[31].startswith("#####")  # line 32 is hpcc's separator


def test_summary_becomes_a_linpack_record():
    record = hpcc.to_record(hpcc.parse_summary(SUMMARY, "fixture"), "fixture")
    assert (record.cores, record.threads, record.n) == (2, 1, 1000)
    assert record.raw["grid"] == [1, 2] and record.raw["nb"] == 80
    assert record.times_s == (0.114784,)
    assert record.raw["reported_gflops"] == pytest.approx(5.8211)
    assert record.median_gflops == pytest.approx((2 / 3 * 1e9 + 2e6) / 0.114784 / 1e9)
    # The residual hpcc printed for this run: 0.0072510.
    assert record.residual == pytest.approx(0.0072510, rel=1e-3)


def test_failing_residual_or_missing_hpl_is_an_error():
    bad = SUMMARY.replace("HPL_RnormI=2.40163e-12", "HPL_RnormI=2.4e-6")
    with pytest.raises(ComputeError, match="not below 16"):
        hpcc.to_record(hpcc.parse_summary(bad, "fixture"), "fixture")
    with pytest.raises(ComputeError, match="no summary"):
        hpcc.parse_summary("HPL_N=1000\n", "fixture")
    with pytest.raises(ComputeError, match="HPL did not run"):
        hpcc.parse_summary(SUMMARY.replace("HPL_time", "HPL_notime"), "fixture")


@pytest.mark.parametrize("text", ["2", "0x2", "ax2", "2x"])
def test_bad_grids(text):
    with pytest.raises(UsageError, match="PxQ"):
        hpcc.parse_grid(text)
