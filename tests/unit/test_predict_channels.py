"""Channel counting: levels, full-duplex sides, uplinks, steps kept apart, symmetric path."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from commscope.predict import build, enumerate_placements, predict
from commscope.predict.channels import count
from commscope.predict.cost import HockneyCost
from commscope.predict.model import MEMORY, NIC, SOCKET, ClusterModel, Link, Switch
from commscope.predict.model_yaml import model_from_dict
from commscope.predict.placement import regular
from commscope.predict.pricing import transfer_times


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


def topology_model(topology: dict[str, object], latency: str = "1us") -> ClusterModel:
    nic = {"bandwidth": "1GB/s", "latency": latency}
    channels = {"nic": nic, "memory": {"bandwidth": "10GB/s"}}
    doc = {"sockets": 1, "cores": 2, "channels": channels, "topology": topology}
    return model_from_dict(doc, "m.yaml")


DRAGONFLY = {"kind": "dragonfly", "groups": 3, "chassis": 1, "routers": 4, "nodes_per_router": 1}
FLAT_TREE = {"kind": "fat_tree", "down": [4, 3], "up": [1, 1]}  # 4:1 tapered


def test_a_dragonfly_transfer_shares_each_link_of_its_route() -> None:
    m = topology_model(DRAGONFLY)  # groups of 4 nodes: 0-3, 4-7, 8-11; one link per pair
    pl = regular(m, 12, 1)
    # Two transfers from group 0 to group 1 share its one group link; to groups 1 and 2 they
    # do not, though group 0's two links together would carry both at once.
    assert usage(m, pl, [(0, 4), (1, 5)])[1] == [2, 2]
    assert usage(m, pl, [(0, 4), (1, 8)])[1] == [1, 1]
    # Inside a group each pair of routers has its own link, one per direction.
    assert usage(m, pl, [(0, 1), (2, 1)])[1] == [2, 2]  # the receiving NIC of node 1
    assert usage(m, pl, [(0, 1), (1, 0), (2, 3)])[1] == [1, 1, 1]
    # Node 4 (group 1, router 0) reaches group 2 from router 2, which holds that group link:
    # it shares the link from router 0 to router 2 with node 4's own transfer to node 6.
    assert usage(m, pl, [(4, 8), (5, 6), (7, 6)])[1] == [1, 2, 2]
    # Two parallel router links make one link of twice the rate: it carries two transfers.
    two = topology_model(
        {**DRAGONFLY, "groups": 1, "nodes_per_router": 2, "links": {"routers": 2}}
    )  # router 0: nodes 0, 1; router 1: nodes 2, 3
    assert usage(two, regular(two, 8, 1), [(0, 2), (1, 3)])[1] == [1, 1]
    one = topology_model({**DRAGONFLY, "groups": 1, "nodes_per_router": 2})
    assert usage(one, regular(one, 8, 1), [(0, 2), (1, 3)])[1] == [2, 2]


def test_a_dragonfly_group_filled_alone_shares_its_router_links() -> None:
    # Recursive doubling's step 4 apart on 8 nodes of one group (routers of 4 nodes): every
    # node of router 0 sends to router 1 over the one link between them.
    m = topology_model({**DRAGONFLY, "groups": 1, "routers": 2, "nodes_per_router": 4})
    src = np.arange(8)
    _, cf = usage(m, regular(m, 8, 1), list(zip(src.tolist(), (src ^ 4).tolist(), strict=True)))
    assert cf == [4.0] * 8


def test_a_torus_transfer_shares_each_ring_link_of_its_route_and_no_nic() -> None:
    m = topology_model({"kind": "torus", "dims": [6]})  # a ring of 6 nodes
    pl = regular(m, 6, 1)
    # 0 -> 2 and 1 -> 3 both cross the link from 1 to 2; 2 -> 0 goes the other way round it.
    assert usage(m, pl, [(0, 2), (1, 3), (2, 0)])[1] == [2, 2, 1]
    # A node sends both ways round at once: it has no NIC of its own to share.
    assert usage(m, pl, [(0, 1), (0, 5)])[1] == [1, 1]
    # Dimension order: 0 -> 7 on 3 x 3 (x, y = 1, 2) goes along x first (0 -> 1), then down
    # y round the wrap (1 -> 7), the link 1 -> 7 takes too; 4 -> 7 comes up y, apart.
    grid = topology_model({"kind": "torus", "dims": [3, 3]})
    assert usage(grid, regular(grid, 9, 1), [(0, 7), (1, 7), (4, 7)])[1] == [2, 2, 1]
    assert list(grid.extra_latency_s([0, 0, 0], [1, 4, 0])) == pytest.approx([-1e-6, 0, 0])


@pytest.mark.parametrize(
    ("topology", "latency"),
    [({"kind": "fat_tree", "down": [4, 3], "up": [1, 2]}, "1us"), (FLAT_TREE, "0s")],
    ids=["fat-tree", "fat-tree-no-latency"],
)
@pytest.mark.parametrize(
    ("op", "algo", "kw"),
    [
        ("alltoall", "block", {"block": 1}),
        ("alltoall", "block", {"block": 1000}),
        ("alltoall", "pairwise", {}),
        ("allgather", "ring", {}),
    ],
)
def test_symmetric_path_equals_full_count_on_topologies(
    topology: dict[str, object], latency: str, op: str, algo: str, kw: dict[str, int]
) -> None:
    # A fat tree's routes of two lengths, with and without latency: the first switch's
    # transfers still price every step as the rank-by-rank count does.
    m = topology_model(topology, latency)
    assert m.routes_repeat()  # the first switch's routes stand for all: the fast path runs
    cost = dataclasses.replace(HockneyCost.from_model(m), latency_factors=((0, 2.0), (500, 3.0)))
    for nodes, per_node in ((8, 1), (12, 1), (12, 2), (8, 2)):
        pattern = build(op, nodes * per_node, 1000, algo, **kw)
        for order in ("block", "cyclic"):
            pl = regular(m, nodes, per_node, order)
            assert pl.symmetric
            fast = predict(m, pl, pattern, cost)
            full = predict(m, dataclasses.replace(pl, symmetric=False), pattern, cost)
            np.testing.assert_allclose(fast.step_s, full.step_s, rtol=1e-12)
            assert fast.transfers == full.transfers and fast.max_cf == full.max_cf


def test_a_longer_route_adds_its_latency_scaled_as_the_cost_scales_it() -> None:
    tree = topology_model({"kind": "fat_tree", "down": [4, 3], "up": [1, 2]})
    assert list(tree.extra_latency_s([0, 0, 0], [0, 1, 4])) == pytest.approx([0, 0, 2e-6])
    pl = regular(tree, 12, 1)
    plain = HockneyCost.from_model(tree)
    scaled = dataclasses.replace(plain, latency_factors=((0, 2.0), (500, 3.0)))
    src, dst = np.array([0, 1]), np.array([1, 4])  # one leaf; two leaves: 2 links more
    for nbytes, factor in ((100, 2.0), (1000, 3.0)):
        m = np.full(2, nbytes)
        base, _ = transfer_times(tree, pl, src, dst, m, np.array([0, 1]), 2, plain)
        assert base[1] - base[0] == pytest.approx(2e-6)
        more, _ = transfer_times(tree, pl, src, dst, m, np.array([0, 1]), 2, scaled)
        assert more[1] - more[0] == pytest.approx(factor * 2e-6)


def test_routes_whose_length_depends_on_where_they_start_are_counted_rank_by_rank() -> None:
    # A dragonfly's minimal routes and a torus' rings are longer from some nodes than from
    # others, and so is a deep fat tree's between its subtrees: with a latency, the first
    # switch's routes do not stand for all, and predict counts every transfer. A dragonfly's
    # and a torus' links are counted one by one: their routes never repeat, latency or not.
    assert not topology_model(DRAGONFLY).routes_repeat()
    assert not topology_model(DRAGONFLY, "0s").routes_repeat()
    assert not topology_model({"kind": "torus", "dims": [3, 2]}, "0s").routes_repeat()
    assert not topology_model({"kind": "torus", "dims": [3, 2]}).routes_repeat()
    assert not topology_model(
        {"kind": "fat_tree", "down": [2, 2, 3], "up": [1, 2, 2]}
    ).routes_repeat()
    deep = {"kind": "fat_tree", "down": [2, 2, 3], "up": [1, 2, 2]}
    assert topology_model(deep, "0s").routes_repeat()  # no route adds any latency
