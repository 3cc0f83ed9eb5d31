"""What `validate predict` prints beside its table: losses and BBR, named once each."""

from __future__ import annotations

import argparse

from commscope.cli import validate_predict
from commscope.validate import forcing
from commscope.validate.predict import PlacementCheck, SizeVerdict


def check(placement: str, nodes: int, bbr: tuple[str, ...], lost: tuple[str, ...] = ()):
    return PlacementCheck(placement, nodes, 4 // nodes, 1 << 20, 0.36, 0.37, -0.03, 7, lost, bbr)


def printed(capsys, checks: list[PlacementCheck]) -> list[str]:
    forced = forcing.forced("allreduce", "recursive-doubling", "openmpi", 4)
    args = argparse.Namespace(procs=4, max_launches=10)
    verdicts = [SizeVerdict(1 << 20, 1.0, 0.03)]
    validate_predict._print(args, 3, forced, {}, {}, checks, verdicts)
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
