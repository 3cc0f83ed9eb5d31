"""What `validate predict` prints beside its table: losses and BBR, named once each."""

from __future__ import annotations

import argparse

from commscope.cli import validate_predict
from commscope.validate import forcing
from commscope.validate.placement_time import PlacementTime
from commscope.validate.predict import SizeVerdict


def check(placement: str, nodes: int, bbr: tuple[str, ...], lost: tuple[str, ...] = ()):
    return PlacementTime(placement, nodes, 4 // nodes, 1 << 20, 0.36, 0.37, -0.03, 7, lost, bbr)


def printed(capsys, checks: list[PlacementTime]) -> list[str]:
    forced = forcing.forced("allreduce", "recursive-doubling", "openmpi", 4)
    args = argparse.Namespace(procs=4, max_launches=10)
    verdicts = [SizeVerdict(1 << 20, 1.0, 0.03)]
    validate_predict.print_checks(args, 3, forced, {}, {}, checks, verdicts)
    return capsys.readouterr().out.splitlines()


def test_nodes_under_bbr_are_named_once_with_the_way_to_compare(capsys):
    lines = printed(
        capsys,
        [check("2x2", 2, ("csnode1", "csnode2")), check("4x1", 4, ("csnode1", "csnode2",
         "csnode3", "csnode4"))],
    )  # fmt: skip
    text = " ".join(line.strip() for line in lines)  # the console wraps long lines
    assert text.count("TCP ran BBR") == 1
    assert "! TCP ran BBR on csnode1, csnode2, csnode3, csnode4:" in text
    assert "'vcluster up --tcp-cc cubic'" in text


def test_no_bbr_line_when_no_node_ran_it(capsys):
    lines = printed(capsys, [check("2x2", 2, ()), check("4x1", 4, (), ("TCP on csnode3 x",))])
    assert not [line for line in lines if "BBR" in line]
    assert "! 4x1: TCP on csnode3 x: its measured times carry the losses" in lines


def unmeasured(placement: str, nt: int, nc: int, late: int) -> PlacementTime:
    nan = float("nan")
    return PlacementTime(placement, 2, 2, 1 << 20, 0.36, nan, nan, 7, (), (), nt, nc, late)


def test_a_placement_without_a_valid_launch_says_how_its_launches_failed(capsys):
    forced = forcing.forced("reduce", "binomial", "openmpi", 4)
    args = argparse.Namespace(procs=4, max_launches=16)
    checks = [
        check("4x1", 4, ()),
        unmeasured("2x2", 16, 0, 16),  # every launch late: ranks waited for a core
    ]
    verdicts = [SizeVerdict(1 << 20, float("nan"), 0.03, ("2x2",))]
    validate_predict.print_checks(args, 3, forced, {}, {}, checks, verdicts)
    text = " ".join(line.strip() for line in capsys.readouterr().out.splitlines())
    assert (
        "1048576 B: 2x2 (0 valid of 16 launches; 16 started late (a rank waited for a core)):"
        " no valid launch" in text
    )


def test_the_reason_splits_late_starts_from_overruns():
    assert unmeasured("4x2", 16, 0, 11).unmeasured_reason() == (
        "0 valid of 16 launches; 11 started late (a rank waited for a core), 5 overran their window"
    )
    assert unmeasured("4x2", 8, 1, 0).unmeasured_reason() == (
        "1 valid of 8 launches; 7 overran their window"
    )
    assert unmeasured("4x2", 0, 0, 0).unmeasured_reason() == "no launch ran"
    assert check("4x1", 4, ()).unmeasured_reason() == ""  # it has a time


def test_each_pair_is_printed_under_its_size_with_its_verdict(capsys):
    from commscope.validate.pairs import PairVerdict

    tie = PairVerdict("2x2", "4x1", 0.003, 0.012, 0.4, False, -0.021, 0.004, True)
    order = PairVerdict("2x2", "4x1", -0.3, 0.01, 1.0, True, 0.05, 0.004, False)
    forced = forcing.forced("allreduce", "recursive-doubling", "openmpi", 4)
    args = argparse.Namespace(procs=4, max_launches=10)
    checks = [check("2x2", 2, ()), check("4x1", 4, ())]
    verdicts = [
        SizeVerdict(1 << 20, 1.0, 0.03, (), (tie,)),
        SizeVerdict(1 << 22, -1.0, 0.1, (), (order,)),
    ]
    validate_predict.print_checks(args, 3, forced, {}, {}, checks, verdicts)
    text = " ".join(line.strip() for line in capsys.readouterr().out.splitlines())
    assert (
        "1048576 B: Kendall tau 1.00, median |error| 3% 2x2 and 4x1 within the tables' noise:"
        " predicted +0.3% +- 1.2%, measured -2.1% +- 0.4%: hit" in text
    )
    assert (
        "4194304 B: Kendall tau -1.00, median |error| 10% 2x2 < 4x1 predicted (100% of resampled"
        " tables), measured 5.0% apart, the other way: MISSED" in text
    )
    assert verdicts[0].pairs_hit is True and verdicts[1].pairs_hit is False
    assert SizeVerdict(1 << 20, float("nan"), 0.03).pairs_hit is None  # fewer than two measured


def test_several_runs_show_each_run_and_say_what_is_judged(capsys):
    runs = (0.361, 0.379)
    checks = [
        PlacementTime("2x2", 2, 2, 1 << 20, 0.36, 0.37, -0.03, 7, run_times_s=runs),
        PlacementTime("4x1", 4, 1, 1 << 20, 0.35, 0.36, -0.03, 8, run_times_s=(0.36, 0.36)),
    ]
    text = " ".join(line.strip() for line in printed(capsys, checks))
    assert "each run (ms)" in text and "361.0 379.0" in text
    assert "measured: the mean of 2 runs of each placement, taken in turn" in text
