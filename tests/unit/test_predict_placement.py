"""Placements: enumeration, rank orders, socket spread, hostfiles, rankfiles and hand-off."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commscope.errors import PredictError
from commscope.predict import handoff
from commscope.predict.model import ClusterModel, Link, Switch
from commscope.predict.placement import enumerate_placements, regular, socket_layout
from commscope.predict.placement_files import from_hostfile, from_rankfile


def model(nodes: int = 4, sockets: int = 2, cores: int = 4, **kw: object) -> ClusterModel:
    return ClusterModel("m", tuple(f"n{i}" for i in range(nodes)), sockets, cores, **kw)  # type: ignore[arg-type]


def test_enumeration_covers_every_fitting_n_x_c() -> None:
    labels = [pl.label for pl in enumerate_placements(model(), 8)]
    assert labels == [
        "1x8",
        "2x4/1s",
        "2x4/1s cyclic",
        "2x4/2s",
        "2x4/2s cyclic",
        "4x2/1s",
        "4x2/1s cyclic",
        "4x2/2s",
        "4x2/2s cyclic",
    ]
    assert [pl.label for pl in enumerate_placements(model(nodes=8), 8)][-1] == "8x1"
    for pl in enumerate_placements(model(nodes=8, sockets=1, cores=8), 8):
        assert pl.nodes * pl.per_node == 8 and pl.p == 8
    shapes = [(pl.nodes, pl.per_node) for pl in enumerate_placements(model(8, 1, 8), 8)]
    assert shapes == [(1, 8), (2, 4), (2, 4), (4, 2), (4, 2), (8, 1)]


def test_enumeration_respects_the_model() -> None:
    assert {pl.nodes for pl in enumerate_placements(model(nodes=2, cores=2), 4)} == {1, 2}
    with pytest.raises(PredictError, match="fit no n x c placement"):
        enumerate_placements(model(nodes=2, cores=2), 12)
    assert [pl.order for pl in enumerate_placements(model(), 8, ("cyclic",))][:2] == [
        "cyclic",
        "cyclic",
    ]


def test_block_and_cyclic_rank_orders() -> None:
    m = model()
    block = regular(m, 2, 4, "block", 2)
    assert block.node.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert block.socket.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert block.core.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    cyclic = regular(m, 2, 4, "cyclic", 2)
    assert cyclic.node.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    assert cyclic.socket.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert block.symmetric and cyclic.symmetric


def test_socket_layout_is_balanced() -> None:
    s, c = socket_layout(5, 2, 4)
    assert s.tolist() == [0, 0, 0, 1, 1] and c.tolist() == [0, 1, 2, 0, 1]
    with pytest.raises(PredictError):
        socket_layout(5, 1, 4)


def test_nodes_are_taken_switch_by_switch() -> None:
    sw = (Switch("a", (0, 2), Link(1e9)), Switch("b", (1, 3, 4), Link(1e9)))
    m = model(nodes=5, nic=Link(1e9), switches=sw)
    pl = regular(m, 3, 1)
    assert pl.node_ids() == [1, 3, 4] and pl.symmetric  # the biggest switch first
    assert not regular(m, 4, 1).symmetric  # crosses switches: counted rank by rank


def test_hostfile_block_and_cyclic(tmp_path: Path) -> None:
    m = model()
    path = tmp_path / "hosts"
    path.write_text("# two nodes\nn1 slots=3\nn3:2\n")
    pl = from_hostfile(m, path, 5)
    assert pl.node.tolist() == [1, 1, 1, 3, 3] and pl.socket.tolist() == [0, 0, 1, 0, 1]
    cyc = from_hostfile(m, path, 5, "cyclic")
    assert cyc.node.tolist() == [1, 3, 1, 3, 1]
    assert (pl.nodes, pl.per_node, pl.sockets_used) == (2, 3, 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nx slots=2\n", "line 1: host 'nx' is not a node"),
        ("n0 slots=two\n", "line 1: 'n0 slots=two' is not"),
        ("n0 slots=9\n", "line 1: 9 slots on n0, which has 8 cores"),
        ("n0 slots=2\n", "2 slots for 5 processes"),
    ],
)
def test_hostfile_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "hosts"
    path.write_text(text)
    with pytest.raises(PredictError, match=message):
        from_hostfile(model(), path, 5)


def test_rankfile(tmp_path: Path) -> None:
    path = tmp_path / "rf"
    path.write_text("rank 0=n2 slot=1:3\nrank 1=n0 slot=5\n")
    pl = from_rankfile(model(), path, 2)
    assert pl.node.tolist() == [2, 0] and pl.socket.tolist() == [1, 1]
    assert pl.core.tolist() == [3, 1] and pl.order == "explicit"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rank 0=n0 slot=0:0\n", "no line for rank 1"),
        ("rank 0=n0 slot=0:0\nrank 0=n1 slot=0:0\n", "rank 0 is placed twice"),
        ("rank 0=n0 slot=0:0\nrank 1=n0 slot=0\n", "rank 1 shares a core"),
        ("rank 0=n0 slot=2:0\nrank 1=n0 slot=0:1\n", "line 1: slot 2:0 is not a core of n0"),
        ("rank 0 n0\n", "line 1: 'rank 0 n0' is not"),
        ("rank 0=n0 slot=0:0-2\n", "one core per rank"),
    ],
)
def test_rankfile_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rf"
    path.write_text(text)
    with pytest.raises(PredictError, match=message):
        from_rankfile(model(), path, 2)


def test_handoff_round_trips(tmp_path: Path) -> None:
    m = model()
    for pl in enumerate_placements(m, 8):
        rf = tmp_path / "rankfile"
        rf.write_text(handoff.rankfile(m, pl))
        back = from_rankfile(m, rf, 8)
        assert np.array_equal(back.node, pl.node) and np.array_equal(back.socket, pl.socket)
        assert np.array_equal(back.core, pl.core)
        hf = tmp_path / "hosts"
        hf.write_text(handoff.hostfile(m, pl))
        assert np.array_equal(from_hostfile(m, hf, 8, pl.order).node, pl.node)


def test_slurm_args() -> None:
    m = model()
    assert handoff.slurm_args(m, regular(m, 4, 2, "block", 2)) == [
        "-N",
        "4",
        "--ntasks-per-node",
        "2",
        "--ntasks-per-socket",
        "1",
        "--distribution=block:block",
        "--cpu-bind=cores",
    ]
    sw = (Switch("a", (0, 1), Link(1e9)), Switch("b", (2, 3), Link(1e9)))
    ms = model(nic=Link(1e9), switches=sw)
    assert handoff.slurm_args(ms, regular(ms, 2, 4, "cyclic", 1))[-3:] == [
        "--distribution=cyclic:block",
        "--cpu-bind=cores",
        "--switches=1",
    ]
    assert "--switches=1" not in handoff.slurm_args(ms, regular(ms, 4, 2))
