"""Channel counting: levels, full-duplex sides, uplinks, steps kept apart, symmetric path."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from commscope.predict import build, enumerate_placements, predict
from commscope.predict.channels import count
from commscope.predict.cost import HockneyCost
from commscope.predict.model import MEMORY, NIC, SOCKET, ClusterModel, Link, Switch
from commscope.predict.placement import regular


def model(nodes: int = 2, sockets: int = 2, cores: int = 2, **kw: object) -> ClusterModel:
    return ClusterModel("m", tuple(f"n{i}" for i in range(nodes)), sockets, cores, **kw)  # type: ignore[arg-type]


def usage(
    m: ClusterModel, pl: object, pairs: list[tuple[int, int]], **kw: object
) -> tuple[list[int], list[float]]:
    src = np.array([a for a, _ in pairs], dtype=np.int64)
    dst = np.array([b for _, b in pairs], dtype=np.int64)
    u = count(m, pl, src, dst, **kw)  # type: ignore[arg-type]
    return u.level.tolist(), u.cf.tolist()


def test_levels_and_socket_link_sides() -> None:
    m = model()
    pl = regular(m, 1, 4, "block", 2)  # ranks 0, 1 on socket 0; 2, 3 on socket 1
    levels, cf = usage(m, pl, [(0, 1), (1, 0), (0, 2), (1, 3), (3, 1)])
    assert levels == [MEMORY, MEMORY, SOCKET, SOCKET, SOCKET]
    # Memory controller of socket 0: 2 transfers. Socket link: 0->1 side carries 2,
    # the 1->0 side carries 1 (full duplex: opposite directions do not share).
    assert cf == [2, 2, 2, 2, 1]


def test_nic_is_full_duplex() -> None:
    m = model(sockets=1)
    pl = regular(m, 2, 2)  # ranks 0, 1 on node 0; 2, 3 on node 1
    levels, cf = usage(m, pl, [(0, 2), (1, 2), (3, 0)])
    assert levels == [NIC] * 3
    assert cf == [2, 2, 1]  # node 0 sends 2, node 1 receives 2; 3 -> 0 has its own sides


def test_receive_side_can_be_the_busiest() -> None:
    m = model(nodes=3, sockets=1)
    pl = regular(m, 3, 2)  # node 0: 0, 1; node 1: 2, 3; node 2: 4, 5
    _, cf = usage(m, pl, [(2, 0), (4, 1), (5, 1)])
    assert cf == [3, 3, 3]  # node 0 receives 3; node 2 sends only 2


def test_uplinks_bind_when_narrower() -> None:
    sw = (Switch("a", (0, 1, 2), Link(1e9)), Switch("b", (3, 4, 5), Link(1e9)))
    m = model(nodes=6, sockets=1, cores=1, nic=Link(1e9), switches=sw)
    pl = regular(m, 6, 1)
    _, cf = usage(m, pl, [(0, 3), (1, 4), (2, 0)])
    assert cf == [2, 2, 1]  # two transfers leave switch a through one NIC-sized uplink
    wide = dataclasses.replace(
        m, switches=(Switch("a", (0, 1, 2), Link(2e9)), Switch("b", (3, 4, 5), Link(2e9)))
    )
    assert usage(wide, pl, [(0, 3), (1, 4), (2, 0)])[1] == [1, 1, 1]


@pytest.mark.parametrize(
    ("op", "algo", "kw"),
    [
        ("alltoall", "block", {"block": 1}),
        ("alltoall", "block", {"block": 5}),
        ("alltoall", "block", {"block": 100}),
        ("alltoall", "pairwise", {}),
        ("allgather", "ring", {}),
        ("allreduce", "ring", {}),
    ],
)
@pytest.mark.parametrize("p", [8, 12, 18, 24])
def test_symmetric_path_equals_full_count(op: str, algo: str, kw: dict[str, int], p: int) -> None:
    links = (Link(1e10, 1e-7), Link(5e9, 2e-7), Link(1e9, 1e-6))
    pattern = build(op, p, 1000, algo, **kw)
    for nodes, sockets, cores in ((6, 2, 3), (4, 3, 2)):
        m = ClusterModel("m", tuple(f"n{i}" for i in range(nodes)), sockets, cores, *links)
        cost = HockneyCost.from_model(m)
        for pl in enumerate_placements(m, p):
            fast = predict(m, pl, pattern, cost)
            full = predict(m, dataclasses.replace(pl, symmetric=False), pattern, cost)
            assert pl.symmetric
            np.testing.assert_allclose(fast.step_s, full.step_s, rtol=1e-12)
            assert fast.transfers == full.transfers and fast.max_cf == full.max_cf


@pytest.mark.parametrize(
    ("op", "algo", "kw"),
    [
        ("alltoall", "block", {"block": 1}),
        ("alltoall", "block", {"block": 7}),
        ("alltoall", "block", {"block": 1000}),
        ("alltoall", "pairwise", {}),
        ("allgather", "ring", {}),
    ],
)
@pytest.mark.parametrize("uplink", [1e9, 4e9, 5e8])
def test_placements_filling_switches_alike_are_counted_from_the_first_switch(
    op: str, algo: str, kw: dict[str, int], uplink: float
) -> None:
    # Three switches of four nodes: a placement on 4, 8 or 12 nodes uses each switch alike,
    # so the first switch's ranks stand for all; on 6 it does not (rank by rank).
    switches = tuple(
        Switch(name, tuple(range(4 * i, 4 * i + 4)), Link(uplink)) for i, name in enumerate("abc")
    )
    m = model(nodes=12, sockets=2, cores=2, nic=Link(1e9, 1e-6), switches=switches)
    m = dataclasses.replace(m, memory=Link(1e10, 1e-7), socket_link=Link(5e9, 2e-7))
    cost = HockneyCost.from_model(m)
    for nodes, per_node in ((4, 3), (8, 2), (8, 3), (12, 1), (12, 4), (6, 2)):
        pattern = build(op, nodes * per_node, 1000, algo, **kw)
        for order in ("block", "cyclic"):
            pl = regular(m, nodes, per_node, order)
            assert pl.symmetric == (nodes != 6)
            assert pl.period == (4 if nodes in (8, 12) else 1)
            fast = predict(m, pl, pattern, cost)
            full = predict(m, dataclasses.replace(pl, symmetric=False), pattern, cost)
            np.testing.assert_allclose(fast.step_s, full.step_s, rtol=1e-12)
            assert fast.transfers == full.transfers and fast.max_cf == full.max_cf
